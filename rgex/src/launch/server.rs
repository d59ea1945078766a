//! The launcher's bootstrap server: the other end of
//! [`UnixBootstrap`](rgex_core::bootstrap::UnixBootstrap).
//!
//! Every rank connects to a Unix socket, says hello (its rank and the job
//! size), then sends one frame per collective. The server matches the k-th
//! frame of every rank and, when all have arrived, answers each with every
//! contribution in rank order. If a rank leaves (its connection closes, or
//! its process exits without ever connecting) the ranks waiting for a
//! collective it did not contribute to get a failure naming it, so nobody
//! hangs.
//!
//! One thread accepts connections and one thread serves each connection;
//! they share one state under a mutex, with a condition variable for the
//! ranks waiting in a collective.

use super::cleanup::PrivateDir;
use rgex_core::bootstrap::protocol::{
    decode_hello, encode_failure, encode_gather, monotonic_ns, read_frame, write_frame,
    OP_ALLGATHER, OP_EXIT, OP_LEAVING,
};
use rgex_core::{Error, Result};
use std::collections::BTreeMap;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long after a rank's process exited the server still waits for a
/// hello from it before counting it as gone. Its connection, if it made
/// one, is already in the kernel's queue by then; this only covers the
/// moment the accepting thread needs to take it.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// How often a rank waiting in a collective rechecks for ranks that exited
/// without connecting.
const RECHECK: Duration = Duration::from_millis(50);

/// One collective: the contributions so far and, once complete, the answer.
#[derive(Debug)]
struct Round {
    parts: Vec<Option<Vec<u8>>>,
    arrived: u32,
    answer: Option<Arc<Vec<u8>>>,
    collected: u32,
}

#[derive(Debug)]
struct State {
    size: u32,
    /// The rank has said hello.
    hello: Vec<bool>,
    /// The rank's connection closed when it was about to take part in this
    /// collective (0-based): it contributed to every earlier one only.
    left: Vec<Option<u64>>,
    /// When the rank's connection closed (its process ended, as a rule:
    /// the kernel closes it at once, while the launcher reaps ranks only
    /// every few milliseconds).
    closed_at: Vec<Option<u64>>,
    /// When the rank said it was leaving (its client was finalized or
    /// dropped, or its process began to exit: before its conduit tells
    /// its peers).
    leaving_at: Vec<Option<u64>>,
    /// When the launcher saw the rank's process exit.
    exited: Vec<Option<Instant>>,
    /// The first rank that asked to end the job ([`OP_EXIT`]), and the
    /// status it asked for.
    exit_request: Option<(u32, i32)>,
    /// Collectives in progress, or complete but not yet collected by all.
    rounds: BTreeMap<u64, Round>,
    /// The server is shutting down: every waiter fails.
    closing: bool,
    /// Clones of every accepted connection, to unblock their readers at
    /// shutdown.
    streams: Vec<UnixStream>,
    /// Threads serving connections, joined at shutdown.
    workers: Vec<JoinHandle<()>>,
}

