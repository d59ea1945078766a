//! Several endpoints per process on the conduit under test: two more
//! endpoints beside the primordial one, each driven by its own thread at
//! once: AMs (each endpoint's own handler table, reaching the same
//! endpoint of the peer), puts and gets with checksums, and atomics, each
//! completing on the endpoint that issued it; AMs between endpoints of
//! different indices (every pair, Medium and Long, each answered back to
//! the endpoint that asked); then an index out of range and an endpoint
//! used after it was destroyed, each refused naming the rank and the
//! index.

use rgex::{
    AtomicDomain, AtomicFlags, AtomicOp, Client, Endpoint, EndpointAddr, Error, Flags, GlobalAddr,
    HandlerId, OpSet, Rank,
};
use rgex_tests::{conduit_banner, ok, skip};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Endpoints in all: the primordial one and two more.
const ENDPOINTS: u32 = 3;
/// AMs each thread sends to each peer.
const AMS: u32 = 200;
/// Bytes each thread puts to its right neighbour per round, and rounds.
const PUT: usize = 512;
const ROUNDS: usize = 20;

/// What one endpoint's handler saw.
#[derive(Default)]
struct Seen {
    /// AMs delivered, and the sum of their payloads' checksums.
    count: AtomicU64,
    sum: AtomicU64,
    /// AMs that came on another endpoint than they were sent from.
    strays: AtomicU64,
    /// Ranks whose thread on this endpoint finished its work.
    done: AtomicU64,
}

fn checksum(b: &[u8]) -> u64 {
    b.iter().enumerate().fold(0u64, |a, (i, &x)| {
        a.wrapping_mul(31).wrapping_add(u64::from(x) ^ i as u64)
    })
}

fn payload(from: u32, ep: u32, i: u32) -> Vec<u8> {
    (0..64u32)
        .map(|j| (from * 7 + ep * 13 + i + j) as u8)
        .collect()
}

/// The endpoint's handlers: the checksummed AM, and "this rank's thread
/// on this endpoint is done" (after which it still polls, until every
/// rank's is: a peer's operations need this endpoint's progress).
fn register(ep: &Endpoint, seen: &Arc<Seen>) -> rgex::Result<(HandlerId, HandlerId)> {
    let s = seen.clone();
    let me = ep.index();
    let sum = ep.handlers().register("ep.sum", move |tok, msg| {
        if tok.endpoint().index() != me || msg.arg(0) != me {
            s.strays.fetch_add(1, Ordering::Relaxed);
        }
        s.sum.fetch_add(checksum(msg.payload()), Ordering::Relaxed);
        s.count.fetch_add(1, Ordering::Release);
    })?;
    let s = seen.clone();
    let done = ep.handlers().register("ep.done", move |_tok, _msg| {
        s.done.fetch_add(1, Ordering::Release);
    })?;
    Ok((sum, done))
}

