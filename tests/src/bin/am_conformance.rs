//! Active-message conformance, run as every rank of a job (or alone).
//!
//! Covers: every category x request/reply x 0..16 arguments with payload
//! checksums (sizes 0, 1, max, random; Long up to 4 MiB), all ranks sending
//! to all ranks at once; token queries; negotiated payload (granted range,
//! in-place assembly, shorter commit, cancel, client buffer, Long, reply);
//! IMMEDIATE against a rank that does not poll; size queries symmetric;
//! bad input, each a clear error, with the job working afterwards; and no
//! shared-memory names left in /dev/shm once the job is up.

use rgex::{Category, Client, Error, Flags, HandlerId, Rank, CLIENT_MIN};
use rgex_tests::{
    arg_pattern, fill_pattern, mix, ok, pattern_mismatch, shm_leftovers, skip, wait_until,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Handler indices, in registration order (auto-assigned from CLIENT_MIN).
const ECHO_REQ: HandlerId = HandlerId::forge(CLIENT_MIN);
const ECHO_REP: HandlerId = HandlerId::forge(CLIENT_MIN + 1);
const NP_SINK: HandlerId = HandlerId::forge(CLIENT_MIN + 2);
const NP_REPLY_REQ: HandlerId = HandlerId::forge(CLIENT_MIN + 3);
const TWICE_REQ: HandlerId = HandlerId::forge(CLIENT_MIN + 4);
const FROMREP_REQ: HandlerId = HandlerId::forge(CLIENT_MIN + 5);
const FROMREP_REP: HandlerId = HandlerId::forge(CLIENT_MIN + 6);
const INHANDLER_REQ: HandlerId = HandlerId::forge(CLIENT_MIN + 7);
const IMM_SINK: HandlerId = HandlerId::forge(CLIENT_MIN + 8);
const BADLONG_REQ: HandlerId = HandlerId::forge(CLIENT_MIN + 9);
const MAXLONG_SINK: HandlerId = HandlerId::forge(CLIENT_MIN + 10);
/// The sequence number of the max_long Long's payload pattern.
const MAXLONG_SEQ: u32 = 0x10C;
/// Registered by index (`register_at`), away from the sequential ones.
const FIXED: HandlerId = HandlerId::forge(200);
/// What a FIXED request carries, xored with its sender's rank.
const FIXED_MAGIC: u32 = 0xF1_0ED0;
/// A handler that panics on one message of a flood (see `handler_panics`).
const MAY_PANIC: HandlerId = HandlerId::forge(210);
/// The flood's length, and the message (0-based) whose handler panics.
const PANIC_FLOOD: u32 = 200;
const PANIC_AT: u32 = 9;

#[derive(Default)]
struct State {
    /// Verified replies received.
    replies: AtomicU64,
    /// Negotiated-payload messages received, per source.
    np_got: Mutex<Vec<(u32, u32, usize)>>,
    /// IMMEDIATE messages received from rank 0, in order.
    imm_next: AtomicU64,
    /// Problems seen inside handlers (checked by main at the end).
    problems: Mutex<Vec<String>>,
    /// Errors returned to handlers for forbidden calls.
    handler_errors: Mutex<Vec<String>>,
    /// FIXED requests received.
    fixed: AtomicU64,
    /// The echo request this rank has in flight (category, arguments,
    /// payload bytes): its reply must match it (a request or reply that
    /// lost its arguments or payload would otherwise still verify).
    echo_sent: Mutex<Option<(Category, usize, usize)>>,
    /// Longs of max_long bytes received (sender, length), verified.
    max_long_got: Mutex<Vec<(u32, usize)>>,
    /// Messages the `may.fail` handler accepted (returned `Ok`).
    may_fail_ok: AtomicU64,
    /// Messages the `may.panic` handler ran to their end, and the next
    /// sequence number it expects (messages from one sender arrive in
    /// order on every conduit).
    may_panic_ok: AtomicU64,
    may_panic_next: AtomicU64,
}

impl State {
    fn problem(&self, p: String) {
        self.problems.lock().unwrap().push(p);
    }
}

fn cat_code(c: Category) -> u32 {
    match c {
        Category::Short => 1,
        Category::Medium => 2,
        Category::Long => 3,
    }
}

/// Pattern seed of one test message: derived from what the receiver can
/// see (category, argument count, length), so it can check everything.
fn seed(c: Category, nargs: usize, len: usize) -> u32 {
    mix(cat_code(c), nargs as u32, len as u32)
}

/// Where Long requests from `src` land, and Long replies from `replier`.
struct LongAreas {
    slot: u64,
    size: u32,
}

/// The job's Long areas, computed from the job's size at first use (in a
/// handler, which may run before this rank's init returns, or in main):
/// the size comes from the endpoint, whichever bootstrap started the job.
#[derive(Default)]
struct Areas(std::sync::OnceLock<LongAreas>);

impl Areas {
    fn get(&self, ep: &rgex::Endpoint) -> &LongAreas {
        self.0.get_or_init(|| {
            let seg = ep.segment().len() as u64;
            let size = ep.size();
            let slot = ((seg / (2 * u64::from(size))).min((4 << 20) + 64) - 64) & !63;
            LongAreas { slot, size }
        })
    }
}

impl LongAreas {
    fn request(&self, src: u32) -> u64 {
        3 + self.slot * src as u64
    }
    fn reply(&self, replier: u32) -> u64 {
        3 + self.slot * (self.size + replier) as u64
    }
    fn max_len(&self) -> usize {
        (self.slot - 64) as usize
    }
}

fn verify(state: &State, who: &str, src: u32, c: Category, args: &[u32], payload: &[u8]) {
    let s = seed(c, args.len(), payload.len());
    if args != arg_pattern(src, s, args.len()).as_slice() {
        state.problem(format!(
            "{who}: {c} from rank {src} with {} args: arguments differ",
            args.len()
        ));
    }
    if let Some(j) = pattern_mismatch(payload, src, s) {
        state.problem(format!(
            "{who}: {c} from rank {src}: payload of {} bytes differs at byte {j}",
            payload.len()
        ));
    }
}

/// Register the handlers; returns the id of `may.fail` (which returns
/// `Err` for an odd argument), the one handler checked by the id
/// registration gave it rather than by a fixed index.
fn register(t: &rgex::HandlerTable, st: &Arc<State>, areas: Arc<Areas>) -> rgex::Result<HandlerId> {
    let s = st.clone();
    let a = areas.clone();
    t.register("echo.req", move |tok, msg| {
        if !tok.is_request() || tok.handler() != ECHO_REQ {
            s.problem(format!(
                "echo.req: token says request={} handler={:?}",
                tok.is_request(),
                tok.handler()
            ));
        }
        verify(
            &s,
            "echo.req",
            tok.src().0,
            msg.category(),
            msg.args(),
            msg.payload(),
        );
        let me = tok.endpoint().rank().0;
        let c = msg.category();
        let n = msg.payload().len();
        let args = arg_pattern(me, seed(c, msg.args().len(), n), msg.args().len());
        let mut payload = vec![0u8; n];
        fill_pattern(&mut payload, me, seed(c, args.len(), n));
        let r = match c {
            Category::Short => tok.reply_short(ECHO_REP, &args, Flags::empty()),
            Category::Medium => tok.reply_medium(ECHO_REP, &args, &payload, Flags::empty()),
            Category::Long => {
                let at = a.get(tok.endpoint()).reply(me);
                tok.reply_long(ECHO_REP, &args, &payload, at, Flags::empty())
            }
        };
        if let Err(e) = r {
            s.problem(format!("echo.req: reply failed: {e}"));
        }
    })?;
    let s = st.clone();
    let a = areas;
    t.register("echo.rep", move |tok, msg| {
        if tok.is_request() || tok.handler() != ECHO_REP {
            s.problem(format!(
                "echo.rep: token says request={} handler={:?}",
                tok.is_request(),
                tok.handler()
            ));
        }
        verify(
            &s,
            "echo.rep",
            tok.src().0,
            msg.category(),
            msg.args(),
            msg.payload(),
        );
        let got = (msg.category(), msg.args().len(), msg.payload().len());
        if let Some(sent) = *s.echo_sent.lock().unwrap() {
            if got != sent {
                s.problem(format!(
                    "echo.rep: {got:?} (category, arguments, bytes) came back for {sent:?} sent"
                ));
            }
        }
        if msg.category() == Category::Long
            && msg.long_offset() != a.get(tok.endpoint()).reply(tok.src().0)
        {
            s.problem(format!("echo.rep: Long landed at {:#x}", msg.long_offset()));
        }
        s.replies.fetch_add(1, Ordering::Release);
    })?;
    let s = st.clone();
    t.register("np.sink", move |tok, msg| {
        // args: [seed, len]
        let (sd, len) = (msg.arg(0), msg.arg(1) as usize);
        if msg.payload().len() != len {
            s.problem(format!(
                "np.sink: {} bytes arrived, {len} committed",
                msg.payload().len()
            ));
        } else if let Some(j) = pattern_mismatch(msg.payload(), tok.src().0, sd) {
            s.problem(format!(
                "np.sink: payload from {} differs at byte {j}",
                tok.src()
            ));
        }
        s.np_got.lock().unwrap().push((tok.src().0, sd, len));
    })?;
    let s = st.clone();
    t.register("np.reply.req", move |tok, msg| {
        let me = tok.endpoint().rank().0;
        // No arguments: a Medium reply (seed 77); [offset]: a Long reply
        // landing there in the requester's segment (seed 78).
        let r = match msg.args() {
            &[off] => tok.prepare_reply_long(None, 100, 3000, 2, u64::from(off), Flags::empty()),
            _ => tok.prepare_reply_medium(None, 8, 64, 2, Flags::empty()),
        }
        .and_then(|sd| {
            // A flag that cannot apply at commit is refused, and the token
            // may prepare its reply again.
            match sd.commit_with(NP_SINK, &[0, 0], 0, Flags::from_bits_retain(1 << 6)) {
                Err(Error::FlagsNotApplicable { flags: 0x40, .. }) => Ok(()),
                other => Err(Error::Failed(format!(
                    "a reply's commit with flag 0x40 gave {other:?}, not FlagsNotApplicable"
                ))),
            }
        })
        .and_then(|()| match msg.args() {
            &[off] => tok.prepare_reply_long(None, 100, 3000, 2, u64::from(off), Flags::empty()),
            _ => tok.prepare_reply_medium(None, 8, 64, 2, Flags::empty()),
        })
        .and_then(|mut sd| {
            let n = sd.len();
            let seed = if msg.args().is_empty() { 77 } else { 78 };
            fill_pattern(&mut sd.buf()[..n], me, seed);
            // IMMEDIATE at commit, on a reply (issue 28 point 5).
            sd.commit_with(NP_SINK, &[seed, n as u32], n, Flags::IMMEDIATE)
        });
        if let Err(e) = r {
            s.problem(format!("np.reply.req: {e}"));
        }
    })?;
    let s = st.clone();
    t.register("twice.req", move |tok, _msg| {
        let first = tok.reply_short(ECHO_REP, &[], Flags::empty());
        let second = tok.reply_short(ECHO_REP, &[], Flags::empty());
        match (first, second) {
            (Ok(()), Err(e)) => s.handler_errors.lock().unwrap().push(e.to_string()),
            other => s.problem(format!("twice.req: replies gave {other:?}")),
        }
    })?;
    t.register("fromrep.req", move |tok, _msg| {
        tok.reply_short(FROMREP_REP, &[], Flags::empty())
            .expect("first reply");
    })?;
    let s = st.clone();
    t.register("fromrep.rep", move |tok, _msg| {
        match tok.reply_short(ECHO_REP, &[], Flags::empty()) {
            Err(e) => s.handler_errors.lock().unwrap().push(e.to_string()),
            Ok(()) => s.problem("fromrep.rep: a reply handler was allowed to reply".into()),
        }
        s.replies.fetch_add(1, Ordering::Release);
    })?;
    let s = st.clone();
    t.register("inhandler.req", move |tok, _msg| {
        match tok
            .endpoint()
            .request_short(tok.src(), ECHO_REQ, &[], Flags::empty())
        {
            Err(e) => s.handler_errors.lock().unwrap().push(e.to_string()),
            Ok(()) => s.problem("inhandler.req: a handler was allowed to send a request".into()),
        }
        match tok.endpoint().poll() {
            Err(e) => s.handler_errors.lock().unwrap().push(e.to_string()),
            Ok(_) => s.problem("inhandler.req: a handler was allowed to poll".into()),
        }
        tok.reply_short(ECHO_REP, &[], Flags::empty())
            .expect("reply");
    })?;
    let s = st.clone();
    t.register("imm.sink", move |_tok, msg| {
        let want = s.imm_next.load(Ordering::Relaxed);
        if u64::from(msg.arg(0)) != want {
            s.problem(format!(
                "imm.sink: got message {} where {want} was next",
                msg.arg(0)
            ));
        }
        // A Medium's payload is its number's low byte, throughout.
        if msg.payload().iter().any(|&b| b != msg.arg(0) as u8) {
            s.problem(format!("imm.sink: message {} damaged", msg.arg(0)));
        }
        s.imm_next.store(want + 1, Ordering::Release);
    })?;
    let s = st.clone();
    t.register("badlong.req", move |tok, _msg| {
        // Long replies outside the requester's segment, fixed and
        // negotiated: each refused (and not counted as the reply).
        let f = Flags::empty();
        let seg = tok.endpoint().conduit().segment_len(tok.src());
        for at in [seg - 4, u64::MAX - 3] {
            let tries = [
                ("reply_long", tok.reply_long(ECHO_REP, &[], &[0; 8], at, f)),
                (
                    "prepare_reply_long",
                    tok.prepare_reply_long(None, 8, 8, 0, at, f).map(drop),
                ),
            ];
            for (what, r) in tries {
                match r {
                    Err(e) => s
                        .handler_errors
                        .lock()
                        .unwrap()
                        .push(format!("badlong.req {what} at {at:#x}: {e}")),
                    Ok(()) => s.problem(format!("badlong.req: {what} at {at:#x} was accepted")),
                }
            }
        }
        tok.reply_short(ECHO_REP, &[], f).expect("reply");
    })?;
    let s = st.clone();
    t.register("maxlong.sink", move |tok, msg| {
        let src = tok.src().0;
        if msg.category() != Category::Long || msg.long_offset() != 0 {
            s.problem(format!(
                "maxlong.sink: from rank {src}: a {:?} at {:#x}, not a Long at offset 0",
                msg.category(),
                msg.long_offset()
            ));
        }
        if let Some(j) = pattern_mismatch(msg.payload(), src, MAXLONG_SEQ) {
            s.problem(format!(
                "maxlong.sink: the Long of {} bytes from rank {src} differs at byte {j}",
                msg.payload().len()
            ));
        }
        s.max_long_got
            .lock()
            .unwrap()
            .push((src, msg.payload().len()));
    })?;
    let s = st.clone();
    let id = t.register_at(FIXED.index(), "fixed.index", move |tok, msg| {
        if tok.handler() != FIXED || msg.args() != [tok.src().0 ^ FIXED_MAGIC] {
            s.problem(format!(
                "fixed.index: handler {:?}, args {:?} from {}",
                tok.handler(),
                msg.args(),
                tok.src()
            ));
        }
        s.fixed.fetch_add(1, Ordering::Release);
    })?;
    assert_eq!(id, FIXED);
    let s = st.clone();
    t.register_at(MAY_PANIC.index(), "may.panic", move |_tok, msg| {
        let k = u64::from(msg.arg(0));
        let expected = s.may_panic_next.swap(k + 1, Ordering::Relaxed);
        if k != expected {
            s.problem(format!(
                "may.panic: message {k} arrived, {expected} was next"
            ));
        }
        if msg.arg(0) == PANIC_AT {
            panic!("deliberate panic in may.panic (message {PANIC_AT} of {PANIC_FLOOD})");
        }
        s.may_panic_ok.fetch_add(1, Ordering::Release);
    })?;
    let s = st.clone();
    t.register("may.fail", move |_tok, msg| {
        if msg.arg(0) % 2 == 1 {
            return Err(format!("odd argument {}", msg.arg(0)));
        }
        s.may_fail_ok.fetch_add(1, Ordering::Release);
        Ok(())
    })
}

fn main() -> rgex::Result<()> {
    let st = Arc::new(State::default());
    let areas = Arc::new(Areas::default());
    let (client, may_fail) = rgex::init_with(|t| register(t, &st, areas.clone()))?;
    let areas = areas.get(client.endpoint());
    rgex_tests::conduit_banner(&client);
    assert_eq!(
        client.endpoint().handlers().name(IMM_SINK.index()),
        "imm.sink"
    );
    assert_eq!(
        client.endpoint().handlers().name(MAXLONG_SINK.index()),
        "maxlong.sink"
    );

    if let Ok(job) = std::env::var("RGEX_JOB") {
        let left = shm_leftovers(&job);
        assert!(
            left.is_empty(),
            "shared-memory names still in /dev/shm after init: {left:?}"
        );
        ok(
            &client,
            "no shared-memory names left in /dev/shm once the job is up",
        );
    } else {
        skip(
            &client,
            "no shared-memory names left in /dev/shm once the job is up",
            "no RGEX_JOB (not started by rgex-run), so no job id to look for",
        );
    }
    let limits = queries(&client)?;
    fixed_index(&client, &st)?;
    unmatched_tables(&client)?;
    handler_errors(&client, &st, may_fail)?;
    handler_panics(&client, &st)?;
    every_category(&client, &st, areas, true)?;
    negotiated_payload(&client, &st)?;
    bad_input(&client, &st)?;
    immediate(&client, &st)?;
    // The job keeps working after all of the above, with the same limits.
    // Every category and argument count again, without the area-sized
    // Longs (4 MiB) and their replies, which were most of this pass's
    // time on scc: the Long of max_long bytes below is the large one
    // after the bad input.
    every_category(&client, &st, areas, false)?;
    assert_eq!(
        queries(&client)?,
        limits,
        "max Medium / max Long changed during the job"
    );
    max_long_fills_the_segment(&client, &st)?;
    let problems = st.problems.lock().unwrap();
    assert!(
        problems.is_empty(),
        "{}: problems seen in handlers:\n{}",
        client.rank(),
        problems.join("\n")
    );
    client.barrier()?;
    ok(
        &client,
        "all active-message checks passed; the job still works after the bad input",
    );
    Ok(())
}

/// The max Medium and max Long to every rank for 0..=16 arguments: at
/// least 512 and non-increasing in the argument count; max Medium
/// symmetric: what rank a may send to rank b, b may send to a (so a reply
/// can carry what its request did), whatever sits between them (a job
/// spanning nodes has other limits to node-local peers than to remote
/// ones); max Long what fits the peer's segment (its length, within the
/// 32-bit length of a conduit's header). Returns them,
/// so that a later call can check they did not change.
fn queries(client: &Client) -> rgex::Result<Vec<u8>> {
    let n = client.size();
    let (mut mine, mut mediums) = (Vec::new(), Vec::new());
    for p in 0..n {
        let (mut last_medium, mut last_long) = (usize::MAX, usize::MAX);
        let seg = client.endpoint().conduit().segment_len(Rank(p));
        for nargs in 0..=16 {
            let m = client.endpoint().max_medium(Rank(p), nargs);
            let l = client.endpoint().max_long(Rank(p), nargs);
            assert_eq!(
                l as u64,
                seg.min(u64::from(u32::MAX)),
                "max Long to rank {p} with {nargs} args is not what fits its segment of {seg} bytes"
            );
            assert!(
                m >= 512 && l >= 512,
                "max Medium / max Long to rank {p} with {nargs} args: {m} / {l}, below 512"
            );
            assert!(m <= last_medium, "max Medium grows with the argument count");
            assert!(l <= last_long, "max Long grows with the argument count");
            (last_medium, last_long) = (m, l);
            mine.extend_from_slice(&(m as u64).to_le_bytes());
            mine.extend_from_slice(&(l as u64).to_le_bytes());
            mediums.extend_from_slice(&(m as u64).to_le_bytes());
        }
    }
    let all = client
        .endpoint()
        .conduit()
        .bootstrap()
        .allgather(&mediums)?;
    // Each rank's row: per peer, max Medium for every argument count.
    let per_peer = mediums.len() / n as usize;
    let to = |a: usize, b: usize| &all[a][b * per_peer..(b + 1) * per_peer];
    for a in 0..n as usize {
        for b in 0..n as usize {
            assert!(
                to(a, b) == to(b, a),
                "max Medium is not symmetric: rank {a} to rank {b} differs from rank {b} to rank {a}"
            );
        }
    }
    let by_peer: Vec<usize> = (0..n)
        .map(|p| client.endpoint().max_medium(Rank(p), 0))
        .collect();
    ok(
        client,
        &format!("max Medium / max Long: >= 512, non-increasing in the argument count, max Medium symmetric, max Long the peer's segment (max Medium with no arguments, by peer: {by_peer:?})"),
    );
    lub_queries(client);
    Ok(mine)
}

/// The least upper bounds: for every argument count, no peer's limit is
/// below them and some peer's limit is exactly them (so they are the
/// minimum: neither a peer's own limit above it nor anything lower).
fn lub_queries(client: &Client) {
    let ep = client.endpoint();
    for nargs in 0..=16 {
        let (m, l) = (ep.lub_max_medium(nargs), ep.lub_max_long(nargs));
        let mediums: Vec<usize> = (0..ep.size())
            .map(|p| ep.max_medium(Rank(p), nargs))
            .collect();
        let longs: Vec<usize> = (0..ep.size())
            .map(|p| ep.max_long(Rank(p), nargs))
            .collect();
        for (what, lub, limits) in [("Medium", m, &mediums), ("Long", l, &longs)] {
            assert!(
                limits.iter().all(|&x| lub <= x) && limits.contains(&lub),
                "lub_max_{what} with {nargs} args is {lub}, not the least of the peers' {limits:?}"
            );
        }
    }
    ok(
        client,
        &format!(
            "lub_max_medium / lub_max_long: the least of every peer's limit ({} / {} with no arguments)",
            ep.lub_max_medium(0),
            ep.lub_max_long(0)
        ),
    );
}

/// A Long of max_long bytes at offset 0 fills the next rank's segment and
/// arrives whole; one byte more is refused before anything is sent, by the
/// fixed and the negotiated forms, naming the peer and its segment's size.
/// (Run last: it overwrites every segment.)
fn max_long_fills_the_segment(client: &Client, st: &State) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let dest = Rank((me + 1) % n);
    let max = client.endpoint().max_long(dest, 1);
    let seg = client.endpoint().conduit().segment_len(dest);
    let mut buf = vec![0u8; max + 1];
    fill_pattern(&mut buf[..max], me, MAXLONG_SEQ);
    let f = Flags::empty();
    let refusals = [
        (
            "request_long",
            client
                .endpoint()
                .request_long(dest, MAXLONG_SINK, &[me], &buf, 0, f),
        ),
        (
            "prepare_request_long",
            client
                .endpoint()
                .prepare_request_long(dest, None, max + 1, max + 1, 1, 0, f)
                .map(drop),
        ),
    ];
    for (what, r) in refusals {
        let e = r.expect_err("a Long of max_long + 1 bytes at offset 0 is refused");
        let t = e.to_string();
        assert!(
            t.contains(&dest.to_string()) && t.contains(&format!("{seg:#x} bytes")),
            "{what} of {} bytes to {dest}: the error names neither the peer nor its segment: {t}",
            max + 1
        );
    }
    // Every rank is done with the segments before they are overwritten.
    client.barrier()?;
    client
        .endpoint()
        .request_long(dest, MAXLONG_SINK, &[me], &buf[..max], 0, f)?;
    let from = (me + n - 1) % n;
    let want = client.endpoint().max_long(client.rank(), 1);
    wait_until(client, "a Long of max_long bytes", || {
        !st.max_long_got.lock().unwrap().is_empty()
    });
    assert_eq!(
        *st.max_long_got.lock().unwrap(),
        [(from, want)],
        "{}: the Long of max_long bytes",
        client.rank()
    );
    client.barrier()?;
    ok(
        client,
        &format!("a Long of max_long ({max}) bytes at offset 0 fills the peer's segment and arrives whole; one byte more is refused, naming the peer and its segment's size"),
    );
    Ok(())
}

