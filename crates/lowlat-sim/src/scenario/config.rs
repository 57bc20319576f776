//! The validated scenario: pure data the simulator builds from.

use lowlat_assist::{SconeConfig, ZhugeConfig};
use lowlat_core::{Bitrate, Bytes, Duration, Ecn, Time};
use lowlat_media::receiver::{FeedbackFormat, FeedbackSchedule};
use lowlat_media::source::VideoSourceConfig;
use lowlat_net::link::LinkConfig;
use std::collections::BTreeMap;

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

/// How an RTP video flow repairs lost packets (the flow's `repair` key, or `nack = true`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Repair {
    /// No repair (default: RFC 8867 evaluates the controllers without it).
    #[default]
    None,
    /// WebRTC's: RTCP generic NACK and RTX (`lowlat_media::nack`).
    Nack,
    /// The Zhuge artifact's: every packet acknowledged, a frame's unacknowledged packets resent
    /// after srtt + 4 deviations (`lowlat_media::timeout_rtx`).
    Timeout,
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
    /// How lost packets are repaired.
    pub repair: Repair,
    /// Constant overrides per controller name: `(constant, value as text)`.
    pub cc_params: BTreeMap<String, Vec<(String, String)>>,
    /// Video over a window controller: the receiver acknowledges every this many packets (2,
    /// RFC 9000 §13.2.2; 1: every packet, a TCP receiver without delayed ACKs).
    pub ack_every: u32,
    /// Video over a window controller: TCP's loss recovery instead of RFC 9002's (`None`).
    pub tcp: Option<lowlat_transport::TcpRecovery>,
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
pub(super) const SCREAM_FEEDBACK: FeedbackSchedule =
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
