//! Regenerates every table of the article into `results/`, with the article's published numbers
//! and the closed forms beside lbsim's.
//!
//! Each experiment runs from the exact command line printed above its table, parsed by the same
//! code as the binary, so any table can be re-made by hand. Everything written is deterministic:
//! the test suite regenerates it and compares it byte for byte with the committed files.

use std::fmt::Write as _;

use serde::Serialize;

use crate::cli::Cli;
use crate::error::UsageError;
use crate::experiment::Config;
use crate::experiment::bins::BinsRow;
use crate::experiment::bins::Variant;
use crate::experiment::fixed::FixedRow;
use crate::experiment::hash::HashRow;
use crate::experiment::hetero::HeteroRow;
use crate::experiment::homo::HomoRow;
use crate::experiment::stale::StaleRow;
use crate::experiment::subset::SubsetRow;
use crate::experiment::swrr::{SmoothnessRow, SwrrRows, TraceRow};
use crate::experiment::{self, Progress, Reading, Results, Rows, VsBaseline};
use crate::output::{Csv, Exporter, Report, Table, plot, table::format_number};
use crate::theory;

/// The reproduced experiments: output file stem and the command line that produces it.
pub const COMMANDS: [(&str, &str); 18] = [
    ("bins", "lbsim bins"),
    ("fixed", "lbsim fixed"),
    ("homo", "lbsim homo --seeds 5 --baseline p2c"),
    ("hetero", "lbsim hetero"),
    ("hetero_paired", "lbsim hetero --policies swrr,p2c,p2c-pewma --seeds 40 --baseline p2c"),
    ("stale", "lbsim stale --baseline random"),
    ("swrr", "lbsim swrr"),
    ("swrr_trace", "lbsim swrr --trace 5,1,1"),
    ("subset", "lbsim subset"),
    ("subset_sweep", "lbsim subset --subsets 3,10,30,60,90,150"),
    ("hash", "lbsim hash"),
    ("fleet", "lbsim run examples/scenarios/fleet.toml"),
    ("fleet_subsets", "lbsim run examples/scenarios/subsets.toml"),
    ("fleet_hashing", "lbsim run examples/scenarios/hashing.toml"),
    ("limit", "lbsim limit"),
    (
        "hetero_feedback",
        "lbsim hetero --policies swrr,p2c,jsq,p2c-pewma,wrr-orca,prequal,c3,least-latency",
    ),
    (
        "slow_backend",
        "lbsim run examples/scenarios/slow-backend.toml --series /dev/null --series-window 10",
    ),
    (
        "slow_backend_fleet",
        "lbsim run examples/scenarios/slow-backend-fleet.toml --series /dev/null --series-window 10",
    ),
];

/// A generated file: its name inside `results/` and its bytes.
pub type Artifact = (String, Vec<u8>);

/// Parses and validates one command line exactly as the binary does.
fn parse(line: &str, threads: Option<usize>) -> Result<Config, UsageError> {
    let mut args: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    if let Some(t) = threads {
        args.extend(["--threads".to_string(), t.to_string()]);
    }
    let cli = <Cli as clap::Parser>::try_parse_from(&args)
        .map_err(|e| UsageError::Other(e.to_string().lines().next().unwrap_or_default().into()))?;
    Config::from_cli(&cli)
}

/// Runs one command line through the same parsing and validation as the binary; returns its
/// typed rows and its report.
pub fn run_command(
    line: &str,
    threads: Option<usize>,
    progress: Progress,
) -> Result<Results, UsageError> {
    Ok(experiment::execute(&parse(line, threads)?, progress))
}

/// Total replications of the reproduction (for a progress bar).
pub fn replications() -> u64 {
    COMMANDS
        .iter()
        .filter_map(|(_, line)| parse(line, None).ok())
        .map(|cfg| experiment::replications(&cfg))
        .sum()
}

/// One command of [`COMMANDS`], run: its output file stem, its command line and what it gave.
pub struct Ran {
    /// The output file stem.
    pub stem: &'static str,
    /// The command line.
    pub line: &'static str,
    /// Its typed rows and report.
    pub results: Results,
}

impl Ran {
    /// Runs the command of [`COMMANDS`] whose output file stem is `stem`.
    pub fn command(
        stem: &str,
        threads: Option<usize>,
        progress: Progress,
    ) -> Result<Ran, UsageError> {
        let &(stem, line) = COMMANDS
            .iter()
            .find(|(s, _)| *s == stem)
            .ok_or_else(|| UsageError::Other(format!("{stem}: not a reproduced command")))?;
        Ok(Ran { stem, line, results: run_command(line, threads, progress)? })
    }

    /// The command's own files: its CSV, and its figure if it draws one.
    pub fn files(&self) -> Vec<Artifact> {
        let mut files = vec![(format!("{}.csv", self.stem), Csv.serialize(&self.results.report))];
        if let Some(svg) = self.results.rows.figure() {
            files.push((format!("{}.svg", self.stem), svg.into_bytes()));
        }
        files
    }
}

