//! Arrival groups: libwebrtc's `InterArrivalDelta` (goog_cc/inter_arrival_delta.cc), the packet
//! grouping of draft-ietf-rmcat-gcc-02 §5.2.
//!
//! - A packet sent more than `burst_time` (5 ms) after the first packet of the current group opens
//!   a new group ...
//! - ... unless it belongs to a burst: it was sent at the same instant as the group's last packet,
//!   or it arrived at most `burst_time` after the group's last arrival with a shrinking one-way
//!   delay (the network released queued packets at once) while the group has lasted less than
//!   `burst_max_duration` (100 ms) at the receiver.
//! - A group's send time is the latest send time of its packets; its arrival ("complete") time is
//!   the arrival of the last packet added (feedback is fed sorted by arrival time, so the latest).
//! - When a packet opens a new group, the two previous complete groups give one sample: the send
//!   delta and the arrival delta between them. A negative arrival delta (groups reordered in the
//!   network) gives no sample and the packet is dropped; `REORDERED_RESET` of those in a row reset
//!   the grouping.
//! - A packet sent before the current group's first packet (reordered) is ignored.
//!
//! libwebrtc uses one 5 ms constant for the group length (`kSendTimeGroupLength`) and another for
//! the burst gap (`kBurstDeltaThreshold`); both are `burst_time` here.
//!
//! [`MeanGroups`] is the Zhuge artifact's grouping instead (`group_mean_times`, on in
//! [`GccConfig::artifact`]): transys-project/zhuge, ns-3.34-diff/src/bitrate-ctrl/model/
//! `packet-sender-udp.cc`, `PacketSenderUdp::OnSocketRecv_sender`, which groups the reported
//! packets before `GccController::processFeedback` sees them:
//! - A packet sent more than `burst_time` (the artifact: `> 10000` us) after the current group's
//!   first packet opens a new group; there is no burst merging.
//! - A group's send and arrival times are the means of its packets' (integer microseconds: the
//!   sums over the packet count, `m_curr_frame_TxTime / m_curr_pkts_in_frame`); the very first
//!   packet counts in the first group's packet count but not in its sums (`m_firstFeedback`
//!   sets `m_curr_pkts_in_frame = 1` and leaves the sums at 0), so the first sample is off.
//! - When a group closes and it is not the first, the deltas between it and the group before are
//!   one sample, each truncated to whole milliseconds (`GccController::processFeedback`:
//!   `l_inter_departure/1000`, `l_inter_arrival/1000` on integers); a negative arrival delta is
//!   kept (no reordering test). The sample's clock (trendline x, threshold time) is the arrival
//!   of the closed group's last packet, in whole ms (`m_prev_RxTime`, `l_arrival_time/1000`).
//! - A packet sent before the current group's first is ignored, and so is one sent more than
//!   `group_max_span` (20 frame intervals: `20 * m_interval * 1000` us) after it; the group's
//!   start does not move then, so after such a gap in the reported send times every later packet
//!   is ignored too and the delay-based part stops for good, as in the artifact.

use super::GccConfig;
use lowlat_core::Time;

/// Consecutive reordered groups after which the grouping restarts (`kReorderedResetThreshold`).
const REORDERED_RESET: u32 = 3;

/// Signed `a - b` in milliseconds.
pub(super) fn delta_ms(a: Time, b: Time) -> f64 {
    // Through i64 when both fit (any run shorter than 292 years): the same value as through
    // i128, whose conversion to f64 is a library call several times dearer.
    match (i64::try_from(a.as_nanos()), i64::try_from(b.as_nanos())) {
        (Ok(a), Ok(b)) => (a - b) as f64 / 1e6,
        _ => (i128::from(a.as_nanos()) - i128::from(b.as_nanos())) as f64 / 1e6,
    }
}

/// One delay-variation sample between two consecutive groups.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct GroupDelta {
    /// Send time of the newer group minus that of the older, ms.
    pub send_delta_ms: f64,
    /// Arrival time of the newer group minus that of the older, ms.
    pub arrival_delta_ms: f64,
    /// The sample's time on the packets' clock, ms (trendline x, threshold updates): libwebrtc
    /// the arrival of the packet that opened the next group; the artifact the arrival of the
    /// closed group's last packet.
    pub at_ms: f64,
}

