//! The wire format of lowlat's transport on real sockets (`lowlat send`/`receive` for a `bulk`
//! flow, and FastAck / out-of-band Zhuge in the relay): QUIC-shaped 1-RTT packets, unencrypted.
//!
//! Every datagram is a short-header packet (RFC 9000 §17.3.1: first byte `0x43` = fixed bit,
//! 4-byte packet number), an 8-byte destination connection id, the packet number truncated to 32
//! bits (expanded as RFC 9000 §A.3 does), then frames:
//! - a data packet carries one DATAGRAM frame (RFC 9221 §4, type `0x30`: to the end of the packet)
//!   whose content starts with the sender's clock zero (Unix ns) and the send time on that clock
//!   (ns), padded with zeros to the flow's packet size;
//! - an ACK packet carries one ACK or ACK_ECN frame (RFC 9000 §19.3, types `0x02`/`0x03`; ACK
//!   delay in units of 8 us, the default `ack_delay_exponent` 3).
//!
//! No payload protection: the emulator's middleboxes read packet numbers and ACKs as a QUIC-aware
//! access point of the model does.

use lowlat_core::Duration;
use lowlat_transport::{AckFrame, AckRanges, EcnCounts};

/// First byte of every packet: short header, fixed bit, 4-byte packet number.
pub const FIRST_BYTE: u8 = 0x43;
/// The connection id both endpoints use (one connection per flow).
pub const DCID: [u8; 8] = *b"lowlat-t";
/// Header bytes: first byte, connection id, packet number.
pub const HEADER: usize = 1 + 8 + 4;
/// DATAGRAM frame type without a length (RFC 9221 §4).
const DATAGRAM: u8 = 0x30;
const ACK: u8 = 0x02;
const ACK_ECN: u8 = 0x03;
/// Bytes of a data packet before its padding: header, frame type, two u64 stamps.
pub const DATA_MIN: usize = HEADER + 1 + 16;
/// ACK delay units, ns (2^3 us).
const ACK_DELAY_UNIT_NS: u64 = 8_000;

/// A packet read from the wire.
// An ACK's ranges are inline (`AckRanges`, as the transport keeps them): a decoded packet is
// moved once, to the sender, so the larger variant costs nothing a box would save.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Datagram {
    /// A data packet: truncated packet number, the sender's clock zero (Unix ns), send time (ns).
    Data { pn32: u32, epoch_unix_ns: u64, sent_ns: u64 },
    /// An ACK packet.
    Ack { pn32: u32, frame: AckFrame },
}

/// Why bytes are not a lowlat transport packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// The full packet number closest to `largest + 1` whose low 32 bits are `pn32` (RFC 9000 §A.3).
pub fn expand_pn(largest: Option<u64>, pn32: u32) -> u64 {
    let expected = largest.map_or(0, |l| l + 1);
    let win = 1u64 << 32;
    let candidate = (expected & !(win - 1)) | u64::from(pn32);
    if candidate + win / 2 <= expected && candidate < (1 << 62) - win {
        candidate + win
    } else if candidate > expected + win / 2 && candidate >= win {
        candidate - win
    } else {
        candidate
    }
}

fn header(pn: u64, out: &mut Vec<u8>) {
    out.push(FIRST_BYTE);
    out.extend_from_slice(&DCID);
    out.extend_from_slice(&(pn as u32).to_be_bytes());
}

/// Writes a data packet of `size` bytes (at least [`DATA_MIN`]) into `out` (cleared first).
pub fn encode_data(pn: u64, epoch_unix_ns: u64, sent_ns: u64, size: usize, out: &mut Vec<u8>) {
    out.clear();
    header(pn, out);
    out.push(DATAGRAM);
    out.extend_from_slice(&epoch_unix_ns.to_be_bytes());
    out.extend_from_slice(&sent_ns.to_be_bytes());
    out.resize(size.max(DATA_MIN), 0);
}

fn varint(v: u64, out: &mut Vec<u8>) {
    // Invariant: packet numbers, ranges, delays and counts stay far below 2^62.
    lowlat_wire::varint::write(v.min(lowlat_wire::varint::MAX), out).expect("clamped to the varint range");
}

/// Writes an ACK packet numbered `pn` carrying `frame` into `out` (cleared first). An empty
/// frame writes nothing.
pub fn encode_ack(pn: u64, frame: &AckFrame, out: &mut Vec<u8>) {
    out.clear();
    let Some(&(lo, hi)) = frame.ranges.first() else { return };
    header(pn, out);
    out.push(if frame.ecn.is_some() { ACK_ECN } else { ACK });
    varint(hi, out);
    varint(frame.ack_delay.as_nanos() / ACK_DELAY_UNIT_NS, out);
    varint(frame.ranges.len() as u64 - 1, out);
    varint(hi - lo, out);
    let mut prev_lo = lo;
    for &(lo, hi) in &frame.ranges[1..] {
        varint(prev_lo - hi - 2, out);
        varint(hi - lo, out);
        prev_lo = lo;
    }
    if let Some(e) = frame.ecn {
        varint(e.ect0, out);
        varint(e.ect1, out);
        varint(e.ce, out);
    }
}

/// Reads a varint at `*at`, advancing it.
fn read_varint(b: &[u8], at: &mut usize) -> Result<u64, Malformed> {
    let first = *b.get(*at).ok_or(Malformed("truncated varint"))?;
    let n = 1usize << (first >> 6);
    let bytes = b.get(*at..*at + n).ok_or(Malformed("truncated varint"))?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = (v << 8) | u64::from(x);
    }
    *at += n;
    Ok(v)
}

