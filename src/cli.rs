//! The command line, as clap sees it. Values stay close to the flags here; `config` validates
//! them and builds the typed configuration the experiments run on.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use crate::output::Format;

/// A discrete-event simulator for load-balancing policies.
#[derive(Debug, Parser)]
#[command(name = "lbsim", version, about, long_about = None, after_help = EXAMPLES)]
pub struct Cli {
    /// Options shared by every command.
    #[command(flatten)]
    pub global: Global,
    /// The experiment to run.
    #[command(subcommand)]
    pub command: Command,
}

const EXAMPLES: &str = "\
Examples:
  lbsim homo --seeds 5                      the six policies at six loads on 100 servers
  lbsim hetero --format csv -o hetero.csv   slow and fast servers, as CSV into a file
  lbsim stale --periods 0,1,10 --policies random,p2c,jsq
                                            how old can load information be?";

/// Options accepted by every command (before or after the command name).
#[derive(Debug, Args)]
pub struct Global {
    /// Replications per scenario [default: 5; 3 for `fixed`]
    #[arg(long, global = true, allow_negative_numbers = true, value_name = "N")]
    pub seeds: Option<String>,
    /// Base seed: every random stream is derived from it
    #[arg(
        long,
        global = true,
        allow_negative_numbers = true,
        value_name = "S",
        default_value = "1"
    )]
    pub seed: String,
    /// Output format
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Worker threads [default: all cores]; the output does not depend on it
    #[arg(long, global = true, allow_negative_numbers = true, value_name = "N")]
    pub threads: Option<String>,
    /// Write the output to FILE (atomically: a temporary file, then a rename) instead of stdout
    #[arg(short = 'o', long = "out", global = true, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// The experiments.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Static balls into bins: max load with d choices (Azar et al.; Vöcking's always-go-left)
    Bins(BinsArgs),
    /// Supermarket model against its mean-field fixed point s_i = lambda^((d^i-1)/(d-1))
    Fixed(FixedArgs),
    /// Homogeneous farm: policies across loads
    Homo(HomoArgs),
    /// Heterogeneous farm (slow and fast servers): where static weights fail
    Hetero(HeteroArgs),
    /// Periodic bulletin board: how useful is old load information?
    Stale(StaleArgs),
    /// Smooth weighted round robin: one-cycle trace, and smoothness against the expanded list
    Swrr(SwrrArgs),
}

/// Warm-up and measured arrivals, and the runaway guard.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Measured arrivals per replication (accepts 1e6 or 1_000_000)
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub requests: Option<String>,
    /// Arrivals simulated before measuring starts
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub warmup: Option<String>,
    /// Stop a replication when any queue exceeds this length (bounds memory on unstable runs)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value = "100000")]
    pub queue_guard: String,
}

/// `lbsim bins`
#[derive(Debug, Args)]
pub struct BinsArgs {
    /// Numbers of balls and bins (comma-separated)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "LIST",
        default_value = "1000,10000,100000,1000000"
    )]
    pub n: String,
    /// Choices per ball (comma-separated)
    #[arg(long, allow_negative_numbers = true, value_name = "LIST", default_value = "1,2,3,4")]
    pub d: String,
    /// Variants: `uniform` (d independent choices) and `left` (always-go-left, d >= 2 only)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "LIST",
        default_value = "uniform,left"
    )]
    pub variants: String,
}

/// `lbsim fixed`
#[derive(Debug, Args)]
pub struct FixedArgs {
    /// Servers
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value = "1000")]
    pub n: String,
    /// Utilisations, 0 < lambda < 1 (comma-separated)
    #[arg(long, allow_negative_numbers = true, value_name = "LIST", default_value = "0.9")]
    pub lambda: String,
    /// Choices (comma-separated; 1 is random)
    #[arg(long, allow_negative_numbers = true, value_name = "LIST", default_value = "1,2,3")]
    pub d: String,
    /// Warm-up and measured arrivals [defaults: --requests 5000000 --warmup 500000]
    #[command(flatten)]
    pub run: RunArgs,
}

