//! The walks (one run, a range of a nest, a whole nest) and the kernel's
//! entry points, each going through `dispatch` once.

use super::copier::{Bytes, RunCopy};
use super::dispatch::{dispatch, Walk};
use super::loops::Loop;

/// One run: `count` elements, strides `ss` and `ds`.
#[derive(Clone, Copy)]
pub(super) struct One {
    pub(super) src: *const u8,
    pub(super) ss: isize,
    pub(super) dst: *mut u8,
    pub(super) ds: isize,
    pub(super) count: usize,
}

impl Walk for One {
    #[inline(always)]
    unsafe fn walk<F: RunCopy>(self, f: F) {
        // SAFETY: forwarded caller contract.
        unsafe { f.copy(self.src, self.ss, self.dst, self.ds, self.count) }
    }
}

/// Copy one innermost run of `count` elements of `elem` bytes, the source
/// advancing by `ss` bytes per element and the destination by `ds`.
///
/// # Safety
/// Every element read and written must be inside live allocations, and
/// no source element may overlap a destination element.
#[inline(always)]
pub unsafe fn run(elem: usize, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize) {
    let e = elem as isize;
    // SAFETY: forwarded caller contract (both copy the same elements).
    unsafe {
        if ss == e && ds == e {
            return std::ptr::copy_nonoverlapping(src, dst, elem * count);
        }
        dispatch(
            elem,
            One {
                src,
                ss,
                dst,
                ds,
                count,
            },
        )
    }
}

/// Copy elements `start .. start + n` (in loop order, loop 0 innermost) of
/// the nest `loops`, `elem` bytes each, from `src` to `dst`. With no loops
/// the nest has one element.
///
/// # Safety
/// Every element of that range, at `src + sum(i_k * loops[k].src)` and
/// `dst + sum(i_k * loops[k].dst)`, must be inside live allocations
/// (readable, resp. writable), and sources must not overlap destinations.
pub unsafe fn copy_range(
    elem: usize,
    loops: &[Loop],
    src: *const u8,
    dst: *mut u8,
    start: u64,
    n: u64,
) {
    if n == 0 || elem == 0 {
        return;
    }
    let one = [Loop {
        count: 1,
        src: 0,
        dst: 0,
    }];
    let loops = if loops.is_empty() { &one[..] } else { loops };
    let range = Range {
        elem,
        loops,
        src,
        dst,
        start,
        n,
    };
    // SAFETY: forwarded caller contract.
    unsafe { dispatch(elem, range) }
}

/// Elements `start .. start + n` of a nest (see [`copy_range`]).
#[derive(Clone, Copy)]
struct Range<'l> {
    elem: usize,
    /// At least one loop.
    loops: &'l [Loop],
    src: *const u8,
    dst: *mut u8,
    start: u64,
    n: u64,
}

impl Walk for Range<'_> {
    #[inline(always)]
    unsafe fn walk<F: RunCopy>(self, f: F) {
        let Range {
            elem,
            loops,
            src,
            dst,
            start,
            n,
        } = self;
        // The multi-index of `start`, and the offsets it gives.
        // The usual folded nest has a few loops: a small array to zero, not
        // a 512-byte one (this runs once per AM message).
        let mut idx = [0u64; 8];
        let mut idx_v;
        let idx: &mut [u64] = if loops.len() <= idx.len() {
            &mut idx[..loops.len()]
        } else {
            idx_v = vec![0u64; loops.len()];
            &mut idx_v
        };
        let (mut so, mut d_o) = (0isize, 0isize);
        let mut rest = start;
        for (k, l) in loops.iter().enumerate() {
            idx[k] = rest % l.count;
            rest /= l.count;
            so += idx[k] as isize * l.src;
            d_o += idx[k] as isize * l.dst;
        }
        let inner = loops[0];
        let e = elem as isize;
        let contiguous = inner.src == e && inner.dst == e;
        let mut left = n;
        loop {
            let len = (inner.count - idx[0]).min(left);
            let (s, d) = (src.wrapping_offset(so), dst.wrapping_offset(d_o));
            // SAFETY: these `len` elements are part of the range the caller
            // vouches for.
            unsafe {
                if contiguous {
                    std::ptr::copy_nonoverlapping(s, d, elem * len as usize);
                } else {
                    f.copy(s, inner.src, d, inner.dst, len as usize);
                }
            }
            left -= len;
            if left == 0 {
                return;
            }
            // Advance to the start of the next innermost run.
            so += (inner.count - idx[0]) as isize * inner.src - inner.count as isize * inner.src;
            d_o += (inner.count - idx[0]) as isize * inner.dst - inner.count as isize * inner.dst;
            idx[0] = 0;
            let mut k = 1;
            loop {
                let l = loops[k];
                idx[k] += 1;
                so += l.src;
                d_o += l.dst;
                if idx[k] < l.count {
                    break;
                }
                so -= l.count as isize * l.src;
                d_o -= l.count as isize * l.dst;
                idx[k] = 0;
                k += 1;
            }
        }
    }
}

