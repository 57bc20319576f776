//! Loss repair by acknowledgement and retransmission timeout: the Zhuge artifact's RTP sender
//! (`--policy=rtx`, `RTXOnlyPolicy`), for runs that reproduce its evaluation.
//!
//! The receiver acknowledges every media packet it gets (`PacketReceiverUdp::ReplyACK`); the
//! sender keeps each sent packet until it is acknowledged or its frame is past the deadline, and
//! every millisecond (`PacketSenderUdp::CheckRetransmission`, `check_rtx_interval` 1 ms) resends
//! the whole group of any packet whose last sending is older than its timeout, ahead of new media
//! (`SendRtx` puts the batch at the head of the sender's queue). The sources, in the
//! `transys-project/zhuge` repository, `ns-3.34-diff/src/bitrate-ctrl/model/`:
//!
//! - *Timeout* (`IsRtxTimeout`): `now - last_send > srtt + 4 x rtt_sd + batch_size x
//!   one_way_dispersion`. `srtt` is `0.2 x rtt + 0.8 x srtt` from a 50 ms start
//!   (`SetNetworkStatistics(defaultRtt = 50)`, `UpdateRTT`); `rtt_sd` is the standard deviation of
//!   every RTT sample since the start (`rtt_sum_avg_ms`, `rtt_square_sum_avg_ms`), 12.5 ms
//!   (`default_rtt / 4`) before the first sample; `batch_size` is the packets sent together with
//!   it (a frame's packets, or a retransmitted group's); `one_way_dispersion` is the receiver's
//!   average inter-arrival within its last complete frame (`PacketGroup::GetAvgPktInterval`,
//!   reported in its `NetState`), which Zhuge's reports from the AP set to 0 (`Sendback` builds
//!   `NetStates(0, rate, 0)`), and they come every millisecond.
//! - *RTT samples* (`OnSocketRecv_sender`, ACK branch): each ACK names the global id of the
//!   packet that triggered it; its RTT is `now - ` that packet's send time, taken only when the
//!   id is not older than the last acknowledged one (`pkt_id >= m_last_acked_global_id`). Under
//!   Zhuge these ACKs still come from the receiver (the AP rewrites only the UDP flow's
//!   congestion reports), so they include the downlink queue.
//! - *Which packets are checked* (`CheckRetransmission`): packets whose frame is older than the
//!   deadline are forgotten first (`MissesDdl`: `now - encode_time > delay_ddl`, 1 s with
//!   `--ddl=1000`); the others are checked in sending order, stopping at the first whose frame is
//!   younger than `min_rtt` (50 ms: `SetNetworkStatistics` sets it and nothing updates it); a
//!   group is resent at most once per check.
//! - *What is resent* (`RetransmitGroup`): every packet of the group not acknowledged yet; with
//!   `RTXOnlyPolicy` a group is a whole frame (`GetFECParam` returns the frame's packet count as
//!   the group size, with no FEC), so a timeout resends the frame's missing packets together.
//!
//! Deliberate differences, each because lowlat's sender is paced where the artifact's is not
//! (`m_pacing` is false: a queued packet leaves at once):
//! - A retransmission is timed from when it was queued (the artifact's queue and send instants
//!   coincide), and again from when it actually leaves; while a copy waits in the pacer its
//!   packet is not queued again.
//! - Groups timed out in one check are queued oldest first (the artifact inserts each at the
//!   head of its queue, so within one check the last found would leave first).
//! - The standard deviation is kept with Welford's update (the same quantity; the artifact's
//!   mean-of-squares difference can go negative by rounding).
//! - The check instants are the multiples of 1 ms of the simulation clock, and the sender only
//!   wakes at one where a packet can be due (the rule is the same; an idle sender does not tick).
//!
//! Sans-IO: driven with `now`; the caller sends the ACKs and queues the retransmissions.

use crate::pacer::RtpPacket;
use lowlat_core::{Bytes, Duration, Time};
use std::collections::VecDeque;

/// Settings of the timeout repair (the artifact's, see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct TimeoutRtxConfig {
    /// How often the sender checks for timed-out packets (`check_rtx_interval`, 1 ms).
    pub check_interval: Duration,
    /// A frame older than this is no longer repaired (`--ddl=1000`: `MissesDdl`).
    pub deadline: Duration,
    /// Packets whose frame is younger are not checked (`NetStat::min_rtt`, 50 ms, never updated).
    pub min_age: Duration,
    /// The smoothed RTT before the first sample (`defaultRtt`, 50 ms).
    pub initial_rtt: Duration,
    /// The RTT deviation before the first sample (`default_rtt / 4`, 12.5 ms).
    pub initial_deviation: Duration,
    /// The gain of the smoothed RTT (`UpdateRTT`: 0.2).
    pub srtt_gain: f64,
    /// How many deviations the timeout adds (`IsRtxTimeout`: 4).
    pub deviations: f64,
    /// Size of an ACK on the wire: the artifact's `AckPacketHeader` for one packet (4 B type +
    /// 4 B count + 6 B per packet + 2 B last id) plus 28 B of IPv4 and UDP.
    pub ack_size: Bytes,
    /// Sent packets kept for RTT samples (the artifact's `m_send_wnd_size`, 10 000).
    pub send_times: usize,
}

impl Default for TimeoutRtxConfig {
    fn default() -> Self {
        TimeoutRtxConfig {
            check_interval: Duration::from_millis(1),
            deadline: Duration::from_secs(1),
            min_age: Duration::from_millis(50),
            initial_rtt: Duration::from_millis(50),
            initial_deviation: Duration::from_micros(12_500),
            srtt_gain: 0.2,
            deviations: 4.0,
            ack_size: Bytes(44),
            send_times: 10_000,
        }
    }
}

