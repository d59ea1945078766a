//! The safe libfabric layer on each test provider, over loopback only:
//! open fabric, domain, CQ, AV and RDM endpoint, then send to ourselves
//! and fi_write into our own registered buffer.

use libfabric_sys as sys;
use rgex_ofi::fabric::{
    AddressVector, CompletionQueue, CqRead, Domain, Endpoint, Fabric, Hints, Info, MemoryRegion,
    Remote,
};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

/// Loopback only: the tcp and sockets providers pick their interface from
/// these, read once per process at the first fi_getinfo.
fn loopback_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_var("FI_TCP_IFACE", "lo");
        std::env::set_var("FI_SOCKETS_IFACE", "lo");
    });
}

fn hints(provider: &str, domain: Option<&str>) -> Hints {
    Hints {
        caps: sys::FI_MSG
            | sys::FI_RMA
            | sys::FI_READ
            | sys::FI_WRITE
            | sys::FI_SEND
            | sys::FI_RECV
            | sys::FI_REMOTE_READ
            | sys::FI_REMOTE_WRITE,
        mode: sys::FI_CONTEXT | sys::FI_CONTEXT2,
        ep_type: sys::FI_EP_RDM,
        provider: Some(provider.into()),
        domain: domain.map(Into::into),
        mr_mode: sys::FI_MR_LOCAL
            | sys::FI_MR_VIRT_ADDR
            | sys::FI_MR_ALLOCATED
            | sys::FI_MR_PROV_KEY
            | sys::FI_MR_ENDPOINT,
        threading: sys::FI_THREAD_DOMAIN,
        av_type: sys::FI_AV_TABLE,
        tx_msg_order: sys::FI_ORDER_SAS,
        ..Default::default()
    }
}

/// Read what completed; panics on an error completion.
fn drain(cq: &CompletionQueue, what: &str) -> usize {
    let mut buf = [std::mem::MaybeUninit::uninit(); 8];
    match cq.read(&mut buf).expect("fi_cq_read") {
        CqRead::Entries(done) => done.len(),
        CqRead::Empty => 0,
        CqRead::Error => panic!("{what}: {:?}", cq.read_error()),
    }
}

/// Read completions until `want` more arrived, counting from `seen`
/// (completions read while retrying posts); bounded: 10 s.
fn wait(cq: &CompletionQueue, seen: &mut usize, want: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while *seen < want {
        assert!(
            Instant::now() < deadline,
            "{what}: no completion within 10 s"
        );
        *seen += drain(cq, what);
        std::thread::yield_now();
    }
    *seen -= want;
}

