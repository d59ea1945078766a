//! The collectives engine: one per client. It owns the handler every
//! collective message arrives on, the teams this rank knows (what a
//! peer's message is checked against), the mailbox that buffers messages
//! until the collective (and round) they belong to asks for them, and the
//! list of non-blocking collectives still in flight.
//!
//! Every message is keyed by `(team id, sequence number, tag)` and its
//! sender: the team's id keeps teams apart, the per-team sequence number
//! keeps consecutive collectives apart, the tag names the round or phase
//! inside one collective, and a message is taken only from the member the
//! algorithm expects. Each key is sent to a given rank at most once, so a
//! message that arrives early (from a peer already in a later round or a
//! later collective) simply waits in the mailbox. A message that breaks
//! the protocol (its form, an unknown team, a sender outside the team, a
//! collective finished here or too far ahead, a fragment that contradicts
//! the others) is dropped, reported with its sender and counted.

use super::key_hash::KeyMap;
use super::mailbox::Mailbox;
use super::pool::Pool;
use super::registry::{Registry, Verdict};
use super::wire::{self, Fragment, Key, NARGS};
use crate::context::in_handler;
use crate::{Abandon, Accepts, Endpoint, ProtocolId};
use parking_lot::Mutex;
use rgex_core::{Backoff, Category, Error, Flags, OpCounter, Rank, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What the handler and the collectives share.
#[derive(Default)]
struct State {
    teams: Registry,
    mailbox: Mailbox,
    /// Per collective `(team, seq)` in flight, the member whose message
    /// its last step looked for and did not find: what it waits on (a
    /// member that has gone matters only there, see `member_gone`).
    blocked_on: KeyMap<(u64, u64), Rank>,
}

/// Malformed collective messages received: counted here for the teams
/// ([`Team::malformed_messages`](crate::Team::malformed_messages)),
/// and reported through the endpoint like any protocol's
/// ([`Endpoint::malformed`]).
struct Malformed {
    index: u8,
    count: AtomicU64,
}

impl Malformed {
    fn report(&self, ep: &Endpoint, from: Rank, why: &str) {
        // Relaxed: a statistic; nothing is published through it.
        self.count.fetch_add(1, Ordering::Relaxed);
        ep.malformed(from, self.index, why);
    }
}

/// One step of a collective's state machine. `step` never waits: it sends
/// what it can, takes what has arrived, and says whether it has finished.
pub(crate) trait Step {
    fn step(&mut self, c: &Engine) -> Result<bool>;
    /// The collective: `(team id, sequence number)`.
    fn id(&self) -> (u64, u64);
}

/// A non-blocking collective in flight.
struct PendingOp {
    /// The collective's state; `None` once a thread has finished it
    /// (another thread may still hold this entry from its snapshot of
    /// the pending list, and must not step or complete it again).
    op: Mutex<Option<Box<dyn Step + Send>>>,
    done: Arc<OpCounter>,
    /// The team's handle, kept until the collective finishes: dropping
    /// the last handle forgets the team, whose messages would then be
    /// refused.
    _team: Arc<dyn Send + Sync>,
}

thread_local! {
    /// The buffer of this thread's `step_pending` snapshots.
    static SNAPSHOT: std::cell::Cell<Vec<Arc<PendingOp>>> = const { std::cell::Cell::new(Vec::new()) };
}

/// See the module documentation.
pub(crate) struct Engine {
    ep: Arc<Endpoint>,
    handler: ProtocolId,
    state: Arc<Mutex<State>>,
    malformed: Arc<Malformed>,
    pending: Mutex<Vec<Arc<PendingOp>>>,
    /// `pending.len()`, readable without the lock on every poll (shared
    /// with the endpoint, which calls the background hook only when it is
    /// not zero).
    in_flight: Arc<AtomicUsize>,
    /// Peers found gone while collectives waited (see [`Abandon`]), with
    /// why; `any_departed` says whether the list is empty without its
    /// lock.
    departed: Mutex<Vec<(Rank, String)>>,
    any_departed: AtomicBool,
    /// The buffers of large messages (the mailbox's own pool).
    pool: Arc<Pool>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("buffered", &self.state.lock().mailbox.len())
            .field("pending", &self.pending.lock().len())
            .field("malformed", &self.malformed_count())
            .finish()
    }
}

/// File a message from `from` that reached the collectives' handler, or
/// say why not.
fn receive(
    state: &Mutex<State>,
    from: Rank,
    category: rgex_core::Category,
    request: bool,
    args: &[u32],
    p: &[u8],
) -> std::result::Result<(), String> {
    let f = Fragment::parse(category, request, args, p.len())?;
    let (team, seq, tag) = f.key;
    let mut st = state.lock();
    match st.teams.check(from, team, seq) {
        Verdict::Accept => st
            .mailbox
            .deposit(from, &f, p)
            .map_err(|why| format!("{why} (collective #{seq} of team {team:#x}, tag {tag:#x})")),
        Verdict::Straggler => Ok(()),
        Verdict::Malformed(why) => Err(why),
    }
}

