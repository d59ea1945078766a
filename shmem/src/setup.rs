//! Library setup, exit and query routines (OpenSHMEM 1.5 section 9.1):
//! `shmem_init`, `shmem_init_thread`, `shmem_finalize`, `shmem_my_pe`,
//! `shmem_n_pes`, `shmem_pe_accessible`, `shmem_addr_accessible`,
//! `shmem_ptr`, `shmem_global_exit`, `shmem_info_get_version`,
//! `shmem_info_get_name`, `shmem_query_thread`.
//!
//! The symmetric heap is this PE's rgex segment, sized by
//! `SHMEM_SYMMETRIC_SIZE` (else `RGEX_SEGMENT_SIZE`, else
//! [`DEFAULT_HEAP`]).

use crate::fatal::{fatal, OrDie};
use crate::heap::Heap;
use crate::state::{self, Shmem};
use rgex::config::{parse_size, Environment};
use rgex::{AtomicDomain, AtomicOp, OpSet};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;

/// The symmetric heap's size when neither `SHMEM_SYMMETRIC_SIZE` nor
/// `RGEX_SEGMENT_SIZE` says.
pub const DEFAULT_HEAP: usize = 64 << 20;

/// `SHMEM_MAJOR_VERSION` and `SHMEM_MINOR_VERSION`.
pub const VERSION: (c_int, c_int) = (1, 5);

/// `SHMEM_VENDOR_STRING`, NUL-terminated.
pub const VENDOR: &[u8] = b"rgex-shmem\0";

/// `SHMEM_THREAD_SINGLE` .. `SHMEM_THREAD_MULTIPLE`.
pub const THREAD_SINGLE: c_int = 0;
/// See [`THREAD_SINGLE`].
pub const THREAD_MULTIPLE: c_int = 3;

/// Every op an AMO of `shmem.h` uses, in both domains (a domain's whole
/// op set decides whether the network can offload it).
const OPS: OpSet = OpSet::of(&[
    AtomicOp::Get,
    AtomicOp::Set,
    AtomicOp::Swap,
    AtomicOp::Fcas,
    AtomicOp::Add,
    AtomicOp::Fadd,
    AtomicOp::Inc,
    AtomicOp::Finc,
    AtomicOp::And,
    AtomicOp::Fand,
    AtomicOp::Or,
    AtomicOp::For,
    AtomicOp::Xor,
    AtomicOp::Fxor,
]);

/// The heap size the environment asks for, in bytes, and the settings
/// rgex is initialised with (the segment set to that size).
///
/// ```
/// use rgex_shmem::setup::heap_size;
/// assert_eq!(heap_size(Some("1M"), None), Ok(1 << 20));
/// assert_eq!(heap_size(None, Some("2M")), Ok(2 << 20));
/// assert!(heap_size(Some("lots"), None).unwrap_err().contains("SHMEM_SYMMETRIC_SIZE"));
/// ```
pub fn heap_size(shmem: Option<&str>, rgex: Option<&str>) -> Result<usize, String> {
    let (name, text) = match (shmem, rgex) {
        (Some(s), _) => ("SHMEM_SYMMETRIC_SIZE", s),
        (None, Some(r)) => ("RGEX_SEGMENT_SIZE", r),
        (None, None) => return Ok(DEFAULT_HEAP),
    };
    let n = parse_size(text).map_err(|e| format!("{name}={text:?}: {e}"))?;
    if n < crate::heap::MIN_ALIGN as usize {
        return Err(format!(
            "{name}={text:?}: a symmetric heap needs at least {} bytes",
            crate::heap::MIN_ALIGN
        ));
    }
    Ok(n.next_multiple_of(4096))
}

