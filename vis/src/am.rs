//! The AM pipeline: pieces packed straight into negotiated-payload Medium
//! buffers (no intermediate copy), unpacked by a handler at the target;
//! gets are requests the target answers by packing into NP reply buffers.
//!
//! [`AmPayload::Fixed`] is the FP-based variant kept for comparison: the
//! same packing code writes into a client-side buffer, sent with a
//! fixed-payload `request_medium` (one more copy). Only the initiator's
//! requests change; the target's replies are NP either way.
//!
//! Handlers (reserved indices 24..=27):
//! - `PUT` (Medium request) args `[id_lo, id_hi, format]`, payload: the
//!   format's metadata and the data;
//! - `ACK` (Short reply) `[id_lo, id_hi, status]`;
//! - `GET` (Medium request) args `[id_lo, id_hi, format]`, payload: metadata;
//! - `GET_REPLY` (Medium reply) `[id_lo, id_hi, status]`, payload: the data.
//!
//! Formats: `RUNS` = repeated `{off: u64, len: u32, data[len]}` (for a get,
//! without data); `STRIDED` = `{elem, ndims, base, start, n: u64,
//! ndims x {count, stride: u64}}` then `n * elem` bytes of data (for a put):
//! elements `start .. start + n` of the peer-side loop nest.
//!
//! Messages in flight are kept in a table keyed by a 64-bit id, as in the
//! RMA reference, so the reply finds its counter and, for a get, where its
//! bytes go, whichever thread runs it.

use crate::kernel::{copy_range, dense_loops, with_loops, Loop};
use crate::meta::Shape;
use crate::stride_plan::StridePlan;
use rgex_core::{Category, Flags, OpCounter, Rank, Result, Segment};
use rgex_endpoint::{Accepts, Endpoint, InFlight, Message, ProtocolId, Token};
use std::sync::Arc;

/// Reserved handler indices of the VIS AM protocol.
pub mod index {
    /// A put's data (Medium request).
    pub const PUT: u8 = 24;
    /// A put's acknowledgement (Short reply).
    pub const ACK: u8 = 25;
    /// A get's request (Medium request).
    pub const GET: u8 = 26;
    /// A get's data (Medium reply).
    pub const GET_REPLY: u8 = 27;
}

/// How the AM pipeline's requests carry their payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AmPayload {
    /// Packed straight into the negotiated-payload send buffer (no copy).
    #[default]
    Negotiated,
    /// Packed into a client-side buffer, then sent as a fixed-payload
    /// Medium (one extra copy; for comparison).
    Fixed,
}

std::thread_local! {
    /// The client-side buffer of [`AmPayload::Fixed`], kept between calls
    /// (taken out while in use, so a nested use just gets a fresh one).
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Where one transfer's requests are packed and how they are sent.
struct Sender<'e> {
    ep: &'e Endpoint,
    peer: Rank,
    payload: AmPayload,
    flags: Flags,
    /// The client-side buffer (Fixed only).
    scratch: Vec<u8>,
}

impl<'e> Sender<'e> {
    fn new(ep: &'e Endpoint, peer: Rank, payload: AmPayload, flags: Flags) -> Self {
        let scratch = match payload {
            AmPayload::Negotiated => Vec::new(),
            AmPayload::Fixed => SCRATCH.with(|c| c.take()),
        };
        Sender {
            ep,
            peer,
            payload,
            flags,
            scratch,
        }
    }

    /// Send one request to handler `h`: `pack` fills a buffer of between
    /// `least` and `most` bytes and says how many it used and where a get's
    /// reply goes; the message is registered with `done` under a fresh id.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &mut self,
        proto: &Proto,
        h: ProtocolId,
        format: u32,
        least: usize,
        most: usize,
        done: &Arc<OpCounter>,
        pack: impl FnOnce(&mut [u8]) -> (usize, Option<GetDest>),
    ) -> Result<()> {
        let (ep, peer, flags) = (self.ep, self.peer, self.flags);
        match self.payload {
            AmPayload::Negotiated => {
                let mut sd = ep.prepare_request_medium(peer, None, least, most, NARGS, flags)?;
                let (len, get) = pack(sd.buf());
                let id @ [a, b] = proto.ops.start(peer, done, get);
                sd.commit(h, &[a, b, format], len)
                    .inspect_err(|_| proto.ops.abandon(&id))
            }
            AmPayload::Fixed => {
                if self.scratch.len() < most {
                    self.scratch.resize(most, 0);
                }
                let (len, get) = pack(&mut self.scratch[..most]);
                let id @ [a, b] = proto.ops.start(peer, done, get);
                ep.request_medium(peer, h, &[a, b, format], &self.scratch[..len], flags)
                    .inspect_err(|_| proto.ops.abandon(&id))
            }
        }
    }
}

