//! Teams (OpenSHMEM 1.5 section 9.4): `SHMEM_TEAM_WORLD`,
//! `SHMEM_TEAM_SHARED`, `shmem_team_split_strided`, `shmem_team_split_2d`,
//! `shmem_team_my_pe`, `shmem_team_n_pes`, `shmem_team_translate_pe`,
//! `shmem_team_get_config`, `shmem_team_destroy`, `shmem_team_ptr`.
//!
//! A `shmem_team_t` is a pointer to a [`TeamObj`] holding an rgex
//! [`Team`]: the world's and the shared team's are made at init (the
//! shared team by one split of the world, by the lowest world rank whose
//! heap is mapped here), a split's by `Team::split` of its parent, which
//! is collective over the parent as OpenSHMEM's splits are. Handles this
//! library did not make, or destroyed ones, are refused by name (the set
//! of live handles is kept), never dereferenced.

use crate::fatal::{fatal, OrDie};
use crate::state::{self, Shmem};
use rgex::{Rank, Team};
use std::collections::HashSet;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// `shmem_team_config_t`: the one field OpenSHMEM 1.5 defines.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeamConfig {
    /// `num_contexts`: the contexts the team's creator expects to make.
    pub num_contexts: c_int,
}

/// `SHMEM_TEAM_NUM_CONTEXTS`: the config mask bit of `num_contexts`.
pub const TEAM_NUM_CONTEXTS: std::ffi::c_long = 1;

/// What a `shmem_team_t` points to.
pub struct TeamObj {
    /// The rgex team (its members in team order are world PEs).
    pub team: Team,
    /// The configuration it was made with.
    pub config: TeamConfig,
    /// False for the predefined teams (they cannot be destroyed).
    pub destroyable: bool,
}

/// The live team handles (addresses of [`TeamObj`]s), so a stale or
/// foreign handle is refused instead of followed.
static LIVE: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

fn live() -> std::sync::MutexGuard<'static, Option<HashSet<usize>>> {
    // The set is consistent after every insert and remove.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Make a handle for `obj` (leaked until `shmem_team_destroy`).
pub fn handle(obj: TeamObj) -> *mut TeamObj {
    let p = Box::into_raw(Box::new(obj));
    live().get_or_insert_with(HashSet::new).insert(p as usize);
    p
}

/// A predefined team's handle: the address of one of these, which C
/// reads as `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED` (constants, usable
/// before `shmem_init` and in static initialisers).
#[repr(C)]
pub struct Mark(u8);

/// `SHMEM_TEAM_WORLD` is `&rgex_shmem_team_world`.
#[no_mangle]
pub static rgex_shmem_team_world: Mark = Mark(0);

/// `SHMEM_TEAM_SHARED` is `&rgex_shmem_team_shared`.
#[no_mangle]
pub static rgex_shmem_team_shared: Mark = Mark(1);

fn is_mark(t: *const TeamObj, m: &'static Mark) -> bool {
    std::ptr::eq(t.cast::<Mark>(), m)
}

/// The predefined teams, made once by init.
pub struct Predefined {
    /// `SHMEM_TEAM_WORLD`.
    pub world: TeamObj,
    /// `SHMEM_TEAM_SHARED`.
    pub shared: TeamObj,
}

/// The world and shared teams (collective over the world, at init): the
/// shared team holds the PEs whose heaps this PE maps (smp: all).
pub fn predefined(world: &Team, ep: &rgex::Endpoint, me: u32, n: u32) -> Predefined {
    let loc = ep.locality();
    let colour = (0..n)
        .find(|&r| r == me || loc.mapped_segment(Rank(r)).is_some())
        .unwrap_or(me);
    let shared = world
        .split(colour, me)
        .or_die(me, "shmem_init (SHMEM_TEAM_SHARED)")
        .unwrap_or_else(|| fatal(Some(me), "shmem_init", "no shared team"));
    let config = TeamConfig::default();
    Predefined {
        world: TeamObj {
            team: world.clone(),
            config,
            destroyable: false,
        },
        shared: TeamObj {
            team: shared,
            config,
            destroyable: false,
        },
    }
}

