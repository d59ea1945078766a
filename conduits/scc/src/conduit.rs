//! The scc conduit: the Conduit SPI over the emulated SCC chip.

use crate::address_plan::{Dir, Plan, PlanOptions, HEADER};
use crate::emu::{
    leave_word, Addr, CheckMode, Chip, Core, CoreConfig, Counters, LockId, RankPresence, StaleRead,
    MAX_CORES,
};
use crate::epoch::{seg_addr, Coherence, Epochs, Step};
use crate::report;
use crate::SccConfig;
use parking_lot::Mutex;
use rgex_core::atomic::rmw;
use rgex_core::bootstrap::JobEnv;
use rgex_core::conduit::{AtomicRequest, AtomicType, OpSet};
use rgex_core::descriptor::Kind;
use rgex_core::liveness::{self, PeerWatch, Presence};
use rgex_core::locality::{Locality, Place};
use rgex_core::{
    Backoff, Bootstrap, Category, Claim, Conduit, Delivery, Direction, Error, OpCounter, PollSet,
    Prepare, Rank, Result, Segment, SendSlot, MAX_ARGS,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Messages delivered per poll call at most, so one busy sender cannot
/// keep a poller from returning.
const POLL_BATCH: usize = 32;
/// Bytes copied per hold of the core lock in large puts, gets and Long
/// payloads, so other threads of the rank are not held up for long.
const CHUNK: usize = 64 << 10;
/// A wait that nobody retried for this long starts its clock afresh.
const RETRY_GAP: Duration = Duration::from_secs(1);

fn dir_of(d: Direction) -> Dir {
    match d {
        Direction::Request => Dir::Request,
        Direction::Reply => Dir::Reply,
    }
}

/// A bounded wait's clock: when it started, and when it was last retried.
#[derive(Clone, Copy, Default)]
struct Waiting(Option<(Instant, Instant)>);

impl Waiting {
    /// Note one more failed attempt; returns how long the wait has lasted.
    fn tick(&mut self) -> Duration {
        let now = Instant::now();
        let since = match self.0 {
            Some((since, last)) if now.duration_since(last) < RETRY_GAP => since,
            _ => now,
        };
        self.0 = Some((since, now));
        now.duration_since(since)
    }

    fn clear(&mut self) {
        self.0 = None;
    }
}

/// One sending channel (this rank to a peer, one direction).
#[derive(Default)]
struct SendChan {
    /// Messages claimed so far (the next sequence number).
    next: u32,
    /// Messages the receiver consumed, as last read.
    consumed: u32,
    full: Waiting,
}

/// A prepared message: its sequence number and the private buffer the AM
/// layer assembles the payload in (the emulation then copies it on chip).
struct Staged {
    seq: u32,
    buf: Vec<u8>,
}

/// A message taken from a slot, copied out of chip memory.
struct Msg {
    src: u32,
    dir: Direction,
    category: Category,
    handler: u8,
    cancelled: bool,
    nargs: usize,
    args: [u32; MAX_ARGS],
    payload: Vec<u8>,
    long_offset: u64,
}

/// The rank's private mutable state: its core (caches, WCB, counters) and
/// the protocol bookkeeping that goes with it.
pub(crate) struct Inner {
    pub(crate) core: Core,
    /// Reports already printed (see `report`).
    pub(crate) reported: u64,
    send: Vec<[SendChan; 2]>,
    /// Per source, per direction: messages consumed (the next expected).
    tail: Vec<[u32; 2]>,
    cursor: u32,
    epochs: Epochs,
    /// Per target: how long accesses have waited for its post.
    post_wait: Vec<Waiting>,
    /// Per target: how long atomics have found its test-and-set register
    /// held.
    tas_wait: Vec<Waiting>,
}

/// Ranks as cores of one emulated SCC chip (processes sharing its memory
/// through the emulation, which models their private non-coherent caches).
///
/// ```no_run
/// use rgex_core::{bootstrap, Conduit};
/// let (env, boot) = bootstrap::from_env()?;
/// let scc = rgex_scc::SccConduit::new(&env, boot, rgex_scc::SccConfig::from_env()?)?;
/// println!("{} of {}", scc.rank(), scc.size());
/// # Ok::<(), rgex_core::Error>(())
/// ```
///
/// Beyond the SPI it offers one-sided epochs ([`post`](Self::post),
/// [`start`](Self::start), [`complete`](Self::complete),
/// [`wait`](Self::wait)), reached from a client by downcasting:
///
/// ```no_run
/// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
/// use rgex_core::Rank;
/// let scc = client
///     .endpoint()
///     .conduit()
///     .as_any()
///     .and_then(|a| a.downcast_ref::<rgex_scc::SccConduit>())
///     .expect("running on the scc conduit");
/// scc.post(&[Rank(0)])?;
/// scc.wait_with(&mut || {
///     let _ = client.endpoint().poll();
/// })?;
/// # Ok(()) }
/// ```
pub struct SccConduit {
    rank: Rank,
    size: u32,
    /// Keeps the chip mapped (the segment points into it).
    chip: Chip,
    plan: Plan,
    seg: Segment,
    cfg: SccConfig,
    polite: bool,
    boot: Box<dyn Bootstrap>,
    inner: Arc<Mutex<Inner>>,
    /// Every rank's record of whether it is in the job (in the chip).
    presence: Vec<RankPresence>,
    /// When a stalled operation may next look at each peer's process.
    watch: PeerWatch,
    /// Every rank on this node (the chip), none mapped, none carried by
    /// shared memory.
    locality: Locality,
}

impl std::fmt::Debug for SccConduit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SccConduit")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("chip", &self.chip.name())
            .finish()
    }
}

