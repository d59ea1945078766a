//! The handler of the signals that kill a rank (SIGSEGV, SIGBUS, SIGFPE,
//! SIGILL, SIGABRT): it says what happened, prints the backtrace, freezes
//! as asked, then lets the rank die by the same signal.

use super::{freeze, os_error, take_turn, threads, Turn, ARMED};
use crate::launch::signal_name;
use crate::rank_line;
use rgex_core::Result;
use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

/// The signals handled.
const FATAL: [c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// The alternate signal stack given to the installing thread (one that
/// overflows its own stack still reaches the handler).
const ALT_STACK: usize = 256 << 10;

/// Install the handler for every signal of [`FATAL`], on the alternate
/// stack, which the calling thread gets if its own is smaller.
pub(super) fn install() -> Result<()> {
    alt_stack()?;
    for sig in FATAL {
        // SAFETY: all-zero bytes are a valid sigaction; every field used
        // is set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_fatal as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void)
            as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: `sa_mask` is a valid sigset_t.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is initialised, its handler is async-signal-safe
        // as the module docs say, and a null old action is allowed.
        if unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) } != 0 {
            return Err(os_error(signal_name(sig).unwrap_or("a fatal signal")));
        }
    }
    Ok(())
}

/// Give the calling thread an alternate signal stack of [`ALT_STACK`]
/// bytes unless it has one at least that large.
fn alt_stack() -> Result<()> {
    // SAFETY: a zeroed stack_t is valid; sigaltstack only writes it.
    let mut cur: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: a null new stack only queries.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut cur) };
    if cur.ss_flags & libc::SS_DISABLE == 0 && cur.ss_size >= ALT_STACK {
        return Ok(());
    }
    // SAFETY: an anonymous private mapping has no preconditions; checked.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ALT_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(os_error("map an alternate signal stack"));
    }
    let stack = libc::stack_t {
        ss_sp: base,
        ss_flags: 0,
        ss_size: ALT_STACK,
    };
    // SAFETY: `stack` describes the mapping just made, which stays mapped
    // for the process's life (the thread's previous stack, if it had one,
    // stays mapped by whoever made it).
    if unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) } != 0 {
        return Err(os_error("set an alternate signal stack"));
    }
    Ok(())
}

/// The handler (see the [module docs](super) for what it may call).
extern "C" fn on_fatal(sig: c_int, info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    if let Some(armed) = ARMED.get() {
        match take_turn(armed) {
            Turn::Mine => {
                let mut line = rank_line::stderr();
                let mut name = [0u8; 16];
                let len = super::thread_name(&mut name);
                line.put(b"caught ")
                    .put(signal_name(sig).unwrap_or("a fatal signal").as_bytes());
                if matches!(sig, libc::SIGSEGV | libc::SIGBUS) && !info.is_null() {
                    // SAFETY: the kernel passes a valid siginfo (SA_SIGINFO);
                    // for these signals it holds the faulting address.
                    let addr = unsafe { (*info).si_addr() } as u64;
                    line.put(b" at address ").hex(addr);
                }
                line.put(b" in thread ")
                    .put(&name[..len])
                    .put(b" (tid ")
                    .num(super::tid() as u64)
                    .put(b")");
                line.end();
                if armed.cfg.backtrace
                    && sig == libc::SIGABRT
                    && super::PANIC_PRINTED.load(Ordering::Relaxed)
                {
                    line.put(b"(after a panic: its backtrace is above)");
                    line.end();
                } else if armed.cfg.backtrace {
                    // SAFETY: this thread holds the turn.
                    unsafe { threads::print(armed, &mut line) };
                }
                if armed.cfg.freeze {
                    freeze::freeze(
                        armed.cfg.freeze_for,
                        signal_name(sig).unwrap_or("a fatal signal").as_bytes(),
                    );
                }
                line.put(b"dying by ")
                    .put(signal_name(sig).unwrap_or("the signal").as_bytes());
                line.end();
                // The turn is kept: the process dies, and any other thread
                // that crashed meanwhile dies with it.
            }
            // A crash in this handler, or another thread's handling that
            // outlived every bound: die without more.
            Turn::Again | Turn::Never => {}
        }
    }
    die(sig);
}

/// Let the process die by `sig`: restore its default action and raise it
/// again. It is blocked while its handler runs, so it is delivered when
/// the handler returns (a fault's instruction would raise it again
/// anyway). Async-signal-safe (sigaction, raise).
fn die(sig: c_int) {
    // SAFETY: all-zero bytes are a valid sigaction; SIG_DFL is 0.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = libc::SIG_DFL;
    // SAFETY: `action` is valid, the old action may be null; raise has no
    // memory preconditions.
    unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, std::ptr::null_mut());
        libc::raise(sig);
    }
}
