//! The receiver: frame assembly with per-frame metrics, and the feedback it reports.
//!
//! A frame is complete when all its packets have arrived (retransmitted ones included: the NACK
//! requester and the timeout repair's ACK responder pass on each packet once); its
//! delay is the completion time minus its capture time. The feedback collector remembers, per
//! transport-wide sequence number, when each packet arrived, and hands out reports on one of the
//! schedules the RMCAT controllers use: a fixed interval (transport-cc, RFC 8888 at 50-100 ms), or
//! SCReAM's rule (every N packets, but no more often than T_min and no less often than T_max).
//!
//! Each arrival keeps the ECN bits the packet arrived with. RFC 8888 carries them per packet
//! (its 2-bit ECN field), so a sender reading RFC 8888 feedback sees every CE mark. Transport-cc
//! has no ECN field: its reports lose the marks ([`FeedbackEncoder::carries_ecn`] is false), as in
//! libwebrtc, which sends ECT(1) only when RFC 8888 feedback is negotiated and Not-ECT with
//! transport-cc.

use lowlat_core::hash::FastMap;
use lowlat_core::{Bytes, Duration, Time};
use lowlat_wire::ccfb::compact_ntp;
use lowlat_wire::{CcfbBlock, CcfbMetric, CcfbReport, TwccBuilder};
use std::sync::OnceLock;

/// Per-frame bookkeeping and metrics.
#[derive(Clone, Debug, Default)]
pub struct FrameAssembler {
    /// Packets seen of each incomplete frame but `current`'s.
    partial: FastMap<u64, u16>,
    /// The incomplete frame whose packet came last, with its count, kept out of `partial`: a
    /// frame's packets mostly arrive together, so most packets cost no map look-up.
    current: Option<(u64, u16)>,
    highest: u64,
    /// `(completion time, delay)` of every complete frame.
    pub completed: Vec<(Time, Duration)>,
    /// The frame id of each entry of `completed`, in the same order.
    pub completed_ids: Vec<u64>,
    /// `(frame, arrival)`: each time a packet of a frame newer than every frame seen before
    /// arrived (the first packet ever included). What an in-order decoder with a deadline in
    /// frames needs to know when it gives up on an older frame (the Zhuge artifact's
    /// `VideoDecoder`; see `lowlat reproduce zhuge`).
    pub newest: Vec<(u64, Time)>,
}

impl FrameAssembler {
    /// A packet `index` of `frame_packets` of frame `frame`, captured at `capture`, arrived.
    /// (Inlined into the driver, which calls it once per packet: a mere hint left it a call.)
    #[inline(always)]
    pub fn on_packet(&mut self, now: Time, frame: u64, frame_packets: u16, capture: Time) {
        let got = match self.current {
            Some((f, got)) if f == frame => got + 1,
            current => {
                if let Some((f, got)) = current {
                    self.partial.insert(f, got);
                }
                self.partial.remove(&frame).unwrap_or(0) + 1
            }
        };
        if got >= frame_packets {
            self.current = None;
            self.completed.push((now, now - capture));
            self.completed_ids.push(frame);
        } else {
            self.current = Some((frame, got));
        }
        if frame > self.highest || self.newest.is_empty() {
            self.highest = frame;
            self.newest.push((frame, now));
            // Frames far behind the newest will never complete (a packet was lost): forget them.
            // (`current`, if any, is this frame: kept, and counted.)
            if self.partial.len() + usize::from(self.current.is_some()) > 64 {
                let horizon = self.highest.saturating_sub(64);
                self.partial.retain(|&f, _| f >= horizon);
            }
        }
    }
}

impl FrameAssembler {
    /// [`FrameAssembler::on_packet`] for a further packet of the frame whose packet came last,
    /// which that left incomplete (the caller knows it is that frame), if it does not complete
    /// it (of `frame_packets`): then only its count changes (the frame is no newer than the
    /// newest seen). Whether it was counted (if not, nothing changed: `on_packet` is due).
    #[inline(always)]
    pub fn count_towards_current(&mut self, frame_packets: u16) -> bool {
        match &mut self.current {
            Some((_, got)) if *got + 1 < frame_packets => {
                *got += 1;
                true
            }
            _ => false,
        }
    }
}

