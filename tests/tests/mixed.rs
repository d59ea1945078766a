//! Jobs spanning two emulated nodes on ofi with the shared-memory bypass
//! on: the setup of a real cluster, where node-local peers are reached
//! through smp (mapped segments, smp's Medium limits, direct VIS copies)
//! and the others through the network, in one job. Ranks 0-1 and 2-3 name
//! different hosts (`RGEX_HOST`, set per rank by a shell around the
//! program), so each rank has one node-local peer and two remote ones.
//!
//! Every conformance program must pass here as it does on one node: the
//! limits, mechanisms and atomic implementations it meets are per peer.

mod common;
use common::{conduit, counts, job, run_ok, skip_unless};
use rgex::launch::Job;

const AM: &str = env!("CARGO_BIN_EXE_am_conformance");
const RMA: &str = env!("CARGO_BIN_EXE_rma_conformance");
const AD: &str = env!("CARGO_BIN_EXE_atomics_conformance");
const COLL: &str = env!("CARGO_BIN_EXE_coll_conformance");
const VIS: &str = env!("CARGO_BIN_EXE_vis_conformance");
const PROTOCOL: &str = env!("CARGO_BIN_EXE_protocol_conformance");
const ASYNC: &str = env!("CARGO_BIN_EXE_async_conformance");
const CANCEL: &str = env!("CARGO_BIN_EXE_cancel_conformance");
const FAULTS: &str = env!("CARGO_BIN_EXE_job_faults");
const LIFECYCLE: &str = env!("CARGO_BIN_EXE_job_lifecycle");
const PROGRESS: &str = env!("CARGO_BIN_EXE_job_progress_thread");
const SIGNAL: &str = env!("CARGO_BIN_EXE_signal_conformance");

const WHY: &str = "only a network conduit (ofi, ibv) with its shared-memory bypass on mixes node-local peers (smp) with remote ones (network) in one job";

/// True where the mixed setup exists: a network conduit (ofi, ibv) with
/// the bypass on (the default).
fn mixes() -> bool {
    matches!(conduit().as_str(), "ofi" | "ibv")
        && std::env::var("RGEX_SHM_BYPASS").as_deref() != Ok("0")
}

/// `n` ranks of `exe`, each on the emulated node that the shell
/// arithmetic `node` names from `RGEX_RANK` (`RGEX_HOST=node<that>`).
fn on_nodes(n: u32, node: &str, exe: &str, args: &[&str]) -> Job {
    let mut script = format!("RGEX_HOST=node$(({node})) exec '{exe}'");
    for a in args {
        script.push_str(&format!(" '{a}'"));
    }
    job(n, "/bin/sh", &["-c", &script])
}

/// Four ranks of `exe` on two emulated nodes of two ranks each.
fn two_nodes(exe: &str, args: &[&str]) -> Job {
    on_nodes(4, "RGEX_RANK / 2", exe, args)
}

#[test]
fn active_messages_two_nodes() {
    if skip_unless(mixes(), WHY) {
        return;
    }
    // Per-peer limits (64 KiB Mediums to the node-local peer, the
    // network's to the others) must be symmetric, and every negotiated
    // payload granted under them must arrive as sent.
    let out = run_ok(&two_nodes(AM, &[]), counts::am(4, true));
    // Rank 0's limits: its own node's (ranks 0 and 1) differ from the
    // network's (ranks 2 and 3), so the job really spans two nodes.
    let by_peer = listed(&out, "max Medium with no arguments, by peer: ");
    assert!(
        by_peer[0] == by_peer[1] && by_peer[2] == by_peer[3] && by_peer[1] != by_peer[2],
        "{by_peer:?}"
    );
}

/// Two ranks of `exe`, each on a node of its own: every peer is remote.
fn one_per_node(exe: &str, args: &[&str]) -> Job {
    on_nodes(2, "RGEX_RANK", exe, args)
}

/// Issue 38's checks across two nodes: reserved handlers and forged
/// replies (every public way refused at the sender), cancelled handles,
/// the progress task past a handler error and the async NBI rule, a
/// client's life (finalize, a refused clone), and the launcher blaming
/// the rank that left, not the survivor.
#[test]
fn reliability_two_nodes() {
    if skip_unless(mixes(), WHY) {
        return;
    }
    run_ok(
        &two_nodes(PROTOCOL, &[])
            .env("RGEX_RMA", "reference")
            .env("RGEX_ATOMICS", "reference"),
        (8, 0),
    );
    run_ok(
        &one_per_node(CANCEL, &[])
            .env("RGEX_RMA", "reference")
            .env("RGEX_VIS", "am"),
        (1, 0),
    );
    run_ok(&two_nodes(ASYNC, &["task", "500"]), (4, 0));
    run_ok(&one_per_node(LIFECYCLE, &["finalize_then_op"]), (1, 0));
    let (outcome, _, _) = common::run(&one_per_node(FAULTS, &["drop_then_exit3"]));
    let failure = outcome.failure.clone().unwrap_or_default();
    assert!(
        outcome.status == 3 && failure.contains("rank 1"),
        "drop_then_exit3 across nodes: status {} ({failure}): the survivor was blamed",
        outcome.status
    );
}

