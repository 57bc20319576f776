//! A controller whose decisions come from outside the simulator: a user's controller written in
//! another language (Python, through `lowlat-py`), or a learning loop that sets the target each
//! step (the Gymnasium environment).
//!
//! The controller itself is the same sans-IO shape as the others; what is external is reached
//! through an [`ExternalHandle`] that the driver keeps while the simulation owns the controller.
//! With a [`RateCallback`] installed, each feedback report is handed to it and its answer becomes
//! the target; without one, the target is whatever the driver last set. Either way the handle
//! accumulates what a receiver-side estimator sees ([`FeedbackWindow`]) between two reads.
//!
//! A callback that fails or answers with a rate that is not a finite number of bit/s above 0 is
//! an error: the first one is kept in the handle (the driver stops the run and reports it) and
//! the target stays where it was.

use crate::{FeedbackReport, RateController};
use lowlat_core::{Bitrate, Time};
use std::sync::{Arc, Mutex, MutexGuard};

/// A controller implemented outside the simulator, called once per feedback report.
pub trait RateCallback: Send {
    /// A feedback report arrived at `now`: the new target in bit/s (`Ok(None)`: keep it), or an
    /// error message.
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) -> Result<Option<f64>, String>;
}

/// Settings of [`External`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExternalConfig {
    /// The target until the first decision.
    pub start_rate: Bitrate,
    /// Lowest target (the encoder's rmin); decisions below are raised to it.
    pub min_rate: Bitrate,
    /// Highest target (the encoder's rmax); decisions above are lowered to it.
    pub max_rate: Bitrate,
    /// Pacing rate / target: 1.5, as [`crate::FixedRateConfig`] (SCReAM v2's
    /// PACKET_PACING_HEADROOM), so frame-size noise does not build the sender queue.
    pub pacing_factor: f64,
}

impl Default for ExternalConfig {
    fn default() -> Self {
        ExternalConfig {
            start_rate: Bitrate::kbps(300),
            min_rate: Bitrate::kbps(150),
            max_rate: Bitrate::kbps(1500),
            pacing_factor: 1.5,
        }
    }
}

crate::tunable!(ExternalConfig { pacing_factor });

impl ExternalConfig {
    /// Checks each field's range and min <= start <= max (the start is clamped into the
    /// encoder's range before it gets here); the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        use crate::tunable::bounds::MAX_FACTOR;
        use crate::tunable::range::above_up_to;
        crate::tunable::check_rate_range(self.min_rate, self.start_rate, self.max_rate)?;
        above_up_to("pacing_factor", self.pacing_factor, 0.0, MAX_FACTOR)
    }
}

/// What the reports since the last read say, as a receiver-side estimator sees it: received
/// bytes and packets, losses, one-way delays and their trend (least-squares slope of delay against
/// arrival time), all O(1) per packet.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FeedbackWindow {
    /// Reports covered.
    pub reports: u64,
    /// Packets reported received.
    pub received: u64,
    /// Packets reported lost.
    pub lost: u64,
    /// Bytes of the packets received.
    pub received_bytes: u64,
    /// First and last arrival (receiver clock), if any packet arrived.
    pub first_arrival: Option<Time>,
    /// See `first_arrival`.
    pub last_arrival: Option<Time>,
    /// Sum of one-way delays (s) of the packets received.
    pub delay_sum_s: f64,
    /// Smallest one-way delay (s); 0 when none arrived.
    pub delay_min_s: f64,
    /// Largest one-way delay (s).
    pub delay_max_s: f64,
    // Least-squares sums of delay (s) against arrival time (s, relative to `first_arrival`).
    sum_t: f64,
    sum_tt: f64,
    sum_td: f64,
}

impl FeedbackWindow {
    /// Adds one report.
    pub fn add(&mut self, report: &FeedbackReport) {
        self.reports += 1;
        for p in &report.packets {
            let Some(at) = p.arrival else {
                self.lost += 1;
                continue;
            };
            let d = (at - p.sent.send_time).as_secs_f64();
            let first = *self.first_arrival.get_or_insert(at);
            let t = at.saturating_since(first).as_secs_f64();
            if self.received == 0 {
                (self.delay_min_s, self.delay_max_s) = (d, d);
            }
            self.received += 1;
            self.received_bytes += p.sent.size.0;
            self.last_arrival = Some(self.last_arrival.map_or(at, |l| l.max(at)));
            self.delay_sum_s += d;
            self.delay_min_s = self.delay_min_s.min(d);
            self.delay_max_s = self.delay_max_s.max(d);
            self.sum_t += t;
            self.sum_tt += t * t;
            self.sum_td += t * d;
        }
    }

