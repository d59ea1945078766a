//! The reference RMA: put and get over active messages, correct on every
//! conduit. A put is one Long request whose handler acknowledges with a
//! Short reply; a get is one Short request per max-Medium chunk, answered by
//! a Medium reply carrying the bytes.
//!
//! Into a client segment (see [`crate::client_segment`]), a put is one
//! Medium request per chunk instead (a conduit's Long lands only in the
//! primordial segment), acknowledged with a status; a get is the same as
//! into the primordial segment, the target resolving the offset.
//!
//! Operations in flight are kept in an [`InFlight`] table, so the reply
//! finds the completion counter (and, for a get, the destination)
//! whichever thread runs it.

use crate::{reserved, Accepts, Endpoint, HandlerTable, InFlight, ProtocolId};
use rgex_core::{Category, Error, Flags, GlobalAddr, OpCounter, Result};
use std::sync::Arc;

/// Where a get's bytes go (`None` for a put).
pub(crate) struct Dest(*mut u8, usize);

// SAFETY: the pointer names memory the initiator keeps valid until the
// operation's completion counter drops (the raw API's contract, or a buffer
// owned by the event); only the reply handler writes it, once.
unsafe impl Send for Dest {}

/// Operations in flight on the reference path, and the ids to send to.
pub(crate) struct Reference {
    ops: Arc<InFlight<Option<Dest>>>,
    put: ProtocolId,
    get: ProtocolId,
    client_put: ProtocolId,
}

/// Status argument of a get reply.
const GET_OK: u32 = 0;
const GET_OUT_OF_SEGMENT: u32 = 1;
const GET_TOO_LONG: u32 = 2;
/// Status of a get reply or a client put's acknowledgement: the target
/// has no such client segment open, or not that range of it.
const CLIENT_REFUSED: u32 = 3;
/// Status of a client put's acknowledgement: the bytes landed.
const PUT_OK: u32 = 0;

/// How the initiator describes a target's refusal of a client-segment
/// range (the target checked what it registered; this rank checked the
/// lengths exchanged at registration first, so either the segment was
/// deregistered there meanwhile or the two disagree).
fn client_refusal(what: &str, target: rgex_core::Rank, me: rgex_core::Rank) -> String {
    format!(
        "reference {what} at {me}: {target} refused the range of its client segment (it was \
         deregistered there, or its length differs from what registration exchanged)"
    )
}

