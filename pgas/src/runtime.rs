//! The runtime: the rgex client underneath, the shared heap, the
//! handlers of rgex-pgas's messages, and progress.
//!
//! **Progress, as UPC++ has it.** Messages are received whenever rgex is
//! polled (internal progress: any wait of this crate, any send that
//! waits for room). RPC bodies, dist_object fetches and the remote
//! completions of `rput_then` run only in *user-level* progress: a call
//! of [`Pgas::progress`], a [`Pgas::wait`], or the
//! [`progress_task`](Pgas::progress_task) future, on the thread that makes
//! it. A program that computes for long stretches calls `progress()` now
//! and then, or leaves a thread polling. An RPC body itself may send,
//! wait and make RPCs; the progress it makes inside is internal only, so
//! bodies never nest. The small results of the calls one progress serves
//! are sent together per caller at the end, one message each, or before
//! a body waits; small calls wait per target until the caller's next
//! progress (see [`Pgas::discharge`]).

use crate::error::{Error, Result};
use crate::fn_id::{FnId, Names};
use crate::heap::Heap;
use crate::mailbox::{Incoming, Mailbox};
pub(crate) use crate::payload::Payload;
use rgex::{Client, Endpoint, Flags, GlobalAddr, HandlerId, Rank};
use std::any::{Any, TypeId};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// The ids of rgex-pgas's own handlers.
#[derive(Clone, Copy)]
pub(crate) struct Ids {
    /// A call: args [ticket, body kind]; payload: FnId, then the
    /// arguments inline or where they are staged.
    pub call: HandlerId,
    /// Calls held for one target and sent together: payload: the entries
    /// of [`outbox`](crate::outbox).
    pub calls: HandlerId,
    /// A result: args [ticket, status]; payload: the result's bytes,
    /// where they are staged, or the error's text.
    pub ret: HandlerId,
    /// A dist_object fetch: args [ticket]; payload: the object's id.
    pub fetch: HandlerId,
    /// "I have read what you staged at this offset": payload: offset.
    pub free: HandlerId,
    /// "I served this many pieces of your work": args [count] (the
    /// flow-control window, see [`window`](crate::window)).
    pub credit: HandlerId,
    /// Results held while a batch of calls ran, for one caller: payload:
    /// the entries of [`answers`](crate::answers).
    pub rets: HandlerId,
}

/// Body kinds (a call's args[1], a result's status).
pub(crate) const INLINE: u32 = 0;
pub(crate) const STAGED: u32 = 1;
pub(crate) const FAILED: u32 = 2;

/// What a `ret` carries.
pub(crate) enum Returned {
    Bytes(Payload),
    Staged { at: u64, len: u64 },
    Failed(String),
}

/// A handle on rgex-pgas for this rank: cheap to clone, shareable
/// across threads. Made once per process by [`init`].
#[derive(Clone)]
pub struct Pgas {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub client: Client,
    pub ep: Arc<Endpoint>,
    pub heap: Heap,
    /// The raw range's length: segment offsets `0..raw` are left to raw
    /// rgex RMA, the heap starts after them.
    pub raw: u64,
    pub names: Names,
    pub ids: Ids,
    pub mail: Arc<Mailbox>,
    /// Small calls waiting to go out, per target.
    pub outbox: crate::outbox::Outbox,
    pub dist: crate::dist_object::Registry,
    pub vis: rgex::Vis,
    pub remote: crate::rma::RemoteCompletions,
    /// The states by type: a short list, read only when a thread's
    /// [`LAST_STATE`] misses (a program keeps a handful of types).
    states: Mutex<States>,
    /// Which `states` a thread's [`LAST_STATE`] may stand for: this
    /// runtime's own number and how many times `set_state` has run.
    states_seen: (u64, AtomicU64),
    /// Per peer: the bytes at which a buffer held for it is sent
    /// ([`hold_cap`](Pgas::hold_cap)).
    hold_caps: Box<[usize]>,
    progress_calls: AtomicU64,
    /// RPC bodies that failed with nobody to tell (rpc_ff).
    pub lost_failures: AtomicU64,
}

impl Drop for Inner {
    /// Send the calls still held (see [`outbox`](crate::outbox)).
    fn drop(&mut self) {
        crate::outbox::send_at_exit(&self.outbox, &self.ep, self.ids.calls);
    }
}

