//! What a rank shows when it dies or hangs: a backtrace with its rank's
//! prefix (`RGEX_BACKTRACE=1`) before it dies by the same signal, the
//! line a frozen rank prints (`RGEX_FREEZE=1`, `RGEX_FREEZE_ON_ERROR=1`),
//! and, at the launcher's timeout, what each rank still running waits on.
//! Jobs of `job_diagnosis` (see its modes), one at a time.

mod common;
use common::{job, report_skip, run};
use std::time::Duration;

const DIAG: &str = env!("CARGO_BIN_EXE_job_diagnosis");

/// Run `j` alone (these jobs print much, and time out on purpose).
fn run_alone(j: &rgex::launch::Job) -> (rgex::launch::JobOutcome, String, String) {
    static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _alone = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    run(j)
}

/// Whether gdb is on `PATH` (as the ranks look it up: `RGEX_GDB` unset).
fn have_gdb() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|dirs| std::env::split_paths(&dirs).any(|d| d.join("gdb").is_file()))
}

/// The lines of rank `rank`'s own `[rank R] ` output, as forwarded by the
/// launcher (`[R] [rank R] ...`), without the two prefixes.
fn rank_lines(err: &str, rank: u32) -> Vec<&str> {
    let prefix = format!("[{rank}] [rank {rank}] ");
    err.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .collect()
}

/// The frames of rank `rank`'s backtrace (`#N ...` lines, gdb's or the
/// in-process unwinder's).
fn frames(err: &str, rank: u32) -> Vec<&str> {
    rank_lines(err, rank)
        .into_iter()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect()
}

/// A rank that segfaults in job_diagnosis mode `mode`, under
/// `RGEX_BACKTRACE=1` and `extra` settings: it still dies by SIGSEGV
/// (status 139), saying so. Returns the job's stderr.
fn segv_job(mode: &str, extra: &[(&str, &str)]) -> String {
    let mut j = job(2, DIAG, &[mode]).env("RGEX_BACKTRACE", "1");
    for (k, v) in extra {
        j = j.env(k, v);
    }
    let (outcome, _out, err) = run_alone(&j);
    assert_eq!(outcome.status, 139, "{:?}", outcome.failure);
    let failure = outcome.failure.unwrap_or_default();
    assert!(
        failure.contains("rank 1") && failure.contains("SIGSEGV"),
        "{failure}"
    );
    let mine = rank_lines(&err, 1);
    assert!(
        mine.iter()
            .any(|l| l.starts_with("caught SIGSEGV at address 0x")),
        "{err}"
    );
    assert!(mine.contains(&"dying by SIGSEGV"), "{err}");
    // Rank 0 printed no backtrace: it did not crash.
    assert!(frames(&err, 0).is_empty(), "{err}");
    err
}

/// [`segv_job`], whose backtrace must name the faulting function.
fn segv_backtrace(extra: &[(&str, &str)]) -> String {
    let err = segv_job("segv", extra);
    assert!(
        frames(&err, 1)
            .iter()
            .any(|l| l.contains("rgex_diag_segfaults_here")),
        "no frame names the faulting function: {err}"
    );
    err
}

#[test]
fn a_helper_threads_segfault_shows_every_thread_by_gdb() {
    if !have_gdb() {
        report_skip("the whole test: no gdb on PATH (every thread's backtrace is gdb's)");
        return;
    }
    let err = segv_job("thread-segv", &[]);
    let mine = rank_lines(&err, 1);
    assert!(
        mine.iter()
            .any(|l| l.starts_with("caught SIGSEGV") && l.contains(" in thread rgex-diag-helpe")),
        "{err}"
    );
    // Both threads, the faulting helper with its faulting function, the
    // main thread waiting to join it.
    let threads: Vec<&&str> = mine.iter().filter(|l| l.starts_with("Thread ")).collect();
    assert!(threads.len() >= 2, "{threads:?}: {err}");
    assert!(
        threads.iter().any(|l| l.contains("rgex-diag-helpe")),
        "{threads:?}"
    );
    let f = frames(&err, 1);
    assert!(
        f.iter().any(|l| l.contains("rgex_diag_segfaults_here")),
        "{err}"
    );
    assert!(f.iter().any(|l| l.contains("job_diagnosis::main")), "{err}");
}

