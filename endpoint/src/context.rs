//! Which thread is running a handler: calls that may wait or send requests
//! are refused there with a clear error instead of deadlocking.

use std::cell::Cell;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// True while this thread runs an AM handler.
#[inline]
pub fn in_handler() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// Marks the current thread as inside a handler until dropped.
pub(crate) struct HandlerScope(());

impl HandlerScope {
    #[inline]
    pub(crate) fn enter() -> Self {
        DEPTH.with(|d| d.set(d.get() + 1));
        HandlerScope(())
    }
}

impl Drop for HandlerScope {
    #[inline]
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}
