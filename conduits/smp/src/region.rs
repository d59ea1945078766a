//! One rank's shared-memory region: a header, a request ring and a reply
//! ring with their Medium payload buffers, and the rank's segment.
//!
//! ```text
//! 0                      header (one page): magic, geometry, owner
//!                        process, departure word
//! board                  the collectives' board (rgex_core::locality::BOARD_LEN)
//! rings[REQUEST].hdr     tail | head, each on its own 128-byte block
//! rings[REQUEST].cells   depth x 128-byte cells
//! rings[REPLY].hdr/cells
//! payload[REQUEST]       depth x max_medium bytes (page aligned)
//! payload[REPLY]         depth x max_medium bytes
//! segment                segment_len bytes (page aligned)
//! ```
//!
//! Every rank maps every region of the job, so a sender writes Medium
//! payloads straight into the receiver's payload buffers and Long payloads
//! straight into the receiver's segment.

use crate::bell::Bell;
use crate::ring::{Ring, RingHeader};
use crate::shm::ShmMap;
use crate::SmpConfig;
use rgex_core::cell::Cell;
use rgex_core::liveness::{self, Owner, Presence};
use rgex_core::{Error, Rank, Result, Segment};
use std::mem::size_of;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// Index of the request ring in [`Region::rings`].
pub const REQUEST: usize = 0;
/// Index of the reply ring in [`Region::rings`].
pub const REPLY: usize = 1;

const PAGE: usize = 4096;
const MAGIC: u64 = u64::from_le_bytes(*b"rgexsmp1");

fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// Where each part lives in a region of a given geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The geometry.
    pub cfg: SmpConfig,
    rings: [(usize, usize); 2],
    payload: [usize; 2],
    board: usize,
    segment: usize,
    /// Total bytes of the region.
    pub total: usize,
}

impl Layout {
    /// Compute the layout for `cfg`.
    pub fn new(cfg: SmpConfig) -> Result<Self> {
        let too_big = || {
            Error::Config(format!(
                "smp region for {cfg:?} does not fit in the address space"
            ))
        };
        let cells = size_of::<Cell>()
            .checked_mul(cfg.depth as usize)
            .ok_or_else(too_big)?;
        let board = PAGE;
        let mut at = board + rgex_core::locality::BOARD_LEN;
        let mut rings = [(0, 0); 2];
        for r in &mut rings {
            let hdr = at;
            let cells_at = round_up(hdr + size_of::<RingHeader>(), 128);
            *r = (hdr, cells_at);
            at = cells_at + cells;
        }
        let per_ring = cfg
            .max_medium
            .checked_mul(cfg.depth as usize)
            .ok_or_else(too_big)?;
        let p0 = round_up(at, PAGE);
        let p1 = round_up(p0 + per_ring, PAGE);
        let segment = round_up(p1 + per_ring, PAGE);
        let total = segment.checked_add(cfg.segment_len).ok_or_else(too_big)?;
        Ok(Layout {
            cfg,
            rings,
            payload: [p0, p1],
            board,
            segment,
            total,
        })
    }
}

/// The header at the start of every region, checked by every rank that maps it.
#[repr(C)]
struct Header {
    /// Written last, with Release, by the creator.
    magic: AtomicU64,
    depth: u64,
    max_medium: u64,
    segment_len: u64,
    /// The creator's process (see [`Owner`]), written before the magic.
    pid: u64,
    start: u64,
    pid_ns: u64,
    /// Whether the owner is still in the job: [`liveness::PRESENT`], then
    /// once [`liveness::LEFT`] or [`liveness::DIED`]. Written by the owner
    /// when it leaves, or by a peer that found its process gone; read by
    /// senders whose claim to it was refused.
    departure: AtomicU64,
    /// The owner's doorbell: its progress thread sleeps on it, a sender
    /// whose claim finds the owner asleep rings it (see [`crate::bell`]).
    /// Zero in a fresh mapping, which is a bell never rung.
    bell: Bell,
}

/// A mapped region (this rank's or a peer's).
#[derive(Debug)]
pub struct Region {
    map: ShmMap,
    layout: Layout,
    /// The request and reply rings.
    pub rings: [Ring; 2],
    /// The owner's segment, as mapped here.
    pub segment: Segment,
    /// The owner's collectives' board, as mapped here.
    pub board: Segment,
}

impl Region {
    /// The shared-memory name of `rank`'s region of endpoint `ep` in job
    /// `job` (the primordial endpoint's, 0, holds the segment; another
    /// endpoint's holds its rings only).
    pub fn name(job: &str, rank: Rank, ep: u32) -> String {
        match ep {
            0 => format!("/rgex-{job}-{}", rank.0),
            _ => format!("/rgex-{job}-{}-ep{ep}", rank.0),
        }
    }

    /// Create this rank's region of endpoint `ep` and initialise its rings.
    pub fn create(job: &str, rank: Rank, ep: u32, cfg: SmpConfig) -> Result<Self> {
        let layout = Layout::new(cfg)?;
        let map = ShmMap::create(&Self::name(job, rank, ep), layout.total)?;
        let region = Self::view(map, layout, rank);
        for ring in &region.rings {
            ring.init();
        }
        let h = region.header();
        // SAFETY: the header is in the first page of a fresh mapping that no
        // other process has opened yet; these plain stores race with nothing.
        unsafe {
            let hp = region.map.base().as_ptr().cast::<Header>();
            (*hp).depth = cfg.depth;
            (*hp).max_medium = cfg.max_medium as u64;
            (*hp).segment_len = cfg.segment_len as u64;
            let me = Owner::me();
            (*hp).pid = me.pid;
            (*hp).start = me.start;
            (*hp).pid_ns = me.pid_ns;
        }
        // Release: peers that see the magic (Acquire) see the geometry above.
        h.magic.store(MAGIC, Ordering::Release);
        Ok(region)
    }

