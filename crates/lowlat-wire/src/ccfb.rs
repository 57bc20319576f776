//! RFC 8888 RTP congestion control feedback: RTCP RTPFB, PT 205, FMT 11 (RFC 8888 §3.1).
//!
//! ```text
//! | V=2|P| FMT=11 | PT=205 | length | SSRC of RTCP packet sender |
//! per media source: | SSRC | begin_seq (16) | num_reports (16) |
//!                   | R | ECN (2) | arrival time offset (13) | ... (16 bits each, padded to 32)
//! | report timestamp (32, compact NTP) |
//! ```
//! The arrival time offset counts 1/1024 s before the report timestamp; 0x1FFE means "at least
//! that far", 0x1FFF "unavailable".

use crate::rtcp::{self, FMT_CCFB, PT_RTPFB};
use crate::{Reader, WireError};

/// Arrival time offset: over range.
pub const ATO_OVER_RANGE: u16 = 0x1ffe;
/// Arrival time offset: unavailable.
pub const ATO_UNAVAILABLE: u16 = 0x1fff;

/// How the `num_reports` field counts: the RFC (and libwebrtc, pion) write the number of
/// metrics; Ericsson's SCReAM writes that number minus one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NumReportsConvention {
    /// `num_reports` = metrics (RFC 8888).
    #[default]
    Count,
    /// `num_reports` = metrics - 1.
    CountMinusOne,
}

/// One packet's metric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcfbMetric {
    /// Whether the packet arrived.
    pub received: bool,
    /// The two ECN bits it arrived with.
    pub ecn: u8,
    /// Arrival time offset in 1/1024 s before the report timestamp (13 bits).
    pub ato: u16,
}

impl CcfbMetric {
    /// A received packet that arrived `before_report_us` microseconds before the report
    /// timestamp (rounded to 1/1024 s, saturating at [`ATO_OVER_RANGE`]).
    pub fn received(before_report_us: i64, ecn: u8) -> CcfbMetric {
        let ato = ((before_report_us.max(0) * 1024 + 500_000) / 1_000_000).min(i64::from(ATO_OVER_RANGE));
        CcfbMetric { received: true, ecn: ecn & 3, ato: ato as u16 }
    }

    /// A packet not received.
    pub fn lost() -> CcfbMetric {
        CcfbMetric::default()
    }

    /// Microseconds before the report timestamp, if received and the offset is in range.
    pub fn offset_us(&self) -> Option<i64> {
        (self.received && self.ato < ATO_OVER_RANGE).then(|| i64::from(self.ato) * 1_000_000 / 1024)
    }
}

/// The metrics of one media source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CcfbBlock {
    /// Its SSRC.
    pub media_ssrc: u32,
    /// RTP sequence number of the first metric.
    pub begin_seq: u16,
    /// One metric per sequence number from `begin_seq`.
    pub metrics: Vec<CcfbMetric>,
}

/// An RFC 8888 feedback packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CcfbReport {
    /// SSRC of the RTCP packet's sender.
    pub sender_ssrc: u32,
    /// Per media source.
    pub blocks: Vec<CcfbBlock>,
    /// When the report was built, compact NTP (16.16 seconds).
    pub report_timestamp: u32,
}

/// Compact NTP (the middle 32 bits of a 64-bit NTP time) of `us` microseconds on some epoch.
pub fn compact_ntp(us: i64) -> u32 {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    ((secs as u32) << 16) | ((frac * 65_536 / 1_000_000) as u32 & 0xffff)
}

