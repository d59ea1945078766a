//! A dissemination barrier over Short AMs: ceil(log2 N) rounds, in round k
//! each rank signals rank + 2^k and waits for rank - 2^k. It polls while it
//! waits, so handlers keep running (a barrier through the launcher's socket
//! would not, and could deadlock a rank waiting for a reply).

use crate::{Endpoint, HandlerId, HandlerTable};
use parking_lot::Mutex;
use rgex_core::{Backoff, Flags, PollSet, Rank, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const ROUNDS: usize = 32;

/// Counts signals per round across all barriers of the job; barrier number
/// `e` (1-based) waits until round k has seen `e` signals. Monotonic counts
/// absorb signals from a peer that is already in the next barrier.
pub(crate) struct Barrier {
    arrived: [AtomicU64; ROUNDS],
    epoch: Mutex<u64>,
    handler: HandlerId,
}

impl Barrier {
    /// Register the barrier's handler at reserved index `index`.
    pub(crate) fn install(table: &HandlerTable, index: u8) -> Result<Arc<Self>> {
        let state = Arc::new_cyclic(|_| Barrier {
            arrived: std::array::from_fn(|_| AtomicU64::new(0)),
            epoch: Mutex::new(0),
            handler: HandlerId(index),
        });
        let s = state.clone();
        table.register_reserved(index, "rgex.barrier", move |_tok, msg| {
            let round = (msg.arg(0) as usize).min(ROUNDS - 1);
            // Release: everything this rank saw before the signal arrived
            // (the ring's acquire of it) is published to the waiting thread.
            s.arrived[round].fetch_add(1, Ordering::Release);
        })?;
        Ok(state)
    }

    /// Wait until every rank has entered the barrier.
    pub(crate) fn run(&self, ep: &Endpoint) -> Result<()> {
        let n = ep.size();
        if n == 1 {
            return Ok(());
        }
        let me = ep.rank().0;
        // One barrier at a time per rank: concurrent callers would steal
        // each other's signals.
        let mut epoch = self.epoch.lock();
        *epoch += 1;
        let e = *epoch;
        let (mut dist, mut round) = (1u32, 0usize);
        while dist < n {
            let to = Rank(((me as u64 + dist as u64) % n as u64) as u32);
            ep.request_short(to, self.handler, &[round as u32], Flags::empty())?;
            let mut backoff = Backoff::new(ep.polite());
            // Acquire: pairs with the handler's Release increment.
            while self.arrived[round].load(Ordering::Acquire) < e {
                if ep.progress(PollSet::All) == 0 {
                    backoff.snooze();
                } else {
                    backoff.reset();
                }
            }
            dist = dist.saturating_mul(2);
            round += 1;
        }
        Ok(())
    }
}
