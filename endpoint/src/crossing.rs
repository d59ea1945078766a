//! AMs between endpoints of different indices: a request from endpoint
//! `j` of one rank to endpoint `k` of another (GASNet-EX's TM-pair
//! addressing with unequal indices), and its reply.
//!
//! An AM between equal indices travels on that endpoint's own resources
//! (see [`Client::create_endpoint`](crate::Client::create_endpoint)).
//! One between unequal indices travels on the pair of endpoints `k`: the
//! sender injects on its own endpoint `k` (shared with that endpoint's
//! users: an AM to another index is the one send that leaves a thread's
//! own endpoint), to a protocol handler there that runs the client's
//! handler from endpoint `k`'s table with a token that knows the
//! sender's endpoint `j` ([`Token::src_endpoint`]). Its reply travels the
//! same way back, on the pair of endpoints `j`, to the handler in
//! endpoint `j`'s table. The first argument carries the sender's index
//! and the client handler (`index << 8 | handler`), so such an AM takes
//! one argument less than [`MAX_ARGS`]; nothing else in the wire changes.
//!
//! The target endpoint `k` must be polled at the destination for the
//! request to run, as for every AM to `k`; the reply needs endpoint `j`
//! polled at the requester, where the waiting thread polls anyway.
//! Fixed-payload forms only: a negotiated-payload reply to an AM from
//! another index is refused with a message naming both indices.

use crate::handler::Target;
use crate::refusal;
use crate::{Accepts, Endpoint, HandlerId, HandlerTable, Message, ProtocolId, Token, CLIENT_MIN};
use rgex_core::{Category, Delivery, Direction, Error, Flags, Prepare, Rank, Result, MAX_ARGS};

/// Endpoint `index` of rank `rank`: where an AM between endpoints of
/// different indices goes ([`Endpoint::request_short_at`] and the others).
///
/// ```no_run
/// # fn demo(client: &rgex_endpoint::Client, h: rgex_endpoint::HandlerId) -> rgex_core::Result<()> {
/// use rgex_core::{Flags, Rank};
/// use rgex_endpoint::EndpointAddr;
/// let worker = client.create_endpoint()?; // index 1 on every rank
/// // From the primordial endpoint to endpoint 1 of rank 1:
/// client.endpoint().request_short_at(EndpointAddr::new(Rank(1), worker.index()), h, &[7], Flags::empty())?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EndpointAddr {
    /// The rank.
    pub rank: Rank,
    /// The endpoint's index on it (0: the primordial endpoint).
    pub index: u32,
}

impl EndpointAddr {
    /// Endpoint `index` of `rank`.
    pub const fn new(rank: Rank, index: u32) -> Self {
        EndpointAddr { rank, index }
    }
}

impl std::fmt::Display for EndpointAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "endpoint {} of {}", self.index, self.rank)
    }
}

/// The most arguments an AM between different indices carries (one is
/// the crossing's own).
pub const MAX_CROSSING_ARGS: usize = MAX_ARGS - 1;

/// The two protocols of an endpoint: the request and the reply of a
/// crossing AM.
#[derive(Clone, Copy)]
pub(crate) struct Crossing {
    request: ProtocolId,
    reply: ProtocolId,
}

/// The largest endpoint index a crossing AM's first argument carries.
const MAX_INDEX: u32 = (1 << 24) - 1;

fn pack(from_index: u32, handler: u8) -> u32 {
    (from_index << 8) | u32::from(handler)
}

fn unpack(word: u32) -> (u32, u8) {
    (word >> 8, word as u8)
}

impl Crossing {
    /// Register the two protocols on `table`.
    pub(crate) fn install(table: &HandlerTable) -> Result<Self> {
        let any = |a: Accepts| {
            a.or(Category::Medium)
                .or(Category::Long)
                .args(1, MAX_ARGS as u8)
        };
        let request = table.register_protocol(
            crate::reserved::CROSSING_REQUEST,
            "rgex.crossing_request",
            any(Accepts::request(Category::Short, 1)),
            deliver,
        )?;
        let reply = table.register_protocol(
            crate::reserved::CROSSING_REPLY,
            "rgex.crossing_reply",
            any(Accepts::reply(Category::Short, 1)),
            deliver,
        )?;
        Ok(Crossing { request, reply })
    }
}