impl Drop for Sender<'_> {
    fn drop(&mut self) {
        if self.payload == AmPayload::Fixed {
            let v = std::mem::take(&mut self.scratch);
            SCRATCH.with(|c| c.set(v));
        }
    }
}

const RUNS: u32 = 0;
const STRIDED: u32 = 1;
const ST_OK: u32 = 0;
const ST_BAD: u32 = 1;
/// Bytes of a run header in the RUNS format.
const RUN_HDR: usize = 12;
/// Arguments of every VIS message.
const NARGS: usize = 3;

fn rd64(b: &[u8], at: usize) -> Option<u64> {
    Some(le64(b.get(at..at + 8)?))
}

fn rd32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Header bytes of the STRIDED format with `nd` loops.
fn strided_hdr(nd: usize) -> usize {
    40 + 16 * nd
}

/// Where a get's bytes go in the initiator's buffer.
enum Dest {
    /// `(offset, len)` pieces, in payload order.
    Runs(Vec<(u64, u64)>),
    /// Elements `start .. start + n` of the plan's local side.
    Strided {
        plan: Arc<StridePlan>,
        start: u64,
        n: u64,
    },
}

struct GetDest {
    base: *mut u8,
    dest: Dest,
}

// SAFETY: `base` names the initiator's buffer, which it keeps valid and
// untouched until the operation's counter drops (the get APIs' contract);
// only the reply handler for this message writes it, once.
unsafe impl Send for GetDest {}

/// The VIS AM protocol state of one endpoint: operations in flight, with
/// where a get's reply goes.
pub(crate) struct Proto {
    ops: Arc<Ops>,
    /// The put and get requests' handlers, to send to.
    put: ProtocolId,
    get: ProtocolId,
}

/// Messages in flight, each with where a get's answer goes.
type Ops = InFlight<Option<GetDest>>;

impl Proto {
    /// This endpoint's state, registering the handlers the first time.
    pub(crate) fn for_endpoint(ep: &Arc<Endpoint>) -> Result<Arc<Self>> {
        ep.extension(|ep| {
            let ops = Arc::default();
            let (put, get) = install(ep, &ops)?;
            ep.watch_in_flight("VIS", &ops);
            Ok(Arc::new(Proto { ops, put, get }))
        })
    }

    /// True if the transfer fits one message each way (for IMMEDIATE).
    pub(crate) fn one_message(ep: &Endpoint, peer: Rank, shape: &Shape) -> bool {
        let max = ep.max_medium(peer, NARGS) as u64;
        match (shape, strided_format(ep, peer, shape)) {
            (Shape::Strided(p), true) => strided_hdr(p.dims.len()) as u64 + p.bytes() <= max,
            _ => {
                let b = shape.bytes();
                b + RUN_HDR as u64 * shape.chunks() <= max
            }
        }
    }

