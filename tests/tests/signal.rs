//! Put-with-signal and waiting on memory (issue 40, items 3 and 4):
//! `src/bin/signal_conformance.rs` floods rank 0 with put-with-signals
//! checked byte for byte after each signal, waits for late writers
//! (asleep meanwhile), waits on arrays, tests, refuses bad words, awaits
//! futures woken by a progress thread; and a wait on a word nobody writes
//! ends with an error when its peer leaves.

mod common;
use common::{conduit, counts, job, report_skip, run_ok, shares_memory};

const SIGNAL: &str = env!("CARGO_BIN_EXE_signal_conformance");

/// The `main` scenario's checks (shared with the two-node test).
const MAIN: (usize, usize) = counts::SIGNAL;

#[test]
fn two_ranks() {
    run_ok(&job(2, SIGNAL, &[]), MAIN);
}

#[test]
fn three_ranks() {
    run_ok(&job(3, SIGNAL, &[]), MAIN);
}

/// The AM reference everywhere (smp's and the bypass's node-local peers
/// take the mapped path otherwise).
#[test]
fn reference_two_ranks() {
    let out = run_ok(&job(2, SIGNAL, &[]).env("RGEX_RMA", "reference"), MAIN);
    assert!(
        out.contains("paths from rank 0: [Reference, Reference]"),
        "{out}"
    );
}

fn dead(how: &str, mode: &str) {
    let out = run_ok(&job(2, SIGNAL, &["dead", how, mode]), (1, 0));
    assert!(out.contains("ended as rank 1 left"), "{out}");
}

#[test]
fn dead_peer_ends_a_blocking_wait() {
    dead("exit", "block");
}

#[test]
fn dead_peer_ends_a_future() {
    dead("exit", "future");
}

/// A peer that dies without a word: smp and scc see its process end; a
/// network without the bypass would only after its dead-peer timeout
/// (300 s), too long for the suite.
#[test]
fn silent_death_ends_a_wait() {
    if !(shares_memory() || conduit() == "scc") {
        report_skip(
            "the whole test: a silent death is seen only after the network's dead-peer \
             timeout here",
        );
        return;
    }
    dead("_exit", "block");
}
