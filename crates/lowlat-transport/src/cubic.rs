//! CUBIC (RFC 9438) with HyStart++ slow start (RFC 9406).
//!
//! Windows are computed in segments of `max_datagram_size`, times in seconds, as in the RFC.
//! - Congestion event (§4.6-4.7): W_max = cwnd, or cwnd x (1 + beta) / 2 with fast convergence
//!   when cwnd fell below the previous W_max; cwnd = ssthresh = cwnd x beta; K = cbrt((W_max -
//!   cwnd) / C).
//! - Congestion avoidance (§4.2-4.4): target = W_cubic(t + RTT) clamped to [cwnd, 1.5 cwnd],
//!   W_cubic(t) = C (t - K)^3 + W_max; each ACK adds (target - cwnd) / cwnd segments; the
//!   Reno-friendly estimate W_est grows by alpha_cubic per window and wins when larger.
//! - HyStart++ (RFC 9406 §4.2): after 8 RTT samples in a round, an RTT rise of
//!   clamp(lastRoundMinRTT / 8, 4 ms, 16 ms) enters conservative slow start (growth / 4); an RTT
//!   back below the baseline resumes slow start; 5 conservative rounds end slow start.

use crate::rtt::RttEstimator;
use crate::{Reads, WindowController};
use lowlat_core::{Bytes, Duration, Time};

/// CUBIC's and HyStart++'s constants.
#[derive(Clone, Debug, PartialEq)]
pub struct CubicConfig {
    /// Segment size.
    pub max_datagram_size: Bytes,
    /// Initial window (RFC 9002's 10 segments, capped at 14720 B).
    pub initial_window: Bytes,
    /// Minimum window (2 segments).
    pub minimum_window: Bytes,
    /// C (0.4).
    pub c: f64,
    /// beta_cubic (0.7).
    pub beta: f64,
    /// Fast convergence (§4.7, on).
    pub fast_convergence: bool,
    /// HyStart++ on (RFC 9406).
    pub hystart: bool,
    /// MIN_RTT_THRESH (4 ms).
    pub min_rtt_thresh: Duration,
    /// MAX_RTT_THRESH (16 ms).
    pub max_rtt_thresh: Duration,
    /// MIN_RTT_DIVISOR (8).
    pub min_rtt_divisor: u64,
    /// N_RTT_SAMPLE (8).
    pub n_rtt_sample: u32,
    /// CSS_GROWTH_DIVISOR (4).
    pub css_growth_divisor: u64,
    /// CSS_ROUNDS (5).
    pub css_rounds: u32,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig::for_datagram(Bytes(1200))
    }
}

impl CubicConfig {
    /// The RFCs' values for segments of `size`.
    pub fn for_datagram(size: Bytes) -> CubicConfig {
        CubicConfig {
            max_datagram_size: size,
            initial_window: Bytes((10 * size.0).min(14_720u64.max(2 * size.0))),
            minimum_window: Bytes(2 * size.0),
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            hystart: true,
            min_rtt_thresh: Duration::from_millis(4),
            max_rtt_thresh: Duration::from_millis(16),
            min_rtt_divisor: 8,
            n_rtt_sample: 8,
            css_growth_divisor: 4,
            css_rounds: 5,
        }
    }

    /// Builds the controller.
    pub fn build(&self) -> Cubic {
        Cubic {
            cfg: self.clone(),
            cwnd: self.initial_window.0 as f64,
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            k: 0.0,
            epoch_start: None,
            w_est: 0.0,
            recovery_start: None,
            phase: SlowStartPhase::SlowStart,
            round_start: Time::ZERO,
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            rtt_samples: 0,
            css_baseline: Duration::ZERO,
            css_rounds_done: 0,
            resumed_slow_start: false,
            mss: self.max_datagram_size.0 as f64,
            minimum_window: self.minimum_window.0 as f64,
            alpha: 3.0 * (1.0 - self.beta) / (1.0 + self.beta),
        }
    }
}

