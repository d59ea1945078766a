//! The VIS override point: a conduit that says it moves vectors itself
//! (`Conduit::vis_native`) gets the whole chunk list in one call, and the
//! bytes land where the metadata says; one that does not never sees it.

use rgex_core::testing::{Recorder, RecorderConfig, Step};
use rgex_core::{Conduit, Flags, Rank};
use rgex_endpoint::Client;
use rgex_vis::{Mechanism, Strided, Vis};
use std::sync::Arc;

/// Four 8-byte elements, 64 bytes apart at the peer, packed locally.
fn four_strided() -> Strided<'static> {
    Strided {
        elem_size: 8,
        counts: &[4],
        peer_offset: 128,
        peer_strides: &[64],
        local_offset: 0,
        local_strides: &[8],
    }
}

fn client(native_vis: bool) -> (Arc<Recorder>, Client) {
    let rec = Arc::new(Recorder::new(RecorderConfig {
        native_vis,
        ..RecorderConfig::default()
    }));
    let conduit: Arc<dyn Conduit> = rec.clone();
    (
        rec,
        Client::new(conduit, false).expect("a client over the recorder"),
    )
}

#[test]
fn a_conduit_with_native_vis_gets_the_whole_vector_in_one_call() {
    let (rec, client) = client(true);
    let vis = Vis::new(client.endpoint()).unwrap();
    let src: Vec<u8> = (1..=32).collect();
    assert_eq!(
        vis.mechanism_for(
            Rank(1),
            &vis.shape(Rank(1), &four_strided().into(), 32).unwrap()
        ),
        Mechanism::Native
    );
    vis.put(Rank(1), four_strided(), &src, Flags::empty())
        .unwrap();
    let puts: Vec<_> = rec
        .steps()
        .into_iter()
        .filter(|s| matches!(s, Step::PutV { .. }))
        .collect();
    assert_eq!(
        puts,
        [Step::PutV {
            peer: Rank(1),
            chunks: 4,
            bytes: 32
        }]
    );
    for i in 0..4 {
        assert_eq!(
            rec.segment_bytes(128 + 64 * i, 8),
            src[8 * i..8 * i + 8],
            "element {i} at its strided place"
        );
    }
    let mut back = vec![0u8; 32];
    vis.get(Rank(1), four_strided(), &mut back, Flags::empty())
        .unwrap();
    assert_eq!(back, src, "the vector get reads the same places");
    assert!(rec.steps().contains(&Step::GetV {
        peer: Rank(1),
        chunks: 4,
        bytes: 32
    }));
}

#[test]
fn without_native_vis_the_reference_carries_it() {
    let (rec, client) = client(false);
    let vis = Vis::new(client.endpoint()).unwrap();
    let shape = vis.shape(Rank(1), &four_strided().into(), 32).unwrap();
    assert_eq!(vis.mechanism_for(Rank(1), &shape), Mechanism::Am);
    // The recorder delivers nothing, so an AM transfer is not run here:
    // the choice is what this checks, and that the hook is never asked.
    assert!(!rec
        .steps()
        .iter()
        .any(|s| matches!(s, Step::PutV { .. } | Step::GetV { .. })));
}