thread_local! {
    /// This thread is inside user-level progress (running a body).
    static IN_USER_PROGRESS: Cell<bool> = const { Cell::new(false) };
    /// This thread is doing chores.
    static IN_CHORES: Cell<bool> = const { Cell::new(false) };
    /// The state this thread looked up last, with the runtime number and
    /// `set_state` count it was read under (so a body that looks up one
    /// state per call takes no lock and touches no reference count).
    static LAST_STATE: Cell<Option<LastState>> = const { Cell::new(None) };
    /// The queue this thread's user-level progress takes work into (kept
    /// between calls for its buffer; empty between them).
    static SPARE_QUEUE: std::cell::RefCell<std::collections::VecDeque<Incoming>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
}

/// Clears a thread-local flag when dropped.
struct Leave(&'static std::thread::LocalKey<Cell<bool>>);

impl Drop for Leave {
    fn drop(&mut self) {
        self.0.with(|c| c.set(false));
    }
}

/// A value kept by [`Pgas::set_state`].
type AnyState = Arc<dyn Any + Send + Sync>;

/// The states a runtime keeps. A replaced state is retired, not
/// dropped: a body on another thread may still hold a reference to it
/// (see [`Pgas::state`]), so it lives as long as the runtime.
#[derive(Default)]
struct States {
    current: Vec<(TypeId, AnyState)>,
    retired: Vec<AnyState>,
}

/// A state a thread looked up, and under what it was found: the runtime
/// number, its `set_state` count, the type, and where the value lives
/// (in an `Arc` its runtime's [`States`] keep until the runtime ends).
#[derive(Clone, Copy)]
struct LastState {
    runtime: u64,
    sets: u64,
    ty: TypeId,
    value: *const (),
}

/// Runtimes made in this process (each one's number tells its states
/// apart in [`LAST_STATE`]). Relaxed: a counter that only hands out
/// distinct numbers.
static RUNTIMES: AtomicU64 = AtomicU64::new(0);

/// A body to send: bytes already encoded, or a value to serialize.
pub(crate) enum Body<'a> {
    Bytes(&'a [u8]),
    Value(&'a dyn erased::Encode),
}

impl Body<'_> {
    /// The bytes it takes encoded.
    pub(crate) fn len(&self) -> std::result::Result<usize, postcard::Error> {
        match self {
            Body::Bytes(b) => Ok(b.len()),
            Body::Value(v) => v.encoded_len(),
        }
    }

    /// Encode into `out`; the bytes used.
    pub(crate) fn write(&self, out: &mut [u8]) -> std::result::Result<usize, postcard::Error> {
        match self {
            Body::Bytes(b) => {
                let d = out
                    .get_mut(..b.len())
                    .ok_or(postcard::Error::SerializeBufferFull)?;
                d.copy_from_slice(b);
                Ok(b.len())
            }
            Body::Value(v) => v.encode_into(out),
        }
    }

    fn to_vec(&self) -> std::result::Result<Vec<u8>, postcard::Error> {
        match self {
            Body::Bytes(b) => Ok(b.to_vec()),
            Body::Value(v) => v.encode(),
        }
    }
}

/// Serialization without naming the type (so `send_body` is one function).
pub(crate) mod erased {
    /// A value postcard can encode.
    pub trait Encode {
        /// The bytes its encoding takes (a walk that writes nothing).
        fn encoded_len(&self) -> Result<usize, postcard::Error>;
        fn encode_into(&self, out: &mut [u8]) -> Result<usize, postcard::Error>;
        fn encode(&self) -> Result<Vec<u8>, postcard::Error>;
    }

    impl<T: serde::Serialize> Encode for T {
        fn encoded_len(&self) -> Result<usize, postcard::Error> {
            postcard::serialize_with_flavor(self, postcard::ser_flavors::Size::default())
        }
        fn encode_into(&self, out: &mut [u8]) -> Result<usize, postcard::Error> {
            postcard::to_slice(self, out).map(|b| b.len())
        }
        fn encode(&self) -> Result<Vec<u8>, postcard::Error> {
            postcard::to_allocvec(self)
        }
    }
}

/// How often progress asks the conduit whether the targets of calls
/// still waiting for results are alive.
const LIVENESS_EVERY: u64 = 256;

/// Initialise rgex and rgex-pgas (collective: every rank calls it once).
///
/// ```no_run
/// let pg = rgex_pgas::init()?;
/// println!("rank {} of {}", pg.rank(), pg.size());
/// # Ok::<(), rgex_pgas::Error>(())
/// ```
pub fn init() -> Result<Pgas> {
    // The settings, read once: rgex's and rgex-pgas's own.
    let settings = rgex::config::Environment::capture();
    let window = crate::window::Window::read(&settings)
        .map_err(|why| rgex::Error::Failed(format!("rgex-pgas: {why}")))?;
    let raw_setting = settings.get(&rgex::config::vars::PGAS_RAW);
    let mail = Arc::new(Mailbox::new(window));
    let m = mail.clone();
    let (client, ids) =
        rgex::init_with_settings(&settings, move |t| crate::mailbox::register(t, m))?;
    let ep = client.endpoint().clone();
    let (me, n) = (client.rank(), client.size());
    let seg = client.endpoint().segment().len() as u64;
    let raw = crate::heap::raw_len(raw_setting, seg)
        .map_err(|why| rgex::Error::Failed(format!("rgex-pgas: {me}: {why}")))?;
    // A key for the functions' tags, drawn by rank 0, and every rank's
    // program fingerprint and raw range checked against rank 0's.
    let mine = [crate::fn_id::fingerprint(), fresh_key(), raw];
    let root = client.world().broadcast_elems(0, &mine)?;
    if root[0] != mine[0] {
        return Err(Error::NotSameProgram {
            rank: me,
            why: format!(
                "this rank runs a different program than rank 0 (fingerprint {:#x}, rank 0's {:#x}): an RPC names functions by their place in the program, so every rank must run the same executable",
                mine[0], root[0]
            ),
        });
    }
    if root[2] != raw {
        return Err(rgex::Error::Failed(format!(
            "rgex-pgas: {me}: this rank leaves {raw} bytes of its segment to raw RMA (RGEX_PGAS_RAW, or its default for a segment of {seg} bytes), rank 0 leaves {}: every rank must leave the same, so that an offset in the raw range means the same on each (set RGEX_PGAS_RAW and RGEX_SEGMENT_SIZE alike for the whole job)",
            root[2]
        ))
        .into());
    }
    mail.window.size(n);
    let outbox = crate::outbox::Outbox::new();
    outbox.size(n);
    let hold_caps = (0..n)
        .map(|r| crate::framing::FLUSH_AT.min(ep.max_medium(Rank(r), 0)))
        .collect();
    let inner = Inner {
        heap: Heap::new(me, raw, seg),
        raw,
        names: Names::new(root[1]),
        ids,
        mail,
        outbox,
        dist: Default::default(),
        remote: Default::default(),
        vis: rgex::Vis::new(client.endpoint())?,
        states: Mutex::default(),
        states_seen: (RUNTIMES.fetch_add(1, Ordering::Relaxed), AtomicU64::new(0)),
        hold_caps,
        progress_calls: AtomicU64::new(0),
        lost_failures: AtomicU64::new(0),
        ep,
        client,
    };
    let pg = Pgas {
        inner: Arc::new(inner),
    };
    pg.barrier()?;
    Ok(pg)
}

/// A key nobody else draws: the clock and this process's identity.
fn fresh_key() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    h.finish()
}

