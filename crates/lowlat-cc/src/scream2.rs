//! SCReAM v2 (draft-johansson-ccwg-rfc8298bis-screamv2), L4S-ready.
//!
//! One reference window `ref_wnd` drives everything: target rate = 8 x ref_wnd / s_rtt, pacing at
//! PACKET_PACING_HEADROOM x that, and packets leave while bytes in flight stay below
//! REF_WND_OVERHEAD x ref_wnd.
//! - Congestion reactions, at most once per min(VIRTUAL_RTT, s_rtt): loss x BETA_LOSS (a loss
//!   counts only if the lost packet left after the previous loss reduction, so at most once per
//!   RTT), classic ECN x BETA_ECN, L4S x (1 - alpha / 2), and "virtual L4S" when the averaged
//!   queueing delay exceeds half the delay target: alpha_v rises linearly from 0 at target / 2 to 1
//!   at the target. ECN and virtual back-offs are divided by s_rtt / VIRTUAL_RTT when the RTT is
//!   longer, since they may repeat every virtual RTT.
//! - Growth per acked non-CE byte: MSS / ref_wnd, scaled by min(1, s_rtt / VIRTUAL_RTT)^2, damped
//!   near the last window at congestion, with a multiplicative part (MUL_INCREASE_FACTOR x
//!   ref_wnd / MSS) phased in over POST_CONGESTION_DELAY; never beyond
//!   BYTES_IN_FLIGHT_HEAD_ROOM x the recent maximum in flight, and not while the target is at the
//!   media's maximum.
//! - RTP queue correction (reference implementation): the target is divided by 1 + f, f in
//!   [0, 0.5] integrating how far the RTP queue delay exceeds half a frame period.

use crate::base_delay::BaseDelay;
use crate::inflight::InFlight;
use crate::{FeedbackReport, RateController, SentPacket};
use lowlat_core::{Bitrate, Bytes, Duration, Time};

/// SCReAM v2's constants (draft-johansson-ccwg-rfc8298bis-screamv2, "Constants").
#[derive(Clone, Debug, PartialEq)]
pub struct ScreamV2Config {
    /// Lowest media target.
    pub min_rate: Bitrate,
    /// Highest media target.
    pub max_rate: Bitrate,
    /// Media target before the first RTT sample.
    pub start_rate: Bitrate,
    /// QDELAY_TARGET_LO (0.06 s).
    pub qdelay_target_lo: Duration,
    /// QDELAY_TARGET_HI (0.4 s), the ceiling when competing with loss-based flows.
    pub qdelay_target_hi: Duration,
    /// MIN_REF_WND (3000 B).
    pub min_ref_wnd: Bytes,
    /// BETA_LOSS (0.7).
    pub beta_loss: f64,
    /// BETA_ECN for classic ECN (0.8).
    pub beta_ecn: f64,
    /// Whether CE marks come from an L4S queue (scalable reaction) or a classic one.
    pub l4s: bool,
    /// MSS (1000 B).
    pub mss: Bytes,
    /// RATE_PACE_MIN (50 kbit/s).
    pub rate_pace_min: Bitrate,
    /// REF_WND_OVERHEAD: bytes in flight may reach this x ref_wnd (1.5).
    pub ref_wnd_overhead: f64,
    /// L4S_AVG_G: smoothing of the CE fraction alpha (1/16).
    pub l4s_avg_g: f64,
    /// QDELAY_AVG_G: smoothing of the queueing delay (1/4).
    pub qdelay_avg_g: f64,
    /// POST_CONGESTION_DELAY (4 s).
    pub post_congestion_delay: Duration,
    /// MUL_INCREASE_FACTOR (0.02).
    pub mul_increase_factor: f64,
    /// VIRTUAL_RTT (0.025 s).
    pub virtual_rtt: Duration,
    /// PACKET_PACING_HEADROOM (1.5).
    pub packet_pacing_headroom: f64,
    /// BYTES_IN_FLIGHT_HEAD_ROOM (2.0).
    pub bytes_in_flight_head_room: f64,
    /// Packets without feedback for this long are given up (and the window restarts).
    pub feedback_timeout: Duration,
    /// The media's frame period, for the RTP queue correction (1/30 s).
    pub frame_period: Duration,
    /// Gain on the RTP queue delay error (reference implementation: 0.2).
    pub rate_adjust_gain1: f64,
    /// Gain integrating it into the correction factor (reference implementation: 1/8).
    pub rate_adjust_gain2: f64,
}

