//! Python bindings of lowlat (`lowlat._native`). Thin on purpose: each function converts its
//! arguments, calls into `lowlat-sim`, and converts the answer. The user-facing API, its
//! documentation and all presentation live in the `lowlat` Python package.

use lowlat_core::{Bitrate, Duration, Time};
use lowlat_sim::results::{Column, Table};
use lowlat_sim::{bench, Format, Scenario};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;

create_exception!(_native, ScenarioError, PyValueError, "A scenario that failed validation.");
create_exception!(
    _native,
    EmulatorError,
    ScenarioError,
    "An emulator run that cannot start (an address that cannot be bound, an unsupported key)."
);

fn parse(text: &str, format: &str, label: &str, base_dir: &str) -> PyResult<Scenario> {
    let format = match format {
        "toml" => Format::Toml,
        "json" => Format::Json,
        other => return Err(PyValueError::new_err(format!("unknown scenario format {other:?}"))),
    };
    Scenario::parse(text, format, label, Path::new(base_dir))
        .map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// Validates a scenario; returns `(name, description, warnings)` or raises `ScenarioError`.
#[pyfunction]
fn validate(
    text: &str,
    format: &str,
    label: &str,
    base_dir: &str,
) -> PyResult<(String, String, Vec<String>)> {
    let s = parse(text, format, label, base_dir)?;
    Ok((s.name, s.description, s.warnings))
}

/// A simulation in progress.
#[pyclass(module = "lowlat._native")]
struct Simulation {
    inner: Option<lowlat_sim::Simulation>,
}

impl Simulation {
    fn sim(&self) -> PyResult<&lowlat_sim::Simulation> {
        self.inner.as_ref().ok_or_else(|| PyRuntimeError::new_err("this simulation has finished"))
    }
}

#[pymethods]
impl Simulation {
    /// Builds a simulation from scenario text; `seed` overrides the scenario's seed, `cc` the
    /// controller of every video flow, `queue` the bottleneck queues (`"droptail"`, `"codel"`).
    #[new]
    #[pyo3(signature = (text, format, label, base_dir, seed=None, cc=None, queue=None, rtt_s=None, jitter_s=None))]
    fn new(
        text: &str,
        format: &str,
        label: &str,
        base_dir: &str,
        seed: Option<u64>,
        cc: Option<&str>,
        queue: Option<&str>,
        rtt_s: Option<f64>,
        jitter_s: Option<f64>,
    ) -> PyResult<Self> {
        let mut s = parse(text, format, label, base_dir)?;
        if let Some(cc) = cc {
            s = s.with_cc(cc).map_err(|e| ScenarioError::new_err(e.to_string()))?;
        }
        if let Some(q) = queue {
            s = s.with_queue(q).map_err(|e| ScenarioError::new_err(e.to_string()))?;
        }
        if let Some(rtt) = rtt_s {
            let ok = |x: f64| x.is_finite() && x >= 0.0;
            if !ok(rtt) || !jitter_s.is_none_or(ok) {
                return Err(ScenarioError::new_err("rtt and jitter must be non-negative seconds"));
            }
            s = s.with_path(Duration::from_secs_f64(rtt), Duration::from_secs_f64(jitter_s.unwrap_or(0.0)));
        }
        if let Some(seed) = seed {
            s.seed = seed;
        }
        Ok(Simulation { inner: Some(lowlat_sim::Simulation::new(s)) })
    }

    /// Runs events up to `until_s` simulated seconds (without holding the GIL).
    fn advance(&mut self, py: Python<'_>, until_s: f64) -> PyResult<()> {
        let sim =
            self.inner.as_mut().ok_or_else(|| PyRuntimeError::new_err("this simulation has finished"))?;
        let until = Time::from_secs_f64(until_s);
        py.detach(|| sim.advance(until));
        Ok(())
    }

    /// Simulated seconds reached.
    fn now_s(&self) -> PyResult<f64> {
        Ok(self.sim()?.now().as_secs_f64())
    }

    /// Simulated seconds at which the run ends.
    fn end_s(&self) -> PyResult<f64> {
        Ok(self.sim()?.end().as_secs_f64())
    }

    /// Events processed so far.
    fn events(&self) -> PyResult<u64> {
        Ok(self.sim()?.events())
    }

    /// The scenario's name.
    fn name(&self) -> PyResult<String> {
        Ok(self.sim()?.scenario().name.clone())
    }

    /// The seed in use.
    fn seed(&self) -> PyResult<u64> {
        Ok(self.sim()?.scenario().seed)
    }

    /// Ends the run: `(summary_json, flow_series, link_series, predictions)`, tables as dicts of
    /// lists (`predictions`: Zhuge's, empty without it).
    #[allow(clippy::type_complexity)]
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(String, Bound<'py, PyDict>, Bound<'py, PyDict>, Bound<'py, PyDict>)> {
        let sim = self.inner.take().ok_or_else(|| PyRuntimeError::new_err("this simulation has finished"))?;
        let result = py.detach(|| sim.finish());
        Ok((
            result.summary_json(),
            table(py, &result.flow_series)?,
            table(py, &result.link_series)?,
            table(py, &result.predictions)?,
        ))
    }
}

fn table<'py>(py: Python<'py>, t: &Table) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, col) in &t.columns {
        match col {
            Column::F64(v) => d.set_item(name, v)?,
            Column::Str(v) => d.set_item(name, v)?,
        }
    }
    Ok(d)
}

