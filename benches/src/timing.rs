//! Choosing iteration counts so each repetition runs for a target time.

use std::time::Duration;

/// The number of iterations for which `trial` runs about `target`.
///
/// `trial(n)` runs `n` iterations and returns how long they took. Trials
/// start at `start` iterations and grow until one lasts at least a tenth
/// of `target`, then the count is scaled up to `target` at the fastest
/// rate any trial of at least a hundredth of `target` ran. The trials double
/// as warm-up (the first is discarded). The result is clamped to `start..=max`.
///
/// ```
/// use std::time::Duration;
/// let n = rgex_benches::timing::calibrate(Duration::from_millis(10), 1, 1 << 30, |n| {
///     Ok::<_, ()>(Duration::from_nanos(n * 100)) // 100 ns per iteration
/// })
/// .unwrap();
/// assert!((90_000..=110_000).contains(&n));
/// ```
pub fn calibrate<E>(
    target: Duration,
    start: u64,
    max: u64,
    mut trial: impl FnMut(u64) -> Result<Duration, E>,
) -> Result<u64, E> {
    let start = start.max(1);
    let max = max.max(start);
    let enough = target / 10;
    // A first, discarded trial absorbs one-time costs (page faults, cold
    // caches, lazily built state) that would make a short trial look slow.
    trial(start)?;
    let mut n = start;
    // The fastest rate seen in a trial long enough to trust: noise (a
    // descheduled thread, a foreign process) only ever slows a trial down,
    // and an underestimate would make every repetition too short.
    let mut best = f64::INFINITY;
    loop {
        let t = trial(n)?;
        let per_iter = t.as_secs_f64() / n as f64;
        if t >= enough / 10 {
            best = best.min(per_iter);
        }
        if t >= enough || n >= max {
            let rate = if best.is_finite() { best } else { per_iter };
            let want = target.as_secs_f64() / rate.max(1e-12);
            return Ok((want.ceil() as u64).clamp(start, max));
        }
        // Aim the next trial at `enough` (with margin), growing at most 100x.
        let grow = if t.is_zero() {
            100.0
        } else {
            (enough.as_secs_f64() * 1.5 / t.as_secs_f64()).clamp(2.0, 100.0)
        };
        n = ((n as f64 * grow) as u64).min(max);
    }
}
