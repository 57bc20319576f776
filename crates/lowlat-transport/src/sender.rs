//! The sending side: packet numbers, RFC 9002 loss detection and probe timeout, retransmission of
//! lost data in new packets, and pacing, around a [`WindowController`].

use crate::ack::AckFrame;
use crate::rtt::RttEstimator;
use crate::{RateSample, WindowController};
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// Sender settings; loss-recovery constants from RFC 9002 §6.
#[derive(Clone, Debug, PartialEq)]
pub struct SenderConfig {
    /// Full packet size on the wire.
    pub packet_size: Bytes,
    /// Header bytes per packet (IPv4 + UDP 28, QUIC short header 11, AEAD tag 16): the rest is
    /// payload.
    pub overhead: Bytes,
    /// kPacketThreshold: a packet is lost once this many later ones are acknowledged (3).
    pub packet_threshold: u64,
    /// kTimeThreshold: ... or once it is this many RTTs older than an acknowledged one (9/8).
    pub time_threshold: f64,
    /// kGranularity (1 ms).
    pub granularity: Duration,
    /// The peer's max_ack_delay (25 ms).
    pub max_ack_delay: Duration,
    /// Pacing rate = this x window / smoothed RTT unless the controller sets one (RFC 9002 §7.7:
    /// 1.25).
    pub pacing_gain: f64,
    /// Packets the pacer may send back to back (10).
    pub burst_packets: u64,
    /// Payload bytes to deliver (`None`: an unbounded bulk transfer).
    pub size: Option<u64>,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            packet_size: Bytes(1200),
            overhead: Bytes(55),
            packet_threshold: 3,
            time_threshold: 9.0 / 8.0,
            granularity: Duration::from_millis(1),
            max_ack_delay: Duration::from_millis(25),
            pacing_gain: 1.25,
            burst_packets: 10,
            size: None,
        }
    }
}

/// Counters of a sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Packets sent (new data, retransmissions and probes).
    pub packets_sent: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Payload bytes acknowledged.
    pub bytes_acked: u64,
    /// Payload bytes sent again after a loss.
    pub bytes_retransmitted: u64,
    /// Probe timeouts that fired.
    pub ptos: u64,
    /// Congestion events signalled to the controller.
    pub congestion_events: u64,
    /// Packets the peer reported received with CE (its ACK_ECN count).
    pub ce_marks: u64,
}

/// One sent packet, kept until acknowledged or lost.
#[derive(Clone, Copy, Debug)]
struct Sent {
    size: u64,
    payload: u64,
    time: Time,
    outstanding: bool,
    /// The application's name for it (message mode).
    tag: u64,
    /// Delivery-rate state when it left (draft-cheng-iccrg-delivery-rate-estimation §3.2).
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    app_limited: bool,
}

/// The rate sample being built from one ACK frame.
#[derive(Clone, Copy, Debug, Default)]
struct SampleAcc {
    prior_delivered: Option<u64>,
    prior_time: Time,
    send_elapsed: Duration,
    ack_elapsed: Duration,
    app_limited: bool,
    newly_acked: u64,
    rtt: Option<Duration>,
}

/// The sender.
#[derive(Debug)]
pub struct Sender {
    cfg: SenderConfig,
    cc: Box<dyn WindowController>,
    rtt: RttEstimator,
    /// Sent packets from `base_pn` on, indexed by packet number.
    sent: VecDeque<Sent>,
    base_pn: u64,
    next_pn: u64,
    largest_acked: Option<u64>,
    /// Outstanding packet numbers below the largest acknowledged, ascending.
    suspects: VecDeque<u64>,
    in_flight: u64,
    loss_time: Option<Time>,
    pto_count: u32,
    last_ack_eliciting: Option<Time>,
    /// Probe packets the PTO allows beyond the window.
    probes: u32,
    /// New payload bytes still to send.
    to_send: u64,
    /// Lost payload bytes to send again.
    retx: u64,
    tokens: f64,
    last_refill: Time,
    stats: SenderStats,
    /// Bytes delivered (acknowledged) so far, and when the last were.
    delivered: u64,
    delivered_time: Time,
    /// Send time of the newest packet acknowledged: the start of the next send interval.
    first_sent_time: Time,
    /// Nonzero while the flow is application-limited: `delivered` at which that period ends.
    app_limited_until: u64,
    acc: SampleAcc,
    /// Message mode: the application hands over packets and gets lost ones back.
    messages: bool,
    app_pending: bool,
    lost_tags: VecDeque<(u64, Bytes)>,
}

