//! Service-demand distributions, all normalised to mean 1.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::RngExt;
use rand::distr::Uniform;
use rand_distr::{Exp1, Gamma, LogNormal, Pareto};
use serde::{Deserialize, Serialize};

use super::csv_column::{Order, read_column, resolve};
use crate::error::KeyError;
use crate::rng::SimRng;

fn demand_column() -> String {
    "demand".to_string()
}

/// A service-demand distribution, all with mean 1 (a demand is divided by the server's rate).
///
/// Written in a scenario as a table tagged by `kind`, e.g. `{ kind = "erlang", k = 4 }`; unknown
/// keys are refused. See the [module docs](super) for what each kind models.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields, from = "Repr")]
pub enum ServiceSpec {
    /// Exponential, `Exp(1)`: SCV 1. The default.
    #[default]
    Exp,
    /// Deterministic: every demand is 1, SCV 0.
    Det,
    /// Erlang with `k` phases, `Gamma(k, 1/k)`: SCV `1/k`.
    Erlang {
        /// Number of phases, `k >= 1` (`k = 1` is `exp`).
        k: u32,
    },
    /// Two-phase hyperexponential with balanced means (`p1/mu1 = p2/mu2`).
    Hyperexp {
        /// Squared coefficient of variation, `> 1`.
        scv: f64,
    },
    /// Lognormal: `exp(N(mu, sigma^2))` with `sigma^2 = ln(1 + scv)`, `mu = -sigma^2/2`.
    Lognormal {
        /// Squared coefficient of variation, `> 0`.
        scv: f64,
    },
    /// Classic (type I) Pareto, scale `(alpha - 1)/alpha` so that the mean is 1.
    Pareto {
        /// Tail index, `> 1` (a finite mean); the variance is infinite for `alpha <= 2`.
        alpha: f64,
    },
    /// Two point masses: `long` with probability `p`, else `short = (1 - p*long)/(1 - p)`.
    Bimodal {
        /// Probability of the long demand, `0 < p < 1`.
        p: f64,
        /// The long demand, `> 1`, with `p * long < 1` so that the short one is positive.
        long: f64,
    },
    /// Uniform between `low` and `high`, scaled to mean 1: `U(2 low/(low + high), 2 high/(low +
    /// high))` (`low = 0.5, high = 1.5` is `U(0.5, 1.5)` itself).
    Uniform {
        /// The lower end, `>= 0`.
        low: f64,
        /// The upper end, `> low`.
        high: f64,
    },
    /// Bounded Pareto: density proportional to `x^-(alpha+1)` on `[low, high]`, with `low` set
    /// so that the mean is 1.
    #[serde(rename = "bounded-pareto")]
    BoundedPareto {
        /// Tail index, `> 0` (every moment is finite: the support is bounded).
        alpha: f64,
        /// The largest demand, in mean demands, `> 1`.
        high: f64,
    },
    /// Demands resampled uniformly from a CSV column, scaled to mean 1.
    Empirical {
        /// The CSV file (a header row, then one record per line); relative to the scenario file.
        file: PathBuf,
        /// The column's name in the header row.
        #[serde(default = "demand_column")]
        column: String,
    },
}

/// What [`ServiceSpec`] is read through. serde's internally tagged unit variants accept any
/// other keys (`{ kind = "exp", scv = 4 }` would read as `exp`); as empty struct variants they
/// are refused like every other unknown key.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum Repr {
    Exp {},
    Det {},
    Erlang {
        k: u32,
    },
    Hyperexp {
        scv: f64,
    },
    Lognormal {
        scv: f64,
    },
    Pareto {
        alpha: f64,
    },
    Bimodal {
        p: f64,
        long: f64,
    },
    Uniform {
        low: f64,
        high: f64,
    },
    #[serde(rename = "bounded-pareto")]
    BoundedPareto {
        alpha: f64,
        high: f64,
    },
    Empirical {
        file: PathBuf,
        #[serde(default = "demand_column")]
        column: String,
    },
}

impl From<Repr> for ServiceSpec {
    fn from(r: Repr) -> Self {
        match r {
            Repr::Exp {} => ServiceSpec::Exp,
            Repr::Det {} => ServiceSpec::Det,
            Repr::Erlang { k } => ServiceSpec::Erlang { k },
            Repr::Hyperexp { scv } => ServiceSpec::Hyperexp { scv },
            Repr::Lognormal { scv } => ServiceSpec::Lognormal { scv },
            Repr::Pareto { alpha } => ServiceSpec::Pareto { alpha },
            Repr::Bimodal { p, long } => ServiceSpec::Bimodal { p, long },
            Repr::Uniform { low, high } => ServiceSpec::Uniform { low, high },
            Repr::BoundedPareto { alpha, high } => ServiceSpec::BoundedPareto { alpha, high },
            Repr::Empirical { file, column } => ServiceSpec::Empirical { file, column },
        }
    }
}

