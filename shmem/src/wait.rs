//! Point-to-point synchronisation (OpenSHMEM 1.5 section 9.10):
//! `wait_until`, `test`, and their `_all`, `_any`, `_some` and `_vector`
//! forms, for every point-to-point type.
//!
//! One 4- or 8-byte word waits through rgex's `Endpoint::wait_until`
//! (progress, a short spin, then sleeps on the conduit's wait object,
//! woken by a put-with-signal); a 2-byte word and the array forms poll
//! rgex with its backoff (sleeping between empty polls when the job is
//! polite). Every read is an Acquire load, so data put before a flag
//! (with a fence between) is seen once the flag is.

use crate::fatal::{fatal, OrDie};
use crate::state::{self, Shmem};
use rgex::{Backoff, Cmp};
use std::ffi::c_int;
use std::sync::atomic::{
    AtomicI16, AtomicI32, AtomicI64, AtomicU16, AtomicU32, AtomicU64, Ordering,
};

/// A point-to-point type.
pub trait SyncWord: Copy + PartialOrd {
    /// Acquire load of the word at `p`.
    ///
    /// # Safety
    /// `p` is aligned and valid for the call.
    unsafe fn load(p: *const Self) -> Self;
    /// Wait on one word through rgex (32- and 64-bit types), or `None`.
    fn rgex_wait(s: &Shmem, offset: u64, cmp: Cmp, value: Self) -> Option<rgex::Result<()>>;
}

macro_rules! sync_word {
    ($t:ty, $atomic:ty, $rgex:tt) => {
        impl SyncWord for $t {
            #[inline]
            unsafe fn load(p: *const Self) -> Self {
                // SAFETY: the caller's contract; the word is shared with
                // other PEs' puts and AMOs, so it is read atomically.
                // Acquire: pairs with a put-with-signal's Release update
                // and a put's release fence (see rgex's RMA).
                unsafe { (*p.cast::<$atomic>()).load(Ordering::Acquire) as $t }
            }
            #[inline]
            fn rgex_wait(s: &Shmem, offset: u64, cmp: Cmp, value: Self) -> Option<rgex::Result<()>> {
                sync_word!(@wait $rgex, s, offset, cmp, value)
            }
        }
    };
    (@wait none, $s:expr, $o:expr, $c:expr, $v:expr) => {{
        let _ = ($s, $o, $c, $v);
        None
    }};
    (@wait $r:tt, $s:expr, $o:expr, $c:expr, $v:expr) => {
        Some($s.ep.wait_until::<$r>($o, $c, $v as $r).map(drop))
    };
}

sync_word!(i16, AtomicI16, none);
sync_word!(u16, AtomicU16, none);
sync_word!(i32, AtomicI32, i32);
sync_word!(u32, AtomicU32, u32);
sync_word!(i64, AtomicI64, i64);
sync_word!(u64, AtomicU64, u64);
sync_word!(isize, AtomicI64, i64);
sync_word!(usize, AtomicU64, u64);

/// `SHMEM_CMP_*` as rgex's comparison, or the end of the job naming it.
pub fn cmp_of(s: &Shmem, what: &str, cmp: c_int) -> Cmp {
    match cmp {
        0 => Cmp::Eq,
        1 => Cmp::Ne,
        2 => Cmp::Gt,
        3 => Cmp::Ge,
        4 => Cmp::Lt,
        5 => Cmp::Le,
        _ => fatal(
            Some(s.me),
            what,
            format_args!(
                "cmp = {cmp} is not a SHMEM_CMP_* value (SHMEM_CMP_EQ 0 to SHMEM_CMP_LE 5)"
            ),
        ),
    }
}

/// The values words are compared with: one for all, or one each.
#[derive(Clone, Copy)]
pub enum Values<T> {
    /// `cmp_value`.
    One(T),
    /// `cmp_values[i]`.
    Each(*const T),
}

/// Which words must hold.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every word not excluded.
    All,
    /// One word.
    Any,
    /// At least one; report all that hold.
    Some,
}

/// The arguments of an array wait or test.
pub struct Words<T> {
    /// `ivars`.
    pub ivars: *const T,
    /// `nelems`.
    pub n: usize,
    /// `status` (NULL: none excluded).
    pub status: *const c_int,
    /// `indices` for the `_some` forms.
    pub indices: *mut usize,
    /// `cmp`.
    pub cmp: c_int,
    /// The values.
    pub values: Values<T>,
}

