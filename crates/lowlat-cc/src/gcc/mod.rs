//! GCC: Google congestion control, sender-side (draft-ietf-rmcat-gcc-02, held against libwebrtc's
//! `goog_cc` as it runs today).
//!
//! From transport-wide feedback the sender rebuilds each packet's send and arrival times and runs
//! libwebrtc's pipeline, one mechanism per file, each readable against its reference:
//!
//! | file | mechanism | libwebrtc (modules/congestion_controller/goog_cc/) |
//! |---|---|---|
//! | `inter_arrival.rs` | arrival groups, burst grouping (§5.2) | inter_arrival_delta.cc |
//! | `trendline.rs` | trendline filter of the delay variation | trendline_estimator.cc |
//! | `kalman.rs` | the draft's Kalman filter (§5.3), an option | remote_bitrate_estimator/overuse_estimator.cc |
//! | `detector.rs` | over-use detector, adaptive threshold (§5.4) | trendline_estimator.cc (Detect) |
//! | `aimd.rs` | AIMD rate control (§5.5) | remote_bitrate_estimator/aimd_rate_control.cc |
//! | `link_capacity.rs` | link-capacity estimate, in kbit/s | link_capacity_estimator.cc |
//! | `loss_based.rs` | loss-based control (§6) | send_side_bandwidth_estimation.cc |
//! | `probe.rs` | probe controller and probe estimator | probe_controller.cc, probe_bitrate_estimator.cc |
//!
//! This file is the glue of `goog_cc_network_control.cc` and `delay_based_bwe.cc`, per feedback:
//! 1. RTT: the feedback-only mode of goog_cc: the delay-based part uses the mean, over the last
//!    32 reports, of each report's largest `now - send time` (it includes the receiver's hold
//!    time); the loss-based part uses the report's smallest RTT net of the hold time.
//! 2. Loss counts go to the loss-based part (at most once per second, `loss_based.rs`).
//! 3. The received packets, sorted by arrival time, go through the grouping, the filter and the
//!    detector; a feedback gap over `stream_timeout` (2 s) restarts those.
//! 4. Delay-based update (`DelayBasedBwe::MaybeUpdateEstimate`): while over-using, AIMD decreases
//!    at most once per clamp(RTT, 10, 200 ms) unless the throughput fell below half the rate (with
//!    no throughput measured yet: halve). Otherwise a probe result, if any, sets the estimate (not
//!    below min(estimate, `probe_drop_throughput_fraction` (0.85) x throughput), libwebrtc's
//!    `LimitProbesLowerThanThroughputEstimate`) and the loss-based target; else AIMD updates.
//! 5. The loss-based target is capped by the delay-based estimate; it is the target rate. The
//!    probe controller sees it (further probing); the pacer runs at `pacing_factor` (2.5) x target.
//!
//! [`GccConfig::artifact`] (scenario key `cc_params.gcc.variant = "artifact"`) switches to the
//! rules of the Zhuge artifact's GCC port where they differ: a 1 s receive rate counting lost
//! bytes and capped by the rate, the throughput cap lowering a held rate, AIMD once per clamped
//! RTT, the RTT as the smallest of the last 15 records', no loss-based part, no probing, no 5 kbit/s
//! backoff term, the additive increase per (RTT + 100 ms), and its grouping: 10 ms send-time
//! groups with mean times and whole-ms deltas (`inter_arrival.rs`, `MeanGroups`), the records
//! and AIMD once per closed group. Each is a field, off by default.
//!
//! Deliberate differences from libwebrtc (besides those in each file's header):
//! - Throughput ("acknowledged bitrate") is the bytes received over the last `throughput_window`
//!   (500 ms) of arrivals, where libwebrtc uses a Bayesian estimator over 150 ms windows
//!   (`BitrateEstimator`); both start after about half a second of data.
//! - No ALR detector, no congestion-window pushback (a field trial), no separate audio
//!   detector, no REMB.
//! - ECN: goog_cc has no reaction to CE marks (libwebrtc reports ECN counts in RFC 8888 feedback
//!   for its L4S work, but the classic delay/loss estimator ignores them); neither does this.
//!   `PacketResult::ecn` is unused here.

mod aimd;
mod detector;
mod inter_arrival;
mod kalman;
mod link_capacity;
mod loss_based;
mod probe;
mod trendline;

use crate::{FeedbackReport, RateController, SentPacket};
use aimd::Aimd;
use detector::Detector;
use inter_arrival::{GroupDelta, InterArrival, MeanGroups};
use kalman::Kalman;
use loss_based::LossBased;
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use probe::Prober;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use trendline::Trendline;

/// Which filter turns delay gradients into the signal the over-use detector compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayEstimator {
    /// libwebrtc's trendline (linear regression over smoothed accumulated delay).
    Trendline,
    /// The Kalman filter of draft-ietf-rmcat-gcc-02 §5.3.
    Kalman,
}

