//! The receiving side: which packet numbers arrived, and when to acknowledge them
//! (RFC 9000 §13.2: at least every second ack-eliciting packet, within `max_ack_delay`, and at
//! once when packets arrive out of order).

use crate::ack::{AckFrame, EcnCounts};
use lowlat_core::{Duration, Time};

/// When the receiver acknowledges.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiverConfig {
    /// Acknowledge after this many packets (2, RFC 9000 §13.2.2).
    pub ack_every: u32,
    /// ... or at most this long after the first unacknowledged one (25 ms, RFC 9000 §18.2).
    pub max_ack_delay: Duration,
    /// Ranges reported per ACK frame (the newest; older ones are assumed known).
    pub max_ranges: usize,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig { ack_every: 2, max_ack_delay: Duration::from_millis(25), max_ranges: 32 }
    }
}

/// The packets received and the ACK schedule.
#[derive(Clone, Debug)]
pub struct Receiver {
    cfg: ReceiverConfig,
    /// Received ranges, highest first.
    ranges: Vec<(u64, u64)>,
    unacked: u32,
    /// When the oldest unacknowledged packet arrived.
    first_unacked: Option<Time>,
    /// When the largest packet arrived.
    largest_at: Time,
    ack_now: bool,
    /// ECN codepoints received so far (RFC 9000 §13.4.1).
    ecn: EcnCounts,
    /// Whether `ecn` counts anything ([`EcnCounts::any`], asked per frame: a flag, where the
    /// counts' sum is three loads and two additions).
    ecn_any: bool,
    /// `ack::tail_len` of `ranges`, while known: packets arriving in order only grow the first
    /// range, which leaves it as it is, so a frame's size costs no walk over 32 ranges.
    tail: Option<u64>,
    /// Counts the changes to `ranges` other than the first range's growth in order (the same
    /// moments `tail` is forgotten): a frame written at the same count differs from `ranges`
    /// at most in its first range (see [`Receiver::poll_ack_into_held`]).
    version: u64,
    /// The datagram size of the last frame written.
    last_len: u64,
    /// While `last_len` is also the next frame's size: at this `version` (so the same ranges
    /// but the first one's growth), with the largest and the first range's span below these
    /// limits (the same varint sizes), and no ECN counts and an ACK delay of a one-byte varint,
    /// as when it was worked out; `(version, largest limit, span limit)`. Packets in order only
    /// grow the first range, so mostly a frame's size costs no sum of varints.
    len_holds: Option<(u64, u64, u64)>,
}

impl Receiver {
    /// A receiver that has seen nothing.
    pub fn new(cfg: ReceiverConfig) -> Receiver {
        Receiver {
            cfg,
            ranges: Vec::with_capacity(8),
            unacked: 0,
            first_unacked: None,
            largest_at: Time::ZERO,
            ack_now: false,
            ecn: EcnCounts::default(),
            ecn_any: false,
            tail: None,
            version: 0,
            last_len: 0,
            len_holds: None,
        }
    }

    /// Packet `pn` arrived at `now` with ECN bits `ecn`: counted for the ACK_ECN frame. A CE
    /// mark is acknowledged at once (RFC 9000 §13.2.1: "SHOULD immediately acknowledge" a
    /// packet marked CE, so the sender reacts within an RTT).
    #[inline]
    pub fn on_packet_ecn(&mut self, now: Time, pn: u64, ecn: u8) {
        self.on_packet(now, pn);
        // (Not-ECT, mostly, counts nothing: asked first, where the count's match jumps through
        // a table.)
        if ecn & 3 != 0 {
            self.count_ecn(ecn);
        }
    }

    /// [`Receiver::on_packet_ecn`]'s counting of an ECN-capable packet (apart: folded into the
    /// caller, the codepoint's match jumped through a table for every packet, Not-ECT too).
    #[inline(never)]
    fn count_ecn(&mut self, ecn: u8) {
        self.ecn.count(ecn);
        self.ecn_any = true;
        if ecn & 3 == 3 {
            self.ack_now = true;
        }
    }

