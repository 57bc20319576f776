//! What a run will cost, checked before it starts.
//!
//! A scenario can be valid and still unrunnable: `bin = "1 ns"` asks for ten billion bins per
//! series, `duration = "1e9 s"` for five billion, a 10 Tbit/s CBR source for a packet every
//! picosecond. [`check`] estimates the memory a run needs (bins per series x series, flows,
//! links, queues) and the events it will process, and refuses, with the estimate, what exceeds
//! the [`Limits`] (configurable: `lowlat run --memory-budget`, `LOWLAT_MEMORY_BUDGET`). It also
//! refuses quantities that would run but mean nothing (a propagation delay or a jitter longer
//! than the run) and flow ids that are not plain names.
//!
//! The per-item costs below were measured (see `tests/memory.rs` and the issue note): they make
//! an estimate, meant to be right within a factor of two, not an accounting.

use crate::scenario::{FlowConfig, Scenario, ScenarioError, TrafficKind};
use lowlat_core::Bitrate;
use lowlat_net::{Capacity, LinkConfig, QueueConfig, QueueLimit};

/// Bytes per series row over a run's life: the simulator's bin counters, the result table's row
/// and its copy as a pandas DataFrame (measured: about 460 B with 10 000 flows).
pub const BYTES_PER_SERIES_ROW: u64 = 512;
/// Bytes of a flow's state without traffic (measured: 3-4 kB for CBR flows).
pub const BYTES_PER_FLOW: u64 = 4 * 1024;
/// Extra bytes of a closed-loop flow (controller, encoder, pacer, transport state, its delay
/// histograms once it has many samples).
pub const BYTES_PER_CLOSED_LOOP_FLOW: u64 = 512 * 1024;
/// Bytes of a link's state (stats, queue, in-flight packets) without traffic.
pub const BYTES_PER_LINK: u64 = 2 * 1024;
/// A delay histogram holding many samples (3 significant digits up to seconds).
pub const BYTES_PER_HISTOGRAM: u64 = 160 * 1024;
/// A packet held in a queue or in flight.
pub const BYTES_PER_QUEUED_PACKET: u64 = 96;
/// Events per packet and hop (arrival at a queue, end of transmission, arrival at the next).
pub const EVENTS_PER_PACKET_HOP: u64 = 3;

/// The limits a run must stay within.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Estimated peak memory, bytes.
    pub memory_budget: u64,
    /// Estimated events (a proxy for wall time: about 10 million per second).
    pub max_events: u64,
}

/// 4 GiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 4 << 30;
/// About half an hour of wall time at 10 million events per second.
pub const DEFAULT_MAX_EVENTS: u64 = 20_000_000_000;

impl Default for Limits {
    fn default() -> Limits {
        Limits { memory_budget: DEFAULT_MEMORY_BUDGET, max_events: DEFAULT_MAX_EVENTS }
    }
}

/// What a run is estimated to need.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Bins in each series (`duration / bin`).
    pub bins_per_series: u64,
    /// Series: one per flow and per link.
    pub series: u64,
    /// Flows.
    pub flows: u64,
    /// Links (bottleneck, reverse, each access and egress link both ways).
    pub links: u64,
    /// Memory, bytes: the sum of the three below.
    pub memory_bytes: u64,
    /// Of which the series (bins x series).
    pub series_bytes: u64,
    /// Of which the queues full of the smallest packets.
    pub queue_bytes: u64,
    /// Of which the flows' and links' state.
    pub state_bytes: u64,
    /// Events (open-loop traffic only: closed-loop flows are held to their path's capacity).
    pub events: u64,
}

/// Bytes as a person reads them.
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}

fn peak_rate(c: &Capacity) -> Bitrate {
    match c {
        Capacity::Constant(r) => *r,
        Capacity::Schedule(s) | Capacity::Wifi { rate: s, .. } => {
            s.points().iter().map(|p| p.1).max().unwrap_or(Bitrate::ZERO)
        }
        Capacity::Opportunities(t) => {
            // Opportunities of `bytes_per_opportunity` spread over the period.
            let per_period = t.len() as u64 * u64::from(t.bytes_per_opportunity()) * 8;
            let period_ns = t.period().as_nanos().max(1);
            Bitrate::bps((per_period as u128 * 1_000_000_000 / period_ns as u128) as u64)
        }
    }
}

