//! rgex-shmem's install: `shmem/install.sh` builds with cargo (this
//! test's target directory, profile and c.rs's selection) and installs into a prefix in
//! the target directory; a C program (`tests/install/hello.c`) is then
//! built from the prefix alone, with the installed `oshcc` and with
//! `pkg-config`'s flags (and statically, from `librgex_shmem.a`), and
//! run under the installed `oshrun` on 2 PEs. Bad arguments to the
//! script fail at once, naming the argument.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

mod shown;
mod workspace_build;
use shown::shown;
use workspace_build::{profile_dir, profile_name};

fn shmem_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `bash shmem/install.sh ARGS` with cargo's variables pointing nowhere
/// else, and what it said.
fn install_sh(args: &[&std::ffi::OsStr]) -> Output {
    let out = Command::new("bash")
        .arg(shmem_dir().join("install.sh"))
        .args(args)
        .env("CARGO", env!("CARGO"))
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("bash runs");
    shown(format_args!("install.sh {args:?}"), out)
}

/// The prefix, installed into once (made afresh) by `install.sh` in this
/// test's target directory and profile, building the selection c.rs
/// builds (see [`workspace_build::SELECTION`]).
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let profile = profile_dir();
        let target = profile.parent().expect("a target directory").to_path_buf();
        let prefix = profile.join("shmem-install-test/prefix");
        let _ = std::fs::remove_dir_all(&prefix);
        let name = profile_name(&profile);
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "--prefix".as_ref(),
            prefix.as_os_str(),
            "--profile".as_ref(),
            name.as_ref(),
            "--target-dir".as_ref(),
            target.as_os_str(),
            "--".as_ref(),
        ];
        args.extend(workspace_build::SELECTION.iter().map(std::ffi::OsStr::new));
        let out = install_sh(&args);
        assert!(out.status.success(), "install.sh failed: {}", out.status);
        prefix
    })
}

/// A command from the prefix, with every variable that could point the
/// wrappers back at the source tree removed.
fn from_prefix(program: &Path) -> Command {
    let mut c = Command::new(program);
    for v in [
        "RGEX_SHMEM_LIBDIR",
        "RGEX_SHMEM_PROFILE",
        "RGEX_RUN",
        "CARGO_TARGET_DIR",
        "OSHCC_CC",
        "PKG_CONFIG_PATH",
        "LD_LIBRARY_PATH",
    ] {
        c.env_remove(v);
    }
    c.current_dir(prefix().parent().expect("the prefix has a parent"));
    c
}

/// Run `c`, require success, and return its stdout.
fn succeeds(mut c: Command, what: &str) -> String {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where a test's own programs go (`name` a directory per test).
fn work_dir(name: &str) -> PathBuf {
    let dir = prefix()
        .parent()
        .expect("the prefix has a parent")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the target directory is writable");
    dir
}

/// Run `exe` under the installed `oshrun -n 2` and require exactly what
/// hello.c prints (the ranks' lines in any order, each whole).
fn runs_hello(exe: &Path) {
    let mut c = from_prefix(&prefix().join("bin/oshrun"));
    c.args(["-n", "2", "--timeout", "120"]).arg(exe);
    let stdout = succeeds(c, &format!("oshrun -n 2 {}", exe.display()));
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "[0] PE 0 of 2 got 101 from PE 1",
            "[1] PE 1 of 2 got 100 from PE 0"
        ],
        "what hello printed on 2 PEs"
    );
}

/// The installed layout, and `oshcc` from it: `--showme` names the
/// prefix's headers and library, and hello builds and runs on 2 PEs.
#[test]
fn oshcc_from_the_prefix_builds_hello() {
    let p = prefix();
    for f in [
        "lib/librgex_shmem.so",
        "lib/librgex_shmem.a",
        "lib/pkgconfig/rgex-shmem.pc",
        "include/shmem.h",
        "include/shmemx.h",
        "include/pshmem.h",
        "bin/oshcc",
        "bin/oshrun",
        "bin/rgex-run",
    ] {
        assert!(
            p.join(f).is_file(),
            "{} is not installed",
            p.join(f).display()
        );
    }
    let oshcc = p.join("bin/oshcc");
    let mut c = from_prefix(&oshcc);
    c.arg("--showme");
    let showme = succeeds(c, "oshcc --showme");
    let (inc, lib) = (p.join("include"), p.join("lib"));
    for want in [
        format!("-I{}", inc.display()),
        format!("-L{}", lib.display()),
        format!("-Wl,-rpath,{}", lib.display()),
    ] {
        assert!(
            showme.contains(&want),
            "oshcc --showme does not say {want}: {showme}"
        );
    }
    let dir = work_dir("oshcc");
    let exe = dir.join("hello");
    let mut c = from_prefix(&oshcc);
    c.args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg(shmem_dir().join("tests/install/hello.c"))
        .arg("-o")
        .arg(&exe);
    succeeds(c, "the installed oshcc");
    runs_hello(&exe);
}

