//! Copa as the Zhuge artifact runs it: `ns-3.34-diff/src/internet/model/tcp-copa.cc` (+ `.h`) of
//! the public Zhuge artifact (transys-project/zhuge), an ns-3 port of ccp_copa that the Zhuge
//! paper's TCP evaluation used. `variant = "artifact"` of [`crate::CopaConfig`]; the paper's rules
//! are [`crate::copa`].
//!
//! How it differs from the paper (each rule from `tcp-copa.cc`, function named):
//!
//! - **One update per half RTT** (`CongControl`): every ACK feeds the filters, but the window
//!   moves only on the first ACK more than 0.5 x srtt after the previous update ("report",
//!   `kReportIntervalRtt`), by what was acknowledged since: `change = ceil(acked / mss) x mss^2
//!   x v / (delta x cwnd)` (whole bytes, at most cwnd).
//! - **The latest RTT sample decides** (`UseRttStanding` false): `d_q` = latest sample - RTT_min;
//!   the current rate is still cwnd / RTT_standing, RTT_standing the minimum over srtt/2 restarted
//!   after each update (`m_standingRttFilter.Reset (Seconds (1), ...)`); an update is skipped when
//!   RTT_standing < RTT_min.
//! - **Slow start** (`CongControl`): while the window should grow, at most once per srtt it grows
//!   by the bytes acknowledged since the previous update; the first decrease halves it at most
//!   and ends slow start.
//! - **Velocity** (`CheckAndUpdateDirection`, `ChangeDirection`): once a window's worth of bytes
//!   has been acknowledged, the direction is the sign of cwnd - the cwnd recorded a window ago;
//!   the same direction for more than 3 x srtt doubles v (every window from then on), a new one
//!   resets it to 1; an update against the current direction with v > 1 resets v at once.
//! - **Smallest window** 4 packets on a decrease (`kMinCwndSegment`); a retransmission timeout
//!   (ns-3's `TcpSocketBase::ReTxTimeout`) sets it to one packet; other losses leave it alone
//!   (with its own `CongControl`, ns-3 skips its recovery's window changes).
//! - **Mode switching** (`ReportMeasurement`, `tcp_detected`, from ccp_copa): at each update,
//!   "TCP detected" when the smallest RTT sample of the last 10 srtt exceeds RTT_min + 0.1 x
//!   (largest - RTT_min) + 0.1 ms; the loss rate of bytes over cycles of 2 x RTT_min; a loss rate
//!   of 0.1 or more is loss mode (delta doubles on each update with a loss), TCP detected is competitive
//!   mode (delta doubles on an update with a loss, else 1/delta grows by one), otherwise the
//!   default delta. delta never exceeds the default.
//! - **Pacing** (`SetPacingRate`, `InitPacingRateFromRtt`): 2 x cwnd / srtt, srtt in whole
//!   milliseconds, set at each update (2 Mbit/s before the first), at most ns-3's 4 Gbit/s.
//! - No rule for an application-limited sender (the window may grow while the application sends
//!   less).
//!
//! Deliberate differences: the artifact's integer arithmetic is kept where it sets the window
//! (whole bytes, the truncated `change`), but its 32-bit products cannot overflow here; its
//! "last 10 srtt" window, which underflows to "TCP detected" while fewer than 10 srtt have passed
//! since the simulation's start (its flows start at 1 s, so it never does there), takes every
//! sample instead; a retransmission timeout is a persistent congestion event, which the sender
//! signals only under TCP's loss recovery ([`crate::SenderConfig::tcp`], ns-3's timeout; RFC 9002's
//! recovery has no timeout that collapses the window here).

use crate::copa::CopaConfig;
use crate::filter::{FixedWindowFilter, Keep, SuffixExtrema, WindowedFilter};
use crate::rtt::RttEstimator;
use crate::{RateSample, Reads, WindowController};
use lowlat_core::{Bitrate, Duration, Time};

