//! Implicit-handle (NBI) operations: tracked per thread, synced by
//! category, or collected by an access region into one event. The
//! protocol layers count on these counters (`rgex_endpoint`'s `put_nbi`,
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

use crate::OpCounter;
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

/// One endpoint's implicit operations on this thread.
struct EndpointNbi {
    by_category: [Arc<OpCounter>; 4],
    region: Option<Arc<OpCounter>>,
}

impl EndpointNbi {
    fn new() -> Self {
        EndpointNbi {
            by_category: std::array::from_fn(|_| OpCounter::batched(0)),
            region: None,
        }
    }
}

/// A thread's implicit operations, per endpoint (each endpoint's synced
/// on its own, as OpenSHMEM contexts are quieted one at a time): the
/// primordial endpoint's in a field of its own (one branch to reach),
/// the others' by index, made on first use.
struct ThreadNbi {
    primordial: EndpointNbi,
    more: Vec<EndpointNbi>,
}

thread_local! {
    static NBI: RefCell<ThreadNbi> = RefCell::new(ThreadNbi {
        primordial: EndpointNbi::new(),
        more: Vec::new(),
    });
}

/// Run `f` on this thread's state for endpoint `ep`.
#[inline]
fn with<R>(ep: u32, f: impl FnOnce(&mut EndpointNbi) -> R) -> R {
    NBI.with(|n| {
        let mut n = n.borrow_mut();
        if ep == 0 {
            return f(&mut n.primordial);
        }
        let i = ep as usize - 1;
        if n.more.len() <= i {
            n.more.resize_with(i + 1, EndpointNbi::new);
        }
        f(&mut n.more[i])
    })
}

/// The counter an implicit operation of `cat` issued now on this thread
/// through endpoint `ep` joins: the endpoint's open access region's,
/// else the category's.
///
/// ```
/// use rgex_core::nbi::{self, NbiCategory};
/// let c = nbi::counter(1, NbiCategory::Put);
/// c.add(1);
/// assert!(!nbi::category(1, NbiCategory::Put).peek_done());
/// assert!(nbi::category(0, NbiCategory::Put).peek_done()); // another endpoint's
/// c.done();
/// ```
pub fn counter(ep: u32, cat: NbiCategory) -> Arc<OpCounter> {
    with(ep, |n| {
        n.region
            .clone()
            .unwrap_or_else(|| n.by_category[cat as usize].clone())
    })
}

/// This thread's counter for `cat` on endpoint `ep` (outside regions).
pub fn category(ep: u32, cat: NbiCategory) -> Arc<OpCounter> {
    with(ep, |n| n.by_category[cat as usize].clone())
}

/// Whether a sync of `cat` on endpoint `ep` on this thread has nothing
/// to do: no operation outstanding (acquire: their effects are seen, as
/// after a wait) and none failed. A quiet after blocking or mapped
/// operations, the common case, then costs one look at this thread's
/// state, not an event and its wait.
///
/// ```
/// use rgex_core::nbi::{self, NbiCategory};
/// assert!(nbi::settled(0, NbiCategory::Put));
/// let c = nbi::counter(0, NbiCategory::Put);
/// c.add(1);
/// assert!(!nbi::settled(0, NbiCategory::Put));
/// c.done();
/// assert!(nbi::settled(0, NbiCategory::Put));
/// ```
#[inline]
pub fn settled(ep: u32, cat: NbiCategory) -> bool {
    with(ep, |n| quiet_counter(&n.by_category[cat as usize]))
}

/// A counter with nothing outstanding and no failure: a sync of it has
/// nothing to do or report.
#[inline]
fn quiet_counter(c: &OpCounter) -> bool {
    c.peek_done() && c.failure().is_none()
}

/// [`settled`] for each of `cats` at once, in one look at this thread's
/// state: what a quiet (OpenSHMEM's: puts, gets and atomics) asks first.
///
/// ```
/// use rgex_core::nbi::{self, NbiCategory};
/// let quiet = [NbiCategory::Put, NbiCategory::Rmw];
/// assert!(nbi::settled_in(0, &quiet));
/// let c = nbi::counter(0, NbiCategory::Rmw);
/// c.add(1);
/// assert!(!nbi::settled_in(0, &quiet) && nbi::settled(0, NbiCategory::Put));
/// c.done();
/// assert!(nbi::settled_in(0, &quiet));
/// ```
#[inline]
pub fn settled_in(ep: u32, cats: &[NbiCategory]) -> bool {
    with(ep, |n| {
        cats.iter()
            .all(|&c| quiet_counter(&n.by_category[c as usize]))
    })
}

/// After a sync of `cat` on endpoint `ep` on this thread (nothing
/// outstanding): why one of its operations failed, if one did, with the
/// category started afresh so the next sync reports only its own
/// failures. `None`, and nothing changed, if none failed or operations
/// are still outstanding.
pub fn take_failure(ep: u32, cat: NbiCategory) -> Option<String> {
    with(ep, |n| {
        let c = &mut n.by_category[cat as usize];
        let why = c.failure()?.to_string();
        // Only a finished counter is replaced: an operation still counted
        // on it would finish on a counter nobody waits for.
        c.peek_done().then(|| {
            *c = OpCounter::batched(0);
            why
        })
    })
}

/// Open an access region for endpoint `ep` on this thread; false if one
/// is already open.
pub fn begin_region(ep: u32) -> bool {
    with(ep, |n| {
        if n.region.is_some() {
            return false;
        }
        n.region = Some(OpCounter::batched(0));
        true
    })
}

/// Close this thread's access region on endpoint `ep`, returning its
/// counter.
pub fn end_region(ep: u32) -> Option<Arc<OpCounter>> {
    with(ep, |n| n.region.take())
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
/// assert!(nbi::begin_region(0));
/// assert!(nbi::suspend_hazard().unwrap().contains("access region"));
/// assert!(nbi::end_region(0).is_none()); // closed by the check
/// ```
pub fn suspend_hazard() -> Option<String> {
    NBI.with(|n| {
        let mut n = n.borrow_mut();
        let n = &mut *n;
        let eps = std::iter::once(&mut n.primordial).chain(n.more.iter_mut());
        let mut busy: Vec<String> = Vec::new();
        for (i, e) in eps.enumerate() {
            if e.region.take().is_some() {
                return Some(format!(
                    "this thread has an open access region (nbi_begin_region) on endpoint {i}; it \
                     was closed, its operations left to finish unwatched"
                ));
            }
            busy.extend(
                NbiCategory::ALL
                    .iter()
                    .zip(&e.by_category)
                    .filter(|(_, c)| !c.is_done())
                    .map(|(cat, _)| match i {
                        0 => cat.name().to_string(),
                        _ => format!("{} on endpoint {i}", cat.name()),
                    }),
            );
        }
        (!busy.is_empty()).then(|| {
            format!(
                "this thread has implicit-handle operations outstanding ({}), not yet synced by nbi_wait",
                busy.join(", ")
            )
        })
    })
}
