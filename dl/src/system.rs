//! A process-wide library, loaded on first use and kept: the
//! `system()`/`loaded()` pair each loader crate offers.

use crate::LoadError;
use std::sync::OnceLock;

/// A library of type `T` loaded once per process by `load` the first
/// time it is asked for; a failure is kept and returned again.
///
/// ```
/// static LIB: rgex_dl::System<u32> = rgex_dl::System::new(|| Ok(7));
/// assert!(LIB.loaded().is_none());
/// assert_eq!(*LIB.get().unwrap(), 7);
/// assert_eq!(LIB.loaded(), Some(&7));
/// ```
pub struct System<T> {
    cell: OnceLock<Result<T, LoadError>>,
    load: fn() -> Result<T, LoadError>,
}

impl<T> System<T> {
    /// A library that `load` will load.
    pub const fn new(load: fn() -> Result<T, LoadError>) -> Self {
        System {
            cell: OnceLock::new(),
            load,
        }
    }

    /// The library, loaded on the first call; a failure is kept and
    /// returned again.
    pub fn get(&self) -> Result<&T, LoadError> {
        self.cell
            .get_or_init(self.load)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The library if [`get`](Self::get) loaded it.
    pub fn loaded(&self) -> Option<&T> {
        self.cell.get().and_then(|r| r.as_ref().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    // Relaxed: a counter read by the thread that wrote it.
    static CALLS: AtomicU32 = AtomicU32::new(0);

    #[test]
    fn a_failure_is_kept_and_the_load_runs_once() {
        static LIB: System<()> = System::new(|| {
            CALLS.fetch_add(1, Ordering::Relaxed);
            Err(LoadError::new("no such library"))
        });
        for _ in 0..3 {
            assert_eq!(LIB.get().unwrap_err().why, "no such library");
        }
        assert!(LIB.loaded().is_none());
        assert_eq!(CALLS.load(Ordering::Relaxed), 1);
    }
}
