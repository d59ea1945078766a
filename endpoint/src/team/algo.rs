//! The collectives' state machines. Each is advanced by [`Step::step`],
//! which never waits; [`Engine::run`] drives one to completion and
//! [`Engine::start`] drives it in the background.
//!
//! Trees are binomial over "virtual ranks" `vr = (rank - root) mod n`:
//! the subtree of `vr` is `[vr, vr + span(vr))`, where `span` is the lowest
//! set bit of `vr` (for the root, the next power of two >= n); its parent
//! is `vr - span(vr)` and its children `vr + m` for powers of two
//! `m < span(vr)`. Depth and per-rank fan-out are ceil(log2 n).

use super::engine::{Engine, Step};
use super::halves::Halves;
use super::ops::Combine;
use super::signature::{self, Sig, Summary, Window, SIG_LEN, SUMMARY_LEN};
use super::wire::{
    Key, TAG_BCAST, TAG_DISSEM, TAG_EAGER_BCAST, TAG_RECOVER, TAG_REDUCE, TAG_TO_ROOT,
};
use rgex_core::{Error, Membership, Rank, Result};

/// What every collective knows about its instance.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    pub(crate) team: Membership,
    pub(crate) id: u64,
    pub(crate) seq: u64,
    /// The call, for errors.
    pub(crate) what: &'static str,
    /// The team's collectives board, if its members share one (see
    /// `board.rs`): a collective over active messages agrees there first.
    pub(crate) board: Option<std::sync::Arc<super::board::Board>>,
}

impl Ctx {
    pub(crate) fn n(&self) -> u32 {
        self.team.size()
    }
    pub(crate) fn me(&self) -> u32 {
        self.team.my_rank()
    }
    fn key(&self, tag: u32) -> Key {
        (self.id, self.seq, tag)
    }
    fn job_rank(&self, r: u32) -> Result<Rank> {
        self.team.world_rank(r)
    }
    pub(crate) fn send(&self, c: &Engine, to: u32, tag: u32, data: &[u8]) -> Result<()> {
        c.send(self.job_rank(to)?, self.key(tag), data)
    }
    /// Message `tag` from team rank `from`, if it has arrived whole.
    pub(crate) fn take(&self, c: &Engine, tag: u32, from: u32) -> Result<Option<Vec<u8>>> {
        Ok(c.take(self.key(tag), self.job_rank(from)?, self.me()))
    }
}

/// A message from a member that this rank's collective cannot use: the
/// members disagree (and the agreement will say how), or the member broke
/// the protocol.
#[derive(Debug)]
pub(crate) struct Broken {
    /// The sender's team rank.
    pub(crate) from: u32,
    pub(crate) why: String,
}

/// Part of a collective: advanced by [`Coll`], never waits. A message that
/// does not fit is recorded (see [`Broken`]) and the part stops there.
pub(crate) trait Part {
    /// Send what can be sent, take what has arrived; true when finished.
    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool>;
    /// The message that stopped this part.
    fn broken(&self) -> Option<&Broken>;
    /// The members agree (their arguments match and the agreement's
    /// messages were well formed): take what the agreement carried for
    /// this part. Called once, before the step's `advance`.
    fn agreed(&mut self, _agree: &mut Dissem, _ctx: &Ctx) -> Result<()> {
        Ok(())
    }
    /// The disagreement this part found itself (an eager part, which
    /// sees a member's arguments in its messages), if it failed so.
    fn disagreement(&self) -> Option<Summary> {
        None
    }
    /// Carry the agreement in this part's own messages, from this
    /// member's `summary`: true if it does (each member's messages reach
    /// every other, as an alltoall's do), and then no dissemination runs.
    /// Such a part runs to its end whatever it receives, recording what
    /// it cannot use (see [`Part::broken`]).
    fn carry_agreement(&mut self, _summary: Summary) -> bool {
        false
    }
    /// Every member's summaries merged, once a part that carries the
    /// agreement has finished.
    fn agreement(&self) -> Option<Summary> {
        None
    }
}

/// No part beyond the agreement (a barrier, a split).
impl Part for () {
    fn advance(&mut self, _c: &Engine, _ctx: &Ctx) -> Result<bool> {
        Ok(true)
    }
    fn broken(&self) -> Option<&Broken> {
        None
    }
}

