//! SCReAM v1: Self-Clocked Rate Adaptation for Multimedia (RFC 8298).
//!
//! Two loops, as in RFC 8298 §4.1:
//! - Network congestion control (§4.1.2): a LEDBAT-like congestion window. The queueing delay is
//!   the one-way delay above its base (minimum per minute over ten minutes, §4.1.2.1); its trend
//!   is the lag-1 autocorrelation of the last 20 normalised samples (§4.1.2.2). The window grows by
//!   the bytes acked while the trend is low and no congestion was seen for
//!   T_RESUME_FAST_INCREASE ("fast increase"), else by GAIN x off_target x MSS / cwnd per acked
//!   byte; it shrinks by BETA_LOSS on loss and BETA_ECN on CE, at most once per RTT (§4.1.2.4), and
//!   never exceeds 1.1 x the recent maximum bytes in flight. Packets leave while the send window
//!   (§4.1.2.5) allows; the pacing rate is max(RATE_PACE_MIN, cwnd / s_rtt) (§4.1.2.6).
//! - Media rate control (§4.1.3), every RATE_ADJUST_INTERVAL: x BETA_R on loss; in fast increase a
//!   ramp of at most RAMP_UP_SPEED, damped near the last maximum; otherwise the rate follows what
//!   the window carries per RTT, less PRE_CONGESTION_GUARD x trend and the RTP queue; scaled by
//!   TARGET_RATE_SCALE_RTP_QDELAY while the RTP queue delay exceeds RTP_QDELAY_TH.
//!
//! Held against Ericsson's code of the RFC's time (github.com/EricssonResearch/scream,
//! `code/ScreamTx.cpp` at b40bf39, 2018; the later `ScreamV1Tx.cpp` was removed in 2024 and had
//! grown L4S and v2 parts): the window update follows its `updateCwnd` - growth only while the
//! window is used (bytes in flight x 1.2, x 1.5 in fast increase, + the acked bytes above it), the
//! acked bytes per update limited to 1.25 x the media rate, a decrease by GAIN_DOWN (2) x off_target
//! while the delay is above target (at most a quarter of the window), and a delay trend above
//! QDELAY_TREND_LO or a delay decrease counting as congestion for T_RESUME_FAST_INCREASE.
//! Deliberate differences, documented choices:
//! - The media rate control is RFC 8298 §4.1.3 (what the window carries per RTT, ramped at
//!   RAMP_UP_SPEED, TX_QUEUE_SIZE_FACTOR 1.0), not the reference's `updateTargetBitrate`, which
//!   follows the measured media rate x (1 + 0.05 x min(1, 50 kbit/s / target)), damps near the last
//!   known maximum (scl_i), subtracts 0.2 x the averaged RTP queue, stops growing with more than
//!   12 kbit of RTP queue, and scales by 0.9 on loss (0.95 on CE) at once instead of per interval.
//! - The window cap is 1.1 x the recent maximum in flight (RFC); the reference blends a high and a
//!   low in-flight history by the delay trend.
//! - Pacing is always on at max(RATE_PACE_MIN, cwnd / s_rtt) (RFC §4.1.2.6); the reference paces
//!   only once the averaged queue delay exceeds 2 % of the target, at 1.5 x that rate.
//! - The reference's base-delay restart after 20 s of a high delay floor and its RTP-queue "refresh"
//!   are left out, as in scream2.rs; feedback overdue for 1 s restarts the window at MIN_CWND.
//!
//! The competing-flow rule (§4.1.2.3, opt-in): while the loss event rate exceeds 0.002 and the normalised
//! queueing delay stays high with low variance (a standing queue kept by loss-based flows), the
//! delay target climbs from QDELAY_TARGET_LO towards QDELAY_TARGET_HI, and decays back otherwise.

