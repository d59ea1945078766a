//! Implicit-handle (NBI) atomics join the endpoint's per-thread Rmw
//! category (or the thread's open access region), so they are synced with
//! `Endpoint::nbi_wait(NbiCategory::Rmw)` like GASNet's NBI atomics, or
//! with [`AtomicDomain::nbi_wait`](crate::AtomicDomain::nbi_wait).

use rgex_core::OpCounter;
use rgex_endpoint::rma::NbiCategory;
use rgex_endpoint::Endpoint;
use std::sync::Arc;

/// The counter an implicit atomic issued now on this thread joins.
pub(crate) fn counter(ep: &Endpoint) -> Arc<OpCounter> {
    ep.nbi_counter(NbiCategory::Rmw)
}

/// True if every implicit atomic this thread issued has completed. Does
/// not poll.
pub fn nbi_test(ep: &Endpoint) -> bool {
    ep.nbi_test(NbiCategory::Rmw)
}

/// Poll the endpoint until every implicit atomic this thread issued has
/// completed; an error if one of them failed since the last sync.
pub fn nbi_wait(ep: &Endpoint) -> crate::Result<()> {
    ep.nbi_wait(NbiCategory::Rmw)
}
