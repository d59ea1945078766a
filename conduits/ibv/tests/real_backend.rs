//! The real backend against the libibverbs installed here (Debian
//! libibverbs1; `ci/deps.sh` installs it with ibverbs-providers).
//!
//! Without an RDMA device (no `/sys/class/infiniband`: `ENOSYS`) the
//! tests prove that the library loads, that `ibv_get_device_list` runs
//! through the loader and says "no device" with the reason, and report
//! each test that needs a device skipped whole, in the project's skip
//! line (`skip on ...: TEST: the whole test: why`, on stderr past the
//! harness's capture and in the matrix's skip log), which ci/test.sh
//! counts as skipped, not passed. On a machine
//! with an HCA the same tests open it, connect two RC QPs through
//! RESET, INIT, RTR and RTS, and check SEND_WITH_IMM into an SRQ, a
//! receive on a QP's own queue, RDMA WRITE (with immediate), READ,
//! FETCH_AND_ADD, CMP_AND_SWP, and a bad rkey giving REM_ACCESS_ERR with
//! the later work request flushed.
//!
//! The device is chosen as the conduit does: `RGEX_IBV_DEVICE` (a
//! device name; `soft` is the software device and is ignored here),
//! `RGEX_IBV_PORT`, `RGEX_IBV_GID_INDEX` (RoCE).

use std::path::Path;
use std::time::{Duration, Instant};

use rgex_ibv::real::{self, Library, RealVerbs};
use rgex_ibv::verbs::{
    Access, DeviceChoice, LinkLayer, Opcode, QpCaps, QpState, QpTransition, RecvWr, RemoteAddr,
    RtrAttr, RtsAttr, SendFlags, SendWr, Sge, Verbs, VerbsError, Wc, WcOpcode, WcStatus,
};

/// Whether the kernel lists RDMA devices.
fn sysfs_lists_devices() -> bool {
    std::fs::read_dir("/sys/class/infiniband").is_ok_and(|mut d| d.next().is_some())
}

/// The device the environment asks for.
fn choice() -> DeviceChoice {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    DeviceChoice {
        name: env("RGEX_IBV_DEVICE").filter(|n| n != "soft"),
        port: env("RGEX_IBV_PORT").map(|p| p.parse().expect("RGEX_IBV_PORT: a port number")),
        gid_index: env("RGEX_IBV_GID_INDEX")
            .map_or(0, |g| g.parse().expect("RGEX_IBV_GID_INDEX: 0-255")),
    }
}

/// Check a no-device reason is the one this machine should give.
fn check_no_device_reason(why: &str) {
    if !Path::new("/sys/class/infiniband").exists() {
        assert!(
            why.contains("ibv_get_device_list found none")
                && why.contains("/sys/class/infiniband is absent"),
            "without /sys/class/infiniband the reason names the enumeration and sysfs: {why}"
        );
    }
}

/// Report this test skipped whole, saying `why`: the project's skip
/// line, on stdout and on stderr (past the test harness's capture, where
/// ci/test.sh counts it), and in the matrix's skip log if one is set.
fn skip_whole(what: &str, why: &str) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let line = format!(
        "skip on the real verbs backend: real_backend::{test}: the whole test: {what}: {why}"
    );
    println!("{line}");
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    if let Some(path) = std::env::var_os("RGEX_SKIP_LOG") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// The opened device, or `None` with the test reported skipped when
/// there is none (any other error fails the test).
fn open_or_skip(what: &str) -> Option<RealVerbs> {
    match RealVerbs::open(&choice()) {
        Ok(dev) => Some(dev),
        Err(VerbsError::NoDevice { why }) => {
            check_no_device_reason(&why);
            skip_whole(what, &format!("no RDMA device ({why})"));
            None
        }
        Err(e) => panic!("{what}: opening the real backend failed: {e}"),
    }
}