/// GCC's parameters: draft-ietf-rmcat-gcc-02 and libwebrtc's current values (file names refer to
/// libwebrtc's modules/congestion_controller/goog_cc/ unless said otherwise).
#[derive(Clone, Debug, PartialEq)]
pub struct GccConfig {
    /// Rate at start.
    pub start_rate: Bitrate,
    /// Lowest target.
    pub min_rate: Bitrate,
    /// Highest target.
    pub max_rate: Bitrate,
    /// Packets sent within this of a group's first packet join the group, and a burst joins when
    /// it arrives within this of the group's last arrival (§5.2; inter_arrival_delta: 5 ms).
    pub burst_time: Duration,
    /// A burst group lasts at most this at the receiver (inter_arrival_delta
    /// `kMaxBurstDuration`: 100 ms).
    pub burst_max_duration: Duration,
    /// A gap in feedback longer than this restarts the delay-based detection
    /// (delay_based_bwe `kStreamTimeOut`: 2 s).
    pub stream_timeout: Duration,
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
    /// Multiplicative decrease of the receive rate on over-use (§5.5, aimd_rate_control: 0.85).
    pub beta: f64,
    /// Subtracted after the decrease when the result exceeds it (aimd_rate_control
    /// `SubtractAdditionalBackoffTerm`, on by default: 5 kbit/s).
    pub backoff_extra: Bitrate,
    /// Multiplicative increase per second far from capacity (§5.5: 1.08).
    pub increase_per_second: f64,
    /// Smallest multiplicative increase per update (aimd_rate_control: 1 kbit/s).
    pub multiplicative_min_increase: Bitrate,
    /// Added to the RTT to make the response time of the additive increase (100 ms).
    pub response_time_extra: Duration,
    /// The additive increase adds one packet per this many response times (aimd_rate_control
    /// `GetNearMaxIncreaseRateBpsPerSecond`: 2).
    pub response_time_factor: f64,
    /// Smallest additive increase, per second (aimd_rate_control: 4 kbit/s).
    pub additive_min_increase: Bitrate,
    /// Frame rate the additive increase assumes (30).
    pub additive_frame_rate: f64,
    /// Largest packet the additive increase assumes (1200 B).
    pub additive_packet_size: Bytes,
    /// Over-use decreases at most once per RTT clamped to [this, ...] (10 ms) ...
    pub reduce_interval_min: Duration,
    /// ... [..., this] (200 ms) (aimd_rate_control `TimeToReduceFurther`).
    pub reduce_interval_max: Duration,
    /// Link-capacity estimate: EWMA weight of a sample at over-use (0.05).
    pub capacity_smoothing: f64,
    /// Link-capacity estimate: normalised variance clamp, low end (0.4, kbit/s) ...
    pub capacity_deviation_min: f64,
    /// ... high end (2.5, kbit/s).
    pub capacity_deviation_max: f64,
    /// Link-capacity estimate: half-width of the near-capacity band in deviations (3).
    pub capacity_band_std: f64,
    /// The rate never exceeds `throughput_cap_factor` x receive rate + `throughput_cap_extra`
    /// (1.5, 10 kbit/s).
    pub throughput_cap_factor: f64,
    /// See `throughput_cap_factor`.
    pub throughput_cap_extra: Bitrate,
    /// Window of the receive-rate measurement (500 ms).
    pub throughput_window: Duration,
    /// Loss at or below this increases the loss-based rate (§6: 2 %).
    pub loss_low: f64,
    /// Loss above this decreases it (§6: 10 %).
    pub loss_high: f64,
    /// Packets a loss measurement needs (20).
    pub loss_min_packets: u64,
    /// Feedback loss counts reach the loss-based part at most once per this (goog_cc
    /// `kLossUpdateInterval`: 1 s).
    pub loss_update_interval: Duration,
    /// While no loss was seen this long after the first loss report, the loss-based rate follows
    /// the delay-based one up (`kStartPhase`: 2 s).
    pub loss_start_phase: Duration,
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
    /// Further probe at this multiple of the target (2) ...
    pub further_probe_factor: f64,
    /// ... while the target exceeds this share of the last probe's rate (0.7) ...
    pub further_probe_threshold: f64,
    /// ... within this of the last probe (`kMaxWaitingTimeForProbingResult`: 1 s).
    pub probe_wait: Duration,
    /// A probe cluster lasts at least this (15 ms) ...
    pub probe_duration: Duration,
    /// ... and at least this many packets (5).
    pub probe_min_packets: u32,
    /// Share of a cluster's packets that must arrive for a result (0.8).
    pub probe_min_received_share: f64,
    /// A result with receive rate / send rate above this is invalid (2).
    pub probe_max_valid_ratio: f64,
    /// Receiving below this share of the send rate means the probe found the capacity (0.9) ...
    pub probe_unsaturated_ratio: f64,
    /// ... and the result is this x the receive rate (`kTargetUtilizationFraction`: 0.95).
    pub probe_target_utilization: f64,
    /// A probe result never lowers the estimate below this x throughput (0.85).
    pub probe_drop_throughput_fraction: f64,
    /// The throughput AIMD sees is min(receive rate, delay-based rate) (false; the Zhuge
    /// artifact's `gcc-controller.cc` `GccController::processFeedback`: `Update(..,
    /// std::min((uint32_t)m_RecvR, current_bitrate_bps_), ..)`: true).
    pub throughput_capped_by_rate: bool,
    /// The `throughput_cap_factor` cap lowers the rate in every AIMD state, not only stops an
    /// increase (false, aimd_rate_control `ClampBitrate`; the artifact's
    /// `GccController::ClampBitrate`: `new_bitrate_bps = std::min(new_bitrate_bps,
    /// max_bitrate_bps)` after every change, hold included: true).
    pub throughput_cap_lowers: bool,
    /// The bytes of packets reported lost count in the receive rate, on the next arrival
    /// (false; the artifact's `SenderBasedController::processFeedback` gives each recorded
    /// packet the size of every packet sent since the previous one, `intvl_pseudo_size`: true).
    pub throughput_counts_lost: bool,
    /// The loss-based part runs and its rate is the target (true, goog_cc); false: the target is
    /// the delay-based rate (the artifact's `GccController::processFeedback` has
    /// `UpdatePacketsLost` commented out, so its `UpdateEstimate` only clamps).
    pub loss_based: bool,
    /// AIMD runs at most once per clamp(RTT, `reduce_interval_min`, `reduce_interval_max`) since
    /// its last run, or sooner on over-use when [`Aimd`]'s `time_to_reduce_further` allows (the
    /// artifact's `GccController::processFeedback`, `last_update_ms_`: true); false: at every
    /// report, as libwebrtc's `DelayBasedBwe`.
    pub aimd_once_per_rtt: bool,
    /// 0: goog_cc's feedback-only RTT (step 1 above); n > 0: the smallest `now - send time` of the
    /// last n received packets (the artifact's `SenderBasedController::getCurrentRTT`, `ntab =
    /// 15`, over its one record per packet group: with `update_per_group`, one a group here too).
    pub rtt_min_packets: u32,
    /// The Zhuge artifact's packet grouping (`inter_arrival.rs`, [`GccConfig::artifact`]):
    /// groups by send time alone (`burst_time`, the artifact's 10 ms), each group's mean send and
    /// arrival times, deltas in whole ms (false: libwebrtc's `InterArrivalDelta`).
    pub group_mean_times: bool,
    /// With `group_mean_times`: a reported packet sent more than this after the current group's
    /// first is ignored, and so is every later one (the artifact's `20 * m_interval` ms, its
    /// frame interval 40 ms at the paper's 25 fps: 800 ms).
    pub group_max_span: Duration,
    /// The receive-rate record, the RTT record and AIMD run once per closed packet group, with
    /// the packet that opened the next group (the artifact's `OnSocketRecv_sender` calls
    /// `processFeedback` only then: `sender-based-controller.cc` records that packet with the
    /// bytes of every packet since the previous record, sent within the last second
    /// (`intvl_pseudo_size`), and `gcc-controller.cc` decides on AIMD); false: at every report,
    /// as libwebrtc.
    pub update_per_group: bool,
}

