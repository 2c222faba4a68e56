//! The committed `results/` are the contract: regenerate them and compare byte for byte.
//!
//! To accept a deliberate change, run `reproduce/run.sh` (or this test with `LBSIM_BLESS=1`) and
//! say in the commit why the numbers moved.

use std::path::Path;
use std::sync::OnceLock;

use lbsim::article::{Artifact, COMMANDS, Ran, SUMMARY_FIGURES, first_differences, summary};

/// Each reproduced command, run once for the whole test binary: the per-artefact tests and the
/// summary's test share them, so the suite runs every command once, in parallel.
static RAN: [OnceLock<Ran>; COMMANDS.len()] = [const { OnceLock::new() }; COMMANDS.len()];

fn ran(stem: &str) -> &'static Ran {
    let i = COMMANDS.iter().position(|(s, _)| *s == stem).expect("a reproduced command");
    RAN[i].get_or_init(|| Ran::command(stem, None, &|| {}).expect("the command is valid"))
}

/// Compares `files` with the committed ones in `results/` byte for byte (or, with
/// `LBSIM_BLESS=1`, writes them there).
fn matches_committed(files: &[Artifact]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    if std::env::var_os("LBSIM_BLESS").is_some_and(|v| v == "1") {
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).expect("writing results/");
        }
        return;
    }
    let mut report = Vec::new();
    for (name, bytes) in files {
        match std::fs::read(dir.join(name)) {
            Ok(committed) if committed == *bytes => {}
            Ok(committed) => {
                report.push(format!("results/{name} differs:"));
                report.extend(first_differences(&committed, bytes, 5));
            }
            Err(e) => report.push(format!("results/{name}: cannot read the committed file: {e}")),
        }
    }
    assert!(
        report.is_empty(),
        "{}\n\nIf the change is deliberate, regenerate with reproduce/run.sh (or \
         LBSIM_BLESS=1 cargo test --release --test integration regression) and say in the \
         commit why the numbers moved.",
        report.join("\n")
    );
}

/// One test per reproduced command: its CSV (and figure) regenerated and compared.
macro_rules! artefacts {
    ($($test:ident: $stem:literal,)*) => {
        $(
            #[test]
            fn $test() {
                matches_committed(&ran($stem).files());
            }
        )*

        #[test]
        fn every_reproduced_command_has_its_test() {
            let tested = [$($stem),*];
            let commands: Vec<&str> = COMMANDS.iter().map(|(stem, _)| *stem).collect();
            assert_eq!(tested.as_slice(), commands.as_slice());
        }
    };
}

artefacts! {
    regenerated_bins: "bins",
    regenerated_fixed: "fixed",
    regenerated_homo: "homo",
    regenerated_hetero: "hetero",
    regenerated_hetero_paired: "hetero_paired",
    regenerated_stale: "stale",
    regenerated_swrr: "swrr",
    regenerated_swrr_trace: "swrr_trace",
    regenerated_subset: "subset",
    regenerated_subset_sweep: "subset_sweep",
    regenerated_hash: "hash",
    regenerated_fleet: "fleet",
    regenerated_fleet_subsets: "fleet_subsets",
    regenerated_fleet_hashing: "fleet_hashing",
    regenerated_limit: "limit",
    regenerated_hetero_feedback: "hetero_feedback",
    regenerated_slow_backend: "slow_backend",
    regenerated_slow_backend_fleet: "slow_backend_fleet",
    regenerated_linkerd: "linkerd",
    regenerated_retry_storm: "retry_storm",
    regenerated_hedging: "hedging",
    regenerated_failover: "failover",
    regenerated_failover_outlier: "failover_outlier",
}

#[test]
fn regenerated_summary_matches_the_committed_one() {
    // results.txt and the slow-backend figure read every command's rows.
    let all: Vec<&Ran> = COMMANDS.iter().map(|(stem, _)| ran(stem)).collect();
    matches_committed(&summary(&all));
}

#[test]
fn every_command_that_draws_a_figure_has_it_in_results() {
    // The commands whose rows draw no figure: the balls-into-bins and hashing tables, the
    // smoothness trace and the limiter claims. Every other command's figure is its `--plot`,
    // committed as STEM.svg and compared by its `regenerated_*` test with its CSV.
    let none = ["bins", "swrr", "swrr_trace", "subset", "subset_sweep", "hash", "limit"];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    for (stem, _) in COMMANDS {
        let drawn = ran(stem).files().iter().any(|(name, _)| *name == format!("{stem}.svg"));
        assert_eq!(drawn, !none.contains(&stem), "{stem}");
        assert_eq!(dir.join(format!("{stem}.svg")).exists(), drawn, "results/{stem}.svg");
    }
    // The summary's own figures sit beside them under names no command takes.
    for (file, _) in SUMMARY_FIGURES {
        assert!(dir.join(file).exists(), "results/{file}");
    }
    let svgs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "svg"))
        .count();
    assert_eq!(svgs, COMMANDS.len() - none.len() + SUMMARY_FIGURES.len(), "no stray figure");
}