/// Runs every experiment; returns the files of `results/` (CSV per command, SVG figures and
/// `results.txt`). `threads` never changes the bytes.
pub fn generate(threads: Option<usize>, progress: Progress) -> Result<Vec<Artifact>, UsageError> {
    let ran = COMMANDS
        .iter()
        .map(|(stem, _)| Ran::command(stem, threads, progress))
        .collect::<Result<Vec<_>, _>>()?;
    let mut files: Vec<Artifact> = ran.iter().flat_map(Ran::files).collect();
    files.extend(summary(&ran.iter().collect::<Vec<_>>()));
    Ok(files)
}

/// The files made from every command together: `results.txt` (each command's table, then the
/// article, the closed forms and the books beside lbsim) and the slow-backend figure. `ran` holds
/// every command of [`COMMANDS`], in their order.
pub fn summary(ran: &[&Ran]) -> Vec<Artifact> {
    let mut files = Vec::new();
    let mut text = String::from(
        "lbsim results: every table of the article, regenerated by reproduce/run.sh.\n\
         Times are in mean service times of a rate-1 server. The test suite regenerates this\n\
         file and the CSVs beside it and compares them byte for byte.\n",
    );
    for r in ran {
        let _ = write!(text, "\n== {} ==\n$ {}\n", r.stem, r.line);
        text += &String::from_utf8(Table.serialize(&r.results.report)).expect("tables are UTF-8");
    }
    let r = Reports::of(ran);
    text += "\n== article vs lbsim ==\n";
    text += "Each number the article publishes beside lbsim's. ci95 is the half-width of lbsim's 95%\n\
             Student-t interval over replications; 'inside' means the article's number lies in it,\n\
             'outside' that it does not: a finding about the article's number at this precision, not\n\
             a failure. Ratios between policies are relative differences (-0.25 = 25% lower) with\n\
             paired intervals (every policy sees the same requests), from enough replications that\n\
             the interval is narrower than the rounding of the article's figure. A verdict that rests\n\
             on a row that is not steady says so.\n";
    text += &String::from_utf8(Table.serialize(&Report::new("article", &(), &article_checks(&r))))
        .expect("UTF-8");
    text += "\n== theory vs lbsim ==\n";
    text += "Closed forms beside the simulation: M/M/1 for random, E_k/M/1 (k = 100) for rr, the\n\
             mean-field T_d (n -> inf) for p2c and p3c, the M/M/n central queue as a lower bound for\n\
             jsq. 'inside' = within lbsim's 95% interval; '(not steady)' marks rows whose measured\n\
             window still holds the start-up transient or a trend (MSER-5), so their numbers depend on\n\
             the run length.\n";
    text += &String::from_utf8(Table.serialize(&Report::new("theory", &(), &theory_checks(&r))))
        .expect("UTF-8");
    text += "\n== subsetting vs the SRE book ==\n";
    text += "The book's figures (ch. 20, from one calculation each) beside lbsim's: the median over\n\
             seeds and, in brackets, the smallest and largest over seeds. Ratios are a backend's\n\
             connections over the mean. For random subsets the binomial gives E[cv^2] = (N-S)/(CS)\n\
             exactly (C clients, N backends, S per client); its square root is printed beside cv.\n";
    text += &String::from_utf8(Table.serialize(&Report::new("subset", &(), &subset_checks(&r))))
        .expect("UTF-8");
    text += &hash_section(r.hash);
    // ----- the slow-backend experiment -----
    let (section, svg) = slow_backend_section(ran);
    text += &section;
    files.push(("slow_backend.svg".to_string(), svg.into_bytes()));
    files.push(("results.txt".to_string(), text.into_bytes()));
    files
}

/// When the degraded group of `slow-backend.toml` slows down and recovers, and about when its
/// measured arrivals end (1.1M arrivals at 70 per unit time).
const SLOW_T1: f64 = 2000.0;
const SLOW_T2: f64 = 8000.0;
const SLOW_END: f64 = 15_700.0;

/// What each policy of the slow-backend experiment needs from servers and what it costs.
fn slow_backend_cost(policy: &str) -> &'static str {
    match policy.split([':', ' ']).next().unwrap_or_default() {
        "random" | "rr" => "nothing",
        "p2c" | "jsq" => "live queue lengths of the farm",
        "least-request" => "own in-flight counts",
        "p2c-pewma" | "least-latency" => "response times",
        "wrr-orca" => "a load report per server per 10 units",
        "prequal" => "3 probes per request",
        "c3" => "queue and service time on each response",
        _ => "",
    }
}