/// Initialise rgex and the OpenSHMEM state (collective).
fn init(level: c_int) {
    if state::running().is_some() {
        return; // a second shmem_init while running: nothing to do
    }
    if state::finalized() {
        fatal(
            None,
            "shmem_init",
            "called after shmem_finalize (rgex initialises once per process)",
        );
    }
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let size = heap_size(
        var("SHMEM_SYMMETRIC_SIZE").as_deref(),
        var("RGEX_SEGMENT_SIZE").as_deref(),
    )
    .unwrap_or_else(|e| fatal(None, "shmem_init", e));
    let mut pairs: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("RGEX_"))
        .collect();
    pairs.push(("RGEX_SEGMENT_SIZE".into(), size.to_string()));
    let settings = Environment::from_pairs(pairs);
    let (client, ()) = rgex::init_with_settings(&settings, |_| Ok(()))
        .unwrap_or_else(|e| fatal(None, "shmem_init", format_args!("rgex::init failed: {e}")));
    let me = client.rank().0;
    let ep = client.endpoint().clone();
    let world = client.world().clone();
    let amo32 = AtomicDomain::<u32>::new(&ep, &world, OPS).or_die(me, "shmem_init");
    let amo64 = AtomicDomain::<u64>::new(&ep, &world, OPS).or_die(me, "shmem_init");
    let heap = Heap::new(ep.segment().len() as u64);
    let teams = crate::team::predefined(&world, &ep, me, client.size());
    let statics = crate::statics::register(&ep, &world, me);
    state::install(Shmem {
        me,
        n: client.size(),
        ep,
        world,
        client: Mutex::new(Some(client)),
        heap,
        amo32,
        amo64,
        thread_level: level,
        teams,
        statics,
    });
}

entry! {
    /// `void shmem_init(void)`.
    pub extern "C" fn shmem_init / pshmem_init() {
        init(THREAD_SINGLE);
    }
}

entry! {
    /// `int shmem_init_thread(int requested, int *provided)`: every level
    /// is provided as asked (rgex's endpoint is thread-safe).
    ///
    /// # Safety
    /// `provided` is NULL or points to a writable `int`.
    pub unsafe extern "C" fn shmem_init_thread / pshmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
        if !(THREAD_SINGLE..=THREAD_MULTIPLE).contains(&requested) {
            fatal(
                None,
                "shmem_init_thread",
                format_args!(
                    "requested = {requested} is not a thread level (SHMEM_THREAD_SINGLE {THREAD_SINGLE} \
                     to SHMEM_THREAD_MULTIPLE {THREAD_MULTIPLE})"
                ),
            );
        }
        init(requested);
        if !provided.is_null() {
            // SAFETY: the caller's contract.
            unsafe { *provided = state::get("shmem_init_thread").thread_level };
        }
        0
    }
}

entry! {
    /// `void shmem_query_thread(int *provided)`.
    ///
    /// # Safety
    /// `provided` points to a writable `int`.
    pub unsafe extern "C" fn shmem_query_thread / pshmem_query_thread(provided: *mut c_int) {
        let s = state::get("shmem_query_thread");
        if provided.is_null() {
            fatal(Some(s.me), "shmem_query_thread", "provided is NULL");
        }
        // SAFETY: the caller's contract, checked not NULL.
        unsafe { *provided = s.thread_level };
    }
}

entry! {
    /// `void shmem_finalize(void)` (collective): completes this PE's
    /// operations, then a final barrier.
    pub extern "C" fn shmem_finalize / pshmem_finalize() {
        let s = state::get("shmem_finalize");
        crate::order::quiet(s, "shmem_finalize");
        let client = s.client.lock().unwrap_or_else(|e| e.into_inner()).take();
        state::mark_finalized();
        if let Some(c) = client {
            c.finalize().or_die(s.me, "shmem_finalize");
        }
    }
}

entry! {
    /// `int shmem_my_pe(void)`.
    pub extern "C" fn shmem_my_pe / pshmem_my_pe() -> c_int {
        state::get("shmem_my_pe").me as c_int
    }
}

entry! {
    /// `int shmem_n_pes(void)`.
    pub extern "C" fn shmem_n_pes / pshmem_n_pes() -> c_int {
        state::get("shmem_n_pes").n as c_int
    }
}

