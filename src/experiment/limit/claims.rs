//! The rate-limiting chapter's claims (`seeds/003`, §39.1–§39.21), each tested against simulation:
//! `lbsim limit` without `--limiter`.
//!
//! A claim is data: a [`Claim`] (where and what is simulated, the chapter's statement, the
//! quantity compared, the claimed and exact values as printed, the tolerance as printed) and its
//! [`Test`], which the evaluator ([`Claims::push`]) applies to the simulated value to give
//! `holds`. The sections below ([`SECTIONS`], in the table's order) simulate and state their
//! claims. A new claim is one `out.push(Claim { .. }, simulated)` in the section of its chapter
//! section (or a new section function added to [`SECTIONS`]), with the test its tolerance states.

mod coordinated;

use std::path::Path;

use super::{ClaimRow, Pattern, drive, stream};
use crate::admission::{Admission, AdmissionSpec};
use crate::cancel::cancel_point;
use crate::experiment::common::{Common, RunConfig};
use crate::experiment::{Progress, Scenario, Workload, run_scenarios};
use crate::model::{Farm, Information};
use crate::output::table::format_number;
use crate::policy::PolicyKind;
use crate::rng::{SimRng, StreamKey};
use crate::stats::ci95_half_width;
use crate::theory;
use crate::workload::{ArrivalSpec, ServiceSpec};

/// How a claim is tested against the simulated value `s`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Test {
    /// `s` equals the value (exact counts, sequences compared position by position).
    Exact(f64),
    /// `s <= bound`.
    AtMost(f64),
    /// `s >= bound`.
    AtLeast(f64),
    /// `low <= s <= high`.
    Between(f64, f64),
    /// `|s - value| <= within` (a 95% interval, a number of arrival gaps, a binomial spread);
    /// false when `within` is not a number (one replication has no interval).
    Near {
        /// The claimed value.
        value: f64,
        /// The largest distance that still holds.
        within: f64,
    },
    /// `|s / value - 1| <= within`.
    Relative {
        /// The claimed value.
        value: f64,
        /// The largest relative distance that still holds.
        within: f64,
    },
}

impl Test {
    /// Whether the claim holds with `s` simulated.
    fn holds(self, s: f64) -> bool {
        match self {
            Test::Exact(v) => s == v,
            Test::AtMost(b) => s <= b,
            Test::AtLeast(b) => s >= b,
            Test::Between(low, high) => (low..=high).contains(&s),
            Test::Near { value, within } => (s - value).abs() <= within,
            Test::Relative { value, within } => (s / value - 1.0).abs() <= within,
        }
    }
}

/// One claim as the table prints it, with its test.
struct Claim {
    /// Where, and what is simulated.
    case: String,
    /// The chapter's statement.
    claim: String,
    /// The quantity compared.
    quantity: &'static str,
    /// The chapter's value, as printed.
    claimed: String,
    /// An exact value where one is derived (empty otherwise).
    reference: String,
    /// The test, as printed.
    tolerance: String,
    /// The test applied.
    test: Test,
}

/// The rows of the claims, and the requests simulated to test them.
struct Claims {
    rows: Vec<ClaimRow>,
    events: u64,
}

impl Claims {
    /// Tests `claim` against `simulated` and adds its row.
    fn push(&mut self, claim: Claim, simulated: f64) {
        let Claim { case, claim, quantity, claimed, reference, tolerance, test } = claim;
        self.rows.push(ClaimRow {
            case,
            claim,
            quantity: quantity.into(),
            claimed,
            simulated,
            holds: test.holds(simulated),
            reference,
            tolerance,
        });
    }
}

/// The footnote of the claims table.
pub const CLAIMS_NOTE: &str = "claims of seeds/003 (the rate-limiting chapter), section by \
section; holds = the claim survives the test in tolerance; ci95 = 95% Student-t half-width over \
the replications; rates per second, windows of one second";

fn adm(text: &str) -> Admission {
    AdmissionSpec::parse(text).and_then(|s| s.resolve()).expect("a built-in limiter")
}

fn f(x: f64) -> String {
    format_number(x)
}

/// One section of the chapter: pushes its claims' rows, in the table's order.
type Section = fn(&Common, Progress, &mut Claims);

