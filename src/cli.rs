//! The command line, as clap sees it. Every value arrives typed by a value parser: the shared
//! options and the run options by [`crate::options`]', each command's own options by
//! [`crate::args`]' (`--max-requests` apart, whose accepted range depends on `--requests`). A
//! value a parser refuses is reported with lbsim's own one line ([`options::refused`]); each
//! command's file in `experiment` checks what depends on other options and builds the
//! configuration it runs on.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use crate::admission::AdmissionSpec;
use crate::args::{
    self, Baseline, HashMethod, Limiter, List, PatternArg, PolicyLabels, Target, Variant, Weights,
};
use crate::options::{self, Quantiles, Shard, WarmupArg};
use crate::output::Format;
use crate::policy::PolicyKind;
use crate::policy::registry::{self, BOARD_POLICIES_HELP, HelpText, LIVE_POLICIES_HELP};
use crate::scenario::Assignment;
use crate::subset::Subsetting;

/// A discrete-event simulator for load-balancing policies.
///
/// Times are in mean service times of a rate-1 server; rates are requests per unit of that time;
/// a load is the fraction of the farm's total capacity. Counts accept `1e6` and `1_000_000`.
/// Data goes to stdout (or --out), diagnostics and the progress bar to stderr.
#[derive(Debug, Parser)]
#[command(name = "lbsim", version, about, long_about = None, after_help = AFTER_HELP)]
pub struct Cli {
    /// Options shared by every command.
    #[command(flatten)]
    pub global: Global,
    /// The experiment to run.
    #[command(subcommand)]
    pub command: Command,
}

/// `lbsim --help`'s closing text: the policy table, then the examples.
const AFTER_HELP: &str = AFTER_HELP_TEXT.as_str();
const AFTER_HELP_TEXT: HelpText = registry::with_table("", EXAMPLES);

const EXAMPLES: &str = "\
Examples:
  lbsim homo --seeds 5                      the six policies at six loads on 100 servers
  lbsim hetero --format csv -o hetero.csv   slow and fast servers, as CSV into a file
  lbsim stale --periods 0,1,10 --policies random,p2c,jsq
                                            how old can load information be?

Exit status: 0 success, 1 output could not be written, 2 usage error, 128 + the signal when
ended by SIGHUP (129), SIGINT/Ctrl-C (130) or SIGTERM (143).
`lbsim <command> --help` lists each command's options with their defaults and units.";

const BINS_EXAMPLES: &str = "\
Examples:
  lbsim bins                                 the default grid (n up to 10^6, d = 1..4)
  lbsim bins --n 1e6 --d 2 --variants left   always-go-left with two choices
  lbsim bins --n 1000 --seeds 50 --format csv";

const FIXED_EXAMPLES: &str = "\
Examples:
  lbsim fixed                                d = 1, 2, 3 at lambda 0.9 on 1000 servers
  lbsim fixed --d 2 --lambda 0.5,0.9,0.95 --requests 1e6
  lbsim fixed --n 100 --d 2 --format csv -o fixed.csv";

const HOMO_EXAMPLES: &str = "\
Examples:
  lbsim homo                                 six policies at six loads (about 7 s on 2 cores)
  lbsim homo --loads 0.9 --policies p2c,jsq --requests 1e5
  lbsim homo --servers 1000 --loads 0.95 --format csv | head -n 3";

const HETERO_EXAMPLES: &str = "\
Examples:
  lbsim hetero                               20 slow (rate 0.5) and 80 fast (rate 1) servers
  lbsim hetero --policies swrr,p2c,p2c-pewma --tau 1
  lbsim hetero --slow 50 --fast 50 --slow-rate 0.25 --load 0.7 --format json";

const STALE_EXAMPLES: &str = "\
Examples:
  lbsim stale                                the bulletin board at eight periods
  lbsim stale --periods 0,10,50 --policies random,p2c,jsq
  lbsim stale --servers 1000 --load 0.95 --seeds 3 --format csv";

const SWRR_EXAMPLES: &str = "\
Examples:
  lbsim swrr --trace 5,1,1                   one cycle of NGINX's algorithm, step by step
  lbsim swrr                                 smooth against expanded on the default weight sets
  lbsim swrr --weights '3,1;10,1,1' --format csv

swrr is exact arithmetic: --seeds, --seed and --threads are refused.";

const HASH_EXAMPLES: &str = "\
Examples:
  lbsim hash                                 ring, maglev and modulo on 100 servers, 10^6 keys
  lbsim hash --methods ring --vnodes 100,1000 --balance 1.25
                                             a bounded-load ring beside the plain one
  lbsim hash --servers 10 --keys 1e5 --seeds 20 --format csv

