//! Global addresses: a location in some rank's segment.

use crate::Rank;
use std::fmt;

/// A location in a rank's segment: `(rank, offset)`.
///
/// Offsets rather than virtual addresses keep addresses meaningful on every
/// rank, whatever address each process mapped a segment at.
///
/// ```
/// use rgex_core::{GlobalAddr, Rank};
/// let a = GlobalAddr::new(Rank(1), 4096);
/// assert_eq!(a.add(8).offset, 4104);
/// assert_eq!(a.to_string(), "rank 1 + 0x1000");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GlobalAddr {
    /// The rank whose segment holds the location.
    pub rank: Rank,
    /// Byte offset from the start of that rank's segment.
    pub offset: u64,
}

impl GlobalAddr {
    /// The address `offset` bytes into `rank`'s segment.
    pub const fn new(rank: Rank, offset: u64) -> Self {
        GlobalAddr { rank, offset }
    }

    /// The address `bytes` further on in the same segment (saturating: an
    /// overflowing offset is caught by the segment bounds check).
    pub const fn add(self, bytes: u64) -> Self {
        GlobalAddr {
            rank: self.rank,
            offset: self.offset.saturating_add(bytes),
        }
    }
}

impl fmt::Display for GlobalAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} + {:#x}", self.rank, self.offset)
    }
}
