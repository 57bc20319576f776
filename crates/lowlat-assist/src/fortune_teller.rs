//! Zhuge's Fortune Teller: predicts, when a packet arrives at the access point, how long it will
//! take to leave (Zhuge, SIGCOMM 2022, §4; the public ns-3 code `network-queue-zhuge`).
//!
//! `total = q_long + q_short + tx`:
//! - The dequeue process is sampled in 1 ms slots over a window of 5 frame intervals. A slot that
//!   dequeued bytes is *sending*; one with nothing dequeued while packets wait is *busy* (the
//!   channel was unavailable); one with an empty queue is *idle* and says nothing about the link.
//! - tx rate = bits dequeued in the window / non-idle time, at least 512 kbit/s.
//! - `tx` = the average dequeue interval = 1 ms x non-idle / (non-idle - busy) slots (the whole
//!   window if every non-idle slot was busy).
//! - A window with no non-idle slot keeps the last rate and interval (the artifact's
//!   `UpdateTxRate` leaves them unchanged then).
//! - `q_long` = bytes queued ahead of the packet / tx rate, with a burst allowance: by default the
//!   code's rule (no queueing delay while what is ahead fits in 5 ms at the tx rate and the queue
//!   is not shorter than at the previous prediction: the packet joins the aggregate being built),
//!   or the talk's (`max(bytes - max_burst, 0)`). The artifact applies its rule only in Wi-Fi
//!   mode; the scenario layer picks `BurstRule::None` on a point-to-point link for that reason.
//! - `q_short` = how long the head-of-line packet has already waited at the head (Wi-Fi mode; 0
//!   on a point-to-point link).
//!
//! ## Against the artifact (`network-queue-zhuge.cc`, `UpdateTxRate`/`CalculateTotalDelayMs`)
//! - Same: 1 ms slots; window = 5 frame intervals; slot kinds (bytes > 0 sending, 0 with a
//!   non-empty queue busy, else idle); rate and interval formulas; 500 x 1024 = 512 000 bit/s floor;
//!   last values kept over an all-idle window; the 5 ms aggregate rule and its "queue not shorter
//!   than at the previous prediction" test; `total = q_long + q_short + tx`.
//! - `whole_ms` (artifact variant, default): `q_long` and `tx` are truncated to whole
//!   milliseconds and the head-of-line wait counted in whole slots, as the artifact's integer
//!   `...Ms` arithmetic does; off (paper variant), everything is kept to the nanosecond.
//! - Deliberate: during the first window the rate divides by the slots seen so far, where the
//!   artifact divides by the full window (which under-estimates the rate for the first 200 ms).
//! - Deliberate: the artifact's "queue" in point-to-point mode is the device queue, cut to one
//!   packet when Zhuge runs, while the qdisc holds the rest; here the AP's queue is one queue, so
//!   a slot is busy when that queue holds packets and nothing left.
//!
//! Sans-IO: the queue reports its dequeues and length changes with `now`; slots are closed lazily
//! when time has moved past them, so nothing needs a timer. Per event the cost is O(1) amortised
//! (running sums over a ring of slots allocated once); the rate and interval are worked out when
//! read, from the latest window with a non-idle slot, not at every slot.

use lowlat_core::{Bitrate, Bytes, Duration, Time};

/// How the bytes queued ahead of a packet become its long-term queueing delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BurstRule {
    /// The public code's rule (default): no long-term queueing while the bytes ahead fit in
    /// `within` at the tx rate and the queue is not shrinking (5 ms).
    JoinAggregate {
        /// The aggregate's span.
        within: Duration,
    },
    /// The talk's rule: `q_size = max(bytes ahead - max_burst, 0)`.
    MaxBurst {
        /// Bytes one transmission opportunity carries.
        max_burst: Bytes,
    },
    /// No allowance: `q_long = bytes ahead / tx rate`.
    None,
}

/// The Fortune Teller's constants (Zhuge §4; the ns-3 code).
#[derive(Clone, Debug, PartialEq)]
pub struct FortuneTellerConfig {
    /// Sampling slot (1 ms).
    pub slot: Duration,
    /// The video's frame interval (40 ms: 25 fps).
    pub frame_interval: Duration,
    /// Frame intervals in the window (5).
    pub window_frames: u32,
    /// Floor of the tx-rate estimate (512 kbit/s).
    pub min_rate: Bitrate,
    /// The burst allowance.
    pub burst_rule: BurstRule,
    /// Whether the head-of-line wait counts (Wi-Fi mode: true; point-to-point: false).
    pub head_of_line: bool,
    /// Truncate `q_long`, `tx` and the head-of-line wait to whole milliseconds, as the artifact's
    /// integer arithmetic does (true: the artifact variant).
    pub whole_ms: bool,
}

