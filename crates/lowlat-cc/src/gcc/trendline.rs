//! The trendline filter: libwebrtc's `TrendlineEstimator` (goog_cc/trendline_estimator.cc),
//! which replaced the Kalman filter of draft-ietf-rmcat-gcc-02 §5.3 (see `kalman.rs`).
//!
//! Each group sample adds its delay variation (arrival delta - send delta) to an accumulated
//! delay, smooths it exponentially (`trendline_smoothing`, 0.9) and keeps the last
//! `trendline_window` (20) points (arrival time since the first sample, smoothed delay). Once the
//! window is full, the least-squares slope of those points is the trend (kept when all points
//! share one arrival time). The over-use detector compares the modified trend
//! `min(samples, trendline_sample_cap) x trend x trendline_gain` with its threshold.
//!
//! Not modelled (off by default in libwebrtc): sorting the window by arrival
//! (`enable_sort`), the slope cap (`enable_cap`), ignoring small packets, and a network-state
//! predictor.

use super::GccConfig;
use std::collections::VecDeque;

/// Most samples counted (`kDeltaCounterMax`).
const SAMPLE_COUNT_MAX: u32 = 1000;

/// The trend after one sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Trend {
    /// The regression slope (ms of delay per ms).
    pub raw: f64,
    /// `min(samples, cap) x slope x gain`, the value compared with the threshold (ms).
    pub modified: f64,
}

/// libwebrtc's trendline estimator.
#[derive(Clone, Debug, Default)]
pub(super) struct Trendline {
    samples: u32,
    accumulated_ms: f64,
    smoothed_ms: f64,
    first_arrival_ms: Option<f64>,
    /// `(arrival ms since the first sample, smoothed delay ms)`.
    window: VecDeque<(f64, f64)>,
    trend: f64,
}

impl Trendline {
    /// Adds one group's delay variation `delta_ms`, observed at `arrival_ms` (the arrival time of
    /// the packet that completed the group, on any fixed origin). None while fewer than two
    /// samples exist (libwebrtc's detector then reports normal usage and leaves its threshold).
    pub fn update(&mut self, cfg: &GccConfig, delta_ms: f64, arrival_ms: f64) -> Option<Trend> {
        self.samples = (self.samples + 1).min(SAMPLE_COUNT_MAX);
        self.accumulated_ms += delta_ms;
        self.smoothed_ms = cfg.trendline_smoothing * self.smoothed_ms
            + (1.0 - cfg.trendline_smoothing) * self.accumulated_ms;
        let first = *self.first_arrival_ms.get_or_insert(arrival_ms);
        self.window.push_back((arrival_ms - first, self.smoothed_ms));
        if self.window.len() > cfg.trendline_window {
            self.window.pop_front();
        }
        if self.window.len() == cfg.trendline_window {
            if let Some(slope) = linear_fit_slope(&self.window) {
                self.trend = slope;
            }
        }
        (self.samples >= 2).then(|| Trend {
            raw: self.trend,
            modified: f64::from(self.samples.min(cfg.trendline_sample_cap)) * self.trend * cfg.trendline_gain,
        })
    }
}

/// Least-squares slope of `(x, y)` points; None when all x are equal.
fn linear_fit_slope(points: &VecDeque<(f64, f64)>) -> Option<f64> {
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) =
        points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + (x - mx) * (y - my), b + (x - mx) * (x - mx)));
    (den != 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steadily_growing_delay_gives_its_slope_once_the_window_is_full() {
        let cfg = GccConfig::default();
        let mut t = Trendline::default();
        // Each 10 ms the delay grows 2 ms: after smoothing converges the slope is 0.2.
        let mut last = None;
        for k in 0..200 {
            last = t.update(&cfg, 2.0, 10.0 * f64::from(k));
            if k < 1 {
                assert_eq!(last, None);
            }
        }
        let trend = last.unwrap();
        assert!((trend.raw - 0.2).abs() < 1e-6, "{trend:?}");
        assert!((trend.modified - 60.0 * 0.2 * 4.0).abs() < 1e-4);
    }
}
