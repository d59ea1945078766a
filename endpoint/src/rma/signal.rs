//! Put-with-signal (OpenSHMEM 1.5's `shmem_put_signal`): put the data,
//! then update a 64-bit signal word in the target's segment by set or add
//! ([`Signal`]), the signal never visible before the data. A target waits
//! for the word with [`Endpoint::wait_until`].
//!
//! Three paths, chosen per peer ([`SignalPath`], decided once when the
//! endpoint is made, as RMA's routes are):
//!
//! - **mapped** (a node-local peer, its segment mapped here): the copy,
//!   then the signal's Release read-modify-write on the word through the
//!   mapping, then [`Conduit::wake_peer`](rgex_core::Conduit::wake_peer)
//!   so that a peer asleep in a wait wakes at once;
//! - **native**: the conduit's own
//!   ([`Conduit::try_put_signal`](rgex_core::Conduit::try_put_signal),
//!   where [`put_signal_native`](rgex_core::Conduit::put_signal_native)
//!   holds);
//! - **reference**: one request carries the data and the signal, a
//!   Medium when the data fits one (the handler copies it into the
//!   segment: one message, where a network's Long is a write and then a
//!   header), else a Long (the data lands before the handler runs); the
//!   target's handler then updates the word with Release, wakes this
//!   rank's sleeping waits and acknowledges (remote completion). Every
//!   network conduit of rgex takes it for now.
//!
//! **The reference's acknowledgement.** A handler that runs outside a
//! blocking wait on memory replies at once (a Short reply). One that runs
//! inside a blocking [`wait_until`](Endpoint::wait_until) of this rank
//! (the target is waiting for a signal, likely this one, and is about to
//! answer it) defers it: the acknowledgement rides on this rank's next
//! put-with-signal to the requester (three more arguments of its
//! request), or, if none goes first, leaves in a Short request
//! (`reserved::PUT_SIGNAL_ACKS`, up to [`ACKS_PER_REQUEST`] of them) at
//! the start of this rank's next full poll (any thread's). A signal
//! ping-pong then sends one message each way instead of two: on a
//! network every message costs its system calls at both ends, and the
//! acknowledgements were half the messages. What it costs: a target that
//! stops polling right after its wait returns (and sends nothing to the
//! requester) delays the requester's completion until it polls again,
//! as any AM-based operation needs an attentive target (a progress
//! thread polls for it, but one already asleep when the wait returned
//! sends it only when it wakes: at most its sleep bound). The signal
//! itself is applied before the wait returns, whatever happens to the
//! acknowledgement.
//!
//! The data range and the signal word (8 bytes, 8-byte aligned) are both
//! checked against the target's segment before anything moves; the error
//! names the rank, the offset and the segment's length (or the alignment).

use super::{fresh, nbi, NbiCategory};
use crate::{reserved, Accepts, Endpoint, HandlerTable, InFlight, ProtocolId};
use parking_lot::Mutex;
use rgex_core::{
    atomic::AtomicType, Category, Conduit, Error, Event, Flags, GlobalAddr, OpCounter, Rank,
    Result, Signal, SignalOp,
};
use std::cell::Cell;
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// How a put-with-signal to a peer is carried out
/// ([`Endpoint::put_signal_path`]).
///
/// ```no_run
/// # fn demo(ep: &rgex_endpoint::Endpoint) {
/// use rgex_endpoint::rma::SignalPath;
/// for p in 0..ep.size() {
///     let path: SignalPath = ep.put_signal_path(rgex_core::Rank(p));
///     println!("rank {p}: {path:?}");
/// }
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalPath {
    /// A copy and a release update through the peer's mapped segment.
    Mapped,
    /// The conduit's own ([`Conduit::try_put_signal`](rgex_core::Conduit::try_put_signal)).
    Native,
    /// One active message carrying both (the reference implementation).
    Reference,
}

/// Arguments of the reference's request: the operation's id (2), the
/// word's offset (2), the value (2), the op, the data's offset (2), and
/// a piggybacked acknowledgement of the receiver's own put-with-signal
/// (its id (2) and status, [`NO_ACK`] for none).
const ARGS: usize = 12;

/// The piggybacked acknowledgement's status when the request carries
/// none.
const NO_ACK: u32 = u32::MAX;