impl Pgas {
    /// This rank.
    pub fn rank(&self) -> Rank {
        self.inner.client.rank()
    }

    /// Ranks in the job.
    pub fn size(&self) -> u32 {
        self.inner.client.size()
    }

    /// The rgex client underneath, for what this crate does not wrap.
    ///
    /// **Raw RMA at fixed offsets** through it (`put`, `get`, VIS,
    /// atomics on a `GlobalAddr` this program computes) must stay inside
    /// [`raw_range`](Self::raw_range): the rest of every segment is
    /// rgex-pgas's heap, where a raw write would overwrite allocations
    /// and the bodies staged for RPCs. Addresses of heap allocations
    /// ([`GlobalPtr::addr`](crate::GlobalPtr::addr)) are fine too.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// use rgex::{Flags, GlobalAddr, Rank};
    /// let raw = pg.raw_range();
    /// assert!(raw.end - raw.start >= 5, "RGEX_PGAS_RAW leaves room");
    /// pg.client().endpoint().put(GlobalAddr::new(Rank(0), raw.start), b"hello", Flags::empty())?;
    /// # Ok(()) }
    /// ```
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The offsets of every rank's segment that rgex-pgas leaves to raw
    /// rgex RMA through [`client`](Self::client): the segment's first
    /// bytes, `RGEX_PGAS_RAW` of them (a size such as `4096` or `1M`;
    /// default [`DEFAULT_RAW`](crate::heap::DEFAULT_RAW), 64 KiB, or a
    /// quarter of a segment smaller than 256 KiB; `0` leaves none). The
    /// shared heap starts after them, so no allocation or staged body
    /// ever lies here. Every rank leaves the same range (checked at
    /// [`init`], which fails otherwise), so an offset in it means the
    /// same place on each.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// let raw = pg.raw_range();
    /// let p = pg.new_(7u64)?;
    /// assert!(p.offset() >= raw.end, "the heap lies past the raw range");
    /// # Ok(()) }
    /// ```
    pub fn raw_range(&self) -> std::ops::Range<u64> {
        0..self.inner.raw
    }

