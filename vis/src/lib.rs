//! rgex-vis: vector, indexed and strided (VIS) transfers.
//!
//! - Metadata: [`Vector`] (lists of `(offset, len)` per side), [`Indexed`]
//!   (lists of offsets, one length per side), [`Strided`] (element size,
//!   counts, signed strides per side). The remote side is always an offset
//!   in the peer's segment; the local side a Rust slice plus offsets into it.
//! - [`plan::optimize`]: the stride optimizer, a pure function from strided
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
//! ([`rgex_am::Endpoint::share`]; [`VisBuilder::shared_copy`] turns it
//! off).
//!
//! A [`Vis`] is made from an endpoint (`Arc<Endpoint>`, the one a client
//! derefs to): the first one registers the AM handlers (reserved indices
//! 24..=27), so create it on every rank, then barrier, before transferring.
//!
//! ```no_run
//! # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
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
mod cache;
mod compiled;
mod direct;
pub mod kernel;
mod meta;
pub mod plan;
mod shared;
mod simd;

pub use am::AmPayload;
pub use compiled::{CompiledStrided, StridedAt};
pub use meta::{validate, Indexed, Meta, Run, Shape, Strided, Vector};
pub use shared::SHARE_MIN;

use crate::direct::Local;
use rgex_am::rma::{LocalCompletion, NbiCategory};
use rgex_am::Endpoint;
use rgex_core::{Completion, Error, Event, Flags, GlobalAddr, Rank, Result};
use std::sync::Arc;

/// How a transfer is carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Per operation: direct for mapped peers, else RMA per chunk when
    /// chunks are at least [`RMA_MIN_CHUNK`] bytes on average, else AM.
    Auto,
    /// Copies straight between the local buffer and the peer's mapped
    /// segment, one loop nest (node-local peers only).
    Direct,
    /// One RMA operation per contiguous chunk, all in flight at once.
    Rma,
    /// Packed into negotiated-payload Medium AMs, unpacked by a handler.
    Am,
}

impl Mechanism {
    /// Parse `auto|direct|rma|am`.
    pub fn parse(s: &str) -> Result<Mechanism> {
        match s {
            "" | "auto" => Ok(Mechanism::Auto),
            "direct" => Ok(Mechanism::Direct),
            "rma" => Ok(Mechanism::Rma),
            "am" => Ok(Mechanism::Am),
            other => Err(Error::Config(format!(
                "RGEX_VIS={other:?}: expected \"auto\", \"direct\", \"rma\" or \"am\""
            ))),
        }
    }
}

/// Average chunk size from which `Auto` prefers RMA to the AM pipeline for
/// a peer whose segment is not mapped.
pub const RMA_MIN_CHUNK: u64 = 2048;

/// Options of a [`Vis`].
#[derive(Clone, Debug, Default)]
pub struct VisBuilder {
    mechanism: Option<Mechanism>,
    am_payload: AmPayload,
    /// `Some(false)`: never share direct copies.
    shared_copy: Option<bool>,
}

impl VisBuilder {
    /// Force a mechanism (else `RGEX_VIS`, else `Auto`).
    pub fn mechanism(mut self, m: Mechanism) -> Self {
        self.mechanism = Some(m);
        self
    }

    /// How the AM pipeline's requests carry their payload (default
    /// [`AmPayload::Negotiated`]; [`AmPayload::Fixed`] is for comparison).
    pub fn am_payload(mut self, p: AmPayload) -> Self {
        self.am_payload = p;
        self
    }

    /// Whether large node-local strided copies (from [`SHARE_MIN`] bytes)
    /// are split into blocks that this rank's threads blocked in a wait or
    /// a poll on the endpoint help copy ([`Endpoint::share`]; default on).
    /// Off, every copy runs on the calling thread alone.
    ///
    /// ```no_run
    /// # fn demo(ep: &std::sync::Arc<rgex_am::Endpoint>) -> rgex_core::Result<()> {
    /// let alone = rgex_vis::Vis::builder().shared_copy(false).build(ep)?;
    /// assert!(!alone.shared_copy());
    /// # Ok(()) }
    /// ```
    pub fn shared_copy(mut self, on: bool) -> Self {
        self.shared_copy = Some(on);
        self
    }

