//! The slow-backend section of `results.txt` and its figure.

use std::fmt::Write as _;

use serde::Serialize;

use crate::experiment::{self, Rows};
use crate::output::{Exporter, Report, Table, plot};

use super::Ran;
use super::checks::f;

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
pub(super) fn slow_backend_section(ran: &[&Ran]) -> (String, String) {
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
             client); c3:rate_control=false ranks only. Figure: slow_backend_share.svg.\n";
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
