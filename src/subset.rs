//! Subsetting: the backends each client connects to, when every client holds connections to only
//! `size` of the `backends` (*Site Reliability Engineering*, Beyer, Jones, Petoff & Murphy (eds.),
//! O'Reilly 2016, chapter 20 "Load Balancing in the Datacenter", section "Limiting the
//! Connections Pool with Subsetting"; <https://sre.google/sre-book/load-balancing-datacenter/>).
//!
//! Two algorithms of that section:
//!
//! - [`Subsetting::Random`] ("A Subset Selection Algorithm: Random Subsetting"): the book's
//!   naive implementation "might have each client randomly shuffle the list of backends once and
//!   fill its subset by selecting resolvable/healthy backends from the list". Here: client `c`
//!   shuffles `0..backends` with its own stream, keyed by (seed, `c`), and keeps the first
//!   `size`. The book finds that this "spreads load very unevenly": for 300 clients, 300
//!   backends and "a subset size of 30% (each client connects to 90 backends)", "the least
//!   loaded backend has just 63% of the average load (57 connections, where the average is 90
//!   connections) and the most loaded has 121% (109 connections)" (Figure 20-3).
//! - [`Subsetting::Deterministic`] ("A Subset Selection Algorithm: Deterministic Subsetting",
//!   Example 20-4): `subset_count = backends / size` (integer division); clients form rounds of
//!   `subset_count` consecutive clients, `round = client / subset_count`; every client of a round
//!   shuffles the backends with the same generator, seeded by the round (here: by (seed,
//!   `round`)); client `client` takes `subset_id = client % subset_count` and the slice
//!   `[subset_id * size, subset_id * size + size)` of the shuffled list. Within a round each
//!   backend goes to at most one client, so the book's "300 clients each connecting to 10 of 300
//!   backends" "yields very good results: each backend receives exactly the same number of
//!   connections" (Figure 20-5).
//!
//! **When `size` does not divide `backends`**, Example 20-4's slices leave the last
//! `backends % size` entries of every round's shuffled list unused: those backends get no client
//! of that round. lbsim follows the code. (The book's prose says instead that "we allow a few
//! subsets to be slightly larger than others, but in most cases the number of clients assigned to
//! a backend will differ by at most 1"; the code it prints does not do that, and with the
//! remainder left out at random in every round the counts drift apart as the rounds add up: at
//! 90 of 300, 30 backends sit out each round.) A last round that is not full (`clients` not a
//! multiple of `subset_count`) assigns each backend to at most one of its clients, so with `size`
//! dividing `backends` the counts differ by at most 1.
//!
//! Shuffles are rand's `SliceRandom::shuffle` (Fisher-Yates) on PCG streams from
//! [`crate::rng::StreamKey`]: a subset depends on (seed, method, client or round)
//! alone, never on the order in which subsets are computed or on any thread.

use rand::seq::SliceRandom;
use serde::Serialize;

use crate::rng::StreamKey;

/// How clients choose their subsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Subsetting {
    /// Each client shuffles the backends on its own and keeps the first `size`.
    Random,
    /// The SRE book's rounds of clients sharing one shuffle.
    Deterministic,
}

impl Subsetting {
    /// Every method, in the order help texts list them.
    pub const ALL: [Subsetting; 2] = [Subsetting::Random, Subsetting::Deterministic];

    /// `random` or `deterministic`.
    pub fn parse(s: &str) -> Option<Self> {
        Subsetting::ALL.into_iter().find(|m| m.name() == s)
    }

    /// The name used on the command line, in scenario files and in output.
    pub fn name(self) -> &'static str {
        match self {
            Subsetting::Random => "random",
            Subsetting::Deterministic => "deterministic",
        }
    }
}

impl crate::named::Name for Subsetting {
    fn parse(s: &str) -> Option<Self> {
        Subsetting::parse(s)
    }

    fn name(self) -> &'static str {
        Subsetting::name(self)
    }
}

/// The key of every subsetting stream under base seed `seed`.
pub fn key(seed: u64) -> StreamKey {
    StreamKey::new(seed, "subset")
}

/// The backends (indices in `0..backends`, distinct, in the order the algorithm yields them) that
/// client `client` of `clients` connects to, with subsets of `size`, under base seed `seed`.
///
/// Panics unless `1 <= size <= backends` and `client < clients` (the command line refuses the
/// rest before anything runs). See the [module](self) for both algorithms.
pub fn subset(
    method: Subsetting,
    client: usize,
    clients: usize,
    backends: usize,
    size: usize,
    seed: u64,
) -> Vec<u32> {
    subset_keyed(method, client, clients, backends, size, key(seed))
}

