//! A core: the per-rank handle through which every access to chip memory
//! goes. Its L1, L2 and write-combine buffer are private state of this
//! handle (in the process of its rank); memory, registers and the checker's
//! shadow are in the shared region.

use super::cache::{Cache, Geometry, Victim};
use super::check::{
    channel_key, flag_key, lock_slot, unpack_mem, unpack_newest, CheckMode, CoreCheck, Missing,
    Source, StaleRead, MAX_REPORTS,
};
use super::chip::{ChipShared, CoreConfig};
use super::cost::CostTable;
use super::counters::Counters;
use super::layout::{tile_of, Addr, CounterId, Layout, LockId};
use super::line::{byte_mask, chunks, Chunk, LineData, LineIds, LINE};
use super::lock;
use super::page::MemType;
use super::wcb::Wcb;
use rgex_core::{Error, Rank, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One emulated SCC core (one rank). Every access mutates its private
/// caches, so memory operations take `&mut self`; wrap it in a mutex to use
/// it from several threads. `Send`, so it may move to another thread.
///
/// All accesses take chip [`Addr`]esses; an access outside chip memory
/// returns [`Error::OutOfSegment`] (naming this core's rank) and does nothing.
pub struct Core {
    chip: Arc<ChipShared>,
    p: Private,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("rank", &self.p.rank)
            .field("tile", &self.p.tile)
            .field("counters", &self.p.c)
            .finish_non_exhaustive()
    }
}

struct Private {
    rank: u32,
    tile: u32,
    l1: Cache,
    l2: Option<Cache>,
    wcb: Wcb,
    cost: CostTable,
    c: Counters,
    /// Present iff the chip has a shadow (then the core maintains it, even
    /// if it does not check its own reads).
    chk: Option<CoreCheck>,
}

/// Number of 4-byte words touched by `[addr, addr + len)`.
#[inline]
fn words4(addr: u64, len: usize) -> u64 {
    (addr + len as u64).div_ceil(4) - addr / 4
}

impl Core {
    pub(crate) fn new(chip: Arc<ChipShared>, rank: u32, cfg: CoreConfig, mode: CheckMode) -> Core {
        let track = chip.layout.check();
        let cores = chip.layout.cores() as usize;
        let p = Private {
            rank,
            tile: tile_of(rank),
            l1: Cache::new(cfg.l1, track),
            l2: cfg.l2.map(|g| Cache::new(g, track)),
            wcb: Wcb::new(),
            cost: cfg.cost,
            c: Counters::default(),
            chk: track.then(|| CoreCheck {
                vc: vec![0; cores],
                mode,
                reports: Vec::new(),
            }),
        };
        Core { chip, p }
    }

    /// This core's rank.
    pub fn rank(&self) -> u32 {
        self.p.rank
    }

    /// The tile it sits on.
    pub fn tile(&self) -> u32 {
        self.p.tile
    }

    /// The chip's layout.
    pub fn layout(&self) -> &Layout {
        &self.chip.layout
    }

    /// L1 geometry.
    pub fn l1_geometry(&self) -> Geometry {
        self.p.l1.geometry()
    }

    /// L2 geometry, if there is an L2.
    pub fn l2_geometry(&self) -> Option<Geometry> {
        self.p.l2.as_ref().map(Cache::geometry)
    }

    // ----- loads and stores -----

    /// Load `buf.len()` bytes at `addr`, through this core's caches as the
    /// page types say.
    pub fn read(&mut self, addr: Addr, buf: &mut [u8]) -> Result<()> {
        self.p.read(&self.chip, addr, buf).map(|_| ())
    }

    /// Store `data` at `addr`, through this core's caches and WCB as the
    /// page types say.
    pub fn write(&mut self, addr: Addr, data: &[u8]) -> Result<()> {
        self.p.write(&self.chip, addr, data).map(|_| ())
    }

