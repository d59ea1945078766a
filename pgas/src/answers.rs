//! Results of the calls one user-level progress serves, coalesced per
//! caller: while a batch of arrived calls runs on a thread, each small
//! result is appended to its caller's buffer, and each buffer goes out
//! as one message when the batch ends (or fills the buffer). A flood of
//! calls then costs its callers one result message per batch instead of
//! one per call: the message, its handler and the completion lock were
//! a third of an RPC's instructions.
//!
//! A result held here is late by at most the rest of its batch. It is
//! never held across a wait: the runtime sends every held result before a
//! body waits or sends through rgex-pgas (`Pgas::flush_answers`), since
//! the body might wait for something its caller does only once it has
//! its result.
//!
//! Entries are `[ticket: u32 LE][length: u32 LE][bytes]`, back to back
//! ([`framing`]). This module also holds the runtime's sending of
//! outcomes (`Pgas::answer`, `answer_value`, `flush_answers`).
//!
//! **An answer that cannot go is the call's failure, not the target's.**
//! Whatever a target meets while answering a call (a result that does
//! not serialize, one too large for a message whose staging finds no
//! room in the heap, a send that fails) is answered to the caller as the
//! call's failure, naming the target and why (`Error::Remote` there); the
//! target's own `progress` and barriers never see it. Only if even the
//! failure cannot be sent to a caller still in the job is it printed and
//! counted (`Pgas::lost_failures`).

use crate::error::Error;
#[cfg(test)]
use crate::framing::FLUSH_AT;
use crate::framing::{self, Added, Buffer, Taken};
use crate::runtime::{Body, Pgas, FAILED, INLINE};
use rgex::Rank;
use std::cell::RefCell;
use std::sync::atomic::Ordering;

/// Bytes of an entry's prefix (the ticket).
const TICKET: usize = 4;

/// Results larger than this (bytes, encoded) are sent on their own.
pub(crate) const SMALL: usize = 256;

struct Held {
    /// A batch is being served on this thread: results may wait for its
    /// end.
    open: bool,
    /// Per caller, its results so far.
    by_caller: Vec<(Rank, Buffer)>,
}

thread_local! {
    static HELD: RefCell<Held> = const {
        RefCell::new(Held {
            open: false,
            by_caller: Vec::new(),
        })
    };
}

/// While it lives, results on this thread are held (see the module).
pub(crate) struct Batch(());

impl Drop for Batch {
    fn drop(&mut self) {
        let _ = HELD.try_with(|h| h.borrow_mut().open = false);
    }
}

/// Hold results on this thread until the returned guard drops (and the
/// runtime sends them: [`take_all`]).
pub(crate) fn open() -> Batch {
    HELD.with(|h| h.borrow_mut().open = true);
    Batch(())
}

/// Hold `ticket`'s result for `caller`, which `write` encodes (see
/// [`Buffer::append`]), in a buffer sent at `cap` bytes:
/// [`Added::NotHeld`] outside a batch or for a result too large to hold.
pub(crate) fn add(
    caller: Rank,
    ticket: u32,
    cap: usize,
    write: impl FnOnce(&mut [u8]) -> Result<usize, postcard::Error>,
) -> Added<postcard::Error> {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        if !h.open {
            return Added::NotHeld;
        }
        let i = match h.by_caller.iter().position(|(r, _)| *r == caller) {
            Some(i) => i,
            None => {
                h.by_caller.push((caller, Buffer::default()));
                h.by_caller.len() - 1
            }
        };
        h.by_caller[i]
            .1
            .append(&ticket.to_le_bytes(), SMALL, cap, write)
    })
}

/// Take every held result, per caller (the buffers are then sent).
pub(crate) fn take_all() -> Vec<(Rank, Taken)> {
    HELD.with(|h| {
        h.borrow_mut()
            .by_caller
            .iter_mut()
            .filter_map(|(caller, b)| Some((*caller, b.take()?)))
            .collect()
    })
}

/// Give `caller`'s buffer back the allocation of what was taken from it
/// and sent.
pub(crate) fn give_back(caller: Rank, sent: Taken) {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        if let Some((_, b)) = h.by_caller.iter_mut().find(|(r, _)| *r == caller) {
            b.give(sent);
        }
    })
}

