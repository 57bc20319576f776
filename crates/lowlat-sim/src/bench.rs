//! The project's standard benchmark: the dumbbell used to compare lowlat with ns-3.
//!
//! sender -(10 Gbit/s, 0 ms)- R1 =(bottleneck, 25 ms each way, drop-tail 300 ms)= R2
//! -(10 Gbit/s, 0 ms)- receiver; 1500-byte packets; a CBR flow at 95 % of the bottleneck, or
//! (the TCP variant) one unbounded ack-clocked bulk flow; 120 simulated seconds. `lowlat bench
//! --compare-ns3` runs the same dumbbells in ns-3 (python/lowlat/ns3bench.py) and prints the ratios.

use crate::scenario::{Format, Scenario};
use crate::sim::Simulation;
use lowlat_core::{Bitrate, Duration};
use std::path::Path;

/// The standard dumbbell at `rate` for `duration`, as a scenario.
pub fn standard_dumbbell(rate: Bitrate, duration: Duration) -> Scenario {
    let cbr = rate.scaled(0.95);
    dumbbell("cbr", rate, duration, &format!("kind = \"cbr\"\nrate = \"{} bit/s\"", cbr.as_bps()))
}

/// The ECN variant: the same CBR flow sending ECT(1) through an L4S marker whose threshold is
/// zero, so every packet takes the marking path (the cost of ECN fields and marking).
pub fn ecn_dumbbell(rate: Bitrate, duration: Duration) -> Scenario {
    let cbr = rate.scaled(0.95);
    let flow = format!("kind = \"cbr\"\nrate = \"{} bit/s\"\necn = \"ect1\"", cbr.as_bps());
    let text = dumbbell_text("cbr-l4s", rate, duration, &flow).replace(
        "queue = { kind = \"droptail\", limit = \"300 ms\" }",
        "queue = { kind = \"l4s\", threshold = \"0 ms\", limit = \"300 ms\" }",
    );
    Scenario::parse(&text, Format::Toml, "<bench>", Path::new(".")).expect("the benchmark scenario is valid")
}

/// The TCP variant: one unbounded bulk flow with window controller `cc`.
pub fn tcp_dumbbell(cc: &str, rate: Bitrate, duration: Duration) -> Scenario {
    dumbbell(cc, rate, duration, &format!("kind = \"bulk\"\ncc = \"{cc}\""))
}

fn dumbbell(case: &str, rate: Bitrate, duration: Duration, flow: &str) -> Scenario {
    let text = dumbbell_text(case, rate, duration, flow);
    Scenario::parse(&text, Format::Toml, "<bench>", Path::new(".")).expect("the benchmark scenario is valid")
}

fn dumbbell_text(case: &str, rate: Bitrate, duration: Duration, flow: &str) -> String {
    format!(
        r#"
name = "bench-dumbbell-{case}-{mbps}M"
description = "Standard benchmark dumbbell at {rate}"
duration = "{duration}"
seed = 1

[bottleneck]
rate = "{rate_bps} bit/s"
delay = "25 ms"
queue = {{ kind = "droptail", limit = "300 ms" }}

[reverse]
rate = "{rate_bps} bit/s"
delay = "25 ms"

[[flows]]
id = "{case}"
{flow}
packet_size = "1500 B"
access = {{ rate = "10 Gbit/s", delay = "0 ms" }}
egress = {{ rate = "10 Gbit/s", delay = "0 ms" }}
"#,
        mbps = rate.as_bps() / 1_000_000,
        rate_bps = rate.as_bps(),
    )
}

/// What one benchmark case measured.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchFigures {
    /// The case's name.
    pub name: String,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// Events processed.
    pub events: u64,
    /// Simulated seconds.
    pub sim_s: f64,
    /// Packets delivered to the receiver.
    pub delivered: u64,
}

impl BenchFigures {
    /// Events per wall second.
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.wall_s
    }
    /// Simulated seconds per wall second.
    pub fn speedup(&self) -> f64 {
        self.sim_s / self.wall_s
    }
    /// Delivered packets per wall second.
    pub fn delivered_per_s(&self) -> f64 {
        self.delivered as f64 / self.wall_s
    }
}

/// Runs one scenario as a benchmark case.
pub fn run_case(scenario: Scenario) -> BenchFigures {
    let name = scenario.name.clone();
    let result = Simulation::new(scenario).run();
    let s = &result.summary;
    BenchFigures {
        name,
        wall_s: s.wall_s,
        events: s.events,
        sim_s: s.sim_duration_s,
        delivered: s.flows.iter().map(|f| f.packets_received).sum(),
    }
}
