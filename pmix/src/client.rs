//! The PMIx client calls the bootstrap makes, each checked: init (once per
//! [`Client`], finalized on drop or, for a client never dropped, at
//! process exit), put / commit / fence / get of job-wide key-value pairs.

use parking_lot::Mutex;
use pmix_sys as sys;
use rgex_core::{Error, Result};
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::Once;

/// Live `PMIx_Init`s not yet finalized (PMIx counts them too; this count
/// lets the exit hook finalize the ones never dropped).
static LIVE: Mutex<u32> = Mutex::new(0);

/// Finalize what is still initialized: the process is exiting.
extern "C" fn finalize_at_exit() {
    let Some(lib) = sys::Library::loaded() else {
        return;
    };
    let mut live = LIVE.lock();
    while *live > 0 {
        // SAFETY: PMIx was initialized once per count; finalizing with no
        // info is the plain form.
        unsafe { lib.PMIx_Finalize(std::ptr::null(), 0) };
        *live -= 1;
    }
}

/// An error naming the PMIx call and PMIx's text for `status`.
fn fail(lib: &sys::Library, what: &str, status: sys::pmix_status_t) -> Error {
    Error::Bootstrap(format!(
        "PMIx {what}: {} (status {status})",
        lib.PMIx_Error_string(status)
    ))
}

fn check(
    lib: &sys::Library,
    what: impl FnOnce() -> String,
    status: sys::pmix_status_t,
) -> Result<()> {
    if status == sys::PMIX_SUCCESS as sys::pmix_status_t {
        Ok(())
    } else {
        Err(fail(lib, &what(), status))
    }
}

/// The process's libpmix, loaded on first use; a missing or unusable
/// library is an error naming the file, where it was looked for and the
/// packages that provide it.
pub(crate) fn library() -> Result<&'static sys::Library> {
    sys::Library::system().map_err(|e| {
        Error::Bootstrap(format!(
            "PMIx bootstrap (this process was started by a PMIx launcher: PMIX_NAMESPACE \
             and PMIX_RANK are set): loading libpmix: {e}"
        ))
    })
}

