//! lowlat's deterministic discrete-event simulator.
//!
//! - [`scenario`]: scenarios as data (TOML/JSON), validated before anything runs.
//! - [`engine`]: the totally ordered event queue (time, then scheduling order).
//! - [`sim`]: the dumbbell topology and the driver that moves packets between sans-IO components.
//! - [`assist`]: the middlebox a scenario puts at the bottleneck, for any driver.
//! - [`app`]: the [`app::Endpoint`] trait: the applications at either end of a flow.
//! - [`media`]: RTP video flows: the sender and receiver endpoints around a rate controller.
//! - [`traffic`]: CBR and Poisson sources and the per-flow measurements.
//! - [`results`]: the summary of the results contract and the 200 ms series.
//! - [`bench`]: the project's standard benchmark.
//!
//! Same scenario and seed, same results, bit for bit: time is integer nanoseconds, events are
//! totally ordered, and each component draws from its own named random stream.
//!
//! ```no_run
//! use lowlat_sim::{Scenario, Simulation};
//! let scenario = Scenario::from_file("scenarios/dumbbell-cbr.toml".as_ref()).unwrap();
//! let result = Simulation::new(scenario).run();
//! println!("{}", result.summary_json());
//! ```

pub mod app;
pub mod assist;
pub mod bench;
pub mod engine;
pub mod media;
pub mod results;
pub mod scenario;
pub mod sim;
pub mod traffic;
pub mod transport;
pub mod transport_media;
pub mod web;

pub use results::{Column, RunResult, Summary, Table};
pub use scenario::{Format, Scenario, ScenarioError};
pub use sim::Simulation;
