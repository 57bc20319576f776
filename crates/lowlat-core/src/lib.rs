//! The shared vocabulary of lowlat.
//!
//! Every other crate speaks in these types: [`Time`] and [`Duration`] (integer nanoseconds, never a
//! floating-point clock), [`Bitrate`] and [`Bytes`] (units in types), ids, ECN codepoints ([`Ecn`]), the [`Packet`] record that
//! travels through the network models, and [`rng::stream`], which derives one independent seeded
//! random stream per component from a scenario seed and the component's name, and [`hash`], a fast
//! hasher for per-packet maps keyed by integers.
//!
//! This crate holds no logic beyond the types themselves.

pub mod ecn;
pub mod hash;
pub mod ids;
pub mod packet;
pub mod rng;
pub mod time;
pub mod units;

pub use ecn::Ecn;
pub use ids::{FlowId, LinkId};
pub use packet::{Packet, PacketKind, APP_NON_CC_FEEDBACK};
pub use time::{Duration, Time};
pub use units::{Bitrate, Bytes, ParseUnitError};