thread_local! {
    /// Where this thread's next `_any` scan starts (see [`scan`]).
    static ANY_START: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The words of `w` that hold now: (how many, the first one); the `_some`
/// forms' indices are written.
///
/// # Safety
/// As for [`wait_words`].
unsafe fn scan<T: SyncWord>(w: &Words<T>, cmp: Cmp, mode: Mode) -> (usize, usize, usize) {
    let (mut held, mut first, mut live) = (0, usize::MAX, 0);
    // `_any` answers the first word that holds from a start that moves on
    // by one each call (per thread), so repeated calls with the same
    // words come round to every one that holds, not always the lowest.
    let start = if mode == Mode::Any && w.n > 0 {
        ANY_START.with(|c| {
            let v = c.get();
            c.set(v.wrapping_add(1));
            v % w.n
        })
    } else {
        0
    };
    let rank = |i: usize| (i + w.n - start) % w.n.max(1);
    for i in 0..w.n {
        // SAFETY: `status` is NULL or has `n` entries (the caller's contract).
        if !w.status.is_null() && unsafe { *w.status.add(i) } != 0 {
            continue;
        }
        live += 1;
        let v = match w.values {
            Values::One(v) => v,
            // SAFETY: `cmp_values` has `n` entries (the caller's contract).
            Values::Each(p) => unsafe { *p.add(i) },
        };
        // SAFETY: `ivars` has `n` aligned words (checked symmetric).
        if cmp.holds(unsafe { T::load(w.ivars.add(i)) }, v) {
            if mode == Mode::Some {
                // SAFETY: `indices` has `n` entries (the caller's contract).
                unsafe { *w.indices.add(held) = i };
            }
            held += 1;
            if first == usize::MAX || rank(i) < rank(first) {
                first = i;
            }
        }
    }
    (held, first, live)
}

/// What a wait or test returns: `_all`: 1 if all hold; `_any`: the index
/// of one that holds, or `SIZE_MAX`; `_some`: how many hold.
fn answer(mode: Mode, (held, first, live): (usize, usize, usize)) -> Option<usize> {
    match mode {
        Mode::All => (held == live).then_some(1),
        Mode::Any => (held > 0).then_some(first),
        Mode::Some => (held > 0).then_some(held),
    }
}

/// Check an array's arguments; `cmp` as rgex's.
fn check<T>(s: &Shmem, what: &str, w: &Words<T>, mode: Mode) -> Cmp {
    if w.n > 0 {
        s.offset(what, "ivars", w.ivars.cast(), w.n * size_of::<T>());
        if mode == Mode::Some && w.indices.is_null() {
            fatal(Some(s.me), what, "indices is NULL");
        }
        if matches!(w.values, Values::Each(p) if p.is_null()) {
            fatal(Some(s.me), what, "cmp_values is NULL");
        }
    }
    cmp_of(s, what, w.cmp)
}

/// Wait until the words of `w` hold as `mode` says: `_all` returns 1,
/// `_any` the index of one that holds, `_some` how many hold (their
/// indices written). With every word excluded it returns at once
/// (`_all` 1, `_any` `SIZE_MAX`, `_some` 0).
///
/// # Safety
/// `ivars` has `nelems` words; `status` is NULL or has `nelems`
/// entries, and so do `indices` (for `_some`) and `cmp_values`.
pub unsafe fn wait_words<T: SyncWord>(what: &str, w: Words<T>, mode: Mode) -> usize {
    let s = state::get(what);
    let cmp = check(s, what, &w, mode);
    let mut backoff = Backoff::new(s.ep.polite());
    loop {
        // SAFETY: forwarded.
        let now = unsafe { scan(&w, cmp, mode) };
        if now.2 == 0 {
            return match mode {
                Mode::All => 1,
                Mode::Any => usize::MAX,
                Mode::Some => 0,
            };
        }
        if let Some(a) = answer(mode, now) {
            return a;
        }
        if s.ep.poll().or_die(s.me, what) == 0 {
            backoff.snooze();
        } else {
            backoff.reset();
        }
    }
}

/// Test the words of `w` once (after one poll): the answer, `_all` 0,
/// `_any` `SIZE_MAX` or `_some` 0 when it does not hold.
///
/// # Safety
/// As for [`wait_words`].
pub unsafe fn test_words<T: SyncWord>(what: &str, w: Words<T>, mode: Mode) -> usize {
    let s = state::get(what);
    let cmp = check(s, what, &w, mode);
    s.ep.poll().or_die(s.me, what);
    // SAFETY: forwarded.
    let now = unsafe { scan(&w, cmp, mode) };
    answer(mode, now).unwrap_or(match mode {
        Mode::All => 0,
        Mode::Any => usize::MAX,
        Mode::Some => 0,
    })
}

/// `shmem_TYPE_wait_until`: one word.
///
/// # Safety
/// `ivar` is checked symmetric; nothing else.
pub unsafe fn wait_until<T: SyncWord>(what: &str, ivar: *const T, cmp: c_int, value: T) {
    let s = state::get(what);
    let off = s.offset(what, "ivar", ivar.cast(), size_of::<T>());
    let c = cmp_of(s, what, cmp);
    // rgex waits on its primordial segment's words; static data polls.
    let rgex = if s.is_static(off) {
        None
    } else {
        T::rgex_wait(s, off, c, value)
    };
    match rgex {
        Some(r) => r.or_die(s.me, what),
        None => {
            let w = Words {
                ivars: ivar,
                n: 1,
                status: std::ptr::null(),
                indices: std::ptr::null_mut(),
                cmp,
                values: Values::One(value),
            };
            // SAFETY: one symmetric word.
            unsafe { wait_words(what, w, Mode::All) };
        }
    }
}

/// `shmem_TYPE_test`: 1 if the word holds now.
///
/// # Safety
/// `ivar` is checked symmetric; nothing else.
pub unsafe fn test<T: SyncWord>(what: &str, ivar: *const T, cmp: c_int, value: T) -> c_int {
    let w = Words {
        ivars: ivar,
        n: 1,
        status: std::ptr::null(),
        indices: std::ptr::null_mut(),
        cmp,
        values: Values::One(value),
    };
    // SAFETY: one word, checked symmetric.
    unsafe { test_words(what, w, Mode::All) as c_int }
}
