//! The buffer geometry, the same on every rank: buffer size, send-buffer
//! pools, receive buffers and operation slots.

use crate::transport::Settings;

/// Send-buffer pools: requests, replies (and control messages), RMA
/// bounce buffers and atomic operands.
pub const POOL_REQ: usize = 0;
/// Replies and control messages (see [`POOL_REQ`]).
pub const POOL_REP: usize = 1;
/// RMA bounce buffers and atomic operands (see [`POOL_REQ`]).
pub const POOL_RMA: usize = 2;

/// Operation slots beyond the receive and send buffers: RMA, atomics
/// and Long writes in flight at once.
pub const DYNAMIC_OPS: usize = 1024;

/// Receive buffers per sender for credit-only messages. A receiver owes
/// one once [`Geometry::credit_every`] (half a window, rounded up) of the
/// sender's messages are consumed and unreported. Those messages need no
/// credits of their own because few can be unread at once: a sender that
/// has read reports up to `p` can have sent at most `p + 2 x window`
/// messages (both directions), each unread credit message reports at
/// least `credit_every` more than the one before it, and the first at
/// least `credit_every` more than `p`; so at most `2 x window /
/// credit_every <= 4` are unread. Add the liveness probes (see
/// [`health`](crate::health)): at most one [`PING`](crate::wire::PING)
/// unanswered per sender (no second before its pong), and at most one
/// [`PONG`](crate::wire::PONG) (one per ping of the receiver's); six, and
/// seven buffers leave one spare.
pub const CREDIT_SLOTS: usize = 7;

/// Geometry of the buffers, the same on every rank.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// Ranks in the job.
    pub size: usize,
    /// Credit window per sender and direction.
    pub window: usize,
    /// Largest Medium payload.
    pub max_medium: usize,
    /// Bytes per send or receive buffer (header + max Medium, 64-aligned).
    pub slot: usize,
    /// Send buffers per pool.
    pub pools: [usize; 3],
    /// Receive buffers posted (per sender: two windows and
    /// [`CREDIT_SLOTS`] credit messages).
    pub n_recv: usize,
}

impl Geometry {
    /// The geometry of `size` ranks under `s`.
    pub fn new(size: usize, s: &Settings) -> Self {
        let slot = (crate::wire::MAX_HEADER + s.max_medium + 63) & !63;
        let rep = (s.send_buffers / 2).max(2);
        Geometry {
            size,
            window: s.window,
            max_medium: s.max_medium,
            slot,
            pools: [s.send_buffers, rep, 32],
            n_recv: size * (2 * s.window + CREDIT_SLOTS),
        }
    }

    /// Consumed, unreported messages after which a receiver sends a
    /// credit message: half a window, rounded up, so that a sender
    /// flooding one direction gets credits back while it still has half
    /// a window to send (at a whole window it stopped and waited for
    /// each report: an AM flood over shm ran no faster than a ping-pong).
    #[inline]
    pub fn credit_every(&self) -> usize {
        self.window.div_ceil(2)
    }

    /// Send buffers in all pools.
    #[inline]
    pub fn n_send(&self) -> usize {
        self.pools.iter().sum()
    }

    /// Operation slots: one per receive buffer, one per send buffer, and
    /// [`DYNAMIC_OPS`].
    pub fn n_ops(&self) -> usize {
        self.n_recv + self.n_send() + DYNAMIC_OPS
    }

    /// The pool a send slot belongs to.
    #[inline]
    pub fn pool_of(&self, slot: usize) -> usize {
        if slot < self.pools[0] {
            POOL_REQ
        } else if slot < self.pools[0] + self.pools[1] {
            POOL_REP
        } else {
            POOL_RMA
        }
    }
}

#[cfg(test)]
impl Geometry {
    /// A small geometry for unit tests: 2 ranks, a window of `window`,
    /// pools of 4, 2 and 3 buffers.
    pub(crate) fn small(window: usize) -> Self {
        Geometry {
            size: 2,
            window,
            max_medium: 256,
            slot: 320,
            pools: [4, 2, 3],
            n_recv: 2 * (2 * window + CREDIT_SLOTS),
        }
    }
}
