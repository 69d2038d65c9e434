//! The sweep chart as hand-written SVG, rendered on the server: latency (log scale)
//! against the axis that varies, one polyline per implementation. Text in it is
//! escaped; it has no script and no inline style attribute.

use std::fmt::Write;

use serde::Serialize;

/// One point of a sweep: the best run at one axis value.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SweepPoint {
    pub x: f64,
    pub ns: f64,
    pub run_href: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SweepSeries {
    /// The implementation, and the other variable axes' values held fixed along the line.
    pub label: String,
    /// Sorted by axis value.
    pub points: Vec<SweepPoint>,
}

/// One value of the held axes: what one sweep chart draws.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SweepFacet {
    /// The held axes' values as the `facet` query takes them: `batch_size=16` (`a=1,b=2` for two).
    pub key: String,
    /// As people read it: `batch_size = 16`.
    pub label: String,
    /// Measured points (best run per implementation and value of the swept axis).
    pub points: usize,
    /// This operation's page with this facet drawn.
    pub href: String,
    pub selected: bool,
}

/// Latency against one axis on one GPU at one value of the held axes (the facet), one line
/// per implementation: a line never joins workloads that differ in a held axis (batch sizes 1,
/// 16 and 64 are three facets, not one line).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sweep {
    pub axis: String,
    pub metric: String,
    pub hardware: String,
    /// The axes held fixed along every line (few-valued axes not implied by the other held ones).
    pub held: Vec<String>,
    /// Every value of the held axes with a line of two points or more; one is drawn.
    pub facets: Vec<SweepFacet>,
    /// The drawn facet's lines, one per implementation.
    pub series: Vec<SweepSeries>,
    /// Lines with at least two points in the drawn facet before the chart kept the longest
    /// [`crate::pages::operation::CHART_SERIES`].
    pub series_total: usize,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 50.0;
/// Colour-blind-safe palette (Okabe–Ito), dark enough against white.
const COLOURS: [&str; 8] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#7a6a00", "#56B4E9", "#000000", "#8c564b"];

pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Ticks inside `[lo, hi]` on a log axis at 1, 2 and 5 of each decade (only the decades when
/// that gives too many).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = lo.log10().floor() as i32;
    while 10f64.powi(decade) <= hi {
        for step in [1.0, 2.0, 5.0] {
            let t = step * 10f64.powi(decade);
            if t >= lo && t <= hi {
                ticks.push(t);
            }
        }
        decade += 1;
    }
    if ticks.len() > 8 {
        ticks.retain(|t| (t.log10() - t.log10().round()).abs() < 1e-9);
    }
    ticks
}

/// Ticks inside `[lo, hi]` on a linear axis: multiples of 1, 2 or 5 times a power of ten, at
/// most six of them; whole numbers when `whole` (an axis of counts: never 26.4865).
fn linear_ticks(lo: f64, hi: f64, whole: bool) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let rough = (hi - lo) / 5.0;
    let power = 10f64.powf(rough.log10().floor());
    let count = |step: f64| (hi / step).floor() - (lo / step).ceil() + 1.0;
    let mut step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|&s| count(s) <= 6.0).unwrap_or(10.0 * power);
    if whole {
        step = step.max(1.0).round();
    }
    let mut ticks = Vec::new();
    let mut t = (lo / step).ceil() * step;
    while t <= hi + step * 1e-9 {
        ticks.push(if whole { t.round() } else { t });
        t += step;
    }
    ticks
}

/// A number on an axis, short: `512`, `1k`, `2.5k`, `1.07k`, `20M`.
pub fn si_number(value: f64) -> String {
    let magnitude = value.abs();
    let (scaled, suffix) = if magnitude >= 1e9 {
        (value / 1e9, "G")
    } else if magnitude >= 1e6 {
        (value / 1e6, "M")
    } else if magnitude >= 1e3 {
        (value / 1e3, "k")
    } else {
        return ki_model::units::plain_number((value * 1e3).round() / 1e3);
    };
    let text = format!("{scaled:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{suffix}")
}

