//! The device's packet engine: one per context, run inside every verb
//! called on the context (posts, polls, `qp_state`, `modify_qp`) and by
//! [`SoftVerbs::progress`](super::SoftVerbs::progress).
//!
//! One pass first takes the datagrams waiting on the device's UDP socket
//! (the UDP wire) into their QPs' queues, then drains each QP's inbound
//! ring or queue (requests to the responder,
//! responses to the requester), fires the requester's timers, generates
//! request packets from the send queues, and writes the out queues to
//! the peers' rings. Then QPs whose CQ overran move to ERR.

use super::cq::Cqs;
use super::faults::FaultState;
use super::ident::Ident;
use super::mr::MrTable;
use super::packet::{PktHdr, K_REQ};
use super::qp::Qp;
use super::recvq::Srq;
use super::ring::MAX_PAYLOAD;
use super::udp::{Recv, UdpWire};
use super::{requester, responder};
use crate::verbs::QpState;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

/// Packets taken from one ring per pass, so one busy peer cannot starve
/// the others (or the caller).
const BUDGET: usize = 256;
/// Datagrams taken from the UDP socket per pass.
const UDP_BUDGET: usize = 4096;

/// The device state a QP's processing touches besides the QP itself.
#[derive(Debug)]
pub(crate) struct Shared {
    pub ident: Ident,
    pub cqs: Cqs,
    pub srqs: HashMap<u32, Srq>,
    pub mrs: MrTable,
    pub pds: HashSet<u32>,
    pub faults: FaultState,
    pub stats: Stats,
    /// The device's socket, on the UDP wire.
    pub udp: Option<UdpWire>,
    /// A datagram read from the socket whose QP's queue was full: the
    /// engine reads no more until it fits (the rest wait in the kernel's
    /// buffer), so a burst is never discarded for want of queue room.
    pub held: Option<super::packet::OutPkt>,
}

/// What a device's engine has done, for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packets written to peers' rings.
    pub packets_sent: u64,
    /// Packets dropped by a fault.
    pub packets_dropped: u64,
    /// Packets taken from this device's rings.
    pub packets_received: u64,
    /// Go-back-N rewinds (after a timeout, a sequence or an RNR NAK).
    pub retransmits: u64,
    /// RNR NAKs received.
    pub rnr_naks: u64,
    /// Datagrams the UDP wire discarded on arrival: not a packet, or for no
    /// QP of this device.
    pub packets_discarded: u64,
}

/// One context's state, under its lock.
#[derive(Debug)]
pub(crate) struct Engine {
    pub sh: Shared,
    pub qps: BTreeMap<u32, Qp>,
    pub next_id: u32,
    /// When a verb last ran the engine (the service thread stays away
    /// while verbs are being called).
    pub last_call: Instant,
    buf: Vec<u8>,
}

impl Engine {
    pub fn new(ident: Ident, faults: FaultState, udp: Option<UdpWire>) -> Self {
        Engine {
            sh: Shared {
                ident,
                cqs: Cqs::default(),
                srqs: HashMap::new(),
                mrs: MrTable::default(),
                pds: HashSet::new(),
                faults,
                stats: Stats::default(),
                udp,
                held: None,
            },
            last_call: Instant::now(),
            qps: BTreeMap::new(),
            next_id: 0,
            buf: Vec::with_capacity(MAX_PAYLOAD),
        }
    }

    /// A fresh object number (PD, CQ, SRQ, QP: 24 bits, never 0).
    pub fn fresh_id(&mut self) -> u32 {
        self.next_id = (self.next_id + 1) & 0x00ff_ffff;
        if self.next_id == 0 {
            self.next_id = 1;
        }
        self.next_id
    }

    /// Whether the device was killed (by a fault).
    pub fn killed(&mut self, now: Instant) -> bool {
        if self.sh.faults.killed(now) {
            for qp in self.qps.values() {
                qp.inbound.set_dead();
            }
            return true;
        }
        false
    }

