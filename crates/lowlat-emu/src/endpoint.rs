//! The results contract for one endpoint of `lowlat send` / `lowlat receive`: the simulator's
//! `summary.json` (one flow, no links: the endpoint sees none) and flow series, measured on the
//! endpoint's real packets, so `--out DIR` holds the same files as a simulated run's.
//!
//! A sender knows what it sent and what feedback said (rate, RTT); a receiver what arrived (rate,
//! one-way delay, loss, frames). Each fills the fields it knows; the rest stay empty, as a
//! simulated flow's do when they do not apply. The endpoint's own report rides along in the
//! summary's `endpoint` object.

use lowlat_core::{Duration, Time};
use lowlat_sim::media::MediaMetrics;
use lowlat_sim::results::{Column, FlowSummary, RunResult, Stats, Summary, Table, LOWLAT_VERSION};
use lowlat_sim::traffic::FlowMetrics;
use lowlat_sim::Scenario;

/// Which end measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `lowlat send`.
    Sender,
    /// `lowlat receive`.
    Receiver,
}

/// What one endpoint measured, for [`endpoint_result`].
#[derive(Debug)]
pub struct Measured<'a> {
    /// The scenario flow's id and kind (`rtp-video`, `bulk`).
    pub flow: &'a str,
    /// The flow's kind.
    pub kind: &'a str,
    /// The controller's name (the sender's; `none` at a receiver).
    pub cc: &'a str,
    /// Which end.
    pub side: Side,
    /// Packets and bytes per bin (sent at a sender, received at a receiver).
    pub metrics: &'a FlowMetrics,
    /// Frames (receiver) or RTT samples (sender) of a media flow.
    pub media: Option<&'a MediaMetrics>,
    /// A transport sender's minimum and smoothed RTT at the end (it keeps no samples).
    pub rtt: Option<(Duration, Duration)>,
    /// Wall seconds the endpoint ran.
    pub elapsed_s: f64,
}

fn ms_stats(samples: impl Iterator<Item = Duration>) -> Stats {
    let mut v: Vec<f64> = samples.map(|d| d.as_millis_f64()).collect();
    Stats::from_samples(&mut v)
}

