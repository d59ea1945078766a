//! The endpoints of one rank, by index: what
//! [`Client::endpoint_at`](crate::Client::endpoint_at) hands out, and
//! how an AM to another index finds the endpoint that carries it (see
//! [`crossing`](crate::crossing)).

use crate::Endpoint;
use parking_lot::RwLock;
use rgex_core::{Error, Rank, Result};
use std::sync::{Arc, OnceLock, Weak};

/// The endpoints of a rank: the primordial one (held weakly: the client
/// and its users own it) and those `Client::create_endpoint` made, at
/// index `i + 1`, `None` once destroyed.
///
/// An endpoint made by the client holds this table and the table holds
/// the endpoint: the client's `leave` ([`take_all`](Self::take_all))
/// breaks that cycle, so each endpoint goes with the last clone its
/// users hold.
#[derive(Default)]
pub(crate) struct Siblings {
    primordial: OnceLock<Weak<Endpoint>>,
    more: RwLock<Vec<Option<Arc<Endpoint>>>>,
}

impl Siblings {
    /// Record the primordial endpoint (once, when it is made).
    pub(crate) fn set_primordial(&self, ep: Weak<Endpoint>) {
        // A second call would be a second primordial endpoint over one
        // table, which `Endpoint::new` never makes.
        let _ = self.primordial.set(ep);
    }

    /// How many endpoints this rank opened, the primordial one included
    /// (destroyed ones keep their index).
    pub(crate) fn count(&self) -> u32 {
        self.more.read().len() as u32 + 1
    }

    /// Add the endpoint the next index names.
    pub(crate) fn push(&self, ep: Arc<Endpoint>) {
        self.more.write().push(Some(ep));
    }

    /// The endpoint at `index` of rank `rank` (this one), or an error
    /// naming the rank and the index: out of range, or destroyed (`what`
    /// says what was refused).
    pub(crate) fn get(&self, rank: Rank, index: u32, what: &'static str) -> Result<Arc<Endpoint>> {
        let gone = || Error::EndpointDestroyed { what, rank, index };
        if index == 0 {
            return self
                .primordial
                .get()
                .and_then(Weak::upgrade)
                .ok_or_else(gone);
        }
        let more = self.more.read();
        match more.get(index as usize - 1) {
            Some(Some(ep)) => Ok(ep.clone()),
            Some(None) => Err(gone()),
            None => Err(Error::EndpointOutOfRange {
                rank,
                index,
                count: more.len() as u32 + 1,
            }),
        }
    }

    /// Forget the endpoint at `index` (not 0), returning it.
    pub(crate) fn destroy(&self, index: u32) -> Option<Arc<Endpoint>> {
        self.more.write().get_mut(index as usize - 1)?.take()
    }

    /// Every endpoint still open past the primordial one, forgotten here.
    pub(crate) fn take_all(&self) -> Vec<Arc<Endpoint>> {
        self.more
            .write()
            .iter_mut()
            .filter_map(Option::take)
            .collect()
    }
}
