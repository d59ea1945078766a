//! The endpoint: a conduit, its handler table, and the request API.

use crate::abandon::Watched;
use crate::context::{in_handler, HandlerScope};
use crate::crossing::Crossing;
use crate::extension::Extensions;
use crate::handler::Target;
use crate::memory_wait::MemoryWaits;
use crate::refusal::{self, Refusals};
use crate::rma::reference::Reference;
use crate::rma::{Routes, SignalProtocol};
use crate::siblings::Siblings;
use crate::{AmConfig, EndpointAddr, HandlerTable, Message, Prepared, ProtocolId, Token};
use rgex_core::doorbell::MappedQueue;
use rgex_core::shared_work::Board;
use rgex_core::{
    Category, Conduit, Delivery, Direction, Error, Flags, Locality, PollSet, Prepare, Rank, Result,
    Segment,
};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// Work a client-level poll also advances (non-blocking collectives).
pub(crate) type BackgroundFn = dyn Fn() -> usize + Send + Sync;

/// The background hook and the count of work items it has in flight: a
/// poll calls the hook only when the count is not zero, so an idle one
/// costs a load.
struct Background {
    hook: Box<BackgroundFn>,
    pending: Arc<AtomicUsize>,
}

/// An AM context: where handlers are registered and requests are sent from.
///
/// Shared by all threads of the process (`Send + Sync`); every method takes
/// `&self`.
///
/// ```no_run
/// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
/// use rgex_core::{Flags, Rank};
/// let h = ep.handlers().register("hello", |tok, msg| {
///     println!("{} sent {:?}", tok.src(), msg.args());
/// })?;
/// ep.request_short(Rank(0), h, &[1, 2, 3], Flags::empty())?;
/// ep.poll()?;
/// # Ok(()) }
/// ```
pub struct Endpoint {
    conduit: Arc<dyn Conduit>,
    /// `conduit.size()`, fixed for the job (checked on every send).
    size: u32,
    /// `conduit.rank()` (written into every message a doorbell publishes).
    rank: Rank,
    /// The conduit's neighbourhood table, kept here so that layers above
    /// read it without a call through the conduit.
    locality: Locality,
    /// The conduit's word (`Conduit::mapped_queue`, asked once) that its
    /// claims to the peers the table says shared memory carries are
    /// node-local cells: negotiated-payload sends to them are published by
    /// doorbell.
    cells: Option<MappedQueue>,
    handlers: HandlerTable,
    polite: bool,
    /// A progress thread's longest sleep (`AmConfig::progress_idle`).
    pub(crate) progress_idle: std::time::Duration,
    dropped: AtomicU64,
    /// Malformed protocol messages received (see [`Endpoint::malformed`]).
    malformed: AtomicU64,
    /// Client handlers that returned an error (see [`crate::outcome`]).
    handler_errors: AtomicU64,
    /// The refusal's handler, for [`Endpoint::drop_unhandled`].
    refused: ProtocolId,
    /// Dropped AMs and malformed messages the next `poll` reports.
    refusals: Refusals,
    pub(crate) me: Weak<Endpoint>,
    background: OnceLock<Background>,
    /// Work a thread of this process shares with the threads waiting in
    /// a poll or a wait (see [`share`](Endpoint::share)).
    board: Board,
    rma_reference: Arc<Reference>,
    /// Put-with-signal's reference protocol and native peers.
    signal: Arc<SignalProtocol>,
    /// The waits on memory registered here (see [`crate::memory_wait`]).
    memory_waits: Arc<MemoryWaits>,
    /// Every peer's RMA route, decided once here.
    routes: Routes,
    /// The payload limits every peer accepts (asked once here).
    limits: crate::limits::Limits,
    /// Memory the client registered for peers to reach.
    client_segments: crate::client_segment::ClientSegments,
    extensions: Extensions,
    /// Tables of operations in flight that stalled waits check for gone
    /// peers (see [`crate::abandon`]).
    watched: Watched,
    /// The client was finalized or dropped: sends and RMA are refused
    /// (see [`check_open`](Endpoint::check_open)).
    finalized: AtomicBool,
    /// This endpoint's index on its rank (0: the primordial endpoint).
    index: u32,
    /// Refused because the endpoint was destroyed, not finalized.
    destroyed: AtomicBool,
    /// This rank's endpoints by index (for AMs to another index).
    siblings: Arc<Siblings>,
    /// The protocols of AMs to and from another index.
    crossing: Crossing,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("conduit", &self.conduit.name())
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish()
    }
}

