//! AIMD rate control: libwebrtc's `AimdRateControl` (remote_bitrate_estimator/aimd_rate_control.cc,
//! send side), draft-ietf-rmcat-gcc-02 §5.5.
//!
//! States (§5.5): normal usage moves hold -> increase (restarting the change timer, so the first
//! increase after a hold is not credited with the time spent holding), over-use -> decrease,
//! under-use -> hold; a decrease always ends in hold.
//! - Increase, capped at `throughput_cap_factor` (1.5) x throughput + `throughput_cap_extra`
//!   (10 kbit/s); if the rate is already at or above the cap it stays.
//!   - Without a link-capacity estimate (`link_capacity.rs`): multiplicative,
//!     rate x (`increase_per_second`^min(dt, 1 s) - 1), at least `multiplicative_min_increase`
//!     (1 kbit/s) per update; a full 8 % on the very first update (no previous change).
//!   - With one: additive, dt x max(`additive_min_increase` (4 kbit/s per s), packet /
//!     (`response_time_factor` (2) x (rtt + `response_time_extra` (100 ms)))), the packet being
//!     a 30 fps frame split into packets of at most 1200 B. A throughput above the band's upper
//!     end resets the estimate (the path changed).
//! - Decrease: to `beta` (0.85) x throughput - `backoff_extra` (5 kbit/s, when above it); if
//!   that is above the current rate, `beta` x the capacity estimate instead; never an increase.
//!   A throughput below the band's lower end resets the estimate; then the throughput updates it.
//! - The caller (`mod.rs`, libwebrtc's `DelayBasedBwe`) applies an over-use at most once per
//!   clamp(rtt, 10 ms, 200 ms) unless the throughput fell below half the rate
//!   ([`Aimd::time_to_reduce_further`]).
//! - With `throughput_cap_lowers` (the Zhuge artifact's `ClampBitrate`) the throughput cap
//!   applies after every update, a hold or a decrease included, and may lower the rate.
//! - The rate stays within [`min_rate`, `max_rate`] (libwebrtc clamps AIMD to the minimum only;
//!   the configured maximum applies to the target later, with the same result).
//!
//! Not modelled: ALR (no increase while application-limited is a field trial, off by default),
//! the network-state estimate bounds (no network estimator in goog_cc by default), the 5 s
//! initialisation from the first throughput (the start rate initialises the estimate here, as
//! `SetStartBitrate` does in libwebrtc).

use super::link_capacity::LinkCapacity;
use super::{AimdState, GccConfig, Usage};
use lowlat_core::{Duration, Time};

/// The rate controller.
#[derive(Clone, Debug)]
pub(super) struct Aimd {
    /// Delay-based rate, bit/s.
    pub rate: f64,
    pub state: AimdState,
    last_change: Option<Time>,
    pub capacity: LinkCapacity,
    /// The last throughput measured, bit/s (the start rate until the first).
    latest_throughput: f64,
    /// Round-trip time, s (libwebrtc starts from 200 ms).
    pub rtt: f64,
}

impl Aimd {
    pub fn new(cfg: &GccConfig, start_bps: f64) -> Aimd {
        Aimd {
            rate: start_bps,
            state: AimdState::Hold,
            last_change: None,
            capacity: LinkCapacity::new(cfg),
            latest_throughput: start_bps,
            rtt: 0.2,
        }
    }

    fn clamp(cfg: &GccConfig, bps: f64) -> f64 {
        bps.clamp(cfg.min_rate.as_bps_f64(), cfg.max_rate.as_bps_f64())
    }

    /// Sets the rate directly (a probe result, or the halving before any throughput exists).
    pub fn set_estimate(&mut self, cfg: &GccConfig, bps: f64, now: Time) {
        self.rate = Self::clamp(cfg, bps);
        self.last_change = Some(now);
    }

    /// Whether an over-use may reduce the rate again: one RTT (clamped to [10, 200] ms) since the
    /// last change, or a throughput below half the rate.
    pub fn time_to_reduce_further(&self, cfg: &GccConfig, now: Time, throughput_bps: f64) -> bool {
        let interval = self.reduce_interval(cfg).as_secs_f64();
        if self.last_change.is_none_or(|t| (now - t).as_secs_f64() >= interval) {
            return true;
        }
        throughput_bps < 0.5 * self.rate
    }

    /// The RTT clamped to [`reduce_interval_min`, `reduce_interval_max`].
    pub fn reduce_interval(&self, cfg: &GccConfig) -> Duration {
        Duration::from_secs_f64(
            self.rtt.clamp(cfg.reduce_interval_min.as_secs_f64(), cfg.reduce_interval_max.as_secs_f64()),
        )
    }

