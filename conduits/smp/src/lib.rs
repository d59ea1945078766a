//! rgex-smp: the smp conduit. Ranks are processes on one node.
//!
//! Each rank creates one POSIX shared-memory region holding its segment and
//! two bounded lock-free queues (requests and replies) with their Medium
//! payload buffers; every rank maps every region. Senders write straight
//! into the receiver's memory:
//!
//! - a Short or Medium AM claims a cell of the receiver's queue; the payload
//!   is assembled in the cell's payload buffer (no copy for negotiated
//!   payload), then the cell is published;
//! - a Long AM writes its payload into the receiver's segment, then
//!   publishes a cell naming it.
//!
//! One queue per receiver (many senders) rather than one per pair: memory
//! grows with N rather than N², and a poll looks at two queues whatever the
//! job size. Replies have a queue of their own, so a request handler can
//! always reply by draining replies only: two ranks flooding each other
//! cannot deadlock.

mod conduit;
mod config;
mod region;
pub mod ring;
pub mod shm;
mod sync;

pub use conduit::{host_name, SmpConduit};
pub use config::SmpConfig;

/// How a cell's `kind` byte encodes category, direction and cancellation.
pub(crate) mod cell_kind {
    use rgex_core::{Category, Direction};

    /// Set when the sender cancelled the message: the receiver skips it.
    pub const CANCELLED: u8 = 1 << 3;
    const REPLY: u8 = 1 << 2;

    pub fn encode(c: Category, d: Direction) -> u8 {
        let c = match c {
            Category::Short => 0,
            Category::Medium => 1,
            Category::Long => 2,
        };
        c | if d == Direction::Reply { REPLY } else { 0 }
    }

    pub fn category(kind: u8) -> Category {
        match kind & 3 {
            0 => Category::Short,
            1 => Category::Medium,
            _ => Category::Long,
        }
    }

    pub fn direction(kind: u8) -> Direction {
        if kind & REPLY != 0 {
            Direction::Reply
        } else {
            Direction::Request
        }
    }
}
