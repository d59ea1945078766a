//! The node-local bypass: [`ShmBypass<N>`] holds a network conduit `N`
//! and the smp conduit of this node, and sends each peer through one of
//! them: node-local peers through smp's shared memory, every other peer
//! through `N`. Every network conduit is wrapped in it (ofi's
//! `OfiConduit` is `ShmBypass<NetConduit<Ofi>>`), so none writes its own
//! `if local` branches.
//!
//! The route is fixed at setup, in the job's neighbourhood table
//! ([`Locality`], which the bypass hands out as its own): a peer is
//! carried by shared memory when smp maps its segment and the bypass is on
//! (`RGEX_SHM_BYPASS`,
//! [`Settings::shm_bypass`](crate::Settings::shm_bypass)). With the
//! bypass off every peer, this rank and the node's other ranks included,
//! goes through `N`; a job spread over several nodes mixes the two
//! routes. Each per-peer call is one branch on the table and a static
//! call into the chosen conduit (the wrapper is generic: no dynamic call
//! is added per message).
//!
//! What is not per peer: the segment, its lengths and the bootstrap are
//! smp's (it owns the segment memory, which `N` registers with its
//! network); a poll polls smp when some peer is node-local, then `N`
//! when some is not; RMA to a node-local peer is a copy into its mapped
//! segment (the table maps it: no conduit call), every other peer's RMA is
//! `N`'s; offloaded atomics go through `N` for every peer
//! (network atomics are atomic only with respect to each other, so an
//! atomic domain never mixes them with smp's CPU atomics).

use rgex_core::conduit::{AtomicRequest, AtomicType, OpSet};
use rgex_core::doorbell::MappedQueue;
use rgex_core::{
    Bootstrap, Claim, Conduit, Delivery, Error, Locality, OpCounter, PollSet, Prepare, Rank,
    Result, Segment, SendSlot,
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
    /// The job's neighbourhood table: the peers it says shared memory
    /// carries are sent through smp rather than `N`. When it carries some
    /// peer, polls look at smp; when it carries every peer, polls skip `N`
    /// and atomics are not offloaded (the network would only slow them
    /// down).
    locality: Locality,
}

impl<N: Conduit> std::fmt::Debug for ShmBypass<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmBypass")
            .field("network", &self.net.name())
            .field("rank", &self.smp.rank())
            .field("size", &self.locality.size())
            .field(
                "node_local",
                &(0..self.locality.size())
                    .filter(|&p| self.locality.via_shm(Rank(p)))
                    .count(),
            )
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

impl<N: Conduit> ShmBypass<N> {
    /// Route the peers `locality` says shared memory carries through
    /// `smp`, the others through `net`. `net` must span the same job as
    /// `smp`, and a peer carried by shared memory must be one whose segment
    /// smp maps. `locality` is smp's own table with the bypass on, or
    /// [`Locality::without_shm`] of it with the bypass off.
    pub fn over(smp: Arc<SmpConduit>, locality: Locality, net: N) -> Result<Self> {
        let size = smp.size();
        if net.size() != size || locality.size() != size {
            return Err(Error::Config(format!(
                "rank {}: the node-local bypass needs one route per rank: smp has {size} ranks, \
                 the {} conduit {}, the neighbourhood table {}",
                smp.rank(),
                net.name(),
                net.size(),
                locality.size()
            )));
        }
        let mapped = smp.locality();
        if let Some(p) = (0..size).find(|&p| locality.via_shm(Rank(p)) && !mapped.via_shm(Rank(p)))
        {
            return Err(Error::Config(format!(
                "rank {}: the node-local bypass was asked to carry rank {p}, which is not on this \
                 node (of {size} ranks)",
                smp.rank()
            )));
        }
        Ok(ShmBypass { net, smp, locality })
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
    #[inline(always)]
    fn local(&self, peer: Rank) -> bool {
        self.locality.via_shm(peer)
    }

    /// Tell `N` of every node-local peer smp has found gone.
    #[cold]
    fn tell_network_of_departures(&self) {
        for p in (0..self.smp.size()).map(Rank) {
            if self.local(p) && p != self.smp.rank() {
                if let Some(why) = self.smp.peer_gone(p) {
                    self.net.peer_left(p, &why);
                }
            }
        }
    }
}

/// A network conduit that can open another endpoint of itself over
/// another endpoint's smp conduit, for
/// [`Conduit::open_endpoint`] of the
/// bypass around it.
pub trait Reopen: Conduit + Sized + 'static {
    /// The network of another endpoint, over `node` (that endpoint's smp
    /// conduit: its bootstrap, and the segment it shares). Collective.
    fn reopen(&self, node: Arc<SmpConduit>) -> Result<Self>;
}

