//! Idle threads helping with large jobs: work a thread shares with the
//! threads of its process that are waiting.
//!
//! A thread with a large job (a node-local copy of megabytes) splits it
//! into blocks and shares it on a [`Board`]. Other threads of the process
//! that are blocked in a wait or a poll call [`Board::help`] and run
//! blocks too, each block claimed exactly once through an atomic counter
//! (the shared-copy idea of Hybrid MPI, and of MPI runtimes that borrow
//! idle OpenMP threads). The sharing thread runs blocks as well, and
//! returns only when every block has run and no helper still holds the
//! job, so the job may borrow the sharer's stack.
//!
//! One job at a time: a thread that shares while the board is taken runs
//! its job alone.
//!
//! ```
//! use rgex_core::shared_work::Board;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! let board = Board::new();
//! let sum = AtomicU64::new(0);
//! board.share(8, &|i| {
//!     sum.fetch_add(i as u64, Ordering::Relaxed);
//! });
//! assert_eq!(sum.load(Ordering::Relaxed), 28);
//! assert_eq!(board.help(), 0); // nothing is shared now
//! ```

use crate::sync::{fence, AtomicBool, AtomicUsize, Ordering, Slot};

/// Copies of at least this many bytes are shared by [`Board::copy`] (and
/// VIS's strided copies). On the 2-CPU node measured, sharing from 64 KiB
/// (with 16 KiB blocks, to have several) gained 1.3 - 1.8x at 64 - 128
/// KiB with a waiter but cost 2 - 5% without one, and gained less at 256
/// KiB than 64 KiB blocks do.
pub const SHARE_MIN: usize = 256 << 10;

/// Bytes per block of a shared copy: a few microseconds of copying, so
/// the claim (an atomic add on a line the helpers share) is noise, and
/// short enough that a helper that joins late still finds blocks.
pub const BLOCK: usize = 64 << 10;

/// Blocks a helper runs per call of [`Board::help`]: a waiting thread is
/// at most this many blocks late for its own event, and the handshake of
/// a call (which moves the board's line between cores) is paid once per
/// this many blocks. (One per call and eight per call measured the same
/// within this VM's noise; running until no block is left would make a
/// waiter's delay grow with the job.)
pub const HELP_BLOCKS: usize = 8;

/// Where a job is shared and helpers find it. See the [module](self).
pub struct Board {
    /// Taken by the thread sharing a job.
    owner: AtomicBool,
    /// A job is published: helpers may join it.
    active: AtomicBool,
    /// Threads inside [`help`](Board::help).
    helpers: AtomicUsize,
    /// The next block to claim.
    next: AtomicUsize,
    /// Blocks that have run.
    done: AtomicUsize,
    /// Jobs shared so far (a statistic).
    jobs: AtomicUsize,
    /// The job: written by the owner while no helper can read it (see
    /// [`share`](Board::share)).
    job: Slot<Job>,
}

/// A shared job: `blocks` calls of a closure of the sharer's, type-erased.
#[derive(Clone, Copy)]
struct Job {
    blocks: usize,
    /// The closure.
    data: *const (),
    /// Runs block `i` of the closure at `data`.
    call: unsafe fn(*const (), usize),
}

impl Job {
    const NONE: Job = Job {
        blocks: 0,
        data: std::ptr::null(),
        call: never,
    };
}

/// The call of an empty job (which has no block to call it for).
unsafe fn never(_: *const (), _: usize) {
    unreachable!("a job of no blocks has nothing to run")
}

/// Run block `i` of the closure `data` points to.
///
/// # Safety
/// `data` must come from a `&F` that is alive for the call.
unsafe fn call<F: Fn(usize) + Sync>(data: *const (), i: usize) {
    // SAFETY: the caller's contract.
    let f = unsafe { &*data.cast::<F>() };
    f(i)
}

/// Aborts the process if dropped while unwinding: a block that panics
/// would leave the sharer waiting for it forever, or (if the sharer's own
/// block panicked) unwind the frame other threads are still borrowing.
struct AbortOnPanic;

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!(
                "a block of shared work panicked; other threads may be running blocks \
                 that borrow the sharer's frame, so the process aborts"
            );
            std::process::abort();
        }
    }
}

// SAFETY: the job's pointer is only dereferenced by `run`, for a closure
// that is `Sync` (the bound on `share`) and alive until the sharer returns,
// which it does only after every block has run and no helper holds the
// job; the slot is written only by the owner while no helper reads it.
unsafe impl Sync for Board {}
// SAFETY: as above; a board holds no thread-bound state.
unsafe impl Send for Board {}

impl Default for Board {
    fn default() -> Self {
        Board::new()
    }
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board")
            .field("active", &self.active.load(Ordering::Relaxed))
            .field("helpers", &self.helpers.load(Ordering::Relaxed))
            .finish()
    }
}

