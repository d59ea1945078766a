//! Teams and collectives over active messages.
//!
//! A [`Team`] is a team (an ordered set of job ranks, see
//! [`rgex_core::Membership`]) plus what its collectives need: a team id, the
//! same on every member, and a sequence number per collective. The world
//! team comes from [`Client::world`](crate::Client::world);
//! [`Team::split`] makes sub-teams.
//!
//! Collectives: [`barrier`](Team::barrier), [`broadcast`](Team::broadcast),
//! [`reduce`](Team::reduce) and [`allreduce`](Team::allreduce) (built-in
//! or user operators), [`gather`](Team::gather),
//! [`allgather`](Team::allgather), [`scatter`](Team::scatter) and
//! [`alltoall`](Team::alltoall) with blocks of one size or of any size
//! (`gatherv`, `allgatherv`, `scatterv`, `alltoallv`), inclusive and
//! exclusive scans ([`scan`](Team::scan), [`exscan`](Team::exscan)), and
//! [`split`](Team::split). Each but `split` also comes non-blocking
//! (`barrier_nb`, `broadcast_nb`, `allreduce_nb`, `alltoall_nb`, ...): a
//! [`CollEvent`] that is a `Future` resolving to the result and has a
//! blocking `wait`. Each collective is built once; its blocking form runs
//! it to completion on the calling thread, its non-blocking form hands it
//! to the endpoint's progress (every poll, wait and blocking collective of
//! the client advances it), so several may be in flight on one team and
//! complete in any order.
//!
//! Collectives are scalable (log-depth trees, dissemination, pairwise
//! exchange; no root looping over all ranks in a tree's place), poll while
//! they wait (handlers keep running), and keep consecutive collectives and
//! teams apart: a message that arrives for a later round or a later
//! collective is buffered until it is asked for.
//!
//! Rules, as in MPI and GASNet: every member calls a team's collectives in
//! the same order (from one thread at a time per team), with matching
//! arguments (the same collective, root, element type, operator and
//! element count). Members that do not match all get
//! [`Error::CollectiveMismatch`] for that collective (naming the lowest
//! team rank, the lowest one that differs from it, and what each passed),
//! and the team stays usable for the next collective; a non-blocking
//! collective's handle resolves to that error. Arguments refused for a
//! reason the agreement makes the same everywhere (a root out of range, a
//! bitwise operator on floats, an alltoall's length that is not a multiple
//! of the team size) fail on every member too, once the agreement has
//! found the members agree. User operators cannot be told apart from each
//! other (only from built-in ones), nor can element types of one name.
//! Collectives are refused inside AM handlers ([`Error::InHandler`]).
//!
//! In flight: a member may have at most 65536 collectives of one team
//! started and not finished. Starting one more fails at once on that
//! member, with an error naming the limit; nothing is sent and the call
//! takes no sequence number, so the members stay in step: finish some
//! (wait on their handles) and make the same call again.
//!
//! Algorithms: every collective runs a dissemination over the team
//! (ceil(log2 n) rounds, one small message per rank and round) carrying a
//! summary of the members' arguments, so that every member learns whether
//! they agree; a barrier is that alone. Beside it or inside it:
//! - broadcast: up to 2 KiB the payload rides the dissemination (every
//!   rank passes it on once it has it), beyond down a binomial tree, in
//!   Medium fragments; the root chooses and the dissemination says which;
//! - allreduce: up to 2 KiB gathered in all, the contributions ride the
//!   dissemination (Bruck's allgather) and every rank folds them in
//!   team-rank order; from 8 KiB with a built-in operator on teams of
//!   three or more (on two, the tree measured faster), reduce-scatter
//!   then allgather by direct exchange (each rank moves (n-1)/n of the
//!   array twice); otherwise, and for reduce, a binomial tree towards team
//!   rank 0 (operands combine in team-rank order, so a user operator needs
//!   to be associative, not commutative), then one message to the root or
//!   a binomial broadcast;
//! - gather and scatter: binomial trees, each block crossing each level
//!   once; allgather: Bruck's algorithm in the dissemination's own
//!   messages (the split's too);
//! - alltoall: pairwise exchange (step k sends to `me + k`, takes from
//!   `me - k`);
//! - scans: recursive doubling (Hillis and Steele), lower ranks first.

