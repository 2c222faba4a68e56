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

/// The points of the polyline drawn in `color` (the only one in that colour).
fn points_of(svg: &str, color: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    let line = doc
        .descendants()
        .find(|n| {
            n.tag_name().name() == "polyline"
                && n.attribute("stroke").is_some_and(|s| s.eq_ignore_ascii_case(color))
        })
        .expect("a line in that colour");
    line.attribute("points").unwrap().split_whitespace().count()
}

/// A farm of 10 servers at load 0.8 under random and jsq, short enough for a test.
const SERIES_FILE: &str = "policies = [\"random\", \"jsq\"]\n[farm]\n\
    groups = [{ count = 10, rate = 1.0 }]\n[arrivals]\nload = 0.8\n\
    [run]\nrequests = 4000\nwarmup = 400\nseeds = 2\n";

/// With traffic classes the figure draws the pooled row's p99 line alone (the `all` lines of
/// the CSV), not one per class.
#[test]
fn run_with_series_and_classes_plots_the_pooled_p99_line() {
    let dir = Dir::new("plot-series-classes");
    let classes = "[[classes]]\nname = \"hi\"\nshare = 0.3\npriority = 0\n\
        [[classes]]\nname = \"lo\"\nshare = 0.7\npriority = 1\n";
    let text = format!("{}{classes}", SERIES_FILE.replace("\"random\", \"jsq\"", "\"random\""));
    let file = dir.file("s.toml", &text);
    let series = dir.0.join("series.csv").to_string_lossy().into_owned();
    let args = ["run", &file, "--series", &series, "--series-window", "50"];
    let svg = figure(&dir, &args);
    assert_eq!(lines_in(&svg, BLUE), 1, "{svg}");
    assert_eq!(lines_in(&svg, ORANGE), 0, "no line for a class");
    let csv = std::fs::read_to_string(&series).unwrap();
    let pooled = csv.lines().filter(|l| l.starts_with("random,all,") && l.contains(",p99,"));
    let windows = pooled.filter(|l| !l.ends_with(',')).count();
    assert!(windows > 10, "{csv}");
    assert_eq!(points_of(&svg, BLUE), windows);
}

#[test]
fn run_with_series_plots_the_p99_per_window_one_line_per_policy() {
    let dir = Dir::new("plot-series");
    let file = dir.file("s.toml", SERIES_FILE);
    let series = dir.0.join("series.csv").to_string_lossy().into_owned();
    let args = ["run", &file, "--series", &series, "--series-window", "50"];
    let svg = figure(&dir, &args);
    // One line per policy, and nothing else in their colours: without the series the figure
    // would be the two panels of mean and p99, two lines per policy.
    assert_eq!(lines_in(&svg, BLUE), 1, "{svg}");
    assert_eq!(lines_in(&svg, ORANGE), 1);
    assert!(svg.contains("p99 sojourn per window of 50"), "{svg}");
    // Each line has one point per window where requests arrived: the p99 lines of the CSV
    // that are not empty, an exact count.
    let csv = std::fs::read_to_string(&series).unwrap();
    let windows = |policy: &str| {
        csv.lines()
            .filter(|l| l.starts_with(&format!("{policy},")) && l.contains(",p99,"))
            .filter(|l| !l.ends_with(','))
            .count()
    };
    assert!(windows("random") > 10, "{csv}");
    assert_eq!(points_of(&svg, BLUE), windows("random"));
    assert_eq!(points_of(&svg, ORANGE), windows("jsq"));
    assert_eq!(figure(&dir, &args), svg, "byte-stable for a fixed seed");
}

#[test]
fn merged_series_shards_plot_the_whole_run_s_series_figure() {
    let dir = Dir::new("plot-series-merge");
    let file = dir.file("s.toml", SERIES_FILE);
    let series = dir.0.join("series.csv").to_string_lossy().into_owned();
    let whole = figure(&dir, &["run", &file, "--series", &series, "--series-window", "50"]);
    let shard = |k: &str| {
        let out = dir.0.join(format!("shard-{}.jsonl", &k[..1])).to_string_lossy().into_owned();
        let args = ["run", &file, "--series", &series, "--series-window", "50", "--shard", k];
        lbsim_ok(&[&args[..], &["-o", &out, "-q"]].concat());
        out
    };
    let (a, b) = (shard("0/2"), shard("1/2"));
    let svg = dir.0.join("merged.svg").to_string_lossy().into_owned();
    let merged_series = dir.0.join("merged.csv").to_string_lossy().into_owned();
    let out = dir.0.join("merged.txt").to_string_lossy().into_owned();
    lbsim_ok(&["merge", &a, &b, "--series", &merged_series, "--plot", &svg, "-o", &out, "-q"]);
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), whole);
    // A shard refuses --plot and points to merge.
    let refused = lbsim(&["run", &file, "--series", &series, "--shard", "0/2", "--plot", &svg]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("give --plot to lbsim merge"));
}

#[test]
fn limit_plots_what_its_limiter_did_and_the_claims_refuse_plot() {
    let dir = Dir::new("plot-limit");
    let args = [
        "limit",
        "--limiter",
        "token-bucket:rate=100,burst=10",
        "--pattern",
        "poisson:rate=150",
        "--duration",
        "20",
        "--seeds",
        "2",
        "--format",
        "csv",
    ];
    let svg = figure(&dir, &args);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).map(str::trim).collect();
    // Each bar is labelled with its count, read from the CSV the same run wrote.
    let mut csv = csv::Reader::from_path(dir.0.join("out.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let row = csv.records().next().unwrap().unwrap();
    let cell = |name: &str| row[header.iter().position(|h| h == name).unwrap()].to_string();
    for name in ["offered", "admitted", "rejected", "delayed"] {
        assert!(texts.contains(&name), "a bar for {name}: {texts:?}");
        assert!(texts.contains(&cell(name).as_str()), "{name} = {}: {texts:?}", cell(name));
    }
    assert_ne!(cell("rejected"), "0", "a limiter that rejects");
    assert_eq!(figure(&dir, &args), svg, "byte-stable for a fixed seed");
    // Without a limiter, the claims: no figure, one line naming --plot, before simulating.
    let f = dir.0.join("claims.svg").to_string_lossy().into_owned();
    let out = lbsim(&["limit", "--plot", &f]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("--plot") && err.contains("--limiter"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!std::path::Path::new(&f).exists());
}
