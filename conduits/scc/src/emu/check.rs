//! The stale-read checker.
//!
//! # Definition
//!
//! - **Store ids.** Every store operation (one `write*` call) takes a
//!   chip-wide unique, increasing sequence number `s` when it is issued;
//!   every byte it writes carries `s` as its *id*, wherever the byte travels
//!   (WCB, L1, L2, memory). The shadow in the shared region holds, per byte
//!   of chip memory, `newest[x]` = the id (and writer) of the highest store
//!   ever issued to `x`, and `mem[x]` = the id of the data memory holds now.
//!   Cached lines and the WCB carry per-byte ids of their data privately.
//! - **Synchronisation** is happens-before, tracked with vector clocks (one
//!   entry per core, in store ids): `VC_c[c]` is the id of `c`'s latest
//!   store, `VC_c[w]` the latest store of `w` known to happen before `c`'s
//!   current point. A *release* publishes `VC_c`; an *acquire* joins a
//!   published clock into the acquirer's:
//!   - `write_release(a, ..)` records `VC_c` (and the id of the release store
//!     itself) in the sync slot of address `a`; `read_acquire(a, ..)` joins
//!     that clock **only if the value it read carries the id of that release
//!     store** (it observed the release; reading an older flag value, e.g.
//!     from a stale cached line, acquires nothing);
//!   - `tas_release(l)` joins `VC_c` into lock `l`'s clock, a successful
//!     `tas_try(l)` joins it back (the register itself guarantees the order);
//!   - every atomic counter operation joins both ways (read-modify-write
//!     chains propagate, as C++ release sequences do);
//!   - `release(ch)` / `acquire(ch)` do the same for an explicit channel `ch`
//!     (e.g. an external barrier): join in, join out.
//!
//!   A store `s` by core `w` is *synchronised with* reader `r` iff
//!   `s <= VC_r[w]`: it happened before a release by `w` that `r` (maybe
//!   through others) acquired.
//! - **Stale read.** A byte `x` returned to `r` with id `g` is stale iff the
//!   newest store to `x`, `(s, w) = newest[x]`, is synchronised with `r` and
//!   `g != s`: `r` got older data than a store it is entitled to see.
//!
//! Vector clocks rather than one global scalar: with a scalar, a release by
//! A would make B "synchronised" with every store any third core C had
//! issued before, and B polling C's flag while C's store is still in C's
//! WCB would be reported: false alarms in every multi-rank run.
//!
//! Every report is a real ordering bug of the protocol (no false positives)
//! under these documented limits: if a newer *unsynchronised* store to `x`
//! was issued after the synchronised one, `x` is not checked (a missed
//! report); a release whose slot cannot be recorded (table full, slot lock
//! unobtainable, counted in `sync_dropped`) acquires nothing (missed reports
//! again); when two writers race on a byte the report names one of them.
//!
//! # Naming the missing operation
//!
//! From where the stale byte came and where the newest store is:
//! - from the reader's L1/L2 while memory already holds the store: the
//!   reader's line was filled before it: [`Missing::Invalidate`] (MPBT line)
//!   or [`Missing::ReaderFlush`] (write-back line: there is no selective
//!   invalidate for those);
//! - memory lacks the store and was last overwritten by a whole-line
//!   write-back carrying older bytes over newer ones: [`Missing::LostUpdate`]
//!   (names the core whose write-back destroyed it);
//! - otherwise the store never reached memory: still in the writer's WCB
//!   ([`Missing::Drain`], MPBT page) or in its write-back cache
//!   ([`Missing::Flush`], write-back page);
//! - from the reader's own WCB: its own older store still buffered
//!   ([`Missing::Drain`] of the reader).
//!
//! # Cost
//!
//! Shadow: 16 bytes per byte of chip memory (allocated only when the layout
//! asks for checking) plus per core a copy of the ids of its cached lines.
//! Per store: one global `fetch_add` and one `fetch_max` per byte; per byte
//! reaching memory: one load and one store; per byte read: one load and a
//! compare. Release/acquire take a tiny per-slot spin lock.

use super::layout::{Addr, RegionMap};
use super::region::Region;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether a core checks its reads, and what it does on a stale one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckMode {
    /// No checking.
    Off,
    /// Record stale reads in the core's report list.
    Report,
    /// Record and panic at the first stale read.
    Strict,
}

impl CheckMode {
    /// `RGEX_SCC_CHECK` in the process environment now (the emulator's
    /// default when a chip is built without saying; the conduit reads
    /// its [`SccConfig`](crate::SccConfig) instead).
    pub fn from_env() -> CheckMode {
        Self::read(&rgex_core::config::Environment::capture())
    }

