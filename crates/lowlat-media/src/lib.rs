//! The real-time media application, as sans-IO components.
//!
//! - [`source`]: video source models after RFC 8593: a synthetic codec that follows its target
//!   rate with a reaction delay, frame-size noise and key-frame transients, and a perfect codec.
//! - [`pacer`]: packetiser and pacer: frames cut into MTU-bounded RTP packets, sent at the
//!   controller's pacing rate from a sender queue that is flushed when it grows too old.
//! - [`nack`]: loss repair: the receiver's NACK requester (RFC 4585) and the sender's history
//!   of sent packets answering with retransmissions (RTX, RFC 4588).
//! - [`timeout_rtx`]: loss repair as the Zhuge artifact's sender does it: every packet
//!   acknowledged, a frame's unacknowledged packets resent after a timeout of srtt + 4 RTT
//!   deviations, ahead of new media, until the frame is 1 s old.
//! - [`receiver`]: frame assembly and per-frame metrics at the receiver, and the per-packet
//!   feedback it reports (transport-wide sequence numbers and arrival times).
//! - [`decoder_replay`]: the Zhuge artifact's in-order decoder accounting, replayed on a run's
//!   frame times.

pub mod decoder_replay;
pub mod nack;
pub mod pacer;
pub mod receiver;
pub mod source;
pub mod timeout_rtx;

pub use nack::{NackConfig, NackRequester, SentHistory};
pub use pacer::{Pacer, PacerConfig, RtpPacket};
pub use receiver::{Arrival, FeedbackCollector, FeedbackSchedule, FrameAssembler};
pub use source::{Codec, Frame, VideoSource, VideoSourceConfig};
pub use timeout_rtx::{AckResponder, TimeoutRetransmitter, TimeoutRtxConfig};
