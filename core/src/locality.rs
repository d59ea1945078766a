//! The neighbourhood table: where every peer of the job sits relative to
//! this process, decided once at setup and read by every layer (RMA
//! routes, VIS, atomic domains, the node-local bypass, the network kit,
//! rgex-pgas). No layer asks a conduit again, and no layer keeps its own
//! copy of the answer; GASNet-EX keeps the same one table
//! (`GASNETI_NBRHD_MAPPED`).
//!
//! For each peer it holds three facts, each implied by the next:
//! - **on this node**: the peer shares this host (and its /dev/shm), so
//!   the node-local transport can tell whether its process is alive;
//! - **mapped**: the peer's segment is mapped in this process, so loads
//!   and stores reach it ([`Locality::mapped_segment`]);
//! - **carried by shared memory**: AMs to it go through the node-local
//!   transport rather than the network ([`Locality::carrier`]).
//!
//! Beside the segment, a mapped peer may have its collectives' board
//! mapped here ([`Locality::board`], [`BOARD_LEN`] bytes that only the peer
//! writes and its team mates read: rgex-endpoint's node-local collectives).
//!
//! A conduit builds the table while it sets up and hands it out through
//! [`Conduit::locality`](crate::Conduit::locality). The table is shared
//! (cloning it is one reference count), and immutable.

use crate::{Error, Rank, Result, Segment};
use std::sync::Arc;

/// How this rank's AMs reach a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// The node-local shared-memory transport (smp's rings).
    Shm,
    /// The conduit's network (or, on scc, its on-chip message buffers).
    Network,
}

/// One peer's entry in the table.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    /// The peer shares this node (host, /dev/shm).
    pub on_node: bool,
    /// The peer's whole segment, mapped in this process, if it is.
    pub mapped: Option<Segment>,
    /// How AMs reach the peer.
    pub carrier: Carrier,
    /// The peer's collectives' board ([`BOARD_LEN`] bytes, zero until the
    /// peer writes it), mapped in this process, if it is.
    pub board: Option<Segment>,
}

/// Bytes of the collectives' board that a conduit mapping its node-local
/// peers' memory (smp) gives each rank beside its segment: written by its
/// owner alone, read by the other members of the owner's teams. Its layout
/// is rgex-endpoint's (`team/board.rs`).
pub const BOARD_LEN: usize = 6 * 4096;

impl Place {
    /// A peer reached over the network, sharing nothing with this rank.
    pub const REMOTE: Place = Place {
        on_node: false,
        mapped: None,
        carrier: Carrier::Network,
        board: None,
    };
}

/// The table (see the module docs): one [`Place`] per rank of the job.
///
/// ```
/// use rgex_core::locality::{Carrier, Locality, Place};
/// use rgex_core::Rank;
///
/// // Rank 0 of a job of two, the other rank on another node.
/// let on_node = Place { on_node: true, mapped: None, carrier: Carrier::Network, board: None };
/// let t = Locality::new(Rank(0), vec![on_node, Place::REMOTE]).unwrap();
/// assert!(t.on_node(Rank(0)) && !t.on_node(Rank(1)));
/// assert!(t.mapped_segment(Rank(1)).is_none());
/// assert_eq!(t.carrier(Rank(1)), Carrier::Network);
/// assert!(!t.any_shm());
/// ```
#[derive(Clone, Debug)]
pub struct Locality {
    table: Arc<Table>,
}

#[derive(Debug)]
struct Table {
    me: Rank,
    places: Box<[Place]>,
    any_shm: bool,
    all_shm: bool,
}

impl Locality {
    /// The table of rank `me`, from one place per rank. Refused, naming the
    /// rank, when a place contradicts itself (mapped but not on this node,
    /// carried by shared memory but not mapped, a mapped segment of another
    /// rank) or `me` is not in the job.
    pub fn new(me: Rank, places: Vec<Place>) -> Result<Self> {
        let size = places.len();
        if me.index() >= size {
            return Err(Error::Config(format!(
                "the neighbourhood table of rank {me} has {size} ranks"
            )));
        }
        for (p, place) in places.iter().enumerate() {
            let why = if place.mapped.is_some() && !place.on_node {
                "its segment is mapped here but it is not on this node"
            } else if place.carrier == Carrier::Shm && place.mapped.is_none() {
                "shared memory carries its AMs but its segment is not mapped here"
            } else if place.mapped.is_some_and(|s| s.rank().index() != p) {
                "the segment mapped for it is another rank's"
            } else if place.board.is_some() && place.mapped.is_none() {
                "its board is mapped here but its segment is not"
            } else if place
                .board
                .is_some_and(|b| b.rank().index() != p || b.len() < BOARD_LEN)
            {
                "the board mapped for it is another rank's, or short"
            } else {
                continue;
            };
            return Err(Error::Config(format!(
                "rank {me}'s neighbourhood table: rank {p} (of {size}): {why}"
            )));
        }
        let shm = |p: &Place| p.carrier == Carrier::Shm;
        Ok(Locality {
            table: Arc::new(Table {
                me,
                any_shm: places.iter().any(shm),
                all_shm: places.iter().all(shm),
                places: places.into_boxed_slice(),
            }),
        })
    }

