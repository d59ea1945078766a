//! A tiny executor for the async conformance programs: it runs a set of
//! futures on the calling thread, polling a task only when its waker was
//! woken (so a lost wake-up is a hang, caught by [`HANG_LIMIT`], never
//! hidden by polling everything again). No runtime dependency.

use crate::HANG_LIMIT;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// A boxed task.
pub type Task<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// The ready queue the wakers push to, and the thread they unpark.
struct Ready {
    queue: Mutex<VecDeque<usize>>,
    thread: Thread,
    /// Wakes from threads other than the executor's (a progress thread).
    foreign_wakes: AtomicU64,
}

/// One task's waker.
struct TaskWaker {
    id: usize,
    /// Queued and not yet polled: a second wake adds nothing.
    queued: AtomicBool,
    ready: Arc<Ready>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // AcqRel: the executor clears it (Release, before polling) and a
        // wake that sees it clear queues the task again.
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.ready
                .queue
                .lock()
                .expect("ready queue")
                .push_back(self.id);
            if std::thread::current().id() != self.ready.thread.id() {
                self.ready.foreign_wakes.fetch_add(1, Ordering::Relaxed);
            }
            self.ready.thread.unpark();
        }
    }
}

/// What [`run_all`] reports besides the outputs.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunStats {
    /// Polls of tasks.
    pub polls: u64,
    /// Wakes that came from another thread.
    pub foreign_wakes: u64,
}

/// Run every task to completion on this thread; their outputs in order.
/// Between rounds with nothing ready, `idle` runs (a client poll, to drive
/// progress here) or, if it returns false, the thread parks until a
/// waker unparks it. Panics naming `what` after [`HANG_LIMIT`].
pub fn run_all<'a, T>(
    what: &str,
    tasks: Vec<Task<'a, T>>,
    mut idle: impl FnMut() -> bool,
) -> (Vec<T>, RunStats) {
    let ready = Arc::new(Ready {
        queue: Mutex::new((0..tasks.len()).collect()),
        thread: std::thread::current(),
        foreign_wakes: AtomicU64::new(0),
    });
    let wakers: Vec<Arc<TaskWaker>> = (0..tasks.len())
        .map(|id| {
            Arc::new(TaskWaker {
                id,
                queued: AtomicBool::new(true),
                ready: ready.clone(),
            })
        })
        .collect();
    let mut tasks: Vec<Option<Task<'a, T>>> = tasks.into_iter().map(Some).collect();
    let mut out: Vec<Option<T>> = tasks.iter().map(|_| None).collect();
    let mut left = tasks.len();
    let mut stats = RunStats::default();
    let start = Instant::now();
    while left > 0 {
        let next = ready.queue.lock().expect("ready queue").pop_front();
        let Some(id) = next else {
            assert!(
                start.elapsed() < HANG_LIMIT,
                "{what}: {left} tasks still pending after {HANG_LIMIT:?} (a lost wake-up?)"
            );
            if !idle() {
                std::thread::park_timeout(Duration::from_millis(100));
            }
            continue;
        };
        // Release: see `wake_by_ref`; a wake during the poll queues it again.
        wakers[id].queued.store(false, Ordering::Release);
        let Some(task) = tasks[id].as_mut() else {
            continue;
        };
        let waker = Waker::from(wakers[id].clone());
        stats.polls += 1;
        if let Poll::Ready(v) = task.as_mut().poll(&mut Context::from_waker(&waker)) {
            out[id] = Some(v);
            tasks[id] = None;
            left -= 1;
        }
    }
    stats.foreign_wakes = ready.foreign_wakes.load(Ordering::Relaxed);
    let outs = out
        .into_iter()
        .map(|v| v.expect("every task finished"))
        .collect();
    (outs, stats)
}

/// Run one future to completion on this thread (see [`run_all`]).
pub fn block_on<T>(what: &str, fut: impl Future<Output = T>, idle: impl FnMut() -> bool) -> T {
    let (mut out, _) = run_all(what, vec![Box::pin(fut)], idle);
    out.pop().expect("one output")
}
