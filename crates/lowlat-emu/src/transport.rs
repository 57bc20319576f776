//! lowlat's transport on real sockets (`lowlat send` / `lowlat receive` for a `bulk` flow): the
//! simulator's own sender (`lowlat_transport::Sender` with the flow's window controller, pacing,
//! loss recovery) and receiver (`lowlat_transport::Receiver`: ACK every second packet or after
//! `max_ack_delay`, at once on a gap), their packets in the QUIC-shaped format of [`crate::quic`].
//!
//! This is what FastAck and out-of-band Zhuge in the relay act on: they read the packet numbers
//! of the data packets and hold, drop or write ACK packets.

use crate::clock::{precise_timers, wait_readable, WallClock};
use crate::quic::{self, Datagram};
use lowlat_core::{Bytes, Duration, Time};
use lowlat_sim::scenario::FlowConfig;
use lowlat_sim::traffic::FlowMetrics;
use lowlat_sim::Scenario;
use lowlat_transport::{Receiver, ReceiverConfig, Sender, SenderConfig, SenderStats};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The bulk flow `id` (or the first one) of a scenario.
pub fn bulk_flow<'a>(scenario: &'a Scenario, id: Option<&str>) -> Result<&'a FlowConfig, String> {
    let f = match id {
        Some(id) => scenario.flows.iter().find(|f| f.id == id),
        None => scenario.flows.iter().find(|f| f.transport.is_some()),
    };
    let f = f.ok_or_else(|| {
        format!("{}: no bulk flow{}", scenario.source, id.map(|i| format!(" {i:?}")).unwrap_or_default())
    })?;
    match &f.transport {
        Some(t) if t.web.is_none() && t.downloads.is_none() => Ok(f),
        _ => Err(format!(
            "{}: flow {:?} is not a bulk flow (web and downloads flows are simulated only)",
            scenario.source, f.id
        )),
    }
}

/// Whether flow `id` (or, without one, the scenario's first flow) is a transport flow, so
/// `lowlat send`/`receive` speak lowlat's transport for it rather than RTP.
pub fn is_transport_flow(scenario: &Scenario, id: Option<&str>) -> bool {
    let f = match id {
        Some(id) => scenario.flows.iter().find(|f| f.id == id),
        None => scenario.flows.first(),
    };
    f.is_some_and(|f| f.transport.is_some())
}

/// What a transport sender measured.
#[derive(Debug)]
pub struct TransportSenderReport {
    /// The window controller's name.
    pub cc: &'static str,
    /// Packets sent, lost, acknowledged bytes.
    pub stats: SenderStats,
    /// Packets and bytes sent per bin.
    pub metrics: FlowMetrics,
    /// Smoothed and minimum RTT at the end.
    pub srtt: Duration,
    /// The smallest RTT seen.
    pub min_rtt: Duration,
    /// ACK packets read.
    pub acks: u64,
    /// Datagrams that were not lowlat transport ACK packets.
    pub malformed: u64,
    /// Wall seconds run.
    pub elapsed_s: f64,
}

/// What a transport receiver measured.
#[derive(Debug)]
pub struct TransportReceiverReport {
    /// Packets received, one-way delays, per bin.
    pub metrics: FlowMetrics,
    /// ACK packets sent.
    pub acks_sent: u64,
    /// Datagrams that were not lowlat transport data packets.
    pub malformed: u64,
}

