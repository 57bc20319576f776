//! How fast a link serves bytes over time.
//!
//! [`Capacity`] is the description (data); [`Server`] is the stateful part a link uses to find when
//! a packet that starts service at some instant has been fully transmitted. Time only moves forward
//! for a server, so it keeps a cursor and each query is amortised O(1).

pub use crate::schedule::RateSchedule;
use crate::schedule::BIT_NS_PER_BYTE;
use crate::wifi::{WifiChannel, WifiConfig};
use lowlat_core::rng::Rng;
use lowlat_core::{Bitrate, Bytes, Duration, Time};

/// Mahimahi-style delivery opportunities: at each instant, up to `bytes_per_opportunity` bytes may
/// leave. The opportunity list repeats with period `period` (mahimahi loops its traces).
#[derive(Clone, Debug, PartialEq)]
pub struct DeliveryTrace {
    /// Opportunity instants within one period, sorted, each in `(0, period]`.
    opportunities: Vec<Duration>,
    period: Duration,
    bytes_per_opportunity: u32,
}

/// A link's service capacity.
#[derive(Clone, Debug, PartialEq)]
pub enum Capacity {
    /// The same rate for the whole run.
    Constant(Bitrate),
    /// A piecewise-constant rate (RMCAT schedules, two-column traces).
    Schedule(RateSchedule),
    /// Discrete delivery opportunities (mahimahi traces).
    Opportunities(DeliveryTrace),
    /// A Wi-Fi downlink: the schedule's mean rate, served in aggregates at random transmit
    /// opportunities (see [`crate::wifi`]).
    Wifi {
        /// The mean rate over time.
        rate: RateSchedule,
        /// The channel's access pattern.
        channel: WifiConfig,
    },
}

/// The serving state of one link: when does a packet that starts at `start` finish?
#[derive(Clone, Debug)]
pub struct Server {
    capacity: Capacity,
    /// Delivery traces: the last opportunity used (global index) and the bytes it has left.
    last_opportunity: Option<(u64, u64)>,
    /// Wi-Fi: the channel's transmit opportunities.
    wifi: Option<WifiChannel>,
    /// Schedules: the step of the last query (see [`RateSchedule::step_from`]), so the mostly
    /// forward-moving queries of a link find their step without a search.
    cursor: usize,
    /// Schedules: the step last found, `[start, end)` in ns with its rate (empty at first; for
    /// a constant rate, all time; never set for other capacities). A
    /// link asks several times per packet (its rate for the queue limit and for a middlebox,
    /// each packet's finish) and nearly always within one step: a comparison then answers.
    step: (u64, u64, Bitrate),
    /// Capacities that vary: the latest instant an answer depended on (the latest finish
    /// worked out, or `Time::MAX` once one never finishes), which bounds where the capacity may
    /// still change ([`Server::reschedule`]).
    read_until: Time,
}

/// When a packet of `bytes` starting at `start` ends, if it starts and ends within `step`
/// (`[start, end)` in ns, with its rate) at a positive rate: a schedule's server's answer for
/// nearly every packet (`None`: the walk over the steps answers). A packet below 2 GB has its
/// bit-nanoseconds in 64 bits, so one 64-bit division gives the quotient; a larger one takes the
/// walk, whose first step gives the same.
#[inline(always)]
fn finish_within_step(step: (u64, u64, Bitrate), start: Time, bytes: Bytes) -> Option<Time> {
    let (x, (lo, hi, rate)) = (start.as_nanos(), step);
    let r = rate.as_bps();
    if lo <= x && x < hi && r > 0 && bytes.0 < (1 << 31) {
        let need = bytes.0 * BIT_NS_PER_BYTE as u64;
        if u128::from(need) <= u128::from(r) * u128::from(hi - x) {
            return Some(start + Duration(need.div_ceil(r)));
        }
    }
    None
}

/// The rate of schedule `s` at `t` and when its step ends, from the `step` a [`Server`]
/// remembers if `t` falls in it, else found from `cursor` and remembered.
#[inline]
fn step_of(s: &RateSchedule, step: &mut (u64, u64, Bitrate), cursor: &mut usize, t: Time) -> (Bitrate, Time) {
    let x = t.as_nanos();
    if step.0 <= x && x < step.1 {
        return (step.2, Time(step.1));
    }
    let (rate, start, end) = s.span_from(t, cursor);
    *step = (start.as_nanos(), end.as_nanos(), rate);
    (rate, end)
}

