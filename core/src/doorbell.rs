//! Mapped send queues: a conduit whose claims to a peer are node-local
//! message cells ([`cell`](crate::cell): rgex-smp's rings, which every
//! conduit uses for the peers on its node) says so once per peer with a
//! [`MappedQueue`]. The protocol layer then publishes each negotiated-payload
//! message to that peer itself, by ringing the claimed cell's
//! [`Doorbell`](crate::cell::Doorbell), instead of making a second call into
//! the conduit: such a send is one conduit call, like a fixed-payload one.
//!
//! The cell's format is core's, so the protocol layer needs no conduit
//! crate for this. (A publish function the conduit hands over instead, an
//! indirect call that cannot be inlined, was measured: 41 more
//! instructions per negotiated-payload round trip on smp, 4%.)

/// A conduit's word that every claim it makes to one peer is a node-local
/// cell claim: its ticket names a claimed [`Cell`](crate::cell::Cell) that
/// [`Doorbell::of_ticket`](crate::cell::Doorbell::of_ticket) publishes. The
/// protocol layer asks once per peer
/// ([`Conduit::mapped_queue`](crate::Conduit::mapped_queue)).
#[derive(Clone, Copy, Debug)]
pub struct MappedQueue(());

impl MappedQueue {
    /// The conduit's word for one peer.
    ///
    /// # Safety
    /// Every claim the conduit hands out for that peer must have as its
    /// ticket the address of a claimed [`Cell`](crate::cell::Cell), which
    /// ringing its doorbell publishes, and the conduit's
    /// `commit` and `cancel` must accept such a claim too (`cancel` is
    /// never replaced by a doorbell).
    #[inline]
    pub unsafe fn vouch() -> Self {
        MappedQueue(())
    }
}
