//! Helpers shared by the integration tests.

use std::process::{Command, Output};

use lbsim::config::{Common, RunConfig};
use lbsim::experiment::{Scenario, run_scenarios};
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

/// Runs one scenario in-process and returns its replications.
pub fn replicate(sc: Scenario, run: &RunConfig, seeds: u64, seed: u64) -> Vec<RepStats> {
    run_scenarios(&[sc], run, &common(seeds, seed), &|| {}).remove(0).reps
}

/// Merges replications.
pub fn pooled(reps: &[RepStats]) -> RepStats {
    RepStats::merged(reps)
}
