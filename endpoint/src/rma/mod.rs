//! One-sided RMA: put and get, blocking, non-blocking with events, and
//! implicit-handle (NBI), with local completion exposed for puts.
//!
//! Three paths, chosen once per peer when the endpoint is made (the
//! `route` module; not per byte, nor per operation):
//!
//! - **native**: the conduit moves the bytes itself (RDMA on ofi, coherent
//!   copies on scc) through [`Conduit::try_put`](rgex_core::Conduit::try_put)
//!   and `try_get`; local completion may come later than return;
//! - **mapped**: the peer's segment is mapped in this process (smp, or any
//!   node-local peer of any conduit): a put or get is one `memcpy`, complete
//!   when it returns;
//! - **reference**: active messages (the `reference` module), correct on every
//!   conduit; forced everywhere with `RGEX_RMA=reference` so tests keep it
//!   correct on smp too.
//!
//! Every remote range is checked against the peer's segment first; a bad
//! one is an error naming the rank, offset and segment size, and nothing moves.
//!
//! A blocking put or get to a mapped peer is that check, the copy and a
//! fence (release before a put's stores, acquire after a get's loads: see
//! [`Endpoint::put`]); no completion counter or event is made for it.

mod buf_error;
mod completion;
pub(crate) mod reference;
mod route;
mod signal;

pub use buf_error::BufError;
pub use completion::{GetPending, Held, LocalCompletion, PutDeferred};
pub use rgex_core::nbi::{self, NbiCategory};
pub use rgex_core::{Signal, SignalOp};

use crate::client_segment::Local;
use crate::Endpoint;
use rgex_core::blocked::Waiting;
use rgex_core::observe::{Completion, RmaOp, RmaRoute};
use rgex_core::shared_work::SHARE_MIN;
use rgex_core::{Error, Event, Flags, GlobalAddr, OpCounter, Rank, Result};
use route::Route;
pub(crate) use route::Routes;
pub use signal::SignalPath;
pub(crate) use signal::{MemoryWaitScope, SignalProtocol};
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

/// A fresh counter for one non-blocking operation.
fn fresh() -> Arc<OpCounter> {
    OpCounter::new(0)
}

thread_local! {
    /// The counter of this thread's last put that waited for its local
    /// completion before returning (`LcCount::Now`), kept for the next.
    static LC_NOW: std::cell::Cell<Option<Arc<OpCounter>>> = const { std::cell::Cell::new(None) };
}

/// A counter for a local completion this thread waits for before it
/// returns: this thread's kept one when no conduit still holds it, else a
/// fresh one (an allocation and a free less per NBI put on a network).
fn lc_now() -> Arc<OpCounter> {
    match LC_NOW.with(std::cell::Cell::take) {
        Some(mut c) => {
            if OpCounter::renew(&mut c) {
                c
            } else {
                fresh()
            }
        }
        None => fresh(),
    }
}

/// Keep `c`, a counter from [`lc_now`] whose wait has ended, for the
/// thread's next one.
fn keep_lc_now(c: Arc<OpCounter>) {
    LC_NOW.with(|k| k.set(Some(c)));
}

/// How RMA to a peer is carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmaPath {
    /// The conduit's own RMA (RDMA, or the scc conduit's coherent copies).
    Native,
    /// Direct copies through the peer's segment mapped in this process.
    Mapped,
    /// Active messages (the reference implementation).
    Reference,
}

/// Where one RMA operation goes, its remote range checked: what
/// [`Endpoint::target`] finds in the peer's [`Route`].
enum Destination {
    /// Nothing to move (zero bytes).
    Nothing,
    /// The conduit's own RMA.
    Native,
    /// This address of the peer's segment, mapped here.
    Mapped(*mut u8),
    /// Active messages.
    Reference,
    /// A client segment's memory: its direct path to the peer (a copy,
    /// cross-memory attach), else active messages in Medium chunks (a
    /// conduit's Long lands only in the primordial segment).
    Client,
    /// A client segment's memory that the conduit's own RMA reaches (its
    /// registration with the network), posted under the table's lock.
    ClientNative,
}

/// When a put's source buffer may be reused (GASNet's `lc_opt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lc {
    /// The call returns only once the source may be reused.
    Now,
    /// A separate local-completion event is returned.
    Defer,
    /// Local completion is tracked with this thread's NBI put category.
    Group,
}

/// Where a started put counts its local completion.
#[derive(Clone, Copy)]
enum LcCount<'a> {
    /// Nowhere: waited for before return.
    Now,
    /// On a fresh counter, handed back.
    Fresh,
    /// On this thread's NBI put category.
    Group,
    /// On the caller's counter.
    On(&'a Arc<OpCounter>),
}

