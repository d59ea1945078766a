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
//! explicit handle), never `nbi_wait` across an `.await`.

use crate::Endpoint;
use rgex_core::Result;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// A future that polls its endpoint each time it is polled and then
/// yields (wakes itself and returns `Pending`), until its
/// [`ProgressStop`] is used or a poll fails (that error is its output).
/// Made by [`Endpoint::progress_task`]. It needs no runtime: any executor
/// runs it as one of its tasks (on a single-thread executor it takes its
/// turn between the others; on a multi-thread one it keeps a worker busy).
#[must_use = "a progress task does nothing unless polled"]
pub struct ProgressTask {
    ep: Arc<Endpoint>,
    stop: Arc<AtomicBool>,
}

/// Ends a [`ProgressTask`]: its next poll returns `Ready(Ok(()))`.
#[derive(Clone, Debug)]
pub struct ProgressStop(Arc<AtomicBool>);

impl ProgressStop {
    /// Stop the task (at its next poll).
    pub fn stop(&self) {
        // Release: what the stopping thread did before happens before the
        // task's Acquire load that sees it (a courtesy; nothing depends
        // on it but the task ending).
        self.0.store(true, Ordering::Release);
    }
}

impl std::fmt::Debug for ProgressTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressTask")
            .field("stopped", &self.stop.load(Ordering::Relaxed))
            .finish()
    }
}

impl ProgressTask {
    /// A handle that ends this task.
    pub fn stopper(&self) -> ProgressStop {
        ProgressStop(self.stop.clone())
    }
}

impl Future for ProgressTask {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Acquire: see `ProgressStop::stop`.
        if self.stop.load(Ordering::Acquire) {
            return Poll::Ready(Ok(()));
        }
        if let Err(e) = self.ep.poll() {
            return Poll::Ready(Err(e));
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
    /// # fn demo(client: &rgex_am::Client, block_on: impl Fn(std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>)) {
    /// use rgex_core::{Flags, GlobalAddr, Rank};
    /// let progress = client.progress_task();
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
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}
