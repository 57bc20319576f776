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
        Ok(RateSchedule { points, period: None, period_bit_ns: 0 })
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
        match self.period {
            None => {
                let i = self.points.partition_point(|p| p.0 <= t).saturating_sub(1);
                (self.points[i].1, self.points.get(i + 1).map_or(Time::MAX, |p| p.0))
            }
            Some(p) => {
                let (cycle, rest) = (t.as_nanos() / p.as_nanos(), t.as_nanos() % p.as_nanos());
                let i = self.points.partition_point(|x| x.0.as_nanos() <= rest).saturating_sub(1);
                let end = self.points.get(i + 1).map_or(p.as_nanos(), |x| x.0.as_nanos());
                let start = cycle.saturating_mul(p.as_nanos());
                (self.points[i].1, Time(start.saturating_add(end)))
            }
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

    /// Whether the rate is zero from `t` for ever.
    pub fn is_zero_from(&self, t: Time) -> bool {
        let from = match self.period {
            Some(_) => 0,
            None => self.points.partition_point(|p| p.0 <= t).saturating_sub(1),
        };
        self.points[from..].iter().all(|p| p.1 == Bitrate::ZERO)
    }

    /// The highest rate in force at `t` or later.
    pub fn max_rate_from(&self, t: Time) -> Bitrate {
        let from = match self.period {
            Some(_) => 0,
            None => self.points.partition_point(|p| p.0 <= t).saturating_sub(1),
        };
        self.points[from..].iter().map(|p| p.1).max().unwrap_or(Bitrate::ZERO)
    }

    /// Bit-nanoseconds (bits x 1e9) the schedule carries in [from, to).
    pub(crate) fn bit_ns(&self, from: Time, to: Time) -> u128 {
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
            let (rate, end) = self.step_at(t);
            let end = end.min(to);
            total += rate.as_bps() as u128 * (end - t).as_nanos() as u128;
            t = end;
        }
        total
    }
}
