//! Arrival processes: Poisson, gamma renewal, two-state MMPP and trace replay.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::RngExt;
use rand_distr::{Exp1, Gamma};
use serde::{Deserialize, Serialize};

use super::csv_column::{Order, read_column, resolve};
use crate::error::KeyError;
use crate::rng::SimRng;

fn time_column() -> String {
    "time".to_string()
}

/// How requests arrive.
///
/// The total rate of a parametric kind is given either as `load`, a fraction of the farm's
/// capacity (the sum over servers of rate times slots; [`ArrivalSpec::build`] multiplies), or as
/// `rate`, requests per unit of time. Written in a scenario as a table tagged by `kind`, e.g.
/// `{ kind = "renewal", load = 0.8, scv = 4 }`; unknown keys are refused. See the
/// [module docs](super) for what each kind models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum ArrivalSpec {
    /// A Poisson stream: exponential gaps.
    Poisson {
        /// The rate as a fraction of the farm's capacity.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        load: Option<f64>,
        /// The rate in requests per unit of time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate: Option<f64>,
    },
    /// A renewal process with gamma-distributed gaps.
    Renewal {
        /// The rate as a fraction of the farm's capacity.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        load: Option<f64>,
        /// The rate in requests per unit of time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate: Option<f64>,
        /// The gaps' squared coefficient of variation, `>= 0`: 0 is deterministic gaps, 1 is
        /// Poisson in distribution, above 1 is burstier than Poisson.
        scv: f64,
    },
    /// A two-state Markov-modulated Poisson process (bursts).
    Mmpp2 {
        /// The time-average rate as a fraction of the farm's capacity.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        load: Option<f64>,
        /// The time-average rate in requests per unit of time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate: Option<f64>,
        /// The high state's rate over the low state's, `>= 1`.
        ratio: f64,
        /// Mean time in the high state (sojourns are exponential), `> 0`.
        high_time: f64,
        /// Mean time in the low state, `> 0`.
        low_time: f64,
    },
    /// Replay of absolute timestamps from a CSV column; the run ends when the trace does.
    Trace {
        /// The CSV file (a header row, then one record per line); relative to the scenario file.
        file: PathBuf,
        /// The column of timestamps (non-decreasing, `>= 0`).
        #[serde(default = "time_column")]
        column: String,
    },
}

impl Default for ArrivalSpec {
    /// Poisson with neither `load` nor `rate`: the caller fills in its default load.
    fn default() -> Self {
        ArrivalSpec::Poisson { load: None, rate: None }
    }
}

/// `Err` for a parameter outside its domain: `arrivals.KEY: expected WHAT, got VALUE`.
fn bad(key: &str, what: &str, got: impl std::fmt::Display) -> Result<(), KeyError> {
    let got = crate::output::table::shown_number(got);
    Err(KeyError::new(format!("arrivals.{key}"), format!("expected {what}, got {got}")))
}

impl ArrivalSpec {
    /// The process's own time scale, where it has one longer than its gaps: the mean modulation
    /// cycle `high_time + low_time` of mmpp2; `None` for the renewal kinds and traces.
    pub fn cycle(&self) -> Option<f64> {
        match *self {
            ArrivalSpec::Mmpp2 { high_time, low_time, .. } => Some(high_time + low_time),
            _ => None,
        }
    }

    /// `(load, rate)` of a parametric kind, `None` for a trace.
    /// `(load, rate)` as given, for the parametric kinds; `None` for a trace.
    pub fn load_rate(&self) -> Option<(Option<f64>, Option<f64>)> {
        match *self {
            ArrivalSpec::Poisson { load, rate }
            | ArrivalSpec::Renewal { load, rate, .. }
            | ArrivalSpec::Mmpp2 { load, rate, .. } => Some((load, rate)),
            ArrivalSpec::Trace { .. } => None,
        }
    }

