//! The teams this rank knows, and where each is in its sequence of
//! collectives: what the collectives' handler checks a peer's message
//! against (a team this rank knows, a sender in it, a collective not yet
//! finished here and not too far ahead).
//!
//! The window: a member has at most [`MAX_IN_FLIGHT`] collectives of one
//! team started and not finished, and finishing an agreement takes every
//! member's part in it. Between two agreements a member runs at most
//! [`EAGER_RUN`] eager collectives (a broadcast without agreement,
//! see [`eager_at`]), which it can finish alone. So a peer sending for
//! collective `p` has finished at least `p + 1 - MAX_IN_FLIGHT -
//! EAGER_RUN` collectives, which this rank has all started: `p` is below
//! this rank's next sequence number plus `MAX_IN_FLIGHT + EAGER_RUN`.
//!
//! It also keeps, per team, what each recent collective's arguments were
//! here and how it ended (to answer a member that waits on this rank, see
//! `Engine::answer`), and the eager collectives since the last agreement
//! (whose signatures that agreement compares, see
//! [`Window`](super::signature::Window)).

use super::key_hash::{KeyMap, KeySet};
use super::signature::{Entry as WindowEntry, Sig, Summary};
use rgex_core::{Error, Rank, Result};
use std::collections::{BTreeSet, VecDeque};

/// Collectives of one team that one rank may have in flight (started, not
/// finished) at once.
pub(crate) const MAX_IN_FLIGHT: u64 = 1 << 16;

/// Eager collectives run back to back at most: every collective whose
/// sequence number is one less than a multiple of this runs an
/// agreement, whatever it is ([`eager_at`]). It bounds how far an eager
/// root runs ahead of its team, and how late a mismatch among eager
/// collectives is reported (at the next agreement).
pub(crate) const EAGER_RUN: u64 = 64;

/// Whether a collective that may run eagerly (a broadcast) does so at
/// sequence number `seq`: a function of `seq` alone, so every member that
/// calls it there decides alike.
pub(crate) fn eager_at(seq: u64) -> bool {
    seq % EAGER_RUN != EAGER_RUN - 1
}

/// Collectives whose arguments and outcome stay known per team: enough
/// for any member waiting on this rank (it is at most `EAGER_RUN + 1`
/// collectives behind, or this rank would be waiting on it) and for
/// non-blocking collectives finishing out of order.
const HISTORY: usize = 4 * EAGER_RUN as usize;

/// How a collective ended here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    InFlight,
    Done,
    /// With the members' disagreement, when that was why.
    Failed(Option<Summary>),
}

/// One collective as this rank ran it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Record {
    pub(crate) seq: u64,
    pub(crate) sig: Sig,
    pub(crate) eager: bool,
    pub(crate) outcome: Outcome,
}
struct Entry {
    /// The members' job ranks, sorted (for the membership test).
    members: Vec<Rank>,
    /// The same in team-rank order.
    order: Vec<Rank>,
    /// The next collective's sequence number.
    next: u64,
    /// Every collective below this one has finished.
    done_below: u64,
    /// Collectives at or above `done_below` that have finished.
    done_above: BTreeSet<u64>,
    /// The last [`HISTORY`] collectives signed here, oldest first.
    history: VecDeque<Record>,
    /// The latest agreement signed here and the eager collectives since
    /// (kept in place: each agreement empties it, allocating nothing).
    window: Vec<WindowEntry>,
}

impl Entry {
    fn finished(&self, seq: u64) -> bool {
        seq < self.done_below || self.done_above.contains(&seq)
    }

    fn in_flight(&self) -> u64 {
        self.next - self.done_below - self.done_above.len() as u64
    }
}

/// What to do with a peer's message for a collective.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Keep it for the collective.
    Accept,
    /// For a collective that failed here (its members disagreed): others
    /// may still send for it. Drop it quietly.
    Straggler,
    /// Drop it and report why.
    Malformed(String),
}

