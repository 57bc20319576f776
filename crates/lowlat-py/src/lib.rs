//! Python bindings of lowlat (`lowlat._native`). Thin on purpose: each function converts its
//! arguments, calls into `lowlat-sim`, and converts the answer. The user-facing API, its
//! documentation and all presentation live in the `lowlat` Python package.

use lowlat_core::{Bitrate, Bytes, Duration, Time};
use lowlat_sim::limits::{self, Limits};
use lowlat_sim::results::{Column, Table};
use lowlat_sim::{bench, Format, Scenario};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
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

/// The limits of a run: the default, with the memory budget given as a size (`"8 GB"`).
fn limits_with(memory_budget: Option<&str>) -> PyResult<Limits> {
    let mut l = Limits::default();
    if let Some(b) = memory_budget {
        let bytes: Bytes = b.parse().map_err(|e| {
            ScenarioError::new_err(format!("memory budget: got {b:?}, expected {}", lowlat_core_expected(e)))
        })?;
        if bytes.0 == 0 {
            return Err(ScenarioError::new_err(format!("memory budget: got {b:?}, expected a size above 0")));
        }
        l.memory_budget = bytes.0;
    }
    Ok(l)
}

fn lowlat_core_expected(e: lowlat_core::units::ParseUnitError) -> String {
    e.expected.to_string()
}

