//! The workload: how requests arrive and how much work each brings.
//!
//! A scenario describes both as tables tagged by `kind` ([`ArrivalSpec`], [`ServiceSpec`]);
//! `validate` checks their parameters with messages that name the key, and `build` loads any file
//! and returns a ready, cheaply cloned description ([`Arrivals`], [`Service`]). A replication
//! then draws from its own random stream: [`Arrivals::process`] gives the per-replication state
//! whose [`ArrivalProcess::next_gap`] returns the time to the next arrival, and
//! [`Service::demand`] a request's demand.
//!
//! # Service demands
//!
//! Every distribution has mean 1: a demand is work, and takes `demand / rate` at a server of that
//! rate, so the load is set by the arrival rate alone and distributions differ only in shape,
//! summarised by the squared coefficient of variation `scv = Var[S]/E[S]^2` (here `Var[S]`).
//!
//! | kind | parameters | what it models | scv |
//! |---|---|---|---|
//! | `exp` | | memoryless work; Part I's model, M/M/1 closed forms | 1 |
//! | `det` | | identical requests (M/D/1) | 0 |
//! | `erlang` | `k >= 1` | regular work made of `k` exponential phases: `Gamma(k, 1/k)` | `1/k` |
//! | `hyperexp` | `scv > 1` | a mix of short and long requests | `scv` |
//! | `lognormal` | `scv > 0` | the skewed latencies measured in real services | `scv` |
//! | `pareto` | `alpha > 1` | heavy tails: a few huge requests | `1/(alpha (alpha-2))`, infinite for `alpha <= 2` |
//! | `bimodal` | `0 < p < 1`, `long > 1`, `p long < 1` | two request types (cache hit or miss) | `p long^2 + (1-p) short^2 - 1` |
//! | `uniform` | `0 <= low < high` | work spread evenly between two bounds | `(high-low)^2/(3 (high+low)^2)` |
//! | `bounded-pareto` | `alpha > 0`, `high > 1` | heavy tails cut at a largest request | `E[S^2] - 1`, below |
//! | `empirical` | `file`, `column` (`demand`) | measured demands, resampled | the column's |
//!
//! Parameterisations:
//!
//! - **erlang**: `Gamma(shape k, scale 1/k)`, drawn with `rand_distr::Gamma` (Marsaglia & Tsang
//!   2000).
//! - **hyperexp**: two exponential phases with *balanced means*, `p1/mu1 = p2/mu2`, the
//!   standard two-moment fit of Whitt (1982, "Approximating a point process by a renewal
//!   process", Management Science 28) and Allen (1990, *Probability, Statistics, and Queueing
//!   Theory*, 2nd ed.): `p1 = (1 + sqrt((scv-1)/(scv+1)))/2`, `p2 = 1 - p1`, `mu_i = 2 p_i`.
//! - **lognormal**: `exp(N(mu, sigma^2))` with `sigma^2 = ln(1 + scv)` and `mu = -sigma^2/2`,
//!   so that `E[S] = exp(mu + sigma^2/2) = 1` and `E[S^2] = exp(sigma^2) = 1 + scv`;
//!   `rand_distr::LogNormal`.
//! - **pareto**: the *classic* (type I) Pareto, not Lomax: `P(S > x) = (x_m/x)^alpha` for
//!   `x >= x_m`, with `x_m = (alpha-1)/alpha` so that the mean `alpha x_m/(alpha-1)` is 1
//!   (`rand_distr::Pareto`). Every demand is at least `x_m`. For `alpha <= 2` the variance is
//!   infinite, so the M/G/1 mean wait (Pollaczek-Khinchine, `E[S^2]`) diverges:
//!   [`Service::infinite_variance`] says so, and no interval on a mean should be trusted.
//! - **bimodal**: `long` with probability `p`, else `short = (1 - p long)/(1 - p)`.
//! - **uniform**: `low` and `high` give the shape; demands are uniform between them scaled to
//!   mean 1, `U(2 low/(low+high), 2 high/(low+high))` (`rand::distr::Uniform`), so `low = 0.5,
//!   high = 1.5` is `U(0.5, 1.5)` itself and `low = 0, high = 2` is `U(0, 2)`.
//! - **bounded-pareto**: density `alpha L^alpha x^-(alpha+1) / (1 - (L/H)^alpha)` on `[L, H]`
//!   (Harchol-Balter 2013, §20.3), with `H = high` (in mean demands) and `L` the root in `(0, 1)`
//!   of `E[S] = 1`, found by bisection. Its moments are `E[S^k] = alpha L^alpha (L^(k-alpha) -
//!   H^(k-alpha)) / ((alpha - k)(1 - (L/H)^alpha))` (`ln(H/L)` in place of the last factor's
//!   difference over `alpha - k` at `k = alpha`), all finite; drawn by inversion, `x = L (1 - u
//!   (1 - (L/H)^alpha))^(-1/alpha)`, since rand_distr has no bounded Pareto.
//! - **empirical**: a CSV column (header row) read once, divided by its mean, and resampled
//!   uniformly (a bootstrap of the measured demands). [`Service::scv`] is the scaled column's
//!   population variance.
//!
//! `exp` is drawn as exactly one `Exp1` sample, so that a simulation written against
//! [`Service`] reproduces, bit for bit, one that draws `Exp(1)` demands directly.
//!
//! # Arrivals
//!
//! The rate of a parametric process is given as `load` (a fraction of the farm's capacity, the
//! sum of rate times slots over servers) or as `rate`, never both.
//!
//! - **poisson**: exponential gaps of mean `1/rate`, drawn as one `Exp1` sample divided by the
//!   rate (bit for bit the gaps of Part I).
//! - **renewal** (`scv >= 0`): independent gamma gaps, `Gamma(1/scv, scv/rate)`, mean `1/rate`
//!   and SCV `scv`. `scv = 0` is deterministic gaps (D), `scv = 1` Poisson in law, `scv > 1`
//!   burstier; the usual GI two-moment model (Whitt 1982).
//! - **mmpp2** (`ratio >= 1`, `high_time`, `low_time`): a two-state Markov-modulated Poisson
//!   process (Fischer & Meier-Hellstern 1993, "The Markov-modulated Poisson process (MMPP)
//!   cookbook", Performance Evaluation 18). The state alternates between high and low with
//!   exponential sojourns of means `high_time` and `low_time`; arrivals are Poisson at `l_h =
//!   ratio l_l` in the high state and `l_l` in the low one, with `l_l = rate (T_h + T_l)/(ratio
//!   T_h + T_l)` so that the time-average rate is `rate`. Each replication starts in the
//!   stationary state (high with probability `T_h/(T_h + T_l)`). Its counts are overdispersed:
//!   the index of dispersion of counts exceeds 1 (Heffes & Lucantoni 1986).
//! - **trace** (`file`, `column` = `time`): absolute timestamps (non-negative, non-decreasing)
//!   replayed by their gaps; the process ends with the trace. Its rate is measured as
//!   `(count - 1)/(last - first)`. The trace is shifted so that its first arrival comes one
//!   mean gap, `1/rate`, after time 0, as a Poisson stream's first arrival comes one gap
//!   after 0 on average: time 0 (where board posts and farm events are anchored) stays free
//!   and the first request does not find the farm at the very instant the run starts, and a
//!   trace of wall-clock timestamps does not leave the farm idle for their whole offset. Farm
//!   events, board posts and series windows are in this shifted time. (`lbsim limit` replays a
//!   trace at its own timestamps instead, [`Arrivals::trace_times`]: there the window limiters'
//!   boundaries are what the timestamps are compared with.)