    /// The file a trace reads, as written (relative to the scenario file).
    pub fn file(&self) -> Option<&Path> {
        match self {
            ArrivalSpec::Trace { file, .. } => Some(file.as_path()),
            _ => None,
        }
    }

    /// Sets `load` of a parametric kind that has neither `load` nor `rate` (the scenario's
    /// default load); does nothing otherwise, and nothing to a trace.
    pub fn fill_default_load(&mut self, default: f64) {
        match self {
            ArrivalSpec::Poisson { load, rate }
            | ArrivalSpec::Renewal { load, rate, .. }
            | ArrivalSpec::Mmpp2 { load, rate, .. } => {
                if load.is_none() && rate.is_none() {
                    *load = Some(default);
                }
            }
            ArrivalSpec::Trace { .. } => {}
        }
    }

    /// Checks the parameters; `Err(message)` names the key, e.g.
    /// `arrivals.load: expected a number > 0, got -1`.
    ///
    /// A parametric kind needs exactly one of `load` and `rate` (the caller may fill a default
    /// load first). Files are not read here (see [`ArrivalSpec::build`]).
    pub fn validate(&self) -> Result<(), KeyError> {
        match self.load_rate() {
            Some((Some(_), Some(_))) => {
                return Err(KeyError::new(
                    "arrivals",
                    "expected one of `load` and `rate`, got both",
                ));
            }
            Some((None, None)) => {
                return Err(KeyError::new("arrivals.load", "missing (give `load` or `rate`)"));
            }
            Some((Some(load), None)) if !(load > 0.0 && load.is_finite()) => {
                return bad("load", "a number > 0", load);
            }
            Some((None, Some(rate))) if !(rate > 0.0 && rate.is_finite()) => {
                return bad("rate", "a number > 0", rate);
            }
            _ => {}
        }
        match *self {
            ArrivalSpec::Poisson { .. } => {}
            ArrivalSpec::Renewal { scv, .. } => {
                if !(scv >= 0.0 && scv.is_finite()) {
                    return bad("scv", "a number >= 0 for renewal", scv);
                }
            }
            ArrivalSpec::Mmpp2 { ratio, high_time, low_time, .. } => {
                if !(ratio >= 1.0 && ratio.is_finite()) {
                    return bad("ratio", "a number >= 1 for mmpp2", ratio);
                }
                if !(high_time > 0.0 && high_time.is_finite()) {
                    return bad("high_time", "a number > 0 for mmpp2", high_time);
                }
                if !(low_time > 0.0 && low_time.is_finite()) {
                    return bad("low_time", "a number > 0 for mmpp2", low_time);
                }
            }
            ArrivalSpec::Trace { ref file, ref column } => {
                if file.as_os_str().is_empty() {
                    return bad("file", "a file name for trace", "an empty string");
                }
                if column.is_empty() {
                    return bad("column", "a column name for trace", "an empty string");
                }
            }
        }
        Ok(())
    }

