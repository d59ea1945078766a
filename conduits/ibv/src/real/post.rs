//! Posts and polls: verbs.h's inline `ibv_post_send`, `ibv_post_recv`,
//! `ibv_post_srq_recv` and `ibv_poll_cq`, which call the provider
//! through the context's ops table (`qp->context->ops.post_send`), done
//! the same way; and the translation of work requests and completions
//! between the trait's types and verbs' structs.

use std::ffi::c_int;

use super::abi::{
    wc_opcode, wr_opcode, IbvAtomic, IbvContext, IbvContextOps, IbvRdma, IbvRecvWr, IbvSendWr,
    IbvSendWrWr, IbvSge, IbvWc, IBV_WC_WITH_IMM,
};
use super::errno::rc_errno;
use super::objects::{Cq, Qp, Srq};
use crate::verbs::{
    Opcode, RecvWr, SendFlags, SendWr, Sge, VerbsError, VerbsResult, Wc, WcOpcode, WcStatus,
};

/// Completions read per provider call.
const POLL_BATCH: usize = 32;

/// The ops table of the context an object was created on.
///
/// # Safety
/// `ctx` is a live context returned by `ibv_open_device`.
unsafe fn ops<'a>(ctx: *mut IbvContext) -> &'a IbvContextOps {
    // SAFETY: a live context (caller); the ops table is filled at open
    // and not changed afterwards.
    unsafe { &(*ctx).ops }
}

/// The verbs `ibv_sge` of `sge`.
fn sge_of(sge: &Sge) -> IbvSge {
    IbvSge {
        addr: sge.addr,
        length: sge.length,
        lkey: sge.lkey,
    }
}

/// `wr` as verbs' `ibv_send_wr`, its list pointing at `sge`.
pub(crate) fn send_wr_of(wr: &SendWr, sge: &mut IbvSge) -> IbvSendWr {
    let mut v = IbvSendWr::zeroed();
    v.wr_id = wr.wr_id;
    v.send_flags = wr.flags.bits();
    if wr.sge.length > 0 {
        v.sg_list = sge;
        v.num_sge = 1;
    }
    let rdma = IbvSendWrWr {
        rdma: IbvRdma {
            remote_addr: wr.remote.addr,
            rkey: wr.remote.rkey,
        },
    };
    let atomic = |compare_add, swap| IbvSendWrWr {
        atomic: IbvAtomic {
            remote_addr: wr.remote.addr,
            compare_add,
            swap,
            rkey: wr.remote.rkey,
        },
    };
    match wr.opcode {
        Opcode::RdmaWrite => {
            v.opcode = wr_opcode::RDMA_WRITE;
            v.wr = rdma;
        }
        Opcode::RdmaWriteWithImm { imm } => {
            v.opcode = wr_opcode::RDMA_WRITE_WITH_IMM;
            v.imm_data = imm.to_be();
            v.wr = rdma;
        }
        Opcode::Send => v.opcode = wr_opcode::SEND,
        Opcode::SendWithImm { imm } => {
            v.opcode = wr_opcode::SEND_WITH_IMM;
            v.imm_data = imm.to_be();
        }
        Opcode::RdmaRead => {
            v.opcode = wr_opcode::RDMA_READ;
            v.wr = rdma;
        }
        Opcode::AtomicCmpAndSwp { compare, swap } => {
            v.opcode = wr_opcode::ATOMIC_CMP_AND_SWP;
            v.wr = atomic(compare, swap);
        }
        Opcode::AtomicFetchAndAdd { add } => {
            v.opcode = wr_opcode::ATOMIC_FETCH_AND_ADD;
            v.wr = atomic(add, 0);
        }
    }
    v
}

