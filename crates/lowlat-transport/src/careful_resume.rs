//! Careful Resume (draft-ietf-tsvwg-careful-resume-24): a wrapper around any window controller
//! that lets a connection start from a path's saved set ([`SavedPath`]) without trusting it.
//!
//! Phases (§4):
//! - **Reconnaissance** (§4.3): the controller runs from its initial window. A loss, a min RTT
//!   of at most saved_rtt / 2 or above 10 x saved_rtt, an expired lifetime, or a jump no larger
//!   than the window leave for Normal without using the set. Once the initial window has been
//!   acknowledged without congestion, the sender jumps.
//! - **Unvalidated** (§4.4): PipeSize = flight size; cwnd = jump_cwnd = min(max_jump,
//!   saved_cwnd / 2), paced at jump_cwnd per *current* RTT. Every acknowledged byte adds to
//!   PipeSize. A loss, or an RTT sample at most saved_rtt / 2 (a path change), enters Safe
//!   Retreat. The phase ends when the flight reaches cwnd, the first
//!   packet sent in it is acknowledged, or more than one RTT has passed: with flight < IW or
//!   flight <= PipeSize, cwnd = PipeSize and Normal; else cwnd = flight and Validating.
//! - **Validating** (§4.5): the controller grows the window as usual; PipeSize is tracked; a loss
//!   enters Safe Retreat; the acknowledgement of the last unvalidated packet enters Normal.
//! - **Safe Retreat** (§4.6): the saved set is deleted; cwnd = max(floor, PipeSize / 2), whole
//!   packets, no growth; PipeSize goes on counting acknowledged bytes; once the last unvalidated
//!   packet is acknowledged or lost, ssthresh = (the latest) PipeSize x beta and Normal.
//! - **Normal**: the controller alone.
//!
//! PipeSize starts at the flight size and then counts the bytes of packets sent since the jump
//! as they are acknowledged: the flight at the jump is counted once, by the initialisation (the
//! draft's worked example: 29 in flight + 34 unvalidated packets acknowledged = 63), not again
//! when its own ACKs arrive.
//!
//! Packets are told apart by send time: the wrapper sees send instants, not packet numbers, and
//! the transport sends at most one packet per instant and connection in the unvalidated phase
//! (it is paced).

use crate::path_memory::SavedPath;
use crate::rtt::RttEstimator;
use crate::{RateSample, WindowController};
use lowlat_core::{Bitrate, Bytes, Duration, Time};

/// Careful Resume's constants (draft-ietf-tsvwg-careful-resume-24).
#[derive(Clone, Debug, PartialEq)]
pub struct CarefulResumeConfig {
    /// The maximum packet size (MPS), for whole-packet windows.
    pub max_datagram_size: Bytes,
    /// The initial window (IW): Reconnaissance's window and the floor after Unvalidated (§4.4).
    pub initial_window: Bytes,
    /// The largest jump an implementation allows (§4.4 max_jump; default: no limit of its own).
    pub max_jump: Option<Bytes>,
    /// §4.3: the set is not used when the min RTT is at most saved_rtt x this (1/2) ...
    pub rtt_low_factor: f64,
    /// ... or above saved_rtt x this (10).
    pub rtt_high_factor: f64,
    /// §4.6: ssthresh = PipeSize x beta on leaving Safe Retreat (0.5; CUBIC's 0.7 with CUBIC).
    pub beta: f64,
    /// §4.6: the window in Safe Retreat is at least this (IW).
    pub retreat_floor: Bytes,
}

impl CarefulResumeConfig {
    /// The draft's values for datagrams of `size` and a controller named `cc` (beta 0.7 for
    /// CUBIC, §4.6; 0.5 otherwise).
    pub fn for_datagram(size: Bytes, cc: &str) -> CarefulResumeConfig {
        let iw = Bytes((10 * size.0).min(14_720u64.max(2 * size.0)));
        CarefulResumeConfig {
            max_datagram_size: size,
            initial_window: iw,
            max_jump: None,
            rtt_low_factor: 0.5,
            rtt_high_factor: 10.0,
            beta: if cc == "cubic" { 0.7 } else { 0.5 },
            retreat_floor: iw,
        }
    }
}

