//! A Wi-Fi access point's downlink: the link's bytes leave in aggregates at transmit
//! opportunities (TXOPs), with gaps between them and occasional longer stretches when the channel
//! is unavailable (other stations, interference).
//!
//! This is what makes a per-millisecond observer of the AP's dequeues (Zhuge's Fortune Teller) see
//! sending, *busy* (packets waiting, nothing leaves) and idle slots, as on real Wi-Fi. The mean
//! rate follows a rate schedule (a constant, the RMCAT steps, a measured bandwidth trace, or a
//! mahimahi trace as bytes per millisecond): each
//! TXOP may carry the bytes the schedule allows since the previous TXOP, at most one maximal
//! aggregate; the bytes of an unused TXOP (empty queue) are lost, as airtime is.
//!
//! The parameters are a model, not a standard: defaults are chosen to look like a moderately
//! loaded 802.11n/ac channel (TXOPs every 1-4 ms, one in five hundred followed by an outage of 20 ms
//! on average, A-MPDUs of at most 65 535 bytes).

use crate::schedule::RateSchedule;
use lowlat_core::rng::Rng;
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use rand::Rng as _;

/// The channel's access pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct WifiConfig {
    /// Shortest gap between two TXOPs (contention plus the previous aggregate's airtime), 1 ms.
    pub access_min: Duration,
    /// Longest such gap, 4 ms (gaps are uniform in between).
    pub access_max: Duration,
    /// Probability that a TXOP is followed by an outage (the channel busy with others), 0.002:
    /// about one outage every 1.25 s.
    pub outage_probability: f64,
    /// Mean length of an outage (exponential), 20 ms.
    pub outage_mean: Duration,
    /// Most bytes one TXOP carries: the 802.11n A-MPDU limit, 65 535 bytes.
    pub max_aggregate: Bytes,
}

impl Default for WifiConfig {
    fn default() -> Self {
        WifiConfig {
            access_min: Duration::from_millis(1),
            access_max: Duration::from_millis(4),
            outage_probability: 0.002,
            outage_mean: Duration::from_millis(20),
            max_aggregate: Bytes(65_535),
        }
    }
}

impl WifiConfig {
    /// Checks the parameters; the message names the offending one.
    ///
    /// Gaps are at least [`MIN_ACCESS_GAP`]: contention (DIFS, backoff), a PPDU's preamble and the
    /// block ACK exchange take longer than that, and the channel draws every gap, also while the
    /// queue is empty, so a 1 ns gap would cost a billion draws per idle second. Gaps and outages
    /// are at most an hour.
    pub fn validate(&self) -> Result<(), String> {
        let hour = Duration::from_secs(3600);
        if self.access_min < MIN_ACCESS_GAP || self.access_min > hour {
            return Err(format!(
                "access_min: got \"{}\", expected \"{MIN_ACCESS_GAP}\" to \"{hour}\"",
                self.access_min
            ));
        }
        if self.access_max < self.access_min || self.access_max > hour {
            return Err(format!(
                "access_max: got {}, expected at least access_min ({}) and at most {hour}",
                self.access_max, self.access_min
            ));
        }
        if self.outage_mean > hour {
            return Err(format!("outage_mean: got \"{}\", expected at most \"{hour}\"", self.outage_mean));
        }
        if !(0.0..=1.0).contains(&self.outage_probability) {
            return Err(format!(
                "outage_probability: got {}, expected a probability in [0, 1]",
                self.outage_probability
            ));
        }
        if self.max_aggregate.0 == 0 {
            return Err("max_aggregate: expected a positive size".into());
        }
        Ok(())
    }
}

/// The shortest gap between TXOPs a [`WifiConfig`] takes: 100 us.
pub const MIN_ACCESS_GAP: Duration = Duration::from_micros(100);

/// The serving state of a Wi-Fi downlink: the current TXOP and what it has left.
#[derive(Clone, Debug)]
pub struct WifiChannel {
    cfg: WifiConfig,
    rng: Rng,
    /// The previous TXOP (its bytes budget started accruing from there).
    prev: Time,
    /// The current TXOP.
    txop: Time,
    /// Bytes the current TXOP can still carry.
    left: u64,
    /// From this instant on no TXOP can carry a byte (see `never_carries`), worked out once
    /// rather than per TXOP.
    silent_from: Time,
    /// Where in the rate schedule the last TXOP's budget ended (see `RateSchedule::step_from`).
    cursor: usize,
}