/// See the module documentation.
#[derive(Default)]
pub(crate) struct Registry {
    /// By team id: looked up several times per collective, with the
    /// collectives' hasher (see `key_hash`: ids this rank chose).
    teams: KeyMap<u64, Entry>,
    /// Collectives `(team, seq)` that failed on this rank.
    aborted: KeySet<(u64, u64)>,
}

impl Registry {
    /// Know team `id` with these members (again: the members change, the
    /// sequence stays).
    pub(crate) fn register(&mut self, id: u64, members: &[Rank]) {
        let mut sorted = members.to_vec();
        sorted.sort_unstable();
        match self.teams.get_mut(&id) {
            Some(e) => {
                e.members = sorted;
                e.order = members.to_vec();
            }
            None => {
                self.teams.insert(
                    id,
                    Entry {
                        members: sorted,
                        order: members.to_vec(),
                        next: 0,
                        done_below: 0,
                        done_above: BTreeSet::new(),
                        history: VecDeque::new(),
                        window: Vec::new(),
                    },
                );
            }
        }
    }

    /// Forget team `id`.
    pub(crate) fn unregister(&mut self, id: u64) {
        // Its failed collectives stay in `aborted`, so their stragglers
        // are still dropped quietly (one entry per failed collective).
        self.teams.remove(&id);
    }

    /// Whether `r` is a member of team `id`.
    pub(crate) fn is_member(&self, id: u64, r: Rank) -> bool {
        self.teams
            .get(&id)
            .is_some_and(|e| e.members.binary_search(&r).is_ok())
    }

    /// Start a collective on team `id`: its sequence number.
    pub(crate) fn start(&mut self, id: u64, what: &'static str) -> Result<u64> {
        let e = self
            .teams
            .get_mut(&id)
            .ok_or_else(|| Error::Failed(format!("{what}: team {id:#x} is not known here")))?;
        if e.in_flight() >= MAX_IN_FLIGHT {
            return Err(Error::Failed(format!(
                "{what} on team {id:#x}: {MAX_IN_FLIGHT} collectives of the team are already \
                 in flight on this rank (the limit); wait for some first"
            )));
        }
        let seq = e.next;
        e.next += 1;
        Ok(seq)
    }

    /// Collective `seq` of team `id` runs here with arguments `sig`,
    /// eagerly or with an agreement. For an agreement: the window it
    /// compares (the previous agreement and the eager collectives since,
    /// see [`Window`](super::signature::Window)), after which the window starts again from this one.
    pub(crate) fn sign(
        &mut self,
        id: u64,
        seq: u64,
        sig: Sig,
        eager: bool,
    ) -> Option<Vec<WindowEntry>> {
        self.sign_with(id, seq, sig, eager, <[WindowEntry]>::to_vec)
    }

    /// [`sign`](Self::sign), but an agreement's window goes to `agree`
    /// (which gives back what it makes of it) rather than into a new
    /// vector: the registry's stays in place.
    pub(crate) fn sign_with<R>(
        &mut self,
        id: u64,
        seq: u64,
        sig: Sig,
        eager: bool,
        agree: impl FnOnce(&[WindowEntry]) -> R,
    ) -> Option<R> {
        let e = self.teams.get_mut(&id)?;
        if e.history.len() == HISTORY {
            e.history.pop_front();
        }
        e.history.push_back(Record {
            seq,
            sig,
            eager,
            outcome: Outcome::InFlight,
        });
        if eager {
            e.window.push((seq, sig, false));
            return None;
        }
        let made = agree(&e.window);
        e.window.clear();
        e.window.push((seq, sig, true));
        Some(made)
    }

    /// What this rank knows of collective `seq` of team `id`.
    pub(crate) fn record(&self, id: u64, seq: u64) -> Option<Record> {
        let e = self.teams.get(&id)?;
        e.history.iter().rev().find(|r| r.seq == seq).copied()
    }

    /// The number of members of team `id`.
    pub(crate) fn size(&self, id: u64) -> Option<u32> {
        self.teams.get(&id).map(|e| e.order.len() as u32)
    }

