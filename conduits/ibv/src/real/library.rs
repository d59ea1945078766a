//! libibverbs, loaded at run time: `dlopen` of `libibverbs.so.1` and
//! the exported verbs resolved by `dlvsym` at their `IBVERBS_1.1`
//! version.
//!
//! Nothing is linked at build time: a machine without libibverbs builds
//! and runs rgex, and only opening the real backend says what is
//! missing. Every exported verb the backend calls has an older
//! `IBVERBS_1.0` compat version too (with other struct layouts), so
//! each is resolved at `IBVERBS_1.1` explicitly rather than by plain
//! `dlsym`'s default. The inline verbs (posts and polls) are not
//! exported: they go through the context's ops table (`super::abi`).
//!
//! The library is loaded once per process and never unloaded: the
//! providers it loads (`libmlx5`, ...) and the contexts opened stay
//! tied to it.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use super::abi::{
    IbvCompChannel, IbvContext, IbvCq, IbvDevice, IbvDeviceAttr, IbvGid, IbvMr, IbvPd,
    IbvPortAttrCompat, IbvQp, IbvQpAttr, IbvQpInitAttr, IbvSrq, IbvSrqInitAttr,
};
use crate::verbs::{VerbsError, VerbsResult};

/// The library's soname.
pub const LIBRARY: &str = "libibverbs.so.1";

/// The environment variable naming another file to load instead of
/// [`LIBRARY`] (a path, or a name the dynamic loader searches).
pub const LIBRARY_ENV: &str = "RGEX_IBV_LIBRARY";

/// The symbol version every verb is resolved at.
const VERSION: &str = "IBVERBS_1.1";

/// Declares the table of exported verbs and its resolver.
macro_rules! verbs_table {
    ($($name:ident: fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The exported verbs the backend calls, resolved at `IBVERBS_1.1`.
        pub(crate) struct Fns {
            $(pub(crate) $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }

        impl Fns {
            /// Resolve every verb in `handle`; the first one missing is
            /// named in the error.
            ///
            /// # Safety
            /// `handle` is a live `dlopen` handle of a libibverbs whose
            /// `IBVERBS_1.1` symbols have the signatures declared here.
            unsafe fn resolve(handle: *mut c_void) -> Result<Fns, &'static str> {
                Ok(Fns {
                    $($name: {
                        // SAFETY: the handle is live (caller); the name
                        // and version are NUL-terminated.
                        let p = unsafe {
                            symbol(handle, concat!(stringify!($name), "\0"))
                        };
                        if p.is_null() {
                            return Err(stringify!($name));
                        }
                        // SAFETY: a non-null code address of this verb,
                        // whose C signature at IBVERBS_1.1 is the one
                        // declared (caller); fn pointers and data
                        // pointers have one size on the supported targets.
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> $ret>(p)
                        }
                    },)*
                })
            }
        }
    };
}

verbs_table! {
    ibv_get_device_list: fn(*mut c_int) -> *mut *mut IbvDevice;
    ibv_free_device_list: fn(*mut *mut IbvDevice) -> ();
    ibv_get_device_name: fn(*mut IbvDevice) -> *const c_char;
    ibv_open_device: fn(*mut IbvDevice) -> *mut IbvContext;
    ibv_close_device: fn(*mut IbvContext) -> c_int;
    ibv_query_device: fn(*mut IbvContext, *mut IbvDeviceAttr) -> c_int;
    ibv_query_port: fn(*mut IbvContext, u8, *mut IbvPortAttrCompat) -> c_int;
    ibv_query_gid: fn(*mut IbvContext, u8, c_int, *mut IbvGid) -> c_int;
    ibv_alloc_pd: fn(*mut IbvContext) -> *mut IbvPd;
    ibv_dealloc_pd: fn(*mut IbvPd) -> c_int;
    ibv_reg_mr: fn(*mut IbvPd, *mut c_void, usize, c_int) -> *mut IbvMr;
    ibv_dereg_mr: fn(*mut IbvMr) -> c_int;
    ibv_create_cq: fn(*mut IbvContext, c_int, *mut c_void, *mut IbvCompChannel, c_int) -> *mut IbvCq;
    ibv_destroy_cq: fn(*mut IbvCq) -> c_int;
    ibv_create_srq: fn(*mut IbvPd, *mut IbvSrqInitAttr) -> *mut IbvSrq;
    ibv_destroy_srq: fn(*mut IbvSrq) -> c_int;
    ibv_create_qp: fn(*mut IbvPd, *mut IbvQpInitAttr) -> *mut IbvQp;
    ibv_destroy_qp: fn(*mut IbvQp) -> c_int;
    ibv_modify_qp: fn(*mut IbvQp, *mut IbvQpAttr, c_int) -> c_int;
    ibv_query_qp: fn(*mut IbvQp, *mut IbvQpAttr, c_int, *mut IbvQpInitAttr) -> c_int;
}

