//! SCONE-PRO at the access point: the AP tells each media sender behind it what the link can
//! carry, in one of two modes.
//!
//! - [`SconeMode::Rtc`] (`assist = "scone-rtc"`, the SCONE-PRO hackathon's RTC signal): every
//!   `period` (20 ms; the spec's 20-50 ms) the AP sends each active media flow's sender a small
//!   packet on the reverse path with its capacity (the link's, shared equally among the flows
//!   active in the last second) and its queue length: a NETWORK_SIGNAL frame
//!   ([`lowlat_wire::netsignal`], CC_PARAMETER style) in a UDP datagram of its real encoded size.
//! - [`SconeMode::Standard`] (`assist = "scone"`, draft-ietf-scone-protocol-08): senders send a
//!   SCONE packet in their first datagram and then every `refresh` (§7.1: every 20-30 s is
//!   likely sufficient, at least twice per 67 s monitoring period); the AP lowers its 7-bit rate
//!   signal to its own advice (the largest step not above its capacity, and not above the
//!   optional `policy_signal`), never raising it. The draft leaves to the application how the
//!   receiving endpoint tells its sender (§3.4); the model relays the advice to the sender from
//!   the AP at once, as if the receiver, one hop further, echoed it in its next feedback, and
//!   counts the SCONE packet's 15 bytes in that relay, not in the media datagram.
//!
//! The capacity the AP knows is either the oracle (the link's configured rate now, e.g. the
//! trace's) or measured (its dequeue rate over non-idle time in a window, Zhuge's tx-rate
//! estimate from [`crate::fortune_teller`]), so users can see what an honest AP can know.

use crate::fortune_teller::{BurstRule, FortuneTeller, FortuneTellerConfig};
use lowlat_core::{Bitrate, Bytes, Duration, FlowId, Packet, PacketKind, Time};
use lowlat_net::middlebox::{BuiltFeedback, FeedbackPayload, Middlebox, QueueState, Verdict};
use lowlat_wire::scone::{self, SconeRepr};
use lowlat_wire::NetworkSignalRepr;
use std::any::Any;
use std::collections::VecDeque;

/// Which signal the AP sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SconeMode {
    /// Capacity and queue length every `period` (SCONE-PRO for RTC).
    Rtc,
    /// The standard SCONE packet's long-term throughput advice.
    Standard,
}

/// Where the AP's capacity figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapacitySource {
    /// The link's configured rate now (a trace's current rate): what the AP's PHY rate
    /// controller would know at best.
    Oracle,
    /// The dequeue rate over non-idle time in `window`: what the AP measures.
    Measured,
}

/// The AP's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct SconeConfig {
    /// Which signal.
    pub mode: SconeMode,
    /// RTC: how often the AP signals each flow (20 ms; the spec's range is 20-50 ms).
    pub period: Duration,
    /// Oracle or measured capacity.
    pub capacity: CapacitySource,
    /// Measured: the window of the dequeue-rate estimate (200 ms: Zhuge's 5 frame intervals).
    pub window: Duration,
    /// Standard: how often a sender's datagrams carry a SCONE packet the AP can rewrite (20 s,
    /// §7.1's 20-30 s, twice or more per 67 s period).
    pub refresh: Duration,
    /// Standard: the most the AP ever advises, as a rate signal (0-126; 127: no policy, the
    /// capacity alone).
    pub policy_signal: u8,
}

impl Default for SconeConfig {
    fn default() -> Self {
        SconeConfig {
            mode: SconeMode::Rtc,
            period: Duration::from_millis(20),
            capacity: CapacitySource::Oracle,
            window: Duration::from_millis(200),
            refresh: Duration::from_secs(20),
            policy_signal: scone::SIGNAL_UNKNOWN,
        }
    }
}

impl SconeConfig {
    /// Checks the settings: `Err("key: message")`.
    /// Periods from 1 ms (a signal per millisecond per flow is already 30 kbit/s of them) to an
    /// hour; the measured capacity's window from 1 ms to 50 s (its ring has a slot per
    /// millisecond, as Zhuge's window of 5 frame intervals of at most 10 s).
    pub fn validate(&self) -> Result<(), String> {
        let (ms, hour) = (Duration::from_millis(1), Duration::from_secs(3600));
        let max_window = Duration(crate::zhuge::MAX_FRAME_INTERVAL.as_nanos() * 5);
        for (k, d, max) in [
            ("period", self.period, hour),
            ("window", self.window, max_window),
            ("refresh", self.refresh, hour),
        ] {
            if d < ms || d > max {
                return Err(format!("{k}: got \"{d}\", expected \"{ms}\" to \"{max}\""));
            }
        }
        if self.policy_signal > scone::SIGNAL_UNKNOWN {
            return Err(format!(
                "policy_signal: got {}, expected a SCONE rate signal 0-126 (or 127: no policy)",
                self.policy_signal
            ));
        }
        Ok(())
    }
}

