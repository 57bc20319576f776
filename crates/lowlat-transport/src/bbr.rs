//! BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00): a model-based controller that paces at
//! its estimate of the bottleneck bandwidth and caps what is in flight at a multiple of the
//! bandwidth-delay product.
//!
//! - Model (§4.1): BtlBw = windowed max of delivery-rate samples over 10 round trips (app-limited
//!   samples only if they raise it); RTprop = min RTT over 10 s.
//! - Startup (§4.3.2): pacing and window gain 2/ln 2; the pipe is full once the bandwidth grew less
//!   than 25 % over three rounds. Drain (§4.3.3): pacing gain ln 2 / 2 until in flight <= BDP.
//! - ProbeBW (§4.3.4): eight phases of one RTprop each with pacing gains 1.25, 0.75, 1 x 6, window
//!   gain 2; the 1.25 phase lasts until in flight reaches 1.25 BDP (or a loss), the 0.75 phase
//!   ends early once in flight is down to the BDP; the first phase is chosen at random (not 0.75).
//! - ProbeRTT (§4.3.5): when RTprop was not refreshed for 10 s, hold the window at 4 packets for
//!   200 ms and one round trip, then take the new minimum.
//! - Losses (§4.2.3.4-5): on recovery, the window drops to what is in flight and grows by packet
//!   conservation for one round; on leaving recovery the previous window is restored. A persistent
//!   congestion (timeout) drops it to the minimum.

use crate::filter::{Keep, WindowedFilter};
use crate::rtt::RttEstimator;
use crate::{RateSample, Reads, WindowController};
use lowlat_core::{Bitrate, Bytes, Duration, Time};

/// BBR v1's constants (draft-cardwell-iccrg-bbr-congestion-control-00 §4).
#[derive(Clone, Debug, PartialEq)]
pub struct BbrConfig {
    /// Segment size (SMSS).
    pub max_datagram_size: Bytes,
    /// Initial window (RFC 9002's kInitialWindow for this segment size).
    pub initial_window: Bytes,
    /// BBRHighGain, startup's pacing and window gain: 2/ln 2 (§4.3.2.1).
    pub high_gain: f64,
    /// Drain's pacing gain: 1 / high_gain (§4.3.3).
    pub drain_gain: f64,
    /// Window gain in ProbeBW (2, §4.3.4.1).
    pub cwnd_gain: f64,
    /// ProbeBW's pacing-gain cycle (§4.3.4.1).
    pub pacing_gain_cycle: [f64; 8],
    /// BtlBwFilterLen: round trips the bandwidth max filter spans (10, §4.1.1.5).
    pub btlbw_filter_rounds: u64,
    /// RTpropFilterLen: how long the min-RTT estimate holds (10 s, §4.1.2.3).
    pub min_rtt_filter: Duration,
    /// ProbeRTTDuration (200 ms, §4.3.5).
    pub probe_rtt_duration: Duration,
    /// BBRMinPipeCwnd: 4 segments (§4.2.3.3).
    pub min_pipe_cwnd: Bytes,
    /// Bandwidth growth below which a round counts towards a full pipe (1.25, §4.3.2.2).
    pub full_bw_threshold: f64,
    /// Rounds without that growth that mean the pipe is full (3, §4.3.2.2).
    pub full_bw_count: u32,
    /// Segments added to the window target for send quantisation and delayed ACKs (3 x SMSS,
    /// §4.2.3.2's "quantization budget").
    pub quantum_segments: u64,
    /// Picks ProbeBW's first phase (the draft: at random); fixed for determinism.
    pub seed: u64,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig::for_datagram(Bytes(1200))
    }
}

