//! rgex-pgas's own checks, as a job (run by tests/run.rs on 1, 2 and 4
//! ranks): every piece of the crate, from several threads and under an
//! executor, with the errors it must give. Prints one `ok:` line per
//! check on rank 0 and exits 0 only if every check held.
//!
//! Usage: `conformance [all|departure|window|farewell]`. `departure`: rank 1
//! leaves the job at once; rank 0's RPC to it must fail naming it.
//! `window` (in a fresh process, so the work-queue peak is its own):
//! rank 1 computes without progress while the others call it, and its
//! queue must stay within one window per sender; then every rank floods
//! every rank at once, which must neither hang nor lose a call.

use rgex::{AtomicOp, OpSet, Rank};
use rgex_pgas::{AtomicDomain, DistObject, Error, GlobalPtr, Pgas};
use rgex_tests::executor::{run_all, Task};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn ok(pg: &Pgas, what: &str) {
    if pg.rank() == Rank(0) {
        println!("ok: {what}");
    }
}

fn next(pg: &Pgas) -> Rank {
    Rank((pg.rank().0 + 1) % pg.size())
}

/// A value whose serialization fails.
#[derive(Debug)]
struct Unserializable;

impl Serialize for Unserializable {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom(
            "this value refuses to be serialized",
        ))
    }
}

impl<'de> Deserialize<'de> for Unserializable {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Ok(Unserializable)
    }
}

fn heap(pg: &Pgas) -> rgex_pgas::Result<()> {
    let a = pg.new_array::<u64>(100, 7)?;
    let b = pg.new_(1.5f64)?;
    assert_eq!(pg.wait(pg.rget_slice(a, 100)?)?, vec![7u64; 100]);
    assert_eq!(pg.wait(pg.rget(b)?)?, 1.5);
    let e = pg.delete_(a.cast::<u32>()).unwrap_err().to_string();
    assert!(e.contains("allocated for u64, not u32"), "{e}");
    pg.delete_(a)?;
    let e = pg.delete_(a).unwrap_err().to_string();
    assert!(e.contains("already freed"), "{e}");
    let e = pg
        .delete_(GlobalPtr::<u64>::null())
        .unwrap_err()
        .to_string();
    assert!(e.contains("null"), "{e}");
    let seg = pg.client().endpoint().segment().len();
    let e = pg.new_array::<u8>(seg + 1, 0).unwrap_err().to_string();
    assert!(
        e.contains("cannot allocate") && e.contains(&format!("{}", pg.rank())),
        "{e}"
    );
    // local(): where the conduit maps the segment (smp; a network
    // conduit's node-local peers with the bypass on), else an error.
    if pg.is_local(b) {
        let raw = pg.local(b)?;
        // SAFETY: `b` is this rank's and nobody else knows it.
        unsafe { *raw = 2.5 };
        assert_eq!(pg.wait(pg.rget(b)?)?, 2.5);
    } else {
        let e = pg.local(b).unwrap_err().to_string();
        assert!(e.contains("does not map"), "{e}");
    }
    pg.delete_(b)?;
    ok(pg, "heap: new_, new_array, rget of them, wrong-type, double and null delete_, exhaustion, local()");
    Ok(())
}

fn rma(pg: &Pgas) -> rgex_pgas::Result<()> {
    let n = 1000usize;
    let mine = pg.new_array::<u32>(n, 0)?;
    let all = DistObject::new(pg, mine)?;
    let theirs = pg.wait(all.fetch(next(pg))?)?;
    let me = pg.rank().0;
    // Four threads each write a quarter of the next rank's array.
    std::thread::scope(|s| {
        for t in 0..4usize {
            let pg = pg.clone();
            s.spawn(move || -> rgex_pgas::Result<()> {
                let part: Vec<u32> = (t * n / 4..(t + 1) * n / 4)
                    .map(|i| me * 1_000_000 + i as u32)
                    .collect();
                let at = theirs.plus((t * n / 4) as i64)?;
                pg.wait(pg.rput_slice(&part, at)?)
            });
        }
    });
    pg.barrier()?;
    let left = (me + pg.size() - 1) % pg.size();
    let got = pg.wait(pg.rget_slice(mine, n)?)?;
    assert!(
        got.iter()
            .enumerate()
            .all(|(i, &v)| v == left * 1_000_000 + i as u32),
        "rank {me}: rput_slice from 4 threads"
    );
    // Out of the segment: rgex's error, naming the rank and the limit.
    let far = theirs.plus(1 << 40)?;
    let e = pg
        .rput(1u32, far)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains(&format!("{}", next(pg))), "out of segment: {e}");
    pg.barrier()?;
    pg.delete_(mine)?;
    ok(
        pg,
        "rma: rput_slice from 4 threads, rget_slice, out-of-segment error",
    );
    Ok(())
}