Keys are the integers 0..--keys, hashed by xxHash64 (as Envoy hashes request keys). Seeds vary
where servers sit on the ring and in the Maglev table; modulo does not depend on them.";

/// Options accepted by every command (before or after the command name).
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Replications per scenario, 1 to 10^7, and at most 10^7 over all the command's scenarios
    /// (all shards together) [default: 5; 3 for `fixed`, 20 for `subset`]
    #[arg(long, global = true, allow_hyphen_values = true, value_name = "N", value_parser = options::seeds)]
    pub seeds: Option<u64>,
    /// Base seed (integer, 0 to 2^64-1): every random stream is derived from it [default: 1]
    #[arg(long, global = true, allow_hyphen_values = true, value_name = "S", value_parser = options::seed)]
    pub seed: Option<u64>,
    /// Output format: an aligned table, CSV with a header line, or one JSON object
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Worker threads, 1 to 1024; more than 4 per available core are lowered to that, with a
    /// warning [default: all cores]; the output does not depend on it
    #[arg(long, global = true, allow_hyphen_values = true, value_name = "N", value_parser = options::threads)]
    pub threads: Option<usize>,
    /// Write the output to FILE instead of stdout: atomically (a temporary file beside it, then a
    /// rename; on error or interrupt FILE is left as it was; a symbolic link's target is replaced,
    /// keeping its permissions; a read-only file is refused); a device or FIFO is written in place;
    /// `-` is stdout [default: stdout]
    #[arg(short = 'o', long = "out", global = true, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Do not show the progress bar (it is only shown on a terminal, for runs over a second);
    /// errors and warnings (among them the estimate of a run over an hour) are still printed
    #[arg(short, long, global = true, overrides_with = "quiet")]
    pub quiet: bool,
    /// Run only shard K of N (0 <= K < N): the tasks (scenario, replication) whose index modulo N
    /// is K, written as raw records (JSON Lines) that `lbsim merge` turns into the whole
    /// command's output [default: the whole command]
    #[arg(long, global = true, allow_hyphen_values = true, value_name = "K/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Check the command (its options, files and, with --shard, its plan) and exit without
    /// simulating or writing anything: status 0 and its warnings if it would run, else its
    /// one-line error and status 2 (scripts/slurm/submit checks a sweep this way before
    /// submitting it)
    #[arg(long, global = true)]
    pub dry_run: bool,
}

/// The experiments.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Static balls into bins: max load with d choices (Azar et al.; Vöcking's always-go-left)
    #[command(after_help = BINS_EXAMPLES)]
    Bins(BinsArgs),
    /// Supermarket model against its mean-field fixed point s_i = lambda^((d^i-1)/(d-1))
    #[command(
        after_help = FIXED_EXAMPLES,
        mut_arg("requests", |a| a.help(
            "Measured arrivals per replication, 2 to 10^12 (accepts 1e6 or 1_000_000) \
             [default: 5000000]")),
        mut_arg("warmup", |a| a.help(
            "Arrivals simulated before measuring starts, 0 to 10^12 [default: 500000]")),
    )]
    Fixed(FixedArgs),
    /// Homogeneous farm: policies across loads
    #[command(after_help = HOMO_EXAMPLES)]
    Homo(HomoArgs),
    /// Heterogeneous farm (slow and fast servers): where static weights fail
    #[command(after_help = HETERO_EXAMPLES)]
    Hetero(HeteroArgs),
    /// Periodic bulletin board: how useful is old load information?
    #[command(after_help = STALE_EXAMPLES)]
    Stale(StaleArgs),
    /// Smooth weighted round robin: one-cycle trace, and smoothness against the expanded list
    #[command(after_help = SWRR_EXAMPLES)]
    Swrr(SwrrArgs),
    /// A scenario file: your farm, arrivals, service and policies, swept over any keys
    #[command(after_help = RUN_EXAMPLES)]
    Run(ScenarioArgs),
    /// Capacity planning: per policy, the largest load (or fewest servers) of a scenario file at
    /// which a latency or success target holds, by bisection
    #[command(after_help = CAPACITY_EXAMPLES)]
    Capacity(CapacityArgs),
    /// Consistent hashing: balance (max keys on a server over the mean) and keys moved when a
    /// server is added, for the hash ring, Maglev and modulo
    #[command(after_help = HASH_EXAMPLES)]
    Hash(HashArgs),
    /// Subsetting (SRE book, ch. 20): how evenly random and deterministic subsets spread
    /// connections over the backends
    #[command(after_help = SUBSET_EXAMPLES)]
    Subset(SubsetArgs),
    /// Rate limiters: one against an arrival pattern, or (no --limiter) the rate-limiting
    /// chapter's claims checked by simulation
    #[command(after_help = LIMIT_EXAMPLES)]
    Limit(LimitArgs),
    /// Merge the raw records of `--shard K/N` runs into the output of the whole command
    #[command(after_help = MERGE_EXAMPLES)]
    Merge(MergeArgs),
    /// One HTML page of the whole reproduction: every table of results/ with its figure, the
    /// command that regenerates it, and the article's numbers beside lbsim's
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
}

