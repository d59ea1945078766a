//! A small hand-written SVG line plot: categorical x axis (typically
//! message sizes, equally spaced), logarithmic y axis, one line per
//! series with min..max whiskers, optional horizontal reference lines.

use super::escape as esc;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// One line of the plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x index into the plot's ticks, median, min, max)`; non-positive
    /// values cannot be shown on a log axis and are skipped.
    pub points: Vec<(usize, f64, f64, f64)>,
}

/// A line plot.
///
/// ```
/// use rgex_benches::report::{Plot, Series};
/// let mut p = Plot::new("RTT", "size (bytes)", "ns", vec!["0".into(), "1".into()]);
/// p.series.push(Series { name: "FP".into(), points: vec![(0, 300.0, 290.0, 310.0), (1, 320.0, 300.0, 330.0)] });
/// p.reference("floor", 100.0);
/// let svg = p.to_svg();
/// assert!(svg.starts_with("<svg") && svg.contains("polyline") && svg.contains("floor"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    /// Title above the plot.
    pub title: String,
    /// X axis caption.
    pub x_label: String,
    /// Y axis caption (the unit).
    pub y_label: String,
    /// X tick labels; series points index into them.
    pub x_ticks: Vec<String>,
    /// The lines.
    pub series: Vec<Series>,
    /// Horizontal dashed lines (label, y), e.g. a physical floor.
    pub references: Vec<(String, f64)>,
}

const W: f64 = 860.0;
const H: f64 = 520.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
/// Dash patterns of the reference lines, in turn.
const DASHES: [&str; 4] = ["6 4", "2 3", "10 3 2 3", "1 6"];
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

/// Tick label for a y value on a log axis.
fn y_tick_label(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{}k", v / 1e3)
    } else {
        format!("{v}")
    }
}

impl Plot {
    /// An empty plot with these captions and x ticks.
    pub fn new(title: &str, x_label: &str, y_label: &str, x_ticks: Vec<String>) -> Self {
        Plot {
            title: title.to_owned(),
            x_label: x_label.to_owned(),
            y_label: y_label.to_owned(),
            x_ticks,
            series: Vec::new(),
            references: Vec::new(),
        }
    }

    /// Add a horizontal reference line.
    pub fn reference(&mut self, label: &str, y: f64) -> &mut Self {
        self.references.push((label.to_owned(), y));
        self
    }

    /// The y axis range as `(log10 lo, log10 hi)`: the data and the
    /// reference lines, widened to the nearest 1, 2 or 5 times a power of ten.
    fn y_range(&self) -> (f64, f64) {
        let ys = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|p| [p.1, p.2, p.3]))
            .chain(self.references.iter().map(|r| r.1))
            .filter(|y| y.is_finite() && *y > 0.0);
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for y in ys {
            lo = lo.min(y);
            hi = hi.max(y);
        }
        if !lo.is_finite() {
            return (0.0, 1.0);
        }
        let below = |v: f64| {
            let d = 10f64.powf(v.log10().floor());
            [5.0, 2.0, 1.0]
                .into_iter()
                .map(|m| m * d)
                .find(|&x| x <= v)
                .unwrap_or(d)
        };
        let above = |v: f64| {
            let d = 10f64.powf(v.log10().floor());
            [1.0, 2.0, 5.0, 10.0]
                .into_iter()
                .map(|m| m * d)
                .find(|&x| x >= v)
                .unwrap_or(10.0 * d)
        };
        let (l, h) = (below(lo).log10(), above(hi).log10());
        (l, if h > l { h } else { l + 1.0 })
    }

    /// The plot as an SVG document.
    pub fn to_svg(&self) -> String {
        let (d0, d1) = self.y_range();
        let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
        let nx = self.x_ticks.len().max(2) as f64;
        let x = |i: usize| LEFT + pw * (i as f64 + 0.5) / nx;
        let y = |v: f64| TOP + ph * (1.0 - (v.log10() - d0) / (d1 - d0));
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
            LEFT + pw / 2.0,
            esc(&self.title)
        );
        // Y grid: 1, 2, 5 per decade, inside the range.
        for d in (d0.floor() as i32)..=(d1.ceil() as i32) {
            for m in [1.0, 2.0, 5.0] {
                let v = m * 10f64.powi(d);
                if v.log10() < d0 - 1e-9 || v.log10() > d1 + 1e-9 {
                    continue;
                }
                let yy = y(v);
                let stroke = if m == 1.0 { "#bbb" } else { "#e4e4e4" };
                let _ = writeln!(
                    s,
                    r#"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{stroke}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                    LEFT + pw,
                    LEFT - 6.0,
                    yy + 4.0,
                    y_tick_label(v)
                );
            }
        }
        // X ticks.
        for (i, t) in self.x_ticks.iter().enumerate() {
            let xx = x(i);
            let _ = writeln!(
                s,
                r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="#f0f0f0"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                TOP + ph,
                TOP + ph + 16.0,
                esc(t)
            );
        }
        let _ = writeln!(
            s,
            r#"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + pw / 2.0,
            H - 18.0,
            esc(&self.x_label)
        );
        let _ = writeln!(
            s,
            r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">{}</text>"#,
            TOP + ph / 2.0,
            TOP + ph / 2.0,
            esc(&self.y_label)
        );
        let mut legend_y = TOP + 10.0;
        let legend_x = LEFT + pw + 14.0;
        for (k, (label, v)) in self.references.iter().enumerate() {
            if !(v.is_finite() && *v > 0.0) {
                continue;
            }
            let dash = DASHES[k % DASHES.len()];
            let yy = y(*v);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#555" stroke-dasharray="{dash}"/>"##,
                LEFT + pw
            );
            let _ = writeln!(
                s,
                r##"<line x1="{legend_x}" y1="{legend_y:.1}" x2="{:.1}" y2="{legend_y:.1}" stroke="#555" stroke-dasharray="{dash}"/><text x="{:.1}" y="{:.1}">{}</text>"##,
                legend_x + 24.0,
                legend_x + 30.0,
                legend_y + 4.0,
                esc(label)
            );
            legend_y += 20.0;
        }
        for (k, ser) in self.series.iter().enumerate() {
            let c = COLORS[k % COLORS.len()];
            let pts: Vec<_> = ser
                .points
                .iter()
                .filter(|p| p.0 < self.x_ticks.len() && p.1 > 0.0 && p.1.is_finite())
                .collect();
            let line: Vec<String> = pts
                .iter()
                .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="1.8"/>"#,
                line.join(" ")
            );
            for p in &pts {
                let xx = x(p.0);
                if p.2 > 0.0 && p.3 >= p.2 && p.3.is_finite() {
                    let _ = writeln!(
                        s,
                        r#"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="{c}"/>"#,
                        y(p.3),
                        y(p.2)
                    );
                }
                let _ = writeln!(
                    s,
                    r#"<circle cx="{xx:.1}" cy="{:.1}" r="2.8" fill="{c}"/>"#,
                    y(p.1)
                );
            }
            let _ = writeln!(
                s,
                r#"<line x1="{legend_x}" y1="{legend_y:.1}" x2="{:.1}" y2="{legend_y:.1}" stroke="{c}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
                legend_x + 24.0,
                legend_x + 30.0,
                legend_y + 4.0,
                esc(&ser.name)
            );
            legend_y += 20.0;
        }
        s.push_str("</svg>\n");
        s
    }

    /// Write the plot to `path`, creating its directory if needed.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, self.to_svg())
    }
}
