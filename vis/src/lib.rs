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
pub mod kernel;
mod meta;
pub mod plan;

pub use am::AmPayload;
pub use meta::{validate, Indexed, Meta, Run, Shape, Strided, Vector};

use crate::kernel::{copy_range, Loop};
use rgex_am::rma::NbiCategory;
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
        })
    }
}

/// The events of a non-blocking VIS put.
#[derive(Debug)]
#[must_use = "the put's completion must be waited on"]
pub struct VisPut {
    /// Local completion: the source may be reused (every current mechanism
    /// packs or copies the source during injection, so this has fired).
    pub lc: Event,
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

/// The local side of one transfer.
#[derive(Clone, Copy)]
enum Local {
    Src(*const u8),
    Dst(*mut u8),
}

/// VIS transfers over one endpoint. `Send + Sync`; share it by reference.
pub struct Vis {
    ep: Arc<Endpoint>,
    proto: Arc<am::Proto>,
    mechanism: Mechanism,
    am_payload: AmPayload,
}

impl std::fmt::Debug for Vis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vis")
            .field("rank", &self.ep.rank())
            .field("mechanism", &self.mechanism)
            .field("am_payload", &self.am_payload)
            .finish()
    }
}

impl Vis {
    /// A VIS context with the mechanism `RGEX_VIS` names (default auto).
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
    pub fn put_nb<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        src: &[u8],
        flags: Flags,
    ) -> Result<VisPut> {
        let shape = self.shape(peer, &meta.into(), src.len())?;
        // SAFETY: `src` is borrowed for the call and every mechanism reads
        // it during injection; the shape was validated against its length.
        let rc =
            unsafe { self.start(peer, &shape, Local::Src(src.as_ptr()), Track::Event, flags)? };
        Ok(VisPut {
            lc: Event::done(),
            rc,
        })
    }

    /// Implicit-handle put: `src` may be reused on return; completion joins
    /// this thread's put category (or its open access region).
    pub fn put_nbi<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        src: &[u8],
        flags: Flags,
    ) -> Result<()> {
        let shape = self.shape(peer, &meta.into(), src.len())?;
        // SAFETY: as in `put_nb`.
        unsafe {
            self.start(
                peer,
                &shape,
                Local::Src(src.as_ptr()),
                Track::Nbi(NbiCategory::Put),
                flags,
            )
        }
        .map(drop)
    }

    // ---- gets ----

    /// Blocking get into `dst`.
    pub fn get<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        dst: &mut [u8],
        flags: Flags,
    ) -> Result<()> {
        let shape = self.shape(peer, &meta.into(), dst.len())?;
        // SAFETY: `dst` is borrowed mutably for the whole call, which waits
        // for completion; the shape was validated against its length.
        let ev = unsafe {
            self.start(
                peer,
                &shape,
                Local::Dst(dst.as_mut_ptr()),
                Track::Event,
                flags,
            )?
        };
        ev.wait();
        Ok(())
    }

    /// Non-blocking get into an owned buffer, handed back when complete.
    pub fn get_nb<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        mut dst: Vec<u8>,
        flags: Flags,
    ) -> Result<VisGet> {
        let shape = self.shape(peer, &meta.into(), dst.len())?;
        // SAFETY: the Vec moves into the VisGet, which keeps it alive and
        // out of reach until the event fires (a Vec's storage does not move
        // with it).
        let ev = unsafe {
            self.start(
                peer,
                &shape,
                Local::Dst(dst.as_mut_ptr()),
                Track::Event,
                flags,
            )?
        };
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
    pub unsafe fn get_nbi<'m>(
        &self,
        peer: Rank,
        meta: impl Into<Meta<'m>>,
        dst: *mut u8,
        len: usize,
        flags: Flags,
    ) -> Result<()> {
        let shape = self.shape(peer, &meta.into(), len)?;
        // SAFETY: forwarded caller contract.
        unsafe {
            self.start(
                peer,
                &shape,
                Local::Dst(dst),
                Track::Nbi(NbiCategory::Get),
                flags,
            )
        }
        .map(drop)
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
        if c.is_done() {
            Event::done()
        } else {
            Event::pending(c, self.ep.clone())
        }
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
                // SAFETY: the peer range was validated against the mapped
                // segment's length, the local one by the caller.
                unsafe { direct(shape, seg.as_ptr(), local) };
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

    /// One RMA operation per chunk, all in flight, then one event.
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
        let ep = &*self.ep;
        if flags.contains(Flags::IMMEDIATE)
            && shape.chunks() > 1
            && ep.rma_path(peer) != rgex_am::rma::RmaPath::Mapped
        {
            return Err(Error::WouldBlock {
                peer,
                resource: "RMA injection (an IMMEDIATE VIS transfer over RMA is limited to one chunk unless the segment is mapped)",
            });
        }
        // Collect the chunks in an access region of our own when none is
        // open; inside the caller's region (or for NBI) they join it.
        let own_region = track == Track::Event && ep.nbi_begin_region().is_ok();
        let mut waits: Vec<Event> = Vec::new();
        let mut err = None;
        shape.for_each(|p, l, len| {
            if err.is_some() {
                return;
            }
            let at = GlobalAddr::new(peer, p);
            // SAFETY: the chunk is inside the local side (validated; the
            // caller keeps it valid as `start` requires).
            let r = unsafe {
                match (local, track, own_region) {
                    (Local::Src(s), Track::Nbi(_), _) | (Local::Src(s), _, true) => ep.put_nbi(
                        at,
                        std::slice::from_raw_parts(s.add(l as usize), len),
                        flags,
                    ),
                    (Local::Dst(d), Track::Nbi(_), _) | (Local::Dst(d), _, true) => {
                        ep.get_nbi(d.add(l as usize), len, at, flags)
                    }
                    (Local::Src(s), _, false) => ep
                        .put_nb(
                            at,
                            std::slice::from_raw_parts(s.add(l as usize), len),
                            flags,
                        )
                        .map(|e| waits.push(e)),
                    (Local::Dst(d), _, false) => ep
                        .get_nb_raw(d.add(l as usize), len, at, flags)
                        .map(|e| waits.push(e)),
                }
            };
            if let Err(e) = r {
                err = Some(e);
            }
        });
        let ev = if own_region {
            ep.nbi_end_region()?
        } else {
            Event::done()
        };
        // Without a region of our own the chunks' events are waited here
        // (the transfer completes before return).
        Event::wait_all(&mut waits);
        match err {
            Some(e) => {
                ev.wait();
                Err(e)
            }
            None => Ok(ev),
        }
    }
}

