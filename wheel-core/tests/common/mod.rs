//! What the integration tests share.

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
