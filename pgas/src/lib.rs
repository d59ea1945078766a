//! rgex-pgas: a UPC++-style PGAS library on rgex.
//!
//! - a **shared heap** on every rank ([`Pgas::new_`], [`Pgas::new_array`],
//!   [`Pgas::delete_`]) and typed **global pointers** ([`GlobalPtr`]) into
//!   it, with [`Pgas::local`] for memory this process can reach directly;
//! - **one-sided** [`rput`](Pgas::rput) / [`rget`](Pgas::rget) of
//!   [`Plain`] values and slices, with source, operation and remote
//!   completion ([`rput_then`](Pgas::rput_then));
//! - **RPC** ([`rpc`](Pgas::rpc), [`rpc_ff`](Pgas::rpc_ff)) of `fn` items
//!   and non-capturing closures with serde arguments and results, and
//!   [`Promise`]s that count many calls' completion together (UPC++'s
//!   `operation_cx::as_promise`);
//! - **distributed objects** ([`DistObject`]), **atomics**
//!   ([`AtomicDomain`]) and the world's **barrier**;
//! - every operation returns a `Future`: await it on any executor with a
//!   [`progress_task`](Pgas::progress_task) beside it, or block on it with
//!   [`Pgas::wait`].
//!
//! **Progress** follows UPC++: RPC bodies run only in user-level progress
//! ([`Pgas::progress`], [`Pgas::wait`], the progress task), on the thread
//! that makes it; see [`runtime`]. One addition: a call is held to a
//! **flow-control window** of [`Pgas::window`] calls waiting unserved at
//! each target (`RGEX_PGAS_WINDOW`, default 256), so a target that
//! computes queues a bounded amount; a call that finds its window full
//! makes user-level progress while it waits for room (it serves this
//! rank's own calls, as a GASNet AM request runs arrived handlers while
//! the network is full). Calls made inside RPC bodies are not held to
//! the window.
//!
//! Small calls (bodies up to 1 KiB encoded) made back to back **travel
//! together**: the first call after progress goes at once, and those
//! that follow it are appended to their target's buffer, which goes out
//! as one message when it fills (4 KiB) or at the latest at the caller's
//! next progress through this crate (`progress`, `wait`, the poll of an
//! rpc's future, a barrier or collective, the last handle's drop). A
//! thread's calls to one target run there in the order it made them
//! (while no other thread's progress is sending them at the same time:
//! like UPC++, rgex-pgas does not order calls beyond that). UPC++ allows
//! the same deferral; as there, a rank about to wait by other means (a
//! blocking rgex call) calls [`Pgas::discharge`] first.
//! Results of the calls one progress serves travel back together, one
//! message per caller (small ones, up to 256 bytes encoded), sent when
//! that batch is done or before one of its bodies waits through this
//! crate; a body that waits by other means (a blocking rgex call) should
//! not wait for what its callers do after an earlier result.
//!
//! ```no_run
//! use rgex::Rank;
//! let pg = rgex_pgas::init()?;
//! let next = Rank((pg.rank().0 + 1) % pg.size());
//! // One u64 in my heap; my right neighbour writes its rank there.
//! let slot = pg.new_(u64::MAX)?;
//! let slots = rgex_pgas::DistObject::new(&pg, slot)?;
//! let theirs = pg.wait(slots.fetch(next)?)?;
//! pg.wait(pg.rput(u64::from(pg.rank().0), theirs)?)?;
//! pg.barrier()?;
//! let left = (pg.rank().0 + pg.size() - 1) % pg.size();
//! assert_eq!(pg.wait(pg.rget(slot)?)?, u64::from(left));
//! // And a question for it, answered there.
//! let twice = pg.wait(pg.rpc(next, |_pg, x: u64| 2 * x, 21)?)?;
//! assert_eq!(twice, 42);
//! # Ok::<(), rgex_pgas::Error>(())
//! ```

mod alloc;
mod answers;
mod atomic;
mod calls;
mod collectives;
mod dist_object;
mod error;
mod fn_id;
mod framing;
mod global_ptr;
pub mod heap;
mod mailbox;
mod outbox;
mod payload;
mod plain;
mod progress_task;
pub mod promise;
mod rma;
mod rpc;
pub mod runtime;
mod vis;
mod window;

pub use atomic::AtomicDomain;
pub use dist_object::DistObject;
pub use error::{Error, Result};
pub use global_ptr::GlobalPtr;
pub use plain::Plain;
pub use progress_task::{ProgressStop, ProgressTask};
pub use promise::{Promise, PromiseFuture};
pub use rma::{Rget, Rput};
pub use rpc::RpcFuture;
pub use runtime::{init, Pgas};

/// The README's examples (rgex's and this crate's), compiled as doc tests
/// here, where both crates are in reach, so they stay true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