/// `Err` for a parameter outside its domain: `service.KEY: expected WHAT for KIND, got VALUE`.
fn bad(key: &str, what: &str, kind: &str, got: impl std::fmt::Display) -> Result<(), KeyError> {
    let got = crate::output::table::shown_number(got);
    Err(KeyError::new(format!("service.{key}"), format!("expected {what} for {kind}, got {got}")))
}

impl ServiceSpec {
    /// The file an empirical distribution reads, as written (relative to the scenario file).
    pub fn file(&self) -> Option<&Path> {
        match self {
            ServiceSpec::Empirical { file, .. } => Some(file.as_path()),
            _ => None,
        }
    }

    /// Checks the parameters; `Err(message)` names the key, e.g.
    /// `service.scv: expected a number > 1 for hyperexp, got 0.5`.
    ///
    /// Files are not read here (see [`ServiceSpec::build`]).
    pub fn validate(&self) -> Result<(), KeyError> {
        match *self {
            ServiceSpec::Exp | ServiceSpec::Det => Ok(()),
            ServiceSpec::Erlang { k } => {
                if k < 1 {
                    return bad("k", "an integer >= 1", "erlang", k);
                }
                Ok(())
            }
            ServiceSpec::Hyperexp { scv } => {
                if !(scv > 1.0 && scv.is_finite()) {
                    return bad("scv", "a number > 1", "hyperexp", scv);
                }
                Ok(())
            }
            ServiceSpec::Lognormal { scv } => {
                if !(scv > 0.0 && scv.is_finite()) {
                    return bad("scv", "a number > 0", "lognormal", scv);
                }
                Ok(())
            }
            ServiceSpec::Pareto { alpha } => {
                if !(alpha > 1.0 && alpha.is_finite()) {
                    return bad("alpha", "a number > 1 (a finite mean)", "pareto", alpha);
                }
                Ok(())
            }
            ServiceSpec::Bimodal { p, long } => {
                if !(p > 0.0 && p < 1.0) {
                    return bad("p", "a number in (0, 1)", "bimodal", p);
                }
                if !(long > 1.0 && long.is_finite()) {
                    return bad("long", "a number > 1", "bimodal", long);
                }
                if p * long >= 1.0 {
                    return bad(
                        "long",
                        "p * long < 1 (so that the short demand is positive)",
                        "bimodal",
                        format_args!("p * long = {}", p * long),
                    );
                }
                Ok(())
            }
            ServiceSpec::Uniform { low, high } => {
                if !(low >= 0.0 && low.is_finite()) {
                    return bad("low", "a number >= 0", "uniform", low);
                }
                if !(high > low && high.is_finite()) {
                    return bad("high", "a number above low", "uniform", high);
                }
                Ok(())
            }
            ServiceSpec::BoundedPareto { alpha, high } => {
                if !(alpha > 0.0 && alpha <= MAX_BP_ALPHA) {
                    return bad("alpha", "a number in (0, 100]", "bounded-pareto", alpha);
                }
                if !(high > 1.0 && high <= MAX_BP_HIGH) {
                    return bad(
                        "high",
                        "a number above 1 (the mean) and at most 1e9",
                        "bounded-pareto",
                        high,
                    );
                }
                if !BoundedPareto::new(alpha, high).has_mean_one() {
                    return bad(
                        "high",
                        "a value for which a mean-1 law exists at this alpha (raise alpha or lower \
                         high)",
                        "bounded-pareto",
                        high,
                    );
                }
                Ok(())
            }
            ServiceSpec::Empirical { ref file, ref column } => {
                if file.as_os_str().is_empty() {
                    return bad("file", "a file name", "empirical", "an empty string");
                }
                if column.is_empty() {
                    return bad("column", "a column name", "empirical", "an empty string");
                }
                Ok(())
            }
        }
    }