/// The sections, in the order of the table.
const SECTIONS: &[Section] = &[
    fixed_window_boundary,
    most_in_one_second,
    two_window_counter_error,
    burst_duration,
    drop_probability,
    gcra_is_a_token_bucket,
    nginx_burst,
    leaky_bucket_spacing,
    smooth_weighted_round_robin,
    consistent_hashing,
    adaptive_throttling,
    distributed_limiting,
    coordinated::skewed_gateways,
    coordinated::synchronised_quotas,
    coordinated::central_limiter,
    coordinated::composite_layers,
    latency,
];

/// Every claim; returns the rows and the number of requests simulated.
pub fn claims(c: &Common, progress: Progress) -> (Vec<ClaimRow>, u64) {
    let mut out = Claims { rows: Vec::new(), events: 0 };
    for section in SECTIONS {
        cancel_point();
        section(c, progress, &mut out);
    }
    (out.rows, out.events)
}

/// The stream of the deterministic patterns and limiters (fresh, so each starts alike).
fn deterministic(c: &Common) -> SimRng {
    stream(c, "deterministic", 0)
}

/// §39.1's adversary: 99 requests at each side of every other one-second boundary, for 2 s.
fn boundary(c: &Common) -> Vec<f64> {
    Pattern::Boundary { count: 99, window: 1.0 }.times(2.0, &mut deterministic(c))
}

/// A hundred requests at once.
const AT_ONCE: [f64; 100] = [0.0; 100];

/// How many of [`AT_ONCE`] the limiter `text` passes at once.
fn passed_at_once(c: &Common, text: &str) -> usize {
    drive(&adm(text), &AT_ONCE, 0.0, 1.0, deterministic(c)).decisions.iter().filter(|d| **d).count()
}

/// §39.1: the fixed window's boundary.
fn fixed_window_boundary(c: &Common, _: Progress, out: &mut Claims) {
    let boundary = boundary(c);
    let p = drive(&adm("fixed-window:limit=100,window=1"), &boundary, 0.0, 1.0, deterministic(c));
    let sim = p.stats.max_in_window as f64;
    out.push(
        Claim {
            case: "§39.1 fixed-window 100/s; 99 in [0.5, 1) and 99 in [1, 1.5)".into(),
            claim: "198 pass in one second, almost twice the limit".into(),
            quantity: "most passed in any 1-s window",
            claimed: "198".into(),
            reference: "198".into(),
            tolerance: "exact count".into(),
            test: Test::Exact(198.0),
        },
        sim,
    );
}

/// §39.1, §39.2, §39.3: the most any limiter passes in a one-second window under the worst
/// of three patterns.
fn most_in_one_second(c: &Common, _: Progress, out: &mut Claims) {
    let none = || deterministic(c);
    let mut worst_patterns = vec![boundary(c)];
    worst_patterns.push(Pattern::Constant { rate: 10_000.0 }.times(3.0, &mut none()));
    let mut edge: Vec<f64> = (0..100).map(|i| 0.999 + 0.001 * f64::from(i) / 100.0).collect();
    edge.extend((0..10_000).map(|i| 1.0 + f64::from(i) / 10_000.0));
    worst_patterns.push(edge);
    let worst = |text: &str| -> f64 {
        worst_patterns
            .iter()
            .map(|times| drive(&adm(text), times, 0.0, 1.0, none()).stats.max_in_window)
            .max()
            .unwrap_or(0) as f64
    };
    let tb = worst("token-bucket:rate=100,burst=100");
    let same_as_bucket = format!("= the token bucket's ({})", f(tb));
    let cases: [(&str, &str, &str, f64, &str, Test); 7] = [
        (
            "fixed-window:limit=100,window=1",
            "§39.1 fixed window: up to twice the limit across a boundary",
            "<= 200 (2 x limit)",
            200.0,
            "bound 2 x limit",
            Test::Between(198.0, 200.0),
        ),
        (
            "token-bucket:rate=100,burst=100",
            "§39.1 token bucket: no window-boundary problem",
            "<= 100 (the limit)",
            200.0,
            "at most the limit; B + r t = 200 is its true bound",
            Test::AtMost(100.0),
        ),
        (
            "gcra:rate=100,burst=99",
            "§39.8 GCRA (capacity burst + 1 = 100) is a token bucket",
            "<= 100 (the limit)",
            200.0,
            "at most the limit; (burst + 1) + r t = 200 is its true bound",
            Test::AtMost(100.0),
        ),
        (
            "leaky-bucket:rate=100,burst=99,nodelay=true",
            "§39.12 nodelay turns limit_req into a token bucket",
            &same_as_bucket,
            200.0,
            "equal to token-bucket:rate=100,burst=100's",
            Test::Exact(tb),
        ),
        (
            "leaky-bucket:rate=100,burst=99",
            "§39.2 leaky bucket: output rate strictly constant",
            "<= 101 (r t + 1)",
            101.0,
            "bound r t + 1",
            Test::AtMost(101.0),
        ),
        (
            "sliding-log:limit=100,window=1",
            "§39.3 sliding log: exact, no boundary problem",
            "<= 100 (exact)",
            100.0,
            "bound: the limit",
            Test::AtMost(100.0),
        ),
        (
            "sliding-window:limit=100,window=1",
            "§39.3 two-window counter: worst error about 12.5%",
            "<= 112.5 (limit + 12.5%)",
            200.0,
            "bound limit x 1.125; ~2 x limit is its true bound",
            Test::AtMost(112.5),
        ),
    ];
    for (text, claim, claimed, bound, tolerance, test) in cases {
        let sim = worst(text);
        out.push(
            Claim {
                case: format!("{text}, worst of 3 patterns"),
                claim: claim.into(),
                quantity: "most passed in any 1-s window",
                claimed: claimed.into(),
                reference: format!("<= {}", f(bound)),
                tolerance: tolerance.into(),
                test,
            },
            sim,
        );
    }
}

