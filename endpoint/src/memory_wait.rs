//! Waiting on memory (OpenSHMEM 1.5's `shmem_wait_until` family): wait
//! until a word at an offset of this rank's own segment compares with a
//! value ([`Cmp`]), for the word types of [`WaitWord`] (`u32`, `u64`,
//! `i32`, `i64`), one word or arrays of them (`_any`, `_all`, `_some`,
//! with an optional mask of words to ignore), blocking
//! ([`Endpoint::wait_until`]), as a test ([`Endpoint::test`]) or as a
//! `Future` ([`Endpoint::wait_until_async`]).
//!
//! Every read of a word is an Acquire load: it pairs with the Release
//! update of a put-with-signal ([`Endpoint::put_signal`]), so a wait that
//! sees the signal sees its data.
//!
//! **How a blocking wait waits.** It runs progress (handlers keep
//! running, the reference put-with-signal's among them) and spins a
//! little ([`SPIN`]); then, idle, it sleeps on the conduit's wait object
//! ([`Conduit::idle_wait`](rgex_core::Conduit::idle_wait): smp's futex
//! doorbell, the network's completion fd, both behind the bypass), at
//! first briefly and then longer, up to [`SLEEP_MAX`]. A message wakes
//! it (a network peer's signal comes as one), and so does a node-local
//! peer's put-with-signal, which rings the target
//! ([`Conduit::wake_peer`](rgex_core::Conduit::wake_peer)) once its
//! update is stored. A plain store by a node-local peer (a put, an
//! atomic) rings nothing: the bounded sleep is what sees it, at most
//! [`SLEEP_MAX`] late. Where the conduit has no wait object, the wait
//! sleeps as long without one.
//!
//! **How a future is woken.** A pending [`WaitUntil`] is registered with
//! the endpoint, and every progress of this rank re-checks the words of
//! the registered futures and wakes those whose condition now holds: the
//! progress that runs the reference handler, and the progress that next
//! runs after a node-local peer's store (a progress thread asleep on the
//! wait object is woken by a put-with-signal, and sleeps at most
//! [`SLEEP_MAX`] while a future is registered; a sleep it began before
//! the future registered lasts up to its own bound, 10 ms by default).
//! Someone must drive progress, as for every rgex future (a progress
//! thread or task, a thread that polls).
//!
//! **What ends a wait.** Its condition holding (`Ok`); the client being
//! finalized or dropped ([`Error::Finalized`]); or a peer found gone: a
//! wait that has been idle for [`SWEEP_EVERY`] (and every stalled poll's
//! sweep, see [`crate::abandon`]) asks the conduit about every other rank
//! of the job ([`Conduit::peer_gone`](rgex_core::Conduit::peer_gone): a
//! peer that left, whose process died, or that the network declared dead
//! after its dead-peer timeout), and the first one gone ends every wait
//! on memory with an error naming it as unreachable ([`Error::Failed`],
//! as the other operations the sweep fails), since rgex cannot
//! tell which peer would have written the word. Nothing else does: a
//! condition that never holds among live peers waits forever, as in
//! OpenSHMEM. A wait inside a handler is refused ([`Error::InHandler`]).

use crate::context::in_handler;
use crate::Endpoint;
use parking_lot::Mutex;
use rgex_core::atomic::AtomicType;
use rgex_core::blocked::Waiting;
use rgex_core::waker::AtomicWaker;
use rgex_core::{Error, PollSet, Rank, Result};
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::atomic::{fence, AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How long a blocking wait polls without pause before it sleeps.
pub const SPIN: Duration = Duration::from_micros(50);

/// The first sleep of an idle wait; each next one doubles, to
/// [`SLEEP_MAX`].
pub const SLEEP_MIN: Duration = Duration::from_micros(20);

/// The longest sleep of an idle wait (and of a progress thread while a
/// [`WaitUntil`] future is registered): how late a plain store by a
/// node-local peer, which rings nothing, may be seen.
pub const SLEEP_MAX: Duration = Duration::from_millis(1);

/// Empty polls between two looks at the clock while a wait spins.
const POLLS_PER_CLOCK: u32 = 16;

/// How often an idle wait asks the conduit whether a peer has gone.
pub const SWEEP_EVERY: Duration = Duration::from_millis(20);

/// A comparison of [`Endpoint::wait_until`] (OpenSHMEM's `SHMEM_CMP_*`):
/// the word, on the left, against the value.
///
/// ```
/// use rgex_endpoint::Cmp;
/// assert!(Cmp::Ge.holds(3u64, 3));
/// assert!(Cmp::Lt.holds(-1i32, 0));
/// assert!(!Cmp::Ne.holds(5u32, 5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `word == value`.
    Eq,
    /// `word != value`.
    Ne,
    /// `word > value`.
    Gt,
    /// `word >= value`.
    Ge,
    /// `word < value`.
    Lt,
    /// `word <= value`.
    Le,
}