impl<N: Reopen> Conduit for ShmBypass<N> {
    fn open_endpoint(self: Arc<Self>, ep: u32) -> Result<Arc<dyn Conduit>> {
        let smp = Arc::new(self.smp.another_endpoint(ep)?);
        let net = self.net.reopen(smp.clone())?;
        Ok(Arc::new(ShmBypass::over(smp, self.locality.clone(), net)?))
    }

    fn name(&self) -> &'static str {
        self.net.name()
    }

    fn rank(&self) -> Rank {
        self.smp.rank()
    }

    fn size(&self) -> u32 {
        self.locality.size()
    }

    fn locality(&self) -> &Locality {
        &self.locality
    }

    fn segment(&self) -> &Segment {
        self.smp.segment()
    }

    fn segment_len(&self, peer: Rank) -> u64 {
        self.smp.segment_len(peer)
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

    /// smp's: the peers the table says shared memory carries are smp's,
    /// and their claims smp's cells.
    fn mapped_queue(&self) -> Option<MappedQueue> {
        self.smp.mapped_queue()
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
        if !self.locality.all_shm() {
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
        if self.locality.any_shm() {
            n += self.smp.poll(set, sink);
        }
        if !self.locality.all_shm() {
            n += self.net.poll(set, sink);
        }
        n
    }

    fn bootstrap(&self) -> &dyn Bootstrap {
        self.smp.bootstrap()
    }

    /// Sleep on what carries the peers: smp's doorbell when every peer is
    /// node-local, `N`'s wait object when none is, and both when the job
    /// mixes them: smp listens on its wake socket instead of its futex
    /// ([`SmpConduit::idle_wait_with`]), and `N` polls that socket with
    /// its own fds ([`Conduit::idle_wait_polling`], see [`crate::idle`]).
    /// smp arms first, then `N`, then the caller's `still_idle` is asked:
    /// a message to either that comes after its arming makes one of the
    /// polled fds readable. `N`'s wake fd is in the poll set, so
    /// [`idle_wake`](Conduit::idle_wake) wakes the sleep. If `N` has no
    /// wait object, false: the caller's bounded sleep.
    fn idle_wait(&self, timeout: std::time::Duration, still_idle: &dyn Fn() -> bool) -> bool {
        if self.locality.all_shm() {
            self.smp.idle_wait(timeout, still_idle)
        } else if !self.locality.any_shm() {
            self.net.idle_wait(timeout, still_idle)
        } else {
            self.smp
                .idle_wait_with(timeout, still_idle, &|fd, still_idle| {
                    self.net.idle_wait_polling(timeout, still_idle, fd)
                })
        }
    }

    fn idle_wake(&self) {
        if self.locality.any_shm() {
            self.smp.idle_wake();
        }
        if !self.locality.all_shm() {
            self.net.idle_wake();
        }
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    /// `N`'s RMA for every peer but the node-local ones, whose mapped
    /// segment (in the table) is the route: a copy, no conduit call.
    fn rma_native(&self, peer: Rank) -> bool {
        !self.local(peer) && self.net.rma_native(peer)
    }

    /// `N`'s, for every peer: a node-local peer's RMA is a copy into its
    /// mapped segment, never a call here ([`rma_native`](Self::rma_native)
    /// is false for it), and should a caller make one anyway, the network
    /// reaches the node's ranks too. The same holds for
    /// [`try_get`](Self::try_get).
    unsafe fn try_put(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        lc: &Arc<OpCounter>,
        rc: &Arc<OpCounter>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.net.try_put(peer, offset, src, len, lc, rc) }
    }

    unsafe fn try_get(
        &self,
        dst: *mut u8,
        peer: Rank,
        offset: u64,
        len: usize,
        done: &Arc<OpCounter>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.net.try_get(dst, peer, offset, len, done) }
    }

    /// `N`'s, for the peers it carries; a node-local peer's put-with-signal
    /// is a copy and a release update through its mapped segment, never a
    /// call here.
    fn put_signal_native(&self, peer: Rank) -> bool {
        !self.local(peer) && self.net.put_signal_native(peer)
    }

    unsafe fn try_put_signal(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        signal: &rgex_core::Signal,
        lc: &Arc<OpCounter>,
        rc: &Arc<OpCounter>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            self.net
                .try_put_signal(peer, offset, src, len, signal, lc, rc)
        }
    }

    /// smp's for a node-local peer (its sleep is smp's doorbell, or smp's
    /// wake socket polled with the network's fd); nothing for the others,
    /// whose signals come as messages that wake them.
    fn wake_peer(&self, peer: Rank) {
        if self.local(peer) {
            self.smp.wake_peer(peer);
        }
    }

    /// `N`'s registration: a node-local peer's client segment is reached
    /// by cross-memory attach (rgex-endpoint), a remote one's through `N`.
    unsafe fn register_client_segment(
        &self,
        k: usize,
        ptr: *mut u8,
        len: usize,
    ) -> Result<Option<Vec<u8>>> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.net.register_client_segment(k, ptr, len) }
    }

    /// `N`'s, for the peers it carries (a node-local peer's RMA is never
    /// the network's: see [`try_put`](Self::try_put)).
    fn connect_client_segment(&self, k: usize, cards: &[Option<Vec<u8>>]) -> Result<Vec<bool>> {
        let mut native = self.net.connect_client_segment(k, cards)?;
        for (p, n) in native.iter_mut().enumerate() {
            *n &= !self.local(Rank(p as u32));
        }
        Ok(native)
    }

    fn close_client_segment(&self, k: usize) {
        self.net.close_client_segment(k);
    }

    /// `N`'s offload, for every peer (see the module docs), unless every
    /// peer is node-local.
    fn atomic_offload(&self, ty: AtomicType, ops: OpSet) -> bool {
        !self.locality.all_shm() && self.net.atomic_offload(ty, ops)
    }

    /// Through `N` whatever the peer: an offloaded atomic domain's
    /// operations all take the network (see the module docs).
    fn atomic_start(
        &self,
        req: &AtomicRequest,
        fetched: &Arc<AtomicU64>,
        done: &Arc<OpCounter>,
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
    use rgex_core::bootstrap::{JobEnv, SingleRank};
    use rgex_core::testing::{Recorder, RecorderConfig, Step};
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
    /// (and delivers nothing): the shared test conduit.
    fn recorder() -> Recorder {
        Recorder::new(RecorderConfig {
            size: 1,
            network: true,
            ..RecorderConfig::default()
        })
    }

    impl Reopen for Recorder {
        fn reopen(&self, _node: Arc<SmpConduit>) -> Result<Self> {
            Err(Error::Config("the test recorder has one endpoint".into()))
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
        let route = smp.locality().clone();
        assert!(
            route.via_shm(Rank(0)),
            "rank 0 of a one-rank job is on this node"
        );
        let c = ShmBypass::over(smp.clone(), route, recorder()).unwrap();
        c.try_send(&medium(3), 9, &[1], b"abc").unwrap();
        assert_eq!(drain(&c), [b"abc".to_vec()], "delivered by smp");
        assert!(c.locality().via_shm(Rank(0)));
        assert!(c.locality().mapped_segment(Rank(0)).is_some());
        assert!(
            !c.rma_native(Rank(0)),
            "smp's mapped copies, not the network's RMA"
        );
        assert_eq!(c.max_medium(Rank(0), 1), smp.max_medium(Rank(0), 1));
        assert!(c.mapped_queue().is_some());
        assert_eq!(c.peer_gone(Rank(0)), None, "smp sees this process alive");
        assert!(
            !c.atomic_offload(AtomicType::U64, OpSet::EMPTY),
            "no offload when every peer is node-local"
        );
        assert_eq!(
            c.network().steps(),
            Vec::<Step>::new(),
            "the network is neither sent to nor polled"
        );
    }

    #[test]
    fn other_peers_go_through_the_network() {
        let smp = smp("remote");
        let route = smp.locality().without_shm();
        assert!(
            !route.via_shm(Rank(0)),
            "the bypass off routes no peer through smp"
        );
        assert!(route.on_node(Rank(0)));
        let c = ShmBypass::over(smp.clone(), route, recorder()).unwrap();
        c.try_send(&medium(3), 9, &[1], b"xyz").unwrap();
        assert_eq!(drain(&c), Vec::<Vec<u8>>::new(), "smp carried nothing");
        let steps = c.network().steps();
        assert_eq!(
            steps[..2],
            [
                Step::Prepare { most: 3 },
                Step::Commit {
                    handler: 9,
                    args: vec![1],
                    payload: b"xyz".to_vec()
                }
            ]
        );
        assert!(steps[2..].iter().all(|s| *s == Step::Poll) && steps.len() == 10);
        assert!(c.locality().mapped_segment(Rank(0)).is_none());
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
            Locality::alone(Rank(0), 2).unwrap(),
            recorder(),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains(
                "one route per rank: smp has 1 ranks, the recorder conduit 1, the neighbourhood \
                 table 2"
            ),
            "{e}"
        );
    }
}
