//! Per-endpoint state of the layers above active messages (atomics, VIS):
//! one value per type, made the first time a layer asks for it, living as
//! long as the endpoint.

use crate::Endpoint;
use parking_lot::Mutex;
use std::any::{Any, TypeId};
use std::sync::Arc;

/// The values, keyed by type. A short list: a handful of layers at most.
#[derive(Default)]
pub(crate) struct Extensions(Mutex<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>);

impl Endpoint {
    /// This endpoint's value of type `T`, made by `init` the first time it
    /// is asked for (under a lock, so `init` runs once per endpoint: it is
    /// where a layer registers its handlers). `init` must not ask for an
    /// extension itself.
    ///
    /// ```no_run
    /// # fn demo(ep: &std::sync::Arc<rgex_endpoint::Endpoint>) -> rgex_core::Result<()> {
    /// #[derive(Default)]
    /// struct MyLayer { ops: std::sync::atomic::AtomicU64 }
    /// let a = ep.extension(|_ep| Ok::<_, rgex_core::Error>(std::sync::Arc::new(MyLayer::default())))?;
    /// let b = ep.extension::<MyLayer, rgex_core::Error>(|_ep| unreachable!("made once"))?;
    /// assert!(std::sync::Arc::ptr_eq(&a, &b));
    /// # Ok(()) }
    /// ```
    pub fn extension<T: Any + Send + Sync, E>(
        self: &Arc<Self>,
        init: impl FnOnce(&Arc<Endpoint>) -> Result<Arc<T>, E>,
    ) -> Result<Arc<T>, E> {
        let mut all = self.extensions().0.lock();
        let id = TypeId::of::<T>();
        if let Some((_, v)) = all.iter().find(|(t, _)| *t == id) {
            return Ok(v.clone().downcast::<T>().expect("keyed by its TypeId"));
        }
        let v = init(self)?;
        all.push((id, v.clone()));
        Ok(v)
    }
}
