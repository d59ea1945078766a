//! The collectives' state machines. Each is advanced by [`Step::step`],
//! which never waits; [`Engine::run`] drives one to completion and
//! [`Engine::start`] drives it in the background.
//!
//! Trees are binomial over "virtual ranks" `vr = (rank - root) mod n`:
//! the subtree of `vr` is `[vr, vr + span(vr))`, where `span` is the lowest
//! set bit of `vr` (for the root, the next power of two >= n); its parent
//! is `vr - span(vr)` and its children `vr + m` for powers of two
//! `m < span(vr)`. Depth and per-rank fan-out are ceil(log2 n).

use super::engine::{Engine, Key, Step};
use rgex_core::{Error, Rank, Result, Team};

/// Dissemination rounds: tags `0..64`.
const TAG_BARRIER: u32 = 0;
/// Broadcast: each rank receives once.
const TAG_BCAST: u32 = 0x100;
/// Reduction towards team rank 0: `+ log2(distance)`.
const TAG_REDUCE: u32 = 0x200;
/// The reduced value, from team rank 0 to a root that is not 0.
const TAG_TO_ROOT: u32 = 0x300;
/// Bruck allgather rounds: `+ round`.
const TAG_GATHER: u32 = 0x400;

/// What every collective knows about its instance.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    pub(crate) team: Team,
    pub(crate) id: u64,
    pub(crate) seq: u64,
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
}

/// The size of `vr`'s subtree in a binomial tree of `n`.
fn span(vr: u32, n: u32) -> u64 {
    if vr == 0 {
        u64::from(n).next_power_of_two()
    } else {
        u64::from(vr & vr.wrapping_neg())
    }
}

/// Dissemination barrier: in round k, signal `me + 2^k`, wait for `me - 2^k`.
pub(crate) struct Barrier {
    ctx: Ctx,
    round: u32,
    sent: bool,
}

impl Barrier {
    pub(crate) fn new(ctx: Ctx) -> Self {
        Barrier {
            ctx,
            round: 0,
            sent: false,
        }
    }
}

impl Step for Barrier {
    fn step(&mut self, c: &Engine) -> Result<bool> {
        let (n, me) = (u64::from(self.ctx.n()), u64::from(self.ctx.me()));
        while (1u64 << self.round) < n {
            let tag = TAG_BARRIER + self.round;
            if !self.sent {
                let to = ((me + (1u64 << self.round)) % n) as u32;
                self.ctx.send(c, to, tag, &[])?;
                self.sent = true;
            }
            if c.take(self.ctx.key(tag)).is_none() {
                return Ok(false);
            }
            self.round += 1;
            self.sent = false;
        }
        Ok(true)
    }
}

/// Binomial-tree broadcast of bytes from `root`.
pub(crate) struct Bcast {
    ctx: Ctx,
    root: u32,
    /// The payload: given at the root, received elsewhere.
    pub(crate) data: Option<Vec<u8>>,
    sent: bool,
}

impl Bcast {
    pub(crate) fn new(ctx: Ctx, root: u32, data: Option<Vec<u8>>) -> Self {
        Bcast {
            ctx,
            root,
            data,
            sent: false,
        }
    }
}

