//! VIS conformance, run as every rank of a job; the mechanism comes from
//! `RGEX_VIS` (auto, direct, rma, am), so the same program checks all three.
//!
//! Every rank owns a window of every segment ([me * WIN, (me + 1) * WIN)) and
//! transfers with every rank (itself included): random dense N-d arrays
//! (1..8 dims, small random extents, deterministic seeds) with random
//! sub-sections, transposes and reflections on both sides, put and get in
//! every form (blocking, NB, NBI), each compared against a naive reference
//! copy computed locally; vector and indexed lists with random fragment
//! sizes; overwriting the source right after local completion; bad
//! metadata returning errors and moving nothing; IMMEDIATE moving nothing
//! when it refuses. With `RGEX_VIS=am`, a share of the strided and list
//! cases again through the FP-based AM pipeline (`AmPayload::Fixed`).

use rgex::vis::AmPayload;
use rgex::{
    Client, CompiledStrided, Error, Flags, GlobalAddr, Indexed, NbiCategory, Rank, RmaPath,
    Strided, Vector, Vis, VisMechanism, VisMeta,
};
use rgex_tests::{ok, skip, stalled, with_poller};

/// Xorshift: deterministic, seeded per (rank, peer, case).
struct Rng(u64);

impl Rng {
    fn new(a: u32, b: u32, c: u32) -> Rng {
        Rng(u64::from(rgex_tests::mix(a, b, c)) << 32 | u64::from(rgex_tests::mix(c, a, b)) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

/// Each rank's window in every segment.
fn window(client: &Client) -> u64 {
    ((client.endpoint().segment().len() as u64) / u64::from(client.size())) & !4095
}

/// A random sub-section of a dense array on one side: base and strides of
/// loops walking `counts` (loop `k` walks array dimension `perm[k]`).
fn section(rng: &mut Rng, elem: usize, counts: &[u64]) -> (Vec<u64>, u64, Vec<i64>) {
    let n = counts.len();
    let mut perm: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut perm);
    let mut ext = vec![0u64; n];
    let mut corner = vec![0u64; n];
    for k in 0..n {
        let pad = rng.below(3);
        ext[perm[k]] = counts[k] + pad;
        corner[perm[k]] = rng.below(pad + 1);
    }
    let mut dense = vec![0i64; n];
    let mut s = elem as i64;
    for a in 0..n {
        dense[a] = s;
        s *= ext[a] as i64;
    }
    let (mut base, mut strides) = (0i64, vec![0i64; n]);
    for k in 0..n {
        let a = perm[k];
        if rng.below(2) == 1 {
            base += (corner[a] + counts[k] - 1) as i64 * dense[a];
            strides[k] = -dense[a];
        } else {
            base += corner[a] as i64 * dense[a];
            strides[k] = dense[a];
        }
    }
    (ext, base as u64, strides)
}

/// The naive reference: (peer byte, local byte) pairs in loop order.
fn pairs(
    elem: usize,
    counts: &[u64],
    pb: u64,
    ps: &[i64],
    lb: u64,
    ls: &[i64],
) -> Vec<(usize, usize)> {
    rgex::vis::stride_plan::naive_mapping(elem, counts, pb, ps, lb, ls)
        .into_iter()
        .map(|(p, l)| (p as usize, l as usize))
        .collect()
}

/// Strided metadata of 8-byte elements starting at the local buffer's
/// first byte: the shape most checks use.
fn words<'a>(
    counts: &'a [u64],
    peer_offset: u64,
    peer_strides: &'a [i64],
    local_strides: &'a [i64],
) -> Strided<'a> {
    Strided {
        elem_size: 8,
        counts,
        peer_offset,
        peer_strides,
        local_offset: 0,
        local_strides,
    }
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rgex_tests::fill_pattern(&mut v, seed, len as u32);
    v
}

/// Set `len` bytes of the peer's window to `bytes` (a plain put).
fn set_remote(client: &Client, at: GlobalAddr, bytes: &[u8]) -> rgex::Result<()> {
    client.endpoint().put(at, bytes, Flags::empty())
}

fn get_remote(client: &Client, at: GlobalAddr, len: usize) -> rgex::Result<Vec<u8>> {
    let mut b = vec![0u8; len];
    client.endpoint().get(&mut b, at, Flags::empty())?;
    Ok(b)
}

