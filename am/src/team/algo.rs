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
use super::signature::{Summary, SUMMARY_LEN};
use super::wire::{Key, TAG_BCAST, TAG_DISSEM, TAG_REDUCE, TAG_TO_ROOT};
use rgex_core::{Error, Rank, Result, Team};

/// What every collective knows about its instance.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    pub(crate) team: Team,
    pub(crate) id: u64,
    pub(crate) seq: u64,
    /// The call, for errors.
    pub(crate) what: &'static str,
}

impl Ctx {
    fn n(&self) -> u32 {
        self.team.size()
    }
    fn me(&self) -> u32 {
        self.team.my_rank()
    }
    fn key(&self, tag: u32) -> Key {
        (self.id, self.seq, tag)
    }
    fn job_rank(&self, r: u32) -> Result<Rank> {
        self.team.world_rank(r)
    }
    fn send(&self, c: &Engine, to: u32, tag: u32, data: &[u8]) -> Result<()> {
        c.send(self.job_rank(to)?, self.key(tag), data)
    }
    /// Message `tag` from team rank `from`, if it has arrived whole.
    fn take(&self, c: &Engine, tag: u32, from: u32) -> Result<Option<Vec<u8>>> {
        Ok(c.take(self.key(tag), self.job_rank(from)?))
    }
}

/// A message from a member that this rank's collective cannot use: the
/// members disagree (and the agreement will say how), or the member broke
/// the protocol.
#[derive(Debug)]
pub(crate) struct Broken {
    /// The sender's team rank.
    from: u32,
    why: String,
}

/// Part of a collective: advanced by [`Coll`], never waits. A message that
/// does not fit is recorded (see [`Broken`]) and the part stops there.
pub(crate) trait Part {
    /// Send what can be sent, take what has arrived; true when finished.
    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool>;
    /// The message that stopped this part.
    fn broken(&self) -> Option<&Broken>;
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
    part_done: bool,
}

impl<P: Part> Coll<P> {
    pub(crate) fn new(ctx: Ctx, agree: Dissem, part: P) -> Self {
        Coll {
            ctx,
            agree,
            part,
            agreed: false,
            part_done: false,
        }
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
                return Err(e);
            }
            if let Some(b) = self.agree.broken() {
                return Err(self.malformed(c, b));
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
}

/// The size of `vr`'s subtree in a binomial tree of `n`.
fn span(vr: u32, n: u32) -> u64 {
    if vr == 0 {
        u64::from(n).next_power_of_two()
    } else {
        u64::from(vr & vr.wrapping_neg())
    }
}

/// Blocks gathered in a dissemination (Bruck's allgather).
struct Gather {
    block: usize,
    /// Blocks of this rank, then of the next ranks in team order
    /// (cyclically).
    buf: Vec<u8>,
}

/// Dissemination over the team: in round k, send to `me - 2^k` what this
/// rank knows (of ranks `me .. me + 2^k`) and learn what `me + 2^k` knows;
/// after ceil(log2 n) rounds every rank knows of every rank. Every message
/// carries the [`Summary`] of the senders' arguments, so every collective
/// runs one to agree on them (a barrier is nothing else); an allgather's
/// blocks travel with it (Bruck's algorithm: round k carries min(2^k,
/// n - held) blocks).
pub(crate) struct Dissem {
    pub(crate) summary: Summary,
    gather: Option<Gather>,
    round: u32,
    sent: bool,
    broken: Option<Broken>,
}

impl Dissem {
    /// An agreement on `summary` (this rank's own).
    pub(crate) fn new(summary: Summary) -> Self {
        Dissem {
            summary,
            gather: None,
            round: 0,
            sent: false,
            broken: None,
        }
    }

    /// An agreement that also gathers one `mine`-sized block per rank.
    pub(crate) fn gathering(summary: Summary, mine: Vec<u8>) -> Self {
        Dissem {
            gather: Some(Gather {
                block: mine.len(),
                buf: mine,
            }),
            ..Dissem::new(summary)
        }
    }

