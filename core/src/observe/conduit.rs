//! [`Observed`]: a conduit that tells the observer of every AM injected
//! and delivered, every poll, every native RMA and offloaded atomic, and
//! every would-block, then hands each call to the conduit it wraps.
//!
//! `rgex::init` wraps the conduit in it only when `RGEX_STATS` or
//! `RGEX_TRACE` asks, so a job that observes nothing runs the conduit's
//! own calls, unchanged. It forwards every method of the SPI, provided
//! ones included (a provided method left to its default would bypass the
//! wrapped conduit's override), except one: it maps no queue
//! ([`Conduit::mapped_queue`] is `None`), so that a negotiated-payload
//! send to a node-local peer is committed through it, where it is
//! counted, instead of rung by the endpoint directly.

use super::AtomicImpl;
use crate::conduit::{AtomicRequest, AtomicType, Chunk, CollKind, OpSet};
use crate::doorbell::MappedQueue;
use crate::locality::Locality;
use crate::{
    Bootstrap, Claim, Conduit, Delivery, Error, OpCounter, PollSet, Prepare, Rank, Result, Segment,
    SendSlot, Signal,
};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// A conduit observed, installed by `rgex::init` only when `RGEX_STATS`
/// or `RGEX_TRACE` asks: it counts and traces at the conduit boundary,
/// forwards every SPI method, and maps no queue.
///
/// ```no_run
/// # fn demo(c: std::sync::Arc<dyn rgex_core::Conduit>) {
/// use rgex_core::observe::Observed;
/// let observed: std::sync::Arc<dyn rgex_core::Conduit> = Observed::wrap(c);
/// # let _ = observed; }
/// ```
///
/// Generic over the conduit it wraps, so that `rgex::init`, which knows
/// the conduit's type, gets the wrapped calls made statically and inlined
/// into the counting ones (one dynamic call per operation, as unobserved,
/// instead of two). An endpoint's conduit, known only as `dyn Conduit`,
/// is wrapped as such.
pub struct Observed<C: ?Sized> {
    inner: Arc<C>,
}

impl<C: Conduit + ?Sized + 'static> Observed<C> {
    /// `inner`, observed.
    pub fn wrap(inner: Arc<C>) -> Arc<dyn Conduit> {
        Arc::new(Observed { inner })
    }
}

/// Tell the observer of a would-block in `r`, and hand `r` back.
#[inline(always)]
fn seen<T>(peer: Rank, r: Result<T>) -> Result<T> {
    if let Err(Error::WouldBlock { .. }) = &r {
        super::would_block(peer);
    }
    r
}

