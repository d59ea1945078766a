//! Waits on memory against the recording test conduit (one process):
//! a store by another thread ends a blocking wait and wakes a future
//! through another thread's progress; a peer the conduit says is gone
//! ends a wait with an error naming it; bad words are refused.

use rgex_core::testing::{Recorder, RecorderConfig};
use rgex_core::Conduit;
use rgex_endpoint::{Client, Cmp};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

fn client(network: bool) -> Client {
    let rec = Arc::new(Recorder::new(RecorderConfig {
        network,
        ..RecorderConfig::default()
    }));
    let conduit: Arc<dyn Conduit> = rec;
    Client::new(conduit, false).unwrap()
}

/// Store `v` into the word at `offset` of `client`'s segment after a
/// pause, on another thread.
fn store_later(client: &Client, offset: u64, v: u64) -> std::thread::JoinHandle<()> {
    let p = client.endpoint().segment().ptr_at(offset, 8).unwrap() as usize;
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        // SAFETY: an aligned word of the segment, which outlives the
        // thread (joined before the client drops); read atomically.
        let w = unsafe { AtomicU64::from_ptr(p as *mut u64) };
        w.store(v, Ordering::Release);
    })
}

#[test]
fn a_late_store_ends_a_blocking_wait() {
    let c = client(false);
    let t = store_later(&c, 64, 5);
    assert_eq!(c.endpoint().wait_until::<u64>(64, Cmp::Ge, 5).unwrap(), 5);
    t.join().unwrap();
    assert!(
        c.endpoint().operations_in_flight().is_empty(),
        "unregistered"
    );
}

struct Unpark(std::thread::Thread, AtomicBool);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.1.store(true, Ordering::Release);
        self.0.unpark();
    }
}

/// Poll `fut` on this thread until it resolves, coming back only when
/// woken (bounded: a lost wake fails), while another thread polls `ep`.
fn drive<F: Future + Unpin>(ep: &Arc<rgex_endpoint::Endpoint>, mut fut: F) -> F::Output {
    let stop = Arc::new(AtomicBool::new(false));
    let (ep2, stop2) = (ep.clone(), stop.clone());
    let poller = std::thread::spawn(move || {
        while !stop2.load(Ordering::Relaxed) {
            ep2.poll().unwrap();
            std::thread::sleep(Duration::from_micros(100));
        }
    });
    let unpark = Arc::new(Unpark(std::thread::current(), AtomicBool::new(false)));
    let waker = Waker::from(unpark.clone());
    let mut cx = Context::from_waker(&waker);
    let mut polls = 0;
    let got = loop {
        polls += 1;
        assert!(
            polls < 1000,
            "the future was polled 1000 times (woken for nothing?)"
        );
        if let Poll::Ready(v) = std::pin::Pin::new(&mut fut).poll(&mut cx) {
            break v;
        }
        // Only a wake may bring us back (bounded: a lost wake fails).
        let mut waited = 0;
        while !unpark.1.swap(false, Ordering::AcqRel) {
            std::thread::park_timeout(Duration::from_millis(100));
            waited += 1;
            assert!(waited < 100, "no wake within 10 s");
        }
    };
    stop.store(true, Ordering::Relaxed);
    poller.join().unwrap();
    got
}

#[test]
fn a_future_is_woken_by_another_threads_progress() {
    let c = client(false);
    let ep = c.endpoint().clone();
    let fut = ep.wait_until_async::<u64>(128, Cmp::Eq, 9).unwrap();
    let t = store_later(&c, 128, 9);
    assert_eq!(drive(&ep, fut).unwrap(), 9);
    t.join().unwrap();
    assert!(ep.operations_in_flight().is_empty(), "unregistered");
}

/// The array forms: each resolves once its condition holds over the words
/// (not before: the first store leaves `all` pending), with what the
/// blocking form returns.
#[test]
fn array_futures_resolve_as_their_blocking_forms() {
    let c = client(false);
    let ep = c.endpoint().clone();
    let offsets = [256, 264, 272];
    // Already ignored or empty: at once.
    let none = ep
        .wait_until_any_async::<u64>(&offsets, Some(&[true; 3]), Cmp::Eq, 1)
        .unwrap();
    assert_eq!(drive(&ep, none).unwrap(), None);
    let empty = ep
        .wait_until_some_async::<u64>(&[], None, Cmp::Eq, 1)
        .unwrap();
    assert!(drive(&ep, empty).unwrap().is_empty());
    // One word set late: any and some see it, all still waits.
    let mut all = ep
        .wait_until_all_async::<u64>(&offsets, None, Cmp::Eq, 1)
        .unwrap();
    let any = ep
        .wait_until_any_async::<u64>(&offsets, None, Cmp::Eq, 1)
        .unwrap();
    let t = store_later(&c, 264, 1);
    assert_eq!(drive(&ep, any).unwrap(), Some(1));
    t.join().unwrap();
    let some = ep
        .wait_until_some_async::<u64>(&offsets, None, Cmp::Eq, 1)
        .unwrap();
    assert_eq!(drive(&ep, some).unwrap(), [1]);
    let waker = Waker::from(Arc::new(Unpark(
        std::thread::current(),
        AtomicBool::new(false),
    )));
    let pending = std::pin::Pin::new(&mut all).poll(&mut Context::from_waker(&waker));
    assert!(pending.is_pending(), "all of three words with one set");
    // The others set: all resolves; a mask leaves out a word never set.
    let (t1, t2) = (store_later(&c, 256, 1), store_later(&c, 272, 1));
    drive(&ep, all).unwrap();
    t1.join().unwrap();
    t2.join().unwrap();
    let masked = ep
        .wait_until_all_async::<u64>(&[256, 280], Some(&[false, true]), Cmp::Eq, 1)
        .unwrap();
    drive(&ep, masked).unwrap();
    assert!(ep.operations_in_flight().is_empty(), "unregistered");
}

#[test]
fn a_gone_peer_ends_a_wait_naming_it() {
    let c = client(true);
    let e = c.endpoint().wait_until::<u32>(0, Cmp::Eq, 1).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("rank 1") && text.contains("unreachable") && text.contains("recorder lost"),
        "{text}"
    );
    assert!(
        c.endpoint().operations_in_flight().is_empty(),
        "unregistered"
    );
}

#[test]
fn bad_words_are_refused_naming_rank_offset_and_limit() {
    let c = client(false);
    let ep = c.endpoint();
    let len = ep.segment().len() as u64;
    let e = ep
        .wait_until::<u64>(len - 4, Cmp::Eq, 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rank 0") && e.contains(&format!("{len:#x}")),
        "{e}"
    );
    let e = ep.test::<i64>(4, Cmp::Eq, 0).unwrap_err().to_string();
    assert!(e.contains("0x4") && e.contains("8-byte"), "{e}");
    let e = ep
        .wait_until_any::<u32>(&[0, 4], Some(&[true]), Cmp::Eq, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("2 offsets") && e.contains("mask of 1"), "{e}");
}
