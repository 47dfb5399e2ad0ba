//! A threaded timer service over `wheel-core` (work in progress).
pub mod queue;
mod sync;
