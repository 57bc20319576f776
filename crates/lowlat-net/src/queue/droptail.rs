//! Drop-tail FIFO, limited by bytes, by time at the current rate, or by packets.

use super::QueueLimit;
use lowlat_core::{Bitrate, Bytes, Packet, Time};
use std::collections::VecDeque;

/// A FIFO that drops arrivals when full.
#[derive(Clone, Debug)]
pub struct DropTail {
    packets: VecDeque<Packet>,
    bytes: u64,
    limit: QueueLimit,
}

impl DropTail {
    /// An empty queue with the given limit.
    pub fn new(limit: QueueLimit) -> DropTail {
        DropTail { packets: VecDeque::new(), bytes: 0, limit }
    }

    /// Appends `pkt` or gives it back when the queue is full.
    pub fn enqueue(&mut self, now: Time, mut pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        if !self.limit.admits(self.bytes, self.packets.len(), pkt.size as u64, rate) {
            return Err(pkt);
        }
        pkt.enqueued_at = now;
        self.bytes += pkt.size as u64;
        self.packets.push_back(pkt);
        Ok(())
    }

    /// Removes the head.
    pub fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let p = self.packets.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }

    /// Bytes queued.
    pub fn bytes(&self) -> Bytes {
        Bytes(self.bytes)
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The head packet.
    pub fn head(&self) -> Option<&Packet> {
        self.packets.front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::{Duration, FlowId};

    #[test]
    fn time_limit_is_the_current_rate_times_the_limit() {
        let mut q = DropTail::new(QueueLimit::Time(Duration::from_millis(300)));
        let rate = Bitrate::mbps(1); // 300 ms = 37 500 bytes = 25 packets of 1500 B
        let mut accepted = 0;
        for i in 0..100 {
            if q.enqueue(Time::ZERO, Packet::new(i, FlowId(0), Bytes(1500), i, Time::ZERO), rate).is_ok() {
                accepted += 1;
            }
            assert!(q.bytes().0 <= 37_500);
        }
        assert_eq!(accepted, 25);
    }

    #[test]
    fn an_empty_queue_takes_one_packet_even_at_rate_zero() {
        let mut q = DropTail::new(QueueLimit::Time(Duration::from_millis(300)));
        let p = |i| Packet::new(i, FlowId(0), Bytes(1500), i, Time::ZERO);
        assert!(q.enqueue(Time::ZERO, p(0), Bitrate::ZERO).is_ok());
        assert!(q.enqueue(Time::ZERO, p(1), Bitrate::ZERO).is_err());
    }
}
