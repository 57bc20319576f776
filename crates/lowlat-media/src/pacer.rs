//! Packetiser and pacer with the sender-side RTP queue.
//!
//! Frames are cut into RTP packets of at most `mtu_payload` bytes of payload (sizes as even as
//! possible; the last packet of a frame carries the marker bit), queued, and released at the
//! controller's pacing rate by a token bucket that may save up `burst` worth of sending. As in the
//! SCReAM evaluations, the queue's whole content is discarded when its oldest packet has waited
//! longer than `max_queue_delay` (2 s): stale video is worth nothing. Retransmissions wait in
//! their own queue, sent before new media (libwebrtc's pacer gives them the higher priority), and
//! spend the same tokens: they count against the pacing rate.

use crate::source::Frame;
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// Settings of the packetiser and pacer.
#[derive(Clone, Debug, PartialEq)]
pub struct PacerConfig {
    /// Largest payload per RTP packet.
    pub mtu_payload: Bytes,
    /// Bytes of headers per packet on the wire: IPv4 20 + UDP 8 + RTP 12 + transport-wide
    /// sequence extension 8.
    pub overhead: Bytes,
    /// How much sending time the bucket may save up (burst allowance).
    pub burst: Duration,
    /// Queue delay beyond which the queue is flushed (SCReAM evaluations: 2 s).
    pub max_queue_delay: Duration,
}

impl Default for PacerConfig {
    fn default() -> Self {
        PacerConfig {
            mtu_payload: Bytes(1200),
            overhead: Bytes(48),
            burst: Duration::from_millis(5),
            max_queue_delay: Duration::from_secs(2),
        }
    }
}

/// One RTP packet of a frame, as the sender queues it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtpPacket {
    /// The frame it belongs to.
    pub frame: u64,
    /// Its index within the frame.
    pub index: u16,
    /// Packets in the frame.
    pub frame_packets: u16,
    /// Size on the wire (payload + headers).
    pub size: Bytes,
    /// Whether it is the frame's last (RTP marker bit).
    pub marker: bool,
    /// When it entered the queue.
    pub enqueued: Time,
    /// For a retransmission (RTX, RFC 4588): the media sequence number of the original.
    pub retransmission_of: Option<u64>,
}

/// The sender's queue and pacer.
#[derive(Clone, Debug)]
pub struct Pacer {
    cfg: PacerConfig,
    queue: VecDeque<RtpPacket>,
    /// Retransmissions, sent first.
    rtx: VecDeque<RtpPacket>,
    queued_bytes: u64,
    /// Token bucket, bits (may go negative after a packet larger than the tokens).
    tokens: f64,
    last_refill: Time,
    discarded_packets: u64,
    /// The rate of the last refill, as bits per second in `f64`, and the bucket's capacity at it,
    /// bits: kept from refill to refill (the sender refills at every poll, and the rate seldom
    /// changes; the `u64` to `f64` conversions cost more than the rest of a refill).
    rate: Bitrate,
    rate_bps: f64,
    cap: f64,
    /// `cfg.burst` in seconds.
    burst_s: f64,
}

impl Pacer {
    /// An empty pacer.
    pub fn new(cfg: PacerConfig) -> Pacer {
        Pacer {
            burst_s: cfg.burst.as_secs_f64(),
            rate: Bitrate::ZERO,
            rate_bps: 0.0,
            cap: 0.0,
            cfg,
            queue: VecDeque::with_capacity(256),
            rtx: VecDeque::with_capacity(64),
            queued_bytes: 0,
            tokens: 0.0,
            last_refill: Time::ZERO,
            discarded_packets: 0,
        }
    }

    /// Cuts `frame` into packets and queues them.
    pub fn enqueue_frame(&mut self, now: Time, frame: &Frame) {
        let mtu = self.cfg.mtu_payload.0.max(1);
        let n = frame.size.0.div_ceil(mtu).clamp(1, u16::MAX as u64);
        let (base, extra) = (frame.size.0 / n, frame.size.0 % n);
        let overhead = self.cfg.overhead.0;
        // The payloads add up to the frame's size. (One `extend` of a known length: a frame of
        // a fast flow is hundreds of packets, and `push_back` checked the room for each.)
        self.queued_bytes += frame.size.0 + n * overhead;
        self.queue.extend((0..n).map(|i| RtpPacket {
            frame: frame.id,
            index: i as u16,
            frame_packets: n as u16,
            size: Bytes(base + u64::from(i < extra) + overhead),
            marker: i + 1 == n,
            enqueued: now,
            retransmission_of: None,
        }));
    }

