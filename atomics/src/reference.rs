//! The reference implementation: an atomic op is one Short request to the
//! target, whose handler applies the CPU atomic on its own segment and
//! answers with a Short reply carrying the old value.
//!
//! Request arguments: `[id_lo, id_hi, code, off_lo, off_hi, a_lo, a_hi,
//! b_lo, b_hi]`, `code` = type (bits 0..3) | op (3..8) | ACQUIRE (8) |
//! RELEASE (9). Reply: `[id_lo, id_hi, status, old_lo, old_hi]`.
//!
//! Ops in flight are kept in a table keyed by a 64-bit id, as in the RMA
//! reference, so the reply finds its completion counter and result slot
//! whichever thread runs it. One table per endpoint, shared by every
//! domain on it; the handlers are registered when the first domain over
//! the endpoint is created (before the creation's collective, so no member
//! can send before every member has them).

use crate::{cpu, reserved, Result};
use rgex_core::conduit::{AtomicOp, AtomicType};
use rgex_core::{Category, Flags, GlobalAddr, OpCounter};
use rgex_endpoint::{Accepts, Endpoint, InFlight, ProtocolId};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const ST_OK: u32 = 0;
const ST_OUT_OF_SEGMENT: u32 = 1;
const ST_MISALIGNED: u32 = 2;
const ST_BAD_CODE: u32 = 3;

/// Reference-path state of one endpoint: ops in flight, each with the
/// cell its fetched value goes to (if it fetches).
pub(crate) struct Reference {
    ops: Arc<Ops>,
    /// The op handler's id, to send to.
    op: ProtocolId,
}

/// Ops in flight, each with the cell its fetched value goes to.
type Ops = InFlight<Option<Arc<AtomicU64>>>;

fn split(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

fn join(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | u64::from(hi) << 32
}

pub(crate) fn encode(ty: AtomicType, op: AtomicOp, acquire: bool, release: bool) -> u32 {
    let t = AtomicType::ALL
        .iter()
        .position(|&x| x == ty)
        .expect("every type is in ALL") as u32;
    t | (op as u32) << 3 | u32::from(acquire) << 8 | u32::from(release) << 9
}

fn decode(code: u32) -> Option<(AtomicType, AtomicOp, bool, bool)> {
    let ty = *AtomicType::ALL.get((code & 7) as usize)?;
    let op = AtomicOp::from_u8(((code >> 3) & 31) as u8)?;
    Some((ty, op, code & (1 << 8) != 0, code & (1 << 9) != 0))
}

impl Reference {
    /// This endpoint's state, registering the handlers the first time.
    pub(crate) fn for_endpoint(ep: &Arc<Endpoint>) -> Result<Arc<Self>> {
        ep.extension(|ep| {
            let ops = Arc::default();
            let op = install(ep, &ops)?;
            ep.watch_in_flight("reference atomic", &ops);
            Ok(Arc::new(Reference { ops, op }))
        })
    }

    /// Send op to `at` (not this rank); `done` counts it until the reply.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        &self,
        ep: &Endpoint,
        at: GlobalAddr,
        code: u32,
        a: u64,
        b: u64,
        done: &Arc<OpCounter>,
        value: Option<Arc<AtomicU64>>,
        flags: Flags,
    ) -> Result<()> {
        let [i0, i1] = self.ops.start(at.rank, done, value);
        let [o0, o1] = split(at.offset);
        let [a0, a1] = split(a);
        let [b0, b1] = split(b);
        let r = ep.request_short(
            at.rank,
            self.op,
            &[i0, i1, code, o0, o1, a0, a1, b0, b1],
            flags,
        );
        if let Err(e) = r {
            self.ops.abandon(&[i0, i1]);
            return Err(e);
        }
        Ok(())
    }
}

/// Register the two handlers; returns the op's id, to send to. Each
/// takes only its own shape of message, and a reply finishes only an op
/// sent to the rank that answers.
fn install(ep: &Arc<Endpoint>, ops: &Arc<Ops>) -> Result<ProtocolId> {
    let table = ep.handlers();
    let s = ops.clone();
    let reply = table.register_protocol(
        reserved::AD_REPLY,
        "rgex.atomics.reply",
        Accepts::reply(Category::Short, 5),
        move |tok, msg| {
            let a = msg.args();
            let Some((done, value)) = s.answer(tok, msg) else {
                return;
            };
            if a[2] != ST_OK {
                // The initiator checked range and alignment against the
                // same segment length, so the ranks disagree about the
                // segment (or the target's rgex is another version).
                return done.fail(format!(
                    "atomic op at {} failed at the target (status {}: {})",
                    tok.src(),
                    a[2],
                    match a[2] {
                        ST_OUT_OF_SEGMENT =>
                            "outside the segment (or in a client segment not open there)",
                        ST_MISALIGNED => "misaligned",
                        ST_BAD_CODE => "bad op code",
                        _ => "unknown status",
                    }
                ));
            }
            if let Some(v) = &value {
                // Relaxed: `done()` below is a Release and the waiter's
                // `is_done` an Acquire, which order this store before its
                // read.
                v.store(join(a[3], a[4]), Ordering::Relaxed);
            }
            done.done();
        },
    )?;
    let op = table.register_protocol(
        reserved::AD_OP,
        "rgex.atomics.op",
        Accepts::request(Category::Short, 9),
        move |tok, msg| {
            let a = msg.args();
            let off = join(a[3], a[4]);
            let ep = tok.endpoint();
            let seg = ep.segment();
            let (status, old) = match decode(a[2]) {
                None => (ST_BAD_CODE, 0),
                Some((ty, op, acq, rel)) if off >= rgex_endpoint::CLIENT_SEGMENT_STRIDE => {
                    let applied = ep.with_client_memory(off, ty.size(), |p| {
                        if (p as usize) & (ty.size() - 1) != 0 {
                            return (ST_MISALIGNED, 0);
                        }
                        // SAFETY: `p` is inside this rank's registration
                        // (checked), held open by the lock while the op
                        // runs, and aligned (checked); every op on a client
                        // segment's word comes here, atomically.
                        let old = unsafe {
                            cpu::apply(p, ty, op, join(a[5], a[6]), join(a[7], a[8]), acq, rel)
                        };
                        (ST_OK, old)
                    });
                    applied.unwrap_or((ST_OUT_OF_SEGMENT, 0))
                }
                Some((ty, op, acq, rel)) => match seg.ptr_at(off, ty.size()) {
                    Err(_) => (ST_OUT_OF_SEGMENT, 0),
                    Ok(p) if (p as usize) & (ty.size() - 1) != 0 => (ST_MISALIGNED, 0),
                    Ok(p) => {
                        // SAFETY: `p` is inside this rank's segment
                        // (checked), aligned to the type's size (checked),
                        // and the segment stays mapped for the job; words
                        // of a domain are accessed only atomically (the
                        // domain's contract).
                        let old = unsafe {
                            cpu::apply(p, ty, op, join(a[5], a[6]), join(a[7], a[8]), acq, rel)
                        };
                        (ST_OK, old)
                    }
                },
            };
            let [v0, v1] = split(old);
            if let Err(e) = tok.reply_short(reply, &[a[0], a[1], status, v0, v1], Flags::empty()) {
                tracing::error!(
                    rank = tok.endpoint().rank().0,
                    peer = tok.src().0,
                    offset = off,
                    "atomic op from {} at offset {off:#x} could not reply: {e}",
                    tok.src()
                );
            }
        },
    )?;
    Ok(op)
}
