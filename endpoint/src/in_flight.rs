//! Operations in flight on an active-message protocol (the reference RMA,
//! atomics and VIS paths): each request carries a 64-bit id in its first
//! two arguments, and the reply finds the operation's completion counter
//! and data by that id, whichever thread runs the reply handler.
//!
//! The table is a slab: the id is a slot index and the slot's generation,
//! so starting and finishing an operation is an index, not a hash lookup
//! (this sits on every small AM-based transfer). A slot's generation
//! changes each time it is freed, so a stale or duplicated reply finds
//! nothing instead of completing an operation that reused the slot (until
//! the 32-bit generation wraps: 2^32 reuses of that slot later). Each
//! protocol has its own table and its own handlers, so ids of different
//! tables never meet.
//!
//! An operation also remembers the peer it was sent to, and only a
//! message from that peer finishes it: a peer that sends a well-formed
//! reply with an id it was never given (a bug, or memory gone bad) finds
//! nothing, and the handler reports it as malformed instead of
//! completing someone else's operation with its data.

use crate::{Message, Token};
use parking_lot::Mutex;
use rgex_core::{OpCounter, Rank};
use std::sync::Arc;

/// A table of operations in flight, each with data of type `T`.
///
/// ```
/// use rgex_endpoint::InFlight;
/// use rgex_core::{OpCounter, Rank};
/// let t: InFlight<&str> = InFlight::default();
/// let done = OpCounter::new(0);
/// let id = t.start(Rank(3), &done, "dest"); // counted on `done`, id for the args
/// assert!(!done.is_done());
/// assert!(t.finish(&id, Rank(2)).is_none()); // only rank 3 may answer it
/// let (c, data) = t.finish(&id, Rank(3)).unwrap();
/// assert_eq!(data, "dest");
/// c.done();
/// assert!(done.is_done() && t.finish(&id, Rank(3)).is_none());
/// ```
pub struct InFlight<T> {
    slab: Mutex<Slab<T>>,
}

struct Slot<T> {
    /// Bumped each time the slot is freed: the second word of its ids.
    generation: u32,
    /// The peer the operation was sent to: the only one that may finish it.
    peer: Rank,
    op: Option<(Arc<OpCounter>, T)>,
}

struct Slab<T> {
    slots: Vec<Slot<T>>,
    /// Indices of the free slots (most recently freed last, so a busy
    /// protocol keeps reusing the same few, cache-warm slots).
    free: Vec<u32>,
}

impl<T> Default for InFlight<T> {
    fn default() -> Self {
        InFlight {
            slab: Mutex::new(Slab {
                slots: Vec::new(),
                free: Vec::new(),
            }),
        }
    }
}

impl<T> std::fmt::Debug for InFlight<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.slab.lock();
        f.debug_struct("InFlight")
            .field("ops", &(s.slots.len() - s.free.len()))
            .finish()
    }
}

impl<T> InFlight<T> {
    /// Count one operation to `peer` on `done`, remember `data`, and
    /// return the id as the two argument words to send.
    pub fn start(&self, peer: Rank, done: &Arc<OpCounter>, data: T) -> [u32; 2] {
        done.add(1);
        let op = Some((done.clone(), data));
        let mut s = self.slab.lock();
        let index = match s.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(s.slots.len())
                    .expect("more than 2^32 operations in flight on one endpoint");
                s.slots.push(Slot {
                    generation: 0,
                    peer,
                    op: None,
                });
                i
            }
        };
        let slot = &mut s.slots[index as usize];
        slot.op = op;
        slot.peer = peer;
        [index, slot.generation]
    }

    /// Remove the operation whose id starts `args`, answered by `from`;
    /// the caller finishes its work, then calls `done()` on the returned
    /// counter. `None` for an id that names no operation in flight to
    /// `from` (too few words, an index past the table, a finished
    /// operation, a slot since reused, or an operation sent to another
    /// peer, which stays in flight).
    pub fn finish(&self, args: &[u32], from: Rank) -> Option<(Arc<OpCounter>, T)> {
        self.take(args, Some(from))
    }

    /// [`finish`](Self::finish) the operation a reply handler's message
    /// names (its first two arguments, from the token's sender), or, if it
    /// names none, report the message as malformed (see
    /// [`Endpoint::malformed`](crate::Endpoint::malformed)) and return
    /// `None`: the one way a protocol's reply handler looks up its
    /// operation.
    pub fn answer(&self, tok: &Token<'_>, msg: &Message<'_>) -> Option<(Arc<OpCounter>, T)> {
        let found = self.finish(msg.args(), tok.src());
        if found.is_none() {
            tok.malformed(&format!(
                "its id {:#x}:{:#x} names no operation in flight to {}",
                msg.arg(0),
                msg.arg(1),
                tok.src()
            ));
        }
        found
    }

    fn take(&self, args: &[u32], from: Option<Rank>) -> Option<(Arc<OpCounter>, T)> {
        let (&index, &generation) = (args.first()?, args.get(1)?);
        let mut s = self.slab.lock();
        let slot = s.slots.get_mut(index as usize)?;
        if slot.generation != generation || from.is_some_and(|f| f != slot.peer) {
            return None;
        }
        let op = slot.op.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        s.free.push(index);
        Some(op)
    }

    /// Undo [`start`](Self::start) for an operation that was never sent.
    pub fn abandon(&self, id: &[u32; 2]) {
        if let Some((done, _)) = self.take(id, None) {
            done.done();
        }
    }
}