/// The constants of the artifact's Copa that the paper's has not (`tcp-copa.cc` unless said).
#[derive(Clone, Debug, PartialEq)]
pub struct CopaArtifactConstants {
    /// The window moves once per this x srtt (`kReportIntervalRtt` 0.5, after ccp_copa's
    /// `agg_measurement.rs`).
    pub report_interval_srtt: f64,
    /// Whether d_q comes from RTT_standing (true) or from the latest sample (`UseRttStanding`,
    /// false in `GetTypeId`; the run lists do not set it).
    pub use_rtt_standing: bool,
    /// Smallest window after a decrease (`kMinCwndSegment` 4 packets).
    pub minimum_window_packets: u64,
    /// The window after a retransmission timeout (one segment: ns-3.34's
    /// `TcpSocketBase::ReTxTimeout`).
    pub timeout_window_packets: u64,
    /// The same direction for more than this x srtt doubles the velocity
    /// (`CheckAndUpdateDirection`: `3 * srtt`).
    pub velocity_srtts: f64,
    /// Pacing before the first update (`InitPacingRateFromRtt` without an RTT: 1 Mbit/s x 2).
    pub initial_pacing: Bitrate,
    /// Pacing never above this (ns-3.34's `TcpSocketState` `MaxPacingRate`, 4 Gbit/s).
    pub max_pacing: Bitrate,
    /// RTT samples kept for the mode switch (`new_rtt_sample`: `copa_max_time` 10 s).
    pub rtt_history: Duration,
    /// "TCP detected" looks at the samples of the last this x srtt (`tcp_detected`: 10).
    pub detect_srtts: f64,
    /// ... and compares their minimum with RTT_min + this x (their maximum - RTT_min)
    /// (`tcp_detected`: `/ 10`) ...
    pub detect_fraction: f64,
    /// ... + this (`tcp_detected`: `Time("0.1ms")`).
    pub detect_margin: Duration,
    /// Loss rates are measured over cycles of this x RTT_min (`ReportMeasurement`:
    /// `rtt_min + rtt_min`).
    pub loss_cycle_min_rtts: f64,
    /// A loss rate at least this is loss mode (`ReportMeasurement`: `>= 0.1`).
    pub loss_mode_rate: f64,
}

impl Default for CopaArtifactConstants {
    fn default() -> Self {
        CopaArtifactConstants {
            report_interval_srtt: 0.5,
            use_rtt_standing: false,
            minimum_window_packets: 4,
            timeout_window_packets: 1,
            velocity_srtts: 3.0,
            initial_pacing: Bitrate::mbps(2),
            max_pacing: Bitrate(4_000_000_000),
            rtt_history: Duration::from_secs(10),
            detect_srtts: 10.0,
            detect_fraction: 0.1,
            detect_margin: Duration::from_micros(100),
            loss_cycle_min_rtts: 2.0,
            loss_mode_rate: 0.1,
        }
    }
}

/// The artifact's modes (`CopaMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Default,
    /// A buffer-filling competitor detected (`TCPCoop`).
    Competitive,
    /// Loss rate at least [`CopaArtifactConstants::loss_mode_rate`] (`TCPLoss`).
    Loss,
}

/// The artifact's Copa controller (see the module doc).
#[derive(Clone, Debug)]
pub struct CopaArtifact {
    cfg: CopaConfig,
    mss: u64,
    /// Window, whole bytes as the artifact's `uint32_t`.
    cwnd: u64,
    min_rtt: FixedWindowFilter,
    standing: WindowedFilter,
    /// (time ns, RTT s) of the samples of the last `rtt_history`, as far as their minima and
    /// maxima since any time go (the mode switch's question).
    history: SuffixExtrema,
    slow_start: bool,
    last_double: Option<Time>,
    last_report: Time,
    /// `last_report` in seconds (the gate compares it at every sample).
    last_report_s: f64,
    report_acked: u64,
    report_lost: u64,
    velocity: u64,
    /// `Some(true)`: up.
    direction: Option<bool>,
    record_time: Option<Time>,
    recorded_cwnd: u64,
    direction_since: Time,
    window_acked: u64,
    mode: Mode,
    delta: f64,
    cycle_acked: u64,
    cycle_lost: u64,
    cycle_start: Time,
    loss_rate: f64,
    pacing: Bitrate,
    /// RTT_standing at the latest update (s): the current rate is cwnd over it.
    standing_at_update: Option<f64>,
}

