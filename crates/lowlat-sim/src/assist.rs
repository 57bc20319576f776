//! The network assistance a scenario puts at the bottleneck's queue, built for any driver (the
//! simulator, the emulator): which middlebox, and how it treats each flow.

use crate::scenario::Scenario;
use lowlat_assist::{FastAck, FlowRole, InBandFormat, SconeAp, Zhuge};
use lowlat_core::rng::stream;
use lowlat_media::receiver::FeedbackFormat;
use lowlat_net::middlebox::Middlebox;
use lowlat_transport::ReceiverConfig;

/// How the middlebox treats each flow, from what its packets are (as an AP tells from headers).
pub fn flow_roles(scenario: &Scenario, fast_ack: bool) -> Vec<FlowRole> {
    scenario
        .flows
        .iter()
        .map(|f| match (&f.media, &f.transport) {
            // Web downloads open connections of their own: FastAck would need one receiver each.
            (_, Some(t)) if (t.web.is_some() || t.downloads.is_some()) && fast_ack => FlowRole::Pass,
            (_, Some(_)) => FlowRole::OutOfBand,
            (Some(m), None) if crate::scenario::is_window_controller(&m.cc) => FlowRole::OutOfBand,
            (Some(m), None) => FlowRole::InBand(match m.feedback_format {
                FeedbackFormat::TransportCc => InBandFormat::TransportCc,
                FeedbackFormat::Rfc8888 => InBandFormat::Rfc8888,
            }),
            (None, None) => FlowRole::Pass,
        })
        .collect()
}

/// The middlebox the scenario puts at the bottleneck's queue, if any.
pub fn assist_middlebox(scenario: &Scenario) -> Option<Box<dyn Middlebox>> {
    assist_middlebox_logging(scenario, true, None)
}

/// [`assist_middlebox`], with Zhuge keeping its per-packet prediction log or not
/// ([`Zhuge::without_log`]: for a driver that will not read it; nothing else changes), or a
/// uniform sample of at most `sample` of them ([`Zhuge::with_log_sample`], stream
/// `"assist.zhuge.sample"`).
pub fn assist_middlebox_logging(
    scenario: &Scenario,
    log_predictions: bool,
    sample: Option<usize>,
) -> Option<Box<dyn Middlebox>> {
    match scenario.assist.as_str() {
        "zhuge" => {
            let z = Zhuge::new(
                scenario.zhuge.clone(),
                &flow_roles(scenario, false),
                stream(scenario.seed, "assist.zhuge"),
            );
            Some(Box::new(match (log_predictions, sample) {
                (false, _) => z.without_log(),
                (true, None) => z,
                (true, Some(n)) => z.with_log_sample(n, stream(scenario.seed, "assist.zhuge.sample")),
            }))
        }
        "fastack" => Some(Box::new(FastAck::new(&flow_roles(scenario, true), ReceiverConfig::default()))),
        // The AP signals the senders of RTP media flows (the ones with a rate controller to tell).
        "scone-rtc" | "scone" => {
            let media: Vec<bool> =
                flow_roles(scenario, false).iter().map(|r| matches!(r, FlowRole::InBand(_))).collect();
            Some(Box::new(SconeAp::new(scenario.scone.clone(), &media)))
        }
        _ => None,
    }
}
