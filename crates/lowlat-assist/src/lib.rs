//! Network assistance: components at a queue that help the senders behind it.
//!
//! - [`fortune_teller`]: Zhuge's per-packet delay prediction at the access point (SIGCOMM 2022).
//! - [`zhuge`]: Zhuge as a middlebox: the Fortune Teller plus the Feedback Updater (in-band
//!   transport-cc / RFC 8888 feedback written by the AP, out-of-band ACK holding).
//! - [`prediction_log`]: Zhuge's log of its predictions (all, none, or a uniform sample).
//! - [`fast_ack`]: the FastAck baseline: the AP acknowledges transport packets for the client.
//! - [`scone`]: SCONE-PRO at the AP: capacity and queue signals to media senders (RTC mode), or
//!   the standard SCONE packet's throughput advice.
//!
//! Like every lowlat component they are sans-IO: handed `now` and an input, they return outputs.

pub mod fast_ack;
pub mod fortune_teller;
pub mod prediction_log;
pub mod scone;
pub mod zhuge;

pub use fast_ack::FastAck;
pub use fortune_teller::{BurstRule, FortuneTeller, FortuneTellerConfig, Prediction};
pub use prediction_log::{PredictionLog, PredictionRecord};
pub use scone::{CapacitySource, SconeAp, SconeConfig, SconeMode, SconeSignal};
pub use zhuge::{
    AckHoldConfig, FlowRole, InBandFormat, InBandReports, PredictionStats, Zhuge, ZhugeConfig, ZhugeVariant,
};
