//! The books' claims beside lbsim's: the SRE book's subsetting figures and seed 003's
//! consistent-hashing claims (sections of `results.txt`).

use std::fmt::Write as _;

use serde::Serialize;

use crate::experiment::hash::HashRow;
use crate::experiment::subset::SubsetRow;
use crate::output::{Exporter, Report, Table};

use super::checks::{Reports, f, find, yes};

/// One line of the subsetting section.
#[derive(Debug, Serialize)]
pub(super) struct SubsetCheck {
    case: String,
    quantity: String,
    book: String,
    lbsim: String,
    seeds_range: String,
    verdict: String,
}

pub(super) fn subset_checks(r: &Reports) -> Vec<SubsetCheck> {
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
pub(super) fn hash_section(rows: &[HashRow]) -> String {
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
