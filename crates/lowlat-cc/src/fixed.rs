//! A constant-rate "controller", for calibration runs and as the simplest example of the trait.

use crate::{FeedbackReport, RateController};
use lowlat_core::{Bitrate, Time};

/// Settings of [`FixedRate`].
#[derive(Clone, Debug, PartialEq)]
pub struct FixedRateConfig {
    /// The rate it always asks for.
    pub rate: Bitrate,
}

impl Default for FixedRateConfig {
    fn default() -> Self {
        FixedRateConfig { rate: Bitrate::mbps(1) }
    }
}

impl FixedRateConfig {
    /// Builds the controller.
    pub fn build(&self) -> FixedRate {
        FixedRate { rate: self.rate }
    }
}

/// Always the same rate, whatever the feedback says.
#[derive(Clone, Debug, PartialEq)]
pub struct FixedRate {
    rate: Bitrate,
}

impl RateController for FixedRate {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn on_feedback(&mut self, _now: Time, _report: &FeedbackReport) {}
    fn target_bitrate(&self) -> Bitrate {
        self.rate
    }
    fn pacing_rate(&self) -> Bitrate {
        self.rate
    }
}