impl CcfbReport {
    /// Decodes one RTCP packet.
    pub fn decode(buf: &[u8], convention: NumReportsConvention) -> Result<CcfbReport, WireError> {
        let h = rtcp::header(buf)?;
        if (h.pt, h.fmt) != (PT_RTPFB, FMT_CCFB) {
            return Err(WireError::UnexpectedType { pt: h.pt, fmt: h.fmt });
        }
        if h.body.len() < 8 {
            return Err(WireError::Truncated { needed: 12, have: buf.len() });
        }
        // The report timestamp closes the packet; the blocks fill what lies between.
        let (blocks_bytes, ts) = h.body.split_at(h.body.len() - 4);
        let mut r = Reader::new(blocks_bytes);
        let sender_ssrc = r.u32()?;
        let mut blocks = Vec::new();
        while r.remaining() > 0 {
            let media_ssrc = r.u32()?;
            let begin_seq = r.u16()?;
            let num = r.u16()? as usize;
            let n = match convention {
                NumReportsConvention::Count => num,
                NumReportsConvention::CountMinusOne => num + 1,
            };
            if 2 * n > r.remaining() {
                return Err(WireError::BadLength("num_reports beyond the packet"));
            }
            let mut metrics = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.u16()?;
                metrics.push(CcfbMetric {
                    received: m & 0x8000 != 0,
                    ecn: ((m >> 13) & 3) as u8,
                    ato: m & 0x1fff,
                });
            }
            if n % 2 == 1 {
                r.take(2)?;
            }
            blocks.push(CcfbBlock { media_ssrc, begin_seq, metrics });
        }
        let report_timestamp = u32::from_be_bytes([ts[0], ts[1], ts[2], ts[3]]);
        Ok(CcfbReport { sender_ssrc, blocks, report_timestamp })
    }

    /// Appends the packet (the RFC's `num_reports` convention) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let body_len = self.encoded_len() - 4;
        let pad = rtcp::write_header(out, FMT_CCFB, PT_RTPFB, body_len)?;
        debug_assert_eq!(pad, 0, "RFC 8888 bodies are 32-bit aligned");
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        for b in &self.blocks {
            let n = u16::try_from(b.metrics.len()).map_err(|_| WireError::BadLength("over 65535 metrics"))?;
            out.extend_from_slice(&b.media_ssrc.to_be_bytes());
            out.extend_from_slice(&b.begin_seq.to_be_bytes());
            out.extend_from_slice(&n.to_be_bytes());
            for m in &b.metrics {
                if m.ato > 0x1fff || m.ecn > 3 {
                    return Err(WireError::Invalid("ECN above 3 or offset above 13 bits"));
                }
                let v = (u16::from(m.received) << 15) | (u16::from(m.ecn) << 13) | m.ato;
                out.extend_from_slice(&v.to_be_bytes());
            }
            if b.metrics.len() % 2 == 1 {
                out.extend_from_slice(&[0, 0]);
            }
        }
        out.extend_from_slice(&self.report_timestamp.to_be_bytes());
        Ok(())
    }

    /// The encoded length in bytes.
    pub fn encoded_len(&self) -> usize {
        12 + self.blocks.iter().map(|b| 8 + 2 * b.metrics.len() + 2 * (b.metrics.len() % 2)).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by hand from RFC 8888 §3.1: one block of three metrics (odd: 2 bytes of padding).
    #[test]
    fn known_bytes_with_odd_count_padding() {
        let report = CcfbReport {
            sender_ssrc: 0xaabbccdd,
            blocks: vec![CcfbBlock {
                media_ssrc: 0x01020304,
                begin_seq: 500,
                metrics: vec![
                    CcfbMetric { received: true, ecn: 1, ato: 100 },
                    CcfbMetric::lost(),
                    CcfbMetric { received: true, ecn: 3, ato: ATO_OVER_RANGE },
                ],
            }],
            report_timestamp: 0x0001_8000, // 1.5 s
        };
        let bytes = vec![
            0x80 | 11,
            205,
            0x00,
            0x06, // 28 bytes
            0xaa,
            0xbb,
            0xcc,
            0xdd,
            0x01,
            0x02,
            0x03,
            0x04, //
            0x01,
            0xf4,
            0x00,
            0x03, // begin 500, 3 reports
            0xa0,
            0x64, // R=1 ECN=01 ato 100
            0x00,
            0x00, // lost
            0xff,
            0xfe, // R=1 ECN=11 over range
            0x00,
            0x00, // padding
            0x00,
            0x01,
            0x80,
            0x00, // report timestamp
        ];
        let mut out = Vec::new();
        report.encode(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(report.encoded_len(), 28);
        assert_eq!(CcfbReport::decode(&bytes, NumReportsConvention::Count).unwrap(), report);
        // Read with SCReAM's convention the same bytes claim four metrics: still well-formed
        // here (the padding becomes a fourth, lost metric).
        let other = CcfbReport::decode(&bytes, NumReportsConvention::CountMinusOne).unwrap();
        assert_eq!(other.blocks[0].metrics.len(), 4);
    }

    #[test]
    fn offsets_round_to_1024ths_and_saturate() {
        assert_eq!(CcfbMetric::received(1_000_000, 0).ato, 1024);
        assert_eq!(CcfbMetric::received(500, 0).ato, 1);
        assert_eq!(CcfbMetric::received(100_000_000, 0).ato, ATO_OVER_RANGE);
        assert_eq!(CcfbMetric::received(1_000_000, 0).offset_us(), Some(1_000_000));
        assert_eq!(compact_ntp(1_500_000), 0x0001_8000);
    }
}
