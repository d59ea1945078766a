//! Two processes on one named chip: this test binary re-runs itself as the
//! child (rank 1), selected by an environment variable. Every wait is
//! bounded; the shm object has a unique name and is unlinked as soon as both
//! ranks mapped it (and on any exit path of the parent).

use rgex_scc::emu::{Addr, CheckMode, Chip, Core, CoreConfig, Layout, MemType, Missing, PAGE};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "RGEX_SCC_TEST_CHILD_SHM";
const TIMEOUT: Duration = Duration::from_secs(20);

fn layout() -> Layout {
    Layout::builder(2)
        .shared_bytes(PAGE as u64)
        .shared_type(MemType::Uncached) // flags
        .check(true)
        .build()
        .unwrap()
}

struct Addrs {
    ready: Addr,
    go: Addr,
    done: Addr,
    to_child: Addr,
    to_parent: Addr,
}

fn addrs(l: &Layout) -> Addrs {
    Addrs {
        ready: l.shared(0),
        go: l.shared(64),
        done: l.shared(128),
        to_child: l.mpb(1),
        to_parent: l.mpb(0),
    }
}

/// Poll `flag` (uncached, acquire) until it reads `v`, for at most TIMEOUT.
fn wait_for(core: &mut Core, flag: Addr, v: u32) -> bool {
    let end = Instant::now() + TIMEOUT;
    while Instant::now() < end {
        if core.read_u32_acquire(flag).unwrap() == v {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

fn reporting() -> CoreConfig {
    CoreConfig::default().check(CheckMode::Report)
}

/// Unlinks the name when dropped (errors ignored: it may be gone already).
struct Unlink(String);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = Chip::unlink(&self.0);
    }
}

#[test]
fn two_processes_share_a_named_chip() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // we are the child; only `child_process` runs there
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let name = format!("/rgex-scc-test-{}-{nanos}", std::process::id());
    let chip = Chip::create(&name, layout()).unwrap();
    let _unlink = Unlink(name.clone());
    let a_ = addrs(chip.layout());

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut a = chip.core_with(0, reporting()).unwrap();

    let ok = wait_for(&mut a, a_.ready, 1);
    if !ok {
        let _ = child.kill();
    }
    assert!(ok, "child never signalled ready");
    // Both ranks have mapped the object: remove its name now.
    Chip::unlink(&name).unwrap();

    a.write_u64(a_.to_child, 0xC0FFEE).unwrap();
    a.drain();
    a.write_u32_release(a_.go, 1).unwrap();

    let end = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > end {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = child.wait_with_output().unwrap();
    let log = format!(
        "child stdout:\n{}\nchild stderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(status.is_some_and(|s| s.success()), "child failed: {log}");
    assert!(
        log.contains("1 passed"),
        "the child test did not run: {log}"
    );

    // The child's answer, through the shared region.
    assert!(wait_for(&mut a, a_.done, 1));
    a.invalidate_mpbt();
    assert_eq!(a.read_u64(a_.to_parent).unwrap(), 0xD00D);
    assert!(a.stale_reads().is_empty(), "{:?}", a.stale_reads());
}

/// The child half (a no-op unless started by the test above).
#[test]
fn child_process() {
    let Some(name) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let chip = Chip::open(name.to_str().unwrap()).unwrap();
    assert_eq!(chip.layout(), &layout());
    let a_ = addrs(chip.layout());
    let mut b = chip.core_with(1, reporting()).unwrap();

    assert_eq!(b.read_u64(a_.to_child).unwrap(), 0); // cache the old line
    b.write_u32_release(a_.ready, 1).unwrap();
    assert!(wait_for(&mut b, a_.go, 1), "parent never said go");

    // Without invalidate: the stale cached line, reported across processes.
    assert_eq!(b.read_u64(a_.to_child).unwrap(), 0);
    let r = b.stale_reads();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].rank, r[0].writer), (1, 0));
    assert_eq!(r[0].missing, Missing::Invalidate { rank: 1 });
    b.invalidate_mpbt();
    assert_eq!(b.read_u64(a_.to_child).unwrap(), 0xC0FFEE);
    assert_eq!(b.stale_reads().len(), 1);

    b.write_u64(a_.to_parent, 0xD00D).unwrap();
    b.drain();
    b.write_u32_release(a_.done, 1).unwrap();
}

#[test]
fn open_of_a_missing_chip_times_out() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let name = format!("/rgex-scc-test-missing-{}", std::process::id());
    let e = Chip::open_timeout(&name, Duration::from_millis(30)).unwrap_err();
    assert!(e.to_string().contains(&name), "{e}");
}

#[test]
fn create_refuses_an_existing_name() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let name = format!("/rgex-scc-test-dup-{}", std::process::id());
    let chip = Chip::create(&name, layout()).unwrap();
    let _unlink = Unlink(name.clone());
    assert!(Chip::create(&name, layout()).is_err());
    // A second handle in the same process maps the same memory.
    let other = Chip::open(&name).unwrap();
    let mut a = chip.core_with(0, reporting()).unwrap();
    let mut b = other.core_with(1, reporting()).unwrap();
    assert!(other.core(0).is_err(), "rank 0 is taken, across mappings");
    let f = chip.layout().shared(0);
    a.write_u32_release(f, 9).unwrap();
    assert_eq!(b.read_u32_acquire(f).unwrap(), 9);
}

#[allow(dead_code)]
fn assert_thread_safety() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Chip>();
    sync::<Chip>();
    send::<Core>();
}
