//! `lbsim run --series FILE`: what happened when, per window of simulated time.
//!
//! Each replication records [`Windows`] (per window and group: measured dispatches; per window and
//! server: the integral of the queue length; per window: a histogram of the sojourns of the
//! measured requests that arrived in it, as the buckets it uses), written to a tape as they close
//! in an unsharded run ([`SpooledWindows`]), carried in its record by a shard. [`PooledTape`] adds
//! a row's replications up, window by window, on a tape, and groups the servers by the farm's
//! groups ([`Pooled`] the same in memory); [`SeriesCsv`] writes them in long format, one line per
//! `(policy, time, metric)`:
//!
//! - `requests`: measured requests dispatched in the window (over all replications; the windows
//!   add up to the run's measured requests times its replications);
//! - `share.GROUP`: the fraction of them sent to the group;
//! - `queue.GROUP`: the group's mean queue length per server, time-averaged over the window;
//! - `p50`, `p99`: sojourn quantiles of the requests that arrived in the window (upper edges of
//!   histogram buckets 2.3% wide: [`crate::engine::bucket`]), empty when none arrived (with the
//!   request lifecycle, of each attempt at its server);
//! - with the request lifecycle (SPEC §11) only, `success` and `goodput`: a measured request
//!   counts in the window where it ends (answered, or failed for good); `success` is the
//!   fraction of those that ended successfully (answered without error within the deadline),
//!   empty when none ended; `goodput` is the successful requests per unit time over the offered
//!   rate, both over the window: the successes that ended in it over the measured requests that
//!   arrived in it, empty when none arrived (the column's definition, over one window);
//! - with a health view (SPEC §12: `[health]` or `[client] breaker`) only, `healthy`: the
//!   fraction of hosts a client considers healthy (excludes for no reason: not ejected, not
//!   marked unhealthy by checks, its breaker not open), time-averaged over the window and
//!   averaged over the clients and replications. A panic does not change it: it changes the
//!   hosts a policy may pick, not those its client considers healthy. Where a replication ended
//!   inside the window, only the time it covered counts ([`crate::stats::Health`]).
//!
//! With traffic classes (SPEC §13) a `class` column follows `policy`: the lines above have
//! `class` `all`, and each class adds its own `requests` (its measured requests dispatched in the
//! window), `p50`, `p99` (of its requests that arrived in it) and, with the lifecycle, `success`
//! and `goodput` (among its requests); `share.*`, `queue.*` and `healthy` are on `all` only.
//! Without classes there is no `class` column and the lines are the ones written before classes.
//!
//! `time` is the start of the window.

use std::io::{self, Write};
use std::sync::Arc;

use crate::engine::{BUCKETS, Buckets, SpooledWindows, Window, Windows, bucket_quantile};
use crate::stats::tape::{Tape, TapeWriter};
use crate::stats::{
    ClassWindow, Health, Outcomes, RepStats, add_classes, add_health, add_outcomes,
};

/// The replications of one row, added up per window and group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pooled {
    /// The window width.
    pub width: f64,
    /// The groups' names, in farm order.
    pub groups: Vec<String>,
    /// Replications pooled.
    pub reps: u64,
    /// `picks[w][g]`: measured dispatches to group `g` in window `w`, over all replications.
    pub picks: Vec<Vec<u64>>,
    /// `queue[w][g]`: group `g`'s mean queue per server over window `w` (averaged over
    /// replications).
    pub queue: Vec<Vec<f64>>,
    /// `latency[w]`: sojourn bucket counts of window `w`'s arrivals, over all replications.
    pub latency: Vec<Buckets>,
    /// `outcomes[w]`: the request lifecycle's outcomes of window `w` over all replications
    /// (`None` without a lifecycle).
    pub outcomes: Vec<Option<Outcomes>>,
    /// `health[w]`: the clients' health view over window `w`, spans and areas summed over all
    /// replications (`None` without a health view).
    pub health: Vec<Option<Health>>,
    /// `classes[w]`: each traffic class's part of window `w` over all replications (empty
    /// without classes).
    pub classes: Vec<Vec<ClassWindow>>,
    /// Each server's group.
    pub(crate) group_of: Vec<usize>,
    /// Per group: `1 / (servers * width * reps)`, the scale of a queue integral.
    pub(crate) scale: Vec<f64>,
}

