//! `<rdma/fi_endpoint.h>`: endpoints and messages.

use super::fabric::ENABLE;
use super::op;
use crate::bindings::{fi_addr_t, fi_info, fid, fid_domain, fid_ep};
use std::ffi::{c_int, c_void};

/// `fi_endpoint`: `domain->ops->endpoint(...)`.
///
/// # Safety
/// A live domain, an entry of the `fi_getinfo` answer it was opened
/// from, an out pointer.
#[inline]
pub unsafe fn fi_endpoint(
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    // SAFETY: a live domain (caller), whose ops table the provider set.
    unsafe { op!((*domain).ops, endpoint, c_int)(domain, info, ep, context) }
}

/// `fi_ep_bind`: `ep->fid.ops->bind(&ep->fid, bfid, flags)`.
///
/// # Safety
/// A live endpoint and a live object (CQ, AV) of the same domain.
#[inline]
pub unsafe fn fi_ep_bind(ep: *mut fid_ep, bfid: *mut fid, flags: u64) -> c_int {
    // SAFETY: a live endpoint (caller), whose fid ops the provider set.
    unsafe { op!((*ep).fid.ops, bind, c_int)(&raw mut (*ep).fid, bfid, flags) }
}

/// `fi_enable`: `fi_control(&ep->fid, FI_ENABLE, NULL)`.
///
/// # Safety
/// A live, bound endpoint.
#[inline]
pub unsafe fn fi_enable(ep: *mut fid_ep) -> c_int {
    // SAFETY: a live endpoint (caller); its fid is a field of it.
    unsafe { super::fi_control(&raw mut (*ep).fid, ENABLE, std::ptr::null_mut()) }
}

/// `fi_send`: `ep->msg->send(...)`.
///
/// # Safety
/// A live endpoint; the buffer stays valid until the completion.
#[inline]
pub unsafe fn fi_send(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    dest_addr: fi_addr_t,
    context: *mut c_void,
) -> isize {
    // SAFETY: a live endpoint (caller), whose msg table the provider set.
    unsafe { op!((*ep).msg, send, isize)(ep, buf, len, desc, dest_addr, context) }
}

/// `fi_inject`: `ep->msg->inject(...)`.
///
/// # Safety
/// A live endpoint; `len` readable bytes at `buf`, at most the inject size.
#[inline]
pub unsafe fn fi_inject(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    dest_addr: fi_addr_t,
) -> isize {
    // SAFETY: a live endpoint (caller), whose msg table the provider set.
    unsafe { op!((*ep).msg, inject, isize)(ep, buf, len, dest_addr) }
}

/// `fi_recv`: `ep->msg->recv(...)`.
///
/// # Safety
/// A live endpoint; the buffer stays valid until the completion.
#[inline]
pub unsafe fn fi_recv(
    ep: *mut fid_ep,
    buf: *mut c_void,
    len: usize,
    desc: *mut c_void,
    src_addr: fi_addr_t,
    context: *mut c_void,
) -> isize {
    // SAFETY: a live endpoint (caller), whose msg table the provider set.
    unsafe { op!((*ep).msg, recv, isize)(ep, buf, len, desc, src_addr, context) }
}