    /// The team rank of job rank `r` in team `id`.
    pub(crate) fn team_rank(&self, id: u64, r: Rank) -> Option<u32> {
        let e = self.teams.get(&id)?;
        e.order.iter().position(|&m| m == r).map(|i| i as u32)
    }

    /// This rank's next sequence number on team `id`.
    pub(crate) fn next(&self, id: u64) -> Option<u64> {
        self.teams.get(&id).map(|e| e.next)
    }

    /// Add the members of every team with a collective in flight here to
    /// `out` (the peers a stalled collective may be waiting on).
    pub(crate) fn busy_members(&self, out: &mut Vec<Rank>) {
        for e in self.teams.values().filter(|e| e.in_flight() > 0) {
            out.extend_from_slice(&e.members);
        }
    }

    /// Collective `seq` of team `id` finished here (with `Failed`: peers
    /// may still send for it). Returns whether it ran eagerly (as its
    /// record says; false without one).
    pub(crate) fn finish(&mut self, id: u64, seq: u64, outcome: Outcome) -> bool {
        if matches!(outcome, Outcome::Failed(_)) {
            self.aborted.insert((id, seq));
        }
        let Some(e) = self.teams.get_mut(&id) else {
            return false;
        };
        let mut eager = false;
        if let Some(r) = e.history.iter_mut().rev().find(|r| r.seq == seq) {
            r.outcome = outcome;
            eager = r.eager;
        }
        if seq == e.done_below {
            e.done_below += 1;
            while e.done_above.remove(&e.done_below) {
                e.done_below += 1;
            }
        } else if seq > e.done_below {
            e.done_above.insert(seq);
        }
        eager
    }

    /// Check a message from `from` for collective `seq` of team `id`.
    pub(crate) fn check(&self, from: Rank, id: u64, seq: u64) -> Verdict {
        let team = self.teams.get(&id);
        if team.is_some_and(|e| e.members.binary_search(&from).is_err()) {
            return Verdict::Malformed(format!("{from} is not a member of team {id:#x}"));
        }
        if self.aborted.contains(&(id, seq)) {
            return Verdict::Straggler;
        }
        let Some(e) = team else {
            return Verdict::Malformed(format!("team {id:#x} is not known here"));
        };
        if e.finished(seq) {
            // An eager collective finishes here without hearing from
            // every member: what others send for it (a member that
            // disagreed sends along another tree) is for the next
            // agreement to report, not malformed.
            if e.history.iter().any(|r| r.seq == seq && r.eager) {
                return Verdict::Straggler;
            }
            return Verdict::Malformed(format!(
                "collective #{seq} of team {id:#x} has already finished here"
            ));
        }
        self.ahead(e, id, seq)
    }

    /// Check a control message (a member waiting on this rank, or the
    /// answer to this rank's wait) from `from` for collective `seq` of
    /// team `id`: any collective in the window, finished or not.
    pub(crate) fn check_control(&self, from: Rank, id: u64, seq: u64) -> Verdict {
        let Some(e) = self.teams.get(&id) else {
            return Verdict::Malformed(format!("team {id:#x} is not known here"));
        };
        if e.members.binary_search(&from).is_err() {
            return Verdict::Malformed(format!("{from} is not a member of team {id:#x}"));
        }
        self.ahead(e, id, seq)
    }

