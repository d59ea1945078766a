//! rgex's own protocol handlers against a bad peer: what a client may not
//! send, and what a rank does with protocol messages that a correct rgex
//! never sends (made with the `fault-injection` sends).
//!
//! Run with `RGEX_RMA=reference` and `RGEX_ATOMICS=reference` so that
//! every protocol handler is installed and in use (VIS is forced to its
//! AM pipeline here). Checks, each on every rank:
//!
//! 1. client sends naming a reserved index are refused at the sender
//!    ([`Error::ReservedHandler`]), for every send and reply form;
//!    So is every public way to get hold of a protocol id: one
//!    registered on a scratch table (sends, commits, and a handler's
//!    reply forging a reference get's answer, which must not complete
//!    the get), a copy of it, and `register_protocol` on the endpoint's
//!    own table (sealed by `rgex::init`);
//! 2. protocol requests with no arguments (which indexed past the end of
//!    the argument list before) are reported as malformed, naming the
//!    sender, and nothing panics;
//! 3. a "get reply" forged as a request, or sent as a reply by a rank the
//!    get was not sent to, does not complete an in-flight reference get:
//!    the get ends with the target's bytes;
//! 4. a forged refusal never shows up as [`Error::Dropped`];
//! 5. 10,000 random protocol messages per rank (reserved index, argument
//!    count, category, request or reply, payload): no panic, every poll
//!    error is a report of them, and afterwards AM, RMA, atomics, VIS and
//!    collectives all still work.

use rgex::{
    Accepts, AtomicDomain, AtomicFlags, AtomicOp, Category, Client, Error, Flags, GlobalAddr,
    HandlerId, HandlerTable, OpSet, ProtocolId, Rank, Token, Vector, Vis, VisMechanism, CLIENT_MIN,
};
use rgex_tests::{ok, HANG_LIMIT};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A request asking its receiver to answer with a forged reply: args
/// `[0, seed]` for a random one, `[1, index, category, len, args..]` for
/// the one described.
const FORGE_REPLY: u8 = CLIENT_MIN;
/// A plain request: counts one arrival from its sender (the marks that
/// say "everything I sent you before this has arrived").
const MARK: u8 = CLIENT_MIN + 1;
/// A request answered by an empty reply to `ECHOED`.
const ECHO: u8 = CLIENT_MIN + 2;
const ECHOED: u8 = CLIENT_MIN + 3;
/// A request whose handler tries to answer with a reference get's reply
/// through a protocol id of a scratch table (fixed and negotiated
/// payload), counts each refusal, then answers `ECHOED`.
const SCRATCH_REPLY: u8 = CLIENT_MIN + 4;

/// Random messages each rank sends its successor: half forged requests,
/// half requests for forged replies.
const FUZZ: u32 = 10_000;

/// Marks and echoes received, per sender (one word each, up to 64 ranks).
static MARKS: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];
static ECHOES: AtomicU64 = AtomicU64::new(0);
/// Forged crossing AMs that reached this program's handlers (ignored).
static FORGED_CROSSINGS: AtomicU64 = AtomicU64::new(0);
/// Echo requests whose handler's reply to a reserved index was refused
/// with [`Error::ReservedHandler`] (it tries that first, every time).
static RESERVED_REPLIES_REFUSED: AtomicU64 = AtomicU64::new(0);
/// SCRATCH_REPLY's forged get replies refused at the sender.
static SCRATCH_REPLIES_REFUSED: AtomicU64 = AtomicU64::new(0);

/// A protocol id for `index`, registered on a table of its own (what any
/// client can make: `HandlerTable::new` and `register_protocol` are public).
fn scratch_protocol(index: u8) -> ProtocolId {
    HandlerTable::new()
        .register_protocol(
            index,
            "scratch",
            Accepts::reply(Category::Medium, 3),
            |_, _| {},
        )
        .expect("a scratch table takes a reserved registration")
}

