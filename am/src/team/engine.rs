//! The collectives engine: one per client. It owns the handler every
//! collective message arrives on, the mailbox that buffers those messages
//! until the collective (and round) they belong to asks for them, and the
//! list of non-blocking collectives still in flight.
//!
//! Every message is keyed by `(team id, sequence number, tag)`: the team's
//! id keeps teams apart, the per-team sequence number keeps consecutive
//! collectives apart, and the tag names the round or phase inside one
//! collective. Each key is sent to a given rank at most once, so a message
//! that arrives early (from a peer already in a later round or a later
//! collective) simply waits in the mailbox.

use crate::context::in_handler;
use crate::{Accepts, Endpoint, ProtocolId};
use parking_lot::Mutex;
use rgex_core::{Backoff, Category, Completion, Error, Flags, Rank, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// `(team id, sequence number, tag)`.
pub(crate) type Key = (u64, u64, u32);

/// Arguments of a collective message: team id (2), sequence number (2),
/// tag, fragment offset (2), total length (2).
const NARGS: usize = 9;

/// A message being assembled from its fragments.
struct Slot {
    data: Vec<u8>,
    got: usize,
}

type Mailbox = Mutex<HashMap<Key, Slot>>;

/// One step of a collective's state machine. `step` never waits: it sends
/// what it can, takes what has arrived, and says whether it has finished.
pub(crate) trait Step {
    fn step(&mut self, c: &Engine) -> Result<bool>;
}

/// A non-blocking collective in flight.
struct PendingOp {
    op: Mutex<Box<dyn Step + Send>>,
    done: Arc<Completion>,
}

/// See the module documentation.
pub(crate) struct Engine {
    ep: Arc<Endpoint>,
    handler: ProtocolId,
    mailbox: Arc<Mailbox>,
    pending: Mutex<Vec<Arc<PendingOp>>>,
    /// `pending.len()`, readable without the lock on every poll (shared
    /// with the endpoint, which calls the background hook only when it is
    /// not zero).
    in_flight: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("buffered", &self.mailbox.lock().len())
            .field("pending", &self.pending.lock().len())
            .finish()
    }
}

fn split64(x: u64) -> [u32; 2] {
    [x as u32, (x >> 32) as u32]
}

fn join64(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | (u64::from(hi) << 32)
}

impl Engine {
    /// Register the collectives' handler at reserved `index`.
    pub(crate) fn install(ep: &Arc<Endpoint>, index: u8) -> Result<Arc<Self>> {
        let mailbox: Arc<Mailbox> = Arc::default();
        let mb = mailbox.clone();
        let handler = ep.handlers().register_protocol(
            index,
            "rgex.coll",
            Accepts::request(Category::Medium, NARGS as u8),
            move |tok, msg| {
                let a = |i| msg.arg(i);
                let key = (join64(a(0), a(1)), join64(a(2), a(3)), a(4));
                let off = join64(a(5), a(6));
                let total = join64(a(7), a(8));
                let p = msg.payload();
                let mut mb = mb.lock();
                let slot = mb.entry(key).or_insert_with(|| Slot {
                    data: vec![0; usize::try_from(total).unwrap_or(0).min(1 << 20)],
                    got: 0,
                });
                let end = off.checked_add(p.len() as u64);
                match end {
                    Some(end) if end <= slot.data.len() as u64 => {
                        slot.data[off as usize..end as usize].copy_from_slice(p);
                        slot.got += p.len();
                    }
                    _ => eprintln!(
                        "rgex: {}: dropped a malformed collective fragment from {} \
                         (offset {off}, {} bytes, message of {} bytes)",
                        tok.endpoint().rank(),
                        tok.src(),
                        p.len(),
                        slot.data.len()
                    ),
                }
            },
        )?;
        let engine = Arc::new(Engine {
            ep: ep.clone(),
            handler,
            mailbox,
            pending: Mutex::new(Vec::new()),
            in_flight: Arc::new(AtomicUsize::new(0)),
        });
        // Weak: the engine holds the endpoint; the hook must not hold it
        // back. The endpoint checks the count first, so an idle poll costs
        // one load, not a call and a reference-count update.
        let weak = Arc::downgrade(&engine);
        ep.set_background(
            Box::new(move || weak.upgrade().map_or(0, |e| e.step_pending())),
            engine.in_flight.clone(),
        )?;
        Ok(engine)
    }