    pub(crate) fn ep(&self) -> &Arc<Endpoint> {
        &self.inner.ep
    }

    /// The bytes at which a buffer of calls or results held for `peer` is
    /// sent: [`FLUSH_AT`](crate::framing::FLUSH_AT), or the conduit's
    /// Medium to it if smaller (read once, at init: it is fixed for the
    /// job). A rank outside the job gets rgex's least Medium; its send
    /// fails there, naming it.
    pub(crate) fn hold_cap(&self, peer: Rank) -> usize {
        self.inner
            .hold_caps
            .get(peer.0 as usize)
            .copied()
            .unwrap_or(512)
    }

    /// Keep `state` for RPC bodies on this rank to find with
    /// [`state`](Self::state) (one value per type; a second replaces it).
    /// A replaced state is kept, unused, until the runtime ends: a body
    /// on another thread may still be reading it.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// use std::sync::Mutex;
    /// struct Table(Mutex<Vec<u64>>);
    /// pg.set_state(Table(Mutex::new(Vec::new())));
    /// let t = pg.state::<Table>()?;
    /// t.0.lock().unwrap().push(1);
    /// # Ok(()) }
    /// ```
    pub fn set_state<S: Any + Send + Sync>(&self, state: S) {
        let (ty, state): (_, AnyState) = (TypeId::of::<S>(), Arc::new(state));
        {
            let mut states = lock(&self.inner.states);
            let States { current, retired } = &mut *states;
            match current.iter_mut().find(|(t, _)| *t == ty) {
                Some((_, old)) => retired.push(std::mem::replace(old, state)),
                None => current.push((ty, state)),
            }
        }
        // Release: a thread that reads the new count (Acquire, in
        // `state`) also sees the insert above, so it never keeps an
        // older value under the new count.
        self.inner.states_seen.1.fetch_add(1, Ordering::Release);
    }

    /// The state of type `S` kept by [`set_state`](Self::set_state),
    /// borrowed for as long as this handle is (a state lives as long as
    /// the runtime, even once replaced). A body that looks up the same
    /// type as the last one on its thread takes no lock and touches no
    /// reference count.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// pg.set_state(AtomicU64::new(0));
    /// pg.state::<AtomicU64>()?.fetch_add(1, Ordering::Relaxed);
    /// # Ok(()) }
    /// ```
    pub fn state<S: Any + Send + Sync>(&self) -> Result<&S> {
        let (runtime, sets) = (
            self.inner.states_seen.0,
            // Acquire: pairs with `set_state`'s Release (see there).
            self.inner.states_seen.1.load(Ordering::Acquire),
        );
        let ty = TypeId::of::<S>();
        let value = match LAST_STATE.get() {
            Some(l) if (l.runtime, l.sets, l.ty) == (runtime, sets, ty) => Some(l.value),
            _ => self.find_state(runtime, sets, ty),
        };
        match value {
            // SAFETY: `value` points to the value of an `Arc` of type `S`
            // (its `TypeId` matched) that this runtime's `States` keep
            // until the runtime ends: it is never dropped while `self`, a
            // handle on the runtime, lives, and the borrow returned is
            // tied to `self`. The runtime number in `LAST_STATE` is
            // unique in the process, so a pointer cached for another
            // runtime never matches. The value is `Sync`: shared
            // references to it may be used from any thread.
            Some(v) => Ok(unsafe { &*v.cast::<S>() }),
            None => Err(rgex::Error::Failed(format!(
                "rgex-pgas: {}: no state of type {} was set on this rank (Pgas::set_state)",
                self.rank(),
                std::any::type_name::<S>()
            ))
            .into()),
        }
    }

    /// Look up the state of type `ty` under the lock and remember where it
    /// lives in this thread's [`LAST_STATE`].
    #[cold]
    fn find_state(&self, runtime: u64, sets: u64, ty: TypeId) -> Option<*const ()> {
        let states = lock(&self.inner.states);
        let (_, s) = states.current.iter().find(|(t, _)| *t == ty)?;
        let value = Arc::as_ptr(s).cast::<()>();
        LAST_STATE.set(Some(LastState {
            runtime,
            sets,
            ty,
            value,
        }));
        Some(value)
    }

    /// Internal progress: receive (handlers only queue work), then do
    /// the chores any progress may do. Errors rgex reports from its
    /// handlers come back here.
    pub(crate) fn poll(&self) -> Result<usize> {
        self.flush_calls()?;
        let n = self.inner.ep.poll()?;
        Ok(n + self.chores()?)
    }

