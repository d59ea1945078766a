//! The software verbs device's semantics, each failing as an HCA fails:
//! state rules, queue depths, CQ overrun, inline limit, RNR, remote and
//! local protection, flushing, in-order delivery, atomics, transport
//! retries under drops and dead peers, in one process and across two.

use rgex_ibv::soft::{
    Faults, SoftCq, SoftMr, SoftPd, SoftQp, SoftSrq, SoftVerbs, FAULTS_ENV, WIRE_ENV,
};
use rgex_ibv::verbs::*;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether this run's devices use the UDP wire (`RGEX_IBV_SOFT_WIRE=udp`:
/// CI runs this whole file on each wire).
fn udp_wire() -> bool {
    std::env::var(WIRE_ENV).as_deref() == Ok("udp")
}

/// Every wait in these tests gives up after this long (a failure, never a hang).
const PATIENCE: Duration = Duration::from_secs(20);

const ALL: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_WRITE)
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_ATOMIC);

/// A context with a PD, one CQ, an optional SRQ and a registered buffer.
struct Node {
    dev: SoftVerbs,
    pd: SoftPd,
    cq: SoftCq,
    srq: Option<SoftSrq>,
    buf: Vec<u64>,
    /// The buffer's address, taken once (the device writes through it).
    base: u64,
    mr: Option<SoftMr>,
}

impl Node {
    fn new(words: usize, access: Access, cq_depth: u32, srq: bool) -> Node {
        let dev = SoftVerbs::open(&DeviceChoice::default()).unwrap();
        let pd = dev.alloc_pd().unwrap();
        let cq = dev.create_cq(cq_depth).unwrap();
        let srq = srq.then(|| dev.create_srq(&pd, 64).unwrap());
        let mut n = Node {
            dev,
            pd,
            cq,
            srq,
            buf: vec![0; words],
            base: 0,
            mr: None,
        };
        n.base = n.buf.as_mut_ptr() as u64;
        // SAFETY: the buffer lives in the node, which outlives the region
        // (fields drop in declaration order only after `mr` is taken below;
        // Drop for Node takes it first).
        n.mr =
            Some(unsafe { n.dev.reg_mr(&n.pd, n.addr() as *mut u8, words * 8, access) }.unwrap());
        n
    }

    fn addr(&self) -> u64 {
        self.base
    }

    fn key(&self) -> u32 {
        SoftVerbs::lkey(self.mr.as_ref().unwrap())
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: a Vec<u64>'s storage viewed as bytes.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr().cast(), self.buf.len() * 8) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_mut_ptr().cast(), self.buf.len() * 8) }
    }

    fn qp(&self, max_send: u32, inline: u32) -> SoftQp {
        let caps = QpCaps {
            max_send_wr: max_send,
            max_recv_wr: 16,
            max_inline_data: inline,
        };
        self.dev
            .create_qp(&self.pd, &self.cq, &self.cq, self.srq.as_ref(), &caps)
            .unwrap()
    }

    fn sge(&self, off: usize, len: u32) -> Sge {
        Sge {
            addr: self.addr() + off as u64,
            length: len,
            lkey: self.key(),
        }
    }

