//! Atomic domains: creation (the collective choice of implementation) and
//! the three forms of op (NB with an event, NBI, blocking).

use crate::reference::{encode, Reference};
use crate::{cpu, nbi, op_names, AtomicFlags, AtomicValue, AtomicsConfig, Error, Result};
use rgex_core::conduit::{AtomicOp, AtomicRequest, AtomicType, OpSet};
use rgex_core::{Event, Flags, GlobalAddr, OpCounter, Progress, Rank, Segment};
use rgex_endpoint::team::ReduceOp;
use rgex_endpoint::{Endpoint, Team};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use rgex_core::atomic::Implementation;

const CAP_OFFLOAD: u64 = 1;
const CAP_SHARED: u64 = 2;

/// What the domain knows of one job rank: whether it is a member, and its
/// segment's length. Whether its segment is mapped here is the endpoint's
/// neighbourhood table's to say (`Endpoint::locality`), read where needed.
#[derive(Clone, Copy)]
struct Member {
    member: bool,
    seg_len: u64,
}

struct Inner {
    ty: AtomicType,
    ops: OpSet,
    imp: Implementation,
    /// Ops at offsets from here take [`start_slow`](AtomicDomain::start_slow):
    /// client segments' words ([`CLIENT_SEGMENT_STRIDE`](rgex_endpoint::CLIENT_SEGMENT_STRIDE)),
    /// or every word (0) when atomics are observed (`RGEX_STATS`,
    /// `RGEX_TRACE`), decided when the domain is made.
    slow_from: u64,
    me: Rank,
    team_size: u32,
    members: Vec<Member>,
    ep: Arc<Endpoint>,
    progress: Arc<dyn Progress>,
    reference: Arc<Reference>,
}

/// A remote atomic domain over a team for one data type `T` and a set of
/// ops (see the [crate docs](crate) for semantics). Cheap to clone; usable
/// from many threads at once.
///
/// ```no_run
/// # fn demo(client: &rgex_endpoint::Client) -> rgex_atomics::Result<()> {
/// use rgex_atomics::{AtomicDomain, AtomicFlags, AtomicOp, OpSet};
/// use rgex_core::{GlobalAddr, Rank};
/// let ad = AtomicDomain::<u64>::new(
///     client.endpoint(),
///     client.world(),
///     OpSet::of(&[AtomicOp::Fadd, AtomicOp::Get]),
/// )?;
/// let counter = GlobalAddr::new(Rank(0), 0);
/// let mine = ad.fetch_add(counter, 1, AtomicFlags::empty())?;
/// let ev = ad.op_nb(counter, AtomicOp::Fadd, 1, 0, AtomicFlags::empty())?;
/// let next = ev.wait()?;
/// assert!(next > mine);
/// println!("implementation: {:?}", ad.implementation());
/// # Ok(()) }
/// ```
pub struct AtomicDomain<T: AtomicValue> {
    inner: Arc<Inner>,
    _t: PhantomData<fn() -> T>,
}

impl<T: AtomicValue> Clone for AtomicDomain<T> {
    fn clone(&self) -> Self {
        AtomicDomain {
            inner: self.inner.clone(),
            _t: PhantomData,
        }
    }
}

impl<T: AtomicValue> std::fmt::Debug for AtomicDomain<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicDomain")
            .field("type", &self.inner.ty)
            .field("ops", &op_names(self.inner.ops))
            .field("implementation", &self.inner.imp)
            .finish()
    }
}

/// Options of domain creation.
///
/// ```no_run
/// # fn demo(client: &rgex_endpoint::Client) -> rgex_atomics::Result<()> {
/// use rgex_atomics::{AtomicDomain, AtomicOp, Implementation, OpSet};
/// let ad = AtomicDomain::<i32>::builder(OpSet::of(&[AtomicOp::Fadd]))
///     .force_reference(true)
///     .build(client.endpoint(), client.world())?;
/// assert_eq!(ad.implementation(), Implementation::Reference);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Builder<T> {
    ops: OpSet,
    /// `None`: as the endpoint's [`AtomicsConfig`] says.
    choice: Option<Choice>,
    _t: PhantomData<fn() -> T>,
}

