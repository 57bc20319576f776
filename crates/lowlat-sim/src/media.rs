//! RTP video flows in the simulator: the sender and receiver [`Endpoint`]s that connect the media
//! components (`lowlat-media`) and a rate controller (`lowlat-cc`) to the network.
//!
//! The sender encodes frames at the controller's target rate, packetises and paces them at its
//! pacing rate, and hands each feedback report to the controller. The receiver assembles frames and
//! sends feedback on its schedule. A feedback packet travels the reverse path with the size of its
//! content encoded (transport-cc or RFC 8888, by `lowlat-wire`); its content reaches the sender through the
//! flow's mailbox, looked up by the packet's id when (and only if) the packet arrives.

use crate::app::{AssistFeedback, Endpoint, Transmit};
use crate::scenario::registry::{external_config, is_external_controller};
use crate::scenario::MediaConfig;
use lowlat_cc::{ExternalHandle, FeedbackReport, PacketResult, RateController, SentPacket};
use lowlat_core::rng::Rng;
use lowlat_core::{Bitrate, Bytes, Duration, Packet, Time};
use lowlat_media::pacer::{Pacer, PacerConfig};
use lowlat_media::receiver::{Arrival, FeedbackCollector, FeedbackEncoder, FrameAssembler};
use lowlat_media::source::VideoSource;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Reports in flight from receiver to sender: `(id, report time, per-sequence arrivals)`.
pub type Mailbox = Arc<Mutex<VecDeque<(u64, (Time, Vec<Arrival>))>>>;

/// What a media endpoint measured, read once at the end of the run.
#[derive(Clone, Debug, Default)]
pub struct MediaMetrics {
    /// Round-trip samples (one per feedback report).
    pub rtt: Vec<Duration>,
    /// `(completion, delay)` of every complete frame.
    pub frames: Vec<(Time, Duration)>,
    /// Frames the source produced.
    pub frames_sent: u64,
    /// Packets the sender queue discarded.
    pub discarded_packets: u64,
    /// Packets the feedback reported as arrived with CE (RFC 8888 or an ACK_ECN count).
    pub ce_reported: u64,
}

/// Frame id, packet index and packet count in one `Packet::app` word (40 + 12 + 12 bits).
pub(crate) fn pack(frame: u64, index: u16, count: u16) -> u64 {
    (frame << 24) | ((index as u64 & 0xfff) << 12) | (count as u64 & 0xfff)
}

pub(crate) fn unpack(app: u64) -> (u64, u16) {
    (app >> 24, (app & 0xfff) as u16)
}

/// The packet index within its frame.
pub(crate) fn unpack_index(app: u64) -> u16 {
    ((app >> 12) & 0xfff) as u16
}

/// The `app` word of a padding packet (GCC's probes): carries no frame.
const PADDING: u64 = u64::MAX;

/// Builds the controller a scenario names, with its `cc_params` overrides for that controller
/// (the builders are the scenario registry's, [`crate::scenario::registry`]).
pub use crate::scenario::registry::rate_controller as controller;

/// The sending side of a video flow.
#[derive(Debug)]
pub struct RtpSender {
    source: VideoSource,
    pacer: Pacer,
    cc: Box<dyn RateController>,
    /// The driver's handle when `cc` is an external controller.
    external: Option<ExternalHandle>,
    stop: Time,
    pause: Option<(Time, Time)>,
    /// Sent packets not yet covered by feedback, from sequence number `history_base`.
    history: VecDeque<SentPacket>,
    history_base: u64,
    next_seq: u64,
    mailbox: Mailbox,
    metrics: MediaMetrics,
    /// Size of a padding packet.
    padding_size: Bytes,
    /// The latest instant the sender was driven at (for read-outs that take no `now`).
    last_now: Time,
    /// ECN bits its media packets carry.
    ecn: u8,
}

