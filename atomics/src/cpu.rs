//! CPU atomics on a word of mapped memory: the shared-memory implementation
//! applies them on a peer's mapped segment, the reference implementation's
//! handler on its own segment. Values are bit patterns (zero-extended).
//!
//! Integer ops with a native instruction use it (fetch_add, fetch_min, ...);
//! MULT and every float op use a compare-exchange loop on the bit pattern.

use rgex_core::atomic::combine;
use rgex_core::conduit::{AtomicOp, AtomicType};
use std::sync::atomic::{fence, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

/// Apply `op` at `ptr`; returns the old bit pattern (zero for SET).
///
/// Ordering: the op itself is relaxed (atomicity needs no more); RELEASE
/// adds a release fence before it and ACQUIRE an acquire fence after it.
/// A release fence before a relaxed store or read-modify-write
/// synchronises with an acquire fence after a relaxed load or RMW that
/// reads its value (or a later value of its release sequence, which every
/// RMW of the domain extends) — C++20 [atomics.fences] — so the pair gives
/// exactly the release/acquire the flags promise, across processes too
/// (the mapping is the same physical memory).
///
/// # Safety
/// `ptr` must be aligned to `ty.size()` and point to `ty.size()` bytes that
/// stay mapped for the call and are accessed concurrently only atomically.
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn apply(
    ptr: *mut u8,
    ty: AtomicType,
    op: AtomicOp,
    a: u64,
    b: u64,
    acquire: bool,
    release: bool,
) -> u64 {
    if release {
        fence(std::sync::atomic::Ordering::Release);
    }
    let old = if ty.size() == 4 {
        // SAFETY: forwarded caller contract (4-byte aligned, mapped, atomic
        // access only).
        u64::from(unsafe { apply32(ptr, ty, op, a as u32, b as u32) })
    } else {
        // SAFETY: forwarded caller contract (8-byte aligned, ...).
        unsafe { apply64(ptr, ty, op, a, b) }
    };
    if acquire {
        fence(std::sync::atomic::Ordering::Acquire);
    }
    old
}

macro_rules! apply_width {
    ($name:ident, $u:ty, $au:ty, $ai:ty, $i:ty, $signed:pat) => {
        /// # Safety
        /// See [`apply`].
        #[inline]
        unsafe fn $name(ptr: *mut u8, ty: AtomicType, op: AtomicOp, a: $u, b: $u) -> $u {
            use AtomicOp::*;
            // SAFETY: the caller guarantees alignment, validity for the
            // call, and that all concurrent access is atomic.
            let w = unsafe { <$au>::from_ptr(ptr.cast::<$u>()) };
            // All orderings below are Relaxed: atomicity is all the op
            // needs; ordering comes from the fences in `apply`.
            let int = !ty.is_float();
            let signed = matches!(ty, $signed);
            match op {
                Get => w.load(Relaxed),
                Set => {
                    w.store(a, Relaxed);
                    0
                }
                Swap => w.swap(a, Relaxed),
                Cas | Fcas => match w.compare_exchange(a, b, Relaxed, Relaxed) {
                    Ok(v) | Err(v) => v,
                },
                Add | Fadd if int => w.fetch_add(a, Relaxed),
                Sub | Fsub if int => w.fetch_sub(a, Relaxed),
                Inc | Finc if int => w.fetch_add(1, Relaxed),
                Dec | Fdec if int => w.fetch_sub(1, Relaxed),
                And | Fand => w.fetch_and(a, Relaxed),
                Or | For => w.fetch_or(a, Relaxed),
                Xor | Fxor => w.fetch_xor(a, Relaxed),
                Min | Fmin if int && !signed => w.fetch_min(a, Relaxed),
                Max | Fmax if int && !signed => w.fetch_max(a, Relaxed),
                Min | Fmin if int => {
                    // SAFETY: same word, same contract; the signed view
                    // has the same size and alignment.
                    let s = unsafe { <$ai>::from_ptr(ptr.cast::<$i>()) };
                    s.fetch_min(a as $i, Relaxed) as $u
                }
                Max | Fmax if int => {
                    // SAFETY: as above.
                    let s = unsafe { <$ai>::from_ptr(ptr.cast::<$i>()) };
                    s.fetch_max(a as $i, Relaxed) as $u
                }
                _ => {
                    // MULT and the float ops: compare-exchange on the bits.
                    // Always written back (even when unchanged) so a RELEASE
                    // op publishes like any other.
                    let mut cur = w.load(Relaxed);
                    loop {
                        let new = combine(ty, op, u64::from(cur), u64::from(a)) as $u;
                        match w.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                            Ok(old) => break old,
                            Err(now) => cur = now,
                        }
                    }
                }
            }
        }
    };
}

