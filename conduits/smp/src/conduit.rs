//! The smp conduit: the Conduit SPI over the shared-memory regions.

use crate::region::{Region, REPLY, REQUEST};
use crate::ring::{Padded, Ring};
use crate::wake_socket::{Ringer, WakeSocket};
use crate::{prefetch, shm, SmpConfig};
use rgex_core::bootstrap::JobEnv;
use rgex_core::cell::{Doorbell, Header};
use rgex_core::descriptor::Kind;
use rgex_core::doorbell::MappedQueue;
use rgex_core::liveness::{self, PeerWatch};
use rgex_core::locality::{Carrier, Locality, Place};
use rgex_core::{
    Bootstrap, Category, Claim, Conduit, Delivery, Direction, Error, PollSet, Prepare, Rank,
    Result, Segment, SendSlot,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Messages delivered from one ring per poll call at most, so one busy
/// sender cannot keep a poller from returning.
const POLL_BATCH: usize = 32;

/// Ranks as processes on one node.
///
/// ```no_run
/// use rgex_core::{bootstrap, Conduit};
/// let (env, boot) = bootstrap::from_env()?;
/// let smp = rgex_smp::SmpConduit::new(&env, boot, rgex_smp::SmpConfig::from_env()?)?;
/// println!("{} of {}", smp.rank(), smp.size());
/// # Ok::<(), rgex_core::Error>(())
/// ```
pub struct SmpConduit {
    rank: Rank,
    /// The neighbourhood table: every rank on this node is mapped and
    /// carried by shared memory, the others by nothing smp has.
    locality: Locality,
    /// Every rank's region, mapped for the ranks on this node only.
    regions: Vec<Option<Region>>,
    /// Every rank's segment length.
    seg_lens: Vec<u64>,
    cfg: SmpConfig,
    boot: Arc<dyn Bootstrap>,
    /// The job's name (the regions' names derive from it).
    job: String,
    /// For an endpoint other than the primordial one: the primordial
    /// endpoint's conduit, whose mapped segments this one's Longs land in
    /// (held so that they stay mapped).
    _parent: Option<Arc<SmpConduit>>,
    /// Per ring of this rank: a thread is delivering from it. One poller
    /// per ring at a time keeps each sender's messages in arrival order
    /// (see `drain`).
    draining: [Padded<AtomicBool>; 2],
    /// When a refused claim may next look at each peer's process (see
    /// `gone`).
    watch: PeerWatch,
    /// This rank's wake socket, bound on the first sleep that listens on
    /// it (see [`idle_wait_with`](Self::idle_wait_with)); `None` inside
    /// if it could not be bound.
    wake_socket: OnceLock<Option<WakeSocket>>,
    /// The socket this rank rings its peers' wake sockets with, opened on
    /// the first ring.
    ringer: OnceLock<Option<Ringer>>,
}

impl std::fmt::Debug for SmpConduit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmpConduit")
            .field("rank", &self.rank)
            .field("size", &self.regions.len())
            .finish()
    }
}

impl SmpConduit {
    /// Set up the job's shared memory: create this rank's region, agree on
    /// the geometry, map every peer's region, then unlink this rank's name
    /// once all have mapped it (so nothing is left in /dev/shm after a crash).
    ///
    /// Every rank must be on this node: the smp conduit on its own reaches
    /// no other. A rank on another host is a clear error naming it.
    pub fn new(env: &JobEnv, boot: Box<dyn Bootstrap>, local: SmpConfig) -> Result<Self> {
        // Checked before any shared memory exists: a refused job has
        // nothing to clean up, and no rank can be ended (by the launcher,
        // when a peer exits with this error) between creating its region
        // and unlinking it.
        let host = host_name();
        let hosts = boot.allgather(host.as_bytes())?;
        if let Some(far) = hosts.iter().position(|h| h != host.as_bytes()) {
            return Err(Error::Config(format!(
                "the smp conduit needs every rank on one node, but {} is on another host than {} \
                 (choose a network conduit: RGEX_CONDUIT=ofi)",
                Rank(far as u32),
                Rank(env.rank)
            )));
        }
        Self::new_node(env, boot, local)
    }