impl BbrConfig {
    /// The draft's values for segments of `size`.
    pub fn for_datagram(size: Bytes) -> BbrConfig {
        let high_gain = 2.0 / std::f64::consts::LN_2;
        BbrConfig {
            max_datagram_size: size,
            initial_window: Bytes((10 * size.0).min(14_720u64.max(2 * size.0))),
            high_gain,
            drain_gain: 1.0 / high_gain,
            cwnd_gain: 2.0,
            pacing_gain_cycle: [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            btlbw_filter_rounds: 10,
            min_rtt_filter: Duration::from_secs(10),
            probe_rtt_duration: Duration::from_millis(200),
            min_pipe_cwnd: Bytes(4 * size.0),
            full_bw_threshold: 1.25,
            full_bw_count: 3,
            quantum_segments: 3,
            seed: 1,
        }
    }

    /// Builds the controller.
    pub fn build(&self) -> Bbr {
        Bbr {
            cfg: self.clone(),
            mode: Mode::Startup,
            btlbw: WindowedFilter::new(Keep::Max),
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            full_bw: 0.0,
            full_bw_rounds: 0,
            filled_pipe: false,
            pacing_gain: self.high_gain,
            cwnd_gain: self.high_gain,
            cycle_index: 0,
            cycle_stamp: Time::ZERO,
            cwnd: self.initial_window.0,
            prior_cwnd: 0,
            pacing_rate: None,
            loss_pending: false,
            recovery: None,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            rng: self.seed,
        }
    }
}

/// BBR's state machine (§4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Exponential search for the bottleneck bandwidth.
    Startup,
    /// Draining the queue startup built.
    Drain,
    /// Steady state: cycling the pacing gain around the estimate.
    ProbeBw,
    /// Draining the queue to measure the propagation delay.
    ProbeRtt,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

/// Loss recovery state.
#[derive(Clone, Copy, Debug)]
struct Recovery {
    /// Packet conservation holds until this round.
    conservation_until_round: u64,
    /// Recovery ends once this much has been delivered (what was in flight at the loss).
    end_delivered: u64,
}

/// The BBR v1 controller.
#[derive(Clone, Debug)]
pub struct Bbr {
    cfg: BbrConfig,
    mode: Mode,
    /// Bottleneck bandwidth estimate, bytes/s, over round counts.
    btlbw: WindowedFilter,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Time,
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    full_bw: f64,
    full_bw_rounds: u32,
    filled_pipe: bool,
    pacing_gain: f64,
    cwnd_gain: f64,
    cycle_index: usize,
    cycle_stamp: Time,
    cwnd: u64,
    prior_cwnd: u64,
    pacing_rate: Option<f64>,
    /// A congestion event arrived with the current ACK.
    loss_pending: bool,
    recovery: Option<Recovery>,
    probe_rtt_done: Option<Time>,
    probe_rtt_round_done: bool,
    rng: u64,
}

impl Bbr {
    /// The state machine's mode.
    pub fn state(&self) -> Mode {
        self.mode
    }

    /// The bottleneck bandwidth estimate.
    pub fn bottleneck_bandwidth(&self) -> Option<Bitrate> {
        self.btlbw.get().map(|b| Bitrate::from_bps_f64(b * 8.0))
    }

    /// Whether startup found the pipe full.
    pub fn filled_pipe(&self) -> bool {
        self.filled_pipe
    }

    fn bw(&self) -> f64 {
        self.btlbw.get().unwrap_or(0.0)
    }

    /// `gain` x the estimated BDP plus the quantisation budget (BBRInflight, §4.2.3.2).
    fn inflight(&self, gain: f64) -> u64 {
        let Some(rtt) = self.min_rtt else { return self.cfg.initial_window.0 };
        let bdp = self.bw() * rtt.as_secs_f64();
        (gain * bdp) as u64 + self.cfg.quantum_segments * self.cfg.max_datagram_size.0
    }

    fn update_round(&mut self, rs: &RateSample) {
        self.round_start = rs.prior_delivered >= self.next_round_delivered;
        if self.round_start {
            self.next_round_delivered = rs.total_delivered;
            self.round_count += 1;
        }
    }

