//! Setting a controller's constants by name, so a scenario can override any of them
//! (`cc_params = { beta = 0.9, qdelay_target_lo = "80 ms" }`), and checking them.
//!
//! Each config states its valid ranges in an inherent `validate()` beside its fields, written with
//! the [`range`] checks and the shared [`bounds`]; [`Tunable::check`] (which the [`tunable!`]
//! macro wires to it, so a tunable config without `validate` does not compile) is what the
//! scenario parser calls. Ranges live in code rather than as metadata in the macro because most
//! of the rules that matter are relations between fields (min <= start <= max, ordered
//! thresholds, DELTA <= LOGWIN), which a per-field annotation cannot express: one function per
//! config keeps a field's range and its relations in one place.

use lowlat_core::{Bitrate, Bytes, Duration};

/// A configuration whose fields can be set by name from text.
pub trait Tunable {
    /// The names [`Tunable::set`] accepts.
    fn keys() -> &'static [&'static str];

    /// Sets field `key` from `value` (`"0.9"`, `"80 ms"`, `"1 Mbit/s"`, `"3000 B"`, `"true"`).
    fn set(&mut self, key: &str, value: &str) -> Result<(), String>;

    /// Checks every field against its valid range and the relations between fields (the
    /// config's own `validate`, beside its fields); the error starts with the key:
    /// `rmax: got "100 kbit/s", expected >= rmin ("150 kbit/s")`.
    fn check(&self) -> Result<(), String>;
}

/// Parses one field's value from text.
pub trait FieldValue: Sized {
    /// What the text should look like, for error messages.
    const EXPECTED: &'static str;
    /// Parses.
    fn parse_value(s: &str) -> Option<Self>;
}

impl FieldValue for f64 {
    const EXPECTED: &'static str = "a finite number";
    fn parse_value(s: &str) -> Option<f64> {
        s.trim().parse().ok().filter(|v: &f64| v.is_finite())
    }
}

/// Types that parse with `str::parse` after trimming.
macro_rules! parsed {
    ($($t:ty => $expected:literal),* $(,)?) => {$(
        impl FieldValue for $t {
            const EXPECTED: &'static str = $expected;
            fn parse_value(s: &str) -> Option<$t> {
                s.trim().parse().ok()
            }
        }
    )*};
}

parsed!(
    u32 => "a non-negative integer",
    u64 => "a non-negative integer",
    usize => "a non-negative integer",
    bool => "true or false",
);

impl FieldValue for String {
    const EXPECTED: &'static str = "a name";
    fn parse_value(s: &str) -> Option<String> {
        Some(s.trim().to_string()).filter(|s| !s.is_empty())
    }
}

impl FieldValue for Duration {
    const EXPECTED: &'static str = "a duration such as \"50 ms\"";
    fn parse_value(s: &str) -> Option<Duration> {
        s.parse().ok()
    }
}

impl FieldValue for Bitrate {
    const EXPECTED: &'static str = "a bitrate such as \"1 Mbit/s\"";
    fn parse_value(s: &str) -> Option<Bitrate> {
        s.parse().ok()
    }
}

impl FieldValue for Bytes {
    const EXPECTED: &'static str = "a size such as \"1000 B\"";
    fn parse_value(s: &str) -> Option<Bytes> {
        s.parse().ok()
    }
}

/// Implements [`Tunable`] for a config struct over the listed fields.
#[macro_export]
macro_rules! tunable {
    ($ty:ty { $($field:ident),* $(,)? }) => {
        impl $crate::tunable::Tunable for $ty {
            fn keys() -> &'static [&'static str] {
                &[$(stringify!($field)),*]
            }

            fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
                match key {
                    $(stringify!($field) => {
                        self.$field = $crate::tunable::parse_field(&self.$field, value)?;
                        Ok(())
                    })*
                    _ => Err(format!(
                        "unknown constant {key:?}, expected one of {}",
                        <Self as $crate::tunable::Tunable>::keys().join(", ")
                    )),
                }
            }

            fn check(&self) -> Result<(), String> {
                // The config's inherent `validate` (a compile error if it has none).
                <$ty>::validate(self)
            }
        }
    };
}

