//! A host lost mid-job (issue 42), across the test cluster of
//! `ci/cluster.sh`: `job_lost_host HOST DIR`. Every rank learns each
//! rank's host name (a bootstrap allgather), sends a request to every
//! peer and waits for its reply, passes a barrier, and writes
//! `DIR/ready-R` holding its pid. The ranks on HOST then sleep without
//! polling: the test takes HOST's link down and kills them (and HOST's
//! slurmd), then creates `DIR/lost`. The survivors wait for that file,
//! then wait on the lost ranks in every handle kind:
//!
//! - an RMA get's handle from each lost rank;
//! - an `AtomicDomain` fetch-add on each lost rank;
//! - a client's own request to each lost rank, then `peer_gone`;
//! - a VIS get's handle from each lost rank;
//! - a blocking barrier of the world team;
//! - a non-blocking barrier's `Event::wait`.
//!
//! The barriers come last, once each survivor has found the lost ranks
//! dead itself: a barrier entered first may wait on a live survivor that
//! has already given up on its own barrier (no collective tells the
//! others of a member's failure; see the issue-42 report).
//!
//! Each must end in an error naming a lost rank (the barriers: one of
//! them; the others: that rank) once the dead-peer timeout
//! (`RGEX_OFI_TIMEOUT`) has passed, not hang. Every survivor prints one
//! `ok:` line per wait and exits 3 without finalizing (finalize is
//! collective), once every survivor wrote `DIR/done-R` (so none is blamed
//! for leaving first); the job ends non-zero, since HOST was lost.
//! A success, an error naming no lost rank, or a hang (bounded by
//! `HANG_LIMIT`) fails the survivor.

