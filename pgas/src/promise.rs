//! Promises: many calls, one completion. UPC++'s `promise<>` with
//! `operation_cx::as_promise`: a program that floods calls whose results
//! it does not need (inserts into a table, updates) registers each with
//! a [`Promise`] and waits once, on [`Promise::finalize`], instead of
//! keeping a future per call.
//!
//! Each call of a promise carries the promise's ticket, marked as
//! counted: its target runs it as any call,
//! drops its result, and answers with an acknowledgement of no bytes
//! (held with the other results for the caller, so a batch of calls
//! costs one message back). The caller counts the acknowledgements per
//! target under one lock per batch; the calls made are counted in the
//! promise itself, by the thread that makes them, with no lock and no
//! atomic. A call that fails at its target (its body panicked, its
//! arguments did not decode), a batch that could not be sent, and a
//! target that left the job each fail the promise; it still waits for
//! every other call, so nothing of it is in flight once it resolves.

use crate::error::{Error, Result};
use crate::rpc::trampoline_of;
use crate::runtime::Pgas;
use rgex::Rank;
use serde::{de::DeserializeOwned, Serialize};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Calls whose completion is counted together (see the
/// [module](crate::promise)). Made by [`Pgas::promise`]; its calls by
/// [`rpc`](Promise::rpc); waited for through [`finalize`](Promise::finalize).
///
/// ```no_run
/// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
/// use rgex::Rank;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// fn add(pg: &rgex_pgas::Pgas, n: u64) {
///     pg.state::<AtomicU64>().expect("set").fetch_add(n, Ordering::Relaxed);
/// }
/// let mut p = pg.promise()?;
/// for n in 0..1000 {
///     p.rpc(Rank(n as u32 % pg.size()), add, n)?;
/// }
/// assert_eq!(pg.wait(p.finalize())?, 1000); // every call ran
/// # Ok(()) }
/// ```
#[must_use = "a promise's calls are waited for through finalize"]
pub struct Promise {
    pg: Pgas,
    /// 0 once finalized (the future owns the ticket then).
    ticket: u32,
    /// Per target: the calls made.
    issued: Vec<u64>,
}

impl Pgas {
    /// A new [`Promise`], to make calls whose completion is counted
    /// together; an error when the most calls and promises there can be
    /// (2^21 - 1) already wait here.
    pub fn promise(&self) -> Result<Promise> {
        let ticket = self.inner.mail.open_counted().ok_or_else(|| {
            Error::from(rgex::Error::Failed(format!(
                "rgex-pgas: {}: a promise: too many calls already wait for their results on this rank; await some first",
                self.rank()
            )))
        })?;
        Ok(Promise {
            pg: self.clone(),
            ticket,
            issued: vec![0; self.size() as usize],
        })
    }
}

impl Promise {
    /// Run `f(pg, args)` on `rank` as [`Pgas::rpc`] does, counted by this
    /// promise: its result is dropped there, and only its completion (or
    /// failure) comes back. An error here (a rank outside the job, a
    /// target known gone, arguments that do not serialize) means the call
    /// was not made and is not counted.
    pub fn rpc<F, A, R>(&mut self, rank: Rank, f: F, args: A) -> Result<()>
    where
        F: Fn(&Pgas, A) -> R + Copy + Send + 'static,
        A: Serialize + DeserializeOwned,
        R: Serialize + DeserializeOwned,
    {
        let size = self.issued.len();
        let Some(made) = self.issued.get_mut(rank.0 as usize) else {
            return Err(rgex::Error::Failed(format!(
                "rgex-pgas: {}: a promise's call to {rank}: no such rank (the job has {size})",
                self.pg.rank()
            ))
            .into());
        };
        let id = self.pg.inner.names.name(trampoline_of(&f));
        self.pg
            .call(rank, self.ticket, id, &args, std::any::type_name::<F>)?;
        *made += 1;
        Ok(())
    }

    /// The calls made through this promise so far.
    pub fn calls(&self) -> u64 {
        self.issued.iter().sum()
    }

    /// No more calls: a future that resolves once every call made has
    /// completed, to their number, or to the first failure (naming its
    /// target) once the rest have completed too.
    pub fn finalize(mut self) -> PromiseFuture {
        let ticket = std::mem::take(&mut self.ticket);
        self.pg
            .inner
            .mail
            .finalize(ticket, std::mem::take(&mut self.issued));
        PromiseFuture {
            pg: self.pg.clone(),
            ticket,
            done: false,
        }
    }
}

impl Drop for Promise {
    /// A promise dropped unfinalized forgets its calls: they still run,
    /// and their acknowledgements are discarded.
    fn drop(&mut self) {
        if self.ticket != 0 {
            self.pg.inner.mail.close(self.ticket);
        }
    }
}

/// The completion of a finalized [`Promise`]: the number of its calls,
/// or the first failure among them.
#[must_use = "a promise's completion is lost unless awaited"]
pub struct PromiseFuture {
    pg: Pgas,
    ticket: u32,
    done: bool,
}

impl Future for PromiseFuture {
    type Output = Result<u64>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<u64>> {
        // The last calls may still be held here (see `outbox`).
        let _ = self.pg.flush_calls();
        let Some(out) = self.pg.inner.mail.take_counted(self.ticket, cx.waker()) else {
            return Poll::Pending;
        };
        self.done = true;
        Poll::Ready(out.map_err(|(target, why)| Error::Remote {
            from: self.pg.rank(),
            target,
            why,
        }))
    }
}

impl Drop for PromiseFuture {
    fn drop(&mut self) {
        if !self.done {
            self.pg.inner.mail.close(self.ticket);
        }
    }
}
