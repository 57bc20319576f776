//! A piecewise-constant rate over time, possibly repeating: the capacity of a link that follows
//! a schedule or a measured trace, and the mean rate of a Wi-Fi channel. Its own module (out of
//! `capacity`) so that `wifi`, which serves a schedule in TXOPs, and `capacity`, which holds a
//! Wi-Fi channel, both depend on it rather than on each other.

use lowlat_core::{Bitrate, Duration, Time};

/// Piecewise-constant rate: `points[i].1` holds from `points[i].0` until the next point. Without
/// a period the last rate holds forever (and before the first point, the first rate holds); with
/// one, the steps repeat every period (a measured trace looped, as mahimahi loops its traces).
#[derive(Clone, Debug, PartialEq)]
pub struct RateSchedule {
    points: Vec<(Time, Bitrate)>,
    /// `Some(p)`: the steps (all in `[0, p)`, the first at 0) repeat every `p`.
    period: Option<Duration>,
    /// With a period: bit-nanoseconds one repetition carries, so a long span (a Wi-Fi gap of
    /// hours, a packet over a trace replayed at 1 ns per line) skips whole repetitions at once
    /// instead of walking every step.
    pub(crate) period_bit_ns: u128,
    /// `suffix_max[i]`: the highest rate of the steps from `i` on, so "the highest rate from `t`"
    /// (asked per Wi-Fi TXOP and per packet) costs a look-up instead of a walk to the end.
    suffix_max: Vec<Bitrate>,
}

/// Bits x nanoseconds in one byte-second: bytes x 8 x 1e9.
pub(crate) const BIT_NS_PER_BYTE: u128 = 8_000_000_000;

impl RateSchedule {
    /// A schedule from `(from, rate)` steps: non-empty, strictly increasing times.
    pub fn new(points: Vec<(Time, Bitrate)>) -> Result<RateSchedule, String> {
        if points.is_empty() {
            return Err("a rate schedule needs at least one step".into());
        }
        if let Some(w) = points.windows(2).find(|w| w[1].0 <= w[0].0) {
            return Err(format!("step times must increase: {} is not after {}", w[1].0, w[0].0));
        }
        let mut suffix_max = vec![Bitrate::ZERO; points.len()];
        let mut max = Bitrate::ZERO;
        for (i, p) in points.iter().enumerate().rev() {
            max = max.max(p.1);
            suffix_max[i] = max;
        }
        Ok(RateSchedule { points, period: None, period_bit_ns: 0, suffix_max })
    }

