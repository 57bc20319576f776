//! Units in types: [`Bitrate`] (bits per second) and [`Bytes`].
//!
//! Both are integers; the conversions that involve time ([`Bitrate::transmit_time`],
//! [`Bitrate::bytes_in`]) compute in 128-bit integers so that no rounding error accumulates over a
//! long run.

use crate::Duration;
use std::fmt;
use std::str::FromStr;

/// `x as f64`, bit for bit, through `i64`: x86-64 converts an `i64` in one instruction, a `u64`
/// in a sequence of six (see [`round_positive`]), and times, sizes and rates are converted
/// several times per packet. From 2^63 on, `x` is halved keeping its lowest bit as a sticky bit
/// (so the one rounding to 53 bits is the same), converted, and doubled back: GCC's lowering of
/// the `u64` conversion. (Written `x as f64` there, LLVM merges the two paths back into its own
/// sequence.)
#[inline]
pub fn u64_to_f64(x: u64) -> f64 {
    if x <= i64::MAX as u64 {
        x as i64 as f64
    } else {
        ((x >> 1 | (x & 1)) as i64 as f64) * 2.0
    }
}

/// `x.round().min(u64::MAX as f64) as u64` for `x > 0`, exactly, without the library `round`.
///
/// Built for the baseline x86-64 target (no SSE4.1 `roundsd`), `f64::round` is a software
/// routine, and the simulator rounds a duration or a rate several times per packet (about 3 %
/// of a run). Below 2^53, `x - trunc(x)` is exact (Sterbenz's lemma for `x >= 1`; `x` itself
/// below 1), so comparing it with one half rounds half away from zero as `round` does; from
/// 2^53 on every `f64` is an integer and the library path is kept. The conversions go through
/// `i64` (exact here: `0 <= x < 2^53`): x86-64 converts between `f64` and `i64` in one
/// instruction, between `f64` and `u64` only with a branchy sequence of several.
#[inline]
pub(crate) fn round_positive(x: f64) -> u64 {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if (0.0..EXACT).contains(&x) {
        let t = x as i64; // truncation towards zero
        (t + i64::from(x - t as f64 >= 0.5)) as u64
    } else {
        x.round().min(u64::MAX as f64) as u64
    }
}

/// A rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bitrate(pub u64);

/// A quantity of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

/// A quantity string that could not be read: says what was given and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseUnitError {
    /// The text that was given.
    pub given: String,
    /// What was expected instead, e.g. `a bitrate such as "10 Mbit/s"`.
    pub expected: &'static str,
}

impl fmt::Display for ParseUnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "got {:?}, expected {}", self.given, self.expected)
    }
}
impl std::error::Error for ParseUnitError {}

/// Reads `"<non-negative number> <unit>"` (space optional) and returns number x the unit's factor.
pub(crate) fn parse_quantity(
    s: &str,
    units: &[(&str, f64)],
    expected: &'static str,
) -> Result<f64, ParseUnitError> {
    let err = || ParseUnitError { given: s.to_string(), expected };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
        .ok_or_else(err)?;
    // "e" may start a unit, not an exponent, when no digit follows it.
    let (mut num, mut unit) = t.split_at(split);
    if num.ends_with(['e', 'E']) {
        num = &num[..num.len() - 1];
        unit = &t[num.len()..];
    }
    let value: f64 = num.trim().parse().map_err(|_| err())?;
    let unit = unit.trim();
    let factor = units.iter().find(|(u, _)| *u == unit).map(|(_, f)| *f).ok_or_else(err)?;
    let v = value * factor;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 / 2.0 {
        return Err(err());
    }
    Ok(v)
}

impl Bitrate {
    /// Zero bits per second (an unavailable link).
    pub const ZERO: Bitrate = Bitrate(0);

