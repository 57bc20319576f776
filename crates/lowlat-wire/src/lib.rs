//! Bytes on the wire: RTP with the transport-wide sequence number extension, and the two RTCP
//! congestion-control feedback formats.
//!
//! - [`rtp`]: the RTP fixed header (RFC 3550) with the one-byte header extension (RFC 8285)
//!   carrying the 16-bit transport-wide sequence number
//!   (draft-holmer-rmcat-transport-wide-cc-extensions-01).
//! - [`twcc`]: transport-wide congestion control feedback, RTCP RTPFB FMT 15.
//! - [`ccfb`]: RFC 8888 congestion control feedback, RTCP RTPFB FMT 11.
//! - [`nack`]: the generic NACK (RFC 4585 §6.2.1), RTCP RTPFB FMT 1, for retransmissions.
//! - [`rtcp`]: walking a compound RTCP packet.
//! - [`pcap`]: a minimal capture writer, to read our packets with Wireshark.
//! - [`scone`]: the SCONE packet (draft-ietf-scone-protocol): a 7-bit throughput advice that
//!   network elements may only lower.
//! - [`netsignal`]: the capacity/queue signal of SCONE-PRO for RTC, a CC_PARAMETER-style frame.
//! - [`varint`]: QUIC variable-length integers (RFC 9000 §16).
//!
//! Sans-IO and allocation-light: decoders read byte slices, encoders append to a `Vec<u8>`.
//! Decoding never panics on any input: malformed bytes give a [`WireError`] (a fuzz-style test
//! decodes hundreds of thousands of random and mutated packets; `fuzz/` holds cargo-fuzz targets).
//!
//! Why hand-written: the webrtc-rs `rtp`/`rtcp` crates (and their sans-IO `rtc-*` successors)
//! bring `bytes`, their shared utility crate and, for the former, an async stack, for three small
//! formats; their transport-cc encoder also fixes its own chunk choices. The formats here are a
//! few hundred lines, checked against an independent implementation's vectors (pion, in the
//! tests) and against hand-written vectors from the specifications.

pub mod ccfb;
pub mod nack;
pub mod netsignal;
pub mod pcap;
pub mod rtcp;
pub mod rtp;
pub mod scone;
pub mod twcc;
pub mod varint;

pub use ccfb::{CcfbBlock, CcfbMetric, CcfbReport, NumReportsConvention};
pub use nack::GenericNack;
pub use netsignal::{NetworkSignalFrame, NetworkSignalRepr};
pub use rtcp::{decode_compound, RtcpPacket};
pub use rtp::RtpHeader;
pub use scone::{SconePacket, SconeRepr};
pub use twcc::{TransportCcFeedback, TwccBuilder};

/// Why bytes could not be decoded (or a value could not be encoded).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The buffer ends before the structure does.
    #[error("truncated: needed {needed} bytes, have {have}")]
    Truncated {
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes there are.
        have: usize,
    },
    /// The version field is not 2.
    #[error("bad version {0}, expected 2")]
    BadVersion(u8),
    /// A length field disagrees with the buffer or the content.
    #[error("bad length: {0}")]
    BadLength(&'static str),
    /// The packet is not the type the decoder reads.
    #[error("unexpected packet type {pt} format {fmt}")]
    UnexpectedType {
        /// RTCP packet type.
        pt: u8,
        /// RTCP feedback message type.
        fmt: u8,
    },
    /// A QUIC long-header packet whose version is not SCONE's (0x6f7dc0fd / 0xef7dc0fd).
    #[error("bad SCONE version {0:#010x}, expected 0x6f7dc0fd or 0xef7dc0fd")]
    BadSconeVersion(u32),
    /// A field holds a value the format reserves or forbids.
    #[error("invalid: {0}")]
    Invalid(&'static str),
}

/// Reads big-endian integers from a slice, failing instead of panicking.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.remaining() < n {
            return Err(WireError::Truncated { needed: self.pos + n, have: self.buf.len() });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, WireError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}
