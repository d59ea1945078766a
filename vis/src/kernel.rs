//! Pack/unpack/copy kernels: walk a range of elements of a loop nest,
//! copying `elem` bytes per point from one side to the other.
//!
//! The innermost loop is specialised for element sizes 1, 2, 4, 8, 16, 32
//! and 64 bytes (a copy of a fixed-size array, which the compiler turns
//! into vector moves); other sizes use `memcpy` per element. A run that is
//! contiguous on both sides is one `memcpy`.
//!
//! Every entry point ([`run`], [`copy_range`], [`copy_all`]) picks the
//! copier once per call (`dispatch`): for 32- and 64-byte elements the
//! whole walk is then compiled with the widest moves the CPU has (see
//! `wide`).

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

/// An innermost-run copier, chosen once per walk.
trait RunCopy: Copy {
    /// Copy `count` elements strided by `ss` (source) and `ds` (destination).
    ///
    /// # Safety
    /// As [`run_fixed`].
    unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize);
}

/// Elements of `N` bytes, with the baseline target's moves.
#[derive(Clone, Copy)]
struct Fixed<const N: usize>;

impl<const N: usize> RunCopy for Fixed<N> {
    #[inline(always)]
    unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize) {
        // SAFETY: forwarded caller contract.
        unsafe { run_fixed::<N>(src, ss, dst, ds, count) }
    }
}

/// Elements of `N` bytes moved with AVX-512 (64-byte moves) wherever the
/// walk goes, also through [`nest_rec`], which is compiled without it.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Avx512<const N: usize>;

#[cfg(target_arch = "x86_64")]
impl<const N: usize> RunCopy for Avx512<N> {
    #[inline(always)]
    unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize) {
        // SAFETY: an `Avx512` copier is made only after the CPU was found
        // to have AVX-512F (`wide`); forwarded caller contract.
        unsafe { run_avx512::<N>(src, ss, dst, ds, count) }
    }
}

/// As [`Avx512`] with AVX (32-byte moves).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Avx<const N: usize>;

#[cfg(target_arch = "x86_64")]
impl<const N: usize> RunCopy for Avx<N> {
    #[inline(always)]
    unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize) {
        // SAFETY: an `Avx` copier is made only after the CPU was found to
        // have AVX (`wide`); forwarded caller contract.
        unsafe { run_avx::<N>(src, ss, dst, ds, count) }
    }
}

/// [`run_fixed`] compiled with AVX-512F: inlined into a walk compiled with
/// it, called from one that is not.
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

/// A walk over elements, generic in how one run is copied: what
/// [`dispatch`] hands the copier it picked.
trait Walk: Copy {
    /// Copy every element of the walk with `f`.
    ///
    /// # Safety
    /// Every element of the walk must be inside live allocations (source
    /// readable, destination writable), sources not overlapping
    /// destinations, and `f` must copy elements of the walk's size.
    unsafe fn walk<F: RunCopy>(self, f: F);
}

/// Walk `w`, of `elem`-byte elements, with the copier for that size,
/// picked here once: a fixed-size copy for 1, 2, 4, 8 and 16 bytes, the
/// widest moves the CPU has for 32 and 64 ([`wide`]), `memcpy` per
/// element otherwise.
///
/// # Safety
/// As [`Walk::walk`], for elements of `elem` bytes.
#[inline(always)]
unsafe fn dispatch<W: Walk>(elem: usize, w: W) {
    // SAFETY: every arm's copier moves `elem` bytes (forwarded contract).
    unsafe {
        match elem {
            1 => w.walk(Fixed::<1>),
            2 => w.walk(Fixed::<2>),
            4 => w.walk(Fixed::<4>),
            8 => w.walk(Fixed::<8>),
            16 => w.walk(Fixed::<16>),
            32 => wide::<32, W>(w),
            64 => wide::<64, W>(w),
            _ => w.walk(Any(elem)),
        }
    }
}

/// Walk `w` of `N`-byte elements compiled with the widest moves the CPU
/// has: one 64-byte move per element with AVX-512 on a CPU where it does
/// not cost clock speed (see [`avx512_moves`]), two 32-byte ones with AVX
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
/// As [`Walk::walk`], for elements of `N` bytes.
#[inline(always)]
unsafe fn wide<const N: usize, W: Walk>(w: W) {
    #[cfg(target_arch = "x86_64")]
    {
        if N == 64 && avx512_moves() {
            // SAFETY: the CPU has AVX-512F (avx512_moves); forwarded contract.
            return unsafe { walk_avx512(w, Avx512::<N>) };
        }
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX (checked); forwarded contract.
            return unsafe { walk_avx(w, Avx::<N>) };
        }
    }
    // SAFETY: forwarded caller contract.
    unsafe { w.walk(Fixed::<N>) }
}