use rgex::{AtomicDomain, Client, Event, Flags, GlobalAddr, Rank, Vector, Vis};
use rgex_tests::{conduit_banner, HANG_LIMIT, OK};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn main() -> rgex::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(host), Some(dir)) = (args.next(), args.next()) else {
        eprintln!("usage: job_lost_host HOST DIR (HOST: the host the test takes away; DIR: where the ranks say they are ready)");
        std::process::exit(2);
    };
    let dir = PathBuf::from(dir);
    let replied = Arc::new(AtomicBool::new(false));
    let r = replied.clone();
    let (client, req) = rgex::init_with(|t| {
        let rep = t.register("lost.rep", move |_tok, _msg| {
            // Relaxed: a flag the polling thread reads after its poll ran
            // this handler.
            r.store(true, Ordering::Relaxed);
        })?;
        t.register("lost.req", move |tok, _msg| {
            tok.reply_short(rep, &[], Flags::empty())
        })
    })?;
    conduit_banner(&client);
    let me = client.rank();
    let atomics = AtomicDomain::<u64>::builder(rgex::OpSet::of(&[rgex::AtomicOp::Fadd]))
        .build(client.endpoint(), client.world())
        .map_err(|e| rgex::Error::Failed(format!("atomic domain: {e}")))?;
    let vis = Vis::new(client.endpoint())?;
    let mine = hostname();
    let hosts = client
        .endpoint()
        .conduit()
        .bootstrap()
        .allgather(mine.as_bytes())?;
    let lost: Vec<Rank> = (0..client.size())
        .filter(|&r| hosts[r as usize] == host.as_bytes())
        .map(Rank)
        .collect();
    if lost.is_empty() || lost.len() == client.size() as usize {
        eprintln!(
            "rank {}: job_lost_host: host {host} must hold some ranks of the job, not all (hosts: {:?})",
            me.0,
            hosts.iter().map(|h| String::from_utf8_lossy(h)).collect::<Vec<_>>()
        );
        std::process::exit(2);
    }
    // Every pair has talked before the loss (a request and its reply to
    // each peer), so the survivors' connections to each other exist:
    // the issue-42 report tells what happens where they do not yet.
    for to in (0..client.size()).map(Rank).filter(|&r| r != me) {
        replied.store(false, Ordering::Relaxed);
        request_and_await_reply(&client, req, to, &replied).map_err(|e| {
            rgex::Error::Failed(format!("rank {}: warm-up with rank {}: {e}", me.0, to.0))
        })?;
    }
    client.barrier()?;
    write_marker(&dir, "ready", me);
    if lost.contains(&me) {
        // The test kills this process; not polling meanwhile.
        std::thread::sleep(HANG_LIMIT);
        eprintln!(
            "rank {} on {host}: not killed within {HANG_LIMIT:?}: wrong",
            me.0
        );
        std::process::exit(1);
    }
    wait_for_file(&client, &dir.join("lost"));
    let mut failed = false;
    let mut check = |what: &str, expect: &[Rank], result: Result<(), String>, start: Instant| {
        let secs = start.elapsed().as_secs_f64();
        match result {
            Ok(()) => {
                eprintln!(
                    "rank {}: {what} succeeded after {secs:.2} s with {host} lost: wrong",
                    me.0
                );
                failed = true;
            }
            Err(e) if expect.iter().any(|r| e.contains(&format!("rank {}", r.0))) => {
                println!(
                    "{OK}rank {}: {what} failed after {secs:.2} s naming a rank of {host}: {e}",
                    me.0
                );
            }
            Err(e) => {
                eprintln!(
                    "rank {}: {what} failed without naming a rank of {host} {expect:?}: {e}",
                    me.0
                );
                failed = true;
            }
        }
    };
    let s = |e: rgex::Error| e.to_string();
    let ep = client.endpoint();
    for &to in &lost {
        let start = Instant::now();
        let get = ep
            .get_nb(vec![0u8; 64], GlobalAddr::new(to, 0), Flags::empty())
            .map_err(|e| s(e.error))
            .and_then(|h| h.wait().map(drop).map_err(s));
        check(&format!("get_nb from rank {}", to.0), &[to], get, start);
        let start = Instant::now();
        let add = atomics
            .fetch_add(GlobalAddr::new(to, 8192), 1, rgex::AtomicFlags::empty())
            .map(drop)
            .map_err(s);
        check(&format!("atomic on rank {}", to.0), &[to], add, start);
        let start = Instant::now();
        replied.store(false, Ordering::Relaxed);
        let reply = request_and_await_reply(&client, req, to, &replied);
        check(&format!("am_reply from rank {}", to.0), &[to], reply, start);
        let start = Instant::now();
        let frags = [(0u64, 256u64), (4096, 256)];
        let meta = Vector {
            peer: &frags,
            local: &[(0, 512)],
        };
        let get = vis
            .get_nb(to, meta, vec![0u8; 512], Flags::empty())
            .map_err(s)
            .and_then(|h| h.wait().map(drop).map_err(s));
        check(&format!("vis_get from rank {}", to.0), &[to], get, start);
    }
    let start = Instant::now();
    check("barrier", &lost, client.barrier().map_err(s), start);
    let start = Instant::now();
    check(
        "barrier_nb",
        &lost,
        client.world().barrier_nb().and_then(Event::wait).map_err(s),
        start,
    );
    // Every survivor stays until all are done: one that left early would
    // be what the others' collectives blame. (A file each, since the
    // job's collectives all include the lost ranks.)
    write_marker(&dir, "done", me);
    for r in (0..client.size()).map(Rank).filter(|r| !lost.contains(r)) {
        wait_for_file(&client, &dir.join(format!("done-{}", r.0)));
    }
    // Not finalizing: finalize is collective, and HOST's ranks are gone.
    // Exit 3 when every check passed: the job lost a host, so it ends
    // non-zero (srun here reports the node failure but exits 0 when every
    // task it heard from exited 0); 1 when a check failed.
    std::process::exit(if failed { 1 } else { 3 })
}

/// This host's name (each of the cluster's hosts has its own UTS
/// namespace).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// `DIR/KIND-R` holding this process's pid, written whole (a rename).
fn write_marker(dir: &Path, kind: &str, me: Rank) {
    let tmp = dir.join(format!(".{kind}-{}", me.0));
    std::fs::write(&tmp, std::process::id().to_string())
        .and_then(|()| std::fs::rename(&tmp, dir.join(format!("{kind}-{}", me.0))))
        .unwrap_or_else(|e| panic!("rank {}: cannot write {}: {e}", me.0, tmp.display()));
}

/// Poll until `path` exists; exit 1 after [`HANG_LIMIT`].
fn wait_for_file(client: &Client, path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        // Errors here are the lost peers' and are what the waits check.
        let _ = client.endpoint().poll();
        std::thread::sleep(std::time::Duration::from_millis(5));
        if start.elapsed() > HANG_LIMIT {
            eprintln!(
                "rank {}: {} did not appear within {HANG_LIMIT:?}",
                client.rank().0,
                path.display()
            );
            std::process::exit(1);
        }
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