    fn remote(&self, off: usize) -> RemoteAddr {
        RemoteAddr {
            addr: self.addr() + off as u64,
            rkey: self.key(),
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.mr.take();
    }
}

#[derive(Clone, Copy)]
struct Timers {
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
    min_rnr_timer: u8,
}

const PATIENT: Timers = Timers {
    timeout: 14,
    retry_cnt: 7,
    rnr_retry: 7,
    min_rnr_timer: 1,
};

/// A short ACK timeout (about 4 ms), for lossy paths.
const QUICK: Timers = Timers {
    timeout: 10,
    ..PATIENT
};

/// Bring `qp` of `dev` to RTS, connected to QP `dqpn` of the device with `dgid`.
fn connect(dev: &SoftVerbs, qp: &SoftQp, dgid: Gid, dqpn: u32, t: Timers) {
    dev.modify_qp(qp, &QpTransition::Init { access: ALL })
        .unwrap();
    dev.modify_qp(
        qp,
        &QpTransition::Rtr(RtrAttr {
            mtu: Mtu::M1024,
            dest_qp_num: dqpn,
            rq_psn: 0x00ff_fff0, // wraps within the first messages
            dlid: 0,
            dgid: Some(dgid),
            max_dest_rd_atomic: 16,
            min_rnr_timer: t.min_rnr_timer,
        }),
    )
    .unwrap();
    dev.modify_qp(
        qp,
        &QpTransition::Rts(RtsAttr {
            sq_psn: 0x00ff_fff0,
            timeout: t.timeout,
            retry_cnt: t.retry_cnt,
            rnr_retry: t.rnr_retry,
            max_rd_atomic: 16,
        }),
    )
    .unwrap();
}

/// Two nodes with a connected QP each (`a` the initiator in most tests).
fn pair(t: Timers, b_srq: bool) -> (Node, SoftQp, Node, SoftQp) {
    let a = Node::new(4096, ALL, 64, false);
    let b = Node::new(4096, ALL, 64, b_srq);
    let qa = a.qp(16, 64);
    let qb = b.qp(16, 64);
    connect(&a.dev, &qa, b.dev.gid(), SoftVerbs::qp_num(&qb), t);
    connect(&b.dev, &qb, a.dev.gid(), SoftVerbs::qp_num(&qa), t);
    (a, qa, b, qb)
}

/// Poll `n`'s CQ until `want` completions arrived, running `others`'
/// engines meanwhile; panics after PATIENCE.
fn wait(n: &Node, others: &[&SoftVerbs], want: usize) -> Vec<Wc> {
    let mut got = Vec::new();
    let mut out = [Wc::EMPTY; 8];
    let end = Instant::now() + PATIENCE;
    while got.len() < want {
        assert!(
            Instant::now() < end,
            "only {} of {want} completions: {got:?}",
            got.len()
        );
        let k = n.dev.poll_cq(&n.cq, &mut out).unwrap();
        got.extend_from_slice(&out[..k]);
        for o in others {
            o.progress();
        }
        if k == 0 {
            std::thread::yield_now();
        }
    }
    got
}

fn wr(wr_id: u64, opcode: Opcode, sge: Sge, remote: RemoteAddr) -> SendWr {
    SendWr {
        wr_id,
        opcode,
        flags: SendFlags::SIGNALED,
        sge,
        remote,
    }
}

fn post(n: &Node, qp: &SoftQp, w: SendWr) -> VerbsResult<()> {
    // SAFETY: every SGE in these tests lies in the node's buffer, which
    // outlives the work request.
    unsafe { n.dev.post_send(qp, &w) }
}

fn recv(n: &mut Node, qp: Option<&SoftQp>, wr_id: u64, off: usize, len: u32) -> VerbsResult<()> {
    let w = RecvWr {
        wr_id,
        sge: n.sge(off, len),
    };
    // SAFETY: the SGE lies in the node's buffer.
    unsafe {
        match qp {
            Some(q) => n.dev.post_recv(q, &w),
            None => n.dev.post_srq_recv(n.srq.as_ref().unwrap(), &w),
        }
    }
}

fn errno(r: VerbsResult<()>) -> i32 {
    match r {
        Err(VerbsError::Call { errno, .. }) => errno,
        other => panic!("expected a failed verb, got {other:?}"),
    }
}

#[test]
fn send_with_imm_into_srq_delivers_data_and_immediate() {
    let (mut a, qa, mut b, _qb) = pair(PATIENT, true);
    for i in 0..4 {
        recv(&mut b, None, 100 + i, 1024 * i as usize, 1024).unwrap();
    }
    a.bytes_mut()[..300]
        .iter_mut()
        .enumerate()
        .for_each(|(i, x)| *x = i as u8);
    let s = a.sge(0, 300);
    post(
        &a,
        &qa,
        wr(
            1,
            Opcode::SendWithImm { imm: 0xfeed },
            s,
            RemoteAddr::default(),
        ),
    )
    .unwrap();
    let s = a.sge(0, 10);
    post(&a, &qa, wr(2, Opcode::Send, s, RemoteAddr::default())).unwrap();
    let rc = wait(&b, &[&a.dev], 2);
    assert_eq!(rc[0].wr_id, 100);
    assert_eq!(rc[0].status, WcStatus::Success);
    assert_eq!(rc[0].opcode, WcOpcode::Recv);
    assert_eq!(rc[0].byte_len, 300);
    assert_eq!(rc[0].imm, Some(0xfeed));
    assert_eq!(rc[0].src_qp, SoftVerbs::qp_num(&qa));
    assert_eq!(rc[1].wr_id, 101);
    assert_eq!(rc[1].imm, None);
    assert_eq!(&b.bytes()[..300], &a.bytes()[..300]);
    let sc = wait(&a, &[&b.dev], 2);
    assert_eq!(
        sc.iter()
            .map(|w| (w.wr_id, w.status, w.opcode))
            .collect::<Vec<_>>(),
        [
            (1, WcStatus::Success, WcOpcode::Send),
            (2, WcStatus::Success, WcOpcode::Send)
        ]
    );
}

#[test]
fn write_is_visible_before_a_later_sends_receive_completes() {
    let (mut a, qa, mut b, qb) = pair(PATIENT, false);
    // 20000 bytes at MTU 1024: 20 segments.
    for (i, x) in a.bytes_mut()[..20000].iter_mut().enumerate() {
        *x = (i * 7 % 251) as u8;
    }
    recv(&mut b, Some(&qb), 9, 30000, 64).unwrap();
    let mut w = wr(1, Opcode::RdmaWrite, a.sge(0, 20000), b.remote(0));
    w.flags = SendFlags::empty(); // unsignalled
    post(&a, &qa, w).unwrap();
    let s = a.sge(0, 8);
    post(&a, &qa, wr(2, Opcode::Send, s, RemoteAddr::default())).unwrap();
    // Poll only b's CQ: the moment its receive completes, the write's
    // data must be there.
    let mut out = [Wc::EMPTY; 4];
    let end = Instant::now() + PATIENCE;
    loop {
        assert!(Instant::now() < end, "the send never arrived");
        a.dev.progress();
        if b.dev.poll_cq(&b.cq, &mut out).unwrap() == 1 {
            break;
        }
    }
    assert_eq!(out[0].wr_id, 9);
    assert_eq!(&b.bytes()[..20000], &a.bytes()[..20000]);
    let sc = wait(&a, &[&b.dev], 1);
    assert_eq!(
        (sc[0].wr_id, sc[0].status),
        (2, WcStatus::Success),
        "the unsignalled write completes silently"
    );
}

#[test]
fn send_larger_than_mtu_is_segmented_and_reassembled() {
    let (mut a, qa, mut b, qb) = pair(PATIENT, false);
    for (i, x) in a.bytes_mut()[..9000].iter_mut().enumerate() {
        *x = (i % 253) as u8;
    }
    recv(&mut b, Some(&qb), 1, 8, 9000).unwrap();
    let s = a.sge(0, 9000);
    post(&a, &qa, wr(1, Opcode::Send, s, RemoteAddr::default())).unwrap();
    let rc = wait(&b, &[&a.dev], 1);
    assert_eq!((rc[0].status, rc[0].byte_len), (WcStatus::Success, 9000));
    assert_eq!(&b.bytes()[8..9008], &a.bytes()[..9000]);
}

#[test]
fn rdma_read_and_write_with_imm() {
    let (a, qa, mut b, qb) = pair(PATIENT, false);
    for (i, x) in b.bytes_mut()[..5000].iter_mut().enumerate() {
        *x = (i % 249) as u8 ^ 0x5a;
    }
    let (s, r) = (a.sge(8192, 5000), b.remote(0));
    post(&a, &qa, wr(1, Opcode::RdmaRead, s, r)).unwrap();
    let sc = wait(&a, &[&b.dev], 1);
    assert_eq!(
        (sc[0].status, sc[0].opcode, sc[0].byte_len),
        (WcStatus::Success, WcOpcode::RdmaRead, 5000)
    );
    assert_eq!(&a.bytes()[8192..13192], &b.bytes()[..5000]);

    recv(&mut b, Some(&qb), 77, 0, 0).unwrap();
    let (s, r) = (a.sge(0, 100), b.remote(16384));
    post(&a, &qa, wr(2, Opcode::RdmaWriteWithImm { imm: 42 }, s, r)).unwrap();
    let rc = wait(&b, &[&a.dev], 1);
    assert_eq!(
        (rc[0].wr_id, rc[0].opcode, rc[0].imm, rc[0].byte_len),
        (77, WcOpcode::RecvRdmaWithImm, Some(42), 100)
    );
    assert_eq!(&b.bytes()[16384..16484], &a.bytes()[..100]);
}

#[test]
fn atomics_return_the_old_value_and_swap_only_on_match() {
    let (a, qa, mut b, _qb) = pair(PATIENT, false);
    b.buf[10] = 5;
    let (s, r) = (a.sge(0, 8), b.remote(80));
    post(&a, &qa, wr(1, Opcode::AtomicFetchAndAdd { add: 3 }, s, r)).unwrap();
    wait(&a, &[&b.dev], 1);
    assert_eq!((a.buf[0], b.buf[10]), (5, 8));
    let (s, r) = (a.sge(8, 8), b.remote(80));
    post(
        &a,
        &qa,
        wr(
            2,
            Opcode::AtomicCmpAndSwp {
                compare: 7,
                swap: 100,
            },
            s,
            r,
        ),
    )
    .unwrap();
    let (s, r) = (a.sge(16, 8), b.remote(80));
    post(
        &a,
        &qa,
        wr(
            3,
            Opcode::AtomicCmpAndSwp {
                compare: 8,
                swap: 100,
            },
            s,
            r,
        ),
    )
    .unwrap();
    let sc = wait(&a, &[&b.dev], 2);
    assert_eq!(
        (sc[0].opcode, sc[1].opcode),
        (WcOpcode::CompSwap, WcOpcode::CompSwap)
    );
    assert_eq!((a.buf[1], a.buf[2], b.buf[10]), (8, 8, 100));
}

#[test]
fn concurrent_fetch_and_adds_from_two_qps_are_atomic() {
    const N: u64 = 300;
    let t = Node::new(64, ALL, 64, false);
    let target = t.remote(0);
    let tgid = t.dev.gid();
    // Two initiator contexts, each in its own thread, each with its own
    // QP into the target.
    let qts: Vec<SoftQp> = (0..2).map(|_| t.qp(16, 0)).collect();
    let mut inits: Vec<(Node, SoftQp)> = (0..2)
        .map(|i| {
            let n = Node::new(N as usize, ALL, 64, false);
            let q = n.qp(16, 0);
            connect(&n.dev, &q, tgid, SoftVerbs::qp_num(&qts[i]), PATIENT);
            connect(&t.dev, &qts[i], n.dev.gid(), SoftVerbs::qp_num(&q), PATIENT);
            (n, q)
        })
        .collect();
    let fetched = std::thread::scope(|s| {
        let hs: Vec<_> = inits
            .iter_mut()
            .map(|(n, q)| {
                s.spawn(move || {
                    let (mut posted, mut done) = (0, 0);
                    let mut out = [Wc::EMPTY; 16];
                    let end = Instant::now() + PATIENCE;
                    while done < N {
                        assert!(Instant::now() < end, "{done} of {N} atomics completed");
                        if posted < N {
                            let sge = n.sge(8 * posted as usize, 8);
                            let w = wr(posted, Opcode::AtomicFetchAndAdd { add: 1 }, sge, target);
                            match post(n, q, w) {
                                Ok(()) => posted += 1,
                                Err(e) if e.is_queue_full() => {}
                                Err(e) => panic!("{e}"),
                            }
                        }
                        let k = n.dev.poll_cq(&n.cq, &mut out).unwrap();
                        assert!(out[..k].iter().all(|w| w.status == WcStatus::Success));
                        done += k as u64;
                    }
                    n.buf.clone()
                })
            })
            .collect();
        let end = Instant::now() + PATIENCE;
        while !hs.iter().all(|h| h.is_finished()) {
            assert!(Instant::now() < end, "the initiators did not finish");
            t.dev.progress();
            std::thread::yield_now();
        }
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(t.buf[0], 2 * N, "every add landed exactly once");
    let mut all: Vec<u64> = fetched.concat();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..2 * N).collect::<Vec<_>>(),
        "each add saw a distinct old value"
    );
}

#[test]
fn a_target_that_never_calls_its_device_still_answers() {
    // b's process never calls into its device after connecting: its
    // service thread answers, as an HCA would.
    let (mut a, qa, mut b, _qb) = pair(PATIENT, false);
    b.buf[0] = 77;
    a.buf[0] = 5;
    let (s, r) = (a.sge(0, 8), b.remote(8));
    post(&a, &qa, wr(1, Opcode::RdmaWrite, s, r)).unwrap();
    let (s, r) = (a.sge(16, 8), b.remote(0));
    post(&a, &qa, wr(2, Opcode::RdmaRead, s, r)).unwrap();
    let (s, r) = (a.sge(24, 8), b.remote(16));
    post(&a, &qa, wr(3, Opcode::AtomicFetchAndAdd { add: 9 }, s, r)).unwrap();
    let got = wait(&a, &[], 3);
    assert!(got.iter().all(|w| w.status == WcStatus::Success), "{got:?}");
    assert_eq!((a.buf[2], b.buf[1], b.buf[2]), (77, 5, 9));
    let _ = &mut b;
}

#[test]
fn reset_qps_reconnect_and_work_again() {
    let (mut a, qa, mut b, qb) = pair(PATIENT, false);
    for round in 0..3u64 {
        a.buf[0] = round + 10;
        recv(&mut b, Some(&qb), round, 64, 8).unwrap();
        let s = a.sge(0, 8);
        post(&a, &qa, wr(round, Opcode::Send, s, RemoteAddr::default())).unwrap();
        assert_eq!(wait(&a, &[&b.dev], 1)[0].status, WcStatus::Success);
        assert_eq!(wait(&b, &[&a.dev], 1)[0].wr_id, round);
        assert_eq!(b.buf[8], round + 10);
        for (n, q) in [(&a, &qa), (&b, &qb)] {
            n.dev.modify_qp(q, &QpTransition::Reset).unwrap();
        }
        connect(&a.dev, &qa, b.dev.gid(), SoftVerbs::qp_num(&qb), PATIENT);
        connect(&b.dev, &qb, a.dev.gid(), SoftVerbs::qp_num(&qa), PATIENT);
    }
}

#[test]
fn a_qp_connected_to_itself() {
    let mut a = Node::new(1024, ALL, 16, false);
    let q = a.qp(8, 64);
    connect(&a.dev, &q, a.dev.gid(), SoftVerbs::qp_num(&q), PATIENT);
    a.buf[0] = 0x1122_3344;
    recv(&mut a, Some(&q), 5, 512, 8).unwrap();
    let (s, r) = (a.sge(0, 8), a.remote(256));
    post(&a, &q, wr(1, Opcode::RdmaWrite, s, r)).unwrap();
    let s = a.sge(0, 8);
    post(
        &a,
        &q,
        wr(2, Opcode::SendWithImm { imm: 3 }, s, RemoteAddr::default()),
    )
    .unwrap();
    let got = wait(&a, &[], 3);
    let mut ids: Vec<u64> = got.iter().map(|w| w.wr_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 5]);
    assert_eq!((a.buf[32], a.buf[64]), (0x1122_3344, 0x1122_3344));
}