impl Sender {
    /// A sender driven by `cc`.
    pub fn new(cfg: SenderConfig, cc: Box<dyn WindowController>) -> Sender {
        let to_send = cfg.size.unwrap_or(u64::MAX);
        Sender {
            cc,
            rtt: RttEstimator::default(),
            sent: VecDeque::with_capacity(1024),
            base_pn: 0,
            next_pn: 0,
            largest_acked: None,
            suspects: VecDeque::new(),
            in_flight: 0,
            loss_time: None,
            pto_count: 0,
            last_ack_eliciting: None,
            probes: 0,
            to_send,
            retx: 0,
            tokens: 0.0,
            last_refill: Time::ZERO,
            stats: SenderStats::default(),
            delivered: 0,
            delivered_time: Time::ZERO,
            first_sent_time: Time::ZERO,
            app_limited_until: 0,
            acc: SampleAcc::default(),
            messages: false,
            app_pending: false,
            lost_tags: VecDeque::new(),
            cfg,
        }
    }

    /// The controller.
    pub fn controller(&self) -> &dyn WindowController {
        self.cc.as_ref()
    }

    /// The RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// An RTT sample taken before any data was sent (the handshake's round trip, RFC 9002 §5):
    /// the first flight is then paced and its loss timers sized from it.
    pub fn on_handshake_rtt(&mut self, now: Time, rtt: Duration) {
        self.rtt.update(now, rtt, Duration::ZERO);
    }

    /// Bytes in flight.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// Whether all data was delivered.
    pub fn is_done(&self) -> bool {
        self.to_send == 0 && self.retx == 0 && self.in_flight == 0
    }

    fn has_data(&self) -> bool {
        self.to_send > 0 || self.retx > 0 || self.app_pending || !self.lost_tags.is_empty()
    }

    /// A sender in message mode: no byte stream of its own; the application sends tagged
    /// packets ([`Sender::send_message`]) and decides what to do with lost ones
    /// ([`Sender::pop_lost`]): how media travels over the transport.
    pub fn for_messages(cfg: SenderConfig, cc: Box<dyn WindowController>) -> Sender {
        let mut s = Sender::new(SenderConfig { size: Some(0), ..cfg }, cc);
        s.messages = true;
        s
    }

    fn pacing_rate(&self) -> Option<f64> {
        if !self.rtt.has_sample() {
            return None; // the initial window goes out unpaced
        }
        let r = match self.cc.pacing_rate(&self.rtt) {
            Some(r) => r.as_bps_f64(),
            None => self.cfg.pacing_gain * self.cc.window() as f64 * 8.0 / self.rtt.smoothed().as_secs_f64(),
        };
        Some(r.max(1.0))
    }

    /// Whether packets are paced: [`Sender::pacing_rate`] is `Some` exactly once the RTT has a
    /// sample (asked without computing the rate, which the sender needs several times a packet).
    fn is_paced(&self) -> bool {
        self.rtt.has_sample()
    }

    /// Adds the tokens earned since the last refill at pacing rate `rate` (`None`: unpaced).
    fn refill(&mut self, now: Time, rate: Option<f64>) {
        if let Some(rate) = rate {
            let cap = (self.cfg.burst_packets * self.cfg.packet_size.0 * 8) as f64;
            self.tokens = (self.tokens + rate * (now - self.last_refill).as_secs_f64()).min(cap);
        }
        self.last_refill = now;
    }

    /// Whether the window (or a probe) lets a full packet leave.
    fn window_open(&self) -> bool {
        self.probes > 0 || self.in_flight + self.cfg.packet_size.0 <= self.cc.window()
    }

    /// The next packet to send at `now`: `(packet number, size on the wire)`.
    pub fn poll_transmit(&mut self, now: Time) -> Option<(u64, Bytes)> {
        debug_assert!(!self.messages, "a message-mode sender sends with send_message");
        let paced = self.permit(now)?;
        let max_payload = self.cfg.packet_size.0.saturating_sub(self.cfg.overhead.0).max(1);
        let from_retx = self.retx.min(max_payload);
        let from_new = self.to_send.min(max_payload - from_retx);
        self.retx -= from_retx;
        self.to_send -= from_new;
        let payload = from_retx + from_new;
        // A probe with nothing left to say is a 1-byte PING.
        let size = if payload == max_payload {
            self.cfg.packet_size.0
        } else {
            self.cfg.overhead.0 + payload.max(1)
        };
        self.stats.bytes_retransmitted += from_retx;
        Some((self.record(now, size, payload, 0, paced), Bytes(size)))
    }