/// The SCRATCH_REPLY handler: forge the answer of a get with id
/// `[args[0], args[1]]` through a scratch table's id, every way a token
/// can reply; each must be refused, and the token stays free to answer.
fn scratch_reply(tok: &Token<'_>, args: &[u32]) {
    let pid = scratch_protocol(rgex::reserved::RMA_GET_REPLY);
    let id = [args[0], args[1], 0];
    let refused = |r: rgex::Result<()>| match r {
        Err(Error::ReservedHandler { rank, index, .. })
            if rank == tok.endpoint().rank() && index == pid.index() =>
        {
            SCRATCH_REPLIES_REFUSED.fetch_add(1, Ordering::Relaxed);
        }
        other => panic!("a reply through a scratch table's protocol id: {other:?}"),
    };
    refused(tok.reply_medium(pid, &id, &[0xEE; 256], Flags::empty()));
    refused(tok.reply_short(pid, &id, Flags::empty()));
    let mut p = tok
        .prepare_reply_medium(None, 256, 256, 3, Flags::empty())
        .expect("a negotiated reply");
    p.buf().fill(0xEE);
    refused(p.commit(pid, &id, 256));
    tok.reply_short(HandlerId::forge(ECHOED), &[], Flags::empty())
        .expect("echo reply");
}

/// rgex's errors, and the atomics' own (until they fold into one).
type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One random protocol message: index, category, arguments, payload
/// length and, for a Long, where it lands in the receiver's scratch half
/// of the segment.
struct Forged {
    index: u8,
    category: Category,
    args: Vec<u32>,
    len: usize,
    long_offset: u64,
}

impl Forged {
    fn random(rng: &mut Rng, max_medium: usize, seg_len: u64) -> Forged {
        let index = rng.below(u64::from(CLIENT_MIN)) as u8;
        let category = match rng.below(3) {
            0 => Category::Short,
            1 => Category::Medium,
            _ => Category::Long,
        };
        let nargs = rng.below(17) as usize;
        // Half the words small (ids, offsets and statuses a handler may
        // take for real), half anything.
        let args = (0..nargs)
            .map(|_| {
                if rng.below(2) == 0 {
                    rng.below(8) as u32
                } else {
                    rng.next() as u32
                }
            })
            .collect();
        let len = match category {
            Category::Short => 0,
            _ => rng.below(max_medium.min(1024) as u64 + 1) as usize,
        };
        let half = seg_len / 2;
        let long_offset = half + rng.below(half - 2048);
        Forged {
            index,
            category,
            args,
            len,
            long_offset,
        }
    }

    /// The payload: a few structured headers (the VIS formats' leading
    /// words small) among random bytes.
    fn payload(&self, rng: &mut Rng) -> Vec<u8> {
        let mut p: Vec<u8> = (0..self.len).map(|_| rng.next() as u8).collect();
        if rng.below(2) == 0 {
            for (i, w) in p.chunks_exact_mut(8).enumerate().take(8) {
                let v = if i < 2 { rng.below(9) } else { rng.below(64) };
                w.copy_from_slice(&v.to_le_bytes());
            }
        }
        p
    }
}

fn category_of(code: u32) -> Category {
    match code {
        0 => Category::Short,
        1 => Category::Medium,
        _ => Category::Long,
    }
}

/// The FORGE_REPLY handler: answer with the reply the request asks for.
fn forge_reply(tok: &Token<'_>, args: &[u32]) {
    let ep = tok.endpoint();
    let seg_len = ep.conduit().segment_len(tok.src());
    let r = match args {
        [0, seed] => {
            let mut rng = Rng::new(u64::from(*seed) << 20 | u64::from(tok.src().0));
            let f = Forged::random(&mut rng, tok.max_reply_medium(16), seg_len);
            let p = f.payload(&mut rng);
            tok.forge_reply(f.index, f.category, &f.args, &p, f.long_offset)
        }
        [1, index, cat, len, rest @ ..] => {
            let p = vec![0xF0u8; *len as usize];
            tok.forge_reply(*index as u8, category_of(*cat), rest, &p, seg_len / 2)
        }
        other => panic!("FORGE_REPLY with arguments {other:?}"),
    };
    r.expect("a forged reply can always be sent");
}

