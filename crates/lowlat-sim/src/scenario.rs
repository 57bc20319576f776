//! Scenarios as data: the TOML format, its validation, and the validated [`Scenario`].
//!
//! A scenario file is read in two steps. First it is deserialised into the `*Spec` structs below
//! (unknown keys are errors; every quantity is a string with a unit, `"50 ms"`, `"10 Mbit/s"`,
//! `"1500 B"`). Then [`Scenario::from_spec`] checks what types cannot (positive rates, flows that
//! stop after they start, trace files that load) and builds the network configuration. Every error
//! is one line naming the file, the key, the value and what was expected.
//!
//! The format is documented for users in `docs/scenario-format.md`.

use lowlat_assist::{
    BurstRule, CapacitySource, InBandReports, SconeConfig, SconeMode, ZhugeConfig, ZhugeVariant,
};
use lowlat_core::{Bitrate, Bytes, Duration, Ecn, ParseUnitError, Time};
use lowlat_media::receiver::{FeedbackFormat, FeedbackSchedule};
use lowlat_media::source::{Codec, FrameSizeTrace, VideoSourceConfig};
use lowlat_net::capacity::{Capacity, RateSchedule};
use lowlat_net::link::LinkConfig;
use lowlat_net::loss::LossModel;
use lowlat_net::queue::{CoDelConfig, L4sConfig, QueueConfig, QueueLimit};
use lowlat_net::trace::{self, RateTraceOptions, TraceWarning};
use lowlat_net::wifi::WifiConfig;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A scenario that could not be read: one line, naming the file, the key and what was expected.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{file}: {}{message}", if key.is_empty() { String::new() } else { format!("{key}: ") })]
pub struct ScenarioError {
    /// The scenario's source (file path or a label such as `<dict>`).
    pub file: String,
    /// The key path (`flows[0].rate`), empty for whole-file problems.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl ScenarioError {
    fn new(file: &str, key: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: file.to_string(), key: key.into(), message: message.into() }
    }
}

/// A quantity with a unit, read from a string such as `"50 ms"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unit<T>(pub T);

impl<'de, T: FromStr<Err = ParseUnitError>> Deserialize<'de> for Unit<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<T: FromStr<Err = ParseUnitError>> Visitor<'_> for V<T> {
            type Value = Unit<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                // The parser's own wording of what it expects, e.g. `a bitrate such as "10 Mbit/s"`.
                let expected = T::from_str("").err().map(|e| e.expected).unwrap_or("a quantity with a unit");
                write!(f, "{expected} (a string with a unit)")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Unit<T>, E> {
                T::from_str(s).map(Unit).map_err(|e| E::custom(e.to_string()))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

type D = Unit<Duration>;
type R = Unit<Bitrate>;
type B = Unit<Bytes>;

/// The top level of a scenario file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// Short name (defaults to the file name).
    pub name: Option<String>,
    /// One sentence for `lowlat scenarios`.
    pub description: Option<String>,
    /// Simulated time to run.
    pub duration: D,
    /// The scenario seed; each component derives its own stream from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Width of the time-series bins (RFC 8868: 200 ms).
    pub bin: Option<D>,
    /// The forward bottleneck.
    pub bottleneck: LinkSpec,
    /// The reverse bottleneck (default: the forward one's rate and delay, no loss, no jitter).
    pub reverse: Option<LinkSpec>,
    /// The flows.
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
}

fn default_seed() -> u64 {
    1
}

/// A link: exactly one of `rate`, `schedule`, `trace`; the rest optional.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Constant capacity.
    pub rate: Option<R>,
    /// Piecewise-constant capacity: `[{ at = "0 s", rate = "1 Mbit/s" }, ...]`.
    pub schedule: Option<Vec<SchedulePoint>>,
    /// Trace file (relative to the scenario file): mahimahi or two-column `<s> <Mbit/s>`.
    pub trace: Option<String>,
    /// `"auto"` (default), `"mahimahi"` or `"rate"`.
    pub trace_format: Option<String>,
    /// Rate traces: replay one line per this step, ignoring the times (the Zhuge artifact: 200 ms);
    /// default: each line at its own time, relative to the first line's.
    pub trace_step: Option<D>,
    /// Rate traces: multiply every rate by this (default 1).
    pub trace_scale: Option<f64>,
    /// Repeat the trace when the run is longer (default true, as mahimahi does).
    pub trace_loop: Option<bool>,
    /// One-way propagation delay (default 0).
    pub delay: Option<D>,
    /// Standard deviation of the no-reordering jitter (default 0).
    pub jitter: Option<D>,
    /// Random loss (default none).
    pub loss: Option<LossSpec>,
    /// The queue (default drop-tail, 300 ms).
    pub queue: Option<QueueSpec>,
    /// Network assistance at this link's queue: `"none"` (default), `"zhuge"`, `"fastack"`,
    /// `"scone-rtc"` (SCONE-PRO capacity + queue signals) or `"scone"` (the standard SCONE
    /// packet's throughput advice).
    pub assist: Option<String>,
    /// Zhuge's settings (with `assist = "zhuge"`).
    pub zhuge: Option<ZhugeSpec>,
    /// SCONE-PRO's settings (with `assist = "scone-rtc"` or `"scone"`).
    pub scone: Option<SconeSpec>,
    /// Serve the capacity as a Wi-Fi access point does: aggregates at random transmit
    /// opportunities (`wifi = {}` for the defaults).
    pub wifi: Option<WifiSpec>,
}

/// A Wi-Fi downlink's channel access (see `lowlat_net::wifi`); every key optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WifiSpec {
    /// Shortest gap between transmit opportunities (default 1 ms).
    pub access_min: Option<D>,
    /// Longest gap (default 4 ms).
    pub access_max: Option<D>,
    /// Probability that an opportunity is followed by an outage (default 0.002).
    pub outage_probability: Option<f64>,
    /// Mean outage (default 20 ms).
    pub outage_mean: Option<D>,
    /// Most bytes per opportunity (default 65535 B).
    pub max_aggregate: Option<B>,
}

/// Zhuge's settings; every key optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZhugeSpec {
    /// `"artifact"` (the public ns-3 code the paper's evaluation ran, default) or `"paper"`.
    pub variant: Option<String>,
    /// In-band reports: `"per-packet"` (default) or `"sampled"` (one packet per report, the
    /// artifact's own schedule).
    pub in_band: Option<String>,
    /// Sampled: how long after the sampled packet its report leaves (1 ms); per packet: the report
    /// interval (5 ms).
    pub report_interval: Option<D>,
    /// ACK holding: `"accumulate"` (the artifact's: add the previous ACK's hold while it is held)
    /// or `"in-order"` (the paper's); default by variant.
    pub ack_hold: Option<String>,
    /// Whole-millisecond arithmetic as the artifact's (default: true for the artifact variant).
    pub whole_ms: Option<bool>,
    /// The video's frame interval, which sets the Fortune Teller's window (default 40 ms).
    pub frame_interval: Option<D>,
    /// `"join-aggregate"` (the public code's, default), `"max-burst"` (the talk's) or `"none"`.
    pub burst_rule: Option<String>,
    /// The talk's rule: bytes one transmission opportunity carries (default 65535 B).
    pub max_burst: Option<B>,
    /// Count the head-of-line wait (default: true on a Wi-Fi link, false point to point).
    pub head_of_line: Option<bool>,
    /// Longest an ACK is held (default 10 ms).
    pub max_hold: Option<D>,
}

/// SCONE-PRO's settings; every key optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SconeSpec {
    /// RTC mode: how often the AP signals each media sender (default 20 ms).
    pub period: Option<D>,
    /// `"oracle"` (the link's configured rate, default) or `"measured"` (its dequeue rate).
    pub capacity: Option<String>,
    /// Measured capacity: the estimate's window (default 200 ms).
    pub window: Option<D>,
    /// Standard mode: how often a sender's SCONE packet passes (default 20 s).
    pub refresh: Option<D>,
    /// Standard mode: a policy ceiling as a SCONE rate signal, 0-126 (127, the default: none).
    pub policy_signal: Option<i64>,
}

