//! Leaving the job: a rank that closes its conduit tells every network
//! peer so, and a peer told marks it departed.
//!
//! Without a word, a peer that still works with a rank that left finds
//! out late or never: a sender out of credits towards it waits for
//! credits that never come (until the dead-peer timeout: `RGEX_OFI_TIMEOUT`, `RGEX_IBV_TIMEOUT`, 300 s by default),
//! and a rank waiting for its AM replies waits forever (issue 25). So a
//! rank that closes (its conduit dropped, or its process exiting: both
//! drain, see `drain.rs`) sends each network peer a goodbye, a control
//! message ([`wire::GOODBYE`]), once nothing it posted to that peer is
//! outstanding: its completion comes after every earlier message to the
//! peer left (sends are ordered among themselves: libfabric's
//! `FI_ORDER_SAS`, an RC queue pair's order), injected ones included, so the goodbye
//! also flushes those (at the end of the final barrier, a peer may wait
//! for the last of them); and every message sent before it reaches the
//! peer before it.
//!
//! The peer that receives it marks the sender dead with a reason
//! ("rank N left the job"), quietly: a departure is not a failure, and
//! at the end of a job every rank leaves, goodbyes crossing each other.
//! Later operations to it fail with [`Error::PeerUnreachable`] (a sender
//! waiting for its credits included); what it delivered before leaving
//! is still delivered, and `State::gone` reports the departure
//! only once it has been (so a reply that came before the goodbye
//! completes its operation rather than failing it).
//!
//! [`Error::PeerUnreachable`]: rgex_core::Error::PeerUnreachable

use crate::geometry::POOL_REP;
use crate::net::Net;
use crate::ops::Op;
use crate::readback;
use crate::state::State;
use crate::transport::Transport;
use crate::wire::{self, control_header};
use std::time::{Duration, Instant};

/// How long a node-local peer that smp reports gone must stay silent on
/// the network before it is marked gone there too: what it sent before
/// it went may still be on its way (in the kernel's socket buffers).
pub(crate) const NODE_GONE_GRACE: Duration = Duration::from_millis(200);

impl<T: Transport> State<T> {
    /// While closing: tell goodbye to every network peer still there and
    /// not yet told, to which nothing this rank posted is outstanding
    /// (no operation, no backlog, no put waiting for a read back), as
    /// far as reply send buffers allow (the rest at the next call).
    pub(crate) fn say_goodbyes(&mut self, net: &Net<T>) {
        debug_assert!(self.closing);
        let mut busy: Option<Vec<bool>> = None;
        for peer in 0..self.peers.len() {
            let p = &self.peers[peer];
            if !self.network_peer(peer) || p.farewell || p.dead.is_some() {
                continue;
            }
            if busy.get_or_insert_with(|| self.busy_peers(net))[peer] {
                continue;
            }
            let Some(slot) = self.sends.claim(POOL_REP) else {
                return;
            };
            self.peers[peer].farewell = true;
            let h = control_header(self.me, wire::GOODBYE);
            self.send_am(net, slot as usize, peer, h, &[]);
        }
    }

    /// True when every network peer still there was told goodbye.
    pub(crate) fn said_goodbyes(&self) -> bool {
        self.peers
            .iter()
            .enumerate()
            .all(|(peer, p)| !self.network_peer(peer) || p.farewell || p.dead.is_some())
    }

    /// Per peer: something this rank posted to it is outstanding.
    fn busy_peers(&self, net: &Net<T>) -> Vec<bool> {
        let mut busy = vec![false; self.peers.len()];
        let ops = self.ops.iter().skip(net.geo.n_recv).filter_map(Op::peer);
        for peer in ops.chain(self.backlog.peers()) {
            busy[peer as usize] = true;
        }
        for &peer in &self.reading_back {
            busy[peer as usize] = true;
        }
        busy
    }

    /// `peer`'s goodbye came: it left the job. Operations to it fail from
    /// now on, quietly (nothing is printed; see [`mark_dead`]).
    ///
    /// [`mark_dead`]: State::mark_dead
    pub(crate) fn depart(&mut self, peer: usize) {
        let why = format!("rank {peer} left the job (closed its endpoint)");
        self.mark_gone(peer, &why);
        self.peers[peer].departed = true;
        self.peers[peer].reported_dead = true;
        self.abandon_ops_to(peer);
    }

