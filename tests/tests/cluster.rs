//! Jobs across hosts (issue 42): the test cluster of `ci/cluster.sh`,
//! three hosts of network, UTS and mount namespaces on a bridge in
//! 198.18.0.0/24, run by Slurm, jobs started by `srun --mpi=pmix`.
//!
//! - `down_leaves_nothing_behind`: the script's `down` removes every
//!   namespace, process, mount and file of the cluster, also after an `up`
//!   that failed halfway and a job whose srun and a host were killed.
//!   Runs wherever it can (root, Slurm installable): a few seconds.
//! - The conformance programs on 3 hosts x 2 ranks (`-N 3 -n 6`), on a
//!   network conduit with the shared-memory bypass on: each rank's peer on
//!   its own host through smp, the four others through the network over
//!   the bridge (ofi: `tcp;ofi_rxm` with `FI_TCP_IFACE=cl0`). Opt-in
//!   (`RGEX_CLUSTER_TESTS=1`, set by the conduit matrix's `cluster` row):
//!   minutes of 6-rank jobs.
//! - `a_host_lost_mid_job`: host3 taken away mid-job (opt-in as well).
//!
//! Skipped, saying why, where not root or where Slurm cannot be installed.

mod common;
use common::{check_counts, conduit, counts, report_skip, skip_unless};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const AM: &str = env!("CARGO_BIN_EXE_am_conformance");
const RMA: &str = env!("CARGO_BIN_EXE_rma_conformance");
const AD: &str = env!("CARGO_BIN_EXE_atomics_conformance");
const COLL: &str = env!("CARGO_BIN_EXE_coll_conformance");
const VIS: &str = env!("CARGO_BIN_EXE_vis_conformance");
const PROTOCOL: &str = env!("CARGO_BIN_EXE_protocol_conformance");
const SIGNAL: &str = env!("CARGO_BIN_EXE_signal_conformance");
const SEGMENTS: &str = env!("CARGO_BIN_EXE_segment_conformance");
const FLOOD: &str = env!("CARGO_BIN_EXE_am_flood");
const JOB_INFO: &str = env!("CARGO_BIN_EXE_job_info");

/// The script, from this crate's directory.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/cluster.sh")
}

/// One cluster at a time: the jobs are six ranks each on a small machine
/// (the clusters themselves would not collide: each test has its own
/// directory and namespaces).
static ONE: Mutex<()> = Mutex::new(());

/// Why no cluster can run here, if none can.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "not root: the cluster needs network, UTS and mount namespaces and the Slurm daemons"
                .into(),
        );
    }
    None
}

/// A cluster started by `ci/cluster.sh up` in `dir`; brought down on drop.
struct Cluster {
    dir: PathBuf,
}

impl Cluster {
    /// `up` in a fresh directory named for `name`; `fail_after` makes it
    /// fail after that stage. Err: the script's output.
    fn up(name: &str, fail_after: Option<&str>) -> (Cluster, Result<(), String>) {
        let dir = PathBuf::from(format!(
            "/var/tmp/rgex-cluster-test-{}-{name}",
            std::process::id()
        ));
        let c = Cluster { dir };
        let mut cmd = c.script(&["up"]);
        if let Some(stage) = fail_after {
            cmd.env("RGEX_CLUSTER_FAIL_AFTER", stage);
        }
        let out = cmd.output().expect("bash runs ci/cluster.sh");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!("cluster up ({name}): {text}");
        let ok = out.status.success();
        (c, if ok { Ok(()) } else { Err(text) })
    }

    fn script(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg(script())
            .args(args)
            .env("RGEX_CLUSTER_DIR", &self.dir)
            .stdin(Stdio::null());
        cmd
    }