/// The same metadata arrays reused with other contents between puts: a
/// changed stride on either side, a changed count (the innermost, and the
/// outermost, which at 32 dimensions is one of the null dimensions the
/// cache compares with 1), at 3 and 32 dimensions, each put made twice (the second a hit in the per-thread
/// plan cache, which the direct path copies from): every put lands where
/// its metadata says now, never where an earlier shape of the same arrays
/// did.
fn cached_shapes(vis: &Vis, client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let at = u64::from(me) * win;
    // 64 elements of 8 bytes at pitches of 16 to 64 bytes.
    let span = 64 * 64;
    assert!(win >= span as u64, "window of {win} bytes under {span}");
    let src = pattern(span, 777 + me);
    // Strides of a dense walk of `counts` at `pitch` bytes an element.
    let dense = |counts: &[u64], pitch: i64| -> Vec<i64> {
        let mut s = pitch;
        counts
            .iter()
            .map(|&c| {
                let here = s;
                s *= c as i64;
                here
            })
            .collect()
    };
    // What the peer's window holds after the put: each element where the
    // metadata puts it (the naive reference), zero elsewhere.
    let expect = |counts: &[u64], ps: &[i64], ls: &[i64]| -> Vec<u8> {
        let mut out = vec![0u8; span];
        for (p, l) in pairs(8, counts, 0, ps, 0, ls) {
            out[p] = src[l];
        }
        out
    };
    for d in [3usize, 32] {
        let mut counts = vec![1u64; d];
        for i in 0..6 {
            counts[i % d] *= 2;
        }
        let mut ps = dense(&counts, 32);
        let mut ls = dense(&counts, 32);
        for step in [
            "first",
            "peer stride",
            "count",
            "local stride",
            "last count",
        ] {
            match step {
                "peer stride" => ps.copy_from_slice(&dense(&counts, 64)),
                "count" => {
                    // The innermost loop halves: half the elements, at the
                    // same strides.
                    counts[0] /= 2;
                }
                "local stride" => ls.copy_from_slice(&dense(&counts, 16)),
                "last count" => {
                    // The outermost loop becomes (or stays) two elements 8
                    // bytes apart: at 32 dimensions a count past those the
                    // cache keeps, compared only with 1.
                    counts[d - 1] = 2;
                    ps[d - 1] = 8;
                    ls[d - 1] = 8;
                }
                _ => {}
            }
            let want = expect(&counts, &ps, &ls);
            for round in 0..2 {
                set_remote(client, GlobalAddr::new(peer, at), &vec![0u8; span])?;
                let s = words(&counts, at, &ps, &ls);
                vis.put(peer, s, &src, Flags::empty())?;
                let got = get_remote(client, GlobalAddr::new(peer, at), span)?;
                if got != want {
                    let first = (0..span).find(|&i| got[i] != want[i]).unwrap_or(0);
                    panic!(
                        "{d}-d strided put to {peer}, after a {step} change, put {round}: byte {first} of the window is {} where {} was expected (counts {counts:?}, peer strides {ps:?}, local strides {ls:?})",
                        got[first], want[first]
                    );
                }
            }
        }
    }
    ok(
        client,
        "reused metadata arrays: each changed stride or count moves the bytes it says, cached or not",
    );
    Ok(())
}

/// Put or get `meta` in form `form` (0 blocking, 1 NB, 2 NBI).
fn transfer(
    vis: &Vis,
    client: &Client,
    peer: Rank,
    meta: VisMeta<'_>,
    local: &mut Vec<u8>,
    put: bool,
    form: u64,
) -> rgex::Result<()> {
    let f = Flags::empty();
    match (put, form) {
        (true, 0) => vis.put(peer, meta, local, f),
        (true, 1) => {
            let p = vis.put_nb(peer, meta, local, f)?;
            assert!(p.lc.test(), "local completion is immediate");
            p.rc.wait()?;
            Ok(())
        }
        (true, _) => {
            vis.put_nbi(peer, meta, local, f)?;
            client.endpoint().nbi_wait(NbiCategory::Put)?;
            Ok(())
        }
        (false, 0) => vis.get(peer, meta, local, f),
        (false, 1) => {
            let g = vis.get_nb(peer, meta, std::mem::take(local), f)?;
            *local = g.wait()?;
            Ok(())
        }
        (false, _) => {
            // SAFETY: `local` is not touched until the NBI sync below.
            unsafe { vis.get_nbi(peer, meta, local.as_mut_ptr(), local.len(), f)? };
            client.endpoint().nbi_wait(NbiCategory::Get)?;
            Ok(())
        }
    }
}

fn strided(vis: &Vis, client: &Client, win: u64, cases: u32) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    for k in 0..n {
        let peer = Rank((me + k) % n);
        let at = u64::from(me) * win;
        for case in 0..cases {
            let mut rng = Rng::new(me, peer.0, case);
            let nd = 1 + rng.below(8) as usize;
            let elem = [1usize, 2, 3, 4, 8, 16, 24, 32, 64][rng.below(9) as usize];
            // Keep arrays small: counts up to 4 in low dimensions, 2 above.
            let counts: Vec<u64> = (0..nd)
                .map(|d| 1 + rng.below(if d < 3 { 4 } else { 2 }))
                .collect();
            let (pext, pb, ps) = section(&mut rng, elem, &counts);
            let (lext, lb, ls) = section(&mut rng, elem, &counts);
            let plen = elem * pext.iter().product::<u64>() as usize;
            let llen = elem * lext.iter().product::<u64>() as usize;
            assert!(plen as u64 <= win, "case too big for the window");
            let put = case % 2 == 0;
            let form = u64::from(case / 2 % 3);
            let remote0 = pattern(plen, case * 2 + 1);
            let mut local = pattern(llen, case * 2 + 2);
            let map = pairs(elem, &counts, pb, &ps, lb, &ls);
            set_remote(client, GlobalAddr::new(peer, at), &remote0)?;
            // Every other run of six cases (each put/get x form) goes
            // through a compiled shape.
            let compiled = case / 6 % 2 == 1;
            let shape = CompiledStrided::new(elem, &counts, &ps, &ls)?;
            let meta = if compiled {
                VisMeta::from(shape.at(at + pb, lb))
            } else {
                VisMeta::Strided(Strided {
                    elem_size: elem,
                    counts: &counts,
                    peer_offset: at + pb,
                    peer_strides: &ps,
                    local_offset: lb,
                    local_strides: &ls,
                })
            };
            let local0 = local.clone();
            transfer(vis, client, peer, meta, &mut local, put, form)?;
            let remote = get_remote(client, GlobalAddr::new(peer, at), plen)?;
            let (mut er, mut el) = (remote0.clone(), local0.clone());
            for &(p, l) in &map {
                if put {
                    er[p] = local0[l];
                } else {
                    el[l] = remote0[p];
                }
            }
            assert_eq!(remote, er, "strided case {case} with {peer}: remote side (put={put}, form {form}, compiled {compiled}, elem {elem}, counts {counts:?}, ps {ps:?}, ls {ls:?})");
            assert_eq!(local, el, "strided case {case} with {peer}: local side (put={put}, form {form}, compiled {compiled}, elem {elem}, counts {counts:?}, ps {ps:?}, ls {ls:?})");
        }
    }
    client.barrier()?;
    ok(
        client,
        &format!("{cases} random strided put/get cases (half of them compiled) x every rank"),
    );
    Ok(())
}

