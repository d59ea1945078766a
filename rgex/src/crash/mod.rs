//! When a rank dies: a backtrace of every thread, each line prefixed by
//! the rank, and a freeze for a debugger, before the rank dies as it
//! would have (`RGEX_BACKTRACE`, `RGEX_GDB`, `RGEX_FREEZE`,
//! `RGEX_FREEZE_ON_ERROR`, `RGEX_FREEZE_SECS`; GASNet's
//! `GASNET_BACKTRACE` and `GASNET_FREEZE`). [`init`](crate::init)
//! installs it as the settings say; nothing is installed when they are
//! off.
//!
//! - A rank killed by SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT runs a
//!   handler on an alternate signal stack (`fatal`); a panic runs a
//!   hook after the usual message (`panic`).
//! - The backtrace (`threads`) is gdb's (`gdb -batch -p PID -ex "thread
//!   apply all bt 256"`, every thread, its innermost 256 frames,
//!   symbolized from the binary's debug information), its output
//!   forwarded line by line with the prefix.
//!   Without gdb (`RGEX_GDB=0`, or none found in `PATH`) the failing
//!   thread alone is unwound in the process and symbolized in a child
//!   process; the other threads cannot be reached soundly from a signal
//!   handler (it would have to stop each, run code on it and unwind it),
//!   and the output says which was used.
//! - A freeze (`freeze`) prints `[rank R] frozen: gdb -p PID` and waits
//!   `RGEX_FREEZE_SECS` (or until gdb sets `rgex_thaw`), then goes on.
//! - Then the rank dies by the same signal: the handler restores the
//!   default disposition and raises it again, so a launcher reports
//!   128 + N (139 for SIGSEGV); a panic goes on unwinding as usual.
//!
//! Async-signal-safety, honestly: in the handler the process only makes
//! system calls that POSIX lists as async-signal-safe (`write`, `pipe2`,
//! `fork` as the raw `clone` system call, `execve`, `poll`, `read`,
//! `waitpid`, `kill`, `nanosleep`, `sigaction`, `raise`, `prctl`) on
//! memory set up at install time, with one exception: the unwinding
//! without gdb walks the stack with libgcc's `_Unwind_Backtrace`, which
//! is not on that list (it finds unwind tables through glibc's
//! `_dl_find_object`, lock-free since glibc 2.35, or else
//! `dl_iterate_phdr`, which takes the loader's lock: a crash inside the
//! dynamic loader could then hang it). The symbolization, which
//! allocates and reads files, never runs in the crashed process: a
//! child process does it on a copy of its memory, and if the child
//! hangs (the crash came while a lock it needs was held), it is killed
//! after a bound and the raw addresses are printed instead. gdb runs in
//! its own process. Every wait in the handler is bounded.
//!
//! Limits: a thread that overflows its stack reaches the handler only if
//! it has an alternate signal stack (Rust gives its threads one of about
//! 8 KiB; `install` gives the calling thread 256 KiB; threads created by
//! C libraries have none, and then the kernel kills the rank, which
//! rgex-run still reports as 139). Unwinding in the process needs 64 KiB
//! of signal stack and is skipped on smaller ones (gdb needs none).
//! Rust's own "has overflowed its stack" message is replaced by the
//! backtrace. A library loaded later that installs its own handlers
//! (libfabric's PSM providers; rgex-run sets `IPATH_NO_BACKTRACE`)
//! replaces these, and so does a panic hook the application sets after
//! init. Any panic prints its backtrace, a caught one too; an abort after
//! a panic's backtrace (`panic = "abort"`) does not print another.
//!
//! ```no_run
//! // A program that builds its Client by hand installs it itself:
//! use rgex::config::Environment;
//! let cfg = rgex::crash::CrashConfig::read(&Environment::capture())?;
//! rgex::crash::install(&cfg, rgex::launcher_rank()?)?;
//! # Ok::<(), rgex::Error>(())
//! ```

mod config;
mod fatal;
mod freeze;
mod panic;
mod threads;

pub use config::{CrashConfig, FREEZE_SECS_MAX};

use rgex_core::bootstrap::protocol::monotonic_ns;
use rgex_core::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// What the handlers need, made once by [`install`] before any of them
/// is installed, never changed after.
struct Armed {
    cfg: CrashConfig,
    /// gdb, ready to exec (`None`: unwind in the process).
    gdb: Option<threads::Gdb>,
    /// Why there is no gdb, for the output (`RGEX_GDB=0`, not found).
    no_gdb: &'static str,
    /// The stack the symbolizing child runs on.
    child_stack: threads::ChildStack,
}

static ARMED: OnceLock<Armed> = OnceLock::new();

/// Freeze at rgex's error diagnostics (`RGEX_FREEZE_ON_ERROR`).
static FREEZE_ON_ERROR: AtomicBool = AtomicBool::new(false);