/// Run the client handler a crossing AM names, from this endpoint's
/// table, with a token that answers the sender's endpoint.
fn deliver(tok: &Token<'_>, msg: &Message<'_>) {
    let ep = tok.endpoint();
    let (from, handler) = unpack(msg.arg(0));
    if from == ep.index() {
        // Between equal indices an AM travels on the endpoint itself:
        // only a forged message crosses to its own index.
        return tok.malformed(&format!(
            "an AM crossing from endpoint {from} to endpoint {from}: AMs between equal \
             indices never cross"
        ));
    }
    let refusal_reply = handler == crate::reserved::REFUSED && !tok.is_request();
    if handler < CLIENT_MIN && !refusal_reply {
        return tok.malformed(&format!(
            "an AM from endpoint {from} naming handler index {handler}, which is rgex's \
             (an AM between endpoints of different indices names a client handler, from \
             {CLIENT_MIN})"
        ));
    }
    let d = msg.d;
    let inner = Delivery {
        src: d.src,
        dir: d.dir,
        category: d.category,
        handler,
        args: &d.args[1..],
        payload: d.payload,
        long_offset: d.long_offset,
    };
    if refusal_reply {
        return refused(ep, &inner, from);
    }
    match ep.handlers().get(handler) {
        Some(entry) => {
            let token = Token::crossing(ep, d.src, handler, d.dir, from);
            entry.call(&token, &Message { d: &inner });
        }
        None => ep.drop_unhandled(&inner, Some(from)),
    }
}

/// A refusal of a crossing request of ours: record it here, where the
/// requester polls, if it names a handler of the endpoint it was sent to.
fn refused(ep: &Endpoint, d: &Delivery<'_>, from: u32) {
    let (index, code) = (
        d.args.first().copied().unwrap_or(u32::MAX),
        d.args.get(1).copied().unwrap_or(u32::MAX),
    );
    let category = refusal::category_of(code);
    let known = ep
        .sibling(from, "a refusal")
        .ok()
        .zip(u8::try_from(index).ok())
        .is_some_and(|(via, i)| via.handlers().get(i).is_some());
    match category.filter(|_| known) {
        Some(c) => ep.refusals().record(refusal::dropped(
            Some(c),
            Direction::Request,
            ep.rank(),
            d.src,
            index as u8,
        )),
        None => ep.malformed(
            d.src,
            crate::reserved::CROSSING_REPLY,
            &format!(
                "a refusal of handler index {index}, category code {code}, from endpoint \
                 {from}: this rank sends no such AM there"
            ),
        ),
    }
}

impl Endpoint {
    /// The endpoint of this rank at `index`, or an error naming the rank
    /// and the index (out of range, destroyed, or made without a client).
    pub(crate) fn sibling(
        &self,
        index: u32,
        what: &'static str,
    ) -> Result<std::sync::Arc<Endpoint>> {
        self.siblings().get(self.rank(), index, what)
    }

