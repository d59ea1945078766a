//! `fi_getinfo`: asking libfabric for a provider that offers what we need.

use super::error::{check, FiError};
use libfabric_sys::{self as sys, Library};
use std::ffi::{CStr, CString};
use std::ptr;
use std::sync::Arc;

/// The libfabric API version rgex is written against (an older library
/// is refused when it is loaded).
pub const API_VERSION: u32 = sys::MIN_VERSION;

/// What to ask `fi_getinfo` for. Zero or `None` fields leave the choice
/// to the provider.
#[derive(Clone, Debug, Default)]
pub struct Hints {
    /// Capabilities (`FI_MSG | FI_RMA | ...`).
    pub caps: u64,
    /// Modes the application supports (`FI_CONTEXT`, `FI_CONTEXT2`).
    pub mode: u64,
    /// Endpoint type (`FI_EP_RDM`).
    pub ep_type: sys::fi_ep_type,
    /// Provider name, as `RGEX_OFI_PROVIDER` spells it (`tcp;ofi_rxm`).
    pub provider: Option<String>,
    /// Domain name (`lo`, `mlx5_0`, ...).
    pub domain: Option<String>,
    /// Node to bind to (`127.0.0.1`); used with `FI_SOURCE`.
    pub node: Option<String>,
    /// Memory-registration modes the application supports.
    pub mr_mode: u64,
    /// Threading model the application guarantees.
    pub threading: sys::fi_threading,
    /// Address-vector type.
    pub av_type: sys::fi_av_type,
    /// Transmit ordering wanted (`FI_ORDER_SAS | ...`).
    pub tx_msg_order: u64,
    /// Receive ordering wanted.
    pub rx_msg_order: u64,
    /// Default transmit operation flags (`FI_DELIVERY_COMPLETE`).
    pub tx_op_flags: u64,
    /// Data progress model wanted (`FI_PROGRESS_MANUAL`; 0 is
    /// `FI_PROGRESS_UNSPEC`: the provider's default).
    pub data_progress: sys::fi_progress,
    /// Transmit queue depth wanted (0: the provider's default).
    pub tx_size: usize,
    /// Receive queue depth wanted (0: the provider's default).
    pub rx_size: usize,
}

/// The list `fi_getinfo` returned, freed on drop. The first entry is the
/// provider's best match.
pub struct Info {
    ptr: *mut sys::fi_info,
    lib: &'static Library,
}

// SAFETY: an Info owns its fi_info list exclusively; libfabric keeps no
// reference to it, so it may move to another thread.
unsafe impl Send for Info {}
// SAFETY: shared access only reads the list (every method takes &self and
// reads fields); nothing mutates it after fi_getinfo returned.
unsafe impl Sync for Info {}

impl std::fmt::Debug for Info {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Info")
            .field("provider", &self.provider())
            .field("domain", &self.domain_name())
            .field("caps", &format_args!("{:#x}", self.caps()))
            .field("mr_mode", &format_args!("{:#x}", self.mr_mode()))
            .finish()
    }
}

fn c_dup(s: &str, what: &str) -> Result<*mut std::os::raw::c_char, FiError> {
    let c = CString::new(s).map_err(|_| {
        FiError::new(
            i64::from(sys::FI_EINVAL),
            format!("{what} {s:?} contains a NUL byte"),
            "(none)".into(),
        )
    })?;
    // SAFETY: strdup copies a valid NUL-terminated string into malloc'd
    // memory, which fi_freeinfo frees with free().
    let p = unsafe { libc::strdup(c.as_ptr()) };
    if p.is_null() {
        return Err(FiError::new(
            i64::from(sys::FI_ENOMEM),
            format!("copying {what}"),
            "(none)".into(),
        ));
    }
    Ok(p)
}

