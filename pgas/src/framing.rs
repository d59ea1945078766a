//! Entries packed back to back in one message: a fixed-size prefix, a
//! `u32` little-endian length, then that many bytes. The results held
//! for a caller ([`answers`](crate::answers): prefix = ticket) and the
//! calls held for a target ([`outbox`](crate::outbox): prefix = ticket
//! and function) are both written and read here.

/// Bytes of an entry's length.
pub(crate) const LEN: usize = 4;

/// What adding an entry to a held buffer did.
pub(crate) enum Added<E> {
    /// The entry waits in the buffer.
    Held,
    /// The buffer had no room: here is what it held (to be sent first);
    /// the entry was not added.
    Full(Vec<u8>),
    /// The entry is not held (too large, or nothing holds entries for
    /// that peer now): send it on its own.
    NotHeld,
    /// Its bytes could not be written; nothing was added.
    Failed(E),
}

/// Append an entry of `prefix` and `len` bytes that `write` fills
/// (returning how many it used, at most `len`) to `buf`, unless it would
/// take `buf` past `cap` bytes: then `buf`'s contents are handed back
/// ([`Added::Full`]). A buffer that is empty takes any entry (the caller
/// checks that one entry fits `cap`).
pub(crate) fn append<E>(
    buf: &mut Vec<u8>,
    prefix: &[u8],
    len: usize,
    cap: usize,
    write: impl FnOnce(&mut [u8]) -> Result<usize, E>,
) -> Added<E> {
    let head = prefix.len() + LEN;
    if !buf.is_empty() && buf.len() + head + len > cap {
        return Added::Full(std::mem::take(buf));
    }
    if buf.capacity() == 0 {
        buf.reserve(cap);
    }
    let start = buf.len();
    buf.extend_from_slice(prefix);
    buf.resize(start + head + len, 0);
    match write(&mut buf[start + head..]) {
        Ok(used) => {
            let used = used.min(len);
            buf[start + prefix.len()..start + head].copy_from_slice(&(used as u32).to_le_bytes());
            buf.truncate(start + head + used);
            Added::Held
        }
        Err(e) => {
            buf.truncate(start);
            Added::Failed(e)
        }
    }
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
mod tests {
    use super::*;

    #[test]
    fn entries_go_in_and_come_back_out() {
        let mut b = Vec::new();
        assert!(matches!(
            append::<()>(&mut b, b"P1", 3, 64, |o| {
                o.copy_from_slice(b"abc");
                Ok(3)
            }),
            Added::Held
        ));
        // Less used than asked for: what was used is kept.
        assert!(matches!(
            append::<()>(&mut b, b"P2", 10, 64, |o| {
                o[..1].copy_from_slice(b"z");
                Ok(1)
            }),
            Added::Held
        ));
        // A failed write leaves nothing.
        let before = b.len();
        assert!(matches!(
            append(&mut b, b"P3", 4, 64, |_| Err("no")),
            Added::Failed("no")
        ));
        assert_eq!(b.len(), before);
        let (p, bytes, used) = split(&b, 2).unwrap();
        assert_eq!((p, bytes), (&b"P1"[..], &b"abc"[..]));
        let (p, bytes, rest) = split(&b[used..], 2).unwrap();
        assert_eq!((p, bytes), (&b"P2"[..], &b"z"[..]));
        assert_eq!(used + rest, b.len());
    }

    #[test]
    fn a_full_buffer_is_handed_back_and_a_cut_entry_is_none() {
        let mut b = Vec::new();
        let fill = |o: &mut [u8]| -> Result<usize, ()> {
            o.fill(7);
            Ok(o.len())
        };
        assert!(matches!(append(&mut b, b"x", 5, 20, fill), Added::Held));
        assert!(matches!(append(&mut b, b"x", 5, 20, fill), Added::Held));
        let Added::Full(old) = append(&mut b, b"x", 5, 20, fill) else {
            panic!("a third entry of 10 bytes does not fit 20")
        };
        assert_eq!(old.len(), 20);
        assert!(b.is_empty());
        assert!(split(&old[..19], 1).is_some());
        assert!(split(&old[10..19], 1).is_none());
        let mut bad = old[..10].to_vec();
        bad[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(split(&bad, 1).is_none());
        assert!(split(&[1, 2], 1).is_none());
    }
}