impl DeliveryTrace {
    /// Opportunities at the given instants of each `period` (sorted, each in (0, period]), each
    /// carrying up to `bytes_per_opportunity` bytes.
    pub fn new(
        opportunities: Vec<Duration>,
        period: Duration,
        bytes_per_opportunity: u32,
    ) -> Result<DeliveryTrace, String> {
        if opportunities.is_empty() {
            return Err("a delivery trace needs at least one opportunity".into());
        }
        if period == Duration::ZERO {
            return Err("the period of a delivery trace must be positive".into());
        }
        if bytes_per_opportunity == 0 {
            return Err("an opportunity must carry at least one byte".into());
        }
        if opportunities.windows(2).any(|w| w[1] < w[0]) {
            return Err("opportunity instants must not decrease".into());
        }
        if opportunities.iter().any(|&o| o == Duration::ZERO || o > period) {
            return Err(format!("opportunity instants must lie in (0, {period}]"));
        }
        Ok(DeliveryTrace { opportunities, period, bytes_per_opportunity })
    }

    /// How long one repetition lasts.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Opportunities per period.
    pub fn len(&self) -> usize {
        self.opportunities.len()
    }

    /// Whether it has no opportunity (never true for a constructed trace).
    pub fn is_empty(&self) -> bool {
        self.opportunities.is_empty()
    }

    /// Bytes one opportunity carries.
    pub fn bytes_per_opportunity(&self) -> u32 {
        self.bytes_per_opportunity
    }

    /// The same capacity as a looping rate schedule in 1 ms steps (mahimahi's resolution): each
    /// millisecond carries the bytes of the opportunities that end it. This is how a mahimahi trace
    /// becomes the mean rate of a Wi-Fi channel, which then serves it in its own aggregates.
    pub fn to_rate_schedule(&self) -> RateSchedule {
        const MS: u64 = 1_000_000;
        let bins = self.period.as_nanos().div_ceil(MS) as usize;
        let mut counts = vec![0u64; bins];
        for o in &self.opportunities {
            // Invariant: instants lie in (0, period], so the bin is below `bins`.
            counts[((o.as_nanos() - 1) / MS) as usize] += 1;
        }
        let mut points: Vec<(Time, Bitrate)> = Vec::new();
        for (k, c) in counts.iter().enumerate() {
            let rate = Bitrate::from_bytes_per(Bytes(c * self.bytes_per_opportunity as u64), Duration(MS));
            if points.last().is_none_or(|p| p.1 != rate) {
                points.push((Time(k as u64 * MS), rate));
            }
        }
        // Invariant: steps start at 0, increase, and the last starts before the period ends.
        RateSchedule::looping(points, Duration(bins as u64 * MS)).expect("a well-formed trace")
    }

    /// Number of opportunity instants at or before `t`.
    fn count_until(&self, t: Time) -> u64 {
        let p = self.period.as_nanos();
        let (cycles, rest) = (t.as_nanos() / p, t.as_nanos() % p);
        let within = self.opportunities.partition_point(|o| o.as_nanos() <= rest) as u64;
        cycles * self.opportunities.len() as u64 + within
    }

    /// Number of opportunity instants in (from, to]: an opportunity serves the millisecond that
    /// ends at its instant, as mahimahi's do.
    fn count_in(&self, from: Time, to: Time) -> u64 {
        if to <= from {
            return 0;
        }
        self.count_until(to) - self.count_until(from)
    }

    /// The instant of opportunity number `g` (0-based over all repetitions).
    fn instant(&self, g: u64) -> Time {
        let n = self.opportunities.len() as u64;
        Time::ZERO + self.period * (g / n) + self.opportunities[(g % n) as usize]
    }
}

/// Window over which a trace's "current rate" is measured (for time-based queue limits).
const OPPORTUNITY_RATE_WINDOW: Duration = Duration::from_millis(100);

impl Capacity {
    /// The rate at `t`. For delivery opportunities: the mean over the trailing 100 ms
    /// ((t - 100 ms, t], or (0, 100 ms] early in the run).
    pub fn rate_at(&self, t: Time) -> Bitrate {
        match self {
            Capacity::Constant(r) => *r,
            Capacity::Schedule(s) | Capacity::Wifi { rate: s, .. } => s.rate_at(t),
            Capacity::Opportunities(d) => {
                let w = OPPORTUNITY_RATE_WINDOW;
                let (from, to) = if t.since_start() < w { (Time::ZERO, Time::ZERO + w) } else { (t - w, t) };
                Bitrate::from_bytes_per(Bytes(d.count_in(from, to) * d.bytes_per_opportunity as u64), w)
            }
        }
    }

