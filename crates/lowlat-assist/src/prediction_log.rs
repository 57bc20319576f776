//! Zhuge's log of its predictions: every one, none, or a uniform random sample of a fixed size.
//!
//! A 300 s run at 60 Mbit/s makes 1.5 million predictions. A caller that draws a sample of them
//! anyway (the reproduction's accuracy figure keeps 20 000 per run) had the whole log built,
//! handed over and shuffled to keep a few: a seventh of a GCC+Zhuge run's time. The sample here is
//! kept as the predictions come (reservoir sampling, Vitter's algorithm R: the `n`-th record
//! replaces a kept one with probability `size / n`), so every subset of that size is equally
//! likely, and it draws from its own random stream.

use std::borrow::Cow;

use lowlat_core::rng::Rng;
use lowlat_core::{Duration, FlowId, Time};
use rand::Rng as _;

/// One logged prediction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PredictionRecord {
    /// The packet's flow.
    pub flow: FlowId,
    /// Its sequence number.
    pub seq: u64,
    /// When it arrived at the AP.
    pub arrival: Time,
    /// The predicted delay through the AP.
    pub predicted: Duration,
    /// The delay it had: arrival at the AP to the end of its transmission.
    pub actual: Duration,
}

impl PredictionRecord {
    /// |predicted - actual| in milliseconds (the figure the summary's accuracy is made of).
    pub fn abs_error_ms(&self) -> f64 {
        let (p, a) = (self.predicted.as_nanos(), self.actual.as_nanos());
        // Below 2^53 ns (104 days) both convert exactly and so does their difference: the
        // same value from one conversion of the integer difference (a `u64` converts in a
        // sequence of several instructions, and this runs per packet).
        const EXACT: u64 = 1 << 53;
        if p < EXACT && a < EXACT {
            return p.abs_diff(a) as i64 as f64 * 1e-6;
        }
        (p as f64 - a as f64).abs() * 1e-6
    }
}

/// Which predictions are kept, and the kept ones.
// `repr(u8)`: a tag byte of its own (not a niche in a vector's fields), looked at per record.
#[derive(Debug)]
#[repr(u8)]
pub enum PredictionLog {
    /// Every one.
    All(Vec<PredictionRecord>),
    /// None.
    Off,
    /// A uniform sample of at most `size` of them.
    Sample {
        /// The most kept.
        size: usize,
        /// Records so far, kept or not.
        seen: u64,
        /// The kept ones, each with its place among all records (in no order).
        kept: Vec<(u64, PredictionRecord)>,
        /// Draws which record a newcomer replaces.
        rng: Rng,
    },
}

impl PredictionLog {
    /// A log of a uniform sample of at most `size` records, drawing from `rng` (its own stream).
    pub fn sample(size: usize, rng: Rng) -> PredictionLog {
        PredictionLog::Sample { size, seen: 0, kept: Vec::new(), rng }
    }

    /// Logs `r` (or, for a sample, perhaps).
    #[inline]
    pub fn record(&mut self, r: PredictionRecord) {
        match self {
            PredictionLog::All(log) => log.push(r),
            PredictionLog::Off => {}
            PredictionLog::Sample { size, seen, kept, rng } => {
                let n = *seen;
                *seen += 1;
                if kept.len() < *size {
                    kept.push((n, r));
                } else if *size > 0 {
                    // Record n + 1 of the stream: kept with probability size / (n + 1).
                    let j = rng.random_range(0..=n);
                    if let Some(slot) = kept.get_mut(j as usize) {
                        *slot = (n, r);
                    }
                }
            }
        }
    }

    /// The kept records, in the order they were logged.
    pub fn records(&self) -> Cow<'_, [PredictionRecord]> {
        match self {
            PredictionLog::All(log) => Cow::Borrowed(log),
            PredictionLog::Off => Cow::Borrowed(&[]),
            PredictionLog::Sample { kept, .. } => {
                let mut kept = kept.clone();
                kept.sort_unstable_by_key(|k| k.0);
                Cow::Owned(kept.into_iter().map(|k| k.1).collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64) -> PredictionRecord {
        PredictionRecord {
            flow: FlowId(0),
            seq,
            arrival: Time(seq),
            predicted: Duration::from_millis(1),
            actual: Duration::from_millis(2),
        }
    }

    #[test]
    fn a_sample_keeps_everything_up_to_its_size_then_that_many_in_order() {
        let mut log = PredictionLog::sample(10, lowlat_core::rng::stream(1, "t"));
        (0..7).for_each(|i| log.record(rec(i)));
        assert_eq!(log.records().iter().map(|r| r.seq).collect::<Vec<_>>(), (0..7).collect::<Vec<_>>());
        (7..10_000).for_each(|i| log.record(rec(i)));
        let seqs: Vec<u64> = log.records().iter().map(|r| r.seq).collect();
        assert_eq!(seqs.len(), 10);
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in logged order: {seqs:?}");
        assert!(seqs.iter().any(|&s| s >= 5_000), "later records get in: {seqs:?}");
    }

    #[test]
    fn a_sample_is_uniform_over_the_records() {
        // Each of 50 records is kept with probability 5 / 50: over 4000 runs, 400 times each
        // (a standard deviation of 19); the first ones must not be favoured.
        let mut hits = [0u32; 50];
        for run in 0..4000 {
            let mut log = PredictionLog::sample(5, lowlat_core::rng::stream(run, "uniform"));
            (0..50).for_each(|i| log.record(rec(i)));
            log.records().iter().for_each(|r| hits[r.seq as usize] += 1);
        }
        assert!(hits.iter().all(|&h| (320..=480).contains(&h)), "{hits:?}");
        assert!(hits[..5].iter().sum::<u32>() < 5 * 440, "the first records are not favoured: {hits:?}");
    }

    #[test]
    fn all_keeps_every_record_and_off_none() {
        let mut all = PredictionLog::All(Vec::new());
        let mut off = PredictionLog::Off;
        for i in 0..100 {
            all.record(rec(i));
            off.record(rec(i));
        }
        assert_eq!(all.records().len(), 100);
        assert!(off.records().is_empty());
    }
}
