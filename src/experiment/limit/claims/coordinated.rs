//! §39.16, §39.17 and §39.21: limiters that coordinate. Gateways that do not (one of them
//! rejects while the total is under the limit), gateways that sync their quotas every `T`
//! (scheme 3), a central limiter that costs a round trip per decision (scheme 1), and a
//! composite whose layers a request must all pass.

use super::{Claim, Claims, Pattern, Test, adm, deterministic, drive, f, stream};
use crate::admission::{Admission, AdmissionSpec, Decision, Gate};
use crate::experiment::Progress;
use crate::experiment::common::Common;
use crate::theory;
use crate::workload::KeySpec;

/// Five gateways of a 500/s limit (100/s each, 100 tokens each), 60% of the traffic on the
/// first.
const SKEWED: &str = "token-bucket:rate=500,burst=500,instances=5,split=skewed,skew=0.6";

/// The skewed traffic: Poisson 400/s, under the 500/s limit (240/s on the first gateway, 40/s
/// on each other).
const UNDER: f64 = 400.0;

/// Simulated time of the distributed runs.
const DURATION: f64 = 600.0;

/// Mean over the replications of `value` of a run of `text` on Poisson `lambda` for
/// [`DURATION`], counted from `from`.
fn mean_over(
    c: &Common,
    out: &mut Claims,
    text: &str,
    lambda: f64,
    from: f64,
    value: impl Fn(&crate::admission::AdmissionStats) -> f64,
) -> f64 {
    let limiter = adm(text);
    let values: Vec<f64> = (0..c.seeds)
        .map(|rep| {
            let mut rng = stream(c, &format!("coordinated {text} {lambda}"), rep);
            let times = Pattern::Poisson { rate: lambda }.times(DURATION, &mut rng);
            out.events += times.len() as u64;
            value(&drive(&limiter, &times, from, 1.0, rng).stats)
        })
        .collect();
    values.iter().sum::<f64>() / values.len() as f64
}

/// §39.17: without coordination, a gateway that gets more than its share rejects while the
/// total is under the limit.
pub(super) fn skewed_gateways(c: &Common, _: Progress, out: &mut Claims) {
    let measured = DURATION - 60.0;
    let rejected = mean_over(c, out, SKEWED, UNDER, 60.0, |s| s.rejected as f64 / measured);
    // Gateway 0 gets 0.6 x 400 = 240/s on a 100/s quota; the others' 40/s fit their 100/s.
    let expected = 0.6 * UNDER - 100.0;
    out.push(
        Claim {
            case: format!("§39.17 {SKEWED}, Poisson {}/s", f(UNDER)),
            claim:
                "5 gateways of 100/s, skewed traffic: one rejects while the total is under 500/s"
                    .into(),
            quantity: "rejected per second",
            claimed: "> 0".into(),
            reference: format!("{} (= 0.6 x 400 - 100, all on gateway 1)", f(expected)),
            // Gateway 1's 240/s over 540 s is Poisson: sd 0.67/s, 0.5% of 140; 3% is 6 sd.
            tolerance: "within 3%: Poisson sd of gateway 1's count is 0.5%".into(),
            test: Test::Relative { value: expected, within: 0.03 },
        },
        rejected,
    );
}

/// The fluid model of scheme 3 on [`SKEWED`] traffic under the limit: the requests gateway 1
/// cannot pass until the syncs have moved enough quota to it, and the number of sync periods
/// that takes. Gateway 1 gets 240/s and starts with 100 tokens; the others use 40/s each.
fn fluid_shortfall(period: f64) -> (f64, u32) {
    let (rate, n, first, other) = (500.0, 5.0, 0.6 * UNDER, 0.1 * UNDER);
    let (mut quota, mut tokens, mut lost, mut periods) = (rate / n, 100.0, 0.0, 0);
    while quota < first {
        let available = tokens + quota * period;
        let passed = (first * period).min(available);
        lost += first * period - passed;
        tokens = (available - passed).min(100.0);
        let used = (passed / period).min(quota);
        let headroom = (rate - used - 4.0 * other).max(0.0);
        quota = used + headroom / n;
        periods += 1;
    }
    (lost, periods)
}

