//! A collective built once and driven either way: [`Job::run`] to
//! completion on the calling thread (the blocking forms), or
//! [`Job::start`] in the background (the non-blocking forms, whose
//! [`CollEvent`] resolves to the result).

use super::algo::{Coll, Part};
use super::engine::{Engine, Step};
use parking_lot::Mutex;
use rgex_core::{Error, Event, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// How a finished collective's result is read.
pub(crate) type Finish<P, T> = fn(&mut Coll<P>) -> T;

/// A collective ready to run: its state machine and how to read its
/// result once it has finished.
pub(crate) struct Job<P, F> {
    pub(crate) coll: Coll<P>,
    pub(crate) finish: F,
}

impl<P: Part, T, F: FnOnce(&mut Coll<P>) -> T> Job<P, F> {
    /// Run to completion here, polling while it waits.
    pub(crate) fn run(mut self, engine: &Engine) -> Result<T> {
        engine.run(&mut self.coll)?;
        Ok((self.finish)(&mut self.coll))
    }

    /// The same collective, its result passed through `g`.
    pub(crate) fn map<U>(self, g: impl FnOnce(T) -> U) -> Job<P, impl FnOnce(&mut Coll<P>) -> U> {
        let finish = self.finish;
        Job {
            coll: self.coll,
            finish: move |c: &mut Coll<P>| g(finish(c)),
        }
    }

    /// Start in the background, keeping `team` alive until it finishes.
    pub(crate) fn start(
        self,
        engine: &Arc<Engine>,
        team: Arc<dyn Send + Sync>,
    ) -> Result<CollEvent<T>>
    where
        P: Send + 'static,
        F: Send + 'static,
        T: Send + 'static,
    {
        let out = Arc::new(Mutex::new(None));
        let op = Yield {
            coll: self.coll,
            finish: Some(self.finish),
            out: out.clone(),
        };
        start(engine, Box::new(op), out, team)
    }
}

/// Start `op`, which leaves its result in `out`, in the background: its
/// handle (or, if it failed at once, its error).
pub(crate) fn start<T>(
    engine: &Arc<Engine>,
    op: Box<dyn Step + Send>,
    out: Arc<Mutex<Option<Result<T>>>>,
    team: Arc<dyn Send + Sync>,
) -> Result<CollEvent<T>> {
    match engine.start(op, team) {
        Ok(event) => Ok(CollEvent { event, out }),
        Err(e) => Err(out.lock().take().and_then(Result::err).unwrap_or(e)),
    }
}

/// A started collective: its result goes to `out` when it finishes, and
/// so does its error (the event's failure carries the error's text only).
struct Yield<P, F, T> {
    coll: Coll<P>,
    finish: Option<F>,
    out: Arc<Mutex<Option<Result<T>>>>,
}

impl<P: Part, T, F: FnOnce(&mut Coll<P>) -> T> Step for Yield<P, F, T> {
    fn step(&mut self, c: &Engine) -> Result<bool> {
        match self.coll.step(c) {
            Ok(false) => Ok(false),
            Ok(true) => {
                if let Some(f) = self.finish.take() {
                    *self.out.lock() = Some(Ok(f(&mut self.coll)));
                }
                Ok(true)
            }
            Err(e) => {
                let text = e.to_string();
                *self.out.lock() = Some(Err(e));
                Err(Error::Failed(text))
            }
        }
    }

    fn id(&self) -> (u64, u64) {
        self.coll.id()
    }

    fn what(&self) -> &'static str {
        self.coll.what()
    }

    fn disagreement(&self) -> Option<super::signature::Summary> {
        self.coll.disagreement()
    }

    fn fail(&mut self, e: Error) -> Error {
        let text = e.to_string();
        *self.out.lock() = Some(Err(e));
        Error::Failed(text)
    }
}

/// A non-blocking collective in flight; it resolves to the collective's
/// result. Like every rgex handle, it is a [`Future`] (woken by whichever
/// thread's progress finishes the collective; something must drive
/// progress meanwhile: a progress task, another wait, a poll), and
/// [`wait`](Self::wait) polls until it is done. The collective advances
/// whenever the endpoint is polled; dropping the handle does not cancel
/// it (the other members need this one's part).
///
/// ```no_run
/// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
/// use rgex_endpoint::team::ReduceOp;
/// let team = client.world();
/// let sum = team.allreduce_nb(&[1u64], ReduceOp::Sum)?;
/// let root = team.broadcast_nb(0, b"hi")?;
/// // ... overlap work; complete them in any order ...
/// assert_eq!(root.wait()?, b"hi");
/// assert_eq!(sum.wait()?, [u64::from(team.size())]);
/// # Ok(()) }
/// ```
#[must_use = "a collective must be waited on (or awaited) to get its result"]
pub struct CollEvent<T> {
    event: Event,
    out: Arc<Mutex<Option<Result<T>>>>,
}

impl<T> std::fmt::Debug for CollEvent<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollEvent")
            .field("done", &self.test())
            .finish()
    }
}

impl<T> CollEvent<T> {
    /// True once the collective has finished here (with its result or an
    /// error). Does not poll: pair it with a poll or
    /// [`Team::progress`](super::Team::progress).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.allgather_nb(&[team.my_rank()])?;
    /// while !ev.test() {
    ///     team.progress();
    /// }
    /// assert_eq!(ev.wait()?.len(), team.size() as usize);
    /// # Ok(()) }
    /// ```
    pub fn test(&self) -> bool {
        self.event.test()
    }

    /// Poll until the collective has finished; its result, or the error
    /// every member got (a [`CollectiveMismatch`](Error::CollectiveMismatch)
    /// for mismatched arguments, a departed member...).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let v = team.broadcast_nb(0, &[7u8; 3])?.wait()?;
    /// assert_eq!(v, [7, 7, 7]);
    /// # Ok(()) }
    /// ```
    pub fn wait(self) -> Result<T> {
        let CollEvent { event, out } = self;
        outcome(&out, event.wait())
    }
}

/// The result stored in `out` by the finished collective (`done`: what
/// its event said).
fn outcome<T>(out: &Mutex<Option<Result<T>>>, done: Result<()>) -> Result<T> {
    let stored = out.lock().take();
    match (stored, done) {
        (Some(r), _) => r,
        (None, Err(e)) => Err(e),
        (None, Ok(())) => Err(Error::Failed(
            "a collective's result was taken already (its handle was polled after it resolved)"
                .into(),
        )),
    }
}

/// `handle.await` is [`wait`](CollEvent::wait) for async code.
///
/// ```no_run
/// # async fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
/// use rgex_endpoint::team::ReduceOp;
/// let team = client.world();
/// let m = team.allreduce_nb(&[team.my_rank()], ReduceOp::Max)?.await?;
/// assert_eq!(m[0], team.size() - 1);
/// # Ok(()) }
/// ```
impl<T> Future for CollEvent<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        match Pin::new(&mut self.event).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(done) => Poll::Ready(outcome(&self.out, done)),
        }
    }
}
