//! The conduit's mutable network state, kept under one lock: operation
//! slots, send-buffer pools, credits, the backlog of posts the provider
//! refused for now, and the received messages waiting for delivery.
//!
//! Every libfabric call on the endpoint and CQ is made with this lock
//! held, which is what `FI_THREAD_DOMAIN` asks of the application (and
//! what our own bookkeeping needs anyway). Handlers never run under it.

use crate::fabric::{CqRead, FiError, MemoryRegion};
use crate::net::{Net, POOL_REP};
use crate::readback::{self, Waiting};
use crate::ticker::Ticks;
use crate::wire::{self, Header};
use libfabric_sys as sys;
use rgex_core::{Completion, Direction, Error, Rank};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Request or reply, as an index into per-direction arrays.
#[inline]
pub(crate) fn dir_index(d: Direction) -> usize {
    match d {
        Direction::Request => 0,
        Direction::Reply => 1,
    }
}

/// Memory staged for a Long AM larger than a send buffer.
pub(crate) struct Staging {
    // Dropped before `mem` (field order): the registration first.
    pub mr: Option<MemoryRegion>,
    pub mem: Box<[u64]>,
}

impl Staging {
    pub fn ptr(&self) -> *mut u8 {
        self.mem.as_ptr() as *mut u8
    }
}

/// What an operation slot is doing.
pub(crate) enum Op {
    /// Not in use (dynamic slots only).
    Idle,
    /// A posted receive buffer (slot id = buffer index).
    Recv,
    /// An AM (or credit message) sent from send buffer `id - n_recv`.
    AmSend { peer: u32 },
    /// A Long's payload write; the header goes after it unless it was
    /// already posted behind it (`FI_ORDER_SAW`).
    LongWrite {
        slot: u32,
        peer: u32,
        header_after: Option<usize>,
    },
    /// One put (or one piece of a large one).
    Put {
        peer: u32,
        rc: Arc<Completion>,
        lc: Option<Arc<Completion>>,
        bounce: Option<u32>,
        mr: Option<Arc<MemoryRegion>>,
        /// Written without FI_DELIVERY_COMPLETE: the last byte's offset;
        /// the put then waits for a read back ([`readback`]).
        flush_at: Option<u64>,
    },
    /// The 1-byte read confirming that a batch of puts landed.
    Flush {
        peer: u32,
        counters: Vec<(Arc<Completion>, u64)>,
    },
    /// One get (or one piece of a large one).
    Get {
        peer: u32,
        done: Arc<Completion>,
        /// Bounce buffer, destination and length to copy at completion.
        bounce: Option<(u32, usize, usize)>,
        mr: Option<Arc<MemoryRegion>>,
    },
    /// One offloaded atomic; operands and result in send buffer `slot`.
    Atomic {
        peer: u32,
        slot: u32,
        size: u8,
        fetched: Arc<AtomicU64>,
        done: Arc<Completion>,
    },
}

/// A post the provider refused with FI_EAGAIN, retried in order by poll.
pub(crate) enum Post {
    Recv {
        op: u32,
    },
    Send {
        op: u32,
        peer: u32,
        buf: usize,
        len: usize,
        /// Sent with `fi_inject`: no completion comes, so the operation
        /// is finished as soon as the provider takes it.
        inject: bool,
    },
    Write {
        op: u32,
        peer: u32,
        src: usize,
        len: usize,
        desc: usize,
        offset: u64,
        flags: u64,
    },
    Read {
        op: u32,
        peer: u32,
        dst: usize,
        len: usize,
        desc: usize,
        offset: u64,
    },
}