/// §39.17 scheme 3: local quotas synchronised every `T` admit what the limit allows (here all of
/// the skewed 400/s); the error grows with `T`. And the chapter's bound on the over-admission.
pub(super) fn synchronised_quotas(c: &Common, _: Progress, out: &mut Claims) {
    let offered = UNDER * DURATION;
    for period in [0.5, 1.0, 5.0] {
        let text = format!("{SKEWED},sync={}", f(period));
        let rejected =
            mean_over(c, out, &text, UNDER, 0.0, |s| s.rejected as f64 / s.offered as f64);
        let (lost, periods) = fluid_shortfall(period);
        // Once gateway 1 has 260/s for its 240/s, it rejects as an M/D/1/100 queue at load
        // 240/260 does; the others (60/s for 40/s) never in practice.
        let after = theory::md1k_blocking(240.0 / 260.0, 100) * 240.0 * DURATION;
        let reference = (lost + after) / offered;
        // The shortfall's noise: gateway 1's Poisson arrivals during the transient.
        let sd = (240.0 * (f64::from(periods) * period).max(1.0)).sqrt();
        let bound = reference + 4.0 * sd / offered;
        out.push(
            Claim {
                case: format!("§39.17 sync={}: {SKEWED}, Poisson {}/s", f(period), f(UNDER)),
                claim: "synced every T, the admitted rate nears the limit; the error grows with T"
                    .into(),
                quantity: "fraction rejected",
                claimed: "~0".into(),
                reference: format!(
                    "{} (fluid transient of {periods} syncs + M/D/1/100)",
                    f(reference)
                ),
                tolerance: format!(
                    "<= reference + 4 sd of the transient's arrivals ({})",
                    f(bound)
                ),
                test: Test::AtMost(bound),
            },
            rejected,
        );
    }
    // Over the limit: the chapter's bound on what sync lets through beyond R t, with R = 500,
    // T = 1, N = 5; lbsim's quotas add up to R, so only the buckets' 500 tokens can.
    let text = format!("{SKEWED},sync=1");
    let limiter = adm(&text);
    let beyond = (0..c.seeds)
        .map(|rep| {
            let mut rng = stream(c, &format!("coordinated over {text}"), rep);
            let times = Pattern::Poisson { rate: 1000.0 }.times(DURATION, &mut rng);
            out.events += times.len() as u64;
            let s = drive(&limiter, &times, 0.0, 1.0, rng).stats;
            s.admitted as f64 - 500.0 * times.last().copied().unwrap_or(0.0)
        })
        .fold(f64::NEG_INFINITY, f64::max);
    out.push(
        Claim {
            case: format!("§39.17 sync=1: {SKEWED}, Poisson 1000/s"),
            claim: "error at most rate x sync interval x instances (100 x 1 x 5 = 500)".into(),
            quantity: "admitted beyond R t (worst replication)",
            claimed: "<= 2500".into(),
            reference: "<= 500 (the buckets' capacities: the quotas add up to R)".into(),
            tolerance: "bound 2500".into(),
            test: Test::AtMost(2500.0),
        },
        beyond,
    );
}

/// §39.17 scheme 1: one central counter decides exactly as one local bucket of the whole rate,
/// and every decision costs a round trip.
pub(super) fn central_limiter(c: &Common, _: Progress, out: &mut Claims) {
    let (local, central) =
        ("token-bucket:rate=500,burst=500", "token-bucket:rate=500,burst=500,rtt=0.00075");
    let mut rng = stream(c, "central", 0);
    let times = Pattern::OnOff { rate: 1000.0, on: 0.5, off: 0.5 }.times(DURATION, &mut rng);
    out.events += 2 * times.len() as u64;
    let a = drive(&adm(local), &times, 0.0, 1.0, deterministic(c));
    let b = drive(&adm(central), &times, 0.0, 1.0, deterministic(c));
    let differ = a.decisions.iter().zip(&b.decisions).filter(|(x, y)| x != y).count();
    out.push(
        Claim {
            case: format!(
                "§39.17 scheme 1: {central} vs rtt none, {} on-off arrivals",
                times.len()
            ),
            claim: "a central counter (Redis) is exact: it decides as one bucket of the whole rate"
                .into(),
            quantity: "decisions that differ",
            claimed: "0".into(),
            reference: "0".into(),
            tolerance: "exact count".into(),
            test: Test::Exact(0.0),
        },
        differ as f64,
    );
    let per_request = b.delay / b.stats.delayed as f64 * 1000.0;
    out.push(
        Claim {
            case: format!("§39.17 scheme 1, {central}, the same arrivals"),
            claim: "but every request pays a round trip to it (~0.5-1 ms)".into(),
            quantity: "latency added per admitted request (ms)",
            claimed: "0.5 to 1".into(),
            reference: "0.75 (= rtt)".into(),
            tolerance: "= rtt (relative 1e-9: sums of differences of times)".into(),
            test: Test::Relative { value: 0.75, within: 1e-9 },
        },
        per_request,
    );
}

/// A composite from its `[admission]` table.
fn composite(table: &str, keys: Option<&KeySpec>) -> Admission {
    let spec: AdmissionSpec = toml::from_str(table).expect("a built-in composite");
    spec.resolve().and_then(|a| a.with_scopes(keys, 1)).expect("a built-in composite")
}