/// Runs the standard benchmark dumbbell at `rate_bps` for `duration_s` with a CBR flow (`flow`
/// = `"cbr"`; `"cbr-l4s"`: ECT(1) through an L4S marker marking every packet) or one bulk flow
/// of that window controller: `(name, wall_s, events, sim_s,
/// delivered)`.
#[pyfunction]
#[pyo3(signature = (rate_bps, duration_s, flow="cbr"))]
fn bench_dumbbell(
    py: Python<'_>,
    rate_bps: u64,
    duration_s: f64,
    flow: &str,
) -> PyResult<(String, f64, u64, f64, u64)> {
    let (rate, duration) = (Bitrate::bps(rate_bps), Duration::from_secs_f64(duration_s));
    let scenario = match flow {
        "cbr" => bench::standard_dumbbell(rate, duration),
        "cbr-l4s" => bench::ecn_dumbbell(rate, duration),
        cc if lowlat_sim::transport::WINDOW_CONTROLLERS.contains(&cc) => {
            bench::tcp_dumbbell(cc, rate, duration)
        }
        other => {
            return Err(ScenarioError::new_err(format!(
                "flow: got {other:?}, expected \"cbr\", \"cbr-l4s\" or a window controller"
            )))
        }
    };
    let f = py.detach(|| bench::run_case(scenario));
    Ok((f.name, f.wall_s, f.events, f.sim_s, f.delivered))
}

/// Runs the UDP relay of `lowlat emulate` until its duration ends or Ctrl-C: `(summary_json,
/// flow_series, link_series)`.
#[pyfunction]
#[pyo3(signature = (text, format, label, base_dir, listen, forward, duration_s=None, flow=None, pcap=None, max_datagram=65_507, overhead=0))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn emulate<'py>(
    py: Python<'py>,
    text: &str,
    format: &str,
    label: &str,
    base_dir: &str,
    listen: &str,
    forward: &str,
    duration_s: Option<f64>,
    flow: Option<String>,
    pcap: Option<String>,
    max_datagram: usize,
    overhead: u32,
) -> PyResult<(String, Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let scenario = parse(text, format, label, base_dir)?;
    let addr = |flag: &str, a: &str| {
        a.parse::<std::net::SocketAddr>().map_err(|_| {
            EmulatorError::new_err(format!("{flag}: got {a:?}, expected IP:PORT such as 127.0.0.1:5000"))
        })
    };
    let mut cfg = lowlat_emu::RelayConfig::new(addr("--listen", listen)?, addr("--forward", forward)?);
    if let Some(d) = duration_s {
        if !(d.is_finite() && d > 0.0) {
            return Err(EmulatorError::new_err(format!(
                "--duration: got {d}, expected a positive number of seconds"
            )));
        }
        cfg.duration = Some(Duration::from_secs_f64(d));
    }
    cfg.flow = flow;
    cfg.pcap = pcap.map(Into::into);
    cfg.max_datagram = max_datagram;
    cfg.overhead = overhead;
    let relay = lowlat_emu::Relay::bind(scenario, cfg).map_err(EmulatorError::new_err)?;
    // Ctrl-C: Python's handler only sets a flag while the relay holds no GIL; ask it every 50 ms.
    let report = py
        .detach(|| relay.run(|| Python::attach(|py| py.check_signals().is_err())))
        .map_err(EmulatorError::new_err)?;
    Ok((
        report.summary_json(),
        table(py, &report.result.flow_series)?,
        table(py, &report.result.link_series)?,
    ))
}

