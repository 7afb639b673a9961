//! The report's charts, drawn with plotters as SVG documents: throughput bars, server
//! CPU per request bars, latency percentile curves, and open-loop latency against the
//! offered rate. ringway/uring is drawn in red, ringway/epoll in orange, the floor in
//! grey, the other peers in blue, so that ringway is found at a glance.

use plotters::prelude::*;

use crate::suite::results::{Row, RINGWAY};

const WIDTH: u32 = 560;

/// The colour of a peer's bar.
fn bar_colour(peer: &str) -> RGBColor {
    match peer {
        RINGWAY => RGBColor(204, 37, 41),
        "ringway-epoll" => RGBColor(230, 126, 34),
        "floor" => RGBColor(140, 140, 140),
        _ => RGBColor(57, 106, 177),
    }
}

/// A palette colour per curve, ringway's kept red.
fn curve_colour(peer: &str, i: usize) -> RGBColor {
    match peer {
        RINGWAY | "ringway-epoll" | "floor" => bar_colour(peer),
        _ => {
            let c = Palette99::pick(i + 3).to_rgba();
            RGBColor(c.0, c.1, c.2)
        }
    }
}

fn err(e: impl std::fmt::Display) -> String {
    format!("chart: {e}")
}

/// A bar: peer, value, optional (min, max) whisker.
type Bar = (String, f64, Option<(f64, f64)>);

