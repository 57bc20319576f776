//! lowlat's deterministic discrete-event simulator.
//!
//! - [`scenario`]: scenarios as data (TOML/JSON), validated before anything runs.
//! - [`engine`]: the totally ordered event queue (time, then scheduling order).
//! - [`sim`]: the dumbbell topology and the driver that moves packets between sans-IO components.
//! - [`assist`]: the middlebox a scenario puts at the bottleneck, for any driver.
//! - [`app`]: the [`app::Endpoint`] trait: the applications at either end of a flow.
//! - [`downloads`]: downloads one after another over connections that remember the path
//!   (Careful Resume, 0-RTT-BDP, 0-RTT).
//! - [`media`]: RTP video flows: the sender and receiver endpoints around a rate controller.
//! - [`traffic`]: CBR and Poisson sources and the per-flow measurements.
//! - [`limits`]: what a run will cost (memory, events), checked before it starts.
//! - [`results`]: the summary of the results contract and the 200 ms series.
//! - [`capture`]: a pcap of the packets the endpoints send.
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

pub mod ack_ring;
pub mod app;
pub mod assist;
pub mod bench;
pub mod capture;
pub mod downloads;
pub mod engine;
pub mod limits;
pub mod media;
pub mod results;
pub mod scenario;
pub mod sim;
pub mod traffic;
pub mod transport;
pub mod transport_media;
pub mod web;

pub use results::{Column, RunResult, Summary, Table, Tables};
pub use scenario::{Format, Scenario, ScenarioError};
pub use sim::Simulation;
