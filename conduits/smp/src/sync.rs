//! The atomics and cells the ring uses: std's normally, loom's under
//! `--cfg loom` so the model checker can explore the ring's interleavings.

#[cfg(loom)]
pub use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
pub use std::sync::atomic::{AtomicU64, Ordering};

/// An `UnsafeCell` with loom's closure-style accessors, so the same ring
/// code runs under both.
/// `repr(transparent)`, so a cell holding one has the layout core's
/// `MappedCell` describes.
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

    /// Read access through a raw pointer; the caller upholds the ring
    /// protocol (it holds the position).
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        #[cfg(loom)]
        return self.0.with(f);
        #[cfg(not(loom))]
        f(self.0.get())
    }

    /// Write access through a raw pointer; the caller upholds the ring
    /// protocol (it holds the position).
    #[inline]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        #[cfg(loom)]
        return self.0.with_mut(f);
        #[cfg(not(loom))]
        f(self.0.get())
    }
}
