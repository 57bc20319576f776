//! GCC: Google congestion control, sender-side (draft-ietf-rmcat-gcc-02 with today's libwebrtc
//! estimator).
//!
//! From transport-wide feedback the sender rebuilds each packet's send and arrival times.
//! - Packets sent within `burst_time` of a group's first packet form one group (draft §5.2); the
//!   growth of the one-way delay between consecutive groups is the delay gradient.
//! - The gradient is filtered by the trendline estimator (libwebrtc, replacing the draft's Kalman
//!   filter; the Kalman filter of draft §5.3 is offered as [`DelayEstimator::Kalman`]), and the
//!   over-use detector (§5.4) compares it with an adaptive threshold.
//! - AIMD rate control (§5.5): decrease to `beta` x the measured receive rate on over-use, grow
//!   8 %/s while far from the last known capacity and about one packet per response time near it.
//! - Loss-based control (§6): +5-8 % below 2 % loss, x(1 - loss/2) above 10 %.
//! - Probing (libwebrtc): clusters at 3x and 6x the start rate, padded when media runs short, and a
//!   further probe at 2x while a probe reaches 70 % of its target.
//!
//! The target rate is min(delay-based, loss-based); the pacer runs at `pacing_factor` x target.

use crate::{FeedbackReport, RateController, SentPacket};
use lowlat_core::{Bitrate, Duration, Time};
use std::collections::VecDeque;

/// Which filter turns delay gradients into the signal the over-use detector compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayEstimator {
    /// libwebrtc's trendline (linear regression over smoothed accumulated delay).
    Trendline,
    /// The Kalman filter of draft-ietf-rmcat-gcc-02 §5.3.
    Kalman,
}

/// GCC's parameters: draft-ietf-rmcat-gcc-02 and libwebrtc's current values.
#[derive(Clone, Debug, PartialEq)]
pub struct GccConfig {
    /// Rate at start.
    pub start_rate: Bitrate,
    /// Lowest target.
    pub min_rate: Bitrate,
    /// Highest target.
    pub max_rate: Bitrate,
    /// Packets sent within this of a group's first packet join the group (§5.2: 5 ms).
    pub burst_time: Duration,
    /// Delay-gradient filter.
    pub estimator: DelayEstimator,
    /// Trendline: samples in the regression window (20).
    pub trendline_window: usize,
    /// Trendline: exponential smoothing of the accumulated delay (0.9).
    pub trendline_smoothing: f64,
    /// Trendline: gain on the slope (4).
    pub trendline_gain: f64,
    /// Trendline: the slope is multiplied by min(samples, this) (60).
    pub trendline_sample_cap: u32,
    /// Initial adaptive threshold gamma (12.5 ms).
    pub threshold_initial: Duration,
    /// Threshold gain when |m| > gamma (trendline 0.0087; Kalman §5.4: 0.01).
    pub k_up: f64,
    /// Threshold gain otherwise (trendline 0.039; Kalman §5.4: 0.00018).
    pub k_down: f64,
    /// The threshold is not updated when |m| exceeds it by more than this (15 ms).
    pub threshold_max_jump: Duration,
    /// Threshold clamp, low end (6 ms).
    pub threshold_min: Duration,
    /// Threshold clamp, high end (600 ms).
    pub threshold_max: Duration,
    /// Longest time step of one threshold update (100 ms).
    pub threshold_max_dt: Duration,
    /// Over-use needs m > gamma for longer than this (10 ms), over at least two samples.
    pub overuse_time: Duration,
    /// Kalman: process noise q (1e-3).
    pub kalman_q: f64,
    /// Kalman: measurement noise smoothing chi (0.01).
    pub kalman_chi: f64,
    /// Kalman: initial estimate error (0.1).
    pub kalman_e0: f64,
    /// Multiplicative decrease of the receive rate on over-use (§5.5: 0.85).
    pub beta: f64,
    /// Multiplicative increase per second far from capacity (§5.5: 1.08).
    pub increase_per_second: f64,
    /// Added to the RTT to make the response time of the additive increase (100 ms).
    pub response_time_extra: Duration,
    /// The rate never exceeds `throughput_cap_factor` x receive rate + `throughput_cap_extra`
    /// (1.5, 10 kbit/s).
    pub throughput_cap_factor: f64,
    /// See `throughput_cap_factor`.
    pub throughput_cap_extra: Bitrate,
    /// Window of the receive-rate measurement (500 ms).
    pub throughput_window: Duration,
    /// Loss below this increases the loss-based rate (§6: 2 %).
    pub loss_low: f64,
    /// Loss above this decreases it (§6: 10 %).
    pub loss_high: f64,
    /// Packets a loss measurement needs (20).
    pub loss_min_packets: u64,
    /// Loss-based decreases at most once per this + RTT (300 ms).
    pub loss_decrease_interval: Duration,
    /// Loss-based increase: x this the minimum target of the last second (1.08) ...
    pub loss_increase_factor: f64,
    /// ... plus this (1 kbit/s).
    pub loss_increase_extra: Bitrate,
    /// Pacing rate = this x target (libwebrtc 2.5).
    pub pacing_factor: f64,
    /// Initial probes at these multiples of the start rate (3, 6); empty disables probing.
    pub initial_probes: Vec<f64>,
    /// Further probe at this multiple of a probe result (2) ...
    pub further_probe_factor: f64,
    /// ... while the result exceeds this share of the probe's target (0.7).
    pub further_probe_threshold: f64,
    /// A probe cluster lasts at least this (15 ms) ...
    pub probe_duration: Duration,
    /// ... and at least this many packets (5).
    pub probe_min_packets: u32,
}

