//! Events: the handles of non-blocking operations.

use crate::blocked::Waiting;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::waker::AtomicWaker;
use crate::Backoff;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

/// The top bit of a counter's word: a future has registered a waker, so
/// the operation that brings the count to zero wakes it. Kept in the
/// count's own word so the completing thread learns it from the
/// decrement it makes anyway (no extra load, no fence, no RMW).
const AWAITED: u64 = 1 << 63;
/// The count's bits.
const COUNT: u64 = AWAITED - 1;

/// The completion counter behind one event (or an NBI group): operations
/// outstanding. An operation is counted with [`add`](Self::add) before it
/// is injected and finished with [`done`](Self::done) when it completes.
///
/// ```
/// use rgex_core::event::OpCounter;
/// let c = OpCounter::new(2);
/// assert!(!c.is_done());
/// c.done();
/// c.done();
/// assert!(c.is_done());
/// ```
///
/// # Demand
///
/// Proving that a put landed can cost the target CPU time on the
/// critical path of whatever it does next (over software providers its
/// progress call answers each write). For a counter of many operations
/// whose completion is asked for together ([`batched`](Self::batched):
/// the implicit-handle categories and access regions), a conduit may
/// instead prove a whole batch at once, when someone wants to know: a
/// batched counter remembers that [`is_done`](Self::is_done) found it
/// unfinished (a wait or a test: [`wanted`](Self::wanted)); other
/// counters track no demand, since nothing consults it. Bookkeeping that
/// is not a wait looks with [`peek_done`](Self::peek_done), which asks
/// for nothing.
///
/// # Awaiting
///
/// [`poll_done`](Self::poll_done) registers the polling task's waker
/// (one per counter: the future of the one handle that owns it), and the
/// [`done`](Self::done) that brings the count to zero wakes it, on
/// whichever thread's progress finished the operation. Nothing is
/// allocated and no atomic is added to `done` for a counter nobody
/// awaits: the decrement it always makes returns the "awaited" bit too.
/// A future completes only when someone drives progress (a wait, a poll,
/// the endpoint's progress task).
#[derive(Debug, Default)]
pub struct OpCounter {
    /// The count, with [`AWAITED`] in its top bit.
    outstanding: AtomicU64,
    /// `is_done` found operations outstanding since a conduit last took
    /// this (see [`take_wanted`](Self::take_wanted)); batched counters only.
    wanted: AtomicBool,
    /// Counts many operations whose completion is asked for together.
    batched: bool,
    /// Why an operation counted here failed (the first failure), if one did.
    failure: OnceLock<String>,
    /// The task awaiting this counter, if one registered.
    waker: AtomicWaker,
}

impl OpCounter {
    /// A counter with `n` operations outstanding.
    pub fn new(n: u64) -> Arc<Self> {
        Arc::new(OpCounter {
            outstanding: AtomicU64::new(n),
            wanted: AtomicBool::new(false),
            batched: false,
            failure: OnceLock::new(),
            waker: AtomicWaker::new(),
        })
    }

    /// Make `this` as it was made, with nothing outstanding, if no one else
    /// holds it (no conduit still has a clone): true if it was, false if
    /// it is shared (then it is left as it is). Lets a caller that waits
    /// for each of its operations in turn keep one counter instead of
    /// allocating one per operation.
    ///
    /// ```
    /// use rgex_core::event::OpCounter;
    /// let mut c = OpCounter::new(1);
    /// c.fail("refused".into());
    /// assert!(OpCounter::renew(&mut c));
    /// assert!(c.peek_done() && c.failure().is_none());
    /// let held = c.clone();
    /// assert!(!OpCounter::renew(&mut c)); // a clone is still out
    /// # drop(held);
    /// ```
    pub fn renew(this: &mut Arc<Self>) -> bool {
        // `Arc::get_mut` sees every other holder's drop (it synchronises
        // with their decrements), so nothing written through a clone
        // that was dropped can race with the writes below.
        let Some(c) = Arc::get_mut(this) else {
            return false;
        };
        // Relaxed: `c` is this thread's alone (above); plain stores
        // (loom's atomics have no `get_mut`).
        c.outstanding.store(0, Ordering::Relaxed);
        c.wanted.store(false, Ordering::Relaxed);
        c.failure = OnceLock::new();
        c.waker = AtomicWaker::new();
        true
    }

