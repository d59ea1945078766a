//! The chip's memory map: tiles and cores, the per-tile message-passing
//! buffers (MPB), the shared off-chip memory, the per-page type table, and
//! where each of them (plus the lock registers, atomic counters and the
//! checker's shadow) lives in the shared region.
//!
//! Chip addresses ([`Addr`]) form one flat space:
//!
//! ```text
//! [0, tiles * 16 KiB)                      MPBs: tile t at t * 16 KiB; core k's half
//!                                          (8 KiB, by convention) at k * 8 KiB
//! [mpb_bytes, mpb_bytes + shared_bytes)    shared off-chip DRAM (segments live here)
//! ```
//!
//! Lock registers and atomic counters are not memory: they are named by
//! [`LockId`] and [`CounterId`].

use super::check::CheckMode;
use super::line::LINE;
use super::page::{MemType, PAGE};
use rgex_core::{Error, Result};
use std::fmt;
use std::ops::Range;

/// Tiles in the 6 x 4 mesh.
pub const TILES: u32 = 24;
/// Columns of the mesh.
pub const MESH_X: u32 = 6;
/// Rows of the mesh.
pub const MESH_Y: u32 = 4;
/// Cores per tile.
pub const CORES_PER_TILE: u32 = 2;
/// Cores on the chip.
pub const MAX_CORES: u32 = TILES * CORES_PER_TILE;
/// Message-passing buffer per tile (SRAM in the tile).
pub const MPB_PER_TILE: usize = 16 * 1024;
/// The half of a tile's MPB that belongs to one core, by convention (RCCE's).
pub const MPB_PER_CORE: usize = MPB_PER_TILE / CORES_PER_TILE as usize;
/// Size of one window of the memory controllers' lookup table: consecutive
/// 16 MiB of shared memory sit behind the same controller.
pub const MC_WINDOW: u64 = 16 << 20;

/// Default size of the shared off-chip memory.
pub const DEFAULT_SHARED_BYTES: u64 = 1 << 20;
/// Default number of atomic increment counters.
pub const DEFAULT_ATOMIC_COUNTERS: u32 = 48;
/// Default number of slots of the checker's table of release/acquire
/// addresses (flags and explicit sync channels).
pub const DEFAULT_SYNC_SLOTS: u32 = 1024;

/// A chip memory address (see the module doc for the map).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Addr(pub u64);

impl Addr {
    /// The address `n` bytes further.
    #[inline]
    pub fn offset(self, n: u64) -> Addr {
        Addr(self.0 + n)
    }
}

impl std::ops::Add<u64> for Addr {
    type Output = Addr;
    /// The address `n` bytes further.
    #[inline]
    fn add(self, n: u64) -> Addr {
        self.offset(n)
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// The test-and-set lock register of a core (one per core, in its tile's
/// configuration register block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockId(pub u32);

impl LockId {
    /// The lock register of core `core`.
    pub fn of(core: u32) -> LockId {
        LockId(core)
    }
}

/// One of the chip's atomic increment counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CounterId(pub u32);

/// Where a chip address physically is (for the cost model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// In the MPB SRAM of a tile.
    Mpb {
        /// The tile.
        tile: u32,
    },
    /// In off-chip DRAM behind a memory controller (0..4).
    Dram {
        /// The memory controller.
        mc: u32,
    },
}

/// The tile a core sits on.
#[inline]
pub fn tile_of(core: u32) -> u32 {
    core / CORES_PER_TILE
}

/// Mesh coordinates (x, y) of a tile.
#[inline]
pub fn tile_xy(tile: u32) -> (u32, u32) {
    (tile % MESH_X, tile / MESH_X)
}

/// Routers the four memory controllers hang off (left and right edges of
/// rows 0 and 2).
pub const MC_XY: [(u32, u32); 4] = [(0, 0), (5, 0), (0, 2), (5, 2)];
/// Router of the system interface (the FPGA holding the atomic counters).
pub const SIF_XY: (u32, u32) = (3, 0);

/// Manhattan distance in router hops (X-Y routing) between two routers.
#[inline]
pub fn hops(a: (u32, u32), b: (u32, u32)) -> u32 {
    a.0.abs_diff(b.0) + a.1.abs_diff(b.1)
}

/// The chip configuration shared by every core: how many cores, how much
/// shared memory, the page types, the counters, and whether the stale-read
/// checker's shadow exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    cores: u32,
    shared_bytes: u64,
    atomic_counters: u32,
    sync_slots: u32,
    check: bool,
    page_types: Vec<MemType>,
}

