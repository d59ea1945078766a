//! Implicit-handle (NBI) operations: tracked per thread, synced by
//! category, or collected by an access region into one event. The
//! protocol layers count on these counters (`rgex_am`'s `put_nbi`,
//! `nbi_wait`, regions; the atomics' and VIS's NBI forms); they live here
//! so that an [`Event`](crate::Event) awaited across them can tell (see
//! [`suspend_hazard`]).
//!
//! **The rule under async.** These counters are per *thread*, and an
//! async task may resume on another thread at every `.await` (and other
//! tasks run on this one meanwhile): sync implicit operations
//! (`nbi_wait`) and close an access region before any `.await`. An rgex
//! future that would suspend while this thread has either outstanding
//! resolves to [`Error::NbiAcrossAwait`](crate::Error::NbiAcrossAwait)
//! instead (and the open region is closed, so the thread's later tasks
//! start clean).

use crate::Completion;
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
    /// The category's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            NbiCategory::Put => "puts",
            NbiCategory::Get => "gets",
            NbiCategory::Am => "active messages",
            NbiCategory::Rmw => "atomics",
        }
    }

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
pub fn counter(cat: NbiCategory) -> Arc<Completion> {
    NBI.with(|n| {
        let n = n.borrow();
        n.region
            .clone()
            .unwrap_or_else(|| n.by_category[cat as usize].clone())
    })
}

/// This thread's counter for `cat` (outside regions).
pub fn category(cat: NbiCategory) -> Arc<Completion> {
    NBI.with(|n| n.borrow().by_category[cat as usize].clone())
}

/// After a sync of `cat` on this thread (nothing outstanding): why one of
/// its operations failed, if one did, with the category started afresh so
/// the next sync reports only its own failures. `None`, and nothing
/// changed, if none failed or operations are still outstanding.
pub fn take_failure(cat: NbiCategory) -> Option<String> {
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
pub fn begin_region() -> bool {
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
pub fn end_region() -> Option<Arc<Completion>> {
    NBI.with(|n| n.borrow_mut().region.take())
}

/// What of this thread's implicit-operation state must not cross an
/// `.await`, if any: an open access region (which this call then closes,
/// its operations left to finish unwatched), or outstanding operations
/// of a category. Asked by [`Event`](crate::Event)'s `poll` when the
/// future is about to suspend; a plain blocking wait never asks.
///
/// ```
/// use rgex_core::nbi;
/// assert_eq!(nbi::suspend_hazard(), None);
/// assert!(nbi::begin_region());
/// assert!(nbi::suspend_hazard().unwrap().contains("access region"));
/// assert!(nbi::end_region().is_none()); // closed by the check
/// ```
pub fn suspend_hazard() -> Option<String> {
    NBI.with(|n| {
        let mut n = n.borrow_mut();
        if n.region.take().is_some() {
            return Some(
                "this thread has an open access region (nbi_begin_region); it was closed, \
                 its operations left to finish unwatched"
                    .into(),
            );
        }
        let busy: Vec<&str> = NbiCategory::ALL
            .iter()
            .zip(&n.by_category)
            .filter(|(_, c)| !c.is_done())
            .map(|(cat, _)| cat.name())
            .collect();
        (!busy.is_empty()).then(|| {
            format!(
                "this thread has implicit-handle operations outstanding ({}), not yet synced by nbi_wait",
                busy.join(", ")
            )
        })
    })
}
