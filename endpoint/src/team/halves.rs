//! Allreduce of long arrays by reduce-scatter and allgather, both by
//! direct exchange (bandwidth-optimal: each rank sends and receives
//! (n - 1)/n of the array twice, where a tree's root handles all of it
//! log2 n times). The array is cut into n chunks, chunk `i` owned by team
//! rank `i`. First every rank sends each owner its part of that owner's
//! chunk (in pairwise-exchange order, as an alltoall does), and each
//! owner folds the n parts in team-rank order (so an operator need only
//! be associative); then every owner sends its reduced chunk to every
//! rank.

use super::algo::{decode, Broken, Ctx};
use super::engine::Engine;
use super::ops::Combine;
use super::wire::{TAG_ALLGATHER_CHUNK, TAG_REDUCE_CHUNK};
use super::Element;
use rgex_core::Result;

/// Elements `[start, end)` of chunk `i` of `count` in `n` chunks.
fn chunk(i: usize, count: usize, n: usize) -> std::ops::Range<usize> {
    i * count / n..(i + 1) * count / n
}

enum Phase {
    Scatter,
    Gather,
    Done,
}

/// The exchange's state; the array and the operator stay with the
/// reduction that drives it (`Reduce`).
pub(crate) struct Halves<T> {
    phase: Phase,
    sent: bool,
    /// Scatter: the parts of this rank's chunk, by team rank; gather:
    /// the reduced chunks, by owner.
    parts: Vec<Option<Vec<T>>>,
    missing: usize,
    pub(crate) broken: Option<Broken>,
    /// Every rank's result (after the last step).
    pub(crate) result: Option<Vec<T>>,
}

impl<T: Element> Halves<T> {
    pub(crate) fn new(n: u32) -> Self {
        Halves {
            phase: Phase::Scatter,
            sent: false,
            parts: vec![None; n as usize],
            missing: n as usize,
            broken: None,
            result: None,
        }
    }

    /// Take every part under `tag` that has arrived, each `want(r)`
    /// elements long; true once all have.
    fn collect(
        &mut self,
        c: &Engine,
        ctx: &Ctx,
        tag: u32,
        want: impl Fn(usize) -> usize,
    ) -> Result<bool> {
        let (n, me) = (ctx.n(), ctx.me());
        for k in 1..n {
            if self.missing == 0 {
                break;
            }
            let from = (me + n - k) % n;
            if self.parts[from as usize].is_some() {
                continue;
            }
            let Some(b) = ctx.take(c, tag, from)? else {
                continue;
            };
            let w = want(from as usize);
            if b.len() != w * T::SIZE {
                self.broken = Some(Broken {
                    from,
                    why: format!(
                        "an allreduce chunk of {} bytes, not {w} elements of {} bytes",
                        b.len(),
                        T::SIZE
                    ),
                });
                return Ok(false);
            }
            self.parts[from as usize] = Some(decode(&b));
            c.pool().give(b);
            self.missing -= 1;
        }
        Ok(self.missing == 0)
    }

    /// Send what can be sent, take what has arrived (never waits); true
    /// when `result` holds the reduction of every member's `data` with
    /// `op`.
    pub(crate) fn advance<C: Combine<T>>(
        &mut self,
        c: &Engine,
        ctx: &Ctx,
        data: &[T],
        op: &mut C,
    ) -> Result<bool> {
        let (n, me) = (ctx.n() as usize, ctx.me() as usize);
        let count = data.len();
        if self.broken.is_some() {
            return Ok(false);
        }
        loop {
            match self.phase {
                Phase::Scatter => {
                    if !self.sent {
                        for k in 1..n {
                            let to = (me + k) % n;
                            let part = c.pool().encode(&data[chunk(to, count, n)]);
                            ctx.send(c, to as u32, TAG_REDUCE_CHUNK, &part)?;
                            c.pool().give(part);
                        }
                        self.parts[me] = Some(data[chunk(me, count, n)].to_vec());
                        self.missing -= 1;
                        self.sent = true;
                    }
                    let mine = chunk(me, count, n).len();
                    if !self.collect(c, ctx, TAG_REDUCE_CHUNK, |_| mine)? {
                        return Ok(false);
                    }
                    let mut parts = std::mem::take(&mut self.parts).into_iter().flatten();
                    let mut acc = parts.next().unwrap_or_default();
                    for p in parts {
                        op.combine(&mut acc, &p)?;
                    }
                    let msg = c.pool().encode(&acc);
                    for k in 1..n {
                        ctx.send(c, ((me + k) % n) as u32, TAG_ALLGATHER_CHUNK, &msg)?;
                    }
                    c.pool().give(msg);
                    self.parts = vec![None; n];
                    self.parts[me] = Some(acc);
                    self.missing = n - 1;
                    self.phase = Phase::Gather;
                }
                Phase::Gather => {
                    if !self.collect(c, ctx, TAG_ALLGATHER_CHUNK, |r| chunk(r, count, n).len())? {
                        return Ok(false);
                    }
                    let parts = std::mem::take(&mut self.parts);
                    self.result = Some(parts.into_iter().flatten().flatten().collect());
                    self.phase = Phase::Done;
                }
                Phase::Done => return Ok(true),
            }
        }
    }
}