    /// The squared coefficient of variation (the variance, since the mean is 1).
    ///
    /// `f64::INFINITY` for pareto with `alpha <= 2`; `f64::NAN` for empirical, which is unknown
    /// until the file is loaded (then use [`Service::scv`]). Meaningful for valid specs only.
    pub fn scv(&self) -> f64 {
        match *self {
            ServiceSpec::Exp => 1.0,
            ServiceSpec::Det => 0.0,
            ServiceSpec::Erlang { k } => 1.0 / f64::from(k),
            ServiceSpec::Hyperexp { scv } | ServiceSpec::Lognormal { scv } => scv,
            ServiceSpec::Pareto { alpha } => pareto_scv(alpha),
            ServiceSpec::Bimodal { p, long } => {
                let short = bimodal_short(p, long);
                p * long * long + (1.0 - p) * short * short - 1.0
            }
            ServiceSpec::Uniform { low, high } => uniform_scv(low, high),
            ServiceSpec::BoundedPareto { alpha, high } => BoundedPareto::new(alpha, high).scv(),
            ServiceSpec::Empirical { .. } => f64::NAN,
        }
    }

    /// Validates, loads the file of an empirical distribution (a relative `file` is resolved
    /// against `base`, the scenario file's directory) and builds the sampler.
    pub fn build(&self, base: &Path) -> Result<Service, KeyError> {
        self.validate()?;
        let kind = match *self {
            ServiceSpec::Exp => Kind::Exp,
            ServiceSpec::Det => Kind::Det,
            ServiceSpec::Erlang { k } => {
                let k = f64::from(k);
                Kind::Erlang { k, gamma: Gamma::new(k, 1.0 / k).map_err(KeyError::unkeyed)? }
            }
            ServiceSpec::Hyperexp { scv } => {
                // Balanced means (Whitt 1982; Allen 1990, §5.2): p1/mu1 = p2/mu2 = 1/2 gives
                // mean 1 and E[S^2] = 1/(2 p1 p2) = 1 + scv for
                // p1 = (1 + sqrt((scv - 1)/(scv + 1)))/2. Phase i has mean 1/mu_i = 1/(2 p_i).
                let p1 = 0.5 * (1.0 + ((scv - 1.0) / (scv + 1.0)).sqrt());
                let p2 = 1.0 - p1;
                Kind::Hyperexp { scv, p1, mean1: 0.5 / p1, mean2: 0.5 / p2 }
            }
            ServiceSpec::Lognormal { scv } => {
                let s2 = scv.ln_1p();
                let dist = LogNormal::new(-0.5 * s2, s2.sqrt()).map_err(KeyError::unkeyed)?;
                Kind::Lognormal { scv, dist }
            }
            ServiceSpec::Pareto { alpha } => {
                let scale = (alpha - 1.0) / alpha;
                Kind::Pareto { alpha, dist: Pareto::new(scale, alpha).map_err(KeyError::unkeyed)? }
            }
            ServiceSpec::Bimodal { p, long } => {
                Kind::Bimodal { p, long, short: bimodal_short(p, long) }
            }
            ServiceSpec::Uniform { low, high } => {
                let scale = 2.0 / (low + high);
                let dist = Uniform::new(low * scale, high * scale).map_err(KeyError::unkeyed)?;
                Kind::Uniform { scv: uniform_scv(low, high), dist }
            }
            ServiceSpec::BoundedPareto { alpha, high } => {
                Kind::BoundedPareto(BoundedPareto::new(alpha, high))
            }
            ServiceSpec::Empirical { ref file, ref column } => {
                let path = resolve(base, file);
                let mut values = read_column(&path, column, "service", Order::Any)?;
                let n = values.len() as f64;
                let mean = values.iter().sum::<f64>() / n;
                if mean == 0.0 || !mean.is_finite() {
                    return Err(KeyError::new(
                        "service.file",
                        format!(
                            "column `{column}` of {} has mean {mean}; demands need a positive, \
                             finite mean",
                            path.display()
                        ),
                    ));
                }
                values.iter_mut().for_each(|v| *v /= mean);
                // The resampled distribution is the scaled column itself: its variance is the
                // population variance (divisor n) about its own mean, which is 1 up to rounding.
                let m = values.iter().sum::<f64>() / n;
                let scv = values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n / (m * m);
                Kind::Empirical { values: values.into(), scv }
            }
        };
        Ok(Service { kind })
    }
}

/// Expected draws of a hyperexponential's rare branch over a run below which its mean is carried by
/// a handful of draws (see [`Service::untrusted_mean`]).
const RARE_DRAWS: f64 = 30.0;

/// The bias of a sample mean whose law's rare huge values carry the mean.
const READS_LOW: &str =
    "the mean reads low (the rare huge demands that carry it are mostly missing from a finite run)";

/// SCV of the mean-1 classic Pareto: `1/(alpha (alpha - 2))` for `alpha > 2`, else infinite.
fn pareto_scv(alpha: f64) -> f64 {
    if alpha > 2.0 { 1.0 / (alpha * (alpha - 2.0)) } else { f64::INFINITY }
}

