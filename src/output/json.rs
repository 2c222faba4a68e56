//! JSON: `{"command", "params", "rows": [{column: value}], "run": {wall_seconds, events,
//! events_per_second}}`. Non-finite floats become `null`.

use super::{Exporter, Report};
use serde_json::{Map, Value, json};

/// The JSON exporter.
#[derive(Debug, Default)]
pub struct Json;

impl Exporter for Json {
    fn serialize(&self, report: &Report) -> Vec<u8> {
        let columns = report.exported_columns();
        let rows: Vec<Value> = report
            .exported_rows()
            .into_iter()
            .map(|row| {
                let obj: Map<String, Value> = columns.iter().cloned().zip(row).collect();
                Value::Object(obj)
            })
            .collect();
        let doc = json!({
            "command": report.command,
            "params": report.params,
            "rows": rows,
            "run": report.run,
        });
        let mut out = serde_json::to_vec_pretty(&doc).expect("JSON values serialise");
        out.push(b'\n');
        out
    }
}
