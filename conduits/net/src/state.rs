//! The conduit's mutable network state, kept under one lock, and what
//! progress does with it: read completions, retry the backlog, read
//! back, send owed credits.
//!
//! Every transport call is made with this lock held (what libfabric's
//! `FI_THREAD_DOMAIN` asks of the application, and what our own
//! bookkeeping needs anyway). Handlers never run under it. Its parts,
//! one file each: [`ops`](crate::ops) (operation slots),
//! [`pools`](crate::pools) (send buffers), [`credits`](crate::credits),
//! [`backlog`](crate::backlog), [`health`](crate::health) (dead peers),
//! [`ready`](crate::ready) (received messages waiting) and
//! [`readback`](crate::readback).

use crate::geometry::DYNAMIC_OPS;
use crate::net::Net;
use crate::ops::{Op, Post};
use crate::peers::Peer;
use crate::pools::Staging;
use crate::readback;
use crate::ready::{dir_index, Ready, ReadyCount};
use crate::ticker::Ticks;
use crate::transport::{Event, PostError, Transport};
use crate::wire::{self, Header};
use rgex_core::{Completion, Locality, Rank};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The state under the conduit's lock (see the module docs).
pub struct State<T: Transport> {
    pub(crate) ops: Vec<Op<T::Region>>,
    pub(crate) free_ops: Vec<u32>,
    pub(crate) pools: [Vec<u32>; 3],
    /// Outstanding uses of each send buffer (the header send, a Long's write).
    pub(crate) slot_pending: Vec<u8>,
    /// Long staging memory, per send buffer, from prepare to write completion.
    pub(crate) staging: Vec<Option<Staging<T::Region>>>,
    /// The write operation reserved for a prepared Long, per send buffer.
    pub(crate) long_op: Vec<u32>,
    pub(crate) peers: Vec<Peer>,
    pub(crate) backlog: VecDeque<Post>,
    /// Received messages waiting for delivery, per direction.
    pub(crate) ready: [VecDeque<Ready>; 2],
    /// `ready`'s lengths, readable without the lock (see [`ReadyCount`]).
    pub(crate) ready_count: Arc<ReadyCount>,
    /// The ticker's clock.
    pub(crate) ticks: Arc<Ticks>,
    /// Errors already printed, per peer (once each).
    pub(crate) reported_dead: Vec<bool>,
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
    /// Some peer's [`want_pong`](Peer::want_pong) is set (progress looks
    /// at the peers only then).
    pub(crate) pongs_owed: bool,
    pub(crate) me: Rank,
    /// Dynamic operation slots given up on ([`Op::Abandoned`]), and the
    /// send buffers they hold: not waited for by [`quiet`](Self::quiet).
    pub(crate) abandoned_ops: usize,
    pub(crate) abandoned_slots: usize,
}

