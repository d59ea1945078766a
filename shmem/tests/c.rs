//! rgex-shmem's C tests: the programs of `tests/c/` (one per section:
//! setup, heap, RMA, AMOs, waits, signals, threads, and bad input), built with
//! `bin/oshcc` and run under `bin/oshrun`, with exactly the checks each
//! must report (as the Rust suite's conformance programs: `ok: ` and
//! `skip: ` lines, counted by `rgex_tests::Checks`), on the conduit
//! `RGEX_CONDUIT` names (smp by default; the conduit matrix runs the
//! same tests on each). And the library's exports: `nm -D` lists every
//! function of shmem.h and shmemx.h, and a program taking the address of
//! each one links and runs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

mod shown;
mod workspace_build;
use shown::shown;

/// The C programs, each with its own section.
const PROGRAMS: &[&str] = &[
    "setup",
    "heap",
    "rma",
    "amo",
    "wait",
    "signal",
    "threads",
    "errors",
    "teams",
    "coll",
    "locks",
    "ctx",
    "statics",
    "global_exit",
];

/// Where the library, rgex-run and the built C programs are.
struct Built {
    /// The cargo profile directory (librgex_shmem.so, rgex-run).
    profile: PathBuf,
    /// The C programs.
    programs: PathBuf,
}

fn shmem_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Build the library and rgex-run (cargo, in this test's target
/// directory and profile), then every C program with oshcc; once.
fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let profile = workspace_build::profile_dir();
        let target = profile.parent().expect("a target directory").to_path_buf();
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .arg("build")
            .args(workspace_build::SELECTION)
            .arg("--target-dir")
            .arg(&target)
            .args(["--profile", &workspace_build::profile_name(&profile)]);
        let st = cargo.status().expect("cargo runs");
        assert!(st.success(), "building librgex_shmem and rgex-run: {st}");
        let programs = profile.join("shmem-c-tests");
        std::fs::create_dir_all(&programs).expect("the target directory is writable");
        for p in PROGRAMS {
            let src = shmem_dir().join("tests/c").join(format!("{p}.c"));
            let out = oshcc(&profile)
                .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-pthread"])
                .arg(&src)
                .arg("-o")
                .arg(programs.join(p))
                .output()
                .expect("oshcc runs");
            assert!(
                out.status.success(),
                "oshcc {}: {}",
                src.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Built { profile, programs }
    })
}

/// `bin/oshcc`, told where this profile's library is.
fn oshcc(profile: &Path) -> Command {
    let mut c = Command::new(shmem_dir().join("bin/oshcc"));
    c.env("RGEX_SHMEM_LIBDIR", profile);
    c
}

/// The conduit under test (`RGEX_CONDUIT`, smp when unset).
fn conduit() -> String {
    std::env::var("RGEX_CONDUIT")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "smp".into())
}

/// True if node-local peers' heaps are mapped here (smp, or ofi and ibv
/// with the shared-memory bypass on).
fn shares_memory() -> bool {
    match conduit().as_str() {
        "smp" => true,
        "ofi" | "ibv" => std::env::var("RGEX_SHM_BYPASS").as_deref() != Ok("0"),
        _ => false,
    }
}

/// Run `program` (one of [`PROGRAMS`]) on `n` PEs under `bin/oshrun
/// -np n`, with `env` added; print what it said (shown when a test fails).
fn oshrun(n: u32, program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let b = built();
    let mut c = Command::new(shmem_dir().join("bin/oshrun"));
    c.env("RGEX_RUN", b.profile.join("rgex-run"))
        .args(["-np", &n.to_string(), "--timeout", "240"])
        .arg(b.programs.join(program))
        .args(args)
        .envs(env.iter().copied());
    shown(
        format_args!("{program} on {n} PEs"),
        c.output().expect("oshrun runs"),
    )
}

