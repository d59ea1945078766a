//! Write prefetch of a Medium payload buffer.
//!
//! A Medium's payload buffer lives in the receiver's region, and the
//! receiver read it the last time the cell went round, so every line the
//! sender fills is a miss that must take the line from the other core.
//! Filled with small stores (a VIS pack writes one element at a time, a
//! negotiated payload is assembled field by field), the store buffer holds
//! only a few lines' worth of stores and the misses come one after the
//! other. Asking for the lines in a writable state up front puts them all
//! in flight at once.
//!
//! Measured with testvisperf's forced-AM pipeline (8-byte elements packed
//! into the buffer, 2 ranks on this 2-core AMD EPYC VM): without it, the
//! negotiated pipeline ran 20% slower than the fixed-payload one at 1 KiB
//! and level at 4 KiB; with it, level at 1 KiB and 8-17% faster at 4 KiB.
//! Prefetching a whole 64 KiB buffer was slower than prefetching its first
//! few KiB (the lines are evicted again before they are written); with the
//! cap at 8 KiB rather than 4 KiB, testam's negotiated 8 KiB Medium (its
//! payload written with word stores) went from -8..+25% against the
//! fixed-payload one (run to run) to +22..+30%, hence [`LIMIT`].

/// Bytes at the start of a buffer that are prefetched at most.
pub const LIMIT: usize = 8192;

/// Cache line size assumed for the stride of the prefetches.
const LINE: usize = 64;

/// Ask for the lines of `buf .. buf + min(len, LIMIT)` in a writable state.
///
/// A hint only: it never faults (whatever the address) and changes no
/// memory; without x86-64's PREFETCHW (other architectures, Miri, loom)
/// it does nothing.
#[inline]
pub fn for_write(buf: *const u8, len: usize) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    {
        let mut off = 0;
        while off < len.min(LIMIT) {
            let p = buf.wrapping_add(off);
            // SAFETY: PREFETCHW is a hint: it does not fault on any
            // address, writes no memory and leaves the flags alone (CPUs
            // without it decode it as a NOP).
            unsafe {
                std::arch::asm!(
                    "prefetchw byte ptr [{0}]",
                    in(reg) p,
                    options(nostack, preserves_flags, readonly)
                )
            };
            off += LINE;
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = (buf, len);
}
