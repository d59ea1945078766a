//! The process's one OpenSHMEM state: made by `shmem_init`, read by every
//! call, refused before init and after `shmem_finalize`.

use crate::fatal::fatal;
use crate::heap::Heap;
use rgex::{AtomicDomain, Client, Endpoint, Team};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Everything a call needs, fixed at init.
pub struct Shmem {
    /// This PE.
    pub me: u32,
    /// The number of PEs.
    pub n: u32,
    /// The endpoint every operation goes through.
    pub ep: Arc<Endpoint>,
    /// The world team (barriers, the heap's agreement checks).
    pub world: Team,
    /// The client, taken by `shmem_finalize`.
    pub client: Mutex<Option<Client>>,
    /// The symmetric heap over this PE's rgex segment.
    pub heap: Heap,
    /// The 32-bit atomics (every 4-byte AMO type, float as bits).
    pub amo32: AtomicDomain<u32>,
    /// The 64-bit atomics (every 8-byte AMO type, double as bits).
    pub amo64: AtomicDomain<u64>,
    /// The thread level `shmem_init_thread` granted.
    pub thread_level: i32,
    /// `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED`.
    pub teams: crate::team::Predefined,
    /// The program's static data, registered as symmetric (if it has any).
    pub statics: Option<crate::statics::Statics>,
}

/// Where the process stands.
static PHASE: AtomicU8 = AtomicU8::new(NONE);
/// Before `shmem_init`.
const NONE: u8 = 0;
/// Between `shmem_init` and `shmem_finalize`.
const RUNNING: u8 = 1;
/// After `shmem_finalize`.
const FINALIZED: u8 = 2;

static STATE: OnceLock<Shmem> = OnceLock::new();

/// The state, for the call `what`; the end of the job (naming the call)
/// before `shmem_init` or after `shmem_finalize`.
///
/// ```no_run
/// let s = rgex_shmem::state::get("shmem_my_pe");
/// println!("PE {} of {}", s.me, s.n);
/// ```
#[inline]
pub fn get(what: &str) -> &'static Shmem {
    // Acquire: pairs with the Release store in `install`, so the state
    // set before it is seen (OnceLock::get synchronises as well).
    match (PHASE.load(Ordering::Acquire), STATE.get()) {
        (RUNNING, Some(s)) => s,
        (FINALIZED, Some(s)) => fatal(
            Some(s.me),
            what,
            "called after shmem_finalize (only shmem_info_get_version and \
             shmem_info_get_name may follow it)",
        ),
        _ => fatal(
            None,
            what,
            "called before shmem_init (call shmem_init or shmem_init_thread first)",
        ),
    }
}

/// The state if initialised and not finalized.
pub fn running() -> Option<&'static Shmem> {
    // Acquire: as in `get`.
    (PHASE.load(Ordering::Acquire) == RUNNING)
        .then(|| STATE.get())
        .flatten()
}

/// True once `shmem_finalize` has run.
pub fn finalized() -> bool {
    // Relaxed: only decides which message an init after finalize prints.
    PHASE.load(Ordering::Relaxed) == FINALIZED
}

/// True once `shmem_init` has begun (running or finalized).
pub fn started() -> bool {
    STATE.get().is_some()
}

/// Make `s` the process's state (once, by `shmem_init`).
pub fn install(s: Shmem) -> &'static Shmem {
    let me = s.me;
    if STATE.set(s).is_err() {
        fatal(Some(me), "shmem_init", "the state was made twice");
    }
    // Release: a thread that sees RUNNING sees the state (see `get`).
    PHASE.store(RUNNING, Ordering::Release);
    match STATE.get() {
        Some(s) => s,
        None => fatal(Some(me), "shmem_init", "the state was not kept"),
    }
}

/// Mark the state finalized (by `shmem_finalize`).
pub fn mark_finalized() {
    // Release: as in `install`.
    PHASE.store(FINALIZED, Ordering::Release);
}
