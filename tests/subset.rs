//! Subsetting (SRE book, ch. 20) against what can be derived about it: deterministic subsets
//! spread connections exactly evenly when the rounds are full, within one when the last one is
//! not; random subsets spread them as independent clients' binomial draws must.

use lbsim::subset::{Spread, Subsetting, connections, key, random_cv2, subset};

use crate::util::{lbsim, lbsim_ok};

/// Clients, backends and subset size with `size` dividing `backends`.
const DIVIDING: [(usize, usize, usize); 5] =
    [(300, 300, 10), (300, 300, 30), (1200, 100, 25), (12, 12, 3), (50, 50, 50)];

#[test]
fn deterministic_full_rounds_give_every_backend_the_same_count() {
    for (clients, backends, size) in DIVIDING {
        let subset_count = backends / size;
        assert_eq!(clients % subset_count, 0, "the cases are full rounds");
        // Each full round hands every backend to exactly one client.
        let each = (clients / subset_count) as u32;
        for seed in 0..20 {
            let counts = connections(Subsetting::Deterministic, clients, backends, size, key(seed));
            assert!(counts.iter().all(|&c| c == each), "{clients} {backends} {size}: {counts:?}");
        }
    }
}

#[test]
fn deterministic_partial_last_round_spreads_within_one() {
    // size divides backends, clients not a multiple of subset_count: the last round's clients
    // take distinct backends, (clients % subset_count) * size of them, one more each.
    for (clients, backends, size) in [(301, 300, 30), (77, 12, 3), (1000, 98, 7), (5, 300, 10)] {
        let subset_count = backends / size;
        let (full, extra) = (clients / subset_count, clients % subset_count);
        assert!(extra > 0);
        for seed in 0..20 {
            let counts = connections(Subsetting::Deterministic, clients, backends, size, key(seed));
            let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
            assert_eq!((min, max), (full as u32, full as u32 + 1), "{clients} {backends} {size}");
            let above = counts.iter().filter(|&&c| c == max).count();
            assert_eq!(above, extra * size, "{clients} {backends} {size}");
        }
    }
}

#[test]
fn every_client_gets_size_distinct_backends() {
    for method in Subsetting::ALL {
        for (clients, backends, size) in [(300, 300, 90), (301, 300, 30), (40, 10, 3)] {
            for client in 0..clients {
                let s = subset(method, client, clients, backends, size, 7);
                let mut sorted = s.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), size, "{method:?} client {client}: {s:?}");
                assert!(sorted.iter().all(|&b| (b as usize) < backends));
            }
        }
    }
}

/// Mean and sample standard deviation.
fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, v.sqrt())
}

#[test]
fn random_spread_matches_the_binomial_expectation() {
    // Each backend's count X_b is Binomial(C, p = S/N). The counts sum to C*S, so their mean over
    // the backends is the constant mu = C*p, and E[cv^2] = Var(X_b) / mu^2 = (1 - p) / (C p)
    // exactly (`random_cv2`, derived there).
    //
    // Tolerance, from the normal approximation of the counts: with D_b = X_b - mu, Var(D_b^2) =
    // 2 sigma^4 (plus the binomial's excess kurtosis k = (1 - 6p(1-p)) / (C p (1-p)) times
    // sigma^4), and two backends' counts correlate at rho = -1/(N-1) (a client's indicators
    // covary by -p(1-p)/(N-1)), so Cov(D_b^2, D_b'^2) = 2 rho^2 sigma^4. Summing over all pairs,
    // Var(cv^2) ~= E[cv^2]^2 (2/(N-1) + k/N): a relative standard deviation of about
    // sqrt(2/N) per seed. Over R seeds the mean of cv^2 is within 4 of its standard errors
    // (relative 4 sqrt((2/(N-1) + k/N) / R), 1.5% at N = 300 and R = 500) but for a 1-in-15,000
    // accident; the seeds are fixed, so the test is deterministic. Sampling with replacement
    // instead would move E[cv^2] by a factor (1 - 1/N) / (1 - p), 42% at p = 0.3.
    const R: u64 = 500;
    for (clients, backends, size) in [(300, 300, 90), (300, 300, 30), (100, 50, 5)] {
        let cv2: Vec<f64> = (0..R)
            .map(|k| {
                let counts =
                    connections(Subsetting::Random, clients, backends, size, key(3).u64(k));
                Spread::of(&counts).unwrap().cv.powi(2)
            })
            .collect();
        let (m, sd) = mean_sd(&cv2);
        let expected = random_cv2(clients, backends, size);
        let p = size as f64 / backends as f64;
        let kurtosis = (1.0 - 6.0 * p * (1.0 - p)) / (clients as f64 * p * (1.0 - p));
        let n = backends as f64;
        let rel_sd = (2.0 / (n - 1.0) + kurtosis / n).sqrt();
        let tolerance = 4.0 * expected * rel_sd / (R as f64).sqrt();
        assert!(
            (m - expected).abs() <= tolerance,
            "C {clients}, N {backends}, S {size}: mean cv^2 {m} against {expected} +- {tolerance}"
        );
        // The spread of cv^2 over seeds: its sample standard deviation errs by about
        // 1/sqrt(2R) = 3.2% relative; 15% is over 4 of those, and leaves room for the normal
        // approximation's error.
        let ratio = sd / (expected * rel_sd);
        assert!(
            (0.85..1.15).contains(&ratio),
            "C {clients}, N {backends}, S {size}: sd of cv^2 {sd} is {ratio} x the approximation"
        );
    }
}

