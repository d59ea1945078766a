//! `<rdma/fabric.h>`: closing and controlling any object.

use super::op;
use crate::bindings::{fid, FI_ENABLE, FI_GETWAIT};
use std::ffi::{c_int, c_void};

/// `fi_close(fid)`: `fid->ops->close(fid)`.
///
/// # Safety
/// `fid` is a live object, closed once, after everything opened from it.
#[inline]
pub unsafe fn fi_close(fid: *mut fid) -> c_int {
    // SAFETY: a live object (caller), whose ops table the provider set.
    unsafe { op!((*fid).ops, close, c_int)(fid) }
}

/// `fi_control(fid, command, arg)`: `fid->ops->control(...)`.
///
/// # Safety
/// A live object; `arg` as `command` requires.
#[inline]
pub unsafe fn fi_control(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    // SAFETY: a live object (caller), whose ops table the provider set.
    unsafe { op!((*fid).ops, control, c_int)(fid, command, arg) }
}

/// The `FI_ENABLE` control command, as `fi_control` takes it.
pub(crate) const ENABLE: c_int = FI_ENABLE as c_int;

/// The `FI_GETWAIT` control command, as `fi_control` takes it: the wait
/// object of a CQ opened with one (an fd for `FI_WAIT_FD`).
pub const GETWAIT: c_int = FI_GETWAIT as c_int;
