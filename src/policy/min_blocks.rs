//! Values with the minimum of every block of eight kept up to date, so the lowest value, the
//! first from any start in the rotation, is found over the blocks' minima and one block rather
//! than over every value: a ranking that changes a few values per request reads `n / 8 + 16`
//! values, not `n`.

/// Values per block.
const BLOCK: usize = 8;

/// Values (none NaN) and, per block of [`BLOCK`], a value of the block equal (`==`) to its
/// lowest.
#[derive(Debug, Clone, PartialEq)]
pub struct MinBlocks {
    values: Vec<f64>,
    mins: Vec<f64>,
}

impl MinBlocks {
    /// `n` copies of `value`.
    pub fn new(n: usize, value: f64) -> Self {
        MinBlocks { values: vec![value; n], mins: vec![value; n.div_ceil(BLOCK)] }
    }

    /// The `i`-th value.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        self.values[i]
    }

    /// Sets the `i`-th value, and its block's minimum: unchanged unless the new value is lower
    /// or the old one was the lowest (then the block is read again).
    #[inline]
    pub fn set(&mut self, i: usize, value: f64) {
        debug_assert!(!value.is_nan(), "a NaN value");
        let old = std::mem::replace(&mut self.values[i], value);
        let b = i / BLOCK;
        let min = self.mins[b];
        if value <= min {
            self.mins[b] = value;
        } else if old == min {
            let block = self.block(b);
            self.mins[b] = match <&[f64; BLOCK]>::try_from(block) {
                Ok(whole) => min_of_eight(whole),
                Err(_) => min_of(block),
            };
        }
    }

    /// The values of block `b`.
    #[inline]
    fn block(&self, b: usize) -> &[f64] {
        &self.values[b * BLOCK..(b * BLOCK + BLOCK).min(self.values.len())]
    }

    /// The position of the lowest value, the first from `start` in the rotation `start..n`
    /// then `0..start` when several are lowest (equal with `==`, as a scan keeping the first
    /// strictly lower value leaves equal values, 0 and -0 included, to the first): the rest of
    /// `start`'s block, then the first later block holding the lowest, else the first block
    /// from the beginning, else `start`'s block before `start`. Each block is compared at once,
    /// to a mask of the values equal to the lowest, without a branch per value.
    pub fn lowest_from(&self, start: usize) -> usize {
        let low = min_of(&self.mins);
        let (b0, offset) = (start / BLOCK, start % BLOCK);
        let here = self.matches(b0, low);
        if here >> offset != 0 {
            return start + (here >> offset).trailing_zeros() as usize;
        }
        let at = |b: usize, mask: u32| b * BLOCK + mask.trailing_zeros() as usize;
        let later = self.mins[b0 + 1..].iter().position(|&m| m == low).map(|b| b0 + 1 + b);
        match later.or_else(|| self.mins[..b0].iter().position(|&m| m == low)) {
            Some(b) => at(b, self.matches(b, low)),
            None => at(b0, here),
        }
    }

    /// Bit `k` set where the `k`-th value of block `b` equals `low`.
    #[inline]
    fn matches(&self, b: usize, low: f64) -> u32 {
        let block = self.block(b);
        let mask = |block: &[f64]| {
            let mut mask = 0;
            for (k, &v) in block.iter().enumerate() {
                mask |= u32::from(v == low) << k;
            }
            mask
        };
        // A whole block as an array, whose comparisons the compiler makes two at a time.
        match <&[f64; BLOCK]>::try_from(block) {
            Ok(whole) => mask(whole),
            Err(_) => mask(block),
        }
    }
}

/// The lesser of two values (none NaN).
#[inline]
fn lesser(a: f64, b: f64) -> f64 {
    if b < a { b } else { a }
}

/// The lowest of `values` (none NaN; infinity for none), over eight running minima (four
/// chains of two-wide minima, which keep the unit busy while each waits on its last) folded
/// pairwise, rather than one chain of comparisons each waiting on the one before.
#[inline]
fn min_of(values: &[f64]) -> f64 {
    let mut lanes = [f64::INFINITY; 8];
    let chunks = values.chunks_exact(8);
    // Not copied in (a copy of a few values becomes a call to `memcpy`, whose stores the
    // loads below wait on).
    for (lane, &v) in lanes.iter_mut().zip(chunks.remainder()) {
        *lane = lesser(*lane, v);
    }
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane = lesser(*lane, v);
        }
    }
    min_of_eight(&lanes)
}

/// The lowest of eight values (none NaN), pairwise: two values at a time, three steps deep.
#[inline]
fn min_of_eight(&[a, b, c, d, e, f, g, h]: &[f64; 8]) -> f64 {
    lesser(lesser(lesser(a, b), lesser(c, d)), lesser(lesser(e, f), lesser(g, h)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::SimRng;
    use rand::RngExt;

    /// The scan it stands for: the first strictly lower value in the rotation from `start`.
    pub(crate) fn scan(values: &[f64], start: usize) -> usize {
        let mut best = start;
        for s in (start + 1..values.len()).chain(0..start) {
            if values[s] < values[best] {
                best = s;
            }
        }
        best
    }

    /// After every one of many random changes (1 to 40 values, so every remainder of a block
    /// and up to five blocks; values from a few, zeros of both signs and infinities among them,
    /// so ties and changes of a block's lowest are common), every block's minimum is its lowest
    /// value and `lowest_from` every start finds what the scan finds. Exact.
    #[test]
    fn the_lowest_from_a_start_is_the_first_lowest_in_the_rotation() {
        let choices = [0.0, -0.0, 1.5, 2.0, -3.0, f64::INFINITY, f64::NEG_INFINITY];
        let mut rng = <SimRng as rand::SeedableRng>::seed_from_u64(13);
        for _ in 0..400 {
            let n = rng.random_range(1..=40);
            let mut blocks = MinBlocks::new(n, f64::INFINITY);
            for _ in 0..30 {
                let i = rng.random_range(0..n);
                blocks.set(i, choices[rng.random_range(0..choices.len())]);
                for (b, &m) in blocks.mins.iter().enumerate() {
                    let block = blocks.block(b);
                    assert!(block.contains(&m) && block.iter().all(|&v| v >= m), "{blocks:?}");
                }
                for start in 0..n {
                    let values = &blocks.values;
                    assert_eq!(blocks.lowest_from(start), scan(values, start), "{values:?}");
                }
            }
        }
    }
}
