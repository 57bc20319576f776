//! NADA: Network-Assisted Dynamic Adaptation (RFC 8698), held against the reference
//! implementation of its authors (cisco/ns3-rmcat, `nada-controller.cc` and
//! `sender-based-controller.cc`).
//!
//! The receiver-side computations of RFC 8698 §4.2 (queueing delay, loss and marking ratios, the
//! aggregate congestion signal `x_curr`, the ramp-up mode and the receiving rate) are made here,
//! at the sender, from per-packet feedback (transport-cc or RFC 8888), as RFC 8698 §6.3 allows and
//! ns3-rmcat does. The sender-side rate calculation follows §4.3: accelerated ramp-up while the
//! path shows no queueing and no loss, gradual update otherwise, then the rate-shaping buffer
//! (§4.3, eq. 8-9) splits the reference rate into the encoder target and the sending rate.
//!
//! Per feedback report:
//! - Queueing delay d_queue: the minimum, over the last `min_filter_len` (15) received packets,
//!   of one-way delay - base delay (the smallest one-way delay seen) (RFC 8698 §5.1.1; ns3-rmcat
//!   `getCurrentQdelay`).
//! - Loss and marking ratios: each report's share of lost packets and of CE-marked ones
//!   (`PacketResult::ecn == 3`), smoothed by ALPHA (0.1) (§4.2).
//! - Loss intervals, TFRC-style (RFC 5348 §5.4, as ns3-rmcat's `getLossIntervalInfo`): the
//!   packets received between loss events (a run of lost packets is one event) in the current
//!   interval and the last `loss_intervals` (8) closed ones; the mean interval is their weighted
//!   mean, weights 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2 (newest first). TFRC and ns3-rmcat take the
//!   larger of that and the weighted mean including the current interval; we do not, because the
//!   weights sum to at most 6 < MULTILOSS: the current interval c then never reaches MULTILOSS x
//!   the mean (which is at least c / 6), so in ns3-rmcat the warping never ends once a loss was
//!   seen and its blend-out below is unreachable (see the test
//!   `tfrc_mean_with_the_current_interval_would_never_end_warping`).
//! - Delay warping (§4.2 eq. 1): while the current loss interval is shorter than MULTILOSS (7) x
//!   the mean, d_tilde = QTH x exp(-LAMBDA (d_queue - QTH) / QTH) above QTH. Over the next mean
//!   interval d_tilde blends linearly back into d_queue (ns3-rmcat; the RFC does not say how the
//!   warping ends), then the delay is used as is.
//! - x_curr = d_tilde + DMARK x (p_mark / PMRREF)² + DLOSS x (p_loss / PLRREF)², clipped at
//!   `x_max` (§4.2 eq. 2). This is NADA's reaction to ECN: a marking ratio of PMRREF (1 %) weighs
//!   as DMARK (2 ms) of queueing delay. The ramp-up test below does not look at marks (§4.2
//!   lists loss and delay only).
//! - Ramp-up mode (§4.2): accelerated (rmode 0) while no packet in the last LOGWIN was lost and
//!   every raw sample one-way delay - base delay in it is at most QEPS (10 ms); else gradual.
//!   Raw samples, as RFC 8698 ("for all previous delay samples") and ns3-rmcat do, not the
//!   min-filtered d_queue.
//! - rtt: the smallest of the last `rtt_filter_len` (15) per-packet round trips, each the time
//!   from the packet's sending to the arrival of the report (ns3-rmcat `getCurrentRTT`; it
//!   includes the receiver's hold time until the report, which is small for the newest packets).
//!
//! Deliberate differences from ns3-rmcat:
//! - The rate updates on every report (ns3-rmcat: on a report at least DELTA / 2 after the last
//!   update); delta in eq. 7 is the time since the last update either way.
//! - The loss ratio is the report's (ns3-rmcat: over the packets of the last 500 ms), smoothed on
//!   every report; the receiving rate counts the bytes that arrived within the last LOGWIN
//!   (ns3-rmcat: the packets sent within the last 500 ms).
//! - ECN marks count (ns3-rmcat leaves ECN as a to-do); the rate-shaping buffer of §4.3 is
//!   modelled (ns3-rmcat has none: BETA_V = BETA_S = 0 there).
//! - ns3-rmcat restarts its statistics (base delay, loss intervals) after 500 ms without feedback;
//!   this keeps them.
//!
//! Accelerated ramp-up and jitter: with the RFC 8867/8868 jitter model (Gaussian, σ = 5 ms,
//! truncated at ±3σ), raw delay samples spread over 30 ms above the base, so within any 500 ms some
//! sample is more than QEPS = 10 ms above the base and rmode stays gradual: r_ref then climbs by
//! eq. 7 only. Measured (`lowlat run`, the talk's RMIN 300 kbit/s, RMAX 3 Mbit/s, feedback and
//! DELTA 50 ms, one flow on 5 Mbit/s with 60 ms RTT): the 1 s mean sending rate first reaches
//! 90 % of RMAX after 4.6 s without jitter, and not within 60 s with 5 ms jitter (2.25 Mbit/s
//! over 55-60 s, still rising). The reference behaves the same: ns3-rmcat's `getRampUpMode` runs
//! this test on the same raw samples, as RFC 8698 §4.2 words it; the NADA talk's "few seconds"
//! were measured on real paths, not under this jitter model. `rampup_on_filtered_delay = true`
//! tests the min-filtered delay instead (not standard; lowlat's earlier behaviour): 2.43 Mbit/s
//! over 55-60 s in the same run.

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
    /// Samples of the minimum filter on the round-trip time (ns3-rmcat: 15).
    pub rtt_filter_len: usize,
    /// Closed loss intervals the mean loss interval averages (RFC 5348 §5.4, ns3-rmcat: 8).
    pub loss_intervals: usize,
    /// Upper clip of the aggregate congestion signal (500 ms).
    pub x_max: Duration,
    /// Not standard: test the accelerated ramp-up condition on the min-filtered queueing delay
    /// (each packet's d_queue when it arrived) instead of the raw samples RFC 8698 §4.2 and
    /// ns3-rmcat use (false). lowlat did this before; with jitter it lets the accelerated ramp-up
    /// run (see the module notes).
    pub rampup_on_filtered_delay: bool,
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
            rtt_filter_len: 15,
            loss_intervals: 8,
            x_max: Duration::from_millis(500),
            rampup_on_filtered_delay: false,
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
    rtt_filter_len,
    loss_intervals,
    x_max,
    rampup_on_filtered_delay,
});

