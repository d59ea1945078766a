//! Which copier a walk gets: picked once per call from the element size
//! and, for 32- and 64-byte elements, the widest moves the CPU has.

use super::copier::{Any, Fixed, RunCopy};
#[cfg(target_arch = "x86_64")]
use super::copier::{Avx, Avx512};

/// A walk over elements, generic in how one run is copied: what
/// [`dispatch`] hands the copier it picked.
pub(super) trait Walk: Copy {
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
pub(super) unsafe fn dispatch<W: Walk>(elem: usize, w: W) {
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
pub(super) unsafe fn walk_avx512<W: Walk, F: RunCopy>(w: W, f: F) {
    // SAFETY: forwarded caller contract.
    unsafe { w.walk(f) }
}

/// `w.walk(f)` compiled with AVX.
///
/// # Safety
/// As [`Walk::walk`], and the CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
pub(super) unsafe fn walk_avx<W: Walk, F: RunCopy>(w: W, f: F) {
    // SAFETY: forwarded caller contract.
    unsafe { w.walk(f) }
}
