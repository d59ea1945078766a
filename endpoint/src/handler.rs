//! The handler table: which function runs for which handler index.

use crate::{HandlerOutcome, Message, Token};
use rgex_core::{Category, Direction, Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::OnceLock;

/// Handler indices below this are reserved for rgex's own protocols
/// (barrier, RMA reference, atomics, VIS); clients use `CLIENT_MIN..=255`.
pub const CLIENT_MIN: u8 = 64;

/// The index of a registered handler.
///
/// Only registration makes one ([`HandlerTable::register`],
/// [`register_at`](HandlerTable::register_at), `rgex::init_with`), so a
/// program sends with the ids its registration gave, never a guessed
/// index. (Testing builds, with the `fault-injection` feature, may forge
/// one with `HandlerId::forge` to check the refusals of unknown and
/// reserved indices.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HandlerId(u8);

impl HandlerId {
    /// The raw index.
    pub fn index(self) -> u8 {
        self.0
    }

    /// The id of index `index`, registered or not: for tests of what a
    /// send does with an index registration never gave (unknown,
    /// reserved). Only in builds with the `fault-injection` feature.
    ///
    /// ```
    /// # #[cfg(feature = "fault-injection")] {
    /// use rgex_endpoint::HandlerId;
    /// assert_eq!(HandlerId::forge(70).index(), 70);
    /// # }
    /// ```
    #[cfg(feature = "fault-injection")]
    pub const fn forge(index: u8) -> HandlerId {
        HandlerId(index)
    }

    /// The id registration gives for `index` (and a token's reply target).
    pub(crate) const fn new(index: u8) -> HandlerId {
        HandlerId(index)
    }
}

/// A handler index reserved to one of rgex's own protocols, as
/// [`HandlerTable::register_protocol`] returned it: the only kind of id
/// that may name an index below [`CLIENT_MIN`] in a send.
///
/// Clients cannot make one that an endpoint accepts:
/// - an id is tied to the table that registered it, and a send refuses
///   (with [`Error::ReservedHandler`]) an id of any table but its
///   endpoint's own, so an id from a scratch table, or copied from
///   another endpoint, names nothing;
/// - `rgex::init` registers every protocol of rgex's on the endpoint's
///   table and then [seals](HandlerTable::seal_protocols) it, before
///   the client sees the table: a later `register_protocol` fails;
/// - a reply naming a protocol is refused unless the token is one of a
///   protocol's own request (a client handler cannot answer for rgex).
///
/// A client's [`HandlerId`] below `CLIENT_MIN` is refused by every send
/// call with [`Error::ReservedHandler`] too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProtocolId {
    index: u8,
    /// [`HandlerTable::id`] of the table that registered it.
    table: u32,
}

impl ProtocolId {
    /// The raw index.
    pub fn index(self) -> u8 {
        self.index
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::HandlerId {}
    impl Sealed for super::ProtocolId {}
}

/// What a send may name as its target handler: a client's [`HandlerId`]
/// (indices `CLIENT_MIN..=255`) or a protocol's [`ProtocolId`]. Sealed.
pub trait Target: sealed::Sealed + Copy {
    /// The raw index.
    fn raw(self) -> u8;
    /// The [`HandlerTable::id`] that registered a [`ProtocolId`]; 0 for
    /// a [`HandlerId`] (no table has id 0).
    fn table(self) -> u32;
    /// True for [`ProtocolId`]: the index may be reserved.
    const PROTOCOL: bool;
}

impl Target for HandlerId {
    #[inline(always)]
    fn raw(self) -> u8 {
        self.0
    }
    #[inline(always)]
    fn table(self) -> u32 {
        0
    }
    const PROTOCOL: bool = false;
}

impl Target for ProtocolId {
    #[inline(always)]
    fn raw(self) -> u8 {
        self.index
    }
    #[inline(always)]
    fn table(self) -> u32 {
        self.table
    }
    const PROTOCOL: bool = true;
}

/// The messages a protocol handler takes: one direction, a set of
/// categories, a range of argument counts. Anything else a peer sends to
/// the handler is reported as malformed and not run.
///
/// ```
/// use rgex_endpoint::Accepts;
/// use rgex_core::Category;
/// // A get's answer: data (Medium) or a refusal (Short), 3 arguments.
/// let a = Accepts::reply(Category::Medium, 3).or(Category::Short);
/// assert!(a.allows(rgex_core::Direction::Reply, Category::Short, 3));
/// assert!(!a.allows(rgex_core::Direction::Request, Category::Short, 3));
/// assert!(!a.allows(rgex_core::Direction::Reply, Category::Long, 3));
/// assert!(!a.allows(rgex_core::Direction::Reply, Category::Medium, 2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepts {
    dir: Direction,
    /// Bit `category_bit(c)` set for each accepted category.
    categories: u8,
    min_args: u8,
    max_args: u8,
}

