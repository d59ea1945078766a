//! A 2-D Jacobi stencil with halo exchange by `rput_then`: each rank
//! owns a band of rows; every step it puts its first and last rows into
//! its neighbours' halo buffers with remote completion (an RPC counts
//! the arrival there once the row has landed), waits for its own halos,
//! and updates its band. Each rank then recomputes the whole grid alone
//! and requires its band to match bit for bit. Prints cell updates per
//! second.
//!
//! Usage: `jacobi [COLUMNS] [ROWS_PER_RANK] [STEPS]`

use rgex::Rank;
use rgex_pgas::{DistObject, GlobalPtr, Pgas};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Halo rows that have landed here, per step parity.
struct Arrivals([AtomicU64; 2]);

/// Run at a neighbour once a row it needs for a step of parity `p` has
/// landed in its halo buffer.
fn arrived(pg: &Pgas, p: u8) {
    let a = pg.state::<Arrivals>().expect("set before the first step");
    // Release: pairs with the Acquire of the waiting loop (same thread in
    // practice: both run in this rank's progress).
    a.0[usize::from(p & 1)].fetch_add(1, Ordering::Release);
}

/// Value above the grid's first row and below its last (fixed).
const TOP: f64 = 1.0;
const BOTTOM: f64 = 0.0;

/// The starting value of global cell (i, j).
fn start(i: usize, j: usize) -> f64 {
    ((i * 7 + j * 3) % 11) as f64 / 11.0
}

/// One Jacobi step of `rows` (nx wide) with the row above `up` and the
/// row below `down`; the first and last columns stay fixed.
fn step(rows: &[f64], up: &[f64], down: &[f64], nx: usize, out: &mut [f64]) {
    let m = rows.len() / nx;
    for i in 0..m {
        let above = if i == 0 {
            up
        } else {
            &rows[(i - 1) * nx..i * nx]
        };
        let below = if i + 1 == m {
            down
        } else {
            &rows[(i + 1) * nx..(i + 2) * nx]
        };
        let row = &rows[i * nx..(i + 1) * nx];
        let o = &mut out[i * nx..(i + 1) * nx];
        o[0] = row[0];
        o[nx - 1] = row[nx - 1];
        for j in 1..nx - 1 {
            o[j] = 0.25 * (above[j] + below[j] + row[j - 1] + row[j + 1]);
        }
    }
}

fn main() -> rgex_pgas::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut next_arg = |d: usize| args.next().and_then(|s| s.parse().ok()).unwrap_or(d);
    let (nx, m, steps) = (next_arg(64), next_arg(16), next_arg(50));
    let pg = rgex_pgas::init()?;
    pg.set_state(Arrivals([AtomicU64::new(0), AtomicU64::new(0)]));
    let (me, n) = (pg.rank().0 as usize, pg.size() as usize);
    // halo[2 * p + side]: side 0 the row from above, 1 from below.
    let halos: Vec<GlobalPtr<f64>> = (0..4)
        .map(|_| pg.new_array(nx, 0.0))
        .collect::<Result<_, _>>()?;
    let mine = DistObject::new(&pg, [halos[0], halos[1], halos[2], halos[3]])?;
    let up = (me > 0)
        .then(|| pg.wait(mine.fetch(Rank(me as u32 - 1))?))
        .transpose()?;
    let down = (me + 1 < n)
        .then(|| pg.wait(mine.fetch(Rank(me as u32 + 1))?))
        .transpose()?;
    let neighbours = u64::from(up.is_some()) + u64::from(down.is_some());
    let mut cur: Vec<f64> = (0..m * nx)
        .map(|k| start(me * m + k / nx, k % nx))
        .collect();
    let mut next = vec![0.0; m * nx];
    let (mut above, mut below) = (vec![TOP; nx], vec![BOTTOM; nx]);
    pg.barrier()?;
    let t0 = Instant::now();
    for s in 0..steps {
        let p = s % 2;
        // My first row is the halo from below of the rank above, my last
        // the halo from above of the rank below.
        let mut sent = Vec::new();
        if let Some(h) = up {
            sent.push(pg.rput_then(&cur[..nx], h[2 * p + 1], arrived, p as u8)?);
        }
        if let Some(h) = down {
            sent.push(pg.rput_then(&cur[(m - 1) * nx..], h[2 * p], arrived, p as u8)?);
        }
        for f in sent {
            pg.wait(f)?;
        }
        let want = neighbours * (s as u64 / 2 + 1);
        let arrivals = pg.state::<Arrivals>()?;
        let waited = Instant::now();
        while arrivals.0[p].load(Ordering::Acquire) < want {
            pg.progress()?;
            assert!(
                waited.elapsed() < Duration::from_secs(120),
                "rank {me}: step {s}: halos lost"
            );
        }
        let seg = pg.client().endpoint().segment();
        let read = |g: GlobalPtr<f64>, into: &mut Vec<f64>| -> rgex_pgas::Result<()> {
            let mut b = vec![0u8; nx * 8];
            seg.read(g.offset(), &mut b)?;
            for (v, c) in into.iter_mut().zip(b.chunks_exact(8)) {
                *v = f64::from_ne_bytes(c.try_into().expect("8 bytes"));
            }
            Ok(())
        };
        if up.is_some() {
            read(halos[2 * p], &mut above)?;
        }
        if down.is_some() {
            read(halos[2 * p + 1], &mut below)?;
        }
        step(&cur, &above, &below, nx, &mut next);
        std::mem::swap(&mut cur, &mut next);
    }
    let secs = t0.elapsed().as_secs_f64();
    pg.barrier()?;
    // The whole grid on this rank alone, the same arithmetic in the same order.
    let rows = m * n;
    let mut g: Vec<f64> = (0..rows * nx).map(|k| start(k / nx, k % nx)).collect();
    let mut h = vec![0.0; rows * nx];
    for _ in 0..steps {
        step(&g, &[TOP].repeat(nx), &[BOTTOM].repeat(nx), nx, &mut h);
        std::mem::swap(&mut g, &mut h);
    }
    let band = &g[me * m * nx..(me + 1) * m * nx];
    assert!(
        band.iter()
            .zip(&cur)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "rank {me}: its band differs from the whole-grid reference"
    );
    let rate = pg.allreduce(&[(m * nx * steps) as f64 / secs], rgex::ReduceOp::Sum)?;
    if me == 0 {
        println!("pgas jacobi: {n} ranks, {rows} x {nx} grid, {steps} steps, every band matches the whole-grid reference bit for bit");
        println!("pgas jacobi: {:.0} cell updates/s (all ranks)", rate[0]);
    }
    pg.barrier()?;
    Ok(())
}
