//! `dlopen` of a system library and `dlvsym` of its calls.

use crate::LoadError;
use std::ffi::{c_char, c_void, CStr, CString};

/// What to load and how to explain its absence.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The file name the dynamic loader searches (`libfabric.so.1`).
    pub soname: &'static str,
    /// The environment variable naming another file to load instead (a
    /// path, or a name the loader searches): `RGEX_OFI_LIBRARY`.
    pub env: &'static str,
    /// What the library is, for messages (`libfabric`).
    pub what: &'static str,
    /// Which packages provide it, as a phrase for the end of an error
    /// (`install libfabric: Debian/Ubuntu package libfabric1, ...`).
    pub packages: &'static str,
}

/// A loaded library. It stays loaded for the life of the process (what
/// it loads in turn, providers and plugins, and the objects opened
/// through it stay tied to it), so resolved calls never dangle.
#[derive(Debug)]
pub struct Library {
    handle: *mut c_void,
    /// The name it was loaded as (the soname or the override).
    name: String,
    /// The file the loader found.
    path: String,
    spec: Spec,
}

// SAFETY: the handle is only passed to dlvsym/dlsym, which are thread
// safe, and the library is never closed.
unsafe impl Send for Library {}
// SAFETY: as for Send: nothing mutates the handle after open.
unsafe impl Sync for Library {}

impl Library {
    /// Load `spec.soname`, or the file `spec.env` names when it is set
    /// and not empty, with `RTLD_NOW | RTLD_LOCAL`.
    pub fn open(spec: &Spec) -> Result<Library, LoadError> {
        let name = std::env::var(spec.env)
            .ok()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| spec.soname.to_string());
        Library::open_named(spec, &name)
    }

    /// Load `name` (a file name the loader searches, or a path) as the
    /// library `spec` describes.
    pub fn open_named(spec: &Spec, name: &str) -> Result<Library, LoadError> {
        let cname = CString::new(name).map_err(|_| {
            LoadError::new(format!(
                "cannot load {} from {name:?}: the name contains a NUL byte",
                spec.what
            ))
        })?;
        // SAFETY: a NUL-terminated name; loading runs the library's
        // constructors, which is what using it requires.
        let handle = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(LoadError::new(format!(
                "cannot load {} ({name}): {}; looked {}; {}",
                spec.what,
                dlerror_text(),
                where_looked(name, spec.env),
                spec.packages
            )));
        }
        let path = path_of_handle(handle).unwrap_or_else(|| name.to_string());
        Ok(Library {
            handle,
            name: name.to_string(),
            path,
            spec: *spec,
        })
    }

    /// The address of `symbol` at symbol version `version` (both
    /// NUL-terminated), or an error naming both, the file and the packages.
    /// Where the C library has no `dlvsym` (not glibc), the loader's
    /// default version is taken.
    pub fn symbol(&self, symbol: &CStr, version: &CStr) -> Result<*mut c_void, LoadError> {
        #[cfg(target_env = "gnu")]
        // SAFETY: a live handle (never closed); NUL-terminated strings.
        let p = unsafe { libc::dlvsym(self.handle, symbol.as_ptr(), version.as_ptr()) };
        #[cfg(not(target_env = "gnu"))]
        // SAFETY: as above.
        let p = unsafe { libc::dlsym(self.handle, symbol.as_ptr()) };
        if p.is_null() {
            return Err(self.not_usable(&format!(
                "it has no {}@{}",
                symbol.to_string_lossy(),
                version.to_string_lossy()
            )));
        }
        Ok(p)
    }

    /// The address of `symbol` at the loader's default version (for
    /// libraries without symbol versions), or an error as [`symbol`](Self::symbol)'s.
    pub fn default_symbol(&self, symbol: &CStr) -> Result<*mut c_void, LoadError> {
        // SAFETY: a live handle (never closed); a NUL-terminated string.
        let p = unsafe { libc::dlsym(self.handle, symbol.as_ptr()) };
        if p.is_null() {
            return Err(self.not_usable(&format!("it has no {}", symbol.to_string_lossy())));
        }
        Ok(p)
    }

    /// An error saying the loaded file is not a usable library: `why`.
    pub fn not_usable(&self, why: &str) -> LoadError {
        let as_name = if self.name == self.path {
            String::new()
        } else {
            format!(" (loaded as {})", self.name)
        };
        LoadError::new(format!(
            "{}{as_name} is not a usable {}: {why}; {}",
            self.path, self.spec.what, self.spec.packages
        ))
    }

    /// The file that was loaded.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// True if a file whose path contains `fragment` is mapped into this