/// Disjoint random fragments covering a random subset of `0..len`, in a
/// random order; returns (offset, len) pairs.
fn fragments(rng: &mut Rng, len: u64, max_frag: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < len {
        let gap = rng.below(4);
        let l = (1 + rng.below(max_frag)).min(len - at);
        if rng.below(4) != 0 && at + gap + l <= len {
            out.push((at + gap, l));
        }
        at += gap + l;
    }
    rng.shuffle(&mut out);
    out
}

/// Re-cut `total` bytes into fragments laid out with gaps inside a buffer.
fn recut(rng: &mut Rng, total: u64, max_frag: u64) -> (Vec<(u64, u64)>, u64) {
    let (mut out, mut at, mut left) = (Vec::new(), 0, total);
    while left > 0 {
        let l = (1 + rng.below(max_frag)).min(left);
        at += rng.below(5);
        out.push((at, l));
        at += l;
        left -= l;
    }
    rng.shuffle(&mut out);
    (out, at + 3)
}

fn bytes_of(frags: &[(u64, u64)]) -> Vec<usize> {
    frags
        .iter()
        .flat_map(|&(o, l)| (o..o + l).map(|b| b as usize))
        .collect()
}

fn lists(vis: &Vis, client: &Client, win: u64, cases: u32) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    for k in 0..n {
        let peer = Rank((me + k) % n);
        let at = u64::from(me) * win;
        for case in 0..cases {
            let mut rng = Rng::new(me ^ 0x77, peer.0, case);
            // Every fifth case spans several max-Medium messages.
            let region = 64 + rng.below(if case % 5 == 4 { 300_000 } else { 6000 });
            let max_frag = [1, 8, 64, 700, 3000][rng.below(5) as usize];
            let put = case % 2 == 0;
            let form = u64::from(case / 2 % 3);
            let indexed = case % 4 >= 2;
            let (pf, lf, llen);
            let (pidx, lidx, plen1, llen1): (Vec<u64>, Vec<u64>, u64, u64);
            if indexed {
                // One length per side; totals equal: pick lengths a, b and
                // counts so that na * a == nb * b.
                let a = 1 + rng.below(16);
                let b = [1, 2, 4][rng.below(3) as usize] * a;
                let nb = 1 + rng.below((region / (b + 8)).max(1));
                let na = nb * b / a;
                pidx = {
                    let mut v: Vec<u64> = (0..na).map(|i| i * (a + 3)).collect();
                    rng.shuffle(&mut v);
                    v
                };
                lidx = {
                    let mut v: Vec<u64> = (0..nb).map(|i| i * (b + 1)).collect();
                    rng.shuffle(&mut v);
                    v
                };
                plen1 = a;
                llen1 = b;
                pf = pidx.iter().map(|&o| (o, a)).collect::<Vec<_>>();
                lf = lidx.iter().map(|&o| (o, b)).collect::<Vec<_>>();
                llen = nb * (b + 1) + 1;
            } else {
                pf = fragments(&mut rng, region, max_frag);
                let total: u64 = pf.iter().map(|f| f.1).sum();
                let (l, len) = recut(&mut rng, total, max_frag);
                lf = l;
                llen = len;
                (pidx, lidx, plen1, llen1) = (Vec::new(), Vec::new(), 0, 0);
            }
            let plen = pf.iter().map(|f| f.0 + f.1).max().unwrap_or(0).max(1) as usize;
            assert!(plen as u64 <= win);
            let remote0 = pattern(plen, 1000 + case);
            let mut local = pattern(llen as usize, 2000 + case);
            set_remote(client, GlobalAddr::new(peer, at), &remote0)?;
            let pfa: Vec<(u64, u64)> = pf.iter().map(|&(o, l)| (o + at, l)).collect();
            let pia: Vec<u64> = pidx.iter().map(|&o| o + at).collect();
            let meta = if indexed {
                VisMeta::Indexed(Indexed {
                    peer: &pia,
                    peer_len: plen1,
                    local: &lidx,
                    local_len: llen1,
                })
            } else {
                VisMeta::Vector(Vector {
                    peer: &pfa,
                    local: &lf,
                })
            };
            let local0 = local.clone();
            transfer(vis, client, peer, meta, &mut local, put, form)?;
            let remote = get_remote(client, GlobalAddr::new(peer, at), plen)?;
            let (mut er, mut el) = (remote0.clone(), local0.clone());
            for (p, l) in bytes_of(&pf).into_iter().zip(bytes_of(&lf)) {
                if put {
                    er[p] = local0[l];
                } else {
                    el[l] = remote0[p];
                }
            }
            let what = if indexed { "indexed" } else { "vector" };
            assert_eq!(
                remote, er,
                "{what} case {case} with {peer}: remote side (put={put}, form {form})"
            );
            assert_eq!(
                local, el,
                "{what} case {case} with {peer}: local side (put={put}, form {form})"
            );
        }
    }
    client.barrier()?;
    ok(
        client,
        &format!("{cases} random vector/indexed put/get cases x every rank"),
    );
    Ok(())
}

/// Overwriting the source right after local completion changes nothing at
/// the target.
fn reuse_after_lc(vis: &Vis, client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let at = u64::from(me) * win;
    // 256 KiB of u64 at 25% density, 2-d (several AM messages).
    let counts = [4u64, 8192];
    let mut src = pattern(4 * 8192 * 8, 77);
    let sent = src.clone();
    let s = words(&counts, at, &[32, 128], &[8, 32]);
    set_remote(client, GlobalAddr::new(peer, at), &vec![0u8; 8192 * 128])?;
    let p = vis.put_nb(peer, s, &src, Flags::empty())?;
    p.lc.wait()?;
    src.fill(0xEE);
    p.rc.wait()?;
    let mut back = vec![0u8; src.len()];
    vis.get(peer, s, &mut back, Flags::empty())?;
    assert_eq!(
        back, sent,
        "the target saw bytes written after local completion"
    );
    drop(src);
    client.barrier()?;
    ok(
        client,
        "overwriting the source after local completion does not change the target",
    );
    Ok(())
}

