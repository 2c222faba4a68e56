//! SVG figures drawn from small typed series that the commands build from their rows: the
//! article's two figures and the slow-backend figure.
//!
//! - `fixed` ([`supermarket`]): the fraction of servers with queue `>= i` on a log axis, simulated points over the
//!   fixed-point lines, one colour per `d`;
//! - `stale` ([`board`]): mean sojourn against the board period, one line per policy (log axis, since herding
//!   jsq is tens of times worse than the rest); the periods are evenly spaced categories, and a
//!   point whose row is not steady is drawn as an open square instead of a dot.
//!
//! - `homo`, `hetero`, `run` ([`sweep`]): mean and p99 sojourn against the swept key, one line
//!   per policy with its 95% interval as a band (bars without a swept key);
//! - `capacity` ([`bars`]): each policy's answer and the bracket of its threshold;
//! - `run --series` ([`over_time`]): a metric per window against time, one line per row;
//! - `limit --limiter` ([`columns`]): what the limiter did with the requests, one bar per count.
//!
//! Figures are deterministic (same rows, same bytes), so they can be committed and compared.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

const SIZE: (u32, u32) = (720, 480);
/// The figures' colours, in the order lines take them (matplotlib's "tab10"); figures with few
/// lines use the first six.
const MANY: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const PALETTE: &[RGBColor] = MANY.split_at(6).0;

/// A point of the supermarket figure: the fraction of servers with queue `>= i` under `d`
/// choices at load `lambda`, simulated and by the fixed point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    /// Choices per request.
    pub d: u32,
    /// The load.
    pub lambda: f64,
    /// The queue length.
    pub i: u32,
    /// Simulated fraction.
    pub sim: f64,
    /// The fixed point's fraction.
    pub theory: f64,
}

/// A point of the board figure: a policy's mean sojourn at a board period, and whether the row
/// it comes from is steady.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoardPoint<'a> {
    /// The policy.
    pub policy: &'a str,
    /// The board period (0 = live).
    pub period: f64,
    /// Mean sojourn.
    pub mean: f64,
    /// The row's steadiness.
    pub steady: bool,
}

fn label(x: f64) -> String {
    super::table::format_number(x)
}

/// Draws the legend box of `chart` at `position`.
fn legend<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) where
    X: plotters::coord::ranged1d::Ranged,
    Y: plotters::coord::ranged1d::Ranged,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .expect("drawing into a string");
}

/// Distinct values of `key` over `rows`, in order of first appearance.
fn distinct<'a, R, T: PartialEq>(rows: &'a [R], key: impl Fn(&'a R) -> T) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for row in rows {
        let k = key(row);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// The supermarket figure (`fixed`).
pub fn supermarket(levels: &[Level]) -> String {
    let max_i = levels.iter().map(|r| r.i).max().unwrap_or(1) as f64;
    let positive = levels.iter().flat_map(|r| [r.sim, r.theory]).filter(|&v| v > 0.0);
    let y_min = positive.fold(1.0f64, f64::min).max(1e-9) / 2.0;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).expect("drawing into a string");
        let mut chart = ChartBuilder::on(&root)
            .caption("Supermarket model: fraction of servers with queue >= i", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0.5..max_i + 0.5, (y_min..1.5).log_scale())
            .expect("valid ranges");
        chart
            .configure_mesh()
            .x_desc("i (queue length)")
            .y_desc("s_i")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0e}"))
            .draw()
            .expect("drawing into a string");
        let groups = distinct(levels, |r| (r.d, r.lambda));
        for (k, &(d, lambda)) in groups.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            let rows: Vec<&Level> =
                levels.iter().filter(|r| r.d == d && r.lambda == lambda).collect();
            let theory: Vec<(f64, f64)> = rows.iter().map(|r| (f64::from(r.i), r.theory)).collect();
            let sim: Vec<(f64, f64)> =
                rows.iter().map(|r| (f64::from(r.i), r.sim)).filter(|&(_, y)| y > 0.0).collect();
            chart
                .draw_series(LineSeries::new(theory, color.stroke_width(2)))
                .expect("drawing into a string")
                .label(format!("d = {d}, lambda = {}: fixed point", label(lambda)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            chart
                .draw_series(sim.into_iter().map(|p| Circle::new(p, 4, color.stroke_width(2))))
                .expect("drawing into a string")
                .label(format!("d = {d}: simulated"))
                .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.stroke_width(2)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight);
        root.present().expect("drawing into a string");
    }
    out
}

