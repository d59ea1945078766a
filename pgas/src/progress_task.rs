//! Driving user-level progress from an async executor.

use crate::error::Result;
use crate::runtime::Pgas;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// A future that makes user-level progress ([`Pgas::progress`]) each time
/// it is polled, wakes itself, and ends when its [`ProgressStop`] says so
/// (or with the first error progress reports). Run it as one more task
/// beside the tasks that await rgex-pgas futures; no runtime is needed by
/// this crate.
///
/// ```no_run
/// # fn demo(pg: &rgex_pgas::Pgas) {
/// let task = pg.progress_task();
/// let stop = task.stopper();
/// // spawn `task` on your executor; when the other tasks are done:
/// stop.stop();
/// # }
/// ```
#[must_use = "a progress task does nothing unless polled"]
pub struct ProgressTask {
    pg: Pgas,
    stop: Arc<AtomicBool>,
}

/// Ends a [`ProgressTask`] at its next poll.
#[derive(Clone, Debug)]
pub struct ProgressStop(Arc<AtomicBool>);

impl ProgressStop {
    /// Stop the task.
    pub fn stop(&self) {
        // Release/Acquire: only the flag itself is published.
        self.0.store(true, Ordering::Release);
    }
}

impl ProgressTask {
    pub(crate) fn new(pg: Pgas) -> Self {
        ProgressTask {
            pg,
            stop: Arc::default(),
        }
    }

    /// A handle that ends this task.
    pub fn stopper(&self) -> ProgressStop {
        ProgressStop(self.stop.clone())
    }
}

impl Future for ProgressTask {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if self.stop.load(Ordering::Acquire) {
            return Poll::Ready(Ok(()));
        }
        if let Err(e) = self.pg.progress() {
            return Poll::Ready(Err(e));
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