/// Run `program` and require success with exactly `oks` passed and
/// `skips` skipped checks, its final count saying the same, on the
/// conduit asked for.
fn run_ok(
    n: u32,
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
    (oks, skips): (usize, usize),
) {
    let out = oshrun(n, program, args, env);
    assert!(out.status.success(), "{program} failed: {}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let checks = rgex_tests::Checks::parse(&stdout);
    assert_eq!(
        checks.conduits,
        [conduit()],
        "the job names the conduit it ran on"
    );
    for s in &checks.skips {
        rgex_tests::report_skip_line(&format!(
            "skip on RGEX_CONDUIT={}: c::{program} on {n} PEs: {s}",
            conduit()
        ));
    }
    assert_eq!(
        (checks.oks.len(), checks.skips.len()),
        (oks, skips),
        "expected {oks} passed and {skips} skipped checks; passed: {:#?}, skipped: {:#?}",
        checks.oks,
        checks.skips
    );
    let total = format!("checks: {oks} passed, {skips} skipped");
    assert!(
        stdout.contains(&total),
        "the program's own count is not {total:?}"
    );
}

/// setup.c: 7 checks; the one through shmem_ptr to a peer needs its
/// heap mapped here.
fn setup(n: u32) -> (usize, usize) {
    if n == 1 || shares_memory() {
        (7, 0)
    } else {
        (6, 1)
    }
}

#[test]
fn setup_one_pe() {
    run_ok(1, "setup", &["1"], &[], setup(1));
}

#[test]
fn setup_two_pes() {
    run_ok(2, "setup", &["2"], &[], setup(2));
}

#[test]
fn setup_three_pes() {
    run_ok(3, "setup", &["3"], &[], setup(3));
}

/// heap.c runs on an 8 MiB heap (it fills most of it).
const HEAP_ENV: &[(&str, &str)] = &[("SHMEM_SYMMETRIC_SIZE", "8M")];

#[test]
fn heap_two_pes() {
    run_ok(2, "heap", &[], HEAP_ENV, (8, 0));
}

#[test]
fn heap_three_pes() {
    run_ok(3, "heap", &[], HEAP_ENV, (8, 0));
}

/// rma.c: 24 types, 5 sized forms, mem, the generic ones, 1 MiB.
const RMA: (usize, usize) = (32, 0);

#[test]
fn rma_one_pe() {
    run_ok(1, "rma", &[], &[], RMA);
}

#[test]
fn rma_two_pes() {
    run_ok(2, "rma", &[], &[], RMA);
}

#[test]
fn rma_three_pes() {
    run_ok(3, "rma", &[], &[], RMA);
}

/// amo.c: 14 extended, 12 standard and 7 bitwise types, one shared
/// word, the generic ones.
const AMO: (usize, usize) = (35, 0);

#[test]
fn amo_two_pes() {
    run_ok(2, "amo", &[], &[], AMO);
}

#[test]
fn amo_three_pes() {
    run_ok(3, "amo", &[], &[], AMO);
}

/// The AMOs through rgex's active-message reference (every conduit has it).
#[test]
fn amo_reference_two_pes() {
    run_ok(2, "amo", &[], &[("RGEX_ATOMICS", "reference")], AMO);
}

/// With a progress thread on every PE (what answers AMOs over the
/// network while a PE computes).
#[test]
fn amo_progress_thread_two_pes() {
    run_ok(2, "amo", &[], &[("RGEX_PROGRESS_THREAD", "1")], AMO);
}

/// wait.c: 14 types, a late writer, the generic ones.
const WAIT: (usize, usize) = (16, 0);

#[test]
fn wait_one_pe() {
    run_ok(1, "wait", &[], &[], WAIT);
}

#[test]
fn wait_two_pes() {
    run_ok(2, "wait", &[], &[], WAIT);
}

#[test]
fn wait_three_pes() {
    run_ok(3, "wait", &[], &[], WAIT);
}

/// signal.c: set, an add flood, every typed, sized and mem form.
const SIGNAL: (usize, usize) = (5, 0);

#[test]
fn signal_one_pe() {
    run_ok(1, "signal", &[], &[], SIGNAL);
}

#[test]
fn signal_two_pes() {
    run_ok(2, "signal", &[], &[], SIGNAL);
}

#[test]
fn signal_three_pes() {
    run_ok(3, "signal", &[], &[], SIGNAL);
}

/// Every put-with-signal through rgex's active-message reference.
#[test]
fn signal_reference_two_pes() {
    run_ok(2, "signal", &[], &[("RGEX_RMA", "reference")], SIGNAL);
}

/// threads.c: four threads per PE under SHMEM_THREAD_MULTIPLE.
const THREADS: (usize, usize) = (3, 0);

#[test]
fn threads_one_pe() {
    run_ok(1, "threads", &[], &[], THREADS);
}

#[test]
fn threads_two_pes() {
    run_ok(2, "threads", &[], &[], THREADS);
}

#[test]
fn threads_three_pes() {
    run_ok(3, "threads", &[], &[], THREADS);
}

/// teams.c: the predefined teams, split_strided, split_2d, 50 teams made
/// and destroyed.
const TEAMS: (usize, usize) = (6, 0);

#[test]
fn teams_one_pe() {
    run_ok(1, "teams", &[], &[], TEAMS);
}

#[test]
fn teams_three_pes() {
    run_ok(3, "teams", &[], &[], TEAMS);
}

#[test]
fn teams_four_pes() {
    run_ok(4, "teams", &[], &[], TEAMS);
}

/// coll.c: broadcast, (f)collect, alltoall(s), the reductions, a split
/// team, and the active-set forms on the job and on a set without a team.
const COLL: (usize, usize) = (7, 0);

#[test]
fn coll_one_pe() {
    run_ok(1, "coll", &[], &[], COLL);
}

#[test]
fn coll_three_pes() {
    run_ok(3, "coll", &[], &[], COLL);
}

#[test]
fn coll_four_pes() {
    run_ok(4, "coll", &[], &[], COLL);
}

/// locks.c: exclusion, test_lock, every queued PE served.
const LOCKS: (usize, usize) = (3, 0);

#[test]
fn locks_two_pes() {
    run_ok(2, "locks", &[], &[], LOCKS);
}

#[test]
fn locks_three_pes() {
    run_ok(3, "locks", &[], &[], LOCKS);
}

/// ctx.c: contexts, their RMA and AMOs, a team's context.
const CTX: (usize, usize) = (4, 0);

#[test]
fn ctx_two_pes() {
    run_ok(2, "ctx", &[], &[], CTX);
}

#[test]
fn ctx_three_pes() {
    run_ok(3, "ctx", &[], &[], CTX);
}

/// statics.c: global and static variables as symmetric objects.
const STATICS: (usize, usize) = (4, 0);

#[test]
fn statics_one_pe() {
    run_ok(1, "statics", &[], &[], STATICS);
}

#[test]
fn statics_three_pes() {
    run_ok(3, "statics", &[], &[], STATICS);
}

/// global_exit.c: PE 0 calls `shmem_global_exit(status)` while the
/// others wait on a word nobody writes: the job ends with `status`
/// (not the launcher's timeout, 124), and no waiter goes on.
fn global_exit(n: u32, status: i32) {
    let arg = status.to_string();
    let out = oshrun(n, "global_exit", &[&arg], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(status), "the job's status");
    assert!(
        stdout.contains(&format!("PE 0: global exit with status {status}")),
        "PE 0 did not get to the call"
    );
    assert!(!stdout.contains("went on"), "PE 0 went on after the call");
    assert!(!stdout.contains("the wait ended"), "a waiter went on");
}

#[test]
fn global_exit_three_ends_every_pe() {
    global_exit(2, 3);
}

#[test]
fn global_exit_zero_ends_every_pe() {
    global_exit(3, 0);
}

/// Bad input ends the job non-zero, with a message naming the PE, the
/// call, the argument and the limit.
fn fails(case: &str, says: &[&str]) {
    let out = oshrun(2, "errors", &[case], HEAP_ENV);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "{case}: the job succeeded");
    assert!(
        !stdout.contains("ended without an error"),
        "{case}: a PE went on"
    );
    for s in says {
        assert!(stderr.contains(s), "{case}: stderr does not say {s:?}");
    }
}

