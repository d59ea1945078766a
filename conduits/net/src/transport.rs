//! What a network implements: the [`Transport`] trait.
//!
//! A transport posts operations the kit names by an operation id (an
//! index into the kit's operation table, see the `ops` module) to a
//! peer named by its rank index, and reports their completions by the
//! same id. Everything else (credits, pools, the backlog, the AM
//! protocol, read-back, dead peers, drain) is the kit's.
//!
//! The kit calls every method with its state lock held (one lock per
//! conduit), so a transport need not be thread-safe beyond `Send + Sync`
//! for being shared with the progress ticker. The kit is generic over
//! the transport (`NetConduit<T>`), so calls are static and inline.

use crate::geometry::Geometry;
use rgex_core::atomic::{AtomicRequest, AtomicType, OpSet};
use rgex_core::{Rank, Result, Segment};
use std::fmt::Display;

pub use crate::settings::{NetConfig, Settings};

/// Every rank's card of client segment `k`, as a transport's
/// [`register_client`](Transport::register_client) wrote it: two
/// little-endian words each (which word is the key and which the address
/// is the transport's own layout), `None` where a rank had no card. A
/// card of another length is an error naming the rank that sent it, the
/// segment and `network` (for `me`'s message).
///
/// ```
/// use rgex_core::Rank;
/// let card = [7u64.to_le_bytes(), 9u64.to_le_bytes()].concat();
/// let got = rgex_net::transport::client_cards(&[Some(card), None], 1, Rank(0), "ofi").unwrap();
/// assert_eq!(got, [Some([7, 9]), None]);
/// assert!(rgex_net::transport::client_cards(&[Some(vec![1])], 1, Rank(0), "ofi").is_err());
/// ```
pub fn client_cards(
    cards: &[Option<Vec<u8>>],
    k: usize,
    me: Rank,
    network: &str,
) -> Result<Vec<Option<[u64; 2]>>> {
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
    cards
        .iter()
        .enumerate()
        .map(|(r, c)| match c {
            None => Ok(None),
            Some(c) if c.len() == 16 => Ok(Some([word(&c[..8]), word(&c[8..])])),
            Some(c) => Err(rgex_core::Error::Bootstrap(format!(
                "{me}: rank {r} sent a malformed {network} card for client segment {k} ({} \
                 bytes, not 16)",
                c.len()
            ))),
        })
        .collect()
}

/// What a transport can do, as the kit uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Largest AM message (header and payload) sent with
    /// [`Transport::inject`] (0: never).
    pub inject_size: usize,
    /// Largest transfer in one operation (larger RMA is split).
    pub max_msg: usize,
    /// A send posted after a write reaches the target after it
    /// (`FI_ORDER_SAW`): a Long's header need not wait for its write.
    pub send_after_write: bool,
    /// Writes may ask for delivery completion.
    pub delivery_complete: bool,
    /// Local buffers need a registration descriptor: memory outside the
    /// registered areas is registered per operation.
    pub local_registration: bool,
    /// How non-blocking puts learn they landed.
    pub put_completion: crate::readback::PutCompletion,
}

/// One of the areas the kit hands the transport to register at setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Area {
    /// The rank's segment (remote access too).
    Segment,
    /// The send buffers (and the read-back scratch behind them).
    Send,
    /// The receive buffers.
    Recv,
}

/// The memory the transport registers at setup. The kit keeps all three
/// allocated, in place, until the transport is dropped.
#[derive(Clone, Copy, Debug)]
pub struct Setup<'a> {
    /// This rank.
    pub rank: Rank,
    /// Buffer sizes and counts (receive buffers, operation slots).
    pub geo: &'a Geometry,
    /// The segment (remote access).
    pub segment: &'a Segment,
    /// The send buffers: start and length.
    pub send: (*mut u8, usize),
    /// The receive buffers: start and length.
    pub recv: (*mut u8, usize),
}

/// A post's error: would-block (retry after progress) or hard.
pub trait PostError: Display + Into<rgex_core::Error> {
    /// The network's queue is full for now: retry after progress.
    fn is_again(&self) -> bool;
}

