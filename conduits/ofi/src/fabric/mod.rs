//! A thin safe layer over libfabric-sys: one type per libfabric object,
//! each closing itself on drop in the order libfabric requires (a child
//! holds an `Arc` to its parent, so endpoint before AV and CQ, memory
//! region before the endpoint it is bound to, all before the domain,
//! domain before fabric). Every error is an [`FiError`] naming the
//! operation, the provider and `fi_strerror`'s text.
//!
//! The objects are `Send + Sync` because their owner serialises every
//! call on them (the conduit's per-endpoint lock); they ask libfabric for
//! `FI_THREAD_DOMAIN` accordingly.

mod av;
mod close;
mod cq;
mod domain;
mod endpoint;
mod entry;
mod error;
#[allow(clippy::module_inception)]
mod fabric;
mod info;
mod mr;

pub use av::AddressVector;
pub use cq::{CompletionQueue, CqError, CqRead};
pub use domain::Domain;
pub use endpoint::{Endpoint, Remote};
pub use entry::{caps_names, Entry};
pub use error::{strerror, FiError};
pub use fabric::Fabric;
pub use info::{Hints, Info, API_VERSION};
pub use mr::MemoryRegion;
