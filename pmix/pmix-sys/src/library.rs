//! libpmix, loaded at run time: `dlopen` of `libpmix.so.2` (or the file
//! `RGEX_PMIX_LIBRARY` names) the first time the PMIx bootstrap is
//! chosen (a process started by a PMIx launcher), its calls resolved by
//! name (libpmix has no symbol versions) and its version, from
//! `PMIx_Get_version`, checked against [`MIN_VERSION`].

use crate::bindings::{
    pmix_data_type_t, pmix_info_t, pmix_proc_t, pmix_scope_t, pmix_status_t, pmix_value_t,
    PMIx_Commit_fn, PMIx_Error_string_fn, PMIx_Fence_fn, PMIx_Finalize_fn, PMIx_Get_fn,
    PMIx_Get_version_fn, PMIx_Init_fn, PMIx_Put_fn, PMIx_Value_destruct_fn, PMIx_Value_load_fn,
};
use rgex_dl::{LoadError, Spec};
use std::ffi::{c_char, c_ulong, c_void, CStr};

/// What is loaded, the variable that overrides it, and who provides it.
pub const SPEC: Spec = Spec {
    soname: "libpmix.so.2",
    env: "RGEX_PMIX_LIBRARY",
    what: "libpmix",
    packages: "the PMIx bootstrap (jobs under srun --mpi=pmix, mpirun or prterun) needs \
               PMIx 3.0 or newer: install the Debian/Ubuntu package libpmix2, or the \
               RHEL/Fedora/SUSE package pmix",
};

/// The oldest PMIx (major, minor) whose client API and value layout the
/// bootstrap uses (`PMIx_Value_load`, fence with `PMIX_COLLECT_DATA`);
/// an older library is refused at load.
pub const MIN_VERSION: (u32, u32) = (3, 0);

/// The calls resolved, in the order of [`Library`]'s fields.
pub const SYMBOLS: [&CStr; 10] = [
    c"PMIx_Get_version",
    c"PMIx_Init",
    c"PMIx_Finalize",
    c"PMIx_Put",
    c"PMIx_Commit",
    c"PMIx_Fence",
    c"PMIx_Get",
    c"PMIx_Error_string",
    c"PMIx_Value_load",
    c"PMIx_Value_destruct",
];

/// The loaded libpmix: its calls, resolved.
#[derive(Debug)]
pub struct Library {
    lib: rgex_dl::Library,
    version: String,
    init: PMIx_Init_fn,
    finalize: PMIx_Finalize_fn,
    put: PMIx_Put_fn,
    commit: PMIx_Commit_fn,
    fence: PMIx_Fence_fn,
    get: PMIx_Get_fn,
    error_string: PMIx_Error_string_fn,
    value_load: PMIx_Value_load_fn,
    value_destruct: PMIx_Value_destruct_fn,
}

static SYSTEM: rgex_dl::System<Library> = rgex_dl::System::new(|| Library::load(&SPEC));

