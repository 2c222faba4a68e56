//! Every policy respects health: picks land only on the hosts [`Policy::set_hosts`] allows, and
//! every host comes back when all are allowed again; without a change, the draws are those the
//! policies always made.

use super::registry::{POLICIES, PolicyKind, PolicyParams};
use super::*;
use crate::hashing::{Maglev, Ring, key_hash};
use crate::rng::StreamKey;
use crate::with_policy;
use crate::workload::{KeySpec, SharedKeys};
use rand::{RngExt, SeedableRng};
use std::cell::RefCell;
use std::rc::Rc;

fn rng(seed: u64) -> SimRng {
    SimRng::seed_from_u64(seed)
}

fn keys(seed: u64) -> SharedKeys {
    Rc::new(RefCell::new(KeySpec::default().source(rng(seed))))
}

/// Every policy of the registry, with each family at its smallest and at 3 choices.
fn kinds() -> Vec<PolicyKind> {
    let mut out = Vec::new();
    for e in POLICIES {
        match e.family {
            Some((min, _)) => {
                out.push(PolicyKind::parse(&e.name.replace('N', &min.to_string())).unwrap());
                out.push(PolicyKind::parse(&e.name.replace('N', "3")).unwrap());
            }
            None => out.push(PolicyKind::parse(e.name).unwrap()),
        }
    }
    out
}

/// What a fleet of `P` did: picks per client and server.
struct Run {
    picks: Vec<Vec<u32>>,
}

/// Drives `fleet` (3 clients over `n` servers, local information) through `picks` arrivals at
/// unit spacing. After each pick one request in flight (chosen at random) departs with a
/// response about half the time, so the loads the clients see move; every 10 time units the
/// servers report and timers fire, and probes are answered at once.
fn drive<P: Policy>(fleet: &mut P, n: usize, picks: usize, t0: f64, coins: &mut SimRng) -> Run {
    let mut run = Run { picks: vec![vec![0; n]; 3] };
    let mut flight: Vec<(usize, u32, f64)> = Vec::new();
    let mut probes = Vec::new();
    let loads = crate::model::LoadTable::new(0, P::NEEDS_SHORTEST);
    for i in 0..picks {
        let now = t0 + i as f64;
        let at = SimTime::new(now);
        let s = if P::HOLDS {
            let c = fleet.assign();
            match fleet.try_pick(c, &loads, at, coins) {
                Ok(s) => s,
                Err(_) => continue,
            }
        } else {
            fleet.pick(&loads, at, coins)
        };
        let tag = fleet.tag();
        run.picks[tag as usize][s] += 1;
        flight.push((s, tag, now));
        probes.clear();
        fleet.probes(at, coins, &mut probes);
        for &p in &probes {
            let reply = ProbeReply { rif: coins.random_range(0..4), latency: coins.random() };
            fleet.on_probe(p, reply, at, tag);
        }
        if coins.random::<f64>() < 0.5 {
            let (s, tag, sent) = flight.swap_remove(uniform(coins, flight.len()));
            let sojourn = now - sent + 0.5;
            fleet.on_departure(s, sojourn, at, tag);
            let response = Response { sojourn, service: 0.5, queue: coins.random_range(0..3) };
            fleet.on_response(s, &response, at, tag);
        }
        if i % 10 == 0 {
            let reports: Vec<LoadReport> =
                (0..n).map(|s| LoadReport { qps: 1.0 + s as f64, utilization: 0.5 }).collect();
            fleet.on_reports(&reports, at);
            fleet.on_timer(at);
        }
    }
    run
}

/// The hosts client `c` may use in the first phase: all but three, different per client.
fn allowed(c: usize, n: usize) -> Vec<u32> {
    (0..n as u32).filter(|&s| s as usize % 4 != c && s != 7).collect()
}