/// The endpoint's measurements as the simulator's results contract.
pub fn endpoint_result(scenario: &Scenario, m: &Measured<'_>) -> RunResult {
    let mx = m.metrics;
    let bin = mx.bin;
    let bin_ns = bin.as_nanos().max(1);
    let end = Time::ZERO + Duration::from_secs_f64(m.elapsed_s.max(0.0));
    let nbins = end.as_nanos().div_ceil(bin_ns).max(mx.bins.len() as u64) as usize;
    let bin_s = bin.as_secs_f64();
    let rx = m.side == Side::Receiver;
    let span = m.elapsed_s.max(1e-9);
    let frames = m.media.filter(|_| rx).map(|md| &md.frames);
    let frame_span = match frames.map(|f| (f.first(), f.last())) {
        Some((Some(a), Some(z))) if z.0 > a.0 => (z.0 - a.0).as_secs_f64(),
        _ => 0.0,
    };
    let rtts = m.media.filter(|_| !rx).map(|md| &md.rtt);
    let rtt_ms = match (rtts, m.rtt) {
        (Some(r), _) => ms_stats(r.iter().copied()),
        // A transport sender keeps no RTT samples: its smoothed RTT at the end is the mean.
        (None, Some((_, srtt))) => Stats { mean: Some(srtt.as_millis_f64()), ..Stats::default() },
        _ => Stats::default(),
    };
    let (thr, could_arrive) = if rx {
        (mx.rx_bytes as f64 * 8.0 / span / 1e3, mx.max_seq.map_or(0, |s| s + 1))
    } else {
        (mx.sent_bytes as f64 * 8.0 / span / 1e3, 0)
    };
    let owd = Stats::from_ns(&mx.owd.histogram(), mx.owd_sum_ns, Some(mx.owd_max_ns));
    let late = frames.map(|f| f.iter().filter(|x| x.1.as_millis_f64() > 400.0).count());
    let rtt_over = rtts.map(|r| r.iter().filter(|d| d.as_millis_f64() > 200.0).count());
    let flow = FlowSummary {
        id: m.flow.to_string(),
        kind: m.kind.to_string(),
        cc: m.cc.to_string(),
        start_s: 0.0,
        end_s: m.elapsed_s,
        throughput_kbps: thr,
        goodput_kbps: thr,
        loss_ratio: if could_arrive > 0 { mx.lost() as f64 / could_arrive as f64 } else { 0.0 },
        owd_ms: if rx { owd } else { Stats::default() },
        rtt_ms,
        packets_sent: mx.sent_packets,
        packets_received: mx.rx_packets,
        frame_delay_ms: frames.map(|f| ms_stats(f.iter().map(|x| x.1))),
        fps_mean: frames.map(|f| if frame_span > 0.0 { f.len() as f64 / frame_span } else { 0.0 }),
        ratio_rtt_over_200ms: rtts.zip(rtt_over).map(|(r, o)| {
            if r.is_empty() {
                0.0
            } else {
                o as f64 / r.len() as f64
            }
        }),
        ratio_frame_delay_over_400ms: frames.zip(late).map(|(f, l)| {
            if f.is_empty() {
                0.0
            } else {
                l as f64 / f.len() as f64
            }
        }),
        ratio_fps_below_10: None,
        ce_reported: None,
        retransmissions: None,
        recovered: None,
        net_rtt_ms: Stats::default(),
        ratio_net_rtt_over_200ms: 0.0,
        transfers: None,
        completion_ms: None,
        connections: None,
    };
    let mut frame_bins = vec![(0.0f64, 0i64); nbins];
    for (t, d) in frames.into_iter().flatten() {
        if let Some(b) = frame_bins.get_mut((t.as_nanos() / bin_ns) as usize) {
            b.0 += d.as_millis_f64();
            b.1 += 1;
        }
    }
    let (mut f_t, mut f_send, mut f_recv, mut f_owd) = (vec![], vec![], vec![], vec![]);
    for i in 0..nbins {
        let b = mx.bins.get(i).copied().unwrap_or_default();
        f_t.push(Time(i as u64 * bin_ns).as_secs_f64());
        f_send.push(if rx { f64::NAN } else { b.tx_bytes as f64 * 8.0 / bin_s / 1e3 });
        f_recv.push(if rx { b.rx_bytes as f64 * 8.0 / bin_s / 1e3 } else { f64::NAN });
        f_owd.push(if b.rx_packets > 0 {
            b.owd_sum_ns as f64 / b.rx_packets as f64 * 1e-6
        } else {
            f64::NAN
        });
    }
    let col = |n: &str, v: Vec<f64>| (n.to_string(), Column::F64(v));
    let mut warnings = scenario.warnings.clone();
    warnings.push(format!(
        "measured at the {} on real sockets: one flow, no links (the relay's --out has those)",
        if rx { "receiver" } else { "sender" }
    ));
    RunResult {
        summary: Summary {
            lowlat_version: LOWLAT_VERSION.into(),
            scenario: scenario.name.clone(),
            seed: scenario.seed,
            sim_duration_s: m.elapsed_s,
            wall_s: m.elapsed_s,
            events: mx.sent_packets + mx.rx_packets,
            flows: vec![flow],
            links: Vec::new(),
            link_stats: true,
            assist: None,
            warnings,
        },
        flow_series: Table {
            columns: vec![
                ("flow".into(), Column::Str(vec![m.flow.to_string(); nbins])),
                col("t_s", f_t),
                col("send_kbps", f_send),
                col("recv_kbps", f_recv),
                col("owd_ms", f_owd),
                col(
                    "frame_delay_ms",
                    frame_bins.iter().map(|&(s, n)| if n > 0 { s / n as f64 } else { f64::NAN }).collect(),
                ),
                ("frames".into(), Column::I64(frame_bins.iter().map(|b| b.1).collect())),
            ],
        },
        // The link series' columns with no rows: readers (the plots) find the columns they expect.
        link_series: Table {
            columns: vec![
                ("link".into(), Column::Str(Vec::new())),
                col("t_s", Vec::new()),
                col("capacity_kbps", Vec::new()),
                col("throughput_kbps", Vec::new()),
                col("queue_delay_ms", Vec::new()),
                col("queue_delay_max_ms", Vec::new()),
                ("drops".into(), Column::I64(Vec::new())),
            ],
        },
        predictions: Table::default(),
        frames: Table::default(),
        sender_rtt: Table::default(),
    }
}

/// `summary.json` of an endpoint: the contract's summary plus its own report as `endpoint`.
pub fn summary_json(result: &RunResult, endpoint_json: &str) -> String {
    let mut v = serde_json::to_value(&result.summary).expect("the summary holds only plain data");
    v["endpoint"] = serde_json::from_str(endpoint_json).expect("the endpoint's report is JSON");
    serde_json::to_string_pretty(&v).expect("plain data")
}

/// An endpoint's results: the contract's `RunResult` and its `summary.json` (with `endpoint`).
#[derive(Debug)]
pub struct EndpointResults {
    /// Summary and series.
    pub result: RunResult,
    /// `summary.json`.
    pub summary_json: String,
}