/// Poll until `done()` holds, bounded by [`HANG_LIMIT`]; returns the
/// errors the polls reported.
fn poll_until(client: &Client, what: &str, mut done: impl FnMut() -> bool) -> Vec<Error> {
    let start = Instant::now();
    let mut errors = Vec::new();
    while !done() {
        if let Err(e) = client.endpoint().poll() {
            errors.push(e);
        }
        assert!(
            start.elapsed() < HANG_LIMIT,
            "{}: still waiting for {what} after {HANG_LIMIT:?}",
            client.rank()
        );
    }
    // The reports of the last messages may wait for one more poll.
    while let Err(e) = client.endpoint().poll() {
        errors.push(e);
    }
    errors
}

/// Every error must be a malformed-message report naming a sender in
/// `from`; returns how many there were.
fn only_malformed(client: &Client, what: &str, errors: &[Error], from: &[Rank]) -> usize {
    for e in errors {
        match e {
            Error::Malformed { from: f, to, .. } if from.contains(f) && *to == client.rank() => {}
            other => panic!("{}: {what}: unexpected error {other}", client.rank()),
        }
    }
    errors.len()
}

fn marks(from: Rank) -> u64 {
    MARKS[from.index()].load(Ordering::Acquire)
}

/// The count of marks from `from` that the next awaited one makes (a
/// mark may arrive before its receiver starts waiting for it, so waits
/// compare with a running total, not with the count at the start).
fn next_mark(from: Rank) -> u64 {
    static AWAITED: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];
    AWAITED[from.index()].fetch_add(1, Ordering::Relaxed) + 1
}

/// Whether a delivery to one of this program's handlers came through the
/// crossing protocol (an AM from another endpoint index). Only the fuzz's
/// forged messages cross here (the program uses one endpoint), and the
/// crossing protocol runs the client handler they name with their random
/// arguments, as a request or a reply: the handlers ignore those, as a
/// client's handlers would ignore AMs they never asked for.
fn forged_crossing(tok: &Token<'_>) -> bool {
    let crossed = tok.src_endpoint() != tok.endpoint().index();
    if crossed {
        FORGED_CROSSINGS.fetch_add(1, Ordering::Relaxed);
    }
    crossed
}

fn main() -> Res<()> {
    let (client, ()) = rgex::init_with(|t| {
        t.register_at(FORGE_REPLY, "forge reply", |tok, msg| {
            if !forged_crossing(tok) {
                forge_reply(tok, msg.args())
            }
        })?;
        t.register_at(MARK, "mark", |tok, _msg| {
            if !forged_crossing(tok) {
                MARKS[tok.src().index()].fetch_add(1, Ordering::Release);
            }
        })?;
        t.register_at(ECHO, "echo", |tok, _msg| {
            if forged_crossing(tok) {
                return;
            }
            let ack = HandlerId::forge(rgex::reserved::RMA_ACK);
            if let Err(Error::ReservedHandler { index, .. }) =
                tok.reply_short(ack, &[0, 0], Flags::empty())
            {
                assert_eq!(index, ack.index());
                RESERVED_REPLIES_REFUSED.fetch_add(1, Ordering::Relaxed);
            }
            // The refused reply sent nothing: the token may still reply.
            tok.reply_short(HandlerId::forge(ECHOED), &[], Flags::empty())
                .expect("echo reply");
        })?;
        t.register_at(ECHOED, "echoed", |tok, _msg| {
            if !forged_crossing(tok) {
                ECHOES.fetch_add(1, Ordering::Release);
            }
        })?;
        t.register_at(SCRATCH_REPLY, "scratch reply", |tok, msg| {
            if !forged_crossing(tok) {
                scratch_reply(tok, msg.args())
            }
        })?;
        Ok(())
    })?;
    rgex_tests::conduit_banner(&client);
    let (me, n) = (client.rank().0, client.size());
    assert!((2..=64).contains(&n), "run with 2 to 64 ranks");
    assert_eq!(
        std::env::var("RGEX_RMA").as_deref(),
        Ok("reference"),
        "run with RGEX_RMA=reference (the reference get is under test)"
    );
    // Every protocol in use: VIS over its AM pipeline, atomics by
    // reference (RGEX_ATOMICS=reference), RMA by reference.
    let vis = Vis::builder()
        .mechanism(VisMechanism::Am)
        .build(client.endpoint())?;
    let ad = AtomicDomain::<u64>::new(
        client.endpoint(),
        client.world(),
        OpSet::of(&[AtomicOp::Fadd, AtomicOp::Get]),
    )?;
    client.barrier()?;

    // Each check reads its counters, then waits in a barrier for every
    // rank to be done with the one before (a message of the next check
    // may arrive while this rank is still in that barrier, and must count).
    client_cannot_name_reserved(&client)?;
    protocol_ids_stay_rgexs(&client)?;
    requests_without_arguments(&client, Rank((me + 1) % n), Rank((me + n - 1) % n))?;
    forged_get_replies(&client)?;
    forged_refusals(&client)?;
    fuzz(&client)?;
    still_works(&client, &vis, &ad)?;
    ok(&client, "all protocol checks passed");
    Ok(())
}

