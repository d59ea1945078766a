//! libibverbs, loaded at run time through rgex-dl: `dlopen` of
//! `libibverbs.so.1` (or the file `RGEX_IBV_LIBRARY` names) and the
//! exported verbs resolved by `dlvsym` at their `IBVERBS_1.1` version.
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

use std::ffi::{c_char, c_int, c_void, CStr};

use super::abi::{
    IbvCompChannel, IbvContext, IbvCq, IbvDevice, IbvDeviceAttr, IbvGid, IbvMr, IbvPd,
    IbvPortAttrCompat, IbvQp, IbvQpAttr, IbvQpInitAttr, IbvSrq, IbvSrqInitAttr,
};
use crate::verbs::{VerbsError, VerbsResult};
use rgex_dl::{LoadError, Spec};

/// The library's soname.
pub const LIBRARY: &str = "libibverbs.so.1";

/// The environment variable naming another file to load instead of
/// [`LIBRARY`] (a path, or a name the dynamic loader searches).
pub const LIBRARY_ENV: &str = "RGEX_IBV_LIBRARY";

/// The symbol version every verb is resolved at.
const VERSION: &CStr = c"IBVERBS_1.1";

/// What is loaded, the variable that overrides it, and who provides it.
pub const SPEC: Spec = Spec {
    soname: LIBRARY,
    env: LIBRARY_ENV,
    what: "libibverbs",
    packages: "install libibverbs and its providers: Debian/Ubuntu packages \
               libibverbs1 and ibverbs-providers, RHEL/Fedora/SUSE packages libibverbs and rdma-core",
};