/// How one posted operation ended, as the transport's completion queue
/// reports it (not an operation handle: that is `rgex_core::Event`).
#[derive(Debug)]
pub enum OpEnd {
    /// Operation `op` completed; a receive received `len` bytes.
    Done {
        /// The operation id it was posted with.
        op: u32,
        /// Bytes received (receives).
        len: usize,
    },
    /// Operation `op` failed.
    Failed {
        /// The operation id it was posted with.
        op: u32,
        /// It was cancelled (the endpoint is closing), not failed.
        cancelled: bool,
        /// What went wrong, with the network's own text.
        why: String,
    },
}

/// What one [`Transport::poll`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Polled {
    /// Completions handed over (an error counts one).
    pub events: usize,
    /// More may be waiting: poll again.
    pub again: bool,
}

/// What arming a transport's wait object found (see
/// [`Transport::wait_arm`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Armed {
    /// Armed: the fd becomes readable when a completion may have come
    /// since. Sleep on it (after one more poll of the completions).
    Fd(std::os::fd::RawFd),
    /// Completions may be waiting already: poll again, do not sleep.
    Busy,
    /// This transport has no wait object (the default, and a provider
    /// that gives no fd): the caller sleeps a bounded time itself.
    Unsupported,
}

/// A network, as the kit drives it. See the module docs.
///
/// Every `unsafe` post has one contract: the memory it names stays
/// valid (and, for a receive or a read, untouched by others) until the
/// operation's completion is reported by [`poll`](Self::poll), or, for
/// [`inject`](Self::inject), until it returns; `desc` is the descriptor
/// of the registered memory it lies in ([`desc`](Self::desc) or
/// [`region_desc`](Self::region_desc)); `op` is not in use by another
/// posted operation; remote ranges were bounds-checked by the caller.
pub trait Transport: Sized + Send + Sync + 'static {
    /// The conduit's name (`"ofi"`): messages say `rgex-NAME: ...`.
    const NAME: &'static str;
    /// The network's name in setup errors (`"libfabric"`).
    const NETWORK: &'static str;
    /// The environment variable of the dead-peer timeout, named when a
    /// peer is declared dead for silence.
    const TIMEOUT_VAR: &'static str;

    /// Its configuration.
    type Config: NetConfig;
    /// A memory registration; deregistered when dropped.
    type Region: Send + Sync + 'static;
    /// A post's error.
    type Error: PostError;
    /// How a remote atomic is performed (chosen before the state lock).
    type AtomicPlan: Copy;

    /// Open the network and register the three areas of `setup`; returns
    /// the transport and this rank's card (addresses, keys) for the
    /// others. Local only: [`connect`](Self::connect) reads the cards.
    ///
    /// # Safety
    /// The areas of `setup` stay allocated and in place until the
    /// transport is dropped.
    unsafe fn open(cfg: &Self::Config, setup: &Setup<'_>) -> Result<(Self, Vec<u8>)>;

    /// Learn every rank's card (in rank order).
    fn connect(&mut self, cards: &[Vec<u8>]) -> Result<()>;

    /// What it can do.
    fn caps(&self) -> &Caps;

    /// The local descriptor of a setup area (0 where none is needed).
    fn desc(&self, area: Area) -> usize;

    /// Register `len` bytes at `p` for one local operation.
    ///
    /// # Safety
    /// `p .. p + len` stays allocated until the region is dropped.
    unsafe fn register(&self, p: *const u8, len: usize) -> Result<Self::Region>;

    /// The local descriptor of a region (0 where none is needed).
    fn region_desc(&self, r: &Self::Region) -> usize;

    /// Post a receive of up to `len` bytes into `buf`, from anyone.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn post_recv(
        &self,
        op: u32,
        buf: *mut u8,
        len: usize,
        desc: usize,
    ) -> std::result::Result<(), Self::Error>;

    /// Send `len <= caps().inject_size` bytes at `buf` to `peer` with no
    /// completion: the bytes are taken before it returns.
    ///
    /// # Safety
    /// `buf` is readable for `len` bytes for the call.
    unsafe fn inject(
        &self,
        peer: u32,
        buf: *const u8,
        len: usize,
    ) -> std::result::Result<(), Self::Error>;

    /// Send `len` bytes at `buf` to `peer`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn post_send(
        &self,
        op: u32,
        peer: u32,
        buf: *const u8,
        len: usize,
        desc: usize,
    ) -> std::result::Result<(), Self::Error>;

    /// Write `len` bytes at `src` to `offset` of `peer`'s segment; with
    /// `delivery` (only if [`Caps::delivery_complete`]) its completion
    /// means the bytes are visible there.
    ///
    /// # Safety
    /// See the trait docs.
    #[allow(clippy::too_many_arguments)]
    unsafe fn post_write(
        &self,
        op: u32,
        peer: u32,
        src: *const u8,
        len: usize,
        desc: usize,
        offset: u64,
        delivery: bool,
    ) -> std::result::Result<(), Self::Error>;

    /// Read `len` bytes at `offset` of `peer`'s segment into `dst`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn post_read(
        &self,
        op: u32,
        peer: u32,
        dst: *mut u8,
        len: usize,
        desc: usize,
        offset: u64,
    ) -> std::result::Result<(), Self::Error>;

    /// Register `len` bytes at `p` as client segment `k` (the SPI's
    /// `Conduit::register_client_segment`) for peers' remote reads and
    /// writes, keeping the region until
    /// [`close_client`](Self::close_client)`(k)`: this rank's card for it
    /// (key, address). `Ok(None)`: this transport leaves client segments
    /// to rgex's active-message reference (the default).
    ///
    /// # Safety
    /// `p .. p + len` stays allocated until `close_client(k)` returns.
    unsafe fn register_client(&self, k: usize, p: *mut u8, len: usize) -> Result<Option<Vec<u8>>> {
        let _ = (k, p, len);
        Ok(None)
    }

    /// Learn every rank's card of client segment `k` (`None` where a rank
    /// had none). From then on [`post_write`](Self::post_write) and
    /// [`post_read`](Self::post_read) at an `offset` of that segment
    /// (`k * CLIENT_SEGMENT_STRIDE + within`) reach a peer for which the
    /// returned entry is true. The default: none.
    fn connect_client(&self, k: usize, cards: &[Option<Vec<u8>>]) -> Result<Vec<bool>> {
        let _ = k;
        Ok(vec![false; cards.len()])
    }

    /// Close this rank's region of client segment `k`: a peer's write or
    /// read of it, in flight or later, then fails at the peer with the
    /// network's error. The peers' cards are kept (an operation still in
    /// the backlog fails at their side in turn). The default has nothing.
    fn close_client(&self, k: usize) {
        let _ = k;
    }

    /// Read completions, handing each to `each`; a completion for no
    /// operation of ours is reported by the transport and skipped.
    fn poll(&self, each: impl FnMut(OpEnd)) -> std::result::Result<Polled, Self::Error>;

    /// Arm the wait object a progress thread sleeps on: after
    /// [`Armed::Fd`], the fd becomes readable when a completion arrives
    /// (or may have arrived) from now on. The kit then polls the
    /// completions once more (one that came before the arming is found
    /// then) and sleeps on the fd only if that found nothing, so no
    /// completion is slept through: arm, re-check, sleep. Called by one
    /// thread at a time (the progress thread), under the state lock. The
    /// default has no wait object.
    fn wait_arm(&self) -> Armed {
        Armed::Unsupported
    }

    /// After a sleep on the fd that [`wait_arm`](Self::wait_arm) gave
    /// (woken or not, or not slept at all after the re-check): take what
    /// made it readable (verbs: get and acknowledge the CQ events), so
    /// the next arming starts clean. Under the state lock.
    fn wait_done(&self) {}

    /// True if the network performs every op of `ops` on `ty`.
    fn atomics_offload(&self, ty: AtomicType, ops: OpSet) -> bool;

    /// How `req` is performed, or an error naming it if it is not offloaded.
    fn atomic_plan(&self, req: &AtomicRequest) -> Result<Self::AtomicPlan>;

    /// Post the atomic `req` to `req.target` at `req.offset` as `plan`
    /// says, with `buf` (24 bytes, 8-aligned, in the send buffers, `desc`)
    /// for its operands; the fetched value lands at `buf + 16` (in the
    /// type's width).
    ///
    /// # Safety
    /// See the trait docs; `buf` is the caller's until the completion.
    unsafe fn post_atomic(
        &self,
        op: u32,
        req: &AtomicRequest,
        plan: Self::AtomicPlan,
        buf: *mut u8,
        desc: usize,
    ) -> std::result::Result<(), Self::Error>;
}
