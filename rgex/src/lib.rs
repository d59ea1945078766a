//! rgex: a communication substrate for PGAS languages and task runtimes.
//!
//! Start with [`init`]: it reads the job from the environment (set by the
//! `rgex-run` launcher; a program started on its own is a job of one rank),
//! picks the conduit (`RGEX_CONDUIT`, default `smp`) and returns a
//! [`Client`].
//!
//! ```no_run
//! use rgex::{Flags, HandlerId, Rank};
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//!
//! /// The ids this program's handlers got, the same on every rank.
//! struct Handlers {
//!     hit: HandlerId,
//! }
//!
//! let hits = Arc::new(AtomicU32::new(0));
//! let h = hits.clone();
//! let (client, ids) = rgex::init_with(|t| {
//!     Ok(Handlers {
//!         hit: t.register("hit", move |_tok, msg| {
//!             h.fetch_add(msg.arg(0), Ordering::Relaxed);
//!         })?,
//!     })
//! })?;
//! client.endpoint().request_short(Rank(0), ids.hit, &[1], Flags::empty())?;
//! client.barrier()?;
//! client.barrier()?;
//! # Ok::<(), rgex::Error>(())
//! ```
//!
//! A handler may also return a `Result`; its error is reported by the
//! rank that ran it, naming the handler and the sender (see
//! [`outcome`]).
//!
//! rgex's crates report what goes wrong where no caller can be told as
//! `tracing` events; `init` prints them on stderr unless the application
//! has its own subscriber (`RGEX_LOG` filters them; see [`diagnostics`]).

pub mod blocked_report;
pub mod crash;
pub mod diagnostics;
pub mod info;
pub mod launch;
mod rank_line;

/// Remote atomic domains (see [`rgex_atomics`]); their errors are
/// variants of the one [`Error`] (`rgex::atomics::Error` is the same type).
pub use rgex_atomics::{
    self as atomics, AtomicDomain, AtomicEvent, AtomicFlags, AtomicOp, AtomicType, AtomicValue,
    AtomicsConfig, Implementation as AtomicImplementation, OpSet,
};
pub use rgex_core::{
    blocked, bootstrap, config, event, observe, segment, Backoff, Category, Conduit, Error, Event,
    Flags, GlobalAddr, Membership, OpCounter, Progress, Rank, Result, Segment, Signal, SignalOp,
    MAX_ARGS,
};
pub use rgex_endpoint::rma::{
    self, BufError, GetPending, Lc, LocalCompletion, NbiCategory, PutDeferred, PutEvents, RmaPath,
    SignalPath,
};
pub use rgex_endpoint::team::{self, CollEvent, Element, Numeric, ReduceOp, Team, NO_COLOUR};
pub use rgex_endpoint::{
    client_segment, context, memory_wait, outcome, progress_task, progress_thread, reserved,
    Accepts, AmConfig, Client, ClientPath, ClientSegment, Cmp, Endpoint, EndpointAddr, HandlerId,
    HandlerOutcome, HandlerTable, Message, Prepared, ProgressStop, ProgressTask, ProgressThread,
    ProtocolId, Target, Token, WaitMemory, WaitUntil, WaitWord, CLIENT_MIN, CLIENT_SEGMENT_STRIDE,
    CMA_MIN, MALFORMED_PRINTED, MAX_CROSSING_ARGS,
};
pub use rgex_ibv::{IbvConduit, IbvConfig, SoftIbvConduit};
pub use rgex_ofi::{OfiConduit, OfiConfig};
pub use rgex_scc::{SccConduit, SccConfig};
pub use rgex_smp::{SmpConduit, SmpConfig};
/// Vector, indexed and strided transfers (see [`rgex_vis`]).
pub use rgex_vis::{
    self as vis, CompiledStrided, Indexed, Mechanism as VisMechanism, Meta as VisMeta, Strided,
    StridedAt, Vector, Vis, VisBuilder, VisConfig, VisGet, VisPut, VisPutDeferred,
};