use crate::base_delay::BaseDelay;
use crate::inflight::InFlight;
use crate::{FeedbackReport, RateController, SentPacket};
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// SCReAM v1's constants (RFC 8298 §4.3) and the application's rate range.
#[derive(Clone, Debug, PartialEq)]
pub struct ScreamConfig {
    /// TARGET_BITRATE_MIN.
    pub min_rate: Bitrate,
    /// TARGET_BITRATE_MAX.
    pub max_rate: Bitrate,
    /// Media rate at start.
    pub start_rate: Bitrate,
    /// QDELAY_TARGET_LO (0.1 s).
    pub qdelay_target_lo: Duration,
    /// QDELAY_TARGET_HI (0.4 s).
    pub qdelay_target_hi: Duration,
    /// QDELAY_WEIGHT: smoothing of the normalised queueing delay (0.1).
    pub qdelay_weight: f64,
    /// QDELAY_TREND_LO: fast increase only below this trend (0.2).
    pub qdelay_trend_lo: f64,
    /// T_RESUME_FAST_INCREASE (5 s).
    pub t_resume_fast_increase: Duration,
    /// MIN_CWND (3000 B).
    pub min_cwnd: Bytes,
    /// MAX_BYTES_IN_FLIGHT_HEAD_ROOM (1.1).
    pub max_bytes_in_flight_head_room: f64,
    /// GAIN of the window increase (1.0; reference kGainUp).
    pub gain: f64,
    /// Gain of the window decrease while the delay is above target (reference ScreamTx kGainDown
    /// 2.0); a decrease takes at most a quarter of the window.
    pub gain_down: f64,
    /// The window grows only while bytes in flight x this + the newly acked bytes exceed it
    /// (congestion-window validation; reference updateCwnd 1.2, 1.5 in fast increase).
    pub cwnd_validation_margin: f64,
    /// The same margin in fast increase (reference 1.5).
    pub fast_increase_validation_margin: f64,
    /// BETA_LOSS (0.8).
    pub beta_loss: f64,
    /// BETA_ECN (0.9).
    pub beta_ecn: f64,
    /// BETA_R: media rate reduction on loss (0.9).
    pub beta_r: f64,
    /// MSS (1000 B).
    pub mss: Bytes,
    /// RATE_ADJUST_INTERVAL (0.2 s).
    pub rate_adjust_interval: Duration,
    /// RAMP_UP_SPEED, per second (200 kbit/s).
    pub ramp_up_speed: Bitrate,
    /// PRE_CONGESTION_GUARD (0.1).
    pub pre_congestion_guard: f64,
    /// TX_QUEUE_SIZE_FACTOR (1.0).
    pub tx_queue_size_factor: f64,
    /// RTP_QDELAY_TH (0.02 s).
    pub rtp_qdelay_th: Duration,
    /// TARGET_RATE_SCALE_RTP_QDELAY (0.95).
    pub target_rate_scale_rtp_qdelay: f64,
    /// RATE_PACE_MIN (50 kbit/s).
    pub rate_pace_min: Bitrate,
    /// Packets without feedback for this long are given up (and the window restarts).
    pub feedback_timeout: Duration,
    /// Competing-flows compensation (§4.1.2.3): raise the delay target towards
    /// QDELAY_TARGET_HI against loss-based flows. Off by default (the reference implementation
    /// gates it too): a lone flow filling a drop-tail queue looks the same and would raise it.
    pub compete_with_loss_based: bool,
}

impl Default for ScreamConfig {
    fn default() -> Self {
        ScreamConfig {
            min_rate: Bitrate::kbps(150),
            max_rate: Bitrate::kbps(1500),
            start_rate: Bitrate::kbps(150),
            qdelay_target_lo: Duration::from_millis(100),
            qdelay_target_hi: Duration::from_millis(400),
            qdelay_weight: 0.1,
            qdelay_trend_lo: 0.2,
            t_resume_fast_increase: Duration::from_secs(5),
            min_cwnd: Bytes(3000),
            max_bytes_in_flight_head_room: 1.1,
            gain: 1.0,
            gain_down: 2.0,
            cwnd_validation_margin: 1.2,
            fast_increase_validation_margin: 1.5,
            beta_loss: 0.8,
            beta_ecn: 0.9,
            beta_r: 0.9,
            mss: Bytes(1000),
            rate_adjust_interval: Duration::from_millis(200),
            ramp_up_speed: Bitrate::kbps(200),
            pre_congestion_guard: 0.1,
            tx_queue_size_factor: 1.0,
            rtp_qdelay_th: Duration::from_millis(20),
            target_rate_scale_rtp_qdelay: 0.95,
            rate_pace_min: Bitrate::kbps(50),
            feedback_timeout: Duration::from_secs(1),
            compete_with_loss_based: false,
        }
    }
}