impl Default for GccConfig {
    fn default() -> Self {
        GccConfig {
            start_rate: Bitrate::kbps(300),
            min_rate: Bitrate::kbps(150),
            max_rate: Bitrate::kbps(1500),
            burst_time: Duration::from_millis(5),
            burst_max_duration: Duration::from_millis(100),
            stream_timeout: Duration::from_secs(2),
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
            backoff_extra: Bitrate::kbps(5),
            increase_per_second: 1.08,
            multiplicative_min_increase: Bitrate::kbps(1),
            response_time_extra: Duration::from_millis(100),
            response_time_factor: 2.0,
            additive_min_increase: Bitrate::kbps(4),
            additive_frame_rate: 30.0,
            additive_packet_size: Bytes(1200),
            reduce_interval_min: Duration::from_millis(10),
            reduce_interval_max: Duration::from_millis(200),
            capacity_smoothing: 0.05,
            capacity_deviation_min: 0.4,
            capacity_deviation_max: 2.5,
            capacity_band_std: 3.0,
            throughput_cap_factor: 1.5,
            throughput_cap_extra: Bitrate::kbps(10),
            throughput_window: Duration::from_millis(500),
            loss_low: 0.02,
            loss_high: 0.10,
            loss_min_packets: 20,
            loss_update_interval: Duration::from_secs(1),
            loss_start_phase: Duration::from_secs(2),
            loss_decrease_interval: Duration::from_millis(300),
            loss_increase_factor: 1.08,
            loss_increase_extra: Bitrate::kbps(1),
            pacing_factor: 2.5,
            initial_probes: vec![3.0, 6.0],
            further_probe_factor: 2.0,
            further_probe_threshold: 0.7,
            probe_wait: Duration::from_secs(1),
            probe_duration: Duration::from_millis(15),
            probe_min_packets: 5,
            probe_min_received_share: 0.8,
            probe_max_valid_ratio: 2.0,
            probe_unsaturated_ratio: 0.9,
            probe_target_utilization: 0.95,
            probe_drop_throughput_fraction: 0.85,
            throughput_capped_by_rate: false,
            throughput_cap_lowers: false,
            throughput_counts_lost: false,
            loss_based: true,
            aimd_once_per_rtt: false,
            rtt_min_packets: 0,
            group_mean_times: false,
            group_max_span: Duration::from_millis(800),
            update_per_group: false,
        }
    }
}

crate::tunable!(GccConfig {
    start_rate,
    min_rate,
    max_rate,
    burst_time,
    burst_max_duration,
    stream_timeout,
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
    backoff_extra,
    increase_per_second,
    multiplicative_min_increase,
    response_time_extra,
    response_time_factor,
    additive_min_increase,
    additive_frame_rate,
    additive_packet_size,
    reduce_interval_min,
    reduce_interval_max,
    capacity_smoothing,
    capacity_deviation_min,
    capacity_deviation_max,
    capacity_band_std,
    throughput_cap_factor,
    throughput_cap_extra,
    throughput_window,
    loss_low,
    loss_high,
    loss_min_packets,
    loss_update_interval,
    loss_start_phase,
    loss_decrease_interval,
    loss_increase_factor,
    loss_increase_extra,
    pacing_factor,
    further_probe_factor,
    further_probe_threshold,
    probe_wait,
    probe_duration,
    probe_min_packets,
    probe_min_received_share,
    probe_max_valid_ratio,
    probe_unsaturated_ratio,
    probe_target_utilization,
    probe_drop_throughput_fraction,
    throughput_capped_by_rate,
    throughput_cap_lowers,
    throughput_counts_lost,
    loss_based,
    aimd_once_per_rtt,
    rtt_min_packets,
    group_mean_times,
    group_max_span,
    update_per_group,
});

