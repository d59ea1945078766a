//! How one innermost run is copied: a fixed-size array copy per element
//! (with the baseline target's moves, or AVX / AVX-512 ones), `memcpy` per
//! element of any size, or one contiguous block.

/// Copy `count` elements of `N` bytes, strided on both sides.
///
/// # Safety
/// Every element read and written must be inside live allocations, and
/// no source element may overlap a destination element.
#[inline(always)]
pub(super) unsafe fn run_fixed<const N: usize>(
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
pub(super) trait RunCopy: Copy {
    /// Copy `count` elements strided by `ss` (source) and `ds` (destination).
    ///
    /// # Safety
    /// As [`run_fixed`].
    unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize);
}

/// Elements of `N` bytes, with the baseline target's moves.
#[derive(Clone, Copy)]
pub(super) struct Fixed<const N: usize>;

impl<const N: usize> RunCopy for Fixed<N> {
    #[inline(always)]
    unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize) {
        // SAFETY: forwarded caller contract.
        unsafe { run_fixed::<N>(src, ss, dst, ds, count) }
    }
}

/// A copier of `N`-byte elements whose runs are [`run_fixed`] compiled
/// with one target feature, and that compiled function: inlined into a
/// walk compiled with the same feature (`dispatch`'s wide walks), called
/// from one that is not (the walk's out-of-line recursion, `nest_rec`), so
/// the wide moves go wherever the walk goes.
macro_rules! wide_copier {
    ($(#[$doc:meta])* $copier:ident, $run:ident, $feature:literal) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[derive(Clone, Copy)]
        pub(super) struct $copier<const N: usize>;

        #[cfg(target_arch = "x86_64")]
        impl<const N: usize> RunCopy for $copier<N> {
            #[inline(always)]
            unsafe fn copy(self, src: *const u8, ss: isize, dst: *mut u8, ds: isize, count: usize) {
                // SAFETY: this copier is made only after the CPU was found
                // to have the feature (`wide`); forwarded caller contract.
                unsafe { $run::<N>(src, ss, dst, ds, count) }
            }
        }

        /// [`run_fixed`] compiled with the feature.
        ///
        /// # Safety
        /// As [`run_fixed`], and the CPU must have the feature.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feature)]
        unsafe fn $run<const N: usize>(
            src: *const u8,
            ss: isize,
            dst: *mut u8,
            ds: isize,
            count: usize,
        ) {
            // SAFETY: forwarded caller contract.
            unsafe { run_fixed::<N>(src, ss, dst, ds, count) }
        }
    };
}

wide_copier!(
    /// Elements of `N` bytes moved with AVX-512F (one 64-byte move each).
    Avx512,
    run_avx512,
    "avx512f"
);
wide_copier!(
    /// Elements of `N` bytes moved with AVX (32-byte moves).
    Avx,
    run_avx,
    "avx"
);

/// Elements of any size (`memcpy` each).
#[derive(Clone, Copy)]
pub(super) struct Any(pub(super) usize);

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
pub(super) struct Bytes(pub(super) usize);

impl RunCopy for Bytes {
    #[inline(always)]
    unsafe fn copy(self, src: *const u8, _: isize, dst: *mut u8, _: isize, _: usize) {
        // SAFETY: forwarded caller contract (the block is the run).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, self.0) }
    }
}
