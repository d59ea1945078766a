//! The reference RMA: put and get over active messages, correct on every
//! conduit. A put is one Long request whose handler acknowledges with a
//! Short reply; a get is one Short request per max-Medium chunk, answered by
//! a Medium reply carrying the bytes.
//!
//! Operations in flight are kept in an [`InFlight`] table, so the reply
//! finds the completion counter (and, for a get, the destination)
//! whichever thread runs it.

use crate::{reserved, Endpoint, HandlerId, HandlerTable, InFlight};
use rgex_core::{Completion, Error, Flags, GlobalAddr, Result};
use std::sync::Arc;

/// Where a get's bytes go (`None` for a put).
struct Dest(*mut u8, usize);

// SAFETY: the pointer names memory the initiator keeps valid until the
// operation's completion counter drops (the raw API's contract, or a buffer
// owned by the event); only the reply handler writes it, once.
unsafe impl Send for Dest {}

/// Operations in flight on the reference path.
#[derive(Default)]
pub(crate) struct Reference {
    ops: InFlight<Option<Dest>>,
}

/// Status argument of a get reply.
const GET_OK: u32 = 0;
const GET_OUT_OF_SEGMENT: u32 = 1;

impl Reference {
    /// Register the four handlers at rgex's reserved indices.
    pub(crate) fn install(table: &HandlerTable) -> Result<Arc<Self>> {
        let me = Arc::new(Reference::default());
        table.register_reserved(reserved::RMA_PUT, "rgex.rma.put", |tok, msg| {
            // The payload has landed (Long); acknowledge.
            let _ = tok.reply_short(
                HandlerId(reserved::RMA_ACK),
                &msg.args()[..2],
                Flags::empty(),
            );
        })?;
        let s = me.clone();
        table.register_reserved(reserved::RMA_ACK, "rgex.rma.ack", move |_tok, msg| {
            if let Some((done, _)) = s.ops.finish(msg.args()) {
                done.done();
            }
        })?;
        table.register_reserved(reserved::RMA_GET, "rgex.rma.get", |tok, msg| {
            let a = msg.args();
            let (off, len) = (u64::from(a[2]) | u64::from(a[3]) << 32, a[4] as usize);
            let seg = tok.endpoint().segment();
            let reply = HandlerId(reserved::RMA_GET_REPLY);
            let r = match seg.ptr_at(off, len) {
                // SAFETY: the range is inside this rank's segment (checked);
                // it is read while the reply is assembled, as any RMA read
                // of remotely accessible memory.
                Ok(p) => tok.reply_medium(
                    reply,
                    &[a[0], a[1], GET_OK],
                    unsafe { std::slice::from_raw_parts(p, len) },
                    Flags::empty(),
                ),
                Err(_) => tok.reply_short(reply, &[a[0], a[1], GET_OUT_OF_SEGMENT], Flags::empty()),
            };
            if let Err(e) = r {
                eprintln!(
                    "rgex: {}: reference get from {} could not reply: {e}",
                    tok.endpoint().rank(),
                    tok.src()
                );
            }
        })?;
        let s = me.clone();
        table.register_reserved(reserved::RMA_GET_REPLY, "rgex.rma.get.reply", move |tok, msg| {
            let Some((done, dest)) = s.ops.finish(msg.args()) else { return };
            let data = msg.payload();
            match (&dest, msg.arg(2)) {
                (Some(Dest(dst, len)), GET_OK) if *len == data.len() => {
                    // SAFETY: `dst..dst+len` is the initiator's destination,
                    // valid until `done` drops (see `Dest`), and distinct
                    // from the message buffer.
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), *dst, *len) };
                }
                _ => eprintln!(
                    "rgex: {}: reference get reply from {} was refused (range checked at the initiator, so the segments disagree)",
                    tok.endpoint().rank(),
                    tok.src()
                ),
            }
            done.done();
        })?;
        Ok(me)
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
        let id = self.ops.start(done, None);
        let r = ep.request_long(
            dst.rank,
            HandlerId(reserved::RMA_PUT),
            &id,
            src,
            dst.offset,
            flags,
        );
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
            let [a, b] = self.ops.start(done, Some(Dest(unsafe { dst.add(at) }, n)));
            let off = src.offset + at as u64;
            let args = [a, b, off as u32, (off >> 32) as u32, n as u32];
            if let Err(e) = ep.request_short(src.rank, HandlerId(reserved::RMA_GET), &args, flags) {
                self.ops.abandon(&[a, b]);
                return Err(e);
            }
            at += n;
        }
        Ok(())
    }
}
