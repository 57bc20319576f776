//! The arrival-time Kalman filter of draft-ietf-rmcat-gcc-02 §5.3 (libwebrtc's older
//! `OveruseEstimator`), offered as [`super::DelayEstimator::Kalman`].
//!
//! It estimates the queuing-delay offset m_hat from each group's delay variation d:
//! z = d - m_hat; the measurement noise variance follows an EWMA of z² (z clamped to 3 sigma,
//! smoothing `(1 - chi)^(30 / (1000 f_max))` with f_max the highest group rate of the last 60
//! samples, floored at 1); gain k = (e + q) / (var + e + q); m_hat += k z; e = (1 - k)(e + q).
//! The detector compares `min(samples, 60) x m_hat` with its threshold, as libwebrtc did.
//!
//! Difference from libwebrtc's `OveruseEstimator`: its state is two-dimensional (the slope on the
//! group size difference as well); the draft's scalar filter is kept here.

use super::trendline::Trend;
use super::GccConfig;
use std::collections::VecDeque;

/// Inter-group arrival deltas kept for f_max (libwebrtc's `kMinFramePeriodHistoryLength`).
const TS_DELTA_HISTORY: usize = 60;

/// The draft's Kalman filter (units: ms).
#[derive(Clone, Debug)]
pub(super) struct Kalman {
    m_hat: f64,
    e: f64,
    var_noise: f64,
    samples: u32,
    /// Recent inter-group arrival deltas (ms), for f_max.
    recent_ts_deltas: VecDeque<f64>,
}

impl Kalman {
    pub fn new(cfg: &GccConfig) -> Kalman {
        Kalman {
            m_hat: 0.0,
            e: cfg.kalman_e0,
            var_noise: 50.0,
            samples: 0,
            recent_ts_deltas: VecDeque::with_capacity(TS_DELTA_HISTORY),
        }
    }

    /// Adds one group's delay variation `d_ms` (inter-group arrival delta `arrival_delta_ms`).
    pub fn update(&mut self, cfg: &GccConfig, d_ms: f64, arrival_delta_ms: f64) -> Option<Trend> {
        self.samples = (self.samples + 1).min(1000);
        if self.recent_ts_deltas.len() == TS_DELTA_HISTORY {
            self.recent_ts_deltas.pop_front();
        }
        self.recent_ts_deltas.push_back(arrival_delta_ms.max(1e-3));
        let f_max = 1000.0 / self.recent_ts_deltas.iter().copied().fold(f64::INFINITY, f64::min);
        let z = d_ms - self.m_hat;
        // Outliers are clamped to 3 sigma before they update the noise estimate.
        let sigma = self.var_noise.sqrt();
        let z_clamped = z.clamp(-3.0 * sigma, 3.0 * sigma);
        let alpha = (1.0 - cfg.kalman_chi).powf(30.0 / (1000.0 * f_max));
        self.var_noise = (alpha * self.var_noise + (1.0 - alpha) * z_clamped * z_clamped).max(1.0);
        let k = (self.e + cfg.kalman_q) / (self.var_noise + self.e + cfg.kalman_q);
        self.m_hat += z * k;
        self.e = (1.0 - k) * (self.e + cfg.kalman_q);
        (self.samples >= 2).then(|| Trend {
            raw: self.m_hat,
            modified: f64::from(self.samples.min(cfg.trendline_sample_cap)) * self.m_hat,
        })
    }
}
