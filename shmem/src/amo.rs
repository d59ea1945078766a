//! Atomic memory operations (OpenSHMEM 1.5 section 9.7): fetch, set,
//! swap, compare_swap, fetch_inc, inc, fetch_add, add and the bitwise
//! and/or/xor with their fetch_ forms, plus the `_nbi` fetching forms.
//!
//! Every 4-byte AMO type goes through one rgex atomic domain of `u32`,
//! every 8-byte one through one of `u64` (float and double as their bit
//! patterns, for fetch, set and swap): so AMOs on one word are atomic
//! with each other whatever C type names it, and each domain holds the
//! whole op set, so the offload choice is made for all of them. Each AMO
//! completes before it returns (the `_nbi` forms too: completing early
//! is allowed), with acquire and release ordering.

use crate::fatal::OrDie;
use crate::state;
use rgex::{AtomicFlags, AtomicOp};
use std::ffi::c_int;

/// A C type an AMO acts on: its bits, in a 32- or 64-bit domain.
pub trait Word: Copy {
    /// True for an 8-byte type.
    const WIDE: bool;
    /// Its bit pattern, zero-extended.
    fn to_bits(self) -> u64;
    /// The value of a bit pattern (the low bits for a 4-byte type).
    fn from_bits(b: u64) -> Self;
}

macro_rules! word {
    ($t:ty, $wide:expr, |$v:ident| $to:expr, |$b:ident| $from:expr) => {
        impl Word for $t {
            const WIDE: bool = $wide;
            #[inline]
            fn to_bits(self) -> u64 {
                let $v = self;
                $to
            }
            #[inline]
            fn from_bits($b: u64) -> Self {
                $from
            }
        }
    };
}

word!(i32, false, |v| u64::from(v as u32), |b| b as u32 as i32);
word!(u32, false, |v| u64::from(v), |b| b as u32);
word!(i64, true, |v| v as u64, |b| b as i64);
word!(u64, true, |v| v, |b| b);
word!(isize, true, |v| v as u64, |b| b as isize);
word!(usize, true, |v| v as u64, |b| b as usize);
word!(f32, false, |v| u64::from(v.to_bits()), |b| f32::from_bits(
    b as u32
));
word!(f64, true, |v| v.to_bits(), |b| f64::from_bits(b));

const _: () = assert!(size_of::<isize>() == 8, "rgex-shmem assumes an LP64 target");

/// Apply `op` (operands `a`, and `b` for a compare-swap's new value) to
/// the symmetric `dest` of `pe`; the old value for a fetching op.
#[inline]
pub fn op<T: Word>(what: &str, dest: *const T, op: AtomicOp, a: T, b: T, pe: c_int) -> T {
    let s = state::get(what);
    let at = s.remote(what, "dest", dest.cast(), size_of::<T>(), pe);
    // Acquire and release: an AMO orders this PE's accesses around it as
    // a C11 seq_cst RMW would (the spec's AMOs publish and observe data).
    let flags = AtomicFlags::ACQUIRE | AtomicFlags::RELEASE;
    if T::WIDE {
        let old = s
            .amo64
            .op(at, op, a.to_bits(), b.to_bits(), flags)
            .or_die(s.me, what);
        T::from_bits(old)
    } else {
        let old = s
            .amo32
            .op(at, op, a.to_bits() as u32, b.to_bits() as u32, flags)
            .or_die(s.me, what);
        T::from_bits(u64::from(old))
    }
}

/// The value an operand-less op passes.
#[inline]
pub fn zero<T: Word>() -> T {
    T::from_bits(0)
}

/// Store `v` at `fetch` (an `_nbi` form's result), refusing NULL.
///
/// # Safety
/// `fetch` is NULL or writable.
#[inline]
pub unsafe fn store<T: Word>(what: &str, fetch: *mut T, v: T) {
    if fetch.is_null() {
        let s = state::get(what);
        crate::fatal::fatal(Some(s.me), what, "fetch is NULL");
    }
    // SAFETY: the caller's contract, checked not NULL.
    unsafe { fetch.write(v) }
}