#[test]
fn every_policy_of_the_registry_picks_only_allowed_hosts_then_all_again() {
    let n = 12;
    let rates: Vec<f64> = (0..n).map(|s| 1.0 + (s % 3) as f64).collect();
    for kind in kinds() {
        let name = kind.name();
        let tuning = kind.tuning("").unwrap();
        let shared = keys(5);
        let params = PolicyParams {
            clients: 3,
            keys: Some(shared),
            stream: StreamKey::new(3, "health-own"),
            shared: StreamKey::new(3, "health-shared"),
            ..PolicyParams::new(&rates, &tuning)
        };
        let mut coins = rng(11);
        with_policy!(kind, |make| {
            let policies = (0..3)
                .map(|client| {
                    let own = PolicyParams {
                        client,
                        stream: params.stream.u64(client as u64),
                        ..params.clone()
                    };
                    make(&own)
                })
                .collect();
            let mut fleet = Fleet::new(n, policies, Vec::new(), true, rng(12));
            for c in 0..3 {
                fleet.set_hosts(c, Some(&allowed(c as usize, n)));
            }
            // 6000 picks, 2000 per client on average: every pick on an allowed host.
            let run = drive(&mut fleet, n, 6000, 0.0, &mut coins);
            for (c, row) in run.picks.iter().enumerate() {
                let ok = allowed(c, n);
                for (s, &k) in row.iter().enumerate() {
                    assert!(k == 0 || ok.contains(&(s as u32)), "{name}: client {c} on {s}");
                }
                assert!(row.iter().sum::<u32>() > 500, "{name}: client {c} picked {row:?}");
            }
            for c in 0..3 {
                fleet.set_hosts(c, None);
            }
            // Then every host is picked again (by some client).
            let run = drive(&mut fleet, n, 6000, 6000.0, &mut coins);
            for s in 0..n {
                let k: u32 = run.picks.iter().map(|row| row[s]).sum();
                assert!(k > 0, "{name}: server {s} never picked again: {:?}", run.picks);
            }
        });
    }
}

#[test]
fn subsets_take_the_allowed_hosts_of_their_own_servers() {
    // Two rr clients over subsets of 6 servers: client 0 has servers 4, 1, 5; client 1 has 2, 3.
    // Allowing farm servers 1, 2, 3 leaves client 0 only server 1 and client 1 both of its own.
    let clients = vec![RoundRobin::new(3), RoundRobin::new(2)];
    let mut f = Fleet::new(6, clients, vec![vec![4, 1, 5], vec![2, 3]], false, rng(1));
    f.set_hosts(0, Some(&[1, 2, 3]));
    f.set_hosts(1, Some(&[1, 2, 3]));
    let loads = crate::model::LoadTable::new(6, false);
    let mut coins = rng(2);
    for _ in 0..200 {
        let s = f.pick(&loads, SimTime::ZERO, &mut coins);
        match f.tag() {
            0 => assert_eq!(s, 1),
            _ => assert!(s == 2 || s == 3),
        }
    }
}

#[test]
fn without_a_change_the_picks_are_the_draws_policies_always_made() {
    // Replays of the draws the policies made before hosts could be excluded: a policy built
    // today, and one whose hosts went to a list and back to every server, pick exactly those.
    let n = 10;
    let vals: Vec<u32> = (0..n).map(|s| (s * 7 % 5) as u32).collect();
    let loads = crate::model::LoadTable::from_values(&vals, false);
    let round_trip = |p: &mut dyn FnMut(Option<&[u32]>)| {
        p(Some(&[1, 2]));
        p(None);
    };
    let mut random = Random::new(n);
    let mut p2c = PnC::<2>::new(n);
    let mut rr = RoundRobin::new(n);
    let mut lr = LeastRequest::new(&[1.0; 10], 2, false, 1.0, &mut rng(0));
    let mut again = (
        Random::new(n),
        PnC::<2>::new(n),
        LeastRequest::new(&[1.0; 10], 2, false, 1.0, &mut rng(0)),
    );
    round_trip(&mut |h| again.0.set_hosts(0, h));
    round_trip(&mut |h| again.1.set_hosts(0, h));
    round_trip(&mut |h| again.2.set_hosts(0, h));
    let (mut a, mut b, mut replay) = (rng(3), rng(3), rng(3));
    for i in 0..5000 {
        let want = uniform(&mut replay, n);
        assert_eq!(random.pick(&loads, SimTime::ZERO, &mut a), want);
        assert_eq!(again.0.pick(&loads, SimTime::ZERO, &mut b), want);
        let (x, y) = two_distinct(&mut replay, n);
        let want = if vals[y] < vals[x] { y } else { x };
        assert_eq!(p2c.pick(&loads, SimTime::ZERO, &mut a), want);
        assert_eq!(again.1.pick(&loads, SimTime::ZERO, &mut b), want);
        let (x, y) = (uniform(&mut replay, n), uniform(&mut replay, n));
        let want = if vals[y] < vals[x] { y } else { x };
        assert_eq!(lr.pick(&loads, SimTime::ZERO, &mut a), want);
        assert_eq!(again.2.pick(&loads, SimTime::ZERO, &mut b), want);
        assert_eq!(rr.pick(&loads, SimTime::ZERO, &mut a), i % n);
    }
}

