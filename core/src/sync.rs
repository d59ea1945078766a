//! The atomics and cells of rgex's lock-free protocols (smp's ring, the
//! shared-work board): std's normally, loom's under `--cfg loom` so the
//! model checker can explore their interleavings.

#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Let another thread run while this one waits for it: a spin hint
/// normally, a yield to the model checker under loom (which must see the
/// waiter give way to explore the thread it waits for).
#[inline]
pub fn spin() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// An `UnsafeCell` with loom's closure-style accessors, so the same
/// protocol code runs under both.
#[derive(Debug)]
#[repr(transparent)]
pub struct Slot<T>(
    #[cfg(loom)] loom::cell::UnsafeCell<T>,
    #[cfg(not(loom))] std::cell::UnsafeCell<T>,
);

impl<T> Slot<T> {
    /// Wrap a value.
    pub fn new(v: T) -> Self {
        #[cfg(loom)]
        return Slot(loom::cell::UnsafeCell::new(v));
        #[cfg(not(loom))]
        Slot(std::cell::UnsafeCell::new(v))
    }

    /// Read access through a raw pointer; the caller upholds the
    /// protocol that makes the read race-free.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        #[cfg(loom)]
        return self.0.with(f);
        #[cfg(not(loom))]
        f(self.0.get())
    }

    /// Write access through a raw pointer; the caller upholds the
    /// protocol that makes the write race-free.
    #[inline]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        #[cfg(loom)]
        return self.0.with_mut(f);
        #[cfg(not(loom))]
        f(self.0.get())
    }
}
