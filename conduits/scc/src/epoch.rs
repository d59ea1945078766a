//! One-sided epochs in the style of MPI general active target
//! synchronisation (post / start / complete / wait), over a bare [`Core`]
//! and a [`Plan`]: the conduit drives it for its rank, and the benchmark
//! drives 48 of them on one in-process chip.
//!
//! # Protocol
//!
//! State lives near its owner, in the owner's MPB, uncached:
//!
//! - **match vector** of origin `o`: entry `t` is the number of exposure
//!   epochs target `t` has posted *to `o`* (a per-pair sequence number).
//!   Only `t` writes it, so a plain uncached store publishes it; `o` polls
//!   its own MPB (on its tile: the cheapest place to spin);
//! - **completion counter** of target `t`: access epochs completed towards
//!   `t`, cumulative. Many origins update it, so each does so under `t`'s
//!   test-and-set register (read, add one, write, release).
//!
//! Operations (`n` = group size):
//!
//! - `post(origins)` (target): release its own earlier stores (drain),
//!   then bump its private per-origin post count and store it into each
//!   origin's match entry: `n` uncached stores, no waiting.
//! - `start(targets)` (origin): bumps its private per-target access count
//!   and returns: nothing on the chip (*trigger-only*).
//! - first access to a target `t` of the epoch: waits until match entry `t`
//!   has reached the access count of `t` (the post of *this* epoch), then
//!   acquires (CL1INVMB) and proceeds. Later accesses to `t` go straight.
//! - `complete()` (origin): every put has drained already (a put completes
//!   remotely when drained); for each target, once it has posted, take its
//!   lock, add one to its counter, release. Targets are visited in an order
//!   staggered by rank (`me + 1, me + 2, ...`) and a busy lock is skipped
//!   and retried later, so origins completing at once mostly meet distinct
//!   locks: the cost stays linear in the targets, with no convoy.
//! - `wait()` / `test()` (target): the counter has reached the total of the
//!   groups of every post so far; then acquire (CL1INVMB).
//!
//! **Why per-pair sequence numbers.** A boolean "posted" flag per origin
//! (one per origin, set by any target) confuses epochs: if the origin's next
//! epoch targets `t2` and `t2` posts early, while the origin still accesses
//! `t1` in the current epoch, the flag says "posted" for `t1` too. A flag per
//! pair that the origin clears when it uses it loses a post that `t` made
//! for the next epoch before the clear. Counting posts per pair and
//! comparing with the origin's own count per target has neither problem:
//! entry `t` can only run ahead, and only for epochs that also target `t`.
//! The same holds for the cumulative counter: an origin's complete of epoch
//! `k + 1` towards `t` waits for `t`'s post `k + 1`, which `t` makes only
//! after its wait for epoch `k` returned, so a count is never credited to
//! the wrong epoch.
//!
//! # Coherence modes
//!
//! [`Coherence::Targeted`] is the protocol above: drains before releases,
//! CL1INVMB after acquires, MPBT segments. [`Coherence::WholeCache`] is the
//! naive comparison protocol on write-back segments: a whole-cache flush
//! (write back everything dirty, invalidate everything) at every
//! synchronisation call (post, start, complete, wait), nothing per access.

use crate::address_plan::Plan;
use crate::emu::{Addr, Core, LockId};
use rgex_core::{Error, Rank, Result};

/// How an epoch makes data coherent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coherence {
    /// Drain the write-combine buffer before a release, invalidate the MPBT
    /// lines after an acquire (the protocol of the conduit).
    Targeted,
    /// Flush and invalidate the whole cache at every synchronisation (the
    /// naive protocol the benchmark compares with).
    WholeCache,
}

