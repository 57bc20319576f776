//! A Rust caller that fills a controller's `Config` by hand and skips `validate()` gets the
//! same error from `build()`, naming the key, instead of a panic (GCC's `clamp` with
//! min_rate > max_rate) or a stuck run (SCReAM's rate_adjust_interval of 0).

use lowlat_cc::{
    ExternalConfig, FixedRateConfig, GccConfig, NadaConfig, SconeProConfig, ScreamConfig, ScreamV2Config,
};
use lowlat_core::{Bitrate, Duration};

fn refused<T>(r: Result<T, String>, key: &str) {
    match r {
        Ok(_) => panic!("{key}: built"),
        Err(e) => assert!(e.starts_with(&format!("{key}: ")), "{key}: {e}"),
    }
}

#[test]
fn build_refuses_what_validate_refuses() {
    let (lo, hi) = (Bitrate::kbps(500), Bitrate::kbps(100));
    refused(GccConfig { min_rate: lo, max_rate: hi, ..GccConfig::default() }.build(), "max_rate");
    refused(GccConfig { beta: -5.0, ..GccConfig::default() }.build(), "beta");
    refused(NadaConfig { rmin: lo, rmax: hi, ..NadaConfig::default() }.build(), "rmax");
    refused(
        ScreamConfig { rate_adjust_interval: Duration::ZERO, ..ScreamConfig::default() }.build(),
        "rate_adjust_interval",
    );
    refused(ScreamV2Config { beta_loss: f64::NAN, ..ScreamV2Config::default() }.build(), "beta_loss");
    refused(FixedRateConfig { rate: Bitrate::ZERO, ..FixedRateConfig::default() }.build(), "rate");
    refused(ExternalConfig { min_rate: lo, max_rate: hi, ..ExternalConfig::default() }.build(), "max_rate");
    let fallback = Box::new(FixedRateConfig::default().build().unwrap());
    refused(
        SconeProConfig { capacity_share: 2.0, ..SconeProConfig::default() }.build(fallback),
        "capacity_share",
    );
}

#[test]
fn the_defaults_build() {
    assert!(GccConfig::default().build().is_ok() && GccConfig::kalman().build().is_ok());
    assert!(NadaConfig::default().build().is_ok());
    assert!(ScreamConfig::default().build().is_ok() && ScreamV2Config::default().build().is_ok());
    assert!(FixedRateConfig::default().build().is_ok() && ExternalConfig::default().build().is_ok());
}
