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

use super::GccConfig;
use lowlat_core::Time;

/// Consecutive reordered groups after which the grouping restarts (`kReorderedResetThreshold`).
const REORDERED_RESET: u32 = 3;

/// Signed `a - b` in milliseconds.
pub(super) fn delta_ms(a: Time, b: Time) -> f64 {
    (i128::from(a.as_nanos()) - i128::from(b.as_nanos())) as f64 / 1e6
}

/// One delay-variation sample between two consecutive groups.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct GroupDelta {
    /// Send time of the newer group minus that of the older, ms.
    pub send_delta_ms: f64,
    /// Arrival time of the newer group minus that of the older, ms.
    pub arrival_delta_ms: f64,
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
            sample = Some(GroupDelta { send_delta_ms: delta_ms(cur.send, prev.send), arrival_delta_ms });
        }
        self.prev = Some(cur);
        self.current = Some(Group::new(send, arrival));
        sample
    }

    fn new_group(cfg: &GccConfig, cur: &Group, send: Time, arrival: Time) -> bool {
        !Self::belongs_to_burst(cfg, cur, send, arrival) && send - cur.first_send > cfg.burst_time
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

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::Duration;

    fn at(ms: f64) -> Time {
        Time::ZERO + Duration::from_secs_f64(ms / 1e3)
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
}
