//! Copa (Arun and Balakrishnan, NSDI 2018): a delay-based window controller that steers its
//! sending rate towards `1 / (delta x d_q)` packets per second, `d_q` being the queueing delay.
//!
//! - Signals (§2.1): RTT_standing = min RTT over the last srtt/2; RTT_min = min RTT over 10 s;
//!   d_q = RTT_standing - RTT_min. Current rate = cwnd / RTT_standing.
//! - Window (§2.1): per ACK, cwnd moves by v / (delta x cwnd) packets per packet acknowledged,
//!   up if the current rate is at most the target, down otherwise. Velocity v starts at 1 and
//!   doubles once the window has moved the same way for three RTTs (checked once per RTT); it
//!   falls back to 1 when the direction changes.
//! - Slow start: the window doubles per RTT while the current rate is below the target.
//! - Pacing at 2 x cwnd / RTT_standing.
//! - Mode switching (§2.2): the queue is "nearly empty" when d_q <= 0.1 x (RTT_max - RTT_min),
//!   RTT_max over the last 4 RTTs. Without a nearly-empty queue for 5 RTTs, Copa assumes a
//!   buffer-filling competitor and enters competitive mode: 1/delta grows by 1 per RTT and halves
//!   on a loss (delta never above the default's 0.5); a nearly-empty queue brings it back.
//!
//! The default mode does not react to ordinary losses (the delay signal governs); a persistent
//! congestion (every packet of a probe timeout lost) resets the window to the minimum.
//!
//! [`CopaVariant::Artifact`] runs the Zhuge artifact's Copa instead ([`crate::copa_artifact`]:
//! one update per half RTT from the latest RTT sample, ccp_copa's mode switch), the one the Zhuge
//! paper's evaluation used.

use crate::copa_artifact::{CopaArtifact, CopaArtifactConstants};
use crate::filter::{Keep, WindowedFilter};
use crate::rtt::RttEstimator;
use crate::{RateSample, Reads, WindowController};
use lowlat_core::{Bitrate, Bytes, Duration, Time};

/// Which Copa runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CopaVariant {
    /// The paper's (NSDI 2018): per-ACK updates from RTT_standing ([`Copa`]).
    #[default]
    Paper,
    /// The Zhuge artifact's `tcp-copa.cc` (from ccp_copa): one update per half RTT from the
    /// latest RTT sample ([`CopaArtifact`]).
    Artifact,
}

impl CopaVariant {
    /// The name in scenarios.
    pub fn name(self) -> &'static str {
        match self {
            CopaVariant::Paper => "paper",
            CopaVariant::Artifact => "artifact",
        }
    }
}

/// Copa's constants (NSDI 2018 §2; the defaults of its evaluation).
#[derive(Clone, Debug, PartialEq)]
pub struct CopaConfig {
    /// Which rules run: the paper's (default) or the Zhuge artifact's.
    pub variant: CopaVariant,
    /// Packet size: Copa counts its window in packets of this size.
    pub max_datagram_size: Bytes,
    /// Initial window (RFC 9002's kInitialWindow for this size).
    pub initial_window: Bytes,
    /// Smallest window (2 packets).
    pub minimum_window: Bytes,
    /// delta of the default mode (0.5: the paper; the Zhuge artifact's `tcp-copa.cc`
    /// `DefaultLatencyfactor`, which `fec-emulate.cc` sets to `copaDeltaHundred / 100`, 50 unless
    /// a run gives `--copadelta`).
    pub delta: f64,
    /// RTT_min's window (10 s, §2.1).
    pub min_rtt_window: Duration,
    /// RTT_standing's window as a fraction of srtt (1/2, §2.1).
    pub standing_rtt_fraction: f64,
    /// RTTs in the same direction before the velocity starts doubling (3, §2.1).
    pub velocity_rounds: u32,
    /// Pacing rate = this x cwnd / RTT_standing (2, §2.1).
    pub pacing_gain: f64,
    /// Whether Copa switches to competitive mode (§2.2).
    pub mode_switching: bool,
    /// The queue is nearly empty when d_q <= this x (RTT_max - RTT_min) (0.1, §2.2).
    pub nearly_empty_fraction: f64,
    /// ... but never less than this many packets' transmission time at the highest recent
    /// delivery rate (2; an implementation choice: see `update_mode`).
    pub nearly_empty_packets: f64,
    /// RTTs without a nearly-empty queue before competitive mode (5, §2.2).
    pub competitive_after_rtts: u32,
    /// RTT_max's window in RTTs (4, §2.2).
    pub rtt_max_rtts: u32,
    /// The artifact variant's own constants (`tcp-copa.cc`); the fields above it shares:
    /// `delta`, `min_rtt_window` (`kRTTWindowLength` 10 s), `standing_rtt_fraction`
    /// (`SetWindowLength (srtt / 2)`), `pacing_gain` (`SetPacingRate (tcb, 2.0)`),
    /// `mode_switching` (`ModeSwitch`, true), `initial_window` (ns-3's 10 segments).
    pub artifact: CopaArtifactConstants,
}

