//! Statistics and tracing (`RGEX_STATS`, `RGEX_TRACE`): one event hook
//! per point that matters, serving both sinks, the per-thread counters
//! (`counters.rs`) and the per-rank trace file (`trace.rs`).
//!
//! Off, nothing of this runs: the decision is taken once, at init. The
//! AM, poll, native RMA and offloaded atomic points are the conduit's
//! own calls, counted by [`Observed`], a wrapper `rgex::init` puts around
//! the conduit only when something is observed; the paths that never
//! call the conduit (mapped copies, CPU atomics, the AM reference of
//! RMA) are chosen at endpoint or domain creation through branches their
//! hot paths already take (see `rgex_endpoint`'s routes). The slow
//! points (waits that yielded, collectives, VIS, the network kit's
//! stalls, malformed messages, rgex-pgas) ask [`on`], one load.
//!
//! ```
//! // Nothing installed: every hook is a no-op, and the snapshot is empty.
//! use rgex_core::observe;
//! observe::would_block(rgex_core::Rank(1));
//! assert!(observe::stats().is_none());
//! ```

mod conduit;
mod counters;
mod names;
mod trace;

pub use conduit::Observed;
pub use names::{
    size_class, AtomicImpl, Completion, NetEvent, PgasEvent, RmaOp, RmaRoute, VisMech, COLL_KINDS,
    SIZE_CLASSES,
};