impl Board {
    /// An empty board.
    pub fn new() -> Board {
        Board {
            owner: AtomicBool::new(false),
            active: AtomicBool::new(false),
            helpers: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            jobs: AtomicUsize::new(0),
            job: Slot::new(Job::NONE),
        }
    }

    /// Run `f(0)`, .., `f(blocks - 1)`, each exactly once, on this thread
    /// and on any that [`help`](Board::help) meanwhile; return when all
    /// have run (their effects happen before the return). If the board is
    /// taken (another thread is sharing), all run on this thread.
    ///
    /// `f` runs on whichever threads help: it must not block, nor take a
    /// lock a waiting thread may hold, nor rely on thread-local state.
    /// Nor may it panic: once the job is shared, a panicking block aborts
    /// the process (other threads may be running blocks that borrow this
    /// frame).
    ///
    /// The sharer waits for every claimed block, so a helper descheduled in
    /// the middle of one delays it (it yields meanwhile); on a node whose
    /// threads share one CPU, sharing gains nothing.
    pub fn share<F: Fn(usize) + Sync>(&self, blocks: usize, f: &F) {
        // Acquire: pairs with the previous owner's Release of `owner`,
        // which came after no helper held its job, so the slot is ours.
        if blocks < 2
            || self
                .owner
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            (0..blocks).for_each(f);
            return;
        }
        let job = Job {
            blocks,
            data: (f as *const F).cast(),
            call: call::<F>,
        };
        // SAFETY: we own the board, `active` is false, and no helper is
        // between seeing it true and leaving (the previous owner waited
        // for that), so nobody reads the slot.
        self.job.with_mut(|j| unsafe { *j = job });
        // Relaxed: published by the Release store of `active` below,
        // which a helper acquires before touching them.
        self.next.store(0, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        // Relaxed: a statistic, read by nobody the board depends on.
        self.jobs.fetch_add(1, Ordering::Relaxed);
        // Release: publishes the job to a helper's Acquire load.
        self.active.store(true, Ordering::Release);
        self.run(job, usize::MAX);
        // Acquire: pairs with each block's Release count, so every block's
        // effects happen before this returns.
        wait_until(|| self.done.load(Ordering::Acquire) == blocks);
        // The handshake with `help`: we store `active` false, then read
        // `helpers`; a helper adds itself, then reads `active`; each pair
        // is split by a SeqCst fence. The two fences are ordered one way
        // or the other: if ours comes first, the helper's load sees false
        // (or a later job's true) and it never reads this job; if its
        // comes first, our load sees it counted and we wait for it to
        // leave. So once `helpers` reads 0 nobody holds the job.
        // (SeqCst loads and stores without the fences would do in the
        // C++ model too; loom models only the fences' total order.)
        self.active.store(false, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        // Acquire: pairs with the helpers' Release decrements, so their
        // reads of the slot happen before our return.
        wait_until(|| self.helpers.load(Ordering::Acquire) == 0);
        // Release: the helpers' reads of the slot happen before the next
        // owner's write.
        self.owner.store(false, Ordering::Release);
    }

    /// Copy `len` bytes from `src` to `dst`, in [`BLOCK`]s shared on this
    /// board from [`SHARE_MIN`] bytes, on this thread alone below.
    ///
    /// # Safety
    /// As [`std::ptr::copy_nonoverlapping`]: `src` readable and `dst`
    /// writable for `len` bytes, the two not overlapping, for the call.
    pub unsafe fn copy(&self, src: *const u8, dst: *mut u8, len: usize) {
        if len < SHARE_MIN {
            // SAFETY: the caller's contract.
            return unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
        }
        // SAFETY: the caller's contract.
        unsafe { self.copy_in_blocks(src, dst, len, BLOCK) }
    }

    /// [`copy`](Board::copy)'s shared case, in blocks of `block` bytes.
    ///
    /// # Safety
    /// As [`copy`](Board::copy).
    unsafe fn copy_in_blocks(&self, src: *const u8, dst: *mut u8, len: usize, block: usize) {
        let ends = Ends { src, dst };
        self.share(len.div_ceil(block), &|i| {
            let lo = i * block;
            let e = &ends;
            // SAFETY: bytes `lo .. lo + block.min(len - lo)` of the copy,
            // which the caller vouches for; blocks do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(e.src.add(lo), e.dst.add(lo), block.min(len - lo))
            }
        });
    }