crate::tunable!(ScreamConfig {
    min_rate,
    max_rate,
    start_rate,
    qdelay_target_lo,
    qdelay_target_hi,
    qdelay_weight,
    qdelay_trend_lo,
    t_resume_fast_increase,
    min_cwnd,
    max_bytes_in_flight_head_room,
    gain,
    gain_down,
    cwnd_validation_margin,
    fast_increase_validation_margin,
    beta_loss,
    beta_ecn,
    beta_r,
    mss,
    rate_adjust_interval,
    ramp_up_speed,
    pre_congestion_guard,
    tx_queue_size_factor,
    rtp_qdelay_th,
    target_rate_scale_rtp_qdelay,
    rate_pace_min,
    feedback_timeout,
    compete_with_loss_based,
});

impl ScreamConfig {
    /// Checks each constant's range and their relations (min_rate <= start_rate <= max_rate,
    /// QDELAY_TARGET_LO <= QDELAY_TARGET_HI, the betas in (0, 1], intervals above zero); the
    /// error names the key.
    pub fn validate(&self) -> Result<(), String> {
        use crate::tunable::bounds::{MAX_FACTOR, MAX_INTERVAL, MAX_RATE, MAX_SIZE, MIN_TIMER};
        use crate::tunable::range::{above_up_to, not_below, within};
        let zero = Duration::ZERO;
        crate::tunable::check_rate_range(self.min_rate, self.start_rate, self.max_rate)?;
        above_up_to("qdelay_target_lo", self.qdelay_target_lo, zero, MAX_INTERVAL)?;
        within("qdelay_target_hi", self.qdelay_target_hi, zero, MAX_INTERVAL)?;
        not_below("qdelay_target_hi", self.qdelay_target_hi, "qdelay_target_lo", self.qdelay_target_lo)?;
        above_up_to("qdelay_weight", self.qdelay_weight, 0.0, 1.0)?;
        within("qdelay_trend_lo", self.qdelay_trend_lo, 0.0, 1.0)?;
        within("t_resume_fast_increase", self.t_resume_fast_increase, zero, MAX_INTERVAL)?;
        above_up_to("min_cwnd", self.min_cwnd, Bytes::ZERO, MAX_SIZE)?;
        above_up_to("max_bytes_in_flight_head_room", self.max_bytes_in_flight_head_room, 0.0, MAX_FACTOR)?;
        above_up_to("gain", self.gain, 0.0, MAX_FACTOR)?;
        above_up_to("gain_down", self.gain_down, 0.0, MAX_FACTOR)?;
        above_up_to("cwnd_validation_margin", self.cwnd_validation_margin, 0.0, MAX_FACTOR)?;
        above_up_to(
            "fast_increase_validation_margin",
            self.fast_increase_validation_margin,
            0.0,
            MAX_FACTOR,
        )?;
        for (key, beta) in
            [("beta_loss", self.beta_loss), ("beta_ecn", self.beta_ecn), ("beta_r", self.beta_r)]
        {
            above_up_to(key, beta, 0.0, 1.0)?;
        }
        within("mss", self.mss, Bytes(1), Bytes(65_535))?;
        within("rate_adjust_interval", self.rate_adjust_interval, MIN_TIMER, MAX_INTERVAL)?;
        within("ramp_up_speed", self.ramp_up_speed, Bitrate::ZERO, MAX_RATE)?;
        within("pre_congestion_guard", self.pre_congestion_guard, 0.0, 1.0)?;
        within("tx_queue_size_factor", self.tx_queue_size_factor, 0.0, MAX_FACTOR)?;
        within("rtp_qdelay_th", self.rtp_qdelay_th, zero, MAX_INTERVAL)?;
        above_up_to("target_rate_scale_rtp_qdelay", self.target_rate_scale_rtp_qdelay, 0.0, 1.0)?;
        within("rate_pace_min", self.rate_pace_min, Bitrate::ZERO, MAX_RATE)?;
        above_up_to("feedback_timeout", self.feedback_timeout, zero, MAX_INTERVAL)?;
        Ok(())
    }
}

