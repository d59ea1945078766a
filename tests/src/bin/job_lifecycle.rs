//! A client's life: initialised once per process, ended by
//! `Client::finalize` or by its drop. Chosen by the first argument:
//!
//! - `init_twice`: after `rgex::init`, a second init fails with
//!   `Error::AlreadyInitialised` ("rgex is already initialised in this
//!   process", naming the rank) while the client lives, and a third
//!   after it was dropped; the connection to the launcher is untouched
//!   (not "connected to the launcher twice");
//! - `init_concurrent`: 4 threads of each rank call `rgex::init` at once:
//!   exactly one gets a client, the other three that error;
//! - `finalize_then_op`: after `finalize` (Ok on every rank), an AM
//!   request, a Medium and a negotiated-payload one, a put, a get, a
//!   non-blocking put and get, a barrier through a clone of the world
//!   team and an atomic op, all through a clone of the endpoint's `Arc`,
//!   fail with `Error::Finalized`, naming the rank, and send nothing;
//! - `drop_then_op`: the same after the client is dropped instead;
//! - `finalize_idle`: ranks exchange AMs, puts and gets, wait for all of
//!   them, and `finalize` returns Ok on every rank (a rank whose finalize
//!   fails fails the job);
//! - `finalize_unfinished` (run with `RGEX_RMA=reference`, so a get is an
//!   active message): rank 0 starts a get from rank 1 and finalizes
//!   without waiting for it: `finalize` returns `Error::Unfinished`
//!   naming the reference RMA operation, and the get can still be waited
//!   for afterwards (its reply was sent before rank 1 left); the other
//!   ranks' finalize is Ok.
//!
//! Rank 0 prints an `ok:` line per check; any failure fails the job.

use rgex::{Error, Flags, GlobalAddr, Rank};
use rgex_tests::{conduit_banner, ok, OK};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The words of an "already initialised" error.
const ALREADY: &str = "rgex is already initialised in this process";

/// Require `r` to be the "already initialised" error, naming rank `me`.
fn already(r: rgex::Result<rgex::Client>, me: u32, when: &str) {
    match r {
        Err(e @ Error::AlreadyInitialised { rank, .. }) => {
            let text = e.to_string();
            assert_eq!(rank, me, "{when}: {text}");
            assert!(
                text.contains(ALREADY) && text.contains(&format!("rank {me}")),
                "{when}: {text}"
            );
            assert!(!text.contains("connected to the launcher twice"), "{text}");
        }
        Err(e) => panic!("rank {me}: {when}: another error than {ALREADY:?}: {e}"),
        Ok(_) => panic!("rank {me}: {when}: a second init made a client"),
    }
}

/// Require `r` to be refused as finalized, naming rank `me`.
fn refused<T>(r: rgex::Result<T>, me: Rank, what: &str) {
    match r {
        Err(e @ Error::Finalized { rank, .. }) => {
            let text = e.to_string();
            assert_eq!(rank, me, "{what}: {text}");
            assert!(
                text.contains(&format!("on {me}")) && text.contains("finalized or dropped"),
                "{what}: {text}"
            );
        }
        Err(e) => panic!("{me}: {what} after the client ended: another error: {e}"),
        Ok(_) => panic!("{me}: {what} after the client ended: it worked"),
    }
}