/// Post one send work request through the ops table.
///
/// # Safety
/// As [`crate::verbs::Verbs::post_send`].
pub(crate) unsafe fn post_send(qp: &Qp, wr: &SendWr) -> VerbsResult<()> {
    if wr.flags.contains(SendFlags::INLINE) && wr.sge.length > qp.caps.max_inline_data {
        return Err(VerbsError::call(
            "ibv_post_send",
            libc::EINVAL,
            format!(
                "QP {:#x}: inline payload of {} bytes over the QP's max_inline_data {}",
                qp.qp_num, wr.sge.length, qp.caps.max_inline_data
            ),
        ));
    }
    let mut sge = sge_of(&wr.sge);
    let mut v = send_wr_of(wr, &mut sge);
    let mut bad: *mut IbvSendWr = std::ptr::null_mut();
    // SAFETY: the QP is live and so is its context.
    let f = unsafe { ops(qp.pd.ctx.raw.as_ptr()) }.post_send;
    let Some(f) = f else {
        return Err(unsupported("ibv_post_send", qp.qp_num));
    };
    // SAFETY: a live QP, a one-element list on the stack (the provider
    // copies it before returning), and the SGE's memory valid until
    // completion (caller's contract).
    let rc = unsafe { f(qp.raw.as_ptr(), &mut v, &mut bad) };
    if rc != 0 {
        return Err(VerbsError::call(
            "ibv_post_send",
            rc_errno(rc),
            format!(
                "QP {:#x}: {:?} of {} bytes, wr_id {}",
                qp.qp_num, wr.opcode, wr.sge.length, wr.wr_id
            ),
        ));
    }
    Ok(())
}

/// A provider without the verb in its ops table.
fn unsupported(verb: &'static str, qp_num: u32) -> VerbsError {
    VerbsError::call(
        verb,
        libc::EOPNOTSUPP,
        format!("QP {qp_num:#x}: the provider has no {verb} in its ops table"),
    )
}

/// `wr` as verbs' `ibv_recv_wr`, its list pointing at `sge`.
fn recv_wr_of(wr: &RecvWr, sge: &mut IbvSge) -> IbvRecvWr {
    IbvRecvWr {
        wr_id: wr.wr_id,
        next: std::ptr::null_mut(),
        sg_list: if wr.sge.length > 0 {
            sge
        } else {
            std::ptr::null_mut()
        },
        num_sge: c_int::from(wr.sge.length > 0),
    }
}

/// Post one receive on a QP without an SRQ.
///
/// # Safety
/// As [`crate::verbs::Verbs::post_recv`].
pub(crate) unsafe fn post_recv(qp: &Qp, wr: &RecvWr) -> VerbsResult<()> {
    if qp.srq.is_some() {
        return Err(VerbsError::call(
            "ibv_post_recv",
            libc::EINVAL,
            format!("QP {:#x} receives from an SRQ: post to the SRQ", qp.qp_num),
        ));
    }
    let mut sge = sge_of(&wr.sge);
    let mut v = recv_wr_of(wr, &mut sge);
    let mut bad: *mut IbvRecvWr = std::ptr::null_mut();
    // SAFETY: the QP is live and so is its context.
    let Some(f) = (unsafe { ops(qp.pd.ctx.raw.as_ptr()) }).post_recv else {
        return Err(unsupported("ibv_post_recv", qp.qp_num));
    };
    // SAFETY: a live QP, a one-element list on the stack, the buffer
    // valid until the receive completes (caller's contract).
    let rc = unsafe { f(qp.raw.as_ptr(), &mut v, &mut bad) };
    if rc != 0 {
        return Err(VerbsError::call(
            "ibv_post_recv",
            rc_errno(rc),
            format!(
                "QP {:#x}: {} bytes, wr_id {}",
                qp.qp_num, wr.sge.length, wr.wr_id
            ),
        ));
    }
    Ok(())
}

