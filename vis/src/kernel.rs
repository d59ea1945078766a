//! Pack/unpack/copy kernels: walk a range of elements of a loop nest,
//! copying `elem` bytes per point from one side to the other.
//!
//! The innermost loop is specialised for element sizes 1, 2, 4, 8, 16, 32
//! and 64 bytes (a copy of a fixed-size array, which the compiler turns
//! into vector moves; 32- and 64-byte elements take the CPU's widest, see
//! `run_wide`); other sizes use `memcpy` per element.
//! A run that is contiguous on both sides is one `memcpy`.

/// A loop of a kernel walk, innermost first: `count` iterations advancing
/// the source by `src` bytes and the destination by `dst` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loop {
    /// Iterations.
    pub count: u64,
    /// Source stride in bytes.
    pub src: isize,
    /// Destination stride in bytes.
    pub dst: isize,
}

/// Copy `count` elements of `N` bytes, strided on both sides.
///
/// # Safety
/// Every element read and written must be inside live allocations, and
/// no source element may overlap a destination element.
#[inline(always)]
unsafe fn run_fixed<const N: usize>(
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
    count: usize,
) {
    let (mut s, mut d) = (src, dst);
    for _ in 0..count {
        // SAFETY: the caller guarantees both elements are in bounds and
        // disjoint; unaligned accesses of a byte array are always allowed.
        unsafe {
            let v = s.cast::<[u8; N]>().read_unaligned();
            d.cast::<[u8; N]>().write_unaligned(v);
        }
        s = s.wrapping_offset(ss);
        d = d.wrapping_offset(ds);
    }
}

/// As [`run_fixed`], with the widest moves the CPU has for elements of 32
/// and 64 bytes: one 64-byte move with AVX-512, two 32-byte ones with AVX
/// (the baseline x86-64 target has 16-byte moves only).
///
/// The width matters when the destination lines are not in this core's
/// cache (an AM pack into a buffer the receiver read last): every store to
/// a missing line waits in the store buffer until the line arrives, so the
/// fewer stores a line takes, the more lines are in flight at once. 64-byte
/// elements packed into a negotiated-payload buffer (testvisperf's
/// inter-node shape, 2 ranks on AMD EPYC Zen 4) took 985 ns per 4 KiB with
/// 16-byte moves, 692 with 32-byte and 582 with 64-byte ones; 13.7, 10-12
/// and 7.7 us per 64 KiB.
///
/// # Safety
/// As [`run_fixed`].
#[inline(always)]
unsafe fn run_wide<const N: usize>(
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
    count: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if N == 64 && std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked); forwarded contract.
            return unsafe { run_avx512::<N>(src, ss, dst, ds, count) };
        }
        if N >= 32 && std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX (checked); forwarded contract.
            return unsafe { run_avx::<N>(src, ss, dst, ds, count) };
        }
    }
    // SAFETY: forwarded caller contract.
    unsafe { run_fixed::<N>(src, ss, dst, ds, count) }
}

/// [`run_fixed`] compiled with AVX-512F.
///
/// # Safety
/// As [`run_fixed`], and the CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn run_avx512<const N: usize>(
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
    count: usize,
) {
    // SAFETY: forwarded caller contract.
    unsafe { run_fixed::<N>(src, ss, dst, ds, count) }
}

/// [`run_fixed`] compiled with AVX.
///
/// # Safety
/// As [`run_fixed`], and the CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn run_avx<const N: usize>(
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
    count: usize,
) {
    // SAFETY: forwarded caller contract.
    unsafe { run_fixed::<N>(src, ss, dst, ds, count) }
}

/// As [`run_fixed`] for any element size.
///
/// # Safety
/// As [`run_fixed`].
#[inline]
unsafe fn run_any(elem: usize, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize) {
    let (mut s, mut d) = (src, dst);
    for _ in 0..count {
        // SAFETY: the caller's contract, per element.
        unsafe { std::ptr::copy_nonoverlapping(s, d, elem) };
        s = s.wrapping_offset(ss);
        d = d.wrapping_offset(ds);
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
    // SAFETY: forwarded caller contract (every arm copies the same elements).
    unsafe {
        if ss == e && ds == e {
            return std::ptr::copy_nonoverlapping(src, dst, elem * count);
        }
        match elem {
            1 => run_fixed::<1>(src, ss, dst, ds, count),
            2 => run_fixed::<2>(src, ss, dst, ds, count),
            4 => run_fixed::<4>(src, ss, dst, ds, count),
            8 => run_fixed::<8>(src, ss, dst, ds, count),
            16 => run_fixed::<16>(src, ss, dst, ds, count),
            32 => run_wide::<32>(src, ss, dst, ds, count),
            64 => run_wide::<64>(src, ss, dst, ds, count),
            _ => run_any(elem, src, ss, dst, ds, count),
        }
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
    let mut left = n;
    loop {
        let len = (inner.count - idx[0]).min(left);
        // SAFETY: these `len` elements are part of the range the caller
        // vouches for.
        unsafe {
            run(
                elem,
                src.wrapping_offset(so),
                inner.src,
                dst.wrapping_offset(d_o),
                inner.dst,
                len as usize,
            )
        };
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
    // SAFETY: forwarded caller contract (every arm). each copier moves the
    // same elements as `run` would.
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
        match elem {
            1 => nest(outer, inner, src, dst, Fixed::<1>),
            2 => nest(outer, inner, src, dst, Fixed::<2>),
            4 => nest(outer, inner, src, dst, Fixed::<4>),
            8 => nest(outer, inner, src, dst, Fixed::<8>),
            16 => nest(outer, inner, src, dst, Fixed::<16>),
            32 => nest(outer, inner, src, dst, Fixed::<32>),
            64 => nest(outer, inner, src, dst, Fixed::<64>),
            _ => nest(outer, inner, src, dst, Any(elem)),
        }
    }
}

/// An innermost-run copier, chosen once per walk.
trait RunCopy: Copy {
    /// Copy `count` elements strided by `ss` (source) and `ds` (destination).
    ///
    /// # Safety
    /// As [`run_fixed`].
    unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize);
}

/// Elements of `N` bytes.
#[derive(Clone, Copy)]
struct Fixed<const N: usize>;

impl<const N: usize> RunCopy for Fixed<N> {
    #[inline(always)]
    unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize) {
        // SAFETY: forwarded caller contract.
        unsafe { run_wide::<N>(src, ss, dst, ds, count) }
    }
}

