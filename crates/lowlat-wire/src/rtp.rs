//! The RTP fixed header (RFC 3550 §5.1) with the transport-wide sequence number in a one-byte
//! header extension (RFC 8285 §4.2; draft-holmer-rmcat-transport-wide-cc-extensions-01 §2).

use crate::{Reader, WireError};

/// The "defined by profile" value of the one-byte header extension form.
const ONE_BYTE_PROFILE: u16 = 0xBEDE;

/// The extension id the transport-wide sequence number uses unless SDP negotiates another
/// (`a=extmap:5 ...transport-wide-cc-extensions-01`, as browsers commonly offer it).
pub const DEFAULT_TRANSPORT_SEQ_ID: u8 = 5;

/// An RTP header, as far as congestion control cares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RtpHeader {
    /// Marker bit (last packet of a video frame).
    pub marker: bool,
    /// Payload type (7 bits).
    pub payload_type: u8,
    /// RTP sequence number.
    pub sequence_number: u16,
    /// RTP timestamp.
    pub timestamp: u32,
    /// Synchronisation source.
    pub ssrc: u32,
    /// Contributing sources.
    pub csrcs: Vec<u32>,
    /// The transport-wide sequence number, if the extension is present.
    pub transport_seq: Option<u16>,
}

impl RtpHeader {
    /// Appends the header (with the extension when `transport_seq` is set, under id `ext_id`,
    /// 1..=14) to `out`.
    pub fn encode(&self, ext_id: u8, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.payload_type > 127 {
            return Err(WireError::Invalid("payload type above 127"));
        }
        if self.csrcs.len() > 15 {
            return Err(WireError::Invalid("more than 15 CSRCs"));
        }
        if self.transport_seq.is_some() && !(1..=14).contains(&ext_id) {
            return Err(WireError::Invalid("one-byte extension ids are 1..=14"));
        }
        let x = u8::from(self.transport_seq.is_some());
        out.push(0x80 | (x << 4) | self.csrcs.len() as u8);
        out.push((u8::from(self.marker) << 7) | self.payload_type);
        out.extend_from_slice(&self.sequence_number.to_be_bytes());
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&self.ssrc.to_be_bytes());
        for c in &self.csrcs {
            out.extend_from_slice(&c.to_be_bytes());
        }
        if let Some(seq) = self.transport_seq {
            // One 32-bit word: id/len byte, two data bytes, one padding byte.
            out.extend_from_slice(&ONE_BYTE_PROFILE.to_be_bytes());
            out.extend_from_slice(&1u16.to_be_bytes());
            out.push((ext_id << 4) | 1);
            out.extend_from_slice(&seq.to_be_bytes());
            out.push(0);
        }
        Ok(())
    }

    /// Decodes a header; returns it and the payload's `(offset, length)` (padding removed).
    /// The transport-wide sequence number is read from extension element `ext_id`; other
    /// extensions are skipped.
    pub fn decode(buf: &[u8], ext_id: u8) -> Result<(RtpHeader, usize, usize), WireError> {
        let mut r = Reader::new(buf);
        let b0 = r.u8()?;
        if b0 >> 6 != 2 {
            return Err(WireError::BadVersion(b0 >> 6));
        }
        let (padding, extension, cc) = (b0 & 0x20 != 0, b0 & 0x10 != 0, (b0 & 0x0f) as usize);
        let b1 = r.u8()?;
        let mut h = RtpHeader {
            marker: b1 & 0x80 != 0,
            payload_type: b1 & 0x7f,
            sequence_number: r.u16()?,
            timestamp: r.u32()?,
            ssrc: r.u32()?,
            csrcs: Vec::with_capacity(cc),
            transport_seq: None,
        };
        for _ in 0..cc {
            h.csrcs.push(r.u32()?);
        }
        if extension {
            let profile = r.u16()?;
            let words = r.u16()? as usize;
            let data = r.take(4 * words)?;
            if profile == ONE_BYTE_PROFILE {
                h.transport_seq = one_byte_element(data, ext_id)?;
            }
        }
        let start = r.pos();
        let mut end = buf.len();
        if padding {
            let pad = *buf.last().ok_or(WireError::Invalid("padding bit without padding"))? as usize;
            if pad == 0 || pad > end - start {
                return Err(WireError::BadLength("padding longer than the payload"));
            }
            end -= pad;
        }
        Ok((h, start, end - start))
    }
}

/// Finds element `id` of a one-byte-form extension block and reads it as a u16.
fn one_byte_element(data: &[u8], id: u8) -> Result<Option<u16>, WireError> {
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        if b == 0 {
            i += 1; // padding byte
            continue;
        }
        let (eid, len) = (b >> 4, (b & 0x0f) as usize + 1);
        if eid == 15 {
            break; // reserved: stop parsing (RFC 8285 §4.2)
        }
        let value = data.get(i + 1..i + 1 + len).ok_or(WireError::BadLength("extension element overruns"))?;
        if eid == id {
            if len != 2 {
                return Err(WireError::Invalid("transport-wide sequence number must be 2 bytes"));
            }
            return Ok(Some(u16::from_be_bytes([value[0], value[1]])));
        }
        i += 1 + len;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_header_with_transport_sequence_extension() {
        // V=2 X=1 CC=0; M=1 PT=96; seq 0x1234; ts 0xdeadbeef; ssrc 0x01020304;
        // extension 0xBEDE, 1 word: id 5 len 1 -> 0x51, value 0xabcd, pad.
        let bytes = [
            0x90, 0xe0, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0xbe, 0xde, 0x00, 0x01,
            0x51, 0xab, 0xcd, 0x00, 0xff, 0xee,
        ];
        let (h, off, len) = RtpHeader::decode(&bytes, 5).unwrap();
        assert!(h.marker);
        assert_eq!(
            (h.payload_type, h.sequence_number, h.timestamp, h.ssrc),
            (96, 0x1234, 0xdeadbeef, 0x01020304)
        );
        assert_eq!(h.transport_seq, Some(0xabcd));
        assert_eq!((off, len), (20, 2));
        let mut out = Vec::new();
        h.encode(5, &mut out).unwrap();
        assert_eq!(out, bytes[..20]);
        // Under another id the element is skipped.
        assert_eq!(RtpHeader::decode(&bytes, 3).unwrap().0.transport_seq, None);
    }

    #[test]
    fn other_elements_padding_and_csrcs() {
        let h = RtpHeader {
            marker: false,
            payload_type: 111,
            sequence_number: 7,
            timestamp: 9,
            ssrc: 42,
            csrcs: vec![1, 2],
            transport_seq: None,
        };
        let mut out = Vec::new();
        h.encode(5, &mut out).unwrap();
        // Add an extension by hand: id 1 (3 bytes), padding, id 5 (2 bytes), and RTP padding.
        out[0] |= 0x10 | 0x20;
        out.extend_from_slice(&[0xbe, 0xde, 0x00, 0x02, 0x12, 9, 9, 9, 0x00, 0x51, 0x00, 0x07]);
        out.extend_from_slice(&[0xaa, 0xbb, 0, 0, 3]);
        let (d, off, len) = RtpHeader::decode(&out, 5).unwrap();
        assert_eq!(d.csrcs, vec![1, 2]);
        assert_eq!(d.transport_seq, Some(7));
        assert_eq!((len, out[off]), (2, 0xaa));
    }
}