impl<T: Transport> State<T> {
    /// Fresh state for `net` at rank `me`, with the dead-peer timeout
    /// `timeout_secs` (0: never).
    pub(crate) fn new(net: &Net<T>, locality: Locality, timeout_secs: u64) -> Self {
        let me = locality.me();
        let g = &net.geo;
        let n_send = g.n_send();
        let mut ops = Vec::with_capacity(g.n_ops());
        ops.extend((0..g.n_recv).map(|_| Op::Recv));
        ops.extend((0..n_send).map(|_| Op::Idle));
        ops.extend((0..DYNAMIC_OPS).map(|_| Op::Idle));
        let dyn0 = (g.n_recv + n_send) as u32;
        let mut pools: [Vec<u32>; 3] = Default::default();
        let mut s = 0u32;
        for (p, &n) in pools.iter_mut().zip(&g.pools) {
            // Reversed, so pop() hands out the lowest first.
            *p = (s..s + n as u32).rev().collect();
            s += n as u32;
        }
        let now = Instant::now();
        State {
            ops,
            free_ops: (dyn0..g.n_ops() as u32).rev().collect(),
            pools,
            slot_pending: vec![0; n_send],
            staging: (0..n_send).map(|_| None).collect(),
            long_op: vec![u32::MAX; n_send],
            peers: (0..g.size).map(|_| Peer::new(now)).collect(),
            backlog: VecDeque::new(),
            ready: Default::default(),
            ready_count: Arc::default(),
            ticks: Arc::default(),
            reported_dead: vec![false; g.size],
            reading_back: Vec::new(),
            locality,
            closing: false,
            timeout: (timeout_secs > 0).then(|| Duration::from_secs(timeout_secs)),
            pongs_owed: false,
            me,
            abandoned_ops: 0,
            abandoned_slots: 0,
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
                Err(e) if e.is_again() => self.backlog.push_back(Post::Recv { op: i as u32 }),
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
        let lent: usize = self
            .pools
            .iter()
            .zip(&net.geo.pools)
            .map(|(p, &n)| n - p.len())
            .sum();
        self.backlog.is_empty()
            && self.reading_back.is_empty()
            && lent == self.abandoned_slots
            && self.free_ops.len() + self.abandoned_ops == DYNAMIC_OPS
            && (!self.closing || self.said_goodbyes())
    }

    /// Read completions, retry the backlog, send owed credits. Returns how
    /// many things happened.
    pub(crate) fn progress(&mut self, net: &Net<T>) -> usize {
        let mut n = 0;
        for _ in 0..4 {
            let polled = net.transport.poll(|e| match e {
                Event::Done { op, len } => self.complete(net, op as usize, len),
                Event::Failed { op, cancelled, why } => {
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
        if self.pongs_owed {
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
        self.credits_returned(h.src as usize, h.ack_req, h.ack_rep);
        let p = &mut self.peers[h.src as usize];
        p.heard = true;
        p.stalled_since = None;
        if h.is_control() {
            match h.handler {
                // Answered at the end of this progress (`send_pongs`).
                wire::PING => {
                    p.want_pong = true;
                    self.pongs_owed = true;
                }
                wire::PONG => p.pinged = false,
                _ => {}
            }
            self.post(net, Post::Recv { op: id as u32 });
            if h.is_goodbye() {
                self.depart(h.src as usize);
            }
            return;
        }
        p.received = p.received.wrapping_add(1);
        let dir = dir_index(h.direction());
        self.ready[dir].push_back(Ready {
            buf: id as u32,
            len: len as u32,
        });
        self.ready_count.set(dir, self.ready[dir].len());
    }

    /// Operation `id` (not a receive) completed, or failed when `failed`.
    pub(crate) fn finish(&mut self, net: &Net<T>, id: usize, failed: bool) {
        let n_recv = net.geo.n_recv;
        let op = std::mem::replace(&mut self.ops[id], Op::Idle);
        // A failed operation's waiters learn why (Event::wait).
        let failure = failed.then(|| self.failure_of(&op));
        let settle = |c: &Completion| match &failure {
            Some(why) => c.fail(why.clone()),
            None => c.done(),
        };
        let touch = |peers: &mut Vec<Peer>, p: u32| {
            if let Some(p) = peers.get_mut(p as usize) {
                p.heard = true;
            }
        };
        match op {
            Op::Idle | Op::Recv => {}
            Op::Abandoned { slot, mr, .. } => {
                // Its completions already fired: only release what it held.
                drop(mr);
                if let Some(slot) = slot {
                    self.release_slot(net, slot as usize);
                    self.abandoned_slots -= 1;
                }
                self.abandoned_ops -= 1;
                self.free_op(id);
            }
            Op::AmSend { peer } => {
                touch(&mut self.peers, peer);
                self.release_slot(net, id - n_recv);
            }
            // No sign of life (see `Op::Ping`).
            Op::Ping { .. } => self.release_slot(net, id - n_recv),
            Op::LongWrite {
                slot,
                peer,
                header_after,
            } => {
                touch(&mut self.peers, peer);
                self.free_op(id);
                self.staging[slot as usize] = None;
                match header_after {
                    Some(len) if !failed && self.peers[peer as usize].dead.is_none() => {
                        let op = (n_recv + slot as usize) as u32;
                        self.ops[op as usize] = Op::AmSend { peer };
                        self.post(
                            net,
                            Post::Send {
                                op,
                                peer,
                                buf: net.send_buf(slot as usize) as usize,
                                len,
                                inject: len <= net.transport.caps().inject_size,
                            },
                        );
                    }
                    _ => self.release_slot(net, slot as usize),
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
                touch(&mut self.peers, peer);
                if let Some(b) = bounce {
                    self.release_slot(net, b as usize);
                }
                drop(mr);
                if let Some(lc) = lc {
                    lc.done();
                }
                self.free_op(id);
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
                touch(&mut self.peers, peer);
                readback::settle(counters, failure.as_deref());
                self.free_op(id);
            }
            Op::Get {
                peer,
                done,
                bounce,
                mr,
                ..
            } => {
                touch(&mut self.peers, peer);
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
                    self.release_slot(net, slot as usize);
                }
                drop(mr);
                settle(&done);
                self.free_op(id);
            }
            Op::Atomic {
                peer,
                slot,
                size,
                fetched,
                done,
            } => {
                touch(&mut self.peers, peer);
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
                self.release_slot(net, slot as usize);
                settle(&done);
                self.free_op(id);
            }
        }
    }
}