impl ScreamConfig {
    /// Builds the controller once its `validate` accepts the constants: a caller that
    /// set fields by hand (skipping the scenario's checks) gets the error naming the key here, not
    /// a panic or a stuck run later.
    pub fn build(&self) -> Result<Scream, String> {
        self.validate()?;
        Ok(Scream {
            cfg: self.clone(),
            cwnd: self.min_cwnd.0 as f64,
            in_flight: InFlight::default(),
            base: BaseDelay::new(Duration::from_secs(60), 10),
            qdelay: 0.0,
            qdelay_fraction_avg: 0.0,
            qdelay_fraction_hist: VecDeque::with_capacity(20),
            qdelay_trend: 0.0,
            qdelay_target: self.qdelay_target_lo.as_secs_f64(),
            last_hist_update: None,
            s_rtt: None,
            last_congestion: None,
            loss_event_rate: 0.0,
            loss_in_rtt: false,
            last_rtt_tick: None,
            target: self.start_rate.clamp(self.min_rate, self.max_rate).as_bps_f64(),
            target_last_max: None,
            media_rate: 0.0,
            last_grow: None,
            last_cut: None,
            loss_since_adjust: false,
            last_adjust: None,
            acked_since_adjust: 0,
            sent_since_adjust: 0,
            rtp_queue_bytes: 0,
            rtp_queue_delay: Duration::ZERO,
            last_feedback: None,
        })
    }
}

/// The SCReAM v1 controller.
#[derive(Clone, Debug)]
pub struct Scream {
    cfg: ScreamConfig,
    /// Congestion window, bytes.
    cwnd: f64,
    in_flight: InFlight,
    base: BaseDelay,
    /// Latest queueing delay, s.
    qdelay: f64,
    qdelay_fraction_avg: f64,
    qdelay_fraction_hist: VecDeque<f64>,
    qdelay_trend: f64,
    /// Current delay target, s.
    qdelay_target: f64,
    last_hist_update: Option<Time>,
    /// Smoothed RTT, s.
    s_rtt: Option<f64>,
    last_congestion: Option<Time>,
    loss_event_rate: f64,
    loss_in_rtt: bool,
    last_rtt_tick: Option<Time>,
    /// Media target, bit/s.
    target: f64,
    target_last_max: Option<f64>,
    /// The larger of the sent and acked rates over the last rate interval, bit/s.
    media_rate: f64,
    /// When the window was last updated.
    last_grow: Option<Time>,
    /// When loss or CE last cut the window (once per RTT).
    last_cut: Option<Time>,
    loss_since_adjust: bool,
    last_adjust: Option<Time>,
    acked_since_adjust: u64,
    sent_since_adjust: u64,
    rtp_queue_bytes: u64,
    rtp_queue_delay: Duration,
    last_feedback: Option<Time>,
}

impl Scream {
    /// The congestion window.
    pub fn cwnd(&self) -> Bytes {
        Bytes(self.cwnd as u64)
    }

    /// Bytes in flight.
    pub fn bytes_in_flight(&self) -> Bytes {
        self.in_flight.bytes()
    }

    /// The queueing-delay trend, 0..1.
    pub fn qdelay_trend(&self) -> f64 {
        self.qdelay_trend
    }

    fn srtt(&self) -> f64 {
        self.s_rtt.unwrap_or(0.1).max(1e-3)
    }

    fn in_fast_increase(&self, now: Time) -> bool {
        self.qdelay_trend < self.cfg.qdelay_trend_lo
            && self.last_congestion.is_none_or(|t| now - t >= self.cfg.t_resume_fast_increase)
    }