impl<T: Send> crate::Abandon for InFlight<T> {
    fn peers(&self, out: &mut Vec<Rank>) {
        let s = self.slab.lock();
        out.extend(s.slots.iter().filter(|x| x.op.is_some()).map(|x| x.peer));
    }

    fn fail_peer(&self, peer: Rank, why: &str) -> usize {
        let failed: Vec<_> = {
            let mut s = self.slab.lock();
            let Slab { slots, free } = &mut *s;
            slots
                .iter_mut()
                .enumerate()
                .filter(|(_, x)| x.peer == peer && x.op.is_some())
                .filter_map(|(i, x)| {
                    // As `finish` does: a late reply finds nothing.
                    x.generation = x.generation.wrapping_add(1);
                    free.push(i as u32);
                    x.op.take()
                })
                .collect()
        };
        // Outside the lock: a waiter woken by `fail` may start another
        // operation at once.
        for (done, _) in &failed {
            done.fail(why.to_owned());
        }
        failed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_while_in_flight_and_slots_are_reused() {
        let t: InFlight<usize> = InFlight::default();
        let done = OpCounter::new(0);
        let ids: Vec<_> = (0..100).map(|i| t.start(Rank(1), &done, i)).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 100);
        for (i, id) in ids.iter().enumerate().rev() {
            let (c, v) = t.finish(id, Rank(1)).expect("in flight");
            assert_eq!(v, i);
            c.done();
        }
        assert!(done.is_done());
        // Freed slots are reused, under a new generation.
        let again = t.start(Rank(1), &done, 7);
        assert!(ids.iter().any(|id| id[0] == again[0]));
        assert!(!ids.contains(&again));
        assert_eq!(format!("{t:?}"), "InFlight { ops: 1 }");
    }

    #[test]
    fn stale_duplicated_and_bogus_ids_find_nothing() {
        let t: InFlight<&str> = InFlight::default();
        let done = OpCounter::new(0);
        let first = t.start(Rank(1), &done, "first");
        t.finish(&first, Rank(1)).unwrap().0.done();
        // The slot is reused; the first id is stale.
        let second = t.start(Rank(2), &done, "second");
        assert_eq!(first[0], second[0]);
        assert!(
            t.finish(&first, Rank(2)).is_none(),
            "a stale id took a reused slot"
        );
        // The right id from the wrong peer finds nothing, and leaves the
        // operation in flight for the right one.
        assert!(t.finish(&second, Rank(1)).is_none());
        assert!(!done.is_done());
        // A duplicated reply finds nothing the second time.
        let (c, v) = t.finish(&second, Rank(2)).unwrap();
        assert_eq!(v, "second");
        c.done();
        assert!(t.finish(&second, Rank(2)).is_none());
        // An index past the table, and too few words.
        assert!(t.finish(&[1000, 0], Rank(2)).is_none());
        assert!(t.finish(&[0], Rank(2)).is_none());
        // Abandoning a finished operation does not count it twice.
        t.abandon(&second);
        assert!(done.is_done());
    }

    #[test]
    fn operations_to_a_gone_peer_fail_and_late_replies_find_nothing() {
        use crate::Abandon;
        let t: InFlight<u8> = InFlight::default();
        let (to1, to2) = (OpCounter::new(0), OpCounter::new(0));
        let a = t.start(Rank(1), &to1, 1);
        let b = t.start(Rank(2), &to2, 2);
        let c = t.start(Rank(1), &to1, 3);
        let mut peers = Vec::new();
        t.peers(&mut peers);
        peers.sort_unstable();
        assert_eq!(peers, [Rank(1), Rank(1), Rank(2)]);
        assert_eq!(t.fail_peer(Rank(1), "rank 1 left"), 2);
        assert!(to1.is_done() && to1.failure() == Some("rank 1 left"));
        assert!(!to2.is_done());
        // The failed ones' replies, should they come, find nothing.
        assert!(t.finish(&a, Rank(1)).is_none() && t.finish(&c, Rank(1)).is_none());
        let (d, v) = t.finish(&b, Rank(2)).unwrap();
        assert_eq!(v, 2);
        d.done();
        assert!(to2.is_done() && to2.failure().is_none());
        assert_eq!(t.fail_peer(Rank(1), "again"), 0);
    }
}