use crate::atomic::AtomicOp;
use crate::{Category, Direction, Error, Rank, Result};
use names::{Counter, COUNTERS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// The first client handler index (rgex-endpoint's `CLIENT_MIN`): AMs
/// to handlers from here are the client's, counted apart from rgex's
/// protocols' below it.
pub const CLIENT_MIN: u8 = 64;

/// The categories one may observe, as `RGEX_STATS` and `RGEX_TRACE` name them.
pub const CATEGORIES: [&str; 8] = ["am", "rma", "atomics", "vis", "coll", "poll", "net", "pgas"];

fn bit(cat: &str) -> u32 {
    1 << CATEGORIES.iter().position(|c| *c == cat).unwrap_or(0)
}

/// A set of categories, parsed from a variable's value: `1` or `all`
/// for every category, `0`, `off` or nothing for none, else a
/// comma-separated list of [`CATEGORIES`].
///
/// ```
/// use rgex_core::observe::Mask;
/// assert!(Mask::parse("RGEX_STATS", "am,rma").unwrap().has("rma"));
/// assert!(!Mask::parse("RGEX_STATS", "am").unwrap().has("rma"));
/// assert!(Mask::parse("RGEX_STATS", "1").unwrap().has("pgas"));
/// assert!(Mask::parse("RGEX_STATS", "amm").is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mask(u32);

impl Mask {
    /// Parse `value` of variable `var`.
    pub fn parse(var: &str, value: &str) -> Result<Mask> {
        match value.trim() {
            "" | "0" | "off" => return Ok(Mask(0)),
            "1" | "all" | "on" => return Ok(Mask((1 << CATEGORIES.len()) - 1)),
            _ => {}
        }
        let mut m = 0;
        for c in value.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            if !CATEGORIES.contains(&c) {
                return Err(Error::Config(format!(
                    "{var}={value:?}: no category {c:?}; the categories are {} (or 1 for all)",
                    CATEGORIES.join(", ")
                )));
            }
            m |= bit(c);
        }
        Ok(Mask(m))
    }

    /// Whether `cat` is in the set.
    pub fn has(self, cat: &str) -> bool {
        self.0 & bit(cat) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// What `RGEX_TRACE` asks, in `tracing`'s filter syntax: a comma-separated
/// list of directives `TARGET=LEVEL`, `TARGET` or `LEVEL`. A target is
/// `rgex` (every category), `rgex::CAT` or `CAT` (one of [`CATEGORIES`]);
/// a level is `trace` (every event: one per operation, and the spans),
/// `debug` (the spans alone: waits that blocked, collectives), `info`,
/// `warn`, `error` or `off` (nothing: rgex traces nothing above debug).
/// A target alone means `trace`, a level alone applies to every category,
/// and a later directive overrides an earlier one for its categories. The
/// short forms stay: `1` or `all` (everything), `0` (nothing), `am,rma`.
///
/// ```
/// use rgex_core::observe::TraceFilter;
/// let f = TraceFilter::parse("RGEX_TRACE", "rgex=debug,rgex::rma=trace").unwrap();
/// assert!(f.events.has("rma") && !f.events.has("am"));
/// assert!(f.spans.has("coll") && f.spans.has("rma"));
/// let f = TraceFilter::parse("RGEX_TRACE", "am,coll=off").unwrap();
/// assert!(f.events.has("am") && !f.spans.has("coll"));
/// assert!(TraceFilter::parse("RGEX_TRACE", "rgex::amm=trace").is_err());
/// assert!(TraceFilter::parse("RGEX_TRACE", "am=loud").is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceFilter {
    /// The categories whose every event is traced (level `trace`).
    pub events: Mask,
    /// The categories whose spans are traced (level `debug` or `trace`).
    pub spans: Mask,
}

impl TraceFilter {
    /// Parse `value` of variable `var` (see [`TraceFilter`]).
    pub fn parse(var: &str, value: &str) -> Result<TraceFilter> {
        let all = (1u32 << CATEGORIES.len()) - 1;
        match value.trim() {
            "" | "0" | "off" => return Ok(TraceFilter::default()),
            "1" | "all" | "on" => {
                return Ok(TraceFilter {
                    events: Mask(all),
                    spans: Mask(all),
                })
            }
            _ => {}
        }
        let bad = |what: String| {
            Error::Config(format!(
                "{var}={value:?}: {what}; a directive is TARGET=LEVEL, TARGET or LEVEL, the \
                 targets rgex, rgex::CATEGORY or CATEGORY ({}), the levels trace, debug, info, \
                 warn, error and off",
                CATEGORIES.join(", ")
            ))
        };
        let (mut events, mut spans) = (0u32, 0u32);
        for d in value.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            let (target, level) = match d.split_once('=') {
                Some((t, l)) => (t.trim(), Some(l.trim())),
                None if LEVELS.contains(&d) => ("rgex", Some(d)),
                None => (d, None),
            };
            let cats = match target.strip_prefix("rgex::").unwrap_or(target) {
                "rgex" | "" => all,
                c if CATEGORIES.contains(&c) => bit(c),
                c => return Err(bad(format!("no category {c:?}"))),
            };
            let (ev, sp) = match level.unwrap_or("trace") {
                "trace" => (true, true),
                "debug" => (false, true),
                l if LEVELS.contains(&l) => (false, false),
                l => return Err(bad(format!("no level {l:?}"))),
            };
            events = if ev { events | cats } else { events & !cats };
            spans = if sp { spans | cats } else { spans & !cats };
        }
        Ok(TraceFilter {
            events: Mask(events),
            spans: Mask(spans),
        })
    }

    /// Whether it traces nothing.
    pub fn is_empty(self) -> bool {
        self.events.is_empty() && self.spans.is_empty()
    }
}

/// `tracing`'s levels, as [`TraceFilter`] reads them.
const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// What to observe and where to write it: `RGEX_STATS`,
/// `RGEX_STATS_FILE`, `RGEX_TRACE`, `RGEX_TRACE_FILE` (read by
/// `rgex::init`). A file name's `%r` is the rank.
#[derive(Clone, Debug, Default)]
pub struct ObserveConfig {
    /// The categories counted.
    pub stats: Mask,
    /// Where each rank writes its counts at exit (none: not written).
    pub stats_file: Option<String>,
    /// The categories traced, and how much of each.
    pub trace: TraceFilter,
    /// Where each rank writes its trace (`rgex-trace-%r.jsonl` when unset).
    pub trace_file: Option<String>,
}

impl ObserveConfig {
    /// Whether anything is observed.
    pub fn any(&self) -> bool {
        !(self.stats.is_empty() && self.trace.is_empty())
    }
}

/// The installed observer.
struct Observer {
    rank: u32,
    stats: Mask,
    /// The categories whose every event is traced (`trace` is then set).
    trace_mask: Mask,
    /// The categories whose spans are traced (`trace` is then set).
    span_mask: Mask,
    trace: Option<trace::TraceFile>,
    stats_file: Option<String>,
}

