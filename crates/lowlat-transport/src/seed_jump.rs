//! The simpler start-ups from a saved path that Careful Resume is compared with: a wrapper that
//! sets the window once, at the first RTT sample.
//!
//! - [`JumpRule::ZeroRttBdp`]: the seed talk's 0-RTT-BDP (draft-kuhn-quic-0rtt-bdp): the window
//!   jumps straight to the saved BDP (saved_cwnd), no half jump, no RTT check, no retreat; slow
//!   start goes on from there.
//! - [`JumpRule::Picoquic`]: picoquic's rule: the seed is taken only if the RTT is within a
//!   quarter of the saved one (|saved_rtt - rtt| <= rtt / 4); then cwnd = ssthresh = seed
//!   (NewReno, CUBIC: slow start ends at the seed).

use crate::path_memory::SavedPath;
use crate::rtt::RttEstimator;
use crate::{RateSample, WindowController};
use lowlat_core::{Bitrate, Time};

/// Which jump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JumpRule {
    /// Straight to the saved BDP.
    ZeroRttBdp,
    /// picoquic's: the seed if the RTT is within a quarter, as window and threshold.
    Picoquic,
}

/// A controller whose window is seeded once from a saved path.
#[derive(Debug)]
pub struct SeedJump {
    rule: JumpRule,
    inner: Box<dyn WindowController>,
    saved: Option<SavedPath>,
    /// `None` until the first RTT sample; then whether the seed was taken.
    jumped: Option<bool>,
}

impl SeedJump {
    /// Wraps `inner` with `rule` and the saved set `saved` (`None`: the controller alone).
    pub fn new(rule: JumpRule, inner: Box<dyn WindowController>, saved: Option<SavedPath>) -> SeedJump {
        let jumped = if saved.is_none() { Some(false) } else { None };
        SeedJump { rule, inner, saved, jumped }
    }

    /// Whether the seed was taken (`None`: not decided yet).
    pub fn jumped(&self) -> Option<bool> {
        self.jumped
    }

    fn decide(&mut self, now: Time, rtt: &RttEstimator) {
        let Some(saved) = self.saved.filter(|s| s.is_valid(now)) else {
            self.jumped = Some(false);
            return;
        };
        let seed = saved.cwnd.max(self.inner.window());
        let take = match self.rule {
            JumpRule::ZeroRttBdp => {
                self.inner.set_window(now, seed, None);
                true
            }
            JumpRule::Picoquic => {
                let (r, s) = (rtt.latest().as_nanos(), saved.rtt.as_nanos());
                let ok = r.abs_diff(s) <= r / 4;
                if ok {
                    // picoquic (cubic.c, seed_cwin): cwnd = max(cwnd, seed), ssthresh = seed.
                    self.inner.set_window(now, seed, Some(saved.cwnd));
                }
                ok
            }
        };
        self.jumped = Some(take);
    }
}

impl WindowController for SeedJump {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn on_sent(&mut self, now: Time, bytes: u64, in_flight: u64) {
        self.inner.on_sent(now, bytes, in_flight);
    }

    fn on_ack(&mut self, now: Time, sent: Time, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
        if self.jumped.is_none() && rtt.has_sample() {
            self.decide(now, rtt);
        }
    }

    fn on_rate_sample(&mut self, now: Time, sample: &RateSample, rtt: &RttEstimator) -> bool {
        self.inner.on_rate_sample(now, sample, rtt);
        true
    }

    fn on_end_acks(&mut self, now: Time, in_flight: u64, app_limited: bool, largest_acked: u64) {
        self.inner.on_end_acks(now, in_flight, app_limited, largest_acked);
    }

    fn on_congestion_event(&mut self, now: Time, sent: Time, persistent: bool, lost_bytes: u64) {
        if self.jumped.is_none() {
            self.jumped = Some(false); // a loss before the first sample: no seed
        }
        self.inner.on_congestion_event(now, sent, persistent, lost_bytes);
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn mode(&self) -> &'static str {
        match self.jumped {
            None => "waiting",
            Some(true) => "jumped",
            Some(false) => "no-jump",
        }
    }

    fn send_rate(&self, rtt: &RttEstimator) -> Option<Bitrate> {
        self.inner.send_rate(rtt)
    }

