//! Test payloads: generated on the fly, cheap to check.
//!
//! A payload is filled with one byte derived from a per-message seed, so a
//! receiver checking its first and last byte (and its length) notices a
//! stale, truncated or foreign buffer without the check costing much.
//! Seeds that differ in their low byte give different patterns: number
//! messages consecutively and the previous message's bytes never pass.

/// The byte a payload with `seed` is filled with.
#[inline]
pub fn pattern(seed: u32) -> u8 {
    (seed as u8) ^ 0xa5
}

/// Fill `buf` with the pattern of `seed` (what a client producing its
/// data costs: one pass over the buffer).
#[inline]
pub fn generate(buf: &mut [u8], seed: u32) {
    // A zero-length fill still calls memset, which costs about 100 ns on
    // this machine (glibc's AVX2 memset at length 0, measured with
    // am_overhead): skip it so the 0-byte points measure rgex.
    if !buf.is_empty() {
        buf.fill(pattern(seed));
    }
}

/// True if `buf` has length `len` and its first and last byte carry the
/// pattern of `seed`.
///
/// ```
/// use rgex_benches::payload::{check, generate};
/// let mut b = vec![0u8; 100];
/// generate(&mut b, 7);
/// assert!(check(&b, 7, 100));
/// assert!(!check(&b, 8, 100) && !check(&b, 7, 99));
/// assert!(check(&[], 3, 0));
/// ```
#[inline]
pub fn check(buf: &[u8], seed: u32, len: usize) -> bool {
    let p = pattern(seed);
    buf.len() == len && (len == 0 || (buf[0] == p && buf[len - 1] == p))
}