use rgex_core::config::{vars, Environment};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Where this process stands in its job, and the bootstrap that connects
/// it to the other ranks: the `rgex-run` launcher's socket when it started
/// the process (`RGEX_BOOTSTRAP` set), else the PMIx server of a cluster
/// launcher (`srun --mpi=pmix`, `mpirun`, `prterun`), else a job of one
/// rank. [`init`] calls it.
///
/// ```no_run
/// let (env, boot) = rgex::job_bootstrap()?;
/// println!("rank {} of {} (bootstrap: {})", env.rank, env.size, boot.name());
/// # Ok::<(), rgex::Error>(())
/// ```
pub fn job_bootstrap() -> Result<(bootstrap::JobEnv, Box<dyn bootstrap::Bootstrap>)> {
    if std::env::var_os("RGEX_BOOTSTRAP").is_none() {
        if let Some((env, boot)) = rgex_pmix::from_env()? {
            return Ok((env, Box::new(boot)));
        }
    }
    bootstrap::from_env()
}

/// This process's rank as its launcher announced it, readable before
/// [`init`] without starting any bootstrap (say, to let rank 0 do some
/// local work while the others already wait in `init`): `RGEX_RANK` under
/// `rgex-run`, `PMIX_RANK` under a PMIx launcher, 0 for a job of one rank.
///
/// ```no_run
/// if rgex::launcher_rank()? == 0 {
///     // measure something local before the job starts
/// }
/// let client = rgex::init()?;
/// # Ok::<(), rgex::Error>(())
/// ```
pub fn launcher_rank() -> Result<u32> {
    if std::env::var_os("RGEX_BOOTSTRAP").is_some() {
        return bootstrap::JobEnv::read().map(|e| e.rank);
    }
    Ok(rgex_pmix::announced_rank()?.unwrap_or(0))
}

/// Initialise rgex for this process (collective: every rank calls it),
/// with no handlers of its own (see [`init_with`]).
///
/// Once per process: a second call, from any thread, sequential or
/// concurrent, while the first call's client lives or after it was
/// finalized or dropped, fails at once with
/// [`Error::AlreadyInitialised`] ("rgex is already initialised in this
/// process"), and so does one after a first call that failed. End the
/// client with [`Client::finalize`] (collective, reporting operations
/// left unfinished) or by dropping it; either tells the launcher this
/// rank is leaving, and from then on sends and RMA through its endpoint
/// (clones of its `Arc` included) fail with [`Error::Finalized`].
///
/// ```no_run
/// let client = rgex::init()?;
/// assert!(matches!(rgex::init(), Err(rgex::Error::AlreadyInitialised { .. })));
/// client.finalize()?;
/// # Ok::<(), rgex::Error>(())
/// ```
pub fn init() -> Result<Client> {
    init_with(|_| Ok(())).map(|(client, ())| client)
}

/// Where this process's one initialisation stands (see [`init_with`]).
static INIT: AtomicU8 = AtomicU8::new(INIT_NONE);
/// Nobody has called `init` or `init_with`.
const INIT_NONE: u8 = 0;
/// A thread is in `init_with`.
const INIT_RUNNING: u8 = 1;
/// `init_with` returned a client (live, finalized or dropped).
const INIT_DONE: u8 = 2;
/// `init_with` failed.
const INIT_FAILED: u8 = 3;

/// Claim this process's one initialisation, or say why it cannot be.
fn claim_init() -> Result<()> {
    // Relaxed: the swap alone decides which caller goes on (a
    // read-modify-write sees every earlier one); nothing else is
    // published through the word, which is read only for the message.
    match INIT.compare_exchange(
        INIT_NONE,
        INIT_RUNNING,
        Ordering::Relaxed,
        Ordering::Relaxed,
    ) {
        Ok(_) => Ok(()),
        Err(now) => Err(Error::AlreadyInitialised {
            rank: launcher_rank().unwrap_or(0),
            state: match now {
                INIT_RUNNING => "another thread is initialising it",
                INIT_DONE => "an earlier init made its client",
                _ => "an earlier init failed",
            },
        }),
    }
}

