//! The RTC sender of the SCONE-PRO hackathon (IETF 120, "A possible attempt to use sconepro for
//! RTC scenario"): the access point tells the sender its capacity and queue length, and the
//! sender sets its rates from them directly.
//!
//! ```text
//! SndRate = 0.9 x Capacity - QLen / T_e              (pacing rate)
//! BitRate = SndRate - Queue(sender) / T_e            (encoder target)
//! ```
//! `T_e` ("empty time") is how fast both queues are to be emptied; the seed suggests 100-200 ms.
//! The encoder target stays within `[min_rate, max_rate]`; the pacer follows SndRate (above
//! `max_rate` when the link allows, so the sender's queue drains; below `min_rate`, down to
//! `pacing_floor`, when the link carries less, so frames wait at the sender, which drops stale
//! ones, rather than in the AP's queue).
//!
//! Between signals the sender keeps the last `SndRate` and recomputes `BitRate` whenever the
//! sender's queue is reported ([`RateController::on_send_queue`]): the network's state is only
//! as fresh as the last signal, the sender's own is always current.
//!
//! When no signal has come for `signal_timeout` (an AP without SCONE-PRO, lost signals), the
//! sender falls back to a named feedback-driven controller (`fallback`, GCC by default). The
//! fallback sees every packet and feedback report all along, so it is warm when it takes over;
//! the next signal hands control back.
//!
//! The standard SCONE packet carries only a long-term ceiling (`NetworkSignal::long_term`):
//! draft-ietf-scone-protocol §4.2-4.4 has the application apply the lowest advice received
//! within a 67 s monitoring period, and let it expire after a period without advice. The
//! ceiling caps the encoder target whichever rule is in control.

use crate::{FeedbackReport, NetworkSignal, RateController, SentPacket};
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// The constants of [`SconePro`]; the defaults are the seed's.
#[derive(Clone, Debug, PartialEq)]
pub struct SconeProConfig {
    /// Share of the signalled capacity to send at (0.9, the seed's rule).
    pub capacity_share: f64,
    /// T_e, the time to empty the AP's and the sender's queues (150 ms, the middle of the
    /// seed's 100-200 ms).
    pub empty_time: Duration,
    /// No capacity signal for this long: the fallback controller takes over (250 ms: five
    /// signals missed at the longest period, 50 ms, the spec suggests).
    pub signal_timeout: Duration,
    /// Lowest pacing rate, so the pacer's clock stays finite when SndRate is zero or negative
    /// (16 kbit/s: a 1000-byte packet every 0.5 s); the AP's signal, not the sender's packets,
    /// tells the sender when capacity returns.
    pub pacing_floor: Bitrate,
    /// The fallback's start rate (it is in control until the first signal).
    pub start_rate: Bitrate,
    /// Lowest rate.
    pub min_rate: Bitrate,
    /// Highest rate.
    pub max_rate: Bitrate,
    /// The standard advice's monitoring period (67 s, draft-ietf-scone-protocol §4.2).
    pub advice_period: Duration,
    /// The controller that runs without signals: `gcc` (default), `nada`, `scream`, `scream2`
    /// or `fixed`.
    pub fallback: String,
}

impl Default for SconeProConfig {
    fn default() -> Self {
        SconeProConfig {
            capacity_share: 0.9,
            empty_time: Duration::from_millis(150),
            signal_timeout: Duration::from_millis(250),
            pacing_floor: Bitrate::kbps(16),
            start_rate: Bitrate::kbps(300),
            min_rate: Bitrate::kbps(150),
            max_rate: Bitrate::kbps(1500),
            advice_period: Duration::from_secs(67),
            fallback: "gcc".into(),
        }
    }
}

crate::tunable!(SconeProConfig {
    capacity_share,
    empty_time,
    signal_timeout,
    pacing_floor,
    start_rate,
    min_rate,
    max_rate,
    advice_period,
    fallback
});

/// The controllers a SCONE-PRO sender can fall back to.
pub const FALLBACKS: &[&str] = &["gcc", "nada", "scream", "scream2", "fixed"];

