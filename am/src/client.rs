//! The client: one per process, owning the endpoint and the world team.

use crate::context::in_handler;
use crate::{reserved, AmConfig, Endpoint};
use rgex_core::{Conduit, Error, Rank, Result, Team};
use std::ops::Deref;
use std::sync::Arc;

/// An initialised rgex instance: the primordial endpoint (dereference a
/// `Client` to use it) and the world team.
///
/// A process has one client (`rgex::init` once). It ends with
/// [`finalize`](Client::finalize) (collective: a final barrier, and a
/// report of the operations still in flight) or when it is dropped (at
/// once, alone). Either way this rank tells the launcher first that it
/// is leaving the job (so a peer that fails because it has gone is not
/// the one blamed), and from then on every send, RMA operation,
/// collective, atomic op and VIS transfer through its endpoint fails with
/// [`Error::Finalized`], also through clones of
/// [`endpoint`](Client::endpoint)'s `Arc` and of its teams (polls, and
/// waits on handles started before, still work). The conduit closes when
/// the last clone of the endpoint is dropped.
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
    /// The settings it was made with.
    config: AmConfig,
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
    /// A client over `conduit`, with rgex's own handlers registered, and
    /// the default settings but `polite` ([`with_config`](Self::with_config)
    /// takes them all).
    pub fn new(conduit: Arc<dyn Conduit>, polite: bool) -> Result<Self> {
        Self::with_config(
            conduit,
            AmConfig {
                polite,
                ..AmConfig::default()
            },
        )
    }

    /// A client over `conduit` with the settings `config` (`rgex::init`
    /// reads them from its snapshot of the environment).
    ///
    /// ```no_run
    /// # fn demo(conduit: std::sync::Arc<dyn rgex_core::Conduit>) -> rgex_core::Result<()> {
    /// use rgex_core::config::Environment;
    /// let config = rgex_am::AmConfig::read(&Environment::capture(), false)?;
    /// let client = rgex_am::Client::with_config(conduit, config)?;
    /// # Ok(()) }
    /// ```
    pub fn with_config(conduit: Arc<dyn Conduit>, config: AmConfig) -> Result<Self> {
        let world = Team::world(conduit.size(), conduit.rank());
        let ep = Endpoint::new(conduit, &config)?;
        let coll = crate::team::engine::Engine::install(&ep, reserved::COLL)?;
        let world_team = crate::team::TeamHandle::world(coll, world.clone());
        Ok(Client {
            progress: None,
            config,
            ep,
            world,
            world_team,
        })
    }

    /// The settings this client was made with.
    pub fn config(&self) -> &AmConfig {
        &self.config
    }

    /// Start a progress thread held by this client (stopped when the
    /// client is dropped) if its settings ask for one
    /// ([`AmConfig::progress_thread`], `RGEX_PROGRESS_THREAD=1`; see
    /// [`crate::progress_thread`]); `rgex::init` calls it. True if one
    /// runs now.
    pub fn progress_thread_as_configured(&mut self) -> Result<bool> {
        if self.progress.is_none() && self.config.progress_thread {
            self.progress = Some(self.ep.start_progress_thread()?);
        }
        Ok(self.progress.is_some())
    }

    /// Whether this client holds a progress thread (started by
    /// [`progress_thread_as_configured`](Self::progress_thread_as_configured)).
    pub fn has_progress_thread(&self) -> bool {
        self.progress.is_some()
    }

    /// The progress thread this client holds, if any (see
    /// [`has_progress_thread`](Self::has_progress_thread)).
    pub fn progress_thread(&self) -> Option<&crate::ProgressThread> {
        self.progress.as_ref()
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

impl Client {
    /// End this rank's part in the job, collectively: every rank calls
    /// it. It waits in a final barrier (running handlers meanwhile, so
    /// peers still finishing their work are answered), tells the launcher
    /// this rank is leaving, and refuses every later send, RMA operation,
    /// collective, atomic op and VIS transfer through this endpoint,
    /// clones of its `Arc` included ([`Error::Finalized`]); the client is
    /// dropped on return (see [`Client`]).
    ///
    /// Operations must be complete before it: those in flight when it is
    /// called, by what rgex counts ([`Endpoint::operations_in_flight`]:
    /// reference RMA, atomics and VIS over active messages, non-blocking
    /// collectives), make it return [`Error::Unfinished`], naming them
    /// and those still unfinished after the barrier; the client is
    /// finalized all the same. A failed barrier (a peer gone) is returned
    /// first. Refused inside a handler.
    ///
    /// ```no_run
    /// # fn demo(client: rgex_am::Client) -> rgex_core::Result<()> {
    /// use rgex_core::{Error, Flags, GlobalAddr};
    /// // `client` from rgex::init()
    /// let ep = client.endpoint().clone();
    /// client.finalize()?; // Ok on every rank: nothing was in flight
    /// // The endpoint refuses further work.
    /// let late = ep.put(GlobalAddr::new(ep.rank(), 0), b"late", Flags::empty());
    /// assert!(matches!(late, Err(Error::Finalized { .. })));
    /// # Ok(()) }
    /// ```
    pub fn finalize(self) -> Result<()> {
        if in_handler() {
            return Err(Error::InHandler { what: "finalize" });
        }
        let at_call = self.ep.operations_in_flight();
        let barrier = self.barrier();
        let after = self.ep.operations_in_flight();
        self.leave();
        barrier?;
        if at_call.is_empty() {
            return Ok(());
        }
        Err(Error::Unfinished {
            rank: self.rank(),
            at_call: describe_in_flight(&at_call),
            after: describe_in_flight(&after),
        })
    }

    /// Tell the launcher this rank is leaving, then refuse further work
    /// through the endpoint (in that order, and both before the conduit
    /// closes: the peers can only find this rank gone once the launcher
    /// knows it began to leave).
    fn leave(&self) {
        rgex_core::bootstrap::announce_leaving();
        self.ep.mark_finalized();
    }
}

/// Operations in flight, by kind: "2 reference RMA, 1 VIS"; "none".
fn describe_in_flight(ops: &[(&'static str, usize)]) -> String {
    if ops.is_empty() {
        return "none".into();
    }
    ops.iter()
        .map(|(what, n)| format!("{n} {what}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Drop for Client {
    /// Leave the job (see [`Client`]): the launcher hears it first, then
    /// the progress thread is stopped and the endpoint refuses further
    /// work; the conduit closes with the last clone of the endpoint.
    fn drop(&mut self) {
        self.leave();
    }
}

impl Deref for Client {
    type Target = Endpoint;

    fn deref(&self) -> &Endpoint {
        &self.ep
    }
}
