//! ECN codepoints: the two ECN bits of the IP header (RFC 3168 §5), with ECT(1) as the L4S
//! identifier (RFC 9331 §4).
//!
//! [`crate::Packet::ecn`] keeps the raw two bits (a `u8`, so the packet stays one small `Copy`
//! value and every existing reader of the field keeps working); [`Ecn`] names them.

use std::fmt;
use std::str::FromStr;

/// One of the four ECN codepoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Ecn {
    /// `00`: the sender does not support ECN; a queue must drop, not mark.
    #[default]
    NotEct = 0,
    /// `01`: ECN-capable, and (RFC 9331) an L4S sender: expects immediate, shallow marking.
    Ect1 = 1,
    /// `10`: ECN-capable, classic (RFC 3168) response to CE.
    Ect0 = 2,
    /// `11`: Congestion Experienced, set by a queue.
    Ce = 3,
}

impl Ecn {
    /// The codepoint of the low two bits of `bits`.
    pub const fn from_bits(bits: u8) -> Ecn {
        match bits & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two bits.
    pub const fn bits(self) -> u8 {
        self as u8
    }

    /// Whether a queue may mark it instead of dropping (ECT(0), ECT(1), or already CE).
    pub const fn is_ect(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }

    /// Its name as scenarios write it: `"not-ect"`, `"ect1"`, `"ect0"`, `"ce"`.
    pub const fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "not-ect",
            Ecn::Ect1 => "ect1",
            Ecn::Ect0 => "ect0",
            Ecn::Ce => "ce",
        }
    }
}

impl fmt::Display for Ecn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Ecn {
    type Err = String;
    fn from_str(s: &str) -> Result<Ecn, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "not-ect" | "none" => Ok(Ecn::NotEct),
            "ect0" | "ect(0)" => Ok(Ecn::Ect0),
            "ect1" | "ect(1)" | "l4s" => Ok(Ecn::Ect1),
            "ce" => Ok(Ecn::Ce),
            _ => Err(format!("got {s:?}, expected \"not-ect\", \"ect0\" or \"ect1\"")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_and_names_parse() {
        for b in 0..4u8 {
            let e = Ecn::from_bits(b);
            assert_eq!(e.bits(), b);
            assert_eq!(e.name().parse::<Ecn>().unwrap(), e);
        }
        assert_eq!(Ecn::from_bits(0xff), Ecn::Ce);
        assert!(!Ecn::NotEct.is_ect() && Ecn::Ect0.is_ect() && Ecn::Ect1.is_ect() && Ecn::Ce.is_ect());
        assert!("ect2".parse::<Ecn>().unwrap_err().contains("expected"));
    }
}
