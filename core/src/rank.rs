//! Ranks: the index of a process in a job or team.

use std::fmt;

/// A process's index in the job (its world rank), `0..size`.
///
/// ```
/// use rgex_core::Rank;
/// let r = Rank(3);
/// assert_eq!(r.index(), 3);
/// assert_eq!(r.to_string(), "rank 3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rank(pub u32);

impl Rank {
    /// The rank as an index into per-rank tables.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {}", self.0)
    }
}

impl From<u32> for Rank {
    fn from(r: u32) -> Self {
        Rank(r)
    }
}