/// `name` (NUL-terminated) at [`VERSION`] in `handle`, or null.
///
/// # Safety
/// `handle` is a live `dlopen` handle.
unsafe fn symbol(handle: *mut c_void, name: &'static str) -> *mut c_void {
    debug_assert!(name.ends_with('\0'));
    #[cfg(target_env = "gnu")]
    {
        let version = concat!("IBVERBS_1.1", "\0");
        // SAFETY: live handle (caller), NUL-terminated strings.
        unsafe { libc::dlvsym(handle, name.as_ptr().cast(), version.as_ptr().cast()) }
    }
    #[cfg(not(target_env = "gnu"))]
    {
        // SAFETY: live handle (caller), NUL-terminated string. Without
        // dlvsym the loader's default version is taken, which rdma-core
        // marks as IBVERBS_1.1 (`@@`).
        unsafe { libc::dlsym(handle, name.as_ptr().cast()) }
    }
}

/// A loaded libibverbs with its verbs resolved.
pub struct Library {
    /// The file the loader found (from `dladdr`), for messages.
    path: String,
    /// The verbs.
    pub(crate) fns: Fns,
}

// SAFETY: the table holds code addresses of a library that is never
// unloaded; libibverbs' exported verbs may be called from any thread.
unsafe impl Send for Library {}
// SAFETY: as for Send: the table is read-only after loading.
unsafe impl Sync for Library {}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Library {
    /// The process's libibverbs: [`LIBRARY`], or the file
    /// [`LIBRARY_ENV`] names, loaded on first use (a failure is kept
    /// and returned again).
    pub fn system() -> VerbsResult<&'static Library> {
        static SYSTEM: OnceLock<VerbsResult<Library>> = OnceLock::new();
        SYSTEM
            .get_or_init(|| {
                let name = std::env::var(LIBRARY_ENV)
                    .ok()
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| LIBRARY.to_string());
                Library::load(&name)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Load `name` (a file name the dynamic loader searches, or a path)
    /// with `RTLD_NOW | RTLD_LOCAL` and resolve the verbs. A file that
    /// cannot be loaded, or that lacks a verb at `IBVERBS_1.1`, is
    /// [`VerbsError::Library`], naming the file, where it was looked
    /// for, and the packages that provide it.
    ///
    /// The library stays loaded for the life of the process.
    pub fn load(name: &str) -> VerbsResult<Library> {
        let cname = CString::new(name).map_err(|_| VerbsError::Library {
            why: format!("cannot load {name:?}: the name contains a NUL byte"),
        })?;
        // SAFETY: a NUL-terminated name; loading runs the library's
        // constructors, which is what using it requires.
        let handle = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(VerbsError::Library {
                why: format!(
                    "cannot load {name}: {}; looked for {}; {}",
                    dlerror_text(),
                    where_looked(name),
                    INSTALL_HINT
                ),
            });
        }
        // SAFETY: a live handle; a library exporting these names at
        // IBVERBS_1.1 is rdma-core's libibverbs with these signatures.
        match unsafe { Fns::resolve(handle) } {
            Ok(fns) => {
                let path = loaded_path(fns.ibv_get_device_list as *const c_void)
                    .unwrap_or_else(|| name.to_string());
                Ok(Library { path, fns })
            }
            Err(missing) => {
                let path = loaded_path_of_handle(handle).unwrap_or_else(|| name.to_string());
                // SAFETY: the handle is ours and nothing resolved from it
                // is kept.
                unsafe { libc::dlclose(handle) };
                Err(VerbsError::Library {
                    why: format!(
                        "{path} (loaded as {name}) is not a usable libibverbs: it has no \
                         {missing}@{VERSION} (rdma-core's libibverbs 1.1 ABI is needed); {INSTALL_HINT}"
                    ),
                })
            }
        }
    }

