//! The parts of the loop that a replication may leave out: the admission stage (a limiter in
//! front of the farm) and the series of `--series`. The loop ([`super::replication`]) calls them
//! at fixed points through [`Parts`]; [`Off`] implements every call as nothing, so a replication
//! without them is compiled without them, and [`On`] does the work when either is asked for.
//!
//! The other optional parts are chosen by the policy's constants and cost nothing when off:
//! feedback ([`Policy::FEEDBACK`](crate::policy::Policy::FEEDBACK): the monitor, reports,
//! probes, the timer), held requests ([`Policy::HOLDS`](crate::policy::Policy::HOLDS)) and tags
//! ([`Policy::TAGGED`](crate::policy::Policy::TAGGED)). Rate changes are events: a farm without
//! them schedules none.

use std::collections::VecDeque;

use super::classes::ClassState;
use super::event::Job;
use super::feedback::{Recorded, WindowRecorder};
use super::lifecycle::LifecycleState;
use crate::admission::{Decision, Gate, Scope};
use crate::model::{Farm, RunLength, SimOptions};
use crate::rng::{SimRng, StreamKey};
use crate::stats::RepStats;

/// The admission stage and the series, as the loop sees them. `measured` says whether the
/// request is past the warm-up.
pub(super) trait Parts {
    /// The admission stage's decision on a request arriving at `t`, of `scope` (its key and
    /// client when it brings them).
    fn offer(&mut self, t: f64, measured: bool, scope: Scope) -> Decision;
    /// Whether the admission stage counts requests per key and per client (a composite
    /// limiter's layers): the request's key and client are then its own ([`Scope`]).
    fn scopes(&self) -> (bool, bool);
    /// The key the admission stage counted the request last offered under (with a per-key
    /// layer).
    fn offered_key(&self) -> Option<u64>;
    /// Keeps a request the admission stage delayed, with its `scope`.
    fn delay(&mut self, job: Job, scope: Scope);
    /// The earliest delayed request, now let through, with its scope.
    fn release(&mut self) -> (Job, Scope);
    /// A request is sent to a server holding `qlen` requests: false when that server rejects it
    /// (adaptive throttling's backend limit).
    fn accepts(&mut self, qlen: u32, t: f64, measured: bool) -> bool;
    /// A request of class `class` (0 without classes) joined server `s`, which now holds
    /// `qlen`.
    fn joined(&mut self, s: usize, qlen: u32, t: f64, measured: bool, class: u32);
    /// `job` left server `s` after `sojourn`, leaving `qlen`.
    fn left(&mut self, s: usize, qlen: u32, t: f64, job: &Job, sojourn: f64, measured: bool);
    /// The request lifecycle (SPEC §11), if the farm has one.
    fn lifecycle(&mut self) -> Option<&mut LifecycleState>;
    /// The traffic classes (SPEC §13), if the farm has them.
    fn classes(&mut self) -> Option<&mut ClassState>;
    /// The lifecycle's measured request of class `class` arrived at `t` (for the series).
    fn request_arrived(&mut self, t: f64, class: u32);
    /// The lifecycle's measured request of class `class` ended at `t`, answered or failed (for
    /// the series).
    fn request_ended(&mut self, t: f64, success: bool, class: u32);
    /// The changes of the clients' health views logged since the last call go to the series.
    fn health_logged(&mut self);
    /// Adds what the parts measured to `stats`; the replication ended at `end`.
    fn finish(self, stats: &mut RepStats, end: f64);
}

/// Neither an admission stage nor series.
#[derive(Debug, Clone, Copy)]
pub(super) struct Off;

impl Parts for Off {
    #[inline(always)]
    fn offer(&mut self, _: f64, _: bool, _: Scope) -> Decision {
        Decision::Admit
    }

    #[inline(always)]
    fn scopes(&self) -> (bool, bool) {
        (false, false)
    }

    #[inline(always)]
    fn offered_key(&self) -> Option<u64> {
        None
    }

    #[inline(always)]
    fn delay(&mut self, _: Job, _: Scope) {
        unreachable!("nothing is delayed without an admission stage")
    }

    #[inline(always)]
    fn release(&mut self) -> (Job, Scope) {
        unreachable!("nothing is released without an admission stage")
    }

    #[inline(always)]
    fn accepts(&mut self, _: u32, _: f64, _: bool) -> bool {
        true
    }

    #[inline(always)]
    fn joined(&mut self, _: usize, _: u32, _: f64, _: bool, _: u32) {}

    #[inline(always)]
    fn left(&mut self, _: usize, _: u32, _: f64, _: &Job, _: f64, _: bool) {}

    #[inline(always)]
    fn lifecycle(&mut self) -> Option<&mut LifecycleState> {
        None
    }

    #[inline(always)]
    fn classes(&mut self) -> Option<&mut ClassState> {
        None
    }

    #[inline(always)]
    fn request_arrived(&mut self, _: f64, _: u32) {}

    #[inline(always)]
    fn request_ended(&mut self, _: f64, _: bool, _: u32) {}

    #[inline(always)]
    fn health_logged(&mut self) {}

    #[inline(always)]
    fn finish(self, _: &mut RepStats, _: f64) {}
}

/// The farm's admission stage, if it has one, the series, if asked for, the request
/// lifecycle and the traffic classes, if the farm has them.
pub(super) struct On {
    gate: Option<Gate>,
    /// Requests the admission stage delayed, in the order they are let through.
    delayed: VecDeque<(Job, Scope)>,
    windows: Option<WindowRecorder>,
    lifecycle: Option<Box<LifecycleState>>,
    classes: Option<Box<ClassState>>,
}

