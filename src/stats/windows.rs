//! The time series of `lbsim run --series`, as a replication's result holds it.
//!
//! The engine records it (its window recorder fills one per replication); it lives here, beside
//! the rest of a replication's result, so that statistics do not depend on the engine.
//!
//! A replication keeps, per window, its groups' dispatches (integers, which add up the same in
//! any order), its servers' queue integrals (floats: the pooled queue of a group adds them up
//! replication by replication and server by server, and only these terms give its bits), and the
//! buckets of its latency histogram that hold a sojourn ([`Buckets`]), not all of them.
//!
//! A shard holds them all ([`Windows`]): its records carry them. An unsharded run writes each
//! [`Window`] to a tape as it closes ([`SpooledWindows`]), so that its memory does not grow with
//! the run's length.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::sync::Arc;

use super::tape::{Tape, get_varint, put_varint};
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

/// One replication's series: per window of `width` time units from time 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Windows {
    /// The window width.
    pub width: f64,
    /// `picks[w][g]`: measured requests dispatched to group `g` during window `w`.
    pub picks: Vec<Vec<u64>>,
    /// `queue[w][s]`: the integral over window `w` of server `s`'s queue length.
    pub queue: Vec<Vec<f64>>,
    /// `latency[w]`: sojourn bucket counts (the engine's `bucket`) of the measured requests that
    /// arrived in window `w`.
    pub latency: Vec<Buckets>,
    /// `outcomes[w]`: with the request lifecycle (SPEC §11) only, window `w`'s [`Outcomes`];
    /// empty without one (and then absent from a record).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcomes: Vec<Outcomes>,
    /// `health[w]`: with a health view (SPEC §12: `[health]` or `[client] breaker`) only,
    /// window `w`'s [`Health`]; empty without one (and then absent from a record).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health: Vec<Health>,
    /// `classes[w][k]`: with traffic classes (SPEC §13) only, class `k`'s part of window `w`;
    /// empty without classes (and then absent from a record).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<Vec<ClassWindow>>,
}

/// One traffic class's part of a window (SPEC §13): what the window's pooled counts hold of
/// that class's requests, so that the classes' counts add up to the pooled ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassWindow {
    /// Measured requests of the class dispatched during the window.
    pub picks: u64,
    /// Sojourn bucket counts of the class's measured requests that arrived in the window.
    pub latency: Buckets,
    /// With the request lifecycle only, the class's [`Outcomes`] in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcomes: Option<Outcomes>,
}

impl ClassWindow {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &ClassWindow) {
        self.picks += other.picks;
        self.latency.add(&other.latency);
        add_outcomes(&mut self.outcomes, other.outcomes);
    }
}

/// Adds the classes of a window to `sum`'s, class by class (`sum` grows to as many classes).
pub fn add_classes(sum: &mut Vec<ClassWindow>, other: &[ClassWindow]) {
    if sum.len() < other.len() {
        sum.resize(other.len(), ClassWindow::default());
    }
    for (s, o) in sum.iter_mut().zip(other) {
        s.add(o);
    }
}

/// What became of a window's measured requests under the request lifecycle (SPEC §11):
/// `[arrived, ended, succeeded]`, the requests that arrived in the window, those that ended in
/// it (answered, or failed for good), and of the latter those answered without error within
/// their deadline. A request is counted where it ends, whenever it arrived.
pub type Outcomes = [u64; 3];

/// Adds `other` to `sum` (`None`, no lifecycle, takes them as they are).
pub fn add_outcomes(sum: &mut Option<Outcomes>, other: Option<Outcomes>) {
    if let Some(o) = other {
        let sum = sum.get_or_insert([0; 3]);
        for (s, x) in sum.iter_mut().zip(o) {
            *s += x;
        }
    }
}

/// How healthy the hosts looked to the clients over a window (SPEC §12): `[span, area]`, the
/// time the replication covered of the window (its width, less where the run ended inside it)
/// and the integral over that time of the fraction of hosts a client considers healthy,
/// averaged over the clients. `area / span` is the window's `healthy`; spans and areas of
/// replications add up.
pub type Health = [f64; 2];

/// Adds `other` to `sum` (`None`, no health view, takes them as they are).
pub fn add_health(sum: &mut Option<Health>, other: Option<Health>) {
    if let Some([span, area]) = other {
        let sum = sum.get_or_insert([0.0; 2]);
        sum[0] += span;
        sum[1] += area;
    }
}