fn vis(pg: &Pgas) -> rgex_pgas::Result<()> {
    // A 20 x 30 grid (rows 30 wide) on every rank; each writes into the
    // next rank's grid a 4 x 5 block and three fragments, and reads them back.
    let grid = pg.new_array::<i32>(600, -1)?;
    let d = DistObject::new(pg, grid)?;
    let theirs = pg.wait(d.fetch(next(pg))?)?;
    let me = pg.rank().0 as i32;
    let block: Vec<i32> = (0..20).map(|i| me * 100 + i).collect();
    let corner = theirs.plus(2 * 30 + 3)?; // row 2, column 3
    pg.wait(pg.rput_strided(&block, corner, &[5, 4], &[1, 30])?)?;
    assert_eq!(pg.wait(pg.rget_strided(corner, &[5, 4], &[1, 30])?)?, block);
    let frags = [(theirs.plus(590)?, 4), (theirs.plus(500)?, 1), (theirs, 2)];
    pg.wait(pg.rput_irregular(&[me, me + 1, me + 2, me + 3, 7, 8, 9], &frags)?)?;
    assert_eq!(
        pg.wait(pg.rget_irregular(&frags)?)?,
        vec![me, me + 1, me + 2, me + 3, 7, 8, 9]
    );
    pg.barrier()?;
    // My grid, written by my left neighbour: the block where it belongs,
    // the rest untouched.
    let left = (pg.rank().0 + pg.size() - 1) % pg.size();
    let mine = pg.wait(pg.rget_slice(grid, 600)?)?;
    for (k, &v) in mine.iter().enumerate() {
        let (r, c) = (k / 30, k % 30);
        let want = match k {
            590..=593 => left as i32 + (k - 590) as i32,
            500 => 7,
            0 | 1 => 8 + k as i32,
            _ if (2..6).contains(&r) && (3..8).contains(&c) => {
                left as i32 * 100 + ((r - 2) * 5 + c - 3) as i32
            }
            _ => -1,
        };
        assert_eq!(v, want, "grid[{r}][{c}] of {}", pg.rank());
    }
    let e = pg
        .rput_strided(&block, corner, &[5, 5], &[1, 30])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("does not match"), "{e}");
    let e = pg
        .rput_irregular(&[1, 2], &[(theirs, 1)])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("hold 1 elements, the source 2"), "{e}");
    pg.barrier()?;
    pg.delete_(grid)?;
    ok(pg, "vis: a strided block and irregular fragments put and got back, the rest untouched, shape errors");
    Ok(())
}

fn double(_: &Pgas, x: u64) -> u64 {
    2 * x
}

fn rpc(pg: &Pgas) -> rgex_pgas::Result<()> {
    // The body below that panics on purpose does so at its target: keep
    // that one message out of the log, print every other panic.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.to_string().contains("x is 5") {
            hook(info);
        }
    }));
    let to = next(pg);
    assert_eq!(pg.wait(pg.rpc(to, double, 21)?)?, 42);
    let s = pg.wait(pg.rpc(
        to,
        |pg, (a, b): (String, u32)| format!("{a} {b} at {}", pg.rank()),
        ("hi".to_string(), 3),
    )?)?;
    assert_eq!(s, format!("hi 3 at {to}"));
    // Large arguments and results: staged and read by the other side.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let back = pg.wait(pg.rpc(
        to,
        |_, v: Vec<u8>| v.iter().rev().copied().collect::<Vec<u8>>(),
        big.clone(),
    )?)?;
    assert!(back.iter().eq(big.iter().rev()), "a 300 KB round trip");
    let sum = pg.wait(pg.rpc(
        to,
        |_, v: Vec<u8>| v.iter().map(|&b| u64::from(b)).sum::<u64>(),
        big.clone(),
    )?)?;
    assert_eq!(sum, big.iter().map(|&b| u64::from(b)).sum::<u64>());
    // Errors: serialization at the caller and at the target, a body that panics.
    let e = pg
        .rpc(to, |_, _: Unserializable| 0u8, Unserializable)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    // (postcard keeps no custom message: the error names the type and the call.)
    assert!(
        e.contains("arguments (conformance::Unserializable)") && e.contains("Serializ"),
        "{e}"
    );
    let e = pg
        .wait(pg.rpc(to, |_, ()| Unserializable, ())?)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("result (conformance::Unserializable)") && e.contains(&format!("{to}")),
        "{e}"
    );
    let e = pg
        .wait(pg.rpc(
            to,
            |_, x: u32| -> u32 {
                assert!(x == 0, "x is {x}");
                x
            },
            5,
        )?)
        .unwrap_err();
    assert!(
        matches!(e, Error::Remote { .. }) && e.to_string().contains("x is 5"),
        "{e}"
    );
    // Many at once from several threads, each waiting for its own.
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let pg = pg.clone();
            s.spawn(move || -> rgex_pgas::Result<()> {
                let fs: Vec<_> = (0..300u64)
                    .map(|i| pg.rpc(to, double, t * 1000 + i))
                    .collect::<Result<_, _>>()?;
                for (i, f) in fs.into_iter().enumerate() {
                    assert_eq!(pg.wait(f)?, 2 * (t * 1000 + i as u64));
                }
                Ok(())
            });
        }
    });
    // rpc_ff: counted at the target.
    pg.set_state(AtomicU64::new(0));
    pg.barrier()?;
    for i in 0..500u64 {
        pg.rpc_ff(
            to,
            |pg, v: u64| {
                pg.state::<AtomicU64>()
                    .expect("set")
                    .fetch_add(v, Ordering::Relaxed);
            },
            i,
        )?;
    }
    let want = (0..500u64).sum::<u64>();
    let c = pg.state::<AtomicU64>()?;
    progress_until(pg, c, want, Duration::from_secs(60), "rpc_ff")?;
    pg.barrier()?;
    assert_eq!(c.load(Ordering::Relaxed), want);
    // A replaced state is what the next lookup finds, on the thread that
    // looked the old one up last and on another; a type never set is an
    // error even right after another type was found.
    struct Gen(u64);
    pg.set_state(Gen(1));
    let old = pg.state::<Gen>()?; // still held while it is replaced
    assert_eq!(old.0, 1);
    pg.set_state(Gen(2));
    assert_eq!(pg.state::<Gen>()?.0, 2, "a replaced state");
    // The replaced one is still there for whoever borrowed it.
    assert_eq!(old.0, 1, "a replaced state, still borrowed");
    std::thread::scope(|s| {
        s.spawn(|| assert_eq!(pg.state::<Gen>().expect("set").0, 2));
    });
    let e = pg.state::<String>().err().map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|e| e.contains("no state of type alloc::string::String")),
        "{e:?}"
    );
    ok(pg, "rpc: values, strings, 300 KB arguments and results, serialization errors both sides, a panicking body, 4 threads x 300 calls, 500 rpc_ff, states replaced");
    Ok(())
}