/// A collective: the agreement on its arguments (a dissemination, which
/// for a barrier and a split is the whole of it) and its algorithm, run
/// side by side. It finishes once both have; if the members disagree, it
/// fails on every member with the same error once the agreement has
/// finished, whatever its algorithm was waiting for.
pub(crate) struct Coll<P> {
    ctx: Ctx,
    pub(crate) agree: Dissem,
    pub(crate) part: P,
    agreed: bool,
    /// `Part::agreed` has been called.
    handed: bool,
    part_done: bool,
    /// This member's arguments are refused for a reason that the
    /// agreement makes the same on every member (a length that is not a
    /// multiple of the team size, say): the part is not run, and once the
    /// members are known to agree, every one fails with its own copy of
    /// this error.
    refused: Option<Error>,
    /// Run without an agreement (see `registry::eager_at`): the part
    /// alone, which checks what its messages say of the sender's
    /// arguments; the next agreement compares the rest.
    eager: bool,
    /// Signed with the registry (on the first step).
    signed: bool,
    /// This member's window (see [`Window`]), kept in case the members'
    /// differ.
    window: Vec<signature::Entry>,
    /// The second dissemination, which gathers the members' windows
    /// when they differ.
    recover: Option<Dissem>,
    /// The members' disagreement that failed this collective here.
    failed_with: Option<Summary>,
    /// The part carries the agreement (see [`Part::carry_agreement`]).
    in_part: bool,
    /// On a team with a collectives board: the agreement there, which
    /// runs first (see `board.rs`).
    gate: Option<Box<Gate>>,
    /// The gate passed (and signed the collective).
    gated: bool,
}

/// The agreement on a team's board that a collective over active
/// messages runs first.
type Gate = super::board::BoardOp<u8, super::board::NoOp>;

impl<P: Part> Coll<P> {
    pub(crate) fn new(ctx: Ctx, agree: Dissem, part: P) -> Self {
        let gate = ctx.board.clone().map(|board| {
            let sig = agree.summary.first_sig();
            Box::new(Gate::new(
                ctx.clone(),
                board,
                sig,
                super::board::Work::Agree,
                Vec::new(),
                None,
            ))
        });
        Coll {
            gate,
            gated: false,
            ctx,
            agree,
            part,
            agreed: false,
            handed: false,
            part_done: false,
            refused: None,
            eager: false,
            signed: false,
            window: Vec::new(),
            recover: None,
            failed_with: None,
            in_part: false,
        }
    }

    /// A collective run without an agreement: `part` alone, with this
    /// member's `summary` for the registry (and a member that waits on
    /// this one).
    pub(crate) fn eager(ctx: Ctx, summary: Summary, part: P) -> Self {
        Coll {
            eager: true,
            ..Coll::new(ctx, Dissem::new(summary), part)
        }
    }

    /// The disagreement that failed this collective here, if that was
    /// why.
    pub(crate) fn disagreement(&self) -> Option<Summary> {
        self.failed_with.or_else(|| self.part.disagreement())
    }

    /// Once the agreement has found the members' windows different: the
    /// error of the first eager collective they disagreed on, after a
    /// second dissemination of the windows themselves; `Ok(None)` while
    /// it runs.
    fn recovered(&mut self, c: &Engine) -> Result<Option<Error>> {
        let ctx = &self.ctx;
        let recover = self.recover.get_or_insert_with(|| {
            let mut list = Vec::new();
            signature::encode_entries(&self.window, &mut list);
            Dissem::recovering(Summary::of(ctx.me(), self.agree.summary.first_sig()), list)
        });
        if !recover.advance(c, ctx)? {
            return Ok(None);
        }
        if let Some(b) = recover.broken.take() {
            return Ok(Some(self.malformed(c, &b)));
        }
        let blocks = recover.blocks(ctx.me());
        let mut lists = Vec::with_capacity(ctx.n() as usize);
        for (from, block) in blocks.into_iter().enumerate() {
            match signature::decode_entries(&block) {
                Some(l) => lists.push(l),
                None => {
                    let b = Broken {
                        from: from as u32,
                        why: format!("a window of {} bytes that holds no entries", block.len()),
                    };
                    return Ok(Some(self.malformed(c, &b)));
                }
            }
        }
        let Some((seq, summary)) = signature::first_mismatch(&lists) else {
            // The windows' digests differ, the windows do not: only a
            // member that broke the protocol gets here.
            return Ok(Some(Error::Failed(format!(
                "{} on {} (collective #{} of team {:#x}): the members' windows of eager \
                 collectives differ, yet no collective in them does",
                ctx.what,
                c.rank(),
                ctx.seq,
                ctx.id
            ))));
        };
        let what = summary.first_sig().kind().name();
        Ok(summary.mismatch(what, c.rank(), ctx.id, seq))
    }

