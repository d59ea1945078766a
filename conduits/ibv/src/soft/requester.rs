//! The requester side of a QP: posting sends, segmenting them into
//! packets, go-back-N retransmission, ACK/NAK and response handling,
//! and the ACK and RNR timers.

use super::ident::pid_alive;
use super::packet::*;
use super::progress::Shared;
use super::qp::{wc_opcode, Qp, SqEntry};
use crate::verbs::{Access, Opcode, QpState, SendFlags, SendWr, VerbsError, VerbsResult, WcStatus};
use std::time::Instant;

/// Request packets queued ahead of the ring at most.
const GEN_AHEAD: usize = 16;

/// `ibv_post_send`'s checks, then queue the request.
///
/// # Safety
/// As [`Verbs::post_send`](crate::verbs::Verbs::post_send).
pub(crate) unsafe fn post_send(qp: &mut Qp, sh: &mut Shared, wr: &SendWr) -> VerbsResult<()> {
    const VERB: &str = "ibv_post_send";
    match qp.state {
        QpState::Rts => {}
        QpState::Err => {
            // As on an HCA: accepted, and completed flushed at once.
            let wc = qp.wc(wr.wr_id, WcStatus::WrFlushErr, wc_opcode(&wr.opcode));
            sh.cqs.push(qp.send_cq, wc);
            return Ok(());
        }
        s => {
            return Err(VerbsError::call(
                VERB,
                libc::EINVAL,
                format!("QP {} is in state {s:?}; sends need RTS", qp.qpn),
            ))
        }
    }
    if qp.sq.len() >= qp.caps.max_send_wr as usize {
        return Err(VerbsError::call(
            VERB,
            libc::ENOMEM,
            format!(
                "send queue of QP {} is full ({} work requests: outstanding, or completed \
                 unsignalled and waiting for a later signalled completion)",
                qp.qpn, qp.caps.max_send_wr
            ),
        ));
    }
    let len = wr.sge.length;
    let is_write_or_send = matches!(
        wr.opcode,
        Opcode::Send
            | Opcode::SendWithImm { .. }
            | Opcode::RdmaWrite
            | Opcode::RdmaWriteWithImm { .. }
    );
    let inline = if wr.flags.contains(SendFlags::INLINE) {
        if !is_write_or_send {
            return Err(VerbsError::call(
                VERB,
                libc::EINVAL,
                format!(
                    "QP {}: INLINE applies to sends and RDMA writes only",
                    qp.qpn
                ),
            ));
        }
        if len > qp.caps.max_inline_data {
            return Err(VerbsError::call(
                VERB,
                libc::EINVAL,
                format!(
                    "QP {}: inline payload of {len} bytes exceeds max_inline_data {}",
                    qp.qpn, qp.caps.max_inline_data
                ),
            ));
        }
        let bytes = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: the caller guarantees the SGE's memory is valid for the
            // call (post_send's contract for INLINE).
            unsafe { std::slice::from_raw_parts(wr.sge.addr as *const u8, len as usize) }.to_vec()
        };
        Some(bytes)
    } else {
        None
    };
    if !is_write_or_send && wr.opcode != Opcode::RdmaRead && len != 8 {
        return Err(VerbsError::call(
            VERB,
            libc::EINVAL,
            format!("QP {}: an atomic's SGE must be 8 bytes, not {len}", qp.qpn),
        ));
    }
    let npkts = if is_write_or_send {
        len.div_ceil(qp.mtu).max(1)
    } else {
        1
    };
    qp.sq.push_back(SqEntry {
        wr: *wr,
        inline,
        first_psn: qp.next_psn,
        npkts,
        read_got: 0,
        local_err: None,
    });
    qp.next_psn = psn_add(qp.next_psn, npkts);
    Ok(())
}

