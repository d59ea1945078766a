//! RMA on the smp conduit, on the mapped path and (forced) on the
//! active-message reference path, on 1, 2 and 4 ranks; and several threads
//! per rank mixing RMA and AMs; and ranks with segments of different sizes.

mod common;
use common::{counts, job, run_ok};

const RMA: &str = env!("CARGO_BIN_EXE_rma_conformance");
const THREADS: &str = env!("CARGO_BIN_EXE_threads");

#[test]
fn mapped_one_rank() {
    run_ok(&job(1, RMA, &[]), counts::rma(1, false));
}

#[test]
fn mapped_two_ranks() {
    run_ok(&job(2, RMA, &[]), counts::rma(2, false));
}

#[test]
fn mapped_four_ranks() {
    run_ok(&job(4, RMA, &[]), counts::rma(4, false));
}

#[test]
fn reference_two_ranks() {
    let out = run_ok(
        &job(2, RMA, &[]).env("RGEX_RMA", "reference"),
        counts::rma(2, true),
    );
    assert!(out.contains("Reference"));
}

#[test]
fn reference_four_ranks() {
    run_ok(
        &job(4, RMA, &[]).env("RGEX_RMA", "reference"),
        counts::rma(4, true),
    );
}

#[test]
fn four_threads_per_rank_two_ranks() {
    run_ok(&job(2, THREADS, &["4", "300"]), (1, 0));
}

#[test]
fn four_threads_per_rank_reference_path() {
    run_ok(
        &job(2, THREADS, &["4", "100"]).env("RGEX_RMA", "reference"),
        (1, 0),
    );
}

/// Ranks with segments of different sizes (rank 1's is 8 MiB, the others'
/// the default, set per rank by a shell around the program): every rank
/// knows each peer's own length, and range checks use the peer's.
#[test]
fn unequal_segments_three_ranks() {
    let wrapped =
        format!("if [ \"$RGEX_RANK\" = 1 ]; then export RGEX_SEGMENT_SIZE=8M; fi; exec '{RMA}'");
    // The others' size is set too, so a size in the caller's environment
    // does not change what is expected.
    let out = run_ok(
        &job(3, "/bin/sh", &["-c", &wrapped]).env("RGEX_SEGMENT_SIZE", "32M"),
        counts::rma(3, false),
    );
    assert!(
        out.contains("segment lengths by rank: [33554432, 8388608, 33554432]"),
        "{out}"
    );
}
