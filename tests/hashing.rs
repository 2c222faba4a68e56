//! Consistent hashing against its theory: keys moved when a server is added, and balance.

use lbsim::experiment::hash::{Case, Placement, measure, placement_seed};
use lbsim::hashing::{DEFAULT_TABLE_SIZE, Maglev, key_hash};
use lbsim::rng::StreamKey;
use rand::RngExt;

use crate::util::lbsim_ok;

/// The hashes of the keys `0..m`, sorted.
fn sorted_keys(m: u64) -> Vec<u64> {
    let mut h: Vec<u64> = (0..m).map(key_hash).collect();
    h.sort_unstable();
    h
}

/// Mean and sample variance.
fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// Moved fractions of `seeds` replications of `case` on `n` servers.
fn moved(case: Case, n: usize, keys: &[u64], seeds: u64) -> Vec<f64> {
    (0..seeds).map(|k| measure(case, n, keys, 1, k).moved_fraction).collect()
}

#[test]
fn the_ring_moves_one_key_in_n_plus_one_within_three_standard_errors() {
    // Adding server n to a ring of n servers with k points each moves exactly the keys that fall
    // on the arcs ending at the new server's points. With the N = (n+1)k points independent and
    // uniform on the circle, the arcs are the spacings of N uniform points (Dirichlet(1,...,1)),
    // and the new server's share s is the sum of k of them: s ~ Beta(k, N - k), mean
    // p = 1/(n+1), variance p(1-p)/(N+1). Given the ring, each of the m keys lands in that share
    // independently: moved/m has variance s(1-s)/m more. So one ring's moved fraction has
    //     sigma^2 = p(1-p)/(N+1) + p(1-p)/m      (the second term slightly overstated),
    // and the placement term dominates here (N = 10100, m = 10^5): the moved fraction of one ring
    // is itself random through the placement, and a binomial error over the keys alone would be
    // three times too small. The mean over S seeds has standard error sigma / sqrt(S).
    let (n, k, m, seeds) = (100usize, 100usize, 100_000u64, 40u64);
    let keys = sorted_keys(m);
    let x = moved(Case::Ring(k), n, &keys, seeds);
    let (mean, var) = mean_var(&x);
    let p = 1.0 / (n + 1) as f64;
    let big_n = ((n + 1) * k) as f64;
    let sigma2 = p * (1.0 - p) / (big_n + 1.0) + p * (1.0 - p) / m as f64;
    let se = (sigma2 / seeds as f64).sqrt();
    assert!((mean - p).abs() < 3.0 * se, "mean moved {mean} vs 1/(n+1) = {p} (se {se})");
    // The seed-to-seed spread agrees with sigma^2: (S-1) s^2 / sigma^2 is chi-square with 39
    // degrees of freedom, whose 0.05% and 99.95% points over 39 are 0.415 and 1.919
    // (Wilson-Hilferty).
    let ratio = var / sigma2;
    assert!((0.415..1.919).contains(&ratio), "spread over seeds {var} vs model {sigma2}");
}

