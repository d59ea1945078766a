//! What this rank knows of each peer's health (see
//! [`health`](crate::health)), its departure (see
//! [`farewell`](crate::farewell)) and its puts waiting for a read back
//! (see [`readback`](crate::readback)); its credits are
//! [`credits`](crate::credits)'.

use crate::readback::Waiting;
use std::ops::{Index, IndexMut};
use std::sync::Arc;
use std::time::Instant;

/// Per-peer health.
pub(crate) struct Peer {
    /// Why the peer is considered gone.
    pub dead: Option<Arc<str>>,
    /// Its death was reported (printed, or known not to need it): once
    /// per peer.
    pub reported_dead: bool,
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
    /// gone: since when, and how many messages had been received from it
    /// then (see `State::gone_from_node`).
    pub node_gone_since: Option<(Instant, u32)>,
}

impl Peer {
    /// A peer nothing was exchanged with yet, heard from at `now`.
    pub fn new(now: Instant) -> Self {
        Peer {
            dead: None,
            reported_dead: false,
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

/// Every peer, by rank, and whether any is owed a pong.
pub(crate) struct Peers {
    list: Vec<Peer>,
    /// Some peer's [`want_pong`](Peer::want_pong) is set (progress looks
    /// at the peers only then).
    pongs_owed: bool,
}

impl Peers {
    /// `size` peers, heard from at `now`.
    pub fn new(size: usize, now: Instant) -> Self {
        Peers {
            list: (0..size).map(|_| Peer::new(now)).collect(),
            pongs_owed: false,
        }
    }

    /// How many.
    #[inline]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Every peer, by rank.
    pub fn iter(&self) -> std::slice::Iter<'_, Peer> {
        self.list.iter()
    }

    /// Peer `peer`, if there is one.
    #[inline]
    pub fn get(&self, peer: usize) -> Option<&Peer> {
        self.list.get(peer)
    }

    /// A sign of life of `peer` (nothing for a rank out of range).
    #[inline]
    pub fn heard_from(&mut self, peer: u32) {
        if let Some(p) = self.list.get_mut(peer as usize) {
            p.heard = true;
        }
    }

    /// `peer` pinged this rank: owe it a pong.
    pub fn owe_pong(&mut self, peer: usize) {
        self.list[peer].want_pong = true;
        self.pongs_owed = true;
    }

    /// True if some peer may be owed a pong.
    #[inline]
    pub fn pongs_owed(&self) -> bool {
        self.pongs_owed
    }

    /// Every pong owed was sent (or needs none).
    pub fn pongs_sent(&mut self) {
        self.pongs_owed = false;
    }
}

impl Index<usize> for Peers {
    type Output = Peer;
    #[inline]
    fn index(&self, peer: usize) -> &Peer {
        &self.list[peer]
    }
}

impl IndexMut<usize> for Peers {
    #[inline]
    fn index_mut(&mut self, peer: usize) -> &mut Peer {
        &mut self.list[peer]
    }
}
