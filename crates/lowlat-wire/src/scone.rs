//! The SCONE packet (draft-ietf-scone-protocol-08 §4): a QUIC long-header packet that network
//! elements rewrite to give the endpoint throughput advice.
//!
//! ```text
//! | 1 | R | Rate Signal High Bits (6) | Version (32) = 0x6f7dc0fd or 0xef7dc0fd |
//! | DCID Len (8) | DCID (0..255 B) | SCID Len (8) | SCID (0..255 B) |
//! ```
//! The 7-bit rate signal is the six low bits of the first byte followed by the version's most
//! significant bit (§4.1). Values 0-126 advise a ceiling of 100 kbit/s x 10^(n/20) (one step per
//! 1 dB, up to 199.5 Gbit/s); 127, what endpoints send, means "unknown". A network element may
//! only lower the signal (§7.1, [`apply_advice`]). Advice holds over a 67-second monitoring
//! period ([`MONITORING_PERIOD_S`], §4.2); endpoints apply the lowest advice of a period.
//!
//! In the smoltcp style: [`SconePacket`] wraps a buffer (checked once, then its accessors never
//! panic) and [`SconeRepr`] is the parsed form with `parse`/`emit`.

use crate::WireError;

/// The SCONE version with the rate signal's low bit clear.
pub const VERSION_LOW: u32 = 0x6f7d_c0fd;
/// The SCONE version with the rate signal's low bit set.
pub const VERSION_HIGH: u32 = 0xef7d_c0fd;
/// The rate signal endpoints send: no advice known.
pub const SIGNAL_UNKNOWN: u8 = 127;
/// Base rate of the scale, bit/s (b_min, §4.1).
pub const BASE_RATE_BPS: f64 = 100_000.0;
/// The monitoring period over which advice applies, seconds (§4.2).
pub const MONITORING_PERIOD_S: u64 = 67;

/// The advised ceiling of rate signal `n`, bit/s: `Ok(None)` for 127 (unknown), an error above.
pub fn signal_to_bps(n: u8) -> Result<Option<f64>, WireError> {
    match n {
        0..=126 => Ok(Some(BASE_RATE_BPS * 10f64.powf(f64::from(n) / 20.0))),
        SIGNAL_UNKNOWN => Ok(None),
        _ => Err(WireError::Invalid("SCONE rate signal above 127")),
    }
}

/// The largest signal whose rate does not exceed `bps` (advice is a ceiling: rounding down never
/// advises more than the element can carry); 0 below 100 kbit/s, 126 from 199.5 Gbit/s.
pub fn bps_to_signal(bps: f64) -> u8 {
    if bps.is_nan() || bps <= BASE_RATE_BPS {
        return 0;
    }
    let n = (20.0 * (bps / BASE_RATE_BPS).log10()).floor().clamp(0.0, 126.0) as u8;
    // Floating-point error at exact steps: settle on the largest n whose rate is within bps.
    let fits = |n: u8| signal_to_bps(n).ok().flatten().is_some_and(|r| r <= bps * (1.0 + 1e-12));
    let mut n = n;
    while n < 126 && fits(n + 1) {
        n += 1;
    }
    while n > 0 && !fits(n) {
        n -= 1;
    }
    n
}

/// Field offsets.
mod field {
    pub const FIRST: usize = 0;
    pub const VERSION: core::ops::Range<usize> = 1..5;
    pub const DCID_LEN: usize = 5;
}

