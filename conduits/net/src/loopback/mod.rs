//! The kit's own test transport: ranks that are threads of one process,
//! connected by an in-process [`Fabric`] whose capacity, delays and dead
//! peers a test controls. Each rank is a whole [`NetConduit<Loopback>`],
//! so a test drives the kit's credits, backlog, IMMEDIATE, completions
//! and dead-peer logic through the Conduit SPI without any network.
//!
//! Behind the `loopback` cargo feature (the crate's own tests turn it
//! on): nothing of it is in a conduit's build.
//!
//! Start a job with [`start`]: every rank's conduit is set up on a
//! thread of its own (setup is collective), and the conduits come back
//! in rank order to be driven from any thread. Every peer goes through
//! the fabric, this rank included (a bare [`NetConduit`], with no
//! [`ShmBypass`](crate::ShmBypass) around it; smp still holds the
//! segments, in shared memory).
//!
//! The kit's tests on it are `tests/loopback.rs`. Loom has nothing to
//! check in the kit: its logic runs under the conduit's one state lock,
//! and what it reads without the lock (the ready counts, the ticker's
//! flags and clock) are Relaxed hints that publish no data.

mod bootstrap;
mod fabric;

pub use bootstrap::{ThreadBootstrap, MEET_LIMIT};
pub use fabric::{Fabric, Fate};

use crate::readback::PutCompletion;
use crate::transport::{Area, Caps, NetConfig, OpEnd, Polled, PostError, Settings, Setup};
use crate::{NetConduit, Transport};
use fabric::{Kind, Refusal};
use rgex_core::atomic::{AtomicRequest, AtomicType, OpSet};
use rgex_core::bootstrap::JobEnv;
use rgex_core::{Bootstrap, Error, Result};
use rgex_smp::{SmpConduit, SmpConfig};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// A loopback job's configuration: the fabric, the kit's settings and
/// what the transport says it can do.
#[derive(Clone, Debug)]
pub struct LoopConfig {
    /// The network the ranks share.
    pub fabric: Arc<Fabric>,
    /// The kit's settings (the bypass is always off).
    pub settings: Settings,
    /// What the transport reports it can do.
    pub caps: Caps,
}

impl LoopConfig {
    /// Small buffers and windows for a job of `size` ranks, so tests
    /// reach the limits quickly: 4 credits, 16 request send buffers,
    /// 1 KiB Mediums, no dead-peer timeout; inject up to 64 bytes,
    /// 64 KiB messages, sends ordered after writes, delivery completion.
    pub fn new(size: usize) -> Self {
        LoopConfig {
            fabric: Fabric::new(size),
            settings: Settings {
                shm_bypass: false,
                max_medium: 1024,
                window: 4,
                send_buffers: 16,
                timeout_secs: 0,
            },
            caps: Caps {
                inject_size: 64,
                max_msg: 64 << 10,
                send_after_write: true,
                delivery_complete: true,
                local_registration: false,
                put_completion: PutCompletion::Delivery,
            },
        }
    }
}

impl NetConfig for LoopConfig {
    fn net(&self) -> &Settings {
        &self.settings
    }

    fn net_mut(&mut self) -> &mut Settings {
        &mut self.settings
    }

    fn check(&self) -> Result<()> {
        let s = &self.settings;
        if s.shm_bypass {
            return Err(Error::Config(
                "loopback: shm_bypass must be off (the loopback fabric carries every peer)".into(),
            ));
        }
        let bad = |what: &str, v: usize| {
            Err(Error::Config(format!(
                "loopback: {what} = {v} is not allowed (at least 1)"
            )))
        };
        if s.window == 0 {
            return bad("window", s.window);
        }
        if s.send_buffers == 0 {
            return bad("send_buffers", s.send_buffers);
        }
        if self.caps.max_msg == 0 {
            return bad("max_msg", self.caps.max_msg);
        }
        Ok(())
    }
}

/// A loopback post's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopError {
    /// The fabric is at this rank's capacity: retry after progress.
    Again,
    /// The post cannot be done.
    Failed(String),
}