/// The handle of the world team (what `SHMEM_TEAM_WORLD` is).
pub fn world_handle() -> *const TeamObj {
    (&rgex_shmem_team_world as *const Mark).cast()
}

/// The team `t` names, or `None` for `SHMEM_TEAM_INVALID` (NULL); the end
/// of the job for a handle that is not a live team.
// Dereferenced only once found in LIVE, the set of handles this library
// made and has not destroyed.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn resolve<'a>(s: &'a Shmem, what: &str, t: *const TeamObj) -> Option<&'a TeamObj> {
    if t.is_null() {
        return None;
    }
    if is_mark(t, &rgex_shmem_team_world) {
        return Some(&s.teams.world);
    }
    if is_mark(t, &rgex_shmem_team_shared) {
        return Some(&s.teams.shared);
    }
    if !live().as_ref().is_some_and(|l| l.contains(&(t as usize))) {
        fatal(
            Some(s.me),
            what,
            format_args!(
                "team = {t:p} is not a team (not made by shmem_team_split_*, or destroyed; \
                 SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED always are)"
            ),
        );
    }
    // SAFETY: a live handle points to a TeamObj that stays allocated
    // until shmem_team_destroy removes it from LIVE.
    Some(unsafe { &*t })
}

/// The team `t` names, the end of the job for SHMEM_TEAM_INVALID.
pub fn valid<'a>(s: &'a Shmem, what: &str, t: *const TeamObj) -> &'a TeamObj {
    resolve(s, what, t).unwrap_or_else(|| {
        fatal(
            Some(s.me),
            what,
            "team is SHMEM_TEAM_INVALID (a split this PE was not in gives it)",
        )
    })
}

entry! {
    /// `int shmem_team_my_pe(shmem_team_t team)`: -1 for SHMEM_TEAM_INVALID.
    pub extern "C" fn shmem_team_my_pe / pshmem_team_my_pe(team: *const TeamObj) -> c_int {
        let s = state::get("shmem_team_my_pe");
        resolve(s, "shmem_team_my_pe", team).map_or(-1, |t| t.team.my_rank() as c_int)
    }
}

entry! {
    /// `int shmem_team_n_pes(shmem_team_t team)`: -1 for SHMEM_TEAM_INVALID.
    pub extern "C" fn shmem_team_n_pes / pshmem_team_n_pes(team: *const TeamObj) -> c_int {
        let s = state::get("shmem_team_n_pes");
        resolve(s, "shmem_team_n_pes", team).map_or(-1, |t| t.team.size() as c_int)
    }
}

entry! {
    /// `int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
    /// shmem_team_t dest_team)`: `src_pe`'s number in `dest_team`, or -1.
    pub extern "C" fn shmem_team_translate_pe / pshmem_team_translate_pe(
        src_team: *const TeamObj,
        src_pe: c_int,
        dest_team: *const TeamObj,
    ) -> c_int {
        let what = "shmem_team_translate_pe";
        let s = state::get(what);
        let (Some(src), Some(dst)) = (resolve(s, what, src_team), resolve(s, what, dest_team)) else {
            return -1;
        };
        let Ok(r) = u32::try_from(src_pe) else {
            return -1;
        };
        src.team
            .world_rank(r)
            .ok()
            .and_then(|w| dst.team.team_rank(w))
            .map_or(-1, |t| t as c_int)
    }
}

entry! {
    /// `int shmem_team_get_config(shmem_team_t team, long config_mask,
    /// shmem_team_config_t *config)`: the fields `config_mask` names.
    ///
    /// # Safety
    /// `config` is NULL or writable.
    pub unsafe extern "C" fn shmem_team_get_config / pshmem_team_get_config(
        team: *const TeamObj,
        config_mask: std::ffi::c_long,
        config: *mut TeamConfig,
    ) -> c_int {
        let what = "shmem_team_get_config";
        let s = state::get(what);
        let Some(t) = resolve(s, what, team) else {
            return -1;
        };
        if config.is_null() {
            return -1;
        }
        if config_mask & TEAM_NUM_CONTEXTS != 0 {
            // SAFETY: the caller's contract, checked not NULL.
            unsafe { (*config).num_contexts = t.config.num_contexts };
        }
        0
    }
}