    /// The inodes of the cluster's namespaces, as the script listed them.
    fn namespaces(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("ns"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `down`; Err: its output.
    fn down(&self) -> Result<(), String> {
        let out = self
            .script(&["down"])
            .output()
            .expect("bash runs ci/cluster.sh");
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// `srun --mpi=pmix -N 3 -n 6 exe args` with `env` for every rank,
    /// bounded by 240 s (then srun is killed and the job fails); returns
    /// (success, stdout, stderr).
    fn srun(&self, exe: &str, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
        let mut cmd = self.script(&["run", "-N", "3", "-n", "6", "--kill-on-bad-exit=1", exe]);
        cmd.args(args)
            // The hosts' interface on the bridge: the only one the
            // network conduit may use there.
            .env("FI_TCP_IFACE", "cl0")
            .env("FI_SOCKETS_IFACE", "cl0")
            // The soft verbs device's UDP wire binds that interface too
            // (1024-byte packets: within the bridge's 1500-byte MTU).
            .env("RGEX_IBV_SOFT_ADDR", "cl0")
            .env("RGEX_IBV_MTU", "1024")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("ci/cluster.sh run starts");
        let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let o = std::thread::spawn(move || std::io::read_to_string(&mut out).unwrap_or_default());
        let e = std::thread::spawn(move || std::io::read_to_string(&mut err).unwrap_or_default());
        let deadline = Instant::now() + Duration::from_secs(240);
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait for srun") {
                break Some(s);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (out, err) = (o.join().unwrap(), e.join().unwrap());
        println!("status {status:?}\n--- stdout\n{out}--- stderr\n{err}---");
        (status.is_some_and(|s| s.success()), out, err)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Err(e) = self.down() {
            eprintln!("cluster down failed: {e}");
        }
    }
}

/// Everything of a cluster still on this machine, given the inodes of
/// its namespaces and its directory: processes in those namespaces (so
/// the namespaces themselves, their interfaces and their /dev/shm and
/// /tmp mounts), processes naming the directory, mounts in this
/// namespace naming it, and the directory.
fn leftovers(namespaces: &[String], dir: &Path) -> Vec<String> {
    let mut left = Vec::new();
    let dir_s = dir.to_string_lossy().into_owned();
    for p in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let name = p.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        for ns in ["net", "mnt", "uts"] {
            if let Ok(target) = std::fs::read_link(p.path().join("ns").join(ns)) {
                let t = target.to_string_lossy();
                // "net:[4026532180]"
                let inode = t.split(['[', ']']).nth(1).unwrap_or("");
                if namespaces.iter().any(|n| n == inode) {
                    left.push(format!(
                        "process {name} in the cluster's {ns} namespace {inode}"
                    ));
                }
            }
        }
        let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&dir_s) {
            left.push(format!(
                "process {name} naming {dir_s}: {}",
                String::from_utf8_lossy(&cmdline)
            ));
        }
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for m in mounts
        .lines()
        .filter(|m| m.contains(&dir_s) || m.contains("rgex-shm") || m.contains("rgex-tmp"))
    {
        left.push(format!("mount: {m}"));
    }
    if dir.exists() {
        left.push(format!("directory {dir_s}"));
    }
    left
}

/// Names in this machine's /dev/shm.
fn shm() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `down` on `c` succeeds and leaves nothing of it (`what` names the case).
fn check_down(c: &Cluster, what: &str) {
    let ns = c.namespaces();
    assert!(!ns.is_empty(), "{what}: the script listed no namespaces");
    // The check sees the cluster before down (so it can fail after).
    assert!(
        !leftovers(&ns, &c.dir).is_empty(),
        "{what}: nothing of the cluster found before down"
    );
    c.down()
        .unwrap_or_else(|e| panic!("{what}: down failed: {e}"));
    // The last process of a namespace is gone once down returns; the
    // kernel may take a moment to reap a killed daemon whose parent is
    // the machine's init: bounded wait for that.
    let mut left = leftovers(&ns, &c.dir);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        left = leftovers(&ns, &c.dir);
    }
    assert!(left.is_empty(), "{what}: left behind after down: {left:#?}");
}

#[test]
fn down_leaves_nothing_behind() {
    if let Some(why) = unavailable() {
        report_skip(&format!("the whole test: {why}"));
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let shm_before = shm();
    // An up that fails after each stage: down cleans what it had made.
    for stage in ["hosts", "bridge", "munge", "slurmctld", "slurmd"] {
        let (c, up) = Cluster::up(&format!("fail-{stage}"), Some(stage));
        if let Err(e) = &up {
            if e.contains("could not install") || e.contains("no apt-get") {
                report_skip(&format!(
                    "the whole test: Slurm cannot be installed here: {e}"
                ));
                return;
            }
        }
        assert!(
            up.as_ref()
                .is_err_and(|e| e.contains(&format!("failing after stage {stage}"))),
            "up with RGEX_CLUSTER_FAIL_AFTER={stage} must fail at that stage: {up:?}"
        );
        check_down(&c, &format!("after an up that failed after {stage}"));
    }
    // A whole cluster, a job running on every host, then srun and one
    // host's holder and slurmd killed: down still leaves nothing.
    let (c, up) = Cluster::up("killed", None);
    up.expect("up");
    let mut job = c
        .script(&["run", "-N", "3", "-n", "3", "sleep", "300"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run starts");
    // Bounded: the job's three sleeps appear in the hosts' namespaces.
    let ns = c.namespaces();
    let sleeps = || {
        leftovers(&ns, &c.dir)
            .iter()
            .filter(|l| l.contains("net namespace"))
            .count()
    };
    let before = sleeps();
    for _ in 0..100 {
        if sleeps() >= before + 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        sleeps() >= before + 3,
        "the job's processes did not start on the hosts"
    );
    let _ = job.kill();
    let _ = job.wait();
    let host2 = std::fs::read_to_string(c.dir.join("holder-2.pid")).expect("host2's holder");
    let slurmd2 =
        std::fs::read_to_string(c.dir.join("run/slurmd-host2.pid")).expect("host2's slurmd");
    for pid in [host2.trim(), slurmd2.trim()] {
        let pid: i32 = pid.parse().expect("a pid");
        // SAFETY: kill has no memory preconditions; the pid is the cluster's own.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    check_down(
        &c,
        "after a job whose srun, host2's holder and slurmd were killed",
    );
    // The machine's own /dev/shm: the hosts had their own.
    let new: Vec<_> = shm()
        .difference(&shm_before)
        .filter(|n| n.contains("slurm") || n.contains("pmix"))
        .cloned()
        .collect();
    assert!(
        new.is_empty(),
        "the cluster wrote to this machine's /dev/shm: {new:?}"
    );
}

/// Why the conformance jobs are not run, if they are not.
fn conformance_skip() -> Option<String> {
    if let Some(why) = unavailable() {
        return Some(why);
    }
    if std::env::var("RGEX_CLUSTER_TESTS").as_deref() != Ok("1") {
        return Some("RGEX_CLUSTER_TESTS=1 is not set: the jobs across the test cluster's hosts are opt-in (bash ci/conduits.sh cluster)".into());
    }
    match conduit().as_str() {
        "ofi" if std::env::var("RGEX_SHM_BYPASS").as_deref() != Ok("0") => None,
        "ibv" if std::env::var("RGEX_IBV_SOFT_WIRE").as_deref() == Ok("udp")
            && std::env::var("RGEX_SHM_BYPASS").as_deref() != Ok("0") => None,
        "ibv" => Some("ibv across hosts needs the software verbs device's UDP wire (RGEX_IBV_SOFT_WIRE=udp; its shared-memory wire does not cross hosts) and the bypass on".into()),
        c => Some(format!("RGEX_CONDUIT={c}: jobs across hosts need ofi with the shared-memory bypass on")),
    }
}

/// Run `exe args` on the cluster (3 hosts x 2 ranks) and require exactly
/// `checks`; returns stdout.
fn across_hosts(
    name: &str,
    exe: &str,
    args: &[&str],
    env: &[(&str, &str)],
    checks: (usize, usize),
) -> Option<String> {
    if skip_unless(
        conformance_skip().is_none(),
        &conformance_skip().unwrap_or_default(),
    ) {
        return None;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let (c, up) = Cluster::up(name, None);
    up.expect("cluster up");
    let (ok, out, _) = c.srun(exe, args, env);
    assert!(ok, "the job failed (output above)");
    check_counts(&out, checks);
    Some(out)
}

#[test]
fn pmix_finds_six_ranks_on_three_hosts() {
    if let Some(out) = across_hosts("info", JOB_INFO, &[], &[], (7, 0)) {
        assert!(out.contains("ok: 6 ranks via pmix"), "{out}");
    }
}

#[test]
fn active_messages_across_hosts() {
    if let Some(out) = across_hosts("am", AM, &[], &[], counts::am(6, false)) {
        // Rank 0's limits: its host's ranks (0, 1) differ from the
        // network's (2 to 5): the job spans hosts, locality by hostname.
        let tag = "max Medium with no arguments, by peer: ";
        let line = out
            .lines()
            .find(|l| l.contains(tag))
            .unwrap_or_else(|| panic!("no {tag:?}"));
        let list: Vec<&str> = line[line.find(tag).unwrap() + tag.len()..]
            .trim_start_matches('[')
            .split(']')
            .next()
            .unwrap()
            .split(", ")
            .collect();
        assert!(
            list.len() == 6
                && list[0] == list[1]
                && list[1] != list[2]
                && list[2..].iter().all(|l| *l == list[2]),
            "{list:?}"
        );
    }
}

#[test]
fn rma_across_hosts() {
    if let Some(out) = across_hosts("rma", RMA, &[], &[], counts::rma(6, false)) {
        assert!(out.contains("(by peer: [Mapped, Mapped, "), "{out}");
    }
}

#[test]
fn atomics_across_hosts() {
    across_hosts("atomics", AD, &["2", "300"], &[], counts::atomics(6));
}

#[test]
fn collectives_across_hosts() {
    across_hosts("coll", COLL, &[], &[], counts::coll(6));
}

#[test]
fn vis_across_hosts() {
    across_hosts("vis", VIS, &[], &[("VIS_CASES", "20")], counts::vis("auto"));
}

#[test]
fn protocol_across_hosts() {
    across_hosts(
        "protocol",
        PROTOCOL,
        &[],
        &[("RGEX_RMA", "reference"), ("RGEX_ATOMICS", "reference")],
        (8, 0),
    );
}

#[test]
fn signal_across_hosts() {
    across_hosts("signal", SIGNAL, &[], &[], counts::SIGNAL);
}

#[test]
fn client_segments_across_hosts() {
    across_hosts("segments", SEGMENTS, &[], &[], (7, 0));
}

#[test]
fn flood_across_hosts() {
    across_hosts("flood", FLOOD, &["100000"], &[], (1, 0));
}

/// A host lost mid-job: `ci/cluster.sh lose 3` takes host3's link down
/// and kills everything on it (slurmd, slurmstepd, ranks 4 and 5) once
/// every rank is past its first barrier. Each of the four survivors
/// waits on the lost ranks in every handle kind (two barriers; a get, an
/// atomic, a request and a VIS get to each lost rank) and must get an
/// error naming a lost rank within the dead-peer timeout
/// ([`LOST_TIMEOUT`]); the job ends non-zero (the survivors exit 3:
/// srun 22.05 exits 0 after a node failure when every task it heard from
/// did) and srun names host3's failure; nothing hangs (srun is bounded by
/// 240 s, each wait by the program's HANG_LIMIT).
#[test]
fn a_host_lost_mid_job() {
    if skip_unless(
        conformance_skip().is_none(),
        &conformance_skip().unwrap_or_default(),
    ) {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let (c, up) = Cluster::up("lost", None);
    up.expect("cluster up");
    let marks = c.dir.join("marks");
    std::fs::create_dir(&marks).expect("the marks directory");
    let marks_s = marks.to_string_lossy().into_owned();
    let job = std::thread::scope(|s| {
        let job = s.spawn(|| {
            c.srun(
                env!("CARGO_BIN_EXE_job_lost_host"),
                &["host3", &marks_s],
                &[("RGEX_OFI_TIMEOUT", LOST_TIMEOUT)],
            )
        });
        // Bounded: all six ranks past their first barrier.
        let ready = || (0..6).all(|r| marks.join(format!("ready-{r}")).exists());
        for _ in 0..1200 {
            if ready() || job.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if ready() {
            let lose = c.script(&["lose", "3"]).output().expect("lose runs");
            assert!(
                lose.status.success(),
                "lose 3: {}",
                String::from_utf8_lossy(&lose.stderr)
            );
        }
        // The survivors go on (also when lose failed: they then time out).
        std::fs::write(marks.join("lost"), "").expect("the lost mark");
        job.join().expect("the srun thread")
    });
    let (ok, out, err) = job;
    assert!(!ok, "the job must end non-zero: host3's ranks were lost");
    assert!(
        err.contains("Node failure on host3"),
        "srun does not name host3's failure:\n{err}"
    );
    // 4 survivors x (2 barriers + 4 waits x 2 lost ranks).
    let checks = check_counts(&out, (40, 0));
    for r in 0..4 {
        assert_eq!(
            checks
                .oks
                .iter()
                .filter(|l| l.starts_with(&format!("rank {r}: ")))
                .count(),
            10,
            "rank {r}'s waits"
        );
    }
}

/// The dead-peer timeout of [`a_host_lost_mid_job`], in seconds (as in
/// tests/tests/stopped_peer.rs).
const LOST_TIMEOUT: &str = "2";