impl Default for GccConfig {
    fn default() -> Self {
        GccConfig {
            start_rate: Bitrate::kbps(300),
            min_rate: Bitrate::kbps(150),
            max_rate: Bitrate::kbps(1500),
            burst_time: Duration::from_millis(5),
            estimator: DelayEstimator::Trendline,
            trendline_window: 20,
            trendline_smoothing: 0.9,
            trendline_gain: 4.0,
            trendline_sample_cap: 60,
            threshold_initial: Duration::from_micros(12_500),
            k_up: 0.0087,
            k_down: 0.039,
            threshold_max_jump: Duration::from_millis(15),
            threshold_min: Duration::from_millis(6),
            threshold_max: Duration::from_millis(600),
            threshold_max_dt: Duration::from_millis(100),
            overuse_time: Duration::from_millis(10),
            kalman_q: 1e-3,
            kalman_chi: 0.01,
            kalman_e0: 0.1,
            beta: 0.85,
            increase_per_second: 1.08,
            response_time_extra: Duration::from_millis(100),
            throughput_cap_factor: 1.5,
            throughput_cap_extra: Bitrate::kbps(10),
            throughput_window: Duration::from_millis(500),
            loss_low: 0.02,
            loss_high: 0.10,
            loss_min_packets: 20,
            loss_decrease_interval: Duration::from_millis(300),
            loss_increase_factor: 1.08,
            loss_increase_extra: Bitrate::kbps(1),
            pacing_factor: 2.5,
            initial_probes: vec![3.0, 6.0],
            further_probe_factor: 2.0,
            further_probe_threshold: 0.7,
            probe_duration: Duration::from_millis(15),
            probe_min_packets: 5,
        }
    }
}

crate::tunable!(GccConfig {
    start_rate,
    min_rate,
    max_rate,
    burst_time,
    trendline_window,
    trendline_smoothing,
    trendline_gain,
    trendline_sample_cap,
    threshold_initial,
    k_up,
    k_down,
    threshold_max_jump,
    threshold_min,
    threshold_max,
    threshold_max_dt,
    overuse_time,
    kalman_q,
    kalman_chi,
    kalman_e0,
    beta,
    increase_per_second,
    response_time_extra,
    throughput_cap_factor,
    throughput_cap_extra,
    throughput_window,
    loss_low,
    loss_high,
    loss_min_packets,
    loss_decrease_interval,
    loss_increase_factor,
    loss_increase_extra,
    pacing_factor,
    further_probe_factor,
    further_probe_threshold,
    probe_duration,
    probe_min_packets,
});

impl GccConfig {
    /// The draft's Kalman variant: the §5.3 filter and the §5.4 threshold gains.
    pub fn kalman() -> GccConfig {
        GccConfig { estimator: DelayEstimator::Kalman, k_up: 0.01, k_down: 0.00018, ..GccConfig::default() }
    }

    /// Builds the controller.
    pub fn build(&self) -> Gcc {
        let start = self.start_rate.clamp(self.min_rate, self.max_rate).as_bps_f64();
        let probes = self
            .initial_probes
            .iter()
            .map(|m| ProbeCluster::new(Bitrate::from_bps_f64(start * m).min(self.max_rate)))
            .collect();
        Gcc {
            cfg: self.clone(),
            group: None,
            prev_group: None,
            trend: Trendline::default(),
            kalman: Kalman {
                m_hat: 0.0,
                e: self.kalman_e0,
                var_noise: 50.0,
                samples: 0,
                recent_ts_deltas: VecDeque::new(),
            },
            detector: Detector {
                threshold: self.threshold_initial.as_secs_f64() * 1e3,
                last_update: None,
                time_over: -1.0,
                overuse_count: 0,
                prev_m: 0.0,
                usage: Usage::Normal,
            },
            aimd: Aimd {
                rate: start,
                state: AimdState::Increase,
                last_change: None,
                capacity_mean: None,
                capacity_var: 0.4,
            },
            arrivals: VecDeque::new(),
            rtt: 0.2,
            loss_rate: start,
            loss_lost: 0,
            loss_expected: 0,
            last_loss_decrease: None,
            target_history: VecDeque::new(),
            probes,
            last_probe_target: Bitrate::ZERO,
        }
    }
}

