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

/// Fill `buf` from `seed` the way a client producing its data would: one
/// pass of 8-byte words, each different (so the compiler cannot turn it
/// into `memset`), whose first and last bytes are the pattern of `seed`
/// (so [`check`] passes).
///
/// Not `memset`: glibc's AVX-512 memset (chosen on this AMD EPYC) writes
/// 64 bytes as two overlapping 64-byte stores and anything shorter as a
/// masked store; into a buffer whose line another core holds (a
/// negotiated-payload buffer on smp is the receiver's memory) that made a
/// 64-byte Medium round trip 10-15% slower than writing the same bytes
/// with word stores, and a zero-length call cost ~100 ns. testam
/// measures rgex's paths, not that.
#[inline]
pub fn generate(buf: &mut [u8], seed: u32) {
    let p = pattern(seed);
    let splat = u64::from_ne_bytes([p; 8]);
    let mut words = buf.chunks_exact_mut(8);
    for (i, w) in (&mut words).enumerate() {
        // Bytes 2..6 carry the word's index (below 2^40 words the top byte
        // stays the pattern, like byte 0).
        let v = splat ^ ((i as u64 & ((1 << 40) - 1)) << 16);
        w.copy_from_slice(&v.to_ne_bytes());
    }
    // Byte by byte: a `fill` would call memset even when empty, and a
    // zero-length glibc memset costs ~100 ns here (a masked store).
    for b in words.into_remainder() {
        *b = p;
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
/// for n in [0, 1, 7, 8, 9, 64, 4096] {
///     let mut b = vec![0u8; n];
///     generate(&mut b, 3);
///     assert!(check(&b, 3, n), "{n} bytes");
/// }
/// assert!(!check(&b, 8, 100) && !check(&b, 7, 99));
/// assert!(check(&[], 3, 0));
/// ```
#[inline]
pub fn check(buf: &[u8], seed: u32, len: usize) -> bool {
    let p = pattern(seed);
    buf.len() == len && (len == 0 || (buf[0] == p && buf[len - 1] == p))
}
