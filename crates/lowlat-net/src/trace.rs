//! Loaders for capacity traces, with errors that name the file and the line.
//!
//! - **mahimahi**: one integer per line, the millisecond timestamp of a 1500-byte delivery
//!   opportunity; non-decreasing; the trace repeats with a period equal to its last timestamp
//!   (a file holding the single line `1` is a 12 Mbit/s link). A timestamp 0 is the same instant as
//!   the end of the period in a repeating trace and is placed there.
//! - **rate** (the Zhuge `.pitree-trace` files): `<seconds> <Mbit/s>` per line, piecewise
//!   constant until the next sample. Blank lines and `#` comments are skipped.
//!   - **Replayed from the first sample**: the times are taken relative to the first line's, so
//!     a file cut from a longer recording (the Zhuge traces begin as late as 4505 s) plays from the
//!     start of the run. With [`RateTraceOptions::step`] the times are ignored instead and line
//!     *i* holds from *i* x step, as the Zhuge artifact replays its traces (one line per 200 ms).
//!   - **Looped** (by default) when the run is longer: one repetition lasts from the first sample
//!     to the last plus one typical (median) step, as mahimahi repeats its traces.
//!   - **Irregular steps** (a gap more than 1.5x or less than 0.5x the median step, e.g. a 72 s
//!     hole in `xu5g_4`) are replayed as they are and reported in one [`TraceWarning`].
//!
//! Measured traces hold the odd absurd sample (one Zhuge 4G trace with a mean of 79 Mbit/s has a
//! sample of 127 817 Mbit/s at `pitree4g_36:277`). Rule: a sample above `outlier_factor` (100) x
//! the trace's median is **clipped** to the previous sample's rate (the median for a first sample)
//! and reported as a [`TraceWarning`] naming file and line. Clipped rather than rejected because
//! one bad 0.2 s sample in an otherwise sound 300 s recording is a logging glitch, and rejecting
//! the file would drop a whole trace family from an evaluation; no physical link in these
//! recordings reaches 100x its median. Nothing here panics on any input.

use crate::capacity::{Capacity, DeliveryTrace, RateSchedule};
use lowlat_core::{Bitrate, Duration, Time};
use std::fmt;
use std::path::Path;

/// Bytes per mahimahi delivery opportunity.
pub const MAHIMAHI_OPPORTUNITY_BYTES: u32 = 1500;

/// A trace that cannot be used: names the file and, where it applies, the line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct TraceError {
    /// The file (or label) it came from.
    pub file: String,
    /// 1-based line number, if the problem is on one line.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.file, l, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Something the user should check before trusting results from a trace (e.g. a clipped sample).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceWarning {
    /// The file it came from.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// What was done.
    pub message: String,
}

impl fmt::Display for TraceWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// Options for rate traces.
#[derive(Debug, Clone, PartialEq)]
pub struct RateTraceOptions {
    /// A sample above this many times the median is an outlier, clipped (default 100).
    pub outlier_factor: f64,
    /// `None` (default): each sample holds from its time relative to the first sample's.
    /// `Some(step)`: the times are ignored and line *i* holds from *i* x `step` (the Zhuge
    /// artifact's replay, 200 ms).
    pub step: Option<Duration>,
    /// Every rate is multiplied by this (default 1).
    pub scale: f64,
    /// Repeat the trace when the run is longer than it (default true, as mahimahi does); if false
    /// the last rate holds to the end of the run.
    pub repeat: bool,
}

impl Default for RateTraceOptions {
    fn default() -> Self {
        RateTraceOptions { outlier_factor: 100.0, step: None, scale: 1.0, repeat: true }
    }
}

/// A gap this many times the median step (or less than its inverse) is irregular.
const IRREGULAR_STEP_FACTOR: f64 = 1.5;

fn error(file: &str, line: Option<usize>, message: impl Into<String>) -> TraceError {
    TraceError { file: file.to_string(), line, message: message.into() }
}