impl SconeProConfig {
    /// Checks each constant's range and their relations (min_rate <= start_rate <= max_rate, the
    /// share in (0, 1], periods above zero, a known fallback): `Err("key: got .., expected ..")`.
    pub fn validate(&self) -> Result<(), String> {
        use crate::tunable::bounds::{MAX_INTERVAL, MAX_RATE};
        use crate::tunable::range::{above_up_to, within};
        above_up_to("capacity_share", self.capacity_share, 0.0, 1.0)?;
        for (k, d) in [
            ("empty_time", self.empty_time),
            ("signal_timeout", self.signal_timeout),
            ("advice_period", self.advice_period),
        ] {
            above_up_to(k, d, Duration::ZERO, MAX_INTERVAL)?;
        }
        within("pacing_floor", self.pacing_floor, Bitrate::ZERO, MAX_RATE)?;
        crate::tunable::check_rate_range(self.min_rate, self.start_rate, self.max_rate)?;
        if !FALLBACKS.contains(&self.fallback.as_str()) {
            return Err(format!(
                "fallback: got {:?}, expected one of {}",
                self.fallback,
                FALLBACKS.join(", ")
            ));
        }
        Ok(())
    }

    /// Builds the sender around `fallback` (built by the caller from [`SconeProConfig::fallback`]).
    pub fn build(&self, fallback: Box<dyn RateController>) -> Result<SconePro, String> {
        self.validate()?;
        Ok(SconePro {
            cfg: self.clone(),
            fallback,
            snd_rate: None,
            last_signal: None,
            sender_queue: Bytes(0),
            advice: VecDeque::new(),
            now: Time::ZERO,
        })
    }
}

/// The SCONE-PRO RTC sender.
#[derive(Debug)]
pub struct SconePro {
    cfg: SconeProConfig,
    fallback: Box<dyn RateController>,
    /// SndRate from the last capacity signal, bit/s (may be below `min_rate` before clamping).
    snd_rate: Option<f64>,
    last_signal: Option<Time>,
    sender_queue: Bytes,
    /// Standard advice received within the last monitoring period: `(when, ceiling)`.
    advice: VecDeque<(Time, Bitrate)>,
    /// The latest instant it was driven at (read-outs take no `now`).
    now: Time,
}

impl SconePro {
    /// `SndRate = share x capacity - queue / T_e`, bit/s (unclamped).
    pub fn snd_rate_for(cfg: &SconeProConfig, capacity: Bitrate, queue: Bytes) -> f64 {
        cfg.capacity_share * capacity.as_bps_f64() - queue.bits() as f64 / cfg.empty_time.as_secs_f64()
    }

    /// `BitRate = snd_rate - sender_queue / T_e`, bit/s (unclamped).
    pub fn bit_rate_for(cfg: &SconeProConfig, snd_rate: f64, sender_queue: Bytes) -> f64 {
        snd_rate - sender_queue.bits() as f64 / cfg.empty_time.as_secs_f64()
    }

    /// Whether the capacity rule is in control (a signal within `signal_timeout`).
    pub fn is_signalled(&self) -> bool {
        self.last_signal.is_some_and(|t| self.now.saturating_since(t) <= self.cfg.signal_timeout)
    }

    /// The standard advice's ceiling now: the lowest advice of the last monitoring period.
    pub fn ceiling(&self) -> Option<Bitrate> {
        self.advice
            .iter()
            .filter(|(t, _)| self.now.saturating_since(*t) < self.cfg.advice_period)
            .map(|a| a.1)
            .min()
    }

    fn clamp(&self, bps: f64) -> Bitrate {
        let r = Bitrate::from_bps_f64(bps.max(0.0)).clamp(self.cfg.min_rate, self.cfg.max_rate);
        self.ceiling().map_or(r, |c| r.min(c.max(self.cfg.min_rate)))
    }

    fn advance(&mut self, now: Time) {
        self.now = self.now.max(now);
        while self
            .advice
            .front()
            .is_some_and(|(t, _)| self.now.saturating_since(*t) >= self.cfg.advice_period)
        {
            self.advice.pop_front();
        }
    }
}

