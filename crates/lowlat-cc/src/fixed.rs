//! A constant-rate "controller", for calibration runs and as the simplest example of the trait.

use crate::{FeedbackReport, RateController};
use lowlat_core::{Bitrate, Time};

/// Settings of [`FixedRate`].
#[derive(Clone, Debug, PartialEq)]
pub struct FixedRateConfig {
    /// The rate it always asks for.
    pub rate: Bitrate,
    /// Pacing rate / target: headroom so that packet headers and frame-size noise do not build the
    /// sender queue (1.5, SCReAM v2's PACKET_PACING_HEADROOM; libwebrtc paces at 2.5x).
    pub pacing_factor: f64,
}

impl Default for FixedRateConfig {
    fn default() -> Self {
        FixedRateConfig { rate: Bitrate::mbps(1), pacing_factor: 1.5 }
    }
}

crate::tunable!(FixedRateConfig { rate, pacing_factor });

impl FixedRateConfig {
    /// Checks the constants: a rate above zero, a pacing factor above zero; the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        use crate::tunable::bounds::{MAX_FACTOR, MAX_RATE};
        use crate::tunable::range::above_up_to;
        above_up_to("rate", self.rate, Bitrate::ZERO, MAX_RATE)?;
        above_up_to("pacing_factor", self.pacing_factor, 0.0, MAX_FACTOR)
    }

    /// Builds the controller once [`FixedRateConfig::validate`] accepts the constants (a caller
    /// that set fields by hand gets their error here, not a panic later).
    pub fn build(&self) -> Result<FixedRate, String> {
        self.validate()?;
        Ok(FixedRate { rate: self.rate, pacing: self.rate.scaled(self.pacing_factor) })
    }
}

/// Always the same rate, whatever the feedback says.
#[derive(Clone, Debug, PartialEq)]
pub struct FixedRate {
    rate: Bitrate,
    pacing: Bitrate,
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
        self.pacing
    }
}
