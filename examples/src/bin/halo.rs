//! Halo exchange for a 2-D Jacobi stencil, the grid's columns split across
//! ranks, with the halo columns moved by VIS strided transfers whose shape
//! is compiled once ([`CompiledStrided`]).
//!
//! Each rank keeps `ROWS x COLS` interior points of the global grid, plus
//! one halo column on each side and one boundary row above and below, in
//! a row-major local array. Every step it puts its first and last interior
//! columns (strided in its array) into dense inboxes in its neighbours'
//! segments, then gets its own inboxes into its halo columns (the same
//! shape, a get from its own segment), then updates its interior. At the
//! end every rank compares its block, bit for bit, with the same steps
//! run on the whole grid in one array.
//!
//! Run: `rgex-run -n 4 target/release/halo [ROWS] [COLS] [STEPS]`

use rgex::{CompiledStrided, Flags, NbiCategory, Rank, Vis};
use std::time::Instant;

/// Bytes per grid point (an `f64`).
const F: usize = 8;

/// Initial value at global row `r`, column `c` (boundary values included:
/// they never change).
fn initial(r: usize, c: usize) -> f64 {
    ((r * 31 + c * 17) % 101) as f64 / 100.0
}

/// A row-major grid of `f64` kept as bytes (VIS moves bytes).
struct Grid {
    rows: usize,
    cols: usize,
    bytes: Vec<u8>,
}

impl Grid {
    /// `rows x cols` points, `at(r, c) = value(r, c)`.
    fn new(rows: usize, cols: usize, value: impl Fn(usize, usize) -> f64) -> Self {
        let mut g = Grid {
            rows,
            cols,
            bytes: vec![0; rows * cols * F],
        };
        for r in 0..rows {
            for c in 0..cols {
                g.set(r, c, value(r, c));
            }
        }
        g
    }

    /// Byte offset of point `(r, c)`.
    fn offset(&self, r: usize, c: usize) -> usize {
        (r * self.cols + c) * F
    }

    fn at(&self, r: usize, c: usize) -> f64 {
        let o = self.offset(r, c);
        f64::from_le_bytes(self.bytes[o..o + F].try_into().expect("8 bytes"))
    }

    fn set(&mut self, r: usize, c: usize, v: f64) {
        let o = self.offset(r, c);
        self.bytes[o..o + F].copy_from_slice(&v.to_le_bytes());
    }

    /// One Jacobi step over the interior (every point but the outer ring).
    fn step(&self) -> Grid {
        let mut next = Grid {
            rows: self.rows,
            cols: self.cols,
            bytes: self.bytes.clone(),
        };
        for r in 1..self.rows - 1 {
            for c in 1..self.cols - 1 {
                let sum =
                    self.at(r - 1, c) + self.at(r + 1, c) + self.at(r, c - 1) + self.at(r, c + 1);
                next.set(r, c, 0.25 * sum);
            }
        }
        next
    }
}

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() -> rgex::Result<()> {
    let (rows, cols, steps) = (arg(1, 64), arg(2, 32), arg(3, 50));
    let client = rgex::init()?;
    let vis = Vis::new(client.endpoint())?;
    client.barrier()?;
    let (me, n) = (client.rank().0 as usize, client.size() as usize);
    let f = Flags::empty();

    // Local columns 0 and cols + 1 are the halos; local column c is global
    // column me * cols + c. Rows 0 and rows + 1 are the fixed boundary.
    let mut grid = Grid::new(rows + 2, cols + 2, |r, c| initial(r, me * cols + c));
    // The inboxes in this rank's segment: the column from the left
    // neighbour, then the one from the right, `rows` points each.
    let (left_inbox, right_inbox) = (0u64, (rows * F) as u64);
    // One shape serves every transfer: `rows` points, dense on the peer
    // side (an inbox), one row apart on the local side (a grid column).
    let column = CompiledStrided::new(F, &[rows as u64], &[F as i64], &[(grid.cols * F) as i64])?;
    let col = |c: usize| grid.offset(1, c) as u64;
    let (first, last, left_halo, right_halo) = (col(1), col(cols), col(0), col(cols + 1));

    let t = Instant::now();
    for _ in 0..steps {
        if me > 0 {
            vis.put_nbi(
                Rank(me as u32 - 1),
                column.at(right_inbox, first),
                &grid.bytes,
                f,
            )?;
        }
        if me + 1 < n {
            vis.put_nbi(
                Rank(me as u32 + 1),
                column.at(left_inbox, last),
                &grid.bytes,
                f,
            )?;
        }
        client.endpoint().nbi_wait(NbiCategory::Put)?;
        client.barrier()?;
        let mine = client.rank();
        if me > 0 {
            vis.get(mine, column.at(left_inbox, left_halo), &mut grid.bytes, f)?;
        }
        if me + 1 < n {
            vis.get(mine, column.at(right_inbox, right_halo), &mut grid.bytes, f)?;
        }
        // Nobody puts into an inbox before its owner has read it.
        client.barrier()?;
        grid = grid.step();
    }
    let per_step = t.elapsed() / steps.max(1) as u32;

    // The reference: the same steps on the whole grid in one array.
    let mut whole = Grid::new(rows + 2, n * cols + 2, initial);
    for _ in 0..steps {
        whole = whole.step();
    }
    for r in 1..=rows {
        for c in 1..=cols {
            let (got, want) = (grid.at(r, c), whole.at(r, me * cols + c));
            assert!(
                got.to_bits() == want.to_bits(),
                "rank {me}: point ({r}, {c}) is {got}, the whole-grid reference has {want}"
            );
        }
    }
    client.barrier()?;
    if me == 0 {
        println!(
            "halo: {n} ranks, {rows} x {} grid, {steps} Jacobi steps, {:?} per step (2 halo puts, 2 gets, 2 barriers): every block matches the whole-grid reference bit for bit",
            n * cols,
            per_step
        );
    }
    Ok(())
}
