//! Property tests: the stride optimizer moves exactly the naive loop's
//! (peer byte, local byte) pairs, and the kernels copy what a byte loop
//! does; Vector and Indexed lists with random fragments map the bytes a
//! naive stream copy does (the local fragments' bytes in list order,
//! poured into the peer fragments in list order).

use proptest::prelude::*;
use rgex_core::Rank;
use rgex_vis::kernel::{copy_range, Loop};
use rgex_vis::stride_plan::{naive_mapping, optimize, plan_mapping};
use rgex_vis::{validate, CompiledStrided, Indexed, Meta, Shape, Strided, Vector};

/// A random section of a dense N-d array on one side: counts fit inside
/// extents, with a random permutation of dimensions and reflections.
#[derive(Clone, Debug)]
struct Case {
    elem: usize,
    counts: Vec<u64>,
    peer_base: u64,
    peer_strides: Vec<i64>,
    local_base: u64,
    local_strides: Vec<i64>,
}

/// Strides and base of a sub-section (of `counts`) of a dense array with
/// `extents`, starting at `corner`, with dimensions permuted by `perm` and
/// dimension `k` reflected where `flip[k]`.
fn side(
    elem: usize,
    extents: &[u64],
    counts: &[u64],
    corner: &[u64],
    perm: &[usize],
    flip: &[bool],
) -> (u64, Vec<i64>) {
    let n = extents.len();
    let mut dense = vec![0i64; n];
    let mut s = elem as i64;
    for k in 0..n {
        dense[k] = s;
        s *= extents[k] as i64;
    }
    // Array dimension perm[k] is walked by loop k.
    let mut base = 0i64;
    let mut strides = vec![0i64; n];
    for k in 0..n {
        let a = perm[k];
        let start = corner[a] as i64;
        if flip[k] {
            base += (start + counts[k] as i64 - 1) * dense[a];
            strides[k] = -dense[a];
        } else {
            base += start * dense[a];
            strides[k] = dense[a];
        }
    }
    (base as u64, strides)
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..=8,
        prop::sample::select(vec![1usize, 2, 3, 4, 8, 16]),
    )
        .prop_flat_map(|(n, elem)| {
            (
                Just(elem),
                prop::collection::vec(1u64..=4, n),
                prop::collection::vec(0u64..=2, n),
                prop::collection::vec(0u64..=2, n),
                Just(n).prop_shuffle_perm(),
                Just(n).prop_shuffle_perm(),
                prop::collection::vec(any::<bool>(), n),
                prop::collection::vec(any::<bool>(), n),
            )
        })
        .prop_map(
            |(elem, counts, pad_p, pad_l, perm_p, perm_l, flip_p, flip_l)| {
                let n = counts.len();
                // Extents of array dimension a: room for the count of the
                // loop that walks it, plus padding.
                let ext = |perm: &[usize], pad: &[u64]| {
                    let mut e = vec![0u64; n];
                    for k in 0..n {
                        e[perm[k]] = counts[k] + pad[perm[k]];
                    }
                    e
                };
                let (ep, el) = (ext(&perm_p, &pad_p), ext(&perm_l, &pad_l));
                let corner_p: Vec<u64> = (0..n).map(|a| pad_p[a] / 2).collect();
                let corner_l: Vec<u64> = (0..n).map(|a| pad_l[a] - pad_l[a] / 2).collect();
                let (pb, ps) = side(
                    elem,
                    &ep,
                    &counts_for(&counts, &perm_p),
                    &corner_p,
                    &perm_p,
                    &flip_p,
                );
                let (lb, ls) = side(
                    elem,
                    &el,
                    &counts_for(&counts, &perm_l),
                    &corner_l,
                    &perm_l,
                    &flip_l,
                );
                Case {
                    elem,
                    counts,
                    peer_base: pb,
                    peer_strides: ps,
                    local_base: lb,
                    local_strides: ls,
                }
            },
        )
}

/// Counts indexed by loop (identity: the helper takes loop-indexed counts).
fn counts_for(counts: &[u64], _perm: &[usize]) -> Vec<u64> {
    counts.to_vec()
}

trait PermExt {
    fn prop_shuffle_perm(self) -> BoxedStrategy<Vec<usize>>;
}

impl PermExt for Just<usize> {
    fn prop_shuffle_perm(self) -> BoxedStrategy<Vec<usize>> {
        Just((0..self.0).collect::<Vec<usize>>())
            .prop_shuffle()
            .boxed()
    }
}

