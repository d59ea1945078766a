//! Per-peer flow control: a sender spends a credit per message, and
//! learns what the receiver consumed from cumulative counts in every
//! header it receives back, or from a credit-only message the receiver
//! sends once half a window's worth is unreported (see
//! [`CREDIT_SLOTS`](crate::geometry::CREDIT_SLOTS) for why those need no
//! credits of their own).
//!
//! `Credits` keeps the counts of every peer, each direction's apart;
//! sending what it owes is the state's (`State::send_credits`).

use crate::geometry::Geometry;
use crate::wire::Header;

/// One peer's counts (cumulative, wrapping), per direction.
#[derive(Clone, Copy, Default)]
struct Window {
    /// Messages sent to the peer.
    sent: [u32; 2],
    /// Of those, how many the peer reported consumed.
    acked: [u32; 2],
    /// Messages from the peer this rank consumed.
    consumed: [u32; 2],
    /// consumed[0] + consumed[1] when last reported to the peer.
    reported: u32,
    /// Messages from the peer received (not control messages), both
    /// directions: those not yet consumed wait for delivery.
    received: u32,
    /// A credit message is owed and waits for a send buffer.
    owed: bool,
}

/// Every peer's credits (see the module docs).
pub(crate) struct Credits {
    peers: Vec<Window>,
}

impl Credits {
    /// `size` peers, nothing exchanged yet.
    pub fn new(size: usize) -> Self {
        Credits {
            peers: vec![Window::default(); size],
        }
    }

    /// True if direction `dir` towards `peer` has no credit left of
    /// `geo`'s window.
    #[inline]
    pub fn exhausted(&self, geo: &Geometry, peer: usize, dir: usize) -> bool {
        let w = &self.peers[peer];
        w.sent[dir].wrapping_sub(w.acked[dir]) as usize >= geo.window
    }

    /// Spend a credit of direction `dir` towards `peer`.
    #[inline]
    pub fn spend(&mut self, peer: usize, dir: usize) {
        let w = &mut self.peers[peer];
        w.sent[dir] = w.sent[dir].wrapping_add(1);
    }

    /// Give back a credit spent on a message never sent.
    #[inline]
    pub fn refund(&mut self, peer: usize, dir: usize) {
        let w = &mut self.peers[peer];
        w.sent[dir] = w.sent[dir].wrapping_sub(1);
    }

    /// Stamp `h` with what this rank consumed of `peer`'s messages, and
    /// count that as reported.
    #[inline]
    pub fn stamp(&mut self, peer: usize, h: &mut Header) {
        let w = &mut self.peers[peer];
        h.ack_req = w.consumed[0];
        h.ack_rep = w.consumed[1];
        w.reported = w.consumed[0].wrapping_add(w.consumed[1]);
    }

    /// [`stamp`](Self::stamp) a header sent now: no credit message is
    /// owed to `peer` any more.
    #[inline]
    pub fn report(&mut self, peer: usize, h: &mut Header) {
        self.stamp(peer, h);
        self.peers[peer].owed = false;
    }

    /// A header from `src` reported what it consumed: the newest report
    /// wins (cumulative counts; sends arrive in order).
    #[inline]
    pub fn returned(&mut self, src: usize, ack_req: u32, ack_rep: u32) {
        let w = &mut self.peers[src];
        if ack_req.wrapping_sub(w.acked[0]) as i32 > 0 {
            w.acked[0] = ack_req;
        }
        if ack_rep.wrapping_sub(w.acked[1]) as i32 > 0 {
            w.acked[1] = ack_rep;
        }
    }

    /// A message from `src` (not a control message) arrived.
    #[inline]
    pub fn received(&mut self, src: usize) {
        let w = &mut self.peers[src];
        w.received = w.received.wrapping_add(1);
    }

    /// A message of direction `dir` from `src` was consumed: owe a
    /// credit message once `geo`'s
    /// [`credit_every`](Geometry::credit_every) are unreported. Nothing
    /// for a rank out of range.
    #[inline]
    pub fn consumed(&mut self, geo: &Geometry, src: usize, dir: usize) {
        if let Some(w) = self.peers.get_mut(src) {
            w.consumed[dir] = w.consumed[dir].wrapping_add(1);
            let unreported = w.consumed[0]
                .wrapping_add(w.consumed[1])
                .wrapping_sub(w.reported);
            if unreported as usize >= geo.credit_every() {
                w.owed = true;
            }
        }
    }

    /// True if a credit message to `peer` is owed.
    #[inline]
    pub fn owed(&self, peer: usize) -> bool {
        self.peers[peer].owed
    }

    /// Messages received from `peer` so far (cumulative, wrapping).
    pub fn received_from(&self, peer: usize) -> u32 {
        self.peers[peer].received
    }

    /// True if everything received from `peer` was consumed.
    pub fn all_consumed(&self, peer: usize) -> bool {
        let w = &self.peers[peer];
        w.received == w.consumed[0].wrapping_add(w.consumed[1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_spent_and_returned() {
        let g = Geometry::small(2);
        let mut c = Credits::new(2);
        assert!(!c.exhausted(&g, 1, 0));
        c.spend(1, 0);
        c.spend(1, 0);
        assert!(c.exhausted(&g, 1, 0));
        assert!(!c.exhausted(&g, 1, 1), "directions apart");
        c.refund(1, 0);
        assert!(!c.exhausted(&g, 1, 0));
        c.spend(1, 0);
        c.returned(1, 2, 0);
        assert!(!c.exhausted(&g, 1, 0));
        c.returned(1, 1, 0);
        c.spend(1, 0);
        assert!(!c.exhausted(&g, 1, 0), "an older report does not win");
        c.spend(1, 0);
        assert!(c.exhausted(&g, 1, 0));
    }

    #[test]
    fn consumed_messages_owe_a_report() {
        let g = Geometry::small(4);
        let mut c = Credits::new(2);
        c.received(1);
        c.received(1);
        assert!(!c.all_consumed(1));
        c.consumed(&g, 1, 0);
        assert!(!c.owed(1));
        c.consumed(&g, 1, 1);
        assert!(c.owed(1) && c.all_consumed(1));
        let mut h = crate::wire::control_header(rgex_core::Rank(0), crate::wire::CREDIT_ONLY);
        c.report(1, &mut h);
        assert_eq!((h.ack_req, h.ack_rep), (1, 1));
        assert!(!c.owed(1));
        c.consumed(&g, 7, 0); // out of range: nothing
    }
}