/// Per-peer flow control and health.
pub(crate) struct Peer {
    /// Messages sent to the peer, per direction (cumulative, wrapping).
    pub sent: [u32; 2],
    /// Of those, how many the peer reported consumed.
    pub acked: [u32; 2],
    /// Messages from the peer this rank consumed, per direction.
    pub consumed: [u32; 2],
    /// consumed[0] + consumed[1] when last reported to the peer.
    pub reported: u32,
    /// A credit message is owed and waits for a send buffer.
    pub want_credit: bool,
    /// Messages from the peer received (not control messages), both
    /// directions (cumulative, wrapping): those not yet
    /// [`consumed`](Self::consumed) wait for delivery.
    pub received: u32,
    /// Why the peer is considered gone.
    pub dead: Option<Arc<str>>,
    /// It left the job: its goodbye came ([`State::depart`]). It is
    /// [`dead`](Self::dead) too, for what is sent to it.
    pub departed: bool,
    /// This rank said goodbye to it while closing: nothing more is sent
    /// to it.
    pub farewell: bool,
    /// A sign of life (a message or a completion) came since
    /// `last_heard` was last brought up to date. A flag, not a clock
    /// read: reading the clock for every message cost more than the
    /// rest of its bookkeeping; only a stalled send needs the time.
    pub heard: bool,
    /// Last sign of life, as of the last stall check.
    pub last_heard: Instant,
    /// Since when a send to it has waited for credits.
    pub stalled_since: Option<Instant>,
    /// Puts whose writes completed, waiting for a read back.
    pub waiting: Waiting,
    /// A node-local peer carried over the network that smp has reported
    /// gone: since when, and [`received`](Self::received) then (see
    /// [`State::gone_from_node`]).
    pub node_gone_since: Option<(Instant, u32)>,
}

/// The header of a control message from `me` saying `what`
/// ([`wire::CREDIT_ONLY`], [`wire::GOODBYE`]): it reports what was
/// consumed (`send_am` stamps the counts) and runs no handler.
pub(crate) fn control_header(me: Rank, what: u8) -> Header {
    Header {
        kind: wire::CONTROL,
        handler: what,
        nargs: 0,
        hlen: wire::header_len(0),
        src: me.0,
        len: 0,
        ack_req: 0,
        ack_rep: 0,
        long_offset: 0,
    }
}

/// How many received messages wait for delivery, per direction: kept
/// beside the queues (written under the state lock whenever they change)
/// so that a poll with nothing to deliver takes no lock. It was 8 of the
/// 10 atomic read-modify-writes of an idle poll (each delivery direction
/// took its delivery lock and the state lock to find its queue empty):
/// 22% of a rank's time in an AM ping-pong over shm.
#[derive(Default)]
pub(crate) struct ReadyCount([AtomicUsize; 2]);

impl ReadyCount {
    /// Record the length of direction `dir`'s queue (under the state lock).
    #[inline]
    pub fn set(&self, dir: usize, n: usize) {
        // Relaxed: a hint. The queue itself is read under the state lock;
        // a poller that reads a stale 0 delivers at its next poll (the
        // thread that queued a message reads its own store), and a stale
        // non-zero only takes the locks for nothing.
        self.0[dir].store(n, Ordering::Relaxed);
    }

    /// True if direction `dir` may have messages waiting.
    #[inline]
    pub fn any(&self, dir: usize) -> bool {
        // Relaxed: see `set`.
        self.0[dir].load(Ordering::Relaxed) != 0
    }
}

/// A received message waiting for its handler.
#[derive(Clone, Copy)]
pub(crate) struct Ready {
    pub buf: u32,
    pub len: u32,
}

