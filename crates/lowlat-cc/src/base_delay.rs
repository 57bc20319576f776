//! The base (minimum) one-way delay that delay-based controllers measure queueing against.

use lowlat_core::{Duration, Time};
use std::collections::VecDeque;

/// Minimum one-way delay over the last `buckets` intervals of `bucket` each (RFC 8298 §4.1.2.1 and
/// LEDBAT keep the minimum per minute for the last 10 minutes, so a route change or clock drift
/// ages out instead of pinning the base forever).
#[derive(Clone, Debug)]
pub struct BaseDelay {
    bucket: Duration,
    buckets: usize,
    /// `(bucket start, minimum delay in it)`, oldest first.
    history: VecDeque<(Time, Duration)>,
    /// Minimum over all buckets but the newest (recomputed only when a bucket closes, so a sample
    /// costs O(1)).
    closed_min: Option<Duration>,
}

impl BaseDelay {
    /// A tracker keeping `buckets` minima of `bucket` each.
    pub fn new(bucket: Duration, buckets: usize) -> BaseDelay {
        BaseDelay {
            bucket,
            buckets: buckets.max(1),
            history: VecDeque::with_capacity(buckets.max(1) + 1),
            closed_min: None,
        }
    }

    /// Adds a one-way delay sample taken at `now`; returns the queueing delay (sample - base).
    pub fn update(&mut self, now: Time, owd: Duration) -> Duration {
        match self.history.back_mut() {
            Some((start, min)) if now - *start < self.bucket => *min = (*min).min(owd),
            _ => {
                self.history.push_back((now, owd));
                if self.history.len() > self.buckets {
                    self.history.pop_front();
                }
                let n = self.history.len();
                self.closed_min = self.history.iter().take(n - 1).map(|h| h.1).min();
            }
        }
        owd - self.base().unwrap_or(owd)
    }

    /// The current base delay.
    pub fn base(&self) -> Option<Duration> {
        let newest = self.history.back().map(|h| h.1);
        match (self.closed_min, newest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queueing_delay_is_measured_against_the_minimum_and_old_minima_age_out() {
        let mut b = BaseDelay::new(Duration::from_secs(60), 10);
        assert_eq!(b.update(Time::ZERO, Duration::from_millis(50)), Duration::ZERO);
        assert_eq!(b.update(Time::from_secs(1), Duration::from_millis(80)), Duration::from_millis(30));
        // Eleven minutes later only samples of the last ten minutes count.
        for m in 1..=11 {
            b.update(Time::from_secs(60 * m), Duration::from_millis(70));
        }
        assert_eq!(b.base(), Some(Duration::from_millis(70)));
    }
}