fn dist_object_early(pg: &Pgas) -> rgex_pgas::Result<()> {
    // Rank 0 fetches rank 1's next object before rank 1 has made it:
    // rank 1 makes it only once that fetch is waiting for it.
    if pg.size() > 1 && pg.rank() == Rank(1) {
        let start = std::time::Instant::now();
        while pg.dist_fetches_waiting() == 0 {
            pg.progress()?; // the early fetch arrives and waits
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "rank 1: rank 0's early fetch never arrived"
            );
            std::thread::yield_now();
        }
        assert_eq!(pg.dist_fetches_waiting(), 1, "one early fetch waits");
    }
    let d = DistObject::new(pg, vec![pg.rank().0; 3])?;
    assert_eq!(
        pg.dist_fetches_waiting(),
        0,
        "{}: the early fetches are answered when the object is made",
        pg.rank()
    );
    if pg.size() > 1 && pg.rank() == Rank(0) {
        assert_eq!(pg.wait(d.fetch(Rank(1))?)?, vec![1; 3]);
    }
    let back = pg.wait(d.fetch(next(pg))?)?;
    assert_eq!(back, vec![next(pg).0; 3]);
    pg.barrier()?;
    ok(pg, "dist_object: fetch from every rank, a fetch before the target made its instance waits for it (seen waiting)");
    Ok(())
}

fn atomics(pg: &Pgas) -> rgex_pgas::Result<()> {
    let ad = AtomicDomain::<u64>::new(
        pg,
        OpSet::of(&[
            AtomicOp::Fadd,
            AtomicOp::Get,
            AtomicOp::Set,
            AtomicOp::Fcas,
            AtomicOp::Add,
        ]),
    )?;
    let c = DistObject::new(pg, pg.new_(0u64)?)?;
    let target = pg.wait(c.fetch(Rank(0))?)?;
    for _ in 0..500 {
        pg.wait(ad.fetch_add(target, 1)?)?;
        pg.wait(ad.add(target, 2)?)?;
    }
    pg.barrier()?;
    let total = pg.wait(ad.load(target)?)?;
    assert_eq!(total, 1500 * u64::from(pg.size()));
    pg.barrier()?;
    if pg.rank() == Rank(0) {
        assert_eq!(pg.wait(ad.compare_exchange(target, total, 7)?)?, total);
        assert_eq!(pg.wait(ad.compare_exchange(target, total, 9)?)?, 7);
    }
    pg.barrier()?;
    ok(
        pg,
        "atomics: fetch_add and add from every rank exact, load, compare_exchange",
    );
    Ok(())
}

