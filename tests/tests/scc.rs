//! The scc conduit's one-sided epochs across processes, with the
//! stale-read checker on: 2..8 ranks (oversubscribed here), skewed arrival,
//! repeated epochs, data verified; and a deliberate stale read that must
//! fail the job. A rank that leaves while another waits on it in an
//! epoch fails that wait, naming it.

mod common;
use common::{job, run, run_ok};

const EPOCHS: &str = env!("CARGO_BIN_EXE_scc_epoch_conformance");
const DEPARTURE: &str = env!("CARGO_BIN_EXE_scc_epoch_departure");

fn checked(n: u32, args: &[&str]) -> rgex::launch::Job {
    job(n, EPOCHS, args)
        .env("RGEX_SCC_CHECK", "1")
        .env("RGEX_SEGMENT_SIZE", "64K")
}

#[test]
fn epochs_two_ranks() {
    run_ok(&checked(2, &["50"]), (2, 0));
}

#[test]
fn epochs_five_ranks() {
    run_ok(&checked(5, &["30"]), (2, 0));
}

#[test]
fn epochs_eight_ranks() {
    run_ok(&checked(8, &["20"]), (2, 0));
}

#[test]
fn a_stale_read_fails_the_job() {
    let (outcome, _out, err) = run(&checked(2, &["1", "stale"]));
    assert_ne!(outcome.status, 0, "a stale read went unnoticed");
    assert!(
        err.contains("stale read") && err.contains("missing invalidate_mpbt on rank 1"),
        "the failure does not name the stale read: {err}"
    );
}

/// `scc_epoch_departure what how` on two ranks: rank 0 must report the
/// departure of rank 1 (PeerUnreachable naming it) and the job exit 0.
fn epoch_departs(what: &str, how: &str) {
    let j = job(2, DEPARTURE, &[what, how])
        .env("RGEX_SCC_CHECK", "1")
        .env("RGEX_SEGMENT_SIZE", "64K");
    let out = run_ok(&j, (1, 0));
    let want = format!("ok: {what} with departed rank 1 failed: ");
    let hits: Vec<&str> = out.lines().filter(|l| l.contains(&want)).collect();
    assert_eq!(hits.len(), 1, "{what} ({how}): expected one {want:?} line");
}

#[test]
fn an_access_to_a_departed_target_fails_naming_it() {
    epoch_departs("access", "exit");
    epoch_departs("access", "_exit");
}

#[test]
fn completing_towards_a_departed_target_fails_naming_it() {
    epoch_departs("complete", "exit");
    epoch_departs("complete", "_exit");
}

#[test]
fn waiting_for_a_departed_origin_fails_naming_it() {
    epoch_departs("wait", "exit");
    epoch_departs("wait", "_exit");
}
