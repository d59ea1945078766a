//! Helped copies: a large node-local strided copy split into blocks that
//! the rank's other threads, idle while they are blocked in a wait or a
//! poll on the endpoint, help with ([`Endpoint::share`]), the shared-copy idea of
//! Hybrid MPI.
//!
//! Kept because testvisperf's shared-copy set shows a win wherever a
//! thread waits: with one thread of the rank waiting in `poll` on another
//! CPU, 256 KiB - 2 MiB strided puts ran 1.2-2.1x as fast as the
//! one-thread copy on a 2-CPU node (1.7-2.1x in two full runs, 1.2-1.5x
//! in three others, the machine's memory bandwidth varying), while with
//! nobody waiting the shared context measured 0.97-1.04x of the
//! one-thread one (a few atomic operations per 64 KiB block: within the
//! noise). Turned off per context
//! with [`VisBuilder::shared_copy`](crate::VisBuilder::shared_copy).

use crate::kernel::{copy_range, Loop};
use rgex_core::shared_work::Ends;
use rgex_endpoint::Endpoint;

/// Copies of at least this many bytes are shared
/// ([`rgex_core::shared_work::SHARE_MIN`]).
pub const SHARE_MIN: u64 = rgex_core::shared_work::SHARE_MIN as u64;

/// Bytes per block ([`rgex_core::shared_work::BLOCK`]).
const BLOCK: u64 = rgex_core::shared_work::BLOCK as u64;

/// Copy the nest `loops` (innermost first, elements of `elem` bytes,
/// `elems` elements) from `src` to `dst`, sharing the work on `ep`, if
/// it is worth sharing (at least [`SHARE_MIN`] bytes) and may be
/// (its destination elements are disjoint, so blocks copied in any order
/// by any thread leave what the one-thread copy leaves). `false`, and
/// nothing copied, otherwise.
///
/// # Safety
/// As [`copy_range`] for every element of the nest.
pub(crate) unsafe fn try_copy(
    ep: &Endpoint,
    elem: usize,
    loops: &[Loop],
    elems: u64,
    src: *const u8,
    dst: *mut u8,
) -> bool {
    let bytes = elems.saturating_mul(elem as u64);
    // (The caller may have checked the size already, to skip building
    // `loops`; this function does not rely on it.)
    if bytes < SHARE_MIN || !disjoint(elem, loops) {
        return false;
    }
    if loops.is_empty() {
        // One contiguous element: the endpoint's shared byte copy.
        // SAFETY: the one element, which the caller vouches for; the two
        // sides do not overlap (the caller's contract too).
        unsafe { ep.share_copy(src, dst, bytes as usize) };
        return true;
    }
    let ends = Ends { src, dst };
    let e = elem as u64;
    if e > BLOCK {
        // Elements larger than a block: each in parts of a block, the
        // part's bytes copied at that element's address (the kernel's
        // offsets do not depend on the element size it is given).
        let parts = e.div_ceil(BLOCK);
        ep.share((elems * parts) as usize, &|i| {
            let (k, lo) = (i as u64 / parts, i as u64 % parts * BLOCK);
            let w = &ends;
            // SAFETY: bytes `lo .. lo + BLOCK.min(e - lo)` of element `k`,
            // which the caller vouches for; the parts of one element do
            // not overlap, and no two elements' destinations do
            // (`disjoint` above).
            unsafe {
                let (s, d) = (w.src.add(lo as usize), w.dst.add(lo as usize));
                copy_range(BLOCK.min(e - lo) as usize, loops, s, d, k, 1)
            }
        });
        return true;
    }
    let per = BLOCK / e;
    ep.share(elems.div_ceil(per) as usize, &|i| {
        let start = i as u64 * per;
        let w = &ends;
        // SAFETY: elements `start ..` of the nest, which the caller vouches
        // for; blocks are disjoint ranges of elements, whose destinations
        // do not overlap (`disjoint` above).
        unsafe { copy_range(elem, loops, w.src, w.dst, start, per.min(elems - start)) }
    });
    true
}

/// True if no two elements of the nest overlap on the destination side:
/// with the loops ordered by the size of their destination stride, each
/// stride clears everything the loops inside it span. (Sufficient, not
/// necessary: an interleaving this misses is only copied unshared.)
fn disjoint(elem: usize, loops: &[Loop]) -> bool {
    let mut dims: Vec<(u64, u64)> = loops
        .iter()
        .filter(|l| l.count > 1)
        .map(|l| (l.dst.unsigned_abs() as u64, l.count))
        .collect();
    dims.sort_unstable();
    let mut span = elem as u64;
    for (stride, count) in dims {
        if stride < span {
            return false;
        }
        span = span.saturating_add(stride.saturating_mul(count - 1));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(count: u64, dst: isize) -> Loop {
        Loop { count, src: 0, dst }
    }

    #[test]
    fn disjoint_nests() {
        // Dense, strided, transposed and reflected destinations.
        assert!(disjoint(8, &[l(4, 8)]));
        assert!(disjoint(8, &[l(4, 32), l(3, 128)]));
        assert!(disjoint(8, &[l(4, 32), l(3, 8)]));
        assert!(disjoint(8, &[l(4, -8), l(3, -32)]));
        assert!(disjoint(8, &[]));
        // A zero stride writes one element four times; overlapping
        // elements and interleaved loops that collide.
        assert!(!disjoint(8, &[l(4, 0)]));
        assert!(!disjoint(8, &[l(4, 4)]));
        assert!(!disjoint(8, &[l(4, 8), l(2, 16)]));
    }
}