/// Check 1: every client send form refuses a reserved index, naming it.
fn client_cannot_name_reserved(client: &Client) -> Res<()> {
    let peer = Rank((client.rank().0 + 1) % client.size());
    let get = HandlerId::forge(rgex::reserved::RMA_GET);
    let refused = |what: &str, r: rgex::Result<()>| match r {
        Err(Error::ReservedHandler { rank, index, .. })
            if rank == client.rank() && index == get.index() => {}
        other => panic!("{what} to reserved index {}: {other:?}", get.index()),
    };
    refused(
        "request_short",
        client
            .endpoint()
            .request_short(peer, get, &[0; 5], Flags::empty()),
    );
    refused(
        "request_medium",
        client
            .endpoint()
            .request_medium(peer, get, &[0; 5], &[1, 2, 3], Flags::empty()),
    );
    refused(
        "request_long",
        client
            .endpoint()
            .request_long(peer, get, &[0; 5], &[1, 2, 3], 0, Flags::empty()),
    );
    let p = client
        .endpoint()
        .prepare_request_medium(peer, None, 8, 8, 5, Flags::empty())?;
    refused("a negotiated-payload commit", p.commit(get, &[0; 5], 8));
    // An index nobody registered below CLIENT_MIN is refused as reserved
    // too, not as unknown.
    match client.endpoint().request_short(
        peer,
        HandlerId::forge(CLIENT_MIN - 1),
        &[],
        Flags::empty(),
    ) {
        Err(Error::ReservedHandler { index, .. }) if index == CLIENT_MIN - 1 => {}
        other => panic!("a send to index {}: {other:?}", CLIENT_MIN - 1),
    }
    // A reply naming a reserved index, from a handler: refused there, and
    // the token may still reply (the echo handler tries one first).
    let (echoes, refused) = (
        ECHOES.load(Ordering::Acquire),
        RESERVED_REPLIES_REFUSED.load(Ordering::Relaxed),
    );
    client.barrier()?;
    client
        .endpoint()
        .request_short(peer, HandlerId::forge(ECHO), &[], Flags::empty())?;
    let errors = poll_until(client, "the echo", || {
        ECHOES.load(Ordering::Acquire) > echoes
    });
    assert!(errors.is_empty(), "{errors:?}");
    client.barrier()?;
    assert_eq!(
        RESERVED_REPLIES_REFUSED.load(Ordering::Relaxed),
        refused + 1,
        "a reply to a reserved index from the echo handler was not refused"
    );
    let text = Error::ReservedHandler {
        rank: client.rank(),
        index: get.index(),
        client_min: CLIENT_MIN,
    }
    .to_string();
    assert!(
        text.contains(&format!("index {}", get.index()))
            && text.contains(&format!("{CLIENT_MIN}..=255")),
        "{text}"
    );
    ok(
        client,
        "client sends, commits and replies naming a reserved index are refused at the sender",
    );
    Ok(())
}

