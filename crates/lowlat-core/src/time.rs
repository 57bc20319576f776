//! Simulated time: integer nanoseconds.
//!
//! [`Time`] is an instant since the start of a run, [`Duration`] a span; separate types (as in
//! Shadow) so that adding two instants does not compile. Both are `u64` nanoseconds: 584 years of
//! range, and no floating-point rounding in the event order.

use crate::units::{parse_quantity, round_positive, u64_to_f64, ParseUnitError};
use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};
use std::str::FromStr;

/// An instant of simulated (or emulated) time, nanoseconds since the run started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u64);

/// A span of time, nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub u64);

impl Time {
    /// The start of the run.
    pub const ZERO: Time = Time(0);
    /// Later than any instant a run reaches.
    pub const MAX: Time = Time(u64::MAX);

    /// `s` seconds after the start.
    pub const fn from_secs(s: u64) -> Time {
        Time(s * 1_000_000_000)
    }
    /// `ms` milliseconds after the start.
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms * 1_000_000)
    }
    /// Nearest instant to `s` seconds (negative clamps to zero).
    pub fn from_secs_f64(s: f64) -> Time {
        Time(Duration::from_secs_f64(s).0)
    }
    /// Nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the start (for reporting only).
    pub fn as_secs_f64(self) -> f64 {
        u64_to_f64(self.0) / 1e9
    }
    /// The span since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    /// The span from the start of the run.
    pub const fn since_start(self) -> Duration {
        Duration(self.0)
    }
}

impl Duration {
    /// No time.
    pub const ZERO: Duration = Duration(0);
    /// Longer than any run.
    pub const MAX: Duration = Duration(u64::MAX);

    /// `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Duration {
        Duration(ns)
    }
    /// `us` microseconds.
    pub const fn from_micros(us: u64) -> Duration {
        Duration(us * 1_000)
    }
    /// `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Duration {
        Duration(ms * 1_000_000)
    }
    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s * 1_000_000_000)
    }
    /// Nearest span to `s` seconds (negative or NaN clamps to zero).
    pub fn from_secs_f64(s: f64) -> Duration {
        if s.is_nan() || s <= 0.0 {
            Duration(0)
        } else {
            Duration(round_positive(s * 1e9))
        }
    }
    /// Nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds (for reporting and for models stated in floating point).
    pub fn as_secs_f64(self) -> f64 {
        u64_to_f64(self.0) / 1e9
    }
    /// Milliseconds (for reporting).
    pub fn as_millis_f64(self) -> f64 {
        u64_to_f64(self.0) / 1e6
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Duration> for Time {
    type Output = Time;
    fn sub(self, d: Duration) -> Time {
        Time(self.0.saturating_sub(d.0))
    }
}
impl Sub<Time> for Time {
    type Output = Duration;
    /// Saturates at zero: spans are never negative.
    fn sub(self, earlier: Time) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0.saturating_sub(d.0))
    }
}
impl SubAssign for Duration {
    fn sub_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_sub(d.0);
    }
}
impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}
impl Div<u64> for Duration {
    type Output = Duration;
    fn div(self, k: u64) -> Duration {
        Duration(self.0 / k)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns.is_multiple_of(1_000_000_000) {
            write!(f, "{} s", ns / 1_000_000_000)
        } else if ns.is_multiple_of(1_000_000) {
            write!(f, "{} ms", ns / 1_000_000)
        } else if ns.is_multiple_of(1_000) {
            write!(f, "{} us", ns / 1_000)
        } else {
            write!(f, "{} ns", ns)
        }
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6} s", self.as_secs_f64())
    }
}

impl FromStr for Duration {
    type Err = ParseUnitError;
    /// Parses `"50 ms"`, `"1.5s"`, `"250 us"`, `"2 min"`.
    fn from_str(s: &str) -> Result<Duration, ParseUnitError> {
        const UNITS: &[(&str, f64)] =
            &[("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("min", 60e9)];
        let ns = parse_quantity(s, UNITS, "a duration such as \"50 ms\" or \"1.5 s\"")?;
        Ok(Duration(ns.round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_with_units() {
        assert_eq!("50 ms".parse::<Duration>().unwrap(), Duration::from_millis(50));
        assert_eq!("1.5s".parse::<Duration>().unwrap(), Duration::from_millis(1500));
        assert_eq!("250 us".parse::<Duration>().unwrap(), Duration::from_micros(250));
        assert_eq!("2 min".parse::<Duration>().unwrap(), Duration::from_secs(120));
    }

    #[test]
    fn rejects_missing_or_wrong_units_and_negatives() {
        for bad in ["50", "50 parsecs", "-3 ms", "ms", "", "1e400 s"] {
            let err = bad.parse::<Duration>().unwrap_err().to_string();
            assert!(err.contains("duration"), "{bad}: {err}");
        }
    }

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(Time(5) - Time(9), Duration::ZERO);
        assert_eq!(Time::MAX + Duration(1), Time::MAX);
    }
}
