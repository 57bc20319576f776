//! Loss repair by retransmission: the receiver's NACK requester and the sender's history of sent
//! packets, as WebRTC does for video (RTCP generic NACK, RFC 4585 §6.2.1; retransmission in an
//! RTX stream, RFC 4588).
//!
//! The receiver finds losses as gaps in the media sequence numbers. After a reordering allowance
//! it asks for each missing packet, then again at most once per round-trip time, up to a number
//! of tries, and gives up on a packet missing for too long (its frame is past any real-time
//! deadline). The sender keeps its recent packets in a fixed ring and answers a NACK with a
//! retransmission, at most once per round-trip time per packet (libwebrtc's `RtpPacketHistory`).
//! The defaults are libwebrtc's (`modules/video_coding/nack_requester.cc`,
//! `modules/rtp_rtcp/source/rtp_packet_history.h`) where it has one.
//!
//! The round-trip time both ends use is RTCP's (sender/receiver reports, RFC 3550 §6.4.1, or
//! XR RRTR/DLRR, RFC 3611 §4.4-4.5), not the congestion-control feedback's: RTCP reports cross the
//! downlink queue like media, so their RTT includes it (under Zhuge the feedback's RTT does not).
//! The receiver repeats a NACK after the largest RTT reported in the last 1.5 s, as libwebrtc's
//! `CallStats` hands `max_rtt_ms` to `NackRequester::UpdateRtt` ([`MaxRtt`]); the sender's
//! retransmissions are capped at its target rate over 500 ms, as libwebrtc's
//! `retransmission_rate_limiter_` ([`RetransmissionLimiter`]).

use crate::pacer::RtpPacket;
use lowlat_core::{Bitrate, Duration, Time};
use std::collections::VecDeque;

/// Settings of NACK and retransmission.
#[derive(Clone, Debug, PartialEq)]
pub struct NackConfig {
    /// How long a gap may wait for a reordered packet before it is NACKed (libwebrtc's
    /// `send_nack_delay`, 0 ms by default).
    pub reorder_delay: Duration,
    /// The round-trip time the receiver assumes between NACKs of one packet until RTCP reports
    /// one (libwebrtc's `kDefaultRttMs`).
    pub rtt: Duration,
    /// How long an RTT report counts towards the largest RTT (libwebrtc's `CallStats`
    /// `kRttTimeoutMs`, 1.5 s).
    pub rtt_window: Duration,
    /// How often the receiver learns an RTT (libwebrtc's video RTCP report interval,
    /// `kVideoReportInterval`, 1 s).
    pub rtcp_interval: Duration,
    /// The window over which retransmissions may not exceed the target rate (libwebrtc's
    /// `kRetransmitWindowSizeMs`, 500 ms).
    pub rtx_limit_window: Duration,
    /// NACKs per packet before giving up (libwebrtc's `kMaxNackRetries`).
    pub max_retries: u8,
    /// Missing packets tracked at most; beyond, the oldest are given up (`kMaxNackPackets`).
    pub max_missing: usize,
    /// A packet missing for longer is given up: its frame is past any real-time deadline. Not
    /// from libwebrtc (which bounds age in packets, `kMaxPacketAge`); 1 s is a design choice.
    pub give_up_after: Duration,
    /// Sent packets the sender keeps for retransmission (a power of two; libwebrtc keeps about
    /// one second of packets; 2048 holds a second of 1200-byte packets at 19 Mbit/s).
    pub history_packets: usize,
}

