//! `--alternate`: the two queues' samples taken in turn, so that the
//! machine's moods fall on both, and a table of the medians and the spread
//! of the per-sample ratios.

use std::time::Duration;

use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

use super::Shape;

/// About how long each sample of `--alternate` takes, per queue.
const SAMPLE: Duration = Duration::from_millis(4);
/// Samples per shape and size in `--alternate`.
const SAMPLES: usize = 21;

/// ns per call of `batches` batches of `shape`.
fn sample(shape: &mut impl Shape, batches: u64) -> f64 {
    let timed: Duration = (0..batches).map(|_| shape.batch()).sum();
    timed.as_nanos() as f64 / (batches * shape.per_batch()) as f64
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The rows measured so far.
pub struct Table(Builder);

impl Table {
    pub fn new() -> Self {
        let mut table = Builder::new();
        table.push_record(["shape", "n", "wheel-core", "embassy", "ratio", "spread"]);
        Self(table)
    }

    pub fn print(self) {
        let mut table = self.0.build();
        table
            .with(Style::blank())
            .modify(Columns::new(1..), Alignment::right());
        println!("{table}");
        println!("(ns a call; spread: the ratio's 2nd lowest-highest of {SAMPLES})");
    }
}

/// Samples `ours` and `theirs` in turn; adds a row of the medians and the
/// spread of the per-sample ratios to `table`.
pub fn row(
    Table(table): &mut Table,
    name: &str,
    n: usize,
    mut ours: impl Shape,
    mut theirs: impl Shape,
) {
    // As many batches of each as the slower takes `SAMPLE` to run.
    let slower = sample(&mut ours, 100).max(sample(&mut theirs, 100));
    let calls = SAMPLE.as_nanos() as f64 / slower.max(1.0);
    let batches = (calls / ours.per_batch().max(theirs.per_batch()) as f64).clamp(10.0, 1e6) as u64;
    let (mut wheel, mut embassy, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let w = sample(&mut ours, batches);
        let e = sample(&mut theirs, batches);
        wheel.push(w);
        embassy.push(e);
        ratios.push(w / e);
    }
    ratios.sort_by(f64::total_cmp);
    table.push_record([
        name.to_string(),
        n.to_string(),
        format!("{:.1}", median(wheel)),
        format!("{:.1}", median(embassy)),
        format!("{:.2}", ratios[ratios.len() / 2]),
        format!("{:.2}-{:.2}", ratios[1], ratios[ratios.len() - 2]),
    ]);
    // Each row as it is measured, since a whole run takes minutes.
    eprintln!("{name} {n}: done");
}