/// Careful Resume's phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Checking the path before the jump.
    Reconnaissance,
    /// Sending at the jump window, not yet confirmed by the path.
    Unvalidated,
    /// The jump's packets are being acknowledged.
    Validating,
    /// The jump was too large: back off until the jump's packets are accounted for.
    SafeRetreat,
    /// The controller alone.
    Normal,
}

impl Phase {
    /// The phase's name in results.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Reconnaissance => "reconnaissance",
            Phase::Unvalidated => "unvalidated",
            Phase::Validating => "validating",
            Phase::SafeRetreat => "safe-retreat",
            Phase::Normal => "normal",
        }
    }
}

/// Careful Resume around a window controller.
#[derive(Debug)]
pub struct CarefulResume {
    cfg: CarefulResumeConfig,
    inner: Box<dyn WindowController>,
    saved: Option<SavedPath>,
    phase: Phase,
    /// The window while this wrapper owns it (Unvalidated, Safe Retreat).
    cwnd: u64,
    pipe_size: u64,
    flight: u64,
    acked_in_recon: u64,
    jump_cwnd: u64,
    unvalidated_since: Time,
    first_unvalidated: Option<Time>,
    last_unvalidated: Option<Time>,
    current_rtt: Duration,
    min_rtt: Option<Duration>,
    /// The first unvalidated packet was acknowledged: Unvalidated ends once the ACK frame is
    /// processed (the flight size is known then).
    first_acked: bool,
    /// Why Reconnaissance ended without a jump (for results).
    declined: Option<&'static str>,
}

impl CarefulResume {
    /// Wraps `inner`, which starts from its initial window, with the saved set `saved` (`None`:
    /// nothing saved, Normal at once).
    pub fn new(cfg: CarefulResumeConfig, inner: Box<dyn WindowController>, saved: Option<SavedPath>) -> Self {
        let phase = if saved.is_some() { Phase::Reconnaissance } else { Phase::Normal };
        CarefulResume {
            cfg,
            inner,
            saved,
            phase,
            cwnd: 0,
            pipe_size: 0,
            flight: 0,
            acked_in_recon: 0,
            jump_cwnd: 0,
            unvalidated_since: Time::ZERO,
            first_unvalidated: None,
            last_unvalidated: None,
            current_rtt: Duration::ZERO,
            min_rtt: None,
            first_acked: false,
            declined: saved.is_none().then_some("no saved set"),
        }
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// PipeSize, bytes.
    pub fn pipe_size(&self) -> u64 {
        self.pipe_size
    }

    /// The jump window, once jumped.
    pub fn jump_cwnd(&self) -> Option<u64> {
        (self.jump_cwnd > 0).then_some(self.jump_cwnd)
    }

    /// The saved set, until Safe Retreat deletes it (§4.6).
    pub fn saved(&self) -> Option<SavedPath> {
        self.saved
    }

    /// Why the saved set was not used, if it was not.
    pub fn declined(&self) -> Option<&'static str> {
        self.declined
    }

    fn decline(&mut self, why: &'static str) {
        self.phase = Phase::Normal;
        self.declined = Some(why);
    }

    /// §4.3's checks, then the jump once the initial window is acknowledged.
    fn reconnaissance(&mut self, now: Time, app_limited: bool) {
        let Some(saved) = self.saved else { return self.decline("no saved set") };
        if !saved.is_valid(now) {
            return self.decline("lifetime expired");
        }
        let Some(min_rtt) = self.min_rtt else { return };
        let (min, s) = (min_rtt.as_secs_f64(), saved.rtt.as_secs_f64());
        if min <= s * self.cfg.rtt_low_factor || min > s * self.cfg.rtt_high_factor {
            return self.decline("rtt changed");
        }
        if self.acked_in_recon < self.cfg.initial_window.0 || app_limited {
            return;
        }
        let jump = (saved.cwnd / 2).min(self.cfg.max_jump.map_or(u64::MAX, |b| b.0));
        if jump <= self.inner.window() {
            return self.decline("jump not above cwnd");
        }
        self.phase = Phase::Unvalidated;
        self.jump_cwnd = jump;
        self.cwnd = jump;
        self.pipe_size = self.flight;
        self.unvalidated_since = now;
    }