impl GccConfig {
    /// Checks each constant's range and their relations (min_rate <= start_rate <= max_rate,
    /// threshold_min <= threshold_initial <= threshold_max, reduce_interval_min <=
    /// reduce_interval_max, loss_low <= loss_high, capacity_deviation_min <= its maximum, beta
    /// and the shares in (0, 1], intervals above zero); the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        use crate::tunable::bounds::{MAX_FACTOR, MAX_INTERVAL, MAX_RATE, MAX_SAMPLES, MAX_SIZE};
        use crate::tunable::range::{above_up_to, not_below, within};
        let zero = Duration::ZERO;
        crate::tunable::check_rate_range(self.min_rate, self.start_rate, self.max_rate)?;
        for (key, d) in [
            ("burst_time", self.burst_time),
            ("burst_max_duration", self.burst_max_duration),
            ("threshold_max_jump", self.threshold_max_jump),
            ("overuse_time", self.overuse_time),
            ("response_time_extra", self.response_time_extra),
        ] {
            within(key, d, zero, MAX_INTERVAL)?;
        }
        for (key, d) in [
            ("stream_timeout", self.stream_timeout),
            ("threshold_max_dt", self.threshold_max_dt),
            ("throughput_window", self.throughput_window),
            ("loss_update_interval", self.loss_update_interval),
            ("loss_start_phase", self.loss_start_phase),
            ("loss_decrease_interval", self.loss_decrease_interval),
            ("probe_wait", self.probe_wait),
            ("probe_duration", self.probe_duration),
            ("reduce_interval_min", self.reduce_interval_min),
            ("group_max_span", self.group_max_span),
        ] {
            above_up_to(key, d, zero, MAX_INTERVAL)?;
        }
        within("reduce_interval_max", self.reduce_interval_max, zero, MAX_INTERVAL)?;
        not_below(
            "reduce_interval_max",
            self.reduce_interval_max,
            "reduce_interval_min",
            self.reduce_interval_min,
        )?;
        within("trendline_window", self.trendline_window, 2, MAX_SAMPLES)?;
        within("trendline_smoothing", self.trendline_smoothing, 0.0, 1.0)?;
        within("trendline_gain", self.trendline_gain, 0.0, MAX_FACTOR)?;
        within("trendline_sample_cap", self.trendline_sample_cap, 1, MAX_SAMPLES as u32)?;
        above_up_to("threshold_min", self.threshold_min, zero, MAX_INTERVAL)?;
        within("threshold_max", self.threshold_max, zero, MAX_INTERVAL)?;
        not_below("threshold_max", self.threshold_max, "threshold_min", self.threshold_min)?;
        not_below("threshold_initial", self.threshold_initial, "threshold_min", self.threshold_min)?;
        not_below("threshold_max", self.threshold_max, "threshold_initial", self.threshold_initial)?;
        within("k_up", self.k_up, 0.0, MAX_FACTOR)?;
        within("k_down", self.k_down, 0.0, MAX_FACTOR)?;
        above_up_to("kalman_q", self.kalman_q, 0.0, MAX_FACTOR)?;
        above_up_to("kalman_chi", self.kalman_chi, 0.0, 1.0)?;
        above_up_to("kalman_e0", self.kalman_e0, 0.0, MAX_FACTOR)?;
        above_up_to("beta", self.beta, 0.0, 1.0)?;
        for (key, r) in [
            ("backoff_extra", self.backoff_extra),
            ("multiplicative_min_increase", self.multiplicative_min_increase),
            ("additive_min_increase", self.additive_min_increase),
            ("throughput_cap_extra", self.throughput_cap_extra),
            ("loss_increase_extra", self.loss_increase_extra),
        ] {
            within(key, r, Bitrate::ZERO, MAX_RATE)?;
        }
        within("increase_per_second", self.increase_per_second, 1.0, MAX_FACTOR)?;
        above_up_to("response_time_factor", self.response_time_factor, 0.0, MAX_FACTOR)?;
        above_up_to("additive_frame_rate", self.additive_frame_rate, 0.0, 1000.0)?;
        above_up_to("additive_packet_size", self.additive_packet_size, Bytes::ZERO, MAX_SIZE)?;
        above_up_to("capacity_smoothing", self.capacity_smoothing, 0.0, 1.0)?;
        above_up_to("capacity_deviation_min", self.capacity_deviation_min, 0.0, MAX_FACTOR)?;
        within("capacity_deviation_max", self.capacity_deviation_max, 0.0, MAX_FACTOR)?;
        not_below(
            "capacity_deviation_max",
            self.capacity_deviation_max,
            "capacity_deviation_min",
            self.capacity_deviation_min,
        )?;
        within("capacity_band_std", self.capacity_band_std, 0.0, MAX_FACTOR)?;
        above_up_to("throughput_cap_factor", self.throughput_cap_factor, 0.0, MAX_FACTOR)?;
        within("loss_low", self.loss_low, 0.0, 1.0)?;
        within("loss_high", self.loss_high, 0.0, 1.0)?;
        not_below("loss_high", self.loss_high, "loss_low", self.loss_low)?;
        within("loss_min_packets", self.loss_min_packets, 1, MAX_SAMPLES as u64)?;
        within("loss_increase_factor", self.loss_increase_factor, 1.0, MAX_FACTOR)?;
        above_up_to("pacing_factor", self.pacing_factor, 0.0, MAX_FACTOR)?;
        for (i, &p) in self.initial_probes.iter().enumerate() {
            above_up_to(&format!("initial_probes[{i}]"), p, 0.0, MAX_FACTOR)?;
        }
        above_up_to("further_probe_factor", self.further_probe_factor, 0.0, MAX_FACTOR)?;
        within("further_probe_threshold", self.further_probe_threshold, 0.0, 1.0)?;
        within("probe_min_packets", self.probe_min_packets, 1, MAX_SAMPLES as u32)?;
        within("probe_min_received_share", self.probe_min_received_share, 0.0, 1.0)?;
        above_up_to("probe_max_valid_ratio", self.probe_max_valid_ratio, 0.0, MAX_FACTOR)?;
        above_up_to("probe_unsaturated_ratio", self.probe_unsaturated_ratio, 0.0, 1.0)?;
        above_up_to("probe_target_utilization", self.probe_target_utilization, 0.0, 1.0)?;
        within("probe_drop_throughput_fraction", self.probe_drop_throughput_fraction, 0.0, 1.0)?;
        within("rtt_min_packets", self.rtt_min_packets, 0, MAX_SAMPLES as u32)?;
        Ok(())
    }
}

/// Reports whose largest RTT the delay-based part averages (goog_cc `kMaxFeedbackRttWindow`).
const FEEDBACK_RTT_WINDOW: usize = 32;

impl GccConfig {
    /// The draft's Kalman variant: the §5.3 filter and the §5.4 threshold gains.
    pub fn kalman() -> GccConfig {
        GccConfig { estimator: DelayEstimator::Kalman, k_up: 0.01, k_down: 0.00018, ..GccConfig::default() }
    }

