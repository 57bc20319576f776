//! Probing: libwebrtc's `ProbeController` (when to probe) and `ProbeBitrateEstimator` (what a probe
//! measured), goog_cc/probe_controller.cc and probe_bitrate_estimator.cc.
//!
//! Controller:
//! - At start, clusters at `initial_probes` (3x and 6x) the start rate (exponential probing).
//! - While waiting for their result (`probe_wait`, 1 s from the first probe packet), a target
//!   above `further_probe_threshold` (0.7) x the last cluster's rate starts a cluster at
//!   `further_probe_factor` (2) x the target, and so on; capped at `max_rate`, after which no
//!   further probe.
//! - A cluster is sent at its rate (the pacer pads when media runs short) for at least
//!   `probe_duration` (15 ms) and `probe_min_packets` (5).
//!
//! Estimator, once feedback covers a whole cluster:
//! - at least `probe_min_received_share` (80 %) of its packets must have arrived;
//! - send rate = bytes but the last packet's over the send interval, receive rate = bytes but the
//!   first arrival's over the receive interval; both intervals positive and at most 1 s;
//! - invalid if receive / send > `probe_max_valid_ratio` (2);
//! - result = min(send, receive), or `probe_target_utilization` (0.95) x receive when receive <
//!   `probe_unsaturated_ratio` (0.9) x send (the probe found the capacity; aim slightly below).
//!
//! Differences from libwebrtc: it re-evaluates a cluster on every feedback packet once 80 % of
//! its minimum packets and bytes arrived (the latest estimate of a report wins); this waits for
//! the report that covers the whole cluster. ALR probing (periodic probes every 5 s while
//! application-limited, probes when ALR ends or after a large drop) is not modelled: libwebrtc
//! enables periodic ALR probing only for screen-share streams (`WebRTC-ProbingScreenshareBwe`),
//! the other two need an ALR detector fed by the pacer's budget, which this sans-IO controller
//! does not see; lowlat's media sources are camera video.

use super::GccConfig;
use crate::{FeedbackReport, SentPacket};
use lowlat_core::{Bitrate, Time};
use std::collections::VecDeque;

/// One probe: packets sent at `target`; the receive rate of the cluster estimates the capacity.
#[derive(Clone, Copy, Debug)]
pub(super) struct ProbeCluster {
    pub target: Bitrate,
    first_seq: Option<u64>,
    last_seq: u64,
    packets: u32,
    bytes: u64,
    last_size: u64,
    first_send: Time,
    last_send: Time,
    done_sending: bool,
    // Receive side, from feedback.
    recv_packets: u32,
    recv_bytes: u64,
    first_recv_size: u64,
    first_arrival: Option<Time>,
    last_arrival: Time,
    reported_to: Option<u64>,
}

impl ProbeCluster {
    fn new(target: Bitrate) -> ProbeCluster {
        ProbeCluster {
            target,
            first_seq: None,
            last_seq: 0,
            packets: 0,
            bytes: 0,
            last_size: 0,
            first_send: Time::ZERO,
            last_send: Time::ZERO,
            done_sending: false,
            recv_packets: 0,
            recv_bytes: 0,
            first_recv_size: 0,
            first_arrival: None,
            last_arrival: Time::ZERO,
            reported_to: None,
        }
    }

    /// The estimator's result, bit/s (None: too few arrived, or an invalid measurement).
    fn result(&self, cfg: &GccConfig) -> Option<f64> {
        let first_arrival = self.first_arrival?;
        if f64::from(self.recv_packets) < cfg.probe_min_received_share * f64::from(self.packets)
            || self.recv_packets < 2
        {
            return None;
        }
        let send_s = (self.last_send - self.first_send).as_secs_f64();
        let recv_s = (self.last_arrival - first_arrival).as_secs_f64();
        if !(send_s > 0.0 && send_s <= 1.0 && recv_s > 0.0 && recv_s <= 1.0) {
            return None;
        }
        let send_rate = (self.bytes - self.last_size) as f64 * 8.0 / send_s;
        let recv_rate = (self.recv_bytes - self.first_recv_size) as f64 * 8.0 / recv_s;
        if recv_rate / send_rate > cfg.probe_max_valid_ratio {
            return None;
        }
        if recv_rate < cfg.probe_unsaturated_ratio * send_rate {
            return Some(cfg.probe_target_utilization * recv_rate);
        }
        Some(send_rate.min(recv_rate))
    }
}