/// Declares the table of exported verbs and its resolver.
macro_rules! verbs_table {
    ($($name:ident: fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The exported verbs the backend calls, resolved at `IBVERBS_1.1`.
        pub(crate) struct Fns {
            $(pub(crate) $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }

        impl Fns {
            /// Resolve every verb in `lib`; the first one missing is
            /// named in the error.
            ///
            /// # Safety
            /// `lib` is a libibverbs whose `IBVERBS_1.1` symbols have the
            /// signatures declared here.
            unsafe fn resolve(lib: &rgex_dl::Library) -> Result<Fns, LoadError> {
                Ok(Fns {
                    $($name: {
                        let name = CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes())
                            .expect("a verb's name has no NUL inside");
                        let p = lib.symbol(name, VERSION).map_err(|e| {
                            LoadError::new(format!(
                                "{e} (rdma-core's libibverbs 1.1 ABI is needed)"
                            ))
                        })?;
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

/// The completion-channel verbs (a CQ's wait object), resolved apart
/// from [`Fns`]: a library without them still runs, with no wait object
/// (a progress thread then parks). `ibv_create_comp_channel` and
/// `ibv_destroy_comp_channel` exist at `IBVERBS_1.0` only (their struct
/// never changed), the event verbs at `IBVERBS_1.1`.
pub(crate) struct ChannelFns {
    pub(crate) ibv_create_comp_channel:
        unsafe extern "C" fn(*mut IbvContext) -> *mut IbvCompChannel,
    pub(crate) ibv_destroy_comp_channel: unsafe extern "C" fn(*mut IbvCompChannel) -> c_int,
    pub(crate) ibv_get_cq_event:
        unsafe extern "C" fn(*mut IbvCompChannel, *mut *mut IbvCq, *mut *mut c_void) -> c_int,
    pub(crate) ibv_ack_cq_events: unsafe extern "C" fn(*mut IbvCq, u32) -> (),
}

impl ChannelFns {
    /// The four verbs in `lib`, or `None` if one is missing.
    ///
    /// # Safety
    /// `lib` is rdma-core's libibverbs (these names at these versions
    /// have the signatures declared).
    unsafe fn resolve(lib: &rgex_dl::Library) -> Option<ChannelFns> {
        let at = |name: &CStr, version: &CStr| lib.symbol(name, version).ok();
        let v10 = c"IBVERBS_1.0";
        let create = at(c"ibv_create_comp_channel", v10)?;
        let destroy = at(c"ibv_destroy_comp_channel", v10)?;
        let get = at(c"ibv_get_cq_event", VERSION)?;
        let ack = at(c"ibv_ack_cq_events", VERSION)?;
        // SAFETY: non-null code addresses of these verbs, whose C
        // signatures are the ones declared (caller); fn pointers and
        // data pointers have one size on the supported targets.
        unsafe {
            Some(ChannelFns {
                ibv_create_comp_channel: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut IbvContext) -> *mut IbvCompChannel,
                >(create),
                ibv_destroy_comp_channel: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut IbvCompChannel) -> c_int,
                >(destroy),
                ibv_get_cq_event: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(
                        *mut IbvCompChannel,
                        *mut *mut IbvCq,
                        *mut *mut c_void,
                    ) -> c_int,
                >(get),
                ibv_ack_cq_events: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut IbvCq, u32),
                >(ack),
            })
        }
    }
}

/// A loaded libibverbs with its verbs resolved.
pub struct Library {
    /// The loaded file.
    lib: rgex_dl::Library,
    /// The verbs.
    pub(crate) fns: Fns,
    /// The completion-channel verbs, if the library has them.
    pub(crate) channel: Option<ChannelFns>,
}

// SAFETY: the table holds code addresses of a library that is never
// unloaded; libibverbs' exported verbs may be called from any thread.
unsafe impl Send for Library {}
// SAFETY: as for Send: the table is read-only after loading.
unsafe impl Sync for Library {}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("path", &self.path())
            .finish_non_exhaustive()
    }
}

/// A loader error as the verbs' error.
fn as_verbs(e: LoadError) -> VerbsError {
    VerbsError::Library { why: e.why }
}

impl Library {
    /// The process's libibverbs: [`LIBRARY`], or the file
    /// [`LIBRARY_ENV`] names, loaded on first use (a failure is kept
    /// and returned again).
    pub fn system() -> VerbsResult<&'static Library> {
        static SYSTEM: rgex_dl::System<Library> =
            rgex_dl::System::new(|| Library::resolve_dl(rgex_dl::Library::open(&SPEC)?));
        SYSTEM.get().map_err(as_verbs)
    }

    /// Load `name` (a file name the dynamic loader searches, or a path)
    /// with `RTLD_NOW | RTLD_LOCAL` and resolve the verbs. A file that
    /// cannot be loaded, or that lacks a verb at `IBVERBS_1.1`, is
    /// [`VerbsError::Library`], naming the file, where it was looked
    /// for, and the packages that provide it.
    ///
    /// The library stays loaded for the life of the process.
    pub fn load(name: &str) -> VerbsResult<Library> {
        Library::resolve_in(rgex_dl::Library::open_named(&SPEC, name))
    }

    /// Resolve the verbs in what was loaded.
    fn resolve_in(lib: Result<rgex_dl::Library, LoadError>) -> VerbsResult<Library> {
        lib.and_then(Library::resolve_dl).map_err(as_verbs)
    }

    /// Resolve the verbs in `lib`.
    fn resolve_dl(lib: rgex_dl::Library) -> Result<Library, LoadError> {
        // SAFETY: a library exporting these names at IBVERBS_1.1 is
        // rdma-core's libibverbs with these signatures.
        let fns = unsafe { Fns::resolve(&lib) }?;
        // SAFETY: as above.
        let channel = unsafe { ChannelFns::resolve(&lib) };
        Ok(Library { lib, fns, channel })
    }

    /// The file that was loaded.
    pub fn path(&self) -> &str {
        self.lib.path()
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
            "RGEX_IBV_LIBRARY names another file",
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
            why.contains("is not a usable libibverbs: it has no ibv_get_device_list@IBVERBS_1.1"),
            "the first verb missing is named: {why}"
        );
        assert!(why.contains("rdma-core"), "{why}");
    }
}