    /// `RGEX_SCC_CHECK` in `env`: unset, empty, `0`, `off` or `false` give
    /// [`Off`](CheckMode::Off); `strict` or `panic` give
    /// [`Strict`](CheckMode::Strict); anything else (`1`, `on`) gives
    /// [`Report`](CheckMode::Report).
    pub fn read(env: &rgex_core::config::Environment) -> CheckMode {
        match env.get(&rgex_core::config::vars::SCC_CHECK) {
            None => CheckMode::Off,
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "0" | "off" | "false" | "no" => CheckMode::Off,
                "strict" | "panic" => CheckMode::Strict,
                _ => CheckMode::Report,
            },
        }
    }
}

/// Where the bytes of a read came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The reader's own write-combine buffer.
    Wcb,
    /// The reader's L1.
    L1,
    /// The reader's L2.
    L2,
    /// Memory (uncached read or line fill).
    Memory,
}

/// The operation whose absence made a read stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// `rank` read its cached MPBT line without `invalidate_mpbt()` after
    /// the acquire.
    Invalidate {
        /// The reader.
        rank: u32,
    },
    /// `rank` read its cached copy of a write-back line; only `flush()`
    /// discards those.
    ReaderFlush {
        /// The reader.
        rank: u32,
    },
    /// `rank`'s store was still in its write-combine buffer (no `drain()`
    /// before its release).
    Drain {
        /// The writer.
        rank: u32,
    },
    /// `rank`'s store was still in its write-back cache (no `flush()` before
    /// its release).
    Flush {
        /// The writer.
        rank: u32,
    },
    /// The store reached memory but a whole-line write-back by core `by`
    /// later overwrote it with older bytes.
    LostUpdate {
        /// The core whose write-back destroyed the update.
        by: u32,
    },
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Missing::Invalidate { rank } => {
                write!(f, "missing invalidate_mpbt on rank {rank} before the read")
            }
            Missing::ReaderFlush { rank } => write!(
                f,
                "missing flush on rank {rank} (its cached write-back copy is old) before the read"
            ),
            Missing::Drain { rank } => {
                write!(f, "missing drain of rank {rank}'s write-combine buffer")
            }
            Missing::Flush { rank } => {
                write!(f, "missing flush of rank {rank}'s write-back cache")
            }
            Missing::LostUpdate { by } => write!(
                f,
                "lost update: a whole-line write-back by rank {by} overwrote the store with older bytes"
            ),
        }
    }
}

/// One stale read (a run of consecutive stale bytes of one access with the
/// same cause).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleRead {
    /// The reader.
    pub rank: u32,
    /// First stale byte.
    pub addr: Addr,
    /// Number of stale bytes in the run.
    pub len: usize,
    /// Where the stale bytes came from.
    pub source: Source,
    /// Id of the (old) data returned.
    pub got: u64,
    /// Id of the newest store, synchronised with the reader.
    pub store: u64,
    /// Who issued that store.
    pub writer: u32,
    /// The operation that was missing.
    pub missing: Missing,
}

impl fmt::Display for StaleRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stale read: rank {} read {} byte(s) at {} from {:?} holding store #{}, but store #{} by rank {} is synchronised with it: {}",
            self.rank, self.len, self.addr, self.source, self.got, self.store, self.writer, self.missing
        )
    }
}

/// Pack a `newest` shadow word.
#[inline]
pub(crate) fn pack_newest(seq: u64, core: u32) -> u64 {
    (seq << 8) | core as u64
}

/// Unpack a `newest` word into (seq, core).
#[inline]
pub(crate) fn unpack_newest(w: u64) -> (u64, u32) {
    (w >> 8, (w & 0xff) as u32)
}

/// Pack a `mem` shadow word: data id, whether the write that put it there
/// replaced newer data (a clobber), and the core that wrote memory.
#[inline]
pub(crate) fn pack_mem(seq: u64, clobbered: bool, by: u32) -> u64 {
    (seq << 16) | ((clobbered as u64) << 8) | by as u64
}

/// Unpack a `mem` word into (seq, clobbered, by).
#[inline]
pub(crate) fn unpack_mem(w: u64) -> (u64, bool, u32) {
    (w >> 16, (w >> 8) & 1 == 1, (w & 0xff) as u32)
}

/// Word indices inside a slot.
const SLOT_KEY: usize = 0;
const SLOT_LOCK: usize = 1;
const SLOT_REL: usize = 2;
const SLOT_VC: usize = 8;

/// Bound on spinning for a slot lock: after this many yields the edge is
/// dropped (counted) rather than hanging on a dead process.
const SLOT_LOCK_YIELDS: u32 = 1 << 20;