/// Post one receive on an SRQ.
///
/// # Safety
/// As [`crate::verbs::Verbs::post_srq_recv`].
pub(crate) unsafe fn post_srq_recv(srq: &Srq, wr: &RecvWr) -> VerbsResult<()> {
    let mut sge = sge_of(&wr.sge);
    let mut v = recv_wr_of(wr, &mut sge);
    let mut bad: *mut IbvRecvWr = std::ptr::null_mut();
    // SAFETY: the SRQ is live and so is its context.
    let Some(f) = (unsafe { ops(srq.0.pd.ctx.raw.as_ptr()) }).post_srq_recv else {
        return Err(VerbsError::call(
            "ibv_post_srq_recv",
            libc::EOPNOTSUPP,
            "the provider has no post_srq_recv in its ops table",
        ));
    };
    // SAFETY: a live SRQ, a one-element list on the stack, the buffer
    // valid until the receive completes (caller's contract).
    let rc = unsafe { f(srq.0.raw.as_ptr(), &mut v, &mut bad) };
    if rc != 0 {
        return Err(VerbsError::call(
            "ibv_post_srq_recv",
            rc_errno(rc),
            format!(
                "SRQ of {} receives: {} bytes, wr_id {}",
                srq.0.max_wr, wr.sge.length, wr.wr_id
            ),
        ));
    }
    Ok(())
}

/// Poll up to `out.len()` completions (at most [`POLL_BATCH`] a call).
pub(crate) fn poll_cq(cq: &Cq, out: &mut [Wc]) -> VerbsResult<usize> {
    let mut wcs = [IbvWc::default(); POLL_BATCH];
    let n = out.len().min(POLL_BATCH);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: the CQ is live and so is its context.
    let Some(f) = (unsafe { ops(cq.0.ctx.raw.as_ptr()) }).poll_cq else {
        return Err(VerbsError::call(
            "ibv_poll_cq",
            libc::EOPNOTSUPP,
            "the provider has no poll_cq in its ops table",
        ));
    };
    // SAFETY: a live CQ and room for `n` completions (n <= POLL_BATCH).
    let got = unsafe { f(cq.0.raw.as_ptr(), n as c_int, wcs.as_mut_ptr()) };
    if got < 0 {
        return Err(VerbsError::call(
            "ibv_poll_cq",
            rc_errno(got),
            format!(
                "CQ of {} entries: the CQ is in error (an overrun, or a fatal device error)",
                cq.0.depth
            ),
        ));
    }
    let got = (got as usize).min(n);
    for (o, w) in out.iter_mut().zip(&wcs[..got]) {
        *o = wc_of(w)?;
    }
    Ok(got)
}