impl Default for FortuneTellerConfig {
    fn default() -> Self {
        FortuneTellerConfig {
            slot: Duration::from_millis(1),
            frame_interval: Duration::from_millis(40),
            window_frames: 5,
            min_rate: Bitrate::kbps(512),
            burst_rule: BurstRule::JoinAggregate { within: Duration::from_millis(5) },
            head_of_line: true,
            whole_ms: true,
        }
    }
}

impl FortuneTellerConfig {
    /// Slots in the window.
    pub fn window_slots(&self) -> usize {
        ((self.frame_interval.as_nanos() * self.window_frames as u64) / self.slot.as_nanos().max(1)).max(1)
            as usize
    }
}

/// One prediction and its parts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// `q_long + q_short + tx`.
    pub total: Duration,
    /// Time to drain what is queued ahead.
    pub q_long: Duration,
    /// The head-of-line packet's wait so far.
    pub q_short: Duration,
    /// The average dequeue interval.
    pub tx: Duration,
    /// The tx-rate estimate used.
    pub rate: Bitrate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Sending,
    Busy,
    Idle,
}

/// The predictor for one queue.
#[derive(Clone, Debug)]
pub struct FortuneTeller {
    cfg: FortuneTellerConfig,
    window: usize,
    /// Closed slots, `(bytes dequeued, kind)`: a ring of at most `window` of them, filled in
    /// order, then overwritten from `oldest` on (a slot closes per millisecond: the ring's
    /// indices cost less than a `VecDeque`'s pop and push).
    slots: Vec<(u64, Slot)>,
    /// Once the ring is full, the index of its oldest slot (the next overwritten).
    oldest: usize,
    sum_bytes: u64,
    idle: usize,
    busy: usize,
    /// Start of the open slot (`None` before the first event).
    slot_start: Option<Time>,
    /// End of the open slot, `slot_start + slot` (zero before the first event: every instant
    /// is past it), kept so the look at every event is one comparison.
    slot_end: Time,
    open_bytes: u64,
    /// The queue's length as last reported (it holds until the next report).
    backlog: Bytes,
    /// Bytes ahead at the previous prediction ("is the queue shrinking?").
    last_ahead: Bytes,
    /// The last rate and interval computed from a window with non-idle slots.
    last_rate: Bitrate,
    last_interval: Duration,
    /// The tx-rate estimate (`last_rate`, at least the floor) and the bytes it carries in the
    /// aggregate span of [`BurstRule::JoinAggregate`] (0 for other rules): they change only when
    /// the window's values are worked out, not at each prediction.
    rate: Bitrate,
    aggregate_bytes: Bytes,
    /// The window changed since `last_rate`/`last_interval` were computed (and has a non-idle
    /// slot): they are worked out when next read, not at every slot.
    stale: bool,
}

impl FortuneTeller {
    /// A predictor with no history.
    pub fn new(cfg: FortuneTellerConfig) -> FortuneTeller {
        let window = cfg.window_slots();
        let mut teller = FortuneTeller {
            cfg,
            window,
            // Allocated once for the windows configs allow (at most 50 000 slots); a config
            // that skipped validation grows it as needed rather than aborting here.
            slots: Vec::with_capacity(window.min(1 << 16)),
            oldest: 0,
            sum_bytes: 0,
            idle: 0,
            busy: 0,
            slot_start: None,
            slot_end: Time::ZERO,
            open_bytes: 0,
            backlog: Bytes(0),
            last_ahead: Bytes(0),
            last_rate: Bitrate::ZERO,
            last_interval: Duration::ZERO,
            rate: Bitrate::ZERO,
            aggregate_bytes: Bytes(0),
            stale: false,
        };
        teller.set_rate();
        teller
    }

    /// Brings `rate` and `aggregate_bytes` up to date with `last_rate`.
    fn set_rate(&mut self) {
        self.rate = self.last_rate.max(self.cfg.min_rate);
        self.aggregate_bytes = match self.cfg.burst_rule {
            BurstRule::JoinAggregate { within } => self.rate.bytes_in(within),
            BurstRule::MaxBurst { .. } | BurstRule::None => Bytes(0),
        };
    }