/// A handler registered by index (`register_at`) is reached by that
/// index from every rank, itself included, and named in the table.
fn fixed_index(client: &Client, st: &State) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    assert_eq!(
        client.endpoint().handlers().name(FIXED.index()),
        "fixed.index"
    );
    for p in 0..n {
        client
            .endpoint()
            .request_short(Rank(p), FIXED, &[me ^ FIXED_MAGIC], Flags::empty())?;
    }
    wait_until(client, "a FIXED request from every rank", || {
        st.fixed.load(Ordering::Acquire) == u64::from(n)
    });
    client.barrier()?;
    ok(
        client,
        "a handler registered at index 200 is reached by that index from every rank",
    );
    Ok(())
}

/// Poll until `poll` reports an error (at most a minute: a refusal lost
/// would otherwise hang here, as the sender used to).
fn poll_for_error(client: &Client, what: &str) -> Error {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Err(e) = client.endpoint().poll() {
            return e;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{}: no error reported for {what} within a minute",
            client.rank()
        );
        std::thread::yield_now();
    }
}

/// A handler that returns `Err` has its error reported by the rank that
/// ran it, from that rank's poll, naming the handler and the sender, once
/// each, and counted; the messages it accepted ran as usual.
fn handler_errors(client: &Client, st: &State, may_fail: HandlerId) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let (right, left) = (Rank((me + 1) % n), Rank((me + n - 1) % n));
    for k in 0..4 {
        client
            .endpoint()
            .request_short(right, may_fail, &[k], Flags::empty())?;
    }
    let mut why = Vec::new();
    for _ in 0..2 {
        match poll_for_error(client, "a may.fail handler's error") {
            Error::HandlerFailed {
                from,
                to,
                handler,
                index,
                why: w,
            } => {
                assert_eq!(
                    (from, to, handler.as_str(), index),
                    (left, client.rank(), "may.fail", may_fail.index()),
                    "{}: the error names the wrong message: {w}",
                    client.rank()
                );
                why.push(w);
            }
            other => panic!("{}: expected may.fail's error, got {other}", client.rank()),
        }
    }
    why.sort();
    assert_eq!(why, ["odd argument 1", "odd argument 3"]);
    wait_until(client, "may.fail's two accepted messages", || {
        st.may_fail_ok.load(Ordering::Acquire) == 2
    });
    assert_eq!(
        client.endpoint().handler_errors(),
        2,
        "{}: handler_errors",
        client.rank()
    );
    // Reported once each: nothing more comes back.
    client.barrier()?;
    assert!(
        client.endpoint().poll().is_ok(),
        "{}: a handler error was reported twice",
        client.rank()
    );
    ok(
        client,
        "a handler's Err is reported by its rank's poll with the handler's name and the sender, once each",
    );
    Ok(())
}