fn sorted(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    v
}

/// Fragment lengths `lens` laid out in a buffer: in a random order
/// (`order`), each after a gap from `gaps`, so fragments never overlap
/// but the list is not in address order. The `(offset, len)` list, in
/// the order of `lens`, and the buffer length it needs.
fn lay_out(lens: &[u64], order: &[usize], gaps: &[u64]) -> (Vec<(u64, u64)>, u64) {
    let mut frags = vec![(0, 0); lens.len()];
    let mut at = 0;
    for (k, &i) in order.iter().enumerate() {
        at += gaps[k % gaps.len()];
        frags[i] = (at, lens[i]);
        at += lens[i];
    }
    (frags, at + 1)
}

/// Split `total` bytes into fragments at the cut points `cuts`
/// (positions in `0..=total`, any order, repeats giving empty fragments).
fn split(total: u64, cuts: &[u64]) -> Vec<u64> {
    let mut c: Vec<u64> = cuts.iter().map(|&x| x % (total + 1)).collect();
    c.push(0);
    c.push(total);
    c.sort_unstable();
    c.windows(2).map(|w| w[1] - w[0]).collect()
}

/// The naive stream copy: the local fragments' bytes in list order go,
/// in that order, to the peer fragments' bytes in list order.
fn stream_mapping(peer: &[(u64, u64)], local: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let bytes = |f: &[(u64, u64)]| -> Vec<u64> { f.iter().flat_map(|&(o, n)| o..o + n).collect() };
    bytes(peer).into_iter().zip(bytes(local)).collect()
}

/// The (peer byte, local byte) pairs a validated shape moves.
fn shape_mapping(shape: &Shape) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    shape.for_each(|p, l, len| out.extend((0..len as u64).map(|b| (p + b, l + b))));
    out
}

/// A random permutation of `0..n`.
fn order(n: usize) -> BoxedStrategy<Vec<usize>> {
    Just((0..n).collect::<Vec<_>>()).prop_shuffle().boxed()
}

/// Vector metadata: `total` bytes cut into fragments independently on
/// each side (so the lists' lengths differ), each side laid out in its
/// own random order with random gaps (0 gaps make neighbours contiguous,
/// which validation may merge).
/// Vector lists and buffer lengths: (peer, segment length, local, local length).
type VectorCase = (Vec<(u64, u64)>, u64, Vec<(u64, u64)>, u64);

/// Indexed offsets, lengths and buffer lengths: (peer, peer_len, segment
/// length, local, local_len, local length).
type IndexedCase = (Vec<u64>, u64, u64, Vec<u64>, u64, u64);

fn vector_case() -> impl Strategy<Value = VectorCase> {
    (
        1u64..=512,
        prop::collection::vec(0u64..1024, 0..24),
        prop::collection::vec(0u64..1024, 0..24),
    )
        .prop_flat_map(|(total, pc, lc)| {
            let (pl, ll) = (split(total, &pc), split(total, &lc));
            let gaps =
                prop::collection::vec(prop::sample::select(vec![0u64, 0, 1, 3, 8, 40]), 1..8);
            (
                Just(pl.clone()),
                order(pl.len()),
                gaps.clone(),
                Just(ll.clone()),
                order(ll.len()),
                gaps,
            )
        })
        .prop_map(|(pl, po, pg, ll, lo, lg)| {
            let (peer, seg) = lay_out(&pl, &po, &pg);
            let (local, len) = lay_out(&ll, &lo, &lg);
            (peer, seg, local, len)
        })
}

