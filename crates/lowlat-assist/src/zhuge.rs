//! Zhuge at the access point (SIGCOMM 2022): the Fortune Teller predicts each downlink packet's
//! delay through the AP's queue when it arrives, and the Feedback Updater makes the feedback that
//! goes back to the sender carry that prediction at once.
//!
//! - **In-band** (RTP with transport-wide sequence numbers: GCC, NADA, SCReAM): the AP writes
//!   transport-cc (or RFC 8888) feedback carrying predicted arrival times and drops the client's own
//!   congestion feedback. Two report schedules ([`InBandReports`]):
//!   - *sampled* (the artifact's `Sendback`): the first data packet arriving while no sample is
//!     pending is sampled; 1 ms later the AP predicts its delay with the queue as it is then minus
//!     the bytes that arrived after it ("as if it had just arrived") and sends a report of that one
//!     packet, arrival = report time + predicted delay. About one packet per millisecond is
//!     reported; the others are never reported (not reported lost either).
//!   - *per packet* (the paper's §5.3 and the spec): every packet's predicted arrival
//!     (`arrival + total delay`) is remembered and every [`ZhugeConfig::report_interval`] one
//!     feedback covers them all; a packet the AP's queue drops before its report leaves is
//!     reported lost.
//! - **Out-of-band** (ack-clocked transports: Copa, BBR, CUBIC over QUIC/TCP; the artifact's
//!   `DeltaDelay`): each downlink data packet's change of predicted delay goes into a history of
//!   delay increases (capped 10 ms) or becomes a delay token; each uplink ACK is held for an
//!   increase sampled uniformly from the history, cancelled by tokens (oldest first), scaled by
//!   current/previous when the last 40 ms window had fewer entries than the one before, never
//!   longer than [`AckHoldConfig::max_hold`] and never released before the ACK before it. How the
//!   hold relates to the previous ACK's is the [`ZhugeVariant`] difference below.
//!
//! ## Against the artifact (`network-queue-zhuge.cc`, `delta-delay.cc`), line by line
//! Variant `artifact` (default: the paper's evaluation ran this ns-3 code) follows it; `paper`
//! takes the paper's and the talk's description where they differ:
//! - *ACK held while the previous ACK is still held*: artifact: hold = the previous ACK's hold +
//!   the new sample (with an empty history the ACK leaves with the previous one), capped at
//!   `max_hold` after its own arrival, so a run of ACKs in a growing queue carries the accumulated
//!   increase; paper: the sample alone, released no earlier than the previous ACK.
//! - *What is held*: the artifact's handler is a promiscuous receive callback that sends a held
//!   copy of each ACK while the device forwards the original at once, so its senders' ACK clock
//!   is never delayed ([`AckHoldConfig::copy`], the scenario key `ack_copy`); both variants hold
//!   the ACK itself by default, as the paper describes, and `lowlat reproduce zhuge` turns the
//!   copy on.
//! - *In-band reports*: the artifact samples one packet per ~1 ms (above) for its own sender,
//!   which reads the AP's dequeue rate from the report; the paper builds transport-cc for every
//!   packet. Both variants default to per-packet reports (artifact: every 1 ms, its cadence;
//!   paper: every 5 ms), and `InBandReports::Sampled` is offered but not the default: a
//!   transport-cc sender measures its acknowledged bitrate from the reported packets, so one
//!   report per millisecond caps it near one packet per millisecond of pacing, and GCC, which
//!   bounds its rate by 1.5x the acknowledged bitrate, loses throughput (measured on
//!   `rest-wifi_0` under the paper's conditions: 3.0 Mbit/s sampled against 7.9 per packet and
//!   8.6 for GCC+FIFO).
//! - *Arithmetic*: artifact: whole milliseconds (`FortuneTellerConfig::whole_ms`); paper: ns.
//!
//! Same in both variants, as in the artifact: only data packets after the first
//! [`AckHoldConfig::warmup`] (3 s) feed the history, and a packet that finds the queue empty after
//! a packet that also found it empty adds nothing (but still sets the reference for the next
//! delta); the 5 ms aggregate allowance only on a Wi-Fi link (set by the scenario layer); the last
//! rate and interval kept over an idle window (see the Fortune Teller). Deliberate differences:
//! - The artifact marks an in-band report with the AP's dequeue rate in its own feedback format;
//!   transport-cc and RFC 8888 have no such field, so it is not sent.
//! - The artifact does not drop the client's feedback in its RTP mode (its receiver's and the
//!   AP's reports both reach the sender); the paper drops the client's transport-wide feedback
//!   and so does this model, in both variants.
//! - The first data packet's delta is taken against nothing (the artifact against 0 ms).
//! - Per-packet reports keep the predicted arrivals of a flow in order (a packet is reported
//!   arriving no earlier than the one queued ahead of it, as a FIFO delivers): independent
//!   predictions run backwards after an outage, when the all-busy window's floor rate made the
//!   packets queued then look seconds away, and a transport-cc sender's acknowledged-bitrate
//!   window assumes arrivals in order (measured on `office-wifi_0` under the paper's conditions:
//!   GCC+Zhuge 9.0 Mbit/s without this rule, 10.3 with it, GCC+FIFO 10.8).
//! - The head-of-line wait is measured exactly (in whole ms with `whole_ms`), where the artifact
//!   counts the 1 ms ticks during which the same packet is at the head.
//!
//! ## What in-band reports do to a delay-based sender on a short capacity dip
//! The Fortune Teller extrapolates the last window's dequeue rate, so during a dip of a few
//! hundred milliseconds (a 200 ms trace line far below its neighbours) it predicts the queued
//! packets' delays at the dip's rate, seconds ahead at its floor, and the reports carry those
//! arrivals at once. A transport-cc sender's acknowledged rate (bytes over its window of reported
//! arrivals) falls to the dip's rate, and GCC cuts to 0.85x it, then climbs back at 8 %/s or
//! less; a receiver would report the dip after it ended, with the burst that followed. The same
//! immediacy is what shortens a lasting drop's queue. This is the whole of GCC+Zhuge's
//! throughput loss on the Zhuge traces (measured, with the analysis in the reproduction's module
//! doc: `python/lowlat/reproduce/zhuge.py`, *GCC+Zhuge sends less*). The in-order rule above keeps
//! the arrivals after a dip at the last over-prediction until it has passed (GCC's grouping sees
//! one burst); reporting each prediction as it is (the artifact's way), in whole or only where no
//! packet is queued ahead, was measured worse with libwebrtc's grouping (`pitree4g_0`, 60 s:
//! GCC+Zhuge 1.9 Mbit/s against 2.7), which drops arrivals that run backwards as reordered.
//!
//! Every prediction is logged with the packet's actual delay through the queue, for accuracy
//! plots (a logged prediction of a packet the artifact would not have predicted changes no
//! state). Sans-IO: driven through the [`Middlebox`] hooks with `now`.

