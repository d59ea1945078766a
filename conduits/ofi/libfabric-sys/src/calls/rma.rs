//! `<rdma/fi_rma.h>`: RMA messages.

use super::op;
use crate::bindings::{fi_msg_rma, fid_ep};

/// `fi_writemsg`: `ep->rma->writemsg(...)`.
///
/// # Safety
/// A live endpoint; the message's local and remote ranges valid until
/// the completion.
#[inline]
pub unsafe fn fi_writemsg(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize {
    // SAFETY: a live endpoint (caller), whose rma table the provider set.
    unsafe { op!((*ep).rma, writemsg, isize)(ep, msg, flags) }
}

/// `fi_readmsg`: `ep->rma->readmsg(...)`.
///
/// # Safety
/// As [`fi_writemsg`].
#[inline]
pub unsafe fn fi_readmsg(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize {
    // SAFETY: a live endpoint (caller), whose rma table the provider set.
    unsafe { op!((*ep).rma, readmsg, isize)(ep, msg, flags) }
}