/// Builds a [`Layout`]; see [`Layout::builder`].
#[derive(Clone, Debug)]
pub struct LayoutBuilder {
    cores: u32,
    shared_bytes: u64,
    atomic_counters: u32,
    sync_slots: u32,
    check: bool,
    mpb_type: MemType,
    shared_type: MemType,
    overrides: Vec<(u64, u64, MemType)>,
}

impl Layout {
    /// A builder for a chip of `cores` cores (1..=48). Defaults: 1 MiB of
    /// shared memory, MPB pages [`MemType::Mpbt`], shared pages
    /// [`MemType::WriteBack`], 48 atomic counters, 1024 sync slots, and the
    /// checker on iff `RGEX_SCC_CHECK` asks for it.
    pub fn builder(cores: u32) -> LayoutBuilder {
        LayoutBuilder {
            cores,
            shared_bytes: DEFAULT_SHARED_BYTES,
            atomic_counters: DEFAULT_ATOMIC_COUNTERS,
            sync_slots: DEFAULT_SYNC_SLOTS,
            check: CheckMode::from_env() != CheckMode::Off,
            mpb_type: MemType::Mpbt,
            shared_type: MemType::WriteBack,
            overrides: Vec::new(),
        }
    }

    /// Number of cores (ranks).
    pub fn cores(&self) -> u32 {
        self.cores
    }

    /// Tiles in use: `ceil(cores / 2)`; only their MPBs exist.
    pub fn tiles(&self) -> u32 {
        self.cores.div_ceil(CORES_PER_TILE)
    }

    /// Bytes of MPB (16 KiB per tile in use).
    pub fn mpb_bytes(&self) -> u64 {
        self.tiles() as u64 * MPB_PER_TILE as u64
    }

    /// Bytes of shared off-chip memory.
    pub fn shared_bytes(&self) -> u64 {
        self.shared_bytes
    }

    /// Bytes of chip memory (MPB + shared): valid addresses are `0..mem_bytes`.
    pub fn mem_bytes(&self) -> u64 {
        self.mpb_bytes() + self.shared_bytes
    }

    /// Number of atomic increment counters.
    pub fn atomic_counters(&self) -> u32 {
        self.atomic_counters
    }

    /// Slots of the checker's release/acquire table.
    pub fn sync_slots(&self) -> u32 {
        self.sync_slots
    }

    /// Whether the stale-read checker's shadow exists on this chip.
    pub fn check(&self) -> bool {
        self.check
    }

    /// Start of core `core`'s 8 KiB half of its tile's MPB.
    pub fn mpb(&self, core: u32) -> Addr {
        Addr(core as u64 * MPB_PER_CORE as u64)
    }

    /// The range of core `core`'s MPB half.
    pub fn mpb_range(&self, core: u32) -> Range<Addr> {
        let a = self.mpb(core);
        a..a.offset(MPB_PER_CORE as u64)
    }

    /// Start of tile `tile`'s 16 KiB MPB.
    pub fn mpb_tile(&self, tile: u32) -> Addr {
        Addr(tile as u64 * MPB_PER_TILE as u64)
    }

    /// Start of the shared off-chip memory.
    pub fn shared_base(&self) -> Addr {
        Addr(self.mpb_bytes())
    }

    /// The chip address of byte `offset` of the shared off-chip memory.
    pub fn shared(&self, offset: u64) -> Addr {
        Addr(self.mpb_bytes() + offset)
    }

    /// The memory type of the page holding `addr`.
    ///
    /// # Panics
    /// If `addr` is outside chip memory.
    pub fn page_type(&self, addr: Addr) -> MemType {
        self.page_types[(addr.0 / PAGE as u64) as usize]
    }

    /// Where `addr` physically is.
    pub fn place(&self, addr: Addr) -> Place {
        let mpb = self.mpb_bytes();
        if addr.0 < mpb {
            Place::Mpb {
                tile: (addr.0 / MPB_PER_TILE as u64) as u32,
            }
        } else {
            Place::Dram {
                mc: (((addr.0 - mpb) / MC_WINDOW) % 4) as u32,
            }
        }
    }

    /// True if `[addr, addr + len)` lies in chip memory.
    pub fn contains(&self, addr: Addr, len: usize) -> bool {
        addr.0
            .checked_add(len as u64)
            .is_some_and(|end| end <= self.mem_bytes())
    }

    pub(crate) fn page_types(&self) -> &[MemType] {
        &self.page_types
    }

    /// Rebuild a layout read from a region header.
    pub(crate) fn from_parts(
        cores: u32,
        shared_bytes: u64,
        atomic_counters: u32,
        sync_slots: u32,
        check: bool,
        page_types: Vec<MemType>,
    ) -> Result<Layout> {
        let l = Layout {
            cores,
            shared_bytes,
            atomic_counters,
            sync_slots,
            check,
            page_types,
        };
        l.validate()?;
        if l.page_types.len() as u64 != l.mem_bytes() / PAGE as u64 {
            return Err(Error::Config(format!(
                "scc layout: page table has {} entries for {} bytes of memory",
                l.page_types.len(),
                l.mem_bytes()
            )));
        }
        Ok(l)
    }

