//! Round-trip time estimation (RFC 9002 §5).

use lowlat_core::{Duration, Time};

/// RFC 9002 §6.2.2: the RTT assumed before the first sample.
pub const INITIAL_RTT: Duration = Duration::from_millis(333);

/// Smoothed RTT, its variation and the minimum, from ACK samples.
#[derive(Clone, Copy, Debug)]
pub struct RttEstimator {
    latest: Duration,
    smoothed: Option<Duration>,
    var: Duration,
    min: Duration,
    /// When the minimum was last lowered (for controllers that expire it).
    min_at: Time,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator {
            latest: INITIAL_RTT,
            smoothed: None,
            var: Duration(INITIAL_RTT.as_nanos() / 2),
            min: INITIAL_RTT,
            min_at: Time::ZERO,
        }
    }
}

impl RttEstimator {
    /// Adds a sample (RFC 9002 §5.3): the ACK delay is subtracted only where it leaves the
    /// sample above the minimum.
    #[inline(always)]
    pub fn update(&mut self, now: Time, latest: Duration, ack_delay: Duration) {
        self.latest = latest;
        if self.smoothed.is_none() || latest < self.min {
            self.min = latest;
            self.min_at = now;
        }
        let Some(smoothed) = self.smoothed else {
            self.smoothed = Some(latest);
            self.var = Duration(latest.as_nanos() / 2);
            return;
        };
        let adjusted = if latest >= self.min + ack_delay { latest - ack_delay } else { latest };
        let diff = smoothed.as_nanos().abs_diff(adjusted.as_nanos());
        self.var = Duration((3 * self.var.as_nanos() + diff) / 4);
        self.smoothed = Some(Duration((7 * smoothed.as_nanos() + adjusted.as_nanos()) / 8));
    }

    /// The smoothed RTT (the initial RTT before any sample).
    pub fn smoothed(&self) -> Duration {
        self.smoothed.unwrap_or(INITIAL_RTT)
    }

    /// The RTT variation.
    pub fn var(&self) -> Duration {
        self.var
    }

    /// The latest sample.
    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// The minimum sample.
    pub fn min(&self) -> Duration {
        self.min
    }

    /// Whether any sample arrived.
    pub fn has_sample(&self) -> bool {
        self.smoothed.is_some()
    }

    /// RFC 9002 §6.2.1: smoothed + max(4 x var, 1 ms) + max_ack_delay.
    pub fn pto_base(&self, max_ack_delay: Duration) -> Duration {
        self.smoothed() + Duration(4 * self.var.as_nanos()).max(Duration::from_millis(1)) + max_ack_delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc_9002_smoothing() {
        let mut r = RttEstimator::default();
        r.update(Time::ZERO, Duration::from_millis(100), Duration::ZERO);
        assert_eq!((r.smoothed(), r.var()), (Duration::from_millis(100), Duration::from_millis(50)));
        r.update(Time::ZERO, Duration::from_millis(120), Duration::from_millis(10));
        // adjusted = 110 ms: var = 3/4 x 50 + 1/4 x 10 = 40 ms; smoothed = 7/8 x 100 + 1/8 x 110.
        assert_eq!(r.var(), Duration::from_millis(40));
        assert_eq!(r.smoothed(), Duration::from_micros(101_250));
        assert_eq!(r.min(), Duration::from_millis(100));
        // An ACK delay that would take the sample below the minimum is ignored.
        r.update(Time::ZERO, Duration::from_millis(105), Duration::from_millis(20));
        assert_eq!(r.latest(), Duration::from_millis(105));
    }
}
