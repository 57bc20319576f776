//! The packet record that travels through the network models.
//!
//! A [`Packet`] is a small `Copy` value: queues and links move it by value, so forwarding a packet
//! never allocates. Application payloads (RTP headers, feedback reports, ACK frames) live with the
//! application that owns the flow, referenced by [`Packet::app`].

use crate::{Bytes, Ecn, FlowId, Time};

/// What a packet carries, as far as the network cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum PacketKind {
    /// Forward-path data (media, bulk, CBR).
    #[default]
    Data,
    /// Reverse-path control (feedback, ACKs).
    Feedback,
}

/// A bit of [`Packet::app`] that marks a feedback packet carrying no congestion-control feedback
/// (an RTCP NACK): a middlebox that replaces or holds the receiver's congestion-control feedback
/// (Zhuge) lets it pass as it is.
pub const APP_NON_CC_FEEDBACK: u64 = 1 << 62;

/// One packet in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Unique per run, in order of creation.
    pub id: u64,
    /// The flow it belongs to.
    pub flow: FlowId,
    /// Size on the wire (IP packet), bytes.
    pub size: u32,
    /// Sequence number within its flow and direction.
    pub seq: u64,
    /// When the source handed it to the network.
    pub sent_at: Time,
    /// When it entered the queue it is in now (set by the queue, used for sojourn time).
    pub enqueued_at: Time,
    /// Data or feedback.
    pub kind: PacketKind,
    /// The two ECN bits as the IP header carries them (0 = Not-ECT, 1 = ECT(1), 2 = ECT(0), 3 = CE;
    /// see [`Ecn`]).
    pub ecn: u8,
    /// Index of the next hop on its path (driver bookkeeping).
    pub hop: u8,
    /// Opaque reference for the owning application (payload index, frame id, ...).
    pub app: u64,
}

impl Packet {
    /// A data packet of `size` bytes.
    pub fn new(id: u64, flow: FlowId, size: Bytes, seq: u64, sent_at: Time) -> Packet {
        Packet {
            id,
            flow,
            size: u32::try_from(size.0).unwrap_or(u32::MAX),
            seq,
            sent_at,
            enqueued_at: sent_at,
            kind: PacketKind::Data,
            ecn: 0,
            hop: 0,
            app: 0,
        }
    }

    /// Its ECN codepoint.
    pub fn ecn_codepoint(&self) -> Ecn {
        Ecn::from_bits(self.ecn)
    }

    /// Marks it Congestion Experienced if it is ECN-capable (RFC 3168 §5); returns whether it
    /// now carries CE (a Not-ECT packet is left alone: the queue must drop it instead).
    pub fn mark_ce(&mut self) -> bool {
        if self.ecn_codepoint().is_ect() {
            self.ecn = Ecn::Ce.bits();
            true
        } else {
            false
        }
    }

    /// Its size as [`Bytes`].
    pub fn bytes(&self) -> Bytes {
        Bytes(self.size as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_small_and_marks_only_ect_packets() {
        // Queues move packets by value: keep it within one 64-byte cache line.
        assert!(std::mem::size_of::<Packet>() <= 64, "{}", std::mem::size_of::<Packet>());
        let mut p = Packet::new(0, FlowId(0), Bytes(100), 0, Time::ZERO);
        assert!(!p.mark_ce());
        assert_eq!(p.ecn_codepoint(), Ecn::NotEct);
        p.ecn = Ecn::Ect1.bits();
        assert!(p.mark_ce());
        assert_eq!(p.ecn_codepoint(), Ecn::Ce);
    }
}
