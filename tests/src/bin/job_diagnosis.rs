//! Programs for the tests of what a rank shows when it dies or hangs
//! (`RGEX_BACKTRACE`, `RGEX_FREEZE`, `rgex-run --timeout`'s report of the
//! waits), chosen by the first argument. Each fault happens in a function
//! of a distinctive name, never inlined, for the backtrace to show.
//!
//! - `segv`: after init, the last rank writes to a page it may not write
//!   (in [`rgex_diag_segfaults_here`]) while the others wait in a barrier;
//! - `thread-segv`: the same, but in a helper thread named
//!   `rgex-diag-helper` while the last rank's main thread waits for it
//!   (Rust gave the helper its own small alternate signal stack);
//! - `panic`: after init, the last rank panics (in
//!   [`rgex_diag_panics_here`]) while the others wait in a barrier;
//! - `abort`: after init, the last rank aborts (in
//!   [`rgex_diag_aborts_here`]) while the others wait in a barrier;
//! - `error`: after init, the last rank reports an error through rgex's
//!   diagnostics (a `tracing` ERROR event under an `rgex` target), then
//!   exits 3;
//! - `stuck` (3 ranks or more): a deadlock on purpose. Rank 0 waits for a
//!   `go` AM that rank 1 never sends, polling under a backoff that names
//!   the wait; rank 1 waits in a barrier the others never enter; rank 2
//!   waits until a word of its segment that nobody writes becomes 1. Only
//!   the launcher's timeout ends it (rank 0 gives up after
//!   [`HANG_LIMIT`], a bound, should it not).

use rgex::blocked::Waiting;
use rgex::{Backoff, Cmp, Rank};
use rgex_tests::HANG_LIMIT;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A genuine SIGSEGV ([`rgex_tests::segfault`]), in a function whose
/// name the backtrace must show.
#[inline(never)]
fn rgex_diag_segfaults_here() -> ! {
    rgex_tests::segfault()
}

#[inline(never)]
fn rgex_diag_panics_here(rank: u32) -> ! {
    panic!("rank {rank} panics on purpose");
}

#[inline(never)]
fn rgex_diag_aborts_here() -> ! {
    std::process::abort()
}

fn main() -> rgex::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_default();
    const MODES: [&str; 6] = ["segv", "thread-segv", "panic", "abort", "error", "stuck"];
    if !MODES.contains(&what.as_str()) {
        eprintln!("usage: job_diagnosis {} (got {what:?})", MODES.join("|"));
        std::process::exit(2);
    }
    let go = Arc::new(AtomicBool::new(false));
    let seen = go.clone();
    let (client, _go_id) = rgex::init_with(move |t| {
        t.register("go", move |_tok, _msg| {
            // Relaxed: a flag the polling thread reads, ordering nothing.
            seen.store(true, Ordering::Relaxed);
        })
    })?;
    let (me, n) = (client.rank().0, client.size());
    let last = me == n - 1;
    match what.as_str() {
        "segv" if last => {
            println!("rank {me}: writing to a page without access");
            rgex_diag_segfaults_here();
        }
        "thread-segv" if last => {
            println!("rank {me}: a helper thread writes to a page without access");
            let helper = std::thread::Builder::new()
                .name("rgex-diag-helper".into())
                .spawn(|| rgex_diag_segfaults_here())
                .expect("a helper thread starts");
            let _ = helper.join();
            unreachable!("the helper thread's fault ended the process");
        }
        "panic" if last => rgex_diag_panics_here(me),
        "abort" if last => {
            println!("rank {me}: aborting");
            rgex_diag_aborts_here();
        }
        "error" if last => {
            tracing::error!(
                target: "rgex_tests::diagnosis",
                rank = me,
                "an error nobody is told of, on purpose"
            );
            println!("rank {me}: went on after the error; exiting with status 3");
            std::process::exit(3);
        }
        "stuck" if n < 3 => {
            eprintln!("job_diagnosis stuck needs at least 3 ranks, not {n}");
            std::process::exit(2);
        }
        "stuck" if me == 0 => {
            let start = Instant::now();
            let mut backoff = Backoff::waiting(
                client.endpoint().polite(),
                Waiting::new("the go AM from rank 1").peer(Rank(1)),
            );
            while !go.load(Ordering::Relaxed) {
                if client.endpoint().poll()? == 0 {
                    backoff.snooze();
                } else {
                    backoff.reset();
                }
                if start.elapsed() > HANG_LIMIT {
                    eprintln!(
                        "rank 0: no go AM in {HANG_LIMIT:?}, and the launcher did not end the job"
                    );
                    std::process::exit(1);
                }
            }
            eprintln!("rank 0: a go AM came although nobody sends one: wrong");
            std::process::exit(1);
        }
        "stuck" if me == 2 => {
            let word: u64 = client.endpoint().wait_until(0, Cmp::Eq, 1)?;
            eprintln!("rank 2: the word became {word} although nobody writes it: wrong");
            std::process::exit(1);
        }
        _ => {}
    }
    // Waits for a rank that dies or never comes: only the launcher ends it.
    client.barrier()?;
    eprintln!("rank {me}: the barrier completed although a rank never came: wrong");
    std::process::exit(1)
}
