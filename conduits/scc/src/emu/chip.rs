//! The chip: one shared region holding every core's view of memory, the
//! lock registers, the atomic counters, the ranks' presence records and the
//! checker's shadow.

use super::cache::Geometry;
use super::check::{CheckMode, Shadow};
use super::core::Core;
use super::cost::CostTable;
use super::layout::{Addr, Layout, RegionMap, HEADER_BYTES};
use super::line::{LineData, LINE};
use super::page::{MemType, PAGE};
use super::presence::RankPresence;
use super::region::{store_masked, Region};
use rgex_core::{Error, Rank, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// "RGEXSCC1": written last by the creator, so an opener that sees it sees
/// an initialised header and page table.
const MAGIC: u64 = u64::from_le_bytes(*b"RGEXSCC1");
const VERSION: u64 = 2;
const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_CORES: usize = 16;
const H_SHARED: usize = 24;
const H_COUNTERS: usize = 32;
const H_SYNC: usize = 40;
const H_CHECK: usize = 48;
const H_TOTAL: usize = 56;
/// Byte offset of the checker's global store counter (own host cache line).
pub(crate) const SEQ_OFF: usize = 64;
/// Byte offset of the bit mask of ranks that have a `Core`.
const CLAIM_OFF: usize = 128;

/// How long [`Chip::open`] waits for the creator by default.
pub const DEFAULT_OPEN_TIMEOUT: Duration = Duration::from_secs(10);

/// Per-core settings that are private to the core (not shared with others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreConfig {
    /// L1 data cache geometry (default: the SCC's 16 KiB, 4-way).
    pub l1: Geometry,
    /// L2 geometry, or `None` for no L2 (default: the SCC's 256 KiB, 4-way).
    pub l2: Option<Geometry>,
    /// Cycle costs.
    pub cost: CostTable,
    /// Checking of this core's reads; `None` follows the chip: `Strict` if
    /// `RGEX_SCC_CHECK=strict`, else `Report` when the chip has a shadow.
    pub check: Option<CheckMode>,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            l1: Geometry::SCC_L1,
            l2: Some(Geometry::SCC_L2),
            cost: CostTable::default(),
            check: None,
        }
    }
}

impl CoreConfig {
    /// Set the L1 geometry.
    pub fn l1(mut self, g: Geometry) -> Self {
        self.l1 = g;
        self
    }

    /// Set (or remove) the L2.
    pub fn l2(mut self, g: Option<Geometry>) -> Self {
        self.l2 = g;
        self
    }

    /// Set the cost table.
    pub fn cost(mut self, c: CostTable) -> Self {
        self.cost = c;
        self
    }

    /// Set the check mode of this core's reads.
    pub fn check(mut self, m: CheckMode) -> Self {
        self.check = Some(m);
        self
    }
}

/// What every core of one chip shares (in this process).
pub(crate) struct ChipShared {
    pub region: Region,
    pub layout: Layout,
    pub map: RegionMap,
    pub name: Option<String>,
}

impl ChipShared {
    /// The checker's view, if the chip has a shadow.
    #[inline]
    pub(crate) fn shadow(&self) -> Option<Shadow<'_>> {
        self.layout.check().then(|| Shadow {
            region: &self.region,
            map: &self.map,
            sync_slots: self.layout.sync_slots() as usize,
        })
    }

    /// Load chip memory `[addr, addr + out.len())`.
    #[inline]
    pub(crate) fn mem_load(&self, addr: u64, out: &mut [u8]) {
        self.region.load_bytes(self.map.mem + addr as usize, out);
    }

    /// Store `data` at chip address `addr`.
    #[inline]
    pub(crate) fn mem_store(&self, addr: u64, data: &[u8]) {
        self.region.store_bytes(self.map.mem + addr as usize, data);
    }

    /// Store the bytes of a whole line selected by `mask`.
    pub(crate) fn mem_store_line(&self, line: u64, data: &LineData, mask: u32) {
        let base = self.map.mem + (line as usize) * LINE;
        for k in 0..LINE / 8 {
            let bits = (mask >> (k * 8)) & 0xff;
            if bits == 0 {
                continue;
            }
            let mut m = [0u8; 8];
            for (j, b) in m.iter_mut().enumerate() {
                if bits & (1 << j) != 0 {
                    *b = 0xff;
                }
            }
            let mut v = [0u8; 8];
            v.copy_from_slice(&data[k * 8..k * 8 + 8]);
            store_masked(
                self.region.w(base + k * 8),
                u64::from_ne_bytes(v),
                u64::from_ne_bytes(m),
            );
        }
    }

    /// The lock register of core `i`.
    pub(crate) fn lock_reg(&self, i: u32) -> &AtomicU64 {
        self.region.w(self.map.locks + i as usize * 64)
    }

    /// Atomic counter `i`.
    pub(crate) fn counter(&self, i: u32) -> &AtomicU64 {
        self.region.w(self.map.counters + i as usize * 64)
    }

    fn claims(&self) -> &AtomicU64 {
        self.region.w(CLAIM_OFF)
    }

    /// Mark `rank` as having a `Core`; false if it already had one.
    pub(crate) fn claim(&self, rank: u32) -> bool {
        // AcqRel: the claim bit is its own little lock; no data depends on it.
        self.claims().fetch_or(1 << rank, Ordering::AcqRel) & (1 << rank) == 0
    }

    /// Undo [`claim`](Self::claim).
    pub(crate) fn unclaim(&self, rank: u32) {
        // AcqRel: see `claim`.
        self.claims().fetch_and(!(1u64 << rank), Ordering::AcqRel);
    }
}

