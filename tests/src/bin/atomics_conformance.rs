//! Atomic-domain conformance, run as every rank of a job (or alone); the
//! same program checks whichever implementation the domains take and,
//! under `RGEX_ATOMICS=reference`, the active-message reference.
//!
//! Covers: every (type, op) pair against a sequential model (integer
//! wrap-around, NaN and signed zero in float MIN/MAX, CAS success and
//! failure) in blocking, NB and NBI forms, to the next rank and to itself;
//! central-counter races (FADD, FINC, INC, CAS loop) from every rank and
//! THREADS threads per rank on one word of rank 0, with exact totals and
//! unique fetched values; a producer/consumer ring per rank pair with
//! RELEASE on the producer and ACQUIRE on the consumer; bad input.
//!
//! Usage: `atomics_conformance [THREADS] [ITERS]`

use rgex::atomics::{op_names, Error};
use rgex::{
    AtomicDomain, AtomicFlags, AtomicImplementation, AtomicOp, AtomicType, AtomicValue, Client,
    Flags, GlobalAddr, OpSet, Rank,
};
use rgex_tests::{ok, skip, wait_until};
use std::sync::Arc;

type Res<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// Every rank owns a window of every segment: [me * win, (me + 1) * win),
/// all below the last 16 KiB (the ring and the sub-team word).
fn window(client: &Client) -> u64 {
    ((client.endpoint().segment().len() as u64 - 16384) / u64::from(client.size())) & !4095
}

/// The values an op is tried with, and the sequential model of each op.
trait Model: AtomicValue {
    fn vals() -> Vec<Self>;
    /// (new stored value, fetched value) of `op(a, b)` on `old`.
    fn model(op: AtomicOp, old: Self, a: Self, b: Self) -> (Self, Self);
}

macro_rules! int_model {
    ($t:ty) => {
        impl Model for $t {
            fn vals() -> Vec<Self> {
                vec![
                    0,
                    1,
                    2,
                    7,
                    <$t>::MAX,
                    <$t>::MIN,
                    <$t>::MAX - 1,
                    (<$t>::MAX / 3),
                    (0 as $t).wrapping_sub(5),
                ]
            }
            fn model(op: AtomicOp, o: Self, a: Self, b: Self) -> (Self, Self) {
                use AtomicOp::*;
                let new = match op {
                    Get => o,
                    Set | Swap => a,
                    Cas | Fcas => {
                        if o == a {
                            b
                        } else {
                            o
                        }
                    }
                    Add | Fadd => o.wrapping_add(a),
                    Sub | Fsub => o.wrapping_sub(a),
                    Mult | Fmult => o.wrapping_mul(a),
                    Min | Fmin => o.min(a),
                    Max | Fmax => o.max(a),
                    Inc | Finc => o.wrapping_add(1),
                    Dec | Fdec => o.wrapping_sub(1),
                    And | Fand => o & a,
                    Or | For => o | a,
                    Xor | Fxor => o ^ a,
                };
                (new, if op.fetches() { o } else { 0 })
            }
        }
    };
}

int_model!(i32);
int_model!(u32);
int_model!(i64);
int_model!(u64);

macro_rules! float_model {
    ($t:ty) => {
        impl Model for $t {
            fn vals() -> Vec<Self> {
                vec![
                    0.0,
                    -0.0,
                    1.5,
                    -2.25,
                    <$t>::NAN,
                    <$t>::INFINITY,
                    <$t>::NEG_INFINITY,
                    <$t>::MAX,
                    1e-30,
                ]
            }
            fn model(op: AtomicOp, o: Self, a: Self, b: Self) -> (Self, Self) {
                use AtomicOp::*;
                // The documented rule: IEEE 754-2019 minimumNumber /
                // maximumNumber (NaN operand ignored, -0 < +0).
                let pick = |want_min: bool| -> $t {
                    if a.is_nan() {
                        o
                    } else if o.is_nan() {
                        a
                    } else if a == o {
                        // Equal: only zeros of different sign differ.
                        if want_min == a.is_sign_negative() {
                            a
                        } else {
                            o
                        }
                    } else if (a < o) == want_min {
                        a
                    } else {
                        o
                    }
                };
                let new = match op {
                    Get => o,
                    Set | Swap => a,
                    Cas | Fcas => {
                        if o.to_bits() == a.to_bits() {
                            b
                        } else {
                            o
                        }
                    }
                    Add | Fadd => o + a,
                    Sub | Fsub => o - a,
                    Mult | Fmult => o * a,
                    Min | Fmin => pick(true),
                    Max | Fmax => pick(false),
                    Inc | Finc => o + 1.0,
                    Dec | Fdec => o - 1.0,
                    And | Fand | Or | For | Xor | Fxor => unreachable!("no bit ops on floats"),
                };
                (new, if op.fetches() { o } else { 0.0 })
            }
        }
    };
}

