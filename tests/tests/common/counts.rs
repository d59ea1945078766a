//! How many checks each conformance program reports for a job of a given
//! shape on the conduit under test, as (passed, skipped): the counts
//! [`run_ok`](super::run_ok) requires exactly. A check a program cannot
//! make in a setup (it needs a second rank, a mapped segment, a job id)
//! is reported as skipped, never as passed.
#![allow(dead_code)] // each test file uses some

use super::shares_memory;

/// am_conformance on `n` ranks; `launched`: started by rgex-run (which
/// names the job, so the program can look for its leftovers in /dev/shm).
/// The limits, their least upper bounds and every category are checked
/// twice (again after the bad input), handler errors once, and a Long of
/// max_long bytes last. One rank skips the unmatched handler tables and
/// IMMEDIATE.
pub fn am(n: u32, launched: bool) -> (usize, usize) {
    split(16, usize::from(!launched) + if n == 1 { 2 } else { 0 })
}

/// rma_conformance on `n` ranks, on the reference path if `reference`.
/// One rank skips the three checks that need a peer (test and nbi_test
/// not polling, unwatched NBI puts, IMMEDIATE). Where a peer is on the
/// mapped path, every form is checked again with a second thread polling
/// (two checks: the forms, and the repeat); elsewhere that is one skip.
pub fn rma(n: u32, reference: bool) -> (usize, usize) {
    let alone = if n == 1 { 3 } else { 0 };
    if reference || !shares_memory() {
        split(14, alone + 1)
    } else {
        split(15, alone)
    }
}

/// atomics_conformance on `n` ranks: one rank skips the mixed
/// requirements (no other member to differ).
pub fn atomics(n: u32) -> (usize, usize) {
    split(8, usize::from(n == 1))
}

/// coll_conformance, on any number of ranks.
pub fn coll(n: u32) -> (usize, usize) {
    // The mismatch section (10 checks) needs two members: one skip alone.
    if n == 1 {
        split(13, 1)
    } else {
        split(22, 0)
    }
}

/// vis_conformance with `RGEX_VIS=mechanism` on two or more ranks: the
/// AM mechanism adds three checks of its FP-based pipeline (strided,
/// lists, and that both match); the large shared copies are skipped
/// unless peers are copied to directly (the direct or automatic
/// mechanism, with segments mapped).
pub fn vis(mechanism: &str) -> (usize, usize) {
    let direct = matches!(mechanism, "direct" | "auto") && shares_memory();
    let fixed_pipeline = if mechanism == "am" { 3 } else { 0 };
    split(12 + fixed_pipeline, usize::from(!direct))
}

/// `total` checks of which `skipped` are skipped.
fn split(total: usize, skipped: usize) -> (usize, usize) {
    (total - skipped, skipped)
}

/// endpoint_conformance: its three checks, or, on a conduit with one
/// endpoint per process (scc), two skips.
pub fn endpoints() -> (usize, usize) {
    match std::env::var("RGEX_CONDUIT").as_deref() {
        Ok("scc") => (0, 3),
        _ => (4, 0),
    }
}

/// signal_conformance's main scenario: the flood, three late writers,
/// two array checks, the errors, the deferred acknowledgements, the
/// futures (the same on every conduit, one node or two).
pub const SIGNAL: (usize, usize) = (9, 0);