/// §39.3: the two-window counter's error under random (Poisson) traffic, twice the limit.
fn two_window_counter_error(c: &Common, _: Progress, out: &mut Claims) {
    let maxima: Vec<f64> = (0..c.seeds)
        .map(|rep| {
            let mut rng = stream(c, "sliding-window poisson", rep);
            let times = Pattern::Poisson { rate: 200.0 }.times(100.0, &mut rng);
            out.events += times.len() as u64;
            let s = drive(&adm("sliding-window:limit=100,window=1"), &times, 0.0, 1.0, rng).stats;
            s.max_in_window as f64 / 100.0 - 1.0
        })
        .collect();
    let worst_random = maxima.iter().copied().fold(0.0, f64::max);
    out.push(
        Claim {
            case: "§39.3 sliding-window:limit=100,window=1, Poisson 200/s for 100 s".into(),
            claim: "two-window counter: worst error about 12.5%".into(),
            quantity: "most passed in any 1-s window over the limit, minus 1 (worst replication)",
            claimed: "<= 0.125".into(),
            reference: String::new(),
            tolerance: "bound 0.125".into(),
            test: Test::AtMost(0.125),
        },
        worst_random,
    );
}

/// §39.7: burst duration T = B / (R - r) with r = 100, B = 500, R = 600.
fn burst_duration(c: &Common, _: Progress, out: &mut Claims) {
    let none = || deterministic(c);
    let times = Pattern::Constant { rate: 600.0 }.times(3.0, &mut none());
    let p = drive(&adm("token-bucket:rate=100,burst=500"), &times, 0.0, 1.0, none());
    let first_reject = p.decisions.iter().position(|d| !d).map_or(f64::NAN, |i| times[i]);
    let first_second = times.iter().zip(&p.decisions).filter(|(t, d)| **d && **t < 1.0).count();
    out.push(
        Claim {
            case: "§39.7 token-bucket r=100 B=500, constant 600/s from full".into(),
            claim: "the burst lasts T = B / (R - r) = 1 s".into(),
            quantity: "time of the first rejection (s)",
            claimed: "1".into(),
            reference: "0.9983 (request 599, the first with < 1 token)".into(),
            tolerance: "within 2 arrival gaps (2/600 s)".into(),
            test: Test::Near { value: 1.0, within: 2.0 / 600.0 },
        },
        first_reject,
    );
    out.push(
        Claim {
            case: "§39.7 token-bucket r=100 B=500, constant 600/s from full".into(),
            claim: "600 requests pass in that second".into(),
            quantity: "passed in [0, 1) s",
            claimed: "600".into(),
            reference: "599".into(),
            tolerance: "within 2 requests".into(),
            test: Test::Near { value: 600.0, within: 2.0 },
        },
        first_second as f64,
    );
    out.events += times.len() as u64;
}

