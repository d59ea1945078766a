//! Teams and collectives conformance, run as every rank of a job (or alone).
//!
//! Covers: world-team queries and rank translation; bad roots and ranks
//! (RankOutOfRange), bitwise ops on floats, collectives inside a handler
//! (InHandler); splits (odd/even; blocks of two with reversed keys and one
//! rank opting out) with sizes, order and translation both ways; 200
//! barriers, alternately blocking and non-blocking, each checked so that no
//! rank leaves before every rank has entered; broadcast from every root of
//! 0, 1, 1000 and 200 000 bytes; reduce and allreduce for every built-in
//! type and operator with exact expected values; user operators (max-loc
//! pairs, and 2x2 matrix products, which are not commutative); and all of
//! it again on the split teams, interleaved, with non-blocking barriers on
//! several teams in flight at once.

use rgex::team::{Element, Numeric, ReduceOp, Team, EAGER_RUN, NO_COLOUR};
use rgex::{Client, Error, Flags, HandlerId, Rank, CLIENT_MIN};
use rgex_tests::{fill_pattern, mix, ok, pattern_mismatch, wait_until};
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

const COUNT_REQ: HandlerId = HandlerId::forge(CLIENT_MIN);
const COUNT_ACK: HandlerId = HandlerId::forge(CLIENT_MIN + 1);
const INHANDLER: HandlerId = HandlerId::forge(CLIENT_MIN + 2);

const BARRIER_ROUNDS: usize = 200;

struct State {
    /// Per barrier round: ranks that announced they entered it.
    entered: Vec<AtomicU64>,
    /// Acknowledgements of this rank's announcements.
    acks: AtomicU64,
    /// What collectives called inside a handler returned.
    in_handler: Mutex<Vec<String>>,
    /// The world team, for the in-handler check.
    world: OnceLock<Team>,
}

fn register(t: &rgex::HandlerTable, st: &Arc<State>) -> rgex::Result<()> {
    let s = st.clone();
    t.register("count.req", move |tok, msg| {
        if let Some(c) = s.entered.get(msg.arg(0) as usize) {
            // Relaxed: read after the barrier that the sender entered only
            // after this handler replied; the barrier's messages order it.
            c.fetch_add(1, Ordering::Relaxed);
        }
        tok.reply_short(COUNT_ACK, &[], Flags::empty())
            .expect("reply");
    })?;
    let s = st.clone();
    t.register("count.ack", move |_tok, _msg| {
        // Relaxed: a counter polled by the same process; nothing else is
        // published through it.
        s.acks.fetch_add(1, Ordering::Relaxed);
    })?;
    let s = st.clone();
    t.register("inhandler", move |_tok, _msg| {
        let w = s.world.get().expect("world team set before any send");
        let mut out = s.in_handler.lock().unwrap();
        out.push(format!("{:?}", w.barrier().err()));
        out.push(format!("{:?}", w.barrier_nb().err()));
        out.push(format!("{:?}", w.broadcast(0, &[1]).err()));
        out.push(format!("{:?}", w.allreduce(&[1u32], ReduceOp::Sum).err()));
        out.push(format!("{:?}", w.split(0, 0).err()));
    })?;
    Ok(())
}

/// Size, rank, translation both ways, and the out-of-range errors.
fn check_team(t: &Team, want_members: &[u32], me: Rank, what: &str) {
    assert_eq!(t.size() as usize, want_members.len(), "{what}: size");
    let members: Vec<u32> = (0..t.size())
        .map(|r| t.world_rank(r).expect("in range").0)
        .collect();
    assert_eq!(members, want_members, "{what}: members in team order");
    assert_eq!(t.world_rank(t.my_rank()).unwrap(), me, "{what}: my rank");
    for (i, &m) in want_members.iter().enumerate() {
        assert_eq!(t.team_rank(Rank(m)), Some(i as u32), "{what}: team_rank");
    }
    assert!(matches!(
        t.world_rank(t.size()),
        Err(Error::RankOutOfRange { .. })
    ));
}

fn queries_and_errors(client: &Client, st: &State) -> rgex::Result<()> {
    let w = client.world();
    let n = client.size();
    let me = client.rank();
    check_team(w, &(0..n).collect::<Vec<_>>(), me, "world");
    assert_eq!(w.team_rank(Rank(n)), None);
    assert!(matches!(
        w.broadcast(n, &[1]),
        Err(Error::RankOutOfRange { rank, size }) if rank == n && size == n
    ));
    assert!(matches!(
        w.reduce(n + 5, &[1u32], ReduceOp::Sum),
        Err(Error::RankOutOfRange { .. })
    ));
    assert!(matches!(
        w.reduce_with(n, &[1u32], |_a: &mut [u32], _b: &[u32]| {}),
        Err(Error::RankOutOfRange { .. })
    ));
    assert!(matches!(
        w.allreduce(&[1.0f64], ReduceOp::Xor),
        Err(Error::Config(_))
    ));
    assert!(matches!(
        w.reduce(0, &[1.0f32], ReduceOp::And),
        Err(Error::Config(_))
    ));
    // The job still works after the refused calls.
    w.barrier()?;
    ok(
        client,
        "world team: queries, translation, out-of-range roots, bitwise on floats",
    );

    // A handler that tries collectives gets InHandler for each.
    let to = Rank((me.0 + 1) % n);
    client
        .endpoint()
        .request_short(to, INHANDLER, &[], Flags::empty())?;
    wait_until(client, "the in-handler check", || {
        st.in_handler.lock().unwrap().len() == 5
    });
    for e in st.in_handler.lock().unwrap().iter() {
        assert!(e.contains("InHandler"), "in a handler: got {e}");
    }
    w.barrier()?;
    ok(
        client,
        "collectives inside a handler are refused with InHandler",
    );
    Ok(())
}