/// The probe controller and estimator.
#[derive(Clone, Debug)]
pub(super) struct Prober {
    /// Clusters not yet evaluated, oldest first.
    clusters: VecDeque<ProbeCluster>,
    /// How many clusters at the front are done sending, which is the index of the one being
    /// sent: clusters are sent one after the other in order, so those done sending come first.
    /// Kept so the pacer's per-packet questions need no scan.
    sent: usize,
    /// While waiting for a batch's result: since when, and the target a further probe needs.
    waiting: Option<(Option<Time>, f64)>,
}

impl Prober {
    pub fn new(cfg: &GccConfig, start_bps: f64) -> Prober {
        let mut p = Prober { clusters: VecDeque::new(), sent: 0, waiting: None };
        let targets: Vec<Bitrate> = cfg
            .initial_probes
            .iter()
            .map(|m| Bitrate::from_bps_f64(start_bps * m).min(cfg.max_rate))
            .collect();
        p.initiate(cfg, &targets);
        p
    }

    fn initiate(&mut self, cfg: &GccConfig, targets: &[Bitrate]) {
        let Some(last) = targets.last() else { return };
        self.clusters.extend(targets.iter().map(|t| ProbeCluster::new(*t)));
        self.waiting =
            (*last < cfg.max_rate).then(|| (None, cfg.further_probe_threshold * last.as_bps_f64()));
    }

    /// The cluster being sent, if any.
    pub fn active(&self) -> Option<&ProbeCluster> {
        self.clusters.get(self.sent)
    }

    /// Whether a cluster is being sent ([`Prober::on_packet_sent`] has something to do).
    #[inline]
    pub fn is_sending(&self) -> bool {
        self.sent < self.clusters.len()
    }

    pub fn on_packet_sent(&mut self, cfg: &GccConfig, packet: &SentPacket) {
        let Some(c) = self.clusters.get_mut(self.sent) else { return };
        if c.first_seq.is_none() {
            c.first_seq = Some(packet.seq);
            c.first_send = packet.send_time;
            if let Some((since @ None, _)) = self.waiting.as_mut() {
                *since = Some(packet.send_time);
            }
        }
        c.last_seq = packet.seq;
        c.last_send = packet.send_time;
        c.last_size = packet.size.0;
        c.packets += 1;
        c.bytes += packet.size.0;
        let min_bytes = c.target.bytes_in(cfg.probe_duration).0;
        if c.packets >= cfg.probe_min_packets
            && c.bytes >= min_bytes
            && c.last_send - c.first_send >= cfg.probe_duration
        {
            c.done_sending = true;
            self.sent += 1;
        }
    }

    /// Records the report's probe packets; returns the newest result of the clusters it
    /// completes, bit/s.
    pub fn on_feedback(&mut self, cfg: &GccConfig, report: &FeedbackReport) -> Option<f64> {
        if self.clusters.is_empty() {
            return None; // the usual case after the first probes: no per-packet range walk
        }
        // Only the clusters done sending and the one being sent have packets.
        let started = (self.sent + 1).min(self.clusters.len());
        for p in &report.packets {
            for c in self.clusters.range_mut(..started) {
                let Some(first) = c.first_seq else { continue };
                if p.sent.seq < first || p.sent.seq > c.last_seq {
                    continue;
                }
                c.reported_to = Some(p.sent.seq);
                if let Some(a) = p.arrival {
                    if c.first_arrival.is_none_or(|f| a < f) {
                        c.first_arrival = Some(a);
                        c.first_recv_size = p.sent.size.0;
                    }
                    c.last_arrival = c.last_arrival.max(a);
                    c.recv_packets += 1;
                    c.recv_bytes += p.sent.size.0;
                }
            }
        }
        let mut result = None;
        while let Some(c) = self.clusters.front().copied() {
            if !c.done_sending || c.reported_to != Some(c.last_seq) {
                break;
            }
            self.clusters.pop_front();
            self.sent -= 1;
            result = c.result(cfg).or(result);
        }
        result
    }

