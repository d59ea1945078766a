//! Memory regions: memory registered with the domain, so the provider may
//! read it, write it, or let peers reach it.

use super::domain::Domain;
use super::endpoint::Endpoint;
use super::error::{check, FiError};
use libfabric_sys as sys;
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

/// A registered memory region (`fi_mr_reg`), closed on drop before the
/// endpoint it is bound to (`FI_MR_ENDPOINT`) and the domain.
pub struct MemoryRegion {
    ptr: *mut sys::fid_mr,
    base: *const u8,
    len: usize,
    key: u64,
    desc: *mut c_void,
    domain: Arc<Domain>,
    // Held so the endpoint outlives a region bound to it.
    _ep: Option<Arc<Endpoint>>,
}

// SAFETY: registration, key and descriptor are plain values after
// setup; closing happens under the owner's lock (FI_THREAD_DOMAIN).
unsafe impl Send for MemoryRegion {}
// SAFETY: shared use only reads the key and descriptor.
unsafe impl Sync for MemoryRegion {}

impl std::fmt::Debug for MemoryRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("base", &self.base)
            .field("len", &self.len)
            .field("key", &self.key)
            .finish()
    }
}

impl MemoryRegion {
    /// Register `len` bytes at `base` for `access` (`FI_SEND | FI_RECV |
    /// FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE`), asking for
    /// `key` (ignored under `FI_MR_PROV_KEY`). With `bind`, the region is
    /// bound to that endpoint and enabled (`FI_MR_ENDPOINT`).
    ///
    /// # Safety
    /// `base..base+len` must stay allocated until the region is dropped;
    /// with remote access, peers may write it at any time.
    pub unsafe fn register(
        domain: &Arc<Domain>,
        base: *const u8,
        len: usize,
        access: u64,
        key: u64,
        bind: Option<&Arc<Endpoint>>,
    ) -> Result<Self, FiError> {
        let mut ptr = ptr::null_mut();
        let what = || format!("fi_mr_reg of {len} bytes at {base:p} (requested key {key})");
        // SAFETY: a live domain; the caller keeps the memory allocated
        // while the region exists.
        let ret = unsafe {
            sys::fi_mr_reg(
                domain.raw(),
                base.cast(),
                len,
                access,
                0,
                key,
                0,
                &mut ptr,
                ptr::null_mut(),
            )
        };
        check(i64::from(ret), what, domain.provider())?;
        let mut mr = MemoryRegion {
            ptr,
            base,
            len,
            key: 0,
            desc: ptr::null_mut(),
            domain: domain.clone(),
            _ep: None,
        };
        if let Some(ep) = bind {
            // SAFETY: a live region and endpoint of the same domain.
            let ret = unsafe { sys::fi_mr_bind(ptr, ep.raw_fid(), 0) };
            check(
                i64::from(ret),
                || format!("fi_mr_bind ({})", what()),
                domain.provider(),
            )?;
            // SAFETY: a live region just bound to its endpoint.
            let ret = unsafe { sys::fi_mr_enable(ptr) };
            check(
                i64::from(ret),
                || format!("fi_mr_enable ({})", what()),
                domain.provider(),
            )?;
            mr._ep = Some(ep.clone());
        }
        // SAFETY: a live, enabled region.
        mr.key = unsafe { sys::fi_mr_key(ptr) };
        if mr.key == sys::FI_KEY_NOTAVAIL {
            return Err(FiError::new(
                -(sys::FI_ENOKEY as i64),
                format!("fi_mr_key ({}): no key available", what()),
                domain.provider().clone(),
            ));
        }
        // SAFETY: a live region.
        mr.desc = unsafe { sys::fi_mr_desc(ptr) };
        Ok(mr)
    }

    /// The key peers use to reach this region.
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The local descriptor to pass with buffers inside this region.
    pub fn desc(&self) -> *mut c_void {
        self.desc
    }

    /// The registered base address.
    pub fn base(&self) -> *const u8 {
        self.base
    }

    /// The registered length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty region.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True if `[p, p+len)` lies inside this region.
    pub fn contains(&self, p: *const u8, len: usize) -> bool {
        let (b, p) = (self.base as usize, p as usize);
        p >= b && p.checked_add(len).is_some_and(|end| end <= b + self.len)
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: a live region, closed once; operations using it finished
        // (the owner drops regions only after their completions).
        unsafe { super::close::close(&mut (*self.ptr).fid, "mr", self.domain.provider()) }
    }
}
