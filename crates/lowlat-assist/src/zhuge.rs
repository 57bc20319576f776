//! Zhuge at the access point (SIGCOMM 2022): the Fortune Teller predicts each downlink packet's
//! delay through the AP's queue when it arrives, and the Feedback Updater makes the feedback that
//! goes back to the sender carry that prediction at once.
//!
//! - **In-band** (RTP with transport-wide sequence numbers: GCC, NADA, SCReAM): the AP remembers
//!   each downlink packet's sequence number and predicted arrival (`now + total delay`), builds
//!   transport-cc (or RFC 8888) feedback from them every [`ZhugeConfig::report_interval`], and
//!   drops the client's own congestion feedback. A packet the AP's queue drops before its report
//!   leaves is reported lost.
//! - **Out-of-band** (ack-clocked transports: Copa, BBR, CUBIC over QUIC/TCP): each downlink packet's
//!   change of predicted delay goes into a history of delay increases or becomes a delay token;
//!   each uplink ACK is held for an increase sampled from the history, cancelled by tokens (oldest
//!   first), scaled down when fewer packets came in the last window than in the one before, never
//!   longer than [`AckHoldConfig::max_hold`] and never released before the ACK before it.
//!
//! Every prediction is logged with the packet's actual delay through the queue, for accuracy
//! plots. Sans-IO: driven through the [`Middlebox`] hooks with `now`.

use crate::fortune_teller::{FortuneTeller, FortuneTellerConfig};
use lowlat_core::rng::Rng;
use lowlat_core::{Bytes, Duration, FlowId, Packet, PacketKind, Time};
use lowlat_net::middlebox::{BuiltFeedback, Direction, FeedbackPayload, Middlebox, QueueState, Verdict};
use lowlat_wire::ccfb::{compact_ntp, CcfbBlock, CcfbMetric, CcfbReport};
use lowlat_wire::TwccBuilder;
use rand::Rng as _;
use std::collections::VecDeque;

/// IPv4 + UDP headers around an RTCP packet.
const IP_UDP_OVERHEAD: u64 = 28;

/// The feedback format the AP writes for an in-band flow (the one its receiver uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InBandFormat {
    /// Transport-cc (draft-holmer-rmcat-transport-wide-cc-extensions-01).
    #[default]
    TransportCc,
    /// RFC 8888.
    Rfc8888,
}

/// How Zhuge treats a flow, from what its packets are (as the AP tells from their headers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowRole {
    /// RTP with transport-wide feedback: the AP writes the feedback.
    InBand(InBandFormat),
    /// An ack-clocked transport: the AP holds ACKs.
    OutOfBand,
    /// Anything else: untouched (its packets still count in the queue the teller watches).
    Pass,
}

/// The out-of-band ACK holding constants (Zhuge §5; the ns-3 code's `delta-delay`).
#[derive(Clone, Debug, PartialEq)]
pub struct AckHoldConfig {
    /// Largest delay increase kept in the history, and largest token (10 ms).
    pub entry_cap: Duration,
    /// How long increases and tokens stay usable (40 ms).
    pub expiry: Duration,
    /// How long packet arrivals are remembered to compare the last window with the one before
    /// (80 ms: two windows).
    pub scale_window: Duration,
    /// Longest an ACK is held (10 ms; the code notes this bound should be the minimum RTT).
    pub max_hold: Duration,
}

impl Default for AckHoldConfig {
    fn default() -> Self {
        AckHoldConfig {
            entry_cap: Duration::from_millis(10),
            expiry: Duration::from_millis(40),
            scale_window: Duration::from_millis(80),
            max_hold: Duration::from_millis(10),
        }
    }
}

/// Zhuge's constants.
#[derive(Clone, Debug, PartialEq)]
pub struct ZhugeConfig {
    /// The Fortune Teller's.
    pub teller: FortuneTellerConfig,
    /// How often the AP sends its in-band feedback (5 ms; the public code sends a synthetic
    /// report about every 1 ms, a receiver every 50-100 ms).
    pub report_interval: Duration,
    /// Out-of-band ACK holding.
    pub ack_hold: AckHoldConfig,
    /// Most predictions kept in the log (older ones are not overwritten: the log stops growing).
    pub log_limit: usize,
}

impl Default for ZhugeConfig {
    fn default() -> Self {
        ZhugeConfig {
            teller: FortuneTellerConfig::default(),
            report_interval: Duration::from_millis(5),
            ack_hold: AckHoldConfig::default(),
            log_limit: 2_000_000,
        }
    }
}