/// The trait's completion of verbs' `w`.
pub(crate) fn wc_of(w: &IbvWc) -> VerbsResult<Wc> {
    let status = WcStatus::from_code(w.status);
    let opcode = match w.opcode {
        wc_opcode::SEND => WcOpcode::Send,
        wc_opcode::RDMA_WRITE => WcOpcode::RdmaWrite,
        wc_opcode::RDMA_READ => WcOpcode::RdmaRead,
        wc_opcode::COMP_SWAP => WcOpcode::CompSwap,
        wc_opcode::FETCH_ADD => WcOpcode::FetchAdd,
        wc_opcode::RECV => WcOpcode::Recv,
        wc_opcode::RECV_RDMA_WITH_IMM => WcOpcode::RecvRdmaWithImm,
        // The opcode of a failed completion is undefined (verbs.h).
        _ if status != WcStatus::Success => WcOpcode::Send,
        other => {
            return Err(VerbsError::call(
                "ibv_poll_cq",
                libc::EPROTO,
                format!(
                    "completion of wr_id {} on QP {:#x} has opcode {other}, which rgex never posts",
                    w.wr_id, w.qp_num
                ),
            ));
        }
    };
    Ok(Wc {
        wr_id: w.wr_id,
        status,
        opcode,
        byte_len: w.byte_len,
        imm: (status == WcStatus::Success && w.wc_flags & IBV_WC_WITH_IMM != 0)
            .then(|| u32::from_be(w.imm_data)),
        qp_num: w.qp_num,
        src_qp: w.src_qp,
        vendor_err: w.vendor_err,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs::RemoteAddr;

    fn wr(opcode: Opcode, length: u32) -> SendWr {
        SendWr {
            wr_id: 42,
            opcode,
            flags: SendFlags::SIGNALED | SendFlags::FENCE,
            sge: Sge {
                addr: 0x1000,
                length,
                lkey: 5,
            },
            remote: RemoteAddr {
                addr: 0x2000,
                rkey: 6,
            },
        }
    }

    #[test]
    fn send_with_imm_is_big_endian_and_carries_the_sge() {
        let w = wr(Opcode::SendWithImm { imm: 0x0102_0304 }, 8);
        let mut sge = sge_of(&w.sge);
        let v = send_wr_of(&w, &mut sge);
        assert_eq!((v.opcode, v.num_sge, v.wr_id), (3, 1, 42));
        assert_eq!(v.imm_data.to_ne_bytes(), [1, 2, 3, 4]);
        assert_eq!(v.send_flags, 2 | 1);
        assert_eq!(v.sg_list, &mut sge as *mut IbvSge);
        assert!(v.next.is_null());
    }

    #[test]
    fn rdma_and_atomics_fill_their_union() {
        let mut sge = IbvSge::default();
        let v = send_wr_of(&wr(Opcode::RdmaRead, 16), &mut sge);
        assert_eq!(v.opcode, 4);
        // SAFETY: the rdma member was written for RDMA_READ.
        let r = unsafe { v.wr.rdma };
        assert_eq!((r.remote_addr, r.rkey), (0x2000, 6));
        let v = send_wr_of(
            &wr(
                Opcode::AtomicCmpAndSwp {
                    compare: 7,
                    swap: 9,
                },
                8,
            ),
            &mut sge,
        );
        // SAFETY: the atomic member was written for CMP_AND_SWP.
        let a = unsafe { v.wr.atomic };
        assert_eq!(
            (v.opcode, a.remote_addr, a.compare_add, a.swap, a.rkey),
            (5, 0x2000, 7, 9, 6)
        );
        let v = send_wr_of(&wr(Opcode::AtomicFetchAndAdd { add: 3 }, 8), &mut sge);
        // SAFETY: the atomic member was written for FETCH_AND_ADD.
        let a = unsafe { v.wr.atomic };
        assert_eq!((v.opcode, a.compare_add, a.rkey), (6, 3, 6));
    }

    #[test]
    fn an_empty_sge_posts_no_list() {
        let mut sge = IbvSge::default();
        let v = send_wr_of(&wr(Opcode::Send, 0), &mut sge);
        assert_eq!((v.num_sge, v.sg_list), (0, std::ptr::null_mut()));
    }

    #[test]
    fn completions_translate_with_their_immediate() {
        let w = IbvWc {
            wr_id: 9,
            status: 0,
            opcode: wc_opcode::RECV,
            byte_len: 64,
            imm_data: 0xabcd_u32.to_be(),
            qp_num: 3,
            src_qp: 4,
            wc_flags: IBV_WC_WITH_IMM,
            ..IbvWc::default()
        };
        let c = wc_of(&w).unwrap();
        assert_eq!(
            (c.wr_id, c.status, c.opcode, c.byte_len, c.imm, c.src_qp),
            (9, WcStatus::Success, WcOpcode::Recv, 64, Some(0xabcd), 4)
        );
        let flushed = wc_of(&IbvWc {
            status: WcStatus::WrFlushErr.code(),
            opcode: 0xff,
            ..w
        })
        .unwrap();
        assert_eq!((flushed.status, flushed.imm), (WcStatus::WrFlushErr, None));
        assert!(wc_of(&IbvWc { opcode: 0xff, ..w }).is_err());
    }
}