/// Initialise rgex, registering handlers with `register` before the
/// closing barrier, so no rank can send to a handler its peer has not
/// registered yet. Whatever `register` returns (typically a struct of the
/// [`HandlerId`]s that [`HandlerTable::register`] gave it) comes back
/// with the client: send with those ids, never with guessed indices.
///
/// ```no_run
/// use rgex::{Flags, HandlerId, Rank};
/// struct Handlers {
///     ping: HandlerId,
///     pong: HandlerId,
/// }
/// let (client, h) = rgex::init_with(|t| {
///     // Register a reply's handler before the request that needs its id.
///     let pong = t.register("pong", |tok, _msg| println!("pong from {}", tok.src()))?;
///     let ping = t.register("ping", move |tok, msg| tok.reply_short(pong, msg.args(), Flags::empty()))?;
///     Ok(Handlers { ping, pong })
/// })?;
/// client.endpoint().request_short(Rank(0), h.ping, &[7], Flags::empty())?;
/// # let _ = h.pong;
/// # Ok::<(), rgex::Error>(())
/// ```
///
/// Once per process, as [`init`] says: a second call fails with
/// [`Error::AlreadyInitialised`]; the client ends with
/// [`Client::finalize`] or its drop.
pub fn init_with<H>(register: impl FnOnce(&HandlerTable) -> Result<H>) -> Result<(Client, H)> {
    init_with_settings(&Environment::capture(), register)
}

/// [`init_with`], with the settings of `settings` instead of a snapshot
/// of the environment taken now: every layer's configuration is read
/// from it, once, here. A library on rgex that reads settings of its own
/// before init (rgex-pgas) takes one snapshot and passes it.
///
/// ```no_run
/// use rgex::config::{vars, Environment};
/// let settings = Environment::capture();
/// let mine = settings.get(&vars::PGAS_WINDOW).map(str::to_string);
/// let (client, ()) = rgex::init_with_settings(&settings, |_| Ok(()))?;
/// # let _ = (mine, client);
/// # Ok::<(), rgex::Error>(())
/// ```
///
/// The rank-0 process prints one warning on stderr for each `RGEX_`
/// variable of `settings` that rgex does not read, naming the closest
/// that it does (rgex-info lists them all).
pub fn init_with_settings<H>(
    settings: &Environment,
    register: impl FnOnce(&HandlerTable) -> Result<H>,
) -> Result<(Client, H)> {
    claim_init()?;
    let made = init_once(settings, register);
    let now = if made.is_ok() { INIT_DONE } else { INIT_FAILED };
    // Relaxed: only messages read it (see `claim_init`).
    INIT.store(now, Ordering::Relaxed);
    made
}

/// Print a warning for each variable of `settings` rgex does not read (the
/// one place rgex reports them; rank 0 alone, so a job says it once).
fn warn_unknown(settings: &Environment) {
    for unknown in settings.unknown() {
        eprintln!("rgex: warning: {unknown}");
    }
}