#[test]
fn maglev_hands_the_new_server_its_share_and_moves_somewhat_more_than_that() {
    // The new server's keys: it holds floor(M/(n+1)) or ceil(M/(n+1)) of the M entries (the
    // servers take turns), a share q within 1/M of p = 1/(n+1); the m keys fall on its entries
    // independently, so the fraction that goes to it is within 3 sqrt(q(1-q)/m) of q, and the
    // mean over S seeds within 3 sqrt(q(1-q)/(m S)).
    let (n, m, seeds) = (100usize, 100_000u64, 10u64);
    let keys = sorted_keys(m);
    let p = 1.0 / (n + 1) as f64;
    let mut to_new = Vec::new();
    let mut all = Vec::new();
    for k in 0..seeds {
        let s = placement_seed(1, "hash-maglev", k);
        let (small, big) =
            (Maglev::new(n, DEFAULT_TABLE_SIZE, s), Maglev::new(n + 1, DEFAULT_TABLE_SIZE, s));
        let mut new = 0u64;
        let mut changed = 0u64;
        for &h in &keys {
            let (a, b) = (small.lookup(h), big.lookup(h));
            new += u64::from(b == n);
            changed += u64::from(a != b);
        }
        to_new.push(new as f64 / m as f64);
        all.push(changed as f64 / m as f64);
        let moved = measure(Case::Maglev, n, &keys, 1, k).moved_fraction;
        assert_eq!(moved, changed as f64 / m as f64, "the command measures the same");
    }
    let (mean_new, _) = mean_var(&to_new);
    let tolerance =
        3.0 * (p * (1.0 - p) / (m * seeds) as f64).sqrt() + 1.0 / DEFAULT_TABLE_SIZE as f64;
    assert!((mean_new - p).abs() < tolerance, "to the new server {mean_new} vs {p}");
    // Maglev does not promise minimal disruption (§3.4: the table is rebuilt, and a new server's
    // turn pushes old servers to their next preferences): entries change between old servers
    // too. Measured at n = 100, M = 65537: about 1.55 times the ideal. The keys that change
    // between old servers are many more than the noise of the share above, whatever the seed.
    let (mean_all, _) = mean_var(&all);
    assert!(all.iter().zip(&to_new).all(|(a, b)| a >= b));
    assert!(mean_all > p + 10.0 * tolerance, "maglev moved {mean_all}, ideal {p}");
    assert!(mean_all < 2.0 * p, "maglev moved {mean_all}, more than twice the ideal {p}");
}

#[test]
fn modulo_moves_all_but_one_key_in_n_plus_one() {
    // h % n == h % (n+1) exactly when h mod n(n+1) < n, a fraction 1/(n+1) of uniform hashes: a
    // key moves with probability n/(n+1), independently, so the moved fraction of m keys is
    // within 3 sqrt(q(1-q)/m) of q = n/(n+1) (modulo has no seed: one sample).
    let (n, m) = (100usize, 1_000_000u64);
    let keys = sorted_keys(m);
    let x = measure(Case::Modulo, n, &keys, 1, 0).moved_fraction;
    let q = n as f64 / (n + 1) as f64;
    let se = (q * (1.0 - q) / m as f64).sqrt();
    assert!((x - q).abs() < 3.0 * se, "modulo moved {x} vs n/(n+1) = {q}");
    assert_eq!(measure(Case::Modulo, n, &keys, 1, 7), measure(Case::Modulo, n, &keys, 1, 0));
}

#[test]
fn ring_imbalance_shrinks_as_vnodes_grow() {
    // A server's share of a ring with k points per server is a sum of k spacings, about
    // Gamma(k)/(k n): its relative spread 1/sqrt(k) falls ten-fold from k = 1 to 100 (the most
    // loaded of 100 servers holds about 5x the mean at k = 1, 1.25x at 100), far beyond the
    // seed-to-seed spread of a median over 5 placements.
    let out = lbsim_ok(&["hash", "--methods", "ring", "--keys", "2e5", "--format", "csv"]);
    let max: Vec<f64> =
        out.lines().skip(1).map(|l| l.split(',').nth(5).unwrap().parse().unwrap()).collect();
    assert_eq!(max.len(), 4, "{out}");
    assert!(max.windows(2).all(|w| w[0] > w[1]), "max_over_mean by vnodes 1,10,100,1000: {max:?}");
    assert!(max[0] > 3.0 && max[3] < 1.2, "{max:?}");
}

/// The ring's max over mean under the ideal model: n k points and m keys independent and
/// uniform on the circle (drawn from lbsim's PCG streams, not from xxHash64).
fn ideal_ring_max_over_mean(n: usize, k: usize, m: usize, draw: u64) -> f64 {
    let mut rng = StreamKey::new(99, "ideal-ring").u64(draw).rng();
    let mut points: Vec<(f64, usize)> = (0..n * k).map(|i| (rng.random::<f64>(), i % n)).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut counts = vec![0u64; n];
    for _ in 0..m {
        let h: f64 = rng.random();
        let i = points.partition_point(|p| p.0 < h);
        counts[points[if i == points.len() { 0 } else { i }].1] += 1;
    }
    *counts.iter().max().unwrap() as f64 * n as f64 / m as f64
}