#[test]
fn posts_in_the_wrong_state_fail_einval() {
    let mut a = Node::new(64, ALL, 16, false);
    let b = Node::new(64, ALL, 16, false);
    let q = a.qp(4, 16);
    let qb = b.qp(4, 16);
    let s = a.sge(0, 8);
    let w = wr(1, Opcode::Send, s, RemoteAddr::default());
    assert_eq!(errno(post(&a, &q, w)), libc::EINVAL, "RESET");
    assert_eq!(
        errno(recv(&mut a, Some(&q), 1, 0, 8)),
        libc::EINVAL,
        "recv in RESET"
    );
    let rts = QpTransition::Rts(RtsAttr {
        sq_psn: 0,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
    });
    assert_eq!(
        errno(a.dev.modify_qp(&q, &rts)),
        libc::EINVAL,
        "RESET to RTS"
    );
    a.dev
        .modify_qp(&q, &QpTransition::Init { access: ALL })
        .unwrap();
    assert_eq!(errno(post(&a, &q, w)), libc::EINVAL, "INIT");
    recv(&mut a, Some(&q), 1, 0, 8).unwrap();
    assert_eq!(
        errno(a.dev.modify_qp(&q, &QpTransition::Init { access: ALL })),
        libc::EINVAL
    );
    connect_rtr_only(&a, &q, b.dev.gid(), SoftVerbs::qp_num(&qb));
    assert_eq!(errno(post(&a, &q, w)), libc::EINVAL, "RTR");
    assert_eq!(a.dev.qp_state(&q).unwrap(), QpState::Rtr);
    a.dev.modify_qp(&q, &QpTransition::Err).unwrap();
    // In ERR a post is accepted and flushed, as on an HCA.
    post(&a, &q, w).unwrap();
    let got = wait(&a, &[], 2);
    assert_eq!(
        got.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        [(1, WcStatus::WrFlushErr), (1, WcStatus::WrFlushErr)],
        "the receive posted in INIT, then the send, flushed"
    );
    a.dev.modify_qp(&q, &QpTransition::Reset).unwrap();
    assert_eq!(a.dev.qp_state(&q).unwrap(), QpState::Reset);
    assert_eq!(errno(post(&a, &q, w)), libc::EINVAL, "RESET again");
}

