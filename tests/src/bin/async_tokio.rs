//! Futures on tokio (issue 28, "two executors"): the same work as
//! `async_conformance` (each task awaits a put, a get, a deferred put's
//! local and remote completion, a fetch-add and a VIS get, every result
//! checked) spawned as `n` tokio tasks, on the runtime the first argument
//! names:
//!
//! - `current`: tokio's current-thread runtime, the tasks spawned on a
//!   `LocalSet`, progress by the endpoint's progress task spawned beside
//!   them (nothing else polls);
//! - `multi`: tokio's multi-thread runtime (2 workers), the tasks spawned
//!   with `tokio::spawn` (so they move between workers), progress by
//!   rgex's progress thread (wakers called from it).
//!
//! Usage: `async_tokio current|multi [TASKS]`

use rgex::{AtomicDomain, AtomicFlags, AtomicOp, Flags, GlobalAddr, OpSet, Rank, Vector, Vis};
use rgex_tests::{conduit_banner, ok};
use std::sync::Arc;

/// Bytes per slot; each task uses two slots of the neighbour's segment.
const SLOT: usize = 64;
/// Where the slots start (the atomic counter is at offset 0).
const BASE: u64 = 4096;

/// What every task shares.
struct Shared {
    ep: Arc<rgex::Endpoint>,
    ad: AtomicDomain<u64>,
    vis: Vis,
    me: Rank,
    peer: Rank,
}

fn pattern(me: Rank, i: usize, k: usize) -> Vec<u8> {
    (0..SLOT)
        .map(|b| (rgex_tests::mix(me.0, i as u32, (k * SLOT + b) as u32) & 0xff) as u8)
        .collect()
}

/// Task `i`: its fetched value, or what went wrong.
async fn task(s: Arc<Shared>, i: usize) -> Result<u64, String> {
    let f = Flags::empty();
    let e = |what: &'static str| move |err: rgex::Error| format!("task {i}: {what}: {err}");
    let (s0, s1) = (pattern(s.me, i, 0), pattern(s.me, i, 1));
    let off0 = BASE + (2 * i * SLOT) as u64;
    let (at0, at1) = (
        GlobalAddr::new(s.peer, off0),
        GlobalAddr::new(s.peer, off0 + SLOT as u64),
    );
    s.ep.put_nb(at0, &s0, f)
        .map_err(e("put_nb"))?
        .await
        .map_err(e("put"))?;
    let got =
        s.ep.get_nb(vec![0u8; SLOT], at0, f)
            .map_err(|b| e("get_nb")(b.error))?
            .await
            .map_err(e("get"))?;
    if got != s0 {
        return Err(format!("task {i}: get after put at {at0:?}: wrong bytes"));
    }
    let p =
        s.ep.put_nb_defer(at1, s1.clone(), f)
            .map_err(|b| e("put_nb_defer")(b.error))?;
    if p.lc.await.map_err(e("lc"))? != s1 {
        return Err(format!("task {i}: the LC handed back other bytes"));
    }
    p.rc.await.map_err(e("rc"))?;
    let v =
        s.ad.op_nb(
            GlobalAddr::new(s.peer, 0),
            AtomicOp::Fadd,
            1,
            0,
            AtomicFlags::empty(),
        )
        .map_err(e("op_nb"))?
        .await
        .map_err(e("fetch-add"))?;
    let frags = [(off0, SLOT as u64), (off0 + SLOT as u64, SLOT as u64)];
    let meta = Vector {
        peer: &frags,
        local: &[(0, 2 * SLOT as u64)],
    };
    let both = s
        .vis
        .get_nb(s.peer, meta, vec![0u8; 2 * SLOT], f)
        .map_err(e("vis get_nb"))?
        .await
        .map_err(e("vis get"))?;
    if both[..SLOT] != s0[..] || both[SLOT..] != s1[..] {
        return Err(format!("task {i}: VIS get at {at0:?}: wrong bytes"));
    }
    Ok(v)
}

fn main() -> rgex::Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "current".into());
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    if !["current", "multi"].contains(&mode.as_str()) {
        eprintln!("usage: async_tokio current|multi [TASKS] (got {mode:?})");
        std::process::exit(2);
    }
    let client = rgex::init()?;
    conduit_banner(&client);
    let me = client.rank();
    let peer = Rank((me.0 + 1) % client.size());
    let ad = AtomicDomain::<u64>::new(
        client.endpoint(),
        client.world(),
        OpSet::of(&[AtomicOp::Fadd, AtomicOp::Get, AtomicOp::Set]),
    )?;
    ad.set(GlobalAddr::new(me, 0), 0, AtomicFlags::empty())?;
    let shared = Arc::new(Shared {
        ep: client.endpoint().clone(),
        vis: Vis::new(client.endpoint())?,
        ad,
        me,
        peer,
    });
    client.barrier()?;
    let results: Vec<Result<u64, String>> = if mode == "current" {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|e| rgex::Error::Failed(format!("tokio: {e}")))?;
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let progress = client.endpoint().progress_task();
            let stop = progress.stopper();
            let driver = tokio::task::spawn_local(progress);
            let handles: Vec<_> = (0..n)
                .map(|i| tokio::task::spawn_local(task(shared.clone(), i)))
                .collect();
            let mut out = Vec::with_capacity(n);
            for h in handles {
                out.push(h.await.unwrap_or_else(|e| Err(format!("join: {e}"))));
            }
            stop.stop();
            if let Ok(Err(e)) = driver.await {
                out.push(Err(format!("progress task: {e}")));
            }
            out
        })
    } else {
        let thread = client.endpoint().start_progress_thread()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .map_err(|e| rgex::Error::Failed(format!("tokio: {e}")))?;
        let out = rt.block_on(async {
            let handles: Vec<_> = (0..n)
                .map(|i| tokio::spawn(task(shared.clone(), i)))
                .collect();
            let mut out = Vec::with_capacity(n);
            for h in handles {
                out.push(h.await.unwrap_or_else(|e| Err(format!("join: {e}"))));
            }
            out
        });
        thread.stop()?;
        out
    };
    let mut fetched = Vec::with_capacity(n);
    for r in results {
        fetched.push(r.map_err(|e| rgex::Error::Failed(format!("{me}: {e}")))?);
    }
    fetched.sort_unstable();
    if fetched != (0..n as u64).collect::<Vec<_>>() {
        return Err(rgex::Error::Failed(format!(
            "{me}: the {n} awaited fetch-adds did not fetch 0..{n} once each"
        )));
    }
    client.barrier()?;
    let total = shared
        .ad
        .get(GlobalAddr::new(me, 0), AtomicFlags::empty())?;
    client.barrier()?;
    if total != n as u64 {
        return Err(rgex::Error::Failed(format!(
            "{me}: counter holds {total}, not the {n} adds of its neighbour"
        )));
    }
    ok(
        &client,
        &format!("tokio {mode}: {n} spawned tasks awaited a put, a get, a deferred put's LC and RC, a fetch-add and a VIS get each, every result checked"),
    );
    Ok(())
}
