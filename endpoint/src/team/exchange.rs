//! Alltoall: every member sends one block to every other, by pairwise
//! exchange: in step `k` (1 <= k < n) a rank sends to `me + k` and takes
//! from `me - k`, so in every step each rank sends one block and receives
//! one, and no rank is the target of everyone at once. The sends are
//! eager (each an AM, in Medium fragments), so all of them go out at the
//! start, in step order, and the blocks are taken in whatever order they
//! arrive.
//!
//! Every block carries its sender's summary (see `signature.rs`), so the
//! exchange is the collective's agreement too: each member merges every
//! other's, in one round where a dissemination beside it took
//! ceil(log2 n) more.

use super::algo::{Broken, Ctx, Part};
use super::engine::Engine;
use super::signature::{Summary, SUMMARY_LEN};
use super::wire::TAG_ALLTOALL;
use rgex_core::Result;

pub(crate) struct Exchange {
    /// Every block's size in bytes, if fixed.
    fixed: Option<usize>,
    /// This rank's block for each member, in team-rank order (emptied as
    /// they are sent).
    outgoing: Vec<Vec<u8>>,
    sent: bool,
    /// The block from each member, in team-rank order.
    pub(crate) incoming: Vec<Option<Vec<u8>>>,
    /// Blocks still to take.
    missing: usize,
    broken: Option<Broken>,
    /// This member's summary, merged with each member's as its block
    /// arrives (see `Part::carry_agreement`).
    summary: Option<Summary>,
}

impl Exchange {
    /// `outgoing`: one block per member, in team-rank order.
    pub(crate) fn new(fixed: Option<usize>, outgoing: Vec<Vec<u8>>) -> Self {
        let n = outgoing.len();
        Exchange {
            fixed,
            outgoing,
            sent: false,
            incoming: vec![None; n],
            missing: n,
            broken: None,
            summary: None,
        }
    }

    /// Record the first thing that does not fit.
    fn break_on(&mut self, from: u32, why: String) {
        self.broken.get_or_insert(Broken { from, why });
    }

    /// The blocks received, in team-rank order (after the last step).
    pub(crate) fn blocks(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.incoming)
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect()
    }
}

impl Part for Exchange {
    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool> {
        let (n, me) = (ctx.n(), ctx.me());
        if !self.sent {
            let mut msg = Vec::new();
            for k in 1..n {
                let to = (me + k) % n;
                let block = std::mem::take(&mut self.outgoing[to as usize]);
                msg.clear();
                if let Some(s) = &self.summary {
                    s.encode(&mut msg);
                }
                msg.extend_from_slice(&block);
                ctx.send(c, to, TAG_ALLTOALL, &msg)?;
            }
            self.incoming[me as usize] = Some(std::mem::take(&mut self.outgoing[me as usize]));
            self.missing -= 1;
            self.sent = true;
        }
        for k in 1..n {
            if self.missing == 0 {
                break;
            }
            let from = (me + n - k) % n;
            if self.incoming[from as usize].is_some() {
                continue;
            }
            let Some(mut b) = ctx.take(c, TAG_ALLTOALL, from)? else {
                continue;
            };
            self.missing -= 1;
            if let Some(mine) = &mut self.summary {
                let theirs = b.get(..SUMMARY_LEN).and_then(|h| Summary::decode(h, n));
                let Some(theirs) = theirs else {
                    let why = format!("an alltoall message of {} bytes without a summary", b.len());
                    self.break_on(from, why);
                    self.incoming[from as usize] = Some(Vec::new());
                    continue;
                };
                mine.merge(&theirs);
                b.drain(..SUMMARY_LEN);
            }
            if let Some(f) = self.fixed.filter(|&f| f != b.len()) {
                self.break_on(
                    from,
                    format!("an alltoall block of {} bytes, not {f}", b.len()),
                );
            }
            self.incoming[from as usize] = Some(b);
        }
        Ok(self.missing == 0)
    }

    fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }

    fn carry_agreement(&mut self, summary: Summary) -> bool {
        self.summary = Some(summary);
        true
    }

    fn agreement(&self) -> Option<Summary> {
        self.summary
    }
}
