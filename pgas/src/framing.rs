//! Entries packed back to back in one message: a fixed-size prefix, a
//! `u32` little-endian length, then that many bytes. The results held
//! for a caller ([`answers`](crate::answers): prefix = ticket) and the
//! calls held for a target ([`outbox`](crate::outbox): prefix = ticket
//! and function) are both written and read here.

/// Bytes of an entry's length.
pub(crate) const LEN: usize = 4;

/// A held buffer is sent once it would pass this many bytes (or the
/// conduit's Medium to its peer, if smaller: see `Pgas::hold_cap`).
pub(crate) const FLUSH_AT: usize = 4096;

/// A buffer's entries, taken out to be sent (its bytes, as a slice).
/// Given back to its buffer once sent, its allocation, zeroed already,
/// serves the next entries: a buffer sent at every progress costs no
/// allocation and no zeroing each time.
pub(crate) struct Taken {
    bytes: Vec<u8>,
    used: usize,
}

impl std::ops::Deref for Taken {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.used]
    }
}

/// What adding an entry to a held buffer did.
pub(crate) enum Added<E> {
    /// The entry waits in the buffer.
    Held,
    /// The buffer had no room: here is what it held (to be sent first,
    /// then given back); the entry was not added.
    Full(Taken),
    /// The entry is not held (too large, or nothing holds entries for
    /// that peer now): send it on its own.
    NotHeld,
    /// Its bytes could not be written; nothing was added.
    Failed(E),
}

/// A buffer of entries being held. Entries are encoded straight into the
/// room after the last one: no size walk before an entry, and each byte
/// of the buffer is zeroed once, not once per entry that might use it.
#[derive(Default)]
pub(crate) struct Buffer {
    bytes: Vec<u8>,
    /// The bytes the entries so far take.
    used: usize,
}

impl Buffer {
    /// The bytes held.
    pub fn len(&self) -> usize {
        self.used
    }

    /// What it holds, taken out (`None` if nothing).
    pub fn take(&mut self) -> Option<Taken> {
        if self.used == 0 {
            return None;
        }
        let used = std::mem::take(&mut self.used);
        Some(Taken {
            bytes: std::mem::take(&mut self.bytes),
            used,
        })
    }

    /// Take back the allocation of what was taken and sent, for the
    /// next entries (unless the buffer has one again already).
    pub fn give(&mut self, sent: Taken) {
        if self.bytes.capacity() == 0 {
            self.bytes = sent.bytes;
        }
    }

    /// Append an entry of `prefix` and at most `most` bytes that `write`
    /// encodes (returning how many it used; postcard's
    /// `SerializeBufferFull` when they do not fit), keeping the buffer
    /// within `cap` bytes. An entry that does not fit in what is left
    /// hands the buffer's contents back ([`Added::Full`]; the caller sends
    /// them and tries again); one that fits in neither `most` bytes nor
    /// an empty buffer is [`Added::NotHeld`]. Inlined: each caller's
    /// prefix length and `most` are constants there.
    #[inline]
    pub fn append(
        &mut self,
        prefix: &[u8],
        most: usize,
        cap: usize,
        write: impl FnOnce(&mut [u8]) -> Result<usize, postcard::Error>,
    ) -> Added<postcard::Error> {
        let start = self.used + prefix.len() + LEN;
        let room = cap.saturating_sub(start);
        if room == 0 {
            return match self.take() {
                Some(held) => Added::Full(held),
                None => Added::NotHeld,
            };
        }
        let window = room.min(most);
        if self.bytes.capacity() == 0 {
            self.bytes.reserve(cap);
        }
        if self.bytes.len() < start + window {
            // Zeroed once: a byte written for one entry is not zeroed
            // again for the next.
            self.bytes.resize(start + window, 0);
        }
        match write(&mut self.bytes[start..start + window]) {
            Ok(used) => {
                let used = used.min(window);
                let at = self.used;
                self.bytes[at..at + prefix.len()].copy_from_slice(prefix);
                self.bytes[start - LEN..start].copy_from_slice(&(used as u32).to_le_bytes());
                self.used = start + used;
                Added::Held
            }
            Err(postcard::Error::SerializeBufferFull) => match self.take() {
                // Cut short by the room left, not by `most`: send what
                // is held and try again in an empty buffer.
                Some(held) if window < most => Added::Full(held),
                Some(held) => {
                    // Too large to hold at all: keep what is held.
                    (self.bytes, self.used) = (held.bytes, held.used);
                    Added::NotHeld
                }
                None => Added::NotHeld,
            },
            Err(e) => Added::Failed(e),
        }
    }
}

/// The entries of a received buffer with prefixes of `prefix` bytes, as
/// [`split`] gives them, then `None` once if the last is cut short (a
/// damaged message).
pub(crate) fn entries(
    mut b: &[u8],
    prefix: usize,
) -> impl Iterator<Item = Option<(&[u8], &[u8], usize)>> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        let entry = split(b, prefix);
        b = entry.map_or(&[][..], |(_, _, used)| &b[used..]);
        Some(entry)
    })
}

