//! The kernels against byte loops and a reference walk of a nest.

use super::copier::Fixed;
#[cfg(target_arch = "x86_64")]
use super::copier::{Avx, Avx512};
use super::dispatch::Walk;
#[cfg(target_arch = "x86_64")]
use super::dispatch::{walk_avx, walk_avx512};
use super::walk::One;
use super::{copy_all, copy_range, run, Loop};

/// Bytes that do not repeat at any stride used here (251 is prime), so
/// a copy of the wrong element shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Where `count` elements of `elem` bytes at stride `stride` from the
/// middle of a buffer of `len` go: the offset of element 0.
fn base(len: usize, elem: usize, count: usize, stride: isize) -> usize {
    let span = count.saturating_sub(1) as isize * stride;
    (len as isize / 2 - span / 2) as usize - elem / 2 + 1
}

/// One run, copied by `copy` and by a byte loop; equal or a panic.
fn check_run(elem: usize, count: usize, ss: isize, ds: isize, copy: impl Fn(One)) {
    // Centred, with room for `count` elements at stride 3 elements.
    let len = (6 * count + 4) * elem + 64;
    let src = pattern(len);
    let mut dst = vec![0u8; len];
    let mut want = dst.clone();
    let (sb, db) = (base(len, elem, count, ss), base(len, elem, count, ds));
    for i in 0..count as isize {
        for b in 0..elem as isize {
            want[(db as isize + i * ds + b) as usize] = src[(sb as isize + i * ss + b) as usize];
        }
    }
    // The walk stays inside both buffers (centred, with room for
    // `count` elements at the largest stride used, 3 elements) and they
    // are distinct.
    copy(One {
        // Pointers into the whole buffers: a reflected walk reads or
        // writes below its first element.
        src: src.as_ptr().wrapping_add(sb),
        ss,
        dst: dst.as_mut_ptr().wrapping_add(db),
        ds,
        count,
    });
    assert_eq!(dst, want, "elem {elem}, count {count}, strides {ss}/{ds}");
}

/// Stride pairs: packing, unpacking, dense both sides, strided both
/// sides, and reflections on either side.
fn stride_pairs(e: isize) -> [(isize, isize); 6] {
    [
        (3 * e, e),
        (e, 2 * e),
        (e, e),
        (2 * e, 3 * e),
        (-e, e),
        (e, -3 * e),
    ]
}

/// Run lengths: none, one, around one and two passes of the unrolled
/// loop (fewer under Miri, which interprets every byte).
const COUNTS: &[usize] = if cfg!(miri) {
    &[0, 1, 9]
} else {
    &[0, 1, 3, 8, 9, 16, 17]
};

/// `run` (whichever copier it picks here) against a byte loop, for
/// every specialised size and a few others, with unaligned bases and
/// run lengths around the unrolling.
#[test]
fn runs_copy_like_a_byte_loop() {
    let elems: &[usize] = if cfg!(miri) {
        &[1, 3, 8, 32, 64]
    } else {
        &[1, 2, 3, 4, 8, 16, 24, 32, 64]
    };
    for &elem in elems {
        for &count in COUNTS {
            for (ss, ds) in stride_pairs(elem as isize) {
                // SAFETY: `check_run` hands a run inside two distinct
                // buffers.
                check_run(elem, count, ss, ds, |r| unsafe {
                    run(elem, r.src, r.ss, r.dst, r.ds, r.count)
                });
            }
        }
    }
}

/// Each copier for 32- and 64-byte elements, taken directly (the CPU
/// running the test picks only one of them through `run`): the plain
/// one always, the AVX and AVX-512 ones where the CPU has them.
#[test]
fn every_wide_copier_copies_like_a_byte_loop() {
    fn each<const N: usize>() {
        for &count in COUNTS {
            for (ss, ds) in stride_pairs(N as isize) {
                // SAFETY: as in `runs_copy_like_a_byte_loop`.
                check_run(N, count, ss, ds, |r| unsafe { r.walk(Fixed::<N>) });
                #[cfg(target_arch = "x86_64")]
                {
                    if std::arch::is_x86_feature_detected!("avx") {
                        // SAFETY: as above; the CPU has AVX.
                        check_run(N, count, ss, ds, |r| unsafe { walk_avx(r, Avx::<N>) });
                        // SAFETY: as above, through `nest_rec`'s
                        // out-of-line path.
                        check_run(N, count, ss, ds, |r| unsafe { r.walk(Avx::<N>) });
                    }
                    if std::arch::is_x86_feature_detected!("avx512f") {
                        // SAFETY: as above; the CPU has AVX-512F.
                        check_run(N, count, ss, ds, |r| unsafe { walk_avx512(r, Avx512::<N>) });
                        // SAFETY: as above.
                        check_run(N, count, ss, ds, |r| unsafe { r.walk(Avx512::<N>) });
                    }
                }
            }
        }
    }
    each::<32>();
    each::<64>();
}

/// `copy_range` from every start, for every length, and `copy_all`,
/// over a 3-loop nest (transposed on the destination side), against a
/// walk of the nest's multi-indices.
#[test]
fn ranges_and_nests_copy_like_a_reference_walk() {
    for elem in [1usize, 8, 24, 32, 64] {
        let e = elem as isize;
        let counts = [3u64, 2, 4];
        // Source: strided rows; destination: the two outer loops swapped.
        let loops = [
            Loop {
                count: 3,
                src: 2 * e,
                dst: e,
            },
            Loop {
                count: 2,
                src: 8 * e,
                dst: 12 * e,
            },
            Loop {
                count: 4,
                src: 20 * e,
                dst: 3 * e,
            },
        ];
        let total: u64 = counts.iter().product();
        let len = 100 * elem;
        let src = pattern(len);
        let place = |k: u64| {
            let (i, j, l) = (k % 3, k / 3 % 2, k / 6);
            let s =
                i as isize * loops[0].src + j as isize * loops[1].src + l as isize * loops[2].src;
            let d =
                i as isize * loops[0].dst + j as isize * loops[1].dst + l as isize * loops[2].dst;
            (s as usize, d as usize)
        };
        // Every start and length; under Miri the ends and a middle.
        let picks = |lo: u64, hi: u64| -> Vec<u64> {
            if cfg!(miri) {
                vec![lo, (lo + hi) / 2, hi]
            } else {
                (lo..=hi).collect()
            }
        };
        for start in picks(0, total - 1) {
            for n in picks(0, total - start) {
                let mut dst = vec![0u8; len];
                let mut want = dst.clone();
                for k in start..start + n {
                    let (s, d) = place(k);
                    want[d..d + elem].copy_from_slice(&src[s..s + elem]);
                }
                // SAFETY: every element of the nest is inside both
                // buffers (largest offset 73 elements of 100).
                unsafe { copy_range(elem, &loops, src.as_ptr(), dst.as_mut_ptr(), start, n) };
                assert_eq!(dst, want, "copy_range: elem {elem}, start {start}, n {n}");
                if start == 0 && n == total {
                    let mut all = vec![0u8; len];
                    // SAFETY: as above.
                    unsafe { copy_all(elem, &loops, src.as_ptr(), all.as_mut_ptr()) };
                    assert_eq!(all, want, "copy_all: elem {elem}");
                }
            }
        }
    }
}
