//! Raw records: what a shard writes, one JSON object per line.
//!
//! ```text
//! {"manifest":{"lbsim":"0.1.0","command":["homo","--loads","0.9","--shard","1/4"],"plan":"…","tasks":12,"shards":4,"shard":1}}
//! {"task":{"index":1,"scenario":0,"replication":1,"result":{…},"xxh64":"…"}}
//! {"task":{"index":5,"scenario":1,"replication":0,"result":{…},"xxh64":"…"}}
//! {"end":{"tasks":3}}
//! ```
//!
//! A queueing task's `result` is the replication's [`RepStats`] as serde writes it: measured
//! requests and their sojourn sum, the halves of the measured window, the latency histogram as
//! sparse buckets (`[lowest value in microunits, count]`), the largest queue, events, per-server
//! dispatches, the queue-length level areas (`fixed`), the stop reason, the sojourn series of the
//! steady-state verdict, the warm-up, and with `run --series` its windows (per window: the groups'
//! dispatches, the servers' queue integrals, and the histogram's used buckets as `[bucket, count]`
//! pairs); fields added to `RepStats` are carried along. A `bins` task's result is the max load.
//! Floats are written in their shortest round-trip form and read back exactly (serde_json's
//! `float_roundtrip`); every record is read back before it is written, so a value JSON cannot
//! hold (a NaN) stops the shard instead of corrupting the merge.
//!
//! Every task object ends with its checksum, `xxh64`: the 64-bit xxHash (seed 0, 16 hex digits) of
//! the task object as written without that field (`{"index":…,"result":{…}}`), whatever its result
//! holds. `merge` recomputes it and checks the result's fields against each other ([`Record`])
//! before anything is summarised, so a record edited or damaged after it was written is refused.

use std::io::{self, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh64::xxh64;

use super::{Plan, Shard, plan_hash, run_shard, run_task};
use crate::experiment::Config;
use crate::experiment::capacity::Search;
use crate::experiment::{Cases, Progress, Queueing, bins};
use crate::stats::RepStats;

/// The lbsim version that writes and merges raw records.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The first line of a shard's records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The lbsim version that wrote the records.
    pub lbsim: String,
    /// The command line after `lbsim`, as given.
    pub command: Vec<String>,
    /// [`plan_hash`] of the command.
    pub plan: String,
    /// Tasks of the whole command.
    pub tasks: u64,
    /// `N`.
    pub shards: u64,
    /// `K`.
    pub shard: u64,
}

/// One task's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Task<R> {
    /// Its index: `scenario * seeds + replication`.
    pub index: u64,
    /// The scenario (row order; a `bins` case).
    pub scenario: u64,
    /// The replication.
    pub replication: u64,
    /// What it measured.
    pub result: R,
    /// [`checksum`] of the record, written last (absent only while it is computed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xxh64: Option<String>,
}

/// The checksum of `task`: xxh64 (seed 0) of its JSON without its `xxh64` field, as 16 hex
/// digits. Floats read back to the bit and are written in one form, so a record read back
/// serialises to the bytes that were hashed.
pub fn checksum<R: Serialize>(task: &Task<R>) -> String {
    let bare = Task {
        index: task.index,
        scenario: task.scenario,
        replication: task.replication,
        result: &task.result,
        xxh64: None,
    };
    let text = serde_json::to_string(&bare).expect("raw records serialise");
    format!("{:016x}", xxh64(text.as_bytes(), 0))
}

/// A task's result as merge reads it: checked for fields that contradict each other.
pub trait Record: Serialize + DeserializeOwned {
    /// What is inconsistent in the record, if anything.
    fn damage(&self) -> Option<String>;
}

impl Record for u32 {
    fn damage(&self) -> Option<String> {
        None
    }
}

impl Record for Search {
    fn damage(&self) -> Option<String> {
        if !(self.good.is_finite() && self.bad.is_finite()) {
            return Some(format!("its bracket [{:e}, {:e}] is not finite", self.good, self.bad));
        }
        if self.probes < 2 {
            return Some(format!("it ran {} probes; a search probes both ends", self.probes));
        }
        None
    }
}

