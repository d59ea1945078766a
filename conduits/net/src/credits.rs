//! Per-peer flow control: a sender spends a credit per message, and
//! learns what the receiver consumed from cumulative counts in every
//! header it receives back, or from a credit-only message the receiver
//! sends once half a window's worth is unreported (see
//! [`CREDIT_SLOTS`](crate::geometry::CREDIT_SLOTS) for why those need no
//! credits of their own).

use crate::geometry::POOL_REP;
use crate::net::Net;
use crate::ops::{Op, Post};
use crate::state::State;
use crate::transport::Transport;
use crate::wire::{self, control_header, Header};

impl<T: Transport> State<T> {
    /// Stamp `h` with what this rank consumed of `peer`'s messages, and
    /// count that as reported.
    #[inline]
    pub(crate) fn stamp_credits(&mut self, peer: usize, h: &mut Header) {
        let p = &mut self.peers[peer];
        h.ack_req = p.consumed[0];
        h.ack_rep = p.consumed[1];
        p.reported = p.consumed[0].wrapping_add(p.consumed[1]);
    }

    /// A header from `src` reported what it consumed: the newest report
    /// wins (cumulative counts; sends arrive in order).
    #[inline]
    pub(crate) fn credits_returned(&mut self, src: usize, ack_req: u32, ack_rep: u32) {
        let p = &mut self.peers[src];
        if ack_req.wrapping_sub(p.acked[0]) as i32 > 0 {
            p.acked[0] = ack_req;
        }
        if ack_rep.wrapping_sub(p.acked[1]) as i32 > 0 {
            p.acked[1] = ack_rep;
        }
    }

    /// Write an AM header into send buffer `slot` for `peer` (with the
    /// credits we owe it) and post the send of `hlen + len` bytes.
    pub(crate) fn send_am(
        &mut self,
        net: &Net<T>,
        slot: usize,
        peer: usize,
        mut h: Header,
        args: &[u32],
    ) {
        self.stamp_credits(peer, &mut h);
        self.peers[peer].want_credit = false;
        let buf = net.send_buf(slot);
        // SAFETY: send buffer `slot` is ours (taken from its pool) and
        // 64-aligned with room for the longest header.
        unsafe { h.write(buf, args) };
        let op = (net.geo.n_recv + slot) as u32;
        self.ops[op as usize] = Op::AmSend { peer: peer as u32 };
        let len = h.hlen
            + if h.category() == rgex_core::Category::Long {
                0
            } else {
                h.len as usize
            };
        self.post(
            net,
            Post::Send {
                op,
                peer: peer as u32,
                buf: buf as usize,
                len,
                inject: len <= net.transport.caps().inject_size,
            },
        );
    }

    /// Send credit messages owed, where a reply buffer is free.
    pub(crate) fn send_credits(&mut self, net: &Net<T>) {
        for peer in 0..self.peers.len() {
            let p = &self.peers[peer];
            if !p.want_credit || p.dead.is_some() || p.farewell {
                continue;
            }
            if self.send_control(net, peer, wire::CREDIT_ONLY).is_none() {
                return;
            }
        }
    }

    /// Send the control message `what` (no payload) to `peer` from a free
    /// reply buffer: the buffer's index, or `None` (nothing sent) when
    /// none is free.
    pub(crate) fn send_control(&mut self, net: &Net<T>, peer: usize, what: u8) -> Option<usize> {
        let slot = self.claim_slot(POOL_REP)? as usize;
        self.send_am(net, slot, peer, control_header(self.me, what), &[]);
        Some(slot)
    }

    /// Answer the pings received (see [`health`](crate::health)), where
    /// a reply buffer is free (the rest at the next progress). A peer
    /// gone, or told goodbye, is not answered.
    pub(crate) fn send_pongs(&mut self, net: &Net<T>) {
        for peer in 0..self.peers.len() {
            let p = &mut self.peers[peer];
            if !p.want_pong {
                continue;
            }
            if p.dead.is_some() || p.farewell {
                p.want_pong = false;
                continue;
            }
            if self.send_control(net, peer, wire::PONG).is_none() {
                return;
            }
            self.peers[peer].want_pong = false;
        }
        self.pongs_owed = false;
    }

    /// A delivered message's buffer is free again: count it consumed and
    /// repost it; owe a credit message once
    /// [`credit_every`](crate::geometry::Geometry::credit_every) are
    /// unreported.
    pub(crate) fn consumed(&mut self, net: &Net<T>, buf: usize, src: usize, dir: usize) {
        if let Some(p) = self.peers.get_mut(src) {
            p.consumed[dir] = p.consumed[dir].wrapping_add(1);
            let unreported = p.consumed[0]
                .wrapping_add(p.consumed[1])
                .wrapping_sub(p.reported);
            if unreported as usize >= net.geo.credit_every() {
                p.want_credit = true;
            }
        }
        self.post(net, Post::Recv { op: buf as u32 });
    }
}
