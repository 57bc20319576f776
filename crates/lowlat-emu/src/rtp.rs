//! RTP video on real sockets (`lowlat send` / `lowlat receive`): the simulator's own media
//! endpoints (`lowlat_sim::media::RtpSender` / `RtpReceiver`: source model, packetiser, pacer, rate
//! controller; frame assembly, feedback schedule) driven on the wall clock, their packets written
//! as real RTP with the transport-wide sequence extension (RFC 8285, id 5) and their feedback as
//! real transport-cc or RFC 8888 RTCP (`lowlat-wire`).
//!
//! Each RTP payload starts with the packet's frame word (frame, index, count), the Unix time of
//! the sender's clock zero, and its send time on that clock, so the receiver assembles frames and
//! measures frame and one-way delay on the sender's clock (sender and receiver on one host, or
//! with synchronised clocks). Datagrams are as long as the simulator's packets.

use crate::clock::{precise_timers, wait_readable, WallClock};
use lowlat_core::rng::stream;
use lowlat_core::{Bytes, Duration, FlowId, Packet, Time};
use lowlat_media::receiver::FeedbackFormat;
use lowlat_media::Arrival;
use lowlat_sim::app::{AssistFeedback, Endpoint};
use lowlat_sim::media::{self, MediaMetrics, RtpReceiver, RtpSender};
use lowlat_sim::scenario::FlowConfig;
use lowlat_sim::traffic::FlowMetrics;
use lowlat_sim::Scenario;
use lowlat_wire::ccfb::compact_ntp;
use lowlat_wire::rtp::DEFAULT_TRANSPORT_SEQ_ID;
use lowlat_wire::{
    decode_compound, CcfbBlock, CcfbMetric, CcfbReport, NumReportsConvention, RtcpPacket, RtpHeader,
    TwccBuilder,
};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Dynamic payload type of the video.
pub const PAYLOAD_TYPE: u8 = 96;
/// SSRC of the media stream, and of the feedback's sender.
pub const MEDIA_SSRC: u32 = 0x6c6f_776c;
const FEEDBACK_SSRC: u32 = 0x6c6c_6662;
/// The frame word of a padding packet (as the simulator's).
const PADDING: u64 = u64::MAX;
/// Frame word, clock zero (Unix ns), send time (ns): the head of every payload.
const STAMP: usize = 24;

/// The media flow `id` (or the first one) of a scenario, with its media settings.
pub fn media_flow<'a>(scenario: &'a Scenario, id: Option<&str>) -> Result<&'a FlowConfig, String> {
    let f = match id {
        Some(id) => scenario.flows.iter().find(|f| f.id == id),
        None => scenario.flows.iter().find(|f| f.media.is_some()),
    };
    let f = f.ok_or_else(|| {
        format!("{}: no rtp-video flow{}", scenario.source, id.map(|i| format!(" {i:?}")).unwrap_or_default())
    })?;
    match &f.media {
        Some(m) if !lowlat_sim::scenario::is_window_controller(&m.cc) => Ok(f),
        _ => Err(format!(
            "{}: flow {:?} is not an rtp-video flow with a rate controller",
            scenario.source, f.id
        )),
    }
}

/// What a sender measured.
#[derive(Debug)]
pub struct SenderReport {
    /// The controller's name.
    pub cc: &'static str,
    /// RTT samples, frames sent.
    pub media: MediaMetrics,
    /// Packets and bytes sent, per bin.
    pub metrics: FlowMetrics,
    /// Feedback datagrams that were not readable RTCP feedback.
    pub malformed_feedback: u64,
    /// Network signals read (NETWORK_SIGNAL frames or SCONE packets from the access point).
    pub signals: u64,
    /// Generic NACKs read (`nack = true`).
    pub nacks: u64,
    /// Wall seconds run.
    pub elapsed_s: f64,
}

