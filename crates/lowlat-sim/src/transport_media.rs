//! Video over the ack-clocked transport: frames sent as QUIC-like datagrams under a window
//! controller (Copa, BBR, ...), as the Zhuge and SCONE-PRO evaluations ran Copa for video.
//!
//! The encoder follows the controller's sending rate ([`WindowController::send_rate`], clipped to
//! the flow's `[rmin, rmax]`); frames are packetised into an application queue (flushed when it
//! holds more than 2 s, as for RTP) from which the transport takes packets whenever its window and
//! pacer allow. Lost packets come back from the transport and are sent again (reliable delivery,
//! as a stream would); the receiver acknowledges on the transport's ACK schedule and assembles
//! frames, so frame delay is measured exactly as for RTP.
//!
//! [`WindowController::send_rate`]: lowlat_transport::WindowController::send_rate

use crate::app::{AssistFeedback, Endpoint, Transmit};
use crate::media::{pack, unpack, MediaMetrics};
use crate::scenario::MediaConfig;
use crate::transport::{AckReceiver, AckRing};
use lowlat_core::hash::FastMap;
use lowlat_core::rng::Rng;
use lowlat_core::{Bitrate, Bytes, Duration, Packet, Time};
use lowlat_media::pacer::PacerConfig;
use lowlat_media::receiver::FrameAssembler;
use lowlat_media::source::{Frame, VideoSource};
use lowlat_transport::{AckFrame, ReceiverConfig, SendPermit, Sender, SenderConfig};
use std::collections::VecDeque;

/// Headers of a datagram: IPv4 + UDP 28, QUIC short header 11, AEAD tag 16, DATAGRAM frame 3.
const DATAGRAM_OVERHEAD: Bytes = Bytes(58);

/// The `app` word of a PING: carries no frame.
const PING: u64 = u64::MAX;

/// How fast the encoder means to drain its queue: one encoder reaction time (RFC 8593's tau_v).
const BACKLOG_DRAIN: Duration = Duration::from_millis(200);

/// The sending side.
#[derive(Debug)]
pub struct TransportVideoSender {
    source: VideoSource,
    queue: FrameQueue,
    sender: Sender,
    /// Lost packets to send again: `(tag, size)`.
    resend: VecDeque<(u64, Bytes)>,
    rmin: Bitrate,
    rmax: Bitrate,
    stop: Time,
    pause: Option<(Time, Time)>,
    metrics: MediaMetrics,
    /// ECN bits its packets carry.
    ecn: u8,
    /// The instant the application's side was last brought up to date for a poll (frames
    /// captured, stale ones discarded, the resend queue trimmed, the sender told what waits);
    /// `None` once a packet or timer may have changed it. Polled again at that instant (after
    /// a send, mostly), there is nothing new to do there: captures and staleness depend only on
    /// the instant, and a send leaves the queues trimmed and the sender told.
    prepared_at: Option<Time>,
    /// Until when the queue's oldest packet is surely not stale (it was queued no earlier than
    /// the queue's `max_queue_delay` before): packets are queued at the instant they are
    /// prepared, in order, so the front only gets newer, and [`FrameQueue::discard_stale`],
    /// which finds the front in the ring, need not be asked at every poll before then.
    fresh_until: Time,
}