    fn update_btlbw(&mut self, rs: &RateSample) {
        let Some(rate) = rs.delivery_rate else { return };
        let rate = rate.as_bps_f64() / 8.0;
        if !rs.is_app_limited || rate >= self.bw() {
            self.btlbw.update(self.round_count, rate, self.cfg.btlbw_filter_rounds);
        }
    }

    fn enter_probe_bw(&mut self, now: Time) {
        self.mode = Mode::ProbeBw;
        self.cwnd_gain = self.cfg.cwnd_gain;
        // A random phase other than the 0.75 one (§4.3.4.3); a fixed-seed LCG keeps runs equal.
        self.rng = self.rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = ((self.rng >> 33) % 7) as usize;
        self.cycle_index = if r == 0 { 0 } else { r + 1 };
        self.pacing_gain = self.cfg.pacing_gain_cycle[self.cycle_index];
        self.cycle_stamp = now;
    }

    fn update_cycle_phase(&mut self, now: Time, rs: &RateSample) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let full_length = self.min_rtt.is_some_and(|r| now - self.cycle_stamp > r);
        let prior_inflight = rs.in_flight + rs.newly_acked;
        let advance = if self.pacing_gain > 1.0 {
            full_length && (rs.newly_lost_packets > 0 || prior_inflight >= self.inflight(self.pacing_gain))
        } else if self.pacing_gain < 1.0 {
            full_length || prior_inflight <= self.inflight(1.0)
        } else {
            full_length
        };
        if advance {
            self.cycle_index = (self.cycle_index + 1) % self.cfg.pacing_gain_cycle.len();
            self.pacing_gain = self.cfg.pacing_gain_cycle[self.cycle_index];
            self.cycle_stamp = now;
        }
    }

    fn check_full_pipe(&mut self, rs: &RateSample) {
        if self.filled_pipe || !self.round_start || rs.is_app_limited {
            return;
        }
        if self.bw() >= self.full_bw * self.cfg.full_bw_threshold {
            self.full_bw = self.bw();
            self.full_bw_rounds = 0;
            return;
        }
        self.full_bw_rounds += 1;
        if self.full_bw_rounds >= self.cfg.full_bw_count {
            self.filled_pipe = true;
        }
    }

    fn check_drain(&mut self, now: Time, rs: &RateSample) {
        if self.mode == Mode::Startup && self.filled_pipe {
            self.mode = Mode::Drain;
            self.pacing_gain = self.cfg.drain_gain;
            self.cwnd_gain = self.cfg.high_gain;
        }
        if self.mode == Mode::Drain && rs.in_flight <= self.inflight(1.0) {
            self.enter_probe_bw(now);
        }
    }

