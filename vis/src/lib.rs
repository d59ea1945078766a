//! rgex-vis: vector, indexed and strided (VIS) transfers.
//!
//! - Metadata: [`Vector`] (lists of `(offset, len)` per side), [`Indexed`]
//!   (lists of offsets, one length per side), [`Strided`] (element size,
//!   counts, signed strides per side). The remote side is always an offset
//!   in the peer's segment; the local side a Rust slice plus offsets into it.
//! - [`stride_plan::optimize`]: the stride optimizer, a pure function from strided
//!   metadata to a loop nest (null-dimension removal, stride inversion,
//!   dimensional sort, folding).
//! - [`kernel`]: pack/unpack kernels specialised by element size.
//! - Mechanisms, chosen per operation ([`Mechanism`]): a direct copy for
//!   node-local peers (segment mapped), one RMA per chunk when chunks are
//!   large, an AM pipeline over negotiated-payload buffers when small.
//!   `RGEX_VIS=auto|direct|rma|am` (or [`VisBuilder::mechanism`]) forces one.
//!   [`VisBuilder::am_payload`] selects, for comparison, an FP-based AM
//!   pipeline ([`AmPayload::Fixed`]: packed into a client-side buffer and
//!   sent with a fixed-payload Medium, one more copy).
//!
//! Everything is validated before any byte moves; a bad transfer is an
//! error naming the rank, offset and limit, and nothing moves.
//!
//! Per-call cost: a node-local peer's transfer goes straight from the
//! caller's metadata to the copy ([`direct`](crate::Mechanism::Direct); no
//! [`Shape`] is built, and nothing is allocated below 64 dimensions of
//! count above 1).
//! Strided metadata is validated and optimized in one O(dims) scan, and
//! the result is kept in a small per-thread cache keyed by the metadata's
//! contents (element size, counts, strides; not the offsets), so a shape
//! used again costs a comparison of its arrays and O(1) bounds checks,
//! whatever its dimensionality; a shape described once as a
//! [`CompiledStrided`] and placed with [`CompiledStrided::at`] skips that
//! comparison too (a 256-byte node-local put: about 23 ns against 35-41
//! ns for the same shape as 3- to 32-d metadata). Indexed metadata is
//! bounds-checked with one vectorized max per side and copied by a loop
//! specialised by fragment length that coalesces fragments contiguous on
//! both sides.
//!
//! Large node-local strided copies (from [`SHARE_MIN`] bytes) are split
//! into 64 KiB blocks that the rank's other threads help copy while they
//! are blocked in a wait or a poll on the endpoint
//! ([`rgex_endpoint::Endpoint::share`]; [`VisBuilder::shared_copy`] turns it
//! off).
//!
//! A [`Vis`] is made from an endpoint (`Arc<Endpoint>`, the one a client
//! derefs to): the first one registers the AM handlers (reserved indices
//! 24..=27), so create it on every rank, then barrier, before transferring.
//!
//! ```no_run
//! # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
//! use rgex_core::{Flags, Rank};
//! use rgex_vis::{Strided, Vis};
//! let vis = Vis::new(client.endpoint())?;
//! client.barrier()?;
//! // Put a 4 x 4 block of u64 from a dense local array into an 8 x 8
//! // row-major array at offset 0 of rank 1's segment, transposed.
//! let src = vec![0u8; 4 * 4 * 8];
//! let s = Strided { elem_size: 8, counts: &[4, 4], peer_offset: 0,
//!                   peer_strides: &[64, 8], local_offset: 0, local_strides: &[8, 32] };
//! vis.put(Rank(1), s, &src, Flags::empty())?;
//! # Ok(()) }
//! ```

pub mod am;
mod builder;
mod cache;
mod compiled;
mod config;
mod direct;
mod engine;
mod handle;
mod helped_copy;
pub mod kernel;
mod mechanism;
mod meta;
mod native;
mod rma;
mod simd;
pub mod stride_plan;

pub use am::AmPayload;
pub use builder::VisBuilder;
pub use compiled::{CompiledStrided, StridedAt};
pub use config::VisConfig;
pub use handle::{VisGet, VisPut, VisPutDeferred};
pub use helped_copy::SHARE_MIN;
pub use mechanism::{Mechanism, RMA_MIN_CHUNK};
pub use meta::{validate, Indexed, Meta, Run, Shape, Strided, Vector};

use crate::direct::Local;
use crate::engine::Track;
use rgex_core::{Event, Flags, Rank, Result};
use rgex_endpoint::rma::{LocalCompletion, NbiCategory};
use rgex_endpoint::Endpoint;
use std::sync::Arc;

/// VIS transfers over one endpoint. `Send + Sync`; share it by reference.
pub struct Vis {
    ep: Arc<Endpoint>,
    proto: Arc<am::Proto>,
    mechanism: Mechanism,
    am_payload: AmPayload,
    /// Large direct copies are shared with the rank's waiting threads.
    shared_copy: bool,
}