    /// As [`new`](Self::new), but only the ranks on this node (same host
    /// name, see [`host_name`]) are mapped; the others are reported not
    /// local, for a network conduit that carries them itself and uses this
    /// one as its shared-memory bypass. Collective over the whole job.
    pub fn new_node(env: &JobEnv, boot: Box<dyn Bootstrap>, local: SmpConfig) -> Result<Self> {
        local.check()?;
        let boot: Arc<dyn Bootstrap> = Arc::from(boot);
        // Queue geometry must be symmetric: rank 0's settings rule.
        let geo = boot.broadcast(
            0,
            &[
                local.depth.to_le_bytes(),
                (local.max_medium as u64).to_le_bytes(),
            ]
            .concat(),
        )?;
        let word =
            |i: usize| u64::from_le_bytes(geo[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let mine = SmpConfig {
            depth: word(0),
            max_medium: word(1) as usize,
            ..local
        };
        mine.check()?;
        Self::build(&env.job, Rank(env.rank), boot, mine, None)
    }

    /// Another endpoint of this rank (index `ep`, 1 or more): rings of its
    /// own in a region of its own (no segment: its Longs land in the
    /// primordial segments, which this conduit maps and the new one keeps
    /// mapped by holding it), the same neighbourhood table and bootstrap.
    /// Collective: every rank opens endpoint `ep` together, and an AM
    /// from it reaches the peers' endpoint `ep`.
    ///
    /// ```no_run
    /// # fn demo(smp: std::sync::Arc<rgex_smp::SmpConduit>) -> rgex_core::Result<()> {
    /// use rgex_core::Conduit;
    /// let second = smp.another_endpoint(1)?;
    /// assert_eq!(second.segment().as_ptr(), smp.segment().as_ptr());
    /// # Ok(()) }
    /// ```
    pub fn another_endpoint(self: &Arc<Self>, ep: u32) -> Result<SmpConduit> {
        if ep == 0 {
            return Err(Error::Config(format!(
                "{}: endpoint 0 is the primordial endpoint; open others from 1",
                self.rank
            )));
        }
        let rings = SmpConfig {
            segment_len: 0,
            ..self.cfg
        };
        Self::build(
            &self.job,
            self.rank,
            self.boot.clone(),
            rings,
            Some((ep, self.clone())),
        )
    }

    /// Set up the regions of the primordial endpoint (`parent` `None`:
    /// regions with segments, `cfg` the agreed geometry) or of endpoint
    /// `ep` of `parent`'s rank (rings only, over the parent's segments):
    /// create this rank's, report success or failure to everyone, map
    /// every node-local peer's, then unlink this rank's name once all have
    /// mapped it (so nothing is left in /dev/shm after a crash).
    fn build(
        job: &str,
        rank: Rank,
        boot: Arc<dyn Bootstrap>,
        cfg: SmpConfig,
        parent: Option<(u32, Arc<SmpConduit>)>,
    ) -> Result<Self> {
        let ep = parent.as_ref().map_or(0, |(ep, _)| *ep);
        let host = host_name();
        let my_region = Region::create(job, rank, ep, cfg);
        // Everyone reports success (segment length and host) or failure, so
        // no rank waits on a region that will never exist.
        let report = match &my_region {
            Ok(_) => [
                &[0u8][..],
                &(cfg.segment_len as u64).to_le_bytes(),
                host.as_bytes(),
            ]
            .concat(),
            Err(e) => [&[1u8][..], format!("{e}").as_bytes()].concat(),
        };
        let all = boot.allgather(&report)?;
        let my_region = my_region?;
        let mut regions = Vec::with_capacity(all.len());
        let mut seg_lens = Vec::with_capacity(all.len());
        let mut my_region = Some(my_region);
        for (r, rep) in all.iter().enumerate() {
            let peer = Rank(r as u32);
            let (ok, seg, peer_host) = match rep.split_first() {
                Some((0, rest)) if rest.len() >= 8 => {
                    let (len, h) = rest.split_at(8);
                    (
                        true,
                        u64::from_le_bytes(len.try_into().expect("8 bytes")),
                        h,
                    )
                }
                _ => (false, 0, &[][..]),
            };
            if !ok {
                return Err(Error::Bootstrap(format!(
                    "{peer} could not create its shared memory{}: {}",
                    if ep == 0 {
                        String::new()
                    } else {
                        format!(" for endpoint {ep}")
                    },
                    String::from_utf8_lossy(rep.get(1..).unwrap_or_default())
                )));
            }
            seg_lens.push(seg);
            let peer_cfg = SmpConfig {
                segment_len: seg as usize,
                ..cfg
            };
            let region = if peer == rank {
                my_region.take()
            } else if peer_host == host.as_bytes() {
                Some(Region::open(job, peer, ep, peer_cfg)?)
            } else {
                None
            };
            regions.push(region);
        }
        boot.barrier()?;
        shm::unlink(
            regions[rank.index()]
                .as_ref()
                .expect("own region")
                .shm_name(),
        )?;
        let watch = PeerWatch::new(regions.len());
        let (locality, seg_lens, regions) = match &parent {
            None => {
                let places = regions
                    .iter()
                    .map(|r| match r {
                        Some(r) => Place {
                            on_node: true,
                            mapped: Some(r.segment),
                            carrier: Carrier::Shm,
                            board: Some(r.board),
                        },
                        None => Place::REMOTE,
                    })
                    .collect();
                (Locality::new(rank, places)?, seg_lens, regions)
            }
            Some((_, p)) => {
                // Longs land in the primordial segments the parent maps.
                let regions = regions
                    .into_iter()
                    .zip(&p.regions)
                    .map(|(r, pr)| match (r, pr) {
                        // SAFETY: the parent maps `pr` for as long as it
                        // lives, and the new conduit holds the parent.
                        (Some(r), Some(pr)) => Some(unsafe { r.over_segment(pr.segment) }),
                        _ => None,
                    })
                    .collect();
                (p.locality.clone(), p.seg_lens.clone(), regions)
            }
        };
        let conduit = SmpConduit {
            rank,
            locality,
            regions,
            seg_lens,
            cfg,
            boot,
            job: job.to_string(),
            _parent: parent.map(|(_, p)| p),
            draining: [
                Padded(AtomicBool::new(false)),
                Padded(AtomicBool::new(false)),
            ],
            watch,
            wake_socket: OnceLock::new(),
            ringer: OnceLock::new(),
        };
        // The Region lives in the Vec's heap buffer, which stays put when
        // the conduit moves and until Drop takes this back.
        liveness::leave_at_exit(leave, conduit.mine() as *const Region as usize);
        Ok(conduit)
    }

    /// Why `peer` is gone, or `None` if it is still in the job (as far
    /// as this rank can tell now). Asked when a claim to it is refused:
    /// its departure word first (one load), then, at most every
    /// [`PROCESS_CHECK_EVERY`](liveness::PROCESS_CHECK_EVERY), its process;
    /// a process found gone is recorded in its region for every rank.
    #[cold]
    fn gone(&self, peer: Rank) -> Option<String> {
        if peer == self.rank {
            return None;
        }
        self.watch.gone(peer, "smp", self.region(peer))
    }

    /// The error for a refused claim: `peer` is gone, or its ring `which`
    /// is full (would-block: the AM layer polls and retries, and asks
    /// again). Out of line: the send path only branches to it.
    #[cold]
    #[inline(never)]
    fn refused(&self, spec: &Prepare, which: usize) -> Error {
        match self.gone(spec.peer) {
            Some(why) => Error::PeerUnreachable {
                what: format!(
                    "an AM {} {}",
                    spec.category,
                    if which == REQUEST { "request" } else { "reply" }
                ),
                from: self.rank,
                rank: spec.peer,
                why,
            },
            None => queue_full(spec.peer, which),
        }
    }

    /// This rank's own region (every poll's first step: no bounds or
    /// presence check, which `region` makes for a peer).
    #[inline(always)]
    fn mine(&self) -> &Region {
        debug_assert!(matches!(self.regions.get(self.rank.index()), Some(Some(_))));
        // SAFETY: `new_node` puts this rank's own region at index `rank`
        // of `regions` (one entry per rank of the job, `rank` among them)
        // and `regions` is never changed after.
        unsafe {
            self.regions
                .get_unchecked(self.rank.index())
                .as_ref()
                .unwrap_unchecked()
        }
    }

    /// The region of a node-local `peer`. The AM layer only sends to ranks
    /// in range, and a composing conduit only to local ones.
    #[inline]
    fn region(&self, peer: Rank) -> &Region {
        match self.regions.get(peer.index()) {
            Some(Some(r)) => r,
            _ => panic!(
                "rgex-smp: {peer} is not on this node (its region is not mapped by {})",
                self.rank
            ),
        }
    }

    /// The geometry every rank uses.
    pub fn config(&self) -> SmpConfig {
        self.cfg
    }

    #[inline]
    fn ring_of(dir: Direction) -> usize {
        match dir {
            Direction::Request => REQUEST,
            Direction::Reply => REPLY,
        }
    }

    /// Claim a cell of the destination ring and the payload buffer for
    /// `spec`: the claim, whose ticket is the cell's address
    /// ([`Ring::ticket`], what [`Doorbell::of_ticket`] publishes). A Long
    /// range is resolved before the claim, so an error leaves no cell
    /// claimed.
    #[inline(always)]
    fn claim(&self, spec: &Prepare) -> Result<Claim> {
        let region = self.region(spec.peer);
        let which = Self::ring_of(spec.dir);
        spec.check_medium(self.cfg.max_medium)?;
        let long = match spec.category {
            // The AM layer checked [long_offset, +most) against the segment.
            Category::Long => region.segment.ptr_at(spec.long_offset, spec.most)?,
            _ => std::ptr::null_mut(),
        };
        let ring = &region.rings[which];
        let Some(claimed) = ring.try_claim() else {
            return Err(self.refused(spec, which));
        };
        if claimed.woke {
            // The receiver's progress thread is asleep (see `bell`).
            self.wake(region);
        }
        let pos = claimed.pos;
        let buf = match spec.category {
            Category::Short => std::ptr::null_mut(),
            Category::Medium => {
                let buf = region.payload(which, ring.index(pos));
                prefetch::for_write(buf, spec.most);
                buf
            }
            Category::Long => long,
        };
        Ok(Claim::new(buf, ring.ticket(pos)))
    }

    /// Drain the rings a poll found messages in: replies first (they
    /// complete operations and free our resources).
    #[inline(never)]
    fn poll_ready(
        &self,
        replies: bool,
        requests: bool,
        sink: &mut dyn FnMut(&Delivery<'_>),
    ) -> usize {
        let mut n = 0;
        if replies {
            n += self.drain(REPLY, POLL_BATCH, sink);
        }
        if requests {
            n += self.drain(REQUEST, POLL_BATCH, sink);
        }
        n
    }

    /// Deliver up to `budget` messages of ring `which` of this rank, if
    /// no other thread is delivering from it (0 if one is: it delivers
    /// them). The ring hands positions to many consumers, but two threads
    /// that each took one would run their handlers in either order: one
    /// deliverer per ring at a time keeps every sender's messages in the
    /// order it sent them, as the SPI promises (a sender's messages take
    /// positions in the order it claims them).
    #[inline(always)]
    fn drain(&self, which: usize, budget: usize, sink: &mut dyn FnMut(&Delivery<'_>)) -> usize {
        let Some(_turn) = DrainTurn::take(&self.draining[which].0) else {
            return 0;
        };
        let me = self.mine();
        let ring: &Ring = &me.rings[which];
        let mut n = 0;
        while n < budget {
            // SAFETY: `_turn` makes this thread the ring's only consumer
            // until it drops (every take from this rank's rings is here).
            let Some(pos) = (unsafe { ring.take_sole() }) else {
                break;
            };
            ring.body(pos).with(|b| {
                // SAFETY: we hold `pos` (taken, not released), so the
                // producer has finished writing the body and nobody else
                // touches it until `release` below: the handler reads it in
                // place.
                let body = unsafe { &*b };
                if !body.kind.is_marked() {
                    self.deliver(me, which, ring.index(pos), body, sink);
                }
            });
            ring.release(pos);
            n += 1;
        }
        n
    }

    #[inline(always)]
    fn deliver(
        &self,
        me: &Region,
        which: usize,
        index: usize,
        body: &Header,
        sink: &mut dyn FnMut(&Delivery<'_>),
    ) {
        let category = body.kind.category();
        let len = body.len as usize;
        let payload: &[u8] = match category {
            Category::Short => &[],
            // SAFETY: the payload buffer of a cell we hold is ours until
            // release; the producer wrote `len <= max_medium` bytes of it
            // before publishing (checked in the AM layer at prepare).
            Category::Medium => unsafe {
                std::slice::from_raw_parts(me.payload(which, index), len.min(self.cfg.max_medium))
            },
            Category::Long => match me.segment.ptr_at(body.long_offset, len) {
                // SAFETY: the range is inside this rank's segment (just
                // checked) and the sender finished writing it before it
                // published the message. Other writes to the same bytes
                // during the handler would be a race in the client program.
                Ok(p) => unsafe { std::slice::from_raw_parts(p, len) },
                Err(e) => {
                    tracing::warn!(
                        rank = self.rank.0,
                        peer = body.src,
                        "dropped a Long AM from rank {}: {e}",
                        body.src
                    );
                    return;
                }
            },
        };
        let nargs = (body.nargs as usize).min(rgex_core::MAX_ARGS);
        sink(&Delivery {
            src: Rank(body.src),
            dir: body.kind.direction(),
            category,
            handler: body.handler,
            args: &body.args[..nargs],
            payload,
            long_offset: body.long_offset,
        });
    }
}

/// One thread's turn to deliver from a ring (see `SmpConduit::drain`),
/// given back when dropped, a handler's panic included.
struct DrainTurn<'a>(&'a AtomicBool);

impl<'a> DrainTurn<'a> {
    #[inline]
    fn take(flag: &'a AtomicBool) -> Option<Self> {
        // Acquire: pairs with the Release in `drop`, so this thread's
        // deliveries come after the previous holder's (its handlers' effects
        // and the ring positions it took are visible here).
        flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| DrainTurn(flag))
    }
}

impl Drop for DrainTurn<'_> {
    fn drop(&mut self) {
        // Release: see `take`.
        self.0.store(false, Ordering::Release);
    }
}

impl SmpConduit {
    /// Ring a sleeping receiver's bell, and its wake socket if it listens
    /// there (see [`bell`](crate::bell)): off the send path, which only
    /// tests the flag its claim read.
    #[cold]
    #[inline(never)]
    fn wake(&self, region: &Region) {
        let bell = region.bell();
        bell.ring();
        if bell.listening() {
            if let Some(ringer) = self.ringer.get_or_init(|| Ringer::new().ok()) {
                ringer.ring(region.shm_name());
            }
        }
    }

    /// Arm this rank's rings for a sleep (steps 2 to 4 of the handshake
    /// in [`bell`](crate::bell)) and, if armed, `sleep` (which asks the
    /// caller's `still_idle`); its answer is returned (true when armed
    /// and nothing slept: messages are waiting).
    fn armed_sleep(&self, timeout: std::time::Duration, sleep: &dyn Fn() -> bool) -> bool {
        let me = self.mine();
        let rings = &me.rings;
        let request_armed = rings[REQUEST].arm_sleep();
        let armed = request_armed && rings[REPLY].arm_sleep();
        let mut slept = true;
        if armed {
            slept = sleep();
            rings[REPLY].disarm_sleep();
        }
        if request_armed {
            rings[REQUEST].disarm_sleep();
        }
        if !armed && !rings[REQUEST].has_message() && !rings[REPLY].has_message() {
            // Claimed but not published (a negotiated payload in
            // assembly), or another thread is asleep on the rings: nothing
            // to poll yet, and no bell rings for it.
            std::thread::sleep(ASSEMBLY_PAUSE.min(timeout));
        }
        slept
    }

    /// [`idle_wait`](Conduit::idle_wait) listening on this rank's wake
    /// socket instead of the futex, so that another wait object can be
    /// polled with it: `sleep` gets the socket's fd and the caller's
    /// `still_idle`, and sleeps until the fd (or its own) is readable,
    /// returning false if it cannot sleep on fds (then so does this, and
    /// the caller sleeps a bounded time itself). How a wrapper of smp and
    /// a network sleeps on both (the kit's `ShmBypass`); the handshake is
    /// in [`bell`](crate::bell). Also false if the socket cannot be bound
    /// ([`wake_socket`](crate::wake_socket)). [`idle_wake`](Conduit::idle_wake)
    /// rings the futex only: `sleep` must also wake on the caller's own
    /// wake fd (the kit's does: its eventfd is in its poll set).
    pub fn idle_wait_with(
        &self,
        timeout: std::time::Duration,
        still_idle: &dyn Fn() -> bool,
        sleep: &dyn Fn(i32, &dyn Fn() -> bool) -> bool,
    ) -> bool {
        let me = self.mine();
        let socket = self
            .wake_socket
            .get_or_init(|| WakeSocket::bind(me.shm_name()).ok());
        let Some(socket) = socket else {
            return false;
        };
        let bell = me.bell();
        // Before the arming (see `bell`): a producer that finds us asleep
        // then rings the socket.
        bell.listen(true);
        let slept = self.armed_sleep(timeout, &|| sleep(socket.fd(), still_idle));
        bell.listen(false);
        // After the sleep, before the next arming (see `bell`).
        socket.drain();
        slept
    }
}

/// How long an idle wait pauses when a message is claimed in one of its
/// rings but not yet published (a negotiated payload still assembled):
/// its sender does not ring, so the wait polls again after this.
const ASSEMBLY_PAUSE: std::time::Duration = std::time::Duration::from_micros(20);

/// Leave the job: the at-exit work for the region at `addr` (see
/// `liveness::leave_at_exit`).
fn leave(addr: usize) {
    // SAFETY: `addr` is the own Region of a live SmpConduit: registered in
    // `new_node` and taken back in Drop before the Region is unmapped (the
    // registry's lock is held while this runs, so Drop waits for it).
    let region = unsafe { &*(addr as *const Region) };
    region.depart(liveness::LEFT);
}

impl Drop for SmpConduit {
    fn drop(&mut self) {
        let mine = self.mine();
        liveness::forget_at_exit(mine as *const Region as usize);
        mine.depart(liveness::LEFT);
    }
}

impl Conduit for SmpConduit {
    fn name(&self) -> &'static str {
        "smp"
    }

    fn rank(&self) -> Rank {
        self.rank
    }

    fn size(&self) -> u32 {
        self.regions.len() as u32
    }

    fn locality(&self) -> &Locality {
        &self.locality
    }

    fn segment(&self) -> &Segment {
        &self.mine().segment
    }

    fn segment_len(&self, peer: Rank) -> u64 {
        self.seg_lens.get(peer.index()).copied().unwrap_or(0)
    }

    fn max_medium(&self, _peer: Rank, _nargs: usize) -> usize {
        self.cfg.max_medium
    }

    #[inline]
    fn try_prepare(&self, spec: &Prepare, refused: &mut Option<Error>) -> Option<Claim> {
        Claim::hand_over(self.claim(spec), refused)
    }

    fn peer_gone(&self, peer: Rank) -> Option<String> {
        self.gone(peer)
    }

    fn mapped_queue(&self) -> Option<MappedQueue> {
        // SAFETY: every claim smp makes (to a node-local peer: every peer
        // its table says shared memory carries) is a cell of that peer's
        // ring whose address is the ticket (`claim`), published by its
        // `Doorbell`, which is also what commit and cancel ring.
        Some(unsafe { MappedQueue::vouch() })
    }

    /// Inlined into the provided `try_send` (compiled for this conduit),
    /// with `publish_send`: left as calls, a Short round trip took about
    /// 60 more instructions, the claim returned through memory and read
    /// back.
    #[inline(always)]
    fn claim_send(&self, spec: &Prepare) -> Result<Claim> {
        self.claim(spec)
    }

    /// Rings the claim's doorbell straight from `spec` (no [`SendSlot`]).
    #[inline(always)]
    unsafe fn publish_send(
        &self,
        spec: &Prepare,
        claim: Claim,
        handler: u8,
        args: &[u32],
        len: usize,
    ) {
        // SAFETY: the claim is from our claim_send (its ticket is the
        // claimed cell's address), published once (publish_send's contract).
        let bell = unsafe { Doorbell::of_ticket(claim.ticket) };
        let kind = Kind::new(spec.category, spec.dir);
        bell.ring(self.rank, kind, handler, args, len, spec.long_offset);
    }

    /// Rings the claim's doorbell (the AM layer rings it itself for a
    /// negotiated-payload message: [`MappedQueue`]). This is also the
    /// publish step of the provided fixed-payload
    /// [`try_send`](Conduit::try_send).
    #[inline]
    unsafe fn commit(&self, slot: SendSlot, handler: u8, args: &[u32], len: usize) {
        // SAFETY: the slot holds a claim from our try_prepare (its ticket
        // is the claimed cell's address), consumed here and nowhere else
        // (commit's contract).
        let bell = unsafe { Doorbell::of_ticket(slot.cookie) };
        let kind = Kind::new(slot.category, slot.dir);
        bell.ring(self.rank, kind, handler, args, len, slot.long_offset);
    }

    unsafe fn cancel(&self, slot: SendSlot) {
        // SAFETY: as in commit. The cell is published marked: the receiver
        // skips it, and the ring is not held up behind it.
        let bell = unsafe { Doorbell::of_ticket(slot.cookie) };
        let kind = Kind::new(slot.category, slot.dir).marked();
        bell.ring_with(|h| h.kind = kind);
    }

    #[inline]
    fn poll(&self, set: PollSet, sink: &mut dyn FnMut(&Delivery<'_>)) -> usize {
        // Most polls find nothing, and a message that arrives meanwhile
        // waits for the rest of the poll: an empty ring costs two loads,
        // and an empty poll returns before anything else is set up.
        let rings = &self.mine().rings;
        let replies = rings[REPLY].has_message();
        let requests = set == PollSet::All && rings[REQUEST].has_message();
        if !(replies || requests) {
            return 0;
        }
        self.poll_ready(replies, requests, sink)
    }

    fn bootstrap(&self) -> &dyn Bootstrap {
        &*self.boot
    }

    fn open_endpoint(self: Arc<Self>, ep: u32) -> Result<Arc<dyn Conduit>> {
        Ok(Arc::new(self.another_endpoint(ep)?))
    }

    /// Sleep on this rank's bell (the handshake is in [`crate::bell`]).
    fn idle_wait(&self, timeout: std::time::Duration, still_idle: &dyn Fn() -> bool) -> bool {
        let bell = self.mine().bell();
        // Step 1, before the arming.
        let seen = bell.load();
        self.armed_sleep(timeout, &|| {
            if still_idle() {
                bell.wait(seen, timeout);
            }
            true
        })
    }

    fn idle_wake(&self) {
        self.mine().bell().ring();
    }

    /// Ring a node-local peer's bell if it sleeps: armed rings, the
    /// request ring then the reply ring, are how a sleeper says so (see
    /// [`crate::bell`]); it sleeps only once both are armed, so the
    /// reply ring's flag is the one to look at.
    fn wake_peer(&self, peer: Rank) {
        let Some(Some(region)) = self.regions.get(peer.index()) else {
            return;
        };
        // SeqCst: the store-load pattern of two parties that each write
        // then read what the other wrote (Dekker's): the caller updated
        // the peer's memory and now reads its ring's flag; the sleeper
        // armed its ring (a CAS) and then re-reads that memory (after a
        // SeqCst fence of its own, in its `still_idle`). In the single
        // order of SeqCst fences one comes first, so either this load
        // sees the flag set (and rings), or the sleeper's re-read sees the
        // update (and does not sleep).
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        if region.rings[REPLY].is_asleep() {
            // Acquire: the load above read the value of the sleeper's
            // Release arming CAS, so its read of the bell (before that)
            // happens before our ring, and its `listening` flag is seen:
            // a producer's claim that finds it asleep fences the same way
            // (see `bell`).
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            self.wake(region);
        }
    }
}

/// This node's name, as ranks compare it to find who shares memory:
/// `RGEX_HOST` when set (tests use it to split one machine into "nodes"),
/// else the kernel's host name.
///
/// ```
/// assert!(!rgex_smp::host_name().is_empty());
/// ```
pub fn host_name() -> String {
    let host = rgex_core::config::vars::HOST.name;
    if let Some(h) = std::env::var(host).ok().filter(|h| !h.is_empty()) {
        return h;
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The would-block error of a full ring.
#[cold]
fn queue_full(peer: Rank, which: usize) -> Error {
    let resource = if which == REQUEST {
        "the request queue"
    } else {
        "the reply queue"
    };
    Error::WouldBlock { peer, resource }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use rgex_core::bootstrap::SingleRank;
    use std::sync::atomic::AtomicU64;

    /// A job of one rank with a ring of `depth` cells and a 64 KiB segment.
    fn solo(depth: u64, tag: &str) -> SmpConduit {
        let env = JobEnv {
            rank: 0,
            size: 1,
            socket: None,
            job: format!("unit-{tag}-{}", std::process::id()),
            polite: false,
        };
        let cfg = SmpConfig {
            depth,
            max_medium: 512,
            segment_len: 64 << 10,
        };
        SmpConduit::new(&env, Box::new(SingleRank), cfg).expect("one-rank smp conduit")
    }

    fn spec(category: Category, len: usize, long_offset: u64) -> Prepare {
        Prepare {
            peer: Rank(0),
            dir: Direction::Request,
            category,
            nargs: 3,
            least: len,
            most: len,
            long_offset,
        }
    }

    /// Everything delivered by one poll: (handler, args, payload).
    fn drain_all(c: &SmpConduit) -> Vec<(u8, Vec<u32>, Vec<u8>)> {
        let mut got = Vec::new();
        c.poll(PollSet::All, &mut |d| {
            got.push((d.handler, d.args.to_vec(), d.payload.to_vec()))
        });
        got
    }

    #[test]
    fn one_call_send_delivers_arguments_and_payload() {
        let c = solo(4, "send");
        let payload: Vec<u8> = (0..200u32).map(|i| (i * 7) as u8).collect();
        c.try_send(&spec(Category::Medium, 200, 0), 70, &[1, 2, 3], &payload)
            .expect("room for one message");
        c.try_send(&spec(Category::Short, 0, 0), 71, &[9, 8, 7, 6, 5], &[])
            .expect("room for two");
        let got = drain_all(&c);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], (70, vec![1, 2, 3], payload));
        assert_eq!(got[1], (71, vec![9, 8, 7, 6, 5], vec![]));
    }

    /// While a handler runs, another thread's poll must not deliver the
    /// same sender's next message: it would run (and could finish) before
    /// the earlier one's handler, and two threads that each took a message
    /// could run them in either order.
    #[test]
    fn a_second_poller_waits_for_the_handler_before_it() {
        let c = solo(4, "turn");
        for seq in 1..=2u32 {
            c.try_send(&spec(Category::Short, 0, 0), 70, &[seq], &[])
                .expect("room");
        }
        let mut order = Vec::new();
        let mut meanwhile = Vec::new();
        c.poll(PollSet::All, &mut |d| {
            order.push(d.args[0]);
            if d.args[0] == 1 {
                // Another thread polls while message 1 is being handled.
                meanwhile = std::thread::scope(|s| {
                    s.spawn(|| {
                        let mut got = Vec::new();
                        c.poll(PollSet::All, &mut |d| got.push(d.args[0]));
                        got
                    })
                    .join()
                    .expect("the second poller")
                });
            }
        });
        assert_eq!(
            meanwhile,
            Vec::<u32>::new(),
            "message 2 was delivered while message 1's handler ran"
        );
        assert_eq!(order, [1, 2]);
    }

    /// Several threads poll one rank while two threads send to it: each
    /// sending thread's messages (sequence numbers in the arguments) must
    /// be handled in the order it sent them.
    #[test]
    fn many_pollers_keep_each_senders_order() {
        let c = solo(8, "order");
        const SENDERS: u32 = 2;
        const PER: u32 = 20_000;
        // Per sending thread: the last sequence number handled, and how
        // many were handled out of order.
        let last = std::sync::Mutex::new([0u32; SENDERS as usize]);
        let disorder = AtomicU64::new(0);
        let handled = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..SENDERS {
                let c = &c;
                s.spawn(move || {
                    for seq in 1..=PER {
                        let mut tries = 0u64;
                        while let Err(e) =
                            c.try_send(&spec(Category::Short, 0, 0), 70, &[t, seq], &[])
                        {
                            assert!(e.is_would_block(), "{e}");
                            tries += 1;
                            assert!(tries < 100_000_000, "sender {t} stuck at {seq}");
                            std::thread::yield_now();
                        }
                    }
                });
            }
            for _ in 0..3 {
                s.spawn(|| {
                    let mut idle = 0u64;
                    while handled.load(Ordering::Relaxed) < u64::from(SENDERS * PER) {
                        let n = c.poll(PollSet::All, &mut |d| {
                            let (t, seq) = (d.args[0] as usize, d.args[1]);
                            let mut last = last.lock().unwrap();
                            if seq != last[t] + 1 {
                                disorder.fetch_add(1, Ordering::Relaxed);
                            }
                            last[t] = seq;
                            handled.fetch_add(1, Ordering::Relaxed);
                        });
                        idle = if n == 0 { idle + 1 } else { 0 };
                        assert!(idle < 100_000_000, "nothing arrives any more");
                        if n == 0 {
                            std::thread::yield_now();
                        }
                    }
                });
            }
        });
        assert_eq!(handled.into_inner(), u64::from(SENDERS * PER));
        assert_eq!(disorder.into_inner(), 0, "messages handled out of order");
        assert_eq!(*last.lock().unwrap(), [PER; SENDERS as usize]);
    }

