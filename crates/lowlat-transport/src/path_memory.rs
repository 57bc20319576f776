//! Path memory: what a connection saves about the path for a later one
//! (draft-ietf-tsvwg-careful-resume-24 §4.2 "Observing"; draft-kuhn-quic-0rtt-bdp's BDP frame).
//!
//! The saved set is the capacity seen (`saved_cwnd`: bytes acknowledged in one RTT, or half the
//! window if the connection was still in slow start, whose window overshoots the path), the
//! minimum RTT, and a lifetime; the remote endpoint is who keeps it (one set per endpoint, one
//! connection at a time uses it).

use lowlat_core::{Duration, Time};

/// A saved set of path parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavedPath {
    /// saved_cwnd, bytes.
    pub cwnd: u64,
    /// saved_rtt: the minimum RTT seen.
    pub rtt: Duration,
    /// When it was saved.
    pub saved_at: Time,
    /// How long it may be used.
    pub lifetime: Duration,
}

impl SavedPath {
    /// Whether the set may still be used at `now` (its lifetime has not expired).
    pub fn is_valid(&self, now: Time) -> bool {
        now <= self.saved_at + self.lifetime
    }
}

/// Measures, while a connection runs, the most bytes acknowledged in one RTT: the estimate of
/// the path's capacity that becomes saved_cwnd. O(1) per ACK: the count restarts every minimum
/// RTT.
#[derive(Clone, Copy, Debug, Default)]
pub struct PathObserver {
    mark_time: Option<Time>,
    mark_acked: u64,
    max_per_rtt: u64,
}

impl PathObserver {
    /// An ACK arrived: `acked` is the total of bytes acknowledged so far, `min_rtt` the minimum
    /// RTT.
    pub fn on_ack(&mut self, now: Time, acked: u64, min_rtt: Duration) {
        let Some(t) = self.mark_time else {
            self.mark_time = Some(now);
            self.mark_acked = acked;
            return;
        };
        if now >= t + min_rtt {
            self.max_per_rtt = self.max_per_rtt.max(acked - self.mark_acked);
            self.mark_time = Some(now);
            self.mark_acked = acked;
        }
    }

    /// The most bytes acknowledged within one RTT so far.
    pub fn max_acked_per_rtt(&self) -> u64 {
        self.max_per_rtt
    }

    /// The set to save at `now` (§4.2): bytes acknowledged in one RTT, at most half the window
    /// `cwnd` while in slow start; `None` below `min_save` (the draft allows skipping sets under
    /// 4 x IW, which would not speed anything up).
    pub fn saved(
        &self,
        now: Time,
        cwnd: u64,
        in_slow_start: bool,
        min_rtt: Duration,
        lifetime: Duration,
        min_save: u64,
    ) -> Option<SavedPath> {
        let mut saved = self.max_per_rtt;
        if in_slow_start {
            saved = saved.min(cwnd / 2);
        }
        (saved >= min_save && saved > 0).then_some(SavedPath {
            cwnd: saved,
            rtt: min_rtt,
            saved_at: now,
            lifetime,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_the_most_acked_in_one_rtt_and_half_the_window_in_slow_start() {
        let mut o = PathObserver::default();
        let rtt = Duration::from_millis(100);
        // 10 kB per 50 ms for a while: 20 kB per RTT; then a faster RTT of 50 kB.
        let mut acked = 0;
        for i in 0..20u64 {
            acked += 10_000;
            o.on_ack(Time::from_millis(50 * i), acked, rtt);
        }
        assert_eq!(o.max_acked_per_rtt(), 20_000);
        acked += 50_000;
        o.on_ack(Time::from_millis(1000), acked, rtt);
        assert_eq!(o.max_acked_per_rtt(), 60_000);
        let s = o.saved(Time::from_secs(2), 200_000, false, rtt, Duration::from_secs(60), 48_000).unwrap();
        assert_eq!((s.cwnd, s.rtt), (60_000, rtt));
        // Still in slow start with a window of 80 kB: half of it.
        let s = o.saved(Time::from_secs(2), 80_000, true, rtt, Duration::from_secs(60), 0).unwrap();
        assert_eq!(s.cwnd, 40_000);
        // Below 4 x IW: nothing saved.
        assert!(o.saved(Time::from_secs(2), 80_000, true, rtt, Duration::from_secs(60), 48_000).is_none());
        assert!(s.is_valid(Time::from_secs(62)) && !s.is_valid(Time::from_secs(63)));
    }
}
