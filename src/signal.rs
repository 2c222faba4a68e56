//! What flows back from the servers to a client: a response to its request, a server's load
//! report, a probe's reply. The engine produces them, the policies read them; neither owns them.

/// What a response tells its sender beyond its own sojourn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Response {
    /// Time from dispatch to response.
    pub sojourn: f64,
    /// Service time: the request's demand over the server's rate at its departure.
    pub service: f64,
    /// Requests left at the server (waiting and in service) after it.
    pub queue: u32,
}

/// One server's load report over the last report period.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LoadReport {
    /// Completions per unit time.
    pub qps: f64,
    /// Time-averaged fraction of busy workers.
    pub utilization: f64,
}

/// What a probe reads at its server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeReply {
    /// Requests in flight at the server (waiting and in service).
    pub rif: u32,
    /// The server's estimate of the latency of a request joining it now (see the module
    /// documentation; the median service time is 1 until it has completed any).
    pub latency: f64,
}