fn finish(scenario: &Scenario, m: &Measured<'_>, endpoint_json: &str) -> EndpointResults {
    let result = endpoint_result(scenario, m);
    let summary_json = summary_json(&result, endpoint_json);
    EndpointResults { result, summary_json }
}

/// The results of `lowlat send` for an rtp-video flow.
pub fn rtp_sender(scenario: &Scenario, flow: Option<&str>, r: &crate::rtp::SenderReport) -> EndpointResults {
    let id = crate::rtp::media_flow(scenario, flow).map_or("video", |f| f.id.as_str());
    let m = Measured {
        flow: id,
        kind: "rtp-video",
        cc: r.cc,
        side: Side::Sender,
        metrics: &r.metrics,
        media: Some(&r.media),
        rtt: None,
        elapsed_s: r.elapsed_s,
    };
    finish(scenario, &m, &r.summary_json())
}

/// The results of `lowlat receive` for an rtp-video flow (its time: until the last arrival).
pub fn rtp_receiver(
    scenario: &Scenario,
    flow: Option<&str>,
    r: &crate::rtp::ReceiverReport,
) -> EndpointResults {
    let id = crate::rtp::media_flow(scenario, flow).map_or("video", |f| f.id.as_str());
    let m = Measured {
        flow: id,
        kind: "rtp-video",
        cc: "none",
        side: Side::Receiver,
        metrics: &r.metrics,
        media: Some(&r.media),
        rtt: None,
        elapsed_s: r.metrics.last_rx.map_or(0.0, |t| t.as_secs_f64()),
    };
    finish(scenario, &m, &r.summary_json())
}

/// The results of `lowlat send` for a bulk flow.
pub fn transport_sender(
    scenario: &Scenario,
    flow: Option<&str>,
    r: &crate::transport::TransportSenderReport,
) -> EndpointResults {
    let id = crate::transport::bulk_flow(scenario, flow).map_or("bulk", |f| f.id.as_str());
    let m = Measured {
        flow: id,
        kind: "bulk",
        cc: r.cc,
        side: Side::Sender,
        metrics: &r.metrics,
        media: None,
        rtt: Some((r.min_rtt, r.srtt)),
        elapsed_s: r.elapsed_s,
    };
    finish(scenario, &m, &r.summary_json())
}

/// The results of `lowlat receive` for a bulk flow.
pub fn transport_receiver(
    scenario: &Scenario,
    flow: Option<&str>,
    r: &crate::transport::TransportReceiverReport,
) -> EndpointResults {
    let id = crate::transport::bulk_flow(scenario, flow).map_or("bulk", |f| f.id.as_str());
    let m = Measured {
        flow: id,
        kind: "bulk",
        cc: "none",
        side: Side::Receiver,
        metrics: &r.metrics,
        media: None,
        rtt: None,
        elapsed_s: r.metrics.last_rx.map_or(0.0, |t| t.as_secs_f64()),
    };
    finish(scenario, &m, &r.summary_json())
}

/// `lowlat send`: runs the scenario flow's sender on `socket` towards `dest` and measures it. A
/// bulk flow speaks lowlat's transport (QUIC-shaped packets), a media flow RTP.
pub fn run_send(
    scenario: &Scenario,
    flow: Option<&str>,
    socket: &std::net::UdpSocket,
    dest: std::net::SocketAddr,
    duration: Option<Duration>,
    should_stop: impl FnMut() -> bool,
) -> Result<EndpointResults, String> {
    if crate::transport::is_transport_flow(scenario, flow) {
        crate::transport::run_sender(scenario, flow, socket, dest, duration, should_stop)
            .map(|r| transport_sender(scenario, flow, &r))
    } else {
        crate::rtp::run_sender(scenario, flow, socket, dest, duration, should_stop)
            .map(|r| rtp_sender(scenario, flow, &r))
    }
}

/// `lowlat receive`: runs the scenario flow's receiver on `socket` and measures it (transport or
/// RTP, as [`run_send`]).
pub fn run_receive(
    scenario: &Scenario,
    flow: Option<&str>,
    socket: &std::net::UdpSocket,
    duration: Option<Duration>,
    should_stop: impl FnMut() -> bool,
) -> Result<EndpointResults, String> {
    if crate::transport::is_transport_flow(scenario, flow) {
        crate::transport::run_receiver(scenario, flow, socket, duration, should_stop)
            .map(|r| transport_receiver(scenario, flow, &r))
    } else {
        crate::rtp::run_receiver(scenario, flow, socket, duration, should_stop)
            .map(|r| rtp_receiver(scenario, flow, &r))
    }
}
