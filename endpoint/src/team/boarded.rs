//! The forms of a team's collectives that run on its board (`board.rs`):
//! built here, run by the engine as any collective is (blocking on the
//! calling thread, or in the background behind a [`CollEvent`]).

use super::algo::{self, Bcast, Coll, Ctx, Dissem};
use super::board::{Board, BoardOp, NoOp, Out, Work, CAP};
use super::engine::{Engine, Step};
use super::handle::{self, CollEvent};
use super::ops::{self, Builtin, Combine};
use super::signature::{ElemId, Kind, OpId, Sig, Summary};
use super::{registry, Element, Numeric, ReduceOp, Team};
use parking_lot::Mutex;
use rgex_core::{Error, Event, Result};
use std::sync::Arc;

/// A board collective in the background: its result goes to its handle.
struct Deliver<T, C, R> {
    op: BoardOp<T, C>,
    finish: fn(Out<T>) -> R,
    out: Arc<Mutex<Option<Result<R>>>>,
}

impl<T: Element, C: Combine<T>, R> Step for Deliver<T, C, R> {
    fn step(&mut self, c: &Engine) -> Result<bool> {
        match self.op.step(c) {
            Ok(false) => Ok(false),
            Ok(true) => {
                *self.out.lock() = Some(self.op.take().map(self.finish));
                Ok(true)
            }
            Err(e) => Err(self.keep(e)),
        }
    }

    fn id(&self) -> (u64, u64) {
        self.op.id()
    }

    fn what(&self) -> &'static str {
        self.op.what()
    }

    fn disagreement(&self) -> Option<Summary> {
        self.op.disagreement()
    }

    fn fail(&mut self, e: Error) -> Error {
        let e = self.op.fail(e);
        self.keep(e)
    }
}

impl<T, C, R> Deliver<T, C, R> {
    /// Keep `e` for the handle; the event fails with its text.
    fn keep(&mut self, e: Error) -> Error {
        let text = e.to_string();
        *self.out.lock() = Some(Err(e));
        Error::Failed(text)
    }
}

fn bytes<T>(o: Out<T>) -> Vec<u8> {
    match o {
        Out::Bytes(b) => b,
        _ => Vec::new(),
    }
}

fn elems<T>(o: Out<T>) -> Vec<T> {
    match o {
        Out::Elems(v) => v,
        _ => Vec::new(),
    }
}

/// The broadcast over active messages of collective `ctx` from `root`
/// (`mine`: the data, at the root), with this member's arguments `sig`:
/// eager but at every `EAGER_RUN`-th collective (see `eager_at`).
pub(super) fn bcast_coll(ctx: Ctx, root: u32, mine: Option<Vec<u8>>, sig: Sig) -> Coll<Bcast> {
    let summary = Summary::of(ctx.me(), sig);
    if registry::eager_at(ctx.seq) {
        Coll::eager(ctx, summary, Bcast::eager(root, mine, sig))
    } else {
        let (part, agree): (Bcast, Dissem) = Bcast::choosing(root, mine, summary);
        Coll::new(ctx, agree, part)
    }
}

impl Team {
    /// Run `op` to completion on this thread, then poll once: an AM a
    /// member sent before it entered the collective sits in this rank's
    /// ring before that member's publication (which this rank has seen),
    /// and is handled before the collective returns, as it is when the
    /// collective's own messages follow it down the same ring (a rank
    /// that finalizes after a barrier still serves a request sent before
    /// it).
    fn run_board<T: Element, C: Combine<T>>(&self, op: &mut BoardOp<T, C>) -> Result<Out<T>> {
        self.inner.engine.run(op)?;
        self.inner.engine.progress_all();
        op.take()
    }

    /// Start `op` in the background; its handle resolves to `finish` of
    /// its result.
    fn start_board<T, C, R>(
        &self,
        op: BoardOp<T, C>,
        finish: fn(Out<T>) -> R,
    ) -> Result<CollEvent<R>>
    where
        T: Element,
        C: Combine<T> + Send + 'static,
        R: Send + 'static,
    {
        let out = Arc::new(Mutex::new(None));
        let op = Deliver {
            op,
            finish,
            out: out.clone(),
        };
        handle::start(&self.inner.engine, Box::new(op), out, self.inner.clone())
    }