/// The board figure (`stale`).
pub fn board(rows: &[BoardPoint]) -> String {
    let periods = distinct(rows, |r| r.period);
    let policies = distinct(rows, |r| r.policy);
    let means: Vec<f64> = rows.iter().map(|r| r.mean).filter(|v| *v > 0.0).collect();
    let y_max = means.iter().copied().fold(1.0, f64::max) * 2.0;
    let y_min = means.iter().copied().fold(f64::INFINITY, f64::min).min(1.0) / 1.5;
    let period_labels: Vec<String> = periods.iter().map(|&p| label(p)).collect();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).expect("drawing into a string");
        let n = periods.len() as f64;
        let x_label = |x: &f64| {
            let k = x.round();
            if (x - k).abs() < 1e-9 && k >= 0.0 && (k as usize) < period_labels.len() {
                period_labels[k as usize].clone()
            } else {
                String::new()
            }
        };
        let mut chart = ChartBuilder::on(&root)
            .caption("Bulletin board: mean sojourn against the board's age", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.3..n - 0.7, (y_min..y_max).log_scale())
            .expect("valid ranges");
        chart
            .configure_mesh()
            .x_desc("board period T (0 = live; evenly spaced categories, not to scale)")
            .y_desc("mean sojourn")
            .x_labels(periods.len())
            .x_label_formatter(&x_label)
            .draw()
            .expect("drawing into a string");
        for (k, policy) in policies.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            let pts: Vec<((f64, f64), bool)> = periods
                .iter()
                .enumerate()
                .filter_map(|(x, &p)| {
                    let row = rows.iter().find(|r| r.period == p && r.policy == *policy)?;
                    Some(((x as f64, row.mean), row.steady))
                })
                .collect();
            let name = policy.to_string();
            let line: Vec<(f64, f64)> = pts.iter().map(|&(p, _)| p).collect();
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))
                .expect("drawing into a string")
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            let steady = pts.iter().filter(|(_, st)| *st);
            chart
                .draw_series(steady.map(|&(p, _)| Circle::new(p, 3, color.filled())))
                .expect("drawing into a string");
            let unsteady = pts.iter().filter(|(_, st)| !*st);
            chart
                .draw_series(unsteady.map(|&(p, _)| {
                    EmptyElement::at(p) + Rectangle::new([(-5, -5), (5, 5)], color.stroke_width(2))
                }))
                .expect("drawing into a string");
        }
        if rows.iter().any(|r| !r.steady) {
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                .expect("drawing into a string")
                .label("open square: not steady")
                .legend(|(x, y)| {
                    EmptyElement::at((x + 9, y)) + Rectangle::new([(-5, -5), (5, 5)], BLACK)
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft);
        root.present().expect("drawing into a string");
    }
    out
}

// ===== capacity =====

/// One policy's answer in the capacity figure: the value and the bracket of the threshold;
/// `solid` false (undecided, or no answer in the range) draws it hollow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar<'a> {
    /// The policy.
    pub label: &'a str,
    /// The answer, if any.
    pub value: Option<f64>,
    /// The bracket's low end.
    pub lo: Option<f64>,
    /// The bracket's high end.
    pub hi: Option<f64>,
    /// Decided: a filled marker; else an open square.
    pub solid: bool,
}

/// The capacity figure: one column per policy, its answer as a marker and the bracket of the
/// threshold as a vertical bar; `key` names the y axis.
pub fn bars(caption: &str, key: &str, bars: &[Bar]) -> String {
    let values = bars.iter().flat_map(|b| [b.value, b.lo, b.hi]).flatten();
    let frame = Categories {
        caption,
        labels: bars.iter().map(|b| b.label.to_string()).collect(),
        x_desc: Some("policy"),
        y_desc: key,
        y_max: values.clone().fold(0.0, f64::max).max(1e-9) * 1.15,
        y_labels: false,
    };
    frame.draw(|chart| {
        for (k, b) in bars.iter().enumerate() {
            let color = MANY[k % MANY.len()];
            let x = k as f64;
            if let (Some(lo), Some(hi)) = (b.lo, b.hi) {
                chart
                    .draw_series(LineSeries::new(vec![(x, lo), (x, hi)], color.stroke_width(3)))
                    .expect("drawing into a string");
            }
            let Some(v) = b.value else { continue };
            if b.solid {
                chart
                    .draw_series(std::iter::once(Circle::new((x, v), 5, color.filled())))
                    .expect("drawing into a string");
            } else {
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((x, v))
                            + Rectangle::new([(-5, -5), (5, 5)], color.stroke_width(2)),
                    ))
                    .expect("drawing into a string");
            }
        }
    })
}