fn main() -> rgex::Result<()> {
    let client = rgex::init()?;
    conduit_banner(&client);
    let (me, n) = (client.rank().0, client.size());
    let first = match client.create_endpoint() {
        Ok(ep) => ep,
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("one endpoint per process"), "{text}");
            assert!(matches!(
                client.endpoint_at(1),
                Err(Error::EndpointOutOfRange {
                    index: 1,
                    count: 1,
                    ..
                })
            ));
            skip(
                &client,
                "endpoints driven by threads at once",
                &format!("the conduit refuses more endpoints: {text}"),
            );
            skip(
                &client,
                "AMs between endpoints of different indices",
                "one endpoint",
            );
            skip(&client, "endpoint errors", "no endpoint to destroy");
            return client.finalize();
        }
    };
    let second = client.create_endpoint()?;
    assert_eq!(
        (first.index(), second.index(), client.endpoint_count()),
        (1, 2, ENDPOINTS)
    );
    let eps: Vec<Arc<Endpoint>> = (0..ENDPOINTS)
        .map(|i| client.endpoint_at(i))
        .collect::<rgex::Result<_>>()?;
    let seen: Vec<Arc<Seen>> = (0..ENDPOINTS).map(|_| Arc::default()).collect();
    let ids: Vec<(HandlerId, HandlerId)> = eps
        .iter()
        .zip(&seen)
        .map(|(ep, s)| register(ep, s))
        .collect::<rgex::Result<_>>()?;
    let domains: Vec<AtomicDomain<u64>> = eps
        .iter()
        .map(|ep| {
            AtomicDomain::new(
                ep,
                client.world(),
                OpSet::of(&[AtomicOp::Fadd, AtomicOp::Get]),
            )
        })
        .collect::<rgex::Result<_>>()?;
    client.barrier()?;
    nbi_per_endpoint(&client, &eps)?;

    let right = Rank((me + 1) % n);
    // Endpoint k's puts go to slice k of the right neighbour's segment;
    // its atomics to word k of rank 0's last page.
    let seg = client.endpoint().segment().len() as u64;
    let word = |k: u32| GlobalAddr::new(Rank(0), seg - 4096 + 8 * u64::from(k));
    std::thread::scope(|s| -> rgex::Result<()> {
        let threads: Vec<_> = (0..ENDPOINTS)
            .map(|k| {
                let (ep, (id, done), ad) =
                    (&eps[k as usize], ids[k as usize], &domains[k as usize]);
                let seen = &seen[k as usize];
                s.spawn(move || -> rgex::Result<()> {
                    for i in 0..AMS {
                        for p in 0..n {
                            ep.request_medium(
                                Rank(p),
                                id,
                                &[k],
                                &payload(me, k, i),
                                Flags::empty(),
                            )?;
                        }
                    }
                    for r in 0..ROUNDS {
                        let data: Vec<u8> = (0..PUT)
                            .map(|j| (me as usize * 3 + k as usize * 5 + r + j) as u8)
                            .collect();
                        let at = GlobalAddr::new(
                            right,
                            (u64::from(k) * ROUNDS as u64 + r as u64) * PUT as u64,
                        );
                        ep.put_nb(at, &data, Flags::empty())?.wait()?;
                        let back = ep.get_nb(vec![0u8; PUT], at, Flags::empty())?.wait()?;
                        assert_eq!(
                            checksum(&back),
                            checksum(&data),
                            "endpoint {k}: the get differs from the put"
                        );
                    }
                    for _ in 0..50 {
                        ad.fetch_add(word(k), u64::from(k) + 1, AtomicFlags::empty())?;
                    }
                    for p in 0..n {
                        ep.request_short(Rank(p), done, &[], Flags::empty())?;
                    }
                    // Bounded: every peer's thread gets here.
                    for _ in 0..50_000_000u64 {
                        if seen.done.load(Ordering::Acquire) == u64::from(n) {
                            return Ok(());
                        }
                        ep.poll()?;
                    }
                    panic!("rank {me} endpoint {k}: the peers' threads never finished")
                })
            })
            .collect();
        for t in threads {
            t.join().expect("an endpoint's thread panicked")?;
        }
        Ok(())
    })?;
    client.barrier()?;
    // Each endpoint's handlers ran when its own endpoint polled: poll them
    // all until every AM has arrived (bounded).
    let expected = u64::from(AMS * n);
    for _ in 0..1_000_000 {
        if seen
            .iter()
            .all(|s| s.count.load(Ordering::Acquire) >= expected)
        {
            break;
        }
        for ep in &eps {
            ep.poll()?;
        }
    }
    client.barrier()?;
    for (k, s) in seen.iter().enumerate() {
        let k = k as u32;
        let want: u64 = (0..n)
            .flat_map(|from| (0..AMS).map(move |i| checksum(&payload(from, k, i))))
            .fold(0, u64::wrapping_add);
        assert_eq!(
            s.count.load(Ordering::Acquire),
            expected,
            "rank {me} endpoint {k}: AMs delivered"
        );
        assert_eq!(
            s.sum.load(Ordering::Relaxed),
            want,
            "rank {me} endpoint {k}: AM checksums"
        );
        assert_eq!(
            s.strays.load(Ordering::Relaxed),
            0,
            "rank {me} endpoint {k}: AMs from another endpoint"
        );
        // Read through the primordial endpoint: endpoint k's ops are
        // done (blocking, before the threads ended), and only it is
        // still polled everywhere (a domain on endpoint k may need rank
        // 0's endpoint k to answer, which nobody polls any more).
        let total = client.endpoint().get_val(word(k), Flags::empty())?;
        assert_eq!(
            total,
            50 * u64::from(n) * (u64::from(k) + 1),
            "endpoint {k}: the atomics' sum"
        );
    }
    // The puts of every endpoint of the left neighbour, in this segment.
    let left = (me + n - 1) % n;
    let mine = client.endpoint().segment();
    for k in 0..ENDPOINTS as usize {
        for r in 0..ROUNDS {
            let mut got = vec![0u8; PUT];
            mine.read(((k * ROUNDS + r) * PUT) as u64, &mut got)?;
            let want: Vec<u8> = (0..PUT)
                .map(|j| (left as usize * 3 + k * 5 + r + j) as u8)
                .collect();
            assert!(
                got == want,
                "rank {me}: endpoint {k}'s put of round {r} from rank {left}"
            );
        }
    }
    ok(&client, &format!("{ENDPOINTS} endpoints driven by one thread each at once: {AMS} Medium AMs per peer each delivered to the same endpoint of the peer with checksums, puts and gets with checksums, fetch-adds with exact sums"));

    crossing(&client, &eps)?;
    errors(&client, &second, ids[2].0)?;
    client.finalize()
}

