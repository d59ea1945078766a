//! A rank that stops answering (issue 38): rank 1 stops itself with
//! SIGSTOP right after a barrier, so its process is still there (smp
//! sees it alive, the network keeps its connections) but nothing of it
//! runs, not even its progress threads. Rank 0 then waits on it in one
//! way, and the wait must end in an error naming rank 1 once the
//! dead-peer timeout (`RGEX_OFI_TIMEOUT`, `RGEX_IBV_TIMEOUT`) has passed,
//! not hang. Two ranks; the argument picks the wait:
//!
//! - `barrier`: a blocking barrier of the world team;
//! - `barrier_nb`: a non-blocking barrier's `Event::wait`;
//! - `am_reply`: a client's own request/reply protocol: a request to
//!   rank 1, then polls until its reply handler ran, or until
//!   `peer_gone(1)` says rank 1 is gone (a client's AM reply has no
//!   handle: `peer_gone` is how a client asks);
//! - `get_nb`: an RMA get's handle, on the endpoint's RMA path (the
//!   network's own RDMA read, or, with `RGEX_RMA=reference`, the
//!   reference protocol's request and reply);
//! - `atomic`: an `AtomicDomain` fetch-add (the domain's own choice, or
//!   the AM atomics with `reference_atomic`);
//! - `vis_get`: a VIS get's `VisGet::wait`.
//!
//! Or rank 1 stays alive but busy: with `busy_barrier` and
//! `busy_am_reply`, it computes (sleeps, not polling) for three timeouts
//! before it enters a barrier, while rank 0 waits on it in that barrier,
//! or for the reply to its request (which rank 1 runs in that barrier).
//! Rank 1 answers the network's liveness pings all along (its progress
//! thread does), so rank 0 must wait for it, not declare it dead: rank 0
//! prints one `ok:` line, and both ranks exit 0.
//!
//! Rank 0 waits until rank 1's process is stopped (its `/proc` state),
//! then starts the operation and prints one `ok:` line with how long the
//! wait took and the error, kills rank 1 (SIGKILL: the job then ends,
//! and the launcher names rank 1 as killed) and exits 0. A success, an
//! error that does not name rank 1, or a hang (the launcher's timeout)
//! fails the job. Timing is printed, not checked.

use rgex::{AtomicDomain, Client, Event, Flags, GlobalAddr, Rank, Vector, Vis};
use rgex_tests::{conduit_banner, ok, HANG_LIMIT};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KINDS: [&str; 9] = [
    "barrier",
    "barrier_nb",
    "am_reply",
    "get_nb",
    "atomic",
    "reference_atomic",
    "vis_get",
    "busy_barrier",
    "busy_am_reply",
];

fn main() -> rgex::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_default();
    if !KINDS.contains(&what.as_str()) {
        eprintln!("usage: job_stopped_peer {} (got {what:?})", KINDS.join("|"));
        std::process::exit(2);
    }
    let replied = Arc::new(AtomicBool::new(false));
    let r = replied.clone();
    let (client, req) = rgex::init_with(|t| {
        let rep = t.register("stopped.rep", move |_tok, _msg| {
            // Relaxed: a flag the polling thread reads after its poll ran
            // this handler (on this thread, or published by the poll).
            r.store(true, Ordering::Relaxed);
        })?;
        t.register("stopped.req", move |tok, _msg| {
            tok.reply_short(rep, &[], Flags::empty())
        })
    })?;
    assert_eq!(client.size(), 2, "job_stopped_peer runs on two ranks");
    conduit_banner(&client);
    let me = client.rank();
    let mut atomics = AtomicDomain::<u64>::builder(rgex::OpSet::of(&[rgex::AtomicOp::Fadd]));
    if what == "reference_atomic" {
        atomics = atomics.force_reference(true);
    }
    let atomics = atomics
        .build(client.endpoint(), client.world())
        .map_err(|e| rgex::Error::Failed(format!("atomic domain: {e}")))?;
    let vis = Vis::new(client.endpoint())?;
    let pids = client
        .endpoint()
        .conduit()
        .bootstrap()
        .allgather(&u64::from(std::process::id()).to_le_bytes())?;
    let pid = u64::from_le_bytes(pids[1][..8].try_into().expect("8 bytes")) as libc::pid_t;
    if me == Rank(0) {
        println!(
            "rank 0: rma path {:?}, atomics {:?}, vis {:?}",
            client.endpoint().rma_path(Rank(1)),
            atomics.implementation(),
            vis.mechanism()
        );
    }
    client.barrier()?;
    if what.starts_with("busy_") {
        return busy(&client, req, &what, &replied);
    }
    if me != Rank(0) {
        println!("rank 1: stopping (SIGSTOP)");
        // SAFETY: raise only delivers a signal to this process; SIGSTOP
        // stops it until rank 0 kills it.
        unsafe { libc::raise(libc::SIGSTOP) };
        // Not reached unless someone sent SIGCONT: leave with an error.
        eprintln!("rank 1: continued after SIGSTOP: wrong");
        std::process::exit(1);
    }
    wait_for_state(&client, pid, 'T', "stopped");
    let start = Instant::now();
    let result = one_wait(&client, &vis, &atomics, req, Rank(1), &what, &replied);
    let secs = start.elapsed().as_secs_f64();
    let code = match result {
        Ok(()) => {
            eprintln!("rank 0: {what} to stopped rank 1 reported success after {secs:.2} s: wrong");
            1
        }
        Err(e) if e.contains("rank 1") => {
            ok(
                &client,
                &format!("{what} to stopped rank 1 failed after {secs:.2} s: {e}"),
            );
            0
        }
        Err(e) => {
            eprintln!("rank 0: {what} to stopped rank 1 failed without naming it: {e}");
            1
        }
    };
    // SAFETY: kill only sends a signal, to rank 1's process (its pid from
    // the allgather; it is stopped, not reaped, so the pid is still its).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    wait_for_state(&client, pid, 'Z', "killed");
    std::process::exit(code)
}