    /// Bytes the link could serve from `from` to `to` (an opportunity at instant T counts if
    /// from < T <= to).
    pub fn capacity_bytes(&self, from: Time, to: Time) -> f64 {
        if to <= from {
            return 0.0;
        }
        match self {
            Capacity::Constant(r) => {
                r.as_bps() as f64 * (to - from).as_nanos() as f64 / BIT_NS_PER_BYTE as f64
            }
            Capacity::Schedule(s) | Capacity::Wifi { rate: s, .. } => {
                s.bit_ns(from, to) as f64 / BIT_NS_PER_BYTE as f64
            }
            Capacity::Opportunities(d) => (d.count_in(from, to) * d.bytes_per_opportunity as u64) as f64,
        }
    }

    /// The first instant at which `self` and `other` serve at different rates (`None`: never;
    /// see [`RateSchedule::first_difference`]). Capacities of different kinds, and any but rate
    /// schedules, count as different from 0 on unless they are equal.
    pub fn first_difference(&self, other: &Capacity) -> Option<Time> {
        match (self, other) {
            (Capacity::Schedule(a), Capacity::Schedule(b)) => a.first_difference(b),
            _ => (self != other).then_some(Time::ZERO),
        }
    }

    /// Mean rate over [from, to).
    pub fn mean_rate(&self, from: Time, to: Time) -> Bitrate {
        let d = to - from;
        if d == Duration::ZERO {
            return self.rate_at(from);
        }
        Bitrate::from_bps_f64(self.capacity_bytes(from, to) * 8.0 / d.as_secs_f64())
    }
}

/// [`Bitrate::transmit_time`], its 64-bit way (every packet) inlined here: a call per packet
/// per hop otherwise, and marking that function inline changes what its other callers inline.
#[inline(always)]
fn transmit_time_inline(rate: Bitrate, bytes: Bytes) -> Option<Duration> {
    if rate.as_bps() != 0 && bytes.0 < (1 << 31) {
        return Some(Duration((bytes.0 * 8_000_000_000).div_ceil(rate.as_bps())));
    }
    rate.transmit_time(bytes)
}

impl Server {
    /// An idle server of `capacity`. A Wi-Fi channel draws its transmit opportunities from
    /// `rng` (the link's own stream); other capacities ignore it.
    pub fn new(capacity: Capacity, rng: Rng) -> Server {
        let wifi = match &capacity {
            Capacity::Wifi { rate, channel } => Some(WifiChannel::new(channel.clone(), rate, rng)),
            _ => None,
        };
        // A constant rate is one step for ever (`rate_at_mut` then answers from it alike).
        let step = match &capacity {
            Capacity::Constant(r) => (0, u64::MAX, *r),
            _ => (0, 0, Bitrate::ZERO),
        };
        Server { capacity, last_opportunity: None, wifi, cursor: 0, step, read_until: Time::ZERO }
    }

    /// The capacity it serves at.
    pub fn capacity(&self) -> &Capacity {
        &self.capacity
    }

    /// Serves `capacity` from now on, which must give the rates the server's own gives until
    /// `from`, the first instant they differ. Refused (with why) unless both are rate schedules
    /// that do not repeat and no answer so far depended on the rate at or after `from`: the
    /// server then answers as one built with `capacity` would have (what it remembers is a
    /// cache, found again). The caller makes sure no rate was asked for at or after `from`.
    pub fn reschedule(&mut self, capacity: Capacity, from: Time) -> Result<(), String> {
        match (&self.capacity, &capacity) {
            (Capacity::Schedule(a), Capacity::Schedule(b))
                if a.period().is_none() && b.period().is_none() => {}
            _ => return Err("only a rate schedule that does not repeat can change for another".into()),
        }
        if self.read_until > from {
            return Err(format!(
                "a transmission was worked out up to {} with the rate before the change at {from}",
                self.read_until
            ));
        }
        self.capacity = capacity;
        self.cursor = 0;
        self.step = (0, 0, Bitrate::ZERO);
        Ok(())
    }

    /// The rate at `t` (see [`Capacity::rate_at`]).
    pub fn rate_at(&self, t: Time) -> Bitrate {
        self.capacity.rate_at(t)
    }

