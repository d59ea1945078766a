//! Closing a libfabric object when its owner drops: one `fi_close`, and a
//! failure logged as an error (a drop has no caller to return it to).

use super::FiError;
use libfabric_sys as sys;
use std::sync::Arc;

/// `fi_close` on `fid`, the object `what` names (`"cq"`, `"endpoint"`...)
/// of `provider`; a failure is logged, not returned.
///
/// # Safety
/// `fid` must be a live object, closed here for the only time, with every
/// object opened from it or bound to it closed already (each holds an `Arc`
/// to its parent, so a parent's drop runs after its children's).
pub(crate) unsafe fn close(fid: *mut sys::fid, what: &str, provider: &Arc<str>) {
    // SAFETY: the caller's contract.
    let ret = unsafe { sys::fi_close(fid) };
    if ret != 0 {
        tracing::error!(
            "{}",
            FiError::new(
                i64::from(ret),
                format!("fi_close({what})"),
                provider.clone()
            )
        );
    }
}