    /// Whether a packet may leave now (window, probe allowance and pacer); `Some(paced)`.
    fn permit(&mut self, now: Time) -> Option<bool> {
        if !(self.has_data() || self.probes > 0) {
            if self.window_open() {
                // Nothing to send though the window allows it: rate samples taken until what is
                // in flight now is delivered understate the path (delivery-rate estimation §3.4).
                self.app_limited_until = (self.delivered + self.in_flight).max(1);
            }
            return None;
        }
        if !self.window_open() {
            return None;
        }
        let rate = self.pacing_rate();
        self.refill(now, rate);
        let paced = self.probes == 0 && rate.is_some();
        if paced && self.tokens < (self.cfg.packet_size.0 * 8) as f64 {
            return None;
        }
        Some(paced)
    }

    /// Books a packet that leaves now; returns its packet number.
    fn record(&mut self, now: Time, size: u64, payload: u64, tag: u64, paced: bool) -> u64 {
        if paced {
            self.tokens -= (size * 8) as f64;
        }
        self.probes = self.probes.saturating_sub(1);
        let pn = self.next_pn;
        self.next_pn += 1;
        if self.in_flight == 0 {
            // Start of a new send interval after an idle period.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        self.sent.push_back(Sent {
            size,
            payload,
            time: now,
            outstanding: true,
            tag,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until != 0,
        });
        self.in_flight += size;
        self.last_ack_eliciting = Some(now);
        self.stats.packets_sent += 1;
        self.cc.on_sent(now, size, self.in_flight);
        pn
    }

    /// Message mode: tells the sender whether the application has a packet waiting (it then
    /// paces and probes for it; without one, rate samples are marked application-limited).
    pub fn set_pending(&mut self, pending: bool) {
        self.app_pending = pending;
    }

    /// Message mode: whether a packet may leave now. Call [`Sender::send_message`] right after
    /// a `true`.
    pub fn can_send(&mut self, now: Time) -> bool {
        self.permit(now).is_some()
    }

    /// Message mode: sends a packet of `size` on the wire that the application knows by `tag`
    /// (given back by [`Sender::pop_lost`] if it is lost); returns its packet number.
    pub fn send_message(&mut self, now: Time, size: Bytes, tag: u64) -> u64 {
        let paced = self.probes == 0 && self.is_paced();
        let payload = size.0.saturating_sub(self.cfg.overhead.0);
        self.record(now, size.0, payload, tag, paced)
    }

    /// Message mode: the next packet declared lost (or to be probed again after a timeout),
    /// oldest first: `(tag, size)`. The application resends it or gives it up.
    pub fn pop_lost(&mut self) -> Option<(u64, Bytes)> {
        self.lost_tags.pop_front()
    }

    fn entry(&mut self, pn: u64) -> Option<&mut Sent> {
        let i = pn.checked_sub(self.base_pn)?;
        self.sent.get_mut(i as usize)
    }

    /// Marks `pn` acknowledged if it was outstanding.
    fn ack_packet(&mut self, now: Time, pn: u64) {
        let Some(s) = self.entry(pn) else { return };
        if !s.outstanding {
            return;
        }
        s.outstanding = false;
        let s = *s;
        self.in_flight -= s.size;
        self.stats.bytes_acked += s.payload;
        self.delivered += s.size;
        self.delivered_time = now;
        let acc = &mut self.acc;
        acc.newly_acked += s.size;
        // The sample is taken over the newest packet acknowledged (the one sent last).
        if acc.prior_delivered.is_none_or(|d| s.delivered >= d) {
            acc.prior_delivered = Some(s.delivered);
            acc.prior_time = s.delivered_time;
            acc.app_limited = s.app_limited;
            acc.send_elapsed = s.time - s.first_sent_time;
            acc.ack_elapsed = now - s.delivered_time;
            acc.rtt = Some(now - s.time);
            self.first_sent_time = s.time;
        }
        self.cc.on_ack(now, s.time, s.size, false, &self.rtt);
    }

    /// An ACK frame arrived.
    pub fn on_ack(&mut self, now: Time, frame: &AckFrame) {
        let Some(largest) = frame.largest() else { return };
        if largest >= self.next_pn {
            return; // acknowledges packets never sent: ignore the frame
        }
        let prev = self.largest_acked;
        let largest_sent = self.entry(largest).map(|s| s.time);
        // RTT sample from the largest, if it is newly acknowledged (RFC 9002 §5.1).
        if prev.is_none_or(|p| largest > p) {
            if let Some(s) = self.entry(largest).copied().filter(|s| s.outstanding) {
                let delay = frame.ack_delay.min(self.cfg.max_ack_delay);
                self.rtt.update(now, now - s.time, delay);
            }
        }
        // Holes below the previous largest: only the suspects can be newly acknowledged there.
        let mut k = 0;
        while k < self.suspects.len() {
            let pn = self.suspects[k];
            if frame.contains(pn) {
                self.ack_packet(now, pn);
                self.suspects.remove(k);
            } else {
                k += 1;
            }
        }
        // Above it: walk the ranges upwards, acknowledging and noting the holes.
        let lower = prev.map_or(self.base_pn, |p| p + 1).max(self.base_pn);
        let mut cursor = lower;
        // Ranges entirely below it (the long tail of old holes a lossy flow's frames repeat,
        // up to 32) are not walked: ranges are highest first.
        let above = frame.ranges.partition_point(|&(_, hi)| hi >= lower);
        for &(lo, hi) in frame.ranges[..above].iter().rev() {
            for pn in cursor..lo.max(cursor) {
                if self.entry(pn).is_some_and(|s| s.outstanding) {
                    self.suspects.push_back(pn);
                }
            }
            for pn in lo.max(lower)..=hi {
                self.ack_packet(now, pn);
            }
            cursor = hi + 1;
        }
        self.largest_acked = Some(prev.map_or(largest, |p| p.max(largest)));
        self.process_ecn(now, frame, largest_sent);
        let lost_before = self.stats.packets_lost;
        self.detect_lost(now);
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let acc = std::mem::take(&mut self.acc);
        if let (Some(prior_delivered), Some(rtt)) = (acc.prior_delivered, acc.rtt) {
            let interval = acc.send_elapsed.max(acc.ack_elapsed);
            let delivered = self.delivered - prior_delivered;
            let sample = RateSample {
                delivery_rate: (interval > Duration::ZERO && interval >= self.rtt.min())
                    .then(|| Bitrate::from_bps_f64(delivered as f64 * 8.0 / interval.as_secs_f64())),
                delivered,
                interval,
                prior_delivered,
                total_delivered: self.delivered,
                is_app_limited: acc.app_limited,
                newly_acked: acc.newly_acked,
                newly_lost_packets: self.stats.packets_lost - lost_before,
                rtt,
                in_flight: self.in_flight,
            };
            self.cc.on_rate_sample(now, &sample, &self.rtt);
        }
        self.cc.on_end_acks(now, self.in_flight, self.app_limited_until != 0, largest);
        self.pto_count = 0;
        while self.sent.front().is_some_and(|s| !s.outstanding) {
            self.sent.pop_front();
            self.base_pn += 1;
        }
    }

    /// RFC 9002 §7.1 / Appendix B.7 (ProcessECN): an increase of the peer's CE count is a
    /// congestion event, dated by the send time of the frame's largest acknowledged packet (the
    /// controller reacts once per recovery period, as to a loss). `lost_bytes` is zero: nothing
    /// needs sending again.
    fn process_ecn(&mut self, now: Time, frame: &AckFrame, largest_sent: Option<Time>) {
        let Some(e) = frame.ecn else { return };
        if e.ce <= self.stats.ce_marks {
            return; // counts are cumulative: an older (reordered) frame says nothing new
        }
        self.stats.ce_marks = e.ce;
        if let Some(sent) = largest_sent {
            self.stats.congestion_events += 1;
            self.cc.on_congestion_event(now, sent, false, 0);
        }
    }

    /// RFC 9002 §6.1: packet and time thresholds over the suspects.
    fn detect_lost(&mut self, now: Time) {
        let Some(largest) = self.largest_acked else { return };
        let rtt = self.rtt.smoothed().max(self.rtt.latest()).as_secs_f64();
        let loss_delay = Duration::from_secs_f64(self.cfg.time_threshold * rtt).max(self.cfg.granularity);
        self.loss_time = None;
        let (mut lost_bytes, mut newest_lost) = (0, None);
        let mut k = 0;
        while k < self.suspects.len() {
            let pn = self.suspects[k];
            let Some(s) = self.entry(pn).copied().filter(|s| s.outstanding) else {
                self.suspects.remove(k);
                continue;
            };
            if pn + self.cfg.packet_threshold <= largest || s.time + loss_delay <= now {
                if let Some(e) = self.entry(pn) {
                    e.outstanding = false;
                }
                self.in_flight -= s.size;
                if self.messages {
                    self.lost_tags.push_back((s.tag, Bytes(s.size)));
                } else {
                    self.retx += s.payload;
                }
                self.stats.packets_lost += 1;
                lost_bytes += s.size;
                newest_lost = Some(newest_lost.map_or(s.time, |t: Time| t.max(s.time)));
                self.suspects.remove(k);
            } else {
                let t = s.time + loss_delay;
                self.loss_time = Some(self.loss_time.map_or(t, |l| l.min(t)));
                k += 1;
            }
        }
        if let Some(sent) = newest_lost {
            self.stats.congestion_events += 1;
            self.cc.on_congestion_event(now, sent, false, lost_bytes);
        }
    }

    fn pto_time(&self) -> Option<Time> {
        if self.in_flight == 0 {
            return None;
        }
        let base = self.rtt.pto_base(self.cfg.max_ack_delay);
        Some(self.last_ack_eliciting? + base * (1u64 << self.pto_count.min(16)))
    }

    /// Timers: time-threshold losses, then the probe timeout (RFC 9002 §6.2: two probes).
    pub fn handle_timeout(&mut self, now: Time) {
        if self.loss_time.is_some_and(|t| t <= now) {
            self.detect_lost(now);
        } else if self.pto_time().is_some_and(|t| t <= now) {
            self.pto_count += 1;
            self.stats.ptos += 1;
            self.probes = 2;
            // The oldest outstanding data is what the probes carry again.
            if let Some(s) = self.sent.iter().find(|s| s.outstanding) {
                if self.messages {
                    self.lost_tags.push_back((s.tag, Bytes(s.size)));
                } else {
                    self.retx += s.payload;
                }
            }
        }
    }

    /// When the sender next needs to act: a loss or probe timer, or the pacer.
    pub fn poll_timeout(&self) -> Option<Time> {
        let pacer = if (self.has_data() || self.probes > 0) && self.window_open() {
            match self.pacing_rate() {
                Some(rate) if self.probes == 0 => {
                    let deficit = (self.cfg.packet_size.0 * 8) as f64 - self.tokens;
                    // One nanosecond more than the exact time, so the refill is never short.
                    Some(self.last_refill + Duration::from_secs_f64(deficit.max(0.0) / rate) + Duration(1))
                }
                _ => Some(self.last_refill),
            }
        } else {
            None
        };
        [self.loss_time, self.pto_time(), pacer].into_iter().flatten().min()
    }

    /// The controller's current window.
    pub fn window(&self) -> Bytes {
        Bytes(self.cc.window())
    }

    /// The rate the controller means to send at ([`WindowController::send_rate`]).
    pub fn send_rate(&self) -> Option<Bitrate> {
        self.cc.send_rate(&self.rtt)
    }

    /// The controller's state, for logs and tests (`""` if it has no modes).
    pub fn mode(&self) -> &'static str {
        self.cc.mode()
    }

    /// The pacing rate in use (`None` before the first RTT sample).
    pub fn current_pacing_rate(&self) -> Option<Bitrate> {
        self.pacing_rate().map(Bitrate::from_bps_f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ack::{AckRanges, EcnCounts};
    use crate::NewRenoConfig;

    #[test]
    fn a_rising_ce_count_in_an_ack_is_one_congestion_event() {
        let cc = NewRenoConfig::for_datagram(Bytes(1200)).build();
        let mut s = Sender::new(SenderConfig::default(), Box::new(cc));
        let mut t = Time::ZERO;
        while let Some((_, _)) = s.poll_transmit(t) {
            t += Duration::from_micros(10);
        }
        let window = s.window();
        let ack = |hi: u64, ce: u64| AckFrame {
            ranges: AckRanges::from_slice(&[(0, hi)]),
            ack_delay: Duration::ZERO,
            ecn: Some(EcnCounts { ect0: 0, ect1: hi + 1 - ce, ce }),
        };
        s.on_ack(Time::from_millis(50), &ack(1, 0));
        assert_eq!((s.stats().ce_marks, s.stats().congestion_events), (0, 0));
        s.on_ack(Time::from_millis(51), &ack(3, 2));
        assert_eq!((s.stats().ce_marks, s.stats().congestion_events), (2, 1));
        assert!(s.window() < window, "NewReno halves on CE: {} -> {}", window, s.window());
        assert_eq!(s.stats().packets_lost, 0, "a mark is not a loss");
        // The same cumulative count again is no new event.
        s.on_ack(Time::from_millis(52), &ack(4, 2));
        assert_eq!(s.stats().congestion_events, 1);
    }
}