/// The latency ticks of a chart whose data spans `[lo, hi]` ns: 1-2-5 of each decade, or, where
/// the span holds fewer than two of them (11–18 ms), round linear steps, so that the axis is read.
fn latency_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let ticks = log_ticks(lo, hi);
    if ticks.len() >= 2 { ticks } else { linear_ticks(lo, hi, false) }
}

/// Renders one sweep chart (`index` keeps ids unique on a page), or None when there is nothing
/// to draw. The latency axis (log) spans the data with a little margin; the swept axis is
/// labelled at its measured values when they are few; every point is a link to its run with
/// a hover title. Its role is `group`, not `img`: an image's parts are hidden from assistive
/// technology, and these points are links.
pub fn sweep_svg(sweep: &Sweep, index: usize) -> Option<String> {
    let all: Vec<(f64, f64)> =
        sweep.series.iter().flat_map(|s| s.points.iter().map(|p| (p.x, p.ns))).filter(|p| p.1 > 0.0).collect();
    if all.is_empty() {
        return None;
    }
    let (x_lo, x_hi) = all.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    let (y_lo, y_hi) = all.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
    // A log x axis when the axis spans more than two decades of positive values.
    let x_log = x_lo > 0.0 && x_hi / x_lo > 100.0;
    let tx = |x: f64| if x_log { x.log10() } else { x };
    let (x_min, mut x_max) = (tx(x_lo), tx(x_hi));
    if x_max == x_min {
        x_max = x_min + 1.0;
    }
    // A 15 % margin either side of the data, in log space.
    let (y_min, y_max) = ((y_lo / 1.15).log10(), (y_hi * 1.15).log10());
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + (tx(x) - x_min) / (x_max - x_min) * plot_w;
    let py = |y: f64| TOP + plot_h - (y.log10() - y_min) / (y_max - y_min) * plot_h;

    let mut svg = String::with_capacity(8192);
    let title = format!("{} against {} on {}", sweep.metric, sweep.axis, sweep.hardware);
    let _ = write!(
        svg,
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="group" aria-labelledby="sweep-title-{index}"><title id="sweep-title-{index}">{}</title>"#,
        escape(&title)
    );
    let _ = write!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#ffffff" stroke="#888888"/>"##
    );
    for tick in latency_ticks(10f64.powf(y_min), 10f64.powf(y_max)) {
        let y = py(tick);
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#dddddd"/><text x="{}" y="{:.1}" text-anchor="end" font-size="12" fill="#1a1a1a">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            escape(&ki_model::units::duration_ns(tick))
        );
    }
    // The swept axis: its measured values when there are few and they do not crowd, else round
    // ticks (1-2-5 per decade on a log axis; whole numbers for an axis of whole numbers).
    let mut measured: Vec<f64> = all.iter().map(|p| p.0).collect();
    measured.sort_by(f64::total_cmp);
    measured.dedup();
    let crowded = measured.windows(2).any(|w| px(w[1]) - px(w[0]) < 36.0);
    let x_ticks: Vec<f64> = if measured.len() <= 10 && !crowded {
        measured
    } else if x_log {
        log_ticks(x_lo, x_hi)
    } else {
        linear_ticks(x_lo, x_hi, measured.iter().all(|v| v.fract() == 0.0))
    };
    for value in x_ticks {
        let _ = write!(
            svg,
            r##"<line x1="{0:.1}" x2="{0:.1}" y1="{1}" y2="{2}" stroke="#dddddd"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle" font-size="12" fill="#1a1a1a">{4}</text>"##,
            px(value),
            TOP,
            TOP + plot_h,
            TOP + plot_h + 18.0,
            escape(&si_number(value))
        );
    }
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="13" fill="#1a1a1a">{}{}</text>"##,
        LEFT + plot_w / 2.0,
        HEIGHT - 10.0,
        escape(&sweep.axis),
        if x_log { " (log scale)" } else { "" }
    );
    for (i, series) in sweep.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let drawn: Vec<_> = series.points.iter().filter(|p| p.ns > 0.0).collect();
        let line: Vec<String> = drawn.iter().map(|p| format!("{:.1},{:.1}", px(p.x), py(p.ns))).collect();
        let _ = write!(
            svg,
            r#"<g><title>{}</title><polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            escape(&series.label),
            line.join(" ")
        );
        for p in drawn {
            let hover = format!(
                "{} · {} = {} · {}",
                series.label,
                sweep.axis,
                ki_model::units::plain_number(p.x),
                ki_model::units::duration_ns(p.ns)
            );
            let _ = write!(
                svg,
                r#"<a href="{}"><circle cx="{:.1}" cy="{:.1}" r="4" fill="{colour}"><title>{}</title></circle></a>"#,
                escape(&p.run_href),
                px(p.x),
                py(p.ns),
                escape(&hover)
            );
        }
        svg.push_str("</g>");
        let ly = TOP + 14.0 + i as f64 * 18.0;
        let label: String = series.label.chars().take(30).collect();
        let _ = write!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="{colour}"/><text x="{:.1}" y="{:.1}" font-size="12" fill="#1a1a1a">{}</text>"##,
            LEFT + plot_w + 10.0,
            ly - 10.0,
            LEFT + plot_w + 28.0,
            ly,
            escape(&label)
        );
    }
    svg.push_str("</svg>");
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::{SweepPoint, SweepSeries};

    fn point(x: f64, ns: f64) -> SweepPoint {
        SweepPoint { x, ns, run_href: format!("/runs/r-{x}") }
    }

    #[test]
    fn chart_escapes_names_and_draws_each_series_with_linked_points() {
        let sweep = Sweep {
            axis: "batch_size".into(),
            metric: "latency (mean)".into(),
            hardware: "GPU <X>".into(),
            series: vec![
                SweepSeries {
                    label: "<script>alert(1)</script>".into(),
                    points: vec![point(1.0, 7_000.0), point(64.0, 90_000.0)],
                },
                SweepSeries { label: "b".into(), points: vec![point(1.0, 8_000.0), point(16.0, 30_000.0)] },
            ],
            held: Vec::new(),
            facets: Vec::new(),
            series_total: 2,
        };
        let svg = sweep_svg(&sweep, 3).unwrap();
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<a href=\"/runs/r-").count(), 4, "every point links to its run");
        assert!(svg.contains("GPU &lt;X&gt;"));
        assert!(svg.contains("id=\"sweep-title-3\""));
        // The swept axis is labelled at its measured values, not at 16.75 and 32.5.
        for label in [">1<", ">16<", ">64<"] {
            assert!(svg.contains(label), "{label}");
        }
        // 7–90 µs of data: ticks inside the data's span, none at 1 µs or 1 ms.
        assert!(svg.contains(">10.0 µs<") && svg.contains(">50.0 µs<"), "{svg}");
        assert!(!svg.contains(">1.00 µs<") && !svg.contains(">1.00 ms<"));
    }

    #[test]
    fn axis_ticks_are_round_numbers_written_short() {
        // A linear axis of counts from 3 to 130: whole multiples of 20, never 26.4865.
        assert_eq!(linear_ticks(3.0, 130.0, true), vec![20.0, 40.0, 60.0, 80.0, 100.0, 120.0]);
        assert_eq!(linear_ticks(1.0, 4.0, true), vec![1.0, 2.0, 3.0, 4.0]);
        assert!(linear_ticks(0.1, 0.9, false).iter().all(|t| ((t * 10.0).round() - t * 10.0).abs() < 1e-9));
        // A log axis: 1-2-5 per decade, or the decades alone when that gives more than eight.
        assert_eq!(log_ticks(8.0, 700.0), vec![10.0, 20.0, 50.0, 100.0, 200.0, 500.0]);
        assert_eq!(log_ticks(8.0, 7598.0), vec![10.0, 100.0, 1000.0]);
        for (value, text) in [(512.0, "512"), (1000.0, "1k"), (2500.0, "2.5k"), (1070.0, "1.07k"), (2e7, "20M")] {
            assert_eq!(si_number(value), text);
        }
        // Many measured values on a log axis: labelled at 1-2-5 ticks, not at even fractions.
        let points: Vec<SweepPoint> = [8.0, 10.0, 12.0, 57.0, 67.0, 81.0, 191.0, 302.0, 1070.0, 2158.0, 7598.0]
            .map(|x| point(x, x * 100.0))
            .into();
        let sweep = Sweep {
            axis: "num_pages".into(),
            metric: "latency (median)".into(),
            hardware: "H".into(),
            held: vec!["batch_size".into()],
            facets: Vec::new(),
            series: vec![SweepSeries { label: "a".into(), points }],
            series_total: 1,
        };
        let svg = sweep_svg(&sweep, 0).unwrap();
        for label in [">10<", ">100<", ">1k<"] {
            assert!(svg.contains(label), "{label}: {svg}");
        }
        assert!(!svg.contains(">26.") && !svg.contains(".4865"), "{svg}");
    }

    #[test]
    fn latency_ticks_stay_inside_the_range() {
        assert_eq!(latency_ticks(6_000.0, 110_000.0), vec![10_000.0, 20_000.0, 50_000.0, 100_000.0]);
        // A narrow span (a moe sweep: 11.7-17.4 ms, with the margin) holds no two 1-2-5 ticks.
        assert_eq!(latency_ticks(10.2e6, 20.0e6), vec![12e6, 14e6, 16e6, 18e6, 20e6]);
        assert_eq!(latency_ticks(11_600.0, 29_300.0), vec![15_000.0, 20_000.0, 25_000.0]);
        let wide = latency_ticks(1.0, 1e9);
        assert!(wide.len() <= 10 && wide.iter().all(|t| (t.log10() - t.log10().round()).abs() < 1e-9));
    }
}