    /// A collective that runs only its agreement, then fails with `e`
    /// (see `refused`).
    pub(crate) fn refuse(mut self, e: Error) -> Self {
        self.part_done = true;
        self.refused = Some(e);
        self
    }

    /// The collective's instance.
    pub(crate) fn ctx(&self) -> &Ctx {
        &self.ctx
    }

    /// The error for `b`, once the members are known to agree (so the
    /// sender broke the protocol): reported and counted as malformed.
    fn malformed(&self, c: &Engine, b: &Broken) -> Error {
        let from = self.ctx.job_rank(b.from).unwrap_or(Rank(u32::MAX));
        c.report(from, &b.why);
        Error::Failed(format!(
            "{} on {} (collective #{} of team {:#x}): team rank {} ({from}) sent a malformed \
             message: {}",
            self.ctx.what,
            c.rank(),
            self.ctx.seq,
            self.ctx.id,
            b.from,
            b.why
        ))
    }
}

impl<P: Part> Step for Coll<P> {
    fn step(&mut self, c: &Engine) -> Result<bool> {
        if let Some(gate) = self.gate.as_mut() {
            let agreed = gate.step(c);
            if let Ok(false) = agreed {
                return Ok(false);
            }
            self.failed_with = gate.failed_with();
            self.gate = None;
            agreed?;
            // The gate signed this collective with the registry, in
            // sequence-number order; a second signature here, after
            // later collectives' (non-blocking ones in flight), would
            // reorder the window.
            self.gated = true;
        }
        if !self.signed {
            self.signed = true;
            let sig = self.agree.summary.first_sig();
            let signed = if self.gated {
                None
            } else {
                c.sign(self.ctx.id, self.ctx.seq, sig, self.eager)
            };
            if let Some(list) = signed {
                let summary = self.agree.summary.with_window(Window::of(&list));
                self.agree.summary = summary;
                self.window = list;
            }
            if self.eager {
                self.agreed = true;
                self.handed = true;
            } else if self.part.carry_agreement(self.agree.summary) {
                // Run even if refused here: the others need its messages.
                self.in_part = true;
                self.part_done = false;
            }
        }
        if self.in_part {
            if !self.part_done {
                self.part_done = self.part.advance(c, &self.ctx)?;
            }
            if !self.part_done {
                return Ok(false);
            }
            if !self.agreed {
                self.agreed = true;
                self.handed = true;
                if let Some(s) = self.part.agreement() {
                    self.agree.summary = s;
                }
            }
        }
        if !self.agreed {
            self.agreed = self.agree.advance(c, &self.ctx)?;
        }
        if self.agreed {
            let ctx = &self.ctx;
            if let Some(e) = self
                .agree
                .summary
                .mismatch(ctx.what, c.rank(), ctx.id, ctx.seq)
            {
                self.failed_with = Some(self.agree.summary);
                return Err(e);
            }
            if let Some(b) = self.agree.broken() {
                return Err(self.malformed(c, b));
            }
            if self.agree.summary.window().differs() {
                // Every member found the same: each fails this collective
                // with the first eager one they disagreed on.
                return match self.recovered(c)? {
                    None => Ok(false),
                    Some(e) => Err(e),
                };
            }
            if let Some(e) = self.refused.take() {
                return Err(e);
            }
            if !self.handed {
                self.handed = true;
                self.part.agreed(&mut self.agree, &self.ctx)?;
            }
        }
        if !self.part_done {
            self.part_done = self.part.advance(c, &self.ctx)?;
        }
        if self.agreed {
            if let Some(b) = self.part.broken() {
                return Err(self.malformed(c, b));
            }
        }
        Ok(self.agreed && self.part_done)
    }

    fn id(&self) -> (u64, u64) {
        (self.ctx.id, self.ctx.seq)
    }

    fn what(&self) -> &'static str {
        self.ctx.what
    }

    fn disagreement(&self) -> Option<Summary> {
        Coll::disagreement(self)
    }
}