/// True if 64-byte moves are worth it: the CPU has AVX-512F and is of a
/// generation whose 512-bit loads and stores run at full clock, told by
/// AVX-512 VBMI2 (Ice Lake and later, AMD Zen 4 and later). Skylake-SP and
/// Cascade Lake lower the core's clock while 512-bit instructions run, as
/// glibc's choice of `memcpy` there also avoids; they get 32-byte moves.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn avx512_moves() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vbmi2")
}

/// `w.walk(f)` compiled with AVX-512F, the copier inlined into the walk.
///
/// # Safety
/// As [`Walk::walk`], and the CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn walk_avx512<W: Walk, F: RunCopy>(w: W, f: F) {
    // SAFETY: forwarded caller contract.
    unsafe { w.walk(f) }
}

/// `w.walk(f)` compiled with AVX.
///
/// # Safety
/// As [`Walk::walk`], and the CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn walk_avx<W: Walk, F: RunCopy>(w: W, f: F) {
    // SAFETY: forwarded caller contract.
    unsafe { w.walk(f) }
}

/// One run: `count` elements, strides `ss` and `ds`.
#[derive(Clone, Copy)]
struct One {
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
    count: usize,
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

    /// Bytes that do not repeat at any stride used here (251 is prime), so
    /// a copy of the wrong element shows.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    /// Where `count` elements of `elem` bytes at stride `stride` from the
    /// middle of a buffer of `len` go: the offset of element 0.
    fn base(len: usize, elem: usize, count: usize, stride: isize) -> usize {
        let span = count.saturating_sub(1) as isize * stride;
        (len as isize / 2 - span / 2) as usize - elem / 2 + 1
    }

    /// One run, copied by `copy` and by a byte loop; equal or a panic.
    fn check_run(elem: usize, count: usize, ss: isize, ds: isize, copy: impl Fn(One)) {
        // Centred, with room for `count` elements at stride 3 elements.
        let len = (6 * count + 4) * elem + 64;
        let src = pattern(len);
        let mut dst = vec![0u8; len];
        let mut want = dst.clone();
        let (sb, db) = (base(len, elem, count, ss), base(len, elem, count, ds));
        for i in 0..count as isize {
            for b in 0..elem as isize {
                want[(db as isize + i * ds + b) as usize] =
                    src[(sb as isize + i * ss + b) as usize];
            }
        }
        // The walk stays inside both buffers (centred, with room for
        // `count` elements at the largest stride used, 3 elements) and they
        // are distinct.
        copy(One {
            // Pointers into the whole buffers: a reflected walk reads or
            // writes below its first element.
            src: src.as_ptr().wrapping_add(sb),
            ss,
            dst: dst.as_mut_ptr().wrapping_add(db),
            ds,
            count,
        });
        assert_eq!(dst, want, "elem {elem}, count {count}, strides {ss}/{ds}");
    }

    /// Stride pairs: packing, unpacking, dense both sides, strided both
    /// sides, and reflections on either side.
    fn stride_pairs(e: isize) -> [(isize, isize); 6] {
        [
            (3 * e, e),
            (e, 2 * e),
            (e, e),
            (2 * e, 3 * e),
            (-e, e),
            (e, -3 * e),
        ]
    }

    /// Run lengths: none, one, around one and two passes of the unrolled
    /// loop (fewer under Miri, which interprets every byte).
    const COUNTS: &[usize] = if cfg!(miri) {
        &[0, 1, 9]
    } else {
        &[0, 1, 3, 8, 9, 16, 17]
    };

    /// `run` (whichever copier it picks here) against a byte loop, for
    /// every specialised size and a few others, with unaligned bases and
    /// run lengths around the unrolling.
    #[test]
    fn runs_copy_like_a_byte_loop() {
        let elems: &[usize] = if cfg!(miri) {
            &[1, 3, 8, 32, 64]
        } else {
            &[1, 2, 3, 4, 8, 16, 24, 32, 64]
        };
        for &elem in elems {
            for &count in COUNTS {
                for (ss, ds) in stride_pairs(elem as isize) {
                    // SAFETY: `check_run` hands a run inside two distinct
                    // buffers.
                    check_run(elem, count, ss, ds, |r| unsafe {
                        run(elem, r.src, r.ss, r.dst, r.ds, r.count)
                    });
                }
            }
        }
    }