    /// Validates, loads a trace (a relative `file` is resolved against `base`, the scenario
    /// file's directory) and builds the process description.
    ///
    /// `capacity` is the farm's capacity, the sum over servers of rate times slots; a `load`
    /// becomes the rate `load * capacity`. A trace's rate is measured from the file:
    /// `(count - 1)/(last - first)`, which needs at least two timestamps and `last > first`.
    pub fn build(&self, capacity: f64, base: &Path) -> Result<Arrivals, KeyError> {
        self.validate()?;
        let rate = match self.load_rate() {
            Some((Some(load), _)) => {
                if !(capacity > 0.0 && capacity.is_finite()) {
                    return Err(KeyError::new(
                        "arrivals.load",
                        format!("needs a farm of positive capacity, got capacity {capacity}"),
                    ));
                }
                load * capacity
            }
            Some((None, Some(rate))) => rate,
            _ => f64::NAN, // a trace: measured below
        };
        let kind = match *self {
            ArrivalSpec::Poisson { .. } => Kind::Poisson,
            ArrivalSpec::Renewal { scv, .. } => {
                if scv == 0.0 {
                    Kind::Deterministic { gap: 1.0 / rate }
                } else {
                    // Gamma(shape 1/scv, scale scv/rate): mean 1/rate, SCV 1/shape = scv.
                    Kind::Renewal(Gamma::new(1.0 / scv, scv / rate).map_err(KeyError::unkeyed)?)
                }
            }
            ArrivalSpec::Mmpp2 { ratio, high_time, low_time, .. } => {
                // Time-average rate (l_h T_h + l_l T_l)/(T_h + T_l) = rate with l_h = ratio l_l.
                let low = rate * (high_time + low_time) / (ratio * high_time + low_time);
                Kind::Mmpp2 {
                    rates: [ratio * low, low],
                    means: [high_time, low_time],
                    p_high: high_time / (high_time + low_time),
                }
            }
            ArrivalSpec::Trace { ref file, ref column } => {
                let path = resolve(base, file);
                let times = read_column(&path, column, "arrivals", Order::NonDecreasing)?;
                let (first, last) = (times[0], times[times.len() - 1]);
                if times.len() < 2 || last <= first {
                    return Err(KeyError::new(
                        "arrivals.file",
                        format!(
                            "column `{column}` of {} needs at least two distinct timestamps to \
                             have a rate, got {} value(s) from {first} to {last}",
                            path.display(),
                            times.len()
                        ),
                    ));
                }
                let trace_rate = (times.len() - 1) as f64 / (last - first);
                return Ok(Arrivals { rate: trace_rate, kind: Kind::Trace(times.into()) });
            }
        };
        Ok(Arrivals { rate, kind })
    }
}

/// A ready arrival-process description. Cheap to clone (a trace is shared).
#[derive(Debug, Clone)]
pub struct Arrivals {
    /// Mean arrival rate (a trace's: measured).
    rate: f64,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Poisson,
    Deterministic {
        gap: f64,
    },
    Renewal(Gamma<f64>),
    /// Index 0 is the high state, 1 the low one.
    Mmpp2 {
        rates: [f64; 2],
        means: [f64; 2],
        p_high: f64,
    },
    Trace(Arc<[f64]>),
}

impl Arrivals {
    /// A Poisson stream of rate `rate`, e.g. Part I's `load * sum(rates)`, without a spec.
    ///
    /// # Panics
    ///
    /// If `rate` is not a finite number > 0 (a caller's bug: specs are checked by `validate`).
    pub fn poisson(rate: f64) -> Arrivals {
        assert!(rate > 0.0 && rate.is_finite(), "a Poisson rate must be > 0, got {rate}");
        Arrivals { rate, kind: Kind::Poisson }
    }

    /// The mean arrival rate (a trace's is measured: `(count - 1)/(last - first)`).
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The offered load on a farm of this capacity: `rate / capacity`.
    pub fn load(&self, capacity: f64) -> f64 {
        self.rate / capacity
    }

    /// Whether this is a Poisson stream (the `poisson` kind only: a renewal with SCV 1 or an
    /// MMPP with ratio 1 has the same law but draws differently).
    pub fn is_poisson(&self) -> bool {
        matches!(self.kind, Kind::Poisson)
    }

    /// The number of arrivals a trace holds; `None` for an unending process.
    pub fn trace_len(&self) -> Option<usize> {
        match &self.kind {
            Kind::Trace(times) => Some(times.len()),
            _ => None,
        }
    }

    /// A trace's timestamps as recorded (not shifted); `None` for a parametric process.
    pub fn trace_times(&self) -> Option<&[f64]> {
        match &self.kind {
            Kind::Trace(times) => Some(times),
            _ => None,
        }
    }