    /// The GCC port of the Zhuge artifact (transys-project/zhuge, ns-3.34-diff/src/bitrate-ctrl/
    /// model/congestion-control/: `gcc-controller.cc`, `sender-based-controller.cc`; fed by
    /// `packet-sender-udp.cc` `PacketSenderUdp::OnSocketRecv_sender`), which the Zhuge paper's
    /// evaluation ran, as far as its rules differ from libwebrtc's in constants or switches here.
    /// The same as [`GccConfig::default`] (the artifact's values are libwebrtc's of its time):
    /// the trendline (`OveruseEstimatorUpdate`: window 20, smoothing 0.9, gain 4; its Kalman
    /// code is commented out), the detector and threshold (`OveruseDetectorDetect`,
    /// `UpdateThreshold`: 10 ms, k_up 0.0087, k_down 0.039, 15 ms, [6, 600] ms), beta 0.85 and
    /// 8 %/s (`kDefaultBackoffFactor`, `MultiplicativeRateIncrease`), the link-capacity estimate
    /// (`UpdateMaxBitRateEstimate`: 0.05, [0.4, 2.5], ±3 deviations), 1.5 x incoming + 10 kbit/s
    /// (`ClampBitrate`), the reduce interval clamp(RTT, 10, 200 ms) and half the rate
    /// (`TimeToReduceFurther`). Differing:
    /// - `throughput_window` 1 s (`SenderBasedController::getCurrentRecvRate`: arrivals of the
    ///   last 1 000 000 us), `throughput_counts_lost`, `throughput_capped_by_rate`,
    ///   `throughput_cap_lowers` (see each field).
    /// - `backoff_extra` 0 (`GccController::ChangeBitrate` 'D': `beta_ * incoming_bitrate_bps +
    ///   0.5`, no subtracted term).
    /// - `response_time_factor` 1 (`GetNearMaxIncreaseRateBps`: `in_experiment_` is false, so
    ///   the response time is rtt + 100 ms, not twice it).
    /// - `initial_probes` empty (no probe controller in the artifact: it starts at its minimum
    ///   and increases).
    /// - `loss_based` false, `aimd_once_per_rtt` true, `rtt_min_packets` 15 (see each field).
    /// - Its grouping (`packet-sender-udp.cc` `PacketSenderUdp::OnSocketRecv_sender`):
    ///   `group_mean_times` with `burst_time` 10 ms (`(TxTime - m_groupstart_TxTime) > 10000`)
    ///   and `group_max_span` 800 ms (`20 * m_interval * 1000` us at its 40 ms frame interval),
    ///   `update_per_group` (see each field and `inter_arrival.rs`).
    /// - `stream_timeout` an hour: the artifact never restarts its grouping or detector (no
    ///   `kStreamTimeOut`); an hour is longer than any of its runs.
    ///
    /// Not taken (rules, not constants): its 5 s initialisation and start at the minimum rate (the
    /// scenario's start rate applies), and the first group's `processFeedback`, which only
    /// initialises (`m_lastTimeCalcValid`); its receive rate kept while under a second of
    /// history; its record history's 500 ms limit (`m_historyLengthUs`, which the 15 newest
    /// records of 10 ms groups stay within); the trendline's slope set to 0, not kept, when every
    /// point of the window has one arrival millisecond; its 16-bit packet ids (`IPIDCounter %
    /// 65536`), whose wrap leaves one record in 65 536 packets without bytes.
    pub fn artifact() -> GccConfig {
        GccConfig {
            throughput_window: Duration::from_secs(1),
            throughput_counts_lost: true,
            throughput_capped_by_rate: true,
            throughput_cap_lowers: true,
            backoff_extra: Bitrate::ZERO,
            response_time_factor: 1.0,
            initial_probes: vec![],
            loss_based: false,
            aimd_once_per_rtt: true,
            rtt_min_packets: 15,
            group_mean_times: true,
            burst_time: Duration::from_millis(10),
            group_max_span: Duration::from_millis(800),
            update_per_group: true,
            stream_timeout: Duration::from_secs(3600),
            ..GccConfig::default()
        }
    }

    /// The preset a scenario's `cc_params.gcc.variant` names: `"libwebrtc"` ([`GccConfig::default`])
    /// or `"artifact"` ([`GccConfig::artifact`]).
    pub fn variant(name: &str) -> Result<GccConfig, String> {
        match name.trim() {
            "libwebrtc" => Ok(GccConfig::default()),
            "artifact" => Ok(GccConfig::artifact()),
            other => Err(format!("variant: got {other:?}, expected \"libwebrtc\" or \"artifact\"")),
        }
    }

    /// Builds the controller once its `validate` accepts the constants: a caller that
    /// set fields by hand (skipping the scenario's checks) gets the error naming the key here, not
    /// a panic or a stuck run later.
    pub fn build(&self) -> Result<Gcc, String> {
        self.validate()?;
        let start = self.start_rate.clamp(self.min_rate, self.max_rate).as_bps_f64();
        Ok(Gcc {
            cfg: self.clone(),
            inter_arrival: InterArrival::default(),
            mean_groups: MeanGroups::default(),
            trend: Trendline::default(),
            kalman: Kalman::new(self),
            detector: Detector::new(self),
            aimd: Aimd::new(self, start),
            loss: LossBased::new(start),
            prober: Prober::new(self, start),
            arrivals: VecDeque::new(),
            arrival_bytes: 0,
            feedback_rtts: VecDeque::with_capacity(FEEDBACK_RTT_WINDOW + 1),
            last_feedback: None,
            sorted: Vec::new(),
            packet_rtts: VecDeque::new(),
            last_aimd_update: None,
            pending: Vec::new(),
            sent_log: VecDeque::new(),
            last_record_seq: None,
            pacing_memo: PacingMemo::new(),
        })
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

/// The GCC controller.
#[derive(Clone, Debug)]
pub struct Gcc {
    cfg: GccConfig,
    inter_arrival: InterArrival,
    /// The artifact's grouping (`group_mean_times`).
    mean_groups: MeanGroups,
    trend: Trendline,
    kalman: Kalman,
    detector: Detector,
    aimd: Aimd,
    loss: LossBased,
    prober: Prober,
    /// `(arrival, bytes)` of received packets within the throughput window.
    arrivals: VecDeque<(Time, u64)>,
    /// The bytes of `arrivals`, kept as they come and go (summing the window at every report
    /// cost GCC+Zhuge, with a report per millisecond, thousands of additions each).
    arrival_bytes: u64,
    /// Largest RTT of each of the last reports, s.
    feedback_rtts: VecDeque<f64>,
    /// When the last report with a received packet came.
    last_feedback: Option<Time>,
    /// Scratch: `(arrival, send, bytes)` of a report's received packets, sorted by arrival.
    sorted: Vec<(Time, Time, u64)>,
    /// `now - send time` of the last `rtt_min_packets` received packets, s (when that is > 0).
    packet_rtts: VecDeque<f64>,
    /// When AIMD last ran (`aimd_once_per_rtt`).
    last_aimd_update: Option<Time>,
    /// `(send time, bytes)` of the packets reported received since the last record
    /// (`update_per_group` without `throughput_counts_lost`).
    pending: Vec<(Time, u64)>,
    /// `(sequence, send time, bytes)` of the packets sent since the last record, at most a
    /// throughput window old (`update_per_group` with `throughput_counts_lost`: the artifact's
    /// `m_PacketTransitHistory`).
    sent_log: VecDeque<(u64, Time, u64)>,
    /// The sequence number of the last record (`m_lastRecvSequence`).
    last_record_seq: Option<u64>,
    /// [`RateController::pacing_rate`] outside probes, by the rate it is worked out from.
    pacing_memo: PacingMemo,
}

/// The pacing rate outside probes as last worked out, with the bits of the (unclamped) rate it
/// came from: the sender reads it after every packet it sends, and that rate changes only with
/// feedback. Atomics only because a controller must be `Sync` (the loads and stores are plain
/// moves); the rate is stored before its key, so a reader that finds the key finds its rate.
#[derive(Debug)]
struct PacingMemo {
    key: AtomicU64,
    pacing_bps: AtomicU64,
}

impl PacingMemo {
    /// Matches no rate (all ones is a NaN no arithmetic produces).
    const NONE: u64 = u64::MAX;

    fn new() -> PacingMemo {
        PacingMemo { key: AtomicU64::new(Self::NONE), pacing_bps: AtomicU64::new(0) }
    }

    /// The pacing rate of `rate`, worked out by `f` unless remembered.
    #[inline]
    fn get(&self, rate: f64, f: impl FnOnce() -> Bitrate) -> Bitrate {
        let key = rate.to_bits();
        if key != Self::NONE && self.key.load(Ordering::Acquire) == key {
            return Bitrate(self.pacing_bps.load(Ordering::Relaxed));
        }
        let pacing = f();
        self.pacing_bps.store(pacing.as_bps(), Ordering::Relaxed);
        self.key.store(key, Ordering::Release);
        pacing
    }
}

impl Clone for PacingMemo {
    fn clone(&self) -> PacingMemo {
        PacingMemo::new()
    }
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

    /// The loss-based rate (the target before the min/max clamp).
    pub fn loss_based_rate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.loss.current)
    }