/// `lbsim homo`
#[derive(Debug, Args)]
pub struct HomoArgs {
    /// Servers (all of rate 1)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value = "100")]
    pub servers: String,
    /// Utilisations, 0 < load < 1 (comma-separated)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "LIST",
        default_value = "0.5,0.7,0.8,0.9,0.95,0.99"
    )]
    pub loads: String,
    /// Policies (comma-separated): random, rr, swrr, p2c, p3c, pNc, p2c-repl, jsq, p2c-pewma
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "LIST",
        default_value = "random,rr,p2c,p2c-repl,p3c,jsq"
    )]
    pub policies: String,
    /// Peak-EWMA decay time constant, in mean service times (p2c-pewma only)
    #[arg(long, allow_negative_numbers = true, value_name = "T", default_value = "10")]
    pub tau: String,
    /// Warm-up and measured arrivals [defaults: --requests 1000000 --warmup 100000]
    #[command(flatten)]
    pub run: RunArgs,
}

/// `lbsim hetero`
#[derive(Debug, Args)]
pub struct HeteroArgs {
    /// Slow servers (listed first)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value = "20")]
    pub slow: String,
    /// Service rate of a slow server
    #[arg(long, allow_negative_numbers = true, value_name = "RATE", default_value = "0.5")]
    pub slow_rate: String,
    /// Fast servers
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value = "80")]
    pub fast: String,
    /// Service rate of a fast server
    #[arg(long, allow_negative_numbers = true, value_name = "RATE", default_value = "1")]
    pub fast_rate: String,
    /// Utilisation of the total capacity, 0 < load < 1
    #[arg(long, allow_negative_numbers = true, value_name = "LOAD", default_value = "0.8")]
    pub load: String,
    /// Policies (comma-separated): random, rr, swrr, p2c, p3c, pNc, p2c-repl, jsq, p2c-pewma
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "LIST",
        default_value = "random,rr,swrr,p2c,jsq,p2c-pewma"
    )]
    pub policies: String,
    /// Peak-EWMA decay time constant, in mean service times of a rate-1 server
    #[arg(long, allow_negative_numbers = true, value_name = "T", default_value = "10")]
    pub tau: String,
    /// Warm-up and measured arrivals [defaults: --requests 1000000 --warmup 100000]
    #[command(flatten)]
    pub run: RunArgs,
}

/// `lbsim stale`
#[derive(Debug, Args)]
pub struct StaleArgs {
    /// Servers (all of rate 1)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value = "100")]
    pub servers: String,
    /// Utilisation, 0 < load < 1
    #[arg(long, allow_negative_numbers = true, value_name = "LOAD", default_value = "0.9")]
    pub load: String,
    /// Board periods T in mean service times (comma-separated; 0 = live queue lengths)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "LIST",
        default_value = "0,0.5,1,2,5,10,20,50"
    )]
    pub periods: String,
    /// Policies (comma-separated): random, rr, p2c, p3c, pNc, p2c-repl, jsq, jsq-local
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "LIST",
        default_value = "random,p2c,p3c,jsq,jsq-local"
    )]
    pub policies: String,
    /// Warm-up and measured arrivals [defaults: --requests 1000000 --warmup 100000]
    #[command(flatten)]
    pub run: RunArgs,
}

/// `lbsim swrr`
#[derive(Debug, Args)]
pub struct SwrrArgs {
    /// Print one cycle of the smooth algorithm for these integer weights (e.g. 5,1,1)
    #[arg(long, allow_negative_numbers = true, value_name = "WEIGHTS")]
    pub trace: Option<String>,
    /// Weight sets to compare, separated by `;` [default: 5,1,1; 1,1,1; 3,2,1; 4,3,2,1; 10,1;
    /// 100,1,1; 1,2; and 20x1 + 80x2 (100 servers)]
    #[arg(long, allow_negative_numbers = true, value_name = "SETS")]
    pub weights: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }
}
