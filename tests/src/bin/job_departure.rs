//! A rank leaves the job early (exits with status 0) while rank 0 still
//! works with it; every operation rank 0 then makes to it must fail with
//! an error naming it, and none may hang. Two ranks; the first argument
//! picks what rank 0 does:
//!
//! - `flood`: rank 0 floods rank 1 with AM requests; rank 1 leaves after
//!   it has handled some of them, with more queued behind (defect 4 of
//!   issue 25: on smp the flood spun on the departed rank's full queue);
//! - `vis_put`, `vis_get`, `atomic`, `nbi_put`: rank 1 leaves at once;
//!   rank 0 waits until its process is gone, then makes one operation of
//!   that kind to it (a VIS put, a VIS get, an atomic fetch-add, an NBI put
//!   and its sync). That one operation is the first to meet the departed
//!   rank, so on a network it is injected and fails at completion (defect
//!   5: those failures were reported as success);
//! - `barrier`: as the four above, with a barrier of the world team;
//! - the handle kinds, each an operation started and then its handle's
//!   `wait()` (issue 28: every wait reports failure): `put_nb` (its
//!   `Event`), `put_defer` (a put's local-completion `Held`, then its
//!   remote-completion `Event`), `get_nb` (a get's `Held`), `atomic_nb`
//!   (an `AtomicEvent`), `atomic_nbi` (the domain's `nbi_wait`), `get_nbi`
//!   (`Endpoint::nbi_wait`), `region` (an access region's `Event`),
//!   `vis_put_nb` (a VIS put's remote-completion `Event`), `vis_put_defer`,
//!   `vis_get_nb` (a `VisGet`) and `barrier_nb` (a non-blocking barrier's
//!   `Event`). The error line says where the failure came: `start:` (the
//!   operation was refused) or `wait:` (its handle's wait reported it);
//!   with the `pending_` prefix the start must succeed, so the wait is
//!   what has to report;
//! - `pending_vis_get`, `pending_atomic`, `pending_barrier`: rank 0 makes the operation at
//!   once, while rank 1, which does not poll, is still there; its request
//!   waits in rank 1's queue, rank 1 leaves without answering, and rank
//!   0's wait for the reply must end in an error (the endpoint asks the
//!   conduit about the peers of operations in flight when its waits
//!   stall). `pending_atomic` uses the AM (reference) atomics on every
//!   conduit: an offloaded atomic (scc's) needs nothing from its target
//!   and completes before the target leaves.
//!
//! The second argument says how rank 1 leaves: `exit` (the default:
//! `exit(0)`, which runs the process's exit handlers) or `_exit` (status
//! 0 without them, as a process that dies without a word: the smp conduit
//! must then find out from the process itself).
//!
//! A third rank may take part (`-n 3`): it leaves with rank 1. Run with
//! ranks 0 and 1 on one node and rank 2 on another (`RGEX_HOST`, on a
//! network conduit with the bypass on), an atomic domain is offloaded to
//! the network, whose posts to node-local rank 1 only smp can tell are
//! to a departed rank (issue 38, defect 5); rank 0 prints the domain's
//! implementation (`atomics: ...`).
//!
//! Rank 0 prints one `ok:` line with the error, then exits 0; a success,
//! an error that does not name rank 1, or a hang fails the job.

use rgex::{
    AtomicDomain, Client, Event, Flags, GlobalAddr, HandlerId, NbiCategory, Rank, Vector, Vis,
};
use rgex_tests::{conduit_banner, ok, wait_until, HANG_LIMIT};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Requests rank 1 handles before it leaves a flood.
const BEFORE_LEAVING: u64 = 1000;
/// Bound on the requests of a flood: far more than any queue holds.
const FLOOD_MAX: u64 = 100_000_000;
/// The kinds that start an operation and then wait on its handle.
const HANDLE_KINDS: [&str; 11] = [
    "put_nb",
    "put_defer",
    "get_nb",
    "atomic_nb",
    "atomic_nbi",
    "get_nbi",
    "region",
    "vis_put_nb",
    "vis_put_defer",
    "vis_get_nb",
    "barrier_nb",
];