/// A handler that panics (on the 10th of 200 IMMEDIATE Shorts from one
/// sender) is reported like one that returns `Err`: by its rank's poll,
/// naming the handler, the sender and the panic, once; the panic never
/// leaves the poll, and every later message is delivered (a panic that
/// unwound through the conduit's delivery left its queue cell unreleased
/// and wedged the sender).
fn handler_panics(client: &Client, st: &State) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let (right, left) = (Rank((me + 1) % n), Rank((me + n - 1) % n));
    // Every rank done with the check before (whose last poll must find
    // nothing of this one).
    client.barrier()?;
    let start = std::time::Instant::now();
    let mut errors = Vec::new();
    let poll = |errors: &mut Vec<Error>| {
        // What a runtime with its own panic policy does: catch around poll.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| client.endpoint().poll())) {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => errors.push(e),
            Err(_) => panic!("{}: a handler's panic unwound out of poll", client.rank()),
        }
        assert!(
            start.elapsed() < rgex_tests::HANG_LIMIT,
            "{}: the panic flood is stuck after {:?}: {} of {} messages ran",
            client.rank(),
            rgex_tests::HANG_LIMIT,
            st.may_panic_ok.load(Ordering::Acquire),
            PANIC_FLOOD - 1
        );
    };
    for k in 0..PANIC_FLOOD {
        loop {
            match client
                .endpoint()
                .request_short(right, MAY_PANIC, &[k], Flags::IMMEDIATE)
            {
                Ok(()) => break,
                Err(e) if e.is_would_block() => poll(&mut errors),
                Err(e) => return Err(e),
            }
        }
    }
    while st.may_panic_ok.load(Ordering::Acquire) < u64::from(PANIC_FLOOD - 1) || errors.is_empty()
    {
        poll(&mut errors);
    }
    client.barrier()?;
    poll(&mut errors);
    assert_eq!(
        st.may_panic_ok.load(Ordering::Acquire),
        u64::from(PANIC_FLOOD - 1),
        "{}: may.panic ran to its end a wrong number of times",
        client.rank()
    );
    match &errors[..] {
        [Error::HandlerFailed {
            from,
            to,
            handler,
            index,
            why,
        }] => {
            assert_eq!(
                (*from, *to, handler.as_str(), *index),
                (left, client.rank(), "may.panic", MAY_PANIC.index()),
                "{}: the report names the wrong message: {why}",
                client.rank()
            );
            assert!(
                why.contains("panicked: deliberate panic in may.panic (message 9 of 200)"),
                "{}: {why}",
                client.rank()
            );
        }
        other => panic!(
            "{}: expected one report of may.panic's panic, got {other:?}",
            client.rank()
        ),
    }
    assert_eq!(
        client.endpoint().handler_errors(),
        3,
        "{}: handler_errors",
        client.rank()
    );
    ok(
        client,
        "a handler's panic is reported by its rank's poll (handler, sender, message), once, and the 190 messages after it are all delivered",
    );
    Ok(())
}

