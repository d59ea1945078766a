//! The domain: one NIC (or the loopback/shm pseudo-device) opened for use.

use super::error::{check, FiError};
use super::fabric::Fabric;
use libfabric_sys as sys;
use std::ptr;
use std::sync::Arc;

/// An open domain (`fi_domain`), closed on drop after its endpoints,
/// address vectors, completion queues and memory regions.
pub struct Domain {
    ptr: *mut sys::fid_domain,
    fabric: Arc<Fabric>,
}

// SAFETY: the domain's calls (opening objects, registering memory,
// querying atomics) are made under the conduit's lock, which is what
// FI_THREAD_DOMAIN requires; moving the handle between threads is fine.
unsafe impl Send for Domain {}
// SAFETY: as above: shared use is serialised by the owner (see the
// conduit's `Net` lock), the handle itself has no thread affinity.
unsafe impl Sync for Domain {}

impl std::fmt::Debug for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Domain")
            .field("provider", self.provider())
            .finish()
    }
}

impl Domain {
    /// Open the domain of the fabric's info.
    pub fn open(fabric: &Arc<Fabric>) -> Result<Arc<Self>, FiError> {
        let mut ptr = ptr::null_mut();
        // SAFETY: a live fabric and the info it was opened from.
        let ret =
            unsafe { sys::fi_domain(fabric.raw(), fabric.info().raw(), &mut ptr, ptr::null_mut()) };
        check(
            i64::from(ret),
            || format!("fi_domain {}", fabric.info().domain_name()),
            fabric.provider(),
        )?;
        Ok(Arc::new(Domain {
            ptr,
            fabric: fabric.clone(),
        }))
    }

    /// The fabric this domain belongs to.
    pub fn fabric(&self) -> &Arc<Fabric> {
        &self.fabric
    }

    /// The provider's name, for error messages.
    pub fn provider(&self) -> &Arc<str> {
        self.fabric.provider()
    }

    pub(crate) fn raw(&self) -> *mut sys::fid_domain {
        self.ptr
    }

    /// `fi_query_atomic`: true if the provider performs `op` on
    /// `datatype`; `flags` is 0, `FI_FETCH_ATOMIC` or `FI_COMPARE_ATOMIC`.
    pub fn query_atomic(&self, datatype: sys::fi_datatype, op: sys::fi_op, flags: u64) -> bool {
        let mut attr = sys::fi_atomic_attr::default();
        // SAFETY: a live domain and a local attribute struct to fill.
        let ret = unsafe { sys::fi_query_atomic(self.ptr, datatype, op, &mut attr, flags) };
        ret == 0 && attr.count >= 1
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        // SAFETY: every object opened from this domain holds an Arc to it,
        // so all are closed by now.
        unsafe { super::close::close(&mut (*self.ptr).fid, "domain", self.provider()) }
    }
}
