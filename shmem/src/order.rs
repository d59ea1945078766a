//! Memory ordering (OpenSHMEM 1.5 section 9.11): `shmem_fence` and
//! `shmem_quiet`, and the barriers built on them (`shmem_barrier_all`,
//! `shmem_sync_all`).
//!
//! A put returns at local completion (rgex's implicit-handle put); quiet
//! waits for every put, get and AMO this thread issued on the endpoint
//! to complete remotely. rgex does not order implicit operations to one
//! peer, so `shmem_fence` is `shmem_quiet` (a stronger guarantee).

use crate::fatal::OrDie;
use crate::state::{self, Shmem};

/// Complete this thread's outstanding puts, gets and AMOs.
pub fn quiet(s: &Shmem, what: &str) {
    s.ep.nbi_wait_all().or_die(s.me, what);
}

entry! {
    /// `void shmem_quiet(void)`.
    pub extern "C" fn shmem_quiet / pshmem_quiet() {
        quiet(state::get("shmem_quiet"), "shmem_quiet");
    }
}

entry! {
    /// `void shmem_fence(void)`: as `shmem_quiet` (see the module docs).
    pub extern "C" fn shmem_fence / pshmem_fence() {
        quiet(state::get("shmem_fence"), "shmem_fence");
    }
}

entry! {
    /// `void shmem_barrier_all(void)`: quiet, then a barrier of every PE.
    pub extern "C" fn shmem_barrier_all / pshmem_barrier_all() {
        let s = state::get("shmem_barrier_all");
        quiet(s, "shmem_barrier_all");
        s.world.barrier().or_die(s.me, "shmem_barrier_all");
    }
}

entry! {
    /// `void shmem_sync_all(void)`: a barrier of every PE, without quiet.
    pub extern "C" fn shmem_sync_all / pshmem_sync_all() {
        let s = state::get("shmem_sync_all");
        s.world.barrier().or_die(s.me, "shmem_sync_all");
    }
}
