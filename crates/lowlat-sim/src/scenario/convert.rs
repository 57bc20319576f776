//! Converting the spec's links, queues, loss and assistance settings into the components' own
//! configs (`LinkConfig`, `QueueConfig`, `ZhugeConfig`, `SconeConfig`, `WifiConfig`), checked.

use super::error::{number, ScenarioError};
use super::spec::{AccessSpec, LinkSpec, LossSpec, QueueSpec, SconeSpec, WifiSpec, ZhugeSpec, D};
use lowlat_assist::{
    BurstRule, CapacitySource, InBandReports, SconeConfig, SconeMode, ZhugeConfig, ZhugeVariant,
};
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use lowlat_net::capacity::{Capacity, RateSchedule};
use lowlat_net::link::LinkConfig;
use lowlat_net::loss::LossModel;
use lowlat_net::queue::{CoDelConfig, DeviceQueueConfig, L4sConfig, QueueConfig, QueueLimit};
use lowlat_net::trace::{self, RateTraceOptions, TraceWarning};
use lowlat_net::wifi::WifiConfig;
use std::path::{Path, PathBuf};

pub(super) fn access_config(a: &AccessSpec, key: &str, label: &str) -> Result<LinkConfig, ScenarioError> {
    let rate = a.rate.map(|r| r.0).unwrap_or(Bitrate::gbps(1));
    if rate == Bitrate::ZERO {
        return Err(ScenarioError::new(label, format!("{key}.rate"), "got 0, expected a positive bitrate"));
    }
    Ok(LinkConfig {
        capacity: Capacity::Constant(rate),
        delay: a.delay.map(|d| d.0).unwrap_or(Duration::ZERO),
        jitter: Duration::ZERO,
        loss: LossModel::None,
        // An access link is never the bottleneck; its queue just must not drop bursts.
        queue: QueueConfig::DropTail { limit: QueueLimit::Unlimited },
    })
}