/// Reads one packet. Anything else (another header, connection id or frame, a truncated or
/// inconsistent ACK) is [`Malformed`].
pub fn decode(b: &[u8]) -> Result<Datagram, Malformed> {
    if b.len() < HEADER + 1 || b[0] != FIRST_BYTE || b[1..9] != DCID {
        return Err(Malformed("not a lowlat transport packet (header)"));
    }
    let pn32 = u32::from_be_bytes(b[9..13].try_into().expect("4 bytes"));
    let word = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    match b[HEADER] {
        DATAGRAM if b.len() >= DATA_MIN => {
            Ok(Datagram::Data { pn32, epoch_unix_ns: word(HEADER + 1), sent_ns: word(HEADER + 9) })
        }
        t @ (ACK | ACK_ECN) => {
            let mut at = HEADER + 1;
            let largest = read_varint(b, &mut at)?;
            let delay = read_varint(b, &mut at)?;
            let count = read_varint(b, &mut at)?;
            let first = read_varint(b, &mut at)?;
            let lo = largest.checked_sub(first).ok_or(Malformed("ACK range below zero"))?;
            // A range needs at least two bytes: a count beyond the packet is a lie.
            if count as usize > b.len() {
                return Err(Malformed("ACK range count beyond the packet"));
            }
            let mut ranges = AckRanges::new();
            ranges.push((lo, largest));
            let mut prev_lo = lo;
            for _ in 0..count {
                let gap = read_varint(b, &mut at)?;
                let len = read_varint(b, &mut at)?;
                let hi = prev_lo.checked_sub(gap + 2).ok_or(Malformed("ACK gap below zero"))?;
                let lo = hi.checked_sub(len).ok_or(Malformed("ACK range below zero"))?;
                ranges.push((lo, hi));
                prev_lo = lo;
            }
            let ecn = if t == ACK_ECN {
                Some(EcnCounts {
                    ect0: read_varint(b, &mut at)?,
                    ect1: read_varint(b, &mut at)?,
                    ce: read_varint(b, &mut at)?,
                })
            } else {
                None
            };
            let ack_delay = Duration(delay.saturating_mul(ACK_DELAY_UNIT_NS));
            Ok(Datagram::Ack { pn32, frame: AckFrame { ranges, ack_delay, ecn } })
        }
        _ => Err(Malformed("not a lowlat transport packet (frame)")),
    }
}

/// The truncated packet number of a lowlat transport packet, without reading its frames (what
/// the relay needs per datagram).
pub fn peek_pn(b: &[u8]) -> Option<u32> {
    (b.len() > HEADER && b[0] == FIRST_BYTE && b[1..9] == DCID)
        .then(|| u32::from_be_bytes(b[9..13].try_into().expect("4 bytes")))
}

/// Whether a packet (checked by [`peek_pn`]) is a data packet.
pub fn is_data(b: &[u8]) -> bool {
    b.len() >= DATA_MIN && b[HEADER] == DATAGRAM
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_frames_round_trip_and_lies_are_refused() {
        let f = AckFrame {
            ranges: AckRanges::from_slice(&[(100, 200), (50, 97), (0, 2)]),
            ack_delay: Duration::from_millis(1),
            ecn: Some(EcnCounts { ect0: 1, ect1: 70_000, ce: 3 }),
        };
        let mut out = Vec::new();
        encode_ack(7, &f, &mut out);
        // The frame's bytes are what the transport model counts for it.
        assert_eq!((out.len() - HEADER) as u64, f.encoded_len());
        assert_eq!(decode(&out), Ok(Datagram::Ack { pn32: 7, frame: f.clone() }));
        let plain = AckFrame { ecn: None, ..f };
        encode_ack(1 << 33, &plain, &mut out);
        assert_eq!(decode(&out), Ok(Datagram::Ack { pn32: 0, frame: plain }));
        for cut in HEADER..out.len() {
            assert!(decode(&out[..cut]).is_err(), "cut at {cut}");
        }
        // Ranges reaching below zero: largest 5, first range 10; a gap past the first range.
        let mut lie = out[..HEADER].to_vec();
        lie.extend_from_slice(&[ACK, 5, 0, 0, 10]);
        assert_eq!(decode(&lie), Err(Malformed("ACK range below zero")));
        lie[HEADER..].copy_from_slice(&[ACK, 5, 0, 1, 1]);
        lie.extend_from_slice(&[9, 0]);
        assert_eq!(decode(&lie), Err(Malformed("ACK gap below zero")));
        assert_eq!(decode(&[0x43; 5]), Err(Malformed("not a lowlat transport packet (header)")));
    }

    #[test]
    fn data_packets_carry_their_stamps_and_numbers_expand() {
        let mut out = Vec::new();
        encode_data(5, 11, 22, 1200, &mut out);
        assert_eq!(out.len(), 1200);
        assert_eq!(decode(&out), Ok(Datagram::Data { pn32: 5, epoch_unix_ns: 11, sent_ns: 22 }));
        assert_eq!(peek_pn(&out), Some(5));
        assert!(is_data(&out));
        assert_eq!(expand_pn(None, 0), 0);
        assert_eq!(expand_pn(Some(0xffff_fffe), 1), 0x1_0000_0001);
        assert_eq!(expand_pn(Some(0x1_0000_0001), 0xffff_fff0), 0xffff_fff0);
        assert_eq!(expand_pn(Some(10), 9), 9);
    }
}
