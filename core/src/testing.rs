//! The shared test conduit (feature `testing`): [`Recorder`], a conduit
//! in one process that records every step of the SPI it is driven
//! through, for the unit tests of the layers above (core's injection
//! path, the node-local bypass, the override points of VIS and
//! collectives). It delivers no AM; every peer's segment is one buffer of
//! its own, so what a native vector transfer or RMA moves can be checked.
//!
//! ```
//! use rgex_core::testing::{Recorder, RecorderConfig, Step};
//! use rgex_core::{Category, Conduit, Direction, Prepare, Rank};
//!
//! let c = Recorder::new(RecorderConfig::default());
//! let spec = Prepare {
//!     peer: Rank(1),
//!     dir: Direction::Request,
//!     category: Category::Medium,
//!     nargs: 1,
//!     least: 2,
//!     most: 2,
//!     long_offset: 0,
//! };
//! c.try_send(&spec, 70, &[5], b"hi").unwrap();
//! assert_eq!(c.steps()[0], Step::Prepare { most: 2 });
//! ```

use crate::bootstrap::SingleRank;
use crate::conduit::{AtomicType, Chunk, CollKind, OpSet};
use crate::{
    Bootstrap, Claim, Conduit, Delivery, Error, Locality, OpCounter, PollSet, Prepare, Rank,
    Result, Segment, SendSlot,
};
use parking_lot::Mutex;
use std::ptr::NonNull;
use std::sync::Arc;

/// Bytes of the recorder's one send buffer.
pub const SEND_BUFFER: usize = 16;

/// What the recorder was asked to do, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A claim of `most` bytes.
    Prepare {
        /// The claim's `most`.
        most: usize,
    },
    /// A committed message.
    Commit {
        /// Handler index.
        handler: u8,
        /// Its arguments.
        args: Vec<u32>,
        /// Its payload, as the send buffer held it.
        payload: Vec<u8>,
    },
    /// A cancelled claim.
    Cancel,
    /// A poll (which delivers nothing).
    Poll,
    /// A native vector put ([`Conduit::try_putv`]).
    PutV {
        /// Target.
        peer: Rank,
        /// Chunks in the vector.
        chunks: usize,
        /// Bytes in all.
        bytes: usize,
    },
    /// A native vector get ([`Conduit::try_getv`]).
    GetV {
        /// Source.
        peer: Rank,
        /// Chunks in the vector.
        chunks: usize,
        /// Bytes in all.
        bytes: usize,
    },
    /// A native barrier over these members.
    Barrier {
        /// The team's world ranks.
        members: Vec<Rank>,
    },
    /// A native put-with-signal ([`Conduit::try_put_signal`]).
    PutSignal {
        /// Target.
        peer: Rank,
        /// The data's offset.
        offset: u64,
        /// Its bytes.
        len: usize,
        /// The signal.
        signal: crate::Signal,
    },
    /// A native broadcast.
    Broadcast {
        /// The root's team index.
        root: u32,
        /// Bytes broadcast.
        len: usize,
    },
}

/// How a [`Recorder`] behaves.
#[derive(Clone, Debug)]
pub struct RecorderConfig {
    /// Ranks in the job; the recorder is rank 0.
    pub size: u32,
    /// Claims are refused as would-block.
    pub busy: bool,
    /// Claims are refused without saying why.
    pub mute: bool,
    /// It says it is a network: native RMA and atomics offload for every
    /// peer, and every peer is gone ("the recorder lost rank N").
    pub network: bool,
    /// It runs VIS itself ([`Conduit::vis_native`]) for every peer.
    pub native_vis: bool,
    /// It runs barriers and broadcasts itself ([`Conduit::coll_native`]).
    pub native_coll: bool,
    /// It carries put-with-signal itself ([`Conduit::put_signal_native`])
    /// for every peer.
    pub native_signal: bool,
    /// Bytes of the segment (every peer's: one buffer).
    pub segment_len: usize,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        RecorderConfig {
            size: 2,
            busy: false,
            mute: false,
            network: false,
            native_vis: false,
            native_coll: false,
            native_signal: false,
            segment_len: 4096,
        }
    }
}

/// The recording conduit (see the module docs).
pub struct Recorder {
    cfg: RecorderConfig,
    buf: Mutex<[u8; SEND_BUFFER]>,
    steps: Mutex<Vec<Step>>,
    /// The segment's memory, in words so that it is 8-byte aligned.
    _memory: Box<[u64]>,
    seg: Segment,
    locality: Locality,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("cfg", &self.cfg).finish()
    }
}

impl Recorder {
    /// A recorder behaving as `cfg` says.
    pub fn new(cfg: RecorderConfig) -> Self {
        let mut memory = vec![0u64; cfg.segment_len.div_ceil(8)].into_boxed_slice();
        let base = NonNull::new(memory.as_mut_ptr().cast::<u8>()).expect("a boxed slice's address");
        // SAFETY: the memory is owned by the recorder, which the segment's
        // users borrow, and is not moved (a boxed slice's heap address is
        // stable).
        let seg = unsafe { Segment::from_raw(Rank(0), base, cfg.segment_len) };
        let locality =
            Locality::alone(Rank(0), cfg.size).expect("rank 0 is in a job of one or more");
        Recorder {
            cfg,
            buf: Mutex::new([0; SEND_BUFFER]),
            steps: Mutex::new(Vec::new()),
            _memory: memory,
            seg,
            locality,
        }
    }

    /// Every step so far.
    pub fn steps(&self) -> Vec<Step> {
        self.steps.lock().clone()
    }

