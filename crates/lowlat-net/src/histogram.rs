//! A histogram of nanosecond samples that costs what it holds.
//!
//! A full-range HdrHistogram (1 ns to hours at 3 significant digits) is about 280 kB whether it
//! holds one sample or a billion, which made every flow and link cost that much even when idle
//! (10 000 near-idle flows took 2.9 GB). [`NsHistogram`] keeps its first samples raw (8 bytes
//! each) and moves them into an auto-sized histogram only once it holds more than
//! [`NsHistogram::RAW_LIMIT`] of them. Reading it ([`NsHistogram::histogram`]) gives the very
//! histogram the samples would have built, so quantiles do not depend on which form was kept.

use hdrhistogram::Histogram;
use lowlat_core::{Duration, Time};
use std::borrow::Cow;

/// Significant digits of every quantile: 0.1 % precision.
const SIGFIG: u8 = 3;

/// Nanosecond samples: raw while few, a 3-significant-digit histogram once many.
///
/// In histogram form a run of equal samples (a queue that stays empty, a path with a constant
/// delay: most samples of an uncongested hop) is counted and added in one go when the run ends
/// or the histogram is read: a comparison per sample instead of a bucket look-up. Adding `n`
/// equal samples at once gives the histogram the same counts, total, minimum and maximum.
#[derive(Clone, Debug, Default)]
pub struct NsHistogram {
    raw: Vec<u64>,
    hist: Option<Histogram<u64>>,
    /// The value of the run not yet added to `hist`, and its length (0: no run).
    run_value: u64,
    run_len: u64,
}

impl NsHistogram {
    /// Raw samples kept before switching to the histogram (8 kB at most).
    pub const RAW_LIMIT: usize = 1024;

    /// An empty histogram; allocates nothing until the first sample.
    pub fn new() -> NsHistogram {
        NsHistogram::default()
    }

    fn empty_histogram() -> Histogram<u64> {
        // Auto-resizing from 1 ns: the same buckets as a fixed 1 ns..10^13 ns histogram, but only
        // as many as the largest sample needs.
        Histogram::new(SIGFIG).expect("3 significant digits are valid")
    }

    /// Records one sample.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        if let Some(h) = self.hist.as_mut() {
            if ns == self.run_value && self.run_len > 0 {
                self.run_len += 1;
                return;
            }
            if self.run_len > 0 {
                add_n(h, self.run_value, self.run_len);
            }
            self.run_value = ns;
            self.run_len = 1;
            return;
        }
        self.raw.push(ns);
        if self.raw.len() > Self::RAW_LIMIT {
            let mut h = Self::empty_histogram();
            for &v in &self.raw {
                add(&mut h, v);
            }
            self.raw = Vec::new();
            self.hist = Some(h);
        }
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.hist.as_ref().map_or(self.raw.len() as u64, |h| h.len() + self.run_len)
    }

    /// No sample yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples as a histogram (built on the spot while they are still raw).
    pub fn histogram(&self) -> Cow<'_, Histogram<u64>> {
        match &self.hist {
            Some(h) if self.run_len == 0 => Cow::Borrowed(h),
            Some(h) => {
                let mut h = h.clone();
                add_n(&mut h, self.run_value, self.run_len);
                Cow::Owned(h)
            }
            None => {
                let mut h = Self::empty_histogram();
                for &v in &self.raw {
                    add(&mut h, v);
                }
                Cow::Owned(h)
            }
        }
    }

    /// Heap bytes held (for the memory tests and estimates).
    pub fn heap_bytes(&self) -> usize {
        self.raw.capacity() * 8 + self.hist.as_ref().map_or(0, |h| h.distinct_values() * 8)
    }
}

/// Records `ns`, growing the histogram as needed (`saturating_record` would clamp instead).
fn add(h: &mut Histogram<u64>, ns: u64) {
    add_n(h, ns, 1);
}

/// Records `n` samples of `ns` at once, as [`add`] `n` times would.
fn add_n(h: &mut Histogram<u64>, ns: u64, n: u64) {
    if h.record_n(ns, n).is_err() {
        h.saturating_record_n(ns, n);
    }
}