impl<C: Conduit + ?Sized + 'static> Conduit for Observed<C> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn rank(&self) -> Rank {
        self.inner.rank()
    }
    fn size(&self) -> u32 {
        self.inner.size()
    }
    fn locality(&self) -> &Locality {
        self.inner.locality()
    }
    fn segment(&self) -> &Segment {
        self.inner.segment()
    }
    fn segment_len(&self, peer: Rank) -> u64 {
        self.inner.segment_len(peer)
    }
    fn max_medium(&self, peer: Rank, nargs: usize) -> usize {
        self.inner.max_medium(peer, nargs)
    }
    fn max_long(&self, peer: Rank, nargs: usize) -> usize {
        self.inner.max_long(peer, nargs)
    }
    fn try_prepare(&self, spec: &Prepare, refused: &mut Option<Error>) -> Option<Claim> {
        let c = self.inner.try_prepare(spec, refused);
        if c.is_none() && matches!(refused, Some(Error::WouldBlock { .. })) {
            super::would_block(spec.peer);
        }
        c
    }
    fn mapped_queue(&self) -> Option<MappedQueue> {
        None
    }
    fn peer_gone(&self, peer: Rank) -> Option<String> {
        self.inner.peer_gone(peer)
    }
    fn peer_left(&self, peer: Rank, why: &str) {
        self.inner.peer_left(peer, why)
    }
    fn check_in_flight(&self) {
        self.inner.check_in_flight()
    }
    unsafe fn commit(&self, slot: SendSlot, handler: u8, args: &[u32], len: usize) {
        super::am_injected(slot.peer, slot.dir, slot.category, handler, len, true);
        // SAFETY: the caller's contract, handed on unchanged.
        unsafe { self.inner.commit(slot, handler, args, len) }
    }
    unsafe fn cancel(&self, slot: SendSlot) {
        // SAFETY: the caller's contract, handed on unchanged.
        unsafe { self.inner.cancel(slot) }
    }
    // `claim_send` and `publish_send` are the steps of `try_send`, which
    // is forwarded whole (the wrapped conduit's own steps run inside it);
    // forwarded too, for a caller that takes the steps itself.
    fn claim_send(&self, spec: &Prepare) -> Result<Claim> {
        seen(spec.peer, self.inner.claim_send(spec))
    }
    unsafe fn publish_send(
        &self,
        spec: &Prepare,
        claim: Claim,
        handler: u8,
        args: &[u32],
        len: usize,
    ) {
        super::am_injected(spec.peer, spec.dir, spec.category, handler, len, false);
        // SAFETY: the caller's contract, handed on unchanged.
        unsafe { self.inner.publish_send(spec, claim, handler, args, len) }
    }
    #[inline]
    fn try_send(&self, spec: &Prepare, handler: u8, args: &[u32], payload: &[u8]) -> Result<()> {
        let r = self.inner.try_send(spec, handler, args, payload);
        if r.is_ok() {
            super::am_injected(
                spec.peer,
                spec.dir,
                spec.category,
                handler,
                payload.len(),
                false,
            );
            // A fresh `Ok`, not `r` moved (an `Error`-sized copy).
            return Ok(());
        }
        seen(spec.peer, r)
    }
    #[inline]
    fn poll(&self, set: PollSet, sink: &mut dyn FnMut(&Delivery<'_>)) -> usize {
        let n = self.inner.poll(set, &mut |d: &Delivery<'_>| {
            super::am_delivered(d.src, d.dir, d.category, d.handler, d.payload.len());
            sink(d)
        });
        super::poll(n);
        n
    }
    fn idle_wait(&self, timeout: std::time::Duration, still_idle: &dyn Fn() -> bool) -> bool {
        self.inner.idle_wait(timeout, still_idle)
    }
    fn idle_wait_polling(
        &self,
        timeout: std::time::Duration,
        still_idle: &dyn Fn() -> bool,
        also: i32,
    ) -> bool {
        self.inner.idle_wait_polling(timeout, still_idle, also)
    }
    fn idle_wake(&self) {
        self.inner.idle_wake()
    }
    fn bootstrap(&self) -> &dyn Bootstrap {
        self.inner.bootstrap()
    }
    fn open_endpoint(self: Arc<Self>, ep: u32) -> Result<Arc<dyn Conduit>> {
        Ok(Observed::wrap(self.inner.clone().open_endpoint(ep)?))
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        self.inner.as_any()
    }
    fn rma_native(&self, peer: Rank) -> bool {
        self.inner.rma_native(peer)
    }
    unsafe fn try_put(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        lc: &Arc<OpCounter>,
        rc: &Arc<OpCounter>,
    ) -> Result<()> {
        // Counted where the endpoint chose its route (with its completion
        // kind), not here.
        // SAFETY: the caller's contract, handed on unchanged.
        seen(peer, unsafe {
            self.inner.try_put(peer, offset, src, len, lc, rc)
        })
    }
    unsafe fn try_get(
        &self,
        dst: *mut u8,
        peer: Rank,
        offset: u64,
        len: usize,
        done: &Arc<OpCounter>,
    ) -> Result<()> {
        // Counted where the endpoint chose its route, as a put.
        // SAFETY: the caller's contract, handed on unchanged.
        seen(peer, unsafe {
            self.inner.try_get(dst, peer, offset, len, done)
        })
    }
    fn put_signal_native(&self, peer: Rank) -> bool {
        self.inner.put_signal_native(peer)
    }
    unsafe fn try_put_signal(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        signal: &Signal,
        lc: &Arc<OpCounter>,
        rc: &Arc<OpCounter>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, handed on unchanged.
        let r = unsafe {
            self.inner
                .try_put_signal(peer, offset, src, len, signal, lc, rc)
        };
        // Counted where the endpoint chose its path, as a put.
        seen(peer, r)
    }
    fn wake_peer(&self, peer: Rank) {
        self.inner.wake_peer(peer)
    }
    unsafe fn register_client_segment(
        &self,
        k: usize,
        ptr: *mut u8,
        len: usize,
    ) -> Result<Option<Vec<u8>>> {
        // SAFETY: the caller's contract, handed on unchanged.
        unsafe { self.inner.register_client_segment(k, ptr, len) }
    }
    fn connect_client_segment(&self, k: usize, cards: &[Option<Vec<u8>>]) -> Result<Vec<bool>> {
        self.inner.connect_client_segment(k, cards)
    }
    fn close_client_segment(&self, k: usize) {
        self.inner.close_client_segment(k)
    }
    fn atomic_offload(&self, ty: AtomicType, ops: OpSet) -> bool {
        self.inner.atomic_offload(ty, ops)
    }
    fn atomic_start(
        &self,
        req: &AtomicRequest,
        fetched: &Arc<AtomicU64>,
        done: &Arc<OpCounter>,
    ) -> Result<()> {
        let r = seen(req.target, self.inner.atomic_start(req, fetched, done));
        if r.is_ok() {
            super::atomic(AtomicImpl::Offload, req.op, req.target);
        }
        r
    }
    fn vis_native(&self, peer: Rank) -> bool {
        self.inner.vis_native(peer)
    }
    unsafe fn try_putv(
        &self,
        peer: Rank,
        chunks: &[Chunk],
        lc: &Arc<OpCounter>,
        rc: &Arc<OpCounter>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, handed on unchanged.
        seen(peer, unsafe { self.inner.try_putv(peer, chunks, lc, rc) })
    }
    unsafe fn try_getv(&self, peer: Rank, chunks: &[Chunk], done: &Arc<OpCounter>) -> Result<()> {
        // SAFETY: the caller's contract, handed on unchanged.
        seen(peer, unsafe { self.inner.try_getv(peer, chunks, done) })
    }
    fn coll_native(&self, kind: CollKind, members: &[Rank]) -> bool {
        self.inner.coll_native(kind, members)
    }
    fn barrier_native(&self, members: &[Rank]) -> Result<()> {
        self.inner.barrier_native(members)
    }
    fn broadcast_native(&self, members: &[Rank], root: u32, data: &mut Vec<u8>) -> Result<()> {
        self.inner.broadcast_native(members, root, data)
    }
}
