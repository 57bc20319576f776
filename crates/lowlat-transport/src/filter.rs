//! Windowed min/max filters: the running minimum or maximum of a signal over a sliding window,
//! in O(1) time and space per sample.
//!
//! Kathleen Nichols' algorithm, as BBR (its bandwidth and min-RTT filters) and Copa's
//! implementations use it: three samples are kept, the best, the best after it, and the best after
//! that, each from a later part of the window; when the best ages out the next takes over. The
//! estimate can be a little stale (by up to a quarter of the window) but never needs the window's
//! history, which keeps the per-ACK cost constant at any bandwidth-delay product.
//!
//! [`SuffixExtrema`] is exact where the filter estimates: the minimum and maximum of the samples
//! newer than any given time, over a history that expires by age (the Zhuge artifact's Copa asks
//! that of its last 10 srtt of RTT samples once per update, which a scan of the history made about
//! 4 % of a Copa run's instructions).

/// Whether the filter keeps the largest or the smallest value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// A running maximum (BBR's bottleneck bandwidth).
    Max,
    /// A running minimum (round-trip times).
    Min,
}

/// A running best of `(t, value)` samples over the window `[t - window, t]`; `t` is any
/// monotonic count (nanoseconds, round trips).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowedFilter {
    keep: Keep,
    samples: [(u64, f64); 3],
    empty: bool,
}

impl WindowedFilter {
    /// An empty filter.
    pub fn new(keep: Keep) -> WindowedFilter {
        WindowedFilter { keep, samples: [(0, 0.0); 3], empty: true }
    }

    /// The current best, if any sample was seen.
    pub fn get(&self) -> Option<f64> {
        (!self.empty).then_some(self.samples[0].1)
    }

    /// Forgets everything and starts from `(t, v)`.
    pub fn reset(&mut self, t: u64, v: f64) {
        self.samples = [(t, v); 3];
        self.empty = false;
    }

    /// Adds sample `v` taken at `t` (not before earlier samples) with window length `window`;
    /// returns the new best.
    #[inline]
    pub fn update(&mut self, t: u64, v: f64, window: u64) -> f64 {
        // One branch on the kind, then code with its comparison built in (a comparison that
        // asked the kind each time cost a tenth of the update).
        match self.keep {
            Keep::Max => self.update_with(t, v, window, |a, b| a >= b),
            Keep::Min => self.update_with(t, v, window, |a, b| a <= b),
        }
    }

    /// [`WindowedFilter::update`] with `better(a, b)`: whether `a` is at least as good as `b`.
    #[inline(always)]
    fn update_with(&mut self, t: u64, v: f64, window: u64, better: impl Fn(f64, f64) -> bool) -> f64 {
        if self.empty || better(v, self.samples[0].1) || t.saturating_sub(self.samples[2].0) > window {
            self.reset(t, v);
            return v;
        }
        let s = &mut self.samples;
        if better(v, s[1].1) {
            s[1] = (t, v);
            s[2] = (t, v);
        } else if better(v, s[2].1) {
            s[2] = (t, v);
        }
        // Age the samples: the best expires after a window; the second and third are refreshed
        // once a quarter and a half of the window have passed without a better value.
        let dt = t.saturating_sub(s[0].0);
        if dt > window {
            s[0] = s[1];
            s[1] = s[2];
            s[2] = (t, v);
            if t.saturating_sub(s[0].0) > window {
                s[0] = s[1];
                s[1] = s[2];
                s[2] = (t, v);
            }
        } else if s[1].0 == s[0].0 && dt > window / 4 {
            s[1] = (t, v);
            s[2] = (t, v);
        } else if s[2].0 == s[1].0 && dt > window / 2 {
            s[2] = (t, v);
        }
        s[0].1
    }
}

/// A [`WindowedFilter`] over a window that never changes (Copa's 10 s minimum RTT), which also
/// remembers until when a sample no better than any of the three kept changes nothing: most
/// samples are such, and the filter's walk of its three samples and their ages (a few dozen
/// instructions per ACK) is then one comparison of the time and one of the value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedWindowFilter {
    filter: WindowedFilter,
    window: u64,
    /// Samples taken up to this time (inclusive) that are worse than `quiet_bound` leave the
    /// filter as it is: no kept sample ages out or is refreshed before then.
    quiet_until: u64,
    /// For [`Keep::Min`], the largest kept value (a sample above it is better than none); for
    /// [`Keep::Max`], the smallest, negated (a sample below it is better than none: its negation
    /// is above this).
    quiet_bound: f64,
    /// 1 for [`Keep::Min`], -1 for [`Keep::Max`]: a sample times this is compared with
    /// `quiet_bound` (a multiplication where a match on the kind cost both comparisons).
    sign: f64,
}