/// The size of `vr`'s subtree in a binomial tree of `n`.
pub(crate) fn span(vr: u32, n: u32) -> u64 {
    if vr == 0 {
        u64::from(n).next_power_of_two()
    } else {
        u64::from(vr & vr.wrapping_neg())
    }
}

/// Blocks gathered in a dissemination (Bruck's allgather): of this
/// rank, then of the next ranks in team order (cyclically). Fixed-size
/// blocks travel back to back; blocks of any size each with its length
/// (see `blocks`).
struct Gather {
    /// Every block's size in bytes, if fixed.
    fixed: Option<usize>,
    blocks: Vec<Vec<u8>>,
}

/// What a broadcast's root chose, as a dissemination carries it: every
/// message says whether its sender knows, and the payload if the root
/// sends it in the dissemination itself (a small one: see `CARRY_MAX`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// Not known to this rank yet.
    Unknown,
    /// The payload travels down the broadcast tree.
    Tree,
    /// The payload, carried here.
    Carried(Vec<u8>),
}

const CHOICE_UNKNOWN: u8 = 0;
const CHOICE_TREE: u8 = 1;
const CHOICE_CARRIED: u8 = 2;

/// Broadcast payloads up to this many bytes travel in the agreement's
/// dissemination (every rank passes the payload on once it has it:
/// ceil(log2 n) rounds, no messages beside the agreement's); larger ones
/// down the binomial tree.
pub(crate) const CARRY_MAX: usize = 2048;

/// What a dissemination carries beside the summary.
enum Cargo {
    Nothing,
    Gather(Gather),
    Choice(Choice),
}

/// Dissemination over the team: in round k, send to `me - 2^k` what this
/// rank knows (of ranks `me .. me + 2^k`) and learn what `me + 2^k` knows;
/// after ceil(log2 n) rounds every rank knows of every rank. Every message
/// carries the [`Summary`] of the senders' arguments, so every collective
/// runs one to agree on them (a barrier is nothing else); an allgather's
/// blocks travel with it (Bruck's algorithm: round k carries min(2^k,
/// n - held) blocks), and so does a small broadcast's payload.
pub(crate) struct Dissem {
    pub(crate) summary: Summary,
    cargo: Cargo,
    /// Round `k`'s tag: `base + k`.
    base: u32,
    round: u32,
    sent: bool,
    broken: Option<Broken>,
}

impl Dissem {
    /// An agreement on `summary` (this rank's own).
    pub(crate) fn new(summary: Summary) -> Self {
        Dissem {
            summary,
            cargo: Cargo::Nothing,
            base: TAG_DISSEM,
            round: 0,
            sent: false,
            broken: None,
        }
    }

    /// The second dissemination of an agreement whose members' windows
    /// differ: it gathers them (`mine`, encoded).
    fn recovering(summary: Summary, mine: Vec<u8>) -> Self {
        Dissem {
            base: TAG_RECOVER,
            ..Dissem::gathering_any(summary, mine)
        }
    }

    /// An agreement that also gathers one `mine`-sized block per rank
    /// (every member's the same size: the agreement checks that its
    /// signature says so).
    pub(crate) fn gathering(summary: Summary, mine: Vec<u8>) -> Self {
        Dissem {
            cargo: Cargo::Gather(Gather {
                fixed: Some(mine.len()),
                blocks: vec![mine],
            }),
            ..Dissem::new(summary)
        }
    }

    /// An agreement that also gathers one block of any size per rank.
    pub(crate) fn gathering_any(summary: Summary, mine: Vec<u8>) -> Self {
        Dissem {
            cargo: Cargo::Gather(Gather {
                fixed: None,
                blocks: vec![mine],
            }),
            ..Dissem::new(summary)
        }
    }

    /// An agreement that also spreads a broadcast root's `choice` (known
    /// at the root, [`Choice::Unknown`] elsewhere).
    pub(crate) fn choosing(summary: Summary, choice: Choice) -> Self {
        Dissem {
            cargo: Cargo::Choice(choice),
            ..Dissem::new(summary)
        }
    }

    /// The root's choice, as it reached this rank (after the last step);
    /// the payload is taken.
    pub(crate) fn choice(&mut self) -> Choice {
        match &mut self.cargo {
            Cargo::Choice(c) => std::mem::replace(c, Choice::Unknown),
            _ => Choice::Unknown,
        }
    }

