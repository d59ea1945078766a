//! testam's handlers, their shared state, and the three ways of sending a
//! Medium (fixed payload, negotiated with rgex's buffer, negotiated with
//! the client's buffer) on both the request and the reply side.

use rgex::{Client, Endpoint, Flags, HandlerId, Rank, Token};
use rgex_benches::payload;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Arguments of a Medium ping or pong: variant, seed, size.
pub const MEDIUM_NARGS: usize = 3;

/// Variant argument of a pong saying the ping's payload was damaged (or
/// the reply could not be sent as asked).
const BAD: u32 = u32::MAX;

/// What the handlers update, read by the rank's main thread.
#[derive(Debug, Default)]
pub struct State {
    /// Replies received (Short pongs, Medium pongs, flood completions).
    pub pongs: AtomicU64,
    /// Flood requests counted since the last completed flood.
    pub flood: AtomicU64,
    /// Payload checks that failed (here or, reported in a pong, at the peer).
    pub bad: AtomicU64,
    /// Set by rank 0's stop request: leave the serving loop.
    pub stop: AtomicBool,
    /// Set by rank 0's park request, cleared by its unpark: while set the
    /// serving loop sleeps between polls, leaving its CPU to the floor
    /// and the peer tools that rank 0 runs meanwhile.
    pub parked: AtomicBool,
}

/// The handlers, registered in the same order on every rank.
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    /// Short request; replies with a Short pong.
    pub ping: HandlerId,
    /// Short flood request (arg 0: flood length); the last one replies.
    pub flood: HandlerId,
    /// Medium request (variant, seed, size); replies with a Medium pong.
    pub med_ping: HandlerId,
    /// Short request: stop serving.
    pub stop: HandlerId,
    /// Short request: sleep between polls until unparked; replies with a
    /// Short pong once parked.
    pub park: HandlerId,
    /// Short request: poll without sleeping again.
    pub unpark: HandlerId,
}

/// How a Medium's payload reaches rgex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Fixed payload: generated into a client buffer, copied by rgex.
    Fp,
    /// Negotiated payload in rgex's buffer: generated in place.
    NpRgex,
    /// Negotiated payload in the client's buffer: copied at commit.
    NpClient,
    /// The peers' semantics (GASNet testam, `ucp_am_lat`): a fixed
    /// payload sent from a static buffer nobody writes, a ping handler
    /// that replies with a Medium of the same size from its own static
    /// buffer without reading the payload, and a pong handler that only
    /// counts. The comparable mode; the three above generate and check
    /// every payload (the realistic mode).
    FpStatic,
}

impl Variant {
    /// Every variant, in table order.
    pub const ALL: [Variant; 4] = [
        Variant::Fp,
        Variant::NpRgex,
        Variant::NpClient,
        Variant::FpStatic,
    ];

    /// Table and JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Fp => "FP",
            Variant::NpRgex => "NP-rgex",
            Variant::NpClient => "NP-client",
            Variant::FpStatic => "FP-static",
        }
    }

    fn arg(self) -> u32 {
        self as u32
    }

    fn from_arg(a: u32) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.arg() == a)
    }
}

/// The seed of the pong answering a ping with `seed` (a different pattern,
/// so an echoed request buffer fails the check).
fn reply_seed(seed: u32) -> u32 {
    seed ^ 0x80
}