/// The frame of a chart of categories: one slot per label along x (at 0, 1, ...), named under
/// it, and y from 0 to `y_max`.
struct Categories<'a> {
    caption: &'a str,
    labels: Vec<String>,
    x_desc: Option<&'a str>,
    y_desc: &'a str,
    y_max: f64,
    /// Whether the y axis's numbers are written by [`label`] (else as plotters writes them).
    y_labels: bool,
}

/// A chart over x and y in `f64`, as [`Categories::draw`] gives it.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

impl Categories<'_> {
    /// The figure: the frame with what `marks` draws in it.
    fn draw(&self, marks: impl FnOnce(&mut Chart)) -> String {
        let n = self.labels.len();
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
            root.fill(&WHITE).expect("drawing into a string");
            let x_label = |x: &f64| {
                let k = x.round();
                let exact = (x - k).abs() < 1e-9 && k >= 0.0 && (k as usize) < n;
                if exact { self.labels[k as usize].clone() } else { String::new() }
            };
            let y_label = |y: &f64| label(*y);
            let mut chart = ChartBuilder::on(&root)
                .caption(self.caption, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(64)
                .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..self.y_max)
                .expect("valid ranges");
            let mut mesh = chart.configure_mesh();
            if let Some(x_desc) = self.x_desc {
                mesh.x_desc(x_desc);
            }
            mesh.y_desc(self.y_desc).x_labels(n).x_label_formatter(&x_label);
            if self.y_labels {
                mesh.y_label_formatter(&y_label);
            }
            mesh.draw().expect("drawing into a string");
            marks(&mut chart);
            root.present().expect("drawing into a string");
        }
        out
    }
}

// ===== mean and p99 against a swept key =====

/// A row of a queueing command for its figure: a policy's mean and p99 (with their 95%
/// half-widths) at a value of the swept key (`None`: the command sweeps nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// The line it belongs to (the policy, with the other swept keys when there are several).
    pub line: String,
    /// The swept key's value.
    pub x: Option<f64>,
    /// Mean sojourn.
    pub mean: f64,
    /// Its 95% half-width.
    pub mean_ci95: Option<f64>,
    /// 99th percentile sojourn.
    pub p99: f64,
    /// Its 95% half-width.
    pub p99_ci95: Option<f64>,
    /// The row's steadiness: an unsteady row is drawn hollow.
    pub steady: bool,
}

/// The figure of a queueing command: two panels, the mean and the p99 sojourn, against the
/// swept key `x_desc` with one line per policy and its 95% interval as a band, or, without a
/// swept key, one bar per policy with its interval as a whisker. The y axis is logarithmic when
/// the values span more than a decade. Unsteady rows are drawn hollow.
pub fn sweep(caption: &str, x_desc: &str, points: &[SweepPoint]) -> String {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (1080, 480)).into_drawing_area();
        root.fill(&WHITE).expect("drawing into a string");
        let root = root.titled(caption, ("sans-serif", 18)).expect("drawing into a string");
        let (left, right) = root.split_horizontally(540);
        let mean = |p: &SweepPoint| (p.mean, p.mean_ci95);
        let p99 = |p: &SweepPoint| (p.p99, p.p99_ci95);
        panel(&left, "mean sojourn", x_desc, points, &mean);
        panel(&right, "p99 sojourn", x_desc, points, &p99);
        root.present().expect("drawing into a string");
    }
    out
}

/// A value and its 95% half-width, read from a point.
type Read<'r> = &'r dyn Fn(&SweepPoint) -> (f64, Option<f64>);

