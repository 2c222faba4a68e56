//! The dispatchers of a run: one omniscient balancer (the article's model) or a fleet of clients.

/// How many dispatchers send requests, and what each one sees (SPEC §8).
///
/// Each arrival belongs to one client, uniformly at random from a stream keyed by the workload, so
/// every policy sees the same assignment. A client runs its own instance of the policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Clients {
    /// Independent dispatchers.
    pub count: usize,
    /// Each client sees only its own in-flight requests per server (`info.kind = "local"`: what
    /// Envoy, NGINX and HAProxy know); otherwise every client sees the true queue lengths.
    pub local: bool,
    /// Each client uses only a subset of the servers: its size and how it is chosen.
    pub subset: Option<(usize, crate::subset::Subsetting)>,
}

impl Default for Clients {
    fn default() -> Self {
        Clients { count: 1, local: false, subset: None }
    }
}

impl Clients {
    /// One dispatcher that sees everything: the article's balancer, simulated without a fleet.
    pub fn is_single(&self) -> bool {
        self.count == 1 && !self.local && self.subset.is_none()
    }
}
