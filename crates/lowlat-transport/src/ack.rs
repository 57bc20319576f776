//! ACK frames (RFC 9000 §19.3): the ranges of packet numbers received, newest first, and the
//! ECN counts of an ACK_ECN frame (type 0x03, RFC 9000 §19.3.2).

use lowlat_core::Duration;
use smallvec::SmallVec;

/// The ranges of one frame, inline up to the receiver's default `max_ranges` (32): once a loss
/// leaves holes the receiver keeps reporting them (retransmissions take new packet numbers, so
/// the holes never fill), and with four inline ranges every ACK of a lossy bulk flow allocated
/// (0.5 allocations per data packet on the CUBIC benchmark). Copying 512 bytes is cheaper.
pub type AckRanges = SmallVec<[(u64, u64); 32]>;

/// The ECN counts of an ACK_ECN frame: packets received with each codepoint since the start
/// (RFC 9000 §13.4.1), cumulative so a lost ACK loses no information.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnCounts {
    /// Packets received with ECT(0).
    pub ect0: u64,
    /// Packets received with ECT(1).
    pub ect1: u64,
    /// Packets received with CE.
    pub ce: u64,
}

impl EcnCounts {
    /// Counts a packet that arrived with ECN bits `ecn` (Not-ECT is not counted).
    pub fn count(&mut self, ecn: u8) {
        match ecn & 3 {
            1 => self.ect1 += 1,
            2 => self.ect0 += 1,
            3 => self.ce += 1,
            _ => {}
        }
    }

    /// Whether any ECN-capable packet was counted.
    pub fn any(&self) -> bool {
        self.ect0 + self.ect1 + self.ce > 0
    }
}

/// What one ACK frame says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckFrame {
    /// Received packet numbers as inclusive ranges `(low, high)`, highest range first; ranges do
    /// not touch or overlap.
    pub ranges: AckRanges,
    /// How long the receiver held the largest packet before sending this frame.
    pub ack_delay: Duration,
    /// The ECN counts (an ACK_ECN frame) once the receiver has seen an ECN-capable packet.
    pub ecn: Option<EcnCounts>,
}

/// Bytes of a QUIC variable-length integer (RFC 9000 §16).
#[inline]
fn varint_len(v: u64) -> u64 {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// The smallest value whose varint is longer than `v`'s (`u64::MAX` past the longest).
pub(crate) fn varint_limit(v: u64) -> u64 {
    match v {
        0..=63 => 64,
        64..=16_383 => 16_384,
        16_384..=1_073_741_823 => 1 << 30,
        _ => u64::MAX,
    }
}

impl AckFrame {
    /// The largest packet number acknowledged.
    pub fn largest(&self) -> Option<u64> {
        self.ranges.first().map(|r| r.1)
    }

    /// Whether `pn` is acknowledged (binary search over the ranges).
    pub fn contains(&self, pn: u64) -> bool {
        // Ranges are sorted descending by their bounds.
        let i = self.ranges.partition_point(|r| r.0 > pn);
        self.ranges.get(i).is_some_and(|r| r.0 <= pn && pn <= r.1)
    }

    /// The frame's encoded size: type, largest, delay (in 8 us units, the default exponent),
    /// range count, first range, then a gap and a length per further range.
    pub fn encoded_len(&self) -> u64 {
        encoded_len_with(&self.ranges, self.ack_delay, self.ecn, tail_len(&self.ranges))
    }

    /// Size of a UDP datagram carrying only this frame in a 1-RTT QUIC packet: IPv4 + UDP 28 B,
    /// short header 1 + 8-byte connection id + 2-byte packet number, 16 B AEAD tag.
    pub fn datagram_len(&self) -> u64 {
        DATAGRAM_OVERHEAD + self.encoded_len()
    }
}

/// What a datagram carrying one ACK frame adds to it (see [`AckFrame::datagram_len`]).
pub const DATAGRAM_OVERHEAD: u64 = 28 + 11 + 16;

/// The bytes of the ranges after the first (a gap and a length each), given highest first: what
/// a receiver that keeps its ranges can remember between frames, as only the first range grows
/// while packets arrive in order.
pub(crate) fn tail_len(ranges: &[(u64, u64)]) -> u64 {
    let Some(&(mut prev_lo, _)) = ranges.first() else { return 0 };
    let mut n = 0;
    for &(lo, hi) in &ranges[1..] {
        n += varint_len(prev_lo - hi - 2) + varint_len(hi - lo);
        prev_lo = lo;
    }
    n
}

/// [`AckFrame::encoded_len`] of a frame of these fields, with [`tail_len`] of its ranges given.
pub(crate) fn encoded_len_with(
    ranges: &[(u64, u64)],
    ack_delay: Duration,
    ecn: Option<EcnCounts>,
    tail: u64,
) -> u64 {
    let Some(&(lo, hi)) = ranges.first() else { return 0 };
    let mut n = 1 + varint_len(hi) + varint_len(ack_delay.as_nanos() / 8_000);
    n += varint_len(ranges.len() as u64 - 1) + varint_len(hi - lo) + tail;
    if let Some(e) = ecn {
        n += varint_len(e.ect0) + varint_len(e.ect1) + varint_len(e.ce);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_and_sizes() {
        let a = AckFrame {
            ranges: AckRanges::from_slice(&[(10, 20), (5, 7), (0, 2)]),
            ack_delay: Duration::from_millis(1),
            ecn: None,
        };
        assert_eq!(a.largest(), Some(20));
        assert!(a.contains(10) && a.contains(20) && a.contains(6) && a.contains(0));
        assert!(!a.contains(8) && !a.contains(21) && !a.contains(3));
        // type 1, largest 1, delay 125 -> 2, count 1, first 1, (gap 1, len 1) x 2.
        assert_eq!(a.encoded_len(), 1 + 1 + 2 + 1 + 1 + 2 + 2);
        // ACK_ECN: three more varints.
        let e = AckFrame { ecn: Some(EcnCounts { ect0: 0, ect1: 100, ce: 3 }), ..a };
        assert_eq!(e.encoded_len(), 10 + 1 + 2 + 1);
    }
}