impl Windows {
    /// What is inconsistent in these windows (as read from a record), if anything: the per-window
    /// lists of unequal lengths, a window of another number of groups or servers than the first,
    /// or histogram buckets not in increasing order below `buckets`, or empty.
    pub fn damage(&self, buckets: usize) -> Option<String> {
        let n = self.picks.len();
        if self.queue.len() != n || self.latency.len() != n {
            return Some(format!(
                "its windows hold {n} dispatch counts, {} queue integrals and {} histograms",
                self.queue.len(),
                self.latency.len()
            ));
        }
        if !self.outcomes.is_empty() && self.outcomes.len() != n {
            return Some(format!(
                "its windows hold {n} dispatch counts and {} request outcomes",
                self.outcomes.len()
            ));
        }
        if !self.health.is_empty() && self.health.len() != n {
            return Some(format!(
                "its windows hold {n} dispatch counts and {} health integrals",
                self.health.len()
            ));
        }
        if let Some(why) = self.class_damage(n) {
            return Some(why);
        }
        let fine = |[span, area]: Health| span.is_finite() && span >= 0.0 && area >= 0.0;
        if let Some(h) = self.health.iter().find(|&&h| !(fine(h) && h[1] <= h[0] * (1.0 + 1e-9))) {
            return Some(format!("a window's health integral {h:?} is not a fraction of its span"));
        }
        if let Some(o) = self.outcomes.iter().find(|o| o[2] > o[1]) {
            return Some(format!("a window's outcomes {o:?} have more successes than ends"));
        }
        if !(self.width.is_finite() && self.width > 0.0) {
            return Some(format!("its window width is {:e}, not a width", self.width));
        }
        let uneven = |lens: &[usize]| lens.windows(2).any(|p| p[0] != p[1]);
        let picks: Vec<usize> = self.picks.iter().map(Vec::len).collect();
        let queue: Vec<usize> = self.queue.iter().map(Vec::len).collect();
        if uneven(&picks) || uneven(&queue) {
            return Some("its windows are not all of one farm's groups and servers".into());
        }
        let bad_queue = self.queue.iter().flatten().find(|q| !(q.is_finite() && **q >= 0.0));
        if let Some(q) = bad_queue {
            return Some(format!("a window's queue integral is {q:e}, not a finite area"));
        }
        for (w, h) in self.latency.iter().enumerate() {
            let mut last: Option<usize> = None;
            for (b, c) in h.iter() {
                if b >= buckets || last.is_some_and(|l| l >= b) || c == 0 {
                    return Some(format!(
                        "window {w}'s histogram has bucket {b} (count {c}) out of order, out of \
                         range or empty"
                    ));
                }
                last = Some(b);
            }
        }
        None
    }

    /// What is inconsistent in the classes' parts of `n` windows: a count of windows other than
    /// `n`, a window of another number of classes than the first, a class with more requests
    /// dispatched in a window than the window, or outcomes where the window has none.
    fn class_damage(&self, n: usize) -> Option<String> {
        if self.classes.is_empty() {
            return None;
        }
        if self.classes.len() != n {
            let k = self.classes.len();
            return Some(format!("its windows hold {n} dispatch counts and {k} class splits"));
        }
        if self.classes.windows(2).any(|p| p[0].len() != p[1].len()) {
            return Some("its windows are not all of one set of classes".into());
        }
        for (w, classes) in self.classes.iter().enumerate() {
            let picks: u64 = classes.iter().map(|c| c.picks).sum();
            if picks > self.picks[w].iter().sum() {
                return Some(format!("window {w}'s classes hold more dispatches than the window"));
            }
            if classes.iter().any(|c| c.outcomes.is_some() != self.outcomes.get(w).is_some()) {
                return Some(format!("window {w}'s classes and the window disagree on outcomes"));
            }
        }
        None
    }

    /// Sojourns in the histograms of all windows.
    pub fn sojourns(&self) -> u64 {
        self.latency.iter().map(Buckets::total).sum()
    }

    /// Window `w`.
    pub fn window(&self, w: usize) -> Window {
        Window {
            picks: self.picks[w].clone(),
            queue: self.queue[w].clone(),
            latency: self.latency[w].clone(),
            outcomes: self.outcomes.get(w).copied(),
            health: self.health.get(w).copied(),
            classes: self.classes.get(w).cloned().unwrap_or_default(),
        }
    }

