//! `BucketWheel<u64>` against a `BTreeSet` model.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wheel_model::{run_bytes, Target};

fuzz_target!(|data: &[u8]| run_bytes(Target::BucketOps, data));