/// Generate request packets from the send cursor into the out queue.
pub(crate) fn generate(qp: &mut Qp, sh: &mut Shared, now: Instant) {
    if qp.state != QpState::Rts {
        return;
    }
    if let Some(t) = qp.rnr_wait {
        if now < t {
            return;
        }
        qp.rnr_wait = None;
        qp.last_progress = now;
    }
    while qp.out_q.len() < GEN_AHEAD && qp.tx_idx < qp.sq.len() {
        let idx = qp.tx_idx;
        let e = &qp.sq[idx];
        if e.local_err.is_some() {
            return;
        }
        if qp.tx_pkt == 0 {
            if e.wr.flags.contains(SendFlags::FENCE) && qp.first_unacked < idx {
                return;
            }
            if e.inline.is_none() {
                let need = if e.wants_response() {
                    Access::LOCAL_WRITE
                } else {
                    Access::empty()
                };
                let s = e.wr.sge;
                if !sh
                    .mrs
                    .check(s.lkey, qp.pd, s.addr, u64::from(s.length), need)
                {
                    qp.sq[idx].local_err = Some(WcStatus::LocProtErr);
                    return;
                }
            }
            if !qp.in_flight() {
                qp.last_progress = now;
            }
        }
        let (hdr, payload) = packet(qp, idx, qp.tx_pkt);
        let ready = sh.faults.ready_at(now);
        qp.emit(hdr, payload, ready);
        qp.tx_pkt += 1;
        if qp.tx_pkt == qp.sq[idx].npkts {
            qp.tx_idx += 1;
            qp.tx_pkt = 0;
        }
    }
}

/// Packet `k` of entry `idx`.
fn packet(qp: &Qp, idx: usize, k: u32) -> (PktHdr, Vec<u8>) {
    let e = &qp.sq[idx];
    let wr = &e.wr;
    let mut h = PktHdr {
        kind: K_REQ,
        psn: psn_add(e.first_psn, k),
        raddr: wr.remote.addr,
        rkey: wr.remote.rkey,
        total_len: wr.sge.length,
        ..PktHdr::default()
    };
    let (op, imm) = match wr.opcode {
        Opcode::Send => (OP_SEND, None),
        Opcode::SendWithImm { imm } => (OP_SEND, Some(imm)),
        Opcode::RdmaWrite => (OP_WRITE, None),
        Opcode::RdmaWriteWithImm { imm } => (OP_WRITE, Some(imm)),
        Opcode::RdmaRead => (OP_READ, None),
        Opcode::AtomicCmpAndSwp { compare, swap } => {
            h.a = compare;
            h.b = swap;
            (OP_CAS, None)
        }
        Opcode::AtomicFetchAndAdd { add } => {
            h.a = add;
            (OP_FADD, None)
        }
    };
    h.op = op;
    if let Some(i) = imm {
        h.imm = i;
        h.flags |= F_IMM;
    }
    if k == 0 {
        h.flags |= F_FIRST;
    }
    if k + 1 == e.npkts {
        h.flags |= F_LAST;
    }
    if op == OP_READ {
        // A resent READ asks for the rest only (as an HCA resumes from the
        // first response packet missing): what arrived stays.
        h.raddr += u64::from(e.read_got);
        h.total_len -= e.read_got;
        h.offset = e.read_got;
    }
    if !matches!(op, OP_SEND | OP_WRITE) {
        return (h, Vec::new());
    }
    let off = k * qp.mtu;
    let n = (wr.sge.length - off).min(qp.mtu) as usize;
    h.offset = off;
    let payload = match &e.inline {
        Some(b) => b[off as usize..off as usize + n].to_vec(),
        None if n == 0 => Vec::new(),
        None => {
            let at = (wr.sge.addr + u64::from(off)) as *const u8;
            // SAFETY: the lkey check at the first packet put the SGE inside
            // a registered region, which reg_mr's contract keeps allocated,
            // and post_send's contract keeps the buffer valid until
            // completion; off + n <= the SGE's length.
            unsafe { std::slice::from_raw_parts(at, n) }.to_vec()
        }
    };
    (h, payload)
}