impl CopaArtifact {
    /// The controller for `cfg` (its `variant` is not looked at).
    pub fn new(cfg: &CopaConfig) -> CopaArtifact {
        CopaArtifact {
            mss: cfg.max_datagram_size.0.max(1),
            cwnd: cfg.initial_window.0,
            min_rtt: FixedWindowFilter::new(Keep::Min, cfg.min_rtt_window.as_nanos()),
            standing: WindowedFilter::new(Keep::Min),
            history: SuffixExtrema::new(cfg.artifact.rtt_history.as_nanos()),
            slow_start: true,
            last_double: None,
            last_report: Time::ZERO,
            last_report_s: 0.0,
            report_acked: 0,
            report_lost: 0,
            velocity: 1,
            direction: None,
            record_time: None,
            recorded_cwnd: 0,
            direction_since: Time::ZERO,
            window_acked: 0,
            mode: Mode::Default,
            delta: cfg.delta,
            cycle_acked: 0,
            cycle_lost: 0,
            cycle_start: Time::ZERO,
            loss_rate: 0.0,
            pacing: cfg.artifact.initial_pacing,
            standing_at_update: None,
            cfg: cfg.clone(),
        }
    }

    /// The delta in use.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The velocity parameter.
    pub fn velocity(&self) -> u64 {
        self.velocity
    }

    /// Whether Copa is in competitive mode ("TCP detected").
    pub fn is_competitive(&self) -> bool {
        self.mode == Mode::Competitive
    }

    /// Whether the window is in slow start.
    pub fn is_slow_start(&self) -> bool {
        self.slow_start
    }

    /// `tcp_detected`: the smallest sample of the last `detect_srtts` x srtt well above RTT_min.
    fn competitor_detected(&mut self, srtt: f64, min_rtt: f64) -> bool {
        let Some(newest) = self.history.newest() else { return false };
        let span = (self.cfg.artifact.detect_srtts * srtt * 1e9) as u64;
        // The samples taken after `newest - span` (all of them if that is before the start).
        let (lo, hi) = match self.history.after(newest.checked_sub(span)) {
            // As the artifact's loop finds them: the largest never below 0 (samples are durations).
            Some((lo, hi)) => (lo, if hi > 0.0 { hi } else { 0.0 }),
            None => (f64::INFINITY, 0.0),
        };
        let a = &self.cfg.artifact;
        lo > min_rtt + (hi - min_rtt) * a.detect_fraction + a.detect_margin.as_secs_f64()
    }

    /// `ReportMeasurement`: the mode and delta for this update.
    fn update_mode(&mut self, now: Time, srtt: f64, min_rtt: f64) {
        let a = &self.cfg.artifact;
        self.cycle_acked += self.report_acked;
        self.cycle_lost += self.report_lost;
        if now.as_secs_f64() > self.cycle_start.as_secs_f64() + a.loss_cycle_min_rtts * min_rtt {
            if self.cycle_acked + self.cycle_lost > 0 {
                self.loss_rate = self.cycle_lost as f64 / (self.cycle_lost + self.cycle_acked) as f64;
            }
            self.cycle_acked = 0;
            self.cycle_lost = 0;
            self.cycle_start = now;
        }
        self.mode = if self.loss_rate >= a.loss_mode_rate {
            Mode::Loss
        } else if self.competitor_detected(srtt, min_rtt) {
            Mode::Competitive
        } else {
            Mode::Default
        };
        let lost = self.report_lost > 0;
        match self.mode {
            _ if !self.cfg.mode_switching => self.delta = self.cfg.delta,
            Mode::Default => self.delta = self.cfg.delta,
            Mode::Competitive if lost => self.delta *= 2.0,
            Mode::Competitive => self.delta = 1.0 / (1.0 + 1.0 / self.delta),
            Mode::Loss if lost => self.delta *= 2.0,
            Mode::Loss => {}
        }
        self.delta = self.delta.min(self.cfg.delta);
    }

