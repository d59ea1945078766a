//! The scc conduit in a job of one rank (no launcher): AMs, RMA, atomics
//! and epochs to itself through the emulation, bounded waits that fail
//! with errors naming what they waited for, setup errors, and nothing left
//! in /dev/shm. Multi-rank runs are in the rgex-tests crate
//! (`tests/tests/scc.rs`) and the conformance suite.

use rgex_core::bootstrap::{JobEnv, SingleRank};
use rgex_core::conduit::{AtomicOp, AtomicRequest, AtomicType, OpSet};
use rgex_core::{
    Category, Claim, Conduit, Direction, Error, OpCounter, PollSet, Prepare, Rank, SendSlot,
};
use rgex_scc::emu::CheckMode;
use rgex_scc::{SccConduit, SccConfig};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn env(size: u32) -> JobEnv {
    static N: AtomicU32 = AtomicU32::new(0);
    JobEnv {
        rank: 0,
        size,
        socket: None,
        job: format!(
            "scctest{}x{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ),
        polite: true,
    }
}

fn cfg() -> SccConfig {
    SccConfig {
        segment_len: 64 << 10,
        timeout: Duration::from_secs(1),
        check: CheckMode::Report,
        ..SccConfig::default()
    }
}

fn conduit() -> (SccConduit, String) {
    let e = env(1);
    let c = SccConduit::new(&e, Box::new(SingleRank), cfg()).unwrap();
    (c, e.job)
}

fn no_shm_left(job: &str) {
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|d| d.ok())
        .filter(|d| d.file_name().to_string_lossy().contains(job))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn spec(dir: Direction, category: Category, most: usize, long_offset: u64) -> Prepare {
    Prepare {
        peer: Rank(0),
        dir,
        category,
        nargs: 2,
        least: most,
        most,
        long_offset,
    }
}

/// Claim through the SPI, as the AM layer does, and hold the claim as the
/// slot commit and cancel take.
fn prepare(c: &SccConduit, spec: Prepare) -> rgex_core::Result<SendSlot> {
    let mut refused = None;
    match c.try_prepare(&spec, &mut refused) {
        Some(claim) => Ok(SendSlot::new(&spec, claim)),
        None => Err(Claim::refusal(refused, c.name())),
    }
}

/// Publish a slot from [`prepare`].
fn commit(c: &SccConduit, slot: SendSlot, handler: u8, args: &[u32], len: usize) {
    // SAFETY: every slot these tests pass comes from `prepare` on `c` and
    // is committed or cancelled once.
    unsafe { c.commit(slot, handler, args, len) }
}

/// Cancel a slot from [`prepare`].
fn cancel(c: &SccConduit, slot: SendSlot) {
    // SAFETY: as in `commit`.
    unsafe { c.cancel(slot) }
}

fn fill(slot: &SendSlot, data: &[u8]) {
    assert!(slot.granted >= data.len());
    // SAFETY: the conduit granted `slot.granted` writable bytes at `buf`.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), slot.buf.as_ptr(), data.len()) };
}

#[test]
fn messages_to_self_in_every_category() {
    let (c, job) = conduit();
    no_shm_left(&job);
    assert_eq!((c.name(), c.size(), c.rank()), ("scc", 1, Rank(0)));
    assert!(c.max_medium(Rank(0), 16) >= 512);
    assert!(c.locality().mapped_segment(Rank(0)).is_none() && c.rma_native(Rank(0)));

    let s = prepare(&c, spec(Direction::Request, Category::Medium, 600, 0)).unwrap();
    fill(&s, &[7; 600]);
    commit(&c, s, 9, &[1, 2], 600);
    let s = prepare(&c, spec(Direction::Request, Category::Long, 3000, 100)).unwrap();
    fill(&s, &[8; 3000]);
    commit(&c, s, 10, &[3], 3000);
    let s = prepare(&c, spec(Direction::Reply, Category::Short, 0, 0)).unwrap();
    commit(&c, s, 11, &[4, 5], 0);
    let s = prepare(&c, spec(Direction::Request, Category::Short, 0, 0)).unwrap();
    cancel(&c, s);

    let mut got = Vec::new();
    let n = c.poll(PollSet::All, &mut |d| {
        got.push((
            d.dir,
            d.category,
            d.handler,
            d.args.to_vec(),
            d.payload.to_vec(),
        ))
    });
    assert_eq!(n, 4, "three messages and a cancelled one");
    // Replies first.
    assert_eq!(
        got[0],
        (Direction::Reply, Category::Short, 11, vec![4, 5], vec![])
    );
    assert_eq!(got[1].2, 9);
    assert_eq!(got[1].4, vec![7; 600]);
    assert_eq!((got[2].2, got[2].3.clone()), (10, vec![3]));
    assert_eq!(got[2].4, vec![8; 3000]);
    // The Long landed in the segment (memory holds it: it was drained).
    let mut b = [0u8; 3000];
    c.segment().read(100, &mut b).unwrap();
    assert_eq!(b, [8; 3000]);
    assert!(c.stale_reads().is_empty());
    c.check_report().unwrap();
}

#[test]
fn full_slots_would_block_with_nothing_sent() {
    let (c, _) = conduit();
    let depth = c.config().depth as usize;
    for i in 0..depth {
        let s = prepare(&c, spec(Direction::Request, Category::Short, 0, 0)).unwrap();
        commit(&c, s, 1, &[i as u32], 0);
    }
    let e = prepare(&c, spec(Direction::Request, Category::Short, 0, 0)).unwrap_err();
    assert!(
        e.is_would_block() && e.to_string().contains("rank 0"),
        "{e}"
    );
    // Replies have slots of their own.
    let s = prepare(&c, spec(Direction::Reply, Category::Short, 0, 0)).unwrap();
    commit(&c, s, 2, &[], 0);
    assert_eq!(c.poll(PollSet::RepliesOnly, &mut |_| {}), 1);
    let mut seen = Vec::new();
    assert_eq!(c.poll(PollSet::All, &mut |d| seen.push(d.args[0])), depth);
    assert_eq!(seen, (0..depth as u32).collect::<Vec<_>>());
    // A channel stuck full for longer than the timeout is an error.
    for _ in 0..depth {
        let s = prepare(&c, spec(Direction::Request, Category::Short, 0, 0)).unwrap();
        commit(&c, s, 1, &[0], 0);
    }
    let start = std::time::Instant::now();
    let e = loop {
        match prepare(&c, spec(Direction::Request, Category::Short, 0, 0)) {
            Err(e) if e.is_would_block() => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break e,
            Ok(_) => panic!("a slot appeared"),
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never timed out");
    };
    assert!(e.to_string().contains("is it polling"), "{e}");
}

#[test]
fn puts_gets_and_atomics_on_self() {
    let (c, _) = conduit();
    let (lc, rc, done) = (OpCounter::new(0), OpCounter::new(0), OpCounter::new(0));
    let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    // SAFETY: `data` outlives the call, which completes before returning.
    unsafe { c.try_put(Rank(0), 8, data.as_ptr(), data.len(), &lc, &rc) }.unwrap();
    assert!(rc.is_done() && lc.is_done());
    let mut back = vec![0u8; 5000];
    // SAFETY: `back` is ours and outlives the call, complete at return.
    unsafe { c.try_get(back.as_mut_ptr(), Rank(0), 8, 5000, &done) }.unwrap();
    assert!(done.is_done());
    assert_eq!(back, data);
    // SAFETY: as above; the range is past the segment: refused.
    let e = unsafe { c.try_put(Rank(0), 65530, data.as_ptr(), 8, &lc, &rc) }.unwrap_err();
    assert!(matches!(e, Error::OutOfSegment { .. }), "{e}");

    assert!(c.atomic_offload(AtomicType::F64, OpSet::ALL));
    let fetched = Arc::new(AtomicU64::new(0));
    let req = |op, a, b| AtomicRequest {
        target: Rank(0),
        offset: 16 << 10,
        ty: AtomicType::U32,
        op,
        operand1: a,
        operand2: b,
        acquire: true,
        release: true,
    };
    c.atomic_start(&req(AtomicOp::Set, 40, 0), &fetched, &done)
        .unwrap();
    c.atomic_start(&req(AtomicOp::Fadd, 2, 0), &fetched, &done)
        .unwrap();
    assert_eq!(fetched.load(Ordering::Relaxed), 40);
    c.atomic_start(&req(AtomicOp::Fcas, 42, 7), &fetched, &done)
        .unwrap();
    assert_eq!(fetched.load(Ordering::Relaxed), 42);
    c.atomic_start(&req(AtomicOp::Get, 0, 0), &fetched, &done)
        .unwrap();
    assert_eq!(fetched.load(Ordering::Relaxed), 7);
    assert!(done.is_done());
    assert_eq!(c.segment().read_u64(16 << 10).unwrap() as u32, 7);
    assert_eq!(c.counters().lock_acquires, 4, "one test-and-set per atomic");
    assert!(c.stale_reads().is_empty());
}

/// An atomic whose target's test-and-set register is held does not wait
/// for it (the SPI's `atomic_start` never waits, and waiting would hold
/// this rank's lock): would-block at once with nothing counted, changed or
/// fetched; retried past the timeout, an error naming the register; once
/// the register is free, the atomic goes.
#[test]
fn atomic_on_a_held_register_would_block() {
    use rgex_scc::emu::LockId;
    let (c, _) = conduit();
    let done = OpCounter::new(0);
    let fetched = Arc::new(AtomicU64::new(99));
    let req = AtomicRequest {
        target: Rank(0),
        offset: 8 << 10,
        ty: AtomicType::U64,
        op: AtomicOp::Fadd,
        operand1: 5,
        operand2: 0,
        acquire: true,
        release: true,
    };
    // Another holder of rank 0's register (a core in its critical section).
    assert!(c.with_core(|core| core.tas_try(LockId(0))).unwrap());
    let e = c.atomic_start(&req, &fetched, &done).unwrap_err();
    assert!(e.is_would_block(), "{e}");
    assert!(e.to_string().contains("test-and-set register"), "{e}");
    assert!(done.is_done(), "a refused atomic was counted");
    assert_eq!(fetched.load(Ordering::Relaxed), 99);
    assert_eq!(c.segment().read_u64(8 << 10).unwrap(), 0);
    // Still held through every retry: after the timeout (1 s here), an
    // error naming what it waited for. Bounded by 1000 tries of 10 ms.
    let mut last = e;
    for _ in 0..1000 {
        match c.atomic_start(&req, &fetched, &done) {
            Err(e) if e.is_would_block() => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                last = e;
                break;
            }
            Ok(()) => panic!("an atomic went while the register was held"),
        }
    }
    let t = last.to_string();
    assert!(
        !last.is_would_block()
            && t.contains("RGEX_SCC_TIMEOUT")
            && t.contains("test-and-set register of rank 0"),
        "{t}"
    );
    // Freed: the atomic goes, and fetches what was there.
    c.with_core(|core| core.tas_release(LockId(0))).unwrap();
    c.atomic_start(&req, &fetched, &done).unwrap();
    assert!(done.is_done());
    assert_eq!(fetched.load(Ordering::Relaxed), 0);
    assert_eq!(c.segment().read_u64(8 << 10).unwrap(), 5);
}

#[test]
fn epochs_to_self_and_their_bounded_waits() {
    let (c, _) = conduit();
    let me = [Rank(0)];
    let (lc, rc) = (OpCounter::new(0), OpCounter::new(0));
    let v = [1u8; 8];

    // Start does not wait; the first access does (would-block), then times
    // out naming the post it waited for.
    c.start(&me).unwrap();
    // SAFETY: `v` outlives the calls, which complete before returning.
    let e = unsafe { c.try_put(Rank(0), 0, v.as_ptr(), 8, &lc, &rc) }.unwrap_err();
    assert!(e.is_would_block(), "{e}");
    let start = std::time::Instant::now();
    let e = loop {
        // SAFETY: as above.
        match unsafe { c.try_put(Rank(0), 0, v.as_ptr(), 8, &lc, &rc) } {
            Err(e) if e.is_would_block() => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break e,
            Ok(()) => panic!("accessed before the post"),
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never timed out");
    };
    assert!(e.to_string().contains("to post"), "{e}");
    let e = c.complete().unwrap_err();
    assert!(e.to_string().contains("has not posted"), "{e}");

    // Post: the access goes, complete and wait close both epochs.
    c.post(&me).unwrap();
    // SAFETY: as above.
    unsafe { c.try_put(Rank(0), 0, v.as_ptr(), 8, &lc, &rc) }.unwrap();
    c.complete().unwrap();
    assert!(c.test().unwrap());
    assert_eq!(c.segment().read_u64(0).unwrap(), u64::from_le_bytes(v));

    // Misuse is a clear error; a wait nobody completes times out.
    assert!(c
        .complete()
        .unwrap_err()
        .to_string()
        .contains("start first"));
    assert!(c.test().unwrap_err().to_string().contains("post first"));
    assert!(c.post(&[Rank(3)]).is_err());
    c.post(&me).unwrap();
    assert!(c.post(&me).unwrap_err().to_string().contains("still open"));
    let e = c.wait().unwrap_err();
    assert!(e.to_string().contains("counter"), "{e}");
    assert!(c.stale_reads().is_empty());
}

#[test]
fn setup_errors_are_clear() {
    let e = SccConduit::new(&env(49), Box::new(SingleRank), cfg()).unwrap_err();
    assert!(e.to_string().contains("at most 48"), "{e}");
    let bad = SccConfig {
        max_medium: 100,
        ..cfg()
    };
    assert!(SccConduit::new(&env(1), Box::new(SingleRank), bad).is_err());
    let bad = SccConfig { depth: 3, ..cfg() };
    let e = SccConduit::new(&env(1), Box::new(SingleRank), bad).unwrap_err();
    assert!(e.to_string().contains("power of two"), "{e}");
}

#[test]
fn the_conduit_is_reachable_by_downcasting() {
    let (c, job) = conduit();
    let dynamic: Arc<dyn Conduit> = Arc::new(c);
    let scc = dynamic
        .as_any()
        .and_then(|a| a.downcast_ref::<SccConduit>())
        .expect("an SccConduit");
    assert_eq!(scc.plan().cores(), 1);
    drop(dynamic);
    no_shm_left(&job);
}
