//! Named POSIX shared-memory objects, mapped read-write.

use rgex_core::{Error, Result};
use std::ffi::CString;
use std::ptr::NonNull;

/// A mapping of a POSIX shared-memory object (`/dev/shm/<name>`).
///
/// Unmapped on drop. The object's *name* is removed separately with
/// [`unlink`], as soon as every rank has mapped it, so that a crash later in
/// the job leaves nothing behind in `/dev/shm`.
#[derive(Debug)]
pub struct ShmMap {
    base: NonNull<u8>,
    len: usize,
    name: String,
}

// SAFETY: the mapping is plain shared memory; all access to it goes through
// raw pointers and atomics whose protocols are argued where they are used.
unsafe impl Send for ShmMap {}
// SAFETY: as above; ShmMap itself has no interior mutable state.
unsafe impl Sync for ShmMap {}

fn c_name(name: &str) -> Result<CString> {
    CString::new(name)
        .map_err(|_| Error::Config(format!("shared-memory name {name:?} contains a NUL byte")))
}

impl ShmMap {
    /// Create a new object `name` (it must not exist) of `len` bytes, zeroed.
    pub fn create(name: &str, len: usize) -> Result<Self> {
        let c = c_name(name)?;
        // SAFETY: `c` is a valid NUL-terminated string; shm_open has no other
        // preconditions.
        let fd = unsafe {
            libc::shm_open(
                c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                0o600,
            )
        };
        if fd < 0 {
            return Err(Error::last_os(format!("shm_open(create) of {name}")));
        }
        // SAFETY: fd is a valid descriptor we own.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            let e = Error::last_os(format!(
                "ftruncate of {name} to {len} bytes (is /dev/shm large enough?)"
            ));
            // SAFETY: fd is ours; c is valid. Best effort cleanup of a half-made object.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(c.as_ptr());
            }
            return Err(e);
        }
        Self::map_fd(fd, len, name)
    }

    /// Open and map the existing object `name`, which must be `len` bytes.
    pub fn open(name: &str, len: usize) -> Result<Self> {
        let c = c_name(name)?;
        // SAFETY: `c` is a valid NUL-terminated string.
        let fd = unsafe { libc::shm_open(c.as_ptr(), libc::O_RDWR, 0) };
        if fd < 0 {
            return Err(Error::last_os(format!("shm_open of {name}")));
        }
        Self::map_fd(fd, len, name)
    }

    fn map_fd(fd: libc::c_int, len: usize, name: &str) -> Result<Self> {
        // SAFETY: mapping a shared, read-write view of a descriptor we own;
        // the kernel picks the address. The descriptor can be closed after.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        let err = (p == libc::MAP_FAILED)
            .then(|| Error::last_os(format!("mmap of {name} ({len} bytes)")));
        // SAFETY: fd is ours and no longer needed: the mapping keeps the object alive.
        unsafe { libc::close(fd) };
        if let Some(e) = err {
            return Err(e);
        }
        let base = NonNull::new(p.cast::<u8>()).expect("mmap returned a null mapping");
        Ok(ShmMap {
            base,
            len,
            name: name.to_owned(),
        })
    }

    /// Base address of the mapping in this process.
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for ShmMap {
    fn drop(&mut self) {
        // SAFETY: base/len describe exactly the mapping made in map_fd, and
        // nothing references it any more (ShmMap owns it and is being dropped).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// Remove the name of a shared-memory object; mappings stay valid.
pub fn unlink(name: &str) -> Result<()> {
    let c = c_name(name)?;
    // SAFETY: `c` is a valid NUL-terminated string.
    if unsafe { libc::shm_unlink(c.as_ptr()) } != 0 {
        return Err(Error::last_os(format!("shm_unlink of {name}")));
    }
    Ok(())
}