/// Handler tables that differ between ranks (one registered an index the
/// other did not): the dropped message is reported to the rank that
/// waits for it, by its next poll, instead of leaving it waiting.
fn unmatched_tables(client: &Client) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    if n < 2 {
        skip(
            client,
            "unmatched handler tables",
            "one rank: every message is to itself",
        );
        return Ok(());
    }
    // Rank 0 has 201 and 203; rank 1 has 203, which replies to 202, and 202.
    let (req_only0, ask, rep_only1) = (
        HandlerId::forge(201),
        HandlerId::forge(203),
        HandlerId::forge(202),
    );
    let t = client.endpoint().handlers();
    match me {
        0 => {
            t.register_at(req_only0.index(), "unmatched.only0", |_t, _m| {})?;
            t.register_at(ask.index(), "unmatched.ask", |_t, _m| {})?;
        }
        1 => {
            t.register_at(rep_only1.index(), "unmatched.only1", |_t, _m| {})?;
            t.register_at(ask.index(), "unmatched.ask", move |tok, _m| {
                tok.reply_short(rep_only1, &[], Flags::empty())
                    .expect("reply");
            })?;
        }
        _ => {}
    }
    client.barrier()?;
    if me == 0 {
        // A request rank 1 cannot run: rank 1 tells us.
        client
            .endpoint()
            .request_short(Rank(1), req_only0, &[7], Flags::empty())?;
        let e = poll_for_error(client, "a request rank 1 has no handler for");
        assert!(
            matches!(e, Error::Dropped { from, to, index: 201, .. } if from == Rank(0) && to == Rank(1)),
            "{e}"
        );
        let s = e.to_string();
        assert!(
            s.contains("an AM Short request from rank 0 to rank 1") && s.contains("index 201"),
            "{s}"
        );
        // A reply we cannot run: our own poll says so.
        client
            .endpoint()
            .request_short(Rank(1), ask, &[], Flags::empty())?;
        let e = poll_for_error(client, "a reply rank 0 has no handler for");
        assert!(
            matches!(e, Error::Dropped { from, to, index: 202, .. } if from == Rank(1) && to == Rank(0)),
            "{e}"
        );
        assert!(e.to_string().contains("an AM Short reply"), "{e}");
        // Each is reported once: a while of polls finds nothing more.
        for _ in 0..1000 {
            client.endpoint().poll()?;
            std::thread::yield_now();
        }
        assert_eq!(client.endpoint().dropped_messages(), 1);
    }
    client.barrier()?;
    if me == 1 {
        assert_eq!(client.endpoint().dropped_messages(), 1);
    }
    ok(
        client,
        "unmatched handler tables: a request the receiver has no handler for, and such a reply, are reported by the next poll of the rank waiting for them (Error::Dropped, naming both ranks and the index), once each",
    );
    Ok(())
}