/// The splits: odd/even by world rank, and blocks of two in reverse order
/// with the last rank opting out (when there is more than one rank).
fn splits(client: &Client) -> rgex::Result<(Team, Option<Team>)> {
    let w = client.world();
    let (n, me) = (client.size(), client.rank());
    let parity = w.split(me.0 % 2, me.0)?.expect("every rank has a parity");
    let want: Vec<u32> = (0..n).filter(|r| r % 2 == me.0 % 2).collect();
    check_team(&parity, &want, me, "odd/even");
    ok(
        client,
        "split odd/even: sizes, order, translation both ways",
    );

    let opt_out = n > 1 && me.0 == n - 1;
    let colour = if opt_out { NO_COLOUR } else { me.0 / 2 };
    let pair = w.split(colour, u32::MAX - me.0)?;
    assert_eq!(pair.is_none(), opt_out, "opting out gives None");
    if let Some(p) = &pair {
        let mut want: Vec<u32> = (0..n)
            .filter(|&r| r / 2 == me.0 / 2 && !(n > 1 && r == n - 1))
            .collect();
        want.reverse();
        check_team(p, &want, me, "blocks of two");
        assert_ne!(p.id(), parity.id());
        assert_ne!(p.id(), w.id());
    }
    // A second split with the same arguments is a different team.
    let again = w.split(me.0 % 2, me.0)?.expect("parity again");
    assert_ne!(again.id(), parity.id());
    assert_eq!(again.membership(), parity.membership());
    w.barrier()?;
    ok(
        client,
        "split blocks of two (reversed keys, one rank opting out)",
    );
    Ok((parity, pair))
}

/// Every rank announces it entered round k to rank k % n (and waits for
/// the acknowledgement) before it enters the barrier; after the barrier
/// that rank must have every announcement: nobody left early.
fn barriers(client: &Client, st: &State) -> rgex::Result<()> {
    let w = client.world();
    let n = client.size();
    for k in 0..BARRIER_ROUNDS {
        let checker = (k % n as usize) as u32;
        client
            .endpoint()
            .request_short(Rank(checker), COUNT_REQ, &[k as u32], Flags::empty())?;
        wait_until(client, "the announcement's ack", || {
            // Relaxed: see the ack handler.
            st.acks.load(Ordering::Relaxed) == k as u64 + 1
        });
        if k % 2 == 0 {
            w.barrier()?;
        } else if k % 3 == 1 {
            w.barrier_nb()?.wait()?;
        } else {
            // Driven by the client's plain poll alone.
            let ev = w.barrier_nb()?;
            rgex_tests::wait_until(client, "a non-blocking barrier", || ev.test());
        }
        if client.rank().0 == checker {
            // Relaxed: see the count handler.
            let seen = st.entered[k].load(Ordering::Relaxed);
            assert_eq!(seen, u64::from(n), "round {k}: left the barrier early");
        }
    }
    w.barrier()?;
    ok(
        client,
        &format!("{BARRIER_ROUNDS} barriers (blocking and non-blocking): no rank leaves early"),
    );
    Ok(())
}

/// Broadcasts from every root of every size in `sizes`, their bytes
/// seeded by `round` (so that data of an earlier round arriving late
/// would show).
fn broadcasts(t: &Team, sizes: &[usize], round: u32) -> rgex::Result<()> {
    for root in 0..t.size() {
        for &len in sizes {
            let seed = (len as u32).wrapping_mul(31) ^ round;
            let mut data = vec![0u8; len];
            fill_pattern(&mut data, root, seed);
            let mine = if t.my_rank() == root { &data[..] } else { &[] };
            let got = t.broadcast(root, mine)?;
            assert_eq!(got.len(), len, "broadcast from {root}: length");
            assert_eq!(
                pattern_mismatch(&got, root, seed),
                None,
                "broadcast of {len} bytes from {root} (round {round}): bytes differ"
            );
        }
    }
    // Elements, too.
    let v = t.broadcast_elems(0, &[t.my_rank() as u64 + 7, 3])?;
    assert_eq!(v, [7, 3]);
    Ok(())
}

/// Built-in types from small integers (exact in every type).
trait FromI64: Numeric + PartialEq + Debug {
    fn from_i64(v: i64) -> Self;
}
macro_rules! from_i64 {
    ($($t:ty),*) => {$(impl FromI64 for $t {
        fn from_i64(v: i64) -> Self { v as $t }
    })*};
}
from_i64!(i32, u32, i64, u64, f32, f64);

const LEN: usize = 5;

fn value(r: u32, j: usize, op: ReduceOp, signed: bool) -> i64 {
    match op {
        // Small (exact in every type, products included), and not
        // periodic in `j`: every call of a run gets data of its own.
        ReduceOp::Sum | ReduceOp::Prod => i64::from(mix(r, j as u32, 5) % 3 + 1),
        ReduceOp::Min | ReduceOp::Max => {
            let v = i64::from(mix(r, j as u32, 7) % 200);
            if signed {
                v - 100
            } else {
                v
            }
        }
        _ => i64::from(mix(r, j as u32, 9)),
    }
}

fn reductions_of<T: FromI64>(t: &Team, ops: &[ReduceOp], signed: bool) -> rgex::Result<()> {
    let n = t.size();
    let me = t.my_rank();
    for &op in ops {
        // Rank r's data in call k (each call its own, so that data of an
        // earlier call arriving late would show), and their reduction.
        let data = |r: u32, k: usize| -> Vec<T> {
            (0..LEN)
                .map(|j| T::from_i64(value(r, j + k * LEN, op, signed)))
                .collect()
        };
        let want = |k: usize| -> rgex::Result<Vec<T>> {
            let mut acc = data(0, k);
            for r in 1..n {
                T::combine(op, &mut acc, &data(r, k))?;
            }
            Ok(acc)
        };
        let mut roots = vec![0, n - 1, n / 2];
        roots.dedup();
        for (k, &root) in roots.iter().enumerate() {
            let got = t.reduce(root, &data(me, k), op)?;
            if me == root {
                assert_eq!(got, Some(want(k)?), "reduce {op:?} to {root}");
            } else {
                assert_eq!(got, None, "reduce {op:?}: a result off the root");
            }
        }
        let k = roots.len();
        assert_eq!(t.allreduce(&data(me, k), op)?, want(k)?, "allreduce {op:?}");
        // Long enough for the tree (small ones travel with the
        // agreement): 300 elements, 2400 bytes or 1200.
        let long = |r: u32| -> Vec<T> { (0..60).flat_map(|i| data(r, k + 1 + i)).collect() };
        let mut acc = long(0);
        for r in 1..n {
            T::combine(op, &mut acc, &long(r))?;
        }
        assert_eq!(t.allreduce(&long(me), op)?, acc, "allreduce {op:?} of 300");
    }
    Ok(())
}