impl Default for ScreamV2Config {
    fn default() -> Self {
        ScreamV2Config {
            min_rate: Bitrate::kbps(150),
            max_rate: Bitrate::kbps(1500),
            start_rate: Bitrate::kbps(150),
            qdelay_target_lo: Duration::from_millis(60),
            qdelay_target_hi: Duration::from_millis(400),
            min_ref_wnd: Bytes(3000),
            beta_loss: 0.7,
            beta_ecn: 0.8,
            l4s: false,
            mss: Bytes(1000),
            rate_pace_min: Bitrate::kbps(50),
            ref_wnd_overhead: 1.5,
            l4s_avg_g: 1.0 / 16.0,
            qdelay_avg_g: 0.25,
            post_congestion_delay: Duration::from_secs(4),
            mul_increase_factor: 0.02,
            virtual_rtt: Duration::from_millis(25),
            packet_pacing_headroom: 1.5,
            bytes_in_flight_head_room: 2.0,
            feedback_timeout: Duration::from_secs(1),
            frame_period: Duration::from_nanos(33_333_333),
            rate_adjust_gain1: 0.2,
            rate_adjust_gain2: 1.0 / 8.0,
        }
    }
}

crate::tunable!(ScreamV2Config {
    min_rate,
    max_rate,
    start_rate,
    qdelay_target_lo,
    qdelay_target_hi,
    min_ref_wnd,
    beta_loss,
    beta_ecn,
    l4s,
    mss,
    rate_pace_min,
    ref_wnd_overhead,
    l4s_avg_g,
    qdelay_avg_g,
    post_congestion_delay,
    mul_increase_factor,
    virtual_rtt,
    packet_pacing_headroom,
    bytes_in_flight_head_room,
    feedback_timeout,
    frame_period,
    rate_adjust_gain1,
    rate_adjust_gain2,
});

impl ScreamV2Config {
    /// Builds the controller.
    pub fn build(&self) -> ScreamV2 {
        ScreamV2 {
            cfg: self.clone(),
            ref_wnd: self.min_ref_wnd.0 as f64,
            ref_wnd_i: self.min_ref_wnd.0 as f64,
            in_flight: InFlight::default(),
            base: BaseDelay::new(Duration::from_secs(60), 10),
            qdelay_avg: 0.0,
            s_rtt: None,
            l4s_alpha: 0.0,
            last_reaction: None,
            last_loss_reduction: None,
            last_congestion: None,
            last_max_roll: None,
            rate_adjust: 0.0,
        }
    }
}

/// The SCReAM v2 controller.
#[derive(Clone, Debug)]
pub struct ScreamV2 {
    cfg: ScreamV2Config,
    /// Reference window, bytes.
    ref_wnd: f64,
    /// ref_wnd when congestion was last detected (the "inflection point").
    ref_wnd_i: f64,
    in_flight: InFlight,
    base: BaseDelay,
    /// Averaged queueing delay, s.
    qdelay_avg: f64,
    /// Smoothed RTT, s.
    s_rtt: Option<f64>,
    l4s_alpha: f64,
    last_reaction: Option<Time>,
    last_loss_reduction: Option<Time>,
    last_congestion: Option<Time>,
    last_max_roll: Option<Time>,
    /// RTP queue correction factor, 0..0.5.
    rate_adjust: f64,
}

impl ScreamV2 {
    /// The reference window.
    pub fn ref_wnd(&self) -> Bytes {
        Bytes(self.ref_wnd as u64)
    }

    /// Bytes in flight.
    pub fn bytes_in_flight(&self) -> Bytes {
        self.in_flight.bytes()
    }

    fn srtt(&self) -> f64 {
        self.s_rtt.unwrap_or(0.1).max(1e-3)
    }

    fn cut(&mut self, now: Time, factor: f64) {
        self.ref_wnd_i = self.ref_wnd;
        self.ref_wnd = (self.ref_wnd * factor).max(self.cfg.min_ref_wnd.0 as f64);
        self.last_reaction = Some(now);
        self.last_congestion = Some(now);
    }