impl Pooled {
    /// Pools `reps`' windows; `groups` are the farm's groups (name, servers) in order.
    pub fn of(reps: &[RepStats], groups: &[(String, usize)]) -> Option<Pooled> {
        let all: Vec<&Windows> = reps.iter().filter_map(|r| r.windows.as_ref()).collect();
        let mut out = Pooled::new(groups, all.first()?.width, all.len() as u64);
        all.iter().for_each(|w| out.add(w));
        Some(out)
    }

    /// Nothing pooled yet, for `reps` replications (each of them must be [`Pooled::add`]ed: the
    /// queue lengths are averaged over them as they come) with windows `width` wide.
    pub fn new(groups: &[(String, usize)], width: f64, reps: u64) -> Pooled {
        Pooled {
            width,
            groups: groups.iter().map(|(n, _)| n.clone()).collect(),
            group_of: groups.iter().enumerate().flat_map(|(i, (_, c))| vec![i; *c]).collect(),
            scale: groups.iter().map(|(_, c)| 1.0 / (*c as f64 * width * reps as f64)).collect(),
            reps,
            ..Pooled::default()
        }
    }

    /// Adds one replication's windows (replications in replication order): dispatches and
    /// histograms are counts, added in any order; the queue integrals are added server by server,
    /// so that a group's queue is the same bits however the replications were run.
    pub fn add(&mut self, w: &Windows) {
        let (g, windows) = (self.groups.len(), w.picks.len());
        if self.picks.len() < windows {
            self.picks.resize(windows, vec![0; g]);
            self.queue.resize(windows, vec![0.0; g]);
            self.latency.resize(windows, Buckets::default());
            self.outcomes.resize(windows, None);
            self.health.resize(windows, None);
            self.classes.resize(windows, Vec::new());
        }
        let (group_of, scale) = (&self.group_of, &self.scale);
        for (k, picks) in w.picks.iter().enumerate() {
            for (sum, &p) in self.picks[k].iter_mut().zip(picks) {
                *sum += p;
            }
            for (s, &q) in w.queue[k].iter().enumerate() {
                self.queue[k][group_of[s]] += q * scale[group_of[s]];
            }
            self.latency[k].add(&w.latency[k]);
            add_outcomes(&mut self.outcomes[k], w.outcomes.get(k).copied());
            add_health(&mut self.health[k], w.health.get(k).copied());
            if let Some(c) = w.classes.get(k) {
                add_classes(&mut self.classes[k], c);
            }
        }
    }

    /// Measured requests dispatched in window `w`.
    pub fn requests(&self, w: usize) -> u64 {
        self.picks[w].iter().sum()
    }

    /// Group `g`'s share of window `w`'s dispatches (`NaN` if none).
    pub fn share(&self, w: usize, g: usize) -> f64 {
        self.picks[w][g] as f64 / self.requests(w) as f64
    }

    /// Group `g`'s share of the dispatches over windows `from..to`.
    pub fn share_over(&self, from: usize, to: usize, g: usize) -> f64 {
        let to = to.min(self.picks.len());
        let (mut mine, mut all) = (0, 0);
        for w in from..to {
            mine += self.picks[w][g];
            all += self.requests(w);
        }
        mine as f64 / all as f64
    }

    /// The `q`-quantile of the sojourns of requests arriving in windows `from..to`.
    pub fn quantile_over(&self, from: usize, to: usize, q: f64) -> f64 {
        let mut counts = vec![0u64; BUCKETS];
        for h in &self.latency[from.min(self.latency.len())..to.min(self.latency.len())] {
            h.add_to(&mut counts);
        }
        bucket_quantile(&counts, q)
    }

    /// The window holding time `t`.
    pub fn window_of(&self, t: f64) -> usize {
        (t / self.width) as usize
    }
}

