//! An ack-clocked reliable transport, sans-IO, and the window-based congestion controllers that
//! run over it.
//!
//! The transport is QUIC-like (RFC 9000/9002): every packet has a new packet number, the receiver
//! acknowledges ranges of them with an ACK delay ([`ack`]), and the sender ([`sender`]) detects
//! losses by packet and time thresholds, arms a probe timeout, retransmits lost data in new
//! packets and paces its sending. The receiver ([`receiver`]) sends an ACK every second packet or
//! after `max_ack_delay`, at once when a gap appears.
//!
//! The sender's bookkeeping costs O(1) amortised per packet sent or acknowledged: sent packets sit
//! in a ring indexed by packet number, ACK ranges are walked only above the previous largest
//! acknowledged, and holes below it are kept in a short list of suspects, never by rescanning the
//! window (ns-3's TCP slows down tenfold at large bandwidth-delay products because it does).
//!
//! Controllers implement [`WindowController`] (close to quinn-proto's `congestion::Controller`):
//! - [`newreno`]: NewReno as RFC 9002 §7 specifies it.
//! - [`cubic`]: CUBIC (RFC 9438) with HyStart++ (RFC 9406).
//! - [`bbr`]: BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00).
//! - [`copa`]: Copa (NSDI 2018) with its competitive mode.
//!
//! Fast start-up from a path seen before ([`path_memory`] saves what a connection learnt):
//! - [`careful_resume`]: Careful Resume (draft-ietf-tsvwg-careful-resume-24), a wrapper around
//!   any of the controllers.
//! - [`seed_jump`]: the simpler jumps it is compared with, the seed talk's 0-RTT-BDP and
//!   picoquic's rule.
//!
//! Each ACK frame also yields a delivery-rate sample ([`RateSample`], draft-cheng-iccrg-delivery-
//! rate-estimation) that model-based controllers read; [`filter`] has the windowed min/max
//! filters they keep their estimates in.

pub mod ack;
pub mod bbr;
pub mod careful_resume;
pub mod copa;
pub mod copa_artifact;
pub mod cubic;
pub mod filter;
pub mod newreno;
pub mod path_memory;
pub mod receiver;
pub mod rtt;
pub mod seed_jump;
pub mod sender;

pub use ack::{AckFrame, AckRanges, EcnCounts};
pub use bbr::{Bbr, BbrConfig};
pub use careful_resume::{CarefulResume, CarefulResumeConfig, Phase};
pub use copa::{Copa, CopaConfig, CopaVariant};
pub use copa_artifact::{CopaArtifact, CopaArtifactConstants};
pub use cubic::{Cubic, CubicConfig};
pub use newreno::{NewReno, NewRenoConfig};
pub use path_memory::{PathObserver, SavedPath};
pub use receiver::{Receiver, ReceiverConfig};
pub use rtt::RttEstimator;
pub use seed_jump::{JumpRule, SeedJump};
pub use sender::{SendPermit, Sender, SenderConfig, SenderStats, TcpRecovery};

use lowlat_core::{Bitrate, Duration, Time};

/// What one ACK frame says about the path's delivery rate (draft-cheng-iccrg-delivery-rate-
/// estimation): bytes delivered between the newest acknowledged packet's send and now, over the
/// longer of its send and ACK intervals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    /// `delivered / interval`; `None` when the interval is shorter than the minimum RTT (an ACK
    /// compression artefact) or empty.
    pub delivery_rate: Option<Bitrate>,
    /// Bytes delivered over the interval.
    pub delivered: u64,
    /// The sample's interval.
    pub interval: Duration,
    /// Bytes delivered before the newest acknowledged packet was sent (BBR's round counting).
    pub prior_delivered: u64,
    /// Bytes delivered since the start.
    pub total_delivered: u64,
    /// Whether the sender had nothing to send while that packet was in flight: the rate then
    /// understates the path.
    pub is_app_limited: bool,
    /// Bytes newly acknowledged by this frame.
    pub newly_acked: u64,
    /// Packets newly declared lost while processing this frame.
    pub newly_lost_packets: u64,
    /// Round-trip time of the newest acknowledged packet (ACK delay included).
    pub rtt: Duration,
    /// Bytes in flight after this frame.
    pub in_flight: u64,
}

/// Which of the sender's signals a controller reads ([`WindowController::reads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reads {
    /// [`WindowController::on_sent`].
    pub sent: bool,
    /// [`WindowController::on_ack`] and [`WindowController::on_end_acks`].
    pub acks: bool,
    /// [`WindowController::on_rate_sample`].
    pub rate_samples: bool,
    /// [`RateSample::delivery_rate`] (without it the field is `None`).
    pub delivery_rate: bool,
    /// The rest of a [`RateSample`] but `newly_acked`, `newly_lost_packets` and `rtt`: the
    /// delivery bookkeeping of its newest packet (without it `delivered`, `interval`,
    /// `prior_delivered`, `total_delivered` and `in_flight` are zero, `is_app_limited` false).
    pub sample_details: bool,
}

