//! Sender congestion controllers, sans-IO.
//!
//! A controller never reads a clock or touches a socket: it is handed `now` and what the sender
//! learnt (a packet was sent, a feedback report arrived, the network signalled its capacity), and it
//! answers through its read-outs ([`RateController::target_bitrate`],
//! [`RateController::pacing_rate`]) and [`RateController::poll_timeout`]. The simulator, the
//! emulator and a real RTP stack drive the same code.
//!
//! One controller per file, its constants in a `Config` whose `Default` holds the values of its
//! standard, each documented with the section it comes from.
//!
//! - [`fixed`]: a constant rate, for calibration.
//! - [`external`]: decisions from outside the simulator (a Python controller, a learning loop).
//! - [`gcc`]: Google congestion control (draft-ietf-rmcat-gcc-02 held against libwebrtc's goog_cc),
//!   a folder with one file per mechanism.
//! - [`nada`]: NADA (RFC 8698).
//! - [`scream`]: SCReAM v1 (RFC 8298).
//! - [`scream2`]: SCReAM v2 (draft-johansson-ccwg-rfc8298bis-screamv2).
//! - [`scone_pro`]: the SCONE-PRO RTC sender (rates from the access point's capacity and queue
//!   signal), falling back to a named controller when signals stop.

pub mod base_delay;
pub mod external;
pub mod feedback;
pub mod fixed;
pub mod gcc;
pub mod inflight;
pub mod nada;
pub mod scone_pro;
pub mod scream;
pub mod scream2;
pub mod tunable;

pub use external::{External, ExternalConfig, ExternalHandle, FeedbackWindow, RateCallback};
pub use feedback::{FeedbackReport, NetworkSignal, PacketResult, SentPacket};
pub use fixed::{FixedRate, FixedRateConfig};
pub use gcc::{Gcc, GccConfig};
pub use nada::{Nada, NadaConfig};
pub use scone_pro::{SconePro, SconeProConfig};
pub use scream::{Scream, ScreamConfig};
pub use scream2::{ScreamV2, ScreamV2Config};
pub use tunable::Tunable;

use lowlat_core::{Bitrate, Time};

/// A rate controller for RTP media (feedback-driven).
///
/// Optional hooks have do-nothing defaults, as in quinn-proto's `congestion::Controller`.
pub trait RateController: std::fmt::Debug + Send + Sync {
    /// A short name for results (`"nada"`, `"gcc"`, ...).
    fn name(&self) -> &'static str;

    /// A media packet left the sender.
    fn on_packet_sent(&mut self, _now: Time, _packet: &SentPacket) {}

    /// A feedback report (transport-cc, RFC 8888, or one built by the network) arrived.
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport);

    /// The network signalled its state explicitly (SCONE-PRO style capacity/queue hints).
    fn on_network_signal(&mut self, _now: Time, _signal: &NetworkSignal) {}

    /// The sender's rate-shaping (RTP) queue holds `bytes`, its oldest packet has waited `delay`
    /// (NADA's buffer, SCReAM's RTP queue).
    fn on_send_queue(&mut self, _now: Time, _bytes: lowlat_core::Bytes, _delay: lowlat_core::Duration) {}

    /// Whether a packet of `size` may leave now (window-based controllers such as SCReAM count
    /// the bytes in flight from [`RateController::on_packet_sent`] and the feedback; rate-based
    /// ones always allow). While this is false the sender waits for feedback or
    /// [`RateController::poll_timeout`].
    fn can_send(&self, _now: Time, _size: lowlat_core::Bytes) -> bool {
        true
    }

    /// Whether [`RateController::can_send`] always answers true (a purely rate-based controller,
    /// no window): the sender, which would ask before each packet, then never asks. False unless
    /// a controller says so (a controller that overrides `can_send` must not).
    fn never_blocks_sends(&self) -> bool {
        false
    }

    /// Whether the sender should fill idle pacing time with padding (GCC's probes).
    fn wants_padding(&self, _now: Time) -> bool {
        false
    }

    /// Whether [`RateController::wants_padding`] always answers false, for the whole run (false
    /// unless a controller says so): the sender, which would ask at every poll, then never asks.
    fn never_pads(&self) -> bool {
        false
    }

    /// The instant from [`RateController::poll_timeout`] has come.
    fn handle_timeout(&mut self, _now: Time) {}

    /// When it next wants to be woken.
    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    /// Whether the controller has no timer: [`RateController::poll_timeout`] always answers
    /// `None` and [`RateController::handle_timeout`] does nothing (false unless a controller says
    /// so). The sender, which would call both at each of its wake-ups, then calls neither.
    fn has_no_timer(&self) -> bool {
        false
    }

    /// The rate the encoder should produce.
    fn target_bitrate(&self) -> Bitrate;

    /// The rate the pacer should send at.
    fn pacing_rate(&self) -> Bitrate;

    /// Whether [`RateController::on_packet_sent`] never changes [`RateController::pacing_rate`]
    /// (false unless a controller says so): a sender that remembers the pacing rate may then keep
    /// it across the packets it sends (it reads the rate at every poll, a few per packet).
    fn pacing_rate_ignores_sends(&self) -> bool {
        false
    }

    /// Whether [`RateController::handle_timeout`] never changes [`RateController::pacing_rate`]
    /// (false unless a controller says so; the sender calls it at each of its wake-ups, a packet's
    /// pacing time mostly), as [`RateController::pacing_rate_ignores_sends`] for sends.
    fn pacing_rate_ignores_timeouts(&self) -> bool {
        false
    }

    /// How much sending time the pacer may save up while idle (`None`: the sender's default,
    /// 5 ms). Read once when the sender is built.
    fn pacing_burst(&self) -> Option<lowlat_core::Duration> {
        None
    }

    /// The ECN codepoint the sender marks its media packets with (RFC 3168 bits: 0 Not-ECT,
    /// 0b10 ECT(0), 0b01 ECT(1) for L4S); CE comes back as `PacketResult::ecn == 3`.
    fn ecn_codepoint(&self) -> u8 {
        0
    }
}