/// The entries of a received buffer, or `None` at the first one cut
/// short (a damaged message).
pub(crate) fn entries(b: &[u8]) -> impl Iterator<Item = Option<(u32, &[u8])>> {
    framing::entries(b, TICKET).map(|entry| {
        let (ticket, bytes, _) = entry?;
        Some((u32::from_le_bytes(ticket.try_into().ok()?), bytes))
    })
}

impl Pgas {
    /// Send a call's outcome back (nothing for a fire-and-forget call,
    /// ticket 0: a failure there is printed and counted). Whatever goes
    /// wrong on the way is the call's failure, answered as such (see
    /// [`delivered`](Self::delivered)), never this rank's.
    pub(crate) fn answer(&self, src: Rank, ticket: u32, out: std::result::Result<Vec<u8>, String>) {
        if ticket == 0 {
            if let Err(why) = out {
                self.lost(format!("an rpc_ff from {src} failed: {why}"));
            }
            return;
        }
        match out {
            Ok(bytes) => {
                let what = || format!("the answer ({} bytes)", bytes.len());
                let sent = self.send_body(
                    src,
                    self.inner.ids.ret,
                    ticket,
                    &[],
                    &Body::Bytes(&bytes),
                    what,
                );
                self.delivered(src, ticket, sent);
            }
            Err(why) => self.fail(src, ticket, &why),
        }
    }

    /// Answer call `ticket` of `src` with `value`, serialized straight into
    /// the reply (nothing for a fire-and-forget call, ticket 0). A value
    /// that cannot be serialized, or sent (staged, where it is larger than
    /// a message, in a heap with no room), is answered as a failure naming
    /// it (`what`) and why.
    /// Generic, so a held result is encoded with no dynamic call.
    pub(crate) fn answer_value<R: serde::Serialize>(
        &self,
        src: Rank,
        ticket: u32,
        value: &R,
        what: impl Fn() -> String,
    ) {
        if ticket == 0 {
            return;
        }
        match self.hold_answer(src, ticket, |b| {
            postcard::to_slice(value, b).map(|used| used.len())
        }) {
            Added::Held => return,
            Added::Failed(e) => {
                let e = Error::Serialization {
                    rank: self.rank(),
                    what: what(),
                    why: e.to_string(),
                };
                return self.fail(src, ticket, &e.to_string());
            }
            Added::NotHeld | Added::Full(_) => {}
        }
        let ret = self.inner.ids.ret;
        let sent = self.send_body(src, ret, ticket, &[], &Body::Value(value), what);
        self.delivered(src, ticket, sent);
    }

    /// Acknowledge a promise's call `ticket` of `src`: an entry with no
    /// bytes among the held results, or a message of its own outside a
    /// batch.
    pub(crate) fn acknowledge(&self, src: Rank, ticket: u32) {
        if !matches!(self.hold_answer(src, ticket, |_| Ok(0)), Added::Held) {
            let sent = self.send(src, self.inner.ids.ret, &[ticket, INLINE], &[]);
            self.delivered(src, ticket, sent);
        }
    }

    /// What became of sending call `ticket`'s answer to `src`: an error
    /// is the call's, answered to `src` as its failure (naming this rank
    /// and why), not this rank's: its progress and barriers go on. A
    /// caller that left waits for nothing.
    fn delivered(&self, src: Rank, ticket: u32, sent: crate::Result<()>) {
        match sent {
            Ok(()) => {}
            Err(_) if self.ep().conduit().peer_gone(src).is_some() => {}
            Err(e @ Error::Serialization { .. }) => self.fail(src, ticket, &e.to_string()),
            Err(e) => self.fail(
                src,
                ticket,
                &format!("{} could not send its answer back: {e}", self.rank()),
            ),
        }
    }

    /// Answer call `ticket` of `src` as failed, with `why` (cut to what
    /// one message holds). If even that cannot be sent to a caller still
    /// in the job, it is printed and counted
    /// ([`lost_failures`](Pgas::lost_failures)): it concerns one call,
    /// and fails nothing else on this rank.
    pub(crate) fn fail(&self, src: Rank, ticket: u32, why: &str) {
        let why = cut(why, self.ep().max_medium(src, 2));
        match self.send(src, self.inner.ids.ret, &[ticket, FAILED], why.as_bytes()) {
            Ok(()) => {}
            Err(_) if self.ep().conduit().peer_gone(src).is_some() => {}
            Err(e) => self.lost(format!(
                "the failure of a call from {src} could not be sent back ({e}): {why}"
            )),
        }
    }

