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

pub mod ack;
pub mod cubic;
pub mod newreno;
pub mod receiver;
pub mod rtt;
pub mod sender;

pub use ack::AckFrame;
pub use cubic::{Cubic, CubicConfig};
pub use newreno::{NewReno, NewRenoConfig};
pub use receiver::{Receiver, ReceiverConfig};
pub use rtt::RttEstimator;
pub use sender::{Sender, SenderConfig, SenderStats};

use lowlat_core::{Bitrate, Time};

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

    /// All packets of one ACK frame have been processed.
    fn on_end_acks(&mut self, _now: Time, _in_flight: u64, _app_limited: bool, _largest_acked: u64) {}

    /// Packets were declared lost; `sent` is when the newest of them left. A controller reacts
    /// once per recovery period (to packets sent after the previous reaction).
    fn on_congestion_event(&mut self, now: Time, sent: Time, persistent: bool, lost_bytes: u64);

    /// The congestion window.
    fn window(&self) -> u64;

    /// The pacing rate the controller wants (`None`: the sender's default, 1.25 x window / RTT).
    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<Bitrate> {
        None
    }
}