#[test]
fn a_call_before_init() {
    // Both PEs fail: either may be the first, and the one the launcher ends.
    fails(
        "before_init",
        &[
            "rgex-shmem: PE ",
            ": shmem_n_pes: called before shmem_init (call shmem_init",
        ],
    );
}

#[test]
fn a_call_after_finalize() {
    fails(
        "after_finalize",
        &["shmem_barrier_all: called after shmem_finalize"],
    );
}

#[test]
fn a_non_symmetric_address() {
    fails(
        "not_symmetric",
        &[
            "rgex-shmem: PE 0: shmem_long_put: dest = 0x",
            "(64 bytes) is not symmetric: the symmetric heap is 0x",
            "(8388608 bytes) and the static data 0x",
        ],
    );
}

#[test]
fn an_access_past_the_heap() {
    fails(
        "past_the_heap",
        &[
            "rgex-shmem: PE 0: shmem_getmem: source = 0x",
            "(64 bytes) is not symmetric",
        ],
    );
}

#[test]
fn a_pe_out_of_range() {
    fails(
        "pe_out_of_range",
        &["rgex-shmem: PE 0: shmem_long_p: PE 2 is out of range: the job has PEs 0..=1"],
    );
}

#[test]
fn out_of_heap() {
    fails(
        "out_of_heap",
        &[
            "shmem_malloc: out of symmetric heap: 1099511627776 bytes asked for, the largest \
           free block is 8388544 bytes of a 8388608-byte heap (SHMEM_SYMMETRIC_SIZE sets it)",
        ],
    );
}