/// A buffer holding a SCONE packet (and possibly the coalesced packets after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SconePacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SconePacket<T> {
    /// Wraps `buffer` without checking it.
    pub fn new_unchecked(buffer: T) -> SconePacket<T> {
        SconePacket { buffer }
    }

    /// Wraps `buffer` after [`SconePacket::check`]: the accessors cannot panic afterwards.
    pub fn new_checked(buffer: T) -> Result<SconePacket<T>, WireError> {
        let p = SconePacket { buffer };
        p.check()?;
        Ok(p)
    }

    /// Checks the long-header bit, the version and that both connection ids fit.
    pub fn check(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < field::DCID_LEN + 1 {
            return Err(WireError::Truncated { needed: field::DCID_LEN + 1, have: b.len() });
        }
        if b[field::FIRST] & 0x80 == 0 {
            return Err(WireError::Invalid("not a QUIC long header"));
        }
        let v = self.version_unchecked();
        if v & 0x7fff_ffff != VERSION_LOW {
            return Err(WireError::BadSconeVersion(v));
        }
        let dcid = b[field::DCID_LEN] as usize;
        let scid_at = field::DCID_LEN + 1 + dcid;
        if b.len() < scid_at + 1 {
            return Err(WireError::Truncated { needed: scid_at + 1, have: b.len() });
        }
        let end = scid_at + 1 + b[scid_at] as usize;
        if b.len() < end {
            return Err(WireError::Truncated { needed: end, have: b.len() });
        }
        Ok(())
    }

    fn version_unchecked(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::VERSION];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The version field (0x6f7dc0fd or 0xef7dc0fd).
    pub fn version(&self) -> u32 {
        self.version_unchecked()
    }

    /// The 7-bit rate signal.
    pub fn rate_signal(&self) -> u8 {
        ((self.buffer.as_ref()[field::FIRST] & 0x3f) << 1) | (self.version() >> 31) as u8
    }

    /// The destination connection id.
    pub fn dcid(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let n = b[field::DCID_LEN] as usize;
        &b[field::DCID_LEN + 1..field::DCID_LEN + 1 + n]
    }

    /// The source connection id.
    pub fn scid(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let at = field::DCID_LEN + 1 + b[field::DCID_LEN] as usize;
        &b[at + 1..at + 1 + b[at] as usize]
    }

    /// Bytes of the SCONE packet (the coalesced packets follow).
    pub fn len(&self) -> usize {
        field::DCID_LEN + 2 + self.dcid().len() + self.scid().len()
    }

    /// Whether it is empty (never, once checked).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SconePacket<T> {
    /// Writes rate signal `n` (0-127); the reserved bit and the rest of the version are kept.
    pub fn set_rate_signal(&mut self, n: u8) -> Result<(), WireError> {
        if n > SIGNAL_UNKNOWN {
            return Err(WireError::Invalid("SCONE rate signal above 127"));
        }
        let b = self.buffer.as_mut();
        b[field::FIRST] = (b[field::FIRST] & 0xc0) | (n >> 1);
        b[field::VERSION.start] = (b[field::VERSION.start] & 0x7f) | ((n & 1) << 7);
        Ok(())
    }
}

/// What a network element does to a datagram that may start with a SCONE packet (§7.1): if it
/// does and its signal is above `target`, lower it to `target`. Returns whether the datagram
/// starts with a SCONE packet; never raises the signal, never panics.
pub fn apply_advice(datagram: &mut [u8], target: u8) -> Result<bool, WireError> {
    if target > SIGNAL_UNKNOWN {
        return Err(WireError::Invalid("SCONE rate signal above 127"));
    }
    let Ok(mut p) = SconePacket::new_checked(datagram) else { return Ok(false) };
    if target < p.rate_signal() {
        p.set_rate_signal(target)?;
    }
    Ok(true)
}

/// A parsed SCONE packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SconeRepr<'a> {
    /// The 7-bit rate signal (127: unknown).
    pub rate_signal: u8,
    /// The destination connection id (that of the packets it is coalesced with).
    pub dcid: &'a [u8],
    /// The source connection id (empty before a short-header packet).
    pub scid: &'a [u8],
}