    /// The file that was loaded.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Which packages provide the library.
const INSTALL_HINT: &str = "install libibverbs and its providers: Debian/Ubuntu packages \
     libibverbs1 and ibverbs-providers, RHEL/Fedora/SUSE packages libibverbs and rdma-core";

/// Where the dynamic loader looks for `name`, for the error.
fn where_looked(name: &str) -> String {
    if name.contains('/') {
        return format!("at the path {name}");
    }
    let ld_path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let ld_path = if ld_path.is_empty() {
        "LD_LIBRARY_PATH unset".to_string()
    } else {
        format!("LD_LIBRARY_PATH={ld_path}")
    };
    format!(
        "by the dynamic loader ({ld_path}, then the ld.so cache, /lib and /usr/lib; \
         {LIBRARY_ENV} names another file)"
    )
}

/// The pending `dlerror()` text.
fn dlerror_text() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by
    // the loader, valid until the next dl call on this thread; it is
    // copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dlopen error".to_string()
    } else {
        // SAFETY: non-null and NUL-terminated (dlerror's contract).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// The file holding the code address `addr`.
fn loaded_path(addr: *const c_void) -> Option<String> {
    // SAFETY: Dl_info is plain data; all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// The file behind `handle` (via a symbol every ELF object defines is
/// not guaranteed, so this asks for the link map's name).
fn loaded_path_of_handle(handle: *mut c_void) -> Option<String> {
    #[cfg(target_env = "gnu")]
    {
        let mut map: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: RTLD_DI_LINKMAP writes a `struct link_map *` into
        // `map`; the handle is live (caller).
        let rc = unsafe {
            libc::dlinfo(
                handle,
                libc::RTLD_DI_LINKMAP,
                (&mut map as *mut *mut c_void).cast(),
            )
        };
        if rc != 0 || map.is_null() {
            return None;
        }
        /// The head of glibc's `struct link_map` (stable, in <link.h>).
        #[repr(C)]
        struct LinkMapHead {
            l_addr: usize,
            l_name: *const c_char,
        }
        // SAFETY: a live link map entry; `l_name` is its second field,
        // a NUL-terminated path (possibly empty).
        let name = unsafe { (*map.cast::<LinkMapHead>()).l_name };
        if name.is_null() {
            return None;
        }
        // SAFETY: NUL-terminated, owned by the loader.
        let s = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        (!s.is_empty()).then_some(s)
    }
    #[cfg(not(target_env = "gnu"))]
    {
        let _ = handle;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_names_the_packages() {
        let Err(VerbsError::Library { why }) = Library::load("librgex-no-such-ibverbs.so.1") else {
            panic!("a missing library must be a Library error");
        };
        for needle in [
            "librgex-no-such-ibverbs.so.1",
            "dynamic loader",
            "libibverbs1",
            "ibverbs-providers",
            "rdma-core",
        ] {
            assert!(why.contains(needle), "{needle:?} not in {why:?}");
        }
    }

    #[test]
    #[cfg(target_env = "gnu")]
    fn a_library_without_the_verbs_is_refused() {
        // libc is loadable everywhere this builds but exports no verbs.
        let Err(VerbsError::Library { why }) = Library::load("libc.so.6") else {
            panic!("libc is not libibverbs");
        };
        assert!(
            why.contains("ibv_get_device_list@IBVERBS_1.1"),
            "the first verb missing is named: {why}"
        );
    }
}