    /// The blocks in team-rank order (after the last step).
    pub(crate) fn gathered(&self, ctx: &Ctx) -> Vec<u8> {
        let Some(g) = &self.gather else {
            return Vec::new();
        };
        let n = ctx.n() as usize;
        let me = ctx.me() as usize;
        let mut out = vec![0u8; g.buf.len()];
        for i in 0..n {
            let r = (me + i) % n;
            out[r * g.block..(r + 1) * g.block]
                .copy_from_slice(&g.buf[i * g.block..(i + 1) * g.block]);
        }
        out
    }
}

impl Part for Dissem {
    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool> {
        let (n, me) = (u64::from(ctx.n()), u64::from(ctx.me()));
        while (1u64 << self.round) < n {
            let dist = 1u64 << self.round;
            let tag = TAG_DISSEM + self.round;
            // Blocks held before this round: min(dist, n).
            let cnt = dist.min(n - dist) as usize;
            if !self.sent {
                let to = ((me + n - dist) % n) as u32;
                let mut msg = Vec::with_capacity(SUMMARY_LEN);
                self.summary.encode(&mut msg);
                if let Some(g) = self.gather.as_ref().filter(|_| self.broken.is_none()) {
                    msg.extend_from_slice(&g.buf[..cnt * g.block]);
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
            let want = self.gather.as_ref().map_or(0, |g| cnt * g.block);
            if rest.len() != want {
                // Another collective's message (the summary tells), or a
                // malformed one.
                self.broken.get_or_insert(Broken {
                    from,
                    why: format!(
                        "{} bytes of blocks in round {}, not {want}",
                        rest.len(),
                        self.round - 1
                    ),
                });
            } else if let Some(g) = self.gather.as_mut().filter(|_| self.broken.is_none()) {
                g.buf.extend_from_slice(rest);
            }
        }
        Ok(true)
    }

    fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }
}

/// Binomial-tree broadcast of bytes from `root`.
pub(crate) struct Bcast {
    root: u32,
    /// The payload: given at the root, received elsewhere.
    pub(crate) data: Option<Vec<u8>>,
    sent: bool,
}

impl Bcast {
    pub(crate) fn new(root: u32, data: Option<Vec<u8>>) -> Self {
        Bcast {
            root,
            data,
            sent: false,
        }
    }
}

impl Part for Bcast {
    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool> {
        let n = ctx.n();
        let vr = (ctx.me() + n - self.root) % n;
        if self.data.is_none() {
            let parent =
                ((u64::from(vr) - span(vr, n) + u64::from(self.root)) % u64::from(n)) as u32;
            match ctx.take(c, TAG_BCAST, parent)? {
                Some(d) => self.data = Some(d),
                None => return Ok(false),
            }
        }
        if !self.sent {
            let data = self.data.as_deref().unwrap_or_default();
            // Largest subtree first: it has the longest way to go.
            let mut m = span(vr, n) >> 1;
            while m > 0 {
                if u64::from(vr) + m < u64::from(n) {
                    let child = ((u64::from(vr) + m + u64::from(self.root)) % u64::from(n)) as u32;
                    ctx.send(c, child, TAG_BCAST, data)?;
                }
                m >>= 1;
            }
            self.sent = true;
        }
        Ok(true)
    }

    fn broken(&self) -> Option<&Broken> {
        None
    }
}

/// Bytes <-> elements, for reductions.
pub(crate) fn decode<T: super::Element>(b: &[u8]) -> Vec<T> {
    b.chunks_exact(T::SIZE).map(T::read).collect()
}

pub(crate) fn encode<T: super::Element>(v: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * T::SIZE);
    for x in v {
        x.write(&mut out);
    }
    out
}

enum RPhase {
    Gather,
    ToRoot,
    Bcast(Bcast),
    Done,
}

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
    phase: RPhase,
    broken: Option<Broken>,
    /// The result, at the root (or everywhere for `Dest::All`).
    pub(crate) result: Option<Vec<T>>,
}

impl<T: super::Element, F: FnMut(&mut [T], &[T]) -> Result<()>> Reduce<T, F> {
    pub(crate) fn new(dest: Dest, mine: Vec<T>, op: F) -> Self {
        Reduce {
            dest,
            count: mine.len(),
            acc: mine,
            m: 1,
            op,
            phase: RPhase::Gather,
            broken: None,
            result: None,
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

impl<T: super::Element, F: FnMut(&mut [T], &[T]) -> Result<()>> Part for Reduce<T, F> {
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
                            let Some(theirs) = self.elements(&b, child, "a contribution") else {
                                return Ok(false);
                            };
                            (self.op)(&mut self.acc, &theirs)?;
                        }
                        self.m <<= 1;
                    }
                    if me != 0 {
                        let tag = TAG_REDUCE + sp.trailing_zeros();
                        ctx.send(c, me - sp as u32, tag, &encode(&self.acc))?;
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
                                ctx.send(c, r, TAG_TO_ROOT, &encode(&self.acc))?;
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
                    let Some(v) = self.elements(&b, 0, "the result") else {
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
                    let Some(v) = self.elements(&data, 0, "the result") else {
                        return Ok(false);
                    };
                    self.result = Some(v);
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