    /// Put: pack `shape`'s local side of `src` into Medium requests (NP
    /// buffers, or a client-side buffer sent FP, as `payload` says).
    ///
    /// # Safety
    /// `src` must be readable at every local offset of `shape` for the call.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn put(
        &self,
        ep: &Endpoint,
        peer: Rank,
        shape: &Shape,
        src: *const u8,
        done: &Arc<OpCounter>,
        flags: Flags,
        payload: AmPayload,
    ) -> Result<()> {
        let max = ep.max_medium(peer, NARGS);
        let h = self.put;
        let mut tx = Sender::new(ep, peer, payload, flags);
        if let (Shape::Strided(p), true) = (shape, strided_format(ep, peer, shape)) {
            let hdr = strided_hdr(p.dims.len());
            let total = p.elements();
            let mut start = 0;
            while start < total {
                let least = hdr + p.elem;
                let most = (hdr as u64 + (total - start) * p.elem as u64).min(max as u64) as usize;
                let mut n = 0;
                tx.send(self, h, STRIDED, least, most, done, |buf| {
                    n = (((buf.len() - hdr) / p.elem) as u64).min(total - start);
                    write_strided_hdr(buf, p, start, n);
                    let data = buf[hdr..].as_mut_ptr();
                    // SAFETY: the local side is readable (caller); the
                    // destination holds n elements after the header (granted
                    // >= hdr + n * elem), addressed from `start` by shifting
                    // the base back; the two cannot overlap.
                    with_loops(p.dims.len(), local_dense(p, true), |local| unsafe {
                        copy_range(
                            p.elem,
                            local,
                            src.add(p.local_base as usize),
                            data.wrapping_sub(start as usize * p.elem),
                            start,
                            n,
                        )
                    });
                    (hdr + n as usize * p.elem, None)
                })?;
                start += n;
            }
            return Ok(());
        }
        // RUNS format.
        let mut cur = Cursor::new(shape);
        while !cur.finished() {
            let most =
                max.min((cur.remaining_bytes() + RUN_HDR as u64 * cur.remaining_chunks()) as usize);
            tx.send(self, h, RUNS, RUN_HDR + 1, most, done, |buf| {
                let mut at = 0;
                while buf.len() - at > RUN_HDR {
                    let Some((po, lo, n)) = cur.next((buf.len() - at - RUN_HDR) as u64) else {
                        break;
                    };
                    buf[at..at + 8].copy_from_slice(&po.to_le_bytes());
                    buf[at + 8..at + 12].copy_from_slice(&(n as u32).to_le_bytes());
                    at += RUN_HDR;
                    // SAFETY: the caller vouches for the local bytes; the
                    // destination is inside the buffer.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            src.add(lo as usize),
                            buf[at..].as_mut_ptr(),
                            n as usize,
                        )
                    };
                    at += n as usize;
                }
                (at, None)
            })?;
        }
        Ok(())
    }

    /// Get: requests describing the peer side (sent as `payload` says);
    /// replies unpacked into `dst`.
    ///
    /// # Safety
    /// `dst` must be writable at every local offset of `shape`, and left
    /// alone, until `done` drops.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn get(
        &self,
        ep: &Endpoint,
        peer: Rank,
        shape: &Shape,
        dst: *mut u8,
        done: &Arc<OpCounter>,
        flags: Flags,
        payload: AmPayload,
    ) -> Result<()> {
        let max = ep.max_medium(peer, NARGS);
        let h = self.get;
        let mut tx = Sender::new(ep, peer, payload, flags);
        if let (Shape::Strided(p), true) = (shape, strided_format(ep, peer, shape)) {
            let hdr = strided_hdr(p.dims.len());
            let total = p.elements();
            let per = (max / p.elem) as u64;
            let plan = Arc::new(p.clone());
            let mut start = 0;
            while start < total {
                let n = per.min(total - start);
                tx.send(self, h, STRIDED, hdr, hdr, done, |buf| {
                    write_strided_hdr(buf, p, start, n);
                    let dest = Dest::Strided {
                        plan: plan.clone(),
                        start,
                        n,
                    };
                    (hdr, Some(GetDest { base: dst, dest }))
                })?;
                start += n;
            }
            return Ok(());
        }
        let mut cur = Cursor::new(shape);
        while !cur.finished() {
            let most = max.min(RUN_HDR * cur.remaining_chunks() as usize + RUN_HDR);
            tx.send(self, h, RUNS, RUN_HDR, most, done, |buf| {
                let (mut at, mut data) = (0, 0usize);
                let mut pieces = Vec::new();
                while buf.len() - at >= RUN_HDR && data < max {
                    let Some((po, lo, n)) = cur.next((max - data) as u64) else {
                        break;
                    };
                    buf[at..at + 8].copy_from_slice(&po.to_le_bytes());
                    buf[at + 8..at + 12].copy_from_slice(&(n as u32).to_le_bytes());
                    at += RUN_HDR;
                    data += n as usize;
                    pieces.push((lo, n));
                }
                let dest = Dest::Runs(pieces);
                (at, Some(GetDest { base: dst, dest }))
            })?;
        }
        Ok(())
    }
}

