//! Closed forms the simulations are checked against (in tests and in the reproduced results).

/// Mean sojourn of M/M/1 at utilisation `rho` (service rate 1): `1 / (1 - rho)`.
pub fn mm1_mean(rho: f64) -> f64 {
    1.0 / (1.0 - rho)
}

/// The `q`-quantile of the M/M/1 sojourn, which is `Exp(1 - rho)`: `-ln(1 - q) / (1 - rho)`.
pub fn mm1_quantile(rho: f64, q: f64) -> f64 {
    -(1.0 - q).ln() / (1.0 - rho)
}

/// Asymptotic variance constant of the customer-average *waiting* time in M/M/1 (service rate 1):
/// `N * Var(mean of N waits) -> rho (2 + 5 rho - 4 rho^2 + rho^3) / (1 - rho)^4`
/// (Whitt, *Planning queueing simulations*, Management Science 35(11), 1989).
pub fn mm1_wait_variance_constant(rho: f64) -> f64 {
    rho * (2.0 + 5.0 * rho - 4.0 * rho * rho + rho.powi(3)) / (1.0 - rho).powi(4)
}

/// `sigma` of the E_k/M/1 queue: each of `n = k` round-robin servers sees every k-th arrival of a
/// Poisson stream, so its interarrival time is Erlang(k) with mean `1 / rho` (service rate 1).
/// `sigma` is the root in (0, 1) of `sigma = (k rho / (k rho + 1 - sigma))^k`, the probability that
/// an arrival finds the server busy; the sojourn is `Exp(1 - sigma)` (GI/M/1, Kleinrock vol. 1 §6.4).
pub fn ekm1_sigma(k: u32, rho: f64) -> f64 {
    let k = f64::from(k);
    let f = |s: f64| (k * rho / (k * rho + 1.0 - s)).powf(k);
    // Iterating from 0 increases monotonically to the smallest root, which is the one in (0, 1).
    let mut s = 0.0;
    for _ in 0..100_000 {
        let next = f(s);
        if (next - s).abs() < 1e-15 {
            return next;
        }
        s = next;
    }
    s
}

/// Mean sojourn of E_k/M/1: `1 / (1 - sigma)`.
pub fn ekm1_mean(k: u32, rho: f64) -> f64 {
    1.0 / (1.0 - ekm1_sigma(k, rho))
}

/// The `q`-quantile of the E_k/M/1 sojourn.
pub fn ekm1_quantile(k: u32, rho: f64, q: f64) -> f64 {
    -(1.0 - q).ln() / (1.0 - ekm1_sigma(k, rho))
}

/// Erlang C: the probability of waiting in M/M/n with offered load `a = n rho` (service rate 1).
pub fn erlang_c(n: u32, rho: f64) -> f64 {
    let a = f64::from(n) * rho;
    // Erlang B by its stable recursion, then C = B / (1 - rho (1 - B)).
    let mut b = 1.0;
    for k in 1..=n {
        b = a * b / (f64::from(k) + a * b);
    }
    b / (1.0 - rho * (1.0 - b))
}

/// Mean sojourn of M/M/n at per-server utilisation `rho`: `1 + C / (n (1 - rho))`. No dispatcher
/// that must commit a request to one server's FIFO queue on arrival can do better than this
/// central queue, so it bounds `jsq` from below.
pub fn mmn_mean(n: u32, rho: f64) -> f64 {
    1.0 + erlang_c(n, rho) / (f64::from(n) * (1.0 - rho))
}

/// The supermarket model's fixed point `s_i = lambda^((d^i - 1)/(d - 1))` (`lambda^i` for `d = 1`):
/// the fraction of servers with at least `i` requests as `n -> inf` (Mitzenmacher's survey,
/// Lemma 15; Vvedenskaya, Dobrushin and Karpelevich 1996).
pub fn fixed_point(lambda: f64, d: u32, i: u32) -> f64 {
    // (d^i - 1)/(d - 1) = 1 + d + ... + d^(i-1), summed in floating point to avoid overflow.
    let exponent: f64 = (0..i).map(|k| f64::from(d).powi(k as i32)).sum();
    lambda.powf(exponent)
}

/// Mean sojourn at the fixed point, `T_d(lambda) = (1/lambda) * sum_{i>=1} s_i` (Little's law).
pub fn fixed_point_mean(lambda: f64, d: u32) -> f64 {
    let mut sum = 0.0;
    for i in 1.. {
        let s = fixed_point(lambda, d, i);
        sum += s;
        if s < 1e-17 * sum {
            break;
        }
    }
    sum / lambda
}

/// Mean sojourn of an M/G/1 queue with service rate 1 (mean service 1) at utilisation `rho`,
/// whose service time has squared coefficient of variation `scv`: Pollaczek-Khinchine,
/// `1 + rho (1 + scv) / (2 (1 - rho))`.
pub fn mg1_mean(rho: f64, scv: f64) -> f64 {
    1.0 + rho * (1.0 + scv) / (2.0 * (1.0 - rho))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_closed_forms() {
        assert_eq!(fixed_point(0.9, 1, 3), 0.9f64.powi(3));
        assert!((fixed_point(0.9, 2, 4) - 0.9f64.powi(15)).abs() < 1e-15);
        // The article's theory values for d = 2, lambda = 0.9.
        assert!((fixed_point(0.9, 2, 4) - 0.2059).abs() < 1e-4);
        assert!((fixed_point(0.9, 2, 6) - 0.00131).abs() < 1e-5);
        // d = 1 is M/M/1.
        assert!((fixed_point_mean(0.9, 1) - 10.0).abs() < 1e-9);
        assert!((fixed_point_mean(0.5, 1) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn ekm1_reduces_to_mm1_for_k_1() {
        // k = 1: exponential interarrivals, sigma = rho.
        for rho in [0.3, 0.5, 0.9] {
            assert!((ekm1_sigma(1, rho) - rho).abs() < 1e-9);
        }
        // More regular arrivals wait less.
        assert!(ekm1_mean(100, 0.9) < mm1_mean(0.9));
        assert!(ekm1_sigma(100, 0.9) > 0.0);
    }

    #[test]
    fn mmn_reduces_to_mm1_for_one_server() {
        assert!((erlang_c(1, 0.7) - 0.7).abs() < 1e-12);
        assert!((mmn_mean(1, 0.7) - mm1_mean(0.7)).abs() < 1e-12);
        assert!(mmn_mean(100, 0.9) < mm1_mean(0.9));
    }
}