pub(super) fn link_config(
    l: &LinkSpec,
    key: &str,
    label: &str,
    base_dir: &Path,
    warnings: &mut Vec<String>,
) -> Result<LinkConfig, ScenarioError> {
    let err = |k: &str, msg: String| ScenarioError::new(label, format!("{key}.{k}"), msg);
    let given = [l.rate.is_some(), l.schedule.is_some(), l.trace.is_some()].iter().filter(|b| **b).count();
    if given != 1 {
        return Err(ScenarioError::new(
            label,
            key,
            "expected exactly one of `rate`, `schedule` or `trace`".to_string(),
        ));
    }
    if l.trace.is_none() {
        let given = [
            ("trace_format", l.trace_format.is_some()),
            ("trace_step", l.trace_step.is_some()),
            ("trace_scale", l.trace_scale.is_some()),
            ("trace_loop", l.trace_loop.is_some()),
        ];
        if let Some((k, _)) = given.iter().find(|g| g.1) {
            return Err(err(k, "only a link with a `trace` takes this key".into()));
        }
    }
    let capacity = if let Some(r) = l.rate {
        if r.0 == Bitrate::ZERO {
            return Err(err("rate", "got 0, expected a positive bitrate".into()));
        }
        Capacity::Constant(r.0)
    } else if let Some(points) = &l.schedule {
        if points.is_empty() {
            return Err(err("schedule", "expected at least one { at, rate } step".into()));
        }
        if points[0].at.0 != Duration::ZERO {
            return Err(err(
                "schedule[0].at",
                format!("got \"{}\", expected \"0 s\": the schedule must start at 0", points[0].at.0),
            ));
        }
        for w in points.windows(2).enumerate() {
            if w.1[1].at.0 <= w.1[0].at.0 {
                return Err(err(
                    &format!("schedule[{}].at", w.0 + 1),
                    format!("got \"{}\", expected a time after \"{}\"", w.1[1].at.0, w.1[0].at.0),
                ));
            }
        }
        let pts = points.iter().map(|p| (Time::ZERO + p.at.0, p.rate.0)).collect();
        Capacity::Schedule(RateSchedule::new(pts).map_err(|m| err("schedule", m))?)
    } else {
        let file = l.trace.as_deref().unwrap_or_default();
        let path = resolve(base_dir, file);
        let mut opts =
            RateTraceOptions { repeat: l.trace_loop.unwrap_or(true), ..RateTraceOptions::default() };
        if let Some(d) = l.trace_step {
            let hour = Duration::from_secs(3600);
            if d.0 == Duration::ZERO || d.0 > hour {
                return Err(err(
                    "trace_step",
                    format!("got \"{}\", expected a positive duration of at most \"{hour}\"", d.0),
                ));
            }
            opts.step = Some(d.0);
        }
        if let Some(k) = l.trace_scale {
            if !(k.is_finite() && k > 0.0) {
                return Err(err("trace_scale", format!("got {}, expected a positive number", number(k))));
            }
            opts.scale = k;
        }
        let (cap, warns): (Capacity, Vec<TraceWarning>) = match l.trace_format.as_deref().unwrap_or("auto") {
            "auto" => trace::load_trace_auto(&path, &opts),
            "mahimahi" => trace::load_mahimahi(&path).map(|t| (Capacity::Opportunities(t), vec![])),
            "rate" => trace::load_rate_trace(&path, &opts).map(|(s, w)| (Capacity::Schedule(s), w)),
            other => {
                return Err(err(
                    "trace_format",
                    format!("got {other:?}, expected \"auto\", \"mahimahi\" or \"rate\""),
                ))
            }
        }
        .map_err(|e| err("trace", e.to_string()))?;
        warnings.extend(warns.into_iter().map(|w| w.to_string()));
        cap
    };
    let capacity = match (&l.wifi, capacity) {
        (None, c) => c,
        (Some(w), c) => {
            let channel = wifi_config(w, key, label)?;
            let rate = match c {
                Capacity::Constant(r) => {
                    RateSchedule::new(vec![(Time::ZERO, r)]).map_err(|m| err("rate", m))?
                }
                Capacity::Schedule(s) => s,
                // The trace's bytes per millisecond become the channel's mean rate.
                Capacity::Opportunities(d) => d.to_rate_schedule(),
                Capacity::Wifi { rate, .. } => rate,
            };
            Capacity::Wifi { rate, channel }
        }
    };
    let queue = match &l.queue {
        None => QueueConfig::default(),
        Some(q) => queue_config(q, &format!("{key}.queue"), label)?,
    };
    let loss = match &l.loss {
        None | Some(LossSpec::None) => LossModel::None,
        Some(LossSpec::Bernoulli { p }) => {
            check_prob(*p, &format!("{key}.loss.p"), label)?;
            LossModel::Bernoulli { p: *p }
        }
        Some(LossSpec::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad }) => {
            for (k, v) in [
                ("p_good_to_bad", p_good_to_bad),
                ("p_bad_to_good", p_bad_to_good),
                ("loss_in_good", loss_in_good),
                ("loss_in_bad", loss_in_bad),
            ] {
                check_prob(*v, &format!("{key}.loss.{k}"), label)?;
            }
            if *p_good_to_bad + *p_bad_to_good == 0.0 {
                return Err(err("loss", "p_good_to_bad and p_bad_to_good cannot both be 0".into()));
            }
            LossModel::GilbertElliott {
                p_good_to_bad: *p_good_to_bad,
                p_bad_to_good: *p_bad_to_good,
                loss_in_good: *loss_in_good,
                loss_in_bad: *loss_in_bad,
                bad: false,
            }
        }
    };
    Ok(LinkConfig {
        capacity,
        delay: l.delay.map(|d| d.0).unwrap_or(Duration::ZERO),
        jitter: l.jitter.map(|d| d.0).unwrap_or(Duration::ZERO),
        loss,
        queue,
    })
}