/// A row's replications pooled window by window on a tape, one replication at a time in
/// replication order, each merged with what the replications before it pooled into a new tape:
/// [`Pooled::add`]'s sums, term by term, without holding the windows.
#[derive(Debug, Clone)]
pub struct PooledTape {
    /// What the windows are pooled by (its per-window lists empty).
    pub head: Pooled,
    /// Windows pooled.
    pub count: usize,
    /// The pooled windows (`None` before the first replication), or the first error.
    tape: Result<Option<Tape>, Arc<io::Error>>,
}

impl PooledTape {
    /// Nothing pooled yet, as [`Pooled::new`].
    pub fn new(groups: &[(String, usize)], width: f64, reps: u64) -> PooledTape {
        PooledTape { head: Pooled::new(groups, width, reps), count: 0, tape: Ok(None) }
    }

    /// Adds one replication's windows, held in memory (read from a record).
    pub fn add_windows(&mut self, w: &Windows) {
        let count = w.picks.len();
        self.add((0..count).map(|k| Ok(w.window(k))), count);
    }

    /// Adds one replication's windows from its tape.
    pub fn add_spooled(&mut self, w: &SpooledWindows) {
        match w.windows() {
            Ok(windows) => self.add(windows, w.count),
            Err(e) => self.tape = Err(Arc::new(e)),
        }
    }

    /// Adds the `count` windows of the next replication.
    fn add(&mut self, windows: impl Iterator<Item = io::Result<Window>>, count: usize) {
        if self.tape.is_err() {
            return;
        }
        match self.merge(windows, count) {
            Ok(tape) => {
                self.tape = Ok(Some(tape));
                self.count = self.count.max(count);
            }
            Err(e) => self.tape = Err(Arc::new(e)),
        }
    }

    /// A new tape: each window pooled so far (none beyond them) plus the replication's.
    fn merge(
        &self,
        mut windows: impl Iterator<Item = io::Result<Window>>,
        count: usize,
    ) -> io::Result<Tape> {
        let g = self.head.groups.len();
        let mut old = match &self.tape {
            Ok(tape) => tape.as_ref().map(Tape::reader),
            Err(e) => return Err(io::Error::new(e.kind(), e.to_string())),
        };
        let mut out = TapeWriter::new()?;
        for k in 0..self.count.max(count) {
            let mut sum = match &mut old {
                Some(r) if k < self.count => Window::read(r, g, g)?,
                _ => Window::zero(g, g),
            };
            if k < count {
                let w = windows.next().unwrap_or_else(|| Err(short()))?;
                self.pool(&mut sum, &w);
            }
            sum.write(&mut out)?;
        }
        out.finish()
    }

    /// Adds a replication's window to the pooled one, as [`Pooled::add`] does.
    fn pool(&self, sum: &mut Window, w: &Window) {
        let (group_of, scale) = (&self.head.group_of, &self.head.scale);
        for (sum, &p) in sum.picks.iter_mut().zip(&w.picks) {
            *sum += p;
        }
        for (s, &q) in w.queue.iter().enumerate() {
            sum.queue[group_of[s]] += q * scale[group_of[s]];
        }
        sum.latency.add(&w.latency);
        add_outcomes(&mut sum.outcomes, w.outcomes);
        add_health(&mut sum.health, w.health);
        add_classes(&mut sum.classes, &w.classes);
    }

    /// The pooled windows, in order.
    pub fn windows(&self) -> io::Result<impl Iterator<Item = io::Result<Window>>> {
        let g = self.head.groups.len();
        let mut r = match &self.tape {
            Ok(tape) => tape.as_ref().map(Tape::reader),
            Err(e) => return Err(io::Error::new(e.kind(), e.to_string())),
        };
        Ok((0..self.count).map(move |_| match &mut r {
            Some(r) => Window::read(r, g, g),
            None => Err(short()),
        }))
    }

    /// The pooled windows in memory.
    pub fn load(&self) -> io::Result<Pooled> {
        let mut p = self.head.clone();
        for w in self.windows()? {
            let w = w?;
            p.picks.push(w.picks);
            p.queue.push(w.queue);
            p.latency.push(w.latency);
            p.outcomes.push(w.outcomes);
            p.health.push(w.health);
            p.classes.push(w.classes);
        }
        Ok(p)
    }
}