mod arrivals;
mod csv_column;
pub mod keys;
mod pattern;
mod service;

pub use arrivals::{ArrivalProcess, ArrivalSpec, Arrivals};
pub use keys::{KeySource, KeySpec, SharedKeys};
pub use pattern::Pattern;
pub use service::{Service, ServiceSpec};

#[cfg(test)]
pub(crate) mod tests {
    /// Sample moments for the statistical tests.
    #[derive(Debug)]
    pub(crate) struct Moments {
        /// Sample size.
        pub n: f64,
        /// Sample mean.
        pub mean: f64,
        /// Variance: about the known mean for [`Moments::about`], unbiased for [`Moments::of`].
        pub var: f64,
        /// Fourth moment about the same centre as `var`.
        pub m4: f64,
        /// Smallest value.
        pub min: f64,
    }

    impl Moments {
        /// Moments of a sample whose true mean `mu` is known: `var` is the mean of
        /// `(x - mu)^2`, an unbiased estimator of the variance with standard error
        /// [`Moments::var_se`].
        pub(crate) fn about(mu: f64, xs: impl Iterator<Item = f64>) -> Moments {
            let xs: Vec<f64> = xs.collect();
            let n = xs.len() as f64;
            let mean = xs.iter().sum::<f64>() / n;
            let var = xs.iter().map(|x| (x - mu).powi(2)).sum::<f64>() / n;
            let m4 = xs.iter().map(|x| (x - mu).powi(4)).sum::<f64>() / n;
            let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
            Moments { n, mean, var, m4, min }
        }

