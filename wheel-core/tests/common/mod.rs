//! What the integration tests share; each test file uses part of it.
#![allow(dead_code)]

pub mod tasks;

/// Miri is about a thousand times slower: there only `keep` of `items`
/// (clocks, geometries, levels), evenly spaced, first and last included,
/// since the extremes matter most.
pub fn sample<T: Copy>(items: &[T], keep: usize) -> Vec<T> {
    if !cfg!(miri) || items.len() <= keep {
        return items.to_vec();
    }
    let last = items.len() - 1;
    (0..keep)
        .map(|i| items[i * last / (keep - 1).max(1)])
        .collect()
}

/// splitmix64: deterministic and dependency-free, so a failure replays from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// A value of `0..=max_bits` random bits: uniform over bit lengths, so
    /// every level of the wheel sees traffic, not just the top one.
    pub fn spread(&mut self, max_bits: u32) -> u64 {
        let bits = self.below(u64::from(max_bits) + 1) as u32;
        if bits == 0 {
            0
        } else {
            self.next() >> (64 - bits)
        }
    }
}
