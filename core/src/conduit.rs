//! The Conduit SPI: what a network must provide.
//!
//! The required methods are the small core (identity, locality, segments,
//! split-phase AM injection, polling, bootstrap). Every higher feature has a
//! reference implementation over these, which a conduit may override with a
//! provided method where its hardware does better.

pub use crate::atomic::{AtomicOp, AtomicRequest, AtomicType, OpSet};
use crate::doorbell::MappedQueue;
use crate::wire::Kind;
use crate::{Bootstrap, Claim, Delivery, Prepare, Rank, Result, Segment, SendSlot};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The largest Long payload a conduit's header describes (ofi's and scc's
/// carry the length in 32 bits): the bound of [`Conduit::max_long`]'s
/// default, whatever the segment's size.
pub const MAX_LONG_WIRE: usize = u32::MAX as usize;

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

/// Publish a claimed message: ring its cell's doorbell when the peer's
/// queue is mapped (`mapped`, from [`Conduit::mapped_queue`]: the header is
/// written in place, no call into the conduit), else [`Conduit::commit`].
/// `src` is the sending rank (`conduit.rank()`, passed in so a caller
/// holding it saves the call).
///
/// # Safety
/// As for [`Conduit::commit`]: `slot` holds a claim from `conduit`'s
/// [`try_prepare`](Conduit::try_prepare), neither committed nor cancelled;
/// and `mapped` is `conduit.mapped_queue(slot.peer)`.
///
/// ```no_run
/// # fn demo(c: &dyn rgex_core::Conduit, spec: &rgex_core::Prepare) {
/// use rgex_core::SendSlot;
/// let mut why = None;
/// if let Some(claim) = c.try_prepare(spec, &mut why) {
///     let mapped = c.mapped_queue(spec.peer);
///     let slot = SendSlot::new(spec, claim);
///     // SAFETY: a fresh claim from `c`, published once; `mapped` is c's.
///     unsafe { rgex_core::conduit::publish(c, mapped, c.rank(), slot, 9, &[1, 2], 0) };
/// }
/// # }
/// ```
#[inline(always)]
pub unsafe fn publish<C: Conduit + ?Sized>(
    conduit: &C,
    mapped: Option<MappedQueue>,
    src: Rank,
    slot: SendSlot,
    handler: u8,
    args: &[u32],
    len: usize,
) {
    match mapped {
        // SAFETY: the caller passes a live claim to the peer of `queue`
        // (this function's contract), consumed here.
        Some(queue) => unsafe { queue.doorbell(slot.cookie) }.ring(
            src,
            Kind::new(slot.category, slot.dir),
            handler,
            args,
            len,
            slot.long_offset,
        ),
        // SAFETY: as above.
        None => unsafe { conduit.commit(slot, handler, args, len) },
    }
}

