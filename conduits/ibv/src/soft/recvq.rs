//! Receive queues: a QP's own, or a shared one (SRQ).

use crate::verbs::RecvWr;
use std::collections::VecDeque;

/// Posted receives, bounded.
#[derive(Debug)]
pub(crate) struct RecvQueue {
    pub q: VecDeque<RecvWr>,
    pub max: u32,
}

impl RecvQueue {
    /// An empty queue of `max` entries.
    pub fn new(max: u32) -> Self {
        RecvQueue {
            q: VecDeque::new(),
            max,
        }
    }

    /// Post; `false` when full.
    pub fn post(&mut self, wr: RecvWr) -> bool {
        if self.q.len() >= self.max as usize {
            return false;
        }
        self.q.push_back(wr);
        true
    }
}

/// A shared receive queue, in its PD.
#[derive(Debug)]
pub(crate) struct Srq {
    pub pd: u32,
    pub rq: RecvQueue,
}