/// What a receiver measured.
#[derive(Debug)]
pub struct ReceiverReport {
    /// Completed frames `(completion, delay)`, on the sender's clock.
    pub media: MediaMetrics,
    /// Packets received, one-way delays, per bin.
    pub metrics: FlowMetrics,
    /// Datagrams that were not lowlat RTP.
    pub malformed: u64,
    /// Feedback datagrams sent (NACKs included).
    pub feedback_sent: u64,
    /// Generic NACKs sent (`nack = true`).
    pub nacks_sent: u64,
}

/// Per packet: its unwrapped transport-wide sequence number and arrival time (`None`: lost).
type Arrivals = Vec<(u64, Option<Time>)>;

/// A feedback datagram's report time and arrivals; `None` if it holds no readable feedback.
fn rtcp_arrivals(bytes: &[u8], last: &mut Option<u64>) -> Option<(Time, Arrivals)> {
    let at = |us: i64| Time(u64::try_from(us).unwrap_or(0) * 1_000);
    let mut raw: Vec<(u16, Option<Time>)> = Vec::new();
    let mut report_time = None;
    for p in decode_compound(bytes, NumReportsConvention::Count).ok()? {
        match p {
            RtcpPacket::TransportCc(fb) => {
                raw.extend(fb.arrivals_us().into_iter().map(|(s, a)| (s, a.map(at))))
            }
            RtcpPacket::Ccfb(rep) => {
                let ts = rep.report_timestamp;
                let ts_us = i64::from(ts >> 16) * 1_000_000 + ((i64::from(ts & 0xffff) * 1_000_000) >> 16);
                report_time = Some(at(ts_us));
                for b in &rep.blocks {
                    for (i, m) in b.metrics.iter().enumerate() {
                        raw.push((b.begin_seq.wrapping_add(i as u16), m.offset_us().map(|o| at(ts_us - o))));
                    }
                }
            }
            RtcpPacket::Other { .. } => {}
        }
    }
    if raw.is_empty() {
        return None;
    }
    // Transport-cc carries no report time: its last arrival is the closest lower bound.
    let report_time = report_time.or_else(|| raw.iter().filter_map(|r| r.1).max())?;
    // Unwrap the 16-bit sequence numbers next to the last one seen.
    let mut prev = last.unwrap_or(0);
    let mut arrivals = Vec::with_capacity(raw.len());
    for (s16, a) in raw {
        let diff = s16.wrapping_sub(prev as u16) as i16 as i64;
        let seq = (prev as i64 + diff).max(0) as u64;
        arrivals.push((seq, a));
        prev = seq;
    }
    *last = Some(prev);
    Some((report_time, arrivals))
}

/// The sequence numbers a Generic NACK datagram (RTCP RTPFB, FMT 1) asks for; `None` for
/// anything else.
fn generic_nack(b: &[u8]) -> Option<Vec<u16>> {
    if b.len() < 12 || b[1] != lowlat_wire::rtcp::PT_RTPFB || b[0] & 0x1f != 1 {
        return None;
    }
    let n = lowlat_wire::GenericNack::decode(b).ok()?;
    Some(n.lost().collect())
}

/// What an access point's signal datagram says, as the simulator hands it to the sender: a
/// NETWORK_SIGNAL frame (SCONE-PRO for RTC: capacity share and queue) or a SCONE packet (its
/// 7-bit rate signal, long-term advice). `None` for anything else (RTCP starts with version 2,
/// neither of these).
fn network_signal(b: &[u8]) -> Option<lowlat_cc::NetworkSignal> {
    use lowlat_core::Bitrate;
    if b.first() == Some(&(lowlat_wire::netsignal::FRAME_TYPE as u8)) {
        let r = lowlat_wire::NetworkSignalRepr::decode(b).ok()?;
        return Some(lowlat_cc::NetworkSignal {
            capacity: Bitrate::bps(r.capacity_bps),
            queue: Bytes(r.queue_bytes),
            long_term: false,
        });
    }
    let r = lowlat_wire::SconeRepr::decode(b).ok()?;
    let bps = lowlat_wire::scone::signal_to_bps(r.rate_signal).ok()??;
    Some(lowlat_cc::NetworkSignal { capacity: Bitrate::from_bps_f64(bps), queue: Bytes(0), long_term: true })
}