    /// §4.4: the end of Unvalidated.
    fn leave_unvalidated(&mut self, now: Time) {
        let fs = self.flight;
        if self.last_unvalidated.is_none() || fs < self.cfg.initial_window.0 || fs <= self.pipe_size {
            self.inner.set_window(now, self.pipe_size.max(self.cfg.initial_window.0), None);
            self.phase = Phase::Normal;
        } else {
            self.inner.set_window(now, fs, None);
            self.phase = Phase::Validating;
        }
    }

    /// §4.6.
    fn enter_safe_retreat(&mut self) {
        self.saved = None;
        let mps = self.cfg.max_datagram_size.0;
        let half = (self.pipe_size / 2) / mps * mps;
        self.cwnd = half.max(self.cfg.retreat_floor.0);
        self.phase = Phase::SafeRetreat;
    }

    fn leave_safe_retreat(&mut self, now: Time) {
        let ssthresh = (self.pipe_size as f64 * self.cfg.beta) as u64;
        self.inner.set_window(now, self.cwnd, Some(ssthresh));
        self.phase = Phase::Normal;
    }

    /// PipeSize += bytes of a packet sent since the jump (the flight before it is already in).
    fn track_pipe(&mut self, sent: Time, bytes: u64) {
        if self.first_unvalidated.is_some_and(|t| sent >= t) {
            self.pipe_size += bytes;
        }
    }

    fn is_last_unvalidated(&self, sent: Time) -> bool {
        self.last_unvalidated.is_none_or(|t| sent >= t)
    }
}

impl WindowController for CarefulResume {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn on_sent(&mut self, now: Time, bytes: u64, in_flight: u64) {
        self.flight = in_flight;
        if self.phase == Phase::Unvalidated {
            self.first_unvalidated.get_or_insert(now);
            self.last_unvalidated = Some(now);
        }
        self.inner.on_sent(now, bytes, in_flight);
        // The flight reached the jump window.
        if self.phase == Phase::Unvalidated && in_flight + self.cfg.max_datagram_size.0 > self.cwnd {
            self.leave_unvalidated(now);
        }
    }

    fn on_ack(&mut self, now: Time, sent: Time, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        self.current_rtt = rtt.smoothed();
        self.min_rtt = rtt.has_sample().then(|| rtt.min());
        match self.phase {
            Phase::Reconnaissance => {
                self.acked_in_recon += bytes;
                self.inner.on_ack(now, sent, bytes, app_limited, rtt);
            }
            Phase::Unvalidated => {
                self.track_pipe(sent, bytes);
                self.inner.on_ack(now, sent, bytes, app_limited, rtt);
                let saved_rtt = self.saved.map_or(Duration::ZERO, |s| s.rtt).as_secs_f64();
                if rtt.latest().as_secs_f64() <= saved_rtt * self.cfg.rtt_low_factor {
                    // §4.4 "Confirming the path during transmission": the path changed.
                    self.enter_safe_retreat();
                } else if self.first_unvalidated.is_some_and(|t| sent >= t) {
                    self.first_acked = true;
                }
            }
            Phase::Validating => {
                self.track_pipe(sent, bytes);
                self.inner.on_ack(now, sent, bytes, app_limited, rtt);
                if self.is_last_unvalidated(sent) {
                    self.phase = Phase::Normal;
                }
            }
            // No growth; PipeSize goes on measuring what the path delivers, for ssthresh.
            Phase::SafeRetreat => {
                self.track_pipe(sent, bytes);
                if self.is_last_unvalidated(sent) {
                    self.leave_safe_retreat(now);
                }
            }
            Phase::Normal => self.inner.on_ack(now, sent, bytes, app_limited, rtt),
        }
    }

    fn on_rate_sample(&mut self, now: Time, sample: &RateSample, rtt: &RttEstimator) -> bool {
        self.inner.on_rate_sample(now, sample, rtt);
        true
    }

    fn on_end_acks(&mut self, now: Time, in_flight: u64, app_limited: bool, largest_acked: u64) {
        self.flight = in_flight;
        self.inner.on_end_acks(now, in_flight, app_limited, largest_acked);
        match self.phase {
            Phase::Reconnaissance => self.reconnaissance(now, app_limited),
            Phase::Unvalidated if self.first_acked || now > self.unvalidated_since + self.current_rtt => {
                self.leave_unvalidated(now)
            }
            _ => {}
        }
    }