    /// A counter for many operations whose completion is asked for
    /// together (an implicit-handle category, an access region):
    /// conduits may prove its operations landed a batch at a time, when
    /// someone asks, rather than one by one as each lands (see the type's
    /// docs). A counter of one operation, which its caller may wait for
    /// at once, is made by [`new`](Self::new).
    ///
    /// ```
    /// use rgex_core::event::OpCounter;
    /// assert!(OpCounter::batched(0).is_batched());
    /// assert!(!OpCounter::new(0).is_batched());
    /// ```
    pub fn batched(n: u64) -> Arc<Self> {
        Arc::new(OpCounter {
            outstanding: AtomicU64::new(n),
            wanted: AtomicBool::new(false),
            batched: true,
            failure: OnceLock::new(),
            waker: AtomicWaker::new(),
        })
    }

    /// True for a counter made by [`batched`](Self::batched).
    #[inline]
    pub fn is_batched(&self) -> bool {
        self.batched
    }

    /// True if [`is_done`](Self::is_done) found operations outstanding
    /// since the last [`take_wanted`](Self::take_wanted) (only ever for a
    /// [`batched`](Self::batched) counter).
    #[inline]
    pub fn wanted(&self) -> bool {
        // Relaxed: a hint. A conduit that reads it stale asks for the
        // answer one progress call later, and the waiter keeps calling
        // `is_done` (setting it again) until the answer comes.
        self.wanted.load(Ordering::Relaxed)
    }

    /// Take the demand: true if it was [`wanted`](Self::wanted), which it
    /// no longer is. A conduit calls this when it asks for the answer.
    ///
    /// ```
    /// use rgex_core::event::OpCounter;
    /// let c = OpCounter::batched(1);
    /// assert!(!c.wanted() && !c.peek_done());
    /// assert!(!c.is_done());             // a look that found it unfinished
    /// assert!(c.take_wanted() && !c.wanted());
    /// let one = OpCounter::new(1);     // a counter of its own: no demand kept
    /// assert!(!one.is_done() && !one.wanted());
    /// ```
    #[inline]
    pub fn take_wanted(&self) -> bool {
        // Relaxed: as for `wanted`.
        self.wanted.swap(false, Ordering::Relaxed)
    }

    /// Count `n` more operations.
    #[inline]
    pub fn add(&self, n: u64) {
        // Relaxed: the matching `done` happens after the operation is
        // injected, which happens after this in program order; `done`'s
        // Release and `is_done`'s Acquire order the data.
        self.outstanding.fetch_add(n, Ordering::Relaxed);
    }

    /// Finish one operation; if that leaves nothing outstanding and a
    /// task awaits the counter, wake it.
    #[inline]
    pub fn done(&self) {
        // Release: the operation's effects (bytes landed, value fetched)
        // happen before a waiter's Acquire load sees the count drop.
        // Acquire: when the word read has AWAITED, set by a poller's
        // Release `fetch_or` after it registered, its waker is visible to
        // the wake below (the slot's own protocol then hands it over).
        // On x86 this is the same `lock xadd` as Release alone.
        let before = self.outstanding.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(before & COUNT > 0, "OpCounter::done without a matching add");
        if before == AWAITED | 1 {
            self.waker.wake();
        }
    }

    /// Finish one operation that failed (its peer went away, say): the
    /// count drops as for [`done`](Self::done), so no waiter hangs, and
    /// [`Event::wait`] reports `why` (the first failure recorded).
    ///
    /// ```
    /// use rgex_core::event::OpCounter;
    /// let c = OpCounter::new(1);
    /// c.fail("put to rank 3: rank 3 is unreachable".into());
    /// assert!(c.is_done() && c.failure().unwrap().contains("rank 3"));
    /// ```
    pub fn fail(&self, why: String) {
        let _ = self.failure.set(why);
        self.done();
    }

