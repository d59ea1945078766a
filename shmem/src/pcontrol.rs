//! The profiling interface (OpenSHMEM 1.5):
//! `shmem_pcontrol(level, ...)`.
//!
//! A profiling library is a tool's, interposed on the `shmem_` names
//! (every routine is also exported as `pshmem_`, see `include/pshmem.h`);
//! it defines its own `shmem_pcontrol` to see the levels. rgex-shmem's
//! records the level and does nothing else, as the specification allows;
//! [`level`] reads it back.
//!
//! ```
//! rgex_shmem::pcontrol::shmem_pcontrol(0);
//! assert_eq!(rgex_shmem::pcontrol::level(), 0);
//! rgex_shmem::pcontrol::shmem_pcontrol(1);
//! assert_eq!(rgex_shmem::pcontrol::level(), 1);
//! ```

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

/// The last level asked for; 1 (profiling on) until a call.
static LEVEL: AtomicI32 = AtomicI32::new(1);

entry! {
    /// `void shmem_pcontrol(const int level, ...)` (any time, even before
    /// `shmem_init`).
    ///
    /// The C declaration is variadic and this definition is not: on the
    /// x86-64 System V and AArch64 Linux calling conventions the named
    /// `level` arrives in the same register either way, and the further
    /// arguments (a profiling library's own) are not read. Stable Rust cannot
    /// define a C-variadic function.
    pub extern "C" fn shmem_pcontrol / pshmem_pcontrol(level: c_int) {
        // Relaxed: a setting with no data behind it.
        LEVEL.store(level, Ordering::Relaxed);
    }
}

/// The level of the last [`shmem_pcontrol`] (1 if none).
pub fn level() -> c_int {
    // Relaxed: as in `shmem_pcontrol`.
    LEVEL.load(Ordering::Relaxed)
}