const REPORT_EXAMPLES: &str = "\
Examples:
  lbsim report site                 site/index.html from the committed results/
  lbsim report site --run           every command run again first (as reproduce/run.sh)
  lbsim report site --results out   from another results directory

The page is self-contained (inline SVG, one style sheet, no script, nothing loaded from the
network): open it from the file, or publish the directory as it is.";

/// `lbsim report`
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The directory to write index.html into (created if missing)
    pub dir: PathBuf,
    /// Read the tables from this directory (reproduce/run.sh writes it) [default: results]
    #[arg(long, value_name = "DIR", conflicts_with = "run")]
    pub results: Option<PathBuf>,
    /// Run every command of the reproduction again, in memory, instead of reading results/
    /// [default: read them]
    #[arg(long)]
    pub run: bool,
}

const MERGE_EXAMPLES: &str = "\
Examples:
  lbsim merge s0.jsonl s1.jsonl              what the command the shards ran prints
  lbsim merge shard-*.jsonl --format csv -o homo.csv
  lbsim merge - --format json                shards one after the other on standard input

Shards are `--shard K/N` runs of one command line (bar --shard, -o and --threads), e.g.
  for k in 0 1; do lbsim homo --loads 0.9 --shard $k/2 -o s$k.jsonl; done
Shards of another command, split or lbsim version, a shard missing or given twice, or one
that stopped before its end record are refused with one line naming them, and status 2.";

/// `lbsim merge`
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Raw records written by `--shard K/N` runs of one command, in any order; `-` reads
    /// standard input (which may hold several shards one after the other)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Also draw the figure of merged `fixed`, `stale`, `homo`, `hetero` or `run` shards as an
    /// SVG into FILE, as their --plot does [default: no figure]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Write the time series of merged `run --series` shards to FILE, the bytes the unsharded
    /// run's --series writes (the shards carry their windows and write no series themselves)
    /// [default: no series]
    #[arg(long, value_name = "FILE")]
    pub series: Option<PathBuf>,
}

const LIMIT_EXAMPLES: &str = "\
Examples:
  lbsim limit                                 every numeric claim of the chapter, tested
  lbsim limit --limiter fixed-window:limit=100 --pattern boundary:count=99
  lbsim limit --limiter adaptive:queue_limit=10 --pattern on-off:rate=500,on=5,off=5 --capacity 100";

/// `lbsim limit`
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// The limiter, NAME:key=value,...: token-bucket (rate, burst), leaky-bucket (rate, burst,
    /// nodelay), gcra (rate, burst), fixed-window, sliding-log, sliding-window (limit, window),
    /// adaptive (k, window, queue_limit); any of them with instances, split, skew; token-bucket
    /// with instances and sync (quotas rebalanced every sync); any but adaptive with rtt (one
    /// central limiter, each decision a round trip); composite only in a scenario file
    /// [default: none, which runs the chapter's claims]
    #[arg(long, allow_hyphen_values = true, value_name = "SPEC", value_parser = args::limiter)]
    pub limiter: Option<Limiter>,
    /// Arrivals: poisson:rate=R, constant:rate=R, on-off:rate=R,on=A,off=B,
    /// boundary:count=N,window=W (N just before and N just after every other window boundary),
    /// trace:file=F (a CSV column `time`, replayed at its own timestamps) [default:
    /// poisson:rate=200]
    #[arg(long, allow_hyphen_values = true, value_name = "SPEC", value_parser = args::pattern)]
    pub pattern: Option<PatternArg>,
    /// Simulated time per replication (a trace runs to its end) [default: 100]
    #[arg(long, allow_hyphen_values = true, value_name = "T", value_parser = args::duration)]
    pub duration: Option<f64>,
    /// Rate of the backend the adaptive throttle talks to [default: 100]
    #[arg(long, allow_hyphen_values = true, value_name = "RATE", value_parser = args::capacity)]
    pub capacity: Option<f64>,
    /// With --limiter: also draw what it did with the requests (offered, admitted, rejected,
    /// delayed, summed over the replications) as an SVG figure into FILE, written as --out
    /// writes; the claims (no --limiter) draw none [default: no figure]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