/// When feedback is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FeedbackSchedule {
    /// Every interval (if anything arrived).
    Interval(Duration),
    /// Every `every` packets, but at least `min` apart and at most `max` apart.
    Scream {
        /// N.
        every: u32,
        /// T_min.
        min: Duration,
        /// T_max.
        max: Duration,
    },
}

/// One packet's line in a feedback report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Transport-wide sequence number.
    pub seq: u64,
    /// When it arrived; `None`: lost.
    pub at: Option<Time>,
    /// The ECN bits it arrived with (0 when lost, or when the format cannot carry them).
    pub ecn: u8,
}

impl Arrival {
    /// A received packet.
    pub fn received(seq: u64, at: Time, ecn: u8) -> Arrival {
        Arrival { seq, at: Some(at), ecn }
    }

    /// A lost packet.
    pub fn lost(seq: u64) -> Arrival {
        Arrival { seq, at: None, ecn: 0 }
    }
}

/// Arrivals not yet reported, and the schedule that reports them.
#[derive(Clone, Debug)]
pub struct FeedbackCollector {
    schedule: FeedbackSchedule,
    /// `(transport sequence number, arrival, ECN bits)`, in arrival order.
    pending: Vec<(u64, Time, u8)>,
    /// The next sequence number a report starts from.
    next_seq: u64,
    last_report: Time,
    started: bool,
}

impl FeedbackCollector {
    /// A collector on `schedule`.
    pub fn new(schedule: FeedbackSchedule) -> FeedbackCollector {
        FeedbackCollector {
            schedule,
            pending: Vec::new(),
            next_seq: 0,
            last_report: Time::ZERO,
            started: false,
        }
    }

    /// A media packet with transport sequence number `seq` arrived (Not-ECT).
    pub fn on_packet(&mut self, now: Time, seq: u64) {
        self.on_packet_ecn(now, seq, 0);
    }

    /// A media packet with transport sequence number `seq` arrived with ECN bits `ecn`.
    pub fn on_packet_ecn(&mut self, now: Time, seq: u64, ecn: u8) {
        if !self.started {
            self.started = true;
            self.last_report = now;
        }
        self.pending.push((seq, now, ecn & 3));
    }

    /// When the next report is due.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Time> {
        if self.pending.is_empty() {
            return None;
        }
        Some(match self.schedule {
            FeedbackSchedule::Interval(d) => self.last_report + d,
            FeedbackSchedule::Scream { every, min, max } => {
                if self.pending.len() >= every as usize {
                    self.last_report + min
                } else {
                    self.last_report + max
                }
            }
        })
    }

    /// The report due at `now`: every sequence number from the last report's end to the highest
    /// received, with its arrival time or `None` (lost). Sequence numbers below a previous report
    /// (late packets) are dropped.
    #[inline]
    pub fn poll_report(&mut self, now: Time) -> Option<Vec<Arrival>> {
        if self.poll_timeout().is_none_or(|t| t > now) {
            return None;
        }
        self.take_report(now)
    }

    /// [`FeedbackCollector::poll_report`] once due: kept out of line, as the receiver asks after
    /// every packet and a report is due after dozens.
    #[inline(never)]
    fn take_report(&mut self, now: Time) -> Option<Vec<Arrival>> {
        self.last_report = now;
        // Mostly every sequence number from `next_seq` on arrived, once and in order: the
        // report is then the arrivals as they are (one check and one copy of known length,
        // where the walk below pushed entry by entry).
        let first = self.next_seq;
        if !self.pending.is_empty() && self.pending.iter().zip(first..).all(|(p, s)| p.0 == s) {
            let out = self.pending.iter().map(|&(s, t, ecn)| Arrival::received(s, t, ecn)).collect();
            self.next_seq = first + self.pending.len() as u64;
            self.pending.clear();
            return Some(out);
        }
        // Usually in order already (a check costs less than the sort's own scan for runs).
        if !self.pending.is_sorted_by_key(|p| p.0) {
            self.pending.sort_unstable_by_key(|p| p.0);
        }
        let highest = self.pending.last()?.0;
        let mut out = Vec::with_capacity((highest + 1).saturating_sub(self.next_seq) as usize);
        // One pass over the sorted arrivals (from `next_seq`), the gaps reported lost. A second
        // arrival of a sequence number already reported makes every later one lost, as a
        // sequence-by-sequence walk that peeks at the arrivals does (it never gets past it).
        // (Gaps written out one by one: most arrivals follow the one before, and an `extend`
        // of an empty range per arrival cost more than the rare loop.)
        let mut seq = self.next_seq;
        let from = self.pending.partition_point(|p| p.0 < self.next_seq);
        for &(s, t, ecn) in &self.pending[from..] {
            if s < seq {
                break;
            }
            while seq < s {
                out.push(Arrival::lost(seq));
                seq += 1;
            }
            out.push(Arrival::received(s, t, ecn));
            seq = s + 1;
        }
        out.extend((seq..=highest).map(Arrival::lost));
        self.pending.clear();
        self.next_seq = highest + 1;
        Some(out)
    }
}