impl State {
    /// Why collective `k` cannot complete, if some rank that has not
    /// contributed to it is gone.
    fn blocker(&self, k: u64) -> Option<String> {
        let now = Instant::now();
        (0..self.size as usize)
            .find(|&q| {
                self.left[q].is_some_and(|l| l <= k)
                    || (!self.hello[q]
                        && self.exited[q].is_some_and(|t| now.duration_since(t) >= EXIT_GRACE))
            })
            .map(|q| format!("rank {q} left the job before collective #{}", k + 1))
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// Connection threads that have seen bytes arrive and not yet
    /// recorded what they said (a leaving, a close): see
    /// [`BootstrapServer::settled`].
    reading: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in another server thread must not take the launcher down
        // with it: the state stays consistent between statements.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The bootstrap server of one job, listening on a Unix socket in a fresh
/// private directory. Dropping it (or [`close`](Self::close)) fails every
/// collective still waiting, joins its threads and removes the directory.
///
/// ```
/// use rgex::launch::BootstrapServer;
/// use rgex_core::bootstrap::{Bootstrap, UnixBootstrap};
///
/// let (path, server) = BootstrapServer::start(2).unwrap();
/// let other = {
///     let path = path.clone();
///     std::thread::spawn(move || {
///         let b = UnixBootstrap::connect(&path, 1, 2).unwrap();
///         b.allgather(b"one").unwrap()
///     })
/// };
/// let b = UnixBootstrap::connect(&path, 0, 2).unwrap();
/// let all = b.allgather(b"zero").unwrap();
/// assert_eq!(all, vec![b"zero".to_vec(), b"one".to_vec()]);
/// assert_eq!(other.join().unwrap(), all);
/// server.close();
/// ```
#[derive(Debug)]
pub struct BootstrapServer {
    shared: Arc<Shared>,
    path: PathBuf,
    acceptor: Option<JoinHandle<()>>,
    dir: Option<PrivateDir>,
}

impl BootstrapServer {
    /// Listen for a job of `size` ranks on `boot.sock` in a new private
    /// directory (`$TMPDIR/rgex-<pid>-<nanos>/`, mode 0700). Returns the
    /// socket's path, to give to the ranks as `RGEX_BOOTSTRAP`, and the
    /// server.
    pub fn start(size: u32) -> Result<(PathBuf, BootstrapServer)> {
        if size == 0 {
            return Err(Error::Config(
                "a bootstrap server needs a job of at least 1 rank".into(),
            ));
        }
        let dir = PrivateDir::create()?;
        let path = dir.path().join("boot.sock");
        let listener = UnixListener::bind(&path).map_err(|source| Error::Os {
            op: format!("listen on the bootstrap socket {}", path.display()),
            source,
        })?;
        let n = size as usize;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                size,
                hello: vec![false; n],
                left: vec![None; n],
                closed_at: vec![None; n],
                leaving_at: vec![None; n],
                exited: vec![None; n],
                exit_request: None,
                rounds: BTreeMap::new(),
                closing: false,
                streams: Vec::new(),
                workers: Vec::new(),
            }),
            changed: Condvar::new(),
            reading: AtomicUsize::new(0),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("rgex-boot-accept".into())
                .spawn(move || accept_loop(listener, shared))
                .map_err(|source| Error::Os {
                    op: "start the bootstrap server's accepting thread".into(),
                    source,
                })?
        };
        let server = BootstrapServer {
            shared,
            path: path.clone(),
            acceptor: Some(acceptor),
            dir: Some(dir),
        };
        Ok((path, server))
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tell the server that `rank`'s process has exited. If it never
    /// connected, collectives waiting for it fail (after a short grace for
    /// a connection still queued) instead of waiting forever. A rank that
    /// did connect is handled when its connection closes.
    pub fn rank_exited(&self, rank: u32) {
        let mut st = self.shared.lock();
        if let Some(slot) = st.exited.get_mut(rank as usize) {
            slot.get_or_insert_with(Instant::now);
        }
        drop(st);
        self.shared.changed.notify_all();
    }

    /// When `rank` began to leave ([`monotonic_ns`]), if the server knows:
    /// when it said it did (its client was finalized or dropped, or its
    /// process began to exit, by its own reading of the clock), else when
    /// its connection closed (its process ended). The supervisor, which reaps ranks only every few
    /// milliseconds, blames the first of several ranks found ended at
    /// once by this.
    pub fn left_at(&self, rank: u32) -> Option<u64> {
        let st = self.shared.lock();
        let r = rank as usize;
        st.leaving_at
            .get(r)
            .copied()
            .flatten()
            .or(st.closed_at.get(r).copied().flatten())
    }

    /// The first rank that asked to end the whole job, and the status it
    /// asked for (see [`OP_EXIT`]).
    pub fn exit_requested(&self) -> Option<(u32, i32)> {
        self.shared.lock().exit_request
    }

