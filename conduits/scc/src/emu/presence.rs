//! Who runs each rank of the chip, and whether it has left the job: the
//! [`rgex_core::liveness`] record of every core (its departure word and
//! its process), kept in the chip's region next to the lock registers.
//!
//! This is the job's bookkeeping, not chip state: nothing on the SCC
//! stands for it (a launcher would know its processes), no core reads it
//! through its caches, and it needs no coherence operation. Real atomics,
//! one host cache line per rank, zero (present, no process recorded) in
//! a fresh chip.

use super::chip::ChipShared;
use rgex_core::liveness::{self, Owner, Presence};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Byte offsets of the words of a rank's record.
const DEPARTURE: usize = 0;
const PID: usize = 8;
const START: usize = 16;
const PID_NS: usize = 24;
/// Bytes per rank (one host cache line).
pub(crate) const STRIDE: usize = 64;

/// One rank's record on a chip ([`Chip::presence`](super::Chip::presence)):
/// a [`Presence`] for [`liveness::PeerWatch`]. Keeps the chip mapped.
#[derive(Clone)]
pub struct RankPresence {
    chip: Arc<ChipShared>,
    rank: u32,
}

impl std::fmt::Debug for RankPresence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankPresence")
            .field("rank", &self.rank)
            .field("departure", &self.departure())
            .field("owner", &self.owner())
            .finish()
    }
}

impl RankPresence {
    /// The record of `rank` (in range: the caller checked).
    pub(crate) fn new(chip: Arc<ChipShared>, rank: u32) -> RankPresence {
        debug_assert!(rank < chip.layout.cores());
        RankPresence { chip, rank }
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        self.chip
            .region
            .w(self.chip.map.presence + self.rank as usize * STRIDE + off)
    }

    /// Record this process as the rank's, in the job (done by the rank
    /// itself when it joins, before the set-up collective that ends its
    /// conduit's construction).
    pub fn arrive(&self) {
        let me = Owner::me();
        // Relaxed: peers read these only after the set-up collective that
        // follows (the bootstrap's messages order them across processes),
        // and only to decide about a rank whose operations stall.
        self.word(PID).store(me.pid, Ordering::Relaxed);
        self.word(START).store(me.start, Ordering::Relaxed);
        self.word(PID_NS).store(me.pid_ns, Ordering::Relaxed);
        self.word(DEPARTURE)
            .store(liveness::PRESENT, Ordering::Relaxed);
    }

    /// This process's address of the departure word, for an exit hook
    /// ([`liveness::leave_at_exit`], with [`leave_word`]); valid while a
    /// handle to the chip lives.
    pub fn departure_word(&self) -> usize {
        self.word(DEPARTURE) as *const AtomicU64 as usize
    }
}

/// Record [`liveness::LEFT`] in the departure word at `addr` (from
/// [`RankPresence::departure_word`]): a rank's exit hook.
pub fn leave_word(addr: usize) {
    // SAFETY: `addr` is a departure word of a chip that the registrant
    // keeps mapped until it takes the hook back (`forget_at_exit`, which
    // waits for a running hook); an AtomicU64 in shared memory is valid
    // for any process to use.
    let word = unsafe { &*(addr as *const AtomicU64) };
    liveness::depart(word, liveness::LEFT);
}

impl Presence for RankPresence {
    #[inline]
    fn departure(&self) -> u64 {
        // Relaxed: a verdict on its own (see `liveness::depart`); reading
        // it late only postpones the error to the next check.
        self.word(DEPARTURE).load(Ordering::Relaxed)
    }

    fn owner(&self) -> Owner {
        // Relaxed: see `arrive`.
        Owner {
            pid: self.word(PID).load(Ordering::Relaxed),
            start: self.word(START).load(Ordering::Relaxed),
            pid_ns: self.word(PID_NS).load(Ordering::Relaxed),
        }
    }

    fn depart(&self, how: u64) {
        liveness::depart(self.word(DEPARTURE), how);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Chip, Layout};
    use super::*;

    #[test]
    fn a_record_starts_present_and_keeps_its_first_verdict() {
        let chip = Chip::in_process(Layout::builder(3).check(false).build().unwrap()).unwrap();
        let (a, b) = (chip.presence(1).unwrap(), chip.presence(2).unwrap());
        assert_eq!(a.departure(), liveness::PRESENT);
        assert_eq!(a.owner(), Owner::default(), "nothing recorded yet");
        a.arrive();
        assert_eq!(a.owner(), Owner::me());
        leave_word(a.departure_word());
        a.depart(liveness::DIED);
        assert_eq!(a.departure(), liveness::LEFT, "the first verdict stands");
        assert_eq!(b.departure(), liveness::PRESENT, "one record per rank");
        let e = chip.presence(3).expect_err("out of range").to_string();
        assert!(e.contains('3'), "{e}");
    }
}
