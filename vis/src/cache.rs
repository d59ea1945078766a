//! A per-thread cache of optimized strided metadata.
//!
//! Validating and optimizing strided metadata is O(dims) and, for
//! high-dimensional metadata on small transfers, costs as much as the copy
//! itself. Applications repeat the same shapes (a halo exchange sends the
//! same few faces every step; a flood reuses one), so the last few results
//! are kept per thread, keyed by the metadata's *contents* (element size,
//! counts, and both strides of every dimension whose count is not 1: a
//! null dimension's strides change nothing, so they are not compared;
//! everything else is, so a reused array whose values changed is a miss),
//! independent of the two offsets: what is kept is the
//! folded loop nest and each side's extent relative to its offset
//! ([`Rel`]), from which validation for any offsets and buffer lengths is
//! O(1). Only metadata that moves bytes and whose byte count fits 64 bits
//! is kept.

use crate::plan::{Dim, Dims, Rel, Work};
use crate::simd;
use std::cell::RefCell;

/// Shapes kept per thread (replaced round-robin).
const ENTRIES: usize = 4;

/// Metadata of fewer dimensions than this is not cached: its scan costs
/// about what a lookup does.
pub(crate) const MIN_DIMS: usize = 2;

struct Entry {
    used: bool,
    elem: usize,
    /// Dimensions of the metadata.
    ndims: usize,
    /// The counts up to the last one that is not 1 (the rest are all 1),
    /// then the peer strides of those dimensions, then the local ones
    /// (see [`simd::key_matches`]): `3 * live` words.
    key: Vec<u64>,
    /// Every dimension's strides, compared in full for metadata of at
    /// most [`SMALL`] dimensions.
    peer_strides: Vec<i64>,
    local_strides: Vec<i64>,
    rel: Rel,
    /// The folded element size.
    folded: usize,
    dims: Dims,
}

impl Entry {
    const EMPTY: Entry = Entry {
        used: false,
        elem: 0,
        ndims: 0,
        key: Vec::new(),
        peer_strides: Vec::new(),
        local_strides: Vec::new(),
        rel: Rel {
            peer_lo: 0,
            peer_hi: 0,
            local_lo: 0,
            local_hi: 0,
            local_shift: 0,
        },
        folded: 0,
        dims: Dims::new(),
    };

    /// Dimensions up to the last live one.
    #[inline(always)]
    fn live(&self) -> usize {
        self.key.len() / 3
    }

    /// True if the strides of the live dimensions match (the slow half of
    /// [`is`](Self::is), for arrays whose null dimensions' strides changed).
    #[cold]
    #[inline(never)]
    fn live_match(&self, peer_strides: &[i64], local_strides: &[i64]) -> bool {
        let n = self.live();
        (0..n).filter(|&i| self.key[i] != 1).all(|i| {
            peer_strides[i] as u64 == self.key[n + i]
                && local_strides[i] as u64 == self.key[2 * n + i]
        })
    }

    /// True if `counts` are this entry's. Past the last live dimension
    /// every count is 1, so the caller's counts there are checked against
    /// 1 rather than against a stored copy (half the loads). The caller
    /// checked `counts.len() == ndims` (`ndims >= live`, so the split is
    /// in bounds).
    #[inline(always)]
    fn same_counts(&self, counts: &[u64]) -> bool {
        let n = self.live();
        same(&self.key[..n], &counts[..n]) && simd::all_ones(&counts[n..])
    }

    /// The caller checked that `peer_strides` and `local_strides` are as
    /// long as `counts` (`check_dims`; `simd::key_matches` asserts it).
    #[inline]
    fn is(&self, elem: usize, counts: &[u64], peer_strides: &[i64], local_strides: &[i64]) -> bool {
        self.used
            && self.elem == elem
            && counts.len() == self.ndims
            && if counts.len() <= SMALL {
                // A few dimensions: all counts and strides, branch-free.
                self.same_counts(counts)
                    && same(&self.peer_strides, peer_strides)
                    && same(&self.local_strides, local_strides)
            } else {
                // Many (mostly null, typically): the counts, and the
                // strides up to the last live dimension, in one vector
                // pass (the same arrays reused); if only the strides
                // differ, the live dimensions' alone (a null dimension's
                // strides may change: they move nothing).
                let m = simd::key_matches(&self.key, counts, peer_strides, local_strides);
                m.counts && (m.strides || self.live_match(peer_strides, local_strides))
            }
    }
}

/// Metadata of at most this many dimensions is compared in full, with
/// branch-free inline loops.
const SMALL: usize = 4;

/// Slice equality as one branch-free pass (XOR, OR, no early exit): for
/// the few dozen words of metadata this is cheaper than a `memcmp` call,
/// and the compiler vectorizes it.
#[inline(always)]
fn same<T>(a: &[T], b: &[T]) -> bool
where
    T: Copy + Eq + Default + std::ops::BitXor<Output = T> + std::ops::BitOr<Output = T>,
{
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .fold(T::default(), |acc, (&x, &y)| acc | (x ^ y))
            == T::default()
}

struct Cache {
    entries: [Entry; ENTRIES],
    next: usize,
}

std::thread_local! {
    static CACHE: RefCell<Cache> = const {
        RefCell::new(Cache {
            entries: [Entry::EMPTY; ENTRIES],
            next: 0,
        })
    };
}

/// The cached result for this metadata, if any: its loops go into `work`
/// (empty on entry); its relative extents and folded element size.
#[inline]
pub(crate) fn get(
    elem: usize,
    counts: &[u64],
    peer_strides: &[i64],
    local_strides: &[i64],
    work: &mut Work,
) -> Option<(Rel, usize)> {
    CACHE
        .try_with(|c| {
            let mut c = c.try_borrow_mut().ok()?;
            let i = c
                .entries
                .iter()
                .position(|e| e.is(elem, counts, peer_strides, local_strides))?;
            if i != 0 {
                // Move the hit to the front: a transfer repeated in a loop
                // then costs one comparison, not one per entry before it
                // (an older entry of the same dimensionality costs a whole
                // pass over the counts to reject).
                c.entries.swap(0, i);
            }
            let e = &c.entries[0];
            for &d in e.dims.iter() {
                work.push(d);
            }
            Some((e.rel, e.folded))
        })
        .ok()
        .flatten()
}

/// Keep the result for this metadata (replacing entries round-robin).
#[cold]
pub(crate) fn put(
    elem: usize,
    counts: &[u64],
    peer_strides: &[i64],
    local_strides: &[i64],
    rel: Rel,
    folded: usize,
    dims: &[Dim],
) {
    let _ = CACHE.try_with(|c| {
        let Ok(mut c) = c.try_borrow_mut() else {
            return;
        };
        let i = c.next;
        c.next = (i + 1) % ENTRIES;
        let e = &mut c.entries[i];
        e.used = true;
        e.elem = elem;
        e.ndims = counts.len();
        let live_end = counts.iter().rposition(|&c| c != 1).map_or(0, |i| i + 1);
        e.key.clear();
        e.key.extend_from_slice(&counts[..live_end]);
        for s in [peer_strides, local_strides] {
            e.key.extend(s[..live_end].iter().map(|&x| x as u64));
        }
        e.peer_strides.clear();
        e.peer_strides.extend_from_slice(peer_strides);
        e.local_strides.clear();
        e.local_strides.extend_from_slice(local_strides);
        e.rel = rel;
        e.folded = folded;
        e.dims = dims.iter().copied().collect();
    });
}