/// Every send and RMA entry point, through `ep` (a clone of an ended
/// client's endpoint), a barrier through `team` and an op of `ad` (made
/// before the end): all refused. `h` is a handler the peers registered.
fn all_refused(
    ep: &Arc<rgex::Endpoint>,
    team: &rgex::Team,
    ad: &rgex::AtomicDomain<u64>,
    h: rgex::HandlerId,
) {
    let me = ep.rank();
    let peer = Rank((me.0 + 1) % ep.size());
    let at = GlobalAddr::new(peer, 0);
    refused(
        ep.request_short(peer, h, &[1], Flags::empty()),
        me,
        "request_short",
    );
    refused(
        ep.request_medium(peer, h, &[1], &[7; 16], Flags::empty()),
        me,
        "request_medium",
    );
    refused(
        ep.prepare_request_medium(peer, None, 8, 8, 0, Flags::empty())
            .map(drop),
        me,
        "prepare_request_medium",
    );
    refused(ep.put(at, &[1; 8], Flags::empty()), me, "put");
    let mut back = [0u8; 8];
    refused(ep.get(&mut back, at, Flags::empty()), me, "get");
    refused(
        ep.put_nb(at, &[1; 8], Flags::empty()).map(drop),
        me,
        "put_nb",
    );
    refused(
        ep.get_nb(vec![0u8; 8], at, Flags::empty())
            .map(drop)
            .map_err(|e| e.error),
        me,
        "get_nb",
    );
    refused(ep.put_nbi(at, &[1; 8], Flags::empty()), me, "put_nbi");
    refused(team.barrier(), me, "barrier");
    refused(team.barrier_nb().map(drop), me, "barrier_nb");
    refused(
        ad.fetch_add(at, 1, rgex::AtomicFlags::empty()),
        me,
        "an atomic fetch_add",
    );
    // A VIS context made now, on the direct path to node-local peers as
    // on the others.
    let vis = rgex::Vis::new(ep).expect("a VIS context");
    let frags = [(0u64, 8u64)];
    let meta = || rgex::Vector {
        peer: &frags,
        local: &[(0, 8)],
    };
    refused(
        vis.put(peer, meta(), &[1; 8], Flags::empty()),
        me,
        "a VIS put",
    );
    refused(
        vis.get(peer, meta(), &mut back, Flags::empty()),
        me,
        "a VIS get",
    );
}

