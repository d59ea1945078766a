//! The counters' names: every counter is one index of a thread's block,
//! computed from what it counts, and one key of the stats JSON.

use crate::atomic::AtomicOp;
use crate::{Category, Direction};

/// Payload size classes of an AM: 0, at most 64 B, at most 1 KiB, at
/// most the Medium limit, Long.
pub const SIZE_CLASSES: [&str; 5] = ["0", "le64", "le1k", "medium", "long"];

/// The size class of a payload of `len` bytes in a message of `cat`.
///
/// ```
/// use rgex_core::observe::size_class;
/// use rgex_core::Category;
/// assert_eq!(size_class(Category::Medium, 64), 1);
/// assert_eq!(size_class(Category::Long, 8), 4);
/// ```
pub fn size_class(cat: Category, len: usize) -> usize {
    match (cat, len) {
        (Category::Long, _) => 4,
        (_, 0) => 0,
        (_, 1..=64) => 1,
        (_, 65..=1024) => 2,
        _ => 3,
    }
}

/// The RMA paths counted apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmaRoute {
    /// A copy through the peer's segment mapped here.
    Mapped,
    /// The conduit's own RMA.
    Native,
    /// Active messages.
    Reference,
    /// Cross-memory attach into a node-local peer's client segment.
    Cma,
}

/// The routes' names in the stats JSON and the trace, by [`RmaRoute`].
pub(crate) const ROUTES: [&str; 4] = ["mapped", "native", "reference", "cma"];

/// How an RMA operation's completion is reached: the call that started it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// A blocking call (`put`, `get`): complete on return.
    Blocking,
    /// An explicit handle (`put_nb`, `get_nb`, their raw and deferred
    /// forms): an event or a future.
    Event,
    /// An implicit handle (`put_nbi`, `get_nbi`): an NBI sync.
    Nbi,
    /// The caller's own counters (`put_counted`, `get_counted`).
    Counted,
}

/// The completion kinds' names, by [`Completion`].
pub(crate) const COMPLETIONS: [&str; 4] = ["blocking", "event", "nbi", "counted"];

/// Put or get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmaOp {
    /// A put.
    Put,
    /// A get.
    Get,
}

/// How an atomic op was carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicImpl {
    /// A CPU atomic on a mapped segment (this rank's own included).
    Shared,
    /// The conduit's offloaded atomic.
    Offload,
    /// An AM to the target.
    Reference,
}

/// The VIS mechanisms counted apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VisMech {
    /// Copies through the mapped segment.
    Direct,
    /// One RMA operation per chunk.
    Rma,
    /// Packed into AMs.
    Am,
    /// The conduit's own vector transfer.
    Native,
}

/// The collectives counted apart (`Other` for the rest).
pub const COLL_KINDS: [&str; 10] = [
    "barrier",
    "broadcast",
    "reduce",
    "allreduce",
    "gather",
    "allgather",
    "scatter",
    "alltoall",
    "scan",
    "other",
];

/// The network kit's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetEvent {
    /// A send that found no credit to its peer.
    CreditStall,
    /// An operation retried (it found no slot or buffer, and went to the backlog).
    Retry,
    /// A read-back before remote completion.
    ReadBack,
}

/// rgex-pgas's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgasEvent {
    /// An rpc sent.
    Rpc,
    /// A batch of rpcs held back, then sent together.
    HeldBatch,
    /// An rpc that waited for its window.
    WindowStall,
}

const AM_SENT: usize = 0; // 2 origins x 2 directions x 3 categories x 5 classes
const AM_FP: usize = AM_SENT + 60; // client, protocol
const AM_NP: usize = AM_FP + 2; // client, protocol
const AM_WOULD_BLOCK: usize = AM_NP + 2;
const AM_DELIVERED: usize = AM_WOULD_BLOCK + 1; // 2 origins x 2 directions
const AM_MALFORMED: usize = AM_DELIVERED + 4;
const RMA: usize = AM_MALFORMED + 1; // 2 ops x 4 paths x (ops, bytes)
const RMA_KIND: usize = RMA + 16; // 2 ops x 4 completion kinds
const SIGNAL: usize = RMA_KIND + 8; // put-with-signal: 3 paths x (ops, bytes)
const ATOMICS: usize = SIGNAL + 6; // 3 implementations x 25 ops
const VIS: usize = ATOMICS + 75;
const COLL: usize = VIS + 4;
const POLL: usize = COLL + COLL_KINDS.len(); // polls, empty, waits, wait_ns
const NET: usize = POLL + 4; // credit stalls, retries, read-backs, backlog peak
const PGAS: usize = NET + 4; // rpcs, held batches, window stalls
/// How many counters a thread's block holds.
pub(crate) const COUNTERS: usize = PGAS + 3;