impl Default for CopaConfig {
    fn default() -> Self {
        CopaConfig::for_datagram(Bytes(1200))
    }
}

impl CopaConfig {
    /// The paper's values for packets of `size`.
    pub fn for_datagram(size: Bytes) -> CopaConfig {
        CopaConfig {
            variant: CopaVariant::Paper,
            max_datagram_size: size,
            initial_window: Bytes((10 * size.0).min(14_720u64.max(2 * size.0))),
            minimum_window: Bytes(2 * size.0),
            delta: 0.5,
            min_rtt_window: Duration::from_secs(10),
            standing_rtt_fraction: 0.5,
            velocity_rounds: 3,
            pacing_gain: 2.0,
            mode_switching: true,
            nearly_empty_fraction: 0.1,
            nearly_empty_packets: 2.0,
            competitive_after_rtts: 5,
            rtt_max_rtts: 4,
            artifact: CopaArtifactConstants::default(),
        }
    }

    /// Sets `key` from a scenario's text value: `variant` (`"paper"` or `"artifact"`) or
    /// `delta` (a number). The error starts with the key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "variant" => {
                self.variant = match value.trim() {
                    "paper" => CopaVariant::Paper,
                    "artifact" => CopaVariant::Artifact,
                    other => {
                        return Err(format!("variant: got {other:?}, expected \"paper\" or \"artifact\""))
                    }
                }
            }
            "delta" => {
                self.delta = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("delta: got {value:?}, expected a number in (0, 10]"))?
            }
            other => return Err(format!("{other}: unknown key, expected variant or delta")),
        }
        Ok(())
    }

    /// Checks the scenario-settable constants; the error starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.delta.is_finite() && self.delta > 0.0 && self.delta <= 10.0) {
            return Err(format!("delta: got {}, expected a number in (0, 10]", self.delta));
        }
        Ok(())
    }

    /// Builds the controller its `variant` names.
    pub fn build_controller(&self) -> Box<dyn WindowController> {
        match self.variant {
            CopaVariant::Paper => Box::new(self.build()),
            CopaVariant::Artifact => Box::new(CopaArtifact::new(self)),
        }
    }

    /// Builds the paper's controller (whatever `variant` says).
    pub fn build(&self) -> Copa {
        Copa {
            cfg: self.clone(),
            cwnd: self.initial_window.0 as f64,
            min_rtt: WindowedFilter::new(Keep::Min),
            standing: WindowedFilter::new(Keep::Min),
            rtt_max: WindowedFilter::new(Keep::Max),
            standing_rtt: None,
            max_delivery_rate: WindowedFilter::new(Keep::Max),
            slow_start: true,
            velocity: 1.0,
            direction_up: None,
            same_direction_rtts: 0,
            last_record: None,
            competitive: false,
            last_nearly_empty: None,
            delta: self.delta,
            last_delta_step: Time::ZERO,
            recovery_start: None,
        }
    }
}