/// True if a strided shape travels in the STRIDED format (elements fit a
/// message with the header); else in RUNS.
fn strided_format(ep: &Endpoint, peer: Rank, shape: &Shape) -> bool {
    match shape {
        Shape::Strided(p) => {
            let max = ep.max_medium(peer, NARGS);
            let hdr = strided_hdr(p.dims.len());
            !p.is_empty() && hdr <= max / 2 && p.elem <= (max - hdr) / 2
        }
        Shape::Runs(_) => false,
    }
}

fn write_strided_hdr(buf: &mut [u8], p: &StridePlan, start: u64, n: u64) {
    let mut w = |at: usize, v: u64| buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
    w(0, p.elem as u64);
    w(8, p.dims.len() as u64);
    w(16, p.peer_base);
    w(24, start);
    w(32, n);
    for (i, d) in p.dims.iter().enumerate() {
        w(40 + 16 * i, d.count);
        w(48 + 16 * i, d.peer_stride as u64);
    }
}

/// The plan's loops between its local side and a dense buffer: local to
/// dense for a put's packing, dense to local for a get's reply.
fn local_dense(p: &StridePlan, to_dense: bool) -> impl Iterator<Item = Loop> + '_ {
    let side = p.dims.iter().map(|d| (d.count, d.local_stride as isize));
    dense_loops(p.elem, side, to_dense)
}

/// A resumable walk over a shape's chunks, handing out pieces of at most
/// a given length.
struct Cursor<'s> {
    shape: &'s Shape,
    chunk: u64,
    within: u64,
    chunks: u64,
    left: u64,
}

impl<'s> Cursor<'s> {
    fn new(shape: &'s Shape) -> Self {
        Cursor {
            shape,
            chunk: 0,
            within: 0,
            chunks: shape.chunks(),
            left: shape.bytes(),
        }
    }

    fn finished(&self) -> bool {
        self.left == 0
    }

    fn remaining_bytes(&self) -> u64 {
        self.left
    }

    fn remaining_chunks(&self) -> u64 {
        self.chunks - self.chunk
    }

    /// The next piece, `(peer, local, len)` with `0 < len <= max`.
    fn next(&mut self, max: u64) -> Option<(u64, u64, u64)> {
        if self.left == 0 || max == 0 {
            return None;
        }
        let (p, l, len) = match self.shape {
            Shape::Strided(plan) => {
                let (p, l) = plan.offsets_of(self.chunk);
                (p, l, plan.elem as u64)
            }
            Shape::Runs(r) => {
                let r = r[self.chunk as usize];
                (r.peer, r.local, r.len)
            }
        };
        let n = (len - self.within).min(max).min(u64::from(u32::MAX));
        let out = (p + self.within, l + self.within, n);
        self.within += n;
        self.left -= n;
        if self.within == len {
            self.within = 0;
            self.chunk += 1;
        }
        Some(out)
    }
}

/// A parsed STRIDED header, its loops still in the message.
struct StridedHdr<'b> {
    elem: usize,
    nd: usize,
    base: u64,
    start: u64,
    n: u64,
    /// The header's bytes (`strided_hdr(nd)` of them).
    b: &'b [u8],
}

impl StridedHdr<'_> {
    /// The peer-side loops, `(count, stride)`, innermost first.
    fn dims(&self) -> impl Iterator<Item = (u64, u64)> + Clone + '_ {
        self.b[40..]
            .chunks_exact(16)
            .map(|d| (le64(&d[..8]), le64(&d[8..])))
    }

    /// The loops between the segment and the dense message data: segment
    /// to data for a get's answer, data to segment for a put.
    fn loops(&self, to_data: bool) -> impl Iterator<Item = Loop> + '_ {
        let side = self.dims().map(|(count, stride)| (count, stride as isize));
        dense_loops(self.elem, side, to_data)
    }

    /// Bytes of data after the header.
    fn data_len(&self) -> Option<usize> {
        (self.n as usize).checked_mul(self.elem)
    }
}