float_model!(f32);
float_model!(f64);

fn all_ops(ty: AtomicType) -> OpSet {
    let mut s = OpSet::EMPTY;
    for op in AtomicOp::ALL {
        if !(ty.is_float() && op.is_bitwise()) {
            s = s.with(op);
        }
    }
    s
}

fn same<T: AtomicValue>(x: T, y: T) -> bool {
    x.to_bits64() == y.to_bits64()
}

/// Every op of `T` against the model, to the next rank and to this rank.
fn model_type<T: Model>(client: &Client, win: u64, slot: u64) -> Res<AtomicImplementation> {
    let (me, n) = (client.rank().0, client.size());
    let ad = AtomicDomain::<T>::new(client.endpoint(), client.world(), all_ops(T::TYPE))?;
    let f = AtomicFlags::empty();
    let vals = T::vals();
    let (mut cas_hit, mut cas_miss, mut count) = (0u64, 0u64, 0u64);
    for target in [Rank((me + 1) % n), Rank(me)] {
        let at = GlobalAddr::new(target, u64::from(me) * win + 256 + slot * 64);
        for op in ad.ops().iter() {
            for (ix, &x) in vals.iter().enumerate() {
                for (ia, &a) in vals.iter().enumerate() {
                    // CAS: the new value varies with the pair; one b suffices elsewhere.
                    let b = vals[(ix + ia + 1) % vals.len()];
                    ad.set(at, x, f)?;
                    let (want_new, want_fetch) = T::model(op, x, a, b);
                    let form = (ix + ia) % 3;
                    let got = match form {
                        0 => Some(ad.op(at, op, a, b, f)?),
                        1 => Some(ad.op_nb(at, op, a, b, f)?.wait()?),
                        2 if ia % 2 == 0 => {
                            ad.op_nbi(at, op, a, b, f)?;
                            ad.nbi_wait()?;
                            None
                        }
                        _ => {
                            // The endpoint's own Rmw category syncs it too.
                            ad.op_nbi(at, op, a, b, f)?;
                            client.endpoint().nbi_wait(rgex::NbiCategory::Rmw)?;
                            None
                        }
                    };
                    if let Some(got) = got {
                        assert!(
                            same(got, want_fetch),
                            "{:?} {op:?}({a:?}, {b:?}) on {x:?} at {target}: fetched {got:?}, model {want_fetch:?}",
                            T::TYPE
                        );
                    }
                    let now = ad.get(at, f)?;
                    assert!(
                        same(now, want_new),
                        "{:?} {op:?}({a:?}, {b:?}) on {x:?} at {target} (form {form}): left {now:?}, model {want_new:?}",
                        T::TYPE
                    );
                    if matches!(op, AtomicOp::Cas | AtomicOp::Fcas) {
                        if same(x, a) {
                            cas_hit += 1;
                        } else {
                            cas_miss += 1;
                        }
                    }
                    count += 1;
                }
            }
        }
    }
    assert!(
        cas_hit > 0 && cas_miss > 0,
        "CAS success and failure both tried"
    );
    assert!(count > 0);
    Ok(ad.implementation())
}