#[test]
fn the_rings_imbalance_is_that_of_uniformly_random_points() {
    // xxHash64 places the points and the keys as independent uniform draws would: the mean of
    // max_over_mean over 40 placements agrees with its mean over 200 draws of the ideal model
    // within 3 standard errors of the difference (each from its sample's spread).
    let (n, k, m) = (100usize, 30usize, 50_000u64);
    let keys = sorted_keys(m);
    let measured: Vec<f64> =
        (0..40).map(|s| measure(Case::Ring(k), n, &keys, 1, s).max_over_mean).collect();
    let model: Vec<f64> = (0..200).map(|d| ideal_ring_max_over_mean(n, k, m as usize, d)).collect();
    let ((a, va), (b, vb)) = (mean_var(&measured), mean_var(&model));
    let se = (va / measured.len() as f64 + vb / model.len() as f64).sqrt();
    assert!((a - b).abs() < 3.0 * se, "measured {a} vs ideal {b} (se {se})");
}

#[test]
fn a_bounded_ring_never_exceeds_haproxys_cap() {
    // Each key is placed on a server holding fewer than its slots; the last key sees m - 1
    // placed, T = ceil(m F) slots in all, at most ceil(T / n) per server (HAProxy's share is
    // floor(T/n) plus at most one remainder slot). So the fullest server holds at most
    // ceil(ceil(m F) / n) keys.
    let (n, m) = (50usize, 20_000u64);
    let keys = sorted_keys(m);
    for (v, f) in [(1, 1.25), (10, 1.25), (100, 1.1), (10, 2.0)] {
        let p: Placement = measure(Case::Bounded(v, f), n, &keys, 3, 0);
        let cap = ((m as f64 * f).ceil() / n as f64).ceil();
        let max = p.max_over_mean * m as f64 / n as f64;
        assert!(max <= cap + 1e-9, "vnodes {v} factor {f}: max {max} over cap {cap}");
        let plain = measure(Case::Ring(v), n, &keys, 3, 0);
        if plain.max_over_mean > f + 0.05 {
            assert!(p.max_over_mean < plain.max_over_mean, "the cap binds at vnodes {v}");
        }
    }
}

#[test]
fn hash_rows_are_the_same_on_any_threads_and_alone() {
    let args =
        ["hash", "--keys", "30000", "--vnodes", "1,50", "--balance", "1.5", "--format", "csv"];
    let one = lbsim_ok(&[&args[..], &["--threads", "1"]].concat());
    let two = lbsim_ok(&[&args[..], &["--threads", "2"]].concat());
    assert_eq!(one, two);
    let header =
        "method,servers,keys,vnodes,seeds,max_over_mean,moved_fraction,ideal_moved_fraction";
    assert_eq!(one.lines().next(), Some(header));
    // A row does not depend on the others: vnodes 50 alone prints the same ring line.
    let alone = lbsim_ok(&[
        "hash",
        "--keys",
        "30000",
        "--vnodes",
        "50",
        "--methods",
        "ring",
        "--format",
        "csv",
    ]);
    let line =
        |s: &str| s.lines().find(|l| l.starts_with("ring,100,30000,50,")).unwrap().to_string();
    assert_eq!(line(&one), line(&alone));
    // Maglev and modulo leave vnodes empty.
    assert!(one.lines().any(|l| l.starts_with("maglev,100,30000,,5,")), "{one}");
    assert!(one.lines().any(|l| l.starts_with("modulo,100,30000,,5,")), "{one}");
}

#[test]
fn bad_hash_options_are_refused_with_one_line() {
    for args in [
        &["hash", "--balance", "1"][..],
        &["hash", "--balance", "1.255"],
        &["hash", "--balance", "1.5", "--methods", "maglev"],
        &["hash", "--methods", "ring,chord"],
        &["hash", "--servers", "70000"],
        &["hash", "--vnodes", "0"],
        &["hash", "--vnodes", "1e6"],
        &["hash", "--keys", "0"],
    ] {
        let out = crate::util::lbsim(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains("--"), "{args:?}: {stderr}");
    }
}