    /// Growth for `bytes` acked without CE.
    fn grow(&mut self, now: Time, bytes: u64) {
        let c = &self.cfg;
        let mss = c.mss.0 as f64;
        let mut inc = bytes as f64 * mss / self.ref_wnd;
        let scl_i = ((self.ref_wnd - self.ref_wnd_i) / self.ref_wnd_i * 8.0).powi(2).clamp(0.1, 1.0);
        inc *= scl_i.max(0.25);
        inc *= (self.srtt() / c.virtual_rtt.as_secs_f64()).min(1.0).powi(2);
        let post = self.last_congestion.map_or(1.0, |t| {
            ((now - t).as_secs_f64() / c.post_congestion_delay.as_secs_f64()).clamp(0.0, 1.0)
        });
        inc *= 1.0 + c.mul_increase_factor * self.ref_wnd / mss * post * scl_i;
        let allowed = mss + self.in_flight.max_recent().0 as f64 * c.bytes_in_flight_head_room;
        // At the media's maximum rate a larger window would only build queue when capacity drops.
        let at_max = self.target_bps() >= c.max_rate.as_bps_f64();
        if self.ref_wnd + inc <= allowed && !at_max {
            self.ref_wnd += inc;
        }
        self.ref_wnd = self.ref_wnd.max(c.min_ref_wnd.0 as f64);
    }

    fn target_bps(&self) -> f64 {
        let r = match self.s_rtt {
            Some(_) => self.ref_wnd * 8.0 / self.srtt() / (1.0 + self.rate_adjust),
            None => self.cfg.start_rate.as_bps_f64(),
        };
        r.clamp(self.cfg.min_rate.as_bps_f64(), self.cfg.max_rate.as_bps_f64())
    }
}

