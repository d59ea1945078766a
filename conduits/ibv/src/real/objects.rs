//! The verbs objects (PD, MR, CQ, SRQ, QP) as owned handles: created
//! here, destroyed on drop.
//!
//! Each handle keeps alive what the C object depends on (a QP its PD,
//! CQs and SRQ; an MR and an SRQ their PD; all of them the device
//! context), so dropping handles in any order destroys the objects in
//! an order libibverbs accepts. A failed destroy is logged and the
//! object leaked, never a panic.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;
use std::sync::Arc;

use super::abi::{
    IbvCompChannel, IbvCq, IbvMr, IbvPd, IbvQp, IbvQpCap, IbvQpInitAttr, IbvSrq, IbvSrqAttr,
    IbvSrqInitAttr, IBV_QPT_RC,
};
use super::device::Context;
use super::errno::{last_errno, rc_errno};
use crate::verbs::{Access, QpCaps, VerbsError, VerbsResult};

/// Log a failed destroy (drop cannot return it).
fn report_destroy(verb: &str, rc: c_int) {
    if rc != 0 {
        tracing::error!(
            "{verb} failed: {} (the object is leaked)",
            std::io::Error::from_raw_os_error(rc_errno(rc))
        );
    }
}

/// `EINVAL` for an object of another device.
fn foreign(verb: &'static str, what: &str) -> VerbsError {
    VerbsError::call(
        verb,
        libc::EINVAL,
        format!("the {what} belongs to another opened device"),
    )
}

pub(crate) struct PdInner {
    pub(crate) ctx: Arc<Context>,
    pub(crate) raw: NonNull<IbvPd>,
}

impl Drop for PdInner {
    fn drop(&mut self) {
        // SAFETY: the PD allocated by this object, freed once, after its
        // MRs, SRQs and QPs (each holds this PdInner alive).
        let rc = unsafe { (self.ctx.lib.fns.ibv_dealloc_pd)(self.raw.as_ptr()) };
        report_destroy("ibv_dealloc_pd", rc);
    }
}

/// A protection domain of the real backend.
pub struct Pd(pub(crate) Arc<PdInner>);

/// A registered memory region of the real backend.
pub struct Mr {
    raw: NonNull<IbvMr>,
    pub(crate) lkey: u32,
    pub(crate) rkey: u32,
    pd: Arc<PdInner>,
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: the MR registered by this object, deregistered once
        // (its PD is still allocated: `self.pd`).
        let rc = unsafe { (self.pd.ctx.lib.fns.ibv_dereg_mr)(self.raw.as_ptr()) };
        report_destroy("ibv_dereg_mr", rc);
    }
}

pub(crate) struct CqInner {
    pub(crate) ctx: Arc<Context>,
    pub(crate) raw: NonNull<IbvCq>,
    /// Entries granted.
    pub(crate) depth: u32,
    /// The CQ's completion channel (non-blocking), its wait object; none
    /// if the library has no channel verbs or creating one failed.
    pub(crate) channel: Option<NonNull<IbvCompChannel>>,
}

impl Drop for CqInner {
    fn drop(&mut self) {
        // SAFETY: the CQ created by this object, destroyed once, after
        // the QPs using it (each holds this CqInner alive). Every event
        // taken from its channel was acknowledged (`take_cq_events`), as
        // ibv_destroy_cq requires.
        let rc = unsafe { (self.ctx.lib.fns.ibv_destroy_cq)(self.raw.as_ptr()) };
        report_destroy("ibv_destroy_cq", rc);
        if let (Some(ch), Some(f)) = (self.channel, &self.ctx.lib.channel) {
            // SAFETY: the channel created for this CQ, destroyed once,
            // after the CQ that used it.
            let rc = unsafe { (f.ibv_destroy_comp_channel)(ch.as_ptr()) };
            report_destroy("ibv_destroy_comp_channel", rc);
        }
    }
}