/// `a >= b` on wrapping 32-bit sequence numbers.
#[inline]
pub fn seq_ge(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

struct Access {
    /// Targets of the epoch, in staggered order.
    targets: Vec<u32>,
    /// Per rank: in the group.
    member: Vec<bool>,
    /// Per rank: its post for this epoch was seen.
    ready: Vec<bool>,
    /// Targets whose counter is still to be bumped by `complete`.
    pending: Vec<u32>,
    /// Where the next complete step starts looking in `pending`.
    cursor: usize,
    /// `complete` released (drained / flushed) already.
    released: bool,
    /// A target whose lock this core holds between two complete steps.
    holding: Option<u32>,
}

struct Exposure {
    origins: Vec<u32>,
}

/// What a [`Epochs::complete_step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The access epoch is complete.
    Done,
    /// Something happened (a lock taken, a counter bumped): call again.
    Progress,
    /// Nothing could be done now (posts missing, locks busy): call again
    /// later.
    Blocked,
}

/// One rank's epoch state (private to the rank). Every call takes the
/// rank's [`Core`] and the job's [`Plan`].
pub struct Epochs {
    me: u32,
    mode: Coherence,
    /// Per target: access epochs started that include it.
    access_seq: Vec<u32>,
    /// Per origin: exposure epochs posted that include it.
    post_seq: Vec<u32>,
    /// Completions expected in total by the posts so far.
    expected: u32,
    access: Option<Access>,
    exposure: Option<Exposure>,
}

impl std::fmt::Debug for Epochs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Epochs")
            .field("rank", &self.me)
            .field("mode", &self.mode)
            .field("access", &self.access.as_ref().map(|a| &a.targets))
            .field("exposure", &self.exposure.as_ref().map(|e| &e.origins))
            .finish()
    }
}

fn group(me: u32, cores: u32, ranks: &[u32], what: &str) -> Result<Vec<u32>> {
    let mut seen = vec![false; cores as usize];
    for &r in ranks {
        if r >= cores {
            return Err(Error::RankOutOfRange {
                rank: r,
                size: cores,
            });
        }
        if std::mem::replace(&mut seen[r as usize], true) {
            return Err(Error::Config(format!(
                "{}: {what} names {} twice",
                Rank(me),
                Rank(r)
            )));
        }
    }
    // Staggered: me + 1, me + 2, ... (mod cores), then me.
    Ok((1..=cores)
        .map(|i| (me + i) % cores)
        .filter(|&r| seen[r as usize])
        .collect())
}

impl Epochs {
    /// The state of rank `me` of a job of `cores` ranks.
    pub fn new(me: u32, cores: u32, mode: Coherence) -> Epochs {
        Epochs {
            me,
            mode,
            access_seq: vec![0; cores as usize],
            post_seq: vec![0; cores as usize],
            expected: 0,
            access: None,
            exposure: None,
        }
    }

    /// The coherence mode.
    pub fn mode(&self) -> Coherence {
        self.mode
    }

    fn release(&self, core: &mut Core) {
        core.drain();
        if self.mode == Coherence::WholeCache {
            core.flush();
        }
    }

    fn acquire(&self, core: &mut Core) {
        match self.mode {
            Coherence::Targeted => {
                core.invalidate_mpbt();
            }
            Coherence::WholeCache => {
                core.flush();
            }
        }
    }

    /// Open an exposure epoch for `origins`: they may access this rank's
    /// segment until each has completed. Never waits.
    pub fn post(&mut self, core: &mut Core, plan: &Plan, origins: &[u32]) -> Result<()> {
        if let Some(e) = &self.exposure {
            return Err(Error::Config(format!(
                "{}: post while the exposure epoch for {:?} is still open (wait for it first)",
                Rank(self.me),
                e.origins
            )));
        }
        let origins = group(self.me, plan.cores(), origins, "post")?;
        // Release: this rank's own stores to its segment reach memory
        // before any origin can see the post.
        self.release(core);
        self.expected = self.expected.wrapping_add(origins.len() as u32);
        for &o in &origins {
            let s = self.post_seq[o as usize].wrapping_add(1);
            self.post_seq[o as usize] = s;
            core.write_u32_release(plan.epoch_match(o, self.me), s)?;
        }
        self.exposure = Some(Exposure { origins });
        Ok(())
    }

