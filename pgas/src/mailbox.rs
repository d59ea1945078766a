//! What rgex-pgas's handlers receive: work queued for user-level
//! progress (calls, dist_object fetches), chores any progress may do
//! (reading a staged result, freeing what a peer has read), and the
//! table of calls waiting for their results.

use crate::calls::{Calls, Counted, COUNTED};
use crate::fn_id::FnId;
use crate::runtime::{lock, Ids, Payload, Pgas, Returned, FAILED, INLINE, STAGED};
use crate::window::Window;
use rgex::{HandlerTable, Message, Rank, Token};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;

/// A piece of arrived work.
pub(crate) enum Incoming {
    /// Run function `id` on the arguments in `body`; answer `ticket`
    /// (0: nobody waits).
    Call {
        src: Rank,
        ticket: u32,
        id: FnId,
        body: Returned,
    },
    /// The calls `src` held for this rank and sent together (see
    /// [`outbox`](crate::outbox)): the entries of `bytes` from `at` on,
    /// `left` of them.
    Calls {
        src: Rank,
        bytes: Payload,
        at: usize,
        left: usize,
    },
    /// Send a copy of dist_object `id` back for `ticket`.
    Fetch { src: Rank, ticket: u32, id: u64 },
    /// Read the result `src` staged for `ticket`.
    Result {
        src: Rank,
        ticket: u32,
        at: u64,
        len: u64,
    },
    /// A peer has read what this rank staged at `at`.
    Free { at: u64 },
}

impl Incoming {
    /// The pieces of work it is (a batch of calls counts each call).
    fn pieces(&self) -> usize {
        match self {
            Incoming::Calls { left, .. } => *left,
            _ => 1,
        }
    }
}

/// Work queued for user-level progress.
#[derive(Default)]
struct Work {
    queue: VecDeque<Incoming>,
    /// The pieces of work in `queue` (see [`Incoming::pieces`]).
    pieces: usize,
}

/// The handlers' side of the runtime.
pub(crate) struct Mailbox {
    work: Mutex<Work>,
    /// Whether `work` may hold something: set under its lock by a push,
    /// cleared under it by [`take_work`](Self::take_work), read without
    /// it so an idle progress skips the lock. Relaxed: a hint; the queue
    /// itself is read under the lock, and a waiter that reads a stale
    /// `false` polls again.
    has_work: AtomicBool,
    /// The most pieces of work ever queued at once (written under
    /// `work`'s lock only; a batch of calls counts each call).
    peak: AtomicUsize,
    chores: Mutex<VecDeque<Incoming>>,
    /// Whether `chores` may hold something (as `has_work`).
    has_chores: AtomicBool,
    calls: Mutex<Calls>,
    /// How much work this rank may have waiting at each target.
    pub window: Window,
}

impl Mailbox {
    pub fn new(window: Window) -> Self {
        Mailbox {
            work: Mutex::default(),
            has_work: AtomicBool::new(false),
            peak: AtomicUsize::new(0),
            chores: Mutex::default(),
            has_chores: AtomicBool::new(false),
            calls: Mutex::default(),
            window,
        }
    }

    /// The most pieces of work that were ever queued here at once.
    pub fn peak(&self) -> usize {
        // Relaxed: a statistic.
        self.peak.load(Ordering::Relaxed)
    }

    /// Queue a piece of work for user-level progress.
    fn push_work(&self, item: Incoming) {
        let mut w = lock(&self.work);
        w.pieces += item.pieces();
        w.queue.push_back(item);
        // Relaxed (both): a hint and a statistic, written under the lock
        // of the queue they describe (see the fields).
        self.has_work.store(true, Ordering::Relaxed);
        if w.pieces > self.peak.load(Ordering::Relaxed) {
            self.peak.store(w.pieces, Ordering::Relaxed);
        }
    }

    /// Move all the work queued now into `into` (empty), in order, with
    /// one lock: what arrives meanwhile waits for the next call.
    pub fn take_work(&self, into: &mut VecDeque<Incoming>) {
        // Relaxed: a hint (see `has_work`).
        if !self.has_work.load(Ordering::Relaxed) {
            return;
        }
        let mut w = lock(&self.work);
        std::mem::swap(&mut w.queue, into);
        w.pieces = 0;
        self.has_work.store(false, Ordering::Relaxed);
    }