/// §39.16 and §39.21: a request must pass every layer.
pub(super) fn composite_layers(c: &Common, _: Progress, out: &mut Claims) {
    // 128 requests a second for 10 s, at k / 128 (exact in binary): a 64/s bucket of one
    // token alone passes every other (640); a window of 30 a second alone passes 300.
    let times: Vec<f64> = (0..1280).map(|k| f64::from(k) / 128.0).collect();
    out.events += 2 * times.len() as u64;
    let bucket = "{ kind = \"token-bucket\", rate = 64.0, burst = 1.0 }";
    let window = "{ kind = \"fixed-window\", limit = 30, window = 1.0 }";
    let passed = |layers: String| {
        let a = composite(&format!("kind = \"composite\"\nlayers = [{layers}]"), None);
        drive(&a, &times, 0.0, 1.0, deterministic(c)).stats.admitted as f64
    };
    out.push(
        Claim {
            case: "§39.16 composite [token-bucket 64/s burst 1, fixed-window 30 per 1 s], \
                   constant 128/s for 10 s"
                .into(),
            claim: "a request must pass every layer: the composite passes the fewest of them"
                .into(),
            quantity: "passed",
            claimed: "300 = min(640, 300)".into(),
            reference: "300".into(),
            tolerance: "exact count".into(),
            test: Test::Exact(300.0),
        },
        passed(format!("{bucket}, {window}")),
    );
    out.push(
        Claim {
            case: "§39.16 composite [fixed-window 30 per 1 s, token-bucket 64/s burst 1], \
                   constant 128/s for 10 s"
                .into(),
            claim: "checked in order to the first rejection: earlier layers are not refunded"
                .into(),
            quantity: "passed",
            claimed: "150".into(),
            reference: "150".into(),
            tolerance: "exact count".into(),
            test: Test::Exact(150.0),
        },
        passed(format!("{window}, {bucket}")),
    );
    heavy_key(c, out);
}

/// §39.21: a per-user bucket holds the heavy user to its rate while the others pass.
fn heavy_key(c: &Common, out: &mut Claims) {
    // Zipf s = 3 over 10 keys: key 0 gets 1 / H = 83.5% of 100/s, key 1 10.4%, the rest less.
    let keys = KeySpec {
        count: crate::count::Count(10),
        popularity: crate::named::Named::Is(crate::workload::keys::Popularity::Zipf),
        s: 3.0,
    };
    let h: f64 = (1..=10).map(|k| f64::from(k).powi(-3)).sum();
    let table = "kind = \"composite\"\nlayers = [\
                 { kind = \"token-bucket\", rate = 1000.0, burst = 1000.0 },\
                 { kind = \"token-bucket\", rate = 20.0, burst = 20.0, per = \"key\" }]";
    let a = composite(table, Some(&keys));
    let (mut heavy, mut others, mut others_rejected) = (0u64, 0u64, 0u64);
    for rep in 0..c.seeds {
        let mut rng = stream(c, "composite heavy key", rep);
        let times = Pattern::Poisson { rate: 100.0 }.times(DURATION, &mut rng);
        out.events += times.len() as u64;
        let mut gate = Gate::new(&a, rng);
        for &t in &times {
            let d = gate.offer(t, true);
            let key = gate.composite.as_ref().map_or(0, |c| c.last_key);
            match (key, d) {
                (0, Decision::Admit) => heavy += 1,
                (0, _) => {}
                (_, Decision::Reject) => {
                    others += 1;
                    others_rejected += 1;
                }
                _ => others += 1,
            }
        }
    }
    let span = DURATION * c.seeds as f64;
    out.push(
        Claim {
            case: "§39.21 composite [global 1000/s, per-key 20/s burst 20] token buckets, Poisson \
                   100/s, Zipf(3) keys"
                .into(),
            claim: "a request must pass every layer: the heavy user is held to its per-user rate"
                .into(),
            quantity: "heavy key's admitted per second (83.5/s offered)",
            claimed: "20".into(),
            reference: format!("<= {} (20 + burst / t)", f(20.0 + 20.0 / DURATION)),
            // At most B + r t; tokens are lost only when the bucket is full, 20 refills without
            // an arrival at 83.5/s: about 1e-12.
            tolerance: "in [19.9, 20 + 20/600]: B + r t, less tokens lost when full".into(),
            test: Test::Between(19.9, 20.0 + 20.0 / DURATION),
        },
        heavy as f64 / span,
    );
    let second = 100.0 * 0.125 / h;
    let blocking = theory::md1k_blocking(second / 20.0, 20);
    out.push(
        Claim {
            case: "§39.21 the same composite, the other 9 keys".into(),
            claim: "while the others pass".into(),
            quantity: "fraction of the other keys' requests rejected",
            claimed: "0".into(),
            reference: format!(
                "<= {} (M/D/1/20 blocking of key 1, {}/s on 20/s)",
                f(blocking),
                f(second)
            ),
            tolerance: "at most 1e-3".into(),
            test: Test::AtMost(1e-3),
        },
        others_rejected as f64 / others.max(1) as f64,
    );
}
