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

/// Nanosecond samples: raw while few, counts per histogram bucket once many.
///
/// In bucket form a run of equal samples (a queue that stays empty, a path with a constant
/// delay: most samples of an uncongested hop) is counted and added in one go when the run ends
/// or the histogram is read: a comparison per sample instead of a bucket look-up.
///
/// The buckets are HdrHistogram's at 3 significant digits from 1 ns ([`bucket_index`]), counted
/// here in a plain array: HdrHistogram's `record_n` also keeps its minimum, maximum and total
/// and checks for resizing on every call (about 60 instructions; this is about 15), and it was
/// the largest single cost of a link's hop after the event queue. [`NsHistogram::histogram`]
/// builds the HdrHistogram from the counts (each bucket's count recorded at its lowest value),
/// which has the same counts per bucket, hence the same quantiles, mean, minimum and maximum
/// (HdrHistogram reports those as bucket-equivalent values) as recording every sample.
#[derive(Clone, Debug, Default)]
pub struct NsHistogram {
    raw: Vec<u64>,
    /// Counts per bucket index (empty while `raw` holds the samples).
    counts: Vec<u64>,
    /// Whether the samples went from `raw` into `counts`.
    binned: bool,
    /// Samples in `counts`, and the largest of them.
    binned_len: u64,
    binned_max: u64,
    /// The value of the run not yet added to `counts`, and its length (0: no run).
    run_value: u64,
    run_len: u64,
}

/// `log2` of half the sub-buckets per bucket: 3 significant digits need 2048 sub-buckets
/// (2 x 10^3 values at unit resolution).
const SUB_HALF_MAGNITUDE: u32 = 10;
/// Values below 2048 have their own bucket (`| mask` makes them share the first bucket's shift).
const SUB_MASK: u64 = (1 << (SUB_HALF_MAGNITUDE + 1)) - 1;
/// 64 minus the unit magnitude (0: 1 ns) minus the sub-bucket count magnitude (11).
const LEADING_ZERO_BASE: u32 = 64 - (SUB_HALF_MAGNITUDE + 1);

/// HdrHistogram's counts index of `ns` (3 significant digits, lowest discernible value 1):
/// `index_for` of hdrhistogram 7.
#[inline]
fn bucket_index(ns: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (ns | SUB_MASK).leading_zeros();
    let sub = (ns >> bucket) as usize;
    ((bucket as usize + 1) << SUB_HALF_MAGNITUDE) + sub - (1 << SUB_HALF_MAGNITUDE)
}

