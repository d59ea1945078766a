//! The verbs the ibv conduit uses, as a trait with two backends: the
//! real one over libibverbs (`crate::real`) and the software device
//! (`crate::soft`, `RGEX_IBV_DEVICE=soft`).
//!
//! The trait covers only what the conduit needs of an HCA: device and
//! port query, protection domain, memory regions with lkey/rkey and
//! access flags, completion queues, RC queue pairs with their state
//! machine, a shared receive queue, single-SGE posts and completion
//! polling. Its types mirror `<infiniband/verbs.h>` (names, codes,
//! flags) so that a reader who knows verbs reads them as verbs, and the
//! real backend translates them one to one.
//!
//! Work requests are posted one at a time (no chains): the kit posts one
//! operation per call, and a chain would only save a doorbell that the
//! emulation does not have and that the real backend can batch later.

mod attr;
mod error;
mod summary;
mod wc;
mod wr;

pub use attr::{
    Access, DeviceAttr, Gid, LinkLayer, Mtu, PortAttr, PortState, QpCaps, QpState, QpTransition,
    RtrAttr, RtsAttr,
};
pub use error::{VerbsError, VerbsResult};
pub use summary::DeviceSummary;
pub use wc::{Wc, WcOpcode, WcStatus};
pub use wr::{Opcode, RecvWr, RemoteAddr, SendFlags, SendWr, Sge};

/// Which device and port to open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceChoice {
    /// Device name (`mlx5_0`); `None`: the first device with an active port.
    pub name: Option<String>,
    /// Port number (1-based); `None`: the first active port.
    pub port: Option<u8>,
    /// GID table index (RoCE needs one; IB uses the LID).
    pub gid_index: u8,
}