#[derive(Clone, Copy, Debug)]
struct Group {
    first_send: Time,
    /// Latest send time in the group.
    send: Time,
    first_arrival: Time,
    /// Arrival of the last packet added.
    complete: Time,
}

impl Group {
    fn new(send: Time, arrival: Time) -> Group {
        Group { first_send: send, send, first_arrival: arrival, complete: arrival }
    }
}

/// The grouping state.
#[derive(Clone, Debug, Default)]
pub(super) struct InterArrival {
    current: Option<Group>,
    prev: Option<Group>,
    reordered: u32,
}

impl InterArrival {
    /// Forgets every group (stream time-out or repeated reordering).
    pub fn reset(&mut self) {
        *self = InterArrival::default();
    }

    /// Adds one received packet; returns a sample when it completes a group that has a
    /// predecessor.
    pub fn on_packet(&mut self, cfg: &GccConfig, send: Time, arrival: Time) -> Option<GroupDelta> {
        let Some(cur) = self.current.as_mut() else {
            self.current = Some(Group::new(send, arrival));
            return None;
        };
        if cur.first_send > send {
            return None; // reordered into an older group
        }
        if !Self::new_group(cfg, cur, send, arrival) {
            cur.send = cur.send.max(send);
            cur.complete = arrival;
            return None;
        }
        let cur = *cur;
        let mut sample = None;
        if let Some(prev) = self.prev {
            let arrival_delta_ms = delta_ms(cur.complete, prev.complete);
            if arrival_delta_ms < 0.0 {
                self.reordered += 1;
                if self.reordered >= REORDERED_RESET {
                    self.reset();
                }
                return None;
            }
            self.reordered = 0;
            sample = Some(GroupDelta {
                send_delta_ms: delta_ms(cur.send, prev.send),
                arrival_delta_ms,
                at_ms: arrival.as_nanos() as f64 / 1e6,
            });
        }
        self.prev = Some(cur);
        self.current = Some(Group::new(send, arrival));
        sample
    }

    fn new_group(cfg: &GccConfig, cur: &Group, send: Time, arrival: Time) -> bool {
        // The send-time test first: it is an integer comparison and mostly false (a packet within
        // its group), which settles it without the burst test's float work (both are pure).
        send - cur.first_send > cfg.burst_time && !Self::belongs_to_burst(cfg, cur, send, arrival)
    }

    fn belongs_to_burst(cfg: &GccConfig, cur: &Group, send: Time, arrival: Time) -> bool {
        let arrival_delta = delta_ms(arrival, cur.complete);
        let send_delta = delta_ms(send, cur.send);
        if send_delta == 0.0 {
            return true;
        }
        let burst_ms = cfg.burst_time.as_secs_f64() * 1e3;
        arrival_delta - send_delta < 0.0
            && arrival_delta <= burst_ms
            && delta_ms(arrival, cur.first_arrival) < cfg.burst_max_duration.as_secs_f64() * 1e3
    }
}

/// Sums of one artifact group, integer microseconds.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    send_us: u64,
    arrival_us: u64,
    packets: u64,
}

impl Sums {
    /// (mean send, mean arrival), us, truncated as the artifact's integer division.
    fn means(&self) -> (i64, i64) {
        let n = self.packets.max(1);
        ((self.send_us / n) as i64, (self.arrival_us / n) as i64)
    }
}

fn micros(t: Time) -> u64 {
    t.as_nanos() / 1000
}

/// The Zhuge artifact's grouping (see the module doc).
#[derive(Clone, Debug, Default)]
pub(super) struct MeanGroups {
    /// First send time of the current group, us (None before the first packet).
    start_us: Option<u64>,
    /// Groups closed so far (`m_group_id`).
    closed: u64,
    cur: Sums,
    prev: Sums,
    /// Arrival of the last packet taken, us (`m_prev_RxTime`).
    last_arrival_us: u64,
    /// `cfg.group_max_span` and `cfg.burst_time` in us, worked out at the first packet (every
    /// packet compares with them).
    span_us: u64,
    burst_us: u64,
}