fn connect_rtr_only(a: &Node, q: &SoftQp, gid: Gid, qpn: u32) {
    a.dev
        .modify_qp(
            q,
            &QpTransition::Rtr(RtrAttr {
                mtu: Mtu::M1024,
                dest_qp_num: qpn,
                rq_psn: 0,
                dlid: 0,
                dgid: Some(gid),
                max_dest_rd_atomic: 1,
                min_rnr_timer: 1,
            }),
        )
        .unwrap();
}

#[test]
fn inline_over_max_is_einval_and_inline_is_copied_at_post() {
    let (mut a, qa, mut b, qb) = pair(PATIENT, false);
    let mut w = wr(1, Opcode::Send, a.sge(0, 65), RemoteAddr::default());
    w.flags |= SendFlags::INLINE;
    assert_eq!(errno(post(&a, &qa, w)), libc::EINVAL);
    let mut w = wr(
        2,
        Opcode::Send,
        a.sge(0, 64),
        RemoteAddr { addr: 0, rkey: 0 },
    );
    w.flags |= SendFlags::INLINE;
    w.sge.lkey = 0xdead; // not checked for inline
    a.buf[0] = 99;
    recv(&mut b, Some(&qb), 1, 0, 64).unwrap();
    post(&a, &qa, w).unwrap();
    a.buf[0] = 1; // after the post: not what is sent
    wait(&b, &[&a.dev], 1);
    assert_eq!(b.buf[0], 99);
    let mut w = wr(3, Opcode::RdmaRead, a.sge(0, 8), b.remote(0));
    w.flags |= SendFlags::INLINE;
    assert_eq!(errno(post(&a, &qa, w)), libc::EINVAL, "inline READ");
}

#[test]
fn full_send_queue_is_enomem_and_unsignalled_slots_wait_for_a_signalled_completion() {
    let (a, qa, b, _qb) = pair(PATIENT, false);
    let qa3 = a.qp(3, 0);
    let qb3 = b.qp(3, 0);
    connect(&a.dev, &qa3, b.dev.gid(), SoftVerbs::qp_num(&qb3), PATIENT);
    connect(&b.dev, &qb3, a.dev.gid(), SoftVerbs::qp_num(&qa3), PATIENT);
    drop(qa);
    let (s, r) = (a.sge(0, 8), b.remote(0));
    let mut un = wr(1, Opcode::RdmaWrite, s, r);
    un.flags = SendFlags::empty();
    post(&a, &qa3, un).unwrap();
    post(&a, &qa3, un).unwrap();
    // Let both be acknowledged: they complete silently but keep their slots.
    for _ in 0..100 {
        b.dev.progress();
        a.dev.progress();
    }
    post(&a, &qa3, wr(2, Opcode::RdmaWrite, s, r)).unwrap();
    let e = post(&a, &qa3, un).unwrap_err();
    assert!(e.is_queue_full(), "{e}");
    assert!(e.to_string().contains("full"), "{e}");
    let got = wait(&a, &[&b.dev], 1);
    assert_eq!((got[0].wr_id, got[0].status), (2, WcStatus::Success));
    for _ in 0..3 {
        post(&a, &qa3, un).unwrap();
    }
    assert!(post(&a, &qa3, un).unwrap_err().is_queue_full());
}

#[test]
fn full_receive_queues_are_enomem() {
    let mut a = Node::new(64, ALL, 16, true);
    for i in 0..64 {
        recv(&mut a, None, i, 0, 8).unwrap();
    }
    assert!(recv(&mut a, None, 64, 0, 8).unwrap_err().is_queue_full());
    let n = Node::new(64, ALL, 16, false);
    let q = n.qp(1, 0);
    let mut n = n;
    n.dev
        .modify_qp(&q, &QpTransition::Init { access: ALL })
        .unwrap();
    for i in 0..16 {
        recv(&mut n, Some(&q), i, 0, 8).unwrap();
    }
    assert!(recv(&mut n, Some(&q), 16, 0, 8)
        .unwrap_err()
        .is_queue_full());
}

#[test]
fn rnr_retry_exceeded_then_later_work_requests_flush() {
    let t = Timers {
        rnr_retry: 2,
        min_rnr_timer: 1,
        ..PATIENT
    };
    let (a, qa, b, _qb) = pair(t, false);
    let s = a.sge(0, 8);
    post(&a, &qa, wr(1, Opcode::Send, s, RemoteAddr::default())).unwrap();
    let mut un = wr(2, Opcode::Send, s, RemoteAddr::default());
    un.flags = SendFlags::empty();
    post(&a, &qa, un).unwrap();
    let got = wait(&a, &[&b.dev], 2);
    assert_eq!((got[0].wr_id, got[0].status), (1, WcStatus::RnrRetryExcErr));
    assert_eq!(
        (got[1].wr_id, got[1].status),
        (2, WcStatus::WrFlushErr),
        "unsignalled, flushed"
    );
    assert_eq!(a.dev.qp_state(&qa).unwrap(), QpState::Err);
    post(&a, &qa, wr(3, Opcode::Send, s, RemoteAddr::default())).unwrap();
    let got = wait(&a, &[&b.dev], 1);
    assert_eq!((got[0].wr_id, got[0].status), (3, WcStatus::WrFlushErr));
}

