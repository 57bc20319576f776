//! The sending side: packet numbers, RFC 9002 loss detection and probe timeout, retransmission of
//! lost data in new packets, and pacing, around a [`WindowController`].
//!
//! ## TCP's loss recovery (opt-in, message mode)
//! [`SenderConfig::tcp`] replaces RFC 9002's loss detection and probe timeout by TCP's as ns-3.34's
//! `TcpSocketBase` runs it with SACK (`src/internet/model/tcp-socket-base.cc`,
//! `tcp-tx-buffer.cc`), the transport of the Zhuge artifact's Copa runs:
//!
//! - **Loss detection**: a packet is lost once [`SenderConfig::packet_threshold`] later packets
//!   are acknowledged (`TcpTxBuffer::UpdateLostCount`, `DupAckThreshold` 3); no time threshold
//!   (ns-3.34 has no RACK). A retransmission is never declared lost this way: `NextSeg` resends
//!   only items not yet retransmitted and a retransmitted item stays in the pipe
//!   (`BytesInFlight` = sent - (sacked + lost) + retransmitted), so only the timeout repairs a
//!   lost retransmission.
//! - **Holes**: lost data keeps the cumulative acknowledgement point (`SND.UNA`) where it is until
//!   a retransmission of it, or the late original, is acknowledged; the window is left to the
//!   controller (`EnterRecovery`: with its own `CongControl`, ns-3 skips its recovery's window
//!   changes; the controller still hears each loss as a congestion event).
//! - **Retransmission timeout** (RFC 6298 as `TcpSocketBase` has it): RTO = max(srtt + max(G,
//!   4 rttvar), [`TcpRecovery::min_rto`]) (`EstimateRtt`, `NewAck`), restarted when the cumulative
//!   point advances (`NewAck`), in fast recovery only on its first partial acknowledgement
//!   (`m_isFirstPartialAck`), and armed by a send when not running (`SendDataPacket`). When it
//!   fires (`ReTxTimeout`): every packet in flight is lost (`SetSentListLost`), the controller gets
//!   a persistent congestion event (ns-3 sets the window to one segment), and the timeout
//!   doubles unless [`TcpRecovery::backoff`] is off (the Zhuge artifact comments the doubling
//!   out). Until the cumulative point passes what was sent before the timeout (`CA_LOSS`), each
//!   advance restarts it.
//! - An acknowledgement of data already declared lost (the original arriving late) repairs its
//!   hole and counts as delivered for the controller, with no RTT sample of its own (ns-3 clears
//!   its RTT history on a timeout; the rate sample carries the latest RTT, as ns-3's does).
//!
//! Deliberate differences: packet numbers stand for sequence numbers (a packet's "later" ones
//! are those sent after it, where TCP counts SACKed segments above it); no delayed-ACK, Nagle,
//! receive-window or SYN logic; the application resends lost packets itself ([`Sender::pop_lost`],
//! [`Sender::still_lost`]).

use crate::ack::AckFrame;
use crate::rtt::RttEstimator;
use crate::{RateSample, Reads, WindowController};
use lowlat_core::hash::FastMap;
use lowlat_core::units::u64_to_f64;
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// Sender settings; loss-recovery constants from RFC 9002 §6.
#[derive(Clone, Debug, PartialEq)]
pub struct SenderConfig {
    /// Full packet size on the wire.
    pub packet_size: Bytes,
    /// Header bytes per packet (IPv4 + UDP 28, QUIC short header 11, AEAD tag 16): the rest is
    /// payload.
    pub overhead: Bytes,
    /// kPacketThreshold: a packet is lost once this many later ones are acknowledged (3).
    pub packet_threshold: u64,
    /// kTimeThreshold: ... or once it is this many RTTs older than an acknowledged one (9/8).
    pub time_threshold: f64,
    /// kGranularity (1 ms).
    pub granularity: Duration,
    /// The peer's max_ack_delay (25 ms).
    pub max_ack_delay: Duration,
    /// Pacing rate = this x window / smoothed RTT unless the controller sets one (RFC 9002 §7.7:
    /// 1.25).
    pub pacing_gain: f64,
    /// Packets the pacer may send back to back (10).
    pub burst_packets: u64,
    /// Payload bytes to deliver (`None`: an unbounded bulk transfer).
    pub size: Option<u64>,
    /// TCP's loss recovery instead of RFC 9002's (`None`, the default); message mode only (see
    /// the module doc).
    pub tcp: Option<TcpRecovery>,
}

/// The constants of TCP's loss recovery (see the module doc); defaults are ns-3.34's
/// `TcpSocketBase`.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpRecovery {
    /// Smallest retransmission timeout (`TcpSocketBase::MinRto`, 1 s, RFC 6298 §2.4).
    pub min_rto: Duration,
    /// The clock granularity G of RFC 6298 §2.3 (`ClockGranularity`, 1 ms).
    pub granularity: Duration,
    /// Each timeout doubles the next until the cumulative point advances (RFC 6298 §5.5, ns-3's
    /// `ReTxTimeout`; the Zhuge artifact's `ns-diff.patch` comments the doubling out).
    pub backoff: bool,
}

impl Default for TcpRecovery {
    fn default() -> Self {
        TcpRecovery { min_rto: Duration::from_secs(1), granularity: Duration::from_millis(1), backoff: true }
    }
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            packet_size: Bytes(1200),
            overhead: Bytes(55),
            packet_threshold: 3,
            time_threshold: 9.0 / 8.0,
            granularity: Duration::from_millis(1),
            max_ack_delay: Duration::from_millis(25),
            pacing_gain: 1.25,
            burst_packets: 10,
            size: None,
            tcp: None,
        }
    }
}

/// Counters of a sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Packets sent (new data, retransmissions and probes).
    pub packets_sent: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Payload bytes acknowledged.
    pub bytes_acked: u64,
    /// Payload bytes sent again after a loss.
    pub bytes_retransmitted: u64,
    /// Probe timeouts that fired.
    pub ptos: u64,
    /// Congestion events signalled to the controller.
    pub congestion_events: u64,
    /// Packets the peer reported received with CE (its ACK_ECN count).
    pub ce_marks: u64,
    /// Retransmission timeouts that fired (TCP's loss recovery only).
    pub rtos: u64,
}

/// One sent packet, kept until acknowledged or lost.
#[derive(Clone, Copy, Debug)]
struct Sent {
    /// (Sizes of one packet: 32 bits keep the record to a cache line.)
    size: u32,
    payload: u32,
    time: Time,
    outstanding: bool,
    /// The application's name for it (message mode).
    tag: u64,
    /// Delivery-rate state when it left (draft-cheng-iccrg-delivery-rate-estimation §3.2).
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    app_limited: bool,
    /// TCP recovery: the lost packet whose data this one carries again (`NEW_DATA`: none; see
    /// [`Sent::retx_of`]).
    retx_of: u64,
    /// TCP recovery: declared lost and its data not delivered yet (it holds the cumulative point).
    hole: bool,
}

/// [`Sent`]'s `retx_of` of new data (no packet number gets this high).
const NEW_DATA: u64 = u64::MAX;

/// The earlier of two optional times (written out: an iterator over the options cost a tenth of
/// [`Sender::poll_timeout`], which the simulator calls after every event of the flow).
#[inline(always)]
fn earliest(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

impl Sent {
    /// TCP recovery: the lost packet whose data this one carries again (`None`: new data).
    #[inline]
    fn retx_of(&self) -> Option<u64> {
        (self.retx_of != NEW_DATA).then_some(self.retx_of)
    }

    /// What fills the ring's slots outside the live range.
    const EMPTY: Sent = Sent {
        size: 0,
        payload: 0,
        time: Time::ZERO,
        outstanding: false,
        tag: 0,
        delivered: 0,
        delivered_time: Time::ZERO,
        first_sent_time: Time::ZERO,
        app_limited: false,
        retx_of: NEW_DATA,
        hole: false,
    };
}

/// The sent packets' records by packet number: packet `pn` sits at `pn & (size - 1)` of a ring
/// whose size is a power of two (the sender keeps the live range, `base_pn..next_pn`). A
/// look-up is a mask and a bounds check, where a `VecDeque`'s wraps its index with a comparison
/// and a subtraction; the sender looks packets up several times per ACK.
#[derive(Debug)]
struct SentRing {
    slots: Vec<Sent>,
}

impl SentRing {
    /// Room for `size` (a power of two) records.
    fn with_size(size: usize) -> SentRing {
        debug_assert!(size.is_power_of_two());
        SentRing { slots: vec![Sent::EMPTY; size] }
    }

    /// How many records fit.
    #[inline]
    fn size(&self) -> u64 {
        self.slots.len() as u64
    }

    #[inline]
    fn at(&self, pn: u64) -> &Sent {
        &self.slots[pn as usize & (self.slots.len() - 1)]
    }

    #[inline]
    fn at_mut(&mut self, pn: u64) -> &mut Sent {
        let mask = self.slots.len() - 1;
        &mut self.slots[pn as usize & mask]
    }

    /// Twice the room, keeping the records of `base..end`.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, base: u64, end: u64) {
        let mut bigger = SentRing::with_size(2 * self.slots.len());
        for pn in base..end {
            *bigger.at_mut(pn) = *self.at(pn);
        }
        *self = bigger;
    }
}

