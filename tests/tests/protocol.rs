//! rgex's protocol handlers against a bad peer (see
//! `src/bin/protocol_conformance.rs`): reserved indices refused to client
//! sends, malformed and forged protocol messages reported and ignored,
//! 10,000 random ones per rank, and everything still right afterwards.
//! On 2 and 3 ranks (the third forges replies from a rank a get was not
//! sent to), on whichever conduit the matrix picks.

mod common;
use common::{job, run_ok};

const PROTOCOL: &str = env!("CARGO_BIN_EXE_protocol_conformance");
/// Passed and skipped: every check applies on every conduit.
const CHECKS: (usize, usize) = (8, 0);

fn protocol_job(n: u32) -> rgex::launch::Job {
    job(n, PROTOCOL, &[])
        .env("RGEX_RMA", "reference")
        .env("RGEX_ATOMICS", "reference")
}

#[test]
fn two_ranks() {
    let out = run_ok(&protocol_job(2), CHECKS);
    assert!(out.contains("ok: all protocol checks passed"), "{out}");
}

#[test]
fn three_ranks() {
    let out = run_ok(&protocol_job(3), CHECKS);
    assert!(
        out.contains("as replies from a rank the get was not sent to"),
        "{out}"
    );
}
