//! The epoch protocol (post / start / complete / wait) on one in-process
//! chip, cores stepped by hand: data put and got in repeated epochs with
//! the checker on, the per-pair sequence numbers that keep an early post
//! for the next epoch apart from the current one, and what breaks when the
//! epoch state is kept in cached memory (each wait bounded: a hang is
//! detected, not suffered).

use rgex_scc::address_plan::{Plan, PlanOptions};
use rgex_scc::emu::{CheckMode, Chip, Core, CoreConfig, Geometry, MemType, Missing};
use rgex_scc::epoch::{Coherence, Epochs, Step};

/// Steps after which a wait counts as a hang.
const BOUND: usize = 10_000;

struct Job {
    plan: Plan,
    _chip: Chip,
    cores: Vec<Core>,
    ep: Vec<Epochs>,
}

fn job(n: u32, opts: PlanOptions, cfg: CoreConfig) -> Job {
    let plan = Plan::new(n, 1, 512, &vec![4096; n as usize], opts).unwrap();
    let chip = Chip::in_process(plan.layout().unwrap()).unwrap();
    let cores = (0..n)
        .map(|r| chip.core_with(r, cfg.check(CheckMode::Report)).unwrap())
        .collect();
    let mode = if opts.segment_type == MemType::WriteBack {
        Coherence::WholeCache
    } else {
        Coherence::Targeted
    };
    let ep = (0..n).map(|r| Epochs::new(r, n, mode)).collect();
    Job {
        plan,
        _chip: chip,
        cores,
        ep,
    }
}

fn checked() -> PlanOptions {
    PlanOptions {
        check: true,
        ..PlanOptions::default()
    }
}

impl Job {
    fn post(&mut self, r: u32, origins: &[u32]) {
        let i = r as usize;
        self.ep[i]
            .post(&mut self.cores[i], &self.plan, origins)
            .unwrap();
    }

    fn start(&mut self, r: u32, targets: &[u32]) {
        let i = r as usize;
        self.ep[i]
            .start(&mut self.cores[i], &self.plan, targets)
            .unwrap();
    }

    fn put(&mut self, r: u32, t: u32, off: u64, data: &[u8]) -> bool {
        let i = r as usize;
        self.ep[i]
            .put(&mut self.cores[i], &self.plan, t, off, data)
            .unwrap()
    }

    fn get(&mut self, r: u32, t: u32, off: u64, out: &mut [u8]) -> bool {
        let i = r as usize;
        self.ep[i]
            .get(&mut self.cores[i], &self.plan, t, off, out)
            .unwrap()
    }

    fn complete_step(&mut self, r: u32) -> Step {
        let i = r as usize;
        self.ep[i]
            .complete_step(&mut self.cores[i], &self.plan)
            .unwrap()
    }

    /// Complete on `r` alone (everyone it needs has posted): bounded.
    fn complete(&mut self, r: u32) -> bool {
        (0..BOUND).any(|_| self.complete_step(r) == Step::Done)
    }

    fn test(&mut self, r: u32) -> bool {
        let i = r as usize;
        self.ep[i].test(&mut self.cores[i], &self.plan).unwrap()
    }

    /// Wait on `r`: bounded; false is a detected hang.
    fn wait(&mut self, r: u32) -> bool {
        (0..BOUND).any(|_| self.test(r))
    }

    fn stale(&self) -> usize {
        self.cores.iter().map(|c| c.stale_reads().len()).sum()
    }

    /// Read `t`'s own segment through its core (after its wait).
    fn read_own(&mut self, t: u32, off: u64, out: &mut [u8]) {
        let at = self.plan.segment(t).offset(off);
        self.cores[t as usize].read(at, out).unwrap();
    }

    fn write_own(&mut self, t: u32, off: u64, data: &[u8]) {
        let at = self.plan.segment(t).offset(off);
        self.cores[t as usize].write(at, data).unwrap();
    }
}

/// Ring of 4: every rank exposes to its left neighbour and accesses its
/// right one, 50 epochs; each puts a fresh value into its right neighbour
/// and gets what the neighbour wrote itself before posting. Both sides read
/// through their caches (which hold the previous epoch's lines): only the
/// drains and invalidates tied to post/start/complete/wait keep them fresh.
#[test]
fn repeated_epochs_move_fresh_data_with_no_stale_read() {
    let n = 4u32;
    let mut j = job(n, checked(), CoreConfig::default());
    for e in 1..=50u64 {
        for r in 0..n {
            // The target's own data, written before it posts.
            j.write_own(r, 64, &(e * 1000 + r as u64).to_le_bytes());
            j.post(r, &[(r + n - 1) % n]);
        }
        for r in 0..n {
            let t = (r + 1) % n;
            j.start(r, &[t]);
            assert!(j.put(r, t, 0, &(e * 100 + r as u64).to_le_bytes()));
            let mut b = [0u8; 8];
            assert!(j.get(r, t, 64, &mut b));
            assert_eq!(u64::from_le_bytes(b), e * 1000 + t as u64, "epoch {e}");
        }
        for r in 0..n {
            assert!(j.complete(r), "epoch {e}: rank {r} could not complete");
        }
        for r in 0..n {
            assert!(j.wait(r), "epoch {e}: rank {r} waits forever");
            let mut b = [0u8; 8];
            j.read_own(r, 0, &mut b);
            let from = (r + n - 1) % n;
            assert_eq!(u64::from_le_bytes(b), e * 100 + from as u64, "epoch {e}");
        }
    }
    assert_eq!(j.stale(), 0, "{:?}", j.cores[0].stale_reads());
}