#[test]
fn an_alignment_past_the_limit() {
    fails(
        "align_too_large",
        &[
            "rgex-shmem: PE ",
            ": shmem_align: alignment = 2147483648 is more than the \
           1073741824 bytes that every PE's heap base shares (the most shmem_align supports)",
        ],
    );
}

#[test]
fn mismatched_malloc_sizes() {
    fails(
        "mismatch",
        &[
            "shmem_malloc: a collective with mismatched arguments: this PE's size is ",
            ", but the PEs' range from 64 to 128 (every PE must make the same call)",
        ],
    );
}

#[test]
fn a_free_of_no_block() {
    fails(
        "bad_free",
        &["shmem_free: ptr = 0x", "is not a block shmem_malloc"],
    );
}

#[test]
fn a_bad_comparison() {
    fails(
        "bad_cmp",
        &["PE 0: shmem_long_wait_until: cmp = 42 is not a SHMEM_CMP_* value"],
    );
}

#[test]
fn a_bad_signal_op() {
    fails(
        "bad_sig_op",
        &["PE 0: shmem_putmem_signal: sig_op = 9 is neither SHMEM_SIGNAL_SET (0) nor SHMEM_SIGNAL_ADD (1)"],
    );
}

/// The functions the headers name: shmem.h, shmemx.h and pshmem.h,
/// preprocessed together as C11.
struct Headers {
    /// Declared and not defined inline: the library must export these.
    declared: Vec<String>,
    /// Defined inline in a header (`static inline`).
    inline: Vec<String>,
}

