//! The RDM endpoint: sends, receives, RMA and atomics to any address of
//! the address vector.

use super::av::AddressVector;
use super::cq::CompletionQueue;
use super::domain::Domain;
use super::error::{check, FiError};
use libfabric_sys as sys;
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

/// An enabled RDM endpoint (`fi_endpoint`) bound to one CQ (transmit and
/// receive) and one AV, closed on drop before them.
///
/// Posting methods return the raw outcome: `Err` with
/// [`FiError::is_again`] when a queue is full (retry after progress).
pub struct Endpoint {
    ptr: *mut sys::fid_ep,
    cq: Arc<CompletionQueue>,
    av: Arc<AddressVector>,
    domain: Arc<Domain>,
}

// SAFETY: the endpoint is used under its owner's lock (FI_THREAD_DOMAIN:
// the provider needs no locking of its own); it has no thread affinity.
unsafe impl Send for Endpoint {}
// SAFETY: as above.
unsafe impl Sync for Endpoint {}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("provider", self.provider())
            .finish()
    }
}

/// An RMA target: the peer's address, the remote address (virtual or an
/// offset, per `FI_MR_VIRT_ADDR`) and the key of its region.
#[derive(Clone, Copy, Debug)]
pub struct Remote {
    /// The peer.
    pub addr: sys::fi_addr_t,
    /// Address in the peer's region, as the provider wants it.
    pub raddr: u64,
    /// The region's key.
    pub key: u64,
}

impl Endpoint {
    /// Open an endpoint from the fabric's info, bind `cq` and `av`, enable.
    pub fn open(
        domain: &Arc<Domain>,
        cq: &Arc<CompletionQueue>,
        av: &Arc<AddressVector>,
    ) -> Result<Arc<Self>, FiError> {
        let prov = domain.provider();
        let mut ptr = ptr::null_mut();
        // SAFETY: a live domain and the info it was opened from.
        let ret = unsafe {
            sys::fi_endpoint(
                domain.raw(),
                domain.fabric().info().raw(),
                &mut ptr,
                ptr::null_mut(),
            )
        };
        check(i64::from(ret), || "fi_endpoint (RDM)".into(), prov)?;
        let ep = Endpoint {
            ptr,
            cq: cq.clone(),
            av: av.clone(),
            domain: domain.clone(),
        };
        // SAFETY: live endpoint and CQ of the same domain.
        let ret = unsafe { sys::fi_ep_bind(ptr, cq.raw_fid(), sys::FI_TRANSMIT | sys::FI_RECV) };
        check(i64::from(ret), || "fi_ep_bind(cq)".into(), prov)?;
        // SAFETY: live endpoint and AV of the same domain.
        let ret = unsafe { sys::fi_ep_bind(ptr, av.raw_fid(), 0) };
        check(i64::from(ret), || "fi_ep_bind(av)".into(), prov)?;
        // SAFETY: a bound endpoint.
        let ret = unsafe { sys::fi_enable(ptr) };
        check(i64::from(ret), || "fi_enable".into(), prov)?;
        Ok(Arc::new(ep))
    }

    /// The provider's name, for error messages.
    pub fn provider(&self) -> &Arc<str> {
        self.domain.provider()
    }

    /// The domain.
    pub fn domain(&self) -> &Arc<Domain> {
        &self.domain
    }

    /// The completion queue.
    pub fn cq(&self) -> &Arc<CompletionQueue> {
        &self.cq
    }

    /// The address vector.
    pub fn av(&self) -> &Arc<AddressVector> {
        &self.av
    }

    pub(crate) fn raw_fid(&self) -> *mut sys::fid {
        // SAFETY: ptr is a live endpoint; taking its embedded fid's address.
        unsafe { &mut (*self.ptr).fid }
    }

    /// This endpoint's address, as peers insert it into their AV.
    pub fn name(&self) -> Result<Vec<u8>, FiError> {
        let mut buf = vec![0u8; 256];
        let mut len = buf.len();
        // SAFETY: a live endpoint, a buffer of `len` bytes.
        let mut ret = unsafe { sys::fi_getname(self.raw_fid(), buf.as_mut_ptr().cast(), &mut len) };
        if ret == -(sys::FI_ETOOSMALL as i32) {
            buf.resize(len, 0);
            // SAFETY: as above, with the size the provider asked for.
            ret = unsafe { sys::fi_getname(self.raw_fid(), buf.as_mut_ptr().cast(), &mut len) };
        }
        check(i64::from(ret), || "fi_getname".into(), self.provider())?;
        buf.truncate(len);
        Ok(buf)
    }