const SUBSET_EXAMPLES: &str = "\
Examples:
  lbsim subset                               300 clients, 300 backends, subsets of 30 and 90
  lbsim subset --subsets 3,10,30,60,90,150   the spread against the subset size
  lbsim subset --clients 1000 --backends 100 --subsets 10 --methods deterministic --format csv

Each row: min_ratio and max_ratio, the least and the most connected backend over the mean
(clients x subset / backends), and cv, the standard deviation of the connections over their
mean, each the median over --seeds replications (default 20).";

/// `lbsim subset`
#[derive(Debug, Args)]
pub struct SubsetArgs {
    /// Clients, each connecting to one subset of the backends, 1 to 10^6
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value = "300", value_parser = args::clients)]
    pub clients: usize,
    /// Backends, 1 to 10^6
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value = "300", value_parser = args::backends)]
    pub backends: usize,
    /// Subset sizes (backends per client), comma-separated, each 1 to --backends
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", default_value = "30,90", value_parser = args::subsets)]
    pub subsets: List<usize>,
    /// Methods, comma-separated: `random` (each client shuffles the backends on its own and
    /// keeps the first S) and `deterministic` (the SRE book's rounds of backends/S clients
    /// sharing one shuffle, each client taking the next S; the remainder of each round's
    /// shuffle goes unused)
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "LIST",
        default_value = "random,deterministic",
        value_parser = args::subset_methods
    )]
    pub methods: List<Subsetting>,
}

const RUN_EXAMPLES: &str = "\
Examples:
  lbsim run examples/scenarios/hetero.toml          the article's hetero farm from a file
  lbsim run examples/scenarios/hetero.toml --set arrivals.load=0.95 --requests 1e5 --baseline p2c
  lbsim run examples/scenarios/hetero.toml --print   the file as read, defaults filled in
  lbsim homo --loads 0.9 --print-scenario   a command as a scenario file";

/// `lbsim run`
#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// The scenario file (TOML, at most 1 MiB), or `-` for standard input (its relative paths,
    /// such as a trace's `file`, are then taken from the current directory); every key has a
    /// default, see README's "Your own scenario"
    pub file: PathBuf,
    /// Override a key by its dotted path, e.g. --set arrivals.load=0.95 (repeatable; the value is
    /// read as TOML, or as a string when it is not) [default: none]
    #[arg(long = "set", value_name = "KEY=VALUE", allow_hyphen_values = true, value_parser = args::set)]
    pub set: Vec<Assignment>,
    /// Policies to compare instead of the file's, comma-separated: NAME or NAME:key=value
    /// (e.g. p2c,p2c-pewma:tau=5; NAME from the policy table of `lbsim --help`); with
    /// `info.clients` > 1 each client runs its own copy, the feedback policies included, and
    /// learns from its own part of the traffic (wrr-orca: the reports of its servers; prequal:
    /// its own probes; c3, least-latency: the responses to its own requests) [default: the
    /// file's `policies`]
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", value_parser = args::policy_labels)]
    pub policies: Option<PolicyLabels>,
    /// A rate limiter in front of the balancer instead of the file's `[admission]`:
    /// NAME:key=value,... with NAME token-bucket, leaky-bucket, gcra, fixed-window, sliding-log,
    /// sliding-window or adaptive (e.g. token-bucket:rate=80,burst=20), with instances, sync or
    /// rtt as in [admission] (a composite's layers only in the file); allows load >= 1
    /// [default: the file's, or none]
    #[arg(long, allow_hyphen_values = true, value_name = "SPEC", value_parser = args::admission)]
    pub admission: Option<Box<AdmissionSpec>>,
    /// Print the scenario as lbsim reads it (canonical TOML, defaults filled in, overrides
    /// applied) instead of running it [default: run it]
    #[arg(long)]
    pub print: bool,
    /// Write the time series of each row to FILE as CSV: the sweep keys, then
    /// `policy,time,metric,value`, one line per window of simulated time (`time` its start) and
    /// metric: requests, share and mean queue per group, p50 and p99 [default: none]
    #[arg(long, value_name = "FILE")]
    pub series: Option<PathBuf>,
    /// With --series: the window width in time units, above 0 [default: 10]
    #[arg(long, allow_hyphen_values = true, value_name = "W", value_parser = args::series_window)]
    pub series_window: Option<f64>,
    /// Also draw the mean and p99 sojourn against the first sweep key, one line per policy with
    /// its 95% interval as a band (bars per policy without a sweep), as an SVG figure into FILE,
    /// written as --out writes [default: no figure]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Run length and precision, over the file's `[run]`.
    #[command(flatten)]
    pub run: ScenarioRunArgs,
    /// The scenario's text, given by a program that links lbsim (the Python package) rather
    /// than read from `file`, which then only names it in messages; its relative paths are
    /// taken from the current directory, as for standard input. Never set from the command line.
    #[arg(skip)]
    pub text: Option<String>,
}