#[test]
fn the_library_loads() {
    let lib = Library::system().unwrap_or_else(|e| {
        panic!("libibverbs must be installed for these tests (ci/deps.sh): {e}")
    });
    assert!(
        lib.path().contains("libibverbs"),
        "loaded from {}",
        lib.path()
    );
    println!("loaded {}", lib.path());
}

#[test]
fn enumeration_runs_and_says_why_there_is_no_device() {
    match real::device_names() {
        Ok(names) => {
            assert!(!names.is_empty(), "a device list is never empty");
            println!("RDMA devices: {}", names.join(", "));
        }
        Err(VerbsError::NoDevice { why }) => {
            assert!(
                !sysfs_lists_devices(),
                "the kernel lists devices but libibverbs found none: {why}"
            );
            check_no_device_reason(&why);
            let e = VerbsError::NoDevice { why: why.clone() }.to_string();
            assert!(e.starts_with("no RDMA device: "), "{e}");
            println!("{e}");
        }
        Err(e) => panic!("enumeration failed: {e}"),
    }
}

#[test]
fn open_without_a_device_is_no_device_not_a_crash() {
    // The default choice, and a named device that cannot exist.
    let named = DeviceChoice {
        name: Some("rgex_no_such_hca9".into()),
        ..choice()
    };
    match RealVerbs::open(&named) {
        Err(VerbsError::NoDevice { why }) => {
            check_no_device_reason(&why);
            if sysfs_lists_devices() {
                assert!(why.contains("rgex_no_such_hca9"), "{why}");
            }
        }
        Err(e) => panic!("a missing device is NoDevice, got: {e}"),
        Ok(d) => panic!(
            "opened {} for a device that does not exist",
            d.device_name()
        ),
    }
    if let Some(dev) = open_or_skip("open the default device") {
        let p = dev.port_attr();
        println!(
            "opened {} port {} ({:?}, lid {}, {:?}, active MTU {})",
            dev.device_name(),
            dev.port(),
            p.state,
            p.lid,
            p.link_layer,
            p.active_mtu.bytes()
        );
        assert!(dev.port() >= 1);
        assert!(dev.device_attr().max_qp_wr > 0 && dev.device_attr().max_cqe > 0);
    }
}

#[test]
fn a_missing_library_names_it_and_the_packages() {
    let Err(VerbsError::Library { why }) = Library::load("/nonexistent/libibverbs.so.1") else {
        panic!("a library that is not there must be a Library error");
    };
    for needle in [
        "/nonexistent/libibverbs.so.1",
        "at the path",
        "libibverbs1",
        "ibverbs-providers",
        "libibverbs and rdma-core",
    ] {
        assert!(why.contains(needle), "{needle:?} not in: {why}");
    }
}

/// Bound on polling for one completion (a hang guard, not a timing).
const POLL_LIMIT: Duration = Duration::from_secs(20);

/// Byte offsets in the test buffer.
const SEND_AREA: usize = 0;
const RECV_AREA: usize = 256;
const RQ_AREA: usize = 512;
const WRITE_AREA: usize = 768;
const READ_AREA: usize = 1024;
const ATOMIC_TARGET: usize = 1280;
const ATOMIC_RESULT: usize = 1288;
const BUF_WORDS: usize = 256;

/// Two RC QPs on one device connected to each other: `a` with its own
/// receive queue, `b` receiving from an SRQ; one buffer in one MR.
struct Rig {
    dev: RealVerbs,
    a: <RealVerbs as Verbs>::Qp,
    b: <RealVerbs as Verbs>::Qp,
    srq: <RealVerbs as Verbs>::Srq,
    cq_a: <RealVerbs as Verbs>::Cq,
    cq_b: <RealVerbs as Verbs>::Cq,
    mr: <RealVerbs as Verbs>::Mr,
    _pd: <RealVerbs as Verbs>::Pd,
    /// The registered words (8-aligned), touched only through `base`.
    _buf: Vec<u64>,
    base: *mut u8,
}

