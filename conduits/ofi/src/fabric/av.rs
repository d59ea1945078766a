//! The address vector: endpoint names of every rank, turned into
//! `fi_addr_t` handles.

use super::domain::Domain;
use super::error::{check, FiError};
use libfabric_sys as sys;
use std::ptr;
use std::sync::Arc;

/// An address vector of type `FI_AV_TABLE` (`fi_av_open`), closed on drop
/// after the endpoints bound to it.
pub struct AddressVector {
    ptr: *mut sys::fid_av,
    domain: Arc<Domain>,
}

// SAFETY: the AV is used under its owner's lock (FI_THREAD_DOMAIN);
// the handle has no thread affinity.
unsafe impl Send for AddressVector {}
// SAFETY: as above.
unsafe impl Sync for AddressVector {}

impl AddressVector {
    /// Open a table AV sized for `count` addresses.
    pub fn open(domain: &Arc<Domain>, count: usize) -> Result<Arc<Self>, FiError> {
        let mut attr = sys::fi_av_attr {
            type_: sys::FI_AV_TABLE,
            count,
            ..Default::default()
        };
        let mut ptr = ptr::null_mut();
        // SAFETY: a live domain, a valid attribute struct, an out pointer.
        let ret = unsafe { sys::fi_av_open(domain.raw(), &mut attr, &mut ptr, ptr::null_mut()) };
        check(
            i64::from(ret),
            || format!("fi_av_open ({count} entries)"),
            domain.provider(),
        )?;
        Ok(Arc::new(AddressVector {
            ptr,
            domain: domain.clone(),
        }))
    }

    /// Insert `names` (each as `fi_getname` returned it), in order; the
    /// handles come back in the same order.
    pub fn insert(&self, names: &[Vec<u8>]) -> Result<Vec<sys::fi_addr_t>, FiError> {
        let mut out = Vec::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            let mut addr = sys::FI_ADDR_NOTAVAIL;
            // SAFETY: one address of the provider's format at `n`, one
            // output slot; synchronous insert (no event queue bound).
            let ret = unsafe {
                sys::fi_av_insert(
                    self.ptr,
                    n.as_ptr().cast(),
                    1,
                    &mut addr,
                    0,
                    ptr::null_mut(),
                )
            };
            if ret != 1 || addr == sys::FI_ADDR_NOTAVAIL {
                let code = if ret < 0 {
                    i64::from(ret)
                } else {
                    -i64::from(sys::FI_EINVAL)
                };
                return Err(FiError::new(
                    code,
                    format!("fi_av_insert of rank {i}'s address ({} bytes)", n.len()),
                    self.domain.provider().clone(),
                ));
            }
            out.push(addr);
        }
        Ok(out)
    }

    pub(crate) fn raw_fid(&self) -> *mut sys::fid {
        // SAFETY: ptr is a live AV; taking the address of its embedded fid.
        unsafe { &mut (*self.ptr).fid }
    }
}

impl Drop for AddressVector {
    fn drop(&mut self) {
        // SAFETY: endpoints bound to this AV hold an Arc to it, so they are
        // closed already.
        unsafe { super::close::close(&mut (*self.ptr).fid, "av", self.domain.provider()) }
    }
}