impl Record for RepStats {
    fn damage(&self) -> Option<String> {
        let n = self.requests;
        if self.hist.len() != n {
            return Some(format!(
                "its histogram holds {} sojourns but requests is {n}",
                self.hist.len()
            ));
        }
        let halves = self.first_half.0.checked_add(self.second_half.0);
        if halves != Some(n) {
            return Some(format!(
                "its halves hold {} and {} requests but requests is {n}",
                self.first_half.0, self.second_half.0
            ));
        }
        let sums = [
            ("sum", self.sum),
            ("first_half's sum", self.first_half.1),
            ("second_half's sum", self.second_half.1),
            ("server_time", self.server_time),
        ];
        let areas = self.level_area.iter().map(|&a| ("a level_area", a));
        if let Some((what, x)) =
            sums.into_iter().chain(areas).find(|(_, x)| !(x.is_finite() && *x >= 0.0))
        {
            return Some(format!("{what} is {x:e}, not a finite non-negative number"));
        }
        if let Some((lo, hi)) = self.range
            && !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi)
        {
            return Some(format!("its range [{lo:e}, {hi:e}] is not a range of sojourns"));
        }
        if self.stops > 1 {
            return Some(format!("stops is {}; one replication stops at most once", self.stops));
        }
        if self.stops != u64::from(self.stopped.is_some()) {
            return Some(match self.stopped {
                Some(why) => format!("stops is 0 but it was {why}"),
                None => "stops is 1 but it gives no stop reason".into(),
            });
        }
        if let Some(w) = &self.windows {
            if let Some(what) = w.damage(crate::engine::BUCKETS) {
                return Some(what);
            }
            let l = &self.lifecycle;
            if l.is_empty() && w.sojourns() != n {
                return Some(format!(
                    "its windows' histograms hold {} sojourns but requests is {n}",
                    w.sojourns()
                ));
            }
            // With the request lifecycle the histograms hold each served attempt's sojourn at
            // its server (failed and abandoned ones too), and the outcomes every request's end.
            if !l.is_empty() && w.sojourns() > l.attempts {
                return Some(format!(
                    "its windows' histograms hold {} sojourns but attempts is {}",
                    w.sojourns(),
                    l.attempts
                ));
            }
            let ended: u64 = w.outcomes.iter().map(|o| o[1]).sum();
            let good: u64 = w.outcomes.iter().map(|o| o[2]).sum();
            if !w.outcomes.is_empty() && (ended, good) != (l.requests, l.successes) {
                return Some(format!(
                    "its windows' outcomes end {ended} requests, {good} of them answered, but \
                     the lifecycle counted {} and {}",
                    l.requests, l.successes
                ));
            }
        }
        None
    }
}

/// The last line: how many task lines the shard wrote.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct End {
    /// Task lines between the manifest and this line.
    pub tasks: u64,
}

/// A line of raw records.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Line<R> {
    /// The manifest.
    Manifest(Manifest),
    /// A task.
    Task(Task<R>),
    /// The end.
    End(End),
}

/// Runs `shard` of `plan` and writes its raw records to `out` as they come: each task's line is
/// made by the worker that ran it, and written as soon as the lines of the tasks before it are, so
/// only a bounded number of lines wait whatever the number of tasks. Returns the events simulated,
/// or the first error writing `out` (the tasks still run, but nothing more is written).
pub(super) fn write(
    cfg: &Config,
    plan: &Plan,
    shard: Shard,
    argv: &[String],
    progress: Progress,
    out: &mut (dyn Write + Send),
) -> io::Result<u64> {
    let c = &cfg.common;
    let tasks = plan.tasks(c);
    let manifest = Manifest {
        lbsim: VERSION.into(),
        command: argv.to_vec(),
        plan: plan_hash(cfg),
        tasks,
        shards: shard.count,
        shard: shard.index,
    };
    out.write_all(line::<()>(&Line::Manifest(manifest)).as_bytes())?;
    let (mut count, mut events) = (0u64, 0u64);
    let mut failed: Option<io::Error> = None;
    let mut put = |text: &str| {
        if failed.is_none()
            && let Err(e) = out.write_all(text.as_bytes())
        {
            failed = Some(e);
        }
    };
    match plan {
        Plan::Queueing(Queueing { scenarios, runs, .. }) => run_shard(
            c,
            tasks,
            shard,
            |i| {
                let r = run_task(scenarios, runs, c, i);
                progress.done();
                (r.events, task_line(i, r, c.seeds))
            },
            |_, (e, text)| {
                events += e;
                count += 1;
                put(&text);
            },
        ),
        Plan::Bins(Cases(cases)) => run_shard(
            c,
            tasks,
            shard,
            |i| {
                let m = bins::task(cases[(i / c.seeds) as usize], c.seed, i % c.seeds);
                progress.done();
                task_line(i, m, c.seeds)
            },
            |i, text| {
                events += cases[(i / c.seeds) as usize].0;
                count += 1;
                put(&text);
            },
        ),
        Plan::Searches(searches) => run_shard(
            c,
            tasks,
            shard,
            |i| {
                let s = searches.task(c, i, progress);
                (s.events, task_line(i, s, 1))
            },
            |_, (e, text)| {
                events += e;
                count += 1;
                put(&text);
            },
        ),
    }
    if let Some(e) = failed {
        return Err(e);
    }
    out.write_all(line::<()>(&Line::End(End { tasks: count })).as_bytes())?;
    Ok(events)
}