static OBSERVER: OnceLock<Observer> = OnceLock::new();
/// rgex-pgas's heap in use and its peak, in bytes (rank-wide values, not
/// per-thread counts; allocation is off the hot path).
static HEAP_NOW: AtomicU64 = AtomicU64::new(0);
static HEAP_PEAK: AtomicU64 = AtomicU64::new(0);

/// `name` with `%r` replaced by `rank`.
pub fn per_rank(name: &str, rank: u32) -> String {
    name.replace("%r", &rank.to_string())
}

/// Install the observer `cfg` describes for rank `rank`, once per
/// process (a second call is ignored); nothing when `cfg` observes
/// nothing. Writes the stats file (and flushes the trace) at exit.
pub fn install(cfg: &ObserveConfig, rank: u32) -> Result<()> {
    if !cfg.any() || OBSERVER.get().is_some() {
        return Ok(());
    }
    let trace = if cfg.trace.is_empty() {
        None
    } else {
        let path = per_rank(
            cfg.trace_file.as_deref().unwrap_or("rgex-trace-%r.jsonl"),
            rank,
        );
        Some(
            trace::TraceFile::create(&path, Instant::now()).map_err(|e| {
                Error::Config(format!(
                    "RGEX_TRACE_FILE: rank {rank} cannot create {path:?}: {e}"
                ))
            })?,
        )
    };
    let _ = OBSERVER.set(Observer {
        rank,
        stats: cfg.stats,
        trace_mask: cfg.trace.events,
        span_mask: cfg.trace.spans,
        trace,
        stats_file: cfg.stats_file.clone(),
    });
    extern "C" fn at_exit() {
        finish();
    }
    // SAFETY: `at_exit` is a plain function that lives for the whole
    // program; atexit only records the pointer.
    unsafe { libc::atexit(at_exit) };
    Ok(())
}

/// Write the stats file and flush the trace now (at exit, and from
/// `Client::finalize`); again later writes the counts of then.
pub fn finish() {
    let Some(o) = OBSERVER.get() else { return };
    if let Some(t) = &o.trace {
        t.flush();
    }
    if let (Some(path), Some(s)) = (&o.stats_file, stats()) {
        let path = per_rank(path, o.rank);
        if let Err(e) = std::fs::write(&path, s.to_json()) {
            tracing::error!(rank = o.rank, "RGEX_STATS_FILE: cannot write {path:?}: {e}");
        }
    }
}

/// Whether anything is observed (one load): for the slow points.
#[inline]
pub fn on() -> bool {
    OBSERVER.get().is_some()
}

/// Whether category `cat` is counted or traced: asked at setup, to
/// choose the observed paths.
pub fn observes(cat: &str) -> bool {
    OBSERVER
        .get()
        .is_some_and(|o| o.stats.has(cat) || o.trace_mask.has(cat) || o.span_mask.has(cat))
}

/// Each category's bit in a [`Mask`] (the order of [`CATEGORIES`]), so
/// that a hook tests a constant bit, not a name.
mod cat {
    pub(super) const AM: u32 = 1 << 0;
    pub(super) const RMA: u32 = 1 << 1;
    pub(super) const ATOMICS: u32 = 1 << 2;
    pub(super) const VIS: u32 = 1 << 3;
    pub(super) const COLL: u32 = 1 << 4;
    pub(super) const POLL: u32 = 1 << 5;
    pub(super) const NET: u32 = 1 << 6;
    pub(super) const PGAS: u32 = 1 << 7;
}

/// The observer, if the category of bit `cat` is counted (`.0`) or
/// traced (`.1`).
#[inline]
fn sinks(cat: u32) -> Option<(bool, Option<&'static trace::TraceFile>)> {
    let o = OBSERVER.get()?;
    let count = o.stats.0 & cat != 0;
    let tr = o.trace.as_ref().filter(|_| o.trace_mask.0 & cat != 0);
    (count || tr.is_some()).then_some((count, tr))
}

/// As [`sinks`], for a span: traced when the category's spans are.
fn span_sinks(cat: u32) -> Option<(bool, Option<&'static trace::TraceFile>)> {
    let o = OBSERVER.get()?;
    let count = o.stats.0 & cat != 0;
    let tr = o.trace.as_ref().filter(|_| o.span_mask.0 & cat != 0);
    (count || tr.is_some()).then_some((count, tr))
}