/// The sender's RTT statistics (`NetStat`: `srtt`, `rtt_sd`).
#[derive(Clone, Debug)]
pub struct RttStats {
    gain: f64,
    /// `1 - gain`, worked out once.
    keep: f64,
    /// Smoothed RTT, seconds.
    srtt: f64,
    initial_sd: f64,
    count: u64,
    /// `count` as `f64` (exact below 2^53 samples), kept beside it: the `u64` to `f64`
    /// conversion is a sequence of several instructions, and both the mean and the deviation
    /// divide by it at every sample.
    count_f: f64,
    mean: f64,
    /// Sum of squared deviations from the running mean (Welford).
    m2: f64,
}

impl RttStats {
    /// Statistics starting at `initial_rtt` and `initial_sd`, smoothing with `gain`.
    pub fn new(initial_rtt: Duration, initial_sd: Duration, gain: f64) -> RttStats {
        RttStats {
            gain,
            keep: 1.0 - gain,
            srtt: initial_rtt.as_secs_f64(),
            initial_sd: initial_sd.as_secs_f64(),
            count: 0,
            count_f: 0.0,
            mean: 0.0,
            m2: 0.0,
        }
    }

    /// One RTT sample.
    #[inline]
    pub fn on_sample(&mut self, rtt: Duration) {
        let x = rtt.as_secs_f64();
        self.srtt = self.gain * x + self.keep * self.srtt;
        self.count += 1;
        self.count_f += 1.0;
        let d = x - self.mean;
        self.mean += d / self.count_f;
        self.m2 += d * (x - self.mean);
    }

    /// The smoothed RTT.
    #[inline]
    pub fn srtt(&self) -> Duration {
        Duration::from_secs_f64(self.srtt)
    }

    /// The (population) standard deviation of every sample so far; the initial value before any.
    #[inline]
    pub fn deviation(&self) -> Duration {
        if self.count == 0 {
            return Duration::from_secs_f64(self.initial_sd);
        }
        Duration::from_secs_f64((self.m2 / self.count_f).max(0.0).sqrt())
    }
}

#[derive(Clone, Copy, Debug)]
struct Held {
    packet: RtpPacket,
    /// When it last left (or, for a retransmission still in the pacer, was queued).
    last_sent: Time,
    /// Packets sent in the same batch.
    batch: u16,
    /// A retransmitted copy waits in the pacer.
    queued: bool,
}

/// A frame with packets held. Its storage is reused from frame to frame (a frame is held for
/// at most the deadline, and a sender at 100 Mbit/s holds a few hundred packets each).
#[derive(Clone, Debug, Default)]
struct HeldFrame {
    id: u64,
    /// When the frame was encoded (its packets' first `enqueued`).
    encoded: Time,
    /// The first check instant at which it is old enough to be checked, and the one at which it
    /// is forgotten (from `encoded`: kept, as every ACK reads them).
    checkable: Time,
    forget: Time,
    /// By packet index: the packets held (None: acknowledged, or not sent yet).
    packets: Vec<Option<Held>>,
    /// How many of `packets` are held.
    count: usize,
    /// Candidates for the smallest `last_sent + dispersion x batch` of the packets not waiting
    /// in the pacer, `(key, index)` in ascending key order: every such packet has an entry with
    /// its current key; entries of packets since acknowledged, queued or re-sent are skipped
    /// when they reach the front. The check schedule needs only that smallest key per frame
    /// (every packet's timeout adds the same srtt + 4 deviations to it), and packets leave in
    /// key order almost always, so finding it is O(1) per ACK where a scan was O(frame).
    /// The queue is `keys[keys_head..]` (a `Vec` and a start index: its front is dropped at
    /// every ACK, where a `VecDeque` works out the wrap-around at every access).
    ///
    /// While every entry is of a packet sent in a batch of the same size (`base` is
    /// [`KeyBase::Batch`], as a frame's packets are but for a frame resent in part while its first
    /// sending goes on), an entry holds the packet's `last_sent` instead of its key: the key is
    /// `last_sent` plus the same dispersion x batch for all, so their order, and the entries, stay
    /// as they are when the dispersion changes (once per frame the receiver completes: every
    /// held frame was rebuilt each time).
    keys: Vec<(Time, u16)>,
    keys_head: usize,
    /// What `keys` holds.
    base: KeyBase,
    /// `keys` holds keys made for another dispersion, or misses packets a pacer flush released:
    /// rebuilt before the next read.
    rebuild: bool,
    /// What [`HeldFrame::earliest`] last found, kept until the frame changes (`None`: to be
    /// worked out again). Every ACK reads every held frame's, and changes at most one frame.
    known: Option<Option<Time>>,
}

/// What the entries of [`HeldFrame::keys`] hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum KeyBase {
    /// No entry since the queue was last emptied.
    #[default]
    Empty,
    /// Every entry is of a packet sent in a batch of this size, and holds its `last_sent`.
    Batch(u16),
    /// The entries hold the keys themselves, for the dispersion they were made with.
    Keys,
}

impl HeldFrame {
    fn key(h: &Held, disp: u64) -> Time {
        h.last_sent + Duration(disp.saturating_mul(u64::from(h.batch)))
    }

    /// Adds the entry of packet `index`, `h` (not waiting in the pacer), keeping `keys`
    /// ascending; `key` is its key at dispersion `disp`.
    #[inline]
    fn push_key(&mut self, h: &Held, key: Time, index: u16) {
        self.known = None;
        if self.rebuild {
            return; // the rebuild will see it
        }
        let value = match self.base {
            KeyBase::Batch(b) if b == h.batch => h.last_sent,
            KeyBase::Keys => key,
            KeyBase::Empty => {
                self.base = KeyBase::Batch(h.batch);
                h.last_sent
            }
            KeyBase::Batch(_) => {
                // Batches now differ: the entries become keys (rare; the packet is stored).
                self.rebuild = true;
                return;
            }
        };
        // Packets leave in key order almost always: their entries go at the back.
        if self.keys.last().is_none_or(|&(k, _)| k <= value) {
            self.keys.push((value, index));
        } else {
            self.insert_key(value, index);
        }
    }