        /// Moments about the sample's own mean (`var` with divisor `n - 1`).
        pub(crate) fn of(xs: impl Iterator<Item = f64>) -> Moments {
            let xs: Vec<f64> = xs.collect();
            let n = xs.len() as f64;
            let mean = xs.iter().sum::<f64>() / n;
            let mut m = Moments::about(mean, xs.into_iter());
            m.var *= n / (n - 1.0);
            m
        }

        /// Standard error of `var` as an estimate of the variance: `sqrt((m4 - var^2)/n)`, the
        /// variance of a mean of `n` independent `(x - mu)^2`, estimated from the sample.
        pub(crate) fn var_se(&self) -> f64 {
            ((self.m4 - self.var * self.var) / self.n).sqrt()
        }
    }
}

use rand::RngExt;
use rand_distr::Exp1;

use crate::rng::SimRng;

/// Where the simulation's gaps between arrivals come from. The event loop is generic over it, so
/// that the article's Poisson stream ([`PoissonGaps`]) is one inlined draw and a division, while
/// every other process goes through [`ArrivalProcess`]. `Clone`, as a policy is, so that a
/// replication can be run again from its start ([`Policy::READS_LENGTHS_ONLY`]).
///
/// [`Policy::READS_LENGTHS_ONLY`]: crate::policy::Policy::READS_LENGTHS_ONLY
pub trait Gaps: Clone {
    /// The gap to the next arrival, or `None` when the arrivals have ended.
    fn next_gap(&mut self, rng: &mut SimRng) -> Option<f64>;
}

/// Where the simulation's service demands come from (mean 1); see [`Gaps`].
pub trait Demands {
    /// One demand.
    fn demand(&self, rng: &mut SimRng) -> f64;
}

/// Poisson arrivals at `rate`: exactly what [`ArrivalProcess::next_gap`] gives for Poisson.
#[derive(Debug, Clone, Copy)]
pub struct PoissonGaps(pub f64);

impl Gaps for PoissonGaps {
    #[inline]
    fn next_gap(&mut self, rng: &mut SimRng) -> Option<f64> {
        let e: f64 = rng.sample(Exp1);
        Some(e / self.0)
    }
}

/// `Exp(1)` demands: exactly what [`Service::demand`] gives for `exp`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpDemands;

impl Demands for ExpDemands {
    #[inline]
    fn demand(&self, rng: &mut SimRng) -> f64 {
        rng.sample(Exp1)
    }
}

impl Gaps for ArrivalProcess {
    #[inline]
    fn next_gap(&mut self, rng: &mut SimRng) -> Option<f64> {
        ArrivalProcess::next_gap(self, rng)
    }
}

impl Demands for Service {
    #[inline]
    fn demand(&self, rng: &mut SimRng) -> f64 {
        Service::demand(self, rng)
    }
}