/// An 8-byte little-endian word (`b` is 8 bytes long).
fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().expect("8 bytes"))
}

fn parse_strided(b: &[u8]) -> Option<StridedHdr<'_>> {
    let elem = rd64(b, 0)? as usize;
    let nd = rd64(b, 8)? as usize;
    if nd > 64 || elem == 0 {
        return None;
    }
    Some(StridedHdr {
        elem,
        nd,
        base: rd64(b, 16)?,
        start: rd64(b, 24)?,
        n: rd64(b, 32)?,
        b: b.get(..strided_hdr(nd))?,
    })
}

/// True if the elements the STRIDED header `h` names lie in `seg`.
fn strided_in_segment(seg: &Segment, h: &StridedHdr<'_>) -> bool {
    let in_seg = || {
        let total = h.dims().try_fold(1u64, |a, d| a.checked_mul(d.0))?;
        // Every element's byte offset in the dense data, and every stride,
        // must be representable as the kernels' signed offsets.
        if total.checked_mul(h.elem as u64)? > isize::MAX as u64 {
            return None;
        }
        if h.start.checked_add(h.n)? > total
            || h.dims().any(|d| d.0 == 0 || d.1 > isize::MAX as u64)
        {
            return None;
        }
        let mut hi = h.base;
        for d in h.dims() {
            hi = hi.checked_add((d.0 - 1).checked_mul(d.1)?)?;
        }
        seg.check(h.base, hi.checked_sub(h.base)?.checked_add(h.elem as u64)?)
            .ok()
    };
    in_seg().is_some()
}

/// Register the four handlers; returns the ids of the two requests. Each
/// takes only its own shape of message, and a reply finishes only a
/// message sent to the rank that answers.
fn install(ep: &Arc<Endpoint>, ops: &Arc<Ops>) -> Result<(ProtocolId, ProtocolId)> {
    let t = ep.handlers();
    let s = ops.clone();
    let ack = t.register_protocol(
        index::ACK,
        "rgex.vis.ack",
        Accepts::reply(Category::Short, 3),
        move |tok, msg| {
            let Some((done, get)) = s.answer(tok, msg) else {
                return;
            };
            if get.is_some() {
                // Puts and gets share the table: an acknowledgement naming
                // a get is a peer's mistake, not the get's data.
                let why = "an acknowledgement naming a get, not a put";
                tok.malformed(why);
                return done.fail(format!("VIS get from {}: {why}", tok.src()));
            }
            match msg.arg(2) {
                ST_OK => done.done(),
                status => done.fail(refused_there("put to", tok.src(), status)),
            }
        },
    )?;
    let put = t.register_protocol(
        index::PUT,
        "rgex.vis.put",
        Accepts::request(Category::Medium, NARGS as u8),
        move |tok, msg| {
            let status = if unpack_put(tok, msg).is_some() {
                ST_OK
            } else {
                // The initiator's put fails with a refusal naming this
                // rank: the detail is for whoever looks here.
                tracing::debug!(
                    rank = tok.endpoint().rank().0,
                    peer = tok.src().0,
                    "VIS put from {} refused: malformed or outside the segment (checked at the initiator, so the segments disagree)",
                    tok.src()
                );
                ST_BAD
            };
            let a = msg.args();
            let _ = tok.reply_short(ack, &[a[0], a[1], status], Flags::empty());
        },
    )?;
    let s = ops.clone();
    let get_reply = t.register_protocol(
        index::GET_REPLY,
        "rgex.vis.get.reply",
        Accepts::reply(Category::Medium, NARGS as u8).or(Category::Short),
        move |tok, msg| {
            let Some((done, get)) = s.answer(tok, msg) else {
                return;
            };
            if msg.arg(2) != ST_OK {
                return done.fail(refused_there("get from", tok.src(), msg.arg(2)));
            }
            match get.map(|g| unpack_get(&g, msg.payload())) {
                Some(true) => done.done(),
                _ => {
                    let why = format!(
                        "a VIS get reply of {} bytes, not the size asked for",
                        msg.payload().len()
                    );
                    tok.malformed(&why);
                    done.fail(format!("VIS get from {}: {why}", tok.src()));
                }
            }
        },
    )?;
    let get = t.register_protocol(
        index::GET,
        "rgex.vis.get",
        Accepts::request(Category::Medium, NARGS as u8),
        move |tok, msg| {
            let a = msg.args();
            if answer_get(tok, msg, get_reply).is_none() {
                // As for a put: the initiator's get fails, naming us.
                tracing::debug!(
                    rank = tok.endpoint().rank().0,
                    peer = tok.src().0,
                    "VIS get from {} refused: malformed or outside the segment",
                    tok.src()
                );
                let _ = tok.reply_short(get_reply, &[a[0], a[1], ST_BAD], Flags::empty());
            }
        },
    )?;
    Ok((put, get))
}