/// One logged prediction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PredictionRecord {
    /// The packet's flow.
    pub flow: FlowId,
    /// Its sequence number.
    pub seq: u64,
    /// When it arrived at the AP.
    pub arrival: Time,
    /// The predicted delay through the AP.
    pub predicted: Duration,
    /// The delay it had: arrival at the AP to the end of its transmission.
    pub actual: Duration,
}

#[derive(Clone, Debug, Default)]
struct InBand {
    format: InBandFormat,
    /// Sequence numbers from `first` with their predicted arrival (`None`: not seen or dropped).
    pending: VecDeque<Option<Time>>,
    first: u64,
    /// The next sequence number expected (packets are not reordered before the AP).
    next_seq: Option<u64>,
    twcc: Option<TwccBuilder>,
}

#[derive(Clone, Debug, Default)]
struct OutOfBand {
    prev_total: Option<Duration>,
    /// `(when, delay increase)`, oldest first.
    increases: VecDeque<(Time, Duration)>,
    /// `(when, token left)`, oldest first.
    tokens: VecDeque<(Time, Duration)>,
    /// Data packet arrivals over the last two windows.
    arrivals: VecDeque<Time>,
    /// ACKs held: `(release, packet)`, in arrival order (release times never decrease).
    held: VecDeque<(Time, Packet)>,
    /// When the last ACK is (or was) released.
    last_release: Time,
}

#[derive(Clone, Debug)]
enum FlowState {
    InBand(InBand),
    OutOfBand(OutOfBand),
    Pass,
}

/// Zhuge at one AP queue.
#[derive(Debug)]
pub struct Zhuge {
    cfg: ZhugeConfig,
    teller: FortuneTeller,
    flows: Vec<FlowState>,
    rng: Rng,
    /// Predictions of packets still in the queue, in queue order: `(packet id, arrival, predicted)`.
    in_queue: VecDeque<(u64, Time, Duration)>,
    log: Vec<PredictionRecord>,
    next_report: Option<Time>,
    /// Built feedback waiting to be polled.
    out: VecDeque<BuiltFeedback>,
    /// A reusable encoding buffer.
    scratch: Vec<u8>,
    /// The client feedback packets dropped (in-band flows).
    dropped_client_feedback: u64,
}

impl Zhuge {
    /// Zhuge for flows with the given roles (indexed by flow id), drawing its ACK-hold samples from
    /// `rng` (its own stream).
    pub fn new(cfg: ZhugeConfig, roles: &[FlowRole], rng: Rng) -> Zhuge {
        let flows = roles
            .iter()
            .map(|r| match r {
                FlowRole::InBand(format) => FlowState::InBand(InBand {
                    format: *format,
                    twcc: Some(TwccBuilder::new(0x5a48_5547, 0)),
                    ..InBand::default()
                }),
                FlowRole::OutOfBand => FlowState::OutOfBand(OutOfBand::default()),
                FlowRole::Pass => FlowState::Pass,
            })
            .collect();
        Zhuge {
            teller: FortuneTeller::new(cfg.teller.clone()),
            cfg,
            flows,
            rng,
            in_queue: VecDeque::new(),
            log: Vec::new(),
            next_report: None,
            out: VecDeque::new(),
            scratch: Vec::new(),
            dropped_client_feedback: 0,
        }
    }

    /// The predictions logged so far, with the delays the packets had.
    pub fn predictions(&self) -> &[PredictionRecord] {
        &self.log
    }

    /// Client feedback packets dropped so far (their content is replaced by the AP's own).
    pub fn dropped_client_feedback(&self) -> u64 {
        self.dropped_client_feedback
    }

    fn backlog(queue: &QueueState) -> Bytes {
        // A packet in service counts as non-empty; its size is not needed to classify slots.
        Bytes(queue.bytes.0 + u64::from(queue.busy))
    }

