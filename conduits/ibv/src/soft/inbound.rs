//! Where a QP's arriving packets wait for its engine: its ring in shared
//! memory (the shared-memory wire, which peers write), or a queue the
//! engine fills from the device's UDP socket (the UDP wire).

use super::packet::PktHdr;
use super::ring::Ring;
use std::collections::VecDeque;

/// Packets the UDP wire queues per QP at most; past it the engine stops
/// reading the socket until the QP's engine has taken some, so a flooding
/// peer grows neither this queue nor anything else unbounded.
pub(crate) const UDP_QUEUE: usize = 1024;

/// A QP's inbound packets.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// Its ring (single producer: the one peer QP).
    Ring(Ring),
    /// Packets taken from the device's UDP socket for this QP.
    Queue(VecDeque<(PktHdr, Vec<u8>)>),
}

impl Inbound {
    /// The next packet, its payload in `buf`.
    pub fn pop(&mut self, buf: &mut Vec<u8>) -> Option<PktHdr> {
        match self {
            Inbound::Ring(r) => r.pop(buf),
            Inbound::Queue(q) => q.pop_front().map(|(h, p)| {
                *buf = p;
                h
            }),
        }
    }

    /// Queue a packet from the UDP wire; false when there is no room (a
    /// full queue, or a QP on the shared-memory wire).
    pub fn push(&mut self, hdr: PktHdr, payload: &[u8]) -> bool {
        match self {
            Inbound::Queue(q) if q.len() < UDP_QUEUE => {
                q.push_back((hdr, payload.to_vec()));
                true
            }
            _ => false,
        }
    }

    /// Tell the peer this QP is gone (the ring's flag; a UDP peer learns
    /// it from its timer).
    pub fn set_dead(&self) {
        if let Inbound::Ring(r) = self {
            r.set_dead();
        }
    }

    /// Ask the peer to wake us after its next packet (the ring's flag;
    /// any datagram wakes a thread sleeping on the UDP socket).
    pub fn set_asleep(&self, on: bool) {
        if let Inbound::Ring(r) = self {
            r.set_asleep(on);
        }
    }
}
