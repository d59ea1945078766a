//! Implicit-handle (NBI) operations: tracked per thread, synced by
//! category, or collected by an access region into one event.

use rgex_core::Completion;
use std::cell::RefCell;
use std::sync::Arc;

/// A category of implicit-handle operations, synced separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NbiCategory {
    /// Puts.
    Put,
    /// Gets.
    Get,
    /// Active messages (counted by the layers that send them implicitly).
    Am,
    /// Remote atomics.
    Rmw,
}

impl NbiCategory {
    /// Every category.
    pub const ALL: [NbiCategory; 4] = [
        NbiCategory::Put,
        NbiCategory::Get,
        NbiCategory::Am,
        NbiCategory::Rmw,
    ];
}

struct ThreadNbi {
    by_category: [Arc<Completion>; 4],
    region: Option<Arc<Completion>>,
}

thread_local! {
    static NBI: RefCell<ThreadNbi> = RefCell::new(ThreadNbi {
        by_category: std::array::from_fn(|_| Completion::batched(0)),
        region: None,
    });
}

/// The counter an implicit operation of `cat` issued now on this thread
/// joins: the open access region's, else the category's.
pub(crate) fn counter(cat: NbiCategory) -> Arc<Completion> {
    NBI.with(|n| {
        let n = n.borrow();
        n.region
            .clone()
            .unwrap_or_else(|| n.by_category[cat as usize].clone())
    })
}

/// This thread's counter for `cat` (outside regions).
pub(crate) fn category(cat: NbiCategory) -> Arc<Completion> {
    NBI.with(|n| n.borrow().by_category[cat as usize].clone())
}

/// After a sync of `cat` on this thread (nothing outstanding): why one of
/// its operations failed, if one did, with the category started afresh so
/// the next sync reports only its own failures. `None`, and nothing
/// changed, if none failed or operations are still outstanding.
pub(crate) fn take_failure(cat: NbiCategory) -> Option<String> {
    NBI.with(|n| {
        let mut n = n.borrow_mut();
        let c = &mut n.by_category[cat as usize];
        let why = c.failure()?.to_string();
        // Only a finished counter is replaced: an operation still counted
        // on it would finish on a counter nobody waits for.
        c.peek_done().then(|| {
            *c = Completion::batched(0);
            why
        })
    })
}

/// Open an access region on this thread; false if one is already open.
pub(crate) fn begin_region() -> bool {
    NBI.with(|n| {
        let mut n = n.borrow_mut();
        if n.region.is_some() {
            return false;
        }
        n.region = Some(Completion::batched(0));
        true
    })
}

/// Close this thread's access region, returning its counter.
pub(crate) fn end_region() -> Option<Arc<Completion>> {
    NBI.with(|n| n.borrow_mut().region.take())
}
