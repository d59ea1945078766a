//! The Conduit SPI: what a network must provide.
//!
//! The required methods are the small core (identity, locality, segments,
//! split-phase AM injection, polling, bootstrap). Every higher feature has a
//! reference implementation over these, which a conduit may override with a
//! provided method where its hardware does better.

pub use crate::atomic::{AtomicOp, AtomicRequest, AtomicType, OpSet};
use crate::doorbell::MappedQueue;
use crate::locality::Locality;
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

    /// The job's neighbourhood table as this rank sees it: who is on this
    /// node, whose segment is mapped here (all of it: its rank is the
    /// peer's and its length [`segment_len`](Conduit::segment_len)'s, so
    /// RMA checks ranges against it on the mapped path), and what carries
    /// AMs to each peer. Built once at setup; every layer reads it, none
    /// asks again.
    fn locality(&self) -> &Locality;

    /// This rank's segment.
    fn segment(&self) -> &Segment;

    /// Length of `peer`'s segment (exchanged at setup).
    fn segment_len(&self, peer: Rank) -> u64;

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

    /// Whether the queues of the peers shared memory carries (in
    /// [`locality`](Conduit::locality)) are mapped: claims to them are
    /// node-local cells, which the protocol layer may publish itself
    /// ([`MappedQueue`]). Asked once when an endpoint is made. The default
    /// is `None`.
    fn mapped_queue(&self) -> Option<MappedQueue> {
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
    /// every [`STALL_POLLS`](https://docs.rs/rgex-endpoint) empty polls in a
    /// row on one thread, as it checks its own operations in flight):
    /// look at the peers of the operations this conduit carries alone
    /// (native RMA, offloaded atomics) and fail those to a peer that is
    /// gone, so their waits end. Off any hot path. The default does
    /// nothing.
    fn check_in_flight(&self) {}

    /// Publish a claimed message with `len <= slot.granted` payload bytes
    /// already assembled at `slot.buf`. Never waits. A negotiated-payload
    /// claim to a peer whose queue is mapped ([`mapped_queue`](Self::mapped_queue)) is
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
    // Always inlined where the conduit is known: into `Observed`'s
    // counting `try_send`, whose one call then does the whole send.
    #[inline(always)]
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
    /// (a progress thread's idle wait: `rgex_endpoint::progress_thread`).
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

    /// Another endpoint of this rank over the same job (index `ep`, 1 or
    /// more): injection and completion resources of its own (rings, a
    /// network endpoint and completion queue, queue pairs), sharing this
    /// conduit's segment, neighbourhood table and bootstrap; an AM from it
    /// reaches endpoint `ep` of its peer, and its RMA completes on it.
    /// Collective: every rank opens endpoint `ep` together. The default
    /// refuses: a conduit with one set of resources says so, naming why.
    ///
    /// ```no_run
    /// # fn demo(c: std::sync::Arc<dyn rgex_core::Conduit>) -> rgex_core::Result<()> {
    /// let second = c.clone().open_endpoint(1)?;
    /// assert_eq!(second.rank(), c.rank());
    /// # Ok(()) }
    /// ```
    fn open_endpoint(self: std::sync::Arc<Self>, ep: u32) -> Result<std::sync::Arc<dyn Conduit>> {
        Err(crate::Error::Config(format!(
            "{}: the {} conduit offers one endpoint per process; endpoint {ep} cannot be opened",
            self.rank(),
            self.name()
        )))
    }

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
    /// ([`OpCounter::add`](crate::OpCounter::add)) and calls
    /// [`OpCounter::done`](crate::OpCounter::done) once the bytes are in
    /// the peer's segment; if it still reads `src` after returning it has
    /// also counted one on `lc`, done when `src` may be reused. OpCounter
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
        lc: &Arc<crate::OpCounter>,
        rc: &Arc<crate::OpCounter>,
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
        done: &Arc<crate::OpCounter>,
    ) -> Result<()> {
        let _ = (dst, done);
        Err(crate::Error::Config(format!(
            "the {} conduit has no native RMA (get of {len} bytes from {peer} + {offset:#x})",
            self.name()
        )))
    }

    /// Put-with-signal override point: true if this conduit carries a put
    /// followed by its signal to `peer` itself
    /// ([`try_put_signal`](Self::try_put_signal): a write then a fenced
    /// atomic, or a write with immediate data), for a peer whose segment
    /// is not mapped here. Decided once per peer when an endpoint is made.
    /// The default is false: rgex-endpoint's AM reference carries both in
    /// one request (its handler writes the data, then the signal).
    ///
    /// ```no_run
    /// # fn demo(c: &dyn rgex_core::Conduit) {
    /// let native = (0..c.size()).filter(|&p| c.put_signal_native(rgex_core::Rank(p))).count();
    /// println!("{native} peers take the conduit's own put-with-signal");
    /// # }
    /// ```
    fn put_signal_native(&self, peer: Rank) -> bool {
        let _ = peer;
        false
    }

    /// Start a put of `len` bytes at `src` into `peer`'s segment at
    /// `offset`, then `signal`'s update of the word at `signal.offset`
    /// there, for a peer where [`put_signal_native`](Self::put_signal_native)
    /// holds: the updated word must never be visible at `peer` before the
    /// data (an Acquire load that reads it sees the bytes). Both ranges
    /// are already checked, the word 8-byte aligned. Counted as for
    /// [`try_put`](Self::try_put): one on `rc`, done once the data and
    /// the signal are both in place; one on `lc` if `src` is still read
    /// after returning. Never waits
    /// ([`Error::WouldBlock`](crate::Error::WouldBlock), nothing counted
    /// or sent). The default refuses.
    ///
    /// # Safety
    /// `src..src+len` must stay readable and unmodified until local
    /// completion.
    #[allow(clippy::too_many_arguments)]
    unsafe fn try_put_signal(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        signal: &crate::Signal,
        lc: &Arc<crate::OpCounter>,
        rc: &Arc<crate::OpCounter>,
    ) -> Result<()> {
        let _ = (src, lc, rc);
        Err(crate::Error::Config(format!(
            "the {} conduit has no native put-with-signal (put of {len} bytes to {peer} + \
             {offset:#x}, signal at {:#x})",
            self.name(),
            signal.offset
        )))
    }

    /// A node-local `peer`'s memory was just updated in a way a wait of
    /// its may be for (the signal word of a put-with-signal, stored here
    /// through its mapped segment): if one of its threads sleeps on its
    /// wait object ([`idle_wait`](Self::idle_wait)), wake it. Called after
    /// the update; the conduit orders its look at whether the peer sleeps
    /// after the update with a SeqCst fence, and the sleeper asks
    /// `still_idle` (which re-reads the word after a SeqCst fence of its
    /// own) after arming: one of the two sees the other, so no wake is
    /// lost. Cheap when the peer is awake (no system call). The default
    /// does nothing (a conduit without wait objects, or whose node-local
    /// peers' sleeps are woken another way).
    fn wake_peer(&self, peer: Rank) {
        let _ = peer;
    }

    /// Client segments' override point (GASNet-EX's `gex_Segment_Create`
    /// over client memory): register `len` bytes at `ptr`, client segment
    /// `k` (offsets `k * CLIENT_SEGMENT_STRIDE ..` of this rank's address
    /// space, [`segment::CLIENT_SEGMENT_STRIDE`](crate::segment::CLIENT_SEGMENT_STRIDE)),
    /// with the network for peers' remote reads and writes
    /// (`fi_mr_reg`, `ibv_reg_mr`). Returns this rank's card for the
    /// others (keys, addresses), exchanged by the caller and handed to
    /// [`connect_client_segment`](Self::connect_client_segment) on every
    /// rank; `Ok(None)` if this conduit does not (the default: rgex's
    /// active-message reference serves client segments). Local; called
    /// collectively, in the same order of `k` everywhere.
    ///
    /// # Safety
    /// `ptr..ptr+len` stays allocated until
    /// [`close_client_segment`](Self::close_client_segment)`(k)` returns.
    unsafe fn register_client_segment(
        &self,
        k: usize,
        ptr: *mut u8,
        len: usize,
    ) -> Result<Option<Vec<u8>>> {
        let _ = (k, ptr, len);
        Ok(None)
    }

    /// Learn every rank's card of client segment `k` (`None` where a rank
    /// had none), in rank order. Returns, per peer, whether
    /// [`try_put`](Self::try_put) and [`try_get`](Self::try_get) at that
    /// segment's offsets now reach it natively; the caller sends only
    /// such operations, range-checked, and none after it closed `k`
    /// itself. The default: none do.
    fn connect_client_segment(&self, k: usize, cards: &[Option<Vec<u8>>]) -> Result<Vec<bool>> {
        let _ = k;
        Ok(vec![false; cards.len()])
    }

    /// Close this rank's registration of client segment `k` with the
    /// network, and forget the peers' cards of it: once this returns no
    /// peer's RDMA reaches the memory (one in flight or arriving later
    /// fails at its initiator with the network's error), so the caller
    /// may hand it back. The default has nothing to close.
    fn close_client_segment(&self, k: usize) {
        let _ = k;
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
    /// ([`OpCounter::add`](crate::OpCounter::add)); when the operation
    /// completes it stores the fetched value's bit pattern (zero-extended
    /// to 64 bits; anything for non-fetching ops) into `fetched`, then calls
    /// [`OpCounter::done`](crate::OpCounter::done). Completion may be
    /// driven by [`poll`](Self::poll). Never waits: a busy resource is
    /// [`Error::WouldBlock`](crate::Error::WouldBlock) (the atomics layer
    /// polls and retries). On `Err` nothing was counted or sent. The
    /// default refuses.
    fn atomic_start(
        &self,
        req: &AtomicRequest,
        fetched: &Arc<AtomicU64>,
        done: &Arc<crate::OpCounter>,
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

    /// VIS override point: true if this conduit moves a whole vector of
    /// chunks to or from `peer` itself ([`try_putv`](Self::try_putv),
    /// [`try_getv`](Self::try_getv): a network with gather/scatter lists).
    /// VIS's `Auto` mechanism then takes it for a peer whose segment is not
    /// mapped here, before per-chunk RMA or AM packing (GASNet-EX's
    /// `GASNETE_PUTV_OVERRIDE`). The default is false: VIS's reference
    /// mechanisms serve every peer.
    fn vis_native(&self, peer: Rank) -> bool {
        let _ = peer;
        false
    }

    /// Start a put of every chunk of `chunks` (each `len > 0`, its local
    /// side a source) into `peer`'s segment, for a peer where
    /// [`vis_native`](Self::vis_native) holds. The ranges are already
    /// checked. Completion is counted as for [`try_put`](Self::try_put),
    /// once for the whole vector: one on `rc`, and one on `lc` if the
    /// conduit still reads a source after returning. Never waits
    /// ([`Error::WouldBlock`](crate::Error::WouldBlock), nothing counted
    /// or sent).
    ///
    /// # Safety
    /// Every chunk's source must stay readable and unmodified until local
    /// completion.
    unsafe fn try_putv(
        &self,
        peer: Rank,
        chunks: &[Chunk],
        lc: &Arc<crate::OpCounter>,
        rc: &Arc<crate::OpCounter>,
    ) -> Result<()> {
        let _ = (lc, rc);
        Err(crate::Error::Config(format!(
            "the {} conduit has no native VIS (put of {} chunks to {peer})",
            self.name(),
            chunks.len()
        )))
    }

    /// Start a get of every chunk of `chunks` (each local side a
    /// destination) from `peer`'s segment; as [`try_putv`](Self::try_putv),
    /// one counted on `done` for the whole vector.
    ///
    /// # Safety
    /// Every chunk's destination must stay valid, and untouched by anyone
    /// else, until `done` completes.
    unsafe fn try_getv(
        &self,
        peer: Rank,
        chunks: &[Chunk],
        done: &Arc<crate::OpCounter>,
    ) -> Result<()> {
        let _ = done;
        Err(crate::Error::Config(format!(
            "the {} conduit has no native VIS (get of {} chunks from {peer})",
            self.name(),
            chunks.len()
        )))
    }

    /// Collective override point: true if this conduit runs collective
    /// `kind` over the team of world ranks `members` (in team order, this
    /// rank among them) itself, a hardware barrier or broadcast
    /// ([`barrier_native`](Self::barrier_native),
    /// [`broadcast_native`](Self::broadcast_native)). Every member of a
    /// team must answer alike (the answer may depend on the members, not
    /// on the rank asking). The default is false: rgex-endpoint's reference
    /// algorithms over AMs serve every team.
    fn coll_native(&self, kind: CollKind, members: &[Rank]) -> bool {
        let _ = (kind, members);
        false
    }

    /// A barrier over `members`, where [`coll_native`](Self::coll_native)
    /// holds for it: returns once every member has entered. The conduit
    /// makes progress on its own network while it waits (AMs that arrive
    /// meanwhile are delivered by the caller's later polls).
    fn barrier_native(&self, members: &[Rank]) -> Result<()> {
        Err(crate::Error::Config(format!(
            "the {} conduit has no native barrier (a team of {})",
            self.name(),
            members.len()
        )))
    }

    /// A broadcast over `members` from the member at team index `root`:
    /// at the root `data` is sent; elsewhere it is replaced by the root's
    /// bytes. As [`barrier_native`](Self::barrier_native) for waiting.
    fn broadcast_native(&self, members: &[Rank], root: u32, data: &mut Vec<u8>) -> Result<()> {
        Err(crate::Error::Config(format!(
            "the {} conduit has no native broadcast (a team of {}, {} bytes from member {root})",
            self.name(),
            members.len(),
            data.len()
        )))
    }
}

/// One chunk of a vector transfer ([`Conduit::try_putv`]): `len` bytes at
/// `offset` in the peer's segment, and at `local` in this process (a
/// source for a put, a destination for a get).
#[derive(Clone, Copy, Debug)]
pub struct Chunk {
    /// Offset in the peer's segment.
    pub offset: u64,
    /// The local side.
    pub local: *mut u8,
    /// Bytes.
    pub len: usize,
}

/// A collective a conduit may run itself ([`Conduit::coll_native`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollKind {
    /// [`Conduit::barrier_native`].
    Barrier,
    /// [`Conduit::broadcast_native`].
    Broadcast,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Recorder, RecorderConfig, Step};
    use crate::{Category, Direction, Error};

    fn recorder(busy: bool, mute: bool) -> Recorder {
        Recorder::new(RecorderConfig {
            busy,
            mute,
            ..RecorderConfig::default()
        })
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
        let c = recorder(false, false);
        let dynamic: &dyn Conduit = &c;
        dynamic
            .try_send(&spec(Category::Medium, 3), 9, &[42], b"abc")
            .expect("a free buffer");
        assert_eq!(
            c.steps(),
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
        let c = recorder(true, false);
        let e = c
            .try_send(&spec(Category::Medium, 3), 9, &[], b"abc")
            .expect_err("busy");
        assert!(e.is_would_block(), "{e}");
        let c = recorder(false, true);
        let e = c
            .try_send(&spec(Category::Short, 0), 9, &[], &[])
            .expect_err("mute");
        assert!(e.to_string().contains("recorder"), "{e}");
        assert_eq!(c.steps(), [Step::Prepare { most: 0 }]);
    }

    #[test]
    fn a_payload_beyond_the_spec_is_refused_before_any_claim() {
        let c = recorder(false, false);
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
        assert!(c.steps().is_empty(), "nothing claimed or committed");
    }
}