    /// Read staged results, free what peers have read (not nested: a
    /// chore that waits makes plain rgex progress).
    fn chores(&self) -> Result<usize> {
        if IN_CHORES.with(|c| c.replace(true)) {
            return Ok(0);
        }
        let _leave = Leave(&IN_CHORES);
        let mut n = 0;
        while let Some(c) = self.inner.mail.pop_chore() {
            n += 1;
            match c {
                Incoming::Result {
                    src,
                    ticket,
                    at,
                    len,
                } => {
                    let got = self.fetch_staged(src, at, len);
                    let r = got.map_or_else(
                        |e| Returned::Failed(e.to_string()),
                        |b| Returned::Bytes(Payload::from_vec(b)),
                    );
                    self.inner.mail.complete(ticket, r);
                }
                Incoming::Free { at } => {
                    if let Err(e) = self.inner.heap.free::<Staged>(at) {
                        self.inner.ep.malformed(
                            self.rank(),
                            self.inner.ids.free.index(),
                            &e.to_string(),
                        );
                    }
                }
                Incoming::Call { .. } | Incoming::Calls { .. } | Incoming::Fetch { .. } => {
                    unreachable!("calls and fetches are work, not chores")
                }
            }
        }
        Ok(n)
    }

    /// User-level progress: receive, then run the RPC bodies, dist_object
    /// fetches and remote completions that arrived, on this thread.
    /// Returns how many things happened. Inside an RPC body it makes
    /// internal progress only.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// for _step in 0..100 {
    ///     // ... compute ...
    ///     pg.progress()?; // serve the RPCs other ranks sent meanwhile
    /// }
    /// # Ok(()) }
    /// ```
    pub fn progress(&self) -> Result<usize> {
        let mut n = self.poll()?;
        if IN_USER_PROGRESS.with(|c| c.replace(true)) {
            // Inside a body, which may be polling for something its
            // callers do once they have their results.
            self.flush_answers();
            return Ok(n);
        }
        let _leave = Leave(&IN_USER_PROGRESS);
        // What was there when we started, taken in one lock: work arriving
        // meanwhile waits for the next call (so a flood cannot keep this
        // one going). The queue taken is this thread's spare, kept so its
        // buffer is reused.
        let mut batch = SPARE_QUEUE.with(|q| std::mem::take(&mut *q.borrow_mut()));
        self.inner.mail.take_work(&mut batch);
        if !batch.is_empty() {
            // Small results wait for the batch's end, one message per
            // caller (see `answers`).
            let held = crate::answers::open();
            let mut failed = None;
            while let Some(item) = batch.pop_front() {
                let served = match item {
                    Incoming::Calls {
                        src,
                        bytes,
                        at,
                        left,
                    } => self.serve_calls(src, bytes, at, left, &mut batch, &mut n),
                    item => {
                        n += 1;
                        self.serve(item)
                    }
                };
                if let Err(e) = served {
                    self.inner.mail.put_back(&mut batch);
                    failed = Some(e);
                    break;
                }
            }
            drop(held);
            self.flush_answers();
            if let Some(e) = failed {
                return Err(e);
            }
        }
        SPARE_QUEUE.with(|q| *q.borrow_mut() = batch);
        n += crate::rma::run_remote_completions(self)?;
        // What the bodies and remote completions called goes out now.
        self.flush_calls()?;
        let k = self.inner.progress_calls.fetch_add(1, Ordering::Relaxed);
        if k.is_multiple_of(LIVENESS_EVERY) {
            self.inner.mail.fail_calls_to_gone(self);
        }
        Ok(n)
    }

    /// Run one piece of arrived work, then credit it back to its sender
    /// when a batch is full (see [`window`](crate::window)).
    fn serve(&self, item: Incoming) -> Result<()> {
        let src = match &item {
            Incoming::Call { src, .. }
            | Incoming::Calls { src, .. }
            | Incoming::Fetch { src, .. } => *src,
            Incoming::Result { .. } | Incoming::Free { .. } => {
                unreachable!("results and frees are chores, not work")
            }
        };
        self.run_work(item);
        self.credit(src)
    }

