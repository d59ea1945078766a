//! Driving user-level progress from an async executor.

use crate::error::Result;
use crate::runtime::Pgas;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future that makes user-level progress ([`Pgas::progress`]) each time
/// it is polled, wakes itself, and ends when its [`ProgressStop`] says so.
/// Run it as one more task beside the tasks that await rgex-pgas futures;
/// no runtime is needed by this crate.
///
/// An error that progress reports does not end it: the task goes on (the
/// futures beside it still complete) and keeps the error for
/// [`ProgressStop::take_errors`]; once stopped, its output is the first
/// error not taken, as rgex's own progress task does.
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
    stop: ProgressStop,
}

/// Ends a [`ProgressTask`] at its next poll, and hands over the errors it
/// met (rgex's stopper, with this crate's error).
pub type ProgressStop = rgex::ProgressStop<crate::Error>;

impl ProgressTask {
    pub(crate) fn new(pg: Pgas) -> Self {
        ProgressTask {
            pg,
            stop: ProgressStop::new(),
        }
    }

    /// A handle that ends this task.
    pub fn stopper(&self) -> ProgressStop {
        self.stop.clone()
    }
}

impl Future for ProgressTask {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if self.stop.is_stopped() {
            return Poll::Ready(self.stop.finish());
        }
        if let Err(e) = self.pg.progress() {
            self.stop.record(e);
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