#[test]
fn rnr_is_retried_until_a_receive_is_posted() {
    let (a, qa, mut b, qb) = pair(PATIENT, false); // rnr_retry 7: forever
    let s = a.sge(0, 8);
    post(&a, &qa, wr(1, Opcode::Send, s, RemoteAddr::default())).unwrap();
    for _ in 0..50 {
        a.dev.progress();
        b.dev.progress();
    }
    assert!(a.dev.stats().rnr_naks > 0, "{:?}", a.dev.stats());
    recv(&mut b, Some(&qb), 8, 0, 8).unwrap();
    let got = wait(&a, &[&b.dev], 1);
    assert_eq!(got[0].status, WcStatus::Success);
    assert_eq!(wait(&b, &[], 1)[0].wr_id, 8);
}

/// Post `w` on a fresh pair; the initiator's completions and the pair.
fn remote_error(
    mk: impl Fn(&mut Node, &mut Node) -> SendWr,
) -> (Vec<Wc>, Node, SoftQp, Node, SoftQp) {
    let (mut a, qa, mut b, qb) = pair(PATIENT, false);
    let w = mk(&mut a, &mut b);
    post(&a, &qa, w).unwrap();
    let (s, r) = (a.sge(0, 8), b.remote(0));
    let mut later = wr(8, Opcode::RdmaWrite, s, r);
    later.flags = SendFlags::empty();
    post(&a, &qa, later).unwrap();
    let got = wait(&a, &[&b.dev], 2);
    (got, a, qa, b, qb)
}

fn assert_fails_then_flushes(got: &[Wc], status: WcStatus) {
    assert_eq!(
        (got[0].wr_id, got[0].status),
        (1, status),
        "{}",
        got[0].status.name()
    );
    assert_eq!((got[1].wr_id, got[1].status), (8, WcStatus::WrFlushErr));
}

#[test]
fn bad_rkey_is_rem_access_err_then_flush() {
    let (got, a, qa, b, qb) = remote_error(|a, b| {
        let mut r = b.remote(0);
        r.rkey ^= 0x5555;
        wr(1, Opcode::RdmaWrite, a.sge(0, 8), r)
    });
    assert_fails_then_flushes(&got, WcStatus::RemAccessErr);
    assert_eq!(a.dev.qp_state(&qa).unwrap(), QpState::Err);
    assert_eq!(
        b.dev.qp_state(&qb).unwrap(),
        QpState::Err,
        "the responder too"
    );
    let s = Sge {
        addr: 0,
        length: 0,
        lkey: 0,
    };
    post(&a, &qa, wr(9, Opcode::Send, s, RemoteAddr::default())).unwrap();
    assert_eq!(wait(&a, &[&b.dev], 1)[0].status, WcStatus::WrFlushErr);
}

#[test]
fn out_of_bounds_write_and_read_are_rem_access_err() {
    let (got, ..) =
        remote_error(|a, b| wr(1, Opcode::RdmaWrite, a.sge(0, 16), b.remote(4096 * 8 - 8)));
    assert_fails_then_flushes(&got, WcStatus::RemAccessErr);
    let (got, ..) = remote_error(|a, b| {
        let mut r = b.remote(0);
        r.addr -= 1;
        wr(1, Opcode::RdmaRead, a.sge(0, 8), r)
    });
    assert_fails_then_flushes(&got, WcStatus::RemAccessErr);
}

#[test]
fn missing_remote_access_is_rem_access_err() {
    // b's region grants no remote access at all.
    let a = Node::new(64, ALL, 16, false);
    let b = Node::new(64, Access::LOCAL_WRITE | Access::REMOTE_READ, 16, false);
    let qa = a.qp(4, 0);
    let qb = b.qp(4, 0);
    connect(&a.dev, &qa, b.dev.gid(), SoftVerbs::qp_num(&qb), PATIENT);
    connect(&b.dev, &qb, a.dev.gid(), SoftVerbs::qp_num(&qa), PATIENT);
    let (s, r) = (a.sge(0, 8), b.remote(0));
    post(&a, &qa, wr(1, Opcode::RdmaRead, s, r)).unwrap();
    assert_eq!(
        wait(&a, &[&b.dev], 1)[0].status,
        WcStatus::Success,
        "READ granted"
    );
    post(&a, &qa, wr(2, Opcode::RdmaWrite, s, r)).unwrap();
    post(&a, &qa, wr(3, Opcode::AtomicFetchAndAdd { add: 1 }, s, r)).unwrap();
    let got = wait(&a, &[&b.dev], 2);
    assert_eq!((got[0].wr_id, got[0].status), (2, WcStatus::RemAccessErr));
    assert_eq!((got[1].wr_id, got[1].status), (3, WcStatus::WrFlushErr));
}

#[test]
fn misaligned_atomic_is_rem_inv_req_err() {
    let (got, ..) = remote_error(|a, b| {
        wr(
            1,
            Opcode::AtomicFetchAndAdd { add: 1 },
            a.sge(0, 8),
            b.remote(4),
        )
    });
    assert_fails_then_flushes(&got, WcStatus::RemInvReqErr);
}

#[test]
fn bad_lkey_is_loc_prot_err() {
    let (got, ..) = remote_error(|a, b| {
        let mut s = a.sge(0, 8);
        s.lkey += 1000;
        wr(1, Opcode::RdmaWrite, s, b.remote(0))
    });
    assert_fails_then_flushes(&got, WcStatus::LocProtErr);
}

#[test]
fn receive_too_small_is_loc_len_err_there_and_rem_inv_req_here() {
    let (a, qa, mut b, qb) = pair(PATIENT, false);
    recv(&mut b, Some(&qb), 50, 0, 16).unwrap();
    recv(&mut b, Some(&qb), 51, 0, 16).unwrap();
    let s = a.sge(0, 17);
    post(&a, &qa, wr(1, Opcode::Send, s, RemoteAddr::default())).unwrap();
    let got = wait(&a, &[&b.dev], 1);
    assert_eq!(got[0].status, WcStatus::RemInvReqErr);
    let got = wait(&b, &[&a.dev], 2);
    assert_eq!((got[0].wr_id, got[0].status), (50, WcStatus::LocLenErr));
    assert_eq!((got[1].wr_id, got[1].status), (51, WcStatus::WrFlushErr));
    assert_eq!(b.dev.qp_state(&qb).unwrap(), QpState::Err);
}

#[test]
fn cq_overrun_is_an_error_from_then_on() {
    let a = Node::new(64, ALL, 2, false);
    let b = Node::new(64, ALL, 16, false);
    let qa = a.qp(8, 0);
    let qb = b.qp(8, 0);
    connect(&a.dev, &qa, b.dev.gid(), SoftVerbs::qp_num(&qb), PATIENT);
    connect(&b.dev, &qb, a.dev.gid(), SoftVerbs::qp_num(&qa), PATIENT);
    let (s, r) = (a.sge(0, 8), b.remote(0));
    for i in 0..3 {
        post(&a, &qa, wr(i, Opcode::RdmaWrite, s, r)).unwrap();
    }
    let mut out = [Wc::EMPTY; 4];
    let end = Instant::now() + PATIENCE;
    let err = loop {
        assert!(Instant::now() < end, "no overrun");
        b.dev.progress();
        // Progress without polling the CQ (qp_state runs the engine).
        if a.dev.qp_state(&qa).unwrap() == QpState::Err {
            break a.dev.poll_cq(&a.cq, &mut out).unwrap_err();
        }
    };
    assert_eq!(err, VerbsError::CqOverrun { depth: 2 });
    assert!(err.to_string().contains("2 entries"), "{err}");
    assert_eq!(a.dev.poll_cq(&a.cq, &mut out).unwrap_err(), err, "sticky");
}

