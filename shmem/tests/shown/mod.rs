//! How rgex-shmem's C-facing tests (c.rs, install.rs) print a command's
//! result: its label and status, then its stdout and stderr, shown by
//! the test harness when a test fails.

use std::process::Output;

/// Print `out` under `label`, and hand it back.
pub fn shown(label: std::fmt::Arguments<'_>, out: Output) -> Output {
    println!(
        "{label}: {}\n--- stdout\n{}--- stderr\n{}---",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
