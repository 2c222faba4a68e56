//! Consistent hashing: where a request key goes, and how much moves when the farm grows.
//!
//! Three placements, each a pure function of (seed, farm size) so that the same structure is
//! rebuilt identically anywhere:
//!
//! - [`Ring`]: Karger et al.'s ring (STOC 1997) as Envoy builds it
//!   (`source/extensions/load_balancing_policies/ring_hash/ring_hash_lb.cc`): every server puts
//!   `vnodes` points on a 64-bit circle and a key goes to the first point at or after its hash,
//!   wrapping around; [`Ring::lookup_bounded`] adds the bounded-load walk of HAProxy
//!   (`src/lb_chash.c`, `chash_get_server_hash`) with its cap [`bounded_load_eligible`];
//! - [`Maglev`]: the lookup table of Eisenbud et al., *Maglev*, NSDI 2016, §3.4, as Envoy builds it
//!   (`source/extensions/load_balancing_policies/maglev/maglev_lb.cc`);
//! - modulo, `key_hash % n`, the baseline that moves almost every key when `n` changes.
//!
//! Keys are hashed by [`key_hash`], xxHash64 as Envoy hashes request keys.

mod maglev;
mod ring;

pub use maglev::{DEFAULT_TABLE_SIZE, Maglev, is_prime};
pub use ring::Ring;

use xxhash_rust::xxh64::xxh64;

/// 64-bit hash of a request key: xxHash64 (seed 0) of the key's 8 little-endian bytes.
///
/// xxHash64 is what Envoy's ring hash and Maglev apply to a request's hash key
/// (`HashUtil::xxHash64`, seed 0), and it mixes well: keys `0, 1, 2, ...` land independently and
/// uniformly on the 64-bit circle for every purpose here (the tests check the spread of a million
/// of them). The function is fixed, not seeded: a key's hash never depends on `--seed`; only the
/// placement of the servers does.
#[inline]
pub fn key_hash(key: u64) -> u64 {
    xxh64(&key.to_le_bytes(), 0)
}