impl Reads {
    /// Everything (the default: a controller that says nothing gets every signal).
    pub const ALL: Reads =
        Reads { sent: true, acks: true, rate_samples: true, delivery_rate: true, sample_details: true };
}

/// A window-based congestion controller.
///
/// Optional hooks have do-nothing defaults. All sizes are bytes.
pub trait WindowController: std::fmt::Debug + Send + Sync {
    /// A short name for results (`"newreno"`, `"cubic"`, ...).
    fn name(&self) -> &'static str;

    /// A packet of `bytes` left; `in_flight` counts it.
    fn on_sent(&mut self, _now: Time, _bytes: u64, _in_flight: u64) {}

    /// A packet sent at `sent` and holding `bytes` was acknowledged.
    fn on_ack(&mut self, now: Time, sent: Time, bytes: u64, app_limited: bool, rtt: &RttEstimator);

    /// The delivery-rate sample of one ACK frame, after its packets and any losses it revealed
    /// were processed and before [`WindowController::on_end_acks`]. Returns whether
    /// [`WindowController::window`] or [`WindowController::pacing_rate`] may now give something
    /// new (`true` if unsure; a pacing rate that reads the estimator counts as new): the sender
    /// reads them again only then (two dynamic calls per ACK, where the artifact's Copa moves
    /// once per half RTT).
    fn on_rate_sample(&mut self, _now: Time, _sample: &RateSample, _rtt: &RttEstimator) -> bool {
        false
    }

    /// [`WindowController::on_rate_sample`] for a controller that does not read
    /// [`Reads::sample_details`]: the three fields of the sample that are set then, as
    /// arguments (the sender calls this per ACK; a sample built in memory for them cost a dozen
    /// stores and loads). Default: the whole sample, to `on_rate_sample`.
    fn on_rtt_sample(
        &mut self,
        now: Time,
        rtt: Duration,
        newly_acked: u64,
        newly_lost_packets: u64,
        estimator: &RttEstimator,
    ) -> bool {
        let sample = RateSample {
            delivery_rate: None,
            delivered: 0,
            interval: Duration::ZERO,
            prior_delivered: 0,
            total_delivered: 0,
            is_app_limited: false,
            newly_acked,
            newly_lost_packets,
            rtt,
            in_flight: 0,
        };
        self.on_rate_sample(now, &sample, estimator)
    }

    /// The controller's state, for logs and tests (`"startup"`, `"competitive"`, ...); `""` if
    /// it has none.
    fn mode(&self) -> &'static str {
        ""
    }

    /// All packets of one ACK frame have been processed.
    fn on_end_acks(&mut self, _now: Time, _in_flight: u64, _app_limited: bool, _largest_acked: u64) {}

    /// Packets were declared lost; `sent` is when the newest of them left. A controller reacts
    /// once per recovery period (to packets sent after the previous reaction).
    fn on_congestion_event(&mut self, now: Time, sent: Time, persistent: bool, lost_bytes: u64);

    /// Which of the sender's signals the controller reads: the sender skips the others (dynamic
    /// calls of empty methods, and rate samples built for nobody, cost a fifth of a Copa
    /// sender's work per ACK). Asked once, when the sender is built.
    fn reads(&self) -> Reads {
        Reads::ALL
    }

    /// The congestion window. The sender reads it (and [`WindowController::pacing_rate`]) again
    /// only after calling into the controller or updating its RTT estimator, so it must depend
    /// on nothing else (no clock of its own).
    fn window(&self) -> u64;

    /// The rate the controller means to send at, for an application that sets its own rate from
    /// it (a video encoder). Default: one window per smoothed RTT.
    fn send_rate(&self, rtt: &RttEstimator) -> Option<Bitrate> {
        rtt.has_sample().then(|| {
            Bitrate::from_bps_f64(self.window() as f64 * 8.0 / rtt.smoothed().as_secs_f64().max(1e-6))
        })
    }

    /// The pacing rate the controller wants (`None`: the sender's default, 1.25 x window / RTT).
    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<Bitrate> {
        None
    }

    /// A start-up rule ([`careful_resume`], [`seed_jump`]) sets the window from outside; with
    /// `ssthresh`, slow start ends there and a recovery period starts at `now` (losses of packets
    /// sent before do not reduce the window again). Controllers without a window of their own to
    /// set ignore it.
    fn set_window(&mut self, _now: Time, _cwnd: u64, _ssthresh: Option<u64>) {}

    /// Whether the controller is still in slow start (its window then overshoots the path, so a
    /// saved path takes half of it, draft-ietf-tsvwg-careful-resume-24 §4.2).
    fn in_slow_start(&self) -> bool {
        false
    }
}
