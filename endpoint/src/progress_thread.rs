//! A progress thread: polls the endpoint while the application computes,
//! and sleeps on the conduit's wait object when nothing arrives.
//!
//! Optional: started by [`Endpoint::start_progress_thread`] (the guard it
//! returns stops and joins the thread when dropped or
//! [`stop`](ProgressThread::stop)ped), or for the whole process with
//! `RGEX_PROGRESS_THREAD=1` at `rgex::init` (the client holds it and stops
//! it when dropped; see [`Client::progress_thread_as_configured`](crate::Client::progress_thread_as_configured)).
//!
//! While messages come it polls without pause; after [`SPIN`] without
//! one it goes idle and sleeps on the conduit's wait object
//! ([`Conduit::idle_wait`](rgex_core::Conduit::idle_wait)), at most
//! [`IDLE_SLEEP`] (a safety net; `RGEX_PROGRESS_IDLE_MS`, `AmConfig::progress_idle`, sets another):
//! - **smp**: the rank's doorbell, a futex in the rank's shared region;
//!   a sender whose claim finds the rank asleep rings it (`rgex_smp::bell`:
//!   the flag is in the ring's tail word, so a send to a rank that is
//!   awake makes no system call, and no message that comes after the
//!   thread decided to sleep is missed).
//! - **network conduits** (ofi, ibv, on the rgex-net kit): the transport's
//!   completion fd (`rgex_net::idle`): ofi's CQ opened with `FI_WAIT_FD`
//!   and armed by `fi_trywait`; ibv's completion channel, or the software
//!   device's wake socket. A provider that gives no fd has no wait
//!   object: the thread then parks for [`PARK`], polls, and parks again
//!   (a message waits at most about that long).
//! - **with the shared-memory bypass**: smp's doorbell when every peer is
//!   node-local, the network's fd when none is, and both when the job
//!   mixes them (smp's wake socket polled with the network's fd, see
//!   `rgex_net::shm_bypass`).
//!
//! [`ProgressThread::idle_counts`] says how often the thread slept on
//! the wait object and how often it parked.
//!
//! Handlers run on the progress thread as on any polling thread (the
//! handler rules do not change). Errors a poll would return (a dropped
//! AM, a handler's error, a malformed message: see
//! [`Endpoint::poll`]) are not taken by the thread: they stay queued for
//! the application's next `poll` or wait, so none is lost.

use crate::Endpoint;
use rgex_core::{Error, PollSet, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the thread keeps polling after the last message before it
/// goes idle (a message answered within this keeps it polling).
pub const SPIN: Duration = Duration::from_micros(50);

/// The longest sleep on a conduit's wait object: a safety net, since a
/// sender rings when it finds the thread asleep.
/// [`AmConfig::progress_idle`](crate::AmConfig::progress_idle)
/// (`RGEX_PROGRESS_IDLE_MS`) sets another.
pub const IDLE_SLEEP: Duration = Duration::from_millis(10);

/// How long the thread parks between polls when its conduit has no wait
/// object (the network conduits).
pub const PARK: Duration = Duration::from_micros(200);

/// Empty polls between two looks at the clock while spinning.
const POLLS_PER_CLOCK: u32 = 64;

/// A running progress thread (see the [module docs](self)). Dropping it
/// stops and joins the thread; [`stop`](Self::stop) does the same and
/// says whether the thread ended well.
#[must_use = "dropping the guard stops the progress thread"]
pub struct ProgressThread {
    ep: Arc<Endpoint>,
    stop: Arc<AtomicBool>,
    idles: Arc<IdleCounts>,
    idle_sleep: Duration,
    thread: Option<JoinHandle<()>>,
}

/// How often a progress thread went idle, and how (see
/// [`ProgressThread::idle_counts`]): a thread that sleeps on its
/// conduit's wait object goes idle about once per [`IDLE_SLEEP`] while
/// nothing comes and never parks; one whose conduit has no wait object
/// parks about once per [`PARK`].
#[derive(Debug, Default)]
pub struct IdleCounts {
    waits: AtomicU64,
    parks: AtomicU64,
}

impl IdleCounts {
    /// Sleeps on the conduit's wait object.
    pub fn waits(&self) -> u64 {
        // Relaxed: statistics, read after the fact.
        self.waits.load(Ordering::Relaxed)
    }

    /// Bounded parks (the conduit had no wait object).
    pub fn parks(&self) -> u64 {
        // Relaxed: as in `waits`.
        self.parks.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for ProgressThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressThread")
            .field("rank", &self.ep.rank())
            .field("running", &self.thread.is_some())
            .finish()
    }
}

impl ProgressThread {
    /// How often the thread went idle so far, and how.
    pub fn idle_counts(&self) -> &IdleCounts {
        &self.idles
    }

    /// Its longest sleep on the conduit's wait object ([`IDLE_SLEEP`],
    /// or what `RGEX_PROGRESS_IDLE_MS` set).
    pub fn idle_sleep(&self) -> Duration {
        self.idle_sleep
    }

    /// The thread's name (`rgex-progress-RANK`), as the system shows it
    /// (truncated to 15 bytes in `/proc/self/task/*/comm`).
    pub fn name(&self) -> Option<&str> {
        self.thread.as_ref().and_then(|t| t.thread().name())
    }

    /// Stop the thread and wait for it to end. Messages that arrive after
    /// it stopped stay queued for the application's polls. An error if the
    /// thread ended by a panic (a handler it ran panicked).
    pub fn stop(mut self) -> Result<()> {
        self.end()
    }

    fn end(&mut self) -> Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        // Release: pairs with the thread's Acquire loads, so it sees the
        // flag once it reads the bell rung below (see `idle`), and a
        // parked thread once unparked.
        self.stop.store(true, Ordering::Release);
        self.ep.conduit().idle_wake();
        thread.thread().unpark();
        thread.join().map_err(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Error::Failed(format!(
                "{}: the progress thread ended by a panic (in a handler it ran?): {why}",
                self.ep.rank()
            ))
        })
    }
}

