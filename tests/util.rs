//! Helpers shared by the integration tests.

use std::process::{Command, Output};

use lbsim::experiment::{Common, RunConfig};
use lbsim::experiment::{Scenario, run_replication};
use lbsim::output::Format;
use lbsim::stats::RepStats;

/// Runs the `lbsim` binary with `args`.
pub fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim")).args(args).output().expect("lbsim runs")
}

/// Runs the binary and returns stdout, asserting success.
pub fn lbsim_ok(args: &[&str]) -> String {
    let out = lbsim(args);
    assert!(
        out.status.success(),
        "lbsim {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Shared options for in-process runs.
pub fn common(seeds: u64, seed: u64) -> Common {
    Common { seeds, seed, format: Format::Csv, threads: None, out: None, plot: None }
}

/// A run length without a guard that could trigger.
pub fn run_length(warmup: u64, requests: u64) -> RunConfig {
    RunConfig::new(warmup, requests, u32::MAX)
}

/// Runs one scenario's replications in-process (in parallel) and returns them in order.
pub fn replicate(sc: Scenario, run: &RunConfig, seeds: u64, seed: u64) -> Vec<RepStats> {
    use rayon::prelude::*;
    (0..seeds).into_par_iter().map(|k| run_replication(&sc, run, seed, k)).collect()
}

/// Merges replications.
pub fn pooled(reps: &[RepStats]) -> RepStats {
    RepStats::merged(reps)
}

/// A scratch directory of a test's own, removed when dropped.
pub struct Dir(pub std::path::PathBuf);

impl Dir {
    /// `lbsim-{name}-{pid}` under the system's temporary directory, empty.
    pub fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("lbsim-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    /// Writes `text` to `name` inside the directory; returns its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The CSV column `name` of `csv` (plain cells: no quoting).
pub fn column(csv: &str, name: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let c = header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name}: {csv}"));
    lines.map(|l| l.split(',').nth(c).unwrap().to_string()).collect()
}