pub(super) fn scone_config(
    s: Option<&SconeSpec>,
    assist: &str,
    label: &str,
) -> Result<SconeConfig, ScenarioError> {
    let mut cfg = SconeConfig {
        mode: if assist == "scone" { SconeMode::Standard } else { SconeMode::Rtc },
        ..SconeConfig::default()
    };
    let Some(s) = s else { return Ok(cfg) };
    let err = |k: &str, msg: String| ScenarioError::new(label, format!("bottleneck.scone.{k}"), msg);
    let (rtc, standard) = (cfg.mode == SconeMode::Rtc, cfg.mode == SconeMode::Standard);
    for (k, given, ok) in [
        ("period", s.period.is_some(), rtc),
        ("refresh", s.refresh.is_some(), standard),
        ("policy_signal", s.policy_signal.is_some(), standard),
    ] {
        if given && !ok {
            let other = if rtc { "\"scone\"" } else { "\"scone-rtc\"" };
            return Err(err(k, format!("only used with assist = {other}; assist is {assist:?}")));
        }
    }
    cfg.period = s.period.map_or(cfg.period, |d| d.0);
    cfg.window = s.window.map_or(cfg.window, |d| d.0);
    cfg.refresh = s.refresh.map_or(cfg.refresh, |d| d.0);
    cfg.capacity = match s.capacity.as_deref() {
        None | Some("oracle") => CapacitySource::Oracle,
        Some("measured") => CapacitySource::Measured,
        Some(other) => {
            return Err(err("capacity", format!("got {other:?}, expected \"oracle\" or \"measured\"")))
        }
    };
    if let Some(n) = s.policy_signal {
        if !(0..=127).contains(&n) {
            return Err(err(
                "policy_signal",
                format!("got {n}, expected a SCONE rate signal 0-126 (100 kbit/s x 10^(n/20)) or 127 (none)"),
            ));
        }
        cfg.policy_signal = n as u8;
    }
    cfg.validate().map_err(|m| {
        let (k, rest) = m.split_once(": ").unwrap_or(("", m.as_str()));
        err(k, rest.to_string())
    })?;
    Ok(cfg)
}

pub(super) fn zhuge_config(
    z: Option<&ZhugeSpec>,
    wifi: bool,
    label: &str,
) -> Result<ZhugeConfig, ScenarioError> {
    let err = |k: &str, msg: String| ScenarioError::new(label, format!("bottleneck.zhuge.{k}"), msg);
    let variant = match z.and_then(|z| z.variant.as_deref()) {
        None | Some("artifact") => ZhugeVariant::Artifact,
        Some("paper") => ZhugeVariant::Paper,
        Some(other) => {
            return Err(err("variant", format!("got {other:?}, expected \"artifact\" or \"paper\"")))
        }
    };
    let mut cfg = ZhugeConfig::for_variant(variant);
    cfg.teller.head_of_line = wifi;
    // The artifact's 5 ms aggregate allowance exists only in its Wi-Fi mode.
    if !wifi {
        cfg.teller.burst_rule = BurstRule::None;
    }
    let Some(z) = z else { return Ok(cfg) };
    match z.in_band.as_deref() {
        None => {}
        Some("sampled") => cfg.in_band = InBandReports::Sampled { delay: Duration::from_millis(1) },
        Some("per-packet") => {
            let ms = if variant == ZhugeVariant::Artifact { 1 } else { 5 };
            cfg.in_band = InBandReports::PerPacket { interval: Duration::from_millis(ms) }
        }
        Some(other) => {
            return Err(err("in_band", format!("got {other:?}, expected \"sampled\" or \"per-packet\"")))
        }
    }
    match z.ack_hold.as_deref() {
        None => {}
        Some("accumulate") => cfg.ack_hold.accumulate = true,
        Some("in-order") => cfg.ack_hold.accumulate = false,
        Some(other) => {
            return Err(err("ack_hold", format!("got {other:?}, expected \"accumulate\" or \"in-order\"")))
        }
    }
    if let Some(c) = z.ack_copy {
        cfg.ack_hold.copy = c;
    }
    if let Some(w) = z.whole_ms {
        cfg.teller.whole_ms = w;
    }
    let positive = |k: &str, d: Option<D>| -> Result<Option<Duration>, ScenarioError> {
        match d {
            Some(d) if d.0 == Duration::ZERO => {
                Err(err(k, "got \"0 s\", expected a positive duration".into()))
            }
            other => Ok(other.map(|d| d.0)),
        }
    };
    if let Some(d) = positive("report_interval", z.report_interval)? {
        cfg.in_band = match cfg.in_band {
            InBandReports::Sampled { .. } => InBandReports::Sampled { delay: d },
            InBandReports::PerPacket { .. } => InBandReports::PerPacket { interval: d },
        };
    }
    if let Some(d) = positive("frame_interval", z.frame_interval)? {
        cfg.teller.frame_interval = d;
    }
    if let Some(d) = z.max_hold {
        cfg.ack_hold.max_hold = d.0;
    }
    if let Some(h) = z.head_of_line {
        cfg.teller.head_of_line = h;
    }
    let max_burst = z.max_burst.map(|b| b.0).unwrap_or(Bytes(65_535));
    cfg.teller.burst_rule = match z.burst_rule.as_deref() {
        None | Some("join-aggregate") if z.max_burst.is_some() => {
            return Err(err("max_burst", "only used with burst_rule = \"max-burst\"".into()));
        }
        None => cfg.teller.burst_rule,
        Some("join-aggregate") => BurstRule::JoinAggregate { within: Duration::from_millis(5) },
        Some("max-burst") => BurstRule::MaxBurst { max_burst },
        Some("none") => BurstRule::None,
        Some(other) => {
            return Err(err(
                "burst_rule",
                format!("got {other:?}, expected \"join-aggregate\", \"max-burst\" or \"none\""),
            ))
        }
    };
    cfg.validate().map_err(|m| {
        let (k, rest) = m.split_once(": ").unwrap_or(("", m.as_str()));
        err(k, rest.to_string())
    })?;
    Ok(cfg)
}

