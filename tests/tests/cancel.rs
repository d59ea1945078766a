//! Cancelled handles return at once (see `src/bin/cancel_conformance.rs`),
//! on whichever conduit the matrix picks.

mod common;
use common::{job, run_ok};

const CANCEL: &str = env!("CARGO_BIN_EXE_cancel_conformance");

#[test]
fn dropping_handles_in_flight_does_not_wait() {
    let j = job(2, CANCEL, &[])
        .env("RGEX_RMA", "reference")
        .env("RGEX_VIS", "am");
    run_ok(&j, (1, 0));
}