/// Names handler indices for the trace (see [`name_handlers`]).
type Namer = Box<dyn Fn(u8) -> String + Send + Sync>;
static NAMER: OnceLock<Namer> = OnceLock::new();

/// Tell the trace how to name a handler index: `rgex::init` gives the
/// primordial endpoint's table, so each AM event carries the name
/// registered at its index there (`"name":"pong"`). Once per process (a
/// second call is ignored); unset, events carry the index alone.
///
/// ```
/// rgex_core::observe::name_handlers(|i| format!("handler {i}"));
/// ```
pub fn name_handlers(f: impl Fn(u8) -> String + Send + Sync + 'static) {
    let _ = NAMER.set(Box::new(f));
}

/// The trace's string fields of an AM event: the handler's name (when
/// known), then `rest`.
fn am_fields<'a>(name: &'a Option<String>, rest: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    name.iter()
        .map(|n| ("name", n.as_str()))
        .chain(rest.iter().copied())
        .collect()
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Request => "request",
        Direction::Reply => "reply",
    }
}

fn cat_name(c: Category) -> &'static str {
    match c {
        Category::Short => "short",
        Category::Medium => "medium",
        Category::Long => "long",
    }
}

/// The observer, if it counts (`.0`) or traces (`.1`) the category of
/// bit `cat`: the hot hooks' one test, the trace's work out of line.
#[inline(always)]
fn wants(cat: u32) -> Option<(&'static Observer, bool, bool)> {
    let o = OBSERVER.get()?;
    Some((o, o.stats.0 & cat != 0, o.trace_mask.0 & cat != 0))
}

/// An AM was injected: to `peer`, `dir` and `cat`, `len` payload bytes,
/// to handler `handler` (a client's from 64), by the negotiated-payload
/// path (`np`) or the fixed one.
#[inline]
pub fn am_injected(peer: Rank, dir: Direction, cat: Category, handler: u8, len: usize, np: bool) {
    let Some((o, count, traced)) = wants(cat::AM) else {
        return;
    };
    if count {
        let client = handler >= CLIENT_MIN;
        let b = counters::mine();
        b.add(Counter::am_sent(client, dir, cat, len), 1);
        b.add(Counter::path(client, np), 1);
    }
    if traced {
        trace_am(o, "inject", peer, dir, cat, handler, len, Some(np));
    }
}

/// An AM was delivered here (its handler about to run).
#[inline]
pub fn am_delivered(src: Rank, dir: Direction, cat: Category, handler: u8, len: usize) {
    let Some((o, count, traced)) = wants(cat::AM) else {
        return;
    };
    if count {
        counters::add(Counter::delivered(handler >= CLIENT_MIN, dir), 1);
    }
    if traced {
        trace_am(o, "deliver", src, dir, cat, handler, len, None);
    }
}

/// The trace's line of an AM injected (`np`: its path) or delivered.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn trace_am(
    o: &Observer,
    ev: &str,
    peer: Rank,
    dir: Direction,
    cat: Category,
    handler: u8,
    len: usize,
    np: Option<bool>,
) {
    let Some(t) = &o.trace else { return };
    let name = NAMER.get().map(|f| f(handler));
    let path = np.map(|np| ("path", if np { "np" } else { "fp" }));
    t.event_str(
        "am",
        ev,
        &[
            ("peer", peer.0.into()),
            ("size", len as u64),
            ("handler", handler.into()),
        ],
        &am_fields(
            &name,
            &[("dir", dir_name(dir)), ("kind", cat_name(cat))]
                .into_iter()
                .chain(path)
                .collect::<Vec<_>>(),
        ),
    );
}

/// A send to `peer` found no resource free (`WouldBlock`).
pub fn would_block(peer: Rank) {
    let Some((count, tr)) = sinks(cat::AM) else {
        return;
    };
    if count {
        counters::add(Counter::WOULD_BLOCK, 1);
    }
    if let Some(t) = tr {
        t.event("am", "would_block", &[("peer", peer.0.into())]);
    }
}

/// A malformed message was reported.
pub fn malformed(peer: Rank) {
    let Some((count, tr)) = sinks(cat::AM) else {
        return;
    };
    if count {
        counters::add(Counter::MALFORMED, 1);
    }
    if let Some(t) = tr {
        t.event("am", "malformed", &[("peer", peer.0.into())]);
    }
}

