//! Dead peers: an operation that failed, or a peer silent past the
//! timeout while we wait for its credits, marks the peer dead; its
//! operations' completions fire (so nothing hangs) and later operations
//! to it return an error naming it.

use crate::net::Net;
use crate::ops::Op;
use crate::readback;
use crate::state::State;
use crate::transport::Transport;
use rgex_core::{Error, Rank};
use std::time::Instant;

/// A peer that went away, as an error naming it.
pub(crate) fn dead_error(me: Rank, peer: Rank, why: &str, what: &str) -> Error {
    Error::PeerUnreachable {
        what: what.to_string(),
        from: me,
        rank: peer,
        why: why.to_string(),
    }
}

impl<T: Transport> State<T> {
    /// Operation `id` failed: its peer is declared dead, its resources are
    /// released and its completions fired so no waiter hangs (the error is
    /// printed once per peer, and later operations to it return errors).
    pub(crate) fn fail(&mut self, net: &Net<T>, id: usize, why: &str) {
        if let Some(p) = self.ops[id].peer() {
            self.mark_dead(p as usize, why);
        }
        self.finish(net, id, true);
    }

    /// Declare `peer` dead with reason `why` (printed once); puts to it
    /// waiting for a read back fail.
    pub(crate) fn mark_dead(&mut self, peer: usize, why: &str) {
        self.mark_gone(peer, why);
        // A peer that has already left is no news while this rank closes
        // too (a credit report or a goodbye to it fails), nor is one that
        // said goodbye.
        if !std::mem::replace(&mut self.reported_dead[peer], true) && !self.closing {
            eprintln!(
                "rgex-{}: {}: an operation to rank {peer} failed; rank {peer} is now considered dead and later operations to it return errors: {why}",
                T::NAME,
                self.me
            );
        }
    }

    /// Record that `peer` is gone for reason `why` (the first reason
    /// stays), quietly: later operations to it fail, and puts to it
    /// waiting for a read back fail (nothing can confirm them now).
    pub(crate) fn mark_gone(&mut self, peer: usize, why: &str) {
        if self.peers[peer].dead.is_none() {
            self.peers[peer].dead = Some(why.into());
        }
        if !self.peers[peer].waiting.is_empty() {
            let (counters, _) = self.peers[peer].waiting.take();
            self.reading_back.retain(|&p| p as usize != peer);
            readback::settle(counters, Some(&self.unreachable(peer)));
        }
    }

    /// The error for an operation to a dead `peer`, if it is.
    #[inline]
    pub(crate) fn check_alive(&self, peer: Rank, what: &str) -> Result<(), Error> {
        match &self.peers[peer.index()].dead {
            None => Ok(()),
            Some(why) => Err(dead_error(self.me, peer, why, what)),
        }
    }

    /// Out of credits towards `peer`: start or check its stall clock.
    /// Returns the error once the peer has been silent past the timeout.
    pub(crate) fn stalled(&mut self, peer: usize) -> Result<(), Error> {
        let Some(t) = self.timeout else { return Ok(()) };
        let now = Instant::now();
        let p = &mut self.peers[peer];
        if std::mem::take(&mut p.heard) {
            p.last_heard = now;
        }
        let since = *p.stalled_since.get_or_insert(now);
        if now.duration_since(since) > t && now.duration_since(p.last_heard) > t {
            let why = format!(
                "no credit returned and nothing heard from it for {} s ({})",
                t.as_secs(),
                T::TIMEOUT_VAR
            );
            self.mark_dead(peer, &why);
            return self.check_alive(Rank(peer as u32), "AM");
        }
        Ok(())
    }

    /// Why operation `op` failed: its peer's recorded cause.
    pub(crate) fn failure_of(&self, op: &Op<T::Region>) -> String {
        match op.peer() {
            Some(peer) => self.unreachable(peer as usize),
            None => format!("a receive at {} failed", self.me),
        }
    }

    /// Why an operation to `peer` failed: its recorded cause.
    pub(crate) fn unreachable(&self, peer: usize) -> String {
        let why = self.peers[peer]
            .dead
            .clone()
            .unwrap_or_else(|| "an error completion".into());
        format!(
            "from {} to rank {peer}: rank {peer} is unreachable: {why}",
            self.me
        )
    }
}