    /// [`Server::rate_at`], remembering where in a schedule it looked (queries that move forward
    /// cost O(1)).
    #[inline(always)]
    pub fn rate_at_mut(&mut self, t: Time) -> Bitrate {
        // Within the step last found (a constant rate's only one): asked per packet and per
        // middlebox call, so answered inline.
        let x = t.as_nanos();
        if self.step.0 <= x && x < self.step.1 {
            return self.step.2;
        }
        self.rate_elsewhere(t)
    }

    /// [`Server::rate_at_mut`] outside the step it remembers.
    #[inline(never)]
    fn rate_elsewhere(&mut self, t: Time) -> Bitrate {
        match &self.capacity {
            Capacity::Constant(r) => *r,
            Capacity::Schedule(s) => step_of(s, &mut self.step, &mut self.cursor, t).0,
            Capacity::Wifi { rate: s, .. } => s.step_from(t, &mut self.cursor).0,
            c @ Capacity::Opportunities(_) => c.rate_at(t),
        }
    }

    /// When a packet of `bytes` that starts service at `start` has its last bit out; `None` if
    /// the capacity never allows it (rate 0 for ever). Calls come with non-decreasing `start`.
    #[inline]
    pub fn finish_time(&mut self, start: Time, bytes: Bytes) -> Option<Time> {
        // A constant rate (most links) answered inline: this runs per packet per hop.
        if let Capacity::Constant(r) = &self.capacity {
            return Some(start + transmit_time_inline(*r, bytes)?);
        }
        // So is a schedule's packet that starts and ends within the step last found (nearly
        // every packet of a trace): what `finish_time_varying` finds first, without its call.
        if let Capacity::Schedule(_) = &self.capacity {
            if let Some(finish) = finish_within_step(self.step, start, bytes) {
                self.read_until = self.read_until.max(finish);
                return Some(finish);
            }
        }
        let finish = self.finish_time_varying(start, bytes);
        self.read_until = self.read_until.max(finish.unwrap_or(Time::MAX));
        finish
    }

