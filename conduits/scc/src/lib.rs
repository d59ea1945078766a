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
//!
//! The conduit ([`SccConduit`]) keeps coherence in software, tied to
//! synchronisation: a **release** drains the write-combine buffer before
//! the signal, an **acquire** invalidates the message-buffer-typed lines
//! (CL1INVMB) after observing it. Where everything lives is the [`address_plan`].
//!
//! - **Active messages**: per (sender, receiver, direction) a ring of
//!   `depth` slots. The sender writes header and payload into the slot (in
//!   shared DRAM, MPBT), drains, then stores the message's sequence number
//!   into the slot's flag in the receiver's MPB (uncached). The receiver
//!   polls its flags uncached, invalidates, copies the message out, and
//!   stores its consumed count into the sender's MPB (uncached), which the
//!   sender reads only when it runs out of slots. Replies have slots of
//!   their own, so a request handler can always reply. A Long's payload is
//!   written into the target's segment through the emulation and drained
//!   before the flag.
//! - **RMA** (native for every peer): a put is stores through the
//!   write-combine buffer into the peer's segment (shared DRAM, MPBT),
//!   drained before it completes; a get is loads through this core's L1.
//!   AM send is a release and AM receive an acquire, so the AM barrier is a
//!   release plus an acquire on every rank: what was put before a barrier
//!   is seen after it.
//! - **Epochs** ([`epoch`]): MPI-style post / start / complete / wait,
//!   trigger-only, with per-pair sequence numbers in the owners' MPBs.
//! - **Atomics**: offloaded for every type and op: under the owner's
//!   test-and-set register, invalidate, read, apply
//!   [`rmw`](rgex_core::atomic::rmw), write, drain, release.
//! - **Departures**: each rank records its process and a departure word
//!   in the chip ([`emu::RankPresence`], [`rgex_core::liveness`]), set
//!   when its conduit drops or its process exits. A claim, put, get or
//!   atomic to a rank that left fails with `PeerUnreachable` naming it; a
//!   full channel or an epoch wait on a peer also looks at its process
//!   (rate limited), so one that died is found too, before the timeout.
//! - **Checking**: `RGEX_SCC_CHECK=1` turns the stale-read checker on; a
//!   process that saw a stale read logs it (a `tracing` error, which
//!   `rgex::init`'s subscriber prints on stderr) and exits with status 1.

#![warn(missing_docs)]

pub mod address_plan;
mod conduit;
mod config;
pub mod emu;
pub mod epoch;
mod report;

pub use conduit::SccConduit;
pub use config::SccConfig;
