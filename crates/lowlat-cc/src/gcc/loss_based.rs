//! Loss-based control: libwebrtc's classic `SendSideBandwidthEstimation`
//! (goog_cc/send_side_bandwidth_estimation.cc), draft-ietf-rmcat-gcc-02 §6.
//!
//! - The feedback's lost and expected packets accumulate; goog_cc hands them over at most once
//!   per `loss_update_interval` (1 s, `kLossUpdateInterval` of the feedback-only mode), and a loss
//!   fraction is formed once `loss_min_packets` (20) are counted, in 1/256 units as libwebrtc's
//!   8-bit `fraction_lost`.
//! - During the first `loss_start_phase` (2 s) after the first loss report, while no loss was
//!   seen, the target follows the delay-based estimate up (startup probing).
//! - loss <= `loss_low` (2 %): target = `loss_increase_factor` (1.08) x the lowest target of
//!   the last second + `loss_increase_extra` (1 kbit/s).
//! - `loss_low` < loss <= `loss_high` (10 %): hold.
//! - loss > `loss_high`: target x (512 - fraction) / 512, i.e. x (1 - loss/2), at most once per
//!   `loss_decrease_interval` (300 ms) + RTT and once per loss fraction.
//! - The target never exceeds the delay-based estimate nor `max_rate`, never goes below
//!   `min_rate`; a probe result sets it directly (`SetSendBitrate`).
//!
//! Not modelled: the RTT back-off (x0.8 per second while the RTT exceeds 3 s), the receiver's
//! REMB limit, and libwebrtc's newer `LossBasedBweV2` (a field trial that replaces this rule with a
//! loss-model likelihood search; the draft and this file follow the classic rule).

use super::GccConfig;
use lowlat_core::{Duration, Time};
use std::collections::VecDeque;

/// The loss-based estimate.
#[derive(Clone, Debug)]
pub(super) struct LossBased {
    /// Current target, bit/s.
    pub current: f64,
    /// The delay-based estimate, bit/s (infinite until the first, and after a probe).
    delay_limit: f64,
    /// Sliding minimum of the target over the last second, `(time, bit/s)`.
    min_history: VecDeque<(Time, f64)>,
    /// goog_cc's accumulators (handed over once per `loss_update_interval`).
    feedback_lost: u64,
    feedback_expected: u64,
    next_handover: Option<Time>,
    /// SendSideBandwidthEstimation's accumulators (a fraction needs `loss_min_packets`).
    lost: u64,
    expected: u64,
    /// Last loss fraction, 1/256 units.
    fraction_q8: u32,
    has_decreased_since_fraction: bool,
    time_last_decrease: Option<Time>,
    first_report: Option<Time>,
    reported: bool,
}

impl LossBased {
    pub fn new(start_bps: f64) -> LossBased {
        LossBased {
            current: start_bps,
            delay_limit: f64::INFINITY,
            min_history: VecDeque::new(),
            feedback_lost: 0,
            feedback_expected: 0,
            next_handover: None,
            lost: 0,
            expected: 0,
            fraction_q8: 0,
            has_decreased_since_fraction: false,
            time_last_decrease: None,
            first_report: None,
            reported: false,
        }
    }

    /// The last loss fraction (0..1, in 1/256 steps).
    pub fn loss_fraction(&self) -> f64 {
        f64::from(self.fraction_q8) / 256.0
    }

    /// One feedback report's counts; `rtt` is the report's minimum round trip.
    pub fn on_feedback(&mut self, cfg: &GccConfig, lost: u64, expected: u64, rtt: Duration, now: Time) {
        self.feedback_lost += lost;
        self.feedback_expected += expected;
        if self.next_handover.is_some_and(|t| now <= t) {
            return;
        }
        self.next_handover = Some(now + cfg.loss_update_interval);
        let (lost, expected) = (self.feedback_lost, self.feedback_expected);
        self.feedback_lost = 0;
        self.feedback_expected = 0;
        self.first_report.get_or_insert(now);
        if expected == 0 {
            return;
        }
        self.lost += lost;
        self.expected += expected;
        if self.expected < cfg.loss_min_packets {
            return;
        }
        self.has_decreased_since_fraction = false;
        self.fraction_q8 = ((self.lost << 8) / self.expected).min(255) as u32;
        self.lost = 0;
        self.expected = 0;
        self.reported = true;
        self.update_estimate(cfg, rtt, now);
    }

    fn in_start_phase(&self, cfg: &GccConfig, now: Time) -> bool {
        self.first_report.is_none_or(|t| now - t < cfg.loss_start_phase)
    }

