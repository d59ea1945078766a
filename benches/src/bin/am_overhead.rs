//! Injection overhead of one Medium AM, FP against NP, measured on one
//! rank sending to itself (no second core involved: the figure is the CPU
//! cost of the send path plus dispatch, with the payload generated on the
//! fly into whichever buffer is sent). Batches of 32 sends, then a poll.
//!
//! Usage: am_overhead [ITERATIONS [SIZE,SIZE,...]]

use rgex::{Flags, Rank};
use std::time::Instant;

fn main() -> rgex::Result<()> {
    let iters: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let (client, sink) = rgex::init_with(|t| {
        t.register("sink", |_tok, msg| {
            std::hint::black_box(msg.payload().first());
        })
    })?;
    let me = Rank(client.rank().0);
    let mut buf = vec![0u8; 65536];
    // AM_OVERHEAD_ONLY=fp|np runs one variant (to count instructions of
    // one path under callgrind); the other reports 0.
    let only = std::env::var("AM_OVERHEAD_ONLY").unwrap_or_default();
    let (run_fp, run_np) = (only != "np", only != "fp");
    println!(
        "{:>6} {:>10} {:>10} {:>10}   (ns per message, median of 5)",
        "size", "FP", "NP-rgex", "NP vs FP"
    );
    let sizes: Vec<usize> = match std::env::args().nth(2) {
        Some(list) => list.split(',').filter_map(|s| s.parse().ok()).collect(),
        None => vec![0, 8, 64, 256, 1024, 4096, 16384, 65536],
    };
    for size in sizes {
        let n = (iters / (1 + size as u64 / 256)).max(1000);
        let mut fp = Vec::new();
        let mut np = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            for i in 0..n * u64::from(run_fp) {
                buf[..size].fill(i as u8);
                client.endpoint().request_medium(
                    me,
                    sink,
                    &[1, 2, 3],
                    &buf[..size],
                    Flags::empty(),
                )?;
                if i % 32 == 31 {
                    while client.endpoint().poll()? > 0 {}
                }
            }
            while client.endpoint().poll()? > 0 {}
            fp.push(t.elapsed().as_nanos() as f64 / n as f64);
            let t = Instant::now();
            for i in 0..n * u64::from(run_np) {
                let mut sd = client.endpoint().prepare_request_medium(
                    me,
                    None,
                    size,
                    size,
                    3,
                    Flags::empty(),
                )?;
                if size > 0 {
                    // (a zero-length memset costs ~100 ns here: skip it)
                    sd.buf().fill(i as u8);
                }
                sd.commit(sink, &[1, 2, 3], size)?;
                if i % 32 == 31 {
                    while client.endpoint().poll()? > 0 {}
                }
            }
            while client.endpoint().poll()? > 0 {}
            np.push(t.elapsed().as_nanos() as f64 / n as f64);
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (f, p) = (med(&mut fp), med(&mut np));
        println!(
            "{size:>6} {f:>10.1} {p:>10.1} {:>+9.1}%",
            100.0 * (f / p - 1.0)
        );
    }
    Ok(())
}