impl TransportVideoSender {
    /// A sender starting at `start` at `start_rate`, stopping at `stop`.
    pub fn new(
        media: &MediaConfig,
        start: Time,
        stop: Time,
        start_rate: Bitrate,
        packet_size: Bytes,
        rng: Rng,
    ) -> Result<TransportVideoSender, String> {
        let params = media.cc_params.get(&media.cc).map(Vec::as_slice).unwrap_or_default();
        let cc = crate::transport::window_controller_with(&media.cc, packet_size, params)?;
        let cfg = SenderConfig {
            packet_size,
            overhead: DATAGRAM_OVERHEAD,
            tcp: media.tcp.clone(),
            ..SenderConfig::default()
        };
        let queue_cfg = PacerConfig {
            mtu_payload: Bytes(packet_size.0.saturating_sub(DATAGRAM_OVERHEAD.0).max(1)),
            overhead: DATAGRAM_OVERHEAD,
            ..PacerConfig::default()
        };
        Ok(TransportVideoSender {
            source: VideoSource::new(media.source.clone(), start, start_rate, rng),
            queue: FrameQueue::new(&queue_cfg),
            sender: Sender::for_messages(cfg, cc),
            resend: VecDeque::new(),
            rmin: media.source.rmin,
            rmax: media.source.rmax,
            stop,
            pause: media.pause,
            metrics: MediaMetrics::default(),
            ecn: 0,
            prepared_at: None,
            fresh_until: Time::ZERO,
        })
    }

    /// Sends its packets with ECN codepoint `ecn`.
    pub fn with_ecn(mut self, ecn: lowlat_core::Ecn) -> TransportVideoSender {
        self.ecn = ecn.bits();
        self
    }

    /// The encoder's target: the controller's sending rate less what drains the application
    /// queue within [`BACKLOG_DRAIN`], within `[rmin, rmax]`. Without the backlog term an
    /// encoder at exactly the sending rate (plus headers) grows the queue until it is flushed.
    fn target(&self) -> Option<Bitrate> {
        let rate = self.sender.send_rate()?.as_bps_f64();
        let drain = self.queue.queued_bytes().bits() as f64 / BACKLOG_DRAIN.as_secs_f64();
        Some(Bitrate::from_bps_f64((rate - drain).max(0.0)).clamp(self.rmin, self.rmax))
    }

    fn next_frame_time(&self) -> Option<Time> {
        Some(self.source.poll_timeout()).filter(|&t| t < self.stop)
    }

    fn on_ack(&mut self, now: Time, frame: &AckFrame) {
        on_ack_parts(&mut self.sender, &mut self.metrics, &mut self.resend, now, frame);
    }

    fn collect_lost(&mut self) {
        collect_lost(&mut self.sender, &mut self.resend);
    }

    fn skip_delivered(&mut self) {
        skip_delivered(&self.sender, &mut self.resend);
    }

    /// Brings the application's side up to date for a poll at `now` (see `prepared_at`).
    fn prepare(&mut self, now: Time) {
        if self.next_frame_time().is_some_and(|t| t <= now) {
            self.capture_frames(now);
        }
        if now > self.fresh_until {
            self.discard_stale(now);
        }
        self.skip_delivered();
        self.sender.set_pending(!self.resend.is_empty() || !self.queue.is_empty());
        self.prepared_at = Some(now);
    }

    /// The frames captured up to `now`, queued. (This and `discard_stale`, once per frame or
    /// rarer, are apart from `prepare`, whose every call otherwise saved registers for them.)
    #[cold]
    #[inline(never)]
    fn capture_frames(&mut self, now: Time) {
        while self.next_frame_time().is_some_and(|t| t <= now) {
            if let Some(target) = self.target() {
                self.source.set_target(target);
            }
            if let Some(frame) = self.source.poll_frame(now) {
                if self.pause.is_some_and(|(from, to)| (from..to).contains(&frame.capture_time)) {
                    continue;
                }
                self.metrics.frames_sent += 1;
                self.queue.enqueue_frame(now, &frame);
            }
        }
    }

    /// Flushes the queue if its oldest packet waited too long, and notes until when it surely
    /// has not.
    #[cold]
    #[inline(never)]
    fn discard_stale(&mut self, now: Time) {
        self.queue.discard_stale(now);
        // (What is left was queued no earlier than its delay ago; nothing: from now on.)
        self.fresh_until = self.queue.oldest().unwrap_or(now) + self.queue.max_queue_delay;
    }

    /// [`Endpoint::poll_transmit`] at an instant the application's side is not prepared for.
    #[inline(never)]
    fn prepare_and_poll(&mut self, now: Time) -> Option<Transmit> {
        self.prepare(now);
        let permit = self.sender.permit_send(now)?;
        Some(self.send_next(permit, now))
    }