/// Which RTCP feedback format the receiver sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FeedbackFormat {
    /// Transport-wide congestion control feedback (RTPFB FMT 15).
    #[default]
    TransportCc,
    /// RFC 8888 congestion control feedback (RTPFB FMT 11).
    Rfc8888,
}

/// Bytes of IPv4 and UDP headers around an RTCP datagram.
const IP_UDP_OVERHEAD: u64 = 28;

/// Sizes reports exactly as `lowlat-wire` encodes them. Transport-cc reports are sized without
/// being written (a receiver reports every few milliseconds); their bytes are written only when
/// a capture asks for them ([`FeedbackEncoder::last_encoded`]).
#[derive(Clone, Debug)]
pub struct FeedbackEncoder {
    format: FeedbackFormat,
    twcc: TwccBuilder,
    /// The last RFC 8888 report's bytes.
    scratch: Vec<u8>,
    /// Scratch: a report's arrival times in microseconds (the last transport-cc report's, kept
    /// to write its bytes on demand).
    arrivals_us: Vec<Option<i64>>,
    /// The last transport-cc report: its first sequence number and the feedback packet count
    /// it started from.
    twcc_last: Option<(u16, u8)>,
    /// The last transport-cc report's bytes, once asked for.
    twcc_bytes: OnceLock<Vec<u8>>,
}

impl FeedbackEncoder {
    /// An encoder for `format`.
    pub fn new(format: FeedbackFormat) -> FeedbackEncoder {
        FeedbackEncoder {
            format,
            twcc: TwccBuilder::new(1, 2),
            scratch: Vec::with_capacity(1500),
            arrivals_us: Vec::new(),
            twcc_last: None,
            twcc_bytes: OnceLock::new(),
        }
    }

    /// Whether the format reports each packet's ECN bits (RFC 8888 does, transport-cc does not).
    pub fn carries_ecn(&self) -> bool {
        self.format == FeedbackFormat::Rfc8888
    }

    /// The RTCP bytes of the last report sized by [`FeedbackEncoder::datagram_size`] (for
    /// captures).
    pub fn last_encoded(&self) -> &[u8] {
        match (self.format, self.twcc_last) {
            (FeedbackFormat::TransportCc, Some((first, count))) => self.twcc_bytes.get_or_init(|| {
                // The builder as it was when the report was sized: same packets, same counts.
                let mut builder = self.twcc.clone();
                builder.fb_pkt_count = count;
                let mut out = Vec::new();
                builder.encode_into(first, &self.arrivals_us, &mut out);
                out
            }),
            _ => &self.scratch,
        }
    }

