//! The bytes of a call's arguments or of a result, as received: copied
//! out of rgex's message (a handler cannot keep the message), held inline
//! up to [`INLINE`] bytes (most results and many calls are that small, and
//! need no allocation), on the heap beyond.

/// The most bytes held inline.
pub(crate) const INLINE: usize = 48;

/// Received bytes.
pub(crate) type Payload = smallvec::SmallVec<[u8; INLINE]>;