    #[test]
    fn full_ring_would_block_and_claims_nothing() {
        let c = solo(4, "full");
        for i in 0..4u32 {
            c.try_send(&spec(Category::Short, 0, 0), 70, &[i], &[])
                .expect("a free cell");
        }
        let e = c
            .try_send(&spec(Category::Short, 0, 0), 70, &[99], &[])
            .expect_err("the ring is full");
        assert!(e.is_would_block(), "{e}");
        let got = drain_all(&c);
        let args: Vec<u32> = got.iter().map(|g| g.1[0]).collect();
        assert_eq!(args, [0, 1, 2, 3], "the refused send must leave no trace");
        // The cells came back: the ring takes a full lap again.
        for i in 0..4u32 {
            c.try_send(&spec(Category::Short, 0, 0), 70, &[i], &[])
                .expect("a free cell after the drain");
        }
        assert_eq!(drain_all(&c).len(), 4);
    }

    #[test]
    fn refused_long_range_leaves_no_claimed_cell() {
        let c = solo(2, "long");
        // Past the end of the 64 KiB segment: refused before any cell is
        // claimed (a claimed, never published cell would hold up every
        // later message of the ring).
        let bad = spec(Category::Long, 16, (64 << 10) - 8);
        assert!(c.try_prepare(&bad, &mut None).is_none());
        assert!(c.try_send(&bad, 70, &[], &[0; 16]).is_err());
        c.try_send(&spec(Category::Long, 4, 100), 72, &[5], b"long")
            .expect("a Long inside the segment");
        let got = drain_all(&c);
        assert_eq!(got, vec![(72, vec![5], b"long".to_vec())]);
    }