/// One step of a capacity schedule.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulePoint {
    /// From when.
    pub at: D,
    /// The capacity from then on.
    pub rate: R,
}

/// Random loss.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "kebab-case")]
pub enum LossSpec {
    /// No random loss.
    None,
    /// Independent loss with probability `p`.
    Bernoulli {
        /// Loss probability in [0, 1].
        p: f64,
    },
    /// Two-state Markov loss, P(next | current).
    GilbertElliott {
        /// P(bad | good).
        p_good_to_bad: f64,
        /// P(good | bad).
        p_bad_to_good: f64,
        /// Loss probability in the good state (default 0).
        #[serde(default)]
        loss_in_good: f64,
        /// Loss probability in the bad state (default 1).
        #[serde(default = "one")]
        loss_in_bad: f64,
    },
}

fn one() -> f64 {
    1.0
}

/// A queue.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// `"droptail"`, `"codel"` or `"l4s"` (marks ECT(1) packets above a sojourn threshold).
    pub kind: String,
    /// `"300 ms"` (time at the current rate), `"64 kB"` (bytes), `"100 packets"`, or `"unlimited"`.
    pub limit: Option<String>,
    /// CoDel target (default 5 ms).
    pub target: Option<D>,
    /// CoDel interval (default 100 ms).
    pub interval: Option<D>,
    /// CoDel: mark ECN-capable packets CE instead of dropping them (default false); an `l4s`
    /// queue always marks; a drop-tail queue cannot.
    pub ecn: Option<bool>,
    /// L4S: sojourn time from which ECT(1) packets are marked (default 1 ms).
    pub threshold: Option<D>,
    /// L4S: sojourn time where the marking ramp reaches 1 (default: `threshold`, a step).
    pub max_threshold: Option<D>,
}

/// An access link between a host and the bottleneck's router.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    /// Capacity (default 1 Gbit/s).
    pub rate: Option<R>,
    /// One-way delay (default 0).
    pub delay: Option<D>,
}

/// A flow: a source at a sender, a sink at a receiver.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Unique name.
    pub id: String,
    /// `"cbr"`, `"poisson"`, `"rtp-video"`, `"bulk"` (an ack-clocked transfer) or `"web"` (short
    /// on/off downloads, RMCAT 5.7).
    pub kind: String,
    /// Bulk: payload bytes to deliver (default: unbounded).
    pub size: Option<B>,
    /// Web: number of on/off sources (default 10, RFC 8867 §5.7).
    pub sources: Option<u32>,
    /// Web: sources that start with a download; the others start idle (default 2).
    pub sources_on: Option<u32>,
    /// Web: mean of the exponential idle time between downloads (default 10 s).
    pub idle_mean: Option<D>,
    /// Web: smallest download (default 30 kB; draft-03 of the test cases used 100 kB).
    pub size_min: Option<B>,
    /// Web: largest download (default 50 kB; draft-03: 1 MB).
    pub size_max: Option<B>,
    /// Mean sending rate (cbr, poisson); start rate of a video flow (default: its rmin), or the
    /// rate of the `fixed` controller.
    pub rate: Option<R>,
    /// Packet size on the wire (default 1200 B); for video, the largest RTP payload.
    pub packet_size: Option<B>,
    /// Video: the congestion controller: `"gcc"`, `"nada"` (default), `"scream"` (v1, RFC 8298),
    /// `"scream2"` (v2), `"fixed"`, `"scone-pro"` (rates from the AP's SCONE-PRO signals, a
    /// fallback controller without them), a window controller over the transport, or one driven
    /// from outside: `"external"` or `"python:module:Class"` (see [`is_external_controller`]).
    pub cc: Option<String>,
    /// Video: frames per second (default 30).
    pub fps: Option<f64>,
    /// Video: lowest encoder rate (default 150 kbit/s, RFC 8867 §4).
    pub rmin: Option<R>,
    /// Video: highest encoder rate (default 1.5 Mbit/s, RFC 8867 §4).
    pub rmax: Option<R>,
    /// Video: `"synthetic"` (RFC 8593, default), `"perfect"` or `"trace"` (sizes from `codec_trace`).
    pub codec: Option<String>,
    /// Video: the frame-size trace of `codec = "trace"` (one size in bytes per line).
    pub codec_trace: Option<String>,
    /// Video: feedback interval (`"100 ms"`) or `"scream"` (every 5 packets, within 20-200 ms);
    /// default: SCReAM's rule for SCReAM, 100 ms for the others.
    pub feedback: Option<String>,
    /// Video: `"transport-cc"` (default) or `"rfc8888"`.
    pub feedback_format: Option<String>,
    /// Video: retransmission of lost packets on RTCP generic NACK (RFC 4585) with RTX (RFC 4588),
    /// as WebRTC negotiates for video; default `false` (see docs/scenario-format.md).
    pub nack: Option<bool>,
    /// Video: constants per controller, `{ gcc = { beta = 0.9 }, scream = { ... } }`; the table
    /// of the controller that runs applies.
    pub cc_params: Option<BTreeMap<String, BTreeMap<String, ParamValue>>>,
    /// `"forward"` (default: data on the bottleneck, feedback on the reverse link) or `"reverse"`
    /// (data on the reverse link, feedback on the bottleneck; RMCAT 5.3's flow the other way).
    pub direction: Option<String>,
    /// Video: an interval with no frames, `{ from = "40 s", to = "60 s" }` (RMCAT 5.8).
    pub pause: Option<PauseSpec>,
    /// ECN codepoint of the sender's packets: `"not-ect"` (default), `"ect0"` (classic ECN) or
    /// `"ect1"` (L4S). Video over RTP needs `feedback_format = "rfc8888"` to report CE.
    pub ecn: Option<String>,
    /// When the source starts (default 0 s).
    pub start: Option<D>,
    /// When it stops (default: the end of the run).
    pub stop: Option<D>,
    /// The sender's access link (default: none, the sender sits at the bottleneck router).
    pub access: Option<AccessSpec>,
    /// The receiver's access link (default: none).
    pub egress: Option<AccessSpec>,
    /// Downloads: the connections, one after another (see `crate::downloads`).
    pub connections: Option<Vec<crate::downloads::ConnectionSpec>>,
}

/// A controller constant as written in a scenario: a number, a flag or a string with units.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged, expecting = "expected a number, true/false, or a string such as \"80 ms\"")]
pub enum ParamValue {
    /// `0.9`
    Number(f64),
    /// `true`
    Flag(bool),
    /// `"80 ms"`
    Text(String),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Number(n) => write!(f, "{n}"),
            ParamValue::Flag(b) => write!(f, "{b}"),
            ParamValue::Text(s) => f.write_str(s),
        }
    }
}

/// An interval in which a video source sends nothing.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseSpec {
    /// Pause start.
    pub from: D,
    /// Pause end.
    pub to: D,
}

/// The traffic a flow's source generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrafficKind {
    /// Constant bit rate: packets evenly spaced.
    Cbr,
    /// Poisson arrivals of fixed-size packets (for the M/D/1 check).
    Poisson,
    /// RTP video with a congestion controller and feedback.
    RtpVideo,
    /// A reliable, ack-clocked transfer with a window controller.
    Bulk,
    /// Short downloads separated by idle times, each over a new connection (RMCAT 5.7).
    Web,
    /// Downloads one after another over connections that remember the path.
    Downloads,
}

impl TrafficKind {
    /// The name used in scenarios and results.
    pub fn name(self) -> &'static str {
        match self {
            TrafficKind::Cbr => "cbr",
            TrafficKind::Poisson => "poisson",
            TrafficKind::RtpVideo => "rtp-video",
            TrafficKind::Bulk => "bulk",
            TrafficKind::Web => "web",
            TrafficKind::Downloads => "downloads",
        }
    }
}

