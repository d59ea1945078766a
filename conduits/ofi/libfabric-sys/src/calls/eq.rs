//! `<rdma/fi_eq.h>`: reading completion queues, and waiting on them.

use super::op;
use crate::bindings::{fi_cq_err_entry, fid, fid_cq, fid_fabric};
use std::ffi::{c_char, c_int, c_void};

/// `fi_cq_read`: `cq->ops->read(cq, buf, count)`.
///
/// # Safety
/// A live CQ; room at `buf` for `count` entries of its format.
#[inline]
pub unsafe fn fi_cq_read(cq: *mut fid_cq, buf: *mut c_void, count: usize) -> isize {
    // SAFETY: a live CQ (caller), whose ops table the provider set.
    unsafe { op!((*cq).ops, read, isize)(cq, buf, count) }
}

/// `fi_cq_readerr`: `cq->ops->readerr(cq, buf, flags)`.
///
/// # Safety
/// A live CQ and one error entry to fill.
#[inline]
pub unsafe fn fi_cq_readerr(cq: *mut fid_cq, buf: *mut fi_cq_err_entry, flags: u64) -> isize {
    // SAFETY: a live CQ (caller), whose ops table the provider set.
    unsafe { op!((*cq).ops, readerr, isize)(cq, buf, flags) }
}

/// `fi_cq_strerror`: `cq->ops->strerror(...)`; null if the provider has
/// no such entry.
///
/// # Safety
/// A live CQ; `err_data` as `fi_cq_readerr` returned it; `len` bytes at `buf`.
#[inline]
pub unsafe fn fi_cq_strerror(
    cq: *mut fid_cq,
    prov_errno: c_int,
    err_data: *const c_void,
    buf: *mut c_char,
    len: usize,
) -> *const c_char {
    // SAFETY: a live CQ (caller), whose ops table the provider set.
    match unsafe { (*(*cq).ops).strerror } {
        // SAFETY: the caller's contract.
        Some(f) => unsafe { f(cq, prov_errno, err_data, buf, len) },
        None => std::ptr::null(),
    }
}

/// `fi_trywait`: `fabric->ops->trywait(fabric, fids, count)`: 0 when the
/// wait objects of the `count` objects at `fids` may be slept on (each
/// is empty, and will signal what comes next), `-FI_EAGAIN` when one has
/// something to read first.
///
/// # Safety
/// A live fabric; `count` live objects of it at `fids`.
#[inline]
pub unsafe fn fi_trywait(fabric: *mut fid_fabric, fids: *mut *mut fid, count: c_int) -> c_int {
    // SAFETY: a live fabric (caller), whose ops table the provider set.
    unsafe { op!((*fabric).ops, trywait, c_int)(fabric, fids, count) }
}
