//! The fabric object: the root of every other libfabric object.

use super::error::{check, FiError};
use super::info::Info;
use libfabric_sys as sys;
use std::ptr;
use std::sync::Arc;

/// An open fabric (`fi_fabric`), closed on drop after everything opened
/// from it (each child holds an `Arc` to its parent).
pub struct Fabric {
    ptr: *mut sys::fid_fabric,
    info: Info,
    provider: Arc<str>,
}

// SAFETY: the fabric object is only used to open domains and to be
// closed; libfabric allows that from any thread (no per-thread state).
unsafe impl Send for Fabric {}
// SAFETY: as above; opening domains is thread safe at the fabric level.
unsafe impl Sync for Fabric {}

impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fabric")
            .field("provider", &self.provider)
            .finish()
    }
}

impl Fabric {
    /// Open the fabric of `info`'s first entry; keeps `info` for the
    /// domain and endpoint.
    pub fn open(info: Info) -> Result<Arc<Self>, FiError> {
        let provider: Arc<str> = info.provider().into();
        let mut ptr = ptr::null_mut();
        // SAFETY: fabric_attr of an entry fi_getinfo returned is valid; the
        // out pointer receives the new fabric.
        let ret = unsafe {
            info.lib()
                .fi_fabric((*info.raw()).fabric_attr, &mut ptr, ptr::null_mut())
        };
        check(
            i64::from(ret),
            || format!("fi_fabric {}", info.fabric_name()),
            &provider,
        )?;
        Ok(Arc::new(Fabric {
            ptr,
            info,
            provider,
        }))
    }

    /// The info the fabric was opened from.
    pub fn info(&self) -> &Info {
        &self.info
    }

    /// The provider's name, for error messages.
    pub fn provider(&self) -> &Arc<str> {
        &self.provider
    }

    pub(crate) fn raw(&self) -> *mut sys::fid_fabric {
        self.ptr
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        // SAFETY: every child holds an Arc to this fabric, so all are closed.
        unsafe { super::close::close(&mut (*self.ptr).fid, "fabric", &self.provider) }
    }
}