#[test]
fn round_robin_gives_each_allowed_host_one_pick_in_every_turn() {
    // Envoy's index is kept and taken modulo the allowed hosts: over 9 of 10 hosts, every run of
    // 9 consecutive picks holds each allowed host once, so 9000 picks give each exactly 1000
    // (skipping to the next host would give host 4, after the excluded 3, a double share).
    let mut p = RoundRobin::new(10);
    let loads = crate::model::LoadTable::new(10, false);
    let mut coins = rng(0);
    for _ in 0..4 {
        p.pick(&loads, SimTime::ZERO, &mut coins);
    }
    let allowed: Vec<u32> = (0..10).filter(|&s| s != 3).collect();
    p.set_hosts(0, Some(&allowed));
    let picks: Vec<usize> = (0..9000).map(|_| p.pick(&loads, SimTime::ZERO, &mut coins)).collect();
    let mut counts = [0u32; 10];
    for turn in picks.chunks(9) {
        let mut seen = [false; 10];
        for &s in turn {
            assert!(!seen[s], "host {s} twice in one turn: {turn:?}");
            seen[s] = true;
            counts[s] += 1;
        }
    }
    assert_eq!(counts, [1000, 1000, 1000, 0, 1000, 1000, 1000, 1000, 1000, 1000]);
    p.set_hosts(0, None);
    let back: Vec<usize> = (0..20).map(|_| p.pick(&loads, SimTime::ZERO, &mut coins)).collect();
    assert!((0..10).all(|s| back.contains(&s)), "{back:?}");
}

#[test]
fn random_is_uniform_over_the_allowed_hosts() {
    // 70 000 picks over 7 allowed hosts of 10: each count is Binomial(70 000, 1/7), sd 92.6.
    // Four sd on each of 7 counts fails by chance with probability below 7 * 6.3e-5 < 5e-4
    // (and the seed is fixed), while a draw that still used an excluded host, or the host after
    // one twice as often, would be off by hundreds of sd.
    let allowed = [0u32, 2, 3, 5, 6, 8, 9];
    for weighted in [false, true] {
        let mut p = Random::with_rates(&[2.0; 10], weighted);
        p.set_hosts(0, Some(&allowed));
        let loads = crate::model::LoadTable::new(10, false);
        let mut coins = rng(4);
        let total = 70_000;
        let mut counts = [0u32; 10];
        for _ in 0..total {
            counts[p.pick(&loads, SimTime::ZERO, &mut coins)] += 1;
        }
        let share = 1.0 / 7.0;
        let sd = (total as f64 * share * (1.0 - share)).sqrt();
        for (s, &c) in counts.iter().enumerate() {
            if allowed.contains(&(s as u32)) {
                assert!((f64::from(c) - total as f64 * share).abs() < 4.0 * sd, "{counts:?}");
            } else {
                assert_eq!(c, 0, "{counts:?}");
            }
        }
    }
}