/// Checks a scenario against the run limits (memory, events, meaningful quantities).
fn check_limits(s: &Scenario, memory_budget: Option<&str>) -> PyResult<limits::Estimate> {
    limits::check(s, &limits_with(memory_budget)?).map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// Validates a scenario, its run limits included; returns `(name, description, warnings)` or
/// raises `ScenarioError`.
#[pyfunction]
#[pyo3(signature = (text, format, label, base_dir, memory_budget=None))]
fn validate(
    text: &str,
    format: &str,
    label: &str,
    base_dir: &str,
    memory_budget: Option<&str>,
) -> PyResult<(String, String, Vec<String>)> {
    let s = parse(text, format, label, base_dir)?;
    check_limits(&s, memory_budget)?;
    Ok((s.name, s.description, s.warnings))
}

/// The estimated memory (bytes) and events of a run of the scenario.
#[pyfunction]
#[pyo3(signature = (text, format, label, base_dir))]
fn estimate(text: &str, format: &str, label: &str, base_dir: &str) -> PyResult<(u64, u64)> {
    let e = limits::estimate(&parse(text, format, label, base_dir)?);
    Ok((e.memory_bytes, e.events))
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

impl Simulation {
    fn handle(&self, flow: &str) -> PyResult<lowlat_cc::ExternalHandle> {
        self.sim()?
            .external_controllers()
            .into_iter()
            .find(|(id, _, _)| id == flow)
            .map(|(_, _, h)| h)
            .ok_or_else(|| PyValueError::new_err(format!("flow {flow:?} has no external controller")))
    }
}

/// A Python callable as the decision of an external controller.
struct PyCallback(Py<PyAny>);

impl lowlat_cc::RateCallback for PyCallback {
    fn on_feedback(&mut self, now: Time, r: &lowlat_cc::FeedbackReport) -> Result<Option<f64>, String> {
        Python::attach(|py| {
            let n = r.packets.len();
            let (mut seq, mut send, mut arrival, mut size, mut ecn) = (
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
            );
            for p in &r.packets {
                seq.push(p.sent.seq);
                send.push(p.sent.send_time.as_secs_f64());
                arrival.push(p.arrival.map_or(f64::NAN, Time::as_secs_f64));
                size.push(p.sent.size.0);
                ecn.push(p.ecn);
            }
            let args = (now.as_secs_f64(), r.report_time.as_secs_f64(), seq, send, arrival, size, ecn);
            let answer = self.0.bind(py).call1(args).map_err(|e| e.to_string())?;
            if answer.is_none() {
                return Ok(None);
            }
            answer.extract::<f64>().map(Some).map_err(|_| {
                format!(
                    "target_bitrate: got {}, expected a number of bit/s",
                    answer.repr().map_or("?".into(), |r| r.to_string())
                )
            })
        })
    }
}

#[pymethods]
impl Simulation {
    /// Builds a simulation from scenario text; `seed` overrides the scenario's seed, `cc` the
    /// controller of every video flow, `queue` the bottleneck queues (`"droptail"`, `"codel"`).
    #[new]
    #[pyo3(signature = (text, format, label, base_dir, seed=None, cc=None, queue=None, rtt_s=None, jitter_s=None, memory_budget=None))]
    #[allow(clippy::too_many_arguments)]
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
        memory_budget: Option<&str>,
    ) -> PyResult<Self> {
        let mut s = parse(text, format, label, base_dir)?;
        if let Some(cc) = cc {
            s = s.with_cc(cc).map_err(|e| ScenarioError::new_err(e.to_string()))?;
        }
        if let Some(q) = queue {
            s = s.with_queue(q).map_err(|e| ScenarioError::new_err(e.to_string()))?;
        }
        if let Some(rtt) = rtt_s {
            // Below a million seconds: the run limits then compare them with the duration.
            let ok = |x: f64| x.is_finite() && (0.0..1e6).contains(&x);
            if !ok(rtt) || !jitter_s.is_none_or(ok) {
                return Err(ScenarioError::new_err(format!(
                    "rtt_s, jitter_s: got {rtt}, {}, expected seconds from 0 to 1e6",
                    jitter_s.unwrap_or(0.0)
                )));
            }
            s = s.with_path(Duration::from_secs_f64(rtt), Duration::from_secs_f64(jitter_s.unwrap_or(0.0)));
        }
        if let Some(seed) = seed {
            s.seed = seed;
        }
        check_limits(&s, memory_budget)?;
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

    /// The simulated second at which scenario `text` departs from the one being run, when it
    /// differs only in its bottleneck's capacity (`None`: never); raises `ScenarioError` naming
    /// what else differs.
    fn bottleneck_departure_s(
        &self,
        text: &str,
        format: &str,
        label: &str,
        base_dir: &str,
    ) -> PyResult<Option<f64>> {
        let s = parse(text, format, label, base_dir)?;
        let at = self.sim()?.bottleneck_departure(&s).map_err(ScenarioError::new_err)?;
        Ok(at.map(Time::as_secs_f64))
    }

    /// Continues the run as one built from scenario `text` would have gone on (see
    /// `lowlat_sim::Simulation::switch_bottleneck`): raises `ScenarioError` if it differs in
    /// more than its bottleneck's capacity, `RuntimeError` (nothing changed) if the run has
    /// already worked something out with the capacity where it differs.
    fn switch_bottleneck(&mut self, text: &str, format: &str, label: &str, base_dir: &str) -> PyResult<()> {
        let s = parse(text, format, label, base_dir)?;
        let sim =
            self.inner.as_mut().ok_or_else(|| PyRuntimeError::new_err("this simulation has finished"))?;
        sim.bottleneck_departure(&s).map_err(ScenarioError::new_err)?;
        sim.switch_bottleneck(s).map_err(PyRuntimeError::new_err)
    }

    /// Says before the run which per-sample tables `finish` will build, so that nothing records
    /// the others (Zhuge's per-packet prediction log); the flows' summary is the same. `links`
    /// false: the links keep no statistics (the summary's `links` is empty, `link_stats` false). `prediction_sample`:
    /// Zhuge keeps a uniform random sample of at most that many predictions.
    #[pyo3(signature = (predictions=true, sender_rtt=true, series=true, frames=true, links=true, prediction_sample=None))]
    fn plan_tables(
        &mut self,
        predictions: bool,
        sender_rtt: bool,
        series: bool,
        frames: bool,
        links: bool,
        prediction_sample: Option<usize>,
    ) -> PyResult<()> {
        self.inner
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("this simulation has finished"))?
            .plan_tables(lowlat_sim::Tables {
                predictions,
                prediction_sample,
                sender_rtt,
                series,
                frames,
                links,
            })
            .map_err(PyRuntimeError::new_err)
    }

    /// Records every packet the endpoints send from now on as a pcap (`take_pcap` returns it).
    fn capture_pcap(&mut self) -> PyResult<()> {
        self.inner
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("this simulation has finished"))?
            .capture_pcap();
        Ok(())
    }

    /// The pcap recorded since `capture_pcap` (None if none was asked for).
    fn take_pcap<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let sim =
            self.inner.as_mut().ok_or_else(|| PyRuntimeError::new_err("this simulation has finished"))?;
        Ok(sim.take_pcap().map(|b| PyBytes::new(py, &b)))
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

    /// The flows whose controller is driven from outside: `[(flow id, controller name)]`.
    fn external_controllers(&self) -> PyResult<Vec<(String, String)>> {
        Ok(self.sim()?.external_controllers().into_iter().map(|(id, cc, _)| (id, cc)).collect())
    }

    /// Calls `callback(now_s, report_time_s, seq, send_s, arrival_s, size_bytes, ecn)` (lists;
    /// `arrival_s` NaN for a lost packet) per feedback report of flow `flow`; it answers the new
    /// target in bit/s or None.
    fn set_controller(&self, flow: &str, callback: Py<PyAny>) -> PyResult<()> {
        self.handle(flow)?.set_callback(Box::new(PyCallback(callback)));
        Ok(())
    }

    /// Sets the target of flow `flow`'s external controller (bit/s, clamped to its rmin..rmax);
    /// returns the target set.
    fn set_target(&self, flow: &str, bps: f64) -> PyResult<f64> {
        let h = self.handle(flow)?;
        h.set_target_bps(bps)
            .map(|r| r.as_bps_f64())
            .map_err(|e| PyValueError::new_err(format!("flow {flow}: {e}")))
    }

    /// What flow `flow`'s feedback said over the last `calls` calls (1: since the last call):
    /// `(reports, received, lost, received_bytes, mean_delay_s, min_delay_s, max_delay_s,
    /// delay_gradient, loss_ratio)`.
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (flow, calls=1))]
    fn take_window(
        &self,
        flow: &str,
        calls: usize,
    ) -> PyResult<(u64, u64, u64, u64, f64, f64, f64, f64, f64)> {
        let w = self.handle(flow)?.take_window_over(calls);
        Ok((
            w.reports,
            w.received,
            w.lost,
            w.received_bytes,
            w.mean_delay_s(),
            w.delay_min_s,
            w.delay_max_s,
            w.delay_gradient(),
            w.loss_ratio(),
        ))
    }

    /// The first error of an external controller, naming its flow and controller; None if none.
    fn controller_error(&self) -> PyResult<Option<String>> {
        Ok(self
            .sim()?
            .external_controllers()
            .into_iter()
            .find_map(|(id, cc, h)| h.error().map(|e| format!("flow {id} ({cc}): {e}"))))
    }

    /// Ends the run: `(summary_json, flow_series, link_series, predictions, frames,
    /// sender_rtt)`, tables as dicts of lists (`predictions`: Zhuge's, empty without it;
    /// `frames` and `sender_rtt`: see `lowlat_sim::RunResult`). `predictions` / `sender_rtt` /
    /// `series` (flow and link series) / `frames` false: that table is not built (empty; the
    /// summary is the same).
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (predictions=true, sender_rtt=true, series=true, frames=true))]
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
        predictions: bool,
        sender_rtt: bool,
        series: bool,
        frames: bool,
    ) -> PyResult<(
        String,
        Bound<'py, PyDict>,
        Bound<'py, PyDict>,
        Bound<'py, PyDict>,
        Bound<'py, PyDict>,
        Bound<'py, PyDict>,
    )> {
        let sim = self.inner.take().ok_or_else(|| PyRuntimeError::new_err("this simulation has finished"))?;
        let result = py.detach(|| {
            sim.finish_with(lowlat_sim::Tables {
                predictions,
                prediction_sample: None,
                sender_rtt,
                series,
                frames,
                links: true,
            })
        });
        Ok((
            result.summary_json(),
            table(py, &result.flow_series)?,
            table(py, &result.link_series)?,
            table(py, &result.predictions)?,
            table(py, &result.frames)?,
            table(py, &result.sender_rtt)?,
        ))
    }
}