    /// A schedule whose steps repeat every `period`: the first step at 0, the last before `period`.
    pub fn looping(points: Vec<(Time, Bitrate)>, period: Duration) -> Result<RateSchedule, String> {
        let mut s = RateSchedule::new(points)?;
        if s.points[0].0 != Time::ZERO {
            return Err("a looping schedule must start at 0".into());
        }
        let last = s.points[s.points.len() - 1].0;
        if period == Duration::ZERO || last.as_nanos() >= period.as_nanos() {
            return Err(format!("the period ({period}) must end after the last step ({last})"));
        }
        s.period_bit_ns = s
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let end = s.points.get(i + 1).map_or(period.as_nanos(), |n| n.0.as_nanos());
                p.1.as_bps() as u128 * u128::from(end - p.0.as_nanos())
            })
            .sum();
        s.period = Some(period);
        Ok(s)
    }

    /// The steps.
    pub fn points(&self) -> &[(Time, Bitrate)] {
        &self.points
    }

    /// How long one repetition lasts (`None`: the schedule does not repeat).
    pub fn period(&self) -> Option<Duration> {
        self.period
    }

    /// The rate in force at `t` and when that step ends (`Time::MAX` for the last step of a
    /// schedule that does not repeat). O(log steps).
    pub(crate) fn step_at(&self, t: Time) -> (Bitrate, Time) {
        let mut from = 0;
        self.step_from(t, &mut from)
    }

    /// [`RateSchedule::step_at`], searching from the step `cursor` names and leaving it on the
    /// step found: a caller whose instants mostly move forward (a link's server) finds the step
    /// in O(1) instead of searching the whole schedule each time. Any cursor gives the same
    /// answer; a stale one only costs a search.
    #[inline]
    pub(crate) fn step_from(&self, t: Time, cursor: &mut usize) -> (Bitrate, Time) {
        match self.period {
            None => {
                let i = self.index_from(t.as_nanos(), *cursor);
                *cursor = i;
                (self.points[i].1, self.points.get(i + 1).map_or(Time::MAX, |p| p.0))
            }
            Some(p) => {
                let (cycle, rest) = (t.as_nanos() / p.as_nanos(), t.as_nanos() % p.as_nanos());
                let i = self.index_from(rest, *cursor);
                *cursor = i;
                let end = self.points.get(i + 1).map_or(p.as_nanos(), |x| x.0.as_nanos());
                let start = cycle.saturating_mul(p.as_nanos());
                (self.points[i].1, Time(start.saturating_add(end)))
            }
        }
    }

    /// [`RateSchedule::step_from`], with the instant the step starts (`Time::ZERO` for the first
    /// step of a schedule that does not repeat, whose rate also holds before it): the whole span
    /// `[start, end)` over which the rate found holds.
    #[inline]
    pub(crate) fn span_from(&self, t: Time, cursor: &mut usize) -> (Bitrate, Time, Time) {
        let (rate, end) = self.step_from(t, cursor);
        let i = *cursor;
        let start = match self.period {
            None if i == 0 => 0,
            None => self.points[i].0.as_nanos(),
            Some(p) => (t.as_nanos() / p.as_nanos()) * p.as_nanos() + self.points[i].0.as_nanos(),
        };
        (rate, Time(start), end)
    }

    /// The index of the step in force at `x` ns (within a repetition for a looping schedule; the
    /// first step before it starts), looked for from step `hint`: forward a few steps one by one,
    /// else a binary search of the side that holds it.
    #[inline]
    fn index_from(&self, x: u64, hint: usize) -> usize {
        let pts = &self.points;
        let mut i = hint.min(pts.len() - 1);
        if pts[i].0.as_nanos() > x {
            return pts[..i].partition_point(|p| p.0.as_nanos() <= x).saturating_sub(1);
        }
        for _ in 0..4 {
            match pts.get(i + 1) {
                Some(n) if n.0.as_nanos() <= x => i += 1,
                _ => return i,
            }
        }
        i + pts[i + 1..].partition_point(|p| p.0.as_nanos() <= x)
    }

    /// The first instant at which `self` and `other` give different rates (`None`: they agree
    /// at every instant). Rates change only at steps, so the steps of both are the only
    /// candidates. Schedules that repeat are compared whole: `Some(Time::ZERO)` unless equal.
    pub fn first_difference(&self, other: &RateSchedule) -> Option<Time> {
        if self.period.is_some() || other.period.is_some() {
            return (self != other).then_some(Time::ZERO);
        }
        let (a, b) = (&self.points, &other.points);
        let (mut i, mut j) = (0, 0);
        // Before the first step the first rate holds, so instant 0 comes first.
        let mut t = Time::ZERO;
        loop {
            if self.rate_at(t) != other.rate_at(t) {
                return Some(t);
            }
            while a.get(i).is_some_and(|p| p.0 <= t) {
                i += 1;
            }
            while b.get(j).is_some_and(|p| p.0 <= t) {
                j += 1;
            }
            t = match (a.get(i), b.get(j)) {
                (None, None) => return None,
                (Some(p), None) | (None, Some(p)) => p.0,
                (Some(p), Some(q)) => p.0.min(q.0),
            };
        }
    }

    /// The rate at `t`.
    pub fn rate_at(&self, t: Time) -> Bitrate {
        self.step_at(t).0
    }

    /// Whole bytes the schedule carries in [from, to).
    pub fn bytes_between(&self, from: Time, to: Time) -> u64 {
        (self.bit_ns(from, to) / BIT_NS_PER_BYTE) as u64
    }

    /// [`RateSchedule::bytes_between`] with a cursor (see [`RateSchedule::step_from`]).
    pub(crate) fn bytes_between_from(&self, from: Time, to: Time, cursor: &mut usize) -> u64 {
        (self.bit_ns_from(from, to, cursor) / BIT_NS_PER_BYTE) as u64
    }

    /// The first step whose rate and every later one's is what `max_rate_from` looks at from `t`.
    fn first_step_from(&self, t: Time, cursor: &mut usize) -> usize {
        match self.period {
            Some(_) => 0,
            None => {
                *cursor = self.index_from(t.as_nanos(), *cursor);
                *cursor
            }
        }
    }

    /// Whether the rate is zero from `t` for ever.
    pub fn is_zero_from(&self, t: Time) -> bool {
        self.max_rate_from(t) == Bitrate::ZERO
    }

    /// [`RateSchedule::is_zero_from`] with a cursor (see [`RateSchedule::step_from`]).
    #[inline]
    pub(crate) fn is_zero_from_cursor(&self, t: Time, cursor: &mut usize) -> bool {
        self.suffix_max[self.first_step_from(t, cursor)] == Bitrate::ZERO
    }

    /// The highest rate in force at `t` or later.
    pub fn max_rate_from(&self, t: Time) -> Bitrate {
        let mut from = 0;
        self.suffix_max[self.first_step_from(t, &mut from)]
    }

    /// The earliest instant from which every step's rate is below `rate` (`Time::ZERO` if all
    /// are, `Time::MAX` if that never comes): `max_rate_from(t) < rate` exactly when `t` is at
    /// or after it, since the highest rate from `t` on can only fall as `t` grows.
    pub fn below_from(&self, rate: Bitrate) -> Time {
        match self.period {
            Some(_) if self.suffix_max[0] < rate => Time::ZERO,
            Some(_) => Time::MAX,
            None => {
                // `suffix_max` does not increase: the steps from the first index whose maximum is
                // below `rate` on.
                let i = self.suffix_max.partition_point(|&m| m >= rate);
                match i {
                    0 => Time::ZERO,
                    i if i == self.points.len() => Time::MAX,
                    i => self.points[i].0,
                }
            }
        }
    }

    /// Bit-nanoseconds (bits x 1e9) the schedule carries in [from, to).
    pub(crate) fn bit_ns(&self, from: Time, to: Time) -> u128 {
        let mut cursor = 0;
        self.bit_ns_from(from, to, &mut cursor)
    }

    /// [`RateSchedule::bit_ns`] with a cursor (see [`RateSchedule::step_from`]).
    pub(crate) fn bit_ns_from(&self, from: Time, to: Time, cursor: &mut usize) -> u128 {
        let mut total = 0u128;
        let mut t = from;
        if let Some(p) = self.period {
            // Whole repetitions at once (exact: every repetition carries the same), then walk
            // the rest.
            let whole = (to - from).as_nanos() / p.as_nanos();
            if whole >= 2 {
                total = self.period_bit_ns * u128::from(whole);
                t = Time(from.as_nanos() + whole * p.as_nanos());
            }
        }
        while t < to {
            let (rate, end) = self.step_from(t, cursor);
            let end = end.min(to);
            total += rate.as_bps() as u128 * (end - t).as_nanos() as u128;
            t = end;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

    /// The step in force at `t` and the highest rate from `t` on, found by reading every step.
    fn naive(s: &RateSchedule, t: Time) -> (Bitrate, Time, Bitrate) {
        let pts = s.points();
        let (cycle_start, x) = match s.period() {
            Some(p) => (t.as_nanos() / p.as_nanos() * p.as_nanos(), t.as_nanos() % p.as_nanos()),
            None => (0, t.as_nanos()),
        };
        let i = pts.iter().rposition(|p| p.0.as_nanos() <= x).unwrap_or(0);
        let end = match (pts.get(i + 1), s.period()) {
            (Some(n), _) => Time(cycle_start + n.0.as_nanos()),
            (None, Some(p)) => Time(cycle_start + p.as_nanos()),
            (None, None) => Time::MAX,
        };
        let from = if s.period().is_some() { 0 } else { i };
        (pts[i].1, end, pts[from..].iter().map(|p| p.1).max().unwrap())
    }

    fn random_schedule(rng: &mut lowlat_core::rng::Rng, looping: bool) -> RateSchedule {
        let n = rng.random_range(1..40);
        let mut t = if looping { 0 } else { rng.random_range(0..50) };
        let mut points = Vec::new();
        for _ in 0..n {
            // Some zero and some tiny rates, so the "from here on" answers change along the way.
            let rate = match rng.random_range(0..4) {
                0 => Bitrate::ZERO,
                1 => Bitrate::bps(rng.random_range(1..2_000)),
                _ => Bitrate::bps(rng.random_range(0..50_000_000)),
            };
            points.push((Time(t), rate));
            t += rng.random_range(1..30);
        }
        if looping {
            RateSchedule::looping(points, Duration(t + rng.random_range(0..5))).unwrap()
        } else {
            RateSchedule::new(points).unwrap()
        }
    }

    /// Any cursor, stale or not, finds what reading every step finds; so do the suffix maxima
    /// and the instant from which every rate is below a bound.
    #[test]
    fn cursors_and_suffix_maxima_agree_with_reading_every_step() {
        let mut rng = lowlat_core::rng::stream(5, "schedule-test");
        for case in 0..400 {
            let s = random_schedule(&mut rng, case % 2 == 1);
            let mut cursor = rng.random_range(0..60);
            let mut t = 0u64;
            for _ in 0..200 {
                // Mostly forward, sometimes back.
                t = if rng.random_bool(0.8) {
                    t + rng.random_range(0..40)
                } else {
                    rng.random_range(0..t + 1)
                };
                let (rate, end, max) = naive(&s, Time(t));
                assert_eq!(s.step_from(Time(t), &mut cursor), (rate, end), "case {case} t {t}");
                assert_eq!(s.step_at(Time(t)), (rate, end));
                assert_eq!(s.max_rate_from(Time(t)), max);
                assert_eq!(s.is_zero_from(Time(t)), max == Bitrate::ZERO);
                let mut c = rng.random_range(0..60);
                assert_eq!(s.is_zero_from_cursor(Time(t), &mut c), max == Bitrate::ZERO);
                let bound = Bitrate::bps(rng.random_range(0..3_000));
                assert_eq!(Time(t) >= s.below_from(bound), max < bound, "case {case} t {t} bound {bound:?}");
                let to = Time(t + rng.random_range(0..100));
                let mut c = rng.random_range(0..60);
                assert_eq!(s.bit_ns_from(Time(t), to, &mut c), s.bit_ns(Time(t), to));
            }
        }
    }

    #[test]
    fn the_first_difference_is_the_first_instant_the_rates_differ() {
        let mut rng = lowlat_core::rng::stream(6, "schedule-difference-test");
        for case in 0..300 {
            let a = random_schedule(&mut rng, false);
            // A copy with one step's rate changed, a step added or removed (or nothing).
            let mut pts = a.points().to_vec();
            match rng.random_range(0..4) {
                0 => {
                    let i = rng.random_range(0..pts.len());
                    pts[i].1 = Bitrate::bps(rng.random_range(0..3));
                }
                1 => {
                    let t = pts[pts.len() - 1].0 + Duration(rng.random_range(1..20));
                    pts.push((t, Bitrate::bps(rng.random_range(0..50_000_000))));
                }
                2 if pts.len() > 1 => {
                    pts.remove(rng.random_range(0..pts.len()));
                }
                _ => {}
            }
            let b = RateSchedule::new(pts).unwrap();
            let end = b.points().last().unwrap().0.max(a.points().last().unwrap().0).as_nanos() + 2;
            let naive = (0..end).map(Time).find(|&t| a.rate_at(t) != b.rate_at(t));
            assert_eq!(a.first_difference(&b), naive, "case {case}");
            assert_eq!(b.first_difference(&a), naive, "case {case}");
        }
        let looping = random_schedule(&mut rng, true);
        assert_eq!(looping.first_difference(&looping.clone()), None);
    }
}
