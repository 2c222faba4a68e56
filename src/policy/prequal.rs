//! `prequal`: Probing to Reduce Queuing and Latency (Wydrowski, Kleinberg, Rumble and Archer,
//! NSDI 2024).
//!
//! The client keeps a **pool** of recent probe replies, each a server's requests-in-flight (RIF)
//! and its latency estimate when the probe reached it, and picks from the pool alone:
//!
//! - **Probing**: every query sends `probe_rate` probes (a fractional rate sends the integer part
//!   and one more with the fractional part's probability) to servers drawn uniformly at random.
//!   A probe comes back `probe_delay` after it was sent, having read its server half way
//!   (the engine's feedback support); the server's latency estimate is the median of its
//!   recent sojourns.
//! - **The pool** holds at most `pool` probes (default 16, the paper's), one per server (a newer
//!   reply replaces the older); a reply into a full pool evicts the oldest. Probes older than
//!   `max_age` are dropped.
//! - **Removal rule**: every query also removes one probe once the pool holds more than half its
//!   capacity: the worst by the selection order below (a hot probe with the most RIF, else the
//!   cold probe with the highest latency), so the pool does not fill with servers nobody picks.
//! - **Hot-cold lexicographic selection**: a probe is *hot* if its RIF is above the `q_rif`
//!   quantile (default 0.84) of the RIFs in the pool. If every probe is hot, pick the one with
//!   the fewest RIF; otherwise pick the cold probe with the lowest latency (ties: fewer RIF, then
//!   the older probe). So `q_rif = 1` (nothing hot) picks the lowest latency of the probed, and
//!   `q_rif = 0` picks the lowest RIF (the probes at the minimum are the only cold ones).
//! - **Reuse**: the probe used for a query stays in the pool with its RIF raised by one, the
//!   request just sent.
//! - With an empty pool, a uniformly random server.
//!
//! With some hosts excluded ([`Policy::set_hosts`]; the paper does not say, so this is the
//! simplest rule that picks only allowed hosts): probes go to allowed servers only, the probes of
//! excluded servers leave the pool, a reply from an excluded server is not pooled, and the
//! random pick of an empty pool is among the allowed servers.

use super::tuning::{count_usize, fraction, non_negative, params, percent, positive};
use super::{Hosts, Policy, ProbeReply};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::stats::order;
use crate::time::SimTime;
use rand::RngExt;

params! {
    /// The parameters of `prequal`.
    pub struct PrequalConfig {
        /// Probes sent per query.
        #[serde(deserialize_with = "percent")]
        pub probe_rate: f64,
        /// The most probes in the pool.
        #[serde(deserialize_with = "count_usize")]
        pub pool: usize,
        /// Probes older than this are dropped.
        #[serde(deserialize_with = "positive")]
        pub max_age: f64,
        /// The RIF quantile above which a probe is hot.
        #[serde(deserialize_with = "fraction")]
        pub q_rif: f64,
        /// Round-trip time of a probe.
        #[serde(deserialize_with = "non_negative")]
        pub probe_delay: f64,
    }
}

impl Default for PrequalConfig {
    fn default() -> Self {
        PrequalConfig { probe_rate: 3.0, pool: 16, max_age: 50.0, q_rif: 0.84, probe_delay: 0.0 }
    }
}

/// One probe reply in the pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    /// The server probed.
    pub server: usize,
    /// Its requests in flight (plus the requests this client sent it on this probe since).
    pub rif: u32,
    /// Its latency estimate.
    pub latency: f64,
    /// When the reply arrived.
    pub at: f64,
}

/// Prequal.
#[derive(Debug, Clone)]
pub struct Prequal {
    n: usize,
    cfg: PrequalConfig,
    pool: Vec<Probe>,
    hosts: Hosts,
    /// The rank `k` of the threshold for each pool length: `ceil(q_rif * len)`, at least 1.
    ranks: Vec<usize>,
    /// The pool's RIFs, for [`Self::threshold`] (scratch, kept to reuse its allocation).
    rifs: Vec<u32>,
}

/// The best probe's index in the pool and how many probes were cold when it was chosen.
struct Chosen {
    index: usize,
    cold: usize,
}

