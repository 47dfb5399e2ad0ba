//! The one pseudo-random generator the benchmarks use, so every peer and
//! every run sees the same inputs for one seed.

/// SplitMix64: deterministic, fast, and good enough to scatter deadlines.
///
/// # Examples
/// ```
/// use wheel_bench::rng::SplitMix64;
///
/// let (mut a, mut b) = (SplitMix64(7), SplitMix64(7));
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    ///
    /// # Examples
    /// ```
    /// let mut rng = wheel_bench::rng::SplitMix64(0);
    /// assert_ne!(rng.next_u64(), rng.next_u64());
    /// ```
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (Lemire's multiply-shift; the bias is below
    /// 2⁻⁴⁰ for bounds up to 2²⁴).
    ///
    /// # Examples
    /// ```
    /// let mut rng = wheel_bench::rng::SplitMix64(1);
    /// assert!((0..100).all(|_| rng.below(3) < 3));
    /// ```
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_per_seed_and_is_uniform() {
        let a: Vec<u64> = (0..10_000)
            .scan(SplitMix64(7), |r, _| Some(r.below(10)))
            .collect();
        let b: Vec<u64> = (0..10_000)
            .scan(SplitMix64(7), |r, _| Some(r.below(10)))
            .collect();
        assert_eq!(a, b);
        for v in 0..10 {
            let n = a.iter().filter(|&&x| x == v).count();
            assert!((800..1200).contains(&n), "{v} drawn {n} times of 10000");
        }
        assert!(a.iter().all(|&x| x < 10));
    }
}
