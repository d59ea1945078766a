//! VIS (vector, indexed, strided) on the smp conduit, on 2 and 4 ranks, once
//! per mechanism (direct, RMA per chunk, AM pipeline) via `RGEX_VIS`, and
//! the RMA mechanism over the active-message RMA reference.

mod common;
use common::{counts, job, run_ok, shares_memory, skip_unless};

const VIS: &str = env!("CARGO_BIN_EXE_vis_conformance");
const NO_MAP: &str =
    "the direct mechanism needs the peer's segment mapped, and this conduit maps none";

fn run(ranks: u32, mechanism: &str) -> String {
    run_ok(
        &job(ranks, VIS, &[]).env("RGEX_VIS", mechanism),
        counts::vis(mechanism),
    )
}

#[test]
fn direct_two_ranks() {
    if skip_unless(shares_memory(), NO_MAP) {
        return;
    }
    assert!(run(2, "direct").contains("takes Direct"));
}

#[test]
fn direct_four_ranks() {
    if skip_unless(shares_memory(), NO_MAP) {
        return;
    }
    run(4, "direct");
}

#[test]
fn rma_two_ranks() {
    assert!(run(2, "rma").contains("takes Rma"));
}

#[test]
fn rma_four_ranks() {
    run(4, "rma");
}

#[test]
fn am_two_ranks() {
    let out = run(2, "am");
    assert!(out.contains("takes Am"));
    assert!(out.contains("FP-based AM pipeline (Fixed)"));
}

#[test]
fn am_four_ranks() {
    run(4, "am");
}

#[test]
fn auto_two_ranks() {
    let out = run(2, "auto");
    if shares_memory() {
        assert!(out.contains("takes Direct"), "{out}");
    } else {
        assert!(!out.contains("takes Direct"), "{out}");
    }
}

#[test]
fn rma_over_reference_rma_two_ranks() {
    run_ok(
        &job(2, VIS, &[])
            .env("RGEX_VIS", "rma")
            .env("RGEX_RMA", "reference"),
        counts::vis("rma"),
    );
}
