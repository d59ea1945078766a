//! The collective override point: a conduit that says it runs barriers
//! and broadcasts itself (`Conduit::coll_native`) is handed them, with the
//! team's members, and no AM is sent for them.

use rgex_am::Client;
use rgex_core::testing::{Recorder, RecorderConfig, Step};
use rgex_core::{Conduit, Rank};
use std::sync::Arc;

#[test]
fn a_conduit_with_native_collectives_runs_barrier_and_broadcast() {
    let rec = Arc::new(Recorder::new(RecorderConfig {
        native_coll: true,
        ..RecorderConfig::default()
    }));
    let conduit: Arc<dyn Conduit> = rec.clone();
    let client = Client::new(conduit, false).unwrap();
    let team = client.world_team();
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
    let e = client.world_team().broadcast(2, b"x").unwrap_err();
    assert!(e.to_string().contains('2'), "{e}");
    assert!(!rec
        .steps()
        .iter()
        .any(|s| matches!(s, Step::Broadcast { .. })));
}
