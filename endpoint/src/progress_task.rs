//! Progress under async: a future that polls the endpoint, for an
//! executor to run beside the tasks that await rgex's handles.
//!
//! rgex's futures ([`Event`](rgex_core::Event), the held buffers of puts
//! and gets, atomic events, VIS gets, `barrier_nb`) do not poll the
//! endpoint: they are woken by whichever thread's progress completes
//! their operation. Someone must drive progress while they are awaited:
//! this task, a thread that waits or calls `poll()`, or a blocking call.
//!
//! Implicit-handle (NBI) operations are tracked per *thread*, and an
//! async task may move between threads at every `.await`: the async path
//! uses explicit handles (`put_nb`, `get_nb`, `op_nb`, ...) or an access
//! region opened and closed with no `.await` in between (its event is an
//! explicit handle), never `nbi_wait` across an `.await`. The rule is
//! enforced: an rgex future about to suspend while its thread has an open
//! region or unsynced implicit operations resolves to
//! [`Error::NbiAcrossAwait`] (see
//! [`rgex_core::nbi`]).

use crate::Endpoint;
use rgex_core::{Error, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Errors a task keeps for its awaiter; those past it are only counted
/// (a peer lost for good can fail every poll).
const KEPT_ERRORS: usize = 64;

/// A future that polls its endpoint each time it is polled and then
/// yields (wakes itself and returns `Pending`), until its
/// [`ProgressStop`] is used. Made by [`Endpoint::progress_task`]. It
/// needs no runtime: any executor runs it as one of its tasks (on a
/// single-thread executor it takes its turn between the others; on a
/// multi-thread one it keeps a worker busy).
///
/// A poll that fails (a handler's error, a malformed message, a lost
/// peer) does not end it: the task keeps progressing, so the futures
/// awaited beside it still complete, and keeps the error for whoever
/// awaits or holds it: [`ProgressStop::take_errors`] hands over those met
/// so far, and the task's output, once stopped, is the first error not
/// taken (`Ok(())` if none).
#[must_use = "a progress task does nothing unless polled"]
pub struct ProgressTask {
    ep: Arc<Endpoint>,
    stop: ProgressStop,
}

/// What a task and its stoppers share.
struct Shared<E> {
    stop: AtomicBool,
    /// The errors met and not yet taken, oldest first (at most
    /// [`KEPT_ERRORS`]).
    errors: Mutex<Vec<E>>,
    /// Every error met, kept or not.
    met: AtomicU64,
}

/// Ends a progress task (its next poll returns `Ready`), and reads the
/// errors it met meanwhile: [`ProgressTask`]'s, and, with its own error
/// type `E`, any other task that polls something until stopped
/// (rgex-pgas's). Such a task calls [`record`](Self::record) for each
/// error its polls meet and goes on, and ends with
/// [`finish`](Self::finish) once [`is_stopped`](Self::is_stopped).
///
/// ```
/// use rgex_endpoint::ProgressStop;
/// let stop: ProgressStop<String> = ProgressStop::new();
/// stop.record("a poll failed".into());
/// assert_eq!(stop.errors_met(), 1);
/// stop.stop();
/// assert!(stop.is_stopped());
/// assert_eq!(stop.finish(), Err("a poll failed".to_string()));
/// assert_eq!(stop.finish(), Ok(()));
/// ```
pub struct ProgressStop<E = Error>(Arc<Shared<E>>);

impl<E> Clone for ProgressStop<E> {
    fn clone(&self) -> Self {
        ProgressStop(self.0.clone())
    }
}

impl<E> Default for ProgressStop<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> std::fmt::Debug for ProgressStop<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressStop")
            .field("stopped", &self.0.stop.load(Ordering::Relaxed))
            .field("errors_met", &self.errors_met())
            .finish()
    }
}

impl<E> ProgressStop<E> {
    /// A stopper of a task not stopped, with no errors met.
    pub fn new() -> Self {
        ProgressStop(Arc::new(Shared {
            stop: AtomicBool::new(false),
            errors: Mutex::new(Vec::new()),
            met: AtomicU64::new(0),
        }))
    }