/// Check 1b: a protocol id from a scratch table (or a copy of one) names
/// nothing on this endpoint, the endpoint's own table takes no protocol,
/// and a handler cannot forge a reference get's answer with such an id.
fn protocol_ids_stay_rgexs(client: &Client) -> Res<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let get = scratch_protocol(rgex::reserved::RMA_GET);
    let copied = get;
    let refused = |what: &str, r: rgex::Result<()>| match r {
        Err(Error::ReservedHandler { rank, index, .. })
            if rank == client.rank() && index == get.index() => {}
        other => panic!("{what} through a scratch table's protocol id: {other:?}"),
    };
    refused(
        "request_short",
        client
            .endpoint()
            .request_short(peer, get, &[0; 5], Flags::empty()),
    );
    refused(
        "request_medium (a copied id)",
        client
            .endpoint()
            .request_medium(peer, copied, &[0; 5], &[1, 2, 3], Flags::empty()),
    );
    refused(
        "request_long",
        client
            .endpoint()
            .request_long(peer, get, &[0; 5], &[1, 2, 3], 0, Flags::empty()),
    );
    let p = client
        .endpoint()
        .prepare_request_medium(peer, None, 8, 8, 5, Flags::empty())?;
    refused("a negotiated-payload commit", p.commit(get, &[0; 5], 8));
    // The endpoint's own table: sealed, at a free reserved index and at
    // one rgex uses.
    for index in [CLIENT_MIN - 1, rgex::reserved::RMA_GET_REPLY] {
        match client.endpoint().handlers().register_protocol(
            index,
            "late",
            Accepts::reply(Category::Medium, 3),
            |_, _| {},
        ) {
            Err(Error::BadHandlerIndex { index: i, why })
                if i == index && why.contains("sealed") => {}
            other => panic!("register_protocol({index}) on the endpoint's table: {other:?}"),
        }
    }
    assert!(client.endpoint().handlers().is_sealed());

    // The forgery: rank 0 gets 256 bytes from rank 1 by
    // reference, and asks rank 1's client handler to answer it with a
    // forged reply (ids of a fresh table's first slots). Every forged
    // reply is refused at rank 1, and the get ends with the real bytes.
    let off = 8192u64;
    let real: Vec<u8> = (0..256u32).map(|i| (i * 5 + 1) as u8).collect();
    client.endpoint().segment().write(off, &real)?;
    let refused_before = SCRATCH_REPLIES_REFUSED.load(Ordering::Relaxed);
    client.barrier()?;
    let forgeries = 4u64;
    if me == 0 {
        let ev = client.endpoint().get_nb(
            vec![0u8; 256],
            GlobalAddr::new(Rank(1), off),
            Flags::empty(),
        )?;
        let echoes = ECHOES.load(Ordering::Acquire);
        for slot in 0..forgeries as u32 {
            client.endpoint().request_short(
                Rank(1),
                HandlerId::forge(SCRATCH_REPLY),
                &[slot, 0],
                Flags::empty(),
            )?;
        }
        let errors = poll_until(client, "the scratch replies' echoes", || {
            ECHOES.load(Ordering::Acquire) >= echoes + forgeries
        });
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(ev.wait()?, real, "the get took forged bytes");
    }
    client.barrier()?;
    if me == 1 {
        assert_eq!(
            SCRATCH_REPLIES_REFUSED.load(Ordering::Relaxed) - refused_before,
            3 * forgeries,
            "every forged reply (reply_medium, reply_short, a commit) is refused at the sender"
        );
    }
    client.barrier()?;
    ok(
        client,
        "protocol ids of a scratch table (and copies) are refused at the sender, the endpoint's table is sealed, and a handler cannot forge a get's reply",
    );
    Ok(())
}

