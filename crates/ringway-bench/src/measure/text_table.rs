//! Plain-text tables for the terminal.
//!
//! The harness prints one table per scenario; numbers are right-aligned and the first
//! column (the peer name) left-aligned, with column widths taken from the widest cell.

use crate::measure::stats::Summary;

/// Formats a rate compactly: `950`, `141.2k`, `2.12M`.
pub fn fmt_rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// `median (min–max)` with the given formatter for each number.
pub fn fmt_summary(s: &Summary, f: impl Fn(f64) -> String) -> String {
    if s.count == 1 {
        f(s.median)
    } else {
        format!("{} ({}–{})", f(s.median), f(s.min), f(s.max))
    }
}

/// Renders `rows` under `headers`; the first column is left-aligned, the others right.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let ncols = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(ncols) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut parts = Vec::with_capacity(ncols);
        for (i, cell) in cells.enumerate().take(ncols) {
            let pad = widths[i] - cell.chars().count();
            if i == 0 {
                parts.push(format!("{cell}{}", " ".repeat(pad)));
            } else {
                parts.push(format!("{}{cell}", " ".repeat(pad)));
            }
        }
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&mut headers.iter().copied());
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    line(&mut rule.iter().map(String::as_str));
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_pick_a_unit() {
        assert_eq!(fmt_rate(950.4), "950");
        assert_eq!(fmt_rate(141_234.0), "141.2k");
        assert_eq!(fmt_rate(2_120_000.0), "2.12M");
    }

    #[test]
    fn summary_shows_range_only_for_several_samples() {
        let one = Summary {
            median: 5.0,
            min: 5.0,
            max: 5.0,
            count: 1,
        };
        let three = Summary {
            median: 5.0,
            min: 4.5,
            max: 6.25,
            count: 3,
        };
        let f = |x: f64| format!("{x:.2}");
        assert_eq!(fmt_summary(&one, f), "5.00");
        assert_eq!(fmt_summary(&three, f), "5.00 (4.50–6.25)");
    }

    #[test]
    fn columns_are_aligned() {
        let rows = vec![
            vec!["tokio".to_string(), "1.5".to_string()],
            vec!["floor-long".to_string(), "10.25".to_string()],
        ];
        let text = render(&["peer", "µs"], &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "peer           µs");
        assert_eq!(lines[1], "----------  -----");
        assert_eq!(lines[2], "tokio         1.5");
        assert_eq!(lines[3], "floor-long  10.25");
    }
}
