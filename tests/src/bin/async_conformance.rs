//! Futures (issue 28 point 1): thousands of puts, gets, atomics and VIS
//! gets started at once from async tasks on a hand-written executor, each
//! handle awaited and every result checked, then a `barrier_nb` awaited.
//! Any number of ranks; each works with its right neighbour. The first
//! argument says who drives progress while the tasks await:
//!
//! - `task`: the endpoint's progress task, run as one more task of the
//!   same single-thread executor (which polls a task only when woken);
//! - `thread`: a second thread of the rank that polls the client; the
//!   executor thread parks until a waker, called on that thread, wakes it.
//!
//! In `task` mode a handler error meets the progress task during the
//! awaited `barrier_nb`: the task must keep progressing (the barrier
//! completes) and hand the error to whoever holds its stopper.
//!
//! Then the async NBI rule (issue 38): an rgex future about to suspend
//! while its thread has an open access region, or implicit-handle
//! operations not synced, resolves to `Error::NbiAcrossAwait` (the region
//! closed, so the thread's next task starts clean); with neither it stays
//! pending.
//!
//! The second argument is the number of tasks (default 2000). Run with
//! `RGEX_RMA=reference RGEX_ATOMICS=reference RGEX_VIS=am` too, so that
//! the operations are really in flight when awaited (on smp's mapped
//! path they finish during injection).

use rgex::{
    AtomicDomain, AtomicFlags, AtomicOp, Client, Flags, GlobalAddr, OpSet, Rank, Vector, Vis,
};
use rgex_tests::executor::{block_on, run_all, Task};
use rgex_tests::{conduit_banner, ok};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes per slot; each task uses two slots of the neighbour's segment.
const SLOT: usize = 64;
/// Where the slots start (the atomic counter is at offset 0).
const BASE: u64 = 4096;

type Res<T = ()> = Result<T, String>;

fn main() -> rgex::Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "task".into());
    let n: usize = match std::env::args().nth(2).map(|s| s.parse()) {
        None => 2000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: async_conformance [task|thread] [tasks > 0]");
            std::process::exit(2);
        }
    };
    if !["task", "thread"].contains(&mode.as_str()) {
        eprintln!("usage: async_conformance [task|thread] [tasks > 0] (got {mode:?})");
        std::process::exit(2);
    }
    let (client, fails) = rgex::init_with(|t| {
        t.register("async.fails", |_tok, _msg| {
            Err::<(), _>("deliberate error for the progress task")
        })
    })?;
    conduit_banner(&client);
    let me = client.rank();
    let peer = Rank((me.0 + 1) % client.size());
    let need = BASE + (2 * n * SLOT) as u64;
    let have = client.endpoint().conduit().segment_len(peer);
    if have < need {
        return Err(rgex::Error::Config(format!(
            "async_conformance: {n} tasks need {need:#x} bytes of {peer}'s segment, which has {have:#x}"
        )));
    }
    let ad = AtomicDomain::<u64>::new(
        client.endpoint(),
        client.world(),
        OpSet::of(&[AtomicOp::Fadd, AtomicOp::Get, AtomicOp::Set]),
    )?;
    let vis = Vis::new(client.endpoint())?;
    ad.set(GlobalAddr::new(me, 0), 0, AtomicFlags::empty())?;
    client.barrier()?;

    let stop_thread = AtomicBool::new(false);
    let (results, stats) = std::thread::scope(|s| {
        let poller = (mode == "thread").then(|| {
            s.spawn(|| {
                while !stop_thread.load(Ordering::Acquire) {
                    client.endpoint().poll()?;
                    std::hint::spin_loop();
                }
                Ok::<(), rgex::Error>(())
            })
        });
        let r = run_tasks(&client, &ad, &vis, peer, n, &mode);
        // Release: pairs with the poller's Acquire (it only needs to stop).
        stop_thread.store(true, Ordering::Release);
        if let Some(p) = poller {
            p.join().expect("the polling thread panicked")?;
        }
        Ok::<_, rgex::Error>(r)
    })?;

    // Every task succeeded, and the atomic fetches are 0..n, each once
    // (only this rank adds to the neighbour's counter).
    let mut fetched = Vec::with_capacity(n);
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(Some(v)) => fetched.push(v),
            Ok(None) => {}
            Err(e) => return Err(rgex::Error::Failed(format!("{me}: task {i}: {e}"))),
        }
    }
    fetched.sort_unstable();
    let want: Vec<u64> = (0..n as u64).collect();
    if fetched != want {
        return Err(rgex::Error::Failed(format!(
            "{me}: the {} awaited fetch-adds did not fetch 0..{n} once each",
            fetched.len()
        )));
    }
    ok(
        &client,
        &format!("{mode}: {n} tasks awaited a put, a get, a deferred put's LC and RC, a get, a fetch-add and a VIS get each, every result checked ({} polls, {} wakes from another thread)", stats.polls, stats.foreign_wakes),
    );
    if mode == "thread"
        && client.endpoint().rma_path(peer) == rgex::RmaPath::Reference
        && stats.foreign_wakes == 0
    {
        return Err(rgex::Error::Failed(format!(
            "{me}: operations in flight were awaited, but no waker was called from the polling thread"
        )));
    }

    // A non-blocking barrier awaited, progress driven the same way.
    match mode.as_str() {
        "task" => {
            // A request to itself (so that no other rank's poll meets
            // it) makes this rank's progress task meet a handler error;
            // the task must go on progressing.
            client
                .endpoint()
                .request_short(me, fails, &[], Flags::empty())?;
            let ev = client.world().barrier_nb()?;
            let progress = client.endpoint().progress_task();
            let stop = progress.stopper();
            let watch = stop.clone();
            let tasks: Vec<Task<'_, rgex::Result<()>>> = vec![
                Box::pin(async move {
                    let r = ev.await;
                    let start = std::time::Instant::now();
                    while watch.errors_met() == 0 {
                        assert!(
                            start.elapsed() < rgex_tests::HANG_LIMIT,
                            "the progress task met no handler error"
                        );
                        yield_once().await;
                    }
                    watch.stop();
                    r
                }),
                Box::pin(async move {
                    match progress.await {
                        Err(rgex::Error::HandlerFailed { handler, .. })
                            if handler == "async.fails" =>
                        {
                            Ok(())
                        }
                        other => Err(rgex::Error::Failed(format!(
                            "the progress task's output should be async.fails's error: {other:?}"
                        ))),
                    }
                }),
            ];
            let (outs, _) = run_all("barrier_nb", tasks, || false);
            outs.into_iter().collect::<rgex::Result<Vec<()>>>()?;
            assert_eq!(
                stop.errors_met(),
                1,
                "{me}: errors met by the progress task"
            );
            assert!(
                stop.take_errors().is_empty(),
                "{me}: the error was handed over twice"
            );
        }
        _ => block_on("barrier_nb", client.world().barrier_nb()?, || {
            let _ = client.endpoint().poll();
            true
        })?,
    }
    ok(
        &client,
        &format!(
            "{mode}: barrier_nb awaited{}",
            if mode == "task" {
                ", the progress task going on past a handler error and handing it over"
            } else {
                ""
            }
        ),
    );

    // Every rank's counter holds n: the neighbour's adds all landed.
    let total = ad.get(GlobalAddr::new(me, 0), AtomicFlags::empty())?;
    client.barrier()?;
    if total != n as u64 {
        return Err(rgex::Error::Failed(format!(
            "{me}: counter holds {total}, not the {n} adds of its neighbour"
        )));
    }
    ok(&client, &format!("{mode}: every awaited fetch-add landed"));
    nbi_across_await(&client, peer)?;
    Ok(())
}

