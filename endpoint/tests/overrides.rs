//! The collective override point: a conduit that says it runs barriers
//! and broadcasts itself (`Conduit::coll_native`) is handed them, with the
//! team's members, and no AM is sent for them. And the put-with-signal
//! override point (`Conduit::put_signal_native`).

use rgex_core::testing::{Recorder, RecorderConfig, Step};
use rgex_core::{Conduit, Rank};
use rgex_endpoint::Client;
use std::sync::Arc;

#[test]
fn a_conduit_with_native_collectives_runs_barrier_and_broadcast() {
    let rec = Arc::new(Recorder::new(RecorderConfig {
        native_coll: true,
        ..RecorderConfig::default()
    }));
    let conduit: Arc<dyn Conduit> = rec.clone();
    let client = Client::new(conduit, false).unwrap();
    let team = client.world();
    team.barrier().unwrap();
    let got = team.broadcast(0, b"hello").unwrap();
    assert_eq!(got, b"hello", "the root's bytes");
    let steps = rec.steps();
    assert!(
        steps.contains(&Step::Barrier {
            members: vec![Rank(0), Rank(1)]
        }),
        "{steps:?}"
    );
    assert!(
        steps.contains(&Step::Broadcast { root: 0, len: 5 }),
        "{steps:?}"
    );
    assert!(
        !steps.iter().any(|s| matches!(s, Step::Prepare { .. })),
        "no AM was sent for them: {steps:?}"
    );
}

#[test]
fn a_root_outside_the_team_is_refused_before_the_conduit_is_asked() {
    let rec = Arc::new(Recorder::new(RecorderConfig {
        native_coll: true,
        ..RecorderConfig::default()
    }));
    let conduit: Arc<dyn Conduit> = rec.clone();
    let client = Client::new(conduit, false).unwrap();
    let e = client.world().broadcast(2, b"x").unwrap_err();
    assert!(e.to_string().contains('2'), "{e}");
    assert!(!rec
        .steps()
        .iter()
        .any(|s| matches!(s, Step::Broadcast { .. })));
}

#[test]
fn a_conduit_with_native_put_signal_carries_data_then_signal() {
    use rgex_core::{Flags, GlobalAddr, Signal};
    use rgex_endpoint::rma::SignalPath;
    let rec = Arc::new(Recorder::new(RecorderConfig {
        native_signal: true,
        ..RecorderConfig::default()
    }));
    let conduit: Arc<dyn Conduit> = rec.clone();
    let client = Client::new(conduit, false).unwrap();
    let ep = client.endpoint();
    assert_eq!(ep.put_signal_path(Rank(1)), SignalPath::Native);
    let at = GlobalAddr::new(Rank(1), 64);
    ep.put_signal(at, b"data", Signal::add(8, 3), Flags::empty())
        .unwrap();
    ep.put_signal_nb(at, b"more", Signal::set(16, 9), Flags::empty())
        .unwrap()
        .wait()
        .unwrap();
    let steps = rec.steps();
    assert!(
        steps.contains(&Step::PutSignal {
            peer: Rank(1),
            offset: 64,
            len: 4,
            signal: Signal::add(8, 3)
        }),
        "{steps:?}"
    );
    assert!(
        !steps.iter().any(|s| matches!(s, Step::Prepare { .. })),
        "no AM was sent for them: {steps:?}"
    );
    // The recorder's one segment is every peer's.
    assert_eq!(rec.segment_bytes(64, 4), b"more");
    assert_eq!(rec.segment_bytes(8, 8), 3u64.to_ne_bytes());
    assert_eq!(rec.segment_bytes(16, 8), 9u64.to_ne_bytes());
    // A misaligned word is refused before the conduit is asked.
    let e = ep
        .put_signal(at, b"x", Signal::add(12, 1), Flags::empty())
        .unwrap_err();
    assert!(e.to_string().contains("0xc"), "{e}");
    assert_eq!(
        rec.steps().len(),
        steps.len(),
        "nothing more reached the conduit"
    );
}

#[test]
fn without_the_override_put_signal_takes_the_reference() {
    use rgex_endpoint::rma::SignalPath;
    let rec = Arc::new(Recorder::new(RecorderConfig::default()));
    let conduit: Arc<dyn Conduit> = rec.clone();
    let client = Client::new(conduit, false).unwrap();
    assert_eq!(
        client.endpoint().put_signal_path(Rank(1)),
        SignalPath::Reference
    );
}