    #[inline]
    fn posted(&self, ret: isize, op: impl FnOnce() -> String) -> Result<(), FiError> {
        check(ret as i64, op, self.provider())
    }

    /// `fi_send` of `len` bytes at `buf` to `dest`.
    ///
    /// # Safety
    /// The buffer must stay valid until the completion for `ctx` is read;
    /// `desc` must describe it when the provider needs `FI_MR_LOCAL`;
    /// `ctx` must satisfy the provider's `FI_CONTEXT`/`FI_CONTEXT2` mode.
    #[inline]
    pub unsafe fn send(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: sys::fi_addr_t,
        ctx: *mut c_void,
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        let ret = unsafe { sys::fi_send(self.ptr, buf.cast(), len, desc, dest, ctx) };
        self.posted(ret, || format!("fi_send of {len} bytes to address {dest}"))
    }

    /// `fi_inject` of `len` bytes at `buf` to `dest`: the bytes are copied
    /// (or sent) before it returns, and no completion is written.
    ///
    /// # Safety
    /// `buf` must be readable for `len` bytes, at most the provider's
    /// inject size, for the call.
    #[inline]
    pub unsafe fn inject(
        &self,
        buf: *const u8,
        len: usize,
        dest: sys::fi_addr_t,
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        let ret = unsafe { sys::fi_inject(self.ptr, buf.cast(), len, dest) };
        self.posted(ret, || {
            format!("fi_inject of {len} bytes to address {dest}")
        })
    }

    /// `fi_recv` of up to `len` bytes into `buf`, from anyone.
    ///
    /// # Safety
    /// As [`send`](Self::send), for the receive buffer.
    #[inline]
    pub unsafe fn recv(
        &self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        ctx: *mut c_void,
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        let ret =
            unsafe { sys::fi_recv(self.ptr, buf.cast(), len, desc, sys::FI_ADDR_UNSPEC, ctx) };
        self.posted(ret, || format!("fi_recv of {len} bytes"))
    }

    /// `fi_writemsg` of `len` bytes at `buf` to `to`, with `flags`
    /// (`FI_COMPLETION` is added; `FI_DELIVERY_COMPLETE`, `FI_FENCE`...).
    ///
    /// # Safety
    /// As [`send`](Self::send); the remote range must lie in the region.
    #[inline]
    pub unsafe fn write(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        to: Remote,
        ctx: *mut c_void,
        flags: u64,
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        let ret = unsafe { self.rma(sys::fi_writemsg, buf.cast_mut(), len, desc, to, ctx, flags) };
        self.posted(ret, || {
            format!(
                "fi_write of {len} bytes to address {} at {:#x}",
                to.addr, to.raddr
            )
        })
    }

    /// `fi_readmsg` of `len` bytes from `from` into `buf`, with `flags`.
    ///
    /// # Safety
    /// As [`write`](Self::write), for the destination buffer.
    #[inline]
    pub unsafe fn read(
        &self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        from: Remote,
        ctx: *mut c_void,
        flags: u64,
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        let ret = unsafe { self.rma(sys::fi_readmsg, buf, len, desc, from, ctx, flags) };
        self.posted(ret, || {
            format!(
                "fi_read of {len} bytes from address {} at {:#x}",
                from.addr, from.raddr
            )
        })
    }