entry! {
    /// `int shmem_pe_accessible(int pe)`: 1 for every PE of the job.
    pub extern "C" fn shmem_pe_accessible / pshmem_pe_accessible(pe: c_int) -> c_int {
        let s = state::get("shmem_pe_accessible");
        c_int::from(u32::try_from(pe).is_ok_and(|p| p < s.n))
    }
}

entry! {
    /// `int shmem_addr_accessible(const void *addr, int pe)`: 1 for an
    /// address of the symmetric heap and a PE of the job.
    pub extern "C" fn shmem_addr_accessible / pshmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
        let s = state::get("shmem_addr_accessible");
        let ok = u32::try_from(pe).is_ok_and(|p| p < s.n) && s.try_offset(addr.cast(), 1).is_some();
        c_int::from(ok)
    }
}

entry! {
    /// `void *shmem_ptr(const void *dest, int pe)`: the address of `pe`'s
    /// `dest` in this process, for this PE and node-local peers whose heap
    /// is mapped here; NULL otherwise.
    pub extern "C" fn shmem_ptr / pshmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
        let s = state::get("shmem_ptr");
        s.local_address(dest.cast(), pe)
            .map_or(std::ptr::null_mut(), |p| p.cast())
    }
}

entry! {
    /// `void shmem_global_exit(int status)`: ends the whole job with
    /// `status`, whatever the other PEs are doing. Under rgex-run it asks the
    /// launcher to end every PE and exit with `status` (a frame on its
    /// bootstrap socket), then ends this process with `status`. Elsewhere
    /// (under a PMIx launcher) only the non-zero exit ends the others.
    pub extern "C" fn shmem_global_exit / pshmem_global_exit(status: c_int) {
        // SAFETY: fflush(NULL) flushes every C output stream.
        unsafe { libc::fflush(std::ptr::null_mut()) };
        rgex::bootstrap::request_job_exit(status);
        std::process::exit(status)
    }
}

entry! {
    /// `void shmem_info_get_version(int *major, int *minor)` (any time).
    ///
    /// # Safety
    /// Both point to writable `int`s.
    pub unsafe extern "C" fn shmem_info_get_version / pshmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
        if major.is_null() || minor.is_null() {
            fatal(None, "shmem_info_get_version", "major or minor is NULL");
        }
        // SAFETY: the caller's contract, checked not NULL.
        unsafe {
            *major = VERSION.0;
            *minor = VERSION.1;
        }
    }
}

entry! {
    /// `void shmem_info_get_name(char *name)` (any time): copies
    /// `SHMEM_VENDOR_STRING`, NUL included (at most `SHMEM_MAX_NAME_LEN`).
    ///
    /// # Safety
    /// `name` points to at least `SHMEM_MAX_NAME_LEN` writable bytes.
    pub unsafe extern "C" fn shmem_info_get_name / pshmem_info_get_name(name: *mut c_char) {
        if name.is_null() {
            fatal(None, "shmem_info_get_name", "name is NULL");
        }
        // SAFETY: the caller's contract; VENDOR is shorter than SHMEM_MAX_NAME_LEN.
        unsafe { std::ptr::copy_nonoverlapping(VENDOR.as_ptr(), name.cast(), VENDOR.len()) };
    }
}

/// `const char *shmemx_conduit_name(void)` (shmemx.h): the rgex conduit
/// carrying the job ("smp", "ofi", "ibv", "scc"), NUL-terminated.
#[no_mangle]
pub extern "C" fn shmemx_conduit_name() -> *const c_char {
    let s = state::get("shmemx_conduit_name");
    let name: &'static str = s.ep.conduit().name();
    match name {
        "smp" => c"smp".as_ptr(),
        "ofi" => c"ofi".as_ptr(),
        "ibv" => c"ibv".as_ptr(),
        "scc" => c"scc".as_ptr(),
        _ => c"unknown".as_ptr(),
    }
}
