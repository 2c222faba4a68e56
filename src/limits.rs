//! Upper bounds that keep a run within memory and within a human lifetime.
//!
//! The command line (`options` and the commands in `experiment`) and scenario files (`scenario`)
//! refuse values beyond them; this module depends on no other, so both can use it.

/// Servers in a farm (each costs ~100 bytes per replication in flight).
pub const SERVERS: u64 = 1_000_000;
/// Balls and bins in `bins` (4 bytes per bin per replication in flight).
pub const BINS: u64 = 100_000_000;
/// Warm-up plus measured arrivals per replication (10^12 is about a day at full speed).
pub const ARRIVALS: u64 = 1_000_000_000_000;
/// Replications in one command, all its shards together (each is folded into its row as it
/// finishes; a row keeps 16 bytes per replication for its intervals, so 10^7 keep 160 MB).
pub const REPLICATIONS: u64 = 10_000_000;
/// Largest `--threads` accepted.
pub const THREADS: u64 = 1024;
/// Worker threads started per available core at most: a run is CPU-bound, so more only add
/// the cost of starting them (1024 threads turn a 0.05 s run into a second).
pub const THREADS_PER_CORE: usize = 4;
/// Largest queue guard.
pub const QUEUE_GUARD: u64 = 1_000_000_000;
/// Smallest positive board period (each period costs one O(n) post).
pub const MIN_PERIOD: f64 = 1e-3;
/// Largest service rate or weight ratio handled.
pub const RATE: f64 = 1e6;
/// Smallest service rate (times stay within a few orders of magnitude of a service time).
pub const MIN_RATE: f64 = 1e-6;
/// Smallest load: below it the simulated clock grows so large that a sojourn time is lost in
/// the rounding of the time stamps.
pub const MIN_LOAD: f64 = 1e-6;
/// Server updates by board posts per replication in `stale` (servers x posts).
pub const BOARD_UPDATES: f64 = 1e12;
/// Levels (output rows) per `(lambda, d)` in `fixed`.
pub const LEVELS: u64 = 10_000;
/// Rows printed by `swrr --trace` times the servers in each.
pub const TRACE_CELLS: u64 = 1_000_000;
/// Cycle times servers, per weight set compared by `swrr`.
pub const SWRR_WORK: u64 = 100_000_000;
/// Simulated time per replication, in mean service times of the fastest server: beyond it the
/// clock's rounding (2^-52 of the time) is no longer small against a service time.
pub const HORIZON: f64 = 1e12;
/// Choices of `pNc` and of `fixed --d` (a pick samples N distinct servers, in O(N^2)).
pub const CHOICES: u32 = 100;
/// `swrr`'s cycle times servers (computed once per replication, one O(n) step per pick).
pub const SWRR_SETUP: u64 = 1_000_000_000;
/// Memory the replications running at once may hold, in bytes.
pub const MEMORY: u64 = 8 << 30;
/// Arrivals of `limit` over all its replications (about a minute of limiter decisions).
pub const LIMIT_ARRIVALS: f64 = 1e9;
/// Bytes a replication of `limit` holds per arrival: its time and its release time (8 bytes
/// each), its decision (1), and twice that while a vector doubles its capacity.
pub const BYTES_PER_LIMIT_ARRIVAL: u64 = 40;
/// Bytes a farm holds per server in one replication (queues, load table, counters).
pub const BYTES_PER_SERVER: u64 = 100;
/// Bytes `bins` holds per bin in one replication.
pub const BYTES_PER_BIN: u64 = 2;
/// Keys placed by `hash` (8 bytes each, held once, plus 4 per replication in flight).
pub const HASH_KEYS: u64 = 100_000_000;
/// Points on one ring of `hash` (servers + 1 times vnodes; 16 bytes each).
pub const RING_POINTS: u64 = 10_000_000;
/// Default of `--max-requests` and `run.max_requests`: the most measured arrivals `precision`
/// may lengthen a row to.
pub const DEFAULT_MAX_REQUESTS: u64 = 100_000_000;