/// Deferred local completion (`put_nb_defer`): the source buffer comes
/// back at local completion, is overwritten at once, and the target still
/// receives what was sent; for small strided elements and for large
/// vector fragments (which the RMA mechanism puts one per chunk, all in
/// flight, so local completion can come after return).
fn reuse_after_deferred_lc(vis: &Vis, client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let at = u64::from(me) * win;
    let f = Flags::empty();
    let frag = 64u64 << 10;
    let peer_frags: Vec<(u64, u64)> = (0..4).map(|k| (at + 2 * k * frag, frag)).collect();
    let whole = [(0u64, 4 * frag)];
    let (counts, ps, ls) = ([4u64, 4096], [32i64, 128], [8i64, 32]);
    let cases: [(&str, VisMeta<'_>, usize); 2] = [
        (
            "strided, 8-byte elements",
            VisMeta::from(words(&counts, at, &ps, &ls)),
            4 * 4096 * 8,
        ),
        (
            "vector, 64 KiB fragments",
            VisMeta::from(Vector {
                peer: &peer_frags,
                local: &whole,
            }),
            (4 * frag) as usize,
        ),
    ];
    let mut later = 0;
    for (i, &(what, meta, len)) in cases.iter().enumerate() {
        set_remote(
            client,
            GlobalAddr::new(peer, at),
            &vec![0u8; (8 * frag) as usize],
        )?;
        let src = pattern(len, 500 + i as u32);
        let sent = src.clone();
        let p = vis.put_nb_defer(peer, meta, src, f)?;
        later += usize::from(!p.lc.test());
        let mut src = p.lc.wait()?;
        src.fill(0xEE);
        p.rc.wait()?;
        let mut back = vec![0u8; len];
        vis.get(peer, meta, &mut back, f)?;
        assert_eq!(
            back, sent,
            "{what}: the target saw bytes written after deferred local completion"
        );
    }
    client.barrier()?;
    ok(
        client,
        &format!(
            "deferred local completion: the source handed back and overwritten at once changes nothing at the target (rank 0: local completion after return in {later} of {} puts)",
            cases.len()
        ),
    );
    Ok(())
}

/// Metadata arrays are consumed before the call returns: overwritten and
/// freed right after an NB or NBI put or get, before it completes, they
/// change nothing (with the AM and RMA mechanisms the transfer is still
/// in flight then).
fn metadata_consumed(vis: &Vis, client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let at = u64::from(me) * win;
    let f = Flags::empty();
    // 2-d strided, 8-byte elements at 25% density on the peer side, 128 KiB
    // of payload (several AM messages), and the same bytes as a Vector.
    let (rows, per_row) = (128u64, 128u64);
    let payload = (rows * per_row * 8) as usize;
    let src = pattern(payload, 4242);
    let strided_meta = || {
        (
            vec![per_row, rows],
            vec![32i64, 32 * per_row as i64],
            vec![8i64, 8 * per_row as i64],
        )
    };
    let frags = || -> Vec<(u64, u64)> { (0..rows * per_row).map(|i| (at + 32 * i, 8)).collect() };
    // What the target must hold afterwards (read back with fresh metadata).
    let read_back = || -> rgex::Result<Vec<u8>> {
        let (c, ps, ls) = strided_meta();
        let mut back = vec![0u8; payload];
        let s = words(&c, at, &ps, &ls);
        vis.get(peer, s, &mut back, f)?;
        Ok(back)
    };
    let clear = || {
        set_remote(
            client,
            GlobalAddr::new(peer, at),
            &vec![0u8; (rows * per_row * 32) as usize],
        )
    };
    let spoil = |c: &mut Vec<u64>, ps: &mut Vec<i64>, ls: &mut Vec<i64>| {
        c.fill(u64::MAX);
        ps.fill(i64::MIN);
        ls.fill(-1);
    };
    for form in ["NB", "NBI"] {
        // Strided put.
        clear()?;
        let (mut c, mut ps, mut ls) = strided_meta();
        let s = words(&c, at, &ps, &ls);
        let pending = if form == "NB" {
            Some(vis.put_nb(peer, s, &src, f)?)
        } else {
            vis.put_nbi(peer, s, &src, f)?;
            None
        };
        spoil(&mut c, &mut ps, &mut ls);
        drop((c, ps, ls));
        match pending {
            Some(p) => p.rc.wait()?,
            None => client.endpoint().nbi_wait(NbiCategory::Put)?,
        }
        assert_eq!(
            read_back()?,
            src,
            "{form} strided put: metadata changed after the call changed the transfer"
        );
        // Vector put.
        clear()?;
        let (mut peer_frags, mut local_frags) = (frags(), vec![(0u64, payload as u64)]);
        let v = Vector {
            peer: &peer_frags,
            local: &local_frags,
        };
        let pending = if form == "NB" {
            Some(vis.put_nb(peer, v, &src, f)?)
        } else {
            vis.put_nbi(peer, v, &src, f)?;
            None
        };
        peer_frags.fill((u64::MAX, u64::MAX));
        local_frags.fill((7, 1));
        drop((peer_frags, local_frags));
        match pending {
            Some(p) => p.rc.wait()?,
            None => client.endpoint().nbi_wait(NbiCategory::Put)?,
        }
        assert_eq!(
            read_back()?,
            src,
            "{form} vector put: metadata changed after the call changed the transfer"
        );
        // Strided get of what is now there.
        let (mut c, mut ps, mut ls) = strided_meta();
        let s = words(&c, at, &ps, &ls);
        let got = if form == "NB" {
            let g = vis.get_nb(peer, s, vec![0u8; payload], f)?;
            spoil(&mut c, &mut ps, &mut ls);
            g.wait()?
        } else {
            let mut back = vec![0u8; payload];
            // SAFETY: `back` is not touched until the NBI sync below.
            unsafe { vis.get_nbi(peer, s, back.as_mut_ptr(), back.len(), f)? };
            spoil(&mut c, &mut ps, &mut ls);
            client.endpoint().nbi_wait(NbiCategory::Get)?;
            back
        };
        drop((c, ps, ls));
        assert_eq!(
            got, src,
            "{form} strided get: metadata changed after the call changed the transfer"
        );
    }
    client.barrier()?;
    ok(
        client,
        "metadata arrays overwritten and freed right after NB and NBI puts and gets change nothing",
    );
    Ok(())
}

/// Bad metadata: an error, and nothing moved.
fn bad_input(vis: &Vis, client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let at = u64::from(me) * win;
    let seg = client.endpoint().conduit().segment_len(peer);
    let before = pattern(4096, 99);
    set_remote(client, GlobalAddr::new(peer, at), &before)?;
    // The cases past the segment's end have their valid elements in its
    // last bytes: a transfer that wrote those and then failed would show
    // here (only this rank writes to its peer's segment in this check).
    assert!(
        at + 4096 <= seg - 64,
        "the window reaches the segment's tail"
    );
    let tail = GlobalAddr::new(peer, seg - 64);
    let tail_before = pattern(64, 98);
    set_remote(client, tail, &tail_before)?;
    let src = pattern(4096, 100);
    let f = Flags::empty();
    let mut errors: Vec<(&str, Error)> = Vec::new();
    let mut expect_err = |what: &'static str, r: rgex::Result<()>| match r {
        Err(e) => errors.push((what, e)),
        Ok(()) => panic!("{what}: accepted"),
    };
    // Every case is refused by each form, put and get: blocking, NB and
    // NBI. The metadata, by case:
    let shape = CompiledStrided::new(8, &[4, 2], &[8, 40], &[8, 32])?;
    let reflected = CompiledStrided::new(8, &[4], &[-8], &[8])?;
    let st = |counts, peer_offset, peer_strides, local_offset, local_strides| {
        VisMeta::from(Strided {
            elem_size: 8,
            counts,
            peer_offset,
            peer_strides,
            local_offset,
            local_strides,
        })
    };
    let (two_frags, last_past) = ([(at, 8), (at + 16, 8)], [(at, 8), (seg - 4, 8)]);
    let (one_frag, wraps) = ([(at, 16)], [(at, 8), (u64::MAX - 4, 8)]);
    let (two_at, far) = ([at, at + 64], [at, u64::MAX - 2]);
    let cases: Vec<(&'static str, VisMeta<'_>)> = vec![
        // An element past the end of the peer's segment (last element only).
        (
            "strided past the segment",
            st(&[4, 2], seg - 64, &[8, 40], 0, &[8, 32]),
        ),
        // Reflections reaching before either side's start.
        ("strided before the segment", st(&[4], 16, &[-8], 0, &[8])),
        (
            "strided before the local buffer",
            st(&[4], at, &[8], 16, &[-8]),
        ),
        (
            "strided past the local buffer",
            st(&[4, 200], at, &[8, 32], 0, &[8, 32]),
        ),
        // Overflow in count x stride, on either side.
        (
            "strided byte count overflow",
            st(&[u64::MAX / 2, 3], at, &[i64::MAX, 8], 0, &[8, 8]),
        ),
        (
            "strided count x stride overflow (peer side)",
            st(&[4, 3], at, &[i64::MAX, 8], 0, &[8, 32]),
        ),
        (
            "strided count x stride overflow (local side)",
            st(&[4, 3], at, &[8, 32], 0, &[i64::MAX, 8]),
        ),
        ("strided dims mismatch", st(&[4, 2], at, &[8], 0, &[8, 32])),
        // Vector: mismatched totals, one bad fragment among good ones,
        // offset + length wrapping on either side.
        (
            "vector totals",
            VisMeta::from(Vector {
                peer: &two_frags,
                local: &[(0, 15)],
            }),
        ),
        (
            "vector past the segment",
            VisMeta::from(Vector {
                peer: &last_past,
                local: &[(0, 16)],
            }),
        ),
        (
            "vector past the local buffer",
            VisMeta::from(Vector {
                peer: &one_frag,
                local: &[(4090, 16)],
            }),
        ),
        (
            "vector wrapping past the segment",
            VisMeta::from(Vector {
                peer: &wraps,
                local: &[(0, 16)],
            }),
        ),
        (
            "vector wrapping past the local buffer",
            VisMeta::from(Vector {
                peer: &one_frag,
                local: &[(0, 8), (u64::MAX - 4, 8)],
            }),
        ),
        // Indexed: mismatched totals, a bad offset on either side.
        (
            "indexed totals",
            VisMeta::from(Indexed {
                peer: &two_at,
                peer_len: 8,
                local: &[0],
                local_len: 8,
            }),
        ),
        (
            "indexed past the segment",
            VisMeta::from(Indexed {
                peer: &far,
                peer_len: 8,
                local: &[0, 8],
                local_len: 8,
            }),
        ),
        (
            "indexed past the local buffer",
            VisMeta::from(Indexed {
                peer: &two_at,
                peer_len: 8,
                local: &[0, 4090],
                local_len: 8,
            }),
        ),
        // A compiled shape placed past the segment, before it, and past
        // the local buffer.
        (
            "compiled strided past the segment",
            VisMeta::from(shape.at(seg - 64, 0)),
        ),
        (
            "compiled strided before the segment",
            VisMeta::from(reflected.at(16, 0)),
        ),
        (
            "compiled strided past the local buffer",
            VisMeta::from(shape.at(at, src.len() as u64 - 40)),
        ),
    ];
    let mut dst = vec![5u8; src.len()];
    for &(what, meta) in &cases {
        expect_err(what, vis.put(peer, meta, &src, f));
        expect_err(what, vis.put_nb(peer, meta, &src, f).map(drop));
        expect_err(what, vis.put_nbi(peer, meta, &src, f));
        expect_err(what, vis.get(peer, meta, &mut dst, f));
        expect_err(
            what,
            vis.get_nb(peer, meta, vec![5u8; src.len()], f).map(drop),
        );
        // SAFETY: `dst` outlives the NBI sync just below and is not
        // touched before it.
        expect_err(what, unsafe {
            vis.get_nbi(peer, meta, dst.as_mut_ptr(), dst.len(), f)
        });
        client.endpoint().nbi_wait(NbiCategory::Get)?;
    }
    client.endpoint().nbi_wait(NbiCategory::Put)?;
    assert!(
        dst.iter().all(|&b| b == 5),
        "a refused get wrote the local buffer"
    );
    // A bad rank.
    expect_err(
        "bad rank",
        vis.put(
            Rank(n + 3),
            Vector {
                peer: &[(0, 8)],
                local: &[(0, 8)],
            },
            &src,
            f,
        ),
    );
    // Metadata that does not compile.
    expect_err(
        "compiled strided overflow",
        CompiledStrided::new(8, &[u64::MAX / 2, 3], &[i64::MAX, 8], &[8, 8]).map(drop),
    );
    expect_err(
        "compiled strided dims mismatch",
        CompiledStrided::new(8, &[4, 2], &[8], &[8, 32]).map(drop),
    );
    // Gets too: the local buffer must not change.
    let mut dst = vec![5u8; 64];
    expect_err(
        "get past the segment",
        vis.get(
            peer,
            Indexed {
                peer: &[at, seg],
                peer_len: 8,
                local: &[0, 8],
                local_len: 8,
            },
            &mut dst,
            f,
        ),
    );
    assert!(
        dst.iter().all(|&b| b == 5),
        "a refused get wrote the local buffer"
    );
    // Every message names what was broken and the limit: the rank and its
    // segment's length, the local buffer's length, both totals, the
    // overflow, the arrays' lengths, the job's size.
    for (what, e) in &errors {
        let msg = e.to_string();
        let want: Vec<String> = if what.contains("segment") {
            vec![format!("rank {}", peer.0), format!("{seg:#x}")]
        } else if what.contains("local buffer") {
            vec![format!("local buffer of {} bytes", src.len())]
        } else if what.contains("totals") {
            vec!["fragments total".into(), "must be equal".into()]
        } else if what.contains("overflow") && !what.contains("side") {
            vec!["overflows 64 bits".into()]
        } else if what.contains("side") {
            // count x stride past 64 bits on one side: that side's range.
            vec![if what.contains("peer") {
                format!("rank {}", peer.0)
            } else {
                "local".into()
            }]
        } else if what.contains("dims mismatch") {
            vec!["2 counts but 1 peer strides and 2 local strides".into()]
        } else if *what == "bad rank" {
            vec![format!("rank {}", n + 3), format!("{n} ranks")]
        } else {
            panic!("{what}: no expectation for this case ({msg})")
        };
        for w in &want {
            assert!(
                msg.contains(w.as_str()),
                "{what}: {msg:?} does not say {w:?}"
            );
        }
    }
    // Each kind once (the forms give the same message).
    let mut kinds: Vec<(&str, String)> = errors.iter().map(|(w, e)| (*w, e.to_string())).collect();
    kinds.dedup_by(|a, b| a.0 == b.0);
    if me == 0 {
        for (what, e) in &kinds {
            println!("  {what}: {e}");
        }
    }
    assert_eq!(
        get_remote(client, GlobalAddr::new(peer, at), 4096)?,
        before,
        "a refused transfer moved bytes"
    );
    assert_eq!(
        get_remote(client, tail, 64)?,
        tail_before,
        "a refused transfer past the segment wrote its valid elements"
    );
    // Zero-size transfers: fine, no-ops.
    vis.put(peer, words(&[0, 3], seg + 100, &[8, 8], &[8, 8]), &src, f)?;
    let empty = CompiledStrided::new(8, &[0, 3], &[8, 8], &[8, 8])?;
    vis.put(peer, empty.at(seg + 100, 0), &src, f)?;
    vis.put(
        peer,
        Vector {
            peer: &[],
            local: &[],
        },
        &src,
        f,
    )?;
    vis.put(
        peer,
        Indexed {
            peer: &[at],
            peer_len: 0,
            local: &[],
            local_len: 8,
        },
        &src,
        f,
    )?;
    assert_eq!(get_remote(client, GlobalAddr::new(peer, at), 4096)?, before);
    client.barrier()?;
    ok(
        client,
        &format!(
            "{} kinds of bad metadata refused ({} refusals over the blocking, NB and NBI puts and gets), nothing moved; zero-size transfers are no-ops",
            kinds.len(),
            errors.len()
        ),
    );
    Ok(())
}

