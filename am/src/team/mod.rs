//! Teams and collectives over active messages.
//!
//! A [`TeamHandle`] is a team (an ordered set of job ranks, see
//! [`rgex_core::Team`]) plus what its collectives need: a team id, the
//! same on every member, and a sequence number per collective. The world
//! team comes from [`Client::world_team`](crate::Client::world_team);
//! [`TeamHandle::split`] makes sub-teams.
//!
//! Collectives are scalable (log-depth trees and dissemination, no root
//! looping over all ranks), poll while they wait (handlers keep running),
//! and keep consecutive collectives and teams apart: a message that
//! arrives for a later round or a later collective is buffered until it is
//! asked for.
//!
//! Rules, as in MPI and GASNet: every member calls a team's collectives in
//! the same order (from one thread at a time per team), with matching
//! arguments (the same collective, root, element type, operator and
//! element count). Members that do not match all get
//! [`Error::CollectiveMismatch`] for that collective (naming the lowest
//! team rank, the lowest one that differs from it, and what each passed),
//! and the team stays usable for the next collective. User operators
//! cannot be told apart from each other (only from built-in ones), nor can
//! element types of one name. Collectives are refused inside AM handlers
//! ([`Error::InHandler`]). A member may have at most 65536 collectives of
//! one team in flight (non-blocking barriers not yet finished).
//!
//! Algorithms: every collective runs a dissemination over the team
//! (ceil(log2 n) rounds, one small message per rank and round) carrying a
//! summary of the members' arguments, so that every member learns whether
//! they agree; a barrier is that alone. Beside it: broadcast by binomial
//! tree, the payload split into Medium fragments; reduce by binomial tree
//! towards team rank 0 (operands combine in team-rank order, so a user
//! operator needs to be associative, not commutative), then one message to
//! the root or a binomial broadcast (allreduce); the split's allgather by
//! Bruck's algorithm, in the dissemination's own messages.

mod algo;
pub(crate) mod engine;
mod mailbox;
mod ops;
mod registry;
mod signature;
mod wire;

pub use ops::{Element, Numeric, ReduceOp};

use algo::{Bcast, Coll, Ctx, Dest, Dissem, Reduce};
use engine::{not_in_handler, Engine};
use rgex_core::conduit::CollKind;
use rgex_core::{Conduit, Error, Event, Rank, Result, Team};
use signature::{ElemId, OpId, Sig, Summary};
use std::sync::Arc;

/// The colour that puts a rank in no new team in [`TeamHandle::split`].
pub const NO_COLOUR: u32 = u32::MAX;

/// A team with collectives. Cheap to clone (clones share the sequence
/// numbers, so they are the same team, not a copy of it).
///
/// ```no_run
/// # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
/// use rgex_am::team::ReduceOp;
/// let world = client.world_team();
/// // Odd and even ranks, each ordered by world rank.
/// let half = world.split(world.my_rank() % 2, world.my_rank())?.expect("in a team");
/// half.barrier()?;
/// let sum = half.allreduce(&[1u64], ReduceOp::Sum)?;
/// assert_eq!(sum[0], u64::from(half.size()));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TeamHandle {
    inner: Arc<Inner>,
}

struct Inner {
    team: Team,
    id: u64,
    engine: Arc<Engine>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.engine.forget_team(self.id);
    }
}

impl std::fmt::Debug for TeamHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamHandle")
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

impl TeamHandle {
    /// The world team (id 0).
    pub(crate) fn world(engine: Arc<Engine>, team: Team) -> Self {
        engine.register_team(0, team.members());
        TeamHandle {
            inner: Arc::new(Inner {
                team,
                id: 0,
                engine,
            }),
        }
    }