/// Which implementation a domain may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    /// The fastest every member can provide.
    Auto,
    /// This one, or an error.
    Only(Implementation),
}

impl Choice {
    /// What `config` requires.
    fn of(config: &AtomicsConfig) -> Choice {
        match config.required {
            None => Choice::Auto,
            Some(imp) => Choice::Only(imp),
        }
    }

    /// This choice's bit in the team's word of requirements (none for
    /// `Auto`).
    fn required_bit(self) -> u64 {
        match self {
            Choice::Auto => 0,
            Choice::Only(Implementation::Offload) => 1,
            Choice::Only(Implementation::SharedMemory) => 2,
            Choice::Only(Implementation::Reference) => 4,
        }
    }

    /// The implementations in a word of requirements.
    fn all_in(required: u64) -> impl Iterator<Item = Implementation> {
        [
            Implementation::Offload,
            Implementation::SharedMemory,
            Implementation::Reference,
        ]
        .into_iter()
        .filter(move |&i| required & Choice::Only(i).required_bit() != 0)
    }

    /// The implementations in a (non-zero) word of requirements, by name.
    fn names(required: u64) -> String {
        Choice::all_in(required)
            .map(|i| format!("{i:?}"))
            .collect::<Vec<_>>()
            .join(" and ")
    }

    /// The first implementation in a (non-zero) word of requirements.
    fn first(required: u64) -> Implementation {
        Choice::all_in(required)
            .next()
            .unwrap_or(Implementation::Reference)
    }

    /// The capability bits this choice lets the domain use.
    fn caps(self) -> u64 {
        match self {
            Choice::Auto => CAP_OFFLOAD | CAP_SHARED,
            Choice::Only(Implementation::Offload) => CAP_OFFLOAD,
            Choice::Only(Implementation::SharedMemory) => CAP_SHARED,
            Choice::Only(Implementation::Reference) => 0,
        }
    }
}

impl<T: AtomicValue> Builder<T> {
    /// Force (or, with `false`, do not force, whatever `RGEX_ATOMICS`
    /// says) the AM reference implementation.
    pub fn force_reference(mut self, yes: bool) -> Self {
        self.choice = Some(if yes {
            Choice::Only(Implementation::Reference)
        } else {
            Choice::Auto
        });
        self
    }

    /// Require `imp`, whatever `RGEX_ATOMICS` says: creation fails on
    /// every member with [`Error::DomainUnavailable`] if some member cannot
    /// provide it (its segment is not mapped everywhere, its conduit does
    /// not offload this type and op set), or if members require different
    /// implementations. A member that requires nothing takes the one the
    /// others require, when every member can provide it.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_atomics::Result<()> {
    /// use rgex_atomics::{AtomicDomain, AtomicOp, Implementation, OpSet};
    /// let ad = AtomicDomain::<u64>::builder(OpSet::of(&[AtomicOp::Fadd]))
    ///     .implementation(Implementation::SharedMemory)
    ///     .build(client.endpoint(), client.world())?;
    /// # Ok(()) }
    /// ```
    pub fn implementation(mut self, imp: Implementation) -> Self {
        self.choice = Some(Choice::Only(imp));
        self
    }