    /// [`TransportVideoSender::send_next`] as a call of its own.
    #[inline(never)]
    fn send_next_apart(&mut self, permit: SendPermit, now: Time) -> Transmit {
        self.send_next(permit, now)
    }

    /// Sends the next packet, with the sender's `permit`.
    #[inline(always)]
    fn send_next(&mut self, permit: SendPermit, now: Time) -> Transmit {
        // Lost packets first, then new ones; the probe timeout allows packets beyond the window
        // even with nothing to say: a PING (as QUIC sends) elicits the ACK it is waiting for.
        let (tag, size) = self
            .resend
            .pop_front()
            .or_else(|| self.queue.pop().map(|(frame, index, count, size)| (pack(frame, index, count), size)))
            .unwrap_or((PING, Bytes(DATAGRAM_OVERHEAD.0 + 1)));
        let pn = self.sender.send_permitted(permit, now, size, tag);
        self.skip_delivered();
        self.sender.set_pending(!self.resend.is_empty() || !self.queue.is_empty());
        Transmit { size, seq: pn, app: tag, ecn: self.ecn }
    }
}

/// The application queue: frames cut into packets as they are taken, as [`Pacer`] cuts them
/// when they are queued (the same packets, sizes, byte count and flushes of the whole queue once
/// its oldest packet has waited longer than `max_queue_delay`). A frame is a hundred packets or
/// more at the rates of the trace runs, and the pacer's queue moved each packet (48 bytes) into
/// and out of its ring: here a packet costs its size's arithmetic.
///
/// [`Pacer`]: lowlat_media::pacer::Pacer
#[derive(Debug)]
struct FrameQueue {
    frames: VecDeque<QueuedFrame>,
    /// Largest payload per packet (at least 1), and the header bytes each packet adds.
    mtu: u64,
    overhead: u64,
    max_queue_delay: Duration,
    /// Bytes on the wire and packets of what waits.
    queued_bytes: u64,
    queued_packets: u64,
    /// Packets discarded by flushes so far.
    discarded_packets: u64,
}

/// A frame in the [`FrameQueue`], with the packets taken from it so far.
#[derive(Clone, Copy, Debug)]
struct QueuedFrame {
    id: u64,
    /// Packets it is cut into, and the index of the next one to take.
    packets: u16,
    next: u16,
    /// Payload bytes of each packet, and how many of the first packets carry one more (the
    /// frame's size spread as evenly as the packets allow).
    base: u64,
    extra: u64,
    /// When it was queued.
    enqueued: Time,
}

impl FrameQueue {
    /// An empty queue cutting packets as `cfg` says.
    fn new(cfg: &PacerConfig) -> FrameQueue {
        FrameQueue {
            frames: VecDeque::with_capacity(64),
            mtu: cfg.mtu_payload.0.max(1),
            overhead: cfg.overhead.0,
            max_queue_delay: cfg.max_queue_delay,
            queued_bytes: 0,
            queued_packets: 0,
            discarded_packets: 0,
        }
    }

    /// Queues `frame` at `now` ([`Pacer::enqueue_frame`](lowlat_media::pacer::Pacer::enqueue_frame)).
    fn enqueue_frame(&mut self, now: Time, frame: &Frame) {
        let n = frame.size.0.div_ceil(self.mtu).clamp(1, u16::MAX as u64);
        let (base, extra) = (frame.size.0 / n, frame.size.0 % n);
        // (The packets' sizes add up to the frame's payload plus a header each.)
        self.queued_bytes += frame.size.0 + n * self.overhead;
        self.queued_packets += n;
        self.frames.push_back(QueuedFrame {
            id: frame.id,
            packets: n as u16,
            next: 0,
            base,
            extra,
            enqueued: now,
        });
    }