/// A non-blocking completion channel for a new CQ, or `None` (no channel
/// verbs, or they failed: the CQ then has no wait object).
fn comp_channel(ctx: &Context) -> Option<NonNull<IbvCompChannel>> {
    let f = ctx.lib.channel.as_ref()?;
    // SAFETY: a live context; the channel returned is ours to destroy.
    let ch = NonNull::new(unsafe { (f.ibv_create_comp_channel)(ctx.raw.as_ptr()) })?;
    // SAFETY: a live channel the library filled.
    let fd = unsafe { (*ch.as_ptr()).fd };
    // SAFETY: fcntl on the channel's own fd, no pointers.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    if !ok {
        // SAFETY: the channel just created, used by no CQ.
        unsafe { (f.ibv_destroy_comp_channel)(ch.as_ptr()) };
        return None;
    }
    Some(ch)
}

/// `ibv_req_notify_cq` (all completions): the channel's fd becomes
/// readable at the CQ's next completion. `None` if the CQ has no
/// channel or the provider refused.
pub(crate) fn arm_cq(cq: &Cq) -> Option<std::os::fd::RawFd> {
    let ch = cq.0.channel?;
    // SAFETY: a live context; its ops table is filled at open.
    let notify = unsafe { (*cq.0.ctx.raw.as_ptr()).ops.req_notify_cq }?;
    // SAFETY: a live CQ of this context (the caller serialises the
    // verbs on it, as for polls).
    let rc = unsafe { notify(cq.0.raw.as_ptr(), 0) };
    // SAFETY: a live channel.
    (rc == 0).then(|| unsafe { (*ch.as_ptr()).fd })
}

/// Take and acknowledge every event waiting on the CQ's channel
/// (`ibv_get_cq_event` until `EAGAIN`, the fd being non-blocking, then
/// `ibv_ack_cq_events`).
pub(crate) fn take_cq_events(cq: &Cq) {
    let (Some(ch), Some(f)) = (cq.0.channel, &cq.0.ctx.lib.channel) else {
        return;
    };
    let mut taken = 0u32;
    // Bounded: each arming makes one event at most; a few stale ones
    // from sleeps that ended on their timeout are taken too.
    for _ in 0..64 {
        let mut ev_cq = std::ptr::null_mut();
        let mut ev_ctx = std::ptr::null_mut();
        // SAFETY: a live channel and two out pointers.
        let rc = unsafe { (f.ibv_get_cq_event)(ch.as_ptr(), &mut ev_cq, &mut ev_ctx) };
        if rc != 0 {
            break;
        }
        taken += 1;
    }
    if taken > 0 {
        // SAFETY: a live CQ (the channel's only one) and the count of
        // its events just taken.
        unsafe { (f.ibv_ack_cq_events)(cq.0.raw.as_ptr(), taken) };
    }
}

/// A completion queue of the real backend.
pub struct Cq(pub(crate) Arc<CqInner>);

pub(crate) struct SrqInner {
    pub(crate) raw: NonNull<IbvSrq>,
    pub(crate) pd: Arc<PdInner>,
    pub(crate) max_wr: u32,
}

impl Drop for SrqInner {
    fn drop(&mut self) {
        // SAFETY: the SRQ created by this object, destroyed once, after
        // the QPs using it (each holds this SrqInner alive).
        let rc = unsafe { (self.pd.ctx.lib.fns.ibv_destroy_srq)(self.raw.as_ptr()) };
        report_destroy("ibv_destroy_srq", rc);
    }
}

/// A shared receive queue of the real backend.
pub struct Srq(pub(crate) Arc<SrqInner>);

/// An RC queue pair of the real backend.
pub struct Qp {
    pub(crate) raw: NonNull<IbvQp>,
    pub(crate) qp_num: u32,
    pub(crate) caps: QpCaps,
    pub(crate) pd: Arc<PdInner>,
    _send_cq: Arc<CqInner>,
    _recv_cq: Arc<CqInner>,
    pub(crate) srq: Option<Arc<SrqInner>>,
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: the QP created by this object, destroyed once, before
        // its CQs, SRQ and PD (fields, dropped after this body).
        let rc = unsafe { (self.pd.ctx.lib.fns.ibv_destroy_qp)(self.raw.as_ptr()) };
        report_destroy("ibv_destroy_qp", rc);
    }
}

