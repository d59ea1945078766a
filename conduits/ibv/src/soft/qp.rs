//! A queue pair: its state machine, its queues, and the move to ERR
//! that flushes them.

use super::cq::Cqs;
use super::ident::Ident;
use super::inbound::Inbound;
use super::packet::{OutPkt, PktHdr};
use super::recvq::RecvQueue;
use super::ring::Ring;
use crate::verbs::{
    Access, Opcode, QpCaps, QpState, RecvWr, SendFlags, SendWr, Wc, WcOpcode, WcStatus,
};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The peer a QP was connected to at RTR.
#[derive(Debug)]
pub(crate) struct Remote {
    /// The peer QP's inbound ring; `None` when it could not be mapped
    /// (the peer is gone): packets go nowhere and time out, as on a
    /// fabric. Always `None` on the UDP wire, where packets go to
    /// `peer.udp`.
    pub ring: Option<Ring>,
    pub peer: Ident,
    pub qpn: u32,
}

/// A posted send work request, until its slot is freed.
#[derive(Debug)]
pub(crate) struct SqEntry {
    pub wr: SendWr,
    /// The payload of an inline send, copied at post.
    pub inline: Option<Vec<u8>>,
    pub first_psn: u32,
    /// Packets of the request (a READ or atomic request is one).
    pub npkts: u32,
    /// READ: response bytes received in order so far.
    pub read_got: u32,
    /// The local SGE failed its check: completes with this when it
    /// reaches the head of the queue.
    pub local_err: Option<WcStatus>,
}

impl SqEntry {
    /// Whether it waits for a response (READ, atomics) rather than an ACK.
    pub fn wants_response(&self) -> bool {
        matches!(
            self.wr.opcode,
            Opcode::RdmaRead | Opcode::AtomicCmpAndSwp { .. } | Opcode::AtomicFetchAndAdd { .. }
        )
    }

    /// Its last PSN.
    pub fn last_psn(&self) -> u32 {
        super::packet::psn_add(self.first_psn, self.npkts - 1)
    }
}

/// A completion's opcode for a send work request.
pub(crate) fn wc_opcode(op: &Opcode) -> WcOpcode {
    match op {
        Opcode::Send | Opcode::SendWithImm { .. } => WcOpcode::Send,
        Opcode::RdmaWrite | Opcode::RdmaWriteWithImm { .. } => WcOpcode::RdmaWrite,
        Opcode::RdmaRead => WcOpcode::RdmaRead,
        Opcode::AtomicCmpAndSwp { .. } => WcOpcode::CompSwap,
        Opcode::AtomicFetchAndAdd { .. } => WcOpcode::FetchAdd,
    }
}

/// The message being received (multi-packet SEND or WRITE).
#[derive(Debug)]
pub(crate) struct Rx {
    /// The receive it consumes (SEND, WRITE_WITH_IMM).
    pub recv: Option<RecvWr>,
    /// A WRITE's base address.
    pub waddr: u64,
    pub total: u32,
    pub imm: Option<u32>,
    pub is_write: bool,
}

/// One RC queue pair.
#[derive(Debug)]
pub(crate) struct Qp {
    pub qpn: u32,
    pub pd: u32,
    pub send_cq: u32,
    pub recv_cq: u32,
    pub srq: Option<u32>,
    pub caps: QpCaps,
    pub state: QpState,
    pub access: Access,
    /// This QP's inbound packets, and its ring's name (the peer maps it
    /// by name; unused on the UDP wire).
    pub inbound: Inbound,
    pub ring_name: String,
    pub remote: Option<Remote>,
    pub mtu: u32,
    pub min_rnr_timer: u8,

    // Requester.
    pub sq: VecDeque<SqEntry>,
    /// Entries before this one completed unsignalled and still hold
    /// their slots (freed by the next signalled completion).
    pub first_unacked: usize,
    /// The next packet to (re)send: entry and packet within it.
    pub tx_idx: usize,
    pub tx_pkt: u32,
    /// PSN of the next posted request.
    pub next_psn: u32,
    pub timeout: Option<Duration>,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub retries: u8,
    pub rnr_retries: u8,
    /// Last forward progress (or first send) of the oldest request in flight.
    pub last_progress: Instant,
    /// After an RNR NAK: nothing is sent before this.
    pub rnr_wait: Option<Instant>,
    /// The PSN after the last mid-message ACK of the oldest message (UDP
    /// wire): a timeout resends from there.
    pub resume: Option<u32>,

    // Responder.
    pub rq: RecvQueue,
    /// Expected PSN.
    pub epsn: u32,
    /// A NAK was sent for `epsn`: later packets are dropped until it comes.
    pub nak_sent: bool,
    pub rx: Option<Rx>,
    /// Recent atomics' results by PSN, to answer a retransmitted atomic
    /// without performing it twice.
    pub atomic_cache: VecDeque<(u32, u64)>,

    /// Packets for the peer's ring (responses first-come, requests as
    /// generated), kept while the ring is full or a delay holds them.
    pub out_q: VecDeque<OutPkt>,
}

/// Results kept for retransmitted atomics (`max_qp_rd_atom`).
pub(crate) const ATOMIC_CACHE: usize = 16;

