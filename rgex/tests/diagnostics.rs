//! rgex's stderr subscriber end to end, in a child process (the global
//! subscriber is once per process): what `RGEX_LOG` lets through, the
//! line's form, and an event logged from an exit hook after the main
//! thread, which logged before, has lost its thread-locals.
//!
//! `harness = false`: the child's events are logged on the main thread,
//! as a program's are.

use std::process::Command;

/// Set in the child.
const CHILD: &str = "RGEX_TEST_DIAGNOSTICS_CHILD";

extern "C" fn at_exit() {
    tracing::error!(target: "rgex_scc::report", rank = 1u32, "logged from an exit hook");
}

/// The child: install the subscriber, log one event per case, leave one
/// for the exit hook.
fn child() {
    rgex::diagnostics::install().expect("RGEX_LOG parses");
    tracing::warn!(
        target: "rgex_net::health",
        conduit = "ofi",
        rank = 0u32,
        peer = 1u32,
        "rank 1 is now considered dead"
    );
    tracing::debug!(target: "rgex_vis::am", rank = 0u32, "a refusal's detail");
    tracing::error!(target: "my_app", "the application's own event");
    // SAFETY: `at_exit` is an `extern "C" fn()` that lives for the whole
    // program; atexit only records the pointer.
    unsafe { libc::atexit(at_exit) };
}

/// The child's stderr, with `RGEX_LOG` set to `log` (unset: `None`).
fn run(log: Option<&str>) -> String {
    let mut c = Command::new(std::env::current_exe().expect("this test's executable"));
    c.env(CHILD, "1");
    match log {
        Some(v) => c.env("RGEX_LOG", v),
        None => c.env_remove("RGEX_LOG"),
    };
    let out = c.output().expect("the child runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "RGEX_LOG={log:?}: child failed: {err}"
    );
    err
}

fn main() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let dead = " WARN rgex_net::health: rank 1 is now considered dead conduit=ofi rank=0 peer=1\n";
    let exit = "ERROR rgex_scc::report: logged from an exit hook rank=1\n";

    // Unset: rgex's warnings and errors, nothing below, nothing of others.
    let err = run(None);
    assert!(
        err.contains(dead),
        "the default prints rgex's warnings: {err:?}"
    );
    assert!(
        err.contains(exit),
        "an exit hook's event is printed: {err:?}"
    );
    assert!(
        !err.contains("refusal's detail"),
        "the default hides debug: {err:?}"
    );
    assert!(
        !err.contains("application's own"),
        "the default is rgex's only: {err:?}"
    );
    assert_eq!(err.lines().count(), 2, "{err:?}");

    // A crate's debug events when asked for.
    let err = run(Some("rgex_vis=debug,rgex=warn"));
    assert!(
        err.contains("DEBUG rgex_vis::am: a refusal's detail rank=0\n"),
        "{err:?}"
    );
    assert!(err.contains(dead), "{err:?}");

    // Off: nothing.
    let err = run(Some("off"));
    assert_eq!(err, "", "RGEX_LOG=off prints nothing");
    println!("diagnostics: 3 filters checked");
}