    /// Stop the task (at its next poll).
    pub fn stop(&self) {
        // Release: what the stopping thread did before happens before the
        // task's Acquire load that sees it (a courtesy; nothing depends
        // on it but the task ending).
        self.0.stop.store(true, Ordering::Release);
    }

    /// True once [`stop`](Self::stop) was called.
    pub fn is_stopped(&self) -> bool {
        // Acquire: see `stop`.
        self.0.stop.load(Ordering::Acquire)
    }

    /// Keep an error a poll of the task met (the task goes on): at most
    /// 64 wait to be taken, the rest are only counted.
    pub fn record(&self, e: E) {
        // Relaxed: a count; the errors themselves travel under the lock.
        self.0.met.fetch_add(1, Ordering::Relaxed);
        let mut kept = lock(&self.0.errors);
        if kept.len() < KEPT_ERRORS {
            kept.push(e);
        }
    }

    /// Take the errors the task's polls have met so far and not handed
    /// over yet, oldest first (at most 64 are kept; see
    /// [`errors_met`](Self::errors_met) for the count of all). The task
    /// went on progressing after each.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) {
    /// let task = client.endpoint().progress_task();
    /// let stop = task.stopper();
    /// // ... spawn `task`, await handles; then, now and again:
    /// for e in stop.take_errors() {
    ///     eprintln!("progress met: {e}");
    /// }
    /// # }
    /// ```
    pub fn take_errors(&self) -> Vec<E> {
        std::mem::take(&mut *lock(&self.0.errors))
    }

    /// How many errors the task's polls have met in all, taken or not.
    pub fn errors_met(&self) -> u64 {
        // Relaxed: see `record`.
        self.0.met.load(Ordering::Relaxed)
    }

    /// A stopped task's output: the oldest error not taken (handed over
    /// by this call), or `Ok(())`.
    pub fn finish(&self) -> std::result::Result<(), E> {
        let mut kept = lock(&self.0.errors);
        if kept.is_empty() {
            Ok(())
        } else {
            Err(kept.remove(0))
        }
    }
}

/// The errors' lock, also after a panic elsewhere poisoned it (a vector
/// of errors has no invariant a panic can break).
fn lock<E>(m: &Mutex<Vec<E>>) -> std::sync::MutexGuard<'_, Vec<E>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl std::fmt::Debug for ProgressTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressTask")
            .field("stopped", &self.stop.is_stopped())
            .finish()
    }
}

impl ProgressTask {
    /// A handle that ends this task and reads the errors it met.
    pub fn stopper(&self) -> ProgressStop {
        self.stop.clone()
    }
}

impl Future for ProgressTask {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.stop.is_stopped() {
            return Poll::Ready(self.stop.finish());
        }
        if let Err(e) = self.ep.poll() {
            self.stop.record(e);
        }
        // Yield: the executor runs the other tasks (those this poll woke
        // among them) before polling this one again.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Endpoint {
    /// A future that drives this endpoint's progress from an executor
    /// (see [`ProgressTask`] and the [module docs](crate::progress_task)):
    /// spawn it beside the tasks that await rgex's handles, and stop it
    /// with its [`stopper`](ProgressTask::stopper) when they are done.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client, block_on: impl Fn(std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>)) {
    /// use rgex_core::{Flags, GlobalAddr, Rank};
    /// let progress = client.endpoint().progress_task();
    /// let stop = progress.stopper();
    /// // spawn(progress) on the executor, then, in a task:
    /// let ep = client.endpoint().clone();
    /// block_on(Box::pin(async move {
    ///     let got = ep.get_nb(vec![0u8; 8], GlobalAddr::new(Rank(1), 0), Flags::empty())
    ///         .expect("started")
    ///         .await
    ///         .expect("arrived");
    ///     assert_eq!(got.len(), 8);
    ///     stop.stop();
    /// }));
    /// # }
    /// ```
    pub fn progress_task(&self) -> ProgressTask {
        ProgressTask {
            ep: self
                .me
                .upgrade()
                .expect("an endpoint is used through its Arc"),
            stop: ProgressStop::new(),
        }
    }
}