fn model_all(client: &Client, win: u64) -> Res {
    let imps = [
        model_type::<i32>(client, win, 0)?,
        model_type::<u32>(client, win, 1)?,
        model_type::<i64>(client, win, 2)?,
        model_type::<u64>(client, win, 3)?,
        model_type::<f32>(client, win, 4)?,
        model_type::<f64>(client, win, 5)?,
    ];
    client.barrier()?;
    ok(
        client,
        &format!("atomic implementation per type (i32 u32 i64 u64 f32 f64): {imps:?}"),
    );
    let required = match std::env::var("RGEX_ATOMICS").as_deref() {
        Ok("reference") => Some(AtomicImplementation::Reference),
        Ok("shared") => Some(AtomicImplementation::SharedMemory),
        Ok("offload") => Some(AtomicImplementation::Offload),
        _ => None,
    };
    if let Some(want) = required {
        assert!(
            imps.iter().all(|&i| i == want),
            "RGEX_ATOMICS requires {want:?}, the domains took {imps:?}"
        );
    }
    ok(client, "every (type, op) against the sequential model: wrap-around, NaN and signed zero in MIN/MAX, CAS success and failure; blocking, NB and NBI; to the next rank and to self");
    Ok(())
}

/// Members that require different implementations, or one that requires
/// and others that do not: every member ends the same way (all take it,
/// or all fail), never some with a domain and some without.
fn mixed_requirements(client: &Client) -> Res {
    let me = client.rank().0;
    if client.size() < 2 {
        skip(
            client,
            "mixed requirements",
            "one rank: no other member to differ",
        );
        return Ok(());
    }
    let ops = OpSet::of(&[AtomicOp::Fadd]);
    let build = |imp: Option<AtomicImplementation>| {
        let b = AtomicDomain::<u64>::builder(ops);
        match imp {
            Some(i) => b.implementation(i),
            None => b.force_reference(false),
        }
        .build(client.endpoint(), client.world())
    };
    // Rank 0 requires the reference (every member can provide it), the
    // others nothing: all take the reference.
    let ad = build((me == 0).then_some(AtomicImplementation::Reference))?;
    assert_eq!(ad.implementation(), AtomicImplementation::Reference);
    // Rank 0 requires the reference, rank 1 shared memory: all fail.
    let want = match me {
        0 => Some(AtomicImplementation::Reference),
        1 => Some(AtomicImplementation::SharedMemory),
        _ => None,
    };
    match build(want) {
        Err(e @ Error::DomainUnavailable { .. }) => {
            let s = e.to_string();
            assert!(s.contains("require SharedMemory and Reference"), "{s}");
        }
        Err(e) => panic!("{}: mixed requirements: {e}", client.rank()),
        Ok(ad) => panic!(
            "{}: mixed requirements: took {:?} while another member required otherwise",
            client.rank(),
            ad.implementation()
        ),
    }
    client.barrier()?;
    ok(client, "mixed requirements: one member requiring and the others not all take it; members requiring different implementations all fail, naming both");
    Ok(())
}

