//! The receiver's doorbell: how an idle rank sleeps until a message comes
//! (its progress thread, see `rgex_endpoint::progress_thread`) and how a sender
//! wakes it, without a system call on any send to a rank that is awake.
//!
//! The handshake, between the sleeping receiver and any producer:
//!
//! 1. the receiver reads the bell's word `b`;
//! 2. it arms each of its rings ([`Ring::arm_sleep`](crate::ring::Ring::arm_sleep)): a compare-and-swap
//!    of the ring's `tail` from `head` to `head | ASLEEP`, which succeeds
//!    only while every message claimed in that ring was taken (nothing
//!    published and none in assembly);
//! 3. it sleeps on the word while it still reads `b` ([`Bell::wait`], a
//!    futex: the kernel compares and sleeps atomically), at most a
//!    bounded time;
//! 4. it disarms the rings it armed ([`Ring::disarm_sleep`](crate::ring::Ring::disarm_sleep)).
//!
//! A producer's claim is the compare-and-swap that moves `tail` on; when
//! the value it replaced had `ASLEEP` it clears the flag in the same step
//! ([`Claimed::woke`](crate::ring::Claimed)) and then rings the bell
//! ([`Bell::ring`]: add one to the word, wake the sleepers).
//!
//! No wakeup is lost. `tail` is one atomic word, so its read-modify-writes
//! are totally ordered: a claim either precedes the arming (the arming then
//! fails, since `tail != head`, and the receiver does not sleep) or follows
//! it and sees `ASLEEP` (that producer rings). The ringing producer's claim
//! read the value the receiver's Release CAS wrote, and is followed by an
//! Acquire fence, so the receiver's read of `b` (step 1, before its CAS)
//! happens before the producer's increment: the increment is later in the
//! word's order than `b`, so the futex either finds the word changed and
//! returns at once, or is asleep when the wake comes. The producer rings
//! at claim time, before it publishes: the receiver may wake to a message
//! still in assembly, which it polls for (its next arming fails while the
//! message is claimed and not taken).
//!
//! A sender to an awake rank pays nothing more than the flag test in its
//! claim (the value its CAS already read). Only the progress thread arms.
//!
//! **Listening on a socket instead.** A receiver that must sleep on a
//! network's fd as well cannot wait on the futex: it sleeps in `poll(2)`
//! on its wake socket ([`crate::wake_socket`]) and the network's fds. It
//! sets the bell's `listening` flag before step 2 and clears it after
//! step 4; a ringing producer that reads the flag set also rings the
//! socket (after the futex). No wakeup is lost this way either: the
//! flag's store comes before the receiver's Release CAS in step 2, and
//! the ringing producer's Acquire fence follows its read of that CAS's
//! value, so the producer reads the flag set (or a later value: cleared
//! only once the receiver woke). Its datagram is queued before the
//! receiver's `poll` looks (which then returns at once) or wakes it. The
//! receiver drains the socket after step 4, before its next step 2, so a
//! drain takes only rings of sleeps already over.

use rgex_core::sync::Ordering;
use std::time::Duration;

#[cfg(not(loom))]
use std::sync::atomic::AtomicU32;

#[cfg(loom)]
use loom::sync::atomic::AtomicU32;

/// A receiver's doorbell word, in its shared region (a futex word shared
/// between processes), or on the heap for the model checker.
#[repr(C)]
#[derive(Debug)]
pub struct Bell {
    word: AtomicU32,
    /// Non-zero while the receiver sleeps on its wake socket rather than
    /// on the futex (see the module docs).
    listening: AtomicU32,
    /// Under loom, the futex is modelled by a lock and a condition
    /// variable (the kernel's hash-bucket lock makes its compare-and-sleep
    /// atomic with respect to wakes, as this lock does).
    #[cfg(loom)]
    lock: loom::sync::Mutex<()>,
    #[cfg(loom)]
    cv: loom::sync::Condvar,
}

