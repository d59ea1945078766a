//! Setting a kit conduit up: the smp transport for the node (it owns the
//! bootstrap and the segment memory), the sizes every rank agrees on,
//! the transport opened on the kit's buffers, every rank's card
//! exchanged, the receives posted and the progress ticker started; then
//! the node-local bypass around it.

use crate::conduit::NetConduit;
use crate::geometry::Geometry;
use crate::net::Net;
use crate::shm_bypass::ShmBypass;
use crate::state::State;
use crate::ticker::Ticker;
use crate::transport::{NetConfig, Transport};
use parking_lot::Mutex;
use rgex_core::bootstrap::JobEnv;
use rgex_core::{Bootstrap, Conduit, Error, Locality, Result};
use rgex_smp::{SmpConduit, SmpConfig};
use std::sync::Arc;

impl<T: Transport> ShmBypass<NetConduit<T>> {
    /// Set up the job: the shared-memory transport for the ranks on this
    /// node (it owns the bootstrap and the segment memory), then the
    /// network conduit over `T` ([`NetConduit::new`]), then the route:
    /// node-local peers through shared memory, the others through the
    /// network. Collective.
    ///
    /// With the bypass off (`cfg`'s [`shm_bypass`](crate::Settings::shm_bypass))
    /// every peer, this rank included, goes through the network; the
    /// segment still lives in shared memory.
    pub fn new(
        env: &JobEnv,
        boot: Box<dyn Bootstrap>,
        smp_cfg: SmpConfig,
        cfg: T::Config,
    ) -> Result<Self> {
        cfg.check()?;
        let smp = Arc::new(SmpConduit::new_node(env, boot, smp_cfg)?);
        let locality = match cfg.settings().shm_bypass {
            true => smp.locality().clone(),
            false => smp.locality().without_shm(),
        };
        let net = NetConduit::new(smp.clone(), cfg, locality.clone())?;
        ShmBypass::over(smp, locality, net)
    }

    /// The network's transport.
    pub fn transport(&self) -> &T {
        self.network().transport()
    }
}

impl<T: Transport> NetConduit<T> {
    /// Set up the network over the job of `node` (the node's smp conduit:
    /// its bootstrap, and its segment, which the network registers): the
    /// transport opened, the segment and buffers registered, addresses
    /// exchanged through the bootstrap. Collective.
    ///
    /// `locality` is the job's neighbourhood table, which the node-local
    /// bypass around this conduit shares: the peers it says shared memory
    /// carries are not told goodbye over the network when this rank
    /// closes (they hear of it there), and those on this node are watched
    /// through smp.
    pub fn new(node: Arc<SmpConduit>, cfg: T::Config, locality: Locality) -> Result<Self> {
        cfg.check()?;
        let smp = &*node;
        let size = smp.size() as usize;
        if locality.size() as usize != size || locality.me() != smp.rank() {
            return Err(Error::Config(format!(
                "rank {}: the {} conduit was given the neighbourhood table of rank {} in a job \
                 of {}, for a job of {size}",
                smp.rank(),
                T::NAME,
                locality.me(),
                locality.size()
            )));
        }
        let boot = smp.bootstrap();
        let rank = smp.rank();
        // Geometry must be symmetric: rank 0's settings rule.
        let mine = cfg.settings();
        let geo0 = boot.broadcast(
            0,
            &[
                (mine.max_medium as u64).to_le_bytes(),
                (mine.window as u64).to_le_bytes(),
            ]
            .concat(),
        )?;
        let word = |i: usize| {
            u64::from_le_bytes(geo0[8 * i..8 * i + 8].try_into().expect("8 bytes")) as usize
        };
        let mut cfg = cfg;
        cfg.set_sizes(word(0), word(1));
        cfg.check()?;
        let settings = cfg.settings();
        let geo = Geometry::new(size, &settings);
        let opened = Net::<T>::open(&cfg, geo, rank, smp.segment()).and_then(|(net, card)| {
            let mut state = State::new(&net.geo, locality.clone(), settings.timeout_secs);
            state.post_receives(&net).map_err(Into::into)?;
            Ok((net, state, card))
        });
        // Every rank reports success or its error, so none waits for a
        // rank that failed.
        let mine = opened
            .as_ref()
            .map(|(_, _, c)| c.as_slice())
            .map_err(|e| e.to_string());
        let cards = exchange::<T>(boot, mine)?;
        let (mut net, state, _) = opened?;
        net.connect(&cards)?;
        // Everyone has inserted everyone before anyone sends.
        boot.barrier()?;
        let ready_count = state.ready.count();
        let state = Arc::new(Mutex::new(state));
        let net = Arc::new(net);
        let ticker = Ticker::start(state.clone(), net.clone()).map_err(|source| Error::Os {
            op: format!("starting the {} progress thread", T::NAME),
            source,
        })?;
        let idle_wake_fd = crate::idle::WakeFd::new().map_err(|source| Error::Os {
            op: format!(
                "{rank}: an eventfd for the {} progress thread's wake",
                T::NAME
            ),
            source,
        })?;
        crate::drain::register(rank, &state, &net);
        Ok(NetConduit {
            ticker,
            state,
            net,
            deliver_lock: [Mutex::new(()), Mutex::new(())],
            ready_count,
            rank,
            size: size as u32,
            node,
            locality,
            idle_wake_fd,
            cfg,
        })
    }
}

/// Exchange every rank's card through the bootstrap, each rank reporting
/// success or its error so no rank waits for one that failed.
fn exchange<T: Transport>(
    boot: &dyn Bootstrap,
    mine: std::result::Result<&[u8], String>,
) -> Result<Vec<Vec<u8>>> {
    let msg = match mine {
        Ok(card) => [&[0u8][..], card].concat(),
        Err(e) => [&[1u8][..], e.as_bytes()].concat(),
    };
    let all = boot.allgather(&msg)?;
    let mut cards = Vec::with_capacity(all.len());
    for (r, m) in all.into_iter().enumerate() {
        match m.split_first() {
            Some((0, rest)) => cards.push(rest.to_vec()),
            _ => {
                return Err(Error::Bootstrap(format!(
                    "rank {r} could not open its {} endpoint: {}",
                    T::NETWORK,
                    String::from_utf8_lossy(m.get(1..).unwrap_or_default())
                )))
            }
        }
    }
    Ok(cards)
}