impl RateController for ScreamV2 {
    fn name(&self) -> &'static str {
        "scream2"
    }

    fn on_packet_sent(&mut self, _now: Time, packet: &SentPacket) {
        self.in_flight.on_sent(packet);
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        let c = self.cfg.clone();
        if let Some(rtt) = report.rtt_sample(now) {
            let r = rtt.as_secs_f64();
            self.s_rtt = Some(self.s_rtt.map_or(r, |s| 0.875 * s + 0.125 * r));
        }
        if self.last_max_roll.is_none_or(|t| now - t >= Duration::from_secs_f64(self.srtt().max(0.1))) {
            self.in_flight.roll_max();
            self.last_max_roll = Some(now);
        }
        let mut qdelay = None;
        for p in &report.packets {
            if let Some(owd) = p.one_way_delay() {
                qdelay = Some(self.base.update(now, owd).as_secs_f64());
            }
        }
        if let Some(q) = qdelay {
            self.qdelay_avg = (1.0 - c.qdelay_avg_g) * self.qdelay_avg + c.qdelay_avg_g * q;
        }
        // A loss counts once per RTT: only packets sent after the previous reduction.
        let new_loss = report
            .packets
            .iter()
            .any(|p| p.arrival.is_none() && self.last_loss_reduction.is_none_or(|t| p.sent.send_time > t));
        let acked = self.in_flight.on_report(report);
        if acked.bytes > 0 {
            let fraction = acked.ce_bytes as f64 / acked.bytes as f64;
            self.l4s_alpha = (1.0 - c.l4s_avg_g) * self.l4s_alpha + c.l4s_avg_g * fraction;
        }
        let interval = Duration::from_secs_f64(c.virtual_rtt.as_secs_f64().min(self.srtt()));
        let may_react = self.last_reaction.is_none_or(|t| now - t >= interval);
        // Reactions that may repeat every virtual RTT are scaled down to one per RTT's worth.
        let per_rtt = (self.srtt() / c.virtual_rtt.as_secs_f64()).max(1.0);
        let target = c.qdelay_target_lo.as_secs_f64();
        let delay_congested = self.qdelay_avg > target / 2.0;
        if new_loss {
            self.cut(now, c.beta_loss);
            self.last_loss_reduction = Some(now);
        } else if acked.ce_bytes > 0 {
            if may_react {
                let factor = if c.l4s { 1.0 - self.l4s_alpha / 2.0 / per_rtt } else { c.beta_ecn };
                self.cut(now, factor);
            }
        } else if delay_congested {
            if may_react {
                let alpha_v = ((self.qdelay_avg - target / 2.0) / (target / 2.0)).clamp(0.0, 1.0);
                self.cut(now, 1.0 - alpha_v / 2.0 / per_rtt);
            }
        } else {
            // No congestion signal in this report: grow.
            self.grow(now, acked.bytes - acked.ce_bytes);
        }
    }

    /// The RTP queue correction of the reference implementation: the target is divided by
    /// 1 + factor, the factor growing while the queue holds more than half a frame period.
    fn on_send_queue(&mut self, _now: Time, _bytes: Bytes, delay: Duration) {
        let c = &self.cfg;
        let period = c.frame_period.as_secs_f64();
        let error = c.rate_adjust_gain1 * (delay.as_secs_f64() - period / 2.0) / period;
        self.rate_adjust = (self.rate_adjust + error * c.rate_adjust_gain2).clamp(0.0, 0.5);
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.in_flight.expire(now - self.cfg.feedback_timeout) {
            self.ref_wnd = self.cfg.min_ref_wnd.0 as f64;
            self.last_congestion = Some(now);
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.in_flight.oldest().map(|t| t + self.cfg.feedback_timeout)
    }

    fn can_send(&self, _now: Time, size: Bytes) -> bool {
        let wnd = self.ref_wnd * self.cfg.ref_wnd_overhead;
        (self.in_flight.bytes().0 + size.0) as f64 <= wnd.max(self.cfg.mss.0 as f64 + size.0 as f64)
    }

    fn target_bitrate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.target_bps())
    }

    /// max(RATE_PACE_MIN, target) x PACKET_PACING_HEADROOM.
    fn pacing_rate(&self) -> Bitrate {
        let r = self.target_bps().max(self.cfg.rate_pace_min.as_bps_f64()) * self.cfg.packet_pacing_headroom;
        Bitrate::from_bps_f64(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PacketResult;

    fn exchange(s: &mut ScreamV2, seq: &mut u64, at: Time, n: u64, lost: Option<u64>) {
        let first = *seq;
        let mut packets = Vec::new();
        for i in 0..n {
            let sent = SentPacket { seq: first + i, size: Bytes(1000), send_time: at };
            s.on_packet_sent(at, &sent);
            let arrival = (lost != Some(i)).then_some(at + Duration::from_millis(50));
            packets.push(PacketResult { sent, arrival, ecn: 0 });
        }
        *seq += n;
        let report = FeedbackReport { packets, report_time: at + Duration::from_millis(50) };
        s.on_feedback(at + Duration::from_millis(100), &report);
    }

    #[test]
    fn loss_cuts_the_window_by_beta_loss_once_per_rtt() {
        let mut s = ScreamV2Config::default().build();
        let mut seq = 0;
        for i in 0..100u64 {
            exchange(&mut s, &mut seq, Time::from_millis(100 * i), 10, None);
        }
        let before = s.ref_wnd().0 as f64;
        assert!(before > 6000.0, "window {before}");
        // Packets sent at 10.0 s, one lost, reported at 10.1 s.
        exchange(&mut s, &mut seq, Time::from_millis(10_000), 10, Some(3));
        let after = s.ref_wnd().0 as f64;
        assert!((after - 0.7 * before).abs() <= 1.0, "{before} -> {after}");
        // A loss among packets sent before that reduction (same RTT) does not cut again.
        exchange(&mut s, &mut seq, Time::from_millis(10_050), 10, Some(5));
        assert!(s.ref_wnd().0 as f64 >= after);
        // A loss of a packet sent after it does.
        let w = s.ref_wnd().0 as f64;
        exchange(&mut s, &mut seq, Time::from_millis(10_150), 10, Some(5));
        assert!((s.ref_wnd().0 as f64 - 0.7 * w).abs() <= 1.0);
    }

    #[test]
    fn queueing_above_half_the_target_backs_off() {
        let mut s = ScreamV2Config::default().build();
        let mut seq = 0;
        for i in 0..100u64 {
            exchange(&mut s, &mut seq, Time::from_millis(100 * i), 10, None);
        }
        let before = s.ref_wnd();
        // 60 ms of standing queue (the full target) lifts the averaged delay above target / 2.
        let at = Time::from_millis(10_000);
        for k in 0..10u64 {
            let at = at + Duration::from_millis(30 * k);
            let packets: Vec<_> = (0..10)
                .map(|i| PacketResult {
                    sent: SentPacket { seq: seq + i, size: Bytes(1000), send_time: at },
                    arrival: Some(at + Duration::from_millis(110)),
                    ecn: 0,
                })
                .collect();
            for p in &packets {
                s.on_packet_sent(at, &p.sent);
            }
            seq += 10;
            let report = FeedbackReport { packets, report_time: at + Duration::from_millis(110) };
            s.on_feedback(at + Duration::from_millis(160), &report);
        }
        assert!(s.ref_wnd() < before, "{:?} -> {:?}, qdelay avg {}", before, s.ref_wnd(), s.qdelay_avg);
    }
}