    /// `ChangeDirection`: a new direction resets the velocity at once.
    fn change_direction(&mut self, now: Time, up: bool) {
        if self.direction == Some(up) {
            return;
        }
        self.direction = Some(up);
        self.velocity = 1;
        self.direction_since = now;
        self.recorded_cwnd = self.cwnd;
    }

    /// `CheckAndUpdateDirection`: once a window has been acknowledged, compare the window with
    /// the one recorded then.
    fn check_direction(&mut self, now: Time, srtt: f64) {
        if self.record_time.is_none() {
            self.record_time = Some(now);
            self.recorded_cwnd = self.cwnd;
            return;
        }
        self.window_acked += self.report_acked;
        if self.window_acked < self.cwnd {
            return;
        }
        let up = self.cwnd > self.recorded_cwnd;
        if self.direction == Some(up) {
            if (now - self.direction_since).as_secs_f64() > self.cfg.artifact.velocity_srtts * srtt {
                self.velocity = self.velocity.saturating_mul(2);
            }
        } else {
            self.velocity = 1;
            self.direction_since = now;
        }
        self.direction = Some(up);
        self.record_time = Some(now);
        self.recorded_cwnd = self.cwnd;
        self.window_acked = 0;
    }

    /// `CongControl` past its once-per-half-RTT gate: one update. (Apart from the per-ACK
    /// filtering, which then saves and restores fewer registers.)
    #[inline(never)]
    fn update(&mut self, now: Time, rtt: f64, srtt: f64, min_rtt: f64, standing: f64) {
        self.update_mode(now, srtt, min_rtt);
        let mss = self.mss;
        let delay = if self.cfg.artifact.use_rtt_standing { standing - min_rtt } else { rtt - min_rtt };
        let increase = if delay <= 0.0 {
            true
        } else {
            // Bytes per second: the target 1 / (delta d_q) packets/s against cwnd / RTT_standing.
            let target = mss as f64 / (delay * self.delta);
            let current = self.cwnd as f64 / standing;
            target >= current
        };
        if !(increase && self.slow_start) {
            self.check_direction(now, srtt);
        }
        let acked_packets = self.report_acked.div_ceil(mss);
        let change = ((acked_packets * mss * mss) as f64 * self.velocity as f64
            / (self.delta * self.cwnd.max(1) as f64)) as u64;
        let change = change.min(self.cwnd);
        let cwnd = self.cwnd;
        if increase {
            if self.slow_start {
                match self.last_double {
                    None => self.last_double = Some(now),
                    Some(at) if (now - at).as_secs_f64() > srtt => {
                        self.cwnd = cwnd + self.report_acked;
                        self.last_double = Some(now);
                    }
                    Some(_) => {}
                }
            } else {
                if self.direction != Some(true) && self.velocity > 1 {
                    self.change_direction(now, true);
                }
                self.cwnd = cwnd + change;
            }
        } else {
            if self.direction != Some(false) && self.velocity > 1 {
                self.change_direction(now, false);
            }
            self.cwnd = (cwnd - change).max(self.cfg.artifact.minimum_window_packets * mss);
            if self.slow_start {
                self.cwnd = self.cwnd.min(cwnd / 2);
            }
            self.slow_start = false;
        }
        // 2 x cwnd / srtt with srtt in whole milliseconds (`InitPacingRateFromRtt`).
        let srtt_ms = (srtt * 1e3).floor();
        let max = self.cfg.artifact.max_pacing;
        self.pacing = if srtt_ms >= 1.0 {
            Bitrate::from_bps_f64(self.cfg.pacing_gain * self.cwnd as f64 * 8000.0 / srtt_ms).min(max)
        } else {
            max
        };
        self.standing_at_update = Some(standing);
        self.last_report = now;
        self.last_report_s = now.as_secs_f64();
        self.report_acked = 0;
        self.report_lost = 0;
        // The standing filter restarts (`Reset (Seconds (1), now)`): the next sample replaces it.
        self.standing.reset(now.as_nanos(), 1.0);
    }
}