impl PooledTape {
    /// The `q`-quantile of the sojourns of each window's arrivals against the window's start
    /// (the `p50`/`p99` lines of the CSV, as numbers), leaving out the windows where nothing
    /// arrived; read window by window from the tape.
    pub fn quantile_line(&self, q: f64) -> io::Result<Vec<(f64, f64)>> {
        let mut line = Vec::new();
        let mut counts = vec![0u64; BUCKETS];
        for (k, window) in self.windows()?.enumerate() {
            counts.iter_mut().for_each(|c| *c = 0);
            window?.latency.add_to(&mut counts);
            let v = bucket_quantile(&counts, q);
            if v.is_finite() {
                line.push((k as f64 * self.head.width, v));
            }
        }
        Ok(line)
    }
}

fn short() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "a series tape with fewer windows than written")
}

/// `run --series`'s CSV: the column names and, per row, its leading cells and its pooled
/// windows, written line by line once its destination is ready ([`SeriesCsv::write`]).
#[derive(Debug, Clone, Default)]
pub struct SeriesCsv {
    /// The leading columns' names (the swept keys, then `policy`; with classes, then `class`).
    pub head: Vec<String>,
    /// Per row: its leading cells (without the `class` cell) and its windows.
    pub rows: Vec<(Vec<String>, PooledTape)>,
    /// The traffic classes' names (SPEC §13), in class order; empty without classes (and then
    /// there is no `class` column).
    pub classes: Vec<String>,
}

impl SeriesCsv {
    /// Writes the CSV [`csv`] makes of the same windows, a window at a time.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut w = ::csv::Writer::from_writer(out);
        header(&mut w, &self.head)?;
        for (lead, p) in &self.rows {
            for (k, window) in p.windows()?.enumerate() {
                let at = (k as f64 * p.head.width, p.head.groups.as_slice());
                lines(&mut w, lead, &self.classes, at, &window?)?;
            }
        }
        w.flush()
    }
}

/// The long-format CSV of the rows `(lead, series)`: `lead` is the row's leading cells (the
/// swept values and the policy), `head` the column names (with classes, ending in `class`),
/// `classes` the classes' names (empty without classes).
pub fn csv(head: &[String], classes: &[String], rows: &[(Vec<String>, &Pooled)]) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    header(&mut w, head).expect("writing to memory");
    for (lead, p) in rows {
        for k in 0..p.picks.len() {
            let window = Window {
                picks: p.picks[k].clone(),
                queue: p.queue[k].clone(),
                latency: p.latency[k].clone(),
                outcomes: p.outcomes[k],
                health: p.health[k],
                classes: p.classes.get(k).cloned().unwrap_or_default(),
            };
            let at = (k as f64 * p.width, p.groups.as_slice());
            lines(&mut w, lead, classes, at, &window).expect("writing to memory");
        }
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("UTF-8")
}

/// The header line: `head`, then `time,metric,value`.
fn header<W: Write>(w: &mut ::csv::Writer<W>, head: &[String]) -> io::Result<()> {
    let mut columns = head.to_vec();
    columns.extend(["time", "metric", "value"].map(String::from));
    Ok(w.write_record(&columns)?)
}

/// A CSV cell of a number: empty when it is not finite.
fn num(x: f64) -> String {
    if x.is_finite() { format!("{x}") } else { String::new() }
}