impl NadaConfig {
    /// Checks each constant's range and their relations (RMIN <= RMAX, DELTA <= LOGWIN, the
    /// divisors XREF, TAU, QTH, PLRREF, PMRREF above zero); the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        use crate::tunable::bounds::{MAX_FACTOR, MAX_INTERVAL, MAX_RATE, MAX_SAMPLES};
        use crate::tunable::range::{above_up_to, not_below, within};
        let zero = Duration::ZERO;
        above_up_to("prio", self.prio, 0.0, MAX_FACTOR)?;
        above_up_to("rmin", self.rmin, Bitrate::ZERO, MAX_RATE)?;
        not_below("rmax", self.rmax, "rmin", self.rmin)?;
        within("rmax", self.rmax, self.rmin, MAX_RATE)?;
        for (key, d) in [("xref", self.xref), ("tau", self.tau), ("delta", self.delta), ("qth", self.qth)] {
            above_up_to(key, d, zero, MAX_INTERVAL)?;
        }
        above_up_to("logwin", self.logwin, zero, MAX_INTERVAL)?;
        not_below("logwin", self.logwin, "delta", self.delta)?;
        above_up_to("x_max", self.x_max, zero, MAX_INTERVAL)?;
        for (key, d) in [("qeps", self.qeps), ("dfilt", self.dfilt), ("qbound", self.qbound)] {
            within(key, d, zero, MAX_INTERVAL)?;
        }
        for (key, d) in [("dloss", self.dloss), ("dmark", self.dmark)] {
            within(key, d, zero, MAX_INTERVAL)?;
        }
        above_up_to("kappa", self.kappa, 0.0, MAX_FACTOR)?;
        above_up_to("eta", self.eta, 0.0, MAX_FACTOR)?;
        above_up_to("gamma_max", self.gamma_max, 0.0, 10.0)?;
        above_up_to("multiloss", self.multiloss, 0.0, MAX_FACTOR)?;
        within("lambda", self.lambda, 0.0, MAX_FACTOR)?;
        above_up_to("plrref", self.plrref, 0.0, 1.0)?;
        above_up_to("pmrref", self.pmrref, 0.0, 1.0)?;
        above_up_to("fps", self.fps, 0.0, 1000.0)?;
        within("beta_v", self.beta_v, 0.0, MAX_FACTOR)?;
        within("beta_s", self.beta_s, 0.0, MAX_FACTOR)?;
        above_up_to("alpha", self.alpha, 0.0, 1.0)?;
        within("min_filter_len", self.min_filter_len, 1, MAX_SAMPLES)?;
        within("rtt_filter_len", self.rtt_filter_len, 1, MAX_SAMPLES)?;
        within("loss_intervals", self.loss_intervals, 1, MAX_SAMPLES)?;
        Ok(())
    }

    /// Builds the controller, starting at RMIN, once its `validate` accepts the constants: a caller that
    /// set fields by hand (skipping the scenario's checks) gets the error naming the key here, not
    /// a panic or a stuck run later.
    pub fn build(&self) -> Result<Nada, String> {
        self.validate()?;
        Ok(Nada {
            cfg: self.clone(),
            r_ref: self.rmin.as_bps_f64(),
            d_base: None,
            recent_owd: MinWindow::new(self.min_filter_len),
            recent_rtt: MinWindow::new(self.rtt_filter_len),
            history: VecDeque::new(),
            p_loss: 0.0,
            p_mark: 0.0,
            loss_intervals: LossIntervals::new(self.loss_intervals),
            x_curr: 0.0,
            x_prev: None,
            rmode: RampMode::Accelerated,
            rtt: 0.0,
            last_update: None,
            buffer_len: 0,
            first_arrival: None,
        })
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

/// One packet kept for LOGWIN: arrival (a lost one: the last arrival before it), size, one-way
/// delay and min-filtered queueing delay when it arrived (s).
#[derive(Clone, Copy, Debug)]
struct Observation {
    arrival: Time,
    size: u64,
    owd: f64,
    filtered: f64,
    lost: bool,
}

/// TFRC-style loss intervals (RFC 5348 §5.4, as ns3-rmcat's `InterLossState`): packets received
/// since the last loss event (the current interval, first) and in the closed intervals before.
#[derive(Clone, Debug)]
struct LossIntervals {
    /// Current interval first; at most `closed + 1` entries.
    intervals: VecDeque<u64>,
    closed: usize,
    /// A loss was seen since the last received packet.
    in_loss: bool,
    /// Any loss seen at all.
    seen: bool,
}

impl LossIntervals {
    fn new(closed: usize) -> LossIntervals {
        let mut intervals = VecDeque::with_capacity(closed + 2);
        intervals.push_back(0);
        LossIntervals { intervals, closed: closed.max(1), in_loss: false, seen: false }
    }

    fn on_lost(&mut self) {
        self.in_loss = true;
    }

    fn on_received(&mut self) {
        if self.in_loss {
            // The first packet after a loss event opens a new interval.
            self.intervals.push_front(1);
            self.intervals.truncate(self.closed + 1);
            self.in_loss = false;
            self.seen = true;
        } else if let Some(current) = self.intervals.front_mut() {
            *current += 1;
        }
    }

    /// TFRC weight of the i-th most recent interval among n: 1 for the newer half, then
    /// decreasing linearly (1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2 for n = 8).
    fn weight(i: usize, n: usize) -> f64 {
        if i < n / 2 {
            1.0
        } else {
            2.0 * (n - i) as f64 / (n + 2) as f64
        }
    }

    /// `(current interval, mean interval)` in packets, once a loss was seen: the mean is the
    /// weighted mean of the closed intervals (RFC 5348's I_tot1 / W_tot).
    fn current_and_mean(&self) -> Option<(f64, f64)> {
        if !self.seen {
            return None;
        }
        let (n, k) = (self.closed, self.intervals.len());
        let closed: f64 = (1..k).map(|i| self.intervals[i] as f64 * Self::weight(i - 1, n)).sum();
        let weights: f64 = (0..k - 1).map(|i| Self::weight(i, n)).sum();
        Some((self.intervals[0] as f64, closed / weights))
    }

    /// TFRC's own mean (RFC 5348 §5.4, ns3-rmcat): the larger of the weighted means with and
    /// without the current interval.
    #[cfg(test)]
    fn tfrc_mean(&self) -> Option<f64> {
        let (_, closed_mean) = self.current_and_mean()?;
        let (n, k) = (self.closed, self.intervals.len());
        let with_current: f64 = (0..k - 1).map(|i| self.intervals[i] as f64 * Self::weight(i, n)).sum();
        let weights: f64 = (0..k - 1).map(|i| Self::weight(i, n)).sum();
        Some(closed_mean.max(with_current / weights))
    }
}

/// The NADA controller.
#[derive(Clone, Debug)]
pub struct Nada {
    cfg: NadaConfig,
    /// Reference rate, bit/s.
    r_ref: f64,
    /// Minimum one-way delay seen (the base delay), s.
    d_base: Option<f64>,
    /// The last one-way delays (s), for the minimum filter of the queueing delay.
    recent_owd: MinWindow,
    /// The last per-packet round trips (s), for the minimum filter of the RTT.
    recent_rtt: MinWindow,
    /// Observations within LOGWIN of the newest arrival.
    history: VecDeque<Observation>,
    p_loss: f64,
    p_mark: f64,
    loss_intervals: LossIntervals,
    /// Aggregate congestion signal, s.
    x_curr: f64,
    x_prev: Option<f64>,
    rmode: RampMode,
    /// Round-trip time (minimum of the last samples), s.
    rtt: f64,
    last_update: Option<Time>,
    buffer_len: u64,
    first_arrival: Option<Time>,
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The minimum of the last `len` samples, kept as they arrive instead of scanned on every
/// packet: a ring of the samples and their minimum, rescanned only when the minimum leaves the
/// window. The same value as the minimum over the window, since the samples (durations in s) are
/// never NaN or -0.0.
#[derive(Clone, Debug)]
struct MinWindow {
    len: usize,
    /// The last `len` samples; once full, `next` is the oldest, overwritten by the next push.
    samples: Vec<f64>,
    next: usize,
    /// The smallest of `samples` (meaningless while empty).
    min: f64,
}

impl MinWindow {
    fn new(len: usize) -> Self {
        let len = len.max(1);
        MinWindow { len, samples: Vec::with_capacity(len), next: 0, min: f64::INFINITY }
    }

    /// Appends `x`, keeping the last `len` samples.
    fn push(&mut self, x: f64) {
        if self.samples.len() < self.len {
            self.samples.push(x);
            self.min = self.min.min(x);
            return;
        }
        let old = std::mem::replace(&mut self.samples[self.next], x);
        self.next = if self.next + 1 == self.len { 0 } else { self.next + 1 };
        if x <= self.min {
            self.min = x;
        } else if old == self.min {
            // The minimum left and `x` is larger: the new one is among the others.
            self.min = self.samples.iter().copied().fold(f64::INFINITY, f64::min);
        }
    }

    /// The smallest of the last `len` samples, once there is one.
    fn min(&self) -> Option<f64> {
        (!self.samples.is_empty()).then_some(self.min)
    }
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

    /// The loss-interval state: `(current interval, mean interval)` in packets, once a loss was
    /// seen.
    pub fn loss_interval(&self) -> Option<(f64, f64)> {
        self.loss_intervals.current_and_mean()
    }

    /// The smoothed packet marking ratio p_mark.
    pub fn marking_ratio(&self) -> f64 {
        self.p_mark
    }

    /// The smoothed packet loss ratio p_loss.
    pub fn loss_ratio(&self) -> f64 {
        self.p_loss
    }

    /// RFC 8698 §4.2: queueing delay with a minimum filter, loss/marking ratios, x_curr, rmode.
    fn update_signal(&mut self, now: Time, report: &FeedbackReport) {
        let c = &self.cfg;
        let (mut lost, mut marked, mut total) = (0u64, 0u64, 0u64);
        let mut newest = None;
        for p in &report.packets {
            total += 1;
            match p.arrival {
                Some(arrival) => {
                    let owd = secs(arrival - p.sent.send_time);
                    self.d_base = Some(self.d_base.map_or(owd, |b: f64| b.min(owd)));
                    self.recent_owd.push(owd);
                    self.recent_rtt.push(secs(now - p.sent.send_time));
                    if p.ecn == 3 {
                        marked += 1;
                    }
                    self.loss_intervals.on_received();
                    self.first_arrival.get_or_insert(arrival);
                    let filtered = self.recent_owd.min().map_or(0.0, |m| m - self.d_base.unwrap_or(m));
                    self.history.push_back(Observation {
                        arrival,
                        size: p.sent.size.0,
                        owd,
                        filtered,
                        lost: false,
                    });
                    newest = Some(arrival);
                }
                None => {
                    lost += 1;
                    self.loss_intervals.on_lost();
                    let at = newest.or(self.history.back().map(|o| o.arrival)).unwrap_or(report.report_time);
                    self.history.push_back(Observation {
                        arrival: at,
                        size: 0,
                        owd: 0.0,
                        filtered: 0.0,
                        lost: true,
                    });
                }
            }
        }
        if let Some(newest) = self.history.back().map(|o| o.arrival) {
            let horizon = newest - c.logwin;
            while self.history.front().is_some_and(|o| o.arrival <= horizon) {
                self.history.pop_front();
            }
        }
        if let Some(rtt) = self.recent_rtt.min() {
            self.rtt = rtt;
        }
        if total > 0 {
            self.p_loss = (1.0 - c.alpha) * self.p_loss + c.alpha * lost as f64 / total as f64;
            self.p_mark = (1.0 - c.alpha) * self.p_mark + c.alpha * marked as f64 / total as f64;
        }
        let base = self.d_base.unwrap_or(0.0);
        let d_queue = self.recent_owd.min().map_or(0.0, |owd| owd - base);
        let qth = secs(c.qth);
        let warped = if d_queue > qth { qth * (-c.lambda * (d_queue - qth) / qth).exp() } else { d_queue };
        // Warp while losses are recent (eq. 1), then blend back over one mean loss interval.
        let d_tilde = match self.loss_intervals.current_and_mean() {
            Some((current, mean)) if current < c.multiloss * mean => warped,
            Some((current, mean)) if current < (c.multiloss + 1.0) * mean => {
                let a = (current - c.multiloss * mean) / mean;
                a * d_queue + (1.0 - a) * warped
            }
            _ => d_queue,
        };
        let x = d_tilde
            + secs(c.dmark) * (self.p_mark / c.pmrref).powi(2)
            + secs(c.dloss) * (self.p_loss / c.plrref).powi(2);
        self.x_curr = x.min(secs(c.x_max));
        let qeps = secs(c.qeps);
        let quiet = self.history.iter().all(|o| {
            !o.lost && if c.rampup_on_filtered_delay { o.filtered < qeps } else { o.owd - base <= qeps }
        });
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
        self.update_signal(now, report);
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

    /// NADA keeps no per-packet send state.
    fn pacing_rate_ignores_sends(&self) -> bool {
        true
    }

    /// NADA has no timer.
    fn pacing_rate_ignores_timeouts(&self) -> bool {
        true
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
        let mut nada = cfg.build().unwrap();
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
        let mut nada = NadaConfig::default().build().unwrap();
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
        let mut nada = NadaConfig::default().build().unwrap();
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
        let mut nada = NadaConfig::default().build().unwrap();
        drive(
            &mut nada,
            10.0,
            Duration::from_millis(100),
            Duration::from_millis(50),
            standing(Duration::from_millis(400)),
            |_| false,
        );
        assert_eq!(nada.reference_rate(), Bitrate::kbps(150));
        let mut nada = NadaConfig::default().build().unwrap();
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

    #[test]
    fn loss_intervals_average_the_last_eight_closed_intervals_tfrc_style() {
        let mut li = LossIntervals::new(8);
        assert_eq!(li.current_and_mean(), None);
        for _ in 0..100 {
            li.on_received();
        }
        // Three packets lost in a row are one loss event.
        li.on_lost();
        li.on_lost();
        li.on_lost();
        li.on_received();
        assert_eq!(li.current_and_mean(), Some((1.0, 100.0)));
        // Ten more events closing intervals of 10, 20, ..., 100 packets.
        for k in 1..=10 {
            for _ in 1..10 * k {
                li.on_received();
            }
            li.on_lost();
            li.on_received();
        }
        // Only the last eight closed intervals count: 100, 90, ..., 30 with weights
        // 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2 (sum 6): (340 + 48 + 30 + 16 + 6) / 6.
        let (current, mean) = li.current_and_mean().unwrap();
        assert_eq!(current, 1.0);
        assert!((mean - 440.0 / 6.0).abs() < 1e-9, "{mean}");
        // A long current interval does not move this mean (TFRC's own mean would grow with it).
        for _ in 0..499 {
            li.on_received();
        }
        let (current, mean) = li.current_and_mean().unwrap();
        assert_eq!(current, 500.0);
        assert!((mean - 440.0 / 6.0).abs() < 1e-9);
        assert!((li.tfrc_mean().unwrap() - 890.0 / 6.0).abs() < 1e-9);
    }

    #[test]
    fn tfrc_mean_with_the_current_interval_would_never_end_warping() {
        // ns3-rmcat warps while current < MULTILOSS x max(mean with, mean without current).
        let mut li = LossIntervals::new(8);
        for _ in 0..20 {
            for _ in 0..19 {
                li.on_received();
            }
            li.on_lost();
        }
        for c in 1..100_000u32 {
            li.on_received();
            let (current, _) = li.current_and_mean().unwrap();
            assert_eq!(current, f64::from(c));
            assert!(current < 7.0 * li.tfrc_mean().unwrap(), "TFRC's mean expired at {c}");
        }
        // With the closed intervals only (19 packets each) warping ends after 7 x 19 packets.
        let (current, mean) = li.current_and_mean().unwrap();
        assert!((mean - 19.0).abs() < 1e-9 && current >= 7.0 * mean);
    }

    /// Feeds `n` packets of 1200 B sent 10 ms apart from `*seq` (send time seq x 10 ms), each
    /// arriving `owd(seq)` later unless `lost(seq)`, CE-marked when `marked(seq)`; a report every
    /// 10 packets, handed to NADA 50 ms after it was built. Calls `after` after each report.
    fn feed(
        nada: &mut Nada,
        seq: &mut u64,
        n: u64,
        owd: impl Fn(u64) -> Duration,
        lost: impl Fn(u64) -> bool,
        marked: impl Fn(u64) -> bool,
        mut after: impl FnMut(&Nada),
    ) {
        let end = *seq + n;
        while *seq < end {
            let packets: Vec<PacketResult> = (*seq..*seq + 10)
                .map(|k| {
                    let sent = SentPacket { seq: k, size: Bytes(1200), send_time: Time::from_millis(10 * k) };
                    let arrival = (!lost(k)).then(|| sent.send_time + owd(k));
                    PacketResult { sent, arrival, ecn: if marked(k) { 3 } else { 1 } }
                })
                .collect();
            *seq += 10;
            let report_time = Time::from_millis(10 * *seq) + Duration::from_millis(150);
            nada.on_feedback(
                report_time + Duration::from_millis(50),
                &FeedbackReport { packets, report_time },
            );
            after(nada);
        }
    }

    #[test]
    fn warping_blends_out_over_one_mean_interval_after_losses_stop() {
        let cfg = NadaConfig::default();
        let mut nada = cfg.build().unwrap();
        let mut seq = 0;
        let ms = Duration::from_millis;
        // Base delay 50 ms, then a standing 100 ms queue (above QTH) with every 20th packet lost.
        feed(&mut nada, &mut seq, 20, |_| ms(50), |_| false, |_| false, |_| {});
        feed(&mut nada, &mut seq, 400, |_| ms(150), |k| k % 20 == 0, |_| false, |_| {});
        let delay_part =
            |n: &Nada| secs(n.congestion_signal()) - secs(cfg.dloss) * (n.loss_ratio() / cfg.plrref).powi(2);
        let warped = 0.050 * (-0.5f64 * (0.100 - 0.050) / 0.050).exp();
        assert!((delay_part(&nada) - warped).abs() < 1e-6, "warped while losses are recent");
        // Losses stop. The closed intervals are 19 packets: warped for 7 x 19 = 133 packets
        // after the last loss, blended over the next 19, then the plain 100 ms.
        let mut seen = Vec::new();
        feed(
            &mut nada,
            &mut seq,
            300,
            |_| ms(150),
            |_| false,
            |_| false,
            |n| {
                seen.push((n.loss_interval().unwrap().0, delay_part(n)));
            },
        );
        for (current, d) in &seen {
            let expected = if *current < 133.0 {
                warped
            } else if *current < 152.0 {
                let a = (current - 133.0) / 19.0;
                a * 0.100 + (1.0 - a) * warped
            } else {
                0.100
            };
            assert!((d - expected).abs() < 1e-6, "after {current} packets: {d} vs {expected}");
        }
        let blending = seen.iter().filter(|(c, _)| (133.0..152.0).contains(c)).count();
        assert!(blending >= 1 && seen.last().unwrap().1 > 0.0999, "{seen:?}");
    }

    #[test]
    fn ecn_marks_add_the_marking_penalty_and_lower_the_rate() {
        let cfg = NadaConfig::default();
        let ms = Duration::from_millis;
        // 1 % of packets CE-marked (PMRREF): p_mark averages 1 %, and each report's x_curr is the
        // 30 ms queue plus DMARK x (p_mark / PMRREF)² (2 ms at 1 %).
        let mut nada = cfg.build().unwrap();
        let mut seq = 0;
        feed(&mut nada, &mut seq, 20, |_| ms(50), |_| false, |_| false, |_| {});
        let mut samples = Vec::new();
        feed(
            &mut nada,
            &mut seq,
            3000,
            |_| ms(80),
            |_| false,
            |k| k % 100 == 7,
            |n| {
                samples.push((n.marking_ratio(), secs(n.congestion_signal())));
            },
        );
        let late = &samples[100..];
        let mean_p = late.iter().map(|x| x.0).sum::<f64>() / late.len() as f64;
        assert!((mean_p - 0.01).abs() < 0.001, "p_mark averages {mean_p}");
        for (p, x) in late {
            let penalty = 0.002 * (p / 0.01).powi(2);
            assert!((x - 0.030 - penalty).abs() < 1e-9, "x_curr {x} with p_mark {p}");
        }
        assert_eq!(nada.mode(), RampMode::Gradual, "30 ms of queueing");
        // In gradual mode the rate settles where x_curr = XREF x RMAX / r_ref: a 20 ms queue alone
        // gives 750 kbit/s; with 3 % of packets marked (penalty 2 ms x 3² = 18 ms), about
        // 10 ms x 1.5 Mbit/s / 38 ms = 395 kbit/s.
        let settle = |every: u64| {
            let mut rates = Vec::new();
            let r = drive_marked(&mut cfg.build().unwrap(), 150.0, ms(20), every, &mut rates);
            (r, rates)
        };
        let (clean, _) = settle(0);
        let (marked, _) = settle(33);
        assert!((clean - 750e3).abs() < 0.03 * 750e3, "no marks: {clean}");
        let expected = 10.0 * 1.5e6 / (20.0 + 2.0 * (1.0f64 / 33.0 / 0.01).powi(2));
        assert!((marked - expected).abs() < 0.1 * expected, "marked: {marked} vs {expected}");
    }

    /// A standing queue `q` after 200 ms, every `mark_every`-th packet CE-marked (0: none), packets
    /// paced at NADA's rate; returns r_ref at the end.
    fn drive_marked(
        nada: &mut Nada,
        seconds: f64,
        q: Duration,
        mark_every: u64,
        rates: &mut Vec<f64>,
    ) -> f64 {
        let owd = Duration::from_millis(50);
        let interval = Duration::from_millis(100);
        let (mut next_send, mut next_report, mut seq) = (Time::ZERO, Time::ZERO + interval, 0u64);
        let mut pending = Vec::new();
        while next_report.as_secs_f64() < seconds {
            while next_send < next_report {
                let sent = SentPacket { seq, size: Bytes(1200), send_time: next_send };
                let queue = if next_send < Time::from_millis(200) { Duration::ZERO } else { q };
                let ecn = if mark_every > 0 && seq % mark_every == 0 { 3 } else { 1 };
                pending.push(PacketResult { sent, arrival: Some(next_send + owd + queue), ecn });
                seq += 1;
                next_send += nada.pacing_rate().transmit_time(Bytes(1200)).unwrap();
            }
            let report = FeedbackReport { packets: std::mem::take(&mut pending), report_time: next_report };
            nada.on_feedback(next_report + owd, &report);
            rates.push(nada.reference_rate().as_bps_f64());
            next_report += interval;
        }
        nada.reference_rate().as_bps_f64()
    }

    #[test]
    fn with_5_ms_gaussian_jitter_the_raw_delay_test_keeps_rmode_gradual() {
        // RFC 8867's jitter (Gaussian, σ = 5 ms, truncated at ±3σ; the order of arrivals does not
        // matter to NADA) on an uncongested path: raw samples reach far more than QEPS above the
        // smallest, so accelerated ramp-up stops once the base delay has seen a low draw (as in
        // ns3-rmcat, which runs the same test). The non-standard filtered test lets it run.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut gauss = move || {
            // Box-Muller on a xorshift stream: deterministic.
            let mut uniform = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f64 / (1u64 << 53) as f64
            };
            let (u1, u2) = (uniform().max(1e-12), uniform());
            ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()).clamp(-3.0, 3.0)
        };
        let jitter: Vec<Duration> =
            (0..4000).map(|_| Duration::from_secs_f64(0.015 + 0.005 * gauss())).collect();
        let accelerated_late = |rampup_on_filtered_delay: bool| {
            let cfg = NadaConfig {
                rmin: Bitrate::kbps(300),
                rmax: Bitrate::mbps(3),
                rampup_on_filtered_delay,
                ..NadaConfig::default()
            };
            let mut nada = cfg.build().unwrap();
            let (mut seq, mut modes) = (0, Vec::new());
            let owd = |k: u64| Duration::from_millis(50) + jitter[k as usize];
            feed(&mut nada, &mut seq, 3000, owd, |_| false, |_| false, |n| modes.push(n.mode()));
            modes[50..].iter().filter(|m| **m == RampMode::Accelerated).count()
        };
        let raw = accelerated_late(false);
        assert_eq!(raw, 0, "accelerated ramp-up ran in {raw} late reports");
        let filtered = accelerated_late(true);
        assert!(filtered > 20, "the filtered test ran accelerated ramp-up in only {filtered} reports");
    }

    #[test]
    fn the_running_minimum_equals_the_minimum_over_the_window() {
        // Random samples on a coarse grid (so equal values occur), window lengths 1..20: after
        // every push the running minimum is the scanned minimum of the last `len` samples.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for len in 1..20usize {
            let mut window = MinWindow::new(len);
            let mut all = Vec::new();
            assert_eq!(window.min(), None);
            for _ in 0..500 {
                let x = (next() % 40) as f64 * 1e-3;
                window.push(x);
                all.push(x);
                let scanned = all[all.len().saturating_sub(len)..].iter().copied().reduce(f64::min);
                assert_eq!(window.min().map(f64::to_bits), scanned.map(f64::to_bits), "len {len}");
                assert!(window.samples.len() <= len);
            }
        }
    }
}