/// The standing RTT's window, `srtt x fraction` in whole nanoseconds (`srtt_s` is the smoothed
/// RTT in seconds, at least 1 us). At the usual fraction of one half, a number of nanoseconds of
/// at least 1 us (and below 2^50) comes out without the rounding's floating-point round trip:
/// `srtt_s x 1e9` (`z`) lies within a relative 2^-52 of `srtt`, so within a quarter of it, and
/// `srtt_s x 0.5 x 1e9` is exactly `z / 2` (halving is exact). For an even `srtt` that rounds to
/// the whole half; for an odd one, to the half rounded up if `z` is not below `srtt` (a half
/// rounds up), else down. (Others are worked out in full.)
#[inline(always)]
fn standing_window(srtt: Duration, srtt_s: f64, fraction: f64) -> u64 {
    let ns = srtt.as_nanos();
    if fraction == 0.5 && (1_000..1 << 50).contains(&ns) {
        let half = ns / 2;
        if ns.is_multiple_of(2) {
            half
        } else {
            // (`ns` below 2^53: exact as `f64`.)
            half + u64::from(srtt_s * 1e9 >= ns as i64 as f64)
        }
    } else {
        Duration::from_secs_f64(srtt_s * fraction).as_nanos()
    }
}

impl WindowController for CopaArtifact {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn on_ack(&mut self, _now: Time, _sent: Time, _bytes: u64, _app_limited: bool, _rtt: &RttEstimator) {}

    fn reads(&self) -> Reads {
        Reads { sent: false, acks: false, rate_samples: true, delivery_rate: false, sample_details: false }
    }

    /// (The window and the pacing rate move only in an update: `true` then.)
    fn on_rate_sample(&mut self, now: Time, rs: &RateSample, rtt: &RttEstimator) -> bool {
        self.on_rtt_sample(now, rs.rtt, rs.newly_acked, rs.newly_lost_packets, rtt)
    }

    /// (What it reads of a rate sample: the sender passes it so.)
    fn on_rtt_sample(
        &mut self,
        now: Time,
        rtt_sample: Duration,
        newly_acked: u64,
        newly_lost_packets: u64,
        rtt: &RttEstimator,
    ) -> bool {
        let t = now.as_nanos();
        let sample = rtt_sample.as_secs_f64();
        let srtt = rtt.smoothed().as_secs_f64().max(1e-6);
        self.report_acked += newly_acked;
        self.report_lost += newly_lost_packets * self.mss;
        let min_rtt = self.min_rtt.update(t, sample);
        let window = standing_window(rtt.smoothed(), srtt, self.cfg.standing_rtt_fraction);
        let standing = self.standing.update(t, sample, window);
        // `new_rtt_sample` / `clear_old_hist`: keep 10 s of samples (at least one: the newest).
        self.history.push(t, sample);
        let gate = self.last_report_s + self.cfg.artifact.report_interval_srtt * srtt;
        if now == Time::ZERO || gate >= now.as_secs_f64() || standing < min_rtt {
            return false;
        }
        self.update(now, sample, srtt, min_rtt, standing);
        true
    }