    /// `b` bits per second.
    pub const fn bps(b: u64) -> Bitrate {
        Bitrate(b)
    }
    /// `k` kilobits per second.
    pub const fn kbps(k: u64) -> Bitrate {
        Bitrate(k * 1_000)
    }
    /// `m` megabits per second.
    pub const fn mbps(m: u64) -> Bitrate {
        Bitrate(m * 1_000_000)
    }
    /// `g` gigabits per second.
    pub const fn gbps(g: u64) -> Bitrate {
        Bitrate(g * 1_000_000_000)
    }
    /// Nearest rate to `b` bits per second (negative or NaN clamps to zero).
    pub fn from_bps_f64(b: f64) -> Bitrate {
        if b.is_nan() || b <= 0.0 {
            Bitrate(0)
        } else {
            Bitrate(round_positive(b))
        }
    }
    /// The rate that carries `bytes` in `d` (zero for an empty span).
    pub fn from_bytes_per(bytes: Bytes, d: Duration) -> Bitrate {
        if d.0 == 0 {
            return Bitrate(0);
        }
        Bitrate(((bytes.0 as u128 * 8 * 1_000_000_000) / d.0 as u128).min(u64::MAX as u128) as u64)
    }
    /// Bits per second.
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    /// Bits per second as a float (for reporting and floating-point models).
    pub fn as_bps_f64(self) -> f64 {
        u64_to_f64(self.0)
    }
    /// Kilobits per second (for reporting).
    pub fn as_kbps_f64(self) -> f64 {
        u64_to_f64(self.0) * 1e-3
    }
    /// Time to serialise `bytes` at this rate, rounded up to the nanosecond; `None` at rate zero.
    pub fn transmit_time(self, bytes: Bytes) -> Option<Duration> {
        if self.0 == 0 {
            return None;
        }
        // Packets are small: a 64-bit division (much cheaper than 128-bit) is exact below 2 GB.
        if bytes.0 < (1 << 31) {
            return Some(Duration((bytes.0 * 8_000_000_000).div_ceil(self.0)));
        }
        let bits_ns = bytes.0 as u128 * 8 * 1_000_000_000;
        Some(Duration(bits_ns.div_ceil(self.0 as u128).min(u64::MAX as u128) as u64))
    }
    /// Whole bytes this rate carries in `d` (rounded down).
    pub fn bytes_in(self, d: Duration) -> Bytes {
        Bytes(((self.0 as u128 * d.0 as u128) / 8_000_000_000).min(u64::MAX as u128) as u64)
    }
    /// Bits this rate carries in `d`, exactly (bit-nanoseconds are kept as a fraction of 1e9).
    pub fn bits_in_scaled(self, d: Duration) -> u128 {
        self.0 as u128 * d.0 as u128
    }
    /// This rate scaled by `k` (for "95 % of the bottleneck").
    pub fn scaled(self, k: f64) -> Bitrate {
        Bitrate::from_bps_f64(self.0 as f64 * k)
    }
}

impl Bytes {
    /// Nothing.
    pub const ZERO: Bytes = Bytes(0);
    /// The count.
    pub const fn as_u64(self) -> u64 {
        self.0
    }
    /// Bits.
    pub const fn bits(self) -> u64 {
        self.0 * 8
    }
}

impl std::ops::Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(o.0))
    }
}
impl std::ops::AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        self.0 = self.0.saturating_add(o.0);
    }
}
impl std::ops::Sub for Bytes {
    type Output = Bytes;
    fn sub(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(o.0))
    }
}
impl std::ops::SubAssign for Bytes {
    fn sub_assign(&mut self, o: Bytes) {
        self.0 = self.0.saturating_sub(o.0);
    }
}

impl fmt::Display for Bitrate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1_000_000_000 && b.is_multiple_of(1_000_000) {
            write!(f, "{} Gbit/s", b as f64 / 1e9)
        } else if b >= 1_000_000 && b.is_multiple_of(1_000) {
            write!(f, "{} Mbit/s", b as f64 / 1e6)
        } else if b >= 1_000 {
            write!(f, "{} kbit/s", b as f64 / 1e3)
        } else {
            write!(f, "{} bit/s", b)
        }
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} B", self.0)
    }
}

impl FromStr for Bitrate {
    type Err = ParseUnitError;
    /// Parses `"10 Mbit/s"`, `"2.5Mbps"`, `"150 kbit/s"`, `"1 Gbit/s"`, `"64000 bit/s"`.
    fn from_str(s: &str) -> Result<Bitrate, ParseUnitError> {
        const UNITS: &[(&str, f64)] = &[
            ("bit/s", 1.0),
            ("bps", 1.0),
            ("kbit/s", 1e3),
            ("kbps", 1e3),
            ("Kbps", 1e3),
            ("Mbit/s", 1e6),
            ("Mbps", 1e6),
            ("Gbit/s", 1e9),
            ("Gbps", 1e9),
        ];
        let v = parse_quantity(s, UNITS, "a bitrate such as \"10 Mbit/s\" or \"150 kbit/s\"")?;
        Ok(Bitrate(v.round() as u64))
    }
}

