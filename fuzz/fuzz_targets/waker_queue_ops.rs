//! `WakerQueue` of a few sizes against a map of task to deadline.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wheel_model::{run_bytes, Target};

fuzz_target!(|data: &[u8]| run_bytes(Target::WakerQueueOps, data));