    /// [`HeldFrame::push_key`] for a key below the last.
    #[inline(never)]
    fn insert_key(&mut self, key: Time, index: u16) {
        let at = self.keys_head + self.keys[self.keys_head..].partition_point(|&(k, _)| k <= key);
        self.keys.insert(at, (key, index));
    }

    /// Makes `keys` anew from the packets (after a pacer flush, or a dispersion change or a
    /// mix of batches while the entries are keys: rare).
    #[inline(never)]
    fn rebuild_keys(&mut self, disp: u64) {
        self.clear_keys();
        let mut waiting = self.packets.iter().flatten().filter(|h| !h.queued);
        if let Some(first) = waiting.next() {
            let b = first.batch;
            self.base = if waiting.all(|h| h.batch == b) { KeyBase::Batch(b) } else { KeyBase::Keys };
        }
        let by_batch = self.base != KeyBase::Keys;
        for (i, h) in self.packets.iter().enumerate() {
            if let Some(h) = h.filter(|h| !h.queued) {
                let value = if by_batch { h.last_sent } else { Self::key(&h, disp) };
                self.keys.push((value, i as u16));
            }
        }
        self.keys.sort_unstable();
        self.rebuild = false;
    }

    /// Empties `keys`.
    fn clear_keys(&mut self) {
        self.keys.clear();
        self.keys_head = 0;
        self.base = KeyBase::Empty;
    }

    /// The dispersion changed: entries that are keys are made anew before the next read.
    fn on_dispersion_change(&mut self) {
        if self.base == KeyBase::Keys {
            self.rebuild = true;
        }
        self.known = None;
    }

    /// The smallest `last_sent + dispersion x batch` of its packets not waiting in the pacer.
    #[inline(always)]
    fn earliest(&mut self, disp: u64) -> Option<Time> {
        if let Some(known) = self.known {
            return known;
        }
        let e = self.find_earliest(disp);
        self.known = Some(e);
        e
    }

    /// [`HeldFrame::earliest`] from `keys`, stale entries dropped on the way.
    #[inline(always)]
    fn find_earliest(&mut self, disp: u64) -> Option<Time> {
        if self.rebuild {
            self.rebuild_keys(disp);
        }
        while let Some(&(value, i)) = self.keys.get(self.keys_head) {
            if let Some(h) = self.packets[usize::from(i)].filter(|h| !h.queued) {
                match self.base {
                    KeyBase::Batch(b) if h.batch == b && h.last_sent == value => {
                        return Some(Self::key(&h, disp));
                    }
                    KeyBase::Keys if Self::key(&h, disp) == value => return Some(value),
                    _ => {}
                }
            }
            self.keys_head += 1;
        }
        // Drained: its space is reused from the start.
        self.clear_keys();
        None
    }
}

/// The sender side: unacknowledged packets by frame, the RTT statistics and the check schedule.
#[derive(Clone, Debug)]
pub struct TimeoutRetransmitter {
    cfg: TimeoutRtxConfig,
    /// Frames held, by ascending id (a `Vec`: read at every send and ACK, while a frame is
    /// removed from the front once per frame).
    frames: Vec<HeldFrame>,
    /// Storage of frames no longer held, for the next ones.
    spare: Vec<HeldFrame>,
    rtt: RttStats,
    /// srtt + 4 deviations, as [`Self::base_timeout`] computes it, kept from the last sample
    /// (every ACK reads it; the statistics change only with a sample).
    base: Duration,
    dispersion: Duration,
    /// Send time of each transport sequence number from `send_base` to `send_end` (at most
    /// `cfg.send_times` of them), sequence number `s` at `s % send_times.len()`: a ring allocated
    /// with the first send, where a `VecDeque` pushed one and dropped one per packet. Its
    /// length is a power of two (at least `cfg.send_times`), so that the slot is a mask where
    /// `%` divided at every send and ACK.
    send_times: Vec<Time>,
    send_base: u64,
    send_end: u64,
    /// The sequence number of the last ACK that gave a sample (0 before any: none is below).
    last_acked: u64,
    /// [`TimeoutRetransmitter::poll_timeout`], kept up to date by every change.
    next_check: Option<Time>,
    /// A lower bound of [`HeldFrame::earliest`] over every frame but the first (`Time::MAX`:
    /// none has a key; `None`: not known). While the first frame's is not above it, the first
    /// frame is due first (see [`Self::update_next_check`]) and an ACK looks at no other frame.
    /// Acknowledgements and forgotten frames only raise the others' earliest (a bound stays a
    /// bound); a new key lowers it to the key at most; a rebuild needs a scan.
    others_floor: Option<Time>,
    /// Whether the frames' encode instants (and so their check and forget instants) ascend with
    /// their ids, as a source that encodes frames in order gives them (else every update scans).
    ordered: bool,
    /// Retransmissions queued.
    pub retransmissions: u64,
    /// Groups (frames) retransmitted.
    pub groups_retransmitted: u64,
}

impl TimeoutRetransmitter {
    /// A sender side with `cfg`.
    pub fn new(cfg: TimeoutRtxConfig) -> TimeoutRetransmitter {
        let rtt = RttStats::new(cfg.initial_rtt, cfg.initial_deviation, cfg.srtt_gain);
        let base = Self::base_timeout(&rtt, &cfg);
        TimeoutRetransmitter {
            rtt,
            base,
            cfg,
            frames: Vec::new(),
            spare: Vec::new(),
            dispersion: Duration::ZERO,
            send_times: Vec::new(),
            send_base: 0,
            send_end: 0,
            last_acked: 0,
            next_check: None,
            others_floor: None,
            ordered: true,
            retransmissions: 0,
            groups_retransmitted: 0,
        }
    }

    /// The settings.
    pub fn config(&self) -> &TimeoutRtxConfig {
        &self.cfg
    }