    /// Why an operation counted here failed, if one did.
    pub fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// [`Error::Failed`](crate::Error::Failed) with the first failure
    /// recorded here, if an operation failed: what a wait returns
    /// once nothing is outstanding.
    ///
    /// ```
    /// use rgex_core::event::OpCounter;
    /// let c = OpCounter::new(1);
    /// c.done();
    /// assert!(c.check().is_ok());
    /// let c = OpCounter::new(1);
    /// c.fail("get from rank 2: rank 2 is unreachable".into());
    /// assert!(c.check().unwrap_err().to_string().contains("rank 2"));
    /// ```
    pub fn check(&self) -> crate::Result<()> {
        match self.failure() {
            Some(why) => Err(crate::Error::Failed(why.to_string())),
            None => Ok(()),
        }
    }

    /// True if nothing is outstanding; if something is, a
    /// [`batched`](Self::batched) counter is now [`wanted`](Self::wanted)
    /// (whoever looks is waiting or testing).
    #[inline]
    pub fn is_done(&self) -> bool {
        let done = self.peek_done();
        // Relaxed: a hint (see `wanted`); written only when it changes,
        // so a waiter spinning here does not keep taking the line from
        // the thread that completes the operations.
        if !done && self.batched && !self.wanted.load(Ordering::Relaxed) {
            self.wanted.store(true, Ordering::Relaxed);
        }
        done
    }

    /// True if nothing is outstanding, without marking the counter
    /// [`wanted`](Self::wanted): for bookkeeping that is not a wait
    /// (deciding whether an operation finished during injection).
    #[inline]
    pub fn peek_done(&self) -> bool {
        // Acquire: pairs with `done`, so the caller sees the effects.
        self.outstanding.load(Ordering::Acquire) & COUNT == 0
    }

    /// Operations outstanding (a snapshot).
    pub fn outstanding(&self) -> u64 {
        self.outstanding.load(Ordering::Relaxed) & COUNT
    }

    /// Ready with [`check`](Self::check)'s answer once nothing is
    /// outstanding; else register `cx`'s waker, woken by the
    /// [`done`](Self::done) that brings the count to zero. Does not poll
    /// the endpoint: something else must drive progress.
    ///
    /// ```
    /// use rgex_core::event::OpCounter;
    /// use std::task::{Context, Poll, Waker};
    /// let c = OpCounter::new(1);
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(c.poll_done(&mut cx).is_pending());
    /// c.done(); // wakes the registered (here: no-op) waker
    /// assert!(matches!(c.poll_done(&mut cx), Poll::Ready(Ok(()))));
    /// ```
    pub fn poll_done(&self, cx: &mut Context<'_>) -> Poll<crate::Result<()>> {
        if self.is_done() {
            return Poll::Ready(self.check());
        }
        self.waker.register(cx.waker());
        // AcqRel: Release publishes the registration to the `done` whose
        // decrement reads this bit (its Acquire); Acquire, when the count
        // is already zero, pairs with that `done`'s Release so the
        // operation's effects (and its failure) are visible. Both are
        // read-modify-writes of one word: either `done`'s decrement comes
        // later in its order and sees AWAITED (and wakes), or it came
        // first and this sees the count at zero. No wake-up is lost.
        let now = self.outstanding.fetch_or(AWAITED, Ordering::AcqRel);
        if now & COUNT == 0 {
            Poll::Ready(self.check())
        } else {
            Poll::Pending
        }
    }
}

/// What waits poll: the endpoint, for the events it hands out.
pub trait Progress: Send + Sync {
    /// Make progress (run handlers, reap completions); how many things happened.
    fn progress(&self) -> usize;
    /// True if waits should yield the CPU at once.
    fn polite(&self) -> bool;
}

/// The handle of a non-blocking operation.
///
/// [`test`](Self::test) looks without polling; [`wait`](Self::wait) polls
/// until done. An event made by [`Event::done`] (the "invalid" event of
/// GASNet) is complete from the start: returned by operations that finished
/// during injection.
///
/// ```
/// use rgex_core::event::Event;
/// let e = Event::done();
/// assert!(e.test() && e.is_invalid());
/// e.wait().unwrap();
/// ```
#[must_use = "an event must be tested or waited on to know the operation completed"]
pub struct Event {
    pending: Option<(Arc<OpCounter>, Arc<dyn Progress>)>,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("done", &self.test())
            .field("invalid", &self.is_invalid())
            .finish()
    }
}