    /// A congestion event: the window is cut at most once per smoothed RTT.
    fn on_congestion(&mut self, now: Time, beta: f64) {
        let srtt = Duration::from_secs_f64(self.srtt());
        if self.last_cut.is_some_and(|t| now - t < srtt) {
            return;
        }
        self.cwnd = (self.cwnd * beta).max(self.cfg.min_cwnd.0 as f64);
        self.last_cut = Some(now);
        self.last_congestion = Some(now);
        self.loss_in_rtt = true;
    }

    /// §4.1.2.2: normalised delay history every 50 ms and its autocorrelation trend.
    fn update_trend(&mut self, now: Time) {
        let c = &self.cfg;
        let fraction = self.qdelay / self.qdelay_target;
        self.qdelay_fraction_avg =
            (1.0 - c.qdelay_weight) * self.qdelay_fraction_avg + c.qdelay_weight * fraction;
        if self.last_hist_update.is_some_and(|t| now - t < Duration::from_millis(50)) {
            return;
        }
        self.last_hist_update = Some(now);
        if self.qdelay_fraction_hist.len() == 20 {
            self.qdelay_fraction_hist.pop_front();
        }
        self.qdelay_fraction_hist.push_back(self.qdelay_fraction_avg);
        let h = &self.qdelay_fraction_hist;
        let r0: f64 = h.iter().map(|x| x * x).sum();
        let r1: f64 = h.iter().zip(h.iter().skip(1)).map(|(a, b)| a * b).sum();
        let a = if r0 > 0.0 { r1 / r0 } else { 0.0 };
        self.qdelay_trend = (a * self.qdelay_fraction_avg).clamp(0.0, 1.0);
    }

    /// §4.1.2.3, loss side: the loss event rate per RTT moves the delay target between LO and HI.
    fn update_target(&mut self, now: Time) {
        let srtt = Duration::from_secs_f64(self.srtt());
        let last = *self.last_rtt_tick.get_or_insert(now);
        if now - last < srtt {
            return;
        }
        self.last_rtt_tick = Some(now);
        let event = if self.loss_in_rtt { 1.0 } else { 0.0 };
        self.loss_event_rate = 0.98 * self.loss_event_rate + 0.02 * event;
        self.loss_in_rtt = false;
        let (lo, hi) = (self.cfg.qdelay_target_lo.as_secs_f64(), self.cfg.qdelay_target_hi.as_secs_f64());
        // Competing loss-based flows keep the queue standing and full: losses recur while the
        // normalised delay stays high with little variation (self-inflicted queues swing).
        let h = &self.qdelay_fraction_hist;
        let n = h.len().max(1) as f64;
        let mean = h.iter().sum::<f64>() / n;
        let var = h.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let competing = self.cfg.compete_with_loss_based
            && self.loss_event_rate > 0.002
            && mean > 0.5
            && var < 0.2 * mean * mean;
        self.qdelay_target =
            if competing { (self.qdelay_target * 1.05).min(hi) } else { (self.qdelay_target * 0.99).max(lo) };
    }