fn reductions(t: &Team) -> rgex::Result<()> {
    use ReduceOp::*;
    let all = [Sum, Prod, Min, Max, And, Or, Xor];
    reductions_of::<i32>(t, &all, true)?;
    reductions_of::<u32>(t, &all, false)?;
    reductions_of::<i64>(t, &all, true)?;
    reductions_of::<u64>(t, &all, false)?;
    reductions_of::<f32>(t, &[Sum, Prod, Min, Max], true)?;
    reductions_of::<f64>(t, &[Sum, Prod, Min, Max], true)?;
    // Long arrays (8 KiB and more) by reduce-scatter and allgather, of a
    // length that does not split evenly.
    let long = |r: u32| -> Vec<u64> { (0..1031u32).map(|j| u64::from(mix(r, j, 11))).collect() };
    let mut want = long(0);
    for r in 1..t.size() {
        u64::combine(Xor, &mut want, &long(r))?;
    }
    assert_eq!(
        t.allreduce(&long(t.my_rank()), Xor)?,
        want,
        "allreduce of 1031 u64"
    );
    // An empty array reduces to an empty array.
    assert_eq!(t.allreduce::<u64>(&[], Sum)?, Vec::<u64>::new());
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Loc {
    v: i32,
    i: u32,
}

impl Element for Loc {
    const SIZE: usize = 8;
    fn write(&self, out: &mut Vec<u8>) {
        self.v.write(out);
        self.i.write(out);
    }
    fn read(b: &[u8]) -> Self {
        Loc {
            v: i32::read(&b[..4]),
            i: u32::read(&b[4..8]),
        }
    }
}

fn max_loc(acc: &mut [Loc], x: &[Loc]) {
    for (a, b) in acc.iter_mut().zip(x) {
        if b.v > a.v || (b.v == a.v && b.i < a.i) {
            *a = *b;
        }
    }
}

/// 2x2 matrices of u64 (wrapping), row-major: associative, not commutative.
fn mat_mul(acc: &mut [u64], x: &[u64]) {
    let a = [acc[0], acc[1], acc[2], acc[3]];
    let m = |i: usize, j: usize| {
        a[2 * i]
            .wrapping_mul(x[j])
            .wrapping_add(a[2 * i + 1].wrapping_mul(x[2 + j]))
    };
    let r = [m(0, 0), m(0, 1), m(1, 0), m(1, 1)];
    acc.copy_from_slice(&r);
}

fn matrix(r: u32) -> [u64; 4] {
    [1, u64::from(r) + 1, u64::from(r % 3), 1]
}

fn user_ops(t: &Team) -> rgex::Result<()> {
    let (n, me) = (t.size(), t.my_rank());
    // Max-loc over (value, index) pairs; ties go to the lower index.
    let mine: Vec<Loc> = (0..LEN)
        .map(|j| Loc {
            v: (mix(me, j as u32, 3) % 4) as i32,
            i: me,
        })
        .collect();
    let mut want: Vec<Loc> = (0..LEN)
        .map(|j| Loc {
            v: (mix(0, j as u32, 3) % 4) as i32,
            i: 0,
        })
        .collect();
    for r in 1..n {
        let x: Vec<Loc> = (0..LEN)
            .map(|j| Loc {
                v: (mix(r, j as u32, 3) % 4) as i32,
                i: r,
            })
            .collect();
        max_loc(&mut want, &x);
    }
    assert_eq!(t.allreduce_with(&mine, max_loc)?, want, "max-loc allreduce");
    // Matrix products down the tree: 100 of them side by side (3200
    // bytes), each in team-rank order.
    let many = |r: u32| -> Vec<[u64; 4]> {
        (0..100u32)
            .map(|i| {
                let m = matrix(r + i);
                [m[0], m[1], m[2], m[3]]
            })
            .collect()
    };
    let flat = |v: Vec<[u64; 4]>| -> Vec<u64> { v.into_iter().flatten().collect() };
    let mat_muls = |acc: &mut [u64], x: &[u64]| {
        for (a, b) in acc.chunks_mut(4).zip(x.chunks(4)) {
            mat_mul(a, b);
        }
    };
    let mut want_many = flat(many(0));
    for r in 1..n {
        mat_muls(&mut want_many, &flat(many(r)));
    }
    assert_eq!(
        t.allreduce_with(&flat(many(me)), mat_muls)?,
        want_many,
        "matrix products down the tree"
    );
    // And 300 (9600 bytes): a user's operator sees the whole array
    // however long it is (only built-in ones are applied to chunks).
    let many = |r: u32| -> Vec<u64> { (0..300).flat_map(|i| matrix(r + i)).collect() };
    let mut want_many = many(0);
    for r in 1..n {
        mat_muls(&mut want_many, &many(r));
    }
    assert_eq!(
        t.allreduce_with(&many(me), mat_muls)?,
        want_many,
        "300 matrix products side by side"
    );
    let root = n - 1;
    let got = t.reduce_with(root, &mine, max_loc)?;
    assert_eq!(got.is_some(), me == root);
    if let Some(g) = got {
        assert_eq!(g, want, "max-loc reduce");
    }
    // Matrix product in team-rank order.
    let mut want = matrix(0).to_vec();
    for r in 1..n {
        mat_mul(&mut want, &matrix(r));
    }
    assert_eq!(
        t.allreduce_with(&matrix(me), mat_mul)?,
        want,
        "matrix product order"
    );
    let root = n / 2;
    if let Some(g) = t.reduce_with(root, &matrix(me), mat_mul)? {
        assert_eq!(me, root);
        assert_eq!(g, want, "matrix product reduce order");
    }
    Ok(())
}

/// Rank `r`'s `len` elements for call `k` (each call its own data, so
/// that data of an earlier call arriving late would show; the low byte
/// names the rank).
fn elems(r: u32, len: usize, k: u32) -> Vec<u64> {
    (0..len)
        .map(|j| (u64::from(mix(r, j as u32, k)) << 8) | u64::from(r & 0xff))
        .collect()
}

/// Runs one collective in its blocking or its non-blocking form (`nb`):
/// the same call either way, the handle waited at once.
macro_rules! call {
    ($nb:expr, $t:expr, $f:ident, $fnb:ident ( $($a:expr),* )) => {
        if $nb { $t.$fnb($($a),*)?.wait()? } else { $t.$f($($a),*)? }
    };
}

/// Gathers, scatters, alltoalls and scans, in both forms, against a
/// sequential model: from every root of 0, the last and the middle,
/// with blocks of several sizes (empty ones included) and, in round 0,
/// a large block that travels in many fragments.
fn movement(t: &Team, round: u32) -> rgex::Result<()> {
    let (n, me) = (t.size(), t.my_rank());
    let mut roots = vec![0, n - 1, n / 2];
    roots.dedup();
    for nb in [false, true] {
        let k0 = round * 1000 + u32::from(nb) * 500;
        for (i, &root) in roots.iter().enumerate() {
            let k = k0 + 10 * i as u32;
            let got = call!(nb, t, gather, gather_nb(root, &elems(me, 3, k)));
            let want: Vec<u64> = (0..n).flat_map(|r| elems(r, 3, k)).collect();
            assert_eq!(got, (me == root).then_some(want), "gather to {root}");

            // Rank r's block: (r + k) % 4 elements, and in round 0 one of
            // 5000 elements (40 000 bytes) from the last rank.
            let len = |r: u32| {
                if round == 0 && r == n - 1 {
                    5000
                } else {
                    ((r + k) % 4) as usize
                }
            };
            let got = call!(nb, t, gatherv, gatherv_nb(root, &elems(me, len(me), k + 1)));
            let want: Vec<Vec<u64>> = (0..n).map(|r| elems(r, len(r), k + 1)).collect();
            assert_eq!(got, (me == root).then_some(want), "gatherv to {root}");

            let all: Vec<u64> = (0..n).flat_map(|r| elems(r, 2, k + 2)).collect();
            let mine: &[u64] = if me == root { &all } else { &[] };
            let got = call!(nb, t, scatter, scatter_nb(root, mine, 2));
            assert_eq!(got, elems(me, 2, k + 2), "scatter from {root}");

            let blocks: Vec<Vec<u64>> = (0..n).map(|r| elems(r, len(r), k + 3)).collect();
            let mine: &[Vec<u64>] = if me == root { &blocks } else { &[] };
            let got = call!(nb, t, scatterv, scatterv_nb(root, mine));
            assert_eq!(got, elems(me, len(me), k + 3), "scatterv from {root}");
        }
        let k = k0 + 100;
        let got = call!(nb, t, allgather, allgather_nb(&elems(me, 2, k)));
        let want: Vec<u64> = (0..n).flat_map(|r| elems(r, 2, k)).collect();
        assert_eq!(got, want, "allgather");
        let len = |r: u32| {
            if round == 0 && r == 0 {
                5000
            } else {
                ((r + k) % 3) as usize
            }
        };
        let got = call!(nb, t, allgatherv, allgatherv_nb(&elems(me, len(me), k + 1)));
        let want: Vec<Vec<u64>> = (0..n).map(|r| elems(r, len(r), k + 1)).collect();
        assert_eq!(got, want, "allgatherv");

        // The block from `from` to `to`: its own data.
        let pair = |from: u32, to: u32, cnt: usize| elems(from * 4096 + to, cnt, k + 2);
        let cnt = if round == 0 { 130 } else { 3 };
        let data: Vec<u64> = (0..n).flat_map(|to| pair(me, to, cnt)).collect();
        let got = call!(nb, t, alltoall, alltoall_nb(&data));
        let want: Vec<u64> = (0..n).flat_map(|from| pair(from, me, cnt)).collect();
        assert_eq!(got, want, "alltoall");
        let cnt = |from: u32, to: u32| ((from + 2 * to + k) % 5) as usize;
        let out: Vec<Vec<u64>> = (0..n).map(|to| pair(me, to, cnt(me, to))).collect();
        let got = call!(nb, t, alltoallv, alltoallv_nb(&out));
        let want: Vec<Vec<u64>> = (0..n).map(|from| pair(from, me, cnt(from, me))).collect();
        assert_eq!(got, want, "alltoallv");

        scans_of::<u64>(t, &[ReduceOp::Sum, ReduceOp::Xor], false, k + 3, nb)?;
        scans_of::<i32>(t, &[ReduceOp::Max, ReduceOp::Min], true, k + 4, nb)?;
        scans_of::<f64>(t, &[ReduceOp::Prod], true, k + 5, nb)?;
        // Matrix products: not commutative, so the order shows.
        let prefix = |upto: u32| {
            let mut acc = matrix(0).to_vec();
            for r in 1..upto {
                mat_mul(&mut acc, &matrix(r));
            }
            acc
        };
        let got = call!(nb, t, scan_with, scan_with_nb(&matrix(me), mat_mul));
        assert_eq!(got, prefix(me + 1), "scan of matrix products");
        let got = call!(nb, t, exscan_with, exscan_with_nb(&matrix(me), mat_mul));
        assert_eq!(
            got,
            (me > 0).then(|| prefix(me)),
            "exscan of matrix products"
        );
    }
    Ok(())
}

/// Inclusive and exclusive scans of `T` for each operator in `ops`.
fn scans_of<T: FromI64>(
    t: &Team,
    ops: &[ReduceOp],
    signed: bool,
    k: u32,
    nb: bool,
) -> rgex::Result<()> {
    let me = t.my_rank();
    for &op in ops {
        let data = |r: u32| -> Vec<T> {
            (0..LEN)
                .map(|j| T::from_i64(value(r, j + k as usize * LEN, op, signed)))
                .collect()
        };
        let upto = |end: u32| -> rgex::Result<Vec<T>> {
            let mut acc = data(0);
            for r in 1..end {
                T::combine(op, &mut acc, &data(r))?;
            }
            Ok(acc)
        };
        let got = call!(nb, t, scan, scan_nb(&data(me), op));
        assert_eq!(got, upto(me + 1)?, "scan {op:?}");
        let got = call!(nb, t, exscan, exscan_nb(&data(me), op));
        let want = if me == 0 { None } else { Some(upto(me)?) };
        assert_eq!(got, want, "exscan {op:?}");
    }
    Ok(())
}

/// Several collectives of every kind in flight at once on `t`, then
/// completed in an order of each rank's own (forward, backward, or
/// rotated), one of them awaited as a future: every result is right.
fn in_flight(t: &Team, round: u32) -> rgex::Result<()> {
    type Check<'a> = Box<dyn FnOnce() -> rgex::Result<()> + 'a>;
    let (n, me) = (t.size(), t.my_rank());
    let k = 7000 + round;
    let nu = u64::from(n);
    let sum = t.allreduce_nb(&[u64::from(me) + 1], ReduceOp::Sum)?;
    let root = n - 1;
    let mut payload = vec![0u8; 3000];
    fill_pattern(&mut payload, root, k);
    let bcast = t.broadcast_nb(root, if me == root { &payload } else { &[] })?;
    let pair = |from: u32, to: u32| elems(from * 4096 + to, 2, k);
    let data: Vec<u64> = (0..n).flat_map(|to| pair(me, to)).collect();
    let a2a = t.alltoall_nb(&data)?;
    let gath = t.gather_nb(0, &elems(me, 2, k))?;
    let bar = t.barrier_nb()?;
    let excl = t.exscan_nb(&[1u32], ReduceOp::Sum)?;
    let agv = t.allgatherv_nb(&elems(me, me as usize % 3, k + 1))?;
    let prod = t.reduce_with_nb(n / 2, &matrix(me), mat_mul)?;
    let mut checks: Vec<Check> = vec![
        Box::new(move || {
            assert_eq!(sum.wait()?, [nu * (nu + 1) / 2], "allreduce in flight");
            Ok(())
        }),
        Box::new(|| {
            let got = bcast.wait()?;
            assert_eq!(pattern_mismatch(&got, root, k), None, "broadcast in flight");
            assert_eq!(got.len(), payload.len());
            Ok(())
        }),
        Box::new(move || {
            let want: Vec<u64> = (0..n).flat_map(|from| pair(from, me)).collect();
            assert_eq!(a2a.wait()?, want, "alltoall in flight");
            Ok(())
        }),
        Box::new(move || {
            let want: Vec<u64> = (0..n).flat_map(|r| elems(r, 2, k)).collect();
            assert_eq!(gath.wait()?, (me == 0).then_some(want), "gather in flight");
            Ok(())
        }),
        Box::new(move || bar.wait()),
        Box::new(move || {
            assert_eq!(
                excl.wait()?,
                (me > 0).then_some(vec![me]),
                "exscan in flight"
            );
            Ok(())
        }),
        Box::new(move || {
            // Awaited: the future resolves to the result too.
            let got = rgex_tests::executor::block_on("allgatherv_nb", agv, || {
                t.progress();
                true
            })?;
            let want: Vec<Vec<u64>> = (0..n).map(|r| elems(r, r as usize % 3, k + 1)).collect();
            assert_eq!(got, want, "allgatherv in flight");
            Ok(())
        }),
        Box::new(move || {
            let mut want = matrix(0).to_vec();
            for r in 1..n {
                mat_mul(&mut want, &matrix(r));
            }
            assert_eq!(
                prod.wait()?,
                (me == n / 2).then_some(want),
                "reduce_with in flight"
            );
            Ok(())
        }),
    ];
    match (me + round) % 3 {
        0 => checks.reverse(),
        1 => checks.rotate_left(3),
        _ => {}
    }
    for c in checks {
        c()?;
    }
    Ok(())
}

/// The collectives on several teams, interleaved, with non-blocking
/// barriers on every team in flight at once.
fn on_split_teams(client: &Client, teams: &[Team]) -> rgex::Result<()> {
    for round in 0..5u64 {
        let mut events: Vec<rgex::Event> = teams
            .iter()
            .map(|t| t.barrier_nb())
            .collect::<rgex::Result<_>>()?;
        for t in teams {
            let s = t.allreduce(&[u64::from(t.my_rank()) + round], ReduceOp::Sum)?;
            let n = u64::from(t.size());
            assert_eq!(
                s[0],
                n * (n - 1) / 2 + n * round,
                "allreduce on team {:#x}",
                t.id()
            );
        }
        rgex::Event::wait_all(&mut events)?;
        for t in teams {
            broadcasts(t, &[0, 1000], round as u32)?;
        }
    }
    for t in teams {
        reductions(t)?;
        user_ops(t)?;
        movement(t, 1)?;
        in_flight(t, 1)?;
        // A round number no other call uses (the world's broadcasts in
        // main use 0).
        broadcasts(t, &[200_000], 1000)?;
    }
    client.world().barrier()?;
    ok(client, "collectives on the split teams, interleaved");
    Ok(())
}

/// What every member must get from a collective whose members passed
/// arguments that do not match: the mismatch, naming this call, the same
/// two team ranks and both values on every rank.
#[allow(clippy::too_many_arguments)]
fn expect_mismatch<T: Debug>(
    t: &Team,
    got: rgex::Result<T>,
    call: &str,
    want_field: &str,
    want_second: u32,
    want_first_value: &str,
    want_second_value: &str,
) {
    let me = t.my_rank();
    match &got {
        Err(
            e @ Error::CollectiveMismatch {
                collective,
                team,
                field,
                first,
                first_value,
                second,
                second_value,
                ..
            },
        ) => {
            assert_eq!(*collective, call, "rank {me}: {e}");
            assert_eq!(*team, t.id(), "rank {me}: {e}");
            assert_eq!(*field, want_field, "rank {me}: {e}");
            assert_eq!(*first, 0, "rank {me}: {e}");
            assert_eq!(*second, want_second, "rank {me}: {e}");
            assert_eq!(first_value, want_first_value, "rank {me}: {e}");
            assert_eq!(second_value, want_second_value, "rank {me}: {e}");
            let text = e.to_string();
            for part in [call, want_field, want_first_value, want_second_value] {
                assert!(text.contains(part), "rank {me}: {text:?} lacks {part:?}");
            }
        }
        other => panic!("rank {me}: {call} with mismatched {want_field}: got {other:?}"),
    }
}

/// Whether `got` failed of a mismatch in a collective that ran eagerly
/// (one at a sequence number where every collective runs an agreement
/// fails on every member at once: see `rgex::team::EAGER_RUN`). A
/// success says the collective ran eagerly (an agreement would have
/// failed it).
fn ran_eagerly<T>(got: &rgex::Result<T>) -> bool {
    match got {
        Err(Error::CollectiveMismatch { seq, .. }) => seq % EAGER_RUN != EAGER_RUN - 1,
        _ => true,
    }
}

/// What every member must get from an eager broadcast whose members
/// passed arguments that do not match, where it ran eagerly: at once,
/// success, or the mismatch naming `call` and two team ranks whose
/// arguments really differ (`value_of`: a team rank's value of the
/// field); then the team's next collective with an agreement (a barrier
/// here) fails on every member, as `expect_mismatch` says, naming
/// `deferred_call` (the lowest member's collective). Where it ran an
/// agreement itself, it fails at once as `expect_mismatch` says and the
/// barrier passes.
#[allow(clippy::too_many_arguments)]
fn expect_eager_mismatch<T: Debug>(
    t: &Team,
    got: rgex::Result<T>,
    call: &str,
    want_field: &str,
    value_of: &dyn Fn(u32) -> String,
    deferred_call: &str,
    want_second: u32,
    want_first_value: &str,
    want_second_value: &str,
) {
    let me = t.my_rank();
    if !ran_eagerly(&got) {
        expect_mismatch(
            t,
            got,
            call,
            want_field,
            want_second,
            want_first_value,
            want_second_value,
        );
        t.barrier()
            .expect("a barrier after an agreed broadcast's mismatch");
        return;
    }
    match &got {
        Ok(_) => {}
        Err(
            e @ Error::CollectiveMismatch {
                collective,
                field,
                first,
                first_value,
                second,
                second_value,
                ..
            },
        ) => {
            assert_eq!(*collective, call, "rank {me}: {e}");
            assert_eq!(*field, want_field, "rank {me}: {e}");
            assert!(first < second, "rank {me}: {e}");
            assert_eq!(*first_value, value_of(*first), "rank {me}: {e}");
            assert_eq!(*second_value, value_of(*second), "rank {me}: {e}");
        }
        other => panic!("rank {me}: eager {call} with mismatched {want_field}: got {other:?}"),
    }
    expect_deferred(
        t,
        deferred_call,
        want_field,
        want_second,
        want_first_value,
        want_second_value,
    );
}

/// The team's next collective with an agreement (a barrier) fails on
/// every member with an earlier eager collective's mismatch.
fn expect_deferred(
    t: &Team,
    call: &str,
    want_field: &str,
    want_second: u32,
    want_first_value: &str,
    want_second_value: &str,
) {
    let got = t.barrier();
    expect_mismatch(
        t,
        got,
        call,
        want_field,
        want_second,
        want_first_value,
        want_second_value,
    );
}

/// After a failed collective the team still works: a barrier, then an
/// allreduce with a value every member can check.
fn still_usable(t: &Team, round: u64) -> rgex::Result<()> {
    t.barrier()?;
    let n = u64::from(t.size());
    let got = t.allreduce(&[u64::from(t.my_rank()) + round, round], ReduceOp::Sum)?;
    assert_eq!(
        got,
        [n * (n - 1) / 2 + n * round, n * round],
        "allreduce after a mismatch"
    );
    Ok(())
}

/// Collectives whose members pass mismatched arguments: every member gets
/// `CollectiveMismatch` for that collective (none hangs, none succeeds),
/// and the team stays usable for the next ones.
fn mismatches(client: &Client) -> rgex::Result<()> {
    let t = client.world();
    let (n, me) = (t.size(), t.my_rank());
    let data = |len: usize| -> Vec<u64> { (0..len as u64).map(|j| j + u64::from(me)).collect() };

    // Element count in an allreduce: the last rank passes one more, then
    // (the lowest rank disagreeing) rank 0 passes one less.
    let odd = n - 1;
    let len = LEN + usize::from(me == odd);
    let got = t.allreduce(&data(len), ReduceOp::Sum);
    expect_mismatch(t, got, "allreduce", "element count", odd, "5", "6");
    still_usable(t, 1)?;
    let len = if me == 0 { LEN - 1 } else { LEN };
    let got = t.allreduce(&data(len), ReduceOp::Sum);
    expect_mismatch(t, got, "allreduce", "element count", 1, "4", "5");
    still_usable(t, 2)?;
    ok(client, "mismatch: allreduce element counts");

    // Element count in a reduce, to the last rank and to rank 0.
    let odd = n / 2;
    let len = LEN + usize::from(me == odd);
    let got = t.reduce(n - 1, &data(len), ReduceOp::Max);
    expect_mismatch(t, got, "reduce", "element count", odd, "5", "6");
    still_usable(t, 3)?;
    let got = t.reduce_with(0, &data(len), |a: &mut [u64], b: &[u64]| {
        a.iter_mut().zip(b).for_each(|(x, y)| *x ^= y)
    });
    expect_mismatch(t, got, "reduce", "element count", odd, "5", "6");
    still_usable(t, 4)?;
    ok(client, "mismatch: reduce element counts");

    // Roots: the upper half broadcasts from the last rank, the lower half
    // from rank 0 (each root sends its own bytes).
    let half = n / 2;
    let root_of = |r: u32| if r < half { 0 } else { n - 1 };
    let root = root_of(me);
    let value_of = |r: u32| root_of(r).to_string();
    let got = t.broadcast(root, b"from the root I believe in");
    let (r0, r1) = (0.to_string(), (n - 1).to_string());
    expect_eager_mismatch(
        t,
        got,
        "broadcast",
        "root",
        &value_of,
        "broadcast",
        half,
        &r0,
        &r1,
    );
    still_usable(t, 5)?;
    let got = t.broadcast_elems(root, &[1u32, 2, 3]);
    expect_eager_mismatch(
        t,
        got,
        "broadcast",
        "root",
        &value_of,
        "broadcast",
        half,
        &r0,
        &r1,
    );
    still_usable(t, 6)?;
    // No member believes it is the root: each waits on another, which
    // answers that it believes otherwise.
    let got = t.broadcast((me + 1) % n, b"not me");
    let value_of = |r: u32| ((r + 1) % n).to_string();
    let (v0, v1) = (1.to_string(), (2 % n).to_string());
    expect_eager_mismatch(
        t,
        got,
        "broadcast",
        "root",
        &value_of,
        "broadcast",
        1,
        &v0,
        &v1,
    );
    still_usable(t, 27)?;
    // Element types: the last rank broadcasts u64s where the others take
    // u32s (each member that gets the root's message sees its type).
    let odd = n - 1;
    let got = if me == odd {
        t.broadcast_elems(0, &[7u64]).map(|_| ())
    } else {
        t.broadcast_elems(0, &[7u32]).map(|_| ())
    };
    let type_of = |r: u32| if r == odd { "u64" } else { "u32" }.to_string();
    expect_eager_mismatch(
        t,
        got,
        "broadcast",
        "element type",
        &type_of,
        "broadcast",
        odd,
        "u32",
        "u64",
    );
    still_usable(t, 28)?;
    ok(
        client,
        "mismatch: broadcast roots (two roots, and none) and element types",
    );

    // A reduce where only the last rank names itself the root.
    let root = if me == n - 1 { n - 1 } else { 0 };
    let got = t.reduce(root, &data(LEN), ReduceOp::Sum);
    expect_mismatch(t, got, "reduce", "root", n - 1, &r0, &r1);
    still_usable(t, 7)?;
    ok(client, "mismatch: reduce roots");

    // Element types: u64 and f64 (the same size, so only the type tells),
    // and u32 against u64.
    let odd = n / 2;
    let got = if me == odd {
        t.allreduce(&[1.0f64, 2.0], ReduceOp::Sum).map(|_| ())
    } else {
        t.allreduce(&[1u64, 2], ReduceOp::Sum).map(|_| ())
    };
    expect_mismatch(t, got, "allreduce", "element type", odd, "u64", "f64");
    still_usable(t, 8)?;
    let got = if me == 0 {
        t.reduce(0, &[1u32, 2], ReduceOp::Min).map(|_| ())
    } else {
        t.reduce(0, &[1u64, 2], ReduceOp::Min).map(|_| ())
    };
    expect_mismatch(t, got, "reduce", "element type", 1, "u32", "u64");
    still_usable(t, 9)?;
    ok(client, "mismatch: element types");

    // Operators: Sum against Max, and a built-in against a user operator.
    let odd = n - 1;
    let op = if me == odd {
        ReduceOp::Max
    } else {
        ReduceOp::Sum
    };
    let got = t.allreduce(&data(LEN), op);
    expect_mismatch(t, got, "allreduce", "operator", odd, "Sum", "Max");
    still_usable(t, 10)?;
    let got = if me == 0 {
        t.allreduce_with(&data(LEN), |a: &mut [u64], b: &[u64]| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y)
        })
    } else {
        t.allreduce(&data(LEN), ReduceOp::Sum)
    };
    expect_mismatch(t, got, "allreduce", "operator", 1, "a user operator", "Sum");
    still_usable(t, 11)?;
    ok(client, "mismatch: operators (built-in and user)");

    // Different collectives: the last rank calls a barrier where the others
    // allreduce; rank 0 starts a non-blocking barrier where the others
    // broadcast (the event fails).
    let got = if me == n - 1 {
        t.barrier().map(|_| Vec::new())
    } else {
        t.allreduce(&data(LEN), ReduceOp::Sum)
    };
    let call = if me == n - 1 { "barrier" } else { "allreduce" };
    expect_mismatch(t, got, call, "collective", n - 1, "allreduce", "barrier");
    still_usable(t, 12)?;
    // The broadcast runs eagerly (but at EAGER_RUN's sequence numbers):
    // rank 0 waits on rank 1's agreement message, which never comes, asks
    // it and fails on its answer, naming both; the others succeed; the
    // next barrier fails on all.
    let eagerly = if me == 0 {
        // The failure comes with the event (or at once, should the
        // agreement finish in the call).
        let got = t.barrier_nb().and_then(|ev| ev.wait());
        let eagerly = ran_eagerly(&got);
        let why = match got {
            Err(Error::Failed(why)) => why,
            Err(e @ Error::CollectiveMismatch { .. }) => e.to_string(),
            other => panic!("rank 0: barrier_nb against a broadcast: got {other:?}"),
        };
        for part in [
            "barrier_nb",
            "the collective",
            "team rank 0 passed barrier",
            "team rank 1 passed broadcast",
        ] {
            assert!(why.contains(part), "rank 0: {why:?} lacks {part:?}");
        }
        eagerly
    } else {
        let got = t.broadcast(1, b"x");
        let eagerly = ran_eagerly(&got);
        if eagerly {
            assert!(got.is_ok(), "rank {me}: eager broadcast from 1: {got:?}");
        } else {
            expect_mismatch(t, got, "broadcast", "collective", 1, "barrier", "broadcast");
        }
        eagerly
    };
    if eagerly {
        expect_deferred(t, "barrier", "collective", 1, "barrier", "broadcast");
    }
    still_usable(t, 13)?;
    ok(
        client,
        "mismatch: different collectives (blocking and non-blocking)",
    );

    // The new collectives: roots, counts, block counts, operators,
    // element types and kinds, each then followed by a working call.
    let root = if me < half { 0 } else { n - 1 };
    let got = t.gather(root, &data(2));
    expect_mismatch(t, got, "gather", "root", half, &r0, &r1);
    still_usable(t, 16)?;
    let got = t.scatter(root, &data(2 * n as usize), 2);
    expect_mismatch(t, got, "scatter", "root", half, &r0, &r1);
    still_usable(t, 17)?;
    let odd = n - 1;
    let len = 2 + usize::from(me == odd);
    let got = t.allgather(&data(len));
    expect_mismatch(t, got, "allgather", "element count", odd, "2", "3");
    still_usable(t, 18)?;
    let got = t.gather(0, &data(len));
    expect_mismatch(t, got, "gather", "element count", odd, "2", "3");
    still_usable(t, 19)?;
    // An alltoall where the last rank sends one element more to each.
    let per = 1 + usize::from(me == odd);
    let got = t.alltoall(&data(per * n as usize));
    let (a, b) = (n.to_string(), (2 * n).to_string());
    expect_mismatch(t, got, "alltoall", "element count", odd, &a, &b);
    still_usable(t, 20)?;
    // The root (0) scatters n - 1 blocks where n are wanted.
    let blocks: Vec<Vec<u64>> = (0..n - u32::from(me == 0))
        .map(|r| data(r as usize))
        .collect();
    let got = t.scatterv(0, &blocks);
    let (a, b) = ((n - 1).to_string(), n.to_string());
    expect_mismatch(t, got, "scatterv", "block count", 1, &a, &b);
    still_usable(t, 21)?;
    // Every member passes one block too many to alltoallv: they agree, so
    // every member refuses it alike.
    let blocks: Vec<Vec<u64>> = (0..=n).map(|r| data(r as usize)).collect();
    match t.alltoallv(&blocks) {
        Err(Error::Config(why)) => assert!(why.contains("one per member"), "{why}"),
        other => panic!("rank {me}: alltoallv with {} blocks: got {other:?}", n + 1),
    }
    still_usable(t, 22)?;
    let op = if me == odd {
        ReduceOp::Max
    } else {
        ReduceOp::Sum
    };
    let got = t.scan(&data(LEN), op);
    expect_mismatch(t, got, "scan", "operator", odd, "Sum", "Max");
    still_usable(t, 23)?;
    let got = if me == odd {
        t.allgatherv(&[1.0f64]).map(|_| ())
    } else {
        t.allgatherv(&[1u64]).map(|_| ())
    };
    expect_mismatch(t, got, "allgatherv", "element type", odd, "u64", "f64");
    still_usable(t, 24)?;
    let got = if me == odd {
        t.exscan(&data(LEN), ReduceOp::Sum)
    } else {
        t.scan(&data(LEN), ReduceOp::Sum).map(Some)
    };
    let call = if me == odd { "exscan" } else { "scan" };
    expect_mismatch(t, got, call, "collective", odd, "scan", "exscan");
    still_usable(t, 25)?;
    ok(
        client,
        "mismatch: gather, scatter(v), allgather(v), alltoall(v), scan roots, counts, operators, \
         types and kinds",
    );

    // Non-blocking: the handle's wait gives every member the mismatch,
    // itself (not its text); other collectives in flight beside it finish.
    let beside = t.allreduce_nb(&[1u64], ReduceOp::Sum)?;
    let len = LEN + usize::from(me == odd);
    let got = t
        .allreduce_nb(&data(len), ReduceOp::Sum)
        .and_then(|h| h.wait());
    let after = t.broadcast_nb(0, b"after")?;
    expect_mismatch(t, got, "allreduce_nb", "element count", odd, "5", "6");
    assert_eq!(after.wait()?, b"after");
    assert_eq!(beside.wait()?, [u64::from(n)]);
    let got = if me == 0 {
        t.gather_nb(1, &data(1)).and_then(|h| h.wait()).map(|_| ())
    } else {
        t.gather_nb(0, &data(1)).and_then(|h| h.wait()).map(|_| ())
    };
    expect_mismatch(t, got, "gather_nb", "root", 1, "1", "0");
    still_usable(t, 26)?;
    ok(
        client,
        "mismatch: non-blocking collectives fail on every member, those beside them finish",
    );

    // The same on a team of its own (every rank, in reverse order: its
    // own id and sequence numbers): the last team rank, world rank 0,
    // passes one element more.
    let rev = t.split(0, n - me)?.expect("every rank is in colour 0");
    let len = LEN + usize::from(me == 0);
    let got = rev.allreduce(&data(len), ReduceOp::Sum);
    expect_mismatch(&rev, got, "allreduce", "element count", n - 1, "5", "6");
    still_usable(&rev, 14)?;
    // A non-blocking barrier outlives the last handle of its team.
    let ev = rev.barrier_nb()?;
    drop(rev);
    ev.wait()?;
    still_usable(t, 15)?;
    ok(client, "mismatch: on a split team");
    Ok(())
}

