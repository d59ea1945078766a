//! Signals: the launcher's own termination signals (SIGINT, SIGTERM,
//! SIGHUP), noticed by the supervision loop so it can end the job cleanly,
//! and signal names for messages.

use rgex_core::{Error, Result};
use std::sync::atomic::{AtomicI32, Ordering};

/// The first termination signal received, or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The signals that end the job when the launcher receives them.
const TERMINATING: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    // An atomic store is async-signal-safe. Relaxed is enough: the flag
    // publishes only its own value, which the supervision loop polls.
    let _ = RECEIVED.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
}

/// Catch SIGINT, SIGTERM and SIGHUP in this process: instead of dying, it
/// records the signal, and a running [`Job`](super::Job) then kills its
/// ranks, cleans up and reports status 128 + the signal's number.
///
/// This changes process-wide signal dispositions: the `rgex-run` binary
/// calls it; a library embedding the launcher decides for itself.
///
/// ```no_run
/// rgex::launch::catch_termination_signals().unwrap();
/// ```
pub fn catch_termination_signals() -> Result<()> {
    for sig in TERMINATING {
        // SAFETY: `sigaction` is a plain C struct for which all-zero bytes
        // are a valid (empty) value; every field used is set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: `action.sa_mask` is a valid, writable sigset_t.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is fully initialised and its handler only does
        // an atomic store, which is async-signal-safe; a null old action
        // pointer is allowed.
        if unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) } != 0 {
            return Err(Error::last_os(format!(
                "install a handler for {}",
                signal_name(sig).unwrap_or("a termination signal")
            )));
        }
    }
    Ok(())
}

/// The termination signal this process received since
/// [`catch_termination_signals`], if any.
pub(crate) fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::Relaxed) {
        0 => None,
        sig => Some(sig),
    }
}

/// The conventional name of signal `sig` (`SIGKILL` for 9), if it is a
/// common one.
pub fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(signal_name(9), Some("SIGKILL"));
        assert_eq!(signal_name(15), Some("SIGTERM"));
        assert_eq!(signal_name(11), Some("SIGSEGV"));
        assert_eq!(signal_name(0), None);
    }
}