#[test]
fn reproduce_readme_has_a_row_for_every_command_with_its_files() {
    // reproduce/README.md maps each reproduced command to the files it writes: every command of
    // the reproduction has a row naming its command line and its CSV, and every summary figure
    // is named too.
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("reproduce").join("README.md"),
    )
    .unwrap();
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
    for (stem, command) in COMMANDS {
        let row = rows.iter().find(|r| r.contains(&format!("`{command}`")));
        let row = row.unwrap_or_else(|| panic!("no row for `{command}`"));
        assert!(row.contains(&format!("`{stem}.csv`")), "the row of `{command}` names {stem}.csv");
    }
    for (file, _) in SUMMARY_FIGURES {
        assert!(rows.iter().any(|r| r.contains(&format!("`{file}`"))), "no row names {file}");
    }
}

/// The text of every `<text>` element of an SVG document, trimmed.
fn svg_texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

#[test]
fn committed_figures_are_well_formed_svg() {
    // The figures must parse as XML and draw what they claim: fixed has one simulated point per
    // positive simulated level and a legend entry per d; stale one line per policy.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let fixed = std::fs::read_to_string(dir.join("fixed.svg")).unwrap();
    let doc = roxmltree::Document::parse(&fixed).expect("fixed.svg is XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts = svg_texts(&doc);
    for d in 1..=3 {
        assert!(texts.iter().any(|t| t == &format!("d = {d}: simulated")), "legend for d = {d}");
    }
    let csv = std::fs::read_to_string(dir.join("fixed.csv")).unwrap();
    let positive = csv
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(3).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) > 0.0)
        .count();
    let circles = doc.descendants().filter(|n| n.has_tag_name("circle")).count();
    // One circle per simulated point, plus one per legend marker.
    assert_eq!(circles, positive + 3);

    let stale = std::fs::read_to_string(dir.join("stale.svg")).unwrap();
    let doc = roxmltree::Document::parse(&stale).expect("stale.svg is XML");
    let texts = svg_texts(&doc);
    for policy in ["random", "p2c", "p3c", "jsq", "jsq-local"] {
        assert!(texts.iter().any(|t| t == policy), "legend for {policy}");
    }
    let lines = doc.descendants().filter(|n| n.has_tag_name("polyline")).count();
    assert!(lines >= 5, "one line per policy, got {lines}");
    // Points whose row is not steady are open squares, and the legend says so.
    let csv = std::fs::read_to_string(dir.join("stale.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let steady = header.iter().position(|c| *c == "steady").expect("a steady column");
    let unsteady =
        csv.lines().skip(1).filter(|l| l.split(',').nth(steady) == Some("false")).count();
    assert!(unsteady > 0, "the committed stale run has a row that is not steady (jsq, T = 50)");
    let squares = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("width") == Some("10"))
        .count();
    // One square per unsteady point, plus the legend's.
    assert_eq!(squares, unsteady + 1);
    assert!(texts.iter().any(|t| t == "open square: not steady"));
}

#[test]
fn the_retry_storm_figure_draws_one_goodput_line_per_row() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let svg = std::fs::read_to_string(dir.join("retry_storm_goodput.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("retry_storm_goodput.svg is XML");
    let texts = svg_texts(&doc);
    for row in ["load 0.7, budget 0.0", "load 0.7, budget 0.2", "load 0.8, budget 0.0"] {
        assert!(texts.iter().any(|t| t == row), "legend for {row}: {texts:?}");
    }
    let lines = doc.descendants().filter(|n| n.has_tag_name("polyline")).count();
    assert!(lines >= 4, "one line per row, got {lines}");
}

#[test]
fn plot_flag_writes_the_same_figure_as_the_reproduction() {
    // `--plot` draws from the same report as the committed figure, so a short run must still give
    // well-formed SVG with one legend entry per policy.
    let dir = std::env::temp_dir().join(format!("lbsim-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stale.svg");
    let out = crate::util::lbsim_ok(&[
        "stale",
        "--periods",
        "0,2",
        "--policies",
        "random,jsq",
        "--requests",
        "5000",
        "--plot",
        path.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert!(out.starts_with("period,policy"), "the table still goes to stdout");
    let svg = std::fs::read_to_string(&path).unwrap();
    let texts = svg_texts(&roxmltree::Document::parse(&svg).expect("XML"));
    assert!(texts.iter().any(|t| t == "random") && texts.iter().any(|t| t == "jsq"));
    std::fs::remove_dir_all(&dir).unwrap();
}
