//! The known name closest to a mistyped one.

use super::{Var, VARS};

/// Levenshtein distance between `a` and `b` (insertions, deletions and
/// substitutions of bytes, each costing one).
///
/// ```
/// use rgex_core::config::edit_distance;
/// assert_eq!(edit_distance("RGEX_SEGMNET_SIZE", "RGEX_SEGMENT_SIZE"), 2);
/// assert_eq!(edit_distance("", "abc"), 3);
/// ```
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    // One row of the table at a time: `row[j]` is the distance between
    // the first i bytes of `a` and the first j of `b`.
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// The registered variable whose name is closest to `name` (the first in
/// [`VARS`]'s order among equally close ones).
///
/// ```
/// use rgex_core::config::closest;
/// assert_eq!(closest("RGEX_SEGMNET_SIZE").name, "RGEX_SEGMENT_SIZE");
/// assert_eq!(closest("RGEX_OFI_WINDOWS").name, "RGEX_OFI_WINDOW");
/// ```
pub fn closest(name: &str) -> &'static Var {
    VARS.iter()
        .min_by_key(|v| edit_distance(name, v.name))
        .expect("the registry is not empty")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_each_edit_once() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("ab", "ba"), 2);
    }

    #[test]
    fn a_typo_of_each_variable_finds_it() {
        // Drop one character of each name (past the prefix): the closest
        // name is the one it came from, or one exactly as close.
        for v in VARS {
            let typo: String = v.name[..6].to_string() + &v.name[7..];
            let got = closest(&typo);
            assert_eq!(
                edit_distance(&typo, got.name),
                edit_distance(&typo, v.name),
                "{typo}: {} chosen over {}",
                got.name,
                v.name
            );
        }
    }
}