    /// The next packet: `(frame, index, packets in the frame, size on the wire)`.
    fn pop(&mut self) -> Option<(u64, u16, u16, Bytes)> {
        let f = self.frames.front_mut()?;
        let index = f.next;
        let size = f.base + u64::from(u64::from(index) < f.extra) + self.overhead;
        let (id, packets) = (f.id, f.packets);
        f.next += 1;
        if f.next == packets {
            self.frames.pop_front();
        }
        self.queued_bytes -= size;
        self.queued_packets -= 1;
        Some((id, index, packets, Bytes(size)))
    }

    /// Discards the whole queue if its oldest packet has waited longer than the maximum.
    fn discard_stale(&mut self, now: Time) {
        if self.frames.front().is_some_and(|f| now - f.enqueued > self.max_queue_delay) {
            self.discarded_packets += self.queued_packets;
            self.frames.clear();
            self.queued_bytes = 0;
            self.queued_packets = 0;
        }
    }

    /// When the oldest packet waiting was queued.
    fn oldest(&self) -> Option<Time> {
        self.frames.front().map(|f| f.enqueued)
    }

    fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Bytes waiting.
    fn queued_bytes(&self) -> Bytes {
        Bytes(self.queued_bytes)
    }

    /// Packets discarded by flushes so far.
    fn discarded_packets(&self) -> u64 {
        self.discarded_packets
    }
}

/// An ACK frame for the sender (its fields: the frame is read where the receiver's ring holds
/// it). (Inlined: a call of its own per ACK cost a third of what it does.)
#[inline(always)]
fn on_ack_parts(
    sender: &mut Sender,
    metrics: &mut MediaMetrics,
    resend: &mut VecDeque<(u64, Bytes)>,
    now: Time,
    frame: &AckFrame,
) {
    sender.on_ack(now, frame);
    if sender.rtt().has_sample() {
        metrics.record_rtt(now, sender.rtt().latest());
    }
    collect_lost(sender, resend);
}

/// Moves the packets the sender declared lost to the resend queue.
fn collect_lost(sender: &mut Sender, resend: &mut VecDeque<(u64, Bytes)>) {
    while let Some(l) = sender.pop_lost() {
        resend.push_back(l);
    }
    skip_delivered(sender, resend);
}

/// Drops from the front of the resend queue the packets delivered meanwhile (under TCP's
/// recovery a late original repairs its loss; see [`Sender::still_lost`]). (Mostly the queue
/// is empty: the walk, with its look-ups of holes, is apart from the per-packet callers.)
#[inline(always)]
fn skip_delivered(sender: &Sender, resend: &mut VecDeque<(u64, Bytes)>) {
    if !resend.is_empty() {
        skip_delivered_in(sender, resend);
    }
}

#[cold]
#[inline(never)]
fn skip_delivered_in(sender: &Sender, resend: &mut VecDeque<(u64, Bytes)>) {
    while resend.front().is_some_and(|&(tag, _)| !sender.still_lost(tag)) {
        resend.pop_front();
    }
}

impl Endpoint for TransportVideoSender {
    fn handle_ack(&mut self, now: Time, _pkt: &Packet, frame: Option<&AckFrame>) {
        self.prepared_at = None;
        // The frame is read where it lies in the receiver's ring (no copy).
        if let Some(frame) = frame {
            on_ack_parts(&mut self.sender, &mut self.metrics, &mut self.resend, now, frame);
        }
    }

    fn handle_assist(&mut self, now: Time, feedback: &AssistFeedback) {
        self.prepared_at = None;
        if let AssistFeedback::Ack(f) = feedback {
            self.on_ack(now, f);
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        self.prepared_at = None;
        // The sender acts only on its loss and probe timers that are due (a pacer wake-up
        // finds neither); lost packets are always collected right after they are declared, so
        // there is nothing to collect otherwise. Asking `poll_timeout` first cost a pacing-rate
        // computation per wake-up.
        self.sender.handle_timeout(now);
        self.collect_lost();
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        // Polled again at the instant of the last poll (after a send, mostly, when the window
        // or the pacer mostly says no): only the sender's check, with the preparing and the
        // sending apart, which save and restore registers (they were most of such a poll).
        if self.prepared_at == Some(now) {
            let permit = self.sender.permit_send(now)?;
            return Some(self.send_next_apart(permit, now));
        }
        self.prepare_and_poll(now)
    }

    fn poll_timeout(&self) -> Option<Time> {
        // (The sender takes the next frame's time in: see `Sender::poll_timeout_or`.)
        self.sender.poll_timeout_or(self.next_frame_time())
    }

    fn cc_name(&self) -> Option<&'static str> {
        Some(self.sender.controller().name())
    }