    /// A controller that paces by its own model (BBR) would send the seeded window at the rate of
    /// its initial estimate: while it is still starting up, the seed's rate (saved window per
    /// smoothed RTT) is the floor of its pacing rate, as picoquic's BBR does with its BDP seed
    /// (bbr.c). Controllers without a pacing rate of their own are paced from the window anyway.
    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<Bitrate> {
        let inner = self.inner.pacing_rate(rtt);
        match (self.jumped, self.saved, inner) {
            (Some(true), Some(s), Some(r)) if self.inner.in_slow_start() && rtt.has_sample() => {
                let seed = s.cwnd as f64 * 8.0 / rtt.smoothed().as_secs_f64().max(1e-6);
                Some(Bitrate::from_bps_f64(r.as_bps_f64().max(seed)))
            }
            _ => inner,
        }
    }

    fn set_window(&mut self, now: Time, cwnd: u64, ssthresh: Option<u64>) {
        self.inner.set_window(now, cwnd, ssthresh);
    }

    fn in_slow_start(&self) -> bool {
        self.inner.in_slow_start()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CubicConfig, NewRenoConfig};
    use lowlat_core::Duration;

    fn rtt_of(ms: u64) -> RttEstimator {
        let mut r = RttEstimator::default();
        r.update(Time::ZERO, Duration::from_millis(ms), Duration::ZERO);
        r
    }

    fn saved(bytes: u64, rtt_ms: u64) -> Option<SavedPath> {
        Some(SavedPath {
            cwnd: bytes,
            rtt: Duration::from_millis(rtt_ms),
            saved_at: Time::ZERO,
            lifetime: Duration::from_secs(60),
        })
    }

    #[test]
    fn zero_rtt_bdp_jumps_to_the_whole_saved_window_whatever_the_rtt() {
        let inner = Box::new(NewRenoConfig::default().build());
        let mut j = SeedJump::new(JumpRule::ZeroRttBdp, inner, saved(1_000_000, 600));
        j.on_ack(Time::from_millis(300), Time::ZERO, 1200, false, &rtt_of(300));
        assert_eq!(j.jumped(), Some(true));
        // 1 MB, then slow start goes on: one more acknowledged packet adds a packet.
        assert_eq!(j.window(), 1_000_000);
        j.on_ack(Time::from_millis(310), Time::from_millis(5), 1200, false, &rtt_of(300));
        assert_eq!(j.window(), 1_001_200);
        assert!(j.in_slow_start());
    }

    #[test]
    fn picoquic_takes_the_seed_within_a_quarter_of_the_rtt_as_window_and_threshold() {
        let cubic = || Box::new(CubicConfig::default().build());
        let mut j = SeedJump::new(JumpRule::Picoquic, cubic(), saved(1_000_000, 600));
        j.on_ack(Time::from_millis(650), Time::ZERO, 1200, false, &rtt_of(650));
        assert_eq!((j.jumped(), j.window()), (Some(true), 1_000_000));
        assert!(!j.in_slow_start(), "ssthresh = seed");
        // 600 ms saved, 900 ms now: off by more than a quarter of 900 ms.
        let mut j = SeedJump::new(JumpRule::Picoquic, cubic(), saved(1_000_000, 600));
        j.on_ack(Time::from_millis(900), Time::ZERO, 1200, false, &rtt_of(900));
        assert_eq!(j.jumped(), Some(false));
        assert!(j.window() < 20_000);
        // Expired.
        let mut j = SeedJump::new(JumpRule::ZeroRttBdp, cubic(), saved(1_000_000, 600));
        j.on_ack(Time::from_secs(61), Time::from_secs(60), 1200, false, &rtt_of(600));
        assert_eq!(j.jumped(), Some(false));
    }

    #[test]
    fn a_model_based_controller_paces_a_jump_at_least_at_the_seed_rate_while_starting_up() {
        let bbr = Box::new(crate::BbrConfig::default().build());
        let mut j = SeedJump::new(JumpRule::ZeroRttBdp, bbr, saved(1_000_000, 600));
        let rtt = rtt_of(600);
        j.on_ack(Time::from_millis(600), Time::ZERO, 1200, false, &rtt);
        assert_eq!(j.window(), 1_000_000);
        // BBR's own estimate after one packet per RTT: 16 kbit/s x its startup gain.
        let sample = RateSample {
            delivery_rate: Some(Bitrate::from_bps_f64(16_000.0)),
            delivered: 1200,
            interval: Duration::from_millis(600),
            prior_delivered: 0,
            total_delivered: 1200,
            is_app_limited: false,
            newly_acked: 1200,
            newly_lost_packets: 0,
            rtt: Duration::from_millis(600),
            in_flight: 0,
        };
        j.on_rate_sample(Time::from_millis(600), &sample, &rtt);
        let r = j.pacing_rate(&rtt).expect("BBR paces").as_bps_f64();
        assert!((r - 1e6 * 8.0 / 0.6).abs() < 1.0, "{r}");
    }
}
