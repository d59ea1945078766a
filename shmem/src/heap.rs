//! The symmetric heap: a deterministic first-fit allocator over this PE's
//! rgex segment. Every PE runs the same sequence of `shmem_malloc`,
//! `shmem_free`, ... calls (they are collective), so every PE's heap gives
//! the same offsets, and a symmetric object is one offset on every PE.
//! The collective calls check that (see `alloc.rs`).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// Every block starts at a multiple of this: a cache line, so any
/// OpenSHMEM type (long double and the 128-bit sized forms included) and
/// rgex's atomics and signal words fit without asking, and blocks of
/// different owners never share a line.
pub const MIN_ALIGN: u64 = 64;

/// Why an allocation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeapError {
    /// No free range is large enough.
    Full {
        /// The bytes asked for.
        asked: u64,
        /// The largest free range.
        largest: u64,
        /// The whole heap.
        total: u64,
    },
    /// A size whose rounding overflows.
    TooLarge(u64),
}

impl std::fmt::Display for HeapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeapError::Full {
                asked,
                largest,
                total,
            } => write!(
                f,
                "out of symmetric heap: {asked} bytes asked for, the largest free block is \
                 {largest} bytes of a {total}-byte heap (SHMEM_SYMMETRIC_SIZE sets it)"
            ),
            HeapError::TooLarge(n) => write!(f, "{n} bytes is more than any heap can hold"),
        }
    }
}

struct Ranges {
    /// Free ranges by start, never adjacent (merged at free).
    free: BTreeMap<u64, u64>,
    /// Live blocks by start: their length.
    live: BTreeMap<u64, u64>,
}

/// The allocator over segment offsets `0..len`.
///
/// ```
/// use rgex_shmem::heap::Heap;
/// let h = Heap::new(1 << 20);
/// let a = h.alloc(100, 1).unwrap();
/// let b = h.alloc(8, 4096).unwrap();
/// assert_eq!(b % 4096, 0);
/// assert_eq!(h.free(a), Some(128));
/// assert_eq!(h.free(a), None, "a second free is refused");
/// assert_eq!(h.alloc(100, 1).unwrap(), a, "the same sequence, the same offsets");
/// ```
pub struct Heap {
    len: u64,
    ranges: Mutex<Ranges>,
}

impl Heap {
    /// A heap of `len` bytes (rounded down to [`MIN_ALIGN`]).
    pub fn new(len: u64) -> Heap {
        let len = len - len % MIN_ALIGN;
        let mut free = BTreeMap::new();
        if len > 0 {
            free.insert(0, len);
        }
        Heap {
            len,
            ranges: Mutex::new(Ranges {
                free,
                live: BTreeMap::new(),
            }),
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for a heap of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn lock(&self) -> MutexGuard<'_, Ranges> {
        // Every update leaves the maps consistent before anything that
        // could panic, so a poisoned lock is still sound.
        self.ranges.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocate `size` bytes (at least 1) at a multiple of `align` (a power
    /// of two; at least [`MIN_ALIGN`]): the lowest such offset (first fit),
    /// so the same call sequence gives the same offsets.
    pub fn alloc(&self, size: u64, align: u64) -> Result<u64, HeapError> {
        self.alloc_from(size, align, 0)
    }

    /// As [`alloc`](Self::alloc), for a heap whose offset 0 is at address
    /// `base`: the block's address (`base` plus its offset) is a multiple
    /// of `align` (which [`MIN_ALIGN`] divides; `base` is a multiple of
    /// [`MIN_ALIGN`]).
    ///
    /// ```
    /// use rgex_shmem::heap::Heap;
    /// let h = Heap::new(1 << 20);
    /// let a = h.alloc_from(8, 16384, 0x1_e000).unwrap();
    /// assert_eq!((0x1_e000 + a) % 16384, 0);
    /// ```
    pub fn alloc_from(&self, size: u64, align: u64, base: u64) -> Result<u64, HeapError> {
        let align = align.max(MIN_ALIGN);
        // The offsets whose address is aligned: `skew` plus multiples of `align`.
        let skew = (align - base % align) % align;
        let len = size
            .max(1)
            .checked_next_multiple_of(MIN_ALIGN)
            .ok_or(HeapError::TooLarge(size))?;
        let mut r = self.lock();
        let found = r.free.iter().find_map(|(&start, &flen)| {
            let at = start
                .checked_add(align - skew)?
                .checked_next_multiple_of(align)?
                .checked_sub(align - skew)?;
            (at.checked_add(len)? <= start + flen).then_some((start, flen, at))
        });
        let Some((start, flen, at)) = found else {
            let largest = r.free.values().copied().max().unwrap_or(0);
            return Err(HeapError::Full {
                asked: size,
                largest,
                total: self.len,
            });
        };
        r.free.remove(&start);
        if at > start {
            r.free.insert(start, at - start);
        }
        let end = at + len;
        if end < start + flen {
            r.free.insert(end, start + flen - end);
        }
        r.live.insert(at, len);
        Ok(at)
    }

    /// Free the block at `offset`: its length, or `None` if no live block
    /// starts there.
    pub fn free(&self, offset: u64) -> Option<u64> {
        let mut r = self.lock();
        let len = r.live.remove(&offset)?;
        let (mut start, mut end) = (offset, offset + len);
        if let Some((&s, &l)) = r.free.range(..start).next_back() {
            if s + l == start {
                r.free.remove(&s);
                start = s;
            }
        }
        if let Some(l) = r.free.remove(&end) {
            end += l;
        }
        r.free.insert(start, end - start);
        Some(len)
    }

    /// The length of the live block at `offset`, if there is one.
    pub fn block(&self, offset: u64) -> Option<u64> {
        self.lock().live.get(&offset).copied()
    }

    /// The live block holding `offset`: (start, length).
    pub fn block_holding(&self, offset: u64) -> Option<(u64, u64)> {
        let r = self.lock();
        let (&s, &l) = r.live.range(..=offset).next_back()?;
        (offset < s + l).then_some((s, l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_and_merges() {
        let h = Heap::new(64 * 10);
        let v: Vec<u64> = (0..10).map(|_| h.alloc(64, 1).unwrap()).collect();
        assert_eq!(v, (0..10).map(|i| i * 64).collect::<Vec<_>>());
        let e = h.alloc(1, 1).unwrap_err();
        assert_eq!(
            e,
            HeapError::Full {
                asked: 1,
                largest: 0,
                total: 640
            }
        );
        for &o in v.iter().rev() {
            assert_eq!(h.free(o), Some(64));
        }
        assert_eq!(h.alloc(640, 1), Ok(0), "every range merged back");
    }

    #[test]
    fn alignment_leaves_the_gap_free() {
        let h = Heap::new(1 << 16);
        let a = h.alloc(1, 1).unwrap();
        let b = h.alloc(1, 4096).unwrap();
        assert_eq!((a, b), (0, 4096));
        assert_eq!(h.alloc(1, 1).unwrap(), 64, "the gap before b is used");
        assert_eq!(h.block_holding(4096 + 10), Some((4096, 64)));
        assert_eq!(h.block_holding(4096 + 64), None);
        assert!(matches!(h.alloc(u64::MAX, 1), Err(HeapError::TooLarge(_))));
    }
}
