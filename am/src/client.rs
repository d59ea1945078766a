//! The client: one per process, owning the endpoint and the world team.

use crate::context::in_handler;
use crate::{reserved, Endpoint};
use rgex_core::{Conduit, Error, Rank, Result, Team};
use std::ops::Deref;
use std::sync::Arc;

/// An initialised rgex instance: the primordial endpoint (dereference a
/// `Client` to use it) and the world team.
///
/// ```no_run
/// # fn demo(client: &rgex_am::Client) -> rgex_core::Result<()> {
/// // A client comes from `rgex::init()`.
/// println!("I am {} of {}", client.rank(), client.size());
/// client.barrier()?;
/// # Ok(()) }
/// ```
pub struct Client {
    /// The progress thread `RGEX_PROGRESS_THREAD=1` started: first, so it
    /// is stopped and joined before the rest is dropped.
    progress: Option<crate::ProgressThread>,
    ep: Arc<Endpoint>,
    world: Team,
    world_team: crate::team::TeamHandle,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("endpoint", &self.ep)
            .finish()
    }
}

impl Client {
    /// A client over `conduit`, with rgex's own handlers registered.
    pub fn new(conduit: Arc<dyn Conduit>, polite: bool) -> Result<Self> {
        let world = Team::world(conduit.size(), conduit.rank());
        let ep = Endpoint::new(conduit, polite)?;
        let coll = crate::team::engine::Engine::install(&ep, reserved::COLL)?;
        let world_team = crate::team::TeamHandle::world(coll, world.clone());
        Ok(Client {
            progress: None,
            ep,
            world,
            world_team,
        })
    }

    /// Start a progress thread held by this client (stopped when the
    /// client is dropped) if `RGEX_PROGRESS_THREAD=1` asks for one (see
    /// [`crate::progress_thread`]); `rgex::init` calls it. True if one
    /// runs now. A value other than 0 or 1 is an error.
    pub fn progress_thread_from_env(&mut self) -> Result<bool> {
        if self.progress.is_none() && crate::progress_thread::wanted_from_env()? {
            self.progress = Some(self.ep.start_progress_thread()?);
        }
        Ok(self.progress.is_some())
    }

    /// Whether this client holds a progress thread (started by
    /// [`progress_thread_from_env`](Self::progress_thread_from_env)).
    pub fn has_progress_thread(&self) -> bool {
        self.progress.is_some()
    }

    /// The primordial endpoint, shareable across threads.
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.ep
    }

    /// The team of all ranks.
    pub fn world(&self) -> &Team {
        &self.world
    }

    /// The world team with collectives (barrier, broadcast, reductions,
    /// split); see [`crate::team`].
    pub fn world_team(&self) -> &crate::team::TeamHandle {
        &self.world_team
    }

    /// This rank.
    pub fn rank(&self) -> Rank {
        self.ep.rank()
    }

    /// Wait until every rank of the job has called `barrier`, running
    /// handlers meanwhile. Register handlers, then barrier, before sending:
    /// a message for a handler its receiver has not registered yet is
    /// dropped (and reported by the next `poll` of the rank waiting for
    /// it, as [`Error::Dropped`]).
    pub fn barrier(&self) -> Result<()> {
        if in_handler() {
            return Err(Error::InHandler { what: "barrier" });
        }
        self.world_team.barrier()
    }
}

impl Deref for Client {
    type Target = Endpoint;

    fn deref(&self) -> &Endpoint {
        &self.ep
    }
}
