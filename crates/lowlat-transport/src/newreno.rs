//! NewReno as RFC 9002 §7 specifies it: slow start, congestion avoidance by one maximum datagram
//! per window, and one halving per recovery period.

use crate::rtt::RttEstimator;
use crate::{Reads, WindowController};
use lowlat_core::{Bytes, Time};

/// NewReno's constants (RFC 9002 §7.2 and Appendix B.1).
#[derive(Clone, Debug, PartialEq)]
pub struct NewRenoConfig {
    /// max_datagram_size (1200 B).
    pub max_datagram_size: Bytes,
    /// kInitialWindow: min(10 x max_datagram_size, max(14720, 2 x max_datagram_size)).
    pub initial_window: Bytes,
    /// kMinimumWindow: 2 x max_datagram_size.
    pub minimum_window: Bytes,
    /// kLossReductionFactor (0.5).
    pub loss_reduction_factor: f64,
}

impl Default for NewRenoConfig {
    fn default() -> Self {
        NewRenoConfig::for_datagram(Bytes(1200))
    }
}

impl NewRenoConfig {
    /// The RFC's values for datagrams of `size`.
    pub fn for_datagram(size: Bytes) -> NewRenoConfig {
        NewRenoConfig {
            max_datagram_size: size,
            initial_window: Bytes((10 * size.0).min(14_720u64.max(2 * size.0))),
            minimum_window: Bytes(2 * size.0),
            loss_reduction_factor: 0.5,
        }
    }

    /// Builds the controller.
    pub fn build(&self) -> NewReno {
        NewReno {
            cfg: self.clone(),
            window: self.initial_window.0,
            ssthresh: u64::MAX,
            recovery_start: None,
            acked_in_ca: 0,
        }
    }
}

/// The NewReno controller.
#[derive(Clone, Debug)]
pub struct NewReno {
    cfg: NewRenoConfig,
    window: u64,
    ssthresh: u64,
    recovery_start: Option<Time>,
    /// Bytes acknowledged towards the next one-datagram increase in congestion avoidance.
    acked_in_ca: u64,
}

impl NewReno {
    /// The slow-start threshold (`u64::MAX` until the first loss).
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
}

impl WindowController for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn reads(&self) -> Reads {
        Reads { sent: false, rate_samples: false, delivery_rate: false, ..Reads::ALL }
    }

    fn on_ack(&mut self, _now: Time, sent: Time, bytes: u64, app_limited: bool, _rtt: &RttEstimator) {
        // Packets sent before the recovery period began do not grow the window (§7.3.2).
        if app_limited || self.recovery_start.is_some_and(|r| sent <= r) {
            return;
        }
        if self.window < self.ssthresh {
            self.window += bytes;
        } else {
            self.acked_in_ca += bytes;
            if self.acked_in_ca >= self.window {
                self.acked_in_ca -= self.window;
                self.window += self.cfg.max_datagram_size.0;
            }
        }
    }

    fn on_congestion_event(&mut self, now: Time, sent: Time, persistent: bool, _lost_bytes: u64) {
        if self.recovery_start.is_some_and(|r| sent <= r) {
            return; // already reacted to this window
        }
        self.recovery_start = Some(now);
        self.ssthresh =
            ((self.window as f64 * self.cfg.loss_reduction_factor) as u64).max(self.cfg.minimum_window.0);
        self.window = if persistent { self.cfg.minimum_window.0 } else { self.ssthresh };
        self.acked_in_ca = 0;
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn set_window(&mut self, now: Time, cwnd: u64, ssthresh: Option<u64>) {
        self.window = cwnd.max(self.cfg.minimum_window.0);
        if let Some(s) = ssthresh {
            self.ssthresh = s.max(self.cfg.minimum_window.0);
            self.recovery_start = Some(now);
            self.acked_in_ca = 0;
        }
    }

    fn in_slow_start(&self) -> bool {
        self.window < self.ssthresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_avoidance_and_one_halving_per_recovery() {
        let mut r = NewRenoConfig::default().build();
        let rtt = RttEstimator::default();
        assert_eq!(r.window(), 12_000);
        r.on_ack(Time::from_millis(100), Time::ZERO, 1200, false, &rtt);
        assert_eq!(r.window(), 13_200);
        r.on_congestion_event(Time::from_millis(200), Time::from_millis(150), false, 1200);
        assert_eq!((r.window(), r.ssthresh()), (6600, 6600));
        // A second loss from the same window: no second halving.
        r.on_congestion_event(Time::from_millis(210), Time::from_millis(160), false, 1200);
        assert_eq!(r.window(), 6600);
        // Congestion avoidance: one datagram per window's worth of acknowledged bytes.
        for _ in 0..5 {
            r.on_ack(Time::from_millis(400), Time::from_millis(300), 1200, false, &rtt);
        }
        assert_eq!(r.window(), 6600);
        r.on_ack(Time::from_millis(400), Time::from_millis(300), 1200, false, &rtt);
        assert_eq!(r.window(), 7800);
    }
}