/// Where HyStart++ is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlowStartPhase {
    /// Standard slow start.
    SlowStart,
    /// Conservative slow start (growth / CSS_GROWTH_DIVISOR).
    Conservative,
    /// Slow start is over.
    Done,
}

/// The CUBIC controller.
#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    /// Window, bytes.
    cwnd: f64,
    ssthresh: f64,
    /// W_max, segments.
    w_max: f64,
    /// K, seconds.
    k: f64,
    epoch_start: Option<Time>,
    /// Reno-friendly estimate, segments.
    w_est: f64,
    recovery_start: Option<Time>,
    phase: SlowStartPhase,
    round_start: Time,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_samples: u32,
    css_baseline: Duration,
    css_rounds_done: u32,
    /// A start-up rule set the window below the threshold: plain slow start up to it (no
    /// HyStart++, which is for the initial slow start, RFC 9406 §4.1), then the cubic curve.
    resumed_slow_start: bool,
    /// The segment size, the smallest window (bytes) and the Reno-friendly alpha (RFC 9438 §4.3)
    /// as `f64`, worked out once: the per-ACK update needs them all.
    mss: f64,
    minimum_window: f64,
    alpha: f64,
}

impl Cubic {
    /// The slow-start phase.
    pub fn phase(&self) -> SlowStartPhase {
        self.phase
    }

    /// W_max in bytes.
    pub fn w_max(&self) -> f64 {
        self.w_max * self.mss()
    }

    /// K in seconds.
    pub fn k(&self) -> f64 {
        self.k
    }

    fn mss(&self) -> f64 {
        self.mss
    }

    /// W_cubic(t) in segments, t seconds into the epoch.
    pub fn w_cubic(&self, t: f64) -> f64 {
        self.cfg.c * (t - self.k).powi(3) + self.w_max
    }

    fn alpha(&self) -> f64 {
        self.alpha
    }

    /// RFC 9406 §4.2: per-round RTT bookkeeping and the phase changes.
    fn hystart(&mut self, now: Time, sent: Time, rtt: &RttEstimator) {
        // A round ends when a packet sent after it began is acknowledged.
        if sent >= self.round_start {
            self.round_start = now;
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.rtt_samples = 0;
            if self.phase == SlowStartPhase::Conservative {
                self.css_rounds_done += 1;
                if self.css_rounds_done >= self.cfg.css_rounds {
                    self.phase = SlowStartPhase::Done;
                    self.ssthresh = self.cwnd;
                    return;
                }
            }
        }
        let sample = rtt.latest();
        self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(sample, |m| m.min(sample)));
        self.rtt_samples += 1;
        let (Some(cur), Some(last)) = (self.current_round_min_rtt, self.last_round_min_rtt) else { return };
        match self.phase {
            SlowStartPhase::SlowStart if self.rtt_samples >= self.cfg.n_rtt_sample => {
                let thresh = Duration(last.as_nanos() / self.cfg.min_rtt_divisor)
                    .max(self.cfg.min_rtt_thresh)
                    .min(self.cfg.max_rtt_thresh);
                if cur >= last + thresh {
                    self.phase = SlowStartPhase::Conservative;
                    self.css_baseline = cur;
                    self.css_rounds_done = 0;
                }
            }
            SlowStartPhase::Conservative if cur < self.css_baseline => {
                self.phase = SlowStartPhase::SlowStart; // the rise was spurious
            }
            _ => {}
        }
    }
}