/// Parses `value` as the type of `_current` (the macro's helper).
pub fn parse_field<T: FieldValue>(_current: &T, value: &str) -> Result<T, String> {
    T::parse_value(value).ok_or_else(|| format!("got {value:?}, expected {}", T::EXPECTED))
}

/// How a value is shown in a range error: numbers bare, quantities quoted as a scenario writes them.
pub trait Shown {
    /// The value as text.
    fn shown(&self) -> String;
}

macro_rules! shown_bare {
    ($($t:ty),*) => {$(impl Shown for $t { fn shown(&self) -> String { self.to_string() } })*};
}
shown_bare!(f64, u32, u64, usize);

macro_rules! shown_quoted {
    ($($t:ty),*) => {$(impl Shown for $t { fn shown(&self) -> String { format!("{:?}", self.to_string()) } })*};
}
shown_quoted!(Duration, Bitrate, Bytes);

/// The range checks the configs' `validate` methods are written with. Each returns
/// `key: got VALUE, expected RANGE`; a NaN fails every check (the conditions are written so).
pub mod range {
    use super::Shown;

    fn fail<T: Shown>(key: &str, v: T, expected: String) -> Result<(), String> {
        Err(format!("{key}: got {}, expected {expected}", v.shown()))
    }

    /// `lo <= v <= hi`.
    pub fn within<T: Shown + PartialOrd>(key: &str, v: T, lo: T, hi: T) -> Result<(), String> {
        if lo <= v && v <= hi {
            Ok(())
        } else {
            let e = format!("{} to {}", lo.shown(), hi.shown());
            fail(key, v, e)
        }
    }

    /// `lo < v <= hi`.
    pub fn above_up_to<T: Shown + PartialOrd>(key: &str, v: T, lo: T, hi: T) -> Result<(), String> {
        if lo < v && v <= hi {
            Ok(())
        } else {
            let e = format!("> {} and <= {}", lo.shown(), hi.shown());
            fail(key, v, e)
        }
    }

    /// `lo < v < hi`.
    pub fn between<T: Shown + PartialOrd>(key: &str, v: T, lo: T, hi: T) -> Result<(), String> {
        if lo < v && v < hi {
            Ok(())
        } else {
            let e = format!("> {} and < {}", lo.shown(), hi.shown());
            fail(key, v, e)
        }
    }

    /// `v >= other`, another field: `expected >= other_key (OTHER)`.
    pub fn not_below<T: Shown + PartialOrd>(
        key: &str,
        v: T,
        other_key: &str,
        other: T,
    ) -> Result<(), String> {
        if v >= other {
            Ok(())
        } else {
            let e = format!(">= {other_key} ({})", other.shown());
            fail(key, v, e)
        }
    }

    /// `v > other`, another field.
    pub fn above<T: Shown + PartialOrd>(key: &str, v: T, other_key: &str, other: T) -> Result<(), String> {
        if v > other {
            Ok(())
        } else {
            let e = format!("> {other_key} ({})", other.shown());
            fail(key, v, e)
        }
    }
}

/// The rate range of a rate controller: `0 < min_rate <= start_rate <= max_rate <= 1 Tbit/s`.
pub fn check_rate_range(min_rate: Bitrate, start_rate: Bitrate, max_rate: Bitrate) -> Result<(), String> {
    use bounds::MAX_RATE;
    range::above_up_to("min_rate", min_rate, Bitrate::ZERO, MAX_RATE)?;
    range::not_below("max_rate", max_rate, "min_rate", min_rate)?;
    range::within("max_rate", max_rate, min_rate, MAX_RATE)?;
    range::not_below("start_rate", start_rate, "min_rate", min_rate)?;
    if start_rate > max_rate {
        return Err(format!(
            "start_rate: got {}, expected <= max_rate ({})",
            start_rate.shown(),
            max_rate.shown()
        ));
    }
    Ok(())
}