/// A permission to send one packet now ([`Sender::permit_send`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendPermit {
    /// Whether the pacer pays for the packet (no probe allowance is used).
    paced: bool,
}

/// TCP recovery's state (`TcpSocketState::m_congState`, reduced to what the timer needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TcpState {
    /// `CA_OPEN`/`CA_DISORDER`: every advance of the cumulative point restarts the timeout.
    Open,
    /// `CA_RECOVERY` until the cumulative point reaches `until` (the next packet number when it
    /// began): only the first partial acknowledgement restarts the timeout.
    Recovery { until: u64, first_partial: bool },
    /// `CA_LOSS` after a timeout, until the cumulative point reaches `until`.
    Loss { until: u64 },
}

/// The rate sample being built from one ACK frame.
#[derive(Clone, Copy, Debug, Default)]
struct SampleAcc {
    prior_delivered: Option<u64>,
    prior_time: Time,
    send_elapsed: Duration,
    ack_elapsed: Duration,
    app_limited: bool,
    newly_acked: u64,
    rtt: Option<Duration>,
}

/// The sender.
#[derive(Debug)]
pub struct Sender {
    cfg: SenderConfig,
    cc: Box<dyn WindowController>,
    /// [`WindowController::reads`] of `cc`.
    reads: Reads,
    /// `cc`'s window and the pacing rate (see [`Sender::pacing_rate`]) as of the last call into
    /// `cc` or update of `rtt`, the only things that change them ([`Sender::refresh`]): the
    /// sender asks for them several times a packet, a dynamic call each.
    window: u64,
    pacing: Option<f64>,
    /// Whether `pacing` was worked out from the RTT estimator (none yet, or the sender's own
    /// rate over the smoothed RTT): it may then move with every sample.
    pacing_reads_rtt: bool,
    rtt: RttEstimator,
    /// Sent packets from `base_pn` to `next_pn`, by packet number.
    sent: SentRing,
    base_pn: u64,
    next_pn: u64,
    largest_acked: Option<u64>,
    /// Outstanding packet numbers below the largest acknowledged, ascending (TCP: and the holes
    /// there).
    suspects: Vec<u64>,
    in_flight: u64,
    loss_time: Option<Time>,
    pto_count: u32,
    last_ack_eliciting: Option<Time>,
    /// Probe packets the PTO allows beyond the window.
    probes: u32,
    /// New payload bytes still to send.
    to_send: u64,
    /// Lost payload bytes to send again.
    retx: u64,
    tokens: f64,
    last_refill: Time,
    /// A full packet in bits, and the most tokens the pacer saves up (`burst_packets` of them),
    /// as `f64`: asked at every poll, and the settings never change.
    packet_bits: f64,
    token_cap: f64,
    stats: SenderStats,
    /// Bytes delivered (acknowledged) so far, and when the last were.
    delivered: u64,
    delivered_time: Time,
    /// Send time of the newest packet acknowledged: the start of the next send interval.
    first_sent_time: Time,
    /// Nonzero while the flow is application-limited: `delivered` at which that period ends.
    app_limited_until: u64,
    acc: SampleAcc,
    /// Message mode: the application hands over packets and gets lost ones back.
    messages: bool,
    /// Whether TCP's loss recovery runs (configured, in message mode): asked several times per
    /// packet, so kept as a flag.
    tcp_on: bool,
    /// Whether [`Sender::ack_run`] may take the commonest frames: the controller reads neither
    /// per-packet calls ([`Reads::acks`]) nor sample details (decided once: its reads never
    /// change).
    ack_run_way: bool,
    app_pending: bool,
    lost_tags: VecDeque<(u64, Bytes)>,
    /// TCP recovery: the hole each lost tag's data fills, until it is sent again.
    holes: FastMap<u64, u64>,
    /// TCP recovery: when the retransmission timeout fires.
    rto_at: Option<Time>,
    /// TCP recovery: timeouts since the cumulative point last advanced (the backoff exponent).
    rto_count: u32,
    tcp_state: TcpState,
    /// TCP recovery: the cumulative point (the oldest packet still holding undelivered data).
    snd_una: u64,
}

impl Sender {
    /// A sender driven by `cc`.
    pub fn new(cfg: SenderConfig, cc: Box<dyn WindowController>) -> Sender {
        let to_send = cfg.size.unwrap_or(u64::MAX);
        let mut s = Sender {
            reads: cc.reads(),
            window: 0,
            pacing: None,
            pacing_reads_rtt: true,
            cc,
            rtt: RttEstimator::default(),
            sent: SentRing::with_size(1024),
            base_pn: 0,
            next_pn: 0,
            largest_acked: None,
            suspects: Vec::new(),
            in_flight: 0,
            loss_time: None,
            pto_count: 0,
            last_ack_eliciting: None,
            probes: 0,
            to_send,
            retx: 0,
            tokens: 0.0,
            last_refill: Time::ZERO,
            packet_bits: (cfg.packet_size.0 * 8) as f64,
            token_cap: (cfg.burst_packets * cfg.packet_size.0 * 8) as f64,
            stats: SenderStats::default(),
            delivered: 0,
            delivered_time: Time::ZERO,
            first_sent_time: Time::ZERO,
            app_limited_until: 0,
            acc: SampleAcc::default(),
            messages: false,
            tcp_on: false,
            ack_run_way: false,
            app_pending: false,
            lost_tags: VecDeque::new(),
            holes: FastMap::default(),
            rto_at: None,
            rto_count: 0,
            tcp_state: TcpState::Open,
            snd_una: 0,
            cfg,
        };
        s.ack_run_way = !s.reads.acks && !s.reads.sample_details;
        s.refresh();
        s
    }

    /// Reads the window and the pacing rate again, after a call into the controller or an
    /// update of the RTT estimator. (Not inlined: two dynamic calls anyway, and its callers ask
    /// for it mostly not at all.)
    #[inline(never)]
    fn refresh(&mut self) {
        self.window = self.cc.window();
        let controller_rate = if self.rtt.has_sample() { self.cc.pacing_rate(&self.rtt) } else { None };
        self.pacing_reads_rtt = controller_rate.is_none();
        self.pacing = self.compute_pacing_rate(controller_rate);
    }

    /// Whether TCP's loss recovery runs (configured, in message mode).
    fn tcp(&self) -> bool {
        self.tcp_on
    }

    /// TCP recovery: forgets the hole `tag`'s data fills, if any (its data was sent again or
    /// delivered). Holes are rare, and a look-up in an empty map still hashes: asked first.
    fn take_hole(&mut self, tag: u64) -> Option<u64> {
        if self.holes.is_empty() {
            None
        } else {
            self.holes.remove(&tag)
        }
    }

    /// The retransmission timeout now (RFC 6298 §2, with the backoff of the timeouts so far).
    /// (Inlined: worked out at nearly every ACK under TCP's recovery.)
    #[inline(always)]
    fn rto(&self) -> Duration {
        let Some(t) = &self.cfg.tcp else { return Duration::ZERO };
        let base = self.rtt.smoothed() + (self.rtt.var() * 4).max(t.granularity);
        let rto = base.max(t.min_rto);
        if t.backoff {
            rto * (1u64 << self.rto_count.min(16))
        } else {
            rto
        }
    }

    /// Message mode: whether a lost packet the application holds (`tag`, from
    /// [`Sender::pop_lost`]) still needs sending. Always true under RFC 9002's recovery; under
    /// TCP's, false once the late original (or another copy) was acknowledged meanwhile.
    pub fn still_lost(&self, tag: u64) -> bool {
        !self.tcp() || (!self.holes.is_empty() && self.holes.contains_key(&tag))
    }

    /// The controller.
    pub fn controller(&self) -> &dyn WindowController {
        self.cc.as_ref()
    }

    /// The RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// An RTT sample taken before any data was sent (the handshake's round trip, RFC 9002 §5):
    /// the first flight is then paced and its loss timers sized from it.
    pub fn on_handshake_rtt(&mut self, now: Time, rtt: Duration) {
        self.rtt.update(now, rtt, Duration::ZERO);
        self.refresh();
    }

