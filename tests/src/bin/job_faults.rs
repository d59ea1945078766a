//! Programs for the launcher's fault tests, chosen by the first argument:
//!
//! - `die`: after init, the last rank kills itself with SIGKILL while the
//!   others wait in a barrier that can never complete;
//! - `exit3`: after init, rank 1 (or 0 in a job of one) exits with status 3
//!   while the others wait in a barrier;
//! - `abort`: after init, the last rank aborts (SIGABRT);
//! - `segv`: after init, the last rank writes to a page it may not write
//!   (a real SIGSEGV, not a raised one);
//! - `thread-abort`: after init, a helper thread of the last rank aborts
//!   while its main thread waits for it;
//! - `abort-before-init`: the last rank aborts before `rgex::init` (while
//!   the others wait for it in theirs);
//! - `drop_then_exit3`: after init, rank 1 drops its `Client` and exits
//!   with status 3 a moment later, while the others flood it with AM
//!   requests until a send fails, then exit with status 9 (they fail
//!   because it had gone: the launcher must blame rank 1, status 3);
//! - `panic_handler`: after init, the others flood rank 1 with AM
//!   requests and exit with status 9 once a send fails; rank 1 polls, and
//!   its handler panics at the [`PANIC_AT`]th message, which unwinds out of
//!   its poll (or, should a handler's panic be reported as an error, its
//!   main thread panics with that error): rank 1 exits 101, Rust's status
//!   for a panic, and the launcher must blame it.
//!
//! Either way the launcher must end the job, name the rank (and the signal
//! that killed it), and leave nothing in /dev/shm; no rank may hang.

use rgex::{Flags, Rank};
use std::sync::atomic::{AtomicU64, Ordering};

/// The message at which rank 1's handler panics in `panic_handler`.
const PANIC_AT: u64 = 100;
/// The most sends a flooding rank makes (a bound: a send to a rank that
/// has gone fails long before).
const FLOOD_LIMIT: u64 = 1 << 26;

/// How a rank fails (see the module's list).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    Die,
    Exit3,
    Abort,
    Segv,
    ThreadAbort,
    AbortBeforeInit,
    DropThenExit3,
    PanicHandler,
}

impl Fault {
    /// The fault named `name` on the command line, `None` if unknown.
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "die" => Fault::Die,
            "exit3" => Fault::Exit3,
            "abort" => Fault::Abort,
            "segv" => Fault::Segv,
            "thread-abort" => Fault::ThreadAbort,
            "abort-before-init" => Fault::AbortBeforeInit,
            "drop_then_exit3" => Fault::DropThenExit3,
            "panic_handler" => Fault::PanicHandler,
            _ => return None,
        })
    }
}

/// The last rank of the job, read from the launcher's environment (before
/// init, where there is no client yet to ask).
fn last_rank_from_env() -> bool {
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
    matches!((var("RGEX_RANK"), var("RGEX_SIZE")), (Some(r), Some(n)) if r + 1 == n)
}

/// Send AM requests to rank 1 until one fails (it has gone), then exit
/// with status 9, as a survivor that finds its peer gone does.
fn flood(client: &rgex::Client, sink: rgex::HandlerId) -> ! {
    let me = client.rank().0;
    for sent in 0..FLOOD_LIMIT {
        if let Err(e) = client
            .endpoint()
            .request_short(Rank(1), sink, &[me], Flags::empty())
        {
            println!("rank {me}: send {sent} to rank 1 failed ({e}); exiting with status 9");
            std::process::exit(9);
        }
    }
    eprintln!("rank {me}: {FLOOD_LIMIT} sends to rank 1 and none failed: wrong");
    std::process::exit(1)
}

fn main() -> rgex::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_default();
    let Some(fault) = Fault::parse(&what) else {
        eprintln!(
            "usage: job_faults die|exit3|abort|segv|thread-abort|abort-before-init|drop_then_exit3|panic_handler (got {what:?})"
        );
        std::process::exit(2);
    };
    if fault == Fault::AbortBeforeInit && last_rank_from_env() {
        println!("aborting before init");
        std::process::abort();
    }
    let seen = AtomicU64::new(0);
    let (client, sink) = rgex::init_with(move |t| {
        t.register("sink", move |_tok, _msg| {
            // Relaxed: a count kept and read by the handler alone.
            let k = seen.fetch_add(1, Ordering::Relaxed) + 1;
            if fault == Fault::PanicHandler && k == PANIC_AT {
                panic!("the sink handler panics at message {k}, as asked");
            }
        })
    })?;
    let (me, n) = (client.rank().0, client.size());
    let last = me == n - 1;
    match fault {
        Fault::DropThenExit3 | Fault::PanicHandler if n < 2 => {
            eprintln!("job_faults {what} needs at least 2 ranks");
            std::process::exit(2);
        }
        Fault::DropThenExit3 if me == 1 => {
            drop(client);
            println!("rank 1: dropped its client; exiting with status 3");
            // A moment between the drop and the exit, in which the others
            // find rank 1 gone and fail first: the launcher must still
            // blame rank 1, which began to leave at the drop.
            std::thread::sleep(std::time::Duration::from_millis(300));
            std::process::exit(3);
        }
        Fault::PanicHandler if me == 1 => {
            // Bounded: the handler panics at message PANIC_AT, and the
            // others send until a send fails.
            for _ in 0..FLOOD_LIMIT {
                if let Err(e) = client.endpoint().poll() {
                    panic!("rank 1: poll failed: {e}");
                }
            }
            eprintln!("rank 1: the handler never reached message {PANIC_AT}: wrong");
            std::process::exit(1);
        }
        Fault::DropThenExit3 | Fault::PanicHandler => flood(&client, sink),
        Fault::Die if last => {
            println!("rank {me}: killing myself");
            // SAFETY: raise has no memory-safety preconditions.
            unsafe { libc::raise(libc::SIGKILL) };
            unreachable!("SIGKILL cannot be caught");
        }
        Fault::Exit3 if me == 1 % n => {
            println!("rank {me}: exiting with status 3");
            std::process::exit(3);
        }
        Fault::Abort if last => {
            println!("rank {me}: aborting");
            std::process::abort();
        }
        Fault::Segv if last => {
            println!("rank {me}: writing to a page without access");
            rgex_tests::segfault();
        }
        Fault::ThreadAbort if last => {
            println!("rank {me}: a helper thread aborts");
            // Main waits for the helper, which never returns: the abort
            // ends the process (before this rank could join the barrier).
            let helper = std::thread::spawn(|| std::process::abort());
            let _ = helper.join();
            unreachable!("the helper thread aborted the process");
        }
        _ => {}
    }
    // Waits for the rank that is gone: only the launcher can end this.
    client.barrier()?;
    eprintln!("rank {me}: the barrier completed although a rank left: wrong");
    std::process::exit(1)
}
