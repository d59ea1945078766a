//! Remote completion of puts by reading back, asked for on demand.
//!
//! A write's completion without delivery completion (libfabric's
//! `FI_DELIVERY_COMPLETE`) only says the bytes
//! left this rank; a read issued after it completed returns after the
//! write is placed at the target, so one read proves every write to that
//! peer that had completed when it was issued. Puts whose writes have
//! completed wait here, per peer, for such a read.
//!
//! Why not ask each write for delivery-complete, when the provider has
//! it: over software providers (tcp;ofi_rxm, shm) the target's own
//! progress call answers it, after placing the data and before it
//! returns to the application, so the answer sits on the critical path
//! of whatever the target does next. In a put ping-pong over tcp that was
//! half the time (7.1 us one-way against 3.5 us without; shm 1.4 us
//! against 0.75 us). The read back is asked only when someone wants to
//! know ([`OpCounter::wanted`]: a wait or a test that found the counter
//! unfinished), when a batch grows to [`MAX_WAITING`] counters, or when
//! its oldest write completed [`MAX_AGE`] ticks ago, so a flood of puts costs
//! one read at its `nbi_wait`, not one per put.
//!
//! Only puts counted on a [batched](OpCounter::batched) counter (the
//! implicit-handle ones) of at most [`MAX_BYTES`] wait this way by
//! default: a put with an event of its own is often waited for at once,
//! and then write-then-read costs more than one delivery-complete answer
//! (tcp 9.2 against 6.9 us, shm 2.1 against 1.5 us).

use crate::net::Net;
use crate::ops::{Op, Post};
use crate::state::State;
use crate::transport::Transport;
use rgex_core::OpCounter;
use std::sync::Arc;

/// Put counters, each with how many of its writes a batch holds.
pub(crate) type Counters = Vec<(Arc<OpCounter>, u64)>;

/// A batch is read back once its oldest write completed this many ticks
/// of the conduit's clock ago ([`TICK`](crate::ticker::TICK) each: 1 to
/// 2 ms), wanted or not, so counters nobody looks at still finish and the
/// conduit goes quiet at exit.
pub const MAX_AGE: u64 = 2;

/// A batch is read back once it holds this many distinct counters (each
/// non-blocking put has its own; implicit ones share their category's).
pub const MAX_WAITING: usize = 64;

/// Puts larger than this ask for delivery-complete even when batched: one
/// answer is a small part of a large write's cost, and over tcp;ofi_rxm
/// on loopback, NBI floods of 64-128 KiB puts ran erratically without it
/// (2-5 GB/s against a steady 3.4), while up to 48 KiB they ran 1.3-2.1x
/// faster (8 KiB 2.2 against 1.7 GB/s, 16 KiB 3.0 against 1.4, 48 KiB 6.0
/// against 3.1).
pub const MAX_BYTES: usize = 32 << 10;

/// How a put learns that its bytes landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutCompletion {
    /// Each write asks for delivery completion (`FI_DELIVERY_COMPLETE`;
    /// the network's answer costs the target nothing: a NIC answers).
    Delivery,
    /// Implicit-handle puts (batched counters) of at most [`MAX_BYTES`]
    /// complete on transmit and wait for a read back, asked when someone
    /// waits (see the module docs); other puts still ask for delivery
    /// when the provider has it.
    ReadBack,
}

impl PutCompletion {
    /// The default for a provider (as `fi_info` names it, `tcp;ofi_rxm`):
    /// read back for software providers, where the target's CPU answers
    /// delivery-complete, delivery otherwise.
    ///
    /// ```
    /// use rgex_net::readback::PutCompletion;
    /// assert_eq!(PutCompletion::default_for("tcp;ofi_rxm"), PutCompletion::ReadBack);
    /// assert_eq!(PutCompletion::default_for("cxi"), PutCompletion::Delivery);
    /// ```
    pub fn default_for(provider: &str) -> Self {
        let core = provider.split(';').next().unwrap_or(provider);
        match core {
            "tcp" | "sockets" | "shm" | "udp" => PutCompletion::ReadBack,
            _ => PutCompletion::Delivery,
        }
    }
}

/// Puts to one peer whose writes completed and which wait for a read back.
#[derive(Default)]
pub(crate) struct Waiting {
    /// Their counters, each with how many writes it waits for (a run of
    /// writes on one counter, as an NBI flood makes, is one entry).
    counters: Counters,
    /// The last byte of the newest write: what the read fetches.
    at: u64,
    /// When the oldest joined (the conduit's [ticks](crate::ticker::Ticks)).
    since: Option<u64>,
    /// Read back at the next progress call, whatever the counters say.
    now: bool,
}

impl Waiting {
    /// True if nothing waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }

    /// A write counted on `rc`, ending at byte `at` of the peer's segment,
    /// completed at tick `tick`. `now`: read back at the next progress call.
    #[inline]
    pub fn push(&mut self, rc: Arc<OpCounter>, at: u64, now: bool, tick: u64) {
        match self.counters.last_mut() {
            Some((c, n)) if Arc::ptr_eq(c, &rc) => *n += 1,
            _ => self.counters.push((rc, 1)),
        }
        if self.since.is_none() {
            self.since = Some(tick);
        }
        self.at = at;
        self.now |= now;
    }

