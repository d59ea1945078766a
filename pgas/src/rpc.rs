//! Remote procedure calls: run a function on another rank with
//! serialized arguments, and get its serialized result back as a future.
//!
//! The function is a `fn` item or a closure that captures nothing (its
//! name travels, see [`fn_id`](crate::fn_id)); it receives this crate's
//! handle and the arguments, and runs at the target in user-level
//! progress. Arguments and results are encoded with postcard: compact
//! (variable-length integers, so small calls fit a Medium's first cache
//! lines), and it serializes straight into a slice, so a small call is
//! written once, into rgex's own send buffer. Large ones are staged in
//! the sender's heap and read by the target (a rendezvous).

use crate::error::{Error, Result};
use crate::fn_id::{assert_zero_sized, run, FnId, Trampoline};
use crate::runtime::{Pgas, Returned};
use rgex::Rank;
use serde::{de::DeserializeOwned, Serialize};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The trampoline of `F` (inferred from a value of it).
pub(crate) fn trampoline_of<F, A, R>(_: &F) -> Trampoline
where
    F: Fn(&Pgas, A) -> R + Copy + Send + 'static,
    A: DeserializeOwned,
    R: Serialize,
{
    const { assert_zero_sized::<F>() };
    run::<F, A, R>
}

impl Pgas {
    /// Run `f(pg, args)` on `rank` and get its result: the future
    /// resolves once the result is back (an error if `rank` is gone, the
    /// body failed there, or a value could not be serialized). A small
    /// call waits with others to `rank` until this rank's next progress
    /// (see [`discharge`](Self::discharge)).
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// use rgex::Rank;
    /// let sum = pg.rpc(Rank(1), |_pg, (a, b): (u64, u64)| a + b, (2, 3))?;
    /// assert_eq!(pg.wait(sum)?, 5);
    /// # Ok(()) }
    /// ```
    pub fn rpc<F, A, R>(&self, rank: Rank, f: F, args: A) -> Result<RpcFuture<R>>
    where
        F: Fn(&Pgas, A) -> R + Copy + Send + 'static,
        A: Serialize + DeserializeOwned,
        R: Serialize + DeserializeOwned,
    {
        let id = self.inner.names.name(trampoline_of(&f));
        let mail = &self.inner.mail;
        let ticket = self.open_call(rank)?;
        match self.call(rank, ticket, id, &args, std::any::type_name::<F>) {
            Ok(()) => Ok(RpcFuture::new(self.clone(), rank, ticket)),
            Err(e) => {
                mail.close(ticket);
                Err(e)
            }
        }
    }

    /// Run `f(pg, args)` on `rank`, with no result and nothing to wait
    /// for. A failure there is printed there and counted
    /// ([`lost_failures`](Self::lost_failures)).
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// pg.rpc_ff(rgex::Rank(0), |pg, n: u64| {
    ///     if let Ok(c) = pg.state::<AtomicU64>() {
    ///         c.fetch_add(n, Ordering::Relaxed);
    ///     }
    /// }, 1)?;
    /// # Ok(()) }
    /// ```
    pub fn rpc_ff<F, A>(&self, rank: Rank, f: F, args: A) -> Result<()>
    where
        F: Fn(&Pgas, A) + Copy + Send + 'static,
        A: Serialize + DeserializeOwned,
    {
        let id = self.inner.names.name(trampoline_of(&f));
        self.call(rank, 0, id, &args, std::any::type_name::<F>)
    }

    /// Send call `ticket` of function `id` with `args`.
    pub(crate) fn call<A: Serialize>(
        &self,
        rank: Rank,
        ticket: u32,
        id: FnId,
        args: &A,
        name: impl Fn() -> &'static str,
    ) -> Result<()> {
        if rgex::observe::on() {
            rgex::observe::pgas(rgex::observe::PgasEvent::Rpc);
        }
        self.reserve(rank)?;
        let sent = self.send_call(rank, ticket, id, args, || {
            format!(
                "the arguments ({}) of an rpc to {} on {rank}",
                std::any::type_name::<A>(),
                name()
            )
        });
        if sent.is_err() {
            self.inner.mail.window.give_back(rank);
        }
        sent
    }
}

/// The result of an [`rpc`](Pgas::rpc) (or a dist_object fetch): a
/// future of the function's value. Dropping it forgets the call (its
/// result is discarded when it comes).
#[must_use = "a call's result is lost unless awaited"]
pub struct RpcFuture<R> {
    pg: Pgas,
    target: Rank,
    ticket: u32,
    done: bool,
    _r: PhantomData<fn() -> R>,
}

impl<R> RpcFuture<R> {
    pub(crate) fn new(pg: Pgas, target: Rank, ticket: u32) -> Self {
        RpcFuture {
            pg,
            target,
            ticket,
            done: false,
            _r: PhantomData,
        }
    }
}

impl<R: DeserializeOwned> Future for RpcFuture<R> {
    type Output = Result<R>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<R>> {
        // The call may still be held here (see `outbox`): an executor
        // that polls this future before any progress sends it now. A
        // failure to send fails the held calls, this one's too.
        let _ = self.pg.flush_calls();
        let Some(r) = self.pg.inner.mail.take(self.ticket, cx.waker()) else {
            return Poll::Pending;
        };
        self.done = true;
        let me = self.pg.rank();
        Poll::Ready(match r {
            Returned::Bytes(b) => postcard::from_bytes(&b[..]).map_err(|e| Error::Serialization {
                rank: me,
                what: format!(
                    "the result ({}) of a call to {}",
                    std::any::type_name::<R>(),
                    self.target
                ),
                why: e.to_string(),
            }),
            Returned::Failed(why) => Err(Error::Remote {
                from: me,
                target: self.target,
                why,
            }),
            Returned::Staged { .. } => unreachable!("staged results are read before completion"),
        })
    }
}

impl<R> Drop for RpcFuture<R> {
    fn drop(&mut self) {
        if !self.done {
            self.pg.inner.mail.close(self.ticket);
        }
    }
}