    /// Put back work taken by [`take_work`](Self::take_work) and not run
    /// (a piece of it failed), ahead of anything that came since.
    pub fn put_back(&self, rest: &mut VecDeque<Incoming>) {
        if rest.is_empty() {
            return;
        }
        let mut w = lock(&self.work);
        while let Some(item) = rest.pop_back() {
            w.pieces += item.pieces();
            w.queue.push_front(item);
        }
        // Relaxed: a hint (see `has_work`).
        self.has_work.store(true, Ordering::Relaxed);
    }

    /// Queue a chore for any progress.
    fn push_chore(&self, item: Incoming) {
        let mut q = lock(&self.chores);
        q.push_back(item);
        // Relaxed: a hint (see `has_work`), written under the lock.
        self.has_chores.store(true, Ordering::Relaxed);
    }

    pub fn pop_chore(&self) -> Option<Incoming> {
        // Relaxed: a hint (see `has_work`).
        if !self.has_chores.load(Ordering::Relaxed) {
            return None;
        }
        let mut q = lock(&self.chores);
        let c = q.pop_front();
        if q.is_empty() {
            self.has_chores.store(false, Ordering::Relaxed);
        }
        c
    }

    /// A ticket for a call to `target` (never 0), or `None` when
    /// [`MAX_OPEN`](crate::calls::MAX_OPEN) calls already wait here.
    pub fn open(&self, target: Rank) -> Option<u32> {
        lock(&self.calls).open(target)
    }

    /// A ticket for a promise's calls, or `None` when
    /// [`MAX_OPEN`](crate::calls::MAX_OPEN) calls already wait here.
    pub fn open_counted(&self) -> Option<u32> {
        lock(&self.calls).open_counted()
    }