    fn validate(&self) -> Result<()> {
        if self.cores == 0 || self.cores > MAX_CORES {
            return Err(Error::Config(format!(
                "scc layout: {} cores asked; the chip has 1..={MAX_CORES}",
                self.cores
            )));
        }
        if !self.shared_bytes.is_multiple_of(PAGE as u64) {
            return Err(Error::Config(format!(
                "scc layout: shared memory of {} bytes is not a multiple of the {PAGE}-byte page",
                self.shared_bytes
            )));
        }
        if self.shared_bytes > 1 << 40 {
            return Err(Error::Config(format!(
                "scc layout: shared memory of {} bytes is larger than 1 TiB",
                self.shared_bytes
            )));
        }
        if self.check && self.sync_slots == 0 {
            return Err(Error::Config(
                "scc layout: checking needs at least one sync slot".into(),
            ));
        }
        Ok(())
    }
}

impl LayoutBuilder {
    /// Size of the shared off-chip memory (a multiple of 4 KiB).
    pub fn shared_bytes(mut self, bytes: u64) -> Self {
        self.shared_bytes = bytes;
        self
    }

    /// Number of atomic increment counters.
    pub fn atomic_counters(mut self, n: u32) -> Self {
        self.atomic_counters = n;
        self
    }

    /// Slots of the checker's table of release/acquire addresses. An address
    /// released when the table is full is not tracked (its acquirers are then
    /// not checked against it: a missed report, never a false one).
    pub fn sync_slots(mut self, n: u32) -> Self {
        self.sync_slots = n;
        self
    }

    /// Allocate the stale-read checker's shadow (overrides `RGEX_SCC_CHECK`).
    pub fn check(mut self, on: bool) -> Self {
        self.check = on;
        self
    }

    /// Memory type of every MPB page (default [`MemType::Mpbt`]).
    pub fn mpb_type(mut self, t: MemType) -> Self {
        self.mpb_type = t;
        self
    }

    /// Memory type of every shared-memory page (default [`MemType::WriteBack`]).
    pub fn shared_type(mut self, t: MemType) -> Self {
        self.shared_type = t;
        self
    }

    /// Memory type of the pages `[start, start + len)` (page aligned),
    /// applied after the defaults, in call order.
    pub fn page_type(mut self, start: Addr, len: u64, t: MemType) -> Self {
        self.overrides.push((start.0, len, t));
        self
    }

    /// Check and build.
    pub fn build(self) -> Result<Layout> {
        let mut l = Layout {
            cores: self.cores,
            shared_bytes: self.shared_bytes,
            atomic_counters: self.atomic_counters,
            sync_slots: self.sync_slots,
            check: self.check,
            page_types: Vec::new(),
        };
        l.validate()?;
        let mpb_pages = (l.mpb_bytes() / PAGE as u64) as usize;
        let pages = (l.mem_bytes() / PAGE as u64) as usize;
        l.page_types = (0..pages)
            .map(|p| {
                if p < mpb_pages {
                    self.mpb_type
                } else {
                    self.shared_type
                }
            })
            .collect();
        for (start, len, t) in self.overrides {
            if start % PAGE as u64 != 0 || len % PAGE as u64 != 0 {
                return Err(Error::Config(format!(
                    "scc layout: page-type range [{start:#x}, +{len:#x}) is not {PAGE}-byte aligned"
                )));
            }
            if !l.contains(Addr(start), len as usize) {
                return Err(Error::Config(format!(
                    "scc layout: page-type range [{start:#x}, +{len:#x}) is outside the {:#x} bytes of chip memory",
                    l.mem_bytes()
                )));
            }
            let first = (start / PAGE as u64) as usize;
            for p in &mut l.page_types[first..first + (len / PAGE as u64) as usize] {
                *p = t;
            }
        }
        Ok(l)
    }
}