    /// True when everything the ranks have written to the server so far
    /// has been read and recorded: no connection holds unread bytes, and
    /// no connection thread is between taking a frame (or its close) and
    /// recording it. The supervisor judges a failure only once this
    /// holds (or after a grace), so that a rank's leaving, written before
    /// its peers could find it gone, is known when they are judged, however
    /// late the server's threads got to run.
    pub fn settled(&self) -> bool {
        let pending = self.shared.lock().streams.iter().any(|s| unread(s) > 0);
        // SeqCst, read after the unread counts: a connection thread
        // counts itself (SeqCst) before the read that takes bytes out of
        // the socket, so bytes that were there and are gone now were
        // taken by a thread whose count is seen here, until it has
        // recorded them.
        !pending && self.shared.reading.load(Ordering::SeqCst) == 0
    }

    /// Shut down: fail every waiting collective, close every connection,
    /// join the server's threads and remove the socket's directory.
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        let workers = {
            let mut st = self.shared.lock();
            st.closing = true;
            for s in &st.streams {
                let _ = s.shutdown(Shutdown::Both);
            }
            std::mem::take(&mut st.workers)
        };
        self.shared.changed.notify_all();
        // Wake the accepting thread, blocked in accept(), so it sees
        // `closing` and returns.
        let _ = UnixStream::connect(&self.path);
        let _ = acceptor.join();
        // Workers started after the take above are pushed again; collect
        // them too (the acceptor has stopped, so no more can appear).
        let late = std::mem::take(&mut self.shared.lock().workers);
        for w in workers.into_iter().chain(late) {
            let _ = w.join();
        }
        self.dir.take();
    }
}

impl Drop for BootstrapServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: UnixListener, shared: Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        let mut st = shared.lock();
        if st.closing {
            return;
        }
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors or similar: let it pass rather than spin.
                drop(st);
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if let Ok(clone) = stream.try_clone() {
            st.streams.push(clone);
        }
        let worker = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("rgex-boot-conn".into())
                .spawn(move || serve(stream, &shared))
        };
        if let Ok(w) = worker {
            st.workers.push(w);
        }
    }
}

/// Bytes waiting to be read on `stream` (0 if it cannot say: closed).
fn unread(stream: &UnixStream) -> libc::c_int {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which points
    // at `n`; the descriptor is `stream`'s, open while it is borrowed.
    let r = unsafe { libc::ioctl(stream.as_raw_fd(), libc::FIONREAD, &mut n) };
    if r == 0 {
        n
    } else {
        0
    }
}

