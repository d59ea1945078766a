//! rgex-smp: the smp conduit. Ranks are processes on one node.
//!
//! Each rank creates one POSIX shared-memory region holding its segment and
//! two bounded lock-free queues (requests and replies) with their Medium
//! payload buffers; every rank maps every region. Senders write straight
//! into the receiver's memory:
//!
//! - a Short or Medium AM claims a cell of the receiver's queue; the payload
//!   is assembled in the cell's payload buffer (no copy for negotiated
//!   payload), then the cell is published; the buffer's first lines are
//!   write-prefetched when the cell is claimed, since they sit in the
//!   receiver's cache (see `prefetch`);
//! - a Long AM writes its payload into the receiver's segment, then
//!   publishes a cell naming it.
//!
//! One queue per receiver (many senders) rather than one per pair: memory
//! grows with N rather than N², and a poll looks at two queues whatever the
//! job size. Replies have a queue of their own, so a request handler can
//! always reply by draining replies only: two ranks flooding each other
//! cannot deadlock.
//!
//! An idle receiver's progress thread may sleep on its region's doorbell
//! ([`bell`]): a sender whose claim finds it asleep wakes it (a futex),
//! and a sender to a rank that is awake makes no system call.
//!
//! A rank that leaves (or dies) closes its rings, or has them closed by
//! the first peer that finds its process gone ([`rgex_core::liveness`]):
//! a send to it is then refused with
//! [`Error::PeerUnreachable`](rgex_core::Error) naming it, never left
//! waiting on a queue nobody drains.

// Under `--cfg loom` only the ring and what it needs are compiled: the
// model checker explores the ring (and its sleep handshake) alone.
pub mod bell;

#[cfg(not(loom))]
mod conduit;
mod config;
#[cfg(not(loom))]
mod prefetch;
#[cfg(not(loom))]
mod region;
pub mod ring;
pub mod shm;
pub mod wake_socket;
#[cfg(not(loom))]
#[cfg(not(loom))]
pub use conduit::{host_name, SmpConduit};
pub use config::SmpConfig;