/// Check 2: each protocol request with no arguments at all is reported by
/// its receiver as malformed, naming the sender, and runs nothing.
fn requests_without_arguments(client: &Client, next: Rank, prev: Rank) -> Res<()> {
    let protocol = [
        rgex::reserved::RMA_PUT,
        rgex::reserved::RMA_GET,
        rgex::reserved::PUT_SIGNAL,
        rgex::reserved::PUT_SIGNAL_ACKS,
        rgex::atomics::reserved::AD_OP,
        rgex::vis::am::index::PUT,
        rgex::vis::am::index::GET,
    ];
    let before = client.endpoint().malformed_messages();
    let marked = next_mark(prev);
    client.barrier()?;
    for &index in &protocol {
        client.endpoint().forge_request(
            next,
            index,
            Category::Short,
            &[],
            &[],
            0,
            Flags::empty(),
        )?;
    }
    client
        .endpoint()
        .request_short(next, HandlerId::forge(MARK), &[], Flags::empty())?;
    let errors = poll_until(client, "the mark after the argument-less requests", || {
        marks(prev) >= marked
            && client.endpoint().malformed_messages() - before >= protocol.len() as u64
    });
    only_malformed(client, "argument-less requests", &errors, &[prev]);
    assert_eq!(
        client.endpoint().malformed_messages() - before,
        protocol.len() as u64,
        "each argument-less protocol request is one malformed message"
    );
    ok(
        client,
        "protocol requests without arguments are reported as malformed, naming the sender",
    );
    Ok(())
}

/// Check 3: forged answers to an in-flight reference get (as requests
/// from this rank to itself, and as replies from a third rank the get was
/// not sent to) do not complete it; it ends with the target's bytes.
fn forged_get_replies(client: &Client) -> Res<()> {
    let (me, n) = (client.rank().0, client.size());
    let off = 4096u64;
    let real: Vec<u8> = (0..256u32).map(|i| (i * 7 + 3) as u8).collect();
    client.endpoint().segment().write(off, &real)?;
    let before = client.endpoint().malformed_messages();
    client.barrier()?;
    let reply = u32::from(rgex::reserved::RMA_GET_REPLY);
    // Ids are (slot, generation) pairs; a fresh table hands out small ones.
    let ids: Vec<[u32; 2]> = (0..4).flat_map(|s| (0..4).map(move |g| [s, g])).collect();
    match me {
        0 => {
            let ev = client.endpoint().get_nb(
                vec![0u8; 256],
                GlobalAddr::new(Rank(1), off),
                Flags::empty(),
            )?;
            for id in &ids {
                client.endpoint().forge_request(
                    Rank(0),
                    reply as u8,
                    Category::Medium,
                    &[id[0], id[1], 0],
                    &[0xEE; 256],
                    0,
                    Flags::empty(),
                )?;
            }
            if n >= 3 {
                for id in &ids {
                    client.endpoint().request_short(
                        Rank(2),
                        HandlerId::forge(FORGE_REPLY),
                        &[1, reply, 1, 256, id[0], id[1], 0],
                        Flags::empty(),
                    )?;
                }
            }
            let echoes = ECHOES.load(Ordering::Acquire);
            let wrong_peer = if n >= 3 { Rank(2) } else { Rank(0) };
            client.endpoint().request_short(
                wrong_peer,
                HandlerId::forge(ECHO),
                &[],
                Flags::empty(),
            )?;
            let mut errors = poll_until(client, "the echo after the forged get replies", || {
                ECHOES.load(Ordering::Acquire) > echoes
            });
            let got = ev.wait()?;
            errors.extend(poll_until(client, "nothing", || true));
            assert_eq!(got, real, "the get took forged bytes");
            let forged = if n >= 3 { 2 * ids.len() } else { ids.len() };
            only_malformed(client, "forged get replies", &errors, &[Rank(0), Rank(2)]);
            assert_eq!(
                (client.endpoint().malformed_messages() - before) as usize,
                forged,
                "each forged get reply is one malformed message"
            );
            for r in 1..n {
                client.endpoint().request_short(
                    Rank(r),
                    HandlerId::forge(MARK),
                    &[],
                    Flags::empty(),
                )?;
            }
        }
        _ => {
            if me == 1 {
                // Keep the get in flight while the forgeries arrive: not
                // polling for a while is what a busy target does.
                std::thread::sleep(Duration::from_millis(300));
            }
            let marked = next_mark(Rank(0));
            let errors = poll_until(client, "rank 0's mark", || marks(Rank(0)) >= marked);
            only_malformed(client, "forged get replies", &errors, &[]);
        }
    }
    ok(
        client,
        if n >= 3 {
            "forged get replies (as requests, and as replies from a rank the get was not sent to) do not complete the get"
        } else {
            "forged get replies (as requests) do not complete the get"
        },
    );
    Ok(())
}