fn main() -> rgex::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_default();
    let kinds = [
        "flood",
        "vis_put",
        "vis_get",
        "atomic",
        "nbi_put",
        "pending_vis_get",
        "pending_atomic",
        "barrier",
        "pending_barrier",
    ];
    let handles = HANDLE_KINDS
        .iter()
        .flat_map(|k| [k.to_string(), format!("pending_{k}")]);
    let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).chain(handles).collect();
    let how = std::env::args().nth(2).unwrap_or_else(|| "exit".into());
    if !kinds.contains(&what) || !["exit", "_exit"].contains(&how.as_str()) {
        eprintln!(
            "usage: job_departure {} [exit|_exit] (got {what:?} {how:?})",
            kinds.join("|")
        );
        std::process::exit(2);
    }
    let handled = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    let (client, sink) = rgex::init_with(|t| {
        t.register("departure.sink", move |_tok, _msg| {
            h.fetch_add(1, Ordering::Relaxed);
        })
    })?;
    assert!(
        (2..=3).contains(&client.size()),
        "job_departure runs on two or three ranks"
    );
    conduit_banner(&client);
    let me = client.rank();
    // Collective set-up, while both ranks are there.
    let mut atomics = AtomicDomain::<u64>::builder(rgex::OpSet::of(&[rgex::AtomicOp::Fadd]));
    if what.starts_with("pending_atomic") {
        // An atomic that waits for its target is an AM request: an
        // offloaded one (scc) is done by this rank alone, before the
        // target leaves, and rightly succeeds.
        atomics = atomics.force_reference(true);
    }
    let atomics = atomics
        .build(client.endpoint(), client.world())
        .map_err(|e| rgex::Error::Failed(format!("atomic domain: {e}")))?;
    if me == Rank(0) {
        println!("atomics: {:?}", atomics.implementation());
    }
    let vis = Vis::new(client.endpoint())?;
    let pids = client
        .endpoint()
        .conduit()
        .bootstrap()
        .allgather(&u64::from(std::process::id()).to_le_bytes())?;
    let pid = u64::from_le_bytes(pids[1][..8].try_into().expect("8 bytes"));
    client.barrier()?;
    if what.starts_with("pending_") {
        // Out of band (no AM is delivered while in it): rank 1 has left
        // the barrier above, and stopped polling, before rank 0 sends its
        // request. Otherwise the request could reach rank 1 while it still
        // polls in that barrier, be answered, and rightly succeed.
        client.endpoint().conduit().bootstrap().barrier()?;
    }
    if me != Rank(0) {
        if what == "flood" && me == Rank(1) {
            wait_until(&client, "the first requests of the flood", || {
                handled.load(Ordering::Relaxed) >= BEFORE_LEAVING
            });
        }
        if what.starts_with("pending_") {
            // Not polling: rank 0's request stays unanswered in the queue.
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        rgex_tests::leave_job(&how);
    }
    let gone = Rank(1);
    let result = match what.as_str() {
        "flood" => flood(&client, sink, gone),
        pending if pending.starts_with("pending_") => {
            let kind = &pending["pending_".len()..];
            one_op(&client, &vis, &atomics, gone, kind)
        }
        other => {
            wait_for_exit(&client, pid);
            one_op(&client, &vis, &atomics, gone, other)
        }
    };
    match result {
        Ok(()) => {
            eprintln!("rank 0: {what} to departed rank 1 reported success: wrong");
            std::process::exit(1);
        }
        Err(e) if e.contains("rank 1") => {
            ok(&client, &format!("{what} to departed rank 1 failed: {e}"));
            Ok(())
        }
        Err(e) => {
            eprintln!("rank 0: {what} to departed rank 1 failed without naming it: {e}");
            std::process::exit(1);
        }
    }
}