    /// The link-capacity estimate AIMD keeps (None: far from any known capacity).
    pub fn link_capacity(&self) -> Option<Bitrate> {
        self.aimd.capacity.estimate_bps().map(Bitrate::from_bps_f64)
    }

    fn target_bps(&self) -> f64 {
        self.clamp_rate(self.unclamped_bps())
    }

    /// The rate the target comes from: the loss-based one, or AIMD's.
    fn unclamped_bps(&self) -> f64 {
        if self.cfg.loss_based {
            self.loss.current
        } else {
            self.aimd.rate
        }
    }

    fn clamp_rate(&self, rate: f64) -> f64 {
        rate.clamp(self.cfg.min_rate.as_bps_f64(), self.cfg.max_rate.as_bps_f64())
    }

    /// Receive rate over the throughput window, bit/s (None until half a window arrived).
    fn throughput(&self) -> Option<f64> {
        let (first, last) = (self.arrivals.front()?.0, self.arrivals.back()?.0);
        let span = (last - first).as_secs_f64();
        if span < 0.5 * self.cfg.throughput_window.as_secs_f64() {
            return None;
        }
        // Every arrival but the first: the window starts at the first one's arrival.
        let bytes = self.arrival_bytes - self.arrivals.front()?.1;
        Some(bytes as f64 * 8.0 / span)
    }

    /// Step 1: the RTTs of goog_cc's feedback-only mode. Returns the report's minimum RTT (zero when
    /// nothing reads it), None when no packet arrived.
    fn update_rtt(&mut self, now: Time, report: &FeedbackReport) -> Option<Duration> {
        if self.cfg.rtt_min_packets != 0 && !self.cfg.loss_based {
            // Neither of the report's RTTs is read (the largest feeds AIMD only when
            // `rtt_min_packets` is 0, the smallest only the loss-based part): only whether a
            // packet arrived. The artifact's GCC ran both passes over each report for nothing.
            report.packets.iter().find(|p| p.arrival.is_some())?;
            if !self.cfg.update_per_group {
                for p in report.packets.iter().filter(|p| p.arrival.is_some()) {
                    self.record_rtt(now - p.sent.send_time);
                }
            }
            return Some(Duration::ZERO);
        }
        let max_arrival = report.packets.iter().filter_map(|p| p.arrival).max()?;
        let (mut max_rtt, mut min_rtt) = (Duration::ZERO, Duration::MAX);
        for p in &report.packets {
            let Some(arrival) = p.arrival else { continue };
            let feedback_rtt = now - p.sent.send_time;
            max_rtt = max_rtt.max(feedback_rtt);
            min_rtt = min_rtt.min(feedback_rtt - (max_arrival - arrival));
        }
        self.feedback_rtts.push_back(max_rtt.as_secs_f64());
        if self.feedback_rtts.len() > FEEDBACK_RTT_WINDOW {
            self.feedback_rtts.pop_front();
        }
        if self.cfg.rtt_min_packets == 0 {
            self.aimd.rtt = self.feedback_rtts.iter().sum::<f64>() / self.feedback_rtts.len() as f64;
        } else if !self.cfg.update_per_group {
            for p in report.packets.iter().filter(|p| p.arrival.is_some()) {
                self.record_rtt(now - p.sent.send_time);
            }
        }
        Some(min_rtt)
    }

    /// The artifact's getCurrentRTT (`rtt_min_packets` > 0): the smallest RTT among the newest
    /// records.
    fn record_rtt(&mut self, rtt: Duration) {
        let n = self.cfg.rtt_min_packets as usize;
        if n == 0 {
            return;
        }
        self.packet_rtts.push_back(rtt.as_secs_f64());
        if self.packet_rtts.len() > n {
            self.packet_rtts.pop_front();
        }
        self.aimd.rtt = self.packet_rtts.iter().copied().fold(f64::INFINITY, f64::min);
    }