impl WifiChannel {
    /// A channel whose first TXOP comes one access gap after time zero.
    pub fn new(cfg: WifiConfig, rate: &RateSchedule, rng: Rng) -> WifiChannel {
        // `never_carries(t)`: rate x access_max < 8 bit-seconds, i.e. rate < ceil(8e9 / access_max)
        // bit/s (integers: r x a < N exactly when r < ceil(N / a)).
        let a = cfg.access_max.as_nanos();
        let silent_from =
            if a == 0 { Time::ZERO } else { rate.below_from(Bitrate::bps(8_000_000_000u64.div_ceil(a))) };
        let mut ch =
            WifiChannel { cfg, rng, prev: Time::ZERO, txop: Time::ZERO, left: 0, silent_from, cursor: 0 };
        ch.next_txop(rate);
        ch
    }

    /// The current TXOP instant (for tests).
    pub fn txop(&self) -> Time {
        self.txop
    }

    fn next_txop(&mut self, rate: &RateSchedule) {
        let (lo, hi) = (self.cfg.access_min.as_nanos(), self.cfg.access_max.as_nanos());
        let mut gap = if hi > lo { self.rng.random_range(lo..=hi) } else { lo };
        if self.cfg.outage_probability > 0.0 && self.rng.random_bool(self.cfg.outage_probability) {
            // Exponential by inversion: -mean x ln(U), U in (0, 1].
            let u: f64 = 1.0 - self.rng.random::<f64>();
            gap = gap.saturating_add((-(self.cfg.outage_mean.as_nanos() as f64) * u.ln()) as u64);
        }
        self.prev = self.txop;
        // At least 1 ns: a config that skipped `validate` (access_min 0) must not stall time.
        self.txop += Duration(gap.max(1));
        let accrued = rate.bytes_between_from(self.prev, self.txop, &mut self.cursor);
        self.left = accrued.min(self.cfg.max_aggregate.0);
    }

    /// Whether no TXOP from `t` on can carry a byte: the rate (at most) over the longest access
    /// gap is under 8 bits. A TXOP carries the whole bytes accrued since the previous one, so
    /// such a rate (zero, or a few bit/s held to the end) never serves anything; only an outage's
    /// longer gap might, after ages. Said so rather than drawing TXOPs for ever.
    ///
    /// The rate's highest value from `t` on only falls as `t` grows, so this holds from
    /// `silent_from` on (worked out in [`WifiChannel::new`]).
    #[inline]
    fn never_carries(&self, t: Time) -> bool {
        t >= self.silent_from
    }