impl WindowController for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn reads(&self) -> Reads {
        Reads { sent: false, rate_samples: false, delivery_rate: false, ..Reads::ALL }
    }

    fn on_ack(&mut self, now: Time, sent: Time, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        if app_limited || self.recovery_start.is_some_and(|r| sent <= r) {
            return;
        }
        if self.cwnd < self.ssthresh && self.resumed_slow_start {
            self.cwnd = (self.cwnd + bytes as f64).min(self.ssthresh);
            return;
        }
        if self.cwnd < self.ssthresh {
            if self.cfg.hystart && self.phase != SlowStartPhase::Done {
                self.hystart(now, sent, rtt);
            }
            let growth = match self.phase {
                SlowStartPhase::Conservative => bytes as f64 / self.cfg.css_growth_divisor as f64,
                _ => bytes as f64,
            };
            if self.phase == SlowStartPhase::Done {
                self.ssthresh = self.cwnd;
            } else {
                self.cwnd += growth;
                return;
            }
        }
        // Congestion avoidance.
        let mss = self.mss();
        let epoch = *self.epoch_start.get_or_insert_with(|| {
            // No loss yet (slow start ended by HyStart++): the curve starts flat at cwnd.
            self.w_max = self.cwnd / mss;
            self.k = 0.0;
            self.w_est = self.cwnd / mss;
            now
        });
        let cwnd_seg = self.cwnd / mss;
        let t = (now - epoch).as_secs_f64();
        let target = self.w_cubic(t + rtt.smoothed().as_secs_f64()).clamp(cwnd_seg, 1.5 * cwnd_seg);
        let acked_seg = bytes as f64 / mss;
        self.w_est += self.alpha() * acked_seg / cwnd_seg;
        let new_seg = if self.w_cubic(t) < self.w_est {
            self.w_est // Reno-friendly region
        } else {
            cwnd_seg + (target - cwnd_seg) * acked_seg / cwnd_seg
        };
        self.cwnd = (new_seg * mss).max(self.minimum_window);
    }

    fn on_congestion_event(&mut self, now: Time, sent: Time, persistent: bool, _lost_bytes: u64) {
        if self.recovery_start.is_some_and(|r| sent <= r) {
            return;
        }
        self.recovery_start = Some(now);
        self.phase = SlowStartPhase::Done;
        let mss = self.mss();
        let cwnd_seg = self.cwnd / mss;
        self.w_max = if self.cfg.fast_convergence && cwnd_seg < self.w_max {
            cwnd_seg * (1.0 + self.cfg.beta) / 2.0
        } else {
            cwnd_seg
        };
        self.ssthresh = (self.cwnd * self.cfg.beta).max(self.minimum_window);
        self.cwnd = if persistent { self.minimum_window } else { self.ssthresh };
        let epoch_cwnd = self.cwnd / mss;
        self.k = ((self.w_max - epoch_cwnd).max(0.0) / self.cfg.c).cbrt();
        self.w_est = epoch_cwnd;
        self.epoch_start = Some(now);
    }

    fn window(&self) -> u64 {
        self.cwnd as u64
    }

    fn set_window(&mut self, now: Time, cwnd: u64, ssthresh: Option<u64>) {
        self.cwnd = (cwnd as f64).max(self.minimum_window);
        if let Some(s) = ssthresh {
            // HyStart++ is over. Below the threshold: slow start up to it, then the curve starts
            // flat there; at or above it: the curve starts flat at the new window now.
            self.ssthresh = (s as f64).max(self.minimum_window);
            self.phase = SlowStartPhase::Done;
            self.recovery_start = Some(now);
            self.resumed_slow_start = self.cwnd < self.ssthresh;
            if self.resumed_slow_start {
                self.epoch_start = None;
            } else {
                let seg = self.cwnd / self.mss();
                self.w_max = seg;
                self.k = 0.0;
                self.w_est = seg;
                self.epoch_start = Some(now);
            }
        }
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh && (self.phase != SlowStartPhase::Done || self.resumed_slow_start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtt_of(ms: u64) -> RttEstimator {
        let mut r = RttEstimator::default();
        r.update(Time::ZERO, Duration::from_millis(ms), Duration::ZERO);
        r
    }

    #[test]
    fn a_loss_leaves_0_7_of_the_window_and_k_from_the_formula() {
        let mut c = CubicConfig::default().build();
        let rtt = rtt_of(100);
        // Grow in slow start to 1000 segments (HyStart++ sees a flat RTT and stays out of it).
        while c.window() < 1_200_000 {
            c.on_ack(Time::from_millis(10), Time::from_millis(5), 1200, false, &rtt);
        }
        let before = c.window() as f64;
        c.on_congestion_event(Time::from_secs(1), Time::from_millis(900), false, 1200);
        assert!((c.window() as f64 - 0.7 * before).abs() <= 1.0, "{before} -> {}", c.window());
        let w_max = before / 1200.0;
        let k = (w_max * 0.3 / 0.4).cbrt();
        assert!((c.k() - k).abs() < 1e-9);
        // A second loss sooner than the window cut (same recovery) changes nothing.
        c.on_congestion_event(Time::from_millis(1050), Time::from_millis(950), false, 1200);
        assert!((c.window() as f64 - 0.7 * before).abs() <= 1.0);
    }

    #[test]
    fn congestion_avoidance_follows_the_cubic_curve() {
        let mut c = CubicConfig::default().build();
        let rtt = rtt_of(100);
        while c.window() < 1_200_000 {
            c.on_ack(Time::from_millis(10), Time::from_millis(5), 1200, false, &rtt);
        }
        let t0 = Time::from_secs(1);
        c.on_congestion_event(t0, Time::from_millis(900), false, 1200);
        // ACK clocking: a window's worth of segments per RTT, spread evenly.
        let mut now = t0;
        let mut checked = 0;
        for step in 0..(10 * 10_000) {
            let segs = c.window() as f64 / 1200.0;
            let gap = Duration::from_secs_f64(0.1 / segs);
            now += gap;
            c.on_ack(now, now - Duration::from_millis(100), 1200, false, &rtt);
            let t = (now - t0).as_secs_f64();
            for probe in [1.0, 3.0, 5.0, 8.0] {
                if (t - probe).abs() < gap.as_secs_f64() / 2.0 + 1e-12 {
                    // W follows W_cubic(t + RTT), within the per-ACK approximation.
                    let expected = c.w_cubic(t + 0.1).max(0.7 * 1000.0);
                    let got = c.window() as f64 / 1200.0;
                    assert!((got / expected - 1.0).abs() < 0.03, "t {t}: {got} vs {expected}");
                    checked += 1;
                }
            }
            if t > 8.5 || step > 1_000_000 {
                break;
            }
        }
        assert_eq!(checked, 4);
    }

    #[test]
    fn hystart_enters_conservative_slow_start_when_the_rtt_rises() {
        let mut c = CubicConfig::default().build();
        let mut rtt = rtt_of(100);
        // Round 1 at 100 ms.
        for i in 0..10 {
            c.on_ack(Time::from_millis(100 + i), Time::from_millis(i), 1200, false, &rtt);
        }
        assert_eq!(c.phase(), SlowStartPhase::SlowStart);
        // Round 2: every sample 20 ms higher (threshold clamp(100/8, 4, 16) = 12.5 ms).
        rtt.update(Time::ZERO, Duration::from_millis(120), Duration::ZERO);
        for i in 0..10 {
            c.on_ack(Time::from_millis(300 + i), Time::from_millis(200 + i), 1200, false, &rtt);
        }
        assert_eq!(c.phase(), SlowStartPhase::Conservative);
        let w = c.window();
        c.on_ack(Time::from_millis(320), Time::from_millis(210), 1200, false, &rtt);
        assert_eq!(c.window(), w + 300, "CSS grows by a quarter");
        // Five more rounds end slow start.
        for round in 0..6u64 {
            let t = 500 + 200 * round;
            for i in 0..10 {
                c.on_ack(Time::from_millis(t + 100 + i), Time::from_millis(t + i), 1200, false, &rtt);
            }
        }
        assert_eq!(c.phase(), SlowStartPhase::Done);
    }
}