/// Send requests to `to` until one is refused (its error) or the bound
/// is reached (`Ok`: a wrong outcome).
fn flood(client: &Client, sink: HandlerId, to: Rank) -> Result<(), String> {
    for i in 0..FLOOD_MAX {
        client
            .endpoint()
            .request_short(to, sink, &[i as u32], Flags::empty())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One operation of kind `what` to `to`, with its completion waited for.
fn one_op(
    client: &Client,
    vis: &Vis,
    atomics: &AtomicDomain<u64>,
    to: Rank,
    what: &str,
) -> Result<(), String> {
    let ep = client.endpoint();
    let frags = [(0u64, 256u64), (4096, 256)];
    let meta = Vector {
        peer: &frags,
        local: &[(0, 512)],
    };
    if HANDLE_KINDS.contains(&what) {
        return handle_op(client, vis, atomics, to, what);
    }
    let r = match what {
        "vis_put" => vis.put(to, meta, &[7u8; 512], Flags::empty()),
        "vis_get" => vis.get(to, meta, &mut [0u8; 512], Flags::empty()),
        "atomic" => atomics
            .fetch_add(GlobalAddr::new(to, 8192), 1, rgex::AtomicFlags::empty())
            .map(drop),
        "barrier" => client.barrier(),
        "nbi_put" => ep
            .put_nbi(GlobalAddr::new(to, 0), &[9u8; 4096], Flags::empty())
            .and_then(|()| ep.nbi_wait(NbiCategory::Put)),
        _ => unreachable!("checked in main"),
    };
    r.map_err(|e| e.to_string())
}

/// Start one operation of handle kind `what` to `to` (an error is
/// `start: ...`), then wait on its handle (an error is `wait: ...`).
fn handle_op(
    client: &Client,
    vis: &Vis,
    atomics: &AtomicDomain<u64>,
    to: Rank,
    what: &str,
) -> Result<(), String> {
    let ep = client.endpoint();
    let f = Flags::empty();
    let at = GlobalAddr::new(to, 0);
    let frags = [(0u64, 256u64), (4096, 256)];
    let meta = Vector {
        peer: &frags,
        local: &[(0, 512)],
    };
    let start = |e: rgex::Error| format!("start: {e}");
    let wait = |e: rgex::Error| format!("wait: {e}");
    match what {
        "put_nb" => fin(
            client,
            ep.put_nb(at, &[1u8; 64], f).map_err(start)?,
            Event::wait,
        )
        .map_err(wait),
        "put_defer" => {
            let p = ep
                .put_nb_defer(at, vec![2u8; 64], f)
                .map_err(|e| start(e.error))?;
            let lc = fin(client, p.lc, rgex::rma::Held::wait)
                .map_err(wait)
                .map(drop);
            lc.and(fin(client, p.rc, Event::wait).map_err(wait))
        }
        "get_nb" => fin(
            client,
            ep.get_nb(vec![0u8; 64], at, f)
                .map_err(|e| start(e.error))?,
            rgex::rma::Held::wait,
        )
        .map_err(wait)
        .map(drop),
        "atomic_nb" => fin(
            client,
            atomics
                .op_nb(
                    GlobalAddr::new(to, 8192),
                    rgex::AtomicOp::Fadd,
                    1,
                    0,
                    rgex::AtomicFlags::empty(),
                )
                .map_err(start)?,
            rgex::AtomicEvent::wait,
        )
        .map_err(wait)
        .map(drop),
        "atomic_nbi" => {
            atomics
                .op_nbi(
                    GlobalAddr::new(to, 8192),
                    rgex::AtomicOp::Fadd,
                    1,
                    0,
                    rgex::AtomicFlags::empty(),
                )
                .map_err(start)?;
            atomics.nbi_wait().map_err(wait)
        }
        "get_nbi" => {
            let mut dst = [0u8; 64];
            // SAFETY: `dst` outlives the sync below, and nothing touches it
            // until then.
            unsafe { ep.get_nbi(dst.as_mut_ptr(), dst.len(), at, f) }.map_err(start)?;
            ep.nbi_wait(NbiCategory::Get).map_err(wait)
        }
        "region" => {
            ep.nbi_begin_region().map_err(start)?;
            let put = ep.put_nbi(at, &[3u8; 64], f);
            let ev = ep.nbi_end_region().map_err(start)?;
            put.map_err(start)?;
            fin(client, ev, Event::wait).map_err(wait)
        }
        "vis_put_nb" => fin(
            client,
            vis.put_nb(to, meta, &[4u8; 512], f).map_err(start)?.rc,
            Event::wait,
        )
        .map_err(wait),
        "vis_put_defer" => {
            let p = vis
                .put_nb_defer(to, meta, vec![5u8; 512], f)
                .map_err(start)?;
            let lc = fin(client, p.lc, rgex::rma::Held::wait)
                .map_err(wait)
                .map(drop);
            lc.and(fin(client, p.rc, Event::wait).map_err(wait))
        }
        "vis_get_nb" => fin(
            client,
            vis.get_nb(to, meta, vec![0u8; 512], f).map_err(start)?,
            rgex::VisGet::wait,
        )
        .map_err(wait)
        .map(drop),
        "barrier_nb" => fin(
            client,
            client.world().barrier_nb().map_err(start)?,
            Event::wait,
        )
        .map_err(wait),
        _ => unreachable!("checked in main"),
    }
}

/// Finish handle `h`: with its `wait`, or, when the third argument is
/// `await`, by awaiting it on the tests' executor while this thread polls
/// the client (a dead peer must surface from `.await` too).
fn fin<T, H: std::future::Future<Output = rgex::Result<T>>>(
    client: &Client,
    h: H,
    wait: impl FnOnce(H) -> rgex::Result<T>,
) -> rgex::Result<T> {
    if std::env::args().nth(3).as_deref() == Some("await") {
        rgex_tests::executor::block_on("an awaited handle", h, || {
            let _ = client.endpoint().poll();
            true
        })
    } else {
        wait(h)
    }
}

/// Poll until process `pid` has exited (gone, or a zombie not yet reaped).
fn wait_for_exit(client: &Client, pid: u64) {
    let start = Instant::now();
    let exited = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    };
    while !exited() {
        let _ = client.endpoint().poll();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(
            start.elapsed() < HANG_LIMIT,
            "rank 0: rank 1 (process {pid}) has not exited after {HANG_LIMIT:?}"
        );
    }
}