impl std::fmt::Display for LoopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoopError::Again => write!(f, "loopback: the fabric's queue is full (again)"),
            LoopError::Failed(why) => write!(f, "{why}"),
        }
    }
}

impl From<LoopError> for Error {
    fn from(e: LoopError) -> Error {
        Error::Failed(e.to_string())
    }
}

impl PostError for LoopError {
    fn is_again(&self) -> bool {
        *self == LoopError::Again
    }
}

impl From<Refusal> for LoopError {
    fn from(r: Refusal) -> LoopError {
        match r {
            Refusal::Again => LoopError::Again,
            Refusal::Bad(why) => LoopError::Failed(why),
        }
    }
}

/// A loopback registration (nothing to register in one process).
#[derive(Debug)]
pub struct Region;

/// One rank's endpoint on a [`Fabric`].
#[derive(Debug)]
pub struct Loopback {
    fabric: Arc<Fabric>,
    rank: usize,
    caps: Caps,
}

impl Loopback {
    /// The fabric it is on.
    pub fn fabric(&self) -> &Arc<Fabric> {
        &self.fabric
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.fabric.close(self.rank);
    }
}

impl Transport for Loopback {
    const NAME: &'static str = "loopback";
    const NETWORK: &'static str = "the loopback fabric";
    const TIMEOUT_VAR: &'static str = "LoopConfig::settings.timeout_secs";
    type Config = LoopConfig;
    type Region = Region;
    type Error = LoopError;
    type AtomicPlan = ();

    unsafe fn open(cfg: &LoopConfig, setup: &Setup<'_>) -> Result<(Self, Vec<u8>)> {
        let rank = setup.rank.index();
        let seg = (setup.segment.as_ptr() as usize, setup.segment.len());
        cfg.fabric.open(rank, seg).map_err(Error::Config)?;
        let t = Loopback {
            fabric: cfg.fabric.clone(),
            rank,
            caps: cfg.caps,
        };
        Ok((t, (rank as u32).to_le_bytes().to_vec()))
    }

    fn connect(&mut self, cards: &[Vec<u8>]) -> Result<()> {
        for (r, card) in cards.iter().enumerate() {
            if card.as_slice() != (r as u32).to_le_bytes() || r >= self.fabric.size() {
                return Err(Error::Config(format!(
                    "loopback: rank {r}'s card {card:?} does not name rank {r} of a fabric of {}",
                    self.fabric.size()
                )));
            }
        }
        Ok(())
    }

    fn caps(&self) -> &Caps {
        &self.caps
    }

    fn desc(&self, _area: Area) -> usize {
        0
    }

    unsafe fn register(&self, _p: *const u8, _len: usize) -> Result<Region> {
        Ok(Region)
    }

    fn region_desc(&self, _r: &Region) -> usize {
        0
    }

    unsafe fn post_recv(
        &self,
        op: u32,
        buf: *mut u8,
        len: usize,
        _desc: usize,
    ) -> std::result::Result<(), LoopError> {
        self.fabric.post_recv(self.rank, op, buf as usize, len);
        Ok(())
    }

    unsafe fn inject(
        &self,
        peer: u32,
        buf: *const u8,
        len: usize,
    ) -> std::result::Result<(), LoopError> {
        // SAFETY: `buf` is readable for `len` bytes for the call (the
        // trait's contract); the bytes are copied now.
        let msg = unsafe { std::slice::from_raw_parts(buf, len) }.to_vec();
        Ok(self.fabric.post(self.rank, peer, None, Kind::Send(msg))?)
    }

    unsafe fn post_send(
        &self,
        op: u32,
        peer: u32,
        buf: *const u8,
        len: usize,
        _desc: usize,
    ) -> std::result::Result<(), LoopError> {
        // SAFETY: `buf` is readable for `len` bytes until the completion
        // (the trait's contract); the bytes are copied now.
        let msg = unsafe { std::slice::from_raw_parts(buf, len) }.to_vec();
        Ok(self
            .fabric
            .post(self.rank, peer, Some(op), Kind::Send(msg))?)
    }