/// An emulated SCC chip: shared memory for all its cores.
///
/// Cheap to clone (shared handle). Create one per process: in one process
/// with [`Chip::in_process`], or across processes with [`Chip::create`] on
/// one rank and [`Chip::open`] on the others.
#[derive(Clone)]
pub struct Chip {
    inner: Arc<ChipShared>,
}

impl std::fmt::Debug for Chip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chip")
            .field("name", &self.inner.name)
            .field("layout", &self.inner.layout)
            .field("region_bytes", &self.inner.map.total)
            .finish()
    }
}

fn init_region(region: &Region, layout: &Layout, map: &RegionMap) {
    // Relaxed for the fields: they are published by the Release store of the
    // magic word below, which openers read with Acquire.
    for (p, t) in layout.page_types().iter().enumerate() {
        region
            .w(map.page_types + p * 8)
            .store(t.code(), Ordering::Relaxed);
    }
    let h = |off: usize, v: u64| region.w(off).store(v, Ordering::Relaxed);
    h(H_VERSION, VERSION);
    h(H_CORES, layout.cores() as u64);
    h(H_SHARED, layout.shared_bytes());
    h(H_COUNTERS, layout.atomic_counters() as u64);
    h(H_SYNC, layout.sync_slots() as u64);
    h(H_CHECK, layout.check() as u64);
    h(H_TOTAL, map.total as u64);
    region.w(H_MAGIC).store(MAGIC, Ordering::Release);
}

/// Path of a POSIX shm object on Linux, to check its size before mapping
/// (mapping past the end of a half-created object would SIGBUS on access).
fn shm_len(name: &str) -> Option<u64> {
    let p = format!("/dev/shm/{}", name.trim_start_matches('/'));
    std::fs::metadata(p).ok().map(|m| m.len())
}

impl Chip {
    /// A chip in this process only (an anonymous shared mapping). Forked
    /// children share it too.
    pub fn in_process(layout: Layout) -> Result<Chip> {
        let map = RegionMap::new(&layout);
        let region = Region::anon(map.total)?;
        init_region(&region, &layout, &map);
        Ok(Chip {
            inner: Arc::new(ChipShared {
                region,
                layout,
                map,
                name: None,
            }),
        })
    }

    /// Create the named POSIX shared-memory object `name` (e.g.
    /// `"/rgex-scc-<job>"`; it must not exist) holding a chip of `layout`.
    /// The caller unlinks it ([`Chip::unlink`]) once every rank has opened it.
    pub fn create(name: &str, layout: Layout) -> Result<Chip> {
        let map = RegionMap::new(&layout);
        let region = Region::create(name, map.total)?;
        init_region(&region, &layout, &map);
        Ok(Chip {
            inner: Arc::new(ChipShared {
                region,
                layout,
                map,
                name: Some(name.to_owned()),
            }),
        })
    }

    /// Open the chip another process created as `name`; the layout is read
    /// from the region. Waits up to [`DEFAULT_OPEN_TIMEOUT`] for the object
    /// to exist and be initialised.
    pub fn open(name: &str) -> Result<Chip> {
        Chip::open_timeout(name, DEFAULT_OPEN_TIMEOUT)
    }

