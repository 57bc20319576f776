//! RTP video flows in the simulator: the sender and receiver [`Endpoint`]s that connect the media
//! components (`lowlat-media`) and a rate controller (`lowlat-cc`) to the network.
//!
//! The sender encodes frames at the controller's target rate, packetises and paces them at its
//! pacing rate, and hands each feedback report to the controller. The receiver assembles frames and
//! sends feedback on its schedule. A feedback packet travels the reverse path with the size of its
//! content encoded (transport-cc or RFC 8888, by `lowlat-wire`); its content reaches the sender through the
//! flow's mailbox, looked up by the packet's id when (and only if) the packet arrives.
//!
//! With `nack = true` the receiver also asks for lost packets with RTCP generic NACK (RFC 4585,
//! sized by `lowlat-wire`) and the sender retransmits them from its history through the pacer
//! (RTX, RFC 4588): each media packet carries a 16-bit media sequence number and an RTX flag in
//! its `app` word, while its transport-wide sequence number is new, so the congestion-control
//! feedback (the receiver's, or Zhuge's at the AP) covers retransmissions like any media packet.
//! Both ends use the RTT RTCP reports would give (it includes the downlink queue, which Zhuge's
//! feedback skips): the receiver learns one every second (XR RRTR/DLRR: the forward delay of its
//! latest media packet plus the reverse path's, taken as the forward path's smallest, the
//! propagation being symmetric) and repeats a NACK after the largest of the last 1.5 s; the sender
//! takes each NACK's (the receiver's latest forward delay, as a receiver report's LSR/DLSR gives
//! it, plus the NACK's own transit) for its history's once-per-RTT rule, and caps retransmissions
//! at its target rate over 500 ms (libwebrtc's rules, `lowlat_media::nack`).
//!
//! With `repair = "timeout"` (the Zhuge artifact's sender, `lowlat_media::timeout_rtx`) the
//! receiver acknowledges every media packet it gets with a small ACK (which Zhuge's AP passes
//! like a NACK), and the sender resends a frame's unacknowledged packets, ahead of new media,
//! when one of them is unacknowledged for longer than srtt + 4 RTT deviations (+ the frame's
//! packets x the receiver's inter-arrival), until the frame is 1 s old. The sender's RTT samples
//! are then its ACKs' (the artifact's `UpdateRTT`): they cross the downlink queue whoever writes
//! the congestion feedback.

use crate::app::{AssistFeedback, Endpoint, Transmit};
use crate::scenario::registry::{external_config, is_external_controller};
use crate::scenario::{MediaConfig, Repair};
use lowlat_cc::{ExternalHandle, FeedbackReport, PacketResult, RateController, SentPacket};
use lowlat_core::rng::Rng;
use lowlat_core::{Bitrate, Bytes, Duration, Packet, Time, APP_NON_CC_FEEDBACK};
use lowlat_media::nack::{NackConfig, NackRequester, RetransmissionLimiter, SentHistory};
use lowlat_media::pacer::{Pacer, PacerConfig, RtpPacket};
use lowlat_media::receiver::{Arrival, FeedbackCollector, FeedbackEncoder, FrameAssembler};
use lowlat_media::source::VideoSource;
use lowlat_media::timeout_rtx::{AckResponder, TimeoutRetransmitter, TimeoutRtxConfig};
use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Arc, Mutex, OnceLock};

/// What an RTCP packet from the receiver says.
#[derive(Clone, Debug, PartialEq)]
pub enum RtcpMessage {
    /// Congestion-control feedback: its time and the per-sequence arrivals.
    Report {
        /// When the receiver built it.
        report_time: Time,
        /// Per transport-wide sequence number.
        arrivals: Vec<Arrival>,
    },
    /// A generic NACK: the media sequence numbers asked for again.
    Nack {
        /// The missing media sequence numbers.
        lost: Vec<u16>,
        /// The forward one-way delay of the receiver's latest media packet (what a receiver
        /// report's LSR/DLSR lets the sender compute an RTT from).
        forward_delay: Duration,
    },
    /// With `repair = "timeout"`: one media packet arrived (the artifact's per-packet ACK).
    Ack {
        /// Its frame.
        frame: u64,
        /// Its index in the frame.
        index: u16,
        /// The transport-wide sequence number of the packet that triggered it (the artifact's
        /// `last_pkt_id`, for the RTT).
        seq: u64,
        /// The receiver's inter-arrival within its last complete frame.
        dispersion: Duration,
    },
}

/// RTCP in flight from receiver to sender, by increasing id (it dereferences to that queue),
/// with the per-packet ACKs of `repair = "timeout"` kept apart in [`AckSlots`]: one per media
/// packet, they cost a lock and a queue entry at each end.
#[derive(Clone, Debug, Default)]
pub struct Mailbox {
    messages: Arc<Mutex<VecDeque<(u64, RtcpMessage)>>>,
    acks: Arc<OnceLock<AckSlots>>,
}

impl std::ops::Deref for Mailbox {
    type Target = Mutex<VecDeque<(u64, RtcpMessage)>>;

    fn deref(&self) -> &Self::Target {
        &self.messages
    }
}

/// The content of an ACK (`RtcpMessage::Ack`) as [`AckSlots`] hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AckContent {
    frame: u64,
    index: u16,
    seq: u64,
    dispersion: Duration,
}