/// Byte offsets of everything in the shared region. Every field is 8-byte
/// aligned: the region is only ever accessed as `AtomicU64` words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RegionMap {
    /// Page-type codes, one word per page.
    pub page_types: usize,
    /// Lock registers, one word per core, 64 bytes apart.
    pub locks: usize,
    /// Atomic counters, one word each, 64 bytes apart.
    pub counters: usize,
    /// Per core: its rank's departure word and process (`presence`).
    pub presence: usize,
    /// Chip memory (page aligned).
    pub mem: usize,
    /// Checker: per byte of memory, the newest issued store (packed).
    pub newest: usize,
    /// Checker: per byte of memory, the store whose data memory holds (packed).
    pub memsh: usize,
    /// Checker: one slot per lock register.
    pub lock_slots: usize,
    /// Checker: one slot per atomic counter.
    pub counter_slots: usize,
    /// Checker: the hashed table of release/acquire addresses.
    pub sync_slots: usize,
    /// Words per slot: 8 header words, then the vector clock padded to 8.
    pub slot_words: usize,
    /// Total bytes.
    pub total: usize,
}

/// Bytes of the header at the start of the region.
pub(crate) const HEADER_BYTES: usize = 4096;
/// Spacing of lock registers and counters (one host cache line each).
const REG_STRIDE: usize = 64;

fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

impl RegionMap {
    pub(crate) fn new(l: &Layout) -> RegionMap {
        let mem_bytes = l.mem_bytes() as usize;
        let pages = mem_bytes / PAGE;
        let page_types = HEADER_BYTES;
        let locks = round_up(page_types + pages * 8, REG_STRIDE);
        let counters = locks + l.cores as usize * REG_STRIDE;
        let presence = counters + l.atomic_counters as usize * REG_STRIDE;
        let mem = round_up(presence + l.cores as usize * super::presence::STRIDE, PAGE);
        let mut end = mem + mem_bytes;
        let slot_words = 8 + round_up(l.cores as usize, 8);
        let (mut newest, mut memsh, mut lock_slots, mut counter_slots, mut sync_slots) =
            (0, 0, 0, 0, 0);
        if l.check {
            newest = end;
            memsh = newest + mem_bytes * 8;
            lock_slots = memsh + mem_bytes * 8;
            counter_slots = lock_slots + l.cores as usize * slot_words * 8;
            sync_slots = counter_slots + l.atomic_counters as usize * slot_words * 8;
            end = sync_slots + l.sync_slots as usize * slot_words * 8;
        }
        RegionMap {
            page_types,
            locks,
            counters,
            presence,
            mem,
            newest,
            memsh,
            lock_slots,
            counter_slots,
            sync_slots,
            slot_words,
            total: round_up(end, PAGE),
        }
    }
}

// Lines never straddle pages, so one memory type per line holds.
const _: () = assert!(PAGE.is_multiple_of(LINE));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_and_places() {
        let l = Layout::builder(48)
            .shared_bytes(64 << 20)
            .check(false)
            .build()
            .unwrap();
        assert_eq!(l.tiles(), 24);
        assert_eq!(l.mpb_bytes(), 384 * 1024);
        assert_eq!(l.mpb(3), Addr(3 * 8192));
        assert_eq!(l.place(l.mpb(3)), Place::Mpb { tile: 1 });
        assert_eq!(l.place(l.shared(0)), Place::Dram { mc: 0 });
        assert_eq!(l.place(l.shared(MC_WINDOW)), Place::Dram { mc: 1 });
        assert_eq!(l.page_type(l.mpb(47)), MemType::Mpbt);
        assert_eq!(l.page_type(l.shared(100)), MemType::WriteBack);
        assert!(l.contains(l.shared((64 << 20) - 8), 8));
        assert!(!l.contains(l.shared((64 << 20) - 8), 9));
        assert_eq!(hops(tile_xy(tile_of(0)), tile_xy(tile_of(47))), 5 + 3);
    }

    #[test]
    fn overrides_and_errors() {
        let l = Layout::builder(4)
            .shared_bytes(16384)
            .check(false)
            .page_type(Addr(32768 + 4096), 4096, MemType::Uncached)
            .build()
            .unwrap();
        assert_eq!(l.shared_base(), Addr(32768));
        assert_eq!(l.page_type(l.shared(4096)), MemType::Uncached);
        assert_eq!(l.page_type(l.shared(8192)), MemType::WriteBack);
        assert!(Layout::builder(0).build().is_err());
        assert!(Layout::builder(49).build().is_err());
        assert!(Layout::builder(2).shared_bytes(100).build().is_err());
        assert!(Layout::builder(2)
            .page_type(Addr(10), 4096, MemType::Uncached)
            .build()
            .is_err());
    }

    #[test]
    fn region_map_is_aligned() {
        let l = Layout::builder(5).check(true).build().unwrap();
        let m = RegionMap::new(&l);
        assert_eq!(m.mem % PAGE, 0);
        assert!(m.newest >= m.mem + l.mem_bytes() as usize);
        assert_eq!(m.slot_words, 16);
        assert_eq!(m.total % PAGE, 0);
        assert!(m.sync_slots + l.sync_slots() as usize * 128 <= m.total);
    }
}