impl Rig {
    fn new(dev: RealVerbs) -> Rig {
        let pd = dev.alloc_pd().expect("alloc_pd");
        let mut buf = vec![0u64; BUF_WORDS];
        let base = buf.as_mut_ptr().cast::<u8>();
        let access = Access::LOCAL_WRITE
            | Access::REMOTE_WRITE
            | Access::REMOTE_READ
            | Access::REMOTE_ATOMIC;
        // SAFETY: the buffer lives in the Rig, dropped after the MR
        // (field order), and is accessed by the CPU only through `base`
        // between completions.
        let mr = unsafe { dev.reg_mr(&pd, base, BUF_WORDS * 8, access) }.expect("reg_mr");
        let cq_a = dev.create_cq(64).expect("create_cq a");
        let cq_b = dev.create_cq(64).expect("create_cq b");
        let srq = dev.create_srq(&pd, 16).expect("create_srq");
        let caps = QpCaps {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_inline_data: 0,
        };
        let a = dev
            .create_qp(&pd, &cq_a, &cq_a, None, &caps)
            .expect("create_qp a");
        let b = dev
            .create_qp(&pd, &cq_b, &cq_b, Some(&srq), &caps)
            .expect("create_qp b");
        let rig = Rig {
            dev,
            a,
            b,
            srq,
            cq_a,
            cq_b,
            mr,
            _pd: pd,
            _buf: buf,
            base,
        };
        rig.connect();
        rig
    }

    /// RESET -> INIT -> RTR -> RTS for both QPs, each to the other.
    fn connect(&self) {
        let dev = &self.dev;
        let port = *dev.port_attr();
        let dgid = (port.link_layer == LinkLayer::Ethernet).then(|| dev.gid());
        let rd = |n: u32| u8::try_from(n.clamp(1, 16)).unwrap_or(1);
        let pairs = [
            (&self.a, RealVerbs::qp_num(&self.b)),
            (&self.b, RealVerbs::qp_num(&self.a)),
        ];
        for (qp, _) in pairs {
            assert_eq!(dev.qp_state(qp).unwrap(), QpState::Reset);
            dev.modify_qp(
                qp,
                &QpTransition::Init {
                    access: Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC,
                },
            )
            .expect("INIT");
            assert_eq!(dev.qp_state(qp).unwrap(), QpState::Init);
        }
        for (qp, peer) in pairs {
            dev.modify_qp(
                qp,
                &QpTransition::Rtr(RtrAttr {
                    mtu: port.active_mtu,
                    dest_qp_num: peer,
                    rq_psn: 0x100,
                    dlid: port.lid,
                    dgid,
                    max_dest_rd_atomic: rd(dev.device_attr().max_qp_rd_atom),
                    min_rnr_timer: 12,
                }),
            )
            .expect("RTR");
            assert_eq!(dev.qp_state(qp).unwrap(), QpState::Rtr);
            dev.modify_qp(
                qp,
                &QpTransition::Rts(RtsAttr {
                    sq_psn: 0x100,
                    timeout: 14,
                    retry_cnt: 7,
                    rnr_retry: 7,
                    max_rd_atomic: rd(dev.device_attr().max_qp_init_rd_atom),
                }),
            )
            .expect("RTS");
            assert_eq!(dev.qp_state(qp).unwrap(), QpState::Rts);
        }
    }

    fn addr(&self, off: usize) -> u64 {
        self.base as u64 + off as u64
    }

    fn sge(&self, off: usize, len: u32) -> Sge {
        Sge {
            addr: self.addr(off),
            length: len,
            lkey: RealVerbs::lkey(&self.mr),
        }
    }

    fn remote(&self, off: usize) -> RemoteAddr {
        RemoteAddr {
            addr: self.addr(off),
            rkey: RealVerbs::rkey(&self.mr),
        }
    }