    /// Writes the in-band feedback of every flow with predictions pending.
    fn build_reports(&mut self, now: Time) {
        for (i, f) in self.flows.iter_mut().enumerate() {
            let FlowState::InBand(s) = f else { continue };
            if s.pending.is_empty() {
                continue;
            }
            let first = s.first;
            let us = |t: Time| (t.as_nanos() / 1_000) as i64;
            self.scratch.clear();
            match s.format {
                InBandFormat::TransportCc => {
                    let arrivals: Vec<Option<i64>> = s.pending.iter().map(|a| a.map(us)).collect();
                    let builder = s.twcc.as_mut().expect("in-band flows have a builder");
                    for fb in builder.build(first as u16, &arrivals) {
                        // Invariant: the builder only produces encodable packets.
                        fb.encode(&mut self.scratch).expect("built feedback encodes");
                    }
                }
                InBandFormat::Rfc8888 => {
                    // Offsets count back from the report timestamp: the latest predicted arrival.
                    let ts = s.pending.iter().flatten().max().copied().unwrap_or(now).max(now);
                    let metrics = s
                        .pending
                        .iter()
                        .map(|a| a.map_or(CcfbMetric::lost(), |a| CcfbMetric::received(us(ts) - us(a), 0)))
                        .collect();
                    let rep = CcfbReport {
                        sender_ssrc: 0x5a48_5547,
                        blocks: vec![CcfbBlock { media_ssrc: 0, begin_seq: first as u16, metrics }],
                        report_timestamp: compact_ntp(us(ts)),
                    };
                    rep.encode(&mut self.scratch).expect("a report of at most 65535 metrics encodes");
                }
            }
            s.first += s.pending.len() as u64;
            s.pending.clear();
            self.out.push_back(BuiltFeedback {
                flow: FlowId(i as u32),
                size: Bytes(IP_UDP_OVERHEAD + self.scratch.len() as u64),
                payload: FeedbackPayload::Rtcp(self.scratch.clone()),
            });
        }
    }
}

impl OutOfBand {
    fn expire(&mut self, now: Time, cfg: &AckHoldConfig) {
        let alive = |t: Time| t + cfg.expiry > now;
        while self.increases.front().is_some_and(|e| !alive(e.0)) {
            self.increases.pop_front();
        }
        while self.tokens.front().is_some_and(|e| !alive(e.0)) {
            self.tokens.pop_front();
        }
        while self.arrivals.front().is_some_and(|&t| t + cfg.scale_window <= now) {
            self.arrivals.pop_front();
        }
    }

    /// A downlink data packet with predicted delay `total` arrived.
    fn on_data(&mut self, now: Time, total: Duration, cfg: &AckHoldConfig) {
        self.expire(now, cfg);
        if let Some(prev) = self.prev_total {
            if total >= prev {
                self.increases.push_back((now, (total - prev).min(cfg.entry_cap)));
            } else {
                self.tokens.push_back((now, (prev - total).min(cfg.entry_cap)));
            }
        }
        self.prev_total = Some(total);
        self.arrivals.push_back(now);
    }

    /// How long to hold an ACK arriving now.
    fn hold(&mut self, now: Time, cfg: &AckHoldConfig, rng: &mut Rng) -> Duration {
        self.expire(now, cfg);
        if self.increases.is_empty() {
            return Duration::ZERO;
        }
        let i = rng.random_range(0..self.increases.len());
        let mut d = self.increases[i].1;
        while d > Duration::ZERO {
            let Some(tok) = self.tokens.front_mut() else { break };
            if tok.1 > d {
                tok.1 -= d;
                d = Duration::ZERO;
            } else {
                d -= tok.1;
                self.tokens.pop_front();
            }
        }
        // Fewer packets in the last window than in the one before: the flow slowed down, and so
        // should the delay the ACKs signal.
        let split = self.arrivals.partition_point(|&t| t + cfg.expiry <= now);
        let (previous, current) = (split as u64, (self.arrivals.len() - split) as u64);
        if previous > current && previous > 0 {
            d = Duration(d.as_nanos() * current / previous);
        }
        d.min(cfg.max_hold)
    }
}

impl Middlebox for Zhuge {
    fn name(&self) -> &'static str {
        "zhuge"
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn on_enqueue(&mut self, now: Time, pkt: &mut Packet, queue: &QueueState) -> Verdict {
        self.teller.on_backlog(now, Self::backlog(queue));
        let head_wait = queue.head_since.map_or(Duration::ZERO, |s| now - s);
        let p = self.teller.predict(now, queue.bytes, head_wait);
        if self.log.len() < self.cfg.log_limit {
            self.in_queue.push_back((pkt.id, now, p.total));
        }
        self.teller.on_backlog(now, Bytes(Self::backlog(queue).0 + pkt.size as u64));
        // Feedback of a flow that sends the other way shares the queue but is not data.
        if pkt.kind != PacketKind::Data {
            return Verdict::Pass;
        }
        match self.flows.get_mut(pkt.flow.index()) {
            Some(FlowState::InBand(s)) => {
                let next = *s.next_seq.get_or_insert(pkt.seq);
                if s.pending.is_empty() {
                    s.first = s.first.max(next);
                }
                // Sequence numbers the AP never saw (lost upstream) are reported lost.
                for _ in next..pkt.seq {
                    s.pending.push_back(None);
                }
                if pkt.seq >= next {
                    s.pending.push_back(Some(now + p.total));
                    s.next_seq = Some(pkt.seq + 1);
                }
                if self.next_report.is_none() {
                    self.next_report = Some(now + self.cfg.report_interval);
                }
            }
            Some(FlowState::OutOfBand(s)) => s.on_data(now, p.total, &self.cfg.ack_hold),
            _ => {}
        }
        Verdict::Pass
    }

