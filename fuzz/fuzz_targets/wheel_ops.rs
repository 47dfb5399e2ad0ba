//! Every `Wheel<u64>` operation against a `BTreeMap` model.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wheel_model::{run_bytes, Target};

fuzz_target!(|data: &[u8]| run_bytes(Target::WheelOps, data));