    /// [`Chip::open`] with an explicit wait bound.
    pub fn open_timeout(name: &str, timeout: Duration) -> Result<Chip> {
        let start = Instant::now();
        let waited = |what: &str| {
            Error::Bootstrap(format!(
                "scc chip {name}: {what} after waiting {:?}",
                start.elapsed()
            ))
        };
        // Phase 1: the header, once the object is big enough and initialised.
        let header = loop {
            if shm_len(name).is_none_or(|l| l >= HEADER_BYTES as u64) {
                if let Ok(r) = Region::open(name, HEADER_BYTES) {
                    // Acquire: pairs with the creator's Release of the magic.
                    if r.w(H_MAGIC).load(Ordering::Acquire) == MAGIC {
                        break r;
                    }
                }
            }
            if start.elapsed() > timeout {
                return Err(waited("not created or not initialised"));
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let rd = |off: usize| header.w(off).load(Ordering::Relaxed);
        if rd(H_VERSION) != VERSION {
            return Err(Error::Config(format!(
                "scc chip {name}: region version {} but this build reads version {VERSION}",
                rd(H_VERSION)
            )));
        }
        let (cores, shared, counters, sync, check, total) = (
            rd(H_CORES) as u32,
            rd(H_SHARED),
            rd(H_COUNTERS) as u32,
            rd(H_SYNC) as u32,
            rd(H_CHECK) != 0,
            rd(H_TOTAL) as usize,
        );
        drop(header);
        let region = Region::open(name, total)?;
        // Pages of MPB + shared memory.
        let tiles = cores.div_ceil(super::layout::CORES_PER_TILE) as u64;
        let pages = ((tiles * super::layout::MPB_PER_TILE as u64 + shared) / PAGE as u64) as usize;
        let probe = Layout::from_parts(
            cores,
            shared,
            counters,
            sync,
            check,
            vec![MemType::Uncached; pages],
        )?;
        let map = RegionMap::new(&probe);
        if map.total != total {
            return Err(Error::Config(format!(
                "scc chip {name}: header says {total} bytes but its layout needs {}",
                map.total
            )));
        }
        let mut types = Vec::with_capacity(pages);
        for p in 0..pages {
            let c = region.w(map.page_types + p * 8).load(Ordering::Relaxed);
            types.push(MemType::from_code(c).ok_or_else(|| {
                Error::Config(format!(
                    "scc chip {name}: bad page type code {c} for page {p}"
                ))
            })?);
        }
        let layout = Layout::from_parts(cores, shared, counters, sync, check, types)?;
        Ok(Chip {
            inner: Arc::new(ChipShared {
                region,
                layout,
                map,
                name: Some(name.to_owned()),
            }),
        })
    }

    /// Remove the name of a chip's shared-memory object (mappings stay valid).
    pub fn unlink(name: &str) -> Result<()> {
        rgex_smp::shm::unlink(name)
    }

    /// The shm name, for a named chip.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The chip's layout.
    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    /// Bytes of the shared region (memory, registers, shadow).
    pub fn region_bytes(&self) -> usize {
        self.inner.map.total
    }

    /// The core of rank `rank`, with the default [`CoreConfig`].
    pub fn core(&self, rank: u32) -> Result<Core> {
        self.core_with(rank, CoreConfig::default())
    }

    /// The core of rank `rank`. Each rank may have one `Core` at a time in
    /// the whole job (its private caches are the core's), so a second call
    /// for the same rank fails until the first `Core` is dropped.
    pub fn core_with(&self, rank: u32, cfg: CoreConfig) -> Result<Core> {
        let l = &self.inner.layout;
        if rank >= l.cores() {
            return Err(Error::RankOutOfRange {
                rank,
                size: l.cores(),
            });
        }
        let mode = match cfg.check {
            Some(m) => m,
            None if l.check() => match CheckMode::from_env() {
                CheckMode::Strict => CheckMode::Strict,
                _ => CheckMode::Report,
            },
            None => CheckMode::Off,
        };
        if mode != CheckMode::Off && !l.check() {
            return Err(Error::Config(format!(
                "scc: checking asked for {} but the chip was built without a checker shadow (Layout::builder(..).check(true) or RGEX_SCC_CHECK=1)",
                Rank(rank)
            )));
        }
        if !self.inner.claim(rank) {
            return Err(Error::Config(format!(
                "scc: {} already has a Core on this chip (one per rank: the caches are private)",
                Rank(rank)
            )));
        }
        Ok(Core::new(Arc::clone(&self.inner), rank, cfg, mode))
    }

    /// The record of whether rank `rank` is still in the job and which
    /// process runs it (see [`RankPresence`]).
    pub fn presence(&self, rank: u32) -> Result<RankPresence> {
        let cores = self.inner.layout.cores();
        if rank >= cores {
            return Err(Error::RankOutOfRange { rank, size: cores });
        }
        Ok(RankPresence::new(Arc::clone(&self.inner), rank))
    }

    /// This process's address of chip memory `[addr, addr + len)`, for
    /// handing memory to code outside the emulation: the scc conduit
    /// exposes a rank's own segment this way (an rgex `Segment`, which the
    /// client reads and writes with plain copies). Accesses through it
    /// bypass every cache, WCB and the checker, like [`peek`](Self::peek):
    /// they act on memory directly, as a coherent DMA engine would. The
    /// pointer is valid while a handle to this chip lives.
    pub fn host_ptr(&self, addr: Addr, len: usize) -> Result<std::ptr::NonNull<u8>> {
        if !self.inner.layout.contains(addr, len) {
            return Err(Error::OutOfSegment {
                rank: Rank(u32::MAX),
                offset: addr.0,
                len: len as u64,
                seg_len: self.inner.layout.mem_bytes(),
            });
        }
        let p = self.inner.region.ptr(self.inner.map.mem + addr.0 as usize);
        Ok(std::ptr::NonNull::new(p).expect("a mapping is never at address 0"))
    }

    /// Read chip memory `[addr, addr + out.len())` directly, bypassing every
    /// cache, WCB and the checker: for tests and debugging only (no real
    /// core can do this).
    pub fn peek(&self, addr: Addr, out: &mut [u8]) -> Result<()> {
        if !self.inner.layout.contains(addr, out.len()) {
            return Err(Error::OutOfSegment {
                rank: Rank(u32::MAX),
                offset: addr.0,
                len: out.len() as u64,
                seg_len: self.inner.layout.mem_bytes(),
            });
        }
        self.inner.mem_load(addr.0, out);
        Ok(())
    }
}