/// What a never-finishing operation's event polls: nothing.
struct NoProgress;

impl rgex::Progress for NoProgress {
    fn progress(&self) -> usize {
        0
    }
    fn polite(&self) -> bool {
        true
    }
}

/// The async NBI rule enforced: poll a pending event (an operation that
/// never completes, so every poll would suspend) with and without NBI
/// state on this thread.
fn nbi_across_await(client: &Client, peer: Rank) -> rgex::Result<()> {
    use std::future::Future;
    let me = client.rank();
    let ep = client.endpoint();
    let never = rgex::OpCounter::new(1);
    let mut ev = rgex::Event::pending(never.clone(), std::sync::Arc::new(NoProgress));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut poll = || std::pin::Pin::new(&mut ev).poll(&mut cx);
    let refused = |what: &str, r: std::task::Poll<rgex::Result<()>>, says: &str| match r {
        std::task::Poll::Ready(Err(rgex::Error::NbiAcrossAwait { what: w }))
            if w.contains(says) =>
        {
            Ok(())
        }
        other => Err(rgex::Error::Failed(format!(
            "{me}: a future awaited with {what} open: {other:?}"
        ))),
    };
    // Nothing of NBI on the thread: it suspends as usual.
    if !poll().is_pending() {
        return Err(rgex::Error::Failed(format!(
            "{me}: a pending event did not suspend"
        )));
    }
    // An open access region: refused, and the region closed.
    ep.nbi_begin_region()?;
    refused("an access region", poll(), "access region")?;
    if ep.nbi_end_region().is_ok() {
        return Err(rgex::Error::Failed(format!(
            "{me}: the region awaited across was left open on the thread"
        )));
    }
    ep.nbi_begin_region()?; // the thread's next task starts clean
    ep.nbi_end_region()?.wait()?;
    // An implicit put outstanding (counted as put_nbi counts it: on a
    // mapped segment a real one is done before it returns).
    let puts = ep.nbi_counter(rgex::NbiCategory::Put);
    puts.add(1);
    let r = poll();
    puts.done();
    refused("an implicit put outstanding", r, "puts")?;
    // Synced: suspends again; and a real put_nbi synced before the
    // .await is fine.
    ep.put_nbi(GlobalAddr::new(peer, BASE), &[1u8; 8], Flags::empty())?;
    ep.nbi_wait(rgex::NbiCategory::Put)?;
    if !poll().is_pending() {
        return Err(rgex::Error::Failed(format!(
            "{me}: a pending event did not suspend after the NBI state was synced"
        )));
    }
    never.done();
    client.barrier()?;
    ok(
        client,
        "an rgex future about to suspend with an open access region or unsynced implicit puts resolves to NbiAcrossAwait (the region closed); with neither it suspends",
    );
    Ok(())
}

