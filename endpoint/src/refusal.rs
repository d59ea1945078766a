//! AMs dropped for want of a handler, reported to the rank that waits.
//!
//! Handler tables should be the same on every rank, and a sender checks
//! its own table; but a rank that registers late, or not at all, receives
//! messages for an index it does not know. Such a message is dropped, and
//! a sender that waits for its reply would wait forever. So the receiver
//! of a dropped request tells the sender (a [`REFUSED`] reply), and the
//! sender's next [`Endpoint::poll`](crate::Endpoint::poll) returns
//! [`Error::Dropped`]; a dropped reply is reported by its receiver's own
//! next poll (the requester, who waits for it).
//!
//! [`REFUSED`]: crate::reserved::REFUSED

use crate::{reserved, Accepts, HandlerTable, ProtocolId};
use rgex_core::{Category, Direction, Error, Rank, Result};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Reports kept until a poll returns them: a sender flooding a handler its
/// peer lacks, without polling, would otherwise queue one per message.
/// Later ones are discarded (the receiver logged each as a warning).
pub(crate) const KEPT: usize = 64;

/// The dropped AMs this rank has yet to report (the oldest [`KEPT`]), to
/// whichever thread polls next.
#[derive(Default)]
pub(crate) struct Refusals {
    /// True while `list` holds something: one load on every poll instead
    /// of a lock. Written only with `list` locked, so its stores are
    /// ordered as the lock orders them; read Relaxed, since a stale value
    /// only moves the report to a later poll (or costs one lock).
    any: AtomicBool,
    list: Mutex<VecDeque<Error>>,
}

impl Refusals {
    /// Keep `e` for the next poll.
    pub(crate) fn record(&self, e: Error) {
        let mut l = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if l.len() < KEPT {
            l.push_back(e);
        }
        self.any.store(true, Ordering::Relaxed);
    }

    /// The oldest report not yet returned, if any.
    #[inline]
    pub(crate) fn take(&self) -> Option<Error> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        self.take_slow()
    }

    #[cold]
    fn take_slow(&self) -> Option<Error> {
        let mut l = self.list.lock().unwrap_or_else(|p| p.into_inner());
        let e = l.pop_front();
        self.any.store(!l.is_empty(), Ordering::Relaxed);
        e
    }

    /// Register the handler for a receiver's refusal (a Short reply whose
    /// arguments are the handler index and [`category_code`]).
    ///
    /// A refusal is believed only if it could answer a request of ours:
    /// its category code is one, and its index names a handler this rank
    /// has (a sender checks its own table before sending). Anything else
    /// is a malformed message, reported as such, never an
    /// [`Error::Dropped`].
    pub(crate) fn install(table: &HandlerTable) -> Result<ProtocolId> {
        table.register_protocol(
            reserved::REFUSED,
            "rgex.refused",
            Accepts::reply(Category::Short, 2),
            |tok, msg| {
                let ep = tok.endpoint();
                let (index, code) = (msg.arg(0), msg.arg(1));
                let category = category_of(code);
                let Some(index) = u8::try_from(index)
                    .ok()
                    .filter(|&i| category.is_some() && ep.handlers().get(i).is_some())
                else {
                    let why = format!(
                        "a refusal of handler index {index}, category code {code}: this rank sends to no such handler"
                    );
                    return ep.malformed(tok.src(), reserved::REFUSED, &why);
                };
                ep.refusals().record(dropped(
                    category,
                    Direction::Request,
                    ep.rank(),
                    tok.src(),
                    index,
                ));
            },
        )
    }
}

/// The error for an AM from `from` to `to` dropped on `to`.
pub(crate) fn dropped(
    category: Option<Category>,
    dir: Direction,
    from: Rank,
    to: Rank,
    index: u8,
) -> Error {
    let dir = match dir {
        Direction::Request => "request",
        Direction::Reply => "reply",
    };
    Error::Dropped {
        what: match category {
            Some(c) => format!("an AM {c} {dir}"),
            None => format!("an AM {dir}"),
        },
        from,
        to,
        index,
    }
}

/// A category as a refusal's argument.
pub(crate) fn category_code(c: Category) -> u32 {
    match c {
        Category::Short => 0,
        Category::Medium => 1,
        Category::Long => 2,
    }
}

pub(crate) fn category_of(code: u32) -> Option<Category> {
    match code {
        0 => Some(Category::Short),
        1 => Some(Category::Medium),
        2 => Some(Category::Long),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_in_order_then_nothing() {
        let r = Refusals::default();
        assert!(r.take().is_none());
        for i in 0..3 {
            r.record(dropped(
                Some(Category::Medium),
                Direction::Request,
                Rank(0),
                Rank(1),
                200 + i,
            ));
        }
        for i in 0..3 {
            match r.take() {
                Some(Error::Dropped { index, .. }) => assert_eq!(index, 200 + i),
                other => panic!("{other:?}"),
            }
        }
        assert!(r.take().is_none());
    }

    #[test]
    fn keeps_the_oldest() {
        let r = Refusals::default();
        for i in 0..(KEPT as u8 + 10) {
            r.record(dropped(None, Direction::Reply, Rank(1), Rank(0), i));
        }
        let indices: Vec<u8> = std::iter::from_fn(|| r.take())
            .map(|e| match e {
                Error::Dropped { index, .. } => index,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(indices, (0..KEPT as u8).collect::<Vec<_>>());
    }

    #[test]
    fn categories_round_trip() {
        for c in [Category::Short, Category::Medium, Category::Long] {
            assert_eq!(category_of(category_code(c)), Some(c));
        }
        assert_eq!(category_of(7), None);
        let e = dropped(
            Some(Category::Long),
            Direction::Reply,
            Rank(3),
            Rank(1),
            201,
        );
        let s = e.to_string();
        assert!(
            s.contains("an AM Long reply") && s.contains("index 201"),
            "{s}"
        );
    }
}