/// One panel of [`sweep`]: the values `read` gives, against `x_desc` (or per policy).
fn panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    y_desc: &str,
    x_desc: &str,
    points: &[SweepPoint],
    read: Read,
) {
    let lines = distinct(points, |p| p.line.clone());
    let xs = distinct(points, |p| p.x.map(f64::to_bits));
    let categorical = xs.len() <= 1 || xs.iter().any(Option::is_none);
    let spread = |p: &SweepPoint| {
        let (v, h) = read(p);
        let h = h.unwrap_or(0.0);
        [v - h, v + h, v]
    };
    let all: Vec<f64> = points.iter().flat_map(spread).filter(|v| *v > 0.0).collect();
    let (lowest, highest) = (
        all.iter().copied().fold(f64::INFINITY, f64::min),
        all.iter().copied().fold(0.0, f64::max),
    );
    let log = !categorical && lowest.is_finite() && highest > 10.0 * lowest;
    // On a log axis the values are drawn as their logarithms, and labelled back.
    let y = move |v: f64| if log { v.max(lowest).log10() } else { v };
    let (y_min, y_max) =
        if log { (y(lowest) - 0.05, y(highest) + 0.05) } else { (0.0, highest.max(1e-9) * 1.1) };
    let (x_min, x_max) = if categorical {
        (-0.5, lines.len() as f64 - 0.5)
    } else {
        let values: Vec<f64> = points.iter().filter_map(|p| p.x).collect();
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    };
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(x_min..x_max, y_min..y_max)
        .expect("valid ranges");
    let names = lines.clone();
    let x_label = move |x: &f64| {
        if !categorical {
            return label(*x);
        }
        let k = x.round();
        let exact = (x - k).abs() < 1e-9 && k >= 0.0 && (k as usize) < names.len();
        if exact { names[k as usize].clone() } else { String::new() }
    };
    let y_label = move |v: &f64| if log { label(10f64.powf(*v)) } else { label(*v) };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(if categorical { "policy" } else { x_desc })
        .y_desc(if log { format!("{y_desc} (log scale)") } else { y_desc.to_string() })
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label);
    if categorical {
        mesh.x_labels(lines.len());
    }
    mesh.draw().expect("drawing into a string");
    for (k, name) in lines.iter().enumerate() {
        let color = MANY[k % MANY.len()];
        let mine: Vec<&SweepPoint> = points.iter().filter(|p| p.line == *name).collect();
        if categorical {
            draw_bar(&mut chart, k as f64, mine[0], read, &y, color);
            continue;
        }
        let at = |p: &&SweepPoint| p.x.unwrap_or(0.0);
        let band: Vec<(f64, f64)> = mine
            .iter()
            .map(|p| (at(p), y(spread(p)[1])))
            .chain(mine.iter().rev().map(|p| (at(p), y(spread(p)[0]))))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(band, color.mix(0.15).filled())))
            .expect("drawing into a string");
        let line: Vec<(f64, f64)> = mine.iter().map(|p| (at(p), y(read(p).0))).collect();
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(2)))
            .expect("drawing into a string")
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 18, y + 4)], color.filled()));
        for p in &mine {
            draw_marker(&mut chart, (at(p), y(read(p).0)), p.steady, color);
        }
    }
    if !categorical {
        legend(&mut chart, SeriesLabelPosition::UpperLeft);
    }
}

/// A point's marker: a filled dot, or an open square for an unsteady row.
fn draw_marker<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    at: (f64, f64),
    steady: bool,
    color: RGBColor,
) where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    let drawn = if steady {
        chart.draw_series(std::iter::once(Circle::new(at, 3, color.filled())))
    } else {
        chart.draw_series(std::iter::once(
            EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], color.stroke_width(2)),
        ))
    };
    drawn.expect("drawing into a string");
}

/// One policy's bar at `x` with its interval as a whisker; hollow when unsteady.
fn draw_bar<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    x: f64,
    p: &SweepPoint,
    read: Read,
    y: &dyn Fn(f64) -> f64,
    color: RGBColor,
) where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    let (v, h) = read(p);
    let style = if p.steady { color.mix(0.6).filled() } else { color.stroke_width(2) };
    chart
        .draw_series(std::iter::once(Rectangle::new([(x - 0.3, 0.0), (x + 0.3, y(v))], style)))
        .expect("drawing into a string");
    if let Some(h) = h {
        let whisker = vec![(x, y(v - h)), (x, y(v + h))];
        chart
            .draw_series(LineSeries::new(whisker, BLACK.stroke_width(2)))
            .expect("drawing into a string");
    }
}

// ===== the slow-backend figure =====

/// One line per policy of a group's traffic share against time (`lines`: label and points),
/// with the instants the group slowed down and recovered marked by vertical lines.
pub fn share_figure(caption: &str, lines: &[(String, Vec<(f64, f64)>)], marks: &[f64]) -> String {
    series_figure(caption, "share of requests sent to the slowed group", lines, marks)
}

