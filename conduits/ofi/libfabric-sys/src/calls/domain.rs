//! `<rdma/fi_domain.h>`: domains, completion queues, address vectors,
//! memory regions, atomic capabilities.

use super::fabric::ENABLE;
use super::op;
use crate::bindings::{
    fi_addr_t, fi_atomic_attr, fi_av_attr, fi_cq_attr, fi_datatype, fi_info, fi_op, fi_ops_domain,
    fid, fid_av, fid_cq, fid_domain, fid_fabric, fid_mr,
};
use std::ffi::{c_int, c_void};
use std::mem::offset_of;

/// `fi_domain`: `fabric->ops->domain(...)`.
///
/// # Safety
/// A live fabric, an entry of the `fi_getinfo` answer it was opened
/// from, an out pointer.
#[inline]
pub unsafe fn fi_domain(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    domain: *mut *mut fid_domain,
    context: *mut c_void,
) -> c_int {
    // SAFETY: a live fabric (caller), whose ops table the provider set.
    unsafe { op!((*fabric).ops, domain, c_int)(fabric, info, domain, context) }
}

/// `fi_cq_open`: `domain->ops->cq_open(...)`.
///
/// # Safety
/// A live domain, valid attributes, an out pointer.
#[inline]
pub unsafe fn fi_cq_open(
    domain: *mut fid_domain,
    attr: *mut fi_cq_attr,
    cq: *mut *mut fid_cq,
    context: *mut c_void,
) -> c_int {
    // SAFETY: a live domain (caller), whose ops table the provider set.
    unsafe { op!((*domain).ops, cq_open, c_int)(domain, attr, cq, context) }
}

/// `fi_av_open`: `domain->ops->av_open(...)`.
///
/// # Safety
/// A live domain, valid attributes, an out pointer.
#[inline]
pub unsafe fn fi_av_open(
    domain: *mut fid_domain,
    attr: *mut fi_av_attr,
    av: *mut *mut fid_av,
    context: *mut c_void,
) -> c_int {
    // SAFETY: a live domain (caller), whose ops table the provider set.
    unsafe { op!((*domain).ops, av_open, c_int)(domain, attr, av, context) }
}

/// `fi_av_insert`: `av->ops->insert(...)`.
///
/// # Safety
/// A live AV, `count` addresses of the provider's format at `addr`,
/// `count` output slots at `fi_addr`.
#[inline]
pub unsafe fn fi_av_insert(
    av: *mut fid_av,
    addr: *const c_void,
    count: usize,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    // SAFETY: a live AV (caller), whose ops table the provider set.
    unsafe { op!((*av).ops, insert, c_int)(av, addr, count, fi_addr, flags, context) }
}

/// `fi_mr_reg`: `domain->mr->reg(&domain->fid, ...)`.
///
/// # Safety
/// A live domain; the memory stays allocated while the region exists.
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn fi_mr_reg(
    domain: *mut fid_domain,
    buf: *const c_void,
    len: usize,
    acs: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    // SAFETY: a live domain (caller), whose mr table the provider set;
    // its fid is a field of it.
    unsafe {
        op!((*domain).mr, reg, c_int)(
            &raw mut (*domain).fid,
            buf,
            len,
            acs,
            offset,
            requested_key,
            flags,
            mr,
            context,
        )
    }
}

/// `fi_mr_bind`: `mr->fid.ops->bind(&mr->fid, bfid, flags)`.
///
/// # Safety
/// A live region and a live object of the same domain.
#[inline]
pub unsafe fn fi_mr_bind(mr: *mut fid_mr, bfid: *mut fid, flags: u64) -> c_int {
    // SAFETY: a live region (caller), whose fid ops the provider set.
    unsafe { op!((*mr).fid.ops, bind, c_int)(&raw mut (*mr).fid, bfid, flags) }
}

/// `fi_mr_enable`: `fi_control(&mr->fid, FI_ENABLE, NULL)`.
///
/// # Safety
/// A live region.
#[inline]
pub unsafe fn fi_mr_enable(mr: *mut fid_mr) -> c_int {
    // SAFETY: a live region (caller); its fid is a field of it.
    unsafe { super::fi_control(&raw mut (*mr).fid, ENABLE, std::ptr::null_mut()) }
}

/// `fi_mr_key`: `mr->key`.
///
/// # Safety
/// A live region.
#[inline]
pub unsafe fn fi_mr_key(mr: *mut fid_mr) -> u64 {
    // SAFETY: a live region (caller).
    unsafe { (*mr).key }
}

/// `fi_mr_desc`: `mr->mem_desc`.
///
/// # Safety
/// A live region.
#[inline]
pub unsafe fn fi_mr_desc(mr: *mut fid_mr) -> *mut c_void {
    // SAFETY: a live region (caller).
    unsafe { (*mr).mem_desc }
}

/// `fi_query_atomic`: `domain->ops->query_atomic(...)` when the
/// provider's table is new enough to have it (`FI_CHECK_OP`), else
/// `-FI_ENOSYS`.
///
/// # Safety
/// A live domain and an attribute struct to fill.
#[inline]
pub unsafe fn fi_query_atomic(
    domain: *mut fid_domain,
    datatype: fi_datatype,
    op: fi_op,
    attr: *mut fi_atomic_attr,
    flags: u64,
) -> c_int {
    // SAFETY: a live domain (caller); its ops table is read only after
    // the null check, and the entry only if the table's size covers it.
    unsafe {
        let ops = (*domain).ops;
        if ops.is_null() || (*ops).size <= offset_of!(fi_ops_domain, query_atomic) {
            return -(crate::FI_ENOSYS as c_int);
        }
        op!(ops, query_atomic, c_int)(domain, datatype, op, attr, flags)
    }
}