/// A result table as `{name: column}`: a non-empty numeric column travels as `(dtype, bytes)`
/// (`"<f8"` or `"<i8"`, little-endian), which Python reads with `numpy.frombuffer` (a list of
/// Python numbers per value cost Zhuge runs, with a prediction per packet, a quarter of their
/// time); a non-empty label column as `("labels", distinct values, u32 indices as bytes)` (see
/// [`label_codes`]); empty columns as lists.
fn table<'py>(py: Python<'py>, t: &Table) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, col) in &t.columns {
        match col {
            Column::F64(v) if !v.is_empty() => {
                d.set_item(name, ("<f8", packed(py, v, |x| x.to_le_bytes())?))?
            }
            Column::I64(v) if !v.is_empty() => {
                d.set_item(name, ("<i8", packed(py, v, |x| x.to_le_bytes())?))?
            }
            Column::Str(v) if !v.is_empty() => {
                let (labels, codes) = label_codes(v);
                d.set_item(name, ("labels", labels, packed(py, &codes, |x| x.to_le_bytes())?))?
            }
            Column::Labels { values, codes } if !codes.is_empty() => {
                // Already the ("labels", distinct values, u32 codes) form `_column` reads.
                d.set_item(name, ("labels", values, packed(py, codes, |x| x.to_le_bytes())?))?
            }
            Column::Labels { .. } => d.set_item(name, Vec::<String>::new())?,
            Column::F64(v) => d.set_item(name, v)?,
            Column::I64(v) => d.set_item(name, v)?,
            Column::Str(v) => d.set_item(name, v)?,
        }
    }
    Ok(d)
}