apply_width!(apply32, u32, AtomicU32, AtomicI32, i32, AtomicType::I32);
apply_width!(apply64, u64, AtomicU64, AtomicI64, i64, AtomicType::I64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_on_local_words() {
        let mut w = [0u64; 2];
        let p = w.as_mut_ptr().cast::<u8>();
        // SAFETY: `w` is aligned, owned and only touched through `apply` here.
        unsafe {
            assert_eq!(
                apply(p, AtomicType::U64, AtomicOp::Fadd, 5, 0, false, false),
                0
            );
            assert_eq!(
                apply(p, AtomicType::U64, AtomicOp::Fmult, 3, 0, true, true),
                5
            );
            assert_eq!(
                apply(p, AtomicType::U64, AtomicOp::Get, 0, 0, false, false),
                15
            );
            assert_eq!(
                apply(
                    p,
                    AtomicType::I32,
                    AtomicOp::Fmin,
                    (-4i32) as u32 as u64,
                    0,
                    false,
                    false
                ),
                15
            );
            assert_eq!(
                apply(p, AtomicType::I32, AtomicOp::Get, 0, 0, false, false),
                0xffff_fffc
            );
        }
    }

    /// Every op is atomic under contention: threads adding to one word
    /// (a native fetch_add, and a float add's compare-exchange loop) and
    /// multiplying another (MULT's loop) lose no update. A lost update (an
    /// op split into a load and a store, a compare-exchange whose failure
    /// is not retried) fails this natively.
    #[test]
    fn contended_ops_lose_no_update() {
        const THREADS: u64 = 4;
        let per = if cfg!(miri) { 20 } else { 200_000 };
        let words = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(1)];
        let w = |i: usize| words[i].as_ptr().cast::<u8>();
        // All start together, so the threads' ops overlap.
        let start = std::sync::Barrier::new(THREADS as usize);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    start.wait();
                    for k in 0..per {
                        // SAFETY: the words are aligned AtomicU64s, live for
                        // the scope, and only accessed atomically.
                        unsafe {
                            apply(w(0), AtomicType::U64, AtomicOp::Add, 1, 0, false, false);
                            apply(
                                w(1),
                                AtomicType::F64,
                                AtomicOp::Add,
                                1f64.to_bits(),
                                0,
                                false,
                                false,
                            );
                            if k < 8 {
                                apply(w(2), AtomicType::U64, AtomicOp::Mult, 3, 0, false, false);
                            }
                        }
                    }
                });
            }
        });
        let [a, f, m] = words.map(AtomicU64::into_inner);
        assert_eq!(a, THREADS * per);
        assert_eq!(f64::from_bits(f), (THREADS * per) as f64);
        assert_eq!(m, 3u64.pow(8 * THREADS as u32));
    }

    /// Release/acquire ordering of plain data: a Miri-only test
    /// (`#[cfg(miri)]`; ci/test.sh runs this module under Miri). Natively
    /// it could not fail: x86 orders stores with stores and loads with
    /// loads whatever the fences, so a missing fence goes unseen. Miri
    /// reports a data race on the plain data unless the fences order it,
    /// so dropping either fence from `apply` fails it there.
    #[cfg(miri)]
    mod ordering {
        use super::*;

        /// A word of "segment" shared by two threads, and plain data next to
        /// it that only the flags' ordering protects.
        struct Mailbox {
            flag: AtomicU64,
            data: std::cell::UnsafeCell<u64>,
        }
        // SAFETY: `data` is written by the producer before its RELEASE op and
        // read by the consumer after its ACQUIRE op has seen that op's value:
        // the ordering under test is what makes the sharing sound.
        unsafe impl Sync for Mailbox {}

        /// The producer publishes plain data with `op` (RELEASE) on the flag;
        /// the consumer polls the flag with GET (ACQUIRE) and then reads the
        /// data; Miri reports a race on the plain data unless the fences
        /// order it. Bounded: the consumer gives up after a minute.
        fn message_passing(ty: AtomicType, op: AtomicOp, a: u64) {
            let m = Mailbox {
                flag: AtomicU64::new(0),
                data: std::cell::UnsafeCell::new(0),
            };
            // Whole-struct borrows (closures would capture the cell alone).
            let m = &m;
            let flag = || m.flag.as_ptr().cast::<u8>();
            std::thread::scope(|s| {
                s.spawn(|| {
                    // SAFETY: only this thread touches `data` before the
                    // release below.
                    unsafe { *m.data.get() = 42 };
                    // SAFETY: the flag is an aligned AtomicU64, live for the
                    // scope, and only accessed atomically.
                    unsafe { apply(flag(), ty, op, a, 0, false, true) };
                });
                s.spawn(|| {
                    let start = std::time::Instant::now();
                    // SAFETY: as above.
                    while unsafe { apply(flag(), ty, AtomicOp::Get, 0, 0, true, false) } == 0 {
                        assert!(
                            start.elapsed() < std::time::Duration::from_secs(60),
                            "the producer's {op:?} never became visible"
                        );
                        std::thread::yield_now();
                    }
                    // SAFETY: the acquire above saw the producer's release, so
                    // its write of `data` happens before this read.
                    assert_eq!(unsafe { *m.data.get() }, 42, "after {op:?}");
                });
            });
        }

        #[test]
        fn release_acquire_order_plain_data() {
            // A store, and read-modify-writes (native, and a float add's
            // compare-exchange loop) as the releasing op.
            use AtomicType::{F64, U64};
            message_passing(U64, AtomicOp::Set, 1);
            message_passing(U64, AtomicOp::Fadd, 1);
            message_passing(U64, AtomicOp::Swap, 7);
            message_passing(F64, AtomicOp::Fadd, 1.5f64.to_bits());
        }
    }
}
