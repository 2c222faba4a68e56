//! `lbsim._lbsim`: the simulator in the Python process. One call runs one command line exactly as
//! the `lbsim` binary parses it (so every option, default and message is the CLI's), with the GIL
//! released while it simulates, and returns the CSV the binary would print with `--format csv`,
//! the type of each column, the series CSV and the warnings. The Python package (`lbsim`) turns
//! them into DataFrames; see `python/lbsim/__init__.py`.
//!
//! Ctrl-C: the calling thread waits for the run in slices of [`POLL`], looking for signals
//! between them (`Python::check_signals`, which runs Python's handler: `KeyboardInterrupt`); on
//! one it sets [`lbsim::engine::CANCEL`], the run's replications unwind at their next chunk of
//! arrivals, and the exception is raised once they have.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use clap::Parser;
use lbsim::cli::{Cli, Command};
use lbsim::engine::{ARRIVALS, CANCEL, Cancelled};
use lbsim::experiment::Results;
use lbsim::output::{Csv, Exporter, Report};
use lbsim::policy::registry::POLICIES;
use lbsim::shard::Invocation;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

/// How long the calling thread waits for the run between two looks at signals and progress.
const POLL: Duration = Duration::from_millis(100);

/// What one command gives back to Python.
#[pyclass(frozen, get_all, module = "lbsim._lbsim")]
struct Output {
    /// The output as `--format csv` prints it (empty when `text` is set).
    csv: String,
    /// Per column of `csv`, in order: `(name, kind)`, kind one of `bool`, `int`, `float`, `str`.
    kinds: Vec<(String, String)>,
    /// Text printed instead of a table (`run --print`), if any.
    text: Option<String>,
    /// `run --series`: the series as CSV.
    series: Option<String>,
    /// The SVG figure of the command's rows, if it draws one.
    figure: Option<String>,
    /// The warnings the binary prints on stderr.
    warnings: Vec<String>,
}

/// Runs `argv` (the command line after `lbsim`) in this process; `text` is a scenario's TOML given
/// instead of `run`'s file (which then only names it). `progress(done, total)` is called from the
/// calling thread as the run goes (requests simulated, or replications when that is not known).
#[pyfunction]
#[pyo3(signature = (argv, text=None, progress=None))]
fn call(
    py: Python<'_>,
    argv: Vec<String>,
    text: Option<String>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<Output> {
    let mut cli = Cli::try_parse_from(std::iter::once("lbsim".to_string()).chain(argv.clone()))
        .map_err(|e| PyValueError::new_err(clap_message(&e)))?;
    if let Some(text) = text {
        match &mut cli.command {
            Command::Run(a) => a.text = Some(text),
            Command::Capacity(a) => a.text = Some(text),
            _ => {
                return Err(PyValueError::new_err(
                    "a scenario's text is read by `run` and `capacity` only",
                ));
            }
        }
    }
    if cli.global.dry_run {
        return Err(PyValueError::new_err("--dry-run is for the command line"));
    }
    let job = Invocation::from_cli(&cli, argv).map_err(|e| PyValueError::new_err(e.to_string()))?;
    if matches!(job, Invocation::Shard { .. }) {
        return Err(PyValueError::new_err(
            "--shard writes raw records for `lbsim merge`: run shards from the command line",
        ));
    }
    let mut warnings = job.config().warnings.clone();
    let total = job.requests().unwrap_or_else(|| job.replications());
    let counts_requests = job.requests().is_some();
    let results = run(py, &job, progress, total, counts_requests)?;
    let report = &results.report;
    warnings.extend(report.warnings.iter().cloned());
    let series = report.series.as_ref().map(|s| {
        let mut out = Vec::new();
        s.write(&mut out).expect("writing to memory");
        String::from_utf8(out).expect("CSV is UTF-8")
    });
    let text = report.text.clone();
    let csv = match text {
        Some(_) => String::new(),
        None => String::from_utf8(Csv.serialize(report)).expect("CSV is UTF-8"),
    };
    Ok(Output { csv, kinds: kinds(report), text, series, figure: results.rows.figure(), warnings })
}

/// Runs `job` on a scoped thread while the calling thread, the GIL released, waits for it in
/// slices of [`POLL`], reporting progress and looking for signals between them.
fn run(
    py: Python<'_>,
    job: &Invocation,
    progress: Option<Bound<'_, PyAny>>,
    total: u64,
    counts_requests: bool,
) -> PyResult<Results> {
    CANCEL.store(false, Ordering::Relaxed);
    let base = ARRIVALS.load(Ordering::Relaxed);
    let replications = AtomicU64::new(0);
    let done = || {
        if counts_requests {
            ARRIVALS.load(Ordering::Relaxed).saturating_sub(base).min(total)
        } else {
            replications.load(Ordering::Relaxed)
        }
    };
    let replications = &replications;
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<()>();
        let worker = s.spawn(move || {
            let count = || {
                replications.fetch_add(1, Ordering::Relaxed);
            };
            let out = panic::catch_unwind(AssertUnwindSafe(|| job.execute(&count)));
            let _ = tx.send(());
            out
        });
        // `detach` wants what it borrows to be `Sync`, which a receiver is not alone.
        let rx = Mutex::new(rx);
        while let Err(RecvTimeoutError::Timeout) =
            py.detach(|| rx.lock().expect("not poisoned").recv_timeout(POLL))
        {
            let tick = match &progress {
                Some(p) => p.call1((done(), total)).map(drop),
                None => Ok(()),
            };
            if let Err(e) = tick.and_then(|()| py.check_signals()) {
                CANCEL.store(true, Ordering::Relaxed);
                let _ = py.detach(|| worker.join());
                CANCEL.store(false, Ordering::Relaxed);
                return Err(e);
            }
        }
        if let Some(p) = &progress {
            p.call1((total, total))?;
        }
        match worker.join().expect("the worker catches its panics") {
            Ok(results) => Ok(results),
            Err(payload) if payload.is::<Cancelled>() => {
                Err(PyValueError::new_err("the run was cancelled by another thread"))
            }
            Err(payload) => panic::resume_unwind(payload),
        }
    })
}

