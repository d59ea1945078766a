//! client_segment: put and get into a node-local peer's client segment,
//! latency (blocking operations) and bandwidth (an NBI flood, then one
//! sync), at 8 B, 4, 16, 64 and 256 KiB and 1 MiB, by whichever path this job's
//! settings give (cross-memory attach by default on smp; active messages
//! with `RGEX_RMA=reference`; below `rgex::CMA_MIN` the reference in
//! both, labelled `am`): the measurement behind `CMA_MIN`, taken with it
//! set to 0.
//!
//! Run: `rgex-run -n 2 --bind target/release/client_segment [--reps N]`,
//! alternating the two settings in rounds (the machine's placement moves
//! for minutes at a time: compare rounds taken side by side). Rank 0
//! measures against rank 1, which sits in `barrier()` (polling) meanwhile.
//! Each point is checked (the bytes read back equal those put). Prints one
//! line per point: `path op size latency_ns bandwidth_MBps`, medians over
//! the repetitions.

use rgex::{ClientPath, Flags, NbiCategory, Rank};
use rgex_benches::stats::repeat;
use rgex_benches::timing::calibrate;
use std::error::Error;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const SIZES: [usize; 6] = [8, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20];

fn main() -> Res<()> {
    let reps = std::env::args()
        .skip_while(|a| a != "--reps")
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(5usize);
    let client = rgex::init()?;
    let ep = client.endpoint();
    if client.size() != 2 {
        return Err("client_segment runs on 2 ranks".into());
    }
    let seg = ep.register_segment(client.world(), vec![0u8; 1 << 20])?;
    let peer = Rank(1);
    if client.rank().0 == 0 {
        let path = |size| match seg.path(peer) {
            ClientPath::Cma if size >= rgex::CMA_MIN => "cma",
            ClientPath::Cma | ClientPath::Reference => "am",
            ClientPath::Local => "local",
            ClientPath::Native => "native",
        };
        let target = Duration::from_millis(40);
        for size in SIZES {
            let src: Vec<u8> = (0..size).map(|i| (i * 13 + size) as u8).collect();
            let mut dst = vec![0u8; size];
            let at = seg.addr(peer, 0);
            let time = |n: u64, f: &mut dyn FnMut() -> rgex::Result<()>| -> Res<Duration> {
                let t = Instant::now();
                for _ in 0..n {
                    f()?;
                }
                Ok(t.elapsed())
            };
            let mut put = || ep.put(at, &src, Flags::empty());
            let n = calibrate(target, 4, 1 << 24, |n| time(n, &mut put))?;
            let put_lat = repeat(reps, || {
                time(n, &mut put).map(|t| t.as_nanos() as f64 / n as f64)
            })?;
            let mut get = || ep.get(&mut dst, at, Flags::empty());
            let get_lat = repeat(reps, || {
                time(n, &mut get).map(|t| t.as_nanos() as f64 / n as f64)
            })?;
            if dst != src {
                return Err(format!("the {size}-byte get read back other bytes than put").into());
            }
            let mut put_flood = || {
                for _ in 0..16 {
                    ep.put_nbi(at, &src, Flags::empty())?;
                }
                ep.nbi_wait(NbiCategory::Put)
            };
            let m = calibrate(target, 1, 1 << 20, |n| time(n, &mut put_flood))?;
            let put_bw = repeat(reps, || {
                time(m, &mut put_flood)
                    .map(|t| (16 * m as usize * size) as f64 / t.as_secs_f64() / 1e6)
            })?;
            let dp = dst.as_mut_ptr();
            let mut get_flood = || {
                for _ in 0..16 {
                    // SAFETY: `dst` is left alone until the sync below.
                    unsafe { ep.get_nbi(dp, size, at, Flags::empty())? };
                }
                ep.nbi_wait(NbiCategory::Get)
            };
            let get_bw = repeat(reps, || {
                time(m, &mut get_flood)
                    .map(|t| (16 * m as usize * size) as f64 / t.as_secs_f64() / 1e6)
            })?;
            let path = path(size);
            println!(
                "{path} put {size} {:.0} {:.0}",
                put_lat.median, put_bw.median
            );
            println!(
                "{path} get {size} {:.0} {:.0}",
                get_lat.median, get_bw.median
            );
        }
    }
    client.barrier()?;
    seg.deregister(client.world())?;
    client.finalize()?;
    Ok(())
}
