//! Student-t quantiles for 95% confidence intervals over replications.
//!
//! `t_{0.975, df}` is found by bisection on the t distribution's CDF, written through the
//! regularised incomplete beta function `I_x(a, b)` evaluated with its continued fraction
//! (Lentz's method, as in Numerical Recipes §6.4). Accurate to ~1e-12, far below what a
//! confidence interval needs, and free of a statistics dependency.

/// Half-width of the 95% Student-t interval of the mean of `xs`; `None` with fewer than two values.
pub fn ci95_half_width(xs: &[f64]) -> Option<f64> {
    let k = xs.len();
    if k < 2 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / k as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
    Some(t_quantile_975((k - 1) as f64) * (var / k as f64).sqrt())
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile_975(df: f64) -> f64 {
    assert!(df > 0.0);
    // P(T > t) = I_{df/(df+t^2)}(df/2, 1/2) / 2; find t where that equals 0.025.
    let upper_tail = |t: f64| 0.5 * inc_beta(df / (df + t * t), df / 2.0, 0.5);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while upper_tail(hi) > 0.025 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if upper_tail(mid) > 0.025 {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-13 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Regularised incomplete beta `I_x(a, b)`.
fn inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(x, a, b) / a
    } else {
        1.0 - front * beta_cf(1.0 - x, b, a) / b
    }
}

/// Continued fraction for the incomplete beta (modified Lentz).
fn beta_cf(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..1000 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, n = 9; relative error ~1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut acc = C[0];
    for (i, &c) in C.iter().enumerate().skip(1) {
        acc += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + acc.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_t_table() {
        // Two-sided 95% critical values from standard tables.
        for (df, want) in [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (4.0, 2.776_445_105),
            (9.0, 2.262_157_163),
            (29.0, 2.045_229_642),
            (1000.0, 1.962_339_081),
        ] {
            let got = t_quantile_975(df);
            assert!((got - want).abs() < 1e-6, "df {df}: {got} vs {want}");
        }
    }

    #[test]
    fn half_width_of_a_known_sample() {
        // Mean 3, sample sd sqrt(2.5), k = 5: 2.776445 * sqrt(2.5 / 5).
        let hw = ci95_half_width(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert!((hw - 2.776_445_105 * 0.5f64.sqrt()).abs() < 1e-6);
        assert_eq!(ci95_half_width(&[1.0]), None);
    }
}
