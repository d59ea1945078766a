//! Flood: every rank sends `N` AMs (default 1,000,000), round-robin to
//! every rank including itself, without waiting; one in sixteen is a Medium
//! with a small checksummed payload. Every receiver checks that each
//! sender's messages arrive exactly once and in order (sequence numbers per
//! sender), then all ranks compare counts. Backpressure is real (the queues
//! hold 64 messages), so this also shows two ranks flooding each other do
//! not deadlock.
//!
//! Usage: `am_flood [N]`

use rgex::{Flags, Rank};
use rgex_tests::{fill_pattern, ok, pattern_mismatch, wait_until};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct State {
    /// Next sequence number expected from each sender, sized by the job
    /// at first use (a handler may run before this rank's init returns).
    next: std::sync::OnceLock<Vec<AtomicU64>>,
    problems: Mutex<Vec<String>>,
}

impl State {
    fn next(&self, ranks: u32) -> &[AtomicU64] {
        self.next
            .get_or_init(|| (0..ranks).map(|_| AtomicU64::new(0)).collect())
    }
}

fn main() -> rgex::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let st = Arc::new(State::default());
    let s = st.clone();
    let (client, sink) = rgex::init_with(|t| {
        t.register("flood.sink", move |tok, msg| {
            let src = tok.src().index();
            let seq = u64::from(msg.arg(0)) | u64::from(msg.arg(1)) << 32;
            // One thread polls per rank here, and a sender's messages
            // travel through one FIFO queue: strict order is expected.
            let next = s.next(tok.endpoint().size());
            let want = next[src].load(Ordering::Relaxed);
            if seq != want {
                s.problems
                    .lock()
                    .unwrap()
                    .push(format!("from rank {src}: got #{seq}, expected #{want}"));
            }
            if !msg.payload().is_empty() {
                if let Some(j) = pattern_mismatch(msg.payload(), src as u32, seq as u32) {
                    s.problems.lock().unwrap().push(format!(
                        "from rank {src}: #{seq} payload differs at byte {j}"
                    ));
                }
            }
            next[src].store(seq + 1, Ordering::Release);
        })
    })?;
    let (me, size) = (client.rank().0, client.size());
    let mut seq = vec![0u64; size as usize];
    let mut payload = [0u8; 48];
    for i in 0..n {
        let dest = ((me as u64 + i) % size as u64) as u32;
        let s = seq[dest as usize];
        let args = [s as u32, (s >> 32) as u32];
        if i % 16 == 15 {
            fill_pattern(&mut payload, me, s as u32);
            client
                .endpoint()
                .request_medium(Rank(dest), sink, &args, &payload, Flags::empty())?;
        } else {
            client
                .endpoint()
                .request_short(Rank(dest), sink, &args, Flags::empty())?;
        }
        seq[dest as usize] += 1;
    }
    // What each rank sent here follows from the schedule: sender `src`
    // sends message i to (src + i) mod size. (Computed, not gathered: a
    // bootstrap collective does not poll, so waiting in one while peers
    // still flood us would deadlock.)
    for src in 0..size {
        let want = (0..n)
            .filter(|i| (u64::from(src) + i) % u64::from(size) == u64::from(me))
            .count() as u64;
        let got = |st: &State| st.next(size)[src as usize].load(Ordering::Acquire);
        wait_until(&client, "flood messages", || got(&st) >= want);
        assert_eq!(
            got(&st),
            want,
            "{}: more messages from rank {src} than were sent",
            client.rank()
        );
    }
    client.barrier()?;
    let problems = st.problems.lock().unwrap();
    assert!(
        problems.is_empty(),
        "{}: {} problems, first: {:?}",
        client.rank(),
        problems.len(),
        &problems[..problems.len().min(5)]
    );
    ok(&client, &format!("flood: {n} AMs from each of {size} ranks, every one delivered once, in order per sender"));
    Ok(())
}