/// A validated flow.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowConfig {
    /// Unique name.
    pub id: String,
    /// What its source sends.
    pub kind: TrafficKind,
    /// Mean rate.
    pub rate: Bitrate,
    /// Packet size.
    pub packet_size: Bytes,
    /// Start instant.
    pub start: Time,
    /// Stop instant.
    pub stop: Time,
    /// Sender-side access link, both directions.
    pub access: Option<LinkConfig>,
    /// Receiver-side access link, both directions.
    pub egress: Option<LinkConfig>,
    /// Video settings (rtp-video flows only).
    pub media: Option<MediaConfig>,
    /// Whether data runs on the reverse link (and feedback on the bottleneck).
    pub reverse: bool,
    /// Transport settings (bulk flows only).
    pub transport: Option<TransportFlowConfig>,
    /// ECN codepoint of the sender's packets.
    pub ecn: Ecn,
}

/// An ack-clocked flow's settings (bulk and web flows).
#[derive(Clone, Debug, PartialEq)]
pub struct TransportFlowConfig {
    /// The window controller's name.
    pub cc: String,
    /// Payload bytes to deliver (`None`: unbounded); bulk flows only.
    pub size: Option<u64>,
    /// The on/off model of a web flow.
    pub web: Option<WebConfig>,
    /// The connections of a downloads flow.
    pub downloads: Option<Vec<crate::downloads::ConnectionConfig>>,
}

/// The on/off model of a web flow (RFC 8867 §5.7; defaults from ns3-rmcat and the SCReAM slides).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WebConfig {
    /// Number of sources (10).
    pub sources: u32,
    /// Sources that start with a download (2).
    pub initially_on: u32,
    /// Mean idle time between downloads, exponentially distributed (10 s; "5.7bis": 50 s).
    pub idle_mean: Duration,
    /// Smallest download in payload bytes (30 kB).
    pub size_min: u64,
    /// Largest download (50 kB).
    pub size_max: u64,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            sources: 10,
            initially_on: 2,
            idle_mean: Duration::from_secs(10),
            size_min: 30_000,
            size_max: 50_000,
        }
    }
}

/// A video flow's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct MediaConfig {
    /// The congestion controller's name.
    pub cc: String,
    /// The encoder model.
    pub source: VideoSourceConfig,
    /// When the receiver sends feedback; `None`: the controller's usual schedule
    /// ([`MediaConfig::feedback_schedule`]).
    pub feedback: Option<FeedbackSchedule>,
    /// Frames captured in `[from, to)` are not sent (the source is paused).
    pub pause: Option<(Time, Time)>,
    /// The RTCP feedback format (its encoded size is what travels).
    pub feedback_format: FeedbackFormat,
    /// Whether lost packets are asked for again with NACK and retransmitted (RTX).
    pub nack: bool,
    /// Constant overrides per controller name: `(constant, value as text)`.
    pub cc_params: BTreeMap<String, Vec<(String, String)>>,
}

impl MediaConfig {
    /// The feedback schedule: the scenario's, else the controller's usual one (SCReAM: every 5
    /// packets within 20-200 ms, as in its evaluations; the others: every 100 ms, NADA's DELTA).
    pub fn feedback_schedule(&self) -> FeedbackSchedule {
        self.feedback.unwrap_or(match self.cc.as_str() {
            "scream" | "scream2" => SCREAM_FEEDBACK,
            _ => FeedbackSchedule::Interval(Duration::from_millis(100)),
        })
    }
}

/// SCReAM's feedback rule: every 5 packets, but within [20 ms, 200 ms].
const SCREAM_FEEDBACK: FeedbackSchedule =
    FeedbackSchedule::Scream { every: 5, min: Duration::from_millis(20), max: Duration::from_millis(200) };

/// A validated scenario: pure data, ready to build.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Name.
    pub name: String,
    /// Where it came from (for messages).
    pub source: String,
    /// Description.
    pub description: String,
    /// Seed.
    pub seed: u64,
    /// Simulated duration.
    pub duration: Duration,
    /// Series bin width.
    pub bin: Duration,
    /// Forward bottleneck.
    pub bottleneck: LinkConfig,
    /// Network assistance at the forward bottleneck's queue: `"none"`, `"zhuge"`, `"fastack"`.
    pub assist: String,
    /// Zhuge's constants (used with `assist = "zhuge"`).
    pub zhuge: ZhugeConfig,
    /// SCONE-PRO's settings (used with `assist = "scone-rtc"` or `"scone"`).
    pub scone: SconeConfig,
    /// Reverse bottleneck.
    pub reverse: LinkConfig,
    /// Flows.
    pub flows: Vec<FlowConfig>,
    /// Warnings the user should read before trusting the results (e.g. clipped trace samples).
    pub warnings: Vec<String>,
}

impl Scenario {
    /// Replaces the forward and reverse bottleneck queues with a named variant: `"droptail"`
    /// (300 ms, RFC 8867 §4) or `"codel"` (target 5 ms, interval 100 ms, RFC 8289, over a
    /// 1000-packet buffer), the two AQM
    /// settings of the RMCAT matrix.
    pub fn with_queue(mut self, queue: &str) -> Result<Scenario, ScenarioError> {
        let q = match queue {
            "droptail" => QueueConfig::DropTail { limit: QueueLimit::Time(Duration::from_millis(300)) },
            // CoDel needs a buffer it can manage: 1000 packets, Linux's default queue length.
            "codel" => {
                QueueConfig::CoDel { config: CoDelConfig::default(), limit: QueueLimit::Packets(1000) }
            }
            other => {
                return Err(ScenarioError::new(
                    &self.source,
                    "queue",
                    format!("got {other:?}, expected one of {}", QUEUE_VARIANTS.join(", ")),
                ))
            }
        };
        self.bottleneck.queue = q.clone();
        self.reverse.queue = q;
        self.name = format!("{}+{queue}", self.name);
        Ok(self)
    }

    /// Sets the path for the RMCAT matrix: one-way delay `rtt / 2` on the bottleneck and on the
    /// reverse link, and jitter of standard deviation `jitter` on both. Flows whose access link
    /// sets a delay of its own (RMCAT 5.5's RTT-fairness case) keep it on top.
    pub fn with_path(mut self, rtt: Duration, jitter: Duration) -> Scenario {
        let one_way = Duration(rtt.as_nanos() / 2);
        for l in [&mut self.bottleneck, &mut self.reverse] {
            l.delay = one_way;
            l.jitter = jitter;
        }
        self.name = format!("{}+rtt{}ms+jitter{}ms", self.name, rtt.as_millis_f64(), jitter.as_millis_f64());
        self
    }

    /// Runs every video flow with controller `cc` instead of the one the scenario names.
    pub fn with_cc(mut self, cc: &str) -> Result<Scenario, ScenarioError> {
        if !CONTROLLERS.contains(&cc) && !is_external_controller(cc) {
            return Err(ScenarioError::new(
                &self.source,
                "cc",
                format!("got {cc:?}, expected one of {}{EXTERNAL_FORMS}", CONTROLLERS.join(", ")),
            ));
        }
        let mut any = false;
        for f in &mut self.flows {
            let Some(m) = f.media.as_mut() else { continue };
            m.cc = cc.to_string();
            any = true;
            if !is_window_controller(cc) {
                // The scenario's table for `cc` was checked at its own start rate; check the
                // controller this flow will now build.
                crate::media::controller(m, f.rate).map_err(|e| {
                    let (k, msg) = e.split_once(": ").unwrap_or(("", &e));
                    ScenarioError::new(
                        &self.source,
                        format!("cc_params.{k}"),
                        format!("{msg} (flow {:?})", f.id),
                    )
                })?;
            }
        }
        if !any {
            return Err(ScenarioError::new(
                &self.source,
                "cc",
                "the scenario has no rtp-video flow to control",
            ));
        }
        Ok(self)
    }
}