    fn on_drop(&mut self, now: Time, pkt: &Packet, queue: &QueueState) {
        self.teller.on_backlog(now, Self::backlog(queue));
        if self.in_queue.back().is_some_and(|e| e.0 == pkt.id) {
            self.in_queue.pop_back();
        }
        if let Some(FlowState::InBand(s)) = self.flows.get_mut(pkt.flow.index()) {
            if let Some(slot) = pkt.seq.checked_sub(s.first).and_then(|i| s.pending.get_mut(i as usize)) {
                *slot = None;
            }
        }
    }

    fn on_transmitted(&mut self, now: Time, pkt: &Packet, queue: &QueueState) {
        self.teller.on_dequeue(now, pkt.bytes(), Self::backlog(queue));
        // Packets leave in queue order; entries ahead of this one were dropped.
        // (A packet that arrived once the log was full has no entry, and neither has anything
        // still queued before it.)
        while let Some((id, arrival, predicted)) = self.in_queue.pop_front() {
            if id == pkt.id {
                self.log.push(PredictionRecord {
                    flow: pkt.flow,
                    seq: pkt.seq,
                    arrival,
                    predicted,
                    actual: now - arrival,
                });
                break;
            }
        }
    }

    fn on_reverse(&mut self, now: Time, pkt: &mut Packet) -> Verdict {
        if pkt.kind != PacketKind::Feedback {
            return Verdict::Pass;
        }
        match self.flows.get_mut(pkt.flow.index()) {
            Some(FlowState::InBand(_)) => {
                // The AP speaks for the receiver: its own transport-wide feedback replaces the
                // client's (the simulated receivers send no other RTCP).
                self.dropped_client_feedback += 1;
                Verdict::Drop
            }
            Some(FlowState::OutOfBand(s)) => {
                let hold = s.hold(now, &self.cfg.ack_hold, &mut self.rng);
                // Never before the ACK before it: ACKs stay in order.
                let release = (now + hold).max(s.last_release);
                s.last_release = release;
                if release <= now && s.held.is_empty() {
                    return Verdict::Pass;
                }
                s.held.push_back((release, *pkt));
                Verdict::Consume
            }
            _ => Verdict::Pass,
        }
    }

