//! Signalling (OpenSHMEM 1.5 section 9.9): `put_signal`,
//! `put_signal_nbi`, `signal_fetch`, `signal_wait_until`, on rgex's
//! put-with-signal: the data, then the 64-bit signal word set or added
//! to, never visible at the target before the data.
//!
//! Both forms return at local completion (rgex's implicit-handle
//! put-with-signal; delivery is complete at the next `shmem_quiet`), as
//! the specification allows of the blocking one.

use crate::fatal::{fatal, OrDie};
use crate::state;
use rgex::{Flags, Signal};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

/// `SHMEM_SIGNAL_SET`.
pub const SIGNAL_SET: c_int = 0;
/// `SHMEM_SIGNAL_ADD`.
pub const SIGNAL_ADD: c_int = 1;

/// Put `bytes` from `source` to the symmetric `dest` of `pe`, then
/// update its `sig_addr` with `signal` as `sig_op` says.
///
/// # Safety
/// `source` is readable for `bytes` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn put_signal(
    what: &str,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
) {
    let s = state::get(what);
    let at = s.remote(what, "dest", dest, bytes, pe);
    let word = s.offset(what, "sig_addr", sig_addr.cast(), 8);
    if s.is_static(at.offset) || s.is_static(word) {
        // rgex's put-with-signal is for its primordial segment: for
        // static data, the put, its completion, then the signal by AMO
        // (so the signal is never seen before the data).
        if sig_op != SIGNAL_SET && sig_op != SIGNAL_ADD {
            fatal(
                Some(s.me),
                what,
                format_args!(
                    "sig_op = {sig_op} is neither SHMEM_SIGNAL_SET ({SIGNAL_SET}) nor \
                     SHMEM_SIGNAL_ADD ({SIGNAL_ADD})"
                ),
            );
        }
        // SAFETY: forwarded.
        unsafe { crate::rma::put(what, dest, source, bytes, pe) };
        crate::order::quiet(s, what);
        let op = if sig_op == SIGNAL_SET {
            rgex::AtomicOp::Swap
        } else {
            rgex::AtomicOp::Fadd
        };
        crate::amo::op(what, sig_addr.cast_const(), op, signal, 0, pe);
        return;
    }
    let sig = match sig_op {
        SIGNAL_SET => Signal::set(word, signal),
        SIGNAL_ADD => Signal::add(word, signal),
        _ => fatal(
            Some(s.me),
            what,
            format_args!(
                "sig_op = {sig_op} is neither SHMEM_SIGNAL_SET ({SIGNAL_SET}) nor \
                 SHMEM_SIGNAL_ADD ({SIGNAL_ADD})"
            ),
        ),
    };
    let src: &[u8] = if bytes == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(source, bytes) }
    };
    s.ep.put_signal_nbi(at, src, sig, Flags::empty())
        .or_die(s.me, what);
}

/// The signal word at `sig_addr`, for `what` (`shmem_signal_fetch`, or a
/// wait that has seen it change).
fn fetch(what: &str, sig_addr: *const u64) -> u64 {
    let s = state::get(what);
    let off = s.offset(what, "sig_addr", sig_addr.cast(), 8);
    if !off.is_multiple_of(8) {
        fatal(
            Some(s.me),
            what,
            format_args!("sig_addr = {sig_addr:p} is not 8-byte aligned"),
        );
    }
    if s.is_static(off) {
        // Peers' signals to static data are rgex's active messages (see
        // `put_signal`): run them, so a loop of fetches sees them.
        s.ep.poll().or_die(s.me, what);
    }
    // SAFETY: an aligned word of this PE's heap (checked above), updated
    // by peers atomically. Acquire: pairs with the signal's Release update,
    // so the data put before it is seen.
    unsafe { (*sig_addr.cast::<AtomicU64>()).load(Ordering::Acquire) }
}

entry! {
    /// `uint64_t shmem_signal_fetch(const uint64_t *sig_addr)`.
    pub extern "C" fn shmem_signal_fetch / pshmem_signal_fetch(sig_addr: *const u64) -> u64 {
        fetch("shmem_signal_fetch", sig_addr)
    }
}

entry! {
    /// `uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp,
    /// uint64_t cmp_value)`: the word's value once it compares so.
    pub extern "C" fn shmem_signal_wait_until / pshmem_signal_wait_until(sig_addr: *mut u64, cmp: c_int, cmp_value: u64) -> u64 {
        let what = "shmem_signal_wait_until";
        let s = state::get(what);
        let off = s.offset(what, "sig_addr", sig_addr.cast(), 8);
        let c = crate::wait::cmp_of(s, what, cmp);
        if s.is_static(off) {
            // rgex waits on its primordial segment's words; static data polls.
            // SAFETY: one word, checked symmetric.
            unsafe { crate::wait::wait_until(what, sig_addr.cast_const(), cmp, cmp_value) };
            return fetch(what, sig_addr);
        }
        s.ep.wait_until::<u64>(off, c, cmp_value).or_die(s.me, what)
    }
}