mod algo;
mod blocks;
mod board;
mod boarded;
mod collect;
pub(crate) mod engine;
mod exchange;
mod halves;
mod handle;
mod key_hash;
mod mailbox;
mod ops;
mod pool;
mod prefix;
mod registry;
mod scan;
mod signature;
mod spread;
mod wire;

pub use handle::CollEvent;
pub use ops::{Element, Numeric, ReduceOp};

use algo::{Bcast, Coll, Ctx, Dest, Dissem, Part, Reduce};
use handle::{Finish, Job};
use ops::{Builtin, Combine, User};

/// A reduction ready to run.
type ReduceJob<T, C> = Job<Reduce<T, C>, Finish<Reduce<T, C>, Option<Vec<T>>>>;
use engine::{not_in_handler, Engine};
use rgex_core::conduit::CollKind;
use rgex_core::{Conduit, Error, Event, Membership, Rank, Result};
use signature::{ElemId, OpId, Sig, Summary};
use std::sync::Arc;

/// The colour that puts a rank in no new team in [`Team::split`].
pub const NO_COLOUR: u32 = u32::MAX;

/// A team's collectives run an agreement on their arguments (every
/// member learns whether they match before any returns), but for
/// broadcasts, which run eagerly: the root sends and returns. Every
/// collective whose sequence number on the team is one less than a
/// multiple of `EAGER_RUN` (the sequence number of a
/// [`CollectiveMismatch`](rgex_core::Error::CollectiveMismatch)) runs
/// one whatever it is, so a root runs at most this many broadcasts
/// ahead of its team, and a mismatch in a broadcast is reported within
/// this many collectives.
///
/// ```
/// assert_eq!(rgex_endpoint::team::EAGER_RUN, 64);
/// ```
pub const EAGER_RUN: u64 = registry::EAGER_RUN;

/// A team with collectives. Cheap to clone (clones share the sequence
/// numbers, so they are the same team, not a copy of it).
///
/// ```no_run
/// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
/// use rgex_endpoint::team::ReduceOp;
/// let world = client.world();
/// // Odd and even ranks, each ordered by world rank.
/// let half = world.split(world.my_rank() % 2, world.my_rank())?.expect("in a team");
/// half.barrier()?;
/// let sum = half.allreduce(&[1u64], ReduceOp::Sum)?;
/// assert_eq!(sum[0], u64::from(half.size()));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Team {
    inner: Arc<Inner>,
}

struct Inner {
    team: Membership,
    id: u64,
    engine: Arc<Engine>,
    /// The members' collectives board, when they share one (see
    /// `board.rs`).
    board: Option<Arc<board::Board>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.engine.forget_team(self.id);
    }
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("id", &format_args!("{:#x}", self.inner.id))
            .field("size", &self.size())
            .field("my_rank", &self.my_rank())
            .finish()
    }
}

