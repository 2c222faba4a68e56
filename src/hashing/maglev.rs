//! Maglev's lookup table (Eisenbud et al., *Maglev: A Fast and Reliable Software Network Load
//! Balancer*, NSDI 2016, §3.4, Pseudocode 1), as Envoy builds it.

use super::hash_words;

/// The table size the paper recommends for production (§5.3) and Envoy's default
/// (`MaglevTable::DefaultTableSize`): a prime.
pub const DEFAULT_TABLE_SIZE: usize = 65537;

/// A Maglev lookup table: `table_size` entries, each naming a server; a key goes to
/// `table[key_hash % table_size]`.
///
/// Pseudocode 1: server `i` has `offset = h1(i) mod M` and `skip = h2(i) mod (M - 1) + 1`, and its
/// preference list is `permutation[i][j] = (offset + j * skip) mod M`; M prime makes every skip
/// coprime to M, so each list visits every entry once. The servers take turns, in index order,
/// each claiming the next entry of its list that is still empty, until the table is full. So
/// every server ends with `floor(M/N)` or `ceil(M/N)` entries, the balance the paper designs for.
///
/// As Envoy (`maglev_lb.cc`, `MaglevTable::constructMaglevTableInternal` and
/// `OriginalMaglevTable::constructImplementationInternals`): `h1` and `h2` are xxHash64 with seeds
/// 0 and 1 of the server's name (here the words (placement seed, server)), and the lookup is
/// `table[hash % M]`. Differences: Envoy sorts hosts by name before taking turns and gives heavier
/// hosts more turns (`target_weight_`); here servers take turns in index order with equal
/// weights, so server `n` added to a table of `n` servers takes its turn last, as a new host with
/// the greatest name does in Envoy.
#[derive(Debug, Clone)]
pub struct Maglev {
    table: Vec<u32>,
    servers: usize,
}

impl Maglev {
    /// Eisenbud et al., NSDI 2016, "Maglev", §3.4 Pseudocode 1 (offset/skip permutations, table
    /// size M prime, default 65537); permutation of server i depends only on (seed, i).
    ///
    /// Panics when `servers` is 0 or above `u32::MAX`, or `table_size` is not a prime.
    pub fn new(servers: usize, table_size: usize, seed: u64) -> Maglev {
        assert!(servers > 0, "a table needs servers");
        let n = u32::try_from(servers).expect("servers fit in u32");
        let hosts: Vec<u32> = (0..n).collect();
        Maglev { servers, ..Maglev::with_hosts(&hosts, table_size, seed) }
    }

    /// The table of [`Maglev::new`] built over the servers `hosts` only (in that order of
    /// turns), each with the permutation it has in every table of the same seed: Envoy rebuilds
    /// the table over the healthy hosts when the host set changes (`MaglevLoadBalancer` is a
    /// `ThreadAwareLoadBalancerBase`, whose `refresh` builds a new table from the hosts to use).
    /// [`Maglev::servers`] is then the largest host plus one.
    ///
    /// Panics when `hosts` is empty or `table_size` is not a prime.
    pub fn with_hosts(hosts: &[u32], table_size: usize, seed: u64) -> Maglev {
        assert!(!hosts.is_empty(), "a table needs servers");
        assert!(is_prime(table_size as u64), "the table size must be a prime");
        let m = table_size as u64;
        let (offset, skip): (Vec<u64>, Vec<u64>) = hosts
            .iter()
            .map(|&i| {
                let words = [seed, u64::from(i)];
                (hash_words(&words, 0) % m, hash_words(&words, 1) % (m - 1) + 1)
            })
            .unzip();
        let mut next = vec![0u64; hosts.len()];
        const EMPTY: u32 = u32::MAX;
        let mut table = vec![EMPTY; table_size];
        let mut filled = 0;
        'fill: loop {
            for i in 0..hosts.len() {
                let mut c = (offset[i] + next[i] * skip[i]) % m;
                while table[c as usize] != EMPTY {
                    next[i] += 1;
                    c = (offset[i] + next[i] * skip[i]) % m;
                }
                table[c as usize] = hosts[i];
                next[i] += 1;
                filled += 1;
                if filled == table_size {
                    break 'fill;
                }
            }
        }
        let servers = hosts.iter().max().map_or(0, |&h| h as usize + 1);
        Maglev { table, servers }
    }

    /// The server of the entry `key_hash % M`.
    #[inline]
    pub fn lookup(&self, key_hash: u64) -> usize {
        self.table[(key_hash % self.table.len() as u64) as usize] as usize
    }

    /// Servers in the table.
    pub fn servers(&self) -> usize {
        self.servers
    }

    /// Entries in the table (M).
    pub fn table_size(&self) -> usize {
        self.table.len()
    }

    /// Entries per server.
    pub fn entries(&self) -> Vec<u64> {
        let mut count = vec![0u64; self.servers];
        for &s in &self.table {
            count[s as usize] += 1;
        }
        count
    }
}