    /// Make the VIS context (registers the handlers on first use).
    pub fn build(self, ep: &Arc<Endpoint>) -> Result<Vis> {
        let mechanism = match self.mechanism {
            Some(m) => m,
            None => Mechanism::parse(std::env::var("RGEX_VIS").unwrap_or_default().as_str())?,
        };
        Ok(Vis {
            ep: ep.clone(),
            proto: am::Proto::for_endpoint(ep)?,
            mechanism,
            am_payload: self.am_payload,
            mapped: MappedPeers::of(ep),
            shared_copy: self.shared_copy.unwrap_or(true),
        })
    }
}

/// The events of a non-blocking VIS put.
#[derive(Debug)]
#[must_use = "the put's completion must be waited on"]
pub struct VisPut {
    /// Local completion: the source may be reused. The source is borrowed
    /// for the call only, so this has fired (see
    /// [`Vis::put_nb_defer`] for a local completion after return).
    pub lc: Event,
    /// Remote completion: every byte is in the peer's segment.
    pub rc: Event,
}

/// A non-blocking VIS put whose local completion may come after return
/// ([`Vis::put_nb_defer`]): the source buffer is held by `lc` until no
/// mechanism reads it any more.
#[derive(Debug)]
#[must_use = "the put's completion must be waited on"]
pub struct VisPutDeferred {
    /// Local completion: hands the source buffer back once it may be
    /// reused. Later than return only with the RMA mechanism over a
    /// network (one put per chunk, all reading the buffer in flight); the
    /// direct copy and the AM pipeline are done with the source when the
    /// call returns.
    pub lc: LocalCompletion<Vec<u8>>,
    /// Remote completion: every byte is in the peer's segment.
    pub rc: Event,
}

/// A non-blocking VIS get: holds the destination until the data is in.
/// Dropping it waits.
#[derive(Debug)]
#[must_use = "the get must be waited on to get the buffer back"]
pub struct VisGet {
    buf: Option<Vec<u8>>,
    event: Option<Event>,
}

impl VisGet {
    /// True if the data has arrived. Does not poll.
    pub fn test(&self) -> bool {
        self.event.as_ref().is_none_or(Event::test)
    }

    /// Poll until the data has arrived; hand the buffer back.
    pub fn wait(mut self) -> Vec<u8> {
        if let Some(e) = self.event.take() {
            e.wait();
        }
        self.buf.take().expect("buffer present until wait")
    }
}

impl Drop for VisGet {
    fn drop(&mut self) {
        if let Some(e) = self.event.take() {
            e.wait();
        }
    }
}

/// Where one transfer's completion is counted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Track {
    /// A fresh event.
    Event,
    /// This thread's implicit category (or open access region).
    Nbi(NbiCategory),
}

/// VIS transfers over one endpoint. `Send + Sync`; share it by reference.
pub struct Vis {
    ep: Arc<Endpoint>,
    proto: Arc<am::Proto>,
    mechanism: Mechanism,
    am_payload: AmPayload,
    /// The mapped segments of node-local peers, looked up once when the
    /// context is made (a segment's mapping and length are fixed at setup),
    /// so the direct path asks the conduit nothing per call.
    mapped: MappedPeers,
    /// Large direct copies are shared with the rank's waiting threads.
    shared_copy: bool,
}

/// Node-local peers' mapped segments, indexed by rank from `lo` (the span
/// of ranks that have one; usually a node's ranks are contiguous).
struct MappedPeers {
    lo: u32,
    segs: Box<[Option<(*mut u8, u64)>]>,
}

// SAFETY: the pointers name segments mapped in this process for the life
// of the endpoint (which the `Vis` keeps alive); they are only used for
// raw copies, as `Segment`s are (which are `Send + Sync` on the same
// grounds).
unsafe impl Send for MappedPeers {}
// SAFETY: as above; the table is read-only after construction.
unsafe impl Sync for MappedPeers {}