impl Default for Bell {
    fn default() -> Self {
        Self::new()
    }
}

impl Bell {
    /// A bell that was never rung.
    pub fn new() -> Self {
        Bell {
            word: AtomicU32::new(0),
            listening: AtomicU32::new(0),
            #[cfg(loom)]
            lock: loom::sync::Mutex::new(()),
            #[cfg(loom)]
            cv: loom::sync::Condvar::new(),
        }
    }

    /// Step 1 of the handshake: the word a sleeper compares against.
    #[inline]
    pub fn load(&self) -> u32 {
        // Acquire: a ring that this load reads from (Release, in `ring`)
        // makes what the ringer did before visible here; the progress
        // thread relies on it to see its stop flag once it reads the
        // word its stopper rang (see `rgex_endpoint::progress_thread`). The
        // producers' handshake itself needs no more than Relaxed (the
        // module docs give the order).
        self.word.load(Ordering::Acquire)
    }

    /// Receiver: sleep on the wake socket (`true`, before arming) or on
    /// the futex again (`false`, after disarming).
    pub fn listen(&self, on: bool) {
        // Relaxed: the arming CAS that follows (Release) carries the set
        // flag to the producer that finds the receiver asleep (module
        // docs); clearing is a hint, a producer that still reads it set
        // sends one spare datagram.
        self.listening.store(u32::from(on), Ordering::Relaxed);
    }

    /// Producer, after its claim found the receiver asleep (and fenced):
    /// whether the receiver sleeps on its wake socket.
    pub fn listening(&self) -> bool {
        // Relaxed: ordered after the receiver's store by the claim's
        // Acquire fence (module docs).
        self.listening.load(Ordering::Relaxed) != 0
    }

    /// Wake every thread sleeping on this bell (and make any sleep that
    /// compares against an older word return at once).
    pub fn ring(&self) {
        // Release: pairs with the Acquire in `load` (see there). The
        // increment's place after the sleeper's read of the word is given
        // by the handshake (module docs), not by this ordering.
        self.word.fetch_add(1, Ordering::Release);
        self.wake();
    }

    #[cfg(not(loom))]
    fn wake(&self) {
        // SAFETY: FUTEX_WAKE on the address of a live, aligned u32 (the
        // word is in a mapping that outlives every Bell reference); it
        // reads nothing else. Shared (not FUTEX_PRIVATE_FLAG): sleepers
        // are in another process.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                libc::FUTEX_WAKE,
                i32::MAX,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0u32,
            );
        }
    }

    #[cfg(loom)]
    fn wake(&self) {
        let _held = self.lock.lock().unwrap();
        self.cv.notify_all();
    }

    /// Sleep while the word is still `seen` (a value [`load`](Self::load)
    /// returned), until [`ring`](Self::ring)ed or `timeout` passes (the
    /// safety net: a sleep is always bounded). May return early for no
    /// reason (a signal); the caller polls and decides again.
    #[cfg(not(loom))]
    pub fn wait(&self, seen: u32, timeout: Duration) {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: FUTEX_WAIT on a live, aligned u32 (as in `wake`) with a
        // relative timeout that lives across the call; the kernel only
        // reads both. Its result (woken, EAGAIN when the word changed,
        // ETIMEDOUT, EINTR) needs no handling: every case returns to a
        // caller that polls.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                libc::FUTEX_WAIT,
                seen,
                &ts as *const libc::timespec,
                std::ptr::null::<u32>(),
                0u32,
            );
        }
    }

    /// The model's futex wait (no timeout: a lost wakeup is then a
    /// deadlock the checker reports).
    #[cfg(loom)]
    pub fn wait(&self, seen: u32, _timeout: Duration) {
        let mut held = self.lock.lock().unwrap();
        // Relaxed: the lock orders this with the waker's notify.
        while self.word.load(Ordering::Relaxed) == seen {
            held = self.cv.wait(held).unwrap();
        }
    }
}
