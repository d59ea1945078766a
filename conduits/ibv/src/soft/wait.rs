//! The soft device's wait object: a wake socket per context
//! (`rgex_smp::wake_socket`, named by the context's identity, which its
//! peers read from its GID), which a progress thread sleeps on after
//! arming the CQ (`Verbs::arm_cq`, the soft `ibv_req_notify_cq`).
//!
//! Two things make a completion while the owner sleeps, and each rings
//! the socket:
//! - **the owner's own engine** (its service thread, or a verb another
//!   thread calls) pushes a completion into the armed CQ: the push rings
//!   the socket and disarms the CQ (one notification per arming, as
//!   `ibv_req_notify_cq`);
//! - **a peer** writes a packet into one of the owner's inbound rings,
//!   which only the owner's engine takes: arming sets each ring's
//!   `asleep` flag, and a producer that finds it set after its push
//!   clears it and rings the owner's socket.
//!
//! No packet is slept through. The owner stores the flags, fences
//! (SeqCst), then runs its engine once more (the kit polls the CQ after
//! arming), which loads each ring's `tail`; a producer stores `tail` in
//! its push, fences (SeqCst), then loads the flag. Of two SeqCst fences
//! one comes first: if the owner's, the producer's load sees the flag
//! and it rings; if the producer's, the owner's engine sees the packet
//! and no sleep follows (its completion, if it makes one, also rings the
//! armed CQ's socket). A ring is datagram into the socket's queue,
//! before or during the owner's `poll`: it returns either way. The
//! owner drains the socket after the sleep, before it arms again, so a
//! drain takes only rings meant for a sleep already over.
//!
//! A QP connected while the owner sleeps was not armed: its packets wait
//! for the service thread's next pass (at most its longest nap), whose
//! completions ring the armed CQ.
//!
//! On the UDP wire the device's UDP socket is the wait object: every
//! packet a peer sends makes it readable (the kernel queues datagrams, so
//! none arriving between the arming and the sleep is missed), and the
//! owner's own completions send it an empty datagram. Nothing is drained
//! after the sleep: the engine reads the socket, and drops wake-ups.

use super::ident::Ident;
use super::progress::Engine;
use rgex_core::sync::{fence, Ordering};
use rgex_smp::wake_socket::{Ringer, WakeSocket};
use std::os::fd::RawFd;

/// A context's wake socket and the socket it rings with (its own and its
/// peers'), both opened on first use.
#[derive(Debug, Default)]
pub(crate) struct Wake {
    /// Bound at the first arming; `None` before (or if it failed).
    socket: Option<WakeSocket>,
    /// Its name (set when bound).
    name: String,
    ringer: Option<Ringer>,
    /// The UDP wire: a handle on the device's socket and its address, to
    /// wake it with an empty datagram.
    pub udp: Option<(std::net::UdpSocket, std::net::SocketAddrV4)>,
}

impl Wake {
    fn ringer(&mut self) -> Option<&Ringer> {
        if self.ringer.is_none() {
            self.ringer = Ringer::new().ok();
        }
        self.ringer.as_ref()
    }

    /// Ring this context's own socket (an armed CQ got a completion).
    pub fn ring_self(&mut self) {
        if let Some((sock, me)) = &self.udp {
            // Best effort: a lost wake-up leaves the sleeper to its timeout.
            let _ = sock.send_to(&[], *me);
            return;
        }
        if self.socket.is_some() {
            let name = std::mem::take(&mut self.name);
            if let Some(r) = self.ringer() {
                r.ring(&name);
            }
            self.name = name;
        }
    }

    /// Ring `peer`'s socket (it slept on the ring we just wrote).
    pub fn ring_peer(&mut self, peer: &Ident) {
        if let Some(r) = self.ringer() {
            r.ring(&peer.wake_name());
        }
    }
}

impl Engine {
    /// Arm CQ `cq` and every inbound ring for one sleep; the fd to poll,
    /// or `None` if the wake socket cannot be bound.
    pub fn arm_wait(&mut self, cq: u32) -> Option<RawFd> {
        if let Some(udp) = &self.sh.udp {
            let fd = udp.fd();
            if let Some(c) = self.sh.cqs.map.get_mut(&cq) {
                c.armed = true;
            }
            return Some(fd);
        }
        let wake = &mut self.sh.cqs.wake;
        if wake.socket.is_none() {
            let name = self.sh.ident.wake_name();
            wake.socket = Some(WakeSocket::bind(&name).ok()?);
            wake.name = name;
        }
        let fd = wake.socket.as_ref().map(WakeSocket::fd)?;
        if let Some(c) = self.sh.cqs.map.get_mut(&cq) {
            c.armed = true;
        }
        for qp in self.qps.values() {
            qp.inbound.set_asleep(true);
        }
        // SeqCst: between the flags' stores and the engine's next loads
        // of the rings' `tail` (module docs).
        fence(Ordering::SeqCst);
        Some(fd)
    }

    /// After the sleep: disarm the CQ and the rings, drain the socket.
    pub fn disarm_wait(&mut self, cq: u32) {
        if let Some(c) = self.sh.cqs.map.get_mut(&cq) {
            c.armed = false;
        }
        for qp in self.qps.values() {
            qp.inbound.set_asleep(false);
        }
        if let Some(s) = &self.sh.cqs.wake.socket {
            s.drain();
        }
    }
}