/// Go back to `psn`: resend from the packet that carries it.
fn rewind(qp: &mut Qp, sh: &mut Shared, psn: u32) {
    sh.stats.retransmits += 1;
    for i in qp.first_unacked..qp.sq.len() {
        let e = &qp.sq[i];
        if psn_diff(psn, e.first_psn) >= 0 && psn_diff(psn, e.last_psn()) <= 0 {
            qp.tx_idx = i;
            qp.tx_pkt = psn_diff(psn, e.first_psn) as u32;
            // READs keep what arrived (`read_got`): the resent request asks
            // for the rest (see `packet`).
            qp.out_q.retain(|p| p.hdr.kind != K_REQ);
            return;
        }
    }
}

/// Complete, in order, the sends and writes that `psn` acknowledges.
fn ack_through(qp: &mut Qp, sh: &mut Shared, psn: u32, now: Instant) {
    let mut progressed = false;
    while qp.first_unacked < qp.tx_idx {
        let e = &qp.sq[qp.first_unacked];
        if e.wants_response() || psn_diff(e.last_psn(), psn) > 0 {
            break;
        }
        qp.complete_head(&mut sh.cqs, WcStatus::Success);
        progressed = true;
    }
    if progressed {
        forward(qp, now);
    }
}

/// An ACK within the oldest message in flight (the UDP wire's, every few
/// packets of a long one): the peer has its packets through `psn`, so a
/// timeout resends from the next (`Qp::resume`). Progress.
fn mid_ack(qp: &mut Qp, psn: u32, now: Instant) {
    let Some(e) = qp.sq.get(qp.first_unacked) else {
        return;
    };
    let within = psn_diff(psn, e.first_psn) >= 0 && psn_diff(psn, e.last_psn()) < 0;
    let later = qp.resume.is_none_or(|r| psn_diff(psn_add(psn, 1), r) > 0);
    if within && !e.wants_response() && qp.in_flight() && later {
        qp.resume = Some(psn_add(psn, 1));
        forward(qp, now);
    }
}

/// Where a timeout resends from: the oldest message's first packet, or
/// past what a mid-message ACK acknowledged of it.
fn resend_from(qp: &Qp) -> u32 {
    let e = &qp.sq[qp.first_unacked];
    match qp.resume {
        Some(r) if psn_diff(r, e.first_psn) > 0 && psn_diff(r, e.last_psn()) <= 0 => r,
        _ => e.first_psn,
    }
}

/// Forward progress: the retry counters start again.
fn forward(qp: &mut Qp, now: Instant) {
    qp.retries = 0;
    qp.rnr_retries = 0;
    qp.last_progress = now;
}