fn word(b: &[u8], i: usize) -> u64 {
    b.get(8 * i..8 * i + 8)
        .map_or(0, |w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
}

impl SccConduit {
    /// Set up the job's chip: agree on the geometry (rank 0's depth, Medium
    /// size and checking; every rank's segment size), let rank 0 create the
    /// chip's shared memory (`/rgex-<job>-scc`), map it on every other rank,
    /// and unlink its name once all have mapped it (so nothing is left in
    /// /dev/shm after a crash or at exit). Collective.
    ///
    /// More than 48 ranks is an error (the SCC has 48 cores), as is a depth
    /// whose flags do not fit a core's message-passing buffer.
    pub fn new(env: &JobEnv, boot: Box<dyn Bootstrap>, local: SccConfig) -> Result<Self> {
        local.check()?;
        let (me, n) = (env.rank, env.size);
        if n > MAX_CORES {
            return Err(Error::Config(format!(
                "the scc conduit runs at most {MAX_CORES} ranks (the SCC has {MAX_CORES} cores), \
                 but the job has {n}"
            )));
        }
        // Geometry must be symmetric: rank 0's settings rule.
        let geo = boot.broadcast(
            0,
            &[
                u64::from(local.depth).to_le_bytes(),
                (local.max_medium as u64).to_le_bytes(),
                u64::from(local.check != CheckMode::Off).to_le_bytes(),
            ]
            .concat(),
        )?;
        let lens = boot.allgather(&(local.segment_len as u64).to_le_bytes())?;
        let seg_lens: Vec<u64> = lens.iter().map(|b| word(b, 0)).collect();
        let depth = u32::try_from(word(&geo, 0))
            .map_err(|_| Error::Config("scc: rank 0 sent a bad depth".into()))?;
        let cfg = SccConfig {
            depth,
            max_medium: word(&geo, 1) as usize,
            check: if word(&geo, 2) != 0 {
                match local.check {
                    CheckMode::Strict => CheckMode::Strict,
                    _ => CheckMode::Report,
                }
            } else {
                CheckMode::Off
            },
            ..local
        };
        cfg.check()?;
        let opts = PlanOptions {
            check: cfg.check != CheckMode::Off,
            ..PlanOptions::default()
        };
        // Same inputs on every rank: the same plan, or the same error.
        let plan = Plan::new(n, cfg.depth, cfg.max_medium, &seg_lens, opts)?;
        let layout = plan.layout()?;
        let name = format!("/rgex-{}-scc", env.job);

        let created = (me == 0).then(|| Chip::create(&name, layout.clone()));
        let verdict = match &created {
            Some(Ok(_)) => vec![0u8],
            Some(Err(e)) => [&[1u8][..], e.to_string().as_bytes()].concat(),
            None => Vec::new(),
        };
        let verdict = boot.broadcast(0, &verdict)?;
        if verdict.first() != Some(&0) {
            return Err(Error::Bootstrap(format!(
                "rank 0 could not create the scc chip {name} ({} bytes of chip memory): {}",
                layout.mem_bytes(),
                String::from_utf8_lossy(verdict.get(1..).unwrap_or_default())
            )));
        }
        let mine: Result<(Chip, Core)> = (|| {
            let chip = match created {
                Some(c) => c?,
                None => Chip::open_timeout(&name, cfg.timeout)?,
            };
            if chip.layout() != &layout {
                return Err(Error::Config(format!(
                    "scc chip {name}: its layout differs from the one {} computed",
                    Rank(me)
                )));
            }
            let core = chip.core_with(me, CoreConfig::default().check(cfg.check))?;
            // Before the collective below, after which peers may look.
            chip.presence(me)?.arrive();
            Ok((chip, core))
        })();
        let report = match &mine {
            Ok(_) => vec![0u8],
            Err(e) => [&[1u8][..], e.to_string().as_bytes()].concat(),
        };
        let all = boot.allgather(&report);
        if me == 0 {
            // Every rank has mapped it or given up (or the job is failing):
            // remove the name now.
            Chip::unlink(&name)?;
        }
        let all = all?;
        if let Some((r, rep)) = all.iter().enumerate().find(|(_, r)| r.first() != Some(&0)) {
            return Err(Error::Bootstrap(format!(
                "{} could not map the scc chip {name}: {}",
                Rank(r as u32),
                String::from_utf8_lossy(rep.get(1..).unwrap_or_default())
            )));
        }
        let (chip, core) = mine?;
        let len = plan.segment_len(me) as usize;
        let base = chip.host_ptr(plan.segment(me), len)?;
        // SAFETY: `base..base+len` is this rank's segment inside the chip's
        // mapping, which `self.chip` keeps alive as long as the conduit
        // (and so every borrow of `seg`) lives.
        let seg = unsafe { Segment::from_raw(Rank(me), base, len) };
        let inner = Arc::new(Mutex::new(Inner {
            core,
            reported: 0,
            send: (0..n).map(|_| Default::default()).collect(),
            tail: vec![[0; 2]; n as usize],
            cursor: (me + 1) % n,
            epochs: Epochs::new(me, n, Coherence::Targeted),
            post_wait: vec![Waiting::default(); n as usize],
            tas_wait: vec![Waiting::default(); n as usize],
        }));
        if cfg.check != CheckMode::Off {
            report::register(Rank(me), &inner);
        }
        let presence = (0..n)
            .map(|r| chip.presence(r))
            .collect::<Result<Vec<_>>>()?;
        // Registered after the checker's hook, so it runs before it (exit
        // hooks run in reverse), even when that one ends the process.
        // The chip stays mapped until Drop takes this back.
        liveness::leave_at_exit(leave_word, presence[me as usize].departure_word());
        Ok(SccConduit {
            rank: Rank(me),
            size: n,
            chip,
            plan,
            seg,
            cfg,
            polite: env.polite,
            boot,
            inner,
            presence,
            watch: PeerWatch::new(n as usize),
            locality: Locality::new(
                Rank(me),
                (0..n)
                    .map(|_| Place {
                        on_node: true,
                        ..Place::REMOTE
                    })
                    .collect(),
            )?,
        })
    }

    /// The settings every rank uses (depth, Medium size and checking from
    /// rank 0).
    pub fn config(&self) -> SccConfig {
        self.cfg
    }

    /// The job's address plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The chip.
    pub fn chip(&self) -> &Chip {
        &self.chip
    }

    /// A snapshot of this rank's core counters (modelled events and cycles).
    pub fn counters(&self) -> Counters {
        self.inner.lock().core.counters()
    }

    /// The stale reads the checker reported on this rank so far.
    pub fn stale_reads(&self) -> Vec<StaleRead> {
        self.inner.lock().core.stale_reads().to_vec()
    }

    /// Log the stale reads not logged yet (`tracing` errors), and fail if this
    /// rank has seen any. The process also fails at exit (status 1) after
    /// printing them, if checking is on and any was seen: a conformance run
    /// cannot pass with a stale read.
    pub fn check_report(&self) -> Result<()> {
        match report::flush(self.rank, &self.inner) {
            0 => Ok(()),
            n => Err(Error::Config(format!(
                "{}: the scc checker saw {n} stale read(s) (printed above)",
                self.rank
            ))),
        }
    }

    /// Run `f` on this rank's core, under the core lock. For tests that
    /// must break the protocol on purpose (to show the checker fails the
    /// process); anything done here bypasses the conduit's coherence.
    #[doc(hidden)]
    pub fn with_core<R>(&self, f: impl FnOnce(&mut Core) -> R) -> R {
        f(&mut self.inner.lock().core)
    }

    fn timed_out(&self, what: String) -> Error {
        Error::Os {
            op: format!(
                "{}: waited {:?} (RGEX_SCC_TIMEOUT) for {what}",
                self.rank, self.cfg.timeout
            ),
            source: std::io::Error::from(std::io::ErrorKind::TimedOut),
        }
    }

    /// Why `peer` is gone from the job, or `None` if it is there as far
    /// as this rank can tell now: its departure word, then (at most every
    /// [`PROCESS_CHECK_EVERY`](liveness::PROCESS_CHECK_EVERY)) its
    /// process. Asked where an operation to it stalls.
    #[cold]
    fn gone(&self, peer: Rank) -> Option<String> {
        if peer == self.rank {
            return None;
        }
        self.watch
            .gone(peer, "scc", self.presence.get(peer.index())?)
    }

    /// `what` to `peer` cannot be done: it is gone (`why`).
    #[cold]
    fn unreachable(&self, peer: Rank, what: String, why: String) -> Error {
        Error::PeerUnreachable {
            what,
            from: self.rank,
            rank: peer,
            why,
        }
    }

    /// Refuse `what` to `peer` if it has left the job (its departure word
    /// only: one load; a peer that died without leaving is found where an
    /// operation to it stalls). A rank out of range is for the caller's
    /// own checks.
    #[inline]
    fn present(&self, peer: Rank, what: impl FnOnce() -> String) -> Result<()> {
        match self.presence.get(peer.index()).map(|p| p.departure()) {
            None | Some(liveness::PRESENT) => Ok(()),
            Some(word) => Err(self.unreachable(
                peer,
                what(),
                liveness::reason(word, "scc").unwrap_or_default(),
            )),
        }
    }

    // ----- epochs -----

    /// Open an exposure epoch: `origins` may access this rank's segment
    /// until each of them completes. Releases this rank's own earlier
    /// stores; never waits.
    pub fn post(&self, origins: &[Rank]) -> Result<()> {
        let o: Vec<u32> = origins.iter().map(|r| r.0).collect();
        let mut g = self.inner.lock();
        let g = &mut *g;
        g.epochs.post(&mut g.core, &self.plan, &o)
    }

    /// Open an access epoch towards `targets`. Never waits: the first put
    /// or get to each target (through the normal rgex RMA calls) waits for
    /// that target's post of this epoch.
    pub fn start(&self, targets: &[Rank]) -> Result<()> {
        let t: Vec<u32> = targets.iter().map(|r| r.0).collect();
        let mut g = self.inner.lock();
        let g = &mut *g;
        g.epochs.start(&mut g.core, &self.plan, &t)
    }

    /// Close the access epoch: every put has landed already; tell each
    /// target (once it has posted). Waits without running AM handlers; see
    /// [`complete_with`](Self::complete_with).
    pub fn complete(&self) -> Result<()> {
        self.complete_with(&mut || {})
    }

    /// [`complete`](Self::complete), calling `progress` (e.g. a client's
    /// `poll`) between attempts while targets have not posted yet.
    pub fn complete_with(&self, progress: &mut dyn FnMut()) -> Result<()> {
        let mut backoff = Backoff::new(self.polite);
        let mut waiting = Waiting::default();
        loop {
            let step = {
                let mut g = self.inner.lock();
                let g = &mut *g;
                loop {
                    // A Progress that took a lock is always followed by the
                    // step that releases it, within this critical section.
                    match g.epochs.complete_step(&mut g.core, &self.plan)? {
                        Step::Progress => continue,
                        s => break s,
                    }
                }
            };
            if step == Step::Done {
                return Ok(());
            }
            // A target that has not posted and is gone never will.
            let unposted = self.inner.lock().epochs.pending_targets();
            for (t, _) in unposted.into_iter().filter(|&(_, posted)| !posted) {
                if let Some(why) = self.gone(Rank(t)) {
                    return Err(self.unreachable(
                        Rank(t),
                        "the completion of an access epoch (it has not posted)".into(),
                        why,
                    ));
                }
            }
            if waiting.tick() > self.cfg.timeout {
                let g = self.inner.lock();
                let pending: Vec<String> = g
                    .epochs
                    .pending_targets()
                    .iter()
                    .map(|&(t, posted)| {
                        format!(
                            "{} ({})",
                            Rank(t),
                            if posted {
                                "posted; its lock stayed busy"
                            } else {
                                "has not posted"
                            }
                        )
                    })
                    .collect();
                return Err(self.timed_out(format!(
                    "the targets of its access epoch to complete: {}",
                    pending.join(", ")
                )));
            }
            progress();
            backoff.snooze();
        }
    }

    /// True once every origin of the open exposure epoch has completed (the
    /// epoch is then closed). Never waits.
    pub fn test(&self) -> Result<bool> {
        let mut g = self.inner.lock();
        let g = &mut *g;
        g.epochs.test(&mut g.core, &self.plan)
    }

    /// Wait until every origin of the open exposure epoch has completed.
    /// Runs no AM handlers; see [`wait_with`](Self::wait_with).
    pub fn wait(&self) -> Result<()> {
        self.wait_with(&mut || {})
    }

    /// [`wait`](Self::wait), calling `progress` between attempts.
    pub fn wait_with(&self, progress: &mut dyn FnMut()) -> Result<()> {
        let mut backoff = Backoff::new(self.polite);
        let mut waiting = Waiting::default();
        loop {
            if self.test()? {
                return Ok(());
            }
            self.origins_gone()?;
            if waiting.tick() > self.cfg.timeout {
                let mut g = self.inner.lock();
                let g = &mut *g;
                let got = g.epochs.completions(&mut g.core, &self.plan)?;
                let want = g.epochs.awaited_completions();
                let origins: Vec<Rank> = g
                    .epochs
                    .exposure_origins()
                    .iter()
                    .map(|&o| Rank(o))
                    .collect();
                return Err(self.timed_out(format!(
                    "the origins {origins:?} of its exposure epoch to complete (counter {got}, \
                     waiting for {want})"
                )));
            }
            progress();
            backoff.snooze();
        }
    }

    /// Fail a wait for the exposure epoch's completions that the origins
    /// still in the job can no longer bring: more are missing than there
    /// are origins left (each completes once; the counter does not say
    /// which have), naming one that is gone.
    fn origins_gone(&self) -> Result<()> {
        let origins = self.inner.lock().epochs.exposure_origins().to_vec();
        let mut present = 0u32;
        let mut first_gone = None;
        for &o in &origins {
            match self.gone(Rank(o)) {
                None => present += 1,
                Some(why) => {
                    first_gone.get_or_insert((Rank(o), why));
                }
            }
        }
        // Only then the counter (a read through the core, with its cost).
        let Some((o, why)) = first_gone else {
            return Ok(());
        };
        let missing = {
            let mut g = self.inner.lock();
            let g = &mut *g;
            let got = g.epochs.completions(&mut g.core, &self.plan)?;
            g.epochs.awaited_completions().wrapping_sub(got)
        };
        if missing <= present {
            return Ok(());
        }
        Err(self.unreachable(
            o,
            format!(
                "the completion of an exposure epoch ({missing} of its origins' completions \
                 missing, {present} origin(s) left)"
            ),
            why,
        ))
    }

    // ----- internals -----

    /// May this rank access `peer` now (epoch gate)? A would-block names
    /// the post; past the timeout, an error.
    fn gate(&self, g: &mut Inner, peer: Rank) -> Result<()> {
        if g.epochs.access_ready(&mut g.core, &self.plan, peer.0)? {
            g.post_wait[peer.index()].clear();
            return Ok(());
        }
        if let Some(why) = self.gone(peer) {
            return Err(self.unreachable(
                peer,
                format!(
                    "an access in an epoch (waiting for its post number {})",
                    g.epochs.awaited_post(peer.0)
                ),
                why,
            ));
        }
        if g.post_wait[peer.index()].tick() > self.cfg.timeout {
            return Err(self.timed_out(format!(
                "{peer} to post (its exposure epoch number {} towards {})",
                g.epochs.awaited_post(peer.0),
                self.rank
            )));
        }
        Err(Error::WouldBlock {
            peer,
            resource: "the epoch (no post yet)",
        })
    }

    /// Store `data` at `at` through this core, a chunk per lock hold.
    fn store_chunked(&self, at: Addr, data: &[u8]) {
        for (i, c) in data.chunks(CHUNK).enumerate() {
            self.inner
                .lock()
                .core
                .write(at.offset((i * CHUNK) as u64), c)
                .expect("a checked range of chip memory");
        }
    }

    /// Take the next message (replies first), copying it out of chip memory
    /// and freeing its slot.
    fn take(&self, g: &mut Inner, set: PollSet) -> Option<Msg> {
        let (me, n) = (self.rank.0, self.size);
        let depth = self.plan.depth();
        let dirs: &[Dir] = match set {
            PollSet::All => &[Dir::Reply, Dir::Request],
            PollSet::RepliesOnly => &[Dir::Reply],
        };
        for &d in dirs {
            for i in 0..n {
                let s = (g.cursor + i) % n;
                let tail = g.tail[s as usize][d as usize];
                let k = tail % depth;
                let flag = g
                    .core
                    .read_u32_acquire(self.plan.am_flag(me, s, d, k))
                    .expect("flags are chip memory");
                if flag != tail.wrapping_add(1) {
                    continue;
                }
                // Acquire: old copies of the slot (or of our segment, for a
                // Long) must not be read.
                g.core.invalidate_mpbt();
                let slot = self.plan.am_slot(s, me, d, k);
                let mut h = [0u8; 16];
                g.core.read(slot, &mut h).expect("slots are chip memory");
                let kd = Kind(h[1]);
                let nargs = (h[2] as usize).min(MAX_ARGS);
                let len = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")) as usize;
                let long_offset = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
                let mut ab = [0u8; 4 * MAX_ARGS];
                g.core
                    .read(slot.offset(16), &mut ab[..4 * nargs])
                    .expect("slots are chip memory");
                let mut args = [0u32; MAX_ARGS];
                for (a, b) in args.iter_mut().zip(ab.chunks_exact(4)).take(nargs) {
                    *a = u32::from_le_bytes(b.try_into().expect("4 bytes"));
                }
                let category = kd.category();
                // Marked: cancelled by the sender.
                let mut cancelled = kd.is_marked();
                let payload = match category {
                    _ if cancelled => Vec::new(),
                    Category::Short => Vec::new(),
                    Category::Medium => {
                        let mut p = vec![0u8; len.min(self.plan.max_medium())];
                        g.core
                            .read(slot.offset(HEADER), &mut p)
                            .expect("slots are chip memory");
                        p
                    }
                    Category::Long => match seg_addr(&self.plan, me, long_offset, len) {
                        Ok(at) => {
                            let mut p = vec![0u8; len];
                            g.core.read(at, &mut p).expect("a checked segment range");
                            p
                        }
                        Err(e) => {
                            tracing::warn!(
                                rank = self.rank.0,
                                peer = s,
                                "dropped a Long AM from rank {s}: {e}"
                            );
                            cancelled = true;
                            Vec::new()
                        }
                    },
                };
                let tail = tail.wrapping_add(1);
                g.tail[s as usize][d as usize] = tail;
                // Everything is copied out: hand the slot back (uncached).
                g.core
                    .write_u32_release(self.plan.am_consumed(s, me, d), tail)
                    .expect("counters are chip memory");
                g.cursor = (s + 1) % n;
                return Some(Msg {
                    src: s,
                    dir: match d {
                        Dir::Request => Direction::Request,
                        Dir::Reply => Direction::Reply,
                    },
                    category,
                    handler: h[0],
                    cancelled,
                    nargs,
                    args,
                    payload,
                    long_offset,
                });
            }
        }
        None
    }

    /// Claim a slot of the channel to `spec.peer` and a staging buffer for
    /// the payload: the ticket is the leaked `Box<Staged>`, taken back by
    /// commit or cancel.
    fn claim(&self, spec: &Prepare) -> Result<Claim> {
        let peer = spec.peer;
        if peer.0 >= self.size {
            return Err(Error::RankOutOfRange {
                rank: peer.0,
                size: self.size,
            });
        }
        spec.check_medium(self.plan.max_medium())?;
        let d = dir_of(spec.dir);
        let what = || {
            format!(
                "an AM {} {}",
                spec.category,
                match d {
                    Dir::Request => "request",
                    Dir::Reply => "reply",
                }
            )
        };
        self.present(peer, what)?;
        let depth = self.plan.depth();
        // The seq of the claimed slot, or how long the channel has been
        // full (decided under the lock, reported without it).
        let seq: std::result::Result<u32, Duration> = {
            let mut g = self.inner.lock();
            let g = &mut *g;
            let ch = &mut g.send[peer.index()][d as usize];
            if ch.next.wrapping_sub(ch.consumed) >= depth {
                // Out of slots as far as we know: look at what the
                // receiver has consumed (uncached, in our own MPB).
                ch.consumed =
                    g.core
                        .read_u32_acquire(self.plan.am_consumed(self.rank.0, peer.0, d))?;
            }
            if ch.next.wrapping_sub(ch.consumed) >= depth {
                Err(ch.full.tick())
            } else {
                ch.full.clear();
                let seq = ch.next;
                ch.next = seq.wrapping_add(1);
                Ok(seq)
            }
        };
        let seq = seq.map_err(|waited| self.full(peer, d, waited, what))?;
        let granted = match spec.category {
            Category::Short => 0,
            Category::Medium | Category::Long => spec.most,
        };
        let mut st = Box::new(Staged {
            seq,
            buf: vec![0u8; granted],
        });
        let buf = if granted == 0 {
            std::ptr::null_mut()
        } else {
            st.buf.as_mut_ptr()
        };
        Ok(Claim::new(buf, Box::into_raw(st) as u64))
    }

    /// The refusal of a claim to `peer` whose `d` slots are all in use
    /// after a wait of `waited`: it is gone, or the wait timed out, or
    /// would-block (the AM layer polls and retries).
    #[cold]
    fn full(&self, peer: Rank, d: Dir, waited: Duration, what: impl FnOnce() -> String) -> Error {
        if let Some(why) = self.gone(peer) {
            return self.unreachable(peer, what(), why);
        }
        let (slots, resource) = match d {
            Dir::Request => ("request", "the request slots"),
            Dir::Reply => ("reply", "the reply slots"),
        };
        if waited > self.cfg.timeout {
            return self.timed_out(format!(
                "{peer} to consume one of its {} {slots} slots from {} (is it polling?)",
                self.plan.depth(),
                self.rank
            ));
        }
        Error::WouldBlock { peer, resource }
    }

    /// Publish slot `seq` of the channel to `slot.peer`: header (with
    /// `len` as the length: Medium payload or landed Long bytes), the
    /// Medium `payload`, drain, then the flag.
    #[allow(clippy::too_many_arguments)]
    fn publish(
        &self,
        slot: &SendSlot,
        seq: u32,
        kd: Kind,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        len: usize,
    ) {
        let me = self.rank.0;
        let d = dir_of(slot.dir);
        let k = seq % self.plan.depth();
        let at = self.plan.am_slot(me, slot.peer.0, d, k);
        let nargs = args.len().min(MAX_ARGS);
        let mut h = [0u8; 16 + 4 * MAX_ARGS];
        h[0] = handler;
        h[1] = kd.0;
        h[2] = nargs as u8;
        h[4..8].copy_from_slice(&(len as u32).to_le_bytes());
        h[8..16].copy_from_slice(&slot.long_offset.to_le_bytes());
        for (i, a) in args.iter().take(nargs).enumerate() {
            h[16 + 4 * i..20 + 4 * i].copy_from_slice(&a.to_le_bytes());
        }
        let mut g = self.inner.lock();
        let core = &mut g.core;
        core.write(at, &h[..16 + 4 * nargs])
            .expect("slots are chip memory");
        if slot.category == Category::Medium && !payload.is_empty() {
            core.write(at.offset(HEADER), payload)
                .expect("slots are chip memory");
        }
        // Release: header and payload (and a Long's bytes) reach memory
        // before the flag can be seen.
        core.drain();
        core.write_u32_release(
            self.plan.am_flag(slot.peer.0, me, d, k),
            seq.wrapping_add(1),
        )
        .expect("flags are chip memory");
    }
}

impl Drop for SccConduit {
    fn drop(&mut self) {
        let mine = &self.presence[self.rank.index()];
        liveness::forget_at_exit(mine.departure_word());
        mine.depart(liveness::LEFT);
        report::flush(self.rank, &self.inner);
    }
}

impl Conduit for SccConduit {
    fn name(&self) -> &'static str {
        "scc"
    }

    fn rank(&self) -> Rank {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    /// Every rank is a core of the same chip, on this node; its memory is
    /// *not* coherent with this one's, so nothing is mapped (plain copies
    /// into a peer's segment would bypass the emulated caches, and with
    /// them the coherence protocol): RMA goes through
    /// [`rma_native`](Conduit::rma_native), AMs through the chip's message
    /// buffers.
    fn locality(&self) -> &Locality {
        &self.locality
    }

    fn segment(&self) -> &Segment {
        &self.seg
    }

    fn segment_len(&self, peer: Rank) -> u64 {
        if peer.0 < self.size {
            self.plan.segment_len(peer.0)
        } else {
            0
        }
    }

    fn max_medium(&self, _peer: Rank, _nargs: usize) -> usize {
        self.plan.max_medium()
    }

    fn try_prepare(&self, spec: &Prepare, refused: &mut Option<Error>) -> Option<Claim> {
        Claim::hand_over(self.claim(spec), refused)
    }

    fn peer_gone(&self, peer: Rank) -> Option<String> {
        self.gone(peer)
    }

    unsafe fn commit(&self, slot: SendSlot, handler: u8, args: &[u32], len: usize) {
        // SAFETY: the cookie is the `Box<Staged>` leaked by try_prepare for
        // this slot, and commit/cancel consume a slot exactly once.
        let st = unsafe { Box::from_raw(slot.cookie as *mut Staged) };
        let len = len.min(st.buf.len());
        let mut kd = Kind::new(slot.category, slot.dir);
        if slot.category == Category::Long && len > 0 {
            match seg_addr(&self.plan, slot.peer.0, slot.long_offset, len) {
                // Drained by `publish` before the flag.
                Ok(at) => self.store_chunked(at, &st.buf[..len]),
                Err(e) => {
                    tracing::warn!(
                        rank = self.rank.0,
                        peer = slot.peer.0,
                        "cancelled a Long AM to {}: {e}",
                        slot.peer
                    );
                    kd = kd.marked();
                }
            }
        }
        let payload = match slot.category {
            Category::Medium => &st.buf[..len],
            _ => &[][..],
        };
        self.publish(&slot, st.seq, kd, handler, args, payload, len);
    }

    unsafe fn cancel(&self, slot: SendSlot) {
        // SAFETY: as in commit: the cookie is this slot's leaked Box.
        let st = unsafe { Box::from_raw(slot.cookie as *mut Staged) };
        // Marked: cancelled (the receiver frees the slot and runs nothing).
        let kd = Kind::new(slot.category, slot.dir).marked();
        self.publish(&slot, st.seq, kd, 0, &[], &[], 0);
    }

    fn poll(&self, set: PollSet, sink: &mut dyn FnMut(&Delivery<'_>)) -> usize {
        let mut n = 0;
        while n < POLL_BATCH {
            // Copy the message out under the lock, run the handler without
            // it: a handler may reply (commit) or poll replies (re-entry).
            let Some(m) = self.take(&mut self.inner.lock(), set) else {
                break;
            };
            n += 1;
            if m.cancelled {
                continue;
            }
            sink(&Delivery {
                src: Rank(m.src),
                dir: m.dir,
                category: m.category,
                handler: m.handler,
                args: &m.args[..m.nargs],
                payload: &m.payload,
                long_offset: m.long_offset,
            });
        }
        n
    }

    fn bootstrap(&self) -> &dyn Bootstrap {
        &*self.boot
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn rma_native(&self, peer: Rank) -> bool {
        peer.0 < self.size
    }

    unsafe fn try_put(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        _lc: &Arc<OpCounter>,
        rc: &Arc<OpCounter>,
    ) -> Result<()> {
        let at = seg_addr(&self.plan, peer.0, offset, len)?;
        self.present(peer, || {
            format!("a put of {len} bytes at offset {offset:#x}")
        })?;
        self.gate(&mut self.inner.lock(), peer)?;
        // SAFETY: the caller keeps `src..src+len` readable and unmodified
        // until local completion, which is this return (nothing is counted
        // on `lc`: the bytes are copied before we return).
        let data = unsafe { std::slice::from_raw_parts(src, len) };
        rc.add(1);
        self.store_chunked(at, data);
        // Remote completion: drained, so in memory.
        self.inner.lock().core.drain();
        rc.done();
        Ok(())
    }

    unsafe fn try_get(
        &self,
        dst: *mut u8,
        peer: Rank,
        offset: u64,
        len: usize,
        done: &Arc<OpCounter>,
    ) -> Result<()> {
        let at = seg_addr(&self.plan, peer.0, offset, len)?;
        self.present(peer, || {
            format!("a get of {len} bytes at offset {offset:#x}")
        })?;
        self.gate(&mut self.inner.lock(), peer)?;
        // SAFETY: the caller keeps `dst..dst+len` valid and untouched by
        // anyone else until `done` completes, which happens below.
        let out = unsafe { std::slice::from_raw_parts_mut(dst, len) };
        done.add(1);
        for (i, c) in out.chunks_mut(CHUNK).enumerate() {
            self.inner
                .lock()
                .core
                .read(at.offset((i * CHUNK) as u64), c)
                .expect("a checked range of chip memory");
        }
        done.done();
        Ok(())
    }

    fn atomic_offload(&self, _ty: AtomicType, _ops: OpSet) -> bool {
        true
    }

    fn atomic_start(
        &self,
        req: &AtomicRequest,
        fetched: &Arc<AtomicU64>,
        done: &Arc<OpCounter>,
    ) -> Result<()> {
        let size = req.ty.size();
        let t = req.target.0;
        let at = seg_addr(&self.plan, t, req.offset, size)?;
        self.present(req.target, || {
            format!(
                "an atomic {:?} {:?} at offset {:#x}",
                req.ty, req.op, req.offset
            )
        })?;
        let mut g = self.inner.lock();
        let inner = &mut *g;
        // The owner's test-and-set register serialises every atomic on its
        // segment. One try: a held register is would-block (the SPI never
        // waits, and this rank's lock must not be held while another core
        // finishes), the atomics layer polls and retries. A register held
        // through every retry for the timeout is an error (its holder may
        // be gone).
        if !inner.core.tas_try(LockId(t))? {
            if inner.tas_wait[t as usize].tick() > self.cfg.timeout {
                return Err(self.timed_out(format!(
                    "the test-and-set register of {} (atomic {:?} {:?} at offset {:#x})",
                    req.target, req.ty, req.op, req.offset
                )));
            }
            return Err(Error::WouldBlock {
                peer: req.target,
                resource: "the test-and-set register of its segment",
            });
        }
        inner.tas_wait[t as usize].clear();
        let core = &mut inner.core;
        // Release: our earlier stores are in memory before the op is.
        core.drain();
        // Acquire (and a fresh read): no old copy of the word survives.
        core.invalidate_mpbt();
        let mut b = [0u8; 8];
        core.read(at, &mut b[..size])
            .expect("a checked range of chip memory");
        let (new, old) = rmw(
            req.ty,
            req.op,
            u64::from_le_bytes(b),
            req.operand1,
            req.operand2,
        );
        if let Some(v) = new {
            core.write(at, &v.to_le_bytes()[..size])
                .expect("a checked range of chip memory");
            core.drain();
        }
        core.tas_release(LockId(t))?;
        if req.acquire {
            core.invalidate_mpbt();
        }
        drop(g);
        done.add(1);
        // Relaxed: `done()` below is a Release that the waiter's Acquire
        // (`is_done`) pairs with, which orders this store before its load.
        fetched.store(old, Ordering::Relaxed);
        done.done();
        Ok(())
    }
}
