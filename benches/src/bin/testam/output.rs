//! testam's table, JSON records and plot.

use crate::baseline::{Ucx, FABRIC_SIZE};
use crate::handlers::Variant;
use crate::measure::AmResults;
use rgex_benches::fabric::{self, ProviderFloor, LATENCY_TARGET};
use rgex_benches::floor::Floors;
use rgex_benches::report::{num, size as size_str, spread, Job, Plot, Record, Series, Table};
use rgex_benches::stats::Stats;
use std::fmt::Write as _;
use std::time::Duration;

/// Everything one run produced.
pub struct Run {
    /// What all records share.
    pub job: Job,
    /// Repetitions per point.
    pub reps: usize,
    /// Target duration of one repetition.
    pub target: Duration,
    /// Physical floors.
    pub floors: Floors,
    /// The UCX peer.
    pub ucx: Ucx,
    /// Over the ofi conduit: the provider floor.
    pub fabric: Option<ProviderFloor>,
    /// The rgex measurements.
    pub am: AmResults,
    /// The node's 1-minute load average when rank 0 started.
    pub load: Option<f64>,
    /// rgex and the peers interleaved in rounds, or why not run.
    pub rounds: Result<rgex_benches::rounds::Rounds, String>,
}

impl Run {
    fn cache_rtt(&self) -> Option<f64> {
        self.floors.cache_rtt.as_ref().ok().map(|(s, _)| s.median)
    }

    /// The provider's round trip in ns (twice `fi_pingpong`'s one-way
    /// latency at [`FABRIC_SIZE`]), if measured.
    fn provider_rtt(&self) -> Option<f64> {
        let f = self.fabric.as_ref()?.at(FABRIC_SIZE)?;
        Some(f.round_trip().median)
    }

    /// `x` as a multiple of the cache-line round trip, or `-`.
    fn x_floor(&self, x: f64) -> String {
        self.cache_rtt()
            .map_or_else(|| "-".to_owned(), |f| format!("{:.1}x", x / f))
    }
}

/// A paired NP-over-FP ratio in percent: its median, and the range of
/// the repetitions' ratios.
fn speedup(pct: &Stats) -> String {
    format!("{:+.1}% [{:+.0} .. {:+.0}]", pct.median, pct.min, pct.max)
}