    fn on_congestion_event(&mut self, _now: Time, _sent: Time, persistent: bool, _lost_bytes: u64) {
        // Losses reach the mode switch through the rate samples; only a timeout moves the window.
        if persistent {
            self.cwnd = self.cfg.artifact.timeout_window_packets * self.mss;
        }
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn send_rate(&self, _rtt: &RttEstimator) -> Option<Bitrate> {
        // The current rate at the latest update, cwnd / RTT_standing (the artifact's `m_bitrate`).
        let standing = self.standing_at_update?;
        Some(Bitrate::from_bps_f64(self.cwnd as f64 * 8.0 / standing.max(1e-6)))
    }

    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<Bitrate> {
        Some(self.pacing)
    }

    fn mode(&self) -> &'static str {
        match (self.slow_start, self.mode) {
            (_, Mode::Competitive) => "competitive",
            (_, Mode::Loss) => "loss",
            (true, Mode::Default) => "slow_start",
            (false, Mode::Default) => "default",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standing window's whole half is the floating-point one, for even and odd spans from
    /// below the 1 us floor to hours, and for other fractions.
    #[test]
    fn the_standing_window_is_the_rounded_product() {
        let mut next = lowlat_core::rng::below(1, "standing-window-test");
        let mut spans: Vec<u64> = (0..5_000).collect();
        spans.extend((0..200_000).map(|_| next(1 << 40)));
        spans.extend((0..200_000).map(|_| next(1 << 53)));
        spans.extend((0..200_000).map(|_| 1_000 + next(1 << 20)));
        spans.extend((0..200_000).map(|_| next(1 << 51)));
        spans.extend([999, 1_000, 1_001, 1_002, (1 << 50) - 1, (1 << 50) + 1, (1 << 52) - 2, 1 << 52]);
        spans.extend([(1 << 52) + 2, u64::MAX - 1]);
        for ns in spans {
            let srtt = Duration(ns);
            let srtt_s = srtt.as_secs_f64().max(1e-6);
            for fraction in [0.5, 0.25, 0.7] {
                let want = Duration::from_secs_f64(srtt_s * fraction).as_nanos();
                assert_eq!(standing_window(srtt, srtt_s, fraction), want, "{ns} ns x {fraction}");
            }
        }
    }
    use crate::copa::CopaVariant;
    use lowlat_core::Bytes;

    const MSS: u64 = 1448;

    fn config() -> CopaConfig {
        CopaConfig { variant: CopaVariant::Artifact, ..CopaConfig::for_datagram(Bytes(MSS)) }
    }

    fn rs(rtt_ms: f64, acked: u64, lost_packets: u64) -> RateSample {
        RateSample {
            delivery_rate: None,
            delivered: acked,
            interval: Duration::from_millis(1),
            prior_delivered: 0,
            total_delivered: 0,
            is_app_limited: false,
            newly_acked: acked,
            newly_lost_packets: lost_packets,
            rtt: Duration::from_secs_f64(rtt_ms / 1e3),
            in_flight: 0,
        }
    }

    fn estimator(ms: u64) -> RttEstimator {
        let mut e = RttEstimator::default();
        e.update(Time::ZERO, Duration::from_millis(ms), Duration::ZERO);
        e
    }

    /// Out of slow start with a window of `packets`, its first update made at 1 s.
    fn steady(packets: u64, est: &RttEstimator) -> (CopaArtifact, Time) {
        let mut c = CopaArtifact::new(&config());
        c.slow_start = false;
        c.cwnd = packets * MSS;
        let t = Time::ZERO + Duration::from_secs(1);
        c.on_rate_sample(t, &rs(100.0, MSS, 0), est);
        (c, t)
    }

    #[test]
    fn the_window_moves_once_per_half_rtt_by_acked_mss_squared_over_delta_cwnd() {
        let est = estimator(100);
        let (mut c, mut t) = steady(100, &est);
        let mut changes = Vec::new();
        // One packet acknowledged per millisecond, no queue, for one second.
        for _ in 0..1000 {
            t += Duration::from_millis(1);
            let before = c.window();
            c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
            if c.window() != before {
                changes.push((t, c.window() - before));
            }
        }
        // An update on the first ACK more than 50 ms after the previous one: every 51 ms.
        assert_eq!(changes.len(), 1000 / 51, "{changes:?}");
        for w in changes.windows(2) {
            assert_eq!((w[1].0 - w[0].0).as_nanos(), 51_000_000);
        }
        // 51 packets acknowledged per update, v = 1, delta 0.5, cwnd ~100 packets: one packet
        // (51 x 1448^2 / (0.5 x 100 x 1448) = 1477 bytes, truncated).
        assert_eq!(changes[0].1, 51 * MSS * MSS / (50 * MSS));
    }

    #[test]
    fn the_latest_sample_not_rtt_standing_decides() {
        // Within the half RTT the samples sit at the minimum; the update's own sample is 100 ms
        // higher. The paper's rule (d_q from RTT_standing, here 0) grows; the artifact's shrinks.
        for (use_standing, grows) in [(false, false), (true, true)] {
            let mut cfg = config();
            cfg.artifact.use_rtt_standing = use_standing;
            let est = estimator(100);
            let mut c = CopaArtifact::new(&cfg);
            c.slow_start = false;
            c.cwnd = 100 * MSS;
            let mut t = Time::ZERO + Duration::from_secs(1);
            c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
            for _ in 0..50 {
                t += Duration::from_millis(1);
                c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
            }
            let before = c.window();
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(200.0, MSS, 0), &est);
            assert_eq!(
                c.window() > before,
                grows,
                "use_rtt_standing {use_standing}: {before} -> {}",
                c.window()
            );
            assert_ne!(c.window(), before);
        }
    }

    #[test]
    fn velocity_doubles_after_three_srtt_up_and_resets_on_a_decrease() {
        let est = estimator(100);
        let (mut c, mut t) = steady(20, &est);
        let start = t;
        let mut first_double = None;
        for _ in 0..1500 {
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
            if c.velocity() > 1 && first_double.is_none() {
                first_double = Some(t);
            }
        }
        // The direction is first set at the window check after the first update (~51 ms): v may
        // double only more than 3 srtt (300 ms) later, at a window check.
        let at = (first_double.expect("v doubled") - start).as_secs_f64();
        assert!((0.35..0.7).contains(&at), "first doubling {at} s after the start");
        assert!(c.velocity() >= 4, "v {}", c.velocity());
        // A standing queue of 100 ms (target 20 packets/s): the next update shrinks, v back to 1.
        let before = c.window();
        for _ in 0..60 {
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(200.0, MSS, 0), &est);
        }
        assert!(c.window() < before);
        assert_eq!(c.velocity(), 1);
    }