/// How a scenario's text is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// TOML (scenario files).
    Toml,
    /// JSON (scenarios built as dicts in Python).
    Json,
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError::new(&label, "", format!("cannot read the file: {e}")))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Scenario::parse(&text, Format::Toml, &label, &base)
    }

    /// Reads and validates a scenario given as text; `label` names it in errors, relative trace
    /// paths are resolved against `base_dir`.
    pub fn parse(
        text: &str,
        format: Format,
        label: &str,
        base_dir: &Path,
    ) -> Result<Scenario, ScenarioError> {
        let spec: ScenarioSpec = match format {
            Format::Toml => {
                let value: toml::Value = toml::from_str(text).map_err(|e| {
                    // toml's message spans several lines (with a caret); keep it to one.
                    let msg = one_line(e.message());
                    let line = e.span().map(|s| text[..s.start.min(text.len())].lines().count().max(1));
                    let key = line.map(|l| format!("line {l}")).unwrap_or_default();
                    ScenarioError::new(label, key, format!("invalid TOML: {msg}"))
                })?;
                serde_path_to_error::deserialize(value).map_err(|e| path_error(label, e))?
            }
            Format::Json => {
                let value: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| ScenarioError::new(label, "", format!("invalid JSON: {e}")))?;
                serde_path_to_error::deserialize(value).map_err(|e| path_error(label, e))?
            }
        };
        let default_name = Path::new(label).file_stem().map(|s| s.to_string_lossy().into_owned());
        Scenario::from_spec(spec, label, base_dir, default_name)
    }

    /// Checks a deserialised spec and builds the scenario.
    pub fn from_spec(
        spec: ScenarioSpec,
        label: &str,
        base_dir: &Path,
        default_name: Option<String>,
    ) -> Result<Scenario, ScenarioError> {
        let err = |key: &str, msg: String| ScenarioError::new(label, key, msg);
        let duration = spec.duration.0;
        if duration == Duration::ZERO {
            return Err(err("duration", "got \"0 s\", expected a positive duration".into()));
        }
        let bin = spec.bin.map(|b| b.0).unwrap_or(Duration::from_millis(200));
        if bin == Duration::ZERO {
            return Err(err("bin", "expected a positive duration such as \"200 ms\"".into()));
        }
        let mut warnings = Vec::new();
        let bottleneck = link_config(&spec.bottleneck, "bottleneck", label, base_dir, &mut warnings)?;
        let assist = spec.bottleneck.assist.clone().unwrap_or_else(|| "none".into());
        if !ASSISTS.contains(&assist.as_str()) {
            return Err(err(
                "bottleneck.assist",
                format!("got {assist:?}, expected one of {}", ASSISTS.join(", ")),
            ));
        }
        if spec.bottleneck.zhuge.is_some() && assist != "zhuge" {
            return Err(err("bottleneck.zhuge", format!("settings for Zhuge, but assist is {assist:?}")));
        }
        if spec.bottleneck.scone.is_some() && !assist.starts_with("scone") {
            return Err(err(
                "bottleneck.scone",
                format!(
                    "settings for SCONE-PRO, but assist is {assist:?} (expected \"scone-rtc\" or \"scone\")"
                ),
            ));
        }
        let scone = scone_config(spec.bottleneck.scone.as_ref(), &assist, label)?;
        let zhuge = zhuge_config(
            spec.bottleneck.zhuge.as_ref(),
            matches!(bottleneck.capacity, Capacity::Wifi { .. }),
            label,
        )?;
        let reverse = match &spec.reverse {
            Some(r) => {
                if r.assist.is_some() || r.zhuge.is_some() || r.scone.is_some() {
                    return Err(err(
                        "reverse.assist",
                        "assistance sits at the forward bottleneck's queue".into(),
                    ));
                }
                link_config(r, "reverse", label, base_dir, &mut warnings)?
            }
            None => LinkConfig {
                capacity: bottleneck.capacity.clone(),
                delay: bottleneck.delay,
                jitter: Duration::ZERO,
                loss: LossModel::None,
                queue: QueueConfig::default(),
            },
        };
        if spec.flows.is_empty() {
            return Err(err("flows", "missing: a scenario needs at least one [[flows]] table".into()));
        }
        let mut ids = HashSet::new();
        let mut flows = Vec::with_capacity(spec.flows.len());
        for (i, f) in spec.flows.iter().enumerate() {
            let key = |k: &str| format!("flows[{i}].{k}");
            if f.id.is_empty() || !ids.insert(f.id.clone()) {
                return Err(err(
                    &key("id"),
                    format!("got {:?}, expected a non-empty id unique among the flows", f.id),
                ));
            }
            let kind = match f.kind.as_str() {
                "cbr" => TrafficKind::Cbr,
                "poisson" => TrafficKind::Poisson,
                "rtp-video" => TrafficKind::RtpVideo,
                "bulk" => TrafficKind::Bulk,
                "web" => TrafficKind::Web,
                "downloads" => TrafficKind::Downloads,
                other => {
                    return Err(err(
                        &key("kind"),
                        format!(
                            "got {other:?}, expected \"cbr\", \"poisson\", \"rtp-video\", \"bulk\", \"web\" or \"downloads\""
                        ),
                    ))
                }
            };
            let media = media_config(f, kind, &key, label, base_dir)?;
            let transport = transport_config(f, kind, &key, label)?;
            let rate = match (f.rate, &media) {
                (Some(r), _) => r.0,
                (None, Some(m)) => m.source.rmin,
                // A bulk flow's rate is its controller's business; this only sizes nothing.
                (None, None) if transport.is_some() => Bitrate::mbps(1),
                (None, None) => {
                    return Err(err(&key("rate"), format!("missing: a {} flow needs a rate", f.kind)))
                }
            };
            if rate == Bitrate::ZERO {
                return Err(err(&key("rate"), "got 0, expected a positive bitrate".into()));
            }
            let packet_size = f.packet_size.map(|b| b.0).unwrap_or(Bytes(1200));
            if packet_size.0 < 28 || packet_size.0 > 65_535 {
                return Err(err(
                    &key("packet_size"),
                    format!("got \"{packet_size}\", expected 28 B to 65535 B"),
                ));
            }
            let start = f.start.map(|d| d.0).unwrap_or(Duration::ZERO);
            let stop = f.stop.map(|d| d.0).unwrap_or(duration);
            if stop <= start {
                return Err(err(
                    &key("stop"),
                    format!("got \"{stop}\", expected a time after start (\"{start}\")"),
                ));
            }
            if stop > duration {
                return Err(err(
                    &key("stop"),
                    format!("got \"{stop}\", expected at most the scenario's duration (\"{duration}\")"),
                ));
            }
            let reverse = match f.direction.as_deref().unwrap_or("forward") {
                "forward" => false,
                "reverse" => true,
                other => {
                    return Err(err(
                        &key("direction"),
                        format!("got {other:?}, expected \"forward\" or \"reverse\""),
                    ))
                }
            };
            let mut media = media;
            if let Some(p) = f.pause {
                let Some(m) = media.as_mut() else {
                    return Err(err(
                        &key("pause"),
                        format!("only rtp-video flows take `pause`; this flow is {:?}", f.kind),
                    ));
                };
                if p.to.0 <= p.from.0 {
                    return Err(err(
                        &key("pause.to"),
                        format!("got \"{}\", expected a time after pause.from (\"{}\")", p.to.0, p.from.0),
                    ));
                }
                m.pause = Some((Time::ZERO + p.from.0, Time::ZERO + p.to.0));
            }
            let ecn = flow_ecn(f, kind, media.as_ref(), &key, label)?;
            let access = f.access.as_ref().map(|a| access_config(a, &key("access"), label)).transpose()?;
            let egress = f.egress.as_ref().map(|a| access_config(a, &key("egress"), label)).transpose()?;
            flows.push(FlowConfig {
                id: f.id.clone(),
                kind,
                rate,
                packet_size,
                start: Time::ZERO + start,
                stop: Time::ZERO + stop,
                access,
                egress,
                media,
                reverse,
                transport,
                ecn,
            });
        }
        Ok(Scenario {
            name: spec.name.or(default_name).unwrap_or_else(|| "scenario".into()),
            source: label.to_string(),
            description: spec.description.unwrap_or_default(),
            seed: spec.seed,
            duration,
            bin,
            bottleneck,
            assist,
            zhuge,
            scone,
            reverse,
            flows,
            warnings,
        })
    }
}