    /// An outcome nobody can be told of: logged as an error (the first
    /// 16) and counted.
    fn lost(&self, what: String) {
        let n = self.inner.lost_failures.fetch_add(1, Ordering::Relaxed);
        if n < 16 {
            tracing::error!(rank = self.rank().0, "{what}");
        }
    }

    /// Hold `ticket`'s answer for `src`, which `write` encodes (see
    /// [`add`]), sending the caller's buffer first each time it is full:
    /// [`Added::Held`], [`Added::NotHeld`] (send it on its own) or
    /// [`Added::Failed`] (nothing held); never `Full`.
    fn hold_answer(
        &self,
        src: Rank,
        ticket: u32,
        write: impl Fn(&mut [u8]) -> Result<usize, postcard::Error>,
    ) -> Added<postcard::Error> {
        let cap = self.hold_cap(src);
        loop {
            match add(src, ticket, cap, &write) {
                Added::Full(held) => {
                    self.send_answers(src, &held);
                    give_back(src, held);
                }
                other => return other,
            }
        }
    }

    /// Send every result this thread holds (see
    /// [`answers`](crate::answers)): at a batch's end, and before a body
    /// waits. A buffer that cannot be sent fails its calls (see
    /// [`send_answers`](Self::send_answers)).
    pub(crate) fn flush_answers(&self) {
        for (caller, buf) in take_all() {
            self.send_answers(caller, &buf);
            give_back(caller, buf);
        }
    }

    /// Send `caller` the results held for it in `buf`; if that fails
    /// (and the caller is still in the job), answer each of them as
    /// failed, saying why.
    fn send_answers(&self, caller: Rank, buf: &[u8]) {
        if buf.is_empty() {
            return;
        }
        match self.send(caller, self.inner.ids.rets, &[], buf) {
            Ok(()) => {}
            Err(_) if self.ep().conduit().peer_gone(caller).is_some() => {}
            Err(e) => {
                let why = format!("{} could not send its answer back: {e}", self.rank());
                for (ticket, _) in entries(buf).map_while(|e| e) {
                    self.fail(caller, ticket, &why);
                }
            }
        }
    }
}

/// `s` cut to at most `max` bytes, at a character's boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::tests::bytes;

    #[test]
    fn results_are_held_per_caller_and_read_back_in_order() {
        let put =
            |caller: u32, ticket: u32, b: &[u8]| add(Rank(caller), ticket, FLUSH_AT, bytes(b));
        // Outside a batch nothing is held.
        assert!(matches!(put(1, 6, b"no"), Added::NotHeld));
        let batch = open();
        assert!(matches!(put(1, 7, b"abc"), Added::Held));
        assert!(matches!(put(2, 8, &[9]), Added::Held));
        assert!(matches!(put(1, 9, b"xy"), Added::Held));
        // Too large to hold.
        assert!(matches!(put(1, 10, &[0; SMALL + 1]), Added::NotHeld));
        let all = take_all();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].0, Rank(1));
        let got: Vec<_> = entries(&all[0].1).collect();
        assert_eq!(got, vec![Some((7, &b"abc"[..])), Some((9, &b"xy"[..]))]);
        assert_eq!(all[1].0, Rank(2));
        assert_eq!(
            entries(&all[1].1).collect::<Vec<_>>(),
            vec![Some((8, &[9u8][..]))]
        );
        drop(batch);
        assert!(matches!(put(1, 11, b"late"), Added::NotHeld));
        assert!(take_all().is_empty());
    }

    #[test]
    fn a_buffer_cut_short_ends_in_none() {
        let mut b = Vec::new();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(b"ok");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        b.extend_from_slice(b"short");
        let got: Vec<_> = entries(&b).collect();
        assert_eq!(got, vec![Some((1, &b"ok"[..])), None]);
        assert_eq!(entries(&[1, 2, 3]).collect::<Vec<_>>(), vec![None]);
    }
}