    /// §4.1.2.4 as the reference's updateCwnd (ScreamTx.cpp, 2018): fast increase by the acked
    /// bytes; otherwise growth by GAIN x off_target below the target and a decrease by GAIN_DOWN x
    /// off_target above it (at most a quarter of the window, and counted as congestion); growth
    /// only while the window is used (validation margin); the window capped by the bytes in flight.
    fn grow(&mut self, now: Time, acked: u64) {
        let c = &self.cfg;
        let mss = c.mss.0 as f64;
        let dt = self.last_grow.map_or(0.001, |t| (now - t).as_secs_f64());
        self.last_grow = Some(now);
        // Acked bytes per update are limited to 1.25 x what the media rate can deliver.
        let acked_f = acked as f64;
        let limited =
            if self.media_rate > 1e5 { acked_f.min(1.25 * self.media_rate * dt / 8.0) } else { 2.0 * mss };
        let in_flight = self.in_flight.bytes().0 as f64;
        let off_target = (self.qdelay_target - self.qdelay) / self.qdelay_target;
        if self.in_fast_increase(now) {
            if in_flight * c.fast_increase_validation_margin + acked_f > self.cwnd {
                self.cwnd += limited;
            }
        } else if off_target > 0.0 {
            if in_flight * c.cwnd_validation_margin + acked_f > self.cwnd {
                self.cwnd += (c.gain * off_target * limited * mss / self.cwnd + 0.5).floor();
            }
        } else {
            let delta = (-c.gain_down * off_target * acked_f * mss / self.cwnd).min(self.cwnd / 4.0);
            self.cwnd -= delta.floor();
            self.last_congestion = Some(now);
        }
        let cap = c.max_bytes_in_flight_head_room * self.in_flight.max_recent().0 as f64;
        if cap > 5000.0 {
            self.cwnd = self.cwnd.min(cap);
        }
        self.cwnd = self.cwnd.max(c.min_cwnd.0 as f64);
        // A rising delay trend also counts as congestion: fast increase resumes only after
        // T_RESUME_FAST_INCREASE of calm.
        if self.qdelay_trend > c.qdelay_trend_lo {
            self.last_congestion = Some(now);
        }
    }

    /// §4.1.3: the media target, every RATE_ADJUST_INTERVAL.
    fn adjust_rate(&mut self, now: Time) {
        let last = *self.last_adjust.get_or_insert(now);
        let dt = (now - last).as_secs_f64();
        if dt < self.cfg.rate_adjust_interval.as_secs_f64() {
            return;
        }
        self.last_adjust = Some(now);
        self.in_flight.roll_max();
        let c = &self.cfg;
        let rate_tx = self.sent_since_adjust as f64 * 8.0 / dt;
        let rate_ack = self.acked_since_adjust as f64 * 8.0 / dt;
        self.media_rate = rate_tx.max(rate_ack);
        self.sent_since_adjust = 0;
        self.acked_since_adjust = 0;
        if self.loss_since_adjust {
            self.loss_since_adjust = false;
            self.target_last_max = Some(self.target);
            self.target *= c.beta_r;
        } else if self.in_fast_increase(now) {
            let mut increment = c.ramp_up_speed.as_bps_f64() * dt;
            // Slow down near the rate where congestion was last seen.
            if let Some(max) = self.target_last_max {
                let scl = (self.target - max) / max;
                increment *= (4.0 * scl).powi(2).clamp(0.2, 1.0);
            }
            increment *= 1.0 - (self.qdelay_trend / c.qdelay_trend_lo).min(1.0);
            self.target += increment;
        } else {
            // What the window carries per RTT, with a guard against the growing trend and less
            // what waits in the RTP queue (drained over one second).
            let window_rate = self.cwnd * 8.0 / self.srtt();
            let current = rate_tx.max(rate_ack);
            let wanted = window_rate.min(current.max(self.target) * 1.25)
                * (1.0 - c.pre_congestion_guard * self.qdelay_trend)
                - c.tx_queue_size_factor * self.rtp_queue_bytes as f64 * 8.0;
            let step = c.ramp_up_speed.as_bps_f64() * dt;
            self.target = if wanted > self.target { (self.target + step).min(wanted) } else { wanted };
        }
        if self.rtp_queue_delay > c.rtp_qdelay_th {
            self.target *= c.target_rate_scale_rtp_qdelay;
        }
        self.target = self.target.clamp(c.min_rate.as_bps_f64(), c.max_rate.as_bps_f64());
    }
}