/// What one endpoint saw of AMs between different indices.
#[derive(Default)]
struct Crossed {
    /// Requests run here, and their payload checksums.
    asked: AtomicU64,
    asked_sum: AtomicU64,
    /// Answers run here, and their payload checksums.
    answered: AtomicU64,
    answered_sum: AtomicU64,
    /// Messages whose token or arguments named the wrong endpoint, and
    /// negotiated-payload replies that were not refused.
    wrong: AtomicU64,
}

/// Payload of the AM from endpoint `j` of `from` to endpoint `k`.
fn crossing_payload(from: u32, j: u32, k: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (from * 11 + j * 5 + k * 3 + i as u32) as u8)
        .collect()
}

/// AMs between endpoints of different indices: from every endpoint `j`
/// to endpoint `k != j` of every rank, a Medium request and a Long one;
/// each runs in endpoint `k`'s table with a token naming endpoint `j`,
/// and its reply (the payload echoed) runs in endpoint `j`'s table.
fn crossing(client: &Client, eps: &[Arc<Endpoint>]) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let seen: Vec<Arc<Crossed>> = eps.iter().map(|_| Arc::default()).collect();
    let mut asks = Vec::new();
    let mut answers = Vec::new();
    for (ep, s) in eps.iter().zip(&seen) {
        let k = ep.index();
        let (s1, s2) = (s.clone(), s.clone());
        // Registered in the same order on every table: the same index on
        // each, so a request names its answer by its own index.
        let answer = ep.handlers().register("cross.answer", move |tok, msg| {
            if tok.endpoint().index() != k || tok.src_endpoint() != msg.arg(1) || msg.arg(0) != k {
                s1.wrong.fetch_add(1, Ordering::Relaxed);
            }
            s1.answered_sum
                .fetch_add(checksum(msg.payload()), Ordering::Relaxed);
            s1.answered.fetch_add(1, Ordering::Release);
        })?;
        let ask = ep.handlers().register("cross.ask", move |tok, msg| {
            let (j, to) = (msg.arg(0), msg.arg(1));
            if tok.endpoint().index() != k || to != k || tok.src_endpoint() != j || j == k {
                s2.wrong.fetch_add(1, Ordering::Relaxed);
            }
            if tok
                .prepare_reply_medium(None, 0, 8, 2, Flags::empty())
                .is_ok()
            {
                s2.wrong.fetch_add(1, Ordering::Relaxed);
            }
            s2.asked_sum
                .fetch_add(checksum(msg.payload()), Ordering::Relaxed);
            s2.asked.fetch_add(1, Ordering::Release);
            tok.reply_medium(answer, &[j, k], msg.payload(), Flags::empty())
                .expect("a reply to another endpoint");
        })?;
        asks.push(ask);
        answers.push(answer);
    }
    assert!(
        asks.windows(2).all(|w| w[0] == w[1]),
        "the same handler index on every table"
    );
    client.barrier()?;
    let count = eps.len() as u32;
    let seg = client.endpoint().segment().len() as u64;
    // Long payloads land in slice (j, k) of the destination's last 64 KiB.
    let long_at = |from: u32, j: u32, k: u32| seg - 65536 + u64::from((from * 9 + j * 3 + k) * 256);
    for (ep, j) in eps.iter().zip(0u32..) {
        for p in 0..n {
            for k in (0..count).filter(|&k| k != j) {
                let to = EndpointAddr::new(Rank(p), k);
                let ask = asks[k as usize];
                ep.request_medium_at(
                    to,
                    ask,
                    &[j, k],
                    &crossing_payload(me, j, k, 100),
                    Flags::empty(),
                )?;
                let long = crossing_payload(me, j, k, 256);
                ep.request_long_at(to, ask, &[j, k], &long, long_at(me, j, k), Flags::empty())?;
            }
        }
    }
    // Every rank sends 2 AMs to each other index of every rank: each
    // endpoint runs 2 * n * (count - 1) requests and as many answers.
    let expected = u64::from(2 * n * (count - 1));
    let mut settled = false;
    for _ in 0..20_000_000u64 {
        settled = seen.iter().all(|s| {
            s.asked.load(Ordering::Acquire) == expected
                && s.answered.load(Ordering::Acquire) == expected
        });
        if settled {
            break;
        }
        for ep in eps {
            ep.poll()?;
        }
    }
    assert!(
        settled,
        "rank {me}: AMs between endpoints never all arrived"
    );
    client.barrier()?;
    for (s, k) in seen.iter().zip(0u32..) {
        let want_asked: u64 = (0..n)
            .flat_map(|from| (0..count).filter(move |&j| j != k).map(move |j| (from, j)))
            .map(|(from, j)| {
                checksum(&crossing_payload(from, j, k, 100))
                    .wrapping_add(checksum(&crossing_payload(from, j, k, 256)))
            })
            .fold(0, u64::wrapping_add);
        let j = k;
        let want_answered: u64 = (0..n)
            .flat_map(|_| (0..count).filter(move |&k| k != j))
            .map(|k| {
                checksum(&crossing_payload(me, j, k, 100))
                    .wrapping_add(checksum(&crossing_payload(me, j, k, 256)))
            })
            .fold(0, u64::wrapping_add);
        assert_eq!(
            s.asked_sum.load(Ordering::Relaxed),
            want_asked,
            "rank {me} endpoint {k}: requests' checksums"
        );
        assert_eq!(
            s.answered_sum.load(Ordering::Relaxed),
            want_answered,
            "rank {me} endpoint {k}: answers' checksums"
        );
        assert_eq!(s.wrong.load(Ordering::Relaxed), 0, "rank {me} endpoint {k}: AMs naming the wrong endpoint, or a negotiated reply not refused");
    }
    let e = eps[0]
        .request_short_at(
            EndpointAddr::new(Rank(0), 1),
            asks[1],
            &[0; rgex::MAX_CROSSING_ARGS + 1],
            Flags::empty(),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::TooManyArgs {
                max: rgex::MAX_CROSSING_ARGS,
                ..
            }
        ),
        "{e}"
    );
    ok(client, &format!("AMs between endpoints of different indices: Medium and Long requests from each of {count} endpoints to every other index of every rank, run in the target endpoint's table with the sender's endpoint named, answered back to it, with checksums; a negotiated reply to one refused; too many arguments refused"));
    Ok(())
}