/// `values` packed little-endian into a new `bytes`, written in place (a table of Zhuge's
/// per-packet predictions has millions of rows: no intermediate buffer).
fn packed<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    le_bytes: impl Fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, values.len() * N, |buf| {
        for (chunk, &x) in buf.chunks_exact_mut(N).zip(values) {
            chunk.copy_from_slice(&le_bytes(x));
        }
        Ok(())
    })
}

/// A label column as its distinct values (in order of first appearance) and, per row, the index
/// of its value (`u32`): a column of a few flow or link ids over up to millions of rows (Copa's
/// per-ACK RTT samples) then crosses as a few Python strings and packed indices, not one Python
/// string per row.
fn label_codes(values: &[String]) -> (Vec<&str>, Vec<u32>) {
    let mut labels: Vec<&str> = Vec::new();
    let mut index: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut codes = Vec::with_capacity(values.len());
    let mut last: Option<(&str, u32)> = None;
    for v in values {
        let code = match last {
            // Rows come in runs of one label (a flow's samples, a link's bins).
            Some((l, c)) if l == v.as_str() => c,
            _ => *index.entry(v.as_str()).or_insert_with(|| {
                labels.push(v.as_str());
                (labels.len() - 1) as u32
            }),
        };
        last = Some((v.as_str(), code));
        codes.push(code);
    }
    (labels, codes)
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
    if !(duration_s.is_finite() && duration_s > 0.0 && duration_s < 1e9) {
        return Err(ScenarioError::new_err(format!(
            "duration: got {duration_s} s, expected a positive number of seconds below 1e9"
        )));
    }
    if rate_bps == 0 {
        return Err(ScenarioError::new_err("rate: got 0, expected a positive bitrate"));
    }
    let (rate, duration) = (Bitrate::bps(rate_bps), Duration::from_secs_f64(duration_s));
    let scenario = match flow {
        "cbr" => bench::standard_dumbbell(rate, duration),
        "cbr-l4s" => bench::ecn_dumbbell(rate, duration),
        cc if lowlat_sim::scenario::is_window_controller(cc) => bench::tcp_dumbbell(cc, rate, duration),
        other => {
            return Err(ScenarioError::new_err(format!(
                "flow: got {other:?}, expected \"cbr\", \"cbr-l4s\" or a window controller"
            )))
        }
    };
    check_limits(&scenario, None)?;
    let f = py.detach(|| bench::run_case(scenario));
    Ok((f.name, f.wall_s, f.events, f.sim_s, f.delivered))
}

