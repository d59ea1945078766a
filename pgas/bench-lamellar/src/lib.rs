//! Shared pieces of the lamellar ports of rgex-pgas's examples: the same
//! value and update-stream functions (copied from pgas/examples so both
//! sides do exactly the same work) and the argument parsing.

/// The value stored for `key` (as in pgas/examples/dht.rs): its length
/// varies with the key, and every 500th is 100 KB.
pub fn value_of(key: u64) -> Vec<u8> {
    let len = if key % 500 == 7 {
        100_000
    } else {
        (key % 13) as usize * 37 + 1
    };
    (0..len)
        .map(|i| (key as usize).wrapping_mul(31).wrapping_add(i) as u8)
        .collect()
}

/// Rank `r`'s `i`-th update: a global bin (splitmix64 of both), as in
/// pgas/examples/histogram.rs.
pub fn bin(r: u64, i: u64, total_bins: u64) -> u64 {
    let mut z = (r << 40 ^ i).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % total_bins
}

/// The `n`-th command-line argument (from 1) parsed, or `default`.
pub fn arg<T: std::str::FromStr>(n: usize, default: T) -> T {
    std::env::args()
        .nth(n)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_have_the_examples_sizes() {
        assert_eq!(value_of(7).len(), 100_000);
        assert_eq!(value_of(0).len(), 1);
        assert_eq!(value_of(12).len(), 12 * 37 + 1);
        assert_eq!(value_of(1)[1], 32);
    }

    #[test]
    fn bins_stay_in_range_and_spread() {
        let mut seen = [0u32; 8];
        for i in 0..8000 {
            seen[bin(1, i, 8) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800 && c < 1200), "{seen:?}");
    }
}