/// The reference fixed-payload send, [`Conduit::try_send`]'s default:
/// [`try_prepare`](Conduit::try_prepare) for exactly `payload.len()`
/// bytes, copy, [`publish`]. A conduit that overrides `try_send` for some
/// messages sends the others with this, so the generic path is written
/// once.
///
/// ```no_run
/// # use rgex_core::{Conduit, Prepare, Result};
/// # fn demo(c: &dyn Conduit, spec: &Prepare) -> Result<()> {
/// // A Medium of 3 bytes to handler 9, with one argument.
/// rgex_core::conduit::send_via_prepare(c, spec, 9, &[42], b"abc")
/// # }
/// ```
#[inline(always)]
pub fn send_via_prepare<C: Conduit + ?Sized>(
    c: &C,
    spec: &Prepare,
    handler: u8,
    args: &[u32],
    payload: &[u8],
) -> Result<()> {
    spec.check_payload(payload.len())?;
    let mut refused = None;
    let Some(claim) = c.try_prepare(spec, &mut refused) else {
        return Err(Claim::refusal(refused, c.name()));
    };
    if !payload.is_empty() {
        // SAFETY: the conduit granted `most >= len` (checked above) writable
        // bytes at `claim.buf`, reserved for this message, which cannot
        // overlap the caller's `payload` slice.
        unsafe {
            std::ptr::copy_nonoverlapping(payload.as_ptr(), claim.buf.as_ptr(), payload.len())
        };
    }
    let mapped = c.mapped_queue(spec.peer);
    let slot = SendSlot::new(spec, claim);
    // SAFETY: the claim was just made by this conduit and is published
    // once, here; `mapped` is this conduit's answer for the peer.
    unsafe { publish(c, mapped, c.rank(), slot, handler, args, payload.len()) };
    Ok(())
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

    /// `peer`'s segment as mapped in this process, when it is node-local:
    /// all of it, so its rank is `peer` and its length
    /// [`segment_len`](Conduit::segment_len)`(peer)` (RMA checks ranges
    /// against it on the mapped path).
    fn mapped_segment(&self, peer: Rank) -> Option<Segment>;

    /// Largest Medium payload to `peer` with `nargs` arguments. At least 512,
    /// the same on every rank, never growing with `nargs`.
    fn max_medium(&self, peer: Rank, nargs: usize) -> usize;

    /// Largest Long payload to `peer` with `nargs` arguments: what fits
    /// `peer`'s segment at offset 0 ([`segment_len`](Conduit::segment_len)),
    /// within the conduit's own limit. The default bounds the segment's
    /// length by [`MAX_LONG_WIRE`] (the 32-bit length field of the
    /// conduits' headers); a conduit with a smaller limit overrides it,
    /// staying within the peer's segment. A Long at offset `o` gets at most
    /// `segment_len(peer) - o` of it (the AM layer checks).
    fn max_long(&self, peer: Rank, nargs: usize) -> usize {
        let _ = nargs;
        usize::try_from(self.segment_len(peer)).map_or(MAX_LONG_WIRE, |s| s.min(MAX_LONG_WIRE))
    }

    /// Claim the resources for one message, without waiting: a slot in the
    /// peer's queue and a payload buffer of exactly `spec.most` bytes (the
    /// AM layer has validated `spec` and clamped `most` to the limits this
    /// conduit reports).
    ///
    /// On refusal returns `None` with the reason in `refused`:
    /// [`Error::WouldBlock`](crate::Error::WouldBlock) when a resource is
    /// not free (the caller decides whether to poll and retry: the stall
    /// lives in one place, the AM layer, for every conduit), or why the
    /// peer cannot be reached. ([`Claim::hand_over`] turns a `Result` into
    /// this form. The claim comes back in registers this way; see
    /// [`Claim`] for why that matters.)
    fn try_prepare(&self, spec: &Prepare, refused: &mut Option<crate::Error>) -> Option<Claim>;

    /// Whether `peer`'s queue is mapped: claims to it are
    /// [`MappedCell`](crate::doorbell::MappedCell)s that the protocol layer
    /// may publish itself ([`publish`]). Asked once per peer when an
    /// endpoint is made. The default is `None`.
    fn mapped_queue(&self, peer: Rank) -> Option<MappedQueue> {
        let _ = peer;
        None
    }

    /// Why `peer` is gone from the job (it left, or its process died,
    /// or the network declared it dead), if this conduit can tell now;
    /// `None` while it is there as far as the conduit knows. Asked by the
    /// protocol layer when waits stall with operations in flight to
    /// `peer` (replies that would never come fail instead of hanging),
    /// never on a hot path; it may look at the peer's process, rate
    /// limited. The default knows nothing.
    fn peer_gone(&self, peer: Rank) -> Option<String> {
        let _ = peer;
        None
    }

    /// Publish a claimed message with `len <= slot.granted` payload bytes
    /// already assembled at `slot.buf`. Never waits. A claim to a peer
    /// with a [`mapped_queue`](Self::mapped_queue) is usually published by
    /// ringing its doorbell instead ([`publish`] does whichever applies);
    /// `commit` must accept it all the same.
    ///
    /// # Safety
    /// `slot` holds a claim this conduit's [`try_prepare`](Self::try_prepare)
    /// returned (the ticket is trusted: it may be an address), not yet
    /// committed, cancelled or rung.
    unsafe fn commit(&self, slot: SendSlot, handler: u8, args: &[u32], len: usize);

    /// Release a prepared message: nothing reaches the peer's handlers.
    ///
    /// # Safety
    /// As for [`commit`](Self::commit).
    unsafe fn cancel(&self, slot: SendSlot);

    /// Send a message whose whole payload the caller holds, without
    /// waiting: [`try_prepare`](Self::try_prepare) for exactly
    /// `payload.len()` bytes, copy, [`commit`](Self::commit). It is the same
    /// injection path as a negotiated send, taken in one call: this default
    /// is compiled against each conduit's own methods, so a fixed-payload
    /// send makes one dynamic call instead of two. `spec` is validated as
    /// for `try_prepare`, with `least == most == payload.len()`.
    ///
    /// Returns [`Error::WouldBlock`](crate::Error::WouldBlock), with nothing
    /// claimed or sent, when a resource is not free.
    ///
    /// A conduit may override it where one step can do the work of the
    /// three (the ofi conduit claims and sends a network Medium under one
    /// lock), and hand the rest to [`send_via_prepare`], which is this
    /// default.
    #[inline]
    fn try_send(&self, spec: &Prepare, handler: u8, args: &[u32], payload: &[u8]) -> Result<()> {
        send_via_prepare(self, spec, handler, args, payload)
    }

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

    /// This conduit as [`Any`](std::any::Any), so a client can reach what a
    /// conduit offers beyond the SPI (the scc conduit's epochs, the ofi
    /// conduit's provider) by downcasting. The default offers nothing.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }

    /// True if this conduit moves RMA to `peer` itself (RDMA on a network,
    /// coherent copies on the scc conduit). The default is false: rgex then
    /// copies through the peer's mapped segment or falls back to the AM
    /// reference. Decided once per peer when an endpoint is made.
    fn rma_native(&self, peer: Rank) -> bool {
        let _ = peer;
        false
    }

    /// Start a put of `len > 0` bytes at `src` into `peer`'s segment at
    /// `offset`, for a peer where [`rma_native`](Self::rma_native) holds.
    /// The range is already checked against the peer's segment.
    ///
    /// Never waits: if a resource is busy it returns
    /// [`Error::WouldBlock`](crate::Error::WouldBlock) with nothing counted
    /// or sent (the AM layer polls and retries, or hands the would-block to
    /// an IMMEDIATE caller). On `Ok` the conduit has counted one on `rc`
    /// ([`Completion::add`](crate::Completion::add)) and calls
    /// [`Completion::done`](crate::Completion::done) once the bytes are in
    /// the peer's segment; if it still reads `src` after returning it has
    /// also counted one on `lc`, done when `src` may be reused. Completion
    /// may be driven by [`poll`](Self::poll).
    ///
    /// # Safety
    /// `src..src+len` must stay readable and unmodified until local
    /// completion (`lc`, or return when nothing was counted on it).
    unsafe fn try_put(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        lc: &Arc<crate::Completion>,
        rc: &Arc<crate::Completion>,
    ) -> Result<()> {
        let _ = (src, lc, rc);
        Err(crate::Error::Config(format!(
            "the {} conduit has no native RMA (put of {len} bytes to {peer} + {offset:#x})",
            self.name()
        )))
    }

    /// Start a get of `len > 0` bytes from `peer`'s segment at `offset`
    /// into `dst`; as [`try_put`](Self::try_put) for waiting. On `Ok` one is
    /// counted on `done`, done when `dst` holds the bytes.
    ///
    /// # Safety
    /// `dst..dst+len` must stay valid, and untouched by anyone else, until
    /// `done` completes.
    unsafe fn try_get(
        &self,
        dst: *mut u8,
        peer: Rank,
        offset: u64,
        len: usize,
        done: &Arc<crate::Completion>,
    ) -> Result<()> {
        let _ = (dst, done);
        Err(crate::Error::Config(format!(
            "the {} conduit has no native RMA (get of {len} bytes from {peer} + {offset:#x})",
            self.name()
        )))
    }

    /// True if this conduit performs remote atomics of type `ty` for every
    /// op in `ops` in the network (NIC offload), for every peer. An atomic
    /// domain takes offload only if this holds for its whole op set, never
    /// a mix (NIC atomics are in general not atomic with respect to CPU
    /// atomics on the same word). The default offloads nothing.
    fn atomic_offload(&self, ty: AtomicType, ops: OpSet) -> bool {
        let _ = (ty, ops);
        false
    }

    /// Start one offloaded remote atomic. Called only for a type and an op
    /// set this conduit accepted in [`atomic_offload`](Self::atomic_offload),
    /// with the range already bounds- and alignment-checked.
    ///
    /// On `Ok`, the conduit has counted the operation on `done`
    /// ([`Completion::add`](crate::Completion::add)); when the operation
    /// completes it stores the fetched value's bit pattern (zero-extended
    /// to 64 bits; anything for non-fetching ops) into `fetched`, then calls
    /// [`Completion::done`](crate::Completion::done). Completion may be
    /// driven by [`poll`](Self::poll). Never waits: a busy resource is
    /// [`Error::WouldBlock`](crate::Error::WouldBlock) (the atomics layer
    /// polls and retries). On `Err` nothing was counted or sent. The
    /// default refuses.
    fn atomic_start(
        &self,
        req: &AtomicRequest,
        fetched: &Arc<AtomicU64>,
        done: &Arc<crate::Completion>,
    ) -> Result<()> {
        let _ = (fetched, done);
        Err(crate::Error::Config(format!(
            "the {} conduit does not offload remote atomics ({:?} {:?} at {} + {:#x})",
            self.name(),
            req.ty,
            req.op,
            req.target,
            req.offset
        )))
    }
}