/// The Copa controller.
#[derive(Clone, Debug)]
pub struct Copa {
    cfg: CopaConfig,
    /// Window, bytes.
    cwnd: f64,
    min_rtt: WindowedFilter,
    standing: WindowedFilter,
    rtt_max: WindowedFilter,
    standing_rtt: Option<f64>,
    /// Highest delivery rate (bytes/s) over `min_rtt_window`.
    max_delivery_rate: WindowedFilter,
    slow_start: bool,
    velocity: f64,
    direction_up: Option<bool>,
    same_direction_rtts: u32,
    /// When and at which window the direction was last checked.
    last_record: Option<(Time, f64)>,
    competitive: bool,
    last_nearly_empty: Option<Time>,
    /// delta in use (the default's, or the competitive mode's).
    delta: f64,
    last_delta_step: Time,
    recovery_start: Option<Time>,
}

impl Copa {
    /// Whether Copa is in competitive mode.
    pub fn is_competitive(&self) -> bool {
        self.competitive
    }

    /// The delta in use.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The velocity parameter.
    pub fn velocity(&self) -> f64 {
        self.velocity
    }

    fn update_mode(&mut self, now: Time, dq: f64, min_rtt: f64, srtt: f64) {
        let rtt_max = self.rtt_max.get().unwrap_or(min_rtt);
        // A packet or two in the queue are not a standing queue: paced at twice its rate, Copa
        // itself keeps a packet waiting behind another, the sample of an ACK is its newest
        // packet's; at low rates (a packet of 1200 B is 4.8 ms at 2 Mbit/s) the paper's threshold
        // alone reads that as a buffer-filler on a quiet link. The packet time is taken at the
        // highest delivery rate seen lately, the best estimate of the bottleneck's rate.
        let packet_time = match self.max_delivery_rate.get() {
            Some(rate) if rate > 0.0 => self.cfg.max_datagram_size.0 as f64 / rate,
            _ => 0.0,
        };
        let threshold = (self.cfg.nearly_empty_fraction * (rtt_max - min_rtt))
            .max(self.cfg.nearly_empty_packets * packet_time);
        if dq <= threshold {
            self.last_nearly_empty = Some(now);
            if self.competitive {
                self.competitive = false;
                self.delta = self.cfg.delta;
            }
            return;
        }
        let since = now - *self.last_nearly_empty.get_or_insert(now);
        if !self.competitive && since.as_secs_f64() > self.cfg.competitive_after_rtts as f64 * srtt {
            self.competitive = true;
            self.last_delta_step = now;
        }
        // Competitive: 1/delta grows by one per RTT (additive increase of the aggressiveness).
        if self.competitive && (now - self.last_delta_step).as_secs_f64() >= srtt {
            self.delta = 1.0 / (1.0 / self.delta + 1.0);
            self.last_delta_step = now;
        }
    }

    /// Once per RTT: velocity doubles after `velocity_rounds` RTTs in one direction.
    fn update_velocity(&mut self, now: Time, srtt: f64) {
        let Some((at, cwnd)) = self.last_record else {
            self.last_record = Some((now, self.cwnd));
            return;
        };
        if (now - at).as_secs_f64() < srtt {
            return;
        }
        let up = self.cwnd > cwnd;
        if self.direction_up == Some(up) {
            self.same_direction_rtts += 1;
            if self.same_direction_rtts >= self.cfg.velocity_rounds {
                self.velocity *= 2.0;
            }
        } else {
            self.direction_up = Some(up);
            self.same_direction_rtts = 0;
            self.velocity = 1.0;
        }
        self.last_record = Some((now, self.cwnd));
    }
}

impl WindowController for Copa {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn on_ack(&mut self, _now: Time, _sent: Time, _bytes: u64, _app_limited: bool, _rtt: &RttEstimator) {}

    fn reads(&self) -> Reads {
        Reads { sent: false, acks: false, ..Reads::ALL }
    }