impl std::fmt::Debug for Vis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vis")
            .field("rank", &self.ep.rank())
            .field("mechanism", &self.mechanism)
            .field("am_payload", &self.am_payload)
            .field("shared_copy", &self.shared_copy)
            .finish()
    }
}

/// Register the VIS AM protocol's handlers (reserved indices 24..=27) on
/// `ep`, once, and keep `config` with it for every [`Vis`] made there (the
/// first call's, if called again). `rgex::init` calls it before its
/// closing barrier, so that a VIS transfer never reaches a rank that has
/// not yet made a [`Vis`] (its message would find no handler there). An
/// endpoint made another way must have it called on every rank before any
/// rank's first transfer (without it, a [`Vis`] takes
/// [`VisConfig::default`]).
///
/// ```no_run
/// # fn demo(ep: &std::sync::Arc<rgex_endpoint::Endpoint>) -> rgex_core::Result<()> {
/// rgex_vis::install(ep, rgex_vis::VisConfig::default())?; // on every rank, then a barrier
/// # Ok(()) }
/// ```
pub fn install(ep: &Arc<Endpoint>, config: VisConfig) -> Result<()> {
    ep.extension::<VisConfig, rgex_core::Error>(|_| Ok(Arc::new(config)))?;
    am::Proto::for_endpoint(ep).map(drop)
}

impl Vis {
    /// A VIS context with the mechanism of the endpoint's [`VisConfig`]
    /// (`RGEX_VIS` as `rgex::init` read it; default auto).
    /// Not collective: the protocol's handlers are already registered on
    /// every rank (see [`install`]).
    pub fn new(ep: &Arc<Endpoint>) -> Result<Vis> {
        VisBuilder::default().build(ep)
    }

    /// Options.
    pub fn builder() -> VisBuilder {
        VisBuilder::default()
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.ep
    }

    /// The configured mechanism.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// How the AM pipeline's requests carry their payload.
    pub fn am_payload(&self) -> AmPayload {
        self.am_payload
    }

    /// Whether large direct copies are shared with waiting threads (see
    /// [`VisBuilder::shared_copy`]).
    pub fn shared_copy(&self) -> bool {
        self.shared_copy
    }

