//! Mapped send queues: a conduit whose claims to a peer are cells of the
//! node-local shared-memory transport (rgex-smp's rings, which every
//! conduit uses for the peers on its node) says so once per peer with a
//! [`MappedQueue`]. The protocol layer then publishes each negotiated-payload
//! message to that peer itself, by ringing the claimed cell's doorbell
//! (`rgex_smp::cell::Doorbell`), instead of making a second call into the
//! conduit: such a send is one conduit call, like a fixed-payload one.
//!
//! Core sees the claim as opaque: the cell's layout and the protocol that
//! publishes it are smp's.

/// A conduit's word that every claim it makes to one peer is a claim of
/// the node-local shared-memory transport (rgex-smp): its ticket names a
/// claimed cell that `rgex_smp::cell::Doorbell::of_ticket` publishes. The
/// protocol layer asks once per peer
/// ([`Conduit::mapped_queue`](crate::Conduit::mapped_queue)).
#[derive(Clone, Copy, Debug)]
pub struct MappedQueue(());

impl MappedQueue {
    /// The conduit's word for one peer.
    ///
    /// # Safety
    /// Every claim the conduit hands out for that peer must be one that
    /// rgex-smp's `try_prepare` made (its ticket, the claimed cell's
    /// address, is then what smp's doorbell publishes), and the conduit's
    /// `commit` and `cancel` must accept such a claim too (`cancel` is
    /// never replaced by a doorbell).
    #[inline]
    pub unsafe fn vouch() -> Self {
        MappedQueue(())
    }
}