/// Every category x request/reply x 0..16 arguments from every rank to
/// every rank, each reply the size of its request; with `largest`, a Long
/// filling the sender's area (4 MiB, less in a job whose segments hold
/// fewer) for 0, 8 and 16 arguments too.
fn every_category(
    client: &Client,
    st: &State,
    areas: &LongAreas,
    largest: bool,
) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let mut rng = mix(me, 99, 7);
    let mut rand = move |below: usize| {
        rng = mix(rng, 1, 2);
        rng as usize % below.max(1)
    };
    let mut expected = st.replies.load(Ordering::Acquire);
    for k in 1..=n {
        let dest = Rank((me + k) % n);
        for c in [Category::Short, Category::Medium, Category::Long] {
            for nargs in 0..=16usize {
                let sizes: Vec<usize> = match c {
                    Category::Short => vec![0],
                    Category::Medium => {
                        let max = client.endpoint().max_medium(dest, nargs);
                        vec![0, 1, max, 1 + rand(max)]
                    }
                    Category::Long => {
                        let mut v = vec![0, 1, 1 + rand(70_000)];
                        if largest && nargs % 8 == 0 {
                            v.push(areas.max_len());
                        }
                        v
                    }
                };
                for len in sizes {
                    let s = seed(c, nargs, len);
                    let args = arg_pattern(me, s, nargs);
                    let mut payload = vec![0u8; len];
                    fill_pattern(&mut payload, me, s);
                    *st.echo_sent.lock().unwrap() = Some((c, nargs, len));
                    match c {
                        Category::Short => client.endpoint().request_short(
                            dest,
                            ECHO_REQ,
                            &args,
                            Flags::empty(),
                        )?,
                        Category::Medium => client.endpoint().request_medium(
                            dest,
                            ECHO_REQ,
                            &args,
                            &payload,
                            Flags::empty(),
                        )?,
                        Category::Long => client.endpoint().request_long(
                            dest,
                            ECHO_REQ,
                            &args,
                            &payload,
                            areas.request(me),
                            Flags::empty(),
                        )?,
                    }
                    expected += 1;
                    wait_until(client, "an echo reply", || {
                        st.replies.load(Ordering::Acquire) >= expected
                    });
                }
            }
        }
    }
    *st.echo_sent.lock().unwrap() = None;
    client.barrier()?;
    let longest = if largest { "4 MiB" } else { "70 kB" };
    ok(client, &format!("Short/Medium/Long x request/reply x 0..16 args, sizes 0, 1, max, random (Long to {longest}), all ranks at once, each reply the size of its request"));
    Ok(())
}

