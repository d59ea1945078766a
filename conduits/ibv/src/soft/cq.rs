//! Completion queues, with overrun as a sticky error.

use crate::verbs::Wc;
use std::collections::{HashMap, VecDeque};

/// One completion queue.
#[derive(Debug)]
pub(crate) struct Cq {
    pub depth: u32,
    pub q: VecDeque<Wc>,
    /// A completion arrived while full: completions were lost, and the
    /// CQ is in error from then on.
    pub overrun: bool,
    /// Armed for one notification (`ibv_req_notify_cq`): the next
    /// completion rings the device's wake socket (see the `wait` module).
    pub armed: bool,
}

/// A device's completion queues.
#[derive(Debug, Default)]
pub(crate) struct Cqs {
    pub map: HashMap<u32, Cq>,
    /// CQs that overran since the engine last moved their QPs to ERR.
    pub newly_overrun: Vec<u32>,
    /// The device's wake socket: a completion to an armed CQ rings it,
    /// and so do peers (see the `wait` module).
    pub wake: super::wait::Wake,
}

impl Cqs {
    /// Deliver a completion to CQ `id` (lost if the CQ overran or is gone).
    pub fn push(&mut self, id: u32, wc: Wc) {
        let Some(cq) = self.map.get_mut(&id) else {
            return;
        };
        if cq.overrun {
            return;
        }
        if cq.q.len() >= cq.depth as usize {
            cq.overrun = true;
            self.newly_overrun.push(id);
            return;
        }
        cq.q.push_back(wc);
        if std::mem::take(&mut cq.armed) {
            self.wake.ring_self();
        }
    }
}