/// IMMEDIATE: success moves everything, refusal moves nothing.
fn immediate(vis: &Vis, client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let at = u64::from(me) * win;
    let (mut moved, mut refused) = (0, 0);
    for (i, count) in [4u64, 64, 4096].into_iter().enumerate() {
        let zero = vec![0u8; (count * 32) as usize];
        set_remote(client, GlobalAddr::new(peer, at), &zero)?;
        let src = pattern((count * 8) as usize, 300 + i as u32);
        let counts = [count];
        let s = words(&counts, at, &[32], &[8]);
        match vis.put(peer, s, &src, Flags::IMMEDIATE) {
            Ok(()) => {
                moved += 1;
                let mut back = vec![0u8; src.len()];
                vis.get(peer, s, &mut back, Flags::empty())?;
                assert_eq!(back, src, "IMMEDIATE put reported success but data differs");
            }
            Err(e) if e.is_would_block() => {
                refused += 1;
                assert_eq!(
                    get_remote(client, GlobalAddr::new(peer, at), zero.len())?,
                    zero,
                    "IMMEDIATE refusal moved bytes"
                );
            }
            Err(e) => return Err(e),
        }
    }
    client.barrier()?;
    ok(
        client,
        &format!(
            "IMMEDIATE honoured (rank 0: {moved} moved, {refused} refused, nothing half sent)"
        ),
    );
    Ok(())
}

