//! An emulation of the Intel Single-Chip Cloud Computer's non-coherent
//! memory, for the scc conduit and its tests.
//!
//! # The model
//!
//! 48 cores on 24 tiles (a 6 x 4 mesh), **no cache coherence**. Each rank is
//! one [`Core`]: its L1, L2 and write-combine buffer (WCB) are *private*
//! state of that handle (in the rank's process); the chip's memories live in
//! one shared region ([`Chip`]): a named POSIX shared-memory object for
//! several processes ([`Chip::create`] / [`Chip::open`]) or an anonymous
//! mapping for several `Core`s in one process ([`Chip::in_process`]), which
//! lets a test drive two cores step by step, deterministically.
//!
//! - **Memory map** ([`Layout`]): per tile a 16 KiB message-passing buffer
//!   (MPB; 8 KiB per core by convention, [`Layout::mpb`]), and a configurable
//!   shared off-chip DRAM ([`Layout::shared`]) where segments live. One
//!   memory type per 4 KiB page ([`MemType`]):
//!   - *Uncached*: every access is one memory transaction, in program order;
//!   - *MPBT* (message-buffer type): L1 only (bypasses L2), write-through via
//!     the WCB; the lines [`Core::invalidate_mpbt`] discards;
//!   - *write-back*: L1 + L2, write-back.
//! - **Caches** ([`Geometry`]): 32-byte lines; reads allocate (a miss fills
//!   the whole line), writes do not (a write miss goes to memory: via the WCB
//!   for MPBT, directly for write-back pages); a write hit updates the line
//!   (MPBT: and goes on through the WCB; write-back: marks it dirty). Dirty
//!   lines are written back *whole* on eviction (L1 victims into L2, L2
//!   victims to memory) and on [`Core::flush`], so two cores writing
//!   different bytes of one write-back line lose an update, as on the chip.
//!   Default geometry: the SCC's (L1 16 KiB 4-way, L2 256 KiB 4-way, LRU);
//!   configurable ([`CoreConfig`]) so tests can force evictions.
//! - **WCB** (one line deep): merges consecutive MPBT stores to one line;
//!   drains when a store to another line arrives or on [`Core::drain`].
//!   The owning core's reads see its contents (store-to-load forwarding: a
//!   core observes its own program order; reasoning in `wcb.rs`); other
//!   cores do not.
//! - **Coherence operations**: [`Core::invalidate_mpbt`] (CL1INVMB: discard
//!   MPBT lines, no write-back), [`Core::flush`] (WBINVD-like: write back all
//!   dirty lines of L1 and L2, invalidate everything; not the WCB),
//!   [`Core::drain`].
//! - **Synchronisation hardware**: a test-and-set register per core
//!   ([`LockId`]; [`Core::tas_try`] is the read: `true` = acquired, the SCC
//!   register read 1; [`Core::tas_release`] is the write that frees it) and
//!   atomic increment counters ([`CounterId`]); real atomics in the region.
//! - **Counters and cost** ([`Counters`], [`CostTable`]): every modelled event
//!   is counted per core, and charged modelled core cycles
//!   ([`Core::cycles`]); nothing depends on wall-clock time. Snapshot
//!   [`Core::counters`] before and after a protocol step and subtract.
//! - **Checker** (the [`check`] module docs define synchronised and stale): with a shadow in the region (`Layout::builder(..).check(true)`
//!   or `RGEX_SCC_CHECK=1`/`strict`), every read returning data older than
//!   the newest store synchronised with the reader is reported
//!   ([`Core::stale_reads`]) with the rank, the address and the missing
//!   operation ([`Missing`]: invalidate, drain, flush, or a lost update).
//!   Releases: [`Core::write_release`], [`Core::tas_release`], atomic counter
//!   operations, [`Core::release`]; acquires: [`Core::read_acquire`],
//!   [`Core::tas_try`], atomic counter operations, [`Core::acquire`].
//!
//! # Faithful, and simplified
//!
//! Faithful: line size, no write-allocate, write-through MPBT with a
//! one-line WCB that only a store to another line (or the explicit drain)
//! empties, MPBT bypassing L2, whole-line write-back, CL1INVMB touching only
//! MPBT lines, test-and-set semantics (read acquires, any write releases,
//! a second read fails even for the holder), mesh distances in the cost.
//!
//! Simplified: one chip-wide page-type table (the chip has per-core page
//! tables); no private per-core DRAM (a rank's private data is ordinary
//! process memory); true LRU instead of the P54C's pseudo-LRU; the WCB does
//! not drain by itself when full; the shared DRAM sits behind the controllers
//! by 16 MiB windows starting at controller 0; no contention or queueing in
//! the cost (each transaction costs its unloaded latency); atomic counters
//! are inc / read / set only; ordering of the emulated memory between
//! processes is release/acquire per word (see the `region` source docs),
//! which gives message passing but not store-buffer sequential consistency
//! (the P54C's write buffers do not give that either).
//!
//! # Cost table (core cycles)
//!
//! | event | cycles |
//! |---|---|
//! | L1 hit | 1 per 4-byte word |
//! | L2 hit | 18 per line |
//! | WCB store | 1 per line touched |
//! | MPB transaction | 18 + 5 per mesh hop |
//! | DRAM transaction | 101 + 5 per hop to its memory controller |
//! | lock register | 18 + 5 per hop to the owner's tile |
//! | atomic counter | 200 + 5 per hop to the system interface |
//! | `invalidate_mpbt` | 4 |
//! | `flush` | 1 per line slot (L1 + L2) + one memory write per dirty line |
//!
//! Sources and reasoning are in `cost.rs` (see also [`CostTable`]).
//! Uncached accesses and write-back write misses are one transaction per
//! 4-byte word; fills, drains and write-backs one per line.
//!
//! # Example
//!
//! A producer (core 0) hands 8 bytes to a consumer (core 1) through core 1's
//! MPB with an uncached flag; forgetting the consumer's invalidate is caught.
//!
//! ```
//! use rgex_scc::emu::{CheckMode, Chip, CoreConfig, Layout, MemType, Missing};
//!
//! let layout = Layout::builder(2)
//!     .shared_bytes(4096)
//!     .shared_type(MemType::Uncached) // the flag page
//!     .check(true)
//!     .build()?;
//! let chip = Chip::in_process(layout)?;
//! // Report stale reads (rather than follow RGEX_SCC_CHECK, which may say "strict").
//! let cfg = CoreConfig::default().check(CheckMode::Report);
//! let (mut a, mut b) = (chip.core_with(0, cfg)?, chip.core_with(1, cfg)?);
//! let data = chip.layout().mpb(1);
//! let flag = chip.layout().shared(0);
//!
//! assert_eq!(b.read_u64(data)?, 0); // B caches the (empty) MPBT line
//!
//! a.write_u64(data, 42)?; // into A's write-combine buffer
//! a.drain(); // now in the MPB
//! a.write_u32_release(flag, 1)?;
//!
//! assert_eq!(b.read_u32_acquire(flag)?, 1);
//! assert_eq!(b.read_u64(data)?, 0); // stale: B's L1 still holds the old line
//! assert_eq!(
//!     b.stale_reads()[0].missing,
//!     Missing::Invalidate { rank: 1 }
//! );
//!
//! b.invalidate_mpbt();
//! assert_eq!(b.read_u64(data)?, 42); // fresh
//! assert_eq!(b.stale_reads().len(), 1);
//! assert!(b.cycles() > 0);
//! # Ok::<(), rgex_core::Error>(())
//! ```

mod cache;
pub mod check;
mod chip;
mod core;
mod cost;
mod counters;
mod layout;
mod line;
mod lock;
mod page;
mod presence;
mod region;
mod wcb;

pub use self::cache::Geometry;
pub use self::check::{CheckMode, Missing, Source, StaleRead};
pub use self::chip::{Chip, CoreConfig, DEFAULT_OPEN_TIMEOUT};
pub use self::core::Core;
pub use self::cost::CostTable;
pub use self::counters::Counters;
pub use self::layout::{
    hops, tile_of, tile_xy, Addr, CounterId, Layout, LayoutBuilder, LockId, Place, CORES_PER_TILE,
    MAX_CORES, MC_WINDOW, MC_XY, MESH_X, MESH_Y, MPB_PER_CORE, MPB_PER_TILE, SIF_XY, TILES,
};
pub use self::line::LINE;
pub use self::page::{MemType, PAGE};
pub use self::presence::{leave_word, RankPresence};
