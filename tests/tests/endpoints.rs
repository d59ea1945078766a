//! Several endpoints per process (see `tests/src/bin/endpoint_conformance.rs`):
//! each with its own resources, driven by its own thread, AMs reaching the
//! same endpoint of the peer, RMA and atomics completing on it; AMs between
//! endpoints of different indices; an index
//! out of range and a destroyed endpoint refused naming rank and index.

mod common;
use common::{counts, job, run_ok};

const ENDPOINTS: &str = env!("CARGO_BIN_EXE_endpoint_conformance");

#[test]
fn one_rank_drives_three_endpoints_from_three_threads() {
    run_ok(&job(1, ENDPOINTS, &[]), counts::endpoints());
}

#[test]
fn three_ranks_drive_three_endpoints_each_from_three_threads() {
    run_ok(&job(3, ENDPOINTS, &[]), counts::endpoints());
}