/// The checker's view of the shared region.
pub(crate) struct Shadow<'a> {
    pub region: &'a Region,
    pub map: &'a RegionMap,
    pub sync_slots: usize,
}

/// A held slot lock; released on drop.
pub(crate) struct SlotGuard<'a> {
    slot: &'a [AtomicU64],
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        // Release: everything written in the slot under the lock is visible
        // to the next holder, who takes it with Acquire.
        self.slot[SLOT_LOCK].store(0, Ordering::Release);
    }
}

impl<'a> SlotGuard<'a> {
    /// The id of the last `write_release` store recorded in the slot.
    pub(crate) fn release_id(&self) -> u64 {
        // Relaxed: slot contents are protected by the slot lock.
        self.slot[SLOT_REL].load(Ordering::Relaxed)
    }

    /// Record a release: the clock `vc` replaces the slot's, with the id of
    /// the release store.
    pub(crate) fn set_release(&self, id: u64, vc: &[u64]) {
        self.slot[SLOT_REL].store(id, Ordering::Relaxed);
        for (i, &v) in vc.iter().enumerate() {
            // Relaxed: under the slot lock.
            self.slot[SLOT_VC + i].store(v, Ordering::Relaxed);
        }
    }

    /// Join `vc` into the slot's clock.
    pub(crate) fn join_in(&self, vc: &[u64]) {
        join_in(self.slot, vc);
    }

    /// Join the slot's clock into `vc`.
    pub(crate) fn join_out(&self, vc: &mut [u64]) {
        join_out(self.slot, vc);
    }
}

/// Join `vc` into the clock of `slot` (atomic per entry, so concurrent
/// joiners without a lock still only ever raise entries).
pub(crate) fn join_in(slot: &[AtomicU64], vc: &[u64]) {
    for (i, &v) in vc.iter().enumerate() {
        if v != 0 {
            // Relaxed: the entry is published by the release operation that
            // follows (slot unlock or lock-register store, both Release).
            slot[SLOT_VC + i].fetch_max(v, Ordering::Relaxed);
        }
    }
}

/// Join the clock of `slot` into `vc`.
pub(crate) fn join_out(slot: &[AtomicU64], vc: &mut [u64]) {
    for (i, e) in vc.iter_mut().enumerate() {
        // Relaxed: the acquire operation that precedes (slot lock or lock
        // register swap, both Acquire) made the entries visible.
        *e = (*e).max(slot[SLOT_VC + i].load(Ordering::Relaxed));
    }
}