pub(crate) struct State {
    pub ops: Vec<Op>,
    pub free_ops: Vec<u32>,
    pub pools: [Vec<u32>; 3],
    /// Outstanding uses of each send buffer (the header send, a Long's write).
    pub slot_pending: Vec<u8>,
    /// Long staging memory, per send buffer, from prepare to write completion.
    pub staging: Vec<Option<Staging>>,
    /// The write operation reserved for a prepared Long, per send buffer.
    pub long_op: Vec<u32>,
    pub peers: Vec<Peer>,
    pub backlog: VecDeque<Post>,
    /// Received messages waiting for delivery, per direction.
    pub ready: [VecDeque<Ready>; 2],
    /// `ready`'s lengths, readable without the lock (see [`ReadyCount`]).
    pub ready_count: Arc<ReadyCount>,
    /// The ticker's clock.
    pub ticks: Arc<Ticks>,
    /// Keys for on-the-fly registrations (without FI_MR_PROV_KEY).
    pub next_key: u64,
    /// Errors already printed, per peer (once each).
    pub reported_dead: Vec<bool>,
    /// Peers whose `waiting` is not empty (progress looks only at these).
    pub(crate) reading_back: Vec<u32>,
    /// Per peer: reached through this network (not this rank itself, not
    /// a node-local peer that the smp bypass carries), so told goodbye
    /// when this rank closes ([`say_goodbyes`](Self::say_goodbyes)).
    pub network_peer: Vec<bool>,
    /// The process is ending (see `drain`): nothing is injected any more
    /// (every send reports its completion, which drain waits for), every
    /// network peer is told goodbye once nothing to it is outstanding
    /// ([`say_goodbyes`](Self::say_goodbyes)), and a peer found dead is
    /// not reported (it has most likely left).
    pub closing: bool,
    timeout: Option<Duration>,
    pub(crate) me: Rank,
}

/// A peer that went away, as an error naming it.
pub(crate) fn dead_error(me: Rank, peer: Rank, why: &str, what: &str) -> Error {
    Error::PeerUnreachable {
        what: what.to_string(),
        from: me,
        rank: peer,
        why: why.to_string(),
    }
}