    /// The RTT statistics.
    pub fn rtt(&self) -> &RttStats {
        &self.rtt
    }

    #[inline]
    fn record_send_time(&mut self, now: Time, seq: u64) {
        // Usually the next sequence number, once the ring exists.
        if seq == self.send_end && !self.send_times.is_empty() {
            let mask = self.send_times.len() - 1;
            self.send_times[seq as usize & mask] = now;
            self.send_end += 1;
            self.send_base = self.send_base.max(self.send_end.saturating_sub(self.cfg.send_times as u64));
            return;
        }
        self.record_send_time_slow(now, seq);
    }

    /// [`Self::record_send_time`] for the first send, a gap or an old sequence number.
    #[inline(never)]
    fn record_send_time_slow(&mut self, now: Time, seq: u64) {
        let cap = self.cfg.send_times as u64;
        if cap == 0 {
            return; // nothing kept: no sample
        }
        if self.send_times.is_empty() {
            self.send_times = vec![Time::MAX; self.cfg.send_times.next_power_of_two()];
            (self.send_base, self.send_end) = (seq, seq);
        }
        let mask = self.send_times.len() - 1;
        // Sequence numbers are consecutive; a gap (padding sent by the caller) is filled.
        while self.send_end < seq {
            self.send_times[self.send_end as usize & mask] = Time::MAX;
            self.send_end += 1;
        }
        if self.send_end == seq {
            self.send_times[seq as usize & mask] = now;
            self.send_end += 1;
        }
        self.send_base = self.send_base.max(self.send_end.saturating_sub(cap));
    }

    /// When transport sequence number `seq` was sent, if it is still known.
    fn send_time(&self, seq: u64) -> Option<Time> {
        if seq < self.send_base || seq >= self.send_end {
            return None;
        }
        Some(self.send_times[seq as usize & (self.send_times.len() - 1)])
    }

    /// The position of frame `id` in `frames`, or where it would go.
    #[inline]
    fn find(&self, id: u64) -> Result<usize, usize> {
        // Frames are sent in order: the newest is the likeliest when sending, the oldest when
        // acknowledged (the newest is being sent while its predecessor's ACKs come back).
        match self.frames.last() {
            Some(f) if f.id == id => Ok(self.frames.len() - 1),
            Some(f) if f.id < id => Err(self.frames.len()),
            _ if self.frames.first().is_some_and(|f| f.id == id) => Ok(0),
            _ => self.frames.binary_search_by_key(&id, |f| f.id),
        }
    }

    /// Removes the frame at `at`, keeping its storage.
    fn forget(&mut self, at: usize) {
        let mut f = self.frames.remove(at);
        f.packets.clear();
        f.clear_keys();
        self.spare.push(f);
    }

    /// The original `packet` left at `now` with transport sequence number `seq`.
    #[inline]
    pub fn on_sent(&mut self, now: Time, seq: u64, packet: RtpPacket) {
        self.record_send_time(now, seq);
        let at = match self.find(packet.frame) {
            Ok(at) => at,
            Err(at) => {
                let mut f = self.spare.pop().unwrap_or_default();
                f.id = packet.frame;
                f.encoded = Time::MAX; // set below
                f.count = 0;
                f.rebuild = false;
                f.known = None;
                // Sized for the whole frame at once (its packets come in index order).
                f.packets.resize(usize::from(packet.frame_packets), None);
                self.frames.insert(at, f);
                if at == 0 && self.frames.len() > 1 {
                    self.others_floor = None; // the first frame became one of the others
                }
                at
            }
        };
        let disp = self.dispersion.as_nanos();
        // A frame's packets are queued together: its instants are worked out with its first.
        if packet.enqueued < self.frames[at].encoded {
            let encoded = packet.enqueued;
            let (checkable, forget) = (
                self.tick_at_or_after(encoded + self.cfg.min_age),
                self.tick_after(encoded + self.cfg.deadline),
            );
            let f = &mut self.frames[at];
            (f.encoded, f.checkable, f.forget) = (encoded, checkable, forget);
            let after_previous = at == 0 || self.frames[at - 1].encoded <= encoded;
            let before_next = self.frames.get(at + 1).is_none_or(|n| encoded <= n.encoded);
            self.ordered &= after_previous && before_next;
        }
        let f = &mut self.frames[at];
        let h = Held { packet, last_sent: now, batch: packet.frame_packets.max(1), queued: false };
        let i = usize::from(packet.index);
        if f.packets.len() <= i {
            f.packets.resize(i + 1, None);
        }
        // The packet before it in the frame, when held, waiting for its ACK (not in the pacer)
        // and sent in a batch of the same size, has no later key: the check schedule, at most
        // that packet's due instant, stays as it is (a frame's packets mostly leave in a row).
        let follows =
            i > 0 && f.packets[i - 1].is_some_and(|p| !p.queued && p.batch == h.batch && p.last_sent <= now);
        let slot = &mut f.packets[i];
        f.count += usize::from(slot.is_none());
        *slot = Some(h);
        let key = HeldFrame::key(&h, disp);
        f.push_key(&h, key, packet.index);
        self.lower_others_floor(at, key);
        if !follows {
            let t = self.due(&self.frames[at], &h);
            self.next_check = Some(self.next_check.map_or(t, |n| n.min(t)));
        }
    }

    /// A retransmitted copy of `packet` left at `now` with transport sequence number `seq`.
    pub fn on_retransmission_sent(&mut self, now: Time, seq: u64, packet: &RtpPacket) {
        self.record_send_time(now, seq);
        let disp = self.dispersion.as_nanos();
        if let Ok(at) = self.find(packet.frame) {
            let f = &mut self.frames[at];
            if let Some(Some(h)) = f.packets.get_mut(usize::from(packet.index)) {
                h.last_sent = now;
                h.queued = false;
                let h = *h;
                let key = HeldFrame::key(&h, disp);
                f.push_key(&h, key, packet.index);
                self.lower_others_floor(at, key);
            }
        }
        self.update_next_check();
    }