/// The summary of a run's samples that its manifest records, in nanoseconds.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub minimum: Option<f64>,
    pub p05: Option<f64>,
    pub median: Option<f64>,
    pub mean: Option<f64>,
    pub p95: Option<f64>,
    pub maximum: Option<f64>,
    pub interval: Option<(f64, f64)>,
}

/// A one-row strip of a sample summary on a linear time axis: minimum to maximum as a line,
/// 5th to 95th percentile as a box, the interval as a band, the median as a bar, the mean as
/// a dot, each with a hover title; ticks at the minimum, median and maximum. None when the
/// summary has fewer than two distinct values. Text escaped; no script, no inline style.
pub fn summary_svg(summary: &Summary) -> Option<String> {
    const W: f64 = 640.0;
    const H: f64 = 110.0;
    const PAD: f64 = 40.0;
    const MID: f64 = 45.0;
    let values: Vec<f64> = [summary.minimum, summary.p05, summary.median, summary.mean, summary.p95, summary.maximum]
        .into_iter()
        .flatten()
        .chain(summary.interval.into_iter().flat_map(|(l, h)| [l, h]))
        .filter(|v| v.is_finite())
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.len() < 2 || hi <= lo {
        return None;
    }
    let x = |v: f64| PAD + (v - lo) / (hi - lo) * (W - 2.0 * PAD);
    let time = ki_model::units::duration_ns;
    let mut svg = String::with_capacity(2048);
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart summary" viewBox="0 0 {W} {H}" role="img" aria-labelledby="summary-title"><title id="summary-title">{}</title>"#,
        escape(&format!("Sample summary from {} to {}", time(lo), time(hi)))
    );
    if let (Some(min), Some(max)) = (summary.minimum, summary.maximum) {
        let _ = write!(
            svg,
            r##"<line class="range" x1="{:.1}" y1="{MID}" x2="{:.1}" y2="{MID}" stroke="#555" stroke-width="2"><title>{}</title></line>"##,
            x(min),
            x(max),
            escape(&format!("minimum {} – maximum {}", time(min), time(max)))
        );
    }
    if let Some((low, high)) = summary.interval {
        let _ = write!(
            svg,
            r##"<rect class="interval" x="{:.1}" y="{:.1}" width="{:.1}" height="36" fill="#E69F00" fill-opacity="0.35"><title>{}</title></rect>"##,
            x(low),
            MID - 18.0,
            (x(high) - x(low)).max(1.0),
            escape(&format!("interval {} – {}", time(low), time(high)))
        );
    }
    if let (Some(p05), Some(p95)) = (summary.p05, summary.p95) {
        let _ = write!(
            svg,
            r##"<rect class="box" x="{:.1}" y="{:.1}" width="{:.1}" height="24" fill="#56B4E9" fill-opacity="0.5" stroke="#0072B2"><title>{}</title></rect>"##,
            x(p05),
            MID - 12.0,
            (x(p95) - x(p05)).max(1.0),
            escape(&format!("5th percentile {} – 95th percentile {}", time(p05), time(p95)))
        );
    }
    if let Some(median) = summary.median {
        let _ = write!(
            svg,
            r##"<line class="median" x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#000" stroke-width="3"><title>{3}</title></line>"##,
            x(median),
            MID - 16.0,
            MID + 16.0,
            escape(&format!("median {}", time(median)))
        );
    }
    if let Some(mean) = summary.mean {
        let _ = write!(
            svg,
            r##"<circle class="mean" cx="{:.1}" cy="{MID}" r="4" fill="#D55E00"><title>{}</title></circle>"##,
            x(mean),
            escape(&format!("mean {}", time(mean)))
        );
    }
    for (v, anchor) in [(summary.minimum, "start"), (summary.median, "middle"), (summary.maximum, "end")] {
        if let Some(v) = v {
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="{anchor}" font-size="12" fill="#222">{}</text>"##,
                x(v),
                MID + 40.0,
                escape(&time(v))
            );
        }
    }
    svg.push_str("</svg>");
    Some(svg)
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    #[test]
    fn a_summary_strip_draws_each_statistic_it_has() {
        let summary = Summary {
            minimum: Some(5771.0),
            p05: Some(5840.0),
            median: Some(5929.0),
            mean: Some(5935.0),
            p95: Some(6030.0),
            maximum: Some(6064.0),
            interval: Some((5920.0, 5958.0)),
        };
        let svg = summary_svg(&summary).unwrap();
        for class in ["range", "interval", "box", "median", "mean"] {
            assert!(svg.contains(&format!("class=\"{class}\"")), "{class} missing: {svg}");
        }
        assert!(svg.contains("<title>median 5.93 µs</title>"));
        assert!(!svg.contains("<script") && !svg.contains("style="));
        assert!(summary_svg(&Summary { mean: Some(1.0), ..Summary::default() }).is_none());
    }
}