/// Bounds shared by the configs' checks: beyond them a value means nothing for a real-time
/// flow and risks overflowing the integer clock or allocating without bound.
pub mod bounds {
    use lowlat_core::{Bitrate, Bytes, Duration};

    /// The longest interval, timeout or delay constant (an hour).
    pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
    /// The shortest period of a controller's own timer (1 ms): shorter makes the run a busy
    /// loop of wake-ups (SCReAM's RATE_ADJUST_INTERVAL = 1 ns is two billion events a second).
    pub const MIN_TIMER: Duration = Duration::from_millis(1);
    /// The highest rate constant (1 Tbit/s).
    pub const MAX_RATE: Bitrate = Bitrate(1_000_000_000_000);
    /// The largest size constant (a window of 1 GB).
    pub const MAX_SIZE: Bytes = Bytes(1_000_000_000);
    /// The longest filter, window or history, in samples.
    pub const MAX_SAMPLES: usize = 10_000;
    /// The largest gain or factor that is not a share.
    pub const MAX_FACTOR: f64 = 1e6;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GccConfig, ScreamConfig};

    #[test]
    fn every_default_config_is_valid() {
        use crate::{FixedRateConfig, NadaConfig, SconeProConfig, ScreamV2Config};
        GccConfig::default().check().unwrap();
        NadaConfig::default().check().unwrap();
        ScreamConfig::default().check().unwrap();
        ScreamV2Config::default().check().unwrap();
        FixedRateConfig::default().check().unwrap();
        SconeProConfig::default().check().unwrap();
    }

    #[test]
    fn range_errors_name_the_key_the_value_and_the_range() {
        use crate::NadaConfig;
        let mut n = NadaConfig::default();
        n.set("rmax", "100 kbit/s").unwrap();
        assert_eq!(n.check().unwrap_err(), r#"rmax: got "100 kbit/s", expected >= rmin ("150 kbit/s")"#);
        let mut g = GccConfig::default();
        g.set("beta", "-5").unwrap();
        assert_eq!(g.check().unwrap_err(), "beta: got -5, expected > 0 and <= 1");
        let mut g = GccConfig::default();
        g.set("threshold_min", "700 ms").unwrap();
        assert_eq!(
            g.check().unwrap_err(),
            r#"threshold_max: got "600 ms", expected >= threshold_min ("700 ms")"#
        );
        let mut s = ScreamConfig::default();
        s.set("rate_adjust_interval", "0 ms").unwrap();
        assert_eq!(s.check().unwrap_err(), r#"rate_adjust_interval: got "0 s", expected "1 ms" to "3600 s""#);
        let mut s = ScreamConfig::default();
        s.set("min_rate", "2 Mbit/s").unwrap();
        assert!(s.check().unwrap_err().starts_with("max_rate: got \"1.5 Mbit/s\", expected >= min_rate"));
        // A NaN set in code (the parser refuses it) fails every check.
        let g = GccConfig { k_up: f64::NAN, ..GccConfig::default() };
        assert!(g.check().unwrap_err().starts_with("k_up: got NaN"));
    }

    #[test]
    fn constants_are_set_by_name_with_units() {
        let mut c = GccConfig::default();
        c.set("beta", "0.9").unwrap();
        c.set("burst_time", "10 ms").unwrap();
        c.set("max_rate", "3 Mbit/s").unwrap();
        assert_eq!((c.beta, c.burst_time, c.max_rate), (0.9, Duration::from_millis(10), Bitrate::mbps(3)));
        let e = c.set("beta", "fast").unwrap_err();
        assert!(e.contains("expected a finite number"), "{e}");
        let e = c.set("gamma", "1").unwrap_err();
        assert!(e.contains("unknown constant") && e.contains("k_up"), "{e}");
        let mut s = ScreamConfig::default();
        s.set("min_cwnd", "2000 B").unwrap();
        s.set("compete_with_loss_based", "true").unwrap();
        assert_eq!(s.min_cwnd, Bytes(2000));
        assert!(s.compete_with_loss_based);
    }
}