fn negotiated_payload(client: &Client, st: &State) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let dest = Rank((me + 1) % n);
    let max = client.endpoint().max_medium(dest, 2);
    let mut committed = Vec::new();

    // rgex's buffer, assembled in place, committed shorter than granted.
    let mut sd =
        client
            .endpoint()
            .prepare_request_medium(dest, None, 10, 100, 2, Flags::empty())?;
    assert!(!sd.is_client_buffer());
    let g = sd.len();
    assert!((10..=100).contains(&g), "granted {g} outside [10, 100]");
    let len = g - 3;
    fill_pattern(&mut sd.buf()[..len], me, 1);
    sd.commit(NP_SINK, &[1, len as u32], len)?;
    committed.push(len);

    // most above the limit: granted is clamped, never below least.
    let mut sd =
        client
            .endpoint()
            .prepare_request_medium(dest, None, 512, max + 4096, 2, Flags::empty())?;
    let g = sd.len();
    assert!((512..=max).contains(&g), "granted {g} outside [512, {max}]");
    fill_pattern(sd.buf(), me, 2);
    sd.commit(NP_SINK, &[2, g as u32], g)?;
    committed.push(g);

    // The client's buffer.
    let mut mine = vec![0u8; 300];
    let mut sd = client.endpoint().prepare_request_medium(
        dest,
        Some(&mut mine),
        50,
        1000,
        2,
        Flags::empty(),
    )?;
    assert!(sd.is_client_buffer());
    let g = sd.len();
    assert!(
        (50..=300).contains(&g),
        "granted {g} outside [50, 300] for a 300-byte client buffer"
    );
    fill_pattern(sd.buf(), me, 3);
    sd.commit(NP_SINK, &[3, g as u32], g)?;
    committed.push(g);

    // Flags at commit (issue 28 point 5): IMMEDIATE is accepted (every
    // commit returns at once: the prepare claimed everything, and
    // IMMEDIATE there is what fails fast), on a message prepared with it.
    // (The prepare may rightly say would-block while earlier messages
    // fill the peer's queue: poll and retry, bounded.)
    let mut tries = 0u64;
    let mut sd = loop {
        match client
            .endpoint()
            .prepare_request_medium(dest, None, 16, 16, 2, Flags::IMMEDIATE)
        {
            Ok(sd) => break sd,
            Err(Error::WouldBlock { .. }) if tries < 10_000_000 => {
                tries += 1;
                client.endpoint().poll()?;
            }
            Err(e) => return Err(e),
        }
    };
    fill_pattern(sd.buf(), me, 5);
    sd.commit_with(NP_SINK, &[5, 16], 16, Flags::IMMEDIATE)?;
    committed.push(16);
    // A flag that cannot apply at commit is refused, naming it, the rank
    // and the peer, and gives back what the prepare held (more times than
    // any queue or window holds; the messages below still go through).
    let bogus = Flags::from_bits_retain(1 << 7);
    for _ in 0..200 {
        let sd = client
            .endpoint()
            .prepare_request_medium(dest, None, 1, 64, 2, Flags::empty())?;
        let e = sd
            .commit_with(NP_SINK, &[9, 0], 0, bogus | Flags::IMMEDIATE)
            .unwrap_err();
        assert!(
            matches!(e, Error::FlagsNotApplicable { flags: 0x80, peer, .. } if peer == dest)
                && e.to_string().contains("0x80")
                && e.to_string().contains(&format!("{dest}")),
            "{e}"
        );
    }

    // Cancel, drop, a too-long commit and a commit to an unknown handler
    // all leave no trace at the receiver, and give back what they held:
    // many more of them than any conduit's send window or queue depth
    // (ofi's RGEX_OFI_WINDOW, smp's ring), then the messages below must
    // still go through.
    for i in 0..500 {
        let sd = client
            .endpoint()
            .prepare_request_medium(dest, None, 1, 64, 2, Flags::empty())?;
        if i % 2 == 0 {
            sd.cancel();
        } else {
            drop(sd);
        }
        let sd = client.endpoint().prepare_request_long(
            dest,
            None,
            1,
            64,
            2,
            1 << 20,
            Flags::empty(),
        )?;
        sd.cancel();
    }
    let sd = client
        .endpoint()
        .prepare_request_medium(dest, None, 1, 64, 2, Flags::empty())?;
    let g = sd.len();
    let e = sd.commit(NP_SINK, &[9, 0], g + 1).unwrap_err();
    assert!(matches!(e, Error::BadLength { .. }), "{e}");
    let sd = client
        .endpoint()
        .prepare_request_medium(dest, None, 1, 64, 2, Flags::empty())?;
    let e = sd.commit(HandlerId::forge(251), &[9, 0], 0).unwrap_err();
    assert!(matches!(e, Error::UnknownHandler { index: 251, .. }), "{e}");
    let sd = client
        .endpoint()
        .prepare_request_medium(dest, None, 1, 64, 2, Flags::empty())?;
    let e = sd.commit(NP_SINK, &[9, 0, 1], 0).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BadLength {
                len: 3,
                limit: 2,
                ..
            }
        ) && e.to_string().contains("arguments"),
        "{e}"
    );

    // least > max, least > most.
    let e = client
        .endpoint()
        .prepare_request_medium(dest, None, max + 1, max + 1, 2, Flags::empty())
        .unwrap_err();
    assert!(
        matches!(e, Error::LeastTooLarge { .. }) && e.to_string().contains(&max.to_string()),
        "{e}"
    );
    let e = client
        .endpoint()
        .prepare_request_medium(dest, None, 20, 10, 2, Flags::empty())
        .unwrap_err();
    assert!(matches!(e, Error::BadLength { .. }), "{e}");

    // Long, assembled in place (on smp: in the target's segment).
    let off = 1 << 20;
    let mut sd =
        client
            .endpoint()
            .prepare_request_long(dest, None, 1000, 5000, 2, off, Flags::empty())?;
    let g = sd.len();
    assert!((1000..=5000).contains(&g));
    fill_pattern(sd.buf(), me, 4);
    sd.commit(NP_SINK, &[4, g as u32], g)?;
    committed.push(g);

    // A negotiated-payload reply.
    client
        .endpoint()
        .request_short(dest, NP_REPLY_REQ, &[], Flags::empty())?;
    let reply_from = |st: &State, r: Rank, seed: u32| {
        st.np_got
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.0 == r.0 && m.1 == seed)
            .count()
    };
    wait_until(client, "the negotiated-payload reply", || {
        reply_from(st, dest, 77) >= 1
    });
    // A negotiated-payload Long reply, landing in our segment at 2 MiB
    // (np.sink checks the bytes it finds there).
    let at = 2u32 << 20;
    client
        .endpoint()
        .request_short(dest, NP_REPLY_REQ, &[at], Flags::empty())?;
    wait_until(client, "the negotiated-payload Long reply", || {
        reply_from(st, dest, 78) >= 1
    });
    let (_, _, got) = *st
        .np_got
        .lock()
        .unwrap()
        .iter()
        .find(|m| m.0 == dest.0 && m.1 == 78)
        .expect("the Long reply");
    assert!((100..=3000).contains(&got), "a Long reply of {got} bytes");
    let mut landed = vec![0u8; got];
    client
        .endpoint()
        .segment()
        .read(u64::from(at), &mut landed)?;
    assert_eq!(
        pattern_mismatch(&landed, dest.0, 78),
        None,
        "the Long reply's bytes in this rank's segment"
    );

    let left = Rank((me + n - 1) % n);
    let from_left = |st: &State| -> Vec<usize> {
        let mut got: Vec<usize> = st
            .np_got
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.0 == left.0 && m.1 != 77 && m.1 != 78)
            .map(|m| m.2)
            .collect();
        got.sort_unstable();
        got
    };
    // AMs are not ordered: the reply above does not prove the earlier
    // messages have arrived (on ofi a Long's notice follows its RDMA write,
    // so a later Short can overtake it; with one rank the barrier below
    // waits for nothing). Poll until the left neighbour's count is in.
    wait_until(client, "the negotiated-payload messages", || {
        from_left(st).len() >= committed.len()
    });
    client.barrier()?;
    // Exactly the left neighbour's committed messages, each once, whatever
    // the arrival order. Every rank sends the same sequence, but the sizes
    // granted depend on the limits to its right neighbour, which in a job
    // spanning nodes are not those from the left: each rank publishes its
    // own.
    committed.sort_unstable();
    let sent: Vec<u8> = committed
        .iter()
        .flat_map(|&g| (g as u64).to_le_bytes())
        .collect();
    let all = client.endpoint().conduit().bootstrap().allgather(&sent)?;
    let left_sent: Vec<usize> = all[left.0 as usize]
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
        .collect();
    assert_eq!(
        from_left(st),
        left_sent,
        "{}: negotiated-payload messages from {left}",
        client.rank()
    );
    assert_eq!(reply_from(st, dest, 77), 1, "one negotiated-payload reply");
    assert_eq!(
        reply_from(st, dest, 78),
        1,
        "one negotiated-payload Long reply"
    );
    ok(client, "negotiated payload: granted in [least, most], in-place and client buffers, shorter commit, cancel/drop/bad commit leave no trace, Long request, Medium and Long replies");
    Ok(())
}