impl MappedPeers {
    fn of(ep: &Endpoint) -> MappedPeers {
        let c = ep.conduit();
        let local: Vec<(u32, *mut u8, u64)> = (0..ep.size())
            .filter_map(|r| {
                let seg = c.mapped_segment(Rank(r))?;
                let len = c.segment_len(Rank(r)).min(seg.len() as u64);
                Some((r, seg.as_ptr(), len))
            })
            .collect();
        let (Some(&(lo, ..)), Some(&(hi, ..))) = (local.first(), local.last()) else {
            return MappedPeers {
                lo: 0,
                segs: Box::new([]),
            };
        };
        let mut segs = vec![None; (hi - lo) as usize + 1];
        for (r, p, len) in local {
            segs[(r - lo) as usize] = Some((p, len));
        }
        MappedPeers {
            lo,
            segs: segs.into_boxed_slice(),
        }
    }

    /// `peer`'s mapped segment (base, length), if it has one.
    #[inline(always)]
    fn get(&self, peer: Rank) -> Option<(*mut u8, u64)> {
        *self.segs.get(peer.0.wrapping_sub(self.lo) as usize)?
    }
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
/// `ep`, once. `rgex::init` calls it before its closing barrier, so that a
/// VIS transfer never reaches a rank that has not yet made a [`Vis`] (its
/// message would find no handler there). An endpoint made another way
/// must have it called on every rank before any rank's first transfer.
///
/// ```no_run
/// # fn demo(ep: &std::sync::Arc<rgex_am::Endpoint>) -> rgex_core::Result<()> {
/// rgex_vis::install(ep)?; // on every rank, then a barrier
/// # Ok(()) }
/// ```
pub fn install(ep: &Arc<Endpoint>) -> Result<()> {
    am::Proto::for_endpoint(ep).map(drop)
}

impl Vis {
    /// A VIS context with the mechanism `RGEX_VIS` names (default auto).
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
    fn share(&self) -> direct::Share<'_> {
        self.shared_copy.then_some(&*self.ep)
    }