    /// A table of `me` alone in a job of `size` ranks, every peer remote.
    ///
    /// ```
    /// # use rgex_core::{locality::Locality, Rank};
    /// let t = Locality::alone(Rank(1), 4).unwrap();
    /// assert!(t.on_node(Rank(1)) && !t.on_node(Rank(0)));
    /// ```
    pub fn alone(me: Rank, size: u32) -> Result<Self> {
        let places = (0..size)
            .map(|p| Place {
                on_node: p == me.0,
                ..Place::REMOTE
            })
            .collect();
        Self::new(me, places)
    }

    /// The same table with shared memory carrying no peer and no segment
    /// mapped (the node-local bypass turned off): who is on this node is
    /// kept.
    pub fn without_shm(&self) -> Self {
        let places = self
            .table
            .places
            .iter()
            .map(|p| Place {
                on_node: p.on_node,
                ..Place::REMOTE
            })
            .collect();
        Self::new(self.table.me, places).expect("a table without shared memory is consistent")
    }

    /// The rank whose table this is.
    #[inline]
    pub fn me(&self) -> Rank {
        self.table.me
    }

    /// Ranks in the job.
    #[inline]
    pub fn size(&self) -> u32 {
        self.table.places.len() as u32
    }

    /// `peer`'s entry; `None` for a rank outside the job.
    #[inline]
    pub fn place(&self, peer: Rank) -> Option<&Place> {
        self.table.places.get(peer.index())
    }

    /// `peer` shares this node (false outside the job).
    #[inline]
    pub fn on_node(&self, peer: Rank) -> bool {
        self.place(peer).is_some_and(|p| p.on_node)
    }

    /// `peer`'s whole segment, if it is mapped in this process.
    #[inline]
    pub fn mapped_segment(&self, peer: Rank) -> Option<Segment> {
        self.place(peer)?.mapped
    }

    /// `peer`'s collectives' board (see [`BOARD_LEN`]), if it is mapped in
    /// this process.
    #[inline]
    pub fn board(&self, peer: Rank) -> Option<Segment> {
        self.place(peer)?.board
    }

    /// How AMs reach `peer` (the network for a rank outside the job,
    /// which every send refuses anyway).
    #[inline]
    pub fn carrier(&self, peer: Rank) -> Carrier {
        self.place(peer).map_or(Carrier::Network, |p| p.carrier)
    }

    /// Shared memory carries `peer`'s AMs.
    #[inline(always)]
    pub fn via_shm(&self, peer: Rank) -> bool {
        self.carrier(peer) == Carrier::Shm
    }

    /// Shared memory carries some peer's AMs.
    #[inline]
    pub fn any_shm(&self) -> bool {
        self.table.any_shm
    }

    /// Shared memory carries every peer's AMs (the job is on this node,
    /// with the bypass on, or it is smp's).
    #[inline]
    pub fn all_shm(&self) -> bool {
        self.table.all_shm
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::NonNull;

    fn seg(rank: u32) -> Segment {
        // SAFETY: never read or written: the tests only look at the rank.
        unsafe { Segment::from_raw(Rank(rank), NonNull::dangling(), 0) }
    }

    fn shm(rank: u32) -> Place {
        Place {
            on_node: true,
            mapped: Some(seg(rank)),
            carrier: Carrier::Shm,
            board: None,
        }
    }

    #[test]
    fn a_node_of_two_and_a_remote_rank() {
        let t = Locality::new(Rank(1), vec![shm(0), shm(1), Place::REMOTE]).unwrap();
        assert!(t.via_shm(Rank(0)) && t.via_shm(Rank(1)) && !t.via_shm(Rank(2)));
        assert!(t.any_shm() && !t.all_shm());
        assert_eq!(t.mapped_segment(Rank(0)).map(|s| s.rank()), Some(Rank(0)));
        assert!(!t.on_node(Rank(9)) && t.place(Rank(9)).is_none());
        let off = t.without_shm();
        assert!(!off.any_shm() && off.on_node(Rank(0)) && off.mapped_segment(Rank(0)).is_none());
    }

    #[test]
    fn contradictions_are_refused_naming_the_rank() {
        let mapped_remote = Place {
            on_node: false,
            ..shm(1)
        };
        let e = Locality::new(Rank(0), vec![shm(0), mapped_remote]).unwrap_err();
        assert!(e.to_string().contains("rank 1 (of 2)"), "{e}");
        let unmapped_shm = Place {
            mapped: None,
            ..shm(1)
        };
        assert!(Locality::new(Rank(0), vec![shm(0), unmapped_shm]).is_err());
        assert!(Locality::new(Rank(0), vec![shm(0), shm(0)]).is_err());
        assert!(Locality::new(Rank(2), vec![shm(0)]).is_err());
    }
}