fn expect_err(r: rgex::Result<()>, what: &str, must_mention: &[&str]) {
    let e = r.expect_err(what);
    let text = e.to_string();
    for m in must_mention {
        assert!(
            text.contains(m),
            "{what}: error {text:?} does not mention {m:?}"
        );
    }
}

fn bad_input(client: &Client, st: &State) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let dest = Rank((me + 1) % n);
    let f = Flags::empty();
    expect_err(
        client
            .endpoint()
            .request_short(dest, HandlerId::forge(250), &[], f),
        "unknown handler",
        &["index 250"],
    );
    let max = client.endpoint().max_medium(dest, 0);
    expect_err(
        client
            .endpoint()
            .request_medium(dest, ECHO_REQ, &[], &vec![0; max + 1], f),
        "oversize Medium",
        &[&max.to_string(), &(max + 1).to_string()],
    );
    let seg = client.endpoint().conduit().segment_len(dest);
    expect_err(
        client
            .endpoint()
            .request_long(dest, ECHO_REQ, &[], &[0; 20], seg - 10, f),
        "Long past the segment end",
        &[&format!("rank {}", dest.0), &format!("{seg:#x}")],
    );
    expect_err(
        client
            .endpoint()
            .request_long(dest, ECHO_REQ, &[], &[0; 20], u64::MAX - 5, f),
        "Long with an overflowing offset",
        &["outside its segment", &format!("rank {}", dest.0)],
    );
    for at in [seg - 4, u64::MAX - 3] {
        expect_err(
            client
                .endpoint()
                .prepare_request_long(dest, None, 8, 8, 0, at, f)
                .map(drop),
            "negotiated-payload Long outside the segment",
            &[
                &format!("rank {}", dest.0),
                &format!("{at:#x}"),
                &format!("{seg:#x}"),
            ],
        );
    }
    expect_err(
        client.endpoint().request_short(Rank(n), ECHO_REQ, &[], f),
        "rank out of range",
        &[&format!("{n} ranks")],
    );
    expect_err(
        client.endpoint().request_short(dest, ECHO_REQ, &[0; 17], f),
        "17 arguments",
        &["17", "16"],
    );

    let before = st.replies.load(Ordering::Acquire);
    client.endpoint().request_short(dest, TWICE_REQ, &[], f)?;
    client.endpoint().request_short(dest, FROMREP_REQ, &[], f)?;
    client
        .endpoint()
        .request_short(dest, INHANDLER_REQ, &[], f)?;
    client.endpoint().request_short(dest, BADLONG_REQ, &[], f)?;
    wait_until(client, "replies to the bad-reply probes", || {
        st.replies.load(Ordering::Acquire) >= before + 4
    });
    client.barrier()?;
    // Exactly one reply for each probe: the second reply was refused, and
    // so were the Long replies outside the segment.
    assert_eq!(
        st.replies.load(Ordering::Acquire),
        before + 4,
        "a refused reply was delivered"
    );
    let errs = st.handler_errors.lock().unwrap().clone();
    let has = |s: &str| errs.iter().any(|e| e.contains(s));
    assert!(has("replied twice") && has("twice.req"), "{errs:?}");
    assert!(
        has("only request handlers may reply") && has("fromrep.rep"),
        "{errs:?}"
    );
    assert!(
        has("an AM request was called inside an AM handler"),
        "{errs:?}"
    );
    assert!(has("poll was called inside an AM handler"), "{errs:?}");
    // This rank ran the probe of the rank before it, whose segment its
    // Long replies aimed outside of: each error names that rank and its
    // segment's length.
    let left = (me + n - 1) % n;
    let left_seg = client.endpoint().conduit().segment_len(Rank(left));
    for at in [left_seg - 4, u64::MAX - 3] {
        for what in ["reply_long", "prepare_reply_long"] {
            let tag = format!("badlong.req {what} at {at:#x}: ");
            let e = errs
                .iter()
                .find(|e| e.starts_with(&tag))
                .unwrap_or_else(|| panic!("no error for {tag}: {errs:?}"));
            assert!(
                e.contains(&format!("rank {left}")) && e.contains(&format!("{left_seg:#x}")),
                "{e}"
            );
        }
    }
    ok(client, "bad input: unknown handler, oversize Medium, Long requests and replies (fixed and negotiated) outside the segment, bad rank, 17 args, reply twice, reply from a reply handler, request and poll inside a handler");
    Ok(())
}

