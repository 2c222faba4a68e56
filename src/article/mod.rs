//! Regenerates every table of the article into `results/`, with the article's published numbers
//! and the closed forms beside lbsim's.
//!
//! Each experiment runs from the exact command line printed above its table, parsed by the same
//! code as the binary, so any table can be re-made by hand. Everything written is deterministic:
//! the test suite regenerates it and compares it byte for byte with the committed files.

mod books;
mod checks;
mod lifecycle;
mod slow_backend;

use crate::cli::Cli;
use crate::error::UsageError;
use crate::experiment::Config;
use crate::experiment::{self, Progress, Results};
use crate::options;
use crate::output::{Csv, Exporter, Report, Table};

use books::{hash_section, subset_checks};
use checks::{Reports, article_checks, theory_checks};
use lifecycle::lifecycle_section;
use slow_backend::slow_backend_section;

/// The reproduced experiments: output file stem and the command line that produces it.
pub const COMMANDS: [(&str, &str); 23] = [
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
    ("linkerd", "lbsim run examples/scenarios/linkerd.toml"),
    (
        "retry_storm",
        "lbsim run examples/scenarios/retry-storm.toml --series /dev/null --series-window 10",
    ),
    ("hedging", "lbsim run examples/scenarios/hedging.toml"),
    (
        "failover",
        "lbsim run examples/scenarios/failover.toml --series /dev/null --series-window 5000",
    ),
    ("failover_outlier", "lbsim run examples/scenarios/failover-outlier.toml"),
];

/// The figures made from several commands together ([`summary`]), each beside the command whose
/// section it belongs to: its file in `results/` and that command's stem. Their names are not
/// `STEM.svg` for any stem of [`COMMANDS`], which names the command's own figure.
pub const SUMMARY_FIGURES: [(&str, &str); 2] =
    [("slow_backend_share.svg", "slow_backend"), ("retry_storm_goodput.svg", "retry_storm")];

/// A generated file: its name inside `results/` and its bytes.
pub type Artifact = (String, Vec<u8>);

/// Parses and validates one command line exactly as the binary does.
fn parse(line: &str, threads: Option<usize>) -> Result<Config, UsageError> {
    let mut args: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    if let Some(t) = threads {
        args.extend(["--threads".to_string(), t.to_string()]);
    }
    let cli =
        <Cli as clap::Parser>::try_parse_from(&args).map_err(|e| match options::refused(&e) {
            Some(e) => e.clone(),
            None => UsageError::Other(e.to_string().lines().next().unwrap_or_default().into()),
        })?;
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

    /// The command's own files: its CSV and, for a command that draws one, its figure
    /// (`STEM.svg`, what its `--plot` draws).
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
/// article, the closed forms and the books beside lbsim) and the [`SUMMARY_FIGURES`]. `ran` holds
/// every command of [`COMMANDS`], in their order.
pub fn summary(ran: &[&Ran]) -> Vec<Artifact> {
    let mut files = Vec::new();
    let mut text = String::from(
        "lbsim results: every table of the article, regenerated by reproduce/run.sh.\n\
         Times are in mean service times of a rate-1 server. The test suite regenerates this\n\
         file and the CSVs beside it and compares them byte for byte.\n",
    );
    // The request lifecycle's commands come last, with their section.
    let (early, late): (Vec<&Ran>, Vec<&Ran>) =
        ran.iter().copied().partition(|r| !lifecycle::STEMS.contains(&r.stem));
    for r in &early {
        text += &command_table(r);
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
    files.push((SUMMARY_FIGURES[0].0.to_string(), svg.into_bytes()));
    // ----- the request lifecycle -----
    for r in &late {
        text += &command_table(r);
    }
    let (section, svg) = lifecycle_section(ran);
    text += &section;
    files.push((SUMMARY_FIGURES[1].0.to_string(), svg.into_bytes()));
    files.push(("results.txt".to_string(), text.into_bytes()));
    files
}

/// A command's table in `results.txt`, under its stem and command line.
fn command_table(r: &Ran) -> String {
    let mut text = format!("\n== {} ==\n$ {}\n", r.stem, r.line);
    text += &String::from_utf8(Table.serialize(&r.results.report)).expect("tables are UTF-8");
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_figures_cannot_take_a_command_figure_s_name() {
        for (file, stem) in SUMMARY_FIGURES {
            assert!(COMMANDS.iter().any(|(s, _)| *s == stem), "{stem} is a command");
            assert!(COMMANDS.iter().all(|(s, _)| file != format!("{s}.svg")), "{file}");
        }
    }

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