/// The largest text file read as a trace (or a scenario): 256 MiB, ten times an hour of a 100
/// Mbit/s mahimahi trace. A bound, because a path such as `/dev/zero` would otherwise be read
/// until memory runs out.
pub const MAX_TEXT_FILE_BYTES: u64 = 256 << 20;

/// Reads a text file of at most [`MAX_TEXT_FILE_BYTES`]: refuses what is not a regular file
/// (a directory, a FIFO that would block, a device that never ends), a larger file and one that
/// is not UTF-8. The error says why, without the path (the caller names it).
pub fn read_text_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        let what = if meta.is_dir() { "a directory" } else { "not a regular file" };
        return Err(format!("{what}, expected a text file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TEXT_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_TEXT_FILE_BYTES {
        return Err(format!("larger than {} MiB, expected a smaller text file", MAX_TEXT_FILE_BYTES >> 20));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text ({e})"))
}

fn read(path: &Path) -> Result<String, TraceError> {
    read_text_file(path)
        .map_err(|e| error(&path.display().to_string(), None, format!("cannot read the trace: {e}")))
}

/// Lines that carry data: `(1-based number, trimmed text)`.
fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// Parses a mahimahi trace; `source` names it in errors.
pub fn parse_mahimahi(text: &str, source: &str) -> Result<DeliveryTrace, TraceError> {
    let mut stamps: Vec<u64> = Vec::new();
    let mut zeros = 0usize;
    let mut last: Option<(u64, usize)> = None;
    let mut same_ms = 0u64;
    for (n, l) in data_lines(text) {
        let ms: u64 = l.parse().map_err(|_| {
            error(source, Some(n), format!("got {l:?}, expected a whole number of milliseconds"))
        })?;
        if let Some((prev, prev_line)) = last {
            if ms < prev {
                return Err(error(
                    source,
                    Some(n),
                    format!("timestamp {ms} ms is before the previous one ({prev} ms, line {prev_line})"),
                ));
            }
        }
        if ms > u64::MAX / 1_000_000 {
            return Err(error(source, Some(n), format!("timestamp {ms} ms is too large")));
        }
        // 1 Tbit/s, the largest rate lowlat takes anywhere (as for rate traces).
        same_ms = if last.is_some_and(|(prev, _)| prev == ms) { same_ms + 1 } else { 1 };
        if same_ms > MAX_OPPORTUNITIES_PER_MS {
            return Err(error(
                source,
                Some(n),
                format!(
                    "more than {MAX_OPPORTUNITIES_PER_MS} delivery opportunities at {ms} ms: above 1 Tbit/s, the \
                     largest rate a trace may hold"
                ),
            ));
        }
        last = Some((ms, n));
        if ms == 0 {
            zeros += 1;
        } else {
            stamps.push(ms);
        }
    }
    let Some(&period) = stamps.last() else {
        return Err(error(
            source,
            None,
            "no delivery opportunity: a mahimahi trace needs at least one timestamp above 0",
        ));
    };
    let mut opportunities: Vec<Duration> = stamps.into_iter().map(Duration::from_millis).collect();
    opportunities.extend(std::iter::repeat_n(Duration::from_millis(period), zeros));
    DeliveryTrace::new(opportunities, Duration::from_millis(period), MAHIMAHI_OPPORTUNITY_BYTES)
        .map_err(|m| error(source, None, m))
}

/// The most mahimahi opportunities (1500 B each) in one millisecond: 1 Tbit/s.
pub const MAX_OPPORTUNITIES_PER_MS: u64 = 83_333;

/// Loads a mahimahi trace file.
pub fn load_mahimahi(path: &Path) -> Result<DeliveryTrace, TraceError> {
    parse_mahimahi(&read(path)?, &path.display().to_string())
}

/// The largest rate a rate-trace sample may hold (1 Tbit/s, in Mbit/s).
pub const MAX_TRACE_MBPS: f64 = 1e6;

/// Parses a two-column `<seconds> <Mbit/s>` trace; `source` names it in errors and warnings.
pub fn parse_rate_trace(
    text: &str,
    source: &str,
    opts: &RateTraceOptions,
) -> Result<(RateSchedule, Vec<TraceWarning>), TraceError> {
    let mut samples: Vec<(f64, f64, usize)> = Vec::new();
    for (n, l) in data_lines(text) {
        let cols: Vec<&str> = l.split_whitespace().collect();
        if cols.len() != 2 {
            return Err(error(
                source,
                Some(n),
                format!("got {} columns, expected two: `<seconds> <Mbit/s>`", cols.len()),
            ));
        }
        let num = |s: &str, what: &str| -> Result<f64, TraceError> {
            match s.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(error(
                    source,
                    Some(n),
                    format!("got {s:?}, expected a non-negative number of {what}"),
                )),
            }
        };
        let t = num(cols[0], "seconds")?;
        let r = num(cols[1], "Mbit/s")?;
        // 1 Tbit/s, the largest rate lowlat takes anywhere: beyond it a sample is no measurement.
        if r > MAX_TRACE_MBPS {
            return Err(error(
                source,
                Some(n),
                format!("got {} Mbit/s, expected at most {MAX_TRACE_MBPS} Mbit/s (1 Tbit/s)", cols[1]),
            ));
        }
        if let Some(&(pt, _, pl)) = samples.last() {
            if t <= pt {
                return Err(error(
                    source,
                    Some(n),
                    format!("time {t} s is not after the previous sample's {pt} s (line {pl})"),
                ));
            }
        }
        samples.push((t, r, n));
    }
    if samples.is_empty() {
        return Err(error(source, None, "no samples: expected lines of `<seconds> <Mbit/s>`"));
    }
    if samples.iter().all(|s| s.1 == 0.0) {
        return Err(error(source, None, "every sample is 0 Mbit/s: a link on this trace would never send"));
    }
    if !(opts.scale.is_finite() && opts.scale > 0.0) {
        return Err(error(source, None, format!("scale {}: expected a positive number", opts.scale)));
    }
    let mut sorted: Vec<f64> = samples.iter().map(|s| s.1).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let mut warnings = Vec::new();

    // Steps between samples: the median is the trace's typical step.
    let gaps: Vec<f64> = samples.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let median_gap = if gaps.is_empty() {
        None
    } else {
        let mut g = gaps.clone();
        g.sort_by(f64::total_cmp);
        Some(g[g.len() / 2])
    };
    if let Some(m) = median_gap.filter(|m| *m > 0.0) {
        let irregular = |g: f64| g > m * IRREGULAR_STEP_FACTOR || g < m / IRREGULAR_STEP_FACTOR;
        let count = gaps.iter().filter(|g| irregular(**g)).count();
        if count > 0 {
            let (worst, &g) = gaps
                .iter()
                .enumerate()
                .max_by(|a, b| (a.1 / m).max(m / a.1).total_cmp(&(b.1 / m).max(m / b.1)))
                .expect("there are gaps");
            let how = match opts.step {
                Some(st) => format!("replayed one line every {st} regardless"),
                None => "replayed with their own times".to_string(),
            };
            warnings.push(TraceWarning {
                file: source.to_string(),
                line: samples[worst + 1].2,
                message: format!(
                    "{count} of {} steps are irregular (more than {IRREGULAR_STEP_FACTOR}x from the median \
                     step of {m:.3} s; the most irregular, {g:.3} s, ends on this line): {how}",
                    gaps.len()
                ),
            });
        }
    }

    let first_t = samples[0].0;
    let mut points: Vec<(Time, Bitrate)> = Vec::with_capacity(samples.len());
    let mut prev_rate: Option<f64> = None;
    for (i, &(t, r, n)) in samples.iter().enumerate() {
        let rate = if median > 0.0 && r > opts.outlier_factor * median {
            let replacement = prev_rate.unwrap_or(median);
            warnings.push(TraceWarning {
                file: source.to_string(),
                line: n,
                message: format!(
                    "bandwidth {r} Mbit/s is more than {}x the trace's median ({median} Mbit/s): clipped to {replacement} Mbit/s",
                    opts.outlier_factor
                ),
            });
            replacement
        } else {
            r
        };
        prev_rate = Some(rate);
        // The cap holds after scaling too: `trace_scale` must not make a sample absurd.
        if rate * opts.scale > MAX_TRACE_MBPS {
            return Err(error(
                source,
                Some(n),
                format!(
                    "got {rate} Mbit/s x trace_scale {:e} = {:e} Mbit/s, expected at most {MAX_TRACE_MBPS} Mbit/s (1 Tbit/s)",
                    opts.scale,
                    rate * opts.scale
                ),
            ));
        }
        let bitrate = Bitrate::from_bps_f64(rate * opts.scale * 1e6);
        let at = match opts.step {
            Some(st) => Time::ZERO + Duration(st.as_nanos().saturating_mul(i as u64)),
            // Relative to the first sample: a slice of a longer recording plays from the start.
            None => Time::from_secs_f64(t - first_t),
        };
        if points.last().is_some_and(|p| p.0 >= at) {
            return Err(error(source, Some(n), format!("time {t} s is too close to the previous sample")));
        }
        points.push((at, bitrate));
    }
    let last = points[points.len() - 1].0;
    let schedule = if opts.repeat {
        // One repetition: to the last sample plus one typical step.
        let step = match (opts.step, median_gap) {
            (Some(st), _) => st,
            (None, Some(m)) if m > 0.0 => Duration::from_secs_f64(m),
            _ => Duration::from_secs(1),
        };
        let period = Duration(last.as_nanos().saturating_add(step.as_nanos().max(1)));
        RateSchedule::looping(points, period)
    } else {
        RateSchedule::new(points)
    }
    .map_err(|m| error(source, None, m))?;
    Ok((schedule, warnings))
}

