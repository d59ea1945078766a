//! Dead peers: an operation that failed, or a peer silent past the
//! dead-peer timeout while we wait on it, marks the peer dead; its
//! operations' completions fire (so nothing hangs) and later operations
//! to it return an error naming it.
//!
//! # The dead-peer timeout
//!
//! A peer that stops answering without a word (its process stopped,
//! killed on another node, cut off) fails no operation: its network
//! just never completes what waits on it. So every wait on a peer has
//! the same bound, the transport's timeout ([`Transport::TIMEOUT_VAR`]:
//! `RGEX_OFI_TIMEOUT`, `RGEX_IBV_TIMEOUT`; 300 s by default, 0: never):
//!
//! - **What waits on a peer**: a send out of its credits
//!   (`State::stalled`); an operation the transport holds for
//!   it (an RMA, an offloaded atomic, a send: looked at by the
//!   conduit's `check_in_flight`, which the endpoint calls when its
//!   polls stall); and an operation of the protocol layer in flight to
//!   it (a barrier's message, an AM reply: the endpoint asks the
//!   conduit's `peer_gone` about its peer when its polls stall, as does
//!   a client waiting for its own reply). Each look
//!   (`State::waiting_on`) keeps the peer's wait clock
//!   (`Peer::waited_since`); a wait
//!   not seen again within the timeout has ended, and the next starts
//!   afresh.
//! - **What counts as hearing from it**: any message from it, and the
//!   completion of any operation to it but a ping (the existing `heard`
//!   flag, set per message with no clock read; the clock is read only by
//!   a look).
//! - **A busy peer is not a dead one.** A peer we wait on that has been
//!   silent for a while (a quarter of the timeout, at most a second) is
//!   sent a [`PING`](crate::wire::PING), which its progress answers with
//!   a [`PONG`](crate::wire::PONG): its own polls, or, while it computes
//!   or waits elsewhere, its [`ticker`](crate::ticker). One at a time
//!   (the next after the pong), so a peer late to a barrier, or slow to
//!   reply, keeps answering and is waited for as long as it takes.
//! - **Declared dead** once we have waited on it for the timeout and
//!   heard nothing from it, pongs included, for the timeout: it is marked
//!   dead (printed once), and the completions of what the transport holds
//!   for it fail now, naming it (`State::abandon_ops`), except a put or
//!   a get on the caller's own memory outside the segment, which only
//!   the transport can give back (the process may yet resume). Waits of
//!   the protocol layer then fail as for a departed peer.
//!
//! Nothing here is on a hot path: a look happens on a stalled send or a
//! stalled wait, and a ping only to a silent peer that is waited on.

use crate::net::Net;
use crate::ops::Op;
use crate::readback;
use crate::state::State;
use crate::transport::Transport;
use crate::wire;
use rgex_core::{Error, Rank};
use std::time::{Duration, Instant};

/// How long a peer we wait on may be silent before it is pinged: a
/// quarter of the timeout `t` (so a pong has most of it to come back), at
/// most a second.
fn ping_after(t: Duration) -> Duration {
    (t / 4).min(Duration::from_secs(1))
}

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
        if !std::mem::replace(&mut self.peers[peer].reported_dead, true) && !self.closing {
            tracing::warn!(
                conduit = T::NAME,
                rank = self.me.0,
                peer,
                "an operation to rank {peer} failed; rank {peer} is now considered dead and later operations to it return errors: {why}"
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

    /// Out of credits towards `peer`: start or check its stall clock
    /// (and ping it if it is silent: see the module docs). Returns the
    /// error once the peer has been silent past the timeout.
    pub(crate) fn stalled(&mut self, net: &Net<T>, peer: usize) -> Result<(), Error> {
        let Some(t) = self.timeout else { return Ok(()) };
        let now = Instant::now();
        self.look(peer, now);
        let p = &mut self.peers[peer];
        let since = *p.stalled_since.get_or_insert(now);
        let silent = now.duration_since(p.last_heard);
        if now.duration_since(since) > t && silent > t {
            let why = format!(
                "no credit returned and nothing heard from it for {} s ({})",
                t.as_secs(),
                T::TIMEOUT_VAR
            );
            self.mark_dead(peer, &why);
            return self.check_alive(Rank(peer as u32), "AM");
        }
        self.ping_if_silent(net, peer, silent, t);
        Ok(())
    }

    /// Something of this rank waits on `peer` (see the module docs): keep
    /// its wait clock, ping it if it has been silent for a while, and
    /// declare it dead, failing what the transport holds for it, once it
    /// was waited on and silent for the whole timeout. Nothing without a
    /// timeout, for this rank itself, a peer already gone, or while
    /// closing (the drain has its own bound).
    pub(crate) fn waiting_on(&mut self, net: &Net<T>, peer: usize) {
        let Some(t) = self.timeout else { return };
        if self.closing || peer == self.me.index() || peer >= self.peers.len() {
            return;
        }
        if self.peers[peer].dead.is_some() || self.peers[peer].farewell {
            return;
        }
        let now = Instant::now();
        self.look(peer, now);
        let p = &mut self.peers[peer];
        // A wait not seen for a whole timeout has ended: this one is new.
        let since = match p.waited_since {
            Some(s) if now.duration_since(p.last_waited) <= t => s,
            _ => now,
        };
        p.waited_since = Some(since);
        p.last_waited = now;
        let silent = now.duration_since(p.last_heard);
        if now.duration_since(since) > t && silent > t {
            let why = format!(
                "rank {peer} stopped answering: nothing heard from it for {} s while this rank waited on it, not even an answer to a ping ({})",
                t.as_secs(),
                T::TIMEOUT_VAR
            );
            self.mark_dead(peer, &why);
            self.abandon_ops(peer, true);
            return;
        }
        self.ping_if_silent(net, peer, silent, t);
    }

    /// Bring `peer`'s last sign of life up to `now` if it was heard from
    /// since the last look (the per-message `heard` flag).
    #[inline]
    fn look(&mut self, peer: usize, now: Instant) {
        let p = &mut self.peers[peer];
        if std::mem::take(&mut p.heard) {
            p.last_heard = now;
        }
    }

    /// Ping `peer` if it has been `silent` long enough under the timeout
    /// `t` and no ping to it is unanswered, where a reply buffer is free
    /// (else at a later look). Its send is an [`Op::Ping`]: its completion
    /// is no sign of life.
    fn ping_if_silent(&mut self, net: &Net<T>, peer: usize, silent: Duration, t: Duration) {
        let p = &self.peers[peer];
        if silent < ping_after(t) || p.pinged || p.dead.is_some() || p.farewell || self.closing {
            return;
        }
        let Some(slot) = self.send_control(net, peer, wire::PING) else {
            return;
        };
        self.peers[peer].pinged = true;
        // Still posted (not injected, not failed at once): mark it a ping.
        let op = net.geo.n_recv + slot;
        if matches!(self.ops[op], Op::AmSend { peer: p } if p as usize == peer) {
            self.ops[op] = Op::Ping { peer: peer as u32 };
        }
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