    /// Adds `w` as the next window.
    pub fn push(&mut self, w: Window) {
        self.picks.push(w.picks);
        self.queue.push(w.queue);
        self.latency.push(w.latency);
        if let Some(o) = w.outcomes {
            self.outcomes.push(o);
        }
        if let Some(h) = w.health {
            self.health.push(h);
        }
        if !w.classes.is_empty() {
            self.classes.push(w.classes);
        }
    }
}

/// One window of a series: counts per group, areas (per server for a replication, per group once
/// pooled) and the histogram's used buckets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    /// Measured requests dispatched to each group.
    pub picks: Vec<u64>,
    /// Queue integrals (a replication's, per server) or mean queues (pooled, per group).
    pub queue: Vec<f64>,
    /// Sojourn bucket counts of the measured requests that arrived in the window.
    pub latency: Buckets,
    /// What became of its requests, with the request lifecycle only.
    pub outcomes: Option<Outcomes>,
    /// How healthy the hosts looked to the clients, with a health view only.
    pub health: Option<Health>,
    /// Each traffic class's part of the window, with classes only (empty without).
    pub classes: Vec<ClassWindow>,
}

impl Window {
    /// No dispatch, no area, no sojourn, for `picks` groups and `queue` areas.
    pub fn zero(picks: usize, queue: usize) -> Window {
        Window {
            picks: vec![0; picks],
            queue: vec![0.0; queue],
            latency: Buckets::default(),
            outcomes: None,
            health: None,
            classes: Vec::new(),
        }
    }

    /// Writes the window: the counts as LEB128 varints, the areas as their eight bytes (read back
    /// to the bit), then the histogram's bytes after their length, then a varint of flags (1:
    /// outcomes follow, 2: health follows; 0 without either), the three outcomes and the health's
    /// two floats.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        for &p in &self.picks {
            put_varint(out, p)?;
        }
        for q in &self.queue {
            out.write_all(&q.to_le_bytes())?;
        }
        put_varint(out, self.latency.0.len() as u64)?;
        out.write_all(&self.latency.0)?;
        let flags = u64::from(self.outcomes.is_some())
            + 2 * u64::from(self.health.is_some())
            + 4 * u64::from(!self.classes.is_empty());
        put_varint(out, flags)?;
        if let Some(o) = self.outcomes {
            o.iter().try_for_each(|&x| put_varint(out, x))?;
        }
        if let Some(h) = self.health {
            h.iter().try_for_each(|x| out.write_all(&x.to_le_bytes()))?;
        }
        if !self.classes.is_empty() {
            put_varint(out, self.classes.len() as u64)?;
            for c in &self.classes {
                put_varint(out, c.picks)?;
                put_varint(out, c.latency.0.len() as u64)?;
                out.write_all(&c.latency.0)?;
                if let Some(o) = c.outcomes {
                    o.iter().try_for_each(|&x| put_varint(out, x))?;
                }
            }
        }
        Ok(())
    }

    /// Reads a window [`Window::write`] wrote, of `picks` groups and `queue` areas.
    pub fn read(r: &mut impl Read, picks: usize, queue: usize) -> io::Result<Window> {
        let picks = (0..picks).map(|_| get_varint(r)).collect::<io::Result<Vec<u64>>>()?;
        let mut bytes = [0u8; 8];
        let mut areas = Vec::with_capacity(queue);
        for _ in 0..queue {
            r.read_exact(&mut bytes)?;
            areas.push(f64::from_le_bytes(bytes));
        }
        let latency = read_buckets(r)?;
        let flags = get_varint(r)?;
        let outcomes = match flags & 1 {
            0 => None,
            _ => Some([get_varint(r)?, get_varint(r)?, get_varint(r)?]),
        };
        let mut float = || r.read_exact(&mut bytes).map(|()| f64::from_le_bytes(bytes));
        let health = match flags & 2 {
            0 => None,
            _ => Some([float()?, float()?]),
        };
        let mut classes = Vec::new();
        if flags & 4 != 0 {
            let k = get_varint(r)?;
            for _ in 0..k {
                let picks = get_varint(r)?;
                let latency = read_buckets(r)?;
                let outcomes = match outcomes {
                    None => None,
                    Some(_) => Some([get_varint(r)?, get_varint(r)?, get_varint(r)?]),
                };
                classes.push(ClassWindow { picks, latency, outcomes });
            }
        }
        Ok(Window { picks, queue: areas, latency, outcomes, health, classes })
    }
}

