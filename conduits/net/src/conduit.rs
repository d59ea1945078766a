//! The generic network conduit: the Conduit SPI over a [`Transport`],
//! every peer through the network (node-local peers take the smp
//! transport when the conduit is wrapped in
//! [`ShmBypass`](crate::ShmBypass)).

use crate::geometry::{POOL_REP, POOL_REQ};
use crate::held::Held;
use crate::net::Net;
use crate::ops::{Op, Post};
use crate::ready::{dir_index, Batch, ReadyCount, POLL_BATCH};
use crate::state::State;
use crate::ticker::Ticker;
use crate::transport::Transport;
use crate::wire::{self, Header};
use parking_lot::Mutex;
use rgex_core::descriptor::Kind;
use rgex_core::{
    Bootstrap, Category, Claim, Conduit, Delivery, Error, Locality, PollSet, Prepare, Rank, Result,
    Segment, SendSlot,
};
use rgex_smp::SmpConduit;
use std::sync::Arc;

/// Every rank over the network `T` (set up with [`new`](Self::new)); the
/// segment and the bootstrap are those of the node's smp conduit, which
/// also tells when a process on this node is gone.
pub struct NetConduit<T: Transport> {
    // Field order is drop order: the network (regions on smp's segment)
    // before this handle on the smp conduit that maps the segment.
    /// Stops (joins) first: it shares the state and the network.
    pub(crate) ticker: Ticker,
    pub(crate) state: Arc<Mutex<State<T>>>,
    pub(crate) net: Arc<Net<T>>,
    /// One delivery at a time per direction, so messages from one sender
    /// reach the handlers in arrival order.
    pub(crate) deliver_lock: [Mutex<()>; 2],
    /// The state's count of messages waiting, per direction (lock-free).
    pub(crate) ready_count: Arc<ReadyCount>,
    pub(crate) rank: Rank,
    pub(crate) size: u32,
    /// The node: smp's conduit, owning the segment memory (registered
    /// with the network) and the bootstrap, and watching the node's
    /// processes ([`peer_gone`](Conduit::peer_gone) asks it about the
    /// peers on this node).
    pub(crate) node: Arc<SmpConduit>,
    /// The job's neighbourhood table, shared with the bypass around this
    /// conduit.
    pub(crate) locality: Locality,
    /// Written by [`idle_wake`](Conduit::idle_wake): wakes a progress
    /// thread asleep on the transport's fd (see [`idle`](crate::idle)).
    pub(crate) idle_wake_fd: crate::idle::WakeFd,
    /// The settings it was opened with (sizes agreed): another endpoint
    /// opens with them ([`Reopen`](crate::Reopen)).
    pub(crate) cfg: T::Config,
}

impl<T: Transport> crate::Reopen for NetConduit<T> {
    fn reopen(&self, node: Arc<SmpConduit>) -> Result<Self> {
        NetConduit::new(node, self.cfg.clone(), self.locality.clone())
    }
}

impl<T: Transport + std::fmt::Debug> std::fmt::Debug for NetConduit<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetConduit")
            .field("name", &T::NAME)
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("transport", &self.net.transport)
            .finish()
    }
}

impl<T: Transport> NetConduit<T> {
    /// The transport.
    pub fn transport(&self) -> &T {
        &self.net.transport
    }

    /// The node's smp conduit (the segment, the bootstrap, the watch on
    /// the node's processes).
    pub fn node(&self) -> &SmpConduit {
        &self.node
    }

