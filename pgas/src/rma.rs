//! One-sided transfers of `Plain` values between heaps, as futures.
//!
//! Completions, as UPC++ names them:
//! - **source**: the source may be reused. `rput` takes its value by copy
//!   and `rput_slice` borrows its slice only for the call, so source
//!   completion is reached when they return;
//! - **operation**: the data is at the target. The future each returns
//!   resolves then;
//! - **remote**: an RPC runs at the target after the data landed
//!   ([`rput_then`](Pgas::rput_then)): progress sends it once the put is
//!   complete, whether or not anybody awaits.

use crate::error::{Error, Result};
use crate::global_ptr::GlobalPtr;
use crate::plain::{bytes_of, values_of, Plain};
use crate::runtime::{lock, Pgas};
use rgex::{Event, Flags};
use serde::{de::DeserializeOwned, Serialize};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Operation completion of a put.
#[must_use = "a put's completion is only known by awaiting it"]
pub struct Rput(Event);

impl Rput {
    /// The put whose remote completion is `ev`.
    pub(crate) fn of(ev: Event) -> Rput {
        Rput(ev)
    }
}

impl Future for Rput {
    type Output = Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        Pin::new(&mut self.0).poll(cx).map_err(Error::from)
    }
}

/// A get's value.
#[must_use = "a get's value is only had by awaiting it"]
pub struct Rget<T> {
    pending: rgex::GetPending<Vec<u8>>,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: Plain> Future for Rget<T> {
    type Output = Result<Vec<T>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Vec<T>>> {
        Pin::new(&mut self.pending)
            .poll(cx)
            .map(|r| Ok(values_of::<T>(&r?)))
    }
}

impl Pgas {
    /// Put `value` at `dst`; resolves once it is there.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas, p: rgex_pgas::GlobalPtr<f64>) -> rgex_pgas::Result<()> {
    /// pg.wait(pg.rput(2.5, p)?)?;
    /// # Ok(()) }
    /// ```
    pub fn rput<T: Plain>(&self, value: T, dst: GlobalPtr<T>) -> Result<Rput> {
        self.rput_slice(&[value], dst)
    }

    /// Put `src` at `dst` onwards (source completion on return).
    pub fn rput_slice<T: Plain>(&self, src: &[T], dst: GlobalPtr<T>) -> Result<Rput> {
        let ev = self
            .ep()
            .put_nb(dst.addr()?, bytes_of(src), Flags::empty())?;
        Ok(Rput(ev))
    }

    /// Get the value at `src`.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas, p: rgex_pgas::GlobalPtr<u32>) -> rgex_pgas::Result<()> {
    /// let v: u32 = pg.wait(pg.rget(p)?)?;
    /// # Ok(()) }
    /// ```
    pub fn rget<T: Plain>(&self, src: GlobalPtr<T>) -> Result<impl Future<Output = Result<T>>> {
        let g = self.rget_slice(src, 1)?;
        Ok(async move { Ok(g.await?[0]) })
    }

    /// Get `n` values from `src` onwards.
    pub fn rget_slice<T: Plain>(&self, src: GlobalPtr<T>, n: usize) -> Result<Rget<T>> {
        let len = n.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::from(rgex::Error::Failed(format!(
                "rgex-pgas: a get of {n} elements of {} bytes overflows",
                std::mem::size_of::<T>()
            )))
        })?;
        let pending = self
            .ep()
            .get_nb(vec![0u8; len], src.addr()?, Flags::empty())?;
        Ok(Rget {
            pending,
            _t: std::marker::PhantomData,
        })
    }

    /// Put `src` at `dst`, then run `f(pg, args)` on `dst`'s rank once the
    /// data is there (remote completion). The future resolves when the
    /// call has been made (a small call then goes out with this rank's
    /// next progress at the latest, see [`Pgas::discharge`]); the call
    /// runs whether or not it is awaited.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas, halo: rgex_pgas::GlobalPtr<f64>) -> rgex_pgas::Result<()> {
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// // Tell the neighbour its halo arrived.
    /// let sent = pg.rput_then(&[1.0, 2.0], halo, |pg, ()| {
    ///     if let Ok(c) = pg.state::<AtomicU64>() {
    ///         c.fetch_add(1, Ordering::Release);
    ///     }
    /// }, ())?;
    /// pg.wait(sent)?;
    /// # Ok(()) }
    /// ```
    pub fn rput_then<T, F, A>(
        &self,
        src: &[T],
        dst: GlobalPtr<T>,
        f: F,
        args: A,
    ) -> Result<impl Future<Output = Result<()>>>
    where
        T: Plain,
        F: Fn(&Pgas, A) + Copy + Send + 'static,
        A: Serialize + DeserializeOwned + Send + 'static,
    {
        let ev = self
            .ep()
            .put_nb(dst.addr()?, bytes_of(src), Flags::empty())?;
        let id = self.inner.names.name(crate::rpc::trampoline_of(&f));
        let done = Arc::new(Mutex::new(Notice::default()));
        let then: Then =
            Box::new(move |pg: &Pgas| pg.call(dst.rank(), 0, id, &args, std::any::type_name::<F>));
        lock(&self.inner.remote.0).push(RemoteCx {
            ev,
            then: Some(then),
            done: done.clone(),
        });
        Ok(NoticeFuture(done))
    }
}

/// The call that follows a put.
type Then = Box<dyn FnOnce(&Pgas) -> Result<()> + Send>;

/// A put waiting to be followed by a call.
struct RemoteCx {
    ev: Event,
    then: Option<Then>,
    done: Arc<Mutex<Notice>>,
}

/// Puts waiting for their remote completions, kept by the runtime.
#[derive(Default)]
pub(crate) struct RemoteCompletions(Mutex<Vec<RemoteCx>>);

/// The outcome of a remote completion, and who waits for it.
#[derive(Default)]
struct Notice {
    outcome: Option<Result<()>>,
    waker: Option<Waker>,
}

struct NoticeFuture(Arc<Mutex<Notice>>);

impl Future for NoticeFuture {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let mut n = lock(&self.0);
        match n.outcome.take() {
            Some(r) => Poll::Ready(r),
            None => {
                n.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Send the calls of the puts that have completed (user-level progress).
pub(crate) fn run_remote_completions(pg: &Pgas) -> Result<usize> {
    let ready: Vec<RemoteCx> = {
        let mut list = lock(&pg.inner.remote.0);
        if list.is_empty() {
            return Ok(0);
        }
        let (ready, waiting) = std::mem::take(&mut *list)
            .into_iter()
            .partition(|r| r.ev.test());
        *list = waiting;
        ready
    };
    let n = ready.len();
    for mut r in ready {
        let then = r.then.take().expect("run once");
        // The put's own outcome first: a failed put sends no call.
        let outcome = r.ev.wait().map_err(Error::from).and_then(|()| then(pg));
        let waker = {
            let mut d = lock(&r.done);
            d.outcome = Some(outcome);
            d.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
    Ok(n)
}
