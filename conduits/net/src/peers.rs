//! What this rank knows of each peer: its credits (see
//! [`credits`](crate::credits)) and its health (see
//! [`health`](crate::health)).

use crate::readback::Waiting;
use std::sync::Arc;
use std::time::Instant;

/// Per-peer flow control and health.
pub(crate) struct Peer {
    /// Messages sent to the peer, per direction (cumulative, wrapping).
    pub sent: [u32; 2],
    /// Of those, how many the peer reported consumed.
    pub acked: [u32; 2],
    /// Messages from the peer this rank consumed, per direction.
    pub consumed: [u32; 2],
    /// consumed[0] + consumed[1] when last reported to the peer.
    pub reported: u32,
    /// A credit message is owed and waits for a send buffer.
    pub want_credit: bool,
    /// Messages from the peer received (not control messages), both
    /// directions (cumulative, wrapping): those not yet
    /// [`consumed`](Self::consumed) wait for delivery.
    pub received: u32,
    /// Why the peer is considered gone.
    pub dead: Option<Arc<str>>,
    /// It left the job: its goodbye came (`State::depart`). It is
    /// [`dead`](Self::dead) too, for what is sent to it.
    pub departed: bool,
    /// This rank said goodbye to it while closing: nothing more is sent
    /// to it.
    pub farewell: bool,
    /// A sign of life (a message or a completion) came since
    /// `last_heard` was last brought up to date. A flag, not a clock
    /// read: reading the clock for every message cost more than the
    /// rest of its bookkeeping; only a stalled send needs the time.
    pub heard: bool,
    /// Last sign of life, as of the last stall or wait check.
    pub last_heard: Instant,
    /// Since when a send to it has waited for credits.
    pub stalled_since: Option<Instant>,
    /// Since when something of this rank has waited on it: an operation
    /// the transport holds for it, or the protocol layer asking
    /// `peer_gone` about it for an operation in flight (see
    /// `State::waiting_on`); `None` until the first wait.
    pub waited_since: Option<Instant>,
    /// When a wait on it was last seen: a wait not seen again within the
    /// timeout has ended, and the next one starts its own clock.
    pub last_waited: Instant,
    /// A ping to it is unanswered (sent, its pong not yet received): no
    /// second one goes until it is, so at most one is unread there.
    pub pinged: bool,
    /// It pinged this rank: a pong is owed (sent by progress, see
    /// `State::send_pongs`).
    pub want_pong: bool,
    /// Puts whose writes completed, waiting for a read back.
    pub waiting: Waiting,
    /// A node-local peer carried over the network that smp has reported
    /// gone: since when, and [`received`](Self::received) then (see
    /// `State::gone_from_node`).
    pub node_gone_since: Option<(Instant, u32)>,
}

impl Peer {
    /// A peer nothing was exchanged with yet, heard from at `now`.
    pub fn new(now: Instant) -> Self {
        Peer {
            sent: [0; 2],
            acked: [0; 2],
            consumed: [0; 2],
            reported: 0,
            want_credit: false,
            received: 0,
            dead: None,
            departed: false,
            farewell: false,
            heard: false,
            last_heard: now,
            stalled_since: None,
            waited_since: None,
            last_waited: now,
            pinged: false,
            want_pong: false,
            waiting: Waiting::default(),
            node_gone_since: None,
        }
    }
}
