//! The progress thread (issue 28 point 6): `src/bin/job_progress_thread.rs`
//! has rank 0 sleep without polling while rank 1 sends it requests and
//! RMA, answered by rank 0's progress thread; then the thread stops and
//! the requests sent after it run in rank 0's own polls. An idle thread
//! sleeps on its conduit's wait object (mode `idle`), and no wakeup is
//! lost (the same jobs with the sleep's safety net out of reach).

mod common;
use common::{job, run, run_ok};

const PROGRAM: &str = env!("CARGO_BIN_EXE_job_progress_thread");

#[test]
fn started_by_the_api_answers_an_unpolled_rank_and_stops() {
    run_ok(&job(2, PROGRAM, &["api"]), (4, 0));
}

#[test]
fn started_by_the_environment_answers_an_unpolled_rank() {
    run_ok(
        &job(2, PROGRAM, &["env"]).env("RGEX_PROGRESS_THREAD", "1"),
        (4, 0),
    );
}

#[test]
fn collectives_stepped_by_two_threads_complete_once() {
    run_ok(&job(3, PROGRAM, &["collectives", "3000"]), (1, 0));
}

#[test]
fn a_bad_environment_value_is_refused_naming_the_variable() {
    let (outcome, _out, err) = run(&job(2, PROGRAM, &["env"]).env("RGEX_PROGRESS_THREAD", "yes"));
    assert_ne!(
        outcome.status, 0,
        "init must refuse RGEX_PROGRESS_THREAD=yes"
    );
    assert!(
        err.contains("RGEX_PROGRESS_THREAD=")
            && err.contains("yes")
            // (quoted as the error's Debug form quotes it)
            && (err.contains(r#"expected "0" or "1""#) || err.contains(r#"expected \"0\" or \"1\""#)),
        "the error names the variable and its values: {err}"
    );
}

/// Whether the conduit this test runs on (the matrix row's
/// `RGEX_CONDUIT`, smp when unset) gives its progress thread a wait
/// object: smp its doorbell; ibv its completion channel or the software
/// device's wake socket; ofi the CQ's `FI_WAIT_FD` on the provider that
/// has one here (tcp;ofi_rxm: shm and sockets give no fd, see
/// `rgex_ofi`'s CQ). scc has none.
fn has_wait_object() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    match var("RGEX_CONDUIT").as_str() {
        "" | "smp" | "ibv" => true,
        "ofi" => var("RGEX_OFI_PROVIDER").starts_with("tcp"),
        _ => false,
    }
}

/// A safety net longer than a job may run (`common::job`'s limit): a
/// wakeup lost by a conduit's wait object, or by the thread's stop,
/// leaves the job waiting until the launcher ends it.
pub const NO_SAFETY_NET: &str = "600000";

#[test]
fn no_wakeup_is_lost_with_no_safety_net() {
    run_ok(
        &job(2, PROGRAM, &["env"])
            .env("RGEX_PROGRESS_THREAD", "1")
            .env("RGEX_PROGRESS_IDLE_MS", NO_SAFETY_NET),
        (4, 0),
    );
    run_ok(
        &job(3, PROGRAM, &["collectives", "500"]).env("RGEX_PROGRESS_IDLE_MS", NO_SAFETY_NET),
        (1, 0),
    );
}

#[test]
fn a_bad_safety_net_is_refused_naming_the_variable() {
    let (outcome, _out, err) = run(&job(2, PROGRAM, &["env"])
        .env("RGEX_PROGRESS_THREAD", "1")
        .env("RGEX_PROGRESS_IDLE_MS", "0"));
    assert_ne!(
        outcome.status, 0,
        "init must refuse RGEX_PROGRESS_IDLE_MS=0"
    );
    assert!(
        err.contains("RGEX_PROGRESS_IDLE_MS=") && err.contains("at least 1"),
        "the error names the variable and its values: {err}"
    );
}

#[test]
fn an_idle_thread_sleeps_on_its_conduits_wait_object() {
    let wait = if has_wait_object() { "wait" } else { "any" };
    let out = run_ok(
        &job(2, PROGRAM, &["idle", wait]).env("RGEX_PROGRESS_THREAD", "1"),
        (1, 0),
    );
    // The figures (CPU time over the idle second), for the log.
    for line in out.lines().filter(|l| l.contains("figure:")) {
        eprintln!("{line}");
    }
}