/// The human-readable report.
pub fn table(run: &Run) -> String {
    let mut s = String::new();
    let j = &run.job;
    let _ = writeln!(
        s,
        "testam: {} rank(s), conduit {}, {} repetitions per point of >= {:.2} s (Medium: {} of >= {:.3} s, the variants interleaved); figures are median [min .. max]{}",
        j.ranks,
        j.conduit,
        run.reps,
        run.target.as_secs_f64(),
        run.reps * crate::measure::MEDIUM_SPLIT as usize,
        run.target.as_secs_f64() / crate::measure::MEDIUM_SPLIT as f64,
        if j.oversubscribed { "; OVERSUBSCRIBED (more ranks than CPUs): times include the scheduler" } else { "" }
    );
    if let Some(l) = run.load {
        let _ = writeln!(
            s,
            "node load average (1 min) at start: {l:.2} on {} CPUs{}",
            rgex_benches::affinity::online_cpus(),
            if l >= 0.5 {
                " -- other processes were busy: expect noisy figures (see min/max)"
            } else {
                ""
            }
        );
    }
    if j.ranks == 1 {
        let _ = writeln!(
            s,
            "(one rank: AMs go to self; run through `rgex-run -n 2` for the two-rank figures)"
        );
    }

    let _ = writeln!(s, "\nPhysical floor (measured in this run)");
    let t = run.floors.table();
    s.push_str(&t.to_string());

    if let Some(f) = &run.fabric {
        s.push('\n');
        s.push_str(&f.report());
    }

    let _ = writeln!(s, "\nAM Short");
    let mut t = Table::new([
        "metric",
        "median [min .. max]",
        "unit",
        "x cache-line RTT",
        "per rep",
    ]);
    let am = &run.am;
    t.row([
        "round trip (request, reply, wait; no payload: the peers' semantics)".to_owned(),
        spread(&am.short_rtt.ns),
        "ns".into(),
        run.x_floor(am.short_rtt.ns.median),
        format!("{} trips", am.short_rtt.iters),
    ]);
    t.row([
        "one-way flood, time per message".to_owned(),
        spread(&am.flood.ns),
        "ns/msg".into(),
        run.x_floor(am.flood.ns.median),
        format!("{} msgs", am.flood.iters),
    ]);
    match &run.ucx {
        Ucx::Measured {
            rtt,
            rtt_p50,
            iters,
            tls,
            size,
        } => {
            t.row([
                format!(
                    "ucx_perftest ucp_am_lat {size} B ({tls}), round trip = 2 x reported one-way"
                ),
                spread(rtt),
                "ns".into(),
                run.x_floor(rtt.median),
                format!("{iters} iters"),
            ]);
            t.row([
                "  the same, 2 x its 50th-percentile one-way latency".to_owned(),
                spread(rtt_p50),
                "ns".into(),
                run.x_floor(rtt_p50.median),
                String::new(),
            ]);
        }
        Ucx::NotInstalled | Ucx::Failed(_) | Ucx::Skipped(_) => {}
    }
    if let Some(f) = run.fabric.as_ref().and_then(|f| f.at(FABRIC_SIZE)) {
        t.row([
            format!("{} round trip = 2 x one-way", f.name()),
            spread(&f.round_trip()),
            "ns".into(),
            run.x_floor(f.round_trip().median),
            format!("{} trips", f.iters),
        ]);
    }
    s.push_str(&t.to_string());
    match &run.ucx {
        Ucx::NotInstalled => s.push_str("ucx_perftest: not installed, skipped\n"),
        Ucx::Failed(why) => {
            let _ = writeln!(s, "ucx_perftest: failed, skipped: {why}");
        }
        Ucx::Skipped(why) => {
            let _ = writeln!(s, "ucx_perftest: skipped ({why})");
        }
        Ucx::Measured { .. } => {}
    }
    if let Some(f) = &run.fabric {
        match run.provider_rtt() {
            Some(p) => {
                let x = am.short_rtt.ns.median;
                let v = fabric::verdict(x, p);
                let _ = writeln!(
                    s,
                    "rgex AM Short round trip / provider round trip ({}) = {:.2} (target <= {LATENCY_TARGET}: {v})",
                    f.provider,
                    x / p,
                );
                if v == fabric::NO_FLOOR {
                    let _ = writeln!(s, "({})", fabric::NO_FLOOR_NOTE);
                }
            }
            None => {
                let _ = writeln!(
                    s,
                    "rgex AM Short round trip vs the provider: no provider floor (see above)"
                );
            }
        }
    }
    if let Ucx::Measured { rtt, .. } = &run.ucx {
        let _ = writeln!(
            s,
            "rgex AM Short round trip / UCX ucp_am_lat round trip = {:.2} (below 1: rgex is faster)",
            am.short_rtt.ns.median / rtt.median
        );
    }

    let _ = writeln!(
        s,
        "\nAM Medium round trip (ns, same payload size each way; max Medium {} B with {} args)",
        am.max_medium,
        crate::handlers::MEDIUM_NARGS
    );
    let mut header: Vec<String> = vec!["size".into()];
    header.extend(Variant::ALL.iter().map(|v| v.name().to_owned()));
    header.extend([
        "NP-rgex vs FP".into(),
        "NP-client vs FP".into(),
        "FP x cache RTT".into(),
        "memcpy ns".into(),
        "2 cross-core copies ns".into(),
        "trips/rep".into(),
    ]);
    let mut t = Table::new(header);
    for row in &am.medium {
        let [fp, npr, npc, fps] = &row.points;
        // One in-cache memcpy of the payload: the floor of the copy a
        // fixed-payload send makes (twice per round trip).
        let copy = run
            .floors
            .memcpy_at(row.size)
            .filter(|m| m.median > 0.0)
            .map_or_else(|| "-".into(), |m| num(row.size as f64 / m.median));
        // Two cross-core copies of the payload, one each way: the floor of
        // a large Medium's round trip.
        let cross = run
            .floors
            .cross_copy_at(row.size)
            .map_or_else(|| "-".into(), |c| num(c.median));
        t.row([
            row.size.to_string(),
            spread(&fp.ns),
            spread(&npr.ns),
            spread(&npc.ns),
            spread(&fps.ns),
            speedup(&row.paired[0]),
            speedup(&row.paired[1]),
            run.x_floor(fp.ns.median),
            copy,
            cross,
            fp.iters.to_string(),
        ]);
    }
    s.push_str(&t.to_string());
    let _ = writeln!(
        s,
        "NP vs FP = 100 * (FP time / NP time - 1), positive: the negotiated payload is faster; median [min .. max] over repetitions, \
         each the ratio of back-to-back runs of the variants ({} repetitions per size)",
        am.medium.first().map_or(0, |r| r.paired[0].reps)
    );
    let _ = writeln!(
        s,
        "FP, NP-rgex, NP-client: the realistic mode (each payload generated by the sender and checked by the handler); \
         FP-static: the peers' mode (GASNet testam, ucp_am_lat: a static payload, a handler that replies from a static \
         buffer without reading it, a pong that is only counted)"
    );
    if let (Ucx::Measured { rtt, size, .. }, Some(row)) = (
        &run.ucx,
        am.medium.iter().find(|r| {
            let Ucx::Measured { size, .. } = &run.ucx else {
                return false;
            };
            r.size as u64 == *size
        }),
    ) {
        let k = Variant::ALL
            .iter()
            .position(|v| *v == Variant::FpStatic)
            .expect("FP-static is a variant");
        let ours = row.points[k].ns.median;
        let _ = writeln!(
            s,
            "rgex AM Medium {size} B round trip FP-static / UCX ucp_am_lat {size} B round trip = {} / {} ns = {:.2} (below 1: rgex is faster)",
            num(ours),
            num(rtt.median),
            ours / rtt.median
        );
    }
    let fps = Variant::ALL
        .iter()
        .position(|v| *v == Variant::FpStatic)
        .expect("FP-static is a variant");
    for row in &am.medium {
        if let Some(c) = run.floors.cross_copy_at(row.size) {
            let ours = row.points[fps].ns.median;
            let _ = writeln!(
                s,
                "rgex AM Medium {} round trip FP-static / two cross-core copies of it = {} / {} ns = {:.2}",
                rgex_benches::report::size(row.size as u64),
                num(ours),
                num(c.median),
                ours / c.median
            );
        }
    }
    let _ = writeln!(
        s,
        "published (Aries, GASNet-EX 2018.3.0): NP-AM Medium up to +6% over FP at <= 4 KiB, +14% at 64 KiB"
    );
    match &run.rounds {
        Ok(r) => s.push_str(&r.report(
            "Rounds: rgex and its peers interleaved (the peers' semantics: no payload or a static 8 B one)",
        )),
        Err(why) => {
            let _ = writeln!(s, "\nRounds: not run ({why})");
        }
    }
    s
}