    /// Adds the reports of `other` (a later or earlier window) to these.
    pub fn merge(&mut self, other: &FeedbackWindow) {
        if other.received == 0 {
            self.reports += other.reports;
            self.lost += other.lost;
            return;
        }
        if self.received == 0 {
            let (reports, lost) = (self.reports, self.lost);
            *self = *other;
            self.reports += reports;
            self.lost += lost;
            return;
        }
        let (a, b) = (self.first_arrival.expect("received"), other.first_arrival.expect("received"));
        let first = a.min(b);
        // Both sets of sums move to the earlier origin: t -> t + c.
        let shift = |w: &FeedbackWindow, origin: Time| {
            let c = w.first_arrival.expect("received").saturating_since(origin).as_secs_f64();
            let n = w.received as f64;
            (w.sum_t + n * c, w.sum_tt + 2.0 * c * w.sum_t + n * c * c, w.sum_td + c * w.delay_sum_s)
        };
        let (t1, tt1, td1) = shift(self, first);
        let (t2, tt2, td2) = shift(other, first);
        self.sum_t = t1 + t2;
        self.sum_tt = tt1 + tt2;
        self.sum_td = td1 + td2;
        self.first_arrival = Some(first);
        self.last_arrival = self.last_arrival.max(other.last_arrival);
        self.reports += other.reports;
        self.received += other.received;
        self.lost += other.lost;
        self.received_bytes += other.received_bytes;
        self.delay_sum_s += other.delay_sum_s;
        self.delay_min_s = self.delay_min_s.min(other.delay_min_s);
        self.delay_max_s = self.delay_max_s.max(other.delay_max_s);
    }

    /// Mean one-way delay (s); 0 without a received packet.
    pub fn mean_delay_s(&self) -> f64 {
        if self.received == 0 {
            0.0
        } else {
            self.delay_sum_s / self.received as f64
        }
    }

    /// Slope of the one-way delay against arrival time (s per s); 0 with fewer than two arrivals
    /// at distinct instants.
    pub fn delay_gradient(&self) -> f64 {
        let n = self.received as f64;
        let den = n * self.sum_tt - self.sum_t * self.sum_t;
        if self.received < 2 || den.abs() < 1e-18 {
            return 0.0;
        }
        (n * self.sum_td - self.sum_t * self.delay_sum_s) / den
    }

    /// Lost / (received + lost); 0 without a reported packet.
    pub fn loss_ratio(&self) -> f64 {
        let total = self.received + self.lost;
        if total == 0 {
            0.0
        } else {
            self.lost as f64 / total as f64
        }
    }
}

/// The state shared between the controller (inside the simulation) and its driver.
struct Shared {
    config: ExternalConfig,
    target: Bitrate,
    callback: Option<Box<dyn RateCallback>>,
    error: Option<String>,
    window: FeedbackWindow,
    /// The windows of the last calls of `take_window_over`.
    history: std::collections::VecDeque<FeedbackWindow>,
}

/// The driver's side of an [`External`] controller: install a callback, set the target, read
/// the feedback window and the first error.
#[derive(Clone)]
pub struct ExternalHandle(Arc<Mutex<Shared>>);

impl std::fmt::Debug for ExternalHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("ExternalHandle")
            .field("target", &s.target)
            .field("callback", &s.callback.is_some())
            .field("error", &s.error)
            .finish()
    }
}

impl ExternalHandle {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic while locked poisons it; the state stays consistent (plain fields), go on.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands every later feedback report to `callback`.
    pub fn set_callback(&self, callback: Box<dyn RateCallback>) {
        self.lock().callback = Some(callback);
    }

    /// Sets the target (clamped to the configured range); a rate that is not finite and above
    /// 0 is refused with a message.
    pub fn set_target_bps(&self, bps: f64) -> Result<Bitrate, String> {
        let mut s = self.lock();
        let r = s.checked(bps)?;
        s.target = r;
        Ok(r)
    }

