//! `--plot FILE.svg`: the experiments as charts, one series per
//! implementation, each implementation in the same colour everywhere.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::delay_recorder::SLOT;
use super::experiment::{DelayArgs, Workload};
use super::impls::Impl;
use super::report::{median, DelayResult, RedisResult, TimeoutsResult};

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
        Impl::None => RGBColor(0x7f, 0x7f, 0x7f),
        Impl::NoneAsync => RGBColor(0xc7, 0xc7, 0xc7),
        Impl::Executor2 => RGBColor(0x2c, 0xa0, 0x2c),
        Impl::Executor8 => RGBColor(0xbc, 0xbd, 0x22),
        Impl::WheelHandles | Impl::WheelShared => RGBColor(0x1f, 0x4e, 0x79),
        Impl::WheelHandleDropped | Impl::WheelCloneEach => RGBColor(0x6b, 0xae, 0xd6),
        Impl::WheelAsyncCloneEach | Impl::WheelAsyncShared => RGBColor(0x0e, 0x7c, 0x86),
        Impl::WheelAsyncArc | Impl::WheelAsyncGlobal => RGBColor(0x8c, 0xe0, 0xe8),
        Impl::WheelTimeout => RGBColor(0x8c, 0x56, 0x4b),
        Impl::TokioAlt => RGBColor(0xe3, 0x77, 0xc2),
        // smol's two rows in tokio's and wheel-async/clone-each's hues, darker.
        Impl::Smol => RGBColor(0x8b, 0x1a, 0x1a),
        Impl::WheelAsyncSmol => RGBColor(0x0a, 0x4f, 0x55),
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
        .map(|r| r.outcome.recorded.lateness.max_ns() as f64 / 1e6)
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

/// A point per implementation and thread count, in the order of their
/// first run: the median of its runs' values.
fn medians(runs: impl Iterator<Item = (Impl, usize, f64)> + Clone) -> Vec<(Impl, usize, f64)> {
    let mut points: Vec<(Impl, usize, f64)> = Vec::new();
    for (imp, threads, _) in runs.clone() {
        if points.iter().any(|p| (p.0, p.1) == (imp, threads)) {
            continue;
        }
        let mut values: Vec<f64> = (runs.clone())
            .filter(|o| (o.0, o.1) == (imp, threads))
            .map(|o| o.2)
            .collect();
        values.sort_by(f64::total_cmp);
        points.push((imp, threads, median(&values)));
    }
    points
}

/// Operations per second against thread count; over several runs, their
/// median.
pub fn timeouts(path: &Path, results: &[TimeoutsResult]) -> Result<(), PlotError> {
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let points = medians(
        results
            .iter()
            .map(|r| (r.imp, r.threads, r.ops_per_s() / 1e6)),
    );
    let caption = match results.first().map_or(1, |r| r.in_flight) {
        1 => "timeouts: schedule(1 s) + cancel per request".to_owned(),
        k => format!("timeouts: schedule(1 s) + cancel per request, {k} in flight per thread"),
    };
    let chart = OpsChart {
        caption,
        unit: "million ops/s (all threads)",
        x_desc: "threads",
    };
    chart.draw(&root, &points)?;
    root.present()
}

/// Workload loops per second against caller count, a chart per workload;
/// over several runs, their median.
pub fn redis(path: &Path, results: &[RedisResult]) -> Result<(), PlotError> {
    let workloads: Vec<Workload> = [Workload::Set, Workload::List]
        .into_iter()
        .filter(|w| results.iter().any(|r| r.workload == *w))
        .collect();
    let height = 520 * workloads.len().max(1) as u32;
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE)?;
    for (area, workload) in root
        .split_evenly((workloads.len().max(1), 1))
        .iter()
        .zip(&workloads)
    {
        let points = medians(
            (results.iter())
                .filter(|r| r.workload == *workload)
                .map(|r| (r.imp, r.threads, r.ops_per_s() / 1e3)),
        );
        let caption = match workload {
            Workload::Set => "redis set: SET per op, one shared connection",
            Workload::List => "redis list: DEL + LPUSH x20 + LRANGE per op, one shared connection",
        };
        let chart = OpsChart {
            caption: caption.to_owned(),
            unit: "thousand ops/s (all callers)",
            x_desc: "caller threads (tasks for wheel-async, tokio)",
        };
        chart.draw(area, &points)?;
    }
    root.present()
}

/// A line per implementation of throughput against thread count.
struct OpsChart {
    caption: String,
    unit: &'static str,
    x_desc: &'static str,
}

impl OpsChart {
    /// `points`: (implementation, threads, throughput in `unit`).
    fn draw(
        &self,
        area: &DrawingArea<SVGBackend<'_>, Shift>,
        points: &[(Impl, usize, f64)],
    ) -> Result<(), PlotError> {
        let max_threads = points.iter().map(|p| p.1).max().unwrap_or(1);
        let peak = points.iter().map(|p| p.2).fold(0.1, f64::max);
        let mut chart = ChartBuilder::on(area)
            .caption(&self.caption, ("sans-serif", 22))
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0..max_threads + max_threads / 10 + 1, 0.0..peak * HEADROOM)?;
        chart
            .configure_mesh()
            .x_labels(12)
            .x_desc(self.x_desc)
            .y_desc(self.unit)
            .draw()?;
        for imp in Impl::ALL {
            let mut line: Vec<(usize, f64)> = (points.iter())
                .filter(|p| p.0 == imp)
                .map(|p| (p.1, p.2))
                .collect();
            if line.is_empty() {
                continue;
            }
            line.sort_by_key(|p| p.0);
            chart
                .draw_series(LineSeries::new(line, color(imp).stroke_width(2)).point_size(4))?
                .label(imp.name())
                .legend(legend(imp));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
    }
}
