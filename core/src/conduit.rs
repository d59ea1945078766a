//! The Conduit SPI: what a network must provide.
//!
//! The required methods are the small core (identity, locality, segments,
//! split-phase AM injection, polling, bootstrap). Every higher feature has a
//! reference implementation over these, which a conduit may override with a
//! provided method where its hardware does better.

pub use crate::atomic::{AtomicOp, AtomicRequest, AtomicType, OpSet};
use crate::doorbell::MappedQueue;
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

    /// Whether `peer`'s queue is mapped: claims to it are cells of the
    /// node-local shared-memory transport, which the protocol layer may
    /// publish itself ([`MappedQueue`]). Asked once per peer when an
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

    /// Another part of this rank found `peer` gone for `why` (the
    /// node-local bypass, whose smp watches the node's processes, about
    /// a peer this conduit also carries offloaded atomics to): fail what
    /// this conduit holds for `peer`, and every later operation to it,
    /// naming it. Idempotent; never on a hot path. The default does
    /// nothing (a conduit that watches all its peers itself).
    fn peer_left(&self, peer: Rank, why: &str) {
        let _ = (peer, why);
    }

    /// The waits of this rank have stalled (the protocol layer calls it
    /// every [`STALL_POLLS`](https://docs.rs/rgex-am) empty polls in a
    /// row on one thread, as it checks its own operations in flight):
    /// look at the peers of the operations this conduit carries alone
    /// (native RMA, offloaded atomics) and fail those to a peer that is
    /// gone, so their waits end. Off any hot path. The default does
    /// nothing.
    fn check_in_flight(&self) {}

    /// Publish a claimed message with `len <= slot.granted` payload bytes
    /// already assembled at `slot.buf`. Never waits. A negotiated-payload
    /// claim to a peer with a [`mapped_queue`](Self::mapped_queue) is
    /// usually published by ringing its doorbell instead; `commit` must
    /// accept it all the same. It is also the publish step of the
    /// fixed-payload [`try_send`](Self::try_send).
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

    /// The claim step of the fixed-payload [`try_send`](Self::try_send):
    /// [`try_prepare`](Self::try_prepare) with the refusal as the error.
    /// A conduit whose own claim already returns a `Result` overrides it
    /// to hand that straight over (smp does: the out-parameter form costs
    /// a few nanoseconds a send there).
    ///
    /// ```no_run
    /// # use rgex_core::{Conduit, Prepare, Result};
    /// # fn demo(c: &dyn Conduit, spec: &Prepare) -> Result<()> {
    /// let claim = c.claim_send(spec)?; // Err(WouldBlock) when no buffer is free
    /// # let _ = claim; Ok(())
    /// # }
    /// ```
    #[inline]
    fn claim_send(&self, spec: &Prepare) -> Result<Claim> {
        let mut refused = None;
        match self.try_prepare(spec, &mut refused) {
            Some(claim) => Ok(claim),
            None => Err(Claim::refusal(refused, self.name())),
        }
    }

    /// The publish step of the fixed-payload [`try_send`](Self::try_send):
    /// [`commit`](Self::commit) of the claim for `spec`, its `len` payload
    /// bytes in place. A conduit overrides it to publish from `spec` and
    /// `claim` directly, without assembling the [`SendSlot`] a deferred
    /// commit needs.
    ///
    /// # Safety
    /// `claim` was returned by this conduit's
    /// [`claim_send`](Self::claim_send) for `spec`, and is not yet
    /// committed, cancelled or rung; `len <= spec.most`.
    #[inline]
    unsafe fn publish_send(
        &self,
        spec: &Prepare,
        claim: Claim,
        handler: u8,
        args: &[u32],
        len: usize,
    ) {
        // SAFETY: the claim is this conduit's, published once (the
        // caller's contract), which is commit's.
        unsafe { self.commit(SendSlot::new(spec, claim), handler, args, len) }
    }

    /// Send a message whose whole payload the caller holds, without
    /// waiting: the fixed-payload path, written once. It is the same
    /// injection as a negotiated send, taken in one call:
    /// [`claim_send`](Self::claim_send) for exactly `payload.len()`
    /// bytes, copy the payload into the claimed buffer,
    /// [`publish_send`](Self::publish_send). Compiled against each
    /// conduit's own methods, so a fixed-payload send makes one dynamic
    /// call, and the claim and the publish inline into it. `spec` is
    /// validated as for `try_prepare`, with `least == most == payload.len()`.
    ///
    /// Returns [`Error::WouldBlock`](crate::Error::WouldBlock), with nothing
    /// claimed or sent, when a resource is not free.
    ///
    /// A conduit specializes the steps (how it claims, how it publishes a
    /// claim), never this sequence: rgex's conduits do not override it
    /// (the node-local bypass only routes it to each side's own). Small
    /// payloads are copied inline, without a `memcpy` call.
    ///
    /// ```no_run
    /// # use rgex_core::{Conduit, Prepare, Result};
    /// # fn demo(c: &dyn Conduit, spec: &Prepare) -> Result<()> {
    /// // A Medium of 3 bytes to handler 9, with one argument.
    /// c.try_send(spec, 9, &[42], b"abc")
    /// # }
    /// ```
    #[inline]
    fn try_send(&self, spec: &Prepare, handler: u8, args: &[u32], payload: &[u8]) -> Result<()> {
        spec.check_payload(payload.len())?;
        let claim = self.claim_send(spec)?;
        if !payload.is_empty() {
            // SAFETY: the conduit granted `most >= len` (checked above)
            // writable bytes at `claim.buf`, reserved for this message,
            // which cannot overlap the caller's `payload` slice.
            unsafe { crate::small_copy::copy(payload.as_ptr(), claim.buf.as_ptr(), payload.len()) };
        }
        // SAFETY: the claim was just made by this conduit's claim_send for
        // `spec` and is published once, here; len <= most (checked above).
        unsafe { self.publish_send(spec, claim, handler, args, payload.len()) };
        Ok(())
    }

    /// Deliver up to a batch of incoming messages to `sink`, in arrival order
    /// per sender. Returns how many were delivered. Safe to call from many
    /// threads at once, and from inside `sink` with [`PollSet::RepliesOnly`].
    fn poll(&self, set: PollSet, sink: &mut dyn FnMut(&Delivery<'_>)) -> usize;

    /// Sleep until a message may have arrived for this rank, or
    /// [`idle_wake`](Self::idle_wake) is called, or `timeout` passes
    /// (a progress thread's idle wait: `rgex_am::progress_thread`).
    /// The conduit first arms its wait object, then asks `still_idle`
    /// and sleeps only if it says true (the caller's stop flag and other
    /// work are checked there, so a stop or a message that comes after
    /// the caller decided to sleep is never missed). It may return early
    /// for no reason; the caller polls and decides again.
    ///
    /// Returns false if this conduit has no wait object, without
    /// sleeping: the caller then sleeps a bounded time itself. smp's
    /// rings have one (a futex a sender rings only when the receiver
    /// declared itself asleep); the default has none.
    fn idle_wait(&self, timeout: std::time::Duration, still_idle: &dyn Fn() -> bool) -> bool {
        let _ = (timeout, still_idle);
        false
    }

    /// [`idle_wait`](Self::idle_wait) on a wait object that is a file
    /// descriptor, waking also when `also` becomes readable: how a
    /// wrapper that holds two conduits sleeps on both (the kit's
    /// `ShmBypass`: the network's completion fd and smp's wake socket,
    /// see `rgex_smp::wake_socket`). The same contract as `idle_wait`
    /// (arm, ask `still_idle`, sleep, at most `timeout`); the caller
    /// consumes what made `also` readable.
    ///
    /// Returns false, without sleeping, if this conduit has no wait
    /// object it can poll alongside another fd; the default has none.
    fn idle_wait_polling(
        &self,
        timeout: std::time::Duration,
        still_idle: &dyn Fn() -> bool,
        also: i32,
    ) -> bool {
        let _ = (timeout, still_idle, also);
        false
    }

    /// Wake this rank's threads in [`idle_wait`](Self::idle_wait) or
    /// [`idle_wait_polling`](Self::idle_wait_polling) (a progress thread
    /// being stopped). The default does nothing.
    fn idle_wake(&self) {}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::SingleRank;
    use crate::{Category, Direction, Error};
    use parking_lot::Mutex;
    use std::ptr::NonNull;

    /// What the recording conduit was asked to do, in order.
    #[derive(Debug, PartialEq)]
    enum Step {
        Prepare {
            most: usize,
        },
        Commit {
            handler: u8,
            args: Vec<u32>,
            payload: Vec<u8>,
        },
        Cancel,
    }

    /// A conduit with one 8-byte send buffer that records each step of
    /// the SPI it is driven through; `busy` refuses claims as would-block,
    /// `mute` refuses them without saying why.
    struct Recorder {
        buf: Mutex<[u8; 8]>,
        steps: Mutex<Vec<Step>>,
        busy: bool,
        mute: bool,
        seg: Segment,
    }

    impl Recorder {
        fn new(busy: bool, mute: bool) -> Self {
            Recorder {
                buf: Mutex::new([0; 8]),
                steps: Mutex::new(Vec::new()),
                busy,
                mute,
                // SAFETY: an empty range at a dangling pointer: nothing to map.
                seg: unsafe { Segment::from_raw(Rank(0), NonNull::dangling(), 0) },
            }
        }
    }

    impl Conduit for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn rank(&self) -> Rank {
            Rank(0)
        }
        fn size(&self) -> u32 {
            2
        }
        fn is_local(&self, _peer: Rank) -> bool {
            false
        }
        fn segment(&self) -> &Segment {
            &self.seg
        }
        fn segment_len(&self, _peer: Rank) -> u64 {
            0
        }
        fn mapped_segment(&self, _peer: Rank) -> Option<Segment> {
            None
        }
        fn max_medium(&self, _peer: Rank, _nargs: usize) -> usize {
            8
        }
        fn try_prepare(&self, spec: &Prepare, refused: &mut Option<Error>) -> Option<Claim> {
            self.steps.lock().push(Step::Prepare { most: spec.most });
            if self.mute {
                return None;
            }
            if self.busy {
                *refused = Some(Error::WouldBlock {
                    peer: spec.peer,
                    resource: "the recorder's one buffer",
                });
                return None;
            }
            Some(Claim::new(self.buf.data_ptr().cast(), 7))
        }
        unsafe fn commit(&self, slot: SendSlot, handler: u8, args: &[u32], len: usize) {
            assert_eq!(slot.cookie, 7, "the claim's ticket reaches commit");
            let payload = self.buf.lock()[..len].to_vec();
            self.steps.lock().push(Step::Commit {
                handler,
                args: args.to_vec(),
                payload,
            });
        }
        unsafe fn cancel(&self, _slot: SendSlot) {
            self.steps.lock().push(Step::Cancel);
        }
        fn poll(&self, _set: PollSet, _sink: &mut dyn FnMut(&Delivery<'_>)) -> usize {
            0
        }
        fn bootstrap(&self) -> &dyn Bootstrap {
            &SingleRank
        }
    }

    fn spec(category: Category, len: usize) -> Prepare {
        Prepare {
            peer: Rank(1),
            dir: Direction::Request,
            category,
            nargs: 1,
            least: len,
            most: len,
            long_offset: 0,
        }
    }

    #[test]
    fn fixed_payload_is_prepare_then_copy_then_commit() {
        let c = Recorder::new(false, false);
        let dynamic: &dyn Conduit = &c;
        dynamic
            .try_send(&spec(Category::Medium, 3), 9, &[42], b"abc")
            .expect("a free buffer");
        assert_eq!(
            *c.steps.lock(),
            [
                Step::Prepare { most: 3 },
                Step::Commit {
                    handler: 9,
                    args: vec![42],
                    payload: b"abc".to_vec()
                }
            ]
        );
    }

    #[test]
    fn a_refused_claim_sends_nothing_and_says_why() {
        let c = Recorder::new(true, false);
        let e = c
            .try_send(&spec(Category::Medium, 3), 9, &[], b"abc")
            .expect_err("busy");
        assert!(e.is_would_block(), "{e}");
        let c = Recorder::new(false, true);
        let e = c
            .try_send(&spec(Category::Short, 0), 9, &[], &[])
            .expect_err("mute");
        assert!(e.to_string().contains("recorder"), "{e}");
        assert_eq!(*c.steps.lock(), [Step::Prepare { most: 0 }]);
    }

    #[test]
    fn a_payload_beyond_the_spec_is_refused_before_any_claim() {
        let c = Recorder::new(false, false);
        let e = c
            .try_send(&spec(Category::Short, 0), 9, &[], b"abc")
            .expect_err("a Short has no payload");
        assert!(e.to_string().contains("Short"), "{e}");
        let e = c
            .try_send(&spec(Category::Medium, 2), 9, &[], b"abc")
            .expect_err("3 bytes into 2");
        assert!(
            matches!(e, Error::PayloadTooLarge { len: 3, max: 2, .. }),
            "{e}"
        );
        assert!(c.steps.lock().is_empty(), "nothing claimed or committed");
    }
}
