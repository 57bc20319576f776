//! Generic NACK (RFC 4585 §6.2.1): RTCP RTPFB FMT 1, asking the sender to retransmit lost RTP
//! packets (answered with RTX, RFC 4588).
//!
//! Each feedback control information (FCI) entry is a packet id (PID, the first lost sequence
//! number) and a bitmask of the 16 following lost packets (BLP: bit i set = PID + i + 1 lost).

use crate::rtcp::{header, PT_RTPFB};
use crate::{Reader, WireError};

/// RTPFB message type of the generic NACK.
pub const FMT_NACK: u8 = 1;

/// One generic NACK packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenericNack {
    /// SSRC of the packet sender (the media receiver).
    pub sender_ssrc: u32,
    /// SSRC of the media source whose packets are lost.
    pub media_ssrc: u32,
    /// `(PID, BLP)` entries.
    pub items: Vec<(u16, u16)>,
}

impl GenericNack {
    /// A NACK for `lost` sequence numbers (in increasing order, modulo 2^16): each entry covers
    /// its PID and the 16 numbers after it.
    pub fn from_lost(sender_ssrc: u32, media_ssrc: u32, lost: &[u16]) -> GenericNack {
        let mut items: Vec<(u16, u16)> = Vec::new();
        for &s in lost {
            if let Some((pid, blp)) = items.last_mut() {
                let d = s.wrapping_sub(*pid);
                if d == 0 {
                    continue;
                }
                if (1..=16).contains(&d) {
                    *blp |= 1 << (d - 1);
                    continue;
                }
            }
            items.push((s, 0));
        }
        GenericNack { sender_ssrc, media_ssrc, items }
    }

    /// Every sequence number the packet asks for, in entry order.
    pub fn lost(&self) -> impl Iterator<Item = u16> + '_ {
        self.items.iter().flat_map(|&(pid, blp)| {
            std::iter::once(pid)
                .chain((0..16u16).filter(move |i| blp & (1 << i) != 0).map(move |i| pid.wrapping_add(i + 1)))
        })
    }

    /// Size on the wire: 12 bytes of header and SSRCs, 4 per entry.
    pub fn encoded_len(&self) -> usize {
        12 + 4 * self.items.len()
    }

    /// Appends the packet to `out`. Fails on no entries (RFC 4585 requires at least one) or more
    /// than the 16-bit length field holds.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.items.is_empty() {
            return Err(WireError::Invalid("a generic NACK needs at least one entry"));
        }
        let words = self.encoded_len() / 4 - 1;
        let words = u16::try_from(words).map_err(|_| WireError::BadLength("too many NACK entries"))?;
        out.push(0x80 | FMT_NACK);
        out.push(PT_RTPFB);
        out.extend_from_slice(&words.to_be_bytes());
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&self.media_ssrc.to_be_bytes());
        for &(pid, blp) in &self.items {
            out.extend_from_slice(&pid.to_be_bytes());
            out.extend_from_slice(&blp.to_be_bytes());
        }
        Ok(())
    }

    /// Reads one generic NACK from the start of `buf`.
    pub fn decode(buf: &[u8]) -> Result<GenericNack, WireError> {
        let h = header(buf)?;
        if h.pt != PT_RTPFB || h.fmt != FMT_NACK {
            return Err(WireError::UnexpectedType { pt: h.pt, fmt: h.fmt });
        }
        let mut r = Reader::new(h.body);
        let sender_ssrc = r.u32()?;
        let media_ssrc = r.u32()?;
        if r.remaining() == 0 || !r.remaining().is_multiple_of(4) {
            return Err(WireError::BadLength("generic NACK FCI is not a whole number of entries"));
        }
        let mut items = Vec::with_capacity(r.remaining() / 4);
        while r.remaining() > 0 {
            items.push((r.u16()?, r.u16()?));
        }
        Ok(GenericNack { sender_ssrc, media_ssrc, items })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_rfc_4585_layout() {
        // Lost 100, 101, 103 and 200: one entry PID 100 BLP 0b101, one PID 200; 20 bytes, so the
        // length field (32-bit words minus one) is 4.
        let n = GenericNack::from_lost(1, 2, &[100, 101, 103, 200]);
        assert_eq!(n.items, vec![(100, 0b101), (200, 0)]);
        let mut out = Vec::new();
        n.encode(&mut out).unwrap();
        assert_eq!(out, vec![0x81, 205, 0, 4, 0, 0, 0, 1, 0, 0, 0, 2, 0, 100, 0, 0b101, 0, 200, 0, 0]);
        assert_eq!(GenericNack::decode(&out).unwrap(), n);
        assert_eq!(n.lost().collect::<Vec<_>>(), vec![100, 101, 103, 200]);
    }

    #[test]
    fn entries_wrap_around_the_sequence_space() {
        let n = GenericNack::from_lost(1, 2, &[65535, 0, 16, 17]);
        assert_eq!(n.items, vec![(65535, 1), (16, 1)]);
        assert_eq!(n.lost().collect::<Vec<_>>(), vec![65535, 0, 16, 17]);
    }

    #[test]
    fn rejects_what_is_not_a_nack() {
        let mut out = Vec::new();
        GenericNack::from_lost(1, 2, &[5]).encode(&mut out).unwrap();
        out[0] = 0x8f; // FMT 15: transport-cc
        assert!(matches!(GenericNack::decode(&out), Err(WireError::UnexpectedType { .. })));
        assert!(GenericNack { sender_ssrc: 1, media_ssrc: 2, items: vec![] }.encode(&mut out).is_err());
        let bare = [0x81, 205, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2];
        assert!(GenericNack::decode(&bare).is_err());
        assert!(GenericNack::decode(&bare[..7]).is_err());
    }
}