fn path_error<E: fmt::Display>(label: &str, e: serde_path_to_error::Error<E>) -> ScenarioError {
    let path = e.path().to_string();
    let key = if path == "." { String::new() } else { path };
    ScenarioError::new(label, key, one_line(&e.inner().to_string()))
}

/// Folds a library's multi-line message onto one line; drops toml's "in `key`" trailer (the key
/// is already named).
fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("in `"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The video settings of flow `f`, checked; `None` for other kinds (which must not carry them).
fn media_config(
    f: &FlowSpec,
    kind: TrafficKind,
    key: &dyn Fn(&str) -> String,
    label: &str,
    base_dir: &Path,
) -> Result<Option<MediaConfig>, ScenarioError> {
    let err = |k: &str, msg: String| ScenarioError::new(label, key(k), msg);
    if kind != TrafficKind::RtpVideo {
        for (k, given) in [
            (
                "cc",
                f.cc.is_some()
                    && !matches!(kind, TrafficKind::Bulk | TrafficKind::Web | TrafficKind::Downloads),
            ),
            ("fps", f.fps.is_some()),
            ("rmin", f.rmin.is_some()),
            ("rmax", f.rmax.is_some()),
            ("codec", f.codec.is_some()),
            ("codec_trace", f.codec_trace.is_some()),
            ("feedback", f.feedback.is_some()),
            ("feedback_format", f.feedback_format.is_some()),
            ("nack", f.nack.is_some()),
            ("cc_params", f.cc_params.is_some()),
        ] {
            if given {
                return Err(err(k, format!("only rtp-video flows take `{k}`; this flow is {:?}", f.kind)));
            }
        }
        return Ok(None);
    }
    let mut source = VideoSourceConfig::default();
    let cc = f.cc.clone().unwrap_or_else(|| "nada".into());
    if !CONTROLLERS.contains(&cc.as_str()) && !is_external_controller(&cc) {
        return Err(err(
            "cc",
            format!("got {cc:?}, expected one of {}{EXTERNAL_FORMS}", CONTROLLERS.join(", ")),
        ));
    }
    if let Some(fps) = f.fps {
        if !(fps > 0.0 && fps <= 240.0) {
            return Err(err("fps", format!("got {fps}, expected frames per second in (0, 240]")));
        }
        source.fps = fps;
    }
    if let Some(r) = f.rmin {
        source.rmin = r.0;
    }
    if let Some(r) = f.rmax {
        source.rmax = r.0;
    }
    if source.rmin == Bitrate::ZERO || source.rmax < source.rmin {
        return Err(err(
            "rmax",
            format!("got rmin {} and rmax {}, expected 0 < rmin <= rmax", source.rmin, source.rmax),
        ));
    }
    if source.rmax > lowlat_cc::tunable::bounds::MAX_RATE {
        let max = lowlat_cc::tunable::bounds::MAX_RATE;
        return Err(err("rmax", format!("got \"{}\", expected at most \"{max}\"", source.rmax)));
    }
    source.codec = match f.codec.as_deref().unwrap_or("synthetic") {
        "synthetic" => Codec::Synthetic,
        "perfect" => Codec::Perfect,
        "trace" => {
            let Some(file) = f.codec_trace.as_deref() else {
                return Err(err("codec_trace", "missing: codec = \"trace\" needs a frame-size file".into()));
            };
            let path = resolve(base_dir, file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| err("codec_trace", format!("cannot read {}: {e}", path.display())))?;
            let trace = FrameSizeTrace::parse(&text)
                .map_err(|m| err("codec_trace", format!("{}: {m}", path.display())))?;
            Codec::Trace(trace)
        }
        other => {
            return Err(err(
                "codec",
                format!("got {other:?}, expected \"synthetic\", \"perfect\" or \"trace\""),
            ))
        }
    };
    if f.codec_trace.is_some() && !matches!(source.codec, Codec::Trace(_)) {
        return Err(err("codec_trace", "only codec = \"trace\" reads a frame-size file".into()));
    }
    let feedback = match f.feedback.as_deref() {
        None => None,
        Some("scream") => Some(SCREAM_FEEDBACK),
        Some(other) => match other.parse::<Duration>() {
            Ok(d) if d > Duration::ZERO => Some(FeedbackSchedule::Interval(d)),
            _ => {
                return Err(err(
                    "feedback",
                    format!("got {other:?}, expected an interval such as \"50 ms\" or \"scream\""),
                ))
            }
        },
    };
    let feedback_format = match f.feedback_format.as_deref().unwrap_or("transport-cc") {
        "transport-cc" => FeedbackFormat::TransportCc,
        "rfc8888" => FeedbackFormat::Rfc8888,
        other => {
            return Err(err(
                "feedback_format",
                format!("got {other:?}, expected \"transport-cc\" or \"rfc8888\""),
            ))
        }
    };
    if is_window_controller(&cc) {
        // Over the transport, ACKs are the feedback: RTCP settings would silently do nothing.
        for (k, given) in [
            ("feedback", f.feedback.is_some()),
            ("feedback_format", f.feedback_format.is_some()),
            ("nack", f.nack.is_some()),
        ] {
            if given {
                return Err(err(
                    k,
                    format!("`{k}` applies to RTP controllers; {cc:?} carries the video over the transport, whose ACKs are its feedback"),
                ));
            }
        }
    }
    let nack = f.nack.unwrap_or(false);
    let mut m =
        MediaConfig { cc, source, feedback, pause: None, feedback_format, nack, cc_params: BTreeMap::new() };
    // "gcc.beta: got -5, ..." -> key `cc_params.gcc.beta`, message "got -5, ...".
    let cc_error = |e: String| match e.split_once(": ") {
        Some((k, msg)) => err(&format!("cc_params.{k}"), msg.to_string()),
        None => err("cc_params", e),
    };
    for (name, table) in f.cc_params.iter().flatten() {
        if is_window_controller(name) {
            return Err(err(
                &format!("cc_params.{name}"),
                "the window controllers take no cc_params yet (their constants are the specs' defaults)"
                    .into(),
            ));
        }
        if !CONTROLLERS.contains(&name.as_str()) {
            return Err(err(
                &format!("cc_params.{name}"),
                format!("unknown controller, expected one of {}", CONTROLLERS.join(", ")),
            ));
        }
        let params: Vec<(String, String)> = table.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
        // Build the controller once so a bad constant is reported now, not mid-run.
        let probe = MediaConfig {
            cc: name.clone(),
            cc_params: BTreeMap::from([(name.clone(), params.clone())]),
            ..m.clone()
        };
        crate::media::controller(&probe, probe.source.rmin).map_err(cc_error)?;
        m.cc_params.insert(name.clone(), params);
    }
    if !is_window_controller(&m.cc) {
        // The controller the run will build, at the flow's start rate: its config's ranges and
        // relations (min_rate <= start_rate <= max_rate, ...) are checked now, not mid-run.
        crate::media::controller(&m, f.rate.map_or(m.source.rmin, |r| r.0)).map_err(cc_error)?;
    }
    Ok(Some(m))
}

/// The ECN codepoint flow `f` sends with, checked.
fn flow_ecn(
    f: &FlowSpec,
    kind: TrafficKind,
    media: Option<&MediaConfig>,
    key: &dyn Fn(&str) -> String,
    label: &str,
) -> Result<Ecn, ScenarioError> {
    let Some(text) = f.ecn.as_deref() else { return Ok(Ecn::NotEct) };
    let err = |msg: String| ScenarioError::new(label, key("ecn"), msg);
    let ecn: Ecn = text.parse().map_err(err)?;
    if ecn == Ecn::Ce {
        return Err(err("got \"ce\", expected \"not-ect\", \"ect0\" or \"ect1\": only queues set CE".into()));
    }
    if kind == TrafficKind::Web && ecn.is_ect() {
        return Err(err(
            "web flows send Not-ECT; `ecn` applies to cbr, poisson, rtp-video and bulk flows".into()
        ));
    }
    if let Some(m) = media {
        if ecn.is_ect() && !is_window_controller(&m.cc) && m.feedback_format == FeedbackFormat::TransportCc {
            return Err(err(format!(
                "got {text:?} with transport-cc feedback, which has no ECN field (libwebrtc sends ECT(1) only \
                 with RFC 8888): set feedback_format = \"rfc8888\""
            )));
        }
    }
    Ok(ecn)
}

/// The transport settings of flow `f`, checked; `None` for other kinds (which must not carry them).
fn transport_config(
    f: &FlowSpec,
    kind: TrafficKind,
    key: &dyn Fn(&str) -> String,
    label: &str,
) -> Result<Option<TransportFlowConfig>, ScenarioError> {
    let err = |k: &str, msg: String| ScenarioError::new(label, key(k), msg);
    let web_keys = [
        ("sources", f.sources.is_some()),
        ("sources_on", f.sources_on.is_some()),
        ("idle_mean", f.idle_mean.is_some()),
        ("size_min", f.size_min.is_some()),
        ("size_max", f.size_max.is_some()),
    ];
    if kind != TrafficKind::Web {
        if let Some((k, _)) = web_keys.iter().find(|x| x.1) {
            return Err(err(k, format!("only web flows take `{k}`; this flow is {:?}", f.kind)));
        }
    }
    if kind != TrafficKind::Downloads && f.connections.is_some() {
        return Err(err(
            "connections",
            format!("only downloads flows take `connections`; this flow is {:?}", f.kind),
        ));
    }
    if kind != TrafficKind::Bulk && f.size.is_some() {
        let hint = match kind {
            TrafficKind::Web => " (web flows take size_min and size_max)",
            TrafficKind::Downloads => " (downloads flows give a size per connection)",
            _ => "",
        };
        return Err(err("size", format!("only bulk flows take `size`; this flow is {:?}{hint}", f.kind)));
    }
    if !matches!(kind, TrafficKind::Bulk | TrafficKind::Web | TrafficKind::Downloads) {
        return Ok(None);
    }
    if f.rate.is_some() {
        return Err(err("rate", format!("a {} flow's rate is set by its controller; remove `rate`", f.kind)));
    }
    let cc = f.cc.clone().unwrap_or_else(|| "newreno".into());
    if !crate::transport::WINDOW_CONTROLLERS.contains(&cc.as_str()) {
        return Err(err(
            "cc",
            format!("got {cc:?}, expected one of {}", crate::transport::WINDOW_CONTROLLERS.join(", ")),
        ));
    }
    let size = f.size.map(|b| b.0 .0);
    if size == Some(0) {
        return Err(err("size", "got 0 B, expected a positive size".into()));
    }
    let web = if kind == TrafficKind::Web {
        let mut w = WebConfig::default();
        if let Some(n) = f.sources {
            if n == 0 || n > crate::web::MAX_SOURCES {
                return Err(err("sources", format!("got {n}, expected 1 to {}", crate::web::MAX_SOURCES)));
            }
            w.sources = n;
        }
        w.initially_on = f.sources_on.unwrap_or(w.initially_on.min(w.sources));
        if w.initially_on > w.sources {
            return Err(err(
                "sources_on",
                format!("got {}, expected at most the number of sources ({})", w.initially_on, w.sources),
            ));
        }
        if let Some(d) = f.idle_mean {
            if d.0 == Duration::ZERO {
                return Err(err("idle_mean", "got 0 s, expected a positive duration".into()));
            }
            w.idle_mean = d.0;
        }
        w.size_min = f.size_min.map_or(w.size_min, |b| b.0 .0);
        w.size_max = f.size_max.map_or(w.size_max.max(w.size_min), |b| b.0 .0);
        if w.size_min == 0 {
            return Err(err("size_min", "got 0 B, expected a positive size".into()));
        }
        if w.size_max < w.size_min {
            return Err(err(
                "size_max",
                format!(
                    "got \"{}\", expected at least size_min (\"{}\")",
                    Bytes(w.size_max),
                    Bytes(w.size_min)
                ),
            ));
        }
        Some(w)
    } else {
        None
    };
    let downloads = match (kind, &f.connections) {
        (TrafficKind::Downloads, Some(c)) => Some(crate::downloads::connections_config(c, key, label)?),
        (TrafficKind::Downloads, None) => {
            return Err(err("connections", "missing: a downloads flow needs [[flows.connections]]".into()))
        }
        _ => None,
    };
    Ok(Some(TransportFlowConfig { cc, size, web, downloads }))
}

/// The queue variants [`Scenario::with_queue`] knows.
pub const QUEUE_VARIANTS: &[&str] = &["droptail", "codel"];

/// The congestion controllers a video flow can use: RTP rate controllers, then the window
/// controllers that carry video over the ack-clocked transport instead
/// ([`crate::transport_media`]).
pub const CONTROLLERS: &[&str] =
    &["gcc", "nada", "scream", "scream2", "fixed", "scone-pro", "copa", "bbr", "cubic", "newreno"];

/// The controllers driven from outside the simulator, as the error messages list them.
const EXTERNAL_FORMS: &str = ", \"external\" or \"python:module:Class\"";

/// Whether `cc` names a controller driven from outside the simulator
/// ([`lowlat_cc::external`]): `"external"` (the driver sets the target, as the Gymnasium
/// environment does) or `"python:module.path:ClassName"` (a Python class the Python package
/// imports and calls per feedback report; a driver without Python keeps the start rate).
pub fn is_external_controller(cc: &str) -> bool {
    if cc == "external" {
        return true;
    }
    let ident = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|p| {
                p.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    cc.strip_prefix("python:")
        .and_then(|r| r.split_once(':'))
        .is_some_and(|(module, class)| ident(module) && ident(class) && !class.contains('.'))
}

/// Whether video under controller `cc` travels over the ack-clocked transport (not RTP).
pub fn is_window_controller(cc: &str) -> bool {
    crate::transport::WINDOW_CONTROLLERS.contains(&cc)
}

fn access_config(a: &AccessSpec, key: &str, label: &str) -> Result<LinkConfig, ScenarioError> {
    let rate = a.rate.map(|r| r.0).unwrap_or(Bitrate::gbps(1));
    if rate == Bitrate::ZERO {
        return Err(ScenarioError::new(label, format!("{key}.rate"), "got 0, expected a positive bitrate"));
    }
    Ok(LinkConfig {
        capacity: Capacity::Constant(rate),
        delay: a.delay.map(|d| d.0).unwrap_or(Duration::ZERO),
        jitter: Duration::ZERO,
        loss: LossModel::None,
        // An access link is never the bottleneck; its queue just must not drop bursts.
        queue: QueueConfig::DropTail { limit: QueueLimit::Unlimited },
    })
}

fn link_config(
    l: &LinkSpec,
    key: &str,
    label: &str,
    base_dir: &Path,
    warnings: &mut Vec<String>,
) -> Result<LinkConfig, ScenarioError> {
    let err = |k: &str, msg: String| ScenarioError::new(label, format!("{key}.{k}"), msg);
    let given = [l.rate.is_some(), l.schedule.is_some(), l.trace.is_some()].iter().filter(|b| **b).count();
    if given != 1 {
        return Err(ScenarioError::new(
            label,
            key,
            "expected exactly one of `rate`, `schedule` or `trace`".to_string(),
        ));
    }
    if l.trace.is_none() {
        let given = [
            ("trace_format", l.trace_format.is_some()),
            ("trace_step", l.trace_step.is_some()),
            ("trace_scale", l.trace_scale.is_some()),
            ("trace_loop", l.trace_loop.is_some()),
        ];
        if let Some((k, _)) = given.iter().find(|g| g.1) {
            return Err(err(k, "only a link with a `trace` takes this key".into()));
        }
    }
    let capacity = if let Some(r) = l.rate {
        if r.0 == Bitrate::ZERO {
            return Err(err("rate", "got 0, expected a positive bitrate".into()));
        }
        Capacity::Constant(r.0)
    } else if let Some(points) = &l.schedule {
        if points.is_empty() {
            return Err(err("schedule", "expected at least one { at, rate } step".into()));
        }
        if points[0].at.0 != Duration::ZERO {
            return Err(err(
                "schedule[0].at",
                format!("got \"{}\", expected \"0 s\": the schedule must start at 0", points[0].at.0),
            ));
        }
        for w in points.windows(2).enumerate() {
            if w.1[1].at.0 <= w.1[0].at.0 {
                return Err(err(
                    &format!("schedule[{}].at", w.0 + 1),
                    format!("got \"{}\", expected a time after \"{}\"", w.1[1].at.0, w.1[0].at.0),
                ));
            }
        }
        let pts = points.iter().map(|p| (Time::ZERO + p.at.0, p.rate.0)).collect();
        Capacity::Schedule(RateSchedule::new(pts).map_err(|m| err("schedule", m))?)
    } else {
        let file = l.trace.as_deref().unwrap_or_default();
        let path = resolve(base_dir, file);
        let mut opts =
            RateTraceOptions { repeat: l.trace_loop.unwrap_or(true), ..RateTraceOptions::default() };
        if let Some(d) = l.trace_step {
            if d.0 == Duration::ZERO {
                return Err(err("trace_step", "got \"0 s\", expected a positive duration".into()));
            }
            opts.step = Some(d.0);
        }
        if let Some(k) = l.trace_scale {
            if !(k.is_finite() && k > 0.0) {
                return Err(err("trace_scale", format!("got {k}, expected a positive number")));
            }
            opts.scale = k;
        }
        let (cap, warns): (Capacity, Vec<TraceWarning>) = match l.trace_format.as_deref().unwrap_or("auto") {
            "auto" => trace::load_trace_auto(&path, &opts),
            "mahimahi" => trace::load_mahimahi(&path).map(|t| (Capacity::Opportunities(t), vec![])),
            "rate" => trace::load_rate_trace(&path, &opts).map(|(s, w)| (Capacity::Schedule(s), w)),
            other => {
                return Err(err(
                    "trace_format",
                    format!("got {other:?}, expected \"auto\", \"mahimahi\" or \"rate\""),
                ))
            }
        }
        .map_err(|e| err("trace", e.to_string()))?;
        warnings.extend(warns.into_iter().map(|w| w.to_string()));
        cap
    };
    let capacity = match (&l.wifi, capacity) {
        (None, c) => c,
        (Some(w), c) => {
            let channel = wifi_config(w, key, label)?;
            let rate = match c {
                Capacity::Constant(r) => {
                    RateSchedule::new(vec![(Time::ZERO, r)]).map_err(|m| err("rate", m))?
                }
                Capacity::Schedule(s) => s,
                // The trace's bytes per millisecond become the channel's mean rate.
                Capacity::Opportunities(d) => d.to_rate_schedule(),
                Capacity::Wifi { rate, .. } => rate,
            };
            Capacity::Wifi { rate, channel }
        }
    };
    let queue = match &l.queue {
        None => QueueConfig::default(),
        Some(q) => queue_config(q, &format!("{key}.queue"), label)?,
    };
    let loss = match &l.loss {
        None | Some(LossSpec::None) => LossModel::None,
        Some(LossSpec::Bernoulli { p }) => {
            check_prob(*p, &format!("{key}.loss.p"), label)?;
            LossModel::Bernoulli { p: *p }
        }
        Some(LossSpec::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad }) => {
            for (k, v) in [
                ("p_good_to_bad", p_good_to_bad),
                ("p_bad_to_good", p_bad_to_good),
                ("loss_in_good", loss_in_good),
                ("loss_in_bad", loss_in_bad),
            ] {
                check_prob(*v, &format!("{key}.loss.{k}"), label)?;
            }
            if *p_good_to_bad + *p_bad_to_good == 0.0 {
                return Err(err("loss", "p_good_to_bad and p_bad_to_good cannot both be 0".into()));
            }
            LossModel::GilbertElliott {
                p_good_to_bad: *p_good_to_bad,
                p_bad_to_good: *p_bad_to_good,
                loss_in_good: *loss_in_good,
                loss_in_bad: *loss_in_bad,
                bad: false,
            }
        }
    };
    Ok(LinkConfig {
        capacity,
        delay: l.delay.map(|d| d.0).unwrap_or(Duration::ZERO),
        jitter: l.jitter.map(|d| d.0).unwrap_or(Duration::ZERO),
        loss,
        queue,
    })
}

/// The network assistance a bottleneck can have.
pub const ASSISTS: &[&str] = &["none", "zhuge", "fastack", "scone-rtc", "scone"];

fn scone_config(s: Option<&SconeSpec>, assist: &str, label: &str) -> Result<SconeConfig, ScenarioError> {
    let mut cfg = SconeConfig {
        mode: if assist == "scone" { SconeMode::Standard } else { SconeMode::Rtc },
        ..SconeConfig::default()
    };
    let Some(s) = s else { return Ok(cfg) };
    let err = |k: &str, msg: String| ScenarioError::new(label, format!("bottleneck.scone.{k}"), msg);
    let (rtc, standard) = (cfg.mode == SconeMode::Rtc, cfg.mode == SconeMode::Standard);
    for (k, given, ok) in [
        ("period", s.period.is_some(), rtc),
        ("refresh", s.refresh.is_some(), standard),
        ("policy_signal", s.policy_signal.is_some(), standard),
    ] {
        if given && !ok {
            let other = if rtc { "\"scone\"" } else { "\"scone-rtc\"" };
            return Err(err(k, format!("only used with assist = {other}; assist is {assist:?}")));
        }
    }
    cfg.period = s.period.map_or(cfg.period, |d| d.0);
    cfg.window = s.window.map_or(cfg.window, |d| d.0);
    cfg.refresh = s.refresh.map_or(cfg.refresh, |d| d.0);
    cfg.capacity = match s.capacity.as_deref() {
        None | Some("oracle") => CapacitySource::Oracle,
        Some("measured") => CapacitySource::Measured,
        Some(other) => {
            return Err(err("capacity", format!("got {other:?}, expected \"oracle\" or \"measured\"")))
        }
    };
    if let Some(n) = s.policy_signal {
        if !(0..=127).contains(&n) {
            return Err(err(
                "policy_signal",
                format!("got {n}, expected a SCONE rate signal 0-126 (100 kbit/s x 10^(n/20)) or 127 (none)"),
            ));
        }
        cfg.policy_signal = n as u8;
    }
    cfg.validate().map_err(|m| {
        let (k, rest) = m.split_once(": ").unwrap_or(("", m.as_str()));
        err(k, rest.to_string())
    })?;
    Ok(cfg)
}

fn zhuge_config(z: Option<&ZhugeSpec>, wifi: bool, label: &str) -> Result<ZhugeConfig, ScenarioError> {
    let err = |k: &str, msg: String| ScenarioError::new(label, format!("bottleneck.zhuge.{k}"), msg);
    let variant = match z.and_then(|z| z.variant.as_deref()) {
        None | Some("artifact") => ZhugeVariant::Artifact,
        Some("paper") => ZhugeVariant::Paper,
        Some(other) => {
            return Err(err("variant", format!("got {other:?}, expected \"artifact\" or \"paper\"")))
        }
    };
    let mut cfg = ZhugeConfig::for_variant(variant);
    cfg.teller.head_of_line = wifi;
    // The artifact's 5 ms aggregate allowance exists only in its Wi-Fi mode.
    if !wifi {
        cfg.teller.burst_rule = BurstRule::None;
    }
    let Some(z) = z else { return Ok(cfg) };
    match z.in_band.as_deref() {
        None => {}
        Some("sampled") => cfg.in_band = InBandReports::Sampled { delay: Duration::from_millis(1) },
        Some("per-packet") => {
            let ms = if variant == ZhugeVariant::Artifact { 1 } else { 5 };
            cfg.in_band = InBandReports::PerPacket { interval: Duration::from_millis(ms) }
        }
        Some(other) => {
            return Err(err("in_band", format!("got {other:?}, expected \"sampled\" or \"per-packet\"")))
        }
    }
    match z.ack_hold.as_deref() {
        None => {}
        Some("accumulate") => cfg.ack_hold.accumulate = true,
        Some("in-order") => cfg.ack_hold.accumulate = false,
        Some(other) => {
            return Err(err("ack_hold", format!("got {other:?}, expected \"accumulate\" or \"in-order\"")))
        }
    }
    if let Some(w) = z.whole_ms {
        cfg.teller.whole_ms = w;
    }
    let positive = |k: &str, d: Option<D>| -> Result<Option<Duration>, ScenarioError> {
        match d {
            Some(d) if d.0 == Duration::ZERO => {
                Err(err(k, "got \"0 s\", expected a positive duration".into()))
            }
            other => Ok(other.map(|d| d.0)),
        }
    };
    if let Some(d) = positive("report_interval", z.report_interval)? {
        cfg.in_band = match cfg.in_band {
            InBandReports::Sampled { .. } => InBandReports::Sampled { delay: d },
            InBandReports::PerPacket { .. } => InBandReports::PerPacket { interval: d },
        };
    }
    if let Some(d) = positive("frame_interval", z.frame_interval)? {
        cfg.teller.frame_interval = d;
    }
    if let Some(d) = z.max_hold {
        cfg.ack_hold.max_hold = d.0;
    }
    if let Some(h) = z.head_of_line {
        cfg.teller.head_of_line = h;
    }
    let max_burst = z.max_burst.map(|b| b.0).unwrap_or(Bytes(65_535));
    cfg.teller.burst_rule = match z.burst_rule.as_deref() {
        None | Some("join-aggregate") if z.max_burst.is_some() => {
            return Err(err("max_burst", "only used with burst_rule = \"max-burst\"".into()));
        }
        None => cfg.teller.burst_rule,
        Some("join-aggregate") => BurstRule::JoinAggregate { within: Duration::from_millis(5) },
        Some("max-burst") => BurstRule::MaxBurst { max_burst },
        Some("none") => BurstRule::None,
        Some(other) => {
            return Err(err(
                "burst_rule",
                format!("got {other:?}, expected \"join-aggregate\", \"max-burst\" or \"none\""),
            ))
        }
    };
    Ok(cfg)
}

fn wifi_config(w: &WifiSpec, key: &str, label: &str) -> Result<WifiConfig, ScenarioError> {
    let d = WifiConfig::default();
    let cfg = WifiConfig {
        access_min: w.access_min.map_or(d.access_min, |x| x.0),
        access_max: w.access_max.map_or(d.access_max, |x| x.0),
        outage_probability: w.outage_probability.unwrap_or(d.outage_probability),
        outage_mean: w.outage_mean.map_or(d.outage_mean, |x| x.0),
        max_aggregate: w.max_aggregate.map_or(d.max_aggregate, |x| x.0),
    };
    cfg.validate().map_err(|m| {
        let (k, rest) = m.split_once(": ").unwrap_or(("", m.as_str()));
        ScenarioError::new(label, format!("{key}.wifi.{k}"), rest.to_string())
    })?;
    Ok(cfg)
}

fn resolve(base_dir: &Path, file: &str) -> PathBuf {
    let p = Path::new(file);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base_dir.join(p)
    }
}