/// SCV of a uniform law on `[low, high]` (any scale): variance `(high - low)^2/12` over the squared
/// mean `((low + high)/2)^2`.
fn uniform_scv(low: f64, high: f64) -> f64 {
    (high - low).powi(2) / (3.0 * (low + high).powi(2))
}

/// The largest `alpha` of a bounded Pareto.
const MAX_BP_ALPHA: f64 = 100.0;
/// The largest `high` of a bounded Pareto (in mean demands).
const MAX_BP_HIGH: f64 = 1e9;

/// The bounded Pareto law on `[low, high]` with tail index `alpha` (Harchol-Balter, *Performance
/// Modeling and Design of Computer Systems*, 2013, §20.3; Crovella & Bestavros' model of web file
/// sizes): density `alpha low^alpha x^-(alpha+1) / (1 - (low/high)^alpha)`. rand_distr has no
/// bounded Pareto, so it is drawn here by inverting its distribution function:
/// `x = low (1 - u (1 - (low/high)^alpha))^(-1/alpha)` for `u` uniform in `[0, 1)`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct BoundedPareto {
    alpha: f64,
    low: f64,
    high: f64,
}

impl BoundedPareto {
    /// The law with tail `alpha` and upper end `high > 1` whose mean is 1: the mean grows with
    /// `low` (from 0 as `low -> 0` to `high` as `low -> high`), so `low` in `(0, 1)` is found by
    /// bisection on `ln low`.
    fn new(alpha: f64, high: f64) -> BoundedPareto {
        let (mut lo, mut hi) = (-745.0f64, 0.0f64);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            let mean = BoundedPareto { alpha, low: mid.exp(), high }.moment(1.0);
            if mean < 1.0 { lo = mid } else { hi = mid }
        }
        BoundedPareto { alpha, low: (0.5 * (lo + hi)).exp(), high }
    }

    /// `E[S^k] = alpha / (alpha - k) * (low^k - low^alpha high^(k-alpha)) / (1 - (low/high)^alpha)`,
    /// and `alpha low^alpha ln(high/low) / (1 - (low/high)^alpha)` at `k = alpha`. The powers are
    /// taken in log space: `low^alpha` underflows and `low^-alpha` overflows long before their
    /// product does, and a NaN there would steer the bisection of [`BoundedPareto::new`] to the
    /// bottom of its range.
    fn moment(&self, k: f64) -> f64 {
        let BoundedPareto { alpha, low, high } = *self;
        let (ln_low, ln_high) = (low.ln(), high.ln());
        let tail = 1.0 - (alpha * (ln_low - ln_high)).exp();
        if (alpha - k).abs() < 1e-9 {
            alpha * (alpha * ln_low).exp() * (ln_high - ln_low) / tail
        } else {
            let cross = (alpha * ln_low + (k - alpha) * ln_high).exp();
            alpha / (alpha - k) * ((k * ln_low).exp() - cross) / tail
        }
    }

    /// Whether the bisection found a law of mean 1 (it cannot when `alpha` is tiny and `high`
    /// huge: the mean stays below 1 for every `low` a double can hold).
    fn has_mean_one(&self) -> bool {
        (self.moment(1.0) - 1.0).abs() < 1e-9
    }

    /// `E[S^2] - 1` (the mean is 1).
    fn scv(&self) -> f64 {
        self.moment(2.0) - 1.0
    }

    /// One draw, by inversion.
    #[inline]
    fn sample(&self, rng: &mut SimRng) -> f64 {
        let u: f64 = rng.random();
        let tail = 1.0 - (self.low / self.high).powf(self.alpha);
        (self.low * (1.0 - u * tail).powf(-1.0 / self.alpha)).min(self.high)
    }
}

/// The short demand of a mean-1 bimodal distribution.
fn bimodal_short(p: f64, long: f64) -> f64 {
    (1.0 - p * long) / (1.0 - p)
}

/// A ready sampler for a [`ServiceSpec`]. Cheap to clone (an empirical column is shared).
#[derive(Debug, Clone)]
pub struct Service {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Exp,
    Det,
    Erlang { k: f64, gamma: Gamma<f64> },
    Hyperexp { scv: f64, p1: f64, mean1: f64, mean2: f64 },
    Lognormal { scv: f64, dist: LogNormal<f64> },
    Pareto { alpha: f64, dist: Pareto<f64> },
    Bimodal { p: f64, long: f64, short: f64 },
    Uniform { scv: f64, dist: Uniform<f64> },
    BoundedPareto(BoundedPareto),
    Empirical { values: Arc<[f64]>, scv: f64 },
}

impl Default for Service {
    /// `Exp(1)`.
    fn default() -> Self {
        Service { kind: Kind::Exp }
    }
}