/// A histogram of a run's raw samples, in nanoseconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Histogram {
    pub count: usize,
    pub minimum: f64,
    pub maximum: f64,
    pub median: f64,
    pub p05: f64,
    pub p95: f64,
    /// Equal-width bins from the minimum to the maximum: `[low, high, count]`.
    pub bins: Vec<(f64, f64, usize)>,
}

/// The `q` quantile of sorted values, interpolated linearly between neighbours.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let (low, high) = (position.floor() as usize, position.ceil() as usize);
    sorted[low] + (sorted[high] - sorted[low]) * (position - low as f64)
}

/// The histogram of `values` (finite ones): √n equal-width bins, 5 to 40 of them. None when
/// there are fewer than two values.
pub fn histogram_of(values: &[f64]) -> Option<Histogram> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.len() < 2 {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let (minimum, maximum) = (sorted[0], sorted[sorted.len() - 1]);
    let bin_count = ((sorted.len() as f64).sqrt().ceil() as usize).clamp(5, 40);
    let width = (maximum - minimum) / bin_count as f64;
    let mut bins: Vec<(f64, f64, usize)> =
        (0..bin_count).map(|b| (minimum + width * b as f64, minimum + width * (b + 1) as f64, 0)).collect();
    for &v in &sorted {
        let b = if width > 0.0 { (((v - minimum) / width) as usize).min(bin_count - 1) } else { 0 };
        bins[b].2 += 1;
    }
    Some(Histogram {
        count: sorted.len(),
        minimum,
        maximum,
        median: quantile(&sorted, 0.5),
        p05: quantile(&sorted, 0.05),
        p95: quantile(&sorted, 0.95),
        bins,
    })
}

