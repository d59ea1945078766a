//! The node-local bypass: [`ShmBypass<N>`] holds a network conduit `N`
//! and the smp conduit of this node, and sends each peer through one of
//! them: node-local peers through smp's shared memory, every other peer
//! through `N`. Every network conduit is wrapped in it (ofi's
//! `OfiConduit` is `ShmBypass<NetConduit<Ofi>>`), so none writes its own
//! `if local` branches.
//!
//! The route is fixed at setup, one bool per peer: a peer is node-local
//! when smp maps its segment and the bypass is on (`RGEX_SHM_BYPASS`,
//! [`Settings::shm_bypass`](crate::Settings::shm_bypass)). With the
//! bypass off every peer, this rank and the node's other ranks included,
//! goes through `N`; a job spread over several nodes mixes the two
//! routes. Each per-peer call is one branch on that bool and a static
//! call into the chosen conduit (the wrapper is generic: no dynamic call
//! is added per message).
//!
//! What is not per peer: the segment, its lengths and the bootstrap are
//! smp's (it owns the segment memory, which `N` registers with its
//! network); a poll polls smp when some peer is node-local, then `N`
//! when some is not; offloaded atomics go through `N` for every peer
//! (network atomics are atomic only with respect to each other, so an
//! atomic domain never mixes them with smp's CPU atomics).

use rgex_core::conduit::{AtomicRequest, AtomicType, OpSet};
use rgex_core::doorbell::MappedQueue;
use rgex_core::{
    Bootstrap, Claim, Completion, Conduit, Delivery, Error, PollSet, Prepare, Rank, Result,
    Segment, SendSlot,
};
use rgex_smp::SmpConduit;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Node-local peers through the smp conduit, every other peer through the
/// network conduit `N` (set up with [`over`](Self::over); for a kit
/// conduit, with `ShmBypass::<NetConduit<T>>::new`).
pub struct ShmBypass<N> {
    // Field order is drop order: the network (which registered smp's
    // segment, and holds a handle on smp of its own) before smp.
    net: N,
    smp: Arc<SmpConduit>,
    /// Per peer: sent through smp rather than `N`.
    local: Vec<bool>,
    /// Some peer is node-local: polls look at smp.
    any_local: bool,
    /// Every peer is node-local: polls skip `N`, and atomics are not
    /// offloaded (the network would only slow them down).
    all_local: bool,
}

impl<N: Conduit> std::fmt::Debug for ShmBypass<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmBypass")
            .field("network", &self.net.name())
            .field("rank", &self.smp.rank())
            .field("size", &self.local.len())
            .field("node_local", &self.local.iter().filter(|&&l| l).count())
            .finish()
    }
}

/// Per peer of `smp`'s job: node-local (its segment is mapped here) and
/// so sent through shared memory, when the bypass is `on`; with it off,
/// no peer is. The route [`ShmBypass::over`] takes.
pub fn node_local(smp: &SmpConduit, on: bool) -> Vec<bool> {
    (0..smp.size())
        .map(|p| on && smp.is_local(Rank(p)))
        .collect()
}

impl<N: Conduit> ShmBypass<N> {
    /// Route the peers `local` marks (from [`node_local`]) through `smp`,
    /// the others through `net`. `net` must span the same job as `smp`,
    /// and a peer marked local must be one whose segment smp maps.
    pub fn over(smp: Arc<SmpConduit>, local: Vec<bool>, net: N) -> Result<Self> {
        let size = smp.size();
        if net.size() != size || local.len() != size as usize {
            return Err(Error::Config(format!(
                "rank {}: the node-local bypass needs one route per rank: smp has {size} ranks, \
                 the {} conduit {}, the route {}",
                smp.rank(),
                net.name(),
                net.size(),
                local.len()
            )));
        }
        if let Some(p) = (0..size).find(|&p| local[p as usize] && !smp.is_local(Rank(p))) {
            return Err(Error::Config(format!(
                "rank {}: the node-local bypass was asked to carry rank {p}, which is not on this \
                 node (of {size} ranks)",
                smp.rank()
            )));
        }
        let any_local = local.iter().any(|&l| l);
        let all_local = local.iter().all(|&l| l);
        Ok(ShmBypass {
            net,
            smp,
            local,
            any_local,
            all_local,
        })
    }

    /// The network conduit, carrying every peer that is not node-local.
    pub fn network(&self) -> &N {
        &self.net
    }

    /// The smp conduit, carrying the node-local peers (and owning the
    /// segment and the bootstrap).
    pub fn smp(&self) -> &SmpConduit {
        &self.smp
    }

    /// True when `peer` goes through smp.
    #[inline]
    fn local(&self, peer: Rank) -> bool {
        self.local.get(peer.index()).copied().unwrap_or(false)
    }
}

