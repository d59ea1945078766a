//! Handing posts to the transport, and the backlog of those it refused
//! for now (would-block), retried in order by progress: once anything
//! of an operation was posted, all of it is, and nothing overtakes.

use crate::net::Net;
use crate::ops::{Op, Post};
use crate::state::State;
use crate::transport::{PostError, Transport};
use rgex_core::{Error, Rank};

impl<T: Transport> State<T> {
    /// Issue the first piece of RMA operation `id` to `peer`. If the
    /// transport refuses it, nothing was issued: free the operation slot
    /// and the bounce buffer and report (would-block as
    /// [`Error::WouldBlock`]).
    pub(crate) fn issue_first(
        &mut self,
        net: &Net<T>,
        id: u32,
        bounce: Option<u32>,
        peer: Rank,
        post: &Post,
    ) -> Result<(), Error> {
        let Err(e) = self.issue(net, post) else {
            return Ok(());
        };
        self.ops[id as usize] = Op::Idle;
        self.free_ops.push(id);
        if let Some(b) = bounce {
            self.release_slot(net, b as usize);
        }
        Err(would_block_or(e, peer))
    }

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
    pub(crate) fn post(&mut self, net: &Net<T>, p: Post) {
        if !self.backlog.is_empty() {
            self.backlog.push_back(p);
            return;
        }
        match self.issue(net, &p) {
            Ok(()) => self.issued(net, &p),
            Err(e) if e.is_again() => self.backlog.push_back(p),
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
            self.release_slot(net, op as usize - net.geo.n_recv);
        }
    }

    /// Retry the backlog in order; stop at the first refusal.
    pub(crate) fn flush_backlog(&mut self, net: &Net<T>) -> usize {
        let mut n = 0;
        while let Some(p) = self.backlog.front() {
            match self.issue(net, p) {
                Ok(()) => {
                    let p = self.backlog.pop_front().expect("front exists");
                    self.issued(net, &p);
                    n += 1;
                }
                Err(e) if e.is_again() => break,
                Err(e) => {
                    let p = self.backlog.pop_front().expect("front exists");
                    self.fail(net, p.op() as usize, &e.to_string());
                }
            }
        }
        n
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