#[test]
fn without_gdb_a_small_signal_stack_is_not_unwound_on() {
    // A Rust thread's alternate signal stack is a few KiB: the in-process
    // unwinding declines it and says why (or, should a Rust give its
    // threads a larger one, unwinds the helper), and the rank still dies
    // by SIGSEGV.
    let err = segv_job("thread-segv", &[("RGEX_GDB", "0")]);
    let mine = rank_lines(&err, 1);
    let declined = mine.iter().any(|l| {
        l.starts_with("this thread's signal stack holds ") && l.contains("too few to unwind on")
    });
    if !declined {
        report_skip(
            "the small-stack refusal: this Rust's thread signal stacks are large (unwound instead)",
        );
        assert!(
            frames(&err, 1)
                .iter()
                .any(|l| l.contains("rgex_diag_segfaults_here")),
            "neither declined nor unwound: {err}"
        );
    }
}

#[test]
fn a_segfaulting_rank_prints_a_backtrace_and_dies_by_sigsegv() {
    let err = segv_backtrace(&[]);
    let mine = rank_lines(&err, 1);
    if have_gdb() {
        assert!(
            mine.iter()
                .any(|l| l.starts_with("backtrace of every thread, by gdb (")),
            "{err}"
        );
        // gdb names each thread before its frames.
        assert!(mine.iter().any(|l| l.starts_with("Thread 1 ")), "{err}");
    } else {
        report_skip("gdb's backtrace: no gdb on PATH (the in-process one was checked)");
        assert!(
            mine.iter()
                .any(|l| l.starts_with("unwinding in the process (no gdb found")),
            "{err}"
        );
    }
}

#[test]
fn without_gdb_the_failing_thread_is_unwound_in_the_process() {
    let err = segv_backtrace(&[("RGEX_GDB", "0")]);
    let mine = rank_lines(&err, 1);
    assert!(
        mine.contains(&"unwinding in the process (RGEX_GDB=0)"),
        "{err}"
    );
    assert!(
        mine.iter()
            .any(|l| l.starts_with("backtrace of this thread only (")),
        "{err}"
    );
    // Symbolized (in a child process), with the source line.
    assert!(
        frames(&err, 1).iter().any(
            |l| l.contains("job_diagnosis::rgex_diag_segfaults_here at ")
                && l.contains("job_diagnosis.rs:")
        ),
        "{err}"
    );
}

#[test]
fn a_panicking_rank_prints_a_backtrace_with_its_rank() {
    let (outcome, _out, err) = run_alone(&job(2, DIAG, &["panic"]).env("RGEX_BACKTRACE", "1"));
    assert_eq!(outcome.status, 101, "{:?}", outcome.failure);
    let mine = rank_lines(&err, 1);
    assert!(
        mine.iter().any(|l| l.starts_with("panic in thread ")
            && l.contains("at tests/src/bin/job_diagnosis.rs:")),
        "{err}"
    );
    assert!(
        frames(&err, 1)
            .iter()
            .any(|l| l.contains("rgex_diag_panics_here")),
        "no frame of rank 1's backtrace names the panicking function: {err}"
    );
}