impl Qp {
    /// Queue a packet for the peer.
    pub fn emit(&mut self, mut hdr: PktHdr, payload: Vec<u8>, ready_at: Option<Instant>) {
        hdr.src_qpn = self.qpn;
        hdr.dst_qpn = self.remote.as_ref().map_or(0, |r| r.qpn);
        hdr.len = payload.len() as u32;
        self.out_q.push_back(OutPkt {
            hdr,
            payload,
            ready_at,
        });
    }

    /// Whether a request is in flight (sent, not yet complete).
    pub fn in_flight(&self) -> bool {
        self.first_unacked < self.tx_idx || (self.first_unacked == self.tx_idx && self.tx_pkt > 0)
    }

    /// A completion of this QP.
    pub fn wc(&self, wr_id: u64, status: WcStatus, opcode: WcOpcode) -> Wc {
        Wc {
            wr_id,
            status,
            opcode,
            byte_len: 0,
            imm: None,
            qp_num: self.qpn,
            src_qp: 0,
            vendor_err: 0,
        }
    }

    /// Complete the send-queue head (`first_unacked`) with `status`,
    /// freeing slots as hardware does: a signalled completion (or any
    /// error) frees its slot and those of the unsignalled ones before it.
    pub fn complete_head(&mut self, cqs: &mut Cqs, status: WcStatus) {
        let e = &self.sq[self.first_unacked];
        let signalled = e.wr.flags.contains(SendFlags::SIGNALED) || status != WcStatus::Success;
        if !signalled {
            self.first_unacked += 1;
            return;
        }
        let mut wc = self.wc(e.wr.wr_id, status, wc_opcode(&e.wr.opcode));
        if status == WcStatus::Success {
            wc.byte_len = e.wr.sge.length;
        }
        cqs.push(self.send_cq, wc);
        let freed = self.first_unacked + 1;
        self.sq.drain(..freed);
        self.first_unacked = 0;
        // The cursor is past the completed entry (it was sent in full).
        self.tx_idx = self.tx_idx.saturating_sub(freed);
    }

    /// Complete the head with an error, then move to ERR.
    pub fn fail_head(&mut self, cqs: &mut Cqs, status: WcStatus) {
        if self.first_unacked < self.sq.len() {
            self.complete_head(cqs, status);
        }
        self.enter_err(cqs);
    }

    /// Move to ERR: every outstanding send and receive completes
    /// `IBV_WC_WR_FLUSH_ERR` (signalled or not), in order.
    pub fn enter_err(&mut self, cqs: &mut Cqs) {
        self.state = QpState::Err;
        let entries: Vec<SqEntry> = self.sq.drain(..).skip(self.first_unacked).collect();
        for e in entries {
            let wc = self.wc(e.wr.wr_id, WcStatus::WrFlushErr, wc_opcode(&e.wr.opcode));
            cqs.push(self.send_cq, wc);
        }
        self.first_unacked = 0;
        self.tx_idx = 0;
        self.tx_pkt = 0;
        self.rnr_wait = None;
        if let Some(r) = self.rx.take().and_then(|rx| rx.recv) {
            let wc = self.wc(r.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv);
            cqs.push(self.recv_cq, wc);
        }
        while let Some(r) = self.rq.q.pop_front() {
            let wc = self.wc(r.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv);
            cqs.push(self.recv_cq, wc);
        }
        // A NAK or response already queued still goes out (an HCA sends
        // the NAK that reports the error); requests do not.
        self.out_q.retain(|p| p.hdr.kind != super::packet::K_REQ);
    }

    /// Move to RESET: queues emptied without completions, a fresh ring
    /// (the old one is marked dead for its producer).
    pub fn reset(&mut self) -> crate::verbs::VerbsResult<()> {
        let fresh = match self.inbound {
            Inbound::Ring(_) => Inbound::Ring(Ring::create(&self.ring_name)?),
            Inbound::Queue(_) => Inbound::Queue(VecDeque::new()),
        };
        self.inbound.set_dead();
        self.inbound = fresh;
        self.state = QpState::Reset;
        self.remote = None;
        self.sq.clear();
        self.first_unacked = 0;
        self.tx_idx = 0;
        self.tx_pkt = 0;
        self.rq.q.clear();
        self.rx = None;
        self.nak_sent = false;
        self.atomic_cache.clear();
        self.out_q.clear();
        self.rnr_wait = None;
        self.resume = None;
        self.retries = 0;
        self.rnr_retries = 0;
        Ok(())
    }
}

/// The ACK timeout of code `t`: 4.096 us x 2^t; 0 is infinite.
pub(crate) fn ack_timeout(t: u8) -> Option<Duration> {
    (t != 0).then(|| Duration::from_nanos(4096u64 << t.min(31)))
}

/// The RNR NAK delay of timer code `t` (`IBV_RNR_TIMER_*`, 0-31).
pub(crate) fn rnr_delay(t: u8) -> Duration {
    // Microseconds, as the IB specification's table gives them.
    const US: [u32; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
        5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
        245_760, 327_680, 491_520,
    ];
    Duration::from_micros(u64::from(US[usize::from(t & 31)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_codes() {
        assert_eq!(ack_timeout(0), None);
        assert_eq!(ack_timeout(1), Some(Duration::from_nanos(8192)));
        assert_eq!(ack_timeout(14), Some(Duration::from_nanos(4096 << 14)));
        assert_eq!(rnr_delay(0), Duration::from_micros(655_360));
        assert_eq!(rnr_delay(12), Duration::from_micros(640));
        assert_eq!(rnr_delay(31), Duration::from_micros(491_520));
    }
}