/// Central counters on rank 0: FADD at 0, FINC at 8, INC at 16, CAS loop at 24.
fn counters(client: &Arc<Client>, threads: u32, iters: u64) -> Res {
    let (me, n) = (client.rank().0, client.size());
    let ops = OpSet::of(&[
        AtomicOp::Fadd,
        AtomicOp::Finc,
        AtomicOp::Inc,
        AtomicOp::Fcas,
        AtomicOp::Get,
        AtomicOp::Set,
    ]);
    let ad = AtomicDomain::<u64>::new(client.endpoint(), client.world(), ops)?;
    let c = |i: u64| GlobalAddr::new(Rank(0), i * 8);
    if me == 0 {
        for i in 0..4 {
            ad.set(c(i), 0, AtomicFlags::empty())?;
        }
    }
    client.barrier()?;
    let f = AtomicFlags::empty();
    let fetched: Vec<[Vec<u64>; 3]> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let ad = ad.clone();
                s.spawn(move || -> [Vec<u64>; 3] {
                    let mut out: [Vec<u64>; 3] = Default::default();
                    for i in 0..iters {
                        // Alternate blocking and NB forms.
                        let v = if (i + u64::from(t)) % 2 == 0 {
                            ad.fetch_add(c(0), 1, f).expect("fadd")
                        } else {
                            ad.op_nb(c(0), AtomicOp::Fadd, 1, 0, f)
                                .expect("fadd nb")
                                .wait()
                                .expect("fadd nb wait")
                        };
                        out[0].push(v);
                        out[1].push(ad.fetch_inc(c(1), f).expect("finc"));
                        ad.inc(c(2), f).expect("inc");
                        let mut cur = ad.get(c(3), f).expect("get");
                        loop {
                            let old = ad.compare_swap(c(3), cur, cur + 1, f).expect("fcas");
                            if old == cur {
                                out[2].push(old);
                                break;
                            }
                            cur = old;
                        }
                    }
                    out
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("counter thread"))
            .collect()
    });
    client.barrier()?;
    let total = u64::from(n) * u64::from(threads) * iters;
    for i in 0..4 {
        let v = ad.get(c(i), AtomicFlags::ACQUIRE)?;
        assert_eq!(
            v,
            total,
            "counter {i} on rank 0 seen from {}",
            client.rank()
        );
    }
    // Unique fetched values across the job: each rank's bitmap of what it
    // fetched, or-reduced with a count of overlaps; no overlap and every
    // bit set means each value 0..total was fetched exactly once.
    let words = total.div_ceil(64) as usize;
    for k in 0..3 {
        let mut bits = vec![0u64; words + 1];
        for v in fetched.iter().flat_map(|f| f[k].iter()) {
            assert!(*v < total, "fetched value {v} out of range");
            let (w, b) = (1 + (*v / 64) as usize, *v % 64);
            if bits[w] & (1 << b) != 0 {
                bits[0] += 1;
            }
            bits[w] |= 1 << b;
        }
        let all = client
            .world()
            .allreduce_with(&bits, |acc: &mut [u64], x: &[u64]| {
                let (dups, words) = acc.split_at_mut(1);
                dups[0] += x[0];
                for (a, b) in words.iter_mut().zip(&x[1..]) {
                    dups[0] += u64::from((*a & *b).count_ones());
                    *a |= *b;
                }
            })?;
        let set: u64 = all[1..].iter().map(|w| u64::from(w.count_ones())).sum();
        assert_eq!(all[0], 0, "counter {k}: a fetched value was seen twice");
        assert_eq!(set, total, "counter {k}: fetched values missing");
    }
    client.barrier()?;
    ok(client, &format!("central counters on rank 0 ({:?}): {n} ranks x {threads} threads x {iters} FADD/FINC/INC/CAS-loop: exact totals {total}, unique fetched values", ad.implementation()));
    Ok(())
}

/// The ring lives in the last 8 KiB of every segment, the sub-team's word
/// just below (outside every rank's model window, which ends earlier).
fn ring_base(client: &Client) -> u64 {
    client.endpoint().segment().len() as u64 - 8192
}

fn sub_word(client: &Client) -> u64 {
    ring_base(client) - 64
}
const SLOTS: u64 = 16;
const SLOT_BYTES: usize = 64;

fn slot_pattern(i: u64) -> [u8; SLOT_BYTES] {
    let mut b = [0u8; SLOT_BYTES];
    for (j, x) in b.iter_mut().enumerate() {
        *x = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (j % 8 * 8)) as u8 ^ j as u8;
    }
    b
}

/// Each rank produces into the next rank's ring and consumes its own:
/// data by plain put, head/tail by the domain with RELEASE/ACQUIRE.
fn ring(client: &Arc<Client>, items: u64) -> Res {
    let (me, n) = (client.rank().0, client.size());
    let ops = OpSet::of(&[AtomicOp::Set, AtomicOp::Get]);
    let ad = AtomicDomain::<u64>::new(client.endpoint(), client.world(), ops)?;
    let ring = ring_base(client);
    let head = move |r: u32| GlobalAddr::new(Rank(r), ring);
    let tail = move |r: u32| GlobalAddr::new(Rank(r), ring + 64);
    let slot = move |r: u32, i: u64| {
        GlobalAddr::new(Rank(r), ring + 128 + (i % SLOTS) * SLOT_BYTES as u64)
    };
    ad.set(head(me), 0, AtomicFlags::TARGET_SELF)?;
    ad.set(tail(me), 0, AtomicFlags::TARGET_SELF)?;
    client.barrier()?;
    let next = (me + 1) % n;
    std::thread::scope(|s| -> Res {
        let (c, adp) = (client.clone(), ad.clone());
        let producer = s.spawn(move || -> rgex::atomics::Result<()> {
            for i in 0..items {
                wait_until(&c, "ring space", || {
                    adp.get(tail(next), AtomicFlags::ACQUIRE).expect("get tail") + SLOTS > i
                });
                c.endpoint()
                    .put(slot(next, i), &slot_pattern(i), Flags::empty())?;
                adp.set(head(next), i + 1, AtomicFlags::RELEASE)?;
            }
            Ok(())
        });
        let mut stale = 0u64;
        for i in 0..items {
            wait_until(client, "ring item", || {
                ad.get(head(me), AtomicFlags::ACQUIRE | AtomicFlags::TARGET_SELF)
                    .expect("get head")
                    > i
            });
            let mut b = [0u8; SLOT_BYTES];
            client
                .endpoint()
                .segment()
                .read(slot(me, i).offset, &mut b)?;
            if b != slot_pattern(i) {
                stale += 1;
            }
            ad.set(
                tail(me),
                i + 1,
                AtomicFlags::RELEASE | AtomicFlags::TARGET_SELF,
            )?;
        }
        producer.join().expect("producer thread")?;
        assert_eq!(stale, 0, "{}: {stale} stale ring reads", client.rank());
        Ok(())
    })?;
    client.barrier()?;
    ok(client, &format!("producer/consumer ring ({:?}): {items} items per rank pair, RELEASE on the producer, ACQUIRE on the consumer, no stale read", ad.implementation()));
    Ok(())
}

