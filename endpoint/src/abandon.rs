//! Operations in flight to a peer that has gone: failed, not waited for.
//!
//! An AM-based protocol (reference RMA, atomics, VIS) finishes an
//! operation when its peer's reply arrives. A peer that left the job, or
//! died, never replies, and a wait for it would never end. So the
//! endpoint keeps a list of the protocols' tables of operations in flight
//! ([`Endpoint::watch_in_flight`]), and when its polls have found nothing
//! for a while ([`STALL_POLLS`] in a row on one thread) it asks the
//! conduit about each peer those tables wait on
//! ([`Conduit::peer_gone`](rgex_core::Conduit::peer_gone)) and fails the
//! operations to a peer that has gone, with the conduit's reason.
//!
//! A peer is failed only once nothing it sent before it left is still
//! waiting to be run: the sweep first sees which peers have gone, then
//! polls once more, and fails their operations only if that poll finds
//! nothing (a reply or collective message sent just before the peer left
//! is handled, not lost to a race between "the queue looked empty" and
//! "the peer has gone"). A sweep in a replies-only poll (a handler
//! waiting) leaves alone the tables whose operations wait for requests
//! ([`Abandon::answered_by_replies`]).
//!
//! Only empty polls count towards a check, so a busy rank pays nothing,
//! and an idle one a thread-local increment per poll. The count is per
//! thread, not per endpoint: a thread polling two endpoints checks either
//! only once both have been idle for a while. The sweep may run inside a
//! handler (a wait there polls replies): it only fails completions, which
//! never blocks, and takes no lock a handler may hold.

use crate::Endpoint;
use rgex_core::{PollSet, Rank};
use std::cell::Cell;
use std::sync::{Arc, Weak};

/// Empty polls in a row (on one thread) before the peers of operations
/// in flight are checked. A poll that finds nothing usually backs off
/// with a yield, so this is a millisecond or a few.
pub const STALL_POLLS: u32 = 2048;

/// A table of operations in flight that can fail those to a given peer
/// (implemented by [`InFlight`](crate::InFlight)).
pub trait Abandon: Send + Sync {
    /// Add the peers that operations in flight wait on to `out` (in any
    /// order, repeats allowed).
    fn peers(&self, out: &mut Vec<Rank>);
    /// Fail every operation in flight to `peer`, saying `why`; returns
    /// how many there were.
    fn fail_peer(&self, peer: Rank, why: &str) -> usize;
    /// Whether what its operations wait for comes as replies (true, the
    /// default: an RMA or atomic reply), so a replies-only poll drains it;
    /// false for operations that wait for requests (a collective's
    /// messages), which only a full poll drains.
    fn answered_by_replies(&self) -> bool {
        true
    }
    /// How many operations are in flight, for
    /// [`Endpoint::operations_in_flight`]: by default one per peer that
    /// [`peers`](Self::peers) lists (an [`InFlight`](crate::InFlight)
    /// table lists one per operation).
    fn in_flight(&self) -> usize {
        let mut peers = Vec::new();
        self.peers(&mut peers);
        peers.len()
    }
}

/// The tables an endpoint watches, each with what its operations are.
#[derive(Default)]
pub(crate) struct Watched {
    tables: parking_lot::Mutex<Vec<(&'static str, Weak<dyn Abandon>)>>,
}

std::thread_local! {
    /// Empty polls in a row on this thread.
    static EMPTY_POLLS: Cell<u32> = const { Cell::new(0) };
}

impl Watched {
    pub(crate) fn add(&self, what: &'static str, table: Weak<dyn Abandon>) {
        let mut t = self.tables.lock();
        t.retain(|(_, w)| w.strong_count() > 0);
        t.push((what, table));
    }

    /// The tables still alive, each with what its operations are: read
    /// outside the list's lock (a table takes its own).
    fn live(&self) -> Vec<(&'static str, Arc<dyn Abandon>)> {
        self.tables
            .lock()
            .iter()
            .filter_map(|(what, w)| Some((*what, w.upgrade()?)))
            .collect()
    }
}

impl Endpoint {
    /// Have waits fail the operations in `table` whose peer has gone
    /// (see the [module docs](crate::abandon)); `what` names them in the
    /// failure ("reference RMA", "VIS"). For rgex's protocol layers.
    pub fn watch_in_flight<T: Abandon + 'static>(&self, what: &'static str, table: &Arc<T>) {
        let weak: Weak<dyn Abandon> = Arc::downgrade(table) as Weak<dyn Abandon>;
        self.watched().add(what, weak);
    }