impl Info {
    /// Call `fi_getinfo` with `hints`. An empty answer is an error naming
    /// the provider and capabilities asked for.
    pub fn get(h: &Hints) -> Result<Info, FiError> {
        let asked: Arc<str> = h.provider.clone().unwrap_or_else(|| "(any)".into()).into();
        let lib = Library::system()
            .map_err(|e| FiError::new(i64::from(sys::FI_ENOSYS), e.why, asked.clone()))?;
        // fi_allocinfo returns a zeroed fi_info with its attribute structs
        // allocated, or null.
        let hints = lib.fi_allocinfo();
        if hints.is_null() {
            return Err(FiError::new(
                i64::from(sys::FI_ENOMEM),
                "fi_allocinfo",
                asked,
            ));
        }
        let guard = Info { ptr: hints, lib };
        // SAFETY: `hints` and its attribute structs were allocated by
        // fi_allocinfo and are exclusively ours until freed by `guard`;
        // strings we store are malloc'd, as fi_freeinfo expects.
        unsafe {
            let i = &mut *hints;
            i.caps = h.caps;
            i.mode = h.mode;
            (*i.ep_attr).type_ = h.ep_type;
            (*i.domain_attr).mr_mode = h.mr_mode as i32;
            (*i.domain_attr).threading = h.threading;
            (*i.domain_attr).av_type = h.av_type;
            (*i.domain_attr).data_progress = h.data_progress;
            (*i.tx_attr).msg_order = h.tx_msg_order;
            (*i.rx_attr).msg_order = h.rx_msg_order;
            (*i.tx_attr).op_flags = h.tx_op_flags;
            (*i.tx_attr).size = h.tx_size;
            (*i.rx_attr).size = h.rx_size;
            if let Some(p) = &h.provider {
                (*i.fabric_attr).prov_name = c_dup(p, "RGEX_OFI_PROVIDER")?;
            }
            if let Some(d) = &h.domain {
                (*i.domain_attr).name = c_dup(d, "RGEX_OFI_DOMAIN")?;
            }
        }
        let node = match &h.node {
            Some(n) => Some(CString::new(n.as_str()).map_err(|_| {
                FiError::new(
                    i64::from(sys::FI_EINVAL),
                    "node name has a NUL byte",
                    asked.clone(),
                )
            })?),
            None => None,
        };
        let mut out = ptr::null_mut();
        let flags = if node.is_some() { sys::FI_SOURCE } else { 0 };
        // SAFETY: valid hints, an optional NUL-terminated node, and an out
        // pointer; fi_getinfo allocates the answer list for us to free.
        let ret = unsafe {
            lib.fi_getinfo(
                API_VERSION,
                node.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
                ptr::null(),
                flags,
                hints,
                &mut out,
            )
        };
        drop(guard);
        check(
            i64::from(ret),
            || {
                format!(
                    "fi_getinfo (RDM endpoint, caps {:#x}, mr_mode {:#x}, tx order {:#x}, tx flags {:#x}, data progress {}, domain {})",
                    h.caps,
                    h.mr_mode,
                    h.tx_msg_order,
                    h.tx_op_flags,
                    h.data_progress,
                    h.domain.as_deref().unwrap_or("(any)")
                )
            },
            &asked,
        )?;
        if out.is_null() {
            return Err(FiError::new(
                i64::from(sys::FI_ENODATA),
                "fi_getinfo returned nothing",
                asked,
            ));
        }
        Ok(Info { ptr: out, lib })
    }