impl Service {
    /// One demand (mean 1).
    ///
    /// For `exp` this is exactly `rng.sample(Exp1)`, one draw and nothing else, so that a
    /// simulation drawing `Exp(1)` demands directly and one going through [`Service`] consume
    /// the same stream and give the same numbers. `det` draws nothing.
    #[inline]
    pub fn demand(&self, rng: &mut SimRng) -> f64 {
        match &self.kind {
            Kind::Exp => rng.sample(Exp1),
            Kind::Det => 1.0,
            Kind::Erlang { gamma, .. } => rng.sample(gamma),
            Kind::Hyperexp { p1, mean1, mean2, .. } => {
                let mean = if rng.random::<f64>() < *p1 { mean1 } else { mean2 };
                mean * rng.sample::<f64, _>(Exp1)
            }
            Kind::Lognormal { dist, .. } => rng.sample(dist),
            Kind::Pareto { dist, .. } => rng.sample(dist),
            Kind::Bimodal { p, long, short } => {
                if rng.random::<f64>() < *p {
                    *long
                } else {
                    *short
                }
            }
            Kind::Uniform { dist, .. } => rng.sample(dist),
            Kind::BoundedPareto(bp) => bp.sample(rng),
            Kind::Empirical { values, .. } => values[rng.random_range(0..values.len())],
        }
    }

    /// Whether this is `Exp(1)` (the model of Part I, with closed forms).
    pub fn is_exp(&self) -> bool {
        matches!(self.kind, Kind::Exp)
    }

    /// The squared coefficient of variation: exact for the parametric kinds (`f64::INFINITY` for
    /// pareto with `alpha <= 2`), the column's own for empirical (population variance over the
    /// squared mean of the scaled values).
    pub fn scv(&self) -> f64 {
        match self.kind {
            Kind::Exp => 1.0,
            Kind::Det => 0.0,
            Kind::Erlang { k, .. } => 1.0 / k,
            Kind::Hyperexp { scv, .. } | Kind::Lognormal { scv, .. } => scv,
            Kind::Pareto { alpha, .. } => pareto_scv(alpha),
            Kind::Bimodal { p, long, short } => p * long * long + (1.0 - p) * short * short - 1.0,
            Kind::Uniform { scv, .. } => scv,
            Kind::BoundedPareto(bp) => bp.scv(),
            Kind::Empirical { scv, .. } => scv,
        }
    }

    /// `E[S^2] = 1 + scv` (the mean is 1), as the Pollaczek-Khinchine formula needs it;
    /// infinite where the variance is.
    pub fn second_moment(&self) -> f64 {
        1.0 + self.scv()
    }

    /// Whether the variance is infinite (pareto with `alpha <= 2`): there the mean waiting time
    /// of M/G/1 diverges and no interval on it should be trusted.
    pub fn infinite_variance(&self) -> bool {
        self.scv().is_infinite()
    }