impl Event {
    /// An event that is already complete (GASNet's invalid event).
    #[inline]
    pub const fn done() -> Self {
        Event { pending: None }
    }

    /// An event complete when `c` has nothing outstanding; waits poll `p`.
    #[inline]
    pub fn pending(c: Arc<OpCounter>, p: Arc<dyn Progress>) -> Self {
        Event {
            pending: Some((c, p)),
        }
    }

    /// True for the already-complete event.
    pub fn is_invalid(&self) -> bool {
        self.pending.is_none()
    }

    /// True if the operation completed. Does not poll.
    #[inline]
    pub fn test(&self) -> bool {
        self.pending.as_ref().is_none_or(|(c, _)| c.is_done())
    }

    /// Poll until the operation completes; an error if it failed (a peer
    /// that went away, on a conduit that can tell), with the operation,
    /// the ranks and the cause.
    ///
    /// ```
    /// use rgex_core::event::{OpCounter, Event};
    /// # struct Idle;
    /// # impl rgex_core::Progress for Idle {
    /// #     fn progress(&self) -> usize { 0 }
    /// #     fn polite(&self) -> bool { true }
    /// # }
    /// let c = OpCounter::new(1);
    /// c.fail("put to rank 1: rank 1 is unreachable".into());
    /// let e = Event::pending(c, std::sync::Arc::new(Idle));
    /// assert!(e.wait().unwrap_err().to_string().contains("rank 1"));
    /// assert!(Event::done().wait().is_ok());
    /// ```
    ///
    /// While it blocks, the thread's record of what it waits for (see
    /// [`blocked`](crate::blocked)) names the caller's line;
    /// [`wait_on`](Self::wait_on) says more.
    #[track_caller]
    #[inline]
    pub fn wait(self) -> crate::Result<()> {
        if self.pending.is_none() {
            return Ok(());
        }
        self.wait_on(Waiting::new("an operation's completion"))
    }

    /// [`wait`](Self::wait), recording `waiting` as what this thread is
    /// blocked on should it block (an operation that knows its peer says
    /// so).
    ///
    /// ```
    /// use rgex_core::blocked::Waiting;
    /// use rgex_core::{Event, Rank};
    /// Event::done().wait_on(Waiting::new("a blocking get").peer(Rank(1)))?;
    /// # Ok::<(), rgex_core::Error>(())
    /// ```
    pub fn wait_on(self, waiting: Waiting) -> crate::Result<()> {
        match &self.pending {
            None => Ok(()),
            Some((c, p)) => {
                spin_until_done(c, &**p, waiting);
                c.check()
            }
        }
    }

    /// Poll until the operation completes, not asking whether it failed:
    /// for a caller that learns of a failure another way (a drop that
    /// must only wait until the transport is done with a buffer).
    #[track_caller]
    pub fn wait_unchecked(self) {
        if let Some((c, p)) = &self.pending {
            spin_until_done(c, &**p, Waiting::new("an operation's completion"));
        }
    }

