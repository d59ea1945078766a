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
//! Entries are `[ticket: u32 LE][length: u32 LE][bytes]`, back to back.

use rgex::Rank;
use std::cell::RefCell;

/// Results larger than this (bytes, encoded) are sent on their own.
pub(crate) const SMALL: usize = 256;

/// Bytes of an entry's head (ticket and length).
pub(crate) const HEAD: usize = 8;

/// A caller's buffer is sent once it holds this many bytes (or less, if
/// the conduit's Medium is smaller).
pub(crate) const FLUSH_AT: usize = 4096;

struct Held {
    /// A batch is being served on this thread: results may wait for its
    /// end.
    open: bool,
    /// Per caller, its results so far.
    by_caller: Vec<(Rank, Vec<u8>)>,
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

/// Whether results are held on this thread now.
pub(crate) fn is_open() -> bool {
    HELD.with(|h| h.borrow().open)
}

/// How many bytes `caller`'s held results take.
pub(crate) fn held_for(caller: Rank) -> usize {
    HELD.with(|h| {
        h.borrow()
            .by_caller
            .iter()
            .find(|(r, _)| *r == caller)
            .map_or(0, |(_, b)| b.len())
    })
}

/// Append `ticket`'s result for `caller`, `len` bytes that `write` fills
/// (and returns how many it used, at most `len`); `write`'s error leaves
/// nothing appended.
pub(crate) fn add<E>(
    caller: Rank,
    ticket: u32,
    len: usize,
    write: impl FnOnce(&mut [u8]) -> Result<usize, E>,
) -> Result<(), E> {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        let i = match h.by_caller.iter().position(|(r, _)| *r == caller) {
            Some(i) => i,
            None => {
                h.by_caller.push((caller, Vec::with_capacity(FLUSH_AT)));
                h.by_caller.len() - 1
            }
        };
        let buf = &mut h.by_caller[i].1;
        let start = buf.len();
        buf.extend_from_slice(&ticket.to_le_bytes());
        buf.extend_from_slice(&[0; 4]);
        buf.resize(start + HEAD + len, 0);
        match write(&mut buf[start + HEAD..]) {
            Ok(used) => {
                let used = used.min(len);
                buf[start + 4..start + HEAD].copy_from_slice(&(used as u32).to_le_bytes());
                buf.truncate(start + HEAD + used);
                Ok(())
            }
            Err(e) => {
                buf.truncate(start);
                Err(e)
            }
        }
    })
}

/// Take every held result, per caller (the buffers are then sent).
pub(crate) fn take_all() -> Vec<(Rank, Vec<u8>)> {
    HELD.with(|h| std::mem::take(&mut h.borrow_mut().by_caller))
}

/// Take `caller`'s held results.
pub(crate) fn take(caller: Rank) -> Option<Vec<u8>> {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        let i = h.by_caller.iter().position(|(r, _)| *r == caller)?;
        Some(h.by_caller.swap_remove(i).1)
    })
}

/// The entries of a received buffer, or `None` at the first one cut
/// short (a damaged message).
pub(crate) fn entries(mut b: &[u8]) -> impl Iterator<Item = Option<(u32, &[u8])>> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        let entry = (|| {
            let ticket = u32::from_le_bytes(b.get(..4)?.try_into().ok()?);
            let len = u32::from_le_bytes(b.get(4..HEAD)?.try_into().ok()?) as usize;
            let bytes = b.get(HEAD..HEAD.checked_add(len)?)?;
            Some((ticket, bytes, HEAD + len))
        })();
        match entry {
            Some((ticket, bytes, used)) => {
                b = &b[used..];
                Some(Some((ticket, bytes)))
            }
            None => {
                b = &[];
                Some(None)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_held_per_caller_and_read_back_in_order() {
        let batch = open();
        assert!(is_open());
        add::<()>(Rank(1), 7, 3, |b| {
            b.copy_from_slice(b"abc");
            Ok(3)
        })
        .unwrap();
        add::<()>(Rank(2), 8, 1, |b| {
            b[0] = 9;
            Ok(1)
        })
        .unwrap();
        // A write that uses less than it asked for keeps what it used.
        add::<()>(Rank(1), 9, 10, |b| {
            b[..2].copy_from_slice(b"xy");
            Ok(2)
        })
        .unwrap();
        // A failed write leaves nothing.
        assert!(add(Rank(1), 10, 4, |_| Err("no")).is_err());
        assert_eq!(held_for(Rank(1)), 2 * HEAD + 5);
        let one = take(Rank(1)).unwrap();
        let got: Vec<_> = entries(&one).collect();
        assert_eq!(got, vec![Some((7, &b"abc"[..])), Some((9, &b"xy"[..]))]);
        let rest = take_all();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].0, Rank(2));
        assert_eq!(
            entries(&rest[0].1).collect::<Vec<_>>(),
            vec![Some((8, &[9u8][..]))]
        );
        drop(batch);
        assert!(!is_open());
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