    /// Create the domain: collective over `team` (every member calls it,
    /// in the same order as its other collectives on `team`, with the same
    /// type and op set).
    pub fn build(self, ep: &Arc<Endpoint>, team: &Team) -> Result<AtomicDomain<T>> {
        let ty = T::TYPE;
        let ops = self.ops;
        let conduit = ep.conduit();
        let me = conduit.rank();
        // Local checks first; a failing rank still joins the collective so
        // its peers do not hang, and every member gets the error.
        let mut local_err = None;
        if ops == OpSet::EMPTY {
            local_err = Some(Error::EmptyOpSet { ty });
        }
        let bit_ops = OpSet(ops.0 & OpSet::of(&BIT_OPS).0);
        if ty.is_float() && bit_ops != OpSet::EMPTY {
            local_err = Some(Error::BitOpOnFloat {
                ty,
                ops: op_names(bit_ops),
            });
        }
        let choice = match self.choice {
            Some(c) => c,
            None => Choice::of(&AtomicsConfig::of(ep)?),
        };
        // The handlers exist on every member before the collective ends,
        // so no member sends a request before its target can run it.
        let reference = Reference::for_endpoint(ep)?;
        let mut members = vec![
            Member {
                member: false,
                seg_len: 0,
            };
            conduit.size() as usize
        ];
        let mut caps = CAP_OFFLOAD | CAP_SHARED;
        // Why this rank lacks each capability, for an error if required.
        let mut no_shared = None;
        for r in 0..team.size() {
            let rank = team.world_rank(r)?;
            if ep.locality().mapped_segment(rank).is_none() {
                caps &= !CAP_SHARED;
                // Name another rank than this one where there is one.
                if no_shared.is_none_or(|r| r == me) {
                    no_shared = Some(rank);
                }
            }
            members[rank.index()] = Member {
                member: true,
                seg_len: conduit.segment_len(rank),
            };
        }
        if !conduit.atomic_offload(ty, ops) {
            caps &= !CAP_OFFLOAD;
        }
        let local_caps = caps;
        caps &= choice.caps();
        if local_err.is_some() {
            caps = 0;
        }
        let ok = u64::from(local_err.is_none());
        let desc = encode(ty, AtomicOp::Set, false, false) as u64 | u64::from(ops.0) << 8;
        // One allreduce (bitwise and): the capabilities every member has,
        // whether every member succeeded, the description and its
        // complement (all members agree iff and(desc) == !and(!desc): and
        // == or exactly when all values are equal), and the complement of
        // what this member requires (so !and(!req) is every requirement of
        // the team: each member sees them all and fails alike).
        let req = choice.required_bit();
        let all = team.allreduce(&[caps, ok, desc, !desc, !req], ReduceOp::And)?;
        if let Some(e) = local_err {
            return Err(e);
        }
        if all[1] == 0 {
            return Err(Error::Config(format!(
                "atomic domain creation on {me}: another member of the team refused its arguments ({ty:?} {{{}}})",
                op_names(ops)
            )));
        }
        if all[2] != !all[3] {
            return Err(Error::DomainMismatch {
                me,
                ty,
                set: op_names(ops),
            });
        }
        let imp = if all[0] & CAP_OFFLOAD != 0 {
            Implementation::Offload
        } else if all[0] & CAP_SHARED != 0 {
            Implementation::SharedMemory
        } else {
            Implementation::Reference
        };
        // Every member fails unless every requirement in the team is the
        // implementation taken (a member that required nothing takes what
        // another required, when all can).
        let required = !all[4];
        if required != 0 && required != Choice::Only(imp).required_bit() {
            let why = match choice {
                _ if required.count_ones() > 1 => format!(
                    "the team's members require {} (they must agree; this rank requires {})",
                    Choice::names(required),
                    match choice {
                        Choice::Auto => "none".to_owned(),
                        Choice::Only(want) => format!("{want:?}"),
                    }
                ),
                Choice::Only(Implementation::Offload) if local_caps & CAP_OFFLOAD == 0 => {
                    format!(
                        "the {} conduit offers no offload of this type and op set to this team",
                        conduit.name()
                    )
                }
                Choice::Only(Implementation::SharedMemory) if local_caps & CAP_SHARED == 0 => {
                    format!(
                        "the segment of {} is not mapped in this process",
                        no_shared.map_or("a member".to_owned(), |r| r.to_string())
                    )
                }
                _ => "not every member of the team can provide it".to_owned(),
            };
            return Err(Error::DomainUnavailable {
                me,
                ty,
                set: op_names(ops),
                imp: match choice {
                    Choice::Only(want) => want,
                    Choice::Auto => Choice::first(required),
                },
                why,
            });
        }
        let progress: Arc<dyn Progress> = ep.clone();
        Ok(AtomicDomain {
            inner: Arc::new(Inner {
                ty,
                ops,
                imp,
                slow_from: if rgex_core::observe::observes("atomics") {
                    0
                } else {
                    rgex_endpoint::CLIENT_SEGMENT_STRIDE
                },
                me,
                team_size: team.size(),
                members,
                ep: ep.clone(),
                progress,
                reference,
            }),
            _t: PhantomData,
        })
    }
}