/// IMMEDIATE against a rank that does not poll: rank 0 floods rank 1
/// (which sits in a bootstrap collective) with small IMMEDIATE strided
/// puts. Over AM (and the reference RMA path) the queue fills and a put
/// must be refused, having moved nothing, while the puts before it all
/// arrive; a direct copy never needs the peer, so it never refuses.
fn immediate_stalled(vis: &Vis, client: &Client, win: u64) -> rgex::Result<()> {
    let peer = Rank(1 % client.size());
    // One contiguous chunk of two elements: one AM message, one RMA put
    // (a transfer of several chunks is refused at once over RMA, queue or
    // no queue, which would prove nothing here).
    let one = |i: u64| words(&[2], stalled::slot(i), &[8], &[8]);
    let src = [stalled::PATTERN; 16];
    let mechanism = vis.mechanism_for(peer, &vis.shape(peer, &one(0).into(), src.len())?);
    let Some(f) = stalled::flood(
        client,
        (win / 64).min(1 << 14),
        src.len(),
        |i| Ok(vis.put_nb(peer, one(i), &src, Flags::IMMEDIATE)?.rc),
        |_| false,
    )?
    else {
        skip(
            client,
            "IMMEDIATE VIS puts to a rank that does not poll",
            "one rank",
        );
        return Ok(());
    };
    let must_block = match mechanism {
        VisMechanism::Am => Some(true),
        VisMechanism::Direct => Some(false),
        _ => match client.endpoint().rma_path(peer) {
            RmaPath::Reference => Some(true),
            RmaPath::Mapped => Some(false),
            // RDMA may go through without the target.
            RmaPath::Native => None,
        },
    };
    // Judged where the puts were made (rank 1's own mechanism to itself
    // is another).
    if let (0, Some(b)) = (client.rank().0, must_block) {
        assert_eq!(
            f.refused_at.is_some(),
            b,
            "IMMEDIATE VIS puts over {mechanism:?} to a rank that does not poll: {f:?}"
        );
        // Refused because the queue filled, not up front.
        assert_ne!(
            f.refused_at,
            Some(0),
            "the first IMMEDIATE VIS put was refused"
        );
    }
    let what = match f.refused_at {
        None => format!("all {} went through", f.issued),
        Some(i) => format!("refused at put {i}, having moved nothing; the {i} before it arrived"),
    };
    ok(
        client,
        &format!("IMMEDIATE VIS puts over {mechanism:?} to a rank that does not poll: {what}"),
    );
    Ok(())
}

