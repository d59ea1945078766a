//! A context's shared state (the engine under its lock) and its service
//! thread.

use super::progress::Engine;
use parking_lot::{Mutex, MutexGuard};
use std::sync::Weak;
use std::time::{Duration, Instant};

/// The service thread's nap after a pass that moved packets.
const SERVICE_BUSY: Duration = Duration::from_micros(50);
/// Its longest nap, reached by doubling while the device is idle.
const SERVICE_IDLE: Duration = Duration::from_millis(5);

/// A context's state, shared by its handles.
#[derive(Debug)]
pub(crate) struct Device {
    pub(super) engine: Mutex<Engine>,
}

impl Device {
    /// The engine, for a handle's destruction or the service thread.
    pub(super) fn lock(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock()
    }

    /// The engine, for a verb (the service thread then stays away).
    pub(super) fn lock_verb(&self) -> MutexGuard<'_, Engine> {
        let mut e = self.engine.lock();
        e.last_call = Instant::now();
        e
    }
}

/// The service thread: runs the engine when no verb has for a while, so
/// a process that does not call into its device still answers its peers
/// (as an HCA does without the CPU). It naps 50 us after a pass that
/// moved packets, doubling to 5 ms while idle (at most 200 wake-ups a
/// second), never waits for the lock, and ends with the context.
pub(super) fn spawn_service(dev: Weak<Device>) {
    let run = move || {
        let mut nap = SERVICE_BUSY;
        loop {
            std::thread::sleep(nap);
            let Some(d) = dev.upgrade() else { return };
            let moved = match d.engine.try_lock() {
                Some(mut e) if e.last_call.elapsed() >= nap => e.progress(),
                _ => false, // a verb is running the engine
            };
            nap = if moved {
                SERVICE_BUSY
            } else {
                (nap * 2).min(SERVICE_IDLE)
            };
        }
    };
    // Without the thread the device still works, inside verbs.
    let _ = std::thread::Builder::new()
        .name("rgex-ibv-soft".into())
        .spawn(run);
}