/// A poll that delivered `n` messages.
#[inline]
pub fn poll(n: usize) {
    let Some((o, count, traced)) = wants(cat::POLL) else {
        return;
    };
    if count {
        let b = counters::mine();
        b.add(Counter::POLLS, 1);
        b.add(Counter::EMPTY_POLLS, u64::from(n == 0));
    }
    if traced && n > 0 {
        trace_poll(o, n);
    }
}

#[cold]
#[inline(never)]
fn trace_poll(o: &Observer, n: usize) {
    if let Some(t) = &o.trace {
        t.event("poll", "poll", &[("delivered", n as u64)]);
    }
}

/// An RMA operation was started: `op` of `len` bytes to `peer`, carried
/// by `route`, its completion reached as `kind` says. Returns its number
/// in the trace, for [`rma_completed`] (0 when RMA is not traced).
#[inline]
pub fn rma(op: RmaOp, route: RmaRoute, kind: Completion, peer: Rank, len: usize) -> u64 {
    let Some((o, count, traced)) = wants(cat::RMA) else {
        return 0;
    };
    if count {
        let (ops, bytes) = Counter::rma(op, route);
        let b = counters::mine();
        b.add(ops, 1);
        b.add(bytes, len as u64);
        b.add(Counter::rma_kind(op, kind), 1);
    }
    if traced {
        trace_rma(o, ["put", "get"][op as usize], route, kind, peer, len)
    } else {
        0
    }
}

/// A put-with-signal was started: `len` bytes to `peer`, carried by
/// `route` (its signal word's update after them). Returns its number in
/// the trace, as [`rma`] does.
#[inline]
pub fn put_signal(route: RmaRoute, peer: Rank, len: usize) -> u64 {
    let Some((o, count, traced)) = wants(cat::RMA) else {
        return 0;
    };
    if count {
        let (ops, bytes) = Counter::signal(route);
        let b = counters::mine();
        b.add(ops, 1);
        b.add(bytes, len as u64);
    }
    if traced {
        trace_rma(o, "put_signal", route, Completion::Blocking, peer, len)
    } else {
        0
    }
}

/// The trace's line of an RMA operation started. Each gets the rank's next
/// operation number (`"op"`), which its completion's line
/// ([`rma_completed`]) repeats.
#[cold]
#[inline(never)]
fn trace_rma(
    o: &Observer,
    ev: &str,
    route: RmaRoute,
    kind: Completion,
    peer: Rank,
    len: usize,
) -> u64 {
    let Some(t) = &o.trace else { return 0 };
    // Relaxed: a number unique per operation, ordering nothing.
    let n = 1 + RMA_OPS.fetch_add(1, Ordering::Relaxed);
    t.event_str(
        "rma",
        ev,
        &[("peer", peer.0.into()), ("size", len as u64), ("op", n)],
        &[
            ("path", names::ROUTES[route as usize]),
            ("completion", names::COMPLETIONS[kind as usize]),
        ],
    );
    n
}

/// The trace's RMA operations numbered so far on this rank.
static RMA_OPS: AtomicU64 = AtomicU64::new(0);

/// RMA operation number `op` (from [`rma`] or [`put_signal`]; 0, not
/// traced, is ignored) completed: its data is at the target, or in this
/// rank's buffer for a get.
pub fn rma_completed(op: u64) {
    if op == 0 {
        return;
    }
    if let Some(t) = OBSERVER.get().and_then(|o| o.trace.as_ref()) {
        t.event("rma", "complete", &[("op", op)]);
    }
}

/// Trace the completion of operation `op` (see [`rma_completed`]) when
/// `counter` finishes: at once if it has, else from the progress that
/// finishes it, through the counter's waker. A handle later awaited as a
/// future takes that waker's place, and its operation's line is then
/// left out; the blocking and implicit forms and an `Event` waited or
/// tested are all traced.
pub fn rma_completes_with(op: u64, counter: &crate::OpCounter) {
    struct Done(u64);
    impl std::task::Wake for Done {
        fn wake(self: std::sync::Arc<Self>) {
            rma_completed(self.0);
        }
    }
    if op == 0 {
        return;
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Done(op)));
    let mut cx = std::task::Context::from_waker(&waker);
    if counter.poll_done(&mut cx).is_ready() {
        rma_completed(op);
    }
}