impl RateController for SconePro {
    fn name(&self) -> &'static str {
        "scone-pro"
    }

    fn on_packet_sent(&mut self, now: Time, packet: &SentPacket) {
        self.advance(now);
        self.fallback.on_packet_sent(now, packet);
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        self.advance(now);
        self.fallback.on_feedback(now, report);
    }

    fn on_network_signal(&mut self, now: Time, signal: &NetworkSignal) {
        self.advance(now);
        if signal.long_term {
            self.advice.push_back((now, signal.capacity));
        } else {
            self.snd_rate = Some(Self::snd_rate_for(&self.cfg, signal.capacity, signal.queue));
            self.last_signal = Some(now);
        }
    }

    fn on_send_queue(&mut self, now: Time, bytes: Bytes, delay: Duration) {
        self.advance(now);
        self.sender_queue = bytes;
        self.fallback.on_send_queue(now, bytes, delay);
    }

    fn can_send(&self, now: Time, size: Bytes) -> bool {
        self.is_signalled() || self.fallback.can_send(now, size)
    }

    fn wants_padding(&self, now: Time) -> bool {
        !self.is_signalled() && self.fallback.wants_padding(now)
    }

    fn handle_timeout(&mut self, now: Time) {
        self.advance(now);
        if self.fallback.poll_timeout().is_some_and(|t| t <= now) {
            self.fallback.handle_timeout(now);
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        // Wake when the signal goes stale, so the fallback takes over on time.
        let stale =
            self.last_signal.map(|t| t + self.cfg.signal_timeout + Duration(1)).filter(|&t| t > self.now);
        [self.fallback.poll_timeout(), stale].into_iter().flatten().min()
    }

    fn target_bitrate(&self) -> Bitrate {
        match self.snd_rate.filter(|_| self.is_signalled()) {
            Some(snd) => self.clamp(Self::bit_rate_for(&self.cfg, snd, self.sender_queue)),
            None => self.clamp(self.fallback.target_bitrate().as_bps_f64()),
        }
    }

    fn pacing_rate(&self) -> Bitrate {
        match self.snd_rate.filter(|_| self.is_signalled()) {
            // The pacer sends at SndRate, what the network can take: it drains the sender queue
            // at Queue(sender) / T_e while the encoder produces BitRate. Not capped at
            // `max_rate`, the encoder's bound: pacing at the encoder's own rate would leave no
            // room for headers and frame-size noise, and the queue would grow until
            // Queue(sender) / T_e brought SndRate down to it. Not raised to `min_rate` either:
            // when the link carries less than the encoder's floor, packets wait at the sender
            // (whose queue drops stale frames) instead of filling the AP's queue.
            Some(snd) => Bitrate::from_bps_f64(snd).max(self.cfg.pacing_floor),
            None => self.fallback.pacing_rate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FixedRateConfig;

    fn sender(cfg: SconeProConfig) -> SconePro {
        let fallback = FixedRateConfig { rate: Bitrate::kbps(700), pacing_factor: 1.5 }.build().unwrap();
        cfg.build(Box::new(fallback)).unwrap()
    }

    fn capacity(c: Bitrate, q: Bytes) -> NetworkSignal {
        NetworkSignal { capacity: c, queue: q, long_term: false }
    }

    #[test]
    fn the_rule_gives_the_formulas_numbers() {
        let cfg = SconeProConfig {
            max_rate: Bitrate::mbps(100),
            min_rate: Bitrate::kbps(10),
            ..Default::default()
        };
        let mut s = sender(cfg);
        // 10 Mbit/s, 30 000 B queued at the AP, T_e = 150 ms:
        // SndRate = 9 Mbit/s - 240 000 bit / 0.15 s = 9 - 1.6 = 7.4 Mbit/s.
        s.on_network_signal(Time::from_millis(100), &capacity(Bitrate::mbps(10), Bytes(30_000)));
        assert_eq!(s.pacing_rate(), Bitrate::kbps(7_400));
        assert_eq!(s.target_bitrate(), Bitrate::kbps(7_400));
        // 15 000 B waiting at the sender: BitRate = 7.4 - 120 000 / 0.15 = 7.4 - 0.8 = 6.6 Mbit/s.
        s.on_send_queue(Time::from_millis(110), Bytes(15_000), Duration::from_millis(10));
        assert_eq!(s.target_bitrate(), Bitrate::kbps(6_600));
        assert_eq!(s.pacing_rate(), Bitrate::kbps(7_400));
        // T_e = 100 ms and share 0.8: SndRate = 8 - 2.4 = 5.6, BitRate = 5.6 - 1.2 = 4.4 Mbit/s.
        assert_eq!(
            SconePro::snd_rate_for(
                &SconeProConfig {
                    capacity_share: 0.8,
                    empty_time: Duration::from_millis(100),
                    ..Default::default()
                },
                Bitrate::mbps(10),
                Bytes(30_000)
            ),
            5_600_000.0
        );
        // The encoder stops at max_rate; the pacer keeps SndRate (headroom to drain its queue).
        let mut capped = sender(SconeProConfig { max_rate: Bitrate::mbps(2), ..Default::default() });
        capped.on_network_signal(Time::from_millis(100), &capacity(Bitrate::mbps(10), Bytes(0)));
        assert_eq!((capped.target_bitrate(), capped.pacing_rate()), (Bitrate::mbps(2), Bitrate::mbps(9)));
        // A queue larger than T_e x capacity: the rule asks for a negative rate; the encoder stays
        // at its floor, the pacer drops to the pacing floor (the sender's queue absorbs it).
        s.on_network_signal(Time::from_millis(120), &capacity(Bitrate::mbps(1), Bytes(100_000)));
        assert_eq!(s.target_bitrate(), Bitrate::kbps(10));
        assert_eq!(s.pacing_rate(), Bitrate::kbps(16));
        // A link slower than the encoder's floor: paced at 0.9 x 20 kbit/s, not at min_rate.
        s.on_network_signal(Time::from_millis(140), &capacity(Bitrate::kbps(20), Bytes(0)));
        assert_eq!((s.target_bitrate(), s.pacing_rate()), (Bitrate::kbps(10), Bitrate::kbps(18)));
    }

    #[test]
    fn holds_between_signals_and_falls_back_when_they_stop() {
        let cfg = SconeProConfig { max_rate: Bitrate::mbps(20), ..Default::default() };
        let mut s = sender(cfg.clone());
        assert_eq!(s.target_bitrate(), Bitrate::kbps(700), "the fallback's rate before any signal");
        s.on_network_signal(Time::from_millis(1000), &capacity(Bitrate::mbps(5), Bytes(0)));
        assert!(s.is_signalled());
        assert_eq!(s.target_bitrate(), Bitrate::kbps(4_500));
        // Between signals: the last SndRate holds; only the sender's queue moves BitRate.
        s.on_send_queue(Time::from_millis(1200), Bytes(0), Duration::ZERO);
        assert_eq!(s.target_bitrate(), Bitrate::kbps(4_500));
        assert_eq!(s.poll_timeout(), Some(Time::from_millis(1250) + Duration(1)));
        // Signals stop: after signal_timeout the fallback (fixed 700 kbit/s) is in control.
        s.handle_timeout(Time::from_millis(1250) + Duration(1));
        assert!(!s.is_signalled());
        assert_eq!(s.target_bitrate(), Bitrate::kbps(700));
        assert_eq!(s.pacing_rate(), Bitrate::kbps(1_050));
        // The next signal takes control back.
        s.on_network_signal(Time::from_millis(1400), &capacity(Bitrate::mbps(2), Bytes(0)));
        assert_eq!(s.target_bitrate(), Bitrate::kbps(1_800));
    }

    #[test]
    fn standard_advice_is_a_ceiling_over_the_monitoring_period() {
        let mut s = sender(SconeProConfig { max_rate: Bitrate::mbps(20), ..Default::default() });
        let advice = |c| NetworkSignal { capacity: c, queue: Bytes(0), long_term: true };
        s.on_network_signal(Time::from_secs(1), &advice(Bitrate::kbps(500)));
        // Advice alone does not take control: the fallback runs, capped at the advice.
        assert!(!s.is_signalled());
        assert_eq!(s.target_bitrate(), Bitrate::kbps(500));
        // A higher advice within the period does not lift the ceiling (the lowest applies).
        s.on_network_signal(Time::from_secs(30), &advice(Bitrate::mbps(10)));
        assert_eq!(s.target_bitrate(), Bitrate::kbps(500));
        // 67 s after the low advice it expires; the later one still caps nothing below 700k.
        s.handle_timeout(Time::from_secs(68));
        assert_eq!(s.ceiling(), Some(Bitrate::mbps(10)));
        assert_eq!(s.target_bitrate(), Bitrate::kbps(700));
        // It caps the capacity rule too.
        s.on_network_signal(Time::from_secs(69), &advice(Bitrate::mbps(1)));
        s.on_network_signal(Time::from_secs(69), &capacity(Bitrate::mbps(5), Bytes(0)));
        assert_eq!(s.target_bitrate(), Bitrate::mbps(1));
        // After a whole period without advice there is no ceiling.
        s.handle_timeout(Time::from_secs(140));
        assert_eq!(s.ceiling(), None);
    }

    #[test]
    fn bad_constants_are_named() {
        let bad = |c: SconeProConfig| c.validate().unwrap_err();
        assert!(bad(SconeProConfig { empty_time: Duration::ZERO, ..Default::default() })
            .starts_with("empty_time"));
        assert!(
            bad(SconeProConfig { capacity_share: 1.5, ..Default::default() }).starts_with("capacity_share")
        );
        assert!(bad(SconeProConfig { fallback: "copa".into(), ..Default::default() }).starts_with("fallback"));
        use crate::Tunable;
        let mut c = SconeProConfig::default();
        c.set("fallback", "nada").unwrap();
        c.set("empty_time", "120 ms").unwrap();
        assert_eq!((c.fallback.as_str(), c.empty_time), ("nada", Duration::from_millis(120)));
    }
}