/// One counter: its index in a thread's block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counter(usize);

fn dir_index(d: Direction) -> usize {
    match d {
        Direction::Request => 0,
        Direction::Reply => 1,
    }
}

fn cat_index(c: Category) -> usize {
    match c {
        Category::Short => 0,
        Category::Medium => 1,
        Category::Long => 2,
    }
}

impl Counter {
    pub(crate) fn index(self) -> usize {
        self.0
    }
    pub(crate) fn from_index(i: usize) -> Self {
        Counter(i)
    }
    pub(crate) fn am_sent(client: bool, dir: Direction, cat: Category, len: usize) -> Self {
        let origin = usize::from(!client);
        Counter(
            AM_SENT
                + ((origin * 2 + dir_index(dir)) * 3 + cat_index(cat)) * 5
                + size_class(cat, len),
        )
    }
    /// A fixed-payload (`np` false) or negotiated-payload send, to a
    /// client's handler or a protocol's.
    pub(crate) fn path(client: bool, np: bool) -> Self {
        Counter(if np { AM_NP } else { AM_FP } + usize::from(!client))
    }
    pub(crate) const WOULD_BLOCK: Counter = Counter(AM_WOULD_BLOCK);
    pub(crate) const MALFORMED: Counter = Counter(AM_MALFORMED);
    pub(crate) fn delivered(client: bool, dir: Direction) -> Self {
        Counter(AM_DELIVERED + usize::from(!client) * 2 + dir_index(dir))
    }
    /// (ops, bytes).
    pub(crate) fn rma(op: RmaOp, route: RmaRoute) -> (Self, Self) {
        let base = RMA + (op as usize * ROUTES.len() + route as usize) * 2;
        (Counter(base), Counter(base + 1))
    }
    pub(crate) fn rma_kind(op: RmaOp, kind: Completion) -> Self {
        Counter(RMA_KIND + op as usize * COMPLETIONS.len() + kind as usize)
    }
    /// (ops, bytes) of a put-with-signal by `route` (never `Cma`).
    pub(crate) fn signal(route: RmaRoute) -> (Self, Self) {
        let base = SIGNAL + (route as usize).min(2) * 2;
        (Counter(base), Counter(base + 1))
    }
    pub(crate) fn atomic(imp: AtomicImpl, op: AtomicOp) -> Self {
        Counter(ATOMICS + imp as usize * 25 + op as usize)
    }
    pub(crate) fn vis(m: VisMech) -> Self {
        Counter(VIS + m as usize)
    }
    pub(crate) fn coll(kind: &str) -> Self {
        let i = COLL_KINDS
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(COLL_KINDS.len() - 1);
        Counter(COLL + i)
    }
    pub(crate) const POLLS: Counter = Counter(POLL);
    pub(crate) const EMPTY_POLLS: Counter = Counter(POLL + 1);
    pub(crate) const WAITS: Counter = Counter(POLL + 2);
    pub(crate) const WAIT_NS: Counter = Counter(POLL + 3);
    pub(crate) fn net(e: NetEvent) -> Self {
        Counter(NET + e as usize)
    }
    pub(crate) const BACKLOG_PEAK: Counter = Counter(NET + 3);
    pub(crate) fn pgas(e: PgasEvent) -> Self {
        Counter(PGAS + e as usize)
    }

    /// A peak (the highest over threads), not a count (summed).
    pub(crate) fn is_peak(self) -> bool {
        self == Self::BACKLOG_PEAK
    }