/// The lines of one pooled window starting at `time`, of the farm's `groups`: the pooled ones
/// (with `classes`, their `class` cell `all`), then each class's `requests`, `p50`, `p99` and,
/// with the lifecycle, `success` and `goodput`.
fn lines<W: Write>(
    w: &mut ::csv::Writer<W>,
    lead: &[String],
    classes: &[String],
    (time, groups): (f64, &[String]),
    window: &Window,
) -> io::Result<()> {
    let t = num(time);
    let split = !classes.is_empty();
    let mut line = |class: Option<&str>, metric: &str, value: String| {
        let mut record = lead.to_vec();
        record.extend(class.map(String::from));
        record.extend([t.clone(), metric.to_string(), value]);
        w.write_record(&record)
    };
    let all = split.then_some("all");
    let requests: u64 = window.picks.iter().sum();
    line(all, "requests", requests.to_string())?;
    for (g, name) in groups.iter().enumerate() {
        line(all, &format!("share.{name}"), num(window.picks[g] as f64 / requests as f64))?;
    }
    for (g, name) in groups.iter().enumerate() {
        line(all, &format!("queue.{name}"), num(window.queue[g]))?;
    }
    let mut counts = vec![0u64; BUCKETS];
    let mut quantiles = |latency: &Buckets| {
        counts.iter_mut().for_each(|c| *c = 0);
        latency.add_to(&mut counts);
        [0.5, 0.99].map(|q| num(bucket_quantile(&counts, q)))
    };
    // p50 and p99, then with the lifecycle success and goodput: of all requests or of a class.
    let mut tail = |latency: &Buckets, outcomes: Option<Outcomes>| {
        let [p50, p99] = quantiles(latency);
        let mut values = vec![("p50", p50), ("p99", p99)];
        if let Some([arrived, ended, succeeded]) = outcomes {
            let success = num(succeeded as f64 / ended as f64);
            let goodput = num(succeeded as f64 / arrived as f64);
            values.extend([("success", success), ("goodput", goodput)]);
        }
        values
    };
    for (metric, value) in tail(&window.latency, window.outcomes) {
        line(all, metric, value)?;
    }
    if let Some([span, area]) = window.health {
        line(all, "healthy", num(area / span))?;
    }
    for (k, name) in classes.iter().enumerate() {
        let none = ClassWindow { outcomes: window.outcomes.map(|_| [0; 3]), ..Default::default() };
        let c = window.classes.get(k).unwrap_or(&none);
        let class = Some(name.as_str());
        line(class, "requests", c.picks.to_string())?;
        for (metric, value) in tail(&c.latency, c.outcomes) {
            line(class, metric, value)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replication `r`'s windows on 3 servers in groups of 1 and 2: `count` of them, with areas
    /// whose sums depend on the order they are added in.
    fn rep(r: u64, count: usize) -> Windows {
        let mut w = Windows { width: 2.5, ..Windows::default() };
        for k in 0..count {
            let x = (r * 31 + k as u64) as f64;
            w.push(Window {
                picks: vec![r + k as u64, 2 * r],
                queue: vec![0.1 * x, 1e16 + x / 3.0, 0.7 / (x + 1.0)],
                latency: Buckets::from_pairs([(k % 5, r + 1), (300 + r as usize, 2)]),
                outcomes: Some([r + k as u64, r + 1, r]),
                health: Some([2.5, 2.5 / (x + 1.0)]),
                classes: Vec::new(),
            });
        }
        w
    }

    #[test]
    fn pooling_on_a_tape_gives_the_bits_and_lines_of_pooling_in_memory() {
        let groups = [("a".to_string(), 1), ("b".to_string(), 2)];
        // Replications of different lengths (one stopped early), pooled in replication order.
        let reps: Vec<Windows> = [(0, 40), (1, 25), (2, 60), (3, 0)].map(|(r, c)| rep(r, c)).into();
        let mut memory = Pooled::new(&groups, 2.5, 4);
        let mut tape = PooledTape::new(&groups, 2.5, 4);
        for r in &reps {
            memory.add(r);
            tape.add_windows(r);
        }
        let loaded = tape.load().unwrap();
        assert_eq!(loaded.picks.len(), 60);
        assert_eq!(loaded, memory);
        let bits =
            |p: &Pooled| -> Vec<u64> { p.queue.iter().flatten().map(|q| q.to_bits()).collect() };
        assert_eq!(bits(&loaded), bits(&memory));
        // From a replication's own tape too.
        let mut spooled = tape.clone();
        let mut w = TapeWriter::new().unwrap();
        let last = rep(4, 70);
        for k in 0..70 {
            last.window(k).write(&mut w).unwrap();
        }
        let last_spooled = SpooledWindows {
            width: 2.5,
            groups: 2,
            servers: 3,
            count: 70,
            tape: Ok(w.finish().unwrap()),
            late: Default::default(),
            late_classes: Default::default(),
        };
        spooled.add_spooled(&last_spooled);
        memory.add(&last);
        assert_eq!(spooled.load().unwrap(), memory);
        // The CSV written from the tape is the one made in memory.
        let head = vec!["policy".to_string()];
        let mut written = Vec::new();
        let rows = vec![(vec!["p2c".to_string()], spooled)];
        SeriesCsv { head: head.clone(), rows, classes: Vec::new() }.write(&mut written).unwrap();
        let made = csv(&head, &[], &[(vec!["p2c".to_string()], &memory)]);
        assert!(made.lines().count() > 70 * 7);
        assert_eq!(String::from_utf8(written).unwrap(), made);
    }

    #[test]
    fn success_and_goodput_lines_come_with_the_lifecycle_and_are_empty_when_undefined() {
        let groups = [("a".to_string(), 1)];
        let mut w = Windows { width: 10.0, ..Windows::default() };
        // Window 0: 4 arrived, 2 ended, 1 of them answered; window 1: nothing arrived and
        // nothing ended; window 2: nothing arrived, 3 ended, all answered.
        for outcomes in [[4, 2, 1], [0, 0, 0], [0, 3, 3]] {
            w.push(Window { outcomes: Some(outcomes), ..Window::zero(1, 1) });
        }
        let mut p = Pooled::new(&groups, 10.0, 1);
        p.add(&w);
        let head = vec!["policy".to_string()];
        let text = csv(&head, &[], &[(vec!["rr".to_string()], &p)]);
        let metric = |m: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.split(',').nth(2) == Some(m))
                .map(|l| l.split(',').nth(3).unwrap().to_string())
                .collect()
        };
        assert_eq!(metric("success"), ["0.5", "", "1"]);
        assert_eq!(metric("goodput"), ["0.25", "", ""]);
        // Without the lifecycle, the lines are the ones written before it existed.
        let plain = Windows { width: 10.0, ..rep(1, 3) };
        let plain = Windows { outcomes: Vec::new(), health: Vec::new(), ..plain };
        let mut p = Pooled::new(&[("a".to_string(), 1), ("b".to_string(), 2)], 10.0, 1);
        p.add(&plain);
        let text = csv(&head, &[], &[(vec!["rr".to_string()], &p)]);
        assert_eq!(text.lines().count(), 1 + 3 * 7);
        assert!(!text.contains("success") && !text.contains("goodput"));
        assert!(!text.contains("healthy"));
    }

    /// `healthy` is the pooled area over the pooled span: a replication that ended early in a
    /// window weighs by the time it covered, and one without the window does not count.
    #[test]
    fn healthy_is_the_time_average_over_the_spans_the_replications_covered() {
        let groups = [("a".to_string(), 1)];
        let one = |health: &[[f64; 2]]| {
            let mut w = Windows { width: 10.0, ..Windows::default() };
            for &h in health {
                w.push(Window { health: Some(h), ..Window::zero(1, 1) });
            }
            w
        };
        let mut p = Pooled::new(&groups, 10.0, 2);
        // Replication 0: healthy 1 over window 0, 0.5 over window 1, 0.7 over the 4 units it
        // covered of window 2. Replication 1: 0.8, 0.6, and it ended before window 2.
        p.add(&one(&[[10.0, 10.0], [10.0, 5.0], [4.0, 2.8]]));
        p.add(&one(&[[10.0, 8.0], [10.0, 6.0]]));
        let head = vec!["policy".to_string()];
        let text = csv(&head, &[], &[(vec!["rr".to_string()], &p)]);
        let healthy: Vec<&str> = text
            .lines()
            .filter(|l| l.split(',').nth(2) == Some("healthy"))
            .map(|l| l.split(',').nth(3).unwrap())
            .collect();
        assert_eq!(healthy, ["0.9", "0.55", "0.7"]);
    }
}
