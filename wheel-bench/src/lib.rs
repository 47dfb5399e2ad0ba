//! Shared pieces of the benchmarks: the peers we measure against.
pub mod peers;
pub mod rng;