/// Implicit operations are tracked per endpoint: a region open on one is
/// not another's, a put counted on one leaves another's category done.
fn nbi_per_endpoint(client: &Client, eps: &[Arc<Endpoint>]) -> rgex::Result<()> {
    let (e0, e1) = (&eps[0], &eps[1]);
    e1.nbi_begin_region()?;
    assert!(
        e0.nbi_end_region().is_err(),
        "endpoint 1's region closed by endpoint 0"
    );
    e0.nbi_begin_region()?;
    let at = GlobalAddr::new(Rank((client.rank().0 + 1) % client.size()), 4096);
    e1.put_nbi(at, &[5u8; 64], Flags::empty())?;
    let c1 = e1.nbi_end_region()?;
    let c0 = e0.nbi_end_region()?;
    assert!(c0.test(), "endpoint 0's region counted endpoint 1's put");
    c1.wait()?;
    let counted = rgex::rma::nbi::counter(1, rgex::NbiCategory::Put);
    counted.add(1);
    assert!(
        e0.nbi_test(rgex::NbiCategory::Put),
        "endpoint 0 sees endpoint 1's puts"
    );
    assert!(!e1.nbi_test(rgex::NbiCategory::Put));
    counted.done();
    e1.nbi_wait(rgex::NbiCategory::Put)?;
    client.barrier()?;
    ok(client, "implicit operations and access regions are tracked per endpoint: one endpoint's region and puts are not another's");
    Ok(())
}