impl FixedWindowFilter {
    /// An empty filter over `window`.
    pub fn new(keep: Keep, window: u64) -> FixedWindowFilter {
        // (Empty: `quiet_until` 0 with no value worse than a NaN bound sends every sample the
        // long way until the first.)
        let sign = if keep == Keep::Max { -1.0 } else { 1.0 };
        FixedWindowFilter {
            filter: WindowedFilter::new(keep),
            window,
            quiet_until: 0,
            quiet_bound: f64::NAN,
            sign,
        }
    }

    /// The current best, if any sample was seen.
    pub fn get(&self) -> Option<f64> {
        self.filter.get()
    }

    /// [`WindowedFilter::update`] with the filter's window: the same best, the same state.
    #[inline]
    pub fn update(&mut self, t: u64, v: f64) -> f64 {
        // (Negation is exact, and a NaN stays one: never above the bound.)
        if t <= self.quiet_until && v * self.sign > self.quiet_bound {
            return self.filter.samples[0].1;
        }
        self.update_slow(t, v)
    }

    #[inline(never)]
    fn update_slow(&mut self, t: u64, v: f64) -> f64 {
        let best = self.filter.update(t, v, self.window);
        // What `update_with` asks of a sample at `t` (not better than any kept): none of its
        // ages is past its limit, i.e. `t` is at most each limit. (Saturating: a limit beyond
        // the clock's range is never reached, as `t - s > window` never holds then.)
        let f = &self.filter;
        let [(t0, v0), (t1, v1), (t2, v2)] = f.samples;
        let w = self.window;
        let mut until = t2.saturating_add(w).min(t0.saturating_add(w));
        if t1 == t0 {
            until = until.min(t0.saturating_add(w / 4));
        }
        if t2 == t1 {
            until = until.min(t0.saturating_add(w / 2));
        }
        self.quiet_until = until;
        // Not better than any kept value: `!(v <= x)` (Min) or `!(v >= x)` (Max) for each; a
        // NaN kept value is never beaten, so it takes no part (`max`/`min` skip NaN), and a NaN
        // bound (all three NaN) lets no sample through the quiet way.
        self.quiet_bound = match f.keep {
            Keep::Min => v0.max(v1).max(v2),
            Keep::Max => -v0.min(v1).min(v2),
        };
        best
    }
}

/// The exact minimum and maximum of the samples newer than a given time, for `(t, value)`
/// samples added in order of `t` and forgotten by age.
///
/// Two monotonic queues: the minima keep only samples that no later sample is smaller than or
/// equal to (values rising from front to back), the maxima only those no later one is larger than
/// or equal to. The smallest sample newer than `from` is then the first kept minimum newer than
/// `from` (every sample dropped for it had a later, not larger one, which is newer than `from`
/// too), found by binary search: O(1) amortised per sample and O(log n) per query, where a scan
/// of the samples costs O(n). Values are never NaN.
///
/// Samples wait in a batch until a query (or [`PENDING_MAX`] of them): one pass over it from
/// the newest back gives both queues' chains of it (each sample better than every later one) and
/// its extremes, which say what of each queue stays; this leaves the queues as the samples pushed
/// one by one would, for a fraction of the work (the artifact's Copa pushes a sample per ACK and
/// asks once per half RTT).
///
/// Samples older than the horizon are forgotten lazily: the queries skip them, and the queues
/// drop them when they take a batch in.
#[derive(Clone, Debug, Default)]
pub struct SuffixExtrema {
    mins: Monotonic,
    maxs: Monotonic,
    /// Samples taken before this are forgotten: the latest `t - keep` of the samples taken in
    /// (a sample is forgotten once a later one is more than `keep` newer). (Worked out when a
    /// batch is taken in, from its newest sample: times only grow.)
    horizon: u64,
    /// How long a sample is kept.
    keep: u64,
    /// Samples pushed since the queues last took them in, oldest first.
    pending: Vec<(u64, f64)>,
}

/// The most samples [`SuffixExtrema`] keeps waiting between two queries.
const PENDING_MAX: usize = 1024;

/// One monotonic queue: a vector whose front is `head` (popping the front moves it; the dead
/// part is dropped once it is half the vector), cheaper per sample than a `VecDeque`'s ring.
#[derive(Clone, Debug, Default)]
struct Monotonic {
    items: Vec<(u64, f64)>,
    head: usize,
}