/// `pkg-config` with `PKG_CONFIG_PATH=PREFIX/lib/pkgconfig`, or None
/// (reported as a skip of `test`) where pkg-config is not installed.
fn pkg_config(test: &str) -> Option<Command> {
    if Command::new("pkg-config")
        .arg("--version")
        .output()
        .is_err()
    {
        let conduit = std::env::var("RGEX_CONDUIT")
            .ok()
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "smp".into());
        rgex_tests::report_skip_line(&format!(
            "skip on RGEX_CONDUIT={conduit}: install::{test}: the whole test: pkg-config is \
             not installed (apt-get install pkg-config)"
        ));
        return None;
    }
    let mut c = from_prefix(Path::new("pkg-config"));
    c.env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig"));
    Some(c)
}

/// What `pkg-config ARGS rgex-shmem` prints, split into words.
fn pkg_config_words(test: &str, args: &[&str]) -> Option<Vec<String>> {
    let mut c = pkg_config(test)?;
    c.args(args).arg("rgex-shmem");
    let out = succeeds(c, &format!("pkg-config {args:?} rgex-shmem"));
    Some(out.split_whitespace().map(str::to_owned).collect())
}

/// `cc hello.c $(pkg-config --cflags --libs rgex-shmem)` builds a
/// program that runs on 2 PEs without LD_LIBRARY_PATH; the version is
/// the crate's.
#[test]
fn pkg_config_flags_build_hello() {
    const TEST: &str = "pkg_config_flags_build_hello";
    let Some(version) = pkg_config_words(TEST, &["--modversion"]) else {
        return;
    };
    assert_eq!(
        version,
        [env!("CARGO_PKG_VERSION")],
        "rgex-shmem.pc's version"
    );
    let Some(flags) = pkg_config_words(TEST, &["--cflags", "--libs"]) else {
        return;
    };
    let dir = work_dir("pkg-config");
    let exe = dir.join("hello");
    let mut c = from_prefix(Path::new("cc"));
    c.args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg(shmem_dir().join("tests/install/hello.c"))
        .arg("-o")
        .arg(&exe)
        .args(&flags);
    succeeds(c, &format!("cc hello.c {}", flags.join(" ")));
    runs_hello(&exe);
}

/// Linked statically, from `librgex_shmem.a` and the libraries
/// `pkg-config --static` adds: the program needs no librgex_shmem.so.
#[test]
fn pkg_config_static_builds_hello() {
    const TEST: &str = "pkg_config_static_builds_hello";
    let Some(cflags) = pkg_config_words(TEST, &["--cflags"]) else {
        return;
    };
    let Some(libs) = pkg_config_words(TEST, &["--static", "--libs-only-l"]) else {
        return;
    };
    assert_eq!(
        libs.first().map(String::as_str),
        Some("-lrgex_shmem"),
        "{libs:?}"
    );
    let dir = work_dir("static");
    let exe = dir.join("hello");
    let mut c = from_prefix(Path::new("cc"));
    c.args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .args(&cflags)
        .arg(shmem_dir().join("tests/install/hello.c"))
        .arg(prefix().join("lib/librgex_shmem.a"))
        .args(&libs[1..])
        .arg("-o")
        .arg(&exe);
    succeeds(
        c,
        &format!("cc hello.c librgex_shmem.a {}", libs[1..].join(" ")),
    );
    let mut c = Command::new("readelf");
    c.arg("-d").arg(&exe);
    let dynamic = succeeds(c, "readelf -d");
    assert!(
        !dynamic.contains("librgex_shmem.so"),
        "the static program needs librgex_shmem.so: {dynamic}"
    );
    runs_hello(&exe);
}

/// Run install.sh with `args` and require it to fail, before any build,
/// saying `says`.
fn refused(args: &[&std::ffi::OsStr], says: &str) {
    let out = install_sh(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "install.sh {args:?}: {stderr}");
    assert!(
        stderr.contains(says),
        "install.sh {args:?} does not say {says:?}: {stderr}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("building"),
        "install.sh {args:?} started a build"
    );
}

#[test]
fn install_sh_refuses_an_unknown_option() {
    refused(
        &[
            "--prefix".as_ref(),
            "/tmp/x".as_ref(),
            "--frobnicate".as_ref(),
        ],
        "install.sh: unknown argument '--frobnicate'",
    );
}

#[test]
fn install_sh_requires_a_prefix() {
    refused(&[], "install.sh: --prefix DIR is required");
    refused(&["--prefix".as_ref()], "install.sh: --prefix needs a value");
    refused(
        &["--prefix=".as_ref()],
        "install.sh: --prefix needs a value",
    );
    refused(
        &["--prefix".as_ref(), "--profile".as_ref(), "dev".as_ref()],
        "install.sh: --prefix needs a value, not the option '--profile'",
    );
}

#[test]
fn install_sh_refuses_an_unwritable_prefix() {
    // Under a regular file: not writable whoever runs it (root included).
    let dir = profile_dir().join("shmem-install-test/refused");
    std::fs::create_dir_all(&dir).expect("the target directory is writable");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a directory").expect("writable");
    let under = file.join("prefix");
    refused(
        &["--prefix".as_ref(), under.as_os_str()],
        &format!(
            "install.sh: --prefix {}: cannot create the directory",
            under.display()
        ),
    );
}

#[test]
fn install_sh_refuses_a_prefix_with_whitespace() {
    refused(
        &["--prefix".as_ref(), "/tmp/a b".as_ref()],
        "install.sh: --prefix '/tmp/a b' holds whitespace",
    );
}