    fn update_min_rtt(&mut self, now: Time, rs: &RateSample) {
        let expired = self.min_rtt.is_some() && now > self.min_rtt_stamp + self.cfg.min_rtt_filter;
        if self.min_rtt.is_none_or(|m| rs.rtt <= m) || expired {
            self.min_rtt = Some(rs.rtt);
            self.min_rtt_stamp = now;
        }
        if expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.prior_cwnd = self.saved_cwnd();
            self.probe_rtt_done = None;
        }
        if self.mode == Mode::ProbeRtt {
            match self.probe_rtt_done {
                None if rs.in_flight <= self.cfg.min_pipe_cwnd.0 => {
                    self.probe_rtt_done = Some(now + self.cfg.probe_rtt_duration);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered = rs.total_delivered;
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && now >= done {
                        self.min_rtt_stamp = now;
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        if self.filled_pipe {
                            self.enter_probe_bw(now);
                        } else {
                            self.mode = Mode::Startup;
                            self.pacing_gain = self.cfg.high_gain;
                            self.cwnd_gain = self.cfg.high_gain;
                        }
                    }
                }
                None => {}
            }
        }
    }

    /// The window to restore after recovery or ProbeRTT (BBRSaveCwnd, §4.2.3.4).
    fn saved_cwnd(&self) -> u64 {
        if self.recovery.is_none() && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.cwnd.max(self.prior_cwnd)
        }
    }

    fn set_pacing_rate(&mut self, rtt: &RttEstimator) {
        let rate = if self.bw() > 0.0 {
            self.pacing_gain * self.bw()
        } else if rtt.has_sample() {
            // No bandwidth sample yet: the initial window per RTT, at startup's gain (§4.2.1).
            self.cfg.high_gain * self.cwnd as f64 / rtt.smoothed().as_secs_f64()
        } else {
            return;
        };
        // Before the pipe is full the rate only grows, so a low early sample cannot slow startup.
        if self.filled_pipe || self.pacing_rate.is_none_or(|p| rate > p) {
            self.pacing_rate = Some(rate);
        }
    }

    fn set_cwnd(&mut self, rs: &RateSample) {
        let mss = self.cfg.max_datagram_size.0;
        if self.loss_pending {
            self.loss_pending = false;
            if self.recovery.is_none() {
                // Entering recovery: what is in flight, then packet conservation for a round.
                self.prior_cwnd = self.saved_cwnd();
                self.cwnd = (rs.in_flight + rs.newly_acked.max(mss)).max(self.cfg.min_pipe_cwnd.0);
                self.recovery = Some(Recovery {
                    conservation_until_round: self.round_count + 1,
                    end_delivered: rs.total_delivered + rs.in_flight,
                });
            }
        }
        if let Some(r) = self.recovery {
            if rs.total_delivered >= r.end_delivered {
                self.recovery = None;
                self.cwnd = self.cwnd.max(self.prior_cwnd);
            }
        }
        let conserving = self.recovery.is_some_and(|r| self.round_count < r.conservation_until_round);
        if conserving {
            self.cwnd = self.cwnd.max(rs.in_flight + rs.newly_acked);
        } else {
            let target = self.inflight(self.cwnd_gain);
            if self.filled_pipe {
                self.cwnd = (self.cwnd + rs.newly_acked).min(target);
            } else if self.cwnd < target || rs.total_delivered < self.cfg.initial_window.0 {
                self.cwnd += rs.newly_acked;
            }
        }
        self.cwnd = self.cwnd.max(self.cfg.min_pipe_cwnd.0);
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.cfg.min_pipe_cwnd.0);
        }
    }
}

