//! The client side of the launcher's bootstrap server, over a Unix socket.

use super::protocol::{
    decode_gather, encode_hello, monotonic_ns, read_frame, write_frame, OP_ALLGATHER, OP_EXIT,
    OP_LEAVING,
};
use super::Bootstrap;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// This process's connection to the launcher, for the exit hook that
/// says it is leaving ([`announce_leaving`], [`announce_leaving_at_exit`]).
static CONNECTION: parking_lot::Mutex<Option<Weak<Mutex<UnixStream>>>> =
    parking_lot::Mutex::new(None);

/// Bootstrap collectives through the `rgex-run` launcher.
///
/// The socket also tells the launcher this rank is alive: if the process
/// dies, the launcher sees the connection close.
#[derive(Debug)]
pub struct UnixBootstrap {
    rank: u32,
    size: u32,
    stream: Arc<Mutex<UnixStream>>,
}

impl UnixBootstrap {
    /// Connect to the server at `path` as `rank` of `size`.
    pub fn connect(path: &Path, rank: u32, size: u32) -> Result<Self> {
        let mut stream = UnixStream::connect(path).map_err(|source| Error::Os {
            op: format!(
                "rank {rank}: connect to the bootstrap socket {}",
                path.display()
            ),
            source,
        })?;
        write_frame(&mut stream, &encode_hello(rank, size)).map_err(|source| Error::Os {
            op: format!("rank {rank}: bootstrap hello"),
            source,
        })?;
        let stream = Arc::new(Mutex::new(stream));
        *CONNECTION.lock() = Some(Arc::downgrade(&stream));
        Ok(UnixBootstrap { rank, size, stream })
    }
}

impl Bootstrap for UnixBootstrap {
    fn name(&self) -> &'static str {
        "rgex-run"
    }

    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        // One collective at a time per process: the lock keeps a frame and
        // its answer together when several threads bootstrap at once.
        let mut s = self.stream.lock();
        let mut body = Vec::with_capacity(mine.len() + 1);
        body.push(OP_ALLGATHER);
        body.extend_from_slice(mine);
        let rank = self.rank;
        write_frame(&mut *s, &body).map_err(|source| Error::Os {
            op: format!("rank {rank}: send to the bootstrap server"),
            source,
        })?;
        // Blocked until every rank has contributed: say so for a report.
        let _blocked = crate::blocked::publish(crate::blocked::Waiting::new(
            "the bootstrap's allgather through rgex-run's socket (every rank's contribution)",
        ));
        let answer = read_frame(&mut *s)
            .map_err(|source| Error::Os {
                op: format!("rank {rank}: read from the bootstrap server"),
                source,
            })?
            .ok_or_else(|| {
                Error::Bootstrap(format!(
                    "rank {rank}: the launcher closed the bootstrap channel"
                ))
            })?;
        let all = decode_gather(&answer)?;
        if all.len() != self.size as usize {
            return Err(Error::Bootstrap(format!(
                "rank {rank}: allgather returned {} contributions for a job of {}",
                all.len(),
                self.size
            )));
        }
        Ok(all)
    }
}

/// Tell the launcher, first thing when this process exits, that it is
/// leaving (an [`OP_LEAVING`] frame), so that of several ranks found ended
/// at once the launcher blames the first to leave, not a rank that failed
/// because it had gone. Call it once everything else that acts at exit is
/// set up (the conduits' exit hooks): exit hooks run last registered
/// first. Does nothing without a launcher connection, or once
/// [`announce_leaving`] has spoken.
///
/// ```no_run
/// // Without rgex-run (no launcher connection) it only registers the hook
/// // (not run as a test: Miri, which runs core's doc tests, has no atexit).
/// rgex_core::bootstrap::announce_leaving_at_exit();
/// ```
pub fn announce_leaving_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `announce` is an `extern "C" fn()` that lives for the
        // whole program; atexit only records the pointer.
        unsafe { libc::atexit(announce) };
    });
}

/// The launcher has been told this process is leaving.
static ANNOUNCED: AtomicBool = AtomicBool::new(false);

/// Tell the launcher now that this process is leaving the job (an
/// [`OP_LEAVING`] frame stamped with the time of the call), before its
/// conduit is torn down and its peers can find it gone: a `Client`
/// that is dropped or finalized calls it first, so that a peer that then
/// fails (finding it gone) and exits before it is not the one the
/// launcher blames. Once per process: later calls, and the exit hook of
/// [`announce_leaving_at_exit`], send nothing more (the launcher keeps
/// the first time anyway). Returns whether the launcher was told now.
/// Does nothing without a launcher connection (a job of one rank, or one
/// started by a PMIx launcher, which does not ask), or when another
/// thread of this process holds the connection in a collective for more
/// than 10 ms (that collective may never finish now; the exit hook tries
/// again).
///
/// ```
/// // Without rgex-run there is nobody to tell.
/// assert!(!rgex_core::bootstrap::announce_leaving());
/// ```
pub fn announce_leaving() -> bool {
    // Relaxed: a once-flag on its own; a race between two threads at
    // worst sends the frame twice, which the launcher ignores (it keeps
    // the first time).
    if ANNOUNCED.load(Ordering::Relaxed) {
        return false;
    }
    let now = monotonic_ns();
    let Some(stream) = CONNECTION.lock().as_ref().and_then(Weak::upgrade) else {
        return false;
    };
    let mut frame = vec![OP_LEAVING];
    frame.extend_from_slice(&now.to_le_bytes());
    // Another thread may be in a collective with the lock held (it would
    // never finish now): then say nothing rather than wait or interleave.
    let locked = stream.try_lock_for(Duration::from_millis(10));
    let told = locked.is_some_and(|mut s| write_frame(&mut *s, &frame).is_ok());
    if told {
        // Relaxed: as above.
        ANNOUNCED.store(true, Ordering::Relaxed);
    }
    told
}

/// Ask the launcher to end the whole job with `status` (an [`OP_EXIT`]
/// frame): it ends every rank, whatever each is doing, and exits with
/// `status`. The caller then exits itself. Returns whether the launcher
/// was told: not without a launcher connection (a job of one rank, or one
/// started by a PMIx launcher), nor when another thread of this process
/// holds the connection in a collective for more than 10 ms.
///
/// ```
/// // Without rgex-run there is nobody to tell.
/// assert!(!rgex_core::bootstrap::request_job_exit(3));
/// ```
pub fn request_job_exit(status: i32) -> bool {
    let Some(stream) = CONNECTION.lock().as_ref().and_then(Weak::upgrade) else {
        return false;
    };
    let mut frame = vec![OP_EXIT];
    frame.extend_from_slice(&status.to_le_bytes());
    let locked = stream.try_lock_for(Duration::from_millis(10));
    locked.is_some_and(|mut s| write_frame(&mut *s, &frame).is_ok())
}

extern "C" fn announce() {
    announce_leaving();
}