    fn on_rate_sample(&mut self, now: Time, rs: &RateSample, rtt: &RttEstimator) -> bool {
        let t = now.as_nanos();
        let sample = rs.rtt.as_secs_f64();
        let srtt = rtt.smoothed().as_secs_f64().max(1e-6);
        let min_rtt = self.min_rtt.update(t, sample, self.cfg.min_rtt_window.as_nanos());
        let window = Duration::from_secs_f64(srtt * self.cfg.standing_rtt_fraction).as_nanos();
        let standing = self.standing.update(t, sample, window);
        self.standing_rtt = Some(standing);
        let max_window = Duration::from_secs_f64(srtt * self.cfg.rtt_max_rtts as f64).as_nanos();
        self.rtt_max.update(t, sample, max_window);
        let dq = (standing - min_rtt).max(0.0);
        if let Some(rate) = rs.delivery_rate {
            self.max_delivery_rate.update(t, rate.as_bps_f64() / 8.0, self.cfg.min_rtt_window.as_nanos());
        }
        if self.cfg.mode_switching {
            self.update_mode(now, dq, min_rtt, srtt);
        }
        let mss = self.cfg.max_datagram_size.0 as f64;
        // Rates in bytes per second: the target 1 / (delta d_q) packets/s, the current cwnd / RTT.
        let target = if dq > 0.0 { mss / (self.delta * dq) } else { f64::INFINITY };
        let current = self.cwnd / standing.max(1e-6);
        let increase = current <= target;
        self.update_velocity(now, srtt);
        let acked = rs.newly_acked as f64;
        if increase && rs.is_app_limited && self.cwnd >= 2.0 * rs.in_flight.max(1) as f64 {
            // The application, not the window, limits the rate: a window more than twice what is
            // in flight would only store up a burst (the congestion-window validation idea of
            // RFC 7661; an application that follows the window still sees it grow).
        } else if self.slow_start && increase {
            self.cwnd += acked;
        } else {
            self.slow_start = false;
            if self.velocity > 1.0 && self.direction_up.is_some_and(|up| up != increase) {
                self.velocity = 1.0;
                self.same_direction_rtts = 0;
            }
            let step = self.velocity * acked * mss / (self.delta * self.cwnd);
            self.cwnd = if increase { self.cwnd + step } else { self.cwnd - step };
        }
        self.cwnd = self.cwnd.max(self.cfg.minimum_window.0 as f64);
        true
    }

    fn on_congestion_event(&mut self, now: Time, sent: Time, persistent: bool, _lost_bytes: u64) {
        if persistent {
            self.cwnd = self.cfg.minimum_window.0 as f64;
            self.slow_start = false;
            return;
        }
        if self.recovery_start.is_some_and(|r| sent <= r) {
            return;
        }
        self.recovery_start = Some(now);
        if self.competitive {
            // Multiplicative decrease of the aggressiveness: 1/delta halves.
            self.delta = (2.0 * self.delta).min(self.cfg.delta);
        }
    }

    fn window(&self) -> u64 {
        self.cwnd as u64
    }

    fn send_rate(&self, _rtt: &RttEstimator) -> Option<Bitrate> {
        // Copa's current rate, cwnd / RTT_standing (pacing runs at twice it to absorb ACK bursts).
        let standing = self.standing_rtt?;
        Some(Bitrate::from_bps_f64(self.cwnd * 8.0 / standing.max(1e-6)))
    }

    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<Bitrate> {
        let standing = self.standing_rtt?;
        Some(Bitrate::from_bps_f64(self.cfg.pacing_gain * self.cwnd * 8.0 / standing.max(1e-6)))
    }

