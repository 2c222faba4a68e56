//! Reading one named column of numbers from a CSV file with a header row.
//!
//! Used by empirical service demands and by trace replay. Every error is one line that starts
//! with the scenario key it concerns (`service.file`, `arrivals.column`, ...) and names the file,
//! the column and, for a bad value, the line.

use std::path::{Path, PathBuf};

use crate::error::KeyError;
use crate::input::{self, CSV_LINE, LineLimit};

/// Resolves a scenario's `file`: an absolute path is kept, a relative one is taken from `base`
/// (the directory of the scenario file).
pub(crate) fn resolve(base: &Path, file: &Path) -> PathBuf {
    if file.is_absolute() { file.to_path_buf() } else { base.join(file) }
}

/// What the values of a column must satisfy beyond being finite and non-negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Any order (demands).
    Any,
    /// Each value at least the one before it (timestamps).
    NonDecreasing,
}

/// Reads column `column` of the CSV file at `path`: a header row, then one record per line.
///
/// Fields are trimmed. Refuses a missing file, one that is not a regular file (a device, a FIFO,
/// a directory), a line longer than [`CSV_LINE`], a missing column, a record without the column, an empty,
/// non-numeric, NaN, infinite or negative value, a column with no values, and (with
/// [`Order::NonDecreasing`]) a value below the one before it. `key` is the scenario section the
/// file belongs to (`"service"` or `"arrivals"`), so that messages name `service.file`,
/// `service.column`, ...
pub(crate) fn read_column(
    path: &Path,
    column: &str,
    key: &str,
    order: Order,
) -> Result<Vec<f64>, KeyError> {
    let file_key = || format!("{key}.file");
    let shown = path.display();
    let file = input::open_regular(path)
        .map_err(|e| KeyError::new(file_key(), format!("cannot read {shown}: {e}")))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(LineLimit::new(file, CSV_LINE));
    let headers = reader
        .headers()
        .map_err(|e| {
            KeyError::new(
                file_key(),
                format!("cannot read the header row of {shown}: {}", io_message(&e)),
            )
        })?
        .clone();
    let Some(index) = headers.iter().position(|h| h == column) else {
        let names: Vec<&str> = headers.iter().collect();
        return Err(KeyError::new(
            format!("{key}.column"),
            format!(
                "no column `{column}` in {shown} (its header row has: {})",
                if names.is_empty() { "nothing".to_string() } else { names.join(", ") }
            ),
        ));
    };

    let mut values = Vec::new();
    let mut record = csv::StringRecord::new();
    let mut previous: Option<f64> = None;
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                return Err(KeyError::new(
                    file_key(),
                    format!("cannot read {shown}: {}", io_message(&e)),
                ));
            }
        }
        let line = record.position().map_or(0, |p| p.line());
        let at = format!("{shown} line {line}, column `{column}`");
        let Some(field) = record.get(index) else {
            return Err(KeyError::new(file_key(), format!("{at}: the record has no such field")));
        };
        let value: f64 = field.parse().map_err(|_| {
            KeyError::new(file_key(), format!("{at}: expected a number, got `{field}`"))
        })?;
        if !value.is_finite() {
            return Err(KeyError::new(
                file_key(),
                format!("{at}: expected a finite number, got `{field}`"),
            ));
        }
        if value < 0.0 {
            return Err(KeyError::new(
                file_key(),
                format!("{at}: expected a number >= 0, got `{field}`"),
            ));
        }
        if order == Order::NonDecreasing
            && let Some(p) = previous
            && value < p
        {
            return Err(KeyError::new(
                file_key(),
                format!("{at}: timestamps must not decrease, got {value} after {p}"),
            ));
        }
        previous = Some(value);
        values.push(value);
    }
    if values.is_empty() {
        return Err(KeyError::new(
            file_key(),
            format!("column `{column}` of {shown} has no values"),
        ));
    }
    Ok(values)
}

/// The I/O part of a csv error, without the csv crate's wrapping.
fn io_message(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::Io(io) => io.to_string(),
        _ => e.to_string(),
    }
}