/// A time-series figure: one line per `(name, points)` against time, `y_desc` on the y axis
/// (from 0), a faint vertical line at each of `marks`.
pub fn series_figure(
    caption: &str,
    y_desc: &str,
    lines: &[(String, Vec<(f64, f64)>)],
    marks: &[f64],
) -> String {
    let x_max = lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).fold(1.0, f64::max);
    let y_max = lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(0.0, f64::max) * 1.1;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 520)).into_drawing_area();
        root.fill(&WHITE).expect("drawing into a string");
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max.max(0.01))
            .expect("valid ranges");
        chart
            .configure_mesh()
            .x_desc("time (mean service times)")
            .y_desc(y_desc)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.2}"))
            .draw()
            .expect("drawing into a string");
        for &t in marks {
            chart
                .draw_series(LineSeries::new(vec![(t, 0.0), (t, y_max)], BLACK.mix(0.4)))
                .expect("drawing into a string");
        }
        for (k, (name, points)) in lines.iter().enumerate() {
            let color = MANY[k % MANY.len()];
            chart
                .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(1)))
                .expect("drawing into a string")
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight);
        root.present().expect("drawing into a string");
    }
    out
}

// ===== a metric per window, and counts =====

/// A metric per window against time: one line per `(name, points)` (x: the window's start),
/// `y_desc` on the y axis, which is logarithmic when the values span more than a decade (as
/// [`sweep`]'s). Points that are not finite and positive on a log axis are left out.
pub fn over_time(caption: &str, y_desc: &str, lines: &[(String, Vec<(f64, f64)>)]) -> String {
    let values = || lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).filter(|v| v.is_finite());
    let lowest = values().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let highest = values().fold(0.0, f64::max);
    let log = lowest.is_finite() && highest > 10.0 * lowest;
    let y = move |v: f64| if log { v.log10() } else { v };
    let (y_min, y_max) =
        if log { (y(lowest) - 0.05, y(highest) + 0.05) } else { (0.0, highest.max(1e-9) * 1.1) };
    let times = || lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let x_max = times().fold(0.0, f64::max).max(1e-9);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 520)).into_drawing_area();
        root.fill(&WHITE).expect("drawing into a string");
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x_max, y_min..y_max)
            .expect("valid ranges");
        let y_label = move |v: &f64| if log { label(10f64.powf(*v)) } else { label(*v) };
        chart
            .configure_mesh()
            .x_desc("time (start of the window)")
            .y_desc(if log { format!("{y_desc} (log scale)") } else { y_desc.to_string() })
            .x_label_formatter(&|x| label(*x))
            .y_label_formatter(&y_label)
            .draw()
            .expect("drawing into a string");
        for (k, (name, points)) in lines.iter().enumerate() {
            let color = MANY[k % MANY.len()];
            let shown = points.iter().filter(|p| p.1.is_finite() && (!log || p.1 > 0.0));
            chart
                .draw_series(LineSeries::new(shown.map(|&(t, v)| (t, y(v))), color.stroke_width(2)))
                .expect("drawing into a string")
                .label(name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 4), (x + 18, y + 4)], color.filled())
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight);
        root.present().expect("drawing into a string");
    }
    out
}

/// Counts as bars, one per `(label, value)` in order, each in its own colour, with its value
/// written above it; `y_desc` names the y axis (from 0).
pub fn columns(caption: &str, y_desc: &str, counts: &[(&str, f64)]) -> String {
    let y_max = counts.iter().map(|c| c.1).fold(0.0, f64::max).max(1.0) * 1.15;
    let frame = Categories {
        caption,
        labels: counts.iter().map(|c| c.0.to_string()).collect(),
        x_desc: None,
        y_desc,
        y_max,
        y_labels: true,
    };
    frame.draw(|chart| {
        for (k, &(_, v)) in counts.iter().enumerate() {
            let color = MANY[k % MANY.len()];
            let x = k as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.3, 0.0), (x + 0.3, v)],
                    color.mix(0.8).filled(),
                )))
                .expect("drawing into a string");
            chart
                .draw_series(std::iter::once(Text::new(
                    label(v),
                    (x - 0.1, v + y_max * 0.02),
                    ("sans-serif", 14),
                )))
                .expect("drawing into a string");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_points_draw_the_same_bytes() {
        let levels: Vec<Level> = (1..5)
            .map(|i| {
                let s = 0.9f64.powi(i as i32);
                Level { d: 2, lambda: 0.9, i, sim: s, theory: s }
            })
            .collect();
        assert_eq!(supermarket(&levels), supermarket(&levels));
        let points = [
            BoardPoint { policy: "jsq", period: 0.0, mean: 2.0, steady: true },
            BoardPoint { policy: "jsq", period: 1.0, mean: 9.0, steady: false },
        ];
        let svg = board(&points);
        assert_eq!(svg, board(&points));
        assert!(svg.contains("open square: not steady"));
    }
}