    /// Where direct copies may be shared.
    #[inline(always)]
    pub(crate) fn share(&self) -> direct::Share<'_> {
        self.shared_copy.then_some(&*self.ep)
    }

    /// The mechanism a transfer of `shape` with `peer` takes.
    pub fn mechanism_for(&self, peer: Rank, shape: &Shape) -> Mechanism {
        let mapped = self.ep.locality().mapped_segment(peer).is_some();
        match self.mechanism {
            Mechanism::Auto if mapped => Mechanism::Direct,
            Mechanism::Auto if self.ep.conduit().vis_native(peer) => Mechanism::Native,
            Mechanism::Auto => {
                let chunks = shape.chunks().max(1);
                if shape.bytes() / chunks >= RMA_MIN_CHUNK {
                    Mechanism::Rma
                } else {
                    Mechanism::Am
                }
            }
            m => m,
        }
    }

    /// Validate `meta` against `peer`'s segment and a local buffer of
    /// `local_len` bytes; the compiled shape (for inspection).
    pub fn shape(&self, peer: Rank, meta: &Meta<'_>, local_len: usize) -> Result<Shape> {
        meta::check_rank(peer, self.ep.size())?;
        validate(meta, peer, self.ep.conduit().segment_len(peer), local_len)
    }

    // ---- puts ----

    /// Blocking put: returns when every byte is in the peer's segment.
    #[inline]
    pub fn put<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        src: &[u8],
        flags: Flags,
    ) -> Result<()> {
        self.put_nb(peer, meta, src, flags)?.rc.wait()
    }

    /// Non-blocking put; `src` may be reused when this returns (its local
    /// completion event, `lc`, has fired).
    #[inline]
    pub fn put_nb<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        src: &[u8],
        flags: Flags,
    ) -> Result<VisPut> {
        let local = Local::Src(src.as_ptr());
        // SAFETY: `src` is borrowed for the call and every mechanism reads
        // it during injection.
        let rc = unsafe { self.with_event(peer, &meta.into(), local, src.len(), flags)? };
        Ok(VisPut {
            lc: Event::done(),
            rc,
        })
    }

    /// Non-blocking put that takes the source buffer and hands it back at
    /// local completion, which may come after return: over the RMA
    /// mechanism the chunks' puts may still be reading the buffer then, so
    /// the caller can overlap that with other work instead of waiting for
    /// it in the call (as [`put_nb`](Self::put_nb) does). On an error the
    /// buffer is dropped (after any chunk already started is done with it).
    ///
    /// ```no_run
    /// # fn demo(vis: &rgex_vis::Vis) -> rgex_core::Result<()> {
    /// use rgex_core::{Flags, Rank};
    /// use rgex_vis::Vector;
    /// let frags = [(0u64, 1u64 << 16), (1 << 20, 1 << 16)];
    /// let meta = Vector { peer: &frags, local: &[(0, 2 << 16)] };
    /// let put = vis.put_nb_defer(Rank(1), meta, vec![7u8; 2 << 16], Flags::empty())?;
    /// let mut buf = put.lc.wait()?; // the source may be reused now...
    /// buf.fill(0);
    /// put.rc.wait()?; // ...and every byte has arrived
    /// # Ok(()) }
    /// ```
    pub fn put_nb_defer<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        src: Vec<u8>,
        flags: Flags,
    ) -> Result<VisPutDeferred> {
        let meta = meta.into();
        let local = Local::Src(src.as_ptr());
        // SAFETY: the Vec moves into the returned LocalCompletion, which
        // keeps it alive and unmodified until `lc` fires (a Vec's storage
        // does not move with it); every mechanism reads the source only
        // until then.
        let (lc, rc) = unsafe {
            match self.direct_target(peer) {
                Some(seg) => self
                    .direct(peer, seg, &meta, local, src.len())
                    .map(|()| (Event::done(), Event::done()))?,
                None => {
                    let shape = self.shape(peer, &meta, src.len())?;
                    if self.mechanism_for(peer, &shape) == Mechanism::Rma {
                        self.rma_deferred(peer, &shape, local, flags)?
                    } else {
                        (
                            Event::done(),
                            self.start(peer, &shape, local, Track::Event, flags)?,
                        )
                    }
                }
            }
        };
        Ok(VisPutDeferred {
            lc: LocalCompletion::new(src, lc),
            rc,
        })
    }

    /// Implicit-handle put: `src` may be reused on return; completion joins
    /// this thread's put category (or its open access region).
    #[inline]
    pub fn put_nbi<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        src: &[u8],
        flags: Flags,
    ) -> Result<()> {
        let local = Local::Src(src.as_ptr());
        // SAFETY: as in `put_nb`.
        unsafe {
            self.nbi(
                peer,
                &meta.into(),
                local,
                src.len(),
                NbiCategory::Put,
                flags,
            )
        }
    }

    // ---- gets ----

    /// Blocking get into `dst`.
    #[inline]
    pub fn get<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        dst: &mut [u8],
        flags: Flags,
    ) -> Result<()> {
        let local = Local::Dst(dst.as_mut_ptr());
        // SAFETY: `dst` is borrowed mutably for the whole call, which waits
        // for completion.
        let ev = unsafe { self.with_event(peer, &meta.into(), local, dst.len(), flags)? };
        ev.wait()
    }

    /// Non-blocking get into an owned buffer, handed back when complete.
    #[inline]
    pub fn get_nb<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        mut dst: Vec<u8>,
        flags: Flags,
    ) -> Result<VisGet> {
        let local = Local::Dst(dst.as_mut_ptr());
        // SAFETY: the Vec moves into the VisGet, which keeps it alive and
        // out of reach until the event fires (a Vec's storage does not move
        // with it).
        let ev = unsafe { self.with_event(peer, &meta.into(), local, dst.len(), flags)? };
        Ok(VisGet {
            buf: Some(dst),
            event: Some(ev),
        })
    }

    /// Implicit-handle get into `dst..dst+len`; completion joins this
    /// thread's get category (or its open access region).
    ///
    /// # Safety
    /// `dst..dst+len` must be valid for writes and untouched until that sync.
    #[inline]
    pub unsafe fn get_nbi<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        dst: *mut u8,
        len: usize,
        flags: Flags,
    ) -> Result<()> {
        let local = Local::Dst(dst);
        // SAFETY: forwarded caller contract.
        unsafe { self.nbi(peer, &meta.into(), local, len, NbiCategory::Get, flags) }
    }

    // ---- named forms ----

    /// Blocking strided put.
    pub fn put_strided(&self, peer: Rank, s: Strided<'_>, src: &[u8], flags: Flags) -> Result<()> {
        self.put(peer, s, src, flags)
    }

    /// Blocking strided get.
    pub fn get_strided(
        &self,
        peer: Rank,
        s: Strided<'_>,
        dst: &mut [u8],
        flags: Flags,
    ) -> Result<()> {
        self.get(peer, s, dst, flags)
    }

    /// Blocking vector put.
    pub fn put_vector(&self, peer: Rank, v: Vector<'_>, src: &[u8], flags: Flags) -> Result<()> {
        self.put(peer, v, src, flags)
    }

    /// Blocking vector get.
    pub fn get_vector(
        &self,
        peer: Rank,
        v: Vector<'_>,
        dst: &mut [u8],
        flags: Flags,
    ) -> Result<()> {
        self.get(peer, v, dst, flags)
    }

    /// Blocking indexed put.
    pub fn put_indexed(&self, peer: Rank, x: Indexed<'_>, src: &[u8], flags: Flags) -> Result<()> {
        self.put(peer, x, src, flags)
    }

    /// Blocking indexed get.
    pub fn get_indexed(
        &self,
        peer: Rank,
        x: Indexed<'_>,
        dst: &mut [u8],
        flags: Flags,
    ) -> Result<()> {
        self.get(peer, x, dst, flags)
    }
}
