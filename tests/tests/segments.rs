//! Segments over client memory (see `tests/src/bin/segment_conformance.rs`):
//! a heap `Vec` and a static array registered collectively, reached by
//! put, get, atomics and VIS, bounds-checked, by the path each peer
//! takes on the row (a copy, cross-memory attach, RDMA, active messages),
//! and deregistered safely.

mod common;
use common::{job, run_ok};

const SEGMENTS: &str = env!("CARGO_BIN_EXE_segment_conformance");

#[test]
fn one_rank_reaches_its_own_client_segments() {
    // The late-arrival check needs a second rank: skipped.
    run_ok(&job(1, SEGMENTS, &[]), (6, 1));
}

#[test]
fn three_ranks_reach_each_others_client_segments() {
    run_ok(&job(3, SEGMENTS, &[]), (7, 0));
}