/// §39.7: drop probability under Poisson input against 1 - r / lambda, with the exact
/// M/D/1/B blocking probability beside it.
fn drop_probability(c: &Common, progress: Progress, out: &mut Claims) {
    let mut model_rows = Vec::new();
    for burst in [1u32, 10, 100] {
        for x in [1.5, 2.0, 5.0, 10.0] {
            let text = format!("token-bucket:rate=100,burst={burst}");
            let limiter = adm(&text);
            let lambda = 100.0 * x;
            // 2e5 arrivals per replication, the first 10% a warm-up (the bucket starts full).
            let duration = 200_000.0 / lambda;
            let drops: Vec<f64> = (0..c.seeds)
                .map(|rep| {
                    let mut rng = stream(c, &format!("drop {burst} {x}"), rep);
                    let times = Pattern::Poisson { rate: lambda }.times(duration, &mut rng);
                    out.events += times.len() as u64;
                    let s = drive(&limiter, &times, duration / 10.0, 1.0, rng).stats;
                    s.rejected as f64 / s.offered as f64
                })
                .collect();
            let mean = drops.iter().sum::<f64>() / drops.len() as f64;
            let ci = ci95_half_width(&drops).unwrap_or(f64::NAN);
            let claimed = 1.0 - 1.0 / x;
            let exact = theory::md1k_blocking(x, burst as usize);
            if x == 1.5 {
                model_rows.push((text.clone(), lambda, burst, exact, mean, ci));
            }
            out.push(
                Claim {
                    case: format!("§39.7 {text}, Poisson {}/s", f(lambda)),
                    claim: "P_drop ~ 1 - r / lambda".into(),
                    quantity: "fraction rejected",
                    claimed: f(claimed),
                    reference: format!("{} (M/D/1/{burst} blocking)", f(exact)),
                    tolerance: format!("claimed inside simulated +- ci95 ({})", f(ci)),
                    test: Test::Near { value: claimed, within: ci },
                },
                mean,
            );
        }
        progress.done();
    }

    for (text, lambda, burst, exact, mean, ci) in model_rows {
        out.push(
            Claim {
                case: format!("§39.7 {text}, Poisson {}/s", f(lambda)),
                claim: format!("the token bucket is an M/D/1/K queue with K = burst = {burst}"),
                quantity: "fraction rejected",
                claimed: format!("{} (M/D/1/{burst} blocking)", f(exact)),
                reference: f(exact),
                tolerance: format!("claimed inside simulated +- ci95 ({})", f(ci)),
                test: Test::Near { value: exact, within: ci },
            },
            mean,
        );
    }
}

/// §39.8: GCRA is a token bucket; redis-cell's capacity is burst + 1. On-off arrivals (300/s
/// for 0.2 s, then 0.3 s of silence) let the bucket refill, so its capacity matters.
fn gcra_is_a_token_bucket(c: &Common, _: Progress, out: &mut Claims) {
    let none = || deterministic(c);
    let mut rng = stream(c, "gcra", 0);
    let on_off = Pattern::OnOff { rate: 300.0, on: 0.2, off: 0.3 };
    let times = on_off.times(100_000.0 / 120.0, &mut rng);
    out.events += 3 * times.len() as u64;
    let decide = |text: &str| drive(&adm(text), &times, 0.0, 1.0, none()).decisions;
    let bucket = decide("token-bucket:rate=100,burst=21");
    let differ = |other: &[bool]| bucket.iter().zip(other).filter(|(a, b)| a != b).count() as f64;
    for (text, claim) in [
        ("gcra:rate=100,burst=20", "§39.8 GCRA is equivalent to a token bucket"),
        (
            "leaky-bucket:rate=100,burst=20,nodelay=true",
            "§39.12 limit_req with nodelay is a token bucket",
        ),
    ] {
        let d = differ(&decide(text));
        out.push(
            Claim {
                case: format!(
                    "{text} vs token-bucket:rate=100,burst=21, {} on-off arrivals",
                    times.len()
                ),
                claim: claim.into(),
                quantity: "decisions that differ",
                claimed: "0".into(),
                reference: "0 with capacity = burst + 1".into(),
                tolerance: "exact count".into(),
                test: Test::Exact(0.0),
            },
            d,
        );
    }
    let d = differ(&drive(&adm("gcra:rate=100,burst=21"), &times, 0.0, 1.0, none()).decisions);
    out.push(
        Claim {
            case: format!(
                "gcra:rate=100,burst=21 vs token-bucket:rate=100,burst=21, {} on-off arrivals",
                times.len()
            ),
            claim:
                "§39.8 GCRA with burst_tolerance = burst x T is the token bucket of the same burst"
                    .into(),
            quantity: "decisions that differ",
            claimed: "0".into(),
            reference: "the same burst differs: GCRA's capacity is burst + 1".into(),
            tolerance: "exact count".into(),
            test: Test::Exact(0.0),
        },
        d,
    );
    let n = passed_at_once(c, "gcra:rate=0.5,burst=10");
    out.push(
        Claim {
            case: "§39.13 CL.THROTTLE user:123 10 30 60 (gcra:rate=0.5,burst=10), 100 requests at once".into(),
            claim: "the total capacity is burst + 1".into(),
            quantity: "passed at once",
            claimed: "11".into(),
            reference: "11".into(),
            tolerance: "exact count".into(),
            test: Test::Exact(11.0),
        },
        n as f64,
    );
}