#[test]
fn the_command_prints_the_spec_columns_and_even_deterministic_rows() {
    let csv = lbsim_ok(&["subset", "--format", "csv"]);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("clients,backends,subset,method,seeds,min_ratio,max_ratio,cv"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let methods: Vec<(&str, &str)> = rows.iter().map(|r| (r[2], r[3])).collect();
    assert_eq!(
        methods,
        [("30", "random"), ("30", "deterministic"), ("90", "random"), ("90", "deterministic")]
    );
    for r in &rows {
        assert_eq!(&r[..2], ["300", "300"]);
        assert_eq!(r[4], "20", "20 seeds by default");
    }
    // 30 of 300: ten subsets per round, thirty full rounds.
    assert_eq!(&rows[1][5..], ["1.0", "1.0", "0.0"]);
    // Random 10% subsets: the cv's median over 20 seeds is near sqrt(E[cv^2]) = sqrt(0.03). One
    // seed's cv errs by about sqrt(2/N)/2 = 4% relative, a median of 20 by about 1.1%: 5% is
    // over 4 of those.
    let cv: f64 = rows[0][7].parse().unwrap();
    assert!((cv / 0.03f64.sqrt() - 1.0).abs() < 0.05, "{cv}");
}

#[test]
fn a_row_does_not_depend_on_the_others_nor_on_threads() {
    let all = lbsim_ok(&["subset", "--format", "csv", "--threads", "1"]);
    let one = lbsim_ok(&[
        "subset",
        "--subsets",
        "90",
        "--methods",
        "random",
        "--format",
        "csv",
        "--threads",
        "2",
    ]);
    let row = one.lines().nth(1).unwrap();
    assert!(all.lines().any(|l| l == row), "{row} not in\n{all}");
    let other_seed = lbsim_ok(&["subset", "--format", "csv", "--seed", "2"]);
    assert_ne!(all, other_seed);
}

#[test]
fn bad_subsets_are_one_line_usage_errors() {
    for (args, mention) in [
        (&["subset", "--subsets", "0"][..], "--subsets"),
        (&["subset", "--subsets", "301"][..], "larger than --backends 300"),
        (&["subset", "--backends", "10", "--subsets", "30,5"][..], "--subsets"),
        (&["subset", "--clients", "0"][..], "--clients"),
        (&["subset", "--methods", "round-robin"][..], "random or deterministic"),
        (&["subset", "--methods", "random,random"][..], "twice"),
        (&["subset", "--subsets", ""][..], "--subsets"),
        (&["subset", "--clients", "1e6", "--backends", "1e6"][..], "at most"),
        (&["subset", "--requests", "10"][..], "--requests"),
    ] {
        let out = lbsim(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        // The parser's own errors are printed whole; lbsim's are one line.
        let argv = std::iter::once("lbsim").chain(args.iter().copied());
        if <lbsim::cli::Cli as clap::Parser>::try_parse_from(argv).is_ok() {
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        }
        assert!(stderr.contains(mention), "{args:?}: {stderr}");
    }
}