#[test]
fn dropped_packets_are_recovered_by_retransmission() {
    let t = Timers {
        timeout: 8, // ~1 ms
        ..PATIENT
    };
    let (mut a, qa, mut b, qb) = pair(t, false);
    let drop3 = Faults {
        drop_every: 3,
        ..Faults::default()
    };
    a.dev.set_faults(drop3.clone());
    b.dev.set_faults(Faults {
        drop_every: 4,
        delay: Duration::from_micros(50),
        ..Faults::default()
    });
    assert_eq!(a.dev.faults(), drop3);
    for (i, x) in a.bytes_mut()[..16384].iter_mut().enumerate() {
        *x = (i % 239) as u8;
    }
    for i in 0..8 {
        recv(&mut b, Some(&qb), i, 16384 + 1024 * i as usize, 1024).unwrap();
    }
    let mut n = 0;
    for i in 0..8u64 {
        let (s, r) = (a.sge(2048 * i as usize, 2048), b.remote(2048 * i as usize));
        post(&a, &qa, wr(100 + i, Opcode::RdmaWrite, s, r)).unwrap();
        let s = a.sge(0, 8);
        post(
            &a,
            &qa,
            wr(
                200 + i,
                Opcode::SendWithImm { imm: i as u32 },
                s,
                RemoteAddr::default(),
            ),
        )
        .unwrap();
        let (s, r) = (a.sge(20000 + 8 * i as usize, 8), b.remote(30000));
        post(
            &a,
            &qa,
            wr(300 + i, Opcode::AtomicFetchAndAdd { add: 1 }, s, r),
        )
        .unwrap();
        let got = wait(&a, &[&b.dev], 3);
        assert!(got.iter().all(|w| w.status == WcStatus::Success), "{got:?}");
        n += 1;
    }
    let rc = wait(&b, &[&a.dev], 8);
    assert_eq!(
        rc.iter().map(|w| w.imm.unwrap()).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>(),
        "in order, once each"
    );
    assert_eq!(&b.bytes()[..16384], &a.bytes()[..16384]);
    assert_eq!(
        b.buf[30000 / 8],
        n,
        "each atomic performed once despite retransmission"
    );
    let (sa, sb) = (a.dev.stats(), b.dev.stats());
    assert!(
        sa.packets_dropped > 0 && sb.packets_dropped > 0,
        "{sa:?} {sb:?}"
    );
    assert!(sa.retransmits > 0, "{sa:?}");
}

/// Writes, sends and atomics through random loss and reordering: every
/// byte in place, every send once and in order, every atomic once.
fn survives(loss_pct: &str) -> (u64, u64) {
    let t = Timers {
        timeout: 8, // ~1 ms
        ..PATIENT
    };
    let (mut a, qa, mut b, qb) = pair(t, false);
    let spec = format!("loss_pct={loss_pct},reorder_every=7");
    a.dev.set_faults(Faults::parse(&spec).unwrap().0);
    b.dev.set_faults(Faults::parse(&spec).unwrap().0);
    for (i, x) in a.bytes_mut()[..16384].iter_mut().enumerate() {
        *x = (i % 251) as u8;
    }
    const N: u64 = 16;
    for i in 0..N {
        recv(&mut b, Some(&qb), i, 16384 + 64 * i as usize, 64).unwrap();
    }
    for i in 0..N {
        let (s, r) = (a.sge(1024 * i as usize, 1024), b.remote(1024 * i as usize));
        post(&a, &qa, wr(100 + i, Opcode::RdmaWrite, s, r)).unwrap();
        let s = a.sge(0, 8);
        let imm = Opcode::SendWithImm { imm: i as u32 };
        post(&a, &qa, wr(200 + i, imm, s, RemoteAddr::default())).unwrap();
        let (s, r) = (a.sge(20000 + 8 * i as usize, 8), b.remote(30000));
        let fadd = Opcode::AtomicFetchAndAdd { add: 1 };
        post(&a, &qa, wr(300 + i, fadd, s, r)).unwrap();
        let got = wait(&a, &[&b.dev], 3);
        assert!(got.iter().all(|w| w.status == WcStatus::Success), "{got:?}");
    }
    let rc = wait(&b, &[&a.dev], N as usize);
    assert_eq!(
        rc.iter().map(|w| w.imm.unwrap()).collect::<Vec<_>>(),
        (0..N as u32).collect::<Vec<_>>(),
        "in order, once each, at {loss_pct}% loss"
    );
    assert_eq!(&b.bytes()[..16384], &a.bytes()[..16384]);
    assert_eq!(b.buf[30000 / 8], N, "each atomic performed once");
    // A READ of several packets: a lost response is asked for again, and
    // the bytes are the peer's.
    for round in 0..4u64 {
        let (s, r) = (a.sge(21000, 8192), b.remote(0));
        post(&a, &qa, wr(400 + round, Opcode::RdmaRead, s, r)).unwrap();
        let got = wait(&a, &[&b.dev], 1);
        assert!(got.iter().all(|w| w.status == WcStatus::Success), "{got:?}");
        assert_eq!(&a.bytes()[21000..29192], &b.bytes()[..8192]);
    }
    let (sa, sb) = (a.dev.stats(), b.dev.stats());
    (sa.packets_dropped + sb.packets_dropped, sa.retransmits)
}

#[test]
fn loss_and_reordering_at_a_tenth_one_and_five_percent_are_recovered() {
    for p in ["0.1", "1"] {
        survives(p);
    }
    // At 5% some of the few hundred packets are lost, and resent.
    let (dropped, retransmits) = survives("5");
    assert!(dropped > 0 && retransmits > 0, "{dropped} {retransmits}");
}

#[test]
fn the_wire_is_the_one_the_environment_asks() {
    let n = Node::new(8, ALL, 4, false);
    let want: &[u8] = if udp_wire() { b"rgxU" } else { b"rgxS" };
    assert_eq!(&n.dev.gid()[..4], want);
}