impl Prequal {
    /// Over `n` servers.
    pub fn new(n: usize, cfg: PrequalConfig) -> Self {
        assert!(n >= 1 && cfg.pool >= 1);
        let pool = Vec::with_capacity(cfg.pool + 1);
        let ranks = (0..=cfg.pool)
            .map(|len| ((cfg.q_rif * len as f64).ceil() as usize).clamp(1, len.max(1)))
            .collect();
        let rifs = Vec::with_capacity(cfg.pool + 1);
        Prequal { n, cfg, pool, hosts: Hosts::all(), ranks, rifs }
    }

    /// The probes in the pool.
    pub fn pool(&self) -> &[Probe] {
        &self.pool
    }

    /// The RIF above which a probe is hot: the `q_rif` quantile of the pool's RIFs (the
    /// smallest RIF with at least a fraction `q_rif` of the pool at or below it). A rank near
    /// the top (the default's: the 3rd largest of 16) is found in one pass
    /// ([`order::nth_largest`]), another by counting ranks ([`order::kth_smallest`]); neither
    /// sorts, and both give the same value.
    fn threshold(&mut self) -> u32 {
        let len = self.pool.len();
        let k = self.ranks[len];
        if len - k < order::TOP {
            return order::nth_largest(self.pool.iter().map(|p| p.rif), len - k + 1);
        }
        self.rifs.clear();
        self.rifs.extend(self.pool.iter().map(|p| p.rif));
        order::kth_smallest(&self.rifs, k - 1)
    }

    /// [`Self::threshold`] once the probe of RIF `used` has been picked (its RIF raised by one,
    /// nothing else changed), from `hot`, the threshold before, and `cold`, how many probes were
    /// at or below it before, without selecting again. The `k`-th smallest RIF moves only if
    /// the raised probe was at the threshold and fewer than `k` RIFs are now at or below it
    /// (`cold - 1`: the raised one has left them); then the raised one, `hot + 1`, is the
    /// `k`-th. (Below the threshold, a RIF raised to at most `hot` changes no count at or above
    /// `hot`, and no count below `hot` grows; above it, nothing at or below `hot` changes.)
    fn threshold_after_use(&self, hot: u32, used: u32, cold: usize) -> u32 {
        if used == hot && cold - 1 < self.ranks[self.pool.len()] { hot + 1 } else { hot }
    }

    /// The probe the hot-cold rule selects (pool not empty), probes with a RIF above `hot`
    /// being hot: the lowest latency among the cold, found as a minimum first (a pass without
    /// branches), then the first probe at it with the fewest RIF and the oldest reply, the
    /// order of [`Self::best_by_keys`]. That order is taken instead when a latency is NaN (no
    /// minimum) or no probe is cold (never with a threshold from the pool: it is a RIF there).
    fn best(&self, hot: u32) -> Chosen {
        let (mut cold, mut least, mut nan) = (0, f64::INFINITY, false);
        for p in &self.pool {
            let is_cold = p.rif <= hot;
            cold += usize::from(is_cold);
            nan |= p.latency.is_nan();
            let latency = if is_cold { p.latency } else { f64::INFINITY };
            least = if latency < least { latency } else { least };
        }
        if nan || cold == 0 {
            return Chosen { index: self.best_by_keys(hot), cold };
        }
        let mut best = usize::MAX;
        for (i, p) in self.pool.iter().enumerate() {
            if (p.rif <= hot) & (p.latency == least)
                && (best == usize::MAX || (p.rif, p.at) < (self.pool[best].rif, self.pool[best].at))
            {
                best = i;
            }
        }
        Chosen { index: best, cold }
    }

    /// The index in the pool of the probe the hot-cold rule selects (pool not empty), probes
    /// with a RIF above `hot` being hot, by comparing the whole keys in turn (the rule as the
    /// paper states it; [`Self::best`] finds the same probe faster).
    fn best_by_keys(&self, hot: u32) -> usize {
        let all_hot = self.pool.iter().all(|p| p.rif > hot);
        let key = |p: &Probe| {
            if all_hot {
                (f64::from(p.rif), p.latency, p.at)
            } else {
                (p.latency, f64::from(p.rif), p.at)
            }
        };
        let mut best = None::<usize>;
        for (i, p) in self.pool.iter().enumerate() {
            if !all_hot && p.rif > hot {
                continue;
            }
            if best.is_none_or(|b| key(p) < key(&self.pool[b])) {
                best = Some(i);
            }
        }
        best.expect("a non-empty pool has a candidate")
    }