    fn fill(&self, off: usize, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            // SAFETY: inside the buffer (offsets are below BUF_WORDS * 8);
            // no operation on this area is outstanding.
            unsafe { self.base.add(off + i).write_volatile(*b) };
        }
    }

    fn read(&self, off: usize, len: usize) -> Vec<u8> {
        // SAFETY: inside the buffer; the operation writing it completed.
        (0..len)
            .map(|i| unsafe { self.base.add(off + i).read_volatile() })
            .collect()
    }

    fn word(&self, off: usize) -> u64 {
        // SAFETY: an 8-aligned word inside the buffer, not being written.
        unsafe { self.base.add(off).cast::<u64>().read_volatile() }
    }

    fn set_word(&self, off: usize, v: u64) {
        // SAFETY: as `word`.
        unsafe { self.base.add(off).cast::<u64>().write_volatile(v) }
    }

    fn post(&self, qp: &<RealVerbs as Verbs>::Qp, wr: SendWr) {
        // SAFETY: the SGE lies in the registered buffer, alive for the Rig.
        unsafe { self.dev.post_send(qp, &wr) }.expect("post_send");
    }

    /// The next completion on `cq` (bounded wait).
    fn next(&self, cq: &<RealVerbs as Verbs>::Cq) -> Wc {
        let start = Instant::now();
        let mut out = [Wc::EMPTY];
        loop {
            if self.dev.poll_cq(cq, &mut out).expect("poll_cq") == 1 {
                return out[0];
            }
            assert!(
                start.elapsed() < POLL_LIMIT,
                "no completion within {POLL_LIMIT:?}"
            );
            std::thread::yield_now();
        }
    }
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

#[test]
fn sends_into_the_srq_and_the_receive_queue() {
    let Some(dev) = open_or_skip("SEND_WITH_IMM into an SRQ and SEND into a QP's receive queue")
    else {
        return;
    };
    let r = Rig::new(dev);
    // B receives from its SRQ: posting on its QP is refused.
    // SAFETY: the SGE lies in the registered buffer.
    let e = unsafe {
        r.dev.post_recv(
            &r.b,
            &RecvWr {
                wr_id: 0,
                sge: r.sge(RECV_AREA, 64),
            },
        )
    }
    .unwrap_err();
    assert!(
        matches!(e, VerbsError::Call { errno, .. } if errno == libc::EINVAL),
        "{e}"
    );

    // SAFETY: the SGE lies in the registered buffer, untouched until the
    // receive completes.
    unsafe {
        r.dev.post_srq_recv(
            &r.srq,
            &RecvWr {
                wr_id: 7,
                sge: r.sge(RECV_AREA, 64),
            },
        )
    }
    .expect("post_srq_recv");
    let msg: Vec<u8> = (0..40u8).map(|i| i ^ 0x5a).collect();
    r.fill(SEND_AREA, &msg);
    r.post(
        &r.a,
        wr(
            1,
            Opcode::SendWithImm { imm: 0xC0FF_EE01 },
            r.sge(SEND_AREA, 40),
            RemoteAddr::default(),
        ),
    );
    let s = r.next(&r.cq_a);
    assert_eq!(
        (s.wr_id, s.status, s.opcode),
        (1, WcStatus::Success, WcOpcode::Send)
    );
    let c = r.next(&r.cq_b);
    assert_eq!(
        (c.wr_id, c.status, c.opcode, c.byte_len, c.imm),
        (7, WcStatus::Success, WcOpcode::Recv, 40, Some(0xC0FF_EE01))
    );
    assert_eq!(c.qp_num, RealVerbs::qp_num(&r.b));
    assert_eq!(r.read(RECV_AREA, 40), msg);

    // B to A, into A's own receive queue.
    // SAFETY: as above.
    unsafe {
        r.dev.post_recv(
            &r.a,
            &RecvWr {
                wr_id: 8,
                sge: r.sge(RQ_AREA, 64),
            },
        )
    }
    .expect("post_recv");
    r.fill(SEND_AREA, b"back to a");
    r.post(
        &r.b,
        wr(2, Opcode::Send, r.sge(SEND_AREA, 9), RemoteAddr::default()),
    );
    assert_eq!(r.next(&r.cq_b).status, WcStatus::Success);
    let c = r.next(&r.cq_a);
    assert_eq!(
        (c.wr_id, c.status, c.opcode, c.byte_len, c.imm),
        (8, WcStatus::Success, WcOpcode::Recv, 9, None)
    );
    assert_eq!(r.read(RQ_AREA, 9), b"back to a");
}

