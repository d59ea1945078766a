//! Where RMA to each peer goes, decided once per peer when the endpoint is
//! made (the SPI's [`rma_native`](rgex_core::Conduit::rma_native) says the
//! decision is per peer and fixed): the path, the peer's segment length
//! and, on the mapped path, its base address here. An operation reads its
//! peer's entry (one load of a table the endpoint owns) instead of asking
//! the conduit through dynamic calls, and checks its range with one
//! compare.

use super::RmaPath;
use rgex_core::{Conduit, Error, Rank, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One peer's route.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Route {
    /// The peer's segment as mapped here on the mapped path; null on the
    /// others.
    base: *mut u8,
    /// The peer's segment length (exchanged at setup, fixed for the job).
    len: u64,
    path: RmaPath,
}

impl Route {
    /// The path.
    #[inline(always)]
    pub(crate) fn path(&self) -> RmaPath {
        self.path
    }

    /// Check that `[offset, offset + len)` lies inside `rank`'s segment
    /// (this route's peer): one compare, in 128 bits so that no sum
    /// overflows. The error names the rank, the range and the segment's
    /// length, as [`check_range`](rgex_core::segment::check_range)'s does.
    #[inline(always)]
    pub(crate) fn check(&self, rank: Rank, offset: u64, len: usize) -> Result<()> {
        if u128::from(offset) + len as u128 > u128::from(self.len) {
            return Err(out_of_segment(rank, offset, len, self.len));
        }
        Ok(())
    }

    /// The address of `offset` in the peer's mapped segment, on the mapped
    /// path (`None` on the others). Only meaningful for an offset that
    /// [`check`](Self::check) accepted.
    #[inline(always)]
    pub(crate) fn mapped_at(&self, offset: u64) -> Option<*mut u8> {
        if self.base.is_null() {
            None
        } else {
            // `wrapping_add`: no claim on the pointer's provenance here;
            // the caller dereferences it only inside the checked range.
            Some(self.base.wrapping_add(offset as usize))
        }
    }
}

#[cold]
#[inline(never)]
fn out_of_segment(rank: Rank, offset: u64, len: usize, seg_len: u64) -> Error {
    Error::OutOfSegment {
        rank,
        offset,
        len: len as u64,
        seg_len,
    }
}

#[cold]
#[inline(never)]
fn rank_out_of_range(rank: Rank, size: usize) -> Error {
    Error::RankOutOfRange {
        rank: rank.0,
        size: size as u32,
    }
}

/// Every peer's [`Route`], indexed by rank, and how many of them an RMA
/// operation may take: all of them while the client lives, none once it
/// was finalized or dropped ([`close`](Routes::close)). The one compare
/// of [`open`](Routes::open) is both the rank's range check and the
/// check that the client is live.
pub(crate) struct Routes {
    routes: Box<[Route]>,
    /// `routes.len()`, or 0 once closed: never anything else.
    open: AtomicUsize,
    /// When RMA is observed (`RGEX_STATS`/`RGEX_TRACE` name `rma`), the
    /// routes as decided; `routes` then holds every route as the
    /// *observed marker* (path `Mapped`, no base), which
    /// no unobserved route is, so the mapped fast paths decline it and
    /// [`Endpoint::target`](super) sends it to its observed arm. `None`
    /// when nothing is observed: the routes are today's, untouched.
    real: Option<Box<[Route]>>,
}

// SAFETY: the table is written once at construction and only read after;
// the base pointers are addresses of segments the conduit keeps mapped for
// its whole life (the endpoint that owns this table holds the conduit), and
// every access through them is a range-checked copy, from any thread, as
// `Segment` (itself `Send + Sync`) allows.
unsafe impl Send for Routes {}
// SAFETY: as above.
unsafe impl Sync for Routes {}

impl Routes {
    /// Ask `conduit` once per peer: its own RMA, a mapped segment, or
    /// active messages (all peers with `reference_only`).
    pub(crate) fn new(conduit: &dyn Conduit, reference_only: bool, observed: bool) -> Self {
        let route = |p: u32| {
            let peer = Rank(p);
            let len = conduit.segment_len(peer);
            let (path, base) = if reference_only {
                (RmaPath::Reference, std::ptr::null_mut())
            } else if conduit.rma_native(peer) {
                (RmaPath::Native, std::ptr::null_mut())
            } else if let Some(seg) = conduit.locality().mapped_segment(peer) {
                // The mapped segment is the peer's whole segment (the
                // trait's contract): its length is `segment_len`'s.
                debug_assert_eq!((seg.rank(), seg.len() as u64), (peer, len));
                (RmaPath::Mapped, seg.as_ptr())
            } else {
                (RmaPath::Reference, std::ptr::null_mut())
            };
            Route { base, len, path }
        };
        let routes: Box<[Route]> = (0..conduit.size()).map(route).collect();
        let (routes, real) = if observed {
            let marked = routes
                .iter()
                .map(|r| Route {
                    base: std::ptr::null_mut(),
                    len: r.len,
                    path: RmaPath::Mapped,
                })
                .collect();
            (marked, Some(routes))
        } else {
            (routes, None)
        };
        Routes {
            open: AtomicUsize::new(routes.len()),
            routes,
            real,
        }
    }