/// Rank 0 fills rank 1's request queue with IMMEDIATE sends while rank 1
/// sits in a bootstrap barrier (which does not poll): the fill must end in
/// WouldBlock with nothing sent; after the barrier every message arrives
/// exactly once, in order.
fn immediate(client: &Client, st: &State) -> rgex::Result<()> {
    if client.size() < 2 {
        skip(client, "IMMEDIATE", "one rank: no peer that does not poll");
        return Ok(());
    }
    let me = client.rank().0;
    let mut sent = 0u32;
    // A bootstrap barrier (which does not poll): once rank 0 is past it,
    // rank 1 has left the AM barrier before it and polls no more until the
    // broadcast below releases it. (After an AM barrier alone, rank 1 may
    // still be polling inside it while rank 0 starts filling.)
    client.endpoint().conduit().bootstrap().barrier()?;
    if me == 0 {
        let imm = Flags::IMMEDIATE;
        loop {
            match client
                .endpoint()
                .request_short(Rank(1), IMM_SINK, &[sent], imm)
            {
                Ok(()) => sent += 1,
                Err(e) if e.is_would_block() => break,
                Err(e) => return Err(e),
            }
            assert!(sent < 1 << 20, "rank 1's queue never filled");
        }
        let e = client
            .endpoint()
            .request_medium(Rank(1), IMM_SINK, &[sent], &[1; 100], imm)
            .unwrap_err();
        assert!(
            e.is_would_block() && e.to_string().contains("rank 1"),
            "{e}"
        );
        let e = client
            .endpoint()
            .prepare_request_medium(Rank(1), None, 1, 100, 1, imm)
            .unwrap_err();
        assert!(e.is_would_block(), "{e}");
    }
    // Rank 1 is released only here; the fill count comes with it.
    let filled = client
        .endpoint()
        .conduit()
        .bootstrap()
        .broadcast(0, &sent.to_le_bytes())?;
    let total = u32::from_le_bytes(filled.try_into().expect("4 bytes")) + 1000;
    if me == 0 {
        // Retries in turn as a Short, a fixed-payload Medium and a
        // negotiated-payload Medium (prepared with IMMEDIATE, then
        // committed): each delivered once, in order, undamaged.
        let imm = Flags::IMMEDIATE;
        let mut kinds = [0u32; 3];
        while sent < total {
            let kind = sent % 3;
            let r = match kind {
                0 => client
                    .endpoint()
                    .request_short(Rank(1), IMM_SINK, &[sent], imm),
                1 => client.endpoint().request_medium(
                    Rank(1),
                    IMM_SINK,
                    &[sent],
                    &[sent as u8; 100],
                    imm,
                ),
                _ => client
                    .endpoint()
                    .prepare_request_medium(Rank(1), None, 1, 100, 1, imm)
                    .and_then(|mut p| {
                        let n = p.len().min(100);
                        p.buf()[..n].fill(sent as u8);
                        p.commit(IMM_SINK, &[sent], n)
                    }),
            };
            match r {
                Ok(()) => {
                    kinds[kind as usize] += 1;
                    sent += 1;
                }
                Err(e) if e.is_would_block() => {
                    client.endpoint().poll()?;
                }
                Err(e) => return Err(e),
            }
        }
        assert!(kinds.iter().all(|&k| k > 0), "{kinds:?}");
    } else if me == 1 {
        let total = u64::from(total);
        wait_until(client, "IMMEDIATE messages", || {
            st.imm_next.load(Ordering::Acquire) >= total
        });
        assert_eq!(st.imm_next.load(Ordering::Acquire), total);
    }
    client.barrier()?;
    ok(client, "IMMEDIATE: would-block with nothing sent against a rank that does not poll; retries (Short, Medium, negotiated Medium prepared with IMMEDIATE) deliver each message once, in order, undamaged");
    Ok(())
}