    /// Keep `held` (the buffer an operation reads or writes, say) alive
    /// until this event's operation completes, and return at once: the
    /// thread whose progress completes it drops `held` then (or this
    /// call, if it already has). What a handle's drop does instead of
    /// waiting, so that cancelling a future (a `select!`, a timeout)
    /// never blocks its thread, and no operation writes into memory that
    /// was freed. An operation that never completes keeps `held` for
    /// good (its memory stays valid; it is not reused).
    ///
    /// ```
    /// use rgex_core::event::{OpCounter, Event};
    /// # struct Idle;
    /// # impl rgex_core::Progress for Idle {
    /// #     fn progress(&self) -> usize { 0 }
    /// #     fn polite(&self) -> bool { true }
    /// # }
    /// use std::sync::Arc;
    /// let c = OpCounter::new(1);
    /// let buf = Arc::new(vec![0u8; 64]);
    /// Event::pending(c.clone(), Arc::new(Idle)).keep_until_done(buf.clone());
    /// assert_eq!(Arc::strong_count(&buf), 2); // kept: the operation is in flight
    /// c.done(); // the transport is done with it
    /// assert_eq!(Arc::strong_count(&buf), 1);
    /// ```
    pub fn keep_until_done<T: Send + 'static>(self, held: T) {
        let Some((c, _)) = self.pending else { return };
        if c.is_done() {
            return;
        }
        let keeper = Arc::new(Keeper {
            c,
            held: std::sync::Mutex::new(Some(Box::new(held))),
        });
        keeper.watch();
    }

    /// Poll until every event completes; all become invalid. The first
    /// failure among them, if one failed (every event is waited for all
    /// the same).
    pub fn wait_all(events: &mut [Event]) -> crate::Result<()> {
        let mut first = Ok(());
        for e in events.iter_mut() {
            let r = std::mem::replace(e, Event::done()).wait();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    /// Poll until at least one event completes (returns at once if one has,
    /// or if the slice holds only invalid events). Completed events become
    /// invalid; their indices are returned. If a completed event failed,
    /// the first such becomes invalid and its error is returned; the other
    /// completed events are left as they are, so the next call reports them.
    pub fn wait_some(events: &mut [Event]) -> crate::Result<Vec<usize>> {
        let progress = events
            .iter()
            .find_map(|e| e.pending.as_ref().map(|(_, p)| p.clone()));
        let mut backoff = Backoff::waiting(
            progress.as_ref().is_some_and(|p| p.polite()),
            Waiting::new("the first of several operations (Event::wait_some)")
                .value("events", events.len() as u64),
        );
        loop {
            let mut done = Vec::new();
            let mut live = 0;
            for (i, e) in events.iter_mut().enumerate() {
                if e.is_invalid() {
                    continue;
                }
                live += 1;
                if e.test() {
                    let failed = e.pending.as_ref().and_then(|(c, _)| c.check().err());
                    if let Some(err) = failed {
                        *e = Event::done();
                        return Err(err);
                    }
                    done.push(i);
                }
            }
            if !done.is_empty() || live == 0 {
                for &i in &done {
                    events[i] = Event::done();
                }
                return Ok(done);
            }
            match &progress {
                Some(p) if p.progress() > 0 => backoff.reset(),
                _ => backoff.snooze(),
            }
        }
    }
}

/// An event is a future of the operation's outcome: `ev.await` is
/// [`wait`](Event::wait) for async code, without the polling. It resolves
/// when the operation completes, woken by whichever thread's progress
/// completes it; it does not poll the endpoint itself, so someone must
/// drive progress meanwhile (the endpoint's progress task, a thread that
/// waits or polls).
///
/// ```
/// use rgex_core::event::{OpCounter, Event};
/// # struct Idle;
/// # impl rgex_core::Progress for Idle {
/// #     fn progress(&self) -> usize { 0 }
/// #     fn polite(&self) -> bool { true }
/// # }
/// use std::future::Future;
/// use std::task::{Context, Poll, Waker};
/// let c = OpCounter::new(1);
/// let mut ev = Event::pending(c.clone(), std::sync::Arc::new(Idle));
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(std::pin::Pin::new(&mut ev).poll(&mut cx).is_pending());
/// c.done(); // another thread's progress, in real use
/// assert!(matches!(std::pin::Pin::new(&mut ev).poll(&mut cx), Poll::Ready(Ok(()))));
/// ```
impl Future for Event {
    type Output = crate::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &self.pending {
            None => Poll::Ready(Ok(())),
            Some((c, _)) => match c.poll_done(cx) {
                // About to suspend: per-thread NBI state must not cross it
                // (see `crate::nbi`). Out of line: the ready path pays nothing.
                Poll::Pending => match crate::nbi::suspend_hazard() {
                    None => Poll::Pending,
                    Some(what) => Poll::Ready(Err(crate::Error::NbiAcrossAwait { what })),
                },
                ready => ready,
            },
        }
    }
}