#[test]
fn jsq_and_least_conn_take_the_minimum_over_the_allowed_hosts() {
    let vals = [0u32, 3, 1, 0, 2, 1];
    let loads = crate::model::LoadTable::from_values(&vals, true);
    let mut coins = rng(5);
    let mut jsq = Jsq::new();
    let mut lc = LeastConn::new(&[1; 6]);
    // Servers 0 and 3 (the emptiest) excluded: the minimum is 1, at servers 2 and 5, which tie.
    jsq.set_hosts(0, Some(&[1, 2, 4, 5]));
    lc.set_hosts(0, Some(&[1, 2, 4, 5]));
    let mut counts = [0u32; 6];
    for _ in 0..20_000 {
        counts[jsq.pick(&loads, SimTime::ZERO, &mut coins)] += 1;
    }
    // Binomial(20 000, 1/2) at each of the two: sd 70.7, 5 sd = 354.
    assert_eq!(counts[2] + counts[5], 20_000, "{counts:?}");
    assert!((f64::from(counts[2]) - 10_000.0).abs() < 354.0, "{counts:?}");
    // NGINX's round robin among the tied peers, in order: 2, 5, 2, 5.
    let picks: Vec<usize> = (0..4).map(|_| lc.pick(&loads, SimTime::ZERO, &mut coins)).collect();
    assert_eq!(picks, [2, 5, 2, 5]);
}

#[test]
fn weighted_round_robins_renormalise_over_the_allowed_hosts() {
    // Weights 1, 2, 3, 4 with the weight-3 server excluded: every cycle of 1 + 2 + 4 = 7
    // consecutive picks gives exactly 1, 2 and 4.
    let loads = crate::model::LoadTable::new(4, false);
    let mut coins = rng(6);
    let mut swrr = Swrr::new(&[1, 2, 3, 4]);
    swrr.pick(&loads, SimTime::ZERO, &mut coins);
    swrr.set_hosts(0, Some(&[0, 1, 3]));
    for _ in 0..50 {
        let mut counts = [0u32; 4];
        for _ in 0..7 {
            counts[swrr.pick(&loads, SimTime::ZERO, &mut coins)] += 1;
        }
        assert_eq!(counts, [1, 2, 0, 4]);
    }
    // Envoy's EDF (least-request with unequal weights, bias 0: weighted round robin): rebuilt
    // over the allowed hosts, its picks follow the remaining weights 1, 2, 4.
    let mut lr = LeastRequest::new(&[1.0, 2.0, 3.0, 4.0], 2, false, 0.0, &mut rng(7));
    lr.set_hosts(0, Some(&[0, 1, 3]));
    let mut counts = [0u32; 4];
    for _ in 0..7000 {
        counts[lr.pick(&loads, SimTime::ZERO, &mut coins)] += 1;
    }
    // EDF deadlines k / w: over any 1000 units of its time each host has its w * 1000 picks,
    // give or take the one at either end.
    assert_eq!(counts[2], 0, "{counts:?}");
    for (s, want) in [(0, 1000.0), (1, 2000.0), (3, 4000.0)] {
        assert!((f64::from(counts[s]) - want).abs() <= 1.0, "{counts:?}");
    }
    // gRPC's weighted_round_robin: weights qps / utilisation 1, 2, 3, 4 from reports; with the
    // third excluded, the stride scheduler's shares are 1/7, 2/7, 4/7 (within its rounding of
    // weights to 16 bits: 2 picks in 7000).
    let cfg = OrcaConfig { blackout: 0.0, ..OrcaConfig::default() };
    let mut orca = WrrOrca::new(4, cfg, 0);
    let reports: Vec<LoadReport> =
        (1..=4).map(|w| LoadReport { qps: f64::from(w), utilization: 1.0 }).collect();
    orca.on_reports(&reports, SimTime::new(1.0));
    orca.on_timer(SimTime::new(2.0));
    orca.set_hosts(0, Some(&[0, 1, 3]));
    let mut counts = [0u32; 4];
    for _ in 0..7000 {
        counts[orca.pick(&loads, SimTime::ZERO, &mut coins)] += 1;
    }
    assert_eq!(counts[2], 0, "{counts:?}");
    for (s, want) in [(0, 1000.0), (1, 2000.0), (3, 4000.0)] {
        assert!((f64::from(counts[s]) - want).abs() <= 2.0, "{counts:?}");
    }
}