/// What a SCONE middlebox hands the driver for a sender: the encoded signal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SconeSignal {
    /// A NETWORK_SIGNAL frame (RTC mode).
    Capacity(Vec<u8>),
    /// A SCONE packet carrying the AP's advice (standard mode).
    Advice(Vec<u8>),
}

/// Bytes of IPv4 and UDP headers.
const IP_UDP_OVERHEAD: u64 = 28;
/// A flow is active while its packets arrived within this long.
const ACTIVE_WITHIN: Duration = Duration::from_secs(1);
/// The connection id the model's SCONE packets carry (QUIC's common 8 bytes).
const DCID: [u8; 8] = [0x5c; 8];

#[derive(Clone, Copy, Debug, Default)]
struct FlowState {
    /// Whether the AP signals this flow's sender (media flows).
    signalled: bool,
    last_seen: Option<Time>,
    sequence: u64,
    /// Standard mode: when the flow's next SCONE packet passes.
    next_scone: Option<Time>,
}

/// The SCONE-PRO access point.
#[derive(Debug)]
pub struct SconeAp {
    cfg: SconeConfig,
    flows: Vec<FlowState>,
    teller: FortuneTeller,
    next_tick: Time,
    out: VecDeque<BuiltFeedback>,
    /// Signals sent so far.
    signals: u64,
}

impl SconeAp {
    /// An AP signalling the flows whose `signalled[i]` is true.
    pub fn new(cfg: SconeConfig, signalled: &[bool]) -> SconeAp {
        let window = cfg.window;
        let teller = FortuneTeller::new(FortuneTellerConfig {
            slot: Duration::from_millis(1),
            frame_interval: window,
            window_frames: 1,
            // The lowest rate SCONE can say.
            min_rate: Bitrate::kbps(100),
            burst_rule: BurstRule::None,
            head_of_line: false,
            // Exact arithmetic: the whole-millisecond truncation is the Zhuge artifact's.
            whole_ms: false,
        });
        SconeAp {
            next_tick: Time::ZERO + cfg.period,
            cfg,
            flows: signalled.iter().map(|&s| FlowState { signalled: s, ..FlowState::default() }).collect(),
            teller,
            out: VecDeque::new(),
            signals: 0,
        }
    }

    /// Signals sent so far.
    pub fn signals(&self) -> u64 {
        self.signals
    }

    fn backlog(queue: &QueueState) -> Bytes {
        Bytes(queue.bytes.0 + u64::from(queue.busy))
    }

    /// The link's capacity as the AP knows it.
    fn capacity(&mut self, now: Time, queue: &QueueState) -> Bitrate {
        match self.cfg.capacity {
            CapacitySource::Oracle => queue.rate,
            CapacitySource::Measured => self.teller.tx_rate(now),
        }
    }

    fn active(&self, now: Time) -> u64 {
        self.flows
            .iter()
            .filter(|f| f.signalled && f.last_seen.is_some_and(|t| now.saturating_since(t) < ACTIVE_WITHIN))
            .count() as u64
    }

    fn rtc_signals(&mut self, now: Time, queue: &QueueState) {
        let n = self.active(now);
        if n == 0 {
            return;
        }
        let share = Bitrate::from_bps_f64(self.capacity(now, queue).as_bps_f64() / n as f64);
        let delay_us = if queue.rate > Bitrate::ZERO {
            (queue.bytes.bits() as f64 / queue.rate.as_bps_f64() * 1e6) as u64
        } else {
            0
        };
        for (i, f) in self.flows.iter_mut().enumerate() {
            if !(f.signalled && f.last_seen.is_some_and(|t| now.saturating_since(t) < ACTIVE_WITHIN)) {
                continue;
            }
            let repr = NetworkSignalRepr {
                sequence: f.sequence,
                capacity_bps: share.as_bps(),
                queue_bytes: queue.bytes.0,
                queue_delay_us: delay_us,
            };
            f.sequence += 1;
            let mut bytes = Vec::with_capacity(repr.buffer_len());
            // Invariant: every field is far below 2^62.
            repr.emit(&mut bytes).expect("signal fields fit a varint");
            self.out.push_back(BuiltFeedback {
                flow: FlowId(i as u32),
                size: Bytes(repr.datagram_len() as u64),
                payload: FeedbackPayload::Frame(Box::new(SconeSignal::Capacity(bytes))),
            });
            self.signals += 1;
        }
    }

