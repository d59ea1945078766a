//! The ibv transport driven directly, as the kit drives it, on the
//! software device: two ranks in one process, each with its own device
//! context, segment and kit buffers. What a conduit test cannot provoke
//! (the kit checks bounds before it posts): a remote access error and a
//! dead peer, each failing the operations to that peer, naming it and the
//! operation, while the other QP keeps working; and the transport's own
//! bookkeeping: send-queue occupancy as would-block, CAS loops, inline
//! sends into the shared receive queue.

use rgex_core::atomic::{AtomicOp, AtomicRequest, AtomicType};
use rgex_core::{Rank, Segment};
use rgex_ibv::soft::SoftVerbs;
use rgex_ibv::{Ibv, IbvConfig};
use rgex_net::{Area, Geometry, NetConfig, OpEnd, PostError, Setup, Transport};
use std::ptr::NonNull;
use std::time::Duration;

type T = Ibv<SoftVerbs>;

/// Polls before a wait gives up (a failure, never a hang): with the
/// 1 ms naps below, well over the device's retry time in these tests.
const POLLS: usize = 20_000;

/// Memory the device writes through raw pointers: allocated once, only
/// ever touched through `ptr`.
struct Mem {
    ptr: *mut u8,
    len: usize,
    _buf: Box<[u64]>,
}

impl Mem {
    fn new(len: usize) -> Mem {
        let mut b = vec![0u64; len.div_ceil(8)].into_boxed_slice();
        Mem {
            ptr: b.as_mut_ptr().cast(),
            len,
            _buf: b,
        }
    }

    fn word(&self, at: usize) -> u64 {
        assert!(at + 8 <= self.len && at.is_multiple_of(8));
        // SAFETY: in bounds and aligned (checked); the device writes it only
        // for operations that completed before this read.
        unsafe { std::ptr::read_volatile(self.ptr.add(at).cast::<u64>()) }
    }

    fn set_word(&self, at: usize, v: u64) {
        assert!(at + 8 <= self.len && at.is_multiple_of(8));
        // SAFETY: as in `word`; no operation on it is in flight.
        unsafe { std::ptr::write_volatile(self.ptr.add(at).cast::<u64>(), v) }
    }
}

/// One rank: its transport (dropped first) and the memory it registered.
struct Node {
    t: T,
    seg: Mem,
    send: Mem,
    _recv: Mem,
    geo: Geometry,
}

const SEG: usize = 1 << 16;

/// Open `size` ranks under `cfg` and connect them all to all.
fn job(size: usize, cfg: &IbvConfig) -> Vec<Node> {
    let geo = Geometry::new(size, &cfg.settings());
    let mut opened: Vec<(T, Vec<u8>, Mem, Mem, Mem)> = (0..size)
        .map(|r| {
            let seg = Mem::new(SEG);
            let send = Mem::new(geo.n_send() * geo.slot + 64);
            let recv = Mem::new(geo.n_recv * geo.slot);
            // SAFETY: `seg` lives in the Node with the transport, which is
            // dropped first.
            let segment =
                unsafe { Segment::from_raw(Rank(r as u32), NonNull::new(seg.ptr).unwrap(), SEG) };
            let setup = Setup {
                rank: Rank(r as u32),
                geo: &geo,
                segment: &segment,
                send: (send.ptr, send.len),
                recv: (recv.ptr, recv.len),
            };
            // SAFETY: the areas outlive the transport (the Node's field order).
            let (t, card) = unsafe { T::open(cfg, &setup) }.unwrap();
            (t, card, seg, send, recv)
        })
        .collect();
    let cards: Vec<Vec<u8>> = opened.iter().map(|o| o.1.clone()).collect();
    for o in &mut opened {
        o.0.connect(&cards).unwrap();
    }
    opened
        .into_iter()
        .map(|(t, _, seg, send, recv)| Node {
            t,
            seg,
            send,
            _recv: recv,
            geo,
        })
        .collect()
}