    /// When a packet of `bytes` that starts service at `start` leaves: at the first TXOP at or
    /// after `start` with room for it (spanning several if it is larger than what one carries);
    /// `None` if no TXOP from there on can carry a byte (see `never_carries`: a rate of zero, or
    /// of a few bit/s, for ever). Calls come with non-decreasing `start`.
    pub fn finish_time(&mut self, rate: &RateSchedule, start: Time, bytes: Bytes) -> Option<Time> {
        // TXOPs that passed while nothing waited are gone; their budget with them.
        while self.txop < start {
            if self.never_carries(self.txop) {
                return None;
            }
            self.next_txop(rate);
        }
        let mut need = bytes.0;
        loop {
            if need <= self.left {
                self.left -= need;
                return Some(self.txop);
            }
            need -= self.left;
            if self.left == 0 && self.never_carries(self.txop) {
                return None;
            }
            self.next_txop(rate);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::rng::stream;
    use lowlat_core::Bitrate;

    fn flat(mbps: u64) -> RateSchedule {
        RateSchedule::new(vec![(Time::ZERO, Bitrate::mbps(mbps))]).unwrap()
    }

    #[test]
    fn a_backlogged_channel_carries_the_schedule_rate_in_bursts() {
        let rate = flat(20);
        let cfg = WifiConfig { outage_probability: 0.0, ..WifiConfig::default() };
        let mut ch = WifiChannel::new(cfg, &rate, stream(1, "wifi"));
        let mut t = Time::ZERO;
        let mut departures = Vec::new();
        let mut sent = 0u64;
        while t < Time::from_millis(10_000) {
            t = ch.finish_time(&rate, t, Bytes(1500)).unwrap();
            departures.push(t);
            sent += 1500;
        }
        let mbps = sent as f64 * 8.0 / t.as_secs_f64() / 1e6;
        assert!((mbps - 20.0).abs() < 0.2, "{mbps} Mbit/s");
        // Aggregates: many packets leave at the same instant, and some 1 ms slots carry nothing.
        let distinct: std::collections::BTreeSet<_> = departures.iter().collect();
        assert!(
            distinct.len() * 4 < departures.len(),
            "{} TXOPs for {} packets",
            distinct.len(),
            departures.len()
        );
        let slots: std::collections::BTreeSet<_> =
            departures.iter().map(|t| t.as_nanos() / 1_000_000).collect();
        assert!(slots.len() < 10_000 * 3 / 4, "{} of 10000 slots sent", slots.len());
    }

    #[test]
    fn outages_leave_long_gaps_and_cost_capacity_beyond_one_aggregate() {
        let rate = flat(50);
        let cfg = WifiConfig { outage_probability: 0.05, ..WifiConfig::default() };
        let mut ch = WifiChannel::new(cfg, &rate, stream(2, "wifi"));
        let (mut t, mut last, mut longest, mut sent) = (Time::ZERO, Time::ZERO, Duration::ZERO, 0u64);
        while t < Time::from_millis(20_000) {
            t = ch.finish_time(&rate, t, Bytes(1500)).unwrap();
            longest = longest.max(t - last);
            last = t;
            sent += 1500;
        }
        assert!(longest > Duration::from_millis(30), "longest gap {longest}");
        let mbps = sent as f64 * 8.0 / t.as_secs_f64() / 1e6;
        // 50 Mbit/s for 20 ms = 125 kB > one aggregate: long outages lose some capacity.
        assert!(mbps < 50.0 && mbps > 40.0, "{mbps} Mbit/s");
    }

    #[test]
    fn an_idle_channel_does_not_bank_airtime_and_zero_for_ever_never_serves() {
        let rate = flat(12);
        let cfg = WifiConfig {
            outage_probability: 0.0,
            access_min: Duration::from_millis(2),
            access_max: Duration::from_millis(2),
            ..WifiConfig::default()
        };
        let mut ch = WifiChannel::new(cfg.clone(), &rate, stream(3, "wifi"));
        // 12 Mbit/s x 2 ms = 3000 B per TXOP; after a long idle time a 6000 B burst needs two.
        let a = ch.finish_time(&rate, Time::from_millis(1001), Bytes(3000)).unwrap();
        let b = ch.finish_time(&rate, a, Bytes(3000)).unwrap();
        assert_eq!(a, Time::from_millis(1002));
        assert_eq!(b, Time::from_millis(1004));
        let dead =
            RateSchedule::new(vec![(Time::ZERO, Bitrate::mbps(8)), (Time::from_millis(10), Bitrate::ZERO)])
                .unwrap();
        let mut ch = WifiChannel::new(cfg, &dead, stream(3, "wifi"));
        assert_eq!(ch.finish_time(&dead, Time::from_millis(50), Bytes(100)), None);
    }

    /// The instant from which no TXOP carries a byte is where the rule read per TXOP (highest
    /// rate from then on x longest gap < 8 bit-seconds) starts to hold, at the edge of the bound.
    #[test]
    fn silence_starts_where_the_per_txop_rule_says() {
        use rand::Rng as _;
        let mut rng = stream(4, "wifi-silence");
        for _ in 0..300 {
            let access_max = Duration(rng.random_range(MIN_ACCESS_GAP.as_nanos()..5_000_000));
            let bound = 8_000_000_000u64.div_ceil(access_max.as_nanos());
            let mut points = Vec::new();
            for k in 0..rng.random_range(1..8u64) {
                let bps =
                    bound.saturating_sub(1) + rng.random_range(0..3) - rng.random_range(0..2).min(bound);
                points.push((Time::from_millis(10 * k), Bitrate::bps(bps)));
            }
            let rate = RateSchedule::new(points).unwrap();
            let cfg = WifiConfig { access_min: MIN_ACCESS_GAP, access_max, ..WifiConfig::default() };
            let ch = WifiChannel::new(cfg, &rate, stream(1, "wifi"));
            for ms in 0..80 {
                let t = Time::from_millis(ms);
                let rule = rate.max_rate_from(t).as_bps() as u128 * u128::from(access_max.as_nanos())
                    < 8_000_000_000;
                assert_eq!(ch.never_carries(t), rule, "{t} {access_max}");
            }
        }
    }
}
