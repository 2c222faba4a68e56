//! Traffic classes (SPEC §13): each arrival belongs to one class, drawn by its share; a class has
//! a priority (0 = highest), a weight for fair scheduling and its own service law. The servers
//! that schedule by class are the engine's (`engine/classes.rs`).

use crate::workload::Service;

/// Linux's `sched_prio_to_weight` (kernel/sched/core.c, the CFS weight of each nice value from
/// -20 to 19): nice 0 is 1024, and each step of nice changes the weight by about 1.25, so that a
/// task one nice level lower gets about 10% more CPU than one at the level above.
pub const SCHED_PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, // -20
    29154, 23254, 18705, 14949, 11916, // -15
    9548, 7620, 6100, 4904, 3906, // -10
    3121, 2501, 1991, 1586, 1277, // -5
    1024, 820, 655, 526, 423, // 0
    335, 272, 215, 172, 137, // 5
    110, 87, 70, 56, 45, // 10
    36, 29, 23, 18, 15, // 15
];

/// The weight of `nice` (-20..=19) relative to nice 0: `sched_prio_to_weight[nice + 20] / 1024`.
pub fn nice_weight(nice: i32) -> f64 {
    let i = (nice.clamp(-20, 19) + 20) as usize;
    f64::from(SCHED_PRIO_TO_WEIGHT[i]) / 1024.0
}

/// One traffic class, resolved.
#[derive(Debug, Clone)]
pub struct Class {
    /// Its name (the `class` column).
    pub name: String,
    /// Fraction of arrivals.
    pub share: f64,
    /// Priority level, 0 the highest.
    pub priority: u32,
    /// Weight relative to nice 0 (the `weight` key, or `nice` through
    /// [`SCHED_PRIO_TO_WEIGHT`]): its share of a server under `fair`, its vruntime's slowness
    /// under `cfs`.
    pub weight: f64,
    /// Its own service law (`None`: the scenario's `[service]`).
    pub service: Option<Service>,
    /// Its requests' per-attempt timeout (`[[classes]] timeout`), which replaces `[client]
    /// timeout` for them (`None`: the client's, if any).
    pub timeout: Option<f64>,
}

impl PartialEq for Class {
    /// Service laws compare by their parameters (as printed): a sampler has no other identity.
    fn eq(&self, o: &Self) -> bool {
        (&self.name, self.share, self.priority, self.weight, self.timeout)
            == (&o.name, o.share, o.priority, o.weight, o.timeout)
            && format!("{:?}", self.service) == format!("{:?}", o.service)
    }
}

/// The classes of a scenario and the scheduling parameters that read them.
#[derive(Debug, Clone, PartialEq)]
pub struct Classes {
    /// The classes in file order (a request's class is its index here).
    pub classes: Vec<Class>,
    /// `[farm] aging`: under `priority`, a waiting request gains one level every `aging`.
    pub aging: Option<f64>,
    /// `[farm] slice`: under `cfs`, how long the class with the least vruntime runs before the
    /// server chooses again.
    pub slice: f64,
}

/// The default CFS slice: Linux's `sysctl_sched_base_slice` is 0.75 ms, here about a tenth of a
/// mean service time, so that a request is cut into several slices.
pub const DEFAULT_SLICE: f64 = 0.1;

impl Classes {
    /// The cumulative shares, the last one exactly 1, for drawing a class from one uniform.
    pub fn cumulative(&self) -> Vec<f64> {
        let mut acc = 0.0;
        let mut cum: Vec<f64> = self
            .classes
            .iter()
            .map(|c| {
                acc += c.share;
                acc
            })
            .collect();
        if let Some(last) = cum.last_mut() {
            *last = 1.0;
        }
        cum
    }

    /// The priority levels, one per class.
    pub fn priorities(&self) -> Vec<u32> {
        self.classes.iter().map(|c| c.priority).collect()
    }

    /// The weights, one per class.
    pub fn weights(&self) -> Vec<f64> {
        self.classes.iter().map(|c| c.weight).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_weights_follow_the_kernel_table() {
        assert_eq!(nice_weight(0), 1.0);
        assert_eq!(nice_weight(-20), 88761.0 / 1024.0);
        assert_eq!(nice_weight(19), 15.0 / 1024.0);
        // Neighbouring levels differ by about 1.25 (the kernel's comment: "10% effect").
        for n in -20..19 {
            let r = nice_weight(n) / nice_weight(n + 1);
            assert!((1.2..1.3).contains(&r), "nice {n}: {r}");
        }
    }
}