impl From<Lc> for LcCount<'_> {
    fn from(lc: Lc) -> Self {
        match lc {
            Lc::Now => LcCount::Now,
            Lc::Defer => LcCount::Fresh,
            Lc::Group => LcCount::Group,
        }
    }
}

/// The counters a started put left behind (none when it finished at once).
#[derive(Default)]
struct Started {
    /// Remote completion.
    rc: Option<Arc<OpCounter>>,
    /// Local completion, when the caller asked for it deferred and it is
    /// later than return.
    lc: Option<Arc<OpCounter>>,
}

/// The local- and remote-completion events of a raw non-blocking put.
#[derive(Debug)]
pub struct PutEvents {
    /// Fires when the source buffer may be reused (already fired for `Lc::Now`).
    pub lc: Event,
    /// Fires when the data is in the peer's segment.
    pub rc: Event,
}

thread_local! {
    /// The trace's number of the observed operation this thread started
    /// last, until [`Endpoint::observe_pending`] takes it (0: none, or
    /// not traced).
    static PENDING: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl Endpoint {
    /// How RMA to `peer` is carried out (decided once per peer when the
    /// endpoint was made; a rank out of range has no path but the
    /// reference's, which refuses it).
    pub fn rma_path(&self, peer: Rank) -> RmaPath {
        self.routes().of(peer).map_or(RmaPath::Reference, |r| {
            self.routes().decided(peer, r).path()
        })
    }

    /// `rank`'s route, for an RMA operation (`what`) of a live client:
    /// one compare checks both (see [`Routes::open`]).
    #[inline(always)]
    fn route(&self, rank: Rank, what: &'static str) -> Result<&Route> {
        match self.routes().open(rank) {
            Some(r) => Ok(r),
            None => Err(self.route_refused(rank, what)),
        }
    }

    /// Why [`route`](Self::route) refused: the client is gone, or `rank`
    /// is not in the job.
    #[cold]
    #[inline(never)]
    fn route_refused(&self, rank: Rank, what: &'static str) -> Error {
        match self.routes().of(rank) {
            Err(out_of_range) => out_of_range,
            // In range: the routes were closed.
            Ok(_) => self.finalized_error(what),
        }
    }

    /// Where an operation on `len` bytes at `at` goes, the rank and the
    /// range checked against the peer's cached [`Route`]: no dynamic call
    /// to the conduit (each such call returns through memory: three had
    /// been a third of a small NBI put's time).
    #[inline(always)]
    fn target(
        &self,
        at: GlobalAddr,
        len: usize,
        op: RmaOp,
        kind: Completion,
    ) -> Result<Destination> {
        let route = self.route(at.rank, "an RMA operation")?;
        if let Err(refused) = route.check(at.rank, at.offset, len) {
            return self.client_target(at, len, refused, op, kind);
        }
        Ok(match (len, route.mapped_at(at.offset)) {
            (0, _) => Destination::Nothing,
            (_, Some(p)) => Destination::Mapped(p),
            _ if route.path() == RmaPath::Native => Destination::Native,
            // The observed marker (every route when RMA is observed): the
            // one compare the reference path pays for it.
            _ if route.path() == RmaPath::Mapped => self.observed_target(at, len, op, kind, route),
            _ => Destination::Reference,
        })
    }

    /// Where an observed operation goes (see [`Routes`]): its route as
    /// decided, the operation told to the observer. One that finishes
    /// during injection (a mapped copy) is traced complete at once; the
    /// others when their counter finishes ([`Self::observe_pending`]).
    #[cold]
    #[inline(never)]
    fn observed_target(
        &self,
        at: GlobalAddr,
        len: usize,
        op: RmaOp,
        kind: Completion,
        route: &Route,
    ) -> Destination {
        debug_assert!(Routes::is_observed(route));
        let real = self.routes().decided(at.rank, route);
        let (to, how) = match (real.mapped_at(at.offset), real.path()) {
            (Some(p), _) => (Destination::Mapped(p), RmaRoute::Mapped),
            (None, RmaPath::Native) => (Destination::Native, RmaRoute::Native),
            (None, _) => (Destination::Reference, RmaRoute::Reference),
        };
        let n = rgex_core::observe::rma(op, how, kind, at.rank, len);
        match to {
            Destination::Mapped(_) => rgex_core::observe::rma_completed(n),
            _ => PENDING.set(n),
        }
        to
    }

    /// A blocking operation's short cut when RMA is observed: where in
    /// the peer's mapped segment `len` bytes at `at` are, the operation
    /// counted and traced complete (it is a copy, done before return),
    /// or `None` (not observed, not mapped, or out of range: the general
    /// path decides, and reports).
    #[inline]
    fn observed_mapped(&self, at: GlobalAddr, len: usize, op: RmaOp) -> Option<*mut u8> {
        let route = self.routes().open(at.rank)?;
        if !Routes::is_observed(route) || len == 0 || route.check(at.rank, at.offset, len).is_err()
        {
            return None;
        }
        let to = self.routes().decided(at.rank, route).mapped_at(at.offset)?;
        let n = rgex_core::observe::rma(op, RmaRoute::Mapped, Completion::Blocking, at.rank, len);
        rgex_core::observe::rma_completed(n);
        Some(to)
    }

    /// When RMA is observed, trace the completion of the operation just
    /// started (by [`Self::observed_target`] or [`Self::client_target`])
    /// when `counter`, its own, finishes. Operations counted on a shared
    /// counter (implicit, or the caller's) complete as their group: no
    /// line of their own.
    #[inline]
    fn observe_pending(&self, kind: Completion, counter: &OpCounter) {
        if self.routes().observed() && matches!(kind, Completion::Blocking | Completion::Event) {
            rgex_core::observe::rma_completes_with(PENDING.take(), counter);
        }
    }

    /// Where an operation outside the primordial segment goes: into a
    /// client segment (its range checked against what the peer
    /// registered), or nowhere (`refused`, the primordial segment's error).
    #[cold]
    #[inline(never)]
    fn client_target(
        &self,
        at: GlobalAddr,
        len: usize,
        refused: Error,
        op: RmaOp,
        kind: Completion,
    ) -> Result<Destination> {
        let to = match self
            .client_segments()
            .check_remote(at.rank, at.offset, len)?
        {
            true if len == 0 => Destination::Nothing,
            true if self.client_segments().native_to(at) => Destination::ClientNative,
            true => Destination::Client,
            false => return Err(refused),
        };
        if self.routes().observed() && len > 0 {
            let how = self.client_segments().route_of(at, len);
            let n = rgex_core::observe::rma(op, how, kind, at.rank, len);
            match how {
                RmaRoute::Mapped | RmaRoute::Cma => rgex_core::observe::rma_completed(n),
                _ => PENDING.set(n),
            }
        }
        Ok(to)
    }

    /// Start a put. An operation that cannot finish during injection is
    /// counted on the counter `counter()` gives, which is returned with a
    /// fresh local-completion counter when local completion comes later
    /// than return and `lc` is [`LcCount::Fresh`] (native path; `Group`
    /// counts it on this thread's NBI put category instead, `On` on the
    /// caller's counter, and `Now` waits for it here). The mapped path
    /// finishes at once and allocates nothing (`None`s).
    ///
    /// # Safety
    /// `src..src+len` must stay readable and unmodified until local
    /// completion as `lc` defines it.
    #[allow(clippy::too_many_arguments)]
    unsafe fn start_put(
        &self,
        dst: GlobalAddr,
        src: *const u8,
        len: usize,
        counter: impl FnOnce() -> Arc<OpCounter>,
        lc: LcCount<'_>,
        kind: Completion,
        flags: Flags,
    ) -> Result<Started> {
        match self.target(dst, len, RmaOp::Put, kind)? {
            Destination::Nothing => Ok(Started::default()),
            to @ (Destination::Native | Destination::ClientNative) => {
                let rc = counter();
                self.observe_pending(kind, &rc);
                let lcc = match lc {
                    LcCount::Group => nbi::counter(self.index(), NbiCategory::Put),
                    LcCount::Now => lc_now(),
                    LcCount::Fresh => fresh(),
                    LcCount::On(c) => c.clone(),
                };
                let post = || {
                    // SAFETY: forwarded caller contract; `lcc` tracks the
                    // source as long as the conduit reads it.
                    unsafe {
                        self.conduit()
                            .try_put(dst.rank, dst.offset, src, len, &lcc, &rc)
                    }
                };
                self.inject_or_wait(flags, || match to {
                    Destination::ClientNative => {
                        self.client_segments().native(dst, len, &[&lcc, &rc], post)
                    }
                    _ => post(),
                })?;
                let lc = match lc {
                    LcCount::Now => {
                        self.event(Some(lcc.clone())).wait()?;
                        keep_lc_now(lcc);
                        None
                    }
                    LcCount::Fresh => Some(lcc),
                    LcCount::Group | LcCount::On(_) => None,
                };
                Ok(Started { rc: Some(rc), lc })
            }
            Destination::Mapped(to) => {
                // Ordering: as the blocking put's.
                fence(Ordering::Release);
                // SAFETY: `to..to+len` is inside the peer's mapped segment
                // (checked); the caller guarantees the source.
                unsafe { self.mapped_copy(src, to, len) };
                Ok(Started::default())
            }
            to @ (Destination::Reference | Destination::Client) => {
                if let Destination::Client = to {
                    // SAFETY: the caller guarantees the source for the call.
                    let direct = unsafe {
                        self.client_segments()
                            .direct(self.rank(), dst, len, Local::From(src))
                    };
                    if let Some(done) = direct {
                        return done.map(|()| Started::default());
                    }
                }
                // SAFETY: the caller guarantees the source for the call.
                let bytes = unsafe { std::slice::from_raw_parts(src, len) };
                let done = counter();
                self.observe_pending(kind, &done);
                match to {
                    Destination::Client => self
                        .rma_reference()
                        .put_client(self, dst, bytes, &done, flags)?,
                    _ => self.rma_reference().put(self, dst, bytes, &done, flags)?,
                }
                Ok(Started {
                    rc: Some(done),
                    lc: None,
                })
            }
        }
    }

    /// Start a get; as [`start_put`](Self::start_put) for the counter.
    ///
    /// # Safety
    /// `dst..dst+len` must stay valid and unread until the returned counter
    /// (if any) drops to zero.
    unsafe fn start_get(
        &self,
        dst: *mut u8,
        len: usize,
        src: GlobalAddr,
        counter: impl FnOnce() -> Arc<OpCounter>,
        kind: Completion,
        flags: Flags,
    ) -> Result<Option<Arc<OpCounter>>> {
        match self.target(src, len, RmaOp::Get, kind)? {
            Destination::Nothing => Ok(None),
            to @ (Destination::Native | Destination::ClientNative) => {
                let done = counter();
                self.observe_pending(kind, &done);
                let post = || {
                    // SAFETY: forwarded caller contract.
                    unsafe {
                        self.conduit()
                            .try_get(dst, src.rank, src.offset, len, &done)
                    }
                };
                self.inject_or_wait(flags, || match to {
                    Destination::ClientNative => {
                        self.client_segments().native(src, len, &[&done], post)
                    }
                    _ => post(),
                })?;
                Ok(Some(done))
            }
            Destination::Mapped(from) => {
                // SAFETY: the range is inside the mapped segment (checked),
                // the caller guarantees the destination; as for a put.
                unsafe { self.mapped_copy(from, dst, len) };
                // Ordering: as the blocking get's.
                fence(Ordering::Acquire);
                Ok(None)
            }
            to @ (Destination::Reference | Destination::Client) => {
                if let Destination::Client = to {
                    // SAFETY: forwarded caller contract.
                    let direct = unsafe {
                        self.client_segments()
                            .direct(self.rank(), src, len, Local::Into(dst))
                    };
                    if let Some(done) = direct {
                        return done.map(|()| None);
                    }
                }
                let done = counter();
                self.observe_pending(kind, &done);
                // SAFETY: forwarded caller contract.
                unsafe {
                    self.rma_reference()
                        .get(self, dst, len, src, &done, flags)?
                };
                Ok(Some(done))
            }
        }
    }

    /// The event of an operation counted on `done` (none: finished during
    /// injection, as on the mapped path).
    // Inline, with the finished case first: returned through memory, the
    // event's two words were stored one at a time and read back as one
    // 16-byte load, which the store buffer cannot forward (a stall that
    // cost a small mapped `put_nb` 40% of its time).
    #[inline(always)]
    fn event(&self, done: Option<Arc<OpCounter>>) -> Event {
        match done {
            None => Event::done(),
            Some(d) => self.counted_event(d),
        }
    }

    fn counted_event(&self, d: Arc<OpCounter>) -> Event {
        // A failed operation keeps its counter so `wait` sees why.
        if !d.peek_done() || d.failure().is_some() {
            Event::pending(d, self.progress_handle())
        } else {
            Event::done()
        }
    }

    /// Blocking put: returns when `src` is in `dst`'s segment.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_core::{Flags, GlobalAddr, Rank};
    /// ep.put(GlobalAddr::new(Rank(1), 4096), b"hello", Flags::empty())?;
    /// let mut back = [0u8; 5];
    /// ep.get(&mut back, GlobalAddr::new(Rank(1), 4096), Flags::empty())?;
    /// assert_eq!(&back, b"hello");
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn put(&self, dst: GlobalAddr, src: &[u8], flags: Flags) -> Result<()> {
        let route = self.route(dst.rank, "a put")?;
        // Outside the primordial segment: a client segment's, or the error
        // (the non-blocking path decides, out of line).
        let (true, Some(to)) = (
            route.check(dst.rank, dst.offset, src.len()).is_ok(),
            route.mapped_at(dst.offset),
        ) else {
            return self.put_unmapped(dst, src, flags);
        };
        // Ordering: a release fence before the stores, so that what this
        // thread wrote before the put (its own segment included) is
        // visible to a peer that sees the put's bytes through an acquire
        // (an acquire load of them, an atomic's ACQUIRE, or the get path's
        // acquire fence below): the message-passing pattern "write data,
        // then put a flag" holds. Nothing is needed after the stores: the
        // put is complete once they are issued (coherent memory), and
        // whatever this thread does next that a peer may synchronise with
        // (a later put, an AM, an atomic, a barrier) carries its own
        // release, ordering these stores before it. Free on x86 (a
        // compiler barrier: TSO keeps stores in order).
        fence(Ordering::Release);
        // SAFETY: `to..to + len` is inside the peer's mapped segment
        // (checked just above against its length), which stays mapped for
        // the conduit's life; `src` is a borrowed slice.
        unsafe { self.mapped_copy(src.as_ptr(), to, src.len()) };
        Ok(())
    }

    /// A blocking put to a peer whose segment is not mapped here, or
    /// outside its primordial segment: start it and wait (out of line, so the mapped path stays small enough to
    /// inline).
    #[inline(never)]
    fn put_unmapped(&self, dst: GlobalAddr, src: &[u8], flags: Flags) -> Result<()> {
        if let Some(to) = self.observed_mapped(dst, src.len(), RmaOp::Put) {
            // Ordering: as the mapped path's (see `put`).
            fence(Ordering::Release);
            // SAFETY: inside the peer's mapped segment (checked by
            // `observed_mapped`); `src` is a borrowed slice.
            unsafe { self.mapped_copy(src.as_ptr(), to, src.len()) };
            return Ok(());
        }
        self.put_started(dst, src, flags)
    }

    /// Start a put of the borrowed `src` whose local completion is reached
    /// before return, completed as `kind` says (a blocking put, `put_nb`).
    #[inline(always)]
    fn start_put_now(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        kind: Completion,
        flags: Flags,
    ) -> Result<Started> {
        // SAFETY: `src` is borrowed for the call; LC is reached before return.
        unsafe {
            self.start_put(
                dst,
                src.as_ptr(),
                src.len(),
                fresh,
                LcCount::Now,
                kind,
                flags,
            )
        }
    }

    /// A blocking put started on the general path, and waited for (out of
    /// line: [`put_unmapped`](Self::put_unmapped) stays small).
    #[inline(never)]
    fn put_started(&self, dst: GlobalAddr, src: &[u8], flags: Flags) -> Result<()> {
        let started = self.start_put_now(dst, src, Completion::Blocking, flags)?;
        self.event(started.rc).wait_on(
            Waiting::new("a blocking put")
                .peer(dst.rank)
                .value("bytes", src.len() as u64),
        )
    }

    /// Blocking get: returns when `dst` holds the bytes at `src`.
    #[inline]
    pub fn get(&self, dst: &mut [u8], src: GlobalAddr, flags: Flags) -> Result<()> {
        let route = self.route(src.rank, "a get")?;
        // As for a put.
        let (true, Some(from)) = (
            route.check(src.rank, src.offset, dst.len()).is_ok(),
            route.mapped_at(src.offset),
        ) else {
            return self.get_unmapped(dst, src, flags);
        };
        // SAFETY: `from..from + len` is inside the peer's mapped segment
        // (checked just above), `dst` an exclusive borrowed slice.
        unsafe { self.mapped_copy(from, dst.as_mut_ptr(), dst.len()) };
        // Ordering: an acquire fence after the loads, the mirror of the
        // put's release fence: if the bytes read were stored by a put
        // (whose release fence came before them) or after any release of
        // the writer, what the writer did before is visible to what this
        // thread does after the get ("get a flag, then read the data").
        // Nothing is needed before the loads: the peer's data that this
        // thread knows of reached it through an acquire of its own (an
        // AM, an atomic, a barrier, an earlier get). Free on x86.
        fence(Ordering::Acquire);
        Ok(())
    }

    /// A blocking get from a peer whose segment is not mapped here (see
    /// [`put_unmapped`](Self::put_unmapped)).
    #[inline(never)]
    fn get_unmapped(&self, dst: &mut [u8], src: GlobalAddr, flags: Flags) -> Result<()> {
        if let Some(from) = self.observed_mapped(src, dst.len(), RmaOp::Get) {
            // SAFETY: inside the peer's mapped segment (checked by
            // `observed_mapped`); `dst` an exclusive borrowed slice.
            unsafe { self.mapped_copy(from, dst.as_mut_ptr(), dst.len()) };
            // Ordering: as the mapped path's (see `get`).
            fence(Ordering::Acquire);
            return Ok(());
        }
        self.get_started(dst, src, flags)
    }

    /// A blocking get started on the general path, and waited for (as
    /// [`put_started`](Self::put_started)).
    #[inline(never)]
    fn get_started(&self, dst: &mut [u8], src: GlobalAddr, flags: Flags) -> Result<()> {
        // SAFETY: `dst` is borrowed for this whole call, which waits for
        // completion before returning.
        let done = unsafe {
            self.start_get(
                dst.as_mut_ptr(),
                dst.len(),
                src,
                fresh,
                Completion::Blocking,
                flags,
            )?
        };
        self.event(done).wait_on(
            Waiting::new("a blocking get")
                .peer(src.rank)
                .value("bytes", dst.len() as u64),
        )
    }

    /// The mapped path's copy: a plain `memmove` below
    /// [`SHARE_MIN`] (a put within this rank's own segment may overlap;
    /// with a constant length the compiler makes it a load and a store),
    /// [`share_copy`](Endpoint::share_copy) from there (large copies
    /// shared with the threads waiting on this endpoint).
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `len` bytes, for the call.
    #[inline(always)]
    unsafe fn mapped_copy(&self, src: *const u8, dst: *mut u8, len: usize) {
        if len < SHARE_MIN {
            // SAFETY: the caller's contract.
            unsafe { std::ptr::copy(src, dst, len) }
        } else {
            // SAFETY: the caller's contract.
            unsafe { self.share_copy(src, dst, len) }
        }
    }

    /// Put a `u64` by value (native byte order).
    pub fn put_val(&self, dst: GlobalAddr, v: u64, flags: Flags) -> Result<()> {
        self.put(dst, &v.to_ne_bytes(), flags)
    }

    /// Get a `u64` by value (native byte order).
    pub fn get_val(&self, src: GlobalAddr, flags: Flags) -> Result<u64> {
        let mut b = [0u8; 8];
        self.get(&mut b, src, flags)?;
        Ok(u64::from_ne_bytes(b))
    }

    /// Non-blocking put; `src` may be reused when this returns (local
    /// completion NOW). The event fires at remote completion.
    #[inline]
    pub fn put_nb(&self, dst: GlobalAddr, src: &[u8], flags: Flags) -> Result<Event> {
        // (Not through `put_nb_raw`: its two events, returned through
        // memory and copied on, cost a small put 2-3x its time.)
        let started = self.start_put_now(dst, src, Completion::Event, flags)?;
        Ok(self.event(started.rc))
    }

    /// Non-blocking put with a deferred local-completion event. The source
    /// buffer, any owned buffer of bytes (`Vec<u8>`, `Box<[u8]>`,
    /// `bytes::BytesMut`, ...), is moved in and handed back by
    /// [`LocalCompletion::wait`], so the compiler refuses any reuse before
    /// local completion. If the put does not start, the buffer comes back
    /// in the [`BufError`].
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_core::{Flags, GlobalAddr, Rank};
    /// let put = ep.put_nb_defer(GlobalAddr::new(Rank(1), 0), vec![1u8; 1 << 20], Flags::empty())?;
    /// let mut buf = put.lc.wait()?;  // the buffer may be reused now...
    /// buf.fill(2);
    /// put.rc.wait()?;                // ...and the data has arrived now
    /// # Ok(()) }
    /// ```
    ///
    /// The buffer is boxed while the put holds it (one allocation), so
    /// its bytes stay put whatever it is; the raw [`put_nb_raw`](Self::put_nb_raw)
    /// is there for runtimes that manage buffer lifetimes themselves.
    #[inline]
    pub fn put_nb_defer<B>(
        &self,
        dst: GlobalAddr,
        src: B,
        flags: Flags,
    ) -> Result<PutDeferred<B>, BufError<B>>
    where
        B: AsRef<[u8]> + Send + 'static,
    {
        let src = Box::new(src);
        let bytes = (*src).as_ref();
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        // SAFETY: the bytes are the boxed buffer's (inside the box, behind
        // its own pointers, or static), and the box moves into the
        // returned LocalCompletion, which neither moves its contents nor
        // lets anyone touch or drop them until the local-completion event
        // fires (its Drop waits for it; a leaked one leaks the buffer).
        // The buffer is `'static`: it borrows nothing that could expire.
        match unsafe { self.put_nb_raw(dst, ptr, len, Lc::Defer, flags) } {
            Ok(ev) => Ok(PutDeferred {
                lc: LocalCompletion::boxed(src, ev.lc),
                rc: ev.rc,
            }),
            // Nothing started: the transport holds no pointer into it.
            Err(error) => Err(BufError {
                error,
                buffer: *src,
            }),
        }
    }

    /// Non-blocking get into an owned buffer (all of it: `Vec<u8>`,
    /// `Box<[u8]>`, `bytes::BytesMut`, ...), handed back when complete.
    /// If the get does not start, the buffer comes back in the
    /// [`BufError`]. Boxed while held, as for
    /// [`put_nb_defer`](Self::put_nb_defer).
    #[inline]
    pub fn get_nb<B>(
        &self,
        dst: B,
        src: GlobalAddr,
        flags: Flags,
    ) -> Result<GetPending<B>, BufError<B>>
    where
        B: AsMut<[u8]> + Send + 'static,
    {
        let mut dst = Box::new(dst);
        let d = (*dst).as_mut();
        let (ptr, len) = (d.as_mut_ptr(), d.len());
        // SAFETY: as in put_nb_defer: the bytes are the boxed buffer's,
        // given exclusively (`as_mut`), and nobody touches, moves or drops
        // them until the GetPending's event fires.
        match unsafe { self.get_nb_raw(ptr, len, src, flags) } {
            Ok(ev) => Ok(GetPending::boxed(dst, ev)),
            // Nothing started: the transport holds no pointer into it.
            Err(error) => Err(BufError {
                error,
                buffer: *dst,
            }),
        }
    }

    /// Raw non-blocking put, for runtimes that manage buffer lifetimes.
    ///
    /// # Safety
    /// `src..src+len` must stay readable and unmodified until local
    /// completion: return for `Lc::Now`, the `lc` event for `Lc::Defer`, an
    /// NBI put sync for `Lc::Group`.
    #[inline]
    pub unsafe fn put_nb_raw(
        &self,
        dst: GlobalAddr,
        src: *const u8,
        len: usize,
        lc: Lc,
        flags: Flags,
    ) -> Result<PutEvents> {
        // SAFETY: forwarded caller contract (start_put honours `lc`).
        let started =
            unsafe { self.start_put(dst, src, len, fresh, lc.into(), Completion::Event, flags)? };
        Ok(PutEvents {
            lc: self.event(started.lc),
            rc: self.event(started.rc),
        })
    }

    /// Raw non-blocking put counted on the caller's counters: `rc` holds a
    /// count until the bytes are at the target, `lc` one until the source
    /// may be reused (neither where the put finishes during injection, as
    /// on the mapped path; no `lc` count where it copies its source then,
    /// as the reference path does). Many puts counted on one pair complete as one:
    /// a transfer made of pieces, such as VIS's one put per chunk, gets a
    /// single local- and a single remote-completion event.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_core::{OpCounter, Flags, GlobalAddr, Rank};
    /// let src = vec![7u8; 1 << 20];
    /// let (lc, rc) = (OpCounter::new(0), OpCounter::new(0));
    /// for (i, piece) in src.chunks(1 << 16).enumerate() {
    ///     let at = GlobalAddr::new(Rank(1), (i as u64) << 17);
    ///     // SAFETY: `src` is left alone until `lc` is done (below).
    ///     unsafe { ep.put_counted(at, piece.as_ptr(), piece.len(), &lc, &rc, Flags::empty())? };
    /// }
    /// while !lc.is_done() { ep.poll()?; }  // `src` may be reused now...
    /// while !rc.is_done() { ep.poll()?; }  // ...and every piece has arrived
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// `src..src+len` must stay readable and unmodified until `lc` holds no
    /// count this put added (until it is done, simply).
    pub unsafe fn put_counted(
        &self,
        dst: GlobalAddr,
        src: *const u8,
        len: usize,
        lc: &Arc<OpCounter>,
        rc: &Arc<OpCounter>,
        flags: Flags,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract (the source is counted on `lc`).
        let started = unsafe {
            self.start_put(
                dst,
                src,
                len,
                || rc.clone(),
                LcCount::On(lc),
                Completion::Counted,
                flags,
            )?
        };
        // Local completion went to the caller's `lc` (native path) or came
        // during injection: no fresh counter is handed back.
        debug_assert!(started.lc.is_none());
        Ok(())
    }

    /// Raw non-blocking get.
    ///
    /// # Safety
    /// `dst..dst+len` must stay valid and must not be read or written until
    /// the returned event fires.
    #[inline]
    pub unsafe fn get_nb_raw(
        &self,
        dst: *mut u8,
        len: usize,
        src: GlobalAddr,
        flags: Flags,
    ) -> Result<Event> {
        // SAFETY: forwarded caller contract.
        let done = unsafe { self.start_get(dst, len, src, fresh, Completion::Event, flags)? };
        Ok(self.event(done))
    }

    /// Raw non-blocking get counted on the caller's counter: `done` holds
    /// a count until the bytes are in `dst` (none where the get finishes
    /// during injection). As [`put_counted`](Self::put_counted), a get of
    /// many pieces completes as one.
    ///
    /// # Safety
    /// `dst..dst+len` must stay valid and must not be read or written until
    /// `done` holds no count this get added (until it is done, simply).
    pub unsafe fn get_counted(
        &self,
        dst: *mut u8,
        len: usize,
        src: GlobalAddr,
        done: &Arc<OpCounter>,
        flags: Flags,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { self.start_get(dst, len, src, || done.clone(), Completion::Counted, flags) }
            .map(drop)
    }

    /// Implicit-handle put: `src` may be reused on return; remote completion
    /// joins this thread's put category (or its open access region).
    ///
    /// **Under async**: implicit operations are tracked per thread, and a
    /// task may resume on another thread at an `.await`. Sync them
    /// ([`nbi_wait`](Self::nbi_wait)) before any `.await`: an rgex future
    /// about to suspend while this thread has some outstanding resolves to
    /// [`Error::NbiAcrossAwait`]. Async code uses explicit handles
    /// ([`put_nb`](Self::put_nb), [`get_nb`](Self::get_nb)) instead.
    pub fn put_nbi(&self, dst: GlobalAddr, src: &[u8], flags: Flags) -> Result<()> {
        // SAFETY: `src` is borrowed for the call; LC is reached before return.
        unsafe {
            self.start_put(
                dst,
                src.as_ptr(),
                src.len(),
                || nbi::counter(self.index(), NbiCategory::Put),
                LcCount::Now,
                Completion::Nbi,
                flags,
            )
        }
        .map(drop)
    }

    /// Implicit-handle get; completion joins this thread's get category (or
    /// its open access region).
    ///
    /// # Safety
    /// `dst..dst+len` must stay valid and untouched until that sync.
    pub unsafe fn get_nbi(
        &self,
        dst: *mut u8,
        len: usize,
        src: GlobalAddr,
        flags: Flags,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe {
            self.start_get(
                dst,
                len,
                src,
                || nbi::counter(self.index(), NbiCategory::Get),
                Completion::Nbi,
                flags,
            )
        }
        .map(drop)
    }

    /// The counter an implicit operation of `cat` issued now on this thread
    /// joins (the open access region's, else the category's). For rgex's
    /// layers that issue implicit operations of their own (atomics, VIS):
    /// count with [`OpCounter::add`] before injecting, finish with
    /// [`OpCounter::done`].
    pub fn nbi_counter(&self, cat: NbiCategory) -> Arc<OpCounter> {
        nbi::counter(self.index(), cat)
    }

    /// True if this thread's implicit operations of `cat` have completed.
    /// Does not poll.
    pub fn nbi_test(&self, cat: NbiCategory) -> bool {
        nbi::category(self.index(), cat).is_done()
    }

    /// Poll until this thread's implicit operations of `cat` on this
    /// endpoint complete (each endpoint's are its own); an
    /// error if one of them failed since the last sync of `cat` (its peer
    /// went away, on a conduit that can tell), with the first failure's
    /// cause. The next sync starts afresh.
    ///
    /// Only this thread's operations: an async task that issued them and
    /// then resumed on another thread would find none here, which is why
    /// an rgex future refuses to suspend with any outstanding
    /// ([`Error::NbiAcrossAwait`]; see [`put_nbi`](Self::put_nbi)).
    pub fn nbi_wait(&self, cat: NbiCategory) -> Result<()> {
        if nbi::settled(self.index(), cat) {
            return Ok(());
        }
        self.event(Some(nbi::category(self.index(), cat)))
            .wait_unchecked();
        match nbi::take_failure(self.index(), cat) {
            Some(why) => Err(Error::Failed(why)),
            None => Ok(()),
        }
    }

    /// [`nbi_wait`](Self::nbi_wait) of every category (puts, gets, then
    /// atomics), with one look first: when nothing is outstanding and
    /// nothing failed, as after blocking or mapped operations, it returns
    /// at once.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// ep.nbi_wait_all()?; // every implicit operation of this thread here is complete
    /// # Ok(()) }
    /// ```
    pub fn nbi_wait_all(&self) -> Result<()> {
        const ALL: [NbiCategory; 3] = [NbiCategory::Put, NbiCategory::Get, NbiCategory::Rmw];
        if nbi::settled_in(self.index(), &ALL) {
            return Ok(());
        }
        ALL.into_iter().try_for_each(|c| self.nbi_wait(c))
    }

    /// Open an access region: implicit operations this thread issues on
    /// this endpoint until [`nbi_end_region`](Self::nbi_end_region) are
    /// collected into one event (another endpoint's are not, and it may
    /// have a region of its own).
    ///
    /// A region is this thread's: open and close it with no `.await` in
    /// between (an rgex future about to suspend with a region open
    /// resolves to [`Error::NbiAcrossAwait`] and closes the region, so the
    /// thread's next task does not find it open).
    pub fn nbi_begin_region(&self) -> Result<()> {
        if nbi::begin_region(self.index()) {
            Ok(())
        } else {
            Err(Error::Config(
                "nbi_begin_region: this thread already has an open access region (a region is \
                 per thread: open and close it on one thread, with no .await in between)"
                    .into(),
            ))
        }
    }

    /// Close this thread's access region; the event fires when every
    /// operation issued inside it has completed.
    pub fn nbi_end_region(&self) -> Result<Event> {
        nbi::end_region(self.index())
            .map(|c| self.event(Some(c)))
            .ok_or_else(|| {
                Error::Config("nbi_end_region: this thread has no open access region".into())
            })
    }
}