fn check_prob(p: f64, key: &str, label: &str) -> Result<(), ScenarioError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(ScenarioError::new(label, key, format!("got {p}, expected a probability in [0, 1]")));
    }
    Ok(())
}

/// Reads a queue limit: `"300 ms"`, `"64 kB"`, `"100 packets"`, `"unlimited"`.
pub fn parse_queue_limit(s: &str) -> Result<QueueLimit, String> {
    let t = s.trim();
    if t == "unlimited" {
        return Ok(QueueLimit::Unlimited);
    }
    if let Some(n) = t.strip_suffix("packets").or_else(|| t.strip_suffix("packet")) {
        return match n.trim().parse::<u32>() {
            Ok(n) if n > 0 => Ok(QueueLimit::Packets(n)),
            _ => {
                Err(format!("got {s:?}, expected a positive whole number of packets such as \"100 packets\""))
            }
        };
    }
    if let Ok(d) = t.parse::<Duration>() {
        return Ok(QueueLimit::Time(d));
    }
    if let Ok(b) = t.parse::<Bytes>() {
        return Ok(QueueLimit::Bytes(b));
    }
    Err(format!("got {s:?}, expected a time (\"300 ms\"), a size (\"64 kB\"), a packet count (\"100 packets\") or \"unlimited\""))
}

