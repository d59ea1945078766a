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

use rgex::team::{Element, Numeric, ReduceOp, TeamHandle, NO_COLOUR};
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
    world: OnceLock<TeamHandle>,
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
fn check_team(t: &TeamHandle, want_members: &[u32], me: Rank, what: &str) {
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
    let w = client.world_team();
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
    client.request_short(to, INHANDLER, &[], Flags::empty())?;
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
fn splits(client: &Client) -> rgex::Result<(TeamHandle, Option<TeamHandle>)> {
    let w = client.world_team();
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
    assert_eq!(again.team(), parity.team());
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
    let w = client.world_team();
    let n = client.size();
    for k in 0..BARRIER_ROUNDS {
        let checker = (k % n as usize) as u32;
        client.request_short(Rank(checker), COUNT_REQ, &[k as u32], Flags::empty())?;
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
fn broadcasts(t: &TeamHandle, sizes: &[usize], round: u32) -> rgex::Result<()> {
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

fn reductions_of<T: FromI64>(t: &TeamHandle, ops: &[ReduceOp], signed: bool) -> rgex::Result<()> {
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
    }
    Ok(())
}

fn reductions(t: &TeamHandle) -> rgex::Result<()> {
    use ReduceOp::*;
    let all = [Sum, Prod, Min, Max, And, Or, Xor];
    reductions_of::<i32>(t, &all, true)?;
    reductions_of::<u32>(t, &all, false)?;
    reductions_of::<i64>(t, &all, true)?;
    reductions_of::<u64>(t, &all, false)?;
    reductions_of::<f32>(t, &[Sum, Prod, Min, Max], true)?;
    reductions_of::<f64>(t, &[Sum, Prod, Min, Max], true)?;
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

fn user_ops(t: &TeamHandle) -> rgex::Result<()> {
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

/// The collectives on several teams, interleaved, with non-blocking
/// barriers on every team in flight at once.
fn on_split_teams(client: &Client, teams: &[TeamHandle]) -> rgex::Result<()> {
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
        // A round number no other call uses (the world's broadcasts in
        // main use 0).
        broadcasts(t, &[200_000], 1000)?;
    }
    client.world_team().barrier()?;
    ok(client, "collectives on the split teams, interleaved");
    Ok(())
}

/// What every member must get from a collective whose members passed
/// arguments that do not match: the mismatch, naming this call, the same
/// two team ranks and both values on every rank.
#[allow(clippy::too_many_arguments)]
fn expect_mismatch<T: Debug>(
    t: &TeamHandle,
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

/// After a failed collective the team still works: a barrier, then an
/// allreduce with a value every member can check.
fn still_usable(t: &TeamHandle, round: u64) -> rgex::Result<()> {
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
    let t = client.world_team();
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
    let root = if me < half { 0 } else { n - 1 };
    let got = t.broadcast(root, b"from the root I believe in");
    let (r0, r1) = (0.to_string(), (n - 1).to_string());
    expect_mismatch(t, got, "broadcast", "root", half, &r0, &r1);
    still_usable(t, 5)?;
    let got = t.broadcast_elems(root, &[1u32, 2, 3]);
    expect_mismatch(t, got, "broadcast", "root", half, &r0, &r1);
    still_usable(t, 6)?;
    ok(client, "mismatch: broadcast roots");

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
    if me == 0 {
        // The failure comes with the event (or at once, should the
        // agreement finish in the call).
        let why = match t.barrier_nb().and_then(|ev| ev.wait()) {
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
    } else {
        let got = t.broadcast(1, b"x");
        expect_mismatch(t, got, "broadcast", "collective", 1, "barrier", "broadcast");
    }
    still_usable(t, 13)?;
    ok(
        client,
        "mismatch: different collectives (blocking and non-blocking)",
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
    assert_eq!(client.handlers().name(INHANDLER.index()), "inhandler");
    let _ = st.world.set(client.world_team().clone());
    let w = client.world_team();

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

    let mut teams = vec![parity];
    teams.extend(pair);
    on_split_teams(&client, &teams)?;

    if client.size() > 1 {
        mismatches(&client)?;
    } else {
        rgex_tests::skip(
            &client,
            "mismatched arguments (8 checks)",
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
