//! The scc conduit's one-sided epochs across processes, with the
//! stale-read checker on: 2..8 ranks (oversubscribed here), skewed arrival,
//! repeated epochs, data verified; and a deliberate stale read that must
//! fail the job.

mod common;
use common::{job, run, run_ok};

const EPOCHS: &str = env!("CARGO_BIN_EXE_scc_epoch_conformance");

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