    /// The configuration.
    pub fn config(&self) -> &FortuneTellerConfig {
        &self.cfg
    }

    fn push(&mut self, bytes: u64, kind: Slot) {
        // The window as the artifact's per-millisecond update leaves it: its values are those
        // of the latest window with a non-idle slot. Worked out lazily; but a push that leaves
        // only idle slots keeps the values of the window before it, so those are fixed first.
        let full = self.slots.len() == self.window;
        let leaving_idle = full && self.slots[self.oldest].1 == Slot::Idle;
        let non_idle_after = self.slots.len() - self.idle - usize::from(full && !leaving_idle)
            + usize::from(kind != Slot::Idle);
        if non_idle_after == 0 {
            self.refresh();
        }
        if full {
            let (b, k) = std::mem::replace(&mut self.slots[self.oldest], (bytes, kind));
            self.sum_bytes -= b;
            self.idle -= usize::from(k == Slot::Idle);
            self.busy -= usize::from(k == Slot::Busy);
            self.oldest += 1;
            if self.oldest == self.window {
                self.oldest = 0;
            }
        } else {
            self.slots.push((bytes, kind));
        }
        self.sum_bytes += bytes;
        self.idle += usize::from(kind == Slot::Idle);
        self.busy += usize::from(kind == Slot::Busy);
        // The artifact recomputes at every slot; an all-idle window keeps the previous values.
        self.stale = non_idle_after > 0;
    }

    /// Works out the rate and interval of the window as it is, if it changed since (the
    /// artifact's formulas; called only while the window has a non-idle slot).
    fn refresh(&mut self) {
        if !self.stale {
            return;
        }
        self.stale = false;
        let non_idle = (self.slots.len() - self.idle) as u64;
        let slot = self.cfg.slot.as_nanos();
        let span = slot * non_idle;
        self.last_rate = if self.sum_bytes < 1 << 31 {
            // Bytes x 8e9 fits in 64 bits: the same quotient as the 128-bit division, cheaper.
            Bitrate::bps((self.sum_bytes * 8_000_000_000).checked_div(span).unwrap_or(0))
        } else {
            Bitrate::from_bytes_per(Bytes(self.sum_bytes), Duration(span))
        };
        self.set_rate();
        let sending = non_idle - self.busy as u64;
        self.last_interval = match (slot * non_idle).checked_div(sending) {
            None => Duration(slot * self.window as u64),
            Some(d) => Duration(d),
        };
    }

    /// Closes every slot that ended by `now`.
    #[inline]
    fn advance(&mut self, now: Time) {
        // Most calls (three or four per packet) fall within the open slot: answered inline.
        if now < self.slot_end {
            return;
        }
        self.close_slots(now);
    }

    /// [`FortuneTeller::advance`] once the open slot has ended (or before the first).
    #[inline(never)]
    fn close_slots(&mut self, now: Time) {
        let slot = self.cfg.slot;
        let Some(start) = self.slot_start else {
            self.slot_start = Some(now);
            self.slot_end = now + slot;
            return;
        };
        if now < start + slot {
            return;
        }
        let ended = ((now - start).as_nanos() / slot.as_nanos().max(1)) as usize;
        // The open slot, then the empty ones after it: all alike, so at most a window of them
        // (the window's contents, and so the kept rate and interval, are the same after that).
        let waiting = self.backlog.0 > 0;
        let kind = |bytes: u64| match (bytes > 0, waiting) {
            (true, _) => Slot::Sending,
            (false, true) => Slot::Busy,
            (false, false) => Slot::Idle,
        };
        let first = self.open_bytes;
        self.push(first, kind(first));
        for _ in 1..ended.min(self.window + 1) {
            self.push(0, kind(0));
        }
        self.open_bytes = 0;
        let next = start + Duration(slot.as_nanos() * ended as u64);
        self.slot_start = Some(next);
        self.slot_end = next + slot;
    }

    /// `bytes` left the queue at `now`; `backlog` bytes remain (waiting and in service).
    pub fn on_dequeue(&mut self, now: Time, bytes: Bytes, backlog: Bytes) {
        self.advance(now);
        self.open_bytes += bytes.0;
        self.backlog = backlog;
    }

    /// The queue's length changed at `now` without a dequeue (an arrival, a drop).
    pub fn on_backlog(&mut self, now: Time, backlog: Bytes) {
        self.advance(now);
        self.backlog = backlog;
    }