    /// Run up to [`HELP_BLOCKS`] blocks of the shared job, if there are
    /// any left: how many ran. For threads that are waiting anyway (in a
    /// poll or a wait), which call it again on their next poll; the bound
    /// keeps a helper at most that many blocks late for its own event.
    pub fn help(&self) -> usize {
        // Relaxed, then the fence: our half of the handshake described in
        // `share`.
        self.helpers.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut ran = 0;
        // Acquire: pairs with the owner's Release store, so the job (and
        // the reset counters) are visible.
        if self.active.load(Ordering::Acquire) {
            // SAFETY: the job is published and its owner will not rewrite
            // the slot until we have left (`helpers`).
            let job = self.job.with(|j| unsafe { *j });
            ran = self.run(job, HELP_BLOCKS);
        }
        // Release: our read of the slot happens before the owner's load
        // that sees the count drop to zero.
        self.helpers.fetch_sub(1, Ordering::Release);
        ran
    }

    /// How many jobs have been shared on this board (jobs run alone,
    /// because they were too small or the board was taken, not counted).
    pub fn jobs(&self) -> usize {
        // Relaxed: a statistic; the caller orders it by its own means.
        self.jobs.load(Ordering::Relaxed)
    }

    /// True if a job is shared now (a hint: one relaxed load, for a
    /// poll's fast path; [`help`](Board::help) decides for itself).
    #[inline]
    pub fn has_work(&self) -> bool {
        // Relaxed: a stale false only delays help to the next poll; a
        // stale true costs a `help` that finds nothing.
        self.active.load(Ordering::Relaxed)
    }

    /// Claim and run blocks of `job` until none are left or `most` have
    /// run here.
    fn run(&self, job: Job, most: usize) -> usize {
        let mut ran = 0;
        while ran < most {
            // Relaxed: the counter only has to hand each index out once,
            // which its modification order does; the job itself was
            // acquired through `active`.
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= job.blocks {
                return ran;
            }
            let guard = AbortOnPanic;
            // SAFETY: `data` is the sharer's `&F` and `call` was made for
            // that `F`; the sharer returns only after this block is counted
            // below and this thread has left `help`.
            unsafe { (job.call)(job.data, i) };
            std::mem::forget(guard);
            // Release: this block's effects happen before the sharer's
            // Acquire load that sees the count reach `blocks`.
            self.done.fetch_add(1, Ordering::Release);
            ran += 1;
        }
        ran
    }
}

/// A copy's two ends, for the threads that run its blocks (raw pointers
/// are not `Sync`; a closure given to [`Board::share`] must be).
#[derive(Clone, Copy, Debug)]
pub struct Ends {
    /// Where the blocks read.
    pub src: *const u8,
    /// Where the blocks write.
    pub dst: *mut u8,
}

// SAFETY: sharing the two addresses is harmless in itself (using them
// takes `unsafe`); the code that dereferences them in blocks upholds that
// the source is only read and each block writes its own part of the
// destination, both valid until `share` returns.
unsafe impl Sync for Ends {}

