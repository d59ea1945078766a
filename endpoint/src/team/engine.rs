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
use super::registry::{Outcome, Registry, Verdict};
use super::signature::{Sig, Summary, SUMMARY_LEN};
use super::wire::{self, Fragment, Key, NARGS, TAG_VERDICT, TAG_WAITING};
use crate::context::in_handler;
use crate::{Abandon, Accepts, Endpoint, ProtocolId};
use parking_lot::Mutex;
use rgex_core::{Backoff, Category, Error, Flags, OpCounter, Rank, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A collective that has made no progress for this long tells the member
/// it waits on (see [`Engine::answer`]): a member whose arguments differ
/// may never send what it waits for (an eager broadcast's member that
/// believes in another root, say), and only it can say so.
const STUCK: Duration = Duration::from_millis(10);

/// How a collective waits: since when (its last progress) and whom it has
/// told that it waits on them.
#[derive(Default)]
struct Wait {
    misses: u32,
    since: Option<Instant>,
    told: Option<Rank>,
}

/// A member waiting on this rank for collective `(team, seq)`, with its
/// summary (its team rank and arguments).
struct Report {
    team: u64,
    seq: u64,
    from: Rank,
    theirs: Summary,
}

/// A step's outcome: finished or not, or the error with the disagreement
/// that caused it, if one did.
type StepResult = std::result::Result<bool, Box<(Error, Option<Summary>)>>;

/// What the handler and the collectives share.
#[derive(Default)]
struct State {
    teams: Registry,
    mailbox: Mailbox,
    /// Per collective `(team, seq)` in flight, the member whose message
    /// its last step looked for and did not find: what it waits on (a
    /// member that has gone matters only there, see `member_gone`).
    blocked_on: KeyMap<(u64, u64), Rank>,
    /// How each collective in flight waits (see [`STUCK`]).
    waits: KeyMap<(u64, u64), Wait>,
    /// Members waiting on this rank, not yet answered.
    reports: Vec<Report>,
    /// Disagreements other members found for collectives in flight here.
    verdicts: KeyMap<(u64, u64), Summary>,
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
    /// The call, for errors.
    fn what(&self) -> &'static str;
    /// The members' disagreement that failed it, if that was why.
    fn disagreement(&self) -> Option<Summary> {
        None
    }
    /// It fails with `e`, found outside its step (a member's verdict, a
    /// member gone): the error to report (a non-blocking collective keeps
    /// `e` for its handle, see `Yield`).
    fn fail(&mut self, e: Error) -> Error {
        e
    }
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
    /// Whether the endpoint calls the background hook: the non-blocking
    /// collectives in flight plus the reports to answer.
    gate: Arc<AtomicUsize>,
    /// `verdicts` is not empty (a hint, read without the lock).
    any_verdicts: Arc<AtomicBool>,
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
) -> std::result::Result<Option<Control>, String> {
    let f = Fragment::parse(category, request, args, p.len())?;
    let (team, seq, tag) = f.key;
    let mut st = state.lock();
    if tag == TAG_WAITING || tag == TAG_VERDICT {
        if let Verdict::Malformed(why) = st.teams.check_control(from, team, seq) {
            return Err(why);
        }
        let n = st.teams.size(team).unwrap_or(0);
        let theirs = (f.off == 0 && f.total == p.len() as u64)
            .then(|| Summary::decode(p, n))
            .flatten()
            .ok_or_else(|| format!("a control message (tag {tag:#x}) of {} bytes", p.len()))?;
        if tag == TAG_WAITING {
            st.reports.push(Report {
                team,
                seq,
                from,
                theirs,
            });
            return Ok(Some(Control::Report));
        }
        if !theirs.disagrees() {
            return Err(format!(
                "a verdict for collective #{seq} of team {team:#x} that names no disagreement"
            ));
        }
        // Only a collective still in flight here can fail of it.
        let in_flight = st
            .teams
            .record(team, seq)
            .is_some_and(|r| r.outcome == Outcome::InFlight);
        if in_flight {
            st.verdicts.insert((team, seq), theirs);
            return Ok(Some(Control::Verdict));
        }
        return Ok(None);
    }
    match st.teams.check(from, team, seq) {
        Verdict::Accept => st
            .mailbox
            .deposit(from, &f, p)
            .map(|()| None)
            .map_err(|why| format!("{why} (collective #{seq} of team {team:#x}, tag {tag:#x})")),
        Verdict::Straggler => Ok(None),
        Verdict::Malformed(why) => Err(why),
    }
}

/// A control message the handler filed: what the engine must do.
#[derive(Debug, PartialEq, Eq)]
enum Control {
    /// Answer a waiting member (the background hook does).
    Report,
    /// Fail a collective in flight.
    Verdict,
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
        let gate = Arc::new(AtomicUsize::new(0));
        let any_verdicts = Arc::new(AtomicBool::new(false));
        let (st, bad) = (state.clone(), malformed.clone());
        let (g, v) = (gate.clone(), any_verdicts.clone());
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
                    match got {
                        // Relaxed, both: hints for the next poll; what they
                        // point at is read under the state's lock.
                        Ok(Some(Control::Report)) => {
                            g.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(Some(Control::Verdict)) => v.store(true, Ordering::Relaxed),
                        Ok(None) => {}
                        Err(why) => bad.report(tok.endpoint(), from, &why),
                    }
                })?;
        let engine = Arc::new(Engine {
            ep: ep.clone(),
            handler,
            state,
            malformed,
            pending: Mutex::new(Vec::new()),
            in_flight: Arc::new(AtomicUsize::new(0)),
            gate,
            any_verdicts,
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
            engine.gate.clone(),
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

    /// Collective `seq` of team `id` runs here with arguments `sig` (see
    /// [`Registry::sign`]): for an agreement, the window it compares.
    pub(crate) fn sign(
        &self,
        id: u64,
        seq: u64,
        sig: Sig,
        eager: bool,
    ) -> Option<Vec<super::signature::Entry>> {
        self.state.lock().teams.sign(id, seq, sig, eager)
    }

    /// [`sign`](Self::sign), but an agreement's window goes to `agree`
    /// (under the state's lock: keep it short), not into a new vector
    /// (see [`Registry::sign_with`]).
    pub(crate) fn sign_with<R>(
        &self,
        id: u64,
        seq: u64,
        sig: Sig,
        eager: bool,
        agree: impl FnOnce(&[super::signature::Entry]) -> R,
    ) -> Option<R> {
        self.state
            .lock()
            .teams
            .sign_with(id, seq, sig, eager, agree)
    }

    /// Collective `(team, seq)` finished here (`failed`: with an error,
    /// and the disagreement if that was why). What it did not take goes:
    /// after a failure, what its members sent for it; after a success,
    /// messages no honest member sends (but for an eager collective,
    /// which finishes without hearing from every member: what a member
    /// that disagreed sent it is for the next agreement to report).
    fn finish(&self, (team, seq): (u64, u64), failed: Option<Option<Summary>>) {
        let mut st = self.state.lock();
        let outcome = failed.map_or(Outcome::Done, Outcome::Failed);
        let eager = st.teams.finish(team, seq, outcome);
        // A collective that sent and waited for no message (one on the
        // board) left nothing in these tables: an empty one costs no
        // hashing.
        let id = (team, seq);
        if !st.blocked_on.is_empty() {
            st.blocked_on.remove(&id);
        }
        if !st.waits.is_empty() {
            st.waits.remove(&id);
        }
        if !st.verdicts.is_empty() {
            st.verdicts.remove(&id);
        }
        let left = if st.mailbox.is_empty() {
            Vec::new()
        } else {
            st.mailbox.purge(team, seq)
        };
        let answer = !st.reports.is_empty();
        drop(st);
        if answer {
            // A member may wait on this one's outcome.
            self.answer();
        }
        if failed.is_none() && !eager {
            for (tag, from) in left {
                self.report(
                    from,
                    &format!("an unexpected message (tag {tag:#x}) for collective #{seq} of team {team:#x}"),
                );
            }
        }
    }

    /// Collective `id` waits on `member` (a board collective: see
    /// `board.rs`), so that the member's departure fails it.
    pub(crate) fn waits_on(&self, id: (u64, u64), member: Rank) {
        self.state.lock().blocked_on.insert(id, member);
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

    /// The message for `key` from `from`, if it has arrived whole. A
    /// collective that has waited [`STUCK`] without progress tells the
    /// member it waits on (once per member), with this rank's summary as
    /// team rank `me`.
    pub(crate) fn take(&self, key: Key, from: Rank, me: u32) -> Option<Vec<u8>> {
        let id = (key.0, key.1);
        let mut st = self.state.lock();
        let got = st.mailbox.take(key, from);
        if got.is_some() {
            st.waits.remove(&id);
            return got;
        }
        st.blocked_on.insert(id, from);
        let w = st.waits.entry(id).or_default();
        w.misses = w.misses.wrapping_add(1);
        // The clock is read every 64th miss.
        if w.misses % 64 != 1 || w.told == Some(from) {
            return None;
        }
        let now = Instant::now();
        if now.duration_since(*w.since.get_or_insert(now)) < STUCK {
            return None;
        }
        w.told = Some(from);
        let sig = st.teams.record(key.0, key.1).map(|r| r.sig)?;
        drop(st);
        let mut msg = Vec::with_capacity(SUMMARY_LEN);
        Summary::of(me, sig).encode(&mut msg);
        // A send that fails leaves the wait as it was: the member is
        // gone, or this rank is closing, and both are reported otherwise.
        let _ = self.send(from, (key.0, key.1, TAG_WAITING), &msg);
        None
    }

    /// Answer the members waiting on this rank whose answer is known: a
    /// verdict where this rank's arguments for the collective differ
    /// from theirs, or where it failed of a disagreement; nothing where
    /// they agree (what they wait for is on its way, or this rank has not
    /// got there yet: the report stays until it has).
    fn answer(&self) -> usize {
        let mut st = self.state.lock();
        if st.reports.is_empty() {
            return 0;
        }
        let me = self.ep.rank();
        let mut send = Vec::new();
        let mut bad = Vec::new();
        let reports = std::mem::take(&mut st.reports);
        let before = reports.len();
        for r in reports {
            let their_rank = st.teams.team_rank(r.team, r.from);
            let mine = st.teams.team_rank(r.team, me);
            let (Some(their_rank), Some(mine)) = (their_rank, mine) else {
                continue;
            };
            if r.theirs.disagrees() || r.theirs.first_rank() != their_rank {
                bad.push((
                    r.from,
                    format!(
                    "a waiting report for collective #{} of team {:#x} that is not its sender's",
                    r.seq, r.team
                ),
                ));
                continue;
            }
            let Some(rec) = st.teams.record(r.team, r.seq) else {
                // Not there yet: keep it; long gone: the member is not
                // waiting on this rank any more.
                if st.teams.next(r.team).is_some_and(|next| r.seq >= next) {
                    st.reports.push(r);
                }
                continue;
            };
            // Where both run an agreement at this number, its
            // dissemination gives every member the whole disagreement,
            // and each fails of the same (canonical) pair: this rank only
            // passes on what it failed of, as where they agree. Else (an
            // eager broadcast on either side, which sends no summary) the
            // two signatures are the verdict.
            let both_agree = !rec.eager && !r.theirs.first_runs_eagerly(r.seq);
            if rec.sig != r.theirs.first_sig() && !both_agree {
                let mut v = Summary::of(mine, rec.sig);
                v.merge(&r.theirs);
                send.push((r.from, (r.team, r.seq), v));
                continue;
            }
            match rec.outcome {
                Outcome::InFlight => st.reports.push(r),
                Outcome::Failed(Some(v)) => send.push((r.from, (r.team, r.seq), v)),
                Outcome::Done | Outcome::Failed(None) => {}
            }
        }
        let answered = before - st.reports.len();
        drop(st);
        // Relaxed: see the handler's increment.
        self.gate.fetch_sub(answered, Ordering::Relaxed);
        for (from, why) in bad {
            self.report(from, &why);
        }
        for (to, (team, seq), v) in &send {
            let mut msg = Vec::with_capacity(SUMMARY_LEN);
            v.encode(&mut msg);
            // A member that is gone needs no answer.
            let _ = self.send(*to, (*team, *seq, TAG_VERDICT), &msg);
        }
        answered
    }

    /// The error for collective `id` if another member found its members
    /// disagree (one load while none has), with that disagreement.
    fn verdict(&self, id: (u64, u64), what: &'static str) -> Option<(Error, Summary)> {
        // Relaxed: a hint (see the handler); a verdict seen one step late
        // costs one more step.
        if !self.any_verdicts.load(Ordering::Relaxed) {
            return None;
        }
        let mut st = self.state.lock();
        let v = st.verdicts.remove(&id);
        if st.verdicts.is_empty() {
            self.any_verdicts.store(false, Ordering::Relaxed);
        }
        drop(st);
        let v = v?;
        let e = v.mismatch(what, self.ep.rank(), id.0, id.1)?;
        Some((e, v))
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
            self.finish(op.id(), outcome.as_ref().err().map(|b| b.1));
            let outcome = outcome.map_err(|b| b.0);
            // Under the lock: no other thread steps or completes it now.
            *slot = None;
            drop(slot);
            let mut pending = self.pending.lock();
            pending.retain(|q| !Arc::ptr_eq(q, &p));
            self.in_flight.store(pending.len(), Ordering::Relaxed);
            // Relaxed: see `start`.
            self.gate.fetch_sub(1, Ordering::Relaxed);
            drop(pending);
            match outcome {
                Ok(()) => p.done.done(),
                // The waiter's `wait` reports it.
                Err(e) => p.done.fail(e.to_string()),
            }
            n += 1;
        }
        SNAPSHOT.with(|s| s.set(snapshot));
        n + self.answer()
    }

    /// Step `op`; if it still waits, the error for a disagreement another
    /// member found, or for a member it waits on that has gone. Stepping
    /// first matters: a member's last message may have run (into the
    /// mailbox) since the step that found it missing. An error comes with
    /// the disagreement that caused it, if one did.
    fn step_or_gone(&self, op: &mut dyn Step) -> StepResult {
        match op.step(self) {
            Ok(true) => Ok(true),
            Err(e) => Err(Box::new((e, op.disagreement()))),
            Ok(false) => {
                if let Some((e, v)) = self.verdict(op.id(), op.what()) {
                    return Err(Box::new((op.fail(e), Some(v))));
                }
                match self.member_gone(op.id()) {
                    Some(e) => Err(Box::new((op.fail(e), None))),
                    None => Ok(false),
                }
            }
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
        // The collective's span in a trace (inert unless `coll` is traced).
        let _span = rgex_core::observe::Span::start("coll", op.what());
        // The first step before any set-up for waiting: a collective
        // whose members are all there already (a board collective whose
        // peers have published) finishes in it.
        let outcome = match self.step_or_gone(op) {
            Ok(false) => self.wait_for(op),
            Ok(true) => Ok(true),
            Err(e) => Err(e),
        };
        self.finish(op.id(), outcome.as_ref().err().map(|b| b.1));
        outcome.map(drop).map_err(|b| b.0)
    }

    /// [`run`](Self::run)'s wait: poll (and advance the other
    /// collectives in flight) and step `op` until it has finished.
    #[inline(never)]
    fn wait_for(&self, op: &mut dyn Step) -> StepResult {
        // What a blocked-wait report names (see rgex_core::blocked).
        let (team, seq) = op.id();
        let waiting = rgex_core::blocked::Waiting::new(op.what())
            .detail("(a collective)")
            .value("sequence number", seq)
            .value("team", team);
        let mut backoff = Backoff::waiting(self.ep.polite(), waiting);
        loop {
            if self.progress_all() == 0 {
                backoff.snooze();
            } else {
                backoff.reset();
            }
            match self.step_or_gone(op) {
                Ok(false) => {}
                done => return done,
            }
        }
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
                self.finish(op.id(), None);
                return Ok(rgex_core::Event::done());
            }
            Err(e) => {
                self.finish(op.id(), Some(op.disagreement()));
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
        // Relaxed: the endpoint's hint to call the background hook.
        self.gate.fetch_add(1, Ordering::Relaxed);
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
            st.teams.finish(0, 1, Outcome::Done);
            st.teams.finish(0, 2, Outcome::Failed(None));
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
                Ok(_) => {
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
        assert!(!st.mailbox.is_empty());
        for seq in 0..3 + super::super::registry::MAX_IN_FLIGHT + super::super::registry::EAGER_RUN
        {
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
