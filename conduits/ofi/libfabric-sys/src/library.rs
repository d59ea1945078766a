//! libfabric, loaded at run time: `dlopen` of `libfabric.so.1` (or the
//! file `RGEX_OFI_LIBRARY` names) the first time the ofi conduit asks,
//! its exported calls resolved with `dlvsym` at the symbol versions whose
//! struct layouts the committed bindings describe, and its version
//! checked against [`MIN_VERSION`].
//!
//! libfabric keeps the old layouts of `struct fi_info` and friends behind
//! older symbol versions (`fi_getinfo@FABRIC_1.0` .. `@FABRIC_1.3` in
//! 1.17), so a call resolved by plain `dlsym` would get whatever layout
//! the installed library defaults to. Resolving each call at the version
//! the generating headers defaulted to keeps the layouts matched on newer
//! libraries too (they keep the old versions as compatibility symbols).

use crate::bindings::{
    fi_dupinfo_fn, fi_fabric_attr, fi_fabric_fn, fi_freeinfo_fn, fi_getinfo_fn, fi_info,
    fi_strerror_fn, fi_version_fn, fid_fabric,
};
use rgex_dl::{LoadError, Spec};
use std::ffi::{c_char, c_int, c_void, CStr};

/// What is loaded, the variable that overrides it, and who provides it.
pub const SPEC: Spec = Spec {
    soname: "libfabric.so.1",
    env: "RGEX_OFI_LIBRARY",
    what: "libfabric",
    packages: "the ofi conduit needs libfabric 1.10 or newer: install the Debian/Ubuntu \
               package libfabric1, or the RHEL/Fedora/SUSE package libfabric",
};

/// `FI_VERSION(major, minor)`: the API version number `fi_getinfo` takes.
#[allow(non_snake_case)]
pub const fn FI_VERSION(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}

/// The oldest libfabric API the conduit uses (the version it passes to
/// `fi_getinfo`); an older library is refused at load.
pub const MIN_VERSION: u32 = FI_VERSION(1, 10);

/// Each exported call and the symbol version it is resolved at: the
/// default (`@@`) version of libfabric 1.17, whose headers generated the
/// bindings (`objdump -T libfabric.so.1`; a test checks they are still
/// the installed library's defaults).
pub const SYMBOLS: [(&CStr, &CStr); 6] = [
    (c"fi_version", c"FABRIC_1.0"),
    (c"fi_getinfo", c"FABRIC_1.3"),
    (c"fi_freeinfo", c"FABRIC_1.3"),
    (c"fi_dupinfo", c"FABRIC_1.3"),
    (c"fi_fabric", c"FABRIC_1.1"),
    (c"fi_strerror", c"FABRIC_1.0"),
];

/// The loaded libfabric: its exported calls, resolved.
#[derive(Debug)]
pub struct Library {
    lib: rgex_dl::Library,
    version: u32,
    getinfo: fi_getinfo_fn,
    freeinfo: fi_freeinfo_fn,
    dupinfo: fi_dupinfo_fn,
    fabric: fi_fabric_fn,
    strerror: fi_strerror_fn,
}

static SYSTEM: rgex_dl::System<Library> = rgex_dl::System::new(|| Library::load(&SPEC));

