//! Throughput of the simulation engine, single-threaded, against a single-purpose baseline.
//!
//! Run with `cargo bench --bench throughput`; add `-- --quick` for shorter runs, and `-- throughput`,
//! `-- scaling` or `-- reading` for one section only. Method:
//!
//! - **Events per second.** One replication of `homo` (n = 100 rate-1 servers, load 0.9,
//!   100,000 warm-up and 1,500,000 measured requests) is timed per policy through the public API
//!   ([`run_replication`]), on the calling thread. An arrival and a departure are two events. Each
//!   policy is run `RUNS` times (replications 0, 1, ...) after one untimed run; the median is
//!   printed with the min and max.
//! - **Baseline.** `baseline::p2c` computes the same p2c replication as a plain loop over arrivals
//!   (per-server FIFOs of departure times, no event list), from the same random streams, at
//!   n = 100 and n = 100,000 (the warm-up scaled with n as below), one ratio each. Engine and
//!   baseline runs alternate, and the ratio is the median of the per-pair ratios, so a change in
//!   machine speed during the run does not bias it. Before timing, the bench checks that both give
//!   the same number of measured requests, the same p99 and the same mean (to 1e-12: the loop
//!   sums floats).
//! - **Scaling in n.** Nanoseconds per event at n = 100, 1,000, 10,000 and 100,000 for every policy
//!   (load 0.9; the warm-up is scaled with n so that the farm is in steady state).
//! - **Reading.** What reading a replication costs next to simulating it: its p99 interpolated
//!   inside the histogram bucket (what lbsim reports) and as the bucket's edge (hdrhistogram's
//!   own reading), and MSER-5 on its series (the steady-state verdict).
//!
//! Times are the benchmark thread's CPU time where the system reports it
//! (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`), else wall time: on a shared machine CPU time leaves out the waits for a core, though not the
//! slowdown from sharing caches or a physical core. An idle machine gives the cleanest figures.

mod baseline;

use std::hint::black_box;
use std::time::Instant;

use lbsim::experiment::RunConfig;
use lbsim::experiment::{Scenario, run_replication};
use lbsim::model::Farm;
use lbsim::policy::PolicyKind;

const SEED: u64 = 1;
const LOAD: f64 = 0.9;
/// The farm sizes at which the p2c engine is timed against the baseline loop.
const BASELINE_SIZES: [usize; 2] = [100, 100_000];
const POLICIES: [&str; 7] = ["random", "rr", "p2c", "p2c-repl", "p3c", "jsq", "p2c-pewma"];

struct Settings {
    runs: u64,
    requests: u64,
    scale_requests: u64,
}

fn run_config(n: usize, requests: u64) -> RunConfig {
    // Enough warm-up for the farm to fill: about 10 time units at load 0.9, and at least 100,000.
    let warmup = (100_000u64).max(10 * n as u64);
    RunConfig::new(warmup, requests, 100_000)
}

fn scenario(policy: &str, n: usize) -> Scenario {
    let kind = PolicyKind::parse(policy).expect("a known policy");
    Scenario::live(Farm::homogeneous(n, LOAD), kind, 10.0)
}

/// CPU time of the calling thread in seconds (`CLOCK_THREAD_CPUTIME_ID`, nanoseconds). Unlike wall
/// time it leaves out the time the thread waited for a core. (`/proc/thread-self/schedstat`, used
/// before, is brought up to date only at scheduler ticks: 4 ms steps, 4% of a 0.1 s run.)
fn thread_cpu_seconds() -> Option<f64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
    ok.then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

/// Runs `f` and returns its seconds (CPU time of this thread if known, else wall) and its result.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let (cpu, wall) = (thread_cpu_seconds(), Instant::now());
    let out = black_box(f());
    let wall = wall.elapsed().as_secs_f64();
    let secs = match (cpu, thread_cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => wall,
    };
    (secs, out)
}