/// Which series bin an instant falls in, remembering the current bin's bounds: the packets of
/// one bin (hundreds of them) then cost a comparison instead of a 64-bit division each.
#[derive(Clone, Copy, Debug)]
pub struct BinCursor {
    width: u64,
    lo: u64,
    hi: u64,
    index: usize,
}

impl BinCursor {
    /// Bins of `width` (zero counts as 1 ns).
    pub fn new(width: Duration) -> BinCursor {
        // lo > hi: no instant is in the remembered bin before the first look-up.
        BinCursor { width: width.as_nanos().max(1), lo: 1, hi: 0, index: 0 }
    }

    /// The index of the bin holding `t`: `t / width`.
    #[inline]
    pub fn index(&mut self, t: Time) -> usize {
        let ns = t.as_nanos();
        if ns < self.lo || ns >= self.hi {
            let i = ns / self.width;
            self.index = i as usize;
            self.lo = i * self.width;
            self.hi = self.lo.saturating_add(self.width);
        }
        self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_costs_nothing_and_quantiles_match_a_full_histogram() {
        let mut h = NsHistogram::new();
        assert_eq!(h.heap_bytes(), 0);
        assert!(h.is_empty());
        let mut full = Histogram::<u64>::new_with_bounds(1, 10_000_000_000_000, 3).unwrap();
        let mut x: u64 = 12345;
        for i in 0..5000u64 {
            // A spread of delays from microseconds to seconds.
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = (x >> 33) % 2_000_000_000 + 1;
            h.record(v);
            full.saturating_record(v);
            if i == 100 {
                // Raw form: the same quantiles as the full histogram already.
                assert!(h.hist.is_none());
                for q in [0.5, 0.9, 0.99] {
                    assert_eq!(h.histogram().value_at_quantile(q), full.value_at_quantile(q));
                }
            }
        }
        assert!(h.hist.is_some());
        assert_eq!(h.len(), 5000);
        for q in [0.0, 0.5, 0.9, 0.95, 0.99, 1.0] {
            assert_eq!(h.histogram().value_at_quantile(q), full.value_at_quantile(q));
        }
        assert_eq!(h.histogram().count_between(0, 1_000_000), full.count_between(0, 1_000_000));
        // Auto-sized to two seconds: well under the full range's ~280 kB.
        assert!(h.heap_bytes() < 200_000, "{}", h.heap_bytes());
    }
}

#[cfg(test)]
mod run_tests {
    use super::*;

    /// Runs of equal samples (and their ends at any point) give the histogram one sample at a
    /// time would.
    #[test]
    fn runs_of_equal_samples_match_sample_by_sample() {
        let mut h = NsHistogram::new();
        let mut one = Histogram::<u64>::new(3).unwrap();
        let mut x: u64 = 99;
        for i in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Long runs of 0 and of a constant, broken by random values.
            let v = match (x >> 60) % 4 {
                0 => 0,
                1 => 25_000_000,
                _ if i % 7 == 0 => (x >> 20) % 3_000_000_000,
                _ => 25_000_000,
            };
            h.record(v);
            one.record(v).unwrap();
            if i % 5000 == 4999 {
                let got = h.histogram();
                assert_eq!(got.len(), one.len());
                assert_eq!((got.min(), got.max()), (one.min(), one.max()));
                for q in [0.0, 0.25, 0.5, 0.9, 0.999, 1.0] {
                    assert_eq!(got.value_at_quantile(q), one.value_at_quantile(q));
                }
                assert!(got
                    .iter_recorded()
                    .map(|v| v.count_at_value())
                    .eq(one.iter_recorded().map(|v| v.count_at_value())));
            }
        }
        assert_eq!(h.len(), 20_000);
    }
}

#[cfg(test)]
mod bin_cursor_tests {
    use super::*;

    #[test]
    fn bin_cursor_agrees_with_division_in_any_order() {
        let mut c = BinCursor::new(Duration::from_millis(200));
        let w = 200_000_000u64;
        for ns in [0, 1, w - 1, w, w + 5, 3 * w, 2 * w + 7, 0, 10 * w - 1, 10 * w, u64::MAX] {
            assert_eq!(c.index(Time(ns)), (ns / w) as usize, "{ns}");
        }
    }
}