impl RateController for Scream {
    fn name(&self) -> &'static str {
        "scream"
    }

    fn on_packet_sent(&mut self, _now: Time, packet: &SentPacket) {
        self.in_flight.on_sent(packet);
        self.sent_since_adjust += packet.size.0;
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        self.last_feedback = Some(now);
        if let Some(rtt) = report.rtt_sample(now) {
            let r = rtt.as_secs_f64();
            self.s_rtt = Some(self.s_rtt.map_or(r, |s| 0.875 * s + 0.125 * r));
        }
        for p in &report.packets {
            if let Some(owd) = p.one_way_delay() {
                self.qdelay = self.base.update(now, owd).as_secs_f64();
            }
        }
        let acked = self.in_flight.on_report(report);
        self.acked_since_adjust += acked.bytes;
        self.update_trend(now);
        if acked.loss {
            self.loss_since_adjust = true;
            self.on_congestion(now, self.cfg.beta_loss);
        } else if acked.ce_bytes > 0 {
            self.on_congestion(now, self.cfg.beta_ecn);
        } else {
            self.grow(now, acked.bytes);
        }
        self.update_target(now);
        self.adjust_rate(now);
    }

    fn on_send_queue(&mut self, _now: Time, bytes: Bytes, delay: Duration) {
        self.rtp_queue_bytes = bytes.0;
        self.rtp_queue_delay = delay;
    }

    fn handle_timeout(&mut self, now: Time) {
        // No feedback for a long time: the packets in flight are gone; restart from MIN_CWND.
        if self.in_flight.expire(now - self.cfg.feedback_timeout) {
            self.cwnd = self.cfg.min_cwnd.0 as f64;
            self.loss_since_adjust = true;
            self.last_congestion = Some(now);
        }
        self.adjust_rate(now);
    }

    fn poll_timeout(&self) -> Option<Time> {
        let expiry = self.in_flight.oldest().map(|t| t + self.cfg.feedback_timeout);
        let adjust = self.last_adjust.map(|t| t + self.cfg.rate_adjust_interval);
        [expiry, adjust].into_iter().flatten().min()
    }

    /// §4.1.2.5: send_wnd = cwnd + MSS - bytes_in_flight while the delay is on target, else
    /// cwnd - bytes_in_flight.
    fn can_send(&self, _now: Time, size: Bytes) -> bool {
        let extra = if self.qdelay <= self.qdelay_target { self.cfg.mss.0 as f64 } else { 0.0 };
        let send_wnd = self.cwnd + extra - self.in_flight.bytes().0 as f64;
        send_wnd >= size.0 as f64
    }

    fn target_bitrate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.target)
    }

    /// §4.1.2.6: max(RATE_PACE_MIN, cwnd x 8 / s_rtt).
    fn pacing_rate(&self) -> Bitrate {
        let r = self.cwnd * 8.0 / self.srtt();
        Bitrate::from_bps_f64(r.max(self.cfg.rate_pace_min.as_bps_f64()))
    }

    /// A send counts bytes in flight and sent bytes, neither of which the pacing rate reads.
    fn pacing_rate_ignores_sends(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PacketResult;

    fn report(first_seq: u64, n: u64, lost: &[u64], sent_at: Time, arrive: Duration) -> FeedbackReport {
        let packets = (first_seq..first_seq + n)
            .map(|seq| PacketResult {
                sent: SentPacket { seq, size: Bytes(1000), send_time: sent_at },
                arrival: (!lost.contains(&seq)).then_some(sent_at + arrive),
                ecn: 0,
            })
            .collect();
        FeedbackReport { packets, report_time: sent_at + arrive }
    }

    fn send(s: &mut Scream, first_seq: u64, n: u64, at: Time) {
        for seq in first_seq..first_seq + n {
            s.on_packet_sent(at, &SentPacket { seq, size: Bytes(1000), send_time: at });
        }
    }

    #[test]
    fn loss_cuts_the_window_by_beta_loss_once_per_rtt() {
        let mut s = ScreamConfig::default().build().unwrap();
        // Grow the window with clean feedback (50 ms one way, 100 ms RTT).
        let mut seq = 0;
        for i in 0..40u64 {
            let t = Time::from_millis(100 * i);
            send(&mut s, seq, 10, t);
            s.on_feedback(
                t + Duration::from_millis(100),
                &report(seq, 10, &[], t, Duration::from_millis(50)),
            );
            seq += 10;
        }
        let before = s.cwnd().0 as f64;
        assert!(before > 3000.0);
        let t = Time::from_millis(4000);
        send(&mut s, seq, 10, t);
        s.on_feedback(
            t + Duration::from_millis(100),
            &report(seq, 5, &[seq + 1], t, Duration::from_millis(50)),
        );
        let after = s.cwnd().0 as f64;
        assert!((after - 0.8 * before).abs() <= 1.0, "{before} -> {after}");
        // A second loss within the same RTT does not cut again.
        s.on_feedback(
            t + Duration::from_millis(150),
            &report(seq + 5, 5, &[seq + 6], t, Duration::from_millis(50)),
        );
        assert!((s.cwnd().0 as f64 - after).abs() <= 1.0);
        // One RTT later it does.
        let t = t + Duration::from_millis(300);
        send(&mut s, seq + 10, 10, t);
        s.on_feedback(
            t + Duration::from_millis(100),
            &report(seq + 10, 10, &[seq + 12], t, Duration::from_millis(50)),
        );
        assert!((s.cwnd().0 as f64 - 0.8 * after).abs() <= 1.0);
    }

    #[test]
    fn the_send_window_closes_at_cwnd() {
        let mut s = ScreamConfig::default().build().unwrap();
        assert!(s.can_send(Time::ZERO, Bytes(1000)));
        send(&mut s, 0, 4, Time::ZERO);
        // 4000 in flight > 3000 + 1000 - 1000.
        assert!(!s.can_send(Time::ZERO, Bytes(1000)));
        s.on_feedback(Time::from_millis(100), &report(0, 4, &[], Time::ZERO, Duration::from_millis(50)));
        assert!(s.can_send(Time::from_millis(100), Bytes(1000)));
    }

    #[test]
    fn overdue_feedback_restarts_the_window() {
        let mut s = ScreamConfig::default().build().unwrap();
        send(&mut s, 0, 3, Time::ZERO);
        assert_eq!(s.poll_timeout(), Some(Time::from_secs(1)));
        s.handle_timeout(Time::from_secs(1) + Duration(1));
        assert_eq!(s.bytes_in_flight(), Bytes::ZERO);
        assert!(s.can_send(Time::from_secs(1), Bytes(1000)));
    }

    #[test]
    fn a_delay_above_target_shrinks_the_window_by_gain_down_at_most_a_quarter() {
        let mut s = ScreamConfig::default().build().unwrap();
        s.cwnd = 20_000.0;
        s.qdelay_target = 0.1;
        s.qdelay = 0.15; // off_target = -0.5
        s.last_congestion = Some(Time::from_secs(9)); // not in fast increase
        s.grow(Time::from_secs(10), 2000);
        // 2 x 0.5 x 2000 x 1000 / 20000 = 100 B.
        assert!((s.cwnd - 19_900.0).abs() <= 1.0, "{}", s.cwnd);
        assert_eq!(s.last_congestion, Some(Time::from_secs(10)));
        // Far above target the cut stops at a quarter of the window.
        let w = s.cwnd;
        s.qdelay = 1.0;
        s.grow(Time::from_secs(11), 1_000_000);
        assert!((s.cwnd - 0.75 * w).abs() <= 1.0, "{w} -> {}", s.cwnd);
    }

    #[test]
    fn an_unused_window_does_not_grow() {
        let mut s = ScreamConfig::default().build().unwrap();
        s.cwnd = 15_000.0;
        s.qdelay_target = 0.1;
        s.qdelay = 0.01;
        s.last_congestion = Some(Time::from_secs(9)); // not in fast increase
        s.media_rate = 1e6;
        // 2000 B in flight x 1.2 + 1000 acked < 15000: application-limited, no growth.
        send(&mut s, 0, 2, Time::from_secs(10));
        s.grow(Time::from_secs(10), 1000);
        assert_eq!(s.cwnd, 15_000.0);
        // 17000 in flight x 1.2 + 1000 > 15000: the window is used and grows.
        send(&mut s, 2, 15, Time::from_secs(10));
        s.in_flight.roll_max();
        s.grow(Time::from_secs(10) + Duration::from_millis(50), 1000);
        assert!(s.cwnd > 15_000.0, "{}", s.cwnd);
    }
}
