//! The one error type of rgex. Every message names the rank, the address
//! and the limit that was broken, so a report can be acted on without a
//! debugger.

use crate::atomic::{AtomicOp, AtomicType, Implementation};
use crate::Rank;

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in an rgex call.
///
/// ```
/// use rgex_core::{Error, Rank};
/// let e = Error::OutOfSegment { rank: Rank(2), offset: 0x100, len: 64, seg_len: 0x120 };
/// assert_eq!(
///     e.to_string(),
///     "remote range [0x100, 0x140) on rank 2 falls outside its segment of 0x120 bytes"
/// );
/// assert!(!e.is_would_block());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// IMMEDIATE was set and a resource was not available. Nothing was sent.
    #[error("would block: {resource} towards {peer} is exhausted and IMMEDIATE was set; nothing was sent")]
    WouldBlock {
        /// The peer the operation was for.
        peer: Rank,
        /// Which resource was missing (a queue, a buffer, credits).
        resource: &'static str,
    },
    /// A rank outside the job or team.
    #[error("rank {rank} is out of range: the job has {size} ranks (0..{size})")]
    RankOutOfRange {
        /// The rank asked for.
        rank: u32,
        /// How many ranks there are.
        size: u32,
    },
    /// A remote range outside the target's segment.
    #[error("remote range [{offset:#x}, {end:#x}) on {rank} falls outside its segment of {seg_len:#x} bytes", end = offset.saturating_add(*len))]
    OutOfSegment {
        /// The rank whose segment was addressed.
        rank: Rank,
        /// Start of the range.
        offset: u64,
        /// Length of the range.
        len: u64,
        /// The segment's length.
        seg_len: u64,
    },
    /// A remote range outside what its rank registered of a client
    /// segment.
    #[error("remote range [{offset:#x}, {end:#x}) on {rank} falls outside client segment {segment}, of which {rank} registered {limit:#x} bytes from offset {base:#x}", end = offset.saturating_add(*len))]
    OutOfClientSegment {
        /// The rank whose memory was addressed.
        rank: Rank,
        /// Start of the range.
        offset: u64,
        /// Length of the range.
        len: u64,
        /// The client segment's number.
        segment: usize,
        /// Where the segment starts in every rank's address space.
        base: u64,
        /// What `rank` registered.
        limit: u64,
    },
    /// An address in a client segment that is not (or no longer) there.
    #[error("offset {offset:#x} on {rank} lies in client segment {segment}, which {why}")]
    SegmentUnavailable {
        /// The rank whose memory was addressed.
        rank: Rank,
        /// The offset.
        offset: u64,
        /// The client segment's number.
        segment: usize,
        /// "was never registered (...)" or "is deregistered".
        why: &'static str,
    },
    /// An endpoint index this rank has no endpoint at.
    #[error("{rank} has no endpoint {index}: it has {count} (0, the primordial endpoint, to {last}); Client::create_endpoint opens more", last = count.saturating_sub(1))]
    EndpointOutOfRange {
        /// The rank asked.
        rank: Rank,
        /// The index asked for.
        index: u32,
        /// How many endpoints it has.
        count: u32,
    },
    /// An endpoint used after it was destroyed.
    #[error("{what} on endpoint {index} of {rank}: the endpoint was destroyed (Client::destroy_endpoint); nothing was sent")]
    EndpointDestroyed {
        /// What was refused.
        what: &'static str,
        /// The rank.
        rank: Rank,
        /// The endpoint's index.
        index: u32,
    },
    /// A payload larger than the category allows.
    #[error("{category} payload of {len} bytes to {peer} exceeds the limit of {max} bytes with {nargs} arguments")]
    PayloadTooLarge {
        /// "Medium" or "Long".
        category: &'static str,
        /// The destination.
        peer: Rank,
        /// Bytes asked for.
        len: usize,
        /// The limit.
        max: usize,
        /// The argument count the limit was computed for.
        nargs: usize,
    },
    /// Negotiated-payload prepare whose `least` exceeds what can be sent.
    #[error("prepare of a {category} to {peer} asked for at least {least} bytes, but at most {max} can be sent with {nargs} arguments")]
    LeastTooLarge {
        /// "Medium" or "Long".
        category: &'static str,
        /// The destination.
        peer: Rank,
        /// The `least` asked for.
        least: usize,
        /// The limit.
        max: usize,
        /// The argument count the limit was computed for.
        nargs: usize,
    },
    /// A negotiated-payload prepare with `least > most`, or a commit of more
    /// bytes than were granted.
    #[error("{what}: {len} bytes asked, but the limit is {limit}")]
    BadLength {
        /// Which call and which length.
        what: &'static str,
        /// The length given.
        len: usize,
        /// The bound it broke.
        limit: usize,
    },
    /// More than [`MAX_ARGS`](crate::MAX_ARGS) arguments.
    #[error("{nargs} AM arguments given; the limit is {max}")]
    TooManyArgs {
        /// Arguments given.
        nargs: usize,
        /// The limit (16).
        max: usize,
    },
    /// An AM names a handler index with nothing registered there.
    #[error("no AM handler is registered at index {index} on {rank}")]
    UnknownHandler {
        /// The rank whose table was consulted.
        rank: Rank,
        /// The index.
        index: u8,
    },
    /// An AM was dropped by its receiver, which has no handler at its
    /// index (the ranks' handler tables differ: one registered late, or
    /// not at all). Returned by the next poll of the rank that waits for
    /// it: the sender of a request (the receiver tells it), the receiver
    /// of a reply.
    #[error("{what} from {from} to {to} was dropped on {to}: no handler is registered there at index {index} (register handlers at the same indices on every rank before any rank sends to them)")]
    Dropped {
        /// The message: "an AM Medium request".
        what: String,
        /// The sender.
        from: Rank,
        /// The receiver, which dropped it.
        to: Rank,
        /// The handler index.
        index: u8,
    },
    /// A client send named a handler index reserved for rgex's own
    /// protocols (below `CLIENT_MIN`). Nothing was sent.
    #[error("{rank} may not send to handler index {index}: indices 0..{client_min} are reserved for rgex's protocols; clients use {client_min}..=255")]
    ReservedHandler {
        /// The sending rank.
        rank: Rank,
        /// The index named.
        index: u8,
        /// The lowest client index.
        client_min: u8,
    },
    /// A peer sent a protocol message this rank could not accept (wrong
    /// direction, category or argument count, or an id naming nothing in
    /// flight to that peer). It was not acted on. Returned by the next
    /// poll of the receiving rank.
    #[error("malformed protocol message from {from} to {to} for handler {handler:?} (index {index}): {why}; it was ignored")]
    Malformed {
        /// The sender.
        from: Rank,
        /// The receiver, which ignored it.
        to: Rank,
        /// The protocol handler's name.
        handler: String,
        /// Its index.
        index: u8,
        /// What was wrong.
        why: String,
    },
    /// A client handler returned an error for a message from `from`. The
    /// receiving endpoint counts it
    /// (`Endpoint::handler_errors`), logs the first few as warnings, and
    /// returns it from its next poll (rgex-endpoint's `Endpoint::poll`).
    #[error("handler {handler:?} (index {index}) on {to} failed on a message from {from}: {why}")]
    HandlerFailed {
        /// The sender of the message.
        from: Rank,
        /// The rank whose handler failed.
        to: Rank,
        /// The handler's name, as registered.
        handler: String,
        /// Its index.
        index: u8,
        /// The handler's error, as text.
        why: String,
    },
    /// A handler index that cannot be registered.
    #[error("handler index {index} cannot be registered: {why}")]
    BadHandlerIndex {
        /// The index.
        index: u8,
        /// Why not (taken by another handler, reserved, table full).
        why: String,
    },
    /// A second reply through one token.
    #[error("handler {handler:?} (index {index}) replied twice to {src}: a request handler may reply once")]
    ReplyTwice {
        /// The handler's name.
        handler: String,
        /// Its index.
        index: u8,
        /// The requester.
        src: Rank,
    },
    /// A reply from a reply handler.
    #[error("reply handler {handler:?} (index {index}) tried to reply to {src}: only request handlers may reply")]
    ReplyFromReply {
        /// The handler's name.
        handler: String,
        /// Its index.
        index: u8,
        /// The rank whose reply is being handled.
        src: Rank,
    },
    /// Flags given to an operation where they cannot apply (a commit of a
    /// prepared message accepts only what [`Flags`](crate::Flags) says
    /// applies there). Nothing was sent.
    #[error("{what} from {from} to {peer}: flags {flags:#x} do not apply there (it accepts {accepted}); nothing was sent")]
    FlagsNotApplicable {
        /// The operation ("commit of a prepared message").
        what: &'static str,
        /// The calling rank.
        from: Rank,
        /// The peer the message was for.
        peer: Rank,
        /// The flags that do not apply (their bits).
        flags: u32,
        /// The flags it accepts, named.
        accepted: &'static str,
    },
    /// An rgex future was awaited (polled, and about to suspend) while its
    /// thread had implicit-handle (NBI) state: an open access region, or
    /// operations not yet synced by `nbi_wait`. That state is per thread,
    /// and a task may resume on another thread (and other tasks run on
    /// this one) at an `.await`, so it must be synced before one.
    #[error("an rgex future was awaited while {what}: implicit-handle operations are tracked per thread, and a task may move to another thread at an .await; sync them (nbi_wait, nbi_end_region) before awaiting, or use explicit handles (put_nb, get_nb, op_nb)")]
    NbiAcrossAwait {
        /// What the thread held.
        what: String,
    },
    /// A call that may wait or send a request, made inside an AM handler.
    #[error("{what} was called inside an AM handler; a handler may only reply (once, from a request handler) and must not wait or poll")]
    InHandler {
        /// The call.
        what: &'static str,
    },
    /// A peer went away (its process died, its network failed): operations
    /// to it fail with this instead of waiting forever.
    #[error("{what} from {from} to {rank}: {rank} is unreachable (considered dead): {why}")]
    PeerUnreachable {
        /// The operation.
        what: String,
        /// This rank.
        from: Rank,
        /// The peer.
        rank: Rank,
        /// What the network reported (with the provider and its error text).
        why: String,
    },
    /// The members of a team called one collective (the same sequence
    /// number on the team) with arguments that do not match: another
    /// collective, root, element type, operator or element count. Every
    /// member gets this error for that collective, naming the same two
    /// members (team rank `first`, the lowest, and `second`, the lowest
    /// whose arguments differ from `first`'s), and the team stays usable.
    /// An eager broadcast (rgex-endpoint's `Team::broadcast`) runs no
    /// agreement: a member that sees the disagreement fails it at once,
    /// naming itself and the member whose message showed it; then the
    /// team's next collective that runs an agreement fails on every
    /// member with this error for the broadcast (`seq` is the
    /// broadcast's), naming the lowest two.
    #[error("{collective} on {rank} (collective #{seq} of team {team:#x}): the members disagree on the {field}: team rank {first} passed {first_value}, team rank {second} passed {second_value}; every member must call a team's collectives in the same order with matching arguments")]
    CollectiveMismatch {
        /// The call on this rank ("allreduce", "broadcast", ...).
        collective: &'static str,
        /// This rank.
        rank: Rank,
        /// The team's id.
        team: u64,
        /// The collective's sequence number on the team.
        seq: u64,
        /// What differs: "collective", "root", "element type", "operator"
        /// or "element count".
        field: &'static str,
        /// The lowest team rank.
        first: u32,
        /// What `first` passed.
        first_value: String,
        /// The lowest team rank whose arguments differ from `first`'s.
        second: u32,
        /// What `second` passed.
        second_value: String,
    },
    /// An atomic op the domain was not created for.
    #[error("atomic {op:?} at {rank} + {offset:#x}: not in this {ty:?} domain's op set {{{set}}}")]
    OpNotInSet {
        /// The op asked for.
        op: AtomicOp,
        /// The domain's type.
        ty: AtomicType,
        /// The target rank.
        rank: Rank,
        /// The target offset.
        offset: u64,
        /// The domain's ops, by name.
        set: String,
    },
    /// An atomic word not aligned to its size.
    #[error(
        "atomic {ty:?} at {rank} + {offset:#x} is misaligned: it needs {align}-byte alignment"
    )]
    Misaligned {
        /// The domain's type.
        ty: AtomicType,
        /// The target rank.
        rank: Rank,
        /// The offset given.
        offset: u64,
        /// The alignment required.
        align: usize,
    },
    /// Bit ops asked for in a float atomic domain.
    #[error("an atomic domain of {ty:?} cannot offer {ops}: bitwise ops are defined for integer types only")]
    BitOpOnFloat {
        /// The float type.
        ty: AtomicType,
        /// The bitwise ops asked for, by name.
        ops: String,
    },
    /// An empty op set at atomic domain creation.
    #[error("an atomic domain of {ty:?} needs at least one op; the op set is empty")]
    EmptyOpSet {
        /// The type.
        ty: AtomicType,
    },
    /// An atomic op's target that is not a member of the domain's team.
    #[error("atomic op at {rank} + {offset:#x}: {rank} is not a member of this domain's team of {team_size} ranks")]
    NotInTeam {
        /// The target rank.
        rank: Rank,
        /// The target offset.
        offset: u64,
        /// Members of the team.
        team_size: u32,
    },
    /// An atomic locality flag whose assertion is false.
    #[error("atomic op at {rank} + {offset:#x} with AtomicFlags::{flag}: the assertion is false on {me}")]
    FlagBroken {
        /// "TARGET_SELF" or "TARGET_LOCAL".
        flag: &'static str,
        /// The target rank.
        rank: Rank,
        /// The target offset.
        offset: u64,
        /// The calling rank.
        me: Rank,
    },
    /// An atomic domain implementation was required (the domain builder
    /// or `RGEX_ATOMICS`) that not every member of the team can provide.
    #[error("atomic domain of {ty:?} {{{set}}} on {me}: {imp:?} was required, but {why}")]
    DomainUnavailable {
        /// The calling rank.
        me: Rank,
        /// The domain's type.
        ty: AtomicType,
        /// The domain's ops, by name.
        set: String,
        /// The implementation required.
        imp: Implementation,
        /// Why it is not available (this rank's reason, or that another
        /// member lacks it).
        why: String,
    },
    /// The members of the team asked for different atomic domains.
    #[error("atomic domain creation on {me}: the team's members asked for different types or op sets (this rank: {ty:?} {{{set}}})")]
    DomainMismatch {
        /// The calling rank.
        me: Rank,
        /// Its type.
        ty: AtomicType,
        /// Its ops, by name.
        set: String,
    },
    /// The target of an atomic op reported a failure the initiator's
    /// checks should have caught (the ranks disagree about a segment).
    #[error("atomic op at {rank} + {offset:#x} failed at the target: {why}")]
    AtomicRemote {
        /// The target rank.
        rank: Rank,
        /// The target offset.
        offset: u64,
        /// What the target said.
        why: &'static str,
    },
    /// `rgex::init` (or `init_with`) was called in a process that has
    /// called it before: rgex is initialised once per process, and a
    /// client that was finalized or dropped cannot be made again.
    ///
    /// ```
    /// let e = rgex_core::Error::AlreadyInitialised { rank: 1, state: "its client exists" };
    /// assert!(e.to_string().starts_with("rank 1: rgex is already initialised in this process"));
    /// ```
    #[error("rank {rank}: rgex is already initialised in this process ({state}); init and init_with may be called once per process, and a client that was finalized or dropped cannot be made again")]
    AlreadyInitialised {
        /// This process's rank, as its launcher announced it.
        rank: u32,
        /// Where the earlier initialisation stands ("another thread is
        /// initialising it", "a client was made", "the first init failed").
        state: &'static str,
    },
    /// An operation through an endpoint (a clone of the client's
    /// `Arc<Endpoint>`, a team, an atomic domain or a VIS context holding
    /// it) after its client was finalized or dropped. Nothing was sent.
    ///
    /// ```
    /// use rgex_core::{Error, Rank};
    /// let e = Error::Finalized { rank: Rank(0), what: "a put" };
    /// assert!(e.to_string().contains("a put on rank 0: its client was finalized or dropped"));
    /// ```
    #[error("{what} on {rank}: its client was finalized or dropped; an endpoint (or a clone of its Arc, a team or a domain on it) refuses sends, RMA, collectives, atomics and VIS after Client::finalize or after the Client is dropped; nothing was sent")]
    Finalized {
        /// This rank.
        rank: Rank,
        /// The operation refused ("an AM request", "a put").
        what: &'static str,
    },
    /// `Client::finalize` was called while operations were still in
    /// flight (started and not yet complete): the client is finalized all
    /// the same, and this reports what had not been waited for.
    ///
    /// ```
    /// use rgex_core::{Error, Rank};
    /// let e = Error::Unfinished { rank: Rank(2), at_call: "1 reference RMA".into(), after: "none".into() };
    /// assert!(e.to_string().starts_with("finalize on rank 2: operations were still in flight when it was called (1 reference RMA)"));
    /// ```
    #[error("finalize on {rank}: operations were still in flight when it was called ({at_call}); still in flight after its final barrier: {after}; wait for every operation (its event, nbi_wait, a blocking collective) before finalize")]
    Unfinished {
        /// This rank.
        rank: Rank,
        /// The operations in flight when finalize was called, by kind and
        /// count ("2 reference RMA, 1 VIS").
        at_call: String,
        /// Those still in flight once its barrier was done ("none" when
        /// they all finished meanwhile).
        after: String,
    },
    /// A non-blocking operation failed after it was injected (reported by
    /// the conduit at completion, with the operation, ranks and cause).
    #[error("operation failed: {0}")]
    Failed(String),
    /// The job's out-of-band channel failed (a rank left, the launcher died).
    #[error("bootstrap: {0}")]
    Bootstrap(String),
    /// A bad setting (environment variable or builder option).
    #[error("configuration: {0}")]
    Config(String),
    /// A system call failed.
    #[error("{op}: {source}")]
    Os {
        /// What was being done, with names and sizes.
        op: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// True for [`Error::WouldBlock`]: retry later, nothing was sent.
    pub fn is_would_block(&self) -> bool {
        matches!(self, Error::WouldBlock { .. })
    }

    /// An [`Error::Os`] from the last OS error, describing what was being done.
    pub fn last_os(op: impl Into<String>) -> Self {
        Error::Os {
            op: op.into(),
            source: std::io::Error::last_os_error(),
        }
    }
}
