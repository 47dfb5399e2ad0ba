//! `--plot FILE.svg`: the experiments as charts, one series per
//! implementation, each implementation in the same colour everywhere.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::args::DelayArgs;
use super::impls::Impl;
use super::recorder::SLOT;
use super::report::{DelayResult, TimeoutsResult};

/// What can go wrong drawing (the SVG backend only fails on I/O).
pub type PlotError = DrawingAreaErrorKind<std::io::Error>;

/// The y axis reaches this far above the highest point, so the legend in the
/// upper corner covers no data.
const HEADROOM: f64 = 1.4;

/// The leftmost lateness on the log axis; smaller values are drawn there.
const MIN_LATE_MS: f64 = 0.001;

fn color(imp: Impl) -> RGBColor {
    match imp {
        Impl::Wheel => RGBColor(0x1f, 0x77, 0xb4),
        Impl::WheelAsync => RGBColor(0x17, 0xbe, 0xcf),
        Impl::WheelQueue => RGBColor(0x94, 0x67, 0xbd),
        Impl::Tokio => RGBColor(0xd6, 0x27, 0x28),
        Impl::DelayQueue => RGBColor(0xff, 0x7f, 0x0e),
        Impl::Heap => RGBColor(0x2c, 0xa0, 0x2c),
    }
}

fn legend(imp: Impl) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color(imp).stroke_width(2))
}

/// Fired per 100 ms over time (top) and the lateness CDF (bottom).
pub fn delay(path: &Path, args: &DelayArgs, results: &[DelayResult]) -> Result<(), PlotError> {
    let root = SVGBackend::new(path, (1000, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        &format!(
            "delay: {} timers, delays uniform in [{}, {}] ms",
            args.timers, args.min_ms, args.max_ms
        ),
        ("sans-serif", 24),
    )?;
    let (top, bottom) = root.split_vertically(430);
    fired_per_slot(&top, results)?;
    lateness_cdf(&bottom, results)?;
    root.present()
}

fn fired_per_slot(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    results: &[DelayResult],
) -> Result<(), PlotError> {
    let slot_s = SLOT.as_secs_f64();
    let slots = |r: &DelayResult| r.outcome.recorded.per_slot.len();
    let max_s = results.iter().map(slots).max().unwrap_or(1) as f64 * slot_s;
    let peak = (results.iter())
        .flat_map(|r| r.outcome.recorded.per_slot.iter().copied())
        .max()
        .unwrap_or(1);
    let mut chart = ChartBuilder::on(area)
        .caption("timers fired per 100 ms", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..max_s, 0.0..f64::from(peak) * HEADROOM)?;
    chart
        .configure_mesh()
        .x_desc("seconds since start")
        .y_desc("timers fired")
        .y_label_formatter(&|n| format!("{n:.0}"))
        .draw()?;
    for r in results {
        let points = (r.outcome.recorded.per_slot.iter().enumerate())
            .map(|(i, &n)| ((i as f64 + 0.5) * slot_s, f64::from(n)));
        chart
            .draw_series(LineSeries::new(points, color(r.imp).stroke_width(2)))?
            .label(r.imp.name())
            .legend(legend(r.imp));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
}

fn lateness_cdf(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    results: &[DelayResult],
) -> Result<(), PlotError> {
    let worst_ms = (results.iter())
        .map(|r| r.outcome.recorded.lateness.max_ns as f64 / 1e6)
        .fold(MIN_LATE_MS * 10.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(
            "lateness past each timer's deadline (CDF)",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d((MIN_LATE_MS..worst_ms * 1.5).log_scale(), 0.0..100.0)?;
    chart
        .configure_mesh()
        .x_desc("lateness, ms (log scale)")
        .y_desc("% of timers at or below")
        .x_label_formatter(&|ms| format!("{ms}"))
        .draw()?;
    for r in results {
        let points = (r.outcome.recorded.lateness.cdf().into_iter())
            .map(|(ns, fraction)| ((ns as f64 / 1e6).max(MIN_LATE_MS), fraction * 100.0));
        chart
            .draw_series(LineSeries::new(points, color(r.imp).stroke_width(2)))?
            .label(r.imp.name())
            .legend(legend(r.imp));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
}

/// Operations per second against thread count.
pub fn timeouts(path: &Path, results: &[TimeoutsResult]) -> Result<(), PlotError> {
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let max_threads = results.iter().map(|r| r.threads).max().unwrap_or(1);
    let peak = (results.iter().map(|r| r.ops_per_s() / 1e6)).fold(0.1, f64::max);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "timeouts: schedule(1 s) + cancel per request",
            ("sans-serif", 22),
        )
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0..max_threads + 1, 0.0..peak * HEADROOM)?;
    chart
        .configure_mesh()
        .x_labels(max_threads + 2)
        .x_desc("threads")
        .y_desc("million ops/s (all threads)")
        .draw()?;
    for imp in Impl::ALL {
        let mut points: Vec<(usize, f64)> = (results.iter())
            .filter(|r| r.imp == imp)
            .map(|r| (r.threads, r.ops_per_s() / 1e6))
            .collect();
        if points.is_empty() {
            continue;
        }
        points.sort_by_key(|p| p.0);
        chart
            .draw_series(LineSeries::new(points, color(imp).stroke_width(2)).point_size(4))?
            .label(imp.name())
            .legend(legend(imp));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()
}