const fn category_bit(c: Category) -> u8 {
    match c {
        Category::Short => 1,
        Category::Medium => 2,
        Category::Long => 4,
    }
}

impl Accepts {
    /// Requests of `category` with exactly `nargs` arguments.
    pub const fn request(category: Category, nargs: u8) -> Self {
        Accepts {
            dir: Direction::Request,
            categories: category_bit(category),
            min_args: nargs,
            max_args: nargs,
        }
    }

    /// Replies of `category` with exactly `nargs` arguments.
    pub const fn reply(category: Category, nargs: u8) -> Self {
        Accepts {
            dir: Direction::Reply,
            ..Self::request(category, nargs)
        }
    }

    /// Also accept `category`.
    pub const fn or(self, category: Category) -> Self {
        Accepts {
            categories: self.categories | category_bit(category),
            ..self
        }
    }

    /// Accept between `min` and `max` arguments (inclusive).
    pub const fn args(self, min: u8, max: u8) -> Self {
        Accepts {
            min_args: min,
            max_args: max,
            ..self
        }
    }

    /// True if a message of this shape is accepted.
    pub fn allows(&self, dir: Direction, category: Category, nargs: usize) -> bool {
        dir == self.dir
            && self.categories & category_bit(category) != 0
            && (self.min_args as usize..=self.max_args as usize).contains(&nargs)
    }

    /// `Ok` if the message is accepted, else what is wrong with it.
    #[inline]
    fn check(&self, tok: &Token<'_>, msg: &Message<'_>) -> std::result::Result<(), String> {
        let dir = if tok.is_request() {
            Direction::Request
        } else {
            Direction::Reply
        };
        if self.allows(dir, msg.category(), msg.args().len()) {
            return Ok(());
        }
        Err(self.describe_mismatch(dir, msg.category(), msg.args().len()))
    }

    #[cold]
    fn describe_mismatch(&self, dir: Direction, category: Category, nargs: usize) -> String {
        let name = |d| match d {
            Direction::Request => "request",
            Direction::Reply => "reply",
        };
        let cats: Vec<&str> = [Category::Short, Category::Medium, Category::Long]
            .into_iter()
            .filter(|&c| self.categories & category_bit(c) != 0)
            .map(Category::name)
            .collect();
        let args = if self.min_args == self.max_args {
            format!("{}", self.min_args)
        } else {
            format!("{}..={}", self.min_args, self.max_args)
        };
        format!(
            "a {} {} with {nargs} arguments, where the protocol takes a {} {} with {args}",
            category.name(),
            name(dir),
            cats.join(" or "),
            name(self.dir),
        )
    }
}

/// The type of every handler: the token (who sent it, how to reply) and
/// the message (arguments and payload).
pub type HandlerFn = dyn Fn(&Token<'_>, &Message<'_>) + Send + Sync;

/// A registered handler.
pub struct Entry {
    name: String,
    f: Box<HandlerFn>,
}

impl Entry {
    /// The name given at registration, for error messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Run the handler. A panic in it is caught here, before it can
    /// unwind through the conduit's delivery (which would leave a queue
    /// cell or credit unreleased and wedge the peer), and reported as the
    /// handler's error: [`Error::HandlerFailed`] naming the handler and
    /// the sender, from this rank's next poll. Every later message is
    /// delivered as usual. The panic hook still prints the panic first.
    #[inline]
    pub(crate) fn call(&self, token: &Token<'_>, msg: &Message<'_>) {
        // AssertUnwindSafe: after a caught panic nothing of the handler's
        // is used again but its table entry (immutable) and the token,
        // whose reply state is a Cell a prepared reply's drop resets;
        // whatever the handler's own state is, it is the client's to judge
        // from the error.
        let run = std::panic::AssertUnwindSafe(|| (self.f)(token, msg));
        if let Err(payload) = std::panic::catch_unwind(run) {
            panicked(token, &*payload);
        }
    }
}

/// Report a handler's caught panic as its error.
#[cold]
#[inline(never)]
fn panicked(token: &Token<'_>, payload: &(dyn std::any::Any + Send)) {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a payload that is not a string".to_owned());
    token.endpoint().handler_failed(
        token.src(),
        token.handler().index(),
        format!("panicked: {text}"),
    );
}