impl RtpSender {
    /// A sender starting at `start`, stopping at `stop`.
    pub fn new(
        media: &MediaConfig,
        start: Time,
        stop: Time,
        start_rate: Bitrate,
        mtu: Bytes,
        rng: Rng,
        mailbox: Mailbox,
    ) -> RtpSender {
        let (cc, external): (Box<dyn RateController>, _) = if is_external_controller(&media.cc) {
            let (cc, handle) = external_config(media, start_rate).build();
            (Box::new(cc), Some(handle))
        } else {
            // Invariant: the scenario validator built this controller once already.
            (controller(media, start_rate).expect("controller settings were validated"), None)
        };
        let burst = cc.pacing_burst().unwrap_or(PacerConfig::default().burst);
        RtpSender {
            source: VideoSource::new(media.source.clone(), start, start_rate, rng),
            pacer: Pacer::new(PacerConfig { mtu_payload: mtu, burst, ..PacerConfig::default() }),
            cc,
            external,
            stop,
            pause: media.pause,
            history: VecDeque::new(),
            history_base: 0,
            next_seq: 0,
            mailbox,
            metrics: MediaMetrics::default(),
            padding_size: Bytes(mtu.0 + PacerConfig::default().overhead.0),
            last_now: start,
            ecn: 0,
        }
    }

    /// Sends its media packets with ECN codepoint `ecn` (padding too: it shares the queue).
    pub fn with_ecn(mut self, ecn: lowlat_core::Ecn) -> RtpSender {
        self.ecn = ecn.bits();
        self
    }

    /// The codepoint its packets carry: the flow's `ecn` key when set, else what the controller
    /// asks for (SCReAM v2 in L4S mode sends ECT(1)).
    fn codepoint(&self) -> u8 {
        if self.ecn != 0 {
            self.ecn
        } else {
            self.cc.ecn_codepoint()
        }
    }

    /// Whether the controller's window holds back the packet at the head of the queue.
    fn window_closed(&self, now: Time) -> bool {
        self.pacer.front_size().is_some_and(|size| !self.cc.can_send(now, size))
    }

    fn record_sent(&mut self, now: Time, size: Bytes) -> SentPacket {
        let sent = SentPacket { seq: self.next_seq, size, send_time: now };
        self.next_seq += 1;
        self.history.push_back(sent);
        self.cc.on_packet_sent(now, &sent);
        sent
    }

    /// Hands one feedback report to the controller.
    fn on_report(&mut self, now: Time, report_time: Time, arrivals: &[Arrival]) {
        let mut packets = Vec::with_capacity(arrivals.len());
        for a in arrivals {
            if let Some(sent) =
                a.seq.checked_sub(self.history_base).and_then(|i| self.history.get(i as usize))
            {
                self.metrics.ce_reported += u64::from(a.ecn == 3);
                packets.push(PacketResult { sent: *sent, arrival: a.at, ecn: a.ecn });
            }
        }
        // Everything up to the report's last sequence number is settled.
        if let Some(last) = packets.last().map(|p| p.sent.seq) {
            while self.history_base <= last && self.history.pop_front().is_some() {
                self.history_base += 1;
            }
        }
        let report = FeedbackReport { packets, report_time };
        if let Some(rtt) = report.rtt_sample(now) {
            self.metrics.rtt.push(rtt);
        }
        self.last_now = now;
        self.cc.on_send_queue(now, self.pacer.queued_bytes(), self.pacer.queue_delay(now));
        self.cc.on_feedback(now, &report);
    }

    fn next_frame_time(&self) -> Option<Time> {
        Some(self.source.poll_timeout()).filter(|&t| t < self.stop)
    }
}

impl Endpoint for RtpSender {
    fn external_controller(&self) -> Option<ExternalHandle> {
        self.external.clone()
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        let Some((report_time, arrivals)) = crate::transport::take_by_id(&self.mailbox, pkt.app) else {
            return;
        };
        self.on_report(now, report_time, &arrivals);
    }