#[test]
fn rdma_write_write_with_imm_and_read() {
    let Some(dev) = open_or_skip("RDMA WRITE, WRITE_WITH_IMM and READ") else {
        return;
    };
    let r = Rig::new(dev);
    let pattern: Vec<u8> = (0..64u8)
        .map(|i| i.wrapping_mul(7).wrapping_add(3))
        .collect();
    r.fill(SEND_AREA, &pattern);
    r.post(
        &r.a,
        wr(
            10,
            Opcode::RdmaWrite,
            r.sge(SEND_AREA, 64),
            r.remote(WRITE_AREA),
        ),
    );
    let c = r.next(&r.cq_a);
    assert_eq!(
        (c.wr_id, c.status, c.opcode),
        (10, WcStatus::Success, WcOpcode::RdmaWrite)
    );
    assert_eq!(r.read(WRITE_AREA, 64), pattern);

    // WRITE_WITH_IMM consumes an SRQ receive at B carrying the immediate.
    // SAFETY: the SGE lies in the registered buffer.
    unsafe {
        r.dev.post_srq_recv(
            &r.srq,
            &RecvWr {
                wr_id: 11,
                sge: r.sge(RECV_AREA, 64),
            },
        )
    }
    .expect("post_srq_recv");
    r.post(
        &r.a,
        wr(
            12,
            Opcode::RdmaWriteWithImm { imm: 0x1234_5678 },
            r.sge(SEND_AREA, 16),
            r.remote(WRITE_AREA + 128),
        ),
    );
    assert_eq!(r.next(&r.cq_a).status, WcStatus::Success);
    let c = r.next(&r.cq_b);
    assert_eq!(
        (c.wr_id, c.status, c.opcode, c.imm),
        (
            11,
            WcStatus::Success,
            WcOpcode::RecvRdmaWithImm,
            Some(0x1234_5678)
        )
    );
    assert_eq!(r.read(WRITE_AREA + 128, 16), pattern[..16]);

    r.post(
        &r.a,
        wr(
            13,
            Opcode::RdmaRead,
            r.sge(READ_AREA, 64),
            r.remote(WRITE_AREA),
        ),
    );
    let c = r.next(&r.cq_a);
    assert_eq!(
        (c.wr_id, c.status, c.opcode, c.byte_len),
        (13, WcStatus::Success, WcOpcode::RdmaRead, 64)
    );
    assert_eq!(r.read(READ_AREA, 64), pattern);
}

#[test]
fn fetch_and_add_and_compare_and_swap() {
    let Some(dev) = open_or_skip("FETCH_AND_ADD and CMP_AND_SWP") else {
        return;
    };
    if !dev.device_attr().atomics {
        skip_whole(
            "FETCH_AND_ADD and CMP_AND_SWP",
            &format!(
                "device {} has no atomics (IBV_ATOMIC_NONE)",
                dev.device_name()
            ),
        );
        return;
    }
    let r = Rig::new(dev);
    r.set_word(ATOMIC_TARGET, 40);
    let steps = [
        (
            Opcode::AtomicFetchAndAdd { add: 2 },
            WcOpcode::FetchAdd,
            40,
            42,
        ),
        (
            Opcode::AtomicCmpAndSwp {
                compare: 42,
                swap: 7,
            },
            WcOpcode::CompSwap,
            42,
            7,
        ),
        // A compare that fails returns the value and stores nothing.
        (
            Opcode::AtomicCmpAndSwp {
                compare: 1,
                swap: 9,
            },
            WcOpcode::CompSwap,
            7,
            7,
        ),
        (
            Opcode::AtomicFetchAndAdd { add: u64::MAX },
            WcOpcode::FetchAdd,
            7,
            6,
        ),
    ];
    for (i, (op, wc_op, old, new)) in steps.into_iter().enumerate() {
        r.set_word(ATOMIC_RESULT, 0xdead);
        r.post(
            &r.a,
            wr(
                20 + i as u64,
                op,
                r.sge(ATOMIC_RESULT, 8),
                r.remote(ATOMIC_TARGET),
            ),
        );
        let c = r.next(&r.cq_a);
        assert_eq!(
            (c.wr_id, c.status, c.opcode),
            (20 + i as u64, WcStatus::Success, wc_op),
            "step {i}: {op:?}"
        );
        assert_eq!(r.word(ATOMIC_RESULT), old, "step {i}: old value of {op:?}");
        assert_eq!(r.word(ATOMIC_TARGET), new, "step {i}: new value of {op:?}");
    }
}