    /// Packet `pn` arrived at `now`. (This and the other per-packet calls are inlinable into
    /// the driver: their call frames cost a fifth of them.)
    #[inline]
    pub fn on_packet(&mut self, now: Time, pn: u64) {
        let largest = self.ranges.first().map(|r| r.1);
        match self.ranges.first_mut() {
            // The common case: the next packet in order extends the newest range.
            Some(r) if pn == r.1 + 1 => r.1 = pn,
            _ => {
                if largest.is_some_and(|l| pn > l + 1) || largest.is_some_and(|l| pn < l) {
                    self.ack_now = true; // a gap, or a late packet: tell the sender at once
                }
                self.insert(pn);
            }
        }
        if largest.is_none_or(|l| pn > l) {
            self.largest_at = now;
        }
        self.unacked += 1;
        self.first_unacked.get_or_insert(now);
        if self.unacked >= self.cfg.ack_every {
            self.ack_now = true;
        }
    }

    /// [`Receiver::on_packet_ecn`] of the next packet in order, Not-ECT (most packets): whether
    /// it was one (if not, nothing changed and `on_packet_ecn` is due). With nothing to call,
    /// a driver's per-packet work around it need save no registers.
    #[inline(always)]
    pub fn on_next_packet(&mut self, now: Time, pn: u64, ecn: u8) -> bool {
        match self.ranges.first_mut() {
            Some(r) if pn == r.1 + 1 && ecn & 3 == 0 => r.1 = pn,
            _ => return false,
        }
        // (The newest packet, and no gap: as `on_packet` for it.)
        self.largest_at = now;
        self.unacked += 1;
        self.first_unacked.get_or_insert(now);
        if self.unacked >= self.cfg.ack_every {
            self.ack_now = true;
        }
        true
    }

    /// A packet out of order (a gap, or late): into the ranges. (Apart: rare, and inlined into
    /// the per-packet call it made that save registers.)
    #[cold]
    #[inline(never)]
    fn insert(&mut self, pn: u64) {
        self.tail = None;
        self.version += 1;
        let i = self.ranges.partition_point(|r| r.0 > pn);
        if self.ranges.get(i).is_some_and(|r| r.0 <= pn && pn <= r.1) {
            return; // duplicate
        }
        let joins_above = i > 0 && self.ranges[i - 1].0 == pn + 1;
        let joins_below = self.ranges.get(i).is_some_and(|r| r.1 + 1 == pn);
        match (joins_above, joins_below) {
            (true, true) => {
                self.ranges[i - 1].0 = self.ranges[i].0;
                self.ranges.remove(i);
            }
            (true, false) => self.ranges[i - 1].0 = pn,
            (false, true) => self.ranges[i].1 = pn,
            (false, false) => self.ranges.insert(i, (pn, pn)),
        }
        // Old ranges beyond what a frame reports are forgotten.
        self.ranges.truncate(self.cfg.max_ranges);
    }

    /// The ACK frame due at `now`, if one is.
    pub fn poll_ack(&mut self, now: Time) -> Option<AckFrame> {
        let mut frame = AckFrame::default();
        self.poll_ack_into(now, &mut frame).then_some(frame)
    }

    /// Whether an ACK frame is due at `now` ([`Receiver::poll_ack`] would give one).
    #[inline]
    pub fn ack_due(&self, now: Time) -> bool {
        self.first_unacked.is_some_and(|first| self.ack_now || now - first >= self.cfg.max_ack_delay)
    }

    /// [`Receiver::poll_ack`] written into `frame` (whatever it held before): whether one was
    /// due. A driver that keeps its frames in place (a ring of them) copies only the ranges in
    /// use, where a returned frame is moved whole (its inline room for every range) each time.
    pub fn poll_ack_into(&mut self, now: Time, frame: &mut AckFrame) -> bool {
        self.poll_ack_into_held(now, frame, &mut None)
    }