    fn cc_mode(&self) -> Option<&'static str> {
        Some(self.sender.mode())
    }

    fn media_metrics(&self) -> Option<MediaMetrics> {
        let mut m = self.metrics.clone();
        m.discarded_packets = self.queue.discarded_packets();
        m.ce_reported = self.sender.stats().ce_marks;
        Some(m)
    }

    fn take_media_metrics(&mut self) -> Option<MediaMetrics> {
        let mut m = std::mem::take(&mut self.metrics);
        m.discarded_packets = self.queue.discarded_packets();
        m.ce_reported = self.sender.stats().ce_marks;
        Some(m)
    }

    fn plan_tables(&mut self, tables: crate::results::Tables) {
        self.metrics.rtt_at_off = !tables.sender_rtt;
    }
}

/// The receiving side: acknowledges like any transport receiver and assembles frames.
#[derive(Debug)]
pub struct TransportVideoReceiver {
    acks: AckReceiver,
    assembler: FrameAssembler,
    /// The packets of incomplete frames seen so far (per frame, a bit per packet index), so a
    /// packet that arrives twice (a spurious retransmission) counts once: one map look-up per
    /// packet and one removal per frame.
    seen: FastMap<u64, Vec<u64>>,
    /// The frame whose packet came last ([`NO_FRAME`] once it completed) and its bits, kept out
    /// of `seen`: a frame's packets mostly arrive together, so most packets cost no map
    /// look-up. (Apart rather than an option of the pair: asked per packet, the option's
    /// niche in the vector cost a dozen instructions.)
    current: u64,
    current_bits: Vec<u64>,
    /// Packets marked in `seen` and `current`.
    seen_packets: usize,
    /// The frame a packet may be counted for without the full bookkeeping of
    /// [`TransportVideoReceiver::handle_packet_apart`] ([`NO_FRAME`]: none): the last packet's
    /// frame, left incomplete, which is then `current` for its bits, the assembler's current
    /// frame and `last_capture`'s. A frame's packets mostly arrive together, so most packets
    /// cost a bit's mark and a count.
    fast_frame: u64,
    start: Time,
    fps: f64,
    /// The capture time of the frame whose packet came last: `(frame, time)` ([`NO_FRAME`]
    /// before any; a frame's packets mostly arrive together, and the time costs a float
    /// conversion).
    last_capture: (u64, Time),
}

/// No frame: frame ids are 23 bits (see [`crate::media`]'s packing).
const NO_FRAME: u64 = u64::MAX;

impl TransportVideoReceiver {
    /// A receiver for frames captured from `start` at the flow's frame rate.
    pub fn new(media: &MediaConfig, start: Time) -> TransportVideoReceiver {
        TransportVideoReceiver {
            acks: AckReceiver::with_config(ReceiverConfig {
                ack_every: media.ack_every,
                ..ReceiverConfig::default()
            }),
            assembler: FrameAssembler::default(),
            seen: FastMap::default(),
            current: NO_FRAME,
            current_bits: Vec::new(),
            seen_packets: 0,
            fast_frame: NO_FRAME,
            start,
            fps: media.source.fps,
            last_capture: (NO_FRAME, Time::ZERO),
        }
    }
}