    /// The pacer dropped what it held: no retransmitted copy waits any more.
    pub fn on_pacer_flushed(&mut self) {
        for f in &mut self.frames {
            for h in f.packets.iter_mut().flatten() {
                h.queued = false;
            }
            f.rebuild = true;
            f.known = None;
        }
        self.others_floor = None;
        self.update_next_check();
    }

    /// An ACK arrived at `now` for packet `index` of `frame`, triggered by transport sequence
    /// number `seq`, with the receiver's dispersion (None: not reported). Returns the RTT
    /// sample it gave, if any. (Inlined: the sender calls it at every ACK, from one place.)
    #[inline(always)]
    pub fn on_ack(
        &mut self,
        now: Time,
        frame: u64,
        index: u16,
        seq: u64,
        dispersion: Option<Duration>,
    ) -> Option<Duration> {
        if let Ok(at) = self.find(frame) {
            let f = &mut self.frames[at];
            // Its key, if any, is skipped when it reaches the front.
            if f.packets.get_mut(usize::from(index)).and_then(Option::take).is_some() {
                f.count -= 1;
                f.known = None;
            }
            if f.count == 0 {
                self.forget(at);
            }
        }
        if let Some(d) = dispersion {
            self.set_dispersion(d);
        }
        let sample = self.rtt_sample(now, seq);
        self.update_next_check();
        sample
    }

    /// The RTT sample of an ACK triggered by `seq` (inlined into its one caller, which runs per
    /// ACK).
    #[inline(always)]
    fn rtt_sample(&mut self, now: Time, seq: u64) -> Option<Duration> {
        if seq < self.last_acked {
            return None;
        }
        self.last_acked = seq;
        let sent = self.send_time(seq)?;
        if sent == Time::MAX || sent > now {
            return None;
        }
        let rtt = now - sent;
        self.rtt.on_sample(rtt);
        self.base = Self::base_timeout(&self.rtt, &self.cfg);
        Some(rtt)
    }

    /// A report from the AP (Zhuge) arrived: its dispersion field is 0 (`Sendback`).
    pub fn on_assist_report(&mut self) {
        if self.dispersion != Duration::ZERO {
            self.set_dispersion(Duration::ZERO);
            self.update_next_check();
        }
    }

    fn set_dispersion(&mut self, d: Duration) {
        if d != self.dispersion {
            self.dispersion = d;
            for f in &mut self.frames {
                f.on_dispersion_change();
            }
            self.others_floor = None;
        }
    }

    /// The receiver's dispersion as the sender knows it.
    pub fn dispersion(&self) -> Duration {
        self.dispersion
    }

    /// The timeout of a packet sent in a batch of `batch`.
    pub fn timeout(&self, batch: u16) -> Duration {
        self.base + Duration(self.dispersion.as_nanos().saturating_mul(u64::from(batch)))
    }

    /// srtt + 4 deviations of `rtt`: [`Self::timeout`] without the batch's dispersion.
    #[inline(always)]
    fn base_timeout(rtt: &RttStats, cfg: &TimeoutRtxConfig) -> Duration {
        let base = rtt.srtt().as_secs_f64() + cfg.deviations * rtt.deviation().as_secs_f64();
        Duration::from_secs_f64(base)
    }

    /// The first check instant (a multiple of the interval) strictly after `t`.
    fn tick_after(&self, t: Time) -> Time {
        let i = self.cfg.check_interval.as_nanos().max(1);
        Time((t.as_nanos() / i + 1) * i)
    }

    /// The first check instant at or after `t`.
    fn tick_at_or_after(&self, t: Time) -> Time {
        let i = self.cfg.check_interval.as_nanos().max(1);
        Time(t.as_nanos().div_ceil(i) * i)
    }

    /// When the next check can find something to do: the earliest check instant at which a held
    /// packet is both old enough to be checked and past its timeout, or its frame past the
    /// deadline (None: nothing held).
    pub fn poll_timeout(&self) -> Option<Time> {
        self.next_check
    }

    fn due(&self, f: &HeldFrame, h: &Held) -> Time {
        // A frame past the deadline is forgotten at the next check.
        self.tick_after(h.last_sent + self.timeout(h.batch)).max(f.checkable).min(f.forget)
    }

    /// The earliest [`Self::due`] over every held packet not waiting in the pacer: per frame, from
    /// its smallest `last_sent + dispersion x batch` ([`HeldFrame::earliest`]), since `due` grows
    /// with it and every timeout adds the same srtt + 4 deviations.
    ///
    /// The due instant of a frame grows with its earliest key, its check instant and its forget
    /// instant, and the first frame has the smallest of the latter two (`ordered`): when its
    /// earliest key is not above any other frame's (`others_floor`), it is due first.
    #[inline(always)]
    fn update_next_check(&mut self) {
        let disp = self.dispersion.as_nanos();
        let base = self.timeout(0);
        if let (Some(floor), true, Some(f)) = (self.others_floor, self.ordered, self.frames.first_mut()) {
            if let Some(e) = f.earliest(disp).filter(|&e| e <= floor) {
                let t = e + base;
                let i = self.cfg.check_interval.as_nanos().max(1);
                // As `tick_after`, while the frame is borrowed.
                self.next_check = Some(Time((t.as_nanos() / i + 1) * i).max(f.checkable).min(f.forget));
                return;
            }
        }
        self.scan_next_check();
    }