    /// The mechanism a transfer of `shape` with `peer` takes.
    pub fn mechanism_for(&self, peer: Rank, shape: &Shape) -> Mechanism {
        let mapped = self.ep.conduit().mapped_segment(peer).is_some();
        match self.mechanism {
            Mechanism::Auto if mapped => Mechanism::Direct,
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
        self.put_nb(peer, meta, src, flags)?.rc.wait();
        Ok(())
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
    /// let mut buf = put.lc.wait(); // the source may be reused now...
    /// buf.fill(0);
    /// put.rc.wait(); // ...and every byte has arrived
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
        ev.wait();
        Ok(())
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

    // ---- the engine ----

    fn event(&self, c: Arc<Completion>) -> Event {
        // A failed transfer keeps its counter so `wait_checked` sees why.
        if c.peek_done() && c.failure().is_none() {
            Event::done()
        } else {
            Event::pending(c, self.ep.clone())
        }
    }

    /// `peer`'s mapped segment (base, length) when the direct path serves
    /// it: `peer` is node-local (segment mapped) and the mechanism is
    /// `Auto` or `Direct`; `None` sends the transfer down the general path.
    #[inline(always)]
    fn direct_target(&self, peer: Rank) -> Option<(*mut u8, u64)> {
        if !matches!(self.mechanism, Mechanism::Auto | Mechanism::Direct) {
            return None;
        }
        self.mapped.get(peer)
    }

    /// The direct path into `peer`'s mapped segment `(base, seg_len)`
    /// from [`direct_target`](Self::direct_target): validate and copy
    /// straight from the metadata (no shape is built). Callers return its
    /// `Result` as it is where they can, so that it is written once, in
    /// their caller's slot (an `Option` around it made every transfer copy
    /// the whole `Result` on the way out).
    ///
    /// # Safety
    /// The local pointer must be valid for `local_len` bytes (readable for
    /// a put, writable for a get) for the call.
    #[inline(always)]
    unsafe fn direct(
        &self,
        peer: Rank,
        (base, seg_len): (*mut u8, u64),
        meta: &Meta<'_>,
        local: Local,
        local_len: usize,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract (the local side); the segment
        // is mapped for `seg_len` bytes; `direct::transfer` validates both
        // sides before copying.
        unsafe { direct::transfer(meta, peer, base, seg_len, local, local_len, self.share()) }
    }

    /// An implicit-handle transfer.
    ///
    /// # Safety
    /// As [`start`](Self::start), for a local buffer of `local_len` bytes.
    #[inline(never)]
    unsafe fn nbi(
        &self,
        peer: Rank,
        meta: &Meta<'_>,
        local: Local,
        local_len: usize,
        cat: NbiCategory,
        flags: Flags,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe {
            if let Some(seg) = self.direct_target(peer) {
                return self.direct(peer, seg, meta, local, local_len);
            }
            self.transfer(peer, meta, local, local_len, Track::Nbi(cat), flags)
                .map(drop)
        }
    }

    /// A transfer completed through a fresh event.
    ///
    /// # Safety
    /// As [`start`](Self::start), for a local buffer of `local_len` bytes.
    #[inline(never)]
    unsafe fn with_event(
        &self,
        peer: Rank,
        meta: &Meta<'_>,
        local: Local,
        local_len: usize,
        flags: Flags,
    ) -> Result<Event> {
        // SAFETY: forwarded caller contract.
        unsafe {
            if let Some(seg) = self.direct_target(peer) {
                return self
                    .direct(peer, seg, meta, local, local_len)
                    .map(|()| Event::done());
            }
            self.transfer(peer, meta, local, local_len, Track::Event, flags)
        }
    }

    /// Validate and carry out a transfer by any mechanism but the direct
    /// path: compile the metadata into a [`Shape`] for
    /// [`start`](Self::start).
    ///
    /// # Safety
    /// As [`start`](Self::start), for a local buffer of `local_len` bytes.
    unsafe fn transfer(
        &self,
        peer: Rank,
        meta: &Meta<'_>,
        local: Local,
        local_len: usize,
        track: Track,
        flags: Flags,
    ) -> Result<Event> {
        let shape = self.shape(peer, meta, local_len)?;
        // SAFETY: forwarded caller contract; the shape is validated.
        unsafe { self.start(peer, &shape, local, track, flags) }
    }

    /// Carry out a validated transfer.
    ///
    /// # Safety
    /// The local pointer must be valid at every local offset of `shape`:
    /// a source until the call returns, a destination until the returned
    /// event (or the NBI sync) fires.
    unsafe fn start(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        track: Track,
        flags: Flags,
    ) -> Result<Event> {
        if shape.bytes() == 0 {
            return Ok(Event::done());
        }
        match self.mechanism_for(peer, shape) {
            Mechanism::Direct => {
                let seg = self.ep.conduit().mapped_segment(peer).ok_or_else(|| {
                    Error::Config(format!(
                        "RGEX_VIS=direct: the segment of {peer} is not mapped in this process (not node-local); use auto, rma or am"
                    ))
                })?;
                if (seg.len() as u64) < self.ep.conduit().segment_len(peer) {
                    return Err(Error::Config(format!(
                        "VIS direct: the mapped segment of {peer} is shorter than the length it advertises"
                    )));
                }
                // SAFETY: the peer range was validated against the
                // segment's length (the mapped one's, checked above), the
                // local one by the caller.
                unsafe {
                    match shape {
                        Shape::Strided(p) => direct::strided(p, seg.as_ptr(), local, self.share()),
                        Shape::Runs(r) => direct::runs(r, seg.as_ptr(), local),
                    }
                };
                Ok(Event::done())
            }
            // SAFETY: forwarded caller contract.
            Mechanism::Rma => unsafe { self.rma(peer, shape, local, track, flags) },
            Mechanism::Am => {
                if flags.contains(Flags::IMMEDIATE)
                    && !am::Proto::one_message(&self.ep, peer, shape)
                {
                    return Err(Error::WouldBlock {
                        peer,
                        resource: "AM send buffers (an IMMEDIATE VIS transfer over AM is limited to one message)",
                    });
                }
                let c = match track {
                    Track::Event => Completion::new(0),
                    Track::Nbi(cat) => self.ep.nbi_counter(cat),
                };
                // SAFETY: forwarded caller contract.
                let r = unsafe {
                    match local {
                        Local::Src(p) => {
                            let a = self.am_payload;
                            self.proto.put(&self.ep, peer, shape, p, &c, flags, a)
                        }
                        Local::Dst(p) => {
                            let a = self.am_payload;
                            self.proto.get(&self.ep, peer, shape, p, &c, flags, a)
                        }
                    }
                };
                match (r, track) {
                    (Ok(()), Track::Event) => Ok(self.event(c)),
                    (Ok(()), Track::Nbi(_)) => Ok(Event::done()),
                    (Err(e), Track::Event) => {
                        // Messages already sent are waited for: a get's
                        // buffer must not be handed back while written.
                        self.event(c).wait();
                        Err(e)
                    }
                    (Err(e), Track::Nbi(_)) => Err(e),
                }
            }
            Mechanism::Auto => unreachable!("mechanism_for resolves Auto"),
        }
    }

    /// An IMMEDIATE transfer of several chunks over RMA is refused unless
    /// the segment is mapped: all or nothing would need every chunk's
    /// injection resources at once.
    fn rma_immediate(&self, peer: Rank, shape: &Shape, flags: Flags) -> Result<()> {
        if flags.contains(Flags::IMMEDIATE)
            && shape.chunks() > 1
            && self.ep.rma_path(peer) != rgex_am::rma::RmaPath::Mapped
        {
            return Err(Error::WouldBlock {
                peer,
                resource: "RMA injection (an IMMEDIATE VIS transfer over RMA is limited to one chunk unless the segment is mapped)",
            });
        }
        Ok(())
    }

    /// A put of one RMA operation per chunk, all counted on one local- and
    /// one remote-completion counter: the events `(lc, rc)`.
    ///
    /// # Safety
    /// The source must stay readable and unmodified at every local offset
    /// of `shape` until the returned `lc` fires.
    unsafe fn rma_deferred(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        flags: Flags,
    ) -> Result<(Event, Event)> {
        self.rma_immediate(peer, shape, flags)?;
        let (lc, rc) = (Completion::new(0), Completion::new(0));
        // SAFETY: forwarded caller contract.
        unsafe { self.rma_chunks(peer, shape, local, &lc, &rc, flags)? };
        Ok((self.event(lc), self.event(rc)))
    }

    /// One RMA operation per chunk of `shape`, all in flight at once: a
    /// put's remote completion counted on `rc` and its local completion on
    /// `lc`, a get's completion on `rc`. On an error the chunks already
    /// started are waited for (they may still read or write the buffer).
    ///
    /// # Safety
    /// The local buffer must stay valid at every local offset of `shape`
    /// (a source unmodified until `lc` is done, a destination untouched
    /// until `rc` is).
    unsafe fn rma_chunks(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        lc: &Arc<Completion>,
        rc: &Arc<Completion>,
        flags: Flags,
    ) -> Result<()> {
        let mut err = None;
        shape.for_each(|p, l, len| {
            if err.is_some() {
                return;
            }
            let at = GlobalAddr::new(peer, p);
            // SAFETY: the chunk is inside the validated local side, which
            // the caller keeps as this function requires.
            let r = unsafe {
                match local {
                    Local::Src(s) => self
                        .ep
                        .put_counted(at, s.add(l as usize), len, lc, rc, flags),
                    Local::Dst(d) => self.ep.get_counted(d.add(l as usize), len, at, rc, flags),
                }
            };
            err = r.err();
        });
        match err {
            Some(e) => {
                self.event(lc.clone()).wait();
                self.event(rc.clone()).wait();
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// One RMA operation per chunk, all in flight, then one event (or the
    /// NBI counter): a put waits for its local completion before return,
    /// its source being borrowed for the call only.
    ///
    /// # Safety
    /// As [`start`](Self::start).
    unsafe fn rma(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        track: Track,
        flags: Flags,
    ) -> Result<Event> {
        self.rma_immediate(peer, shape, flags)?;
        let (lc, rc) = match track {
            Track::Event => (Completion::new(0), Completion::new(0)),
            Track::Nbi(cat) => (Completion::new(0), self.ep.nbi_counter(cat)),
        };
        // SAFETY: forwarded caller contract.
        unsafe { self.rma_chunks(peer, shape, local, &lc, &rc, flags)? };
        self.event(lc).wait();
        Ok(match track {
            Track::Event => self.event(rc),
            Track::Nbi(_) => Event::done(),
        })
    }
}