/// An atomic op was injected (or, on shared memory, done).
pub fn atomic(imp: AtomicImpl, op: AtomicOp, peer: Rank) {
    let Some((count, tr)) = sinks(cat::ATOMICS) else {
        return;
    };
    if count {
        counters::add(Counter::atomic(imp, op), 1);
    }
    if let Some(t) = tr {
        let imp = match imp {
            AtomicImpl::Shared => "shared",
            AtomicImpl::Offload => "offload",
            AtomicImpl::Reference => "reference",
        };
        let op = format!("{op:?}");
        t.event_str(
            "atomics",
            "atomic",
            &[("peer", peer.0.into())],
            &[("impl", imp), ("op", &op)],
        );
    }
}

/// A VIS operation of `bytes` to `peer` was started by mechanism `m`.
pub fn vis(m: VisMech, peer: Rank, bytes: usize) {
    let Some((count, tr)) = sinks(cat::VIS) else {
        return;
    };
    if count {
        counters::add(Counter::vis(m), 1);
    }
    if let Some(t) = tr {
        let m = ["direct", "rma", "am", "native"][m as usize];
        t.event_str(
            "vis",
            "vis",
            &[("peer", peer.0.into()), ("size", bytes as u64)],
            &[("mech", m)],
        );
    }
}

/// A network kit's event (`n` of them).
pub fn net(e: NetEvent, n: u64) {
    let Some((count, tr)) = sinks(cat::NET) else {
        return;
    };
    if count {
        counters::add(Counter::net(e), n);
    }
    if let Some(t) = tr {
        let ev = match e {
            NetEvent::CreditStall => "credit_stall",
            NetEvent::Retry => "retry",
            NetEvent::ReadBack => "read_back",
        };
        t.event("net", ev, &[("n", n)]);
    }
}

/// The network kit's backlog is `len` long (its peak is kept).
pub fn backlog(len: usize) {
    if let Some((true, _)) = sinks(cat::NET) {
        counters::raise(Counter::BACKLOG_PEAK, len as u64);
    }
}

/// An rgex-pgas event.
pub fn pgas(e: PgasEvent) {
    let Some((count, tr)) = sinks(cat::PGAS) else {
        return;
    };
    if count {
        counters::add(Counter::pgas(e), 1);
    }
    if let Some(t) = tr {
        let ev = match e {
            PgasEvent::Rpc => "rpc",
            PgasEvent::HeldBatch => "held_batch",
            PgasEvent::WindowStall => "window_stall",
        };
        t.event("pgas", ev, &[]);
    }
}

/// rgex-pgas's shared heap grew by `grew` bytes and shrank by `shrank`.
pub fn pgas_heap(grew: u64, shrank: u64) {
    if sinks(cat::PGAS).is_none() {
        return;
    }
    // Relaxed read-modify-writes: a rank-wide gauge off the hot path
    // (allocation), ordering nothing else.
    let now = HEAP_NOW
        .fetch_add(grew, Ordering::Relaxed)
        .wrapping_add(grew);
    HEAP_PEAK.fetch_max(now, Ordering::Relaxed);
    HEAP_NOW.fetch_sub(shrank, Ordering::Relaxed);
}

/// The kind a collective named `what` (`"allreduce_nb"`, ...) is
/// counted as: one of [`COLL_KINDS`].
///
/// ```
/// assert_eq!(rgex_core::observe::coll_kind("allgather_nb"), "allgather");
/// assert_eq!(rgex_core::observe::coll_kind("split"), "other");
/// ```
pub fn coll_kind(what: &str) -> &'static str {
    const BY_PREFIX: [&str; 9] = [
        "allreduce",
        "allgather",
        "alltoall",
        "barrier",
        "broadcast",
        "reduce",
        "gather",
        "scatter",
        "scan",
    ];
    BY_PREFIX
        .into_iter()
        .find(|k| what.starts_with(k))
        .unwrap_or("other")
}

/// A collective named `what` was started on this rank.
pub fn collective(what: &'static str) {
    let Some((count, tr)) = sinks(cat::COLL) else {
        return;
    };
    let kind = coll_kind(what);
    if count {
        counters::add(Counter::coll(kind), 1);
    }
    if let Some(t) = tr {
        t.event_str("coll", "start", &[], &[("what", what), ("kind", kind)]);
    }
}