/// ACKs by id, ACK `id` in slot `id % ACK_SLOTS` while that slot is free; one whose slot is still
/// taken (an ACK lost on the way, or thousands in flight) goes into the messages as an
/// `RtcpMessage::Ack`, and the sender looks there for an ACK its slot does not hold, so every ACK
/// is found as before. Atomics only because endpoints must be `Sync` (the loads and stores are
/// plain moves); the sender and receiver of a flow are driven by one thread.
struct AckSlots(Box<[AckSlot]>);

/// One slot of [`AckSlots`]: the ACK's id plus one (0: free), and its content.
#[derive(Default)]
struct AckSlot {
    id: AtomicU64,
    frame_index: AtomicU64,
    seq: AtomicU64,
    dispersion: AtomicU64,
}

/// Slots of [`AckSlots`] (a power of two): far more than the ACKs in flight at once.
const ACK_SLOTS: u64 = 4096;

impl std::fmt::Debug for AckSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AckSlots").field("slots", &self.0.len()).finish()
    }
}

impl Mailbox {
    /// Posts ACK `id` (the receiver gives out ids in order).
    #[inline]
    fn post_ack(&self, id: u64, ack: AckContent) {
        let slots = self.acks.get_or_init(|| AckSlots((0..ACK_SLOTS).map(|_| AckSlot::default()).collect()));
        let slot = &slots.0[(id % ACK_SLOTS) as usize];
        if slot.id.load(Acquire) == 0 {
            slot.frame_index.store(ack.frame << 16 | u64::from(ack.index), Relaxed);
            slot.seq.store(ack.seq, Relaxed);
            slot.dispersion.store(ack.dispersion.as_nanos(), Relaxed);
            slot.id.store(id + 1, Release);
            return;
        }
        let AckContent { frame, index, seq, dispersion } = ack;
        self.lock()
            .expect("the mailbox lock is never held across a panic")
            .push_back((id, RtcpMessage::Ack { frame, index, seq, dispersion }));
    }

    /// Takes ACK `id` from its slot, if the slot holds it (else it may be among the messages).
    #[inline]
    fn take_ack(&self, id: u64) -> Option<AckContent> {
        let slot = &self.acks.get()?.0[(id % ACK_SLOTS) as usize];
        if slot.id.load(Acquire) != id.wrapping_add(1) {
            return None;
        }
        let frame_index = slot.frame_index.load(Relaxed);
        let ack = AckContent {
            frame: frame_index >> 16,
            index: frame_index as u16,
            seq: slot.seq.load(Relaxed),
            dispersion: Duration(slot.dispersion.load(Relaxed)),
        };
        slot.id.store(0, Release);
        Some(ack)
    }
}

/// What a media endpoint measured, read once at the end of the run.
#[derive(Clone, Debug, Default)]
pub struct MediaMetrics {
    /// Round-trip samples (one per feedback report).
    pub rtt: Vec<Duration>,
    /// When the sender took each sample of `rtt` (empty if `rtt_at_off`).
    pub rtt_at: Vec<Time>,
    /// The run builds no table of the RTT samples' instants (`sender_rtt`): `rtt_at` stays empty
    /// (it would hold 8 bytes per ACK, millions in a long run of a window controller).
    pub rtt_at_off: bool,
    /// `(completion, delay)` of every complete frame.
    pub frames: Vec<(Time, Duration)>,
    /// The frame id of each entry of `frames`.
    pub frame_ids: Vec<u64>,
    /// `(frame, arrival)` each time a packet of a frame newer than any before arrived
    /// ([`FrameAssembler::newest`]).
    pub newest_frames: Vec<(u64, Time)>,
    /// Frames the source produced.
    pub frames_sent: u64,
    /// Packets the sender queue discarded.
    pub discarded_packets: u64,
    /// Packets the feedback reported as arrived with CE (RFC 8888 or an ACK_ECN count).
    pub ce_reported: u64,
    /// Retransmissions sent (RTX), with `nack = true`.
    pub retransmissions: u64,
    /// NACK packets the receiver sent, with `nack = true`.
    pub nacks_sent: u64,
    /// Lost packets recovered by a retransmission, with `nack = true`.
    pub recovered: u64,
}

impl MediaMetrics {
    /// An RTT sample taken at `now` (its instant kept unless `rtt_at_off`).
    #[inline]
    pub fn record_rtt(&mut self, now: Time, rtt: Duration) {
        self.rtt.push(rtt);
        if !self.rtt_at_off {
            self.rtt_at.push(now);
        }
    }
}

/// Frame id, packet index and packet count in one `Packet::app` word (bits 46-24, 23-12 and
/// 11-0: frame ids wrap after 2^23 frames, 39 h at 60 frame/s).
pub(crate) fn pack(frame: u64, index: u16, count: u16) -> u64 {
    ((frame & FRAME_MASK) << 24) | ((index as u64 & 0xfff) << 12) | (count as u64 & 0xfff)
}

const FRAME_MASK: u64 = (1 << 23) - 1;
/// The RTX flag of the `app` word: a retransmission.
const RTX_BIT: u64 = 1 << 47;

/// [`pack`] with the media (RTP) sequence number in bits 63-48 and the RTX flag in bit 47.
fn pack_media(seq: u64, rtx: bool, frame: u64, index: u16, count: u16) -> u64 {
    ((seq & 0xffff) << 48) | if rtx { RTX_BIT } else { 0 } | pack(frame, index, count)
}