/// Reads a histogram [`Window::write`] wrote: its length, then its bytes.
fn read_buckets(r: &mut impl Read) -> io::Result<Buckets> {
    let len = usize::try_from(get_varint(r)?).map_err(io::Error::other)?;
    let mut bytes = vec![0u8; len];
    r.read_exact(&mut bytes)?;
    Ok(Buckets(bytes))
}

/// One replication's series as an unsharded run keeps it: its windows written to a tape in
/// order as they closed, and the sojourns of requests that left after their window was written
/// (a request is counted in the window it arrived in), kept aside per window.
#[derive(Debug, Clone)]
pub struct SpooledWindows {
    /// The window width.
    pub width: f64,
    /// Groups per window.
    pub groups: usize,
    /// Servers per window.
    pub servers: usize,
    /// Windows written.
    pub count: usize,
    /// The tape, or why it could not be written.
    pub tape: Result<Tape, Arc<io::Error>>,
    /// Sojourns counted after their window was written.
    pub late: BTreeMap<usize, Buckets>,
    /// With traffic classes, the same per window and class.
    pub late_classes: BTreeMap<(usize, usize), Buckets>,
}

impl SpooledWindows {
    /// The windows in order, each with its late sojourns added.
    pub fn windows(&self) -> io::Result<impl Iterator<Item = io::Result<Window>> + '_> {
        let tape = self.tape.as_ref().map_err(|e| io::Error::new(e.kind(), e.to_string()))?;
        let mut r = tape.reader();
        Ok((0..self.count).map(move |w| {
            let mut window = Window::read(&mut r, self.groups, self.servers)?;
            if let Some(late) = self.late.get(&w) {
                window.latency.add(late);
            }
            for (&(_, k), late) in self.late_classes.range((w, 0)..(w + 1, 0)) {
                if let Some(c) = window.classes.get_mut(k) {
                    c.latency.add(late);
                }
            }
            Ok(window)
        }))
    }

    /// All the windows, in memory.
    pub fn load(&self) -> io::Result<Windows> {
        let mut out = Windows { width: self.width, ..Windows::default() };
        for w in self.windows()? {
            out.push(w?);
        }
        Ok(out)
    }
}

/// The bucket counts of one window's histogram, keeping only the buckets that hold a sojourn:
/// `(bucket, count)` pairs in bucket order, each number as an LEB128 varint (a bucket below 16,384
/// and a count below 128 take 3 bytes where a dense histogram takes 8 per bucket). Written to
/// records as `[[bucket, count], ...]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Buckets(Vec<u8>);

impl Buckets {
    /// The non-zero counts of a dense histogram.
    pub fn from_counts(counts: &[u64]) -> Buckets {
        Buckets::from_pairs(
            counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(b, c)| (b, *c)),
        )
    }

    /// These pairs, as given.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (usize, u64)>) -> Buckets {
        let mut bytes = Vec::new();
        for (b, c) in pairs {
            put(&mut bytes, b as u64);
            put(&mut bytes, c);
        }
        bytes.shrink_to_fit();
        Buckets(bytes)
    }

    /// The `(bucket, count)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= self.0.len() {
                return None;
            }
            let b = get(&self.0, &mut at);
            let c = get(&self.0, &mut at);
            Some((b as usize, c))
        })
    }

    /// Whether no bucket holds a sojourn.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sojourns counted.
    pub fn total(&self) -> u64 {
        self.iter().map(|(_, c)| c).sum()
    }

    /// Adds these counts to the dense histogram `counts` (buckets beyond it are left out).
    pub fn add_to(&self, counts: &mut [u64]) {
        for (b, c) in self.iter() {
            if let Some(x) = counts.get_mut(b) {
                *x += c;
            }
        }
    }

    /// These counts plus `other`'s, bucket by bucket (both in bucket order).
    pub fn add(&mut self, other: &Buckets) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            self.clone_from(other);
            return;
        }
        let mut sum = Vec::new();
        let (mut a, mut b) = (self.iter().peekable(), other.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&(i, x)), Some(&(j, y))) if i == j => {
                    a.next();
                    b.next();
                    (i, x + y)
                }
                (Some(&(i, _)), Some(&(j, _))) if j < i => b.next().expect("peeked"),
                (Some(_), _) => a.next().expect("peeked"),
                (None, Some(_)) => b.next().expect("peeked"),
                (None, None) => break,
            };
            sum.push(next);
        }
        drop((a, b));
        *self = Buckets::from_pairs(sum);
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.0.capacity()
    }
}

