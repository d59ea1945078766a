//! The responder side of a QP: receives, and the requests that arrive
//! from the peer, checked and performed on this process's memory.

use super::packet::*;
use super::progress::Shared;
use super::qp::{Qp, Rx, ATOMIC_CACHE};
use crate::verbs::{Access, QpState, RecvWr, VerbsError, VerbsResult, WcOpcode, WcStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// `ibv_post_recv` on a QP without an SRQ.
pub(crate) fn post_recv(qp: &mut Qp, sh: &mut Shared, wr: &RecvWr) -> VerbsResult<()> {
    const VERB: &str = "ibv_post_recv";
    if qp.srq.is_some() {
        return Err(VerbsError::call(
            VERB,
            libc::EINVAL,
            format!("QP {} receives from an SRQ: post there", qp.qpn),
        ));
    }
    match qp.state {
        QpState::Reset => Err(VerbsError::call(
            VERB,
            libc::EINVAL,
            format!("QP {} is in RESET: receives need INIT or later", qp.qpn),
        )),
        QpState::Err => {
            let wc = qp.wc(wr.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv);
            sh.cqs.push(qp.recv_cq, wc);
            Ok(())
        }
        _ if qp.rq.post(*wr) => Ok(()),
        _ => Err(VerbsError::call(
            VERB,
            libc::ENOMEM,
            format!(
                "receive queue of QP {} is full ({} receives posted)",
                qp.qpn, qp.rq.max
            ),
        )),
    }
}

fn nak(qp: &mut Qp, sh: &Shared, syndrome: u8, now: Instant) {
    qp.nak_sent = true;
    let h = PktHdr {
        kind: K_NAK,
        syndrome,
        psn: qp.epsn,
        aux: u32::from(qp.min_rnr_timer),
        ..PktHdr::default()
    };
    qp.emit(h, Vec::new(), sh.faults.ready_at(now));
}

/// A request the responder cannot perform (remote access error, invalid
/// request): NAK it, then move to ERR, as an RC responder does (IB's
/// class C errors; the QP's outstanding work then flushes).
fn fatal(qp: &mut Qp, sh: &mut Shared, syndrome: u8, now: Instant) {
    nak(qp, sh, syndrome, now);
    qp.enter_err(&mut sh.cqs);
}

/// On the UDP wire, a message's packets are acknowledged every this many
/// PSNs before its last.
const MID_ACK: u32 = 16;

fn ack(qp: &mut Qp, sh: &Shared, psn: u32, now: Instant) {
    let h = PktHdr {
        kind: K_ACK,
        psn,
        ..PktHdr::default()
    };
    qp.emit(h, Vec::new(), sh.faults.ready_at(now));
}

/// Take a receive for an arriving message, from the SRQ or the QP's queue.
fn take_recv(qp: &mut Qp, sh: &mut Shared) -> Option<RecvWr> {
    match qp.srq {
        Some(id) => sh.srqs.get_mut(&id)?.rq.q.pop_front(),
        None => qp.rq.q.pop_front(),
    }
}

/// Complete a receive that failed, then move the QP to ERR.
fn fail_recv(qp: &mut Qp, sh: &mut Shared, r: RecvWr, st: WcStatus, syndrome: u8, now: Instant) {
    let wc = qp.wc(r.wr_id, st, WcOpcode::Recv);
    sh.cqs.push(qp.recv_cq, wc);
    fatal(qp, sh, syndrome, now);
}

/// Whether the QP and the region `rkey` grant `need` on `addr .. + len`.
fn remote_ok(qp: &Qp, sh: &Shared, h: &PktHdr, len: u64, need: Access) -> bool {
    len == 0 || (qp.access.contains(need) && sh.mrs.check(h.rkey, qp.pd, h.raddr, len, need))
}

/// A request packet from the peer.
pub(crate) fn on_request(qp: &mut Qp, sh: &mut Shared, h: &PktHdr, payload: &[u8], now: Instant) {
    if !matches!(qp.state, QpState::Rtr | QpState::Rts) {
        return;
    }
    let d = psn_diff(h.psn, qp.epsn);
    if d < 0 {
        duplicate(qp, sh, h, now);
        return;
    }
    if d > 0 {
        // A packet before it was lost: ask once for a resend from epsn,
        // and drop what follows until it comes.
        if !qp.nak_sent {
            nak(qp, sh, NAK_SEQ, now);
        }
        return;
    }
    qp.nak_sent = false;
    match h.op {
        OP_SEND | OP_WRITE => message(qp, sh, h, payload, now),
        OP_READ => {
            if !remote_ok(qp, sh, h, u64::from(h.total_len), Access::REMOTE_READ) {
                fatal(qp, sh, NAK_REM_ACCESS, now);
                return;
            }
            qp.epsn = psn_add(qp.epsn, 1);
            read_response(qp, sh, h, now);
        }
        OP_CAS | OP_FADD => {
            if !h.raddr.is_multiple_of(8) {
                fatal(qp, sh, NAK_REM_INV, now);
                return;
            }
            if !remote_ok(qp, sh, h, 8, Access::REMOTE_ATOMIC) {
                fatal(qp, sh, NAK_REM_ACCESS, now);
                return;
            }
            // SAFETY: the rkey check put raddr .. raddr + 8 in a region
            // registered for remote atomics, kept allocated by reg_mr's
            // contract; raddr is 8-aligned (checked above).
            let word = unsafe { AtomicU64::from_ptr(h.raddr as *mut u64) };
            // AcqRel: a read-modify-write is atomic against every other
            // atomic on the word whatever its ordering (that is what an HCA
            // promises); Acquire/Release also order it after the RDMA
            // writes this engine performed before it, as the QP's in-order
            // delivery requires.
            let orig = if h.op == OP_CAS {
                match word.compare_exchange(h.a, h.b, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(v) | Err(v) => v,
                }
            } else {
                word.fetch_add(h.a, Ordering::AcqRel)
            };
            if qp.atomic_cache.len() == ATOMIC_CACHE {
                qp.atomic_cache.pop_front();
            }
            qp.atomic_cache.push_back((h.psn, orig));
            qp.epsn = psn_add(qp.epsn, 1);
            atomic_response(qp, sh, h.psn, orig, now);
        }
        _ => fatal(qp, sh, NAK_REM_INV, now),
    }
}

/// A packet of a SEND or RDMA WRITE, in sequence.
fn message(qp: &mut Qp, sh: &mut Shared, h: &PktHdr, payload: &[u8], now: Instant) {
    let is_write = h.op == OP_WRITE;
    let imm = (h.flags & F_IMM != 0).then_some(h.imm);
    if h.flags & F_FIRST != 0 {
        if is_write && !remote_ok(qp, sh, h, u64::from(h.total_len), Access::REMOTE_WRITE) {
            fatal(qp, sh, NAK_REM_ACCESS, now);
            return;
        }
        let recv = if !is_write || imm.is_some() {
            let Some(r) = take_recv(qp, sh) else {
                nak(qp, sh, NAK_RNR, now);
                return;
            };
            if !is_write {
                if h.total_len > r.sge.length {
                    fail_recv(qp, sh, r, WcStatus::LocLenErr, NAK_REM_INV, now);
                    return;
                }
                let len = u64::from(h.total_len);
                if !sh
                    .mrs
                    .check(r.sge.lkey, qp.pd, r.sge.addr, len, Access::LOCAL_WRITE)
                {
                    fail_recv(qp, sh, r, WcStatus::LocProtErr, NAK_REM_OP, now);
                    return;
                }
            }
            Some(r)
        } else {
            None
        };
        qp.rx = Some(Rx {
            recv,
            waddr: h.raddr,
            total: h.total_len,
            imm,
            is_write,
        });
    }
    let Some(rx) = qp.rx.as_ref() else {
        fatal(qp, sh, NAK_REM_INV, now);
        return;
    };
    let end = u64::from(h.offset) + payload.len() as u64;
    if rx.is_write != is_write || end > u64::from(rx.total) {
        fatal(qp, sh, NAK_REM_INV, now);
        return;
    }
    let base = match (&rx.recv, is_write) {
        (_, true) => rx.waddr,
        (Some(r), false) => r.sge.addr,
        (None, false) => {
            fatal(qp, sh, NAK_REM_INV, now);
            return;
        }
    };
    if !payload.is_empty() {
        // SAFETY: at the message's first packet the target range (the
        // rkey's region for a WRITE, the receive's lkey region for a SEND)
        // was checked to hold offset + len <= total bytes, and its region
        // stays registered (reg_mr's contract) while the peer may use it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                payload.as_ptr(),
                (base + u64::from(h.offset)) as *mut u8,
                payload.len(),
            )
        };
    }
    qp.epsn = psn_add(qp.epsn, 1);
    if h.flags & F_LAST == 0 && sh.udp.is_some() && h.psn % MID_ACK == MID_ACK - 1 {
        // The UDP wire loses packets: acknowledge long messages as they
        // arrive, so a resend after a loss starts here, not at the
        // message's first packet (see `requester::mid_ack`).
        ack(qp, sh, h.psn, now);
    }
    if h.flags & F_LAST != 0 {
        let rx = qp.rx.take().expect("checked above");
        if let Some(r) = rx.recv {
            let op = if is_write {
                WcOpcode::RecvRdmaWithImm
            } else {
                WcOpcode::Recv
            };
            let mut wc = qp.wc(r.wr_id, WcStatus::Success, op);
            wc.byte_len = rx.total;
            wc.imm = rx.imm;
            wc.src_qp = h.src_qpn;
            sh.cqs.push(qp.recv_cq, wc);
        }
        ack(qp, sh, h.psn, now);
    }
}