/// clap's message for a malformed command line: its first line, without `error: `.
fn clap_message(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

/// The type of each exported column, read from its cells: `bool`, `int` (integers only), `float`
/// (any other number), else `str`; a column of empty cells only is `float` (all NaN).
fn kinds(report: &Report) -> Vec<(String, String)> {
    let rows = report.exported_rows();
    report
        .exported_columns()
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let mut kind = None;
            for cell in rows.iter().map(|r| &r[i]) {
                let this = match cell {
                    Value::Null => continue,
                    Value::Bool(_) => "bool",
                    Value::Number(n) if n.is_f64() => "float",
                    Value::Number(_) => "int",
                    _ => "str",
                };
                kind = Some(match (kind, this) {
                    (None, k) => k,
                    (Some(a), b) if a == b => a,
                    (Some("int" | "float"), "int" | "float") => "float",
                    _ => "str",
                });
            }
            (name, kind.unwrap_or("float").to_string())
        })
        .collect()
}

/// A scenario given as a dict, as TOML text (through serde: every key and value kept, tables and
/// arrays of tables included).
#[pyfunction]
fn dict_to_toml(scenario: &Bound<'_, PyDict>) -> PyResult<String> {
    let table: toml::Table = pythonize::depythonize(scenario.as_any())
        .map_err(|e| PyValueError::new_err(format!("the scenario dict: {e}")))?;
    toml::to_string(&table).map_err(|e| PyValueError::new_err(format!("the scenario dict: {e}")))
}

/// The policy table: one dict per policy (name, rule, source, parameters, live, board).
#[pyfunction]
fn policies(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for e in POLICIES {
        let d = PyDict::new(py);
        d.set_item("name", e.name)?;
        d.set_item("rule", e.rule)?;
        d.set_item("source", e.source)?;
        d.set_item("parameters", e.params.to_vec())?;
        d.set_item("live", e.live)?;
        d.set_item("board", e.board)?;
        list.append(d)?;
    }
    Ok(list)
}

/// The version of this module (the lbsim crate's).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The extension module.
#[pymodule]
fn _lbsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Output>()?;
    m.add_function(wrap_pyfunction!(call, m)?)?;
    m.add_function(wrap_pyfunction!(dict_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