// SAFETY (for the five impls below): libibverbs objects may be used from
// any thread; the trait's contract has the caller serialise the posts
// and polls of one QP or CQ (and a CQ's notifications: the kit arms and
// drains them under its state lock, as it polls), and everything else
// here is immutable after creation.
macro_rules! thread_safe {
    ($($t:ty),*) => {$(
        // SAFETY: see above.
        unsafe impl Send for $t {}
        // SAFETY: see above.
        unsafe impl Sync for $t {}
    )*};
}
thread_safe!(PdInner, Mr, CqInner, SrqInner, Qp);

/// `ibv_alloc_pd`.
pub(crate) fn alloc_pd(ctx: &Arc<Context>) -> VerbsResult<Pd> {
    // SAFETY: a live context.
    let raw = unsafe { (ctx.lib.fns.ibv_alloc_pd)(ctx.raw.as_ptr()) };
    let raw = NonNull::new(raw)
        .ok_or_else(|| VerbsError::call("ibv_alloc_pd", last_errno(), "a protection domain"))?;
    Ok(Pd(Arc::new(PdInner {
        ctx: ctx.clone(),
        raw,
    })))
}

/// `ibv_reg_mr`.
///
/// # Safety
/// As [`crate::verbs::Verbs::reg_mr`].
pub(crate) unsafe fn reg_mr(
    ctx: &Arc<Context>,
    pd: &Pd,
    addr: *mut u8,
    len: usize,
    access: Access,
) -> VerbsResult<Mr> {
    if !Arc::ptr_eq(&pd.0.ctx, ctx) {
        return Err(foreign("ibv_reg_mr", "protection domain"));
    }
    let flags = c_int::try_from(access.bits()).unwrap_or(c_int::MAX);
    // SAFETY: a live PD; the range stays allocated while registered
    // (caller's contract).
    let raw = unsafe { (ctx.lib.fns.ibv_reg_mr)(pd.0.raw.as_ptr(), addr.cast(), len, flags) };
    let raw = NonNull::new(raw).ok_or_else(|| {
        VerbsError::call(
            "ibv_reg_mr",
            last_errno(),
            format!("{len} bytes at {addr:p} with access {access:?}"),
        )
    })?;
    // SAFETY: a live MR the library filled.
    let (lkey, rkey) = unsafe { ((*raw.as_ptr()).lkey, (*raw.as_ptr()).rkey) };
    Ok(Mr {
        raw,
        lkey,
        rkey,
        pd: pd.0.clone(),
    })
}

/// `ibv_create_cq` with at least `depth` entries.
pub(crate) fn create_cq(ctx: &Arc<Context>, depth: u32, max_cqe: u32) -> VerbsResult<Cq> {
    let detail = || format!("a CQ of {depth} entries (the device allows {max_cqe})");
    let cqe = match c_int::try_from(depth) {
        Ok(c) if c > 0 && depth <= max_cqe => c,
        _ => return Err(VerbsError::call("ibv_create_cq", libc::EINVAL, detail())),
    };
    let channel = comp_channel(ctx);
    // SAFETY: a live context; no CQ context, the channel (live) or none,
    // completion vector 0 (every device has one).
    let raw = unsafe {
        (ctx.lib.fns.ibv_create_cq)(
            ctx.raw.as_ptr(),
            cqe,
            std::ptr::null_mut::<c_void>(),
            channel.map_or(std::ptr::null_mut(), NonNull::as_ptr),
            0,
        )
    };
    let Some(raw) = NonNull::new(raw) else {
        let e = VerbsError::call("ibv_create_cq", last_errno(), detail());
        if let (Some(ch), Some(f)) = (channel, &ctx.lib.channel) {
            // SAFETY: the channel just created, used by no CQ.
            unsafe { (f.ibv_destroy_comp_channel)(ch.as_ptr()) };
        }
        return Err(e);
    };
    // SAFETY: a live CQ the library filled.
    let granted = unsafe { (*raw.as_ptr()).cqe };
    Ok(Cq(Arc::new(CqInner {
        ctx: ctx.clone(),
        raw,
        depth: u32::try_from(granted).unwrap_or(depth).max(depth),
        channel,
    })))
}