use crate::fortune_teller::{BurstRule, FortuneTeller, FortuneTellerConfig};
use crate::prediction_log::PredictionLog;
pub use crate::prediction_log::PredictionRecord;
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

/// Where the public artifact and the paper differ (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZhugeVariant {
    /// The ns-3 code the paper's evaluation ran (default).
    #[default]
    Artifact,
    /// The paper's and the talk's description.
    Paper,
}

/// When the AP writes in-band feedback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InBandReports {
    /// One sampled packet per report, predicted `delay` after it arrived (the artifact: 1 ms).
    Sampled {
        /// How long after the sampled packet's arrival its report leaves.
        delay: Duration,
    },
    /// Every packet, in one report every `interval` (the paper; 5 ms here, a receiver's every
    /// 50-100 ms).
    PerPacket {
        /// The report interval.
        interval: Duration,
    },
}

/// The out-of-band ACK holding constants (Zhuge §5; the artifact's `DeltaDelay`).
#[derive(Clone, Debug, PartialEq)]
pub struct AckHoldConfig {
    /// Largest delay increase kept in the history, and largest token (10 ms).
    pub entry_cap: Duration,
    /// How long increases and tokens stay usable (40 ms).
    pub expiry: Duration,
    /// How long entries are remembered to compare the last window with the one before (80 ms:
    /// two windows).
    pub scale_window: Duration,
    /// Longest an ACK is held (10 ms; the code notes this bound should be the minimum RTT).
    pub max_hold: Duration,
    /// Data packets feed the history only after this much of the run (3 s, the artifact's
    /// `Simulator::Now().GetSeconds() > 3`).
    pub warmup: Duration,
    /// The artifact's "add the previous ACK's hold" rule (true) or the paper's "release no earlier
    /// than the previous ACK" (false).
    pub accumulate: bool,
    /// The artifact's wiring (true): the hold is worked out as usual, but what it delays is a copy
    /// of the ACK, and the original passes at once. Its handler (`network-queue-zhuge.cc`
    /// `OnRecv_snddev`, a promiscuous receive callback) sends the held copy with `SendPkt`, and
    /// ns-3.34's `PointToPointNetDevice::Receive` calls the promiscuous callback and then forwards
    /// the original; the late copy acknowledges nothing new, so the sender takes no sample from it.
    /// Here the copy is not sent (lowlat's senders ignore it alike), so nothing of its hold is
    /// worked out either (the history of delay increases and the hold samples would be read by
    /// nothing). False: the ACK itself is held, as the paper describes Zhuge (default).
    pub copy: bool,
}

impl Default for AckHoldConfig {
    fn default() -> Self {
        AckHoldConfig {
            entry_cap: Duration::from_millis(10),
            expiry: Duration::from_millis(40),
            scale_window: Duration::from_millis(80),
            max_hold: Duration::from_millis(10),
            warmup: Duration::from_secs(3),
            accumulate: true,
            copy: false,
        }
    }
}

/// Zhuge's constants.
#[derive(Clone, Debug, PartialEq)]
pub struct ZhugeConfig {
    /// Which description the defaults follow (artifact).
    pub variant: ZhugeVariant,
    /// The Fortune Teller's.
    pub teller: FortuneTellerConfig,
    /// The in-band report schedule (per packet: every 1 ms for the artifact variant, every 5 ms
    /// for the paper's; `Sampled` is the artifact's own schedule, see the module doc).
    pub in_band: InBandReports,
    /// Out-of-band ACK holding.
    pub ack_hold: AckHoldConfig,
    /// Most predictions kept in the log (older ones are not overwritten: the log stops growing).
    pub log_limit: usize,
}

impl Default for ZhugeConfig {
    fn default() -> Self {
        ZhugeConfig::for_variant(ZhugeVariant::Artifact)
    }
}

impl ZhugeConfig {
    /// The defaults of one variant (Wi-Fi mode; see the module doc for what differs).
    pub fn for_variant(variant: ZhugeVariant) -> ZhugeConfig {
        let artifact = variant == ZhugeVariant::Artifact;
        ZhugeConfig {
            variant,
            teller: FortuneTellerConfig { whole_ms: artifact, ..FortuneTellerConfig::default() },
            // Per packet in both (see the module doc): the artifact's cadence, the paper's content.
            in_band: InBandReports::PerPacket {
                interval: Duration::from_millis(if artifact { 1 } else { 5 }),
            },
            ack_hold: AckHoldConfig { accumulate: artifact, ..AckHoldConfig::default() },
            log_limit: 2_000_000,
        }
    }

    /// Checks the settings a scenario can give: `Err("key: message")`, keys as in a scenario's
    /// `zhuge` table. The frame interval sets the Fortune Teller's window (5 of them in 1 ms
    /// slots, a ring allocated once): from one slot to [`MAX_FRAME_INTERVAL`] (a 0.1 fps video;
    /// beyond it the ring alone would take gigabytes). Intervals and holds are positive and at
    /// most an hour.
    pub fn validate(&self) -> Result<(), String> {
        let t = &self.teller;
        if t.slot == Duration::ZERO {
            return Err("slot: got \"0 s\", expected a positive duration".into());
        }
        if t.frame_interval < t.slot || t.frame_interval > MAX_FRAME_INTERVAL {
            return Err(format!(
                "frame_interval: got \"{}\", expected \"{}\" to \"{MAX_FRAME_INTERVAL}\"",
                t.frame_interval, t.slot
            ));
        }
        if t.window_frames == 0 || t.window_frames > 100 {
            return Err(format!("window_frames: got {}, expected 1 to 100", t.window_frames));
        }
        let (key, report) = match self.in_band {
            InBandReports::Sampled { delay } => ("report_interval", delay),
            InBandReports::PerPacket { interval } => ("report_interval", interval),
        };
        let hour = Duration::from_secs(3600);
        for (k, d, positive) in [
            (key, report, true),
            ("max_hold", self.ack_hold.max_hold, false),
            ("entry_cap", self.ack_hold.entry_cap, false),
            ("expiry", self.ack_hold.expiry, false),
            ("scale_window", self.ack_hold.scale_window, false),
            ("warmup", self.ack_hold.warmup, false),
        ] {
            if (positive && d == Duration::ZERO) || d > hour {
                let low = if positive { "above 0" } else { "at least 0" };
                return Err(format!("{k}: got \"{d}\", expected a duration {low} and at most \"{hour}\""));
            }
        }
        if let BurstRule::JoinAggregate { within } = t.burst_rule {
            if within > hour {
                return Err(format!(
                    "burst_rule: an aggregate span of \"{within}\", expected at most \"{hour}\""
                ));
            }
        }
        Ok(())
    }
}

