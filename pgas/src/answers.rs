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
    /// ticket 0: a failure there is printed and counted).
    pub(crate) fn answer(
        &self,
        src: Rank,
        ticket: u32,
        out: std::result::Result<Vec<u8>, String>,
    ) -> crate::Result<()> {
        if ticket == 0 {
            if let Err(why) = out {
                let n = self.inner.lost_failures.fetch_add(1, Ordering::Relaxed);
                if n < 16 {
                    eprintln!(
                        "rgex-pgas: {}: an rpc_ff from {src} failed: {why}",
                        self.rank()
                    );
                }
            }
            return Ok(());
        }
        let ret = self.inner.ids.ret;
        match out {
            Ok(bytes) => self.send_body(src, ret, ticket, &[], &Body::Bytes(&bytes), || {
                unreachable!("bytes always encode")
            }),
            Err(why) => self.send(src, ret, &[ticket, FAILED], why.as_bytes()),
        }
    }

    /// Answer call `ticket` of `src` with `value`, serialized straight into
    /// the reply (nothing for a fire-and-forget call, ticket 0). A value
    /// that cannot be serialized is answered as a failure naming it
    /// (`what`).
    /// Generic, so a held result is encoded with no dynamic call.
    pub(crate) fn answer_value<R: serde::Serialize>(
        &self,
        src: Rank,
        ticket: u32,
        value: &R,
        what: impl Fn() -> String,
    ) -> crate::Result<()> {
        if ticket == 0 {
            return Ok(());
        }
        let ser = |e: postcard::Error| Error::Serialization {
            rank: self.rank(),
            what: what(),
            why: e.to_string(),
        };
        match self.hold_answer(src, ticket, |b| {
            postcard::to_slice(value, b).map(|used| used.len())
        })? {
            Added::Held => return Ok(()),
            Added::Failed(e) => return self.answer(src, ticket, Err(ser(e).to_string())),
            Added::NotHeld | Added::Full(_) => {}
        }
        let ret = self.inner.ids.ret;
        match self.send_body(src, ret, ticket, &[], &Body::Value(value), what) {
            Err(e @ Error::Serialization { .. }) => self.answer(src, ticket, Err(e.to_string())),
            sent => sent,
        }
    }

    /// Acknowledge a promise's call `ticket` of `src`: an entry with no
    /// bytes among the held results, or a message of its own outside a
    /// batch.
    pub(crate) fn acknowledge(&self, src: Rank, ticket: u32) -> crate::Result<()> {
        match self.hold_answer(src, ticket, |_| Ok(0))? {
            Added::Held => Ok(()),
            _ => self.send(src, self.inner.ids.ret, &[ticket, INLINE], &[]),
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
    ) -> crate::Result<Added<postcard::Error>> {
        let cap = self.hold_cap(src);
        loop {
            match add(src, ticket, cap, &write) {
                Added::Full(held) => {
                    let sent = self.send_answers(src, &held);
                    give_back(src, held);
                    sent?
                }
                other => return Ok(other),
            }
        }
    }

    /// Send every result this thread holds (see
    /// [`answers`](crate::answers)): at a batch's end, and before a body
    /// waits. A caller that left waits for nothing; any other failure is
    /// returned once every caller has been tried.
    pub(crate) fn flush_answers(&self) -> crate::Result<()> {
        let mut first = Ok(());
        for (caller, buf) in take_all() {
            let sent = self.send_answers(caller, &buf);
            give_back(caller, buf);
            if first.is_ok() {
                first = sent;
            }
        }
        first
    }

    fn send_answers(&self, caller: Rank, buf: &[u8]) -> crate::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        match self.send(caller, self.inner.ids.rets, &[], buf) {
            Err(_) if self.ep().conduit().peer_gone(caller).is_some() => Ok(()),
            sent => sent,
        }
    }
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