    /// Bytes in flight.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// Whether all data was delivered.
    pub fn is_done(&self) -> bool {
        self.to_send == 0 && self.retx == 0 && self.in_flight == 0
    }

    fn has_data(&self) -> bool {
        // (The application's flag first: a media sender, asked several times a packet, mostly
        // has a packet waiting, and its own byte counts are always zero.)
        self.app_pending || self.to_send > 0 || self.retx > 0 || !self.lost_tags.is_empty()
    }

    /// A sender in message mode: no byte stream of its own; the application sends tagged
    /// packets ([`Sender::send_message`]) and decides what to do with lost ones
    /// ([`Sender::pop_lost`]): how media travels over the transport.
    pub fn for_messages(cfg: SenderConfig, cc: Box<dyn WindowController>) -> Sender {
        let mut s = Sender::new(SenderConfig { size: Some(0), ..cfg }, cc);
        s.messages = true;
        s.tcp_on = s.cfg.tcp.is_some();
        s
    }

    /// The pacing rate, bits per second (`None`: unpaced), as of the last [`Sender::refresh`].
    fn pacing_rate(&self) -> Option<f64> {
        self.pacing
    }

    /// The pacing rate from `controller_rate`, the controller's (asked once the RTT has a
    /// sample).
    fn compute_pacing_rate(&self, controller_rate: Option<Bitrate>) -> Option<f64> {
        if !self.rtt.has_sample() {
            return None; // the initial window goes out unpaced
        }
        let r = match controller_rate {
            Some(r) => r.as_bps_f64(),
            None => self.cfg.pacing_gain * self.window as f64 * 8.0 / self.rtt.smoothed().as_secs_f64(),
        };
        Some(r.max(1.0))
    }

    /// Whether packets are paced: [`Sender::pacing_rate`] is `Some` exactly once the RTT has a
    /// sample (asked without computing the rate, which the sender needs several times a packet).
    fn is_paced(&self) -> bool {
        self.rtt.has_sample()
    }

    /// Adds the tokens earned since the last refill at pacing rate `rate` (`None`: unpaced).
    fn refill(&mut self, now: Time, rate: Option<f64>) {
        if let Some(rate) = rate {
            // `min` written out: the cap is positive, so only a NaN sum tells the two apart, and
            // both give the cap then (`f64::min` checks for NaN in three instructions more).
            let tokens = self.tokens + rate * (now - self.last_refill).as_secs_f64();
            self.tokens = if tokens < self.token_cap { tokens } else { self.token_cap };
        }
        self.last_refill = now;
    }

    /// Whether the window (or a probe) lets a full packet leave.
    fn window_open(&self) -> bool {
        self.probes > 0 || self.in_flight + self.cfg.packet_size.0 <= self.window
    }

    /// The next packet to send at `now`: `(packet number, size on the wire)`.
    #[inline]
    pub fn poll_transmit(&mut self, now: Time) -> Option<(u64, Bytes)> {
        debug_assert!(!self.messages, "a message-mode sender sends with send_message");
        let paced = self.permit(now)?;
        let max_payload = self.cfg.packet_size.0.saturating_sub(self.cfg.overhead.0).max(1);
        let from_retx = self.retx.min(max_payload);
        let from_new = self.to_send.min(max_payload - from_retx);
        self.retx -= from_retx;
        self.to_send -= from_new;
        let payload = from_retx + from_new;
        // A probe with nothing left to say is a 1-byte PING.
        let size = if payload == max_payload {
            self.cfg.packet_size.0
        } else {
            self.cfg.overhead.0 + payload.max(1)
        };
        self.stats.bytes_retransmitted += from_retx;
        Some((self.record(now, size, payload, 0, paced), Bytes(size)))
    }

    /// Whether a packet may leave now (window, probe allowance and pacer); `Some(paced)`.
    /// (Inlined into its two callers, as are `record` and `poll_timeout`: the simulator makes
    /// these calls several times a packet, and their own call frames cost a fifth of them.)
    #[inline(always)]
    fn permit(&mut self, now: Time) -> Option<bool> {
        // (The window first: mostly closed when asked again after a send.)
        if !self.window_open() {
            return None;
        }
        if !(self.has_data() || self.probes > 0) {
            // Nothing to send though the window allows it: rate samples taken until what is in
            // flight now is delivered understate the path (delivery-rate estimation §3.4).
            self.app_limited_until = (self.delivered + self.in_flight).max(1);
            return None;
        }
        // Polled again at the instant of the last refill (after a send, mostly): a refill would
        // add `rate x 0` and cap, which leaves the tokens as they are, bit for bit (they never
        // exceed the cap, and a -0.0 only turns into 0.0), so the pacing rate is not asked for.
        // The rate is finite there unless it is the default one over a zero smoothed RTT
        // (`inf x 0` would reset the tokens to the cap): refilled as before then.
        if now != self.last_refill || self.rtt.smoothed() == Duration::ZERO {
            let rate = self.pacing_rate();
            self.refill(now, rate);
        }
        // (`pacing_rate` is `Some` exactly when `is_paced`.)
        let paced = self.probes == 0 && self.is_paced();
        if paced && self.tokens < self.packet_bits {
            return None;
        }
        Some(paced)
    }

