//! The mapped segments of node-local peers, looked up once per context.

use rgex_am::Endpoint;
use rgex_core::Rank;

/// Node-local peers' mapped segments, indexed by rank from `lo` (the span
/// of ranks that have one; usually a node's ranks are contiguous).
pub(crate) struct MappedPeers {
    lo: u32,
    segs: Box<[Option<(*mut u8, u64)>]>,
}

// SAFETY: the pointers name segments mapped in this process for the life
// of the endpoint (which the `Vis` keeps alive); they are only used for
// raw copies, as `Segment`s are (which are `Send + Sync` on the same
// grounds).
unsafe impl Send for MappedPeers {}
// SAFETY: as above; the table is read-only after construction.
unsafe impl Sync for MappedPeers {}

impl MappedPeers {
    pub(crate) fn of(ep: &Endpoint) -> MappedPeers {
        let c = ep.conduit();
        let local: Vec<(u32, *mut u8, u64)> = (0..ep.size())
            .filter_map(|r| {
                let seg = c.mapped_segment(Rank(r))?;
                let len = c.segment_len(Rank(r)).min(seg.len() as u64);
                Some((r, seg.as_ptr(), len))
            })
            .collect();
        let (Some(&(lo, ..)), Some(&(hi, ..))) = (local.first(), local.last()) else {
            return MappedPeers {
                lo: 0,
                segs: Box::new([]),
            };
        };
        let mut segs = vec![None; (hi - lo) as usize + 1];
        for (r, p, len) in local {
            segs[(r - lo) as usize] = Some((p, len));
        }
        MappedPeers {
            lo,
            segs: segs.into_boxed_slice(),
        }
    }

    /// `peer`'s mapped segment (base, length), if it has one.
    #[inline(always)]
    pub(crate) fn get(&self, peer: Rank) -> Option<(*mut u8, u64)> {
        *self.segs.get(peer.0.wrapping_sub(self.lo) as usize)?
    }
}
