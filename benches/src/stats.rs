//! Median, min and max over repetitions of a measurement.

use serde::Serialize;

/// Summary of the repetitions of one data point.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Number of samples.
    pub reps: usize,
}

impl Stats {
    /// Summarise `samples`; `None` if there are none (or one is NaN).
    ///
    /// ```
    /// let s = rgex_benches::stats::Stats::from_samples(&[3.0, 1.0, 2.0, 10.0]).unwrap();
    /// assert_eq!((s.median, s.min, s.max, s.reps), (2.5, 1.0, 10.0, 4));
    /// ```
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Stats {
            median,
            min: v[0],
            max: v[n - 1],
            reps: n,
        })
    }

    /// Every figure multiplied by `k` (unit conversions; a negative `k`
    /// swaps min and max).
    pub fn scale(self, k: f64) -> Stats {
        let (a, b) = (self.min * k, self.max * k);
        Stats {
            median: self.median * k,
            min: a.min(b),
            max: a.max(b),
            reps: self.reps,
        }
    }

    /// Relative spread `(max - min) / median`: large means a noisy machine.
    pub fn spread(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.median
        }
    }
}

/// Repetitions of a paired comparison per configured repetition, each
/// this many times shorter: a change of machine speed then falls inside
/// few pairs (see [`paired`]).
pub const PAIR_SPLIT: u32 = 3;

/// The ratios `a[i] / b[i]` of two variants' repetitions, summarised; the
/// variants must have run back to back in each repetition, so a machine
/// that changes speed between repetitions moves both halves of a pair and
/// the ratio does not drift. `None` if the lengths differ or are zero.
///
/// ```
/// use rgex_benches::stats::paired;
/// let r = paired(&[2.0, 4.0, 9.0], &[1.0, 2.0, 3.0]).unwrap();
/// assert_eq!((r.median, r.min, r.max), (2.0, 2.0, 3.0));
/// assert!(paired(&[1.0], &[]).is_none());
/// ```
pub fn paired(a: &[f64], b: &[f64]) -> Option<Stats> {
    if a.len() != b.len() {
        return None;
    }
    let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    Stats::from_samples(&r)
}

/// Run `sample` `reps` times (at least once) and summarise the results.
pub fn repeat<E>(reps: usize, mut sample: impl FnMut() -> Result<f64, E>) -> Result<Stats, E> {
    let mut v = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        v.push(sample()?);
    }
    Ok(Stats::from_samples(&v).expect("at least one sample, and timings are never NaN"))
}
