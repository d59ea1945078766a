//! A freeze: the thread stops where it is, for a debugger to attach,
//! for a bounded time.

use super::nap;
use crate::rank_line;
use rgex_core::bootstrap::protocol::monotonic_ns;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Nonzero ends a freeze at once: in gdb, `set {int}&rgex_thaw = 1`
/// (its symbol is `rgex_thaw`), then `continue`.
#[export_name = "rgex_thaw"]
static THAW: AtomicU32 = AtomicU32::new(0);

/// How often a frozen thread looks at the thaw word and the clock.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Print `[rank R] frozen: gdb -p PID ...` and wait `secs` (or until
/// thawed), then say so. Async-signal-safe: prctl, write, nanosleep, and
/// atomic loads.
pub(super) fn freeze(for_: Duration, why: &[u8]) {
    // Any process may attach (Yama's ptrace_scope 1 lets only ancestors
    // otherwise); an error without Yama, which needs nothing.
    // SAFETY: prctl with integer arguments has no memory preconditions.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let mut line = rank_line::stderr();
    line.put(b"frozen: gdb -p ")
        .num(pid as u64)
        .put(b" (")
        .put(why)
        .put(b"; thread ")
        .num(super::tid() as u64)
        .put(b" waits ")
        .num(for_.as_secs())
        .put(b" s, RGEX_FREEZE_SECS, or until gdb does set {int}&rgex_thaw = 1)");
    line.end();
    // Relaxed: a flag a debugger sets, ordering nothing.
    THAW.store(0, Ordering::Relaxed);
    let start = monotonic_ns();
    let end = start + for_.as_nanos() as u64;
    while THAW.load(Ordering::Relaxed) == 0 && monotonic_ns() < end {
        nap(LOOK_EVERY);
    }
    line.put(if THAW.load(Ordering::Relaxed) != 0 {
        b"thawed by a debugger after ".as_slice()
    } else {
        b"the freeze ended after ".as_slice()
    })
    .secs(monotonic_ns() - start)
    .put(b" s; going on");
    line.end();
}