/// The relay's figures for `lowlat bench --relay` (each case `seconds` long; the shaped case at
/// `shaped_bps`), as a dict.
#[pyfunction]
fn bench_relay(py: Python<'_>, seconds: f64, shaped_bps: u64) -> PyResult<Bound<'_, PyDict>> {
    let b = py
        .detach(|| lowlat_emu::bench::run(seconds, Bitrate::bps(shaped_bps)))
        .map_err(EmulatorError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("direct_owd_p50_us", b.direct_owd_us.0)?;
    d.set_item("direct_owd_p99_us", b.direct_owd_us.1)?;
    d.set_item("relay_owd_p50_us", b.relay_owd_us.0)?;
    d.set_item("relay_owd_p99_us", b.relay_owd_us.1)?;
    d.set_item("unshaped_pps", b.unshaped_pps)?;
    d.set_item("unshaped_bps", b.unshaped_bps)?;
    d.set_item("relay_forwarded_pps", b.relay_forwarded_pps)?;
    d.set_item("relay_pps_per_cpu_s", b.relay_pps_per_cpu_s)?;
    d.set_item("unshaped_sent", b.unshaped_sent_read_forwarded.0)?;
    d.set_item("unshaped_read", b.unshaped_sent_read_forwarded.1)?;
    d.set_item("unshaped_forwarded", b.unshaped_sent_read_forwarded.2)?;
    d.set_item("shaped_bps", b.shaped_rate.as_bps())?;
    d.set_item("shaped_lateness_p50_us", b.shaped_lateness_us.0)?;
    d.set_item("shaped_lateness_p99_us", b.shaped_lateness_us.1)?;
    Ok(d)
}

/// `lowlat send`: RTP video of a scenario's media flow to `dest` from `bind`, with the flow's
/// controller and real feedback; returns the sender's summary JSON.
#[pyfunction]
#[pyo3(signature = (text, format, label, base_dir, dest, bind="0.0.0.0:0", flow=None, duration_s=None, cc=None))]
#[allow(clippy::too_many_arguments)]
fn rtp_send(
    py: Python<'_>,
    text: &str,
    format: &str,
    label: &str,
    base_dir: &str,
    dest: &str,
    bind: &str,
    flow: Option<&str>,
    duration_s: Option<f64>,
    cc: Option<&str>,
) -> PyResult<String> {
    let mut scenario = parse(text, format, label, base_dir)?;
    if let Some(cc) = cc {
        scenario = scenario.with_cc(cc).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    }
    let dest: std::net::SocketAddr = dest.parse().map_err(|_| {
        EmulatorError::new_err(format!("--to: got {dest:?}, expected IP:PORT such as 127.0.0.1:5000"))
    })?;
    let sock =
        std::net::UdpSocket::bind(bind).map_err(|e| EmulatorError::new_err(format!("--bind {bind}: {e}")))?;
    let duration = positive_duration(duration_s)?;
    let report = py
        .detach(|| {
            lowlat_emu::rtp::run_sender(&scenario, flow, &sock, dest, duration, || {
                Python::attach(|py| py.check_signals().is_err())
            })
        })
        .map_err(EmulatorError::new_err)?;
    Ok(report.summary_json())
}

/// `lowlat receive`: receives a scenario's media flow on `listen` and answers with real feedback;
/// returns the receiver's summary JSON.
#[pyfunction]
#[pyo3(signature = (text, format, label, base_dir, listen, flow=None, duration_s=None))]
#[allow(clippy::too_many_arguments)]
fn rtp_receive(
    py: Python<'_>,
    text: &str,
    format: &str,
    label: &str,
    base_dir: &str,
    listen: &str,
    flow: Option<&str>,
    duration_s: Option<f64>,
) -> PyResult<String> {
    let scenario = parse(text, format, label, base_dir)?;
    let sock = std::net::UdpSocket::bind(listen)
        .map_err(|e| EmulatorError::new_err(format!("--listen {listen}: {e}")))?;
    let duration = positive_duration(duration_s)?;
    let report = py
        .detach(|| {
            lowlat_emu::rtp::run_receiver(&scenario, flow, &sock, duration, || {
                Python::attach(|py| py.check_signals().is_err())
            })
        })
        .map_err(EmulatorError::new_err)?;
    Ok(report.summary_json())
}

fn positive_duration(s: Option<f64>) -> PyResult<Option<Duration>> {
    match s {
        None => Ok(None),
        Some(d) if d.is_finite() && d > 0.0 => Ok(Some(Duration::from_secs_f64(d))),
        Some(d) => {
            Err(EmulatorError::new_err(format!("--duration: got {d}, expected a positive number of seconds")))
        }
    }
}

/// The congestion controllers a video flow can use.
#[pyfunction]
fn controllers() -> Vec<&'static str> {
    lowlat_sim::scenario::CONTROLLERS.to_vec()
}

/// The bottleneck queue variants `queue=` accepts.
#[pyfunction]
fn queue_variants() -> Vec<&'static str> {
    lowlat_sim::scenario::QUEUE_VARIANTS.to_vec()
}

/// The version of the Rust core.
#[pyfunction]
fn version() -> &'static str {
    lowlat_sim::results::LOWLAT_VERSION
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("EmulatorError", m.py().get_type::<EmulatorError>())?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(emulate, m)?)?;
    m.add_function(wrap_pyfunction!(bench_relay, m)?)?;
    m.add_function(wrap_pyfunction!(rtp_send, m)?)?;
    m.add_function(wrap_pyfunction!(rtp_receive, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(bench_dumbbell, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    m.add_function(wrap_pyfunction!(queue_variants, m)?)?;
    Ok(())
}