/// Trigger-only start: start returns at once; the first access waits for
/// the post (nothing is written before it), and later ones go straight.
#[test]
fn start_does_not_wait_but_the_first_access_does() {
    let mut j = job(2, checked(), CoreConfig::default());
    j.start(0, &[1]);
    assert!(!j.put(0, 1, 0, &[1; 8]), "accessed before the post");
    let mut b = [0u8; 8];
    assert!(!j.get(0, 1, 0, &mut b));
    assert_eq!(j.complete_step(0), Step::Blocked);
    j.post(1, &[0]);
    assert!(!j.test(1), "wait returned before the origin completed");
    assert!(j.put(0, 1, 0, &[7; 8]));
    assert!(j.complete(0));
    assert!(j.wait(1));
    j.read_own(1, 0, &mut b);
    assert_eq!(b, [7; 8]);
    assert_eq!(j.stale(), 0);
}

/// The case: origin 0's epoch 1 targets rank 1, its epoch 2 targets
/// rank 2. Rank 2 posts for epoch 2 early, while rank 0 is still in epoch 1
/// and rank 1 has not posted: that post must not open rank 1. With one
/// "posted" flag per origin (set by whichever target posts) it would.
#[test]
fn an_early_post_for_the_next_epoch_is_not_taken_for_the_current_one() {
    let mut j = job(3, checked(), CoreConfig::default());
    j.start(0, &[1]);
    j.post(2, &[0]); // early: for rank 0's next epoch
    assert!(
        !j.put(0, 1, 0, &[1; 8]),
        "rank 2's early post opened rank 1"
    );
    j.post(1, &[0]);
    assert!(j.put(0, 1, 0, &[1; 8]));
    assert!(j.complete(0));
    assert!(j.wait(1));
    assert!(!j.test(2), "rank 2 was credited with rank 0's epoch 1");
    j.start(0, &[2]);
    assert!(j.put(0, 2, 0, &[2; 8]), "the early post was lost");
    assert!(j.complete(0));
    assert!(j.wait(2));
    let mut b = [0u8; 8];
    j.read_own(1, 0, &mut b);
    assert_eq!(b, [1; 8]);
    j.read_own(2, 0, &mut b);
    assert_eq!(b, [2; 8]);

    // The same target, one epoch ahead: rank 1 posts epoch 2 for rank 0
    // right after its wait, before rank 0 starts epoch 2.
    j.post(1, &[0]);
    j.start(0, &[1]);
    assert!(j.put(0, 1, 8, &[3; 8]));
    assert!(j.complete(0));
    assert!(j.wait(1));
    assert_eq!(j.stale(), 0);

    // The naive alternative, for contrast: one "posted" flag per origin.
    let flag = j.plan.epoch_match(0, 0);
    j.cores[2].write_u32_release(flag, 1).unwrap(); // rank 2 posts early
    let seen = j.cores[0].read_u32_acquire(flag).unwrap() == 1;
    assert!(
        seen,
        "with one flag, rank 0 would now access rank 1 unposted"
    );
}

/// Two origins complete towards one target at once, stepped alternately:
/// one holds the target's lock, the other skips it and retries; both get
/// through and the target counts both.
#[test]
fn contended_completion_counts_every_origin() {
    let mut j = job(3, checked(), CoreConfig::default());
    j.post(2, &[0, 1]);
    j.start(0, &[2]);
    j.start(1, &[2]);
    assert!(j.put(0, 2, 0, &[1; 8]) && j.put(1, 2, 8, &[2; 8]));
    assert_eq!(j.complete_step(0), Step::Progress); // takes rank 2's lock
    assert_eq!(j.complete_step(1), Step::Blocked); // busy: skipped
    assert_eq!(j.complete_step(0), Step::Done);
    assert!(!j.test(2));
    assert!(j.complete(1));
    assert!(j.wait(2));
    let mut b = [0u8; 16];
    j.read_own(2, 0, &mut b);
    assert_eq!(&b[..8], &[1; 8]);
    assert_eq!(&b[8..], &[2; 8]);
    assert_eq!(j.stale(), 0);
}

