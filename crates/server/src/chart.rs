//! The sweep chart as hand-written SVG, rendered on the server: latency (log scale)
//! against the axis that varies, one polyline per implementation. Text in it is
//! escaped; it has no script and no inline style attribute.

use std::fmt::Write;

use crate::pages::operation::Sweep;

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

/// Renders the chart, or None when there is nothing to draw.
pub fn sweep_svg(sweep: &Sweep) -> Option<String> {
    let all: Vec<(f64, f64)> =
        sweep.series.iter().flat_map(|s| s.points.iter().copied()).filter(|p| p.1 > 0.0).collect();
    if all.is_empty() {
        return None;
    }
    let (mut x_min, mut x_max) = all.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    let (y_lo, y_hi) = all.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
    // A log x axis when the axis spans more than two decades of positive values.
    let x_log = x_min > 0.0 && x_max / x_min > 100.0;
    let tx = |x: f64| if x_log { x.log10() } else { x };
    let (a, b) = (tx(x_min), tx(x_max));
    x_min = a;
    x_max = b;
    if x_max == x_min {
        x_max = x_min + 1.0;
    }
    let (mut y_min, mut y_max) = (y_lo.log10().floor(), y_hi.log10().ceil());
    if y_max == y_min {
        y_max = y_min + 1.0;
        y_min -= 0.0;
    }
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + (tx(x) - x_min) / (x_max - x_min) * plot_w;
    let py = |y: f64| TOP + plot_h - (y.log10() - y_min) / (y_max - y_min) * plot_h;

    let mut svg = String::with_capacity(8192);
    let title = format!("{} against {} on {}", sweep.metric, sweep.axis, sweep.hardware);
    let _ = write!(
        svg,
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-labelledby="sweep-title"><title id="sweep-title">{}</title>"#,
        escape(&title)
    );
    let _ = write!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#ffffff" stroke="#888888"/>"##
    );
    // Decade grid lines on the latency axis.
    let mut decade = y_min as i32;
    while decade as f64 <= y_max {
        let y = py(10f64.powi(decade));
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#dddddd"/><text x="{}" y="{:.1}" text-anchor="end" font-size="12" fill="#1a1a1a">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            escape(&ki_model::units::duration_ns(10f64.powi(decade)))
        );
        decade += 1;
    }
    // Five ticks on the swept axis.
    for i in 0..=4 {
        let t = x_min + (x_max - x_min) * i as f64 / 4.0;
        let value = if x_log { 10f64.powf(t) } else { t };
        let x = LEFT + plot_w * i as f64 / 4.0;
        let _ = write!(
            svg,
            r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="12" fill="#1a1a1a">{}</text>"##,
            TOP + plot_h + 18.0,
            escape(&ki_model::units::plain_number(value.round()))
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
        let points: Vec<String> =
            series.points.iter().filter(|p| p.1 > 0.0).map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1))).collect();
        let _ = write!(
            svg,
            r#"<g><title>{}</title><polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            escape(&series.implementation),
            points.join(" ")
        );
        for p in series.points.iter().filter(|p| p.1 > 0.0) {
            let _ = write!(svg, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#, px(p.0), py(p.1));
        }
        svg.push_str("</g>");
        let ly = TOP + 14.0 + i as f64 * 18.0;
        let label: String = series.implementation.chars().take(26).collect();
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
    use crate::pages::operation::SweepSeries;

    #[test]
    fn chart_escapes_names_and_draws_each_series() {
        let sweep = Sweep {
            axis: "batch_size".into(),
            metric: "latency (mean)".into(),
            hardware: "GPU <X>".into(),
            series: vec![
                SweepSeries {
                    implementation: "<script>alert(1)</script>".into(),
                    points: vec![(1.0, 1000.0), (64.0, 90_000.0)],
                },
                SweepSeries { implementation: "b".into(), points: vec![(1.0, 2000.0), (16.0, 3000.0)] },
            ],
        };
        let svg = sweep_svg(&sweep).unwrap();
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("GPU &lt;X&gt;"));
    }
}