/// Horizontal bars, one per row: `value(row)` with an optional (min, max) whisker.
pub fn bars(
    title: &str,
    unit: &str,
    rows: &[&Row],
    value: impl Fn(&Row) -> Option<(f64, Option<(f64, f64)>)>,
) -> Result<String, String> {
    let data: Vec<Bar> = rows
        .iter()
        .filter_map(|r| value(r).map(|(v, range)| (r.peer.clone(), v, range)))
        .collect();
    let mut svg = String::new();
    let height = 60 + 28 * data.len().max(1) as u32;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let top = data
            .iter()
            .map(|(_, v, r)| r.map_or(*v, |(_, hi)| hi.max(*v)))
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.08;
        let n = data.len().max(1);
        let names: Vec<String> = data.iter().map(|d| d.0.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(110)
            .build_cartesian_2d(0.0..top, 0.0..n as f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y: &f64| {
                let i = y.floor() as usize;
                if (y - y.floor() - 0.5).abs() < 1e-6 && i < names.len() {
                    names[n - 1 - i].clone()
                } else {
                    String::new()
                }
            })
            .x_desc(unit)
            .x_labels(6)
            .x_label_formatter(&|x: &f64| crate::measure::text_table::fmt_rate(*x))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(data.iter().enumerate().map(|(i, (peer, v, _))| {
                let y = (n - 1 - i) as f64;
                Rectangle::new([(0.0, y + 0.18), (*v, y + 0.82)], bar_colour(peer).filled())
            }))
            .map_err(err)?;
        chart
            .draw_series(data.iter().enumerate().filter_map(|(i, (_, _, range))| {
                let (lo, hi) = (*range)?;
                let y = (n - 1 - i) as f64 + 0.5;
                Some(PathElement::new(
                    vec![(lo, y), (hi, y)],
                    BLACK.stroke_width(2),
                ))
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Latency against percentile, one curve per row (x: percentile on a "nines" scale,
/// so that 90, 99, 99.9 are evenly spaced; y: microseconds, logarithmic).
pub fn latency_curves(title: &str, rows: &[&Row]) -> Result<String, String> {
    let nines = |p: f64| -> f64 { -(1.0 - (p / 100.0).min(0.9999)).log10() };
    let series: Vec<(String, Vec<(f64, f64)>)> = rows
        .iter()
        .filter(|r| !r.latency_curve.is_empty())
        .map(|r| {
            (
                r.peer.clone(),
                r.latency_curve
                    .iter()
                    .map(|(p, v)| (nines(*p), v.max(1.0)))
                    .collect(),
            )
        })
        .collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 340)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let ymax = series
            .iter()
            .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
            .fold(10.0f64, f64::max)
            * 1.5;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..4.0, (1.0..ymax).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("percentile")
            .y_desc("latency µs")
            .y_label_formatter(&|y: &f64| format!("{y:.0}"))
            .x_labels(5)
            .x_label_formatter(&|x: &f64| match x.round() as i64 {
                0 => "0".into(),
                1 => "90".into(),
                2 => "99".into(),
                3 => "99.9".into(),
                4 => "99.99".into(),
                _ => String::new(),
            })
            .draw()
            .map_err(err)?;
        for (i, (peer, pts)) in series.iter().enumerate() {
            let colour = curve_colour(peer, i);
            chart
                .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
                .map_err(err)?
                .label(peer.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Open-loop latency against offered rate: p99 (solid) and p50 (dashed) per peer.
/// `rows` are all the S9 rows of the run (one per peer and rate).
pub fn open_loop(title: &str, rows: &[&Row]) -> Result<String, String> {
    let mut peers: Vec<String> = Vec::new();
    for r in rows {
        if !peers.contains(&r.peer) {
            peers.push(r.peer.clone());
        }
    }
    let point = |r: &Row, p50: bool| -> Option<(f64, f64)> {
        let offered = *r.extra.get("offered_rps")?;
        let v = if p50 {
            r.latency_us.p50
        } else {
            r.latency_us.p99
        };
        Some((offered, v.max(1.0)))
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 340)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let xmax = rows
            .iter()
            .filter_map(|r| r.extra.get("offered_rps").copied())
            .fold(1.0f64, f64::max)
            * 1.05;
        let ymax = rows
            .iter()
            .map(|r| r.latency_us.p99)
            .fold(10.0f64, f64::max)
            * 1.5;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..xmax, (1.0..ymax).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("offered req/s")
            .y_desc("latency µs (p99 solid, p50 dashed)")
            .y_label_formatter(&|y: &f64| format!("{y:.0}"))
            .x_labels(6)
            .x_label_formatter(&|x: &f64| crate::measure::text_table::fmt_rate(*x))
            .draw()
            .map_err(err)?;
        for (i, peer) in peers.iter().enumerate() {
            let colour = curve_colour(peer, i);
            let mine: Vec<&Row> = rows.iter().copied().filter(|r| &r.peer == peer).collect();
            let mut p99: Vec<(f64, f64)> = mine.iter().filter_map(|r| point(r, false)).collect();
            let mut p50: Vec<(f64, f64)> = mine.iter().filter_map(|r| point(r, true)).collect();
            p99.sort_by(|a, b| a.0.total_cmp(&b.0));
            p50.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(p99.clone(), colour.stroke_width(2)))
                .map_err(err)?
                .label(peer.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
                });
            chart
                .draw_series(p99.iter().map(|p| Circle::new(*p, 3, colour.filled())))
                .map_err(err)?;
            chart
                .draw_series(DashedLineSeries::new(p50, 4, 3, colour.stroke_width(1)))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(peer: &str, rps: f64) -> Row {
        let mut r = Row {
            peer: peer.into(),
            rps,
            rps_min: rps * 0.9,
            rps_max: rps * 1.1,
            latency_curve: vec![(50.0, 20.0), (99.0, 80.0), (100.0, 300.0)],
            ..Row::default()
        };
        r.latency_us.p50 = 20.0;
        r.latency_us.p99 = 80.0;
        r.extra.insert("offered_rps".into(), rps);
        r
    }

    #[test]
    fn every_chart_is_an_svg_naming_its_peers() {
        let rows = [row(RINGWAY, 200_000.0), row("nginx", 150_000.0)];
        let refs: Vec<&Row> = rows.iter().collect();
        let b = bars("S5 c50", "req/s", &refs, |r| {
            Some((r.rps, Some((r.rps_min, r.rps_max))))
        })
        .unwrap();
        assert!(b.starts_with("<svg") && b.contains("nginx") && b.contains("ringway-uring"));
        assert!(b.contains("#CC2529"), "ringway's red bar");
        let c = latency_curves("S1", &refs).unwrap();
        assert!(c.starts_with("<svg") && c.contains("percentile"));
        let o = open_loop("S9", &refs).unwrap();
        assert!(o.starts_with("<svg") && o.contains("offered req/s"));
        let empty = bars("none", "req/s", &[], |r| Some((r.rps, None))).unwrap();
        assert!(empty.starts_with("<svg"));
    }
}