/// §39.12: NGINX's example, rate=10r/s burst=20.
fn nginx_burst(c: &Common, _: Progress, out: &mut Claims) {
    let p = drive(&adm("leaky-bucket:rate=10,burst=20"), &AT_ONCE, 0.0, 1.0, deterministic(c));
    out.push(
        Claim {
            case: "§39.12 limit_req rate=10r/s burst=20, 100 requests at once".into(),
            claim: "burst=20: at most 20 requests wait in the bucket".into(),
            quantity: "requests delayed",
            claimed: "20".into(),
            reference: "20 (and one passes at once)".into(),
            tolerance: "exact count".into(),
            test: Test::Exact(20.0),
        },
        p.stats.delayed as f64,
    );
    let n = passed_at_once(c, "leaky-bucket:rate=10,burst=20,nodelay=true");
    out.push(
        Claim {
            case: "§39.12 limit_req rate=10r/s burst=20 nodelay, 100 requests at once".into(),
            claim: "with nodelay, requests pass at once while the burst-20 bucket is not full"
                .into(),
            quantity: "passed at once",
            claimed: "20".into(),
            reference: "21 (excess 0, then 1 .. 20)".into(),
            tolerance: "exact count".into(),
            test: Test::Exact(20.0),
        },
        n as f64,
    );
}

/// §39.2 / §39.12: the leaky bucket's output spacing, and what nodelay changes.
fn leaky_bucket_spacing(c: &Common, _: Progress, out: &mut Claims) {
    let mut rng = stream(c, "spacing", 0);
    let times = Pattern::Poisson { rate: 150.0 }.times(100.0, &mut rng);
    out.events += times.len() as u64;
    let p = drive(&adm("leaky-bucket:rate=100,burst=50"), &times, 0.0, 1.0, deterministic(c));
    let min_gap = p.released.windows(2).map(|w| w[1] - w[0]).fold(f64::INFINITY, f64::min);
    out.push(
        Claim {
            case: "§39.2 leaky-bucket:rate=100,burst=50 (delay), Poisson 150/s for 100 s".into(),
            claim: "output leaves at a constant rate r".into(),
            quantity: "smallest gap between requests let through (s)",
            claimed: "0.01".into(),
            reference: "0.01".into(),
            tolerance: "at least 1/r (relative 1e-9)".into(),
            test: Test::AtLeast(0.01 * (1.0 - 1e-9)),
        },
        min_gap,
    );
}