/// The slow-backend table (results.txt) and its figure, from the two slow-backend runs.
fn slow_backend_section(ran: &[&Ran]) -> (String, String) {
    // The fleet's rows are marked, so that a policy run both ways keeps two names.
    let owned: Vec<experiment::run::RunRow> = ran
        .iter()
        .filter(|r| r.stem.starts_with("slow_backend"))
        .flat_map(|Ran { stem, results, .. }| match &results.rows {
            Rows::Run(r) => r
                .iter()
                .map(|row| {
                    let mut row = row.clone();
                    if stem.ends_with("_fleet") {
                        row.policy += " (16 clients)";
                    }
                    row
                })
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .collect();
    let rows: Vec<&experiment::run::RunRow> = owned.iter().collect();
    let adapt = experiment::adapt::adaptation(&rows, 0, SLOW_T1, SLOW_T2, SLOW_END);
    #[derive(Serialize)]
    struct Line<'a> {
        policy: &'a str,
        mean: String,
        p99: String,
        p99_slow: String,
        share_before: String,
        share_slow: String,
        adapt: String,
        recover: String,
        needs: &'a str,
    }
    let opt = |x: Option<f64>| x.map_or("-".to_string(), f);
    let lines: Vec<Line> = adapt
        .iter()
        .map(|a| Line {
            policy: &a.policy,
            mean: f(a.mean),
            p99: f(a.p99),
            p99_slow: f(a.p99_slow),
            share_before: format!("{:.4}", a.share_before),
            share_slow: format!("{:.4}", a.share_slow),
            adapt: opt(a.adapt),
            recover: opt(a.recover),
            needs: slow_backend_cost(&a.policy),
        })
        .collect();
    let mut text = String::from("\n== slow backend ==\n");
    text += "Ten of 100 servers (the degraded group) drop to rate 0.2 at t = 2000 and recover at\n\
             t = 8000; load 0.7, 5 replications of 1M measured arrivals after 100k (from t = 1430\n\
             to about 15,700). Shares are the degraded group's fraction of the requests (0.1 is its\n\
             fair share): over [1500, 2000) and over the last quarter of the slow period. p99_slow:\n\
             the 99th percentile of the requests that arrived while it was slow (from 10-unit\n\
             windows, to 2.3%). adapt: time from t = 2000 to the end of the first 10-unit window\n\
             whose share has made 90% of the move to share_slow ('-': it moves by less than 0.01);\n\
             recover: the same after t = 8000. Rows marked (16 clients) are slow-backend-fleet.toml:\n\
             16 clients, each knowing only its own requests in flight and learning only from its own\n\
             responses, its servers' reports and its own probes; the others are one balancer.\n\
             c3 ranks the servers and limits its rate to each (cubic rate control, a backlog at the\n\
             client); c3:rate_control=false ranks only. Figure: slow_backend.svg.\n";
    text += &String::from_utf8(Table.serialize(&Report::new("slow", &(), &lines))).expect("UTF-8");
    let fastest = adapt.iter().filter_map(|a| a.adapt).fold(f64::INFINITY, f64::min);
    if fastest.is_finite() {
        let names: Vec<&str> =
            adapt.iter().filter(|a| a.adapt == Some(fastest)).map(|a| a.policy.as_str()).collect();
        let _ = writeln!(
            text,
            "Fastest to adapt: {} ({} time units), each at the cost in its `needs` column.",
            names.join(", "),
            f(fastest)
        );
    }
    let series: Vec<(String, Vec<(f64, f64)>)> = rows
        .iter()
        .filter_map(|r| {
            let p = r.series.as_ref()?.load().expect("the pooled series reads back");
            Some((r.policy.clone(), experiment::adapt::share_line(&p, 0)))
        })
        .collect();
    let svg = plot::share_figure(
        "Slow backend: share of requests to the 10 slowed servers (slow from 2000 to 8000)",
        &series,
        &[SLOW_T1, SLOW_T2],
    );
    (text, svg)
}

/// Up to `max` readable descriptions of the lines where `got` differs from `expected`.
pub fn first_differences(expected: &[u8], got: &[u8], max: usize) -> Vec<String> {
    let (e, g) = (String::from_utf8_lossy(expected), String::from_utf8_lossy(got));
    let (el, gl): (Vec<&str>, Vec<&str>) = (e.lines().collect(), g.lines().collect());
    let mut out = Vec::new();
    for i in 0..el.len().max(gl.len()) {
        let (a, b) = (el.get(i).copied(), gl.get(i).copied());
        if a != b {
            out.push(format!(
                "line {}:\n  committed:   {}\n  regenerated: {}",
                i + 1,
                a.unwrap_or("<missing>"),
                b.unwrap_or("<missing>")
            ));
            if out.len() == max {
                break;
            }
        }
    }
    if out.is_empty() && expected != got {
        out.push("the files differ only in line endings or a final newline".into());
    }
    out
}

/// The typed rows of every command that the checks read.
struct Reports<'a> {
    bins: &'a [BinsRow],
    fixed: &'a [FixedRow],
    homo: &'a [HomoRow],
    hetero: &'a [HeteroRow],
    paired: &'a [HeteroRow],
    stale: &'a [StaleRow],
    swrr: &'a [SmoothnessRow],
    trace: &'a [TraceRow],
    hash: &'a [HashRow],
    subset: &'a [SubsetRow],
    subset_sweep: &'a [SubsetRow],
}