/// Large node-local copies shared with a waiting thread: while a second
/// thread of every rank sits in `poll` (and so helps with shared copies),
/// puts and gets of at least `SHARE_MIN` bytes (strided at 25% density
/// with reflections, contiguous, and one whose destination elements
/// overlap, which is copied unshared) must leave what the one-thread copy
/// (`shared_copy(false)`) and the naive reference leave.
fn shared_copies(vis: &Vis, client: &Client, win: u64) -> rgex::Result<()> {
    let alone = Vis::builder()
        .mechanism(vis.mechanism())
        .shared_copy(false)
        .build(client.endpoint())?;
    let (me, n) = (client.rank().0, client.size());
    // Only direct copies are shared: the peers this context copies to
    // directly (over a network conduit, thousands of 8-byte RMA operations
    // or AM fragments per case would only make the test slow).
    let direct = matches!(vis.mechanism(), VisMechanism::Auto | VisMechanism::Direct);
    let peers: Vec<Rank> = (0..n)
        .map(|k| Rank((me + k) % n))
        .filter(|&p| direct && client.endpoint().locality().mapped_segment(p).is_some())
        .collect();
    let ((), polls) = with_poller(client, || shared_cases(vis, &alone, client, win, &peers))?;
    client.barrier()?;
    if peers.is_empty() {
        skip(
            client,
            "large shared copies",
            "no peer is copied to directly here (mechanism or conduit)",
        );
    } else {
        ok(
            client,
            &format!("large shared copies to {} node-local peers (with a thread polling: {polls} polls on rank 0) match the one-thread copy and the reference", peers.len()),
        );
    }
    Ok(())
}

