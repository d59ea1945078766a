//! Segments over client memory (see `tests/src/bin/segment_conformance.rs`):
//! a heap `Vec` and a static array registered collectively, reached by
//! put, get, atomics and VIS, bounds-checked, by the path each peer
//! takes on the row (a copy, cross-memory attach, RDMA, active messages),
//! and deregistered safely.

mod common;
use common::{job, run_ok, shares_memory, skip_unless};

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

/// Where the kernel refuses cross-memory attach (here by the fault
/// switch, as Yama's `ptrace_scope` 2 would), node-local peers' client
/// segments take active messages: the paths say so, a put after the
/// target closed is refused as by the reference, and each rank says why
/// once.
#[test]
fn three_ranks_fall_back_to_active_messages_where_cma_is_refused() {
    if skip_unless(
        shares_memory(),
        "no node-local peer's segment is mapped: no cross-memory attach to refuse",
    ) {
        return;
    }
    let j = job(3, SEGMENTS, &[]).env("RGEX_FAULT_CMA_REFUSED", "1");
    let (outcome, out, err) = common::run(&j);
    assert_eq!(outcome.status, 0, "job failed: {:?}", outcome.failure);
    common::check_counts(&out, (7, 0));
    assert!(
        !out.contains("Cma"),
        "a path is still cross-memory attach:\n{out}"
    );
    assert!(
        out.contains("fails at its initiator, naming both"),
        "the late put did not take active messages:\n{out}"
    );
    assert!(
        err.contains("take active messages, not cross-memory attach")
            && err.contains("RGEX_FAULT_CMA_REFUSED"),
        "no rank said why its node-local peers take active messages:\n{err}"
    );
}