/// The configuration a split asks for.
///
/// # Safety
/// `config` is NULL or readable.
unsafe fn config_of(config: *const TeamConfig, mask: std::ffi::c_long) -> TeamConfig {
    if config.is_null() || mask & TEAM_NUM_CONTEXTS == 0 {
        return TeamConfig::default();
    }
    // SAFETY: the caller's contract.
    unsafe { *config }
}

/// Split `parent` into the members `colour` gives (collective over the
/// parent); the new team's handle, or NULL for a non-member.
fn split(
    s: &Shmem,
    what: &str,
    parent: &TeamObj,
    colour: Option<u32>,
    key: u32,
    config: TeamConfig,
) -> *mut TeamObj {
    let team = parent
        .team
        .split(colour.unwrap_or(rgex::NO_COLOUR), key)
        .or_die(s.me, what);
    match team {
        Some(team) => handle(TeamObj {
            team,
            config,
            destroyable: true,
        }),
        None => std::ptr::null_mut(),
    }
}

entry! {
    /// `int shmem_team_split_strided(shmem_team_t parent_team, int start,
    /// int stride, int size, const shmem_team_config_t *config, long
    /// config_mask, shmem_team_t *new_team)` (collective over the parent):
    /// the parent's PEs `start + i * stride` for `i` below `size`. 0 on
    /// success; -1, and SHMEM_TEAM_INVALID in `new_team`, for an invalid
    /// parent or a triplet outside it (the same on every PE).
    ///
    /// # Safety
    /// `config` is NULL or readable; `new_team` is writable.
    pub unsafe extern "C" fn shmem_team_split_strided / pshmem_team_split_strided(
        parent_team: *const TeamObj,
        start: c_int,
        stride: c_int,
        size: c_int,
        config: *const TeamConfig,
        config_mask: std::ffi::c_long,
        new_team: *mut *mut TeamObj,
    ) -> c_int {
        let what = "shmem_team_split_strided";
        let s = state::get(what);
        if new_team.is_null() {
            fatal(Some(s.me), what, "new_team is NULL");
        }
        // SAFETY: the caller's contract, checked not NULL.
        unsafe { *new_team = std::ptr::null_mut() };
        let Some(parent) = resolve(s, what, parent_team) else {
            return -1;
        };
        let n = i64::from(parent.team.size());
        let (start, stride, size) = (i64::from(start), i64::from(stride), i64::from(size));
        let last = start + stride * (size - 1);
        if size < 1 || start < 0 || start >= n || last < 0 || last >= n || (stride == 0 && size > 1) {
            return -1;
        }
        let me = i64::from(parent.team.my_rank());
        // My index in the triplet, if I am in it.
        let index = (0..size).find(|i| start + stride * i == me);
        // SAFETY: the caller's contract.
        let config = unsafe { config_of(config, config_mask) };
        let t = split(
            s,
            what,
            parent,
            index.map(|_| 0),
            index.unwrap_or(0) as u32,
            config,
        );
        // SAFETY: as above.
        unsafe { *new_team = t };
        0
    }
}

