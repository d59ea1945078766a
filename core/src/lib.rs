//! rgex-core: the vocabulary every layer and conduit of rgex shares.
//!
//! - [`Rank`], [`GlobalAddr`], [`Flags`], [`Error`]: the words of the API.
//! - [`Segment`]: a rank's registered memory, with bounds checks.
//! - [`Conduit`]: the SPI a network implements: identity and locality,
//!   segment exchange, split-phase AM injection, polling, bootstrap.
//! - [`bootstrap`]: the out-of-band collectives used to set a job up.
//! - [`liveness`]: whether a peer process on this node is still in the job.
//!
//! Clients normally use the `rgex` facade crate, which re-exports these.

pub mod addr;
pub mod atomic;
pub mod backoff;
pub mod blocked;
pub mod bootstrap;
pub mod cell;
pub mod cma;
pub mod conduit;
pub mod config;
pub mod descriptor;
pub mod doorbell;
pub mod error;
pub mod event;
pub mod flags;

pub mod liveness;
pub mod locality;
pub mod nbi;
pub mod observe;
pub mod rank;
pub mod raw_line;
pub mod segment;
#[doc(hidden)]
pub mod shared_work;
pub mod signal;
mod small_copy;
pub mod sync;
pub mod team;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod waker;

pub use addr::GlobalAddr;
pub use backoff::Backoff;
pub use bootstrap::Bootstrap;
pub use conduit::{Conduit, PollSet};
pub use descriptor::{Category, Claim, Delivery, Direction, Prepare, SendSlot, MAX_ARGS};
pub use error::{Error, Result};
pub use event::{Event, OpCounter, Progress};
pub use flags::Flags;
pub use locality::Locality;
pub use rank::Rank;
pub use segment::Segment;
pub use signal::{Signal, SignalOp};
pub use team::Membership;
