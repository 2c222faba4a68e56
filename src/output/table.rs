//! The human-readable table: aligned columns, numbers right-aligned, a `note` column when some row
//! needs one, and explanatory notes underneath.
//!
//! A column of floats is written one way throughout: exactly when every value in it is short (a
//! parameter such as 0.95 or 0.999999, or an exact value), otherwise every value with four
//! significant digits, so that one column never mixes `0.5` and `0.6000`.

use super::{Exporter, Report};
use serde_json::Value;

/// The table exporter.
#[derive(Debug, Default)]
pub struct Table;

/// One number: as it is when short ([`is_short`]: parameters such as 0.95, 0.999999 or 1000),
/// else with four significant digits ([`four_digits`]).
pub fn format_number(x: f64) -> String {
    if is_short(x) { format!("{x}") } else { four_digits(x) }
}

/// A value for a message: its text, unless it is a number, which goes through [`format_number`]
/// (so `1e300` is not written as 301 digits).
pub fn shown_number(value: impl std::fmt::Display) -> String {
    let text = value.to_string();
    text.parse::<f64>().map(format_number).unwrap_or(text)
}

/// True for a finite number written in at most six significant digits and twelve characters.
pub fn is_short(x: f64) -> bool {
    let plain = format!("{}", x.abs());
    let digits = plain.replace('.', "");
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    x.is_finite() && plain.len() <= 12 && significant <= 6
}

/// Four significant digits, without exponent for ordinary magnitudes (zero is `0`).
pub fn four_digits(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
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

/// A float that the table writes as one (not an integer).
fn float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) if n.as_u64().is_none() && n.as_i64().is_none() => n.as_f64(),
        _ => None,
    }
}

/// A cell's text, and whether it is a number; `exact`: the column's floats are written as they
/// are.
fn text(v: &Value, exact: bool) -> (String, bool) {
    match v {
        Value::Null => ("-".into(), true),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => (u.to_string(), true),
            (None, Some(i)) => (i.to_string(), true),
            _ => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                (if exact && x.is_finite() { format!("{x}") } else { four_digits(x) }, true)
            }
        },
        Value::String(s) => (s.clone(), false),
        Value::Bool(b) => (b.to_string(), false),
        Value::Array(_) => (super::csv::cell(v), false),
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
        let exact: Vec<bool> = (0..report.columns.len())
            .map(|c| {
                let floats = report.rows.iter().filter_map(|row| float(&row[c]));
                floats.filter(|x| x.is_finite()).all(is_short)
            })
            .collect();
        let mut cells: Vec<Vec<(String, bool)>> = report
            .rows
            .iter()
            .map(|row| row.iter().zip(&exact).map(|(v, &e)| text(v, e)).collect())
            .collect();
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
        assert_eq!(format_number(0.999999), "0.999999");
        assert_eq!(format_number(1000000.0), "1000000");
        assert_eq!(format_number(10.002345), "10.00");
        assert_eq!(format_number(46.56123), "46.56");
        assert_eq!(format_number(0.2067123), "0.2067");
        assert_eq!(format_number(0.001491234), "0.001491");
        assert_eq!(format_number(1.23456e-7), "1.235e-7");
        assert_eq!(format_number(123456.789), "123457");
        assert_eq!(format_number(99.99999999999991), "100.0");
        assert_eq!(format_number(0.099999999), "0.1000");
        assert_eq!(format_number(f64::NAN), "NaN");
        assert_eq!(four_digits(0.5), "0.5000");
        assert_eq!(four_digits(0.0), "0");
    }

    #[derive(serde::Serialize)]
    struct Row {
        lambda: f64,
        deviation: f64,
        run: u64,
        before: Vec<i64>,
    }

    #[test]
    fn a_column_is_written_one_way_and_parameters_exactly() {
        let rows = [
            Row { lambda: 0.999999, deviation: 0.5, run: 4, before: vec![5, 1, 1] },
            Row { lambda: 0.999999, deviation: 0.1 * 6.0, run: 10, before: vec![-2, 1, 1] },
            Row { lambda: 0.5, deviation: 4.0 / 7.0, run: 67, before: vec![3, 2, 2] },
        ];
        let out = String::from_utf8(Table.serialize(&Report::new("t", &(), &rows))).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "  lambda  deviation  run  before");
        assert_eq!(lines[2], "0.999999     0.5000    4  5 1 1");
        assert_eq!(lines[3], "0.999999     0.6000   10  -2 1 1");
        assert_eq!(lines[4], "     0.5     0.5714   67  3 2 2");
    }
}