/// Most deferred acknowledgements in one `PUT_SIGNAL_ACKS` request
/// (three arguments each: id and status).
pub const ACKS_PER_REQUEST: usize = 5;

/// Status argument of the reference's acknowledgement.
const SIGNAL_OK: u32 = 0;
/// The target refused the signal word (outside its segment, misaligned,
/// or an op it does not know): the ranks disagree on the segment.
const SIGNAL_REFUSED: u32 = 1;

thread_local! {
    /// True while this thread polls inside a blocking wait on memory
    /// (`Endpoint::wait_memory`): a reference handler run then defers
    /// its acknowledgement.
    static IN_MEMORY_WAIT: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as polling inside a blocking wait on memory until
/// dropped (see the module docs: acknowledgements deferred).
pub(crate) struct MemoryWaitScope(bool);

impl MemoryWaitScope {
    #[inline]
    pub(crate) fn enter() -> Self {
        MemoryWaitScope(IN_MEMORY_WAIT.with(|w| w.replace(true)))
    }
}

impl Drop for MemoryWaitScope {
    #[inline]
    fn drop(&mut self) {
        IN_MEMORY_WAIT.with(|w| w.set(self.0));
    }
}

/// Acknowledgements this rank owes (see the module docs): the
/// requester, and the id and status to send it.
#[derive(Default)]
struct Owed {
    acks: Mutex<Vec<(Rank, [u32; 3])>>,
    /// How many `acks` holds: a hint read without the lock by every
    /// full poll (one load when none are owed).
    count: AtomicUsize,
}

impl Owed {
    fn push(&self, peer: Rank, ack: [u32; 3]) {
        let mut a = self.acks.lock();
        a.push((peer, ack));
        // Relaxed: a hint; the entries are read under the lock. A stale
        // zero delays the flush to a later poll (a poll follows a wait
        // that is not over, and a put-with-signal to the peer looks
        // under the lock whenever the hint is not zero).
        self.count.store(a.len(), Ordering::Relaxed);
    }

    #[inline]
    fn any(&self) -> bool {
        // Relaxed: as in `push`.
        self.count.load(Ordering::Relaxed) != 0
    }

    /// The oldest acknowledgement owed to `peer`, removed.
    fn take_for(&self, peer: Rank) -> Option<[u32; 3]> {
        if !self.any() {
            return None;
        }
        let mut a = self.acks.lock();
        let i = a.iter().position(|(p, _)| *p == peer)?;
        let (_, ack) = a.remove(i);
        // Relaxed: as in `push`.
        self.count.store(a.len(), Ordering::Relaxed);
        Some(ack)
    }

    /// Every acknowledgement owed, removed.
    fn take_all(&self) -> Vec<(Rank, [u32; 3])> {
        let mut a = self.acks.lock();
        // Relaxed: as in `push`.
        self.count.store(0, Ordering::Relaxed);
        std::mem::take(&mut *a)
    }
}

/// The put-with-signal operations in flight as the stalled-wait sweep
/// sees them: their acknowledgements may come as requests (deferred), so
/// a replies-only poll does not drain them.
pub(crate) struct SignalOps(Arc<InFlight<()>>);

impl crate::Abandon for SignalOps {
    fn peers(&self, out: &mut Vec<Rank>) {
        crate::Abandon::peers(&*self.0, out)
    }

    fn fail_peer(&self, peer: Rank, why: &str) -> usize {
        crate::Abandon::fail_peer(&*self.0, peer, why)
    }

    fn answered_by_replies(&self) -> bool {
        false
    }

    fn in_flight(&self) -> usize {
        crate::Abandon::in_flight(&*self.0)
    }
}

/// Finish the put-with-signal `id` that `tok`'s sender acknowledged with
/// `status` (a reply, a piggybacked or a deferred acknowledgement).
fn acknowledged(ops: &InFlight<()>, tok: &crate::Token<'_>, id: [u32; 2], status: u32) {
    let Some((done, ())) = ops.finish(&id, tok.src()) else {
        tok.malformed(&format!(
            "its acknowledgement {:#x}:{:#x} names no put-with-signal in flight to {}",
            id[0],
            id[1],
            tok.src()
        ));
        return;
    };
    match status {
        SIGNAL_OK => done.done(),
        status => done.fail(format!(
            "put-with-signal from {} to {}: the target refused the signal word \
             (status {status}: outside its segment or misaligned there, though \
             checked here first, so the two ranks disagree on its segment)",
            tok.endpoint().rank(),
            tok.src()
        )),
    }
}

/// The reference protocol's handler ids, its operations in flight, the
/// acknowledgements this rank owes, and which peers the conduit carries
/// natively.
pub(crate) struct SignalProtocol {
    ops: Arc<InFlight<()>>,
    watch: Arc<SignalOps>,
    put: ProtocolId,
    acks: ProtocolId,
    owed: Arc<Owed>,
    native: Box<[bool]>,
}

impl SignalProtocol {
    /// Register the request and acknowledgement handlers, and ask the
    /// conduit once per peer whether it carries put-with-signal itself.
    pub(crate) fn install(table: &HandlerTable, conduit: &dyn Conduit) -> Result<Arc<Self>> {
        let ops: Arc<InFlight<()>> = Arc::default();
        let owed: Arc<Owed> = Arc::default();
        let s = ops.clone();
        let ack = table.register_protocol(
            reserved::PUT_SIGNAL_ACK,
            "rgex.rma.put_signal.ack",
            Accepts::reply(Category::Short, 3),
            move |tok, msg| acknowledged(&s, tok, [msg.arg(0), msg.arg(1)], msg.arg(2)),
        )?;
        let s = ops.clone();
        let acks = table.register_protocol(
            reserved::PUT_SIGNAL_ACKS,
            "rgex.rma.put_signal.acks",
            Accepts::request(Category::Short, 3).args(3, 3 * ACKS_PER_REQUEST as u8),
            move |tok, msg| {
                let a = msg.args();
                if a.len() % 3 != 0 {
                    tok.malformed(&format!(
                        "{} arguments, not a multiple of 3 (id and status per \
                         acknowledgement)",
                        a.len()
                    ));
                    return;
                }
                for x in a.chunks_exact(3) {
                    acknowledged(&s, tok, [x[0], x[1]], x[2]);
                }
            },
        )?;
        let (s, o) = (ops.clone(), owed.clone());
        let put = table.register_protocol(
            reserved::PUT_SIGNAL,
            "rgex.rma.put_signal",
            Accepts::request(Category::Long, ARGS as u8).or(Category::Medium),
            move |tok, msg| {
                let a = msg.args();
                // First the acknowledgement of this rank's own
                // put-with-signal to the sender that rides on it.
                if a[11] != NO_ACK {
                    acknowledged(&s, tok, [a[9], a[10]], a[11]);
                }
                let offset = u64::from(a[2]) | u64::from(a[3]) << 32;
                let value = u64::from(a[4]) | u64::from(a[5]) << 32;
                let data_at = u64::from(a[7]) | u64::from(a[8]) << 32;
                let ep = tok.endpoint();
                let word = ep
                    .segment()
                    .ptr_at(offset, 8)
                    .ok()
                    .filter(|_| offset.is_multiple_of(8));
                // A Medium's data is copied here, after the checks (a
                // Long's has landed already: no address to copy to).
                let data = match msg.category() {
                    Category::Medium => ep
                        .segment()
                        .ptr_at(data_at, msg.payload().len())
                        .ok()
                        .map(Some),
                    _ => Some(None),
                };
                let status = match (SignalOp::from_code(a[6]), word, data) {
                    (Some(op), Some(p), Some(to)) => {
                        if let Some(to) = to {
                            let bytes = msg.payload();
                            // SAFETY: `to..to+len` is inside this rank's
                            // segment (checked); the message buffer is
                            // rgex's own, distinct from it.
                            unsafe {
                                std::ptr::copy_nonoverlapping(bytes.as_ptr(), to, bytes.len())
                            };
                        }
                        // SAFETY: 8 bytes inside this rank's segment
                        // (checked), 8-aligned (the segment is page
                        // aligned, the offset checked), live while the
                        // endpoint is; every writer of a signal word
                        // updates it atomically.
                        let w = unsafe { AtomicU64::from_ptr(p.cast::<u64>()) };
                        // The data is in place (copied just above by this
                        // thread, or a Long's, landed before its handler
                        // ran, as this thread saw): the Release update
                        // orders it before the signal for a waiter's
                        // Acquire load.
                        Signal { offset, op, value }.apply_to(w);
                        ep.memory_changed();
                        SIGNAL_OK
                    }
                    (op, _, data) => {
                        tok.malformed(&format!(
                            "a put-with-signal naming op {}, the word at {offset:#x} and {} \
                             bytes of data at {data_at:#x} of a segment of {:#x} bytes{}{}",
                            a[6],
                            msg.payload().len(),
                            ep.segment().len(),
                            if op.is_none() { " (no such op)" } else { "" },
                            if data.is_none() {
                                " (the data does not fit)"
                            } else {
                                ""
                            }
                        ));
                        SIGNAL_REFUSED
                    }
                };
                if IN_MEMORY_WAIT.with(Cell::get) {
                    // This rank waits on memory (for this signal, likely)
                    // and may answer: the acknowledgement can ride on
                    // that (see the module docs).
                    o.push(tok.src(), [a[0], a[1], status]);
                } else if let Err(e) = tok.reply_short(ack, &[a[0], a[1], status], Flags::empty()) {
                    tracing::error!(
                        rank = ep.rank().0,
                        peer = tok.src().0,
                        "put-with-signal from {} could not be acknowledged: {e}",
                        tok.src()
                    );
                }
            },
        )?;
        let native = (0..conduit.size())
            .map(|p| conduit.put_signal_native(Rank(p)))
            .collect();
        let watch = Arc::new(SignalOps(ops.clone()));
        Ok(Arc::new(SignalProtocol {
            ops,
            watch,
            put,
            acks,
            owed,
            native,
        }))
    }

    /// The operations in flight (for [`Endpoint::watch_in_flight`]).
    pub(crate) fn ops(&self) -> &Arc<SignalOps> {
        &self.watch
    }

    /// True if this rank owes deferred acknowledgements (one load).
    #[inline(always)]
    pub(crate) fn owes_acks(&self) -> bool {
        self.owed.any()
    }

    /// Send the deferred acknowledgements (a full poll's first step, not
    /// in a handler): Short requests of up to [`ACKS_PER_REQUEST`] each,
    /// never waiting; those that find no credit stay owed for the next
    /// poll. How many requests went.
    #[cold]
    pub(crate) fn flush_acks(&self, ep: &Endpoint) -> usize {
        let mut all = self.owed.take_all();
        if all.is_empty() {
            return 0;
        }
        // Stable: one peer's acknowledgements keep their order.
        all.sort_by_key(|(p, _)| p.0);
        let mut sent = 0;
        let mut rest = &all[..];
        while let Some(&(peer, _)) = rest.first() {
            let n = rest
                .iter()
                .take(ACKS_PER_REQUEST)
                .take_while(|(p, _)| *p == peer)
                .count();
            let args: Vec<u32> = rest[..n].iter().flat_map(|(_, a)| *a).collect();
            match ep.request_short(peer, self.acks, &args, Flags::IMMEDIATE) {
                Ok(()) => sent += 1,
                Err(e) if e.is_would_block() => {
                    // No credit now: these and the rest wait for a later poll.
                    for &(p, a) in rest {
                        self.owed.push(p, a);
                    }
                    return sent;
                }
                Err(e) => tracing::error!(
                    rank = ep.rank().0,
                    peer = peer.0,
                    "{n} put-with-signal acknowledgements to {peer} could not be sent: {e}"
                ),
            }
            rest = &rest[n..];
        }
        sent
    }
}

/// The signal word's check: 8 bytes inside `rank`'s segment (`check`,
/// the route's range check) and 8-byte aligned.
fn check_word(rank: Rank, offset: u64, check: impl FnOnce() -> Result<()>) -> Result<()> {
    check()?;
    if !offset.is_multiple_of(8) {
        return Err(Error::Misaligned {
            ty: AtomicType::U64,
            rank,
            offset,
            align: 8,
        });
    }
    Ok(())
}

impl Endpoint {
    /// Tell the observer of a put-with-signal of `len` bytes to `dst`,
    /// carried by the path [`put_signal_path`](Self::put_signal_path)
    /// says. The mapped path finishes during injection and is traced
    /// complete at once; the others' completion is their handle's.
    #[cold]
    #[inline(never)]
    fn observe_put_signal(&self, dst: GlobalAddr, len: usize) {
        let route = match self.put_signal_path(dst.rank) {
            SignalPath::Mapped => rgex_core::observe::RmaRoute::Mapped,
            SignalPath::Native => rgex_core::observe::RmaRoute::Native,
            SignalPath::Reference => rgex_core::observe::RmaRoute::Reference,
        };
        let n = rgex_core::observe::put_signal(route, dst.rank, len);
        if route == rgex_core::observe::RmaRoute::Mapped {
            rgex_core::observe::rma_completed(n);
        }
    }

    /// How a put-with-signal to `peer` is carried out (see
    /// [`put_signal`](Self::put_signal)); a rank out of range has no path
    /// but the reference's, which refuses it.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) {
    /// use rgex_endpoint::rma::SignalPath;
    /// if ep.put_signal_path(rgex_core::Rank(1)) == SignalPath::Mapped {
    ///     println!("rank 1 is node-local: a copy and a release store");
    /// }
    /// # }
    /// ```
    pub fn put_signal_path(&self, peer: Rank) -> SignalPath {
        match self.routes().of(peer) {
            Ok(r) if self.routes().decided(peer, r).mapped_at(0).is_some() => SignalPath::Mapped,
            Ok(_) if self.signal_protocol().native[peer.index()] => SignalPath::Native,
            _ => SignalPath::Reference,
        }
    }

    /// Put `src` at `dst`, then update the signal word `signal.offset` of
    /// `dst.rank`'s segment as `signal` says (set or add); returns once
    /// both are there (remote completion). The word is never visible at
    /// the target before the data: a target whose
    /// [`wait_until`](Self::wait_until) (an Acquire load) sees the update
    /// sees the data. The data range and the word (8 bytes, a multiple of
    /// 8) are checked against the target's segment first; an error names
    /// the rank, the offset and the limit, and nothing moves.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_core::{Flags, GlobalAddr, Rank, Signal};
    /// use rgex_endpoint::Cmp;
    /// // Rank 0 sends 64 bytes to rank 1 and adds 1 to rank 1's word at 0...
    /// if ep.rank() == Rank(0) {
    ///     ep.put_signal(GlobalAddr::new(Rank(1), 4096), &[7u8; 64], Signal::add(0, 1), Flags::empty())?;
    /// } else {
    ///     // ...which waits for the word, then reads the data.
    ///     ep.wait_until::<u64>(0, Cmp::Ge, 1)?;
    ///     assert_eq!(ep.segment().read_u64(4096)?, u64::from_ne_bytes([7; 8]));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn put_signal(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        signal: Signal,
        flags: Flags,
    ) -> Result<()> {
        // SAFETY: `src` is borrowed for the call; LC is reached before return.
        let done =
            unsafe { self.start_put_signal(dst, src.as_ptr(), src.len(), signal, fresh, flags)? };
        self.event(done).wait()
    }

    /// Non-blocking put-with-signal: `src` may be reused on return; the
    /// event (a `Future` too) fires once the data and the signal are at
    /// the target. As [`put_signal`](Self::put_signal) for the order and
    /// the checks.
    ///
    /// ```no_run
    /// # async fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_core::{Flags, GlobalAddr, Rank, Signal};
    /// let ev = ep.put_signal_nb(GlobalAddr::new(Rank(1), 64), b"ping", Signal::set(0, 1), Flags::empty())?;
    /// ev.await?; // or ev.wait()?
    /// # Ok(()) }
    /// ```
    pub fn put_signal_nb(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        signal: Signal,
        flags: Flags,
    ) -> Result<Event> {
        // SAFETY: as in `put_signal`.
        let done =
            unsafe { self.start_put_signal(dst, src.as_ptr(), src.len(), signal, fresh, flags)? };
        Ok(self.event(done))
    }

    /// Implicit-handle put-with-signal: `src` may be reused on return;
    /// remote completion joins this thread's put category (or its open
    /// access region), synced by [`nbi_wait`](Self::nbi_wait). As
    /// [`put_signal`](Self::put_signal) for the order and the checks.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_core::{Flags, GlobalAddr, Rank, Signal};
    /// use rgex_endpoint::rma::NbiCategory;
    /// for i in 0..4u64 {
    ///     ep.put_signal_nbi(GlobalAddr::new(Rank(1), 64 + 8 * i), &i.to_ne_bytes(), Signal::add(0, 1), Flags::empty())?;
    /// }
    /// ep.nbi_wait(NbiCategory::Put)?; // all four data and signals are there
    /// # Ok(()) }
    /// ```
    pub fn put_signal_nbi(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        signal: Signal,
        flags: Flags,
    ) -> Result<()> {
        // SAFETY: as in `put_signal`.
        unsafe {
            self.start_put_signal(
                dst,
                src.as_ptr(),
                src.len(),
                signal,
                || nbi::counter(self.index(), NbiCategory::Put),
                flags,
            )
        }
        .map(drop)
    }

    /// Start a put-with-signal; the counter `counter()` gives counts it
    /// where it cannot finish during injection (returned), none on the
    /// mapped path. Local completion is reached before return on every
    /// path.
    ///
    /// # Safety
    /// `src..src+len` readable for the call.
    unsafe fn start_put_signal(
        &self,
        dst: GlobalAddr,
        src: *const u8,
        len: usize,
        signal: Signal,
        counter: impl FnOnce() -> Arc<OpCounter>,
        flags: Flags,
    ) -> Result<Option<Arc<OpCounter>>> {
        let route = self.route(dst.rank, "a put-with-signal")?;
        // Its own marker-free dispatch: the route as decided.
        let route = self.routes().decided(dst.rank, route);
        route.check(dst.rank, dst.offset, len)?;
        check_word(dst.rank, signal.offset, || {
            route.check(dst.rank, signal.offset, 8)
        })?;
        if self.routes().observed() {
            self.observe_put_signal(dst, len);
        }
        if let (Some(to), Some(word)) =
            (route.mapped_at(dst.offset), route.mapped_at(signal.offset))
        {
            // Ordering: as the blocking put's (what this thread wrote
            // before is visible to a peer that acquires the data itself).
            fence(Ordering::Release);
            if len > 0 {
                // SAFETY: inside the peer's mapped segment (checked), the
                // caller guarantees the source. A large copy is shared with
                // the threads waiting here, and returns once every block is
                // done and seen done (Acquire), so its stores happen before
                // the release update below as this thread's own do.
                unsafe { self.mapped_copy(src, to, len) };
            }
            // SAFETY: 8 bytes inside the peer's mapped segment (checked),
            // 8-aligned (the offset checked, the mapping page aligned), and
            // every writer of a signal word updates it atomically.
            let w = unsafe { AtomicU64::from_ptr(word.cast::<u64>()) };
            // Release (in `apply_to`): the copy's stores are sequenced
            // before it, so a peer whose Acquire load reads this update,
            // or a later one of the word (all read-modify-writes: one
            // release sequence), sees the data.
            signal.apply_to(w);
            if dst.rank == self.rank() {
                self.memory_changed();
            } else {
                self.conduit().wake_peer(dst.rank);
            }
            return Ok(None);
        }
        if self.signal_protocol().native[dst.rank.index()] {
            let rc = counter();
            let lc = fresh();
            self.inject_or_wait(flags, || {
                // SAFETY: forwarded caller contract; LC is waited for below.
                unsafe {
                    self.conduit()
                        .try_put_signal(dst.rank, dst.offset, src, len, &signal, &lc, &rc)
                }
            })?;
            self.event(Some(lc)).wait()?;
            return Ok(Some(rc));
        }
        // SAFETY: the caller guarantees the source for the call; the
        // request copies it before returning.
        let bytes = unsafe { std::slice::from_raw_parts(src, len) };
        let p = self.signal_protocol();
        let done = counter();
        let id = p.ops.start(dst.rank, &done, ());
        let (s, v, d) = (signal.offset, signal.value, dst.offset);
        // An acknowledgement this rank owes the target rides along.
        let owed = p.owed.take_for(dst.rank);
        let ack = owed.unwrap_or([0, 0, NO_ACK]);
        let args: [u32; ARGS] = [
            id[0],
            id[1],
            s as u32,
            (s >> 32) as u32,
            v as u32,
            (v >> 32) as u32,
            signal.op.code(),
            d as u32,
            (d >> 32) as u32,
            ack[0],
            ack[1],
            ack[2],
        ];
        let sent = if len <= self.max_medium(dst.rank, ARGS) {
            self.request_medium(dst.rank, p.put, &args, bytes, flags)
        } else {
            self.request_long(dst.rank, p.put, &args, bytes, dst.offset, flags)
        };
        if let Err(e) = sent {
            p.ops.abandon(&id);
            if let Some(ack) = owed {
                p.owed.push(dst.rank, ack);
            }
            return Err(e);
        }
        Ok(Some(done))
    }
}