    /// Open an access epoch towards `targets`. Never waits (trigger-only:
    /// the first access to each target waits for its post).
    pub fn start(&mut self, core: &mut Core, plan: &Plan, targets: &[u32]) -> Result<()> {
        if let Some(a) = &self.access {
            return Err(Error::Config(format!(
                "{}: start while the access epoch to {:?} is still open (complete it first)",
                Rank(self.me),
                a.targets
            )));
        }
        let targets = group(self.me, plan.cores(), targets, "start")?;
        let n = plan.cores() as usize;
        let mut member = vec![false; n];
        for &t in &targets {
            member[t as usize] = true;
            self.access_seq[t as usize] = self.access_seq[t as usize].wrapping_add(1);
        }
        if self.mode == Coherence::WholeCache {
            core.flush();
        }
        self.access = Some(Access {
            pending: targets.clone(),
            targets,
            member,
            ready: vec![false; n],
            cursor: 0,
            released: false,
            holding: None,
        });
        Ok(())
    }

    /// True while an access epoch is open.
    pub fn in_access_epoch(&self) -> bool {
        self.access.is_some()
    }

    /// True while an exposure epoch is open.
    pub fn in_exposure_epoch(&self) -> bool {
        self.exposure.is_some()
    }

    /// The targets of the open access epoch.
    pub fn access_targets(&self) -> &[u32] {
        self.access.as_ref().map_or(&[], |a| &a.targets)
    }

    /// The origins of the open exposure epoch.
    pub fn exposure_origins(&self) -> &[u32] {
        self.exposure.as_ref().map_or(&[], |e| &e.origins)
    }

    /// The post count of target `t` this rank's current access epoch waits
    /// for (for messages).
    pub fn awaited_post(&self, t: u32) -> u32 {
        self.access_seq[t as usize]
    }

    /// The completion count this rank's `wait` waits for (for messages).
    pub fn awaited_completions(&self) -> u32 {
        self.expected
    }

    /// May this rank access `t` now? True outside an access epoch or for a
    /// rank not in its group (no epoch synchronisation then). Inside, the
    /// first call that sees `t`'s post for this epoch acquires; false means
    /// "not posted yet: try again later".
    pub fn access_ready(&mut self, core: &mut Core, plan: &Plan, t: u32) -> Result<bool> {
        let Some(a) = &self.access else {
            return Ok(true);
        };
        let i = t as usize;
        if !a.member.get(i).copied().unwrap_or(false) || a.ready[i] {
            return Ok(true);
        }
        let posted = core.read_u32_acquire(plan.epoch_match(self.me, t))?;
        if !seq_ge(posted, self.access_seq[i]) {
            return Ok(false);
        }
        if self.mode == Coherence::Targeted {
            // Acquire: copies of t's segment cached before the post go.
            self.acquire(core);
        }
        self.access.as_mut().expect("checked above").ready[i] = true;
        Ok(true)
    }