impl Reference {
    /// Register the four handlers at rgex's reserved indices. Each takes
    /// only its own shape of message (see [`Accepts`]), and a reply only
    /// finishes an operation sent to the rank that answers.
    pub(crate) fn install(table: &HandlerTable) -> Result<Arc<Self>> {
        let ops: Arc<InFlight<Option<Dest>>> = Arc::default();
        let s = ops.clone();
        let ack = table.register_protocol(
            reserved::RMA_ACK,
            "rgex.rma.ack",
            Accepts::reply(Category::Short, 2),
            move |tok, msg| match s.answer(tok, msg) {
                Some((done, None)) => done.done(),
                // Puts and gets share the table: an acknowledgement
                // naming a get is a peer's mistake, not the get's data.
                Some((done, Some(_))) => {
                    let why = "an acknowledgement naming a get, not a put";
                    tok.malformed(why);
                    done.fail(format!("reference get from {}: {why}", tok.src()));
                }
                None => {}
            },
        )?;
        let put = table.register_protocol(
            reserved::RMA_PUT,
            "rgex.rma.put",
            Accepts::request(Category::Long, 2),
            move |tok, msg| {
                // The payload has landed (Long); acknowledge.
                if let Err(e) = tok.reply_short(ack, msg.args(), Flags::empty()) {
                    tracing::error!(
                        rank = tok.endpoint().rank().0,
                        peer = tok.src().0,
                        "reference put from {} could not be acknowledged: {e}",
                        tok.src()
                    );
                }
            },
        )?;
        let s = ops.clone();
        let get_reply = table.register_protocol(
            reserved::RMA_GET_REPLY,
            "rgex.rma.get.reply",
            Accepts::reply(Category::Medium, 3).or(Category::Short),
            move |tok, msg| {
                let Some((done, dest)) = s.answer(tok, msg) else {
                    return;
                };
                let data = msg.payload();
                match (dest, msg.arg(2)) {
                    (Some(Dest(dst, len)), GET_OK)
                        if msg.category() == Category::Medium && len == data.len() =>
                    {
                        // SAFETY: `dst..dst+len` is the initiator's
                        // destination, valid until `done` drops (see
                        // `Dest`), and distinct from the message buffer.
                        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, len) };
                        done.done();
                    }
                    (Some(_), GET_OUT_OF_SEGMENT) => done.fail(format!(
                        "reference get from {} at {}: the target refused the range as outside its segment (checked here first, so the two ranks disagree on its size)",
                        tok.src(),
                        tok.endpoint().rank()
                    )),
                    (Some(_), CLIENT_REFUSED) => {
                        done.fail(client_refusal("get", tok.src(), tok.endpoint().rank()))
                    }
                    (Some(_), GET_TOO_LONG) => done.fail(format!(
                        "reference get from {} at {}: the target could not answer in one Medium reply (the ranks disagree on its size)",
                        tok.src(),
                        tok.endpoint().rank()
                    )),
                    (dest, status) => {
                        let why = format!(
                            "a get reply with status {status}, {} bytes of {} expected",
                            data.len(),
                            dest.map_or(0, |d| d.1)
                        );
                        tok.malformed(&why);
                        done.fail(format!(
                            "reference get from {}: the answer was malformed ({why})",
                            tok.src()
                        ));
                    }
                }
            },
        )?;
        let s = ops.clone();
        let client_ack = table.register_protocol(
            reserved::RMA_CLIENT_ACK,
            "rgex.rma.client.ack",
            Accepts::reply(Category::Short, 3),
            move |tok, msg| match (s.answer(tok, msg), msg.arg(2)) {
                (Some((done, None)), PUT_OK) => done.done(),
                (Some((done, None)), CLIENT_REFUSED) => {
                    done.fail(client_refusal("put", tok.src(), tok.endpoint().rank()))
                }
                (Some((done, _)), status) => {
                    let why = format!(
                        "a client put's acknowledgement with status {status}, or naming a get"
                    );
                    tok.malformed(&why);
                    done.fail(format!("reference put to {}: {why}", tok.src()));
                }
                (None, _) => {}
            },
        )?;
        let client_put = table.register_protocol(
            reserved::RMA_CLIENT_PUT,
            "rgex.rma.client.put",
            Accepts::request(Category::Medium, 4),
            move |tok, msg| {
                let a = msg.args();
                let off = u64::from(a[2]) | u64::from(a[3]) << 32;
                let data = msg.payload();
                let ep = tok.endpoint();
                let landed = ep.client_segments().with_local(ep.rank(), off, data.len(), |p| {
                    // SAFETY: `p..p+len` is inside this rank's registration
                    // (checked), held open by the lock `with_local` holds
                    // for this call; distinct from the message buffer.
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) }
                });
                let status = if landed.is_ok() { PUT_OK } else { CLIENT_REFUSED };
                if let Err(e) = tok.reply_short(client_ack, &[a[0], a[1], status], Flags::empty()) {
                    tracing::error!(
                        rank = ep.rank().0,
                        peer = tok.src().0,
                        "reference put from {} into a client segment could not be acknowledged: {e}",
                        tok.src()
                    );
                }
            },
        )?;
        let get = table.register_protocol(
            reserved::RMA_GET,
            "rgex.rma.get",
            Accepts::request(Category::Short, 5),
            move |tok, msg| {
                let a = msg.args();
                let (off, len) = (u64::from(a[2]) | u64::from(a[3]) << 32, a[4] as usize);
                let ep = tok.endpoint();
                let id = [a[0], a[1]];
                // The bytes at `p`, or "too long" when they do not fit one
                // Medium reply.
                let answer = |p: *mut u8| {
                    if len <= tok.max_reply_medium(3) {
                        // SAFETY: `p..p+len` is inside this rank's segment,
                        // or its client registration held open by
                        // `with_local`'s lock while the reply copies it out
                        // (both checked by the callers below); read as any
                        // RMA read of remotely accessible memory.
                        let bytes = unsafe { std::slice::from_raw_parts(p, len) };
                        tok.reply_medium(get_reply, &[id[0], id[1], GET_OK], bytes, Flags::empty())
                    } else {
                        tok.reply_short(get_reply, &[id[0], id[1], GET_TOO_LONG], Flags::empty())
                    }
                };
                let refuse =
                    |status| tok.reply_short(get_reply, &[id[0], id[1], status], Flags::empty());
                let r = if crate::client_segment::segment_of(off).is_some() {
                    ep.client_segments()
                        .with_local(ep.rank(), off, len, answer)
                        .unwrap_or_else(|_| refuse(CLIENT_REFUSED))
                } else {
                    match ep.segment().ptr_at(off, len) {
                        Ok(p) => answer(p),
                        Err(_) => refuse(GET_OUT_OF_SEGMENT),
                    }
                };
                if let Err(e) = r {
                    tracing::error!(
                        rank = tok.endpoint().rank().0,
                        peer = tok.src().0,
                        "reference get from {} could not reply: {e}",
                        tok.src()
                    );
                }
            },
        )?;
        Ok(Arc::new(Reference {
            ops,
            put,
            get,
            client_put,
        }))
    }

    /// The operations in flight (for [`Endpoint::watch_in_flight`]).
    pub(crate) fn ops(&self) -> &Arc<InFlight<Option<Dest>>> {
        &self.ops
    }

    /// Put `src` into a client segment at `dst`, one Medium request per
    /// chunk; `done` drops when every chunk is acknowledged.
    pub(crate) fn put_client(
        &self,
        ep: &Endpoint,
        dst: GlobalAddr,
        src: &[u8],
        done: &Arc<OpCounter>,
        flags: Flags,
    ) -> Result<()> {
        let chunk = ep.max_medium(dst.rank, 4);
        if flags.contains(Flags::IMMEDIATE) && src.len() > chunk {
            return Err(Error::WouldBlock {
                peer: dst.rank,
                resource: "the request queue (an IMMEDIATE put into a client segment is limited to one max-Medium chunk)",
            });
        }
        for (i, piece) in src.chunks(chunk).enumerate() {
            let id = self.ops.start(dst.rank, done, None);
            let off = dst.offset + (i * chunk) as u64;
            let args = [id[0], id[1], off as u32, (off >> 32) as u32];
            if let Err(e) = ep.request_medium(dst.rank, self.client_put, &args, piece, flags) {
                self.ops.abandon(&id);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Put `src` to `dst` as one Long request; `done` drops when acknowledged.
    pub(crate) fn put(
        &self,
        ep: &Endpoint,
        dst: GlobalAddr,
        src: &[u8],
        done: &Arc<OpCounter>,
        flags: Flags,
    ) -> Result<()> {
        let id = self.ops.start(dst.rank, done, None);
        let r = ep.request_long(dst.rank, self.put, &id, src, dst.offset, flags);
        if r.is_err() {
            self.ops.abandon(&id);
        }
        r
    }

    /// Get `len` bytes from `src` into `dst`, one request per chunk.
    ///
    /// # Safety
    /// `dst..dst+len` must stay valid and untouched until `done` drops.
    pub(crate) unsafe fn get(
        &self,
        ep: &Endpoint,
        dst: *mut u8,
        len: usize,
        src: GlobalAddr,
        done: &Arc<OpCounter>,
        flags: Flags,
    ) -> Result<()> {
        let chunk = ep.max_medium(src.rank, 3);
        if flags.contains(Flags::IMMEDIATE) && len > chunk {
            // All or nothing would need every chunk's queue slot at once.
            return Err(Error::WouldBlock {
                peer: src.rank,
                resource: "the request queue (an IMMEDIATE reference get is limited to one max-Medium chunk)",
            });
        }
        let mut at = 0;
        while at < len {
            let n = chunk.min(len - at);
            // SAFETY: at + n <= len, inside the caller's destination.
            let [a, b] = self
                .ops
                .start(src.rank, done, Some(Dest(unsafe { dst.add(at) }, n)));
            let off = src.offset + at as u64;
            let args = [a, b, off as u32, (off >> 32) as u32, n as u32];
            if let Err(e) = ep.request_short(src.rank, self.get, &args, flags) {
                self.ops.abandon(&[a, b]);
                return Err(e);
            }
            at += n;
        }
        Ok(())
    }
}
