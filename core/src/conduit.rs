//! The Conduit SPI: what a network must provide.
//!
//! The required methods are the small core (identity, locality, segments,
//! split-phase AM injection, polling, bootstrap). Every higher feature has a
//! reference implementation over these, which a conduit may override with a
//! provided method where its hardware does better.

use crate::{Bootstrap, Delivery, Prepare, Rank, Result, Segment, SendSlot};

/// Which incoming queues a poll may drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollSet {
    /// Requests and replies: the normal progress call.
    All,
    /// Replies only. Used while a request handler waits to send its reply:
    /// reply handlers send nothing, so draining them always makes progress
    /// and can never recurse into another wait.
    RepliesOnly,
}

/// A network transport. One value per process; shared by all threads.
pub trait Conduit: Send + Sync + 'static {
    /// Short name, as `RGEX_CONDUIT` spells it ("smp", "ofi", ...).
    fn name(&self) -> &'static str;

    /// This process's rank in the job.
    fn rank(&self) -> Rank;

    /// Number of ranks in the job.
    fn size(&self) -> u32;

    /// True if `peer` shares memory with this rank (same node), so its
    /// segment is mapped here and reachable with loads and stores.
    fn is_local(&self, peer: Rank) -> bool;

    /// This rank's segment.
    fn segment(&self) -> &Segment;

    /// Length of `peer`'s segment (exchanged at setup).
    fn segment_len(&self, peer: Rank) -> u64;

    /// `peer`'s segment as mapped in this process, when it is node-local.
    fn mapped_segment(&self, peer: Rank) -> Option<Segment>;

    /// Largest Medium payload to `peer` with `nargs` arguments. At least 512,
    /// the same on every rank, never growing with `nargs`.
    fn max_medium(&self, peer: Rank, nargs: usize) -> usize;

    /// Largest Long payload to `peer` with `nargs` arguments.
    fn max_long(&self, peer: Rank, nargs: usize) -> usize;

    /// Claim the resources for one message, without waiting: a slot in the
    /// peer's queue and a payload buffer of `least..=most` bytes.
    ///
    /// Returns [`Error::WouldBlock`](crate::Error::WouldBlock) when a
    /// resource is not free; the caller decides whether to poll and retry
    /// (the stall lives in one place, the AM layer, for every conduit).
    /// Validation of sizes happens before, in the AM layer.
    fn try_prepare(&self, spec: &Prepare) -> Result<SendSlot>;

    /// Publish a prepared message with `len <= slot.granted` payload bytes
    /// already assembled at `slot.buf`. Never waits.
    fn commit(&self, slot: SendSlot, handler: u8, args: &[u32], len: usize);

    /// Release a prepared message: nothing reaches the peer's handlers.
    fn cancel(&self, slot: SendSlot);

    /// Deliver up to a batch of incoming messages to `sink`, in arrival order
    /// per sender. Returns how many were delivered. Safe to call from many
    /// threads at once, and from inside `sink` with [`PollSet::RepliesOnly`].
    fn poll(&self, set: PollSet, sink: &mut dyn FnMut(&Delivery<'_>)) -> usize;

    /// The job's out-of-band channel. Its collectives block without
    /// polling: a rank waiting in one runs no handlers, so peers that are
    /// still sending to it will stall once its queues fill. Use them for
    /// setup, or where no AM traffic can be in flight; clients synchronise
    /// with the AM barrier instead.
    fn bootstrap(&self) -> &dyn Bootstrap;
}