    /// The target now.
    pub fn target(&self) -> Bitrate {
        self.lock().target
    }

    /// The reports accumulated since the last call, and a fresh window.
    pub fn take_window(&self) -> FeedbackWindow {
        std::mem::take(&mut self.lock().window)
    }

    /// The reports of the last `calls` calls of this method (this one included: the reports
    /// since the previous call and those of the `calls - 1` before), merged; `calls` of 1 is
    /// [`ExternalHandle::take_window`]. A learning loop calls it once per step to observe a
    /// window of several steps.
    pub fn take_window_over(&self, calls: usize) -> FeedbackWindow {
        let mut s = self.lock();
        let current = std::mem::take(&mut s.window);
        s.history.push_back(current);
        while s.history.len() > calls.max(1) {
            s.history.pop_front();
        }
        let mut merged = FeedbackWindow::default();
        for w in &s.history {
            merged.merge(w);
        }
        merged
    }

    /// The first error of the callback, if any.
    pub fn error(&self) -> Option<String> {
        self.lock().error.clone()
    }
}

impl Shared {
    fn checked(&self, bps: f64) -> Result<Bitrate, String> {
        if !(bps.is_finite() && bps > 0.0) {
            return Err(format!("target_bitrate: got {bps}, expected a finite number of bit/s above 0"));
        }
        Ok(Bitrate::from_bps_f64(bps).max(self.config.min_rate).min(self.config.max_rate))
    }
}

/// The controller the simulation runs: its decisions come through its [`ExternalHandle`].
#[derive(Debug)]
pub struct External {
    handle: ExternalHandle,
}

impl ExternalConfig {
    /// Builds the controller and the handle its driver keeps, once
    /// [`ExternalConfig::validate`] accepts the settings (an error naming the key otherwise).
    pub fn build(&self) -> Result<(External, ExternalHandle), String> {
        self.validate()?;
        let start = self.start_rate.max(self.min_rate).min(self.max_rate);
        let handle = ExternalHandle(Arc::new(Mutex::new(Shared {
            config: self.clone(),
            target: start,
            callback: None,
            error: None,
            window: FeedbackWindow::default(),
            history: std::collections::VecDeque::new(),
        })));
        Ok((External { handle: handle.clone() }, handle))
    }
}

impl External {
    /// Its handle.
    pub fn handle(&self) -> &ExternalHandle {
        &self.handle
    }
}