/// A 64-bit mix (splitmix64 finaliser) for team ids.
fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Team {
    /// The world team (id 0).
    /// With `use_board` (`RGEX_COLL_BOARD`), its collectives run on the
    /// members' board when every member has one mapped here.
    pub(crate) fn world(engine: Arc<Engine>, team: Membership, use_board: bool) -> Self {
        engine.register_team(0, team.members());
        let board = if use_board {
            board::Board::over(&team, engine.endpoint().locality())
        } else {
            None
        };
        Team {
            inner: Arc::new(Inner {
                team,
                id: 0,
                engine,
                board,
            }),
        }
    }

    /// The team's ranks and their numbering.
    pub fn membership(&self) -> &Membership {
        &self.inner.team
    }

    /// The team's members (job ranks) in team order.
    pub fn members(&self) -> &[Rank] {
        self.inner.team.members()
    }

    /// The team's id: the same on every member, different for every team
    /// made by splits of the same job (derived from the parent's id, the
    /// split's sequence number and the colour).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Ranks in the team.
    pub fn size(&self) -> u32 {
        self.inner.team.size()
    }

    /// This process's rank in the team.
    pub fn my_rank(&self) -> u32 {
        self.inner.team.my_rank()
    }

    /// The job rank of team rank `r` ([`Error::RankOutOfRange`] if `r` is
    /// not below [`size`](Self::size)).
    pub fn world_rank(&self, r: u32) -> Result<Rank> {
        self.inner.team.world_rank(r)
    }

    /// The team rank of job rank `r`, if it is a member.
    pub fn team_rank(&self, r: Rank) -> Option<u32> {
        self.inner.team.team_rank(r)
    }

    /// Malformed collective messages this client has received from peers
    /// and dropped, on every team (each is also logged as a `tracing`
    /// warning, the first few in full, with its sender and what was wrong). Honest
    /// peers send none, even when collectives fail.
    pub fn malformed_messages(&self) -> u64 {
        self.inner.engine.malformed_count()
    }

    /// Start a collective: its instance, numbered on the team.
    fn ctx(&self, what: &'static str) -> Result<Ctx> {
        not_in_handler(what)?;
        let seq = self.inner.engine.begin(self.inner.id, what)?;
        rgex_core::observe::collective(what);
        Ok(Ctx {
            team: self.inner.team.clone(),
            id: self.inner.id,
            seq,
            what,
            board: self.inner.board.clone(),
        })
    }

    /// The conduit, when it runs collective `kind` over this team itself
    /// (the SPI's override point, `Conduit::coll_native`), once the checks
    /// every collective makes have passed; `None` for the reference.
    fn native(&self, kind: CollKind, what: &'static str) -> Result<Option<&dyn Conduit>> {
        let ep = self.inner.engine.endpoint();
        if !ep.conduit().coll_native(kind, self.inner.team.members()) {
            return Ok(None);
        }
        not_in_handler(what)?;
        ep.check_open(what)?;
        Ok(Some(ep.conduit()))
    }

    /// The agreement on this member's arguments `sig`.
    fn agree(&self, sig: Sig) -> Dissem {
        Dissem::new(Summary::of(self.my_rank(), sig))
    }

    fn check_root(&self, root: u32) -> Result<()> {
        if root >= self.size() {
            return Err(Error::RankOutOfRange {
                rank: root,
                size: self.size(),
            });
        }
        Ok(())
    }

    /// Split this team (collective over it): the members that pass the
    /// same `colour` form a new team, ordered by `(key, rank in this team)`.
    /// A member passing [`NO_COLOUR`] joins no team and gets `None`.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let world = client.world();
    /// // Blocks of two; rank 0 opts out.
    /// let me = world.my_rank();
    /// let colour = if me == 0 { rgex_endpoint::team::NO_COLOUR } else { me / 2 };
    /// if let Some(pair) = world.split(colour, 0)? {
    ///     println!("team rank {} of {}", pair.my_rank(), pair.size());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn split(&self, colour: u32, key: u32) -> Result<Option<Team>> {
        let ctx = self.ctx("split")?;
        let engine = &self.inner.engine;
        let id = mix64(mix64(self.inner.id ^ 0x7465_616d) ^ ctx.seq) ^ mix64(u64::from(colour) + 1);
        // Members that finish first may send for the new team before this
        // rank has finished: know it now, with this team's members until
        // the split says which.
        if colour != NO_COLOUR {
            engine.register_team(id, self.members());
        }
        let mut mine = Vec::with_capacity(8);
        colour.write(&mut mine);
        key.write(&mut mine);
        let summary = Summary::of(self.my_rank(), Sig::split());
        let mut op = Coll::new(ctx.clone(), Dissem::gathering(summary, mine), ());
        if let Err(e) = engine.run(&mut op) {
            if colour != NO_COLOUR {
                engine.forget_team(id);
            }
            return Err(e);
        }
        if colour == NO_COLOUR {
            return Ok(None);
        }
        let all = op.agree.gathered(&ctx);
        let mut chosen: Vec<(u32, u32)> = all
            .chunks_exact(8)
            .enumerate()
            .filter(|(_, b)| u32::read(&b[..4]) == colour)
            .map(|(r, b)| (u32::read(&b[4..]), r as u32))
            .collect();
        chosen.sort_unstable();
        let me = self.my_rank();
        let my_index = chosen
            .iter()
            .position(|&(_, r)| r == me)
            .expect("this rank's own entry is in the allgather") as u32;
        let members = chosen
            .iter()
            .map(|&(_, r)| self.world_rank(r))
            .collect::<Result<Vec<_>>>()?;
        let team = Membership::from_members(members, my_index)?;
        engine.register_team(id, team.members());
        Ok(Some(Team {
            inner: Arc::new(Inner {
                team,
                id,
                engine: engine.clone(),
                // A split's collectives run over active messages: the
                // board has one lane, the world team's (board.rs).
                board: None,
            }),
        }))
    }

    /// Wait until every member has entered the barrier, running handlers
    /// meanwhile.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// client.world().barrier()?;
    /// # Ok(()) }
    /// ```
    pub fn barrier(&self) -> Result<()> {
        if let Some(c) = self.native(CollKind::Barrier, "barrier")? {
            return c.barrier_native(self.inner.team.members());
        }
        if let Some(done) = self.barrier_on_board()? {
            return Ok(done);
        }
        let mut op = Coll::new(self.ctx("barrier")?, self.agree(Sig::barrier()), ());
        self.inner.engine.run(&mut op)
    }

    /// Start a barrier; the event completes once every member has entered
    /// it. The barrier advances whenever the endpoint is polled (the
    /// client's `poll()`, any wait, any blocking collective):
    /// [`Event::test`] does not poll, so pair it with a poll. It is always
    /// rgex's reference algorithm (a conduit's own barrier,
    /// `Conduit::barrier_native`, blocks).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.barrier_nb()?;
    /// // ... overlap work ...
    /// while !ev.test() {
    ///     team.progress(); // or the client's poll()
    /// }
    /// # Ok(()) }
    /// ```
    pub fn barrier_nb(&self) -> Result<Event> {
        if let Some(ev) = self.barrier_nb_on_board()? {
            return Ok(ev);
        }
        let op = Coll::new(self.ctx("barrier_nb")?, self.agree(Sig::barrier()), ());
        self.inner.engine.start(Box::new(op), self.inner.clone())
    }

    /// Poll the endpoint and advance this client's non-blocking
    /// collectives (all teams). Returns how many things happened.
    pub fn progress(&self) -> usize {
        self.inner.engine.progress_all()
    }

    /// Broadcast from team rank `root`: at the root `data` is sent (and
    /// returned); elsewhere it is ignored and the root's bytes are
    /// returned. Any length.
    ///
    /// Eager (see [`EAGER_RUN`]): the root returns once it has sent, the
    /// others once they have the root's bytes, which carry its arguments.
    /// Where the members' arguments (root, element type, collective)
    /// differ, a member that sees it fails at once; one waiting on a
    /// member that will not send, for long, asks it and fails on its
    /// answer; and the team's next collective other than a broadcast
    /// fails on every member with the broadcast's
    /// [`CollectiveMismatch`](rgex_core::Error::CollectiveMismatch).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let got = team.broadcast(0, b"hello")?;
    /// assert_eq!(got, b"hello");
    /// # Ok(()) }
    /// ```
    pub fn broadcast(&self, root: u32, data: &[u8]) -> Result<Vec<u8>> {
        if let Some(c) = self.native(CollKind::Broadcast, "broadcast")? {
            self.check_root(root)?;
            let mut data = if self.my_rank() == root {
                data.to_vec()
            } else {
                Vec::new()
            };
            c.broadcast_native(self.inner.team.members(), root, &mut data)?;
            return Ok(data);
        }
        if let Some(got) = self.broadcast_on_board(root, data, ElemId::of::<u8>())? {
            return Ok(got);
        }
        self.run(self.broadcast_job("broadcast", root, data, ElemId::of::<u8>())?)
    }

    /// Start a broadcast (see [`broadcast`](Self::broadcast)); the handle
    /// resolves to the root's bytes. Always rgex's reference algorithm
    /// (a conduit's own broadcast, `Conduit::broadcast_native`, blocks).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.broadcast_nb(0, b"hello")?;
    /// assert_eq!(ev.wait()?, b"hello");
    /// # Ok(()) }
    /// ```
    pub fn broadcast_nb(&self, root: u32, data: &[u8]) -> Result<CollEvent<Vec<u8>>> {
        if let Some(ev) = self.broadcast_nb_on_board(root, data)? {
            return Ok(ev);
        }
        self.start(self.broadcast_job("broadcast_nb", root, data, ElemId::of::<u8>())?)
    }

    /// Broadcast of elements from `root` (see [`broadcast`](Self::broadcast)).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// assert_eq!(team.broadcast_elems(0, &[1.5f64, 2.5])?, [1.5, 2.5]);
    /// # Ok(()) }
    /// ```
    pub fn broadcast_elems<T: Element>(&self, root: u32, data: &[T]) -> Result<Vec<T>> {
        let bytes = self.encode_at_root(root, data);
        if let Some(c) = self.native(CollKind::Broadcast, "broadcast")? {
            self.check_root(root)?;
            let mut bytes = bytes;
            c.broadcast_native(self.inner.team.members(), root, &mut bytes)?;
            return Ok(algo::decode(&bytes));
        }
        if let Some(got) = self.broadcast_on_board(root, &bytes, ElemId::of::<T>())? {
            return Ok(algo::decode(&got));
        }
        let job = self.broadcast_job("broadcast", root, &bytes, ElemId::of::<T>())?;
        Ok(algo::decode(&self.run(job)?))
    }

    /// Start a broadcast of elements (see
    /// [`broadcast_elems`](Self::broadcast_elems)).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.broadcast_elems_nb(0, &[3u32, 4])?;
    /// assert_eq!(ev.wait()?, [3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn broadcast_elems_nb<T: Element>(
        &self,
        root: u32,
        data: &[T],
    ) -> Result<CollEvent<Vec<T>>> {
        let bytes = self.encode_at_root(root, data);
        if let Some(ev) = self.broadcast_elems_nb_on_board::<T>(root, &bytes)? {
            return Ok(ev);
        }
        let Job { coll, finish } =
            self.broadcast_job("broadcast_nb", root, &bytes, ElemId::of::<T>())?;
        self.start(Job {
            coll,
            finish: move |c: &mut Coll<Bcast>| algo::decode(&finish(c)),
        })
    }

    /// `data` encoded at team rank `root`, nothing elsewhere.
    fn encode_at_root<T: Element>(&self, root: u32, data: &[T]) -> Vec<u8> {
        if self.my_rank() == root {
            algo::encode(data)
        } else {
            Vec::new()
        }
    }

    /// A broadcast of bytes that encode elements `elem`.
    fn broadcast_job(
        &self,
        what: &'static str,
        root: u32,
        data: &[u8],
        elem: ElemId,
    ) -> Result<Job<Bcast, Finish<Bcast, Vec<u8>>>> {
        let mine = (self.my_rank() == root).then(|| data.to_vec());
        let sig = Sig::broadcast(root, elem);
        let mut coll = boarded::bcast_coll(self.ctx(what)?, root, mine, sig);
        if let Err(e) = self.check_root(root) {
            coll = coll.refuse(e);
        }
        Ok(Job {
            coll,
            finish: |c| c.part.data.take().unwrap_or_default(),
        })
    }

    /// Reduce `data` elementwise with a built-in operator; the result
    /// arrives at team rank `root` (`Some` there, `None` elsewhere). Every
    /// member passes the same number of elements.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_endpoint::team::ReduceOp;
    /// let team = client.world();
    /// if let Some(max) = team.reduce(0, &[team.my_rank() as i32], ReduceOp::Max)? {
    ///     assert_eq!(max[0], team.size() as i32 - 1);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn reduce<T: Numeric>(
        &self,
        root: u32,
        data: &[T],
        op: ReduceOp,
    ) -> Result<Option<Vec<T>>> {
        self.run(self.builtin_job("reduce", Some(root), data, op)?)
    }

    /// Start a reduction to `root` (see [`reduce`](Self::reduce)).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_endpoint::team::ReduceOp;
    /// let team = client.world();
    /// let ev = team.reduce_nb(0, &[1u32], ReduceOp::Sum)?;
    /// if let Some(sum) = ev.wait()? {
    ///     assert_eq!(sum[0], team.size());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn reduce_nb<T: Numeric>(
        &self,
        root: u32,
        data: &[T],
        op: ReduceOp,
    ) -> Result<CollEvent<Option<Vec<T>>>> {
        self.start(self.builtin_job("reduce_nb", Some(root), data, op)?)
    }

    /// Reduce with a built-in operator; every member gets the result.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_endpoint::team::ReduceOp;
    /// let team = client.world();
    /// let v = team.allreduce(&[1.0f64, 2.0], ReduceOp::Sum)?;
    /// assert_eq!(v, [team.size() as f64, 2.0 * team.size() as f64]);
    /// # Ok(()) }
    /// ```
    pub fn allreduce<T: Numeric>(&self, data: &[T], op: ReduceOp) -> Result<Vec<T>> {
        if let Some(got) = self.allreduce_on_board(data, op)? {
            return Ok(got);
        }
        Ok(self
            .run(self.builtin_job("allreduce", None, data, op)?)?
            .unwrap_or_default())
    }

    /// Start an allreduce (see [`allreduce`](Self::allreduce)).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_endpoint::team::ReduceOp;
    /// let team = client.world();
    /// let ev = team.allreduce_nb(&[2u64], ReduceOp::Prod)?;
    /// assert_eq!(ev.wait()?, [1u64 << team.size()]);
    /// # Ok(()) }
    /// ```
    pub fn allreduce_nb<T: Numeric>(&self, data: &[T], op: ReduceOp) -> Result<CollEvent<Vec<T>>> {
        if let Some(ev) = self.allreduce_nb_on_board(data, op)? {
            return Ok(ev);
        }
        let Job { coll, finish } = self.builtin_job("allreduce_nb", None, data, op)?;
        self.start(Job {
            coll,
            finish: move |c: &mut Coll<_>| finish(c).unwrap_or_default(),
        })
    }

    /// Reduce with a user operator `op(acc, x)`, which folds `x` into `acc`
    /// elementwise or otherwise (both slices have the contribution's
    /// length). `acc` always holds lower team ranks than `x`: `op` must be
    /// associative, need not be commutative.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// // Keep the first non-zero value in team-rank order.
    /// let r = team.reduce_with(0, &[team.my_rank() as u64], |acc: &mut [u64], x: &[u64]| {
    ///     for (a, b) in acc.iter_mut().zip(x) {
    ///         if *a == 0 { *a = *b; }
    ///     }
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn reduce_with<T: Element>(
        &self,
        root: u32,
        data: &[T],
        op: impl FnMut(&mut [T], &[T]),
    ) -> Result<Option<Vec<T>>> {
        self.run(self.user_job("reduce", Some(root), data, op)?)
    }

    /// Start a reduction to `root` with a user operator (see
    /// [`reduce_with`](Self::reduce_with)); the operator runs on whichever
    /// thread's progress advances the collective.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.reduce_with_nb(0, &[1u64], |a: &mut [u64], x: &[u64]| a[0] += x[0])?;
    /// if let Some(n) = ev.wait()? {
    ///     assert_eq!(n[0], u64::from(team.size()));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn reduce_with_nb<T: Element>(
        &self,
        root: u32,
        data: &[T],
        op: impl FnMut(&mut [T], &[T]) + Send + 'static,
    ) -> Result<CollEvent<Option<Vec<T>>>> {
        self.start(self.user_job("reduce_nb", Some(root), data, op)?)
    }

    /// Reduce with a user operator (see [`reduce_with`](Self::reduce_with));
    /// every member gets the result.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let v = team.allreduce_with(&[team.my_rank()], |a: &mut [u32], x: &[u32]| a[0] = a[0].max(x[0]))?;
    /// assert_eq!(v[0], team.size() - 1);
    /// # Ok(()) }
    /// ```
    pub fn allreduce_with<T: Element>(
        &self,
        data: &[T],
        op: impl FnMut(&mut [T], &[T]),
    ) -> Result<Vec<T>> {
        Ok(self
            .run(self.user_job("allreduce", None, data, op)?)?
            .unwrap_or_default())
    }

    /// Start an allreduce with a user operator (see
    /// [`allreduce_with`](Self::allreduce_with)).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.allreduce_with_nb(&[1u64], |a: &mut [u64], x: &[u64]| a[0] += x[0])?;
    /// assert_eq!(ev.wait()?, [u64::from(team.size())]);
    /// # Ok(()) }
    /// ```
    pub fn allreduce_with_nb<T: Element>(
        &self,
        data: &[T],
        op: impl FnMut(&mut [T], &[T]) + Send + 'static,
    ) -> Result<CollEvent<Vec<T>>> {
        let Job { coll, finish } = self.user_job("allreduce_nb", None, data, op)?;
        self.start(Job {
            coll,
            finish: move |c: &mut Coll<_>| finish(c).unwrap_or_default(),
        })
    }

    /// A reduction with built-in operator `op`.
    fn builtin_job<T: Numeric>(
        &self,
        what: &'static str,
        root: Option<u32>,
        data: &[T],
        op: ReduceOp,
    ) -> Result<ReduceJob<T, Builtin>> {
        let refused = ops::check::<T>(op).err();
        self.reduction(what, root, data, OpId::Builtin(op), Builtin(op), refused)
    }

    /// A reduction with user operator `op`.
    fn user_job<T: Element, O: FnMut(&mut [T], &[T])>(
        &self,
        what: &'static str,
        root: Option<u32>,
        data: &[T],
        op: O,
    ) -> Result<ReduceJob<T, User<O>>> {
        self.reduction(what, root, data, OpId::User, User(op), None)
    }

    /// A reduction to `root` (`None`: to all) with operator `op`, known to
    /// the other members as `op_id`; `refused`: this member's arguments
    /// are refused so (see `Coll::refuse`). The result where it goes.
    fn reduction<T: Element, C: Combine<T>>(
        &self,
        what: &'static str,
        root: Option<u32>,
        data: &[T],
        op_id: OpId,
        op: C,
        refused: Option<Error>,
    ) -> Result<ReduceJob<T, C>> {
        let refused = refused.or_else(|| root.and_then(|r| self.check_root(r).err()));
        let sig = Sig::reduce(root, ElemId::of::<T>(), op_id, data.len());
        let bytes = data.len() * T::SIZE;
        let coll = if root.is_none() && bytes * self.size() as usize <= algo::FOLD_MAX {
            let agree = Dissem::gathering(Summary::of(self.my_rank(), sig), algo::encode(data));
            let coll = Coll::new(self.ctx(what)?, agree, Reduce::folding(data.len(), op));
            match refused {
                Some(e) => coll.refuse(e),
                None => coll,
            }
        } else if root.is_none()
            && bytes >= algo::HALVES_MIN
            && self.size() > 2
            && matches!(op_id, OpId::Builtin(_))
        {
            // Built-in operators only: they work elementwise, so a chunk
            // reduces alone (a user's operator sees the whole array).
            let part = Reduce::halves(data.to_vec(), op, self.size());
            self.coll(what, sig, part, refused)?
        } else {
            let dest = root.map_or(Dest::All, Dest::Root);
            self.coll(what, sig, Reduce::new(dest, data.to_vec(), op), refused)?
        };
        Ok(Job {
            coll,
            finish: |c| c.part.result.take(),
        })
    }

    /// Collective `what` with this member's arguments `sig` and algorithm
    /// `part`, numbered on the team; `refused`: see `Coll::refuse`.
    fn coll<P: Part>(
        &self,
        what: &'static str,
        sig: Sig,
        part: P,
        refused: Option<Error>,
    ) -> Result<Coll<P>> {
        let coll = Coll::new(self.ctx(what)?, self.agree(sig), part);
        Ok(match refused {
            Some(e) => coll.refuse(e),
            None => coll,
        })
    }

    /// Run `job` to completion on this thread.
    fn run<P: Part, T, F: FnOnce(&mut Coll<P>) -> T>(&self, job: Job<P, F>) -> Result<T> {
        job.run(&self.inner.engine)
    }

    /// Start `job` in the background.
    fn start<P, T, F>(&self, job: Job<P, F>) -> Result<CollEvent<T>>
    where
        P: Part + Send + 'static,
        F: FnOnce(&mut Coll<P>) -> T + Send + 'static,
        T: Send + 'static,
    {
        job.start(&self.inner.engine, self.inner.clone())
    }
}
