//! CSV: a header line, then one line per row. Floats are written in full precision (shortest
//! representation that reads back to the same `f64`), missing values as empty fields.

use super::{Exporter, Report};
use serde_json::Value;

/// The CSV exporter.
#[derive(Debug, Default)]
pub struct Csv;

/// A cell as CSV text; a vector (JSON array) is written space-separated, like `5 1 1`.
pub(crate) fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

impl Exporter for Csv {
    fn serialize(&self, report: &Report) -> Vec<u8> {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        w.write_record(report.exported_columns()).expect("writing to memory");
        for row in &report.exported_rows() {
            w.write_record(row.iter().map(cell)).expect("writing to memory");
        }
        w.into_inner().expect("writing to memory")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Row {
        policy: &'static str,
        mean: f64,
        ci: Option<f64>,
        stable: bool,
        w: &'static str,
        v: Vec<i64>,
    }

    #[test]
    fn full_precision_empty_options_and_quoting() {
        let rows = [Row {
            policy: "p2c",
            mean: 0.1 + 0.2,
            ci: None,
            stable: true,
            w: "5,1,1",
            v: vec![-2, 1, 1],
        }];
        let out = Csv.serialize(&Report::new("t", &(), &rows));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "policy,mean,ci,stable,w,v\np2c,0.30000000000000004,,true,\"5,1,1\",-2 1 1\n"
        );
    }
}
