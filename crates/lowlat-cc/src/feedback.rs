//! What a rate controller learns: sent packets, per-packet feedback, explicit network signals.

use lowlat_core::{Bitrate, Bytes, Duration, Time};

/// A media packet as the sender recorded it when it left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    /// Transport-wide sequence number, unwrapped to 64 bits.
    pub seq: u64,
    /// Size on the wire.
    pub size: Bytes,
    /// When it left the sender.
    pub send_time: Time,
}

/// The fate of one packet, as a feedback report tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketResult {
    /// The packet.
    pub sent: SentPacket,
    /// When it arrived, on the receiver's clock; `None` if reported lost.
    pub arrival: Option<Time>,
    /// The ECN bits it arrived with (3 = CE).
    pub ecn: u8,
}

impl PacketResult {
    /// One-way delay on the receiver's clock (offset by any clock difference; controllers use
    /// differences of it, so the offset cancels).
    pub fn one_way_delay(&self) -> Option<Duration> {
        self.arrival.map(|a| a - self.sent.send_time)
    }
}

/// One feedback report: the packets it covers, in sequence order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeedbackReport {
    /// Per-packet results.
    pub packets: Vec<PacketResult>,
    /// When the receiver built the report, on its clock.
    pub report_time: Time,
}

impl FeedbackReport {
    /// A round-trip sample from the newest received packet: time since it was sent, minus the time
    /// it waited at the receiver before the report left.
    pub fn rtt_sample(&self, now: Time) -> Option<Duration> {
        let last = self.packets.iter().rev().find(|p| p.arrival.is_some())?;
        let held = self.report_time - last.arrival?;
        Some((now - last.sent.send_time) - held)
    }
}

/// Explicit state of the network, signalled by a network element (SCONE-PRO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetworkSignal {
    /// The capacity the element gives this flow.
    pub capacity: Bitrate,
    /// Bytes queued at the element.
    pub queue: Bytes,
    /// `false`: a fast capacity + queue signal (SCONE-PRO for RTC, every few tens of ms);
    /// `true`: the standard SCONE throughput advice, a ceiling on the long-term average rate
    /// (draft-ietf-scone-protocol §4.2: the lowest advice of a 67 s period applies), with no
    /// queue length (`queue` is zero).
    pub long_term: bool,
}
