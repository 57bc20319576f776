//! Loaders for capacity traces, with errors that name the file and the line.
//!
//! - **mahimahi**: one integer per line, the millisecond timestamp of a 1500-byte delivery
//!   opportunity; non-decreasing; the trace repeats with a period equal to its last timestamp
//!   (a file holding the single line `1` is a 12 Mbit/s link). A timestamp 0 is the same instant as
//!   the end of the period in a repeating trace and is placed there.
//! - **rate** (the Zhuge `.pitree-trace` files): `<seconds since start> <Mbit/s>` per line,
//!   piecewise constant until the next sample; the first rate also holds before its time, the last
//!   to the end of the run. Blank lines and `#` comments are skipped.
//!
//! Measured traces hold the odd absurd sample (one Zhuge 4G trace with a mean of 79 Mbit/s has a
//! sample of 127 817 Mbit/s). A sample above `outlier_factor` x the trace's median is clipped to
//! the previous sample's rate (the median for a first sample) and reported as a [`TraceWarning`].
//! Nothing here panics on any input.

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
    /// A sample above this many times the median is an outlier (default 100).
    pub outlier_factor: f64,
}

impl Default for RateTraceOptions {
    fn default() -> Self {
        RateTraceOptions { outlier_factor: 100.0 }
    }
}

fn error(file: &str, line: Option<usize>, message: impl Into<String>) -> TraceError {
    TraceError { file: file.to_string(), line, message: message.into() }
}

fn read(path: &Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path)
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

/// Loads a mahimahi trace file.
pub fn load_mahimahi(path: &Path) -> Result<DeliveryTrace, TraceError> {
    parse_mahimahi(&read(path)?, &path.display().to_string())
}

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
    let mut sorted: Vec<f64> = samples.iter().map(|s| s.1).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let mut warnings = Vec::new();
    let mut points: Vec<(Time, Bitrate)> = Vec::with_capacity(samples.len());
    let mut prev_rate: Option<f64> = None;
    for &(t, r, n) in &samples {
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
        let bitrate = Bitrate::from_bps_f64(rate * 1e6);
        // The first rate also holds before its sample time.
        let at = if points.is_empty() { Time::ZERO } else { Time::from_secs_f64(t) };
        if points.last().is_some_and(|p| p.0 >= at) {
            return Err(error(source, Some(n), format!("time {t} s is too close to the previous sample")));
        }
        points.push((at, bitrate));
    }
    let schedule = RateSchedule::new(points).map_err(|m| error(source, None, m))?;
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

    #[test]
    fn rate_trace_is_piecewise_constant() {
        let (s, w) =
            parse_rate_trace("0.2 10\n0.4 20\n# comment\n\n0.6 5\n", "w.trace", &RateTraceOptions::default())
                .unwrap();
        assert!(w.is_empty());
        let cap = Capacity::Schedule(s);
        assert_eq!(cap.rate_at(Time::ZERO), Bitrate::mbps(10));
        assert_eq!(cap.rate_at(Time::from_millis(399)), Bitrate::mbps(10));
        assert_eq!(cap.rate_at(Time::from_millis(400)), Bitrate::mbps(20));
        assert_eq!(cap.rate_at(Time::from_secs(100)), Bitrate::mbps(5));
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
        let (s, w) = parse_rate_trace(text, "c1.trace", &RateTraceOptions::default()).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].line, 3);
        assert!(w[0].to_string().starts_with("c1.trace:3: "), "{}", w[0]);
        assert!(w[0].message.contains("127817") && w[0].message.contains("clipped to 79"));
        assert_eq!(s.rate_at(Time::from_millis(700)), Bitrate::mbps(79));
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
}