    /// True if the batch should be read back at tick `tick` (see the
    /// module docs).
    #[inline]
    pub fn due(&self, tick: u64) -> bool {
        self.now
            || self.counters.len() >= MAX_WAITING
            || self.counters.iter().any(|(c, _)| c.wanted())
            || self.since.is_some_and(|t| tick.wrapping_sub(t) >= MAX_AGE)
    }

    /// Hand over the batch for a read of byte `at` (returned), taking
    /// the demand from its counters; this one starts empty.
    pub fn take(&mut self) -> (Counters, u64) {
        let counters = std::mem::take(&mut self.counters);
        for (c, _) in &counters {
            c.take_wanted();
        }
        self.since = None;
        self.now = false;
        (counters, self.at)
    }
}

/// Finish every write of a batch: done, or failed with `why`.
pub(crate) fn settle(counters: Counters, why: Option<&str>) {
    for (c, n) in counters {
        for _ in 0..n {
            match why {
                Some(w) => c.fail(w.to_string()),
                None => c.done(),
            }
        }
    }
}

impl<T: Transport> State<T> {
    /// A put's write to `peer`, counted on `rc` and ending at byte `at`,
    /// completed without delivery completion: it waits for a read back
    /// (at the next progress call if `now`).
    pub(crate) fn wait_read_back(&mut self, peer: u32, rc: Arc<OpCounter>, at: u64, now: bool) {
        let w = &mut self.peers[peer as usize].waiting;
        if w.is_empty() {
            self.reading_back.push(peer);
        }
        w.push(rc, at, now, self.ticks.now());
    }

    /// Post the read back of every batch that is due (see the module
    /// docs); how many were posted. A batch whose read finds no free
    /// operation slot waits for the next call.
    pub(crate) fn read_back(&mut self, net: &Net<T>) -> usize {
        let now = self.ticks.now();
        let mut posted = 0;
        let mut i = 0;
        while i < self.reading_back.len() {
            let peer = self.reading_back[i];
            if !self.peers[peer as usize].waiting.due(now) {
                i += 1;
                continue;
            }
            let Some(id) = self.ops.take() else { break };
            let (counters, at) = self.peers[peer as usize].waiting.take();
            self.reading_back.swap_remove(i);
            self.ops[id as usize] = Op::Flush { peer, counters };
            let dst = net.scratch() as usize;
            let desc = net.send_desc;
            self.post(
                net,
                Post::Read {
                    op: id,
                    peer,
                    dst,
                    len: 1,
                    desc,
                    offset: at,
                },
            );
            posted += 1;
        }
        if posted > 0 && rgex_core::observe::on() {
            rgex_core::observe::net(rgex_core::observe::NetEvent::ReadBack, posted as u64);
        }
        posted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_on_one_counter_are_one_entry() {
        let mut w = Waiting::default();
        let a = OpCounter::new(3);
        let b = OpCounter::new(1);
        w.push(a.clone(), 10, false, 0);
        w.push(a.clone(), 20, false, 0);
        w.push(b.clone(), 30, false, 0);
        w.push(a.clone(), 40, false, 0);
        assert_eq!(w.counters.len(), 3);
        let (c, at) = w.take();
        assert_eq!(at, 40);
        assert!(w.is_empty() && w.since.is_none());
        settle(c, None);
        assert!(a.peek_done() && b.peek_done());
    }

    #[test]
    fn due_when_wanted_full_old_or_asked() {
        let t0 = 7;
        let mut w = Waiting::default();
        let a = OpCounter::batched(1);
        w.push(a.clone(), 0, false, t0);
        assert!(!w.due(t0 + 1), "fresh and nobody looked");
        assert!(!a.is_done()); // a waiter looked
        assert!(w.due(t0));
        let (c, _) = w.take();
        assert!(!a.wanted(), "taking the batch takes the demand");
        settle(c, None);

        w.push(OpCounter::new(1), 0, false, t0);
        assert!(w.due(t0 + MAX_AGE), "old enough");
        settle(w.take().0, None);

        w.push(OpCounter::new(1), 0, true, t0);
        assert!(w.due(t0), "asked for at once");
        settle(w.take().0, None);

        for _ in 0..MAX_WAITING {
            w.push(OpCounter::new(1), 0, false, t0);
        }
        assert!(w.due(t0), "full");
        settle(w.take().0, None);
    }

    #[test]
    fn failures_reach_every_write() {
        let a = OpCounter::new(2);
        let mut w = Waiting::default();
        w.push(a.clone(), 0, false, 0);
        w.push(a.clone(), 0, false, 0);
        settle(w.take().0, Some("rank 1 is gone"));
        assert!(a.peek_done());
        assert_eq!(a.failure(), Some("rank 1 is gone"));
    }

    #[test]
    fn software_providers_read_back() {
        for p in ["tcp;ofi_rxm", "tcp", "sockets", "shm", "udp;ofi_rxd"] {
            assert_eq!(
                PutCompletion::default_for(p),
                PutCompletion::ReadBack,
                "{p}"
            );
        }
        for p in ["cxi", "verbs;ofi_rxm", "gni", "psm3", "efa", "opx"] {
            assert_eq!(
                PutCompletion::default_for(p),
                PutCompletion::Delivery,
                "{p}"
            );
        }
    }
}