/// The longest frame interval Zhuge takes (10 s: a 0.1 fps video; its window is then 50 000
/// slots).
pub const MAX_FRAME_INTERVAL: Duration = Duration::from_secs(10);

/// What the summary says of the predictions, kept as they are made whether or not the log is
/// (so a run that leaves the log out reports the same figures).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PredictionStats {
    /// Predictions logged (or that would have been: at most [`ZhugeConfig::log_limit`], as the
    /// log).
    pub count: u64,
    /// The sum of their [`PredictionRecord::abs_error_ms`], added in log order.
    pub abs_error_sum_ms: f64,
    /// How many were within 10 ms of the actual delay.
    pub within_10ms: u64,
}

impl PredictionStats {
    fn add(&mut self, r: &PredictionRecord) {
        let e = r.abs_error_ms();
        self.count += 1;
        self.abs_error_sum_ms += e;
        self.within_10ms += u64::from(e <= 10.0);
    }

    /// The mean absolute error in ms (`None` before the first prediction).
    pub fn mae_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.abs_error_sum_ms / self.count as f64)
    }

    /// The share within 10 ms (`None` before the first prediction).
    pub fn share_within_10ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.within_10ms as f64 / self.count as f64)
    }
}

/// A sampled packet waiting for its report (the artifact's `Sendback`).
#[derive(Clone, Copy, Debug)]
struct Sample {
    seq: u64,
    due: Time,
    /// [`Zhuge::arrived`] just after it arrived: the bytes that arrived at the queue after it
    /// are what that count has grown by since.
    arrived: u64,
}

#[derive(Clone, Debug, Default)]
struct InBand {
    format: InBandFormat,
    /// Per packet: sequence numbers from `first` with their predicted arrival (`None`: not seen
    /// or dropped).
    pending: VecDeque<Option<Time>>,
    first: u64,
    /// The next sequence number expected (packets are not reordered before the AP).
    next_seq: Option<u64>,
    /// Sampled: the packet waiting for its report.
    sample: Option<Sample>,
    /// The latest predicted arrival reported so far (predictions are kept in queue order).
    latest: Time,
    twcc: Option<TwccBuilder>,
    /// Scratch: the arrivals of a report in microseconds.
    arrivals_us: Vec<Option<i64>>,
}

#[derive(Clone, Debug, Default)]
struct OutOfBand {
    /// The previous data packet's predicted delay and bytes ahead.
    prev: Option<(Duration, Bytes)>,
    /// `(when, delay increase)`, oldest first.
    increases: VecDeque<(Time, Duration)>,
    /// `(when, token left)`, oldest first.
    tokens: VecDeque<(Time, Duration)>,
    /// When each history entry (increase or token) was added, over the last two windows.
    entries: VecDeque<Time>,
    /// How many of the first `entries` are known to be out of the last window (`t + expiry <=`
    /// the `now` of the latest [`OutOfBand::sample`], `older_at`): the split moves forward with
    /// time, so each ACK looks only at the entries that left the window since the one before.
    older: usize,
    older_at: Time,
    /// ACKs held: `(release, packet)`, in arrival order (release times never decrease).
    held: VecDeque<(Time, Packet)>,
    /// The previous ACK's arrival and release (`None` before the first ACK).
    last_ack: Option<(Time, Time)>,
}