/// Check 4: refusals forged as replies (of an index this rank never
/// sends to, or with a bad category code) or as requests are reported as
/// malformed, never as a dropped message of ours.
fn forged_refusals(client: &Client) -> Res<()> {
    let (me, n) = (client.rank().0, client.size());
    let (next, prev) = (Rank((me + 1) % n), Rank((me + n - 1) % n));
    let refused = u32::from(rgex::reserved::REFUSED);
    let before = client.endpoint().malformed_messages();
    let marked = next_mark(prev);
    client.barrier()?;
    // As a request, from this rank to the next.
    client.endpoint().forge_request(
        next,
        refused as u8,
        Category::Short,
        &[u32::from(MARK), 0],
        &[],
        0,
        Flags::empty(),
    )?;
    client
        .endpoint()
        .request_short(next, HandlerId::forge(MARK), &[], Flags::empty())?;
    // As replies from the next rank: an unregistered index, then a
    // registered one with a category code that names none.
    for args in [[200, 0], [u32::from(MARK), 9]] {
        client.endpoint().request_short(
            next,
            HandlerId::forge(FORGE_REPLY),
            &[1, refused, 0, 0, args[0], args[1]],
            Flags::empty(),
        )?;
    }
    let echoes = ECHOES.load(Ordering::Acquire);
    client
        .endpoint()
        .request_short(next, HandlerId::forge(ECHO), &[], Flags::empty())?;
    let errors = poll_until(client, "the echo after the forged refusals", || {
        ECHOES.load(Ordering::Acquire) > echoes && marks(prev) >= marked
    });
    only_malformed(client, "forged refusals", &errors, &[next, prev]);
    assert_eq!(
        client.endpoint().malformed_messages() - before,
        3,
        "each forged refusal is one malformed message"
    );
    ok(
        client,
        "forged refusals are reported as malformed, never as a dropped message",
    );
    Ok(())
}

/// Check 5: random protocol messages, both ways between each rank and its
/// successor; every poll error a report of them; nothing panics.
fn fuzz(client: &Client) -> Res<()> {
    let (me, n) = (client.rank().0, client.size());
    let (next, prev) = (Rank((me + 1) % n), Rank((me + n - 1) % n));
    let seg_len = client.endpoint().conduit().segment_len(next);
    let mut rng = Rng::new(0xF022 + u64::from(me));
    let marked = next_mark(prev);
    let before = (
        client.endpoint().malformed_messages(),
        client.endpoint().dropped_messages(),
    );
    client.barrier()?;
    let mut errors = Vec::new();
    for i in 0..FUZZ / 2 {
        let f = Forged::random(&mut rng, client.endpoint().max_medium(next, 16), seg_len);
        let p = f.payload(&mut rng);
        client.endpoint().forge_request(
            next,
            f.index,
            f.category,
            &f.args,
            &p,
            f.long_offset,
            Flags::empty(),
        )?;
        client.endpoint().request_short(
            next,
            HandlerId::forge(FORGE_REPLY),
            &[0, i],
            Flags::empty(),
        )?;
        if i % 64 == 0 {
            if let Err(e) = client.endpoint().poll() {
                errors.push(e);
            }
        }
    }
    client
        .endpoint()
        .request_short(next, HandlerId::forge(MARK), &[], Flags::empty())?;
    let echoes = ECHOES.load(Ordering::Acquire);
    client
        .endpoint()
        .request_short(next, HandlerId::forge(ECHO), &[], Flags::empty())?;
    errors.extend(poll_until(client, "the fuzz's mark and echo", || {
        marks(prev) >= marked && ECHOES.load(Ordering::Acquire) > echoes
    }));
    // Reports: malformed messages (from either neighbour: replies to our
    // forged requests carry ids we never issued), and drops of messages
    // to indices nobody registered (refused requests, dropped replies).
    let mut malformed = 0;
    let mut dropped = 0;
    for e in &errors {
        match e {
            Error::Malformed { from, .. } if *from == next || *from == prev => malformed += 1,
            Error::Dropped { .. } => dropped += 1,
            other => panic!("{}: fuzz: unexpected error {other}", client.rank()),
        }
    }
    let seen = client.endpoint().malformed_messages() - before.0;
    assert!(
        seen > 0,
        "{FUZZ} random protocol messages and none was malformed"
    );
    println!(
        "{}: fuzz: {seen} malformed messages ignored, {} dropped; polls reported {malformed} and {dropped}; \
         {} forged crossings reached a client handler",
        client.rank(),
        client.endpoint().dropped_messages() - before.1,
        FORGED_CROSSINGS.load(Ordering::Relaxed)
    );
    ok(
        client,
        &format!("{FUZZ} random protocol messages per rank: reported, ignored, no panic"),
    );
    Ok(())
}

