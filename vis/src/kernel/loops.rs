//! The loops of a kernel walk, and the dense loops a pack or an unpack
//! walks on its buffer side.

/// A loop of a kernel walk, innermost first: `count` iterations advancing
/// the source by `src` bytes and the destination by `dst` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loop {
    /// Iterations.
    pub count: u64,
    /// Source stride in bytes.
    pub src: isize,
    /// Destination stride in bytes.
    pub dst: isize,
}

/// Dense strides for `counts` elements of `elem` bytes (loop 0 innermost).
///
/// ```
/// let s: Vec<isize> = rgex_vis::kernel::dense(8, [4, 3, 2].into_iter()).collect();
/// assert_eq!(s, [8, 32, 96]);
/// ```
pub fn dense(elem: usize, counts: impl Iterator<Item = u64>) -> impl Iterator<Item = isize> {
    counts.scan(elem as isize, |s, c| {
        let here = *s;
        *s = s.wrapping_mul(c as isize);
        Some(here)
    })
}

/// The loops between a strided side, `(count, stride)` per loop
/// innermost first, and a dense buffer of `elem`-byte elements: strided
/// to dense if `pack`, else dense to strided.
///
/// ```
/// use rgex_vis::kernel::{dense_loops, Loop};
/// let l: Vec<Loop> = dense_loops(8, [(4, 32), (2, 512)].into_iter(), true).collect();
/// assert_eq!(l[1], Loop { count: 2, src: 512, dst: 32 });
/// ```
pub fn dense_loops(
    elem: usize,
    side: impl Iterator<Item = (u64, isize)> + Clone,
    pack: bool,
) -> impl Iterator<Item = Loop> {
    let d = dense(elem, side.clone().map(|(count, _)| count));
    side.zip(d).map(move |((count, strided), dense)| {
        let (src, dst) = if pack {
            (strided, dense)
        } else {
            (dense, strided)
        };
        Loop { count, src, dst }
    })
}

/// Call `f` with the `n` loops of `loops` collected into a slice: on the
/// stack for up to 8 (the usual folded nest), so the per-message paths
/// allocate nothing.
///
/// ```
/// use rgex_vis::kernel::{with_loops, Loop};
/// let l = |count| Loop { count, src: 8, dst: 8 };
/// assert_eq!(with_loops(3, (1..=3).map(l), |s| s.len()), 3);
/// assert_eq!(with_loops(20, (1..=20).map(l), |s| s[19].count), 20);
/// ```
#[inline]
pub fn with_loops<R>(
    n: usize,
    loops: impl Iterator<Item = Loop>,
    f: impl FnOnce(&[Loop]) -> R,
) -> R {
    const STACK: usize = 8;
    if n > STACK {
        return f(&loops.collect::<Vec<_>>());
    }
    let mut stack = [Loop {
        count: 0,
        src: 0,
        dst: 0,
    }; STACK];
    let mut k = 0;
    for (slot, l) in stack.iter_mut().zip(loops) {
        *slot = l;
        k += 1;
    }
    debug_assert_eq!(k, n, "with_loops: the iterator does not hold n loops");
    f(&stack[..k])
}