    unsafe fn post_write(
        &self,
        op: u32,
        peer: u32,
        src: *const u8,
        len: usize,
        _desc: usize,
        offset: u64,
        delivery: bool,
    ) -> std::result::Result<(), LoopError> {
        // SAFETY: as for post_send.
        let data = unsafe { std::slice::from_raw_parts(src, len) }.to_vec();
        let kind = Kind::Write {
            data,
            offset,
            delivery,
        };
        Ok(self.fabric.post(self.rank, peer, Some(op), kind)?)
    }

    unsafe fn post_read(
        &self,
        op: u32,
        peer: u32,
        dst: *mut u8,
        len: usize,
        _desc: usize,
        offset: u64,
    ) -> std::result::Result<(), LoopError> {
        let kind = Kind::Read {
            dst: dst as usize,
            len,
            offset,
        };
        Ok(self.fabric.post(self.rank, peer, Some(op), kind)?)
    }

    fn poll(&self, mut each: impl FnMut(OpEnd)) -> std::result::Result<Polled, LoopError> {
        // Taken out of the fabric first: `each` posts (reposted receives,
        // a Long's header), which takes the fabric's lock again.
        let done = self.fabric.progress(self.rank);
        let events = done.len();
        for d in done {
            each(match d.result {
                Ok(len) => OpEnd::Done { op: d.op, len },
                Err(why) => OpEnd::Failed {
                    op: d.op,
                    cancelled: false,
                    why,
                },
            });
        }
        Ok(Polled {
            events,
            again: false,
        })
    }

    fn atomics_offload(&self, _ty: AtomicType, _ops: OpSet) -> bool {
        false
    }

    fn atomic_plan(&self, req: &AtomicRequest) -> Result<()> {
        Err(Error::Failed(format!(
            "loopback: remote atomics are not offloaded ({:?} on {:?})",
            req.op, req.ty
        )))
    }

    unsafe fn post_atomic(
        &self,
        _op: u32,
        req: &AtomicRequest,
        _plan: (),
        _buf: *mut u8,
        _desc: usize,
    ) -> std::result::Result<(), LoopError> {
        Err(LoopError::Failed(format!(
            "loopback: remote atomics are not offloaded ({:?} on {:?})",
            req.op, req.ty
        )))
    }
}

/// Set up a job of `cfg.fabric.size()` ranks, one thread each (setup is
/// collective), with segments of `segment_len` bytes; the conduits in
/// rank order, or the first rank's error.
pub fn start(cfg: &LoopConfig, segment_len: usize) -> Result<Vec<NetConduit<Loopback>>> {
    static JOBS: AtomicU32 = AtomicU32::new(0);
    let size = cfg.fabric.size() as u32;
    let job = format!(
        "loop{}x{}",
        std::process::id(),
        // Relaxed: only uniqueness matters.
        JOBS.fetch_add(1, Ordering::Relaxed)
    );
    let smp = SmpConfig {
        depth: 8,
        max_medium: 1024,
        segment_len,
    };
    let threads: Vec<_> = ThreadBootstrap::job(size)
        .into_iter()
        .map(|boot| {
            let env = JobEnv {
                rank: boot.rank(),
                size,
                socket: None,
                job: job.clone(),
                polite: true,
            };
            let cfg = cfg.clone();
            std::thread::spawn(move || {
                let node = Arc::new(SmpConduit::new_node(&env, Box::new(boot), smp)?);
                let locality = rgex_core::Conduit::locality(&*node).without_shm();
                NetConduit::<Loopback>::new(node, cfg, locality)
            })
        })
        .collect();
    let mut out = Vec::with_capacity(size as usize);
    let mut first_err = None;
    for t in threads {
        match t.join() {
            Ok(Ok(c)) => out.push(c),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(Error::Failed(
                    "loopback: a rank's setup thread panicked".into(),
                ));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
