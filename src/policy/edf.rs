//! Envoy's EDF scheduler (`source/common/upstream/edf_scheduler.h`, envoyproxy/envoy) with
//! `pickAndAdd`, as its weighted balancers use it: `least-request`'s weighted path, and the
//! schedules that slow start builds for `rr` and `least-request`
//! ([`crate::lifecycle::slow_start`]).
//!
//! `pickAndAdd` pops the entry with the earliest deadline (ties to the earliest added,
//! `order_offset_`), moves the scheduler's time to it, and re-adds the host with deadline
//! `now + 1 / weight`, its weight computed at that moment. Only the picked host's entry is
//! refreshed: the others keep the deadlines their weights gave when last picked.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::Hosts;

/// One scheduled host: deadline, insertion order, host.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    deadline: f64,
    order: u64,
    host: u32,
}

impl Eq for Entry {}

impl Ord for Entry {
    /// Reversed, so that `BinaryHeap` pops the earliest deadline, then the earliest added.
    fn cmp(&self, other: &Self) -> Ordering {
        other.deadline.total_cmp(&self.deadline).then(other.order.cmp(&self.order))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Envoy's EDF scheduler with `pickAndAdd`, over hosts of static weights `weights` divided by
/// `(active + 1)^bias` (least request's `hostWeight()`; `bias = 0`: the static weights).
#[derive(Debug, Clone)]
pub(super) struct Edf {
    pub(super) weights: Vec<f64>,
    pub(super) bias: f64,
    heap: BinaryHeap<Entry>,
    now: f64,
    order: u64,
}

impl Edf {
    /// A fresh schedule of every host.
    pub(super) fn new(weights: Vec<f64>, bias: f64) -> Self {
        let hosts = Hosts::all();
        Edf::over(weights, bias, &hosts)
    }

    /// A fresh schedule of the allowed `hosts`, added in order with their static weights.
    pub(super) fn over(weights: Vec<f64>, bias: f64, hosts: &Hosts) -> Self {
        Edf::scaled(weights, bias, hosts, |_| 1.0)
    }

    /// A fresh schedule of the allowed `hosts`, added in order, each with its static weight
    /// times `scale(host)` (slow start's factor).
    pub(super) fn scaled(
        weights: Vec<f64>,
        bias: f64,
        hosts: &Hosts,
        scale: impl Fn(usize) -> f64,
    ) -> Self {
        let mut edf = Edf { weights, bias, heap: BinaryHeap::new(), now: 0.0, order: 0 };
        for h in hosts.iter(edf.weights.len()) {
            let w = edf.weights[h] * scale(h);
            edf.add(h, w);
        }
        edf
    }

    fn add(&mut self, host: usize, weight: f64) {
        debug_assert!(weight > 0.0);
        self.heap.push(Entry {
            deadline: self.now + 1.0 / weight,
            order: self.order,
            host: host as u32,
        });
        self.order += 1;
    }

    /// `hostWeight()`: the weight over (active + 1)^bias.
    pub(super) fn weight(&self, host: usize, active: u32) -> f64 {
        let w = self.weights[host];
        let a = f64::from(active) + 1.0;
        if self.bias == 1.0 {
            w / a
        } else if self.bias == 0.0 {
            w
        } else {
            w / a.powf(self.bias)
        }
    }

    /// `pickAndAdd`: the host with the earliest deadline, re-added with its weight now
    /// (`active(host)` requests in flight).
    pub(super) fn pick_and_add(&mut self, active: impl Fn(usize) -> u32) -> usize {
        let top = self.heap.pop().expect("a schedule of at least one host");
        self.now = top.deadline;
        let host = top.host as usize;
        let w = self.weight(host, active(host));
        self.add(host, w);
        host
    }

    /// `pickAndAdd` with the picked host's weight times `scale(host)` (slow start's factor at
    /// the pick, as Envoy's `hostWeight()` applies `applySlowStartFactor`).
    pub(super) fn pick_and_add_scaled(
        &mut self,
        active: impl Fn(usize) -> u32,
        scale: impl Fn(usize) -> f64,
    ) -> usize {
        let top = self.heap.pop().expect("a schedule of at least one host");
        self.now = top.deadline;
        let host = top.host as usize;
        let w = self.weight(host, active(host)) * scale(host);
        self.add(host, w);
        host
    }
}