fn queue_config(q: &QueueSpec, key: &str, label: &str) -> Result<QueueConfig, ScenarioError> {
    let limit = match &q.limit {
        None => QueueLimit::Time(Duration::from_millis(300)),
        Some(s) => parse_queue_limit(s).map_err(|m| ScenarioError::new(label, format!("{key}.limit"), m))?,
    };
    let err = |k: &str, msg: String| ScenarioError::new(label, format!("{key}.{k}"), msg);
    let codel_keys = [("target", q.target.is_some()), ("interval", q.interval.is_some())];
    let l4s_keys = [("threshold", q.threshold.is_some()), ("max_threshold", q.max_threshold.is_some())];
    let refuse = |keys: &[(&str, bool)], what: &str| -> Result<(), ScenarioError> {
        match keys.iter().find(|k| k.1) {
            Some((k, _)) => Err(err(k, format!("`{k}` is not a parameter of kind = {:?} ({what})", q.kind))),
            None => Ok(()),
        }
    };
    match q.kind.as_str() {
        "droptail" | "fifo" => {
            refuse(&codel_keys, "a CoDel parameter")?;
            refuse(&l4s_keys, "an L4S parameter")?;
            if q.ecn == Some(true) {
                return Err(err(
                    "ecn",
                    "a drop-tail queue cannot mark ECN; use kind = \"codel\" with ecn = true, or kind = \"l4s\""
                        .into(),
                ));
            }
            Ok(QueueConfig::DropTail { limit })
        }
        "codel" => {
            refuse(&l4s_keys, "an L4S parameter")?;
            let mut config = CoDelConfig::default();
            if let Some(t) = q.target {
                config.target = t.0;
            }
            if let Some(i) = q.interval {
                config.interval = i.0;
            }
            if config.target == Duration::ZERO || config.interval == Duration::ZERO {
                return Err(ScenarioError::new(label, key, "CoDel target and interval must be positive"));
            }
            config.ecn = q.ecn.unwrap_or(false);
            Ok(QueueConfig::CoDel { config, limit })
        }
        "l4s" => {
            refuse(&codel_keys, "a CoDel parameter")?;
            if q.ecn == Some(false) {
                return Err(err(
                    "ecn",
                    "an l4s queue always marks ECT(1) packets; remove `ecn = false`".into(),
                ));
            }
            let mut config = L4sConfig::default();
            if let Some(t) = q.threshold {
                config.threshold = t.0;
                config.max_threshold = t.0;
            }
            if let Some(t) = q.max_threshold {
                config.max_threshold = t.0;
            }
            config.validate().map_err(|m| {
                let (k, rest) = m.split_once(": ").unwrap_or(("", m.as_str()));
                err(k, rest.to_string())
            })?;
            Ok(QueueConfig::L4s { config, limit })
        }
        other => Err(err("kind", format!("got {other:?}, expected \"droptail\", \"codel\" or \"l4s\""))),
    }
}
