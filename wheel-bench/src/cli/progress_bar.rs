//! A child's progress on stderr, drawn by indicatif: a bar with the count
//! and rate where the total is known (`delay`'s timers), a spinner with the
//! count, rate and elapsed time where the run is bounded by time instead.
//! indicatif draws nothing when stderr is not a terminal, so logs stay
//! clean. The measured threads only publish their counts; the child's main
//! thread, which waits for them anyway, hands the sum to the bar.

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How often the waiting thread hands the count to the bar.
const PERIOD: Duration = Duration::from_millis(200);

/// A bar over `total` items, labelled `label`.
pub fn bar(label: String, total: u64) -> ProgressBar {
    styled(
        ProgressBar::new(total),
        "{prefix}  [{bar:30}] {pos:>9}/{len} {per_sec:>12}  {elapsed_precise}",
    )
    .with_prefix(label)
}

/// A spinner counting `unit`s, labelled `label`.
pub fn spinner(label: String, unit: &str) -> ProgressBar {
    styled(
        ProgressBar::new_spinner(),
        &format!(
            "{{prefix}}  {{spinner}} {{pos:>11}} {unit}  {{per_sec:>12}}  {{elapsed_precise}}"
        ),
    )
    .with_prefix(label)
}

fn styled(bar: ProgressBar, template: &str) -> ProgressBar {
    // The templates are constants that parse; a wrong one would only lose
    // the progress, never the run.
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Sleeps for `span`, showing the sum of `counts` on `bar` as it goes, and
/// clears the bar at the end.
pub fn wait_for(bar: &ProgressBar, span: Duration, counts: &[Published]) {
    let end = Instant::now() + span;
    loop {
        bar.set_position(sum(counts));
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        thread::sleep(left.min(PERIOD));
    }
    bar.finish_and_clear();
}

/// The counts published so far, together.
fn sum(counts: &[Published]) -> u64 {
    counts.iter().map(|p| p.0.load(Ordering::Relaxed)).sum()
}

/// A count one thread publishes for the progress bar, on a cache line of
/// its own so that threads publishing do not contend.
#[derive(Default)]
#[repr(align(128))]
pub struct Published(pub AtomicU64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_the_span_and_shows_the_sum() {
        let counts: Vec<Published> = (1..=3).map(|n| Published(AtomicU64::new(n))).collect();
        let bar = ProgressBar::hidden();
        let start = Instant::now();
        wait_for(&bar, Duration::from_millis(50), &counts);
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert_eq!(bar.position(), 6);
        assert!(bar.is_finished());
    }
}
