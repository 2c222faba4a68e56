//! The request lifecycle's section of `results.txt` (SPEC §11): the Linkerd experiment beside
//! the article's success rates, the retry storm with its goodput figure, hedging's p99, and
//! failover without and with outlier detection.

use std::fmt::Write as _;

use serde::Serialize;

use crate::experiment::Rows;
use crate::experiment::run::RunRow;
use crate::output::{Exporter, Report, Table, plot};

use super::Ran;
use super::checks::f;

/// The commands of this section, by output file stem.
pub(super) const STEMS: [&str; 5] =
    ["linkerd", "retry_storm", "hedging", "failover", "failover_outlier"];

/// When the retry storm's capacity dips and when it returns.
const DIP: [f64; 2] = [100.0, 200.0];

/// When failover.toml's host 0 goes down and when it comes back.
const DOWN: [f64; 2] = [10_000.0, 30_000.0];

/// The article's success rates for the Linkerd experiment (Jenson and Oanta 2016, as the
/// article reports them), by policy row; round robin's exact value beside it.
fn article_success(policy: &str) -> (&'static str, String) {
    match policy {
        "rr" => ("0.95", format!("{:.6}", 1.0 - 1.0 / 22.0)),
        "least-request" => ("0.99", "-".into()),
        "p2c-pewma" => ("0.999", "-".into()),
        _ => ("-", "-".into()),
    }
}

/// The run rows of the command `stem` in `ran`.
fn rows<'a>(ran: &[&'a Ran], stem: &str) -> &'a [RunRow] {
    match ran.iter().find(|r| r.stem == stem).map(|r| &r.results.rows) {
        Some(Rows::Run(rows)) => rows,
        _ => &[],
    }
}

/// A row's label in the figure: its swept values, then its policy.
fn label(row: &RunRow) -> String {
    let keys: Vec<String> = row
        .keys
        .iter()
        .map(|(k, v)| format!("{} {v}", k.rsplit('.').next().unwrap_or(k)))
        .collect();
    keys.join(", ")
}

/// A row's goodput per window (the window's start, its successes over its arrivals), without
/// the last window that had arrivals (cut short by the end of the arrivals).
pub(super) fn goodput_line(row: &RunRow) -> Vec<(f64, f64)> {
    let Some(p) = row.series.as_ref().map(|s| s.load().expect("the pooled series reads back"))
    else {
        return Vec::new();
    };
    let last = p.outcomes.iter().rposition(|o| o.is_some_and(|o| o[0] > 0)).unwrap_or(0);
    (0..last)
        .filter_map(|w| {
            let [arrived, _, succeeded] = p.outcomes[w]?;
            (arrived > 0).then(|| (w as f64 * p.width, succeeded as f64 / arrived as f64))
        })
        .collect()
}

/// The section's text and the retry storm's figure.
pub(super) fn lifecycle_section(ran: &[&Ran]) -> (String, String) {
    #[derive(Serialize)]
    struct Line<'a> {
        policy: &'a str,
        success: String,
        article: &'static str,
        exact: String,
    }
    let linkerd = rows(ran, "linkerd");
    let lines: Vec<Line> = linkerd
        .iter()
        .map(|r| {
            let (article, exact) = article_success(&r.policy);
            let success = r.lifecycle.as_ref().map_or(f64::NAN, |l| l.success);
            Line { policy: &r.policy, success: format!("{success:.4}"), article, exact }
        })
        .collect();
    let mut text = String::from("\n== request lifecycle ==\n");
    text += "linkerd: the Linkerd experiment the article cites (11 backends, 1000 requests/s, one\n\
             backend's responses 2 s late from t = 15 to t = 45 of a 60 s run, 1 s timeout, no\n\
             retries; 10 replications). success beside the article's (Linkerd's own test, as the\n\
             article reports it); round robin sends the slow backend 1/11 of the requests, all of\n\
             which fail for half the run: exactly 1 - (1/11)(1/2).\n";
    text +=
        &String::from_utf8(Table.serialize(&Report::new("linkerd", &(), &lines))).expect("UTF-8");
    let storm = rows(ran, "retry_storm");
    let _ = writeln!(
        text,
        "retry_storm: 100 servers at half speed from t = {} to t = {}; a timeout of 10, 2 retries\n\
         at once, no cancelling, queue limit 20. Goodput per 10-unit window: retry_storm_goodput.svg.",
        f(DIP[0]),
        f(DIP[1])
    );
    let series: Vec<(String, Vec<(f64, f64)>)> =
        storm.iter().map(|r| (label(r), goodput_line(r))).collect();
    for (name, points) in &series {
        let after: Vec<f64> = points.iter().filter(|(t, _)| *t >= 400.0).map(|p| p.1).collect();
        let mean = after.iter().sum::<f64>() / after.len() as f64;
        let _ = writeln!(text, "  {name}: mean goodput from t = 400 on: {}", f(mean));
    }
    text += &hedging_lines(rows(ran, "hedging"));
    text += &failover_lines(rows(ran, "failover"));
    text += &outlier_lines(rows(ran, "failover"), rows(ran, "failover_outlier"));
    let svg = plot::series_figure(
        "Retry storm: goodput per 10-unit window (capacity halved from 100 to 200)",
        "goodput (successes over arrivals)",
        &series,
        &DIP,
    );
    (text, svg)
}