    fn update_estimate(&mut self, cfg: &GccConfig, rtt: Duration, now: Time) {
        if self.fraction_q8 == 0 && self.in_start_phase(cfg, now) {
            let new =
                if self.delay_limit.is_finite() { self.current.max(self.delay_limit) } else { self.current };
            if new != self.current {
                self.min_history.clear();
                self.min_history.push_back((now, self.current));
                self.set_target(cfg, new);
                return;
            }
        }
        self.update_min_history(now);
        if !self.reported {
            return self.set_target(cfg, self.current);
        }
        let loss = self.loss_fraction();
        if loss <= cfg.loss_low {
            let lowest = self.min_history.front().map_or(self.current, |h| h.1);
            let new =
                (lowest * cfg.loss_increase_factor + 0.5).floor() + cfg.loss_increase_extra.as_bps_f64();
            return self.set_target(cfg, new);
        }
        if loss > cfg.loss_high
            && !self.has_decreased_since_fraction
            && self.time_last_decrease.is_none_or(|t| now - t >= cfg.loss_decrease_interval + rtt)
        {
            self.time_last_decrease = Some(now);
            self.has_decreased_since_fraction = true;
            let new = self.current * f64::from(512 - self.fraction_q8) / 512.0;
            return self.set_target(cfg, new);
        }
        self.set_target(cfg, self.current);
    }

    /// Keeps the minimum target of the last second (a monotone deque).
    fn update_min_history(&mut self, now: Time) {
        let window = Duration::from_secs(1);
        // libwebrtc adds 1 ms so that an update exactly one second later already ramps up.
        while self.min_history.front().is_some_and(|h| now - h.0 + Duration::from_millis(1) > window) {
            self.min_history.pop_front();
        }
        while self.min_history.back().is_some_and(|h| self.current <= h.1) {
            self.min_history.pop_back();
        }
        self.min_history.push_back((now, self.current));
    }

    fn set_target(&mut self, cfg: &GccConfig, bps: f64) {
        let upper = self.delay_limit.min(cfg.max_rate.as_bps_f64());
        self.current = bps.min(upper).max(cfg.min_rate.as_bps_f64());
    }

    /// A new delay-based estimate caps the target.
    pub fn on_delay_based(&mut self, cfg: &GccConfig, bps: f64) {
        self.delay_limit = bps;
        self.set_target(cfg, self.current);
    }

    /// A probe result sets the target directly.
    pub fn set_send_bitrate(&mut self, cfg: &GccConfig, bps: f64) {
        self.delay_limit = f64::INFINITY;
        self.set_target(cfg, bps);
        self.min_history.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::Bitrate;

    fn cfg() -> GccConfig {
        GccConfig { max_rate: Bitrate::mbps(10), ..GccConfig::default() }
    }

    #[test]
    fn two_percent_loss_still_increases_ten_percent_holds_above_halves_by_loss_over_two() {
        let cfg = cfg();
        let rtt = Duration::from_millis(100);
        let mut l = LossBased::new(1e6);
        l.on_delay_based(&cfg, 5e6);
        // First report (no loss) at 0 s, start phase ends 2 s later.
        l.on_feedback(&cfg, 0, 100, rtt, Time::ZERO);
        assert_eq!(l.current, 5e6, "start phase follows the delay-based estimate up");
        l.on_delay_based(&cfg, 1e6);
        // 2 % loss (5/256 after quantisation) is <= 2 %: increase from the 1 s minimum.
        l.on_feedback(&cfg, 2, 100, rtt, Time::from_millis(2500));
        assert!((l.loss_fraction() - 5.0 / 256.0).abs() < 1e-12);
        assert_eq!(l.current, 1e6, "capped by the delay-based estimate");
        l.on_delay_based(&cfg, 9e6);
        l.on_feedback(&cfg, 0, 100, rtt, Time::from_millis(3600));
        assert!((l.current - (1e6 * 1.08 + 1000.0)).abs() < 1e-6);
        // 10 % (25/256 = 9.8 %): hold.
        let before = l.current;
        l.on_feedback(&cfg, 10, 100, rtt, Time::from_millis(4700));
        assert_eq!(l.current, before);
        // 20 %: x (512 - 51) / 512 ...
        l.on_feedback(&cfg, 20, 100, rtt, Time::from_millis(5800));
        assert!((l.current - before * 461.0 / 512.0).abs() < 1e-6);
        // ... and the feedback accumulates for a second before the next loss update.
        let after = l.current;
        l.on_feedback(&cfg, 20, 100, rtt, Time::from_millis(6000));
        assert_eq!(l.current, after);
    }
}