/// The lowest value of bucket `index` (its `value_for`), which [`bucket_index`] maps back to it.
fn bucket_value(index: usize) -> u64 {
    let half = 1usize << SUB_HALF_MAGNITUDE;
    let bucket = (index >> SUB_HALF_MAGNITUDE) as i64 - 1;
    let sub = (index & (half - 1)) + half;
    if bucket < 0 {
        (sub - half) as u64
    } else {
        (sub as u64) << bucket
    }
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

    /// Adds `n` samples of `ns` to the bucket counts.
    #[inline(always)]
    fn count(&mut self, ns: u64, n: u64) {
        let i = bucket_index(ns);
        if i >= self.counts.len() {
            self.grow_to(i);
        }
        self.counts[i] += n;
        self.binned_len += n;
        self.binned_max = self.binned_max.max(ns);
    }

    /// Room for bucket `i`: to the end of its bucket, as HdrHistogram sizes itself (a few dozen
    /// growths at most, and no more room than it would take).
    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, i: usize) {
        let want = ((i >> SUB_HALF_MAGNITUDE) + 1) << SUB_HALF_MAGNITUDE;
        self.counts.reserve_exact(want - self.counts.len());
        self.counts.resize(want, 0);
    }

    /// Records one sample.
    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        // In bucket form inline (a run goes on: most samples of an uncongested hop or path; or
        // a new one starts: most of a queue that holds packets, once per packet), the raw
        // samples in a call.
        if self.binned {
            // (With no run, `run_len` is 0: adding one to it starts a run of `ns`, as below.)
            if ns == self.run_value {
                self.run_len += 1;
                return;
            }
            if self.run_len > 0 {
                self.count(self.run_value, self.run_len);
            }
            self.run_value = ns;
            self.run_len = 1;
            return;
        }
        self.record_raw(ns);
    }

    /// [`NsHistogram::record`] while the samples are raw.
    #[inline(never)]
    fn record_raw(&mut self, ns: u64) {
        self.raw.push(ns);
        if self.raw.len() > Self::RAW_LIMIT {
            let raw = std::mem::take(&mut self.raw);
            for v in raw {
                self.count(v, 1);
            }
            self.binned = true;
        }
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        if self.binned {
            self.binned_len + self.run_len
        } else {
            self.raw.len() as u64
        }
    }

    /// No sample yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples as a histogram (built on the spot).
    pub fn histogram(&self) -> Cow<'_, Histogram<u64>> {
        let mut h = Self::empty_histogram();
        if self.binned {
            let top = self.counts.iter().rposition(|&c| c > 0);
            // Highest bucket first: the histogram then sizes itself once, not once per bucket.
            for (i, &c) in self.counts.iter().enumerate().rev().filter(|(_, c)| **c > 0) {
                if Some(i) == top {
                    // One sample at the exact maximum: HdrHistogram reports the maximum as its
                    // bucket's highest equivalent value, which saturates differently from the
                    // bucket's lowest value in the topmost bucket of all.
                    add_n(&mut h, self.binned_max, 1);
                    if c > 1 {
                        add_n(&mut h, bucket_value(i), c - 1);
                    }
                } else {
                    add_n(&mut h, bucket_value(i), c);
                }
            }
            if self.run_len > 0 {
                add_n(&mut h, self.run_value, self.run_len);
            }
        } else {
            for &v in &self.raw {
                add(&mut h, v);
            }
        }
        Cow::Owned(h)
    }

    /// Heap bytes held (for the memory tests and estimates).
    pub fn heap_bytes(&self) -> usize {
        self.raw.capacity() * 8 + self.counts.capacity() * 8
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

    /// Whether `t` is in the bin last looked up ([`BinCursor::last_index`]; none before the
    /// first look-up).
    #[inline(always)]
    pub fn holds(&self, t: Time) -> bool {
        let ns = t.as_nanos();
        self.lo <= ns && ns < self.hi
    }

    /// The index of the bin last looked up (0 before the first look-up).
    #[inline]
    pub fn last_index(&self) -> usize {
        self.index
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
                assert!(!h.binned);
                for q in [0.5, 0.9, 0.99] {
                    assert_eq!(h.histogram().value_at_quantile(q), full.value_at_quantile(q));
                }
            }
        }
        assert!(h.binned);
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
mod bucket_tests {
    use super::*;

    /// The bucket counts give the histogram that recording every sample in HdrHistogram gives:
    /// every quantile, the mean, the standard deviation, minimum, maximum, count and the counts
    /// per bucket, over random samples of every magnitude (1 ns to hours, and the extremes).
    #[test]
    fn bucket_counts_read_as_hdrhistogram_reads_every_sample() {
        let mut word = lowlat_core::rng::words(1, "histogram-test");
        for round in 0..40u64 {
            let mut h = NsHistogram::new();
            let mut one = Histogram::<u64>::new(3).unwrap();
            let n = 1 + (round * 997) % 30_000;
            for i in 0..n {
                let x = word();
                let v = match (x >> 58) % 8 {
                    0 => 0,
                    1 => i % 3000,
                    2 => x >> (x % 64),
                    3 => 25_000_000,
                    4 if round % 5 == 0 => u64::MAX >> (x % 3),
                    _ => (x >> 20) % (1 + (x >> 40) % 4_000_000_000),
                };
                h.record(v);
                add(&mut one, v);
            }
            let got = h.histogram();
            assert_eq!(got.len(), one.len(), "round {round}");
            assert_eq!(h.len(), one.len());
            assert_eq!((got.min(), got.max(), got.min_nz()), (one.min(), one.max(), one.min_nz()));
            assert_eq!(got.mean().to_bits(), one.mean().to_bits(), "round {round}");
            assert_eq!(got.stdev().to_bits(), one.stdev().to_bits(), "round {round}");
            for k in 0..=1000 {
                let q = k as f64 / 1000.0;
                assert_eq!(got.value_at_quantile(q), one.value_at_quantile(q), "round {round} q {q}");
            }
            for q in [0.95, 0.99, 0.999, 0.9999] {
                assert_eq!(got.value_at_quantile(q), one.value_at_quantile(q));
            }
            assert!(got
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .eq(one.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value()))));
            assert_eq!(got.count_between(0, 1_000_000), one.count_between(0, 1_000_000));
        }
    }

    #[test]
    fn bucket_value_is_the_lowest_value_of_its_bucket() {
        let mut x: u64 = 7;
        for _ in 0..200_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = x >> (x % 64);
            let i = bucket_index(v);
            assert!(bucket_value(i) <= v);
            assert_eq!(bucket_index(bucket_value(i)), i, "{v}");
            if bucket_value(i) > 0 {
                assert_eq!(bucket_index(bucket_value(i) - 1), i - 1, "{v}");
            }
        }
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