    /// Collective `what`'s context and the team's board, if it has one
    /// (moved out of the context: the collective holds it once).
    fn board_ctx(&self, what: &'static str) -> Result<Option<(Ctx, Arc<Board>)>> {
        if self.inner.board.is_none() {
            return Ok(None);
        }
        let mut ctx = self.ctx(what)?;
        Ok(ctx.board.take().map(|board| (ctx, board)))
    }

    /// A barrier on the board, if the team has one.
    fn board_barrier(&self, what: &'static str) -> Result<Option<BoardOp<u8, NoOp>>> {
        let Some((ctx, board)) = self.board_ctx(what)? else {
            return Ok(None);
        };
        Ok(Some(BoardOp::new(
            ctx,
            board,
            Sig::barrier(),
            Work::Agree,
            Vec::new(),
            None,
        )))
    }

    /// [`barrier`](Team::barrier) on the board, if the team has one.
    pub(super) fn barrier_on_board(&self) -> Result<Option<()>> {
        match self.board_barrier("barrier")? {
            Some(mut op) => self.run_board(&mut op).map(|_| Some(())),
            None => Ok(None),
        }
    }

    /// [`barrier_nb`](Team::barrier_nb) on the board, if the team has one.
    pub(super) fn barrier_nb_on_board(&self) -> Result<Option<Event>> {
        match self.board_barrier("barrier_nb")? {
            Some(op) => self
                .inner
                .engine
                .start(Box::new(op), self.inner.clone())
                .map(Some),
            None => Ok(None),
        }
    }

    /// A broadcast on the board, if the team has one (the root's data,
    /// when it does not fit a buffer, goes over active messages on the
    /// same instance).
    fn board_bcast(
        &self,
        what: &'static str,
        root: u32,
        data: &[u8],
        elem: ElemId,
    ) -> Result<Option<BoardOp<u8, NoOp>>> {
        let Some((ctx, board)) = self.board_ctx(what)? else {
            return Ok(None);
        };
        let sig = Sig::broadcast(root, elem);
        let at_root = self.my_rank() == root;
        let (mine, large) = match (at_root, data.len() > CAP) {
            (true, false) => (data.to_vec(), None),
            (true, true) => (Vec::new(), Some(data.to_vec())),
            (false, _) => (Vec::new(), None),
        };
        let is_large = large.is_some();
        let mut op = BoardOp::new(
            ctx,
            board,
            sig,
            Work::Bcast { root, large },
            mine,
            self.check_root(root).err(),
        );
        if is_large {
            op.mark_large();
        }
        Ok(Some(op))
    }

    /// [`broadcast`](Team::broadcast) (of elements `elem`) on the board,
    /// if the team has one.
    pub(super) fn broadcast_on_board(
        &self,
        root: u32,
        data: &[u8],
        elem: ElemId,
    ) -> Result<Option<Vec<u8>>> {
        match self.board_bcast("broadcast", root, data, elem)? {
            Some(mut op) => Ok(Some(bytes(self.run_board(&mut op)?))),
            None => Ok(None),
        }
    }

    /// [`broadcast_nb`](Team::broadcast_nb) on the board, if the team has
    /// one.
    pub(super) fn broadcast_nb_on_board(
        &self,
        root: u32,
        data: &[u8],
    ) -> Result<Option<CollEvent<Vec<u8>>>> {
        match self.board_bcast("broadcast_nb", root, data, ElemId::of::<u8>())? {
            Some(op) => self.start_board(op, bytes).map(Some),
            None => Ok(None),
        }
    }