fn executor(pg: &Pgas) -> rgex_pgas::Result<()> {
    // A thousand tasks, each an RPC, a put and a get, awaited on the test
    // suite's executor (wakers woken by the handlers), progress as the
    // executor's idle step.
    let to = next(pg);
    let area = pg.new_array::<u64>(1000, 0)?;
    let d = DistObject::new(pg, area)?;
    let theirs = pg.wait(d.fetch(to)?)?;
    let me = u64::from(pg.rank().0);
    let mut tasks: Vec<Task<'_, rgex_pgas::Result<()>>> = (0..1000u64)
        .map(|i| {
            let pg = pg.clone();
            Box::pin(async move {
                assert_eq!(pg.rpc(to, double, i)?.await?, 2 * i);
                let at = theirs.plus(i as i64)?;
                pg.rput(me * 10_000 + i, at)?.await?;
                assert_eq!(pg.rget(at)?.await?, me * 10_000 + i);
                Ok(())
            }) as Task<'_, _>
        })
        .collect();
    // And a promise's calls, its completion awaited as one more task,
    // polled first: some of its calls are still held then, so it waits
    // for its acknowledgements to wake it.
    let mut p = pg.promise()?;
    for i in 0..500u64 {
        p.rpc(to, double, i)?;
    }
    let counted = p.finalize();
    tasks.insert(
        0,
        Box::pin(async move {
            assert_eq!(counted.await?, 500, "a promise awaited on the executor");
            Ok(())
        }),
    );
    let (outs, stats) = run_all("pgas executor", tasks, || {
        pg.progress().map(|n| n > 0).unwrap_or(false)
    });
    outs.into_iter().collect::<rgex_pgas::Result<Vec<()>>>()?;
    assert!(stats.polls >= 1000);
    let (outs, _) = run_all(
        "pgas barrier",
        vec![Box::pin(pg.barrier_async()?) as Task<'_, _>],
        || pg.progress().is_ok(),
    );
    outs.into_iter().collect::<rgex_pgas::Result<Vec<()>>>()?;
    ok(
        pg,
        "executor: 1000 tasks each awaiting an rpc, an rput and an rget; a promise of 500 calls; barrier_async",
    );
    Ok(())
}

fn departure(pg: &Pgas) -> rgex_pgas::Result<()> {
    if pg.size() < 2 {
        println!("skip: departure needs two ranks");
        return Ok(());
    }
    if pg.rank() == Rank(1) {
        std::process::exit(0);
    }
    let start = Instant::now();
    loop {
        match pg.rpc(Rank(1), double, 1).map(|f| pg.wait(f)) {
            Err(e) | Ok(Err(e)) => {
                let e = e.to_string();
                assert!(e.contains("rank 1"), "the error names rank 1: {e}");
                println!("ok: an rpc to a rank that left fails naming it: {e}");
                held_calls_to_the_departed(pg);
                return promise_to_the_departed(pg);
            }
            Ok(Ok(_)) => {
                // Rank 1 answered before it left: try again.
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "rank 1 never left"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// The calls a program makes just before it ends are sent, not lost
/// with the calls held (see [`held_calls`]): rank 0 sends rank 1 `N`
/// fire-and-forget calls and ends at once, with no progress after
/// them; rank 1 must serve all `N` (it fails after 60 s otherwise).
fn farewell(pg: Pgas) -> rgex_pgas::Result<()> {
    const N: u64 = 40;
    if pg.size() < 2 {
        println!("skip: farewell needs two ranks");
        return Ok(());
    }
    pg.barrier()?;
    match pg.rank().0 {
        0 => {
            for _ in 0..N {
                pg.rpc_ff(Rank(1), bump, 1)?;
            }
            drop(pg);
        }
        1 => {
            progress_until(
                &pg,
                &BUMPS,
                N,
                Duration::from_secs(60),
                "the calls rank 0 made before it ended",
            )?;
            println!(
                "ok: farewell: the {N} calls rank 0 made just before it ended were all served"
            );
        }
        _ => {}
    }
    Ok(())
}

/// Calls made back to back to a rank that left (all but the first are
/// held, see `held_calls`): each fails naming it, none waits forever.
fn held_calls_to_the_departed(pg: &Pgas) {
    let calls: Vec<_> = (0..5).map(|i| pg.rpc(Rank(1), double, i)).collect();
    for (i, c) in calls.into_iter().enumerate() {
        match c.map(|f| pg.wait(f)) {
            Err(e) | Ok(Err(e)) => {
                let e = e.to_string();
                assert!(
                    e.contains("rank 1"),
                    "held call {i}: the error names rank 1: {e}"
                );
            }
            Ok(Ok(v)) => panic!("held call {i} to a rank that left was answered: {v}"),
        }
    }
    println!("ok: calls held for a rank that left fail naming it");
}

/// A promise's calls to a rank that left: each fails at once naming it,
/// or is counted, and then the promise fails naming it.
fn promise_to_the_departed(pg: &Pgas) -> rgex_pgas::Result<()> {
    let mut p = pg.promise()?;
    let mut refused = 0;
    for i in 0..5u64 {
        if let Err(e) = p.rpc(Rank(1), double, i) {
            let e = e.to_string();
            assert!(
                e.contains("rank 1"),
                "call {i}: the error names rank 1: {e}"
            );
            refused += 1;
        }
    }
    assert_eq!(p.calls() + refused, 5, "a call refused is not counted");
    match pg.wait(p.finalize()) {
        Ok(n) => assert!(
            n == 0 && refused == 5,
            "a promise's {n} calls to a rank that left were answered"
        ),
        Err(e) => {
            let e = e.to_string();
            assert!(
                e.contains("rank 1"),
                "the promise's error names rank 1: {e}"
            );
        }
    }
    println!(
        "ok: a promise's calls to a rank that left fail naming it ({refused} of 5 refused at once)"
    );
    Ok(())
}

/// Calls a promise counted, run on this rank.
static PROMISED: AtomicU64 = AtomicU64::new(0);

fn promised(_: &Pgas, n: u64) -> bool {
    PROMISED.fetch_add(n, Ordering::Relaxed);
    true
}

/// Promises: every rank makes `N` counted calls to every rank (itself
/// too) from two threads, each with its own promise, plus one large call
/// (sent on its own, staged where it passes a Medium); each promise
/// resolves to its count, and every call ran exactly once. Then the
/// errors: a body that panics fails its promise, naming its target, once
/// the others have run; arguments that do not serialize fail the call
/// at once and are not counted; a promise with no calls is done at once;
/// a promise dropped unfinalized loses nothing else.
fn promises(pg: &Pgas) -> rgex_pgas::Result<()> {
    const N: u64 = 300;
    let n = u64::from(pg.size());
    let made = N * n + 1;
    std::thread::scope(|s| -> rgex_pgas::Result<()> {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| -> rgex_pgas::Result<u64> {
                    let mut p = pg.promise()?;
                    for _ in 0..N {
                        for r in 0..pg.size() {
                            p.rpc(Rank(r), promised, 1)?;
                        }
                    }
                    p.rpc(
                        next(pg),
                        |_, v: serde_bytes::ByteBuf| {
                            PROMISED.fetch_add(1, Ordering::Relaxed);
                            v.len()
                        },
                        serde_bytes::ByteBuf::from(vec![7u8; 100_000]),
                    )?;
                    assert_eq!(p.calls(), made);
                    pg.wait(p.finalize())
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().expect("promise thread")?, made, "calls completed");
        }
        Ok(())
    })?;
    pg.barrier()?;
    assert_eq!(
        PROMISED.load(Ordering::Relaxed),
        2 * made,
        "{}: every promised call here ran once",
        pg.rank()
    );
    let to = next(pg);
    let mut p = pg.promise()?;
    for i in 0..10u64 {
        p.rpc(
            to,
            |_, x: u64| -> u64 {
                assert!(x != 5, "x is {x}");
                x
            },
            i,
        )?;
    }
    let e = pg.wait(p.finalize()).unwrap_err();
    assert!(
        matches!(e, Error::Remote { target, .. } if target == to)
            && e.to_string().contains("x is 5"),
        "{e}"
    );
    let mut p = pg.promise()?;
    p.rpc(to, double, 1)?;
    let e = p.rpc(to, |_, _: Unserializable| 0u8, Unserializable);
    assert!(e.is_err(), "an unserializable argument is refused");
    assert!(p.rpc(Rank(pg.size()), double, 1).is_err(), "no such rank");
    assert_eq!(p.calls(), 1);
    assert_eq!(pg.wait(p.finalize())?, 1);
    assert_eq!(pg.wait(pg.promise()?.finalize())?, 0, "no calls");
    let mut dropped = pg.promise()?;
    dropped.rpc(to, double, 2)?;
    drop(dropped);
    assert_eq!(
        pg.wait(pg.rpc(to, double, 4)?)?,
        8,
        "calls after a dropped promise"
    );
    pg.barrier()?;
    ok(pg, "promises: every counted call ran once, from two threads; a failure names its target; refused calls are not counted");
    Ok(())
}

/// Calls counted by `bump` on this rank.
static BUMPS: AtomicU64 = AtomicU64::new(0);

fn bump(_: &Pgas, n: u64) {
    BUMPS.fetch_add(n, Ordering::Relaxed);
}

/// Make progress until `served` reaches `want` (failing after `limit`),
/// then check that it is exactly `want`: no call ran twice.
fn progress_until(
    pg: &Pgas,
    served: &AtomicU64,
    want: u64,
    limit: Duration,
    what: &str,
) -> rgex_pgas::Result<()> {
    let start = Instant::now();
    while served.load(Ordering::Relaxed) < want {
        pg.progress()?;
        assert!(
            start.elapsed() < limit,
            "{}: {what}: {} of {want} calls served after {limit:?}",
            pg.rank(),
            served.load(Ordering::Relaxed)
        );
    }
    assert_eq!(
        served.load(Ordering::Relaxed),
        want,
        "{what}: no call twice"
    );
    Ok(())
}

/// The flow-control window: a target that does not make progress holds
/// at most one window of work per sender, and a flood of every rank to
/// every rank drains.
fn window(pg: &Pgas) -> rgex_pgas::Result<()> {
    if pg.size() < 2 {
        println!("skip: window needs two ranks");
        return Ok(());
    }
    let w = u64::from(pg.window());
    let calls = 4 * w + 3;
    let slow = Rank(1);
    let senders = u64::from(pg.size()) - 1;
    pg.barrier()?;
    if pg.rank() == slow {
        // Compute, with no progress, while the others call.
        std::thread::sleep(Duration::from_millis(300));
        progress_until(
            pg,
            &BUMPS,
            senders * calls,
            Duration::from_secs(120),
            "a slow target",
        )?;
        let peak = pg.work_peak() as u64;
        assert!(
            peak <= senders * w,
            "{slow}: {peak} calls waited at once, more than {senders} senders x window {w}"
        );
        println!("ok: window: a target that computed for 300 ms held at most {peak} calls ({senders} senders x window {w} allowed), served all {}", senders * calls);
    } else {
        for i in 0..calls {
            // Half with results (awaited at the end), half fire-and-forget.
            if i % 2 == 0 {
                pg.rpc_ff(slow, bump, 1)?;
            } else {
                let f = pg.rpc(
                    slow,
                    |_pg: &Pgas, n: u64| {
                        BUMPS.fetch_add(n, Ordering::Relaxed);
                        n
                    },
                    1,
                )?;
                drop(f);
            }
            let out = u64::from(pg.outstanding(slow));
            assert!(
                out <= w,
                "{}: {out} calls outstanding to {slow}, window {w}",
                pg.rank()
            );
        }
    }
    pg.barrier()?;
    BUMPS.store(0, Ordering::Relaxed);
    pg.barrier()?;
    // Every rank floods every rank (itself too) before it serves anything:
    // each waits for room by serving the others.
    let n = pg.size();
    for i in 0..calls {
        for r in 0..n {
            pg.rpc_ff(Rank((pg.rank().0 + r + i as u32) % n), bump, 1)?;
        }
    }
    progress_until(
        pg,
        &BUMPS,
        calls * u64::from(n),
        Duration::from_secs(120),
        "an all-to-all flood",
    )?;
    pg.barrier()?;
    ok(
        pg,
        &format!("window: every rank sent {calls} calls to every rank with window {w}: all served, none twice, no hang"),
    );
    Ok(())
}

/// Wait (through rgex-pgas) until this rank's word at `p` is set (read
/// by atomic loads: a plain get need not see a put on scc's non-coherent
/// memory without a synchronization).
fn wait_for_word(pg: &Pgas, p: GlobalPtr<u64>) -> u64 {
    let ad = pg
        .state::<AtomicDomain<u64>>()
        .expect("the domain is kept as state");
    let start = Instant::now();
    loop {
        let v = ad
            .load(p)
            .and_then(|f| pg.wait(f))
            .expect("read my own word");
        if v != 0 {
            return v;
        }
        // The load of this rank's own word is ready at once: poll, so the
        // caller's store (an active message where the atomics are rgex's
        // reference ones) is received.
        pg.progress().expect("progress inside a body");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the caller's word never came: a result held for the batch's end was not sent before this body waited"
        );
    }
}

/// Results held for the end of a batch (`answers`) go out before a body
/// of the batch waits: rank 0 calls rank 1 twice, A (a plain result)
/// then B (a body that waits until rank 0 writes a word, which rank 0
/// does only once it has A's result). Rank 1 sleeps without progress
/// first, so A and B are served in one batch; if A's result waited for
/// the batch's end, both ranks would wait forever (B fails after 30 s).
fn held_results(pg: &Pgas) -> rgex_pgas::Result<()> {
    if pg.size() < 2 {
        return Ok(()); // the caller would be the body that waits
    }
    let word = pg.new_::<u64>(0)?;
    let words = DistObject::new(pg, word)?;
    let theirs = pg.wait(words.fetch(Rank(1))?)?;
    pg.set_state(AtomicDomain::<u64>::new(
        pg,
        OpSet::of(&[AtomicOp::Get, AtomicOp::Set]),
    )?);
    pg.barrier()?;
    match pg.rank().0 {
        0 => {
            let a = pg.rpc(Rank(1), |_, x: u64| x + 1, 41)?;
            let b = pg.rpc(Rank(1), wait_for_word, theirs)?;
            assert_eq!(pg.wait(a)?, 42);
            let ad = pg.state::<AtomicDomain<u64>>()?;
            pg.wait(ad.store(theirs, 7)?)?;
            assert_eq!(pg.wait(b)?, 7);
        }
        1 => std::thread::sleep(Duration::from_millis(200)),
        _ => {}
    }
    pg.barrier()?;
    ok(pg, "held results: a body that waits for its caller gets what the caller does once it has an earlier result of the same batch");
    Ok(())
}

/// The calls rank `r` received from its left neighbour, in the order
/// they ran (see [`held_calls`]).
#[derive(Default)]
struct CallLog(std::sync::Mutex<Vec<u64>>);

fn log_call(pg: &Pgas, (n, pad): (u64, Vec<u8>)) -> usize {
    let log = pg.state::<CallLog>().expect("the log is set first");
    log.0.lock().expect("log").push(n);
    pad.len()
}

/// Calls served here by [`held_calls`]'s discharge check.
static DISCHARGED: AtomicU64 = AtomicU64::new(0);

/// Small calls wait in a per-target buffer (`outbox`) until the caller's
/// next progress: they run in the order made, a large call sent on its
/// own among them included, and `discharge` sends them before the caller
/// waits by other means (here rgex's own barrier, which makes no
/// rgex-pgas progress: without the discharge rank 1 would wait 120 s for
/// calls rank 0 still holds, and fail).
fn held_calls(pg: &Pgas) -> rgex_pgas::Result<()> {
    pg.set_state(CallLog::default());
    pg.barrier()?;
    // Order: 10 small, one of 2 KiB (not held: sent after the held ones),
    // 10 small, to the right neighbour (this rank itself on one rank).
    let to = next(pg);
    let mut calls = Vec::new();
    for n in 0..21u64 {
        let pad = vec![n as u8; if n == 10 { 2048 } else { 8 }];
        calls.push(pg.rpc(to, log_call, (n, pad))?);
    }
    for (n, c) in calls.into_iter().enumerate() {
        assert_eq!(pg.wait(c)?, if n == 10 { 2048 } else { 8 });
    }
    pg.barrier()?;
    let got = pg.state::<CallLog>()?.0.lock().expect("log").clone();
    assert_eq!(
        got,
        (0..21).collect::<Vec<_>>(),
        "{}: calls ran out of order",
        pg.rank()
    );
    pg.barrier()?;
    if pg.size() >= 2 {
        const N: u64 = 50;
        match pg.rank().0 {
            0 => {
                for _ in 0..N {
                    pg.rpc_ff(
                        Rank(1),
                        |_, n: u64| {
                            DISCHARGED.fetch_add(n, Ordering::Relaxed);
                        },
                        1,
                    )?;
                }
                pg.discharge()?;
                pg.client().barrier()?;
                pg.client().barrier()?;
            }
            1 => {
                pg.client().barrier()?;
                progress_until(
                    pg,
                    &DISCHARGED,
                    N,
                    Duration::from_secs(120),
                    "the calls rank 0 discharged",
                )?;
                pg.client().barrier()?;
            }
            _ => {
                pg.client().barrier()?;
                pg.client().barrier()?;
            }
        }
    }
    pg.barrier()?;
    ok(pg, "held calls: run in the order made (a large one among them too); discharge sends them before a wait by other means");
    Ok(())
}

/// The bytes of the result of [`bytes_of_len`] that cannot travel in a
/// message: a target must stage it in its heap for the caller to read.
const LARGE: u64 = 2 << 20;

/// `n` bytes of 7 (the call: a result too large for a message).
fn bytes_of_len(_: &Pgas, n: u64) -> Vec<u8> {
    vec![7u8; n as usize]
}

/// Set by rank 0's last call to rank 1 in [`unstageable`].
static UNSTAGED_DONE: AtomicU64 = AtomicU64::new(0);

/// Calls of [`unstageable`] served on rank 1.
static UNSTAGED_SERVED: AtomicU64 = AtomicU64::new(0);

/// Poll `fut`, making progress between polls, until it resolves; fail
/// (naming `what`) after a bounded number of rounds (an idle round
/// sleeps 1 ms, so about a minute of waiting for nothing).
fn wait_bounded<T>(
    pg: &Pgas,
    fut: impl std::future::Future<Output = rgex_pgas::Result<T>>,
    what: &str,
) -> rgex_pgas::Result<T> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..60_000 {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        if pg.progress()? == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    panic!("{}: {what} never resolved", pg.rank());
}

/// Fill this rank's heap: allocations of halving sizes until not even
/// 16 bytes are left (at most a few per size).
fn fill_heap(pg: &Pgas) -> rgex_pgas::Result<Vec<GlobalPtr<u8>>> {
    let mut held = Vec::new();
    let mut len = pg.client().endpoint().segment().len();
    while len >= 16 {
        match pg.new_array::<u8>(len, 0) {
            Ok(p) => held.push(p),
            Err(Error::OutOfHeap { .. }) => len /= 2,
            Err(e) => return Err(e),
        }
    }
    Ok(held)
}

/// A target that cannot stage a call's large result answers the call as
/// failed, naming itself and why, and goes on: rank 1 fills its heap,
/// and rank 0's rpc returning 2 MiB (and its fetch of a 2 MiB
/// dist_object there) resolve to `Error::Remote` naming rank 1 and the
/// heap, within a bounded wait; rank 1's own progress and barrier stay
/// Ok, and nothing is lost there. A promise's calls and rpc_ff (whose
/// results are not sent) still run. A large argument that its caller
/// cannot stage (rank 1's) is refused at once by rpc, rpc_ff and a
/// promise, naming the caller and its heap. Once rank 1 frees its heap,
/// the same calls succeed.
fn unstageable(pg: &Pgas) -> rgex_pgas::Result<()> {
    if pg.size() < 2 {
        return Ok(());
    }
    let big = DistObject::new(
        pg,
        serde_bytes::ByteBuf::from(vec![pg.rank().0 as u8; LARGE as usize]),
    )?;
    let count = |_: &Pgas, v: serde_bytes::ByteBuf| {
        UNSTAGED_SERVED.fetch_add(1, Ordering::Relaxed);
        v.len() as u64
    };
    let large_arg = || serde_bytes::ByteBuf::from(vec![1u8; LARGE as usize]);
    let held = if pg.rank() == Rank(1) {
        fill_heap(pg)?
    } else {
        Vec::new()
    };
    pg.barrier()?;
    match pg.rank().0 {
        0 => {
            let Err(e) = wait_bounded(
                pg,
                pg.rpc(Rank(1), bytes_of_len, LARGE)?,
                "an rpc whose target cannot stage its result",
            ) else {
                panic!("a result rank 1 cannot stage was answered");
            };
            assert!(
                matches!(
                    e,
                    Error::Remote {
                        target: Rank(1),
                        ..
                    }
                ) && e.to_string().contains("rank 1")
                    && e.to_string().contains("heap"),
                "{e}"
            );
            let Err(e) = wait_bounded(pg, big.fetch(Rank(1))?, "a dist_object fetch") else {
                panic!("a dist_object rank 1 cannot stage was answered");
            };
            assert!(
                matches!(
                    e,
                    Error::Remote {
                        target: Rank(1),
                        ..
                    }
                ) && e.to_string().contains("heap"),
                "{e}"
            );
            // Results not sent back: nothing to stage.
            let mut p = pg.promise()?;
            p.rpc(Rank(1), bytes_of_len, LARGE)?;
            p.rpc(Rank(1), count, large_arg())?;
            assert_eq!(wait_bounded(pg, p.finalize(), "a promise")?, 2);
            pg.rpc_ff(
                Rank(1),
                |_, v: serde_bytes::ByteBuf| {
                    UNSTAGED_SERVED.fetch_add(v.len() as u64, Ordering::Relaxed);
                },
                large_arg(),
            )?;
            // An argument staged here, read by the full target.
            let n = wait_bounded(pg, pg.rpc(Rank(1), count, large_arg())?, "a large argument")?;
            assert_eq!(n, LARGE);
            pg.rpc_ff(
                Rank(1),
                |_, ()| {
                    UNSTAGED_DONE.store(1, Ordering::Relaxed);
                },
                (),
            )?;
        }
        1 => {
            // The caller cannot stage its large argument: refused at once.
            for e in [
                pg.rpc(Rank(0), count, large_arg()).err(),
                pg.rpc_ff(Rank(0), |_, _: serde_bytes::ByteBuf| {}, large_arg())
                    .err(),
            ] {
                let e = e
                    .expect("a large argument the caller cannot stage is refused")
                    .to_string();
                assert!(
                    e.contains("rank 1")
                        && e.contains("cannot allocate")
                        && e.contains("arguments"),
                    "{e}"
                );
            }
            let mut p = pg.promise()?;
            assert!(p.rpc(Rank(0), count, large_arg()).is_err());
            assert_eq!(p.calls(), 0, "a refused call is not counted");
            assert_eq!(pg.wait(p.finalize())?, 0);
            // Serve rank 0's calls until its last: every progress Ok.
            let mut idle = 0u32;
            while UNSTAGED_DONE.load(Ordering::Relaxed) == 0 {
                match pg.progress() {
                    Ok(0) => {
                        idle += 1;
                        assert!(idle < 60_000, "rank 1: rank 0's last call never came");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(_) => {}
                    Err(e) => panic!("rank 1's own progress failed, answering another's call: {e}"),
                }
            }
            assert_eq!(UNSTAGED_SERVED.load(Ordering::Relaxed), 2 + LARGE);
            assert_eq!(pg.lost_failures(), 0, "every failure reached its caller");
        }
        _ => {}
    }
    pg.barrier()?;
    for p in held {
        pg.delete_(p)?;
    }
    pg.barrier()?;
    if pg.rank() == Rank(0) {
        let v = wait_bounded(pg, pg.rpc(Rank(1), bytes_of_len, LARGE)?, "the same rpc")?;
        assert!(v.len() == LARGE as usize && v.iter().all(|&b| b == 7));
        let v = wait_bounded(pg, big.fetch(Rank(1))?, "the same fetch")?;
        assert!(v.len() == LARGE as usize && v.iter().all(|&b| b == 1));
    }
    if pg.rank() == Rank(1) {
        let n = wait_bounded(
            pg,
            pg.rpc(Rank(0), count, large_arg())?,
            "the large argument",
        )?;
        assert_eq!(n, LARGE);
    }
    pg.barrier()?;
    ok(pg, "answers: a target that cannot stage a result answers rpc and fetch with Error::Remote naming it and its heap, its own progress and barrier Ok; promises and rpc_ff unaffected; a large argument its caller cannot stage is refused at once; after the heap is freed the same calls succeed");
    Ok(())
}

/// rgex-pgas's heap leaves the raw range (`Pgas::raw_range`) to raw rgex
/// RMA through `pg.client()`: every allocation lies past it, and a
/// client that overwrites the whole range on its neighbour with raw
/// puts leaves the neighbour's heap values intact.
fn raw_range(pg: &Pgas) -> rgex_pgas::Result<()> {
    let raw = pg.raw_range();
    let want = match std::env::var("RGEX_PGAS_RAW") {
        Ok(s) => {
            s.trim()
                .trim_end_matches(['K', 'k'])
                .parse::<u64>()
                .expect("a setting in K")
                << 10
        }
        Err(_) => 64 << 10,
    };
    assert_eq!(raw, 0..want, "{}: the raw range", pg.rank());
    let mut ptrs = Vec::new();
    for i in 0..64u64 {
        let p = pg.new_array::<u64>(1 + i as usize * 7, i)?;
        ptrs.push(p);
    }
    for (i, p) in ptrs.iter().enumerate() {
        assert!(
            p.offset() >= raw.end,
            "{}: allocation {i} at {:#x} lies in the raw range {raw:?}",
            pg.rank(),
            p.offset()
        );
    }
    pg.barrier()?;
    let pattern = vec![0xA5u8; (raw.end - raw.start) as usize];
    if !pattern.is_empty() {
        pg.client().endpoint().put(
            rgex::GlobalAddr::new(next(pg), raw.start),
            &pattern,
            rgex::Flags::empty(),
        )?;
    }
    pg.barrier()?;
    // Read from this rank's own memory: what new_array wrote there, and
    // the neighbour's raw puts after the barrier. (An rget to itself on
    // scc goes through the emulated core's caches, which can still hold
    // a line an earlier check read from a block the heap has reused.)
    let seg = pg.client().endpoint().segment();
    for (i, p) in ptrs.iter().enumerate() {
        let mut got = vec![0u8; (1 + i * 7) * 8];
        seg.read(p.offset(), &mut got)?;
        assert!(
            got.chunks_exact(8)
                .all(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")) == i as u64),
            "{}: heap allocation {i} at {:#x} overwritten by raw puts into the raw range",
            pg.rank(),
            p.offset()
        );
    }
    let mut back = vec![0u8; pattern.len()];
    pg.client().endpoint().get(
        &mut back,
        rgex::GlobalAddr::new(pg.rank(), raw.start),
        rgex::Flags::empty(),
    )?;
    assert!(
        back == pattern,
        "{}: the raw range holds what the left neighbour put",
        pg.rank()
    );
    for p in ptrs {
        pg.delete_(p)?;
    }
    pg.barrier()?;
    ok(pg, &format!("raw range: offsets {}..{} left to raw rgex RMA, no heap allocation there, raw puts over it leave the heap intact", raw.start, raw.end));
    Ok(())
}

fn main() -> rgex_pgas::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let pg = rgex_pgas::init()?;
    match what.as_str() {
        "all" => {
            heap(&pg)?;
            raw_range(&pg)?;
            rma(&pg)?;
            vis(&pg)?;
            rpc(&pg)?;
            held_results(&pg)?;
            held_calls(&pg)?;
            promises(&pg)?;
            unstageable(&pg)?;
            dist_object_early(&pg)?;
            atomics(&pg)?;
            executor(&pg)?;
            pg.barrier()?;
            ok(&pg, &format!("all checks on {} ranks", pg.size()));
        }
        "departure" => departure(&pg)?,
        "window" => window(&pg)?,
        "farewell" => return farewell(pg),
        other => panic!("unknown check {other:?}: all, departure, window or farewell"),
    }
    Ok(())
}
