//! `--plot` on the queueing commands: the SVG is well-formed XML, draws one line per policy in
//! each panel, and is the same bytes for the same command.

use crate::util::{Dir, lbsim, lbsim_ok};

/// The figure `lbsim args... --plot F -o out` writes.
fn figure(dir: &Dir, args: &[&str]) -> String {
    let svg = dir.0.join("figure.svg").to_string_lossy().into_owned();
    let out = dir.0.join("out.csv").to_string_lossy().into_owned();
    let mut all = args.to_vec();
    all.extend_from_slice(&["--plot", &svg, "-o", &out, "-q"]);
    lbsim_ok(&all);
    std::fs::read_to_string(&svg).unwrap()
}

/// The polylines of `svg` drawn in `color` (the stroke plotters writes, e.g. `#1F77B4`), after
/// checking that it parses as XML with an `svg` root.
fn lines_in(svg: &str, color: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .filter(|n| n.attribute("stroke").is_some_and(|s| s.eq_ignore_ascii_case(color)))
        .count()
}

/// The first two colours figures give their lines (matplotlib's tab10).
const BLUE: &str = "#1F77B4";
const ORANGE: &str = "#FF7F0E";

#[test]
fn homo_plots_one_line_per_policy_in_each_panel_and_the_same_bytes_twice() {
    let dir = Dir::new("plot-homo");
    let args = [
        "homo",
        "--loads",
        "0.5,0.7,0.9",
        "--policies",
        "random,p2c",
        "--servers",
        "10",
        "--requests",
        "4000",
        "--warmup",
        "400",
        "--seeds",
        "3",
    ];
    let svg = figure(&dir, &args);
    // Mean and p99 panels: one polyline per policy in each.
    assert_eq!(lines_in(&svg, BLUE), 2, "{svg}");
    assert_eq!(lines_in(&svg, ORANGE), 2);
    assert_eq!(figure(&dir, &args), svg, "byte-stable for a fixed seed");
    // A third policy adds a line to each panel (the figure follows the rows).
    let three = figure(&dir, &[&args[..4], &["random,p2c,jsq"], &args[5..]].concat());
    assert_eq!(lines_in(&three, "#2CA02C"), 2);
}

#[test]
fn hetero_and_run_without_a_sweep_plot_bars_and_a_sweep_plots_lines() {
    let dir = Dir::new("plot-bars");
    let svg =
        figure(&dir, &["hetero", "--policies", "swrr,p2c", "--requests", "4000", "--seeds", "2"]);
    // Bars, not lines: no polyline in a policy's colour.
    assert_eq!(lines_in(&svg, BLUE), 0, "{svg}");
    assert!(svg.contains("swrr") && svg.contains("p2c"));
    let file = dir.file(
        "sweep.toml",
        "policies = [\"random\", \"jsq\"]\n[farm]\ngroups = [{ count = 10, rate = 1.0 }]\n\
         [run]\nrequests = 4000\nwarmup = 400\nseeds = 2\n\
         [sweep]\n\"arrivals.load\" = [0.5, 0.8]\n",
    );
    let run = figure(&dir, &["run", &file]);
    assert_eq!(lines_in(&run, BLUE), 2, "{run}");
    assert_eq!(lines_in(&run, ORANGE), 2);
    assert!(run.contains("arrivals.load"));
}

#[test]
fn a_shard_refuses_plot_and_capacity_draws_its_answers() {
    let dir = Dir::new("plot-shard");
    let svg = dir.0.join("f.svg").to_string_lossy().into_owned();
    let out = lbsim(&["homo", "--loads", "0.5", "--shard", "0/2", "--plot", &svg]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lbsim merge"));
    let file = dir.file(
        "c.toml",
        "policies = [\"random\"]\n[farm]\ngroups = [{ count = 10, rate = 1.0 }]\n\
         [run]\nrequests = 5000\nwarmup = 500\nseeds = 3\n",
    );
    let capacity = figure(&dir, &["capacity", &file, "--target", "mean=3"]);
    // The bracket is drawn as one line in the policy's colour.
    assert_eq!(lines_in(&capacity, BLUE), 1, "{capacity}");
}