    /// [`Receiver::poll_ack_into`] for a `frame` that may hold an earlier frame of this
    /// receiver: `held` says which (`None`: unknown; kept up to date here). Frames of a flow
    /// mostly differ only in their first range (packets arrive in order; old holes stay, up to
    /// `max_ranges` of them), so a frame written over one of the same ranges otherwise costs no
    /// copy of the rest.
    #[inline]
    pub fn poll_ack_into_held(&mut self, now: Time, frame: &mut AckFrame, held: &mut Option<u64>) -> bool {
        if !self.ack_due(now) {
            return false;
        }
        self.write_ack_into_held(now, frame, held);
        true
    }

    /// [`Receiver::poll_ack_into_held`] once the caller knows an ACK frame is due at `now`
    /// ([`Receiver::ack_due`]): a driver that asked already need not ask again.
    #[inline]
    pub fn write_ack_into_held(&mut self, now: Time, frame: &mut AckFrame, held: &mut Option<u64>) {
        self.ack_sent(now);
        if *held == Some(self.version) && frame.ranges.len() == self.ranges.len() && !self.ranges.is_empty() {
            frame.ranges[0] = self.ranges[0];
        } else if let ([to], [from]) = (&mut frame.ranges[..], &self.ranges[..]) {
            // One range in each (no loss so far, as FastAck's AP mostly writes over a frame of
            // unknown origin): no call to copy a slice.
            *to = *from;
            *held = Some(self.version);
        } else {
            // The slot mostly held a frame of as many ranges (the ring reuses slots): its ranges
            // are overwritten in place, one copy, where `clear` + `extend_from_slice` made two
            // calls (the second to shift an empty tail).
            frame.ranges.truncate(self.ranges.len());
            let (head, rest) = self.ranges.split_at(frame.ranges.len());
            frame.ranges.copy_from_slice(head);
            if !rest.is_empty() {
                frame.ranges.extend_from_slice(rest);
            }
            *held = Some(self.version);
        }
        frame.ack_delay = now - self.largest_at;
        // (Not-ECT flows, mostly, store nothing: the slot's frame says `None` already.)
        if self.ecn_any {
            frame.ecn = Some(self.ecn);
        } else if frame.ecn.is_some() {
            frame.ecn = None;
        }
        self.size_frame(frame.ack_delay, frame.ecn);
        debug_assert_eq!(self.last_len, frame.datagram_len());
    }

    /// [`Receiver::write_ack_into_held`] (an ACK frame is due at `now`) if `frame` holds this
    /// receiver's frame of the current ranges but for the first one's growth (`held` says so),
    /// the flow is Not-ECT and the frame's size is the last one's (the remembered case of
    /// [`Receiver::last_datagram_len`]): whether it was (if not, nothing changed and
    /// `write_ack_into_held` is due). Most frames of a flow are, and written without a call, a
    /// driver's per-ACK work need save no registers.
    #[inline(always)]
    pub fn write_ack_if_plain(&mut self, now: Time, frame: &mut AckFrame, held: Option<u64>) -> bool {
        let ack_delay = now - self.largest_at;
        let Some((version, hi_limit, span_limit)) = self.len_holds else { return false };
        // (`held` at this version: the frame has as many ranges, at least one; see
        // `write_ack_into_held`.)
        if held != Some(self.version) || version != self.version || self.ecn_any {
            return false;
        }
        let (lo, hi) = self.ranges[0];
        // (As `size_frame` asks.)
        if ack_delay.as_nanos() >= 64 * 8_000 || hi >= hi_limit || hi - lo >= span_limit {
            return false;
        }
        debug_assert_eq!(frame.ranges.len(), self.ranges.len());
        let Some(first) = frame.ranges.first_mut() else { return false };
        *first = (lo, hi);
        self.ack_sent(now);
        frame.ack_delay = ack_delay;
        if frame.ecn.is_some() {
            frame.ecn = None;
        }
        debug_assert_eq!(self.last_len, frame.datagram_len());
        true
    }

    /// [`Receiver::skip_ack`] (an ACK frame is due at `now`) if the flow is Not-ECT and the
    /// frame's size is the last one's (as for [`Receiver::write_ack_if_plain`]): whether it was
    /// (if not, nothing changed and `skip_ack` is due).
    #[inline(always)]
    pub fn skip_ack_if_plain(&mut self, now: Time) -> bool {
        if !self.size_holds(now - self.largest_at) {
            return false;
        }
        self.ack_sent(now);
        true
    }

