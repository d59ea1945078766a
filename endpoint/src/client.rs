//! The client: one per process, owning the endpoint and the world team.

use crate::context::in_handler;
use crate::{reserved, AmConfig, Endpoint};
use rgex_core::blocked::{self, Waiting};
use rgex_core::{Conduit, Error, Membership, Rank, Result};
use std::sync::Arc;

/// An initialised rgex instance: the primordial endpoint
/// ([`endpoint`](Client::endpoint): AMs, RMA, polls) and the world team
/// ([`world`](Client::world): collectives).
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
/// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
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
    world: crate::team::Team,
    /// Held while an endpoint is made or destroyed (collective: one at a
    /// time on a rank).
    making: parking_lot::Mutex<()>,
    /// What every new endpoint gets before it is handed out (the layers
    /// above register their protocols: `rgex::init` sets it).
    setup: Option<EndpointSetup>,
}

/// A layer's set-up of a new endpoint (see [`Client::on_new_endpoint`]).
type EndpointSetup = Box<dyn Fn(&Arc<Endpoint>) -> Result<()> + Send + Sync>;

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
    /// let config = rgex_endpoint::AmConfig::read(&Environment::capture(), false)?;
    /// let client = rgex_endpoint::Client::with_config(conduit, config)?;
    /// # Ok(()) }
    /// ```
    pub fn with_config(conduit: Arc<dyn Conduit>, config: AmConfig) -> Result<Self> {
        let members = Membership::world(conduit.size(), conduit.rank());
        let ep = Endpoint::new(conduit, &config)?;
        let coll = crate::team::engine::Engine::install(&ep, reserved::COLL)?;
        let world = crate::team::Team::world(coll, members, config.coll_board);
        Ok(Client {
            progress: None,
            config,
            ep,
            world,
            making: Default::default(),
            setup: None,
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

    /// What every endpoint [`create_endpoint`](Self::create_endpoint)
    /// makes gets before it is handed out, after rgex-endpoint's own
    /// protocols and before the reserved range is sealed: the layers
    /// above register theirs (`rgex::init` installs VIS's and the
    /// atomics'). Replaces what was set before.
    ///
    /// ```no_run
    /// # fn demo(mut client: rgex_endpoint::Client) {
    /// client.on_new_endpoint(|ep| {
    ///     println!("endpoint {} is ready", ep.index());
    ///     Ok(())
    /// });
    /// # }
    /// ```
    pub fn on_new_endpoint(
        &mut self,
        setup: impl Fn(&Arc<Endpoint>) -> Result<()> + Send + Sync + 'static,
    ) {
        self.setup = Some(Box::new(setup));
    }

    /// Open another endpoint, collectively: every rank calls it, in the
    /// same order, from one thread at a time. The endpoint has injection
    /// and completion resources of its own (smp: rings of its own; ofi:
    /// an endpoint and completion queue of its own; ibv: queue pairs and
    /// a completion queue of its own; scc has one set and refuses), its
    /// own handler table (register its handlers, then [`barrier`](Self::barrier),
    /// before sending to them), its own progress and its own RMA, atomics
    /// and VIS completion; it shares the segment. An AM from it reaches the
    /// endpoint of the same [`index`](Endpoint::index) on its destination;
    /// [`Endpoint::request_short_at`] and its kin reach any other (see
    /// [`crossing`](crate::crossing)).
    /// Threads that each inject on their own endpoint share no lock there.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_core::{Flags, GlobalAddr, Rank};
    /// let mine = client.create_endpoint()?;
    /// assert_eq!(mine.index(), 1);
    /// std::thread::scope(|s| {
    ///     s.spawn(|| mine.put(GlobalAddr::new(Rank(0), 64), b"from a thread", Flags::empty()));
    /// });
    /// # Ok(()) }
    /// ```
    pub fn create_endpoint(&self) -> Result<Arc<Endpoint>> {
        if in_handler() {
            return Err(Error::InHandler {
                what: "create_endpoint",
            });
        }
        let _one = self.making.lock();
        let siblings = self.ep.siblings();
        let index = siblings.count();
        let conduit = self.ep.conduit_handle().open_endpoint(index)?;
        let ep = Endpoint::at_index(conduit, &self.config, index, siblings.clone())?;
        if let Some(setup) = &self.setup {
            setup(&ep)?;
        }
        ep.handlers().seal_protocols();
        // Every rank's endpoint exists, with rgex's protocols, before any
        // rank can send to it.
        self.world.barrier()?;
        siblings.push(ep.clone());
        Ok(ep)
    }

    /// The endpoint at `index` (0: the primordial one), or an error naming
    /// this rank and the index: out of range, or destroyed.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) {
    /// assert_eq!(client.endpoint_at(0).unwrap().index(), 0);
    /// let e = client.endpoint_at(7).unwrap_err();
    /// assert!(e.to_string().contains("no endpoint 7"), "{e}");
    /// # }
    /// ```
    pub fn endpoint_at(&self, index: u32) -> Result<Arc<Endpoint>> {
        if index == 0 {
            return Ok(self.ep.clone());
        }
        self.ep.siblings().get(self.rank(), index, "endpoint_at")
    }

    /// How many endpoints this rank has opened, the primordial one
    /// included (destroyed ones keep their index, so they count).
    pub fn endpoint_count(&self) -> u32 {
        self.ep.siblings().count()
    }

    /// Destroy the endpoint at `index`, collectively: every rank calls it
    /// together. After a barrier (its peers are done sending to it as far
    /// as they waited for), every operation through it, clones of its
    /// `Arc` included, fails with [`Error::EndpointDestroyed`] naming this
    /// rank and the index; its resources go with the last clone. The
    /// primordial endpoint ends with the client instead.
    pub fn destroy_endpoint(&self, index: u32) -> Result<()> {
        if index == 0 {
            return Err(Error::Config(format!(
                "{}: endpoint 0 is the primordial endpoint; it ends with the client (finalize)",
                self.rank()
            )));
        }
        let _one = self.making.lock();
        let ep = self.endpoint_at(index)?;
        self.world.barrier()?;
        ep.mark_destroyed();
        self.ep.siblings().destroy(index);
        Ok(())
    }

    /// The team of all ranks, with its collectives (barrier, broadcast,
    /// reductions, split); see [`crate::team`]. Its members, in job
    /// order, are [`Team::members`](crate::team::Team::members).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let world = client.world();
    /// assert_eq!(world.size(), client.size());
    /// let sum = world.allreduce(&[1u64], rgex_endpoint::team::ReduceOp::Sum)?;
    /// assert_eq!(sum[0], u64::from(world.size()));
    /// # Ok(()) }
    /// ```
    pub fn world(&self) -> &crate::team::Team {
        &self.world
    }

    /// This rank's statistics now (`RGEX_STATS`): every counter its
    /// threads counted, summed; `None` when nothing is counted.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) {
    /// if let Some(s) = client.stats() {
    ///     println!("{} polls, {} empty", s.get("poll.polls").unwrap_or(0),
    ///              s.get("poll.empty_polls").unwrap_or(0));
    /// }
    /// # }
    /// ```
    pub fn stats(&self) -> Option<rgex_core::observe::Stats> {
        rgex_core::observe::stats()
    }

    /// This rank.
    pub fn rank(&self) -> Rank {
        self.ep.rank()
    }

    /// Ranks in the job.
    pub fn size(&self) -> u32 {
        self.ep.size()
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
        // Named for the record of the wait inside, should it block (one
        // thread-local store and its restore: nothing beside a barrier).
        let waiting = Waiting::new("Client::barrier: the world team's barrier")
            .value("members", u64::from(self.size()));
        blocked::within(&waiting, || self.world.barrier())
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
    /// # fn demo(client: rgex_endpoint::Client) -> rgex_core::Result<()> {
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
        // The stats file and the trace, written while the rank can
        // still be seen leaving (again at exit, with any later counts).
        rgex_core::observe::finish();
        rgex_core::bootstrap::announce_leaving();
        self.ep.mark_finalized();
        // Forgotten by the table too: each endpoint goes with the last
        // clone its users hold (see `Siblings`).
        for ep in self.ep.siblings().take_all() {
            ep.mark_finalized();
        }
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
