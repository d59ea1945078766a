//! Asking a peer we wait for whether it is still there.
//!
//! A sender out of credits towards a peer sends it nothing, so nothing
//! fails when the peer's process is gone without a goodbye (killed, or
//! `_exit`: no exit handler ran, see `farewell.rs`): it would wait until
//! `RGEX_OFI_TIMEOUT` (300 s by default). So while such a stall lasts, the
//! sender reads one byte of the peer's segment every [`PROBE_EVERY`]: a
//! live peer's provider answers (and the stall goes on as before: an
//! answer is not a credit), a gone peer's connection fails the read, and
//! the failure declares the peer dead like any failed operation (the
//! waiting sender then gets `PeerUnreachable` naming it).
//!
//! Nothing here is on the fast path: only a send refused for credits
//! looks, and a probe is one read per stalled peer per period.

use crate::net::Net;
use crate::state::{Op, Post, State};
use std::time::{Duration, Instant};

/// How long a credit stall lasts before the peer is probed, and how
/// often it is probed again while the stall lasts.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(200);

impl State {
    /// `peer` has kept this rank waiting for its credits for `stalled`
    /// (as of `now`): probe it if that is long enough, no probe to it is
    /// in flight and the last was long enough ago (and an operation slot
    /// is free; otherwise at a later call).
    pub fn probe_if_due(&mut self, net: &Net, peer: usize, stalled: Duration, now: Instant) {
        let p = &self.peers[peer];
        if stalled < PROBE_EVERY
            || p.probing
            || p.dead.is_some()
            || p.probed_at
                .is_some_and(|t| now.duration_since(t) < PROBE_EVERY)
        {
            return;
        }
        let Some(id) = self.take_op() else { return };
        let p = &mut self.peers[peer];
        p.probing = true;
        p.probed_at = Some(now);
        self.ops[id as usize] = Op::Probe { peer: peer as u32 };
        let dst = net.scratch() as usize;
        let desc = net.desc(&net.send_mr) as usize;
        self.post(
            net,
            Post::Read {
                op: id,
                peer: peer as u32,
                dst,
                len: 1,
                desc,
                offset: 0,
            },
        );
    }
}