impl Drop for ProgressThread {
    fn drop(&mut self) {
        if let Err(e) = self.end() {
            tracing::error!("{e}");
        }
    }
}

/// The thread's loop: poll while messages come, idle when none did for
/// [`SPIN`], until stopped.
fn run(ep: &Endpoint, stop: &AtomicBool, idles: &IdleCounts, sleep: Duration) {
    let mut quiet_since: Option<Instant> = None;
    let mut empty = 0u32;
    // Just back from an idle sleep: an empty poll goes idle again at
    // once (a sleep that ended on its timeout, or on a wake for nothing,
    // need not spin [`SPIN`] first: that spin was most of an idle
    // thread's CPU time).
    let mut woke = false;
    // Acquire: see `ProgressThread::end`.
    while !stop.load(Ordering::Acquire) {
        if ep.progress(PollSet::All) != 0 {
            quiet_since = None;
            empty = 0;
            woke = false;
            continue;
        }
        if woke {
            idle(ep, stop, idles, sleep);
            continue;
        }
        empty += 1;
        if empty < POLLS_PER_CLOCK {
            std::hint::spin_loop();
            continue;
        }
        empty = 0;
        let since = *quiet_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= SPIN {
            idle(ep, stop, idles, sleep);
            quiet_since = None;
            woke = true;
        }
    }
}

/// Sleep until a message may have come (or the thread is stopped).
fn idle(ep: &Endpoint, stop: &AtomicBool, idles: &IdleCounts, sleep: Duration) {
    // Acquire: see `ProgressThread::end`. Asked by the conduit after it
    // armed its wait (smp: after reading its bell, which the stopper
    // rings after setting the flag), so a stop is never slept through.
    // Futures waiting on memory (see `crate::memory_wait`): none of
    // them ready, and a sleep of at most `SLEEP_MAX` while one waits.
    let still_idle = || !stop.load(Ordering::Acquire) && ep.memory_waits_idle();
    let sleep = ep.idle_sleep_bound(sleep);
    // Relaxed (both counts): statistics.
    if ep.conduit().idle_wait(sleep, &still_idle) {
        idles.waits.fetch_add(1, Ordering::Relaxed);
    } else if still_idle() {
        // No wait object: a bounded park (the stopper unparks).
        idles.parks.fetch_add(1, Ordering::Relaxed);
        std::thread::park_timeout(PARK);
    }
}

impl Endpoint {
    /// Start a progress thread for this endpoint (see
    /// [`ProgressThread`] and the [module docs](crate::progress_thread)):
    /// it polls while the application computes and sleeps on the
    /// conduit's wait object when idle. It stops when the guard is
    /// dropped.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let progress = client.endpoint().start_progress_thread()?;
    /// // ... compute without polling: peers' requests are still answered ...
    /// progress.stop()?;
    /// # Ok(()) }
    /// ```
    pub fn start_progress_thread(&self) -> Result<ProgressThread> {
        let ep = self
            .me
            .upgrade()
            .expect("an endpoint is used through its Arc");
        let idle_sleep = self.progress_idle;
        let stop = Arc::new(AtomicBool::new(false));
        let idles = Arc::new(IdleCounts::default());
        let (ep2, stop2, idles2) = (ep.clone(), stop.clone(), idles.clone());
        let thread = std::thread::Builder::new()
            .name(format!("rgex-progress-{}", self.rank().0))
            .spawn(move || run(&ep2, &stop2, &idles2, idle_sleep))
            .map_err(|e| Error::Os {
                op: format!("{}: spawn the progress thread", self.rank()),
                source: e,
            })?;
        Ok(ProgressThread {
            ep,
            stop,
            idles,
            idle_sleep,
            thread: Some(thread),
        })
    }
}