/// Copy a validated shape between the local buffer and a mapped segment.
///
/// # Safety
/// Every chunk of `shape` must be inside the segment at `seg` and inside the
/// local buffer, which must be readable (put) or writable (get).
unsafe fn direct(shape: &Shape, seg: *mut u8, local: Local) {
    match shape {
        Shape::Strided(p) => {
            let loops: Vec<Loop> = p
                .dims
                .iter()
                .map(|d| match local {
                    Local::Src(_) => Loop {
                        count: d.count,
                        src: d.local_stride as isize,
                        dst: d.peer_stride as isize,
                    },
                    Local::Dst(_) => Loop {
                        count: d.count,
                        src: d.peer_stride as isize,
                        dst: d.local_stride as isize,
                    },
                })
                .collect();
            // SAFETY: the caller vouches for both sides of every element.
            unsafe {
                let (pp, lp) = (seg.add(p.peer_base as usize), p.local_base as usize);
                match local {
                    Local::Src(s) => copy_range(p.elem, &loops, s.add(lp), pp, 0, p.elements()),
                    Local::Dst(d) => copy_range(p.elem, &loops, pp, d.add(lp), 0, p.elements()),
                }
            }
        }
        Shape::Runs(runs) => {
            for r in runs {
                // SAFETY: as above, per run.
                unsafe {
                    let pp = seg.add(r.peer as usize);
                    match local {
                        Local::Src(s) => std::ptr::copy_nonoverlapping(
                            s.add(r.local as usize),
                            pp,
                            r.len as usize,
                        ),
                        Local::Dst(d) => std::ptr::copy_nonoverlapping(
                            pp,
                            d.add(r.local as usize),
                            r.len as usize,
                        ),
                    }
                }
            }
        }
    }
}