/// Resolve `SYMBOLS[i]` in `lib` as the function-pointer type `T`.
///
/// # Safety
/// `T` is `Option<unsafe extern "C" fn ...>` with the C signature of
/// `SYMBOLS[i]`.
unsafe fn resolve<T>(lib: &rgex_dl::Library, i: usize) -> Result<T, LoadError> {
    let p: *mut c_void = lib.default_symbol(SYMBOLS[i])?;
    assert_eq!(size_of::<T>(), size_of::<*mut c_void>());
    // SAFETY: a non-null code address of the call whose signature `T`
    // is (caller); an Option of a fn pointer has a pointer's layout.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

/// The (major, minor) of a `PMIx_Get_version` text ("OpenPMIx 4.2.2rc2
/// (PMIx Standard: 4.2, ...)", "PMIx 3.1.5 ..."): the first word that
/// starts with a digit.
pub fn parse_version(text: &str) -> Option<(u32, u32)> {
    let word = text
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let mut parts = word.split('.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    Some((major, minor))
}

impl Library {
    /// The process's libpmix, loaded on first use ([`SPEC`]: the
    /// soname, or the file `RGEX_PMIX_LIBRARY` names); a failure is kept
    /// and returned again.
    pub fn system() -> Result<&'static Library, LoadError> {
        SYSTEM.get()
    }

    /// The process's libpmix if [`system`](Self::system) loaded it.
    pub fn loaded() -> Option<&'static Library> {
        SYSTEM.loaded()
    }

    /// Load the library `spec` describes, resolve the calls, check the
    /// version. It stays loaded for the life of the process.
    pub fn load(spec: &Spec) -> Result<Library, LoadError> {
        Library::resolve_in(rgex_dl::Library::open(spec)?)
    }

    /// Resolve the calls in the loaded `lib` and check its version.
    pub fn resolve_in(lib: rgex_dl::Library) -> Result<Library, LoadError> {
        // SAFETY: each type is the headers' own `typeof(&PMIx_...)` for
        // the symbol at the index given.
        let (get_version, init, finalize, put, commit, fence, get, error_string, load, destruct) = unsafe {
            (
                resolve::<PMIx_Get_version_fn>(&lib, 0)?,
                resolve::<PMIx_Init_fn>(&lib, 1)?,
                resolve::<PMIx_Finalize_fn>(&lib, 2)?,
                resolve::<PMIx_Put_fn>(&lib, 3)?,
                resolve::<PMIx_Commit_fn>(&lib, 4)?,
                resolve::<PMIx_Fence_fn>(&lib, 5)?,
                resolve::<PMIx_Get_fn>(&lib, 6)?,
                resolve::<PMIx_Error_string_fn>(&lib, 7)?,
                resolve::<PMIx_Value_load_fn>(&lib, 8)?,
                resolve::<PMIx_Value_destruct_fn>(&lib, 9)?,
            )
        };
        let get_version = get_version.expect("resolved non-null");
        // SAFETY: PMIx_Get_version takes nothing and returns a static
        // NUL-terminated string (or null, handled).
        let p = unsafe { get_version() };
        let version = if p.is_null() {
            String::new()
        } else {
            // SAFETY: non-null, static and NUL-terminated, as above.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        match parse_version(&version) {
            Some(v) if v >= MIN_VERSION => {}
            Some((major, minor)) => {
                return Err(lib.not_usable(&format!(
                    "it is PMIx {major}.{minor} ({version:?}), older than {}.{}",
                    MIN_VERSION.0, MIN_VERSION.1
                )))
            }
            None => {
                return Err(lib.not_usable(&format!(
                    "PMIx_Get_version gave {version:?}, which names no version"
                )))
            }
        }
        Ok(Library {
            lib,
            version,
            init,
            finalize,
            put,
            commit,
            fence,
            get,
            error_string,
            value_load: load,
            value_destruct: destruct,
        })
    }

    /// The file that was loaded.
    pub fn path(&self) -> &str {
        self.lib.path()
    }

    /// `PMIx_Get_version()`'s text ("OpenPMIx 4.2.2 ...").
    pub fn version(&self) -> &str {
        &self.version
    }

    /// `PMIx_Init`.
    ///
    /// # Safety
    /// As the C call: a valid `proc_` to fill in, `ninfo` infos at `info`.
    pub unsafe fn PMIx_Init(
        &self,
        proc_: *mut pmix_proc_t,
        info: *mut pmix_info_t,
        ninfo: c_ulong,
    ) -> pmix_status_t {
        let f = self.init.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(proc_, info, ninfo) }
    }

    /// `PMIx_Finalize`.
    ///
    /// # Safety
    /// As the C call: PMIx is initialized; `ninfo` infos at `info`.
    pub unsafe fn PMIx_Finalize(&self, info: *const pmix_info_t, ninfo: c_ulong) -> pmix_status_t {
        let f = self.finalize.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(info, ninfo) }
    }

    /// `PMIx_Put`.
    ///
    /// # Safety
    /// As the C call: a NUL-terminated key, a valid value.
    pub unsafe fn PMIx_Put(
        &self,
        scope: pmix_scope_t,
        key: *const c_char,
        val: *mut pmix_value_t,
    ) -> pmix_status_t {
        let f = self.put.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(scope, key, val) }
    }

    /// `PMIx_Commit`.
    ///
    /// # Safety
    /// PMIx is initialized.
    pub unsafe fn PMIx_Commit(&self) -> pmix_status_t {
        let f = self.commit.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f() }
    }

    /// `PMIx_Fence`.
    ///
    /// # Safety
    /// As the C call: `nprocs` procs at `procs`, `ninfo` infos at `info`.
    pub unsafe fn PMIx_Fence(
        &self,
        procs: *const pmix_proc_t,
        nprocs: c_ulong,
        info: *const pmix_info_t,
        ninfo: c_ulong,
    ) -> pmix_status_t {
        let f = self.fence.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(procs, nprocs, info, ninfo) }
    }

    /// `PMIx_Get`.
    ///
    /// # Safety
    /// As the C call: a valid proc, a NUL-terminated key, `ninfo` infos
    /// at `info`, an out pointer for the value PMIx allocates.
    pub unsafe fn PMIx_Get(
        &self,
        proc_: *const pmix_proc_t,
        key: *const c_char,
        info: *const pmix_info_t,
        ninfo: c_ulong,
        val: *mut *mut pmix_value_t,
    ) -> pmix_status_t {
        let f = self.get.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(proc_, key, info, ninfo, val) }
    }

    /// `PMIx_Error_string(status)` as a `String`.
    pub fn PMIx_Error_string(&self, status: pmix_status_t) -> String {
        let f = self.error_string.expect("resolved non-null");
        // SAFETY: PMIx_Error_string takes any status and returns a static
        // NUL-terminated string.
        let p = unsafe { f(status) };
        if p.is_null() {
            return format!("PMIx status {status}");
        }
        // SAFETY: non-null, static and NUL-terminated, as above.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// `PMIx_Value_load`.
    ///
    /// # Safety
    /// As the C call: a valid `val`, `data` pointing at a value of `type_`.
    pub unsafe fn PMIx_Value_load(
        &self,
        val: *mut pmix_value_t,
        data: *const c_void,
        type_: pmix_data_type_t,
    ) -> pmix_status_t {
        let f = self.value_load.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(val, data, type_) }
    }

    /// `PMIx_Value_destruct`.
    ///
    /// # Safety
    /// A valid value whose contents are released once.
    pub unsafe fn PMIx_Value_destruct(&self, val: *mut pmix_value_t) {
        let f = self.value_destruct.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(val) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_each_implementations_text() {
        assert_eq!(
            parse_version("OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, Stable ABI: 0.0)"),
            Some((4, 2))
        );
        assert_eq!(
            parse_version("PMIx 3.1.5 (PMIx Standard: 3.1)"),
            Some((3, 1))
        );
        assert_eq!(parse_version("OpenPMIx 5"), Some((5, 0)));
        assert_eq!(parse_version("PMIx v2.2.3"), None);
        assert_eq!(parse_version(""), None);
    }

    #[test]
    fn the_system_library_loads_at_a_supported_version() {
        let lib = Library::system().expect("libpmix is installed on the test machine");
        assert!(lib.path().contains("libpmix"), "{}", lib.path());
        let v = parse_version(lib.version()).expect("a version");
        assert!(v >= MIN_VERSION, "{v:?}");
        assert_eq!(
            u64::from(v.0),
            u64::from(crate::HEADER_VERSION.0),
            "the library's major version is the headers' ({})",
            lib.version()
        );
        assert!(!lib.PMIx_Error_string(crate::PMIX_SUCCESS as i32).is_empty());
        assert!(std::ptr::eq(Library::loaded().expect("loaded"), lib));
    }

    #[test]
    fn a_missing_library_names_the_override_and_the_packages() {
        let e = rgex_dl::Library::open_named(&SPEC, "/nonexistent/libpmix.so.2")
            .unwrap_err()
            .why;
        for needle in [
            "cannot load libpmix (/nonexistent/libpmix.so.2)",
            "at the path /nonexistent/libpmix.so.2 (RGEX_PMIX_LIBRARY names it)",
            "Debian/Ubuntu package libpmix2",
            "RHEL/Fedora/SUSE package pmix",
        ] {
            assert!(e.contains(needle), "{needle:?} not in {e:?}");
        }
    }

    #[test]
    fn a_library_without_the_calls_is_refused() {
        // libc loads everywhere this builds but exports no PMIx call.
        let libc = rgex_dl::Library::open_named(&SPEC, "libc.so.6").expect("libc loads");
        let e = Library::resolve_in(libc).unwrap_err().why;
        assert!(
            e.contains("is not a usable libpmix: it has no PMIx_Get_version"),
            "{e}"
        );
        assert!(e.contains("libpmix2"), "{e}");
    }
}
