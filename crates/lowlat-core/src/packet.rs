//! The packet record that travels through the network models.
//!
//! A [`Packet`] is a small `Copy` value: queues and links move it by value, so forwarding a packet
//! never allocates. Application payloads (RTP headers, feedback reports, ACK frames) live with the
//! application that owns the flow, referenced by [`Packet::app`].

use crate::{Bytes, FlowId, Time};

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
    /// The two ECN bits (0 = not ECT).
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

    /// Its size as [`Bytes`].
    pub fn bytes(&self) -> Bytes {
        Bytes(self.size as u64)
    }
}