    /// Books a packet that leaves now; returns its packet number.
    #[inline(always)]
    fn record(&mut self, now: Time, size: u64, payload: u64, tag: u64, paced: bool) -> u64 {
        // TCP: a lost tag sent again repairs its hole once acknowledged; a send arms the timeout
        // when it is not running (`SendDataPacket`).
        let retx_of = if self.tcp() { self.take_hole(tag) } else { None };
        if self.tcp() && self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto());
        }
        if paced {
            self.tokens -= u64_to_f64(size * 8);
        }
        self.probes = self.probes.saturating_sub(1);
        let pn = self.next_pn;
        if pn - self.base_pn == self.sent.size() {
            self.sent.grow(self.base_pn, pn);
        }
        self.next_pn += 1;
        if self.in_flight == 0 {
            // Start of a new send interval after an idle period.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        *self.sent.at_mut(pn) = Sent {
            size: size as u32,
            payload: payload as u32,
            time: now,
            outstanding: true,
            tag,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until != 0,
            retx_of: retx_of.unwrap_or(NEW_DATA),
            hole: false,
        };
        self.in_flight += size;
        self.last_ack_eliciting = Some(now);
        self.stats.packets_sent += 1;
        if self.reads.sent {
            self.tell_sent(now, size);
        }
        pn
    }

    /// [`WindowController::on_sent`] for a controller that reads it, then [`Sender::refresh`].
    /// (Apart: the artifact's Copa reads none, and a send made room for the call.)
    #[inline(never)]
    fn tell_sent(&mut self, now: Time, size: u64) {
        self.cc.on_sent(now, size, self.in_flight);
        self.refresh();
    }

    /// Message mode: tells the sender whether the application has a packet waiting (it then
    /// paces and probes for it; without one, rate samples are marked application-limited).
    pub fn set_pending(&mut self, pending: bool) {
        self.app_pending = pending;
    }

    /// Message mode: whether a packet may leave now. Call [`Sender::send_message`] right after
    /// a `true`.
    #[inline]
    pub fn can_send(&mut self, now: Time) -> bool {
        self.permit(now).is_some()
    }

    /// Message mode: [`Sender::can_send`], with what [`Sender::send_permitted`] needs to know
    /// of the permission (whether the pacer pays for the packet), so that it need not work it
    /// out again.
    #[inline]
    pub fn permit_send(&mut self, now: Time) -> Option<SendPermit> {
        self.permit(now).map(|paced| SendPermit { paced })
    }

    /// Message mode: [`Sender::send_message`] right after [`Sender::permit_send`] gave `permit`.
    #[inline]
    pub fn send_permitted(&mut self, permit: SendPermit, now: Time, size: Bytes, tag: u64) -> u64 {
        debug_assert_eq!(permit.paced, self.probes == 0 && self.is_paced());
        let payload = size.0.saturating_sub(self.cfg.overhead.0);
        self.record(now, size.0, payload, tag, permit.paced)
    }

    /// Message mode: sends a packet of `size` on the wire that the application knows by `tag`
    /// (given back by [`Sender::pop_lost`] if it is lost); returns its packet number.
    #[inline]
    pub fn send_message(&mut self, now: Time, size: Bytes, tag: u64) -> u64 {
        let paced = self.probes == 0 && self.is_paced();
        let payload = size.0.saturating_sub(self.cfg.overhead.0);
        self.record(now, size.0, payload, tag, paced)
    }

    /// Message mode: the next packet declared lost (or to be probed again after a timeout),
    /// oldest first: `(tag, size)`. The application resends it or gives it up.
    pub fn pop_lost(&mut self) -> Option<(u64, Bytes)> {
        self.lost_tags.pop_front()
    }

    fn entry(&mut self, pn: u64) -> Option<&mut Sent> {
        // (`pn` below `base_pn` wraps to beyond the live range.)
        (pn.wrapping_sub(self.base_pn) < self.next_pn - self.base_pn).then(|| self.sent.at_mut(pn))
    }

    /// Marks `pn` acknowledged if it was outstanding.
    #[inline(always)]
    fn ack_packet(&mut self, now: Time, pn: u64) {
        if self.entry(pn).is_some() {
            self.ack_live(now, pn);
        }
    }

    /// [`Sender::ack_packet`] of a packet known to be in the live range (`base_pn..next_pn`),
    /// as the ranges above the previous largest are: no range check.
    #[inline(always)]
    fn ack_live(&mut self, now: Time, pn: u64) {
        debug_assert!(self.base_pn <= pn && pn < self.next_pn);
        let tcp = self.tcp();
        let s = self.sent.at_mut(pn);
        if !s.outstanding {
            self.ack_not_outstanding(now, pn);
            return;
        }
        s.outstanding = false;
        // (The fields read, not a copy of the record: most of it is read only under TCP's
        // recovery or for a detailed rate sample.)
        let (size, payload, time, delivered) = (u64::from(s.size), u64::from(s.payload), s.time, s.delivered);
        self.in_flight -= size;
        if tcp {
            let s = *self.sent.at(pn);
            if let Some(orig) = s.retx_of() {
                if let Some(e) = self.entry(orig) {
                    e.hole = false;
                }
            }
            self.take_hole(s.tag);
        }
        self.deliver_parts(now, pn, size, payload, time, delivered, true);
        if self.reads.acks {
            self.cc.on_ack(now, time, size, false, &self.rtt);
        }
    }

    /// [`Sender::deliver`] of the record of `pn` from the fields read already (the detailed
    /// sample's read where they are needed).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn deliver_parts(
        &mut self,
        now: Time,
        pn: u64,
        size: u64,
        payload: u64,
        time: Time,
        delivered: u64,
        sample_rtt: bool,
    ) {
        self.stats.bytes_acked += payload;
        self.delivered += size;
        self.delivered_time = now;
        let acc = &mut self.acc;
        acc.newly_acked += size;
        // The sample is taken over the newest packet acknowledged (the one sent last).
        if acc.prior_delivered.is_none_or(|d| delivered >= d) {
            acc.prior_delivered = Some(delivered);
            if sample_rtt {
                acc.rtt = Some(now - time);
            }
            if self.reads.sample_details {
                let s = self.sent.at(pn);
                acc.prior_time = s.delivered_time;
                acc.app_limited = s.app_limited;
                acc.send_elapsed = time - s.first_sent_time;
                acc.ack_elapsed = now - s.delivered_time;
                self.first_sent_time = time;
            }
        }
    }

    /// [`Sender::ack_live`] of a packet no longer outstanding. (Apart: rare, and its copy of the
    /// record made the common way's callers save registers.)
    #[cold]
    #[inline(never)]
    fn ack_not_outstanding(&mut self, now: Time, pn: u64) {
        // TCP: lost data arrived after all (the late original, or a copy a timeout gave up
        // on): its hole is repaired.
        let s = *self.sent.at(pn);
        let hole =
            if s.hole { Some(pn) } else { s.retx_of().filter(|&o| self.entry(o).is_some_and(|e| e.hole)) };
        if let Some(h) = hole {
            if let Some(e) = self.entry(h) {
                e.hole = false;
            }
            self.take_hole(s.tag);
            self.deliver(now, &s, false);
        }
    }

    /// Counts `s` delivered into the rate sample being built (`sample_rtt`: its RTT may be the
    /// sample's).
    fn deliver(&mut self, now: Time, s: &Sent, sample_rtt: bool) {
        self.stats.bytes_acked += u64::from(s.payload);
        self.delivered += u64::from(s.size);
        self.delivered_time = now;
        let acc = &mut self.acc;
        acc.newly_acked += u64::from(s.size);
        // The sample is taken over the newest packet acknowledged (the one sent last).
        if acc.prior_delivered.is_none_or(|d| s.delivered >= d) {
            acc.prior_delivered = Some(s.delivered);
            if sample_rtt {
                acc.rtt = Some(now - s.time);
            }
            if self.reads.sample_details {
                acc.prior_time = s.delivered_time;
                acc.app_limited = s.app_limited;
                acc.send_elapsed = s.time - s.first_sent_time;
                acc.ack_elapsed = now - s.delivered_time;
                self.first_sent_time = s.time;
            }
        }
    }

    /// An ACK frame arrived. (The commonest frames, the packets after the previous largest,
    /// take a shorter way: see [`Sender::ack_run`]. Inlined: the simulator's call per ACK
    /// saved and restored registers once more for it.)
    #[inline(always)]
    pub fn on_ack(&mut self, now: Time, frame: &AckFrame) {
        let ranges = &frame.ranges[..];
        if let (Some(&(first_lo, largest)), Some(p)) = (ranges.first(), self.largest_acked) {
            if self.ack_run_way
                && p < largest
                && largest < self.next_pn
                && first_lo <= p + 1
                && self.base_pn <= p + 1
                && (self.suspects.is_empty() || self.holes_stay(frame, first_lo))
                && ranges.get(1).is_none_or(|r| r.1 <= p)
                && self.sent.at(largest).outstanding
                && (largest == p + 1 || self.all_outstanding(p + 1, largest))
            {
                self.ack_run(now, frame, p + 1, largest);
                return;
            }
        }
        self.on_ack_frame(now, frame);
    }

    /// [`Sender::on_ack`] of a frame that newly acknowledges only `first..=largest`, the packets
    /// after the previous largest, all outstanding, with no suspects below them or only holes
    /// of TCP's recovery that stay as they are ([`Sender::holes_stay`]), for a controller that
    /// reads no per-packet calls and no sample details (`ack_run_way`): what
    /// [`Sender::on_ack_frame`] does then, step for step, without its checks of the frame, its
    /// rate sample built in memory and read back, or its loss detection (nothing to detect,
    /// unless an acknowledged retransmission repaired a hole: then it runs). With ACKs of every
    /// packet or every second one (the Zhuge runs, FastAck's AP), nearly every frame is such.
    #[inline(always)]
    fn ack_run(&mut self, now: Time, frame: &AckFrame, first: u64, largest: u64) {
        let tcp = self.tcp();
        // RTT sample from the largest (RFC 9002 §5.1); the rate sample's too (it is the newest
        // sent, and outstanding).
        let time = self.sent.at(largest).time;
        let rtt = now - time;
        self.rtt.update(now, rtt, frame.ack_delay.min(self.cfg.max_ack_delay));
        // (The largest first, straight: mostly the only one. All are outstanding, so the order
        // does not matter: no acknowledgement reads what another writes.)
        let mut repaired = false;
        let mut newly_acked = self.ack_fresh(largest, tcp, &mut repaired);
        for pn in first..largest {
            newly_acked += self.ack_fresh(pn, tcp, &mut repaired);
        }
        self.delivered_time = now;
        self.largest_acked = Some(largest);
        let events_before = self.stats.congestion_events;
        self.process_ecn(now, frame, Some(time));
        // (`detect_lost` with no suspects, or with holes that stay suspects, none declared lost:
        // only a repaired hole leaves them.)
        if repaired && !self.suspects.is_empty() {
            self.detect_lost(now);
        } else {
            self.loss_time = None;
        }
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        // No loss was declared: the rate sample's count of them is zero.
        let moved = !self.reads.rate_samples || self.cc.on_rtt_sample(now, rtt, newly_acked, 0, &self.rtt);
        self.pto_count = 0;
        self.advance_base();
        if tcp {
            self.on_cumulative(now);
        }
        if moved || self.pacing_reads_rtt || self.stats.congestion_events != events_before {
            self.refresh();
        }
    }

    /// Whether `frame`, whose first range starts at `first_lo`, leaves every suspect as it is:
    /// all are holes of TCP's recovery (live, lost, data not delivered), which its loss
    /// detection keeps and never declares lost again, and the frame acknowledges none (each
    /// lies below its first range and in none of its older ones). (Apart: suspects stay about
    /// a round trip after a loss.)
    #[inline(never)]
    fn holes_stay(&self, frame: &AckFrame, first_lo: u64) -> bool {
        if !self.tcp() {
            return false;
        }
        // Suspects ascend and ranges descend: one walk of both from the top, where the recent
        // holes are (a search of up to 32 ranges per suspect cost several times more).
        let older = &frame.ranges[1..];
        let mut j = 0;
        for &pn in self.suspects.iter().rev() {
            let s = self.sent.at(pn);
            if !(self.base_pn <= pn && pn < first_lo && s.hole && !s.outstanding) {
                return false;
            }
            // `older[..j]` lie wholly above `pn`; the next holds it if it reaches down to it.
            while j < older.len() && older[j].0 > pn {
                j += 1;
            }
            if j < older.len() && older[j].1 >= pn {
                return false;
            }
        }
        true
    }

    /// Whether the packets `first..end` (live) are all outstanding.
    #[inline(always)]
    fn all_outstanding(&self, first: u64, end: u64) -> bool {
        (first..end).all(|pn| self.sent.at(pn).outstanding)
    }

    /// [`Sender::ack_run`]'s acknowledgement of outstanding packet `pn` (`tcp`: under TCP's
    /// recovery): its bytes, delivered; `repaired` is set if it carried lost data again.
    #[inline(always)]
    fn ack_fresh(&mut self, pn: u64, tcp: bool, repaired: &mut bool) -> u64 {
        let s = self.sent.at_mut(pn);
        s.outstanding = false;
        let (size, payload, retx_of, tag) = (u64::from(s.size), u64::from(s.payload), s.retx_of, s.tag);
        self.in_flight -= size;
        if tcp {
            if retx_of != NEW_DATA {
                *repaired = true;
                if let Some(e) = self.entry(retx_of) {
                    e.hole = false;
                }
            }
            self.take_hole(tag);
        }
        self.stats.bytes_acked += payload;
        self.delivered += size;
        size
    }

    /// Moves `base_pn` past the packets no longer outstanding (holes stay: they hold TCP's
    /// cumulative point).
    #[inline(always)]
    fn advance_base(&mut self) {
        while self.base_pn < self.next_pn && {
            let s = self.sent.at(self.base_pn);
            !s.outstanding && !s.hole
        } {
            self.base_pn += 1;
        }
    }

    /// [`Sender::on_ack`] of any frame.
    #[inline(never)]
    fn on_ack_frame(&mut self, now: Time, frame: &AckFrame) {
        let ranges = &frame.ranges[..];
        let Some(&(first_lo, largest)) = ranges.first() else { return };
        if largest >= self.next_pn {
            return; // acknowledges packets never sent: ignore the frame
        }
        let prev = self.largest_acked;
        // The common frame: above the previous largest it acknowledges the packets after it and
        // no hole (they arrived in order; older ranges lie below it). Then the packets to
        // acknowledge there are those after it up to the largest, all live, and the largest is
        // newly acknowledged: what `ack_ranges` finds, without its walk.
        let largest_sent = match prev {
            Some(p)
                if p < largest
                    && first_lo <= p + 1
                    && self.base_pn <= p + 1
                    && ranges.get(1).is_none_or(|r| r.1 <= p) =>
            {
                let s = self.sent.at(largest);
                let (time, outstanding) = (s.time, s.outstanding);
                // RTT sample from the largest (RFC 9002 §5.1).
                if outstanding {
                    let delay = frame.ack_delay.min(self.cfg.max_ack_delay);
                    self.rtt.update(now, now - time, delay);
                }
                // Below it, only the suspects can be newly acknowledged (as in `ack_ranges`).
                if !self.suspects.is_empty() {
                    self.ack_suspects(now, frame);
                }
                for pn in p + 1..largest + 1 {
                    self.ack_live(now, pn);
                }
                Some(time)
            }
            _ => self.ack_ranges(now, frame, prev, largest),
        };
        self.largest_acked = Some(prev.map_or(largest, |p| p.max(largest)));
        let events_before = self.stats.congestion_events;
        self.process_ecn(now, frame, largest_sent);
        let lost_before = self.stats.packets_lost;
        self.detect_lost(now);
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        // Only these three start each frame afresh: the others are written with `prior_delivered`
        // and read only when it is set (a whole reset stored all nine words; and they are read
        // where they are used, as a copy of the whole loaded them all).
        let prior_delivered = self.acc.prior_delivered.take();
        let newly_acked = std::mem::take(&mut self.acc.newly_acked);
        let acc_rtt = self.acc.rtt.take();
        // TCP: an ACK of late originals alone still reaches the controller, with the latest RTT
        // (ns-3 calls `CongControl` on every ACK; its rate sample keeps the last RTT measured).
        let fallback = || (self.tcp() && self.rtt.has_sample()).then(|| self.rtt.latest());
        let sample =
            if self.reads.rate_samples { prior_delivered.zip(acc_rtt.or_else(fallback)) } else { None };
        // Whether the window or the pacing rate may have moved (see the end).
        let mut moved = true;
        if let Some((_, rtt)) = sample.filter(|_| !self.reads.sample_details) {
            let lost = self.stats.packets_lost - lost_before;
            moved = self.cc.on_rtt_sample(now, rtt, newly_acked, lost, &self.rtt);
        } else if let Some((prior_delivered, rtt)) = sample {
            let acc = &self.acc;
            let interval = acc.send_elapsed.max(acc.ack_elapsed);
            let delivered = self.delivered - prior_delivered;
            let sample = RateSample {
                delivery_rate: (self.reads.delivery_rate
                    && interval > Duration::ZERO
                    && interval >= self.rtt.min())
                .then(|| Bitrate::from_bps_f64(delivered as f64 * 8.0 / interval.as_secs_f64())),
                delivered,
                interval,
                prior_delivered,
                total_delivered: self.delivered,
                is_app_limited: acc.app_limited,
                newly_acked,
                newly_lost_packets: self.stats.packets_lost - lost_before,
                rtt,
                in_flight: self.in_flight,
            };
            moved = self.cc.on_rate_sample(now, &sample, &self.rtt);
        }
        if self.reads.acks {
            self.cc.on_end_acks(now, self.in_flight, self.app_limited_until != 0, largest);
        }
        self.pto_count = 0;
        self.advance_base();
        if self.tcp() {
            self.on_cumulative(now);
        }
        // Read again unless the only call into the controller was a rate sample that moved
        // neither, and the pacing rate is the controller's own (not from the estimator, which
        // this frame updated).
        if moved || self.reads.acks || self.pacing_reads_rtt || self.stats.congestion_events != events_before
        {
            self.refresh();
        }
    }

    /// [`Sender::on_ack`]'s walk of any frame: the RTT sample, the suspects the frame
    /// acknowledges, and its ranges above the previous largest `prev` (new holes become
    /// suspects); returns when the largest acknowledged was sent, if it is live. (Apart: mostly
    /// the common frame's way is taken.)
    #[inline(never)]
    fn ack_ranges(&mut self, now: Time, frame: &AckFrame, prev: Option<u64>, largest: u64) -> Option<Time> {
        // (One look-up, and only the two fields needed: a copy of the entry is 80 bytes.)
        let largest_entry = self.entry(largest).map(|s| (s.time, s.outstanding));
        let largest_sent = largest_entry.map(|(time, _)| time);
        // RTT sample from the largest, if it is newly acknowledged (RFC 9002 §5.1).
        if prev.is_none_or(|p| largest > p) {
            if let Some((time, true)) = largest_entry {
                let delay = frame.ack_delay.min(self.cfg.max_ack_delay);
                self.rtt.update(now, now - time, delay);
            }
        }
        // Holes below the previous largest: only the suspects can be newly acknowledged there.
        if !self.suspects.is_empty() {
            self.ack_suspects(now, frame);
        }
        // Above it: walk the ranges upwards, acknowledging and noting the holes.
        let lower = prev.map_or(self.base_pn, |p| p + 1).max(self.base_pn);
        let mut cursor = lower;
        // Ranges entirely below it (the long tail of old holes a lossy flow's frames repeat,
        // up to 32) are not walked: ranges are highest first. Mostly only the first range
        // reaches above it (packets arrive in order), which the second range's end tells
        // without a binary search.
        let above = match frame.ranges.get(1) {
            Some(&(_, hi)) if hi >= lower => frame.ranges.partition_point(|&(_, hi)| hi >= lower),
            _ => usize::from(largest >= lower),
        };
        for &(lo, hi) in frame.ranges[..above].iter().rev() {
            for pn in cursor..lo.max(cursor) {
                // (TCP: a hole too, so that its late original is seen.)
                if self.entry(pn).is_some_and(|s| s.outstanding || s.hole) {
                    self.suspects.push(pn);
                }
            }
            // (A half-open range: `..=` iterates with an extra flag. `hi` < `next_pn`, no overflow;
            // and `base_pn` <= `lower`: all in the live range.)
            for pn in lo.max(lower)..hi + 1 {
                self.ack_live(now, pn);
            }
            cursor = hi + 1;
        }
        largest_sent
    }

    /// The suspects `frame` acknowledges, acknowledged and no longer suspects (apart from
    /// [`Sender::on_ack`]: mostly there are none, and the loop cost its caller spilled registers).
    #[inline(never)]
    fn ack_suspects(&mut self, now: Time, frame: &AckFrame) {
        // Suspects ascend and ranges descend: one walk of both, from the lowest range up, and
        // the suspects kept moved down in place. (A binary search of the ranges per suspect, and
        // a shift of the rest per suspect acknowledged, made each ACK of a lossy period cost
        // thousands of instructions under TCP's recovery, whose holes stay suspects.)
        let mut suspects = std::mem::take(&mut self.suspects);
        let ranges = &frame.ranges[..];
        // `ranges[j..]` lie wholly below the suspect at hand. (Found by binary search for the
        // lowest: the suspects are mostly a few recent holes near the top of a frame that
        // reports up to 32 ranges, which the walk up from the lowest range went through.)
        let mut j =
            suspects.first().map_or(ranges.len(), |&lowest| ranges.partition_point(|r| r.1 >= lowest));
        let mut kept = 0;
        for k in 0..suspects.len() {
            let pn = suspects[k];
            while j > 0 && ranges[j - 1].1 < pn {
                j -= 1;
            }
            if j > 0 && ranges[j - 1].0 <= pn {
                self.ack_packet(now, pn);
            } else {
                suspects[kept] = pn;
                kept += 1;
            }
        }
        suspects.truncate(kept);
        self.suspects = suspects;
    }

    /// TCP: restarts the timeout if the cumulative point advanced (`NewAck`), as the state allows,
    /// and leaves recovery once it passes the recovery point. (Inlined into both ways of
    /// `on_ack`: a call of its own per ACK cost a sixth of it.)
    #[inline(always)]
    fn on_cumulative(&mut self, now: Time) {
        let una = self.base_pn;
        if una <= self.snd_una {
            return;
        }
        self.snd_una = una;
        let restart = self.tcp_state == TcpState::Open || self.leave_recovery(una);
        if restart {
            self.rto_count = 0;
            let pending = self.in_flight > 0 || self.next_pn > self.base_pn;
            self.rto_at = pending.then(|| now + self.rto());
        }
    }

    /// TCP: [`Sender::on_cumulative`] outside the open state, the cumulative point now `una`:
    /// whether the timeout restarts. (Apart: mostly the state is open.)
    #[cold]
    #[inline(never)]
    fn leave_recovery(&mut self, una: u64) -> bool {
        match self.tcp_state {
            TcpState::Open => true,
            TcpState::Recovery { until, .. } | TcpState::Loss { until } if una >= until => {
                self.tcp_state = TcpState::Open;
                true
            }
            TcpState::Recovery { until, first_partial } => {
                self.tcp_state = TcpState::Recovery { until, first_partial: false };
                first_partial
            }
            TcpState::Loss { .. } => true,
        }
    }

    /// TCP: the retransmission timeout fired (`ReTxTimeout`): everything in flight is lost.
    fn on_rto(&mut self, now: Time) {
        self.rto_at = None;
        if self.next_pn == self.base_pn {
            return;
        }
        self.stats.rtos += 1;
        self.rto_count += 1;
        let (mut lost_bytes, mut newest) = (0, None);
        for pn in self.base_pn..self.next_pn {
            let s = *self.sent.at(pn);
            if !s.outstanding {
                continue;
            }
            let hole = s.retx_of().unwrap_or(pn);
            self.sent.at_mut(pn).outstanding = false;
            if let Some(e) = self.entry(hole) {
                e.hole = true;
            }
            self.in_flight -= u64::from(s.size);
            self.holes.insert(s.tag, hole);
            self.lost_tags.push_back((s.tag, Bytes(u64::from(s.size))));
            self.stats.packets_lost += 1;
            lost_bytes += u64::from(s.size);
            newest = Some(s.time);
        }
        // Every hole below the largest acknowledged is a suspect (the ones above are walked when
        // acknowledgements reach them).
        let largest = self.largest_acked.unwrap_or(0);
        self.suspects.clear();
        let sent = &self.sent;
        self.suspects.extend(
            (self.base_pn..self.next_pn).filter(|&pn| sent.at(pn).hole).take_while(|&pn| pn < largest),
        );
        self.tcp_state = TcpState::Loss { until: self.next_pn };
        self.stats.congestion_events += 1;
        self.cc.on_congestion_event(now, newest.unwrap_or(now), true, lost_bytes);
    }

    /// RFC 9002 §7.1 / Appendix B.7 (ProcessECN): an increase of the peer's CE count is a
    /// congestion event, dated by the send time of the frame's largest acknowledged packet (the
    /// controller reacts once per recovery period, as to a loss). `lost_bytes` is zero: nothing
    /// needs sending again.
    #[inline(always)]
    fn process_ecn(&mut self, now: Time, frame: &AckFrame, largest_sent: Option<Time>) {
        if frame.ecn.is_some() {
            self.process_ecn_counts(now, frame, largest_sent);
        }
    }

    /// [`Sender::process_ecn`] of a frame with ECN counts (apart: most flows send none).
    #[cold]
    #[inline(never)]
    fn process_ecn_counts(&mut self, now: Time, frame: &AckFrame, largest_sent: Option<Time>) {
        let Some(e) = frame.ecn else { return };
        if e.ce <= self.stats.ce_marks {
            return; // counts are cumulative: an older (reordered) frame says nothing new
        }
        self.stats.ce_marks = e.ce;
        if let Some(sent) = largest_sent {
            self.stats.congestion_events += 1;
            self.cc.on_congestion_event(now, sent, false, 0);
        }
    }

    /// RFC 9002 §6.1: packet and time thresholds over the suspects.
    #[inline]
    fn detect_lost(&mut self, now: Time) {
        let Some(largest) = self.largest_acked else { return };
        self.loss_time = None;
        if self.suspects.is_empty() {
            return; // nothing below the largest acknowledged is outstanding (the common case)
        }
        self.detect_lost_suspects(now, largest);
    }

    /// [`Sender::detect_lost`] once there are suspects (apart, so that the common case above
    /// costs its caller no call).
    #[inline(never)]
    fn detect_lost_suspects(&mut self, now: Time, largest: u64) {
        let tcp = self.tcp();
        // (TCP has no time threshold.)
        let loss_delay = if tcp {
            Duration::ZERO
        } else {
            let rtt = self.rtt.smoothed().max(self.rtt.latest()).as_secs_f64();
            Duration::from_secs_f64(self.cfg.time_threshold * rtt).max(self.cfg.granularity)
        };
        let (mut lost_bytes, mut newest_lost) = (0, None);
        // The suspects kept are moved down in place (see `ack_suspects`).
        let mut suspects = std::mem::take(&mut self.suspects);
        let mut kept = 0;
        for k in 0..suspects.len() {
            let pn = suspects[k];
            let s = match self.entry(pn) {
                Some(e) if e.outstanding => *e,
                // TCP: a hole is kept, so that a late acknowledgement of it is seen.
                Some(e) => {
                    if tcp && e.hole {
                        suspects[kept] = pn;
                        kept += 1;
                    }
                    continue;
                }
                None => continue,
            };
            // TCP: only the packet threshold, and never for a retransmission (see the module doc).
            let lost = if tcp {
                s.retx_of().is_none() && pn + self.cfg.packet_threshold <= largest
            } else {
                pn + self.cfg.packet_threshold <= largest || s.time + loss_delay <= now
            };
            if lost {
                if let Some(e) = self.entry(pn) {
                    e.outstanding = false;
                    e.hole = tcp;
                }
                self.in_flight -= u64::from(s.size);
                if tcp {
                    self.holes.insert(s.tag, pn);
                    if self.tcp_state == TcpState::Open {
                        self.tcp_state = TcpState::Recovery { until: self.next_pn, first_partial: true };
                    }
                }
                if self.messages {
                    self.lost_tags.push_back((s.tag, Bytes(u64::from(s.size))));
                } else {
                    self.retx += u64::from(s.payload);
                }
                self.stats.packets_lost += 1;
                lost_bytes += u64::from(s.size);
                newest_lost = Some(newest_lost.map_or(s.time, |t: Time| t.max(s.time)));
                if tcp {
                    // A hole stays a suspect: its late original may still be acknowledged.
                    suspects[kept] = pn;
                    kept += 1;
                }
            } else {
                if !tcp {
                    let t = s.time + loss_delay;
                    self.loss_time = Some(self.loss_time.map_or(t, |l| l.min(t)));
                }
                suspects[kept] = pn;
                kept += 1;
            }
        }
        suspects.truncate(kept);
        self.suspects = suspects;
        if let Some(sent) = newest_lost {
            self.stats.congestion_events += 1;
            self.cc.on_congestion_event(now, sent, false, lost_bytes);
        }
    }

    fn pto_time(&self) -> Option<Time> {
        if self.in_flight == 0 || self.tcp() {
            return None;
        }
        let base = self.rtt.pto_base(self.cfg.max_ack_delay);
        Some(self.last_ack_eliciting? + base * (1u64 << self.pto_count.min(16)))
    }

    /// Timers: TCP's retransmission timeout; else time-threshold losses, then the probe
    /// timeout (RFC 9002 §6.2: two probes). (Inlinable: a pacer's wake-up, mostly, finds none
    /// due, and a call to find that cost as much as the finding.)
    #[inline]
    pub fn handle_timeout(&mut self, now: Time) {
        // Under TCP's recovery the retransmission timeout is the only timer (`loss_time` is set
        // and `pto_time` given only under RFC 9002's, which never arms `rto_at`).
        if self.tcp() {
            if self.rto_at.is_some_and(|t| t <= now) {
                self.fire_rto(now);
            }
        } else {
            self.handle_timeout_rfc9002(now);
        }
    }

    /// TCP's retransmission timeout fired.
    #[cold]
    #[inline(never)]
    fn fire_rto(&mut self, now: Time) {
        self.on_rto(now);
        self.refresh();
    }

    /// [`Sender::handle_timeout`] under RFC 9002's recovery.
    #[inline(never)]
    fn handle_timeout_rfc9002(&mut self, now: Time) {
        debug_assert!(self.rto_at.is_none());
        if self.loss_time.is_some_and(|t| t <= now) {
            self.detect_lost(now);
            self.refresh();
        } else if self.pto_time().is_some_and(|t| t <= now) {
            self.pto_count += 1;
            self.stats.ptos += 1;
            self.probes = 2;
            // The oldest outstanding data is what the probes carry again.
            if let Some(s) = (self.base_pn..self.next_pn).map(|pn| *self.sent.at(pn)).find(|s| s.outstanding)
            {
                if self.messages {
                    self.lost_tags.push_back((s.tag, Bytes(u64::from(s.size))));
                } else {
                    self.retx += u64::from(s.payload);
                }
            }
        }
    }

    /// When the sender next needs to act: a loss or probe timer, or the pacer.
    #[inline(always)]
    pub fn poll_timeout(&self) -> Option<Time> {
        self.poll_timeout_or(None)
    }

    /// The earlier of [`Sender::poll_timeout`] and `other` (the application's own timer): the
    /// simulator asks after every event of the flow, and mostly the window is closed then
    /// (after a send), which leaves the loss or probe timer; the pacer's time, with its
    /// floating point, is worked out apart, so that this way saves no registers.
    #[inline(always)]
    pub fn poll_timeout_or(&self, other: Option<Time>) -> Option<Time> {
        if self.window_open() && (self.has_data() || self.probes > 0) {
            self.poll_timeout_paced(other)
        } else {
            earliest(other, self.timer())
        }
    }

    /// The loss and probe timers: TCP's recovery has only its retransmission timeout, RFC
    /// 9002's only the others (see `handle_timeout`).
    #[inline(always)]
    fn timer(&self) -> Option<Time> {
        if self.tcp() {
            self.rto_at
        } else {
            earliest(self.loss_time, self.pto_time())
        }
    }

    /// [`Sender::poll_timeout_or`] when the pacer decides when the next packet leaves (the
    /// window open, data waiting).
    #[inline(never)]
    fn poll_timeout_paced(&self, other: Option<Time>) -> Option<Time> {
        let pacer = match self.pacing_rate() {
            Some(rate) if self.probes == 0 => {
                let deficit = self.packet_bits - self.tokens;
                // One nanosecond more than the exact time, so the refill is never short.
                self.last_refill + Duration::from_secs_f64(deficit.max(0.0) / rate) + Duration(1)
            }
            _ => self.last_refill,
        };
        earliest(other, earliest(self.timer(), Some(pacer)))
    }

    /// The controller's current window.
    pub fn window(&self) -> Bytes {
        Bytes(self.cc.window())
    }

    /// The rate the controller means to send at ([`WindowController::send_rate`]).
    pub fn send_rate(&self) -> Option<Bitrate> {
        self.cc.send_rate(&self.rtt)
    }

    /// The controller's state, for logs and tests (`""` if it has no modes).
    pub fn mode(&self) -> &'static str {
        self.cc.mode()
    }

    /// The pacing rate in use (`None` before the first RTT sample).
    pub fn current_pacing_rate(&self) -> Option<Bitrate> {
        self.pacing_rate().map(Bitrate::from_bps_f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ack::{AckRanges, EcnCounts};
    use crate::NewRenoConfig;

    /// The short way for the commonest ACK frames ([`Sender::ack_run`]) leaves the sender exactly
    /// as the general way does: two Copa senders, one kept to the general way, fed the same
    /// frames of a path that loses 2 % of the packets and reorders some (jitter), acknowledged
    /// every packet or every second one, with and without TCP's recovery (which runs in message
    /// mode: its senders send tagged packets, lost ones again first; and also in order).
    #[test]
    fn the_short_way_for_the_commonest_acks_leaves_the_sender_as_the_general_way() {
        let tcp = || Some(TcpRecovery::default());
        // (`jitter` in microseconds; without it, TCP's holes are mostly the only suspects, which
        // the short way takes too. `late`: the percentage of packets 5 ms late, declared lost and
        // then acknowledged after all, as holes.)
        for (tcp, ack_every, jitter, late) in [
            (None, 1, 2_000, 0),
            (tcp(), 1, 2_000, 0),
            (tcp(), 2, 2_000, 0),
            (tcp(), 1, 1, 0),
            (tcp(), 2, 1, 0),
            (tcp(), 1, 1, 1),
            (tcp(), 2, 1, 1),
        ] {
            let make = || {
                let cfg = crate::CopaConfig {
                    variant: crate::CopaVariant::Artifact,
                    ..crate::CopaConfig::for_datagram(Bytes(1200))
                };
                let cc = Box::new(crate::CopaArtifact::new(&cfg));
                let cfg = SenderConfig { tcp: tcp.clone(), ..SenderConfig::default() };
                let mut s = if tcp.is_some() { Sender::for_messages(cfg, cc) } else { Sender::new(cfg, cc) };
                s.set_pending(true);
                s
            };
            let (mut short, mut general) = (make(), make());
            assert!(short.ack_run_way);
            assert_eq!(short.tcp(), tcp.is_some());
            let (mut next_tag, mut resend) = (0, VecDeque::new());
            general.ack_run_way = false;
            // (Every field at every 1000th ACK and at the end; what the next steps read at each.)
            let state = |s: &Sender| format!("{s:?}").replace("ack_run_way: false", "ack_run_way: true");
            let brief = |s: &Sender| {
                let at =
                    (s.in_flight, s.delivered, s.delivered_time, s.base_pn, s.largest_acked, s.loss_time);
                format!("{at:?} {:?} {:?} {:?} {:?}", s.stats(), s.window(), s.send_rate(), s.poll_timeout())
            };
            let mut receiver =
                crate::Receiver::new(crate::ReceiverConfig { ack_every, ..crate::ReceiverConfig::default() });
            let mut next = lowlat_core::rng::below(9, "ack-run-test");
            let mut transit: Vec<(Time, u64)> = Vec::new();
            let (mut now, mut acks) = (Time::ZERO, 0);
            while acks < 20_000 {
                now += Duration::from_micros(20 + next(300));
                if short.poll_timeout().is_some_and(|t| t <= now) {
                    short.handle_timeout(now);
                    general.handle_timeout(now);
                }
                // (Message mode: what each declared lost, sent again unless delivered meanwhile.)
                while let Some(lost) = short.pop_lost() {
                    assert_eq!(Some(lost), general.pop_lost());
                    resend.push_back(lost.0);
                }
                loop {
                    let sent = if tcp.is_some() {
                        let permit = short.permit_send(now);
                        assert_eq!(permit, general.permit_send(now));
                        permit.map(|p| {
                            while resend.front().is_some_and(|&t| !short.still_lost(t)) {
                                resend.pop_front();
                            }
                            let tag = resend.pop_front().unwrap_or_else(|| {
                                next_tag += 1;
                                next_tag
                            });
                            let pn = short.send_permitted(p, now, Bytes(1200), tag);
                            assert_eq!(pn, general.send_permitted(p, now, Bytes(1200), tag));
                            (pn, Bytes(1200))
                        })
                    } else {
                        let sent = short.poll_transmit(now);
                        assert_eq!(sent, general.poll_transmit(now));
                        sent
                    };
                    let Some((pn, _)) = sent else { break };
                    if next(100) >= 2 {
                        let delay = 30_000 + next(jitter) + if next(100) < late { 5_000 } else { 0 };
                        transit.push((now + Duration::from_micros(delay), pn));
                    }
                }
                transit.sort_unstable();
                let due = transit.partition_point(|&(t, _)| t <= now);
                for (at, pn) in transit.drain(..due).collect::<Vec<_>>() {
                    receiver.on_packet(at, pn);
                    if let Some(frame) = receiver.poll_ack(at) {
                        short.on_ack(now, &frame);
                        general.on_ack(now, &frame);
                        while let Some(lost) = short.pop_lost() {
                            assert_eq!(Some(lost), general.pop_lost());
                            resend.push_back(lost.0);
                        }
                        assert_eq!(brief(&short), brief(&general), "{tcp:?}, ACK every {ack_every}");
                        if acks % 1000 == 0 {
                            assert_eq!(state(&short), state(&general), "{tcp:?}, ACK every {ack_every}");
                        }
                        acks += 1;
                    }
                }
            }
            assert_eq!(state(&short), state(&general), "{tcp:?}, ACK every {ack_every}");
            assert!(short.stats().packets_lost > 100, "{tcp:?}: losses");
        }
    }

    #[test]
    fn a_rising_ce_count_in_an_ack_is_one_congestion_event() {
        let cc = NewRenoConfig::for_datagram(Bytes(1200)).build();
        let mut s = Sender::new(SenderConfig::default(), Box::new(cc));
        let mut t = Time::ZERO;
        while let Some((_, _)) = s.poll_transmit(t) {
            t += Duration::from_micros(10);
        }
        let window = s.window();
        let ack = |hi: u64, ce: u64| AckFrame {
            ranges: AckRanges::from_slice(&[(0, hi)]),
            ack_delay: Duration::ZERO,
            ecn: Some(EcnCounts { ect0: 0, ect1: hi + 1 - ce, ce }),
        };
        s.on_ack(Time::from_millis(50), &ack(1, 0));
        assert_eq!((s.stats().ce_marks, s.stats().congestion_events), (0, 0));
        s.on_ack(Time::from_millis(51), &ack(3, 2));
        assert_eq!((s.stats().ce_marks, s.stats().congestion_events), (2, 1));
        assert!(s.window() < window, "NewReno halves on CE: {} -> {}", window, s.window());
        assert_eq!(s.stats().packets_lost, 0, "a mark is not a loss");
        // The same cumulative count again is no new event.
        s.on_ack(Time::from_millis(52), &ack(4, 2));
        assert_eq!(s.stats().congestion_events, 1);
    }

    fn ack(ranges: &[(u64, u64)]) -> AckFrame {
        AckFrame { ranges: AckRanges::from_slice(ranges), ack_delay: Duration::ZERO, ecn: None }
    }

    /// A message-mode sender (TCP recovery if `tcp`) that has sent tags 0..10 (packets 0..10)
    /// at time 0.
    fn ten_sent(tcp: Option<TcpRecovery>) -> Sender {
        // The artifact's Copa: a timeout sets its window to one packet, other losses leave it.
        let cfg = crate::CopaConfig {
            variant: crate::CopaVariant::Artifact,
            ..crate::CopaConfig::for_datagram(Bytes(1200))
        };
        let cc = crate::CopaArtifact::new(&cfg);
        let mut s = Sender::for_messages(SenderConfig { tcp, ..SenderConfig::default() }, Box::new(cc));
        for tag in 0..10 {
            assert_eq!(s.send_message(Time::ZERO, Bytes(1200), tag), tag);
        }
        s
    }

    #[test]
    fn tcp_recovery_finds_a_lost_retransmission_only_by_the_timeout_which_empties_the_window() {
        for backoff in [false, true] {
            let tcp = TcpRecovery { backoff, ..TcpRecovery::default() };
            let mut s = ten_sent(Some(tcp));
            // Packet 0 lost: 1..9 acknowledged at 100 ms (its first RTT sample).
            s.on_ack(Time::from_millis(100), &ack(&[(1, 9)]));
            assert_eq!(s.pop_lost(), Some((0, Bytes(1200))));
            assert!(s.still_lost(0));
            // Sent again (packet 10), and lost again: only later packets are acknowledged.
            s.send_message(Time::from_millis(100), Bytes(1200), 0);
            for (i, tag) in (11..14).enumerate() {
                s.send_message(Time::from_millis(101 + i as u64), Bytes(1200), tag);
            }
            s.on_ack(Time::from_millis(205), &ack(&[(11, 13), (1, 9)]));
            // RFC 9002 would call packet 10 lost now (three later ones acknowledged); TCP's
            // recovery never declares a retransmission lost by the threshold.
            assert_eq!(s.stats().packets_lost, 1);
            assert_eq!(s.pop_lost(), None);
            assert_eq!(s.in_flight(), 1200);
            // The cumulative point never moved (packet 0's data is missing): the timeout armed
            // by the first send fires at the 1 s minimum, the first timeout whatever `backoff`.
            let rto = s.poll_timeout().expect("the timeout is armed");
            assert_eq!(rto, Time::from_millis(1000));
            s.handle_timeout(Time::from_millis(999));
            assert_eq!(s.stats().rtos, 0);
            s.handle_timeout(rto);
            assert_eq!(s.stats().rtos, 1);
            assert_eq!(s.pop_lost(), Some((0, Bytes(1200))), "the lost retransmission's data again");
            assert_eq!(s.in_flight(), 0);
            assert_eq!(s.window(), Bytes(1200), "persistent congestion: one packet");
            // Sent once more at 1 s, it arms the timeout again: the same 1 s, or doubled.
            s.send_message(rto, Bytes(1200), 0);
            let next = s.poll_timeout().expect("armed by the send");
            let want = if backoff { 2000 } else { 1000 };
            assert_eq!(next - rto, Duration::from_millis(want), "backoff {backoff}");
        }
        // RFC 9002's recovery on the same losses: the retransmission is declared lost at once.
        let mut s = ten_sent(None);
        s.on_ack(Time::from_millis(100), &ack(&[(1, 9)]));
        assert_eq!(s.pop_lost(), Some((0, Bytes(1200))));
        s.send_message(Time::from_millis(100), Bytes(1200), 0);
        for (i, tag) in (11..14).enumerate() {
            s.send_message(Time::from_millis(101 + i as u64), Bytes(1200), tag);
        }
        s.on_ack(Time::from_millis(205), &ack(&[(11, 13), (1, 9)]));
        assert_eq!(s.pop_lost(), Some((0, Bytes(1200))));
        assert_eq!(s.stats().rtos, 0);
    }

    #[test]
    fn the_records_ring_grows_past_its_first_size_keeping_every_record() {
        let mut s = ten_sent(None);
        for tag in 10..3000 {
            s.send_message(Time::ZERO, Bytes(1200), tag);
        }
        assert_eq!(s.in_flight(), 3000 * 1200);
        s.on_ack(Time::from_millis(100), &ack(&[(1003, 2999), (0, 999)]));
        let lost: Vec<u64> = std::iter::from_fn(|| s.pop_lost().map(|(tag, _)| tag)).collect();
        assert_eq!(lost, [1000, 1001, 1002]);
        assert_eq!(s.in_flight(), 0);
        assert_eq!(s.stats().bytes_acked, 2997 * (1200 - SenderConfig::default().overhead.0));
    }

    #[test]
    fn tcp_recovery_a_late_original_repairs_its_loss_and_the_timeout_restarts_on_each_advance() {
        let mut s = ten_sent(Some(TcpRecovery::default()));
        s.on_ack(Time::from_millis(100), &ack(&[(1, 9)]));
        assert_eq!(s.pop_lost(), Some((0, Bytes(1200))));
        // Not sent again yet; the original arrives late: nothing is left to send or to time.
        s.on_ack(Time::from_millis(150), &ack(&[(0, 9)]));
        assert!(!s.still_lost(0));
        assert_eq!(s.stats().bytes_acked, 10 * (1200 - SenderConfig::default().overhead.0));
        assert_eq!(s.poll_timeout(), None);
        // New data: the timeout runs from the send, and each advance of the cumulative point
        // restarts it (in the open state).
        s.send_message(Time::from_millis(200), Bytes(1200), 10);
        s.send_message(Time::from_millis(200), Bytes(1200), 11);
        let armed = s.poll_timeout().expect("armed");
        assert_eq!(armed, Time::from_millis(1200));
        s.on_ack(Time::from_millis(300), &ack(&[(10, 10), (0, 9)]));
        assert_eq!(s.poll_timeout(), Some(Time::from_millis(1300)));
    }
}