/// `lbsim run`'s run length and precision: each option, when given, replaces the file's key.
#[derive(Debug, Args)]
#[command(next_help_heading = "Run length and precision (each replaces the file's [run] key)")]
pub struct ScenarioRunArgs {
    /// Measured arrivals per replication, 2 to 10^12 (accepts 1e6 or 1_000_000); a trace measures
    /// at most what it holds after the warm-up [default: the file's run.requests, 1000000]
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = options::requests)]
    pub requests: Option<u64>,
    /// Arrivals simulated before measuring starts, 0 to 10^12, or `auto` (MSER-5 on a first pass
    /// of --requests arrivals, as for `homo`) [default: the file's run.warmup, 100000]
    #[arg(long, allow_hyphen_values = true, value_name = "N|auto", value_parser = options::warmup)]
    pub warmup: Option<WarmupArg>,
    /// Stop a replication when any queue exceeds N requests, 1 to 10^9 [default: the file's
    /// run.queue_guard, 100000]
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = options::queue_guard)]
    pub queue_guard: Option<u32>,
    /// Keep doubling a row's --requests until its mean_ci95 <= R x mean and it is steady (R from
    /// 1e-6 to 0.5); needs --seeds >= 2 and arrivals that are not a trace; adds a `requests`
    /// column [default: the file's run.precision, off]
    #[arg(long, allow_hyphen_values = true, value_name = "R", value_parser = options::parse_precision)]
    pub precision: Option<f64>,
    /// With --precision: the most measured arrivals per replication a row may double to
    /// [default: the file's run.max_requests, else 100000000 or --requests if larger]
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub max_requests: Option<String>,
    /// Sojourn percentiles to add as columns after the others, comma-separated, each above 0 and
    /// below 100 (e.g. 75,99.99); p50, p90, p99 and p99.9 are always there [default: none]
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", value_parser = options::quantiles)]
    pub quantiles: Option<Quantiles>,
    /// Compare every policy with POLICY (one of the scenario's policies, as written, e.g.
    /// p2c-pewma:tau=5) at each sweep point: adds mean_vs_base, mean_vs_base_ci95, p99_vs_base,
    /// p99_vs_base_ci95 (relative differences, paired over replications) [default: none]
    #[arg(long, allow_hyphen_values = true, value_name = "POLICY", value_parser = args::baseline)]
    pub baseline: Option<Baseline>,
}

const CAPACITY_EXAMPLES: &str = "\
Examples:
  lbsim capacity examples/scenarios/hetero.toml --target p99=20
                                            the largest load at which each policy keeps p99 <= 20
  lbsim capacity examples/scenarios/hetero.toml --target mean=3 --over farm.groups.1.count
                                            the fewest fast servers for a mean of 3

Each probe runs --seeds replications with --requests measured arrivals, doubling them (up to
--max-requests) until the 95% interval of the metric lies on one side of the target; a probe
still undecided there ends the search, and its row says so.";

/// `lbsim capacity`
#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// The scenario file (TOML), as for `lbsim run`; it must have no [sweep]
    pub file: PathBuf,
    /// The scenario's text, given by a program that links lbsim (as `run`'s). Never set from
    /// the command line.
    #[arg(skip)]
    pub text: Option<String>,
    /// The target, METRIC=VALUE: mean=V or pXX=V (a sojourn percentile, e.g. p99=50, p99.9=200)
    /// held while at most V; success=F (with [client]) held while at least F
    #[arg(long, required = true, allow_hyphen_values = true, value_name = "METRIC=VALUE", value_parser = args::target)]
    pub target: Target,
    /// The key searched: arrivals.load (the largest load in [0.01, 0.99], or below the
    /// admission stage's bound), or farm.groups.N.count or farm.slots (the fewest, from 1 to the
    /// file's value, the arrival rate of the file held fixed)
    #[arg(long, value_name = "KEY", default_value = "arrivals.load")]
    pub over: String,
    /// Stop bisecting when the answer's bracket is at most P wide, in the key's units (a count
    /// is always bisected to adjacent values) [default: 0.005 for a load, 1 for a count]
    #[arg(long, allow_hyphen_values = true, value_name = "P", value_parser = args::capacity_precision)]
    pub precision: Option<f64>,
    /// Override a key by its dotted path, as for `lbsim run` (repeatable) [default: none]
    #[arg(long = "set", value_name = "KEY=VALUE", allow_hyphen_values = true, value_parser = args::set)]
    pub set: Vec<Assignment>,
    /// Policies instead of the file's, as for `lbsim run` [default: the file's `policies`]
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", value_parser = args::policy_labels)]
    pub policies: Option<PolicyLabels>,
    /// Measured arrivals per replication of a probe's first run, 2 to 10^12
    /// [default: the file's run.requests]
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = options::requests)]
    pub requests: Option<u64>,
    /// Arrivals simulated before measuring, 0 to 10^12 [default: the file's run.warmup]
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = options::warmup)]
    pub warmup: Option<WarmupArg>,
    /// The most measured arrivals per replication a probe may double to before it is reported
    /// as undecided [default: 16 x --requests]
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub max_requests: Option<String>,
    /// Stop a replication when any queue exceeds N requests (the probe then fails the target)
    /// [default: the file's run.queue_guard]
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = options::queue_guard)]
    pub queue_guard: Option<u32>,
    /// Also draw each policy's answer and its bracket as an SVG figure into FILE
    /// [default: no figure]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// Warm-up and measured arrivals, the runaway guard, and how results are read.
