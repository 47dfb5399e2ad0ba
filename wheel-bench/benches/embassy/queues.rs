//! The two queues' shared calls, for the host bench (`benches/embassy.rs`)
//! and the Cortex-M4 count (`ci/qemu-tests/src/bin/count.rs`, which
//! includes this file by path): `core` only.

use core::task::Waker;

use embassy_time_queue_utils::queue_generic::ConstGenericQueue;
use wheel_core::WakerQueue;

/// A timer queue with embassy's contract.
pub trait Queue {
    fn new() -> Self;
    fn schedule_wake(&mut self, at: u64, waker: &Waker) -> bool;
    fn next_expiration(&mut self, now: u64) -> u64;
}

impl<const N: usize> Queue for WakerQueue<N> {
    fn new() -> Self {
        WakerQueue::new()
    }
    fn schedule_wake(&mut self, at: u64, waker: &Waker) -> bool {
        WakerQueue::schedule_wake(self, at, waker)
    }
    fn next_expiration(&mut self, now: u64) -> u64 {
        WakerQueue::next_expiration(self, now)
    }
}

impl<const N: usize> Queue for ConstGenericQueue<N> {
    fn new() -> Self {
        ConstGenericQueue::new()
    }
    fn schedule_wake(&mut self, at: u64, waker: &Waker) -> bool {
        ConstGenericQueue::schedule_wake(self, at, waker)
    }
    fn next_expiration(&mut self, now: u64) -> u64 {
        ConstGenericQueue::next_expiration(self, now)
    }
}