    fn handle_timeout(&mut self, now: Time, _queue: &QueueState) {
        if self.next_report.is_some_and(|t| t <= now) {
            self.build_reports(now);
            let pending =
                self.flows.iter().any(|f| matches!(f, FlowState::InBand(s) if !s.pending.is_empty()));
            self.next_report = pending.then_some(now + self.cfg.report_interval);
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        let held = self
            .flows
            .iter()
            .filter_map(|f| match f {
                FlowState::OutOfBand(s) => s.held.front().map(|h| h.0),
                _ => None,
            })
            .min();
        match (self.next_report, held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_inject(&mut self, now: Time) -> Option<(Direction, Packet)> {
        for f in &mut self.flows {
            if let FlowState::OutOfBand(s) = f {
                if s.held.front().is_some_and(|h| h.0 <= now) {
                    return s.held.pop_front().map(|h| (Direction::Reverse, h.1));
                }
            }
        }
        None
    }

    fn poll_feedback(&mut self, _now: Time) -> Option<BuiltFeedback> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::rng::stream;
    use lowlat_core::Bitrate;
    use lowlat_wire::{CcfbReport, NumReportsConvention, TransportCcFeedback};

    fn queue(bytes: u64) -> QueueState {
        QueueState { bytes: Bytes(bytes), packets: 0, rate: Bitrate::mbps(10), busy: false, head_since: None }
    }

    fn data(seq: u64) -> Packet {
        Packet::new(seq, FlowId(0), Bytes(1200), seq, Time::ZERO)
    }

    /// Ten packets arrive 1 ms apart behind a growing queue; the AP's queue drops the sixth.
    fn drive(format: InBandFormat) -> (Zhuge, Vec<Time>, Vec<u8>) {
        let mut z = Zhuge::new(ZhugeConfig::default(), &[FlowRole::InBand(format)], stream(1, "z"));
        let mut predicted = Vec::new();
        for i in 0..10u64 {
            let now = Time::from_millis(i);
            let mut p = data(i);
            let q = queue(i * 1200);
            let before = z.teller.clone().predict(now, q.bytes, Duration::ZERO).total;
            assert_eq!(z.on_enqueue(now, &mut p, &q), Verdict::Pass);
            predicted.push(now + before);
            if i == 5 {
                z.on_drop(now, &p, &q);
            }
        }
        let due = z.poll_timeout().expect("a report is due");
        assert_eq!(due, Time::from_millis(5));
        z.handle_timeout(Time::from_millis(10), &queue(0));
        let fb = z.poll_feedback(Time::from_millis(10)).expect("a report");
        assert_eq!(fb.flow, FlowId(0));
        let FeedbackPayload::Rtcp(bytes) = fb.payload else { panic!("RTCP expected") };
        assert_eq!(fb.size.0, bytes.len() as u64 + IP_UDP_OVERHEAD);
        (z, predicted, bytes)
    }

    #[test]
    fn transport_cc_reports_the_predictions_and_the_drop() {
        let (mut z, predicted, bytes) = drive(InBandFormat::TransportCc);
        let fb = TransportCcFeedback::decode(&bytes).unwrap();
        let arrivals = fb.arrivals_us();
        assert_eq!(arrivals.len(), 10);
        for (i, (seq, at)) in arrivals.iter().enumerate() {
            assert_eq!(*seq as usize, i);
            match at {
                None => assert_eq!(i, 5, "only the dropped packet is lost"),
                Some(us) => {
                    let want = predicted[i].as_nanos() as i64 / 1_000;
                    assert!((us - want).abs() <= 125, "seq {i}: {us} us, predicted {want} us");
                }
            }
        }
        // Client feedback of the flow is dropped; data of other flows untouched.
        let mut fbk = data(0);
        fbk.kind = PacketKind::Feedback;
        assert_eq!(z.on_reverse(Time::from_millis(11), &mut fbk), Verdict::Drop);
        assert_eq!(z.dropped_client_feedback(), 1);
        assert!(z.poll_feedback(Time::from_millis(11)).is_none());
    }

    #[test]
    fn rfc8888_reports_the_predictions_to_a_1024th_of_a_second() {
        let (_, predicted, bytes) = drive(InBandFormat::Rfc8888);
        let rep = CcfbReport::decode(&bytes, NumReportsConvention::Count).unwrap();
        let ts = rep.report_timestamp;
        let ts_us = i64::from(ts >> 16) * 1_000_000 + ((i64::from(ts & 0xffff) * 1_000_000) >> 16);
        let metrics = &rep.blocks[0].metrics;
        assert_eq!(metrics.len(), 10);
        assert!(!metrics[5].received);
        for (i, m) in metrics.iter().enumerate().filter(|(i, _)| *i != 5) {
            let at = ts_us - m.offset_us().unwrap();
            let want = predicted[i].as_nanos() as i64 / 1_000;
            assert!((at - want).abs() <= 520, "seq {i}: {at} us, predicted {want} us");
        }
    }

    #[test]
    fn an_ack_is_held_at_most_the_cap_and_never_before_the_previous_one() {
        let mut z = Zhuge::new(ZhugeConfig::default(), &[FlowRole::OutOfBand], stream(2, "z"));
        // The predicted delay grows by 4 ms per packet: a history of 4 ms increases.
        for i in 0..20u64 {
            let now = Time::from_millis(i);
            let mut p = data(i);
            z.on_enqueue(now, &mut p, &queue(i * 5_000));
        }
        let mut last = Time::ZERO;
        let mut held = 0;
        for i in 0..10u64 {
            let now = Time::from_millis(20) + Duration::from_micros(100 * i);
            let mut ack = data(100 + i);
            ack.kind = PacketKind::Feedback;
            if z.on_reverse(now, &mut ack) == Verdict::Consume {
                held += 1;
            }
            // Release everything due up to the next ACK.
            while let Some(t) = z.poll_timeout().filter(|t| *t <= now + Duration::from_millis(20)) {
                let Some((dir, p)) = z.poll_inject(t) else { break };
                assert_eq!(dir, Direction::Reverse);
                assert!(t >= last, "released out of order");
                assert!(
                    t - Time::from_millis(20) <= Duration::from_millis(11),
                    "held {}",
                    t - Time::from_millis(20)
                );
                assert!(p.seq >= 100);
                last = t;
            }
        }
        assert!(held > 0, "no ACK was held");
    }
}
