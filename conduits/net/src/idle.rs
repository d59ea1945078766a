//! How a progress thread sleeps on a network conduit
//! (`rgex_endpoint::progress_thread`): on the transport's wait object, an fd
//! ([`Transport::wait_arm`]), together with the conduit's own wake fd
//! (an eventfd that [`idle_wake`](rgex_core::Conduit::idle_wake) writes,
//! so a thread being stopped is not left asleep) and, under the bypass,
//! smp's wake socket (see [`ShmBypass`](crate::ShmBypass)).
//!
//! The sleep, in [`NetConduit::idle_wait`](rgex_core::Conduit::idle_wait):
//!
//! 1. under the state lock, arm the transport ([`Armed::Fd`]: from now on
//!    a completion makes the fd readable), then reap the completions once
//!    more and look at the messages already reaped but not delivered;
//!    anything found: return, the caller polls (no sleep);
//! 2. ask the caller's `still_idle` (its stop flag, read after the
//!    arming);
//! 3. `poll(2)` the transport's fd, the wake fd (and the extra fd) for at
//!    most the timeout, without the state lock;
//! 4. under the state lock, [`Transport::wait_done`]; drain the wake fd.
//!
//! No completion is slept through: one that came before step 1's arming
//! is reaped by step 1's poll (the arming and that poll are under one
//! lock, so no other thread reaps it in between and hides it from both);
//! one that comes after the arming makes the fd readable, so step 3's
//! `poll` returns at once or is woken (the transport's contract). A
//! completion that another thread (the ticker, a client's poll) reaps
//! between steps 1 and 3 made the fd readable too: at worst the sleeper
//! wakes to an empty poll and sleeps again. No stop is slept through:
//! the stopper stores its flag, then writes the wake fd; the sleeper
//! reads the flag in step 2, then polls the wake fd. If step 2 missed
//! the flag, the write comes after that read, and the eventfd's counter
//! is either non-zero when step 3 looks (it returns at once) or written
//! while it sleeps (it is woken). Step 4 drains the counter only after
//! the sleep, and the caller reads its flag after that.
//!
//! A transport without a wait object ([`Armed::Unsupported`]: some
//! libfabric providers give no fd) makes `idle_wait` return false, and
//! the progress thread parks a bounded time instead.

use crate::conduit::NetConduit;
use crate::transport::{Armed, Transport};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A conduit's wake fd: an eventfd that [`wake`](Self::wake) makes
/// readable until [`drain`](Self::drain)ed.
#[derive(Debug)]
pub struct WakeFd(OwnedFd);

impl WakeFd {
    /// A fresh eventfd (non-blocking, close-on-exec).
    pub fn new() -> std::io::Result<Self> {
        // SAFETY: eventfd takes no pointers; a non-negative result is a
        // new fd this process owns.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(WakeFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The fd to poll.
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Make the fd readable (wakes a poll on it).
    pub fn wake(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd. A full
        // counter (EAGAIN) is already readable: nothing to handle.
        unsafe { libc::write(self.fd(), (&one as *const u64).cast(), 8) };
    }

    /// Take every wake so far (the fd is not readable after, until the
    /// next [`wake`](Self::wake)).
    pub fn drain(&self) {
        let mut n = 0u64;
        // SAFETY: reads at most 8 bytes into a live u64 from our eventfd
        // (one read takes the whole counter; EAGAIN when it is zero).
        unsafe { libc::read(self.fd(), (&mut n as *mut u64).cast(), 8) };
    }
}

/// Sleep until one of `fds` is readable, or `timeout` passes, or a signal
/// comes (the caller polls and decides again in every case).
pub fn poll_readable(fds: &[RawFd], timeout: Duration) {
    let mut set = [libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    }; 4];
    let n = fds.len().min(set.len());
    for (p, &fd) in set.iter_mut().zip(&fds[..n]) {
        p.fd = fd;
        p.events = libc::POLLIN;
    }
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: `set` holds `n` initialised pollfds and lives across the
    // call; the kernel writes only their `revents`. The result (ready,
    // timed out, EINTR) needs no handling: the caller polls.
    unsafe { libc::poll(set.as_mut_ptr(), n as libc::nfds_t, ms) };
}

impl<T: Transport> NetConduit<T> {
    /// The sleep of the module docs, also waking on `also`. False if the
    /// transport has no wait object (nothing slept).
    pub(crate) fn idle_sleep(
        &self,
        timeout: Duration,
        still_idle: &dyn Fn() -> bool,
        also: Option<RawFd>,
    ) -> bool {
        // Step 1: arm and re-check under one lock.
        let fd = {
            let mut st = self.state.lock();
            match self.net.transport.wait_arm() {
                Armed::Unsupported => return false,
                Armed::Busy => return true,
                Armed::Fd(fd) => {
                    let found = st.progress(&self.net) != 0
                        || self.ready_count.any(0)
                        || self.ready_count.any(1);
                    if found {
                        self.net.transport.wait_done();
                        return true;
                    }
                    fd
                }
            }
        };
        // Steps 2 and 3.
        if still_idle() {
            let mut fds = [fd, self.idle_wake_fd.fd(), -1];
            let n = match also {
                Some(a) => {
                    fds[2] = a;
                    3
                }
                None => 2,
            };
            poll_readable(&fds[..n], timeout);
        }
        // Step 4.
        {
            let _held = self.state.lock();
            self.net.transport.wait_done();
        }
        self.idle_wake_fd.drain();
        true
    }
}
