//! Inclusive and exclusive scans (prefix reductions in team-rank order)
//! by recursive doubling (Hillis and Steele): in round `k` a rank sends
//! its partial prefix, the reduction over `(me - 2^k, me]`, to `me + 2^k`
//! and folds in the one from `me - 2^k`, which covers the ranks just
//! below its own. After ceil(log2 n) rounds the partial is the inclusive
//! prefix; the folded-in parts alone make the exclusive one. Operands
//! always combine lower ranks first, so an operator need only be
//! associative.

use super::algo::{decode, encode, Broken, Ctx, Part};
use super::engine::Engine;
use super::ops::Combine;
use super::wire::TAG_SCAN;
use rgex_core::Result;

pub(crate) struct Scan<T, F> {
    /// The reduction over `(me - 2^round, me]`.
    pub(crate) partial: Vec<T>,
    /// The reduction over the ranks below this one's (none at rank 0).
    pub(crate) below: Option<Vec<T>>,
    round: u32,
    sent: bool,
    op: F,
    broken: Option<Broken>,
}

impl<T: super::Element, F: Combine<T>> Scan<T, F> {
    pub(crate) fn new(mine: Vec<T>, op: F) -> Self {
        Scan {
            partial: mine,
            below: None,
            round: 0,
            sent: false,
            op,
            broken: None,
        }
    }
}

impl<T: super::Element, F: Combine<T>> Part for Scan<T, F> {
    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool> {
        let (n, me) = (u64::from(ctx.n()), u64::from(ctx.me()));
        if self.broken.is_some() {
            return Ok(false);
        }
        while (1u64 << self.round) < n {
            let dist = 1u64 << self.round;
            if !self.sent {
                if me + dist < n {
                    ctx.send(c, (me + dist) as u32, TAG_SCAN, &encode(&self.partial))?;
                }
                self.sent = true;
            }
            if me >= dist {
                let from = (me - dist) as u32;
                let Some(b) = ctx.take(c, TAG_SCAN, from)? else {
                    return Ok(false);
                };
                if b.len() != self.partial.len() * T::SIZE {
                    self.broken = Some(Broken {
                        from,
                        why: format!(
                            "a partial prefix of {} bytes, not {} elements of {} bytes",
                            b.len(),
                            self.partial.len(),
                            T::SIZE
                        ),
                    });
                    return Ok(false);
                }
                let lower: Vec<T> = decode(&b);
                let mut p = lower.clone();
                self.op.combine(&mut p, &self.partial)?;
                self.partial = p;
                self.below = Some(match self.below.take() {
                    None => lower,
                    Some(b) => {
                        let mut l = lower;
                        self.op.combine(&mut l, &b)?;
                        l
                    }
                });
            }
            self.round += 1;
            self.sent = false;
        }
        Ok(true)
    }

    fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }
}