impl Step for Bcast {
    fn step(&mut self, c: &Engine) -> Result<bool> {
        let n = self.ctx.n();
        if self.data.is_none() {
            match c.take(self.ctx.key(TAG_BCAST)) {
                Some(d) => self.data = Some(d),
                None => return Ok(false),
            }
        }
        if !self.sent {
            let vr = (self.ctx.me() + n - self.root) % n;
            let data = self.data.as_deref().unwrap_or_default();
            // Largest subtree first: it has the longest way to go.
            let mut m = span(vr, n) >> 1;
            while m > 0 {
                if u64::from(vr) + m < u64::from(n) {
                    let child = ((u64::from(vr) + m + u64::from(self.root)) % u64::from(n)) as u32;
                    self.ctx.send(c, child, TAG_BCAST, data)?;
                }
                m >>= 1;
            }
            self.sent = true;
        }
        Ok(true)
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
    ctx: Ctx,
    dest: Dest,
    acc: Vec<T>,
    /// Next child distance to combine.
    m: u64,
    op: F,
    phase: RPhase,
    /// The result, at the root (or everywhere for `Dest::All`).
    pub(crate) result: Option<Vec<T>>,
}

impl<T: super::Element, F: FnMut(&mut [T], &[T]) -> Result<()>> Reduce<T, F> {
    pub(crate) fn new(ctx: Ctx, dest: Dest, mine: Vec<T>, op: F) -> Self {
        Reduce {
            ctx,
            dest,
            acc: mine,
            m: 1,
            op,
            phase: RPhase::Gather,
            result: None,
        }
    }
}

impl<T: super::Element, F: FnMut(&mut [T], &[T]) -> Result<()>> Step for Reduce<T, F> {
    fn step(&mut self, c: &Engine) -> Result<bool> {
        let (n, me) = (self.ctx.n(), self.ctx.me());
        loop {
            match &mut self.phase {
                RPhase::Gather => {
                    let sp = span(me, n);
                    while self.m < sp {
                        if u64::from(me) + self.m < u64::from(n) {
                            let tag = TAG_REDUCE + self.m.trailing_zeros();
                            let Some(b) = c.take(self.ctx.key(tag)) else {
                                return Ok(false);
                            };
                            let theirs = decode::<T>(&b);
                            if theirs.len() != self.acc.len() || b.len() % T::SIZE != 0 {
                                return Err(Error::BadLength {
                                    what: "reduce: a team member contributed a different element count",
                                    len: b.len() / T::SIZE.max(1),
                                    limit: self.acc.len(),
                                });
                            }
                            (self.op)(&mut self.acc, &theirs)?;
                        }
                        self.m <<= 1;
                    }
                    if me != 0 {
                        let tag = TAG_REDUCE + sp.trailing_zeros();
                        self.ctx.send(c, me - sp as u32, tag, &encode(&self.acc))?;
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
                                self.ctx.send(c, r, TAG_TO_ROOT, &encode(&self.acc))?;
                            }
                            if me == r {
                                RPhase::ToRoot
                            } else {
                                RPhase::Done
                            }
                        }
                        Dest::All => {
                            let data = (me == 0).then(|| encode(&self.acc));
                            RPhase::Bcast(Bcast::new(self.ctx.clone(), 0, data))
                        }
                    };
                }
                RPhase::ToRoot => {
                    let Some(b) = c.take(self.ctx.key(TAG_TO_ROOT)) else {
                        return Ok(false);
                    };
                    self.result = Some(decode(&b));
                    self.phase = RPhase::Done;
                }
                RPhase::Bcast(b) => {
                    if !b.step(c)? {
                        return Ok(false);
                    }
                    self.result = Some(decode(b.data.as_deref().unwrap_or_default()));
                    self.phase = RPhase::Done;
                }
                RPhase::Done => return Ok(true),
            }
        }
    }
}

/// Bruck allgather of one `block`-byte block per rank: in round k, send
/// the first min(2^k, n - held) blocks held to `me - 2^k` and append those
/// of `me + 2^k`. ceil(log2 n) rounds for any n.
pub(crate) struct Allgather {
    ctx: Ctx,
    block: usize,
    buf: Vec<u8>,
    held: u64,
    round: u32,
    sent: bool,
}

impl Allgather {
    pub(crate) fn new(ctx: Ctx, mine: Vec<u8>) -> Self {
        Allgather {
            ctx,
            block: mine.len(),
            buf: mine,
            held: 1,
            round: 0,
            sent: false,
        }
    }

    /// The blocks in team-rank order (after the last step).
    pub(crate) fn result(&self) -> Vec<u8> {
        let n = self.ctx.n() as usize;
        let me = self.ctx.me() as usize;
        let mut out = vec![0u8; self.buf.len()];
        for i in 0..n {
            let r = (me + i) % n;
            out[r * self.block..(r + 1) * self.block]
                .copy_from_slice(&self.buf[i * self.block..(i + 1) * self.block]);
        }
        out
    }
}

impl Step for Allgather {
    fn step(&mut self, c: &Engine) -> Result<bool> {
        let (n, me) = (u64::from(self.ctx.n()), u64::from(self.ctx.me()));
        while self.held < n {
            let dist = 1u64 << self.round;
            let cnt = dist.min(n - self.held) as usize;
            let tag = TAG_GATHER + self.round;
            if !self.sent {
                let to = ((me + n - dist % n) % n) as u32;
                self.ctx.send(c, to, tag, &self.buf[..cnt * self.block])?;
                self.sent = true;
            }
            let Some(b) = c.take(self.ctx.key(tag)) else {
                return Ok(false);
            };
            if b.len() != cnt * self.block {
                return Err(Error::BadLength {
                    what: "allgather: a team member sent a block of another size",
                    len: b.len(),
                    limit: cnt * self.block,
                });
            }
            self.buf.extend_from_slice(&b);
            self.held += cnt as u64;
            self.round += 1;
            self.sent = false;
        }
        Ok(true)
    }
}