#[derive(Debug, Args)]
#[command(next_help_heading = "Run length and precision")]
pub struct RunArgs {
    /// Measured arrivals per replication, 2 to 10^12 (accepts 1e6 or 1_000_000)
    /// [default: 1000000]
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = options::requests)]
    pub requests: Option<u64>,
    /// Arrivals simulated before measuring starts, 0 to 10^12, or `auto`: each replication first
    /// runs --requests arrivals from empty, MSER-5 reads where its start-up transient ends, and
    /// the replication is run again measuring --requests arrivals from there (twice the work)
    /// [default: 100000]
    #[arg(long, allow_hyphen_values = true, value_name = "N|auto", value_parser = options::warmup)]
    pub warmup: Option<WarmupArg>,
    /// Stop a replication when any queue exceeds N requests, 1 to 10^9 (bounds memory on
    /// unstable runs; a stopped row is marked, counted in `stopped`, and a warning goes to stderr)
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "N",
        default_value = "100000",
        value_parser = options::queue_guard
    )]
    pub queue_guard: u32,
    /// Keep doubling a row's --requests until its mean_ci95 <= R x mean and it is steady (R
    /// from 1e-6 to 0.5, e.g. 0.01 for +-1%); needs --seeds >= 2; adds a `requests` column
    /// [default: off: --requests as given]
    #[arg(long, allow_hyphen_values = true, value_name = "R", value_parser = options::parse_precision)]
    pub precision: Option<f64>,
    /// With --precision: the most measured arrivals per replication a row may double to, then
    /// it is reported as not meeting the target [default: 100000000, or --requests if larger]
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub max_requests: Option<String>,
    /// Sojourn percentiles to add as columns, comma-separated, each above 0 and below 100 (e.g.
    /// 50,90,99.9 gives p50,p90,p99.9); p99 is always reported [default: none beyond p99]
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", value_parser = options::quantiles)]
    pub quantiles: Option<Quantiles>,
}

/// The policy the others are compared with (`homo`, `hetero`, `stale`).
#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// Compare every policy with POLICY (one of --policies) in the same scenario: adds
    /// mean_vs_base, p99_vs_base (relative differences, -0.25 = 25% lower) and their paired 95%
    /// half-widths over replications [default: no comparison]
    #[arg(long, allow_hyphen_values = true, value_name = "POLICY", value_parser = args::baseline)]
    pub baseline: Option<Baseline>,
}

/// `lbsim bins`
#[derive(Debug, Args)]
pub struct BinsArgs {
    /// Numbers of balls (= bins), comma-separated, each 1 to 10^8
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "LIST",
        default_value = "1000,10000,100000,1000000",
        value_parser = args::bins_n
    )]
    pub n: List<u64>,
    /// Choices per ball, comma-separated, each 1 to 64 and at most the smallest --n
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", default_value = "1,2,3,4", value_parser = args::bins_d)]
    pub d: List<u32>,
    /// Variants, comma-separated: `uniform` (d independent choices) and `left` (always-go-left,
    /// run for d >= 2 only)
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", default_value = "uniform,left", value_parser = args::variants)]
    pub variants: List<Variant>,
}

