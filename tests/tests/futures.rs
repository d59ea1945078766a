//! Futures (issue 28 point 1): `src/bin/async_conformance.rs` awaits
//! thousands of puts, gets, atomics and VIS gets from tasks of a
//! hand-written executor, with progress driven by the endpoint's progress
//! task or by a polling thread, on the default paths and on the
//! active-message ones (where the operations are in flight when awaited);
//! `src/bin/async_tokio.rs` does the same work as spawned tasks on tokio's
//! current-thread and multi-thread runtimes.

mod common;
use common::{job, run_ok};

const ASYNC: &str = env!("CARGO_BIN_EXE_async_conformance");

/// Four checks: the tasks' results, the awaited barrier_nb, the counters,
/// the async NBI rule.
const CHECKS: (usize, usize) = (4, 0);

fn reference(mode: &str) -> String {
    run_ok(
        &job(2, ASYNC, &[mode])
            .env("RGEX_RMA", "reference")
            .env("RGEX_ATOMICS", "reference")
            .env("RGEX_VIS", "am"),
        CHECKS,
    )
}

#[test]
fn progress_task_two_ranks() {
    run_ok(&job(2, ASYNC, &["task"]), CHECKS);
}

#[test]
fn progress_task_reference_paths_two_ranks() {
    reference("task");
}

#[test]
fn polling_thread_two_ranks() {
    run_ok(&job(2, ASYNC, &["thread"]), CHECKS);
}

#[test]
fn polling_thread_reference_paths_two_ranks() {
    // The program fails if no waker was called from the polling thread.
    reference("thread");
}

#[test]
fn progress_task_three_ranks() {
    run_ok(&job(3, ASYNC, &["task", "500"]), CHECKS);
}

const TOKIO: &str = env!("CARGO_BIN_EXE_async_tokio");

#[test]
fn tokio_current_thread_and_multi_thread_two_ranks() {
    // A second executor: tokio's two runtimes (tasks spawned; progress by
    // the progress task, then by rgex's progress thread), on the default
    // and the active-message paths.
    for mode in ["current", "multi"] {
        run_ok(&job(2, TOKIO, &[mode]), (1, 0));
        run_ok(
            &job(2, TOKIO, &[mode, "1000"])
                .env("RGEX_RMA", "reference")
                .env("RGEX_ATOMICS", "reference")
                .env("RGEX_VIS", "am"),
            (1, 0),
        );
    }
}