fn main() -> rgex::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_default();
    let modes = [
        "init_twice",
        "init_concurrent",
        "finalize_then_op",
        "drop_then_op",
        "finalize_idle",
        "finalize_unfinished",
    ];
    if !modes.contains(&what.as_str()) {
        eprintln!("usage: job_lifecycle {} (got {what:?})", modes.join("|"));
        std::process::exit(2);
    }
    let me = rgex::launcher_rank()?;
    let hits = Arc::new(AtomicU64::new(0));
    let h_hits = hits.clone();
    let register = move |t: &rgex::HandlerTable| {
        let h = h_hits.clone();
        t.register("hit", move |_tok, _msg| {
            // Relaxed: a count read by the thread whose polls run this.
            h.fetch_add(1, Ordering::Relaxed);
        })
    };
    if what == "init_concurrent" {
        return init_concurrent(me, register);
    }
    let (client, hit) = rgex::init_with(register)?;
    conduit_banner(&client);
    let rank = client.rank();
    assert_eq!(rank.0, me);
    match what.as_str() {
        "init_twice" => {
            already(rgex::init(), me, "a second init while the client lives");
            ok(
                &client,
                "a second init while the client lives is a clear error",
            );
            let ep = client.endpoint().clone();
            // Every rank's checks are done before any leaves.
            client.barrier()?;
            drop(client);
            already(rgex::init(), me, "an init after the client was dropped");
            assert!(ep.is_finalized());
            if me == 0 {
                println!("{OK}an init after the client was dropped is a clear error");
            }
        }
        "finalize_then_op" | "drop_then_op" => {
            let ep = client.endpoint().clone();
            let team = client.world().clone();
            let ops = rgex::OpSet::of(&[rgex::AtomicOp::Fadd]);
            let ad = rgex::AtomicDomain::<u64>::new(&ep, &team, ops)?;
            if what == "finalize_then_op" {
                client.finalize()?;
            } else {
                client.barrier()?;
                drop(client);
            }
            all_refused(&ep, &team, &ad, hit);
            if me == 0 {
                println!("{OK}{what}: every send and RMA through a cloned endpoint is refused");
            }
        }
        "finalize_idle" => {
            let n = client.size();
            let right = Rank((me + 1) % n);
            for i in 0..64u32 {
                client
                    .endpoint()
                    .request_short(right, hit, &[i], Flags::empty())?;
            }
            let at = GlobalAddr::new(right, 64 * u64::from(me));
            client.endpoint().put(at, &[me as u8; 64], Flags::empty())?;
            let got = client
                .endpoint()
                .get_nb(vec![0u8; 64], at, Flags::empty())
                .map_err(|e| e.error)?
                .wait()?;
            assert_eq!(got, vec![me as u8; 64]);
            client
                .endpoint()
                .put_nb(at, &[1; 64], Flags::empty())?
                .wait()?;
            client.barrier()?;
            rgex_tests::wait_until(&client, "the 64 AMs from the left", || {
                // Relaxed: the count is bumped by this thread's own polls.
                hits.load(Ordering::Relaxed) == 64
            });
            // Every rank's finalize must be Ok: an error fails the job.
            let ep = client.endpoint().clone();
            client.finalize()?;
            assert!(ep.is_finalized() && ep.operations_in_flight().is_empty());
            if me == 0 {
                println!("{OK}finalize is Ok on every rank when all is idle");
            }
        }
        _ => {
            // finalize_unfinished
            assert_eq!(
                client.endpoint().rma_path(Rank((me + 1) % client.size())),
                rgex::RmaPath::Reference,
                "finalize_unfinished runs with RGEX_RMA=reference"
            );
            let pattern: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ me as u8).collect();
            client
                .endpoint()
                .put(GlobalAddr::new(rank, 0), &pattern, Flags::empty())?;
            client.barrier()?;
            if me != 0 {
                client.finalize()?;
                return Ok(());
            }
            let peer = Rank(1 % client.size());
            let get = client
                .endpoint()
                .get_nb(vec![0u8; 64], GlobalAddr::new(peer, 0), Flags::empty())
                .map_err(|e| e.error)?;
            let inflight = client.endpoint().operations_in_flight();
            assert_eq!(inflight, vec![("reference RMA", 1)], "the get in flight");
            match client.finalize() {
                Err(e @ Error::Unfinished { .. }) => {
                    let text = e.to_string();
                    assert!(
                        text.contains("finalize on rank 0") && text.contains("1 reference RMA"),
                        "{text}"
                    );
                }
                other => panic!("finalize with a get in flight: {other:?}"),
            }
            println!("{OK}finalize reports an operation left in flight");
            let want: Vec<u8> = (0..64u8)
                .map(|i| i.wrapping_mul(37) ^ peer.0 as u8)
                .collect();
            assert_eq!(get.wait()?, want, "the get waited for after finalize");
            println!("{OK}an operation started before finalize can still be waited for");
        }
    }
    Ok(())
}

/// Mode `init_concurrent`: four threads call `rgex::init_with` at once.
fn init_concurrent(
    me: u32,
    register: impl Fn(&rgex::HandlerTable) -> rgex::Result<rgex::HandlerId> + Send + Sync + Clone,
) -> rgex::Result<()> {
    const THREADS: usize = 4;
    let start = std::sync::Barrier::new(THREADS);
    let results: Vec<rgex::Result<(rgex::Client, rgex::HandlerId)>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let register = register.clone();
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    rgex::init_with(register)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("an init thread does not panic"))
            .collect()
    });
    let mut clients = Vec::new();
    for r in results {
        match r {
            Ok((client, _)) => clients.push(client),
            Err(e) => already(Err(e), me, "a concurrent init"),
        }
    }
    assert_eq!(
        clients.len(),
        1,
        "rank {me}: {} of {THREADS} concurrent inits made a client",
        clients.len()
    );
    let client = clients.pop().expect("one client");
    conduit_banner(&client);
    ok(
        &client,
        "of 4 concurrent inits exactly one makes a client, the others a clear error",
    );
    client.finalize()
}