    #[test]
    fn oversize_medium_is_refused_before_any_claim() {
        let c = solo(2, "oversize");
        // Straight through the SPI, without the AM layer's validation: a
        // Medium over the 512-byte buffers, and a payload longer than the
        // `most` it was prepared with. Either would overrun the buffer.
        let mut why = None;
        assert!(c
            .try_prepare(&spec(Category::Medium, 513, 0), &mut why)
            .is_none());
        let e = why.expect("a reason");
        assert!(
            matches!(
                e,
                Error::PayloadTooLarge {
                    len: 513,
                    max: 512,
                    ..
                }
            ),
            "{e}"
        );
        let e = c
            .try_send(&spec(Category::Medium, 8, 0), 70, &[], &[0; 9])
            .expect_err("9 bytes into 8");
        assert!(
            matches!(e, Error::PayloadTooLarge { len: 9, max: 8, .. }),
            "{e}"
        );
        // Nothing was claimed: both cells are free for the next two sends.
        for i in 0..2 {
            c.try_send(&spec(Category::Medium, 512, 0), 71, &[i], &[1; 512])
                .expect("a free cell");
        }
        assert_eq!(drain_all(&c).len(), 2);
    }

    #[test]
    fn prepared_slot_is_published_by_its_doorbell_or_by_commit() {
        let c = solo(4, "bell");
        assert!(
            c.mapped_queue().is_some() && c.locality().via_shm(c.rank()),
            "smp's own node's queues are mapped"
        );
        let claim = |s: &Prepare| c.try_prepare(s, &mut None).expect("room");
        // Rung by the protocol layer (no call into the conduit).
        let medium = spec(Category::Medium, 3, 0);
        let slot = claim(&medium);
        // SAFETY: the claim grants 3 writable bytes at `buf`.
        unsafe { std::ptr::copy_nonoverlapping(b"abc".as_ptr(), slot.buf.as_ptr(), 3) };
        let slot = SendSlot::new(&medium, slot);
        // SAFETY: a fresh claim from `c` (which says its claims are
        // cells), rung once.
        let bell = unsafe { Doorbell::of_ticket(slot.cookie) };
        let kind = Kind::new(slot.category, slot.dir);
        bell.ring(c.rank(), kind, 80, &[4, 5], 3, 0);
        // Through commit, as a conduit without a mapped queue would be.
        let short = spec(Category::Short, 0, 0);
        let slot = SendSlot::new(&short, claim(&short));
        // SAFETY: a fresh claim from `c`, committed once.
        unsafe { c.commit(slot, 81, &[6], 0) };
        // A cancelled slot is skipped; the ring is not held up behind it.
        // SAFETY: fresh claims from `c`, each cancelled or committed once.
        unsafe {
            c.cancel(SendSlot::new(&short, claim(&short)));
            c.commit(SendSlot::new(&short, claim(&short)), 82, &[7], 0);
        }
        let got = drain_all(&c);
        assert_eq!(
            got,
            vec![
                (80, vec![4, 5], b"abc".to_vec()),
                (81, vec![6], vec![]),
                (82, vec![7], vec![]),
            ]
        );
        c.try_send(&short, 83, &[], &[])
            .expect("all four cells free again");
    }
}
