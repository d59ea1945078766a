//! Pack/unpack/copy kernels: walk a range of elements of a loop nest,
//! copying `elem` bytes per point from one side to the other.
//!
//! The innermost loop is specialised for element sizes 1, 2, 4, 8, 16, 32
//! and 64 bytes (a copy of a fixed-size array, which the compiler turns
//! into vector moves); other sizes use `memcpy` per element. A run that is
//! contiguous on both sides is one `memcpy`.
//!
//! Every entry point ([`run`], [`copy_range`], [`copy_all`]) picks the
//! copier once per call (`dispatch`): for 32- and 64-byte elements the
//! whole walk is then compiled with the widest moves the CPU has (see
//! `wide`).
//!
//! - `copier`: how one run is copied (a fixed-size, wide or `memcpy` copy);
//! - `dispatch`: which copier a walk gets, picked once per call;
//! - `walk`: the walks themselves and their entry points;
//! - `loops`: the loops a walk follows, and dense ones for packing.

mod copier;
mod dispatch;
mod loops;
mod walk;

#[cfg(test)]
mod tests;

pub use loops::{dense, dense_loops, with_loops, Loop};
pub use walk::{copy_all, copy_range, run};
