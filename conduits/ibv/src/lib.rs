//! rgex-ibv: the InfiniBand verbs conduit: the network-conduit kit
//! ([`rgex_net`]) over the verbs [`Ibv`] transport.
//!
//! The conduit drives an HCA through the [`verbs::Verbs`] trait, which
//! has two backends, chosen at run time by `RGEX_IBV_DEVICE`:
//! - [`real::RealVerbs`]: libibverbs from rdma-core, loaded at run time
//!   (no build-time dependence on RDMA headers). Without an RDMA device
//!   the conduit says "no RDMA device" and how to get the software one;
//! - [`soft::SoftVerbs`] (`RGEX_IBV_DEVICE=soft`): a software HCA that
//!   emulates RC queue pairs across the processes of one machine over
//!   shared memory, so the conduit is tested where there is no RDMA
//!   hardware (see its module docs for what it models).
//!
//! Node-local peers take the shared-memory path of the smp transport
//! (`RGEX_SHM_BYPASS=0` sends them through verbs too). See [`IbvConfig`]
//! for the environment and the crate's README for running on a cluster.
//!
//! - **Setup.** Each rank opens the device and port, allocates one
//!   protection domain, registers its segment (LOCAL_WRITE, REMOTE_READ,
//!   REMOTE_WRITE, REMOTE_ATOMIC) and the kit's send and receive buffers
//!   (LOCAL_WRITE), and creates one completion queue, one shared receive
//!   queue and one RC QP per rank, this rank's own included (with the
//!   bypass off the kit sends to itself over the network, and offloaded
//!   atomics always take the HCA, to this rank too). Its card (LID, GID,
//!   MTU, the segment's address and rkey, and its QP number for each
//!   rank) goes through the bootstrap's allgather; each QP then moves
//!   RESET, INIT, RTR (to the QP the peer made for this rank, addressed by
//!   GID when the port's link layer is Ethernet) and RTS, so the job is
//!   connected all to all before anyone sends.
//! - **Active messages.** Each message is one SEND into the shared
//!   receive queue, which holds every receive buffer of the kit (ranks x
//!   (2 x window + 7)): the kit's credits bound what each sender has
//!   unconsumed, so a receive is always posted and RNR does not happen in
//!   normal operation. A message of up to `RGEX_IBV_INLINE` bytes is sent
//!   inline ([`Transport::inject`](rgex_net::Transport::inject)): its
//!   buffer is free at once and its completion is consumed here. A Long
//!   is an RDMA WRITE into the target's segment, then its header's SEND
//!   posted at once behind it: an RC QP performs its requests in order.
//! - **Send queues.** Every send work request is signalled, and the
//!   transport counts each QP's outstanding ones: a full queue is the
//!   kit's would-block (its backlog retries in order), never `ENOMEM`.
//!   Signalling everything costs one completion per message, but keeps
//!   the count exact without a periodic signalled request, and every
//!   failure names its operation; the CQ has room for every receive and
//!   every send-queue slot, so it cannot overrun.
//! - **RMA.** Puts and gets are RDMA WRITE and READ on the peer's
//!   registered segment (its base address plus the offset, its rkey),
//!   split at 2^31 bytes. Local buffers need an lkey: the kit bounces
//!   small ones through registered buffers and registers large ones per
//!   operation. A write's completion is local completion; remote
//!   completion is a 1-byte READ issued after it on the same QP, asked
//!   for when someone waits ([`readback`](rgex_net::readback)).
//! - **Atomics.** Offloaded where a domain's whole op set maps onto the
//!   HCA's 8-byte FETCH_AND_ADD and CMP_AND_SWP (see [`atomics`]); the AM
//!   reference otherwise.
//! - **Failures.** An error completion names the operation, the peer and
//!   verbs' status (`IBV_WC_REM_ACCESS_ERR`, `IBV_WC_RETRY_EXC_ERR`, ...):
//!   the kit marks that peer dead, fails its operations (later ones with
//!   an error naming it) and leaves the other peers alone. The failed
//!   QP's later requests complete flushed, naming the first failure, and
//!   later posts to it fail at once the same way.

#[cfg(not(loom))]
pub mod atomics;
#[cfg(not(loom))]
mod card;
#[cfg(not(loom))]
mod config;
#[cfg(not(loom))]
mod error;
pub mod real;
pub mod soft;
#[cfg(not(loom))]
mod transport;
pub mod verbs;
#[cfg(not(loom))]
mod wr_id;

#[cfg(not(loom))]
pub use config::{IbvConfig, SOFT};
#[cfg(not(loom))]
pub use error::IbvError;
#[cfg(not(loom))]
pub use transport::Ibv;

/// Ranks over an HCA through libibverbs, node-local ranks over shared
/// memory: the kit's conduit over the [`Ibv`] transport on the real
/// backend, in the kit's node-local bypass ([`ShmBypass`](rgex_net::ShmBypass)).
///
/// ```no_run
/// use rgex_core::{bootstrap, Conduit};
/// let (env, boot) = bootstrap::from_env()?;
/// let cfg = rgex_ibv::IbvConfig::from_env()?;
/// let ibv = rgex_ibv::IbvConduit::new(&env, boot, rgex_smp::SmpConfig::from_env()?, cfg)?;
/// println!("{} of {} on {}", ibv.rank(), ibv.size(), rgex_ibv::verbs::Verbs::device_name(ibv.transport().device()));
/// # Ok::<(), rgex_core::Error>(())
/// ```
#[cfg(not(loom))]
pub type IbvConduit = rgex_net::ShmBypass<rgex_net::NetConduit<Ibv<real::RealVerbs>>>;

/// The same conduit on the software verbs device (`RGEX_IBV_DEVICE=soft`).
#[cfg(not(loom))]
pub type SoftIbvConduit = rgex_net::ShmBypass<rgex_net::NetConduit<Ibv<soft::SoftVerbs>>>;