    /// Whether a frame of the current ranges with `ack_delay`, without ECN counts, is
    /// `last_len` long (the case [`Receiver::size_frame`] remembers).
    #[inline(always)]
    fn size_holds(&self, ack_delay: Duration) -> bool {
        // (Ranges: at least the packet that made the frame due.)
        let (lo, hi) = self.ranges[0];
        // (An ACK delay below 64 x 8 us is a one-byte varint.)
        let plain = !self.ecn_any && ack_delay.as_nanos() < 64 * 8_000;
        plain
            && self.len_holds.is_some_and(|(version, hi_limit, span_limit)| {
                version == self.version && hi < hi_limit && hi - lo < span_limit
            })
    }

    /// [`Receiver::write_ack_into_held`] of a frame nobody will read: the receiver moves on as
    /// if it had written it (the same ACK schedule), and [`Receiver::last_datagram_len`] says
    /// how big it would be, without the copy of its ranges. For a driver whose network
    /// acknowledges for the receiver and drops its ACKs (FastAck), which still count.
    #[inline]
    pub fn skip_ack(&mut self, now: Time) {
        self.ack_sent(now);
        let ecn = if self.ecn_any { Some(self.ecn) } else { None };
        self.size_frame(now - self.largest_at, ecn);
    }

    /// An ACK due at `now` goes out: nothing is left to acknowledge until the next packet.
    #[inline(always)]
    fn ack_sent(&mut self, now: Time) {
        debug_assert!(self.ack_due(now));
        self.ack_now = false;
        self.unacked = 0;
        self.first_unacked = None;
    }

    /// Works out `last_len` for a frame of the current ranges with `ack_delay` and `ecn` (as
    /// written by [`Receiver::write_ack_into_held`]).
    #[inline(always)]
    fn size_frame(&mut self, ack_delay: Duration, ecn: Option<EcnCounts>) {
        // (Ranges: at least the packet that made the frame due.)
        let (lo, hi) = self.ranges[0];
        // (An ACK delay below 64 x 8 us is a one-byte varint.)
        let plain = !self.ecn_any && ack_delay.as_nanos() < 64 * 8_000;
        let holds = plain
            && self.len_holds.is_some_and(|(version, hi_limit, span_limit)| {
                version == self.version && hi < hi_limit && hi - lo < span_limit
            });
        if !holds {
            let tail = *self.tail.get_or_insert_with(|| crate::ack::tail_len(&self.ranges));
            self.last_len = crate::ack::DATAGRAM_OVERHEAD
                + crate::ack::encoded_len_with(&self.ranges, ack_delay, ecn, tail);
            self.len_holds = plain
                .then(|| (self.version, crate::ack::varint_limit(hi), crate::ack::varint_limit(hi - lo)));
        }
    }

    /// [`AckFrame::datagram_len`] of the last frame [`Receiver::poll_ack_into`] wrote (worked out
    /// from what the receiver remembers of its ranges).
    #[inline]
    pub fn last_datagram_len(&self) -> u64 {
        self.last_len
    }

    /// Whether every packet is acknowledged at once (`ack_every` of 1 or 0): each arrival makes
    /// an ACK due at its instant, so, polled after each, the receiver never has a timer.
    pub fn acks_every_packet(&self) -> bool {
        self.cfg.ack_every <= 1
    }