fn bad_input(client: &Client) -> Res {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let seg = client.endpoint().conduit().segment_len(peer);
    let f = AtomicFlags::empty();
    let ops = OpSet::of(&[AtomicOp::Fadd, AtomicOp::Get]);
    let ad = AtomicDomain::<u64>::new(client.endpoint(), client.world(), ops)?;

    let e = ad.swap(GlobalAddr::new(peer, 64), 1, f).unwrap_err();
    let t = e.to_string();
    assert!(
        matches!(
            e,
            Error::OpNotInSet {
                op: AtomicOp::Swap,
                ..
            }
        ),
        "{t}"
    );
    assert!(
        t.contains(&format!("rank {}", peer.0)) && t.contains("0x40") && t.contains("Fadd"),
        "{t}"
    );

    let e = ad.fetch_add(GlobalAddr::new(peer, 68), 1, f).unwrap_err();
    let t = e.to_string();
    assert!(matches!(e, Error::Misaligned { align: 8, .. }), "{t}");
    assert!(
        t.contains(&format!("rank {}", peer.0)) && t.contains("0x44") && t.contains("8-byte"),
        "{t}"
    );

    let e = ad
        .fetch_add(GlobalAddr::new(peer, seg - 4), 1, f)
        .unwrap_err();
    let t = e.to_string();
    assert!(matches!(e, Error::OutOfSegment { .. }), "{t}");
    assert!(
        t.contains(&format!("rank {}", peer.0))
            && t.contains(&format!("{:#x}", seg - 4))
            && t.contains(&format!("{seg:#x}")),
        "{t}"
    );
    let e = ad.get(GlobalAddr::new(peer, u64::MAX - 3), f).unwrap_err();
    assert!(matches!(e, Error::OutOfSegment { .. }), "{e}");

    let e = ad.get(GlobalAddr::new(Rank(n), 0), f).unwrap_err();
    assert!(
        matches!(e, Error::NotInTeam { .. })
            && e.to_string().contains(&format!("team of {n} ranks")),
        "{e}"
    );

    if n > 1 {
        let e = ad
            .get(GlobalAddr::new(peer, 0), AtomicFlags::TARGET_SELF)
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::FlagBroken {
                    flag: "TARGET_SELF",
                    ..
                }
            ),
            "{e}"
        );
    }
    let e = ad
        .op_nbi(GlobalAddr::new(peer, 3), AtomicOp::Fadd, 1, 0, f)
        .unwrap_err();
    let t = e.to_string();
    assert!(
        matches!(e, Error::Misaligned { .. })
            && t.contains(&format!("rank {}", peer.0))
            && t.contains("0x3")
            && t.contains("8-byte"),
        "{t}"
    );

    // Float domains with bit ops: refused at creation on every rank, and
    // the collective still completes (nobody hangs).
    let bad = OpSet::of(&[AtomicOp::Fadd, AtomicOp::Xor, AtomicOp::For]);
    let e = AtomicDomain::<f64>::new(client.endpoint(), client.world(), bad).unwrap_err();
    let t = e.to_string();
    assert!(
        matches!(
            e,
            Error::BitOpOnFloat {
                ty: AtomicType::F64,
                ..
            }
        ),
        "{t}"
    );
    assert!(
        t.contains("For") && t.contains("Xor") && t.contains("F64"),
        "{t}"
    );
    let e = AtomicDomain::<f32>::new(client.endpoint(), client.world(), OpSet::EMPTY).unwrap_err();
    assert!(
        matches!(e, Error::EmptyOpSet { .. })
            && e.to_string().contains("F32")
            && e.to_string().contains("empty"),
        "{e}"
    );

    // Members asking for different op sets: every member is told.
    let mine = if me == 0 {
        OpSet::of(&[AtomicOp::Fadd])
    } else {
        OpSet::of(&[AtomicOp::Get])
    };
    let r = AtomicDomain::<u32>::new(client.endpoint(), client.world(), mine);
    if n > 1 {
        let e = r.unwrap_err();
        let t = e.to_string();
        let own = if me == 0 { "Fadd" } else { "Get" };
        assert!(
            matches!(e, Error::DomainMismatch { .. })
                && t.contains(&format!("rank {me}"))
                && t.contains("U32")
                && t.contains(own),
            "{t}"
        );
    } else {
        r?;
    }
    // The good domain still works after all that.
    let at = GlobalAddr::new(peer, u64::from(me) * 64);
    ad.fetch_add(at, 0, f)?;
    client.barrier()?;
    ok(client, &format!("bad input: op not in the set ({}), misaligned, outside the segment, overflowing offset, rank outside the team, broken TARGET_SELF, bit ops on floats, empty set, mismatched sets: clear errors naming rank, offset and limit", op_names(ops)));
    Ok(())
}