/// The task line of task `index`'s `result`, checked to read back as written. The task is
/// serialised once, without its checksum; the checksum is of those bytes, and the line is they
/// with the checksum appended as the object's last field (what serde writes for the whole
/// [`Line::Task`], byte for byte).
pub(super) fn task_line<R: Serialize + DeserializeOwned>(
    index: u64,
    result: R,
    seeds: u64,
) -> String {
    let task =
        Task { index, scenario: index / seeds, replication: index % seeds, result, xxh64: None };
    let bare = serde_json::to_string(&task).expect("raw records serialise");
    let back: Result<Task<R>, _> = serde_json::from_str(&bare);
    let again = back.map(|t| serde_json::to_string(&t).expect("raw records serialise"));
    assert!(
        again.as_ref().is_ok_and(|a| *a == bare),
        "task {index}'s result does not survive JSON exactly: {again:?}"
    );
    let sum = format!("{:016x}", xxh64(bare.as_bytes(), 0));
    let open = bare.strip_suffix('}').expect("a task serialises to an object");
    format!("{{\"task\":{open},\"xxh64\":\"{sum}\"}}}}\n")
}

/// `l` as one line of JSON, newline included.
pub(super) fn line<R: Serialize>(l: &Line<R>) -> String {
    let mut s = serde_json::to_string(l).expect("raw records serialise");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Scenario, run_replication};
    use crate::model::Farm;
    use crate::policy::PolicyKind;
    use crate::stats::RepStats;

    /// A replication read back from its record equals the one written, field by field (the
    /// histogram bucket by bucket, with its count, minimum and maximum), and so do its readings.
    #[test]
    fn a_replication_survives_its_record() {
        let mut sc = Scenario::live(Farm::homogeneous(10, 0.9), PolicyKind::PnC(2), 10.0);
        sc.track_levels = true;
        let run = crate::experiment::RunConfig::new(500, 4000, 1000);
        let rep = run_replication(&sc, &run, 7, 3);
        let text = task_line(3, rep.clone(), 4);
        let Line::Task(back) = serde_json::from_str::<Line<RepStats>>(&text).unwrap() else {
            panic!("a task line");
        };
        let r = back.result;
        assert_eq!(r.hist, rep.hist);
        assert_eq!(r.series, rep.series);
        assert_eq!(r.sum.to_bits(), rep.sum.to_bits());
        assert_eq!(r.first_half.1.to_bits(), rep.first_half.1.to_bits());
        assert_eq!(r.second_half.1.to_bits(), rep.second_half.1.to_bits());
        assert_eq!(r.server_time.to_bits(), rep.server_time.to_bits());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&r.level_area), bits(&rep.level_area));
        assert_eq!(
            (r.requests, r.max_queue, r.events, &r.picks, r.stops, r.warmup),
            (rep.requests, rep.max_queue, rep.events, &rep.picks, rep.stops, rep.warmup)
        );
        for q in [0.5, 0.99, 0.999] {
            assert_eq!(r.quantile(q).to_bits(), rep.quantile(q).to_bits());
        }
        // And once more: the text is a fixed point.
        assert!(r.damage().is_none());
        let xxh64 = back.xxh64.clone();
        let again = Task { index: 3, scenario: 0, replication: 3, result: r, xxh64 };
        assert_eq!(again.xxh64.as_deref(), Some(checksum(&again).as_str()));
        assert_eq!(line(&Line::Task(again)), text);
    }

    /// Counts the lines written to it.
    struct Lines(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl Write for Lines {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.iter().filter(|&&b| b == b'\n').count();
            self.0.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// On one thread, when a task finishes, the manifest and the lines of every task before it
    /// are already written: nothing is held back until the end.
    #[test]
    fn each_record_is_written_before_the_next_task_ends() {
        use clap::Parser;
        let argv = "lbsim homo --loads 0.9 --policies p2c --seeds 4 --requests 500 --threads 1";
        let cli = crate::cli::Cli::try_parse_from(argv.split(' ')).unwrap();
        let cfg = Config::from_cli(&cli).unwrap();
        let plan = Plan::of(&cfg).unwrap();
        let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let finished = std::sync::atomic::AtomicUsize::new(0);
        let lines_before = std::sync::Mutex::new(Vec::new());
        let done = || {
            let lines = written.load(std::sync::atomic::Ordering::SeqCst);
            lines_before.lock().unwrap().push(lines);
            finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        };
        let shard = Shard { index: 0, count: 1 };
        let mut out = Lines(written.clone());
        write(&cfg, &plan, shard, &[], &done, &mut out).unwrap();
        assert_eq!(*lines_before.lock().unwrap(), [1, 2, 3, 4], "lines written as each task ends");
        assert_eq!(written.load(std::sync::atomic::Ordering::SeqCst), 6, "manifest, 4 tasks, end");
    }

    #[test]
    fn floats_that_need_all_their_digits_round_trip() {
        let mut rep = RepStats::default();
        for x in [0.1 + 0.2, 1.0 / 3.0, 5e-324, f64::MAX, 2.0f64.sqrt() * 1e300, 123456.789e-300] {
            rep.sum = x;
            let text = serde_json::to_string(&rep).unwrap();
            let back: RepStats = serde_json::from_str(&text).unwrap();
            assert_eq!(back.sum.to_bits(), x.to_bits(), "{x:e}");
        }
    }

    #[test]
    #[should_panic(expected = "does not survive JSON")]
    fn a_nan_stops_the_shard() {
        let rep = RepStats { sum: f64::NAN, ..RepStats::default() };
        task_line(0, rep, 1);
    }
}