impl RateController for External {
    fn name(&self) -> &'static str {
        "external"
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        let mut guard = self.handle.lock();
        let s = &mut *guard;
        s.window.add(report);
        if s.error.is_some() {
            return;
        }
        let Some(cb) = s.callback.as_mut() else { return };
        match cb.on_feedback(now, report) {
            Ok(None) => {}
            Ok(Some(bps)) => match s.checked(bps) {
                Ok(r) => s.target = r,
                Err(e) => s.error = Some(e),
            },
            Err(e) => s.error = Some(e),
        }
    }

    fn target_bitrate(&self) -> Bitrate {
        self.handle.lock().target
    }

    fn pacing_rate(&self) -> Bitrate {
        let s = self.handle.lock();
        s.target.scaled(s.config.pacing_factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PacketResult, SentPacket};
    use lowlat_core::{Bytes, Duration};

    fn report(delays_ms: &[Option<u64>], spacing_ms: u64) -> FeedbackReport {
        let packets = delays_ms
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let send = Time::ZERO + Duration::from_millis(i as u64 * spacing_ms);
                PacketResult {
                    sent: SentPacket { seq: i as u64, size: Bytes(1000), send_time: send },
                    arrival: d.map(|d| send + Duration::from_millis(d)),
                    ecn: 0,
                }
            })
            .collect();
        FeedbackReport { packets, report_time: Time::ZERO + Duration::from_millis(500) }
    }

    struct Double(f64);
    impl RateCallback for Double {
        fn on_feedback(&mut self, _now: Time, _r: &FeedbackReport) -> Result<Option<f64>, String> {
            self.0 *= 2.0;
            Ok(Some(self.0))
        }
    }

    struct Fails(f64);
    impl RateCallback for Fails {
        fn on_feedback(&mut self, _now: Time, _r: &FeedbackReport) -> Result<Option<f64>, String> {
            Ok(Some(self.0))
        }
    }

    #[test]
    fn window_measures_rate_delay_trend_and_loss() {
        let mut w = FeedbackWindow::default();
        // Delay grows 1 ms per packet sent 10 ms apart: arrivals 11 ms apart, slope 1/11.
        w.add(&report(&[Some(50), Some(51), None, Some(53), Some(54)], 10));
        assert_eq!((w.received, w.lost, w.received_bytes), (4, 1, 4000));
        assert!((w.mean_delay_s() - 0.052).abs() < 1e-12);
        assert!((w.delay_gradient() - 1.0 / 11.0).abs() < 1e-9, "{}", w.delay_gradient());
        assert!((w.loss_ratio() - 0.2).abs() < 1e-12);
        assert_eq!((w.delay_min_s, w.delay_max_s), (0.05, 0.054));
    }

    #[test]
    fn merged_windows_equal_one_window_over_all_their_reports() {
        let reports: Vec<FeedbackReport> = (0..4u64)
            .map(|k| {
                let mut r = report(&[Some(50 + k), Some(52 + 2 * k), None, Some(51 + 3 * k)], 10);
                for p in &mut r.packets {
                    let shift = Duration::from_millis(100 * k);
                    p.sent.send_time += shift;
                    p.arrival = p.arrival.map(|a| a + shift);
                }
                r
            })
            .collect();
        let mut whole = FeedbackWindow::default();
        let mut merged = FeedbackWindow::default();
        for r in &reports {
            whole.add(r);
            let mut w = FeedbackWindow::default();
            w.add(r);
            merged.merge(&w);
        }
        assert_eq!(
            (merged.received, merged.lost, merged.received_bytes),
            (whole.received, whole.lost, whole.received_bytes)
        );
        assert!((merged.mean_delay_s() - whole.mean_delay_s()).abs() < 1e-12);
        assert!((merged.delay_gradient() - whole.delay_gradient()).abs() < 1e-9);
        assert_eq!((merged.delay_min_s, merged.delay_max_s), (whole.delay_min_s, whole.delay_max_s));

        // Over the last two calls: the last two reports only.
        let (mut cc, h) = ExternalConfig::default().build().unwrap();
        let mut two = FeedbackWindow::default();
        for (i, r) in reports.iter().enumerate() {
            cc.on_feedback(Time::ZERO, r);
            if i >= 2 {
                two.add(r);
            }
            let w = h.take_window_over(2);
            if i == 3 {
                assert_eq!((w.reports, w.received), (2, two.received));
                assert!((w.delay_gradient() - two.delay_gradient()).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn callback_sets_the_target_within_the_range() {
        let (mut cc, h) = ExternalConfig::default().build().unwrap();
        assert_eq!(cc.target_bitrate(), Bitrate::kbps(300));
        h.set_callback(Box::new(Double(300_000.0)));
        cc.on_feedback(Time::ZERO, &report(&[Some(50)], 10));
        assert_eq!(cc.target_bitrate(), Bitrate::kbps(600));
        assert_eq!(cc.pacing_rate(), Bitrate::kbps(900));
        for _ in 0..5 {
            cc.on_feedback(Time::ZERO, &report(&[Some(50)], 10));
        }
        assert_eq!(cc.target_bitrate(), Bitrate::kbps(1500), "clamped to max_rate");
        assert_eq!(h.take_window().reports, 6);
        assert_eq!(h.take_window().reports, 0, "a read starts a fresh window");
    }

    #[test]
    fn nan_or_negative_decision_is_an_error_and_the_target_stays() {
        for bad in [f64::NAN, -1.0, f64::INFINITY, 0.0] {
            let (mut cc, h) = ExternalConfig::default().build().unwrap();
            h.set_callback(Box::new(Fails(bad)));
            cc.on_feedback(Time::ZERO, &report(&[Some(50)], 10));
            let e = h.error().expect("an error");
            assert!(e.contains("target_bitrate") && e.contains("finite"), "{e}");
            assert_eq!(cc.target_bitrate(), Bitrate::kbps(300));
        }
        let (_, h) = ExternalConfig::default().build().unwrap();
        assert!(h.set_target_bps(f64::NAN).is_err());
        assert_eq!(h.set_target_bps(1e9).unwrap(), Bitrate::kbps(1500));
    }
}