fn shared_cases(
    vis: &Vis,
    alone: &Vis,
    client: &Client,
    win: u64,
    peers: &[Rank],
) -> rgex::Result<()> {
    let me = client.rank().0;
    let elems: u64 = (rgex::vis::SHARE_MIN / 8) * 2;
    let span = (elems * 32) as usize;
    assert!(
        span as u64 <= win,
        "shared-copy case too big for the window"
    );
    for &peer in peers {
        let at = u64::from(me) * win;
        // 8-byte elements at 25% density, as a 2-d array of 512 x (elems
        // / 512) walked with its rows reflected on the local side.
        let rows = elems / 512;
        let counts = [512u64, rows];
        let ps = [32i64, 32 * 512];
        let ls = [32i64, -32 * 512];
        let lb = (rows - 1) * 32 * 512;
        let contiguous = [elems * 8];
        let one = [1i64];
        // Elements larger than a shared block (copied in parts).
        let big = 96usize << 10;
        let (four, big_ps, big_ls) = ([4u64], [128i64 << 10], [big as i64]);
        for (case, (elem, counts, ps, ls, lb)) in [
            (8usize, &counts[..], &ps[..], &ls[..], lb),
            (1, &contiguous[..], &one[..], &one[..], 0),
            (big, &four[..], &big_ps[..], &big_ls[..], 0),
        ]
        .into_iter()
        .enumerate()
        {
            for put in [true, false] {
                let remote0 = pattern(span, 40 + case as u32 * 2);
                let local0 = pattern(span, 41 + case as u32 * 2);
                set_remote(client, GlobalAddr::new(peer, at), &remote0)?;
                let meta = VisMeta::Strided(Strided {
                    elem_size: elem,
                    counts,
                    peer_offset: at,
                    peer_strides: ps,
                    local_offset: lb,
                    local_strides: ls,
                });
                let mut local = local0.clone();
                let jobs = client.endpoint().shared_jobs();
                if put {
                    vis.put(peer, meta, &local, Flags::empty())?;
                } else {
                    vis.get(peer, meta, &mut local, Flags::empty())?;
                }
                // The put or get was shared (the check's get may be too).
                assert!(
                    client.endpoint().shared_jobs() > jobs,
                    "shared copy case {case} with {peer} (put={put}) was not shared"
                );
                let remote = get_remote(client, GlobalAddr::new(peer, at), span)?;
                let (mut er, mut el) = (remote0.clone(), local0.clone());
                for (p, l) in pairs(elem, counts, 0, ps, lb, ls) {
                    if put {
                        er[p] = local0[l];
                    } else {
                        el[l] = remote0[p];
                    }
                }
                assert!(
                    remote == er,
                    "shared copy case {case} with {peer}: remote side differs (put={put})"
                );
                assert!(
                    local == el,
                    "shared copy case {case} with {peer}: local side differs (put={put})"
                );
            }
        }
        // Overlapping destination elements: a get whose four passes over
        // the peer's rows all land in one local row, the pass loop
        // outermost (so parallel blocks could finish in any order). It is
        // copied unshared: the last pass wins, as in the reference.
        let counts = [elems, 4];
        let (ps, ls) = ([8i64, (elems * 8) as i64], [8i64, 0]);
        let remote0 = pattern((elems * 32) as usize, 50);
        set_remote(client, GlobalAddr::new(peer, at), &remote0)?;
        let s = words(&counts, at, &ps, &ls);
        let mut expect = vec![0u8; (elems * 8) as usize];
        for (p, l) in pairs(8, &counts, 0, &ps, 0, &ls) {
            expect[l] = remote0[p];
        }
        for v in [vis, alone] {
            let mut local = vec![0u8; (elems * 8) as usize];
            let jobs = client.endpoint().shared_jobs();
            v.get(peer, s, &mut local, Flags::empty())?;
            assert_eq!(
                client.endpoint().shared_jobs(),
                jobs,
                "an overlapping get from {peer} was shared"
            );
            assert!(
                local == expect,
                "overlapping get from {peer} (shared copies {}): not what the reference leaves",
                v.shared_copy()
            );
        }
    }
    Ok(())
}

/// How many random strided and list cases each rank runs with each peer:
/// `VIS_CASES`, 60 by default. Sixty list cases are every combination of
/// put or get, form (blocking, NB, NBI), vector or indexed (period 12)
/// with and without a large region (every fifth case): each once. Twenty
/// still take each of the 12 combinations, and a large region for put
/// and get, vector and indexed (cases 4, 9, 14, 19), and the strided
/// cases' 12 (put or get, form, compiled or not). The conduit matrix's
/// ofi rows without the bypass set 20 (ci/conduits.sh): there the RMA
/// mechanism's one put or get per fragment through the provider made the
/// list cases most of the suite's time.
fn cases() -> u32 {
    match std::env::var("VIS_CASES") {
        Err(_) => 60,
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("VIS_CASES={s:?} is not a count of cases (such as 60)")),
    }
}

fn main() -> rgex::Result<()> {
    let client = rgex::init()?;
    rgex_tests::conduit_banner(&client);
    let vis = Vis::new(client.endpoint())?;
    client.barrier()?;
    let win = window(&client);
    let cases = cases();
    let peer = Rank((client.rank().0 + 1) % client.size());
    let probe = vis.shape(
        peer,
        &VisMeta::Indexed(Indexed {
            peer: &[0, 64],
            peer_len: 8,
            local: &[0, 8],
            local_len: 8,
        }),
        16,
    )?;
    ok(
        &client,
        &format!(
            "VIS mechanism: configured {:?}, small indexed to {peer} takes {:?}",
            vis.mechanism(),
            vis.mechanism_for(peer, &probe)
        ),
    );
    strided(&vis, &client, win, cases)?;
    lists(&vis, &client, win, cases)?;
    reuse_after_lc(&vis, &client, win)?;
    reuse_after_deferred_lc(&vis, &client, win)?;
    metadata_consumed(&vis, &client, win)?;
    cached_shapes(&vis, &client, win)?;
    bad_input(&vis, &client, win)?;
    immediate(&vis, &client, win)?;
    immediate_stalled(&vis, &client, win)?;
    shared_copies(&vis, &client, win)?;
    if vis.mechanism() == VisMechanism::Am {
        // The FP-based AM pipeline (kept for comparison) must move the
        // same bytes: a bounded share of the same deterministic cases.
        let fixed = Vis::builder()
            .mechanism(VisMechanism::Am)
            .am_payload(AmPayload::Fixed)
            .build(client.endpoint())?;
        let few = cases.min(24);
        strided(&fixed, &client, win, few)?;
        lists(&fixed, &client, win, few)?;
        ok(
            &client,
            &format!(
                "FP-based AM pipeline ({:?}): strided and list cases match the reference",
                fixed.am_payload()
            ),
        );
    }
    client.barrier()?;
    ok(&client, "all VIS checks passed");
    Ok(())
}