impl<'a> Shadow<'a> {
    /// The `newest` word of chip byte `addr`.
    #[inline]
    pub(crate) fn newest(&self, addr: u64) -> &'a AtomicU64 {
        self.region.w(self.map.newest + addr as usize * 8)
    }

    /// The `mem` word of chip byte `addr`.
    #[inline]
    pub(crate) fn mem(&self, addr: u64) -> &'a AtomicU64 {
        self.region.w(self.map.memsh + addr as usize * 8)
    }

    /// A fresh store id. Relaxed: ids only need to be unique and increasing
    /// per core, which the single modification order of one atomic gives.
    pub(crate) fn next_seq(&self) -> u64 {
        self.region
            .w(super::chip::SEQ_OFF)
            .fetch_add(1, Ordering::Relaxed)
            + 1
    }

    /// Record that store `seq` by `core` was issued to `[addr, addr + len)`.
    pub(crate) fn issue(&self, addr: u64, len: usize, seq: u64, core: u32) {
        let v = pack_newest(seq, core);
        for x in addr..addr + len as u64 {
            // Relaxed: a reader that is synchronised with this store sees it
            // through the release/acquire chain that synchronises them; an
            // unsynchronised reader may see either value, both are fine.
            self.newest(x).fetch_max(v, Ordering::Relaxed);
        }
    }

    /// Record that `core` wrote bytes with ids `ids` to memory at `addr`
    /// (only the bytes selected by `mask`, bit i = byte i).
    pub(crate) fn wrote_memory(&self, addr: u64, ids: &[u64], mask: u32, core: u32) {
        for (i, &id) in ids.iter().enumerate() {
            if mask & (1 << i) == 0 {
                continue;
            }
            let w = self.mem(addr + i as u64);
            // Relaxed load/store: the shadow byte is published to readers by
            // the same release/acquire chains as the data (see `issue`).
            // Concurrent write-backs of one byte race here only in protocols
            // that are already racy; the report then names one of them.
            let (old, _, _) = unpack_mem(w.load(Ordering::Relaxed));
            w.store(pack_mem(id, id < old, core), Ordering::Relaxed);
        }
    }

    /// The ids of the data memory holds for `[addr, addr + out.len())`.
    pub(crate) fn mem_ids(&self, addr: u64, out: &mut [u64]) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = unpack_mem(self.mem(addr + i as u64).load(Ordering::Relaxed)).0;
        }
    }

    fn slot(&self, base: usize, idx: usize) -> &'a [AtomicU64] {
        let sw = self.map.slot_words;
        let first = base / 8 + idx * sw;
        &self.region.words()[first..first + sw]
    }

    /// The slot of lock register `i`.
    pub(crate) fn lock_slot(&self, i: u32) -> &'a [AtomicU64] {
        self.slot(self.map.lock_slots, i as usize)
    }

    /// The slot of atomic counter `i`.
    pub(crate) fn counter_slot(&self, i: u32) -> &'a [AtomicU64] {
        self.slot(self.map.counter_slots, i as usize)
    }

    fn probe(&self, key: u64) -> impl Iterator<Item = usize> {
        let n = self.sync_slots;
        let h = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % n;
        (0..n).map(move |i| (h + i) % n)
    }

    /// The sync slot of `key`, claiming a free one if needed (None: full).
    pub(crate) fn sync_slot_claim(&self, key: u64) -> Option<&'a [AtomicU64]> {
        for i in self.probe(key) {
            let s = self.slot(self.map.sync_slots, i);
            // Acquire/AcqRel: pairs the claim with later finders; the slot's
            // contents are protected by its lock, this only publishes the key.
            let k = s[SLOT_KEY].load(Ordering::Acquire);
            if k == key {
                return Some(s);
            }
            if k == 0 {
                match s[SLOT_KEY].compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return Some(s),
                    Err(k) if k == key => return Some(s),
                    Err(_) => continue,
                }
            }
        }
        None
    }

    /// The sync slot of `key` if one was claimed.
    pub(crate) fn sync_slot_find(&self, key: u64) -> Option<&'a [AtomicU64]> {
        for i in self.probe(key) {
            let s = self.slot(self.map.sync_slots, i);
            // Acquire: see `sync_slot_claim`.
            match s[SLOT_KEY].load(Ordering::Acquire) {
                0 => return None,
                k if k == key => return Some(s),
                _ => {}
            }
        }
        None
    }
}

/// Take the spin lock of `slot` (bounded; None if it cannot be had).
pub(crate) fn lock_slot(slot: &[AtomicU64]) -> Option<SlotGuard<'_>> {
    let mut i = 0u32;
    loop {
        // Acquire: makes the previous holder's slot writes visible.
        if slot[SLOT_LOCK]
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Some(SlotGuard { slot });
        }
        i += 1;
        if i < 64 {
            std::hint::spin_loop();
        } else if i < 64 + SLOT_LOCK_YIELDS {
            std::thread::yield_now();
        } else {
            return None;
        }
    }
}

/// Key of a flag address in the sync table (never 0).
pub(crate) fn flag_key(a: Addr) -> u64 {
    a.0 + 1
}

/// Key of an explicit channel in the sync table (never 0, never a flag key).
pub(crate) fn channel_key(ch: u64) -> u64 {
    ch | (1 << 63)
}

/// Per-core checker state (private to the core's process).
pub(crate) struct CoreCheck {
    /// Vector clock.
    pub vc: Vec<u64>,
    /// Report mode for this core's reads.
    pub mode: CheckMode,
    /// Reports, oldest first (capped at `MAX_REPORTS`).
    pub reports: Vec<StaleRead>,
}

/// Reports kept per core; further ones are only counted.
pub(crate) const MAX_REPORTS: usize = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing() {
        assert_eq!(unpack_newest(pack_newest(123_456, 47)), (123_456, 47));
        assert_eq!(unpack_mem(pack_mem(99, true, 3)), (99, true, 3));
        assert_eq!(unpack_mem(pack_mem(99, false, 0)), (99, false, 0));
        // Packing keeps seq order.
        assert!(pack_newest(5, 0) > pack_newest(4, 47));
        assert_ne!(flag_key(Addr(0)), 0);
        assert_ne!(channel_key(0), flag_key(Addr(0)));
    }

    #[test]
    fn display_names_the_missing_op() {
        let r = StaleRead {
            rank: 1,
            addr: Addr(0x40),
            len: 4,
            source: Source::L1,
            got: 0,
            store: 7,
            writer: 0,
            missing: Missing::Invalidate { rank: 1 },
        };
        let s = r.to_string();
        assert!(s.contains("rank 1") && s.contains("0x40") && s.contains("invalidate_mpbt"));
    }
}