    fn handle_assist(&mut self, now: Time, feedback: &AssistFeedback) {
        if let AssistFeedback::Signal(signal) = feedback {
            self.last_now = now;
            self.cc.on_send_queue(now, self.pacer.queued_bytes(), self.pacer.queue_delay(now));
            self.cc.on_network_signal(now, signal);
            return;
        }
        if let AssistFeedback::Report { report_time, arrivals } = feedback {
            // The receiver's own reports were dropped on the way: what they left in the mailbox
            // is stale.
            self.mailbox.lock().expect("the mailbox lock is never held across a panic").clear();
            // The AP's reports carry no ECN (Zhuge predicts arrival times only).
            let arrivals: Vec<Arrival> =
                arrivals.iter().map(|&(seq, at)| Arrival { seq, at, ecn: 0 }).collect();
            self.on_report(now, *report_time, &arrivals);
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        self.last_now = now;
        self.cc.handle_timeout(now);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        while self.next_frame_time().is_some_and(|t| t <= now) {
            self.source.set_target(self.cc.target_bitrate());
            if let Some(frame) = self.source.poll_frame(now) {
                if self.pause.is_some_and(|(from, to)| (from..to).contains(&frame.capture_time)) {
                    continue; // paused: the frame is never encoded
                }
                self.metrics.frames_sent += 1;
                self.pacer.enqueue_frame(now, &frame);
            }
        }
        self.last_now = now;
        self.pacer.discard_stale(now);
        let rate = self.cc.pacing_rate();
        if self.window_closed(now) {
            return None;
        }
        if let Some(p) = self.pacer.poll_transmit(now, rate) {
            let sent = self.record_sent(now, p.size);
            let app = pack(p.frame, p.index, p.frame_packets);
            return Some(Transmit { size: p.size, seq: sent.seq, app, ecn: self.codepoint() });
        }
        if self.cc.wants_padding(now)
            && self.pacer.is_empty()
            && self.cc.can_send(now, self.padding_size)
            && self.pacer.poll_padding(now, rate, self.padding_size)
        {
            let sent = self.record_sent(now, self.padding_size);
            return Some(Transmit { size: sent.size, seq: sent.seq, app: PADDING, ecn: self.codepoint() });
        }
        None
    }

    fn cc_name(&self) -> Option<&'static str> {
        Some(self.cc.name())
    }

    fn media_metrics(&self) -> Option<MediaMetrics> {
        let mut m = self.metrics.clone();
        m.discarded_packets = self.pacer.discarded_packets();
        Some(m)
    }

    fn poll_timeout(&self) -> Option<Time> {
        let now = self.last_now;
        let rate = self.cc.pacing_rate();
        // A closed window opens only with feedback or the controller's own timer.
        let send = if self.window_closed(now) {
            None
        } else if self.pacer.is_empty() {
            self.cc.wants_padding(now).then(|| self.pacer.next_send_time(rate)).flatten()
        } else {
            self.pacer.poll_timeout(rate)
        };
        [self.next_frame_time(), send, self.cc.poll_timeout()].into_iter().flatten().min()
    }
}

/// The receiving side of a video flow.
#[derive(Debug)]
pub struct RtpReceiver {
    assembler: FrameAssembler,
    collector: FeedbackCollector,
    encoder: FeedbackEncoder,
    start: Time,
    fps: f64,
    next_report_id: u64,
    mailbox: Mailbox,
}

impl RtpReceiver {
    /// A receiver for frames captured from `start` at `fps`.
    pub fn new(media: &MediaConfig, start: Time, mailbox: Mailbox) -> RtpReceiver {
        RtpReceiver {
            assembler: FrameAssembler::default(),
            collector: FeedbackCollector::new(media.feedback_schedule()),
            encoder: FeedbackEncoder::new(media.feedback_format),
            start,
            fps: media.source.fps,
            next_report_id: 0,
            mailbox,
        }
    }
}

impl Endpoint for RtpReceiver {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        self.collector.on_packet_ecn(now, pkt.seq, pkt.ecn);
        if pkt.app == PADDING {
            return;
        }
        let (frame, count) = unpack(pkt.app);
        // The capture clock is the source's: frame k is captured at start + k / fps.
        let capture = self.start + Duration::from_secs_f64(frame as f64 / self.fps);
        self.assembler.on_packet(now, frame, count, capture);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        let mut report = self.collector.poll_report(now)?;
        if !self.encoder.carries_ecn() {
            // Transport-cc has no ECN field: the marks are lost on the way back.
            report.iter_mut().for_each(|a| a.ecn = 0);
        }
        let size = self.encoder.datagram_size(&report, now);
        let id = self.next_report_id;
        self.next_report_id += 1;
        self.mailbox
            .lock()
            .expect("the mailbox lock is never held across a panic")
            .push_back((id, (now, report)));
        Some(Transmit { size, seq: id, app: id, ecn: 0 })
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.collector.poll_timeout()
    }

    fn last_payload(&self) -> Option<&[u8]> {
        Some(self.encoder.last_encoded())
    }

    fn media_metrics(&self) -> Option<MediaMetrics> {
        Some(MediaMetrics { frames: self.assembler.completed.clone(), ..MediaMetrics::default() })
    }
}

/// A new mailbox for one flow.
pub fn mailbox() -> Mailbox {
    Arc::new(Mutex::new(VecDeque::new()))
}