/// The media sequence number and RTX flag of a media packet's `app` word.
fn unpack_media(app: u64) -> (u16, bool) {
    ((app >> 48) as u16, app & RTX_BIT != 0)
}

pub(crate) fn unpack(app: u64) -> (u64, u16) {
    ((app >> 24) & FRAME_MASK, (app & 0xfff) as u16)
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

/// The earlier of two optional instants (`None`: never).
#[inline]
fn earliest(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// A sender's rate controller, with its pacing rate remembered between the calls that may change
/// it. The sender reads the pacing rate several times per packet (each `poll_transmit` and
/// `poll_timeout`), and some controllers work it out from several terms each time; between two
/// calls that take the controller mutably it cannot change (a `RateController` reads no clock,
/// and `pacing_rate` takes `&self`). Every mutable call goes through [`Controller::get_mut`],
/// which forgets the remembered rate (there is no `DerefMut`, so no other way compiles), but
/// [`Controller::on_packet_sent`] and [`Controller::handle_timeout`], which keep it for a
/// controller whose sends or timer leave it alone. An external controller's state is changed
/// through its handle, from outside: never remembered.
#[derive(Debug)]
struct Controller {
    cc: Box<dyn RateController>,
    /// The pacing rate plus one as last read; 0: not known (`AtomicU64` only because endpoints
    /// must be `Sync`; relaxed loads and stores are plain moves).
    pacing: std::sync::atomic::AtomicU64,
    /// Whether the rate may be remembered (not an external controller).
    cacheable: bool,
    /// Whether the remembered rate outlives a sent packet
    /// ([`RateController::pacing_rate_ignores_sends`]): the poll after a send then reads no rate.
    kept_across_sends: bool,
    /// Whether it outlives a wake-up ([`RateController::pacing_rate_ignores_timeouts`]).
    kept_across_timeouts: bool,
    /// Whether `can_send` may say no ([`RateController::never_blocks_sends`] false): asked
    /// before each packet only then (GCC was asked twice per packet for a constant yes).
    windowed: bool,
    /// Whether `wants_padding` may say yes ([`RateController::never_pads`] false): asked at
    /// each poll only then.
    pads: bool,
    /// Whether the controller has a timer ([`RateController::has_no_timer`] false): its
    /// `poll_timeout` and `handle_timeout` are called only then.
    timer: bool,
}

impl Controller {
    fn new(cc: Box<dyn RateController>, cacheable: bool) -> Controller {
        let kept_across_sends = cacheable && cc.pacing_rate_ignores_sends();
        let kept_across_timeouts = cacheable && cc.pacing_rate_ignores_timeouts();
        let windowed = !cc.never_blocks_sends();
        let pads = !cc.never_pads();
        let timer = !cc.has_no_timer();
        Controller {
            cc,
            pacing: std::sync::atomic::AtomicU64::new(0),
            cacheable,
            kept_across_sends,
            kept_across_timeouts,
            windowed,
            pads,
            timer,
        }
    }

    /// [`RateController::handle_timeout`], keeping the remembered rate where the controller
    /// allows.
    #[inline]
    fn handle_timeout(&mut self, now: Time) {
        if !self.timer {
            return;
        }
        if self.kept_across_timeouts {
            self.cc.handle_timeout(now);
        } else {
            self.get_mut().handle_timeout(now);
        }
    }

    /// [`RateController::on_packet_sent`], keeping the remembered rate where the controller
    /// allows.
    #[inline]
    fn on_packet_sent(&mut self, now: Time, sent: &SentPacket) {
        if self.kept_across_sends {
            self.cc.on_packet_sent(now, sent);
        } else {
            self.get_mut().on_packet_sent(now, sent);
        }
    }

    /// [`RateController::wants_padding`], not asked of a controller that never pads.
    #[inline]
    fn wants_padding(&self, now: Time) -> bool {
        self.pads && self.cc.wants_padding(now)
    }

    /// [`RateController::poll_timeout`], not asked of a controller without a timer.
    #[inline]
    fn poll_timeout(&self) -> Option<Time> {
        if self.timer {
            self.cc.poll_timeout()
        } else {
            None
        }
    }

    /// The controller, for a call that may change it: the remembered pacing rate is dropped.
    #[inline]
    fn get_mut(&mut self) -> &mut dyn RateController {
        *self.pacing.get_mut() = 0;
        &mut *self.cc
    }

    /// [`RateController::pacing_rate`], read once per change of the controller.
    #[inline]
    fn pacing_rate(&self) -> Bitrate {
        use std::sync::atomic::Ordering::Relaxed;
        let known = self.pacing.load(Relaxed);
        if known != 0 {
            return Bitrate(known - 1);
        }
        let rate = self.cc.pacing_rate();
        if self.cacheable {
            // u64::MAX + 1 does not fit: such a rate is read afresh every time.
            self.pacing.store(rate.as_bps().wrapping_add(1), Relaxed);
        }
        rate
    }
}

impl std::ops::Deref for Controller {
    type Target = dyn RateController;

    fn deref(&self) -> &Self::Target {
        &*self.cc
    }
}

/// The sending side of a video flow.
#[derive(Debug)]
pub struct RtpSender {
    source: VideoSource,
    pacer: Pacer,
    cc: Controller,
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
    /// With NACK: the sent media packets, for retransmission.
    sent_media: Option<SentHistory>,
    /// Retransmitted bits per 100 ms over the last second (libwebrtc measures its NACK rate over
    /// 1 s), indexed by the 100 ms slot number modulo 10, and the slot last written.
    rtx_bits: [u64; 10],
    rtx_slot: u64,
    /// With NACK: retransmissions capped at the target rate over 500 ms.
    rtx_limiter: RetransmissionLimiter,
    /// The report handed to the controller, its packet list reused from report to report (a
    /// report per millisecond under Zhuge allocated one list each).
    report: FeedbackReport,
    /// Scratch: the arrivals of a report built at the AP.
    assist_arrivals: Vec<Arrival>,
    /// With `repair = "timeout"`: the unacknowledged packets and the retransmission timer.
    timeout_rtx: Option<TimeoutRetransmitter>,
    /// Scratch: the packets a timeout check resends.
    rtx_batch: Vec<RtpPacket>,
    /// Whether reports from the AP (Zhuge) have arrived: the receiver's dispersion is then
    /// overwritten by theirs (0) every millisecond.
    assisted: bool,
    /// The pacer's discarded count as last seen (a flush drops queued retransmissions).
    pacer_discarded: u64,
    /// Under Zhuge: the mailbox entries with smaller ids hold no receiver report (those were
    /// dropped at the AP's reports before).
    mailbox_checked: u64,
    /// Messages with smaller ids were dropped from the mailbox by a report that came after them
    /// (`take_by_id`): an ACK below it is ignored whether it is in a slot or was among them.
    dropped_below: u64,
}

/// The slots of the retransmission-rate window.
const RTX_SLOT: Duration = Duration::from_millis(100);

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
            // Invariant: the scenario validator built this controller once already.
            let (cc, handle) =
                external_config(media, start_rate).build().expect("controller settings were validated");
            (Box::new(cc), Some(handle))
        } else {
            // Invariant: the scenario validator built this controller once already.
            (controller(media, start_rate).expect("controller settings were validated"), None)
        };
        let burst = cc.pacing_burst().unwrap_or(PacerConfig::default().burst);
        RtpSender {
            source: VideoSource::new(media.source.clone(), start, start_rate, rng),
            pacer: Pacer::new(PacerConfig { mtu_payload: mtu, burst, ..PacerConfig::default() }),
            cc: Controller::new(cc, external.is_none()),
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
            sent_media: (media.repair == Repair::Nack)
                .then(|| SentHistory::new(NackConfig::default().history_packets)),
            rtx_bits: [0; 10],
            rtx_slot: 0,
            rtx_limiter: RetransmissionLimiter::new(NackConfig::default().rtx_limit_window),
            report: FeedbackReport::default(),
            assist_arrivals: Vec::new(),
            timeout_rtx: (media.repair == Repair::Timeout)
                .then(|| TimeoutRetransmitter::new(TimeoutRtxConfig::default())),
            rtx_batch: Vec::new(),
            assisted: false,
            pacer_discarded: 0,
            mailbox_checked: 0,
            dropped_below: 0,
        }
    }

    /// An ACK (`repair = "timeout"`): the packet is settled; its RTT is the sender's sample.
    /// (Inlined into the ACK's handling: a call of its own saved and restored registers again.)
    #[inline(always)]
    fn on_ack(&mut self, now: Time, frame: u64, index: u16, seq: u64, dispersion: Duration) {
        let Some(t) = self.timeout_rtx.as_mut() else { return };
        // Under Zhuge the AP's reports, one per millisecond, set the dispersion to 0.
        let dispersion = (!self.assisted).then_some(dispersion);
        if let Some(rtt) = t.on_ack(now, frame, index, seq, dispersion) {
            self.metrics.record_rtt(now, rtt);
        }
    }

    /// Queues what the retransmission timer found due at `now`, ahead of new media.
    #[inline]
    fn poll_timeout_rtx(&mut self, now: Time) {
        if self
            .timeout_rtx
            .as_ref()
            .and_then(TimeoutRetransmitter::poll_timeout)
            .is_some_and(|due| due <= now)
        {
            self.queue_timed_out(now);
        }
    }

    /// [`RtpSender::poll_timeout_rtx`] once due (out of line: `poll_transmit` runs several
    /// times per packet, a check is due far less often).
    #[inline(never)]
    fn queue_timed_out(&mut self, now: Time) {
        let Some(t) = self.timeout_rtx.as_mut() else { return };
        self.rtx_batch.clear();
        t.poll_retransmissions(now, &mut self.rtx_batch);
        for p in &self.rtx_batch {
            // No media sequence number here: the receiver knows a packet by frame and index.
            self.pacer.enqueue_retransmission(now, 0, p);
        }
    }

    /// Encodes and queues the frames captured up to `now` (out of line, as above: a frame per
    /// dozens of polls).
    #[inline(never)]
    fn encode_frames(&mut self, now: Time) {
        while self.next_frame_time().is_some_and(|t| t <= now) {
            // The encoder gets what retransmissions leave of the target (libwebrtc subtracts its
            // measured NACK rate as protection overhead).
            let target = self.cc.target_bitrate();
            let rtx = if self.sent_media.is_some() { self.rtx_rate(now) } else { Bitrate::ZERO };
            self.source.set_target(Bitrate::bps(target.as_bps().saturating_sub(rtx.as_bps())));
            if let Some(frame) = self.source.poll_frame(now) {
                if self.pause.is_some_and(|(from, to)| (from..to).contains(&frame.capture_time)) {
                    continue; // paused: the frame is never encoded
                }
                self.metrics.frames_sent += 1;
                self.pacer.enqueue_frame(now, &frame);
            }
        }
    }

    /// A padding packet at `now` if the controller probes and the pacer is idle and allows it.
    #[inline(never)]
    fn poll_padding(&mut self, now: Time, rate: Bitrate) -> Option<Transmit> {
        if self.pacer.is_empty()
            && self.cc.can_send(now, self.padding_size)
            && self.pacer.poll_padding(now, rate, self.padding_size)
        {
            let sent = self.record_sent(now, self.padding_size);
            return Some(Transmit { size: sent.size, seq: sent.seq, app: PADDING, ecn: self.codepoint() });
        }
        None
    }

    /// Moves the retransmission-rate window to `now`, clearing the slots it passes.
    fn advance_rtx_window(&mut self, now: Time) {
        let slot = now.as_nanos() / RTX_SLOT.as_nanos();
        for s in (self.rtx_slot + 1..=slot).take(10) {
            self.rtx_bits[(s % 10) as usize] = 0;
        }
        self.rtx_slot = self.rtx_slot.max(slot);
    }

    /// The retransmission rate over the last second.
    fn rtx_rate(&mut self, now: Time) -> Bitrate {
        self.advance_rtx_window(now);
        Bitrate::bps(self.rtx_bits.iter().sum())
    }

    /// Answers a NACK whose RTCP RTT is `rtt`: each packet still held goes back into the pacer,
    /// ahead of new media, while retransmissions stay within the target rate over 500 ms.
    fn on_nack(&mut self, now: Time, lost: &[u16], rtt: Duration) {
        let Some(history) = self.sent_media.as_mut() else { return };
        // A packet is not resent within an RTT of its last sending (libwebrtc's history rule,
        // with the RTCP RTT: `RtpPacketHistory::SetRtt` gets the RTP module's, not the
        // congestion controller's, which under Zhuge skips the downlink queue).
        let target = self.cc.target_bitrate();
        let limiter = &mut self.rtx_limiter;
        for &s in lost {
            if let Some((seq, packet)) =
                history.on_nack(now, s, rtt, |p| limiter.try_use(now, p.size.bits(), target))
            {
                self.pacer.enqueue_retransmission(now, seq, &packet);
            }
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
        self.cc.windowed && self.pacer.front_size().is_some_and(|size| !self.cc.can_send(now, size))
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
        let mut packets = std::mem::take(&mut self.report.packets);
        packets.clear();
        packets.reserve(arrivals.len());
        // The history holds sequence numbers `history_base..` in order, and a report mostly
        // lists consecutive ones: those are walked alongside the history (an indexed look-up
        // into the ring per arrival cost more than the rest of the loop); the rest, if any, are
        // looked up one by one.
        let mut rest = arrivals;
        if let Some(start) = arrivals.first().and_then(|a| a.seq.checked_sub(self.history_base)) {
            let start = usize::try_from(start).unwrap_or(usize::MAX).min(self.history.len());
            let mut expected = arrivals[0].seq;
            for (a, sent) in arrivals.iter().zip(self.history.range(start..)) {
                if a.seq != expected {
                    break;
                }
                expected += 1;
                self.metrics.ce_reported += u64::from(a.ecn == 3);
                packets.push(PacketResult { sent: *sent, arrival: a.at, ecn: a.ecn });
            }
            rest = &arrivals[(expected - arrivals[0].seq) as usize..];
        }
        for a in rest {
            if let Some(sent) =
                a.seq.checked_sub(self.history_base).and_then(|i| self.history.get(i as usize))
            {
                self.metrics.ce_reported += u64::from(a.ecn == 3);
                packets.push(PacketResult { sent: *sent, arrival: a.at, ecn: a.ecn });
            }
        }
        // Everything up to the report's last sequence number is settled (dropped at once: the
        // history's entries are plain values).
        if let Some(last) = packets.last().map(|p| p.sent.seq) {
            if self.history_base <= last {
                let n = (last - self.history_base + 1).min(self.history.len() as u64);
                self.history.drain(..n as usize);
                self.history_base += n;
            }
        }
        self.report = FeedbackReport { packets, report_time };
        if let Some(rtt) = self.report.rtt_sample(now).filter(|_| self.timeout_rtx.is_none()) {
            self.metrics.record_rtt(now, rtt);
        }
        self.last_now = now;
        self.cc.get_mut().on_send_queue(now, self.pacer.queued_bytes(), self.pacer.queue_delay(now));
        self.cc.get_mut().on_feedback(now, &self.report);
    }

    fn next_frame_time(&self) -> Option<Time> {
        Some(self.source.poll_timeout()).filter(|&t| t < self.stop)
    }

    /// A packet of feedback that is no congestion report: an ACK (`repair = "timeout"`, one
    /// per media packet, mostly in its slot) or a NACK. (The ACK's handling inlined here.)
    #[inline(never)]
    fn handle_non_cc_feedback(&mut self, now: Time, pkt: &Packet) {
        // A NACK may overtake reports held on the way (Zhuge out-of-band): take it alone.
        let id = pkt.app & !APP_NON_CC_FEEDBACK;
        if let Some(ack) = self.mailbox.take_ack(id) {
            if id >= self.dropped_below {
                self.last_now = now;
                self.on_ack(now, ack.frame, ack.index, ack.seq, ack.dispersion);
            }
            return;
        }
        self.handle_mailbox_message(now, pkt, id);
    }

    /// [`RtpSender::handle_non_cc_feedback`] of a message not in an ACK slot (rare).
    #[cold]
    #[inline(never)]
    fn handle_mailbox_message(&mut self, now: Time, pkt: &Packet, id: u64) {
        let mut mb = self.mailbox.lock().expect("the mailbox lock is never held across a panic");
        // Usually the front one: checked before a search (`iter` splits the ring, and
        // `remove(0)` still runs a zero-length `wrap_copy`).
        let msg = if mb.front().is_some_and(|(i, _)| *i == id) {
            mb.pop_front()
        } else {
            mb.iter().position(|(i, _)| *i == id).and_then(|k| mb.remove(k))
        };
        drop(mb);
        match msg {
            Some((_, RtcpMessage::Nack { lost, forward_delay })) => {
                self.last_now = now;
                self.on_nack(now, &lost, forward_delay + (now - pkt.sent_at));
            }
            Some((_, RtcpMessage::Ack { frame, index, seq, dispersion })) => {
                self.last_now = now;
                self.on_ack(now, frame, index, seq, dispersion);
            }
            _ => {}
        }
    }

    /// A congestion report's packet (one every few dozen media packets).
    #[inline(never)]
    fn handle_report_packet(&mut self, now: Time, pkt: &Packet) {
        // `take_by_id` drops the messages below `pkt.app` (ACKs in slots included, below).
        self.dropped_below = self.dropped_below.max(pkt.app);
        if let Some(RtcpMessage::Report { report_time, arrivals }) =
            crate::transport::take_by_id(&self.mailbox, pkt.app)
        {
            self.on_report(now, report_time, &arrivals);
        }
    }
}