/// Runs the UDP relay of `lowlat emulate` until its duration ends or Ctrl-C: `(summary_json,
/// flow_series, link_series)`.
#[pyfunction]
#[pyo3(signature = (text, format, label, base_dir, listen, forward, duration_s=None, flow=None, pcap=None, max_datagram=65_507, overhead=0, max_clients=64))]
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
    max_clients: usize,
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
    cfg.max_clients = max_clients;
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

/// The link shell's pump (`lowlat shell`): opens TUN `inside_tun` in the network namespace at
/// `netns` and `host_tun` here, then `ready()` (the caller configures addresses and starts the
/// command), then pumps IP packets between them through the scenario's paths until
/// `should_stop()` is true or Ctrl-C; with `pcap`, writes the packets that crossed there.
/// Returns summary.json.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn shell_pump(
    py: Python<'_>,
    text: &str,
    format: &str,
    label: &str,
    base_dir: &str,
    netns: &str,
    inside_tun: &str,
    host_tun: &str,
    inside_addr: &str,
    host_addr: &str,
    ready: Bound<'_, PyAny>,
    should_stop: Bound<'_, PyAny>,
    pcap: Option<String>,
) -> PyResult<String> {
    let scenario = parse(text, format, label, base_dir)?;
    let ip = |a: &str| {
        a.parse::<std::net::Ipv4Addr>()
            .map_err(|_| EmulatorError::new_err(format!("address: got {a:?}, expected an IPv4 address")))
    };
    let (inside_ip, host_ip) = (ip(inside_addr)?, ip(host_addr)?);
    let inside = lowlat_emu::shell::open_tun(inside_tun, Some(netns)).map_err(EmulatorError::new_err)?;
    let outside = lowlat_emu::shell::open_tun(host_tun, None).map_err(EmulatorError::new_err)?;
    let mut pump = lowlat_emu::shell::ShellPump::new(scenario, inside, outside, inside_ip, host_ip)
        .map_err(EmulatorError::new_err)?;
    if let Some(p) = pcap {
        pump = pump.with_pcap(std::path::Path::new(&p)).map_err(EmulatorError::new_err)?;
    }
    ready.call0()?;
    let stop = should_stop.unbind();
    let report = py.detach(|| {
        pump.run(|| {
            Python::attach(|py| {
                py.check_signals().is_err()
                    || stop.bind(py).call0().and_then(|v| v.is_truthy()).unwrap_or(true)
            })
        })
    });
    Ok(report.summary_json)
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
/// controller and real feedback; returns `(summary_json, flow_series, link_series)` (the results contract).
#[pyfunction]
#[pyo3(signature = (text, format, label, base_dir, dest, bind="0.0.0.0:0", flow=None, duration_s=None, cc=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn rtp_send<'py>(
    py: Python<'py>,
    text: &str,
    format: &str,
    label: &str,
    base_dir: &str,
    dest: &str,
    bind: &str,
    flow: Option<&str>,
    duration_s: Option<f64>,
    cc: Option<&str>,
) -> PyResult<(String, Bound<'py, PyDict>, Bound<'py, PyDict>)> {
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
    let stop = || Python::attach(|py| py.check_signals().is_err());
    let out = py
        .detach(|| lowlat_emu::endpoint::run_send(&scenario, flow, &sock, dest, duration, stop))
        .map_err(EmulatorError::new_err)?;
    Ok((out.summary_json, table(py, &out.result.flow_series)?, table(py, &out.result.link_series)?))
}