    /// Put `data` at `offset` of `t`'s segment, if `t` may be accessed now
    /// (false: not posted yet, nothing written). Targeted: through the WCB,
    /// drained before returning (remote completion). Whole-cache: plain
    /// stores, made visible by `complete`'s flush.
    pub fn put(
        &mut self,
        core: &mut Core,
        plan: &Plan,
        t: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<bool> {
        let at = seg_addr(plan, t, offset, data.len())?;
        if !self.access_ready(core, plan, t)? {
            return Ok(false);
        }
        core.write(at, data)?;
        if self.mode == Coherence::Targeted {
            core.drain();
        }
        Ok(true)
    }

    /// Get `out.len()` bytes at `offset` of `t`'s segment, if `t` may be
    /// accessed now (false: not posted yet, nothing read).
    pub fn get(
        &mut self,
        core: &mut Core,
        plan: &Plan,
        t: u32,
        offset: u64,
        out: &mut [u8],
    ) -> Result<bool> {
        let at = seg_addr(plan, t, offset, out.len())?;
        if !self.access_ready(core, plan, t)? {
            return Ok(false);
        }
        core.read(at, out)?;
        Ok(true)
    }

    /// One step of `complete`: never waits. Call until [`Step::Done`]. A
    /// [`Step::Progress`] right after a lock was taken must be followed by
    /// another call before the core does anything else with that lock's
    /// owner (the conduit calls it again at once).
    pub fn complete_step(&mut self, core: &mut Core, plan: &Plan) -> Result<Step> {
        let Some(a) = self.access.as_mut() else {
            return Err(Error::Config(format!(
                "{}: complete without an open access epoch (start first)",
                Rank(self.me)
            )));
        };
        if !a.released {
            a.released = true;
            // Release: puts are drained already (targeted); this also
            // covers stores made outside `put`.
            core.drain();
            if self.mode == Coherence::WholeCache {
                core.flush();
            }
        }
        if let Some(t) = a.holding.take() {
            let c = plan.epoch_counter(t);
            let v = core.read_u32(c)?;
            core.write_u32_release(c, v.wrapping_add(1))?;
            core.tas_release(LockId(t))?;
            a.pending.retain(|&p| p != t);
            if a.pending.is_empty() {
                self.access = None;
                return Ok(Step::Done);
            }
            return Ok(Step::Progress);
        }
        if a.pending.is_empty() {
            self.access = None;
            return Ok(Step::Done);
        }
        let (n, cursor) = (a.pending.len(), a.cursor);
        for j in 0..n {
            let idx = (cursor + j) % n;
            let t = self.access.as_ref().expect("open").pending[idx];
            if !self.access_ready(core, plan, t)? {
                continue;
            }
            if core.tas_try(LockId(t))? {
                let a = self.access.as_mut().expect("open");
                a.holding = Some(t);
                a.cursor = idx;
                return Ok(Step::Progress);
            }
        }
        let a = self.access.as_mut().expect("open");
        a.cursor = (a.cursor + 1) % n;
        Ok(Step::Blocked)
    }

    /// Targets whose completion is still to be signalled, and whether each
    /// has posted (for messages).
    pub fn pending_targets(&self) -> Vec<(u32, bool)> {
        self.access.as_ref().map_or_else(Vec::new, |a| {
            a.pending
                .iter()
                .map(|&t| (t, a.ready[t as usize]))
                .collect()
        })
    }

    /// True once every origin of the open exposure epoch has completed
    /// (then the epoch is closed and acquired); never waits.
    pub fn test(&mut self, core: &mut Core, plan: &Plan) -> Result<bool> {
        if self.exposure.is_none() {
            return Err(Error::Config(format!(
                "{}: wait or test without an open exposure epoch (post first)",
                Rank(self.me)
            )));
        }
        let got = self.completions(core, plan)?;
        if !seq_ge(got, self.expected) {
            return Ok(false);
        }
        self.acquire(core);
        self.exposure = None;
        Ok(true)
    }

    /// This rank's completion counter as memory holds it now.
    pub fn completions(&self, core: &mut Core, plan: &Plan) -> Result<u32> {
        core.read_u32_acquire(plan.epoch_counter(self.me))
    }
}

/// The chip address of `[offset, offset + len)` of `t`'s segment, checked.
pub fn seg_addr(plan: &Plan, t: u32, offset: u64, len: usize) -> Result<Addr> {
    if t >= plan.cores() {
        return Err(Error::RankOutOfRange {
            rank: t,
            size: plan.cores(),
        });
    }
    rgex_core::segment::check_range(Rank(t), plan.segment_len(t), offset, len as u64)?;
    Ok(plan.segment(t).offset(offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_order() {
        assert!(seq_ge(5, 5) && seq_ge(6, 5) && !seq_ge(4, 5));
        assert!(seq_ge(1, u32::MAX) && !seq_ge(u32::MAX, 1));
    }

    #[test]
    fn staggered_groups() {
        assert_eq!(group(2, 5, &[0, 1, 2, 3], "x").unwrap(), vec![3, 0, 1, 2]);
        assert!(group(0, 4, &[1, 1], "x").is_err());
        assert!(group(0, 4, &[4], "x").is_err());
        assert!(group(0, 4, &[], "x").unwrap().is_empty());
    }
}