    /// The team's ranks and their numbering.
    pub fn team(&self) -> &Team {
        &self.inner.team
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
        Ok(Ctx {
            team: self.inner.team.clone(),
            id: self.inner.id,
            seq,
            what,
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
    /// # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
    /// let world = client.world_team();
    /// // Blocks of two; rank 0 opts out.
    /// let me = world.my_rank();
    /// let colour = if me == 0 { rgex_am::team::NO_COLOUR } else { me / 2 };
    /// if let Some(pair) = world.split(colour, 0)? {
    ///     println!("team rank {} of {}", pair.my_rank(), pair.size());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn split(&self, colour: u32, key: u32) -> Result<Option<TeamHandle>> {
        let ctx = self.ctx("split")?;
        let engine = &self.inner.engine;
        let id = mix64(mix64(self.inner.id ^ 0x7465_616d) ^ ctx.seq) ^ mix64(u64::from(colour) + 1);
        // Members that finish first may send for the new team before this
        // rank has finished: know it now, with this team's members until
        // the split says which.
        if colour != NO_COLOUR {
            engine.register_team(id, self.team().members());
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
        let team = Team::from_members(members, my_index)?;
        engine.register_team(id, team.members());
        Ok(Some(TeamHandle {
            inner: Arc::new(Inner {
                team,
                id,
                engine: engine.clone(),
            }),
        }))
    }

    /// Wait until every member has entered the barrier, running handlers
    /// meanwhile.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
    /// client.world_team().barrier()?;
    /// # Ok(()) }
    /// ```
    pub fn barrier(&self) -> Result<()> {
        if let Some(c) = self.native(CollKind::Barrier, "barrier")? {
            return c.barrier_native(self.inner.team.members());
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
    /// # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
    /// let team = client.world_team();
    /// let ev = team.barrier_nb()?;
    /// // ... overlap work ...
    /// while !ev.test() {
    ///     team.progress(); // or the client's poll()
    /// }
    /// # Ok(()) }
    /// ```
    pub fn barrier_nb(&self) -> Result<Event> {
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
    /// ```no_run
    /// # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
    /// let team = client.world_team();
    /// let got = team.broadcast(0, b"hello")?;
    /// assert_eq!(got, b"hello");
    /// # Ok(()) }
    /// ```
    pub fn broadcast(&self, root: u32, data: &[u8]) -> Result<Vec<u8>> {
        self.broadcast_of(root, data, ElemId::of::<u8>())
    }

    /// Broadcast of elements from `root` (see [`broadcast`](Self::broadcast)).
    pub fn broadcast_elems<T: Element>(&self, root: u32, data: &[T]) -> Result<Vec<T>> {
        let bytes = if self.my_rank() == root {
            algo::encode(data)
        } else {
            Vec::new()
        };
        let got = self.broadcast_of(root, &bytes, ElemId::of::<T>())?;
        Ok(algo::decode(&got))
    }

    /// A broadcast of bytes that encode elements `elem`.
    fn broadcast_of(&self, root: u32, data: &[u8], elem: ElemId) -> Result<Vec<u8>> {
        self.check_root(root)?;
        if let Some(c) = self.native(CollKind::Broadcast, "broadcast")? {
            let mut data = if self.my_rank() == root {
                data.to_vec()
            } else {
                Vec::new()
            };
            c.broadcast_native(self.inner.team.members(), root, &mut data)?;
            return Ok(data);
        }
        let ctx = self.ctx("broadcast")?;
        let mine = (self.my_rank() == root).then(|| data.to_vec());
        let agree = self.agree(Sig::broadcast(root, elem));
        let mut op = Coll::new(ctx, agree, Bcast::new(root, mine));
        self.inner.engine.run(&mut op)?;
        Ok(op.part.data.unwrap_or_default())
    }

    /// Reduce `data` elementwise with a built-in operator; the result
    /// arrives at team rank `root` (`Some` there, `None` elsewhere). Every
    /// member passes the same number of elements.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
    /// use rgex_am::team::ReduceOp;
    /// let team = client.world_team();
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
        ops::check::<T>(op)?;
        self.check_root(root)?;
        let combine = move |a: &mut [T], b: &[T]| T::combine(op, a, b);
        self.reduction("reduce", Some(root), data, OpId::Builtin(op), combine)
    }

    /// Reduce with a built-in operator; every member gets the result.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
    /// use rgex_am::team::ReduceOp;
    /// let team = client.world_team();
    /// let v = team.allreduce(&[1.0f64, 2.0], ReduceOp::Sum)?;
    /// assert_eq!(v, [team.size() as f64, 2.0 * team.size() as f64]);
    /// # Ok(()) }
    /// ```
    pub fn allreduce<T: Numeric>(&self, data: &[T], op: ReduceOp) -> Result<Vec<T>> {
        ops::check::<T>(op)?;
        let combine = move |a: &mut [T], b: &[T]| T::combine(op, a, b);
        let r = self.reduction("allreduce", None, data, OpId::Builtin(op), combine)?;
        Ok(r.unwrap_or_default())
    }

    /// Reduce with a user operator `op(acc, x)`, which folds `x` into `acc`
    /// elementwise or otherwise (both slices have the contribution's
    /// length). `acc` always holds lower team ranks than `x`: `op` must be
    /// associative, need not be commutative.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
    /// let team = client.world_team();
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
        self.check_root(root)?;
        let mut op = op;
        let combine = move |a: &mut [T], b: &[T]| {
            op(a, b);
            Ok(())
        };
        self.reduction("reduce", Some(root), data, OpId::User, combine)
    }

    /// Reduce with a user operator (see [`reduce_with`](Self::reduce_with));
    /// every member gets the result.
    pub fn allreduce_with<T: Element>(
        &self,
        data: &[T],
        op: impl FnMut(&mut [T], &[T]),
    ) -> Result<Vec<T>> {
        let mut op = op;
        let combine = move |a: &mut [T], b: &[T]| {
            op(a, b);
            Ok(())
        };
        let r = self.reduction("allreduce", None, data, OpId::User, combine)?;
        Ok(r.unwrap_or_default())
    }

    /// A reduction to `root` (`None`: to all) with operator `op`, known to
    /// the other members as `op_id`. The result where it goes.
    fn reduction<T: Element>(
        &self,
        what: &'static str,
        root: Option<u32>,
        data: &[T],
        op_id: OpId,
        op: impl FnMut(&mut [T], &[T]) -> Result<()>,
    ) -> Result<Option<Vec<T>>> {
        let ctx = self.ctx(what)?;
        let sig = Sig::reduce(root, ElemId::of::<T>(), op_id, data.len());
        let dest = root.map_or(Dest::All, Dest::Root);
        let mut r = Coll::new(ctx, self.agree(sig), Reduce::new(dest, data.to_vec(), op));
        self.inner.engine.run(&mut r)?;
        Ok(r.part.result)
    }
}