impl State {
    pub fn new(net: &Net, me: Rank, timeout_secs: u64) -> Self {
        let g = &net.geo;
        let n_send = g.n_send();
        let mut ops = Vec::with_capacity(g.n_ops());
        ops.extend((0..g.n_recv).map(|_| Op::Recv));
        ops.extend((0..n_send).map(|_| Op::Idle));
        ops.extend((0..crate::net::DYNAMIC_OPS).map(|_| Op::Idle));
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
            peers: (0..g.size)
                .map(|_| Peer {
                    sent: [0; 2],
                    acked: [0; 2],
                    consumed: [0; 2],
                    reported: 0,
                    want_credit: false,
                    received: 0,
                    dead: None,
                    departed: false,
                    farewell: false,
                    heard: false,
                    last_heard: now,
                    stalled_since: None,
                    waiting: Waiting::default(),
                    node_gone_since: None,
                })
                .collect(),
            backlog: VecDeque::new(),
            ready: Default::default(),
            ready_count: Arc::default(),
            ticks: Arc::default(),
            next_key: 1 << 20,
            reported_dead: vec![false; g.size],
            reading_back: Vec::new(),
            network_peer: (0..g.size).map(|p| p != me.index()).collect(),
            closing: false,
            timeout: (timeout_secs > 0).then(|| Duration::from_secs(timeout_secs)),
            me,
        }
    }

    /// Post every receive buffer (setup).
    pub fn post_receives(&mut self, net: &Net) -> Result<(), FiError> {
        for i in 0..net.geo.n_recv {
            match self.issue(net, &Post::Recv { op: i as u32 }) {
                Ok(()) => {}
                Err(e) if e.is_again() => self.backlog.push_back(Post::Recv { op: i as u32 }),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Issue the first piece of RMA operation `id` to `peer`. If the
    /// provider refuses it, nothing was issued: free the operation slot
    /// and the bounce buffer and report (-FI_EAGAIN as would-block).
    pub fn issue_first(
        &mut self,
        net: &Net,
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
        Err(if e.is_again() {
            Error::WouldBlock {
                peer,
                resource: "the provider's transmit queue",
            }
        } else {
            e.into()
        })
    }

    /// Hand one post to the provider.
    pub fn issue(&self, net: &Net, p: &Post) -> Result<(), FiError> {
        let g = &net.geo;
        match *p {
            // SAFETY: receive buffer `op` lies in the registered receive
            // region and is ours until its completion; one context per op.
            Post::Recv { op } => unsafe {
                net.ep.recv(
                    net.recv_buf(op as usize),
                    g.slot,
                    net.desc(&net.recv_mr),
                    net.ctx(op as usize),
                )
            },
            Post::Send {
                peer,
                buf,
                len,
                inject: true,
                ..
            } if !self.closing => {
                // SAFETY: `buf` is a send buffer we hold, readable for `len`
                // bytes, and `len` is within the provider's inject size
                // (`send_am` chose inject only then).
                unsafe {
                    net.ep
                        .inject(buf as *const u8, len, net.peers[peer as usize].addr)
                }
            }
            Post::Send {
                op, peer, buf, len, ..
            } => {
                // SAFETY: the bytes at `buf` stay untouched until the send's
                // completion (they are a send buffer we hold, or staging).
                unsafe {
                    net.ep.send(
                        buf as *const u8,
                        len,
                        net.desc(&net.send_mr),
                        net.peers[peer as usize].addr,
                        net.ctx(op as usize),
                    )
                }
            }
            Post::Write {
                op,
                peer,
                src,
                len,
                desc,
                offset,
                flags,
            } => {
                let to = net.remote(peer as usize, offset);
                // SAFETY: the source stays valid until completion (segment,
                // send buffer, staging or a caller buffer under its
                // contract); the remote range was bounds-checked.
                unsafe {
                    net.ep.write(
                        src as *const u8,
                        len,
                        desc as *mut _,
                        to,
                        net.ctx(op as usize),
                        flags,
                    )
                }
            }
            Post::Read {
                op,
                peer,
                dst,
                len,
                desc,
                offset,
            } => {
                let from = net.remote(peer as usize, offset);
                // SAFETY: as for Write, for the destination.
                unsafe {
                    net.ep.read(
                        dst as *mut u8,
                        len,
                        desc as *mut _,
                        from,
                        net.ctx(op as usize),
                        0,
                    )
                }
            }
        }
    }

    /// Post in order: behind the backlog if there is one, into it if the
    /// provider refuses for now. A hard failure fails the operation.
    pub fn post(&mut self, net: &Net, p: Post) {
        if !self.backlog.is_empty() {
            self.backlog.push_back(p);
            return;
        }
        match self.issue(net, &p) {
            Ok(()) => self.issued(net, &p),
            Err(e) if e.is_again() => self.backlog.push_back(p),
            Err(e) => {
                let op = match p {
                    Post::Recv { op }
                    | Post::Send { op, .. }
                    | Post::Write { op, .. }
                    | Post::Read { op, .. } => op,
                };
                self.fail(net, op as usize, &e.to_string());
            }
        }
    }

    /// The provider took `p`: an injected send is finished now (it has
    /// no completion to wait for: its buffer goes back to its pool, and
    /// the goodbye sent at close, without injection, flushes it: see
    /// [`say_goodbyes`](Self::say_goodbyes)); anything else when its completion is read. Nothing was heard from
    /// the peer, so its stall clock is not touched. (While closing no
    /// post is injected: see [`issue`](Self::issue).)
    #[inline]
    fn issued(&mut self, net: &Net, p: &Post) {
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
    fn flush_backlog(&mut self, net: &Net) -> usize {
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
                    let op = match p {
                        Post::Recv { op }
                        | Post::Send { op, .. }
                        | Post::Write { op, .. }
                        | Post::Read { op, .. } => op,
                    };
                    self.fail(net, op as usize, &e.to_string());
                }
            }
        }
        n
    }

    /// True when nothing we posted is outstanding: no backlog, every send
    /// buffer back in its pool, every dynamic operation slot free, no put
    /// waiting for a read back, and (while closing) every network peer
    /// still there told goodbye.
    pub fn quiet(&self, net: &Net) -> bool {
        self.backlog.is_empty()
            && self.reading_back.is_empty()
            && self
                .pools
                .iter()
                .zip(&net.geo.pools)
                .all(|(p, &n)| p.len() == n)
            && self.free_ops.len() == crate::net::DYNAMIC_OPS
            && (!self.closing || self.said_goodbyes())
    }

    /// Take a dynamic operation slot.
    #[inline]
    pub fn take_op(&mut self) -> Option<u32> {
        self.free_ops.pop()
    }

    #[inline]
    fn free_op(&mut self, id: usize) {
        self.ops[id] = Op::Idle;
        self.free_ops.push(id as u32);
    }

    /// A free send buffer of `pool`, in use once (see
    /// [`release_slot`](Self::release_slot)), or `None` if all are taken.
    #[inline]
    pub fn claim_slot(&mut self, pool: usize) -> Option<u32> {
        let slot = self.pools[pool].pop()?;
        self.slot_pending[slot as usize] = 1;
        Some(slot)
    }

    /// One use of send buffer `slot` ended; back to its pool after the last.
    #[inline]
    pub fn release_slot(&mut self, net: &Net, slot: usize) {
        let p = &mut self.slot_pending[slot];
        *p = p.saturating_sub(1);
        if *p == 0 {
            self.pools[net.geo.pool_of(slot)].push(slot as u32);
        }
    }

    /// Write an AM header into send buffer `slot` for `peer` (with the
    /// credits we owe it) and post the send of `hlen + len` bytes.
    pub fn send_am(&mut self, net: &Net, slot: usize, peer: usize, mut h: Header, args: &[u32]) {
        let p = &mut self.peers[peer];
        h.ack_req = p.consumed[0];
        h.ack_rep = p.consumed[1];
        p.reported = p.consumed[0].wrapping_add(p.consumed[1]);
        p.want_credit = false;
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
                inject: len <= net.prov.inject_size,
            },
        );
    }

    /// Send credit messages owed, where a reply buffer is free.
    fn send_credits(&mut self, net: &Net) {
        for peer in 0..self.peers.len() {
            let p = &self.peers[peer];
            if !p.want_credit || p.dead.is_some() || p.farewell {
                continue;
            }
            let Some(slot) = self.claim_slot(POOL_REP) else {
                return;
            };
            self.send_am(
                net,
                slot as usize,
                peer,
                control_header(self.me, wire::CREDIT_ONLY),
                &[],
            );
        }
    }

    /// A delivered message's buffer is free again: count it consumed and
    /// repost it; owe a credit message once
    /// [`credit_every`](crate::net::Geometry::credit_every) are unreported.
    pub fn consumed(&mut self, net: &Net, buf: usize, src: usize, dir: usize) {
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

    /// Read completions, retry the backlog, send owed credits. Returns how
    /// many things happened.
    pub fn progress(&mut self, net: &Net) -> usize {
        let mut n = 0;
        const ENTRIES: usize = 16;
        let mut buf = [std::mem::MaybeUninit::uninit(); ENTRIES];
        for _ in 0..4 {
            match net.ep.cq().read(&mut buf) {
                Ok(CqRead::Entries(done)) => {
                    for e in done {
                        self.complete(net, e.op_context, e.len);
                    }
                    n += done.len();
                    if done.len() < ENTRIES {
                        break;
                    }
                }
                Ok(CqRead::Empty) => break,
                Ok(CqRead::Error) => {
                    if let Some(err) = net.ep.cq().read_error() {
                        n += 1;
                        self.error_completion(net, err);
                    }
                }
                Err(e) => {
                    eprintln!("rgex-ofi: {}: {e}", self.me);
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
        n
    }

    /// A put's write to `peer`, counted on `rc` and ending at byte `at`,
    /// completed without delivery-complete: it waits for a read back
    /// (at the next progress call if `now`).
    fn wait_read_back(&mut self, peer: u32, rc: Arc<Completion>, at: u64, now: bool) {
        let w = &mut self.peers[peer as usize].waiting;
        if w.is_empty() {
            self.reading_back.push(peer);
        }
        w.push(rc, at, now, self.ticks.now());
    }

    /// Post the read back of every batch that is due (see [`readback`]);
    /// how many were posted. A batch whose read finds no free operation
    /// slot waits for the next call.
    fn read_back(&mut self, net: &Net) -> usize {
        let now = self.ticks.now();
        let mut posted = 0;
        let mut i = 0;
        while i < self.reading_back.len() {
            let peer = self.reading_back[i];
            if !self.peers[peer as usize].waiting.due(now) {
                i += 1;
                continue;
            }
            let Some(id) = self.take_op() else { break };
            let (counters, at) = self.peers[peer as usize].waiting.take();
            self.reading_back.swap_remove(i);
            self.ops[id as usize] = Op::Flush { peer, counters };
            let dst = net.scratch() as usize;
            let desc = net.desc(&net.send_mr) as usize;
            self.post(
                net,
                Post::Read {
                    op: id,
                    peer,
                    dst,
                    len: 1,
                    desc,
                    offset: at,
                },
            );
            posted += 1;
        }
        posted
    }

    fn error_completion(&mut self, net: &Net, err: crate::fabric::CqError) {
        let Some(id) = net.op_of(err.context) else {
            eprintln!(
                "rgex-ofi: {}: error completion for an unknown operation: {}",
                self.me, err.error
            );
            return;
        };
        if id < net.geo.n_recv {
            // A receive failed (cancelled at close, or truncated): repost
            // unless the endpoint is going away.
            if err.error.code != sys::FI_ECANCELED {
                eprintln!("rgex-ofi: {}: {}", self.me, err.error);
                self.post(net, Post::Recv { op: id as u32 });
            }
            return;
        }
        self.fail(net, id, &err.error.to_string());
    }

    /// Operation `id` failed: its peer is declared dead, its resources are
    /// released and its completions fired so no waiter hangs (the error is
    /// printed once per peer, and later operations to it return errors).
    pub fn fail(&mut self, net: &Net, id: usize, why: &str) {
        let peer = match &self.ops[id] {
            Op::AmSend { peer }
            | Op::LongWrite { peer, .. }
            | Op::Put { peer, .. }
            | Op::Flush { peer, .. }
            | Op::Get { peer, .. }
            | Op::Atomic { peer, .. } => Some(*peer as usize),
            Op::Recv | Op::Idle => None,
        };
        if let Some(p) = peer {
            self.mark_dead(p, why);
        }
        self.finish(net, id, true);
    }

    /// Declare `peer` dead with reason `why` (printed once); puts to it
    /// waiting for a read back fail.
    pub fn mark_dead(&mut self, peer: usize, why: &str) {
        self.mark_gone(peer, why);
        // A peer that has already left is no news while this rank closes
        // too (a credit report or a goodbye to it fails), nor is one that
        // said goodbye.
        if !std::mem::replace(&mut self.reported_dead[peer], true) && !self.closing {
            eprintln!(
                "rgex-ofi: {}: an operation to rank {peer} failed; rank {peer} is now considered dead and later operations to it return errors: {why}",
                self.me
            );
        }
    }

    /// Record that `peer` is gone for reason `why` (the first reason
    /// stays), quietly: later operations to it fail, and puts to it
    /// waiting for a read back fail (nothing can confirm them now).
    pub(crate) fn mark_gone(&mut self, peer: usize, why: &str) {
        if self.peers[peer].dead.is_none() {
            self.peers[peer].dead = Some(why.into());
        }
        if !self.peers[peer].waiting.is_empty() {
            let (counters, _) = self.peers[peer].waiting.take();
            self.reading_back.retain(|&p| p as usize != peer);
            readback::settle(counters, Some(&self.unreachable(peer)));
        }
    }

    /// The error for an operation to a dead `peer`, if it is.
    #[inline]
    pub fn check_alive(&self, peer: Rank, what: &str) -> Result<(), Error> {
        match &self.peers[peer.index()].dead {
            None => Ok(()),
            Some(why) => Err(dead_error(self.me, peer, why, what)),
        }
    }

    /// Out of credits towards `peer`: start or check its stall clock.
    /// Returns the error once the peer has been silent past the timeout.
    pub fn stalled(&mut self, peer: usize) -> Result<(), Error> {
        let Some(t) = self.timeout else { return Ok(()) };
        let now = Instant::now();
        let p = &mut self.peers[peer];
        if std::mem::take(&mut p.heard) {
            p.last_heard = now;
        }
        let since = *p.stalled_since.get_or_insert(now);
        if now.duration_since(since) > t && now.duration_since(p.last_heard) > t {
            let why = format!(
                "no credit returned and nothing heard from it for {} s (RGEX_OFI_TIMEOUT)",
                t.as_secs()
            );
            self.mark_dead(peer, &why);
            return self.check_alive(Rank(peer as u32), "AM");
        }
        Ok(())
    }

    /// One completion: what its operation does next.
    fn complete(&mut self, net: &Net, ctx: *mut std::ffi::c_void, len: usize) {
        let Some(id) = net.op_of(ctx) else {
            eprintln!(
                "rgex-ofi: {}: completion for an unknown context {ctx:p}",
                self.me
            );
            return;
        };
        if id < net.geo.n_recv {
            self.incoming(net, id, len);
        } else {
            self.finish(net, id, false);
        }
    }

    /// A receive completed into buffer `id`.
    fn incoming(&mut self, net: &Net, id: usize, len: usize) {
        let mut args = [0u32; rgex_core::MAX_ARGS];
        // SAFETY: the provider wrote `len <= slot` bytes into receive
        // buffer `id`, which is ours until reposted.
        let msg = unsafe { std::slice::from_raw_parts(net.recv_buf(id), len.min(net.geo.slot)) };
        // A control message says one of the things a control message
        // says; a goodbye comes from another rank (one "from" this rank
        // would mark it departed from itself).
        let valid = |h: &Header| {
            (h.src as usize) < self.peers.len()
                && (!h.is_control()
                    || h.handler == wire::CREDIT_ONLY
                    || (h.is_goodbye() && h.src != self.me.0))
        };
        let h = match Header::read(msg, &mut args) {
            Some(h) if valid(&h) => h,
            _ => {
                eprintln!(
                    "rgex-ofi: {}: dropped a malformed message of {len} bytes",
                    self.me
                );
                self.post(net, Post::Recv { op: id as u32 });
                return;
            }
        };
        let p = &mut self.peers[h.src as usize];
        // Cumulative counts: the newest report wins (SAS ordering).
        if h.ack_req.wrapping_sub(p.acked[0]) as i32 > 0 {
            p.acked[0] = h.ack_req;
        }
        if h.ack_rep.wrapping_sub(p.acked[1]) as i32 > 0 {
            p.acked[1] = h.ack_rep;
        }
        p.heard = true;
        p.stalled_since = None;
        if h.is_control() {
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
    fn finish(&mut self, net: &Net, id: usize, failed: bool) {
        let n_recv = net.geo.n_recv;
        let op = std::mem::replace(&mut self.ops[id], Op::Idle);
        // A failed operation's waiters learn why (Event::wait_checked).
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
            Op::AmSend { peer } => {
                touch(&mut self.peers, peer);
                self.release_slot(net, id - n_recv);
            }
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
                                inject: len <= net.prov.inject_size,
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
                        // provider without delivery-complete) reads at once.
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

    /// Why operation `op` failed: its peer's recorded cause.
    fn failure_of(&self, op: &Op) -> String {
        let peer = match op {
            Op::AmSend { peer }
            | Op::LongWrite { peer, .. }
            | Op::Put { peer, .. }
            | Op::Flush { peer, .. }
            | Op::Get { peer, .. }
            | Op::Atomic { peer, .. } => *peer as usize,
            Op::Recv | Op::Idle => return format!("a receive at {} failed", self.me),
        };
        self.unreachable(peer)
    }

    /// Why an operation to `peer` failed: its recorded cause.
    pub(crate) fn unreachable(&self, peer: usize) -> String {
        let why = self.peers[peer]
            .dead
            .clone()
            .unwrap_or_else(|| "an error completion".into());
        format!(
            "from {} to rank {peer}: rank {peer} is unreachable: {why}",
            self.me
        )
    }
}
