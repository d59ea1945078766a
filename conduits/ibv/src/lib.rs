//! rgex ibv conduit: InfiniBand verbs on the network-conduit kit.
//!
//! The conduit drives an HCA through the [`verbs::Verbs`] trait, which
//! has two backends: the real one over libibverbs, loaded at run time,
//! and a software device (`RGEX_IBV_DEVICE=soft`) that emulates an HCA
//! across the processes of one machine, so the conduit is tested where
//! there is no RDMA hardware.

pub mod real;
pub mod soft;
pub mod verbs;