impl TransportVideoReceiver {
    /// The packets of `frame` arrive (not `current`): its bits become `current`'s, the previous
    /// frame's go back to `seen`. (This and the other per-frame or rare work below are apart
    /// from the per-packet `handle_packet`, which otherwise saved registers for them.)
    #[cold]
    #[inline(never)]
    fn switch_frame(&mut self, frame: u64) {
        let bits = self.seen.remove(&frame).unwrap_or_default();
        let bits = std::mem::replace(&mut self.current_bits, bits);
        if self.current != NO_FRAME {
            self.seen.insert(self.current, bits);
        }
        self.current = frame;
    }

    /// The frame `current` of `count` packets completed: its packets 0..count are forgotten (a
    /// later copy of one counts again).
    #[cold]
    #[inline(never)]
    fn frame_completed(&mut self, count: u16) {
        self.seen_packets -= forget_below(&mut self.current_bits, count);
        if self.current_bits.iter().all(|&w| w == 0) {
            self.current = NO_FRAME;
        }
    }

    /// The capture time of `frame`, remembered as the last one's.
    #[cold]
    #[inline(never)]
    fn capture_of(&mut self, frame: u64) -> Time {
        let t = self.start + Duration::from_secs_f64(frame as f64 / self.fps);
        self.last_capture = (frame, t);
        t
    }

    /// Forgets the incomplete frames far behind `newest` (their packets given up when the queue
    /// was flushed); `current` is `newest`, kept.
    #[cold]
    #[inline(never)]
    fn forget_far_behind(&mut self, newest: u64) {
        let mut dropped = 0;
        self.seen.retain(|f, bits| {
            let keep = *f + 256 > newest;
            if !keep {
                dropped += bits.iter().map(|w| w.count_ones() as usize).sum::<usize>();
            }
            keep
        });
        self.seen_packets -= dropped;
    }
}

impl TransportVideoReceiver {
    /// [`Endpoint::handle_packet`] of a packet out of order or ECN-capable.
    #[inline(never)]
    fn handle_packet_unordered(&mut self, now: Time, pkt: &Packet) {
        self.acks.handle_packet(now, pkt);
        self.count_packet(now, pkt);
    }

    /// [`Endpoint::handle_packet`]'s frame bookkeeping.
    #[inline(always)]
    fn count_packet(&mut self, now: Time, pkt: &Packet) {
        // A packet of `fast_frame` that does not complete it (most packets): marked and counted
        // here; anything else (a duplicate of it too: the same, it returns) goes apart.
        let (frame, count) = unpack(pkt.app);
        if frame == self.fast_frame && pkt.app != PING {
            let index = crate::media::unpack_index(pkt.app);
            let (word, bit) = (usize::from(index / 64), 1u64 << (index % 64));
            if let Some(w) = self.current_bits.get_mut(word) {
                if *w & bit != 0 {
                    return;
                }
                if self.assembler.count_towards_current(count) {
                    *w |= bit;
                    self.seen_packets += 1;
                    if self.seen_packets > 1 << 16 {
                        self.forget_far_behind(frame);
                    }
                    return;
                }
            }
        }
        self.handle_packet_apart(now, pkt);
    }

    /// [`Endpoint::handle_packet`]'s whole frame bookkeeping of a packet that is not a further one of
    /// `fast_frame` left incomplete (a frame's first and last packets, duplicates, PINGs).
    #[inline(never)]
    fn handle_packet_apart(&mut self, now: Time, pkt: &Packet) {
        self.fast_frame = NO_FRAME;
        if pkt.app == PING {
            return;
        }
        let (frame, count) = unpack(pkt.app);
        let index = crate::media::unpack_index(pkt.app);
        if self.current != frame {
            self.switch_frame(frame);
        }
        let (word, bit) = (usize::from(index / 64), 1u64 << (index % 64));
        if self.current_bits.len() <= word {
            self.current_bits.resize(word + 1, 0);
        }
        let bits = &mut self.current_bits;
        if bits[word] & bit != 0 {
            return;
        }
        bits[word] |= bit;
        self.seen_packets += 1;
        let capture = match self.last_capture {
            (f, t) if f == frame => t,
            _ => self.capture_of(frame),
        };
        let done_before = self.assembler.completed.len();
        self.assembler.on_packet(now, frame, count, capture);
        if self.assembler.completed.len() > done_before {
            self.frame_completed(count);
        } else {
            // `frame` is now `current`, the assembler's current (incomplete) and `last_capture`'s.
            self.fast_frame = frame;
        }
        if self.seen_packets > 1 << 16 {
            self.forget_far_behind(frame);
        }
    }
}