    /// Queues a retransmission of the packet with media sequence number `seq` (RTX adds the
    /// 2-byte original sequence number, RFC 4588 §4).
    pub fn enqueue_retransmission(&mut self, now: Time, seq: u64, original: &RtpPacket) {
        let size = Bytes(original.size.0 + 2);
        self.queued_bytes += size.0;
        self.rtx.push_back(RtpPacket { size, enqueued: now, retransmission_of: Some(seq), ..*original });
    }

    fn pop_next(&mut self) -> Option<RtpPacket> {
        let p = self.rtx.pop_front().or_else(|| self.queue.pop_front())?;
        self.queued_bytes -= p.size.0;
        Some(p)
    }

    fn refill(&mut self, now: Time, rate: Bitrate) {
        if rate != self.rate {
            self.rate = rate;
            self.rate_bps = rate.as_bps_f64();
            self.cap = (self.rate_bps * self.burst_s).max(0.0);
        } else if now == self.last_refill {
            // Polled again at the same instant (after a send, mostly): adding `rate x 0` and
            // capping would leave the tokens as they are, bit for bit (they are never -0.0, and
            // at most the cap, which only a rate change moves).
            return;
        }
        self.tokens = (self.tokens + self.rate_bps * (now - self.last_refill).as_secs_f64()).min(self.cap);
        self.last_refill = now;
    }

    /// Discards the whole queue if its oldest packet has waited longer than the maximum.
    pub fn discard_stale(&mut self, now: Time) {
        if self.queue.front().is_some_and(|p| now - p.enqueued > self.cfg.max_queue_delay) {
            self.discarded_packets += (self.queue.len() + self.rtx.len()) as u64;
            self.queue.clear();
            self.rtx.clear();
            self.queued_bytes = 0;
        }
    }

    /// Size of the packet at the head of the queue.
    pub fn front_size(&self) -> Option<Bytes> {
        self.rtx.front().or(self.queue.front()).map(|p| p.size)
    }

    /// The next packet to send at `now` at pacing rate `rate`, if the bucket allows.
    pub fn poll_transmit(&mut self, now: Time, rate: Bitrate) -> Option<RtpPacket> {
        self.discard_stale(now);
        self.poll_discarded(now, rate)
    }

    /// [`Pacer::poll_transmit`] for a caller that has just called [`Pacer::discard_stale`] at
    /// `now` (a second call at the same instant finds nothing: it runs at every poll).
    /// Inlined: the RTP sender calls it at every poll, mostly to refill and find nothing, and a
    /// call returned the packet through memory.
    #[inline]
    pub fn poll_discarded(&mut self, now: Time, rate: Bitrate) -> Option<RtpPacket> {
        self.refill(now, rate);
        if self.tokens < 0.0 {
            return None;
        }
        let p = self.pop_next()?;
        self.tokens -= p.size.bits() as f64;
        Some(p)
    }

    /// The packet at the head of the queue, unpaced: for a sender whose transport paces.
    pub fn pop(&mut self) -> Option<RtpPacket> {
        self.pop_next()
    }

    /// Whether a padding packet of `size` may leave at `now` (queue empty, bucket allows); if so
    /// its tokens are spent. Padding fills idle pacing time while a controller probes.
    pub fn poll_padding(&mut self, now: Time, rate: Bitrate, size: Bytes) -> bool {
        self.refill(now, rate);
        if !self.is_empty() || self.tokens < 0.0 || rate == Bitrate::ZERO {
            return false;
        }
        self.tokens -= size.bits() as f64;
        true
    }

    /// When the next packet may leave (None: queue empty).
    pub fn poll_timeout(&self, rate: Bitrate) -> Option<Time> {
        if self.is_empty() {
            return None;
        }
        self.next_send_time(rate)
    }

    /// When the bucket next allows a packet, queued or padding (None: rate zero).
    pub fn next_send_time(&self, rate: Bitrate) -> Option<Time> {
        if self.tokens >= 0.0 {
            return Some(self.last_refill);
        }
        if rate == Bitrate::ZERO {
            return None;
        }
        let rate_bps = if rate == self.rate { self.rate_bps } else { rate.as_bps_f64() };
        Some(self.last_refill + Duration::from_secs_f64(-self.tokens / rate_bps) + Duration(1))
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty() && self.rtx.is_empty()
    }

    /// Bytes waiting.
    pub fn queued_bytes(&self) -> Bytes {
        Bytes(self.queued_bytes)
    }

