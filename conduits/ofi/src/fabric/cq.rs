//! The completion queue: where finished operations and arrived messages
//! are reported.

use super::domain::Domain;
use super::error::{check, FiError};
use libfabric_sys as sys;
use std::mem::MaybeUninit;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::Arc;

/// A completion queue of `FI_CQ_FORMAT_DATA` entries (`fi_cq_open`),
/// closed on drop after the endpoints bound to it.
pub struct CompletionQueue {
    ptr: *mut sys::fid_cq,
    domain: Arc<Domain>,
    /// The CQ's wait fd (`FI_WAIT_FD`), if the provider gave one.
    wait_fd: Option<RawFd>,
}

// SAFETY: the CQ is read under its owner's lock (FI_THREAD_DOMAIN); the
// handle has no thread affinity.
unsafe impl Send for CompletionQueue {}
// SAFETY: as above.
unsafe impl Sync for CompletionQueue {}

/// What one `read` found.
#[derive(Debug)]
pub enum CqRead<'b> {
    /// These entries were written (the start of the buffer).
    Entries(&'b [sys::fi_cq_data_entry]),
    /// Nothing completed.
    Empty,
    /// An error completion is waiting: call [`CompletionQueue::read_error`].
    Error,
}

/// One error completion: the operation's context and what went wrong.
#[derive(Debug)]
pub struct CqError {
    /// The context the failed operation was posted with.
    pub context: *mut std::os::raw::c_void,
    /// The operation's flags (`FI_SEND`, `FI_RECV`, `FI_RMA`, ...).
    pub flags: u64,
    /// The error, with the provider's own text appended.
    pub error: FiError,
}

impl CompletionQueue {
    /// Open a CQ of `size` entries (0: the provider's default), with an
    /// fd to sleep on (`FI_WAIT_FD`) where the provider has one, else
    /// without a wait object (`FI_WAIT_NONE`), and a progress thread then
    /// parks instead. Of the providers tested here tcp;ofi_rxm gives an
    /// fd; shm refuses `FI_WAIT_FD` (`fi_cq_open`: `FI_ENOSYS`), and
    /// sockets opens such a CQ but, under manual progress, gives no fd
    /// (`FI_GETWAIT`: `FI_ENOSYS`).
    pub fn open(domain: &Arc<Domain>, size: usize) -> Result<Arc<Self>, FiError> {
        if let Ok(mut cq) = Self::open_waiting(domain, size, sys::FI_WAIT_FD) {
            let mut fd: std::os::raw::c_int = -1;
            // SAFETY: a live CQ opened with FI_WAIT_FD; FI_GETWAIT writes
            // the fd (an int) into the local.
            let ret = unsafe {
                sys::fi_control(
                    &mut (*cq.ptr).fid,
                    sys::GETWAIT,
                    (&mut fd as *mut std::os::raw::c_int).cast(),
                )
            };
            if ret == 0 && fd >= 0 {
                // The fd is the provider's: closed with the CQ.
                cq.wait_fd = Some(fd);
                return Ok(Arc::new(cq));
            }
        }
        Self::open_waiting(domain, size, sys::FI_WAIT_NONE).map(Arc::new)
    }

    fn open_waiting(
        domain: &Arc<Domain>,
        size: usize,
        wait_obj: sys::fi_wait_obj,
    ) -> Result<Self, FiError> {
        let mut attr = sys::fi_cq_attr {
            size,
            format: sys::FI_CQ_FORMAT_DATA,
            wait_obj,
            ..Default::default()
        };
        let mut ptr = ptr::null_mut();
        // SAFETY: a live domain, a valid attribute struct, an out pointer.
        let ret = unsafe { sys::fi_cq_open(domain.raw(), &mut attr, &mut ptr, ptr::null_mut()) };
        check(
            i64::from(ret),
            || format!("fi_cq_open ({size} entries)"),
            domain.provider(),
        )?;
        Ok(CompletionQueue {
            ptr,
            domain: domain.clone(),
            wait_fd: None,
        })
    }