/// [`subset`] with its streams derived from `key` instead of a base seed (e.g. a replication's
/// key, `key(seed).u64(replication)`).
pub fn subset_keyed(
    method: Subsetting,
    client: usize,
    clients: usize,
    backends: usize,
    size: usize,
    key: StreamKey,
) -> Vec<u32> {
    check(client, clients, backends, size);
    match method {
        Subsetting::Random => {
            let mut list = random_list(key, client, backends);
            list.truncate(size);
            list
        }
        Subsetting::Deterministic => {
            let subset_count = backends / size;
            let round = client / subset_count;
            let shuffled = round_list(key, round, backends);
            let start = (client % subset_count) * size;
            shuffled[start..start + size].to_vec()
        }
    }
}

fn check(client: usize, clients: usize, backends: usize, size: usize) {
    assert!(
        (1..=backends).contains(&size),
        "a subset holds 1 to {backends} distinct backends, not {size}"
    );
    assert!(client < clients, "client {client} of {clients}");
    assert!(u32::try_from(backends).is_ok(), "{backends} backends do not fit u32 indices");
}

/// `0..backends`, shuffled by client `client`'s own stream (random subsetting).
fn random_list(key: StreamKey, client: usize, backends: usize) -> Vec<u32> {
    let mut list: Vec<u32> = (0..backends as u32).collect();
    list.shuffle(&mut key.str("random").u64(client as u64).rng());
    list
}

/// `0..backends`, shuffled by the stream of round `round` (deterministic subsetting).
fn round_list(key: StreamKey, round: usize, backends: usize) -> Vec<u32> {
    let mut list: Vec<u32> = (0..backends as u32).collect();
    list.shuffle(&mut key.str("deterministic").u64(round as u64).rng());
    list
}

/// Connections per backend: how many of the `clients` include each backend in their subset. The
/// same as counting [`subset_keyed`] over every client, with one shuffle per round instead of
/// one per client for the deterministic method.
pub fn connections(
    method: Subsetting,
    clients: usize,
    backends: usize,
    size: usize,
    key: StreamKey,
) -> Vec<u32> {
    let mut counts = vec![0u32; backends];
    if clients == 0 {
        return counts;
    }
    check(0, clients, backends, size);
    match method {
        Subsetting::Random => {
            for client in 0..clients {
                for &b in &random_list(key, client, backends)[..size] {
                    counts[b as usize] += 1;
                }
            }
        }
        Subsetting::Deterministic => {
            let subset_count = backends / size;
            for round in 0..clients.div_ceil(subset_count) {
                let shuffled = round_list(key, round, backends);
                // The round's clients; the last round may hold fewer than subset_count.
                let in_round = (clients - round * subset_count).min(subset_count);
                for &b in &shuffled[..in_round * size] {
                    counts[b as usize] += 1;
                }
            }
        }
    }
    counts
}

/// How evenly connections are spread over the backends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The least connected backend's connections over the mean.
    pub min_ratio: f64,
    /// The most connected backend's connections over the mean.
    pub max_ratio: f64,
    /// Standard deviation of the connections over their mean (over all backends: the population
    /// standard deviation, divided by the number of backends).
    pub cv: f64,
}

impl Spread {
    /// The spread of connection counts, one per backend (the mean is their total over the number
    /// of backends: `clients * size / backends`). `None` when there are no connections.
    pub fn of(counts: &[u32]) -> Option<Spread> {
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        if total == 0 {
            return None;
        }
        let n = counts.len() as f64;
        let mean = total as f64 / n;
        let var = counts.iter().map(|&c| (f64::from(c) - mean).powi(2)).sum::<f64>() / n;
        let (min, max) = (counts.iter().min()?, counts.iter().max()?);
        Some(Spread {
            min_ratio: f64::from(*min) / mean,
            max_ratio: f64::from(*max) / mean,
            cv: var.sqrt() / mean,
        })
    }
}