impl<'a> Reports<'a> {
    /// The rows of each command of [`COMMANDS`], found by output file stem.
    fn of(ran: &[&'a Ran]) -> Reports<'a> {
        let get = |stem: &str| &ran.iter().find(|r| r.stem == stem).expect("ran").results.rows;
        let wrong = |stem: &str| -> ! { panic!("{stem}: not the rows of its command") };
        Reports {
            bins: match get("bins") {
                Rows::Bins(r) => r,
                _ => wrong("bins"),
            },
            fixed: match get("fixed") {
                Rows::Fixed(r) => r,
                _ => wrong("fixed"),
            },
            homo: match get("homo") {
                Rows::Homo(r) => r,
                _ => wrong("homo"),
            },
            hetero: match get("hetero") {
                Rows::Hetero(r) => r,
                _ => wrong("hetero"),
            },
            paired: match get("hetero_paired") {
                Rows::Hetero(r) => r,
                _ => wrong("hetero_paired"),
            },
            stale: match get("stale") {
                Rows::Stale(r) => r,
                _ => wrong("stale"),
            },
            swrr: match get("swrr") {
                Rows::Swrr(SwrrRows::Sets(r)) => r,
                _ => wrong("swrr"),
            },
            trace: match get("swrr_trace") {
                Rows::Swrr(SwrrRows::Trace(r)) => r,
                _ => wrong("swrr_trace"),
            },
            subset: match get("subset") {
                Rows::Subset(r) => r,
                _ => wrong("subset"),
            },
            subset_sweep: match get("subset_sweep") {
                Rows::Subset(r) => r,
                _ => wrong("subset_sweep"),
            },
            hash: match get("hash") {
                Rows::Hash(r) => r,
                _ => wrong("hash"),
            },
        }
    }
}

/// One comparison line.
#[derive(Debug, Serialize)]
struct Check {
    experiment: String,
    quantity: String,
    reference: String,
    lbsim: String,
    ci95: String,
    verdict: String,
}

/// The first of `rows` that `is` accepts; `what` names it if there is none.
fn find<'a, R>(rows: &'a [R], what: &str, is: impl Fn(&R) -> bool) -> &'a R {
    rows.iter().find(|r| is(r)).unwrap_or_else(|| panic!("no row {what}"))
}

/// The differences to the baseline of a row from a command run with `--baseline`.
fn vs_base(reading: &Reading) -> &VsBaseline {
    reading.baseline.as_ref().expect("the command runs with --baseline")
}

fn f(x: f64) -> String {
    format_number(x)
}

fn within(reference: f64, value: f64, ci: Option<f64>) -> String {
    match ci {
        Some(h) if (reference - value).abs() <= h => "inside".into(),
        Some(_) => "outside".into(),
        None => "-".into(),
    }
}