impl Monotonic {
    /// Completes a batch's chain pushed after the first `old` items, newest first (see
    /// [`SuffixExtrema::settle`]), as pushing the batch's samples one by one would have left the
    /// queue: the items a later sample replaces (`keeps(v)` false: the batch's best beats `v`)
    /// are dropped, and the chain turned around in their place.
    fn place(&mut self, old: usize, keeps: impl Fn(f64) -> bool) {
        let mut n = old;
        while n > self.head && !keeps(self.items[n - 1].1) {
            n -= 1;
        }
        self.items[old..].reverse();
        if n < old {
            self.items.drain(n..old);
        }
    }

    /// Drops the samples taken before `horizon` (never the newest, which no horizon passes).
    fn sweep(&mut self, horizon: u64) {
        while self.items[self.head].0 < horizon {
            self.head += 1;
        }
        if self.head >= 64 && 2 * self.head >= self.items.len() {
            self.items.drain(..self.head);
            self.head = 0;
        }
    }

    fn live(&self) -> &[(u64, f64)] {
        &self.items[self.head..]
    }

    /// The value of the first sample taken after `from` (`None`: the first of all) and not
    /// before `horizon`.
    fn first_after(&self, from: Option<u64>, horizon: u64) -> Option<f64> {
        let live = self.live();
        let i = live.partition_point(|&(t, _)| t < horizon || from.is_some_and(|f| t <= f));
        live.get(i).map(|&(_, v)| v)
    }
}

impl SuffixExtrema {
    /// No samples; each is kept until one more than `keep` newer is added.
    pub fn new(keep: u64) -> SuffixExtrema {
        SuffixExtrema { keep, ..SuffixExtrema::default() }
    }

    /// Adds `v` taken at `t` (not before earlier samples), then forgets the samples taken more
    /// than `keep` before `t` (never the one just added).
    #[inline]
    pub fn push(&mut self, t: u64, v: f64) {
        self.pending.push((t, v));
        if self.pending.len() >= PENDING_MAX {
            self.settle();
        }
    }

    /// The queues take the waiting samples in, and drop the forgotten ones.
    fn settle(&mut self) {
        let Some((&newest, rest)) = self.pending.split_last() else { return };
        self.horizon = self.horizon.max(newest.0.saturating_sub(self.keep));
        // A kept sample is strictly better than every later one (an equal later one replaces it):
        // from the newest back, each sample better than all after it joins its queue's chain.
        let (old_mins, old_maxs) = (self.mins.items.len(), self.maxs.items.len());
        self.mins.items.push(newest);
        self.maxs.items.push(newest);
        let (mut lo, mut hi) = (newest.1, newest.1);
        for &(t, v) in rest.iter().rev() {
            if v < lo {
                lo = v;
                self.mins.items.push((t, v));
            }
            if v > hi {
                hi = v;
                self.maxs.items.push((t, v));
            }
        }
        self.mins.place(old_mins, |kept| kept < lo);
        self.maxs.place(old_maxs, |kept| kept > hi);
        self.pending.clear();
        self.mins.sweep(self.horizon);
        self.maxs.sweep(self.horizon);
    }

    /// The time of the newest sample (`None`: none yet).
    pub fn newest(&self) -> Option<u64> {
        self.pending.last().or(self.mins.live().last()).map(|&(t, _)| t)
    }

