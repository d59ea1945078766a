//! `<rdma/fi_atomic.h>`: atomics and their validity queries.

use super::op;
use crate::bindings::{fi_addr_t, fi_datatype, fi_op, fid_ep};
use std::ffi::{c_int, c_void};

/// `fi_atomic`: `ep->atomic->write(...)`.
///
/// # Safety
/// A live endpoint; the operand buffer valid until the completion.
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn fi_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype,
    op: fi_op,
    context: *mut c_void,
) -> isize {
    // SAFETY: a live endpoint (caller), whose atomic table the provider set.
    unsafe {
        op!((*ep).atomic, write, isize)(
            ep, buf, count, desc, dest_addr, addr, key, datatype, op, context,
        )
    }
}

/// `fi_fetch_atomic`: `ep->atomic->readwrite(...)`.
///
/// # Safety
/// A live endpoint; operand and result buffers valid until the completion.
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn fi_fetch_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype,
    op: fi_op,
    context: *mut c_void,
) -> isize {
    // SAFETY: a live endpoint (caller), whose atomic table the provider set.
    unsafe {
        op!((*ep).atomic, readwrite, isize)(
            ep,
            buf,
            count,
            desc,
            result,
            result_desc,
            dest_addr,
            addr,
            key,
            datatype,
            op,
            context,
        )
    }
}

/// `fi_compare_atomic`: `ep->atomic->compwrite(...)`.
///
/// # Safety
/// A live endpoint; operand, compare and result buffers valid until the
/// completion.
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn fi_compare_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    compare: *const c_void,
    compare_desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype,
    op: fi_op,
    context: *mut c_void,
) -> isize {
    // SAFETY: a live endpoint (caller), whose atomic table the provider set.
    unsafe {
        op!((*ep).atomic, compwrite, isize)(
            ep,
            buf,
            count,
            desc,
            compare,
            compare_desc,
            result,
            result_desc,
            dest_addr,
            addr,
            key,
            datatype,
            op,
            context,
        )
    }
}

/// `fi_atomicvalid`: `ep->atomic->writevalid(...)`.
///
/// # Safety
/// A live endpoint and a count to fill.
#[inline]
pub unsafe fn fi_atomicvalid(
    ep: *mut fid_ep,
    datatype: fi_datatype,
    op: fi_op,
    count: *mut usize,
) -> c_int {
    // SAFETY: a live endpoint (caller), whose atomic table the provider set.
    unsafe { op!((*ep).atomic, writevalid, c_int)(ep, datatype, op, count) }
}

/// `fi_fetch_atomicvalid`: `ep->atomic->readwritevalid(...)`.
///
/// # Safety
/// As [`fi_atomicvalid`].
#[inline]
pub unsafe fn fi_fetch_atomicvalid(
    ep: *mut fid_ep,
    datatype: fi_datatype,
    op: fi_op,
    count: *mut usize,
) -> c_int {
    // SAFETY: a live endpoint (caller), whose atomic table the provider set.
    unsafe { op!((*ep).atomic, readwritevalid, c_int)(ep, datatype, op, count) }
}

/// `fi_compare_atomicvalid`: `ep->atomic->compwritevalid(...)`.
///
/// # Safety
/// As [`fi_atomicvalid`].
#[inline]
pub unsafe fn fi_compare_atomicvalid(
    ep: *mut fid_ep,
    datatype: fi_datatype,
    op: fi_op,
    count: *mut usize,
) -> c_int {
    // SAFETY: a live endpoint (caller), whose atomic table the provider set.
    unsafe { op!((*ep).atomic, compwritevalid, c_int)(ep, datatype, op, count) }
}