    fn record(&self, step: Step) {
        self.steps.lock().push(step);
    }

    /// The segment's bytes at `offset..offset + len`.
    pub fn segment_bytes(&self, offset: usize, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        self.seg
            .read(offset as u64, &mut out)
            .expect("a range inside the recorder's segment");
        out
    }
}

impl Conduit for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn rank(&self) -> Rank {
        Rank(0)
    }
    fn size(&self) -> u32 {
        self.cfg.size
    }
    fn locality(&self) -> &Locality {
        &self.locality
    }
    fn segment(&self) -> &Segment {
        &self.seg
    }
    fn segment_len(&self, _peer: Rank) -> u64 {
        self.cfg.segment_len as u64
    }
    fn max_medium(&self, _peer: Rank, _nargs: usize) -> usize {
        SEND_BUFFER
    }
    fn try_prepare(&self, spec: &Prepare, refused: &mut Option<Error>) -> Option<Claim> {
        self.record(Step::Prepare { most: spec.most });
        if self.cfg.mute {
            return None;
        }
        if self.cfg.busy {
            *refused = Some(Error::WouldBlock {
                peer: spec.peer,
                resource: "the recorder's one buffer",
            });
            return None;
        }
        Some(Claim::new(self.buf.data_ptr().cast(), 7))
    }
    unsafe fn commit(&self, slot: SendSlot, handler: u8, args: &[u32], len: usize) {
        assert_eq!(slot.cookie, 7, "the claim's ticket reaches commit");
        let payload = self.buf.lock()[..len].to_vec();
        self.record(Step::Commit {
            handler,
            args: args.to_vec(),
            payload,
        });
    }
    unsafe fn cancel(&self, _slot: SendSlot) {
        self.record(Step::Cancel);
    }
    fn poll(&self, _set: PollSet, _sink: &mut dyn FnMut(&Delivery<'_>)) -> usize {
        self.record(Step::Poll);
        0
    }
    fn peer_gone(&self, peer: Rank) -> Option<String> {
        self.cfg
            .network
            .then(|| format!("the recorder lost {peer}"))
    }
    fn bootstrap(&self) -> &dyn Bootstrap {
        &SingleRank
    }
    fn rma_native(&self, _peer: Rank) -> bool {
        self.cfg.network
    }
    fn atomic_offload(&self, _ty: AtomicType, _ops: OpSet) -> bool {
        self.cfg.network
    }
    fn vis_native(&self, _peer: Rank) -> bool {
        self.cfg.native_vis
    }
    /// Copies every chunk into the one segment at once (complete on
    /// return: nothing counted).
    unsafe fn try_putv(
        &self,
        peer: Rank,
        chunks: &[Chunk],
        _lc: &Arc<OpCounter>,
        _rc: &Arc<OpCounter>,
    ) -> Result<()> {
        for c in chunks {
            // SAFETY: the caller keeps each source readable for `len`
            // bytes (try_putv's contract).
            let src = unsafe { std::slice::from_raw_parts(c.local.cast_const(), c.len) };
            self.seg.write(c.offset, src)?;
        }
        self.record(Step::PutV {
            peer,
            chunks: chunks.len(),
            bytes: chunks.iter().map(|c| c.len).sum(),
        });
        Ok(())
    }
    /// Copies every chunk out of the one segment at once.
    unsafe fn try_getv(&self, peer: Rank, chunks: &[Chunk], _done: &Arc<OpCounter>) -> Result<()> {
        for c in chunks {
            // SAFETY: the caller keeps each destination valid and ours for
            // `len` bytes (try_getv's contract).
            let dst = unsafe { std::slice::from_raw_parts_mut(c.local, c.len) };
            self.seg.read(c.offset, dst)?;
        }
        self.record(Step::GetV {
            peer,
            chunks: chunks.len(),
            bytes: chunks.iter().map(|c| c.len).sum(),
        });
        Ok(())
    }
    fn put_signal_native(&self, _peer: Rank) -> bool {
        self.cfg.native_signal
    }
    /// Writes the data into the one segment, then applies the signal to
    /// its word there (complete on return: nothing counted).
    unsafe fn try_put_signal(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        signal: &crate::Signal,
        _lc: &Arc<OpCounter>,
        _rc: &Arc<OpCounter>,
    ) -> Result<()> {
        // SAFETY: the caller keeps the source readable for `len` bytes
        // (try_put_signal's contract).
        let data = unsafe { std::slice::from_raw_parts(src, len) };
        self.seg.write(offset, data)?;
        let word = self.seg.ptr_at(signal.offset, 8)?;
        // SAFETY: 8 bytes inside the segment (checked), 8-aligned (the
        // caller checked the offset; the memory is in words).
        signal.apply_to(unsafe { std::sync::atomic::AtomicU64::from_ptr(word.cast()) });
        self.record(Step::PutSignal {
            peer,
            offset,
            len,
            signal: *signal,
        });
        Ok(())
    }
    fn coll_native(&self, _kind: CollKind, _members: &[Rank]) -> bool {
        self.cfg.native_coll
    }
    fn barrier_native(&self, members: &[Rank]) -> Result<()> {
        self.record(Step::Barrier {
            members: members.to_vec(),
        });
        Ok(())
    }
    /// The root's bytes are this rank's: the recorder is every member.
    fn broadcast_native(&self, _members: &[Rank], root: u32, data: &mut Vec<u8>) -> Result<()> {
        self.record(Step::Broadcast {
            root,
            len: data.len(),
        });
        Ok(())
    }
}