    /// `(min, max)` of the samples kept that were taken after `from` (`None`: all of them);
    /// `None` if there is none.
    pub fn after(&mut self, from: Option<u64>) -> Option<(f64, f64)> {
        self.settle();
        Some((self.mins.first_after(from, self.horizon)?, self.maxs.first_after(from, self.horizon)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The exact windowed best, for comparison.
    fn exact(samples: &[(u64, f64)], t: u64, window: u64, keep: Keep) -> f64 {
        let xs = samples.iter().filter(|(s, _)| t - s <= window).map(|x| x.1);
        match keep {
            Keep::Max => xs.fold(f64::MIN, f64::max),
            Keep::Min => xs.fold(f64::MAX, f64::min),
        }
    }

    #[test]
    fn tracks_a_new_best_at_once_and_forgets_an_old_one_after_the_window() {
        let mut f = WindowedFilter::new(Keep::Max);
        assert_eq!(f.get(), None);
        f.update(0, 10.0, 100);
        assert_eq!(f.update(10, 5.0, 100), 10.0);
        assert_eq!(f.update(20, 12.0, 100), 12.0);
        // 12 ages out after 100; the best of what came after it takes over.
        f.update(60, 7.0, 100);
        f.update(90, 6.0, 100);
        assert_eq!(f.update(125, 3.0, 100), 7.0);
        assert_eq!(f.update(200, 2.0, 100), 3.0);
    }

    #[test]
    fn the_estimate_is_never_stale_and_mostly_exact() {
        // A slowly varying signal with noise: the estimate is always a value the signal took within
        // the window (the filter only ever forgets early, never keeps a value too long), and it
        // equals the exact best most of the time.
        for keep in [Keep::Max, Keep::Min] {
            let mut f = WindowedFilter::new(keep);
            let mut samples = Vec::new();
            let mut x: u64 = 12345;
            let mut exact_hits = 0;
            for t in 0..5000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let v = (t as f64 / 300.0).sin() * 10.0 + (x >> 40) as f64 / (1u64 << 24) as f64;
                samples.push((t, v));
                let got = f.update(t, v, 100);
                let within = exact(&samples, t, 100, keep);
                assert!(samples.iter().any(|&(s, x)| t - s <= 100 && x == got), "t {t}: {got} is stale");
                exact_hits += usize::from(got == within);
            }
            assert!(exact_hits > 2500, "{keep:?}: exact {exact_hits} of 5000");
        }
    }

    /// The fixed-window filter's quiet way gives what the plain filter gives, best and state,
    /// sample by sample: random values (ties too), steps in time short and long against the
    /// window, for both kinds.
    #[test]
    fn the_fixed_window_filter_is_the_windowed_filter() {
        let mut next = lowlat_core::rng::below(1, "fixed-window-filter-test");
        for case in 0..120 {
            let keep = if case % 2 == 0 { Keep::Min } else { Keep::Max };
            let window = 1 + next(1_000);
            let mut plain = WindowedFilter::new(keep);
            let mut fixed = FixedWindowFilter::new(keep, window);
            let mut t = next(1_000);
            let mut quiet = 0;
            for i in 0..5_000 {
                t += match case % 3 {
                    0 => next(3),
                    1 => next(window / 8 + 1),
                    _ => next(2 * window),
                };
                let v = match case % 4 {
                    0 => next(8) as f64,
                    1 => next(1 << 20) as f64 * 1e-6,
                    // Drifting up (Min keeps its old best until it ages out) or down.
                    2 => (t / 16) as f64 + next(4) as f64,
                    _ => 1e6 - (t / 16) as f64 - next(4) as f64,
                };
                let bound = fixed.quiet_bound;
                quiet += usize::from(
                    t <= fixed.quiet_until && if keep == Keep::Min { v > bound } else { -v > bound },
                );
                let want = plain.update(t, v, window);
                assert_eq!(fixed.update(t, v), want, "case {case} sample {i}");
                assert_eq!(fixed.filter, plain, "case {case} sample {i}");
            }
            assert!(quiet > 100, "case {case}: the quiet way taken {quiet} times");
        }
    }

    /// The monotonic queues give what a scan of the kept samples gives (the artifact Copa's
    /// `tcp_detected` loop, which they replace), on random samples, ages and query times.
    #[test]
    fn suffix_extrema_equal_a_scan_of_the_history() {
        let mut next = lowlat_core::rng::below(1, "suffix-extrema-test");
        for case in 0..200 {
            let keep = 1 + next(2_000);
            let mut ext = SuffixExtrema::new(keep);
            let mut history: VecDeque<(u64, f64)> = VecDeque::new();
            let mut t = next(1_000);
            for _ in 0..4_000 {
                t += next(40); // equal times too
                let v = match case % 3 {
                    // Few distinct values: ties between kept samples are common.
                    0 => next(20) as f64 / 4.0,
                    1 => next(1 << 20) as f64 * 1e-7,
                    // Rising (a growing queue): the minima keep every sample until it ages out.
                    _ => (t / 8) as f64,
                };
                ext.push(t, v);
                history.push_back((t, v));
                while history.len() > 1 && history.front().is_some_and(|&(s, _)| s + keep < t) {
                    history.pop_front();
                }
                assert_eq!(ext.newest(), Some(t));
                // Queries now and then (the samples between wait in a batch), or rarely (batches
                // beyond the most that wait).
                let skip = match case % 4 {
                    1 => next(64) > 0,
                    3 => next(3_000) > 0,
                    _ => false,
                };
                if skip {
                    continue;
                }
                let span = next(2 * keep + 2);
                let from = t.checked_sub(span);
                let (mut lo, mut hi, mut any) = (f64::INFINITY, f64::NEG_INFINITY, false);
                for &(s, v) in history.iter().rev() {
                    if from.is_some_and(|f| s <= f) {
                        break;
                    }
                    lo = lo.min(v);
                    hi = hi.max(v);
                    any = true;
                }
                let want = any.then_some((lo, hi));
                assert_eq!(ext.after(from), want, "case {case} t {t} from {from:?}");
            }
        }
    }
}