/// The list rank 0 printed after `tag` (up to the closing bracket).
fn listed<'a>(out: &'a str, tag: &str) -> Vec<&'a str> {
    let line = out
        .lines()
        .find(|l| l.starts_with("[0]") && l.contains(tag))
        .unwrap_or_else(|| panic!("no {tag:?} in:\n{out}"));
    let list = &line[line.find(tag).expect("found") + tag.len()..];
    let list = list.trim_start_matches('[');
    list[..list.find(']').expect("a closing bracket")]
        .split(", ")
        .collect()
}

#[test]
fn rma_two_nodes() {
    if skip_unless(mixes(), WHY) {
        return;
    }
    let out = run_ok(&two_nodes(RMA, &[]), counts::rma(4, false));
    // Mapped to its own node's ranks, another path to the others.
    let paths = listed(&out, "(by peer: ");
    assert!(
        paths[0] == "Mapped"
            && paths[1] == "Mapped"
            && paths[2] != "Mapped"
            && paths[3] != "Mapped",
        "{paths:?}"
    );
}

#[test]
fn atomics_two_nodes() {
    if skip_unless(mixes(), WHY) {
        return;
    }
    let out = run_ok(&two_nodes(AD, &["4", "2000"]), counts::atomics(4));
    // The world team spans both nodes, so no process maps every member's
    // segment: CPU atomics in shared memory cannot serve it.
    let line = out
        .lines()
        .find(|l| l.contains("atomic implementation per type"))
        .unwrap_or_else(|| panic!("no implementation line in:\n{out}"));
    assert!(!line.contains("Shared"), "{line}");
}

#[test]
fn collectives_two_nodes() {
    if skip_unless(mixes(), WHY) {
        return;
    }
    run_ok(&two_nodes(COLL, &[]), counts::coll(4));
}

#[test]
fn vis_two_nodes() {
    if skip_unless(mixes(), WHY) {
        return;
    }
    // Direct copies to the node-local peer, the network to the others.
    let out = run_ok(&two_nodes(VIS, &[]), counts::vis("auto"));
    assert!(out.contains("to 2 node-local peers"), "{out}");
}

/// Progress threads in a job that mixes node-local and remote peers: each
/// sleeps on smp's wake socket and the network's fd at once (the
/// bypass's mixed wait; with every peer remote, on the network's alone),
/// never parks where the network has a wait object (ibv; ofi on
/// tcp;ofi_rxm), and loses no wakeup: a rank whose main thread sleeps is
/// answered by its progress thread, with the sleep's safety net out of
/// the job's reach, from its node-local and its remote peers alike.
#[test]
fn progress_threads_two_nodes() {
    if skip_unless(mixes(), WHY) {
        return;
    }
    let provider = std::env::var("RGEX_OFI_PROVIDER").unwrap_or_default();
    let wait = conduit() == "ibv" || provider.starts_with("tcp");
    let no_safety_net = ("RGEX_PROGRESS_IDLE_MS", "600000");
    run_ok(
        &two_nodes(PROGRESS, &["idle", if wait { "wait" } else { "any" }])
            .env("RGEX_PROGRESS_THREAD", "1"),
        (1, 0),
    );
    run_ok(
        &two_nodes(PROGRESS, &["env"])
            .env("RGEX_PROGRESS_THREAD", "1")
            .env(no_safety_net.0, no_safety_net.1),
        (4, 0),
    );
    run_ok(
        &one_per_node(PROGRESS, &["env"])
            .env("RGEX_PROGRESS_THREAD", "1")
            .env(no_safety_net.0, no_safety_net.1),
        (4, 0),
    );
}

/// Put-with-signal into rank 0 from its node-local peer (a copy and a
/// release update through the mapped segment, ringing rank 0 through
/// the bypass's smp) and from the remote ones (the active-message
/// reference) in one flood, late writers and futures on a progress
/// thread that sleeps on smp's socket and the network's fd at once.
#[test]
fn signal_two_nodes() {
    if skip_unless(mixes(), WHY) {
        return;
    }
    let out = run_ok(&two_nodes(SIGNAL, &[]), counts::SIGNAL);
    assert!(
        out.contains("paths from rank 0: [Mapped, Mapped, Reference, Reference]"),
        "{out}"
    );
}

/// Client segments across two nodes: this rank's own by a copy, the
/// node-local peer's by cross-memory attach, the remote ones' by the
/// network's RMA (their registration with it), all in one job, each
/// checked as on one node.
#[test]
fn client_segments_two_nodes() {
    if skip_unless(mixes(), WHY) {
        return;
    }
    let out = run_ok(
        &two_nodes(env!("CARGO_BIN_EXE_segment_conformance"), &[]),
        (7, 0),
    );
    assert!(
        out.contains("rank 0: Local, rank 1: Cma, rank 2: Native, rank 3: Native"),
        "rank 0's paths into the client segments are not copy, CMA, RDMA, RDMA:\n{out}"
    );
}