/// Whether `m` is a prime (trial division; table sizes are small).
pub fn is_prime(m: u64) -> bool {
    if m < 2 {
        return false;
    }
    let mut d = 2u64;
    while d * d <= m {
        if m.is_multiple_of(d) {
            return false;
        }
        d += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_filled_and_shares_differ_by_at_most_one() {
        for (n, m, seed) in [(100, DEFAULT_TABLE_SIZE, 1), (7, 13, 2), (13, 13, 3), (3, 101, 4)] {
            let t = Maglev::new(n, m, seed);
            assert_eq!(t.table_size(), m);
            assert!(t.table.iter().all(|&s| (s as usize) < n), "an entry left empty");
            let e = t.entries();
            let (lo, hi) = (*e.iter().min().unwrap(), *e.iter().max().unwrap());
            assert_eq!(e.iter().sum::<u64>(), m as u64);
            assert!(lo == (m / n) as u64 && hi <= m.div_ceil(n) as u64, "n={n} m={m}: {lo}..{hi}");
        }
    }

    #[test]
    fn each_preference_list_is_a_permutation() {
        // With M prime, offset + j * skip (mod M) visits every entry once for j < M.
        let m = 31u64;
        for i in 0..20u64 {
            let words = [7, i];
            let (offset, skip) = (hash_words(&words, 0) % m, hash_words(&words, 1) % (m - 1) + 1);
            let mut seen: Vec<u64> = (0..m).map(|j| (offset + j * skip) % m).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..m).collect::<Vec<_>>());
        }
    }

    #[test]
    fn servers_take_turns_claiming_their_preferred_free_entry() {
        // Rebuild a small table by hand from the pseudocode and compare entry by entry.
        let (n, m, seed) = (3usize, 7u64, 11u64);
        let pref = |i: u64| {
            let words = [seed, i];
            let (o, s) = (hash_words(&words, 0) % m, hash_words(&words, 1) % (m - 1) + 1);
            (0..m).map(move |j| (o + j * s) % m)
        };
        let mut want = vec![None; m as usize];
        let mut lists: Vec<Vec<u64>> = (0..n as u64).map(|i| pref(i).collect()).collect();
        let mut filled = 0;
        'outer: loop {
            for (i, list) in lists.iter_mut().enumerate() {
                let c = list.iter().position(|&c| want[c as usize].is_none()).unwrap();
                want[list[c] as usize] = Some(i);
                list.drain(..=c);
                filled += 1;
                if filled == m {
                    break 'outer;
                }
            }
        }
        let t = Maglev::new(n, m as usize, seed);
        let got: Vec<Option<usize>> = t.table.iter().map(|&s| Some(s as usize)).collect();
        assert_eq!(got, want);
        assert_eq!(t.lookup(3), want[3].unwrap());
        assert_eq!(t.lookup(7 + 3), want[3].unwrap(), "the lookup is hash mod M");
    }

    #[test]
    fn primes() {
        assert!(is_prime(65537) && is_prime(2) && is_prime(13));
        assert!(!is_prime(65536) && !is_prime(1) && !is_prime(0) && !is_prime(91));
    }
}