/// Wait for `cond`, spinning briefly, then yielding (a helper may be
/// descheduled in the middle of a block).
fn wait_until(cond: impl Fn() -> bool) {
    #[cfg(not(loom))]
    let mut backoff = crate::Backoff::new(false);
    while !cond() {
        #[cfg(not(loom))]
        backoff.snooze();
        #[cfg(loom)]
        crate::sync::spin();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU8;
    use std::sync::Arc;

    #[test]
    fn every_block_runs_once_with_helpers() {
        let board = Arc::new(Board::new());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let helpers: Vec<_> = (0..2)
            .map(|_| {
                let (board, stop) = (board.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut ran = 0;
                    while !stop.load(Ordering::Relaxed) {
                        ran += board.help();
                        std::hint::spin_loop();
                    }
                    ran
                })
            })
            .collect();
        let rounds = if cfg!(miri) { 4 } else { 200 };
        for round in 0..rounds {
            let hits: Vec<AtomicU8> = (0..64).map(|_| AtomicU8::new(0)).collect();
            board.share(hits.len(), &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            for (i, h) in hits.iter().enumerate() {
                assert_eq!(h.load(Ordering::Relaxed), 1, "round {round}, block {i}");
            }
        }
        stop.store(true, Ordering::Relaxed);
        let helped: usize = helpers.into_iter().map(|h| h.join().unwrap()).sum();
        // Not asserted (the scheduler may never run a helper in time), but
        // worth seeing when the test is run with --nocapture.
        println!("helpers ran {helped} of {} blocks", rounds * 64);
    }

    #[test]
    fn sharers_that_also_help() {
        // Every thread shares jobs and helps between them, as threads of a
        // rank that each issue large copies and wait in between do: the
        // board changes hands many times, with helpers straddling jobs.
        let board = Board::new();
        let rounds = if cfg!(miri) { 3 } else { 300 };
        std::thread::scope(|s| {
            for t in 0..3u8 {
                let board = &board;
                s.spawn(move || {
                    for round in 0..rounds {
                        let hits: Vec<AtomicU8> = (0..16).map(|_| AtomicU8::new(0)).collect();
                        board.share(hits.len(), &|i| {
                            hits[i].fetch_add(1, Ordering::Relaxed);
                        });
                        for (i, h) in hits.iter().enumerate() {
                            let n = h.load(Ordering::Relaxed);
                            assert_eq!(n, 1, "thread {t}, round {round}, block {i}");
                        }
                        board.help();
                    }
                });
            }
        });
        assert!(!board.has_work());
    }

    #[test]
    fn a_second_sharer_runs_alone() {
        let board = Board::new();
        let outer = AtomicUsize::new(0);
        board.share(3, &|_| {
            // The board is taken: this nested job runs here, in order.
            let order = std::sync::Mutex::new(Vec::new());
            board.share(4, &|i| order.lock().unwrap().push(i));
            assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
            outer.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(outer.load(Ordering::Relaxed), 3);
        assert!(!board.has_work());
        // The outer job was shared; the nested ones ran alone.
        assert_eq!(board.jobs(), 1);
    }

    fn check_copy(len: usize, copy: impl Fn(*const u8, *mut u8, usize)) {
        let src: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
        let mut dst = vec![0u8; len];
        copy(src.as_ptr(), dst.as_mut_ptr(), len);
        assert!(src == dst, "{len} bytes");
    }

    #[test]
    fn copies_small_and_shared() {
        let board = Board::new();
        // Miri runs the same block arithmetic on smaller copies.
        let sizes: &[usize] = if cfg!(miri) {
            &[0, 1, 17]
        } else {
            &[0, 1, SHARE_MIN - 1, SHARE_MIN, SHARE_MIN + 3 * BLOCK + 17]
        };
        for &len in sizes {
            // SAFETY: two distinct vectors of `len` bytes.
            check_copy(len, |s, d, n| unsafe { board.copy(s, d, n) });
        }
        for len in [1, 63, 64, 65, 64 * 5 + 3] {
            // SAFETY: as above.
            check_copy(len, |s, d, n| unsafe { board.copy_in_blocks(s, d, n, 64) });
        }
    }

    #[test]
    fn no_blocks_and_one_block() {
        let board = Board::new();
        board.share(0, &|_| panic!("no block to run"));
        let ran = AtomicUsize::new(0);
        board.share(1, &|i| {
            assert_eq!(i, 0);
            ran.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(ran.load(Ordering::Relaxed), 1);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// Share a job of two blocks that count themselves; check both ran.
    fn share_two(board: &Board) {
        let ran = loom::sync::atomic::AtomicUsize::new(0);
        board.share(2, &|_| {
            ran.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(ran.load(Ordering::Relaxed), 2);
    }

    /// A thread that helps once.
    fn helper(board: &Arc<Board>) -> loom::thread::JoinHandle<usize> {
        let board = board.clone();
        loom::thread::spawn(move || board.help())
    }

    /// Plain cells, one per block.
    struct Cells([UnsafeCell<u8>; 2]);
    // SAFETY: block i alone writes cell i, and the sharer reads them only
    // after `share` returns; loom checks both claims.
    unsafe impl Sync for Cells {}

    /// Two blocks, each writing its own plain cell; a helper joins (or
    /// not) at any point. Loom checks every block runs once and that the
    /// sharer's reads after `share` are ordered after the helper's writes.
    #[test]
    fn loom_blocks_run_once_and_are_visible() {
        loom::model(|| {
            let board = Arc::new(Board::new());
            let h = helper(&board);
            let cells = &Cells([UnsafeCell::new(0), UnsafeCell::new(0)]);
            board.share(2, &|i| {
                // SAFETY: block i is the only writer of cell i.
                cells.0[i].with_mut(|c| unsafe { *c += 1 });
            });
            for c in &cells.0 {
                // SAFETY: every block has run and is ordered before us.
                assert_eq!(c.with(|c| unsafe { *c }), 1);
            }
            let helped = h.join().unwrap();
            assert!(helped <= 2);
        });
    }

    /// Two threads share at once (one gets the board, the other runs its
    /// job alone, or after the first, through the board) while a third
    /// helps: each job's blocks run once.
    #[test]
    fn loom_two_sharers_and_a_helper() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(|| {
            let board = Arc::new(Board::new());
            let sharer = {
                let board = board.clone();
                loom::thread::spawn(move || share_two(&board))
            };
            let helper = helper(&board);
            share_two(&board);
            sharer.join().unwrap();
            helper.join().unwrap();
        });
    }

    /// Two jobs in a row with a helper that may straddle them: the second
    /// job's write of the slot must not race with the helper's read of
    /// the first (loom reports a race on the slot otherwise).
    #[test]
    fn loom_next_job_waits_for_the_helpers_of_the_last() {
        loom::model(|| {
            let board = Arc::new(Board::new());
            let h = helper(&board);
            for _ in 0..2 {
                share_two(&board);
            }
            h.join().unwrap();
        });
    }
}
