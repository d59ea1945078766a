//! The table of calls waiting for their results: a slab of slots, where
//! a call's ticket is its slot's index (low bits) and the slot's
//! generation (high bits).
//!
//! Opening, completing and taking a call are each one index into a
//! vector, with no hashing and no rehash as the table grows. A slot's
//! generation advances every time it is freed, so a result that comes for
//! a call whose future was dropped meanwhile finds a newer generation in
//! the slot and is discarded: it never completes a later call that reuses
//! the slot (until the generation wraps, after [`GENERATIONS`] reuses of
//! one slot while that result is still on its way).
//!
//! A slot may also count the calls of a [`Promise`](crate::Promise)
//! ([`Counting`]): their tickets carry [`COUNTED`], and their targets
//! answer each with an acknowledgement instead of its result.
//!
//! The table lives under the mailbox's lock; nothing here is shared.

use crate::runtime::Returned;
use rgex::Rank;
use std::task::Waker;

/// Bits of a ticket that index the slab.
const INDEX_BITS: u32 = 21;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;

/// The ticket bit of a counted call (a promise's): its target answers
/// with an acknowledgement, not with the result.
pub(crate) const COUNTED: u32 = 1 << 31;

/// How many calls may wait for their results at once on one rank.
pub(crate) const MAX_OPEN: u32 = INDEX_MASK;

/// How many times a slot is reused before its tickets repeat (the bits
/// between the index and [`COUNTED`]).
pub(crate) const GENERATIONS: u32 = 1 << (31 - INDEX_BITS);

/// No slot (the end of the free list).
const NONE: u32 = u32::MAX;

/// One call, or a free slot.
enum State {
    /// Unused; `next` links the free list.
    Free { next: u32 },
    /// Sent; its outcome has not come.
    Open { target: Rank, waker: Option<Waker> },
    /// Its outcome came and waits for its future.
    Done(Returned),
    /// A promise's calls (boxed: a promise stands for many calls, and
    /// the other states stay small).
    Counting(Box<Counting>),
}

/// The calls of one promise: how many each target has answered, and,
/// once the promise is finalized, how many were made to each.
#[derive(Default)]
pub(crate) struct Counting {
    /// Per target: its calls answered (acknowledged or failed).
    done: Vec<u64>,
    done_total: u64,
    /// Per target: the calls made, known once the promise is finalized.
    issued: Option<Vec<u64>>,
    issued_total: u64,
    /// The first call that failed: its target and why.
    failed: Option<(Rank, String)>,
    waker: Option<Waker>,
}

impl Counting {
    /// Every call made has been answered (false before the promise is
    /// finalized).
    fn finished(&self) -> bool {
        self.issued.is_some() && self.done_total >= self.issued_total
    }

    /// The calls to target `t` not yet answered (none before finalize).
    fn unanswered(&self, t: usize) -> u64 {
        let made = self.issued.as_ref().and_then(|i| i.get(t)).copied();
        let done = self.done.get(t).copied().unwrap_or(0);
        made.unwrap_or(0).saturating_sub(done)
    }

    /// The targets with calls not yet answered (none before finalize).
    fn waiting_on(&self) -> Vec<Rank> {
        let targets = self.issued.as_ref().map_or(0, Vec::len);
        (0..targets)
            .filter(|&t| self.unanswered(t) > 0)
            .map(|t| Rank(t as u32))
            .collect()
    }

    /// Count `n` calls to `target` as answered.
    fn add_done(&mut self, target: Rank, n: u64) {
        let t = target.0 as usize;
        if self.done.len() <= t {
            self.done.resize(t + 1, 0);
        }
        self.done[t] += n;
        self.done_total += n;
    }
}