    /// A feedback gap over `stream_timeout` restarts the grouping, the filter and the detector.
    fn restart_after_gap(&mut self, now: Time) {
        if self.last_feedback.is_some_and(|t| now - t > self.cfg.stream_timeout) {
            self.inter_arrival.reset();
            self.mean_groups = MeanGroups::default();
            self.trend = Trendline::default();
            self.kalman = Kalman::new(&self.cfg);
            self.detector = Detector::new(&self.cfg);
        }
        self.last_feedback = Some(now);
    }

    /// [`Prober::on_packet_sent`] while a probe cluster is sent (out of line: rare).
    #[inline(never)]
    fn probe_packet_sent(&mut self, packet: &SentPacket) {
        self.prober.on_packet_sent(&self.cfg, packet);
    }

    /// Drops the sent log's entries older than the throughput window at `now` (out of line:
    /// a packet mostly finds none).
    #[inline(never)]
    fn drop_old_sent(&mut self, now: Time) {
        while self.sent_log.front().is_some_and(|&(_, t, _)| now - t >= self.cfg.throughput_window) {
            self.sent_log.pop_front();
        }
    }

    /// One received packet into the grouping (libwebrtc's or the artifact's). (Inlined into the
    /// per-packet loops of the feedback.)
    #[inline]
    fn group(&mut self, send: Time, arrival: Time) -> Option<GroupDelta> {
        if self.cfg.group_mean_times {
            self.mean_groups.on_packet(&self.cfg, send, arrival)
        } else {
            self.inter_arrival.on_packet(&self.cfg, send, arrival)
        }
    }

    /// One group sample through the filter and the detector.
    fn on_sample(&mut self, g: GroupDelta) {
        let d_ms = g.arrival_delta_ms - g.send_delta_ms;
        let trend = match self.cfg.estimator {
            DelayEstimator::Trendline => self.trend.update(&self.cfg, d_ms, g.at_ms),
            DelayEstimator::Kalman => self.kalman.update(&self.cfg, d_ms, g.arrival_delta_ms),
        };
        self.detector.detect(&self.cfg, trend, g.send_delta_ms, g.at_ms);
    }

    /// Step 3: grouping, filter, detector over the report's packets in arrival order.
    fn detect(&mut self, now: Time, report: &FeedbackReport) {
        self.restart_after_gap(now);
        self.sorted.clear();
        self.sorted.extend(
            report.packets.iter().filter_map(|p| p.arrival.map(|a| (a, p.sent.send_time, p.sent.size.0))),
        );
        self.sorted.sort_by_key(|x| x.0);
        for i in 0..self.sorted.len() {
            let (arrival, send, _) = self.sorted[i];
            if let Some(g) = self.group(send, arrival) {
                self.on_sample(g);
            }
        }
    }

    /// Adds `bytes` received at `at` to the receive-rate window and drops what left it.
    fn push_arrival(&mut self, at: Time, bytes: u64) {
        self.arrivals.push_back((at, bytes));
        self.arrival_bytes += bytes;
        let newest = self.arrivals.back().map_or(at, |a| a.0);
        while let Some(&(t, size)) = self.arrivals.front() {
            if newest - t <= self.cfg.throughput_window {
                break;
            }
            self.arrivals.pop_front();
            self.arrival_bytes -= size;
        }
    }

    /// `update_per_group`: the artifact's order. Each report's packets in report (sequence)
    /// order, as `OnSocketRecv_sender` walks `recvtime_hist`; a packet that closes a group is
    /// recorded (receive rate, RTT), its sample goes through the filter and the detector, and
    /// AIMD may run (`GccController::processFeedback`). The record's bytes: with
    /// `throughput_counts_lost` every packet *sent* since the previous record (up to and with
    /// this one, sent within the last second: `intvl_pseudo_size` over the sender's
    /// `m_PacketTransitHistory`), whether or not a report named it; without, the received ones
    /// reported since.
    fn on_feedback_per_group(&mut self, now: Time, report: &FeedbackReport) {
        let min_rtt = self.update_rtt(now, report);
        if self.cfg.loss_based {
            let lost = report.packets.iter().filter(|p| p.arrival.is_none()).count() as u64;
            let rtt = min_rtt.unwrap_or(Duration::ZERO);
            self.loss.on_feedback(&self.cfg, lost, report.packets.len() as u64, rtt, now);
        }
        if min_rtt.is_some() {
            self.restart_after_gap(now);
        }
        let counts_lost = self.cfg.throughput_counts_lost;
        for p in &report.packets {
            let Some(arrival) = p.arrival else { continue };
            if !counts_lost {
                self.pending.push((p.sent.send_time, p.sent.size.0));
            }
            let Some(g) = self.group(p.sent.send_time, arrival) else { continue };
            // Only packets sent within the last second count (the artifact's literal 1 s, the
            // same second as its receive-rate window).
            let window = self.cfg.throughput_window;
            let bytes: u64 = if counts_lost {
                let (seq, last) = (p.sent.seq, self.last_record_seq);
                let mut sum = 0;
                while let Some(&(s, sent, b)) = self.sent_log.front().filter(|e| e.0 <= seq) {
                    if last.is_none_or(|l| s > l) && now - sent < window {
                        sum += b;
                    }
                    self.sent_log.pop_front();
                }
                sum
            } else {
                self.pending.iter().filter(|&&(sent, _)| now - sent < window).map(|&(_, b)| b).sum()
            };
            self.pending.clear();
            self.last_record_seq = Some(p.sent.seq);
            self.push_arrival(arrival, bytes);
            self.record_rtt(now - p.sent.send_time);
            self.on_sample(g);
            if self.update_delay_based(now, None) && self.cfg.loss_based {
                self.loss.on_delay_based(&self.cfg, self.aimd.rate);
            }
        }
        if let Some(p) = self.prober.on_feedback(&self.cfg, report) {
            if self.update_delay_based(now, Some(p)) && self.cfg.loss_based {
                self.loss.on_delay_based(&self.cfg, self.aimd.rate);
            }
        }
        self.prober.on_estimate(&self.cfg, self.target_bps(), now);
    }

