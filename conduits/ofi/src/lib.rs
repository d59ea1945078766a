//! rgex-ofi: the libfabric conduit: the network-conduit kit
//! ([`rgex_net`]) over the libfabric [`Ofi`] transport.
//!
//! One RDM endpoint per process over whichever libfabric provider the
//! machine has (gni on Cray XC, cxi on Slingshot, verbs;ofi_rxm on
//! InfiniBand, tcp;ofi_rxm, sockets or shm for tests), chosen with
//! `RGEX_OFI_PROVIDER`; node-local peers take the shared-memory path of
//! the smp transport (`RGEX_SHM_BYPASS=0` sends them through the network
//! too). See [`OfiConfig`] for the environment and the crate's README for
//! running on each network.
//!
//! - **Setup.** `fi_getinfo` asks for `FI_MSG | FI_RMA` with `FI_ATOMIC`,
//!   `FI_ORDER_SAW`, `FI_DELIVERY_COMPLETE` and `FI_PROGRESS_MANUAL` data
//!   progress when offered (each wish is dropped in turn until a provider
//!   answers; manual progress keeps a provider's own progress thread, as
//!   sockets runs by default, from competing with the polling threads for
//!   the CPU: see `choose` in `provider.rs`), every memory-registration
//!   mode rgex handles (`FI_MR_LOCAL`, `FI_MR_VIRT_ADDR`,
//!   `FI_MR_ALLOCATED`, `FI_MR_PROV_KEY`, `FI_MR_ENDPOINT`; `FI_MR_RAW`
//!   is refused with a clear error) and `FI_CONTEXT`/`FI_CONTEXT2`
//!   (every operation has an `fi_context2` of its own). The segment is
//!   the smp transport's shared memory, registered for remote access;
//!   each rank's endpoint name, segment key and (under `FI_MR_VIRT_ADDR`)
//!   base address go through the bootstrap allgather into an
//!   `FI_AV_TABLE` address vector of all ranks.
//! - **Active messages.** Each message is one send: a small header
//!   (handler, category, direction, arguments, length, Long offset and
//!   piggybacked credits, see [`wire`](rgex_net::wire)) followed by a Medium's payload.
//!   Receives are a ring of individually posted buffers (one message
//!   each), not `FI_MULTI_RECV`: with one buffer per message the credits
//!   below account exactly for receive space, whereas a multi-receive
//!   buffer is only reposted once every message in it was handled, so a
//!   request held back by a replies-only poll would pin the whole buffer.
//!   A Long writes its payload into the target's segment with `fi_write`,
//!   then sends the header: at once behind the write when the provider
//!   offers `FI_ORDER_SAW`, else after the write's completion
//!   (`FI_DELIVERY_COMPLETE` when granted). Negotiated payload hands out
//!   the registered send buffer itself (or, for a Long larger than a send
//!   buffer, registered staging memory), so the payload goes to the wire
//!   without a copy.
//! - **Flow control.** A receiver posts, per sender, a window of
//!   `RGEX_OFI_WINDOW` buffers for requests, as many for replies, and
//!   five for credit messages. A sender spends a credit per message and
//!   learns what the receiver consumed from cumulative counts in every
//!   header it receives back, or from a credit-only message the receiver
//!   sends once half a window's worth is unreported (at most four such
//!   messages can be unread at a receiver, so five buffers suffice). Out of
//!   credits or send buffers, `try_prepare` returns
//!   [`Error::WouldBlock`](rgex_core::Error::WouldBlock). Replies have
//!   their own credits and send buffers, so a request handler can always
//!   reply by polling replies only; requests arriving meanwhile wait, in
//!   order, for the next full poll.
//! - **RMA and atomics**: see [`rma`](rgex_net::rma) and
//!   [`atomics`] (module docs).
//!
//! What is libfabric's lives here: [`fabric`] (the libfabric objects),
//! the [`Ofi`] transport (the posts, the completion queue, memory
//! registration modes, the address cards), the provider choice
//! ([`Provider`]), the atomic op mapping ([`atomics`]) and the settings
//! ([`OfiConfig`]); credits, pools, the backlog, read-back, dead peers,
//! drain and the AM protocol are the kit's.
//! - **Threads and progress.** All libfabric calls on the endpoint are
//!   made under one lock (`FI_THREAD_DOMAIN` is asked for; the conduit's
//!   own bookkeeping needs the lock anyway); handlers run outside it.
//!   Progress is driven by `poll`, which reads the completion queue
//!   (manual-progress providers need that) and retries posts the provider
//!   refused with `FI_EAGAIN`; a background ticker ([`ticker`](rgex_net::ticker))
//!   does the same once a millisecond when nobody polls, so a rank that
//!   computes or waits in a bootstrap collective still finishes what it
//!   sent (found when 5- and 8-rank jobs over tcp;ofi_rxm hung at start:
//!   a rank left the barrier with its last message unsent).
//! - **Exit.** Before the endpoint closes, the conduit progresses until
//!   everything it posted completed (bounded): when it is dropped, and,
//!   since a client is often never dropped (leaked, or kept alive by a
//!   reference cycle), from an `atexit` hook for every conduit still alive
//!   when the process exits (the kit's [`drain`](rgex_net::drain)). Otherwise a rank
//!   leaving the final barrier could exit with its last message still
//!   queued and its peer waiting for it forever.
//! - **Failures.** Every error names the operation, the provider and
//!   `fi_strerror`'s text. An error completion marks the peer dead: the
//!   failed operation's completions fire (so nothing hangs; the error is
//!   printed), and later operations to the peer return an error naming
//!   it. A peer that stays silent longer than `RGEX_OFI_TIMEOUT` (300 s
//!   by default) while anything waits on it (its credits, an AM reply, a
//!   collective, an RMA, an atomic, VIS), not even answering a ping, is
//!   declared dead the same way (see [`health`](rgex_net::health)).
//! - **Departures.** A rank that closes (dropped, or at exit) tells every
//!   network peer goodbye after the last thing it sent it ([`farewell`](rgex_net::farewell));
//!   the peer marks it departed without a warning, and operations to it
//!   then fail with an error naming it instead of waiting for it.

pub mod atomics;
mod config;
pub mod fabric;
pub mod probe;
mod provider;
mod transport;

pub use config::OfiConfig;
pub use provider::Provider;
pub use rgex_net::PutCompletion;
pub use transport::Ofi;

/// Ranks over a libfabric provider, node-local ranks over shared memory:
/// the kit's conduit over the [`Ofi`] transport, in the kit's node-local
/// bypass ([`ShmBypass`](rgex_net::ShmBypass)).
///
/// ```no_run
/// use rgex_core::{bootstrap, Conduit};
/// let (env, boot) = bootstrap::from_env()?;
/// let ofi = rgex_ofi::OfiConduit::new(&env, boot, rgex_smp::SmpConfig::from_env()?, rgex_ofi::OfiConfig::from_env()?)?;
/// println!("{} of {} on {}", ofi.rank(), ofi.size(), ofi.transport().provider().name);
/// # Ok::<(), rgex_core::Error>(())
/// ```
pub type OfiConduit = rgex_net::ShmBypass<rgex_net::NetConduit<Ofi>>;
