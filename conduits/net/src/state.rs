//! The conduit's mutable network state, kept under one lock, and what
//! progress does with it: read completions, retry the backlog, read
//! back, send owed credits.
//!
//! Every transport call is made with this lock held (what libfabric's
//! `FI_THREAD_DOMAIN` asks of the application, and what our own
//! bookkeeping needs anyway). Handlers never run under it. The state is
//! made of owned parts, each a type in its own file with its own small
//! API: [`Ops`] (operation slots), [`SendPools`] (send buffers and Long
//! staging), [`Credits`], [`Backlog`], [`Peers`] (health) and
//! [`ReadyQueues`] (received messages waiting). What an operation took
//! and has not yet handed to the transport is held by a
//! [`Held`](crate::held::Held) guard, which gives it back when dropped.
//! What the state does with its parts: [`send`](crate::send) (posts,
//! AMs, control messages), [`health`](crate::health),
//! [`farewell`](crate::farewell) and [`readback`](crate::readback).

use crate::backlog::Backlog;
use crate::credits::Credits;
use crate::geometry::Geometry;
use crate::net::Net;
use crate::ops::{Op, Ops, Post};
use crate::peers::Peers;
use crate::pools::SendPools;
use crate::readback;
use crate::ready::{dir_index, Ready, ReadyQueues};
use crate::ticker::Ticks;
use crate::transport::{OpEnd, PostError, Transport};
use crate::wire::{self, Header};
use rgex_core::{Locality, OpCounter, Rank};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The state under the conduit's lock (see the module docs).
pub struct State<T: Transport> {
    pub(crate) ops: Ops<T::Region>,
    pub(crate) sends: SendPools<T::Region>,
    pub(crate) credits: Credits,
    pub(crate) backlog: Backlog,
    pub(crate) peers: Peers,
    pub(crate) ready: ReadyQueues,
    /// The ticker's clock.
    pub(crate) ticks: Arc<Ticks>,
    /// Peers whose `waiting` is not empty (progress looks only at these).
    pub(crate) reading_back: Vec<u32>,
    /// The job's neighbourhood table (which peers the smp bypass carries:
    /// see [`network_peer`](Self::network_peer)).
    pub(crate) locality: Locality,
    /// The process is ending (see `drain`): nothing is injected any more
    /// (every send reports its completion, which drain waits for), every
    /// network peer is told goodbye once nothing to it is outstanding
    /// ([`say_goodbyes`](Self::say_goodbyes)), and a peer found dead is
    /// not reported (it has most likely left).
    pub(crate) closing: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) me: Rank,
}

impl<T: Transport> State<T> {
    /// Fresh state for the buffers of `geo`, with the job's neighbourhood
    /// table and the dead-peer timeout `timeout_secs` (0: never).
    pub(crate) fn new(geo: &Geometry, locality: Locality, timeout_secs: u64) -> Self {
        let me = locality.me();
        State {
            ops: Ops::new(geo.n_recv, geo.n_send()),
            sends: SendPools::new(geo),
            credits: Credits::new(geo.size),
            backlog: Backlog::default(),
            peers: Peers::new(geo.size, Instant::now()),
            ready: ReadyQueues::default(),
            ticks: Arc::default(),
            reading_back: Vec::new(),
            locality,
            closing: false,
            timeout: (timeout_secs > 0).then(|| Duration::from_secs(timeout_secs)),
            me,
        }
    }

    /// `peer` is reached through this network (not this rank itself, not
    /// a node-local peer that the smp bypass carries), so told goodbye
    /// when this rank closes ([`say_goodbyes`](Self::say_goodbyes)).
    pub(crate) fn network_peer(&self, peer: usize) -> bool {
        peer != self.me.index() && !self.locality.via_shm(Rank(peer as u32))
    }

