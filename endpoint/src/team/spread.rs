//! Gather and scatter: one block per member, to or from a root, along the
//! binomial tree over virtual ranks `vr = (rank - root) mod n` that the
//! broadcast uses (see `algo`). The subtree of `vr` holds the blocks of
//! `[vr, vr + span(vr))` (cut at `n`); a child `vr + m` owns
//! `[vr + m, vr + 2m)`. Depth and per-rank fan-out are ceil(log2 n), and
//! every block crosses each tree level once.

use super::algo::{span, Broken, Ctx, Part};
use super::blocks;
use super::engine::Engine;
use super::wire::{TAG_GATHER, TAG_SCATTER};
use rgex_core::Result;

/// The team rank of virtual rank `vr` in a tree rooted at `root`.
fn real(vr: u64, root: u32, n: u32) -> u32 {
    ((vr + u64::from(root)) % u64::from(n)) as u32
}

/// Blocks in the subtree of `vr` (its own included).
fn subtree(vr: u32, n: u32) -> usize {
    span(vr, n).min(u64::from(n - vr)) as usize
}

/// Gather one block per member at `root`: each rank takes its children's
/// subtrees, smallest first (so its blocks stay in virtual-rank order),
/// then sends the lot to its parent.
pub(crate) struct TreeGather {
    root: u32,
    /// Every block's size in bytes, if fixed.
    fixed: Option<usize>,
    /// This rank's subtree's blocks, in virtual-rank order, from its own.
    held: Vec<Vec<u8>>,
    /// The next child's distance.
    m: u64,
    broken: Option<Broken>,
}

impl TreeGather {
    pub(crate) fn new(root: u32, fixed: Option<usize>, mine: Vec<u8>) -> Self {
        TreeGather {
            root,
            fixed,
            held: vec![mine],
            m: 1,
            broken: None,
        }
    }

    /// The blocks in team-rank order at the root, `me` (after the last
    /// step); `None` elsewhere.
    pub(crate) fn result(&mut self, me: u32) -> Option<Vec<Vec<u8>>> {
        if me != self.root {
            return None;
        }
        let mut b = std::mem::take(&mut self.held);
        let len = b.len().max(1);
        b.rotate_right(self.root as usize % len);
        Some(b)
    }
}

impl Part for TreeGather {
    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool> {
        let n = ctx.n();
        let vr = (ctx.me() + n - self.root) % n;
        if self.broken.is_some() {
            return Ok(false);
        }
        let sp = span(vr, n);
        while self.m < sp {
            let child = u64::from(vr) + self.m;
            if child < u64::from(n) {
                let from = real(child, self.root, n);
                let Some(msg) = ctx.take(c, TAG_GATHER, from)? else {
                    return Ok(false);
                };
                match blocks::decode(&msg, subtree(child as u32, n), self.fixed) {
                    Ok(mut b) => self.held.append(&mut b),
                    Err(why) => {
                        self.broken = Some(Broken {
                            from,
                            why: format!("a gather's subtree: {why}"),
                        });
                        return Ok(false);
                    }
                }
            }
            self.m <<= 1;
        }
        if vr != 0 {
            let mut msg = Vec::new();
            blocks::encode(&self.held, &mut msg);
            ctx.send(c, real(u64::from(vr) - sp, self.root, n), TAG_GATHER, &msg)?;
            self.held.clear();
        }
        Ok(true)
    }

    fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }
}

/// Scatter one block per member from `root`: each rank takes its
/// subtree's blocks from its parent, keeps its own and sends each child
/// its subtree's, largest first (it has the longest way to go).
pub(crate) struct TreeScatter {
    root: u32,
    fixed: Option<usize>,
    /// At the root, every member's block in team-rank order; elsewhere
    /// filled from the parent's message.
    held: Option<Vec<Vec<u8>>>,
    /// This rank's block (after the last step).
    pub(crate) mine: Vec<u8>,
    broken: Option<Broken>,
}

impl TreeScatter {
    /// `all`: at the root, one block per member in team-rank order.
    pub(crate) fn new(root: u32, fixed: Option<usize>, all: Option<Vec<Vec<u8>>>) -> Self {
        let held = all.map(|mut b| {
            // Virtual-rank order: the root's own block first.
            let len = b.len().max(1);
            b.rotate_left(root as usize % len);
            b
        });
        TreeScatter {
            root,
            fixed,
            held,
            mine: Vec::new(),
            broken: None,
        }
    }
}

impl Part for TreeScatter {
    fn advance(&mut self, c: &Engine, ctx: &Ctx) -> Result<bool> {
        let n = ctx.n();
        let vr = (ctx.me() + n - self.root) % n;
        if self.broken.is_some() {
            return Ok(false);
        }
        let sp = span(vr, n);
        let held = match self.held.take() {
            Some(h) => h,
            None => {
                let parent = real(u64::from(vr) - sp, self.root, n);
                let Some(msg) = ctx.take(c, TAG_SCATTER, parent)? else {
                    return Ok(false);
                };
                match blocks::decode(&msg, subtree(vr, n), self.fixed) {
                    Ok(b) => b,
                    Err(why) => {
                        self.broken = Some(Broken {
                            from: parent,
                            why: format!("a scatter's subtree: {why}"),
                        });
                        return Ok(false);
                    }
                }
            }
        };
        let mut m = sp >> 1;
        while m > 0 {
            let child = u64::from(vr) + m;
            if child < u64::from(n) {
                let first = m as usize;
                let cnt = subtree(child as u32, n);
                let mut msg = Vec::new();
                blocks::encode(&held[first..first + cnt], &mut msg);
                ctx.send(c, real(child, self.root, n), TAG_SCATTER, &msg)?;
            }
            m >>= 1;
        }
        self.mine = held.into_iter().next().unwrap_or_default();
        Ok(true)
    }

    fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }
}