/// `f` boxed so that its error, if it returns one, is reported by the
/// endpoint that ran it (for `()` the check compiles away).
fn reporting<F, R>(f: F) -> Box<HandlerFn>
where
    F: Fn(&Token<'_>, &Message<'_>) -> R + Send + Sync + 'static,
    R: HandlerOutcome,
{
    Box::new(move |tok, msg| {
        if let Some(why) = f(tok, msg).failure() {
            tok.endpoint()
                .handler_failed(tok.src(), tok.handler().index(), why);
        }
    })
}

/// 256 handler slots, each set at most once.
///
/// Registration may happen at any time from any thread; lookups are a
/// single acquire load (no lock on the dispatch path). Handlers must be
/// registered at the same index on every rank: register in the same order
/// everywhere (auto-assignment is deterministic), or pick fixed indices.
///
/// ```
/// use rgex_endpoint::HandlerTable;
/// let t = HandlerTable::new();
/// let a = t.register("a", |_tok, _msg| {}).unwrap();
/// let b = t.register_at(200, "b", |_tok, _msg| {}).unwrap();
/// assert_eq!(b.index(), 200);
/// assert_eq!(t.name(a.index()), "a");
/// assert!(t.register_at(200, "again", |_t, _m| {}).is_err());
/// assert!(t.register_at(3, "reserved", |_t, _m| {}).is_err());
/// ```
pub struct HandlerTable {
    slots: Box<[OnceLock<Entry>]>,
    /// This table's identity, never 0, never reused in the process: what
    /// ties a [`ProtocolId`] to the table that registered it.
    id: u32,
    /// Set by [`seal_protocols`](Self::seal_protocols): no more reserved
    /// registrations.
    sealed: AtomicBool,
}

/// The last [`HandlerTable::id`] given out.
static LAST_TABLE_ID: AtomicU32 = AtomicU32::new(0);

impl Default for HandlerTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for HandlerTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.get().map(|e| (i, e.name.clone())))
            .collect();
        f.debug_struct("HandlerTable")
            .field("registered", &names)
            .finish()
    }
}

impl HandlerTable {
    /// An empty table.
    pub fn new() -> Self {
        // Relaxed: the counter only has to hand out distinct values; no
        // other memory is published through it.
        let id = LAST_TABLE_ID.fetch_add(1, Ordering::Relaxed) + 1;
        assert_ne!(id, 0, "more than 2^32 - 1 handler tables in one process");
        HandlerTable {
            slots: (0..256).map(|_| OnceLock::new()).collect(),
            id,
            sealed: AtomicBool::new(false),
        }
    }

    /// This table's identity (distinct for every table of the process,
    /// never 0): a [`ProtocolId`] names the table that registered it, and
    /// an endpoint sends only to its own table's protocols.
    ///
    /// ```
    /// use rgex_endpoint::HandlerTable;
    /// assert_ne!(HandlerTable::new().id(), HandlerTable::new().id());
    /// ```
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Close the reserved range: from now on
    /// [`register_protocol`](Self::register_protocol) fails. `rgex::init`
    /// seals the endpoint's table once every protocol of rgex's is
    /// registered, before the client sees it, so client code can never
    /// put a handler at a reserved index (and answer for rgex through
    /// it). Sealing twice is harmless.
    ///
    /// ```
    /// use rgex_endpoint::{Accepts, HandlerTable};
    /// use rgex_core::Category;
    /// let t = HandlerTable::new();
    /// t.seal_protocols();
    /// let late = t.register_protocol(40, "late", Accepts::reply(Category::Short, 0), |_, _| {});
    /// assert!(late.is_err());
    /// assert!(t.register("client", |_, _| {}).is_ok()); // the client range stays open
    /// ```
    pub fn seal_protocols(&self) {
        // Release/Acquire with `register_protocol`'s load: a registration
        // that starts after the seal is seen sees it (registrations that
        // raced it ran in rgex's own init, before the client had the table).
        self.sealed.store(true, Ordering::Release);
    }

    /// True once [`seal_protocols`](Self::seal_protocols) ran.
    pub fn is_sealed(&self) -> bool {
        // Acquire: pairs with the seal's Release.
        self.sealed.load(Ordering::Acquire)
    }