/// `lbsim fixed`
#[derive(Debug, Args)]
pub struct FixedArgs {
    /// Servers (all of rate 1), 1 to 10^6
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value = "1000", value_parser = args::fixed_n)]
    pub n: usize,
    /// Utilisations, comma-separated, each with 0 < lambda < 1 (fraction of capacity)
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", default_value = "0.9", value_parser = args::lambda)]
    pub lambda: List<f64>,
    /// Choices, comma-separated, each 1 to 100 and at most --n (1 is random, 2 is p2c)
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", default_value = "1,2,3", value_parser = args::fixed_d)]
    pub d: List<u32>,
    /// Also draw the simulated s_i over the fixed-point lines (log axis) as an SVG figure into
    /// FILE, written as --out writes (`-` is stdout when --out names a file) [default: no figure]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print this run as a scenario file for `lbsim run`, which gives the same mean sojourn and
    /// interval per (d, lambda) (d = 1 is `random`, d = N is `pNc`; the levels s_i are fixed's
    /// own) instead of running it [default: run it]
    #[arg(long)]
    pub print_scenario: bool,
    /// Warm-up and measured arrivals [defaults: --requests 5000000 --warmup 500000]
    #[command(flatten)]
    pub run: RunArgs,
}

/// `lbsim homo`
#[derive(Debug, Args)]
pub struct HomoArgs {
    /// Servers (all of rate 1), 1 to 10^6
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value = "100", value_parser = args::servers)]
    pub servers: usize,
    /// Utilisations, comma-separated, each with 0 < load < 1 (fraction of capacity)
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "LIST",
        default_value = "0.5,0.7,0.8,0.9,0.95,0.99",
        value_parser = args::loads
    )]
    pub loads: List<f64>,
    /// Policies, comma-separated (the live-information rows of the policy table)
    #[arg(
        long,
        help = LIVE_POLICIES_HELP,
        allow_hyphen_values = true,
        value_name = "LIST",
        default_value = "random,rr,p2c,p2c-repl,p3c,jsq",
        value_parser = args::live_policies
    )]
    pub policies: List<PolicyKind>,
    /// Peak-EWMA decay time constant, > 0, in mean service times (p2c-pewma only)
    #[arg(long, allow_hyphen_values = true, value_name = "T", default_value = "10", value_parser = args::tau)]
    pub tau: f64,
    /// Also draw the mean and p99 sojourn against the load, one line per policy with its 95%
    /// interval as a band, as an SVG figure into FILE, written as --out writes (`-` is stdout
    /// when --out names a file) [default: no figure]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print this run as a scenario file for `lbsim run` (which then gives the same numbers)
    /// instead of running it [default: run it]
    #[arg(long)]
    pub print_scenario: bool,
    /// Comparison with a baseline policy.
    #[command(flatten)]
    pub baseline: BaselineArgs,
    /// Warm-up and measured arrivals [defaults: --requests 1000000 --warmup 100000]
    #[command(flatten)]
    pub run: RunArgs,
}

/// `lbsim hetero`
#[derive(Debug, Args)]
pub struct HeteroArgs {
    /// Slow servers (listed first), 0 to 10^6
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value = "20", value_parser = args::slow)]
    pub slow: usize,
    /// Service rate of a slow server, 10^-6 to 10^6, in requests per mean service time of a
    /// rate-1 server
    #[arg(long, allow_hyphen_values = true, value_name = "RATE", default_value = "0.5", value_parser = args::slow_rate)]
    pub slow_rate: f64,
    /// Fast servers, 0 to 10^6 (at least one server in all)
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value = "80", value_parser = args::fast)]
    pub fast: usize,
    /// Service rate of a fast server, 10^-6 to 10^6, same unit as --slow-rate
    #[arg(long, allow_hyphen_values = true, value_name = "RATE", default_value = "1", value_parser = args::fast_rate)]
    pub fast_rate: f64,
    /// Utilisation of the total capacity, 0 < load < 1 (arrival rate = load x sum of rates)
    #[arg(long, allow_hyphen_values = true, value_name = "LOAD", default_value = "0.8", value_parser = args::one_load)]
    pub load: f64,
    /// Policies, comma-separated (the live-information rows of the policy table)
    #[arg(
        long,
        help = LIVE_POLICIES_HELP,
        allow_hyphen_values = true,
        value_name = "LIST",
        default_value = "random,rr,swrr,p2c,jsq,p2c-pewma",
        value_parser = args::live_policies
    )]
    pub policies: List<PolicyKind>,
    /// Peak-EWMA decay time constant, > 0, in mean service times of a rate-1 server
    #[arg(long, allow_hyphen_values = true, value_name = "T", default_value = "10", value_parser = args::tau)]
    pub tau: f64,
    /// Also draw each policy's mean and p99 sojourn as bars with their 95% intervals, as an SVG
    /// figure into FILE, written as --out writes (`-` is stdout when --out names a file)
    /// [default: no figure]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print this run as a scenario file for `lbsim run` (which then gives the same numbers)
    /// instead of running it [default: run it]
    #[arg(long)]
    pub print_scenario: bool,
    /// Comparison with a baseline policy.
    #[command(flatten)]
    pub baseline: BaselineArgs,
    /// Warm-up and measured arrivals [defaults: --requests 1000000 --warmup 100000]
    #[command(flatten)]
    pub run: RunArgs,
}

