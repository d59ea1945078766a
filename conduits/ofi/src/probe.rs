//! What the ofi conduit would use here, found without a job: the
//! provider it would choose, opened as far as an endpoint, to be asked
//! about each (type, op) rgex's atomic domains use (for `rgex-info`).
//!
//! The answers come from the functions the conduit's domains ask
//! ([`provider_refusal`], [`op_refusal`]), so what is reported is what a
//! job gets, save two choices made per job: a job whose ranks all share
//! this node with `RGEX_SHM_BYPASS=1` uses CPU atomics instead, and
//! `RGEX_ATOMICS` may require another implementation.

use crate::atomics::{op_refusal, provider_refusal, Refusal};
use crate::fabric::{AddressVector, CompletionQueue, Domain, Endpoint, Fabric, FiError};
use crate::provider::{choose, Provider};
use crate::OfiConfig;
use rgex_core::atomic::{AtomicOp, AtomicType};
use rgex_net::{Geometry, NetConfig};
use std::sync::Arc;

/// The provider the conduit would choose, opened as far as an endpoint.
#[derive(Debug)]
pub struct Probe {
    /// What the provider granted.
    pub provider: Provider,
    ep: Arc<Endpoint>,
}

impl Probe {
    /// Choose the provider as a job of two ranks under `cfg` would and
    /// open a fabric, domain and endpoint on it. libfabric must be
    /// loaded ([`libfabric_sys::Library::system`]).
    pub fn open(cfg: &OfiConfig) -> Result<Probe, FiError> {
        let geo = Geometry::new(2, &cfg.settings());
        let info = choose(cfg, geo.n_recv)?;
        let provider = Provider::granted(&info, cfg);
        let fabric = Fabric::open(info)?;
        let domain = Domain::open(&fabric)?;
        let cq = CompletionQueue::open(&domain, geo.n_ops())?;
        let av = AddressVector::open(&domain, geo.size)?;
        let ep = Endpoint::open(&domain, &cq, &av)?;
        Ok(Probe { provider, ep })
    }

    /// Why a domain of `ty` with `op` in its set is not offloaded, or
    /// `None` if the provider performs `op` on `ty` (a domain is
    /// offloaded when that holds for every op of its set).
    pub fn atomic_refusal(&self, ty: AtomicType, op: AtomicOp) -> Option<Refusal> {
        provider_refusal(&self.provider).or_else(|| op_refusal(&self.ep, ty, op))
    }
}