fn wifi_config(w: &WifiSpec, key: &str, label: &str) -> Result<WifiConfig, ScenarioError> {
    let d = WifiConfig::default();
    let cfg = WifiConfig {
        access_min: w.access_min.map_or(d.access_min, |x| x.0),
        access_max: w.access_max.map_or(d.access_max, |x| x.0),
        outage_probability: w.outage_probability.unwrap_or(d.outage_probability),
        outage_mean: w.outage_mean.map_or(d.outage_mean, |x| x.0),
        max_aggregate: w.max_aggregate.map_or(d.max_aggregate, |x| x.0),
    };
    cfg.validate().map_err(|m| {
        let (k, rest) = m.split_once(": ").unwrap_or(("", m.as_str()));
        ScenarioError::new(label, format!("{key}.wifi.{k}"), rest.to_string())
    })?;
    Ok(cfg)
}

pub(super) fn resolve(base_dir: &Path, file: &str) -> PathBuf {
    let p = Path::new(file);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base_dir.join(p)
    }
}

fn check_prob(p: f64, key: &str, label: &str) -> Result<(), ScenarioError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(ScenarioError::new(
            label,
            key,
            format!("got {}, expected a probability in [0, 1]", number(p)),
        ));
    }
    Ok(())
}

/// Reads a queue limit: `"300 ms"`, `"64 kB"`, `"100 packets"`, `"unlimited"`.
pub fn parse_queue_limit(s: &str) -> Result<QueueLimit, String> {
    let t = s.trim();
    if t == "unlimited" {
        return Ok(QueueLimit::Unlimited);
    }
    if let Some(n) = t.strip_suffix("packets").or_else(|| t.strip_suffix("packet")) {
        return match n.trim().parse::<u32>() {
            Ok(n) if n > 0 => Ok(QueueLimit::Packets(n)),
            _ => {
                Err(format!("got {s:?}, expected a positive whole number of packets such as \"100 packets\""))
            }
        };
    }
    if let Ok(d) = t.parse::<Duration>() {
        return Ok(QueueLimit::Time(d));
    }
    if let Ok(b) = t.parse::<Bytes>() {
        return Ok(QueueLimit::Bytes(b));
    }
    Err(format!("got {s:?}, expected a time (\"300 ms\"), a size (\"64 kB\"), a packet count (\"100 packets\") or \"unlimited\""))
}