impl Cmp {
    /// True if `word` compares with `value` as this says.
    #[inline]
    pub fn holds<T: PartialOrd>(self, word: T, value: T) -> bool {
        match self {
            Cmp::Eq => word == value,
            Cmp::Ne => word != value,
            Cmp::Gt => word > value,
            Cmp::Ge => word >= value,
            Cmp::Lt => word < value,
            Cmp::Le => word <= value,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A word type a wait on memory reads: `u32`, `u64`, `i32`, `i64`
/// (OpenSHMEM's point-to-point types of those widths). Sealed.
///
/// ```
/// use rgex_endpoint::WaitWord;
/// assert_eq!(<u32 as WaitWord>::SIZE, 4);
/// assert_eq!(<i64 as WaitWord>::SIZE, 8);
/// ```
pub trait WaitWord:
    Copy + PartialOrd + std::fmt::Debug + Send + Sync + 'static + sealed::Sealed
{
    /// Its size in bytes (and its alignment in a segment).
    const SIZE: usize;
    /// Its atomic type (named in a misalignment error).
    const TYPE: AtomicType;
    /// Load the word at `p` with Acquire.
    ///
    /// # Safety
    /// `p` is aligned to [`SIZE`](Self::SIZE), valid for that many bytes
    /// while the call runs, and only accessed atomically meanwhile.
    unsafe fn load_acquire(p: *const u8) -> Self;
}

macro_rules! wait_word {
    ($t:ty, $atomic:ty, $ty:ident) => {
        impl sealed::Sealed for $t {}
        impl WaitWord for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const TYPE: AtomicType = AtomicType::$ty;
            #[inline]
            unsafe fn load_acquire(p: *const u8) -> Self {
                // SAFETY: the caller's contract (aligned, valid, atomic).
                let a = unsafe { <$atomic>::from_ptr(p.cast::<$t>().cast_mut()) };
                // Acquire: pairs with a signal's Release update (or any
                // release of the writer): what it wrote before is visible
                // to what the waiter does after the wait.
                a.load(Ordering::Acquire)
            }
        }
    };
}
wait_word!(u32, AtomicU32, U32);
wait_word!(u64, AtomicU64, U64);
wait_word!(i32, AtomicI32, I32);
wait_word!(i64, AtomicI64, I64);

/// One word of this rank's segment, checked: its address here.
#[derive(Clone, Copy)]
struct Word<T> {
    at: *const u8,
    _t: std::marker::PhantomData<T>,
}

// SAFETY: the address is in this rank's segment, mapped for the endpoint's
// life (whoever holds a `Word` holds the endpoint), and only read
// atomically.
unsafe impl<T> Send for Word<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Word<T> {}

impl<T: WaitWord> Word<T> {
    #[inline]
    fn load(&self) -> T {
        // SAFETY: checked in range and aligned when made (`Endpoint::word`).
        unsafe { T::load_acquire(self.at) }
    }
}

/// A wait registered with the endpoint: its failure, if a peer was found
/// gone, and, for a future, its condition and waker.
pub(crate) struct Waiter {
    /// A future's condition, which progress re-checks.
    check: Option<Box<dyn Fn() -> bool + Send + Sync>>,
    waker: AtomicWaker,
    /// Why the wait ended in failure (the sweep's reason: the peer found
    /// gone, named).
    failure: OnceLock<String>,
}

impl Waiter {
    fn failure(&self) -> Option<Error> {
        self.failure.get().map(|why| Error::Failed(why.clone()))
    }
}

/// The waits on memory registered with an endpoint (see the
/// [module docs](self)): the futures progress re-checks, and a table the
/// stalled-wait sweep fails when a peer has gone ([`crate::Abandon`]).
pub(crate) struct MemoryWaits {
    waiters: Mutex<Vec<Arc<Waiter>>>,
    /// Registered futures (waiters with a condition).
    futures: AtomicUsize,
    /// Blocking waits now asleep on the conduit's wait object.
    sleepers: AtomicUsize,
    me: Rank,
    size: u32,
}

impl MemoryWaits {
    pub(crate) fn new(me: Rank, size: u32) -> Arc<Self> {
        Arc::new(MemoryWaits {
            waiters: Mutex::new(Vec::new()),
            futures: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            me,
            size,
        })
    }

    fn register(&self, check: Option<Box<dyn Fn() -> bool + Send + Sync>>) -> Arc<Waiter> {
        let w = Arc::new(Waiter {
            check,
            waker: AtomicWaker::new(),
            failure: OnceLock::new(),
        });
        let mut all = self.waiters.lock();
        if w.check.is_some() {
            // Relaxed: a hint for `progress`; see `has_futures`.
            self.futures.fetch_add(1, Ordering::Relaxed);
        }
        all.push(w.clone());
        w
    }

    fn unregister(&self, w: &Arc<Waiter>) {
        let mut all = self.waiters.lock();
        if let Some(i) = all.iter().position(|x| Arc::ptr_eq(x, w)) {
            all.swap_remove(i);
            if w.check.is_some() {
                // Relaxed: as in `register`.
                self.futures.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// True if a future is registered: progress then re-checks.
    #[inline(always)]
    pub(crate) fn has_futures(&self) -> bool {
        // Relaxed: a stale answer delays a re-check to a later progress,
        // it loses none: a future re-checks its word after registering,
        // and the writers that must wake it at once (the reference
        // handler, `memory_changed`) fence before they look.
        self.futures.load(Ordering::Relaxed) != 0
    }

    /// Wake the registered futures whose condition holds; how many were
    /// woken.
    pub(crate) fn recheck(&self) -> usize {
        let wakers: Vec<_> = self
            .waiters
            .lock()
            .iter()
            .filter(|w| w.check.as_ref().is_some_and(|c| c()))
            .filter_map(|w| w.waker.take())
            .collect();
        // Woken outside the lock: a waker may poll its task at once.
        let woken = wakers.len();
        wakers.into_iter().for_each(std::task::Waker::wake);
        woken
    }

    /// True if no registered future's condition holds (asked by a
    /// sleeper after arming, after a SeqCst fence: see `wake_peer`).
    pub(crate) fn none_ready(&self) -> bool {
        fence(Ordering::SeqCst);
        !self
            .waiters
            .lock()
            .iter()
            .any(|w| w.check.as_ref().is_some_and(|c| c()))
    }
}

impl crate::Abandon for MemoryWaits {
    /// Every other rank of the job, while a wait is registered: any of
    /// them may be the writer.
    fn peers(&self, out: &mut Vec<Rank>) {
        if self.waiters.lock().is_empty() {
            return;
        }
        out.extend((0..self.size).map(Rank).filter(|&p| p != self.me));
    }

    fn fail_peer(&self, _peer: Rank, why: &str) -> usize {
        let all: Vec<Arc<Waiter>> = self.waiters.lock().clone();
        for w in &all {
            let _ = w.failure.set(why.to_string());
            // Outside the lock, as in `recheck`.
            w.waker.wake();
        }
        all.len()
    }

    fn in_flight(&self) -> usize {
        self.waiters.lock().len()
    }
}

/// Unregisters a blocking wait however it ends.
struct Registered<'a> {
    waits: &'a MemoryWaits,
    waiter: Arc<Waiter>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.waits.unregister(&self.waiter);
    }
}

impl Endpoint {
    /// The checked word of type `T` at `offset` in this rank's segment.
    fn word<T: WaitWord>(&self, offset: u64) -> Result<Word<T>> {
        let at = self.segment().ptr_at(offset, T::SIZE)?;
        if !offset.is_multiple_of(T::SIZE as u64) {
            return Err(Error::Misaligned {
                ty: T::TYPE,
                rank: self.rank(),
                offset,
                align: T::SIZE,
            });
        }
        Ok(Word {
            at,
            _t: std::marker::PhantomData,
        })
    }

    fn words<T: WaitWord>(&self, offsets: &[u64]) -> Result<Vec<Word<T>>> {
        offsets.iter().map(|&o| self.word(o)).collect()
    }

    /// This rank's memory was just updated in a way a wait may be for (a
    /// signal this rank applied to its own segment): wake its sleeping
    /// waits and the futures whose condition now holds.
    pub(crate) fn memory_changed(&self) {
        let w = self.memory_waits();
        // SeqCst: the update (before this) and the look at the sleepers
        // and futures (after) against a sleeper's registration and its
        // re-read of the word (Dekker's pattern, as in `wake_peer`): one
        // of the two sees the other.
        fence(Ordering::SeqCst);
        if w.sleepers.load(Ordering::Relaxed) != 0 {
            self.conduit().idle_wake();
        }
        if w.has_futures() {
            w.recheck();
        }
    }

    /// A progress thread's sleep while waits on memory are registered:
    /// at most [`SLEEP_MAX`] (a node-local plain store rings nothing).
    pub(crate) fn idle_sleep_bound(&self, sleep: Duration) -> Duration {
        if self.memory_waits().has_futures() {
            sleep.min(SLEEP_MAX)
        } else {
            sleep
        }
    }

    /// Whether a sleeping progress thread may stay asleep as far as waits
    /// on memory go: no registered future's condition holds, and no
    /// put-with-signal acknowledgement a blocking wait deferred is owed
    /// (the next poll sends it; see `crate::rma::signal`).
    pub(crate) fn memory_waits_idle(&self) -> bool {
        let w = self.memory_waits();
        (!w.has_futures() || w.none_ready()) && !self.signal_protocol().owes_acks()
    }

    /// Run progress until `ready()` holds (see the [module docs](self)
    /// for the sleep and what ends the wait).
    ///
    /// `waiting` is what the thread's record says while it blocks (see
    /// `rgex_core::blocked`).
    fn wait_memory(
        &self,
        what: &'static str,
        waiting: impl FnOnce() -> Waiting,
        ready: impl Fn() -> bool,
    ) -> Result<()> {
        if ready() {
            return Ok(());
        }
        if in_handler() {
            return Err(Error::InHandler { what });
        }
        self.check_open(what)?;
        let waits = self.memory_waits();
        let reg = Registered {
            waits,
            waiter: waits.register(None),
        };
        let mut backoff = rgex_core::Backoff::waiting(self.polite(), waiting());
        let mut quiet_since: Option<Instant> = None;
        let mut last_sweep = Instant::now();
        let mut sleep = SLEEP_MIN;
        let mut empty = 0u32;
        loop {
            if ready() {
                return Ok(());
            }
            if let Some(e) = reg.waiter.failure() {
                return Err(e);
            }
            self.check_open(what)?;
            // A put-with-signal's reference handler run by this poll
            // defers its acknowledgement (see `crate::rma::signal`).
            let polled = {
                let _scope = crate::rma::MemoryWaitScope::enter();
                self.progress(PollSet::All)
            };
            if polled != 0 {
                backoff.reset();
                quiet_since = None;
                sleep = SLEEP_MIN;
                empty = 0;
                continue;
            }
            // The clock is read once per `POLLS_PER_CLOCK` empty polls
            // while spinning (a read costs about as much as a poll).
            empty = empty.wrapping_add(1);
            if !self.polite() && (quiet_since.is_none() || !empty.is_multiple_of(POLLS_PER_CLOCK)) {
                quiet_since.get_or_insert_with(Instant::now);
                backoff.snooze();
                continue;
            }
            if quiet_since.is_some_and(|t| t.elapsed() < SPIN) && !self.polite() {
                backoff.snooze();
                continue;
            }
            if last_sweep.elapsed() >= SWEEP_EVERY {
                last_sweep = Instant::now();
                self.conduit().check_in_flight();
                self.abandon_gone_peers(PollSet::All);
                continue;
            }
            // About to sleep: blocked, whether or not the backoff yielded.
            backoff.blocked();
            // Registered as a sleeper before arming (SeqCst: see
            // `memory_changed`); `still_idle` re-reads the words after a
            // SeqCst fence (see `Conduit::wake_peer`).
            waits.sleepers.fetch_add(1, Ordering::SeqCst);
            let still_idle = || {
                fence(Ordering::SeqCst);
                !ready() && reg.waiter.failure.get().is_none()
            };
            let slept = self.conduit().idle_wait(sleep, &still_idle);
            waits.sleepers.fetch_sub(1, Ordering::Relaxed);
            if !slept && still_idle() {
                std::thread::sleep(sleep);
            }
            sleep = (sleep * 2).min(SLEEP_MAX);
        }
    }
}

/// The record of `what`, a wait on the words at `offsets` of this rank's
/// segment (the first, and how many), at the caller's line: made only
/// once it blocks.
#[track_caller]
fn array_waiting(what: &'static str, offsets: &[u64]) -> impl FnOnce() -> Waiting {
    let at = Location::caller();
    let (first, n) = (offsets.first().copied().unwrap_or(0), offsets.len() as u64);
    move || {
        Waiting::new(what)
            .detail("on words of this rank's segment")
            .at(at)
            .value("the first at offset", first)
            .value("words", n)
    }
}

/// The words of an array wait and its mask, checked: one entry per word
/// not ignored, with its index.
fn masked<T: WaitWord>(
    ep: &Endpoint,
    offsets: &[u64],
    ignore: Option<&[bool]>,
) -> Result<Vec<(usize, Word<T>)>> {
    if let Some(m) = ignore {
        if m.len() != offsets.len() {
            return Err(Error::Config(format!(
                "a wait on memory at {}: {} offsets but a mask of {} (one entry per offset, true \
                 to ignore it)",
                ep.rank(),
                offsets.len(),
                m.len()
            )));
        }
    }
    let words = ep.words::<T>(offsets)?;
    Ok(words
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !ignore.is_some_and(|m| m[*i]))
        .collect())
}

/// The indices of `words` whose word compares with `value`.
fn satisfied<T: WaitWord>(words: &[(usize, Word<T>)], cmp: Cmp, value: T) -> Vec<usize> {
    words
        .iter()
        .filter(|(_, w)| cmp.holds(w.load(), value))
        .map(|(i, _)| *i)
        .collect()
}

impl Endpoint {
    /// Wait until the `T` at `offset` in this rank's segment compares
    /// with `value` as `cmp` says (`word cmp value`); return the word as
    /// read then. Runs progress meanwhile and sleeps when idle; a peer
    /// found gone ends it with an error (see the [module docs](self) for
    /// how it sleeps and exactly what ends it). The word is read with
    /// Acquire: a put-with-signal's data is visible once its signal is.
    /// `offset` must lie in the segment, aligned to `T`'s size (else an
    /// error naming the rank, the offset and the limit).
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// let seen: u64 = ep.wait_until(0, Cmp::Ge, 3)?; // three signals added 1 each
    /// assert!(seen >= 3);
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn wait_until<T: WaitWord>(&self, offset: u64, cmp: Cmp, value: T) -> Result<T> {
        let at = Location::caller();
        let waiting = move || {
            Waiting::new("wait_until")
                .detail("on a word of this rank's segment")
                .at(at)
                .value("segment offset", offset)
        };
        let w = self.word::<T>(offset)?;
        self.wait_memory("wait_until", waiting, || cmp.holds(w.load(), value))?;
        Ok(w.load())
    }

    /// Wait until every word at `offsets` not ignored by `ignore` (one
    /// entry per offset, true to ignore it; OpenSHMEM's `status`)
    /// compares with `value`. Returns at once when every word is
    /// ignored or there are none. As [`wait_until`](Self::wait_until)
    /// otherwise.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// // One flag per peer, at 0, 8, 16: all set to 1.
    /// ep.wait_until_all::<u64>(&[0, 8, 16], None, Cmp::Eq, 1)?;
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn wait_until_all<T: WaitWord>(
        &self,
        offsets: &[u64],
        ignore: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        let waiting = array_waiting("wait_until_all", offsets);
        let words = masked::<T>(self, offsets, ignore)?;
        self.wait_memory("wait_until_all", waiting, || {
            words.iter().all(|(_, w)| cmp.holds(w.load(), value))
        })
    }

    /// Wait until one word at `offsets` not ignored compares with
    /// `value`; its index (the lowest such when several do). `None` at
    /// once when every word is ignored or there are none. Ignore the
    /// index returned in the next call to find another (OpenSHMEM's
    /// idiom). As [`wait_until_all`](Self::wait_until_all) otherwise.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// let offsets = [0, 8, 16];
    /// let mut done = [false; 3];
    /// while let Some(i) = ep.wait_until_any::<u64>(&offsets, Some(&done), Cmp::Ne, 0)? {
    ///     done[i] = true; // handle word i
    /// }
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn wait_until_any<T: WaitWord>(
        &self,
        offsets: &[u64],
        ignore: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        let words = masked::<T>(self, offsets, ignore)?;
        if words.is_empty() {
            return Ok(None);
        }
        let hit = |words: &[(usize, Word<T>)]| {
            words
                .iter()
                .find(|(_, w)| cmp.holds(w.load(), value))
                .map(|(i, _)| *i)
        };
        let waiting = array_waiting("wait_until_any", offsets);
        self.wait_memory("wait_until_any", waiting, || hit(&words).is_some())?;
        Ok(hit(&words))
    }

    /// Wait until at least one word at `offsets` not ignored compares
    /// with `value`; the indices of all that do then (in increasing
    /// order). Empty at once when every word is ignored or there are
    /// none. As [`wait_until_all`](Self::wait_until_all) otherwise.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// let ready = ep.wait_until_some::<u32>(&[0, 4, 8, 12], None, Cmp::Gt, 0)?;
    /// assert!(!ready.is_empty());
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn wait_until_some<T: WaitWord>(
        &self,
        offsets: &[u64],
        ignore: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        let words = masked::<T>(self, offsets, ignore)?;
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let waiting = array_waiting("wait_until_some", offsets);
        self.wait_memory("wait_until_some", waiting, || {
            words.iter().any(|(_, w)| cmp.holds(w.load(), value))
        })?;
        Ok(satisfied(&words, cmp, value))
    }

    /// One progress (outside a handler: handlers run, a reference
    /// put-with-signal's among them), then look: true if the word at
    /// `offset` compares with `value`. Never waits. Checked as for
    /// [`wait_until`](Self::wait_until).
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// while !ep.test::<u64>(0, Cmp::Eq, 1)? {
    ///     // compute meanwhile
    /// }
    /// # Ok(()) }
    /// ```
    pub fn test<T: WaitWord>(&self, offset: u64, cmp: Cmp, value: T) -> Result<bool> {
        let w = self.word::<T>(offset)?;
        self.test_progress();
        Ok(cmp.holds(w.load(), value))
    }

    /// As [`test`](Self::test) for every word at `offsets` not ignored
    /// (true when all are ignored or there are none).
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// let all = ep.test_all::<u64>(&[0, 8], None, Cmp::Eq, 1)?;
    /// # let _ = all; Ok(()) }
    /// ```
    pub fn test_all<T: WaitWord>(
        &self,
        offsets: &[u64],
        ignore: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<bool> {
        let words = masked::<T>(self, offsets, ignore)?;
        self.test_progress();
        Ok(words.iter().all(|(_, w)| cmp.holds(w.load(), value)))
    }

    /// As [`test`](Self::test): the index of one word at `offsets` not
    /// ignored that compares with `value` (the lowest), or `None`.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// if let Some(i) = ep.test_any::<u64>(&[0, 8], None, Cmp::Ne, 0)? {
    ///     println!("word {i} is set");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn test_any<T: WaitWord>(
        &self,
        offsets: &[u64],
        ignore: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        let words = masked::<T>(self, offsets, ignore)?;
        self.test_progress();
        Ok(satisfied(&words, cmp, value).first().copied())
    }

    /// As [`test`](Self::test): the indices of the words at `offsets`
    /// not ignored that compare with `value` (possibly none).
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// let set = ep.test_some::<u64>(&[0, 8, 16], None, Cmp::Ne, 0)?;
    /// # let _ = set; Ok(()) }
    /// ```
    pub fn test_some<T: WaitWord>(
        &self,
        offsets: &[u64],
        ignore: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        let words = masked::<T>(self, offsets, ignore)?;
        self.test_progress();
        Ok(satisfied(&words, cmp, value))
    }

    /// A test's one progress: none inside a handler (which may not poll).
    fn test_progress(&self) {
        if !in_handler() {
            self.progress(PollSet::All);
        }
    }

    /// [`wait_until`](Self::wait_until) as a `Future`: it resolves to the
    /// word once it compares with `value`, woken by this rank's progress
    /// (see the [module docs](self)); someone must drive progress (a
    /// progress thread or task). It ends with an error as the blocking
    /// wait does, and with [`Error::NbiAcrossAwait`] if it would suspend
    /// while this thread has implicit operations unsynced. The offset is
    /// checked here.
    ///
    /// ```no_run
    /// # async fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// let seen = ep.wait_until_async::<u64>(0, Cmp::Ge, 1)?.await?;
    /// # let _ = seen; Ok(()) }
    /// ```
    pub fn wait_until_async<T: WaitWord>(
        &self,
        offset: u64,
        cmp: Cmp,
        value: T,
    ) -> Result<WaitUntil<T>> {
        let w = self.word::<T>(offset)?;
        Ok(self.memory_future("wait_until_async", move || {
            let v = w.load();
            cmp.holds(v, value).then_some(v)
        }))
    }

    /// [`wait_until_all`](Self::wait_until_all) as a `Future` (see
    /// [`wait_until_async`](Self::wait_until_async)).
    ///
    /// ```no_run
    /// # async fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// ep.wait_until_all_async::<u64>(&[0, 8, 16], None, Cmp::Eq, 1)?.await?;
    /// # Ok(()) }
    /// ```
    pub fn wait_until_all_async<T: WaitWord>(
        &self,
        offsets: &[u64],
        ignore: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<WaitMemory<()>> {
        let words = masked::<T>(self, offsets, ignore)?;
        Ok(self.memory_future("wait_until_all_async", move || {
            words
                .iter()
                .all(|(_, w)| cmp.holds(w.load(), value))
                .then_some(())
        }))
    }

    /// [`wait_until_any`](Self::wait_until_any) as a `Future` (see
    /// [`wait_until_async`](Self::wait_until_async)): the index of one
    /// word that compares with `value`, `None` at once when every word is
    /// ignored or there are none.
    ///
    /// ```no_run
    /// # async fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// let first = ep.wait_until_any_async::<u64>(&[0, 8], None, Cmp::Ne, 0)?.await?;
    /// # let _ = first; Ok(()) }
    /// ```
    pub fn wait_until_any_async<T: WaitWord>(
        &self,
        offsets: &[u64],
        ignore: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<WaitMemory<Option<usize>>> {
        let words = masked::<T>(self, offsets, ignore)?;
        Ok(self.memory_future("wait_until_any_async", move || {
            if words.is_empty() {
                return Some(None);
            }
            satisfied(&words, cmp, value).first().map(|&i| Some(i))
        }))
    }

    /// [`wait_until_some`](Self::wait_until_some) as a `Future` (see
    /// [`wait_until_async`](Self::wait_until_async)): the indices of every
    /// word that compares with `value` once one does, empty at once when
    /// every word is ignored or there are none.
    ///
    /// ```no_run
    /// # async fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_endpoint::Cmp;
    /// let ready = ep.wait_until_some_async::<u32>(&[0, 4, 8], None, Cmp::Gt, 0)?.await?;
    /// # let _ = ready; Ok(()) }
    /// ```
    pub fn wait_until_some_async<T: WaitWord>(
        &self,
        offsets: &[u64],
        ignore: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<WaitMemory<Vec<usize>>> {
        let words = masked::<T>(self, offsets, ignore)?;
        Ok(self.memory_future("wait_until_some_async", move || {
            let hits = satisfied(&words, cmp, value);
            (words.is_empty() || !hits.is_empty()).then_some(hits)
        }))
    }

    /// A future that resolves to what `ready` returns once it returns
    /// something (see [`WaitMemory`]).
    fn memory_future<O>(
        &self,
        what: &'static str,
        ready: impl Fn() -> Option<O> + Send + Sync + 'static,
    ) -> WaitMemory<O> {
        WaitMemory {
            ep: self
                .me
                .upgrade()
                .expect("an endpoint is used through its Arc"),
            what,
            ready: Arc::new(ready),
            waiter: None,
        }
    }
}

/// The future of [`Endpoint::wait_until_async`]: the word once it
/// compares with the value.
///
/// ```no_run
/// # async fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
/// use rgex_endpoint::{Cmp, WaitUntil};
/// let _progress = ep.start_progress_thread()?; // someone drives progress
/// let flag: WaitUntil<u32> = ep.wait_until_async(0, Cmp::Eq, 1)?;
/// assert_eq!(flag.await?, 1);
/// # Ok(()) }
/// ```
pub type WaitUntil<T> = WaitMemory<T>;

/// The future of a wait on memory ([`Endpoint::wait_until_async`] and
/// its `_all`, `_any` and `_some` forms): what its condition gives once
/// it holds, re-checked by this rank's progress. Dropping it unregisters
/// it.
///
/// ```no_run
/// # async fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
/// use rgex_endpoint::{Cmp, WaitMemory};
/// let _progress = ep.start_progress_thread()?;
/// let set: WaitMemory<Vec<usize>> = ep.wait_until_some_async::<u64>(&[0, 8], None, Cmp::Eq, 1)?;
/// assert!(!set.await?.is_empty());
/// # Ok(()) }
/// ```
#[must_use = "a future does nothing unless awaited"]
pub struct WaitMemory<O> {
    ep: Arc<Endpoint>,
    /// The call, for errors.
    what: &'static str,
    /// The result, once the condition holds.
    ready: Arc<dyn Fn() -> Option<O> + Send + Sync>,
    waiter: Option<Arc<Waiter>>,
}

impl<O> std::fmt::Debug for WaitMemory<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitMemory")
            .field("rank", &self.ep.rank())
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

impl<O: 'static> WaitMemory<O> {
    fn finish(&mut self, r: Result<O>) -> Poll<Result<O>> {
        if let Some(w) = self.waiter.take() {
            self.ep.memory_waits().unregister(&w);
        }
        Poll::Ready(r)
    }
}

impl<O> Unpin for WaitMemory<O> {}

impl<O: 'static> Future for WaitMemory<O> {
    type Output = Result<O>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<O>> {
        let this = self.get_mut();
        if let Some(e) = this.waiter.as_ref().and_then(|w| w.failure()) {
            return this.finish(Err(e));
        }
        if let Some(v) = (this.ready)() {
            return this.finish(Ok(v));
        }
        if let Err(e) = this.ep.check_open(this.what) {
            return this.finish(Err(e));
        }
        let waiter = match &this.waiter {
            Some(w) => w.clone(),
            None => {
                let ready = this.ready.clone();
                let w = this
                    .ep
                    .memory_waits()
                    .register(Some(Box::new(move || ready().is_some())));
                this.waiter = Some(w.clone());
                w
            }
        };
        waiter.waker.register(cx.waker());
        // SeqCst: registered (above) before the re-read (below), against
        // a writer's update before its look at the registered futures
        // (`memory_changed`): one of the two sees the other.
        fence(Ordering::SeqCst);
        if let Some(v) = (this.ready)() {
            return this.finish(Ok(v));
        }
        if let Some(what) = rgex_core::nbi::suspend_hazard() {
            return this.finish(Err(Error::NbiAcrossAwait { what }));
        }
        Poll::Pending
    }
}

impl<O> Drop for WaitMemory<O> {
    fn drop(&mut self) {
        if let Some(w) = self.waiter.take() {
            self.ep.memory_waits().unregister(&w);
        }
    }
}