impl Engine {
    /// Register the collectives' handler at reserved `index`.
    pub(crate) fn install(ep: &Arc<Endpoint>, index: u8) -> Result<Arc<Self>> {
        let state: Arc<Mutex<State>> = Arc::default();
        // The world team (id 0) from the start: peers may send for it as
        // soon as they are up.
        let world: Vec<Rank> = (0..ep.size()).map(Rank).collect();
        state.lock().teams.register(0, &world);
        let malformed = Arc::new(Malformed {
            index,
            count: AtomicU64::new(0),
        });
        let pool = state.lock().mailbox.pool().clone();
        let (st, bad) = (state.clone(), malformed.clone());
        // The handler's own checks cover what `Accepts` does (they are
        // unit-tested alone); both say the same.
        let accepts = Accepts::request(Category::Medium, NARGS as u8);
        let handler =
            ep.handlers()
                .register_protocol(index, "rgex.coll", accepts, move |tok, msg| {
                    let from = tok.src();
                    let got = receive(
                        &st,
                        from,
                        msg.category(),
                        tok.is_request(),
                        msg.args(),
                        msg.payload(),
                    );
                    if let Err(why) = got {
                        bad.report(tok.endpoint(), from, &why);
                    }
                })?;
        let engine = Arc::new(Engine {
            ep: ep.clone(),
            handler,
            state,
            malformed,
            pending: Mutex::new(Vec::new()),
            in_flight: Arc::new(AtomicUsize::new(0)),
            departed: Mutex::new(Vec::new()),
            any_departed: AtomicBool::new(false),
            pool,
        });
        // A collective that waits on a member that has gone fails (the
        // endpoint's stall check asks the conduit, see `Abandon`).
        ep.watch_in_flight("collective", &engine);
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

    /// This rank.
    pub(crate) fn rank(&self) -> Rank {
        self.ep.rank()
    }

    /// Malformed collective messages received so far.
    pub(crate) fn malformed_count(&self) -> u64 {
        // Relaxed: a statistic.
        self.malformed.count.load(Ordering::Relaxed)
    }

    /// Report a malformed message from `from` (one that passed the
    /// handler's checks but not the collective's).
    pub(crate) fn report(&self, from: Rank, why: &str) {
        self.malformed.report(&self.ep, from, why);
    }

    /// Know team `id` with these members (again after a split: the
    /// members are now known; messages already buffered from ranks that
    /// are not members are dropped and reported).
    pub(crate) fn register_team(&self, id: u64, members: &[Rank]) {
        let mut st = self.state.lock();
        st.teams.register(id, members);
        let State { teams, mailbox, .. } = &mut *st;
        let gone = mailbox.purge_team(id, |r| teams.is_member(id, r));
        drop(st);
        for from in gone {
            self.report(from, &format!("{from} is not a member of team {id:#x}"));
        }
    }

    /// Forget team `id` (its handle is gone, or its split failed).
    pub(crate) fn forget_team(&self, id: u64) {
        let mut st = self.state.lock();
        st.teams.unregister(id);
        st.blocked_on.retain(|&(team, _), _| team != id);
        let gone = st.mailbox.purge_team(id, |_| false);
        drop(st);
        for from in gone {
            self.report(from, &format!("a message for team {id:#x}, gone here"));
        }
    }

    /// Start a collective on team `id`: its sequence number.
    /// The endpoint the collectives run on.
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    pub(crate) fn begin(&self, id: u64, what: &'static str) -> Result<u64> {
        // A collective of a finalized or dropped client is refused before
        // it takes a sequence number (its messages would be).
        self.ep.check_open(what)?;
        self.state.lock().teams.start(id, what)
    }

    /// Collective `(team, seq)` finished here (`failed`: with an error).
    /// What it did not take goes: after a failure, what its members sent
    /// for it; after a success, messages no honest member sends.
    fn finish(&self, (team, seq): (u64, u64), failed: bool) {
        let mut st = self.state.lock();
        st.teams.finish(team, seq, failed);
        st.blocked_on.remove(&(team, seq));
        let left = st.mailbox.purge(team, seq);
        drop(st);
        if !failed {
            for (tag, from) in left {
                self.report(
                    from,
                    &format!("an unexpected message (tag {tag:#x}) for collective #{seq} of team {team:#x}"),
                );
            }
        }
    }

    /// Send `data` to `to` under `key`, in as many Medium fragments as it
    /// takes (one empty message for no data).
    pub(crate) fn send(&self, to: Rank, key: Key, data: &[u8]) -> Result<()> {
        let frag = self.ep.max_medium(to, NARGS).max(1);
        let mut off = 0usize;
        loop {
            let end = (off + frag).min(data.len());
            let args = wire::args(key, off as u64, data.len() as u64);
            self.ep
                .request_medium(to, self.handler, &args, &data[off..end], Flags::empty())?;
            off = end;
            if off >= data.len() {
                return Ok(());
            }
        }
    }

    /// The buffers of large messages: take one to encode a message into,
    /// give back a received one once its bytes are used.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The message for `key` from `from`, if it has arrived whole.
    pub(crate) fn take(&self, key: Key, from: Rank) -> Option<Vec<u8>> {
        let mut st = self.state.lock();
        let got = st.mailbox.take(key, from);
        if got.is_none() {
            st.blocked_on.insert((key.0, key.1), from);
        }
        got
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
        // The snapshot reuses this thread's buffer (every poll takes one;
        // a nested call, from a send that polls, finds it taken and
        // allocates its own).
        let mut snapshot = SNAPSHOT.with(|s| s.take());
        snapshot.extend(self.pending.lock().iter().cloned());
        for p in snapshot.drain(..) {
            // Another thread stepping it is as good as stepping it here.
            let Some(mut slot) = p.op.try_lock() else {
                continue;
            };
            // Finished by a thread whose snapshot also held it.
            let Some(op) = slot.as_mut() else {
                continue;
            };
            let outcome = match self.step_or_gone(&mut **op) {
                Ok(false) => continue,
                Ok(true) => Ok(()),
                Err(e) => Err(e),
            };
            self.finish(op.id(), outcome.is_err());
            // Under the lock: no other thread steps or completes it now.
            *slot = None;
            drop(slot);
            let mut pending = self.pending.lock();
            pending.retain(|q| !Arc::ptr_eq(q, &p));
            self.in_flight.store(pending.len(), Ordering::Relaxed);
            drop(pending);
            match outcome {
                Ok(()) => p.done.done(),
                // The waiter's `wait` reports it.
                Err(e) => p.done.fail(e.to_string()),
            }
            n += 1;
        }
        SNAPSHOT.with(|s| s.set(snapshot));
        n
    }

    /// Step `op`; if it still waits, the error for a member it waits on
    /// that has gone. Stepping first matters: a member's last message may
    /// have run (into the mailbox) since the step that found it missing.
    fn step_or_gone(&self, op: &mut dyn Step) -> Result<bool> {
        match op.step(self)? {
            true => Ok(true),
            false => self.member_gone(op.id()).map_or(Ok(false), Err),
        }
    }

    /// The error for collective `id` if the member it waits on (the one
    /// whose message its last step did not find) has gone; one load while
    /// no member has. A member that has gone after sending everything
    /// this collective needs from it does not fail it.
    #[inline]
    fn member_gone(&self, (team, seq): (u64, u64)) -> Option<Error> {
        // Relaxed: a hint; the list itself is read under its lock, and a
        // departure seen one step late costs one more step.
        if !self.any_departed.load(Ordering::Relaxed) {
            return None;
        }
        let departed = self.departed.lock();
        let st = self.state.lock();
        // `why` names the peer, this rank and the reason (see
        // `Endpoint::abandon_gone_peers`).
        let waits_on = *st.blocked_on.get(&(team, seq))?;
        let (_, why) = departed.iter().find(|(p, _)| *p == waits_on)?;
        Some(Error::Failed(format!(
            "collective #{seq} of team {team:#x}: {why}"
        )))
    }

    /// Run `op` to completion, polling (and advancing the other collectives
    /// in flight) while it waits.
    pub(crate) fn run(&self, op: &mut dyn Step) -> Result<()> {
        let mut backoff = Backoff::new(self.ep.polite());
        let outcome = loop {
            match self.step_or_gone(op) {
                Ok(false) => {}
                Ok(true) => break Ok(()),
                Err(e) => break Err(e),
            }
            if self.progress_all() == 0 {
                backoff.snooze();
            } else {
                backoff.reset();
            }
        };
        self.finish(op.id(), outcome.is_err());
        outcome
    }

    /// Start `op` in the background, keeping `team` alive meanwhile; the
    /// event completes when it finishes (and fails if it fails).
    pub(crate) fn start(
        self: &Arc<Self>,
        mut op: Box<dyn Step + Send>,
        team: Arc<dyn Send + Sync>,
    ) -> Result<rgex_core::Event> {
        match op.step(self) {
            Ok(false) => {}
            Ok(true) => {
                self.finish(op.id(), false);
                return Ok(rgex_core::Event::done());
            }
            Err(e) => {
                self.finish(op.id(), true);
                return Err(e);
            }
        }
        let done = OpCounter::new(1);
        let mut pending = self.pending.lock();
        pending.push(Arc::new(PendingOp {
            op: Mutex::new(Some(op)),
            done: done.clone(),
            _team: team,
        }));
        self.in_flight.store(pending.len(), Ordering::Relaxed);
        drop(pending);
        let progress: Arc<dyn rgex_core::Progress> = self.clone();
        Ok(rgex_core::Event::pending(done, progress))
    }
}

/// Collectives wait on every member of their team: the members of teams
/// with a collective in flight are the peers to ask about, and a member
/// found gone fails every collective of its teams, now and later.
impl Abandon for Engine {
    fn peers(&self, out: &mut Vec<Rank>) {
        let me = self.ep.rank();
        let start = out.len();
        self.state.lock().teams.busy_members(out);
        let mut i = start;
        while i < out.len() {
            if out[i] == me {
                out.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// A collective waits for its members' requests.
    fn answered_by_replies(&self) -> bool {
        false
    }

    /// The non-blocking collectives in flight (a blocking one finishes
    /// before its call returns).
    fn in_flight(&self) -> usize {
        // Relaxed: a count for a report, written under `pending`'s lock;
        // a stale value is a snapshot a moment old.
        self.in_flight.load(Ordering::Relaxed)
    }

    fn fail_peer(&self, peer: Rank, why: &str) -> usize {
        let mut departed = self.departed.lock();
        if departed.iter().any(|(p, _)| *p == peer) {
            return 0;
        }
        departed.push((peer, why.to_owned()));
        // Relaxed: see `member_gone`.
        self.any_departed.store(true, Ordering::Relaxed);
        1
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

#[cfg(test)]
mod tests {
    use super::*;
    use rgex_core::Category;

    /// xorshift64: the fuzz is the same on every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Random messages from peers, well-formed or not: the handler's
    /// checks never panic, accept only Medium requests of 9 arguments from
    /// a member of a known team, and nothing they accept completes a
    /// message that its fragments did not fill.
    #[test]
    fn fuzz_the_handler() {
        let state: Mutex<State> = Mutex::default();
        {
            let mut st = state.lock();
            st.teams.register(0, &(0..4).map(Rank).collect::<Vec<_>>());
            st.teams.register(9, &[Rank(1), Rank(3)]);
            for _ in 0..3 {
                st.teams.start(0, "barrier").unwrap();
            }
            st.teams.finish(0, 1, false);
            st.teams.finish(0, 2, true);
        }
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let payload: Vec<u8> = (0..=255).collect();
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..10_000 {
            let plausible = rng.below(2) == 0;
            let category = if plausible {
                Category::Medium
            } else {
                [Category::Short, Category::Medium, Category::Long][rng.below(3) as usize]
            };
            let request = plausible || rng.below(4) != 0;
            let nargs = if plausible {
                NARGS
            } else {
                rng.below(17) as usize
            };
            let team = [0, 9, rng.next()][rng.below(3) as usize];
            let seq = if plausible {
                rng.below(4)
            } else {
                rng.next() >> rng.below(64)
            };
            let tag = if plausible {
                [wire::TAG_DISSEM, wire::TAG_BCAST, wire::TAG_REDUCE + 1][rng.below(3) as usize]
            } else {
                rng.next() as u32
            };
            let total = if plausible {
                rng.below(64)
            } else {
                rng.next() >> rng.below(64)
            };
            // A plausible fragment is often a message's first (fragments
            // must arrive in order), else anywhere in it.
            let off = if plausible && rng.below(2) == 0 {
                0
            } else if plausible {
                rng.below(total + 1)
            } else {
                rng.next() >> rng.below(64)
            };
            let len = rng.below(65) as usize;
            let mut args = wire::args((team, seq, tag), off, total).to_vec();
            args.resize(nargs, rng.next() as u32);
            let from = Rank(rng.below(6) as u32);
            match receive(&state, from, category, request, &args, &payload[..len]) {
                Ok(()) => {
                    accepted += 1;
                    assert!(category == Category::Medium && request && nargs == NARGS);
                    assert!(team == 0 || (team == 9 && [1, 3].contains(&from.0)));
                    assert!(
                        from.0 < 4 && off + len as u64 <= total,
                        "{args:?} from {from}"
                    );
                }
                Err(why) => {
                    refused += 1;
                    assert!(!why.is_empty());
                }
            }
        }
        assert!(
            accepted > 100 && refused > 100,
            "accepted {accepted}, refused {refused}"
        );
        // What was kept is for the known teams' collectives in the window.
        let mut st = state.lock();
        assert!(st.mailbox.len() > 0);
        for seq in 0..3 + super::super::registry::MAX_IN_FLIGHT {
            st.mailbox.purge(0, seq);
            st.mailbox.purge(9, seq);
        }
        assert_eq!(
            st.mailbox.len(),
            0,
            "messages only for collectives in the window"
        );
    }
}