impl<N: Conduit> Conduit for ShmBypass<N> {
    fn name(&self) -> &'static str {
        self.net.name()
    }

    fn rank(&self) -> Rank {
        self.smp.rank()
    }

    fn size(&self) -> u32 {
        self.local.len() as u32
    }

    fn is_local(&self, peer: Rank) -> bool {
        self.local(peer)
    }

    fn segment(&self) -> &Segment {
        self.smp.segment()
    }

    fn segment_len(&self, peer: Rank) -> u64 {
        self.smp.segment_len(peer)
    }

    fn mapped_segment(&self, peer: Rank) -> Option<Segment> {
        if self.local(peer) {
            self.smp.mapped_segment(peer)
        } else {
            self.net.mapped_segment(peer)
        }
    }

    fn max_medium(&self, peer: Rank, nargs: usize) -> usize {
        if self.local(peer) {
            self.smp.max_medium(peer, nargs)
        } else {
            self.net.max_medium(peer, nargs)
        }
    }

    fn max_long(&self, peer: Rank, nargs: usize) -> usize {
        if self.local(peer) {
            self.smp.max_long(peer, nargs)
        } else {
            self.net.max_long(peer, nargs)
        }
    }

    #[inline]
    fn try_prepare(&self, spec: &Prepare, refused: &mut Option<Error>) -> Option<Claim> {
        if self.local(spec.peer) {
            self.smp.try_prepare(spec, refused)
        } else {
            self.net.try_prepare(spec, refused)
        }
    }

    fn mapped_queue(&self, peer: Rank) -> Option<MappedQueue> {
        if self.local(peer) {
            self.smp.mapped_queue(peer)
        } else {
            self.net.mapped_queue(peer)
        }
    }

    /// `peer`'s conduit tells: smp for a node-local peer, `N` for the
    /// others (which may itself ask smp about a peer on this node that
    /// it carries, as the kit's conduit does).
    fn peer_gone(&self, peer: Rank) -> Option<String> {
        if self.local(peer) {
            self.smp.peer_gone(peer)
        } else {
            self.net.peer_gone(peer)
        }
    }

    #[inline]
    unsafe fn commit(&self, slot: SendSlot, handler: u8, args: &[u32], len: usize) {
        if self.local(slot.peer) {
            // SAFETY: the claim to a node-local peer was smp's (try_prepare
            // routes by the same peer), passed on under the same contract.
            unsafe { self.smp.commit(slot, handler, args, len) }
        } else {
            // SAFETY: as above, the claim was the network's.
            unsafe { self.net.commit(slot, handler, args, len) }
        }
    }

    unsafe fn cancel(&self, slot: SendSlot) {
        if self.local(slot.peer) {
            // SAFETY: as in commit.
            unsafe { self.smp.cancel(slot) }
        } else {
            // SAFETY: as in commit.
            unsafe { self.net.cancel(slot) }
        }
    }

    fn poll(&self, set: PollSet, sink: &mut dyn FnMut(&Delivery<'_>)) -> usize {
        let mut n = 0;
        // Node-local messages first: their handlers run before the network
        // conduit takes its batches (and with them its delivery locks), so
        // a handler that polls for replies while it waits to send its own
        // can still have the network's delivered.
        if self.any_local {
            n += self.smp.poll(set, sink);
        }
        if !self.all_local {
            n += self.net.poll(set, sink);
        }
        n
    }

    fn bootstrap(&self) -> &dyn Bootstrap {
        self.smp.bootstrap()
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn rma_native(&self, peer: Rank) -> bool {
        if self.local(peer) {
            self.smp.rma_native(peer)
        } else {
            self.net.rma_native(peer)
        }
    }

    unsafe fn try_put(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        lc: &Arc<Completion>,
        rc: &Arc<Completion>,
    ) -> Result<()> {
        if self.local(peer) {
            // SAFETY: forwarded from the caller's contract.
            unsafe { self.smp.try_put(peer, offset, src, len, lc, rc) }
        } else {
            // SAFETY: forwarded from the caller's contract.
            unsafe { self.net.try_put(peer, offset, src, len, lc, rc) }
        }
    }

    unsafe fn try_get(
        &self,
        dst: *mut u8,
        peer: Rank,
        offset: u64,
        len: usize,
        done: &Arc<Completion>,
    ) -> Result<()> {
        if self.local(peer) {
            // SAFETY: forwarded from the caller's contract.
            unsafe { self.smp.try_get(dst, peer, offset, len, done) }
        } else {
            // SAFETY: forwarded from the caller's contract.
            unsafe { self.net.try_get(dst, peer, offset, len, done) }
        }
    }

    /// `N`'s offload, for every peer (see the module docs), unless every
    /// peer is node-local.
    fn atomic_offload(&self, ty: AtomicType, ops: OpSet) -> bool {
        !self.all_local && self.net.atomic_offload(ty, ops)
    }

    /// Through `N` whatever the peer: an offloaded atomic domain's
    /// operations all take the network (see the module docs).
    fn atomic_start(
        &self,
        req: &AtomicRequest,
        fetched: &Arc<AtomicU64>,
        done: &Arc<Completion>,
    ) -> Result<()> {
        self.net.atomic_start(req, fetched, done)
    }
}