    /// Each copier for 32- and 64-byte elements, taken directly (the CPU
    /// running the test picks only one of them through `run`): the plain
    /// one always, the AVX and AVX-512 ones where the CPU has them.
    #[test]
    fn every_wide_copier_copies_like_a_byte_loop() {
        fn each<const N: usize>() {
            for &count in COUNTS {
                for (ss, ds) in stride_pairs(N as isize) {
                    // SAFETY: as in `runs_copy_like_a_byte_loop`.
                    check_run(N, count, ss, ds, |r| unsafe { r.walk(Fixed::<N>) });
                    #[cfg(target_arch = "x86_64")]
                    {
                        if std::arch::is_x86_feature_detected!("avx") {
                            // SAFETY: as above; the CPU has AVX.
                            check_run(N, count, ss, ds, |r| unsafe { walk_avx(r, Avx::<N>) });
                            // SAFETY: as above, through `nest_rec`'s
                            // out-of-line path.
                            check_run(N, count, ss, ds, |r| unsafe { r.walk(Avx::<N>) });
                        }
                        if std::arch::is_x86_feature_detected!("avx512f") {
                            // SAFETY: as above; the CPU has AVX-512F.
                            check_run(N, count, ss, ds, |r| unsafe { walk_avx512(r, Avx512::<N>) });
                            // SAFETY: as above.
                            check_run(N, count, ss, ds, |r| unsafe { r.walk(Avx512::<N>) });
                        }
                    }
                }
            }
        }
        each::<32>();
        each::<64>();
    }

    /// `copy_range` from every start, for every length, and `copy_all`,
    /// over a 3-loop nest (transposed on the destination side), against a
    /// walk of the nest's multi-indices.
    #[test]
    fn ranges_and_nests_copy_like_a_reference_walk() {
        for elem in [1usize, 8, 24, 32, 64] {
            let e = elem as isize;
            let counts = [3u64, 2, 4];
            // Source: strided rows; destination: the two outer loops swapped.
            let loops = [
                Loop {
                    count: 3,
                    src: 2 * e,
                    dst: e,
                },
                Loop {
                    count: 2,
                    src: 8 * e,
                    dst: 12 * e,
                },
                Loop {
                    count: 4,
                    src: 20 * e,
                    dst: 3 * e,
                },
            ];
            let total: u64 = counts.iter().product();
            let len = 100 * elem;
            let src = pattern(len);
            let place = |k: u64| {
                let (i, j, l) = (k % 3, k / 3 % 2, k / 6);
                let s = i as isize * loops[0].src
                    + j as isize * loops[1].src
                    + l as isize * loops[2].src;
                let d = i as isize * loops[0].dst
                    + j as isize * loops[1].dst
                    + l as isize * loops[2].dst;
                (s as usize, d as usize)
            };
            // Every start and length; under Miri the ends and a middle.
            let picks = |lo: u64, hi: u64| -> Vec<u64> {
                if cfg!(miri) {
                    vec![lo, (lo + hi) / 2, hi]
                } else {
                    (lo..=hi).collect()
                }
            };
            for start in picks(0, total - 1) {
                for n in picks(0, total - start) {
                    let mut dst = vec![0u8; len];
                    let mut want = dst.clone();
                    for k in start..start + n {
                        let (s, d) = place(k);
                        want[d..d + elem].copy_from_slice(&src[s..s + elem]);
                    }
                    // SAFETY: every element of the nest is inside both
                    // buffers (largest offset 73 elements of 100).
                    unsafe { copy_range(elem, &loops, src.as_ptr(), dst.as_mut_ptr(), start, n) };
                    assert_eq!(dst, want, "copy_range: elem {elem}, start {start}, n {n}");
                    if start == 0 && n == total {
                        let mut all = vec![0u8; len];
                        // SAFETY: as above.
                        unsafe { copy_all(elem, &loops, src.as_ptr(), all.as_mut_ptr()) };
                        assert_eq!(all, want, "copy_all: elem {elem}");
                    }
                }
            }
        }
    }
}