/// A histogram as SVG: a bar per bin (its range and count as a hover title), the median and the
/// 5th and 95th percentiles marked, the sample count in the title. Text escaped; no script, no
/// inline style.
pub fn histogram_svg(histogram: &Histogram) -> String {
    const W: f64 = 640.0;
    const H: f64 = 220.0;
    const LEFT: f64 = 40.0;
    const RIGHT: f64 = 20.0;
    const TOP: f64 = 24.0;
    const BOTTOM: f64 = 40.0;
    let time = ki_model::units::duration_ns;
    let (lo, hi) = (histogram.minimum, histogram.maximum.max(histogram.minimum + 1e-9));
    let x = |v: f64| LEFT + (v - lo) / (hi - lo) * (W - LEFT - RIGHT);
    let tallest = histogram.bins.iter().map(|b| b.2).max().unwrap_or(1).max(1) as f64;
    let base = H - BOTTOM;
    let mut svg = String::with_capacity(4096);
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart histogram" viewBox="0 0 {W} {H}" role="img" aria-labelledby="histogram-title"><title id="histogram-title">{}</title>"#,
        escape(&format!(
            "Histogram of {} samples from {} to {}: median {}, 5th percentile {}, 95th percentile {}",
            ki_model::units::count(histogram.count as u64),
            time(lo),
            time(histogram.maximum),
            time(histogram.median),
            time(histogram.p05),
            time(histogram.p95)
        ))
    );
    let bar_width = (W - LEFT - RIGHT) / histogram.bins.len().max(1) as f64;
    for (index, (low, high, count)) in histogram.bins.iter().enumerate() {
        let height = *count as f64 / tallest * (base - TOP);
        let _ = write!(
            svg,
            r##"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#56B4E9" stroke="#0072B2"><title>{}</title></rect>"##,
            LEFT + bar_width * index as f64,
            base - height,
            (bar_width - 1.0).max(1.0),
            height,
            escape(&format!(
                "{} – {}: {} sample{}",
                time(*low),
                time(*high),
                ki_model::units::count(*count as u64),
                if *count == 1 { "" } else { "s" }
            ))
        );
    }
    for (class, label, value, colour) in [
        ("mark p05", "5th percentile", histogram.p05, "#7a6a00"),
        ("mark median", "median", histogram.median, "#000"),
        ("mark p95", "95th percentile", histogram.p95, "#D55E00"),
    ] {
        let _ = write!(
            svg,
            r##"<line class="{class}" x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{base}" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"><title>{1}</title></line>"##,
            x(value),
            escape(&format!("{label} {}", time(value))),
            dash = if class == "mark median" { "none" } else { "4 3" },
        );
    }
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="16" text-anchor="middle" font-size="12" fill="#222">{}</text>"##,
        x(histogram.median),
        escape(&format!("median {}", time(histogram.median)))
    );
    for (v, anchor) in [(lo, "start"), (histogram.maximum, "end")] {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="{anchor}" font-size="12" fill="#222">{}</text>"##,
            x(v),
            base + 18.0,
            escape(&time(v))
        );
    }
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12" fill="#222">{}</text>"##,
        W / 2.0,
        base + 34.0,
        escape(&format!("{} samples", ki_model::units::count(histogram.count as u64)))
    );
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod histogram_tests {
    use super::*;

    #[test]
    fn a_histogram_counts_every_sample_and_marks_its_percentiles() {
        let values: Vec<f64> = (0..100).map(|i| 1000.0 + i as f64).collect();
        let h = histogram_of(&values).unwrap();
        assert_eq!(h.count, 100);
        assert_eq!(h.bins.len(), 10);
        assert_eq!(h.bins.iter().map(|b| b.2).sum::<usize>(), 100);
        assert_eq!(h.median, 1049.5);
        assert!((h.p05 - 1004.95).abs() < 1e-9 && (h.p95 - 1094.05).abs() < 1e-9);
        let svg = histogram_svg(&h);
        assert_eq!(svg.matches("class=\"bar\"").count(), 10);
        for class in ["mark p05", "mark median", "mark p95"] {
            assert!(svg.contains(&format!("class=\"{class}\"")), "{class}: {svg}");
        }
        assert!(svg.contains("100 samples") && !svg.contains("style=") && !svg.contains("<script"));
        assert!(histogram_of(&[1.0]).is_none());
        let same = histogram_of(&[5.0, 5.0, 5.0]).unwrap();
        assert_eq!(same.bins[0].2, 3);
    }
}