/// Sends flow `flow`'s video from `socket` to `dest` for `duration` (default: the scenario's),
/// reading feedback on the same socket. `should_stop` is asked every 50 ms.
pub fn run_sender(
    scenario: &Scenario,
    flow: Option<&str>,
    socket: &UdpSocket,
    dest: SocketAddr,
    duration: Option<Duration>,
    mut should_stop: impl FnMut() -> bool,
) -> Result<SenderReport, String> {
    let f = media_flow(scenario, flow)?;
    let m = f.media.as_ref().expect("checked by media_flow");
    let end = Time::ZERO + duration.unwrap_or(scenario.duration);
    let rng = stream(scenario.seed, &format!("flow.{}", f.id));
    // The sender reads a NACK from its mailbox, as in the simulator: each one read off the wire
    // is posted there under an id of its own.
    let mailbox = media::mailbox();
    let mut sender = RtpSender::new(m, Time::ZERO, end, f.rate, f.packet_size, rng, mailbox.clone());
    let mut nack_id = 0u64;
    let mut nacks = 0u64;
    socket.set_nonblocking(true).map_err(|e| format!("socket: {e}"))?;
    crate::relay::bigger_buffers(socket);
    precise_timers();
    let unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let clock = WallClock::start();
    let mut metrics = FlowMetrics::new(scenario.bin);
    let mut malformed = 0;
    let mut signals = 0;
    let mut last_seq = None;
    let mut out = Vec::with_capacity(2048);
    let mut buf = vec![0u8; 65_536];
    let fps = m.source.fps;
    let mut next_check = Time::ZERO;
    loop {
        let now = clock.now();
        if now >= end {
            break;
        }
        if now >= next_check {
            if should_stop() {
                break;
            }
            next_check = now + Duration::from_millis(50);
        }
        if sender.poll_timeout().is_some_and(|t| t <= now) {
            sender.handle_timeout(now);
        }
        while let Some(t) = sender.poll_transmit(now) {
            out.clear();
            let (frame, index, count) = (t.app >> 24, (t.app >> 12) & 0xfff, t.app & 0xfff);
            let header = RtpHeader {
                marker: t.app != PADDING && index + 1 == count,
                payload_type: PAYLOAD_TYPE,
                sequence_number: t.seq as u16,
                timestamp: if t.app == PADDING { 0 } else { (frame as f64 * 90_000.0 / fps) as u32 },
                ssrc: MEDIA_SSRC,
                csrcs: Vec::new(),
                transport_seq: Some(t.seq as u16),
            };
            header.encode(DEFAULT_TRANSPORT_SEQ_ID, &mut out).map_err(|e| format!("rtp: {e:?}"))?;
            out.extend_from_slice(&t.app.to_be_bytes());
            out.extend_from_slice(&unix.to_be_bytes());
            out.extend_from_slice(&now.as_nanos().to_be_bytes());
            out.resize((t.size.0 as usize).max(out.len()), 0);
            let _ = socket.send_to(&out, dest);
            metrics.on_sent(now, out.len() as u64);
        }
        loop {
            match socket.recv_from(&mut buf) {
                Ok((n, _)) => {
                    let now = clock.now();
                    if let Some(signal) = network_signal(&buf[..n]) {
                        // The access point's SCONE / NETWORK_SIGNAL datagram (`scone`, `scone-rtc`).
                        sender.handle_assist(now, &AssistFeedback::Signal(signal));
                        signals += 1;
                        continue;
                    }
                    if let Some(lost) = generic_nack(&buf[..n]) {
                        // Generic NACK (RFC 4585 §6.2.1): resend what the history still holds.
                        mailbox.lock().expect("the mailbox lock is never held across a panic").push_back((
                            nack_id,
                            // No receiver reports on these sockets yet, so no RTCP RTT: the
                            // sender's once-per-RTT rule does not hold back a resend.
                            media::RtcpMessage::Nack { lost, forward_delay: Duration::ZERO },
                        ));
                        let mut pkt = Packet::new(nack_id, FlowId(0), Bytes(n as u64), 0, now);
                        pkt.kind = lowlat_core::PacketKind::Feedback;
                        pkt.app = nack_id | lowlat_core::APP_NON_CC_FEEDBACK;
                        sender.handle_packet(now, &pkt);
                        nack_id += 1;
                        nacks += 1;
                        continue;
                    }
                    match rtcp_arrivals(&buf[..n], &mut last_seq) {
                        Some((report_time, arrivals)) => {
                            sender.handle_assist(now, &AssistFeedback::Report { report_time, arrivals })
                        }
                        None => malformed += 1,
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        let now = clock.now();
        let wake = sender.poll_timeout().unwrap_or(end).min(end).min(next_check);
        if wake > now {
            wait_readable(&[socket.as_raw_fd()], Some((wake - now).as_nanos()));
        }
    }
    Ok(SenderReport {
        cc: sender.cc_name().unwrap_or("none"),
        media: sender.media_metrics().unwrap_or_default(),
        metrics,
        malformed_feedback: malformed,
        signals,
        nacks,
        elapsed_s: clock.now().min(end).as_secs_f64(),
    })
}

/// Receives flow `flow`'s video on `socket` for `duration` after its first packet (or until
/// `should_stop`), sending feedback to where the media comes from.
pub fn run_receiver(
    scenario: &Scenario,
    flow: Option<&str>,
    socket: &UdpSocket,
    duration: Option<Duration>,
    mut should_stop: impl FnMut() -> bool,
) -> Result<ReceiverReport, String> {
    let f = media_flow(scenario, flow)?;
    let m = f.media.as_ref().expect("checked by media_flow");
    let end = Time::ZERO + duration.unwrap_or(scenario.duration);
    // The receiver leaves each report in its mailbox; it leaves here as real RTCP.
    let mailbox = media::mailbox();
    let mut receiver = RtpReceiver::new(m, Time::ZERO, mailbox.clone());
    socket.set_nonblocking(true).map_err(|e| format!("socket: {e}"))?;
    crate::relay::bigger_buffers(socket);
    precise_timers();
    let mut clock: Option<WallClock> = None;
    let mut peer: Option<SocketAddr> = None;
    let mut metrics = FlowMetrics::new(scenario.bin);
    let (mut malformed, mut feedback_sent, mut next_id, mut nacks_sent) = (0u64, 0u64, 0u64, 0u64);
    let mut last_seq: Option<u64> = None;
    let mut twcc = TwccBuilder::new(FEEDBACK_SSRC, MEDIA_SSRC);
    let mut out = Vec::with_capacity(1500);
    let mut buf = vec![0u8; 65_536];
    let fd = socket.as_raw_fd();
    let waiting_since = Instant::now();
    loop {
        let now = clock.map_or(Time::ZERO, |c| c.now());
        if clock.is_some() && now >= end {
            break;
        }
        if should_stop() {
            break;
        }
        if clock.is_none()
            && waiting_since.elapsed()
                > std::time::Duration::from_secs(30) + std::time::Duration::from_nanos(end.as_nanos())
        {
            return Err("no RTP packet arrived".into());
        }
        loop {
            let (n, src) = match socket.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => break,
            };
            let Ok((h, off, len)) = RtpHeader::decode(&buf[..n], DEFAULT_TRANSPORT_SEQ_ID) else {
                malformed += 1;
                continue;
            };
            let (Some(tseq), true) = (h.transport_seq, len >= STAMP) else {
                malformed += 1;
                continue;
            };
            let word =
                |i: usize| u64::from_be_bytes(buf[off + 8 * i..off + 8 * i + 8].try_into().expect("8 bytes"));
            let (app, unix, sent) = (word(0), word(1), word(2));
            let c = *clock.get_or_insert_with(|| {
                // The sender's clock zero, on this host's monotonic clock.
                let ago = SystemTime::now()
                    .duration_since(UNIX_EPOCH + std::time::Duration::from_nanos(unix))
                    .unwrap_or_default();
                WallClock::from_epoch(Instant::now().checked_sub(ago).unwrap_or_else(Instant::now))
            });
            peer = Some(src);
            let now = c.now();
            let diff = tseq.wrapping_sub(last_seq.unwrap_or(0) as u16) as i16 as i64;
            let seq = (last_seq.unwrap_or(0) as i64 + diff).max(0) as u64;
            last_seq = Some(last_seq.map_or(seq, |l| l.max(seq)));
            let mut pkt =
                Packet::new(next_id, FlowId(0), Bytes(n as u64), seq, Time(sent.min(now.as_nanos())));
            next_id += 1;
            pkt.app = app;
            receiver.handle_packet(now, &pkt);
            metrics.on_received(now, seq, n as u64, pkt.sent_at);
        }
        let Some(c) = clock else {
            wait_readable(&[fd], Some(50_000_000));
            continue;
        };
        let now = c.now();
        while let Some(_t) = receiver.poll_transmit(now) {
            let msg = mailbox.lock().expect("the lock is never held across a panic").pop_front();
            out.clear();
            match msg {
                Some((_, media::RtcpMessage::Report { arrivals: report, .. })) => {
                    encode_feedback(m.feedback_format, &mut twcc, &report, now, &mut out)
                }
                Some((_, media::RtcpMessage::Nack { lost, .. })) if !lost.is_empty() => {
                    // Invariant: the requester asks for 1 to 1000 packets at a time.
                    lowlat_wire::GenericNack::from_lost(FEEDBACK_SSRC, MEDIA_SSRC, &lost)
                        .encode(&mut out)
                        .expect("a NACK of 1 to 1000 packets encodes");
                    nacks_sent += 1;
                }
                _ => continue,
            }
            if let (Some(p), false) = (peer, out.is_empty()) {
                let _ = socket.send_to(&out, p);
                feedback_sent += 1;
            }
        }
        let wake = receiver.poll_timeout().unwrap_or(end).min(end).min(now + Duration::from_millis(50));
        if wake > now {
            wait_readable(&[fd], Some((wake - now).as_nanos()));
        }
    }
    Ok(ReceiverReport {
        media: receiver.media_metrics().unwrap_or_default(),
        metrics,
        malformed,
        feedback_sent,
        nacks_sent,
    })
}

/// One report as a compound RTCP datagram in `format` (as `lowlat_media`'s encoder sizes it).
fn encode_feedback(
    format: FeedbackFormat,
    twcc: &mut TwccBuilder,
    report: &[Arrival],
    now: Time,
    out: &mut Vec<u8>,
) {
    let Some(first) = report.first().map(|a| a.seq) else { return };
    let us = |t: Time| (t.as_nanos() / 1_000) as i64;
    match format {
        FeedbackFormat::TransportCc => {
            let arrivals: Vec<Option<i64>> = report.iter().map(|r| r.at.map(us)).collect();
            for fb in twcc.build(first as u16, &arrivals) {
                // Invariant: the builder only produces encodable packets.
                fb.encode(out).expect("built feedback encodes");
            }
        }
        FeedbackFormat::Rfc8888 => {
            let metrics = report
                .iter()
                .map(|r| r.at.map_or(CcfbMetric::lost(), |a| CcfbMetric::received(us(now) - us(a), r.ecn)))
                .collect();
            let rep = CcfbReport {
                sender_ssrc: FEEDBACK_SSRC,
                blocks: vec![CcfbBlock { media_ssrc: MEDIA_SSRC, begin_seq: first as u16, metrics }],
                report_timestamp: compact_ntp(us(now)),
            };
            // Invariant: a report of at most 65535 metrics encodes.
            rep.encode(out).expect("a report encodes");
        }
    }
}

fn ms_stats(samples: impl Iterator<Item = Duration>) -> lowlat_sim::results::Stats {
    let mut v: Vec<f64> = samples.map(|d| d.as_millis_f64()).collect();
    lowlat_sim::results::Stats::from_samples(&mut v)
}

fn kbps_bins(m: &FlowMetrics, rx: bool) -> Vec<f64> {
    let bin_s = m.bin.as_secs_f64();
    m.bins.iter().map(|b| (if rx { b.rx_bytes } else { b.tx_bytes }) as f64 * 8.0 / bin_s / 1e3).collect()
}

impl SenderReport {
    /// The sender's side of the results: controller, packets, rate per bin, RTT.
    pub fn summary_json(&self) -> String {
        let m = &self.metrics;
        let rtt_over = self.media.rtt.iter().filter(|d| d.as_millis_f64() > 200.0).count();
        serde_json::to_string_pretty(&serde_json::json!({
            "side": "sender", "cc": self.cc, "elapsed_s": self.elapsed_s,
            "packets_sent": m.sent_packets, "bytes_sent": m.sent_bytes,
            "send_kbps_mean": if self.elapsed_s > 0.0 { m.sent_bytes as f64 * 8.0 / self.elapsed_s / 1e3 } else { 0.0 },
            "frames_sent": self.media.frames_sent,
            "rtt_ms": ms_stats(self.media.rtt.iter().copied()),
            "ratio_rtt_over_200ms": if self.media.rtt.is_empty() { 0.0 } else { rtt_over as f64 / self.media.rtt.len() as f64 },
            "malformed_feedback": self.malformed_feedback, "network_signals": self.signals,
            "nacks_received": self.nacks, "retransmissions": self.media.retransmissions,
            "bin_s": m.bin.as_secs_f64(), "send_kbps": kbps_bins(m, false),
        }))
        .expect("plain data")
    }
}

impl ReceiverReport {
    /// The receiver's side of the results: the simulator's per-frame metrics, one-way delay, rate
    /// per bin.
    pub fn summary_json(&self) -> String {
        let m = &self.metrics;
        let frames = &self.media.frames;
        let span = match (frames.first(), frames.last()) {
            (Some(a), Some(z)) if z.0 > a.0 => (z.0 - a.0).as_secs_f64(),
            _ => 0.0,
        };
        let late = frames.iter().filter(|f| f.1.as_millis_f64() > 400.0).count();
        let owd = lowlat_sim::results::Stats::from_ns(&m.owd.histogram(), m.owd_sum_ns, Some(m.owd_max_ns));
        serde_json::to_string_pretty(&serde_json::json!({
            "side": "receiver", "packets_received": m.rx_packets, "bytes_received": m.rx_bytes,
            "loss_ratio": m.max_seq.map_or(0.0, |s| m.lost() as f64 / (s + 1) as f64),
            "owd_ms": owd, "frames_received": frames.len(),
            "frame_delay_ms": ms_stats(frames.iter().map(|f| f.1)),
            "fps_mean": if span > 0.0 { frames.len() as f64 / span } else { 0.0 },
            "ratio_frame_delay_over_400ms": if frames.is_empty() { 0.0 } else { late as f64 / frames.len() as f64 },
            "feedback_sent": self.feedback_sent, "nacks_sent": self.nacks_sent,
            "recovered": self.media.recovered, "malformed": self.malformed,
            "bin_s": m.bin.as_secs_f64(), "recv_kbps": kbps_bins(m, true),
        }))
        .expect("plain data")
    }
}