/// [`init_with`]'s work, once the initialisation is claimed.
fn init_once<H>(
    settings: &Environment,
    register: impl FnOnce(&HandlerTable) -> Result<H>,
) -> Result<(Client, H)> {
    // First, so that whatever setup reports is printed.
    diagnostics::install()?;
    // Then what a rank does when it crashes or is asked what it waits
    // for, before anything can hang or crash (the bootstrap's waits).
    let rank = launcher_rank().unwrap_or(0);
    blocked_report::install(rank)?;
    crash::install(&crash::CrashConfig::read(settings)?, rank)?;
    let (env, boot) = job_bootstrap()?;
    if env.rank == 0 {
        warn_unknown(settings);
    }
    // Every layer's settings, read before anything is set up: a bad value
    // fails here, naming its variable.
    let am = AmConfig::read(settings, env.polite)?;
    let vis = VisConfig::read(settings)?;
    let atomics = AtomicsConfig::read(settings)?;
    let observe = observe_config(settings)?;
    // Statistics and tracing: decided here, once. Off, the conduit is the
    // conduit and every path is today's; on, the conduit is observed (its
    // calls made statically inside the observing ones) and the endpoint
    // and atomic domains take their observed routes.
    let observed = observe.any();
    let conduit: Arc<dyn Conduit> = match settings.get(&vars::CONDUIT) {
        None | Some("smp") => observing(
            SmpConduit::new(&env, boot, SmpConfig::read(settings)?)?,
            observed,
        ),
        Some("ofi") => observing(
            OfiConduit::new(
                &env,
                boot,
                SmpConfig::read(settings)?,
                OfiConfig::read(settings)?,
            )?,
            observed,
        ),
        Some("ibv") => {
            // The backend is chosen at run time: the software device, or
            // libibverbs (which says "no RDMA device" where there is none).
            let cfg = IbvConfig::read(settings)?;
            let smp = SmpConfig::read(settings)?;
            if cfg.soft() {
                observing(SoftIbvConduit::new(&env, boot, smp, cfg)?, observed)
            } else {
                observing(IbvConduit::new(&env, boot, smp, cfg)?, observed)
            }
        }
        Some("scc") => observing(
            SccConduit::new(&env, boot, SccConfig::read(settings)?)?,
            observed,
        ),
        Some(other) => {
            return Err(Error::Config(format!(
                "RGEX_CONDUIT={other:?}: this build offers the smp, ofi, ibv and scc conduits"
            )))
        }
    };
    // Registered after the conduit's exit hooks, so it runs before them:
    // the launcher hears this rank is leaving before its peers can (a
    // client finalized or dropped before the exit has said so already).
    bootstrap::announce_leaving_at_exit();
    rgex_core::observe::install(&observe, env.rank)?;
    let mut client = Client::with_config(conduit, am)?;
    if observe.any() {
        // The trace names each AM's handler from the primordial table
        // (a weak reference: the observer outlives the client).
        let ep = Arc::downgrade(client.endpoint());
        rgex_core::observe::name_handlers(move |i| {
            ep.upgrade()
                .map_or_else(|| "<finalized>".to_owned(), |ep| ep.handlers().name(i))
        });
    }
    // VIS's protocol handlers, on every rank before the barrier (a VIS
    // context is made by one rank alone, whenever it likes).
    rgex_vis::install(client.endpoint(), vis)?;
    rgex_atomics::install(client.endpoint(), atomics)?;
    // And on every endpoint the client opens later.
    client.on_new_endpoint(move |ep| {
        rgex_vis::install(ep, vis)?;
        rgex_atomics::install(ep, atomics)
    });
    // Every protocol of rgex's is registered: close the reserved range
    // before client code can reach the table.
    client.endpoint().handlers().seal_protocols();
    let ids = register(client.endpoint().handlers())?;
    // After registration, so the thread never runs a handler that is
    // still being registered; before the barrier, which it then helps.
    client.progress_thread_as_configured()?;
    client.barrier()?;
    Ok((client, ids))
}

/// `conduit`, shared, and observed when `observed` (see
/// [`rgex_core::observe::Observed`]).
fn observing<C: Conduit + 'static>(conduit: C, observed: bool) -> Arc<dyn Conduit> {
    let conduit = Arc::new(conduit);
    if observed {
        rgex_core::observe::Observed::wrap(conduit)
    } else {
        conduit
    }
}

/// `RGEX_STATS`, `RGEX_STATS_FILE`, `RGEX_TRACE` and `RGEX_TRACE_FILE`.
fn observe_config(settings: &Environment) -> Result<rgex_core::observe::ObserveConfig> {
    use rgex_core::observe::{Mask, ObserveConfig, TraceFilter};
    Ok(ObserveConfig {
        stats: Mask::parse("RGEX_STATS", settings.get(&vars::STATS).unwrap_or("0"))?,
        stats_file: settings.get(&vars::STATS_FILE).map(str::to_string),
        trace: TraceFilter::parse("RGEX_TRACE", settings.get(&vars::TRACE).unwrap_or("0"))?,
        trace_file: settings.get(&vars::TRACE_FILE).map(str::to_string),
    })
}