const BIT_OPS: [AtomicOp; 6] = [
    AtomicOp::And,
    AtomicOp::Fand,
    AtomicOp::Or,
    AtomicOp::For,
    AtomicOp::Xor,
    AtomicOp::Fxor,
];

/// The handle of a non-blocking atomic: completes with the fetched value
/// (the old value for GET, SWAP, CAS/FCAS and the F-ops; zero for ops that
/// fetch nothing).
#[must_use = "an atomic event must be waited on to know the op completed"]
pub struct AtomicEvent<T> {
    state: State,
    _t: PhantomData<fn() -> T>,
}

/// Ready (the op finished during injection: shared memory, offload that
/// completed at once) or pending. The pending half is boxed: it already
/// costs the allocations of a message in flight, and an event stays two
/// words, so a throughput loop holding 100,000 of them moves 1.6 MB, not
/// 4 MB (16 ns per FADD on shared memory before, against 7.6 latency).
enum State {
    Ready(u64),
    Pending(Box<Pending>),
}

/// An op in flight: its completion and where its value lands.
struct Pending {
    event: Event,
    value: Arc<AtomicU64>,
}

impl<T: AtomicValue> std::fmt::Debug for AtomicEvent<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicEvent")
            .field("value", &self.value())
            .finish()
    }
}

impl<T: AtomicValue> AtomicEvent<T> {
    fn ready(bits: u64) -> Self {
        AtomicEvent {
            state: State::Ready(bits),
            _t: PhantomData,
        }
    }

    /// True if the op has completed. Does not poll.
    pub fn test(&self) -> bool {
        match &self.state {
            State::Ready(_) => true,
            State::Pending(p) => p.event.test(),
        }
    }

    /// The fetched value, if the op has completed. Does not poll.
    pub fn value(&self) -> Option<T> {
        match &self.state {
            State::Ready(b) => Some(T::from_bits64(*b)),
            State::Pending(p) => p
                .event
                .test()
                // Relaxed: `test` made an Acquire load of the completion
                // counter the reply handler released after storing this.
                .then(|| T::from_bits64(p.value.load(Ordering::Relaxed))),
        }
    }

    /// True if the op finished during injection (no message in flight).
    pub fn is_invalid(&self) -> bool {
        matches!(self.state, State::Ready(_))
    }

    /// Poll until the op completes; its fetched value, or the error that
    /// failed it (its target went away, on a conduit that can tell),
    /// never a made-up value.
    pub fn wait(self) -> Result<T> {
        match self.state {
            State::Ready(b) => Ok(T::from_bits64(b)),
            State::Pending(p) => {
                let Pending { event, value } = *p;
                event.wait()?;
                // Relaxed: the wait ended with an Acquire load of the
                // counter the reply handler released after storing this.
                Ok(T::from_bits64(value.load(Ordering::Relaxed)))
            }
        }
    }

    /// Wait for every event; their values in order, or the first error
    /// (every event is waited for all the same).
    pub fn wait_all(events: Vec<AtomicEvent<T>>) -> Result<Vec<T>> {
        let all: Vec<Result<T>> = events.into_iter().map(AtomicEvent::wait).collect();
        all.into_iter().collect()
    }
}