#[test]
fn a_peer_on_the_other_wire_is_einval_at_rtr() {
    let a = Node::new(8, ALL, 4, false);
    let q = a.qp(1, 0);
    // A GID of the other wire (the device behind it need not exist: RTR
    // refuses it before looking).
    let mut other = [0u8; 16];
    other[..4].copy_from_slice(if udp_wire() { b"rgxS" } else { b"rgxU" });
    other[4..8].copy_from_slice(&[127, 0, 0, 1]);
    other[8..10].copy_from_slice(&4791u16.to_be_bytes());
    a.dev
        .modify_qp(&q, &QpTransition::Init { access: ALL })
        .unwrap();
    let e = a
        .dev
        .modify_qp(
            &q,
            &QpTransition::Rtr(RtrAttr {
                mtu: Mtu::M1024,
                dest_qp_num: 1,
                rq_psn: 0,
                dlid: 0,
                dgid: Some(other),
                max_dest_rd_atomic: 16,
                min_rnr_timer: 1,
            }),
        )
        .unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains(WIRE_ENV) && msg.contains("wire"), "{msg}");
}

#[test]
fn a_peer_that_drops_everything_or_was_killed_is_retry_exc_err() {
    let t = Timers {
        timeout: 8,
        retry_cnt: 2,
        ..PATIENT
    };
    let (a, qa, b, _qb) = pair(t, false);
    a.dev.set_faults(Faults {
        drop_to: Some(b.dev.gid()),
        ..Faults::default()
    });
    let (s, r) = (a.sge(0, 8), b.remote(0));
    post(&a, &qa, wr(1, Opcode::RdmaWrite, s, r)).unwrap();
    let got = wait(&a, &[&b.dev], 1);
    assert_eq!(got[0].status, WcStatus::RetryExcErr);

    let (a, qa, b, _qb) = pair(t, false);
    let (s, r) = (a.sge(0, 8), b.remote(0));
    post(&a, &qa, wr(1, Opcode::RdmaWrite, s, r)).unwrap();
    assert_eq!(wait(&a, &[&b.dev], 1)[0].status, WcStatus::Success);
    b.dev.kill();
    assert!(b.dev.faults().killed);
    post(&a, &qa, wr(2, Opcode::RdmaRead, s, r)).unwrap();
    post(&a, &qa, wr(3, Opcode::RdmaWrite, s, r)).unwrap();
    let got = wait(&a, &[&b.dev], 2);
    assert_eq!((got[0].wr_id, got[0].status), (2, WcStatus::RetryExcErr));
    assert_eq!((got[1].wr_id, got[1].status), (3, WcStatus::WrFlushErr));
}

#[test]
fn a_destroyed_peer_qp_is_retry_exc_err() {
    let t = Timers {
        timeout: 8,
        retry_cnt: 1,
        ..PATIENT
    };
    let (a, qa, b, qb) = pair(t, false);
    drop(qb);
    let (s, r) = (a.sge(0, 8), b.remote(0));
    post(&a, &qa, wr(1, Opcode::RdmaWrite, s, r)).unwrap();
    assert_eq!(wait(&a, &[&b.dev], 1)[0].status, WcStatus::RetryExcErr);
}

#[test]
fn modify_to_err_flushes_receives_and_sends() {
    let (mut a, qa, mut b, qb) = pair(PATIENT, false);
    recv(&mut b, Some(&qb), 1, 0, 8).unwrap();
    recv(&mut b, Some(&qb), 2, 0, 8).unwrap();
    b.dev.modify_qp(&qb, &QpTransition::Err).unwrap();
    let got = wait(&b, &[], 2);
    assert!(got
        .iter()
        .all(|w| w.status == WcStatus::WrFlushErr && w.opcode == WcOpcode::Recv));
    let _ = (&mut a, qa);
}

#[test]
fn handles_of_another_context_and_foreign_gids_are_einval() {
    let a = Node::new(8, ALL, 4, false);
    let b = Node::new(8, ALL, 4, false);
    let qb = b.qp(1, 0);
    assert_eq!(
        errno(a.dev.modify_qp(&qb, &QpTransition::Err)),
        libc::EINVAL
    );
    let qa = a.qp(1, 0);
    a.dev
        .modify_qp(&qa, &QpTransition::Init { access: ALL })
        .unwrap();
    let r = a.dev.modify_qp(
        &qa,
        &QpTransition::Rtr(RtrAttr {
            mtu: Mtu::M1024,
            dest_qp_num: 1,
            rq_psn: 0,
            dlid: 0,
            dgid: Some([0xfe; 16]),
            max_dest_rd_atomic: 1,
            min_rnr_timer: 1,
        }),
    );
    let e = r.unwrap_err().to_string();
    assert!(e.contains("not a soft device"), "{e}");
    assert!(matches!(
        SoftVerbs::open(&DeviceChoice {
            name: Some("mlx5_0".into()),
            ..DeviceChoice::default()
        }),
        Err(VerbsError::NoDevice { .. })
    ));
    assert_eq!(a.dev.port_attr().link_layer, LinkLayer::Ethernet);
    assert_ne!(a.dev.gid(), b.dev.gid());
}

// ---- Across processes --------------------------------------------------

/// The environment variable naming the test a child process runs as the peer.
const ROLE: &str = "RGEX_SOFT_TEST_CHILD";

/// What one side tells the other: GID, QPN, buffer address and rkey.
fn info_line(n: &mut Node, qp: &SoftQp) -> String {
    let g: String = n.dev.gid().iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "SOFTINFO {g} {} {} {}",
        SoftVerbs::qp_num(qp),
        n.addr(),
        n.key()
    )
}

fn parse_info(line: &str) -> (Gid, u32, RemoteAddr) {
    let f: Vec<&str> = line.trim().split(' ').collect();
    assert_eq!(f[0], "SOFTINFO", "{line:?}");
    let mut g = [0u8; 16];
    for (i, b) in g.iter_mut().enumerate() {
        *b = u8::from_str_radix(&f[1][2 * i..2 * i + 2], 16).unwrap();
    }
    (
        g,
        f[2].parse().unwrap(),
        RemoteAddr {
            addr: f[3].parse().unwrap(),
            rkey: f[4].parse().unwrap(),
        },
    )
}