/// `ibv_create_srq` of `max_wr` single-SGE receives.
pub(crate) fn create_srq(ctx: &Arc<Context>, pd: &Pd, max_wr: u32) -> VerbsResult<Srq> {
    if !Arc::ptr_eq(&pd.0.ctx, ctx) {
        return Err(foreign("ibv_create_srq", "protection domain"));
    }
    let mut init = IbvSrqInitAttr {
        srq_context: std::ptr::null_mut(),
        attr: IbvSrqAttr {
            max_wr,
            max_sge: 1,
            srq_limit: 0,
        },
    };
    // SAFETY: a live PD and an init struct of the verb's layout.
    let raw = unsafe { (ctx.lib.fns.ibv_create_srq)(pd.0.raw.as_ptr(), &mut init) };
    let raw = NonNull::new(raw).ok_or_else(|| {
        VerbsError::call(
            "ibv_create_srq",
            last_errno(),
            format!("an SRQ of {max_wr} receives of one SGE"),
        )
    })?;
    Ok(Srq(Arc::new(SrqInner {
        raw,
        pd: pd.0.clone(),
        max_wr,
    })))
}

/// `ibv_create_qp` (RC, state RESET).
pub(crate) fn create_qp(
    ctx: &Arc<Context>,
    pd: &Pd,
    send_cq: &Cq,
    recv_cq: &Cq,
    srq: Option<&Srq>,
    caps: &QpCaps,
) -> VerbsResult<Qp> {
    let ours = Arc::ptr_eq(&pd.0.ctx, ctx)
        && Arc::ptr_eq(&send_cq.0.ctx, ctx)
        && Arc::ptr_eq(&recv_cq.0.ctx, ctx)
        && srq.is_none_or(|s| Arc::ptr_eq(&s.0.pd.ctx, ctx));
    if !ours {
        return Err(foreign("ibv_create_qp", "PD, a CQ or the SRQ"));
    }
    let mut init = IbvQpInitAttr {
        qp_context: std::ptr::null_mut(),
        send_cq: send_cq.0.raw.as_ptr(),
        recv_cq: recv_cq.0.raw.as_ptr(),
        srq: srq.map_or(std::ptr::null_mut(), |s| s.0.raw.as_ptr()),
        cap: IbvQpCap {
            max_send_wr: caps.max_send_wr,
            max_recv_wr: if srq.is_some() { 0 } else { caps.max_recv_wr },
            max_send_sge: 1,
            max_recv_sge: if srq.is_some() { 0 } else { 1 },
            max_inline_data: caps.max_inline_data,
        },
        qp_type: IBV_QPT_RC,
        sq_sig_all: 0,
    };
    // SAFETY: a live PD, CQs and SRQ of this context, and an init struct
    // of the verb's layout (the library writes the granted caps back).
    let raw = unsafe { (ctx.lib.fns.ibv_create_qp)(pd.0.raw.as_ptr(), &mut init) };
    let raw = NonNull::new(raw).ok_or_else(|| {
        VerbsError::call(
            "ibv_create_qp",
            last_errno(),
            format!(
                "an RC QP of {} sends, {} receives{}, inline {}",
                caps.max_send_wr,
                caps.max_recv_wr,
                if srq.is_some() { " (SRQ)" } else { "" },
                caps.max_inline_data
            ),
        )
    })?;
    // SAFETY: a live QP the library filled.
    let qp_num = unsafe { (*raw.as_ptr()).qp_num };
    Ok(Qp {
        raw,
        qp_num,
        caps: QpCaps {
            max_send_wr: init.cap.max_send_wr,
            max_recv_wr: init.cap.max_recv_wr,
            max_inline_data: init.cap.max_inline_data,
        },
        pd: pd.0.clone(),
        _send_cq: send_cq.0.clone(),
        _recv_cq: recv_cq.0.clone(),
        srq: srq.map(|s| s.0.clone()),
    })
}