/// A directory of its own under the system's temporary directory, removed when dropped.
#[cfg(test)]
pub(crate) struct TempDir(pub(crate) PathBuf);

#[cfg(test)]
impl TempDir {
    /// Creates `lbsim-workload-<pid>-<name>` (emptied first if a previous run left it).
    pub(crate) fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("lbsim-workload-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temporary directory");
        TempDir(dir)
    }

    /// Writes `contents` to `file` in the directory and returns its path.
    pub(crate) fn write(&self, file: &str, contents: &str) -> PathBuf {
        let path = self.0.join(file);
        std::fs::write(&path, contents).expect("write temporary file");
        path
    }
}

#[cfg(test)]
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_named_column_trimmed() {
        let dir = TempDir::new("csv-ok");
        let p = dir.write("a.csv", "id, demand\n1, 0.5\n2,1.5\n3 ,2\n");
        assert_eq!(read_column(&p, "demand", "service", Order::Any).unwrap(), vec![0.5, 1.5, 2.0]);
    }

    #[test]
    fn errors_name_the_key_file_column_and_line() {
        let dir = TempDir::new("csv-bad");
        let read = |name: &str, text: &str, order| {
            let p = dir.write(name, text);
            read_column(&p, "time", "arrivals", order).unwrap_err().to_string()
        };
        let e = read("missing.csv", "t,x\n1,2\n", Order::Any);
        assert!(e.starts_with("arrivals.column: no column `time` in "), "{e}");
        assert!(e.contains("missing.csv") && e.contains("t, x"), "{e}");

        let e = read("text.csv", "time\n1\n2\nabc\n", Order::Any);
        assert!(e.starts_with("arrivals.file: "), "{e}");
        assert!(e.contains("text.csv line 4, column `time`: expected a number, got `abc`"), "{e}");

        let e = read("dec.csv", "time\n1\n3\n2\n", Order::NonDecreasing);
        assert!(e.contains("dec.csv line 4, column `time`: timestamps must not decrease"), "{e}");
        // The same values are fine when the order does not matter.
        assert_eq!(
            read_column(&dir.0.join("dec.csv"), "time", "arrivals", Order::Any).unwrap(),
            vec![1.0, 3.0, 2.0]
        );

        let e = read("neg.csv", "time\n1\n-2\n", Order::Any);
        assert!(e.contains("neg.csv line 3, column `time`: expected a number >= 0"), "{e}");
        let e = read("nan.csv", "time\nNaN\n", Order::Any);
        assert!(e.contains("nan.csv line 2, column `time`: expected a finite number"), "{e}");
        let e = read("inf.csv", "time\n1\ninf\n", Order::Any);
        assert!(e.contains("line 3") && e.contains("finite"), "{e}");
        let e = read("blank.csv", "time,x\n1,2\n,3\n", Order::Any);
        assert!(e.contains("blank.csv line 3, column `time`: expected a number, got ``"), "{e}");
        let e = read("short.csv", "x,time\n1,2\n3\n", Order::Any);
        assert!(e.contains("short.csv line 3, column `time`: the record has no such field"), "{e}");
        let e = read("empty.csv", "time\n", Order::Any);
        assert!(e.contains("column `time` of ") && e.ends_with("has no values"), "{e}");

        let e = read_column(&dir.0.join("nope.csv"), "time", "arrivals", Order::Any).unwrap_err();
        assert_eq!(e.key, "arrivals.file");
        let e = e.to_string();
        assert!(e.starts_with("arrivals.file: cannot read ") && e.contains("nope.csv"), "{e}");
    }

    #[test]
    fn relative_files_are_taken_from_the_base() {
        assert_eq!(resolve(Path::new("/a/b"), Path::new("t.csv")), PathBuf::from("/a/b/t.csv"));
        assert_eq!(resolve(Path::new("/a/b"), Path::new("/t.csv")), PathBuf::from("/t.csv"));
    }
}