    /// The CQ's wait fd, if it has one ([`open`](Self::open)).
    pub fn wait_fd(&self) -> Option<RawFd> {
        self.wait_fd
    }

    /// `fi_trywait` on this CQ: true when it may be slept on (its fd
    /// becomes readable when a completion comes); false when completions
    /// wait to be read first, or it has no wait fd.
    pub fn trywait(&self) -> bool {
        if self.wait_fd.is_none() {
            return false;
        }
        let mut fid = self.raw_fid();
        // SAFETY: a live fabric and one live object of it (this CQ); the
        // provider reads the array of one fid pointer for the call.
        let ret = unsafe { sys::fi_trywait(self.domain.fabric().raw(), &mut fid, 1) };
        ret == 0
    }

    /// `fi_cq_read` into `buf`, which need not be initialized (a poll
    /// finds nothing most of the time, and zeroing the buffer first cost
    /// more than the read). Also drives progress on providers with manual
    /// progress.
    #[inline]
    pub fn read<'b>(
        &self,
        buf: &'b mut [MaybeUninit<sys::fi_cq_data_entry>],
    ) -> Result<CqRead<'b>, FiError> {
        // SAFETY: a live CQ of FI_CQ_FORMAT_DATA and room for buf.len()
        // entries; the provider only writes them.
        let n = unsafe { sys::fi_cq_read(self.ptr, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            let n = (n as usize).min(buf.len());
            // SAFETY: the provider wrote the first `n` entries (at most the
            // count it was given); a `MaybeUninit<T>` has `T`'s layout.
            let done = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast(), n) };
            Ok(CqRead::Entries(done))
        } else if n == -(sys::FI_EAGAIN as isize) || n == 0 {
            Ok(CqRead::Empty)
        } else if n == -(sys::FI_EAVAIL as isize) {
            Ok(CqRead::Error)
        } else {
            Err(FiError::new(
                n as i64,
                "fi_cq_read",
                self.domain.provider().clone(),
            ))
        }
    }

    /// `fi_cq_readerr`: the waiting error completion, if any.
    pub fn read_error(&self) -> Option<CqError> {
        let mut e = sys::fi_cq_err_entry::default();
        // SAFETY: a live CQ and one zeroed error entry (err_data_size 0:
        // the provider keeps err_data itself).
        let n = unsafe { sys::fi_cq_readerr(self.ptr, &mut e, 0) };
        if n != 1 {
            return None;
        }
        let mut text = [0 as std::os::raw::c_char; 256];
        // SAFETY: a live CQ; err_data as the provider returned it; a local
        // buffer for the text. The returned pointer is NUL-terminated.
        let prov = unsafe {
            let p = sys::fi_cq_strerror(
                self.ptr,
                e.prov_errno,
                e.err_data,
                text.as_mut_ptr(),
                text.len(),
            );
            if p.is_null() {
                String::new()
            } else {
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        let what = if e.flags & sys::FI_RECV != 0 {
            "receive"
        } else if e.flags & sys::FI_READ != 0 {
            "fi_read"
        } else if e.flags & sys::FI_WRITE != 0 {
            "fi_write"
        } else if e.flags & sys::FI_ATOMIC != 0 {
            "atomic"
        } else {
            "send"
        };
        Some(CqError {
            context: e.op_context,
            flags: e.flags,
            error: FiError::new(
                i64::from(e.err),
                format!("{what} completed in error (provider says: {prov})"),
                self.domain.provider().clone(),
            ),
        })
    }

    pub(crate) fn raw_fid(&self) -> *mut sys::fid {
        // SAFETY: ptr is a live CQ; taking the address of its embedded fid.
        unsafe { &mut (*self.ptr).fid }
    }
}

impl Drop for CompletionQueue {
    fn drop(&mut self) {
        // SAFETY: endpoints bound to this CQ hold an Arc to it, so they
        // are closed already.
        unsafe { super::close::close(&mut (*self.ptr).fid, "cq", self.domain.provider()) }
    }
}
