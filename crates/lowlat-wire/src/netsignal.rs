//! The capacity/queue signal an access point sends a media sender (SCONE-PRO for RTC), as a
//! frame in the style of the CC_PARAMETER frame of the XQUIC fork the SCONE-PRO hackathon used
//! (type 0x32, then QUIC varints).
//!
//! ```text
//! NETWORK_SIGNAL Frame {
//!   Type (i) = 0x32,
//!   Sequence Number (i),      -- per sender, to drop a reordered older signal
//!   Capacity (i),             -- bit/s the element gives this flow
//!   Queue Length (i),         -- bytes waiting in the element's queue
//!   Queue Delay (i),          -- microseconds the head of that queue has waited
//! }
//! ```
//! XQUIC's CC_PARAMETER carries (cwnd, pacing_rate, bw, queue_size, srtt) from an endpoint; the
//! element's signal needs the capacity (`bw`) and the queue (`queue_size`), to which it adds a
//! sequence number and the queue's delay. It travels alone in a UDP datagram
//! ([`NetworkSignalRepr::datagram_len`]).
//!
//! Checked-packet/`Repr` style: [`NetworkSignalFrame::new_checked`] validates once, then the
//! accessors cannot panic; [`NetworkSignalRepr`] parses and emits. Decoding never panics.

use crate::{varint, Reader, WireError};

/// The frame type (the CC_PARAMETER frame's).
pub const FRAME_TYPE: u64 = 0x32;

/// Bytes of IPv4 and UDP headers around the frame.
pub const IP_UDP_OVERHEAD: usize = 28;

/// A buffer holding a NETWORK_SIGNAL frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetworkSignalFrame<T: AsRef<[u8]>> {
    buffer: T,
    /// The parsed fields (the varints are read once, by `check`).
    fields: [u64; 4],
}

impl<T: AsRef<[u8]>> NetworkSignalFrame<T> {
    /// Wraps and checks `buffer`: the type, four varints, nothing missing.
    pub fn new_checked(buffer: T) -> Result<NetworkSignalFrame<T>, WireError> {
        let mut r = Reader::new(buffer.as_ref());
        let t = varint::read(&mut r)?;
        if t != FRAME_TYPE {
            return Err(WireError::Invalid("not a NETWORK_SIGNAL frame (type 0x32)"));
        }
        let mut fields = [0; 4];
        for f in &mut fields {
            *f = varint::read(&mut r)?;
        }
        Ok(NetworkSignalFrame { buffer, fields })
    }

    /// The frame's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Sequence number.
    pub fn sequence(&self) -> u64 {
        self.fields[0]
    }

    /// Capacity, bit/s.
    pub fn capacity_bps(&self) -> u64 {
        self.fields[1]
    }

    /// Queue length, bytes.
    pub fn queue_bytes(&self) -> u64 {
        self.fields[2]
    }

    /// Queue delay, microseconds.
    pub fn queue_delay_us(&self) -> u64 {
        self.fields[3]
    }
}

/// A parsed NETWORK_SIGNAL frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkSignalRepr {
    /// Sequence number (per flow, from 0).
    pub sequence: u64,
    /// Capacity the element gives the flow, bit/s.
    pub capacity_bps: u64,
    /// Bytes in the element's queue.
    pub queue_bytes: u64,
    /// How long the queue's head has waited, microseconds.
    pub queue_delay_us: u64,
}

impl NetworkSignalRepr {
    /// Parses a checked frame.
    pub fn parse<T: AsRef<[u8]>>(f: &NetworkSignalFrame<T>) -> NetworkSignalRepr {
        NetworkSignalRepr {
            sequence: f.sequence(),
            capacity_bps: f.capacity_bps(),
            queue_bytes: f.queue_bytes(),
            queue_delay_us: f.queue_delay_us(),
        }
    }

    /// Decodes a frame at the start of `buf`.
    pub fn decode(buf: &[u8]) -> Result<NetworkSignalRepr, WireError> {
        NetworkSignalFrame::new_checked(buf).map(|f| NetworkSignalRepr::parse(&f))
    }

    /// Bytes of the frame.
    pub fn buffer_len(&self) -> usize {
        varint::len(FRAME_TYPE)
            + varint::len(self.sequence)
            + varint::len(self.capacity_bps)
            + varint::len(self.queue_bytes)
            + varint::len(self.queue_delay_us)
    }

    /// Bytes of the UDP datagram carrying it alone.
    pub fn datagram_len(&self) -> usize {
        IP_UDP_OVERHEAD + self.buffer_len()
    }

    /// Appends the frame; a field above 2^62 - 1 is an error.
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let start = out.len();
        let r = [FRAME_TYPE, self.sequence, self.capacity_bps, self.queue_bytes, self.queue_delay_us]
            .into_iter()
            .try_for_each(|v| varint::write(v, out));
        if r.is_err() {
            out.truncate(start);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_written_frame_decodes() {
        // type 0x32, seq 5, capacity 20 000 000 (4-byte varint 0x81312d00), queue 1500 (0x45dc),
        // delay 0.
        let bytes = [0x32, 0x05, 0x81, 0x31, 0x2d, 0x00, 0x45, 0xdc, 0x00];
        let r = NetworkSignalRepr::decode(&bytes).unwrap();
        let want =
            NetworkSignalRepr { sequence: 5, capacity_bps: 20_000_000, queue_bytes: 1500, queue_delay_us: 0 };
        assert_eq!(r, want);
        let mut out = Vec::new();
        want.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(want.buffer_len(), 9);
        assert_eq!(want.datagram_len(), 37);
        assert!(NetworkSignalRepr::decode(&bytes[..8]).is_err());
        let mut wrong = bytes;
        wrong[0] = 0x33;
        assert!(NetworkSignalRepr::decode(&wrong).is_err());
        let huge = NetworkSignalRepr { capacity_bps: u64::MAX, ..want };
        let mut out = vec![1];
        assert!(huge.emit(&mut out).is_err());
        assert_eq!(out, [1], "a failed emit leaves the buffer as it was");
    }
}
