//! Received messages waiting for their handlers, per direction, and the
//! batches a poll takes of them.

use parking_lot::MutexGuard;
use rgex_core::Direction;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Messages delivered per direction per poll call at most, so one busy
/// sender cannot keep a poller from returning.
pub(crate) const POLL_BATCH: usize = 32;

/// Request or reply, as an index into per-direction arrays.
#[inline]
pub(crate) fn dir_index(d: Direction) -> usize {
    match d {
        Direction::Request => 0,
        Direction::Reply => 1,
    }
}

/// How many received messages wait for delivery, per direction: kept
/// beside the queues (written under the state lock whenever they change)
/// so that a poll with nothing to deliver takes no lock. It was 8 of the
/// 10 atomic read-modify-writes of an idle poll (each delivery direction
/// took its delivery lock and the state lock to find its queue empty):
/// 22% of a rank's time in an AM ping-pong over shm.
#[derive(Default)]
pub(crate) struct ReadyCount([AtomicUsize; 2]);

impl ReadyCount {
    /// Record the length of direction `dir`'s queue (under the state lock).
    #[inline]
    pub fn set(&self, dir: usize, n: usize) {
        // Relaxed: a hint. The queue itself is read under the state lock;
        // a poller that reads a stale 0 delivers at its next poll (the
        // thread that queued a message reads its own store), and a stale
        // non-zero only takes the locks for nothing.
        self.0[dir].store(n, Ordering::Relaxed);
    }

    /// True if direction `dir` may have messages waiting.
    #[inline]
    pub fn any(&self, dir: usize) -> bool {
        // Relaxed: see `set`.
        self.0[dir].load(Ordering::Relaxed) != 0
    }
}

/// A received message waiting for its handler.
#[derive(Clone, Copy)]
pub(crate) struct Ready {
    pub buf: u32,
    pub len: u32,
}

/// Received messages waiting for delivery, per direction, with their
/// count readable without the lock (see [`ReadyCount`]).
#[derive(Default)]
pub(crate) struct ReadyQueues {
    queues: [VecDeque<Ready>; 2],
    count: Arc<ReadyCount>,
}

impl ReadyQueues {
    /// The lock-free count, to share with the conduit.
    pub fn count(&self) -> Arc<ReadyCount> {
        self.count.clone()
    }

    /// True if nothing of direction `dir` waits.
    #[inline]
    pub fn is_empty(&self, dir: usize) -> bool {
        self.queues[dir].is_empty()
    }

    /// Message `r` of direction `dir` arrived.
    #[inline]
    pub fn push(&mut self, dir: usize, r: Ready) {
        let q = &mut self.queues[dir];
        q.push_back(r);
        self.count.set(dir, q.len());
    }
}

/// Messages of one direction taken off the ready queue for delivery,
/// holding that direction's delivery lock until they are consumed (so
/// messages from one sender reach the handlers in arrival order).
pub(crate) struct Batch<'a> {
    pub ready: [Ready; POLL_BATCH],
    pub len: usize,
    _one: MutexGuard<'a, ()>,
}

impl<'a> Batch<'a> {
    /// Up to [`POLL_BATCH`] messages of direction `dir` from `from`
    /// (under the state lock), under the delivery lock `one`.
    #[inline]
    pub fn take(from: &mut ReadyQueues, dir: usize, one: MutexGuard<'a, ()>) -> Self {
        let mut ready = [Ready { buf: 0, len: 0 }; POLL_BATCH];
        let q = &mut from.queues[dir];
        let len = q.len().min(POLL_BATCH);
        for (slot, r) in ready.iter_mut().zip(q.drain(..len)) {
            *slot = r;
        }
        from.count.set(dir, q.len());
        Batch {
            ready,
            len,
            _one: one,
        }
    }
}