#[test]
fn a_bad_rkey_is_a_remote_access_error_then_flushes() {
    let Some(dev) = open_or_skip("a bad rkey: REM_ACCESS_ERR, then flushed WRs") else {
        return;
    };
    let r = Rig::new(dev);
    // The same MR index with another key byte: never valid.
    let bad = RemoteAddr {
        rkey: RealVerbs::rkey(&r.mr) ^ 0x80,
        ..r.remote(WRITE_AREA)
    };
    r.post(&r.a, wr(30, Opcode::RdmaWrite, r.sge(SEND_AREA, 32), bad));
    r.post(
        &r.a,
        wr(
            31,
            Opcode::RdmaWrite,
            r.sge(SEND_AREA, 32),
            r.remote(WRITE_AREA),
        ),
    );
    let c = r.next(&r.cq_a);
    assert_eq!(
        (c.wr_id, c.status),
        (30, WcStatus::RemAccessErr),
        "{}",
        c.status.name()
    );
    let c = r.next(&r.cq_a);
    assert_eq!((c.wr_id, c.status), (31, WcStatus::WrFlushErr));
    assert_eq!(r.dev.qp_state(&r.a).unwrap(), QpState::Err);
    // A work request posted to a QP in error completes flushed.
    let after = {
        // SAFETY: the SGE lies in the registered buffer.
        unsafe {
            r.dev.post_send(
                &r.a,
                &wr(
                    32,
                    Opcode::RdmaWrite,
                    r.sge(SEND_AREA, 8),
                    r.remote(WRITE_AREA),
                ),
            )
        }
    };
    match after {
        Ok(()) => {
            let c = r.next(&r.cq_a);
            assert_eq!((c.wr_id, c.status), (32, WcStatus::WrFlushErr));
        }
        // Some providers refuse the post instead.
        Err(VerbsError::Call { errno, .. }) => assert_eq!(errno, libc::EINVAL),
        Err(e) => panic!("{e}"),
    }
    // Back to RESET, the QP can be set up again.
    r.dev.modify_qp(&r.a, &QpTransition::Reset).expect("RESET");
    assert_eq!(r.dev.qp_state(&r.a).unwrap(), QpState::Reset);
}

#[test]
fn an_inline_payload_over_the_limit_is_einval() {
    let Some(dev) = open_or_skip("an inline payload over max_inline_data") else {
        return;
    };
    let r = Rig::new(dev);
    let max = RealVerbs::qp_caps(&r.a).max_inline_data;
    let w = SendWr {
        flags: SendFlags::SIGNALED | SendFlags::INLINE,
        ..wr(
            40,
            Opcode::Send,
            r.sge(SEND_AREA, max + 1),
            RemoteAddr::default(),
        )
    };
    // SAFETY: the SGE lies in the registered buffer.
    let e = unsafe { r.dev.post_send(&r.a, &w) }.unwrap_err();
    assert!(
        matches!(e, VerbsError::Call { errno, verb: "ibv_post_send", .. } if errno == libc::EINVAL),
        "{e}"
    );
}