    /// How long the oldest packet has waited.
    pub fn queue_delay(&self, now: Time) -> Duration {
        let oldest = [self.queue.front(), self.rtx.front()].into_iter().flatten().map(|p| p.enqueued).min();
        oldest.map_or(Duration::ZERO, |t| now - t)
    }

    /// Packets discarded by flushes so far.
    pub fn discarded_packets(&self) -> u64 {
        self.discarded_packets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(id: u64, size: u64) -> Frame {
        Frame { id, capture_time: Time::ZERO, size: Bytes(size), key: false }
    }

    #[test]
    fn packetises_within_the_mtu_with_a_marker_on_the_last() {
        let mut p = Pacer::new(PacerConfig::default());
        p.enqueue_frame(Time::ZERO, &frame(0, 3000));
        let rate = Bitrate::gbps(1);
        let pkts: Vec<_> = std::iter::from_fn(|| p.poll_transmit(Time::from_secs(1), rate)).collect();
        assert_eq!(pkts.len(), 3);
        assert!(pkts.iter().all(|x| x.size == Bytes(1048)));
        assert_eq!(pkts.iter().map(|x| x.marker).collect::<Vec<_>>(), vec![false, false, true]);
    }

    #[test]
    fn paces_at_the_given_rate() {
        let mut p = Pacer::new(PacerConfig::default());
        for i in 0..100 {
            p.enqueue_frame(Time::ZERO, &frame(i, 1200)); // 1248 B on the wire each
        }
        let rate = Bitrate::mbps(1); // about 10 ms per packet
        let mut now = Time::ZERO;
        let mut sent = 0;
        while let Some(t) = p.poll_timeout(rate) {
            now = t.max(now);
            while p.poll_transmit(now, rate).is_some() {
                sent += 1;
            }
        }
        assert_eq!(sent, 100);
        let secs = now.as_secs_f64();
        assert!((secs - 0.99).abs() < 0.011, "100 packets of 10 ms took {secs} s");
    }

    #[test]
    fn flushes_a_queue_older_than_the_maximum() {
        let mut p = Pacer::new(PacerConfig::default());
        p.enqueue_frame(Time::ZERO, &frame(0, 12_000));
        assert!(p.poll_transmit(Time::from_millis(2001), Bitrate::kbps(1)).is_none());
        assert_eq!(p.discarded_packets(), 10);
        assert_eq!(p.queued_bytes(), Bytes::ZERO);
    }

    #[test]
    fn a_zero_burst_spaces_every_packet_after_idle_time() {
        // A 12 000 B frame after 1 s of idle at 10 Mbit/s: with the 5 ms bucket the first few
        // packets leave together; with none, one packet per serialisation time (~1 ms).
        let rate = Bitrate::mbps(10);
        let at_once = |burst_ms: u64| {
            let mut p =
                Pacer::new(PacerConfig { burst: Duration::from_millis(burst_ms), ..PacerConfig::default() });
            p.poll_transmit(Time::ZERO, rate);
            p.enqueue_frame(Time::from_secs(1), &frame(0, 12_000));
            std::iter::from_fn(|| p.poll_transmit(Time::from_secs(1), rate)).count()
        };
        assert_eq!(at_once(0), 1);
        assert!(at_once(5) >= 5, "{}", at_once(5));
    }

    #[test]
    fn retransmissions_go_first_and_spend_the_same_tokens() {
        let mut p = Pacer::new(PacerConfig { burst: Duration::ZERO, ..PacerConfig::default() });
        p.enqueue_frame(Time::ZERO, &frame(0, 2400)); // two 1248-byte packets
        let first = p.poll_transmit(Time::ZERO, Bitrate::mbps(1)).unwrap();
        p.enqueue_retransmission(Time::ZERO, 7, &first);
        assert_eq!(p.queued_bytes(), Bytes(1248 + 1250));
        // The bucket is in debt for the first packet: nothing until ~10 ms, then the RTX copy
        // (2 bytes longer) before the frame's second packet.
        assert!(p.poll_transmit(Time::from_millis(9), Bitrate::mbps(1)).is_none());
        let rtx = p.poll_transmit(Time::from_millis(11), Bitrate::mbps(1)).unwrap();
        assert_eq!((rtx.retransmission_of, rtx.index, rtx.size), (Some(7), 0, Bytes(1250)));
        assert!(p.poll_transmit(Time::from_millis(12), Bitrate::mbps(1)).is_none());
        let next = p.poll_transmit(Time::from_millis(21), Bitrate::mbps(1)).unwrap();
        assert_eq!((next.retransmission_of, next.index), (None, 1));
    }
}