/// Block until `stream` has bytes to read, or its end (or an error) is
/// there, without taking anything.
fn wait_readable(stream: &UnixStream) {
    let mut fd = libc::pollfd {
        fd: stream.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd, for the duration of the call; the
        // descriptor is `stream`'s, open while it is borrowed.
        let r = unsafe { libc::poll(&mut fd, 1, -1) };
        if r >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// Serve one connection: the hello, then collectives until it closes.
///
/// From the moment bytes arrive until what they say is recorded (a
/// leaving, the connection's end), the thread counts itself in
/// `shared.reading` (see [`BootstrapServer::settled`]); not while it
/// waits in a collective, which blames nobody.
fn serve(mut stream: UnixStream, shared: &Shared) {
    let Some(rank) = hello(&mut stream, shared) else {
        return;
    };
    // SeqCst (every use of `reading`): see `BootstrapServer::settled`.
    let busy = || shared.reading.fetch_add(1, Ordering::SeqCst);
    let idle = || shared.reading.fetch_sub(1, Ordering::SeqCst);
    let mut round = 0u64;
    loop {
        wait_readable(&stream);
        busy();
        let Ok(Some(frame)) = read_frame(&mut stream) else {
            break;
        };
        if let [OP_LEAVING, at @ ..] = &frame[..] {
            if let Ok(at) = <[u8; 8]>::try_from(at) {
                shared.lock().leaving_at[rank as usize].get_or_insert(u64::from_le_bytes(at));
                idle();
                continue;
            }
        }
        if let [OP_EXIT, status @ ..] = &frame[..] {
            if let Ok(status) = <[u8; 4]>::try_from(status) {
                let status = i32::from_le_bytes(status);
                shared.lock().exit_request.get_or_insert((rank, status));
                idle();
                continue;
            }
        }
        if frame.first() != Some(&OP_ALLGATHER) {
            let why = format!(
                "rank {rank} sent an unknown bootstrap request (first byte {:?}); the launcher dropped it",
                frame.first()
            );
            let _ = write_frame(&mut stream, &encode_failure(&why));
            break;
        }
        idle();
        let answer = match collective(shared, rank, round, frame[1..].to_vec()) {
            Ok(answer) => answer,
            Err(why) => Arc::new(encode_failure(&why)),
        };
        round += 1;
        if write_frame(&mut stream, &answer).is_err() {
            busy();
            break;
        }
    }
    // Counted busy here, on every way out of the loop.
    let mut st = shared.lock();
    st.left[rank as usize] = Some(round);
    st.closed_at[rank as usize] = Some(monotonic_ns());
    drop(st);
    idle();
    shared.changed.notify_all();
    let _ = stream.shutdown(Shutdown::Both);
}

/// Read and check the hello; `None` (after telling the peer why, when it
/// can be told) if the connection is not a rank of this job.
fn hello(stream: &mut UnixStream, shared: &Shared) -> Option<u32> {
    let body = read_frame(stream).ok()??;
    let reject = |stream: &mut UnixStream, why: String| {
        let _ = write_frame(stream, &encode_failure(&why));
        let _ = stream.shutdown(Shutdown::Both);
    };
    let (rank, size) = match decode_hello(&body) {
        Ok(h) => h,
        Err(e) => {
            reject(stream, format!("the launcher rejected the connection: {e}"));
            return None;
        }
    };
    let mut st = shared.lock();
    let why = if size != st.size {
        Some(format!(
            "rank {rank} says the job has {size} ranks, but the launcher started {}",
            st.size
        ))
    } else if rank >= st.size {
        Some(format!(
            "rank {rank} is out of range for a job of {} ranks",
            st.size
        ))
    } else if st.hello[rank as usize] {
        Some(format!("rank {rank} connected to the launcher twice"))
    } else {
        None
    };
    if let Some(why) = why {
        drop(st);
        reject(stream, why);
        return None;
    }
    st.hello[rank as usize] = true;
    drop(st);
    shared.changed.notify_all();
    Some(rank)
}

/// Contribute `data` as `rank`'s part of collective `k` and wait for the
/// answer (every contribution) or the reason it cannot complete.
fn collective(
    shared: &Shared,
    rank: u32,
    k: u64,
    data: Vec<u8>,
) -> std::result::Result<Arc<Vec<u8>>, String> {
    let mut st = shared.lock();
    let size = st.size as usize;
    {
        let round = st.rounds.entry(k).or_insert_with(|| Round {
            parts: vec![None; size],
            arrived: 0,
            answer: None,
            collected: 0,
        });
        if round.parts[rank as usize].replace(data).is_none() {
            round.arrived += 1;
        }
        if round.arrived as usize == size {
            let all: Vec<Vec<u8>> = round
                .parts
                .iter_mut()
                .map(|p| p.take().unwrap_or_default())
                .collect();
            round.answer = Some(Arc::new(encode_gather(&all)));
            shared.changed.notify_all();
        }
    }
    loop {
        if let Some(round) = st.rounds.get_mut(&k) {
            if let Some(answer) = round.answer.clone() {
                round.collected += 1;
                if round.collected as usize == size {
                    st.rounds.remove(&k);
                }
                return Ok(answer);
            }
        }
        if st.closing {
            return Err(format!(
                "the launcher is ending the job; collective #{} cannot complete",
                k + 1
            ));
        }
        if let Some(why) = st.blocker(k) {
            return Err(why);
        }
        st = shared
            .changed
            .wait_timeout(st, RECHECK)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}