/// Eight ranks, all to all, stepped round-robin for 10 epochs: every
/// origin completes towards seven targets whose locks the others want too.
#[test]
fn all_to_all_round_robin_completes() {
    let n = 8u32;
    let mut j = job(n, checked(), CoreConfig::default());
    let all: Vec<u32> = (0..n).collect();
    for e in 0..10u8 {
        for r in 0..n {
            j.post(r, &all);
            j.start(r, &all);
        }
        for r in 0..n {
            for t in 0..n {
                assert!(j.put(r, t, r as u64 * 8, &[e ^ r as u8; 8]));
            }
        }
        let mut done = vec![false; n as usize];
        for _ in 0..BOUND {
            for r in 0..n {
                if !done[r as usize] {
                    done[r as usize] = j.complete_step(r) == Step::Done;
                }
            }
            if done.iter().all(|&d| d) {
                break;
            }
        }
        assert!(done.iter().all(|&d| d), "epoch {e}: complete hangs");
        for t in 0..n {
            assert!(j.wait(t));
            let mut b = vec![0u8; 8 * n as usize];
            j.read_own(t, 0, &mut b);
            for r in 0..n as usize {
                assert_eq!(b[r * 8], e ^ r as u8, "epoch {e}: {r} -> {t}");
            }
        }
    }
    assert_eq!(j.stale(), 0);
}

/// The epoch state in cached (write-back) memory instead of uncached: the
/// origin caches its match entry at its first look and never sees the
/// next post. The bounded wait detects the hang.
#[test]
fn a_cached_match_flag_hides_the_next_post_and_the_epoch_hangs() {
    let opts = PlanOptions {
        epoch_type: MemType::WriteBack,
        ..checked()
    };
    let mut j = job(2, opts, CoreConfig::default());
    // Epoch 1: rank 0 looks before the post (caching the line), then
    // keeps reading its cached copy.
    j.start(0, &[1]);
    assert!(!j.put(0, 1, 0, &[1; 8]));
    j.post(1, &[0]);
    let hung = (0..BOUND).all(|_| !j.put(0, 1, 0, &[1; 8]));
    assert!(hung, "the post was seen through a cached flag");
    // Memory does hold it: only the cache hides it.
    let mut b = [0u8; 4];
    j._chip.peek(j.plan.epoch_match(0, 1), &mut b).unwrap();
    assert_eq!(u32::from_le_bytes(b), 1);
}

/// The completion counter in cached memory, with caches small enough that
/// lines are evicted: each origin's increment sits dirty in its cache
/// (invisible to the target), and when the lines are evicted the whole-line
/// write-backs overwrite each other: one completion is lost for good, and
/// the target's bounded wait detects the hang. The checker reports the
/// second origin's read of the counter as stale.
#[test]
fn a_cached_completion_counter_is_lost_on_eviction_and_the_wait_hangs() {
    let opts = PlanOptions {
        epoch_type: MemType::WriteBack,
        ..checked()
    };
    // One-set L1 of two ways, no L2: every third line evicts.
    let tiny = CoreConfig::default()
        .l1(Geometry::new(64, 2).unwrap())
        .l2(None);
    let mut j = job(3, opts, tiny);
    j.post(2, &[0, 1]);
    j.start(0, &[2]);
    j.start(1, &[2]);
    // Each origin sees the post only once its cache misses: the post went
    // to memory (no write-allocate) and the flag lines are not cached yet.
    assert!(j.put(0, 2, 0, &[1; 8]) && j.put(1, 2, 8, &[2; 8]));
    assert!(j.complete(0) && j.complete(1));
    // Both increments are dirty in the origins' caches; evict them (rank 1
    // last), by touching two other lines.
    for r in [0usize, 1] {
        let a = j.plan.segment(r as u32);
        let mut b = [0u8; 4];
        j.cores[r].read(a.offset(4096 - 64), &mut b).unwrap();
        j.cores[r].read(a.offset(4096 - 32), &mut b).unwrap();
    }
    let mut b = [0u8; 4];
    j._chip.peek(j.plan.epoch_counter(2), &mut b).unwrap();
    assert_eq!(u32::from_le_bytes(b), 1, "one completion was written over");
    assert!(!j.wait(2), "the target counted both completions");
    // Rank 1 read the counter after taking the lock rank 0 had released,
    // so rank 0's increment was synchronised with it, yet still in rank 0's
    // cache: the checker names the flush rank 0 never did.
    let r = j.cores[1].stale_reads();
    assert!(
        r.iter()
            .any(|s| s.addr == j.plan.epoch_counter(2) && s.missing == Missing::Flush { rank: 0 }),
        "{r:?}"
    );
}
