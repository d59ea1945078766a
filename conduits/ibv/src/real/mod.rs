//! The real verbs backend: libibverbs (rdma-core), loaded at run time.
//!
//! Nothing is needed at build time: no RDMA headers, no `-dev` package,
//! no linking. [`RealVerbs::open`] loads `libibverbs.so.1` with
//! `dlopen` ([`Library`]), resolves the exported verbs at their
//! `IBVERBS_1.1` version, and calls the inline ones (posts and polls)
//! through the context's ops table as verbs.h does. The structs are
//! hand-written in `abi` and their layouts checked by unit tests.
//!
//! Where the library is missing the error names it, where it was looked
//! for and the packages that provide it; where the kernel has no RDMA
//! support (`ENOSYS`) or there is no device, it is
//! [`VerbsError::NoDevice`](crate::verbs::VerbsError::NoDevice) with the
//! reason.
//!
//! Handles ([`Pd`], [`Mr`], [`Cq`], [`Srq`], [`Qp`]) destroy their
//! object on drop and keep alive what it depends on, so any drop order
//! is safe. The device list is freed once the device is opened (as
//! libibverbs allows); the context is closed when the last handle and
//! the [`RealVerbs`] are gone.

mod abi;
mod device;
mod errno;
mod library;
mod objects;
mod post;
mod qp;

use std::sync::Arc;

pub use device::{describe_devices, device_names};
pub use library::{Library, LIBRARY, LIBRARY_ENV};
pub use objects::{Cq, Mr, Pd, Qp, Srq};

use crate::verbs::{
    Access, DeviceAttr, DeviceChoice, Gid, PortAttr, QpCaps, QpState, QpTransition, RecvWr, SendWr,
    Verbs, VerbsResult, Wc,
};
use device::Context;

/// One opened device and port of libibverbs.
pub struct RealVerbs {
    ctx: Arc<Context>,
    name: String,
    attr: DeviceAttr,
    port: u8,
    port_attr: PortAttr,
    gid_index: u8,
    gid: Gid,
}

impl std::fmt::Debug for RealVerbs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealVerbs")
            .field("device", &self.name)
            .field("port", &self.port)
            .field("port_attr", &self.port_attr)
            .field("gid_index", &self.gid_index)
            .finish_non_exhaustive()
    }
}

impl RealVerbs {
    /// The library this device was opened through.
    pub fn library(&self) -> &'static Library {
        self.ctx.lib
    }

    /// The GID table index in use.
    pub fn gid_index(&self) -> u8 {
        self.gid_index
    }
}

impl Verbs for RealVerbs {
    const NAME: &'static str = "libibverbs";
    type Pd = Pd;
    type Mr = Mr;
    type Cq = Cq;
    type Srq = Srq;
    type Qp = Qp;

    fn open(choice: &DeviceChoice) -> VerbsResult<Self> {
        let o = device::open(choice)?;
        Ok(RealVerbs {
            ctx: Arc::new(o.ctx),
            name: o.name,
            attr: o.attr,
            port: o.port,
            port_attr: o.port_attr,
            gid_index: choice.gid_index,
            gid: o.gid,
        })
    }

    fn device_name(&self) -> &str {
        &self.name
    }

    fn device_attr(&self) -> &DeviceAttr {
        &self.attr
    }

    fn port_attr(&self) -> &PortAttr {
        &self.port_attr
    }

    fn port(&self) -> u8 {
        self.port
    }

    fn gid(&self) -> Gid {
        self.gid
    }

    fn alloc_pd(&self) -> VerbsResult<Pd> {
        objects::alloc_pd(&self.ctx)
    }

    unsafe fn reg_mr(&self, pd: &Pd, addr: *mut u8, len: usize, access: Access) -> VerbsResult<Mr> {
        // SAFETY: the caller keeps the range as the trait requires.
        unsafe { objects::reg_mr(&self.ctx, pd, addr, len, access) }
    }

    fn lkey(mr: &Mr) -> u32 {
        mr.lkey
    }

    fn rkey(mr: &Mr) -> u32 {
        mr.rkey
    }

    fn create_cq(&self, depth: u32) -> VerbsResult<Cq> {
        objects::create_cq(&self.ctx, depth, self.attr.max_cqe)
    }

    fn create_srq(&self, pd: &Pd, max_wr: u32) -> VerbsResult<Srq> {
        objects::create_srq(&self.ctx, pd, max_wr)
    }

    fn create_qp(
        &self,
        pd: &Pd,
        send_cq: &Cq,
        recv_cq: &Cq,
        srq: Option<&Srq>,
        caps: &QpCaps,
    ) -> VerbsResult<Qp> {
        objects::create_qp(&self.ctx, pd, send_cq, recv_cq, srq, caps)
    }

    fn qp_num(qp: &Qp) -> u32 {
        qp.qp_num
    }

    fn qp_caps(qp: &Qp) -> QpCaps {
        qp.caps
    }

    fn qp_state(&self, qp: &Qp) -> VerbsResult<QpState> {
        qp::state(qp)
    }

    fn modify_qp(&self, qp: &Qp, to: &QpTransition) -> VerbsResult<()> {
        qp::modify(qp, to, self.port, self.gid_index)
    }

    unsafe fn post_send(&self, qp: &Qp, wr: &SendWr) -> VerbsResult<()> {
        // SAFETY: the caller keeps the SGE's memory as the trait requires.
        unsafe { post::post_send(qp, wr) }
    }

    unsafe fn post_recv(&self, qp: &Qp, wr: &RecvWr) -> VerbsResult<()> {
        // SAFETY: as post_send.
        unsafe { post::post_recv(qp, wr) }
    }

    unsafe fn post_srq_recv(&self, srq: &Srq, wr: &RecvWr) -> VerbsResult<()> {
        // SAFETY: as post_send.
        unsafe { post::post_srq_recv(srq, wr) }
    }

    fn arm_cq(&self, cq: &Cq) -> Option<std::os::fd::RawFd> {
        objects::arm_cq(cq)
    }

    fn cq_events_taken(&self, cq: &Cq) {
        objects::take_cq_events(cq);
    }

    fn poll_cq(&self, cq: &Cq, out: &mut [Wc]) -> VerbsResult<usize> {
        post::poll_cq(cq, out)
    }
}