    /// When an ACK falls due by the delay timer (`None`: nothing unacknowledged).
    #[inline]
    pub fn poll_timeout(&self) -> Option<Time> {
        let first = self.first_unacked?;
        Some(if self.ack_now { first } else { first + self.cfg.max_ack_delay })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_every_second_packet_or_after_the_delay_and_at_once_on_a_gap() {
        let mut r = Receiver::new(ReceiverConfig::default());
        r.on_packet(Time::from_millis(1), 0);
        assert_eq!(r.poll_ack(Time::from_millis(1)), None);
        assert_eq!(r.poll_timeout(), Some(Time::from_millis(26)));
        r.on_packet(Time::from_millis(2), 1);
        let a = r.poll_ack(Time::from_millis(2)).unwrap();
        assert_eq!(a.ranges.as_slice(), [(0, 1)]);
        r.on_packet(Time::from_millis(3), 2);
        let a = r.poll_ack(Time::from_millis(28)).unwrap();
        assert_eq!((a.ranges.as_slice(), a.ack_delay), (&[(0, 2)][..], Duration::from_millis(25)));
        // 3 and 4 lost: 5 opens a gap and is acknowledged at once.
        r.on_packet(Time::from_millis(30), 5);
        assert_eq!(r.poll_ack(Time::from_millis(30)).unwrap().ranges.as_slice(), [(5, 5), (0, 2)]);
        // Filling the hole joins the ranges.
        r.on_packet(Time::from_millis(31), 3);
        r.on_packet(Time::from_millis(31), 4);
        assert_eq!(r.poll_ack(Time::from_millis(31)).unwrap().ranges.as_slice(), [(0, 5)]);
    }

    #[test]
    fn ecn_counts_are_cumulative_and_a_ce_mark_is_acknowledged_at_once() {
        let mut r = Receiver::new(ReceiverConfig::default());
        r.on_packet_ecn(Time::from_millis(1), 0, 1);
        assert_eq!(r.poll_ack(Time::from_millis(1)), None);
        r.on_packet_ecn(Time::from_millis(2), 1, 3);
        let a = r.poll_ack(Time::from_millis(2)).unwrap();
        assert_eq!(a.ecn, Some(EcnCounts { ect0: 0, ect1: 1, ce: 1 }));
        r.on_packet_ecn(Time::from_millis(3), 2, 3); // CE: no waiting for a second packet
        let a = r.poll_ack(Time::from_millis(3)).unwrap();
        assert_eq!(a.ecn, Some(EcnCounts { ect0: 0, ect1: 1, ce: 2 }));
        // Without ECN-capable packets the frame is a plain ACK.
        let mut plain = Receiver::new(ReceiverConfig::default());
        plain.on_packet_ecn(Time::ZERO, 0, 0);
        plain.on_packet_ecn(Time::ZERO, 1, 0);
        assert_eq!(plain.poll_ack(Time::ZERO).unwrap().ecn, None);
    }

    /// Frames written over the earlier frames of a small ring of slots, with their notes, are
    /// the frames `poll_ack` gives, under arrivals in order, with gaps, late, duplicated, and
    /// beyond the ranges a frame reports.
    #[test]
    fn frames_written_over_held_ones_are_whole_frames() {
        let mut below = lowlat_core::rng::below(1, "held-frames-test");
        for case in 0..20 {
            let cfg = ReceiverConfig { max_ranges: 1 + case % 40, ..ReceiverConfig::default() };
            let mut r = Receiver::new(cfg);
            let mut slots = vec![(AckFrame::default(), None); 1 + case % 4];
            let (mut next, mut frames, mut k) = (0u64, 0, 0);
            for i in 0..5_000u64 {
                let pn = random_arrival(&mut below, &mut next, 20);
                r.on_packet_ecn(Time(i * 100_000), pn, below(4) as u8);
                let now = Time(i * 100_000 + below(30_000_000));
                let want = r.clone().poll_ack(now);
                let (frame, held) = &mut slots[k];
                assert_eq!(r.poll_ack_into_held(now, frame, held), want.is_some());
                if let Some(want) = want {
                    assert_eq!(*frame, want, "case {case} packet {i}");
                    k = (k + 1) % slots.len();
                    frames += 1;
                }
            }
            assert!(frames > 1000, "{frames} frames");
        }
    }

    /// Frames written in place where they can be ([`Receiver::write_ack_if_plain`], else
    /// [`Receiver::write_ack_into_held`]) over the earlier frames of a ring of slots are the
    /// frames `poll_ack` gives, with their sizes (frames skipped too, [`Receiver::skip_ack_if_plain`]), under arrivals in order, with gaps, late and
    /// duplicated, with and without ECN, at ACK delays below and above a one-byte varint's.
    #[test]
    fn frames_written_in_place_are_whole_frames() {
        let mut below = lowlat_core::rng::below(1, "plain-frames-test");
        let mut plain = 0;
        for case in 0..20 {
            let cfg = ReceiverConfig {
                ack_every: 1 + case as u32 % 3,
                max_ranges: 1 + case % 40,
                ..ReceiverConfig::default()
            };
            let mut r = Receiver::new(cfg);
            let mut slots = vec![(AckFrame::default(), None); 1 + case % 4];
            let (mut next, mut k) = (0u64, 0);
            for i in 0..5_000u64 {
                let pn = random_arrival(&mut below, &mut next, 20);
                let ecn = if case % 3 == 0 && below(100) == 0 { below(4) as u8 } else { 0 };
                if !r.on_next_packet(Time(i * 100_000), pn, ecn) {
                    r.on_packet_ecn(Time(i * 100_000), pn, ecn);
                }
                let delay = if below(2) == 0 { below(600_000) } else { below(30_000_000) };
                let now = Time(i * 100_000 + delay);
                let want = r.clone().poll_ack(now);
                assert_eq!(r.ack_due(now), want.is_some());
                let skip = case % 5 == 4 && below(2) == 0;
                if let Some(want) = want.as_ref().filter(|_| skip) {
                    // Not written (FastAck): sized alike.
                    if r.skip_ack_if_plain(now) {
                        plain += 1;
                    } else {
                        r.skip_ack(now);
                    }
                    assert_eq!(r.last_datagram_len(), want.datagram_len(), "case {case} packet {i}");
                } else if let Some(want) = want {
                    let (frame, held) = &mut slots[k];
                    if r.write_ack_if_plain(now, frame, *held) {
                        plain += 1;
                    } else {
                        r.write_ack_into_held(now, frame, held);
                    }
                    assert_eq!(*frame, want, "case {case} packet {i}");
                    assert_eq!(r.last_datagram_len(), want.datagram_len(), "case {case} packet {i}");
                    k = (k + 1) % slots.len();
                }
            }
        }
        assert!(plain > 1_000, "{plain} plain frames");
    }

    /// The next packet number of a random arrival order: one in `one_in` after a gap, one in
    /// `one_in` late or a duplicate, else the next; `next` follows the highest so far.
    fn random_arrival(below: &mut impl FnMut(u64) -> u64, next: &mut u64, one_in: u64) -> u64 {
        let pn = match below(one_in) {
            0 => *next + 1 + below(300),
            1 => next.saturating_sub(1 + below(50)),
            _ => *next,
        };
        *next = (*next).max(pn + 1);
        pn
    }

    /// The size the receiver works out from its remembered ranges is the frame's own, under
    /// arrivals in order, with gaps, late, duplicated, and beyond the ranges a frame reports.
    #[test]
    fn remembered_sizes_are_the_frames_sizes() {
        let mut below = lowlat_core::rng::below(1, "remembered-sizes-test");
        for case in 0..20 {
            let cfg = ReceiverConfig { max_ranges: 1 + case % 40, ..ReceiverConfig::default() };
            let mut r = Receiver::new(cfg);
            let mut frame = AckFrame::default();
            let (mut next, mut frames) = (0u64, 0);
            for k in 0..5_000u64 {
                let pn = random_arrival(&mut below, &mut next, 10);
                // ECN-capable packets in half the cases (their frames' sizes are never
                // remembered), and ACK delays below and above a one-byte varint's.
                let ecn = if case % 2 == 0 { below(4) as u8 } else { 0 };
                r.on_packet_ecn(Time(k * 100_000), pn, ecn);
                let delay = if below(2) == 0 { below(600_000) } else { below(30_000_000) };
                if r.poll_ack_into(Time(k * 100_000 + delay), &mut frame) {
                    assert_eq!(r.last_datagram_len(), frame.datagram_len(), "case {case} packet {k}");
                    frames += 1;
                }
            }
            assert!(frames > 1000, "{frames} frames");
        }
    }
}
