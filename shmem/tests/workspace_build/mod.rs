//! The cargo build that rgex-shmem's C-facing tests (c.rs, install.rs)
//! make before compiling C: in the running test's target directory and
//! profile, with the selection `cargo test --workspace` makes.

use std::path::{Path, PathBuf};

/// What cargo builds: the whole workspace, tests included, as `cargo
/// test --workspace` selects it. Features are resolved over the
/// packages and targets selected, so `-p rgex-shmem -p rgex` built every
/// crate again with other features (50 s on 2 cores, in every run), and
/// left a librgex_shmem.so and rgex-run of those features in the profile
/// directory. Under `cargo test --workspace` and the conduit matrix this
/// finds everything built; `cargo test -p rgex-shmem` alone pays once.
pub const SELECTION: &[&str] = &["--workspace", "--lib", "--bins", "--tests"];

/// The running test's profile directory (`target/<profile>`): the test
/// runs from `target/<profile>/deps/NAME-<hash>`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps")
        .to_path_buf()
}

/// The cargo profile (`--profile NAME`) that builds into `dir`: `debug`
/// is `dev`'s directory, every other profile's is its name.
pub fn profile_name(dir: &Path) -> String {
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".into(),
        Some(other) => other.into(),
        None => panic!("no profile directory in {}", dir.display()),
    }
}