    /// The blocks in team-rank order on team rank `me` (after the last
    /// step).
    pub(crate) fn blocks(&mut self, me: u32) -> Vec<Vec<u8>> {
        let Cargo::Gather(g) = &mut self.cargo else {
            return Vec::new();
        };
        let mut blocks = std::mem::take(&mut g.blocks);
        // Held from this rank on: rotate so team rank 0's comes first.
        let n = blocks.len().max(1);
        blocks.rotate_right(me as usize % n);
        blocks
    }

    /// The blocks in team-rank order, back to back (after the last step).
    pub(crate) fn gathered(&mut self, ctx: &Ctx) -> Vec<u8> {
        self.blocks(ctx.me()).concat()
    }

    /// Append what this rank passes on in a round that carries `cnt`
    /// blocks of an allgather.
    fn pack(&self, cnt: usize, msg: &mut Vec<u8>) {
        match &self.cargo {
            Cargo::Nothing => {}
            Cargo::Gather(g) => {
                let held = &g.blocks[..cnt.min(g.blocks.len())];
                match g.fixed {
                    Some(_) => held.iter().for_each(|b| msg.extend_from_slice(b)),
                    None => super::blocks::encode(held, msg),
                }
            }
            Cargo::Choice(Choice::Unknown) => msg.push(CHOICE_UNKNOWN),
            Cargo::Choice(Choice::Tree) => msg.push(CHOICE_TREE),
            Cargo::Choice(Choice::Carried(d)) => {
                msg.push(CHOICE_CARRIED);
                msg.extend_from_slice(d);
            }
        }
    }

    /// Take in what a peer passed on (`rest`, after its summary) in a
    /// round that carries `cnt` blocks; the error says what was wrong
    /// (another collective's message, which the summary tells, or a
    /// malformed one).
    fn unpack(&mut self, cnt: usize, rest: &[u8]) -> Result<(), String> {
        match &mut self.cargo {
            Cargo::Nothing if rest.is_empty() => Ok(()),
            Cargo::Nothing => Err(format!(
                "{} bytes beside the summary, where none go",
                rest.len()
            )),
            Cargo::Gather(g) => {
                let mut got = match g.fixed {
                    Some(0) if rest.is_empty() => vec![Vec::new(); cnt],
                    Some(f) if rest.len() == cnt * f => {
                        rest.chunks(f).map(<[u8]>::to_vec).collect()
                    }
                    Some(f) => {
                        return Err(format!("{} bytes of blocks, not {cnt} of {f}", rest.len()))
                    }
                    None => super::blocks::decode(rest, cnt, None)?,
                };
                g.blocks.append(&mut got);
                Ok(())
            }
            Cargo::Choice(mine) => {
                let theirs = match rest.split_first() {
                    Some((&CHOICE_UNKNOWN, [])) => Choice::Unknown,
                    Some((&CHOICE_TREE, [])) => Choice::Tree,
                    Some((&CHOICE_CARRIED, d)) if d.len() <= CARRY_MAX => {
                        Choice::Carried(d.to_vec())
                    }
                    _ => {
                        return Err(format!(
                            "a broadcast's choice of {} bytes that is none",
                            rest.len()
                        ))
                    }
                };
                match (&*mine, theirs) {
                    (_, Choice::Unknown) => {}
                    (Choice::Unknown, t) => *mine = t,
                    (m, t) if *m == t => {}
                    _ => return Err("a broadcast's choice that contradicts another".into()),
                }
                Ok(())
            }
        }
    }
}

impl Part for Dissem {
    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool> {
        let (n, me) = (u64::from(ctx.n()), u64::from(ctx.me()));
        while (1u64 << self.round) < n {
            let dist = 1u64 << self.round;
            let tag = self.base + self.round;
            // Blocks held before this round: min(dist, n).
            let cnt = dist.min(n - dist) as usize;
            if !self.sent {
                let to = ((me + n - dist) % n) as u32;
                let mut msg = Vec::with_capacity(SUMMARY_LEN + 1);
                self.summary.encode(&mut msg);
                if self.broken.is_none() {
                    self.pack(cnt, &mut msg);
                }
                ctx.send(c, to, tag, &msg)?;
                self.sent = true;
            }
            let from = ((me + dist) % n) as u32;
            let Some(b) = ctx.take(c, tag, from)? else {
                return Ok(false);
            };
            self.round += 1;
            self.sent = false;
            let (head, rest) = b.split_at(SUMMARY_LEN.min(b.len()));
            let Some(theirs) = Summary::decode(head, ctx.n()) else {
                self.broken.get_or_insert(Broken {
                    from,
                    why: format!(
                        "a dissemination message of {} bytes without a valid summary",
                        b.len()
                    ),
                });
                continue;
            };
            self.summary.merge(&theirs);
            if self.broken.is_none() {
                if let Err(why) = self.unpack(cnt, rest) {
                    self.broken = Some(Broken {
                        from,
                        why: format!("{why} (round {})", self.round - 1),
                    });
                }
            }
        }
        Ok(true)
    }

    fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }
}

/// Binomial-tree broadcast of bytes from `root`, or (a broadcast's
/// part, see [`Bcast::choosing`]) the payload the agreement carried.
pub(crate) struct Bcast {
    root: u32,
    /// The payload: given at the root, received elsewhere.
    pub(crate) data: Option<Vec<u8>>,
    sent: bool,
    /// The payload came with the agreement (or, at the root, went with
    /// it): nothing travels down the tree.
    carried: bool,
    /// Eager (see [`Bcast::eager`]): this member's arguments, which every
    /// message down the tree carries, the root's first.
    eager: Option<Sig>,
    /// The parent's arguments differ from this member's.
    disagreement: Option<Summary>,
    broken: Option<Broken>,
}

impl Bcast {
    /// A broadcast down the tree alone.
    pub(crate) fn new(root: u32, data: Option<Vec<u8>>) -> Self {
        Bcast {
            root,
            data,
            sent: false,
            carried: false,
            eager: None,
            disagreement: None,
            broken: None,
        }
    }

    /// A broadcast without an agreement (see [`Coll::eager`]): the root
    /// sends and is done, every other member is done once it has its
    /// parent's message and has passed it on. Each message carries the
    /// root's signature `sig` (which every member that passes it on
    /// shares): a member whose own differs fails at once, naming both.
    pub(crate) fn eager(root: u32, data: Option<Vec<u8>>, sig: Sig) -> Self {
        Bcast {
            eager: Some(sig),
            ..Bcast::new(root, data)
        }
    }

    /// The eager form's step, once this member has its payload.
    fn take_eager(&mut self, c: &Engine, ctx: &Ctx, parent: u32, mine: Sig) -> Result<bool> {
        let Some(mut msg) = ctx.take(c, TAG_EAGER_BCAST, parent)? else {
            return Ok(false);
        };
        let Some(theirs) = msg.get(..SIG_LEN).and_then(Sig::decode) else {
            self.broken = Some(Broken {
                from: parent,
                why: format!(
                    "an eager broadcast's message of {} bytes without a signature",
                    msg.len()
                ),
            });
            return Ok(false);
        };
        if theirs != mine {
            let mut s = Summary::of(ctx.me(), mine);
            s.merge(&Summary::of(parent, theirs));
            self.disagreement = Some(s);
            return Err(s
                .mismatch(ctx.what, c.rank(), ctx.id, ctx.seq)
                .unwrap_or_else(|| Error::Failed("a mismatch that is none".into())));
        }
        msg.drain(..SIG_LEN);
        self.data = Some(msg);
        Ok(true)
    }

    /// A broadcast whose root chooses how its payload travels (in the
    /// agreement up to [`CARRY_MAX`] bytes, down the tree beyond): this
    /// part and the agreement that goes with it.
    pub(crate) fn choosing(root: u32, data: Option<Vec<u8>>, summary: Summary) -> (Self, Dissem) {
        let choice = match &data {
            None => Choice::Unknown,
            Some(d) if d.len() <= CARRY_MAX => Choice::Carried(d.clone()),
            Some(_) => Choice::Tree,
        };
        let carried = matches!(choice, Choice::Carried(_));
        let part = Bcast {
            carried,
            ..Bcast::new(root, data)
        };
        (part, Dissem::choosing(summary, choice))
    }
}