fn headers() -> Headers {
    let mut cc = Command::new("cc")
        .args(["-E", "-P", "-std=c11", "-I"])
        .arg(shmem_dir().join("include"))
        .args(["-x", "c", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cc runs");
    cc.stdin
        .take()
        .expect("cc's stdin")
        .write_all(b"#include <shmemx.h>\n#include <pshmem.h>\n")
        .expect("cc reads its stdin");
    let out = cc.wait_with_output().expect("cc ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let named = |n: &str| n.starts_with("shmem") || n.starts_with("pshmem");
    let mut declared = Vec::new();
    let mut inline = Vec::new();
    // Each declaration ends with ';' (an inline definition's body holds
    // calls, named by the declarations anyway).
    for part in text.split([';', '{', '}']) {
        let flat = part.split_whitespace().collect::<Vec<_>>().join(" ");
        // pshmem.h's `extern __typeof__(shmem_X) pshmem_X`.
        if let Some(rest) = flat.strip_prefix("extern __typeof__(") {
            let (of, name) = rest.split_once(')').expect("__typeof__(NAME) NAME");
            let name = name.trim();
            assert_eq!(
                of.strip_prefix("shmem_"),
                name.strip_prefix("pshmem_"),
                "{flat}: a pshmem_ name of another routine's type"
            );
            declared.push(name.to_string());
            continue;
        }
        let Some(open) = flat.find('(') else { continue };
        let head = &flat[..open];
        let Some(name) = head.split([' ', '*']).next_back() else {
            continue;
        };
        if !named(name) {
            continue;
        }
        if head.starts_with("static inline") {
            inline.push(name.to_string());
        } else if !head.starts_with("return") && head.contains(' ') {
            declared.push(name.to_string());
        }
    }
    declared.retain(|n| !inline.contains(n));
    for v in [&mut declared, &mut inline] {
        v.sort();
        v.dedup();
    }
    Headers { declared, inline }
}

#[test]
fn nm_lists_every_function_of_the_headers() {
    let b = built();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(b.profile.join("librgex_shmem.so"))
        .output()
        .expect("nm runs");
    assert!(out.status.success());
    let nm = String::from_utf8_lossy(&out.stdout);
    let exported: Vec<&str> = nm
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "T", name] => Some(name),
            _ => None,
        })
        .filter(|n| n.starts_with("shmem") || n.starts_with("pshmem"))
        .collect();
    let Headers { declared, inline } = headers();
    assert!(
        declared.len() > 700,
        "only {} functions declared",
        declared.len()
    );
    let missing: Vec<_> = declared
        .iter()
        .filter(|d| !exported.contains(&d.as_str()))
        .collect();
    assert!(missing.is_empty(), "declared but not exported: {missing:?}");
    let undeclared: Vec<_> = exported
        .iter()
        .filter(|e| !declared.iter().any(|d| d == *e))
        .collect();
    assert!(
        undeclared.is_empty(),
        "exported but not declared: {undeclared:?}"
    );
    // The profiling interface: every shmem_ routine, exported or inline,
    // has its pshmem_ form (shmemx_ extensions have none).
    let all: Vec<&String> = declared.iter().chain(&inline).collect();
    let unprofiled: Vec<_> = all
        .iter()
        .filter_map(|n| n.strip_prefix("shmem_"))
        .filter(|n| !all.iter().any(|p| p.strip_prefix("pshmem_") == Some(n)))
        .collect();
    assert!(
        unprofiled.is_empty(),
        "shmem_ routines without a pshmem_ form: {unprofiled:?}"
    );
}

/// A program taking the address of every declared function links
/// against the library and runs.
#[test]
fn a_program_naming_every_function_links() {
    let b = built();
    let names = headers().declared;
    let mut src = String::from(
        "#include <shmem.h>\n#include <shmemx.h>\n#include <pshmem.h>\n#include <stdio.h>\n",
    );
    src.push_str("typedef void (*fn)(void);\nstatic fn all[] = {\n");
    for n in &names {
        src.push_str(&format!("    (fn){n},\n"));
    }
    src.push_str("};\nint main(void) {\n    size_t k = 0;\n");
    src.push_str("    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) k += all[i] != 0;\n");
    src.push_str("    printf(\"%zu functions\\n\", k);\n    return 0;\n}\n");
    let c = b.programs.join("every_function.c");
    std::fs::write(&c, src).expect("writable");
    let exe = b.programs.join("every_function");
    let out = oshcc(&b.profile)
        .args(["-std=c11", "-Wall", "-Werror"])
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("oshcc runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ran = Command::new(&exe).output().expect("it runs");
    assert!(ran.status.success());
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        format!("{} functions\n", names.len())
    );
}