    /// [`Server::finish_time`] of a capacity that varies.
    #[inline(never)]
    fn finish_time_varying(&mut self, start: Time, bytes: Bytes) -> Option<Time> {
        match &self.capacity {
            Capacity::Constant(r) => Some(start + r.transmit_time(bytes)?),
            Capacity::Wifi { rate, .. } => {
                self.wifi.as_mut().expect("built with the capacity").finish_time(rate, start, bytes)
            }
            Capacity::Schedule(s) => {
                // Most packets start at a positive rate and end within the step they start in:
                // what the walk below finds in its first step (and a positive rate now means it
                // is not zero for ever).
                step_of(s, &mut self.step, &mut self.cursor, start);
                if let Some(finish) = finish_within_step(self.step, start, bytes) {
                    return Some(finish);
                }
                if s.is_zero_from_cursor(start, &mut self.cursor) {
                    return None;
                }
                let mut need = bytes.0 as u128 * BIT_NS_PER_BYTE;
                let mut t = start;
                if let Some(p) = s.period() {
                    // Skip the whole repetitions the packet needs, leaving at least one to walk:
                    // the same answer as walking them (the walk cannot end inside them).
                    let per = s.period_bit_ns;
                    if per > 0 && need > 2 * per {
                        let k = need / per - 1;
                        need -= k * per;
                        t = Time(t.as_nanos().saturating_add(
                            u64::try_from(k).unwrap_or(u64::MAX).saturating_mul(p.as_nanos()),
                        ));
                    }
                }
                loop {
                    let (rate, end) = s.step_from(t, &mut self.cursor);
                    let rate = rate.as_bps() as u128;
                    if end == Time::MAX {
                        if rate == 0 {
                            return None;
                        }
                        return Some(t + Duration(need.div_ceil(rate).min(u64::MAX as u128) as u64));
                    }
                    let avail = rate * (end - t).as_nanos() as u128;
                    if need <= avail && rate > 0 {
                        return Some(t + Duration(need.div_ceil(rate) as u64));
                    }
                    need -= avail;
                    t = end;
                }
            }
            Capacity::Opportunities(d) => {
                let bpo = d.bytes_per_opportunity as u64;
                // The first opportunity at or after `start`.
                let mut g = if start == Time::ZERO { 0 } else { d.count_until(Time(start.as_nanos() - 1)) };
                let mut credit = match self.last_opportunity {
                    // Back to back: the rest of the opportunity that finished the previous packet.
                    Some((last, left)) if last == g => left,
                    _ => bpo,
                };
                let mut need = bytes.0;
                while need > credit {
                    need -= credit;
                    g += 1;
                    credit = bpo;
                }
                self.last_opportunity = Some((g, credit - need));
                Some(d.instant(g))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    fn rng() -> Rng {
        lowlat_core::rng::stream(1, "test")
    }

    /// Bit-nanoseconds walked step by step, as before whole repetitions were skipped.
    fn walked(s: &RateSchedule, from: Time, to: Time) -> u128 {
        let (mut t, mut total) = (from, 0u128);
        while t < to {
            let (rate, end) = s.step_at(t);
            let end = end.min(to);
            total += rate.as_bps() as u128 * (end - t).as_nanos() as u128;
            t = end;
        }
        total
    }

    #[test]
    fn skipping_whole_repetitions_gives_what_walking_gives() {
        // Steps of 1 ns (a trace replayed at `trace_step = "1 ns"`) and of uneven lengths.
        let fine = RateSchedule::looping(
            vec![(Time(0), Bitrate::mbps(2)), (Time(1), Bitrate::mbps(3)), (Time(2), Bitrate::ZERO)],
            Duration(4),
        )
        .unwrap();
        let uneven = RateSchedule::looping(
            vec![(ms(0), Bitrate::kbps(700)), (ms(13), Bitrate::mbps(9)), (ms(40), Bitrate::bps(1))],
            Duration::from_millis(57),
        )
        .unwrap();
        for (s, longest) in [(&fine, 1_000_003), (&uneven, 987_654_321)] {
            for (from, len) in [(0u64, 3u64), (1, 9), (5, 1_000_003), (123_456_789, longest)] {
                let (a, b) = (Time(from), Time(from + len));
                assert_eq!(s.bit_ns(a, b), walked(s, a, b), "{from} + {len}");
            }
        }
        // A packet needing millions of repetitions finishes where walking would have found it.
        let mut server = Server::new(Capacity::Schedule(fine.clone()), rng());
        let start = Time(7);
        let end = server.finish_time(start, Bytes(1200)).unwrap();
        let need = 1200u128 * BIT_NS_PER_BYTE;
        assert!(walked(&fine, start, end) >= need && walked(&fine, start, Time(end.0 - 1)) < need);
    }

    impl Server {
        fn new_test(c: Capacity) -> Server {
            Server::new(c, rng())
        }
    }

    /// The remembered step answers what reading the schedule answers: each finish is the first
    /// instant by which the capacity from the start carries the packet, over random schedules
    /// (some zero and tiny rates, looping or not) and mostly forward starts.
    #[test]
    fn the_remembered_step_gives_what_walking_the_schedule_gives() {
        use rand::Rng as _;
        let mut rng = lowlat_core::rng::stream(3, "capacity-test");
        for case in 0..300 {
            let looping = case % 2 == 1;
            let mut t = if looping { 0 } else { rng.random_range(0..50_000) };
            let mut points = Vec::new();
            for _ in 0..rng.random_range(1..12) {
                let rate = match rng.random_range(0..4) {
                    0 => Bitrate::ZERO,
                    1 => Bitrate::bps(rng.random_range(1..2_000_000)),
                    _ => Bitrate::bps(rng.random_range(1..200_000_000)),
                };
                points.push((Time(t), rate));
                t += rng.random_range(1..3_000_000);
            }
            let s = if looping {
                RateSchedule::looping(points, Duration(t + rng.random_range(0..5))).unwrap()
            } else {
                RateSchedule::new(points).unwrap()
            };
            let mut server = Server::new_test(Capacity::Schedule(s.clone()));
            let mut start = 0u64;
            for _ in 0..100 {
                start = if rng.random_bool(0.9) {
                    start + rng.random_range(0..2_000_000)
                } else {
                    rng.random_range(0..start + 1)
                };
                let at = Time(start);
                assert_eq!(server.rate_at_mut(at), s.rate_at(at), "case {case} at {start}");
                let bytes = rng.random_range(1..1600u64);
                let need = bytes as u128 * BIT_NS_PER_BYTE;
                match server.finish_time(at, Bytes(bytes)) {
                    Some(end) => {
                        assert!(walked(&s, at, end) >= need, "case {case} at {start}");
                        assert!(walked(&s, at, Time(end.0 - 1)) < need, "case {case} at {start}");
                    }
                    // Never: all the capacity from the start carries less.
                    None => assert!(s.bit_ns(at, Time(u64::MAX / 2)) < need, "case {case} at {start}"),
                }
            }
        }
    }

    #[test]
    fn constant_rate_is_exact() {
        let mut s = Server::new_test(Capacity::Constant(Bitrate::mbps(100)));
        assert_eq!(s.finish_time(ms(1), Bytes(1500)), Some(ms(1) + Duration::from_micros(120)));
    }

    #[test]
    fn schedule_integrates_across_a_rate_change() {
        let sched = RateSchedule::new(vec![(ms(0), Bitrate::mbps(1)), (ms(1), Bitrate::mbps(2))]).unwrap();
        let mut s = Server::new_test(Capacity::Schedule(sched));
        // 250 B = 2000 bits: 500 bits by 1 ms at 1 Mbit/s, 1500 more at 2 Mbit/s = 0.75 ms.
        assert_eq!(s.finish_time(Time(500_000), Bytes(250)), Some(Time(1_750_000)));
    }

    #[test]
    fn a_zero_rate_gap_holds_the_packet_and_zero_for_ever_never_finishes() {
        let sched = RateSchedule::new(vec![(ms(0), Bitrate::ZERO), (ms(10), Bitrate::mbps(8))]).unwrap();
        let mut s = Server::new_test(Capacity::Schedule(sched));
        assert_eq!(s.finish_time(ms(2), Bytes(1000)), Some(ms(11)));
        let dead = RateSchedule::new(vec![(ms(0), Bitrate::mbps(8)), (ms(10), Bitrate::ZERO)]).unwrap();
        let mut s = Server::new_test(Capacity::Schedule(dead));
        assert_eq!(s.finish_time(ms(9), Bytes(2000)), None);
        assert!(RateSchedule::new(vec![(ms(5), Bitrate::ZERO), (ms(5), Bitrate::ZERO)]).is_err());
    }

    #[test]
    fn one_opportunity_per_ms_is_12_mbps() {
        let trace =
            DeliveryTrace::new(vec![Duration::from_millis(1)], Duration::from_millis(1), 1500).unwrap();
        let cap = Capacity::Opportunities(trace);
        assert_eq!(cap.mean_rate(ms(0), ms(1000)), Bitrate::mbps(12));
        assert_eq!(cap.rate_at(ms(500)), Bitrate::mbps(12));
        let mut s = Server::new(cap, rng());
        let mut t = Time::ZERO;
        for i in 1..=1000 {
            t = s.finish_time(t, Bytes(1500)).unwrap();
            assert_eq!(t, ms(i));
        }
    }

    #[test]
    fn small_packets_share_an_opportunity_and_big_ones_span_several() {
        let trace =
            DeliveryTrace::new(vec![Duration::from_millis(1)], Duration::from_millis(1), 1500).unwrap();
        let mut s = Server::new_test(Capacity::Opportunities(trace));
        let a = s.finish_time(Time(300_000), Bytes(750)).unwrap();
        let b = s.finish_time(a, Bytes(750)).unwrap();
        assert_eq!((a, b), (ms(1), ms(1)));
        // The opportunity is used up: the next 750 bytes leave at the next one.
        assert_eq!(s.finish_time(b, Bytes(750)), Some(ms(2)));
        // 4000 bytes started later need three fresh opportunities.
        assert_eq!(s.finish_time(ms(10), Bytes(4000)), Some(ms(12)));
        // A packet starting after an unused instant does not get its credit.
        assert_eq!(s.finish_time(Time(12_500_000), Bytes(100)), Some(ms(13)));
    }

    #[test]
    fn traces_repeat_and_far_jumps_work() {
        // Two opportunities at 2 and 3 ms of a 5 ms period.
        let trace = DeliveryTrace::new(
            vec![Duration::from_millis(2), Duration::from_millis(3)],
            Duration::from_millis(5),
            1500,
        )
        .unwrap();
        let cap = Capacity::Opportunities(trace);
        assert_eq!(cap.capacity_bytes(ms(0), ms(10)), 4.0 * 1500.0);
        assert_eq!(cap.capacity_bytes(ms(2), ms(3)), 1500.0);
        let mut s = Server::new(cap, rng());
        assert_eq!(s.finish_time(ms(1_000_000_004), Bytes(1500)), Some(ms(1_000_000_007)));
        assert_eq!(s.finish_time(ms(1_000_000_007), Bytes(1500)), Some(ms(1_000_000_008)));
    }
}