impl Part for Bcast {
    fn agreed(&mut self, agree: &mut Dissem, _ctx: &Ctx) -> Result<()> {
        if let Choice::Carried(d) = agree.choice() {
            if self.data.is_none() {
                self.data = Some(d);
            }
            self.carried = true;
        }
        Ok(())
    }

    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool> {
        if self.carried {
            return Ok(self.data.is_some());
        }
        if self.broken.is_some() {
            return Ok(false);
        }
        let n = ctx.n();
        let vr = (ctx.me() + n - self.root) % n;
        if self.data.is_none() {
            let parent =
                ((u64::from(vr) - span(vr, n) + u64::from(self.root)) % u64::from(n)) as u32;
            if let Some(mine) = self.eager {
                if !self.take_eager(c, ctx, parent, mine)? {
                    return Ok(false);
                }
            } else {
                match ctx.take(c, TAG_BCAST, parent)? {
                    Some(d) => self.data = Some(d),
                    None => return Ok(false),
                }
            }
        }
        if !self.sent {
            let data = self.data.as_deref().unwrap_or_default();
            // Eager: the root's signature first (this member's: they are
            // the same), in a pooled buffer.
            let (tag, msg) = match self.eager {
                Some(sig) => {
                    let mut m = c.pool().take(SIG_LEN + data.len());
                    sig.encode(&mut m);
                    m.extend_from_slice(data);
                    (TAG_EAGER_BCAST, Some(m))
                }
                None => (TAG_BCAST, None),
            };
            let bytes = msg.as_deref().unwrap_or(data);
            // Largest subtree first: it has the longest way to go.
            let mut m = span(vr, n) >> 1;
            while m > 0 {
                if u64::from(vr) + m < u64::from(n) {
                    let child = ((u64::from(vr) + m + u64::from(self.root)) % u64::from(n)) as u32;
                    ctx.send(c, child, tag, bytes)?;
                }
                m >>= 1;
            }
            if let Some(m) = msg {
                c.pool().give(m);
            }
            self.sent = true;
        }
        Ok(true)
    }

    fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }

    fn disagreement(&self) -> Option<Summary> {
        self.disagreement
    }
}

/// Bytes <-> elements, for reductions.
pub(crate) fn decode<T: super::Element>(b: &[u8]) -> Vec<T> {
    T::read_all(b)
}

pub(crate) fn encode<T: super::Element>(v: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * T::SIZE);
    T::write_all(v, &mut out);
    out
}

enum RPhase<T> {
    Gather,
    ToRoot,
    Bcast(Bcast),
    Halves(Halves<T>),
    Done,
}

/// Allreduces whose contributions, gathered from every member, come to at
/// most this many bytes run as [`Reduce::folding`].
pub(crate) const FOLD_MAX: usize = 2048;

/// Allreduces with a built-in operator of arrays of at least this many
/// bytes (on teams of more than two: on two, the tree measured faster,
/// 10 us against 16 for 64 KiB) run as [`Reduce::halves`]; shorter ones above [`FOLD_MAX`]
/// down the tree and back.
pub(crate) const HALVES_MIN: usize = 8192;

/// Where a reduction's result goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dest {
    /// One rank.
    Root(u32),
    /// Every rank.
    All,
}

/// Binomial-tree reduction rooted at team rank 0 (so operands combine in
/// team-rank order whatever the root: a non-commutative op is fine), then
/// either one message to the root or a broadcast to all.
pub(crate) struct Reduce<T, F> {
    dest: Dest,
    acc: Vec<T>,
    /// The element count every member passes.
    count: usize,
    /// Next child distance to combine.
    m: u64,
    op: F,
    phase: RPhase<T>,
    /// The contributions travel with the agreement (an allgather of
    /// them), and every rank folds them itself.
    fold: bool,
    broken: Option<Broken>,
    /// The result, at the root (or everywhere for `Dest::All`).
    pub(crate) result: Option<Vec<T>>,
}

impl<T: super::Element, F: Combine<T>> Reduce<T, F> {
    pub(crate) fn new(dest: Dest, mine: Vec<T>, op: F) -> Self {
        Reduce {
            dest,
            count: mine.len(),
            acc: mine,
            m: 1,
            op,
            phase: RPhase::Gather,
            fold: false,
            broken: None,
            result: None,
        }
    }

    /// An allreduce of `mine` over `n` members by reduce-scatter and
    /// allgather (see `halves`): for long arrays.
    pub(crate) fn halves(mine: Vec<T>, op: F, n: u32) -> Self {
        Reduce {
            phase: RPhase::Halves(Halves::new(n)),
            ..Reduce::new(Dest::All, mine, op)
        }
    }