/// The entry at the start of `b` with a prefix of `prefix` bytes: the
/// prefix, the bytes, and how many bytes the entry takes; `None` if it
/// is cut short.
pub(crate) fn split(b: &[u8], prefix: usize) -> Option<(&[u8], &[u8], usize)> {
    let head = prefix + LEN;
    let len = u32::from_le_bytes(b.get(prefix..head)?.try_into().ok()?) as usize;
    let bytes = b.get(head..head.checked_add(len)?)?;
    Some((&b[..prefix], bytes, head + len))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::runtime::Body;

    /// Writes `b` as an entry's bytes (as the runtime writes encoded
    /// bytes).
    pub(crate) fn bytes(b: &[u8]) -> impl FnOnce(&mut [u8]) -> Result<usize, postcard::Error> + '_ {
        move |o| Body::Bytes(b).write(o)
    }

    #[test]
    fn entries_go_in_and_come_back_out() {
        let mut b = Buffer::default();
        assert!(b.take().is_none());
        assert!(matches!(
            b.append(b"P1", 64, 64, bytes(b"abc")),
            Added::Held
        ));
        assert!(matches!(b.append(b"P2", 64, 64, bytes(b"z")), Added::Held));
        // A failed write leaves nothing.
        let before = b.len();
        assert!(matches!(
            b.append(b"P3", 64, 64, |_| Err(postcard::Error::WontImplement)),
            Added::Failed(postcard::Error::WontImplement)
        ));
        assert_eq!(b.len(), before);
        let held = b.take().unwrap();
        assert_eq!(held.len(), 2 * (2 + LEN) + 4);
        let (p, body, used) = split(&held, 2).unwrap();
        assert_eq!((p, body), (&b"P1"[..], &b"abc"[..]));
        let (p, body, rest) = split(&held[used..], 2).unwrap();
        assert_eq!((p, body), (&b"P2"[..], &b"z"[..]));
        assert_eq!(used + rest, held.len());
        assert!(b.take().is_none());
    }

    #[test]
    fn a_full_buffer_is_handed_back_and_a_large_entry_is_not_held() {
        let mut b = Buffer::default();
        let ten = bytes(b"0123456789");
        // Each entry takes 1 + 4 + 10 bytes; two fit 30.
        assert!(matches!(b.append(b"x", 64, 30, ten), Added::Held));
        assert!(matches!(
            b.append(b"x", 64, 30, bytes(b"0123456789")),
            Added::Held
        ));
        let Added::Full(old) = b.append(b"x", 64, 30, bytes(b"0123456789")) else {
            panic!("a third entry of 15 bytes does not fit 30")
        };
        assert_eq!(old.len(), 30);
        assert!(matches!(
            b.append(b"x", 64, 30, bytes(b"0123456789")),
            Added::Held
        ));
        // Larger than `most`: not held, and what is held stays.
        assert!(matches!(
            b.append(b"x", 4, 30, bytes(b"0123456789")),
            Added::NotHeld
        ));
        assert_eq!(b.len(), 15);
        // Larger than an empty buffer: not held.
        let mut e = Buffer::default();
        assert!(matches!(
            e.append(b"x", 64, 12, bytes(b"0123456789")),
            Added::NotHeld
        ));
        assert!(e.take().is_none());
    }

    #[test]
    fn a_buffer_given_back_is_reused() {
        let mut b = Buffer::default();
        let _ = b.append(b"x", 64, 64, bytes(b"abc"));
        let sent = b.take().unwrap();
        let at = sent.as_ptr();
        b.give(sent);
        assert!(matches!(b.append(b"y", 64, 64, bytes(b"de")), Added::Held));
        let sent = b.take().unwrap();
        assert_eq!(sent.as_ptr(), at, "the allocation is reused");
        assert_eq!(sent.len(), 1 + LEN + 2);
        assert_eq!(split(&sent, 1), Some((&b"y"[..], &b"de"[..], 1 + LEN + 2)));
        // A buffer that allocated again meanwhile keeps its own.
        let _ = b.append(b"z", 64, 64, bytes(b"f"));
        let mine = b.take().unwrap();
        let _ = b.append(b"w", 64, 64, bytes(b"g"));
        b.give(mine);
        let now = b.take().unwrap();
        assert_eq!(split(&now, 1), Some((&b"w"[..], &b"g"[..], 1 + LEN + 1)));
    }

    #[test]
    fn a_cut_entry_is_none() {
        let mut b = Buffer::default();
        let _ = b.append(b"x", 64, 64, bytes(b"0123456789"));
        let held = b.take().unwrap();
        assert!(split(&held, 1).is_some());
        assert!(split(&held[..14], 1).is_none());
        let mut bad = held.to_vec();
        bad[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(split(&bad, 1).is_none());
        assert!(split(&[1, 2], 1).is_none());
        // Read in order, then one None at the cut.
        let mut two = held.to_vec();
        two.extend_from_slice(&held[..14]);
        let got: Vec<_> = entries(&two, 1).map(|e| e.map(|(_, b, _)| b)).collect();
        assert_eq!(got, [Some(&b"0123456789"[..]), None]);
        assert_eq!(entries(&[], 1).count(), 0);
    }
}
