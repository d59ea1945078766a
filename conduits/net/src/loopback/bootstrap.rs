//! The bootstrap of an in-process job: ranks are threads of one process,
//! and an allgather is a meeting under a lock.

use parking_lot::{Condvar, Mutex};
use rgex_core::{Bootstrap, Error, Result};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a rank waits for the others in one collective before it
/// gives up with an error (a rank that failed or never came).
pub const MEET_LIMIT: Duration = Duration::from_secs(60);

/// One round of an allgather.
#[derive(Default)]
struct Round {
    /// Rounds completed.
    generation: u64,
    /// This round's contributions so far.
    mine: Vec<Option<Vec<u8>>>,
    arrived: usize,
    /// The last completed round's result.
    last: Arc<Vec<Vec<u8>>>,
}

/// What the ranks of one job share.
struct Meeting {
    size: u32,
    round: Mutex<Round>,
    all_here: Condvar,
}

/// One rank's handle on an in-process job's bootstrap.
pub struct ThreadBootstrap {
    rank: u32,
    meeting: Arc<Meeting>,
}

impl ThreadBootstrap {
    /// The bootstraps of a job of `size` ranks, in rank order (hand one
    /// to each rank's thread).
    pub fn job(size: u32) -> Vec<ThreadBootstrap> {
        let meeting = Arc::new(Meeting {
            size,
            round: Mutex::new(Round {
                mine: vec![None; size as usize],
                ..Round::default()
            }),
            all_here: Condvar::new(),
        });
        (0..size)
            .map(|rank| ThreadBootstrap {
                rank,
                meeting: meeting.clone(),
            })
            .collect()
    }
}

impl Bootstrap for ThreadBootstrap {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.meeting.size
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let m = &self.meeting;
        let mut r = m.round.lock();
        let generation = r.generation;
        r.mine[self.rank as usize] = Some(mine.to_vec());
        r.arrived += 1;
        if r.arrived == m.size as usize {
            let all = r.mine.iter_mut().map(|c| c.take().unwrap_or_default());
            r.last = Arc::new(all.collect());
            r.arrived = 0;
            r.generation += 1;
            m.all_here.notify_all();
            return Ok(r.last.to_vec());
        }
        // A round completes only once every rank contributed, so the
        // next cannot complete before this rank has read this one's
        // result: `last` is still ours when the generation moves on.
        let start = Instant::now();
        while r.generation == generation {
            let left = MEET_LIMIT.saturating_sub(start.elapsed());
            if left.is_zero() || m.all_here.wait_for(&mut r, left).timed_out() {
                if r.generation != generation {
                    break;
                }
                return Err(Error::Bootstrap(format!(
                    "rank {} waited {MEET_LIMIT:?} in an in-process allgather for the other ranks of {}",
                    self.rank, m.size
                )));
            }
        }
        Ok(r.last.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_gets_every_contribution_in_rank_order_every_round() {
        let boots = ThreadBootstrap::job(4);
        let threads: Vec<_> = boots
            .into_iter()
            .map(|b| {
                std::thread::spawn(move || {
                    (0..50u8)
                        .map(|round| b.allgather(&[b.rank() as u8, round]).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for t in threads {
            let rounds = t.join().unwrap();
            for (round, all) in rounds.iter().enumerate() {
                let want: Vec<Vec<u8>> = (0..4u8).map(|r| vec![r, round as u8]).collect();
                assert_eq!(all, &want);
            }
        }
    }
}