    /// libwebrtc's `SetEstimatedBitrate`: a target above the threshold while waiting for a
    /// result probes further.
    pub fn on_estimate(&mut self, cfg: &GccConfig, target_bps: f64, now: Time) {
        let Some((since, threshold)) = self.waiting else { return };
        if since.is_some_and(|t| now - t > cfg.probe_wait) {
            self.waiting = None;
            return;
        }
        if target_bps > threshold && self.sent == self.clusters.len() {
            let next = Bitrate::from_bps_f64(target_bps * cfg.further_probe_factor).min(cfg.max_rate);
            self.initiate(cfg, &[next]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PacketResult;
    use lowlat_core::{Bytes, Duration};

    /// Sends 1250 B packets every 10 ms (1 Mbit/s) while a 1 Mbit/s cluster is active (it takes
    /// the first 5, over 40 ms) and reports them arriving `recv_gap` apart; returns the
    /// estimator's result.
    fn probe_once(recv_gap: Duration) -> Option<f64> {
        let cfg =
            GccConfig { initial_probes: vec![1.0], start_rate: Bitrate::mbps(1), ..GccConfig::default() };
        let mut p = Prober::new(&cfg, 1e6);
        let mut packets = Vec::new();
        for k in 0..10u64 {
            let sent = SentPacket { seq: k, size: Bytes(1250), send_time: Time::from_millis(10 * k) };
            p.on_packet_sent(&cfg, &sent);
            let arrival = Time::from_millis(50) + Duration::from_nanos(recv_gap.as_nanos() * k);
            packets.push(PacketResult { sent, arrival: Some(arrival), ecn: 0 });
        }
        assert!(p.active().is_none(), "the cluster is sent after 15 ms and 5 packets");
        p.on_feedback(&cfg, &FeedbackReport { packets, report_time: Time::from_millis(200) })
    }

    #[test]
    fn a_probe_received_slower_than_sent_found_the_capacity_and_aims_at_95_percent() {
        // Sent at 1 Mbit/s; received at 1 Mbit/s: the result is min(send, receive).
        let same = probe_once(Duration::from_millis(10)).unwrap();
        assert!((same - 1e6).abs() < 1.0, "{same}");
        // Received at 800 kbit/s (< 0.9 x send): 0.95 x 800 kbit/s.
        let slow = probe_once(Duration::from_micros(12_500)).unwrap();
        assert!((slow - 0.95 * 800e3).abs() < 1.0, "{slow}");
        // Received at 2.5 Mbit/s, more than twice the send rate: invalid.
        assert_eq!(probe_once(Duration::from_millis(4)), None);
    }

    #[test]
    fn the_tracked_active_cluster_is_the_first_one_not_done_sending() {
        // Initial clusters, further probes as the target grows, feedback that evaluates some
        // clusters (and loses the reports of others): after every step the tracked index names
        // the cluster a scan finds, and the clusters before it are exactly those done sending.
        let cfg =
            GccConfig { start_rate: Bitrate::kbps(100), max_rate: Bitrate::mbps(50), ..GccConfig::default() };
        let mut p = Prober::new(&cfg, 100e3);
        let check = |p: &Prober| {
            let scanned = p.clusters.iter().position(|c| !c.done_sending);
            assert_eq!(p.active().map(|c| c.target), scanned.map(|i| p.clusters[i].target));
            assert_eq!(scanned.unwrap_or(p.clusters.len()), p.sent);
            assert!(p.clusters.iter().skip(p.sent).all(|c| !c.done_sending));
        };
        let (mut pending, mut target, mut probes) = (Vec::new(), 100e3, 0);
        for k in 0..600u64 {
            let now = Time::from_millis(5 * k);
            let sent = SentPacket { seq: k, size: Bytes(1200), send_time: now };
            probes += usize::from(p.active().is_some());
            p.on_packet_sent(&cfg, &sent);
            pending.push(PacketResult { sent, arrival: Some(now + Duration::from_millis(40)), ecn: 0 });
            check(&p);
            if k % 20 == 19 {
                let packets = std::mem::take(&mut pending);
                // Every third report is lost: its clusters stay unevaluated for a while.
                if k % 60 != 59 {
                    p.on_feedback(&cfg, &FeedbackReport { packets, report_time: now });
                }
                check(&p);
                target *= 1.3;
                p.on_estimate(&cfg, target, now);
                check(&p);
            }
        }
        assert!(probes > 20, "only {probes} probe packets: the test exercised too little");
    }
}