    /// The index of the worst probe: the first hot one (RIF above `hot`) with the most RIF, else
    /// the first cold one with the highest latency, both maxima found without branches; the
    /// order of [`Self::worst_by_keys`] when a latency is NaN.
    fn worst(&self, hot: u32) -> usize {
        let (mut most_rif, mut most_latency, mut nan) = (0, f64::NEG_INFINITY, false);
        for p in &self.pool {
            most_rif = most_rif.max(if p.rif > hot { p.rif } else { 0 });
            nan |= p.latency.is_nan();
            most_latency = if p.latency > most_latency { p.latency } else { most_latency };
        }
        let at = if nan {
            None
        } else if most_rif > hot {
            self.pool.iter().position(|p| p.rif == most_rif)
        } else {
            self.pool.iter().position(|p| p.latency == most_latency)
        };
        at.unwrap_or_else(|| self.worst_by_keys(hot))
    }

    /// The index of the worst probe by comparing whole keys: a hot one (RIF above `hot`) with
    /// the most RIF, else the slowest cold one.
    fn worst_by_keys(&self, hot: u32) -> usize {
        let key = |p: &Probe| (p.rif > hot, if p.rif > hot { f64::from(p.rif) } else { p.latency });
        let mut worst = 0;
        for (i, p) in self.pool.iter().enumerate() {
            if key(p) > key(&self.pool[worst]) {
                worst = i;
            }
        }
        worst
    }
}

impl Policy for Prequal {
    const TAGGED: bool = true;
    const FEEDBACK: bool = true;

    fn pick(&mut self, _loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize {
        let now = now.get();
        let max_age = self.cfg.max_age;
        if self.pool.iter().fold(false, |old, p| old | (now - p.at > max_age)) {
            self.pool.retain(|p| now - p.at <= max_age);
        }
        if self.pool.is_empty() {
            return self.hosts.uniform(rng, self.n);
        }
        let hot = self.threshold();
        let Chosen { index: i, cold } = self.best(hot);
        let server = self.pool[i].server;
        let used = self.pool[i].rif;
        self.pool[i].rif += 1;
        if self.pool.len() > self.cfg.pool / 2 {
            // The threshold again: the probe just used holds one more request.
            let hot = self.threshold_after_use(hot, used, cold);
            let w = self.worst(hot);
            self.pool.swap_remove(w);
        }
        server
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
        let allowed = &self.hosts;
        self.pool.retain(|p| allowed.contains(p.server));
    }

    fn probes(&mut self, _now: SimTime, rng: &mut SimRng, out: &mut Vec<usize>) {
        let whole = self.cfg.probe_rate.floor();
        let mut k = whole as usize;
        let frac = self.cfg.probe_rate - whole;
        if frac > 0.0 && rng.random::<f64>() < frac {
            k += 1;
        }
        for _ in 0..k {
            out.push(self.hosts.uniform(rng, self.n));
        }
    }

    fn probe_delay(&self) -> f64 {
        self.cfg.probe_delay
    }

    fn on_probe(&mut self, server: usize, reply: ProbeReply, now: SimTime, _tag: u32) {
        if !self.hosts.contains(server) {
            return;
        }
        let probe = Probe { server, rif: reply.rif, latency: reply.latency, at: now.get() };
        // One pass for both the server's probe (at most one) and the oldest (the first of the
        // earliest, as `min_by` with `total_cmp` finds it, on the order's integer keys).
        let (mut found, mut oldest, mut earliest) = (None, 0, i64::MAX);
        for (i, p) in self.pool.iter().enumerate() {
            let key = total_order_key(p.at);
            found = if p.server == server { Some(i) } else { found };
            (oldest, earliest) = if key < earliest { (i, key) } else { (oldest, earliest) };
        }
        if let Some(i) = found {
            self.pool[i] = probe;
            return;
        }
        if self.pool.len() >= self.cfg.pool {
            self.pool.swap_remove(oldest);
        }
        self.pool.push(probe);
    }
}

/// `x`'s rank in [`f64::total_cmp`]'s order as an integer: the bits, with the magnitude bits of
/// a negative value flipped (as `total_cmp` compares them).
#[inline]
fn total_order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A pool of probes (server, rif, latency), all received at time 0.
    fn with_pool(q_rif: f64, probes: &[(usize, u32, f64)]) -> Prequal {
        let cfg = PrequalConfig { q_rif, pool: 16, ..PrequalConfig::default() };
        let mut p = Prequal::new(10, cfg);
        for &(server, rif, latency) in probes {
            p.on_probe(server, ProbeReply { rif, latency }, SimTime::ZERO, 0);
        }
        p
    }