    /// The tx-rate estimate at `now`: bits dequeued in the window over its non-idle time (the
    /// last such estimate over an all-idle window), at least the floor.
    pub fn tx_rate(&mut self, now: Time) -> Bitrate {
        self.advance(now);
        self.refresh();
        self.rate
    }

    /// The average dequeue interval at `now` (the last one over an all-idle window; zero before
    /// anything was sent).
    pub fn tx_interval(&mut self, now: Time) -> Duration {
        self.advance(now);
        self.refresh();
        self.last_interval
    }

    /// The delay of a packet arriving at `now` behind `ahead` bytes, while the head-of-line
    /// packet has waited `head_wait` at the head. Remembers `ahead` for the next prediction's
    /// "is the queue shrinking?" test.
    #[inline]
    pub fn predict(&mut self, now: Time, ahead: Bytes, head_wait: Duration) -> Prediction {
        let p = self.peek(now, ahead, head_wait);
        self.last_ahead = ahead;
        p
    }

    /// As [`FortuneTeller::predict`], without remembering anything (a prediction made only to be
    /// logged, which the artifact does not make).
    /// (Inlined into Zhuge's per-packet hook, which calls it for every packet.)
    #[inline]
    pub fn peek(&mut self, now: Time, ahead: Bytes, head_wait: Duration) -> Prediction {
        self.advance(now);
        self.peek_advanced(ahead, head_wait)
    }

    /// A packet arrives at `now` behind `ahead` bytes while the head-of-line packet has waited
    /// `head_wait`, and the queue then holds `backlog` bytes (waiting and in service): what
    /// `on_backlog(now, <the queue before>)`, then [`FortuneTeller::predict`] (`remember`) or
    /// [`FortuneTeller::peek`], then `on_backlog(now, backlog)` do, in one (the queue before
    /// is not needed: nothing reads it before the second report replaces it).
    #[inline]
    pub fn on_arrival(
        &mut self,
        now: Time,
        ahead: Bytes,
        head_wait: Duration,
        backlog: Bytes,
        remember: bool,
    ) -> Prediction {
        // (Slots are closed with the backlog as it was before the arrival, as the first report
        // would; the calls after it, at the same instant, close none.)
        self.advance(now);
        let p = self.peek_advanced(ahead, head_wait);
        if remember {
            self.last_ahead = ahead;
        }
        self.backlog = backlog;
        p
    }

    /// [`FortuneTeller::peek`] once the slots are closed up to its instant.
    #[inline(always)]
    fn peek_advanced(&mut self, ahead: Bytes, head_wait: Duration) -> Prediction {
        // `tx_rate` and `tx_interval` at once (this runs per packet).
        self.refresh();
        let rate = self.rate;
        let tx = self.last_interval;
        let drain = |bytes: u64| rate.transmit_time(Bytes(bytes)).unwrap_or(Duration::ZERO);
        let q_long = match self.cfg.burst_rule {
            BurstRule::JoinAggregate { .. } => {
                let fits = ahead <= self.aggregate_bytes;
                let shrinking = ahead < self.last_ahead;
                if fits && !shrinking {
                    Duration::ZERO
                } else {
                    drain(ahead.0)
                }
            }
            BurstRule::MaxBurst { max_burst } => drain(ahead.0.saturating_sub(max_burst.0)),
            BurstRule::None => drain(ahead.0),
        };
        let q_short = if self.cfg.head_of_line { head_wait } else { Duration::ZERO };
        let (q_long, q_short, tx) = if self.cfg.whole_ms {
            let ms = |d: Duration| Duration::from_millis(d.as_nanos() / 1_000_000);
            (ms(q_long), ms(q_short), ms(tx))
        } else {
            (q_long, q_short, tx)
        };
        Prediction { total: q_long + q_short + tx, q_long, q_short, tx, rate }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::ZERO + Duration::from_millis(x)
    }

    fn exact() -> FortuneTellerConfig {
        FortuneTellerConfig { burst_rule: BurstRule::None, whole_ms: false, ..FortuneTellerConfig::default() }
    }

    /// Feeds `pattern` (bytes dequeued per 1 ms slot, `None` = queue empty in that slot) for
    /// `ms_total` milliseconds, with `backlog` bytes waiting whenever the queue is not empty.
    fn feed(ft: &mut FortuneTeller, pattern: &[Option<u64>], ms_total: u64, backlog: u64) -> Time {
        for t in 0..ms_total {
            let now = ms(t) + Duration::from_micros(500);
            match pattern[(t as usize) % pattern.len()] {
                Some(0) => ft.on_backlog(now, Bytes(backlog)),
                Some(b) => ft.on_dequeue(now, Bytes(b), Bytes(backlog)),
                None => ft.on_backlog(now, Bytes(0)),
            }
        }
        ms(ms_total)
    }