/// How many malformed protocol messages, and how many dropped messages,
/// an endpoint logs as `tracing` warnings, which `rgex::init`'s subscriber
/// prints on stderr (all are counted, and each is returned by
/// a poll while fewer than 64 reports wait).
pub const MALFORMED_PRINTED: u64 = 16;

/// Describe a request for the injection path.
#[inline]
pub(crate) fn spec(peer: Rank, dir: Direction, category: Category, long_offset: u64) -> Prepare {
    Prepare {
        peer,
        dir,
        category,
        nargs: 0,
        least: 0,
        most: 0,
        long_offset,
    }
}

impl Endpoint {
    /// An endpoint over `conduit`, with rgex's own RMA handlers registered,
    /// as `cfg` says: `polite` makes waits yield the CPU at once
    /// (oversubscribed nodes); `rma_reference` forces RMA through active
    /// messages even where the peer's segment is mapped (to test the
    /// reference path).
    pub fn new(conduit: Arc<dyn Conduit>, cfg: &AmConfig) -> Result<Arc<Self>> {
        let siblings = Arc::new(Siblings::default());
        let ep = Self::at_index(conduit, cfg, 0, siblings.clone())?;
        siblings.set_primordial(Arc::downgrade(&ep));
        Ok(ep)
    }

    /// An endpoint at index `index` of its rank over `conduit` (endpoint
    /// `index`'s own: see [`Conduit::open_endpoint`]), as [`new`](Self::new).
    pub(crate) fn at_index(
        conduit: Arc<dyn Conduit>,
        cfg: &AmConfig,
        index: u32,
        siblings: Arc<Siblings>,
    ) -> Result<Arc<Self>> {
        let handlers = HandlerTable::new();
        let crossing = Crossing::install(&handlers)?;
        let rma_reference = Reference::install(&handlers)?;
        let signal = SignalProtocol::install(&handlers, &*conduit)?;
        let memory_waits = MemoryWaits::new(conduit.rank(), conduit.size());
        let refused = Refusals::install(&handlers)?;
        let polite = cfg.polite;
        let progress_idle = cfg.progress_idle;
        let rma_reference_only = cfg.rma_reference;
        let routes = Routes::new(
            &*conduit,
            rma_reference_only,
            rgex_core::observe::observes("rma"),
        );
        let cells = conduit.mapped_queue();
        let limits = crate::limits::Limits::over(&*conduit);
        let ep = Arc::new_cyclic(|me| Endpoint {
            size: conduit.size(),
            rank: conduit.rank(),
            cells,
            locality: conduit.locality().clone(),
            conduit,
            handlers,
            polite,
            progress_idle,
            dropped: AtomicU64::new(0),
            malformed: AtomicU64::new(0),
            handler_errors: AtomicU64::new(0),
            refused,
            refusals: Refusals::default(),
            me: me.clone(),
            background: OnceLock::new(),
            board: Board::new(),
            rma_reference,
            signal,
            memory_waits,
            routes,
            limits,
            client_segments: Default::default(),
            extensions: Extensions::default(),
            watched: Watched::default(),
            finalized: AtomicBool::new(false),
            index,
            destroyed: AtomicBool::new(false),
            siblings,
            crossing,
        });
        ep.watch_in_flight("reference RMA", ep.rma_reference.ops());
        ep.watch_in_flight("put-with-signal", ep.signal.ops());
        ep.watch_in_flight("wait on memory", &ep.memory_waits);
        Ok(ep)
    }

    pub(crate) fn siblings(&self) -> &Arc<Siblings> {
        &self.siblings
    }

    pub(crate) fn crossing(&self) -> &Crossing {
        &self.crossing
    }

    pub(crate) fn watched(&self) -> &Watched {
        &self.watched
    }

    pub(crate) fn rma_reference(&self) -> &Reference {
        &self.rma_reference
    }

    pub(crate) fn client_segments(&self) -> &crate::client_segment::ClientSegments {
        &self.client_segments
    }

    pub(crate) fn signal_protocol(&self) -> &SignalProtocol {
        &self.signal
    }