impl MeanGroups {
    /// Adds one reported packet in report order; returns a sample when it closes a group that has
    /// a predecessor (the artifact calls `processFeedback` exactly then).
    #[inline]
    pub fn on_packet(&mut self, cfg: &GccConfig, send: Time, arrival: Time) -> Option<GroupDelta> {
        let (send_us, arrival_us) = (micros(send), micros(arrival));
        let Some(start) = self.start_us else {
            // The first packet: counted, but not summed (the artifact's `m_firstFeedback`).
            self.start_us = Some(send_us);
            self.span_us = micros(Time::ZERO + cfg.group_max_span);
            self.burst_us = micros(Time::ZERO + cfg.burst_time);
            self.cur = Sums { packets: 1, ..Sums::default() };
            self.last_arrival_us = arrival_us;
            return None;
        };
        if !(send_us == start || (send_us > start && send_us - start <= self.span_us)) {
            return None;
        }
        let mut sample = None;
        if send_us - start > self.burst_us {
            if self.closed > 0 {
                let (cur_send, cur_arrival) = self.cur.means();
                let (prev_send, prev_arrival) = self.prev.means();
                // Integer division truncates towards zero, as C++'s on int64 / uint64.
                sample = Some(GroupDelta {
                    send_delta_ms: ((cur_send - prev_send) / 1000) as f64,
                    arrival_delta_ms: ((cur_arrival - prev_arrival) / 1000) as f64,
                    at_ms: (self.last_arrival_us / 1000) as f64,
                });
            }
            self.prev = self.cur;
            self.closed += 1;
            self.cur = Sums::default();
            self.start_us = Some(send_us);
        }
        self.cur.send_us += send_us;
        self.cur.arrival_us += arrival_us;
        self.cur.packets += 1;
        self.last_arrival_us = arrival_us;
        sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::Duration;

    fn at(ms: f64) -> Time {
        Time::ZERO + Duration::from_secs_f64(ms / 1e3)
    }

    #[test]
    fn delta_ms_is_the_exact_signed_difference_whatever_the_width() {
        let wide = |a: u64, b: u64| (i128::from(a) - i128::from(b)) as f64 / 1e6;
        let mut word = lowlat_core::rng::words(1, "delta-ms-test");
        let mut edges = vec![0, 1, 999_999, 1 << 52, (1 << 53) + 1, i64::MAX as u64, 1 << 63, u64::MAX];
        for _ in 0..2000 {
            let x = word();
            edges.push(x >> (x % 40));
        }
        for &a in &edges {
            for &b in edges.iter().step_by(37) {
                let (ta, tb) = (Time::ZERO + Duration::from_nanos(a), Time::ZERO + Duration::from_nanos(b));
                assert_eq!(delta_ms(ta, tb).to_bits(), wide(a, b).to_bits(), "{a} - {b}");
            }
        }
    }

    #[test]
    fn groups_by_send_time_and_reports_deltas_between_group_ends() {
        let cfg = GccConfig::default();
        let mut ia = InterArrival::default();
        // Group 1: sent 0 and 4 ms; group 2: 10 and 12 ms; packet at 20 ms closes group 2.
        assert_eq!(ia.on_packet(&cfg, at(0.0), at(50.0)), None);
        assert_eq!(ia.on_packet(&cfg, at(4.0), at(54.0)), None);
        assert_eq!(ia.on_packet(&cfg, at(10.0), at(61.0)), None);
        assert_eq!(ia.on_packet(&cfg, at(12.0), at(63.0)), None);
        let d = ia.on_packet(&cfg, at(20.0), at(70.0)).unwrap();
        assert!((d.send_delta_ms - 8.0).abs() < 1e-9);
        assert!((d.arrival_delta_ms - 9.0).abs() < 1e-9);
    }

    #[test]
    fn a_burst_joins_the_group_but_only_for_100_ms() {
        let cfg = GccConfig::default();
        let mut ia = InterArrival::default();
        // Packets sent 10 ms apart, all released by the network 1 ms apart after a stall: each
        // arrives within 5 ms of the last with a shrinking delay, so they form one group ...
        ia.on_packet(&cfg, at(0.0), at(200.0));
        let mut samples = 0;
        for k in 1..40 {
            let send = at(10.0 * f64::from(k));
            let arrival = at(200.0 + 4.0 * f64::from(k));
            samples += usize::from(ia.on_packet(&cfg, send, arrival).is_some());
        }
        // ... until the group has lasted 100 ms at the receiver (arrivals at 200..=296 ms form it;
        // the packet arriving at 300 ms opens the next group, and so on every ~25 packets).
        let first_group = ia.prev.expect("the burst closed after 100 ms");
        assert!(delta_ms(first_group.complete, first_group.first_arrival) < 100.0);
        assert!(delta_ms(first_group.complete, first_group.first_arrival) >= 96.0);
        assert_eq!(samples, 0, "one closed group has no predecessor to give a sample");
    }

    #[test]
    fn artifact_groups_by_10_ms_of_send_time_with_mean_times_in_whole_ms() {
        // packet-sender-udp.cc OnSocketRecv_sender, held against hand-computed means.
        let cfg = GccConfig::artifact();
        let mut g = MeanGroups::default();
        let mut on = |send: f64, arrival: f64| g.on_packet(&cfg, at(send), at(arrival));
        // Group 0: sent 1000, 1004, 1010 ms (10 ms after the first is not more than 10).
        assert_eq!(on(1000.0, 1050.0), None);
        assert_eq!(on(1004.0, 1055.0), None);
        assert_eq!(on(1010.0, 1061.0), None);
        // 1012 opens group 1; group 0 has no predecessor, so no sample.
        assert_eq!(on(1012.0, 1070.0), None);
        assert_eq!(on(1020.0, 1080.0), None);
        // 1030 closes group 1 against group 0, whose first packet counts but is not summed:
        // group 0's means are 2014000 / 3 = 671333 us sent and 2116000 / 3 = 705333 us arrived;
        // group 1's 1016000 and 1075000 us. Deltas truncated to whole ms; the clock is the
        // arrival of group 1's last packet.
        let d = on(1030.0, 1085.0).unwrap();
        assert_eq!(d, GroupDelta { send_delta_ms: 344.0, arrival_delta_ms: 369.0, at_ms: 1080.0 });
        assert_eq!(on(1035.0, 1090.0), None);
        // 1041 closes group 2 (1030, 1035): means 1032.5 and 1087.5 ms against 1016 and 1075:
        // 16.5 -> 16 and 12.5 -> 12 (libwebrtc's last-packet times would give 15 and 10).
        let d = on(1041.0, 1093.5).unwrap();
        assert_eq!(d, GroupDelta { send_delta_ms: 16.0, arrival_delta_ms: 12.0, at_ms: 1090.0 });
        // Sent before the group's first: ignored (it changes no mean below).
        assert_eq!(on(1020.0, 1094.0), None);
        // An earlier arrival is kept: group 3 (1041, 1045) means 1043 and 1076.75 ms against
        // 1032.5 and 1087.5: 10.5 -> 10 and -10.75 -> -10 (towards zero, as C++ integers).
        assert_eq!(on(1045.0, 1060.0), None);
        let d = on(1060.0, 1100.0).unwrap();
        assert_eq!(d, GroupDelta { send_delta_ms: 10.0, arrival_delta_ms: -10.0, at_ms: 1060.0 });
    }

    #[test]
    fn artifact_grouping_stops_for_good_after_a_gap_over_the_span() {
        // A packet sent more than 20 frame intervals (800 ms) after the group's first is skipped
        // and the group start stays: every later packet is skipped too.
        let cfg = GccConfig::artifact();
        let mut g = MeanGroups::default();
        for k in 0..10 {
            g.on_packet(&cfg, at(12.0 * f64::from(k)), at(50.0 + 12.0 * f64::from(k)));
        }
        let start = g.start_us;
        assert_eq!(start, Some(108_000));
        // 800 ms after the start is still within the span (and opens a group) ...
        let mut h = g.clone();
        assert!(h.on_packet(&cfg, at(908.0), at(960.0)).is_some());
        // ... 801 ms is not, nor is anything after it.
        let mut samples = 0;
        for k in 0..100 {
            let send = 909.0 + 12.0 * f64::from(k);
            samples += usize::from(g.on_packet(&cfg, at(send), at(send + 50.0)).is_some());
        }
        assert_eq!(samples, 0);
        assert_eq!(g.start_us, start);
    }
}