#[test]
fn a_frozen_rank_prints_how_to_attach_then_dies_as_it_would_have() {
    let (outcome, _out, err) = run_alone(
        &job(2, DIAG, &["abort"])
            .env("RGEX_FREEZE", "1")
            .env("RGEX_FREEZE_SECS", "1"),
    );
    assert_eq!(outcome.status, 134, "{:?}", outcome.failure);
    let mine = rank_lines(&err, 1);
    let frozen = mine
        .iter()
        .find(|l| l.starts_with("frozen: gdb -p "))
        .unwrap_or_else(|| panic!("no freeze line: {err}"));
    // The pid it names is rank 1's, as the launcher reports it.
    let pid: String = frozen["frozen: gdb -p ".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let failure = outcome.failure.unwrap_or_default();
    assert!(
        failure.contains(&format!("(pid {pid})")),
        "{failure} / {frozen}"
    );
    assert!(frozen.contains("waits 1 s"), "{frozen}");
    assert!(
        mine.iter()
            .any(|l| l.starts_with("the freeze ended after ")),
        "{err}"
    );
    // RGEX_FREEZE alone prints no backtrace.
    assert!(frames(&err, 1).is_empty(), "{err}");
}

#[test]
fn freeze_on_error_stops_where_rgex_reports_an_error_then_goes_on() {
    let (outcome, out, err) = run_alone(
        &job(2, DIAG, &["error"])
            .env("RGEX_FREEZE_ON_ERROR", "1")
            .env("RGEX_FREEZE_SECS", "1"),
    );
    assert_eq!(outcome.status, 3, "{:?}", outcome.failure);
    let error_at = err
        .find("ERROR rgex_tests::diagnosis: an error nobody is told of")
        .unwrap_or_else(|| panic!("{err}"));
    let frozen_at = err
        .find("[1] [rank 1] frozen: gdb -p ")
        .unwrap_or_else(|| panic!("{err}"));
    assert!(error_at < frozen_at, "{err}");
    assert!(out.contains("rank 1: went on after the error"), "{out}");
}

#[test]
fn at_the_timeout_each_rank_says_what_it_waits_on() {
    let (outcome, _out, err) = run_alone(
        &rgex::launch::Job::new(3, DIAG)
            .args(["stuck"])
            .timeout(Some(Duration::from_secs(5))),
    );
    assert_eq!(outcome.status, 124, "{:?}", outcome.failure);
    assert!(
        err.contains("the job timed out after 5 s with ranks 0, 1, 2 still running"),
        "{err}"
    );
    let waits = |rank: u32| -> Vec<String> {
        rank_lines(&err, rank)
            .into_iter()
            .filter(|l| l.starts_with("thread ") && l.contains(", blocked "))
            .map(str::to_string)
            .collect()
    };
    // Rank 0: its own poll loop, named by its backoff, with the peer.
    let w0 = waits(0);
    assert!(
        w0.iter().any(|l| l
            .contains(": the go AM from rank 1, peer rank 1 at tests/src/bin/job_diagnosis.rs:")),
        "{err}"
    );
    // Rank 1: the barrier, and the collective engine's wait inside it,
    // named by the collective.
    let w1 = waits(1);
    assert!(
        w1.iter().any(
            |l| l.contains(": Client::barrier: the world team's barrier, members 3 at ")
                && l.contains(" > barrier (a collective), sequence number ")
                && l.contains(", team 0 at endpoint/src/team/engine.rs:")
        ),
        "{err}"
    );
    // Rank 2: the memory wait, at the caller's line, with the offset.
    let w2 = waits(2);
    assert!(
        w2.iter().any(|l| l.contains(
            ": wait_until on a word of this rank's segment, segment offset 0 at tests/src/bin/job_diagnosis.rs:"
        )),
        "{err}"
    );
    // Each report ended, and before the launcher ended the job.
    let ending = err.find("rgex-run: ending the job").expect("the end");
    for rank in 0..3 {
        let end = format!("[{rank}] [rank {rank}] {}", rgex::blocked::REPORT_END);
        let at = err
            .find(&end)
            .unwrap_or_else(|| panic!("rank {rank}: {err}"));
        assert!(at < ending, "{err}");
    }
    assert!(!err.contains("did not finish its report"), "{err}");
}