/// An index out of range, and an endpoint used after it was destroyed,
/// refused naming the rank and the index.
fn errors(client: &Client, second: &Arc<Endpoint>, id: HandlerId) -> rgex::Result<()> {
    let me = client.rank();
    let e = client.endpoint_at(ENDPOINTS).unwrap_err();
    assert!(
        matches!(e, Error::EndpointOutOfRange { rank, index: ENDPOINTS, count: ENDPOINTS } if rank == me),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains(&format!("{me} has no endpoint {ENDPOINTS}")),
        "{e}"
    );
    client.destroy_endpoint(2)?;
    let e = second
        .put(GlobalAddr::new(me, 0), b"late", Flags::empty())
        .unwrap_err();
    assert!(
        matches!(e, Error::EndpointDestroyed { index: 2, rank, .. } if rank == me),
        "{e}"
    );
    let e = second
        .request_short(me, id, &[2], Flags::empty())
        .unwrap_err();
    assert!(
        matches!(e, Error::EndpointDestroyed { index: 2, .. }),
        "{e}"
    );
    let e = second
        .get(&mut [0u8; 4], GlobalAddr::new(me, 0), Flags::empty())
        .unwrap_err();
    assert!(
        e.to_string().contains("endpoint 2") && e.to_string().contains(&format!("{me}")),
        "{e}"
    );
    assert!(matches!(
        client.endpoint_at(2),
        Err(Error::EndpointDestroyed { index: 2, .. })
    ));
    let to = |index| EndpointAddr::new(me, index);
    let e = client
        .endpoint()
        .request_short_at(to(2), id, &[2], Flags::empty())
        .unwrap_err();
    assert!(
        matches!(e, Error::EndpointDestroyed { index: 2, rank, .. } if rank == me),
        "{e}"
    );
    let e = client
        .endpoint()
        .request_short_at(to(ENDPOINTS), id, &[2], Flags::empty())
        .unwrap_err();
    assert!(
        matches!(e, Error::EndpointOutOfRange { index: ENDPOINTS, rank, .. } if rank == me),
        "{e}"
    );
    client.barrier()?;
    ok(client, "an endpoint index out of range, and an endpoint used after it was destroyed (through a clone), are errors naming the rank and the index");
    Ok(())
}