    fn mode(&self) -> &'static str {
        match (self.slow_start, self.competitive) {
            (true, false) => "slow_start",
            (_, true) => "competitive",
            (false, false) => "default",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(rtt_ms: f64, acked: u64) -> RateSample {
        RateSample {
            delivery_rate: None,
            delivered: acked,
            interval: Duration::from_millis(1),
            prior_delivered: 0,
            total_delivered: 0,
            is_app_limited: false,
            newly_acked: acked,
            newly_lost_packets: 0,
            rtt: Duration::from_secs_f64(rtt_ms / 1e3),
            in_flight: 0,
        }
    }

    fn estimator(ms: u64) -> RttEstimator {
        let mut e = RttEstimator::default();
        e.update(Time::ZERO, Duration::from_millis(ms), Duration::ZERO);
        e
    }

    #[test]
    fn window_moves_by_one_over_delta_cwnd_per_packet_towards_the_target() {
        let cfg = CopaConfig::default();
        let mut c = cfg.build();
        c.slow_start = false;
        c.cwnd = 100.0 * 1200.0;
        let est = estimator(100);
        // No queueing (every sample at the minimum): target infinite, +1/(0.5 x 100) packet each.
        let mut t = Time::ZERO;
        for _ in 0..10 {
            t += Duration::from_micros(100);
            c.on_rate_sample(t, &rs(100.0, 1200), &est);
        }
        let grown = c.cwnd / 1200.0 - 100.0;
        assert!((grown - 10.0 / 50.0).abs() < 0.01, "grew {grown} packets");
        // A standing queue of 50 ms: target 1/(0.5 x 0.05) = 40 packets/s, current ~667/s: down.
        c.min_rtt.reset(t.as_nanos(), 0.1);
        c.standing.reset(t.as_nanos(), 0.15);
        let before = c.cwnd;
        t += Duration::from_micros(100);
        c.on_rate_sample(t, &rs(150.0, 1200), &est);
        assert!(c.cwnd < before, "{} -> {}", before, c.cwnd);
    }

    #[test]
    fn velocity_doubles_after_three_rtts_in_one_direction_and_resets_on_a_change() {
        let mut c = CopaConfig::default().build();
        c.slow_start = false;
        let est = estimator(20);
        let mut t = Time::ZERO;
        let mut seen = Vec::new();
        // An empty queue: the window keeps growing; check the velocity once per RTT.
        for _ in 0..8 {
            for _ in 0..20 {
                t += Duration::from_millis(1);
                c.on_rate_sample(t, &rs(20.0, 1200), &est);
            }
            seen.push(c.velocity());
        }
        // The first full RTT sets the direction; three more in it and the velocity doubles.
        assert_eq!(&seen[..6], &[1.0, 1.0, 1.0, 1.0, 2.0, 4.0], "{seen:?}");
        // Now a queue the window must shrink for: the velocity falls back to 1.
        c.min_rtt.reset(t.as_nanos(), 0.02);
        for _ in 0..15 {
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(60.0, 1200), &est);
        }
        assert_eq!(c.velocity(), 1.0);
    }

    #[test]
    fn a_queue_that_never_drains_means_competitive_mode_and_a_loss_doubles_delta() {
        let mut c = CopaConfig::default().build();
        let est = estimator(100);
        let mut t = Time::ZERO;
        c.on_rate_sample(t, &rs(100.0, 1200), &est);
        // The RTT stays 200 ms (a competitor's standing queue of 100 ms) for 8 RTTs.
        for _ in 0..800 {
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(200.0, 1200), &est);
        }
        assert!(c.is_competitive());
        assert!(c.delta() < 0.5, "1/delta grows per RTT in competitive mode: {}", c.delta());
        let d = c.delta();
        c.on_congestion_event(t, t, false, 1200);
        assert!((c.delta() - (2.0 * d).min(0.5)).abs() < 1e-12);
        // The queue empties: back to the default mode and delta.
        for _ in 0..300 {
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(100.0, 1200), &est);
        }
        assert!(!c.is_competitive());
        assert_eq!(c.delta(), 0.5);
    }

    #[test]
    fn a_queue_of_a_packet_or_two_is_not_a_competitor() {
        // At 2 Mbit/s a 1200 B packet takes 4.8 ms: a standing 4 ms (less than two packets) for
        // many RTTs is Copa's own pacing, a standing 20 ms is someone else's queue.
        for (queue_ms, competitive) in [(4.0, false), (20.0, true)] {
            let mut c = CopaConfig::default().build();
            let est = estimator(50);
            let mut t = Time::ZERO;
            let mut sample = rs(50.0, 1200);
            sample.delivery_rate = Some(Bitrate::mbps(2));
            c.on_rate_sample(t, &sample, &est);
            sample.rtt = Duration::from_secs_f64((50.0 + queue_ms) / 1e3);
            for _ in 0..1000 {
                t += Duration::from_millis(1);
                c.on_rate_sample(t, &sample, &est);
            }
            assert_eq!(c.is_competitive(), competitive, "standing queue {queue_ms} ms");
        }
    }
}
