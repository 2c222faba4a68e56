//! The human-readable table: aligned columns, numbers right-aligned with four significant digits,
//! a `note` column when some row needs one, and explanatory notes underneath.

use super::{Exporter, Report};
use serde_json::Value;

/// The table exporter.
#[derive(Debug, Default)]
pub struct Table;

/// Four significant digits without exponent for ordinary magnitudes; short values (parameters such
/// as 0.95 or 1000) are printed as they are.
pub fn format_number(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let plain = format!("{x}");
    if plain.trim_start_matches('-').len() <= 6 {
        return plain;
    }
    // Round to four significant digits first, so that 99.99999 prints as 100.0, not 100.00.
    let rounded: f64 = format!("{x:.3e}").parse().unwrap_or(x);
    let mag = rounded.abs().log10().floor() as i32;
    if !(-4..=9).contains(&mag) {
        return format!("{x:.3e}");
    }
    if mag >= 4 {
        return format!("{x:.0}");
    }
    let decimals = (3 - mag).max(0) as usize;
    format!("{rounded:.decimals$}")
}

fn text(v: &Value) -> (String, bool) {
    match v {
        Value::Null => ("-".into(), true),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => (u.to_string(), true),
            (None, Some(i)) => (i.to_string(), true),
            _ => (format_number(n.as_f64().unwrap_or(f64::NAN)), true),
        },
        Value::String(s) => (s.clone(), false),
        Value::Bool(b) => (b.to_string(), false),
        other => (other.to_string(), false),
    }
}

impl Exporter for Table {
    fn serialize(&self, report: &Report) -> Vec<u8> {
        let with_marks = report.marks.iter().any(Option::is_some);
        let mut header: Vec<String> = report.columns.clone();
        if with_marks {
            header.push("note".into());
        }
        let mut cells: Vec<Vec<(String, bool)>> =
            report.rows.iter().map(|row| row.iter().map(text).collect()).collect();
        if with_marks {
            for (row, mark) in cells.iter_mut().zip(&report.marks) {
                row.push((mark.clone().unwrap_or_default(), false));
            }
        }
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &cells {
            for (w, (s, _)) in widths.iter_mut().zip(row) {
                *w = (*w).max(s.chars().count());
            }
        }
        // Right-align a column when its values are numbers.
        let numeric: Vec<bool> =
            (0..header.len()).map(|c| cells.first().is_some_and(|r| r[c].1)).collect();
        let line = |items: Vec<&str>| {
            let parts: Vec<String> = items
                .iter()
                .enumerate()
                .map(|(c, s)| {
                    if numeric[c] {
                        format!("{s:>w$}", w = widths[c])
                    } else {
                        format!("{s:<w$}", w = widths[c])
                    }
                })
                .collect();
            let mut l = parts.join("  ");
            l.truncate(l.trim_end().len());
            l.push('\n');
            l
        };
        let mut out = String::new();
        out += &line(header.iter().map(String::as_str).collect());
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        out += &line(rule.iter().map(String::as_str).collect());
        for row in &cells {
            out += &line(row.iter().map(|(s, _)| s.as_str()).collect());
        }
        for note in &report.notes {
            out += note;
            out.push('\n');
        }
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(format_number(0.9), "0.9");
        assert_eq!(format_number(1000000.0), "1000000");
        assert_eq!(format_number(10.002345), "10.00");
        assert_eq!(format_number(46.5612), "46.56");
        assert_eq!(format_number(0.2067123), "0.2067");
        assert_eq!(format_number(0.00149123), "0.001491");
        assert_eq!(format_number(1.23456e-7), "1.235e-7");
        assert_eq!(format_number(123456.789), "123457");
        assert_eq!(format_number(99.99999999999991), "100.0");
        assert_eq!(format_number(0.099999999), "0.1000");
    }
}