    /// Post one RMA message, `fi_writemsg` or `fi_readmsg` as `post` is,
    /// between the local range `buf .. buf + len` and the same length at
    /// `at`, with `flags` and `FI_COMPLETION`; the provider's return value.
    ///
    /// # Safety
    /// As [`write`](Self::write) or [`read`](Self::read), whichever `post` is.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn rma(
        &self,
        post: unsafe fn(*mut sys::fid_ep, *const sys::fi_msg_rma, u64) -> isize,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        at: Remote,
        ctx: *mut c_void,
        flags: u64,
    ) -> isize {
        let mut iov = libc::iovec {
            iov_base: buf.cast(),
            iov_len: len,
        };
        let mut desc = desc;
        let mut rma = sys::fi_rma_iov {
            addr: at.raddr,
            len,
            key: at.key,
        };
        let msg = sys::fi_msg_rma {
            msg_iov: (&mut iov as *mut libc::iovec).cast(),
            desc: &mut desc,
            iov_count: 1,
            addr: at.addr,
            rma_iov: &mut rma,
            rma_iov_count: 1,
            context: ctx,
            data: 0,
        };
        // SAFETY: the message describes one local and one remote range,
        // both valid per the caller's contract; the provider copies the
        // descriptors (which live until this returns) before returning.
        unsafe { post(self.ptr, &msg, flags | sys::FI_COMPLETION) }
    }

    /// `fi_atomic`: one element of `dt` at `operand`, combined with `op`.
    ///
    /// # Safety
    /// As [`send`](Self::send), for the operand buffer.
    #[inline]
    pub unsafe fn atomic(
        &self,
        operand: *const u8,
        desc: *mut c_void,
        to: Remote,
        dt: sys::fi_datatype,
        op: sys::fi_op,
        ctx: *mut c_void,
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        let ret = unsafe {
            sys::fi_atomic(
                self.ptr,
                operand.cast(),
                1,
                desc,
                to.addr,
                to.raddr,
                to.key,
                dt,
                op,
                ctx,
            )
        };
        self.posted(ret, || {
            format!(
                "fi_atomic (type {dt}, op {op}) to address {} at {:#x}",
                to.addr, to.raddr
            )
        })
    }

    /// `fi_fetch_atomic`: as [`atomic`](Self::atomic), the old value to `result`.
    ///
    /// # Safety
    /// As [`send`](Self::send), for the operand and result buffers.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn fetch_atomic(
        &self,
        operand: *const u8,
        desc: *mut c_void,
        result: *mut u8,
        result_desc: *mut c_void,
        to: Remote,
        dt: sys::fi_datatype,
        op: sys::fi_op,
        ctx: *mut c_void,
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        let ret = unsafe {
            sys::fi_fetch_atomic(
                self.ptr,
                operand.cast(),
                1,
                desc,
                result.cast(),
                result_desc,
                to.addr,
                to.raddr,
                to.key,
                dt,
                op,
                ctx,
            )
        };
        self.posted(ret, || {
            format!(
                "fi_fetch_atomic (type {dt}, op {op}) to address {} at {:#x}",
                to.addr, to.raddr
            )
        })
    }

    /// `fi_compare_atomic`: `op` (`FI_CSWAP`) with `compare`, old value to `result`.
    ///
    /// # Safety
    /// As [`send`](Self::send), for the three buffers (all inside the
    /// region `desc` describes).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn compare_atomic(
        &self,
        operand: *const u8,
        compare: *const u8,
        result: *mut u8,
        desc: *mut c_void,
        to: Remote,
        dt: sys::fi_datatype,
        op: sys::fi_op,
        ctx: *mut c_void,
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        let ret = unsafe {
            sys::fi_compare_atomic(
                self.ptr,
                operand.cast(),
                1,
                desc,
                compare.cast(),
                desc,
                result.cast(),
                desc,
                to.addr,
                to.raddr,
                to.key,
                dt,
                op,
                ctx,
            )
        };
        self.posted(ret, || {
            format!(
                "fi_compare_atomic (type {dt}, op {op}) to address {} at {:#x}",
                to.addr, to.raddr
            )
        })
    }

    /// True if the endpoint performs `op` on one `dt` element with
    /// `call` (its validity query: `fi_atomicvalid`,
    /// `fi_fetch_atomicvalid` or `fi_compare_atomicvalid`).
    pub fn atomic_valid(
        &self,
        call: sys::AtomicCall,
        dt: sys::fi_datatype,
        op: sys::fi_op,
    ) -> bool {
        let mut count = 0usize;
        // SAFETY: a live endpoint and a local count to fill.
        let ret = unsafe { sys::fi_atomic_valid(self.ptr, call, dt, op, &mut count) };
        ret == 0 && count >= 1
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // SAFETY: a live endpoint closed once; regions bound to it hold an
        // Arc to it, so they are closed already.
        unsafe { super::close::close(&mut (*self.ptr).fid, "endpoint", self.provider()) }
    }
}