    /// Why a t interval on the mean wait of a run that measures `demands` requests in all (over
    /// every replication) would print false confidence, when the variance is finite; `None` when
    /// it would not. Either way the sample mean reads low: the rare huge demands that carry the
    /// mean are mostly missing from a finite run.
    ///
    /// - pareto with `2 < alpha <= 3`: `E[S^3]` is infinite, so the waiting time has a finite mean
    ///   but an infinite variance, and replication means are not near normal at any run length.
    /// - hyperexp, when the run expects fewer than [`RARE_DRAWS`] demands from its rare branch:
    ///   with balanced means that branch carries half the mean demand and nearly all of `E[S^2]`,
    ///   hence of the mean wait (Pollaczek-Khinchine). Its draws in the run are Poisson with that
    ///   expectation, each an exponential, so their share of the mean has a relative spread of
    ///   `sqrt(2 / m)` for `m` expected draws (over a quarter below 30), and below a few the run
    ///   most likely saw none: `scv = 1e9` on 2e4 requests reads a mean wait near 0.5, the
    ///   frequent branch's demand alone. What the run can observe decides, not a fixed `scv`: the
    ///   same law on a run long enough to draw its rare branch tens of times is measured.
    pub fn untrusted_mean(&self, demands: f64) -> Option<String> {
        match self.kind {
            Kind::Pareto { alpha, .. } if alpha > 2.0 && alpha <= 3.0 => Some(format!(
                "infinite variance of the wait (pareto alpha = {alpha} <= 3: E[S^3] is infinite): \
                 no interval; {READS_LOW}"
            )),
            Kind::Hyperexp { scv, p1, .. } if (1.0 - p1) * demands < RARE_DRAWS => {
                let m = (1.0 - p1) * demands;
                Some(format!(
                    "the rare branch of hyperexp scv = {scv} carries the mean and is drawn about \
                     {} times in the run: no interval; {READS_LOW}; lengthen the run",
                    crate::output::table::format_number(m)
                ))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::StreamKey;
    use crate::workload::csv_column::TempDir;
    use crate::workload::tests::Moments;

    fn rng(label: &str) -> SimRng {
        StreamKey::new(7, label).rng()
    }

    fn build(spec: ServiceSpec) -> Service {
        spec.build(Path::new(".")).unwrap()
    }

    /// `n` demands' mean and variance about the true mean 1.
    fn moments(s: &Service, n: usize, label: &str) -> Moments {
        let mut r = rng(label);
        Moments::about(1.0, (0..n).map(|_| s.demand(&mut r)))
    }

    #[test]
    fn exp_is_exactly_one_exp1_draw() {
        let s = build(ServiceSpec::Exp);
        assert!(s.is_exp());
        let (mut a, mut b) = (rng("exp"), rng("exp"));
        for _ in 0..10_000 {
            let want: f64 = b.sample(Exp1);
            assert_eq!(s.demand(&mut a).to_bits(), want.to_bits());
        }
    }

    #[test]
    fn det_is_one_and_draws_nothing() {
        let s = build(ServiceSpec::Det);
        let (mut a, b) = (rng("det"), rng("det"));
        assert_eq!(s.demand(&mut a), 1.0);
        assert_eq!(a, b);
        assert_eq!((s.scv(), s.second_moment()), (0.0, 1.0));
    }

    #[test]
    fn each_kind_has_mean_one_and_its_nominal_scv() {
        // n = 10^6 draws each. The mean's standard error is sqrt(scv/n) (<= 0.0016 here), the
        // variance estimator's (mean of (x-1)^2, the true mean being 1) is sqrt((m4 - v^2)/n)
        // with m4 the sample's fourth central moment. Both are asserted within 4 standard errors:
        // the seeds are fixed, so a pass is deterministic, and 4 SE would fail by chance with
        // probability 6e-5 for another seed.
        let n = 1_000_000;
        let cases = [
            ServiceSpec::Exp,
            ServiceSpec::Erlang { k: 1 },
            ServiceSpec::Erlang { k: 4 },
            ServiceSpec::Hyperexp { scv: 4.0 },
            ServiceSpec::Hyperexp { scv: 1.5 },
            ServiceSpec::Lognormal { scv: 1.5 },
            ServiceSpec::Lognormal { scv: 0.25 },
            ServiceSpec::Bimodal { p: 0.1, long: 5.0 },
            ServiceSpec::Uniform { low: 0.0, high: 2.0 },
            ServiceSpec::Uniform { low: 1.0, high: 3.0 },
            ServiceSpec::BoundedPareto { alpha: 1.5, high: 30.0 },
            ServiceSpec::BoundedPareto { alpha: 1.0, high: 100.0 },
            // Steep tails: low^alpha and low^-alpha overflow apart where their product does not.
            ServiceSpec::BoundedPareto { alpha: 3.0, high: 30.0 },
            ServiceSpec::BoundedPareto { alpha: 10.0, high: 10.0 },
            ServiceSpec::BoundedPareto { alpha: 100.0, high: 2.0 },
        ];
        for spec in cases {
            let s = build(spec.clone());
            assert_eq!(s.scv(), spec.scv(), "{spec:?}");
            assert_eq!(s.second_moment(), 1.0 + spec.scv());
            let m = moments(&s, n, &format!("{spec:?}"));
            let se_mean = (spec.scv() / n as f64).sqrt();
            assert!((m.mean - 1.0).abs() < 4.0 * se_mean, "{spec:?}: mean {}", m.mean);
            assert!(
                (m.var - spec.scv()).abs() < 4.0 * m.var_se(),
                "{spec:?}: scv {} vs {} (se {})",
                m.var,
                spec.scv(),
                m.var_se()
            );
        }
    }

    #[test]
    fn bimodal_takes_its_two_values() {
        let spec = ServiceSpec::Bimodal { p: 0.1, long: 5.0 };
        let s = build(spec.clone());
        // short = (1 - 0.5)/0.9 = 5/9; E[S^2] = 0.1*25 + 0.9*25/81 = 2.5 + 25/90.
        assert!((spec.scv() - (2.5 + 25.0 / 90.0 - 1.0)).abs() < 1e-12);
        let mut r = rng("bimodal");
        for _ in 0..1000 {
            let d = s.demand(&mut r);
            assert!(d == 5.0 || d == bimodal_short(0.1, 5.0), "{d}");
        }
    }

    #[test]
    fn pareto_has_mean_one_and_reports_infinite_variance() {
        // alpha = 3: variance 1/(alpha (alpha - 2)) = 1/3 is finite, so the sample mean of
        // n = 10^6 draws has standard error sqrt(1/3 / n) = 5.8e-4; asserted within 4 SE. Its
        // fourth moment is infinite, so the sample variance is not checked.
        let s = build(ServiceSpec::Pareto { alpha: 3.0 });
        assert!((s.scv() - 1.0 / 3.0).abs() < 1e-15 && !s.infinite_variance());
        let n = 1_000_000;
        let m = moments(&s, n, "pareto");
        assert!((m.mean - 1.0).abs() < 4.0 * (1.0 / 3.0 / n as f64).sqrt(), "mean {}", m.mean);
        // The minimum of the classic Pareto is its scale, (alpha - 1)/alpha.
        assert!(m.min >= 2.0 / 3.0, "min {}", m.min);
        for alpha in [1.1, 1.5, 2.0] {
            let spec = ServiceSpec::Pareto { alpha };
            assert_eq!(spec.scv(), f64::INFINITY);
            let s = build(spec);
            assert!(s.infinite_variance() && s.second_moment().is_infinite());
        }
    }

    #[test]
    fn empirical_is_scaled_to_mean_one_and_resampled() {
        let dir = TempDir::new("empirical");
        dir.write("d.csv", "id,ms\n1,10\n2,20\n3,30\n4,40\n");
        let spec = ServiceSpec::Empirical { file: "d.csv".into(), column: "ms".into() };
        assert!(spec.scv().is_nan());
        let s = spec.build(&dir.0).unwrap();
        // Scaled values 0.4, 0.8, 1.2, 1.6: population variance 0.2.
        assert!((s.scv() - 0.2).abs() < 1e-12, "{}", s.scv());
        // Resampling n = 10^6: the mean's standard error is sqrt(0.2/n) = 4.5e-4; 4 SE.
        let n = 1_000_000;
        let m = moments(&s, n, "empirical");
        assert!((m.mean - 1.0).abs() < 4.0 * (0.2 / n as f64).sqrt(), "mean {}", m.mean);
        assert!((m.var - 0.2).abs() < 4.0 * m.var_se(), "var {}", m.var);
        let mut r = rng("empirical-values");
        for _ in 0..100 {
            let d = s.demand(&mut r);
            assert!([0.4, 0.8, 1.2, 1.6].iter().any(|v| (d - v).abs() < 1e-12), "{d}");
        }
        // An absolute path ignores the base.
        let abs = ServiceSpec::Empirical { file: dir.0.join("d.csv"), column: "ms".into() };
        assert!((abs.build(Path::new("/nonexistent")).unwrap().scv() - 0.2).abs() < 1e-12);
    }

    #[test]
    fn empirical_file_errors_name_file_column_and_line() {
        let dir = TempDir::new("empirical-bad");
        dir.write("bad.csv", "demand\n1\nx\n");
        dir.write("zero.csv", "demand\n0\n0\n");
        let build = |file: &str, column: &str| {
            ServiceSpec::Empirical { file: file.into(), column: column.into() }
                .build(&dir.0)
                .unwrap_err()
                .to_string()
        };
        let e = build("bad.csv", "demand");
        assert!(e.starts_with("service.file: ") && e.contains("bad.csv line 3"), "{e}");
        assert!(e.contains("column `demand`") && e.contains("`x`"), "{e}");
        let e = build("bad.csv", "size");
        assert!(e.starts_with("service.column: no column `size`"), "{e}");
        let e = build("zero.csv", "demand");
        assert!(e.starts_with("service.file: ") && e.contains("mean 0"), "{e}");
        let e = build("none.csv", "demand");
        assert!(e.starts_with("service.file: cannot read ") && e.contains("none.csv"), "{e}");
    }

    #[test]
    fn validate_names_the_key_of_each_impossible_value() {
        let cases: [(ServiceSpec, &str); 16] = [
            (ServiceSpec::Erlang { k: 0 }, "service.k: expected an integer >= 1 for erlang, got 0"),
            (
                ServiceSpec::Hyperexp { scv: 0.5 },
                "service.scv: expected a number > 1 for hyperexp, got 0.5",
            ),
            (ServiceSpec::Hyperexp { scv: 1.0 }, "service.scv: "),
            (ServiceSpec::Hyperexp { scv: f64::NAN }, "service.scv: "),
            (ServiceSpec::Hyperexp { scv: f64::INFINITY }, "service.scv: "),
            (
                ServiceSpec::Lognormal { scv: 0.0 },
                "service.scv: expected a number > 0 for lognormal",
            ),
            (ServiceSpec::Lognormal { scv: -1.0 }, "service.scv: "),
            (ServiceSpec::Pareto { alpha: 1.0 }, "service.alpha: expected a number > 1"),
            (ServiceSpec::Pareto { alpha: 0.5 }, "service.alpha: "),
            (ServiceSpec::Bimodal { p: 0.0, long: 2.0 }, "service.p: expected a number in (0, 1)"),
            (ServiceSpec::Bimodal { p: 1.0, long: 2.0 }, "service.p: "),
            (ServiceSpec::Bimodal { p: 0.5, long: 1.0 }, "service.long: expected a number > 1"),
            (
                ServiceSpec::Bimodal { p: 0.5, long: 2.0 },
                "service.long: expected p * long < 1 (so that the short demand is positive) for \
                 bimodal, got p * long = 1",
            ),
            (ServiceSpec::Bimodal { p: 0.5, long: 3.0 }, "service.long: "),
            (ServiceSpec::Empirical { file: "".into(), column: "demand".into() }, "service.file: "),
            (
                ServiceSpec::Empirical { file: "x.csv".into(), column: "".into() },
                "service.column: ",
            ),
        ];
        for (spec, want) in cases {
            let e = spec.validate().unwrap_err();
            assert!(e.to_string().starts_with(want), "{spec:?}: {e}");
            assert!(want.starts_with(&format!("{}: ", e.key)), "{spec:?}: {e:?}");
            assert_eq!(spec.build(Path::new(".")).unwrap_err(), e);
        }
        for ok in [
            ServiceSpec::default(),
            ServiceSpec::Det,
            ServiceSpec::Erlang { k: 1 },
            ServiceSpec::Hyperexp { scv: 1.0001 },
            ServiceSpec::Pareto { alpha: 1.0001 },
            ServiceSpec::Bimodal { p: 0.5, long: 1.999 },
        ] {
            assert_eq!(ok.validate(), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn deserialises_from_tagged_tables_and_refuses_unknown_keys() {
        let de = |s: &str| serde_json::from_str::<ServiceSpec>(s);
        assert_eq!(de(r#"{"kind":"exp"}"#).unwrap(), ServiceSpec::Exp);
        assert_eq!(de(r#"{"kind":"det"}"#).unwrap(), ServiceSpec::Det);
        assert_eq!(de(r#"{"kind":"erlang","k":4}"#).unwrap(), ServiceSpec::Erlang { k: 4 });
        assert_eq!(
            de(r#"{"kind":"hyperexp","scv":4}"#).unwrap(),
            ServiceSpec::Hyperexp { scv: 4.0 }
        );
        assert_eq!(
            de(r#"{"kind":"lognormal","scv":1.5}"#).unwrap(),
            ServiceSpec::Lognormal { scv: 1.5 }
        );
        assert_eq!(
            de(r#"{"kind":"pareto","alpha":1.5}"#).unwrap(),
            ServiceSpec::Pareto { alpha: 1.5 }
        );
        assert_eq!(
            de(r#"{"kind":"bimodal","p":0.1,"long":5}"#).unwrap(),
            ServiceSpec::Bimodal { p: 0.1, long: 5.0 }
        );
        assert_eq!(
            de(r#"{"kind":"empirical","file":"d.csv"}"#).unwrap(),
            ServiceSpec::Empirical { file: "d.csv".into(), column: "demand".into() }
        );
        for bad in [
            r#"{"kind":"erlang","k":4,"scv":2}"#,
            r#"{"kind":"exp","scv":2}"#,
            r#"{"kind":"det","k":1}"#,
            r#"{"kind":"empirical","file":"d.csv","col":"x"}"#,
        ] {
            let e = de(bad).unwrap_err().to_string();
            assert!(e.contains("unknown field"), "{bad}: {e}");
        }
        assert!(de(r#"{"kind":"gauss"}"#).unwrap_err().to_string().contains("unknown variant"));
        assert!(de(r#"{"kind":"erlang"}"#).unwrap_err().to_string().contains("missing field"));
        // Serialising and reading back gives the same spec.
        for spec in [
            ServiceSpec::Exp,
            ServiceSpec::Erlang { k: 3 },
            ServiceSpec::Empirical { file: "a/b.csv".into(), column: "ms".into() },
        ] {
            assert_eq!(de(&serde_json::to_string(&spec).unwrap()).unwrap(), spec);
        }
        assert_eq!(serde_json::to_string(&ServiceSpec::Exp).unwrap(), r#"{"kind":"exp"}"#);
    }
}