/// `lowlat receive`: receives a scenario's media flow on `listen` and answers with real feedback;
/// returns `(summary_json, flow_series, link_series)` (the results contract).
#[pyfunction]
#[pyo3(signature = (text, format, label, base_dir, listen, flow=None, duration_s=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn rtp_receive<'py>(
    py: Python<'py>,
    text: &str,
    format: &str,
    label: &str,
    base_dir: &str,
    listen: &str,
    flow: Option<&str>,
    duration_s: Option<f64>,
) -> PyResult<(String, Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let scenario = parse(text, format, label, base_dir)?;
    let sock = std::net::UdpSocket::bind(listen)
        .map_err(|e| EmulatorError::new_err(format!("--listen {listen}: {e}")))?;
    let duration = positive_duration(duration_s)?;
    let stop = || Python::attach(|py| py.check_signals().is_err());
    let out = py
        .detach(|| lowlat_emu::endpoint::run_receive(&scenario, flow, &sock, duration, stop))
        .map_err(EmulatorError::new_err)?;
    Ok((out.summary_json, table(py, &out.result.flow_series)?, table(py, &out.result.link_series)?))
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

/// The congestion controllers a video flow can use (the scenario registry's).
#[pyfunction]
fn controllers() -> Vec<&'static str> {
    lowlat_sim::scenario::CONTROLLERS.to_vec()
}

/// The window controllers a bulk, web or downloads flow can use (the scenario registry's).
#[pyfunction]
fn window_controllers() -> Vec<&'static str> {
    lowlat_sim::scenario::WINDOW_CONTROLLERS.to_vec()
}

/// The bottleneck queue variants `queue=` accepts.
#[pyfunction]
fn queue_variants() -> Vec<&'static str> {
    lowlat_sim::scenario::QUEUE_VARIANTS.to_vec()
}

/// The Zhuge artifact's decoder replayed on one flow's frames in id order (see
/// `lowlat_media::decoder_replay`): `complete_s` and `newest_s` per frame (NaN: never), the
/// deadline in frames. Returns each frame's exit instant (NaN: none) and whether it was decoded.
#[pyfunction]
fn decoder_replay(
    complete_s: Vec<f64>,
    newest_s: Vec<f64>,
    discard_frames: usize,
) -> PyResult<(Vec<f64>, Vec<bool>)> {
    if complete_s.len() != newest_s.len() {
        return Err(PyValueError::new_err(format!(
            "complete_s and newest_s: got {} and {} values, expected one per frame",
            complete_s.len(),
            newest_s.len()
        )));
    }
    let at = |s: f64| (s.is_finite() && s >= 0.0).then(|| Time::from_secs_f64(s));
    let frames: Vec<lowlat_media::decoder_replay::FrameTimes> = complete_s
        .iter()
        .zip(&newest_s)
        .map(|(&c, &n)| lowlat_media::decoder_replay::FrameTimes { complete: at(c), newest: at(n) })
        .collect();
    let exits = lowlat_media::decoder_replay::in_order_exits(&frames, discard_frames);
    Ok((
        exits.iter().map(|e| e.left.map_or(f64::NAN, Time::as_secs_f64)).collect(),
        exits.iter().map(|e| e.decoded).collect(),
    ))
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
    m.add_function(wrap_pyfunction!(shell_pump, m)?)?;
    m.add_function(wrap_pyfunction!(bench_relay, m)?)?;
    m.add_function(wrap_pyfunction!(rtp_send, m)?)?;
    m.add_function(wrap_pyfunction!(rtp_receive, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(bench_dumbbell, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(decoder_replay, m)?)?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    m.add_function(wrap_pyfunction!(window_controllers, m)?)?;
    m.add_function(wrap_pyfunction!(queue_variants, m)?)?;
    Ok(())
}