    /// Run the calls of a batch from `src` (the entries of `bytes` from
    /// `at`, `left` of them), each credited as [`serve`](Self::serve)
    /// does; `n` counts them. If one fails, the rest go back in front of
    /// `batch`.
    fn serve_calls(
        &self,
        src: Rank,
        bytes: Payload,
        mut at: usize,
        mut left: usize,
        batch: &mut std::collections::VecDeque<Incoming>,
        n: &mut usize,
    ) -> Result<()> {
        while let Some((call, used)) = crate::outbox::entry(&bytes[at..]) {
            at += used;
            left -= 1;
            *n += 1;
            self.run_call(self.inner.ids.calls, src, call.ticket, call.id, call.body);
            if let Err(e) = self.credit(src) {
                if left > 0 {
                    batch.push_front(Incoming::Calls {
                        src,
                        bytes,
                        at,
                        left,
                    });
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Count one piece of work from `src` as served, and send its credits
    /// back when a batch of them is full.
    fn credit(&self, src: Rank) -> Result<()> {
        if let Some(n) = self.inner.mail.window.served(src) {
            match self.send(src, self.inner.ids.credit, &[n], &[]) {
                // A sender that left waits for no credit.
                Err(_) if self.ep().conduit().peer_gone(src).is_some() => {}
                sent => sent?,
            }
        }
        Ok(())
    }

    /// Run one piece of arrived work. It is answered whatever happens
    /// (see [`answers`](crate::answers)): nothing of it fails this rank.
    fn run_work(&self, item: Incoming) {
        match item {
            Incoming::Call {
                src,
                ticket,
                id,
                body,
            } => match self.take_body(src, body) {
                Ok(args) => self.run_call(self.inner.ids.call, src, ticket, id, &args),
                Err(e) => self.fail(
                    src,
                    ticket,
                    &format!("{} could not read the call's arguments: {e}", self.rank()),
                ),
            },
            Incoming::Fetch { src, ticket, id } => {
                // None: queued until the object exists here.
                if let Some(out) = self.inner.dist.serve(self, id, src, ticket) {
                    self.answer(src, ticket, out);
                }
            }
            Incoming::Calls { .. } => unreachable!("a batch of calls is served call by call"),
            Incoming::Result { .. } | Incoming::Free { .. } => {
                unreachable!("results and frees are chores, not work")
            }
        }
    }

    /// Run call `ticket` of `src`, which came through handler `via`:
    /// function `id` on `args`, and answer it (see
    /// [`answers`](crate::answers)).
    fn run_call(&self, via: HandlerId, src: Rank, ticket: u32, id: FnId, args: &[u8]) {
        let Some(run) = self.inner.names.resolve(id) else {
            self.inner.ep.malformed(
                src,
                via.index(),
                "rgex-pgas: an rpc names no function of this program (bad tag)",
            );
            let why = format!(
                "{} found no function for the call's name (a damaged message?)",
                self.rank()
            );
            return self.fail(src, ticket, &why);
        };
        run(self, src, ticket, args)
    }

    /// The bytes of a body: inline, or read from where the sender staged
    /// them.
    fn take_body(&self, src: Rank, body: Returned) -> Result<Payload> {
        match body {
            Returned::Bytes(b) => Ok(b),
            Returned::Staged { at, len } => self.fetch_staged(src, at, len).map(Payload::from_vec),
            Returned::Failed(why) => Err(rgex::Error::Failed(why).into()),
        }
    }

    /// Read `len` bytes that `src` staged at `at` in its segment, then
    /// tell it to free them.
    fn fetch_staged(&self, src: Rank, at: u64, len: u64) -> Result<Vec<u8>> {
        let got = self.wait(async {
            let g = self.inner.ep.get_nb(
                vec![0u8; len as usize],
                GlobalAddr::new(src, at),
                Flags::empty(),
            )?;
            Ok(g.await?)
        });
        let freed = self.send(src, self.inner.ids.free, &[], &at.to_le_bytes());
        let bytes = got?;
        freed?;
        Ok(bytes)
    }

    /// The pause of a loop that waits on progress, at its `idle`-th
    /// round that found nothing: give the core away every 64th round, or
    /// every round when oversubscribed (more ranks than cores: rgex's
    /// polite mode).
    fn pause(&self, idle: u64) {
        if self.inner.ep.polite() || idle.is_multiple_of(64) {
            std::thread::yield_now();
        }
    }

    /// Take room in the window to `target` for one piece of work (see
    /// [`window`](crate::window)). While the window is full this makes
    /// user-level progress: it runs this rank's own arrived work, as
    /// [`progress`](Self::progress) does, so two ranks that fill their
    /// windows to each other both drain. Inside user-level progress (an
    /// RPC body, a remote completion) it cannot, since nested bodies are
    /// not run and two bodies could wait on each other: the room is
    /// taken past the limit instead. Fails naming `target` if it left
    /// the job.
    pub(crate) fn reserve(&self, target: Rank) -> Result<()> {
        let w = &self.inner.mail.window;
        if w.try_take(target) {
            return Ok(());
        }
        if IN_USER_PROGRESS.with(Cell::get) {
            w.overdraw(target);
            return Ok(());
        }
        if rgex::observe::on() {
            rgex::observe::pgas(rgex::observe::PgasEvent::WindowStall);
        }
        let mut idle = 0u64;
        loop {
            let n = self.progress()?;
            if w.try_take(target) {
                return Ok(());
            }
            if n > 0 {
                continue;
            }
            idle += 1;
            if idle.is_multiple_of(64) {
                if let Some(why) = self.ep().conduit().peer_gone(target) {
                    return Err(rgex::Error::PeerUnreachable {
                        what: format!(
                            "rgex-pgas: waiting for room in the window of {} calls to it",
                            w.limit()
                        ),
                        from: self.rank(),
                        rank: target,
                        why,
                    }
                    .into());
                }
            }
            self.pause(idle);
        }
    }

    /// A ticket for a call to `target` whose result someone will wait
    /// for, or an error when [`MAX_OPEN`](crate::calls::MAX_OPEN) calls
    /// already wait here.
    pub(crate) fn open_call(&self, target: Rank) -> Result<u32> {
        self.inner.mail.open(target).ok_or_else(|| {
            rgex::Error::Failed(format!(
                "rgex-pgas: {}: a call to {target}: {} calls already wait for their results on this rank (the most there can be); await some before making more",
                self.rank(),
                crate::calls::MAX_OPEN
            ))
            .into()
        })
    }

    /// Send `payload` to handler `h` of `peer` with `args`.
    pub(crate) fn send(
        &self,
        peer: Rank,
        h: HandlerId,
        args: &[u32],
        payload: &[u8],
    ) -> Result<()> {
        let n = payload.len();
        self.send_with(peer, h, args, n, n, |b| {
            b[..n].copy_from_slice(payload);
            Ok(Some(n))
        })?;
        Ok(())
    }

    /// Prepare a Medium of `least..=most` bytes for `peer`, let `fill`
    /// write it in place and say how many bytes it used, and send them.
    /// Waits while there is no room (back-pressure by IMMEDIATE, never an
    /// unbounded queue), making user-level progress meanwhile outside RPC
    /// bodies (the calls that filled the network to this rank run, as
    /// when a call waits for room in its window: see
    /// [`reserve`](Self::reserve)), internal progress inside them. `fill` may
    /// say it does not fit (`None`: nothing sent, `Ok(false)`) or fail.
    pub(crate) fn send_with(
        &self,
        peer: Rank,
        h: HandlerId,
        args: &[u32],
        least: usize,
        most: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<Option<usize>>,
    ) -> Result<bool> {
        let mut fill = Some(fill);
        let mut spins = 0u64;
        loop {
            let ep = &self.inner.ep;
            match ep.prepare_request_medium(peer, None, least, most, args.len(), Flags::IMMEDIATE) {
                Ok(mut p) => {
                    let f = fill.take().expect("fill runs once");
                    return match f(p.buf()) {
                        Ok(Some(len)) => {
                            p.commit(h, args, len)?;
                            Ok(true)
                        }
                        Ok(None) => {
                            p.cancel();
                            Ok(false)
                        }
                        Err(e) => {
                            p.cancel();
                            Err(e)
                        }
                    };
                }
                Err(rgex::Error::WouldBlock { .. }) => {
                    spins += 1;
                    let n = if IN_USER_PROGRESS.with(Cell::get) {
                        self.poll()?
                    } else {
                        self.progress()?
                    };
                    if n == 0 {
                        self.pause(spins);
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Send `prefix` then `body` to handler `h` of `peer` with args
    /// `[ticket, kind]`: in place in a Medium when it fits (serialized
    /// straight into rgex's buffer), else staged in this rank's heap for
    /// the peer to read (a rendezvous; the peer frees it by `free`).
    /// `what` names the body for a serialization error.
    pub(crate) fn send_body(
        &self,
        peer: Rank,
        h: HandlerId,
        ticket: u32,
        prefix: &[u8],
        body: &Body<'_>,
        what: impl Fn() -> String,
    ) -> Result<()> {
        let ser = |e: postcard::Error| Error::Serialization {
            rank: self.rank(),
            what: what(),
            why: e.to_string(),
        };
        let k = prefix.len();
        // The body's size first (a walk that writes nothing), so the
        // Medium asked for is exactly what is written: a conduit may
        // prepare every byte it grants (smp fetches them from the
        // receiver's core in a writable state), and a body that does not
        // fit is staged without being encoded in vain.
        let len = k + body.len().map_err(ser)?;
        if len <= self.inner.ep.max_medium(peer, 2) {
            let sent = self.send_with(peer, h, &[ticket, INLINE], len, len, |b| {
                b[..k].copy_from_slice(prefix);
                let used = body.write(&mut b[k..len]).map_err(ser)?;
                Ok(Some(k + used))
            })?;
            debug_assert!(sent, "the fill always fits");
            return Ok(());
        }
        let bytes = body.to_vec().map_err(ser)?;
        let at = self
            .inner
            .heap
            .alloc::<Staged>(bytes.len() as u64, 1)
            .map_err(|e| match e {
                Error::OutOfHeap {
                    rank,
                    len,
                    align,
                    free,
                    largest,
                    heap,
                    ..
                } => Error::OutOfHeap {
                    rank,
                    what: format!(
                        "staging {} (a body larger than a message waits in its sender's heap until {peer} reads it)",
                        what()
                    ),
                    len,
                    align,
                    free,
                    largest,
                    heap,
                },
                e => e,
            })?;
        let mut b = prefix.to_vec();
        b.extend_from_slice(&at.to_le_bytes());
        b.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        let sent = self
            .client()
            .endpoint()
            .segment()
            .write(at, &bytes)
            .map_err(Error::from)
            .and_then(|()| self.send(peer, h, &[ticket, STAGED], &b));
        if sent.is_err() {
            self.inner.heap.free::<Staged>(at)?;
        }
        sent
    }

    /// Run `fut` to completion on this thread, making user-level progress
    /// while it is pending (UPC++'s `future.wait()`).
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// let p = pg.new_::<u64>(5)?;
    /// assert_eq!(pg.wait(pg.rget(p)?)?, 5);
    /// # Ok(()) }
    /// ```
    pub fn wait<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        if IN_USER_PROGRESS.with(Cell::get) {
            // A body waits: what it waits for may come only once its
            // batch's callers have their results.
            self.flush_answers();
        }
        let mut fut = pin!(fut);
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut idle = 0u64;
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return v;
            }
            if self.progress()? == 0 {
                idle += 1;
                self.pause(idle);
            }
        }
    }

    /// A future that makes user-level progress each time it is polled and
    /// stays pending until its [`stopper`](crate::ProgressTask::stopper)
    /// says stop: run it as one more task on an executor whose other
    /// tasks await rgex-pgas futures.
    pub fn progress_task(&self) -> crate::ProgressTask {
        crate::ProgressTask::new(self.clone())
    }

    /// Wait at a barrier of every rank, making user-level progress
    /// (at least once, so work that arrived before it runs).
    pub fn barrier(&self) -> Result<()> {
        self.progress()?;
        self.wait(self.barrier_async()?)
    }

    /// A barrier of every rank as a future.
    pub fn barrier_async(&self) -> Result<impl Future<Output = Result<()>> + 'static> {
        self.flush_calls()?;
        let ev = self.inner.client.world().barrier_nb()?;
        Ok(async move { Ok(ev.await?) })
    }

    /// Outcomes on this rank that could reach nobody: bodies called by
    /// [`rpc_ff`](Self::rpc_ff) that failed, and failures of calls whose
    /// answer could not be sent even as a failure to a caller still in
    /// the job; each was printed (the first 16).
    pub fn lost_failures(&self) -> u64 {
        self.inner.lost_failures.load(Ordering::Relaxed)
    }

    /// The flow-control window: how many calls (rpc, rpc_ff, rput_then's
    /// call, dist_object fetches) this rank may have waiting at each
    /// target, unserved. `RGEX_PGAS_WINDOW` sets it (default 256).
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) {
    /// println!("at most {} calls waiting at each target", pg.window());
    /// # }
    /// ```
    pub fn window(&self) -> u32 {
        self.inner.mail.window.limit()
    }

    /// Calls sent to `target` that it has not yet credited back as
    /// served (at most [`window`](Self::window) outside RPC bodies, plus
    /// up to half a window served there whose credit is still to come).
    pub fn outstanding(&self, target: Rank) -> u32 {
        self.inner.mail.window.outstanding(target)
    }

    /// The most pieces of work (calls, fetches) that ever waited at once
    /// on this rank for user-level progress.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) {
    /// assert!(pg.work_peak() <= pg.size() as usize * pg.window() as usize);
    /// # }
    /// ```
    pub fn work_peak(&self) -> usize {
        self.inner.mail.peak()
    }
}

/// The type staged bodies are allocated as (so nothing else frees them).
pub(crate) struct Staged;

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
