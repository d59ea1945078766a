//! The answer to SIGUSR1: a report, on stderr, of what every thread of
//! this rank is blocked on (see [`rgex_core::blocked`]), each line
//! prefixed `[rank R] `. `rgex-run --timeout` sends it to every rank
//! still running before it kills the job, and so may anyone (`kill -USR1
//! PID`). [`init`](crate::init) installs it.
//!
//! The handler reads the records with atomic loads and writes with
//! `write(2)` alone (async-signal-safe), restoring `errno`. It is
//! installed only where SIGUSR1 still has its default action: an
//! application that handles SIGUSR1 itself keeps its handler (and
//! rgex-run, which signals only ranks that catch SIGUSR1, then reaches
//! the application's).
//!
//! ```no_run
//! rgex::blocked_report::install(0)?;
//! // SAFETY: raise has no memory-safety preconditions.
//! unsafe { libc::raise(libc::SIGUSR1) }; // [rank 0] no thread is in a wait rgex records ...
//! # Ok::<(), rgex::Error>(())
//! ```

use crate::rank_line;
use rgex_core::{Error, Result};
use std::ffi::c_int;

/// The signal that asks for the report.
pub const SIGNAL: c_int = libc::SIGUSR1;

/// Install the SIGUSR1 handler for rank `rank` (the prefix of its lines),
/// unless SIGUSR1 is handled or ignored already.
pub fn install(rank: u32) -> Result<()> {
    rank_line::set(rank);
    // SAFETY: a zeroed sigaction is valid for sigaction to write.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries.
    if unsafe { libc::sigaction(SIGNAL, std::ptr::null(), &mut old) } != 0 {
        return Err(Error::last_os("read SIGUSR1's action"));
    }
    if old.sa_sigaction != libc::SIG_DFL {
        return Ok(());
    }
    // SAFETY: all-zero bytes are a valid sigaction; every field used is set.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART | libc::SA_ONSTACK;
    // SAFETY: `sa_mask` is a valid sigset_t; `action` is initialised and its
    // handler async-signal-safe (see the module docs).
    unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(SIGNAL, &action, std::ptr::null_mut()) != 0 {
            return Err(Error::last_os("install the SIGUSR1 handler"));
        }
    }
    Ok(())
}

extern "C" fn on_signal(_sig: c_int) {
    // SAFETY: __errno_location returns this thread's errno, always valid.
    let errno = unsafe { *libc::__errno_location() };
    rgex_core::blocked::report(libc::STDERR_FILENO, rank_line::prefix());
    // SAFETY: as above; restored so the interrupted code sees its own.
    unsafe { *libc::__errno_location() = errno };
}