/// A span: a wait that blocked, or a collective, from its start to the
/// guard's drop. Observed or not, it is a real guard (never `()`).
#[must_use = "the span ends when this is dropped"]
#[derive(Debug)]
pub struct Span {
    open: Option<(Instant, &'static str, &'static str, bool)>,
}

impl Span {
    /// Start a span of category `cat` (`"poll"` for waits, `"coll"` for
    /// collectives) named `what`.
    ///
    /// ```
    /// let _span = rgex_core::observe::Span::start("coll", "barrier");
    /// ```
    pub fn start(cat: &'static str, what: &'static str) -> Span {
        // Unobserved (the usual case): one load, before `bit`'s search of
        // the category names (every blocking collective starts a span).
        if OBSERVER.get().is_none() {
            return Span { open: None };
        }
        let Some((count, tr)) = span_sinks(bit(cat)) else {
            return Span { open: None };
        };
        if let Some(t) = tr {
            t.event_str(cat, "begin", &[], &[("what", what)]);
        }
        Span {
            open: Some((Instant::now(), cat, what, count)),
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        let Some((start, cat, what, count)) = self.open.take() else {
            return;
        };
        let ns = start.elapsed().as_nanos() as u64;
        if count && cat == "poll" {
            counters::add(Counter::WAITS, 1);
            counters::add(Counter::WAIT_NS, ns);
        }
        if let Some((_, Some(t))) = span_sinks(bit(cat)) {
            t.event_str(cat, "end", &[("ns", ns)], &[("what", what)]);
        }
    }
}

/// A rank's counts: every counter summed over its threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// This rank.
    pub rank: u32,
    values: Vec<(String, u64)>,
}

impl Stats {
    /// The counter named `key` (as in the JSON: `am.client.request.short.0`,
    /// `rma.put.mapped.ops`, ...), if it is counted.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.values.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// Every counted counter, in the JSON's order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.values.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// The JSON each rank writes to `RGEX_STATS_FILE`: `{"rank":R,"counters":{...}}`.
    pub fn to_json(&self) -> String {
        let mut s = format!("{{\"rank\":{},\"counters\":{{", self.rank);
        for (i, (k, v)) in self.values.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("\n  \"{k}\":{v}"));
        }
        s.push_str("\n}}\n");
        s
    }
}

/// This rank's counts now (`None` when `RGEX_STATS` counts nothing).
pub fn stats() -> Option<Stats> {
    let o = OBSERVER.get().filter(|o| !o.stats.is_empty())?;
    let sums = counters::snapshot();
    let mut values: Vec<(String, u64)> = (0..COUNTERS)
        .filter_map(|i| {
            let (name, cat) = Counter::from_index(i).name();
            o.stats.has(cat).then(|| (name, sums[i]))
        })
        .collect();
    if o.stats.has("pgas") {
        // Relaxed: gauges read for a report.
        values.push(("pgas.heap_bytes".into(), HEAP_NOW.load(Ordering::Relaxed)));
        values.push(("pgas.heap_peak".into(), HEAP_PEAK.load(Ordering::Relaxed)));
    }
    Some(Stats {
        rank: o.rank,
        values,
    })
}

/// Parse the stats JSON [`Stats::to_json`] writes: (rank, counters).
///
/// ```
/// let (rank, c) = rgex_core::observe::parse_json("{\"rank\":3,\"counters\":{\n \"am.fp\":7\n}}").unwrap();
/// assert_eq!((rank, c[0].1), (3, 7));
/// ```
pub fn parse_json(s: &str) -> Option<(u32, Vec<(String, u64)>)> {
    let rest = s.trim().strip_prefix("{\"rank\":")?;
    let (rank, rest) = rest.split_once(',')?;
    let body = rest.trim().strip_prefix("\"counters\":{")?;
    let body = body.trim_end().strip_suffix("}}")?;
    let mut out = Vec::new();
    for item in body.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once(':')?;
        out.push((
            k.trim().trim_matches('"').to_string(),
            v.trim().parse().ok()?,
        ));
    }
    Some((rank.trim().parse().ok()?, out))
}