#[test]
fn ring_hash_moves_exactly_the_keys_of_the_excluded_host() {
    // A ring of the allowed hosts is this ring without the excluded host's points: every key
    // that was elsewhere stays, every key that was on it moves to the next allowed server
    // clockwise.
    let (n, vnodes, seed) = (10, 100, 9);
    let ring = Ring::new(n, vnodes, seed);
    let mut p = RingHash::new(&[1.0; 10], vnodes, None, seed, None);
    let loads = crate::model::LoadTable::new(n, false);
    let allowed: Vec<u32> = (0..10).filter(|&s| s != 4).collect();
    p.set_hosts(0, Some(&allowed));
    let (mut moved, mut on_it) = (0, 0);
    for key in 0..20_000u64 {
        let h = key_hash(key);
        let (before, after) = (ring.lookup(h), p.place(h, &loads));
        assert_ne!(after, 4);
        if before == 4 {
            on_it += 1;
            assert_eq!(after, ring.lookup_bounded(h, |s| s != 4));
        } else {
            assert_eq!(after, before, "key {key} moved from {before}");
        }
        moved += usize::from(before != after);
    }
    assert_eq!(moved, on_it);
    assert!(on_it > 0);
    p.set_hosts(0, None);
    assert!((0..2000u64).all(|k| p.place(key_hash(k), &loads) == ring.lookup(key_hash(k))));
}

#[test]
fn maglev_moves_the_keys_of_the_excluded_host_and_few_others() {
    // Every entry of the excluded host moves (to allowed hosts). Maglev does not promise minimal
    // disruption (Eisenbud et al., NSDI 2016, §3.4: balance comes first, so a removal may
    // reassign some entries of surviving backends too; the paper measures how few in §5.3).
    // With M = 65537 and 10 servers this table moves 137 of the 58 983 other entries (0.23%),
    // so the test bounds them by 1%, four times that: the table is a pure function of
    // (hosts, M, seed), with nothing random to allow for, and the bound fails if the rebuild
    // reshuffled the table (about 90% of entries would move) or kept the excluded host.
    let (n, m, seed) = (10, 65_537, 3);
    let full = Maglev::new(n, m, seed);
    let allowed: Vec<u32> = (0..10).filter(|&s| s != 6).collect();
    let mut p = MaglevHash::new(n, m, seed, None);
    p.set_hosts(0, Some(&allowed));
    let among = p.among.as_ref().unwrap();
    let (mut own, mut others, mut moved_others) = (0u64, 0u64, 0u64);
    for e in 0..m as u64 {
        let (before, after) = (full.lookup(e), among.lookup(e));
        assert_ne!(after, 6);
        if before == 6 {
            own += 1;
        } else {
            others += 1;
            moved_others += u64::from(after != before);
        }
    }
    assert!(own >= (m / n) as u64 && own <= m.div_ceil(n) as u64);
    let frac = moved_others as f64 / others as f64;
    assert!(frac < 0.01, "{moved_others} of {others} other entries moved");
    p.set_hosts(0, None);
    assert!(p.among.is_none());
}

#[test]
fn p2c_with_one_allowed_host_picks_it_and_pnc_with_fewer_hosts_than_choices_scans_them() {
    let loads = crate::model::LoadTable::from_values(&[5, 1, 4, 2, 3], false);
    let mut coins = rng(8);
    let mut p2c = PnC::<2>::new(5);
    p2c.set_hosts(0, Some(&[2]));
    assert!((0..100).all(|_| p2c.pick(&loads, SimTime::ZERO, &mut coins) == 2));
    let mut p4c = PnC::<0>::with_choices(5, 4);
    p4c.set_hosts(0, Some(&[0, 2, 4]));
    assert!((0..100).all(|_| p4c.pick(&loads, SimTime::ZERO, &mut coins) == 4));
}
