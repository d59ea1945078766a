//! `<rdma/fi_cm.h>`: endpoint names.

use super::op;
use crate::bindings::{fid, fid_ep};
use std::ffi::{c_int, c_void};

/// `fi_getname`: `container_of(fid, struct fid_ep, fid)->cm->getname(...)`.
///
/// # Safety
/// `fid` is the `fid` of a live endpoint; `*addrlen` bytes at `addr`.
#[inline]
pub unsafe fn fi_getname(fid: *mut fid, addr: *mut c_void, addrlen: *mut usize) -> c_int {
    // `fid` is the first field of `struct fid_ep` (offset 0), so
    // container_of is a cast.
    const _: () = assert!(std::mem::offset_of!(fid_ep, fid) == 0);
    let ep = fid.cast::<fid_ep>();
    // SAFETY: the fid of a live endpoint (caller), whose cm table the
    // provider set.
    unsafe { op!((*ep).cm, getname, c_int)(fid, addr, addrlen) }
}
