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

/// `RGEX_SHM_BYPASS` in `env`, the bypass setting every network conduit
/// reads: on unless set to `0`, `false` or `no`; anything but those and
/// `1`, `true` or `yes` is an error naming the variable, its value and
/// the values it takes.
///
/// ```
/// use rgex_core::config::Environment;
/// assert!(rgex_net::shm_bypass::read(&Environment::default()).unwrap());
/// let off = Environment::from_pairs([("RGEX_SHM_BYPASS", "0")]);
/// assert!(!rgex_net::shm_bypass::read(&off).unwrap());
/// ```
pub fn read(env: &rgex_core::config::Environment) -> Result<bool> {
    let values = [
        ("1", true),
        ("true", true),
        ("yes", true),
        ("0", false),
        ("false", false),
        ("no", false),
    ];
    env.choice(&crate::settings::SHM_BYPASS, &values, true)
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

    /// Tell `N` of every node-local peer smp has found gone.
    #[cold]
    fn tell_network_of_departures(&self) {
        for p in (0..self.size()).map(Rank) {
            if self.local(p) && p != self.rank() {
                if let Some(why) = self.smp.peer_gone(p) {
                    self.net.peer_left(p, &why);
                }
            }
        }
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

    fn peer_left(&self, peer: Rank, why: &str) {
        self.net.peer_left(peer, why);
    }

    /// `N` carries the offloaded atomics to node-local peers too, but
    /// hears nothing of their departure (their goodbye, or their end,
    /// reaches smp): tell it of each one smp has found gone, so what it
    /// holds for them fails, then let it check its own.
    fn check_in_flight(&self) {
        if !self.all_local {
            self.tell_network_of_departures();
        }
        self.net.check_in_flight();
    }

    #[inline]
    fn claim_send(&self, spec: &Prepare) -> Result<Claim> {
        if self.local(spec.peer) {
            self.smp.claim_send(spec)
        } else {
            self.net.claim_send(spec)
        }
    }

    #[inline]
    unsafe fn publish_send(
        &self,
        spec: &Prepare,
        claim: Claim,
        handler: u8,
        args: &[u32],
        len: usize,
    ) {
        if self.local(spec.peer) {
            // SAFETY: claim_send routed this peer to smp: the claim is
            // smp's, passed on under the same contract.
            unsafe { self.smp.publish_send(spec, claim, handler, args, len) }
        } else {
            // SAFETY: as above, the claim was the network's.
            unsafe { self.net.publish_send(spec, claim, handler, args, len) }
        }
    }

    /// Each side's fixed-payload send (the provided sequence compiled
    /// for each side, so smp's claim and publish inline into it): routing
    /// only, the sequence is not rewritten.
    #[inline]
    fn try_send(&self, spec: &Prepare, handler: u8, args: &[u32], payload: &[u8]) -> Result<()> {
        if self.local(spec.peer) {
            self.smp.try_send(spec, handler, args, payload)
        } else {
            self.net.try_send(spec, handler, args, payload)
        }
    }

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
        // A node-local target's departure is known to smp only: `N`
        // would post to it, and the post might never complete.
        if self.local(req.target) {
            if let Some(why) = self.smp.peer_gone(req.target) {
                self.net.peer_left(req.target, &why);
            }
        }
        self.net.atomic_start(req, fetched, done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use rgex_core::bootstrap::{JobEnv, SingleRank};
    use rgex_core::{Category, Direction};
    use rgex_smp::SmpConfig;

    /// A one-rank smp conduit (a 64 KiB segment).
    fn smp(tag: &str) -> Arc<SmpConduit> {
        let env = JobEnv {
            rank: 0,
            size: 1,
            socket: None,
            job: format!("bypass-{tag}-{}", std::process::id()),
            polite: false,
        };
        let cfg = SmpConfig {
            depth: 8,
            max_medium: 512,
            segment_len: 64 << 10,
        };
        Arc::new(SmpConduit::new(&env, Box::new(SingleRank), cfg).expect("one-rank smp"))
    }

    /// A network conduit of one rank that records what it is asked to do
    /// (and delivers nothing).
    struct Recorder {
        buf: Mutex<[u8; 16]>,
        steps: Mutex<Vec<String>>,
        seg: Segment,
    }

    impl Recorder {
        fn new(seg: Segment) -> Self {
            Recorder {
                buf: Mutex::new([0; 16]),
                steps: Mutex::new(Vec::new()),
                seg,
            }
        }
        fn steps(&self) -> Vec<String> {
            self.steps.lock().clone()
        }
    }

    impl Conduit for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn rank(&self) -> Rank {
            Rank(0)
        }
        fn size(&self) -> u32 {
            1
        }
        fn is_local(&self, _peer: Rank) -> bool {
            false
        }
        fn segment(&self) -> &Segment {
            &self.seg
        }
        fn segment_len(&self, _peer: Rank) -> u64 {
            self.seg.len() as u64
        }
        fn mapped_segment(&self, _peer: Rank) -> Option<Segment> {
            None
        }
        fn max_medium(&self, _peer: Rank, _nargs: usize) -> usize {
            16
        }
        fn try_prepare(&self, spec: &Prepare, _refused: &mut Option<Error>) -> Option<Claim> {
            self.steps.lock().push(format!("prepare {}", spec.most));
            Some(Claim::new(self.buf.data_ptr().cast(), 7))
        }
        unsafe fn commit(&self, _slot: SendSlot, handler: u8, _args: &[u32], len: usize) {
            let payload = String::from_utf8_lossy(&self.buf.lock()[..len]).into_owned();
            self.steps
                .lock()
                .push(format!("commit {handler} {payload}"));
        }
        unsafe fn cancel(&self, _slot: SendSlot) {
            self.steps.lock().push("cancel".into());
        }
        fn poll(&self, _set: PollSet, _sink: &mut dyn FnMut(&Delivery<'_>)) -> usize {
            self.steps.lock().push("poll".into());
            0
        }
        fn peer_gone(&self, peer: Rank) -> Option<String> {
            Some(format!("the recorder lost {peer}"))
        }
        fn bootstrap(&self) -> &dyn Bootstrap {
            &SingleRank
        }
        fn rma_native(&self, _peer: Rank) -> bool {
            true
        }
        fn atomic_offload(&self, _ty: AtomicType, _ops: OpSet) -> bool {
            true
        }
    }

    fn medium(len: usize) -> Prepare {
        Prepare {
            peer: Rank(0),
            dir: Direction::Request,
            category: Category::Medium,
            nargs: 1,
            least: len,
            most: len,
            long_offset: 0,
        }
    }

    /// Poll `c` until nothing more comes (bounded), returning the Medium
    /// payloads delivered.
    fn drain(c: &dyn Conduit) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        for _ in 0..8 {
            c.poll(PollSet::All, &mut |d| got.push(d.payload.to_vec()));
        }
        got
    }

    #[test]
    fn node_local_peers_go_through_smp() {
        let smp = smp("local");
        let route = node_local(&smp, true);
        assert_eq!(route, [true], "rank 0 of a one-rank job is on this node");
        let c = ShmBypass::over(smp.clone(), route, Recorder::new(*smp.segment())).unwrap();
        c.try_send(&medium(3), 9, &[1], b"abc").unwrap();
        assert_eq!(drain(&c), [b"abc".to_vec()], "delivered by smp");
        assert!(c.is_local(Rank(0)) && c.mapped_segment(Rank(0)).is_some());
        assert!(
            !c.rma_native(Rank(0)),
            "smp's mapped copies, not the network's RMA"
        );
        assert_eq!(c.max_medium(Rank(0), 1), smp.max_medium(Rank(0), 1));
        assert!(c.mapped_queue(Rank(0)).is_some());
        assert_eq!(c.peer_gone(Rank(0)), None, "smp sees this process alive");
        assert!(
            !c.atomic_offload(AtomicType::U64, OpSet::EMPTY),
            "no offload when every peer is node-local"
        );
        assert_eq!(
            c.network().steps(),
            Vec::<String>::new(),
            "the network is neither sent to nor polled"
        );
    }

    #[test]
    fn other_peers_go_through_the_network() {
        let smp = smp("remote");
        let route = node_local(&smp, false);
        assert_eq!(route, [false], "the bypass off routes no peer through smp");
        let c = ShmBypass::over(smp.clone(), route, Recorder::new(*smp.segment())).unwrap();
        c.try_send(&medium(3), 9, &[1], b"xyz").unwrap();
        assert_eq!(drain(&c), Vec::<Vec<u8>>::new(), "smp carried nothing");
        let steps = c.network().steps();
        assert_eq!(steps[..2], ["prepare 3", "commit 9 xyz"]);
        assert!(steps[2..].iter().all(|s| s == "poll") && steps.len() == 10);
        assert!(!c.is_local(Rank(0)) && c.mapped_segment(Rank(0)).is_none());
        assert!(c.mapped_queue(Rank(0)).is_none());
        assert!(c.rma_native(Rank(0)));
        assert_eq!(c.max_medium(Rank(0), 1), 16);
        assert_eq!(
            c.peer_gone(Rank(0)).as_deref(),
            Some("the recorder lost rank 0")
        );
        assert!(c.atomic_offload(AtomicType::U64, OpSet::EMPTY));
        assert_eq!(c.name(), "recorder");
    }

    #[test]
    fn a_route_that_does_not_fit_the_job_is_refused() {
        let smp = smp("misfit");
        let e = ShmBypass::over(
            smp.clone(),
            vec![true, false],
            Recorder::new(*smp.segment()),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains(
                "one route per rank: smp has 1 ranks, the recorder conduit 1, the route 2"
            ),
            "{e}"
        );
    }
}