/// Seconds and events of one engine replication.
fn time_engine(sc: &Scenario, run: &RunConfig, rep: u64) -> (f64, u64) {
    let (secs, stats) = timed(|| run_replication(sc, run, SEED, rep));
    (secs, stats.events)
}

/// Seconds and events of one baseline replication.
fn time_baseline(n: usize, run: &RunConfig, rep: u64) -> (f64, u64) {
    let (secs, out) = timed(|| baseline::p2c(n, LOAD, run.warmup, run.requests, SEED, rep));
    (secs, out.events)
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

/// Engine and baseline compute the same p2c replication.
fn check_baseline_matches_engine(n: usize, run: &RunConfig) {
    let engine = run_replication(&scenario("p2c", n), run, SEED, 0);
    let base = baseline::p2c(n, LOAD, run.warmup, run.requests, SEED, 0);
    assert_eq!(engine.requests, base.requests, "measured requests differ");
    assert_eq!(engine.events, base.events, "event counts differ");
    assert_eq!(engine.quantile(0.99), base.hist.quantile(0.99), "p99 differs");
    assert_eq!(engine.quantile(0.5), base.hist.quantile(0.5), "median differs");
    let rel = (engine.mean() - base.mean()).abs() / engine.mean();
    assert!(rel < 1e-12, "means differ: engine {} baseline {}", engine.mean(), base.mean());
    println!(
        "check: engine and baseline agree on p2c (n = {n}, {} requests): mean {:.6}, p99 {:.4}",
        engine.requests,
        engine.mean(),
        engine.quantile(0.99)
    );
}

fn throughput(s: &Settings) {
    let n = 100;
    let run = run_config(n, s.requests);
    println!(
        "\nevents/s, one thread: homo n = {n}, load {LOAD}, {} warm-up + {} measured requests, \
         median of {} runs",
        run.warmup, run.requests, s.runs
    );
    println!("{:<10} {:>12} {:>12} {:>12} {:>9}", "policy", "median", "min", "max", "ns/event");
    for policy in POLICIES {
        let sc = scenario(policy, n);
        time_engine(&sc, &run, s.runs); // untimed: warms caches and the allocator
        let rates: Vec<f64> = (0..s.runs)
            .map(|rep| {
                let (secs, events) = time_engine(&sc, &run, rep);
                events as f64 / secs
            })
            .collect();
        let (lo, hi) = min_max(&rates);
        let m = median(&rates);
        println!("{policy:<10} {m:>12.4e} {lo:>12.4e} {hi:>12.4e} {:>9.1}", 1e9 / m);
    }

    for n in BASELINE_SIZES {
        against_baseline(s, n);
    }
}

/// The p2c engine against the baseline loop at `n` servers: alternating runs of the same
/// replications, the ratio the median of the per-pair ratios.
fn against_baseline(s: &Settings, n: usize) {
    let run = run_config(n, s.requests);
    println!(
        "\np2c engine against the baseline loop, n = {n}, {} warm-up + {} measured requests \
         (alternating runs, same replications)",
        run.warmup, run.requests
    );
    let sc = scenario("p2c", n);
    time_baseline(n, &run, s.runs);
    let (mut eng, mut base, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..s.runs {
        let (te, ee) = time_engine(&sc, &run, rep);
        let (tb, eb) = time_baseline(n, &run, rep);
        eng.push(ee as f64 / te);
        base.push(eb as f64 / tb);
        ratio.push((ee as f64 / te) / (eb as f64 / tb));
    }
    println!("{:<10} {:>12} {:>12} {:>12}", "", "median", "min", "max");
    for (name, xs) in [("engine", &eng), ("baseline", &base)] {
        let (lo, hi) = min_max(xs);
        println!("{name:<10} {:>12.4e} {lo:>12.4e} {hi:>12.4e}", median(xs));
    }
    let (lo, hi) = min_max(&ratio);
    println!("{:<10} {:>12.3} {lo:>12.3} {hi:>12.3}", "ratio", median(&ratio));
}

fn scaling(s: &Settings) {
    let sizes = [100usize, 1_000, 10_000, 100_000];
    println!(
        "\nns/event against n, one thread, load {LOAD}, {} measured requests, median of {} runs",
        s.scale_requests, s.runs
    );
    print!("{:<10}", "policy");
    for n in sizes {
        print!(" {:>9}", format!("n={n}"));
    }
    println!(" {:>9}", "ratio");
    for policy in POLICIES {
        print!("{policy:<10}");
        // Sizes alternate within each round, so a change in machine speed hits them alike.
        let mut ns = vec![Vec::new(); sizes.len()];
        for rep in 0..s.runs {
            for (k, &n) in sizes.iter().enumerate() {
                let (secs, events) =
                    time_engine(&scenario(policy, n), &run_config(n, s.scale_requests), rep);
                ns[k].push(secs * 1e9 / events as f64);
            }
        }
        let per_event: Vec<f64> = ns.iter().map(|v| median(v)).collect();
        for x in &per_event {
            print!(" {x:>9.1}");
        }
        // Cost at n = 10,000 over the cost at n = 100.
        println!(" {:>9.2}", per_event[2] / per_event[0]);
    }
    println!("(ratio: ns/event at n = 10,000 over n = 100)");
}

/// What reading the results costs next to simulating them: one p2c replication, then its p99 read
/// by interpolation inside the bucket and as the bucket's edge, and MSER-5 on its series.
fn reading(s: &Settings) {
    let n = 100;
    let run = run_config(n, s.requests);
    let sc = scenario("p2c", n);
    let (sim, rep) = timed(|| run_replication(&sc, &run, SEED, 0));
    // Wall time: the thread's CPU time is only brought up to date at scheduling events, too
    // coarse for calls of microseconds. The median of 15 rounds of 200 calls.
    const CALLS: u32 = 200;
    let per_call = |f: &dyn Fn() -> f64| {
        let rounds: Vec<f64> = (0..15)
            .map(|_| {
                let start = Instant::now();
                black_box((0..CALLS).map(|_| black_box(f())).sum::<f64>());
                start.elapsed().as_secs_f64() / f64::from(CALLS)
            })
            .collect();
        median(&rounds)
    };
    let interpolated = per_call(&|| rep.hist.quantile(black_box(0.99)));
    let edge = per_call(&|| rep.hist.bucket_edge_quantile(black_box(0.99)));
    let mser = per_call(&|| rep.series.mser5().map_or(0.0, |t| t.arrivals as f64));
    println!(
        "
reading one replication (p2c, n = {n}, {} requests, {:.3} s to simulate)",
        run.requests, sim
    );
    println!("{:<22} {:>12} {:>16}", "", "seconds", "x simulation");
    for (name, secs) in
        [("p99, interpolated", interpolated), ("p99, bucket edge", edge), ("MSER-5", mser)]
    {
        println!("{name:<22} {secs:>12.3e} {:>16.2e}", secs / sim);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let s = if quick {
        Settings { runs: 3, requests: 300_000, scale_requests: 300_000 }
    } else {
        Settings { runs: 7, requests: 1_500_000, scale_requests: 1_000_000 }
    };
    // Sections to run (default: all): `throughput`, `scaling`, `reading`.
    let sections: Vec<&str> =
        args.iter().map(String::as_str).filter(|a| !a.starts_with('-')).collect();
    let wanted = |name| sections.is_empty() || sections.contains(&name);
    for n in BASELINE_SIZES {
        check_baseline_matches_engine(n, &run_config(n, 200_000));
    }
    let clock = if thread_cpu_seconds().is_some() { "thread CPU time" } else { "wall time" };
    println!("times are {clock}");
    if wanted("throughput") {
        throughput(&s);
    }
    if wanted("scaling") {
        scaling(&s);
    }
    if wanted("reading") {
        reading(&s);
    }
}