/// Loads a two-column rate trace file.
pub fn load_rate_trace(
    path: &Path,
    opts: &RateTraceOptions,
) -> Result<(RateSchedule, Vec<TraceWarning>), TraceError> {
    parse_rate_trace(&read(path)?, &path.display().to_string(), opts)
}

/// Parses a trace of either format, chosen by its first data line: one integer is mahimahi, two
/// numbers a rate trace.
pub fn parse_trace_auto(
    text: &str,
    source: &str,
    opts: &RateTraceOptions,
) -> Result<(Capacity, Vec<TraceWarning>), TraceError> {
    let Some((n, first)) = data_lines(text).next() else {
        return Err(error(source, None, "the trace is empty"));
    };
    let cols: Vec<&str> = first.split_whitespace().collect();
    match cols.len() {
        1 if cols[0].parse::<u64>().is_ok() => {
            parse_mahimahi(text, source).map(|t| (Capacity::Opportunities(t), vec![]))
        }
        2 => parse_rate_trace(text, source, opts).map(|(s, w)| (Capacity::Schedule(s), w)),
        _ => Err(error(
            source,
            Some(n),
            format!(
                "got {first:?}: neither a mahimahi timestamp (one whole number) nor `<seconds> <Mbit/s>`"
            ),
        )),
    }
}

