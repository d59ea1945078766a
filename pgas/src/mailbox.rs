//! What rgex-pgas's handlers receive: work queued for user-level
//! progress (calls, dist_object fetches), chores any progress may do
//! (reading a staged result, freeing what a peer has read), and the
//! table of calls waiting for their results.

use crate::fn_id::FnId;
use crate::runtime::{lock, Ids, Pgas, Returned, FAILED, INLINE, STAGED};
use rgex::{HandlerTable, Message, Rank, Token};
use std::collections::{HashMap, VecDeque};
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
    waiting: HashMap<u32, Waiting>,
}

/// The handlers' side of the runtime.
#[derive(Default)]
pub(crate) struct Mailbox {
    work: Mutex<VecDeque<Incoming>>,
    chores: Mutex<VecDeque<Incoming>>,
    calls: Mutex<Calls>,
}

impl Mailbox {
    pub fn queued(&self) -> usize {
        lock(&self.work).len()
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
        lock(&self.calls).waiting.remove(&ticket);
    }

    /// `ticket`'s outcome came.
    pub fn complete(&self, ticket: u32, r: Returned) {
        let waker = {
            let mut c = lock(&self.calls);
            // None: its future was dropped meanwhile.
            let Some(w) = c.waiting.get_mut(&ticket) else {
                return;
            };
            w.done = Some(r);
            w.waker.take()
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
            let mut t: Vec<Rank> = c
                .waiting
                .values()
                .filter(|w| w.done.is_none())
                .map(|w| w.target)
                .collect();
            t.sort_unstable_by_key(|r| r.0);
            t.dedup();
            t
        };
        for t in targets {
            let Some(why) = pg.ep().conduit().peer_gone(t) else {
                continue;
            };
            let wakers: Vec<Waker> = {
                let mut c = lock(&self.calls);
                c.waiting
                    .values_mut()
                    .filter(|w| w.target == t && w.done.is_none())
                    .filter_map(|w| {
                        w.done = Some(Returned::Failed(format!("{t} is unreachable: {why}")));
                        w.waker.take()
                    })
                    .collect()
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
            Some((id, body)) => lock(&m.work).push_back(Incoming::Call {
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
            Some(id) => lock(&m.work).push_back(Incoming::Fetch {
                src: tok.src(),
                ticket: msg.arg(0),
                id,
            }),
            None => tok.malformed("rgex-pgas: a dist_object fetch without its id"),
        },
    )?;
    let m = mail;
    let free = t.register(
        "pgas.free",
        move |tok: &Token<'_>, msg: &Message<'_>| match word(msg.payload(), 0) {
            Some(at) => lock(&m.chores).push_back(Incoming::Free { at }),
            None => tok.malformed("rgex-pgas: a free without its offset"),
        },
    )?;
    Ok(Ids {
        call,
        ret,
        fetch,
        free,
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