    /// One pass of the engine; whether any packet moved.
    pub fn progress(&mut self) -> bool {
        let now = Instant::now();
        if self.killed(now) {
            return false;
        }
        let before = (self.sh.stats.packets_received, self.sh.stats.packets_sent);
        self.take_datagrams();
        let sh = &mut self.sh;
        for qp in self.qps.values_mut() {
            if matches!(qp.state, QpState::Rtr | QpState::Rts | QpState::Err) {
                for _ in 0..BUDGET {
                    let Some(h) = qp.inbound.pop(&mut self.buf) else {
                        break;
                    };
                    sh.stats.packets_received += 1;
                    let from_peer = qp.remote.as_ref().is_some_and(|r| r.qpn == h.src_qpn);
                    if h.dst_qpn != qp.qpn || !from_peer {
                        continue; // not for this connection: dropped
                    }
                    if h.kind == K_REQ {
                        responder::on_request(qp, sh, &h, &self.buf, now);
                    } else {
                        requester::on_response(qp, sh, &h, &self.buf, now);
                    }
                }
            }
            requester::timers(qp, sh, now);
            requester::generate(qp, sh, now);
            flush_out(qp, sh, now);
        }
        self.cascade_overruns();
        before != (self.sh.stats.packets_received, self.sh.stats.packets_sent)
    }

    /// The UDP wire: move the datagrams waiting on the socket into their
    /// QPs' queues (at most [`UDP_BUDGET`] a pass).
    fn take_datagrams(&mut self) {
        let Some(udp) = &mut self.sh.udp else { return };
        if let Some(p) = self.sh.held.take() {
            match offer(&mut self.qps, p.hdr, &p.payload) {
                Some(true) => {}
                None => self.sh.stats.packets_discarded += 1,
                Some(false) => {
                    self.sh.held = Some(p);
                    return;
                }
            }
        }
        for _ in 0..UDP_BUDGET {
            match udp.recv(&mut self.buf) {
                Recv::Packet(h) => match offer(&mut self.qps, h, &self.buf) {
                    Some(true) => {}
                    None => self.sh.stats.packets_discarded += 1,
                    Some(false) => {
                        self.sh.held = Some(super::packet::OutPkt {
                            hdr: h,
                            payload: std::mem::take(&mut self.buf),
                            ready_at: None,
                        });
                        return;
                    }
                },
                Recv::Wake => {}
                Recv::Bad => self.sh.stats.packets_discarded += 1,
                Recv::Nothing => break,
            }
        }
    }

    /// Move every QP of a CQ that overran to ERR.
    pub fn cascade_overruns(&mut self) {
        while let Some(id) = self.sh.cqs.newly_overrun.pop() {
            for qp in self.qps.values_mut() {
                if (qp.send_cq == id || qp.recv_cq == id) && qp.state != QpState::Err {
                    qp.enter_err(&mut self.sh.cqs);
                }
            }
        }
    }
}

/// Queue a datagram's packet for its QP: `None` for no such QP, else
/// whether its queue had room.
fn offer(qps: &mut BTreeMap<u32, Qp>, hdr: PktHdr, payload: &[u8]) -> Option<bool> {
    qps.get_mut(&hdr.dst_qpn)
        .map(|qp| qp.inbound.push(hdr, payload))
}

/// Write the QP's ready packets to its peer's ring, or send them to its
/// socket, in order, until the ring is full or the socket has no room;
/// drop and reorder faults apply here.
fn flush_out(qp: &mut Qp, sh: &mut Shared, now: Instant) {
    let Some(remote) = &qp.remote else {
        qp.out_q.clear();
        return;
    };
    let ready = |p: &super::packet::OutPkt| p.ready_at.is_none_or(|t| t <= now);
    while let Some(p) = qp.out_q.front() {
        if !ready(p) {
            break;
        }
        if sh.faults.reorder_now() && qp.out_q.get(1).is_some_and(ready) {
            qp.out_q.swap(0, 1);
        }
        let p = qp.out_q.front().expect("checked above");
        if let (Some(to), Some(udp)) = (remote.peer.udp, &mut sh.udp) {
            if sh.faults.drop_packet(&remote.peer) {
                sh.stats.packets_dropped += 1;
            } else if udp.send(to, &p.hdr, &p.payload) {
                sh.stats.packets_sent += 1;
            } else {
                break; // no room in the kernel: later
            }
            qp.out_q.pop_front();
            continue;
        }
        match &remote.ring {
            None => sh.stats.packets_dropped += 1,
            Some(ring) => {
                if !ring.has_room() {
                    break;
                }
                if sh.faults.drop_packet(&remote.peer) {
                    sh.stats.packets_dropped += 1;
                } else {
                    let ok = ring.push(&p.hdr, &p.payload);
                    debug_assert!(ok, "room was checked");
                    sh.stats.packets_sent += 1;
                    if ring.take_asleep() {
                        // The peer sleeps on its wake socket (see `wait`).
                        sh.cqs.wake.ring_peer(&remote.peer);
                    }
                }
            }
        }
        qp.out_q.pop_front();
    }
}
