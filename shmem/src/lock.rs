//! Distributed locks (OpenSHMEM 1.5 section 9.12): `shmem_set_lock`,
//! `shmem_test_lock`, `shmem_clear_lock`, on a symmetric `long`
//! (initialised to 0 by the program, as the specification asks).
//!
//! A ticket lock, fair under contention (first come, first served): the
//! lock's home is PE 0's copy of the `long`, read as two 32-bit words,
//! `next` (the next ticket) and `serving` (the ticket holding the lock).
//! `set_lock` takes a ticket with a fetch-add on `next` and waits, with
//! progress and rgex's backoff, until `serving` reaches it;
//! `clear_lock` quiets (so the holder's writes are complete before the
//! next holder runs) and adds 1 to `serving`; `test_lock` takes a ticket
//! only if `next == serving` (a compare-swap), so it never waits. Both
//! words wrap alike, and every access is one 32-bit AMO of one domain
//! (so they are atomic with each other on every conduit).

use crate::amo;
use crate::fatal::{fatal, OrDie};
use crate::state::{self, Shmem};
use rgex::{AtomicOp, Backoff};
use std::ffi::{c_int, c_long};

/// The lock's two words at its home PE.
fn words(s: &Shmem, what: &str, lock: *mut c_long) -> (*const u32, *const u32) {
    if lock.is_null() {
        fatal(Some(s.me), what, "lock is NULL");
    }
    let next = lock.cast::<u32>().cast_const();
    (next, next.wrapping_add(1))
}

/// The PE holding every lock's words.
const HOME: c_int = 0;

entry! {
    /// `void shmem_set_lock(long *lock)`: wait for the lock, in ticket order.
    pub extern "C" fn shmem_set_lock / pshmem_set_lock(lock: *mut c_long) {
        let what = "shmem_set_lock";
        let s = state::get(what);
        let (next, serving) = words(s, what, lock);
        let ticket = amo::op(what, next, AtomicOp::Fadd, 1u32, 0, HOME);
        let mut backoff = Backoff::new(s.ep.polite());
        while amo::op(what, serving, AtomicOp::Get, 0u32, 0, HOME) != ticket {
            if s.ep.poll().or_die(s.me, what) == 0 {
                backoff.snooze();
            } else {
                backoff.reset();
            }
        }
    }
}

entry! {
    /// `int shmem_test_lock(long *lock)`: 0 having taken the lock, 1 if it is
    /// held (then nothing changes).
    pub extern "C" fn shmem_test_lock / pshmem_test_lock(lock: *mut c_long) -> c_int {
        let what = "shmem_test_lock";
        let s = state::get(what);
        let (next, serving) = words(s, what, lock);
        // Progress: a program spinning on test_lock must still serve its
        // peers' active messages (a get of its static data by the holder).
        s.ep.poll().or_die(s.me, what);
        let now = amo::op(what, serving, AtomicOp::Get, 0u32, 0, HOME);
        // Free when next == serving: take ticket `now` by moving next past it.
        let was = amo::op(what, next, AtomicOp::Fcas, now, now.wrapping_add(1), HOME);
        c_int::from(was != now)
    }
}

entry! {
    /// `void shmem_clear_lock(long *lock)`: complete this PE's writes, then
    /// serve the next ticket.
    pub extern "C" fn shmem_clear_lock / pshmem_clear_lock(lock: *mut c_long) {
        let what = "shmem_clear_lock";
        let s = state::get(what);
        let (_, serving) = words(s, what, lock);
        crate::order::quiet(s, what);
        amo::op(what, serving, AtomicOp::Add, 1u32, 0, HOME);
    }
}
