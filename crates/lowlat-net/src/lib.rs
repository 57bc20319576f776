//! The network: everything between a sender's socket and a receiver's socket.
//!
//! Each model is a sans-IO state machine: it is handed `now` and a packet, and it answers with
//! what happens to it; it never reads a clock. The simulator drives these on virtual time, the
//! emulator on the wall clock.
//!
//! - [`capacity`]: how fast a link serves bytes: constant, a piecewise-constant schedule (the RMCAT
//!   cases), a two-column `<seconds> <Mbit/s>` trace, or mahimahi delivery opportunities.
//! - [`trace`]: loaders for those trace formats (replayed from their first sample, looped), with
//!   errors that name the file and the line.
//! - [`jitter`]: RFC 8867/8868 jitter without reordering.
//! - [`loss`]: Bernoulli and Gilbert-Elliott random loss.
//! - [`queue`]: drop-tail (by bytes or by time at the current rate), CoDel (RFC 8289, optionally
//!   marking ECN) and an L4S step/ramp marker for ECT(1) packets.
//! - [`middlebox`]: the hook where network assistance (Zhuge, SCONE-PRO) sits at a queue.
//! - [`wifi`]: a Wi-Fi access point's downlink: aggregates at random transmit opportunities.
//! - [`histogram`]: nanosecond samples that cost what they hold.
//! - [`link`]: one hop: queue, server, random loss, propagation delay and jitter.

pub mod capacity;
mod fifo;
pub mod histogram;
pub mod jitter;
pub mod link;
pub mod loss;
pub mod middlebox;
pub mod queue;
pub mod schedule;
pub mod trace;
pub mod wifi;

pub use capacity::{Capacity, DeliveryTrace, RateSchedule, Server};
pub use histogram::{BinCursor, NsHistogram};
pub use jitter::NoReorderJitter;
pub use link::{Link, LinkConfig, LinkStats};
pub use loss::LossModel;
pub use middlebox::{
    BuiltFeedback, Direction, FeedbackPayload, Middlebox, NoAssist, QueueState, ReverseRule, Verdict,
};
pub use queue::{
    CoDel, CoDelConfig, DropTail, L4sConfig, L4sMarker, QueueConfig, QueueDiscipline, QueueLimit,
};
pub use trace::{TraceError, TraceWarning};
pub use wifi::{WifiChannel, WifiConfig};
