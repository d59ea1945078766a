//! The statistics' counters: one block of plain counters per thread,
//! each block registered once in a list that [`snapshot`] sums.
//!
//! A thread alone writes its block, with a relaxed load and a relaxed
//! store (no read-modify-write: no `lock` prefix, no cache line taken
//! from another core). A reader on another thread (the summing at exit
//! or [`Client::stats`](https://docs.rs/rgex-endpoint)) loads each
//! counter relaxed: an atomic load of a word only its owner stores is
//! sound and sees some value the owner stored, never a torn one. The sum
//! is a snapshot, not a cut: counts a thread makes while it is taken may
//! or may not be in it. The summing thread's own counts, and those of a
//! thread it joined, are all in it (program order; `join`'s
//! happens-before).

use super::names::{Counter, COUNTERS};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// One thread's counters.
pub(crate) struct Block([AtomicU64; COUNTERS]);

/// Every thread's block, in the order threads first counted. A block is
/// leaked (a thread that ends keeps its counts in the sum).
static BLOCKS: Mutex<Vec<&'static Block>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: Cell<Option<&'static Block>> = const { Cell::new(None) };
}

/// This thread's block, made and registered on its first count: fetched
/// once by a hook that counts several things.
#[inline(always)]
pub(crate) fn mine() -> &'static Block {
    match MINE.with(Cell::get) {
        Some(b) => b,
        None => register(),
    }
}

#[cold]
#[inline(never)]
fn register() -> &'static Block {
    let b: &'static Block = Box::leak(Box::new(Block(std::array::from_fn(|_| AtomicU64::new(0)))));
    BLOCKS.lock().unwrap_or_else(|e| e.into_inner()).push(b);
    MINE.with(|m| m.set(Some(b)));
    b
}

impl Block {
    /// Add `n` to counter `c` of this block, which is this thread's.
    #[inline(always)]
    pub(crate) fn add(&self, c: Counter, n: u64) {
        let cell = &self.0[c.index()];
        // Relaxed load and store, no read-modify-write: this thread alone
        // stores this word (the module's doc says why readers are sound).
        cell.store(
            cell.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }
}

/// Add `n` to counter `c` of this thread.
#[inline]
pub(crate) fn add(c: Counter, n: u64) {
    mine().add(c, n);
}

/// Raise gauge `c` of this thread to `v` if it is higher (a peak).
#[inline]
pub(crate) fn raise(c: Counter, v: u64) {
    let cell = &mine().0[c.index()];
    // As for `add`: the owner's plain read and write of its own word.
    if v > cell.load(Ordering::Relaxed) {
        cell.store(v, Ordering::Relaxed);
    }
}

/// The counters summed over every thread that counted (a peak is the
/// highest thread's), indexed by [`Counter::index`].
pub(crate) fn snapshot() -> [u64; COUNTERS] {
    let mut sum = [0u64; COUNTERS];
    for b in BLOCKS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        for (i, s) in sum.iter_mut().enumerate() {
            // Relaxed: a word its owner stores without RMW; any value it
            // stored is a correct partial count (see the module's doc).
            let v = b.0[i].load(Ordering::Relaxed);
            if Counter::from_index(i).is_peak() {
                *s = (*s).max(v);
            } else {
                *s = s.wrapping_add(v);
            }
        }
    }
    sum
}