    /// A fresh per-replication generator state (MMPP's current state, the trace's cursor).
    pub fn process(&self) -> ArrivalProcess {
        let state = match &self.kind {
            Kind::Poisson => State::Poisson { rate: self.rate },
            Kind::Deterministic { gap } => State::Deterministic { gap: *gap },
            Kind::Renewal(gamma) => State::Renewal(*gamma),
            Kind::Mmpp2 { rates, means, p_high } => {
                State::Mmpp2 { rates: *rates, means: *means, p_high: *p_high, phase: None }
            }
            Kind::Trace(times) => {
                State::Trace { times: Arc::clone(times), first_gap: 1.0 / self.rate, next: 0 }
            }
        };
        ArrivalProcess { state }
    }
}

/// The per-replication state of an arrival process; made by [`Arrivals::process`].
#[derive(Debug, Clone)]
pub struct ArrivalProcess {
    state: State,
}

#[derive(Debug, Clone)]
enum State {
    Poisson {
        rate: f64,
    },
    Deterministic {
        gap: f64,
    },
    Renewal(Gamma<f64>),
    Mmpp2 {
        rates: [f64; 2],
        means: [f64; 2],
        p_high: f64,
        /// The current state and the time left in it; drawn at the first gap.
        phase: Option<(usize, f64)>,
    },
    Trace {
        times: Arc<[f64]>,
        first_gap: f64,
        /// Index of the next timestamp to replay.
        next: usize,
    },
}