/// A future that is pending once (waking itself), then ready: lets the
/// executor run the other tasks.
fn yield_once() -> impl std::future::Future<Output = ()> {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
}

/// The bytes task `i` of rank `me` puts into slot `k` (0 or 1).
fn pattern(me: Rank, i: usize, k: usize) -> Vec<u8> {
    (0..SLOT)
        .map(|b| (rgex_tests::mix(me.0, i as u32, (k * SLOT + b) as u32) & 0xff) as u8)
        .collect()
}

/// Run `n` tasks (plus the progress task in `task` mode); each task's
/// fetched value, `None` for the progress task.
fn run_tasks(
    client: &Client,
    ad: &AtomicDomain<u64>,
    vis: &Vis,
    peer: Rank,
    n: usize,
    mode: &str,
) -> (Vec<Res<Option<u64>>>, rgex_tests::executor::RunStats) {
    let me = client.rank();
    let f = Flags::empty();
    let progress = client.endpoint().progress_task();
    let stop = progress.stopper();
    let left = Rc::new(Cell::new(n));
    let mut tasks: Vec<Task<'_, Res<Option<u64>>>> = Vec::with_capacity(n + 1);
    for i in 0..n {
        let (left, stop) = (left.clone(), stop.clone());
        let ep = client.endpoint();
        tasks.push(Box::pin(async move {
            let r = async {
                let e = |what: &'static str| move |err: rgex::Error| format!("{what}: {err}");
                let (s0, s1) = (pattern(me, i, 0), pattern(me, i, 1));
                let off0 = BASE + (2 * i * SLOT) as u64;
                let (at0, at1) = (
                    GlobalAddr::new(peer, off0),
                    GlobalAddr::new(peer, off0 + SLOT as u64),
                );
                ep.put_nb(at0, &s0, f)
                    .map_err(e("put_nb"))?
                    .await
                    .map_err(e("put await"))?;
                let got = ep
                    .get_nb(vec![0u8; SLOT], at0, f)
                    .map_err(|b| e("get_nb")(b.error))?
                    .await
                    .map_err(e("get await"))?;
                if got != s0 {
                    return Err(format!("get after put of slot 0 at {at0:?}: wrong bytes"));
                }
                let p = ep
                    .put_nb_defer(at1, s1.clone(), f)
                    .map_err(|b| e("put_nb_defer")(b.error))?;
                let back = p.lc.await.map_err(e("lc await"))?;
                if back != s1 {
                    return Err("the deferred put's LC handed back other bytes".into());
                }
                p.rc.await.map_err(e("rc await"))?;
                let v = ad
                    .op_nb(
                        GlobalAddr::new(peer, 0),
                        AtomicOp::Fadd,
                        1,
                        0,
                        AtomicFlags::empty(),
                    )
                    .map_err(e("op_nb"))?
                    .await
                    .map_err(e("atomic await"))?;
                let frags = [(off0, SLOT as u64), (off0 + SLOT as u64, SLOT as u64)];
                let meta = Vector {
                    peer: &frags,
                    local: &[(0, 2 * SLOT as u64)],
                };
                let both = vis
                    .get_nb(peer, meta, vec![0u8; 2 * SLOT], f)
                    .map_err(e("vis get_nb"))?
                    .await
                    .map_err(e("vis get await"))?;
                if both[..SLOT] != s0[..] || both[SLOT..] != s1[..] {
                    return Err(format!("VIS get of slots at {at0:?}: wrong bytes"));
                }
                Ok(Some(v))
            }
            .await;
            left.set(left.get() - 1);
            if left.get() == 0 {
                stop.stop();
            }
            r
        }));
    }
    if mode == "task" {
        tasks.push(Box::pin(async move {
            progress
                .await
                .map(|()| None)
                .map_err(|e| format!("progress task: {e}"))
        }));
    } else {
        drop(progress);
    }
    run_all(mode, tasks, || false)
}
