//! A per-thread cache of optimized strided metadata.
//!
//! Validating and optimizing strided metadata is O(dims) and, for
//! high-dimensional metadata on small transfers, costs as much as the copy
//! itself. Applications repeat the same shapes (a halo exchange sends the
//! same few faces every step; a flood reuses one), so the last few results
//! are kept per thread, keyed by the metadata's *contents* (element size,
//! counts, and both strides of every dimension whose count is not 1; a
//! null dimension's strides change nothing, so a change there alone is
//! still a hit, though it may take a second, slower look; everything else
//! is compared, so a reused array whose values changed is a miss),
//! independent of the two offsets: what is kept is the
//! folded loop nest and each side's extent relative to its offset
//! ([`Rel`]), from which validation for any offsets and buffer lengths is
//! O(1). Only metadata that moves bytes and whose byte count fits 64 bits
//! is kept.

use crate::simd;
use crate::stride_plan::{Dim, Dims, Rel};
use std::cell::RefCell;

/// Shapes kept per thread (replaced round-robin).
const ENTRIES: usize = 4;

/// Metadata of fewer dimensions than this is not cached: its scan costs
/// about what a lookup does.
pub(crate) const MIN_DIMS: usize = 2;

struct Entry {
    used: bool,
    elem: usize,
    /// The first `cw` counts, then the peer strides of the first `w`
    /// dimensions, then the local ones: all of them for metadata of at
    /// most [`SMALL`] dimensions, else as [`simd::key_widths`] says
    /// (see [`simd::key_matches`]).
    key: Vec<u64>,
    /// Counts in the key, and strides per side.
    widths: (usize, usize),
    /// Dimensions of the metadata.
    ndims: usize,
    /// Dimensions up to the last whose count is not 1.
    live: usize,
    rel: Rel,
    /// The folded element size.
    folded: usize,
    dims: Dims,
}

impl Entry {
    const EMPTY: Entry = Entry {
        used: false,
        elem: 0,
        key: Vec::new(),
        widths: (0, 0),
        ndims: 0,
        live: 0,
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

    /// Keep this metadata's key (see [`key`](Self::key)) and the widths
    /// that describe it (the key first, so that no failure between the
    /// two leaves widths describing a shorter key).
    fn set_key(&mut self, counts: &[u64], peer_strides: &[i64], local_strides: &[i64]) {
        let n = counts.len();
        assert!(peer_strides.len() == n && local_strides.len() == n);
        let live = counts.iter().rposition(|&c| c != 1).map_or(0, |i| i + 1);
        let (cw, w) = if n <= SMALL {
            (n, n)
        } else {
            simd::key_widths(n, live)
        };
        self.key.clear();
        self.key.extend_from_slice(&counts[..cw]);
        for s in [peer_strides, local_strides] {
            self.key.extend(s[..w].iter().map(|&x| x as u64));
        }
        (self.ndims, self.live, self.widths) = (n, live, (cw, w));
    }

    /// True if the strides of the live dimensions match (the slow half of
    /// [`is`](Self::is), for arrays whose null dimensions' strides changed).
    #[cold]
    #[inline(never)]
    fn live_match(&self, peer_strides: &[i64], local_strides: &[i64]) -> bool {
        let (cw, w) = self.widths;
        (0..self.live).filter(|&i| self.key[i] != 1).all(|i| {
            peer_strides[i] as u64 == self.key[cw + i]
                && local_strides[i] as u64 == self.key[cw + w + i]
        })
    }

    /// True if this entry is for this metadata (strides of other lengths
    /// than the counts are never).
    #[inline]
    fn is(&self, elem: usize, counts: &[u64], peer_strides: &[i64], local_strides: &[i64]) -> bool {
        self.used
            && self.elem == elem
            && counts.len() == self.ndims
            && if counts.len() <= SMALL {
                // A few dimensions: all counts and strides, branch-free.
                same_small(&self.key, counts, peer_strides, local_strides)
            } else {
                // Many (mostly null, typically): the counts, and the
                // strides up to the last live dimension (at least four),
                // in one vector pass (the same arrays reused); if only
                // the strides differ, the live dimensions' alone (a null
                // dimension's strides may change: they move nothing).
                let n = counts.len();
                if peer_strides.len() != n || local_strides.len() != n {
                    return false;
                }
                // SAFETY: `widths` are `key_widths(ndims, live)` and the
                // key holds `cw + 2 * w` words (`set_key`); the counts
                // are `ndims > SMALL` words, and the strides as many.
                let m = unsafe {
                    simd::key_matches(
                        self.key.as_ptr(),
                        self.widths,
                        counts.as_ptr(),
                        n,
                        peer_strides.as_ptr(),
                        local_strides.as_ptr(),
                    )
                };
                m.counts && (m.strides || self.live_match(peer_strides, local_strides))
            }
    }
}

/// True if `key` is `counts`, then `peer`, then `local` (all of one
/// length `n`; `key` of `3 * n` words): one branch-free pass (XOR, OR, no
/// early exit), which for a few words is cheaper than three `memcmp` calls.
#[inline(always)]
fn same_small(key: &[u64], counts: &[u64], peer: &[i64], local: &[i64]) -> bool {
    let n = counts.len();
    if key.len() != 3 * n || peer.len() != n || local.len() != n {
        return false;
    }
    let (kc, rest) = key.split_at(n);
    let (kp, kl) = rest.split_at(n);
    let mut x = 0;
    for i in 0..n {
        x |= (kc[i] ^ counts[i]) | (kp[i] ^ peer[i] as u64) | (kl[i] ^ local[i] as u64);
    }
    x == 0
}

/// Metadata of at most this many dimensions is compared in full, with
/// branch-free inline loops.
const SMALL: usize = 4;

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

/// If this metadata's result is cached, call `f` with it (relative
/// extents, folded element size, loops) and return what `f` returns; else
/// `None`. The entry is lent, not copied: a hit on the direct path copies
/// straight from the cached loops (copying them out first cost about a
/// tenth of a small put). While `f` runs the cache is in use, so a
/// lookup made from inside `f` (none is today: a shared copy's owner only
/// spins while it waits) would just miss.
#[inline]
pub(crate) fn with<R>(
    elem: usize,
    counts: &[u64],
    peer_strides: &[i64],
    local_strides: &[i64],
    f: impl FnOnce(Rel, usize, &[Dim]) -> R,
) -> Option<R> {
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
            Some(f(e.rel, e.folded, &e.dims))
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
        // Unused while it is rewritten; in use only once whole.
        e.used = false;
        e.elem = elem;
        e.set_key(counts, peer_strides, local_strides);
        e.rel = rel;
        e.folded = folded;
        e.dims = dims.iter().copied().collect();
        e.used = true;
    });
}