    /// Standard mode: the SCONE packet of `flow`'s datagram passing now, rewritten.
    fn standard_advice(&mut self, now: Time, flow: usize, queue: &QueueState) {
        let n = self.active(now).max(1);
        let share = self.capacity(now, queue).as_bps_f64() / n as f64;
        let target = scone::bps_to_signal(share).min(self.cfg.policy_signal);
        // What the sender wrote: 127, unknown.
        let mut datagram = Vec::with_capacity(16);
        SconeRepr { rate_signal: scone::SIGNAL_UNKNOWN, dcid: &DCID, scid: &[] }
            .emit(&mut datagram)
            .expect("a valid SCONE packet encodes");
        scone::apply_advice(&mut datagram, target).expect("target is at most 127");
        self.out.push_back(BuiltFeedback {
            flow: FlowId(flow as u32),
            size: Bytes(IP_UDP_OVERHEAD + datagram.len() as u64),
            payload: FeedbackPayload::Frame(Box::new(SconeSignal::Advice(datagram))),
        });
        self.signals += 1;
    }
}

impl Middlebox for SconeAp {
    fn name(&self) -> &'static str {
        match self.cfg.mode {
            SconeMode::Rtc => "scone-rtc",
            SconeMode::Standard => "scone",
        }
    }

    fn on_enqueue(&mut self, now: Time, pkt: &mut Packet, queue: &QueueState) -> Verdict {
        self.teller.on_backlog(now, Bytes(Self::backlog(queue).0 + pkt.size as u64));
        if pkt.kind != PacketKind::Data {
            return Verdict::Pass;
        }
        let i = pkt.flow.index();
        let Some(f) = self.flows.get_mut(i) else { return Verdict::Pass };
        f.last_seen = Some(now);
        if self.cfg.mode == SconeMode::Standard && f.signalled && f.next_scone.is_none_or(|t| now >= t) {
            f.next_scone = Some(now + self.cfg.refresh);
            self.standard_advice(now, i, queue);
        }
        Verdict::Pass
    }

    fn on_transmitted(&mut self, now: Time, pkt: &Packet, queue: &QueueState) {
        self.teller.on_dequeue(now, pkt.bytes(), Self::backlog(queue));
    }

    fn on_drop(&mut self, now: Time, _pkt: &Packet, queue: &QueueState) {
        self.teller.on_backlog(now, Self::backlog(queue));
    }

    fn handle_timeout(&mut self, now: Time, queue: &QueueState) {
        while self.next_tick <= now {
            self.next_tick += self.cfg.period;
        }
        if self.cfg.mode == SconeMode::Rtc {
            self.rtc_signals(now, queue);
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        (self.cfg.mode == SconeMode::Rtc).then_some(self.next_tick)
    }

    fn poll_feedback(&mut self, _now: Time) -> Option<BuiltFeedback> {
        self.out.pop_front()
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn hears_dequeues(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(bytes: u64, rate: Bitrate) -> QueueState {
        QueueState {
            bytes: Bytes(bytes),
            packets: (bytes / 1200) as usize,
            rate,
            busy: bytes > 0,
            head_since: None,
        }
    }

    fn data(flow: u32) -> Packet {
        Packet::new(0, FlowId(flow), Bytes(1200), 0, Time::ZERO)
    }

    fn decode(fb: &BuiltFeedback) -> &SconeSignal {
        let FeedbackPayload::Frame(f) = &fb.payload else { panic!("not a frame") };
        f.downcast_ref::<SconeSignal>().expect("a SCONE signal")
    }

    #[test]
    fn rtc_mode_signals_capacity_share_and_queue_every_period_with_its_encoded_size() {
        let mut ap = SconeAp::new(SconeConfig::default(), &[true, true, false]);
        let q = state(24_000, Bitrate::mbps(20));
        for f in 0..3 {
            ap.on_enqueue(Time::from_millis(1), &mut data(f), &q);
        }
        assert_eq!(ap.poll_timeout(), Some(Time::from_millis(20)));
        ap.handle_timeout(Time::from_millis(20), &q);
        let out: Vec<_> = std::iter::from_fn(|| ap.poll_feedback(Time::from_millis(20))).collect();
        assert_eq!(out.iter().map(|b| b.flow).collect::<Vec<_>>(), vec![FlowId(0), FlowId(1)]);
        let SconeSignal::Capacity(bytes) = decode(&out[0]) else { panic!("rtc mode sends capacity") };
        let r = NetworkSignalRepr::decode(bytes).unwrap();
        // 20 Mbit/s shared by two media flows; 24 000 B queued = 9.6 ms at 20 Mbit/s.
        assert_eq!((r.capacity_bps, r.queue_bytes, r.queue_delay_us), (10_000_000, 24_000, 9_600));
        assert_eq!(out[0].size, Bytes(28 + bytes.len() as u64));
        assert_eq!(ap.poll_timeout(), Some(Time::from_millis(40)));
        // A flow silent for a second is no longer signalled.
        ap.handle_timeout(Time::from_millis(1020), &q);
        assert!(ap.poll_feedback(Time::from_millis(1020)).is_none());
    }

    #[test]
    fn standard_mode_advises_the_step_below_capacity_at_the_refresh_period() {
        let cfg = SconeConfig { mode: SconeMode::Standard, ..SconeConfig::default() };
        let mut ap = SconeAp::new(cfg, &[true]);
        assert_eq!(ap.poll_timeout(), None, "no timer: advice rides the sender's SCONE packets");
        let q = state(0, Bitrate::mbps(15));
        ap.on_enqueue(Time::from_millis(1), &mut data(0), &q);
        let fb = ap.poll_feedback(Time::from_millis(1)).unwrap();
        let SconeSignal::Advice(bytes) = decode(&fb) else { panic!("standard mode sends advice") };
        // 15 Mbit/s: 20 log10(150) = 43.5 -> signal 43 (14.1 Mbit/s), never above capacity.
        assert_eq!(SconeRepr::decode(bytes).unwrap().rate_signal, 43);
        // The next SCONE packet passes only after `refresh`.
        ap.on_enqueue(Time::from_secs(10), &mut data(0), &q);
        assert!(ap.poll_feedback(Time::from_secs(10)).is_none());
        ap.on_enqueue(Time::from_millis(20_001), &mut data(0), &q);
        assert!(ap.poll_feedback(Time::from_millis(20_001)).is_some());
        // A policy below the capacity wins.
        let cfg = SconeConfig { mode: SconeMode::Standard, policy_signal: 20, ..SconeConfig::default() };
        let mut ap = SconeAp::new(cfg, &[true]);
        ap.on_enqueue(Time::from_millis(1), &mut data(0), &q);
        let fb = ap.poll_feedback(Time::from_millis(1)).unwrap();
        let SconeSignal::Advice(bytes) = decode(&fb) else { panic!() };
        assert_eq!(SconeRepr::decode(bytes).unwrap().rate_signal, 20);
    }

    #[test]
    fn measured_capacity_is_the_dequeue_rate_over_busy_time() {
        let cfg = SconeConfig { capacity: CapacitySource::Measured, ..SconeConfig::default() };
        let mut ap = SconeAp::new(cfg, &[true]);
        // 1200 B every 1 ms while the queue is never empty: 9.6 Mbit/s, whatever the oracle says.
        for ms in 1..=300u64 {
            let t = Time::from_millis(ms);
            ap.on_enqueue(t, &mut data(0), &state(12_000, Bitrate::mbps(50)));
            ap.on_transmitted(t, &data(0), &state(12_000, Bitrate::mbps(50)));
        }
        let got = ap.capacity(Time::from_millis(300), &state(12_000, Bitrate::mbps(50)));
        assert!((got.as_bps_f64() - 9.6e6).abs() < 0.1e6, "{got}");
        let bad = |c: SconeConfig| c.validate().unwrap_err();
        assert!(bad(SconeConfig { period: Duration::ZERO, ..SconeConfig::default() }).starts_with("period"));
        assert!(
            bad(SconeConfig { policy_signal: 128, ..SconeConfig::default() }).starts_with("policy_signal")
        );
    }
}
