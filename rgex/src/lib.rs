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
//! client.request_short(Rank(0), ids.hit, &[1], Flags::empty())?;
//! client.barrier()?;
//! client.barrier()?;
//! # Ok::<(), rgex::Error>(())
//! ```
//!
//! A handler may also return a `Result`; its error is reported by the
//! rank that ran it, naming the handler and the sender (see
//! [`outcome`]).

pub mod info;
pub mod launch;

pub use rgex_am::rma::{
    self, BufError, GetPending, Lc, LocalCompletion, NbiCategory, PutDeferred, PutEvents, RmaPath,
};
pub use rgex_am::team::{self, Element, Numeric, ReduceOp, TeamHandle, NO_COLOUR};
pub use rgex_am::{
    context, outcome, progress_task, progress_thread, reserved, Accepts, Client, Endpoint,
    HandlerId, HandlerOutcome, HandlerTable, Message, Prepared, ProgressStop, ProgressTask,
    ProgressThread, ProtocolId, Target, Token, CLIENT_MIN, MALFORMED_PRINTED,
};
/// Remote atomic domains (see [`rgex_atomics`]); their errors are
/// variants of the one [`Error`] (`rgex::atomics::Error` is the same type).
pub use rgex_atomics::{
    self as atomics, AtomicDomain, AtomicEvent, AtomicFlags, AtomicOp, AtomicType, AtomicValue,
    Implementation as AtomicImplementation, OpSet,
};
pub use rgex_core::{
    bootstrap, event, segment, Backoff, Category, Completion, Conduit, Error, Event, Flags,
    GlobalAddr, Progress, Rank, Result, Segment, Team, MAX_ARGS,
};
pub use rgex_ibv::{IbvConduit, IbvConfig, SoftIbvConduit};
pub use rgex_ofi::{OfiConduit, OfiConfig};
pub use rgex_scc::{SccConduit, SccConfig};
pub use rgex_smp::{SmpConduit, SmpConfig};
/// Vector, indexed and strided transfers (see [`rgex_vis`]).
pub use rgex_vis::{
    self as vis, CompiledStrided, Indexed, Mechanism as VisMechanism, Meta as VisMeta, Strided,
    StridedAt, Vector, Vis, VisBuilder, VisGet, VisPut, VisPutDeferred,
};

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
pub fn init() -> Result<Client> {
    init_with(|_| Ok(())).map(|(client, ())| client)
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
/// client.request_short(Rank(0), h.ping, &[7], Flags::empty())?;
/// # let _ = h.pong;
/// # Ok::<(), rgex::Error>(())
/// ```
pub fn init_with<H>(register: impl FnOnce(&HandlerTable) -> Result<H>) -> Result<(Client, H)> {
    let (env, boot) = job_bootstrap()?;
    let conduit: Arc<dyn Conduit> = match std::env::var("RGEX_CONDUIT").ok().as_deref() {
        None | Some("") | Some("smp") => {
            Arc::new(SmpConduit::new(&env, boot, SmpConfig::from_env()?)?)
        }
        Some("ofi") => Arc::new(OfiConduit::new(
            &env,
            boot,
            SmpConfig::from_env()?,
            OfiConfig::from_env()?,
        )?),
        Some("ibv") => {
            // The backend is chosen at run time: the software device, or
            // libibverbs (which says "no RDMA device" where there is none).
            let cfg = IbvConfig::from_env()?;
            let smp = SmpConfig::from_env()?;
            if cfg.soft() {
                Arc::new(SoftIbvConduit::new(&env, boot, smp, cfg)?)
            } else {
                Arc::new(IbvConduit::new(&env, boot, smp, cfg)?)
            }
        }
        Some("scc") => Arc::new(SccConduit::new(&env, boot, SccConfig::from_env()?)?),
        Some(other) => {
            return Err(Error::Config(format!(
                "RGEX_CONDUIT={other:?}: this build offers the smp, ofi, ibv and scc conduits"
            )))
        }
    };
    // Registered after the conduit's exit hooks, so it runs before them:
    // the launcher hears this rank is leaving before its peers can.
    bootstrap::announce_leaving_at_exit();
    let mut client = Client::new(conduit, env.polite)?;
    // VIS's protocol handlers, on every rank before the barrier (a VIS
    // context is made by one rank alone, whenever it likes).
    rgex_vis::install(client.endpoint())?;
    rgex_atomics::install(client.endpoint())?;
    // Every protocol of rgex's is registered: close the reserved range
    // before client code can reach the table.
    client.handlers().seal_protocols();
    let ids = register(client.handlers())?;
    // After registration, so the thread never runs a handler that is
    // still being registered; before the barrier, which it then helps.
    client.progress_thread_from_env()?;
    client.barrier()?;
    Ok((client, ids))
}
