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

/// Loads a scenario of the Python package's catalog (`python/lowlat/scenarios/NAME.toml`).
pub fn catalog(name: &str) -> Scenario {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../python/lowlat/scenarios/{name}.toml"));
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// `(t_s, value)` of column `column` for the row group `id` of a long-format series table whose
/// first column names the flow or link.
pub fn series(table: &lowlat_sim::Table, id: &str, column: &str) -> Vec<(f64, f64)> {
    use lowlat_sim::Column;
    let get = |name: &str| &table.columns.iter().find(|c| c.0 == name).unwrap_or_else(|| panic!("{name}")).1;
    let ids = &table.columns[0].1;
    let (Column::Str(_) | Column::Labels { .. }, Column::F64(t), Column::F64(v)) =
        (ids, get("t_s"), get(column))
    else {
        panic!("unexpected column types")
    };
    ids.labels().zip(t).zip(v).filter(|((i, _), _)| *i == id).map(|((_, t), v)| (*t, *v)).collect()
}

/// Mean of a series over `[from, to)` seconds (NaN bins skipped).
pub fn mean_between(s: &[(f64, f64)], from: f64, to: f64) -> f64 {
    let xs: Vec<f64> = s.iter().filter(|(t, v)| *t >= from && *t < to && !v.is_nan()).map(|x| x.1).collect();
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// Jain's fairness index of `xs`.
pub fn jain(xs: &[f64]) -> f64 {
    let (s, s2) = xs.iter().fold((0.0, 0.0), |(a, b), x| (a + x, b + x * x));
    s * s / (xs.len() as f64 * s2)
}