/// A response packet from the peer (ACK, NAK, READ or atomic response).
pub(crate) fn on_response(qp: &mut Qp, sh: &mut Shared, h: &PktHdr, payload: &[u8], now: Instant) {
    if qp.state != QpState::Rts {
        return;
    }
    let before = psn_add(h.psn, PSN_MASK);
    match h.kind {
        K_ACK => {
            ack_through(qp, sh, h.psn, now);
            mid_ack(qp, h.psn, now);
        }
        K_NAK => {
            ack_through(qp, sh, before, now);
            let Some(e) = qp.sq.get(qp.first_unacked) else {
                return;
            };
            if (qp.first_unacked >= qp.tx_idx && qp.tx_pkt == 0)
                || psn_diff(h.psn, e.first_psn) < 0
                || psn_diff(h.psn, e.last_psn()) > 0
            {
                return; // stale: not about the oldest request in flight
            }
            match h.syndrome {
                NAK_RNR => {
                    sh.stats.rnr_naks += 1;
                    if qp.rnr_retry != 7 && qp.rnr_retries >= qp.rnr_retry {
                        qp.fail_head(&mut sh.cqs, WcStatus::RnrRetryExcErr);
                    } else {
                        qp.rnr_retries = qp.rnr_retries.saturating_add(1);
                        qp.rnr_wait = Some(now + super::qp::rnr_delay(h.aux as u8));
                        rewind(qp, sh, h.psn);
                    }
                }
                NAK_SEQ => {
                    // The peer answers and has everything before `psn`:
                    // resend from there. Not a retry against retry_cnt,
                    // which counts ACK timeouts (as rxe does): a long
                    // message on a lossy wire takes many NAKs, each one
                    // progress.
                    qp.last_progress = now;
                    rewind(qp, sh, h.psn);
                }
                NAK_REM_ACCESS => qp.fail_head(&mut sh.cqs, WcStatus::RemAccessErr),
                NAK_REM_INV => qp.fail_head(&mut sh.cqs, WcStatus::RemInvReqErr),
                _ => qp.fail_head(&mut sh.cqs, WcStatus::RemOpErr),
            }
        }
        K_READ_RESP | K_ATOMIC_RESP => {
            ack_through(qp, sh, before, now);
            if qp.first_unacked >= qp.tx_idx {
                return;
            }
            let e = &mut qp.sq[qp.first_unacked];
            let is_read = e.wr.opcode == Opcode::RdmaRead;
            if e.first_psn != h.psn || !e.wants_response() || is_read != (h.kind == K_READ_RESP) {
                return; // a duplicate of an answered request
            }
            let s = e.wr.sge;
            if is_read {
                let end = h.offset as u64 + payload.len() as u64;
                if h.offset != e.read_got || end > u64::from(s.length) {
                    return; // a segment before it was dropped: the timer resends
                }
                if !payload.is_empty() {
                    // SAFETY: the lkey check (LOCAL_WRITE) at send put the
                    // SGE in a registered writable region; offset + len is
                    // within the SGE (checked above); post_send's contract
                    // keeps it valid until completion.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            payload.as_ptr(),
                            (s.addr + u64::from(h.offset)) as *mut u8,
                            payload.len(),
                        )
                    };
                }
                e.read_got += payload.len() as u32;
                if h.flags & F_LAST == 0 || e.read_got != s.length {
                    forward(qp, now);
                    return;
                }
            } else {
                // SAFETY: as for a READ: 8 writable bytes (the SGE length
                // was checked at post), unaligned store allowed.
                unsafe { std::ptr::write_unaligned(s.addr as *mut u64, h.a) };
            }
            qp.complete_head(&mut sh.cqs, WcStatus::Success);
            forward(qp, now);
        }
        _ => {}
    }
}

/// The local-error and ACK-timeout checks of the requester.
pub(crate) fn timers(qp: &mut Qp, sh: &mut Shared, now: Instant) {
    if qp.state != QpState::Rts {
        return;
    }
    if let Some(st) = qp.sq.get(qp.first_unacked).and_then(|e| e.local_err) {
        qp.fail_head(&mut sh.cqs, st);
        return;
    }
    let Some(t) = qp.timeout else { return };
    if !qp.in_flight() || qp.rnr_wait.is_some() || now.duration_since(qp.last_progress) < t {
        return;
    }
    qp.last_progress = now;
    let alive = match &qp.remote {
        Some(r) => match &r.ring {
            Some(ring) if !ring.is_dead() && pid_alive(r.peer.pid) => Some(ring),
            _ => None,
        },
        None => None,
    };
    if let Some(ring) = alive {
        if !qp.out_q.is_empty() || !ring.drained() {
            // The peer lives but has not taken what we sent: it is slow
            // (an HCA would have answered for it), not lost. Keep waiting.
            return;
        }
    }
    qp.retries += 1;
    if qp.retries > qp.retry_cnt {
        qp.fail_head(&mut sh.cqs, WcStatus::RetryExcErr);
    } else {
        let psn = resend_from(qp);
        rewind(qp, sh, psn);
    }
}