    /// Accept unless `seq` is further ahead than a member can be.
    fn ahead(&self, e: &Entry, id: u64, seq: u64) -> Verdict {
        if seq >= e.next.saturating_add(MAX_IN_FLIGHT + EAGER_RUN) {
            return Verdict::Malformed(format!(
                "collective #{seq} of team {id:#x} is too far ahead: this rank is at #{} \
                 and a member runs at most {} ahead",
                e.next,
                MAX_IN_FLIGHT + EAGER_RUN
            ));
        }
        Verdict::Accept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn malformed(v: Verdict, part: &str) {
        match v {
            Verdict::Malformed(why) => assert!(why.contains(part), "{why:?} lacks {part:?}"),
            other => panic!("expected Malformed({part}), got {other:?}"),
        }
    }

    #[test]
    fn checks() {
        let mut r = Registry::default();
        r.register(5, &[Rank(3), Rank(1), Rank(7)]);
        assert!(r.is_member(5, Rank(7)) && !r.is_member(5, Rank(2)));
        assert_eq!(r.check(Rank(1), 5, 0), Verdict::Accept);
        malformed(r.check(Rank(1), 6, 0), "not known");
        malformed(r.check(Rank(2), 5, 0), "not a member");
        let far = MAX_IN_FLIGHT + EAGER_RUN;
        assert_eq!(r.check(Rank(1), 5, far - 1), Verdict::Accept);
        malformed(r.check(Rank(1), 5, far), "too far ahead");
        malformed(r.check(Rank(1), 5, u64::MAX), "too far ahead");
        assert_eq!(r.start(5, "barrier").unwrap(), 0);
        assert_eq!(r.start(5, "barrier").unwrap(), 1);
        assert_eq!(r.start(5, "barrier").unwrap(), 2);
        // Out of order; a failed one leaves stragglers.
        r.finish(5, 1, Outcome::Done);
        malformed(r.check(Rank(1), 5, 1), "already finished");
        assert_eq!(r.check(Rank(1), 5, 0), Verdict::Accept);
        r.finish(5, 0, Outcome::Failed(None));
        assert_eq!(r.check(Rank(1), 5, 0), Verdict::Straggler);
        malformed(r.check(Rank(2), 5, 0), "not a member");
        assert_eq!(r.check(Rank(1), 5, 2), Verdict::Accept);
        r.finish(5, 2, Outcome::Done);
        malformed(r.check(Rank(1), 5, 2), "already finished");
        assert_eq!(r.check(Rank(1), 5, 3), Verdict::Accept);
        assert_eq!(r.check(Rank(1), 5, 2 + far), Verdict::Accept);
        // New members, same sequence.
        r.register(5, &[Rank(2)]);
        malformed(r.check(Rank(1), 5, 3), "not a member");
        assert_eq!(r.start(5, "barrier").unwrap(), 3);
        r.unregister(5);
        malformed(r.check(Rank(2), 5, 4), "not known");
        // Stragglers of a failed collective are recognised after the team
        // is gone, too.
        assert_eq!(r.check(Rank(1), 5, 0), Verdict::Straggler);
        assert!(r.start(5, "barrier").is_err());
    }

    /// An agreement's window is the previous agreement and the eager
    /// collectives since, handed over in place; the window then starts
    /// again from the agreement.
    #[test]
    fn windows() {
        use super::super::signature::ElemId;
        let mut r = Registry::default();
        r.register(0, &[Rank(0), Rank(1)]);
        let (agree, eager) = (Sig::barrier(), Sig::broadcast(1, ElemId::of::<u8>()));
        assert_eq!(r.sign(0, 0, agree, false), Some(vec![]));
        assert_eq!(r.sign(0, 1, eager, true), None);
        assert_eq!(r.sign(0, 2, eager, true), None);
        let seen = r.sign_with(0, 3, agree, false, |w| w.to_vec());
        let want = vec![(0, agree, true), (1, eager, false), (2, eager, false)];
        assert_eq!(seen, Some(want));
        assert_eq!(r.sign(0, 4, agree, false), Some(vec![(3, agree, true)]));
        assert_eq!(r.sign_with(9, 5, agree, false, |w| w.len()), None);
        // Its record says how each ran.
        assert!(r.finish(0, 1, Outcome::Done));
        assert!(!r.finish(0, 3, Outcome::Done));
    }

    #[test]
    fn in_flight_limit() {
        let mut r = Registry::default();
        r.register(0, &[Rank(0)]);
        for i in 0..MAX_IN_FLIGHT {
            assert_eq!(r.start(0, "barrier_nb").unwrap(), i);
        }
        let e = r.start(0, "barrier_nb").unwrap_err().to_string();
        assert!(e.contains("already in flight"), "{e}");
        r.finish(0, 7, Outcome::Done);
        assert_eq!(r.start(0, "barrier_nb").unwrap(), MAX_IN_FLIGHT);
    }
}