/// One JSON record per data point.
pub fn records(run: &Run) -> Vec<Record> {
    let j = &run.job;
    let mut v = Vec::new();
    v.extend(run.floors.records(j));
    let am = &run.am;
    let mut short = j.record(
        "AM Short round trip",
        None,
        &am.short_rtt.ns,
        "ns",
        am.short_rtt.iters,
    );
    if let (Some(p), Some(f)) = (
        run.provider_rtt(),
        run.fabric.as_ref().and_then(|f| f.at(FABRIC_SIZE)),
    ) {
        short = short.with_floor(
            &format!("2 x {} one-way", f.name()),
            p,
            Some(LATENCY_TARGET),
        );
    }
    v.push(short);
    v.push(j.record(
        "AM Short flood, per message",
        None,
        &am.flood.ns,
        "ns/msg",
        am.flood.iters,
    ));
    for row in &am.medium {
        for (k, p) in row.points.iter().enumerate() {
            let name = format!("AM Medium round trip {}", Variant::ALL[k].name());
            v.push(j.record(&name, Some(row.size as u64), &p.ns, "ns", p.iters));
        }
        for (k, pct) in row.paired.iter().enumerate() {
            let name = format!(
                "AM Medium round trip {} over FP (paired)",
                Variant::ALL[k + 1].name()
            );
            let iters = row.points[k + 1].iters;
            v.push(j.record(&name, Some(row.size as u64), pct, "%", iters));
        }
    }
    if let Some(f) = &run.fabric {
        v.extend(f.records(j));
    }
    if let Ok(r) = &run.rounds {
        v.extend(r.records(|k| crate::rounds::job(j, k), crate::rounds::size));
    }
    if let Ucx::Measured {
        rtt,
        rtt_p50,
        iters,
        tls,
        size,
    } = &run.ucx
    {
        let peer = Job {
            conduit: "ucx".into(),
            provider: Some(tls.clone()),
            ranks: 2,
            ..j.clone()
        };
        v.push(peer.record(
            "ucx_perftest ucp_am_lat round trip (2 x overall one-way)",
            Some(*size),
            rtt,
            "ns",
            *iters,
        ));
        v.push(peer.record(
            "ucx_perftest ucp_am_lat round trip (2 x p50 one-way)",
            Some(*size),
            rtt_p50,
            "ns",
            *iters,
        ));
    }
    v
}

/// Medium round trip against size, one line per variant, with the
/// floor, the Short round trip and UCX as reference lines.
pub fn plot(run: &Run) -> Plot {
    let ticks = run
        .am
        .medium
        .iter()
        .map(|r| size_str(r.size as u64))
        .collect();
    let mut p = Plot::new(
        &format!(
            "testam: AM Medium round trip, {} rank(s), conduit {}{}",
            run.job.ranks,
            run.job.conduit,
            if run.job.oversubscribed {
                " (oversubscribed)"
            } else {
                ""
            }
        ),
        "payload size (bytes, each way)",
        "round trip (ns, median; whiskers min..max)",
        ticks,
    );
    for (k, v) in Variant::ALL.iter().enumerate() {
        p.series.push(Series {
            name: v.name().to_owned(),
            points: run
                .am
                .medium
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let s = r.points[k].ns;
                    (i, s.median, s.min, s.max)
                })
                .collect(),
        });
    }
    if let Some(f) = run.cache_rtt() {
        p.reference(&format!("cache-line RTT {} ns", num(f)), f);
    }
    p.reference(
        &format!("AM Short RTT {} ns", num(run.am.short_rtt.ns.median)),
        run.am.short_rtt.ns.median,
    );
    if let Ucx::Measured { rtt, .. } = &run.ucx {
        p.reference(
            &format!("UCX am_lat RTT {} ns", num(rtt.median)),
            rtt.median,
        );
    }
    if let Some(r) = run.provider_rtt() {
        p.reference(&format!("fi_pingpong RTT {} ns", num(r)), r);
    }
    p
}