fn put(bytes: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        bytes.push((x as u8) | 0x80);
        x >>= 7;
    }
    bytes.push(x as u8);
}

fn get(bytes: &[u8], at: &mut usize) -> u64 {
    let (mut x, mut shift) = (0u64, 0);
    loop {
        let byte = bytes[*at];
        *at += 1;
        x |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return x;
        }
        shift += 7;
    }
}

impl Serialize for Buckets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for (b, c) in self.iter() {
            seq.serialize_element(&[b as u64, c])?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Buckets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Buckets, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Buckets;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of [bucket, count] pairs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Buckets, A::Error> {
                let mut bytes = Vec::new();
                while let Some([b, c]) = seq.next_element::<[u64; 2]>()? {
                    put(&mut bytes, b);
                    put(&mut bytes, c);
                }
                bytes.shrink_to_fit();
                Ok(Buckets(bytes))
            }
        }
        d.deserialize_seq(Pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_only_the_counts_used_and_add_up_exactly() {
        let mut dense = vec![0u64; 802];
        dense[3] = 1;
        dense[300] = 200;
        dense[801] = u64::MAX / 4;
        let a = Buckets::from_counts(&dense);
        assert_eq!(a.iter().collect::<Vec<_>>(), [(3, 1), (300, 200), (801, u64::MAX / 4)]);
        // Three buckets in 2 + 4 + 11 bytes, where the dense histogram takes 6416.
        assert_eq!(a.bytes(), 17);
        let mut sum = Buckets::from_pairs([(0, 5), (300, 1)]);
        sum.add(&a);
        assert_eq!(
            sum.iter().collect::<Vec<_>>(),
            [(0, 5), (3, 1), (300, 201), (801, u64::MAX / 4)]
        );
        let mut back = vec![0u64; 802];
        sum.add_to(&mut back);
        assert_eq!(back.iter().sum::<u64>(), sum.total());
        let json = serde_json::to_string(&sum).unwrap();
        assert_eq!(json, format!("[[0,5],[3,1],[300,201],[801,{}]]", u64::MAX / 4));
        assert_eq!(serde_json::from_str::<Buckets>(&json).unwrap(), sum);
    }

    #[test]
    fn damaged_windows_are_named() {
        let ok = Windows {
            width: 10.0,
            picks: vec![vec![1, 2]; 2],
            queue: vec![vec![0.5; 3]; 2],
            latency: vec![Buckets::from_pairs([(1, 3)]); 2],
            outcomes: Vec::new(),
            health: Vec::new(),
            classes: Vec::new(),
        };
        assert_eq!(ok.damage(802), None);
        let mut health = ok.clone();
        health.health = vec![[10.0, 7.5]];
        assert!(health.damage(802).unwrap().contains("2 dispatch counts and 1 health integrals"));
        health.health.push([4.0, 4.5]);
        assert!(health.damage(802).unwrap().contains("not a fraction of its span"));
        health.health[1] = [4.0, 4.0];
        assert_eq!(health.damage(802), None);
        let mut lifecycle = ok.clone();
        lifecycle.outcomes = vec![[3, 2, 1]];
        assert!(
            lifecycle.damage(802).unwrap().contains("2 dispatch counts and 1 request outcomes")
        );
        lifecycle.outcomes.push([0, 1, 1]);
        assert_eq!(lifecycle.damage(802), None);
        assert_eq!(ok.sojourns(), 6);
        let mut short = ok.clone();
        short.latency.pop();
        assert!(short.damage(802).unwrap().contains("2 dispatch counts, 2 queue integrals and 1"));
        let mut uneven = ok.clone();
        uneven.queue[1].push(1.0);
        assert!(uneven.damage(802).unwrap().contains("not all of one farm"));
        let mut disorder = ok.clone();
        disorder.latency[1] = Buckets::from_pairs([(5, 1), (5, 1)]);
        assert!(disorder.damage(802).unwrap().starts_with("window 1's histogram has bucket 5"));
        assert!(ok.damage(1).unwrap().contains("bucket 1 (count 3)"));
    }
}