    /// Another part of this rank (the bypass's smp) found `peer` gone
    /// for `why`, with everything it sent that way delivered: mark it
    /// gone now (quietly) and fail what the transport holds for it.
    pub(crate) fn left(&mut self, peer: usize, why: &str) {
        if self.peers[peer].dead.is_some() {
            return;
        }
        self.mark_gone(peer, &format!("rank {peer}: {why}"));
        self.peers[peer].reported_dead = true;
        self.abandon_ops_to(peer);
    }

    /// `peer` runs on this node but is carried by the network, and smp
    /// (which watches the node's processes) says it is gone for `why`: a
    /// process that ended without a goodbye (`_exit`, a signal) sends
    /// none. Mark it gone (quietly: the operations that fail say why)
    /// once nothing came from it for [`NODE_GONE_GRACE`] since smp first
    /// said so; until then (or if it said goodbye meanwhile) this does
    /// nothing.
    pub(crate) fn gone_from_node(&mut self, peer: usize, why: &str) {
        let now = Instant::now();
        let received = self.credits.received_from(peer);
        let p = &mut self.peers[peer];
        if p.dead.is_some() {
            return;
        }
        match p.node_gone_since {
            Some((since, then)) if then == received => {
                if now.duration_since(since) >= NODE_GONE_GRACE {
                    let why = format!("rank {peer}: {why}");
                    self.mark_gone(peer, &why);
                    self.peers[peer].reported_dead = true;
                    self.abandon_ops_to(peer);
                }
            }
            _ => p.node_gone_since = Some((now, received)),
        }
    }

    /// Why `peer` is gone (it left, or was found dead), once everything
    /// received from it was delivered; `None` while it is there or
    /// messages from it still wait for delivery.
    pub(crate) fn gone(&self, peer: usize) -> Option<String> {
        let why = self.peers.get(peer)?.dead.as_ref()?;
        self.credits.all_consumed(peer).then(|| why.to_string())
    }

    /// `peer`'s process can no longer act (it left, or smp saw it end):
    /// fail the completions of every RMA, atomic and read-back operation
    /// to it that the transport still holds, and keep what the post owns
    /// until the transport hands it back ([`Op::Abandoned`]).
    ///
    /// A network need not ever complete a post to a process that is gone:
    /// libfabric's shm provider leaves it in the departed peer's queue
    /// forever, and the waiter would hang. Firing the completion early is
    /// safe because nothing but this rank's own provider can touch the
    /// caller's memory now: a put's source is only read (its registration
    /// stays alive in the abandoned slot), and a get's destination is
    /// written only with data the departed peer would have to send.
    pub(crate) fn abandon_ops_to(&mut self, peer: usize) {
        self.abandon_ops(peer, false);
    }

    /// [`abandon_ops_to`](Self::abandon_ops_to), or, with `may_act`, for
    /// a peer whose process may still act (found silent past the
    /// timeout, but perhaps only stopped, or cut off): its network may yet
    /// carry a put or a get, so those that read or write the caller's own
    /// memory (outside the segment and our buffers) are left to the
    /// transport, whose completion alone gives that memory back to the
    /// caller; every other operation fails now (what it touches is ours,
    /// kept in [`Op::Abandoned`], or the segment, which stays mapped).
    pub(crate) fn abandon_ops(&mut self, peer: usize, may_act: bool) {
        let why = self.unreachable(peer);
        let (mut ops, mut slots) = (0, 0);
        for op in self.ops.iter_mut() {
            if op.peer() != Some(peer as u32) {
                continue;
            }
            if may_act
                && matches!(
                    op,
                    Op::Put { caller: true, .. } | Op::Get { caller: true, .. }
                )
            {
                continue;
            }
            let held = match std::mem::replace(op, Op::Idle) {
                Op::Put {
                    rc, lc, bounce, mr, ..
                } => {
                    // As a failed put's completion does: the source is free.
                    if let Some(lc) = lc {
                        lc.done();
                    }
                    rc.fail(why.clone());
                    (bounce, mr)
                }
                Op::Get {
                    done, bounce, mr, ..
                } => {
                    done.fail(why.clone());
                    (bounce.map(|(slot, _, _)| slot), mr)
                }
                Op::Atomic { slot, done, .. } => {
                    done.fail(why.clone());
                    (Some(slot), None)
                }
                Op::Flush { counters, .. } => {
                    readback::settle(counters, Some(&why));
                    (None, None)
                }
                // No waiter of the caller's: left to complete as it will.
                other => {
                    *op = other;
                    continue;
                }
            };
            *op = Op::Abandoned {
                peer: peer as u32,
                slot: held.0,
                mr: held.1,
            };
            ops += 1;
            slots += usize::from(held.0.is_some());
        }
        self.ops.abandoned(ops);
        self.sends.abandoned(slots);
    }
}