/// Sends flow `flow`'s bulk transfer from `socket` to `dest` for `duration` (default: the
/// scenario's), reading ACKs on the same socket. `should_stop` is asked every 50 ms.
pub fn run_sender(
    scenario: &Scenario,
    flow: Option<&str>,
    socket: &UdpSocket,
    dest: SocketAddr,
    duration: Option<Duration>,
    mut should_stop: impl FnMut() -> bool,
) -> Result<TransportSenderReport, String> {
    let f = bulk_flow(scenario, flow)?;
    let t = f.transport.as_ref().expect("checked by bulk_flow");
    let cc = lowlat_sim::transport::window_controller(&t.cc, f.packet_size)
        .map_err(|e| format!("{}: flow {:?}: cc: {e}", scenario.source, f.id))?;
    let cfg = SenderConfig { packet_size: f.packet_size, size: t.size, ..SenderConfig::default() };
    let mut sender = Sender::new(cfg, cc);
    let end = Time::ZERO + duration.unwrap_or(scenario.duration);
    socket.set_nonblocking(true).map_err(|e| format!("socket: {e}"))?;
    crate::relay::bigger_buffers(socket);
    precise_timers();
    let unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let clock = WallClock::start();
    let mut metrics = FlowMetrics::new(scenario.bin);
    let (mut acks, mut malformed) = (0u64, 0u64);
    let mut out = Vec::with_capacity(2048);
    let mut buf = vec![0u8; 65_536];
    let mut next_check = Time::ZERO;
    let mut min_rtt: Option<Duration> = None;
    loop {
        let now = clock.now();
        if now >= end || sender.is_done() {
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
        while let Some((pn, size)) = sender.poll_transmit(now) {
            quic::encode_data(pn, unix, now.as_nanos(), size.0 as usize, &mut out);
            // A full socket buffer drops the datagram, as a full NIC queue would: loss recovery
            // sees it.
            let _ = socket.send_to(&out, dest);
            metrics.on_sent(now, out.len() as u64);
        }
        while let Ok((n, _)) = socket.recv_from(&mut buf) {
            match quic::decode(&buf[..n]) {
                Ok(Datagram::Ack { frame, .. }) => {
                    sender.on_ack(clock.now(), &frame);
                    acks += 1;
                    if sender.rtt().has_sample() {
                        let m = sender.rtt().min();
                        min_rtt = Some(min_rtt.map_or(m, |x| x.min(m)));
                    }
                }
                _ => malformed += 1,
            }
        }
        let now = clock.now();
        let wake = sender.poll_timeout().unwrap_or(end).min(end).min(next_check);
        if wake > now {
            wait_readable(&[socket.as_raw_fd()], Some((wake - now).as_nanos()));
        }
    }
    Ok(TransportSenderReport {
        cc: sender.controller().name(),
        stats: sender.stats(),
        metrics,
        srtt: sender.rtt().smoothed(),
        min_rtt: min_rtt.unwrap_or_default(),
        acks,
        malformed,
        elapsed_s: clock.now().min(end).as_secs_f64(),
    })
}

/// Receives flow `flow`'s transfer on `socket` for `duration` after its first packet (or until
/// `should_stop`), acknowledging to where the data comes from.
pub fn run_receiver(
    scenario: &Scenario,
    flow: Option<&str>,
    socket: &UdpSocket,
    duration: Option<Duration>,
    mut should_stop: impl FnMut() -> bool,
) -> Result<TransportReceiverReport, String> {
    bulk_flow(scenario, flow)?;
    let end = Time::ZERO + duration.unwrap_or(scenario.duration);
    let mut receiver = Receiver::new(ReceiverConfig::default());
    socket.set_nonblocking(true).map_err(|e| format!("socket: {e}"))?;
    crate::relay::bigger_buffers(socket);
    precise_timers();
    let mut clock: Option<WallClock> = None;
    let mut peer: Option<SocketAddr> = None;
    let mut metrics = FlowMetrics::new(scenario.bin);
    let (mut malformed, mut acks_sent, mut ack_pn) = (0u64, 0u64, 0u64);
    let mut largest: Option<u64> = None;
    let mut out = Vec::with_capacity(1500);
    let mut buf = vec![0u8; 65_536];
    let fd = socket.as_raw_fd();
    let waiting_since = Instant::now();
    loop {
        let now = clock.map_or(Time::ZERO, |c| c.now());
        if (clock.is_some() && now >= end) || should_stop() {
            break;
        }
        if clock.is_none()
            && waiting_since.elapsed()
                > std::time::Duration::from_secs(30) + std::time::Duration::from_nanos(end.as_nanos())
        {
            return Err("no transport packet arrived".into());
        }
        while let Ok((n, src)) = socket.recv_from(&mut buf) {
            let Ok(Datagram::Data { pn32, epoch_unix_ns, sent_ns }) = quic::decode(&buf[..n]) else {
                malformed += 1;
                continue;
            };
            let c = *clock.get_or_insert_with(|| {
                // The sender's clock zero, on this host's monotonic clock.
                let ago = SystemTime::now()
                    .duration_since(UNIX_EPOCH + std::time::Duration::from_nanos(epoch_unix_ns))
                    .unwrap_or_default();
                WallClock::from_epoch(Instant::now().checked_sub(ago).unwrap_or_else(Instant::now))
            });
            peer = Some(src);
            let now = c.now();
            let pn = quic::expand_pn(largest, pn32);
            largest = Some(largest.map_or(pn, |l| l.max(pn)));
            receiver.on_packet(now, pn);
            metrics.on_received(now, pn, n as u64, Time(sent_ns.min(now.as_nanos())));
        }
        let Some(c) = clock else {
            wait_readable(&[fd], Some(50_000_000));
            continue;
        };
        let now = c.now();
        while let Some(frame) = receiver.poll_ack(now) {
            quic::encode_ack(ack_pn, &frame, &mut out);
            ack_pn += 1;
            if let (Some(p), false) = (peer, out.is_empty()) {
                let _ = socket.send_to(&out, p);
                acks_sent += 1;
            }
        }
        let wake = receiver.poll_timeout().unwrap_or(end).min(end).min(now + Duration::from_millis(50));
        if wake > now {
            wait_readable(&[fd], Some((wake - now).as_nanos()));
        }
    }
    Ok(TransportReceiverReport { metrics, acks_sent, malformed })
}

fn kbps_bins(m: &FlowMetrics, rx: bool) -> Vec<f64> {
    let bin_s = m.bin.as_secs_f64();
    m.bins.iter().map(|b| (if rx { b.rx_bytes } else { b.tx_bytes }) as f64 * 8.0 / bin_s / 1e3).collect()
}

impl TransportSenderReport {
    /// The sender's side: controller, packets sent and lost, bytes acknowledged, RTT, rate per bin.
    pub fn summary_json(&self) -> String {
        let m = &self.metrics;
        let s = &self.stats;
        serde_json::to_string_pretty(&serde_json::json!({
            "side": "sender", "kind": "bulk", "cc": self.cc, "elapsed_s": self.elapsed_s,
            "packets_sent": m.sent_packets, "bytes_sent": m.sent_bytes,
            "send_kbps_mean": if self.elapsed_s > 0.0 { m.sent_bytes as f64 * 8.0 / self.elapsed_s / 1e3 } else { 0.0 },
            "packets_lost": s.packets_lost, "bytes_acked": s.bytes_acked,
            "goodput_kbps": if self.elapsed_s > 0.0 { s.bytes_acked as f64 * 8.0 / self.elapsed_s / 1e3 } else { 0.0 },
            "ptos": s.ptos, "congestion_events": s.congestion_events,
            "srtt_ms": self.srtt.as_millis_f64(), "min_rtt_ms": self.min_rtt.as_millis_f64(),
            "acks_received": self.acks, "malformed_feedback": self.malformed,
            "bin_s": m.bin.as_secs_f64(), "send_kbps": kbps_bins(m, false),
        }))
        .expect("plain data")
    }
}

impl TransportReceiverReport {
    /// The receiver's side: packets, one-way delay, loss, rate per bin.
    pub fn summary_json(&self) -> String {
        let m = &self.metrics;
        let owd = lowlat_sim::results::Stats::from_ns(&m.owd.histogram(), m.owd_sum_ns, Some(m.owd_max_ns));
        serde_json::to_string_pretty(&serde_json::json!({
            "side": "receiver", "kind": "bulk", "packets_received": m.rx_packets,
            "bytes_received": m.rx_bytes,
            "loss_ratio": m.max_seq.map_or(0.0, |s| m.lost() as f64 / (s + 1) as f64),
            "owd_ms": owd, "acks_sent": self.acks_sent, "malformed": self.malformed,
            "bin_s": m.bin.as_secs_f64(), "recv_kbps": kbps_bins(m, true),
        }))
        .expect("plain data")
    }
}

/// Bytes of the smallest data packet the format allows (the flow's packet size must be at least
/// this).
pub const MIN_PACKET: Bytes = Bytes(quic::DATA_MIN as u64);