    #[test]
    fn a_queue_that_never_empties_is_competitive_mode_where_1_over_delta_grows_per_update() {
        let est = estimator(100);
        let (mut c, mut t) = steady(50, &est);
        // 200 ms for 1.2 s: the 100 ms sample leaves the last 10 srtt (1 s) after 1 s.
        let mut seen = Vec::new();
        for _ in 0..1200 {
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(200.0, MSS, 0), &est);
            seen.push((c.is_competitive(), c.delta()));
        }
        let first = seen.iter().position(|s| s.0).expect("competitive");
        assert!((990..1060).contains(&first), "competitive after {first} ms");
        assert_eq!(seen[first - 1].1, 0.5);
        // Each update since: delta = 1 / (1 + 1 / delta).
        let d = c.delta();
        assert!(d < 0.5 && d > 0.0, "{d}");
        t += Duration::from_millis(60);
        c.on_rate_sample(t, &rs(200.0, MSS, 0), &est);
        assert!((c.delta() - 1.0 / (1.0 + 1.0 / d)).abs() < 1e-12);
        // A loss in the next update doubles it.
        let d = c.delta();
        t += Duration::from_millis(60);
        c.on_rate_sample(t, &rs(200.0, MSS, 1), &est);
        assert!((c.delta() - 2.0 * d).abs() < 1e-12, "{d} -> {}", c.delta());
        // The queue empties: default mode, delta 0.5 again.
        for _ in 0..200 {
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
        }
        assert!(!c.is_competitive());
        assert_eq!(c.delta(), 0.5);
        // Without mode switching the mode is still detected, but delta stays.
        let mut cfg = config();
        cfg.mode_switching = false;
        let mut c = CopaArtifact::new(&cfg);
        let mut t = Time::ZERO + Duration::from_secs(1);
        c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
        for _ in 0..1500 {
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(200.0, MSS, 0), &est);
        }
        assert!(c.is_competitive());
        assert_eq!(c.delta(), 0.5);
    }

    #[test]
    fn a_loss_rate_of_ten_percent_is_loss_mode_one_of_twenty_is_not() {
        for (every, mode) in [(8u64, "loss"), (20, "default")] {
            let est = estimator(100);
            let (mut c, mut t) = steady(50, &est);
            for i in 0..500u64 {
                t += Duration::from_millis(1);
                // One packet in `every` lost (of the bytes acknowledged or lost), the queue empty.
                c.on_rate_sample(t, &rs(100.0, MSS, u64::from(i % every == 0)), &est);
            }
            assert_eq!(c.mode(), mode, "one loss in {every}");
            // Loss mode only doubles delta on a loss, never above the default: no more aggressive.
            assert_eq!(c.delta(), 0.5);
        }
    }

    #[test]
    fn delta_sets_the_step_and_slow_start_adds_what_was_acked_once_per_srtt() {
        let est = estimator(100);
        for delta in [0.5, 0.02] {
            let cfg = CopaConfig { delta, ..config() };
            let mut c = CopaArtifact::new(&cfg);
            c.slow_start = false;
            c.cwnd = 100 * MSS;
            let mut t = Time::ZERO + Duration::from_secs(1);
            c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
            let before = c.window();
            for _ in 0..51 {
                t += Duration::from_millis(1);
                c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
            }
            let want = (51 * MSS * MSS) as f64 / (delta * before as f64);
            assert_eq!(c.window() - before, want as u64, "delta {delta}");
        }
        // Slow start: the first update only starts the clock; > srtt later the window grows by
        // the bytes acknowledged since the previous update.
        let mut c = CopaArtifact::new(&config());
        let w0 = c.window();
        let mut t = Time::ZERO + Duration::from_secs(1);
        c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
        let mut grew = Vec::new();
        for _ in 0..400 {
            t += Duration::from_millis(1);
            let before = c.window();
            c.on_rate_sample(t, &rs(100.0, MSS, 0), &est);
            if c.window() != before {
                grew.push(c.window() - before);
            }
        }
        assert!(c.is_slow_start());
        assert_eq!(grew, vec![51 * MSS; grew.len()]);
        assert_eq!(grew.len(), 3, "once per 100 ms, at updates 51 ms apart: {grew:?}");
        assert_eq!(c.window(), w0 + 3 * 51 * MSS);
        // The first decrease halves at most and ends slow start.
        let before = c.window();
        while c.window() == before {
            t += Duration::from_millis(1);
            c.on_rate_sample(t, &rs(300.0, MSS, 0), &est);
        }
        assert!(!c.is_slow_start());
        assert_eq!(c.window(), before / 2);
    }

    #[test]
    fn pacing_is_twice_cwnd_over_whole_milliseconds_of_srtt() {
        let est = estimator(100);
        let c = CopaArtifact::new(&config());
        assert_eq!(c.pacing_rate(&est), Some(Bitrate::mbps(2)));
        let (c, _) = steady(100, &est);
        let want = 2.0 * c.window() as f64 * 8000.0 / 100.0;
        assert_eq!(c.pacing_rate(&est), Some(Bitrate::from_bps_f64(want)));
    }
}
