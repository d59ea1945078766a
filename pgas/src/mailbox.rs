//! What rgex-pgas's handlers receive: work queued for user-level
//! progress (calls, dist_object fetches), chores any progress may do
//! (reading a staged result, freeing what a peer has read), and the
//! table of calls waiting for their results.

use crate::fn_id::FnId;
use crate::int_hash::IntHash;
use crate::runtime::{lock, Ids, Pgas, Returned, FAILED, INLINE, STAGED};
use crate::window::Window;
use rgex::{HandlerTable, Message, Rank, Token};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// A call waiting for its result.
struct Waiting {
    target: Rank,
    done: Option<Returned>,
    waker: Option<Waker>,
}

#[derive(Default)]
struct Calls {
    next: u32,
    waiting: HashMap<u32, Waiting, IntHash>,
    /// Per target rank: how many of `waiting` are to it and not done (so
    /// the liveness check looks at targets, not at every call).
    open_to: Vec<u32>,
}

impl Calls {
    fn open_to(&mut self, target: Rank) -> &mut u32 {
        let i = target.0 as usize;
        if self.open_to.len() <= i {
            self.open_to.resize(i + 1, 0);
        }
        &mut self.open_to[i]
    }

    /// `ticket`'s call is no longer open (done, or forgotten undone).
    fn settle(&mut self, target: Rank) {
        let n = self.open_to(target);
        *n = n.saturating_sub(1);
    }
}

/// The handlers' side of the runtime.
pub(crate) struct Mailbox {
    work: Mutex<VecDeque<Incoming>>,
    /// The most pieces of work ever queued at once.
    peak: AtomicUsize,
    chores: Mutex<VecDeque<Incoming>>,
    calls: Mutex<Calls>,
    /// How much work this rank may have waiting at each target.
    pub window: Window,
}

impl Mailbox {
    pub fn new(window: Window) -> Self {
        Mailbox {
            work: Mutex::default(),
            peak: AtomicUsize::new(0),
            chores: Mutex::default(),
            calls: Mutex::default(),
            window,
        }
    }

    pub fn queued(&self) -> usize {
        lock(&self.work).len()
    }

    /// The most pieces of work that were ever queued here at once.
    pub fn peak(&self) -> usize {
        // Relaxed: a statistic; `push_work` raises it under the queue's lock.
        self.peak.load(Ordering::Relaxed)
    }

    /// Queue a piece of work for user-level progress.
    fn push_work(&self, item: Incoming) {
        let mut q = lock(&self.work);
        q.push_back(item);
        // Relaxed: a statistic, raised under the lock of the queue it
        // measures.
        self.peak.fetch_max(q.len(), Ordering::Relaxed);
    }

    pub fn pop(&self) -> Option<Incoming> {
        lock(&self.work).pop_front()
    }

    pub fn pop_chore(&self) -> Option<Incoming> {
        lock(&self.chores).pop_front()
    }

    /// A ticket for a call to `target` (never 0).
    pub fn open(&self, target: Rank) -> u32 {
        let mut c = lock(&self.calls);
        loop {
            c.next = c.next.wrapping_add(1);
            let t = c.next;
            if t != 0 && !c.waiting.contains_key(&t) {
                *c.open_to(target) += 1;
                c.waiting.insert(
                    t,
                    Waiting {
                        target,
                        done: None,
                        waker: None,
                    },
                );
                return t;
            }
        }
    }

    /// Forget `ticket` (its future was dropped, or its send failed).
    pub fn close(&self, ticket: u32) {
        let mut c = lock(&self.calls);
        if let Some(w) = c.waiting.remove(&ticket) {
            if w.done.is_none() {
                c.settle(w.target);
            }
        }
    }

    /// `ticket`'s outcome came.
    pub fn complete(&self, ticket: u32, r: Returned) {
        let waker = {
            let mut c = lock(&self.calls);
            // None: its future was dropped meanwhile.
            let Some(w) = c.waiting.get_mut(&ticket) else {
                return;
            };
            if w.done.is_some() {
                return; // a second outcome (a damaged message): the first stands
            }
            w.done = Some(r);
            let (target, waker) = (w.target, w.waker.take());
            c.settle(target);
            waker
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// `ticket`'s outcome if it came (the ticket is then closed), else
    /// remember `waker`.
    pub fn take(&self, ticket: u32, waker: &Waker) -> Option<Returned> {
        let mut c = lock(&self.calls);
        let w = c.waiting.get_mut(&ticket)?;
        match w.done.take() {
            Some(r) => {
                c.waiting.remove(&ticket);
                Some(r)
            }
            None => {
                if !w.waker.as_ref().is_some_and(|old| old.will_wake(waker)) {
                    w.waker = Some(waker.clone());
                }
                None
            }
        }
    }

    /// Fail the calls whose target the conduit says is gone (a result
    /// will never come from it).
    pub fn fail_calls_to_gone(&self, pg: &Pgas) {
        let targets: Vec<Rank> = {
            let c = lock(&self.calls);
            (0..c.open_to.len() as u32)
                .filter(|&r| c.open_to[r as usize] > 0)
                .map(Rank)
                .collect()
        };
        for t in targets {
            let Some(why) = pg.ep().conduit().peer_gone(t) else {
                continue;
            };
            let wakers: Vec<Waker> = {
                let mut c = lock(&self.calls);
                let wakers = c
                    .waiting
                    .values_mut()
                    .filter(|w| w.target == t && w.done.is_none())
                    .filter_map(|w| {
                        w.done = Some(Returned::Failed(format!("{t} is unreachable: {why}")));
                        w.waker.take()
                    })
                    .collect();
                *c.open_to(t) = 0;
                wakers
            };
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
    let ret = t.register("pgas.ret", move |tok: &Token<'_>, msg: &Message<'_>| {
        let ticket = msg.arg(0);
        match (msg.arg(1), body(msg.arg(1), msg.payload())) {
            (FAILED, _) => m.complete(
                ticket,
                Returned::Failed(String::from_utf8_lossy(msg.payload()).into_owned()),
            ),
            (_, Some(Returned::Staged { at, len })) => {
                lock(&m.chores).push_back(Incoming::Result {
                    src: tok.src(),
                    ticket,
                    at,
                    len,
                })
            }
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
            Some(at) => lock(&m.chores).push_back(Incoming::Free { at }),
            None => tok.malformed("rgex-pgas: a free without its offset"),
        },
    )?;
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
    Ok(Ids {
        call,
        ret,
        fetch,
        free,
        credit,
    })
}

/// A body of kind `kind` ([`INLINE`] or [`STAGED`]) in `rest`.
fn body(kind: u32, rest: &[u8]) -> Option<Returned> {
    match kind {
        INLINE => Some(Returned::Bytes(rest.to_vec())),
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