    fn pick(p: &mut Prequal) -> usize {
        let mut rng = SimRng::seed_from_u64(1);
        p.pick(&LoadTable::new(10, false), SimTime::ZERO, &mut rng)
    }

    const PROBES: [(usize, u32, f64); 5] =
        [(0, 9, 1.0), (1, 1, 6.0), (2, 4, 2.5), (3, 0, 8.0), (4, 6, 1.5)];

    #[test]
    fn q_rif_one_is_the_lowest_latency_of_the_probed() {
        // Nothing is above the maximum: every probe is cold, and server 0 has the lowest latency
        // however many requests it holds.
        assert_eq!(pick(&mut with_pool(1.0, &PROBES)), 0);
    }

    #[test]
    fn q_rif_zero_is_the_lowest_rif() {
        // Only the probes at the minimum RIF are cold: server 3 (RIF 0), however slow.
        assert_eq!(pick(&mut with_pool(0.0, &PROBES)), 3);
    }

    #[test]
    fn the_default_quantile_makes_the_busiest_hot() {
        // RIFs 0 1 4 6 9: the 0.84 quantile of five is the 5th (ceil 4.2), 9 — nothing hot. With
        // q_rif = 0.6, the 3rd (4): servers 0 (9) and 4 (6) are hot, and the fastest cold one is
        // server 2 (2.5).
        assert_eq!(pick(&mut with_pool(0.84, &PROBES)), 0);
        assert_eq!(pick(&mut with_pool(0.6, &PROBES)), 2);
    }

    #[test]
    fn a_used_probe_counts_its_request_and_old_probes_are_dropped() {
        let mut p = with_pool(1.0, &[(0, 2, 1.0), (1, 0, 3.0)]);
        assert_eq!(pick(&mut p), 0);
        // Two probes in a pool of 16: no removal; server 0's RIF is now 3.
        assert_eq!(p.pool().iter().find(|q| q.server == 0).unwrap().rif, 3);
        let mut rng = SimRng::seed_from_u64(2);
        let late = SimTime::new(PrequalConfig::default().max_age + 1.0);
        p.pick(&LoadTable::new(10, false), late, &mut rng);
        assert!(p.pool().is_empty());
    }

    #[test]
    fn a_full_pool_evicts_the_oldest_and_a_server_keeps_one_probe() {
        let cfg = PrequalConfig { pool: 2, ..PrequalConfig::default() };
        let mut p = Prequal::new(10, cfg);
        let r = |rif| ProbeReply { rif, latency: 1.0 };
        p.on_probe(0, r(1), SimTime::new(1.0), 0);
        p.on_probe(1, r(1), SimTime::new(2.0), 0);
        p.on_probe(1, r(5), SimTime::new(3.0), 0);
        assert_eq!(p.pool().len(), 2);
        p.on_probe(2, r(1), SimTime::new(4.0), 0);
        let servers: Vec<usize> = p.pool().iter().map(|q| q.server).collect();
        assert!(!servers.contains(&0) && servers.contains(&1) && servers.contains(&2));
    }