impl Default for NackConfig {
    fn default() -> Self {
        NackConfig {
            reorder_delay: Duration::ZERO,
            rtt: Duration::from_millis(100),
            rtt_window: Duration::from_millis(1500),
            rtcp_interval: Duration::from_secs(1),
            rtx_limit_window: Duration::from_millis(500),
            max_retries: 10,
            max_missing: 1000,
            give_up_after: Duration::from_secs(1),
            history_packets: 2048,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Missing {
    seq: u64,
    detected: Time,
    last_nack: Option<Time>,
    tries: u8,
}

/// Unwraps a 16-bit sequence number to the 64-bit one nearest `reference`.
pub fn unwrap_seq(reference: u64, s16: u16) -> u64 {
    let diff = s16.wrapping_sub(reference as u16) as i16 as i64;
    (reference as i64 + diff).max(0) as u64
}

/// The largest RTT reported over a sliding window (libwebrtc's `CallStats::GetMaxRttMs` over
/// reports younger than `kRttTimeoutMs`); with no report in the window, the last value stays
/// (libwebrtc does not update its observers then).
#[derive(Clone, Debug)]
pub struct MaxRtt {
    window: Duration,
    /// Reports in the window whose RTT no later report exceeds: decreasing RTTs, oldest first.
    samples: VecDeque<(Time, Duration)>,
    current: Duration,
}

impl MaxRtt {
    /// Starts at `initial`, keeps reports for `window`.
    pub fn new(window: Duration, initial: Duration) -> MaxRtt {
        MaxRtt { window, samples: VecDeque::new(), current: initial }
    }

    /// An RTT report at `now`.
    pub fn on_sample(&mut self, now: Time, rtt: Duration) {
        while self.samples.back().is_some_and(|&(_, r)| r <= rtt) {
            self.samples.pop_back();
        }
        self.samples.push_back((now, rtt));
        self.expire(now);
    }

    fn expire(&mut self, now: Time) {
        while self.samples.front().is_some_and(|&(t, _)| now - t > self.window) {
            self.samples.pop_front();
        }
        if let Some(&(_, r)) = self.samples.front() {
            self.current = r;
        }
    }

    /// The largest RTT of the window at `now` (the last one known if the window is empty).
    pub fn at(&mut self, now: Time) -> Duration {
        self.expire(now);
        self.current
    }

    /// The value as of the last report or read.
    pub fn current(&self) -> Duration {
        self.current
    }
}

/// Caps retransmissions at a rate over a sliding window: a retransmission is allowed only if the
/// bits allowed in the window plus its own stay within `max_rate x window` (libwebrtc's
/// `RateLimiter::TryUseRate`, whose maximum `RtpTransportControllerSend` sets to the target rate;
/// counted when the NACK is answered, as there).
#[derive(Clone, Debug)]
pub struct RetransmissionLimiter {
    window: Duration,
    used: VecDeque<(Time, u64)>,
    bits: u64,
    /// Retransmissions refused.
    pub refused: u64,
}

impl RetransmissionLimiter {
    /// A limiter over `window`.
    pub fn new(window: Duration) -> RetransmissionLimiter {
        RetransmissionLimiter { window, used: VecDeque::new(), bits: 0, refused: 0 }
    }

    /// Whether `bits` more may be retransmitted at `now` under `max_rate`; if so they are counted.
    pub fn try_use(&mut self, now: Time, bits: u64, max_rate: Bitrate) -> bool {
        while self.used.front().is_some_and(|&(t, _)| now - t >= self.window) {
            let (_, b) = self.used.pop_front().expect("front exists");
            self.bits -= b;
        }
        let budget = (max_rate.as_bps() as u128 * self.window.as_nanos() as u128 / 1_000_000_000) as u64;
        if self.bits + bits > budget {
            self.refused += 1;
            return false;
        }
        self.used.push_back((now, bits));
        self.bits += bits;
        true
    }
}

/// The receiver side: which packets are missing and when to ask for them.
#[derive(Clone, Debug)]
pub struct NackRequester {
    cfg: NackConfig,
    highest: Option<u64>,
    missing: VecDeque<Missing>,
    /// The RTT between two NACKs of one packet: the largest RTCP RTT of the last 1.5 s.
    rtt: MaxRtt,
    /// Packets recovered by a retransmission.
    pub recovered: u64,
    /// Packets given up on.
    pub given_up: u64,
    /// NACK packets sent.
    pub nacks_sent: u64,
}

impl NackRequester {
    /// A requester with `cfg`.
    pub fn new(cfg: NackConfig) -> NackRequester {
        let cap = cfg.max_missing.min(4096);
        NackRequester {
            rtt: MaxRtt::new(cfg.rtt_window, cfg.rtt),
            cfg,
            highest: None,
            missing: VecDeque::with_capacity(cap),
            recovered: 0,
            given_up: 0,
            nacks_sent: 0,
        }
    }

    /// A media packet with sequence number `seq16` arrived (`rtx`: as a retransmission). Returns
    /// whether it is new to the receiver (false for a retransmission of a packet already there or
    /// given up on).
    pub fn on_packet(&mut self, now: Time, seq16: u16, rtx: bool) -> bool {
        let Some(highest) = self.highest else {
            self.highest = Some(u64::from(seq16));
            return !rtx;
        };
        let seq = unwrap_seq(highest, seq16);
        if seq > highest {
            // Every number in between is missing; past `max_missing` only the newest are kept.
            let from = (highest + 1).max(seq.saturating_sub(self.cfg.max_missing as u64));
            self.given_up += from - (highest + 1);
            for s in from..seq {
                if self.missing.len() == self.cfg.max_missing {
                    self.missing.pop_front();
                    self.given_up += 1;
                }
                self.missing.push_back(Missing { seq: s, detected: now, last_nack: None, tries: 0 });
            }
            self.highest = Some(seq);
            return !rtx;
        }
        // Old: a retransmission or a late original. The list is short (only what is missing).
        if let Some(i) = self.missing.iter().position(|m| m.seq == seq) {
            self.missing.remove(i);
            self.recovered += u64::from(rtx);
            return true;
        }
        // Not missing: a late original of a packet given up on is new; a retransmission is not.
        !rtx && seq != highest
    }

    /// An RTT reported at `now` (by RTCP: it includes the downlink queue).
    pub fn on_rtt(&mut self, now: Time, rtt: Duration) {
        self.rtt.on_sample(now, rtt);
    }

    /// The RTT NACKs are repeated after, as of the last report or poll.
    pub fn rtt(&self) -> Duration {
        self.rtt.current()
    }

    fn due(&self, m: &Missing) -> Time {
        match m.last_nack {
            None => m.detected + self.cfg.reorder_delay,
            Some(t) => t + self.rtt.current(),
        }
    }

    /// When a NACK is next due.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.missing.iter().map(|m| self.due(m).min(m.detected + self.cfg.give_up_after)).min()
    }

    /// The sequence numbers (16-bit, increasing) to NACK at `now`, appended to `out`; packets
    /// tried too often or missing too long are given up first. Returns whether any are due.
    pub fn poll_nack(&mut self, now: Time, out: &mut Vec<u16>) -> bool {
        let (max_tries, give_up) = (self.cfg.max_retries, self.cfg.give_up_after);
        self.rtt.at(now);
        let before = self.missing.len();
        self.missing.retain(|m| m.tries < max_tries && now - m.detected < give_up);
        self.given_up += (before - self.missing.len()) as u64;
        let start = out.len();
        for i in 0..self.missing.len() {
            let m = self.missing[i];
            if self.due(&m) <= now {
                out.push(m.seq as u16);
                let m = &mut self.missing[i];
                m.last_nack = Some(now);
                m.tries += 1;
            }
        }
        let any = out.len() > start;
        self.nacks_sent += u64::from(any);
        any
    }

    /// Packets missing now.
    pub fn missing(&self) -> usize {
        self.missing.len()
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    seq: u64,
    packet: RtpPacket,
    first_sent: Time,
    last_sent: Time,
}

/// The sender side: a ring of the last sent packets, by media sequence number.
#[derive(Clone, Debug)]
pub struct SentHistory {
    slots: Vec<Option<Slot>>,
    mask: u64,
    next_seq: u64,
    /// Retransmissions handed out.
    pub retransmitted: u64,
}

impl SentHistory {
    /// A history of `capacity` packets (rounded up to a power of two), allocated once.
    pub fn new(capacity: usize) -> SentHistory {
        let cap = capacity.max(1).next_power_of_two();
        SentHistory { slots: vec![None; cap], mask: cap as u64 - 1, next_seq: 0, retransmitted: 0 }
    }

    /// Records `packet` as sent at `now`; returns its media sequence number.
    pub fn on_sent(&mut self, now: Time, packet: RtpPacket) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.slots[(seq & self.mask) as usize] = Some(Slot { seq, packet, first_sent: now, last_sent: now });
        seq
    }

    /// The packet to retransmit for a NACK of `seq16` at `now`, if it is still held, no older
    /// than max(1 s, 3 RTT) (libwebrtc's `RtpPacketHistory` drops packets past that age:
    /// `kMinPacketDurationMs`, `kPacketCullingDelayFactor`), and was not sent within the last
    /// `rtt` (a NACK repeated before the retransmission could arrive), and `allow` accepts it
    /// (the retransmission-rate limit; a refused packet stays as it was).
    pub fn on_nack(
        &mut self,
        now: Time,
        seq16: u16,
        rtt: Duration,
        allow: impl FnOnce(&RtpPacket) -> bool,
    ) -> Option<(u64, RtpPacket)> {
        let seq = unwrap_seq(self.next_seq.saturating_sub(1), seq16);
        let slot = self.slots[(seq & self.mask) as usize].as_mut().filter(|s| s.seq == seq)?;
        let max_age = Duration::from_secs(1).max(Duration(rtt.as_nanos().saturating_mul(3)));
        if now - slot.first_sent > max_age || now - slot.last_sent < rtt || !allow(&slot.packet) {
            return None;
        }
        slot.last_sent = now;
        self.retransmitted += 1;
        Some((seq, slot.packet))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    #[test]
    fn a_gap_is_nacked_then_repeated_once_per_rtt_until_given_up() {
        let cfg =
            NackConfig { reorder_delay: Duration::from_millis(5), max_retries: 3, ..NackConfig::default() };
        let mut r = NackRequester::new(cfg);
        assert!(r.on_packet(ms(0), 10, false));
        assert!(r.on_packet(ms(1), 13, false)); // 11 and 12 missing
        assert_eq!(r.missing(), 2);
        let mut out = Vec::new();
        assert!(!r.poll_nack(ms(3), &mut out), "within the reorder allowance");
        assert_eq!(r.poll_timeout(), Some(ms(6)));
        assert!(r.poll_nack(ms(6), &mut out));
        assert_eq!(out, vec![11, 12]);
        out.clear();
        assert!(!r.poll_nack(ms(100), &mut out), "not again within an RTT");
        assert!(r.poll_nack(ms(106), &mut out));
        // 12 arrives retransmitted: recovered once, a second copy is not new.
        assert!(r.on_packet(ms(120), 12, true));
        assert!(!r.on_packet(ms(121), 12, true));
        assert_eq!(r.recovered, 1);
        out.clear();
        assert!(r.poll_nack(ms(206), &mut out));
        assert_eq!(out, vec![11]);
        out.clear();
        assert!(!r.poll_nack(ms(306), &mut out), "three tries, then given up");
        assert_eq!((r.missing(), r.given_up), (0, 1));
    }

    #[test]
    fn sequence_numbers_unwrap_and_old_gaps_are_given_up() {
        let mut r = NackRequester::new(NackConfig::default());
        r.on_packet(ms(0), 65534, false);
        r.on_packet(ms(1), 1, false); // 65535 and 0 missing
        let mut out = Vec::new();
        r.poll_nack(ms(1), &mut out);
        assert_eq!(out, vec![65535, 0]);
        assert!(r.on_packet(ms(2), 0, false), "a late original is new");
        out.clear();
        assert!(!r.poll_nack(ms(1001), &mut out), "missing for 1 s: given up");
        assert_eq!(r.missing(), 0);
    }

    #[test]
    fn the_history_answers_once_per_rtt_and_forgets_beyond_its_capacity() {
        let p = RtpPacket {
            frame: 1,
            index: 0,
            frame_packets: 1,
            size: lowlat_core::Bytes(1000),
            marker: true,
            enqueued: Time::ZERO,
            retransmission_of: None,
        };
        let mut h = SentHistory::new(4);
        for i in 0..6 {
            h.on_sent(ms(i), RtpPacket { frame: i, ..p });
        }
        let rtt = Duration::from_millis(50);
        assert!(h.on_nack(ms(10), 1, rtt, |_| true).is_none(), "overwritten");
        assert_eq!(h.on_nack(ms(10), 3, rtt, |_| true).map(|(s, p)| (s, p.frame)), None, "sent 7 ms ago");
        assert_eq!(h.on_nack(ms(60), 3, rtt, |_| true).map(|(s, p)| (s, p.frame)), Some((3, 3)));
        assert!(h.on_nack(ms(70), 3, rtt, |_| true).is_none(), "retransmitted 10 ms ago");
        assert_eq!(h.retransmitted, 1);
        assert!(h.on_nack(ms(1004), 4, rtt, |_| true).is_some(), "sent 1000 ms ago: still held");
        assert!(h.on_nack(ms(1006), 5, rtt, |_| true).is_none(), "sent 1001 ms ago: too old (1 s > 3 RTT)");
        assert!(h.on_nack(ms(1006), 5, Duration::from_millis(400), |_| true).is_some(), "3 RTT = 1.2 s");
    }

    #[test]
    fn nacks_repeat_after_the_largest_rtcp_rtt_of_the_last_1_5_s() {
        let mut r = NackRequester::new(NackConfig::default());
        r.on_packet(ms(0), 1, false);
        r.on_rtt(ms(0), Duration::from_millis(300));
        r.on_rtt(ms(1000), Duration::from_millis(80));
        r.on_packet(ms(1000), 3, false); // 2 missing
        let mut out = Vec::new();
        assert!(r.poll_nack(ms(1000), &mut out));
        assert_eq!(r.rtt(), Duration::from_millis(300), "the 300 ms report is 1.0 s old: still the largest");
        assert!(!r.poll_nack(ms(1299), &mut out), "not before the largest RTT");
        assert!(r.poll_nack(ms(1300), &mut out));
        assert!(!r.poll_nack(ms(1499), &mut out), "the 300 ms report is 1.499 s old: still counts");
        // At 1.501 s it is older than 1.5 s: the 80 ms report is the largest, and the NACK of
        // 1.3 s is due again.
        assert!(r.poll_nack(ms(1501), &mut out));
        assert_eq!(r.rtt(), Duration::from_millis(80));
        assert!(!r.poll_nack(ms(1580), &mut out));
        assert!(r.poll_nack(ms(1581), &mut out));
        // With no report in the window, the last RTT stays.
        r.poll_nack(ms(3000), &mut out);
        assert_eq!(r.rtt(), Duration::from_millis(80));
    }

    #[test]
    fn max_rtt_keeps_the_largest_report_until_it_expires() {
        let mut m = MaxRtt::new(Duration::from_millis(1500), Duration::from_millis(100));
        assert_eq!(m.at(ms(0)), Duration::from_millis(100), "no report: the initial value");
        m.on_sample(ms(0), Duration::from_millis(50));
        m.on_sample(ms(100), Duration::from_millis(200));
        m.on_sample(ms(200), Duration::from_millis(120));
        assert_eq!(m.at(ms(1600)), Duration::from_millis(200));
        assert_eq!(m.at(ms(1601)), Duration::from_millis(120), "the 200 ms report expired");
        assert_eq!(m.at(ms(5000)), Duration::from_millis(120), "all expired: the last value stays");
    }

    #[test]
    fn retransmissions_stay_within_the_target_rate_over_500_ms() {
        let mut l = RetransmissionLimiter::new(Duration::from_millis(500));
        let rate = Bitrate::bps(96_000); // 48 000 bits per 500 ms = five 1200-byte packets
        let bits = 9600;
        for i in 0..5 {
            assert!(l.try_use(ms(i), bits, rate), "packet {i} within the budget");
        }
        assert!(!l.try_use(ms(10), bits, rate), "the sixth exceeds it");
        assert_eq!(l.refused, 1);
        assert!(!l.try_use(ms(499), bits, rate), "the first is still in the window");
        assert!(l.try_use(ms(500), bits, rate), "the first left the window");
        assert!(l.try_use(ms(500), 1, Bitrate::bps(1_000_000)), "a higher target allows more");
    }

    #[test]
    fn a_refused_retransmission_leaves_the_packet_as_it_was() {
        let p = RtpPacket {
            frame: 1,
            index: 0,
            frame_packets: 1,
            size: lowlat_core::Bytes(1000),
            marker: true,
            enqueued: Time::ZERO,
            retransmission_of: None,
        };
        let mut h = SentHistory::new(8);
        h.on_sent(ms(0), p);
        let rtt = Duration::from_millis(50);
        assert!(h.on_nack(ms(100), 0, rtt, |_| false).is_none());
        assert_eq!(h.retransmitted, 0);
        assert!(h.on_nack(ms(101), 0, rtt, |_| true).is_some(), "not marked as sent by the refusal");
    }
}
