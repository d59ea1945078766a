//! rgex-endpoint: endpoints and active messages.
//!
//! - [`Endpoint`]: a conduit plus its [`HandlerTable`]; sends requests,
//!   polls, runs handlers.
//! - [`Token`]: what a handler knows of its message; replies once.
//! - [`Prepared`]: negotiated payload (prepare, assemble in place, commit).
//! - [`Client`]: one per process; the endpoint and the world team.
//!
//! Every send takes one path: validate, claim conduit resources (polling
//! while waiting, or failing at once with [`Flags::IMMEDIATE`]), assemble,
//! commit. A fixed-payload send is that path with a copy in the middle.
//!
//! Layering note: `Client` and `Endpoint` live here rather than in
//! rgex-core because an endpoint owns its handler table and progress runs
//! handlers; rgex-core keeps what conduits need (the SPI and vocabulary)
//! and nothing that knows about handlers.
//!
//! [`Flags::IMMEDIATE`]: rgex_core::Flags::IMMEDIATE

pub mod abandon;
mod client;
pub mod client_segment;
mod config;
pub mod context;
pub mod crossing;
mod endpoint;
mod extension;
#[cfg(feature = "fault-injection")]
mod forge;
mod handler;
mod in_flight;
mod inject;
mod limits;
pub mod memory_wait;
mod message;
pub mod outcome;
mod prepared;
pub mod progress_task;
pub mod progress_thread;
mod refusal;
pub mod rma;
mod siblings;
pub mod team;
mod token;

pub use abandon::Abandon;
pub use client::Client;
pub use client_segment::{ClientPath, ClientSegment, CLIENT_SEGMENT_STRIDE, CMA_MIN, CMA_MIN_WHY};
pub use config::AmConfig;
pub use crossing::{EndpointAddr, MAX_CROSSING_ARGS};
pub use endpoint::Endpoint;
pub use endpoint::MALFORMED_PRINTED;
#[cfg(feature = "fault-injection")]
pub use forge::SWEEP_PAUSE_ENV;
pub use handler::{
    Accepts, Entry, HandlerFn, HandlerId, HandlerTable, ProtocolId, Target, CLIENT_MIN,
};
pub use in_flight::InFlight;
pub use memory_wait::{Cmp, WaitMemory, WaitUntil, WaitWord};
pub use message::Message;
pub use outcome::HandlerOutcome;
pub use prepared::{Prepared, COMMIT_FLAGS};
pub use progress_task::{ProgressStop, ProgressTask};
pub use progress_thread::ProgressThread;
pub use team::Team;
pub use token::Token;

/// Handler indices rgex's own protocols use (below [`CLIENT_MIN`]).
pub mod reserved {
    /// Reference RMA: a put (Long request).
    pub const RMA_PUT: u8 = 2;
    /// Reference RMA: a put's acknowledgement (Short reply).
    pub const RMA_ACK: u8 = 3;
    /// Reference RMA: a get request (Short).
    pub const RMA_GET: u8 = 4;
    /// Reference RMA: a get's data (Medium reply).
    pub const RMA_GET_REPLY: u8 = 5;
    /// A receiver's refusal of a request it had no handler for (Short
    /// reply: the index and the category), see [`Error::Dropped`](rgex_core::Error::Dropped).
    pub const REFUSED: u8 = 6;
    /// Reference RMA into a client segment: a put's chunk (Medium request).
    pub const RMA_CLIENT_PUT: u8 = 40;
    /// Reference RMA into a client segment: a chunk's acknowledgement,
    /// with its status (Short reply).
    pub const RMA_CLIENT_ACK: u8 = 41;
    /// Team collectives: every collective message (Medium request). The
    /// collectives may use indices 8..=15.
    pub const COLL: u8 = 8;
    /// Put-with-signal's reference: the data and the signal (a Medium
    /// request when the data fits one, else a Long).
    pub const PUT_SIGNAL: u8 = 32;
    /// Put-with-signal's reference: its acknowledgement (Short reply).
    pub const PUT_SIGNAL_ACK: u8 = 33;
    /// Put-with-signal's reference: acknowledgements deferred by a
    /// target that was waiting on memory (Short request, 3 arguments per
    /// acknowledgement, up to 5).
    pub const PUT_SIGNAL_ACKS: u8 = 34;
    /// An AM between endpoints of different indices: the request (any
    /// category; the first argument names the sender's endpoint and the
    /// client handler), see [`crossing`](crate::crossing).
    pub const CROSSING_REQUEST: u8 = 42;
    /// An AM between endpoints of different indices: the reply.
    pub const CROSSING_REPLY: u8 = 43;
}