/// Run this test binary's test `name` as the peer, with piped stdio.
fn spawn_child(name: &str, faults: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(ROLE, name)
        .env(FAULTS_ENV, faults)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The child's SOFTINFO line (libtest prints its own lines around it).
fn read_info(out: &mut impl BufRead) -> String {
    let mut line = String::new();
    for _ in 0..100 {
        line.clear();
        assert_ne!(
            out.read_line(&mut line).unwrap(),
            0,
            "the child closed its output"
        );
        // libtest may have printed the test's name on the same line.
        if let Some(i) = line.find("SOFTINFO") {
            return line[i..].to_string();
        }
    }
    panic!("no SOFTINFO line from the child");
}

fn child_setup(t: Timers) -> (Node, SoftQp, RemoteAddr) {
    let mut n = Node::new(1024, ALL, 64, false);
    let q = n.qp(16, 64);
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let (g, qpn, ra) = parse_info(&line);
    let mine = info_line(&mut n, &q);
    {
        let mut o = std::io::stdout().lock();
        writeln!(o, "\n{mine}").unwrap();
        o.flush().unwrap();
    }
    connect(&n.dev, &q, g, qpn, t);
    (n, q, ra)
}

#[test]
fn across_processes_sends_rdma_and_atomics() {
    const NAME: &str = "across_processes_sends_rdma_and_atomics";
    if std::env::var(ROLE).as_deref() == Ok(NAME) {
        // Child: receive the parent's write + send, then read the parent's
        // buffer, add to its counter and send back what it saw.
        let (mut n, q, ra) = child_setup(QUICK);
        assert_eq!(n.dev.faults().drop_every, 5, "faults from {FAULTS_ENV}");
        recv(&mut n, Some(&q), 1, 4096, 64).unwrap();
        let got = wait(&n, &[], 1);
        assert_eq!((got[0].status, got[0].imm), (WcStatus::Success, Some(7)));
        let written = n.buf[0];
        post(&n, &q, wr(2, Opcode::RdmaRead, n.sge(16, 8), ra)).unwrap();
        let rc = RemoteAddr {
            addr: ra.addr + 8,
            ..ra
        };
        post(
            &n,
            &q,
            wr(3, Opcode::AtomicFetchAndAdd { add: 5 }, n.sge(24, 8), rc),
        )
        .unwrap();
        let got = wait(&n, &[], 2);
        assert!(got.iter().all(|w| w.status == WcStatus::Success), "{got:?}");
        n.buf[4] = written ^ n.buf[2];
        post(
            &n,
            &q,
            wr(
                4,
                Opcode::SendWithImm { imm: 8 },
                n.sge(32, 8),
                RemoteAddr::default(),
            ),
        )
        .unwrap();
        assert_eq!(wait(&n, &[], 1)[0].status, WcStatus::Success);
        return;
    }
    let mut p = Node::new(1024, ALL, 64, false);
    let q = p.qp(16, 64);
    p.buf[0] = 0xabcd_0000_1234; // the child reads this
    p.buf[1] = 100; // the child adds 5
    p.buf[2] = 0x0f0f_0f0f; // the parent writes this to the child
    let mut child = spawn_child(NAME, "drop_every=5,delay_us=20");
    let mut cin = child.stdin.take().unwrap();
    let mut cout = BufReader::new(child.stdout.take().unwrap());
    writeln!(cin, "{}", info_line(&mut p, &q)).unwrap();
    cin.flush().unwrap();
    let (g, qpn, ra) = parse_info(&read_info(&mut cout));
    connect(&p.dev, &q, g, qpn, QUICK);
    recv(&mut p, Some(&q), 10, 512, 64).unwrap();
    post(&p, &q, wr(1, Opcode::RdmaWrite, p.sge(16, 8), ra)).unwrap();
    post(
        &p,
        &q,
        wr(
            2,
            Opcode::SendWithImm { imm: 7 },
            p.sge(16, 8),
            RemoteAddr::default(),
        ),
    )
    .unwrap();
    let got = wait(&p, &[], 3);
    let recvd = got
        .iter()
        .find(|w| w.wr_id == 10)
        .expect("the child's send");
    assert!(got.iter().all(|w| w.status == WcStatus::Success), "{got:?}");
    assert_eq!(recvd.imm, Some(8));
    assert_eq!(
        p.buf[64],
        0x0f0f_0f0f ^ 0xabcd_0000_1234,
        "the child saw our write and read our buffer"
    );
    assert_eq!(p.buf[1], 105, "the child's fetch-and-add landed here");
    let st = child.wait().unwrap();
    assert!(st.success(), "child: {st}");
}

#[test]
fn a_killed_peer_process_is_retry_exc_err_not_a_hang() {
    const NAME: &str = "a_killed_peer_process_is_retry_exc_err_not_a_hang";
    let t = Timers {
        timeout: 10, // ~4 ms
        retry_cnt: 3,
        ..PATIENT
    };
    if std::env::var(ROLE).as_deref() == Ok(NAME) {
        // Child: serve until killed.
        let (n, _q, _) = child_setup(t);
        let end = Instant::now() + PATIENCE;
        while Instant::now() < end {
            n.dev.progress();
            std::thread::sleep(Duration::from_micros(100));
        }
        return;
    }
    let mut p = Node::new(64, ALL, 64, false);
    let q = p.qp(16, 0);
    let mut child = spawn_child(NAME, "");
    let mut cin = child.stdin.take().unwrap();
    let mut cout = BufReader::new(child.stdout.take().unwrap());
    writeln!(cin, "{}", info_line(&mut p, &q)).unwrap();
    cin.flush().unwrap();
    let (g, qpn, ra) = parse_info(&read_info(&mut cout));
    connect(&p.dev, &q, g, qpn, t);
    post(&p, &q, wr(1, Opcode::RdmaWrite, p.sge(0, 8), ra)).unwrap();
    assert_eq!(
        wait(&p, &[], 1)[0].status,
        WcStatus::Success,
        "the path works"
    );
    child.kill().unwrap();
    // Not reaped yet: a zombie must look dead too.
    post(&p, &q, wr(2, Opcode::RdmaRead, p.sge(0, 8), ra)).unwrap();
    post(&p, &q, wr(3, Opcode::RdmaWrite, p.sge(0, 8), ra)).unwrap();
    let got = wait(&p, &[], 2);
    assert_eq!((got[0].wr_id, got[0].status), (2, WcStatus::RetryExcErr));
    assert_eq!((got[1].wr_id, got[1].status), (3, WcStatus::WrFlushErr));
    child.wait().unwrap();
}

#[test]
fn nothing_is_left_in_dev_shm() {
    let (a, qa, b, qb) = pair(PATIENT, false);
    let pid = std::process::id();
    let names = || -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("rgex-ibv-soft-"))
            .collect()
    };
    let ring = |n: &Node, q: &SoftQp| {
        let g = n.dev.gid();
        let ctx = u32::from_be_bytes([g[12], g[13], g[14], g[15]]);
        format!("-{pid}-{ctx}-{}", SoftVerbs::qp_num(q))
    };
    let unconnected = a.qp(1, 0);
    if udp_wire() {
        // The UDP wire maps nothing: not one name of this process.
        let mine = format!("-{pid}-");
        assert!(!names().iter().any(|n| n.contains(&mine)), "{:?}", names());
        return;
    }
    let (ru, ra, rb) = (ring(&a, &unconnected), ring(&a, &qa), ring(&b, &qb));
    let left = names();
    assert!(
        left.iter().any(|n| n.ends_with(&ru)),
        "the unconnected QP's ring is named: {left:?}"
    );
    assert!(
        !left.iter().any(|n| n.ends_with(&ra) || n.ends_with(&rb)),
        "connected rings are unlinked: {left:?}"
    );
    drop((unconnected, qa, qb, a, b));
    // Other tests of this process may run in parallel: only ours matter.
    assert!(!names().iter().any(|n| n.ends_with(&ru)), "{:?}", names());
}