/// Packets a link's queue can hold, for packets of `min_packet` bytes (none for unlimited).
fn queue_packets(link: &LinkConfig, min_packet: u64) -> u64 {
    let (limit, device) = queue_limit(&link.queue);
    device
        + match limit {
            QueueLimit::Packets(n) => u64::from(n),
            QueueLimit::Unlimited => 0,
            l => l.bytes_at(peak_rate(&link.capacity)) / min_packet.max(1),
        }
}

/// A queue's limit, and the packets of the device FIFO behind it (0 without one).
fn queue_limit(q: &QueueConfig) -> (QueueLimit, u64) {
    match q {
        QueueConfig::DropTail { limit }
        | QueueConfig::CoDel { limit, .. }
        | QueueConfig::L4s { limit, .. } => (*limit, 0),
        QueueConfig::Device { qdisc, device } => {
            let (limit, behind) = queue_limit(qdisc);
            (limit, behind + u64::from(device.limit_packets))
        }
    }
}

/// Packets an open-loop flow sends (`None` for closed-loop flows).
fn open_loop_packets(f: &FlowConfig) -> Option<f64> {
    match f.kind {
        TrafficKind::Cbr | TrafficKind::Poisson => {
            let active = (f.stop - f.start).as_secs_f64();
            Some(f.rate.as_bps_f64() / (f.packet_size.0.max(1) * 8) as f64 * active)
        }
        _ => None,
    }
}

/// The estimate for `s`.
pub fn estimate(s: &Scenario) -> Estimate {
    let bins = s.duration.as_nanos().div_ceil(s.bin.as_nanos().max(1));
    let min_packet = s.flows.iter().map(|f| f.packet_size.0).min().unwrap_or(1500).max(40);
    let mut links = 2u64;
    let mut bytes: u128 = 0;
    let mut queues: u128 = 0;
    let mut events: u128 = 0;
    for l in [&s.bottleneck, &s.reverse] {
        bytes += u128::from(BYTES_PER_LINK + BYTES_PER_HISTOGRAM);
        queues += u128::from(queue_packets(l, min_packet)) * u128::from(BYTES_PER_QUEUED_PACKET);
    }
    for f in &s.flows {
        let packets = open_loop_packets(f);
        let busy = packets.is_none_or(|p| p > lowlat_net::NsHistogram::RAW_LIMIT as f64);
        let samples = if busy { BYTES_PER_HISTOGRAM } else { packets.unwrap_or(0.0) as u64 * 8 };
        bytes += u128::from(BYTES_PER_FLOW + samples);
        if packets.is_none() {
            bytes += u128::from(BYTES_PER_CLOSED_LOOP_FLOW);
        }
        let mut hops = 1u64;
        for l in [&f.access, &f.egress].into_iter().flatten() {
            links += 2;
            hops += 1;
            bytes += 2 * u128::from(BYTES_PER_LINK + samples);
            queues += 2 * u128::from(queue_packets(l, min_packet)) * u128::from(BYTES_PER_QUEUED_PACKET);
        }
        if let Some(p) = packets {
            events += (p * (EVENTS_PER_PACKET_HOP * hops) as f64) as u128;
        }
    }
    let flows = s.flows.len() as u64;
    let series = flows + links;
    let rows = u128::from(bins) * u128::from(series) * u128::from(BYTES_PER_SERIES_ROW);
    let clamp = |x: u128| u64::try_from(x).unwrap_or(u64::MAX);
    Estimate {
        bins_per_series: bins,
        series,
        flows,
        links,
        memory_bytes: clamp(bytes + queues + rows),
        series_bytes: clamp(rows),
        queue_bytes: clamp(queues),
        state_bytes: clamp(bytes),
        events: u64::try_from(events).unwrap_or(u64::MAX),
    }
}

fn error(s: &Scenario, key: &str, message: String) -> ScenarioError {
    ScenarioError { file: s.source.clone(), key: key.to_string(), message }
}

