//! A rank leaves the job (status 0) while rank 0 waits on it in a
//! one-sided epoch of the scc conduit: the wait must end in
//! `PeerUnreachable` naming it, not in RGEX_SCC_TIMEOUT (issue 25, defect
//! 4 on scc). Two ranks: `rgex-run -n 2 scc_epoch_departure WHAT [HOW]`.
//!
//! WHAT is what rank 0 waits for:
//! - `access`: in an access epoch towards rank 1, a put to it (the
//!   conduit holds it until rank 1 posts, which it never does);
//! - `complete`: the completion of that access epoch (rank 1 has not
//!   posted);
//! - `wait`: the end of an exposure epoch whose origin is rank 1 (which
//!   never completes).
//!
//! HOW rank 1 leaves: `exit` (its exit hook records the departure) or
//! `_exit` (no hook: rank 0 must find its process gone). Rank 0 prints one
//! `ok:` line with the error and exits 0; a success, a timeout or another
//! error fails the job.

use rgex::{Client, Flags, GlobalAddr, Rank};
use rgex_scc::{SccConduit, SccConfig};
use rgex_tests::{conduit_banner, ok};
use std::sync::Arc;

fn main() -> rgex::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_default();
    let how = std::env::args().nth(2).unwrap_or_else(|| "exit".into());
    if !["access", "complete", "wait"].contains(&what.as_str())
        || !["exit", "_exit"].contains(&how.as_str())
    {
        eprintln!(
            "usage: scc_epoch_departure access|complete|wait [exit|_exit] (got {what:?} {how:?})"
        );
        std::process::exit(2);
    }
    // Built by hand, not by rgex::init: print rgex's diagnostics as init does.
    rgex::diagnostics::install()?;
    let (env, boot) = rgex::bootstrap::from_env()?;
    let conduit = Arc::new(SccConduit::new(&env, boot, SccConfig::from_env()?)?);
    let client = Client::new(conduit, env.polite)?;
    assert_eq!(client.size(), 2, "scc_epoch_departure runs on two ranks");
    conduit_banner(&client);
    let scc = client
        .endpoint()
        .conduit()
        .as_any()
        .and_then(|a| a.downcast_ref::<SccConduit>())
        .expect("the scc conduit");
    client.barrier()?;
    if client.rank() == Rank(1) {
        rgex_tests::leave_job(&how);
    }
    let gone = Rank(1);
    let mut poll = || {
        let _ = client.endpoint().poll();
    };
    let result = match what.as_str() {
        "access" => scc.start(&[gone]).and_then(|()| {
            client
                .endpoint()
                .put(GlobalAddr::new(gone, 0), &[5u8; 64], Flags::empty())
        }),
        "complete" => scc
            .start(&[gone])
            .and_then(|()| scc.complete_with(&mut poll)),
        _ => scc.post(&[gone]).and_then(|()| scc.wait_with(&mut poll)),
    };
    match result {
        Err(e @ rgex::Error::PeerUnreachable { .. }) if e.to_string().contains("rank 1") => {
            ok(&client, &format!("{what} with departed rank 1 failed: {e}"));
            Ok(())
        }
        other => {
            eprintln!("rank 0: {what} with departed rank 1 ended in {other:?}: wrong");
            std::process::exit(1);
        }
    }
}