impl ArrivalProcess {
    /// The gap from the previous arrival (from time 0 for the first) to the next one, or `None`
    /// when a trace has ended.
    ///
    /// For Poisson this is exactly `rng.sample(Exp1) / rate`: one draw, divided (not multiplied
    /// by the reciprocal), so that results equal those of code drawing the gaps directly. A
    /// trace's first gap is its mean gap, `1/rate`; after that the gaps are the differences of
    /// consecutive timestamps.
    #[inline]
    pub fn next_gap(&mut self, rng: &mut SimRng) -> Option<f64> {
        match &mut self.state {
            State::Poisson { rate } => {
                let e: f64 = rng.sample(Exp1);
                Some(e / *rate)
            }
            State::Deterministic { gap } => Some(*gap),
            State::Renewal(gamma) => Some(rng.sample(*gamma)),
            State::Mmpp2 { rates, means, p_high, phase } => {
                // The stationary start: the high state with probability T_h/(T_h + T_l), and an
                // exponential time left in it (sojourns are memoryless).
                let (mut s, mut left) = match *phase {
                    Some(p) => p,
                    None => {
                        let s = if rng.random::<f64>() < *p_high { 0 } else { 1 };
                        (s, means[s] * rng.sample::<f64, _>(Exp1))
                    }
                };
                // Race the next arrival in the current state against the state's end; by
                // memorylessness an arrival that loses the race is redrawn in the next state.
                let mut gap = 0.0;
                loop {
                    let e: f64 = rng.sample(Exp1);
                    let a = e / rates[s];
                    if a < left {
                        *phase = Some((s, left - a));
                        return Some(gap + a);
                    }
                    gap += left;
                    s = 1 - s;
                    left = means[s] * rng.sample::<f64, _>(Exp1);
                }
            }
            State::Trace { times, first_gap, next } => {
                let i = *next;
                let gap = match i {
                    0 => *first_gap,
                    _ if i < times.len() => times[i] - times[i - 1],
                    _ => return None,
                };
                *next += 1;
                Some(gap)
            }
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
        StreamKey::new(11, label).rng()
    }

    fn build(spec: ArrivalSpec, capacity: f64) -> Arrivals {
        spec.build(capacity, Path::new(".")).unwrap()
    }

    #[test]
    fn poisson_gap_is_exactly_one_exp1_draw_divided_by_the_rate() {
        // 0.9 * 100.0 is not exactly 90; the gaps must be divided by the product itself.
        let a = build(ArrivalSpec::Poisson { load: Some(0.9), rate: None }, 100.0);
        assert!(a.is_poisson());
        assert_eq!(a.rate(), 0.9 * 100.0);
        assert_eq!(a.load(100.0), 0.9 * 100.0 / 100.0);
        let rate = 0.9 * 100.0;
        let mut p = a.process();
        let (mut r1, mut r2) = (rng("poisson"), rng("poisson"));
        for _ in 0..10_000 {
            let e: f64 = r2.sample(Exp1);
            assert_eq!(p.next_gap(&mut r1).unwrap().to_bits(), (e / rate).to_bits());
        }
        let b = build(ArrivalSpec::Poisson { load: None, rate: Some(7.0) }, 0.0);
        assert_eq!(b.rate(), 7.0);
        assert_eq!(Arrivals::poisson(7.0).process().next_gap(&mut rng("x")), {
            let e: f64 = rng("x").sample(Exp1);
            Some(e / 7.0)
        });
    }

    #[test]
    fn renewal_gaps_have_the_asked_mean_and_scv() {
        // n = 10^6 gaps at rate 2 (mean 0.5). Scaled by the rate, the gaps have mean 1 and
        // variance scv: the mean is asserted within 4 standard errors sqrt(scv/n), the variance
        // (about the true mean 1) within 4 of its estimated standard error sqrt((m4 - v^2)/n).
        let n = 1_000_000;
        for scv in [0.25, 1.0, 4.0] {
            let a = build(ArrivalSpec::Renewal { load: None, rate: Some(2.0), scv }, 1.0);
            assert!(!a.is_poisson() && a.trace_len().is_none());
            let mut p = a.process();
            let mut r = rng("renewal");
            let m = Moments::about(1.0, (0..n).map(|_| 2.0 * p.next_gap(&mut r).unwrap()));
            assert!((m.mean - 1.0).abs() < 4.0 * (scv / n as f64).sqrt(), "scv {scv}: {m:?}");
            assert!((m.var - scv).abs() < 4.0 * m.var_se(), "scv {scv}: {m:?}");
        }
    }

    #[test]
    fn renewal_with_scv_zero_has_constant_gaps() {
        let a = build(ArrivalSpec::Renewal { load: Some(0.5), rate: None, scv: 0.0 }, 4.0);
        assert_eq!(a.rate(), 2.0);
        let (mut p, mut r) = (a.process(), rng("det"));
        let before = r.clone();
        for _ in 0..100 {
            assert_eq!(p.next_gap(&mut r), Some(0.5));
        }
        assert_eq!(r, before, "deterministic gaps draw nothing");
    }

    /// Arrival counts in consecutive windows of length `w` over `windows` windows.
    fn window_counts(p: &mut ArrivalProcess, r: &mut SimRng, w: f64, windows: usize) -> Vec<f64> {
        let mut counts = vec![0.0; windows];
        let mut t = 0.0;
        loop {
            t += p.next_gap(r).unwrap();
            let k = (t / w) as usize;
            if k >= windows {
                return counts;
            }
            counts[k] += 1.0;
        }
    }

    #[test]
    fn mmpp2_has_the_asked_mean_rate_and_is_bursty() {
        // ratio 4, T_h = 1, T_l = 3, mean rate 5: l_l = 5 * 4/7, l_h = 4 l_l.
        let (ratio, t_h, t_l, rate) = (4.0, 1.0, 3.0, 5.0);
        let spec = ArrivalSpec::Mmpp2 {
            load: None,
            rate: Some(rate),
            ratio,
            high_time: t_h,
            low_time: t_l,
        };
        let a = build(spec, 1.0);
        assert_eq!(a.rate(), rate);
        let (mut p, mut r) = (a.process(), rng("mmpp"));
        // The arrival rate is a two-state Markov chain with switching rates 1/T_h, 1/T_l
        // (R = 1/T_h + 1/T_l), stationary variance s2 = (l_h - l_l)^2 pi_h pi_l and
        // autocorrelation e^(-R tau). Integrating the covariance gives the index of dispersion
        // of the count over a window of length t (Heffes & Lucantoni 1986):
        //   I(t) = 1 + 2 s2/(rate R) (1 - (1 - e^(-R t))/(R t)),
        // here I(inf) = 5.13 and I(10) = 4.82; a Poisson stream has I = 1.
        let low = rate * (t_h + t_l) / (ratio * t_h + t_l);
        let (pi_h, big_r) = (t_h / (t_h + t_l), 1.0 / t_h + 1.0 / t_l);
        let s2 = ((ratio - 1.0) * low).powi(2) * pi_h * (1.0 - pi_h);
        let idc = |t: f64| {
            1.0 + 2.0 * s2 / (rate * big_r) * (1.0 - (1.0 - (-big_r * t).exp()) / (big_r * t))
        };
        // Counts over 10^5 windows of length w = 10, a span T = 10^6 (5 * 10^6 arrivals).
        let (w, windows) = (10.0, 100_000);
        let counts = window_counts(&mut p, &mut r, w, windows);
        let m = Moments::of(counts.iter().copied());
        // The total count has variance I(T) rate T, so the measured rate has standard error
        // sqrt(I(inf) rate / T) = 0.0051; asserted within 4 SE.
        let t = w * windows as f64;
        let measured = m.mean / w;
        assert!((measured - rate).abs() < 4.0 * (idc(1e12) * rate / t).sqrt(), "rate {measured}");
        // The windows are nearly independent (correlation time 1/R = 0.75 << w), so the sample
        // variance of the counts has relative standard error about sqrt(2/10^5) = 0.45%, say 1%
        // allowing for the counts' excess kurtosis; 5% is 5 such standard errors.
        let measured_idc = m.var / m.mean;
        assert!((measured_idc / idc(w) - 1.0).abs() < 0.05, "I(w) {measured_idc} vs {}", idc(w));
        // The same statistic for a Poisson stream of the same rate stays near 1 (same bound).
        let (mut q, mut r) = (Arrivals::poisson(rate).process(), rng("mmpp-poisson"));
        let pm = Moments::of(window_counts(&mut q, &mut r, w, windows).into_iter());
        assert!((pm.var / pm.mean - 1.0).abs() < 0.05, "{pm:?}");
    }

    #[test]
    fn mmpp2_with_ratio_one_is_poisson_in_law() {
        // n = 10^6 gaps scaled by the rate: mean 1, variance 1; 4 standard errors as for renewal.
        let spec = ArrivalSpec::Mmpp2 {
            load: Some(0.5),
            rate: None,
            ratio: 1.0,
            high_time: 1.0,
            low_time: 3.0,
        };
        let a = build(spec, 6.0);
        assert_eq!(a.rate(), 3.0);
        let (mut p, mut r) = (a.process(), rng("mmpp1"));
        let n = 1_000_000;
        let m = Moments::about(1.0, (0..n).map(|_| 3.0 * p.next_gap(&mut r).unwrap()));
        assert!((m.mean - 1.0).abs() < 4.0 / (n as f64).sqrt(), "{m:?}");
        assert!((m.var - 1.0).abs() < 4.0 * m.var_se(), "{m:?}");
    }

    #[test]
    fn trace_replays_the_gaps_then_ends() {
        let dir = TempDir::new("trace");
        dir.write("t.csv", "id,time\na,10\nb,10.5\nc,10.5\nd,12\ne,14\n");
        let spec = ArrivalSpec::Trace { file: "t.csv".into(), column: "time".into() };
        let a = spec.build(1.0, &dir.0).unwrap();
        // Four gaps over 4 time units: rate 1; the first arrival comes after the mean gap.
        assert_eq!((a.rate(), a.load(4.0), a.trace_len()), (1.0, 0.25, Some(5)));
        assert!(!a.is_poisson());
        let mut r = rng("trace");
        let before = r.clone();
        for _ in 0..2 {
            let mut p = a.process();
            let gaps: Vec<Option<f64>> = (0..7).map(|_| p.next_gap(&mut r)).collect();
            assert_eq!(
                gaps,
                [Some(1.0), Some(0.5), Some(0.0), Some(1.5), Some(2.0), None, None],
                "each process starts from the beginning"
            );
        }
        assert_eq!(r, before, "a trace draws nothing");
    }

    #[test]
    fn trace_files_are_checked() {
        let dir = TempDir::new("trace-bad");
        dir.write("dec.csv", "time\n1\n2\n1.5\n");
        dir.write("one.csv", "time\n3\n");
        dir.write("flat.csv", "time\n3\n3\n");
        dir.write("ts.csv", "ts\n1\n2\n");
        let err = |file: &str, column: &str| {
            ArrivalSpec::Trace { file: file.into(), column: column.into() }
                .build(1.0, &dir.0)
                .unwrap_err()
                .to_string()
        };
        let e = err("dec.csv", "time");
        assert!(e.starts_with("arrivals.file: ") && e.contains("dec.csv line 4"), "{e}");
        assert!(e.contains("column `time`") && e.contains("must not decrease"), "{e}");
        let e = err("one.csv", "time");
        assert!(e.starts_with("arrivals.file: ") && e.contains("two distinct"), "{e}");
        assert!(err("flat.csv", "time").contains("two distinct"));
        let e = err("ts.csv", "time");
        assert!(e.starts_with("arrivals.column: no column `time`") && e.contains("ts.csv"), "{e}");
        let ok = ArrivalSpec::Trace { file: "ts.csv".into(), column: "ts".into() };
        assert_eq!(ok.build(1.0, &dir.0).unwrap().rate(), 1.0);
        let e = err("nope.csv", "time");
        assert!(e.starts_with("arrivals.file: cannot read ") && e.contains("nope.csv"), "{e}");
    }

    #[test]
    fn validate_names_the_key_of_each_impossible_value() {
        let renewal = |scv| ArrivalSpec::Renewal { load: Some(0.5), rate: None, scv };
        let mmpp = |ratio, high_time, low_time| ArrivalSpec::Mmpp2 {
            load: None,
            rate: Some(1.0),
            ratio,
            high_time,
            low_time,
        };
        let cases = [
            (ArrivalSpec::default(), "arrivals.load: missing (give `load` or `rate`)"),
            (
                ArrivalSpec::Poisson { load: Some(0.5), rate: Some(1.0) },
                "arrivals: expected one of `load` and `rate`, got both",
            ),
            (
                ArrivalSpec::Poisson { load: Some(-1.0), rate: None },
                "arrivals.load: expected a number > 0, got -1",
            ),
            (ArrivalSpec::Poisson { load: Some(0.0), rate: None }, "arrivals.load: "),
            (ArrivalSpec::Poisson { load: Some(f64::NAN), rate: None }, "arrivals.load: "),
            (ArrivalSpec::Poisson { load: None, rate: Some(0.0) }, "arrivals.rate: "),
            (ArrivalSpec::Poisson { load: None, rate: Some(f64::INFINITY) }, "arrivals.rate: "),
            (renewal(-0.5), "arrivals.scv: expected a number >= 0 for renewal, got -0.5"),
            (renewal(f64::INFINITY), "arrivals.scv: "),
            (ArrivalSpec::Renewal { load: None, rate: None, scv: 1.0 }, "arrivals.load: missing"),
            (mmpp(0.5, 1.0, 1.0), "arrivals.ratio: expected a number >= 1 for mmpp2, got 0.5"),
            (mmpp(2.0, 0.0, 1.0), "arrivals.high_time: expected a number > 0 for mmpp2, got 0"),
            (mmpp(2.0, 1.0, -1.0), "arrivals.low_time: "),
            (ArrivalSpec::Trace { file: "".into(), column: "time".into() }, "arrivals.file: "),
            (ArrivalSpec::Trace { file: "t.csv".into(), column: "".into() }, "arrivals.column: "),
        ];
        for (spec, want) in cases {
            let e = spec.validate().unwrap_err();
            assert!(e.to_string().starts_with(want), "{spec:?}: {e}");
            assert!(want.starts_with(&format!("{}: ", e.key)), "{spec:?}: {e:?}");
            assert_eq!(spec.build(1.0, Path::new(".")).unwrap_err(), e);
        }
        let e = ArrivalSpec::Poisson { load: Some(0.5), rate: None }
            .build(0.0, Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("arrivals.load: needs a farm of positive capacity"), "{e}");
        assert_eq!(renewal(0.0).validate(), Ok(()));
        let mut spec = ArrivalSpec::default();
        spec.fill_default_load(0.9);
        assert_eq!(spec, ArrivalSpec::Poisson { load: Some(0.9), rate: None });
        spec.fill_default_load(0.5);
        assert_eq!(spec, ArrivalSpec::Poisson { load: Some(0.9), rate: None }, "a load is kept");
        let mut by_rate = ArrivalSpec::Poisson { load: None, rate: Some(3.0) };
        by_rate.fill_default_load(0.5);
        assert_eq!((spec.validate(), by_rate.validate()), (Ok(()), Ok(())));
        assert_eq!(by_rate, ArrivalSpec::Poisson { load: None, rate: Some(3.0) });
        assert_eq!(mmpp(1.0, 0.1, 100.0).validate(), Ok(()));
    }

    #[test]
    fn deserialises_from_tagged_tables_and_refuses_unknown_keys() {
        let de = |s: &str| serde_json::from_str::<ArrivalSpec>(s);
        assert_eq!(
            de(r#"{"kind":"poisson","load":0.8}"#).unwrap(),
            ArrivalSpec::Poisson { load: Some(0.8), rate: None }
        );
        assert_eq!(de(r#"{"kind":"poisson"}"#).unwrap(), ArrivalSpec::default());
        assert_eq!(
            de(r#"{"kind":"renewal","rate":72,"scv":0}"#).unwrap(),
            ArrivalSpec::Renewal { load: None, rate: Some(72.0), scv: 0.0 }
        );
        assert_eq!(
            de(r#"{"kind":"mmpp2","load":0.7,"ratio":5,"high_time":10,"low_time":90}"#).unwrap(),
            ArrivalSpec::Mmpp2 {
                load: Some(0.7),
                rate: None,
                ratio: 5.0,
                high_time: 10.0,
                low_time: 90.0
            }
        );
        assert_eq!(
            de(r#"{"kind":"trace","file":"trace.csv"}"#).unwrap(),
            ArrivalSpec::Trace { file: "trace.csv".into(), column: "time".into() }
        );
        for bad in [
            r#"{"kind":"poisson","load":0.8,"scv":2}"#,
            r#"{"kind":"renewal","load":0.8,"scv":2,"ratio":1}"#,
            r#"{"kind":"trace","file":"t.csv","load":0.5}"#,
        ] {
            let e = de(bad).unwrap_err().to_string();
            assert!(e.contains("unknown field"), "{bad}: {e}");
        }
        assert!(de(r#"{"kind":"renewal","load":0.8}"#).unwrap_err().to_string().contains("scv"));
        assert!(de(r#"{"kind":"uniform"}"#).unwrap_err().to_string().contains("unknown variant"));
        // Absent load/rate are not written, so that the output reads back (and suits TOML, which
        // has no null).
        let spec = ArrivalSpec::Poisson { load: Some(0.9), rate: None };
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(json, r#"{"kind":"poisson","load":0.9}"#);
        assert_eq!(de(&json).unwrap(), spec);
    }
}