/// Checks `s` against `limits` and for quantities that would run but mean nothing; returns the
/// estimate.
pub fn check(s: &Scenario, limits: &Limits) -> Result<Estimate, ScenarioError> {
    check_quantities(s)?;
    for (i, f) in s.flows.iter().enumerate() {
        // One packet per nanosecond is the clock's resolution: faster sources would emit many
        // packets at one instant, forever.
        let gap_ns = f.packet_size.bits() as f64 * 1e9 / f.rate.as_bps_f64();
        if gap_ns < 1.0 && matches!(f.kind, TrafficKind::Cbr | TrafficKind::Poisson) {
            return Err(error(
                s,
                &format!("flows[{i}].rate"),
                format!(
                    "got \"{}\" with {} packets: a packet every {gap_ns:.3} ns, below the simulator's 1 ns \
                     resolution; expected a lower rate or larger packets",
                    f.rate, f.packet_size,
                ),
            ));
        }
    }
    let e = estimate(s);
    if e.memory_bytes > limits.memory_budget {
        let min_packet = s.flows.iter().map(|f| f.packet_size.0).min().unwrap_or(1500).max(40);
        // The queue that holds the most, named with its limit and rate: what to change.
        let largest = [("bottleneck", &s.bottleneck), ("reverse", &s.reverse)]
            .into_iter()
            .max_by_key(|(_, l)| queue_packets(l, min_packet))
            .map(|(k, l)| (k, l, queue_packets(l, min_packet)))
            .expect("two links");
        let (key, why) = if e.series_bytes >= e.queue_bytes.max(e.state_bytes) {
            ("bin".to_string(), String::new())
        } else if e.queue_bytes >= e.state_bytes {
            let (link, l, packets) = largest;
            let limit = match queue_limit(&l.queue).0 {
                QueueLimit::Time(d) => format!("\"{d}\""),
                QueueLimit::Bytes(b) => format!("\"{b}\""),
                QueueLimit::Packets(n) => format!("\"{n} packets\""),
                QueueLimit::Unlimited => "\"unlimited\"".into(),
            };
            (
                format!("{link}.queue.limit"),
                format!(
                    "; the largest: {link}.queue.limit {limit} at a peak rate of \"{}\" holds {packets} packets",
                    peak_rate(&l.capacity)
                ),
            )
        } else {
            ("flows".to_string(), String::new())
        };
        return Err(error(
            s,
            &key,
            format!(
                "the run would need about {} of memory, above the memory budget of {} (series: {} bins \
                 per series (duration {} / bin {}) x {} series = {}; queues full of {} B packets: {}; \
                 state of {} flows and {} links: {}{why}): use a wider bin, a shorter duration, smaller \
                 queues or fewer flows, or raise the budget (--memory-budget, LOWLAT_MEMORY_BUDGET)",
                human_bytes(e.memory_bytes),
                human_bytes(limits.memory_budget),
                e.bins_per_series,
                s.duration,
                s.bin,
                e.series,
                human_bytes(e.series_bytes),
                s.flows.iter().map(|f| f.packet_size.0).min().unwrap_or(1500).max(40),
                human_bytes(e.queue_bytes),
                e.flows,
                e.links,
                human_bytes(e.state_bytes),
            ),
        ));
    }
    if e.events > limits.max_events {
        return Err(error(
            s,
            "flows",
            format!(
                "the run would process about {:.1e} events (about {:.0} minutes at 10 million per \
                 second), above the limit of {:.1e}: shorten the duration or lower the rates",
                e.events as f64,
                e.events as f64 / 1e7 / 60.0,
                limits.max_events as f64
            ),
        ));
    }
    Ok(e)
}

