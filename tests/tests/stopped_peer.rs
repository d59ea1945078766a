//! A peer that stops answering (issue 38): rank 1 stops itself
//! (SIGSTOP) after a barrier, and every kind of wait rank 0 then makes on
//! it must end in an error naming rank 1 once the network's dead-peer
//! timeout has passed (2 s here: `RGEX_OFI_TIMEOUT`, `RGEX_IBV_TIMEOUT`),
//! not hang (the launcher's timeout would fail the test). The time each
//! wait took is printed, not checked. See `src/bin/job_stopped_peer.rs`.
//!
//! Only a network conduit has that timeout: on ofi and ibv with the
//! shared-memory bypass off, rank 1 is on this node but reached through
//! the network; with it on, the job is split over two emulated nodes
//! (`RGEX_HOST`), so rank 1 is remote. smp and scc see only node-local
//! peers, whose process is still there: they skip (see `WHY`).

mod common;
use common::{check_counts, conduit, job, run, shares_memory, skip_unless};
use rgex::launch::Job;
use std::time::Duration;

const STOPPED: &str = env!("CARGO_BIN_EXE_job_stopped_peer");

const WHY: &str = "only a network conduit (ofi, ibv) has a dead-peer timeout; smp and scc carry node-local peers only, and a stopped process is still there";

/// The dead-peer timeout the jobs run with, in seconds.
const TIMEOUT: &str = "2";

/// `job_stopped_peer kind` on two ranks, rank 1 reached through the
/// network, under the short timeout.
fn on_the_network(kind: &str) -> Job {
    let j: Job = if shares_memory() {
        // The bypass would carry a node-local rank 1: put it on another node.
        let script = format!("RGEX_HOST=node$RGEX_RANK exec '{STOPPED}' {kind}");
        job(2, "/bin/sh", &["-c", &script])
    } else {
        job(2, STOPPED, &[kind])
    };
    // A hang is a failure: well within the common bound, and far past
    // the timeout.
    j.timeout(Some(Duration::from_secs(90)))
        .env("RGEX_OFI_TIMEOUT", TIMEOUT)
        .env("RGEX_IBV_TIMEOUT", TIMEOUT)
}

/// Run `job_stopped_peer kind` on two ranks, rank 1 reached through the
/// network, with `env` set; require rank 0's one `ok:` line (the wait
/// failed naming rank 1) and the launcher's report of rank 1, which rank
/// 0 killed. Returns the job's output.
fn stops(kind: &str, env: &[(&str, &str)]) -> String {
    let mut j = on_the_network(kind);
    for (k, v) in env {
        j = j.env(k, v);
    }
    let (outcome, out, _err) = run(&j);
    // Rank 0 killed rank 1 once its wait failed: the job's status is that.
    assert_eq!(
        outcome.status,
        128 + 9,
        "{kind} {env:?}: status {} ({:?})",
        outcome.status,
        outcome.failure
    );
    let failure = outcome.failure.expect("a failure message");
    assert!(
        failure.contains("rank 1") && failure.contains("signal 9"),
        "{kind} {env:?}: {failure}"
    );
    check_counts(&out, (1, 0));
    let want = format!("ok: {kind} to stopped rank 1 failed after ");
    let line = out
        .lines()
        .find(|l| l.contains(&want))
        .unwrap_or_else(|| panic!("{kind} {env:?}: no {want:?} line in:\n{out}"));
    // Named as unreachable (or, asked of `peer_gone`, as gone), not some
    // other error that mentions it.
    assert!(
        line.contains("unreachable") || (kind == "am_reply" && line.contains("peer_gone: rank 1")),
        "{kind} {env:?}: {line}"
    );
    // Shown in the test's output (`--nocapture`): the detection time.
    eprintln!("stopped_peer {kind} {env:?}: {line}");
    out
}

/// True (with the skip reported) where the test does not apply: the
/// conduit has no dead-peer timeout.
fn skip() -> bool {
    skip_unless(matches!(conduit().as_str(), "ofi" | "ibv"), WHY)
}

#[test]
fn a_blocking_barrier_with_a_stopped_member_fails_naming_it() {
    if skip() {
        return;
    }
    stops("barrier", &[]);
}

#[test]
fn a_non_blocking_barrier_with_a_stopped_member_fails_naming_it() {
    if skip() {
        return;
    }
    stops("barrier_nb", &[]);
}

/// A client's own request, whose reply never comes: `peer_gone` says so.
#[test]
fn a_client_request_to_a_stopped_rank_is_answered_by_peer_gone() {
    if skip() {
        return;
    }
    stops("am_reply", &[]);
}

/// The reference RMA: a get is a request whose reply never comes.
#[test]
fn a_reference_get_from_a_stopped_rank_fails_naming_it() {
    if skip() {
        return;
    }
    stops("get_nb", &[("RGEX_RMA", "reference")]);
}

/// The network's own RDMA read, which the stopped rank never answers.
#[test]
fn a_native_get_from_a_stopped_rank_fails_naming_it() {
    if skip() {
        return;
    }
    let out = stops("get_nb", &[]);
    assert!(
        out.contains("rma path Native"),
        "not the network's RMA: {out}"
    );
}

/// The domain's own choice (offloaded to the network where it can be),
/// and the AM atomics.
#[test]
fn an_atomic_on_a_stopped_rank_fails_naming_it() {
    if skip() {
        return;
    }
    stops("atomic", &[]);
    stops("reference_atomic", &[]);
}

/// VIS by RMA per chunk and by active messages.
#[test]
fn a_vis_get_from_a_stopped_rank_fails_naming_it() {
    if skip() {
        return;
    }
    stops("vis_get", &[("RGEX_VIS", "rma")]);
    stops("vis_get", &[("RGEX_VIS", "am")]);
}

/// A rank that is alive but busy (computing, not polling) for three
/// timeouts while rank 0 waits on it, in a barrier or for a reply, is
/// waited for: its progress thread answers the liveness pings.
#[test]
fn a_busy_rank_that_answers_pings_is_waited_for() {
    if skip() {
        return;
    }
    for kind in ["busy_barrier", "busy_am_reply"] {
        let (outcome, out, _err) = run(&on_the_network(kind));
        assert_eq!(outcome.status, 0, "{kind}: {:?}", outcome.failure);
        check_counts(&out, (1, 0));
        let line = out
            .lines()
            .find(|l| l.contains(&format!("ok: {kind}: rank 1, busy for")))
            .unwrap_or_else(|| panic!("{kind}: no ok line in:\n{out}"));
        eprintln!("stopped_peer {kind}: {line}");
    }
}