    /// [`Self::update_next_check`] from every frame (and the other frames' bound anew).
    #[inline(never)]
    fn scan_next_check(&mut self) {
        let disp = self.dispersion.as_nanos();
        let base = self.timeout(0);
        let i = self.cfg.check_interval.as_nanos().max(1);
        // As `tick_after`, while the frames are borrowed.
        let tick_after = |t: Time| Time((t.as_nanos() / i + 1) * i);
        let mut next: Option<Time> = None;
        let mut floor = Time::MAX;
        for (k, f) in self.frames.iter_mut().enumerate() {
            let Some(e) = f.earliest(disp) else { continue };
            if k > 0 {
                floor = floor.min(e);
            }
            let t = tick_after(e + base).max(f.checkable).min(f.forget);
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        self.next_check = next;
        self.others_floor = Some(floor);
    }

    /// Frame `at` got a packet with timeout key `key`: its earliest key is now at most `key`.
    fn lower_others_floor(&mut self, at: usize, key: Time) {
        if at > 0 {
            self.others_floor = self.others_floor.map(|f| f.min(key));
        }
    }

    /// The check at `now` (a check instant): forgets frames past the deadline, then returns, in
    /// `out`, every unacknowledged packet of each frame with a packet past its timeout, oldest
    /// frame first, to be queued ahead of new media. Their timers restart now.
    pub fn poll_retransmissions(&mut self, now: Time, out: &mut Vec<RtpPacket>) {
        let deadline = self.cfg.deadline;
        let mut at = 0;
        while at < self.frames.len() {
            if now.saturating_since(self.frames[at].encoded) <= deadline {
                at += 1;
            } else {
                self.forget(at);
            }
        }
        let start = out.len();
        let base = self.base;
        let disp = self.dispersion.as_nanos();
        let timeout = |batch: u16| base + Duration(disp.saturating_mul(u64::from(batch)));
        for f in &mut self.frames {
            if now.saturating_since(f.encoded) < self.cfg.min_age {
                break; // frames in sending order: every later one is younger
            }
            // A group's resending changes no other group's timeout: each is decided and resent
            // in one pass.
            let due = f
                .packets
                .iter()
                .flatten()
                .any(|h| !h.queued && now.saturating_since(h.last_sent) > timeout(h.batch));
            if !due {
                continue;
            }
            let n = f.count as u16;
            for h in f.packets.iter_mut().flatten() {
                h.last_sent = now;
                h.batch = n;
                h.queued = true;
                out.push(h.packet);
            }
            // Every packet now waits in the pacer: no key is current.
            f.clear_keys();
            f.rebuild = false;
            f.known = None;
            self.groups_retransmitted += 1;
        }
        self.retransmissions += (out.len() - start) as u64;
        self.update_next_check();
    }

    /// Packets held (sent, not acknowledged, frame within the deadline as of the last check).
    pub fn held(&self) -> usize {
        self.frames.iter().map(|f| f.count).sum()
    }
}

/// The receiver side: which packets arrived (a group retransmission may resend a packet whose
/// ACK is still on the way) and the average inter-arrival within the last complete frame
/// (`PacketGroup::GetAvgPktInterval`: from the first arrival to the last first-transmission
/// arrival, over the frame's packet count; not updated when that is 0).
#[derive(Clone, Debug, Default)]
pub struct AckResponder {
    /// Frames from id `base` on, by id (None: none of its packets arrived): at most
    /// [`REMEMBERED_FRAMES`] + 1, found by index where a map search cost more than the rest of
    /// a packet's handling.
    frames: VecDeque<Option<ArrivingFrame>>,
    base: u64,
    highest: u64,
    dispersion: Duration,
    /// Duplicates received (a copy of a packet already there).
    pub duplicates: u64,
    /// Retransmitted packets that arrived before any other copy.
    pub recovered: u64,
    /// Storage of frames forgotten, for the next ones.
    spare: Vec<Vec<bool>>,
}

#[derive(Clone, Debug)]
struct ArrivingFrame {
    got: Vec<bool>,
    /// How many of `got` are true (the frame is complete when all are: counted, as a scan of
    /// `got` per packet was O(frame)).
    received: usize,
    count: u16,
    first: Time,
    last_original: Option<(u16, Time)>,
    complete: bool,
}

/// Frames remembered behind the newest (beyond, a late copy counts as new: its frame was given
/// up long ago by any decoder).
const REMEMBERED_FRAMES: u64 = 256;

impl AckResponder {
    /// A media packet arrived at `now`: packet `index` of `count` of `frame`, `rtx` if a
    /// retransmission. Returns whether it is new (false: a duplicate).
    #[inline]
    pub fn on_packet(&mut self, now: Time, frame: u64, index: u16, count: u16, rtx: bool) -> bool {
        // A frame's packets mostly arrive together, the newest frame's: its slot is there and
        // the horizon has not moved since it was made (`base` stays at or above it while any
        // frame is held, and `highest`'s slot is never forgotten), so nothing below moves.
        if frame != self.highest || self.frames.is_empty() {
            if frame + REMEMBERED_FRAMES < self.highest {
                return true;
            }
            self.highest = self.highest.max(frame);
            // Frames below the horizon are never looked at again (the test above): forgotten
            // first.
            let horizon = self.highest.saturating_sub(REMEMBERED_FRAMES);
            while self.base < horizon && !self.frames.is_empty() {
                if let Some(Some(f)) = self.frames.pop_front() {
                    self.spare.push(f.got);
                }
                self.base += 1;
            }
            // `frame` is at or above the horizon: at most REMEMBERED_FRAMES slots from `base`.
            if self.frames.is_empty() {
                self.base = frame;
            }
            while frame < self.base {
                self.frames.push_front(None);
                self.base -= 1;
            }
        }
        let at = (frame - self.base) as usize;
        if self.frames.len() <= at {
            self.frames.resize(at + 1, None);
        }
        let spare = &mut self.spare;
        let f = self.frames[at].get_or_insert_with(|| ArrivingFrame {
            got: {
                let mut got = spare.pop().unwrap_or_default();
                got.clear();
                got.resize(count.max(1) as usize, false);
                got
            },
            received: 0,
            count: count.max(1),
            first: now,
            last_original: None,
            complete: false,
        });
        let Some(slot) = f.got.get_mut(index as usize) else { return true };
        if *slot {
            self.duplicates += 1;
            return false;
        }
        *slot = true;
        f.received += 1;
        self.recovered += u64::from(rtx);
        if !rtx {
            f.last_original = Some((index, now));
        }
        if !f.complete && f.received == f.got.len() {
            f.complete = true;
            if let Some((_, t)) = f.last_original.filter(|&(i, _)| i != 0) {
                let avg = Duration(t.saturating_since(f.first).as_nanos() / u64::from(f.count));
                if avg > Duration::ZERO {
                    self.dispersion = avg;
                }
            }
        }
        true
    }