    /// Deliver a batch of direction `dir`: `taken` if the caller took one
    /// (with the progress call, under one lock), else up to a batch of the
    /// messages ready now.
    fn deliver(
        &self,
        dir: usize,
        taken: Option<Batch<'_>>,
        sink: &mut dyn FnMut(&Delivery<'_>),
    ) -> usize {
        let batch = match taken {
            Some(b) => b,
            None => {
                if !self.ready_count.any(dir) {
                    return 0;
                }
                let Some(one) = self.deliver_lock[dir].try_lock() else {
                    return 0;
                };
                let mut st = self.state.lock();
                Batch::take(&mut st.ready, dir, one)
            }
        };
        let k = batch.len;
        if k == 0 {
            return 0;
        }
        let mut srcs = [0u32; POLL_BATCH];
        let seg = self.node.segment();
        for (i, r) in batch.ready[..k].iter().enumerate() {
            let mut args = [0u32; rgex_core::MAX_ARGS];
            // SAFETY: receive buffer `r.buf` holds `r.len` bytes written by
            // the provider; it is not reposted until we report it consumed
            // below, so nothing else writes it meanwhile.
            let msg = unsafe {
                std::slice::from_raw_parts(self.net.recv_buf(r.buf as usize), r.len as usize)
            };
            let h = Header::read(msg, &mut args).expect("checked on arrival");
            srcs[i] = h.src;
            let len = h.len as usize;
            let payload: &[u8] = match h.category() {
                Category::Short => &[],
                Category::Medium => match msg.get(h.hlen..h.hlen + len) {
                    Some(p) => p,
                    None => {
                        tracing::warn!(
                            conduit = T::NAME,
                            rank = self.rank.0,
                            peer = h.src,
                            "dropped a truncated Medium AM from rank {}",
                            h.src
                        );
                        continue;
                    }
                },
                Category::Long => match seg.ptr_at(h.long_offset, len) {
                    // SAFETY: inside this rank's segment (just checked); the
                    // sender's write completed before its header was sent.
                    Ok(p) => unsafe { std::slice::from_raw_parts(p, len) },
                    Err(e) => {
                        tracing::warn!(
                            conduit = T::NAME,
                            rank = self.rank.0,
                            peer = h.src,
                            "dropped a Long AM from rank {}: {e}",
                            h.src
                        );
                        continue;
                    }
                },
            };
            sink(&Delivery {
                src: Rank(h.src),
                dir: h.direction(),
                category: h.category(),
                handler: h.handler,
                args: &args[..h.nargs as usize],
                payload,
                long_offset: h.long_offset,
            });
        }
        let mut st = self.state.lock();
        for (r, &src) in batch.ready[..k].iter().zip(&srcs) {
            st.consumed(&self.net, r.buf as usize, src as usize, dir);
        }
        // The batch (and its delivery lock) ends here, after its buffers
        // are reposted.
        k
    }

    /// Reap completions and, under the same lock, take a batch of each
    /// direction `set` allows whose messages are ready and whose delivery
    /// lock is free (one lock for both steps, where taking the batch
    /// separately costs a second; see [`Batch`]). Returns what progress
    /// did and the batches; if another thread holds the state, nothing.
    fn progress_taking(&self, set: PollSet) -> (usize, [Option<Batch<'_>>; 2]) {
        self.ticker.polled();
        let Some(mut st) = self.state.try_lock() else {
            return (0, [None, None]);
        };
        let n = st.progress(&self.net);
        let mut take = |dir: usize| {
            if st.ready.is_empty(dir) {
                return None;
            }
            // A try: never waits while the state is held (deliver takes
            // the two in the other order).
            let one = self.deliver_lock[dir].try_lock()?;
            Some(Batch::take(&mut st.ready, dir, one))
        };
        let replies = take(1);
        let requests = if set == PollSet::All { take(0) } else { None };
        (n, [requests, replies])
    }
}

impl<T: Transport> Conduit for NetConduit<T> {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn rank(&self) -> Rank {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    /// The job's table, shared with the node-local bypass around this
    /// conduit: the network itself maps no segment, and the peers the
    /// table says shared memory carries never reach this conduit.
    fn locality(&self) -> &Locality {
        &self.locality
    }

    fn segment(&self) -> &Segment {
        self.node.segment()
    }

    fn segment_len(&self, peer: Rank) -> u64 {
        self.node.segment_len(peer)
    }

    fn max_medium(&self, _peer: Rank, _nargs: usize) -> usize {
        self.net.geo.max_medium
    }

    #[inline]
    fn try_prepare(&self, spec: &Prepare, refused: &mut Option<Error>) -> Option<Claim> {
        Claim::hand_over(self.claim_remote(spec), refused)
    }

    unsafe fn commit(&self, slot: SendSlot, handler: u8, args: &[u32], len: usize) {
        let net = &self.net;
        let s = slot.cookie as usize;
        let peer = slot.peer.index();
        let h = self.header(&slot, handler, args, len);
        let mut st = self.state.lock();
        if st.peers[peer].dead.is_some() {
            // The peer is gone: nothing to deliver to (its ops return
            // errors); the prepared buffer goes back with what it holds.
            drop(Held::prepared(&mut st, &net.geo, s as u32));
            return;
        }
        if slot.category != Category::Long || len == 0 {
            if slot.category == Category::Long {
                // Nothing to write: its write's slot and staging go back.
                st.unstage(s);
            }
            st.send_am(net, s, peer, h, args);
            return;
        }
        // Long: write the payload into the target's segment, then the
        // header. The write's slot and staging stay the buffer's until
        // the write completes (`State::finish`).
        let op = st
            .sends
            .long_op(s)
            .expect("a prepared Long reserved its write");
        let (src, desc) = match st.sends.staging(s) {
            Some(stg) => (
                stg.ptr(),
                stg.mr.as_ref().map_or(0, |m| net.transport.region_desc(m)),
            ),
            None => (slot.buf.as_ptr(), net.send_desc),
        };
        let caps = net.transport.caps();
        let saw = caps.send_after_write;
        let delivery = caps.delivery_complete && !saw;
        st.ops[op as usize] = Op::LongWrite {
            slot: s as u32,
            peer: peer as u32,
            header_after: (!saw).then_some(h.hlen),
        };
        let write = Post::Write {
            op,
            peer: peer as u32,
            src: src as usize,
            len,
            desc,
            offset: slot.long_offset,
            delivery,
        };
        if saw {
            // Sends are ordered after earlier writes (`Caps`: libfabric's
            // FI_ORDER_SAW, an RC queue pair's order): the header may
            // follow the write at once.
            st.sends.share(s);
            st.post(net, write);
            st.send_am(net, s, peer, h, args);
        } else {
            // Write the header now; it is sent when the write completes.
            let mut h = h;
            st.credits.stamp(peer, &mut h);
            // SAFETY: send buffer `s` is ours until released.
            unsafe { h.write(net.send_buf(s), args) };
            st.post(net, write);
        }
    }

    unsafe fn cancel(&self, slot: SendSlot) {
        let mut st = self.state.lock();
        st.credits.refund(slot.peer.index(), dir_index(slot.dir));
        drop(Held::prepared(&mut st, &self.net.geo, slot.cookie as u32));
    }

    fn poll(&self, set: PollSet, sink: &mut dyn FnMut(&Delivery<'_>)) -> usize {
        let (mut n, [requests, replies]) = self.progress_taking(set);
        n += self.deliver(1, replies, sink);
        if set == PollSet::All {
            n += self.deliver(0, requests, sink);
        }
        n
    }

    fn bootstrap(&self) -> &dyn Bootstrap {
        self.node.bootstrap()
    }

    /// Sleep on the transport's wait object (see [`idle`](crate::idle)).
    fn idle_wait(&self, timeout: std::time::Duration, still_idle: &dyn Fn() -> bool) -> bool {
        self.idle_sleep(timeout, still_idle, None)
    }

    fn idle_wait_polling(
        &self,
        timeout: std::time::Duration,
        still_idle: &dyn Fn() -> bool,
        also: i32,
    ) -> bool {
        self.idle_sleep(timeout, still_idle, Some(also))
    }

    fn idle_wake(&self) {
        self.idle_wake_fd.wake();
    }

    /// A peer is gone once it said goodbye (it closed its conduit), an
    /// operation to it failed, it stayed silent past the dead-peer
    /// timeout while waited on, or, on this node, smp found its process
    /// gone, and what it sent before is delivered. Being asked counts as
    /// a wait on `peer` (the protocol layer asks about the peers its
    /// operations in flight wait on; a client, about a peer whose answer
    /// it waits for): see [`health`](crate::health).
    fn peer_gone(&self, peer: Rank) -> Option<String> {
        let mut st = self.state.lock();
        self.ask_node(&mut st, peer);
        st.waiting_on(&self.net, peer.index());
        st.gone(peer.index())
    }

    fn peer_left(&self, peer: Rank, why: &str) {
        if peer.index() < self.net.geo.size && peer != self.rank {
            self.state.lock().left(peer.index(), why);
        }
    }

    /// For each peer that the transport holds operations for (not
    /// pings, not those already given up on): ask smp about it if it is
    /// on this node (see `ask_node`): a process that
    /// ended without a goodbye never completes them; and count it waited
    /// on, so one silent past the dead-peer timeout is declared dead and
    /// its operations fail (see [`health`](crate::health)).
    fn check_in_flight(&self) {
        let mut st = self.state.lock();
        let mut peers: Vec<u32> = st
            .ops
            .iter()
            .filter(|op| !matches!(op, Op::Ping { .. } | Op::Abandoned { .. }))
            .filter_map(|op| op.peer())
            .collect();
        peers.sort_unstable();
        peers.dedup();
        for p in peers {
            self.ask_node(&mut st, Rank(p));
            st.waiting_on(&self.net, p as usize);
        }
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn rma_native(&self, _peer: Rank) -> bool {
        true
    }

    unsafe fn try_put(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        lc: &Arc<rgex_core::OpCounter>,
        rc: &Arc<rgex_core::OpCounter>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.put(peer, offset, src, len, lc, rc) }
    }

    unsafe fn try_get(
        &self,
        dst: *mut u8,
        peer: Rank,
        offset: u64,
        len: usize,
        done: &Arc<rgex_core::OpCounter>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.get(dst, peer, offset, len, done) }
    }

    /// The transport's registration (`Transport::register_client`),
    /// under the state lock as every transport call.
    unsafe fn register_client_segment(
        &self,
        k: usize,
        ptr: *mut u8,
        len: usize,
    ) -> Result<Option<Vec<u8>>> {
        let _st = self.state.lock();
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.net.transport.register_client(k, ptr, len) }
    }

    fn connect_client_segment(&self, k: usize, cards: &[Option<Vec<u8>>]) -> Result<Vec<bool>> {
        let _st = self.state.lock();
        self.net.transport.connect_client(k, cards)
    }

    fn close_client_segment(&self, k: usize) {
        let _st = self.state.lock();
        self.net.transport.close_client(k);
    }

    fn atomic_offload(
        &self,
        ty: rgex_core::atomic::AtomicType,
        ops: rgex_core::conduit::OpSet,
    ) -> bool {
        self.net.transport.atomics_offload(ty, ops)
    }

    fn atomic_start(
        &self,
        req: &rgex_core::atomic::AtomicRequest,
        fetched: &Arc<std::sync::atomic::AtomicU64>,
        done: &Arc<rgex_core::OpCounter>,
    ) -> Result<()> {
        self.atomic(req, fetched, done)
    }
}

impl<T: Transport> NetConduit<T> {
    /// The wire header of a message in `slot` (credits are filled in
    /// when it is sent).
    #[inline]
    fn header(&self, slot: &SendSlot, handler: u8, args: &[u32], len: usize) -> Header {
        Header {
            kind: Kind::new(slot.category, slot.dir),
            handler,
            nargs: args.len() as u8,
            hlen: wire::header_len(slot.nargs as usize),
            src: self.rank.0,
            len: len as u32,
            ack_req: 0,
            ack_rep: 0,
            long_offset: slot.long_offset,
        }
    }

    /// Claim a send buffer and a credit towards the remote `spec.peer` (and
    /// an RMA operation, plus staging memory if needed, for a Long): the
    /// ticket is the send buffer's index.
    fn claim_remote(&self, spec: &Prepare) -> Result<Claim> {
        spec.check_medium(self.net.geo.max_medium)?;
        let mut st = self.state.lock();
        self.claim_locked(&mut st, spec)
    }

    /// [`claim_remote`](Self::claim_remote) once `spec` is checked against
    /// the Medium limit and the state is locked.
    #[inline]
    fn claim_locked(&self, st: &mut State<T>, spec: &Prepare) -> Result<Claim> {
        let net = &self.net;
        let peer = spec.peer.index();
        let d = dir_index(spec.dir);
        st.check_alive(spec.peer, "AM")?;
        if st.credits.exhausted(&net.geo, peer, d) {
            if rgex_core::observe::on() {
                rgex_core::observe::net(rgex_core::observe::NetEvent::CreditStall, 1);
            }
            st.stalled(net, peer)?;
            self.ask_node(st, spec.peer);
            st.check_alive(spec.peer, "AM")?;
            return Err(Error::WouldBlock {
                peer: spec.peer,
                resource: if d == 0 {
                    "request credits"
                } else {
                    "reply credits"
                },
            });
        }
        let pool = if d == 0 { POOL_REQ } else { POOL_REP };
        // Given back by its drop on every refusal below.
        let mut held = Held::new(st, &net.geo);
        let Some(slot) = held.claim_slot(pool) else {
            return Err(Error::WouldBlock {
                peer: spec.peer,
                resource: "registered send buffers",
            });
        };
        let slot_u = slot as usize;
        let hlen = wire::header_len(spec.nargs);
        let room = net.geo.slot - hlen;
        // SAFETY: hlen <= MAX_HEADER < slot, so the payload area starts
        // inside send buffer `slot`.
        let payload = unsafe { net.send_buf(slot_u).add(hlen) };
        let buf = match spec.category {
            Category::Short => std::ptr::null_mut(),
            Category::Medium => payload,
            Category::Long => {
                // Kept with the buffer until the write completes.
                let Some(op) = held.ops.take() else {
                    return Err(Error::WouldBlock {
                        peer: spec.peer,
                        resource: "RMA operation slots",
                    });
                };
                held.sends.set_long_op(slot_u, op);
                if spec.most <= room {
                    payload
                } else {
                    let s = crate::pools::stage(net, spec.most)?;
                    let p = s.ptr();
                    held.sends.set_staging(slot_u, s);
                    p
                }
            }
        };
        held.credits.spend(peer, d);
        held.peers[peer].stalled_since = None;
        held.hand_over();
        Ok(Claim::new(buf, u64::from(slot)))
    }

    /// If `peer` runs on this node (its traffic goes over the network: no
    /// [`ShmBypass`](crate::ShmBypass), or the bypass is off), ask smp whether its process is still there
    /// (smp rate-limits its look) and tell the state if not
    /// ([`State::gone_from_node`]). Off any hot path: asked when a wait
    /// for the peer stalls.
    fn ask_node(&self, st: &mut State<T>, peer: Rank) {
        if st.peers[peer.index()].dead.is_some() || !self.locality.on_node(peer) {
            return;
        }
        if let Some(why) = self.node.peer_gone(peer) {
            st.gone_from_node(peer.index(), &why);
        }
    }
}

impl<T: Transport> Drop for NetConduit<T> {
    /// Finish what was posted before closing the endpoint (see
    /// `drain` in `drain.rs`).
    fn drop(&mut self) {
        crate::drain::unregister(&self.state);
        crate::drain::drain(self.rank, &self.state, &self.net);
    }
}