    /// `r`, `rank`'s route from [`open`](Self::open) or [`of`](Self::of),
    /// as decided: itself, or when RMA is observed the route the
    /// observed marker stands for (`None` only for a rank out of range,
    /// which `r` never is).
    #[inline(always)]
    pub(crate) fn decided<'a>(&'a self, rank: Rank, r: &'a Route) -> &'a Route {
        match &self.real {
            None => r,
            Some(real) => real.get(rank.index()).unwrap_or(r),
        }
    }

    /// Whether RMA is observed (see [`Routes`]).
    #[inline(always)]
    pub(crate) fn observed(&self) -> bool {
        self.real.is_some()
    }

    /// Whether `r` is the observed marker: RMA is observed (every route
    /// is then the marker; see [`Routes`]).
    #[inline(always)]
    pub(crate) fn is_observed(r: &Route) -> bool {
        r.path == RmaPath::Mapped && r.base.is_null()
    }

    /// `rank`'s route if the client is live and `rank` is in the job;
    /// `None` otherwise (see [`of`](Self::of) for which).
    #[inline(always)]
    pub(crate) fn open(&self, rank: Rank) -> Option<&Route> {
        // Relaxed: as `Endpoint::check_open`'s flag, a verdict on its own
        // guarding no memory (the routes are immutable, the segments stay
        // mapped while the endpoint lives).
        if rank.index() < self.open.load(Ordering::Relaxed) {
            // SAFETY: `open` is `routes.len()` or 0, so the index is in
            // bounds.
            Some(unsafe { self.routes.get_unchecked(rank.index()) })
        } else {
            None
        }
    }

    /// Refuse every RMA route from now on (the client was finalized or
    /// dropped).
    pub(crate) fn close(&self) {
        // Relaxed: see `open`.
        self.open.store(0, Ordering::Relaxed);
    }

    /// `rank`'s route, or the error naming it and the job's size.
    #[inline(always)]
    pub(crate) fn of(&self, rank: Rank) -> Result<&Route> {
        match self.routes.get(rank.index()) {
            Some(r) => Ok(r),
            None => Err(rank_out_of_range(rank, self.routes.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(len: u64) -> Route {
        Route {
            base: std::ptr::null_mut(),
            len,
            path: RmaPath::Reference,
        }
    }

    #[test]
    fn the_one_compare_accepts_exactly_the_ranges_inside() {
        let r = route(100);
        for (offset, len) in [(0, 100), (99, 1), (100, 0), (0, 0)] {
            assert!(r.check(Rank(3), offset, len).is_ok(), "[{offset}, +{len})");
        }
        let refused = [
            (0, 101),
            (100, 1),
            (101, 0),
            (u64::MAX, 1),
            (u64::MAX - 3, 8),
            (1, usize::MAX),
            (u64::MAX, usize::MAX),
        ];
        for (offset, len) in refused {
            let e = r.check(Rank(3), offset, len).unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(
                    e,
                    Error::OutOfSegment { rank: Rank(3), offset: o, len: l, seg_len: 100 }
                        if o == offset && l == len as u64
                ),
                "[{offset}, +{len}): {text}"
            );
            assert!(text.contains("rank 3") && text.contains("0x64"), "{text}");
        }
    }

    #[test]
    fn a_rank_past_the_table_is_out_of_range_naming_the_size() {
        let routes = Routes {
            routes: vec![route(8); 2].into_boxed_slice(),
            open: AtomicUsize::new(2),
            real: None,
        };
        assert!(routes.of(Rank(1)).is_ok());
        let e = routes.of(Rank(2)).unwrap_err();
        assert!(
            matches!(e, Error::RankOutOfRange { rank: 2, size: 2 }),
            "{e}"
        );
    }

    #[test]
    fn closed_routes_open_for_no_rank() {
        let routes = Routes {
            routes: vec![route(8); 2].into_boxed_slice(),
            open: AtomicUsize::new(2),
            real: None,
        };
        assert!(routes.open(Rank(1)).is_some() && routes.open(Rank(2)).is_none());
        routes.close();
        assert!(routes.open(Rank(0)).is_none() && routes.open(Rank(1)).is_none());
        assert!(routes.of(Rank(1)).is_ok(), "the table itself stays");
    }

    #[test]
    fn only_the_mapped_path_gives_an_address() {
        let mut seg = [0u8; 16];
        let mapped = Route {
            base: seg.as_mut_ptr(),
            len: 16,
            path: RmaPath::Mapped,
        };
        assert_eq!(mapped.mapped_at(4), Some(seg.as_mut_ptr().wrapping_add(4)));
        assert_eq!(route(16).mapped_at(4), None);
    }
}