/// An opened verbs device (one context), as the conduit drives it.
///
/// Handles are associated types owned by the caller and passed back by
/// reference; dropping a handle destroys the object (a QP before its
/// CQs and SRQ, a MR before its PD: the caller keeps that order).
///
/// Every method may be called from any thread, but the conduit calls
/// posts and polls of one QP or CQ under one lock, as libibverbs
/// requires of a single-threaded provider context; backends need not
/// lock more than their own shared state.
///
/// # Example
/// ```
/// use rgex_ibv::verbs::{DeviceChoice, Verbs};
/// // Any backend opens the same way; without an RDMA device the real
/// // backend says so instead of crashing.
/// fn first_port<V: Verbs>() -> Result<u16, String> {
///     let dev = V::open(&DeviceChoice::default()).map_err(|e| e.to_string())?;
///     Ok(dev.port_attr().lid)
/// }
/// ```
pub trait Verbs: Sized + Send + Sync + 'static {
    /// The backend's name in messages (`"libibverbs"`, `"soft"`).
    const NAME: &'static str;
    /// A protection domain.
    type Pd: Send + Sync;
    /// A registered memory region.
    type Mr: Send + Sync;
    /// A completion queue.
    type Cq: Send + Sync;
    /// A shared receive queue.
    type Srq: Send + Sync;
    /// An RC queue pair.
    type Qp: Send + Sync;

    /// Open the chosen device and port. No device at all, or a system
    /// without RDMA support (`ENOSYS`), is [`VerbsError::NoDevice`].
    fn open(choice: &DeviceChoice) -> VerbsResult<Self>;

    /// The device's name (`mlx5_0`, `soft0`).
    fn device_name(&self) -> &str;
    /// The device's limits.
    fn device_attr(&self) -> &DeviceAttr;
    /// The opened port's attributes (as queried at open).
    fn port_attr(&self) -> &PortAttr;
    /// The opened port number.
    fn port(&self) -> u8;
    /// The port's GID at the chosen index.
    fn gid(&self) -> Gid;

    /// Allocate a protection domain.
    fn alloc_pd(&self) -> VerbsResult<Self::Pd>;

    /// Register `len` bytes at `addr` with `access`.
    ///
    /// # Safety
    /// `addr .. addr + len` stays allocated until the region is dropped,
    /// and is written only as `access` and the posted operations allow.
    unsafe fn reg_mr(
        &self,
        pd: &Self::Pd,
        addr: *mut u8,
        len: usize,
        access: Access,
    ) -> VerbsResult<Self::Mr>;
    /// A region's local key.
    fn lkey(mr: &Self::Mr) -> u32;
    /// A region's remote key.
    fn rkey(mr: &Self::Mr) -> u32;

    /// Create a completion queue of at least `depth` entries.
    fn create_cq(&self, depth: u32) -> VerbsResult<Self::Cq>;
    /// Create a shared receive queue of `max_wr` single-SGE receives.
    fn create_srq(&self, pd: &Self::Pd, max_wr: u32) -> VerbsResult<Self::Srq>;
    /// Create an RC queue pair (state RESET). With `srq`, receives come
    /// from it and [`post_recv`](Self::post_recv) on the QP fails.
    fn create_qp(
        &self,
        pd: &Self::Pd,
        send_cq: &Self::Cq,
        recv_cq: &Self::Cq,
        srq: Option<&Self::Srq>,
        caps: &QpCaps,
    ) -> VerbsResult<Self::Qp>;
    /// A QP's number.
    fn qp_num(qp: &Self::Qp) -> u32;
    /// The caps the QP was granted (inline size may be larger than asked).
    fn qp_caps(qp: &Self::Qp) -> QpCaps;
    /// A QP's current state.
    fn qp_state(&self, qp: &Self::Qp) -> VerbsResult<QpState>;
    /// Move a QP along its state machine; a transition the machine does
    /// not allow from the current state fails with `EINVAL`.
    fn modify_qp(&self, qp: &Self::Qp, to: &QpTransition) -> VerbsResult<()>;

    /// Post one send work request. A full send queue is `ENOMEM`, a QP
    /// not in RTS (or an SQ-drain state) `EINVAL`, an inline payload
    /// over the QP's `max_inline` `EINVAL`.
    ///
    /// # Safety
    /// The SGE's memory stays valid until the work request completes (or,
    /// with [`SendFlags::INLINE`], until the call returns); a local buffer
    /// lies in a region whose lkey the SGE names.
    unsafe fn post_send(&self, qp: &Self::Qp, wr: &SendWr) -> VerbsResult<()>;

    /// Post one receive on a QP without an SRQ.
    ///
    /// # Safety
    /// The SGE's memory stays valid and unread by others until the
    /// receive completes.
    unsafe fn post_recv(&self, qp: &Self::Qp, wr: &RecvWr) -> VerbsResult<()>;

    /// Post one receive on a shared receive queue.
    ///
    /// # Safety
    /// As [`post_recv`](Self::post_recv).
    unsafe fn post_srq_recv(&self, srq: &Self::Srq, wr: &RecvWr) -> VerbsResult<()>;

    /// Arm `cq` for one notification and return its wait object, an fd:
    /// readable once a completion reaches the CQ from now on
    /// (`ibv_req_notify_cq` on the CQ's completion channel; the software
    /// device's wake socket). The caller polls the CQ once more before it
    /// sleeps on the fd (a completion that came before the arming makes
    /// no event), then calls [`cq_events_taken`](Self::cq_events_taken).
    /// `None`: no wait object (the default).
    fn arm_cq(&self, cq: &Self::Cq) -> Option<std::os::fd::RawFd> {
        let _ = cq;
        None
    }

    /// After a sleep on [`arm_cq`](Self::arm_cq)'s fd (woken or not):
    /// take its events (`ibv_get_cq_event`, `ibv_ack_cq_events`), so the
    /// next arming starts clean.
    fn cq_events_taken(&self, cq: &Self::Cq) {
        let _ = cq;
    }

    /// Read up to `out.len()` completions; returns how many. A CQ that
    /// overran is an error from then on ([`VerbsError::CqOverrun`]).
    fn poll_cq(&self, cq: &Self::Cq, out: &mut [Wc]) -> VerbsResult<usize>;
}