/// Elements of any size (`memcpy` each).
#[derive(Clone, Copy)]
struct Any(usize);

impl RunCopy for Any {
    #[inline(always)]
    unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize) {
        // SAFETY: forwarded caller contract.
        unsafe { run_any(self.0, src, ss, dst, ds, count) }
    }
}

/// One contiguous block of this many bytes per run (the inner loop folded
/// in; its count is 1).
#[derive(Clone, Copy)]
struct Bytes(usize);

impl RunCopy for Bytes {
    #[inline(always)]
    unsafe fn copy(self, src: *const u8, _: isize, dst: *mut u8, _: isize, _: usize) {
        // SAFETY: forwarded caller contract (the block is the run).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, self.0) }
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

/// Dense strides for `counts` elements of `elem` bytes (loop 0 innermost).
///
/// ```
/// let s: Vec<isize> = rgex_vis::kernel::dense(8, [4, 3, 2].into_iter()).collect();
/// assert_eq!(s, [8, 32, 96]);
/// ```
pub fn dense(elem: usize, counts: impl Iterator<Item = u64>) -> impl Iterator<Item = isize> {
    counts.scan(elem as isize, |s, c| {
        let here = *s;
        *s = s.wrapping_mul(c as isize);
        Some(here)
    })
}

/// The loops between a strided side, `(count, stride)` per loop
/// innermost first, and a dense buffer of `elem`-byte elements: strided
/// to dense if `pack`, else dense to strided.
///
/// ```
/// use rgex_vis::kernel::{dense_loops, Loop};
/// let l: Vec<Loop> = dense_loops(8, [(4, 32), (2, 512)].into_iter(), true).collect();
/// assert_eq!(l[1], Loop { count: 2, src: 512, dst: 32 });
/// ```
pub fn dense_loops(
    elem: usize,
    side: impl Iterator<Item = (u64, isize)> + Clone,
    pack: bool,
) -> impl Iterator<Item = Loop> {
    let d = dense(elem, side.clone().map(|(count, _)| count));
    side.zip(d).map(move |((count, strided), dense)| {
        let (src, dst) = if pack {
            (strided, dense)
        } else {
            (dense, strided)
        };
        Loop { count, src, dst }
    })
}

/// Call `f` with the `n` loops of `loops` collected into a slice: on the
/// stack for up to 8 (the usual folded nest), so the per-message paths
/// allocate nothing.
///
/// ```
/// use rgex_vis::kernel::{with_loops, Loop};
/// let l = |count| Loop { count, src: 8, dst: 8 };
/// assert_eq!(with_loops(3, (1..=3).map(l), |s| s.len()), 3);
/// assert_eq!(with_loops(20, (1..=20).map(l), |s| s[19].count), 20);
/// ```
#[inline]
pub fn with_loops<R>(
    n: usize,
    loops: impl Iterator<Item = Loop>,
    f: impl FnOnce(&[Loop]) -> R,
) -> R {
    const STACK: usize = 8;
    if n > STACK {
        return f(&loops.collect::<Vec<_>>());
    }
    let mut stack = [Loop {
        count: 0,
        src: 0,
        dst: 0,
    }; STACK];
    let mut k = 0;
    for (slot, l) in stack.iter_mut().zip(loops) {
        *slot = l;
        k += 1;
    }
    debug_assert_eq!(k, n, "with_loops: the iterator does not hold n loops");
    f(&stack[..k])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run` against a byte loop, for every specialised size and a few
    /// others, packing (strided to dense), unpacking and strided on both
    /// sides, with unaligned bases, and run lengths around the unrolling.
    #[test]
    fn runs_copy_like_a_byte_loop() {
        for elem in [1usize, 2, 3, 4, 8, 16, 24, 32, 64] {
            for count in [0usize, 1, 3, 8, 9] {
                let e = elem as isize;
                for (ss, ds) in [(3 * e, e), (e, 2 * e), (2 * e, 3 * e)] {
                    let src: Vec<u8> = (0..count * 3 * elem + 1).map(|i| i as u8).collect();
                    let mut dst = vec![0u8; count * 3 * elem + 1];
                    let mut want = dst.clone();
                    for i in 0..count {
                        for b in 0..elem {
                            want[1 + i * ds as usize + b] = src[1 + i * ss as usize + b];
                        }
                    }
                    // SAFETY: `count` elements at strides `ss` and `ds`
                    // from offset 1 fit both vectors (3 * elem per element
                    // at most); the vectors are distinct.
                    unsafe {
                        run(
                            elem,
                            src.as_ptr().add(1),
                            ss,
                            dst.as_mut_ptr().add(1),
                            ds,
                            count,
                        )
                    };
                    assert_eq!(dst, want, "elem {elem}, count {count}, strides {ss}/{ds}");
                }
            }
        }
    }
}