/// Resolve `SYMBOLS[i]` in `lib` as the function-pointer type `T`.
///
/// # Safety
/// `T` is `Option<unsafe extern "C" fn ...>` with the C signature of
/// `SYMBOLS[i]` at its version.
unsafe fn resolve<T>(lib: &rgex_dl::Library, i: usize) -> Result<T, LoadError> {
    let (name, version) = SYMBOLS[i];
    let p: *mut c_void = lib.symbol(name, version)?;
    assert_eq!(size_of::<T>(), size_of::<*mut c_void>());
    // SAFETY: a non-null code address of the call whose signature `T`
    // is (caller); an Option of a fn pointer has a pointer's layout.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

impl Library {
    /// The process's libfabric, loaded on first use ([`SPEC`]: the
    /// soname, or the file `RGEX_OFI_LIBRARY` names); a failure is kept
    /// and returned again.
    pub fn system() -> Result<&'static Library, LoadError> {
        SYSTEM.get()
    }

    /// The process's libfabric if [`system`](Self::system) loaded it.
    pub fn loaded() -> Option<&'static Library> {
        SYSTEM.loaded()
    }

    /// Load the library `spec` describes, resolve the calls, check the
    /// version. It stays loaded for the life of the process.
    pub fn load(spec: &Spec) -> Result<Library, LoadError> {
        Library::resolve_in(rgex_dl::Library::open(spec)?)
    }

    /// Resolve the calls in the loaded `lib` and check its version.
    fn resolve_in(lib: rgex_dl::Library) -> Result<Library, LoadError> {
        // SAFETY: each type is the headers' own `typeof(&fi_...)` for the
        // symbol at the index given, resolved at the version whose ABI
        // those headers describe.
        let (version, getinfo, freeinfo, dupinfo, fabric, strerror) = unsafe {
            (
                resolve::<fi_version_fn>(&lib, 0)?,
                resolve::<fi_getinfo_fn>(&lib, 1)?,
                resolve::<fi_freeinfo_fn>(&lib, 2)?,
                resolve::<fi_dupinfo_fn>(&lib, 3)?,
                resolve::<fi_fabric_fn>(&lib, 4)?,
                resolve::<fi_strerror_fn>(&lib, 5)?,
            )
        };
        let version_fn = version.expect("resolved non-null");
        // SAFETY: fi_version takes nothing and returns a number.
        let version = unsafe { version_fn() };
        if version < MIN_VERSION {
            return Err(lib.not_usable(&format!(
                "it is libfabric {}.{}, older than {}.{}",
                version >> 16,
                version & 0xffff,
                MIN_VERSION >> 16,
                MIN_VERSION & 0xffff
            )));
        }
        Ok(Library {
            lib,
            version,
            getinfo,
            freeinfo,
            dupinfo,
            fabric,
            strerror,
        })
    }

    /// The file that was loaded.
    pub fn path(&self) -> &str {
        self.lib.path()
    }

    /// `fi_version()`: the library's API version (`FI_VERSION(1, 17)`).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// `fi_getinfo`.
    ///
    /// # Safety
    /// As the C call: NUL-terminated or null strings, valid or null hints.
    pub unsafe fn fi_getinfo(
        &self,
        version: u32,
        node: *const c_char,
        service: *const c_char,
        flags: u64,
        hints: *const fi_info,
        info: *mut *mut fi_info,
    ) -> c_int {
        let f = self.getinfo.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(version, node, service, flags, hints, info) }
    }

    /// `fi_freeinfo`.
    ///
    /// # Safety
    /// `info` came from this library's `fi_getinfo` or `fi_dupinfo` and
    /// is freed once.
    pub unsafe fn fi_freeinfo(&self, info: *mut fi_info) {
        let f = self.freeinfo.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(info) }
    }

    /// `fi_dupinfo`.
    ///
    /// # Safety
    /// `info` is null or a valid `fi_info`.
    pub unsafe fn fi_dupinfo(&self, info: *const fi_info) -> *mut fi_info {
        let f = self.dupinfo.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(info) }
    }

    /// `fi_allocinfo()`: `fi_dupinfo(NULL)`, a zeroed `fi_info` with its
    /// attribute structs allocated (null when out of memory).
    pub fn fi_allocinfo(&self) -> *mut fi_info {
        // SAFETY: null is fi_dupinfo's documented "allocate" argument.
        unsafe { self.fi_dupinfo(std::ptr::null()) }
    }

    /// `fi_fabric`.
    ///
    /// # Safety
    /// As the C call: the fabric attributes of an entry `fi_getinfo`
    /// returned, an out pointer.
    pub unsafe fn fi_fabric(
        &self,
        attr: *mut fi_fabric_attr,
        fabric: *mut *mut fid_fabric,
        context: *mut c_void,
    ) -> c_int {
        let f = self.fabric.expect("resolved non-null");
        // SAFETY: the caller's contract.
        unsafe { f(attr, fabric, context) }
    }

    /// `fi_strerror(code)` as a `String` (either sign of `code`).
    pub fn fi_strerror(&self, code: i32) -> String {
        let f = self.strerror.expect("resolved non-null");
        // SAFETY: fi_strerror takes any number and returns a pointer to
        // a static NUL-terminated string (a generic text for unknown codes).
        let p = unsafe { f(code.saturating_abs()) };
        if p.is_null() {
            return format!("libfabric error {code}");
        }
        // SAFETY: non-null, static and NUL-terminated, as above.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_named(env: &'static str) -> Spec {
        Spec { env, ..SPEC }
    }

    #[test]
    fn the_system_library_loads_at_a_supported_version() {
        let lib = Library::system().expect("libfabric is installed on the test machine");
        assert!(lib.path().contains("libfabric"), "{}", lib.path());
        assert!(lib.version() >= MIN_VERSION);
        assert_eq!(
            u64::from(lib.version() >> 16),
            crate::FI_MAJOR_VERSION,
            "the library's major version is the headers'"
        );
        // Codes below 256 are errno values; libfabric gives strerror's text.
        let text = lib.fi_strerror(crate::FI_EAGAIN);
        let os = std::io::Error::from_raw_os_error(crate::FI_EAGAIN).to_string();
        assert!(
            !text.is_empty() && os.starts_with(&text),
            "{text:?} vs {os:?}"
        );
        assert!(std::ptr::eq(Library::loaded().expect("loaded"), lib));
    }

    #[test]
    fn each_call_is_resolved_at_the_installed_librarys_default_version() {
        // The bindings were generated from this machine's headers, whose
        // layouts are the library's default (@@) symbol versions: if the
        // bindings are regenerated from a newer libfabric that moved a
        // call to a new version, SYMBOLS must follow, and this fails.
        let lib = rgex_dl::Library::open_named(&SPEC, SPEC.soname).expect("libfabric loads");
        for (name, version) in SYMBOLS {
            let at = lib.symbol(name, version).expect("the versioned symbol");
            let default = lib.default_symbol(name).expect("the default symbol");
            assert_eq!(
                at, default,
                "{name:?}@{version:?} is not the default version"
            );
        }
    }

    #[test]
    fn a_missing_library_names_the_override_and_the_packages() {
        let e = Library::load(&spec_named("RGEX_OFI_LIBRARY_TEST_UNSET")).map(|_| ());
        assert!(e.is_ok(), "the default soname loads: {e:?}");
        let e = rgex_dl::Library::open_named(&SPEC, "/nonexistent/libfabric.so.1")
            .unwrap_err()
            .why;
        for needle in [
            "cannot load libfabric (/nonexistent/libfabric.so.1)",
            "at the path /nonexistent/libfabric.so.1",
            "RGEX_OFI_LIBRARY",
            "libfabric1",
            "RHEL",
        ] {
            assert!(e.contains(needle), "{needle:?} not in {e:?}");
        }
    }

    #[test]
    #[cfg(target_env = "gnu")]
    fn a_library_without_the_calls_is_refused() {
        // libc loads everywhere this builds but exports no fi_version.
        let libc = rgex_dl::Library::open_named(&SPEC, "libc.so.6").expect("libc loads");
        let e = Library::resolve_in(libc).unwrap_err().why;
        assert!(
            e.contains("is not a usable libfabric: it has no fi_version@FABRIC_1.0"),
            "{e}"
        );
        assert!(e.contains("libfabric1"), "{e}");
    }
}