/// An atomic event is a future of [`wait`](AtomicEvent::wait)'s answer:
/// the fetched value or the error that failed the op. Woken by whichever
/// thread's progress completes it; someone must drive progress meanwhile
/// (the endpoint's progress task, a thread that waits or polls).
impl<T: AtomicValue> std::future::Future for AtomicEvent<T> {
    type Output = Result<T>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match &mut self.get_mut().state {
            State::Ready(b) => std::task::Poll::Ready(Ok(T::from_bits64(*b))),
            State::Pending(p) => {
                let r = std::task::ready!(std::pin::Pin::new(&mut p.event).poll(cx));
                // Relaxed: the poll that found the op done made an Acquire
                // read of the counter the reply handler released after
                // storing this.
                std::task::Poll::Ready(r.map(|()| T::from_bits64(p.value.load(Ordering::Relaxed))))
            }
        }
    }
}

/// An op started: `Ok(bits)` if it finished during injection, else its
/// completion counter and result slot.
type Started = std::result::Result<u64, (Arc<OpCounter>, Arc<AtomicU64>)>;

/// Where an op's completion goes.
enum Sink<'a> {
    /// An event of its own (NB).
    Event,
    /// This thread's NBI Rmw counter.
    Nbi(&'a Arc<OpCounter>),
}

impl<T: AtomicValue> AtomicDomain<T> {
    /// Create a domain with default options (collective over `team`; see
    /// [`Builder::build`]).
    pub fn new(ep: &Arc<Endpoint>, team: &Team, ops: OpSet) -> Result<Self> {
        Self::builder(ops).build(ep, team)
    }

    /// Options for a domain offering `ops`.
    pub fn builder(ops: OpSet) -> Builder<T> {
        Builder {
            ops,
            choice: None,
            _t: PhantomData,
        }
    }

    /// The implementation chosen at creation.
    pub fn implementation(&self) -> Implementation {
        self.inner.imp
    }

    /// The data type.
    pub fn data_type(&self) -> AtomicType {
        self.inner.ty
    }

    /// The ops offered.
    pub fn ops(&self) -> OpSet {
        self.inner.ops
    }

    /// Check an op before anything moves; the target's description.
    #[inline]
    fn check(&self, at: GlobalAddr, op: AtomicOp, flags: AtomicFlags) -> Result<Member> {
        let i = &*self.inner;
        // Refused once the client is finalized or dropped, on every path
        // (CPU atomics on mapped segments too), as RMA is.
        i.ep.check_open("an atomic op")?;
        let t = match i.members.get(at.rank.index()) {
            Some(t) if t.member => *t,
            _ => {
                return Err(Error::NotInTeam {
                    rank: at.rank,
                    offset: at.offset,
                    team_size: i.team_size,
                })
            }
        };
        if !i.ops.contains(op) {
            return Err(Error::OpNotInSet {
                op,
                ty: i.ty,
                rank: at.rank,
                offset: at.offset,
                set: op_names(i.ops),
            });
        }
        let size = i.ty.size();
        if let Err(refused) =
            rgex_core::segment::check_range(at.rank, t.seg_len, at.offset, size as u64)
        {
            // A client segment's word, or the primordial segment's error.
            if !i.ep.check_client_range(at.rank, at.offset, size)? {
                return Err(refused);
            }
        }
        // Sizes are powers of two.
        if at.offset & (size as u64 - 1) != 0 {
            return Err(Error::Misaligned {
                ty: i.ty,
                rank: at.rank,
                offset: at.offset,
                align: size,
            });
        }
        if flags.contains(AtomicFlags::TARGET_SELF) && at.rank != i.me {
            return Err(self.broken("TARGET_SELF", at));
        }
        if flags.contains(AtomicFlags::TARGET_LOCAL)
            && i.ep.locality().mapped_segment(at.rank).is_none()
        {
            return Err(self.broken("TARGET_LOCAL", at));
        }
        Ok(t)
    }

