//! rgex-scc: the non-cache-coherent shared-memory conduit, modelled on the
//! Intel Single-Chip Cloud Computer (SCC), and the emulated non-coherent
//! memory it runs on.
//!
//! No SCC hardware exists here, so [`emu`] provides a faithful emulation:
//! per-rank private caches (L1, L2, write-combine buffer) over one shared
//! region standing for the chip's message-passing buffers and off-chip
//! memory, with the SCC's coherence operations (MPBT invalidate, flush,
//! drain), test-and-set registers, atomic counters, per-core event counters,
//! a cycle cost model and a stale-read checker. Every access the conduit
//! makes to shared memory goes through [`emu::Core`].

#![warn(missing_docs)]

pub mod emu;
