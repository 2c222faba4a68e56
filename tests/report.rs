//! `lbsim report DIR`: the page of the committed results, its contents and its refusals. (The
//! page in a real browser: scripts/report/test, run by CI.)

use std::fs;

use lbsim::article::COMMANDS;

use crate::util::{Dir, lbsim, lbsim_ok};

#[test]
fn the_page_holds_every_table_figure_and_comparison_of_results() {
    let dir = Dir::new("report-page");
    let site = dir.0.join("site");
    let said = lbsim_ok(&["report", site.to_str().unwrap()]);
    let page = fs::read_to_string(site.join("index.html")).unwrap();
    let figures = fs::read_dir("results")
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "svg"))
        .count();
    assert_eq!(page.matches("<svg").count(), figures, "one inline figure per SVG of results/");
    assert_eq!(page.matches("<table>").count(), COMMANDS.len(), "one table per command");
    for (stem, line) in COMMANDS {
        assert!(page.contains(&format!("<section id=\"{stem}\">")), "no section {stem}");
        assert!(page.contains(&format!("$ {line}")), "no command line for {stem}");
    }
    assert!(
        page.contains("<h2>article vs lbsim</h2>") && page.contains("<h2>theory vs lbsim</h2>")
    );
    // Self-contained: nothing to fetch, nothing to run.
    for outside in ["<script", "<link", " src=", "url(", "@import"] {
        assert!(!page.contains(outside), "the page holds {outside}");
    }
    assert!(said.contains(&format!("{} tables, {figures} figures", COMMANDS.len())), "{said}");
    // The same results give the same bytes.
    let again = dir.0.join("again");
    lbsim_ok(&["report", again.to_str().unwrap()]);
    assert_eq!(fs::read(again.join("index.html")).unwrap(), page.into_bytes());
}

#[test]
fn report_refuses_a_file_missing_results_and_foreign_options() {
    let dir = Dir::new("report-refusals");
    let file = dir.file("plain", "x");
    let out = lbsim(&["report", &file]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("exists and is not a directory"), "{err}");
    let empty = dir.0.join("empty");
    fs::create_dir(&empty).unwrap();
    let site = dir.0.join("site");
    let out = lbsim(&["report", site.to_str().unwrap(), "--results", empty.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("no bins.csv") && err.contains("--run"), "{err}");
    assert!(!site.exists(), "nothing written on a refusal");
    let out = lbsim(&["report", site.to_str().unwrap(), "--seeds", "3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("--seeds does not apply to report"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}