    /// Load a little-endian `u32` (the SCC is little-endian).
    pub fn read_u32(&mut self, addr: Addr) -> Result<u32> {
        let mut b = [0; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Load a little-endian `u64`.
    pub fn read_u64(&mut self, addr: Addr) -> Result<u64> {
        let mut b = [0; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Store a little-endian `u32`.
    pub fn write_u32(&mut self, addr: Addr, v: u32) -> Result<()> {
        self.write(addr, &v.to_le_bytes())
    }

    /// Store a little-endian `u64`.
    pub fn write_u64(&mut self, addr: Addr, v: u64) -> Result<()> {
        self.write(addr, &v.to_le_bytes())
    }

    /// A store that is also a *release* for the checker (a flag write): it
    /// behaves exactly like [`write`](Self::write) (an MPBT flag still sits
    /// in the WCB until drained), and publishes this core's clock at `addr`
    /// for a later [`read_acquire`](Self::read_acquire) of the same address
    /// that observes this store.
    pub fn write_release(&mut self, addr: Addr, data: &[u8]) -> Result<()> {
        self.p.write_release(&self.chip, addr, data)
    }

    /// A load that is also an *acquire* for the checker: behaves exactly like
    /// [`read`](Self::read); if the bytes it returns are those of the last
    /// [`write_release`](Self::write_release) to `addr`, this core becomes
    /// synchronised with everything that release published.
    pub fn read_acquire(&mut self, addr: Addr, buf: &mut [u8]) -> Result<()> {
        self.p.read_acquire(&self.chip, addr, buf)
    }

    /// [`write_release`](Self::write_release) of a little-endian `u32`.
    pub fn write_u32_release(&mut self, addr: Addr, v: u32) -> Result<()> {
        self.write_release(addr, &v.to_le_bytes())
    }

    /// [`read_acquire`](Self::read_acquire) of a little-endian `u32`.
    pub fn read_u32_acquire(&mut self, addr: Addr) -> Result<u32> {
        let mut b = [0; 4];
        self.read_acquire(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// [`write_release`](Self::write_release) of a little-endian `u64`.
    pub fn write_u64_release(&mut self, addr: Addr, v: u64) -> Result<()> {
        self.write_release(addr, &v.to_le_bytes())
    }

    /// [`read_acquire`](Self::read_acquire) of a little-endian `u64`.
    pub fn read_u64_acquire(&mut self, addr: Addr) -> Result<u64> {
        let mut b = [0; 8];
        self.read_acquire(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    // ----- coherence operations -----

    /// Write the write-combine buffer's bytes to memory (on the SCC: a
    /// dummy store to another line). Returns whether it held anything.
    pub fn drain(&mut self) -> bool {
        let d = self.p.drain_wcb(&self.chip);
        if d {
            self.p.c.wcb_explicit_drains += 1;
        }
        d
    }

    /// Discard, without writing back, every MPBT line of L1 (CL1INVMB).
    /// Returns the number of lines discarded. MPBT lines are write-through,
    /// so nothing is lost; write-back lines are untouched.
    pub fn invalidate_mpbt(&mut self) -> usize {
        self.p.invalidate_mpbt()
    }

    /// Write back every dirty line (L1, then L2) and invalidate both caches
    /// (WBINVD-like; the WCB is not touched: [`drain`](Self::drain) it).
    /// Returns the number of lines written back.
    pub fn flush(&mut self) -> usize {
        self.p.flush(&self.chip)
    }

    /// Checker-only release on an explicit channel `ch` (e.g. before an
    /// external barrier): no memory access, no cycles.
    pub fn release(&mut self, ch: u64) {
        self.p.release(&self.chip, ch)
    }

    /// Checker-only acquire on an explicit channel `ch` (after the external
    /// synchronisation): joins every release made on `ch` so far.
    pub fn acquire(&mut self, ch: u64) {
        self.p.acquire(&self.chip, ch)
    }

    // ----- lock registers and atomic counters -----

    /// Read the test-and-set register `lock`: `true` if it was free and this
    /// core now holds it (the SCC register read returned 1), `false` if it
    /// was held (read returned 0), even by this core.
    pub fn tas_try(&mut self, lock: LockId) -> Result<bool> {
        self.p.tas_try(&self.chip, lock)
    }

    /// Write the test-and-set register `lock`, which frees it (any write
    /// does, whoever holds it).
    pub fn tas_release(&mut self, lock: LockId) -> Result<()> {
        self.p.tas_release(&self.chip, lock)
    }

    /// Atomically increment counter `c`; returns the value before.
    pub fn atomic_inc(&mut self, c: CounterId) -> Result<u32> {
        self.p.atomic(&self.chip, c, AtomicOp::Inc)
    }

    /// Atomically read counter `c`.
    pub fn atomic_read(&mut self, c: CounterId) -> Result<u32> {
        self.p.atomic(&self.chip, c, AtomicOp::Read)
    }

    /// Atomically set counter `c` to `v`; returns the value before.
    pub fn atomic_set(&mut self, c: CounterId, v: u32) -> Result<u32> {
        self.p.atomic(&self.chip, c, AtomicOp::Set(v))
    }

    // ----- measurement and checking -----

    /// A snapshot of this core's counters (subtract two for a difference).
    pub fn counters(&self) -> Counters {
        self.p.c
    }

    /// Modelled cycles so far.
    pub fn cycles(&self) -> u64 {
        self.p.c.cycles
    }

    /// Zero the counters.
    pub fn reset_counters(&mut self) {
        self.p.c = Counters::default();
    }

    /// The stale reads reported so far (oldest first; at most 10 000 kept,
    /// `counters().stale_reads` counts them all).
    pub fn stale_reads(&self) -> &[StaleRead] {
        self.p.chk.as_ref().map_or(&[], |k| &k.reports)
    }

    /// Take the reports, leaving the list empty.
    pub fn take_stale_reads(&mut self) -> Vec<StaleRead> {
        self.p
            .chk
            .as_mut()
            .map(|k| std::mem::take(&mut k.reports))
            .unwrap_or_default()
    }

    /// The check mode of this core's reads.
    pub fn check_mode(&self) -> CheckMode {
        self.p.chk.as_ref().map_or(CheckMode::Off, |k| k.mode)
    }

    /// Change the check mode of this core's reads (the chip must have a
    /// shadow for anything but `Off`).
    pub fn set_check_mode(&mut self, m: CheckMode) -> Result<()> {
        match self.p.chk.as_mut() {
            Some(k) => {
                k.mode = m;
                Ok(())
            }
            None if m == CheckMode::Off => Ok(()),
            None => Err(Error::Config(format!(
                "scc: {} cannot check: the chip was built without a checker shadow",
                Rank(self.p.rank)
            ))),
        }
    }

    /// Where this core caches the line of `addr`: `Some(L1)`, `Some(L2)` or
    /// `None` (for tests and debugging).
    pub fn cached(&self, addr: Addr) -> Option<Source> {
        let line = addr.0 / LINE as u64;
        if self.p.l1.find(line).is_some() {
            Some(Source::L1)
        } else if self.p.l2.as_ref().is_some_and(|c| c.find(line).is_some()) {
            Some(Source::L2)
        } else {
            None
        }
    }

    /// Start of the line the WCB holds, if any.
    pub fn wcb_line(&self) -> Option<Addr> {
        self.p.wcb.line().map(|l| Addr(l * LINE as u64))
    }

    /// Valid lines in L1 and in L2.
    pub fn cached_lines(&self) -> (usize, usize) {
        (
            self.p.l1.valid_lines(),
            self.p.l2.as_ref().map_or(0, Cache::valid_lines),
        )
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        self.chip.unclaim(self.p.rank);
    }
}

#[derive(Clone, Copy)]
enum AtomicOp {
    Inc,
    Read,
    Set(u32),
}

impl Private {
    fn range(&self, ch: &ChipShared, addr: Addr, len: usize) -> Result<()> {
        if ch.layout.contains(addr, len) {
            Ok(())
        } else {
            Err(Error::OutOfSegment {
                rank: Rank(self.rank),
                offset: addr.0,
                len: len as u64,
                seg_len: ch.layout.mem_bytes(),
            })
        }
    }

    fn mem_read_cost(&mut self, ch: &ChipShared, addr: u64, n: u64) {
        let place = ch.layout.place(Addr(addr));
        match place {
            super::layout::Place::Mpb { .. } => self.c.mpb_reads += n,
            super::layout::Place::Dram { .. } => self.c.dram_reads += n,
        }
        self.c.cycles += n * self.cost.mem(self.tile, place);
    }

    fn mem_write_cost(&mut self, ch: &ChipShared, addr: u64, n: u64) {
        let place = ch.layout.place(Addr(addr));
        match place {
            super::layout::Place::Mpb { .. } => self.c.mpb_writes += n,
            super::layout::Place::Dram { .. } => self.c.dram_writes += n,
        }
        self.c.cycles += n * self.cost.mem(self.tile, place);
    }

    /// Give a store its id and record it as issued (checker only; 0 if off).
    fn issue(&mut self, ch: &ChipShared, addr: u64, len: usize) -> u64 {
        match (ch.shadow(), self.chk.as_mut()) {
            (Some(sh), Some(k)) if len > 0 => {
                let s = sh.next_seq();
                sh.issue(addr, len, s, self.rank);
                k.vc[self.rank as usize] = s;
                s
            }
            _ => 0,
        }
    }

    /// Shadow bookkeeping of `len` bytes with id `id` written to memory.
    fn wrote_uniform(&self, ch: &ChipShared, addr: u64, len: usize, id: u64) {
        if let Some(sh) = ch.shadow() {
            let ids = [id; LINE];
            sh.wrote_memory(addr, &ids[..len], byte_mask(0, len), self.rank);
        }
    }

    /// Read a whole line from memory.
    fn fill(&mut self, ch: &ChipShared, line: u64) -> (LineData, LineIds) {
        let addr = line * LINE as u64;
        let mut d = [0u8; LINE];
        ch.mem_load(addr, &mut d);
        let mut ids = [0u64; LINE];
        if let Some(sh) = ch.shadow() {
            sh.mem_ids(addr, &mut ids);
        }
        self.c.line_fills += 1;
        self.mem_read_cost(ch, addr, 1);
        (d, ids)
    }

    /// Write a whole line to memory (eviction or flush).
    fn write_back(&mut self, ch: &ChipShared, line: u64, data: &LineData, ids: &LineIds) {
        ch.mem_store_line(line, data, u32::MAX);
        if let Some(sh) = ch.shadow() {
            sh.wrote_memory(line * LINE as u64, ids, u32::MAX, self.rank);
        }
        self.mem_write_cost(ch, line * LINE as u64, 1);
    }

    fn l1_insert(
        &mut self,
        ch: &ChipShared,
        line: u64,
        d: &LineData,
        ids: &LineIds,
        mpbt: bool,
        dirty: bool,
    ) {
        let (_, v) = self.l1.insert(line, d, ids, mpbt, dirty);
        if let Some(v) = v {
            self.c.l1_evictions += 1;
            if v.dirty {
                self.c.l1_writebacks += 1;
                self.absorb_l2(ch, v);
            }
        }
    }

    /// A dirty L1 victim goes to L2 (allocating there), or to memory.
    fn absorb_l2(&mut self, ch: &ChipShared, v: Victim) {
        let hit = self.l2.as_ref().map(|l2| l2.find(v.line));
        match hit {
            Some(Some(s)) => {
                let l2 = self.l2.as_mut().expect("l2 present");
                l2.replace(s, &v.data, &v.ids);
                l2.set_dirty(s, true);
                l2.touch(s);
            }
            Some(None) => self.l2_insert(ch, v.line, &v.data, &v.ids, true),
            None => self.write_back(ch, v.line, &v.data, &v.ids),
        }
    }

    fn l2_insert(&mut self, ch: &ChipShared, line: u64, d: &LineData, ids: &LineIds, dirty: bool) {
        let Some(l2) = self.l2.as_mut() else { return };
        let (_, v) = l2.insert(line, d, ids, false, dirty);
        if let Some(v) = v {
            self.c.l2_evictions += 1;
            if v.dirty {
                self.c.l2_writebacks += 1;
                self.write_back(ch, v.line, &v.data, &v.ids);
            }
        }
    }

    fn drain_wcb(&mut self, ch: &ChipShared) -> bool {
        let Some(p) = self.wcb.take() else {
            return false;
        };
        ch.mem_store_line(p.line, &p.data, p.mask);
        if let Some(sh) = ch.shadow() {
            sh.wrote_memory(p.line * LINE as u64, &p.ids, p.mask, self.rank);
        }
        self.c.wcb_drains += 1;
        self.mem_write_cost(ch, p.line * LINE as u64, 1);
        true
    }

    /// Read; returns the id of the first byte's data (0 without checker).
    fn read(&mut self, ch: &ChipShared, addr: Addr, buf: &mut [u8]) -> Result<u64> {
        self.range(ch, addr, buf.len())?;
        self.c.reads += 1;
        self.c.bytes_read += buf.len() as u64;
        let check = self.chk.as_ref().is_some_and(|k| k.mode != CheckMode::Off);
        let mut first = 0;
        let mut run = None;
        for ck in chunks(addr.0, buf.len()) {
            let ty = ch.layout.page_type(Addr(ck.addr));
            let mut ids = [0u64; LINE];
            let mut src = [Source::Memory; LINE];
            let out = &mut buf[ck.buf..ck.buf + ck.len];
            match ty {
                MemType::Uncached => self.read_uncached(ch, ck, out, &mut ids, &mut src),
                MemType::Mpbt => self.read_mpbt(ch, ck, out, &mut ids, &mut src),
                MemType::WriteBack => self.read_wb(ch, ck, out, &mut ids, &mut src),
            }
            if ck.buf == 0 {
                first = ids[0];
            }
            if check {
                self.check_chunk(ch, ck, ty, &ids, &src, &mut run);
            }
        }
        if let (Some(r), Some(k)) = (run, self.chk.as_mut()) {
            report(k, &mut self.c, r);
        }
        Ok(first)
    }

    fn read_uncached(
        &mut self,
        ch: &ChipShared,
        ck: Chunk,
        out: &mut [u8],
        ids: &mut LineIds,
        src: &mut [Source; LINE],
    ) {
        ch.mem_load(ck.addr, out);
        if let Some(sh) = ch.shadow() {
            sh.mem_ids(ck.addr, &mut ids[..ck.len]);
        }
        src.fill(Source::Memory);
        let n = words4(ck.addr, ck.len);
        self.c.uncached_reads += n;
        self.mem_read_cost(ch, ck.addr, n);
    }

    fn read_mpbt(
        &mut self,
        ch: &ChipShared,
        ck: Chunk,
        out: &mut [u8],
        ids: &mut LineIds,
        src: &mut [Source; LINE],
    ) {
        let line = ck.line();
        let (mut d, mut lids, from) = match self.l1.find(line) {
            Some(s) => {
                self.l1.touch(s);
                self.c.l1_hits += 1;
                (*self.l1.data(s), *self.l1.ids(s), Source::L1)
            }
            None => {
                self.c.l1_misses += 1;
                // MPBT bypasses L2: fill straight from memory; the core's
                // own buffered stores are merged into the new line.
                let (mut d, mut i) = self.fill(ch, line);
                self.wcb.forward(line, &mut d, &mut i);
                self.l1_insert(ch, line, &d, &i, true, false);
                (d, i, Source::Memory)
            }
        };
        self.c.cycles += self.cost.l1_hit * words4(ck.addr, ck.len);
        let fwd = self.wcb.forward(line, &mut d, &mut lids);
        let off = ck.off();
        out.copy_from_slice(&d[off..off + ck.len]);
        for i in 0..ck.len {
            ids[i] = lids[off + i];
            src[i] = if fwd & (1 << (off + i)) != 0 {
                Source::Wcb
            } else {
                from
            };
        }
    }

    fn read_wb(
        &mut self,
        ch: &ChipShared,
        ck: Chunk,
        out: &mut [u8],
        ids: &mut LineIds,
        src: &mut [Source; LINE],
    ) {
        let line = ck.line();
        let (d, lids, from) = match self.l1.find(line) {
            Some(s) => {
                self.l1.touch(s);
                self.c.l1_hits += 1;
                (*self.l1.data(s), *self.l1.ids(s), Source::L1)
            }
            None => {
                self.c.l1_misses += 1;
                let l2hit = self.l2.as_ref().and_then(|l2| l2.find(line));
                if let Some(s2) = l2hit {
                    let l2 = self.l2.as_mut().expect("l2 present");
                    l2.touch(s2);
                    let (d, i) = (*l2.data(s2), *l2.ids(s2));
                    self.c.l2_hits += 1;
                    self.c.cycles += self.cost.l2_hit;
                    self.l1_insert(ch, line, &d, &i, false, false);
                    (d, i, Source::L2)
                } else {
                    if self.l2.is_some() {
                        self.c.l2_misses += 1;
                    }
                    let (d, i) = self.fill(ch, line);
                    self.l2_insert(ch, line, &d, &i, false);
                    self.l1_insert(ch, line, &d, &i, false, false);
                    (d, i, Source::Memory)
                }
            }
        };
        self.c.cycles += self.cost.l1_hit * words4(ck.addr, ck.len);
        let off = ck.off();
        out.copy_from_slice(&d[off..off + ck.len]);
        ids[..ck.len].copy_from_slice(&lids[off..off + ck.len]);
        src.fill(from);
    }

    /// Write; returns the store's id (0 without checker).
    fn write(&mut self, ch: &ChipShared, addr: Addr, data: &[u8]) -> Result<u64> {
        self.range(ch, addr, data.len())?;
        self.c.writes += 1;
        self.c.bytes_written += data.len() as u64;
        let id = self.issue(ch, addr.0, data.len());
        for ck in chunks(addr.0, data.len()) {
            let bytes = &data[ck.buf..ck.buf + ck.len];
            let line = ck.line();
            let off = ck.off();
            let w = words4(ck.addr, ck.len);
            match ch.layout.page_type(Addr(ck.addr)) {
                MemType::Uncached => {
                    ch.mem_store(ck.addr, bytes);
                    self.wrote_uniform(ch, ck.addr, ck.len, id);
                    self.c.uncached_writes += w;
                    self.mem_write_cost(ch, ck.addr, w);
                }
                MemType::Mpbt => {
                    // Write-through: update L1 on a hit (no allocation on a
                    // miss), and always go through the WCB.
                    if let Some(s) = self.l1.find(line) {
                        self.l1.update(s, off, bytes, id);
                        self.l1.touch(s);
                        self.c.l1_write_hits += 1;
                        self.c.cycles += self.cost.l1_hit * w;
                    } else {
                        self.c.l1_write_misses += 1;
                    }
                    if self.wcb.line().is_some_and(|o| o != line) {
                        self.drain_wcb(ch);
                        self.c.wcb_line_change_drains += 1;
                    }
                    self.wcb.put(line, off, bytes, id);
                    self.c.wcb_stores += 1;
                    self.c.cycles += self.cost.wcb_store;
                }
                MemType::WriteBack => {
                    if let Some(s) = self.l1.find(line) {
                        self.l1.update(s, off, bytes, id);
                        self.l1.set_dirty(s, true);
                        self.l1.touch(s);
                        self.c.l1_write_hits += 1;
                        self.c.cycles += self.cost.l1_hit * w;
                        continue;
                    }
                    self.c.l1_write_misses += 1;
                    let l2hit = self.l2.as_ref().and_then(|l2| l2.find(line));
                    if let Some(s2) = l2hit {
                        let l2 = self.l2.as_mut().expect("l2 present");
                        l2.update(s2, off, bytes, id);
                        l2.set_dirty(s2, true);
                        l2.touch(s2);
                        self.c.l2_write_hits += 1;
                        self.c.cycles += self.cost.l2_hit;
                    } else {
                        // No write-allocate: the store goes to memory.
                        ch.mem_store(ck.addr, bytes);
                        self.wrote_uniform(ch, ck.addr, ck.len, id);
                        self.c.write_miss_words += w;
                        self.mem_write_cost(ch, ck.addr, w);
                    }
                }
            }
        }
        Ok(id)
    }

    fn invalidate_mpbt(&mut self) -> usize {
        self.c.invalidates += 1;
        self.c.cycles += self.cost.invalidate;
        let mut n = 0;
        for s in 0..self.l1.slots() {
            if self.l1.line_at(s).is_some() && self.l1.is_mpbt(s) {
                self.l1.invalidate(s);
                n += 1;
            }
        }
        self.c.invalidated_lines += n as u64;
        n
    }

    fn flush(&mut self, ch: &ChipShared) -> usize {
        self.c.flushes += 1;
        let slots = self.l1.slots() + self.l2.as_ref().map_or(0, Cache::slots);
        self.c.cycles += self.cost.flush_per_slot * slots as u64;
        let mut written = 0;
        let mut discarded = 0;
        for s in 0..self.l1.slots() {
            let Some(line) = self.l1.line_at(s) else {
                continue;
            };
            if self.l1.is_dirty(s) {
                // L1's copy is newer than any L2 copy of the line: drop that
                // one so it is not written back over this one.
                if let Some(l2) = self.l2.as_mut() {
                    if let Some(s2) = l2.find(line) {
                        l2.invalidate(s2);
                        discarded += 1;
                    }
                }
                let (d, i) = (*self.l1.data(s), *self.l1.ids(s));
                self.write_back(ch, line, &d, &i);
                written += 1;
            }
            self.l1.invalidate(s);
            discarded += 1;
        }
        if let Some(n) = self.l2.as_ref().map(Cache::slots) {
            for s in 0..n {
                let l2 = self.l2.as_ref().expect("l2 present");
                let Some(line) = l2.line_at(s) else {
                    continue;
                };
                if l2.is_dirty(s) {
                    let (d, i) = (*l2.data(s), *l2.ids(s));
                    self.write_back(ch, line, &d, &i);
                    written += 1;
                }
                self.l2.as_mut().expect("l2 present").invalidate(s);
                discarded += 1;
            }
        }
        self.c.flushed_lines += written as u64;
        self.c.flush_discarded_lines += discarded;
        written
    }

    fn write_release(&mut self, ch: &ChipShared, addr: Addr, data: &[u8]) -> Result<()> {
        self.range(ch, addr, data.len())?;
        self.c.releases += 1;
        let Some(sh) = ch.shadow() else {
            return self.write(ch, addr, data).map(|_| ());
        };
        // The slot lock is held across the store and the recording of the
        // clock, so an acquirer sees both or neither.
        let guard = sh.sync_slot_claim(flag_key(addr)).and_then(lock_slot);
        if guard.is_none() {
            self.c.sync_dropped += 1;
        }
        let id = self.write(ch, addr, data)?;
        if let (Some(g), Some(k)) = (&guard, &self.chk) {
            g.set_release(id, &k.vc);
        }
        Ok(())
    }

    fn read_acquire(&mut self, ch: &ChipShared, addr: Addr, buf: &mut [u8]) -> Result<()> {
        self.range(ch, addr, buf.len())?;
        self.c.acquires += 1;
        let Some(sh) = ch.shadow() else {
            return self.read(ch, addr, buf).map(|_| ());
        };
        let slot = sh.sync_slot_find(flag_key(addr));
        let guard = slot.and_then(lock_slot);
        if slot.is_some() && guard.is_none() {
            self.c.sync_dropped += 1;
        }
        let first = self.read(ch, addr, buf)?;
        if let (Some(g), Some(k)) = (&guard, self.chk.as_mut()) {
            // Acquire only what the observed store published.
            if first != 0 && g.release_id() == first {
                g.join_out(&mut k.vc);
            }
        }
        Ok(())
    }

    fn release(&mut self, ch: &ChipShared, chan: u64) {
        self.c.releases += 1;
        let Some(sh) = ch.shadow() else { return };
        match sh.sync_slot_claim(channel_key(chan)).and_then(lock_slot) {
            Some(g) => g.join_in(&self.chk.as_ref().expect("checker state").vc),
            None => self.c.sync_dropped += 1,
        }
    }

    fn acquire(&mut self, ch: &ChipShared, chan: u64) {
        self.c.acquires += 1;
        let Some(sh) = ch.shadow() else { return };
        let Some(slot) = sh.sync_slot_find(channel_key(chan)) else {
            return;
        };
        match lock_slot(slot) {
            Some(g) => g.join_out(&mut self.chk.as_mut().expect("checker state").vc),
            None => self.c.sync_dropped += 1,
        }
    }

    fn lock_index(&self, ch: &ChipShared, lock: LockId) -> Result<u32> {
        if lock.0 < ch.layout.cores() {
            Ok(lock.0)
        } else {
            Err(Error::Config(format!(
                "scc: {} used lock register {} but the chip has {} (one per core)",
                Rank(self.rank),
                lock.0,
                ch.layout.cores()
            )))
        }
    }

    fn tas_try(&mut self, ch: &ChipShared, lock: LockId) -> Result<bool> {
        let i = self.lock_index(ch, lock)?;
        self.c.lock_attempts += 1;
        self.c.cycles += self.cost.lock(self.tile, tile_of(i));
        let got = lock::tas_read(ch.lock_reg(i));
        if got {
            self.c.lock_acquires += 1;
            if let (Some(sh), Some(k)) = (ch.shadow(), self.chk.as_mut()) {
                // The register's Acquire swap made the previous holder's
                // clock entries visible.
                super::check::join_out(sh.lock_slot(i), &mut k.vc);
            }
        }
        Ok(got)
    }

    fn tas_release(&mut self, ch: &ChipShared, lock: LockId) -> Result<()> {
        let i = self.lock_index(ch, lock)?;
        self.c.lock_releases += 1;
        self.c.cycles += self.cost.lock(self.tile, tile_of(i));
        if let (Some(sh), Some(k)) = (ch.shadow(), self.chk.as_ref()) {
            // Published by the register's Release store just below.
            super::check::join_in(sh.lock_slot(i), &k.vc);
        }
        lock::tas_write(ch.lock_reg(i));
        Ok(())
    }

    fn atomic(&mut self, ch: &ChipShared, c: CounterId, op: AtomicOp) -> Result<u32> {
        if c.0 >= ch.layout.atomic_counters() {
            return Err(Error::Config(format!(
                "scc: {} used atomic counter {} but the chip has {}",
                Rank(self.rank),
                c.0,
                ch.layout.atomic_counters()
            )));
        }
        self.c.cycles += self.cost.atomic(self.tile);
        match op {
            AtomicOp::Inc => self.c.atomic_incs += 1,
            AtomicOp::Read => self.c.atomic_reads += 1,
            AtomicOp::Set(_) => self.c.atomic_sets += 1,
        }
        let reg = ch.counter(c.0);
        let do_op = || match op {
            AtomicOp::Inc => lock::counter_inc(reg),
            AtomicOp::Read => lock::counter_read(reg),
            AtomicOp::Set(v) => lock::counter_set(reg, v),
        };
        let (Some(sh), Some(k)) = (ch.shadow(), self.chk.as_mut()) else {
            return Ok(do_op());
        };
        // Under the counter's slot lock the value and the clock change
        // together, so a reader's join matches the value it read.
        let Some(g) = lock_slot(sh.counter_slot(c.0)) else {
            self.c.sync_dropped += 1;
            return Ok(do_op());
        };
        if !matches!(op, AtomicOp::Read) {
            g.join_in(&k.vc);
        }
        let v = do_op();
        if !matches!(op, AtomicOp::Set(_)) {
            g.join_out(&mut k.vc);
        }
        Ok(v)
    }

    /// Check the bytes of one chunk against the shadow; extends or emits the
    /// current run of stale bytes.
    fn check_chunk(
        &mut self,
        ch: &ChipShared,
        ck: Chunk,
        ty: MemType,
        ids: &LineIds,
        src: &[Source; LINE],
        run: &mut Option<StaleRead>,
    ) {
        let (Some(sh), Some(k)) = (ch.shadow(), self.chk.as_mut()) else {
            return;
        };
        for i in 0..ck.len {
            let x = ck.addr + i as u64;
            // Relaxed: see `Shadow::issue`.
            let (ns, w) = unpack_newest(sh.newest(x).load(Ordering::Relaxed));
            let g = ids[i];
            let synced = k.vc.get(w as usize).is_some_and(|&v| ns <= v);
            if ns == 0 || g >= ns || !synced {
                if let Some(r) = run.take() {
                    report(k, &mut self.c, r);
                }
                continue;
            }
            let (ms, clobbered, by) = unpack_mem(sh.mem(x).load(Ordering::Relaxed));
            let missing = match src[i] {
                Source::Wcb => Missing::Drain { rank: self.rank },
                Source::L1 | Source::L2 if ms >= ns => {
                    if ty == MemType::Mpbt {
                        Missing::Invalidate { rank: self.rank }
                    } else {
                        Missing::ReaderFlush { rank: self.rank }
                    }
                }
                _ if clobbered => Missing::LostUpdate { by },
                // The store never reached memory. (Uncached stores always
                // do; an uncached byte lands here only if a racing writer
                // was synchronised after its store, which cannot happen.)
                _ if ty == MemType::WriteBack => Missing::Flush { rank: w },
                _ => Missing::Drain { rank: w },
            };
            let rep = StaleRead {
                rank: self.rank,
                addr: Addr(x),
                len: 1,
                source: src[i],
                got: g,
                store: ns,
                writer: w,
                missing,
            };
            match run {
                Some(r)
                    if r.addr.0 + r.len as u64 == x
                        && (r.source, r.missing, r.writer, r.store, r.got)
                            == (rep.source, rep.missing, rep.writer, rep.store, rep.got) =>
                {
                    r.len += 1
                }
                _ => {
                    if let Some(r) = run.replace(rep) {
                        report(k, &mut self.c, r);
                    }
                }
            }
        }
    }
}

fn report(k: &mut CoreCheck, c: &mut Counters, r: StaleRead) {
    c.stale_reads += 1;
    if k.reports.len() < MAX_REPORTS {
        k.reports.push(r);
    }
    if k.mode == CheckMode::Strict {
        panic!("{r}");
    }
}

#[cfg(test)]
mod tests {
    use super::words4;

    #[test]
    fn word_counts() {
        assert_eq!(words4(0, 4), 1);
        assert_eq!(words4(2, 4), 2);
        assert_eq!(words4(0, 32), 8);
        assert_eq!(words4(31, 1), 1);
    }
}
