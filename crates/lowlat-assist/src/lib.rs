//! Network assistance: components at a queue that help the senders behind it.
//!
//! - [`fortune_teller`]: Zhuge's per-packet delay prediction at the access point (SIGCOMM 2022).
//!
//! Like every lowlat component they are sans-IO: handed `now` and an input, they return outputs.

pub mod fortune_teller;

pub use fortune_teller::{BurstRule, FortuneTeller, FortuneTellerConfig, Prediction};
