//! Test-and-set lock registers and atomic increment counters: the SCC's two
//! hardware-atomic synchronisation devices. Both are uncached and never go
//! through a cache or the WCB; here they are real atomics in the region.
//!
//! **Test-and-set register** (one per core, in its tile's configuration
//! register block). On the SCC a *read* is the test-and-set: it returns 1
//! (bit 0 set) if the register was free, and sets it, so the reader now holds
//! the lock; it returns 0 if another core (or the same one) read it before
//! and nobody has written it since. Any *write* resets it (releases). RCCE's
//! `RCCE_acquire_lock` is `while (!(*lock & 1)) ;` and `RCCE_release_lock`
//! writes 0. Our [`Core::tas_try`](super::Core::tas_try) returns `true`
//! exactly when the hardware read would have returned 1 (acquired), and
//! [`Core::tas_release`](super::Core::tas_release) is the write. A register
//! is not owned: any core may read or write any core's register; releasing
//! a lock one does not hold is allowed (as on the hardware) and is a bug of
//! the caller.
//!
//! **Atomic counters.** 32-bit counters outside the cores (the SCC's came
//! with the FPGA system interface). Modelled operations: increment (returns
//! the value before), read, and set (initialisation). Values wrap at 2^32.

use std::sync::atomic::{AtomicU64, Ordering};

/// The test-and-set read: true if the register was free (now taken).
#[inline]
pub(crate) fn tas_read(reg: &AtomicU64) -> bool {
    // AcqRel: Acquire so the winner sees everything the previous holder
    // wrote before its release (the Release store below); Release is not
    // needed for mutual exclusion but keeps a failed attempt ordered too.
    reg.swap(1, Ordering::AcqRel) == 0
}

/// The write that releases the register.
#[inline]
pub(crate) fn tas_write(reg: &AtomicU64) {
    // Release: pairs with the Acquire of the next successful `tas_read`.
    reg.store(0, Ordering::Release);
}

/// Atomic increment; returns the value before.
#[inline]
pub(crate) fn counter_inc(c: &AtomicU64) -> u32 {
    // AcqRel: an increment is both a release (what this core did before is
    // visible to whoever reads the new value) and an acquire (it sees what
    // earlier incrementers did), as barriers built on counters need.
    // The closure always returns Some, so the Err arm is unreachable.
    match c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
        Some((v as u32).wrapping_add(1) as u64)
    }) {
        Ok(v) | Err(v) => v as u32,
    }
}

/// Atomic read.
#[inline]
pub(crate) fn counter_read(c: &AtomicU64) -> u32 {
    // Acquire: pairs with the Release half of increments and sets.
    c.load(Ordering::Acquire) as u32
}

/// Atomic set; returns the value before.
#[inline]
pub(crate) fn counter_set(c: &AtomicU64, v: u32) -> u32 {
    // AcqRel: Release publishes this core's earlier accesses with the new
    // value; Acquire because the old value is returned (an RMW).
    c.swap(v as u64, Ordering::AcqRel) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tas_semantics() {
        let r = AtomicU64::new(0);
        assert!(tas_read(&r));
        assert!(!tas_read(&r), "a second read (even by the holder) fails");
        tas_write(&r);
        assert!(tas_read(&r));
    }

    #[test]
    fn counter_wraps() {
        let c = AtomicU64::new(0);
        assert_eq!(counter_set(&c, u32::MAX), 0);
        assert_eq!(counter_inc(&c), u32::MAX);
        assert_eq!(counter_read(&c), 0);
    }
}