impl On {
    /// The parts of `farm` under `opts`. The admission stage draws from its own stream, seeded
    /// from a copy of the workload stream (which it leaves where it was): policies still see the
    /// same requests. With a health view, the series averages it over `clients` clients. The
    /// classes' stream is seeded the same way, under its own name.
    pub(super) fn new(
        farm: &Farm,
        opts: &SimOptions,
        workload: &SimRng,
        clients: u32,
        len: RunLength,
    ) -> Self {
        let gate = farm.admission.as_ref().map(|adm| {
            use rand::Rng;
            Gate::new(adm, StreamKey::new(workload.clone().next_u64(), "admission").rng())
        });
        let n = farm.rates.len();
        // The lifecycle's streams are seeded like the admission stage's, under their own names.
        let mut lifecycle = farm.lifecycle.as_ref().map(|l| {
            use rand::Rng;
            let state = LifecycleState::new(l, &farm.rates, workload.clone().next_u64());
            Box::new(match &farm.classes {
                Some(c) => state.with_classes(c),
                None => state,
            })
        });
        let view = lifecycle.as_mut().and_then(|l| l.health.as_mut());
        let windows = (opts.series).map(|width| {
            let w = WindowRecorder::new(n, &opts.series_groups, width, opts.series_spool);
            let w = if farm.lifecycle.is_some() { w.with_outcomes() } else { w };
            let w = match &farm.classes {
                Some(c) => w.with_classes(c.classes.len()),
                None => w,
            };
            match view {
                Some(v) => {
                    v.log_changes();
                    w.with_health(clients)
                }
                None => w,
            }
        });
        let classes = farm.classes.as_ref().map(|c| {
            use rand::Rng;
            Box::new(ClassState::new(c, len, workload.clone().next_u64()))
        });
        On { gate, delayed: VecDeque::new(), windows, lifecycle, classes }
    }
}

impl Parts for On {
    #[inline]
    fn offer(&mut self, t: f64, measured: bool, scope: Scope) -> Decision {
        match &mut self.gate {
            None => Decision::Admit,
            Some(g) => g.offer_scoped(t, measured, scope),
        }
    }

    #[inline]
    fn scopes(&self) -> (bool, bool) {
        match self.gate.as_ref().and_then(|g| g.composite.as_ref()) {
            None => (false, false),
            Some(c) => (c.by_key(), c.by_client()),
        }
    }

    fn offered_key(&self) -> Option<u64> {
        let c = self.gate.as_ref()?.composite.as_ref()?;
        c.by_key().then_some(c.last_key)
    }

    fn delay(&mut self, job: Job, scope: Scope) {
        self.delayed.push_back((job, scope));
    }

    fn release(&mut self) -> (Job, Scope) {
        self.delayed.pop_front().expect("a release without a delayed request")
    }

    #[inline]
    fn accepts(&mut self, qlen: u32, t: f64, measured: bool) -> bool {
        let Some(g) = &mut self.gate else { return true };
        if let Some(limit) = g.queue_limit {
            let accepted = qlen < limit;
            g.backend(t, accepted, measured);
            if !accepted {
                return false;
            }
        }
        g.admitted(t, measured);
        true
    }

    #[inline]
    fn joined(&mut self, s: usize, qlen: u32, t: f64, measured: bool, class: u32) {
        if let Some(w) = &mut self.windows {
            w.changed(s, qlen, t);
            if measured {
                w.dispatched(s, t, class);
            }
        }
    }

    #[inline]
    fn left(&mut self, s: usize, qlen: u32, t: f64, job: &Job, sojourn: f64, measured: bool) {
        if let Some(w) = &mut self.windows {
            w.changed(s, qlen, t);
            if measured {
                w.departed(job.arrival, sojourn, job.class);
            }
        }
    }

    #[inline]
    fn lifecycle(&mut self) -> Option<&mut LifecycleState> {
        self.lifecycle.as_deref_mut()
    }

    #[inline]
    fn classes(&mut self) -> Option<&mut ClassState> {
        self.classes.as_deref_mut()
    }

    fn request_arrived(&mut self, t: f64, class: u32) {
        if let Some(w) = &mut self.windows {
            w.request_arrived(t, class);
        }
    }

    fn request_ended(&mut self, t: f64, success: bool, class: u32) {
        if let Some(w) = &mut self.windows {
            w.request_ended(t, success, class);
        }
    }

    fn health_logged(&mut self) {
        let (Some(w), Some(l)) = (&mut self.windows, &mut self.lifecycle) else { return };
        if let Some(h) = &mut l.health {
            for (t, d) in h.logged() {
                w.health_changed(t, d);
            }
        }
    }

    fn finish(mut self, stats: &mut RepStats, end: f64) {
        self.health_logged();
        if let Some(l) = &self.lifecycle {
            stats.lifecycle = l.stats;
            if let Some(h) = &l.health {
                stats.lifecycle.ejections = h.ejections();
            }
        }
        if let Some(g) = self.gate {
            stats.admission = g.stats;
        }
        if let Some(c) = self.classes {
            stats.classes = c.finish();
            if let Some(l) = &self.lifecycle {
                for (k, counted) in stats.classes.iter_mut().zip(&l.class_stats) {
                    k.lifecycle = *counted;
                }
            }
        }
        match self.windows.map(|w| w.finish(end)) {
            Some(Recorded::Memory(w)) => stats.windows = Some(w),
            Some(Recorded::Spooled(w)) => stats.spooled = Some(w),
            None => {}
        }
    }
}