    #[test]
    fn constant_rate_predicts_queue_over_rate() {
        let mut ft = FortuneTeller::new(exact());
        // 10 Mbit/s: 1250 B per ms, 50 kB always waiting.
        let now = feed(&mut ft, &[Some(1250)], 400, 50_000);
        let p = ft.predict(now, Bytes(50_000), Duration::ZERO);
        assert_eq!(p.rate, Bitrate::mbps(10));
        assert_eq!(p.tx, Duration::from_millis(1));
        assert_eq!(p.q_long, Duration::from_millis(40));
        assert_eq!(p.total, Duration::from_millis(41));
    }

    #[test]
    fn idle_slots_are_left_out_of_the_rate() {
        let mut ft = FortuneTeller::new(exact());
        // 10 ms at 10 Mbit/s, then 10 ms with an empty queue: still 10 Mbit/s, not 5.
        let mut pattern = vec![Some(1250); 10];
        pattern.extend([None; 10]);
        let now = feed(&mut ft, &pattern, 400, 20_000);
        let p = ft.predict(now, Bytes(12_500), Duration::ZERO);
        assert_eq!(p.rate, Bitrate::mbps(10));
        assert_eq!(p.q_long, Duration::from_millis(10));
        assert_eq!(p.tx, Duration::from_millis(1));
    }

    #[test]
    fn busy_slots_lengthen_the_dequeue_interval() {
        let mut ft = FortuneTeller::new(exact());
        // Per 4 ms: the channel is unavailable for 2 (packets wait, nothing leaves), then 2 ms
        // deliver 2500 B each: 10 Mbit/s over the non-idle time, a dequeue every 2 ms.
        let now = feed(&mut ft, &[Some(0), Some(0), Some(2500), Some(2500)], 400, 30_000);
        let p = ft.predict(now, Bytes(0), Duration::ZERO);
        assert_eq!(p.rate, Bitrate::mbps(10));
        assert_eq!(p.tx, Duration::from_millis(2));
        // All busy: the whole window.
        let mut ft = FortuneTeller::new(exact());
        let now = feed(&mut ft, &[Some(0)], 400, 30_000);
        assert_eq!(ft.tx_interval(now), Duration::from_millis(200));
        assert_eq!(ft.tx_rate(now), Bitrate::kbps(512), "nothing dequeued: the floor");
    }

    #[test]
    fn head_of_line_wait_counts_only_in_wifi_mode() {
        for (hol, expect) in [(true, 7), (false, 0)] {
            let mut ft = FortuneTeller::new(FortuneTellerConfig { head_of_line: hol, ..exact() });
            let now = feed(&mut ft, &[Some(1250)], 400, 10_000);
            let p = ft.predict(now, Bytes(12_500), Duration::from_millis(7));
            assert_eq!(p.q_short, Duration::from_millis(expect));
            assert_eq!(p.total, Duration::from_millis(10 + 1 + expect));
        }
    }

    #[test]
    fn burst_rules() {
        // The code's rule: 5 kB ahead fits in 5 ms at 10 Mbit/s (6250 B) with a steady queue.
        let mut ft = FortuneTeller::new(FortuneTellerConfig::default());
        let now = feed(&mut ft, &[Some(1250)], 400, 5_000);
        assert_eq!(ft.predict(now, Bytes(5_000), Duration::ZERO).q_long, Duration::ZERO);
        assert_eq!(ft.predict(now, Bytes(12_500), Duration::ZERO).q_long, Duration::from_millis(10));
        // ... but not when the queue is shorter than at the previous prediction.
        assert_eq!(ft.predict(now, Bytes(4_000), Duration::ZERO).q_long, Duration::from_millis(3));
        assert_eq!(ft.predict(now, Bytes(4_500), Duration::ZERO).q_long, Duration::ZERO);
        // Whole milliseconds (the artifact's arithmetic) or to the nanosecond.
        let mut ft =
            FortuneTeller::new(FortuneTellerConfig { whole_ms: false, ..FortuneTellerConfig::default() });
        let now = feed(&mut ft, &[Some(1250)], 400, 5_000);
        assert_eq!(ft.predict(now, Bytes(12_500), Duration::ZERO).q_long, Duration::from_millis(10));
        assert_eq!(ft.predict(now, Bytes(4_000), Duration::ZERO).q_long, Duration::from_micros(3200));
        // The talk's rule: minus one burst.
        let cfg = FortuneTellerConfig {
            burst_rule: BurstRule::MaxBurst { max_burst: Bytes(2_500) },
            ..FortuneTellerConfig::default()
        };
        let mut ft = FortuneTeller::new(cfg);
        let now = feed(&mut ft, &[Some(1250)], 400, 5_000);
        assert_eq!(ft.predict(now, Bytes(12_500), Duration::ZERO).q_long, Duration::from_millis(8));
    }

