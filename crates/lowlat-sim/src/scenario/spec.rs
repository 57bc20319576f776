//! The scenario file as written: the `*Spec` structs it deserialises into (unknown keys are errors;
//! every quantity is a string with a unit, read by [`Unit`]).

use lowlat_core::{Bitrate, Bytes, Duration, ParseUnitError};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

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

pub(super) type D = Unit<Duration>;
pub(super) type R = Unit<Bitrate>;
pub(super) type B = Unit<Bytes>;

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
    /// Hold a copy of each ACK and pass the original at once, as the artifact's wiring does
    /// (default false: the ACK itself is held).
    pub ack_copy: Option<bool>,
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
#[serde(try_from = "LossTable")]
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
        loss_in_good: f64,
        /// Loss probability in the bad state (default 1).
        loss_in_bad: f64,
    },
}

/// A loss table as written: every variant's keys, matched with `kind` on conversion. Flat rather
/// than a serde tagged enum, whose errors lose the key (`loss: invalid type` instead of
/// `loss.p_good_to_bad: invalid type`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LossTable {
    kind: String,
    p: Option<f64>,
    p_good_to_bad: Option<f64>,
    p_bad_to_good: Option<f64>,
    loss_in_good: Option<f64>,
    loss_in_bad: Option<f64>,
}

impl TryFrom<LossTable> for LossSpec {
    type Error = String;

    fn try_from(t: LossTable) -> Result<LossSpec, String> {
        let need =
            |k: &str, v: Option<f64>| v.ok_or_else(|| format!("missing field `{k}` (kind = {:?})", t.kind));
        let (spec, takes): (LossSpec, &[&str]) = match t.kind.as_str() {
            "none" => (LossSpec::None, &[]),
            "bernoulli" => (LossSpec::Bernoulli { p: need("p", t.p)? }, &["p"]),
            "gilbert-elliott" => (
                LossSpec::GilbertElliott {
                    p_good_to_bad: need("p_good_to_bad", t.p_good_to_bad)?,
                    p_bad_to_good: need("p_bad_to_good", t.p_bad_to_good)?,
                    loss_in_good: t.loss_in_good.unwrap_or(0.0),
                    loss_in_bad: t.loss_in_bad.unwrap_or(1.0),
                },
                &["p_good_to_bad", "p_bad_to_good", "loss_in_good", "loss_in_bad"],
            ),
            other => {
                return Err(format!(
                    "kind: got {other:?}, expected \"none\", \"bernoulli\" or \"gilbert-elliott\""
                ))
            }
        };
        let given = [
            ("p", t.p),
            ("p_good_to_bad", t.p_good_to_bad),
            ("p_bad_to_good", t.p_bad_to_good),
            ("loss_in_good", t.loss_in_good),
            ("loss_in_bad", t.loss_in_bad),
        ];
        if let Some((k, _)) = given.iter().find(|(k, v)| v.is_some() && !takes.contains(k)) {
            return Err(format!("{k}: not a parameter of kind = {:?}", t.kind));
        }
        Ok(spec)
    }
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
    /// The device's own FIFO behind this queue, `"100 packets"` (ns-3's default): the queue
    /// above becomes a qdisc whose packets wait only while the device FIFO is full, as ns-3
    /// stacks a queue disc on a device. Absent: one queue.
    pub device_limit: Option<String>,
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
    /// Video: how lost packets are repaired: `"none"` (default), `"nack"` (the same as
    /// `nack = true`) or `"timeout"` (the Zhuge artifact's acknowledgements and retransmission
    /// timeout; see docs/scenario-format.md).
    pub repair: Option<String>,
    /// Video: constants per controller, `{ gcc = { beta = 0.9 }, scream = { ... } }`; the table
    /// of the controller that runs applies.
    pub cc_params: Option<BTreeMap<String, BTreeMap<String, ParamValue>>>,
    /// Video over a window controller: the receiver acknowledges every this many packets (default
    /// 2, RFC 9000 §13.2.2; 1: every packet, as a TCP receiver with `DelAckCount` 1).
    pub ack_every: Option<u32>,
    /// Video over a window controller: the transport's loss recovery, `"quic"` (default: RFC
    /// 9002's loss detection and probe timeout) or `"tcp"` (ns-3.34's TCP with SACK, the Zhuge
    /// artifact's: a retransmission timeout of at least `min_rto`; see docs/scenario-format.md).
    pub recovery: Option<String>,
    /// `recovery = "tcp"`: the smallest retransmission timeout (default 1 s, ns-3's `MinRto`).
    pub min_rto: Option<D>,
    /// `recovery = "tcp"`: whether each timeout doubles the next (default true, RFC 6298 §5.5).
    pub rto_backoff: Option<bool>,
    /// Video: the share of the controller's target rate the encoder produces (default 1; the
    /// Zhuge artifact's sender: 0.85 x 1000 / 1024, see docs/scenario-format.md).
    pub encoder_share: Option<f64>,
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