impl<'a> SconeRepr<'a> {
    /// Decodes the SCONE packet at the start of `buf`.
    pub fn decode(buf: &'a [u8]) -> Result<SconeRepr<'a>, WireError> {
        let p = SconePacket::new_checked(buf)?;
        let (rate_signal, dcid_len, scid_len) = (p.rate_signal(), p.dcid().len(), p.scid().len());
        let dcid = &buf[field::DCID_LEN + 1..field::DCID_LEN + 1 + dcid_len];
        let at = field::DCID_LEN + 1 + dcid_len;
        Ok(SconeRepr { rate_signal, dcid, scid: &buf[at + 1..at + 1 + scid_len] })
    }

    /// Bytes it takes.
    pub fn buffer_len(&self) -> usize {
        field::DCID_LEN + 2 + self.dcid.len() + self.scid.len()
    }

    /// Appends it (the reserved bit clear); errors for a signal above 127 or an id over 255 B.
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.rate_signal > SIGNAL_UNKNOWN {
            return Err(WireError::Invalid("SCONE rate signal above 127"));
        }
        if self.dcid.len() > 255 || self.scid.len() > 255 {
            return Err(WireError::Invalid("connection id over 255 bytes"));
        }
        out.push(0x80 | (self.rate_signal >> 1));
        let version = if self.rate_signal & 1 == 1 { VERSION_HIGH } else { VERSION_LOW };
        out.extend_from_slice(&version.to_be_bytes());
        out.push(self.dcid.len() as u8);
        out.extend_from_slice(self.dcid);
        out.push(self.scid.len() as u8);
        out.extend_from_slice(self.scid);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signal_encodes_and_decodes() {
        let dcid = [1, 2, 3, 4, 5, 6, 7, 8];
        for n in 0..=127u8 {
            let mut out = Vec::new();
            SconeRepr { rate_signal: n, dcid: &dcid, scid: &[] }.emit(&mut out).unwrap();
            assert_eq!(out.len(), 15);
            assert_eq!(out[0] & 0x3f, n >> 1);
            let v = u32::from_be_bytes([out[1], out[2], out[3], out[4]]);
            assert_eq!(v, if n & 1 == 1 { VERSION_HIGH } else { VERSION_LOW });
            let back = SconeRepr::decode(&out).unwrap();
            assert_eq!((back.rate_signal, back.dcid, back.scid), (n, &dcid[..], &[][..]));
            if n < 127 {
                // The scale: 100 kbit/s x 10^(n/20), and the encoder rounds its own rate to n.
                let bps = signal_to_bps(n).unwrap().unwrap();
                assert!((bps - 1e5 * 10f64.powf(n as f64 / 20.0)).abs() < 1e-6 * bps);
                assert_eq!(bps_to_signal(bps), n, "signal {n}");
                if n > 0 {
                    assert_eq!(bps_to_signal(bps * 0.999), n - 1, "just below signal {n}");
                }
            }
        }
        assert_eq!(signal_to_bps(127).unwrap(), None);
        assert!(signal_to_bps(128).is_err());
        assert!(SconeRepr { rate_signal: 128, dcid: &[], scid: &[] }.emit(&mut Vec::new()).is_err());
    }

    #[test]
    fn the_drafts_table_holds() {
        for (n, bps) in [(0, 1e5), (1, 1.12e5), (20, 1e6), (21, 1.12e6), (40, 1e7), (60, 1e8), (126, 199.5e9)]
        {
            let got = signal_to_bps(n).unwrap().unwrap();
            assert!((got - bps).abs() / bps < 0.005, "signal {n}: {got} vs {bps}");
        }
        assert_eq!(bps_to_signal(50_000.0), 0);
        assert_eq!(bps_to_signal(1e15), 126);
        assert_eq!(bps_to_signal(10e6), 40);
    }

    #[test]
    fn bad_versions_and_short_headers_are_rejected() {
        let mut out = Vec::new();
        SconeRepr { rate_signal: 127, dcid: &[9; 4], scid: &[] }.emit(&mut out).unwrap();
        for v in [0x0000_0001u32, 0x6f7d_c0fc, 0x7f7d_c0fd, 0x6b7d_c0fd] {
            let mut b = out.clone();
            b[1..5].copy_from_slice(&v.to_be_bytes());
            assert_eq!(SconeRepr::decode(&b), Err(WireError::BadSconeVersion(v)));
        }
        let mut short = out.clone();
        short[0] &= 0x7f;
        assert!(SconeRepr::decode(&short).is_err());
        for cut in 0..out.len() {
            assert!(SconeRepr::decode(&out[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn elements_only_lower_the_signal() {
        let mut d = Vec::new();
        SconeRepr { rate_signal: 127, dcid: &[7; 8], scid: &[] }.emit(&mut d).unwrap();
        d.extend_from_slice(&[0x40, 1, 2, 3]); // a coalesced short-header packet
        assert!(apply_advice(&mut d, 40).unwrap());
        assert_eq!(SconeRepr::decode(&d).unwrap().rate_signal, 40);
        assert!(apply_advice(&mut d, 60).unwrap()); // higher: kept at 40
        assert_eq!(SconeRepr::decode(&d).unwrap().rate_signal, 40);
        assert!(apply_advice(&mut d, 127).unwrap()); // unknown is never written over advice
        assert_eq!(SconeRepr::decode(&d).unwrap().rate_signal, 40);
        assert!(apply_advice(&mut d, 21).unwrap());
        assert_eq!(SconeRepr::decode(&d).unwrap().rate_signal, 21);
        assert_eq!(&d[15..], &[0x40, 1, 2, 3], "the coalesced packet is untouched");
        assert!(apply_advice(&mut d, 128).is_err());
        assert!(!apply_advice(&mut [0x40, 0, 0], 10).unwrap());
    }
}
