//! Setting a controller's constants by name, so a scenario can override any of them
//! (`cc_params = { beta = 0.9, qdelay_target_lo = "80 ms" }`).

use lowlat_core::{Bitrate, Bytes, Duration};

/// A configuration whose fields can be set by name from text.
pub trait Tunable {
    /// The names [`Tunable::set`] accepts.
    fn keys() -> &'static [&'static str];

    /// Sets field `key` from `value` (`"0.9"`, `"80 ms"`, `"1 Mbit/s"`, `"3000 B"`, `"true"`).
    fn set(&mut self, key: &str, value: &str) -> Result<(), String>;
}

/// Parses one field's value from text.
pub trait FieldValue: Sized {
    /// What the text should look like, for error messages.
    const EXPECTED: &'static str;
    /// Parses.
    fn parse_value(s: &str) -> Option<Self>;
}

impl FieldValue for f64 {
    const EXPECTED: &'static str = "a number";
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
        }
    };
}

/// Parses `value` as the type of `_current` (the macro's helper).
pub fn parse_field<T: FieldValue>(_current: &T, value: &str) -> Result<T, String> {
    T::parse_value(value).ok_or_else(|| format!("got {value:?}, expected {}", T::EXPECTED))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GccConfig, ScreamConfig};

    #[test]
    fn constants_are_set_by_name_with_units() {
        let mut c = GccConfig::default();
        c.set("beta", "0.9").unwrap();
        c.set("burst_time", "10 ms").unwrap();
        c.set("max_rate", "3 Mbit/s").unwrap();
        assert_eq!((c.beta, c.burst_time, c.max_rate), (0.9, Duration::from_millis(10), Bitrate::mbps(3)));
        let e = c.set("beta", "fast").unwrap_err();
        assert!(e.contains("expected a number"), "{e}");
        let e = c.set("gamma", "1").unwrap_err();
        assert!(e.contains("unknown constant") && e.contains("k_up"), "{e}");
        let mut s = ScreamConfig::default();
        s.set("min_cwnd", "2000 B").unwrap();
        s.set("compete_with_loss_based", "true").unwrap();
        assert_eq!(s.min_cwnd, Bytes(2000));
        assert!(s.compete_with_loss_based);
    }
}