    /// [`broadcast_elems_nb`](Team::broadcast_elems_nb) on the board, if
    /// the team has one.
    pub(super) fn broadcast_elems_nb_on_board<T: Element>(
        &self,
        root: u32,
        data: &[u8],
    ) -> Result<Option<CollEvent<Vec<T>>>> {
        match self.board_bcast("broadcast_nb", root, data, ElemId::of::<T>())? {
            Some(op) => self
                .start_board(op, |o: Out<u8>| algo::decode::<T>(&bytes(o)))
                .map(Some),
            None => Ok(None),
        }
    }

    /// An allreduce with built-in operator `op` on the board, if the
    /// team has one and `data` fits a buffer.
    fn board_allreduce<T: Numeric>(
        &self,
        what: &'static str,
        data: &[T],
        op: ReduceOp,
    ) -> Result<Option<BoardOp<T, Builtin>>> {
        if data.len() * T::SIZE > CAP {
            return Ok(None);
        }
        let Some((ctx, board)) = self.board_ctx(what)? else {
            return Ok(None);
        };
        let sig = Sig::reduce(None, ElemId::of::<T>(), OpId::Builtin(op), data.len());
        let refused = ops::check::<T>(op).err();
        let work = Work::Allreduce { op: Builtin(op) };
        Ok(Some(BoardOp::new(
            ctx,
            board,
            sig,
            work,
            super::board::encoded(data),
            refused,
        )))
    }

    /// [`allreduce`](Team::allreduce) on the board, if it runs there.
    pub(super) fn allreduce_on_board<T: Numeric>(
        &self,
        data: &[T],
        op: ReduceOp,
    ) -> Result<Option<Vec<T>>> {
        match self.board_allreduce("allreduce", data, op)? {
            Some(mut op) => Ok(Some(elems(self.run_board(&mut op)?))),
            None => Ok(None),
        }
    }

    /// [`allreduce_nb`](Team::allreduce_nb) on the board, if it runs there.
    pub(super) fn allreduce_nb_on_board<T: Numeric>(
        &self,
        data: &[T],
        op: ReduceOp,
    ) -> Result<Option<CollEvent<Vec<T>>>> {
        match self.board_allreduce("allreduce_nb", data, op)? {
            Some(op) => self.start_board(op, elems).map(Some),
            None => Ok(None),
        }
    }

    /// An alltoall on the board, if the team has one and `data` (one
    /// block per member) fits a buffer.
    fn board_alltoall<T: Element>(
        &self,
        what: &'static str,
        data: &[T],
    ) -> Result<Option<BoardOp<T, NoOp>>> {
        let n = self.size() as usize;
        if data.len() * T::SIZE > CAP || !data.len().is_multiple_of(n) {
            // Over active messages (which refuse a length that is not a
            // multiple of the team size, on every member alike).
            return Ok(None);
        }
        let Some((ctx, board)) = self.board_ctx(what)? else {
            return Ok(None);
        };
        let sig = Sig::of(
            Kind::Alltoall,
            None,
            ElemId::of::<T>(),
            OpId::None,
            data.len(),
        );
        let work = Work::Alltoall {
            block: data.len() / n * T::SIZE,
        };
        Ok(Some(BoardOp::new(
            ctx,
            board,
            sig,
            work,
            super::board::encoded(data),
            None,
        )))
    }

    /// [`alltoall`](Team::alltoall) on the board, if it runs there.
    pub(super) fn alltoall_on_board<T: Element>(&self, data: &[T]) -> Result<Option<Vec<T>>> {
        match self.board_alltoall("alltoall", data)? {
            Some(mut op) => Ok(Some(elems(self.run_board(&mut op)?))),
            None => Ok(None),
        }
    }

    /// [`alltoall_nb`](Team::alltoall_nb) on the board, if it runs there.
    pub(super) fn alltoall_nb_on_board<T: Element>(
        &self,
        data: &[T],
    ) -> Result<Option<CollEvent<Vec<T>>>> {
        match self.board_alltoall("alltoall_nb", data)? {
            Some(op) => self.start_board(op, elems).map(Some),
            None => Ok(None),
        }
    }
}