/// A flow id: letters, digits, `_`, `-`, `.`, not starting with a dot, at most 64 characters
/// (ids name series, links and, in the Python package, files).
pub fn is_plain_name(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && !id.starts_with('.')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn check_link(s: &Scenario, l: &LinkConfig, key: &str) -> Result<(), ScenarioError> {
    for (what, d) in [("delay", l.delay), ("jitter", l.jitter)] {
        if d >= s.duration {
            return Err(error(
                s,
                &format!("{key}.{what}"),
                format!(
                    "got \"{d}\", expected less than the run's duration (\"{}\"): no packet would \
                     arrive in time to count",
                    s.duration
                ),
            ));
        }
    }
    Ok(())
}

/// Quantities that parse and run but would make the results meaningless.
pub fn check_quantities(s: &Scenario) -> Result<(), ScenarioError> {
    check_link(s, &s.bottleneck, "bottleneck")?;
    check_link(s, &s.reverse, "reverse")?;
    for (i, f) in s.flows.iter().enumerate() {
        if !is_plain_name(&f.id) {
            return Err(error(
                s,
                &format!("flows[{i}].id"),
                format!(
                    "got {:?}, expected a plain name: letters, digits, '_', '-' and '.', not starting \
                     with '.', at most 64 characters",
                    f.id
                ),
            ));
        }
        if let Some(a) = &f.access {
            check_link(s, a, &format!("flows[{i}].access"))?;
        }
        if let Some(a) = &f.egress {
            check_link(s, a, &format!("flows[{i}].egress"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Format;
    use std::path::Path;

    fn scenario(body: &str) -> Scenario {
        Scenario::parse(body, Format::Toml, "t.toml", Path::new(".")).unwrap()
    }

    const FLOW: &str = "[[flows]]\nid = \"a\"\nkind = \"cbr\"\nrate = \"1 Mbit/s\"\n";

    #[test]
    fn one_ns_bins_are_refused_with_the_estimate() {
        let s = scenario(&format!(
            "duration = \"10 s\"\nbin = \"1 ns\"\n[bottleneck]\nrate = \"10 Mbit/s\"\n{FLOW}"
        ));
        let e = check(&s, &Limits::default()).unwrap_err().to_string();
        assert!(e.starts_with("t.toml: bin: the run would need about"), "{e}");
        assert!(e.contains("10000000000 bins per series") && e.contains("memory budget of 4.3 GB"), "{e}");
    }

    #[test]
    fn a_long_run_with_a_late_flow_is_refused_and_the_budget_is_configurable() {
        let s = scenario(&format!(
            "duration = \"1e9 s\"\n[bottleneck]\nrate = \"10 Mbit/s\"\n{FLOW}start = \"999999990 s\"\n"
        ));
        assert!(check(&s, &Limits::default()).unwrap_err().to_string().contains("bins per series"));
        let e = estimate(&s);
        assert_eq!(e.bins_per_series, 5_000_000_000);
        assert!(e.memory_bytes > 5_000_000_000 * 3 * BYTES_PER_SERIES_ROW);
        let huge = Limits { memory_budget: u64::MAX, ..Limits::default() };
        assert!(check(&s, &huge).is_ok());
        // The default run of the catalog fits easily.
        let small = scenario(&format!("duration = \"60 s\"\n[bottleneck]\nrate = \"10 Mbit/s\"\n{FLOW}"));
        let e = check(&small, &Limits::default()).unwrap();
        assert!(e.memory_bytes < 10_000_000, "{e:?}");
    }

    #[test]
    fn sources_faster_than_a_packet_per_ns_and_endless_runs_are_refused() {
        let s = scenario(
            "duration = \"1 s\"\n[bottleneck]\nrate = \"1000000 Gbit/s\"\n[[flows]]\nid = \"a\"\nkind = \"cbr\"\nrate = \"950000 Gbit/s\"\n",
        );
        let e = check(&s, &Limits::default()).unwrap_err().to_string();
        assert!(e.contains("flows[0].rate") && e.contains("1 ns resolution"), "{e}");
        let s = scenario(
            "duration = \"100000 s\"\nbin = \"100 s\"\n[bottleneck]\nrate = \"10 Gbit/s\"\n[[flows]]\nid = \"a\"\nkind = \"cbr\"\nrate = \"9 Gbit/s\"\n",
        );
        let e = check(&s, &Limits::default()).unwrap_err().to_string();
        assert!(e.contains("events"), "{e}");
    }

    #[test]
    fn meaningless_delays_jitters_and_ids_are_refused() {
        let base = "duration = \"60 s\"\n[bottleneck]\nrate = \"10 Mbit/s\"\n";
        let e = check(&scenario(&format!("{base}delay = \"9e9 s\"\n{FLOW}")), &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bottleneck.delay") && e.contains("less than the run's duration"), "{e}");
        let e = check(&scenario(&format!("{base}jitter = \"1e6 s\"\n{FLOW}")), &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bottleneck.jitter"), "{e}");
        let flow = FLOW.replace("id = \"a\"", "id = \"../../\"");
        let e = check(&scenario(&format!("{base}{flow}")), &Limits::default()).unwrap_err().to_string();
        assert!(e.contains("flows[0].id") && e.contains("plain name"), "{e}");
        assert!(is_plain_name("video-1.up_2") && !is_plain_name("a b") && !is_plain_name(".x"));
    }
}