/// `E[cv^2]` of random subsetting, exactly: `(backends - size) / (clients * size)`.
///
/// Each backend's count is Binomial(`clients`, `p = size / backends`): every client includes it
/// with probability `p`, independently of the other clients. The counts are negatively
/// correlated (a client that takes one backend has one place less for the others), so that they
/// always sum to `clients * size`; their mean over the backends is therefore the constant
/// `mu = clients * p`, and the squared deviations around it have expectation `Var = clients * p *
/// (1 - p)` each. Hence `E[cv^2] = Var / mu^2 = (1 - p) / (clients * p)`, with no approximation.
pub fn random_cv2(clients: usize, backends: usize, size: usize) -> f64 {
    (backends - size) as f64 / (clients as f64 * size as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distinct(s: &[u32], backends: usize) -> bool {
        let mut seen = vec![false; backends];
        s.iter().all(|&b| !std::mem::replace(&mut seen[b as usize], true))
    }

    #[test]
    fn names_round_trip() {
        for m in Subsetting::ALL {
            assert_eq!(Subsetting::parse(m.name()), Some(m));
        }
        assert_eq!(Subsetting::parse("Random"), None);
        assert_eq!(Subsetting::parse(""), None);
    }

    #[test]
    fn every_subset_holds_size_distinct_backends() {
        for method in Subsetting::ALL {
            for (backends, size) in [(12, 3), (10, 3), (300, 90), (7, 7), (5, 1), (1, 1)] {
                for client in 0..25 {
                    let s = subset(method, client, 25, backends, size, 9);
                    assert_eq!(s.len(), size, "{method:?} {backends} {size}");
                    assert!(s.iter().all(|&b| (b as usize) < backends));
                    assert!(distinct(&s, backends), "{method:?} {s:?}");
                }
            }
        }
    }

    #[test]
    fn a_deterministic_round_is_one_shuffle_cut_into_consecutive_slices() {
        // The book's example: 12 backends, subsets of 3, so subset_count = 4 and clients 0..4
        // form round 0, 4..8 round 1. Round r's clients, in order, concatenate to the round's
        // shuffled list: each takes the slice [subset_id * 3, subset_id * 3 + 3).
        let key = key(5);
        for round in 0..3 {
            let shuffled = round_list(key, round, 12);
            let joined: Vec<u32> = (0..4)
                .flat_map(|id| subset(Subsetting::Deterministic, round * 4 + id, 12, 12, 3, 5))
                .collect();
            assert_eq!(joined, shuffled, "round {round}");
        }
        // Different rounds shuffle differently.
        assert_ne!(round_list(key, 0, 12), round_list(key, 1, 12));
    }

    #[test]
    fn the_remainder_of_each_round_is_left_unused() {
        // 10 backends in subsets of 3: subset_count = 3, and the 10th entry of each round's
        // shuffled list goes to no client of that round.
        let key = key(2);
        for round in 0..5 {
            let shuffled = round_list(key, round, 10);
            let used: Vec<u32> = (0..3)
                .flat_map(|id| {
                    subset_keyed(Subsetting::Deterministic, round * 3 + id, 15, 10, 3, key)
                })
                .collect();
            assert_eq!(used, shuffled[..9]);
            assert!(!used.contains(&shuffled[9]));
        }
    }

    #[test]
    fn random_subsets_are_the_head_of_the_clients_own_shuffle() {
        let key = key(3);
        for client in 0..10 {
            let s = subset_keyed(Subsetting::Random, client, 10, 50, 7, key);
            assert_eq!(s, random_list(key, client, 50)[..7]);
        }
        // Each client has its own stream.
        assert_ne!(random_list(key, 0, 50), random_list(key, 1, 50));
        // A smaller subset of the same client is a prefix of a larger one.
        let small = subset(Subsetting::Random, 4, 10, 50, 5, 1);
        let large = subset(Subsetting::Random, 4, 10, 50, 20, 1);
        assert_eq!(small, large[..5]);
    }

    #[test]
    fn the_whole_farm_is_one_subset_per_client() {
        for method in Subsetting::ALL {
            for client in 0..5 {
                let mut s = subset(method, client, 5, 8, 8, 4);
                s.sort_unstable();
                assert_eq!(s, (0..8).collect::<Vec<u32>>());
            }
        }
    }

    #[test]
    fn connections_count_what_subset_yields() {
        for method in Subsetting::ALL {
            for (clients, backends, size) in [(300, 300, 30), (37, 12, 3), (23, 10, 3), (5, 9, 9)] {
                let key = key(11).u64(2);
                let mut counted = vec![0u32; backends];
                for client in 0..clients {
                    for b in subset_keyed(method, client, clients, backends, size, key) {
                        counted[b as usize] += 1;
                    }
                }
                assert_eq!(
                    connections(method, clients, backends, size, key),
                    counted,
                    "{method:?} {clients} {backends} {size}"
                );
                assert_eq!(counted.iter().sum::<u32>() as usize, clients * size);
            }
        }
    }

    #[test]
    fn spread_reads_min_max_and_cv_over_the_mean() {
        let s = Spread::of(&[2, 4, 6, 8]).unwrap();
        assert_eq!(s.min_ratio, 0.4);
        assert_eq!(s.max_ratio, 1.6);
        // Population variance of 2, 4, 6, 8 is 5; the mean is 5.
        assert!((s.cv - 5f64.sqrt() / 5.0).abs() < 1e-15);
        assert_eq!(
            Spread::of(&[3, 3, 3]),
            Some(Spread { min_ratio: 1.0, max_ratio: 1.0, cv: 0.0 })
        );
        assert_eq!(Spread::of(&[0, 0]), None);
    }

    #[test]
    fn random_cv2_is_the_binomial_variance_over_the_squared_mean() {
        // 300 clients, 300 backends, 90 each: p = 0.3, mu = 90, Var = 300 * 0.3 * 0.7 = 63.
        assert!((random_cv2(300, 300, 90) - 63.0 / 8100.0).abs() < 1e-15);
        assert_eq!(random_cv2(10, 8, 8), 0.0);
    }
}
