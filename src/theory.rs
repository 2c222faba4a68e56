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

/// Mean sojourn of M/D/1 (service time 1) at utilisation `rho`: Pollaczek-Khinchine with
/// `scv = 0`, `1 + rho / (2 (1 - rho))`.
pub fn md1_mean(rho: f64) -> f64 {
    mg1_mean(rho, 0.0)
}

/// Blocking probability of M/D/1/K (room for `k >= 1` requests, the one in service included) at
/// offered load `rho` (arrival rate times the service time), any `rho > 0`.
///
/// The M/G/1/K embedded chain (Gross & Harris, *Fundamentals of Queueing Theory*, §5.1.10): at
/// departures the number left is `j = 0..k-1`, and from `i` it moves to `min(max(i - 1, 0) + A,
/// k - 1)` with `A ~ Poisson(rho)` arrivals during one service. With `pi` its stationary law, the
/// time-average probabilities are `p_j = pi_j / (pi_0 + rho)` for `j < k`, and PASTA makes the
/// blocking probability `p_k = 1 - 1 / (pi_0 + rho)`.
///
/// A token bucket of rate `r` and capacity `k` under Poisson arrivals of rate `lambda` is this
/// queue with `rho = lambda / r`: the bucket's deficit `k - tokens`, in units of `1 / r`, is the
/// queue's work left, which drains at rate 1 and grows by one service per admitted request, and a
/// request is admitted exactly when the deficit is at most `k - 1`.
pub fn md1k_blocking(rho: f64, k: usize) -> f64 {
    // a[n] = P(n arrivals in one service), n = 0..k (the last one collects the tail).
    let mut a = vec![0.0; k + 1];
    let mut term = (-rho).exp();
    for (n, slot) in a.iter_mut().enumerate() {
        *slot = term;
        term *= rho / (n + 1) as f64;
    }
    let to = |from: usize, to: usize| -> f64 {
        // P(next = to | now = from), next = min(max(from - 1, 0) + A, k - 1).
        let base = from.saturating_sub(1);
        if to < base {
            0.0
        } else if to < k - 1 {
            a[to - base]
        } else {
            1.0 - a[..(k - 1 - base)].iter().sum::<f64>()
        }
    };
    // pi (P - I) = 0 with sum(pi) = 1: the transposed system, its last equation replaced by the
    // normalisation, solved by Gaussian elimination with partial pivoting.
    let mut m = vec![vec![0.0; k + 1]; k];
    for (row, line) in m.iter_mut().enumerate() {
        for (col, cell) in line.iter_mut().take(k).enumerate() {
            *cell = to(col, row) - if col == row { 1.0 } else { 0.0 };
        }
    }
    m[k - 1] = vec![1.0; k + 1];
    for col in 0..k {
        let pivot = (col..k).max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs())).unwrap();
        m.swap(col, pivot);
        let pivot_row = m[col].clone();
        for (row, line) in m.iter_mut().enumerate() {
            if row != col {
                let f = line[col] / pivot_row[col];
                for (cell, p) in line.iter_mut().zip(&pivot_row).skip(col) {
                    *cell -= f * p;
                }
            }
        }
    }
    let pi0 = m[0][k] / m[0][0];
    1.0 - 1.0 / (pi0 + rho)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md1_is_pollaczek_khinchine_with_no_variance() {
        // Half the M/M/1 waiting time: at rho = 0.8 the wait is 2 (M/M/1: 4), the sojourn 3.
        assert!((md1_mean(0.8) - 3.0).abs() < 1e-12);
        assert!((md1_mean(0.5) - 1.5).abs() < 1e-12);
    }

    #[test]
    fn md1k_blocking_closed_cases() {
        // k = 1 (M/D/1/1, Erlang's loss system with one server): rho / (1 + rho).
        for rho in [0.5, 1.5, 10.0] {
            assert!((md1k_blocking(rho, 1) - rho / (1.0 + rho)).abs() < 1e-12, "{rho}");
        }
        // k = 2 by hand: the embedded chain on {0, 1} has pi_0 = a0 / (a0 + 1 - a0) ... from 0
        // it stays at 0 with a0 = e^-rho, from 1 it goes to 0 with a0 too, so pi_0 = a0.
        for rho in [0.5, 2.0] {
            let a0 = f64::exp(-rho);
            assert!((md1k_blocking(rho, 2) - (1.0 - 1.0 / (a0 + rho))).abs() < 1e-12);
        }
        // Overload: blocking tends to 1 - 1/rho as the room grows.
        assert!((md1k_blocking(2.0, 200) - 0.5).abs() < 1e-9);
    }

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