/// What [`Event::keep_until_done`] keeps: the operation's counter, and
/// what to drop once it is done. Its own waker: the counter's wake (from
/// whichever thread completes the operation) drops what it holds. Until
/// then the counter holds the waker, which holds this: a cycle that the
/// wake breaks.
struct Keeper {
    c: Arc<OpCounter>,
    held: std::sync::Mutex<Option<Box<dyn Send>>>,
}

impl Keeper {
    /// Register as the counter's waker; drop what is held if the counter
    /// is done already (then or in a race with the registration).
    fn watch(self: &Arc<Self>) {
        let waker = std::task::Waker::from(self.clone());
        if self
            .c
            .poll_done(&mut Context::from_waker(&waker))
            .is_ready()
        {
            self.release();
        }
    }

    fn release(&self) {
        // Taken out under the lock, dropped after it: a buffer's drop
        // takes no lock of ours. A poisoned lock still holds a valid Option.
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(held);
    }
}

impl std::task::Wake for Keeper {
    fn wake(self: Arc<Self>) {
        // A wake may come early (a waker shared by several operations of
        // one counter): look again, and watch on if not done.
        if self.c.is_done() {
            self.release();
        } else {
            self.watch();
        }
    }
}

/// Poll `p` until `c` has nothing outstanding (backing off while nothing
/// happens; recording `waiting` once it yields).
#[inline]
fn spin_until_done(c: &OpCounter, p: &dyn Progress, waiting: Waiting) {
    if c.is_done() {
        return;
    }
    let mut backoff = Backoff::waiting(p.polite(), waiting);
    while !c.is_done() {
        if p.progress() == 0 {
            backoff.snooze();
        } else {
            backoff.reset();
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The awaited counter under the model checker: a poll racing the
    //! `done` that finishes the count never loses the wake-up.

    use super::OpCounter;
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    /// Counts its wakes.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    #[test]
    fn loom_poll_racing_done_is_woken() {
        loom::model(|| {
            let c = OpCounter::new(1);
            let c2 = c.clone();
            let t = loom::thread::spawn(move || c2.done());
            let (count, w) = waker();
            let first = c.poll_done(&mut Context::from_waker(&w));
            t.join().unwrap();
            if first.is_pending() {
                // Pending: the done came after the registration, so it
                // must have woken this task.
                assert!(count.0.load(Ordering::SeqCst) >= 1, "lost wake-up");
            }
            assert!(matches!(
                c.poll_done(&mut Context::from_waker(&w)),
                Poll::Ready(Ok(()))
            ));
        });
    }

    #[test]
    fn loom_repoll_with_a_new_waker_and_a_failure() {
        // Two polls (the task moved: a new waker) racing a failing op:
        // the task is woken through the waker of its last poll, or a poll
        // sees the count at zero, and the outcome is the failure.
        loom::model(|| {
            let c = OpCounter::new(1);
            let c2 = c.clone();
            let t = loom::thread::spawn(move || c2.fail("put to rank 1: gone".into()));
            let (a, wa) = waker();
            let (b, wb) = waker();
            let p1 = c.poll_done(&mut Context::from_waker(&wa));
            let p2 = c.poll_done(&mut Context::from_waker(&wb));
            t.join().unwrap();
            if p2.is_pending() {
                assert!(
                    b.0.load(Ordering::SeqCst) >= 1,
                    "lost wake-up of the new waker"
                );
            }
            // A poll that found the count at zero reports the failure.
            for p in [&p1, &p2] {
                if let Poll::Ready(r) = p {
                    assert!(r.is_err(), "a failed op reported success");
                }
            }
            // The first waker may be woken too (the new one replaced it
            // only if they differ), never more than once per zero.
            assert!(a.0.load(Ordering::SeqCst) <= 1);
            match c.poll_done(&mut Context::from_waker(&wb)) {
                Poll::Ready(Err(e)) => assert!(e.to_string().contains("rank 1")),
                other => panic!("expected the failure, got {other:?}"),
            }
        });
    }
}