impl WindowController for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn on_ack(&mut self, _now: Time, _sent: Time, _bytes: u64, _app_limited: bool, _rtt: &RttEstimator) {}

    fn reads(&self) -> Reads {
        Reads { sent: false, acks: false, ..Reads::ALL }
    }

    fn on_rate_sample(&mut self, now: Time, rs: &RateSample, rtt: &RttEstimator) -> bool {
        self.update_round(rs);
        self.update_btlbw(rs);
        self.update_cycle_phase(now, rs);
        self.check_full_pipe(rs);
        self.check_drain(now, rs);
        self.update_min_rtt(now, rs);
        self.set_pacing_rate(rtt);
        self.set_cwnd(rs);
        true
    }

    fn on_congestion_event(&mut self, _now: Time, _sent: Time, persistent: bool, _lost_bytes: u64) {
        if persistent {
            self.prior_cwnd = self.saved_cwnd();
            self.cwnd = self.cfg.min_pipe_cwnd.0;
            return;
        }
        self.loss_pending = true;
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn send_rate(&self, _rtt: &RttEstimator) -> Option<Bitrate> {
        // The bottleneck bandwidth estimate; the gains only probe around it.
        self.bottleneck_bandwidth()
    }

    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<Bitrate> {
        self.pacing_rate.map(|r| Bitrate::from_bps_f64(r * 8.0))
    }

    fn mode(&self) -> &'static str {
        self.mode.name()
    }

    /// BBR has no slow-start threshold: the window is set, and its model (which samples the
    /// delivery rate the larger window yields) takes it from there.
    fn set_window(&mut self, _now: Time, cwnd: u64, _ssthresh: Option<u64>) {
        self.cwnd = cwnd.max(self.cfg.min_pipe_cwnd.0);
    }

    fn in_slow_start(&self) -> bool {
        !self.filled_pipe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(prior_delivered: u64, total: u64, rate_bps: f64, rtt_ms: u64, in_flight: u64) -> RateSample {
        RateSample {
            delivery_rate: Some(Bitrate::from_bps_f64(rate_bps)),
            delivered: total - prior_delivered,
            interval: Duration::from_millis(rtt_ms),
            prior_delivered,
            total_delivered: total,
            is_app_limited: false,
            newly_acked: 2400,
            newly_lost_packets: 0,
            rtt: Duration::from_millis(rtt_ms),
            in_flight,
        }
    }

    #[test]
    fn the_gains_are_the_drafts() {
        let c = BbrConfig::default();
        assert!((c.high_gain - 2.885).abs() < 1e-3);
        assert!((c.drain_gain * c.high_gain - 1.0).abs() < 1e-12);
        assert_eq!(c.pacing_gain_cycle.iter().sum::<f64>(), 8.0);
    }

    #[test]
    fn startup_ends_after_three_rounds_without_25_percent_growth() {
        let mut b = BbrConfig::default().build();
        let rtt = RttEstimator::default();
        let mut delivered = 0;
        let mut t = Time::ZERO;
        // Growing rounds: 1, 2, 4, 8 Mbit/s; then flat at 8 for three rounds.
        for (round, mbps) in [1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0].iter().enumerate() {
            t += Duration::from_millis(50);
            let prior = delivered;
            delivered += 100_000;
            b.on_rate_sample(t, &sample(prior, delivered, mbps * 1e6, 50, 200_000), &rtt);
            let expect_full = round >= 6;
            assert_eq!(b.filled_pipe(), expect_full, "round {round}");
        }
        assert_eq!(b.state(), Mode::Drain);
        assert!((b.pacing_gain - b.cfg.drain_gain).abs() < 1e-12);
        // Drain ends once in flight is down to the BDP (8 Mbit/s x 50 ms = 50 kB).
        b.on_rate_sample(
            t + Duration::from_millis(10),
            &sample(delivered, delivered + 1, 8e6, 50, 40_000),
            &rtt,
        );
        assert_eq!(b.state(), Mode::ProbeBw);
        assert_ne!(b.pacing_gain, 0.75, "ProbeBW never starts in the 0.75 phase");
    }

    #[test]
    fn probe_rtt_comes_after_10_s_without_a_new_minimum_and_holds_4_packets() {
        let mut b = BbrConfig::default().build();
        let rtt = RttEstimator::default();
        let mut delivered = 0;
        let mut t = Time::ZERO;
        let mut step = |b: &mut Bbr, t: &mut Time, ms: u64, rtt_ms: u64, in_flight: u64| {
            *t += Duration::from_millis(ms);
            let prior = delivered;
            delivered += 10_000;
            b.on_rate_sample(*t, &sample(prior, delivered, 8e6, rtt_ms, in_flight), &rtt);
        };
        step(&mut b, &mut t, 50, 50, 50_000);
        for _ in 0..200 {
            step(&mut b, &mut t, 50, 60, 50_000);
        }
        assert_ne!(b.state(), Mode::ProbeRtt, "10 s have not passed yet at {t}");
        step(&mut b, &mut t, 50, 60, 50_000);
        assert_eq!(b.state(), Mode::ProbeRtt, "at {t}");
        assert_eq!(b.window(), 4 * 1200);
        // Once in flight is down to 4 packets: 200 ms and a round, then back out.
        step(&mut b, &mut t, 10, 50, 4_800);
        step(&mut b, &mut t, 100, 50, 4_800);
        assert_eq!(b.state(), Mode::ProbeRtt);
        step(&mut b, &mut t, 150, 50, 4_800);
        assert_ne!(b.state(), Mode::ProbeRtt);
        assert!(b.window() > 4 * 1200);
    }
}
