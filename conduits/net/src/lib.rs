//! rgex-net: the network-conduit kit.
//!
//! A network conduit supplies a [`Transport`] (post a receive, a send or
//! an inject, an RDMA write or read, a remote atomic; poll completions;
//! register memory; exchange addresses; say what it can do) and gets the
//! rest from here as [`NetConduit<T>`], the whole Conduit SPI, wrapped
//! in the node-local bypass [`ShmBypass`] (`ShmBypass<NetConduit<T>>`,
//! set up with one call, `ShmBypass::<NetConduit<T>>::new`):
//!
//! - **Active messages** ([`wire`]): each message is one send, a small
//!   header (handler, category, direction, arguments, length, Long
//!   offset and piggybacked credits) followed by a Medium's payload,
//!   into one of a ring of individually posted receive buffers (one
//!   message each), so the credits account exactly for receive space. A
//!   Long writes its payload into the target's segment, then sends the
//!   header: at once behind the write when the network orders a send
//!   after a write, else after the write's completion. Negotiated
//!   payload hands out the registered send buffer itself (or registered
//!   staging memory for a Long larger than one).
//! - **Flow control** ([`credits`]): per sender and direction a window
//!   of receive buffers; a sender spends a credit per message and learns
//!   what was consumed from every header it receives back, or from a
//!   credit-only message. Out of credits or send buffers ([`pools`]),
//!   `try_prepare` returns would-block, nothing half-sent.
//! - **Posts the network refuses for now** wait in order in the
//!   [`backlog`], retried by progress.
//! - **RMA** ([`rma`]): bounce buffers, per-operation registration,
//!   splitting at the network's largest message, remote completion by
//!   delivery or by [`readback`].
//! - **Progress** is driven by `poll` and, when nobody polls, by the
//!   [`ticker`]; **exit** drains what was posted ([`drain`]) and tells
//!   the peers goodbye ([`farewell`]); a failed operation or a peer
//!   silent past the timeout marks the peer dead ([`health`]).
//!
//! Every transport call is made under the conduit's one state lock;
//! handlers run outside it. Node-local peers take the smp transport
//! ([`shm_bypass`]).

// The kit sits on the smp conduit, which loom builds leave out (its
// shared-memory rings are model-checked alone); a loom build of a crate
// that depends on the kit (rgex-ibv, for its soft device's ring) gets an
// empty kit.
#![cfg(not(loom))]

mod atomics;
pub mod backlog;
mod conduit;
pub mod credits;
pub mod drain;
pub mod farewell;
pub mod geometry;
pub mod health;
mod held;
pub mod idle;
#[cfg(feature = "loopback")]
pub mod loopback;
mod net;
mod ops;
mod peers;
pub mod pools;
pub mod readback;
mod ready;
pub mod rma;
mod send;
pub mod settings;
mod setup;
pub mod shm_bypass;
mod state;
pub mod ticker;
pub mod transport;
pub mod wire;

pub use conduit::NetConduit;
pub use geometry::Geometry;
pub use readback::PutCompletion;
pub use shm_bypass::{Reopen, ShmBypass};
pub use transport::{
    Area, Armed, Caps, NetConfig, OpEnd, Polled, PostError, Settings, Setup, Transport,
};
