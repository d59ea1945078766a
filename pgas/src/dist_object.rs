//! Distributed objects: one instance per rank under one global name,
//! fetched by value from any rank.

use crate::error::Result;
use crate::rpc::RpcFuture;
use crate::runtime::{lock, Pgas};
use rgex::Rank;
use serde::{de::DeserializeOwned, Serialize};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// Encodes one rank's instance for a fetch.
type Encoder = Arc<dyn Fn() -> std::result::Result<Vec<u8>, String> + Send + Sync>;

#[derive(Default)]
struct Objects {
    /// Names given so far on this rank (the next object gets this one).
    made: u64,
    live: HashMap<u64, Encoder>,
    /// Fetches that came before this rank made the object: (from, ticket).
    early: HashMap<u64, Vec<(Rank, u32)>>,
}

/// This rank's distributed objects.
#[derive(Default)]
pub(crate) struct Registry(Mutex<Objects>);

impl Registry {
    /// Answer a fetch of object `id`: its bytes (or why not), or `None`
    /// when it is not made here yet (the fetch waits for it).
    pub fn serve(
        &self,
        pg: &Pgas,
        id: u64,
        src: Rank,
        ticket: u32,
    ) -> Option<std::result::Result<Vec<u8>, String>> {
        let mut o = lock(&self.0);
        if let Some(enc) = o.live.get(&id).cloned() {
            drop(o);
            return Some(enc());
        }
        if id >= o.made {
            o.early.entry(id).or_default().push((src, ticket));
            return None;
        }
        Some(Err(format!(
            "dist_object {id} no longer exists on {} (dropped there)",
            pg.rank()
        )))
    }
}

impl Pgas {
    /// How many fetches of a distributed object from other ranks (or this
    /// one) are waiting here for this rank to make its instance: they
    /// arrived before it, and are answered when it is made.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// pg.progress()?;
    /// println!("{} early fetches wait here", pg.dist_fetches_waiting());
    /// # Ok(()) }
    /// ```
    pub fn dist_fetches_waiting(&self) -> usize {
        lock(&self.inner.dist.0).early.values().map(Vec::len).sum()
    }
}

/// One value per rank under a name every rank shares: rank r's instance
/// is fetched by `fetch(r)` from anywhere. Made collectively: every rank
/// makes its distributed objects in the same order (the n-th made on one
/// rank is the n-th on every other). A fetch that arrives before the
/// target has made its instance waits for it; it is not lost.
///
/// ```no_run
/// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
/// use rgex_pgas::DistObject;
/// let mine = DistObject::new(pg, format!("hello from {}", pg.rank()))?;
/// let next = rgex::Rank((pg.rank().0 + 1) % pg.size());
/// let theirs: String = pg.wait(mine.fetch(next)?)?;
/// assert!(theirs.starts_with("hello from"));
/// # Ok(()) }
/// ```
pub struct DistObject<T> {
    pg: Pgas,
    id: u64,
    value: Arc<T>,
    _t: PhantomData<T>,
}

impl<T> DistObject<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// Make this rank's instance (collective, in the same order on every
    /// rank); fetches that were waiting for it are answered now.
    pub fn new(pg: &Pgas, value: T) -> Result<Self> {
        let value = Arc::new(value);
        let v = value.clone();
        let me = pg.rank();
        let enc: Encoder = Arc::new(move || {
            postcard::to_allocvec(&*v).map_err(|e| {
                format!(
                    "{me} could not serialize its dist_object ({}): {e}",
                    std::any::type_name::<T>()
                )
            })
        });
        let (id, early) = {
            let mut o = lock(&pg.inner.dist.0);
            let id = o.made;
            o.made += 1;
            o.live.insert(id, enc.clone());
            (id, o.early.remove(&id).unwrap_or_default())
        };
        for (src, ticket) in early {
            pg.answer(src, ticket, enc());
        }
        Ok(DistObject {
            pg: pg.clone(),
            id,
            value,
            _t: PhantomData,
        })
    }

    /// This rank's instance.
    pub fn local(&self) -> &T {
        &self.value
    }

    /// Its name, the same on every rank.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A copy of `rank`'s instance.
    pub fn fetch(&self, rank: Rank) -> Result<RpcFuture<T>> {
        let mail = &self.pg.inner.mail;
        self.pg.reserve(rank)?;
        let ticket = match self.pg.open_call(rank) {
            Ok(t) => t,
            Err(e) => {
                mail.window.give_back(rank);
                return Err(e);
            }
        };
        let sent = self.pg.send(
            rank,
            self.pg.inner.ids.fetch,
            &[ticket],
            &self.id.to_le_bytes(),
        );
        if sent.is_err() {
            mail.window.give_back(rank);
        }
        match sent {
            Ok(()) => Ok(RpcFuture::new(self.pg.clone(), rank, ticket)),
            Err(e) => {
                mail.close(ticket);
                Err(e)
            }
        }
    }
}

impl<T> Drop for DistObject<T> {
    fn drop(&mut self) {
        lock(&self.pg.inner.dist.0).live.remove(&self.id);
    }
}