/// Indexed metadata: `g * l * k` bytes as `p * k` fragments of `g * l`
/// bytes on the peer side and `l * k` of `g * p` locally, each side's
/// offsets in a random order with random gaps.
fn indexed_case() -> impl Strategy<Value = IndexedCase> {
    (1u64..=8, 1u64..=4, 1u64..=4, 1u64..=6)
        .prop_flat_map(|(g, p, l, k)| {
            let (np, nl) = ((p * k) as usize, (l * k) as usize);
            let gaps = prop::collection::vec(prop::sample::select(vec![0u64, 0, 1, 5, 17]), 1..6);
            (
                Just((g * l, g * p, np, nl)),
                order(np),
                gaps.clone(),
                order(nl),
                gaps,
            )
        })
        .prop_map(|((plen, llen, np, nl), po, pg, lo, lg)| {
            let (peer, seg) = lay_out(&vec![plen; np], &po, &pg);
            let (local, len) = lay_out(&vec![llen; nl], &lo, &lg);
            let offs = |v: Vec<(u64, u64)>| v.into_iter().map(|f| f.0).collect::<Vec<_>>();
            (offs(peer), plen, seg, offs(local), llen, len)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn vector_lists_move_the_stream_mapping((peer, seg, local, len) in vector_case()) {
        let v = Vector { peer: &peer, local: &local };
        let shape = validate(&Meta::Vector(v), Rank(1), seg, len as usize).unwrap();
        prop_assert_eq!(shape_mapping(&shape), stream_mapping(&peer, &local));
        // One byte short of the furthest fragment, on either side: refused.
        let hi = |f: &[(u64, u64)]| f.iter().filter(|f| f.1 > 0).map(|f| f.0 + f.1).max().unwrap_or(0);
        let (ph, lh) = (hi(&peer), hi(&local));
        prop_assert!(validate(&Meta::Vector(v), Rank(1), ph - 1, len as usize).is_err());
        prop_assert!(validate(&Meta::Vector(v), Rank(1), seg, lh as usize - 1).is_err());
        // Totals that differ: refused.
        let mut more = local.clone();
        more.push((0, 1));
        let uneven = Meta::Vector(Vector { peer: &peer, local: &more });
        prop_assert!(validate(&uneven, Rank(1), seg, len as usize).is_err());
    }

    #[test]
    fn indexed_lists_move_the_stream_mapping((peer, plen, seg, local, llen, len) in indexed_case()) {
        let x = Indexed { peer: &peer, peer_len: plen, local: &local, local_len: llen };
        let shape = validate(&Meta::Indexed(x), Rank(1), seg, len as usize).unwrap();
        let frags = |o: &[u64], n: u64| o.iter().map(|&o| (o, n)).collect::<Vec<_>>();
        prop_assert_eq!(shape_mapping(&shape), stream_mapping(&frags(&peer, plen), &frags(&local, llen)));
        // Totals that differ: refused.
        let uneven = Meta::Indexed(Indexed { local_len: llen + 1, ..x });
        prop_assert!(validate(&uneven, Rank(1), seg, len as usize + 64).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn plan_moves_the_naive_mapping(c in case()) {
        let plan = optimize(c.elem, &c.counts, c.peer_base, &c.peer_strides, c.local_base, &c.local_strides);
        let naive = naive_mapping(c.elem, &c.counts, c.peer_base, &c.peer_strides, c.local_base, &c.local_strides);
        // Invariants of an optimized plan.
        prop_assert!(plan.dims.iter().all(|d| d.peer_stride >= 0 && d.count >= 2));
        prop_assert!(plan.dims.windows(2).all(|w| w[0].peer_stride <= w[1].peer_stride));
        prop_assert_eq!(plan.bytes() as usize, naive.len());
        prop_assert_eq!(sorted(plan_mapping(&plan)), sorted(naive));
    }

    #[test]
    fn validated_plans_move_the_naive_mapping(c in case(), shift in 1u64..=64) {
        // Through `validate`: one scan of the metadata, then the per-thread
        // plan cache (a second call with the same arrays is a hit), with
        // other offsets, and a hit that no longer fits.
        let naive = naive_mapping(c.elem, &c.counts, c.peer_base, &c.peer_strides, c.local_base, &c.local_strides);
        let end = |side: fn(&(u64, u64)) -> u64| naive.iter().map(side).max().map_or(0, |m| m + 1);
        let (seg, local) = (end(|x| x.0) + shift, end(|x| x.1) + shift);
        for (pb, lb) in [(c.peer_base, c.local_base), (c.peer_base + shift, c.local_base), (c.peer_base, c.local_base + shift)] {
            let s = Strided {
                elem_size: c.elem,
                counts: &c.counts,
                peer_offset: pb,
                peer_strides: &c.peer_strides,
                local_offset: lb,
                local_strides: &c.local_strides,
            };
            for _ in 0..2 {
                let Ok(Shape::Strided(plan)) = validate(&Meta::Strided(s), Rank(1), seg, local as usize) else {
                    panic!("valid strided metadata refused or not strided");
                };
                prop_assert_eq!(&plan, &optimize(c.elem, &c.counts, pb, &c.peer_strides, lb, &c.local_strides));
                let moved = naive_mapping(c.elem, &c.counts, pb, &c.peer_strides, lb, &c.local_strides);
                prop_assert_eq!(sorted(plan_mapping(&plan)), sorted(moved));
            }
        }
        // One byte short on either side: refused, cached or not.
        let s = Strided {
            elem_size: c.elem,
            counts: &c.counts,
            peer_offset: c.peer_base + shift,
            peer_strides: &c.peer_strides,
            local_offset: c.local_base,
            local_strides: &c.local_strides,
        };
        prop_assert!(validate(&Meta::Strided(s), Rank(1), seg - 1, local as usize).is_err());
        let s = Strided { peer_offset: c.peer_base, local_offset: c.local_base + shift, ..s };
        prop_assert!(validate(&Meta::Strided(s), Rank(1), seg, local as usize - 1).is_err());
    }

    #[test]
    fn compiled_shapes_validate_like_their_metadata(
        c in case(),
        peer_off in prop::sample::select(vec![0u64, 1, 7, 64, 1000, 4096]),
        local_off in prop::sample::select(vec![0u64, 3, 64, 1000, 4096]),
        seg in prop::sample::select(vec![0u64, 64, 1024, 4096, 1 << 16]),
        local in prop::sample::select(vec![0usize, 64, 1024, 4096, 1 << 16]),
    ) {
        // The same plan or the same error as the plain metadata, at any
        // offsets, for any segment and local buffer (most cases refused
        // for one side or the other: the errors must match too).
        let shape = CompiledStrided::new(c.elem, &c.counts, &c.peer_strides, &c.local_strides)
            .expect("valid metadata compiles");
        let plain = Strided {
            elem_size: c.elem,
            counts: &c.counts,
            peer_offset: c.peer_base + peer_off,
            peer_strides: &c.peer_strides,
            local_offset: c.local_base + local_off,
            local_strides: &c.local_strides,
        };
        let at = shape.at(plain.peer_offset, plain.local_offset);
        let want = validate(&Meta::Strided(plain), Rank(1), seg, local);
        let got = validate(&Meta::from(at), Rank(1), seg, local);
        match (&got, &want) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            _ => prop_assert!(false, "compiled {got:?}, plain {want:?}"),
        }
        prop_assert_eq!(shape.bytes(), plain.bytes().unwrap());
    }

    #[test]
    fn arbitrary_strides_keep_the_mapping(
        elem in 1usize..=8,
        dims in prop::collection::vec((1u64..=3, -40i64..=40, -40i64..=40), 0..=6),
    ) {
        // Strides may alias, be zero or overlap: the pair multiset must
        // still match. Bases far enough from zero to stay non-negative.
        let counts: Vec<u64> = dims.iter().map(|d| d.0).collect();
        let ps: Vec<i64> = dims.iter().map(|d| d.1).collect();
        let ls: Vec<i64> = dims.iter().map(|d| d.2).collect();
        let base = 1000;
        let plan = optimize(elem, &counts, base, &ps, base, &ls);
        prop_assert_eq!(
            sorted(plan_mapping(&plan)),
            sorted(naive_mapping(elem, &counts, base, &ps, base, &ls))
        );
    }

    #[test]
    fn kernels_copy_like_a_byte_loop(
        elem in prop::sample::select(vec![1usize, 2, 3, 4, 5, 8, 12, 16, 32, 64, 100]),
        dims in prop::collection::vec((1u64..=4, 0usize..=3), 1..=4),
        split in 0u64..=1000,
    ) {
        // Source: a strided nest (stride = elem * (1 + gap) * inner extent);
        // destination dense: a pack. Then unpack back and compare.
        let mut src_strides = Vec::new();
        let mut s = 0isize;
        for (i, d) in dims.iter().enumerate() {
            s = if i == 0 { (elem * (1 + d.1)) as isize } else { s * dims[i - 1].0 as isize + (elem * d.1) as isize };
            src_strides.push(s);
        }
        let total: u64 = dims.iter().map(|d| d.0).product();
        let span: isize = dims.iter().zip(&src_strides).map(|(d, &s)| (d.0 as isize - 1) * s).sum::<isize>() + elem as isize;
        let src: Vec<u8> = (0..span as usize).map(|i| (i * 7 + 3) as u8).collect();
        let dense: Vec<isize> = rgex_vis::kernel::dense(elem, dims.iter().map(|d| d.0)).collect();
        let loops: Vec<Loop> = dims.iter().zip(&src_strides).zip(&dense)
            .map(|((d, &s), &t)| Loop { count: d.0, src: s, dst: t }).collect();
        let mut packed = vec![0u8; total as usize * elem];
        // Two ranges, split anywhere, must give the whole.
        let cut = split % (total + 1);
        // SAFETY: every element of the nest is inside `src` (span) and
        // `packed` (dense); distinct allocations.
        unsafe {
            copy_range(elem, &loops, src.as_ptr(), packed.as_mut_ptr(), 0, cut);
            copy_range(elem, &loops, src.as_ptr(), packed.as_mut_ptr(), cut, total - cut);
        }
        // The byte-loop reference.
        let mut expect = Vec::new();
        for i in 0..total {
            let (mut rest, mut off) = (i, 0isize);
            for (d, &s) in dims.iter().zip(&src_strides) {
                off += (rest % d.0) as isize * s;
                rest /= d.0;
            }
            expect.extend_from_slice(&src[off as usize..off as usize + elem]);
        }
        prop_assert_eq!(&packed, &expect);
        // Unpack into a fresh buffer and compare the touched bytes.
        let back_loops: Vec<Loop> = loops.iter().map(|l| Loop { count: l.count, src: l.dst, dst: l.src }).collect();
        let mut back = vec![0u8; span as usize];
        // SAFETY: as above, sides swapped.
        unsafe { copy_range(elem, &back_loops, packed.as_ptr(), back.as_mut_ptr(), 0, total) };
        for i in 0..total {
            let (mut rest, mut off) = (i, 0isize);
            for (d, &s) in dims.iter().zip(&src_strides) {
                off += (rest % d.0) as isize * s;
                rest /= d.0;
            }
            let o = off as usize;
            prop_assert_eq!(&back[o..o + elem], &src[o..o + elem]);
        }
    }
}

#[test]
fn folds_dense_blocks() {
    // A full 3-d dense array folds to one element.
    let p = optimize(8, &[4, 5, 6], 0, &[8, 32, 160], 0, &[8, 32, 160]);
    assert_eq!((p.elem, p.dims.len()), (8 * 120, 0));
    // Fully reflected on both sides: still one element.
    let p = optimize(8, &[4], 24, &[-8], 24, &[-8]);
    assert_eq!(
        (p.elem, p.dims.len(), p.peer_base, p.local_base),
        (32, 0, 0, 0)
    );
    // Count-0 dimension: empty.
    assert!(optimize(8, &[4, 0], 0, &[8, 64], 0, &[8, 64]).is_empty());
    // 25% density, 3-d: one loop after folding.
    let p = optimize(8, &[2, 2, 2], 0, &[32, 64, 128], 0, &[8, 16, 32]);
    assert_eq!(p.dims.len(), 1);
    assert_eq!(p.dims[0].count, 8);
}

#[test]
fn cached_plans_follow_changed_metadata() {
    // The per-thread plan cache is keyed by contents: a changed stride of a
    // dimension that moves gives a new plan; a null dimension's stride
    // changes nothing.
    let counts = [4u64, 1, 3];
    let ls = [8i64, 0, 32];
    let mut ps = [8i64, 1000, 64];
    let plan = |ps: &[i64], off: u64| {
        let s = Strided {
            elem_size: 8,
            counts: &counts,
            peer_offset: off,
            peer_strides: ps,
            local_offset: 0,
            local_strides: &ls,
        };
        match validate(&Meta::Strided(s), Rank(1), 4096, 4096) {
            Ok(Shape::Strided(p)) => p,
            other => panic!("{other:?}"),
        }
    };
    let a = plan(&ps, 0);
    assert_eq!(a, optimize(8, &counts, 0, &ps, 0, &ls));
    assert_eq!((a.elem, a.dims.len()), (32, 1));
    ps[1] = -5;
    assert_eq!(plan(&ps, 0), a);
    ps[2] = 96;
    let b = plan(&ps, 16);
    assert_eq!(b, optimize(8, &counts, 16, &ps, 0, &ls));
    assert_ne!(
        (b.dims[0].peer_stride, b.peer_base),
        (a.dims[0].peer_stride, a.peer_base)
    );
    // Reflected now: the peer base moves to the last row.
    ps[2] = -96;
    let c = plan(&ps, 1024);
    assert_eq!(c, optimize(8, &counts, 1024, &ps, 0, &ls));
    assert_eq!(c.peer_base, 1024 - 2 * 96);
}

#[test]
fn cached_high_dimensional_plans_follow_changed_metadata() {
    // Above four dimensions the cache compares the counts, and the strides
    // up to the last live dimension (at least four), in one pass (with AVX2 where the CPU
    // has it), falling back to the live dimensions alone: a null
    // dimension's stride (inside or past that prefix) may change and still
    // hit; a live stride or a count changing (anywhere, the last one too)
    // must not.
    for dims in [8usize, 9, 10, 11, 12, 16, 31, 32, 33, 64, 100] {
        let mut counts = vec![1u64; dims];
        for c in counts.iter_mut().take(5).step_by(2) {
            *c = 2;
        }
        let ls: Vec<i64> = (0..dims).map(|i| 8 << i.min(20)).collect();
        let mut ps: Vec<i64> = (0..dims).map(|i| 16 << i.min(20)).collect();
        let plan = |counts: &[u64], ps: &[i64]| {
            let s = Strided {
                elem_size: 8,
                counts,
                peer_offset: 0,
                peer_strides: ps,
                local_offset: 0,
                local_strides: &ls,
            };
            match validate(&Meta::Strided(s), Rank(1), 1 << 30, 1 << 30) {
                Ok(Shape::Strided(p)) => p,
                other => panic!("{dims} dimensions: {other:?}"),
            }
        };
        let a = plan(&counts, &ps);
        assert_eq!(a, optimize(8, &counts, 0, &ps, 0, &ls), "{dims}-d");
        // Null dimensions' strides: inside the live prefix, then past it.
        ps[1] = -7;
        ps[6] = 12345;
        assert_eq!(plan(&counts, &ps), a, "{dims}-d");
        // A live stride.
        ps[4] = 16 << 5;
        let b = plan(&counts, &ps);
        assert_eq!(b, optimize(8, &counts, 0, &ps, 0, &ls), "{dims}-d");
        assert_ne!(b, a, "{dims}-d");
        // A null dimension becoming live, then the last one.
        ps[6] = 16 << 6;
        counts[6] = 3;
        let c = plan(&counts, &ps);
        assert_eq!(c, optimize(8, &counts, 0, &ps, 0, &ls), "{dims}-d");
        assert_eq!(c.elements(), 2 * 2 * 2 * 3, "{dims}-d");
        counts[dims - 1] = 2;
        let d = plan(&counts, &ps);
        assert_eq!(d, optimize(8, &counts, 0, &ps, 0, &ls), "{dims}-d");
        assert_eq!(d.elements(), 2 * 2 * 2 * 3 * 2, "{dims}-d");
        // Back to all null past the live prefix: a hit on the first plan
        // of this shape, not the longer one.
        counts[dims - 1] = 1;
        assert_eq!(plan(&counts, &ps), c, "{dims}-d");
    }
}

#[test]
fn compiled_shapes_refuse_what_plain_metadata_refuses() {
    // Arrays of different lengths, and a byte count past 64 bits: the same
    // errors as a transfer's; zero elements: a shape that moves nothing,
    // valid anywhere.
    let plain = |counts: &'static [u64], ps: &'static [i64], ls: &'static [i64]| Strided {
        elem_size: 8,
        counts,
        peer_offset: 0,
        peer_strides: ps,
        local_offset: 0,
        local_strides: ls,
    };
    for (counts, ps, ls) in [
        (&[4u64, 2][..], &[8i64][..], &[8i64, 32][..]),
        (&[u64::MAX / 2, 3][..], &[8, 8][..], &[8, 8][..]),
    ] {
        let e = CompiledStrided::new(8, counts, ps, ls).unwrap_err();
        let want = validate(&Meta::Strided(plain(counts, ps, ls)), Rank(1), 64, 64).unwrap_err();
        assert_eq!(e.to_string(), want.to_string());
    }
    let empty = CompiledStrided::new(8, &[3, 0], &[8, 8], &[8, 8]).unwrap();
    assert_eq!(empty.bytes(), 0);
    let plan = validate(&Meta::from(empty.at(u64::MAX, u64::MAX)), Rank(1), 0, 0).unwrap();
    assert_eq!(plan.bytes(), 0);
}