/// Clears the bits of packet indices below `count`; returns how many were set.
fn forget_below(bits: &mut [u64], count: u16) -> usize {
    let mut cleared = 0;
    for (i, w) in bits.iter_mut().enumerate() {
        let from = i * 64;
        let below = usize::from(count).saturating_sub(from).min(64);
        let mask = if below == 64 { u64::MAX } else { (1u64 << below) - 1 };
        cleared += (*w & mask).count_ones() as usize;
        *w &= !mask;
    }
    cleared
}

impl Endpoint for TransportVideoReceiver {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        // (Either part's rare cases are calls: here only at the end, so that the common path
        // saves no registers.)
        if self.acks.on_next_packet(now, pkt) {
            self.count_packet(now, pkt);
        } else {
            self.handle_packet_unordered(now, pkt);
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        self.acks.poll_transmit(now)
    }

    fn ack_ring(&mut self) -> Option<&mut AckRing> {
        self.acks.ack_ring()
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.acks.poll_timeout()
    }

    /// Its frames are assembled on arrival; its ACKs are its only timer.
    fn acts_only_on_arrival(&self) -> bool {
        self.acks.acts_only_on_arrival()
    }

    fn media_metrics(&self) -> Option<MediaMetrics> {
        Some(MediaMetrics {
            frames: self.assembler.completed.clone(),
            frame_ids: self.assembler.completed_ids.clone(),
            newest_frames: self.assembler.newest.clone(),
            ..MediaMetrics::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_media::pacer::Pacer;

    /// The frame queue gives the pacer's queue's packets, byte counts and flushes, frame by
    /// frame and packet by packet, for frames of every size (empty, one packet, beyond the
    /// 4095-packet count of a packet's `app` word) taken at any pace.
    #[test]
    fn the_frame_queue_is_the_pacers_queue() {
        let mut below = lowlat_core::rng::below(1, "frame-queue-test");
        for mtu in [1, 7, 1430] {
            let cfg = PacerConfig {
                mtu_payload: Bytes(mtu),
                overhead: DATAGRAM_OVERHEAD,
                ..PacerConfig::default()
            };
            let (mut pacer, mut queue) = (Pacer::new(cfg.clone()), FrameQueue::new(&cfg));
            let mut now = Time::ZERO;
            for id in 0..3_000 {
                now += Duration::from_millis(below(200));
                let size = match below(10) {
                    0 => 0,
                    1 => below(3 * mtu),
                    2 => below(5_000 * mtu),
                    _ => below(200 * mtu),
                };
                let frame = Frame { id, capture_time: now, size: Bytes(size), key: false };
                pacer.enqueue_frame(now, &frame);
                queue.enqueue_frame(now, &frame);
                assert_eq!(queue.queued_bytes(), pacer.queued_bytes());
                pacer.discard_stale(now);
                queue.discard_stale(now);
                assert_eq!(queue.discarded_packets(), pacer.discarded_packets());
                for _ in 0..below(400) {
                    let p = pacer.pop().map(|p| (p.frame, p.index, p.frame_packets, p.size));
                    assert_eq!(queue.pop(), p, "frame {id}");
                    assert_eq!(queue.queued_bytes(), pacer.queued_bytes());
                    assert_eq!(queue.is_empty(), pacer.is_empty());
                }
                let oldest = queue.oldest().map(|t| now - t).unwrap_or(Duration::ZERO);
                assert_eq!(oldest, pacer.queue_delay(now));
            }
            assert!(queue.discarded_packets() > 0, "flushes happened");
        }
    }
}