    /// Step 4: libwebrtc's `DelayBasedBwe::MaybeUpdateEstimate`; true when the estimate updated.
    fn update_delay_based(&mut self, now: Time, probe: Option<f64>) -> bool {
        let cfg = &self.cfg;
        let acked =
            self.throughput()
                .map(|tp| if cfg.throughput_capped_by_rate { tp.min(self.aimd.rate) } else { tp });
        if cfg.aimd_once_per_rtt && probe.is_none() {
            // The artifact's processFeedback: AIMD runs once the clamped RTT has passed since
            // its last run, whatever the verdict; sooner only on over-use when
            // TimeToReduceFurther allows.
            let due = self.last_aimd_update.is_none_or(|t| now - t > self.aimd.reduce_interval(cfg));
            let overusing = self.detector.usage == Usage::Overusing;
            let reduce = overusing && acked.is_some_and(|tp| self.aimd.time_to_reduce_further(cfg, now, tp));
            if !due && !reduce {
                return false;
            }
            self.last_aimd_update = Some(now);
            if overusing && acked.is_none() {
                let half = self.aimd.rate / 2.0;
                self.aimd.set_estimate(cfg, half, now);
                return true;
            }
            self.aimd.update(cfg, self.detector.usage, acked, now);
            return true;
        }
        if self.detector.usage == Usage::Overusing {
            return match acked {
                Some(tp) if self.aimd.time_to_reduce_further(cfg, now, tp) => {
                    self.aimd.update(cfg, Usage::Overusing, Some(tp), now);
                    true
                }
                Some(_) => false,
                None => {
                    // Over-use before any throughput: halve (at most once per clamped RTT, but
                    // libwebrtc's test of half the rate always passes here).
                    let half = self.aimd.rate / 2.0;
                    self.aimd.set_estimate(cfg, half, now);
                    true
                }
            };
        }
        if let Some(mut p) = probe {
            if let Some(tp) = acked {
                p = p.max(self.aimd.rate.min(tp * cfg.probe_drop_throughput_fraction));
            }
            self.aimd.set_estimate(cfg, p, now);
            self.loss.set_send_bitrate(cfg, self.aimd.rate);
            return true;
        }
        self.aimd.update(cfg, self.detector.usage, acked, now);
        true
    }
}

impl RateController for Gcc {
    fn name(&self) -> &'static str {
        "gcc"
    }

    fn on_packet_sent(&mut self, now: Time, packet: &SentPacket) {
        // The usual path (no probe being sent, nothing in the log to drop) kept lean, the rest
        // out of line: this runs at every packet, and the whole body's register saves cost as
        // much as the work.
        if self.prober.is_sending() {
            self.probe_packet_sent(packet);
        }
        if self.cfg.update_per_group && self.cfg.throughput_counts_lost {
            // Older packets can never count in a record (it takes the last second's): dropped,
            // which also bounds the log when no group closes.
            if self.sent_log.front().is_some_and(|&(_, t, _)| now - t >= self.cfg.throughput_window) {
                self.drop_old_sent(now);
            }
            self.sent_log.push_back((packet.seq, packet.send_time, packet.size.0));
        }
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        if report.packets.is_empty() {
            return;
        }
        if self.cfg.update_per_group {
            self.on_feedback_per_group(now, report);
            return;
        }
        let min_rtt = self.update_rtt(now, report);
        let lost = report.packets.iter().filter(|p| p.arrival.is_none()).count() as u64;
        if self.cfg.loss_based {
            self.loss.on_feedback(
                &self.cfg,
                lost,
                report.packets.len() as u64,
                min_rtt.unwrap_or(Duration::ZERO),
                now,
            );
        }
        if min_rtt.is_none() {
            return; // all lost: no delay information (libwebrtc: "very late feedback")
        }
        self.detect(now, report);
        for &(arrival, _, size) in &self.sorted {
            self.arrivals.push_back((arrival, size));
            self.arrival_bytes += size;
        }
        if self.cfg.throughput_counts_lost && lost > 0 {
            // The artifact gives a recorded packet the bytes of every packet sent since the
            // previous record: the report's lost packets count with its newest arrival.
            let lost_bytes: u64 =
                report.packets.iter().filter(|p| p.arrival.is_none()).map(|p| p.sent.size.0).sum();
            if let Some(last) = self.arrivals.back_mut() {
                last.1 += lost_bytes;
                self.arrival_bytes += lost_bytes;
            }
        }
        if let Some(newest) = self.arrivals.back().map(|a| a.0) {
            while let Some(&(at, size)) = self.arrivals.front() {
                if newest - at <= self.cfg.throughput_window {
                    break;
                }
                self.arrivals.pop_front();
                self.arrival_bytes -= size;
            }
        }
        let probe = self.prober.on_feedback(&self.cfg, report);
        if self.update_delay_based(now, probe) && self.cfg.loss_based {
            self.loss.on_delay_based(&self.cfg, self.aimd.rate);
        }
        self.prober.on_estimate(&self.cfg, self.target_bps(), now);
    }

    fn target_bitrate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.target_bps())
    }

    fn pacing_rate(&self) -> Bitrate {
        match self.prober.active() {
            Some(p) => p.target,
            None => {
                let rate = self.unclamped_bps();
                self.pacing_memo
                    .get(rate, || Bitrate::from_bps_f64(self.clamp_rate(rate) * self.cfg.pacing_factor))
            }
        }
    }

    fn wants_padding(&self, _now: Time) -> bool {
        self.prober.active().is_some()
    }

    /// Without initial probes no probe ever starts (further probes follow only initial ones),
    /// so there is never a cluster to pad.
    fn never_pads(&self) -> bool {
        self.cfg.initial_probes.is_empty()
    }

    /// A send changes the pacing rate only by moving a probe on; without initial probes there is
    /// none (see `never_pads`), and the rate changes with feedback alone.
    fn pacing_rate_ignores_sends(&self) -> bool {
        self.cfg.initial_probes.is_empty()
    }

    /// GCC has no timer.
    fn pacing_rate_ignores_timeouts(&self) -> bool {
        true
    }

    /// GCC has no timer.
    fn has_no_timer(&self) -> bool {
        true
    }

    /// GCC paces at its rate and has no window.
    fn never_blocks_sends(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
