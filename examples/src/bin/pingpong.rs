//! AM ping-pong: rank 0 sends Short and Medium requests to rank 1 (to
//! itself in a job of one rank); the handler replies with the same
//! arguments and payload; rank 0 checks them and reports round-trip times.
//!
//! Run: `rgex-run -n 2 target/release/pingpong [ITERATIONS]`

use rgex::{Flags, Rank};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn main() -> rgex::Result<()> {
    let iters: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let pongs = Arc::new(AtomicU64::new(0));
    let p = pongs.clone();
    let (client, ping) = rgex::init_with(|t| {
        // Registered in the same order on every rank: same indices.
        let pong = t.register("pong", move |_tok, msg| {
            // Medium pongs carry a checksum of what the pinger sent.
            if !msg.payload().is_empty() {
                let sum: u32 = msg.payload().iter().map(|&b| b as u32).sum();
                assert_eq!(sum, msg.arg(0), "payload came back damaged");
            }
            p.fetch_add(1, Ordering::Release);
        })?;
        // A failed reply is the handler's error: rgex reports it (naming
        // "ping" and the pinger) from this rank's next poll.
        t.register("ping", move |tok, msg| {
            if msg.payload().is_empty() {
                tok.reply_short(pong, msg.args(), Flags::empty())
            } else {
                tok.reply_medium(pong, msg.args(), msg.payload(), Flags::empty())
            }
        })
    })?;
    let peer = Rank((client.rank().0 + 1) % client.size());
    let wait_for = |n: u64| -> rgex::Result<()> {
        while pongs.load(Ordering::Acquire) < n {
            client.endpoint().poll()?;
        }
        Ok(())
    };

    if client.rank().0 == 0 {
        let start = Instant::now();
        for i in 0..iters {
            client
                .endpoint()
                .request_short(peer, ping, &[i as u32], Flags::empty())?;
            wait_for(i + 1)?;
        }
        let short_rtt = start.elapsed().as_nanos() as f64 / iters as f64;
        // 4 KiB, or the largest Medium the conduit carries if smaller
        // (scc's is 1 KiB).
        let len = client.endpoint().max_medium(peer, 1).min(4096);
        let payload: Vec<u8> = (0..len as u32).map(|i| (i * 7) as u8).collect();
        let sum: u32 = payload.iter().map(|&b| b as u32).sum();
        let start = Instant::now();
        for i in 0..iters {
            client
                .endpoint()
                .request_medium(peer, ping, &[sum], &payload, Flags::empty())?;
            wait_for(iters + i + 1)?;
        }
        let medium_rtt = start.elapsed().as_nanos() as f64 / iters as f64;
        println!(
            "{} -> {}: AM Short round trip {short_rtt:.0} ns, Medium {len} B round trip {medium_rtt:.0} ns ({iters} iterations each)",
            client.rank(),
            peer
        );
    }
    client.barrier()?;
    Ok(())
}
