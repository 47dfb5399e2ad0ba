//! Replays every committed fuzz finding on stable: each file under
//! `fuzz/regressions/<target>/` is an input that once crashed `<target>` and
//! must now pass, so a fixed bug stays fixed without nightly or cargo-fuzz.

use std::fs;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use wheel_model::{run_bytes, Target};

fn regressions(target: Target) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions")
        .join(target.name())
}

/// The crash inputs in `dir`: every file but the docs and dotfiles.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut inputs: Vec<PathBuf> = entries
        .map(|entry| entry.expect("readable regressions directory").path())
        .filter(|path| path.is_file())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            !name.starts_with('.') && !name.ends_with(".md")
        })
        .collect();
    inputs.sort();
    inputs
}

/// Writes past the test harness's capture, so every run's log shows how many
/// inputs were replayed, not only a failing one's.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[test]
fn committed_regressions_pass() {
    let mut failed = Vec::new();
    let mut replayed = 0;
    for target in Target::ALL {
        let inputs = inputs(&regressions(target));
        for input in &inputs {
            let data = fs::read(input).expect("readable regression input");
            if panic::catch_unwind(AssertUnwindSafe(|| run_bytes(target, &data))).is_err() {
                failed.push(input.display().to_string());
            }
        }
        replayed += inputs.len();
        report(&format!("{}: replayed {}", target.name(), inputs.len()));
    }
    report(&format!("replayed {replayed} regression inputs in all"));
    assert!(failed.is_empty(), "regressions failing again: {failed:#?}");
}

#[test]
fn every_target_has_a_regressions_directory() {
    for target in Target::ALL {
        let dir = regressions(target);
        assert!(dir.is_dir(), "missing {}", dir.display());
    }
}
