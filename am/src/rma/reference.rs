//! The reference RMA: put and get over active messages, correct on every
//! conduit. A put is one Long request whose handler acknowledges with a
//! Short reply; a get is one Short request per max-Medium chunk, answered by
//! a Medium reply carrying the bytes.
//!
//! Operations in flight are kept in an [`InFlight`] table, so the reply
//! finds the completion counter (and, for a get, the destination)
//! whichever thread runs it.

use crate::{reserved, Accepts, Endpoint, HandlerTable, InFlight, ProtocolId};
use rgex_core::{Category, Completion, Error, Flags, GlobalAddr, Result};
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
}

/// Status argument of a get reply.
const GET_OK: u32 = 0;
const GET_OUT_OF_SEGMENT: u32 = 1;
const GET_TOO_LONG: u32 = 2;

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
        let get = table.register_protocol(
            reserved::RMA_GET,
            "rgex.rma.get",
            Accepts::request(Category::Short, 5),
            move |tok, msg| {
                let a = msg.args();
                let (off, len) = (u64::from(a[2]) | u64::from(a[3]) << 32, a[4] as usize);
                let seg = tok.endpoint().segment();
                let id = [a[0], a[1]];
                let r = match seg.ptr_at(off, len) {
                    // SAFETY: the range is inside this rank's segment
                    // (checked); it is read while the reply is assembled,
                    // as any RMA read of remotely accessible memory.
                    Ok(p) if len <= tok.max_reply_medium(3) => tok.reply_medium(
                        get_reply,
                        &[id[0], id[1], GET_OK],
                        unsafe { std::slice::from_raw_parts(p, len) },
                        Flags::empty(),
                    ),
                    Ok(_) => {
                        tok.reply_short(get_reply, &[id[0], id[1], GET_TOO_LONG], Flags::empty())
                    }
                    Err(_) => tok.reply_short(
                        get_reply,
                        &[id[0], id[1], GET_OUT_OF_SEGMENT],
                        Flags::empty(),
                    ),
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
        Ok(Arc::new(Reference { ops, put, get }))
    }

    /// The operations in flight (for [`Endpoint::watch_in_flight`]).
    pub(crate) fn ops(&self) -> &Arc<InFlight<Option<Dest>>> {
        &self.ops
    }

    /// Put `src` to `dst` as one Long request; `done` drops when acknowledged.
    pub(crate) fn put(
        &self,
        ep: &Endpoint,
        dst: GlobalAddr,
        src: &[u8],
        done: &Arc<Completion>,
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
        done: &Arc<Completion>,
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