    /// The library the list came from.
    pub(crate) fn lib(&self) -> &'static Library {
        self.lib
    }

    /// The first (best) entry as a raw pointer, for opening objects.
    pub(crate) fn raw(&self) -> *mut sys::fi_info {
        self.ptr
    }

    fn first(&self) -> &sys::fi_info {
        // SAFETY: ptr is a non-null fi_info list owned by self.
        unsafe { &*self.ptr }
    }

    fn cstr(p: *const std::os::raw::c_char) -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: libfabric's name fields are NUL-terminated strings owned
        // by the info list, which outlives this call.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// The provider's name (`tcp;ofi_rxm`, `sockets`, `shm`).
    pub fn provider(&self) -> String {
        // SAFETY: fabric_attr is allocated for every entry fi_getinfo returns.
        Self::cstr(unsafe { (*self.first().fabric_attr).prov_name })
    }

    /// The domain's name (`lo`, `shm`, a NIC name).
    pub fn domain_name(&self) -> String {
        // SAFETY: domain_attr is allocated for every entry fi_getinfo returns.
        Self::cstr(unsafe { (*self.first().domain_attr).name })
    }

    /// The fabric's name.
    pub fn fabric_name(&self) -> String {
        // SAFETY: as for provider().
        Self::cstr(unsafe { (*self.first().fabric_attr).name })
    }

    /// Capabilities granted.
    pub fn caps(&self) -> u64 {
        self.first().caps
    }

    /// Modes the provider requires.
    pub fn mode(&self) -> u64 {
        self.first().mode
    }

    /// Memory-registration modes the provider requires.
    pub fn mr_mode(&self) -> u64 {
        // SAFETY: domain_attr is allocated for every entry.
        (unsafe { (*self.first().domain_attr).mr_mode }) as u32 as u64
    }

    /// Threading model of the domain.
    pub fn threading(&self) -> sys::fi_threading {
        // SAFETY: domain_attr is allocated for every entry.
        unsafe { (*self.first().domain_attr).threading }
    }

    /// Data progress model (`FI_PROGRESS_AUTO` / `FI_PROGRESS_MANUAL`).
    pub fn data_progress(&self) -> sys::fi_progress {
        // SAFETY: domain_attr is allocated for every entry.
        unsafe { (*self.first().domain_attr).data_progress }
    }

    /// Transmit ordering.
    pub fn tx_msg_order(&self) -> u64 {
        // SAFETY: tx_attr is allocated for every entry.
        unsafe { (*self.first().tx_attr).msg_order }
    }

    /// Default transmit operation flags.
    pub fn tx_op_flags(&self) -> u64 {
        // SAFETY: tx_attr is allocated for every entry.
        unsafe { (*self.first().tx_attr).op_flags }
    }

    /// Set the default transmit operation flags of the chosen entry (the
    /// endpoint opened from it uses them for calls without flags, such as
    /// `fi_send`).
    pub fn set_tx_op_flags(&mut self, flags: u64) {
        // SAFETY: ptr is a non-null fi_info list owned (exclusively, by
        // `&mut self`) by this value; tx_attr is allocated for every entry.
        unsafe { (*(*self.ptr).tx_attr).op_flags = flags }
    }

    /// Transmit queue depth.
    pub fn tx_size(&self) -> usize {
        // SAFETY: tx_attr is allocated for every entry.
        unsafe { (*self.first().tx_attr).size }
    }

    /// Largest message the transmit side sends inline (`fi_inject`).
    pub fn inject_size(&self) -> usize {
        // SAFETY: tx_attr is allocated for every entry.
        unsafe { (*self.first().tx_attr).inject_size }
    }

    /// Receive queue depth.
    pub fn rx_size(&self) -> usize {
        // SAFETY: rx_attr is allocated for every entry.
        unsafe { (*self.first().rx_attr).size }
    }

    /// Largest message (and RMA transfer) the endpoint carries.
    pub fn max_msg_size(&self) -> usize {
        // SAFETY: ep_attr is allocated for every entry.
        unsafe { (*self.first().ep_attr).max_msg_size }
    }

    /// Bytes of a memory-registration key.
    pub fn mr_key_size(&self) -> usize {
        // SAFETY: domain_attr is allocated for every entry.
        unsafe { (*self.first().domain_attr).mr_key_size }
    }

    /// Names of the bits of `mr_mode()` (for messages and the README).
    pub fn mr_mode_names(bits: u64) -> Vec<&'static str> {
        const NAMES: [(u64, &str); 10] = [
            (sys::FI_MR_LOCAL, "FI_MR_LOCAL"),
            (sys::FI_MR_RAW, "FI_MR_RAW"),
            (sys::FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"),
            (sys::FI_MR_ALLOCATED, "FI_MR_ALLOCATED"),
            (sys::FI_MR_PROV_KEY, "FI_MR_PROV_KEY"),
            (sys::FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"),
            (sys::FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"),
            (sys::FI_MR_ENDPOINT, "FI_MR_ENDPOINT"),
            (sys::FI_MR_HMEM, "FI_MR_HMEM"),
            (sys::FI_MR_COLLECTIVE, "FI_MR_COLLECTIVE"),
        ];
        NAMES
            .iter()
            .filter(|(b, _)| bits & b != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        // SAFETY: ptr came from fi_getinfo or fi_allocinfo and is freed once.
        unsafe { self.lib.fi_freeinfo(self.ptr) };
    }
}
