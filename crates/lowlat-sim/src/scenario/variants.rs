//! The variants of a validated scenario the suite derives: another queue, another path, another
//! controller (`with_queue`, `with_path`, `with_cc`).

use super::config::Scenario;
use super::error::ScenarioError;
use super::registry::{
    is_external_controller, is_window_controller, rate_controller, CONTROLLERS, EXTERNAL_FORMS,
    QUEUE_VARIANTS,
};
use lowlat_core::Duration;
use lowlat_net::queue::{CoDelConfig, QueueConfig, QueueLimit};

impl Scenario {
    /// Replaces the forward and reverse bottleneck queues with a named variant: `"droptail"`
    /// (300 ms, RFC 8867 §4) or `"codel"` (target 5 ms, interval 100 ms, RFC 8289, over a
    /// 1000-packet buffer), the two AQM
    /// settings of the RMCAT matrix.
    pub fn with_queue(mut self, queue: &str) -> Result<Scenario, ScenarioError> {
        let q = match queue {
            "droptail" => QueueConfig::DropTail { limit: QueueLimit::Time(Duration::from_millis(300)) },
            // CoDel needs a buffer it can manage: 1000 packets, Linux's default queue length.
            "codel" => {
                QueueConfig::CoDel { config: CoDelConfig::default(), limit: QueueLimit::Packets(1000) }
            }
            other => {
                return Err(ScenarioError::new(
                    &self.source,
                    "queue",
                    format!("got {other:?}, expected one of {}", QUEUE_VARIANTS.join(", ")),
                ))
            }
        };
        self.bottleneck.queue = q.clone();
        self.reverse.queue = q;
        self.name = format!("{}+{queue}", self.name);
        Ok(self)
    }

    /// Sets the path for the RMCAT matrix: one-way delay `rtt / 2` on the bottleneck and on the
    /// reverse link, and jitter of standard deviation `jitter` on both. Flows whose access link
    /// sets a delay of its own (RMCAT 5.5's RTT-fairness case) keep it on top.
    pub fn with_path(mut self, rtt: Duration, jitter: Duration) -> Scenario {
        let one_way = Duration(rtt.as_nanos() / 2);
        for l in [&mut self.bottleneck, &mut self.reverse] {
            l.delay = one_way;
            l.jitter = jitter;
        }
        self.name = format!("{}+rtt{}ms+jitter{}ms", self.name, rtt.as_millis_f64(), jitter.as_millis_f64());
        self
    }

    /// Runs every video flow with controller `cc` instead of the one the scenario names.
    pub fn with_cc(mut self, cc: &str) -> Result<Scenario, ScenarioError> {
        if !CONTROLLERS.contains(&cc) && !is_external_controller(cc) {
            return Err(ScenarioError::new(
                &self.source,
                "cc",
                format!("got {cc:?}, expected one of {}{EXTERNAL_FORMS}", CONTROLLERS.join(", ")),
            ));
        }
        let mut any = false;
        for f in &mut self.flows {
            let Some(m) = f.media.as_mut() else { continue };
            m.cc = cc.to_string();
            any = true;
            if !is_window_controller(cc) {
                // The scenario's table for `cc` was checked at its own start rate; check the
                // controller this flow will now build.
                rate_controller(m, f.rate).map_err(|e| {
                    let (k, msg) = e.split_once(": ").unwrap_or(("", &e));
                    ScenarioError::new(
                        &self.source,
                        format!("cc_params.{k}"),
                        format!("{msg} (flow {:?})", f.id),
                    )
                })?;
            }
        }
        if !any {
            return Err(ScenarioError::new(
                &self.source,
                "cc",
                "the scenario has no rtp-video flow to control",
            ));
        }
        Ok(self)
    }
}
