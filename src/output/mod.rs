//! Output: one [`Report`] per command, written as a table, CSV or JSON by an [`Exporter`].
//!
//! Experiments produce rows as plain `Serialize` structs; [`Report::new`] flattens them into
//! ordered cells (field order = column order, field name = column name). Each format is one
//! exporter over the same report, so the three formats cannot disagree about what a row holds.
//! Table and CSV are deterministic (no timings); JSON carries the run's timing in `run`.

mod csv;
pub mod dest;
mod json;
pub mod plot;
pub mod progress;
pub mod series;
pub mod table;

use serde::Serialize;
use serde_json::Value;

pub use self::csv::Csv;
pub use self::json::Json;
pub use self::table::Table;

/// Timing of a run (JSON only: it varies from run to run).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct RunInfo {
    /// Wall-clock seconds.
    pub wall_seconds: f64,
    /// Events simulated (arrivals, departures, board posts; balls for `bins`, picks for `swrr`,
    /// client-backend connections for `subset`).
    pub events: u64,
    /// `events / wall_seconds`.
    pub events_per_second: f64,
}

/// A command's result: ordered columns and rows, plus notes for human readers.
#[derive(Debug, Clone)]
pub struct Report {
    /// Command name (`homo`, ...).
    pub command: String,
    /// The parameters the command ran with.
    pub params: Value,
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Rows, each with one value per column.
    pub rows: Vec<Vec<Value>>,
    /// A short note per row for the table (`None` for an unremarkable row).
    pub marks: Vec<Option<String>>,
    /// Queueing rows: CSV and JSON end every row with a `note` column that holds its mark
    /// (empty when there is nothing to say), so that a program can tell why a row is not steady
    /// or has no interval. Last, so that parsers that index the columns before it keep working.
    pub note_column: bool,
    /// Lines printed under the table.
    pub notes: Vec<String>,
    /// Problems the user should hear about whatever the format (printed to stderr by the binary),
    /// e.g. a replication stopped by the queue guard.
    pub warnings: Vec<String>,
    /// Timing.
    pub run: RunInfo,
    /// When set, the output is this text whatever the format (a scenario file printed by
    /// `run --print` or `--print-scenario`).
    pub text: Option<String>,
    /// `run --series`: the per-window series, written as CSV to its own file.
    pub series: Option<series::SeriesCsv>,
}

impl Report {
    /// A report from serialisable rows (each must serialise to a flat object).
    pub fn new<R: Serialize>(command: &str, params: &impl Serialize, rows: &[R]) -> Report {
        let mut columns = Vec::new();
        let rows: Vec<Vec<Value>> = rows
            .iter()
            .map(|r| match serde_json::to_value(r).expect("rows serialise") {
                Value::Object(map) => {
                    if columns.is_empty() {
                        columns = map.keys().cloned().collect();
                    }
                    map.into_iter().map(|(_, v)| v).collect()
                }
                other => panic!("a row must serialise to an object, got {other}"),
            })
            .collect();
        let marks = vec![None; rows.len()];
        Report {
            command: command.to_string(),
            params: serde_json::to_value(params).expect("params serialise"),
            columns,
            rows,
            marks,
            note_column: false,
            notes: Vec::new(),
            warnings: Vec::new(),
            run: RunInfo::default(),
            text: None,
            series: None,
        }
    }
}

impl Report {
    /// The columns as CSV and JSON write them: [`Report::columns`], then `note` when
    /// [`Report::note_column`] is set.
    pub fn exported_columns(&self) -> Vec<String> {
        let mut columns = self.columns.clone();
        if self.note_column {
            columns.push("note".into());
        }
        columns
    }

    /// The rows as CSV and JSON write them: each row's cells, then its mark (`""` for none)
    /// when [`Report::note_column`] is set.
    pub fn exported_rows(&self) -> Vec<Vec<Value>> {
        let mut rows = self.rows.clone();
        if self.note_column {
            for (i, row) in rows.iter_mut().enumerate() {
                let mark = self.marks.get(i).cloned().flatten().unwrap_or_default();
                row.push(Value::String(mark));
            }
        }
        rows
    }
}

/// One output format.
pub trait Exporter {
    /// The bytes to write for `report`.
    fn serialize(&self, report: &Report) -> Vec<u8>;
}

/// The output format selected with `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Aligned, human-readable table.
    Table,
    /// CSV with a header line.
    Csv,
    /// One JSON object.
    Json,
}

impl Format {
    /// The exporter for this format.
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Table => Box::new(Table),
            Format::Csv => Box::new(Csv),
            Format::Json => Box::new(Json),
        }
    }
}