/// What the over-use detector concludes (draft §5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// The delay gradient is within the threshold.
    Normal,
    /// The queue is growing.
    Overusing,
    /// The queue is draining.
    Underusing,
}

/// The rate controller's state (draft §5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AimdState {
    /// Increasing.
    Increase,
    /// Holding.
    Hold,
    /// Decreasing.
    Decrease,
}

/// A group of packets sent within `burst_time` (draft §5.2).
#[derive(Clone, Copy, Debug)]
struct Group {
    first_send: Time,
    last_send: Time,
    last_arrival: Time,
}

/// libwebrtc's trendline estimator: slope of smoothed accumulated delay over arrival time.
#[derive(Clone, Debug, Default)]
struct Trendline {
    samples: u32,
    accumulated_ms: f64,
    smoothed_ms: f64,
    first_arrival: Option<Time>,
    /// `(arrival ms since the first, smoothed delay ms)`.
    window: VecDeque<(f64, f64)>,
    slope: f64,
}

impl Trendline {
    /// Adds one group's delay variation; returns the modified trend m (ms).
    fn update(&mut self, cfg: &GccConfig, delta_ms: f64, arrival: Time) -> f64 {
        self.samples = self.samples.saturating_add(1).min(1000);
        self.accumulated_ms += delta_ms;
        self.smoothed_ms = cfg.trendline_smoothing * self.smoothed_ms
            + (1.0 - cfg.trendline_smoothing) * self.accumulated_ms;
        let first = *self.first_arrival.get_or_insert(arrival);
        if self.window.len() == cfg.trendline_window {
            self.window.pop_front();
        }
        self.window.push_back(((arrival - first).as_secs_f64() * 1e3, self.smoothed_ms));
        if self.window.len() == cfg.trendline_window {
            if let Some(slope) = linear_fit_slope(&self.window) {
                self.slope = slope;
            }
        }
        if self.samples < 2 {
            return 0.0;
        }
        f64::from(self.samples.min(cfg.trendline_sample_cap)) * self.slope * cfg.trendline_gain
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

/// The arrival-time Kalman filter of draft-ietf-rmcat-gcc-02 §5.3 (units: ms).
#[derive(Clone, Debug)]
struct Kalman {
    m_hat: f64,
    e: f64,
    var_noise: f64,
    samples: u32,
    /// Recent inter-group arrival times (ms), for f_max.
    recent_ts_deltas: VecDeque<f64>,
}

impl Kalman {
    /// Adds one group's delay variation; returns min(samples, 60) x the offset estimate, the
    /// quantity libwebrtc's detector compared with the threshold.
    fn update(&mut self, cfg: &GccConfig, d_ms: f64, arrival_delta_ms: f64) -> f64 {
        self.samples = self.samples.saturating_add(1).min(1000);
        if self.recent_ts_deltas.len() == 60 {
            self.recent_ts_deltas.pop_front();
        }
        self.recent_ts_deltas.push_back(arrival_delta_ms.max(1e-3));
        let f_max = 1000.0 / self.recent_ts_deltas.iter().copied().fold(f64::INFINITY, f64::min);
        let z = d_ms - self.m_hat;
        // Outliers are clamped to 3 sigma before they update the noise estimate.
        let sigma = self.var_noise.sqrt();
        let z_clamped = z.clamp(-3.0 * sigma, 3.0 * sigma);
        let alpha = (1.0 - cfg.kalman_chi).powf(30.0 / (1000.0 * f_max));
        self.var_noise = (alpha * self.var_noise + (1.0 - alpha) * z_clamped * z_clamped).max(1.0);
        let k = (self.e + cfg.kalman_q) / (self.var_noise + self.e + cfg.kalman_q);
        self.m_hat += z * k;
        self.e = (1.0 - k) * (self.e + cfg.kalman_q);
        if self.samples < 2 {
            return 0.0;
        }
        f64::from(self.samples.min(cfg.trendline_sample_cap)) * self.m_hat
    }
}

/// The over-use detector with its adaptive threshold (draft §5.4; libwebrtc's timing rule).
#[derive(Clone, Debug)]
struct Detector {
    /// gamma, ms.
    threshold: f64,
    last_update: Option<Time>,
    /// Time m has stayed above gamma, ms (-1: not over).
    time_over: f64,
    overuse_count: u32,
    prev_m: f64,
    usage: Usage,
}

impl Detector {
    fn detect(&mut self, cfg: &GccConfig, m: f64, ts_delta_ms: f64, now: Time) {
        if m > self.threshold {
            self.time_over =
                if self.time_over < 0.0 { ts_delta_ms / 2.0 } else { self.time_over + ts_delta_ms };
            self.overuse_count += 1;
            if self.time_over > cfg.overuse_time.as_secs_f64() * 1e3
                && self.overuse_count > 1
                && m >= self.prev_m
            {
                self.time_over = 0.0;
                self.overuse_count = 0;
                self.usage = Usage::Overusing;
            }
        } else if m < -self.threshold {
            self.time_over = -1.0;
            self.overuse_count = 0;
            self.usage = Usage::Underusing;
        } else {
            self.time_over = -1.0;
            self.overuse_count = 0;
            self.usage = Usage::Normal;
        }
        self.prev_m = m;
        self.adapt_threshold(cfg, m, now);
    }

    /// gamma += dt x k x (|m| - gamma), k_up above and k_down below, clamped.
    fn adapt_threshold(&mut self, cfg: &GccConfig, m: f64, now: Time) {
        let last = *self.last_update.get_or_insert(now);
        let abs_m = m.abs();
        // A sudden jump (e.g. a route change) must not drag the threshold along.
        if abs_m > self.threshold + cfg.threshold_max_jump.as_secs_f64() * 1e3 {
            self.last_update = Some(now);
            return;
        }
        let k = if abs_m < self.threshold { cfg.k_down } else { cfg.k_up };
        let dt_ms = (now - last).min(cfg.threshold_max_dt).as_secs_f64() * 1e3;
        self.threshold += k * (abs_m - self.threshold) * dt_ms;
        self.threshold = self
            .threshold
            .clamp(cfg.threshold_min.as_secs_f64() * 1e3, cfg.threshold_max.as_secs_f64() * 1e3);
        self.last_update = Some(now);
    }
}

/// AIMD rate control (draft §5.5), with libwebrtc's link-capacity estimate deciding between
/// multiplicative and additive increase.
#[derive(Clone, Debug)]
struct Aimd {
    /// Delay-based rate, bit/s.
    rate: f64,
    state: AimdState,
    last_change: Option<Time>,
    /// Mean receive rate at past decreases, bit/s.
    capacity_mean: Option<f64>,
    /// Normalised variance of those (libwebrtc starts it at 0.4).
    capacity_var: f64,
}

impl Aimd {
    fn capacity_std(&self) -> Option<(f64, f64)> {
        self.capacity_mean.map(|m| (m, (self.capacity_var * m).sqrt()))
    }

    fn on_decrease_sample(&mut self, throughput: f64) {
        const ALPHA: f64 = 0.05;
        let mean = match self.capacity_mean {
            None => throughput,
            Some(m) => (1.0 - ALPHA) * m + ALPHA * throughput,
        };
        let norm = mean.max(1.0);
        self.capacity_var = (1.0 - ALPHA) * self.capacity_var + ALPHA * (mean - throughput).powi(2) / norm;
        self.capacity_var = self.capacity_var.clamp(0.4, 2.5);
        self.capacity_mean = Some(mean);
    }

    fn update(&mut self, cfg: &GccConfig, usage: Usage, throughput: Option<f64>, rtt: f64, now: Time) {
        self.state = match (usage, self.state) {
            (Usage::Normal, AimdState::Hold) => AimdState::Increase,
            (Usage::Normal, s) => s,
            (Usage::Overusing, _) => AimdState::Decrease,
            (Usage::Underusing, _) => AimdState::Hold,
        };
        let dt = self.last_change.map_or(0.0, |t| (now - t).as_secs_f64()).min(1.0);
        match self.state {
            AimdState::Hold => {}
            AimdState::Increase => {
                if let (Some(tp), Some((mean, std))) = (throughput, self.capacity_std()) {
                    // Far above the old capacity estimate: the path changed, forget it.
                    if tp > mean + 3.0 * std {
                        self.capacity_mean = None;
                    }
                }
                let increase = if self.capacity_mean.is_some() {
                    // Near capacity: about one packet per response time.
                    let bits_per_frame = self.rate / 30.0;
                    let packets_per_frame = (bits_per_frame / (1200.0 * 8.0)).ceil().max(1.0);
                    let packet_bits = bits_per_frame / packets_per_frame;
                    let response = rtt + cfg.response_time_extra.as_secs_f64();
                    (packet_bits / response).max(4000.0) * dt
                } else {
                    (self.rate * (cfg.increase_per_second.powf(dt) - 1.0)).max(1000.0 * dt)
                };
                let mut new = self.rate + increase;
                if let Some(tp) = throughput {
                    let cap = cfg.throughput_cap_factor * tp + cfg.throughput_cap_extra.as_bps_f64();
                    new = new.min(cap.max(self.rate));
                }
                self.rate = new;
                self.last_change = Some(now);
            }
            AimdState::Decrease => {
                if let Some(tp) = throughput {
                    let mut new = cfg.beta * tp;
                    if new > self.rate {
                        if let Some(mean) = self.capacity_mean {
                            new = cfg.beta * mean;
                        }
                    }
                    if new < self.rate {
                        self.rate = new;
                    }
                    if let Some((mean, std)) = self.capacity_std() {
                        if tp < mean - 3.0 * std {
                            self.capacity_mean = None;
                        }
                    }
                    self.on_decrease_sample(tp);
                }
                self.state = AimdState::Hold;
                self.last_change = Some(now);
            }
        }
        self.rate = self.rate.clamp(cfg.min_rate.as_bps_f64(), cfg.max_rate.as_bps_f64());
    }
}

/// One probe: packets sent at `target` (padded if media runs short); the receive rate of the
/// cluster estimates the capacity.
#[derive(Clone, Copy, Debug)]
struct ProbeCluster {
    target: Bitrate,
    first_seq: Option<u64>,
    last_seq: u64,
    packets: u32,
    bytes: u64,
    first_send: Time,
    last_send: Time,
    done_sending: bool,
    // Receive side, from feedback.
    recv_packets: u32,
    recv_bytes: u64,
    first_recv_size: u64,
    first_arrival: Option<Time>,
    last_arrival: Time,
    reported_to: Option<u64>,
}

impl ProbeCluster {
    fn new(target: Bitrate) -> ProbeCluster {
        ProbeCluster {
            target,
            first_seq: None,
            last_seq: 0,
            packets: 0,
            bytes: 0,
            first_send: Time::ZERO,
            last_send: Time::ZERO,
            done_sending: false,
            recv_packets: 0,
            recv_bytes: 0,
            first_recv_size: 0,
            first_arrival: None,
            last_arrival: Time::ZERO,
            reported_to: None,
        }
    }

    /// min(send rate, receive rate) of the cluster, if enough of it arrived (libwebrtc's probe
    /// estimator: 80 % of the packets).
    fn result(&self, last_size: u64) -> Option<f64> {
        let first_arrival = self.first_arrival?;
        if f64::from(self.recv_packets) < 0.8 * f64::from(self.packets) || self.recv_packets < 2 {
            return None;
        }
        let send_s = (self.last_send - self.first_send).as_secs_f64();
        let recv_s = (self.last_arrival - first_arrival).as_secs_f64();
        if send_s <= 0.0 || recv_s <= 0.0 {
            return None;
        }
        // The last packet's bytes were sent after the send interval; the first's arrived before
        // the receive interval.
        let send_rate = (self.bytes - last_size) as f64 * 8.0 / send_s;
        let recv_rate = (self.recv_bytes - self.first_recv_size) as f64 * 8.0 / recv_s;
        Some(send_rate.min(recv_rate))
    }
}

/// The GCC controller.
#[derive(Clone, Debug)]
pub struct Gcc {
    cfg: GccConfig,
    group: Option<Group>,
    prev_group: Option<Group>,
    trend: Trendline,
    kalman: Kalman,
    detector: Detector,
    aimd: Aimd,
    /// `(arrival, bytes)` of received packets within the throughput window.
    arrivals: VecDeque<(Time, u64)>,
    /// Latest RTT, s.
    rtt: f64,
    /// Loss-based rate, bit/s.
    loss_rate: f64,
    loss_lost: u64,
    loss_expected: u64,
    last_loss_decrease: Option<Time>,
    /// `(time, target)` over the last second, for the loss-based increase.
    target_history: VecDeque<(Time, f64)>,
    /// Probe clusters not yet evaluated, oldest first.
    probes: VecDeque<ProbeCluster>,
    last_probe_target: Bitrate,
}

impl Gcc {
    /// The over-use detector's current verdict.
    pub fn usage(&self) -> Usage {
        self.detector.usage
    }

    /// The AIMD state.
    pub fn aimd_state(&self) -> AimdState {
        self.aimd.state
    }

    /// The adaptive threshold gamma.
    pub fn threshold(&self) -> Duration {
        Duration::from_secs_f64(self.detector.threshold / 1e3)
    }

    /// The delay-based rate.
    pub fn delay_based_rate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.aimd.rate)
    }