    /// Send a crossing AM (`dir`, `category`) to client handler `h` of
    /// endpoint `to`, from this endpoint (whose index `to` does not
    /// share), on this rank's endpoint `to.index`.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    pub(crate) fn send_crossing(
        &self,
        to: EndpointAddr,
        dir: Direction,
        category: Category,
        h: u8,
        args: &[u32],
        payload: &[u8],
        long_offset: u64,
        flags: Flags,
    ) -> Result<()> {
        if args.len() > MAX_CROSSING_ARGS {
            return Err(Error::TooManyArgs {
                nargs: args.len(),
                max: MAX_CROSSING_ARGS,
            });
        }
        if self.index() > MAX_INDEX {
            return Err(Error::Config(format!(
                "{}: endpoint {} cannot send to another index (at most {MAX_INDEX})",
                self.rank(),
                self.index()
            )));
        }
        let via = self.sibling(to.index, "an AM to another endpoint index")?;
        via.check_open("an AM to another endpoint index")?;
        let h = if dir == Direction::Request {
            via.check_target(HandlerId::new(h))?
        } else {
            h
        };
        let mut words = [0u32; MAX_ARGS];
        words[0] = pack(self.index(), h);
        words[1..=args.len()].copy_from_slice(args);
        let spec = Prepare {
            peer: to.rank,
            dir,
            category,
            nargs: 0,
            least: 0,
            most: 0,
            long_offset,
        };
        let protocol = match dir {
            Direction::Request => via.crossing().request,
            Direction::Reply => via.crossing().reply,
        };
        via.send_fixed(spec, protocol, &words[..=args.len()], payload, flags)
    }

    /// Send a request from this endpoint to `to`: on this endpoint's own
    /// resources when `to` has its index, else as a crossing AM.
    #[allow(clippy::too_many_arguments)]
    fn request_at(
        &self,
        to: EndpointAddr,
        category: Category,
        h: HandlerId,
        args: &[u32],
        payload: &[u8],
        long_offset: u64,
        flags: Flags,
    ) -> Result<()> {
        self.check_not_in_handler()?;
        if to.index == self.index() {
            let spec = crate::endpoint::spec(to.rank, Direction::Request, category, long_offset);
            return self.send_fixed(spec, h, args, payload, flags);
        }
        self.send_crossing(
            to,
            Direction::Request,
            category,
            h.raw(),
            args,
            payload,
            long_offset,
            flags,
        )
    }

    /// Send a Short request to client handler `h` of endpoint `to`
    /// (registered in that endpoint's table), whatever its index: as
    /// [`request_short`](Self::request_short) when it is this endpoint's,
    /// else carried by this rank's endpoint of `to`'s index (see
    /// [`crossing`](crate::crossing)). At most [`MAX_CROSSING_ARGS`]
    /// arguments then; an index this rank has not opened, or destroyed,
    /// is an error naming the rank and the index.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_core::{Flags, Rank};
    /// use rgex_endpoint::EndpointAddr;
    /// let worker = client.create_endpoint()?;
    /// let hello = worker.handlers().register("hello", |tok, msg| {
    ///     println!("from endpoint {} of {}: {:?}", tok.src_endpoint(), tok.src(), msg.args());
    /// })?;
    /// client.barrier()?; // every rank registered it
    /// client.endpoint().request_short_at(EndpointAddr::new(Rank(0), 1), hello, &[1, 2], Flags::empty())?;
    /// # Ok(()) }
    /// ```
    pub fn request_short_at(
        &self,
        to: EndpointAddr,
        h: HandlerId,
        args: &[u32],
        flags: Flags,
    ) -> Result<()> {
        self.request_at(to, Category::Short, h, args, &[], 0, flags)
    }

    /// Send a Medium request to client handler `h` of endpoint `to`, as
    /// [`request_short_at`](Self::request_short_at).
    pub fn request_medium_at(
        &self,
        to: EndpointAddr,
        h: HandlerId,
        args: &[u32],
        payload: &[u8],
        flags: Flags,
    ) -> Result<()> {
        self.request_at(to, Category::Medium, h, args, payload, 0, flags)
    }

    /// Send a Long request to client handler `h` of endpoint `to`, the
    /// payload landing at `dest_offset` in `to.rank`'s segment (shared by
    /// its endpoints), as [`request_short_at`](Self::request_short_at).
    pub fn request_long_at(
        &self,
        to: EndpointAddr,
        h: HandlerId,
        args: &[u32],
        payload: &[u8],
        dest_offset: u64,
        flags: Flags,
    ) -> Result<()> {
        self.request_at(to, Category::Long, h, args, payload, dest_offset, flags)
    }
}

/// The error for a negotiated-payload reply to a crossing AM.
#[cold]
pub(crate) fn no_prepared_reply(ep: &Endpoint, src: Rank, from: u32) -> Error {
    Error::Config(format!(
        "{}: a negotiated-payload reply from endpoint {} to endpoint {from} of {src}: an AM \
         between endpoints of different indices replies with the fixed-payload forms \
         (reply_short, reply_medium, reply_long)",
        ep.rank(),
        ep.index()
    ))
}
