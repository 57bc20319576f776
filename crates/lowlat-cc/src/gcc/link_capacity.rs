//! The link-capacity estimate: libwebrtc's `LinkCapacityEstimator`
//! (goog_cc/link_capacity_estimator.cc; draft-ietf-rmcat-gcc-02 §5.5 "average max bit rate").
//!
//! On each over-use the measured throughput updates an EWMA of the capacity (weight
//! `capacity_smoothing`, 0.05) and a variance normalised by the estimate, both in **kbit/s** as
//! libwebrtc keeps them: var = (1 - a) var + a (est - sample)² / max(est, 1), clamped to
//! [`capacity_deviation_min`, `capacity_deviation_max`] (0.4, 2.5). The deviation is
//! sqrt(var x est) kbit/s, and the band `est ± capacity_band_std (3) x deviation` decides whether
//! AIMD is near capacity (additive increase) or far from it (multiplicative). At 1 Mbit/s with
//! the minimum variance the band is ±3 x sqrt(0.4 x 1000) = ±60 kbit/s; the same formula in bit/s
//! gives ±1.9 kbit/s, about 32x (sqrt(1000)) narrower.
//!
//! libwebrtc also lets a probe result update the estimate with weight 0.5 (`OnProbeRate`), but
//! nothing in goog_cc calls it; neither does this.

use super::GccConfig;

/// The estimate; `None` until the first over-use, and after a reset.
#[derive(Clone, Debug)]
pub(super) struct LinkCapacity {
    estimate_kbps: Option<f64>,
    /// Normalised variance (kbit/s).
    deviation_kbps: f64,
}

impl LinkCapacity {
    pub fn new(cfg: &GccConfig) -> LinkCapacity {
        LinkCapacity { estimate_kbps: None, deviation_kbps: cfg.capacity_deviation_min }
    }

    /// Whether an estimate exists (AIMD then increases additively).
    pub fn has_estimate(&self) -> bool {
        self.estimate_kbps.is_some()
    }

    /// The estimate, bit/s.
    pub fn estimate_bps(&self) -> Option<f64> {
        self.estimate_kbps.map(|e| e * 1e3)
    }

    /// Forgets the estimate (the variance is kept, as in libwebrtc).
    pub fn reset(&mut self) {
        self.estimate_kbps = None;
    }

    fn deviation_estimate_kbps(&self, est_kbps: f64) -> f64 {
        (self.deviation_kbps * est_kbps).sqrt()
    }

    /// Upper end of the band, bit/s (infinite without an estimate).
    pub fn upper_bound_bps(&self, cfg: &GccConfig) -> f64 {
        self.estimate_kbps
            .map_or(f64::INFINITY, |e| (e + cfg.capacity_band_std * self.deviation_estimate_kbps(e)) * 1e3)
    }

    /// Lower end of the band, bit/s (zero without an estimate).
    pub fn lower_bound_bps(&self, cfg: &GccConfig) -> f64 {
        self.estimate_kbps
            .map_or(0.0, |e| (e - cfg.capacity_band_std * self.deviation_estimate_kbps(e)).max(0.0) * 1e3)
    }

    /// The throughput measured at an over-use, bit/s.
    pub fn on_overuse(&mut self, cfg: &GccConfig, throughput_bps: f64) {
        let alpha = cfg.capacity_smoothing;
        let sample = throughput_bps / 1e3;
        let est = match self.estimate_kbps {
            None => sample,
            Some(e) => (1.0 - alpha) * e + alpha * sample,
        };
        let norm = est.max(1.0);
        let error = est - sample;
        self.deviation_kbps = ((1.0 - alpha) * self.deviation_kbps + alpha * error * error / norm)
            .clamp(cfg.capacity_deviation_min, cfg.capacity_deviation_max);
        self.estimate_kbps = Some(est);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_near_capacity_band_is_computed_in_kbit_per_s() {
        let cfg = GccConfig::default();
        let mut c = LinkCapacity::new(&cfg);
        assert!(!c.has_estimate());
        assert_eq!(c.upper_bound_bps(&cfg), f64::INFINITY);
        assert_eq!(c.lower_bound_bps(&cfg), 0.0);
        c.on_overuse(&cfg, 1e6);
        // First sample: estimate 1000 kbit/s, variance at its floor 0.4: deviation
        // sqrt(0.4 x 1000) = 20 kbit/s, band ±60 kbit/s (in bit/s it would be ±1.9 kbit/s).
        assert_eq!(c.estimate_bps(), Some(1e6));
        let half_band = 3.0 * (0.4f64 * 1000.0).sqrt() * 1e3;
        assert!((c.upper_bound_bps(&cfg) - (1e6 + half_band)).abs() < 1e-6);
        assert!((c.lower_bound_bps(&cfg) - (1e6 - half_band)).abs() < 1e-6);
        assert!((half_band - 60_000.0).abs() < 100.0, "±{half_band} bit/s");
        // A sample 200 kbit/s lower: est 990, var = 0.95 x 0.4 + 0.05 x 190² / 990 = 2.203 (kbit/s).
        c.on_overuse(&cfg, 800e3);
        let var = 0.95 * 0.4 + 0.05 * 190.0f64.powi(2) / 990.0;
        let up = (990.0 + 3.0 * (var * 990.0).sqrt()) * 1e3;
        assert!((c.upper_bound_bps(&cfg) - up).abs() < 1e-6, "{} vs {up}", c.upper_bound_bps(&cfg));
        // A far-off sample saturates the variance at 2.5.
        c.on_overuse(&cfg, 100e3);
        let est = 0.95 * 990.0 + 0.05 * 100.0;
        let up = (est + 3.0 * (2.5f64 * est).sqrt()) * 1e3;
        assert!((c.upper_bound_bps(&cfg) - up).abs() < 1e-6);
        c.reset();
        assert!(!c.has_estimate());
    }
}