    /// The loss-based rate.
    pub fn loss_based_rate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.loss_rate)
    }

    fn target_bps(&self) -> f64 {
        self.aimd
            .rate
            .min(self.loss_rate)
            .clamp(self.cfg.min_rate.as_bps_f64(), self.cfg.max_rate.as_bps_f64())
    }

    fn active_probe(&self) -> Option<&ProbeCluster> {
        self.probes.iter().find(|p| !p.done_sending)
    }

    /// Receive rate over the throughput window, bit/s (None until a window's worth arrived).
    fn throughput(&self) -> Option<f64> {
        let (first, last) = (self.arrivals.front()?.0, self.arrivals.back()?.0);
        let span = (last - first).as_secs_f64();
        if span < 0.5 * self.cfg.throughput_window.as_secs_f64() {
            return None;
        }
        let bytes: u64 = self.arrivals.iter().skip(1).map(|a| a.1).sum();
        Some(bytes as f64 * 8.0 / span)
    }

    /// Feeds one received packet to the grouping and, on a completed group, to the estimator.
    fn on_arrival(&mut self, send: Time, arrival: Time, now: Time) {
        let Some(g) = self.group.as_mut() else {
            self.group = Some(Group { first_send: send, last_send: send, last_arrival: arrival });
            return;
        };
        if send < g.first_send {
            return; // reordered into an older group
        }
        let in_burst = send - g.first_send <= self.cfg.burst_time;
        // libwebrtc also merges packets that arrive back to back with a shrinking delay.
        let arrival_burst = arrival >= g.last_arrival
            && arrival - g.last_arrival < self.cfg.burst_time
            && (arrival - g.last_arrival) < (send - g.last_send);
        if in_burst || arrival_burst {
            g.last_send = g.last_send.max(send);
            g.last_arrival = g.last_arrival.max(arrival);
            return;
        }
        let done = *g;
        self.group = Some(Group { first_send: send, last_send: send, last_arrival: arrival });
        if let Some(prev) = self.prev_group.replace(done) {
            let send_delta = done.last_send.as_nanos() as f64 - prev.last_send.as_nanos() as f64;
            let arrival_delta = done.last_arrival.as_nanos() as f64 - prev.last_arrival.as_nanos() as f64;
            let d_ms = (arrival_delta - send_delta) / 1e6;
            let m = match self.cfg.estimator {
                DelayEstimator::Trendline => self.trend.update(&self.cfg, d_ms, done.last_arrival),
                DelayEstimator::Kalman => self.kalman.update(&self.cfg, d_ms, arrival_delta / 1e6),
            };
            self.detector.detect(&self.cfg, m, send_delta / 1e6, now);
        }
    }

    /// Loss-based control (draft §6) over windows of at least `loss_min_packets`.
    fn update_loss_based(&mut self, now: Time) {
        if self.loss_expected < self.cfg.loss_min_packets {
            return;
        }
        let loss = self.loss_lost as f64 / self.loss_expected as f64;
        self.loss_lost = 0;
        self.loss_expected = 0;
        if loss < self.cfg.loss_low {
            let min_recent = self.target_history.iter().map(|x| x.1).fold(self.target_bps(), f64::min);
            let up = self.cfg.loss_increase_factor * min_recent + self.cfg.loss_increase_extra.as_bps_f64();
            self.loss_rate = self.loss_rate.max(up);
        } else if loss > self.cfg.loss_high {
            let interval = self.cfg.loss_decrease_interval + Duration::from_secs_f64(self.rtt);
            if self.last_loss_decrease.is_none_or(|t| now - t >= interval) {
                self.loss_rate = self.target_bps() * (1.0 - 0.5 * loss);
                self.last_loss_decrease = Some(now);
            }
        }
        // Never let the loss-based rate run away above what the delay-based part allows.
        let cap = self.cfg.max_rate.as_bps_f64().min(self.aimd.rate * self.cfg.loss_increase_factor + 1e3);
        self.loss_rate =
            self.loss_rate.clamp(self.cfg.min_rate.as_bps_f64(), cap.max(self.cfg.min_rate.as_bps_f64()));
    }

    /// Evaluates probe clusters the report completes; a good result raises both estimates.
    fn update_probes(&mut self, report: &FeedbackReport) {
        for p in &report.packets {
            for c in self.probes.iter_mut() {
                let Some(first) = c.first_seq else { continue };
                if p.sent.seq < first || p.sent.seq > c.last_seq {
                    continue;
                }
                c.reported_to = Some(p.sent.seq);
                if let Some(a) = p.arrival {
                    if c.first_arrival.is_none() {
                        c.first_arrival = Some(a);
                        c.first_recv_size = p.sent.size.0;
                    }
                    c.last_arrival = c.last_arrival.max(a);
                    c.recv_packets += 1;
                    c.recv_bytes += p.sent.size.0;
                }
            }
        }
        while let Some(c) = self.probes.front().copied() {
            if !c.done_sending || c.reported_to != Some(c.last_seq) {
                break;
            }
            self.probes.pop_front();
            let last_size = c.bytes / u64::from(c.packets.max(1));
            let Some(estimate) = c.result(last_size) else { continue };
            if estimate > self.aimd.rate {
                let r = estimate.min(self.cfg.max_rate.as_bps_f64());
                self.aimd.rate = r;
                self.loss_rate = self.loss_rate.max(r);
            }
            let more_planned = self.probes.iter().any(|p| p.first_seq.is_none());
            if !more_planned
                && estimate > self.cfg.further_probe_threshold * c.target.as_bps_f64()
                && self.aimd.rate < self.cfg.max_rate.as_bps_f64()
            {
                let next =
                    Bitrate::from_bps_f64(estimate * self.cfg.further_probe_factor).min(self.cfg.max_rate);
                if next > self.last_probe_target {
                    self.probes.push_back(ProbeCluster::new(next));
                }
            }
        }
    }
}