/// Hedging's lines: for each policy, p99 and attempts per request without hedging and with it.
fn hedging_lines(rows: &[RunRow]) -> String {
    let mut text = String::from(
        "hedging: 20 servers at load 0.5, lognormal service of SCV 4 (its 95th percentile 3.6);\n\
         one hedge after 3.6, the loser cancelled. p99 and attempts per request, without -> with:\n",
    );
    let (plain, hedged): (Vec<&RunRow>, Vec<&RunRow>) =
        rows.iter().partition(|r| r.keys.values().all(|v| v.as_f64() == Some(0.0)));
    for (a, b) in plain.iter().zip(&hedged) {
        let attempts = |r: &RunRow| r.lifecycle.as_ref().map_or(f64::NAN, |l| l.attempts);
        let _ = writeln!(
            text,
            "  {}: p99 {} -> {}, attempts {} -> {}",
            a.policy,
            f(a.p99),
            f(b.p99),
            f(attempts(a)),
            f(attempts(b))
        );
    }
    text
}

/// Failover's lines: for each policy, the share of the served attempts that host 1 (the host
/// after the failed one in round robin's order) took while host 0 was down, and success.
fn failover_lines(rows: &[RunRow]) -> String {
    let mut text = format!(
        "failover: 10 hosts at load 0.7, host 0 down from t = {} to t = {}, one retry at once on an\n\
         error, no health checks. Share of the served attempts taken by host 1 (the host after\n\
         the failed one in round robin's order) while host 0 was down (1/9 = {:.4} is an even\n\
         share of the 9 left), and success:\n",
        f(DOWN[0]),
        f(DOWN[1]),
        1.0 / 9.0
    );
    for r in rows {
        let Some(p) = r.series.as_ref().map(|s| s.load().expect("the pooled series reads back"))
        else {
            continue;
        };
        let next = p.groups.iter().position(|g| g == "next").expect("a group `next`");
        let [from, to] = DOWN.map(|t| (t / p.width) as usize);
        let success = r.lifecycle.as_ref().map_or(f64::NAN, |l| l.success);
        let _ = writeln!(
            text,
            "  {}: host 1's share {:.4}, success {:.4}",
            r.policy,
            p.share_over(from, to, next),
            success
        );
    }
    text
}

/// Failover with outlier detection (failover-outlier.toml): for each policy, the ejections and
/// errors over the seeds, and success, without outlier detection (failover.toml) -> with it.
fn outlier_lines(without: &[RunRow], with: &[RunRow]) -> String {
    let mut text = String::from(
        "failover-outlier: the same with Envoy's outlier detection (5 consecutive errors eject,\n\
         a review every 1000, ejections of 3000 x the times ejected). Ejections and errors over\n\
         the seeds, and success, without -> with:\n",
    );
    let of = |r: &RunRow| r.lifecycle.as_ref().map(|l| (l.ejections, l.errors, l.success));
    for b in with {
        let a = without.iter().find(|a| a.policy == b.policy);
        let (Some(a_), Some(b_)) = (a.and_then(of), of(b)) else { continue };
        let _ = writeln!(
            text,
            "  {}: ejections {} -> {}, errors {} -> {}, success {:.5} -> {:.5}",
            b.policy, a_.0, b_.0, a_.1, b_.1, a_.2, b_.2
        );
    }
    text
}