    /// Send `data` to `to` under `key`, in as many Medium fragments as it
    /// takes (one empty message for no data).
    pub(crate) fn send(&self, to: Rank, key: Key, data: &[u8]) -> Result<()> {
        let frag = self.ep.max_medium(to, NARGS).max(1);
        let [t0, t1] = split64(key.0);
        let [s0, s1] = split64(key.1);
        let [l0, l1] = split64(data.len() as u64);
        let mut off = 0usize;
        loop {
            let end = (off + frag).min(data.len());
            let [o0, o1] = split64(off as u64);
            let args = [t0, t1, s0, s1, key.2, o0, o1, l0, l1];
            self.ep
                .request_medium(to, self.handler, &args, &data[off..end], Flags::empty())?;
            off = end;
            if off >= data.len() {
                return Ok(());
            }
        }
    }

    /// The message for `key`, if it has arrived whole.
    pub(crate) fn take(&self, key: Key) -> Option<Vec<u8>> {
        let mut mb = self.mailbox.lock();
        let whole = mb.get(&key).is_some_and(|s| s.got == s.data.len());
        if whole {
            mb.remove(&key).map(|s| s.data)
        } else {
            None
        }
    }

    /// Run handlers and advance the non-blocking collectives in flight.
    /// Returns how many things happened. Inside a handler only replies are
    /// drained (collectives send requests, which a handler may not).
    pub(crate) fn progress_all(&self) -> usize {
        // The endpoint's poll runs handlers and, outside handlers, calls
        // `step_pending` through the background hook set in `install`.
        rgex_core::Progress::progress(&*self.ep)
    }

    /// Advance the non-blocking collectives in flight by one step each.
    /// Called through the background hook, which the endpoint calls only
    /// when `in_flight` is not zero.
    fn step_pending(&self) -> usize {
        let mut n = 0;
        let snapshot: Vec<Arc<PendingOp>> = self.pending.lock().clone();
        for p in snapshot {
            // Another thread stepping it is as good as stepping it here.
            let Some(mut op) = p.op.try_lock() else {
                continue;
            };
            let finished = match op.step(self) {
                Ok(done) => done,
                Err(e) => {
                    eprintln!(
                        "rgex: {}: a non-blocking collective failed: {e}",
                        self.ep.rank()
                    );
                    true
                }
            };
            drop(op);
            if finished {
                let mut pending = self.pending.lock();
                pending.retain(|q| !Arc::ptr_eq(q, &p));
                self.in_flight.store(pending.len(), Ordering::Relaxed);
                drop(pending);
                p.done.done();
                n += 1;
            }
        }
        n
    }

    /// Run `op` to completion, polling (and advancing the other collectives
    /// in flight) while it waits.
    pub(crate) fn run(&self, op: &mut dyn Step) -> Result<()> {
        let mut backoff = Backoff::new(self.ep.polite());
        loop {
            if op.step(self)? {
                return Ok(());
            }
            if self.progress_all() == 0 {
                backoff.snooze();
            } else {
                backoff.reset();
            }
        }
    }

    /// Start `op` in the background; the event completes when it finishes.
    pub(crate) fn start(
        self: &Arc<Self>,
        mut op: Box<dyn Step + Send>,
    ) -> Result<rgex_core::Event> {
        if op.step(self)? {
            return Ok(rgex_core::Event::done());
        }
        let done = Completion::new(1);
        let mut pending = self.pending.lock();
        pending.push(Arc::new(PendingOp {
            op: Mutex::new(op),
            done: done.clone(),
        }));
        self.in_flight.store(pending.len(), Ordering::Relaxed);
        drop(pending);
        let progress: Arc<dyn rgex_core::Progress> = self.clone();
        Ok(rgex_core::Event::pending(done, progress))
    }
}

impl rgex_core::Progress for Engine {
    fn progress(&self) -> usize {
        self.progress_all()
    }

    fn polite(&self) -> bool {
        self.ep.polite()
    }
}

/// Refuse collectives inside handlers.
pub(crate) fn not_in_handler(what: &'static str) -> Result<()> {
    if in_handler() {
        Err(Error::InHandler { what })
    } else {
        Ok(())
    }
}
