//! Cancelled handles (issue 38): dropping a get's handle, a deferred
//! put's local completion or a VIS get's future while the operation is
//! in flight returns at once. The buffer is kept until the transport is
//! done with it, then dropped by the progress that completes it. Before,
//! the drop waited for the completion. A future cancelled by a timeout
//! around a VIS get to a rank that did not answer blocked a tokio worker
//! for good.
//!
//! Two ranks. Run with `RGEX_RMA=reference RGEX_VIS=am`, so that a get
//! waits for rank 1's handler. Rank 1 does not poll until rank 0 has
//! dropped every handle: it waits in an out-of-band bootstrap barrier,
//! which delivers no message. A drop that waited would never return, and
//! the job's time limit would end it.

use rgex::{Flags, GlobalAddr, Rank, Vector, Vis, VisMechanism};
use rgex_tests::{conduit_banner, ok, wait_until};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Waker};

/// Buffers of the kind below that have been dropped.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// A get's destination that counts its drop.
struct Tracked(Vec<u8>);

impl AsMut<[u8]> for Tracked {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl AsRef<[u8]> for Tracked {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // Release: pairs with the Acquire loads that wait for the count.
        DROPPED.fetch_add(1, Ordering::Release);
    }
}

fn main() -> rgex::Result<()> {
    let client = rgex::init()?;
    conduit_banner(&client);
    assert_eq!(client.size(), 2, "cancel_conformance runs on two ranks");
    assert_eq!(
        std::env::var("RGEX_RMA").as_deref(),
        Ok("reference"),
        "run with RGEX_RMA=reference (the get must wait for rank 1)"
    );
    let vis = Vis::builder()
        .mechanism(VisMechanism::Am)
        .build(client.endpoint())?;
    let me = client.rank();
    let f = Flags::empty();
    client.endpoint().segment().write(0, &[0x5A; 1024])?;
    client.barrier()?;
    if me == Rank(1) {
        // Not polling: rank 0's requests wait in this rank's queue.
        client.endpoint().conduit().bootstrap().barrier()?;
        client.barrier()?;
        // Until rank 0 is done with its last get.
        client.barrier()?;
        return Ok(());
    }
    let peer = Rank(1);
    let get = client
        .endpoint()
        .get_nb(Tracked(vec![0; 256]), GlobalAddr::new(peer, 0), f)
        .map_err(|b| b.error)?;
    let frags = [(0u64, 256u64), (512, 256)];
    let meta = Vector {
        peer: &frags,
        local: &[(0, 512)],
    };
    let mut vget = vis.get_nb(peer, meta, vec![0u8; 512], f)?;
    // A future's first poll, as an executor's: pending, its waker set.
    let mut cx = Context::from_waker(Waker::noop());
    assert!(
        std::pin::Pin::new(&mut vget).poll(&mut cx).is_pending(),
        "the VIS get completed with rank 1 not polling"
    );
    assert!(!get.test(), "the get completed with rank 1 not polling");
    // Cancelled: both drops return at once, and the get's buffer is kept.
    drop(vget);
    drop(get);
    assert_eq!(
        DROPPED.load(Ordering::Acquire),
        0,
        "a dropped get's buffer was freed while the get was in flight"
    );
    // Rank 1 polls again (its barrier serves both gets); the replies'
    // progress releases the buffer.
    client.endpoint().conduit().bootstrap().barrier()?;
    client.barrier()?;
    wait_until(&client, "the dropped get's buffer to be released", || {
        DROPPED.load(Ordering::Acquire) == 1
    });
    // The endpoint works on: a get after the cancelled ones.
    let back = client
        .endpoint()
        .get_nb(vec![0u8; 64], GlobalAddr::new(peer, 0), f)
        .map_err(|b| b.error)?
        .wait()?;
    assert_eq!(back, vec![0x5A; 64]);
    client.barrier()?;
    ok(
        &client,
        "a get's handle and a VIS get's future dropped in flight return at once; the get's buffer is kept until its reply, then dropped",
    );
    Ok(())
}
