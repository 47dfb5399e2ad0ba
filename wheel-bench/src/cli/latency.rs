//! Latencies in nanoseconds, kept in an HdrHistogram: the `delay`
//! experiment's lateness and the `redis` experiment's time per op. Each
//! recording thread keeps a histogram of its own; they are added together
//! at the end, and travel from the child to the parent as the values and
//! counts of their non-empty buckets.

use hdrhistogram::Histogram;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The largest latency told apart from larger ones: an hour, the longest
/// delay or timeout the flags allow. Anything later is counted as an hour.
const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Significant figures: a value is reported within 1 % above its truth,
/// and a histogram over the whole range is about 36 KiB, so each of the
/// `redis` experiment's hundreds of callers can keep its own.
const SIGNIFICANT_FIGURES: u8 = 2;

/// A histogram of latencies in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Latency(Histogram<u64>);

impl Default for Latency {
    fn default() -> Self {
        // The bounds are constants that the crate accepts.
        Latency(
            Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_FIGURES)
                .expect("valid histogram bounds"),
        )
    }
}

impl Latency {
    /// Counts one latency; above an hour, as an hour.
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns);
    }

    /// Adds every count of `other`.
    pub fn add(&mut self, other: &Latency) {
        // Both have the same bounds, so every value of `other` fits.
        self.0.add(&other.0).expect("histograms of the same bounds");
    }

    /// Latencies counted.
    pub fn total(&self) -> u64 {
        self.0.len()
    }

    /// The latency that a fraction `q` of those counted did not exceed, as
    /// the top of its bucket; 0 when empty.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.0.is_empty() {
            return 0;
        }
        self.0.value_at_quantile(q.clamp(0.0, 1.0))
    }

    /// The largest latency, as the top of its bucket; 0 when empty.
    pub fn max_ns(&self) -> u64 {
        self.0.max()
    }

    /// `(latency ns, fraction counted at or below it)` at each non-empty
    /// bucket's top: the cumulative distribution.
    pub fn cdf(&self) -> Vec<(u64, f64)> {
        let total = self.total() as f64;
        let mut seen = 0;
        (self.0.iter_recorded())
            .map(|v| {
                seen += v.count_at_value();
                (v.value_iterated_to(), seen as f64 / total)
            })
            .collect()
    }
}

impl Serialize for Latency {
    /// As `[[value, count], ...]` over the non-empty buckets.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            (self.0.iter_recorded()).map(|v| (v.value_iterated_to(), v.count_at_value())),
        )
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut latency = Latency::default();
        for (ns, count) in Vec::<(u64, u64)>::deserialize(deserializer)? {
            (latency.0.record_n(ns, count)).map_err(serde::de::Error::custom)?;
        }
        Ok(latency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[(u64, u64)]) -> Latency {
        let mut latency = Latency::default();
        for &(ns, n) in values {
            for _ in 0..n {
                latency.record(ns);
            }
        }
        latency
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        // 98 at 10 ns, one at 1 ms, one at 2 ms.
        let latency = of(&[(10, 98), (1_000_000, 1), (2_000_000, 1)]);
        assert_eq!(latency.total(), 100);
        assert_eq!(latency.quantile_ns(0.5), 10);
        assert_eq!(latency.quantile_ns(0.98), 10);
        let p99 = latency.quantile_ns(0.99);
        assert!((1_000_000..=1_010_000).contains(&p99), "{p99}");
        let max = latency.max_ns();
        assert!((2_000_000..=2_020_000).contains(&max), "{max}");
        let cdf = latency.cdf();
        assert_eq!(cdf.len(), 3);
        assert_eq!(cdf[0], (10, 0.98));
        assert_eq!(cdf[2], (max, 1.0));
        assert_eq!(Latency::default().quantile_ns(0.99), 0);
        assert_eq!(Latency::default().max_ns(), 0);
    }

    #[test]
    fn beyond_an_hour_counts_as_an_hour() {
        let latency = of(&[(u64::MAX, 1)]);
        assert_eq!(latency.total(), 1);
        assert!(latency.max_ns() >= HIGHEST_NS);
    }

    #[test]
    fn adds_and_travels_as_json() {
        let mut a = of(&[(0, 3), (1_500, 2)]);
        a.add(&of(&[(7_000_000_000, 1)]));
        assert_eq!(a.total(), 6);
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.starts_with("[[0,3],"), "{json}");
        let back: Latency = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
        assert!(serde_json::from_str::<Latency>("[[1,2,3]]").is_err());
    }
}
