//! Jitter without reordering (RFC 8867 §4 / RFC 8868 §4).
//!
//! Each packet n gets an extra delay z(n) drawn from a Gaussian with mean 0 and the configured
//! standard deviation, truncated at ±3 standard deviations (redrawn outside). Its delivery time is
//! then pushed back, if needed, so that it is never earlier than the previous packet's delivery plus
//! that packet's serialisation time: packets are never reordered and never arrive closer together
//! than the link could have sent them. A packet is also never delivered before it finished
//! transmission (z cannot make the total one-way delay negative).

use lowlat_core::rng::Rng;
use lowlat_core::{Duration, Time};
use rand_distr::{Distribution, StandardNormal};

/// How many standard deviations the Gaussian is truncated at (RFC 8867: 3).
pub const TRUNCATION_SIGMAS: f64 = 3.0;

/// The jitter state of one link.
#[derive(Clone, Debug)]
pub struct NoReorderJitter {
    sigma_ns: f64,
    rng: Rng,
    last_delivery: Time,
    last_serialisation: Duration,
}

impl NoReorderJitter {
    /// Jitter of standard deviation `sigma`, drawing from `rng`.
    pub fn new(sigma: Duration, rng: Rng) -> NoReorderJitter {
        NoReorderJitter {
            sigma_ns: sigma.as_nanos() as f64,
            rng,
            last_delivery: Time::ZERO,
            last_serialisation: Duration::ZERO,
        }
    }

    /// The configured standard deviation.
    pub fn sigma(&self) -> Duration {
        Duration(self.sigma_ns as u64)
    }

    /// One draw of z(n), nanoseconds, in [-3 sigma, 3 sigma].
    fn draw(&mut self) -> f64 {
        loop {
            let z: f64 = StandardNormal.sample(&mut self.rng);
            if z.abs() <= TRUNCATION_SIGMAS {
                return z * self.sigma_ns;
            }
        }
    }

    /// Delivery time of a packet that finished transmission at `tx_end` on a link with propagation
    /// delay `delay`, whose serialisation took `serialisation`.
    pub fn delivery_time(&mut self, tx_end: Time, delay: Duration, serialisation: Duration) -> Time {
        let base = (tx_end + delay).as_nanos() as f64;
        let jittered = (base + self.draw()).round().max(tx_end.as_nanos() as f64);
        let earliest = self.last_delivery + self.last_serialisation;
        let t = Time(jittered as u64).max(earliest);
        self.last_delivery = t;
        self.last_serialisation = serialisation;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::rng::stream;

    #[test]
    fn never_reorders_and_keeps_the_configured_deviation() {
        let sigma = Duration::from_millis(5);
        let mut j = NoReorderJitter::new(sigma, stream(1, "jitter"));
        let delay = Duration::from_millis(50);
        let ser = Duration::from_micros(12); // 1500 B at 1 Gbit/s
        let gap = Duration::from_millis(20); // sparse traffic: the order constraint rarely binds
        let n = 200_000u64;
        let (mut sum, mut sum2) = (0.0, 0.0);
        let mut prev = Time::ZERO;
        for i in 0..n {
            let tx_end = Time::ZERO + gap * i + ser;
            let t = j.delivery_time(tx_end, delay, ser);
            assert!(t >= prev, "reordered at packet {i}");
            prev = t;
            let extra = (t.as_nanos() as f64) - ((tx_end + delay).as_nanos() as f64);
            assert!(extra.abs() <= 3.0 * 5e6 + 1.0 || extra > 0.0);
            sum += extra;
            sum2 += extra * extra;
        }
        let mean = sum / n as f64;
        let std = (sum2 / n as f64 - mean * mean).sqrt();
        // A Gaussian truncated at 3 sigma has std 0.9866 sigma.
        let expected = 0.9866 * 5e6;
        assert!((std - expected).abs() < 0.02 * expected, "std {std} ns, expected {expected}");
        assert!(mean.abs() < 0.05e6, "mean {mean} ns");
    }

    #[test]
    fn dense_traffic_is_spaced_by_serialisation_time() {
        let mut j = NoReorderJitter::new(Duration::from_millis(30), stream(2, "jitter"));
        let ser = Duration::from_micros(120);
        let mut prev: Option<Time> = None;
        for i in 0..10_000u64 {
            let t = j.delivery_time(Time::ZERO + ser * (i + 1), Duration::from_millis(50), ser);
            if let Some(p) = prev {
                assert!(t >= p + ser, "packet {i} closer than serialisation time");
            }
            prev = Some(t);
        }
    }
}