/// A request the responder already performed: answer it again.
fn duplicate(qp: &mut Qp, sh: &mut Shared, h: &PktHdr, now: Instant) {
    match h.op {
        OP_SEND | OP_WRITE if h.flags & F_LAST != 0 => {
            let last = psn_add(qp.epsn, PSN_MASK);
            ack(qp, sh, last, now);
        }
        OP_READ if remote_ok(qp, sh, h, u64::from(h.total_len), Access::REMOTE_READ) => {
            read_response(qp, sh, h, now)
        }
        OP_CAS | OP_FADD => {
            if let Some(&(_, orig)) = qp.atomic_cache.iter().find(|(p, _)| *p == h.psn) {
                atomic_response(qp, sh, h.psn, orig, now);
            }
        }
        _ => {}
    }
}

/// Send the READ's data in MTU segments.
/// The responses to a READ of `total_len` bytes at `raddr`, which are the
/// message's bytes from `offset` on (a resent READ asks only for what its
/// requester has not yet received): each response's offset is in the
/// whole message.
fn read_response(qp: &mut Qp, sh: &Shared, h: &PktHdr, now: Instant) {
    let total = h.total_len;
    let base = h.offset;
    let mut off = 0u32;
    loop {
        let n = (total - off).min(qp.mtu);
        let payload = if n == 0 {
            Vec::new()
        } else {
            // SAFETY: the rkey check (REMOTE_READ) put raddr .. + total in a
            // registered region, kept allocated by reg_mr's contract.
            unsafe {
                std::slice::from_raw_parts((h.raddr + u64::from(off)) as *const u8, n as usize)
            }
            .to_vec()
        };
        let last = off + n == total;
        let r = PktHdr {
            kind: K_READ_RESP,
            psn: h.psn,
            offset: base.wrapping_add(off),
            total_len: base.wrapping_add(total),
            flags: if last { F_LAST } else { 0 },
            ..PktHdr::default()
        };
        qp.emit(r, payload, sh.faults.ready_at(now));
        off += n;
        if last {
            break;
        }
    }
}

fn atomic_response(qp: &mut Qp, sh: &Shared, psn: u32, orig: u64, now: Instant) {
    let r = PktHdr {
        kind: K_ATOMIC_RESP,
        psn,
        a: orig,
        ..PktHdr::default()
    };
    qp.emit(r, Vec::new(), sh.faults.ready_at(now));
}
