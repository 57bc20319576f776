//! RTCP common header (RFC 3550 §6.4.1) and compound packets.

use crate::ccfb::{CcfbReport, NumReportsConvention};
use crate::twcc::TransportCcFeedback;
use crate::{Reader, WireError};

/// RTCP packet type of transport-layer feedback (RTPFB, RFC 4585).
pub const PT_RTPFB: u8 = 205;
/// RTPFB message type of transport-wide congestion control feedback.
pub const FMT_TRANSPORT_CC: u8 = 15;
/// RTPFB message type of RFC 8888 congestion control feedback.
pub const FMT_CCFB: u8 = 11;

/// One RTCP packet of a compound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RtcpPacket {
    /// Transport-wide congestion control feedback.
    TransportCc(TransportCcFeedback),
    /// RFC 8888 feedback.
    Ccfb(CcfbReport),
    /// Anything else, skipped.
    Other {
        /// Packet type.
        pt: u8,
        /// Count / format field.
        fmt: u8,
        /// Length in bytes.
        len: usize,
    },
}

/// An RTCP header and the packet's bytes (without padding).
pub(crate) struct Header<'a> {
    pub(crate) fmt: u8,
    pub(crate) pt: u8,
    /// The body after the 4-byte header, padding removed.
    pub(crate) body: &'a [u8],
    /// Length of the whole packet, padding included.
    pub(crate) len: usize,
}

/// Reads one packet's header from the start of `buf`.
pub(crate) fn header(buf: &[u8]) -> Result<Header<'_>, WireError> {
    let mut r = Reader::new(buf);
    let b0 = r.u8()?;
    if b0 >> 6 != 2 {
        return Err(WireError::BadVersion(b0 >> 6));
    }
    let pt = r.u8()?;
    let len = (r.u16()? as usize + 1) * 4;
    if len > buf.len() {
        return Err(WireError::Truncated { needed: len, have: buf.len() });
    }
    let mut end = len;
    if b0 & 0x20 != 0 {
        let pad = buf[len - 1] as usize;
        if pad == 0 || pad > len - 4 {
            return Err(WireError::BadLength("RTCP padding longer than the packet"));
        }
        end -= pad;
    }
    Ok(Header { fmt: b0 & 0x1f, pt, body: &buf[4..end], len })
}

/// Appends an RTCP header for a body of `body_len` bytes that will be padded to 32 bits; returns
/// the number of padding bytes the caller must append (the last of them holding the count).
pub(crate) fn write_header(out: &mut Vec<u8>, fmt: u8, pt: u8, body_len: usize) -> Result<usize, WireError> {
    let pad = (4 - body_len % 4) % 4;
    let words = (4 + body_len + pad) / 4 - 1;
    let words = u16::try_from(words).map_err(|_| WireError::BadLength("RTCP packet over 256 KiB"))?;
    out.push(0x80 | if pad > 0 { 0x20 } else { 0 } | (fmt & 0x1f));
    out.push(pt);
    out.extend_from_slice(&words.to_be_bytes());
    Ok(pad)
}

/// Appends `pad` padding bytes, the last holding the count (RFC 3550 §6.4.1).
pub(crate) fn write_padding(out: &mut Vec<u8>, pad: usize) {
    if pad > 0 {
        out.extend(std::iter::repeat_n(0u8, pad - 1));
        out.push(pad as u8);
    }
}

/// Decodes every packet of a compound RTCP packet; feedback of the two congestion-control
/// formats is parsed, the rest reported as [`RtcpPacket::Other`].
pub fn decode_compound(buf: &[u8], convention: NumReportsConvention) -> Result<Vec<RtcpPacket>, WireError> {
    let mut out = Vec::new();
    let mut rest = buf;
    while !rest.is_empty() {
        let h = header(rest)?;
        let p = match (h.pt, h.fmt) {
            (PT_RTPFB, FMT_TRANSPORT_CC) => {
                RtcpPacket::TransportCc(TransportCcFeedback::decode(&rest[..h.len])?)
            }
            (PT_RTPFB, FMT_CCFB) => RtcpPacket::Ccfb(CcfbReport::decode(&rest[..h.len], convention)?),
            _ => RtcpPacket::Other { pt: h.pt, fmt: h.fmt, len: h.len },
        };
        out.push(p);
        rest = &rest[h.len..];
    }
    Ok(out)
}