    /// The operations in flight on the tables this endpoint watches
    /// (rgex's protocols: reference RMA, atomics through active messages,
    /// VIS, non-blocking collectives; see
    /// [`watch_in_flight`](Self::watch_in_flight)), by what they are, with
    /// how many; kinds with none are left out, so an idle endpoint gives
    /// an empty list. Operations a conduit carries alone (native RDMA,
    /// copies to mapped segments) are not counted here.
    /// [`Client::finalize`](crate::Client::finalize) reports them.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) {
    /// for (what, n) in client.endpoint().operations_in_flight() {
    ///     println!("{n} {what} operations in flight");
    /// }
    /// # }
    /// ```
    pub fn operations_in_flight(&self) -> Vec<(&'static str, usize)> {
        let tables = self.watched().live();
        let mut out: Vec<(&'static str, usize)> = Vec::new();
        for (what, table) in tables {
            let n = table.in_flight();
            if n == 0 {
                continue;
            }
            match out.iter_mut().find(|(w, _)| *w == what) {
                Some((_, k)) => *k += n,
                None => out.push((what, n)),
            }
        }
        out
    }

    /// Count a poll of `set` that found `n` things; after [`STALL_POLLS`]
    /// empty ones in a row, check the peers of operations in flight.
    /// Returns how many messages the check's own poll ran (0 almost
    /// always).
    #[inline]
    pub(crate) fn note_poll(&self, n: usize, set: PollSet) -> usize {
        if n != 0 {
            // Only write when needed: a busy poller keeps its line clean.
            EMPTY_POLLS.with(|c| {
                if c.get() != 0 {
                    c.set(0)
                }
            });
            return 0;
        }
        let stalled = EMPTY_POLLS.with(|c| {
            let k = c.get() + 1;
            c.set(if k >= STALL_POLLS { 0 } else { k });
            k >= STALL_POLLS
        });
        if stalled {
            // The conduit's own operations in flight first (native RMA,
            // offloaded atomics): their waits have no table here.
            self.conduit().check_in_flight();
            self.abandon_gone_peers(set)
        } else {
            0
        }
    }

    /// Fail the operations in flight to peers the conduit says are gone,
    /// once a poll of `set` made after seeing them gone finds nothing.
    /// Returns how many messages that poll ran (when it ran any, nothing
    /// is failed: the next sweep looks again).
    #[cold]
    #[inline(never)]
    pub(crate) fn abandon_gone_peers(&self, set: PollSet) -> usize {
        let tables: Vec<_> = self
            .watched()
            .live()
            .into_iter()
            .filter(|(_, t)| set == PollSet::All || t.answered_by_replies())
            .collect();
        let mut waited_on: Vec<(usize, Rank)> = Vec::new();
        let mut peers = Vec::new();
        for (i, (_, t)) in tables.iter().enumerate() {
            peers.clear();
            t.peers(&mut peers);
            peers.sort_unstable();
            peers.dedup();
            waited_on.extend(peers.iter().map(|&p| (i, p)));
        }
        if waited_on.is_empty() {
            return 0;
        }
        #[cfg(feature = "fault-injection")]
        crate::forge::pause_before_sweep();
        let mut gone: Vec<(usize, Rank, String)> = Vec::new();
        for (i, peer) in waited_on {
            if let Some(why) = self.conduit().peer_gone(peer) {
                let why = format!(
                    "{} operation from {} to {peer}: {peer} is unreachable: {why}",
                    tables[i].0,
                    self.rank()
                );
                gone.push((i, peer, why));
            }
        }
        if gone.is_empty() {
            return 0;
        }
        // The conduit saw each peer gone after everything it sent (its
        // departure is published after its last message), so a poll from
        // here on sees those messages. One that finds nothing means they
        // have all run: what is still in flight to those peers never
        // finishes.
        let ran = self.conduit().poll(set, &mut |d| self.dispatch(d));
        if ran != 0 {
            return ran;
        }
        for (i, peer, why) in gone {
            tables[i].1.fail_peer(peer, &why);
        }
        0
    }
}