/// Why a VIS transfer `what` (`"put to"`, `"get from"`) `peer` failed
/// when the peer answered with a refusal `status`.
fn refused_there(what: &str, peer: Rank, status: u32) -> String {
    format!(
        "VIS {what} {peer} was refused there (status {status}): malformed or outside its segment, though checked here, so the ranks disagree on its size"
    )
}

/// Unpack a get's answer `data` where `g` says; false (nothing written)
/// if its size is not the one asked for.
fn unpack_get(g: &GetDest, data: &[u8]) -> bool {
    match &g.dest {
        Dest::Runs(pieces) => {
            let want: u64 = pieces.iter().map(|x| x.1).sum();
            if want != data.len() as u64 {
                return false;
            }
            let mut at = 0;
            for &(lo, n) in pieces {
                // SAFETY: `base + lo .. + n` is in the initiator's buffer
                // (validated, kept alive until `done` drops); `data` is
                // the message, holding the sum of the pieces (checked).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        data[at..].as_ptr(),
                        g.base.add(lo as usize),
                        n as usize,
                    )
                };
                at += n as usize;
            }
            true
        }
        Dest::Strided { plan, start, n } => {
            if *n * plan.elem as u64 != data.len() as u64 {
                return false;
            }
            let loops = local_dense(plan, false);
            // SAFETY: elements start..start+n of the plan's local side are
            // in the initiator's buffer (as above); the source is the
            // message (n elements, checked), addressed from `start` by
            // shifting its base back.
            with_loops(plan.dims.len(), loops, |loops| unsafe {
                copy_range(
                    plan.elem,
                    loops,
                    data.as_ptr().wrapping_sub(*start as usize * plan.elem),
                    g.base.add(plan.local_base as usize),
                    *start,
                    *n,
                )
            });
            true
        }
    }
}

/// The first remote offset a request names (a strided nest's base, the
/// first run's offset): which segment it addresses.
fn first_offset(msg: &Message<'_>) -> Option<u64> {
    let b = msg.payload();
    match *msg.args().get(2)? {
        STRIDED => Some(parse_strided(b)?.base),
        RUNS => rd64(b, 0),
        _ => None,
    }
}

/// Run `f` on the segment a request addresses, with the offset that
/// segment starts at: the primordial segment (0), or the client segment
/// its first offset lies in, held registered while `f` runs. `None` if
/// it names a client segment not open here.
fn in_addressed_segment<R>(
    tok: &Token<'_>,
    msg: &Message<'_>,
    f: impl FnOnce(&Segment, u64) -> Option<R>,
) -> Option<R> {
    let ep = tok.endpoint();
    let first = first_offset(msg)?;
    if first < rgex_endpoint::CLIENT_SEGMENT_STRIDE {
        return f(ep.segment(), 0);
    }
    // SAFETY: `f` uses the view inside this call only (it is the
    // unpacking or answering below, which keeps no pointer).
    unsafe { ep.with_client_segment(first, f) }.ok().flatten()
}

/// Unpack a put into the segment it addresses; `None` if malformed or
/// outside.
fn unpack_put(tok: &Token<'_>, msg: &Message<'_>) -> Option<()> {
    in_addressed_segment(tok, msg, |seg, shift| unpack_put_in(seg, shift, msg))
}

