//! Sending: posts handed to the transport in order (at once, or behind
//! the [`backlog`](crate::backlog) while it refuses), and the AMs and
//! control messages (credits, pongs) built on them.

use crate::geometry::POOL_REP;
use crate::net::Net;
use crate::ops::{Op, Post};
use crate::state::State;
use crate::transport::{PostError, Transport};
use crate::wire::{self, control_header, Header};
use rgex_core::{Error, Rank};

impl<T: Transport> State<T> {
    /// Hand one post to the transport.
    #[inline]
    pub(crate) fn issue(&self, net: &Net<T>, p: &Post) -> Result<(), T::Error> {
        let t = &net.transport;
        match *p {
            // SAFETY: receive buffer `op` lies in the registered receive
            // area and is ours until its completion; one post per op.
            Post::Recv { op } => unsafe {
                t.post_recv(op, net.recv_buf(op as usize), net.geo.slot, net.recv_desc)
            },
            Post::Send {
                peer,
                buf,
                len,
                inject: true,
                ..
            } if !self.closing => {
                // SAFETY: `buf` is a send buffer we hold, readable for `len`
                // bytes, and `len` is within the inject size (`send_am`
                // chose inject only then).
                unsafe { t.inject(peer, buf as *const u8, len) }
            }
            Post::Send {
                op, peer, buf, len, ..
            } => {
                // SAFETY: the bytes at `buf` stay untouched until the send's
                // completion (they are a send buffer we hold).
                unsafe { t.post_send(op, peer, buf as *const u8, len, net.send_desc) }
            }
            Post::Write {
                op,
                peer,
                src,
                len,
                desc,
                offset,
                delivery,
            } => {
                // SAFETY: the source stays valid until completion (segment,
                // send buffer, staging or a caller buffer under its
                // contract); the remote range was bounds-checked.
                unsafe { t.post_write(op, peer, src as *const u8, len, desc, offset, delivery) }
            }
            Post::Read {
                op,
                peer,
                dst,
                len,
                desc,
                offset,
            } => {
                // SAFETY: as for Write, for the destination.
                unsafe { t.post_read(op, peer, dst as *mut u8, len, desc, offset) }
            }
        }
    }

    /// Post in order: behind the backlog if there is one, into it if the
    /// transport refuses for now. A hard failure fails the operation.
    #[inline]
    pub(crate) fn post(&mut self, net: &Net<T>, p: Post) {
        if !self.backlog.is_empty() {
            self.backlog.push(p);
            return;
        }
        match self.issue(net, &p) {
            Ok(()) => self.issued(net, &p),
            Err(e) if e.is_again() => self.backlog.push(p),
            Err(e) => self.fail(net, p.op() as usize, &e.to_string()),
        }
    }

    /// The transport took `p`: an injected send is finished now (it has
    /// no completion to wait for: its buffer goes back to its pool, and
    /// the goodbye sent at close, without injection, flushes it: see
    /// [`say_goodbyes`](Self::say_goodbyes)); anything else when its
    /// completion is read. Nothing was heard from the peer, so its stall
    /// clock is not touched. (While closing no post is injected: see
    /// [`issue`](Self::issue).)
    #[inline]
    fn issued(&mut self, net: &Net<T>, p: &Post) {
        if let Post::Send {
            op, inject: true, ..
        } = *p
        {
            if self.closing {
                return;
            }
            self.ops[op as usize] = Op::Idle;
            self.sends.release(&net.geo, op as usize - net.geo.n_recv);
        }
    }

    /// Retry the backlog in order; stop at the first refusal.
    pub(crate) fn flush_backlog(&mut self, net: &Net<T>) -> usize {
        let mut n = 0;
        while let Some(p) = self.backlog.front() {
            match self.issue(net, p) {
                Ok(()) => {
                    let p = self.backlog.pop().expect("front exists");
                    self.issued(net, &p);
                    n += 1;
                }
                Err(e) if e.is_again() => break,
                Err(e) => {
                    let p = self.backlog.pop().expect("front exists");
                    self.fail(net, p.op() as usize, &e.to_string());
                }
            }
        }
        n
    }

    /// Write an AM header into send buffer `slot` for `peer` (with the
    /// credits we owe it) and post the send of `hlen + len` bytes.
    #[inline]
    pub(crate) fn send_am(
        &mut self,
        net: &Net<T>,
        slot: usize,
        peer: usize,
        mut h: Header,
        args: &[u32],
    ) {
        self.credits.report(peer, &mut h);
        let buf = net.send_buf(slot);
        // SAFETY: send buffer `slot` is ours (taken from its pool) and
        // 64-aligned with room for the longest header.
        unsafe { h.write(buf, args) };
        let len = h.hlen
            + if h.category() == rgex_core::Category::Long {
                0
            } else {
                h.len as usize
            };
        self.send_from(net, slot, peer as u32, len);
    }

    /// Post the send of the first `len` bytes of send buffer `slot` (a
    /// message written there) to `peer`, as the buffer's AM operation;
    /// injected when it fits.
    #[inline]
    pub(crate) fn send_from(&mut self, net: &Net<T>, slot: usize, peer: u32, len: usize) {
        let op = (net.geo.n_recv + slot) as u32;
        self.ops[op as usize] = Op::AmSend { peer };
        self.post(
            net,
            Post::Send {
                op,
                peer,
                buf: net.send_buf(slot) as usize,
                len,
                inject: len <= net.transport.caps().inject_size,
            },
        );
    }

    /// Send credit messages owed, where a reply buffer is free.
    pub(crate) fn send_credits(&mut self, net: &Net<T>) {
        for peer in 0..self.peers.len() {
            let p = &self.peers[peer];
            if !self.credits.owed(peer) || p.dead.is_some() || p.farewell {
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
        let slot = self.sends.claim(POOL_REP)? as usize;
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
        self.peers.pongs_sent();
    }

    /// A delivered message's buffer is free again: count it consumed and
    /// repost it; owe a credit message once
    /// [`credit_every`](crate::geometry::Geometry::credit_every) are
    /// unreported.
    #[inline]
    pub(crate) fn consumed(&mut self, net: &Net<T>, buf: usize, src: usize, dir: usize) {
        self.credits.consumed(&net.geo, src, dir);
        self.post(net, Post::Recv { op: buf as u32 });
    }
}

/// A refused post as the caller sees it: would-block if the transport's
/// queue is full for now, else its error.
pub(crate) fn would_block_or<E: PostError>(e: E, peer: Rank) -> Error {
    if e.is_again() {
        Error::WouldBlock {
            peer,
            resource: "the provider's transmit queue",
        }
    } else {
        e.into()
    }
}
