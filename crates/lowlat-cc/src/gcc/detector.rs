//! The over-use detector and its adaptive threshold (draft-ietf-rmcat-gcc-02 §5.4; libwebrtc's
//! `TrendlineEstimator::Detect` / `UpdateThreshold`).
//!
//! - m > gamma: over-use once m has stayed above gamma for more than `overuse_time` (10 ms, counted
//!   in send-time deltas, the first sample counting half), over at least two samples, and the raw
//!   trend has not fallen since the previous sample.
//! - m < -gamma: under-use. Otherwise normal.
//! - The threshold then moves towards |m|: gamma += dt x k x (|m| - gamma), k = `k_up` when
//!   |m| > gamma and `k_down` otherwise, dt the time since the last update capped at
//!   `threshold_max_dt` (100 ms), clamped to [`threshold_min`, `threshold_max`] (6, 600 ms). No
//!   update when |m| exceeds gamma by more than `threshold_max_jump` (15 ms), so a capacity drop
//!   does not drag the threshold along.
//! - dt runs on the packets' clock: the arrival time of the packet that completed the group, as
//!   libwebrtc passes `arrival_time_ms` (not the time the feedback reached the sender, which would
//!   give every group after the first of a report dt = 0).

use super::trendline::Trend;
use super::{GccConfig, Usage};

/// The detector state.
#[derive(Clone, Debug)]
pub(super) struct Detector {
    /// gamma, ms.
    pub threshold: f64,
    /// Arrival time (ms) of the last threshold update.
    last_update_ms: Option<f64>,
    /// Time m has stayed above gamma, ms (None: not over).
    time_over_ms: Option<f64>,
    overuse_count: u32,
    prev_trend: f64,
    pub usage: Usage,
}

impl Detector {
    pub fn new(cfg: &GccConfig) -> Detector {
        Detector {
            threshold: cfg.threshold_initial.as_secs_f64() * 1e3,
            last_update_ms: None,
            time_over_ms: None,
            overuse_count: 0,
            prev_trend: 0.0,
            usage: Usage::Normal,
        }
    }

    /// One sample: `trend` from the filter (None before it has two samples), `send_delta_ms`
    /// between the two groups, `arrival_ms` the completing packet's arrival.
    pub fn detect(&mut self, cfg: &GccConfig, trend: Option<Trend>, send_delta_ms: f64, arrival_ms: f64) {
        let Some(Trend { raw, modified: m }) = trend else {
            self.usage = Usage::Normal;
            return;
        };
        if m > self.threshold {
            let over = match self.time_over_ms {
                None => send_delta_ms / 2.0,
                Some(t) => t + send_delta_ms,
            };
            self.time_over_ms = Some(over);
            self.overuse_count += 1;
            if over > cfg.overuse_time.as_secs_f64() * 1e3 && self.overuse_count > 1 && raw >= self.prev_trend
            {
                self.time_over_ms = Some(0.0);
                self.overuse_count = 0;
                self.usage = Usage::Overusing;
            }
        } else {
            self.time_over_ms = None;
            self.overuse_count = 0;
            self.usage = if m < -self.threshold { Usage::Underusing } else { Usage::Normal };
        }
        self.prev_trend = raw;
        self.adapt_threshold(cfg, m, arrival_ms);
    }

    fn adapt_threshold(&mut self, cfg: &GccConfig, m: f64, now_ms: f64) {
        let last = *self.last_update_ms.get_or_insert(now_ms);
        self.last_update_ms = Some(now_ms);
        let abs_m = m.abs();
        if abs_m > self.threshold + cfg.threshold_max_jump.as_secs_f64() * 1e3 {
            return;
        }
        let k = if abs_m < self.threshold { cfg.k_down } else { cfg.k_up };
        let dt_ms = (now_ms - last).min(cfg.threshold_max_dt.as_secs_f64() * 1e3);
        self.threshold += k * (abs_m - self.threshold) * dt_ms;
        self.threshold = self
            .threshold
            .clamp(cfg.threshold_min.as_secs_f64() * 1e3, cfg.threshold_max.as_secs_f64() * 1e3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trend(m: f64) -> Option<Trend> {
        Some(Trend { raw: m / 240.0, modified: m })
    }

    #[test]
    fn threshold_adapts_within_its_clamp_on_the_packets_clock() {
        let cfg = GccConfig::default();
        let mut d = Detector::new(&cfg);
        // |m| = 0 for long: decays towards 0 but stops at 6 ms.
        for i in 0..1000 {
            d.detect(&cfg, trend(0.0), 10.0, 10.0 * f64::from(i));
        }
        assert!((d.threshold - 6.0).abs() < 1e-9);
        // |m| slightly above: rises with k_up over the 10 ms between the packets' arrivals.
        let before = d.threshold;
        d.detect(&cfg, trend(10.0), 10.0, 10_000.0);
        assert!((d.threshold - (before + 0.0087 * (10.0 - before) * 10.0)).abs() < 1e-9);
        // A jump of more than 15 ms above gamma leaves it alone.
        let before = d.threshold;
        d.detect(&cfg, trend(before + 20.0), 10.0, 10_010.0);
        assert_eq!(d.threshold, before);
        // Two samples with the same arrival time (one report) step by their own dt = 0 only
        // when the packets themselves arrived together.
        let before = d.threshold;
        d.detect(&cfg, trend(7.0), 10.0, 10_030.0);
        assert!((d.threshold - (before + 0.0087 * (7.0 - before) * 20.0)).abs() < 1e-9);
    }

    #[test]
    fn overuse_needs_more_than_10_ms_over_two_samples_and_a_rising_trend() {
        let cfg = GccConfig::default();
        let mut d = Detector::new(&cfg);
        d.detect(&cfg, trend(20.0), 8.0, 0.0);
        assert_eq!(d.usage, Usage::Normal, "4 ms over, one sample");
        d.detect(&cfg, trend(20.0), 8.0, 8.0);
        assert_eq!(d.usage, Usage::Overusing, "12 ms over, two samples, trend not falling");
        let mut d = Detector::new(&cfg);
        d.detect(&cfg, trend(30.0), 8.0, 0.0);
        d.detect(&cfg, trend(20.0), 8.0, 8.0);
        assert_eq!(d.usage, Usage::Normal, "a falling trend is not over-use yet");
        d.detect(&cfg, trend(-20.0), 8.0, 16.0);
        assert_eq!(d.usage, Usage::Underusing);
    }
}