    pub(crate) fn memory_waits(&self) -> &MemoryWaits {
        &self.memory_waits
    }

    pub(crate) fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// Every peer's RMA route.
    #[inline(always)]
    pub(crate) fn routes(&self) -> &Routes {
        &self.routes
    }

    /// This endpoint as the progress engine events poll.
    pub(crate) fn progress_handle(&self) -> Arc<dyn rgex_core::Progress> {
        self.me
            .upgrade()
            .expect("an endpoint is used through its Arc")
    }

    /// The conduit underneath.
    pub fn conduit(&self) -> &dyn Conduit {
        &*self.conduit
    }

    /// The conduit underneath, shared (to open another endpoint of it).
    pub(crate) fn conduit_handle(&self) -> Arc<dyn Conduit> {
        self.conduit.clone()
    }

    /// The job's neighbourhood table: who is on this node, whose segment
    /// is mapped in this process, what carries AMs to each peer.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) {
    /// use rgex_core::Rank;
    /// if let Some(seg) = ep.locality().mapped_segment(Rank(1)) {
    ///     println!("rank 1's {} bytes are mapped here", seg.len());
    /// }
    /// # }
    /// ```
    #[inline]
    pub fn locality(&self) -> &Locality {
        &self.locality
    }

    /// `peer`'s mapped queue, if the conduit has one for it: shared memory
    /// carries it, and the conduit vouched that such claims are cells.
    #[inline(always)]
    pub(crate) fn mapped_queue(&self, peer: Rank) -> Option<MappedQueue> {
        self.cells.filter(|_| self.locality.via_shm(peer))
    }

    /// This rank.
    #[inline]
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// Ranks in the job.
    #[inline]
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The handler table.
    pub fn handlers(&self) -> &HandlerTable {
        &self.handlers
    }

    /// This rank's segment.
    pub fn segment(&self) -> &Segment {
        self.conduit.segment()
    }

    /// True if waits yield the CPU at once.
    pub fn polite(&self) -> bool {
        self.polite
    }

    /// Largest Medium payload to `peer` with `nargs` arguments (at least
    /// 512, the same on every rank, fixed for the job).
    pub fn max_medium(&self, peer: Rank, nargs: usize) -> usize {
        self.conduit.max_medium(peer, nargs)
    }

    /// Largest Long payload to `peer` with `nargs` arguments: what fits the
    /// peer's segment at offset 0 (a Long at offset `o` gets at most the
    /// segment's length less `o`).
    pub fn max_long(&self, peer: Rank, nargs: usize) -> usize {
        self.conduit.max_long(peer, nargs)
    }

    /// The least upper bound of [`max_medium`](Self::max_medium) over
    /// every peer, this rank included (GASNet-EX's LUB query): a Medium
    /// payload of this size with `nargs` arguments may go to anyone, so
    /// one buffer of it serves every peer. Fixed for the job.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) {
    /// use rgex_core::Rank;
    /// let one_size = ep.lub_max_medium(2);
    /// for p in 0..ep.size() {
    ///     assert!(one_size <= ep.max_medium(Rank(p), 2));
    /// }
    /// # }
    /// ```
    pub fn lub_max_medium(&self, nargs: usize) -> usize {
        self.limits.medium(nargs)
    }

    /// The least upper bound of [`max_long`](Self::max_long) over every
    /// peer, this rank included: a Long payload of this size with `nargs`
    /// arguments fits every peer's segment at offset 0.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) {
    /// let buf = vec![0u8; ep.lub_max_long(0).min(1 << 20)];
    /// # let _ = buf; }
    /// ```
    pub fn lub_max_long(&self, nargs: usize) -> usize {
        self.limits.long(nargs)
    }

