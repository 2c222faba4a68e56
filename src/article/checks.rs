//! The article's numbers and the closed forms beside lbsim's: the checks of `results.txt`.

use serde::Serialize;

use crate::experiment::bins::BinsRow;
use crate::experiment::bins::Variant;
use crate::experiment::fixed::FixedRow;
use crate::experiment::hash::HashRow;
use crate::experiment::hetero::HeteroRow;
use crate::experiment::homo::HomoRow;
use crate::experiment::stale::StaleRow;
use crate::experiment::subset::SubsetRow;
use crate::experiment::swrr::{SmoothnessRow, SwrrRows, TraceRow};
use crate::experiment::{Reading, Rows, VsBaseline};
use crate::output::table::format_number;
use crate::theory;

use super::Ran;

/// The typed rows of every command that the checks read.
pub(super) struct Reports<'a> {
    pub(super) bins: &'a [BinsRow],
    pub(super) fixed: &'a [FixedRow],
    pub(super) homo: &'a [HomoRow],
    pub(super) hetero: &'a [HeteroRow],
    pub(super) paired: &'a [HeteroRow],
    pub(super) stale: &'a [StaleRow],
    pub(super) swrr: &'a [SmoothnessRow],
    pub(super) trace: &'a [TraceRow],
    pub(super) hash: &'a [HashRow],
    pub(super) subset: &'a [SubsetRow],
    pub(super) subset_sweep: &'a [SubsetRow],
}

impl<'a> Reports<'a> {
    /// The rows of each command of [`COMMANDS`], found by output file stem.
    pub(super) fn of(ran: &[&'a Ran]) -> Reports<'a> {
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
pub(super) struct Check {
    experiment: String,
    quantity: String,
    reference: String,
    lbsim: String,
    ci95: String,
    verdict: String,
}

/// The first of `rows` that `is` accepts; `what` names it if there is none.
pub(super) fn find<'a, R>(rows: &'a [R], what: &str, is: impl Fn(&R) -> bool) -> &'a R {
    rows.iter().find(|r| is(r)).unwrap_or_else(|| panic!("no row {what}"))
}

/// The differences to the baseline of a row from a command run with `--baseline`.
fn vs_base(reading: &Reading) -> &VsBaseline {
    reading.baseline.as_ref().expect("the command runs with --baseline")
}

pub(super) fn f(x: f64) -> String {
    format_number(x)
}

fn within(reference: f64, value: f64, ci: Option<f64>) -> String {
    match ci {
        Some(h) if (reference - value).abs() <= h => "inside".into(),
        Some(_) => "outside".into(),
        None => "-".into(),
    }
}

pub(super) fn yes(b: bool) -> String {
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

pub(super) fn article_checks(r: &Reports) -> Vec<Check> {
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

pub(super) fn theory_checks(r: &Reports) -> Vec<Check> {
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