    /// Post every receive buffer (setup).
    pub(crate) fn post_receives(&mut self, net: &Net<T>) -> Result<(), T::Error> {
        for i in 0..net.geo.n_recv {
            match self.issue(net, &Post::Recv { op: i as u32 }) {
                Ok(()) => {}
                Err(e) if e.is_again() => self.backlog.push(Post::Recv { op: i as u32 }),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// True when nothing we posted is outstanding: no backlog, every send
    /// buffer back in its pool, every dynamic operation slot free, no put
    /// waiting for a read back, and (while closing) every network peer
    /// still there told goodbye. Operations abandoned to a departed peer
    /// (and the send buffers they hold) do not count: they may never come
    /// back.
    pub(crate) fn quiet(&self, net: &Net<T>) -> bool {
        self.backlog.is_empty()
            && self.reading_back.is_empty()
            && self.sends.all_back(&net.geo)
            && self.ops.all_back()
            && (!self.closing || self.said_goodbyes())
    }

    /// Read completions, retry the backlog, send owed credits. Returns how
    /// many things happened.
    pub(crate) fn progress(&mut self, net: &Net<T>) -> usize {
        let mut n = 0;
        for _ in 0..4 {
            let polled = net.transport.poll(|e| match e {
                OpEnd::Done { op, len } => self.complete(net, op as usize, len),
                OpEnd::Failed { op, cancelled, why } => {
                    self.error_completion(net, op as usize, cancelled, &why)
                }
            });
            match polled {
                Ok(p) => {
                    n += p.events;
                    if !p.again {
                        break;
                    }
                }
                Err(e) => {
                    tracing::error!(conduit = T::NAME, rank = self.me.0, "{e}");
                    break;
                }
            }
        }
        if !self.backlog.is_empty() {
            n += self.flush_backlog(net);
        }
        if !self.reading_back.is_empty() {
            n += self.read_back(net);
        }
        self.send_credits(net);
        if self.peers.pongs_owed() {
            self.send_pongs(net);
        }
        n
    }

    /// Operation `id` failed (`cancelled`: the endpoint is closing).
    fn error_completion(&mut self, net: &Net<T>, id: usize, cancelled: bool, why: &str) {
        if id < net.geo.n_recv {
            // A receive failed (cancelled at close, or truncated): repost
            // unless the endpoint is going away.
            if !cancelled {
                tracing::warn!(
                    conduit = T::NAME,
                    rank = self.me.0,
                    "a receive failed: {why}"
                );
                self.post(net, Post::Recv { op: id as u32 });
            }
            return;
        }
        self.fail(net, id, why);
    }

    /// One completion: what its operation does next.
    #[inline]
    fn complete(&mut self, net: &Net<T>, id: usize, len: usize) {
        if id < net.geo.n_recv {
            self.incoming(net, id, len);
        } else {
            self.finish(net, id, false);
        }
    }

    /// A receive completed into buffer `id`.
    fn incoming(&mut self, net: &Net<T>, id: usize, len: usize) {
        let mut args = [0u32; rgex_core::MAX_ARGS];
        // SAFETY: the network wrote `len <= slot` bytes into receive
        // buffer `id`, which is ours until reposted.
        let msg = unsafe { std::slice::from_raw_parts(net.recv_buf(id), len.min(net.geo.slot)) };
        // A control message says one of the things a control message
        // says; a goodbye comes from another rank (one "from" this rank
        // would mark it departed from itself).
        let valid = |h: &Header| {
            (h.src as usize) < self.peers.len()
                && (!h.is_control()
                    || h.handler == wire::CREDIT_ONLY
                    || (matches!(h.handler, wire::GOODBYE | wire::PING | wire::PONG)
                        && h.src != self.me.0))
        };
        let h = match Header::read(msg, &mut args) {
            Some(h) if valid(&h) => h,
            _ => {
                tracing::warn!(
                    conduit = T::NAME,
                    rank = self.me.0,
                    len,
                    "dropped a malformed message of {len} bytes"
                );
                self.post(net, Post::Recv { op: id as u32 });
                return;
            }
        };
        let src = h.src as usize;
        self.credits.returned(src, h.ack_req, h.ack_rep);
        let p = &mut self.peers[src];
        p.heard = true;
        p.stalled_since = None;
        if h.is_control() {
            match h.handler {
                // Answered at the end of this progress (`send_pongs`).
                wire::PING => self.peers.owe_pong(src),
                wire::PONG => p.pinged = false,
                _ => {}
            }
            self.post(net, Post::Recv { op: id as u32 });
            if h.is_goodbye() {
                self.depart(h.src as usize);
            }
            return;
        }
        self.credits.received(src);
        self.ready.push(
            dir_index(h.direction()),
            Ready {
                buf: id as u32,
                len: len as u32,
            },
        );
    }

    /// Free what send buffer `slot`'s Long reserved (its write's
    /// operation slot, its staging memory), if anything: at the write's
    /// completion, or when the AM goes without a write.
    #[inline]
    pub(crate) fn unstage(&mut self, slot: usize) {
        if let Some(op) = self.sends.take_long_op(slot) {
            self.ops.free(op);
            self.sends.clear_staging(slot);
        }
    }

    /// Operation `id` (not a receive) completed, or failed when `failed`.
    pub(crate) fn finish(&mut self, net: &Net<T>, id: usize, failed: bool) {
        let geo = &net.geo;
        let n_recv = geo.n_recv;
        let op = std::mem::replace(&mut self.ops[id], Op::Idle);
        // A failed operation's waiters learn why (Event::wait).
        let failure = failed.then(|| self.failure_of(&op));
        let settle = |c: &OpCounter| match &failure {
            Some(why) => c.fail(why.clone()),
            None => c.done(),
        };
        match op {
            Op::Idle | Op::Recv => {}
            Op::Abandoned { slot, mr, .. } => {
                // Its completions already fired: only release what it held.
                drop(mr);
                if let Some(slot) = slot {
                    self.sends.reclaim(geo, slot as usize);
                }
                self.ops.reclaim(id as u32);
            }
            Op::AmSend { peer } => {
                self.peers.heard_from(peer);
                self.sends.release(geo, id - n_recv);
            }
            // No sign of life (see `Op::Ping`).
            Op::Ping { .. } => self.sends.release(geo, id - n_recv),
            Op::LongWrite {
                slot,
                peer,
                header_after,
            } => {
                self.peers.heard_from(peer);
                debug_assert_eq!(self.sends.long_op(slot as usize), Some(id as u32));
                self.unstage(slot as usize);
                match header_after {
                    Some(len) if !failed && self.peers[peer as usize].dead.is_none() => {
                        self.send_from(net, slot as usize, peer, len);
                    }
                    _ => self.sends.release(geo, slot as usize),
                }
            }
            Op::Put {
                peer,
                rc,
                lc,
                bounce,
                mr,
                flush_at,
                ..
            } => {
                self.peers.heard_from(peer);
                if let Some(b) = bounce {
                    self.sends.release(geo, b as usize);
                }
                drop(mr);
                if let Some(lc) = lc {
                    lc.done();
                }
                self.ops.free(id as u32);
                match flush_at {
                    Some(_) if !failed && self.peers[peer as usize].dead.is_some() => {
                        rc.fail(self.unreachable(peer as usize));
                    }
                    Some(at) if !failed => {
                        // Landed once a read issued after this completion
                        // returns; a put with a counter of its own (a
                        // network without delivery completion) reads at once.
                        let now = !rc.is_batched();
                        self.wait_read_back(peer, rc, at, now);
                    }
                    _ => settle(&rc),
                }
            }
            Op::Flush { peer, counters } => {
                self.peers.heard_from(peer);
                readback::settle(counters, failure.as_deref());
                self.ops.free(id as u32);
            }
            Op::Get {
                peer,
                done,
                bounce,
                mr,
                ..
            } => {
                self.peers.heard_from(peer);
                if let Some((slot, dst, len)) = bounce {
                    if !failed {
                        // SAFETY: the read landed `len` bytes in bounce
                        // buffer `slot`; `dst` is the caller's buffer, valid
                        // until `done` completes (try_get's contract).
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                net.send_buf(slot as usize),
                                dst as *mut u8,
                                len,
                            )
                        };
                    }
                    self.sends.release(geo, slot as usize);
                }
                drop(mr);
                settle(&done);
                self.ops.free(id as u32);
            }
            Op::Atomic {
                peer,
                slot,
                size,
                fetched,
                done,
            } => {
                self.peers.heard_from(peer);
                // SAFETY: the result word at +16 of send buffer `slot` was
                // written by the completed fetch (or holds zero).
                let v = unsafe {
                    let r = net.send_buf(slot as usize).add(16);
                    if size == 4 {
                        u64::from(std::ptr::read(r.cast::<u32>()))
                    } else {
                        std::ptr::read(r.cast::<u64>())
                    }
                };
                // Relaxed: done()'s Release publishes it to the waiter.
                fetched.store(v, Ordering::Relaxed);
                self.sends.release(geo, slot as usize);
                settle(&done);
                self.ops.free(id as u32);
            }
        }
    }
}