/// Copy every element of the nest `loops` (loop 0 innermost), `elem`
/// bytes each, from `src` to `dst`: [`copy_range`] over the whole nest,
/// without its start-index arithmetic. With no loops the nest has one
/// element. The element-size dispatch happens once, not per inner run.
///
/// # Safety
/// As [`copy_range`] for every element of the nest.
#[inline]
pub unsafe fn copy_all(elem: usize, loops: &[Loop], src: *const u8, dst: *mut u8) {
    if elem == 0 || loops.iter().any(|l| l.count == 0) {
        return;
    }
    let Some(&inner) = loops.first() else {
        // SAFETY: the one element is in bounds (caller).
        return unsafe { std::ptr::copy_nonoverlapping(src, dst, elem) };
    };
    let outer = &loops[1..];
    let e = elem as isize;
    // SAFETY: forwarded caller contract (both arms copy the nest's
    // elements).
    unsafe {
        if inner.src == e && inner.dst == e {
            // Contiguous inner runs: one memcpy each.
            let one = Loop {
                count: 1,
                src: 0,
                dst: 0,
            };
            return nest(outer, one, src, dst, Bytes(elem * inner.count as usize));
        }
        let all = All {
            outer,
            inner,
            src,
            dst,
        };
        dispatch(elem, all)
    }
}

/// Every element of a nest of at least one loop (see [`copy_all`]).
#[derive(Clone, Copy)]
struct All<'l> {
    outer: &'l [Loop],
    inner: Loop,
    src: *const u8,
    dst: *mut u8,
}

impl Walk for All<'_> {
    #[inline(always)]
    unsafe fn walk<F: RunCopy>(self, f: F) {
        // SAFETY: forwarded caller contract.
        unsafe { nest(self.outer, self.inner, self.src, self.dst, f) }
    }
}

/// Walk `outer` (innermost first) around the inner loop `inner`, copying
/// one inner run with `f` per point. Two levels are a plain double loop;
/// deeper nests recurse on the outermost loop.
///
/// # Safety
/// As [`copy_all`].
#[inline(always)]
unsafe fn nest<F: RunCopy>(outer: &[Loop], inner: Loop, src: *const u8, dst: *mut u8, f: F) {
    let n = inner.count as usize;
    // SAFETY: each run (every arm) is part of the nest the caller vouches for.
    unsafe {
        match outer {
            [] => f.copy(src, inner.src, dst, inner.dst, n),
            [o] => {
                let (mut s, mut d) = (src, dst);
                for _ in 0..o.count {
                    f.copy(s, inner.src, d, inner.dst, n);
                    s = s.wrapping_offset(o.src);
                    d = d.wrapping_offset(o.dst);
                }
            }
            [rest @ .., o] => {
                let (mut s, mut d) = (src, dst);
                for _ in 0..o.count {
                    nest_rec(rest, inner, s, d, f);
                    s = s.wrapping_offset(o.src);
                    d = d.wrapping_offset(o.dst);
                }
            }
        }
    }
}

/// [`nest`] behind a function boundary (the recursion).
///
/// # Safety
/// As [`nest`].
#[inline(never)]
unsafe fn nest_rec<F: RunCopy>(outer: &[Loop], inner: Loop, src: *const u8, dst: *mut u8, f: F) {
    // SAFETY: forwarded caller contract.
    unsafe { nest(outer, inner, src, dst, f) }
}