impl Endpoint for RtpSender {
    fn external_controller(&self) -> Option<ExternalHandle> {
        self.external.clone()
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        // Both kinds apart, so that this dispatch saves no registers: an ACK per media packet
        // (`repair = "timeout"`) paid for the whole body's frame.
        if pkt.app & APP_NON_CC_FEEDBACK != 0 {
            self.handle_non_cc_feedback(now, pkt);
        } else {
            self.handle_report_packet(now, pkt);
        }
    }

    fn handle_assist(&mut self, now: Time, feedback: &AssistFeedback) {
        if let AssistFeedback::Signal(signal) = feedback {
            self.last_now = now;
            self.cc.get_mut().on_send_queue(now, self.pacer.queued_bytes(), self.pacer.queue_delay(now));
            self.cc.get_mut().on_network_signal(now, signal);
            return;
        }
        if let AssistFeedback::Report { report_time, arrivals } = feedback {
            // The receiver's own reports were dropped on the way: what they left in the mailbox
            // is stale (its NACKs and ACKs were not: they pass the AP).
            // Checked first: a report comes every few milliseconds, the receiver's reports every
            // 100 ms or so, and `retain` costs several times the check per entry (the ACKs in
            // flight).
            // Ids only grow along the mailbox (each message is posted with the next id), so only
            // the entries posted since the last report need looking at: older ones were checked
            // then (the ACKs in flight, a hundred or more, were scanned at every report).
            let mut mb = self.mailbox.lock().expect("the mailbox lock is never held across a panic");
            let mut k = mb.len();
            while k > 0 && mb[k - 1].0 >= self.mailbox_checked {
                k -= 1;
                if matches!(mb[k].1, RtcpMessage::Report { .. }) {
                    // Near the back: the removal moves the few entries behind it.
                    mb.remove(k);
                }
            }
            if let Some((last, _)) = mb.back() {
                self.mailbox_checked = self.mailbox_checked.max(last + 1);
            }
            drop(mb);
            self.assisted = true;
            if let Some(t) = self.timeout_rtx.as_mut() {
                t.on_assist_report();
            }
            // The AP's reports carry no ECN (Zhuge predicts arrival times only).
            let mut list = std::mem::take(&mut self.assist_arrivals);
            list.clear();
            list.extend(arrivals.iter().map(|&(seq, at)| Arrival { seq, at, ecn: 0 }));
            self.on_report(now, *report_time, &list);
            self.assist_arrivals = list;
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        self.last_now = now;
        self.cc.handle_timeout(now);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        if self.next_frame_time().is_some_and(|t| t <= now) {
            self.encode_frames(now);
        }
        self.last_now = now;
        self.poll_timeout_rtx(now);
        self.pacer.discard_stale(now);
        if let Some(t) =
            self.timeout_rtx.as_mut().filter(|_| self.pacer.discarded_packets() != self.pacer_discarded)
        {
            self.pacer_discarded = self.pacer.discarded_packets();
            t.on_pacer_flushed();
        }
        let rate = self.cc.pacing_rate();
        if self.window_closed(now) {
            return None;
        }
        // The stale packets were discarded above, at this instant.
        if let Some(p) = self.pacer.poll_discarded(now, rate) {
            let sent = self.record_sent(now, p.size);
            if let Some(t) = self.timeout_rtx.as_mut() {
                if p.retransmission_of.is_some() {
                    t.on_retransmission_sent(now, sent.seq, &p);
                } else {
                    t.on_sent(now, sent.seq, p);
                }
            }
            let app = match (p.retransmission_of, self.sent_media.as_mut()) {
                (Some(seq), _) => {
                    self.metrics.retransmissions += 1;
                    self.advance_rtx_window(now);
                    self.rtx_bits[(self.rtx_slot % 10) as usize] += p.size.bits();
                    pack_media(seq, true, p.frame, p.index, p.frame_packets)
                }
                (None, Some(history)) => {
                    let seq = history.on_sent(now, p);
                    pack_media(seq, false, p.frame, p.index, p.frame_packets)
                }
                (None, None) => pack(p.frame, p.index, p.frame_packets),
            };
            return Some(Transmit { size: p.size, seq: sent.seq, app, ecn: self.codepoint() });
        }
        if self.cc.wants_padding(now) {
            return self.poll_padding(now, rate);
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

    fn take_media_metrics(&mut self) -> Option<MediaMetrics> {
        let mut m = std::mem::take(&mut self.metrics);
        m.discarded_packets = self.pacer.discarded_packets();
        Some(m)
    }

    fn plan_tables(&mut self, tables: crate::results::Tables) {
        self.metrics.rtt_at_off = !tables.sender_rtt;
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
        let rtx = self.timeout_rtx.as_ref().and_then(TimeoutRetransmitter::poll_timeout);
        // Written out rather than `[..].into_iter().flatten().min()`, which the compiler does not
        // always flatten into comparisons (it ran at ~470 instructions a call).
        earliest(earliest(self.next_frame_time(), send), earliest(self.cc.poll_timeout(), rtx))
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
    /// With NACK: the missing packets, and the NACK being built.
    nack: Option<NackRequester>,
    lost: Vec<u16>,
    /// The forward one-way delay of the latest media packet and the smallest seen.
    forward_delay: Duration,
    min_forward_delay: Duration,
    /// When the receiver next learns an RTT (its RTCP report interval).
    next_rtt_at: Time,
    nack_bytes: Vec<u8>,
    /// With `repair = "timeout"`: duplicates and dispersion, and the ACKs to send.
    acks: Option<AckResponder>,
    /// ACKs in the mailbox whose packets are not sent yet: the last ids given out (an ACK's
    /// message is posted when its packet arrives, and the pending ACKs leave before anything
    /// else, so no other message takes an id in between).
    pending_acks: u64,
    /// The latest frame a packet arrived for and its capture time (none at first: frame ids
    /// have 23 bits).
    capture: (u64, Time),
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
            nack: (media.repair == Repair::Nack).then(|| NackRequester::new(NackConfig::default())),
            lost: Vec::new(),
            forward_delay: Duration::ZERO,
            min_forward_delay: Duration::MAX,
            next_rtt_at: start,
            nack_bytes: Vec::with_capacity(256),
            acks: (media.repair == Repair::Timeout).then(AckResponder::default),
            pending_acks: 0,
            capture: (u64::MAX, start),
        }
    }
}

impl Endpoint for RtpReceiver {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        self.collector.on_packet_ecn(now, pkt.seq, pkt.ecn);
        if pkt.app == PADDING {
            return;
        }
        if let Some(nack) = self.nack.as_mut() {
            self.forward_delay = now - pkt.sent_at;
            self.min_forward_delay = self.min_forward_delay.min(self.forward_delay);
            if now >= self.next_rtt_at {
                // An RTCP RTT (XR RRTR/DLRR): forward delay now, reverse at its propagation delay.
                nack.on_rtt(now, self.forward_delay + self.min_forward_delay);
                self.next_rtt_at = now + NackConfig::default().rtcp_interval;
            }
            let (seq, rtx) = unpack_media(pkt.app);
            if !nack.on_packet(now, seq, rtx) {
                return; // a copy of a packet already there
            }
        }
        if let Some(acks) = self.acks.as_mut() {
            let (_, rtx) = unpack_media(pkt.app);
            let (frame, count) = unpack(pkt.app);
            let index = unpack_index(pkt.app);
            let new = acks.on_packet(now, frame, index, count, rtx);
            // Every arrival is acknowledged, a copy too (`PacketReceiverUdp::ReplyACK`).
            let dispersion = acks.dispersion();
            let id = self.next_report_id;
            self.next_report_id += 1;
            self.pending_acks += 1;
            self.mailbox.post_ack(id, AckContent { frame, index, seq: pkt.seq, dispersion });
            if !new {
                return;
            }
        }
        let (frame, count) = unpack(pkt.app);
        // The capture clock is the source's: frame k is captured at start + k / fps (worked out
        // once per frame: its packets come together).
        if self.capture.0 != frame {
            self.capture = (frame, self.start + Duration::from_secs_f64(frame as f64 / self.fps));
        }
        self.assembler.on_packet(now, frame, count, self.capture.1);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        if self.pending_acks > 0 {
            let id = self.next_report_id - self.pending_acks;
            self.pending_acks -= 1;
            let size = TimeoutRtxConfig::default().ack_size;
            return Some(Transmit { size, seq: id, app: id | APP_NON_CC_FEEDBACK, ecn: 0 });
        }
        // The rest apart: this runs after every packet, to send its ACK or mostly nothing,
        // and kept small it saves no registers.
        if self.nack.is_some() || self.collector.poll_timeout().is_some_and(|t| t <= now) {
            return self.poll_rtcp(now);
        }
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        let nack = self.nack.as_ref().and_then(NackRequester::poll_timeout);
        earliest(self.collector.poll_timeout(), nack)
    }

    fn last_payload(&self) -> Option<&[u8]> {
        Some(self.encoder.last_encoded())
    }

    fn media_metrics(&self) -> Option<MediaMetrics> {
        Some(MediaMetrics {
            frames: self.assembler.completed.clone(),
            frame_ids: self.assembler.completed_ids.clone(),
            newest_frames: self.assembler.newest.clone(),
            nacks_sent: self.nack.as_ref().map_or(0, |n| n.nacks_sent),
            recovered: self
                .nack
                .as_ref()
                .map(|n| n.recovered)
                .or(self.acks.as_ref().map(|a| a.recovered))
                .unwrap_or(0),
            ..MediaMetrics::default()
        })
    }
}

// The receiver's rarer sends, out of `poll_transmit`, which runs after every packet (usually to
// send its ACK, or nothing).
impl RtpReceiver {
    /// The NACK or report due at `now`, if any (with `nack = true`, or a report due).
    #[inline(never)]
    fn poll_rtcp(&mut self, now: Time) -> Option<Transmit> {
        if self.nack.is_some() {
            if let Some(t) = self.poll_nack(now) {
                return Some(t);
            }
        }
        let report = self.collector.poll_report(now)?;
        Some(self.send_report(now, report))
    }