    /// Map `rank`'s region of endpoint `ep`, created by that rank with
    /// geometry `cfg`.
    pub fn open(job: &str, rank: Rank, ep: u32, cfg: SmpConfig) -> Result<Self> {
        let layout = Layout::new(cfg)?;
        let name = Self::name(job, rank, ep);
        let map = ShmMap::open(&name, layout.total)?;
        let region = Self::view(map, layout, rank);
        let h = region.header();
        // Acquire: pairs with the creator's Release of the magic.
        let magic = h.magic.load(Ordering::Acquire);
        let geometry = (h.depth, h.max_medium, h.segment_len);
        let expected = (cfg.depth, cfg.max_medium as u64, cfg.segment_len as u64);
        if magic != MAGIC || geometry != expected {
            return Err(Error::Config(format!(
                "shared-memory region {name} of {rank} has geometry {geometry:?} (magic {magic:#x}), expected {expected:?}"
            )));
        }
        Ok(region)
    }

    fn view(map: ShmMap, layout: Layout, rank: Rank) -> Self {
        let base = map.base().as_ptr();
        let ring = |i: usize| {
            let (h, c) = layout.rings[i];
            // SAFETY: the layout places the header and `depth` cells inside
            // the mapping at 128-byte aligned offsets (the mapping itself is
            // page aligned), and the mapping lives as long as the Region.
            unsafe {
                Ring::from_raw(
                    NonNull::new_unchecked(base.add(h).cast()),
                    NonNull::new_unchecked(base.add(c).cast()),
                    layout.cfg.depth,
                )
            }
        };
        let rings = [ring(REQUEST), ring(REPLY)];
        // SAFETY: the segment lies inside the mapping (Layout::new) and the
        // mapping lives as long as the Region that holds this Segment. Users
        // of `segment` copies outside a Region's lifetime are the conduit's,
        // which keeps every Region until it is dropped.
        let segment = unsafe {
            Segment::from_raw(
                rank,
                NonNull::new_unchecked(base.add(layout.segment)),
                layout.cfg.segment_len,
            )
        };
        // SAFETY: as for the segment: the board lies inside the mapping
        // (Layout::new), which lives as long as the Region; the conduit
        // keeps every Region while the board's users (its endpoint's
        // teams) can reach it.
        let board = unsafe {
            Segment::from_raw(
                rank,
                NonNull::new_unchecked(base.add(layout.board)),
                rgex_core::locality::BOARD_LEN,
            )
        };
        Region {
            map,
            layout,
            rings,
            segment,
            board,
        }
    }

    /// This region with `segment` as its segment: an endpoint's rings
    /// region (no segment of its own) carrying Longs into the owner's
    /// primordial segment.
    ///
    /// # Safety
    /// `segment` must stay mapped as long as this region is used (its
    /// conduit keeps the primordial conduit that maps it).
    pub unsafe fn over_segment(mut self, segment: Segment) -> Self {
        self.segment = segment;
        self
    }

    fn header(&self) -> &Header {
        // SAFETY: the header is the first bytes of the page-aligned mapping;
        // it is only read after creation, except `magic`, `departure` and
        // `bell`, which are atomic.
        unsafe { &*self.map.base().as_ptr().cast::<Header>() }
    }

    /// The process that created this region.
    pub fn owner(&self) -> Owner {
        let h = self.header();
        Owner {
            pid: h.pid,
            start: h.start,
            pid_ns: h.pid_ns,
        }
    }

    /// The owner's departure word ([`liveness::PRESENT`] while it is in
    /// the job).
    #[inline]
    pub fn departure(&self) -> u64 {
        // Relaxed: a sender reads this after its Acquire load of a closed
        // cell's turn word (`Ring::close` is Release, after the store
        // below), so it sees the word whenever it found the ring closed;
        // reading it stale otherwise only postpones the verdict to the
        // next refused claim.
        self.header().departure.load(Ordering::Relaxed)
    }

    /// Record that the owner is gone (`how`: [`liveness::LEFT`] or
    /// [`liveness::DIED`]) and close its rings, so every sender's next
    /// claim is refused and finds out why. The first verdict stands.
    pub fn depart(&self, how: u64) {
        // Relaxed (in `liveness::depart`): the closing stores below are
        // Release and come after it in program order; they carry it to the
        // senders (see `departure`).
        liveness::depart(&self.header().departure, how);
        for ring in &self.rings {
            ring.close();
        }
    }

    /// The owner's doorbell (see [`crate::bell`]).
    #[inline]
    pub fn bell(&self) -> &Bell {
        &self.header().bell
    }

    /// The Medium payload buffer of cell `index` of ring `ring`.
    #[inline]
    pub fn payload(&self, ring: usize, index: usize) -> *mut u8 {
        let off = self.layout.payload[ring] + index * self.layout.cfg.max_medium;
        // SAFETY: index < depth, so the buffer lies inside the payload area
        // of the mapping (Layout::new).
        unsafe { self.map.base().as_ptr().add(off) }
    }

    /// The shared-memory object's name.
    pub fn shm_name(&self) -> &str {
        self.map.name()
    }
}

impl Presence for Region {
    fn departure(&self) -> u64 {
        Region::departure(self)
    }

    fn owner(&self) -> Owner {
        Region::owner(self)
    }

    fn depart(&self, how: u64) {
        Region::depart(self, how);
    }
}