    /// The average inter-arrival of the last complete frame (0 before any).
    pub fn dispersion(&self) -> Duration {
        self.dispersion
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    fn pkt(frame: u64, index: u16, count: u16, encoded: Time) -> RtpPacket {
        RtpPacket {
            frame,
            index,
            frame_packets: count,
            size: Bytes(1200),
            marker: index + 1 == count,
            enqueued: encoded,
            retransmission_of: None,
        }
    }

    /// A sender with a known RTT: srtt 100 ms, deviation 0 (every sample 100 ms, from a 100 ms
    /// start), no dispersion.
    fn steady() -> TimeoutRetransmitter {
        let cfg = TimeoutRtxConfig { initial_rtt: Duration::from_millis(100), ..TimeoutRtxConfig::default() };
        let mut s = TimeoutRetransmitter::new(cfg);
        for i in 0..10u64 {
            s.on_sent(ms(i), i, pkt(i, 0, 1, ms(i)));
            assert_eq!(s.on_ack(ms(i + 100), i, 0, i, None), Some(Duration::from_millis(100)));
        }
        assert_eq!(s.held(), 0);
        s
    }

    #[test]
    fn the_timeout_is_srtt_plus_four_deviations_plus_the_batch_dispersion() {
        let mut s = TimeoutRetransmitter::new(TimeoutRtxConfig::default());
        // Before any sample: 50 ms + 4 x 12.5 ms.
        assert_eq!(s.timeout(1), Duration::from_millis(100));
        // Samples 40 and 80 ms: srtt = 0.2 x 80 + 0.8 x (0.2 x 40 + 0.8 x 50) = 54.4 ms; their
        // standard deviation is 20 ms.
        s.on_sent(ms(0), 0, pkt(0, 0, 2, ms(0)));
        s.on_sent(ms(0), 1, pkt(0, 1, 2, ms(0)));
        s.on_ack(ms(40), 0, 0, 0, None);
        s.on_ack(ms(80), 0, 1, 1, Some(Duration::from_millis(2)));
        let t = s.timeout(1).as_secs_f64() * 1e3;
        assert!((t - (54.4 + 80.0 + 2.0)).abs() < 1e-6, "{t}");
        let t3 = s.timeout(3).as_secs_f64() * 1e3;
        assert!((t3 - (54.4 + 80.0 + 6.0)).abs() < 1e-6, "three packets in the batch: {t3}");
        // The AP's reports (Zhuge) carry a dispersion of 0.
        s.on_assist_report();
        assert!((s.timeout(3).as_secs_f64() * 1e3 - 134.4).abs() < 1e-6);
    }

    #[test]
    fn rtt_samples_come_only_from_acks_not_older_than_the_last() {
        let mut s = TimeoutRetransmitter::new(TimeoutRtxConfig::default());
        s.on_sent(ms(0), 0, pkt(0, 0, 2, ms(0)));
        s.on_sent(ms(1), 1, pkt(0, 1, 2, ms(0)));
        assert_eq!(s.on_ack(ms(70), 0, 1, 1, None), Some(Duration::from_millis(69)));
        assert_eq!(s.on_ack(ms(71), 0, 0, 0, None), None, "an ACK of an older packet gives no sample");
        assert_eq!(s.held(), 0, "but still acknowledges it");
    }

    #[test]
    fn a_frame_unacknowledged_past_its_timeout_is_resent_whole_at_the_next_check() {
        let mut s = steady();
        // Frame 20 (3 packets) sent at 200 ms; packet 1 is acknowledged, 0 and 2 are not.
        for i in 0..3u16 {
            s.on_sent(ms(200), 100 + u64::from(i), pkt(20, i, 3, ms(200)));
        }
        s.on_ack(ms(300), 20, 1, 101, None);
        // Timeout 100 ms (srtt 100, deviation 0); the check runs every 1 ms and needs
        // now - last_send > timeout: the first check that finds it is 301 ms.
        assert_eq!(s.poll_timeout(), Some(ms(301)));
        let mut out = Vec::new();
        s.poll_retransmissions(ms(300), &mut out);
        assert!(out.is_empty(), "exactly at the timeout: not yet");
        s.poll_retransmissions(ms(301), &mut out);
        assert_eq!(
            out.iter().map(|p| p.index).collect::<Vec<_>>(),
            vec![0, 2],
            "the group's unacknowledged packets"
        );
        assert_eq!((s.retransmissions, s.groups_retransmitted), (2, 1));
        // While the copies wait in the pacer they are not queued again.
        out.clear();
        s.poll_retransmissions(ms(450), &mut out);
        assert!(out.is_empty());
        assert_eq!(s.poll_timeout(), None);
        // They leave at 460 ms: the timer restarts from there, for a batch of 2.
        s.on_retransmission_sent(ms(460), 103, &pkt(20, 0, 3, ms(200)));
        s.on_retransmission_sent(ms(460), 104, &pkt(20, 2, 3, ms(200)));
        assert_eq!(s.poll_timeout(), Some(ms(561)));
    }

    #[test]
    fn frames_younger_than_min_rtt_are_not_checked_and_older_than_the_deadline_are_forgotten() {
        let cfg = TimeoutRtxConfig {
            initial_rtt: Duration::from_millis(10),
            initial_deviation: Duration::ZERO,
            ..TimeoutRtxConfig::default()
        };
        let mut s = TimeoutRetransmitter::new(cfg);
        s.on_sent(ms(0), 0, pkt(0, 0, 1, ms(0)));
        // Timed out after 10 ms, but the frame is checked only once 50 ms old.
        assert_eq!(s.poll_timeout(), Some(ms(50)));
        let mut out = Vec::new();
        s.poll_retransmissions(ms(49), &mut out);
        assert!(out.is_empty());
        s.poll_retransmissions(ms(50), &mut out);
        assert_eq!(out.len(), 1);
        s.on_retransmission_sent(ms(50), 1, &out[0]);
        // Resent every time it times out, until the frame is 1 s old.
        let mut sends = 1;
        let mut now = ms(50);
        while let Some(t) = s.poll_timeout() {
            now = t;
            out.clear();
            s.poll_retransmissions(now, &mut out);
            for p in &out {
                sends += 1;
                s.on_retransmission_sent(now, 1 + sends, p);
            }
        }
        assert_eq!(s.held(), 0, "forgotten after the deadline");
        assert!(now <= ms(1001), "{now:?}");
        // 50 ms then every 11 ms (strictly more than 10 ms) while younger than 1 s: 87 sends.
        assert_eq!(sends, 87);
    }

    #[test]
    fn groups_timed_out_together_are_returned_oldest_first() {
        let mut s = steady();
        s.on_sent(ms(200), 100, pkt(21, 0, 1, ms(200)));
        s.on_sent(ms(201), 101, pkt(22, 0, 1, ms(201)));
        let mut out = Vec::new();
        s.poll_retransmissions(ms(400), &mut out);
        assert_eq!(out.iter().map(|p| p.frame).collect::<Vec<_>>(), vec![21, 22]);
    }

    /// The check schedule by brute force: the earliest [`TimeoutRetransmitter::due`] over every
    /// held packet not waiting in the pacer.
    fn scanned_next_check(s: &TimeoutRetransmitter) -> Option<Time> {
        s.frames
            .iter()
            .flat_map(|f| f.packets.iter().flatten().filter(|h| !h.queued).map(move |h| s.due(f, h)))
            .min()
    }

    #[test]
    fn the_check_schedule_is_the_earliest_due_packet_through_acks_losses_retransmissions_and_flushes() {
        // A sender driven at random (a fixed generator): frames of 1-40 packets sent over time,
        // ACKs mostly in order with some lost, dispersion changes, retransmissions and pacer
        // flushes. After every change that recomputes the schedule it must equal a full scan.
        let mut rnd = lowlat_core::rng::below(1, "timeout-rtx-test");
        let mut s = TimeoutRetransmitter::new(TimeoutRtxConfig::default());
        let (mut now, mut seq, mut frame) = (Time::ZERO, 0u64, 0u64);
        let mut in_flight: VecDeque<(u64, u16, u64)> = VecDeque::new();
        let mut queued: Vec<RtpPacket> = Vec::new();
        let mut out = Vec::new();
        let mut checked = 0;
        for _ in 0..20_000 {
            now += Duration::from_micros(rnd(3000));
            match rnd(10) {
                0..=2 => {
                    let n = 1 + rnd(40) as u16;
                    for i in 0..n {
                        s.on_sent(now, seq, pkt(frame, i, n, now));
                        in_flight.push_back((frame, i, seq));
                        seq += 1;
                        assert_eq!(s.poll_timeout(), scanned_next_check(&s));
                    }
                    frame += 1;
                }
                3..=6 => {
                    for _ in 0..=rnd(8) {
                        let Some((f, i, q)) = in_flight.pop_front() else { break };
                        if rnd(4) == 0 {
                            continue; // lost
                        }
                        let disp = (rnd(3) == 0).then(|| Duration::from_micros(rnd(500)));
                        s.on_ack(now, f, i, q, disp);
                        assert_eq!(s.poll_timeout(), scanned_next_check(&s));
                        checked += 1;
                    }
                }
                7 => {
                    if let Some(t) = s.poll_timeout() {
                        now = now.max(t);
                        out.clear();
                        s.poll_retransmissions(now, &mut out);
                        queued.extend(out.iter().copied());
                        assert_eq!(s.poll_timeout(), scanned_next_check(&s));
                        checked += 1;
                    }
                }
                8 => {
                    if !queued.is_empty() {
                        let k = rnd(queued.len() as u64) as usize + 1;
                        for p in queued.drain(..k.min(queued.len())) {
                            s.on_retransmission_sent(now, seq, &p);
                            in_flight.push_back((p.frame, p.index, seq));
                            seq += 1;
                            assert_eq!(s.poll_timeout(), scanned_next_check(&s));
                            checked += 1;
                        }
                    }
                }
                _ => {
                    if rnd(5) == 0 {
                        queued.clear();
                        s.on_pacer_flushed();
                        assert_eq!(s.poll_timeout(), scanned_next_check(&s));
                        checked += 1;
                    } else {
                        s.on_assist_report();
                    }
                }
            }
        }
        assert!(
            checked > 10_000 && s.retransmissions > 10,
            "{checked} checks, {} retransmissions",
            s.retransmissions
        );
    }

    #[test]
    fn the_receiver_drops_duplicates_and_measures_the_dispersion_of_complete_frames() {
        let mut r = AckResponder::default();
        assert!(r.on_packet(ms(0), 5, 0, 4, false));
        assert!(r.on_packet(ms(2), 5, 1, 4, false));
        assert!(r.on_packet(ms(4), 5, 3, 4, false));
        assert_eq!(r.dispersion(), Duration::ZERO, "incomplete");
        assert!(!r.on_packet(ms(5), 5, 1, 4, true), "a copy of a packet already there");
        assert_eq!(r.duplicates, 1);
        assert!(r.on_packet(ms(50), 5, 2, 4, true));
        // First arrival 0 ms, last first transmission (index 3) at 4 ms, 4 packets: 1 ms.
        assert_eq!(r.dispersion(), Duration::from_millis(1));
    }
}