/// `lbsim stale`
#[derive(Debug, Args)]
pub struct StaleArgs {
    /// Servers (all of rate 1), 1 to 10^6
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value = "100", value_parser = args::servers)]
    pub servers: usize,
    /// Utilisation, 0 < load < 1 (fraction of capacity)
    #[arg(long, allow_hyphen_values = true, value_name = "LOAD", default_value = "0.9", value_parser = args::one_load)]
    pub load: f64,
    /// Board periods T, comma-separated, in mean service times: 0 (live queue lengths) or at
    /// least 0.001
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "LIST",
        default_value = "0,0.5,1,2,5,10,20,50",
        value_parser = args::periods
    )]
    pub periods: List<f64>,
    /// Policies, comma-separated (the bulletin-board rows of the policy table)
    #[arg(
        long,
        help = BOARD_POLICIES_HELP,
        allow_hyphen_values = true,
        value_name = "LIST",
        default_value = "random,p2c,p3c,jsq,jsq-local",
        value_parser = args::board_policies
    )]
    pub policies: List<PolicyKind>,
    /// Also draw the mean sojourn against the board period, one line per policy, as an SVG
    /// figure into FILE, written as --out writes (`-` is stdout when --out names a file)
    /// [default: no figure]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print this run as a scenario file for `lbsim run` (which then gives the same numbers)
    /// instead of running it [default: run it]
    #[arg(long)]
    pub print_scenario: bool,
    /// Comparison with a baseline policy.
    #[command(flatten)]
    pub baseline: BaselineArgs,
    /// Warm-up and measured arrivals [defaults: --requests 1000000 --warmup 100000]
    #[command(flatten)]
    pub run: RunArgs,
}

/// `lbsim swrr`
#[derive(Debug, Args)]
pub struct SwrrArgs {
    /// Print one cycle of the smooth algorithm for these integer weights, each 1 to 10^6
    /// (e.g. 5,1,1; the cycle, the sum of the weights, times the servers at most 10^6)
    #[arg(long, allow_hyphen_values = true, value_name = "WEIGHTS", conflicts_with = "weights", value_parser = args::trace)]
    pub trace: Option<Weights>,
    /// Weight sets to compare, separated by `;`, each a comma-separated list of two or more
    /// integers 1 to 10^6 (cycle times servers at most 10^8) [default: 5,1,1; 1,1,1; 3,2,1; 4,3,2,1; 10,1;
    /// 100,1,1; 1,2; and 20x1 + 80x2 (100 servers)]
    #[arg(long, allow_hyphen_values = true, value_name = "SETS", value_parser = args::weight_sets)]
    pub weights: Option<List<Vec<u64>>>,
}

/// `lbsim hash`
#[derive(Debug, Args)]
pub struct HashArgs {
    /// Servers n, 1 to 10^6 (up to 65536 with maglev); the moved fraction adds server n to them
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value = "100", value_parser = args::servers)]
    pub servers: usize,
    /// Keys placed: the integers 0..N, each hashed by xxHash64 of its 8 little-endian bytes; 1 to
    /// 10^8 (accepts 1e6 or 1_000_000)
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value = "1e6", value_parser = args::keys)]
    pub keys: u64,
    /// Virtual nodes (points) per server on the ring, comma-separated, each 1 or more, with
    /// (servers + 1) x vnodes at most 10^7; ring rows only
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", default_value = "1,10,100,1000", value_parser = args::vnodes)]
    pub vnodes: List<usize>,
    /// Placements, comma-separated: `ring` (Karger's ring with --vnodes points per server, as
    /// Envoy's ring_hash), `maglev` (Maglev's table of 65537 entries, as Envoy's maglev) and
    /// `modulo` (hash mod n)
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "LIST",
        default_value = "ring,maglev,modulo",
        value_parser = args::hash_methods
    )]
    pub methods: List<HashMethod>,
    /// Also place the keys on each ring with bounded loads (HAProxy's hash-balance-factor, as a
    /// factor: 1.25 for 125): keys are placed one after another, each counting as one request in
    /// flight, and a key whose server already holds its share of ceil((placed + 1) x F) goes to
    /// the next server clockwise that does not; adds `ring-bounded` rows. This is how a bounded
    /// ring spreads a static key set [default: off]
    #[arg(long, allow_hyphen_values = true, value_name = "F", value_parser = args::balance)]
    pub balance: Option<f64>,
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