/// A copy of a NUL-terminated C array of `N` chars as a Rust string.
fn c_array<const N: usize>(a: &[c_char; N]) -> String {
    let bytes: Vec<u8> = a
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// This process as a PMIx client.
pub(crate) struct Client {
    lib: &'static sys::Library,
    me: sys::pmix_proc_t,
}

// SAFETY: the PMIx client library is thread safe (every API call may be
// made from any thread); `me` is plain data.
unsafe impl Send for Client {}
// SAFETY: as above.
unsafe impl Sync for Client {}

impl Client {
    /// Connect to the PMIx server that started this process.
    pub(crate) fn init() -> Result<Client> {
        let lib = library()?;
        let mut me = sys::pmix_proc_t::default();
        // SAFETY: `me` is a valid pmix_proc_t for PMIx to fill in; no info.
        let status = unsafe { lib.PMIx_Init(&mut me, std::ptr::null_mut(), 0) };
        check(
            lib,
            || {
                "PMIx_Init (is this process started by a PMIx launcher: srun --mpi=pmix, mpirun, prterun?)".into()
            },
            status,
        )?;
        *LIVE.lock() += 1;
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            // SAFETY: registering a plain extern "C" fn with no captures.
            unsafe { libc::atexit(finalize_at_exit) };
        });
        Ok(Client { lib, me })
    }

    /// This process's rank in its namespace.
    pub(crate) fn rank(&self) -> u32 {
        self.me.rank
    }

    /// The job's namespace.
    pub(crate) fn namespace(&self) -> String {
        c_array(&self.me.nspace)
    }

    fn proc(&self, rank: u32) -> sys::pmix_proc_t {
        sys::pmix_proc_t {
            nspace: self.me.nspace,
            rank,
        }
    }

    /// Get `key` of `rank` (or the job's, with `PMIX_RANK_WILDCARD`); the
    /// value is handed to `read` and released after.
    fn get<T>(
        &self,
        rank: u32,
        key: &CStr,
        read: impl FnOnce(&sys::pmix_value_t) -> Result<T>,
    ) -> Result<T> {
        let who = self.proc(rank);
        let mut val: *mut sys::pmix_value_t = std::ptr::null_mut();
        // SAFETY: `who` and `key` are valid for the call; PMIx allocates
        // the value and hands it to us in `val`.
        let status = unsafe {
            self.lib
                .PMIx_Get(&who, key.as_ptr(), std::ptr::null(), 0, &mut val)
        };
        check(
            self.lib,
            || format!("PMIx_Get of {key:?} for rank {rank}"),
            status,
        )?;
        if val.is_null() {
            return Err(Error::Bootstrap(format!(
                "PMIx_Get of {key:?} for rank {rank} returned no value"
            )));
        }
        // SAFETY: PMIx returned a valid value, ours until released below.
        let out = read(unsafe { &*val });
        // SAFETY: PMIX_VALUE_RELEASE: destruct the contents, then free the
        // malloc'd struct itself.
        unsafe {
            self.lib.PMIx_Value_destruct(val);
            libc::free(val.cast::<c_void>());
        }
        out
    }

    /// A job-level `u32` (`PMIX_JOB_SIZE`, `PMIX_LOCAL_SIZE`).
    pub(crate) fn job_u32(&self, key: &CStr) -> Result<u32> {
        self.get(sys::PMIX_RANK_WILDCARD, key, |v| {
            if u32::from(v.type_) == sys::PMIX_UINT32 {
                // SAFETY: the type tag says the union holds `uint32`.
                Ok(unsafe { v.data.uint32 })
            } else {
                Err(Error::Bootstrap(format!(
                    "PMIx_Get of {key:?}: expected a uint32, got PMIx type {}",
                    v.type_
                )))
            }
        })
    }

    /// Publish `bytes` under `key` to every rank of the job (after the
    /// next commit and fence).
    pub(crate) fn put(&self, key: &CStr, bytes: &[u8]) -> Result<()> {
        let bo = sys::pmix_byte_object_t {
            bytes: bytes.as_ptr().cast_mut().cast::<c_char>(),
            size: bytes.len(),
        };
        let mut val = sys::pmix_value_t {
            type_: 0,
            data: sys::pmix_value__bindgen_ty_1 { size: 0 },
        };
        // SAFETY: PMIx_Value_load copies the byte object into `val` (it
        // only reads `bytes`); PMIx_Put copies `val`; the destruct frees
        // the loaded copy.
        unsafe {
            check(
                self.lib,
                || format!("PMIx_Value_load of {} bytes", bytes.len()),
                self.lib.PMIx_Value_load(
                    &mut val,
                    (&bo as *const sys::pmix_byte_object_t).cast::<c_void>(),
                    sys::PMIX_BYTE_OBJECT as sys::pmix_data_type_t,
                ),
            )?;
            let status = self.lib.PMIx_Put(
                sys::PMIX_GLOBAL as sys::pmix_scope_t,
                key.as_ptr(),
                &mut val,
            );
            self.lib.PMIx_Value_destruct(&mut val);
            check(self.lib, || format!("PMIx_Put of {key:?}"), status)
        }
    }

    /// Push what was put to the server.
    pub(crate) fn commit(&self) -> Result<()> {
        // SAFETY: no arguments.
        check(self.lib, || "PMIx_Commit".into(), unsafe {
            self.lib.PMIx_Commit()
        })
    }

    /// Wait for every rank of the namespace; with `collect`, also gather
    /// what each committed, so gets are local afterwards.
    pub(crate) fn fence(&self, collect: bool) -> Result<()> {
        let mut info = sys::pmix_info_t::default();
        for (d, s) in info.key.iter_mut().zip(sys::PMIX_COLLECT_DATA.iter()) {
            *d = *s as c_char;
        }
        info.value.type_ = sys::PMIX_BOOL as sys::pmix_data_type_t;
        info.value.data.flag = true;
        let (infos, n) = if collect {
            (&info as *const sys::pmix_info_t, 1)
        } else {
            (std::ptr::null(), 0)
        };
        // SAFETY: no procs means every proc of our namespace; `info` (a
        // key and a bool, nothing allocated) outlives the call.
        let status = unsafe { self.lib.PMIx_Fence(std::ptr::null(), 0, infos, n) };
        check(self.lib, || "PMIx_Fence".into(), status)
    }

    /// The bytes `rank` put under `key`.
    pub(crate) fn get_bytes(&self, rank: u32, key: &CStr) -> Result<Vec<u8>> {
        self.get(rank, key, |v| {
            if u32::from(v.type_) != sys::PMIX_BYTE_OBJECT {
                return Err(Error::Bootstrap(format!(
                    "PMIx_Get of {key:?} for rank {rank}: expected bytes, got PMIx type {}",
                    v.type_
                )));
            }
            // SAFETY: the type tag says the union holds a byte object.
            let bo = unsafe { v.data.bo };
            if bo.size == 0 || bo.bytes.is_null() {
                return Ok(Vec::new());
            }
            // SAFETY: PMIx's byte object holds `size` bytes at `bytes`.
            Ok(unsafe { std::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size) }.to_vec())
        })
    }

    /// A C string for a key of ours.
    pub(crate) fn key(name: String) -> CString {
        CString::new(name).expect("rgex's PMIx keys have no NUL")
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let mut live = LIVE.lock();
        if *live > 0 {
            // SAFETY: this client's PMIx_Init is still counted.
            unsafe { self.lib.PMIx_Finalize(std::ptr::null(), 0) };
            *live -= 1;
        }
    }
}