    /// An allreduce of `count` elements whose contributions the
    /// agreement gathers (see [`Dissem::gathering`]): ceil(log2 n) rounds
    /// in all, where the tree takes twice as many beside the agreement.
    /// For small ones, whose gathered bytes stay under [`FOLD_MAX`].
    pub(crate) fn folding(count: usize, op: F) -> Self {
        Reduce {
            fold: true,
            phase: RPhase::Done,
            ..Reduce::new(Dest::All, Vec::with_capacity(count), op)
        }
    }

    /// `b` decoded if it holds `count` elements; otherwise the part stops.
    fn elements(&mut self, b: &[u8], from: u32, what: &str) -> Option<Vec<T>> {
        if b.len() == self.count * T::SIZE {
            return Some(decode(b));
        }
        self.broken = Some(Broken {
            from,
            why: format!(
                "{what} of {} bytes, not {} elements of {} bytes",
                b.len(),
                self.count,
                T::SIZE
            ),
        });
        None
    }
}

impl<T: super::Element, F: Combine<T>> Part for Reduce<T, F> {
    fn agreed(&mut self, agree: &mut Dissem, ctx: &Ctx) -> Result<()> {
        if !self.fold {
            return Ok(());
        }
        // In team-rank order, each of the agreed count (the agreement
        // checked the sizes).
        let mut blocks = agree.blocks(ctx.me()).into_iter();
        let mut acc: Vec<T> = blocks.next().map(|b| decode(&b)).unwrap_or_default();
        for b in blocks {
            self.op.combine(&mut acc, &decode(&b))?;
        }
        self.result = Some(acc);
        Ok(())
    }

    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool> {
        let (n, me) = (ctx.n(), ctx.me());
        if self.broken.is_some() {
            return Ok(false);
        }
        loop {
            match &mut self.phase {
                RPhase::Gather => {
                    let sp = span(me, n);
                    while self.m < sp {
                        if u64::from(me) + self.m < u64::from(n) {
                            let tag = TAG_REDUCE + self.m.trailing_zeros();
                            let child = me + self.m as u32;
                            let Some(b) = ctx.take(c, tag, child)? else {
                                return Ok(false);
                            };
                            let theirs = self.elements(&b, child, "a contribution");
                            c.pool().give(b);
                            let Some(theirs) = theirs else {
                                return Ok(false);
                            };
                            self.op.combine(&mut self.acc, &theirs)?;
                        }
                        self.m <<= 1;
                    }
                    if me != 0 {
                        let tag = TAG_REDUCE + sp.trailing_zeros();
                        let msg = c.pool().encode(&self.acc);
                        ctx.send(c, me - sp as u32, tag, &msg)?;
                        c.pool().give(msg);
                    }
                    self.phase = match self.dest {
                        Dest::Root(0) => {
                            if me == 0 {
                                self.result = Some(std::mem::take(&mut self.acc));
                            }
                            RPhase::Done
                        }
                        Dest::Root(r) => {
                            if me == 0 {
                                let msg = c.pool().encode(&self.acc);
                                ctx.send(c, r, TAG_TO_ROOT, &msg)?;
                                c.pool().give(msg);
                            }
                            if me == r {
                                RPhase::ToRoot
                            } else {
                                RPhase::Done
                            }
                        }
                        Dest::All => {
                            let data = (me == 0).then(|| encode(&self.acc));
                            RPhase::Bcast(Bcast::new(0, data))
                        }
                    };
                }
                RPhase::ToRoot => {
                    let Some(b) = ctx.take(c, TAG_TO_ROOT, 0)? else {
                        return Ok(false);
                    };
                    let v = self.elements(&b, 0, "the result");
                    c.pool().give(b);
                    let Some(v) = v else {
                        return Ok(false);
                    };
                    self.result = Some(v);
                    self.phase = RPhase::Done;
                }
                RPhase::Bcast(b) => {
                    if !b.advance(c, ctx)? {
                        return Ok(false);
                    }
                    let data = b.data.take().unwrap_or_default();
                    let v = self.elements(&data, 0, "the result");
                    c.pool().give(data);
                    let Some(v) = v else {
                        return Ok(false);
                    };
                    self.result = Some(v);
                    self.phase = RPhase::Done;
                }
                RPhase::Halves(h) => {
                    if !h.advance(c, ctx, &self.acc, &mut self.op)? {
                        self.broken = h.broken.take();
                        return Ok(false);
                    }
                    self.result = h.result.take();
                    self.phase = RPhase::Done;
                }
                RPhase::Done => return Ok(true),
            }
        }
    }

    fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }
}