    /// The counter's key in the stats JSON, and the category that turns
    /// it on.
    pub(crate) fn name(self) -> (String, &'static str) {
        const DIRS: [&str; 2] = ["request", "reply"];
        const ORIGINS: [&str; 2] = ["client", "protocol"];
        const CATS: [&str; 3] = ["short", "medium", "long"];
        const IMPLS: [&str; 3] = ["shared", "offload", "reference"];
        const MECHS: [&str; 4] = ["direct", "rma", "am", "native"];
        const POLLS: [&str; 4] = ["polls", "empty_polls", "waits", "wait_ns"];
        const NETS: [&str; 4] = ["credit_stalls", "retries", "read_backs", "backlog_peak"];
        const PGASES: [&str; 3] = ["rpcs", "held_batches", "window_stalls"];
        let i = self.0;
        match i {
            _ if i < AM_FP => {
                let (class, rest) = ((i - AM_SENT) % 5, (i - AM_SENT) / 5);
                let (cat, rest) = (rest % 3, rest / 3);
                let (dir, origin) = (rest % 2, rest / 2);
                let origin = ORIGINS[origin];
                (
                    format!(
                        "am.{origin}.{}.{}.{}",
                        DIRS[dir], CATS[cat], SIZE_CLASSES[class]
                    ),
                    "am",
                )
            }
            _ if i < AM_NP => (format!("am.{}.fp", ORIGINS[i - AM_FP]), "am"),
            _ if i < AM_WOULD_BLOCK => (format!("am.{}.np", ORIGINS[i - AM_NP]), "am"),
            AM_WOULD_BLOCK => ("am.would_block".into(), "am"),
            _ if i < AM_MALFORMED => {
                let (dir, origin) = ((i - AM_DELIVERED) % 2, (i - AM_DELIVERED) / 2);
                (
                    format!("am.{}.delivered.{}", ORIGINS[origin], DIRS[dir]),
                    "am",
                )
            }
            AM_MALFORMED => ("am.malformed".into(), "am"),
            _ if i < RMA_KIND => {
                let (unit, rest) = ((i - RMA) % 2, (i - RMA) / 2);
                let (route, op) = (rest % ROUTES.len(), rest / ROUTES.len());
                (
                    format!(
                        "rma.{}.{}.{}",
                        ["put", "get"][op],
                        ROUTES[route],
                        ["ops", "bytes"][unit]
                    ),
                    "rma",
                )
            }
            _ if i < SIGNAL => {
                let (kind, op) = ((i - RMA_KIND) % 4, (i - RMA_KIND) / 4);
                (
                    format!("rma.{}.{}", ["put", "get"][op], COMPLETIONS[kind]),
                    "rma",
                )
            }
            _ if i < ATOMICS => {
                let (unit, route) = ((i - SIGNAL) % 2, (i - SIGNAL) / 2);
                (
                    format!(
                        "rma.put_signal.{}.{}",
                        ROUTES[route],
                        ["ops", "bytes"][unit]
                    ),
                    "rma",
                )
            }
            _ if i < VIS => {
                let (op, imp) = ((i - ATOMICS) % 25, (i - ATOMICS) / 25);
                let op = format!("{:?}", AtomicOp::ALL[op]).to_lowercase();
                (format!("atomics.{}.{op}", IMPLS[imp]), "atomics")
            }
            _ if i < COLL => (format!("vis.{}", MECHS[i - VIS]), "vis"),
            _ if i < POLL => (format!("coll.{}", COLL_KINDS[i - COLL]), "coll"),
            _ if i < NET => (format!("poll.{}", POLLS[i - POLL]), "poll"),
            _ if i < PGAS => (format!("net.{}", NETS[i - NET]), "net"),
            _ => (format!("pgas.{}", PGASES[i - PGAS]), "pgas"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_has_a_name_of_its_own() {
        let names: std::collections::HashSet<String> =
            (0..COUNTERS).map(|i| Counter(i).name().0).collect();
        assert_eq!(names.len(), COUNTERS);
        let c = Counter::am_sent(true, Direction::Reply, Category::Medium, 100);
        assert_eq!(c.name().0, "am.client.reply.medium.le1k");
        let (ops, bytes) = Counter::rma(RmaOp::Get, RmaRoute::Native);
        assert_eq!(ops.name().0, "rma.get.native.ops");
        assert_eq!(bytes.name().0, "rma.get.native.bytes");
        assert_eq!(
            Counter::rma(RmaOp::Get, RmaRoute::Cma).0.name().0,
            "rma.get.cma.ops"
        );
        assert_eq!(
            Counter::rma_kind(RmaOp::Get, Completion::Counted).name().0,
            "rma.get.counted"
        );
        assert_eq!(
            Counter::signal(RmaRoute::Reference).1.name().0,
            "rma.put_signal.reference.bytes"
        );
        assert_eq!(
            Counter::atomic(AtomicImpl::Offload, AtomicOp::Fadd)
                .name()
                .0,
            "atomics.offload.fadd"
        );
        assert_eq!(Counter::path(false, true).name().0, "am.protocol.np");
        assert_eq!(
            Counter::delivered(true, Direction::Reply).name().0,
            "am.client.delivered.reply"
        );
        assert_eq!(Counter::BACKLOG_PEAK.name().0, "net.backlog_peak");
        assert_eq!(
            Counter::pgas(PgasEvent::WindowStall).name().0,
            "pgas.window_stalls"
        );
        assert_eq!(Counter::coll("allreduce").name().0, "coll.allreduce");
    }
}