    /// Size of the UDP datagram carrying `report` (one compound RTCP packet: transport-cc may
    /// need several feedback packets for one report) when sent at `now`.
    pub fn datagram_size(&mut self, report: &[Arrival], now: Time) -> Bytes {
        let Some(first) = report.first().map(|a| a.seq) else { return Bytes(IP_UDP_OVERHEAD) };
        let us = |t: Time| (t.as_nanos() / 1_000) as i64;
        match self.format {
            FeedbackFormat::TransportCc => {
                self.arrivals_us.clear();
                self.arrivals_us.extend(report.iter().map(|r| r.at.map(us)));
                self.twcc_last = Some((first as u16, self.twcc.fb_pkt_count));
                self.twcc_bytes.take();
                let len = self.twcc.encoded_len(&self.arrivals_us);
                Bytes(IP_UDP_OVERHEAD + len as u64)
            }
            FeedbackFormat::Rfc8888 => {
                self.scratch.clear();
                let metrics = report
                    .iter()
                    .map(|r| {
                        r.at.map_or(CcfbMetric::lost(), |a| CcfbMetric::received(us(now) - us(a), r.ecn))
                    })
                    .collect();
                let block = CcfbBlock { media_ssrc: 2, begin_seq: first as u16, metrics };
                let rep = CcfbReport {
                    sender_ssrc: 1,
                    blocks: vec![block],
                    report_timestamp: compact_ntp(us(now)),
                };
                rep.encode(&mut self.scratch).expect("a report of at most 65535 metrics encodes");
                Bytes(IP_UDP_OVERHEAD + self.scratch.len() as u64)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_sizes_are_the_encoded_sizes() {
        // 10 packets all received 1 ms apart: 20 B header + one run-length chunk + 10 one-byte
        // deltas = 32 B of RTCP; RFC 8888: 12 + 8 + 10 x 2 = 40 B. Plus 28 B IP/UDP.
        let report: Vec<_> = (0..10).map(|i| Arrival::received(i, Time::from_millis(1000 + i), 1)).collect();
        let now = Time::from_millis(1020);
        assert_eq!(FeedbackEncoder::new(FeedbackFormat::TransportCc).datagram_size(&report, now), Bytes(60));
        assert_eq!(FeedbackEncoder::new(FeedbackFormat::Rfc8888).datagram_size(&report, now), Bytes(68));
    }

    #[test]
    fn transport_cc_bytes_written_on_demand_are_those_of_encoding_every_report() {
        // Reports of growing length with losses; the bytes are asked for after some reports
        // only (a capture may start late), yet each equals what a builder encoding every report
        // writes, feedback count included, and the datagram is exactly their size.
        let mut enc = FeedbackEncoder::new(FeedbackFormat::TransportCc);
        let mut reference = TwccBuilder::new(1, 2);
        let mut seq = 0u64;
        for k in 0..60u64 {
            let report: Vec<_> = (0..(k * 7) % 400 + 1)
                .map(|i| {
                    seq += 1;
                    if (seq * 31).is_multiple_of(11) {
                        Arrival::lost(seq)
                    } else {
                        Arrival::received(
                            seq,
                            Time::ZERO + Duration::from_micros(seq * 1_700 + (i % 5) * 90_000),
                            0,
                        )
                    }
                })
                .collect();
            let now = Time::ZERO + Duration::from_micros(seq * 1_700 + 500_000);
            let size = enc.datagram_size(&report, now);
            let arrivals: Vec<_> =
                report.iter().map(|a| a.at.map(|t| (t.as_nanos() / 1_000) as i64)).collect();
            let mut expected = Vec::new();
            reference.encode_into(report[0].seq as u16, &arrivals, &mut expected);
            assert_eq!(size, Bytes(IP_UDP_OVERHEAD + expected.len() as u64), "report {k}");
            if k % 3 != 1 {
                assert_eq!(enc.last_encoded(), &expected[..], "report {k}");
                assert_eq!(enc.last_encoded(), &expected[..], "report {k}, asked twice");
            }
        }
    }

    /// The report as a walk over every sequence number peeking at the sorted arrivals (the
    /// collector's first form), for the one-pass version to match.
    fn walked_report(pending: &mut Vec<(u64, Time, u8)>, next_seq: &mut u64) -> Option<Vec<Arrival>> {
        pending.sort_unstable_by_key(|p| p.0);
        let highest = pending.last()?.0;
        let mut out = Vec::new();
        let mut it = pending.drain(..).filter(|p| p.0 >= *next_seq).peekable();
        for seq in *next_seq..=highest {
            match it.peek() {
                Some(&(s, t, ecn)) if s == seq => {
                    out.push(Arrival::received(seq, t, ecn));
                    it.next();
                }
                _ => out.push(Arrival::lost(seq)),
            }
        }
        drop(it);
        *next_seq = highest + 1;
        Some(out)
    }

    #[test]
    fn reports_match_a_walk_over_every_sequence_number() {
        // Random arrivals: reordered, lost, late (below an earlier report) and duplicated.
        let mut rnd = lowlat_core::rng::below(3, "feedback-collector-test");
        let mut c = FeedbackCollector::new(FeedbackSchedule::Interval(Duration::from_millis(10)));
        let (mut pending, mut next_seq) = (Vec::new(), 0u64);
        let mut seq = 0u64;
        for k in 1..2_000u64 {
            let now = Time::from_millis(k);
            for _ in 0..rnd(4) {
                seq += 1 + u64::from(rnd(6) == 0);
                let s = match rnd(20) {
                    0 => seq.saturating_sub(rnd(30)),
                    1 => seq.saturating_sub(1),
                    _ => seq,
                };
                let ecn = rnd(4) as u8;
                c.on_packet_ecn(now, s, ecn);
                pending.push((s, now, ecn));
            }
            if let Some(report) = c.poll_report(now) {
                assert_eq!(Some(report), walked_report(&mut pending, &mut next_seq), "at {k} ms");
            }
        }
    }

    #[test]
    fn frames_complete_when_all_packets_arrive() {
        let mut a = FrameAssembler::default();
        a.on_packet(Time::from_millis(10), 0, 2, Time::ZERO);
        assert!(a.completed.is_empty());
        a.on_packet(Time::from_millis(12), 0, 2, Time::ZERO);
        assert_eq!(a.completed, vec![(Time::from_millis(12), Duration::from_millis(12))]);
    }

    #[test]
    fn the_newest_frame_is_logged_when_it_first_arrives() {
        let mut a = FrameAssembler::default();
        let ms = Time::from_millis;
        a.on_packet(ms(10), 0, 2, Time::ZERO);
        a.on_packet(ms(20), 2, 1, Time::ZERO); // frame 1 not yet: 2 is the newest
        a.on_packet(ms(30), 1, 1, Time::ZERO); // older than the newest: not logged
        a.on_packet(ms(40), 2, 1, Time::ZERO); // a copy of a known frame: not logged
        a.on_packet(ms(50), 0, 2, Time::ZERO);
        assert_eq!(a.newest, vec![(0, ms(10)), (2, ms(20))]);
        assert_eq!(a.completed_ids, vec![2, 1, 2, 0]);
    }

    #[test]
    fn reports_cover_gaps_as_losses() {
        let mut c = FeedbackCollector::new(FeedbackSchedule::Interval(Duration::from_millis(50)));
        c.on_packet(Time::from_millis(1), 0);
        c.on_packet(Time::from_millis(2), 2);
        assert!(c.poll_report(Time::from_millis(49)).is_none());
        let r = c.poll_report(Time::from_millis(51)).unwrap();
        assert_eq!(
            r,
            vec![
                Arrival::received(0, Time::from_millis(1), 0),
                Arrival::lost(1),
                Arrival::received(2, Time::from_millis(2), 0)
            ]
        );
        c.on_packet(Time::from_millis(60), 1); // late: already reported lost
        c.on_packet(Time::from_millis(61), 3);
        let r = c.poll_report(Time::from_millis(101)).unwrap();
        assert_eq!(r, vec![Arrival::received(3, Time::from_millis(61), 0)]);
    }

    #[test]
    fn reports_keep_each_packets_ecn_and_rfc8888_encodes_it() {
        let mut c = FeedbackCollector::new(FeedbackSchedule::Interval(Duration::from_millis(50)));
        c.on_packet_ecn(Time::from_millis(1), 0, 1);
        c.on_packet_ecn(Time::from_millis(2), 1, 3);
        let r = c.poll_report(Time::from_millis(51)).unwrap();
        assert_eq!(r.iter().map(|a| a.ecn).collect::<Vec<_>>(), vec![1, 3]);
        assert!(FeedbackEncoder::new(FeedbackFormat::Rfc8888).carries_ecn());
        assert!(!FeedbackEncoder::new(FeedbackFormat::TransportCc).carries_ecn());
    }

    #[test]
    fn scream_schedule_reports_every_n_packets_within_bounds() {
        let s = FeedbackSchedule::Scream {
            every: 5,
            min: Duration::from_millis(20),
            max: Duration::from_millis(200),
        };
        let mut c = FeedbackCollector::new(s);
        c.on_packet(Time::ZERO, 0);
        assert_eq!(c.poll_timeout(), Some(Time::from_millis(200)));
        for i in 1..5 {
            c.on_packet(Time::from_millis(1), i);
        }
        assert_eq!(c.poll_timeout(), Some(Time::from_millis(20)));
    }
}
