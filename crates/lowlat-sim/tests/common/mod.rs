//! Helpers shared by the integration tests.

#![allow(dead_code)]

use lowlat_sim::{Format, RunResult, Scenario, ScenarioError, Simulation};
use std::path::Path;

/// Parses a scenario written inline in a test.
pub fn scenario(toml: &str) -> Scenario {
    Scenario::parse(toml, Format::Toml, "test.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

/// The error an inline scenario gives.
pub fn scenario_error(toml: &str) -> ScenarioError {
    Scenario::parse(toml, Format::Toml, "test.toml", Path::new("."))
        .expect_err("the scenario should be rejected")
}

/// Runs an inline scenario.
pub fn run(toml: &str) -> RunResult {
    Simulation::new(scenario(toml)).run()
}