/// process (read from `/proc/self/maps`; false where that cannot be read).
pub fn is_mapped(fragment: &str) -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .map(|maps| {
            maps.lines()
                .filter_map(|l| l.split_whitespace().nth(5))
                .any(|path| path.contains(fragment))
        })
        .unwrap_or(false)
}

/// Where the dynamic loader looks for `name`, for the error.
fn where_looked(name: &str, env: &str) -> String {
    if name.contains('/') {
        return format!("at the path {name} ({env} names it)");
    }
    let ld_path = match std::env::var("LD_LIBRARY_PATH") {
        Ok(p) if !p.is_empty() => format!("LD_LIBRARY_PATH={p}"),
        _ => "LD_LIBRARY_PATH unset".to_string(),
    };
    format!(
        "for it through the dynamic loader ({ld_path}, then the ld.so cache, /lib and /usr/lib; \
         {env} names another file)"
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

/// The file behind `handle`, from its link map.
fn path_of_handle(handle: *mut c_void) -> Option<String> {
    #[cfg(target_env = "gnu")]
    {
        let mut map: *mut c_void = std::ptr::null_mut();
        // SAFETY: RTLD_DI_LINKMAP writes a `struct link_map *` into
        // `map`; the handle is live.
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
        // SAFETY: a live link map entry; `l_name` is its second field, a
        // NUL-terminated path (possibly empty).
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

    const SPEC: Spec = Spec {
        soname: "librgex-no-such-library.so.1",
        env: "RGEX_DL_TEST_LIBRARY",
        what: "librgex-test",
        packages: "install it: Debian package librgex-test1, RHEL package rgex-test",
    };

    #[test]
    fn a_missing_library_says_what_where_and_which_package() {
        let e = Library::open_named(&SPEC, SPEC.soname).unwrap_err().why;
        for needle in [
            "cannot load librgex-test (librgex-no-such-library.so.1)",
            "dynamic loader",
            "RGEX_DL_TEST_LIBRARY names another file",
            "librgex-test1",
            "rgex-test",
        ] {
            assert!(e.contains(needle), "{needle:?} not in {e:?}");
        }
        let e = Library::open_named(&SPEC, "/nonexistent/libx.so.1")
            .unwrap_err()
            .why;
        assert!(e.contains("at the path /nonexistent/libx.so.1"), "{e}");
    }

    #[test]
    #[cfg(target_env = "gnu")]
    fn a_symbol_missing_at_its_version_is_named() {
        let libc = Library::open_named(&SPEC, "libc.so.6").expect("libc loads");
        assert!(libc.path().contains("libc.so.6"), "{}", libc.path());
        assert!(libc.symbol(c"malloc", c"GLIBC_2.2.5").is_ok());
        let e = libc.symbol(c"malloc", c"RGEX_9.9").unwrap_err().why;
        assert!(
            e.contains("is not a usable librgex-test: it has no malloc@RGEX_9.9"),
            "{e}"
        );
        assert!(e.contains("librgex-test1"), "{e}");
    }

    #[test]
    fn is_mapped_sees_this_test_binary_and_not_a_made_up_name() {
        let exe = std::env::current_exe().expect("current_exe");
        let name = exe.file_name().expect("a file name").to_string_lossy();
        assert!(is_mapped(&name), "{name} is mapped");
        assert!(!is_mapped("librgex-no-such-library"));
    }
}