/// Unpack a put into `seg`, which starts at offset `shift` of this rank's
/// address space.
fn unpack_put_in(seg: &Segment, shift: u64, msg: &Message<'_>) -> Option<()> {
    let b = msg.payload();
    match *msg.args().get(2)? {
        STRIDED => {
            let mut h = parse_strided(b)?;
            h.base = h.base.checked_sub(shift)?;
            let data = b.get(h.b.len()..h.b.len().checked_add(h.data_len()?)?)?;
            if !strided_in_segment(seg, &h) {
                return None;
            }
            // SAFETY: every element of the nest is inside this segment
            // (checked) and the source is the message payload, addressed
            // from `start` (n elements present, checked).
            with_loops(h.nd, h.loops(false), |loops| unsafe {
                copy_range(
                    h.elem,
                    loops,
                    data.as_ptr().wrapping_sub(h.start as usize * h.elem),
                    seg.as_ptr().add(h.base as usize),
                    h.start,
                    h.n,
                )
            });
            Some(())
        }
        RUNS => {
            let mut at = 0;
            while at < b.len() {
                let off = rd64(b, at)?.checked_sub(shift)?;
                let n = rd32(b, at + 8)? as usize;
                let data = b.get(at + RUN_HDR..at + RUN_HDR + n)?;
                seg.write(off, data).ok()?;
                at += RUN_HDR + n;
            }
            Some(())
        }
        _ => None,
    }
}

/// Answer a get by packing into an NP reply buffer; `None` if malformed.
fn answer_get(tok: &Token<'_>, msg: &Message<'_>, h: ProtocolId) -> Option<()> {
    in_addressed_segment(tok, msg, |seg, shift| {
        answer_get_in(tok, seg, shift, msg, h)
    })
}

/// Answer a get from `seg`, which starts at offset `shift`.
fn answer_get_in(
    tok: &Token<'_>,
    seg: &Segment,
    shift: u64,
    msg: &Message<'_>,
    h: ProtocolId,
) -> Option<()> {
    let b = msg.payload();
    let a = msg.args();
    let args = [a[0], a[1], ST_OK];
    match *a.get(2)? {
        STRIDED => {
            let mut hd = parse_strided(b)?;
            hd.base = hd.base.checked_sub(shift)?;
            let len = hd.data_len()?;
            if !strided_in_segment(seg, &hd) {
                return None;
            }
            let mut sd = tok
                .prepare_reply_medium(None, len, len, NARGS, Flags::empty())
                .ok()?;
            let out = sd.buf().as_mut_ptr();
            // SAFETY: the nest is inside this segment (checked); the
            // reply buffer holds `len` bytes, addressed from `start`.
            with_loops(hd.nd, hd.loops(true), |loops| unsafe {
                copy_range(
                    hd.elem,
                    loops,
                    seg.as_ptr().add(hd.base as usize),
                    out.wrapping_sub(hd.start as usize * hd.elem),
                    hd.start,
                    hd.n,
                )
            });
            sd.commit(h, &args, len).ok()
        }
        RUNS => {
            let mut pieces = Vec::with_capacity(b.len() / RUN_HDR);
            let mut len = 0usize;
            for at in (0..b.len() / RUN_HDR * RUN_HDR).step_by(RUN_HDR) {
                let (off, n) = (rd64(b, at)?.checked_sub(shift)?, rd32(b, at + 8)?);
                let p = seg.ptr_at(off, n as usize).ok()?;
                pieces.push((p, n as usize));
                len += n as usize;
            }
            let mut sd = tok
                .prepare_reply_medium(None, len, len, NARGS, Flags::empty())
                .ok()?;
            let buf = sd.buf();
            let mut at = 0;
            for (p, n) in pieces {
                // SAFETY: `p..p+n` is inside this segment (checked); the
                // reply buffer holds the sum of the pieces.
                unsafe { std::ptr::copy_nonoverlapping(p, buf[at..].as_mut_ptr(), n) };
                at += n;
            }
            sd.commit(h, &args, len).ok()
        }
        _ => None,
    }
}