/// Post with `post` until the provider accepts it (FI_EAGAIN: progress
/// the CQ and retry; bounded: 10 s).
fn post(
    cq: &CompletionQueue,
    seen: &mut usize,
    what: &str,
    mut post: impl FnMut() -> Result<(), rgex_ofi::fabric::FiError>,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match post() {
            Ok(()) => return,
            Err(e) if e.is_again() && Instant::now() < deadline => {
                *seen += drain(cq, what);
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

/// `len` bytes at `base + at` (inside the test's buffer).
fn bytes(base: *mut u8, at: usize, len: usize) -> Vec<u8> {
    // SAFETY: callers pass ranges inside the 8 KiB buffer `base` points to.
    unsafe { std::slice::from_raw_parts(base.add(at), len) }.to_vec()
}

fn loop_to_self(provider: &str, domain: Option<&str>) {
    loopback_env();
    let info = Info::get(&hints(provider, domain)).unwrap_or_else(|e| panic!("{e}"));
    let mr_mode = info.mr_mode();
    println!(
        "{provider}: domain {} caps {:#x} mode {:#x} mr_mode {:?} tx order {:#x} tx op_flags {:#x} threading {} progress {} inject {} rx {} tx {} max_msg {}",
        info.domain_name(),
        info.caps(),
        info.mode(),
        Info::mr_mode_names(mr_mode),
        info.tx_msg_order(),
        info.tx_op_flags(),
        info.threading(),
        info.data_progress(),
        info.inject_size(),
        info.rx_size(),
        info.tx_size(),
        info.max_msg_size()
    );
    let fabric = Fabric::open(info).unwrap();
    let domain = Domain::open(&fabric).unwrap();
    let cq = CompletionQueue::open(&domain, 64).unwrap();
    let av = AddressVector::open(&domain, 1).unwrap();
    let ep = Endpoint::open(&domain, &cq, &av).unwrap();
    let me = av.insert(&[ep.name().unwrap()]).unwrap()[0];

    let mut mem = vec![0u8; 8192];
    let bind = (mr_mode & sys::FI_MR_ENDPOINT != 0).then_some(&ep);
    let access = sys::FI_SEND
        | sys::FI_RECV
        | sys::FI_READ
        | sys::FI_WRITE
        | sys::FI_REMOTE_READ
        | sys::FI_REMOTE_WRITE;
    // SAFETY: `mem` outlives the region (dropped at the end of this function, after `mr`).
    let mr =
        unsafe { MemoryRegion::register(&domain, mem.as_mut_ptr(), mem.len(), access, 7, bind) }
            .unwrap();
    let desc = mr.desc();
    let mut ctx = [sys::fi_context2::default(); 4];
    let base = mem.as_mut_ptr();
    let mut seen = 0usize;

    // Send/recv to ourselves: the receive at [4096..), the message at [0..).
    let c: Vec<*mut std::ffi::c_void> = ctx
        .iter_mut()
        .map(|c| (c as *mut sys::fi_context2).cast())
        .collect();
    post(&cq, &mut seen, "fi_recv", || {
        // SAFETY: the buffers lie in `mem` (registered, alive until the end),
        // untouched until the completion is read; one context per op.
        unsafe { ep.recv(base.add(4096), 1024, desc, c[0]) }
    });
    // SAFETY: `base..base+20` lies in `mem`.
    unsafe { std::ptr::copy_nonoverlapping(b"hello over libfabric".as_ptr(), base, 20) };
    post(&cq, &mut seen, "fi_send", || {
        // SAFETY: the buffers lie in `mem` (registered, alive until the end),
        // untouched until the completion is read; one context per op.
        unsafe { ep.send(base, 20, desc, me, c[1]) }
    });
    wait(&cq, &mut seen, 2, "send/recv");
    assert_eq!(bytes(base, 4096, 20), b"hello over libfabric");

    // fi_write into our own region at offset 2048.
    let raddr = if mr_mode & sys::FI_MR_VIRT_ADDR != 0 {
        base as u64 + 2048
    } else {
        2048
    };
    let to = Remote {
        addr: me,
        raddr,
        key: mr.key(),
    };
    // SAFETY: `base+100..+108` lies in `mem`.
    unsafe { std::ptr::copy_nonoverlapping(b"rmawrite".as_ptr(), base.add(100), 8) };
    post(&cq, &mut seen, "fi_write", || {
        // SAFETY: the buffers lie in `mem` (registered, alive until the end),
        // untouched until the completion is read; one context per op.
        unsafe { ep.write(base.add(100), 8, desc, to, c[2], 0) }
    });
    wait(&cq, &mut seen, 1, "fi_write");
    assert_eq!(bytes(base, 2048, 8), b"rmawrite");
    // fi_read it back to offset 3000.
    post(&cq, &mut seen, "fi_read", || {
        // SAFETY: the buffers lie in `mem` (registered, alive until the end),
        // untouched until the completion is read; one context per op.
        unsafe { ep.read(base.add(3000), 8, desc, to, c[3], 0) }
    });
    wait(&cq, &mut seen, 1, "fi_read");
    assert_eq!(bytes(base, 3000, 8), b"rmawrite");
    drop(mr);
    drop(ep);
    let _keep: Arc<AddressVector> = av;
}

#[test]
fn tcp_rxm_loopback() {
    loop_to_self("tcp;ofi_rxm", Some("lo"));
}

#[test]
fn sockets_loopback() {
    loop_to_self("sockets", Some("lo"));
}

#[test]
fn shm_to_self() {
    loop_to_self("shm", None);
}