entry! {
    /// `int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const
    /// shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t
    /// *xaxis_team, const shmem_team_config_t *yaxis_config, long
    /// yaxis_mask, shmem_team_t *yaxis_team)` (collective over the parent):
    /// the parent as a grid `xrange` wide (at most its size), row by row; each
    /// PE gets its row (x axis) and its column (y axis).
    ///
    /// # Safety
    /// The configs are NULL or readable; the team pointers are writable.
    #[allow(clippy::too_many_arguments)] // the C routine's
    pub unsafe extern "C" fn shmem_team_split_2d / pshmem_team_split_2d(
        parent_team: *const TeamObj,
        xrange: c_int,
        xaxis_config: *const TeamConfig,
        xaxis_mask: std::ffi::c_long,
        xaxis_team: *mut *mut TeamObj,
        yaxis_config: *const TeamConfig,
        yaxis_mask: std::ffi::c_long,
        yaxis_team: *mut *mut TeamObj,
    ) -> c_int {
        let what = "shmem_team_split_2d";
        let s = state::get(what);
        if xaxis_team.is_null() || yaxis_team.is_null() {
            fatal(Some(s.me), what, "xaxis_team or yaxis_team is NULL");
        }
        // SAFETY: the caller's contract, checked not NULL.
        unsafe {
            *xaxis_team = std::ptr::null_mut();
            *yaxis_team = std::ptr::null_mut();
        }
        let Some(parent) = resolve(s, what, parent_team) else {
            return -1;
        };
        if xrange < 1 {
            return -1;
        }
        let xr = (xrange as u32).min(parent.team.size());
        let me = parent.team.my_rank();
        // SAFETY: the caller's contract.
        let (xc, yc) = unsafe {
            (
                config_of(xaxis_config, xaxis_mask),
                config_of(yaxis_config, yaxis_mask),
            )
        };
        let x = split(s, what, parent, Some(me / xr), me % xr, xc);
        let y = split(s, what, parent, Some(me % xr), me / xr, yc);
        // SAFETY: as above.
        unsafe {
            *xaxis_team = x;
            *yaxis_team = y;
        }
        0
    }
}

entry! {
    /// `void shmem_team_destroy(shmem_team_t team)` (collective over the
    /// team): a barrier of its members, then the handle is gone. Destroying
    /// SHMEM_TEAM_INVALID does nothing; the predefined teams are refused.
    // Freed only once found in LIVE (by `resolve`), and removed from it first.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub extern "C" fn shmem_team_destroy / pshmem_team_destroy(team: *mut TeamObj) {
        let what = "shmem_team_destroy";
        let s = state::get(what);
        let Some(t) = resolve(s, what, team) else {
            return;
        };
        if !t.destroyable {
            fatal(
                Some(s.me),
                what,
                "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed",
            );
        }
        crate::order::quiet(s, what);
        t.team.barrier().or_die(s.me, what);
        live().as_mut().map(|l| l.remove(&(team as usize)));
        // SAFETY: made by `handle` (Box::into_raw), removed from LIVE just
        // now, so no later call reaches it.
        drop(unsafe { Box::from_raw(team) });
    }
}

entry! {
    /// `void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)`:
    /// `shmem_ptr` of the team's PE `pe`.
    pub extern "C" fn shmem_team_ptr / pshmem_team_ptr(
        team: *const TeamObj,
        dest: *const c_void,
        pe: c_int,
    ) -> *mut c_void {
        let what = "shmem_team_ptr";
        let s = state::get(what);
        let Some(t) = resolve(s, what, team) else {
            return std::ptr::null_mut();
        };
        let Some(w) = u32::try_from(pe)
            .ok()
            .and_then(|p| t.team.world_rank(p).ok())
        else {
            return std::ptr::null_mut();
        };
        s.local_address(dest.cast(), w.0 as c_int)
            .map_or(std::ptr::null_mut(), |p| p.cast())
    }
}

/// The world PE of team PE `pe` of `t`, or the end of the job naming
/// the team's size.
pub fn world_pe(s: &Shmem, what: &str, t: &TeamObj, pe: c_int) -> u32 {
    match u32::try_from(pe)
        .ok()
        .and_then(|p| t.team.world_rank(p).ok())
    {
        Some(r) => r.0,
        None => fatal(
            Some(s.me),
            what,
            format_args!(
                "PE {pe} is out of range: the team has PEs 0..={}",
                t.team.size().saturating_sub(1)
            ),
        ),
    }
}