fn queue_config(q: &QueueSpec, key: &str, label: &str) -> Result<QueueConfig, ScenarioError> {
    let qdisc = qdisc_config(q, key, label)?;
    let Some(device) = &q.device_limit else { return Ok(qdisc) };
    let packets = match parse_queue_limit(device) {
        Ok(QueueLimit::Packets(n)) => n,
        _ => {
            return Err(ScenarioError::new(
                label,
                format!("{key}.device_limit"),
                format!(
                    "got {device:?}, expected a positive whole number of packets such as \"100 packets\""
                ),
            ))
        }
    };
    Ok(QueueConfig::Device { qdisc: Box::new(qdisc), device: DeviceQueueConfig { limit_packets: packets } })
}

/// The queue itself (the qdisc when a device FIFO is behind it).
fn qdisc_config(q: &QueueSpec, key: &str, label: &str) -> Result<QueueConfig, ScenarioError> {
    let limit = match &q.limit {
        None => QueueLimit::Time(Duration::from_millis(300)),
        Some(s) => parse_queue_limit(s).map_err(|m| ScenarioError::new(label, format!("{key}.limit"), m))?,
    };
    let err = |k: &str, msg: String| ScenarioError::new(label, format!("{key}.{k}"), msg);
    let codel_keys = [("target", q.target.is_some()), ("interval", q.interval.is_some())];
    let l4s_keys = [("threshold", q.threshold.is_some()), ("max_threshold", q.max_threshold.is_some())];
    let refuse = |keys: &[(&str, bool)], what: &str| -> Result<(), ScenarioError> {
        match keys.iter().find(|k| k.1) {
            Some((k, _)) => Err(err(k, format!("`{k}` is not a parameter of kind = {:?} ({what})", q.kind))),
            None => Ok(()),
        }
    };
    match q.kind.as_str() {
        "droptail" | "fifo" => {
            refuse(&codel_keys, "a CoDel parameter")?;
            refuse(&l4s_keys, "an L4S parameter")?;
            if q.ecn == Some(true) {
                return Err(err(
                    "ecn",
                    "a drop-tail queue cannot mark ECN; use kind = \"codel\" with ecn = true, or kind = \"l4s\""
                        .into(),
                ));
            }
            Ok(QueueConfig::DropTail { limit })
        }
        "codel" => {
            refuse(&l4s_keys, "an L4S parameter")?;
            let mut config = CoDelConfig::default();
            if let Some(t) = q.target {
                config.target = t.0;
            }
            if let Some(i) = q.interval {
                config.interval = i.0;
            }
            if config.target == Duration::ZERO || config.interval == Duration::ZERO {
                return Err(ScenarioError::new(label, key, "CoDel target and interval must be positive"));
            }
            config.ecn = q.ecn.unwrap_or(false);
            Ok(QueueConfig::CoDel { config, limit })
        }
        "l4s" => {
            refuse(&codel_keys, "a CoDel parameter")?;
            if q.ecn == Some(false) {
                return Err(err(
                    "ecn",
                    "an l4s queue always marks ECT(1) packets; remove `ecn = false`".into(),
                ));
            }
            let mut config = L4sConfig::default();
            if let Some(t) = q.threshold {
                config.threshold = t.0;
                config.max_threshold = t.0;
            }
            if let Some(t) = q.max_threshold {
                config.max_threshold = t.0;
            }
            config.validate().map_err(|m| {
                let (k, rest) = m.split_once(": ").unwrap_or(("", m.as_str()));
                err(k, rest.to_string())
            })?;
            Ok(QueueConfig::L4s { config, limit })
        }
        other => Err(err("kind", format!("got {other:?}, expected \"droptail\", \"codel\" or \"l4s\""))),
    }
}
