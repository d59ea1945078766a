//! The handler table: which function runs for which handler index.

use crate::{Message, Token};
use rgex_core::{Error, Result};
use std::sync::OnceLock;

/// Handler indices below this are reserved for rgex's own protocols
/// (barrier, RMA reference, atomics, VIS); clients use `CLIENT_MIN..=255`.
pub const CLIENT_MIN: u8 = 64;

/// The index of a registered handler.
///
/// ```
/// use rgex_am::HandlerId;
/// assert_eq!(HandlerId(70).index(), 70);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HandlerId(pub u8);

impl HandlerId {
    /// The raw index.
    pub fn index(self) -> u8 {
        self.0
    }
}

/// The type of every handler: the token (who sent it, how to reply) and
/// the message (arguments and payload).
pub type HandlerFn = dyn Fn(&Token<'_>, &Message<'_>) + Send + Sync;

/// A registered handler.
pub struct Entry {
    name: String,
    f: Box<HandlerFn>,
}

impl Entry {
    /// The name given at registration, for error messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    #[inline]
    pub(crate) fn call(&self, token: &Token<'_>, msg: &Message<'_>) {
        (self.f)(token, msg)
    }
}

/// 256 handler slots, each set at most once.
///
/// Registration may happen at any time from any thread; lookups are a
/// single acquire load (no lock on the dispatch path). Handlers must be
/// registered at the same index on every rank: register in the same order
/// everywhere (auto-assignment is deterministic), or pick fixed indices.
///
/// ```
/// use rgex_am::HandlerTable;
/// let t = HandlerTable::new();
/// let a = t.register("a", |_tok, _msg| {}).unwrap();
/// let b = t.register_at(200, "b", |_tok, _msg| {}).unwrap();
/// assert_eq!(b.index(), 200);
/// assert_eq!(t.name(a.index()), "a");
/// assert!(t.register_at(200, "again", |_t, _m| {}).is_err());
/// assert!(t.register_at(3, "reserved", |_t, _m| {}).is_err());
/// ```
pub struct HandlerTable {
    slots: Box<[OnceLock<Entry>]>,
}

impl Default for HandlerTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for HandlerTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.get().map(|e| (i, e.name.clone())))
            .collect();
        f.debug_struct("HandlerTable")
            .field("registered", &names)
            .finish()
    }
}

impl HandlerTable {
    /// An empty table.
    pub fn new() -> Self {
        HandlerTable {
            slots: (0..256).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Register `f` at the lowest free client index.
    pub fn register<F>(&self, name: &str, f: F) -> Result<HandlerId>
    where
        F: Fn(&Token<'_>, &Message<'_>) + Send + Sync + 'static,
    {
        let mut entry = Entry {
            name: name.to_owned(),
            f: Box::new(f),
        };
        for i in CLIENT_MIN..=u8::MAX {
            match self.slots[i as usize].set(entry) {
                Ok(()) => return Ok(HandlerId(i)),
                Err(back) => entry = back,
            }
        }
        Err(Error::BadHandlerIndex {
            index: u8::MAX,
            why: format!(
                "all {} client handler slots are taken; {name:?} was not registered",
                256 - CLIENT_MIN as usize
            ),
        })
    }

    /// Register `f` at client index `index` (`CLIENT_MIN..=255`).
    pub fn register_at<F>(&self, index: u8, name: &str, f: F) -> Result<HandlerId>
    where
        F: Fn(&Token<'_>, &Message<'_>) + Send + Sync + 'static,
    {
        if index < CLIENT_MIN {
            return Err(Error::BadHandlerIndex {
                index,
                why: format!(
                    "indices 0..{CLIENT_MIN} are reserved for rgex; clients use {CLIENT_MIN}..=255"
                ),
            });
        }
        self.set(index, name, Box::new(f))
    }

    /// Register one of rgex's own handlers at a reserved index. For rgex's
    /// layers (barrier, RMA and atomics references, VIS), not for clients.
    pub fn register_reserved<F>(&self, index: u8, name: &str, f: F) -> Result<HandlerId>
    where
        F: Fn(&Token<'_>, &Message<'_>) + Send + Sync + 'static,
    {
        if index >= CLIENT_MIN {
            return Err(Error::BadHandlerIndex {
                index,
                why: format!("not in rgex's reserved range 0..{CLIENT_MIN}"),
            });
        }
        self.set(index, name, Box::new(f))
    }

    fn set(&self, index: u8, name: &str, f: Box<HandlerFn>) -> Result<HandlerId> {
        self.slots[index as usize]
            .set(Entry {
                name: name.to_owned(),
                f,
            })
            .map_err(|_| Error::BadHandlerIndex {
                index,
                why: format!(
                    "it is already registered to {:?}; {name:?} was not registered",
                    self.name(index)
                ),
            })?;
        Ok(HandlerId(index))
    }

    /// The handler at `index`, if any.
    #[inline]
    pub fn get(&self, index: u8) -> Option<&Entry> {
        self.slots[index as usize].get()
    }

    /// The name registered at `index`, or `"<unregistered>"`.
    pub fn name(&self, index: u8) -> String {
        self.get(index)
            .map_or_else(|| "<unregistered>".to_owned(), |e| e.name.clone())
    }
}