/// Loads a trace file of either format (see [`parse_trace_auto`]).
pub fn load_trace_auto(
    path: &Path,
    opts: &RateTraceOptions,
) -> Result<(Capacity, Vec<TraceWarning>), TraceError> {
    parse_trace_auto(&read(path)?, &path.display().to_string(), opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::Server;
    use lowlat_core::Bytes;

    #[test]
    fn a_single_line_1_is_a_12_mbps_link() {
        let t = parse_mahimahi("1\n", "one.trace").unwrap();
        let cap = Capacity::Opportunities(t);
        assert_eq!(cap.mean_rate(Time::ZERO, Time::from_secs(1)), Bitrate::mbps(12));
        let mut s = Server::new(cap, lowlat_core::rng::stream(1, "test"));
        let mut t = Time::ZERO;
        for _ in 0..12_000 {
            t = s.finish_time(t, Bytes(1500)).unwrap();
        }
        assert_eq!(t, Time::from_secs(12));
    }

    fn once() -> RateTraceOptions {
        RateTraceOptions { repeat: false, ..RateTraceOptions::default() }
    }

    #[test]
    fn rate_trace_is_piecewise_constant_from_its_first_sample() {
        let (s, w) = parse_rate_trace("0.2 10\n0.4 20\n# comment\n\n0.6 5\n", "w.trace", &once()).unwrap();
        assert!(w.is_empty());
        let cap = Capacity::Schedule(s);
        assert_eq!(cap.rate_at(Time::ZERO), Bitrate::mbps(10));
        assert_eq!(cap.rate_at(Time::from_millis(199)), Bitrate::mbps(10));
        assert_eq!(cap.rate_at(Time::from_millis(200)), Bitrate::mbps(20));
        assert_eq!(cap.rate_at(Time::from_millis(400)), Bitrate::mbps(5));
        assert_eq!(cap.rate_at(Time::from_secs(100)), Bitrate::mbps(5));
    }

    /// The capacity served in each 100 ms of `secs` seconds, in bytes.
    fn series(cap: &Capacity, secs: u64) -> Vec<u64> {
        (0..secs * 10)
            .map(|i| cap.capacity_bytes(Time::from_millis(i * 100), Time::from_millis(i * 100 + 100)) as u64)
            .collect()
    }

    #[test]
    fn a_trace_starting_at_4500_s_plays_as_the_same_trace_shifted_to_0() {
        let rates = [12.5, 3.0, 47.25, 0.5, 22.0, 8.0, 30.0, 1.0];
        let text = |t0: f64| -> String {
            rates.iter().enumerate().map(|(i, r)| format!("{} {r}\n", t0 + 0.2 * i as f64)).collect()
        };
        let o = RateTraceOptions::default();
        let (late, w1) = parse_rate_trace(&text(4505.67), "late", &o).unwrap();
        let (early, w2) = parse_rate_trace(&text(0.0), "early", &o).unwrap();
        assert!(w1.is_empty() && w2.is_empty(), "{w1:?} {w2:?}");
        let (late, early) = (Capacity::Schedule(late), Capacity::Schedule(early));
        // 4 s of a 1.6 s trace: the start and two and a half repetitions.
        let (a, b) = (series(&late, 4), series(&early, 4));
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            // Float seconds at 4505 s carry sub-microsecond rounding at the step edges.
            assert!(x.abs_diff(*y) <= 10, "100 ms slot {i}: {x} B vs {y} B");
        }
        // Not the old behaviour (the first rate until 4505.67 s): it changes within the run.
        assert_eq!(late.rate_at(Time::from_millis(100)), Bitrate::from_bps_f64(12.5e6));
        assert_eq!(late.rate_at(Time::from_millis(500)), Bitrate::from_bps_f64(47.25e6));
    }

    #[test]
    fn a_rate_trace_loops_when_the_run_is_longer() {
        // Three samples 0.2 s apart: one repetition is 0.6 s.
        let (s, _) =
            parse_rate_trace("7.0 10\n7.2 20\n7.4 40\n", "loop", &RateTraceOptions::default()).unwrap();
        assert_eq!(s.period(), Some(Duration::from_millis(600)));
        let cap = Capacity::Schedule(s);
        for rep in [0u64, 1, 7, 1000] {
            let base = rep * 600;
            assert_eq!(cap.rate_at(Time::from_millis(base + 100)), Bitrate::mbps(10));
            assert_eq!(cap.rate_at(Time::from_millis(base + 300)), Bitrate::mbps(20));
            assert_eq!(cap.rate_at(Time::from_millis(base + 500)), Bitrate::mbps(40));
        }
        // 6 s = ten repetitions of (10 + 20 + 40) Mbit/s x 0.2 s = 1.75 MB each.
        assert_eq!(cap.capacity_bytes(Time::ZERO, Time::from_secs(6)), 17_500_000.0);
        // A server crosses the wrap: 625 kB from 0.5 s take 0.1 s at 40 then 0.1 s at 10 Mbit/s.
        let mut srv = crate::capacity::Server::new(cap.clone(), lowlat_core::rng::stream(1, "t"));
        assert_eq!(srv.finish_time(Time::from_millis(500), Bytes(625_000)), Some(Time::from_millis(700)));
        // Without repeating, the last rate holds.
        let (s, _) = parse_rate_trace("7.0 10\n7.2 20\n7.4 40\n", "once", &once()).unwrap();
        assert_eq!(s.rate_at(Time::from_secs(100)), Bitrate::mbps(40));
    }

    #[test]
    fn the_artifacts_step_replays_lines_at_a_fixed_pace_and_scales() {
        let o = RateTraceOptions { step: Some(Duration::from_millis(200)), scale: 15.0 / 13.0, ..once() };
        // Irregular times (a 5 s hole) are ignored in step mode, but reported.
        let (s, w) = parse_rate_trace("100 13\n100.2 26\n105.2 39\n105.4 13\n", "st", &o).unwrap();
        assert_eq!(s.rate_at(Time::from_millis(100)), Bitrate::mbps(15));
        assert_eq!(s.rate_at(Time::from_millis(300)), Bitrate::mbps(30));
        assert_eq!(s.rate_at(Time::from_millis(500)), Bitrate::mbps(45));
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].line, 3, "{}", w[0]);
        assert!(w[0].message.contains("1 of 3 steps are irregular"), "{}", w[0]);
    }

    #[test]
    fn irregular_steps_are_warned_about_once() {
        let (s, w) = parse_rate_trace("0.2 1\n0.4 1\n0.6 1\n72 2\n72.2 2\n", "x", &once()).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].line, 4);
        assert!(w[0].to_string().starts_with("x:4: 1 of 4 steps are irregular"), "{}", w[0]);
        // Replayed with its own times: the hole lasts.
        assert_eq!(s.rate_at(Time::from_secs(50)), Bitrate::mbps(1));
    }

    #[test]
    fn a_mahimahi_trace_becomes_a_looping_schedule_with_the_same_bytes() {
        let t = parse_mahimahi("1\n1\n3\n5\n", "m").unwrap();
        let s = t.to_rate_schedule();
        assert_eq!(s.period(), Some(Duration::from_millis(5)));
        let (a, b) = (Capacity::Opportunities(t), Capacity::Schedule(s));
        for ms in [1u64, 2, 3, 5, 17, 1000] {
            let (x, y) = (
                a.capacity_bytes(Time::ZERO, Time::from_millis(ms)),
                b.capacity_bytes(Time::ZERO, Time::from_millis(ms)),
            );
            assert_eq!(x, y, "first {ms} ms");
        }
    }

    fn err(text: &str, mahimahi: bool) -> String {
        let e = if mahimahi {
            parse_mahimahi(text, "bad.trace").unwrap_err()
        } else {
            parse_rate_trace(text, "bad.trace", &RateTraceOptions::default()).unwrap_err()
        };
        e.to_string()
    }

    #[test]
    fn corrupt_lines_are_reported_with_file_and_line() {
        assert!(err("1\n2\nx\n", true).starts_with("bad.trace:3: "));
        assert!(err("1\n5\n3\n", true).starts_with("bad.trace:3: "));
        assert!(err("1\n-4\n", true).starts_with("bad.trace:2: "));
        assert!(err("", true).starts_with("bad.trace: "));
        assert!(err("0\n0\n", true).starts_with("bad.trace: "));
        assert!(err("0.2 10\n0.4 abc\n", false).starts_with("bad.trace:2: "));
        assert!(err("0.2 10\n0.4 -3\n", false).starts_with("bad.trace:2: "));
        assert!(err("0.2 10\n-0.4 3\n", false).starts_with("bad.trace:2: "));
        assert!(err("0.2 10\n0.2 3\n", false).starts_with("bad.trace:2: "));
        assert!(err("0.2 10\n0.4 3 7\n", false).starts_with("bad.trace:2: "));
        assert!(err("0.2 10\n0.4 NaN\n", false).starts_with("bad.trace:2: "));
        assert!(err("0.2 10\n0.4 inf\n", false).starts_with("bad.trace:2: "));
        assert!(err("\n# nothing\n", false).starts_with("bad.trace: "));
    }

    #[test]
    fn an_absurd_outlier_is_clipped_with_a_warning() {
        let text = "0.2 80\n0.4 79\n0.6 127817\n0.8 81\n";
        let (s, w) = parse_rate_trace(text, "c1.trace", &once()).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].line, 3);
        assert!(w[0].to_string().starts_with("c1.trace:3: "), "{}", w[0]);
        assert!(w[0].message.contains("127817") && w[0].message.contains("clipped to 79"));
        assert_eq!(s.rate_at(Time::from_millis(500)), Bitrate::mbps(79));
    }

    #[test]
    fn auto_detects_the_format() {
        let o = RateTraceOptions::default();
        assert!(matches!(parse_trace_auto("1\n2\n", "a", &o).unwrap().0, Capacity::Opportunities(_)));
        assert!(matches!(parse_trace_auto("0.2 3\n", "a", &o).unwrap().0, Capacity::Schedule(_)));
        assert!(parse_trace_auto("a b c\n", "a", &o).unwrap_err().to_string().starts_with("a:1: "));
    }

    #[test]
    fn never_panics_on_garbage() {
        let o = RateTraceOptions::default();
        for text in [
            "\u{0}\u{1}",
            "1e400 5",
            "99999999999999999999999",
            "1 2 3",
            "0",
            "5\n4",
            " \t \n",
            "18446744073709551615",
        ] {
            let _ = parse_trace_auto(text, "g", &o);
            let _ = parse_mahimahi(text, "g");
            let _ = parse_rate_trace(text, "g", &o);
        }
    }

    #[test]
    fn the_zhuge_traces_load_when_present() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/zhuge");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return; // the product and its tests must work without the shared traces
        };
        let mut loaded = 0;
        let mut warned = Vec::new();
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pitree-trace") {
                let (_, w) =
                    load_rate_trace(&p, &RateTraceOptions::default()).unwrap_or_else(|e| panic!("{e}"));
                loaded += 1;
                if !w.is_empty() {
                    warned.push(p.file_name().unwrap().to_string_lossy().into_owned());
                }
            }
        }
        assert!(loaded > 0);
        // The README of the traces names one bad sample in the pitree4g family.
        assert!(warned.iter().any(|n| n.starts_with("pitree4g_")), "no outlier found; warned: {warned:?}");
    }

    #[test]
    fn absurd_and_all_zero_rate_traces_are_refused_with_their_line() {
        let e = parse_rate_trace("0 1e308\n1 2\n", "t.trace", &once()).unwrap_err();
        assert_eq!(e.line, Some(1), "{e}");
        assert!(e.to_string().contains("at most"), "{e}");
        let e = parse_rate_trace("0 0\n1 0\n", "z.trace", &once()).unwrap_err();
        assert!(e.to_string().contains("every sample is 0"), "{e}");
        assert!(parse_rate_trace("0 0\n1 3\n", "ok.trace", &once()).is_ok());
    }
}