/// A panic's backtrace was printed: an abort that follows it (`panic =
/// "abort"`, a panic while panicking) does not print another.
static PANIC_PRINTED: AtomicBool = AtomicBool::new(false);

/// The thread id of the thread handling a crash or panic now, 0 if none:
/// one at a time, so their lines do not mix and the buffers and the child
/// stack are used by one alone.
static HANDLING: AtomicI32 = AtomicI32::new(0);

/// Install the crash handlers as `cfg` says, for rank `rank` (the prefix
/// of their lines): nothing when `cfg` asks for neither backtraces nor
/// freezes. Once per process; a second call changes nothing.
///
/// This sets process-wide signal dispositions (SIGSEGV, SIGBUS, SIGFPE,
/// SIGILL, SIGABRT) and the panic hook (chaining the previous one).
///
/// ```no_run
/// let cfg = rgex::crash::CrashConfig { backtrace: true, ..Default::default() };
/// rgex::crash::install(&cfg, 0)?;
/// # Ok::<(), rgex::Error>(())
/// ```
pub fn install(cfg: &CrashConfig, rank: u32) -> Result<()> {
    crate::rank_line::set(rank);
    if !cfg.catches_crashes() || ARMED.get().is_some() {
        return Ok(());
    }
    let (gdb, no_gdb) = match &cfg.gdb {
        None => (None, "RGEX_GDB=0"),
        Some(name) => match threads::Gdb::find(name) {
            Some(g) => (Some(g), ""),
            None => (None, "no gdb found (RGEX_GDB names it)"),
        },
    };
    let armed = Armed {
        cfg: cfg.clone(),
        gdb,
        no_gdb,
        child_stack: threads::ChildStack::new()?,
    };
    if ARMED.set(armed).is_err() {
        return Ok(());
    }
    // Relaxed: read by the diagnostics subscriber, which needs nothing
    // else from this thread.
    FREEZE_ON_ERROR.store(cfg.freeze_on_error, Ordering::Relaxed);
    threads::warm_up();
    fatal::install()?;
    panic::install();
    Ok(())
}

/// Freeze the calling thread as `RGEX_FREEZE_ON_ERROR` asks, after rgex
/// reported an error no caller is told of; nothing when it is off.
pub(crate) fn freeze_on_error() {
    if !FREEZE_ON_ERROR.load(Ordering::Relaxed) {
        return;
    }
    let Some(armed) = ARMED.get() else { return };
    if let Turn::Mine = take_turn(armed) {
        freeze::freeze(
            armed.cfg.freeze_for,
            b"an rgex error (RGEX_FREEZE_ON_ERROR)",
        );
        end_turn();
    }
}

/// Whose turn it is to handle a crash.
enum Turn {
    /// This thread's: it handles it, and calls [`end_turn`] unless it dies.
    Mine,
    /// This thread is handling one already (it crashed in its handler):
    /// die now.
    Again,
    /// Another thread kept its turn past every bound: go on without.
    Never,
}

/// This thread's id (a system call: async-signal-safe).
fn tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Wait for the turn to handle a crash: as long as another thread's
/// handling may last (its gdb, its symbolizing child, its freeze), then
/// give up. Async-signal-safe (atomics and nanosleep).
fn take_turn(armed: &Armed) -> Turn {
    let me = tid();
    let bound = threads::GDB_LIMIT + threads::SYMBOLIZE_LIMIT + armed.cfg.freeze_for;
    let give_up = monotonic_ns() + (bound + Duration::from_secs(5)).as_nanos() as u64;
    loop {
        // Acquire: the previous holder's writes to the shared buffers
        // come before this thread's (it released them at `end_turn`).
        match HANDLING.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return Turn::Mine,
            Err(holder) if holder == me => return Turn::Again,
            Err(_) if monotonic_ns() >= give_up => return Turn::Never,
            Err(_) => nap(Duration::from_millis(20)),
        }
    }
}

/// Give the turn back (a panic that goes on unwinding, a thaw).
fn end_turn() {
    // Release: see `take_turn`.
    HANDLING.store(0, Ordering::Release);
}

/// Sleep `d` (nanosleep: async-signal-safe); an interruption cuts it short.
fn nap(d: Duration) {
    let t = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `t` is a valid timespec; a null remainder is allowed.
    unsafe { libc::nanosleep(&t, std::ptr::null_mut()) };
}

/// This thread's name as the kernel holds it, into `out`; its length.
/// Async-signal-safe (prctl is a system call).
fn thread_name(out: &mut [u8; 16]) -> usize {
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL included, into
    // `out`, which has 16.
    if unsafe { libc::prctl(libc::PR_GET_NAME, out.as_mut_ptr()) } != 0 {
        return 0;
    }
    out.iter().position(|&b| b == 0).unwrap_or(16)
}

/// The error of a system call that failed during install.
fn os_error(what: &str) -> Error {
    Error::last_os(format!("install the crash handlers: {what}"))
}