    /// The NACK due at `now`, if any (with `nack = true`).
    #[inline(never)]
    fn poll_nack(&mut self, now: Time) -> Option<Transmit> {
        self.lost.clear();
        if self.nack.as_mut().is_some_and(|n| n.poll_nack(now, &mut self.lost)) {
            let msg = lowlat_wire::GenericNack::from_lost(1, 2, &self.lost);
            self.nack_bytes.clear();
            // Invariant: a NACK of at least one and at most 1000 packets encodes.
            msg.encode(&mut self.nack_bytes).expect("a NACK of 1 to 1000 packets encodes");
            let size = Bytes(IP_UDP + self.nack_bytes.len() as u64);
            let id = self.next_report_id;
            self.next_report_id += 1;
            self.mailbox.lock().expect("the mailbox lock is never held across a panic").push_back((
                id,
                RtcpMessage::Nack { lost: self.lost.clone(), forward_delay: self.forward_delay },
            ));
            return Some(Transmit { size, seq: id, app: id | APP_NON_CC_FEEDBACK, ecn: 0 });
        }
        None
    }

    /// Sends the feedback `report` built at `now`.
    #[inline(never)]
    fn send_report(&mut self, now: Time, mut report: Vec<Arrival>) -> Transmit {
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
            .push_back((id, RtcpMessage::Report { report_time: now, arrivals: report }));
        Transmit { size, seq: id, app: id, ecn: 0 }
    }
}

/// Bytes of IPv4 and UDP headers around an RTCP datagram.
const IP_UDP: u64 = 28;

/// A new mailbox for one flow.
pub fn mailbox() -> Mailbox {
    Mailbox::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(id: u64) -> AckContent {
        AckContent { frame: id / 7, index: (id % 7) as u16, seq: 3 * id, dispersion: Duration(id * 11) }
    }

    #[test]
    fn acks_whose_slot_is_taken_go_to_the_messages_and_none_is_lost() {
        // More ACKs in flight than slots: the first ones fill the slots, the rest wait among the
        // messages; a slot freed by a taken ACK serves the next ACK posted to it.
        let mb = mailbox();
        let n = 2 * ACK_SLOTS + 5;
        for id in 0..n {
            mb.post_ack(id, ack(id));
        }
        let queued = |mb: &Mailbox| mb.lock().unwrap().len() as u64;
        assert_eq!(queued(&mb), n - ACK_SLOTS);
        assert_eq!(mb.take_ack(0), Some(ack(0)));
        assert_eq!(mb.take_ack(0), None, "taken once");
        mb.post_ack(n, ack(n)); // slot n % ACK_SLOTS is not 0's: still taken, so a message
        assert_eq!(queued(&mb), n + 1 - ACK_SLOTS);
        let reused = ACK_SLOTS * 3; // slot 0, free again
        mb.post_ack(reused, ack(reused));
        assert_eq!(mb.take_ack(reused), Some(ack(reused)));
        for id in 1..=n {
            let got = mb.take_ack(id).or_else(|| {
                let mut q = mb.lock().unwrap();
                let k = q.iter().position(|(i, _)| *i == id)?;
                match q.remove(k) {
                    Some((_, RtcpMessage::Ack { frame, index, seq, dispersion })) => {
                        Some(AckContent { frame, index, seq, dispersion })
                    }
                    _ => None,
                }
            });
            assert_eq!(got, Some(ack(id)), "ACK {id}");
        }
        assert_eq!(queued(&mb), 0);
    }
}