impl RateController for Gcc {
    fn name(&self) -> &'static str {
        "gcc"
    }

    fn on_packet_sent(&mut self, _now: Time, packet: &SentPacket) {
        let (duration, min_packets) = (self.cfg.probe_duration, self.cfg.probe_min_packets);
        let Some(c) = self.probes.iter_mut().find(|p| !p.done_sending) else { return };
        if c.first_seq.is_none() {
            c.first_seq = Some(packet.seq);
            c.first_send = packet.send_time;
            self.last_probe_target = c.target;
        }
        c.last_seq = packet.seq;
        c.last_send = packet.send_time;
        c.packets += 1;
        c.bytes += packet.size.0;
        let min_bytes = c.target.bytes_in(duration).0;
        if c.packets >= min_packets && c.bytes >= min_bytes && c.last_send - c.first_send >= duration {
            c.done_sending = true;
        }
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        if let Some(rtt) = report.rtt_sample(now) {
            self.rtt = rtt.as_secs_f64();
        }
        for p in &report.packets {
            self.loss_expected += 1;
            match p.arrival {
                Some(arrival) => {
                    self.arrivals.push_back((arrival, p.sent.size.0));
                    self.on_arrival(p.sent.send_time, arrival, now);
                }
                None => self.loss_lost += 1,
            }
        }
        if let Some(newest) = self.arrivals.back().map(|a| a.0) {
            while self.arrivals.front().is_some_and(|a| newest - a.0 > self.cfg.throughput_window) {
                self.arrivals.pop_front();
            }
        }
        self.update_probes(report);
        let throughput = self.throughput();
        self.aimd.update(&self.cfg, self.detector.usage, throughput, self.rtt, now);
        self.update_loss_based(now);
        let target = self.target_bps();
        self.target_history.push_back((now, target));
        while self.target_history.front().is_some_and(|x| now - x.0 > Duration::from_secs(1)) {
            self.target_history.pop_front();
        }
    }

    fn target_bitrate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.target_bps())
    }

    fn pacing_rate(&self) -> Bitrate {
        match self.active_probe() {
            Some(p) => p.target,
            None => Bitrate::from_bps_f64(self.target_bps() * self.cfg.pacing_factor),
        }
    }

    fn wants_padding(&self, _now: Time) -> bool {
        self.active_probe().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PacketResult, SentPacket};
    use lowlat_core::Bytes;

    /// Packets of 1200 B sent every `gap`; arrival = send + 50 ms + queue(send). Reports every
    /// 100 ms, from `from` until `seconds`.
    fn drive(gcc: &mut Gcc, from: Time, seconds: f64, gap: Duration, queue: impl Fn(Time) -> Duration) {
        let mut pending = Vec::new();
        let mut t = from;
        let mut seq = from.as_nanos() / gap.as_nanos();
        let mut next_report = from + Duration::from_millis(100);
        while t.as_secs_f64() < seconds {
            let sent = SentPacket { seq, size: Bytes(1200), send_time: t };
            gcc.on_packet_sent(t, &sent);
            pending.push(PacketResult {
                sent,
                arrival: Some(t + Duration::from_millis(50) + queue(t)),
                ecn: 0,
            });
            seq += 1;
            t += gap;
            if t >= next_report {
                let report = FeedbackReport { packets: std::mem::take(&mut pending), report_time: t };
                gcc.on_feedback(t + Duration::from_millis(50), &report);
                next_report += Duration::from_millis(100);
            }
        }
    }

    /// 1200 B every 10 ms (960 kbit/s) for 2 s, then the queue grows by 2 ms per packet (the
    /// path carries 800 kbit/s).
    fn overload(t0: Time) -> impl Fn(Time) -> Duration {
        move |t| if t < t0 { Duration::ZERO } else { Duration::from_secs_f64((t - t0).as_secs_f64() * 0.2) }
    }

    #[test]
    fn growing_delay_is_overuse_and_cuts_the_rate_to_beta_times_the_receive_rate() {
        let cfg = GccConfig {
            initial_probes: vec![],
            start_rate: Bitrate::mbps(2),
            max_rate: Bitrate::mbps(5),
            ..GccConfig::default()
        };
        let mut gcc = cfg.build();
        let t0 = Time::from_secs(2);
        drive(&mut gcc, Time::ZERO, 2.0, Duration::from_millis(10), overload(t0));
        assert_eq!(gcc.usage(), Usage::Normal);
        assert!(gcc.delay_based_rate() >= Bitrate::mbps(2));
        drive(&mut gcc, t0, 3.0, Duration::from_millis(10), overload(t0));
        // The receive rate over the window is between 800 and 960 kbit/s.
        let r = gcc.delay_based_rate().as_bps_f64();
        assert!((0.85 * 800e3..=0.85 * 960e3).contains(&r), "rate {r}");
    }

    #[test]
    fn steady_delay_increases_multiplicatively_about_8_percent_per_second() {
        let cfg = GccConfig { initial_probes: vec![], max_rate: Bitrate::mbps(100), ..GccConfig::default() };
        let mut gcc = cfg.build();
        // Enough packets that the throughput cap does not bind: 1200 B every 2 ms = 4.8 Mbit/s.
        drive(&mut gcc, Time::ZERO, 10.0, Duration::from_millis(2), |_| Duration::ZERO);
        let r = gcc.delay_based_rate().as_bps_f64();
        let expected = 300e3 * 1.08f64.powf(9.9);
        assert!((r / expected - 1.0).abs() < 0.05, "rate {r} vs {expected}");
        assert_eq!(gcc.usage(), Usage::Normal);
    }

    #[test]
    fn threshold_adapts_within_its_clamp() {
        let cfg = GccConfig::default();
        let mut d = Detector {
            threshold: 12.5,
            last_update: None,
            time_over: -1.0,
            overuse_count: 0,
            prev_m: 0.0,
            usage: Usage::Normal,
        };
        // |m| = 0 for long: decays towards 0 but stops at 6 ms.
        for i in 0..1000 {
            d.detect(&cfg, 0.0, 10.0, Time::from_millis(10 * i));
        }
        assert!((d.threshold - 6.0).abs() < 1e-9);
        // |m| slightly above: rises with k_up.
        let before = d.threshold;
        d.detect(&cfg, 10.0, 10.0, Time::from_millis(10_000));
        assert!((d.threshold - (before + 0.0087 * (10.0 - before) * 10.0)).abs() < 1e-9);
        // A jump of more than 15 ms above gamma leaves it alone.
        let before = d.threshold;
        d.detect(&cfg, before + 20.0, 10.0, Time::from_millis(10_010));
        assert_eq!(d.threshold, before);
    }

    #[test]
    fn heavy_loss_halves_by_loss_over_two_once_per_interval() {
        let cfg = GccConfig { initial_probes: vec![], ..GccConfig::default() };
        let mut gcc = cfg.build();
        let mut seq = 0;
        let mut make = |lost_every: u64, t: Time| {
            let packets = (0..40)
                .map(|i| {
                    let sent = SentPacket { seq, size: Bytes(1200), send_time: t + Duration::from_millis(i) };
                    seq += 1;
                    let arrival = (seq % lost_every != 0).then(|| sent.send_time + Duration::from_millis(50));
                    PacketResult { sent, arrival, ecn: 0 }
                })
                .collect();
            FeedbackReport { packets, report_time: t + Duration::from_millis(90) }
        };
        let before = gcc.target_bitrate().as_bps_f64();
        // 20 % loss (every 5th).
        gcc.on_feedback(Time::from_millis(140), &make(5, Time::ZERO));
        let after = gcc.loss_based_rate().as_bps_f64();
        assert!((after - before * 0.9).abs() < 1.0, "{before} -> {after}");
        // The next report within 300 ms + RTT does not cut again.
        gcc.on_feedback(Time::from_millis(240), &make(5, Time::from_millis(100)));
        assert!((gcc.loss_based_rate().as_bps_f64() - after).abs() < 1.0);
    }

    #[test]
    fn kalman_variant_detects_overuse_too() {
        let cfg = GccConfig {
            initial_probes: vec![],
            start_rate: Bitrate::mbps(2),
            max_rate: Bitrate::mbps(5),
            ..GccConfig::kalman()
        };
        let mut gcc = cfg.build();
        let t0 = Time::from_secs(2);
        drive(&mut gcc, Time::ZERO, 2.0, Duration::from_millis(10), overload(t0));
        assert_eq!(gcc.usage(), Usage::Normal);
        drive(&mut gcc, t0, 3.0, Duration::from_millis(10), overload(t0));
        assert!(gcc.delay_based_rate() < Bitrate::kbps(900));
    }
}