    fn broken(&self, flag: &'static str, at: GlobalAddr) -> Error {
        Error::FlagBroken {
            flag,
            rank: at.rank,
            offset: at.offset,
            me: self.inner.me,
        }
    }

    /// Apply a CPU atomic on a mapped segment (checked range).
    #[inline]
    fn cpu(
        &self,
        seg: &Segment,
        at: GlobalAddr,
        op: AtomicOp,
        a: u64,
        b: u64,
        f: AtomicFlags,
    ) -> Result<u64> {
        let ty = self.inner.ty;
        let p = seg.ptr_at(at.offset, ty.size())?;
        if (p as usize) & (ty.size() - 1) != 0 {
            return Err(Error::Misaligned {
                ty,
                rank: at.rank,
                offset: at.offset,
                align: ty.size(),
            });
        }
        // SAFETY: `p` is inside the target's mapped segment (checked) and
        // aligned (checked); the segment stays mapped for the job; a
        // domain's words are accessed only atomically (its contract).
        Ok(unsafe {
            cpu::apply(
                p,
                ty,
                op,
                a,
                b,
                f.contains(AtomicFlags::ACQUIRE),
                f.contains(AtomicFlags::RELEASE),
            )
        })
    }

    /// Start one op; `Ok(Ok(bits))` if it finished during injection,
    /// `Ok(Err(slot))` if it is in flight (counted on the sink).
    #[inline]
    fn start(
        &self,
        at: GlobalAddr,
        op: AtomicOp,
        a: T,
        b: T,
        flags: AtomicFlags,
        sink: Sink<'_>,
    ) -> Result<Started> {
        self.check(at, op, flags)?;
        let (a, b) = (a.to_bits64(), b.to_bits64());
        // A client segment's word, or when atomics are observed any word
        // (`slow_from` is then 0): out of line. The compare is today's,
        // against a bound the domain holds instead of a constant.
        if at.offset >= self.inner.slow_from {
            return self.start_slow(at, op, a, b, flags, sink);
        }
        self.start_as(self.inner.imp, false, at, op, a, b, flags, sink)
    }

    /// [`start`](Self::start) of an op on a client segment's word, or of
    /// any op when atomics are observed (told to the observer here, or
    /// by the observed conduit for an offloaded one).
    #[cold]
    #[inline(never)]
    fn start_slow(
        &self,
        at: GlobalAddr,
        op: AtomicOp,
        a: u64,
        b: u64,
        flags: AtomicFlags,
        sink: Sink<'_>,
    ) -> Result<Started> {
        use rgex_core::observe::AtomicImpl;
        let i = &*self.inner;
        // A client segment's word: only the reference reaches it (its
        // target applies the op under the segment's lock), so every op on
        // it is atomic with every other, whatever the domain offloads.
        let client = at.offset >= rgex_endpoint::CLIENT_SEGMENT_STRIDE;
        let imp = match client {
            true => Implementation::Reference,
            false => i.imp,
        };
        let how = match imp {
            Implementation::SharedMemory => Some(AtomicImpl::Shared),
            Implementation::Reference if at.rank == i.me && !client => Some(AtomicImpl::Shared),
            Implementation::Reference => Some(AtomicImpl::Reference),
            Implementation::Offload => None,
        };
        if let Some(how) = how {
            rgex_core::observe::atomic(how, op, at.rank);
        }
        self.start_as(imp, client, at, op, a, b, flags, sink)
    }

