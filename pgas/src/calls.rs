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
//! The table lives under the mailbox's lock; nothing here is shared.

use crate::runtime::Returned;
use rgex::Rank;
use std::task::Waker;

/// Bits of a ticket that index the slab.
const INDEX_BITS: u32 = 21;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;

/// How many calls may wait for their results at once on one rank.
pub(crate) const MAX_OPEN: u32 = INDEX_MASK;

/// How many times a slot is reused before its tickets repeat.
pub(crate) const GENERATIONS: u32 = 1 << (32 - INDEX_BITS);

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
}

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
}

impl Default for Calls {
    fn default() -> Self {
        Calls {
            slots: Vec::new(),
            free: NONE,
            open_to: Vec::new(),
        }
    }
}

/// A ticket's slot index and generation.
fn split(ticket: u32) -> (usize, u32) {
    // Tickets are index + 1, so 0 is never one (0 means "nobody waits").
    (
        (ticket & INDEX_MASK).wrapping_sub(1) as usize,
        ticket >> INDEX_BITS,
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
        s.generation = (s.generation + 1) % GENERATIONS;
        s.state = State::Free { next: self.free };
        self.free = i as u32;
    }

    /// A ticket for a call to `target` (never 0), or `None` when
    /// [`MAX_OPEN`] calls already wait.
    pub fn open(&mut self, target: Rank) -> Option<u32> {
        let i = if self.free != NONE {
            let i = self.free as usize;
            let State::Free { next } = self.slots[i].state else {
                unreachable!("the free list holds free slots only")
            };
            self.free = next;
            i
        } else if (self.slots.len() as u32) < MAX_OPEN {
            self.slots.push(Slot {
                generation: 0,
                state: State::Free { next: NONE },
            });
            self.slots.len() - 1
        } else {
            return None;
        };
        *self.open_to(target) += 1;
        let s = &mut self.slots[i];
        s.state = State::Open {
            target,
            waker: None,
        };
        Some(s.generation << INDEX_BITS | (i as u32 + 1))
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
                if !w.as_ref().is_some_and(|old| old.will_wake(waker)) {
                    *w = Some(waker.clone());
                }
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
            State::Free { .. } => unreachable!("slot() skips free slots"),
        }
    }

    /// The targets that have open calls.
    pub fn targets(&self) -> Vec<Rank> {
        (0..self.open_to.len() as u32)
            .filter(|&r| self.open_to[r as usize] > 0)
            .map(Rank)
            .collect()
    }

    /// Fail every open call to `target` with `why`; the wakers to wake.
    pub fn fail_to(&mut self, target: Rank, why: &str) -> Vec<Waker> {
        let mut wakers = Vec::new();
        for s in &mut self.slots {
            if let State::Open { target: t, waker } = &mut s.state {
                if *t == target {
                    wakers.extend(waker.take());
                    s.state = State::Done(Returned::Failed(why.to_string()));
                }
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