/// After the fuzz: AM, reference RMA, atomics, VIS and a reduction give
/// the right answers on every rank.
fn still_works(client: &Client, vis: &Vis, ad: &AtomicDomain<u64>) -> Res<()> {
    let (me, n) = (client.rank().0, client.size());
    let next = Rank((me + 1) % n);
    let (data_off, word_off) = (65536u64, 8192u64);
    let mine: Vec<u8> = (0..1000u32).map(|i| (i ^ (me * 31)) as u8).collect();
    client.endpoint().segment().write(data_off, &mine)?;
    client.endpoint().segment().write_u64(word_off, 0)?;
    client.barrier()?;
    let theirs: Vec<u8> = (0..1000u32).map(|i| (i ^ (next.0 * 31)) as u8).collect();
    // RMA by reference.
    let mut got = vec![0u8; 1000];
    client
        .endpoint()
        .get(&mut got, GlobalAddr::new(next, data_off), Flags::empty())?;
    assert_eq!(got, theirs, "reference get after the fuzz");
    client.endpoint().put(
        GlobalAddr::new(next, data_off + 2000),
        &mine,
        Flags::empty(),
    )?;
    // Atomics by reference: everyone adds its rank + 1 to rank 0's word.
    ad.op(
        GlobalAddr::new(Rank(0), word_off),
        AtomicOp::Fadd,
        u64::from(me) + 1,
        0,
        AtomicFlags::empty(),
    )?;
    // VIS over AM: two fragments of the successor's data.
    let frags = [(data_off, 100), (data_off + 500, 100)];
    let local = [(0, 100), (100, 100)];
    let mut two = vec![0u8; 200];
    vis.get(
        next,
        Vector {
            peer: &frags,
            local: &local,
        },
        &mut two,
        Flags::empty(),
    )?;
    assert_eq!(&two[..100], &theirs[..100]);
    assert_eq!(&two[100..], &theirs[500..600]);
    client.barrier()?;
    let prev = (me + n - 1) % n;
    let mut back = vec![0u8; 1000];
    client
        .endpoint()
        .segment()
        .read(data_off + 2000, &mut back)?;
    let put: Vec<u8> = (0..1000u32).map(|i| (i ^ (prev * 31)) as u8).collect();
    assert_eq!(back, put, "reference put after the fuzz");
    if me == 0 {
        let total = ad.op(
            GlobalAddr::new(Rank(0), word_off),
            AtomicOp::Get,
            0,
            0,
            AtomicFlags::empty(),
        )?;
        assert_eq!(
            total,
            u64::from(n) * u64::from(n + 1) / 2,
            "atomic sum after the fuzz"
        );
    }
    let sum = client
        .world()
        .allreduce(&[u64::from(me)], rgex::ReduceOp::Sum)?;
    assert_eq!(sum, [u64::from(n) * u64::from(n - 1) / 2]);
    ok(
        client,
        "after the fuzz: reference RMA, atomics, VIS and a reduction are right",
    );
    Ok(())
}