    /// Near capacity: bit/s gained per second, about one packet per two response times.
    pub fn near_max_increase_bps_per_s(&self, cfg: &GccConfig) -> f64 {
        let frame_bits = self.rate / cfg.additive_frame_rate;
        let packet_bits = cfg.additive_packet_size.bits() as f64;
        let packets_per_frame = (frame_bits / packet_bits).ceil().max(1.0);
        let avg_packet_bits = frame_bits / packets_per_frame;
        let response = cfg.response_time_factor * (self.rtt + cfg.response_time_extra.as_secs_f64());
        (avg_packet_bits / response).max(cfg.additive_min_increase.as_bps_f64())
    }

    /// One update with the detector's verdict and the measured throughput (bit/s, if any).
    pub fn update(&mut self, cfg: &GccConfig, usage: Usage, throughput: Option<f64>, now: Time) {
        let throughput = throughput.unwrap_or(self.latest_throughput);
        self.latest_throughput = throughput;
        match (usage, self.state) {
            (Usage::Normal, AimdState::Hold) => {
                self.last_change = Some(now);
                self.state = AimdState::Increase;
            }
            (Usage::Normal, _) => {}
            (Usage::Overusing, _) => self.state = AimdState::Decrease,
            (Usage::Underusing, _) => self.state = AimdState::Hold,
        }
        let mut new_rate = None;
        match self.state {
            AimdState::Hold => {}
            AimdState::Increase => {
                if throughput > self.capacity.upper_bound_bps(cfg) {
                    self.capacity.reset();
                }
                let limit = cfg.throughput_cap_factor * throughput + cfg.throughput_cap_extra.as_bps_f64();
                if self.rate < limit {
                    let dt = self.last_change.map(|t| (now - t).as_secs_f64());
                    let increase = if self.capacity.has_estimate() {
                        self.near_max_increase_bps_per_s(cfg) * dt.unwrap_or(0.0)
                    } else {
                        let alpha = cfg.increase_per_second.powf(dt.map_or(1.0, |d| d.min(1.0)));
                        (self.rate * (alpha - 1.0)).max(cfg.multiplicative_min_increase.as_bps_f64())
                    };
                    new_rate = Some((self.rate + increase).min(limit));
                }
                self.last_change = Some(now);
            }
            AimdState::Decrease => {
                let mut decreased = cfg.beta * throughput;
                let extra = cfg.backoff_extra.as_bps_f64();
                if decreased > extra {
                    decreased -= extra;
                }
                if decreased > self.rate {
                    if let Some(est) = self.capacity.estimate_bps() {
                        decreased = cfg.beta * est;
                    }
                }
                if decreased < self.rate {
                    new_rate = Some(decreased);
                }
                if throughput < self.capacity.lower_bound_bps(cfg) {
                    self.capacity.reset();
                }
                self.capacity.on_overuse(cfg, throughput);
                self.state = AimdState::Hold;
                self.last_change = Some(now);
            }
        }
        let mut rate = new_rate.unwrap_or(self.rate);
        if cfg.throughput_cap_lowers {
            // The artifact's ClampBitrate caps every result, a hold included.
            rate = rate.min(cfg.throughput_cap_factor * throughput + cfg.throughput_cap_extra.as_bps_f64());
        }
        self.rate = Self::clamp(cfg, rate);
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
    fn hold_to_increase_restarts_the_change_timer() {
        let cfg = cfg();
        let mut a = Aimd::new(&cfg, 1e6);
        a.update(&cfg, Usage::Normal, Some(1e6), Time::from_secs(1));
        a.update(&cfg, Usage::Underusing, Some(1e6), Time::from_secs(2));
        assert_eq!(a.state, AimdState::Hold);
        let before = a.rate;
        // Held for 5 s; the first increase after it is credited with no time: the 1 kbit/s floor.
        a.update(&cfg, Usage::Normal, Some(1e6), Time::from_secs(7));
        assert_eq!(a.state, AimdState::Increase);
        assert!((a.rate - (before + 1000.0)).abs() < 1e-6, "{before} -> {}", a.rate);
        // 0.5 s later: 8 %^0.5.
        let before = a.rate;
        a.update(&cfg, Usage::Normal, Some(1e6), Time::from_millis(7500));
        assert!((a.rate - before * 1.08f64.powf(0.5)).abs() < 1e-6);
    }

    #[test]
    fn multiplicative_floor_is_1_kbit_per_update_and_additive_is_a_packet_per_two_response_times() {
        let cfg = cfg();
        let mut a = Aimd::new(&cfg, 200e3);
        a.update(&cfg, Usage::Normal, Some(200e3), Time::from_secs(1));
        let before = a.rate;
        // 1 ms later: 200 kbit/s x (1.08^0.001 - 1) = 15 bit/s, floored to 1 kbit/s.
        a.update(&cfg, Usage::Normal, Some(200e3), Time::from_millis(1001));
        assert!((a.rate - before - 1000.0).abs() < 1e-6);
        // An over-use at 1 Mbit/s gives a capacity estimate: 0.85 x 1 Mbit/s - 5 kbit/s.
        let mut a = Aimd::new(&cfg, 1.2e6);
        a.update(&cfg, Usage::Overusing, Some(1e6), Time::from_secs(1));
        assert!((a.rate - 845e3).abs() < 1e-6);
        assert_eq!(a.state, AimdState::Hold);
        a.rtt = 0.1;
        a.update(&cfg, Usage::Normal, Some(845e3), Time::from_secs(2));
        let before = a.rate;
        a.update(&cfg, Usage::Normal, Some(845e3), Time::from_millis(2500));
        // 845 kbit/s at 30 fps: 28167 bit frames, 3 packets of 9389 bit; response 2 x 200 ms.
        let per_s = (845e3 / 30.0 / 3.0) / 0.4;
        assert!((a.rate - before - 0.5 * per_s).abs() < 1e-6, "{} vs {}", a.rate - before, 0.5 * per_s);
        let _ = Duration::ZERO;
    }

    #[test]
    fn decrease_uses_the_capacity_estimate_when_the_throughput_is_above_the_rate() {
        let cfg = cfg();
        let mut a = Aimd::new(&cfg, 1e6);
        a.update(&cfg, Usage::Overusing, Some(1e6), Time::from_secs(1));
        assert!((a.rate - 845e3).abs() < 1e-6);
        // Throughput above the rate on over-use: never an increase ...
        a.update(&cfg, Usage::Overusing, Some(1.02e6), Time::from_secs(2));
        assert_eq!(a.rate, 845e3);
        let est = 0.95 * 1000.0 + 0.05 * 1020.0;
        assert!((a.capacity.estimate_bps().unwrap() - est * 1e3).abs() < 1e-6);
        // ... and when 0.85 x throughput is above the rate, 0.85 x the capacity estimate.
        a.set_estimate(&cfg, 900e3, Time::from_secs(3));
        a.update(&cfg, Usage::Overusing, Some(1.2e6), Time::from_secs(4));
        assert!((a.rate - 0.85 * est * 1e3).abs() < 1e-6, "{}", a.rate);
    }

    #[test]
    fn reduce_further_waits_one_clamped_rtt_unless_throughput_collapsed() {
        let cfg = cfg();
        let mut a = Aimd::new(&cfg, 1e6);
        a.rtt = 0.5;
        a.update(&cfg, Usage::Overusing, Some(1e6), Time::from_secs(1));
        let t = |ms| Time::from_secs(1) + Duration::from_millis(ms);
        assert!(!a.time_to_reduce_further(&cfg, t(199), 900e3), "clamped to 200 ms");
        assert!(a.time_to_reduce_further(&cfg, t(200), 900e3));
        assert!(a.time_to_reduce_further(&cfg, t(50), 0.4 * a.rate));
    }

    #[test]
    fn artifact_cap_lowers_a_held_rate_and_its_additive_increase_is_twice_libwebrtcs() {
        // gcc-controller.cc ClampBitrate: min(new, 1.5 x incoming + 10 kbit/s) after any state;
        // GetNearMaxIncreaseRateBps: response time rtt + 100 ms (in_experiment_ false).
        let art = GccConfig { max_rate: Bitrate::mbps(10), ..GccConfig::artifact() };
        let lib = cfg();
        let t = Time::from_secs(1);
        for (c, expected) in [(&art, 1.5 * 1e6 + 10e3), (&lib, 2e6)] {
            let mut a = Aimd::new(c, 2e6);
            a.update(c, Usage::Underusing, Some(1e6), t);
            assert_eq!(a.state, AimdState::Hold);
            assert!((a.rate - expected).abs() < 1e-6, "{}", a.rate);
        }
        let (mut a, mut l) = (Aimd::new(&art, 3e6), Aimd::new(&lib, 3e6));
        a.rtt = 0.1;
        l.rtt = 0.1;
        let (ia, il) = (a.near_max_increase_bps_per_s(&art), l.near_max_increase_bps_per_s(&lib));
        assert!(il > lib.additive_min_increase.as_bps_f64());
        assert!((ia - 2.0 * il).abs() < 1e-6, "{ia} vs {il}");
        // And the decrease subtracts nothing: 0.85 x 1 Mbit/s.
        a.update(&art, Usage::Overusing, Some(1e6), t);
        assert!((a.rate - 850e3).abs() < 1e-6, "{}", a.rate);
    }
}