    /// The threshold after a pick, derived from the one before, is the one selected afresh:
    /// exact, over many random pools (1 to 16 probes, RIFs of 0 to 4 so that ties at the
    /// threshold are common, quantiles from 0 to 1) and every probe of each raised in turn.
    /// Both outcomes (kept, moved up by one) occur many times.
    #[test]
    fn the_threshold_after_a_pick_is_the_one_selected_afresh() {
        use rand::RngExt;
        let mut rng = SimRng::seed_from_u64(7);
        let (mut kept, mut moved) = (0, 0);
        for _ in 0..5000 {
            let len = rng.random_range(1..=16);
            let q_rif = [0.0, 0.25, 0.5, 0.84, 1.0, rng.random::<f64>()][rng.random_range(0..6)];
            let probes: Vec<(usize, u32, f64)> =
                (0..len).map(|s| (s, rng.random_range(0..5), 1.0)).collect();
            let pool = with_pool(q_rif, &probes);
            for i in 0..len {
                let mut p = pool.clone();
                let hot = p.threshold();
                let cold = p.pool.iter().filter(|q| q.rif <= hot).count();
                let used = p.pool[i].rif;
                p.pool[i].rif += 1;
                let derived = p.threshold_after_use(hot, used, cold);
                assert_eq!(derived, p.threshold(), "pool {probes:?}, q_rif {q_rif}, raised {i}");
                if derived == hot { kept += 1 } else { moved += 1 }
            }
        }
        assert!(kept > 1000 && moved > 1000, "kept {kept}, moved {moved}");
    }

    /// The fast selections find the probes that comparing whole keys finds, on many random
    /// pools built to tie: RIFs of 0 to 4, latencies from three values (one pool in ten with a
    /// NaN among them, one in ten with infinities), reply times from three; every threshold
    /// from 0 to 5 (5: every probe cold; none is all hot, as a threshold from the pool never
    /// is, but [`Prequal::best`] falls back to the keys then). Exact.
    #[test]
    fn the_fast_selections_are_the_key_orders() {
        use rand::RngExt;
        let mut rng = SimRng::seed_from_u64(11);
        for round in 0..20_000 {
            let len = rng.random_range(1..=16);
            let cfg = PrequalConfig { pool: 16, ..PrequalConfig::default() };
            let mut p = Prequal::new(100, cfg);
            let odd = [f64::NAN, f64::INFINITY][round % 2];
            for s in 0..len {
                let latency = match rng.random_range(0..30) {
                    0 if round % 10 < 2 => odd,
                    l => [0.5, 1.0, 2.0][l % 3],
                };
                let reply = ProbeReply { rif: rng.random_range(0..5), latency };
                p.on_probe(s, reply, SimTime::new(f64::from(rng.random_range(0..3_u8))), 0);
            }
            for hot in 0..=5 {
                let cold = p.pool.iter().filter(|q| q.rif <= hot).count();
                let chosen = p.best(hot);
                assert_eq!(chosen.index, p.best_by_keys(hot), "{:?} hot {hot}", p.pool);
                assert_eq!(chosen.cold, cold);
                assert_eq!(p.worst(hot), p.worst_by_keys(hot), "{:?} hot {hot}", p.pool);
            }
        }
    }

    /// The oldest probe a full pool evicts is the first of the earliest, as `min_by` with
    /// `total_cmp` finds it, and a replaced probe keeps its place: the pool after random replies
    /// (few servers and reply times, so replacements and ties are common) is the one the
    /// straightforward search builds.
    #[test]
    fn replies_replace_and_evict_as_the_plain_search_does() {
        use rand::RngExt;
        let mut rng = SimRng::seed_from_u64(12);
        let cfg = PrequalConfig { pool: 6, ..PrequalConfig::default() };
        let mut p = Prequal::new(12, cfg);
        let mut plain: Vec<Probe> = Vec::new();
        for _ in 0..50_000 {
            let server = rng.random_range(0..12);
            let at = f64::from(rng.random_range(0..4_u8));
            let reply = ProbeReply { rif: rng.random_range(0..9), latency: 1.0 };
            p.on_probe(server, reply, SimTime::new(at), 0);
            let probe = Probe { server, rif: reply.rif, latency: 1.0, at };
            if let Some(q) = plain.iter_mut().find(|q| q.server == server) {
                *q = probe;
            } else {
                if plain.len() >= 6 {
                    let oldest = (0..plain.len())
                        .min_by(|&a, &b| plain[a].at.total_cmp(&plain[b].at))
                        .expect("a full pool");
                    plain.swap_remove(oldest);
                }
                plain.push(probe);
            }
            assert_eq!(p.pool(), &plain[..]);
        }
    }
}
