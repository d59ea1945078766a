//! Named POSIX shared-memory objects, mapped read-write.

use rgex_core::segment::BASE_ALIGN;
use rgex_core::{Error, Result};
use std::ffi::CString;
use std::ptr::NonNull;

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

/// A mapping of a POSIX shared-memory object (`/dev/shm/<name>`).
///
/// Unmapped on drop. The object's *name* is removed separately with
/// [`unlink`], as soon as every rank has mapped it, so that a crash later in
/// the job leaves nothing behind in `/dev/shm`.
///
/// Its base is a multiple of [`BASE_ALIGN`].
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
        let mapped = Self::map_aligned(fd, len, name);
        // SAFETY: fd is ours and no longer needed: the mapping keeps the object alive.
        unsafe { libc::close(fd) };
        let base = mapped?;
        Ok(ShmMap {
            base,
            len,
            name: name.to_owned(),
        })
    }

    /// Map `len` bytes of `fd` shared and read-write at an address that is
    /// a multiple of [`BASE_ALIGN`]: reserve `len + BASE_ALIGN` bytes of
    /// address space (no memory: `PROT_NONE`, `MAP_NORESERVE`), map the
    /// object over the aligned part of it, and give back the slack on
    /// either side. So every rank's segment, at the same offset of its
    /// region, has the same address modulo [`BASE_ALIGN`].
    fn map_aligned(fd: libc::c_int, len: usize, name: &str) -> Result<NonNull<u8>> {
        let span = len.checked_add(BASE_ALIGN).ok_or_else(|| {
            Error::Config(format!(
                "mmap of {name}: {len} bytes and the alignment slack overflow the address space"
            ))
        })?;
        // SAFETY: an anonymous, inaccessible reservation at an address the
        // kernel picks; it touches no existing mapping.
        let hold = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if hold == libc::MAP_FAILED {
            return Err(Error::last_os(format!(
                "mmap of {span} bytes of address space for {name} ({len} bytes at a \
                 {BASE_ALIGN}-byte alignment)"
            )));
        }
        let start = hold as usize;
        let at = start.next_multiple_of(BASE_ALIGN);
        // SAFETY: `at..at + len` lies inside the reservation `hold..hold +
        // span` (at - start < BASE_ALIGN), which this function owns, so
        // MAP_FIXED replaces only our own inaccessible pages.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd,
                0,
            )
        };
        let err = (p == libc::MAP_FAILED)
            .then(|| Error::last_os(format!("mmap of {name} ({len} bytes)")));
        let end = start + span;
        let object_end = at + len.next_multiple_of(page_size());
        // SAFETY: the slack before `at` and after the object's pages is the
        // rest of our reservation (or, on failure, the whole of it); no
        // other mapping lies there. Its release cannot fail for a range we
        // mapped, and a failure would only leave address space reserved.
        unsafe {
            if let Some(e) = err {
                libc::munmap(hold, span);
                return Err(e);
            }
            if at > start {
                libc::munmap(hold, at - start);
            }
            if end > object_end {
                libc::munmap(object_end as *mut libc::c_void, end - object_end);
            }
        }
        Ok(NonNull::new(p.cast::<u8>()).expect("mmap returned a null mapping"))
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