/// §39.5 and §39.10: NGINX's smooth weighted round robin on {A: 5, B: 1, C: 1}.
fn smooth_weighted_round_robin(_: &Common, _: Progress, out: &mut Claims) {
    let cycle: Vec<String> = crate::experiment::swrr::smooth_cycle(&[5, 1, 1])
        .iter()
        .map(|&i| crate::experiment::swrr::server_name(i).to_uppercase())
        .collect();
    for (section, claimed) in [("§39.5", "A,A,B,A,C,A,A"), ("§39.10", "A,B,A,C,A,A,A")] {
        let differ = claimed.split(',').zip(&cycle).filter(|(a, b)| a != b).count() as f64;
        out.push(
            Claim {
                case: format!("{section} smooth weighted round robin, weights A 5, B 1, C 1"),
                claim: "the selection sequence of one cycle".into(),
                quantity: "positions that differ from the claimed sequence (of 7)",
                claimed: claimed.into(),
                reference: cycle.join(","),
                tolerance: "exact sequence".into(),
                test: Test::Exact(0.0),
            },
            differ,
        );
    }
    let sets: [&[u64]; 4] = [&[5, 1, 1], &[3, 2, 1], &[4, 3, 2, 1], &[100, 1, 1]];
    let off = sets
        .iter()
        .map(|w| {
            let cycle = crate::experiment::swrr::smooth_cycle(w);
            w.iter()
                .enumerate()
                .map(|(i, &wi)| {
                    (cycle.iter().filter(|&&s| s == i).count() as i64 - wi as i64).abs()
                })
                .max()
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0);
    out.push(
        Claim {
            case: "§39.10 smooth weighted round robin, weights 5,1,1; 3,2,1; 4,3,2,1; 100,1,1"
                .into(),
            claim: "in a cycle of W = sum of weights picks, server i is picked exactly w_i times"
                .into(),
            quantity: "largest |picks - w_i|",
            claimed: "0".into(),
            reference: "0".into(),
            tolerance: "exact count".into(),
            test: Test::Exact(0.0),
        },
        off as f64,
    );
}

/// §39.5 and §39.9: consistent hashing with virtual nodes, against modulo hashing.
fn consistent_hashing(c: &Common, _: Progress, out: &mut Claims) {
    let (servers, keys, vnodes) = (10u64, 200_000usize, 150u64);
    let mut spread = Vec::new();
    let mut rms = Vec::new();
    let mut ring_moved = Vec::new();
    let mut modulo_moved = Vec::new();
    for rep in 0..c.seeds {
        let mut rng = stream(c, "hashing", rep);
        let ring = |n: u64| -> Vec<(u64, u64)> {
            let mut points: Vec<(u64, u64)> = (0..n)
                .flat_map(|s| (0..vnodes).map(move |v| (s, v)))
                .map(|(s, v)| {
                    let point = rand::Rng::next_u64(
                        &mut StreamKey::new(c.seed, "vnode").u64(rep).u64(s).u64(v).rng(),
                    );
                    (point, s)
                })
                .collect();
            points.sort_unstable();
            points
        };
        let owner = |points: &[(u64, u64)], key: u64| -> u64 {
            let i = points.partition_point(|&(p, _)| p < key);
            points[i % points.len()].1
        };
        let (before, after) = (ring(servers), ring(servers + 1));
        let key_hashes: Vec<u64> = (0..keys).map(|_| rand::Rng::next_u64(&mut rng)).collect();
        out.events += keys as u64;
        let mut load = vec![0u64; servers as usize];
        let (mut moved, mut moved_mod) = (0u64, 0u64);
        for &k in &key_hashes {
            let s = owner(&before, k);
            load[s as usize] += 1;
            moved += u64::from(owner(&after, k) != s);
            moved_mod += u64::from(k % servers != k % (servers + 1));
        }
        let mean = keys as f64 / servers as f64;
        spread.push(load.iter().map(|&l| (l as f64 / mean - 1.0).abs()).fold(0.0, f64::max));
        let square = load.iter().map(|&l| (l as f64 / mean - 1.0).powi(2)).sum::<f64>();
        rms.push((square / servers as f64).sqrt());
        ring_moved.push(moved as f64 / keys as f64);
        modulo_moved.push(moved_mod as f64 / keys as f64);
    }
    let avg = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let worst_spread = spread.iter().copied().fold(0.0, f64::max);
    // A server's share of the ring is Beta(k, (n - 1) k) for k virtual nodes of n servers:
    // relative sd sqrt((n - 1) / (n k + 1)).
    let share_sd = ((servers - 1) as f64 / ((servers * vnodes) as f64 + 1.0)).sqrt();
    out.push(
        Claim {
            case: format!(
                "§39.5 consistent hashing, {servers} servers x {vnodes} virtual nodes, {keys} keys"
            ),
            claim: "with 150 virtual nodes each server's load is within 5-10% of the mean".into(),
            quantity: "largest |load / mean - 1| (worst replication)",
            claimed: "<= 0.10".into(),
            reference: format!("{} = sd of one server's share", f(share_sd)),
            tolerance: "bound 0.10".into(),
            test: Test::AtMost(0.10),
        },
        worst_spread,
    );
    let typical = avg(&rms);
    out.push(
        Claim {
            case: format!(
                "§39.5 consistent hashing, {servers} servers x {vnodes} virtual nodes, {keys} keys"
            ),
            claim: "with 150 virtual nodes each server's load is within 5-10% of the mean".into(),
            quantity: "root mean square of load / mean - 1 (mean over replications)",
            claimed: "0.05 to 0.10".into(),
            reference: format!("{} = sd of one server's share", f(share_sd)),
            tolerance: "inside [0.05, 0.10]".into(),
            test: Test::Between(0.05, 0.10),
        },
        typical,
    );
    let (ci_ring, ci_mod) = (
        ci95_half_width(&ring_moved).unwrap_or(0.0),
        ci95_half_width(&modulo_moved).unwrap_or(0.0),
    );
    let ideal = 1.0 / (servers + 1) as f64;
    out.push(
        Claim {
            case: format!(
                "§39.9 consistent hashing, {servers} -> {} servers, {vnodes} virtual nodes",
                servers + 1
            ),
            claim: "adding a node moves m / (n + 1) keys".into(),
            quantity: "fraction of keys that move",
            claimed: f(ideal),
            reference: f(ideal),
            tolerance: format!("claimed inside simulated +- ci95 ({})", f(ci_ring)),
            test: Test::Near { value: ideal, within: ci_ring },
        },
        avg(&ring_moved),
    );
    let modulo = servers as f64 / (servers + 1) as f64;
    out.push(
        Claim {
            case: format!("§39.9 modulo hashing, {servers} -> {} servers", servers + 1),
            claim: "hash(key) % N moves m n / (n + 1) keys".into(),
            quantity: "fraction of keys that move",
            claimed: f(modulo),
            reference: f(modulo),
            tolerance: "within ci95 or 4 binomial sd".into(),
            test: Test::Near {
                value: modulo,
                within: ci_mod.max(4.0 * (modulo * (1.0 - modulo) / keys as f64).sqrt()),
            },
        },
        avg(&modulo_moved),
    );
}

/// §39.15: SRE client-side throttling with K = 2 against a backend of 100/s that rejects
/// above 10 requests.
fn adaptive_throttling(c: &Common, progress: Progress, out: &mut Claims) {
    for x in [1.0, 1.5, 2.0, 3.0, 5.0, 10.0] {
        let limiter = adm("adaptive:k=2,window=120,queue_limit=10");
        let lambda = 100.0 * x;
        let duration = 600.0;
        let sent: Vec<f64> = (0..c.seeds)
            .map(|rep| {
                let mut rng = stream(c, &format!("sre {x}"), rep);
                let times = Pattern::Poisson { rate: lambda }.times(duration, &mut rng);
                out.events += times.len() as u64;
                let p = drive(&limiter, &times, 120.0, 100.0, rng);
                p.sent as f64 / p.stats.offered as f64
            })
            .collect();
        let mean = sent.iter().sum::<f64>() / sent.len() as f64;
        let claimed = (2.0 / x).min(1.0);
        out.push(
            Claim {
                case: format!("§39.15 adaptive K=2, backend 100/s, offered {}x", f(x)),
                claim: "no throttling while over half succeed; then about K x accepts are sent"
                    .into(),
                quantity: "fraction of requests sent to the backend",
                claimed: f(claimed),
                reference: String::new(),
                tolerance: "within 0.05 of min(1, K / load)".into(),
                test: Test::Near { value: claimed, within: 0.05 },
            },
            mean,
        );
        progress.done();
    }
}

/// §39.17: distributed limiting without coordination.
fn distributed_limiting(c: &Common, _: Progress, out: &mut Claims) {
    let distributed = [
        (
            "token-bucket:rate=500,burst=500,instances=5",
            1000.0,
            "5 instances each allowing 100/s let a user through at 500/s",
            500.0,
        ),
        (
            "token-bucket:rate=100,burst=100,instances=5",
            100.0,
            "quotas of 100/5 = 20/s per instance: a user at its limit spread evenly",
            100.0,
        ),
        (
            "token-bucket:rate=100,burst=100,instances=5,split=skewed,skew=0.6",
            100.0,
            "quotas of 20/s per instance: a user at its limit, 60% on one instance",
            100.0,
        ),
    ];
    for (text, lambda, claim, claimed) in distributed {
        let limiter = adm(text);
        let duration = 600.0;
        let rates: Vec<f64> = (0..c.seeds)
            .map(|rep| {
                let mut rng = stream(c, &format!("distributed {text}"), rep);
                let times = Pattern::Poisson { rate: lambda }.times(duration, &mut rng);
                out.events += times.len() as u64;
                let s = drive(&limiter, &times, 60.0, 1.0, rng).stats;
                s.admitted as f64 / (duration - 60.0)
            })
            .collect();
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        out.push(
            Claim {
                case: format!("§39.17 {text}, Poisson {}/s", f(lambda)),
                claim: claim.into(),
                quantity: "admitted per second",
                claimed: f(claimed),
                reference: String::new(),
                tolerance: "within 2% of the claimed rate".into(),
                test: Test::Relative { value: claimed, within: 0.02 },
            },
            mean,
        );
    }
}

/// §39.11: latency of round robin and JSQ, simulated on the scenario engine.
fn latency(c: &Common, progress: Progress, out: &mut Claims) {
    let (n, rho) = (10usize, 0.8);
    let run = RunConfig::new(50_000, 500_000, 100_000);
    let det = ServiceSpec::Det.build(Path::new(".")).expect("det");
    let det_key = format!(
        "{}|{}",
        serde_json::to_string(&ArrivalSpec::Poisson { load: Some(rho), rate: None })
            .expect("serialises"),
        serde_json::to_string(&ServiceSpec::Det).expect("serialises")
    );
    let farm = Farm::homogeneous(n, rho);
    let scenario = |policy, workload: Workload| Scenario {
        farm: farm.clone(),
        policy,
        info: Information::Live,
        track_levels: false,
        tuning: crate::policy::Tuning::default(),
        clients: crate::model::Clients::default(),
        workload,
    };
    let det_workload = Workload {
        arrivals: Some(crate::workload::Arrivals::poisson(farm.arrival_rate())),
        service: det,
        key: det_key,
        keys: None,
    };
    let high = |policy| Scenario {
        farm: Farm::homogeneous(n, 0.95),
        ..scenario(policy, Workload::default())
    };
    let scenarios = [
        scenario(PolicyKind::RoundRobin, det_workload),
        scenario(PolicyKind::RoundRobin, Workload::default()),
        scenario(PolicyKind::Jsq, Workload::default()),
        high(PolicyKind::RoundRobin),
        high(PolicyKind::Jsq),
    ];
    let outcomes = run_scenarios(&scenarios, &run, c, progress);
    out.events += crate::experiment::total_events(&outcomes);
    let jsq_claim = 1.0 + rho.powi(n as i32) / (n as f64 * (1.0 - rho));
    let latency = [
        (
            "round robin, deterministic service",
            "is an M/D/1 queue per server: 1 + rho / (2 (1 - rho))",
            theory::md1_mean(rho),
            "below M/D/1: each server sees Erlang-10 gaps, not Poisson".to_string(),
        ),
        (
            "round robin, exponential service",
            "is N independent M/M/1: 1 / (mu - lambda / N)",
            theory::mm1_mean(rho),
            format!("{} (E_10/M/1)", f(theory::ekm1_mean(n as u32, rho))),
        ),
        (
            "jsq, exponential service",
            "close to M/M/N: 1/mu + rho^N / (N mu (1 - rho))",
            jsq_claim,
            format!(">= {} (M/M/N, a lower bound)", f(theory::mmn_mean(n as u32, rho))),
        ),
    ];
    for ((what, claim, claimed, reference), o) in latency.into_iter().zip(&outcomes[..3]) {
        let s = &o.summary;
        let ci = s.mean_ci95.unwrap_or(f64::NAN);
        out.push(
            Claim {
                case: format!("§39.11 {what}, N = {n}, rho = {rho}"),
                claim: claim.into(),
                quantity: "mean response time (service times)",
                claimed: f(claimed),
                reference,
                tolerance: format!("claimed inside simulated +- ci95 ({})", f(ci)),
                test: Test::Near { value: claimed, within: ci },
            },
            s.mean,
        );
    }
    let ratio = outcomes[3].summary.mean / outcomes[4].summary.mean;
    out.push(
        Claim {
            case: format!("§39.11 round robin vs jsq, exponential service, N = {n}, rho = 0.95"),
            claim: "at high load JSQ is an order of magnitude better than round robin".into(),
            quantity: "mean response time of rr over jsq's",
            claimed: ">= 10".into(),
            reference: format!(
                "{} (E_10/M/1 over M/M/10)",
                f(theory::ekm1_mean(10, 0.95) / theory::mmn_mean(10, 0.95))
            ),
            tolerance: "ratio of the pooled means >= 10".into(),
            test: Test::AtLeast(10.0),
        },
        ratio,
    );
}