fn yes(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

fn check(
    experiment: &str,
    quantity: &str,
    reference: String,
    lbsim: String,
    ci95: Option<f64>,
    verdict: String,
) -> Check {
    Check {
        experiment: experiment.into(),
        quantity: quantity.into(),
        reference,
        lbsim,
        ci95: ci95.map(f).unwrap_or_else(|| "-".into()),
        verdict,
    }
}

fn article_checks(r: &Reports) -> Vec<Check> {
    let mut out = bins_checks(r);
    out.extend(fixed_checks(r));
    out.extend(hetero_checks(r));
    out.extend(stale_checks(r));
    out.extend(swrr_checks(r));
    out.extend(homo_checks(r));
    out
}

/// Whether an interval is narrower than the rounding of the article's figure.
fn tight(ci: Option<f64>, rounding: f64) -> String {
    let ok = ci.is_some_and(|c| c < rounding);
    format!(
        "interval {} than the rounding (+-{})",
        if ok { "narrower" } else { "wider" },
        f(rounding)
    )
}

/// bins, n = 10^6: the maximum load with one and two choices.
fn bins_checks(r: &Reports) -> Vec<Check> {
    let mut out = Vec::new();
    for (d, article, ok) in [(1u32, "<= 12", 12.0), (2, "4", 4.0)] {
        let row = find(r.bins, &format!("bins n=10^6 d={d} uniform"), |b| {
            b.n == 1_000_000 && b.d == d && b.variant == Variant::Uniform
        });
        let m = row.max_load_median;
        let verdict = if d == 1 { yes(m <= ok) } else { yes(m == ok) };
        out.push(check(
            "bins n=10^6",
            &format!("max load, d={d} (median)"),
            article.into(),
            f(m),
            None,
            verdict,
        ));
    }
    out
}

/// fixed, d = 2, lambda = 0.9, n = 1000: s_i simulated and from the fixed point.
fn fixed_checks(r: &Reports) -> Vec<Check> {
    let mut out = Vec::new();
    for (i, sim, theory) in [(4, 0.2067, 0.2059), (6, 0.00149, 0.00131)] {
        let row = find(r.fixed, &format!("fixed d=2 lambda=0.9 i={i}"), |x| {
            x.d == 2 && x.lambda == 0.9 && x.i == i
        });
        let (s, ci) = (row.sim, row.sim_ci95);
        out.push(check(
            "fixed d=2 lambda=0.9",
            &format!("s_{i} simulated"),
            f(sim),
            f(s),
            ci,
            within(sim, s, ci),
        ));
        let t = row.theory;
        let same = format!("{:.3e}", t) == format!("{:.3e}", theory);
        out.push(check(
            "fixed d=2 lambda=0.9",
            &format!("s_{i} fixed point"),
            f(theory),
            f(t),
            None,
            format!("same to 4 digits: {}", yes(same)),
        ));
    }
    out
}

/// hetero: absolute figures and ratios from the 40-replication paired run (baseline p2c), the
/// peak queues from the article's own setup (5 replications).
fn hetero_checks(r: &Reports) -> Vec<Check> {
    let mut out = Vec::new();
    let prow = |p: &str| find(r.paired, &format!("hetero_paired {p}"), |x| x.policy == p);
    for (p, article) in [("p2c", 11.46), ("p2c-pewma", 12.07)] {
        let (v, ci) = (prow(p).p99, prow(p).p99_ci95);
        out.push(check(
            "hetero (40 reps)",
            &format!("{p} p99"),
            f(article),
            f(v),
            ci,
            within(article, v, ci),
        ));
    }
    for (p, article) in [("p2c", 6.0), ("p2c-pewma", 22.0)] {
        let v = f64::from(find(r.hetero, &format!("hetero {p}"), |x| x.policy == p).max_queue);
        out.push(check(
            "hetero",
            &format!("{p} peak queue"),
            f(article),
            f(v),
            None,
            format!("a maximum over 5 runs; differs by {}", v - article),
        ));
    }
    // swrr's p99 over p2c's, minus one, with its paired interval; "p2c is 23% lower" is
    // 1 - 1/(1 + x), whose interval follows by the delta method (derivative 1/(1 + x)^2).
    let swrr = vs_base(&prow("swrr").reading);
    let (x, x_ci) = (swrr.p99_vs_base, swrr.p99_vs_base_ci95);
    let lower = 1.0 - 1.0 / (1.0 + x);
    let lower_ci = x_ci.map(|c| c / (1.0 + x).powi(2));
    out.push(check(
        "hetero (40 reps)",
        "p2c p99 below swrr's",
        "0.23".into(),
        f(lower),
        lower_ci,
        format!("{}; {}", within(0.23, lower, lower_ci), tight(lower_ci, 0.005)),
    ));
    out.push(check(
        "hetero (40 reps)",
        "swrr p99 above p2c's",
        "about 0.30".into(),
        f(x),
        x_ci,
        format!("{}; {}", within(0.30, x, x_ci), tight(x_ci, 0.025)),
    ));
    let pewma_vs = vs_base(&prow("p2c-pewma").reading);
    let (pewma, pewma_ci) = (pewma_vs.p99_vs_base, pewma_vs.p99_vs_base_ci95);
    let article = 12.07 / 11.46 - 1.0;
    out.push(check(
        "hetero (40 reps)",
        "p2c-pewma p99 above p2c's",
        format!("{} (12.07 / 11.46)", f(article)),
        f(pewma),
        pewma_ci,
        within(article, pewma, pewma_ci),
    ));
    out
}

/// stale, n = 100, lambda = 0.9: random's figures and how the others degrade with the period.
fn stale_checks(r: &Reports) -> Vec<Check> {
    let mut out = Vec::new();
    let srow = |t: f64, p: &str| {
        find(r.stale, &format!("stale period={t} {p}"), |x| x.period == t && x.policy == p)
    };
    let random = srow(0.0, "random");
    for (c, v, h, article) in [
        ("mean", random.mean, random.mean_ci95, 10.00),
        ("p99", random.p99, random.p99_ci95, 46.56),
    ] {
        out.push(check(
            "stale n=100 lambda=0.9",
            &format!("random {c}"),
            f(article),
            f(v),
            h,
            within(article, v, h),
        ));
    }
    let mean = |t: f64, p: &str| srow(t, p).mean;
    // A verdict on rows that are not steady says so.
    let on = |verdict: String, rows: &[(f64, &str)]| {
        let unsteady: Vec<String> = rows
            .iter()
            .filter(|&&(t, p)| !srow(t, p).reading.steady)
            .map(|(t, p)| format!("{p} at T={t}"))
            .collect();
        if unsteady.is_empty() {
            verdict
        } else {
            format!("{verdict}, but rests on rows not steady: {}", unsteady.join(", "))
        }
    };
    // jsq over random, paired (stale runs with --baseline random).
    let vs_random = |t: f64| {
        let b = vs_base(&srow(t, "jsq").reading);
        (1.0 + b.mean_vs_base, b.mean_vs_base_ci95)
    };
    let (at5, at5_ci) = vs_random(5.0);
    out.push(check(
        "stale",
        "jsq / random mean at T=5",
        "about 1.2".into(),
        f(at5),
        at5_ci,
        on(
            format!("{}; {}", within(1.2, at5, at5_ci), tight(at5_ci, 0.05)),
            &[(5.0, "jsq"), (5.0, "random")],
        ),
    ));
    let (at50, at50_ci) = vs_random(50.0);
    out.push(check(
        "stale",
        "jsq / random mean at T=50",
        "tens of times".into(),
        f(at50),
        at50_ci,
        on(yes(at50 - at50_ci.unwrap_or(0.0) >= 10.0), &[(50.0, "jsq"), (50.0, "random")]),
    ));
    let (p2c, p3c, jsq) = (mean(50.0, "p2c"), mean(50.0, "p3c"), mean(50.0, "jsq"));
    out.push(check(
        "stale",
        "d=2 degrades slowest (T=50)",
        "p2c < p3c < jsq".into(),
        format!("{} < {} < {}", f(p2c), f(p3c), f(jsq)),
        None,
        on(yes(p2c < p3c && p3c < jsq), &[(50.0, "p2c"), (50.0, "p3c"), (50.0, "jsq")]),
    ));
    out
}

/// swrr: one cycle of weights 5,1,1 and the smooth algorithm's deviation.
fn swrr_checks(r: &Reports) -> Vec<Check> {
    let mut out = Vec::new();
    let seq: Vec<&str> = r.trace.iter().map(|row| row.selected.as_str()).collect();
    let seq = seq.join(" ");
    out.push(check(
        "swrr 5,1,1",
        "one cycle",
        "a a b a c a a".into(),
        seq.clone(),
        None,
        yes(seq == "a a b a c a a"),
    ));
    let last = r.trace.last().map_or("?".into(), |row| {
        row.after.iter().map(i64::to_string).collect::<Vec<_>>().join(" ")
    });
    out.push(check(
        "swrr 5,1,1",
        "state after one cycle",
        "0 0 0".into(),
        last.clone(),
        None,
        yes(last == "0 0 0"),
    ));
    let smooth_max = r
        .swrr
        .iter()
        .filter(|row| row.algorithm == "smooth")
        .map(|row| row.max_deviation)
        .fold(0.0, f64::max);
    out.push(check(
        "swrr sets",
        "smooth max deviation",
        "< 1".into(),
        f(smooth_max),
        None,
        yes(smooth_max < 1.0),
    ));
    out
}

/// homo: the article's qualitative claims.
fn homo_checks(r: &Reports) -> Vec<Check> {
    let mut out = Vec::new();
    let hm = r.homo;
    let loads: Vec<f64> = {
        let mut v: Vec<f64> = hm.iter().map(|row| row.load).collect();
        v.dedup();
        v
    };
    let hrow = |load: f64, p: &str| {
        find(hm, &format!("homo load={load} {p}"), |x| x.load == load && x.policy == p)
    };
    // p2c-repl against p2c, paired (homo runs with --baseline p2c): the largest gap over loads.
    let (gap, gap_ci) = loads
        .iter()
        .map(|&l| {
            let b = vs_base(&hrow(l, "p2c-repl").reading);
            (b.mean_vs_base, b.mean_vs_base_ci95)
        })
        .fold((0.0f64, None), |best, (g, ci)| if g.abs() > best.0.abs() { (g, ci) } else { best });
    let real = gap_ci.is_some_and(|ci| gap.abs() > ci);
    out.push(check(
        "homo n=100",
        "p2c-repl vs p2c, largest mean gap",
        "nearly identical".into(),
        format!("{:+.2}%", 100.0 * gap),
        gap_ci.map(|c| 100.0 * c),
        format!(
            "{}: under 1%{}",
            yes(gap.abs() < 0.01),
            if real {
                ", though the interval (in %) excludes 0: p2c-repl is measurably worse"
            } else {
                ""
            }
        ),
    ));
    let jsq_best = loads.iter().all(|&l| {
        hm.iter()
            .filter(|row| row.load == l)
            .all(|row| row.policy == "jsq" || row.mean > hrow(l, "jsq").mean)
    });
    out.push(check(
        "homo n=100",
        "jsq best at every load",
        "yes".into(),
        yes(jsq_best),
        None,
        yes(jsq_best),
    ));
    out
}

fn theory_checks(r: &Reports) -> Vec<Check> {
    let mut out = Vec::new();
    for row in r.homo {
        let load = row.load;
        let policy = row.policy.as_str();
        let n = 100;
        let name = format!("homo load={}", f(load));
        let note = |v: String| if row.reading.steady { v } else { format!("{v} (not steady)") };
        let (mean, mci) = (row.mean, row.mean_ci95);
        let (p99, pci) = (row.p99, row.p99_ci95);
        match policy {
            "random" | "rr" => {
                let (model, t, q) = if policy == "random" {
                    ("M/M/1", theory::mm1_mean(load), theory::mm1_quantile(load, 0.99))
                } else {
                    ("E_k/M/1", theory::ekm1_mean(n, load), theory::ekm1_quantile(n, load, 0.99))
                };
                for (stat, want, got, ci) in [("mean", t, mean, mci), ("p99", q, p99, pci)] {
                    let quantity = format!("{policy} {stat} vs {model}");
                    let verdict = note(within(want, got, ci));
                    out.push(check(&name, &quantity, f(want), f(got), ci, verdict));
                }
            }
            "p2c" | "p3c" => {
                let d = if policy == "p2c" { 2 } else { 3 };
                let t = theory::fixed_point_mean(load, d);
                out.push(check(
                    &name,
                    &format!("{policy} mean vs T_{d} (n -> inf)"),
                    f(t),
                    f(mean),
                    mci,
                    note(format!(
                        "{}; {:+.1}% at n = 100",
                        within(t, mean, mci),
                        100.0 * (mean / t - 1.0)
                    )),
                ));
            }
            "jsq" => {
                let b = theory::mmn_mean(n, load);
                // Consistent with the bound when the interval reaches it.
                let ok = mean + mci.unwrap_or(0.0) >= b;
                let verdict = if mean >= b {
                    "above the bound".into()
                } else if ok {
                    "at the bound, within noise".into()
                } else {
                    "below the bound".to_string()
                };
                out.push(check(
                    &name,
                    "jsq mean vs M/M/n bound",
                    format!(">= {}", f(b)),
                    f(mean),
                    mci,
                    note(verdict),
                ));
            }
            _ => {}
        }
    }
    // One mean-sojourn check per (d, lambda): its first level row carries it.
    for row in r.fixed.iter().filter(|row| row.i == 1) {
        let d = row.d;
        let (sim, t, ci) = (row.mean, row.mean_theory, row.mean_ci95);
        let verdict = within(t, sim, ci);
        out.push(check(
            &format!("fixed n=1000 lambda={}", f(row.lambda)),
            &format!("mean vs T_{d}"),
            f(t),
            f(sim),
            ci,
            if row.steady { verdict } else { format!("{verdict} (not steady)") },
        ));
    }
    let random =
        find(r.stale, "stale period=0 random", |x| x.period == 0.0 && x.policy == "random");
    let load = 0.9;
    let (mean, ci) = (random.mean, random.mean_ci95);
    out.push(check(
        "stale (every T)",
        "random mean vs M/M/1",
        f(theory::mm1_mean(load)),
        f(mean),
        ci,
        within(theory::mm1_mean(load), mean, ci),
    ));
    out
}

/// One line of the subsetting section.
#[derive(Debug, Serialize)]
struct SubsetCheck {
    case: String,
    quantity: String,
    book: String,
    lbsim: String,
    seeds_range: String,
    verdict: String,
}

fn subset_checks(r: &Reports) -> Vec<SubsetCheck> {
    use crate::subset::{Spread, Subsetting, random_cv2};
    fn row(rows: &[SubsetRow], size: u64, m: Subsetting) -> &SubsetRow {
        find(rows, &format!("subset {size} {}", m.name()), |x| x.subset == size && x.method == m)
    }
    let range = |row: &SubsetRow, get: fn(&Spread) -> f64| {
        let v: Vec<f64> = row.per_seed.iter().map(get).collect();
        let (lo, hi) =
            (v.iter().copied().fold(f64::MAX, f64::min), v.iter().copied().fold(0.0, f64::max));
        format!("[{}, {}]", f(lo), f(hi))
    };
    let mut out = Vec::new();
    // Random subsetting, 300 clients, 300 backends, 30% (90 backends each): the book's Figure 20-3.
    let random = row(r.subset, 90, Subsetting::Random);
    let case =
        format!("random, {} of {}, {} clients", random.subset, random.backends, random.clients);
    let seeds = random.per_seed.len();
    // The book: "the least loaded backend has just 63% of the average load (57 connections,
    // where the average is 90 connections) and the most loaded has 121% (109 connections)".
    let min_of = (|s: &Spread| s.min_ratio) as fn(&Spread) -> f64;
    let max_of = (|s: &Spread| s.max_ratio) as fn(&Spread) -> f64;
    for (quantity, percent, connections, value, get, low) in [
        ("least loaded / mean", 63, 57, random.min_ratio, min_of, true),
        ("most loaded / mean", 121, 109, random.max_ratio, max_of, false),
    ] {
        let book = f64::from(connections) / 90.0;
        let as_far = random
            .per_seed
            .iter()
            .filter(|s| if low { get(s) <= book } else { get(s) >= book })
            .count();
        let side = if low { "at or below" } else { "at or above" };
        out.push(SubsetCheck {
            case: case.clone(),
            quantity: quantity.into(),
            book: format!("{percent}% ({connections} of 90)"),
            lbsim: f(value),
            seeds_range: range(random, get),
            verdict: format!("{as_far} of {seeds} seeds {side} the book's"),
        });
    }
    // The cv of every random row against the binomial.
    for row in r.subset.iter().filter(|x| x.method == Subsetting::Random) {
        let (c, n, s) = (row.clients as usize, row.backends as usize, row.subset as usize);
        let theory = random_cv2(c, n, s).sqrt();
        out.push(SubsetCheck {
            case: format!("random, {s} of {n}, {c} clients"),
            quantity: "cv".into(),
            book: "-".into(),
            lbsim: f(row.cv),
            seeds_range: range(row, |s| s.cv),
            verdict: format!("sqrt(E[cv^2]) = {}", f(theory)),
        });
    }
    // Deterministic subsetting, 10 of 300: the book's Figure 20-5, "each backend receives
    // exactly the same number of connections".
    let det = row(r.subset_sweep, 10, Subsetting::Deterministic);
    let even = det.per_seed.iter().all(|s| s.min_ratio == 1.0 && s.max_ratio == 1.0);
    out.push(SubsetCheck {
        case: format!("deterministic, 10 of {}, {} clients", det.backends, det.clients),
        quantity: "least / most loaded over mean".into(),
        book: "1 / 1 (exactly equal)".into(),
        lbsim: format!("{} / {}", f(det.min_ratio), f(det.max_ratio)),
        seeds_range: format!("{} / {}", range(det, |s| s.min_ratio), range(det, |s| s.max_ratio)),
        verdict: format!("exactly equal in every seed: {}", yes(even)),
    });
    out
}

/// One line of the consistent-hashing section.
#[derive(Debug, Serialize)]
struct HashCheck {
    method: String,
    vnodes: String,
    max_over_mean: String,
    excess: String,
    claim_eps: String,
    constant: String,
    moved_fraction: String,
    claim_moved: String,
    moved_sd: String,
    moved_verdict: String,
}

/// Seed 003's claims on consistent hashing (§39.9, after Karger et al. 1997) beside `hash`'s rows.
fn hash_section(rows: &[HashRow]) -> String {
    let mut text = String::from("\n== consistent hashing vs seed 003 §39.9 ==\n");
    text += "Claim (§39.9, Karger et al. 1997): with n servers, m keys and k virtual nodes per server,\n\
             every server's load lies within m/n (1 +- eps), eps = O(sqrt(log n / k)); adding a server\n\
             moves m/(n+1) keys in expectation, against m n/(n+1) for modulo hashing. Compared here:\n\
             excess = max_over_mean - 1 (the fullest server's eps) beside claim_eps = sqrt(ln n / k)\n\
             with n = servers (§39.9's n; §39.5 calls n the keys, which changes the constant, not the\n\
             scaling in k), and constant = excess / claim_eps, which the claim says stays bounded as k\n\
             grows. moved_fraction beside claim_moved = 1/(n+1) (n/(n+1) for modulo); moved_sd is the\n\
             spread of one ring's moved fraction: its new server's share is Beta(k, N-k) over the\n\
             N = (n+1)k points, sd sqrt(p(1-p)/(N+1)), plus sqrt(p(1-p)/m) over the keys. Values are\n\
             medians over seeds; a median of the skewed Beta falls below its mean at small k.\n";
    let mut lines = Vec::new();
    let mut constants = Vec::new();
    for r in rows {
        let (n, m) = (r.servers as f64, r.keys as f64);
        let p = 1.0 / (n + 1.0);
        let excess = r.max_over_mean - 1.0;
        let (vnodes, eps) = match r.vnodes {
            Some(k) if r.method == "ring" => {
                let eps = (n.ln() / k as f64).sqrt();
                constants.push((k, excess / eps));
                (k.to_string(), Some(eps))
            }
            _ => (r.vnodes.map_or("-".into(), |k| k.to_string()), None),
        };
        let claim = if r.method == "modulo" { n * p } else { p };
        let sd = match r.vnodes {
            Some(k) if r.method == "ring" => {
                let points = (n + 1.0) * k as f64;
                Some((p * (1.0 - p) / (points + 1.0) + p * (1.0 - p) / m).sqrt())
            }
            _ => None,
        };
        let ratio = r.moved_fraction / claim;
        let moved_verdict = match (r.method, sd) {
            ("ring", Some(sd)) => format!(
                "{ratio:.3}x; {} 3 sd of one ring",
                if (r.moved_fraction - claim).abs() <= 3.0 * sd { "within" } else { "outside" }
            ),
            ("maglev", _) => format!("{ratio:.3}x: the table is rebuilt, not minimal"),
            _ => format!("{ratio:.3}x"),
        };
        lines.push(HashCheck {
            method: r.method.into(),
            vnodes,
            max_over_mean: f(r.max_over_mean),
            excess: f(excess),
            claim_eps: eps.map_or("-".into(), f),
            constant: eps.map_or("-".into(), |e| f(excess / e)),
            moved_fraction: f(r.moved_fraction),
            claim_moved: f(claim),
            moved_sd: sd.map_or("-".into(), f),
            moved_verdict,
        });
    }
    text += &String::from_utf8(Table.serialize(&Report::new("hash", &(), &lines))).expect("UTF-8");
    // The verdict on the scaling: the constant over the rows with k >= 10.
    let past_one: Vec<f64> = constants.iter().filter(|(k, _)| *k >= 10).map(|c| c.1).collect();
    if let (Some(lo), Some(hi)) =
        (past_one.iter().copied().reduce(f64::min), past_one.iter().copied().reduce(f64::max))
    {
        let holds = hi / lo <= 2.0;
        let _ = writeln!(
            text,
            "Scaling: for k >= 10 the constant stays between {} and {}, {}: {} up to a\n\
             constant. The fullest of n servers sits about z_n standard deviations above the mean\n\
             (z_n = 2.5 for the largest of 100 normals) and a share's relative sd is 1/sqrt(k), so\n\
             the constant should near z_n / sqrt(ln n) = 1.17 at n = 100; the keys add their own\n\
             spread (sqrt(n/m) = {} of the mean per server). At k = 1 a share is one exponential\n\
             spacing, far from normal: the constant there is {}.",
            f(lo),
            f(hi),
            if holds { "within a factor of 2" } else { "more than a factor of 2 apart" },
            if holds { "the claim holds" } else { "the claim does not hold" },
            f((rows[0].servers as f64 / rows[0].keys as f64).sqrt()),
            constants.iter().find(|(k, _)| *k == 1).map_or("-".into(), |c| f(c.1)),
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_the_line_and_both_versions() {
        let committed = b"a,b\n1,2\n3,4\n";
        let edited = b"a,b\n1,2\n3,5\n";
        let d = first_differences(committed, edited, 5);
        assert_eq!(d, ["line 3:\n  committed:   3,4\n  regenerated: 3,5"]);
        assert!(first_differences(committed, committed, 5).is_empty());
        assert_eq!(first_differences(b"x\n", b"x\ny\n", 5).len(), 1);
    }
}