/// Run `c` to its end and return what it said, killing it if it is still
/// running after 1200 polls 100 ms apart: a wrapper that runs itself
/// never ends on its own. (A watchdog for a hang, not a timing check.)
fn finished(mut c: Command, what: &str) -> Output {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("it starts");
    for _ in 0..1200 {
        if child.try_wait().expect("its status").is_some() {
            return child.wait_with_output().expect("its output");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // It may have ended since the last poll; either way it is reaped.
    let _ = child.kill();
    let out = child.wait_with_output().expect("its output");
    panic!(
        "{what} still ran after 1200 polls 100 ms apart (killed: {}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `./configure CC=oshcc` exports CC=oshcc to every probe, and `make
/// CC=oshcc` to its recipes: oshcc must not take its compiler from $CC,
/// or it runs itself, its command line growing each time (configure
/// took hours). It compiles and links with the compiler it should.
#[test]
fn oshcc_under_cc_naming_itself_links() {
    let b = built();
    let exe = b.programs.join("setup_cc_is_oshcc");
    let _ = std::fs::remove_file(&exe);
    let mut c = oshcc(&b.profile);
    c.env("CC", shmem_dir().join("bin/oshcc"))
        .env_remove("OSHCC_CC")
        .args(["-std=c11", "-pthread"])
        .arg(shmem_dir().join("tests/c/setup.c"))
        .arg("-o")
        .arg(&exe);
    let out = finished(c, "oshcc with CC=oshcc");
    assert!(
        out.status.success(),
        "oshcc with CC=oshcc: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        exe.is_file(),
        "no {} after oshcc said it succeeded",
        exe.display()
    );
}

/// OSHCC_CC naming oshcc itself (by its path or a link to it) is refused
/// at once, saying so, instead of oshcc running itself.
#[test]
fn oshcc_refuses_itself_as_its_compiler() {
    let b = built();
    let me = shmem_dir().join("bin/oshcc");
    let link = b.programs.join("oshcc-link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&me, &link).expect("a symlink in the target directory");
    for named in [&me, &link] {
        let mut c = oshcc(&b.profile);
        c.env("OSHCC_CC", named)
            .arg("-c")
            .arg(shmem_dir().join("tests/c/setup.c"))
            .arg("-o")
            .arg(b.programs.join("refused.o"));
        let out = finished(c, "oshcc with OSHCC_CC=oshcc");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "OSHCC_CC={}: {err}",
            named.display()
        );
        assert!(
            err.contains(&format!("OSHCC_CC={} is oshcc itself", named.display())),
            "OSHCC_CC={}: {err}",
            named.display()
        );
    }
}

/// The rows `bench/shmem_bench.c` prints (issue 41's benchmark), in its
/// order: name and size.
const BENCH_ROWS: [(&str, u64); 15] = [
    ("put_lat", 8),
    ("get_lat", 8),
    ("put_bw", 4096),
    ("put_bw", 65536),
    ("put_bw", 1 << 20),
    ("get_bw", 4096),
    ("get_bw", 65536),
    ("get_bw", 1 << 20),
    ("put_nbi_rate", 8),
    ("fadd_lat", 8),
    ("cswap_lat", 8),
    ("barrier_all", 0),
    ("broadcast", 8),
    ("fcollect", 8),
    ("alltoall", 1024),
];

/// bench/shmem_bench.c builds with oshcc (warnings as errors) and runs
/// on 2 PEs in its quick mode: every row once, in order, each with a
/// positive finite figure and its unit, then `shmem_bench done`, and the
/// job succeeds (finalize included). No timing is judged.
#[test]
fn shmem_bench_quick_two_pes() {
    let b = built();
    let src = shmem_dir().join("bench/shmem_bench.c");
    let exe = b.programs.join("shmem_bench");
    let out = oshcc(&b.profile)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("oshcc runs");
    assert!(
        out.status.success(),
        "oshcc {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = oshrun(2, "shmem_bench", &["--quick"], &[]);
    assert!(out.status.success(), "shmem_bench failed: {}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Vec<String>> = stdout
        .lines()
        .map(|l| l.strip_prefix("[0] ").unwrap_or(l))
        .filter(|l| l.starts_with("shmem_bench "))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(
        lines.len(),
        BENCH_ROWS.len() + 1,
        "one line per row and the last: {lines:?}"
    );
    for (w, (name, size)) in lines.iter().zip(BENCH_ROWS) {
        assert_eq!(w.len(), 5, "shmem_bench NAME SIZE VALUE UNIT: {w:?}");
        assert_eq!(
            (w[1].as_str(), w[2].parse::<u64>().ok()),
            (name, Some(size)),
            "{w:?}"
        );
        let v: f64 = w[3].parse().unwrap_or(f64::NAN);
        assert!(v.is_finite() && v > 0.0, "{name} {size}: figure {:?}", w[3]);
        let unit = if name.ends_with("_bw") {
            "MB/s"
        } else if name.ends_with("_rate") {
            "Mmsg/s"
        } else {
            "ns"
        };
        assert_eq!(w[4], unit, "{w:?}");
    }
    assert_eq!(lines[BENCH_ROWS.len()], ["shmem_bench", "done"]);
}

/// The profiling interface: `tests/c/profiling/profiler.c`, a shared
/// library defining five shmem_ routines over their pshmem_ forms (and
/// shmem_finalize, printing its counts), interposes on
/// `tests/c/profiling/profiled.c` when linked before librgex_shmem.so
/// and when LD_PRELOADed: each PE counts exactly the calls the program
/// made (none the library made to itself) and the work was done. Without
/// it nothing is counted.
#[test]
fn a_profiler_counts_the_calls_of_a_program() {
    let b = built();
    let dir = shmem_dir().join("tests/c/profiling");
    let lib = b.programs.join("libshmem_profiler.so");
    let compile = |args: &[&std::ffi::OsStr], what: &str| {
        let out = oshcc(&b.profile)
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
            .args(args)
            .output()
            .expect("oshcc runs");
        assert!(
            out.status.success(),
            "oshcc {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let src = |f: &str| dir.join(f).into_os_string();
    compile(
        &[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            &src("profiler.c"),
            "-o".as_ref(),
            lib.as_os_str(),
        ],
        "the profiler",
    );
    let linked = b.programs.join("profiled_linked");
    let plain = b.programs.join("profiled");
    let libdir = format!("-L{}", b.programs.display());
    let rpath = format!("-Wl,-rpath,{}", b.programs.display());
    compile(
        &[
            &src("profiled.c"),
            libdir.as_ref(),
            "-lshmem_profiler".as_ref(),
            rpath.as_ref(),
            "-o".as_ref(),
            linked.as_os_str(),
        ],
        "the program, linked with the profiler",
    );
    compile(
        &[&src("profiled.c"), "-o".as_ref(), plain.as_os_str()],
        "the program",
    );
    let n = 3;
    let preload = lib.to_string_lossy().into_owned();
    for (program, env, profiled) in [
        ("profiled_linked", vec![], true),
        ("profiled", vec![("LD_PRELOAD", preload.as_str())], true),
        ("profiled", vec![], false),
    ] {
        let what = format!("{program} with {env:?}");
        let out = oshrun(n, program, &[], &env);
        assert!(out.status.success(), "{what}: {}", out.status);
        let stdout = String::from_utf8_lossy(&out.stdout);
        for pe in 0..n {
            assert!(
                stdout.contains(&format!("profiled PE {pe}: done")),
                "{what}: PE {pe} did not finish"
            );
            let counts = format!(
                "profiler PE {pe}: malloc 1 putmem 5 long_p 3 long_atomic_fetch_add 2 barrier_all 4\n"
            );
            assert_eq!(
                stdout.contains(&counts),
                profiled,
                "{what}: PE {pe}'s counts, expected {counts:?} {}",
                if profiled { "" } else { "absent" }
            );
        }
        let lines = stdout.matches("profiler PE").count();
        assert_eq!(lines, if profiled { n as usize } else { 0 }, "{what}");
    }
}