thread_local! {
    /// The handler side's client buffer (FP and NP-client replies).
    static REPLY_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Send a Medium request of `size` bytes generated from `seed`, the way
/// `v` says; `buf` is the client's buffer (at least `size` bytes).
///
/// Both negotiated variants run the same code and differ only in the
/// buffer handed to prepare, so NP-rgex against NP-client isolates the
/// copy. (With NP-rgex in a match arm of its own, the compiler laid it
/// out so that it measured 12-25% slower than FP on this machine even at
/// 0 bytes, where both variants do the same work.)
pub fn request_medium(
    ep: &Endpoint,
    peer: Rank,
    h: HandlerId,
    v: Variant,
    size: usize,
    seed: u32,
    buf: &mut [u8],
) -> rgex::Result<()> {
    let args = [v.arg(), seed, size as u32];
    let none = Flags::empty();
    match v {
        Variant::Fp => {
            let b = &mut buf[..size];
            payload::generate(b, seed);
            ep.request_medium(peer, h, &args, b, none)
        }
        Variant::NpRgex | Variant::NpClient => {
            let client = (v == Variant::NpClient).then_some(&mut buf[..size]);
            let mut sd = ep.prepare_request_medium(peer, client, size, size, MEDIUM_NARGS, none)?;
            payload::generate(sd.buf(), seed);
            sd.commit(h, &args, size)
        }
        // Whatever the buffer holds, unchanged since the last send.
        Variant::FpStatic => ep.request_medium(peer, h, &args, &buf[..size], none),
    }
}

/// Reply to a Medium ping with a Medium of `size` bytes from `seed`, the
/// way `v` says (one negotiated path for both NP variants, as in
/// [`request_medium`]).
fn reply_medium(
    tok: &Token<'_>,
    h: HandlerId,
    v: Variant,
    size: usize,
    seed: u32,
) -> rgex::Result<()> {
    let args = [v.arg(), seed, size as u32];
    let none = Flags::empty();
    REPLY_BUF.with(|cell| {
        let mut b = cell.borrow_mut();
        if b.len() < size {
            b.resize(size, 0);
        }
        let b = &mut b[..size];
        if v == Variant::FpStatic {
            tok.reply_medium(h, &args, b, none)
        } else if v == Variant::Fp {
            payload::generate(b, seed);
            tok.reply_medium(h, &args, b, none)
        } else {
            let client = (v == Variant::NpClient).then_some(b);
            let mut sd = tok.prepare_reply_medium(client, size, size, MEDIUM_NARGS, none)?;
            payload::generate(sd.buf(), seed);
            sd.commit(h, &args, size)
        }
    })
}

/// Initialise rgex with testam's handlers.
pub fn init() -> rgex::Result<(Client, Ids, Arc<State>)> {
    let state = Arc::new(State::default());
    let (client, ids) = rgex::init_with(|t| {
        let st = state.clone();
        let pong = t.register("testam.pong", move |_tok, _msg| {
            // Release: the reply's effects are visible to whoever sees the count.
            st.pongs.fetch_add(1, Ordering::Release);
        })?;
        let st = state.clone();
        let ping = t.register("testam.ping", move |tok, _msg| {
            if let Err(e) = tok.reply_short(pong, &[], Flags::empty()) {
                eprintln!(
                    "testam: {}: reply to a Short ping: {e}",
                    tok.endpoint().rank()
                );
                st.bad.fetch_add(1, Ordering::Relaxed);
            }
        })?;
        let st = state.clone();
        let flood = t.register("testam.flood", move |tok, msg| {
            let n = st.flood.fetch_add(1, Ordering::Relaxed) + 1;
            if n == u64::from(msg.arg(0)) {
                st.flood.store(0, Ordering::Relaxed);
                if let Err(e) = tok.reply_short(pong, &[], Flags::empty()) {
                    eprintln!("testam: {}: reply to a flood: {e}", tok.endpoint().rank());
                    st.bad.fetch_add(1, Ordering::Relaxed);
                }
            }
        })?;
        let st = state.clone();
        let med_pong = t.register("testam.med_pong", move |_tok, msg| {
            // The comparable mode's pong is only counted; a BAD pong
            // (a failed reply) still counts as damage.
            let ok = match msg.arg(0) {
                BAD => false,
                a if a == Variant::FpStatic.arg() => true,
                _ => payload::check(msg.payload(), msg.arg(1), msg.arg(2) as usize),
            };
            if !ok {
                st.bad.fetch_add(1, Ordering::Relaxed);
            }
            st.pongs.fetch_add(1, Ordering::Release);
        })?;
        let med_ping = t.register("testam.med_ping", move |tok, msg| {
            let (seed, size) = (msg.arg(1), msg.arg(2) as usize);
            let variant = Variant::from_arg(msg.arg(0));
            let sent = match variant {
                // The peers' semantics: the payload is not read.
                Some(Variant::FpStatic) => {
                    reply_medium(tok, med_pong, Variant::FpStatic, size, seed)
                }
                Some(v) if payload::check(msg.payload(), seed, size) => {
                    reply_medium(tok, med_pong, v, size, reply_seed(seed))
                }
                _ => tok.reply_short(med_pong, &[BAD, 0, 0], Flags::empty()),
            };
            if let Err(e) = sent {
                // The token is still free (a failed send does not use it):
                // tell the pinger rather than leave it waiting.
                eprintln!("testam: {}: Medium reply: {e}", tok.endpoint().rank());
                let _ = tok.reply_short(med_pong, &[BAD, 0, 0], Flags::empty());
            }
        })?;
        let st = state.clone();
        let stop = t.register("testam.stop", move |_tok, _msg| {
            st.stop.store(true, Ordering::Release);
        })?;
        let st = state.clone();
        let park = t.register("testam.park", move |tok, _msg| {
            // Relaxed: only the serving loop of this rank reads it.
            st.parked.store(true, Ordering::Relaxed);
            if let Err(e) = tok.reply_short(pong, &[], Flags::empty()) {
                eprintln!("testam: {}: reply to park: {e}", tok.endpoint().rank());
                st.bad.fetch_add(1, Ordering::Relaxed);
            }
        })?;
        let st = state.clone();
        let unpark = t.register("testam.unpark", move |_tok, _msg| {
            st.parked.store(false, Ordering::Relaxed);
        })?;
        Ok(Ids {
            ping,
            flood,
            med_ping,
            stop,
            park,
            unpark,
        })
    })?;
    Ok((client, ids, state))
}

/// How long a parked serving loop sleeps between polls.
const PARKED_NAP: std::time::Duration = std::time::Duration::from_micros(200);

/// Ranks other than 0: run handlers until rank 0 says stop. Spins on
/// `poll` (yields when idle on an oversubscribed node); while parked,
/// sleeps [`PARKED_NAP`] between polls.
pub fn serve(client: &Client, state: &State) -> rgex::Result<()> {
    let polite = client.endpoint().polite();
    while !state.stop.load(Ordering::Acquire) {
        let n = client.endpoint().poll()?;
        if state.parked.load(Ordering::Relaxed) {
            std::thread::sleep(PARKED_NAP);
        } else if n == 0 && polite {
            std::thread::yield_now();
        }
    }
    Ok(())
}

/// Rank 0: tell every other rank to stop serving.
pub fn stop_others(client: &Client, ids: &Ids) -> rgex::Result<()> {
    for r in 1..client.size() {
        client
            .endpoint()
            .request_short(Rank(r), ids.stop, &[], Flags::empty())?;
    }
    Ok(())
}
