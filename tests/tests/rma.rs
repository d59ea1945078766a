//! RMA on the smp conduit, on the mapped path and (forced) on the
//! active-message reference path, on 1, 2 and 4 ranks; and several threads
//! per rank mixing RMA and AMs.

mod common;
use common::{conduit, job, run_ok, skip_unless};

const RMA: &str = env!("CARGO_BIN_EXE_rma_conformance");
const THREADS: &str = env!("CARGO_BIN_EXE_threads");
const CHECKS: usize = 9;

#[test]
fn mapped_one_rank() {
    // No IMMEDIATE check without a second rank to stall.
    run_ok(&job(1, RMA, &[]), CHECKS - 1);
}

#[test]
fn mapped_two_ranks() {
    run_ok(&job(2, RMA, &[]), CHECKS);
}

#[test]
fn mapped_four_ranks() {
    run_ok(&job(4, RMA, &[]), CHECKS);
}

#[test]
fn reference_two_ranks() {
    if scc_reference_defect() {
        return;
    }
    let out = run_ok(&job(2, RMA, &[]).env("RGEX_RMA", "reference"), CHECKS);
    assert!(out.contains("Reference"));
}

/// Open defect (issue 7's note): on scc, rma_conformance with the AM
/// reference RMA hung in 2 of 6 CI runs (2 and 4 ranks) inside its
/// IMMEDIATE check; reproduce with RGEX_CONDUIT=scc RGEX_SCC_CHECK=1
/// RGEX_RMA=reference rgex-run -n 2 rma_conformance. Skipped there, with
/// the reason printed, until fixed.
fn scc_reference_defect() -> bool {
    skip_unless(
        conduit() != "scc",
        "rma_conformance over the AM-reference RMA hangs intermittently on scc (open, issue 7)",
    )
}

#[test]
fn reference_four_ranks() {
    if scc_reference_defect() {
        return;
    }
    run_ok(&job(4, RMA, &[]).env("RGEX_RMA", "reference"), CHECKS);
}

#[test]
fn four_threads_per_rank_two_ranks() {
    run_ok(&job(2, THREADS, &["4", "300"]), 1);
}

#[test]
fn four_threads_per_rank_reference_path() {
    run_ok(
        &job(2, THREADS, &["4", "100"]).env("RGEX_RMA", "reference"),
        1,
    );
}