/// Poll every rank until `node` reported an event for each of `ops`;
/// returns them in the order of `ops`.
fn wait_all(nodes: &[Node], node: usize, ops: &[u32]) -> Vec<OpEnd> {
    let mut found: Vec<Option<OpEnd>> = ops.iter().map(|_| None).collect();
    for _ in 0..POLLS {
        for (i, n) in nodes.iter().enumerate() {
            n.t.poll(|e| {
                let id = match &e {
                    OpEnd::Done { op, .. } | OpEnd::Failed { op, .. } => *op,
                };
                if let Some(k) = ops.iter().position(|&o| o == id).filter(|_| i == node) {
                    assert!(found[k].is_none(), "two completions for operation {id}");
                    found[k] = Some(e);
                }
            })
            .unwrap();
        }
        if found.iter().all(Option::is_some) {
            return found.into_iter().map(Option::unwrap).collect();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("no completion for some of operations {ops:?} on rank {node} after {POLLS} polls");
}

/// Poll every rank until `node` reports an event for `op`.
fn wait_for(nodes: &[Node], node: usize, op: u32) -> OpEnd {
    wait_all(nodes, node, &[op]).pop().expect("one event")
}

/// Write 8 bytes from `node`'s send buffer to `peer`'s segment at `offset`.
fn write8(n: &Node, op: u32, peer: u32, offset: u64) -> Result<(), rgex_ibv::IbvError> {
    // SAFETY: the send buffer is registered (its desc) and stays put; the
    // caller polls for the completion before reusing it.
    unsafe {
        n.t.post_write(op, peer, n.send.ptr, 8, n.t.desc(Area::Send), offset, false)
    }
}

/// Open one rank alone on backend `V` under `cfg` (and close it): its
/// setup error, if any.
fn open_alone<V: rgex_ibv::verbs::Verbs>(cfg: &IbvConfig) -> Result<(), String>
where
    Ibv<V>: Transport<Config = IbvConfig>,
{
    let geo = Geometry::new(1, &cfg.settings());
    let seg = Mem::new(SEG);
    let send = Mem::new(geo.n_send() * geo.slot + 64);
    let recv = Mem::new(geo.n_recv * geo.slot);
    // SAFETY: the memory outlives the transport, dropped before return.
    let segment = unsafe { Segment::from_raw(Rank(0), NonNull::new(seg.ptr).unwrap(), SEG) };
    let setup = Setup {
        rank: Rank(0),
        geo: &geo,
        segment: &segment,
        send: (send.ptr, send.len),
        recv: (recv.ptr, recv.len),
    };
    // SAFETY: as above.
    unsafe { Ibv::<V>::open(cfg, &setup) }
        .map(drop)
        .map_err(|e| e.to_string())
}

fn soft() -> IbvConfig {
    IbvConfig {
        device: Some("soft".into()),
        ..IbvConfig::default()
    }
}

#[test]
fn a_remote_access_error_fails_that_peer_naming_it_and_spares_the_others() {
    let nodes = job(3, &soft());
    let n0 = &nodes[0];
    // Past the end of rank 1's segment: the target's rkey check refuses it.
    write8(n0, 7, 1, SEG as u64 + 64).unwrap();
    let OpEnd::Failed { why, cancelled, .. } = wait_for(&nodes, 0, 7) else {
        panic!("a write outside the segment succeeded");
    };
    assert!(!cancelled);
    assert!(
        why.contains("RDMA write from rank 0 to rank 1 failed: IBV_WC_REM_ACCESS_ERR"),
        "{why}"
    );
    // The QP to rank 1 is in error: a later post fails at once, naming the
    // peer, the operation and the first failure; never would-block.
    let e = write8(n0, 8, 1, 0).unwrap_err();
    assert!(!e.is_again());
    let msg = rgex_core::Error::from(e).to_string();
    assert!(
        msg.contains("RDMA write from rank 0 to rank 1")
            && msg.contains("unreachable")
            && msg.contains("IBV_WC_REM_ACCESS_ERR"),
        "{msg}"
    );
    // The QP to itself and the QPs to and from rank 2 still work (the
    // connection with rank 1 is gone both ways: an RC QP pair).
    n0.send.set_word(0, 0xfeed);
    write8(n0, 9, 0, 128).unwrap();
    write8(n0, 10, 2, 128).unwrap();
    let done = wait_all(&nodes, 0, &[9, 10]);
    assert!(
        done.iter().all(|e| matches!(e, OpEnd::Done { .. })),
        "{done:?}"
    );
    assert_eq!(n0.seg.word(128), 0xfeed);
    assert_eq!(nodes[2].seg.word(128), 0xfeed);
    let n2 = &nodes[2];
    n2.send.set_word(0, 0xbeef);
    write8(n2, 3, 0, 256).unwrap();
    assert!(matches!(wait_for(&nodes, 2, 3), OpEnd::Done { .. }));
    assert_eq!(n0.seg.word(256), 0xbeef);
}

#[test]
fn a_dead_peer_fails_with_retry_exceeded_naming_it() {
    // About 1 ms per try and one retry, so the test ends quickly.
    let cfg = IbvConfig {
        qp_timeout: 8,
        retry_count: 1,
        ..soft()
    };
    let nodes = job(2, &cfg);
    nodes[1].t.device().kill();
    write8(&nodes[0], 5, 1, 0).unwrap();
    let OpEnd::Failed { why, .. } = wait_for(&nodes, 0, 5) else {
        panic!("a write to a dead device succeeded");
    };
    assert!(
        why.contains("to rank 1 failed: IBV_WC_RETRY_EXC_ERR"),
        "{why}"
    );
}

#[test]
fn a_full_send_queue_is_would_block_until_completions_free_it() {
    let cfg = IbvConfig {
        sq_depth: 2,
        ..soft()
    };
    let nodes = job(2, &cfg);
    let n0 = &nodes[0];
    write8(n0, 1, 1, 0).unwrap();
    write8(n0, 2, 1, 8).unwrap();
    let e = write8(n0, 3, 1, 16).unwrap_err();
    assert!(e.is_again(), "{e}");
    // Another peer's queue is its own.
    write8(n0, 4, 0, 0).unwrap();
    let done = wait_all(&nodes, 0, &[1, 2, 4]);
    assert!(
        done.iter().all(|e| matches!(e, OpEnd::Done { .. })),
        "{done:?}"
    );
    write8(n0, 3, 1, 16).unwrap();
    assert!(matches!(wait_for(&nodes, 0, 3), OpEnd::Done { .. }));
}

#[test]
fn set_and_swap_loop_until_their_swap_takes_and_fetch_the_old_value() {
    let nodes = job(2, &soft());
    let (n0, n1) = (&nodes[0], &nodes[1]);
    assert!(n0.t.atomics_offload(
        AtomicType::U64,
        rgex_core::atomic::OpSet::of(&[AtomicOp::Swap, AtomicOp::Fadd, AtomicOp::Get])
    ));
    n1.seg.set_word(64, 7);
    let slot = n0.geo.pools[0] * n0.geo.slot; // an RMA-pool buffer, 64-aligned
    let buf = n0.send.ptr.wrapping_add(slot);
    let run = |op: AtomicOp, a: u64, id: u32| -> u64 {
        let req = AtomicRequest {
            target: Rank(1),
            offset: 64,
            ty: AtomicType::U64,
            op,
            operand1: a,
            operand2: 0,
            acquire: false,
            release: false,
        };
        let plan = n0.t.atomic_plan(&req).unwrap();
        // SAFETY: 24 bytes of a registered send buffer, held until the
        // completion, which `wait_for` waits for.
        unsafe { n0.t.post_atomic(id, &req, plan, buf, n0.t.desc(Area::Send)) }.unwrap();
        assert!(matches!(wait_for(&nodes, 0, id), OpEnd::Done { .. }));
        n0.send.word(slot + 16)
    };
    // The first guess (0) misses: the loop retries with 7 and takes.
    assert_eq!(run(AtomicOp::Swap, 42, 20), 7);
    assert_eq!(n1.seg.word(64), 42);
    assert_eq!(run(AtomicOp::Fsub, 2, 21), 42);
    assert_eq!(run(AtomicOp::Get, 0, 22), 40);
    assert_eq!(run(AtomicOp::Set, 5, 23), 40);
    assert_eq!(n1.seg.word(64), 5);
    let err =
        n0.t.atomic_plan(&AtomicRequest {
            target: Rank(1),
            offset: 64,
            ty: AtomicType::U32,
            op: AtomicOp::Fadd,
            operand1: 1,
            operand2: 0,
            acquire: false,
            release: false,
        })
        .unwrap_err();
    assert!(
        err.to_string().contains("does not offload Fadd on U32"),
        "{err}"
    );
}

#[test]
fn an_inline_send_lands_in_the_shared_receive_queue() {
    let nodes = job(2, &soft());
    let (n0, n1) = (&nodes[0], &nodes[1]);
    assert!(n0.t.caps().inject_size >= 64);
    let recv = Mem::new(n1.geo.slot);
    // SAFETY: `recv` lies in no registered area, so register it; it lives
    // until the end of the test, after the receive completed.
    let mr = unsafe { n1.t.register(recv.ptr, recv.len) }.unwrap();
    // SAFETY: as above; operation 0 is unused.
    unsafe { n1.t.post_recv(0, recv.ptr, recv.len, n1.t.region_desc(&mr)) }.unwrap();
    let msg: Vec<u8> = (0..48u8).collect();
    // SAFETY: inline: the bytes are copied before the call returns.
    unsafe { n0.t.inject(1, msg.as_ptr(), msg.len()) }.unwrap();
    let OpEnd::Done { len, .. } = wait_for(&nodes, 1, 0) else {
        panic!("the receive failed");
    };
    assert_eq!(len, msg.len());
    // SAFETY: the receive completed into `recv`'s first `len` bytes.
    let got = unsafe { std::slice::from_raw_parts(recv.ptr, len) };
    assert_eq!(got, &msg[..]);
    drop(mr);
}

#[test]
fn without_an_rdma_device_ibv_says_so_and_names_the_software_device() {
    match open_alone::<rgex_ibv::real::RealVerbs>(&IbvConfig::default()) {
        Ok(()) => {
            println!("skip: an RDMA device is present, so there is no 'no device' error to check")
        }
        Err(e) => assert!(
            e.contains("no RDMA device") && e.contains("set RGEX_IBV_DEVICE=soft"),
            "{e}"
        ),
    }
}

#[test]
fn the_software_backend_refuses_a_config_that_does_not_select_it() {
    let cfg = IbvConfig {
        device: Some("mlx5_0".into()),
        ..IbvConfig::default()
    };
    let e = open_alone::<SoftVerbs>(&cfg).unwrap_err();
    assert!(
        e.contains("RGEX_IBV_DEVICE=\"mlx5_0\"") && e.contains("soft backend"),
        "{e}"
    );
    // And it opens where it is selected.
    open_alone::<SoftVerbs>(&soft()).unwrap();
}