/// One wait of kind `what` on `to`; the error's text if it failed.
fn one_wait(
    client: &Client,
    vis: &Vis,
    atomics: &AtomicDomain<u64>,
    req: rgex::HandlerId,
    to: Rank,
    what: &str,
    replied: &AtomicBool,
) -> Result<(), String> {
    let ep = client.endpoint();
    let f = Flags::empty();
    let s = |e: rgex::Error| e.to_string();
    match what {
        "barrier" => client.barrier().map_err(s),
        "barrier_nb" => client.world().barrier_nb().and_then(Event::wait).map_err(s),
        "am_reply" => request_and_await_reply(client, req, to, replied),
        "get_nb" => ep
            .get_nb(vec![0u8; 64], GlobalAddr::new(to, 0), f)
            .map_err(|e| s(e.error))?
            .wait()
            .map(drop)
            .map_err(s),
        "atomic" | "reference_atomic" => atomics
            .fetch_add(GlobalAddr::new(to, 8192), 1, rgex::AtomicFlags::empty())
            .map(drop)
            .map_err(s),
        "vis_get" => {
            let frags = [(0u64, 256u64), (4096, 256)];
            let meta = Vector {
                peer: &frags,
                local: &[(0, 512)],
            };
            vis.get_nb(to, meta, vec![0u8; 512], f)
                .map_err(s)?
                .wait()
                .map(drop)
                .map_err(s)
        }
        _ => unreachable!("checked in main"),
    }
}

/// A request to `to`, then polls until its reply handler ran (`Ok`) or
/// `peer_gone(to)` says `to` is gone (the error).
fn request_and_await_reply(
    client: &Client,
    req: rgex::HandlerId,
    to: Rank,
    replied: &AtomicBool,
) -> Result<(), String> {
    let s = |e: rgex::Error| e.to_string();
    client
        .endpoint()
        .request_short(to, req, &[], Flags::empty())
        .map_err(s)?;
    let start = Instant::now();
    let mut backoff = rgex::Backoff::new(client.endpoint().polite());
    // Relaxed: see the reply handler.
    while !replied.load(Ordering::Relaxed) {
        if let Some(why) = client.endpoint().conduit().peer_gone(to) {
            return Err(format!("peer_gone: {why}"));
        }
        if client.endpoint().poll().map_err(s)? == 0 {
            backoff.snooze();
        }
        if start.elapsed() > HANG_LIMIT {
            return Err(format!("no reply and no error after {HANG_LIMIT:?}"));
        }
    }
    Ok(())
}

/// The `busy_` kinds: rank 1 computes for three dead-peer timeouts, then
/// enters a barrier; rank 0 waits on it meanwhile and must not give up.
fn busy(
    client: &Client,
    req: rgex::HandlerId,
    what: &str,
    replied: &AtomicBool,
) -> rgex::Result<()> {
    let timeout: u64 = ["RGEX_OFI_TIMEOUT", "RGEX_IBV_TIMEOUT"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(2);
    let busy_for = Duration::from_secs(3 * timeout);
    if client.rank() != Rank(0) {
        println!("rank 1: busy for {busy_for:?}, not polling");
        std::thread::sleep(busy_for);
        return client.barrier();
    }
    let start = Instant::now();
    let waited = match what {
        "busy_barrier" => client.barrier().map_err(|e| e.to_string()),
        "busy_am_reply" => request_and_await_reply(client, req, Rank(1), replied),
        _ => unreachable!("checked in main"),
    };
    let secs = start.elapsed().as_secs_f64();
    match waited {
        Ok(()) => ok(
            client,
            &format!("{what}: rank 1, busy for {busy_for:?}, was waited for ({secs:.2} s)"),
        ),
        Err(e) => {
            eprintln!("rank 0: {what}: busy rank 1 was given up on after {secs:.2} s: {e}");
            std::process::exit(1);
        }
    }
    if what == "busy_am_reply" {
        client.barrier()?;
    }
    Ok(())
}

/// Poll until process `pid`'s state (in `/proc/PID/stat`) is `state`
/// (`T`: stopped; `Z`: ended, not yet reaped; a process already reaped
/// counts as ended), as `what` says.
fn wait_for_state(client: &Client, pid: libc::pid_t, state: char, what: &str) {
    let start = Instant::now();
    let reached = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(state)),
        Err(_) => state == 'Z',
    };
    while !reached() {
        let _ = client.endpoint().poll();
        std::thread::sleep(Duration::from_millis(1));
        assert!(
            start.elapsed() < HANG_LIMIT,
            "rank 0: rank 1 (process {pid}) not {what} after {HANG_LIMIT:?}"
        );
    }
}