    /// One call of promise `ticket` to `target` was answered (`failure`:
    /// it failed, and why).
    pub fn count(&self, ticket: u32, target: Rank, failure: Option<String>) {
        let waker = lock(&self.calls).count(ticket, target, failure);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Promise `ticket` made `issued[t]` calls to each target `t`.
    pub fn finalize(&self, ticket: u32, issued: Vec<u64>) {
        lock(&self.calls).finalize(ticket, issued);
    }

    /// What finalized promise `ticket`'s calls came to, once all were
    /// answered (the ticket is then closed); else remember `waker`.
    pub fn take_counted(&self, ticket: u32, waker: &Waker) -> Option<Counted> {
        lock(&self.calls).take_counted(ticket, waker)
    }

    /// Forget `ticket` (its future was dropped, or its send failed).
    pub fn close(&self, ticket: u32) {
        lock(&self.calls).close(ticket);
    }

    /// `ticket`'s outcome came (a second one, from a damaged message, or
    /// one for a forgotten call, is dropped).
    pub fn complete(&self, ticket: u32, r: Returned) {
        let waker = lock(&self.calls).complete(ticket, r);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// The results `src` sent in a batch (see [`answers`](crate::answers)),
    /// each completed as by [`complete`](Self::complete) (or counted, for
    /// a promise's call), under one lock; false if the batch was cut
    /// short (what came before the cut is kept).
    pub fn complete_all(&self, src: Rank, batch: &[u8]) -> bool {
        let mut whole = true;
        let mut wakers = Vec::new();
        {
            let mut c = lock(&self.calls);
            for entry in crate::answers::entries(batch) {
                match entry {
                    Some((ticket, _)) if ticket & COUNTED != 0 => {
                        wakers.extend(c.count(ticket, src, None))
                    }
                    Some((ticket, bytes)) => wakers
                        .extend(c.complete(ticket, Returned::Bytes(Payload::from_slice(bytes)))),
                    None => whole = false,
                }
            }
        }
        wakers.into_iter().for_each(Waker::wake);
        whole
    }

    /// `ticket`'s outcome if it came (the ticket is then closed), else
    /// remember `waker`.
    pub fn take(&self, ticket: u32, waker: &Waker) -> Option<Returned> {
        lock(&self.calls).take(ticket, waker)
    }

    /// Fail the calls whose target the conduit says is gone (a result
    /// will never come from it).
    pub fn fail_calls_to_gone(&self, pg: &Pgas) {
        let targets = lock(&self.calls).targets();
        for t in targets {
            let Some(why) = pg.ep().conduit().peer_gone(t) else {
                continue;
            };
            let why = format!("{t} is unreachable: {why}");
            let wakers = lock(&self.calls).fail_to(t, &why);
            wakers.into_iter().for_each(Waker::wake);
        }
    }
}

/// Register rgex-pgas's handlers (at init, on every rank).
pub(crate) fn register(t: &HandlerTable, mail: Arc<Mailbox>) -> rgex::Result<Ids> {
    let m = mail.clone();
    let call = t.register("pgas.call", move |tok: &Token<'_>, msg: &Message<'_>| {
        let p = msg.payload();
        let parsed =
            FnId::read(p).and_then(|id| Some((id, body(msg.arg(1), p.get(FnId::LEN..)?)?)));
        match parsed {
            Some((id, body)) => m.push_work(Incoming::Call {
                src: tok.src(),
                ticket: msg.arg(0),
                id,
                body,
            }),
            None => {
                tok.malformed("rgex-pgas: a call without its function's name or of unknown kind")
            }
        }
    })?;
    let m = mail.clone();
    let calls = t.register("pgas.calls", move |tok: &Token<'_>, msg: &Message<'_>| {
        let p = msg.payload();
        let (n, whole) = crate::outbox::whole_entries(p);
        if whole < p.len() {
            tok.malformed("rgex-pgas: a batch of calls cut short (the calls before the cut run)");
        }
        if n > 0 {
            m.push_work(Incoming::Calls {
                src: tok.src(),
                bytes: Payload::from_slice(&p[..whole]),
                at: 0,
                left: n,
            });
        }
    })?;
    let m = mail.clone();
    let ret = t.register("pgas.ret", move |tok: &Token<'_>, msg: &Message<'_>| {
        let ticket = msg.arg(0);
        if ticket & COUNTED != 0 {
            // A promise's call: acknowledged, or failed (and why).
            return match msg.arg(1) {
                INLINE => m.count(ticket, tok.src(), None),
                FAILED => m.count(
                    ticket,
                    tok.src(),
                    Some(String::from_utf8_lossy(msg.payload()).into_owned()),
                ),
                _ => tok.malformed("rgex-pgas: an acknowledgement of unknown kind"),
            };
        }
        match (msg.arg(1), body(msg.arg(1), msg.payload())) {
            (FAILED, _) => m.complete(
                ticket,
                Returned::Failed(String::from_utf8_lossy(msg.payload()).into_owned()),
            ),
            (_, Some(Returned::Staged { at, len })) => m.push_chore(Incoming::Result {
                src: tok.src(),
                ticket,
                at,
                len,
            }),
            (_, Some(r)) => m.complete(ticket, r),
            (_, None) => tok.malformed("rgex-pgas: a result of unknown kind"),
        }
    })?;
    let m = mail.clone();
    let fetch = t.register(
        "pgas.fetch",
        move |tok: &Token<'_>, msg: &Message<'_>| match word(msg.payload(), 0) {
            Some(id) => m.push_work(Incoming::Fetch {
                src: tok.src(),
                ticket: msg.arg(0),
                id,
            }),
            None => tok.malformed("rgex-pgas: a dist_object fetch without its id"),
        },
    )?;
    let m = mail.clone();
    let free = t.register(
        "pgas.free",
        move |tok: &Token<'_>, msg: &Message<'_>| match word(msg.payload(), 0) {
            Some(at) => m.push_chore(Incoming::Free { at }),
            None => tok.malformed("rgex-pgas: a free without its offset"),
        },
    )?;
    let mail_for_rets = mail.clone();
    let m = mail;
    let credit = t.register("pgas.credit", move |tok: &Token<'_>, msg: &Message<'_>| {
        let fits = match msg.args() {
            [n] => m.window.credited(tok.src(), *n),
            _ => false,
        };
        if !fits {
            tok.malformed("rgex-pgas: a credit for more work than was sent there");
        }
    })?;
    let m = mail_for_rets;
    let rets = t.register("pgas.rets", move |tok: &Token<'_>, msg: &Message<'_>| {
        if !m.complete_all(tok.src(), msg.payload()) {
            tok.malformed("rgex-pgas: a batch of results cut short");
        }
    })?;
    Ok(Ids {
        call,
        calls,
        ret,
        fetch,
        free,
        credit,
        rets,
    })
}

/// A body of kind `kind` ([`INLINE`] or [`STAGED`]) in `rest`.
fn body(kind: u32, rest: &[u8]) -> Option<Returned> {
    match kind {
        INLINE => Some(Returned::Bytes(Payload::from_slice(rest))),
        STAGED => Some(Returned::Staged {
            at: word(rest, 0)?,
            len: word(rest, 8)?,
        }),
        _ => None,
    }
}

/// The little-endian u64 at `at` of `b`.
fn word(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}