fn main() -> rgex::Result<()> {
    let st = Arc::new(State {
        entered: (0..BARRIER_ROUNDS).map(|_| AtomicU64::new(0)).collect(),
        acks: AtomicU64::new(0),
        in_handler: Mutex::new(Vec::new()),
        world: OnceLock::new(),
    });
    let (client, ()) = rgex::init_with(|t| register(t, &st))?;
    rgex_tests::conduit_banner(&client);
    assert_eq!(
        client.endpoint().handlers().name(INHANDLER.index()),
        "inhandler"
    );
    let _ = st.world.set(client.world().clone());
    let w = client.world();

    queries_and_errors(&client, &st)?;
    let (parity, pair) = splits(&client)?;
    barriers(&client, &st)?;

    broadcasts(w, &[0, 1, 1000, 200_000], 0)?;
    ok(
        &client,
        "broadcast from every root: 0, 1, 1000, 200000 bytes",
    );
    reductions(w)?;
    ok(
        &client,
        "reduce (several roots) and allreduce: i32 u32 i64 u64 f32 f64 x every operator",
    );
    user_ops(w)?;
    ok(
        &client,
        "user operators: max-loc pairs, matrix products in rank order",
    );

    movement(w, 0)?;
    ok(
        &client,
        "gather(v), allgather(v), scatter(v), alltoall(v), scan and exscan (built-in and user \
         operators), blocking and non-blocking, from every root, against a sequential model",
    );
    for round in 0..3 {
        in_flight(w, round)?;
    }
    ok(
        &client,
        "eight collectives of every kind in flight at once, completed in each rank's own order",
    );

    let mut teams = vec![parity];
    teams.extend(pair);
    on_split_teams(&client, &teams)?;

    if client.size() > 1 {
        mismatches(&client)?;
    } else {
        rgex_tests::skip(
            &client,
            "mismatched arguments (10 checks)",
            "they need two members",
        );
    }

    w.barrier()?;
    // Every message of the run, the aborted collectives' included, was a
    // well-formed one.
    assert_eq!(
        w.malformed_messages(),
        0,
        "rank {}: malformed collective messages",
        client.rank()
    );
    ok(&client, "all collective checks passed");
    Ok(())
}