    /// Register `f` at the lowest free client index. `f` returns `()` or
    /// a `Result`; an error is reported by this endpoint, naming the
    /// handler and the sender (see [`HandlerOutcome`]).
    ///
    /// **Panics in a handler** are caught by rgex around each call and
    /// reported the same way ([`Error::HandlerFailed`], its `why` starting
    /// `panicked: ` and the panic's message), by this rank's next poll;
    /// the panic never leaves the poll, and every later message is
    /// delivered. A request whose handler panicked before replying gets
    /// no reply. (A program built with `panic = "abort"` aborts instead.)
    pub fn register<F, R>(&self, name: &str, f: F) -> Result<HandlerId>
    where
        F: Fn(&Token<'_>, &Message<'_>) -> R + Send + Sync + 'static,
        R: HandlerOutcome,
    {
        let mut entry = Entry {
            name: name.to_owned(),
            f: reporting(f),
        };
        for i in CLIENT_MIN..=u8::MAX {
            match self.slots[i as usize].set(entry) {
                Ok(()) => return Ok(HandlerId::new(i)),
                Err(back) => entry = back,
            }
        }
        Err(Error::BadHandlerIndex {
            index: u8::MAX,
            why: format!(
                "all {} client handler slots are taken; {name:?} was not registered",
                256 - CLIENT_MIN as usize
            ),
        })
    }

    /// Register `f` at client index `index` (`CLIENT_MIN..=255`); as
    /// [`register`](Self::register) otherwise.
    pub fn register_at<F, R>(&self, index: u8, name: &str, f: F) -> Result<HandlerId>
    where
        F: Fn(&Token<'_>, &Message<'_>) -> R + Send + Sync + 'static,
        R: HandlerOutcome,
    {
        if index < CLIENT_MIN {
            return Err(Error::BadHandlerIndex {
                index,
                why: format!(
                    "indices 0..{CLIENT_MIN} are reserved for rgex; clients use {CLIENT_MIN}..=255"
                ),
            });
        }
        self.set(index, name, reporting(f))
    }

    /// Register one of rgex's own protocol handlers at a reserved index
    /// (below [`CLIENT_MIN`]): for rgex's layers (barrier, RMA and atomics
    /// references, VIS), not for clients.
    ///
    /// Messages that do not match `accepts` (direction, category,
    /// argument count) never reach `f`: the receiving endpoint reports
    /// them as malformed, naming the sender (see
    /// [`Endpoint::malformed_messages`](crate::Endpoint::malformed_messages)).
    /// The returned [`ProtocolId`] is the only way to send to the index:
    /// the client send calls refuse reserved indices.
    ///
    /// ```
    /// use rgex_endpoint::{Accepts, HandlerTable};
    /// use rgex_core::Category;
    /// let t = HandlerTable::new();
    /// let ack = t
    ///     .register_protocol(40, "demo.ack", Accepts::reply(Category::Short, 2), |_t, _m| {})
    ///     .unwrap();
    /// assert_eq!(ack.index(), 40);
    /// assert!(t.register_protocol(64, "client range", Accepts::reply(Category::Short, 0), |_t, _m| {}).is_err());
    /// ```
    pub fn register_protocol<F>(
        &self,
        index: u8,
        name: &str,
        accepts: Accepts,
        f: F,
    ) -> Result<ProtocolId>
    where
        F: Fn(&Token<'_>, &Message<'_>) + Send + Sync + 'static,
    {
        if index >= CLIENT_MIN {
            return Err(Error::BadHandlerIndex {
                index,
                why: format!("not in rgex's reserved range 0..{CLIENT_MIN}"),
            });
        }
        if self.is_sealed() {
            return Err(Error::BadHandlerIndex {
                index,
                why: format!(
                    "the reserved range 0..{CLIENT_MIN} is sealed: rgex registers its own \
                     protocols when it builds the endpoint, and no handler can be added \
                     there afterwards; {name:?} was not registered"
                ),
            });
        }
        let checked = move |tok: &Token<'_>, msg: &Message<'_>| match accepts.check(tok, msg) {
            Ok(()) => f(tok, msg),
            Err(why) => tok.endpoint().malformed(tok.src(), index, &why),
        };
        self.set(index, name, Box::new(checked))?;
        Ok(ProtocolId {
            index,
            table: self.id,
        })
    }

    fn set(&self, index: u8, name: &str, f: Box<HandlerFn>) -> Result<HandlerId> {
        self.slots[index as usize]
            .set(Entry {
                name: name.to_owned(),
                f,
            })
            .map_err(|_| Error::BadHandlerIndex {
                index,
                why: format!(
                    "it is already registered to {:?}; {name:?} was not registered",
                    self.name(index)
                ),
            })?;
        Ok(HandlerId::new(index))
    }

    /// The handler at `index`, if any.
    #[inline]
    pub fn get(&self, index: u8) -> Option<&Entry> {
        self.slots[index as usize].get()
    }

    /// The name registered at `index`, or `"<unregistered>"`.
    pub fn name(&self, index: u8) -> String {
        self.get(index)
            .map_or_else(|| "<unregistered>".to_owned(), |e| e.name.clone())
    }
}