    /// Start one op by `imp` (`client`: on a client segment's word).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn start_as(
        &self,
        imp: Implementation,
        client: bool,
        at: GlobalAddr,
        op: AtomicOp,
        a: u64,
        b: u64,
        flags: AtomicFlags,
        sink: Sink<'_>,
    ) -> Result<Started> {
        let i = &*self.inner;
        let (acq, rel) = (
            flags.contains(AtomicFlags::ACQUIRE),
            flags.contains(AtomicFlags::RELEASE),
        );
        match imp {
            Implementation::SharedMemory => {
                let seg =
                    i.ep.locality()
                        .mapped_segment(at.rank)
                        .expect("every member is mapped on this path");
                self.cpu(&seg, at, op, a, b, flags)
                    .map(|v| Ok(fetched(op, v)))
            }
            Implementation::Reference if at.rank == i.me && !client => {
                // Our own word: the handlers apply CPU atomics to it too,
                // so applying one here is atomic with them.
                let seg = *i.ep.segment();
                self.cpu(&seg, at, op, a, b, flags)
                    .map(|v| Ok(fetched(op, v)))
            }
            Implementation::Reference => {
                let (done, value) = match sink {
                    Sink::Event => (OpCounter::new(0), Arc::new(AtomicU64::new(0))),
                    Sink::Nbi(c) => (c.clone(), Arc::new(AtomicU64::new(0))),
                };
                // NBI ops and ops that fetch nothing leave the value zero.
                let v = (matches!(sink, Sink::Event) && op.fetches()).then(|| value.clone());
                let imm = if flags.contains(AtomicFlags::IMMEDIATE) {
                    Flags::IMMEDIATE
                } else {
                    Flags::empty()
                };
                i.reference
                    .start(&i.ep, at, encode(i.ty, op, acq, rel), a, b, &done, v, imm)?;
                Ok(Err((done, value)))
            }
            Implementation::Offload => {
                let req = AtomicRequest {
                    target: at.rank,
                    offset: at.offset,
                    ty: i.ty,
                    op,
                    operand1: a,
                    operand2: b,
                    acquire: acq,
                    release: rel,
                };
                let done = match sink {
                    Sink::Event => OpCounter::new(0),
                    Sink::Nbi(c) => c.clone(),
                };
                let value = Arc::new(AtomicU64::new(0));
                let imm = if flags.contains(AtomicFlags::IMMEDIATE) {
                    Flags::IMMEDIATE
                } else {
                    Flags::empty()
                };
                i.ep.inject_or_wait(imm, || i.ep.conduit().atomic_start(&req, &value, &done))?;
                // Whatever a conduit stores for an op that fetches nothing
                // is not the op's value: report zero.
                let value = if op.fetches() {
                    value
                } else {
                    Arc::new(AtomicU64::new(0))
                };
                Ok(Err((done, value)))
            }
        }
    }

    /// Non-blocking op: `a` is the operand (the compare value for CAS),
    /// `b` the new value of a CAS (ignored otherwise). The event yields the
    /// fetched value.
    #[inline]
    pub fn op_nb(
        &self,
        at: GlobalAddr,
        op: AtomicOp,
        a: T,
        b: T,
        flags: AtomicFlags,
    ) -> Result<AtomicEvent<T>> {
        Ok(match self.start(at, op, a, b, flags, Sink::Event)? {
            Ok(bits) => AtomicEvent::ready(bits),
            // A failed op keeps its counter, so `wait` sees why.
            Err((done, value)) if done.peek_done() && done.failure().is_none() => {
                // Relaxed: `peek_done` was an Acquire load pairing with the
                // Release in `done()` that followed the store.
                AtomicEvent::ready(value.load(Ordering::Relaxed))
            }
            Err((done, value)) => AtomicEvent {
                state: State::Pending(Box::new(Pending {
                    event: Event::pending(done, self.inner.progress.clone()),
                    value,
                })),
                _t: PhantomData,
            },
        })
    }

    /// Implicit-handle op (the fetched value is discarded): completion joins
    /// this thread's Rmw category (or its open access region), synced by
    /// [`nbi_wait`](Self::nbi_wait) or `Endpoint::nbi_wait(NbiCategory::Rmw)`.
    #[inline]
    pub fn op_nbi(
        &self,
        at: GlobalAddr,
        op: AtomicOp,
        a: T,
        b: T,
        flags: AtomicFlags,
    ) -> Result<()> {
        let c = nbi::counter(&self.inner.ep);
        // In flight or not, the op is counted on `c` (or already done).
        let _ = self.start(at, op, a, b, flags, Sink::Nbi(&c))?;
        Ok(())
    }

    /// True if this thread's implicit-handle atomics (of every domain) have
    /// completed. Does not poll.
    pub fn nbi_test(&self) -> bool {
        nbi::nbi_test(&self.inner.ep)
    }

    /// Poll until this thread's implicit-handle atomics (of every domain)
    /// have completed; an error if one of them failed since the last sync.
    pub fn nbi_wait(&self) -> Result<()> {
        nbi::nbi_wait(&self.inner.ep)
    }

    /// Blocking op: returns the fetched value (zero for ops that fetch
    /// nothing) once the op has completed.
    #[inline]
    pub fn op(&self, at: GlobalAddr, op: AtomicOp, a: T, b: T, flags: AtomicFlags) -> Result<T> {
        self.op_nb(at, op, a, b, flags)?.wait()
    }

    /// Blocking GET.
    pub fn get(&self, at: GlobalAddr, flags: AtomicFlags) -> Result<T> {
        self.op(at, AtomicOp::Get, zero(), zero(), flags)
    }

    /// Blocking SET.
    pub fn set(&self, at: GlobalAddr, v: T, flags: AtomicFlags) -> Result<()> {
        self.op(at, AtomicOp::Set, v, zero(), flags).map(drop)
    }

    /// Blocking SWAP: the old value.
    pub fn swap(&self, at: GlobalAddr, v: T, flags: AtomicFlags) -> Result<T> {
        self.op(at, AtomicOp::Swap, v, zero(), flags)
    }

    /// Blocking FCAS: store `new` if the word's bits equal `expected`'s;
    /// the old value either way (success iff its bits equal `expected`'s).
    pub fn compare_swap(
        &self,
        at: GlobalAddr,
        expected: T,
        new: T,
        flags: AtomicFlags,
    ) -> Result<T> {
        self.op(at, AtomicOp::Fcas, expected, new, flags)
    }

    /// Blocking FADD: the old value.
    pub fn fetch_add(&self, at: GlobalAddr, v: T, flags: AtomicFlags) -> Result<T> {
        self.op(at, AtomicOp::Fadd, v, zero(), flags)
    }

    /// Blocking ADD.
    pub fn add(&self, at: GlobalAddr, v: T, flags: AtomicFlags) -> Result<()> {
        self.op(at, AtomicOp::Add, v, zero(), flags).map(drop)
    }

    /// Blocking FINC: the old value.
    pub fn fetch_inc(&self, at: GlobalAddr, flags: AtomicFlags) -> Result<T> {
        self.op(at, AtomicOp::Finc, zero(), zero(), flags)
    }

    /// Blocking INC.
    pub fn inc(&self, at: GlobalAddr, flags: AtomicFlags) -> Result<()> {
        self.op(at, AtomicOp::Inc, zero(), zero(), flags).map(drop)
    }
}

/// The value an op reports: the old value if it fetches, else zero.
#[inline]
fn fetched(op: AtomicOp, old: u64) -> u64 {
    if op.fetches() {
        old
    } else {
        0
    }
}

fn zero<T: AtomicValue>() -> T {
    T::from_bits64(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event is two words (the pending half boxed), so a loop that
    /// holds many moves little memory; a ready one carries its value.
    #[test]
    fn events_are_two_words() {
        assert_eq!(std::mem::size_of::<AtomicEvent<u64>>(), 16);
        let e = AtomicEvent::<u64>::ready(7);
        assert!(e.test() && e.is_invalid());
        assert_eq!(e.value(), Some(7));
        assert_eq!(e.wait().unwrap(), 7);
    }
}