// `repr(u8)`: a tag byte of its own (not a niche in the in-band state's fields), looked at
// twice per arrival.
#[derive(Clone, Debug)]
#[repr(u8)]
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
    /// The records kept ([`Zhuge::without_log`], [`Zhuge::with_log_sample`]); `stats` counts
    /// every one.
    log: PredictionLog,
    stats: PredictionStats,
    /// ACKs held over all flows (none: nothing to look for when asked for a timeout or a packet,
    /// which the driver does at every event of the AP's link).
    held: usize,
    next_report: Option<Time>,
    /// Built feedback waiting to be polled.
    out: VecDeque<BuiltFeedback>,
    /// A reusable encoding buffer.
    scratch: Vec<u8>,
    /// Reports' bytes handed back once read ([`Middlebox::recycle`]): the next reports are
    /// encoded into them (no allocation per report).
    spare: Vec<Vec<u8>>,
    /// The client feedback packets dropped (in-band flows).
    dropped_client_feedback: u64,
    /// Bytes of every packet that arrived at the queue so far (read as differences: see
    /// [`Sample::arrived`]).
    arrived: u64,
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
            log: PredictionLog::All(Vec::new()),
            stats: PredictionStats::default(),
            held: 0,
            next_report: None,
            out: VecDeque::new(),
            scratch: Vec::new(),
            spare: Vec::new(),
            dropped_client_feedback: 0,
            arrived: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ZhugeConfig {
        &self.cfg
    }

    /// The same Zhuge keeping no per-packet record of its predictions ([`Zhuge::predictions`]
    /// stays empty; [`Zhuge::prediction_stats`] and everything Zhuge does are the same): for a
    /// driver that will not read the log, which grows by a record per packet (40 B; a 300 s run
    /// at 60 Mbit/s logs 1.5 million).
    pub fn without_log(mut self) -> Zhuge {
        self.log = PredictionLog::Off;
        self
    }

    /// The same Zhuge keeping a uniform random sample of at most `size` of its predictions,
    /// drawn from `rng` (its own stream; see [`crate::prediction_log`]) instead of every one.
    pub fn with_log_sample(mut self, size: usize, rng: Rng) -> Zhuge {
        self.log = PredictionLog::sample(size, rng);
        self
    }

    /// The predictions logged so far, with the delays the packets had, in the order they were
    /// logged (empty [`Zhuge::without_log`]; a sample [`Zhuge::with_log_sample`]).
    pub fn predictions(&self) -> std::borrow::Cow<'_, [PredictionRecord]> {
        self.log.records()
    }

    /// The count and accuracy of the predictions logged so far (or that would have been, without
    /// the log), in the order they were logged.
    pub fn prediction_stats(&self) -> PredictionStats {
        self.stats
    }

    /// Client feedback packets dropped so far (their content is replaced by the AP's own).
    pub fn dropped_client_feedback(&self) -> u64 {
        self.dropped_client_feedback
    }

    fn backlog(queue: &QueueState) -> Bytes {
        // A packet in service counts as non-empty; its size is not needed to classify slots.
        Bytes(queue.bytes.0 + u64::from(queue.busy))
    }

    fn head_wait(now: Time, queue: &QueueState) -> Duration {
        queue.head_since.map_or(Duration::ZERO, |s| now - s)
    }

    /// Encodes feedback for `arrivals` (consecutive sequence numbers from `first`) into `scratch`.
    fn encode(scratch: &mut Vec<u8>, s: &mut InBand, first: u64, arrivals: &[Option<Time>], now: Time) {
        let us = |t: Time| (t.as_nanos() / 1_000) as i64;
        scratch.clear();
        match s.format {
            InBandFormat::TransportCc => {
                s.arrivals_us.clear();
                s.arrivals_us.extend(arrivals.iter().map(|a| a.map(us)));
                let builder = s.twcc.as_mut().expect("in-band flows have a builder");
                builder.encode_into(first as u16, &s.arrivals_us, scratch);
            }
            InBandFormat::Rfc8888 => {
                // Offsets count back from the report timestamp: the latest predicted arrival.
                let ts = arrivals.iter().flatten().max().copied().unwrap_or(now).max(now);
                let metrics = arrivals
                    .iter()
                    .map(|a| a.map_or(CcfbMetric::lost(), |a| CcfbMetric::received(us(ts) - us(a), 0)))
                    .collect();
                let rep = CcfbReport {
                    sender_ssrc: 0x5a48_5547,
                    blocks: vec![CcfbBlock { media_ssrc: 0, begin_seq: first as u16, metrics }],
                    report_timestamp: compact_ntp(us(ts)),
                };
                rep.encode(scratch).expect("a report of at most 65535 metrics encodes");
            }
        }
    }

    /// Writes the due in-band feedback: per-packet reports of every flow with predictions
    /// pending, or the reports of the samples due by `now`.
    fn build_reports(&mut self, now: Time, queue: &QueueState) {
        for i in 0..self.flows.len() {
            let FlowState::InBand(s) = &mut self.flows[i] else { continue };
            match self.cfg.in_band {
                InBandReports::PerPacket { .. } => {
                    if s.pending.is_empty() {
                        continue;
                    }
                    let first = s.first;
                    // Taken out and put back emptied: its space is reused report after report.
                    let mut pending = std::mem::take(&mut s.pending);
                    Self::encode(&mut self.scratch, s, first, pending.make_contiguous(), now);
                    s.first += pending.len() as u64;
                    pending.clear();
                    s.pending = pending;
                }
                InBandReports::Sampled { .. } => {
                    let Some(sample) = s.sample.filter(|x| x.due <= now) else { continue };
                    s.sample = None;
                    // The queue as if the sampled packet had just arrived: without what came after.
                    let behind = self.arrived - sample.arrived;
                    let ahead = Bytes(queue.bytes.0.saturating_sub(behind));
                    let p = self.teller.predict(now, ahead, Self::head_wait(now, queue));
                    Self::encode(&mut self.scratch, s, sample.seq, &[Some(now + p.total)], now);
                }
            }
            self.out.push_back(BuiltFeedback {
                flow: FlowId(i as u32),
                size: Bytes(IP_UDP_OVERHEAD + self.scratch.len() as u64),
                // The report's bytes leave; a handed-back buffer (cleared by `encode`) takes
                // their place.
                payload: FeedbackPayload::Rtcp(std::mem::replace(
                    &mut self.scratch,
                    self.spare.pop().unwrap_or_default(),
                )),
            });
        }
    }

    /// When the next in-band report is due.
    fn next_due(&self, now: Time) -> Option<Time> {
        match self.cfg.in_band {
            InBandReports::PerPacket { interval } => self
                .flows
                .iter()
                .any(|f| matches!(f, FlowState::InBand(s) if !s.pending.is_empty()))
                .then_some(now + interval),
            InBandReports::Sampled { .. } => self
                .flows
                .iter()
                .filter_map(|f| match f {
                    FlowState::InBand(s) => s.sample.map(|x| x.due),
                    _ => None,
                })
                .min(),
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
        while self.entries.front().is_some_and(|&t| t + cfg.scale_window <= now) {
            self.entries.pop_front();
            self.older = self.older.saturating_sub(1);
        }
    }

    /// A downlink data packet with predicted delay `total`, behind `ahead` bytes, arrived.
    fn on_data(&mut self, now: Time, total: Duration, ahead: Bytes, cfg: &AckHoldConfig) {
        if now < Time::ZERO + cfg.warmup {
            return;
        }
        self.expire(now, cfg);
        let prev = self.prev.replace((total, ahead));
        let Some((prev_total, prev_ahead)) = prev else { return };
        // The queue was and is empty: no change to signal.
        if ahead.0 == 0 && prev_ahead.0 == 0 {
            return;
        }
        if total >= prev_total {
            self.increases.push_back((now, (total - prev_total).min(cfg.entry_cap)));
        } else {
            self.tokens.push_back((now, (prev_total - total).min(cfg.entry_cap)));
        }
        self.entries.push_back(now);
    }

    /// A delay increase sampled from the history, less the tokens it uses up, scaled down when
    /// the last window had fewer entries than the one before; `None` with an empty history.
    fn sample(&mut self, now: Time, cfg: &AckHoldConfig, rng: &mut Rng) -> Option<Duration> {
        self.expire(now, cfg);
        if self.increases.is_empty() {
            return None;
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
        // Fewer entries in the last window than in the one before: the flow slowed down, and so
        // should the delay the ACKs signal.
        if now < self.older_at {
            // Time went back (never in a run): count again.
            self.older = 0;
        }
        self.older_at = now;
        while self.entries.get(self.older).is_some_and(|&t| t + cfg.expiry <= now) {
            self.older += 1;
        }
        let split = self.older;
        let (previous, current) = (split as u64, (self.entries.len() - split) as u64);
        if previous > current && previous > 0 {
            d = Duration(d.as_nanos() * current / previous);
        }
        Some(d.min(cfg.entry_cap))
    }

    /// When an ACK arriving now is released.
    fn release(&mut self, now: Time, cfg: &AckHoldConfig, rng: &mut Rng) -> Time {
        let Some((last_arrival, last_release)) = self.last_ack else {
            // The artifact lets the first ACK through and starts from it.
            self.last_ack = Some((now, now));
            return now;
        };
        let sample = self.sample(now, cfg, rng);
        let release = if cfg.accumulate {
            let still_held = now <= last_release;
            let at = match (still_held, sample) {
                (false, s) => now + s.unwrap_or(Duration::ZERO),
                // The previous ACK's hold plus this one's increase.
                (true, Some(d)) => now + (last_release - last_arrival) + d,
                // Nothing sampled: it leaves with the previous one.
                (true, None) => last_release,
            };
            at.min(now + cfg.max_hold)
        } else {
            now + sample.unwrap_or(Duration::ZERO).min(cfg.max_hold)
        };
        // Never before the ACK before it: ACKs stay in order (the artifact's rule keeps this by
        // construction; the paper's needs it).
        let release = release.max(last_release);
        self.last_ack = Some((now, release));
        release
    }
}

impl Middlebox for Zhuge {
    fn name(&self) -> &'static str {
        "zhuge"
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn hears_dequeues(&self) -> bool {
        false
    }

    fn on_enqueue(&mut self, now: Time, pkt: &mut Packet, queue: &QueueState) -> Verdict {
        let head_wait = Self::head_wait(now, queue);
        let data = pkt.kind == PacketKind::Data;
        let per_packet = matches!(self.cfg.in_band, InBandReports::PerPacket { .. });
        // Every arrival goes behind the in-band samples waiting for their report (counted once
        // for all of them, rather than added to each).
        self.arrived += pkt.size as u64;
        // The predictions the artifact makes (and remembers) at arrival; others are only logged.
        let acts = data
            && match self.flows.get(pkt.flow.index()) {
                Some(FlowState::OutOfBand(_)) => true,
                Some(FlowState::InBand(_)) => per_packet,
                _ => false,
            };
        // (The queue's length before the arrival, then the prediction, then its length after.)
        let after = Bytes(Self::backlog(queue).0 + pkt.size as u64);
        let p = self.teller.on_arrival(now, queue.bytes, head_wait, after, acts);
        if self.stats.count < self.cfg.log_limit as u64 {
            self.in_queue.push_back((pkt.id, now, p.total));
        }
        // Feedback of a flow that sends the other way shares the queue but is not data.
        if !data {
            return Verdict::Pass;
        }
        match self.flows.get_mut(pkt.flow.index()) {
            Some(FlowState::InBand(s)) => match self.cfg.in_band {
                InBandReports::PerPacket { interval } => {
                    let next = *s.next_seq.get_or_insert(pkt.seq);
                    if s.pending.is_empty() {
                        s.first = s.first.max(next);
                    }
                    // Sequence numbers the AP never saw (lost upstream) are reported lost.
                    for _ in next..pkt.seq {
                        s.pending.push_back(None);
                    }
                    if pkt.seq >= next {
                        // A FIFO delivers in order: never report a packet arriving before the one
                        // queued ahead of it (an outage's pessimistic predictions would otherwise
                        // be followed by earlier ones, and arrival times would run backwards).
                        s.latest = s.latest.max(now + p.total);
                        s.pending.push_back(Some(s.latest));
                        s.next_seq = Some(pkt.seq + 1);
                    }
                    if self.next_report.is_none() {
                        self.next_report = Some(now + interval);
                    }
                }
                InBandReports::Sampled { delay } => {
                    if s.sample.is_none() {
                        s.sample = Some(Sample { seq: pkt.seq, due: now + delay, arrived: self.arrived });
                        self.next_report = Some(self.next_report.map_or(now + delay, |t| t.min(now + delay)));
                    }
                }
            },
            // The history only sets holds, which copies never get (see `AckHoldConfig::copy`).
            Some(FlowState::OutOfBand(s)) if !self.cfg.ack_hold.copy => {
                s.on_data(now, p.total, queue.bytes, &self.cfg.ack_hold)
            }
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
                let r = PredictionRecord {
                    flow: pkt.flow,
                    seq: pkt.seq,
                    arrival,
                    predicted,
                    actual: now - arrival,
                };
                self.stats.add(&r);
                self.log.record(r);
                break;
            }
        }
    }

    /// (The first thing `on_reverse` does.)
    fn passes_non_cc_feedback(&self) -> bool {
        true
    }

    /// The teller and the reports read the queue's bytes and its head of line only.
    fn reads_queue_rate_and_packets(&self) -> bool {
        false
    }

    fn on_reverse(&mut self, now: Time, pkt: &mut Packet) -> Verdict {
        // Feedback that is not congestion control (a NACK) passes unchanged, in either mode.
        if pkt.kind != PacketKind::Feedback || pkt.app & lowlat_core::APP_NON_CC_FEEDBACK != 0 {
            return Verdict::Pass;
        }
        match self.flows.get_mut(pkt.flow.index()) {
            Some(FlowState::InBand(_)) => {
                // The AP speaks for the receiver: its own transport-wide feedback replaces the
                // client's (the receiver's other RTCP, NACKs, passed above).
                self.dropped_client_feedback += 1;
                Verdict::Drop
            }
            // The artifact holds a copy, which is not sent (see `AckHoldConfig::copy`): the
            // original passes, and the copy's hold would be read by nothing.
            Some(FlowState::OutOfBand(_)) if self.cfg.ack_hold.copy => Verdict::Pass,
            Some(FlowState::OutOfBand(s)) => {
                let release = s.release(now, &self.cfg.ack_hold, &mut self.rng);
                if release <= now && s.held.is_empty() {
                    return Verdict::Pass;
                }
                s.held.push_back((release, *pkt));
                self.held += 1;
                Verdict::Consume
            }
            _ => Verdict::Pass,
        }
    }

    fn handle_timeout(&mut self, now: Time, queue: &QueueState) {
        if self.next_report.is_some_and(|t| t <= now) {
            self.build_reports(now, queue);
            self.next_report = self.next_due(now);
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.held == 0 {
            return self.next_report;
        }
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
        if self.held == 0 {
            return None;
        }
        for f in &mut self.flows {
            if let FlowState::OutOfBand(s) = f {
                if s.held.front().is_some_and(|h| h.0 <= now) {
                    self.held -= 1;
                    return s.held.pop_front().map(|h| (Direction::Reverse, h.1));
                }
            }
        }
        None
    }

    fn poll_feedback(&mut self, _now: Time) -> Option<BuiltFeedback> {
        self.out.pop_front()
    }

    fn recycle(&mut self, payload: FeedbackPayload) {
        // (Some reports in flight at most: a lost one's buffer is not handed back.)
        if let FeedbackPayload::Rtcp(bytes) = payload {
            if self.spare.len() < 64 {
                self.spare.push(bytes);
            }
        }
    }

    /// Reports are built when it is woken, and ACKs held when shown them: between those, after
    /// the driver has taken them, nothing (most of the driver's askings, one per packet).
    fn holds_output(&self) -> bool {
        self.held > 0 || !self.out.is_empty()
    }

    /// `on_transmitted` feeds the Fortune Teller and the prediction log only; ACK holding and the
    /// feedback built read neither, and the teller is read only from `on_enqueue` and
    /// `handle_timeout` (test `hearing_of_transmissions_late_changes_nothing`).
    fn hears_transmissions_late(&self) -> bool {
        true
    }

    /// With no in-band flow (no reports, no timeouts, no client feedback dropped) and the
    /// artifact's copies (no ACK held: every reverse packet passes untouched), Zhuge only
    /// predicts and logs at its queue (test
    /// `a_copying_zhuge_without_in_band_flows_only_watches`).
    fn only_watches(&self) -> bool {
        self.flows.iter().all(|f| match f {
            FlowState::InBand(_) => false,
            FlowState::OutOfBand(_) => self.cfg.ack_hold.copy,
            FlowState::Pass => true,
        })
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
        let cfg = ZhugeConfig::for_variant(ZhugeVariant::Paper);
        let mut z = Zhuge::new(cfg, &[FlowRole::InBand(format)], stream(1, "z"));
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
    fn the_artifacts_in_band_schedule_reports_one_sampled_packet_per_millisecond() {
        let mut cfg = ZhugeConfig {
            in_band: InBandReports::Sampled { delay: Duration::from_millis(1) },
            ..ZhugeConfig::default()
        };
        // Every byte ahead counts, to the nanosecond: what arrived after the sample shows.
        cfg.teller.burst_rule = crate::BurstRule::None;
        cfg.teller.whole_ms = false;
        let mut z = Zhuge::new(cfg, &[FlowRole::InBand(InBandFormat::TransportCc)], stream(3, "z"));
        // A packet every 0.25 ms for 10 ms; the queue holds 1200 B per packet not yet sent, and
        // the link sends one every 0.5 ms (so it grows). Reports are handled when due.
        let mut reports: Vec<(Time, u16, i64, Time)> = Vec::new();
        let mut sampled_at: Vec<(u64, Time)> = Vec::new();
        let mut sent = 0u64;
        for i in 0..40u64 {
            let now = Time(i * 250_000);
            while let Some(due) = z.poll_timeout().filter(|t| *t <= now) {
                let q = queue((i - sent) * 1200);
                // What the AP should predict: the queue minus what arrived after the sample.
                let behind = (i - 1 - sampled_at.last().unwrap().0) * 1200;
                let want = z
                    .teller
                    .clone()
                    .predict(due, Bytes(q.bytes.0.saturating_sub(behind)), Duration::ZERO)
                    .total;
                z.handle_timeout(due, &q);
                let fb = z.poll_feedback(due).expect("a report when a sample is due");
                let FeedbackPayload::Rtcp(bytes) = fb.payload else { panic!("RTCP expected") };
                let arrivals = TransportCcFeedback::decode(&bytes).unwrap().arrivals_us();
                assert_eq!(arrivals.len(), 1, "one packet per report");
                let (seq, at) = arrivals[0];
                reports.push((due, seq, at.unwrap(), due + want));
            }
            let mut p = data(i);
            if z.flows.iter().all(|f| matches!(f, FlowState::InBand(s) if s.sample.is_none())) {
                sampled_at.push((i, now));
            }
            z.on_enqueue(now, &mut p, &queue((i - sent) * 1200));
            if i % 2 == 1 {
                z.on_transmitted(now, &data(sent), &queue((i - sent) * 1200));
                sent += 1;
            }
        }
        // Samples at 0, 1, 2, ... ms (the first packet after each report), each reported 1 ms on.
        assert_eq!(reports.len(), 9);
        for (k, (due, seq, at_us, want)) in reports.iter().enumerate() {
            let (sample_seq, sample_t) = sampled_at[k];
            assert_eq!(*seq as u64, sample_seq);
            assert_eq!(*due, sample_t + Duration::from_millis(1));
            // Transport-cc carries 250 us ticks.
            let want_us = (want.as_nanos() / 1_000) as i64;
            assert!((at_us - want_us).abs() <= 125, "report {k}: {at_us} us, want {want_us} us");
        }
        assert_eq!(sampled_at[1].0, 4, "the packet at 1 ms, after the first report");
    }

    #[test]
    fn the_running_figures_are_the_logs_and_stay_without_it() {
        let run = |z: Zhuge| {
            let mut z = z;
            // A queue that grows then drains: predictions off by varying amounts, some over 10 ms.
            for i in 0..200u64 {
                let q = queue(if i < 100 { i * 3_000 } else { (200 - i) * 3_000 });
                z.on_enqueue(Time::from_millis(i), &mut data(i), &q);
                z.on_transmitted(Time::from_millis(i) + Duration::from_micros(300 * (i % 70)), &data(i), &q);
            }
            z
        };
        let cfg = ZhugeConfig { log_limit: 150, ..ZhugeConfig::default() };
        let roles = [FlowRole::InBand(InBandFormat::TransportCc)];
        let logged = run(Zhuge::new(cfg.clone(), &roles, stream(5, "z")));
        let bare = run(Zhuge::new(cfg, &roles, stream(5, "z")).without_log());
        let log = logged.predictions();
        assert_eq!(log.len(), 150, "the log stops at its limit");
        let stats = logged.prediction_stats();
        assert_eq!(stats.count, 150);
        let mae = log.iter().map(PredictionRecord::abs_error_ms).sum::<f64>() / log.len() as f64;
        assert_eq!(stats.mae_ms(), Some(mae));
        let within = log.iter().filter(|r| r.abs_error_ms() <= 10.0).count();
        assert!(within > 0 && within < log.len(), "both kinds present: {within}");
        assert_eq!(stats.share_within_10ms(), Some(within as f64 / log.len() as f64));
        assert!(bare.predictions().is_empty());
        assert_eq!(bare.prediction_stats(), stats);
    }

    #[test]
    fn hearing_of_transmissions_late_changes_nothing() {
        // An in-band flow and an out-of-band one whose ACKs are held, in each report schedule: one
        // AP hears of each transmission's end at once, the other only before its next enqueue,
        // drop or timeout (or at the end), with the same finish times and queue states. Every
        // verdict, timeout, released ACK, report and prediction must be the same.
        for in_band in [
            InBandReports::PerPacket { interval: Duration::from_millis(1) },
            InBandReports::Sampled { delay: Duration::from_millis(1) },
        ] {
            let mut cfg = ZhugeConfig { in_band, ..ZhugeConfig::default() };
            cfg.ack_hold.warmup = Duration::ZERO;
            let roles = [FlowRole::InBand(InBandFormat::TransportCc), FlowRole::OutOfBand];
            let mut now_ap = Zhuge::new(cfg.clone(), &roles, stream(7, "z"));
            let mut late_ap = Zhuge::new(cfg, &roles, stream(7, "z"));
            assert!(late_ap.hears_transmissions_late());
            let mut late: Vec<(Time, Packet, QueueState)> = Vec::new();
            let mut out: [Vec<String>; 2] = [Vec::new(), Vec::new()];
            let mut next = lowlat_core::rng::below(1, "late-ap-test");
            // What the queue calls: the late AP first hears of the transmissions that ended.
            let flush = |z: &mut Zhuge, late: &mut Vec<(Time, Packet, QueueState)>| {
                for (at, p, q) in late.drain(..) {
                    z.on_transmitted(at, &p, &q);
                }
            };
            let (mut queued, mut sent, mut t) = (0u64, 0u64, Time::ZERO);
            let mut seq = [0u64; 2];
            for _ in 0..4_000 {
                t += Duration::from_micros(50 + next(400));
                let q = QueueState {
                    bytes: Bytes(1200 * queued.saturating_sub(sent + 1)),
                    packets: 0,
                    rate: Bitrate::mbps(10),
                    busy: queued > sent,
                    head_since: (queued > sent).then_some(t - Duration::from_micros(100)),
                };
                let event = next(4);
                match event {
                    0 | 1 => {
                        let f = next(2) as usize;
                        let mut p = Packet::new(queued, FlowId(f as u32), Bytes(1200), seq[f], t);
                        seq[f] += 1;
                        let mut p2 = p;
                        flush(&mut late_ap, &mut late);
                        let v = (now_ap.on_enqueue(t, &mut p, &q), late_ap.on_enqueue(t, &mut p2, &q));
                        out[0].push(format!("enq {:?}", v.0));
                        out[1].push(format!("enq {:?}", v.1));
                        if next(10) == 0 {
                            flush(&mut late_ap, &mut late);
                            now_ap.on_drop(t, &p, &q);
                            late_ap.on_drop(t, &p2, &q);
                        } else {
                            queued += 1;
                        }
                    }
                    2 if sent < queued => {
                        let p = Packet::new(sent, FlowId(0), Bytes(1200), 0, t);
                        now_ap.on_transmitted(t, &p, &q);
                        late.push((t, p, q));
                        sent += 1;
                    }
                    _ => {
                        let mut ack = Packet::new(1 << 40, FlowId(1), Bytes(60), 0, t);
                        ack.kind = PacketKind::Feedback;
                        let mut ack2 = ack;
                        out[0].push(format!("rev {:?}", now_ap.on_reverse(t, &mut ack)));
                        out[1].push(format!("rev {:?}", late_ap.on_reverse(t, &mut ack2)));
                    }
                }
                for (i, z) in [&mut now_ap, &mut late_ap].into_iter().enumerate() {
                    if z.poll_timeout().is_some_and(|d| d <= t) {
                        if i == 1 {
                            flush(z, &mut late);
                        }
                        z.handle_timeout(t, &q);
                    }
                    out[i].push(format!("timeout {:?}", z.poll_timeout()));
                    while let Some((dir, p)) = z.poll_inject(t) {
                        out[i].push(format!("inject {dir:?} {}", p.seq));
                    }
                    while let Some(fb) = z.poll_feedback(t) {
                        out[i].push(format!("feedback {} {:?}", fb.flow.0, fb.payload));
                    }
                }
            }
            flush(&mut late_ap, &mut late);
            assert_eq!(out[0], out[1]);
            assert!(out[0].iter().any(|l| l.starts_with("feedback")), "reports were built");
            assert!(out[0].iter().any(|l| l.starts_with("inject")), "ACKs were held and released");
            assert_eq!(now_ap.predictions(), late_ap.predictions());
            assert!(now_ap.predictions().len() > 1_000);
        }
    }

    fn out_of_band(accumulate: bool) -> (OutOfBand, AckHoldConfig, Rng) {
        let cfg = AckHoldConfig { accumulate, ..AckHoldConfig::default() };
        // One previous ACK, long released; a history of a single 4 ms increase (so the sample is
        // known), added just before the burst.
        let mut s = OutOfBand {
            last_ack: Some((Time::from_millis(990), Time::from_millis(990))),
            ..OutOfBand::default()
        };
        s.increases.push_back((Time::from_millis(999), Duration::from_millis(4)));
        s.entries.push_back(Time::from_millis(999));
        (s, cfg, stream(4, "z"))
    }

    #[test]
    fn the_artifacts_ack_holding_rule_on_a_hand_made_burst() {
        let t = |ms: u64| Time::from_millis(1000 + ms);
        let (mut s, cfg, mut rng) = out_of_band(true);
        let releases: Vec<Time> = [0, 1, 2, 3, 20].iter().map(|&a| s.release(t(a), &cfg, &mut rng)).collect();
        // 0 ms: the previous ACK is gone: held for the sample, 4 ms.
        // 1 ms: the previous is still held (4 ms): 1 + 4 + 4 = 9.
        // 2 ms: previous hold 8: 2 + 8 + 4 = 14, capped at 2 + 10 = 12.
        // 3 ms: previous hold 10: capped at 13.  20 ms: a new burst: 24.
        assert_eq!(releases, vec![t(4), t(9), t(12), t(13), t(24)]);
        // The paper's rule: the sample alone, no earlier than the previous ACK.
        let (mut s, cfg, mut rng) = out_of_band(false);
        let releases: Vec<Time> = [0, 1, 2, 3, 20].iter().map(|&a| s.release(t(a), &cfg, &mut rng)).collect();
        assert_eq!(releases, vec![t(4), t(5), t(6), t(7), t(24)]);
        // With an empty history an ACK leaves with the previous one (artifact) or at once.
        for (acc, want) in [(true, t(4)), (false, t(1))] {
            let (mut s, cfg, mut rng) = out_of_band(acc);
            assert_eq!(s.release(t(0), &cfg, &mut rng), t(4));
            s.increases.clear();
            assert_eq!(s.release(t(1), &cfg, &mut rng), want.max(t(4)));
        }
        // Tokens cancel the sample, oldest first: 4 ms - 3 ms = 1 ms.
        let (mut s, cfg, mut rng) = out_of_band(true);
        s.tokens.push_back((Time::from_millis(999), Duration::from_millis(3)));
        s.entries.push_back(Time::from_millis(999));
        assert_eq!(s.release(t(0), &cfg, &mut rng), t(1));
        assert!(s.tokens.is_empty());
    }

    #[test]
    fn the_history_skips_the_warmup_and_an_empty_queue_twice() {
        let cfg = AckHoldConfig::default();
        let mut s = OutOfBand::default();
        let t = |ms: u64| Time::from_millis(ms);
        s.on_data(t(2_000), Duration::from_millis(5), Bytes(3_000), &cfg);
        assert!(s.prev.is_none(), "nothing before 3 s");
        s.on_data(t(3_000), Duration::from_millis(1), Bytes(0), &cfg);
        s.on_data(t(3_001), Duration::from_millis(2), Bytes(0), &cfg);
        assert!(s.increases.is_empty() && s.tokens.is_empty(), "empty then empty: no entry");
        s.on_data(t(3_002), Duration::from_millis(6), Bytes(4_000), &cfg);
        s.on_data(t(3_003), Duration::from_millis(3), Bytes(2_000), &cfg);
        assert_eq!(s.increases.iter().map(|e| e.1).collect::<Vec<_>>(), vec![Duration::from_millis(4)]);
        assert_eq!(s.tokens.iter().map(|e| e.1).collect::<Vec<_>>(), vec![Duration::from_millis(3)]);
        assert_eq!(s.entries.len(), 2);
    }

    #[test]
    fn an_ack_is_held_at_most_the_cap_and_never_before_the_previous_one() {
        let mut cfg = ZhugeConfig::default();
        cfg.ack_hold.warmup = Duration::ZERO;
        let mut z = Zhuge::new(cfg, &[FlowRole::OutOfBand], stream(2, "z"));
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

    #[test]
    fn with_the_artifacts_copy_every_ack_passes_and_nothing_waits() {
        let mut cfg = ZhugeConfig::default();
        cfg.ack_hold.warmup = Duration::ZERO;
        let run = |copy: bool| {
            let mut cfg = cfg.clone();
            cfg.ack_hold.copy = copy;
            let mut z = Zhuge::new(cfg, &[FlowRole::OutOfBand], stream(2, "z"));
            for i in 0..20u64 {
                let mut p = data(i);
                z.on_enqueue(Time::from_millis(i), &mut p, &queue(i * 5_000));
            }
            let mut verdicts = Vec::new();
            for i in 0..10u64 {
                let now = Time::from_millis(20) + Duration::from_micros(100 * i);
                let mut ack = data(100 + i);
                ack.kind = PacketKind::Feedback;
                verdicts.push(z.on_reverse(now, &mut ack));
            }
            (verdicts, z.poll_timeout())
        };
        let (held, _) = run(false);
        let (copied, timeout) = run(true);
        assert!(held.contains(&Verdict::Consume), "the ACKs themselves are held");
        assert!(copied.iter().all(|v| *v == Verdict::Pass), "the originals pass: {copied:?}");
        assert_eq!(timeout, None, "nothing waits in the AP");
    }

    #[test]
    fn a_copying_zhuge_without_in_band_flows_only_watches() {
        let mut cfg = ZhugeConfig::default();
        cfg.ack_hold.warmup = Duration::ZERO;
        let roles = [FlowRole::OutOfBand, FlowRole::Pass];
        let with = |copy: bool, roles: &[FlowRole]| {
            let mut cfg = cfg.clone();
            cfg.ack_hold.copy = copy;
            Zhuge::new(cfg, roles, stream(3, "z"))
        };
        assert!(!with(false, &roles).only_watches(), "it holds ACKs");
        assert!(!with(true, &[FlowRole::InBand(InBandFormat::TransportCc)]).only_watches());
        // One AP is shown every ACK, the other none: the same predictions, and nothing else.
        let (mut shown, mut unseen) = (with(true, &roles), with(true, &roles));
        assert!(shown.only_watches() && unseen.only_watches());
        let mut next = lowlat_core::rng::below(2, "only-watches-test");
        let mut t = Time::ZERO;
        for i in 0..2_000u64 {
            t += Duration::from_micros(50 + next(400));
            let q = queue(1200 * next(40));
            let sent = t + Duration::from_micros(next(300));
            let mut p = data(i);
            p.flow = FlowId((i % 3 == 0) as u32);
            for z in [&mut shown, &mut unseen] {
                let mut arriving = p;
                assert_eq!(z.on_enqueue(t, &mut arriving, &q), Verdict::Pass);
                z.on_transmitted(sent, &p, &q);
            }
            if i % 2 == 0 {
                let mut ack = data(10_000 + i);
                ack.kind = PacketKind::Feedback;
                ack.flow = FlowId((i % 4 == 0) as u32);
                assert_eq!(shown.on_reverse(t, &mut ack), Verdict::Pass);
            }
            for z in [&mut shown, &mut unseen] {
                z.handle_timeout(t, &q);
                assert_eq!(z.poll_timeout(), None);
                assert!(z.poll_inject(t).is_none() && z.poll_feedback(t).is_none());
            }
        }
        assert!(shown.prediction_stats().count > 0);
        assert_eq!(shown.prediction_stats(), unseen.prediction_stats());
        assert_eq!(shown.predictions(), unseen.predictions());
        assert_eq!(shown.dropped_client_feedback(), 0);
    }
}