/// xxHash64 (with `seed`) of the little-endian bytes of `words`: how servers' points and
/// permutations are derived from (placement seed, server, ...), as Envoy hashes a host's name.
#[inline]
pub(crate) fn hash_words(words: &[u64], seed: u64) -> u64 {
    let mut bytes = [0u8; 32];
    debug_assert!(words.len() <= 4);
    for (i, w) in words.iter().enumerate() {
        bytes[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    xxh64(&bytes[..8 * words.len()], seed)
}

/// HAProxy's total slots for bounded loads: `ceil((served + 1) * factor)`, where `served` is the
/// number of requests in flight over the farm *before* the one being placed (the `+ 1` counts it)
/// and `factor_pct` is `hash-balance-factor`, a whole percentage (125 for 1.25):
/// `tot_slots = ((s->proxy->served + 1) * hash_balance_factor + 99) / 100` in
/// `chash_server_is_eligible` (`src/lb_chash.c`). Envoy computes the same total
/// (`BoundedLoadHashingLoadBalancer::hostOverloadFactor`).
#[inline]
pub fn total_slots(factor_pct: u32, served: u64) -> u64 {
    ((served + 1) * u64::from(factor_pct)).div_ceil(100)
}

/// HAProxy's slots for one server, exactly as `chash_server_is_eligible` (`src/lb_chash.c`)
/// computes them with integer weights: `tot_slots / tot_weight` slots per unit of weight, then
/// the remainder `r` shared by cumulative weight (the sum of the weights of the servers listed
/// before this one): `floor((cum + w) r / W) - floor(cum r / W)`, and never fewer than 1. The
/// slots of all servers add up to `tot_slots` (or a little more where the minimum of 1 applies).
pub fn haproxy_slots(
    factor_pct: u32,
    served: u64,
    cumulative_weight: u64,
    weight: u64,
    total_weight: u64,
) -> u64 {
    let tot = total_slots(factor_pct, served);
    let (per_weight, remainder) = (tot / total_weight, tot % total_weight);
    let slots = weight * per_weight + ((cumulative_weight + weight) * remainder) / total_weight
        - (cumulative_weight * remainder) / total_weight;
    slots.max(1)
}

/// HAProxy's `hash-balance-factor` cap (`src/lb_chash.c`, `chash_server_is_eligible`, after
/// Mirrokni, Thorup and Zadimoghaddam, *Consistent Hashing with Bounded Loads*, SODA 2018): may a
/// server with `load` requests in flight take one more?
///
/// `factor` is HAProxy's percentage over 100 (1.25 for `hash-balance-factor 125`; HAProxy takes
/// a whole percentage above 100, so the factor is rounded to one). `total_load` is the requests in
/// flight over the farm *not* counting the one being placed, which the rule adds itself:
/// `tot_slots = ceil((total_load + 1) * factor)` ([`total_slots`]). The server gets its weight's
/// share of them, at least 1, and is eligible while `load < slots` (strictly: after taking the
/// request it holds at most `slots`).
///
/// The share: HAProxy gives every server `floor(tot_slots * w / W)` and hands the remainder out
/// by the server's position in its list ([`haproxy_slots`]), which this signature does not know.
/// Here the share is `ceil(tot_slots * weight / total_weight)`, Envoy's rule
/// (`BoundedLoadHashingLoadBalancer::hostOverloadFactor`: `max(ceil(total_slots * weight), 1)`
/// with normalised weights): HAProxy's count for the servers that get a remainder slot, one more
/// for the others. With factor > 1 some server is always eligible: the slots add up to at least
/// `total_load + 1`, more than the loads.
pub fn bounded_load_eligible(
    factor: f64,
    load: u32,
    total_load: u64,
    weight: f64,
    total_weight: f64,
) -> bool {
    let tot = total_slots(factor_percent(factor), total_load) as f64;
    let slots = (tot * weight / total_weight).ceil().max(1.0);
    f64::from(load) < slots
}

/// A balance factor as HAProxy's whole percentage (1.25 -> 125).
#[inline]
pub fn factor_percent(factor: f64) -> u32 {
    (factor * 100.0).round() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hash_is_xxhash64_of_the_little_endian_key() {
        // Reference values of XXH64 (seed 0): the empty input, then 8 zero bytes, computed by
        // the xxhash-rust crate and checked against the C library's test vector for "" below.
        assert_eq!(xxh64(b"", 0), 0xef46_db37_51d8_e999);
        assert_eq!(key_hash(0), xxh64(&[0u8; 8], 0));
        assert_eq!(key_hash(0x0102_0304_0506_0708), xxh64(&[8, 7, 6, 5, 4, 3, 2, 1], 0));
        assert_ne!(key_hash(1), key_hash(2));
    }

    #[test]
    fn key_hashes_of_consecutive_keys_spread_uniformly() {
        // 10^6 keys into 64 equal arcs of the circle: each arc's count is Binomial(10^6, 1/64),
        // mean 15625, sd 124; every one within 5 sd (a chance of about 4e-5 to fail for a truly
        // uniform hash), and the chi-square over the 63 degrees of freedom below its 99.99%
        // point (about 114).
        let mut counts = [0u64; 64];
        for k in 0..1_000_000u64 {
            counts[(key_hash(k) >> 58) as usize] += 1;
        }
        let mean: f64 = 1_000_000.0 / 64.0;
        let sd = (mean * (1.0 - 1.0 / 64.0)).sqrt();
        let mut chi2 = 0.0;
        for &c in &counts {
            assert!((c as f64 - mean).abs() < 5.0 * sd, "{counts:?}");
            chi2 += (c as f64 - mean).powi(2) / mean;
        }
        assert!(chi2 < 114.0, "chi-square {chi2}");
    }

    #[test]
    fn haproxy_counts_the_request_being_placed_and_rounds_up() {
        // 0 in flight, factor 125: ceil(1 * 1.25) = 2 slots in all.
        assert_eq!(total_slots(125, 0), 2);
        // 99 in flight: (100 * 125 + 99) / 100 = 125.
        assert_eq!(total_slots(125, 99), 125);
        // 100 in flight: ceil(101 * 1.25) = ceil(126.25) = 127.
        assert_eq!(total_slots(125, 100), 127);
    }

    #[test]
    fn haproxy_shares_the_remainder_by_cumulative_weight_and_never_gives_zero() {
        // 4 servers of weight 1, 127 slots: 31 each and a remainder of 3 for servers 0..3 by
        // floor((i+1) 3 / 4) - floor(i 3 / 4): 0, 1, 1, 1.
        let slots: Vec<u64> = (0..4).map(|i| haproxy_slots(125, 100, i, 1, 4)).collect();
        assert_eq!(slots, [31, 32, 32, 32]);
        assert_eq!(slots.iter().sum::<u64>(), total_slots(125, 100));
        // Few requests in flight over many servers: every server keeps one slot.
        assert!((0..100).all(|i| haproxy_slots(150, 0, i, 1, 100) == 1));
        // Weights 1 and 3: the heavier server gets three times the share.
        assert_eq!(haproxy_slots(200, 99, 0, 1, 4), 50);
        assert_eq!(haproxy_slots(200, 99, 1, 3, 4), 150);
    }

    #[test]
    fn eligible_while_the_load_is_below_the_ceiled_share() {
        // 100 servers, 1000 in flight, factor 1.25: ceil(1001 * 1.25) = 1252 slots, a share of
        // 12.52, so 13 slots: a server with 12 may take one more, one with 13 may not.
        assert!(bounded_load_eligible(1.25, 12, 1000, 1.0, 100.0));
        assert!(!bounded_load_eligible(1.25, 13, 1000, 1.0, 100.0));
        // HAProxy gives that server 12 or 13 by its position; the ceiled share is the larger.
        let haproxy: Vec<u64> = (0..100).map(|i| haproxy_slots(125, 1000, i, 1, 100)).collect();
        assert!(haproxy.iter().all(|&s| s == 12 || s == 13));
        assert_eq!(haproxy.iter().filter(|&&s| s == 13).count(), 52);
        // Nothing in flight: one slot each.
        assert!(bounded_load_eligible(1.25, 0, 0, 1.0, 100.0));
        assert!(!bounded_load_eligible(1.25, 1, 0, 1.0, 100.0));
        // Weights: a server of weight 3 out of 4 gets 3/4 of ceil(5 * 2) = 10, i.e. 8 slots.
        assert!(bounded_load_eligible(2.0, 7, 4, 3.0, 4.0));
        assert!(!bounded_load_eligible(2.0, 8, 4, 3.0, 4.0));
    }

    #[test]
    fn some_server_is_always_eligible_above_a_factor_of_one() {
        // Any loads adding up to `total`: the slots add up to more than `total`.
        for total in [0u64, 1, 7, 99, 100, 101, 12345] {
            for pct in [101u32, 125, 150, 200] {
                let n = 10u64;
                let slots: u64 = (0..n).map(|i| haproxy_slots(pct, total, i, 1, n)).sum();
                assert!(slots > total, "pct {pct} total {total}");
            }
        }
    }
}
