//! A distributed counter on rank 0, incremented by AM from every rank.
//!
//! Each rank sends `N` fetch-and-add requests; rank 0's handler adds and
//! replies with the value before the add. Every rank checks its fetched
//! values are distinct, and rank 0 checks the total is exactly `N x size`.
//!
//! Run: `rgex-run -n 4 target/release/counter [N]`

use rgex::{Flags, Rank};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

fn main() -> rgex::Result<()> {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let counter = Arc::new(AtomicU64::new(0));
    let fetched = Arc::new(Mutex::new(Vec::with_capacity(n as usize)));
    let (c, f) = (counter.clone(), fetched.clone());
    let (client, add) = rgex::init_with(|t| {
        let got = t.register("counter.got", move |_tok, msg| {
            let v = u64::from(msg.arg(0)) | u64::from(msg.arg(1)) << 32;
            f.lock().unwrap().push(v);
        })?;
        t.register("counter.add", move |tok, msg| {
            // Only rank 0's handler runs this; the AM serialises nothing,
            // so the add itself is atomic.
            let old = c.fetch_add(u64::from(msg.arg(0)), Ordering::Relaxed);
            tok.reply_short(got, &[old as u32, (old >> 32) as u32], Flags::empty())
        })
    })?;
    for _ in 0..n {
        client
            .endpoint()
            .request_short(Rank(0), add, &[1], Flags::empty())?;
    }
    while fetched.lock().unwrap().len() < n as usize {
        client.endpoint().poll()?;
    }
    let mut mine = fetched.lock().unwrap().clone();
    mine.sort_unstable();
    mine.dedup();
    assert_eq!(
        mine.len(),
        n as usize,
        "{}: fetched values repeat",
        client.rank()
    );
    client.barrier()?;
    if client.rank().0 == 0 {
        let total = counter.load(Ordering::Relaxed);
        let want = u64::from(n) * u64::from(client.size());
        assert_eq!(total, want, "counter is {total}, expected {want}");
        println!(
            "counter = {total} after {n} fetch-and-adds from each of {} ranks: exact",
            client.size()
        );
    }
    Ok(())
}
