//! Scenarios as data: the TOML format, its validation, and the validated [`Scenario`].
//!
//! A scenario file is read in two steps. First it is deserialised into the `*Spec` structs
//! ([`spec`]: unknown keys are errors; every quantity is a string with a unit, `"50 ms"`,
//! `"10 Mbit/s"`, `"1500 B"`; [`parse`] reads the text). Then [`Scenario::from_spec`]
//! ([`validate`]) checks what types cannot (positive rates, flows that stop after they start,
//! trace files that load) and builds the network configuration ([`convert`]: links, queues and
//! assistance into the components' configs) into the validated types of [`config`] (and
//! [`variants`] derives other queues, paths and controllers from one). Every error
//! ([`error`]) is one line naming the file, the key, the value and what was expected. The names a
//! scenario can give controllers, assistance and queue variants, and what builds each controller,
//! are in one [`registry`].
//!
//! The format is documented for users in `docs/scenario-format.md`.

pub mod config;
pub mod convert;
pub mod error;
pub mod parse;
pub mod registry;
pub mod spec;
pub mod validate;
pub mod variants;

pub use config::{FlowConfig, MediaConfig, Repair, Scenario, TrafficKind, TransportFlowConfig, WebConfig};
pub use convert::parse_queue_limit;
pub use error::ScenarioError;
pub use parse::Format;
pub use registry::{
    is_external_controller, is_window_controller, ASSISTS, CONTROLLERS, QUEUE_VARIANTS, WINDOW_CONTROLLERS,
};
pub use spec::{
    AccessSpec, FlowSpec, LinkSpec, LossSpec, ParamValue, PauseSpec, QueueSpec, ScenarioSpec, SchedulePoint,
    SconeSpec, Unit, WifiSpec, ZhugeSpec,
};
