//! The engine behind every transfer form: the direct path for mapped
//! peers, and the validated general path, which dispatches to a
//! mechanism (direct copy, RMA per chunk, AM pipeline).

use crate::direct::{self, Local};
use crate::meta::{self, first_remote};
use crate::{am, validate, Mechanism, Meta, Shape, Vis};
use rgex_core::{Error, Event, Flags, OpCounter, Rank, Result};
use rgex_endpoint::rma::NbiCategory;
use std::sync::Arc;

/// Where one transfer's completion is counted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Track {
    /// A fresh event.
    Event,
    /// This thread's implicit category (or open access region).
    Nbi(NbiCategory),
}

impl Vis {
    /// The event of counter `c`: done at once if it is done already (and
    /// did not fail), else one that polls this endpoint.
    pub(crate) fn event(&self, c: Arc<OpCounter>) -> Event {
        // A failed transfer keeps its counter so `wait` sees why.
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
    pub(crate) fn direct_target(&self, peer: Rank) -> Option<(*mut u8, u64)> {
        if !matches!(self.mechanism, Mechanism::Auto | Mechanism::Direct) {
            return None;
        }
        // The endpoint's neighbourhood table (read, not asked: a
        // segment's mapping is fixed at setup). A mapped segment is the
        // peer's whole segment, so its length is the advertised one.
        let seg = self.ep.locality().mapped_segment(peer)?;
        Some((seg.as_ptr(), seg.len() as u64))
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
    pub(crate) unsafe fn direct(
        &self,
        peer: Rank,
        (base, seg_len): (*mut u8, u64),
        meta: &Meta<'_>,
        local: Local,
        local_len: usize,
    ) -> Result<()> {
        // Refused once the client is finalized or dropped, as RMA is.
        self.ep.check_open("a VIS transfer")?;
        // SAFETY: forwarded caller contract (the local side); the segment
        // is mapped for `seg_len` bytes; `direct::transfer` validates both
        // sides before copying.
        unsafe { direct::transfer(meta, peer, base, seg_len, local, local_len, self.share()) }
            // SAFETY: forwarded caller contract.
            .or_else(|refused| unsafe {
                self.direct_refused(refused, peer, meta, local, local_len)
            })
    }

    /// A transfer the direct path refused: into a client segment (which
    /// is never mapped), carried to completion by the general path
    /// (the direct path's callers expect it done on return), or the
    /// refusal.
    ///
    /// # Safety
    /// As [`direct`](Self::direct).
    #[cold]
    #[inline(never)]
    unsafe fn direct_refused(
        &self,
        refused: Error,
        peer: Rank,
        meta: &Meta<'_>,
        local: Local,
        local_len: usize,
    ) -> Result<()> {
        if first_remote(meta) < rgex_endpoint::CLIENT_SEGMENT_STRIDE {
            return Err(refused);
        }
        // SAFETY: forwarded caller contract; waited for before return.
        unsafe { self.transfer(peer, meta, local, local_len, Track::Event, Flags::empty()) }?.wait()
    }

    /// An implicit-handle transfer.
    ///
    /// # Safety
    /// As [`start`](Self::start), for a local buffer of `local_len` bytes.
    #[inline(never)]
    pub(crate) unsafe fn nbi(
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
    pub(crate) unsafe fn with_event(
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
    pub(crate) unsafe fn transfer(
        &self,
        peer: Rank,
        meta: &Meta<'_>,
        local: Local,
        local_len: usize,
        track: Track,
        flags: Flags,
    ) -> Result<Event> {
        if first_remote(meta) >= rgex_endpoint::CLIENT_SEGMENT_STRIDE {
            // SAFETY: forwarded caller contract.
            return unsafe { self.client(peer, meta, local, local_len, track, flags) };
        }
        let shape = self.shape(peer, meta, local_len)?;
        // SAFETY: forwarded caller contract; the shape is validated.
        unsafe { self.start(peer, &shape, local, track, flags) }
    }

    /// A transfer into a client segment: validated against what `peer`
    /// registered (the target checks each fragment again, against its
    /// registration, under its lock), carried by active messages.
    ///
    /// # Safety
    /// As [`start`](Self::start).
    #[cold]
    #[inline(never)]
    unsafe fn client(
        &self,
        peer: Rank,
        meta: &Meta<'_>,
        local: Local,
        local_len: usize,
        track: Track,
        flags: Flags,
    ) -> Result<Event> {
        meta::check_rank(peer, self.ep.size())?;
        let first = first_remote(meta);
        let Some(end) = self.ep.client_segment_end(peer, first) else {
            // Not registered, or deregistered: as any range the peer
            // cannot take, an error naming it (the RMA check says which).
            self.ep.check_client_range(peer, first, 0)?;
            return Err(Error::OutOfSegment {
                rank: peer,
                offset: first,
                len: 0,
                seg_len: self.ep.conduit().segment_len(peer),
            });
        };
        let base = first - first % rgex_endpoint::CLIENT_SEGMENT_STRIDE;
        let shape = validate(meta, peer, end, local_len).map_err(|e| match e {
            // Said of the client segment, not of a segment that long.
            Error::OutOfSegment {
                rank, offset, len, ..
            } => Error::OutOfClientSegment {
                rank,
                offset,
                len,
                segment: (base / rgex_endpoint::CLIENT_SEGMENT_STRIDE) as usize,
                base,
                limit: end - base,
            },
            other => other,
        })?;
        // SAFETY: forwarded caller contract; the shape is validated.
        unsafe { self.start_with(peer, &shape, local, track, flags, Mechanism::Am) }
    }

    /// Carry out a validated transfer.
    ///
    /// # Safety
    /// The local pointer must be valid at every local offset of `shape`:
    /// a source until the call returns, a destination until the returned
    /// event (or the NBI sync) fires.
    pub(crate) unsafe fn start(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        track: Track,
        flags: Flags,
    ) -> Result<Event> {
        // SAFETY: forwarded caller contract.
        unsafe {
            self.start_with(
                peer,
                shape,
                local,
                track,
                flags,
                self.mechanism_for(peer, shape),
            )
        }
    }

    /// Carry out a validated transfer by `mechanism`.
    ///
    /// # Safety
    /// As [`start`](Self::start).
    unsafe fn start_with(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        track: Track,
        flags: Flags,
        mechanism: Mechanism,
    ) -> Result<Event> {
        // Every mechanism: refused once the client is finalized or dropped.
        self.ep.check_open("a VIS transfer")?;
        if shape.bytes() == 0 {
            return Ok(Event::done());
        }
        // Statistics and tracing (`RGEX_STATS`, `RGEX_TRACE`): one load
        // when off, beside a transfer's plan.
        if rgex_core::observe::on() {
            observe(mechanism, peer, shape.bytes() as usize);
        }
        match mechanism {
            Mechanism::Direct => {
                let seg = self.ep.locality().mapped_segment(peer).ok_or_else(|| {
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
            // SAFETY: forwarded caller contract.
            Mechanism::Native => unsafe { self.native(peer, shape, local, track, flags) },
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
                    Track::Event => OpCounter::new(0),
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
                        // The injection error is the one reported.
                        self.event(c).wait_unchecked();
                        Err(e)
                    }
                    (Err(e), Track::Nbi(_)) => Err(e),
                }
            }
            Mechanism::Auto => unreachable!("mechanism_for resolves Auto"),
        }
    }
}

/// Tell the observer of a VIS transfer by `m`.
#[cold]
#[inline(never)]
fn observe(m: Mechanism, peer: Rank, bytes: usize) {
    use rgex_core::observe::VisMech;
    let m = match m {
        Mechanism::Direct => VisMech::Direct,
        Mechanism::Rma => VisMech::Rma,
        Mechanism::Native => VisMech::Native,
        // `Auto` is resolved before a transfer starts.
        Mechanism::Am | Mechanism::Auto => VisMech::Am,
    };
    rgex_core::observe::vis(m, peer, bytes);
}
