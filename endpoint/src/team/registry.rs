//! The teams this rank knows, and where each is in its sequence of
//! collectives: what the collectives' handler checks a peer's message
//! against (a team this rank knows, a sender in it, a collective not yet
//! finished here and not too far ahead).
//!
//! The window: a member has at most [`MAX_IN_FLIGHT`] collectives of one
//! team started and not finished, and finishing one takes every member's
//! part in it (every collective runs an agreement over all members). So a
//! peer sending for collective `p` has finished at least `p + 1 -
//! MAX_IN_FLIGHT` collectives, which this rank has all started: `p` is
//! below this rank's next sequence number plus `MAX_IN_FLIGHT`.

use rgex_core::{Error, Rank, Result};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Collectives of one team that one rank may have in flight (started, not
/// finished) at once.
pub(crate) const MAX_IN_FLIGHT: u64 = 1 << 16;

struct Entry {
    /// The members' job ranks, sorted (for the membership test).
    members: Vec<Rank>,
    /// The next collective's sequence number.
    next: u64,
    /// Every collective below this one has finished.
    done_below: u64,
    /// Collectives at or above `done_below` that have finished.
    done_above: BTreeSet<u64>,
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
    teams: HashMap<u64, Entry>,
    /// Collectives `(team, seq)` that failed on this rank.
    aborted: HashSet<(u64, u64)>,
}

impl Registry {
    /// Know team `id` with these members (again: the members change, the
    /// sequence stays).
    pub(crate) fn register(&mut self, id: u64, members: &[Rank]) {
        let mut sorted = members.to_vec();
        sorted.sort_unstable();
        match self.teams.get_mut(&id) {
            Some(e) => e.members = sorted,
            None => {
                self.teams.insert(
                    id,
                    Entry {
                        members: sorted,
                        next: 0,
                        done_below: 0,
                        done_above: BTreeSet::new(),
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

    /// Add the members of every team with a collective in flight here to
    /// `out` (the peers a stalled collective may be waiting on).
    pub(crate) fn busy_members(&self, out: &mut Vec<Rank>) {
        for e in self.teams.values().filter(|e| e.in_flight() > 0) {
            out.extend_from_slice(&e.members);
        }
    }

    /// Collective `seq` of team `id` finished here (`failed`: with an
    /// error, so peers may still send for it).
    pub(crate) fn finish(&mut self, id: u64, seq: u64, failed: bool) {
        if failed {
            self.aborted.insert((id, seq));
        }
        let Some(e) = self.teams.get_mut(&id) else {
            return;
        };
        if seq == e.done_below {
            e.done_below += 1;
            while e.done_above.remove(&e.done_below) {
                e.done_below += 1;
            }
        } else if seq > e.done_below {
            e.done_above.insert(seq);
        }
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
            return Verdict::Malformed(format!(
                "collective #{seq} of team {id:#x} has already finished here"
            ));
        }
        if seq >= e.next.saturating_add(MAX_IN_FLIGHT) {
            return Verdict::Malformed(format!(
                "collective #{seq} of team {id:#x} is too far ahead: this rank is at #{} \
                 and a member runs at most {MAX_IN_FLIGHT} at once",
                e.next
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
        assert_eq!(r.check(Rank(1), 5, MAX_IN_FLIGHT - 1), Verdict::Accept);
        malformed(r.check(Rank(1), 5, MAX_IN_FLIGHT), "too far ahead");
        malformed(r.check(Rank(1), 5, u64::MAX), "too far ahead");
        assert_eq!(r.start(5, "barrier").unwrap(), 0);
        assert_eq!(r.start(5, "barrier").unwrap(), 1);
        assert_eq!(r.start(5, "barrier").unwrap(), 2);
        // Out of order; a failed one leaves stragglers.
        r.finish(5, 1, false);
        malformed(r.check(Rank(1), 5, 1), "already finished");
        assert_eq!(r.check(Rank(1), 5, 0), Verdict::Accept);
        r.finish(5, 0, true);
        assert_eq!(r.check(Rank(1), 5, 0), Verdict::Straggler);
        malformed(r.check(Rank(2), 5, 0), "not a member");
        assert_eq!(r.check(Rank(1), 5, 2), Verdict::Accept);
        r.finish(5, 2, false);
        malformed(r.check(Rank(1), 5, 2), "already finished");
        assert_eq!(r.check(Rank(1), 5, 3), Verdict::Accept);
        assert_eq!(r.check(Rank(1), 5, 2 + MAX_IN_FLIGHT), Verdict::Accept);
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

    #[test]
    fn in_flight_limit() {
        let mut r = Registry::default();
        r.register(0, &[Rank(0)]);
        for i in 0..MAX_IN_FLIGHT {
            assert_eq!(r.start(0, "barrier_nb").unwrap(), i);
        }
        let e = r.start(0, "barrier_nb").unwrap_err().to_string();
        assert!(e.contains("already in flight"), "{e}");
        r.finish(0, 7, false);
        assert_eq!(r.start(0, "barrier_nb").unwrap(), MAX_IN_FLIGHT);
    }
}