    /// AMs that arrived for an unregistered handler and were dropped (each
    /// was also logged as a warning, and reported to the rank waiting for it, see
    /// [`poll`](Endpoint::poll)).
    pub fn dropped_messages(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Protocol messages from peers that this rank ignored as malformed
    /// (see [`malformed`](Endpoint::malformed)).
    pub fn malformed_messages(&self) -> u64 {
        self.malformed.load(Ordering::Relaxed)
    }

    /// Report a protocol message from `from` to handler `index` that this
    /// rank will not act on, saying `why`: counted
    /// ([`malformed_messages`](Endpoint::malformed_messages)), logged as a
    /// `tracing` warning (the first [`MALFORMED_PRINTED`] of the endpoint), and
    /// returned as [`Error::Malformed`] by a later
    /// [`poll`](Endpoint::poll). rgex's protocol handlers call it instead
    /// of acting on what a peer sent wrong; never a panic.
    #[cold]
    #[inline(never)]
    pub fn malformed(&self, from: Rank, index: u8, why: &str) {
        // Relaxed: a statistic and a print limit; nothing is published
        // through it.
        let n = self.malformed.fetch_add(1, Ordering::Relaxed);
        rgex_core::observe::malformed(from);
        let e = Error::Malformed {
            from,
            to: self.rank(),
            handler: self.handlers.name(index),
            index,
            why: why.to_owned(),
        };
        self.print_report(n, &e, "malformed messages", "malformed_messages");
        self.refusals.record(e);
    }

    /// Client handlers on this rank that returned an error (each is also
    /// printed, the first few, and returned by a later
    /// [`poll`](Endpoint::poll); see [`crate::outcome`]).
    pub fn handler_errors(&self) -> u64 {
        self.handler_errors.load(Ordering::Relaxed)
    }

    /// Report that the client handler at `index` failed on a message from
    /// `from`, saying `why` (see [`crate::outcome`]).
    #[cold]
    #[inline(never)]
    pub(crate) fn handler_failed(&self, from: Rank, index: u8, why: String) {
        // Relaxed: a statistic and a print limit; nothing is published
        // through it.
        let n = self.handler_errors.fetch_add(1, Ordering::Relaxed);
        let e = Error::HandlerFailed {
            from,
            to: self.rank(),
            handler: self.handlers.name(index),
            index,
            why,
        };
        self.print_report(n, &e, "handler errors", "handler_errors");
        self.refusals.record(e);
    }

    /// Run handlers for messages that have arrived (and blocks of shared
    /// work, see [`share`](Endpoint::share)). Returns how many of both
    /// ran.
    /// Refused inside a handler (a handler must not poll).
    ///
    /// An error also reports an AM dropped for want of a handler that
    /// this rank waits for ([`Error::Dropped`]: a request of ours the
    /// receiver refused, a reply to us we could not run), once each.
    /// It also reports, once each, a client handler of this rank that
    /// returned an error ([`Error::HandlerFailed`], naming the handler and
    /// the sender) and a malformed protocol message ([`Error::Malformed`]).
    /// The messages polled before the error was returned were handled.
    pub fn poll(&self) -> Result<usize> {
        if in_handler() {
            return Err(Error::InHandler { what: "poll" });
        }
        let n = self.progress(PollSet::All);
        match self.refusals.take() {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }

    pub(crate) fn refusals(&self) -> &Refusals {
        &self.refusals
    }

    /// Poll without the handler check; for rgex's own waits. A full poll
    /// outside handlers also advances background work (non-blocking
    /// collectives), so `poll()` alone drives them.
    #[inline]
    pub(crate) fn progress(&self, set: PollSet) -> usize {
        let mut n = 0;
        // Put-with-signal acknowledgements a wait on memory deferred (one
        // load when there are none): they leave at the start of the next
        // full poll, if no put-with-signal to their peer took them first.
        if self.signal.owes_acks() && set == PollSet::All && !in_handler() {
            n += self.signal.flush_acks(self);
        }
        n += self.conduit.poll(set, &mut |d| self.dispatch(d));
        n += self.note_poll(n, set);
        // A thread polling or waiting helps with shared work (a handler
        // does not: it would delay the messages behind it).
        if self.board.has_work() && !in_handler() {
            n += self.board.help();
        }
        // Futures waiting on memory: a node-local peer's store rings
        // nothing, so each progress looks (one load when there are none).
        if self.memory_waits.has_futures() {
            n += self.memory_waits.recheck();
        }
        if let Some(bg) = self.background.get() {
            // Relaxed: a stale zero only delays the work to the next poll;
            // the hook reads its own state under its locks.
            if bg.pending.load(Ordering::Relaxed) != 0 && set == PollSet::All && !in_handler() {
                n += (bg.hook)();
            }
        }
        n
    }

    /// Run `f(0)`, .., `f(blocks - 1)`, each exactly once, here and on
    /// the threads of this process that poll or wait on this endpoint
    /// meanwhile (a thread blocked in [`Event::wait`](rgex_core::Event::wait),
    /// an NBI sync, a barrier or [`poll`](Endpoint::poll) helps); return
    /// when all have run. One job is shared at a time: a thread that
    /// shares while another does runs its blocks alone. VIS shares large
    /// node-local copies this way. A waiting thread runs at most
    /// [`HELP_BLOCKS`](rgex_core::shared_work::HELP_BLOCKS) blocks per poll, so
    /// it sees its own event at most that many blocks late (keep blocks to
    /// microseconds).
    ///
    /// `f` runs on other threads, inside their polls and waits: it must
    /// not block, nor take a lock a waiting thread may hold, nor rely on
    /// thread-local state (such as being in a handler). It must not panic:
    /// a panicking shared block aborts the process, since other threads
    /// may be running blocks that borrow this frame.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint, src: &[u8], dst: &mut [u8]) {
    /// use std::sync::Mutex;
    /// let blocks: Vec<Mutex<&mut [u8]>> = dst.chunks_mut(1 << 16).map(Mutex::new).collect();
    /// ep.share(blocks.len(), &|i| {
    ///     let mut d = blocks[i].lock().unwrap();
    ///     let n = d.len();
    ///     d.copy_from_slice(&src[i << 16..(i << 16) + n]);
    /// });
    /// # }
    /// ```
    pub fn share<F: Fn(usize) + Sync>(&self, blocks: usize, f: &F) {
        self.board.share(blocks, f)
    }

    /// How many jobs this endpoint has shared with waiting threads so far
    /// (see [`share`](Endpoint::share); large copies count one each).
    pub fn shared_jobs(&self) -> usize {
        self.board.jobs()
    }

    /// Copy `len` bytes from `src` to `dst` (which may overlap), in
    /// blocks the threads waiting on this endpoint help with (see
    /// [`share`](Endpoint::share)) when it is at least
    /// [`SHARE_MIN`](rgex_core::shared_work::SHARE_MIN) bytes and the two do
    /// not overlap; a plain `memmove` otherwise.
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `len` bytes, for the call.
    pub unsafe fn share_copy(&self, src: *const u8, dst: *mut u8, len: usize) {
        let (s, d) = (src as usize, dst as usize);
        // SAFETY: the caller's contract; the ranges were just checked
        // disjoint for the shared copy.
        unsafe {
            if s.abs_diff(d) >= len {
                self.board.copy(src, dst, len)
            } else {
                std::ptr::copy(src, dst, len)
            }
        }
    }

    /// Install the background work every full poll runs while `pending`
    /// (kept by the work's owner) is not zero. Once per endpoint.
    pub(crate) fn set_background(
        &self,
        hook: Box<BackgroundFn>,
        pending: Arc<AtomicUsize>,
    ) -> Result<()> {
        self.background
            .set(Background { hook, pending })
            .map_err(|_| Error::Config("an endpoint takes one background progress hook".into()))
    }

    #[inline]
    pub(crate) fn dispatch(&self, d: &Delivery<'_>) {
        let Some(entry) = self.handlers.get(d.handler) else {
            return self.drop_unhandled(d, None);
        };
        let token = Token::new(self, d.src, d.handler, d.dir);
        let _scope = HandlerScope::enter();
        entry.call(&token, &Message { d });
    }

    /// Count and report a message for an unregistered handler, to the
    /// rank that waits for it: the sender of a request (a refusal reply,
    /// which its next poll returns as an error), this rank for a reply.
    /// `from`: the sender's endpoint, for an AM from another index (see
    /// [`crossing`](crate::crossing)); the refusal goes back to it.
    #[cold]
    #[inline(never)]
    pub(crate) fn drop_unhandled(&self, d: &Delivery<'_>, from: Option<u32>) {
        let n = self.dropped.fetch_add(1, Ordering::Relaxed);
        let e = refusal::dropped(Some(d.category), d.dir, d.src, self.rank(), d.handler);
        self.print_report(n, &e, "dropped messages", "dropped_messages");
        match d.dir {
            Direction::Request => {
                let _scope = HandlerScope::enter();
                let args = [u32::from(d.handler), refusal::category_code(d.category)];
                // rgex's own answer, for a client index that names no
                // handler: sent past the token's check that only a
                // protocol's request may answer with a protocol message.
                let sent = match from {
                    None => Token::new(self, d.src, d.handler, d.dir).reply_with(
                        Category::Short,
                        0,
                        |ep: &Endpoint, spec| {
                            ep.send_fixed(spec, self.refused, &args, &[], Flags::empty())
                        },
                    ),
                    Some(from) => self.send_crossing(
                        EndpointAddr::new(d.src, from),
                        Direction::Reply,
                        Category::Short,
                        crate::reserved::REFUSED,
                        &args,
                        &[],
                        0,
                        Flags::empty(),
                    ),
                };
                if let Err(why) = sent {
                    tracing::warn!(
                        rank = self.rank().0,
                        peer = d.src.0,
                        "could not tell {} of it: {why}",
                        d.src
                    );
                }
            }
            Direction::Reply => self.refusals.record(e),
        }
    }

    /// Log report number `n` (from 0) of a kind as a warning: the first
    /// [`MALFORMED_PRINTED`] of each kind, then one event saying the rest
    /// are only counted (a flood of bad messages must not become a flood
    /// of lines).
    fn print_report(&self, n: u64, e: &Error, kind: &str, counter: &str) {
        if n < MALFORMED_PRINTED {
            tracing::warn!(rank = self.rank().0, "{e}");
        }
        if n + 1 == MALFORMED_PRINTED {
            tracing::warn!(
                rank = self.rank().0,
                "further {kind} are counted, not printed (Endpoint::{counter})"
            );
        }
    }

    /// Refuse an AM request made inside a handler, or through an
    /// endpoint whose client was finalized or dropped.
    #[inline(always)]
    pub(crate) fn check_not_in_handler(&self) -> Result<()> {
        if in_handler() {
            Err(Error::InHandler {
                what: "an AM request",
            })
        } else {
            self.check_open("an AM request")
        }
    }

    /// `Ok` while this endpoint's client is live; once it was finalized
    /// ([`Client::finalize`](crate::Client::finalize)) or dropped,
    /// [`Error::Finalized`] naming `what` and this rank. Every AM request,
    /// RMA operation and collective starts with it (one relaxed load), and
    /// so do atomics and VIS transfers; a layer on the endpoint (a client
    /// library) may call it at its own entry points.
    ///
    /// ```no_run
    /// # fn demo(client: rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let ep = client.endpoint().clone();
    /// ep.check_open("my operation")?; // Ok: the client is live
    /// client.finalize()?;
    /// assert!(matches!(ep.check_open("my operation"), Err(rgex_core::Error::Finalized { .. })));
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn check_open(&self, what: &'static str) -> Result<()> {
        // Relaxed: the flag is a verdict on its own and guards no memory
        // (the conduit stays up as long as this endpoint). An operation
        // racing with the finalize on another thread may see it unset
        // and go ahead, as if it had started just before; one started
        // after its thread learned of the finalize (a join, a channel,
        // any acquire that follows the finalizing store) sees it set.
        if self.finalized.load(Ordering::Relaxed) {
            return Err(self.finalized_error(what));
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn finalized_error(&self, what: &'static str) -> Error {
        // Relaxed: set before the finalized flag by the same thread; a
        // reader that saw that flag late reads this late as well, and
        // either error is true of an endpoint that refuses work.
        if self.destroyed.load(Ordering::Relaxed) {
            return Error::EndpointDestroyed {
                what,
                rank: self.rank,
                index: self.index,
            };
        }
        Error::Finalized {
            rank: self.rank,
            what,
        }
    }

    /// This endpoint's index on its rank: 0 for the primordial endpoint,
    /// then in the order [`Client::create_endpoint`](crate::Client::create_endpoint)
    /// made them, the same on every rank. An AM from endpoint `i` reaches
    /// endpoint `i` of its destination.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) {
    /// assert_eq!(client.endpoint().index(), 0);
    /// # }
    /// ```
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Refuse everything from now on, saying the endpoint was destroyed.
    pub(crate) fn mark_destroyed(&self) {
        // Relaxed: see `finalized_error`.
        self.destroyed.store(true, Ordering::Relaxed);
        self.mark_finalized();
    }

    /// True once this endpoint's client was finalized or dropped (see
    /// [`check_open`](Self::check_open)).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) {
    /// assert!(!client.endpoint().is_finalized());
    /// # }
    /// ```
    pub fn is_finalized(&self) -> bool {
        // Relaxed: as in `check_open`.
        self.finalized.load(Ordering::Relaxed)
    }

    /// Refuse sends, RMA and what is built on them from now on (the
    /// client is finalized or dropped).
    pub(crate) fn mark_finalized(&self) {
        // Relaxed: as in `check_open`; the RMA routes close with it.
        self.finalized.store(true, Ordering::Relaxed);
        self.routes.close();
    }

    /// Send a Short request (arguments only).
    #[inline]
    pub fn request_short(
        &self,
        peer: Rank,
        h: impl Target,
        args: &[u32],
        flags: Flags,
    ) -> Result<()> {
        self.check_not_in_handler()?;
        self.send_fixed(
            spec(peer, Direction::Request, Category::Short, 0),
            h,
            args,
            &[],
            flags,
        )
    }

    /// Send a Medium request: `payload` is copied into a buffer rgex owns
    /// and handed to the handler at `peer`.
    #[inline]
    pub fn request_medium(
        &self,
        peer: Rank,
        h: impl Target,
        args: &[u32],
        payload: &[u8],
        flags: Flags,
    ) -> Result<()> {
        self.check_not_in_handler()?;
        self.send_fixed(
            spec(peer, Direction::Request, Category::Medium, 0),
            h,
            args,
            payload,
            flags,
        )
    }

    /// Send a Long request: `payload` lands at `dest_offset` in `peer`'s
    /// segment before its handler runs.
    pub fn request_long(
        &self,
        peer: Rank,
        h: impl Target,
        args: &[u32],
        payload: &[u8],
        dest_offset: u64,
        flags: Flags,
    ) -> Result<()> {
        self.check_not_in_handler()?;
        self.send_fixed(
            spec(peer, Direction::Request, Category::Long, dest_offset),
            h,
            args,
            payload,
            flags,
        )
    }

    /// Negotiated-payload Medium request: reserve a buffer of between
    /// `least` and `most` bytes for a message with `nargs` arguments.
    ///
    /// With `client_buf` `None`, the buffer is rgex's own send buffer (on
    /// smp, the receiver's message buffer itself): assemble the payload in
    /// [`Prepared::buf`] and it is never copied again. With a client buffer,
    /// the payload is taken from it at commit.
    // Always inlined (as are the steps of the negotiated path under it):
    // a `Prepared` returned through memory is copied with wider loads than
    // the stores that wrote it, just after the claim missed in the cache,
    // and that copy then waits for the miss (see `rgex_core::Claim`).
    #[inline(always)]
    pub fn prepare_request_medium<'a>(
        &'a self,
        peer: Rank,
        client_buf: Option<&'a mut [u8]>,
        least: usize,
        most: usize,
        nargs: usize,
        flags: Flags,
    ) -> Result<Prepared<'a>> {
        self.check_not_in_handler()?;
        let mut s = spec(peer, Direction::Request, Category::Medium, 0);
        (s.least, s.most, s.nargs) = (least, most, nargs);
        Prepared::new(self, s, client_buf, flags, None)
    }

    /// Negotiated-payload Long request: as
    /// [`prepare_request_medium`](Self::prepare_request_medium), with the
    /// payload landing at `dest_offset` in `peer`'s segment.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn prepare_request_long<'a>(
        &'a self,
        peer: Rank,
        client_buf: Option<&'a mut [u8]>,
        least: usize,
        most: usize,
        nargs: usize,
        dest_offset: u64,
        flags: Flags,
    ) -> Result<Prepared<'a>> {
        self.check_not_in_handler()?;
        let mut s = spec(peer, Direction::Request, Category::Long, dest_offset);
        (s.least, s.most, s.nargs) = (least, most, nargs);
        Prepared::new(self, s, client_buf, flags, None)
    }
}

impl rgex_core::Progress for Endpoint {
    fn progress(&self) -> usize {
        // Waits inside a handler may only drain replies (see inject.rs).
        let set = if in_handler() {
            PollSet::RepliesOnly
        } else {
            PollSet::All
        };
        Endpoint::progress(self, set)
    }

    fn polite(&self) -> bool {
        self.polite
    }
}