/// A domain over a sub-team: ops reach members only.
fn sub_team(client: &Client) -> Res {
    let (me, n) = (client.rank().0, client.size());
    let team = client.world();
    let Some(half) = team.split(me % 2, me)? else {
        return Ok(());
    };
    let ad = AtomicDomain::<i64>::new(
        client.endpoint(),
        &half,
        OpSet::of(&[AtomicOp::Fadd, AtomicOp::Get]),
    )?;
    let root = half.world_rank(0)?;
    let at = GlobalAddr::new(root, sub_word(client));
    half.barrier()?;
    ad.fetch_add(at, -1, AtomicFlags::empty())?;
    half.barrier()?;
    let v = ad.get(at, AtomicFlags::empty())?;
    // The root's word starts at zero (written in main) and was
    // decremented once per member.
    assert_eq!(v, -i64::from(half.size()));
    if n > 1 {
        // A neighbour has the other parity, so it is in the other half
        // (with an odd rank count, (me + 1) % n would wrap to a teammate).
        let other = Rank(if me + 1 < n { me + 1 } else { me - 1 });
        let e = ad
            .get(GlobalAddr::new(other, 0), AtomicFlags::empty())
            .unwrap_err();
        let t = e.to_string();
        assert!(
            matches!(e, Error::NotInTeam { .. })
                && t.contains(&format!("{other} is not a member"))
                && t.contains(&format!("team of {} ranks", half.size())),
            "{t}"
        );
    }
    client.barrier()?;
    ok(
        client,
        "domain over a split team (odd/even): FADD from every member, non-members refused",
    );
    Ok(())
}

/// Errors are printed as they explain themselves (Display), as a user
/// sees them.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("atomics_conformance: error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Res {
    let mut a = std::env::args().skip(1);
    let threads: u32 = a.next().and_then(|s| s.parse().ok()).unwrap_or(4);
    let iters: u64 = a.next().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let client = Arc::new(rgex::init()?);
    rgex_tests::conduit_banner(&client);
    let win = window(&client);
    // Model words sit in [me * win + 256, + 640): below the last window's end.
    assert!(win >= 4096 && u64::from(client.size()) * win <= sub_word(&client));
    client
        .endpoint()
        .segment()
        .write(sub_word(&client), &[0; 8])?;
    model_all(&client, win)?;
    counters(&client, threads, iters)?;
    ring(&client, 5000)?;
    bad_input(&client)?;
    mixed_requirements(&client)?;
    sub_team(&client)?;
    client.barrier()?;
    ok(&client, "all atomics checks passed");
    Ok(())
}