    #[test]
    fn the_rate_and_interval_are_those_of_the_latest_window_with_a_non_idle_slot() {
        // Random runs of sending, busy and idle slots (long idle runs included), read at random
        // instants, against the formulas applied to the window after every slot (the artifact's
        // per-millisecond update), which the teller works out only when read.
        let cfg = FortuneTellerConfig { frame_interval: Duration::from_millis(4), ..exact() };
        let w = cfg.window_slots();
        let mut ft = FortuneTeller::new(cfg);
        let mut next = lowlat_core::rng::below(1, "teller-test");
        let mut pattern: Vec<Option<u64>> = Vec::new();
        let (mut reads, mut idle_reads) = (0, 0);
        while pattern.len() < 3_000 {
            let (slot, run) = match next(3) {
                0 => (Some(1 + next(5_000)), 1 + next(3)),
                1 => (Some(0), 1 + next(3)),
                _ => (None, 1 + next(2 * w as u64)),
            };
            for _ in 0..run {
                let t = pattern.len() as u64;
                let now = ms(t) + Duration::from_micros(500);
                match slot {
                    Some(0) => ft.on_backlog(now, Bytes(3_000)),
                    Some(b) => ft.on_dequeue(now, Bytes(b), Bytes(3_000)),
                    None => ft.on_backlog(now, Bytes(0)),
                }
                pattern.push(slot);
                if next(4) != 0 {
                    continue;
                }
                // Closed by t + 0.7 ms: the slots of the events before this one.
                let closed = &pattern[..t as usize];
                let latest = (1..=closed.len()).rev().find_map(|m| {
                    let win = &closed[m.saturating_sub(w)..m];
                    let non_idle = win.iter().filter(|s| s.is_some()).count() as u64;
                    (non_idle > 0).then_some((win, non_idle))
                });
                let (rate, interval) = match latest {
                    None => (Bitrate::ZERO, Duration::ZERO),
                    Some((win, non_idle)) => {
                        let bytes: u64 = win.iter().flatten().sum();
                        let sending = win.iter().filter(|s| s.is_some_and(|b| b > 0)).count() as u64;
                        let rate = Bitrate::from_bytes_per(Bytes(bytes), Duration::from_millis(non_idle));
                        let interval = match (1_000_000 * non_idle).checked_div(sending) {
                            Some(ns) => Duration(ns),
                            None => Duration::from_millis(w as u64),
                        };
                        (rate, interval)
                    }
                };
                let at = ms(t) + Duration::from_micros(700);
                assert_eq!(ft.tx_rate(at), rate.max(Bitrate::kbps(512)), "slot {t}");
                assert_eq!(ft.tx_interval(at), interval, "slot {t}");
                reads += 1;
                idle_reads += usize::from(closed.iter().rev().take(w).all(Option::is_none));
            }
        }
        assert!(reads > 500 && idle_reads > 50, "{reads} reads, {idle_reads} over all-idle windows");
    }

    #[test]
    fn an_all_idle_window_keeps_the_last_rate_and_interval() {
        let mut ft = FortuneTeller::new(exact());
        assert_eq!(ft.tx_rate(ms(0)), Bitrate::kbps(512), "nothing seen: the floor");
        assert_eq!(ft.tx_interval(ms(0)), Duration::ZERO);
        // 2500 B every other ms while packets wait: 10 Mbit/s, a dequeue every 2 ms.
        let now = feed(&mut ft, &[Some(2500), Some(0)], 401, 3_000);
        // 10 s later with the queue empty all along: every slot idle; the artifact keeps the
        // values of the last window that had a non-idle slot: its oldest, the last sending one
        // (2500 B in 1 ms).
        ft.on_backlog(now, Bytes(0));
        let later = now + Duration::from_secs(10);
        assert_eq!(ft.tx_rate(later), Bitrate::mbps(20));
        assert_eq!(ft.tx_interval(later), Duration::from_millis(1));
    }
}