/// Keep `waker` in `slot` (unless the one there wakes the same task).
fn remember(slot: &mut Option<Waker>, waker: &Waker) {
    if !slot.as_ref().is_some_and(|old| old.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
}

/// What a finalized promise's calls came to: how many were answered, or
/// the first failure (its target and why).
pub(crate) type Counted = Result<u64, (Rank, String)>;

struct Slot {
    /// The generation of the ticket that holds (or last held) the slot.
    generation: u32,
    state: State,
}

/// The calls of this rank that wait for results.
pub(crate) struct Calls {
    slots: Vec<Slot>,
    /// The first free slot, or [`NONE`].
    free: u32,
    /// Per target rank: how many calls to it are open (so the liveness
    /// check looks at targets, not at every call).
    open_to: Vec<u32>,
    /// The slots that count promises' calls (a handful: one per promise
    /// alive), for the liveness check.
    counting: Vec<usize>,
}

impl Default for Calls {
    fn default() -> Self {
        Calls {
            slots: Vec::new(),
            free: NONE,
            open_to: Vec::new(),
            counting: Vec::new(),
        }
    }
}

/// A ticket's slot index and generation.
fn split(ticket: u32) -> (usize, u32) {
    // Tickets are index + 1, so 0 is never one (0 means "nobody waits").
    (
        (ticket & INDEX_MASK).wrapping_sub(1) as usize,
        (ticket >> INDEX_BITS) & (GENERATIONS - 1),
    )
}

impl Calls {
    fn open_to(&mut self, target: Rank) -> &mut u32 {
        let i = target.0 as usize;
        if self.open_to.len() <= i {
            self.open_to.resize(i + 1, 0);
        }
        &mut self.open_to[i]
    }

    /// A call to `target` is no longer open (done, or forgotten undone).
    fn settle(&mut self, target: Rank) {
        let n = self.open_to(target);
        *n = n.saturating_sub(1);
    }

    /// The slot `ticket` names, if the ticket is still its holder.
    fn slot(&mut self, ticket: u32) -> Option<&mut Slot> {
        let (i, generation) = split(ticket);
        self.slots
            .get_mut(i)
            .filter(|s| s.generation == generation && !matches!(s.state, State::Free { .. }))
    }

    /// Free slot `i`: its generation moves on, so its old ticket is dead.
    fn release(&mut self, i: usize) {
        let s = &mut self.slots[i];
        let was_counting = matches!(s.state, State::Counting(_));
        s.generation = (s.generation + 1) % GENERATIONS;
        s.state = State::Free { next: self.free };
        self.free = i as u32;
        if was_counting {
            self.counting.retain(|&c| c != i);
        }
    }

    /// A ticket for a call to `target` (never 0), or `None` when
    /// [`MAX_OPEN`] calls already wait.
    pub fn open(&mut self, target: Rank) -> Option<u32> {
        let i = self.claim()?;
        *self.open_to(target) += 1;
        let s = &mut self.slots[i];
        s.state = State::Open {
            target,
            waker: None,
        };
        Some(s.generation << INDEX_BITS | (i as u32 + 1))
    }

    /// A ticket for a promise's calls (with [`COUNTED`]), or `None` when
    /// [`MAX_OPEN`] calls already wait.
    pub fn open_counted(&mut self) -> Option<u32> {
        let i = self.claim()?;
        self.counting.push(i);
        let s = &mut self.slots[i];
        s.state = State::Counting(Box::default());
        Some(COUNTED | s.generation << INDEX_BITS | (i as u32 + 1))
    }

    /// The promise `ticket` names, if the ticket is still its holder.
    fn counting(&mut self, ticket: u32) -> Option<&mut Counting> {
        if ticket & COUNTED == 0 {
            return None;
        }
        match &mut self.slot(ticket)?.state {
            State::Counting(c) => Some(c),
            _ => None,
        }
    }

    /// One call of promise `ticket` to `target` was answered (`failure`:
    /// it failed, and why); the waker to wake if that was the last.
    /// Nothing for a ticket that is no promise's (a forgotten one, or a
    /// damaged message).
    pub fn count(&mut self, ticket: u32, target: Rank, failure: Option<String>) -> Option<Waker> {
        let c = self.counting(ticket)?;
        c.add_done(target, 1);
        if let Some(why) = failure {
            c.failed.get_or_insert((target, why));
        }
        if c.finished() {
            c.waker.take()
        } else {
            None
        }
    }

    /// Promise `ticket` made `issued[t]` calls to each target `t`: from
    /// now on it can finish, and the liveness check watches its targets.
    pub fn finalize(&mut self, ticket: u32, issued: Vec<u64>) {
        if let Some(c) = self.counting(ticket) {
            c.issued_total = issued.iter().sum();
            c.issued = Some(issued);
        }
    }

    /// What finalized promise `ticket`'s calls came to, once every one
    /// was answered (the ticket is then closed); else remember `waker`.
    pub fn take_counted(&mut self, ticket: u32, waker: &Waker) -> Option<Counted> {
        let Some(c) = self.counting(ticket) else {
            return Some(Err((
                Rank(u32::MAX),
                "the promise is not open on this rank".into(),
            )));
        };
        if !c.finished() {
            remember(&mut c.waker, waker);
            return None;
        }
        let out = match c.failed.take() {
            Some(f) => Err(f),
            None => Ok(c.done_total),
        };
        self.release(split(ticket).0);
        Some(out)
    }

    /// A free slot's index (taken off the free list, or a new one).
    fn claim(&mut self) -> Option<usize> {
        if self.free != NONE {
            let i = self.free as usize;
            let State::Free { next } = self.slots[i].state else {
                unreachable!("the free list holds free slots only")
            };
            self.free = next;
            Some(i)
        } else if (self.slots.len() as u32) < MAX_OPEN {
            self.slots.push(Slot {
                generation: 0,
                state: State::Free { next: NONE },
            });
            Some(self.slots.len() - 1)
        } else {
            None
        }
    }

    /// Forget `ticket` (its future was dropped, or its send failed).
    pub fn close(&mut self, ticket: u32) {
        let Some(s) = self.slot(ticket) else { return };
        if let State::Open { target, .. } = s.state {
            self.settle(target);
        }
        self.release(split(ticket).0);
    }

    /// `ticket`'s outcome came: keep it for its future, and give back the
    /// waker to wake. Nothing for a ticket that is not open (its future
    /// was dropped, or a second outcome came: the first stands).
    pub fn complete(&mut self, ticket: u32, r: Returned) -> Option<Waker> {
        let s = self.slot(ticket)?;
        let State::Open { target, waker } = &mut s.state else {
            return None;
        };
        let (target, waker) = (*target, waker.take());
        s.state = State::Done(r);
        self.settle(target);
        waker
    }

    /// `ticket`'s outcome if it came (the ticket is then closed), else
    /// remember `waker`.
    pub fn take(&mut self, ticket: u32, waker: &Waker) -> Option<Returned> {
        let s = self.slot(ticket)?;
        match &mut s.state {
            State::Open { waker: w, .. } => {
                remember(w, waker);
                None
            }
            State::Done(_) => {
                let State::Done(r) = std::mem::replace(&mut s.state, State::Free { next: NONE })
                else {
                    unreachable!("matched above")
                };
                self.release(split(ticket).0);
                Some(r)
            }
            // A promise's ticket is taken by its own future only.
            State::Counting(_) => None,
            State::Free { .. } => unreachable!("slot() skips free slots"),
        }
    }

    /// The targets that have open calls (a finalized promise's included).
    pub fn targets(&self) -> Vec<Rank> {
        let mut t: Vec<Rank> = (0..self.open_to.len() as u32)
            .filter(|&r| self.open_to[r as usize] > 0)
            .map(Rank)
            .collect();
        for &i in &self.counting {
            if let State::Counting(c) = &self.slots[i].state {
                t.extend(c.waiting_on());
            }
        }
        t.sort_unstable();
        t.dedup();
        t
    }

    /// Fail every open call to `target` with `why`; the wakers to wake.
    pub fn fail_to(&mut self, target: Rank, why: &str) -> Vec<Waker> {
        let mut wakers = Vec::new();
        for s in &mut self.slots {
            match &mut s.state {
                State::Open { target: t, waker } if *t == target => {
                    wakers.extend(waker.take());
                    s.state = State::Done(Returned::Failed(why.to_string()));
                }
                // A finalized promise's calls to `target` that were not
                // answered never will be: each counts as failed.
                State::Counting(c) => {
                    let missing = c.unanswered(target.0 as usize);
                    if missing > 0 {
                        c.add_done(target, missing);
                        c.failed.get_or_insert((target, why.to_string()));
                        if c.finished() {
                            wakers.extend(c.waker.take());
                        }
                    }
                }
                _ => {}
            }
        }
        *self.open_to(target) = 0;
        wakers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(why: &str) -> Returned {
        Returned::Failed(why.into())
    }

    fn why(r: Option<Returned>) -> Option<String> {
        match r {
            Some(Returned::Failed(w)) => Some(w),
            Some(_) => Some("(not a failure)".into()),
            None => None,
        }
    }

    #[test]
    fn an_outcome_reaches_its_own_call_only() {
        let mut c = Calls::default();
        let a = c.open(Rank(1)).unwrap();
        let b = c.open(Rank(2)).unwrap();
        assert_ne!(a, b);
        assert!(a != 0 && b != 0);
        assert_eq!(c.targets(), vec![Rank(1), Rank(2)]);
        assert!(c.complete(b, failed("b")).is_none());
        assert_eq!(why(c.take(a, Waker::noop())), None, "a is still open");
        assert_eq!(why(c.take(b, Waker::noop())).as_deref(), Some("b"));
        assert_eq!(c.targets(), vec![Rank(1)]);
        // A taken ticket is closed: a late second outcome is dropped.
        assert!(c.complete(b, failed("again")).is_none());
        assert_eq!(why(c.take(b, Waker::noop())), None);
    }

    #[test]
    fn a_result_for_a_forgotten_call_never_completes_the_call_reusing_its_slot() {
        let mut c = Calls::default();
        let old = c.open(Rank(1)).unwrap();
        c.close(old);
        let new = c.open(Rank(1)).unwrap();
        assert_eq!(split(old).0, split(new).0, "the slot is reused");
        assert_ne!(old, new, "with a new generation");
        c.complete(old, failed("stale"));
        assert_eq!(
            why(c.take(new, Waker::noop())),
            None,
            "stale outcome dropped"
        );
        c.complete(new, failed("fresh"));
        assert_eq!(why(c.take(new, Waker::noop())).as_deref(), Some("fresh"));
    }

    #[test]
    fn a_ticket_from_elsewhere_is_ignored() {
        let mut c = Calls::default();
        let t = c.open(Rank(0)).unwrap();
        for forged in [0, u32::MAX, t + 1, t ^ (1 << INDEX_BITS)] {
            assert!(c.complete(forged, failed("forged")).is_none());
            c.close(forged);
        }
        c.complete(t, failed("real"));
        assert_eq!(why(c.take(t, Waker::noop())).as_deref(), Some("real"));
    }

    #[test]
    fn the_generation_wraps_after_every_reuse_of_a_slot() {
        let mut c = Calls::default();
        let first = c.open(Rank(0)).unwrap();
        c.close(first);
        let mut seen = std::collections::HashSet::from([first]);
        for _ in 1..GENERATIONS {
            let t = c.open(Rank(0)).unwrap();
            assert!(seen.insert(t), "ticket {t:#x} repeated before the wrap");
            c.close(t);
        }
        assert_eq!(c.open(Rank(0)), Some(first), "wraps to the first ticket");
    }

    fn counted(c: &mut Calls, t: u32) -> Option<Counted> {
        c.take_counted(t, Waker::noop())
    }

    #[test]
    fn a_promise_finishes_once_every_call_it_made_is_answered() {
        let mut c = Calls::default();
        let p = c.open_counted().unwrap();
        assert!(p & COUNTED != 0 && p != 0);
        let call = c.open(Rank(1)).unwrap();
        assert_eq!(call & COUNTED, 0, "a plain call's ticket is not counted");
        // Answers may come before the promise is finalized.
        assert!(c.count(p, Rank(0), None).is_none());
        assert!(c.count(p, Rank(1), None).is_none());
        assert_eq!(counted(&mut c, p), None, "not finalized");
        assert!(c.targets().contains(&Rank(1)), "the plain call's target");
        c.finalize(p, vec![2, 1]);
        assert_eq!(
            c.targets(),
            vec![Rank(0), Rank(1)],
            "one call to rank 0 unanswered"
        );
        assert_eq!(counted(&mut c, p), None, "one call still out");
        c.count(p, Rank(0), None);
        assert_eq!(counted(&mut c, p), Some(Ok(3)));
        // Closed: a late answer is dropped, the ticket names nothing.
        assert!(c.count(p, Rank(0), None).is_none());
        assert!(matches!(counted(&mut c, p), Some(Err(_))));
        // Kinds do not mix: a result for a promise's ticket, an
        // acknowledgement for a plain call's.
        let q = c.open_counted().unwrap();
        assert!(c.complete(q, failed("not mine")).is_none());
        assert!(c.count(call, Rank(1), None).is_none());
        assert_eq!(why(c.take(call, Waker::noop())), None, "still open");
        c.finalize(q, vec![]);
        assert_eq!(counted(&mut c, q), Some(Ok(0)), "no calls: done at once");
    }

    #[test]
    fn a_promise_reports_its_first_failure_after_the_rest() {
        let mut c = Calls::default();
        let p = c.open_counted().unwrap();
        c.count(p, Rank(2), Some("body panicked".into()));
        c.count(p, Rank(2), Some("second".into()));
        c.finalize(p, vec![0, 0, 3, 2]);
        assert_eq!(counted(&mut c, p), None);
        // Rank 3 leaves with both its calls unanswered; the last of rank
        // 2's then finishes the promise, with the first failure.
        let wakers = c.fail_to(Rank(3), "rank 3 left");
        assert!(wakers.is_empty(), "nobody waited with a waker yet");
        assert_eq!(c.targets(), vec![Rank(2)]);
        c.count(p, Rank(2), None);
        assert_eq!(
            counted(&mut c, p),
            Some(Err((Rank(2), "body panicked".into())))
        );
        // A target's departure alone fails a promise, and wakes it.
        let q = c.open_counted().unwrap();
        c.finalize(q, vec![1]);
        let w = std::sync::Arc::new(Flag);
        assert_eq!(c.take_counted(q, &Waker::from(w.clone())), None);
        assert_eq!(c.fail_to(Rank(0), "rank 0 left").len(), 1);
        assert_eq!(
            counted(&mut c, q),
            Some(Err((Rank(0), "rank 0 left".into())))
        );
        assert!(c.targets().is_empty());
    }

    /// A waker that does nothing (the test counts the wakers returned).
    struct Flag;

    impl std::task::Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {}
    }

    #[test]
    fn failing_a_target_fails_its_open_calls_only() {
        let mut c = Calls::default();
        let a = c.open(Rank(3)).unwrap();
        let b = c.open(Rank(4)).unwrap();
        let done = c.open(Rank(3)).unwrap();
        c.complete(done, failed("done first"));
        c.fail_to(Rank(3), "rank 3 left");
        assert_eq!(
            why(c.take(a, Waker::noop())).as_deref(),
            Some("rank 3 left")
        );
        assert_eq!(
            why(c.take(done, Waker::noop())).as_deref(),
            Some("done first")
        );
        assert_eq!(why(c.take(b, Waker::noop())), None);
        assert_eq!(c.targets(), vec![Rank(4)]);
    }
}