    fn on_congestion_event(&mut self, now: Time, sent: Time, persistent: bool, lost_bytes: u64) {
        match self.phase {
            Phase::Reconnaissance => {
                self.decline("congestion in reconnaissance");
                self.inner.on_congestion_event(now, sent, persistent, lost_bytes);
            }
            Phase::Unvalidated | Phase::Validating => {
                self.enter_safe_retreat();
                if self.last_unvalidated.is_some_and(|t| sent >= t) {
                    self.leave_safe_retreat(now);
                }
            }
            Phase::SafeRetreat => {
                if self.is_last_unvalidated(sent) {
                    self.leave_safe_retreat(now);
                }
            }
            Phase::Normal => self.inner.on_congestion_event(now, sent, persistent, lost_bytes),
        }
    }

    fn window(&self) -> u64 {
        match self.phase {
            Phase::Unvalidated | Phase::SafeRetreat => self.cwnd,
            _ => self.inner.window(),
        }
    }

    /// The phase; in Normal, the controller's own mode if it has one (BBR's `probe_bw`, ...).
    fn mode(&self) -> &'static str {
        match (self.phase, self.inner.mode()) {
            (Phase::Normal, m) if !m.is_empty() => m,
            (p, _) => p.name(),
        }
    }

    fn send_rate(&self, rtt: &RttEstimator) -> Option<Bitrate> {
        match self.phase {
            Phase::Unvalidated | Phase::SafeRetreat => rtt.has_sample().then(|| {
                Bitrate::from_bps_f64(self.cwnd as f64 * 8.0 / rtt.smoothed().as_secs_f64().max(1e-6))
            }),
            _ => self.inner.send_rate(rtt),
        }
    }

    /// §4.4: the jump is paced over the *current* RTT, jump_cwnd per RTT.
    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<Bitrate> {
        match self.phase {
            Phase::Unvalidated if rtt.has_sample() => Some(Bitrate::from_bps_f64(
                self.jump_cwnd as f64 * 8.0 / rtt.smoothed().as_secs_f64().max(1e-6),
            )),
            _ => self.inner.pacing_rate(rtt),
        }
    }

    fn set_window(&mut self, now: Time, cwnd: u64, ssthresh: Option<u64>) {
        self.inner.set_window(now, cwnd, ssthresh);
    }

    fn in_slow_start(&self) -> bool {
        matches!(self.phase, Phase::Reconnaissance) || self.inner.in_slow_start()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CubicConfig, NewRenoConfig};

    const MPS: u64 = 1200;

    fn rtt_of(ms: u64) -> RttEstimator {
        let mut r = RttEstimator::default();
        r.update(Time::ZERO, Duration::from_millis(ms), Duration::ZERO);
        r
    }

    fn saved(packets: u64, rtt_ms: u64) -> SavedPath {
        SavedPath {
            cwnd: packets * MPS,
            rtt: Duration::from_millis(rtt_ms),
            saved_at: Time::ZERO,
            lifetime: Duration::from_secs(3600),
        }
    }

    fn cr(saved_set: Option<SavedPath>) -> CarefulResume {
        let cfg = CarefulResumeConfig::for_datagram(Bytes(MPS), "newreno");
        CarefulResume::new(cfg, Box::new(NewRenoConfig::for_datagram(Bytes(MPS)).build()), saved_set)
    }

    fn t(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    /// Reconnaissance: the IW goes out at 0 and is acknowledged at 600 ms (cwnd grows to 20),
    /// more packets are sent until 29 are in flight; then the ACK frame ends and the sender jumps.
    fn to_unvalidated(c: &mut CarefulResume, rtt: &RttEstimator) {
        for _ in 0..10 {
            c.on_sent(t(0), MPS, c.flight + MPS);
        }
        for _ in 0..10 {
            c.on_ack(t(600), t(0), MPS, false, rtt);
            c.flight -= MPS;
        }
        assert_eq!(c.phase(), Phase::Reconnaissance);
        for _ in 0..29 {
            c.on_sent(t(601), MPS, c.flight + MPS);
        }
        c.on_end_acks(t(602), 29 * MPS, false, 9);
    }

    /// The draft's worked example: saved_cwnd 300 packets, IW 10, flight 29 at the jump -> cwnd
    /// 150 packets (121 unvalidated packets can be sent); 34 packets are acknowledged and the 35th
    /// is lost -> PipeSize 63, cwnd 31, and when the last unvalidated packet is accounted for,
    /// ssthresh = 63 x 0.5 = 31.5 packets.
    #[test]
    fn the_drafts_worked_example() {
        let rtt = rtt_of(600);
        let mut c = cr(Some(saved(300, 600)));
        to_unvalidated(&mut c, &rtt);
        assert_eq!(c.phase(), Phase::Unvalidated);
        assert_eq!(c.window(), 150 * MPS);
        assert_eq!(c.pipe_size(), 29 * MPS);
        // Paced at jump_cwnd per current RTT.
        let rate = c.pacing_rate(&rtt).unwrap().as_bps_f64();
        assert!((rate - 150.0 * MPS as f64 * 8.0 / 0.6).abs() < 1.0);
        // The unvalidated packets leave, paced: 121 fill the window.
        let mut flight = 29 * MPS;
        for i in 0..120 {
            flight += MPS;
            c.on_sent(t(610 + i), MPS, flight);
            assert_eq!(c.phase(), Phase::Unvalidated, "packet {i}");
        }
        // The flight reaches the window at the 121st: Validating with cwnd = flight (150).
        flight += MPS;
        c.on_sent(t(730), MPS, flight);
        assert_eq!(c.phase(), Phase::Validating);
        assert_eq!(c.window(), 150 * MPS);
        // The 29 reconnaissance packets are acknowledged (already in PipeSize), then the first 34
        // unvalidated ones.
        for _ in 0..29 {
            c.on_ack(t(1201), t(601), MPS, false, &rtt);
        }
        assert_eq!(c.pipe_size(), 29 * MPS);
        for i in 0..34 {
            c.on_ack(t(1210 + i), t(610 + i), MPS, false, &rtt);
        }
        assert_eq!(c.pipe_size(), 63 * MPS);
        // The 35th is lost.
        c.on_congestion_event(t(1250), t(644), false, MPS);
        assert_eq!(c.phase(), Phase::SafeRetreat);
        assert_eq!(c.window(), 31 * MPS);
        assert!(c.saved().is_none(), "Safe Retreat deletes the saved set");
        // The last unvalidated packet is lost too: ssthresh = 31.5 packets, Normal.
        c.on_congestion_event(t(1400), t(730), false, MPS);
        assert_eq!(c.phase(), Phase::Normal);
        assert_eq!(c.window(), 31 * MPS);
        // NewReno now in congestion avoidance from ssthresh 37800 B: cwnd 37200 < ssthresh, so
        // one more acknowledged packet grows it by a packet (slow start up to 31.5 packets).
        c.on_ack(t(1500), t(1450), MPS, false, &rtt);
        assert_eq!(c.window(), 32 * MPS);
        c.on_ack(t(1500), t(1450), MPS, false, &rtt);
        assert_eq!(c.window(), 32 * MPS, "above ssthresh 31.5 packets: congestion avoidance");
    }

    /// The example goes on: the remaining 86 unvalidated packets are acknowledged. The window
    /// does not grow; PipeSize does (63 + 86 = 149 packets), and on leaving ssthresh = 149 x 0.5.
    #[test]
    fn safe_retreat_holds_the_window_and_goes_on_measuring_the_pipe() {
        let rtt = rtt_of(600);
        let mut c = cr(Some(saved(300, 600)));
        to_unvalidated(&mut c, &rtt);
        let mut flight = 29 * MPS;
        for i in 0..121 {
            flight += MPS;
            c.on_sent(t(610 + i), MPS, flight);
        }
        for _ in 0..29 {
            c.on_ack(t(1201), t(601), MPS, false, &rtt);
        }
        for i in 0..34 {
            c.on_ack(t(1210 + i), t(610 + i), MPS, false, &rtt);
        }
        c.on_congestion_event(t(1250), t(644), false, MPS);
        assert_eq!((c.phase(), c.window(), c.pipe_size()), (Phase::SafeRetreat, 31 * MPS, 63 * MPS));
        for i in 35..120 {
            c.on_ack(t(1300 + i), t(610 + i), MPS, false, &rtt);
            assert_eq!(c.window(), 31 * MPS, "no growth in Safe Retreat");
        }
        assert_eq!(c.phase(), Phase::SafeRetreat);
        c.on_ack(t(1500), t(730), MPS, false, &rtt); // the last unvalidated packet
        assert_eq!(c.phase(), Phase::Normal);
        assert_eq!(c.pipe_size(), 149 * MPS);
        // NewReno from cwnd 31 packets below ssthresh 74.5: slow start, a packet per packet.
        c.on_ack(t(1600), t(1550), MPS, false, &rtt);
        assert_eq!(c.window(), 32 * MPS);
        assert!(c.in_slow_start());
    }

    #[test]
    fn an_rtt_below_half_the_saved_one_in_unvalidated_is_a_path_change() {
        let rtt = rtt_of(600);
        let mut c = cr(Some(saved(300, 600)));
        to_unvalidated(&mut c, &rtt);
        c.on_sent(t(610), MPS, 30 * MPS);
        let mut fast = rtt;
        fast.update(t(900), Duration::from_millis(290), Duration::ZERO);
        c.on_ack(t(900), t(601), MPS, false, &fast);
        assert_eq!(c.phase(), Phase::SafeRetreat);
        assert_eq!(c.window(), 14 * MPS, "max(IW, PipeSize 29 packets / 2)");
    }

    #[test]
    fn a_rate_limited_jump_resets_the_window_to_the_flight_and_validates() {
        let rtt = rtt_of(600);
        let cfg = CarefulResumeConfig::for_datagram(Bytes(MPS), "cubic");
        assert_eq!(cfg.beta, 0.7);
        let mut c = CarefulResume::new(
            cfg,
            Box::new(CubicConfig::for_datagram(Bytes(MPS)).build()),
            Some(saved(300, 600)),
        );
        to_unvalidated(&mut c, &rtt);
        let mut flight = 29 * MPS;
        for i in 0..50 {
            flight += MPS;
            c.on_sent(t(610 + i), MPS, flight);
        }
        for _ in 0..29 {
            c.on_ack(t(1201), t(601), MPS, false, &rtt);
        }
        // The draft's second example: only 50 unvalidated packets (the sender is rate-limited).
        // The first one's ACK ends Unvalidated once its frame is processed: the flight (79 - 30
        // = 49 packets) is above PipeSize (29 + 1) -> Validating with cwnd = flight.
        c.on_ack(t(1210), t(610), MPS, false, &rtt);
        assert_eq!(c.phase(), Phase::Unvalidated);
        c.on_end_acks(t(1210), 49 * MPS, false, 40);
        assert_eq!(c.phase(), Phase::Validating);
        assert_eq!(c.window(), 49 * MPS);
        // The ACK of the last unvalidated packet (sent at 659 ms) ends Careful Resume.
        for i in 1..50 {
            c.on_ack(t(1210 + i), t(610 + i), MPS, false, &rtt);
        }
        assert_eq!(c.phase(), Phase::Normal);
        assert_eq!(c.pipe_size(), 79 * MPS);
    }

    #[test]
    fn a_loss_in_unvalidated_retreats_and_the_ack_of_the_last_packet_ends_it() {
        let rtt = rtt_of(600);
        let cfg = CarefulResumeConfig::for_datagram(Bytes(MPS), "cubic");
        let mut c = CarefulResume::new(
            cfg,
            Box::new(CubicConfig::for_datagram(Bytes(MPS)).build()),
            Some(saved(300, 600)),
        );
        to_unvalidated(&mut c, &rtt);
        let mut flight = 29 * MPS;
        for i in 0..40 {
            flight += MPS;
            c.on_sent(t(610 + i), MPS, flight);
        }
        // 20 reconnaissance packets acknowledged, then a loss among them.
        for _ in 0..20 {
            c.on_ack(t(1201), t(601), MPS, false, &rtt);
        }
        c.on_congestion_event(t(1202), t(601), false, MPS);
        assert_eq!(c.phase(), Phase::SafeRetreat);
        assert_eq!(c.pipe_size(), 29 * MPS);
        assert_eq!(c.window(), 14 * MPS, "max(IW, PipeSize / 2) in whole packets");
        // The last unvalidated packet (sent at 649 ms) is acknowledged: ssthresh = 0.7 x 30
        // packets = 21, above the window: CUBIC slow-starts from 14 packets up to 21, then
        // follows its curve.
        c.on_ack(t(1250), t(649), MPS, false, &rtt);
        assert_eq!(c.phase(), Phase::Normal);
        assert_eq!(c.window(), 14 * MPS);
        assert!(c.in_slow_start());
        for _ in 0..7 {
            c.on_ack(t(1900), t(1300), MPS, false, &rtt);
        }
        assert_eq!(c.window(), 21 * MPS, "slow start reaches ssthresh");
        assert!(!c.in_slow_start());
        c.on_ack(t(2500), t(1950), MPS, false, &rtt);
        assert!(c.window() >= 21 * MPS && c.window() < 22 * MPS, "then the cubic curve, flat at first");
    }

    #[test]
    fn unvalidated_ends_after_one_rtt_with_a_small_flight() {
        let rtt = rtt_of(600);
        let mut c = cr(Some(saved(300, 600)));
        to_unvalidated(&mut c, &rtt);
        // Nothing more is sent (the application had little), the flight drains below IW.
        for _ in 0..25 {
            c.on_ack(t(1201), t(601), MPS, false, &rtt);
        }
        c.on_end_acks(t(1203), 4 * MPS, true, 30);
        assert_eq!(c.phase(), Phase::Normal);
        assert_eq!(c.window(), 29 * MPS, "cwnd = PipeSize (the flight at the jump)");
    }

    #[test]
    fn reconnaissance_declines_on_rtt_change_expiry_loss_small_jump_or_no_set() {
        // RTT at most half the saved one.
        let mut c = cr(Some(saved(300, 600)));
        c.on_ack(t(300), t(0), MPS, false, &rtt_of(300));
        c.on_end_acks(t(300), 0, false, 0);
        assert_eq!((c.phase(), c.declined()), (Phase::Normal, Some("rtt changed")));
        // More than 10 x the saved one.
        let mut c = cr(Some(saved(300, 50)));
        c.on_ack(t(600), t(0), MPS, false, &rtt_of(600));
        c.on_end_acks(t(600), 0, false, 0);
        assert_eq!(c.declined(), Some("rtt changed"));
        // Lifetime expired.
        let mut s = saved(300, 600);
        s.lifetime = Duration::from_millis(100);
        let mut c = cr(Some(s));
        c.on_ack(t(600), t(0), MPS, false, &rtt_of(600));
        c.on_end_acks(t(600), 0, false, 0);
        assert_eq!(c.declined(), Some("lifetime expired"));
        // A loss before the jump.
        let mut c = cr(Some(saved(300, 600)));
        c.on_congestion_event(t(700), t(0), false, MPS);
        assert_eq!(c.declined(), Some("congestion in reconnaissance"));
        assert_eq!(c.window(), 6000, "NewReno halved the IW");
        // A saved window whose half is no more than the window already open.
        let rtt = rtt_of(600);
        let mut c = cr(Some(saved(30, 600)));
        to_unvalidated(&mut c, &rtt);
        assert_eq!(c.declined(), Some("jump not above cwnd"));
        assert_eq!(cr(None).phase(), Phase::Normal);
    }

    #[test]
    fn validating_ends_on_the_ack_of_the_last_unvalidated_packet() {
        let rtt = rtt_of(600);
        let mut c = cr(Some(saved(300, 600)));
        to_unvalidated(&mut c, &rtt);
        let mut flight = 29 * MPS;
        for i in 0..121 {
            flight += MPS;
            c.on_sent(t(610 + i), MPS, flight);
        }
        assert_eq!(c.phase(), Phase::Validating);
        for i in 0..120 {
            c.on_ack(t(1210 + i), t(610 + i), MPS, false, &rtt);
            assert_eq!(c.phase(), Phase::Validating);
        }
        c.on_ack(t(1331), t(730), MPS, false, &rtt);
        assert_eq!(c.phase(), Phase::Normal);
        assert!(c.window() >= 150 * MPS, "slow start went on from the flight");
    }
}