impl FromStr for Bytes {
    type Err = ParseUnitError;
    /// Parses `"1500 B"`, `"64 kB"` (1000), `"64 KiB"` (1024), `"10 MB"`, `"1 MiB"`.
    fn from_str(s: &str) -> Result<Bytes, ParseUnitError> {
        const UNITS: &[(&str, f64)] = &[
            ("B", 1.0),
            ("kB", 1e3),
            ("KB", 1e3),
            ("KiB", 1024.0),
            ("MB", 1e6),
            ("MiB", 1048576.0),
            ("GB", 1e9),
            ("GiB", 1073741824.0),
        ];
        let v = parse_quantity(s, UNITS, "a size such as \"1500 B\" or \"64 kB\"")?;
        Ok(Bytes(v.round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_to_f64_is_the_cast_bit_for_bit() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut cases = vec![0, 1, (1 << 53) - 1, 1 << 53, (1 << 53) + 1, (1 << 54) + 3, i64::MAX as u64];
        cases.extend([
            (1u64 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            (1 << 63) + 1024,
            (1 << 63) + 1025,
            u64::MAX,
        ]);
        cases.extend([u64::MAX - 1024, u64::MAX - 1023, u64::MAX - 2047, u64::MAX - 2048]);
        for _ in 0..100_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            cases.push(state);
            cases.push(state >> (state % 64));
        }
        for x in cases {
            assert_eq!(u64_to_f64(x).to_bits(), (x as f64).to_bits(), "{x}");
        }
    }

    #[test]
    fn round_positive_is_the_library_round() {
        let reference = |x: f64| x.round().min(u64::MAX as f64) as u64;
        let mut cases = vec![
            f64::MIN_POSITIVE,
            5e-324,
            0.49999999999999994,
            0.5,
            0.5000000000000001,
            1.5,
            2.5,
            4_503_599_627_370_495.5, // 2^52 - 1/2
            4_503_599_627_370_496.0,
            9_007_199_254_740_991.0,
            9_007_199_254_740_992.0, // 2^53
            1.8446744073709552e19,   // 2^64
            1e300,
            f64::INFINITY,
        ];
        // Every half and its two neighbours, over many magnitudes.
        for k in (0..60).map(|e| (1u64 << e) - 1).chain(0..1000) {
            let h = k as f64 + 0.5;
            cases.extend([h, f64::from_bits(h.to_bits() - 1), f64::from_bits(h.to_bits() + 1)]);
        }
        // Random bit patterns of positive finite numbers (xorshift: no dependency).
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1_000_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = f64::from_bits(state >> 1);
            if x.is_finite() && x > 0.0 {
                cases.push(x);
            }
            // And numbers in the range the simulator rounds (ns of a few s, bit/s).
            cases.push((state >> 11) as f64 / (1u64 << 20) as f64);
        }
        for x in cases.into_iter().filter(|x| *x > 0.0) {
            assert_eq!(round_positive(x), reference(x), "{x:e}");
        }
    }

    #[test]
    fn parses_bitrates_and_sizes() {
        assert_eq!("10 Mbit/s".parse::<Bitrate>().unwrap(), Bitrate::mbps(10));
        assert_eq!("2.5Mbps".parse::<Bitrate>().unwrap(), Bitrate::kbps(2500));
        assert_eq!("150 kbit/s".parse::<Bitrate>().unwrap(), Bitrate::kbps(150));
        assert_eq!("1500 B".parse::<Bytes>().unwrap(), Bytes(1500));
        assert_eq!("1 MiB".parse::<Bytes>().unwrap(), Bytes(1 << 20));
        assert_eq!("1e3 B".parse::<Bytes>().unwrap(), Bytes(1000));
    }

    #[test]
    fn rejects_wrong_units_and_negative_values() {
        assert!("10 ms".parse::<Bitrate>().is_err());
        assert!("-1 Mbit/s".parse::<Bitrate>().is_err());
        assert!("10".parse::<Bitrate>().is_err());
        assert!("1500".parse::<Bytes>().is_err());
        let e = "ten Mbit/s".parse::<Bitrate>().unwrap_err().to_string();
        assert!(e.contains("ten Mbit/s") && e.contains("bitrate"), "{e}");
    }

    #[test]
    fn transmit_time_is_exact_and_rounds_up() {
        assert_eq!(Bitrate::mbps(100).transmit_time(Bytes(1500)), Some(Duration(120_000)));
        assert_eq!(Bitrate::bps(3).transmit_time(Bytes(1)), Some(Duration(2_666_666_667)));
        assert_eq!(Bitrate::ZERO.transmit_time(Bytes(1)), None);
        assert_eq!(Bitrate::mbps(8).bytes_in(Duration::from_millis(1)), Bytes(1000));
    }
}
