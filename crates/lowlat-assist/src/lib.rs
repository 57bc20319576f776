//! Network assistance: components at a queue that help the senders behind it.
//!
//! - [`fortune_teller`]: Zhuge's per-packet delay prediction at the access point (SIGCOMM 2022).
//! - [`zhuge`]: Zhuge as a middlebox: the Fortune Teller plus the Feedback Updater (in-band
//!   transport-cc / RFC 8888 feedback written by the AP, out-of-band ACK holding).
//! - [`fast_ack`]: the FastAck baseline: the AP acknowledges transport packets for the client.
//!
//! Like every lowlat component they are sans-IO: handed `now` and an input, they return outputs.

pub mod fast_ack;
pub mod fortune_teller;
pub mod zhuge;

pub use fast_ack::FastAck;
pub use fortune_teller::{BurstRule, FortuneTeller, FortuneTellerConfig, Prediction};
pub use zhuge::{
    AckHoldConfig, FlowRole, InBandFormat, InBandReports, PredictionRecord, Zhuge, ZhugeConfig, ZhugeVariant,
};
