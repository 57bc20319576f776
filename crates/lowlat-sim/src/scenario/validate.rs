//! Checking a deserialised spec: what types cannot say (positive rates, flows that stop after they
//! start, keys that only some kinds of flow take), flow by flow, into a [`Scenario`].

use super::config::{
    FlowConfig, MediaConfig, Repair, Scenario, TrafficKind, TransportFlowConfig, WebConfig, SCREAM_FEEDBACK,
};
use super::convert::{access_config, link_config, resolve, scone_config, zhuge_config};
use super::error::{number, ScenarioError};
use super::registry::{
    is_external_controller, is_window_controller, rate_controller, window_controller_with, ASSISTS,
    CONTROLLERS, EXTERNAL_FORMS, WINDOW_CONTROLLERS,
};
use super::spec::{FlowSpec, ScenarioSpec};
use lowlat_core::{Bitrate, Bytes, Duration, Ecn, Time};
use lowlat_media::receiver::{FeedbackFormat, FeedbackSchedule};
use lowlat_media::source::{Codec, FrameSizeTrace, VideoSourceConfig};
use lowlat_net::capacity::Capacity;
use lowlat_net::link::LinkConfig;
use lowlat_net::loss::LossModel;
use lowlat_net::queue::QueueConfig;
use lowlat_transport::ReceiverConfig;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

impl Scenario {
    /// Checks a deserialised spec and builds the scenario.
    pub fn from_spec(
        spec: ScenarioSpec,
        label: &str,
        base_dir: &Path,
        default_name: Option<String>,
    ) -> Result<Scenario, ScenarioError> {
        let err = |key: &str, msg: String| ScenarioError::new(label, key, msg);
        let duration = spec.duration.0;
        if duration == Duration::ZERO {
            return Err(err("duration", "got \"0 s\", expected a positive duration".into()));
        }
        let bin = spec.bin.map(|b| b.0).unwrap_or(Duration::from_millis(200));
        if bin == Duration::ZERO {
            return Err(err("bin", "expected a positive duration such as \"200 ms\"".into()));
        }
        let mut warnings = Vec::new();
        let bottleneck = link_config(&spec.bottleneck, "bottleneck", label, base_dir, &mut warnings)?;
        let assist = spec.bottleneck.assist.clone().unwrap_or_else(|| "none".into());
        if !ASSISTS.contains(&assist.as_str()) {
            return Err(err(
                "bottleneck.assist",
                format!("got {assist:?}, expected one of {}", ASSISTS.join(", ")),
            ));
        }
        if spec.bottleneck.zhuge.is_some() && assist != "zhuge" {
            return Err(err("bottleneck.zhuge", format!("settings for Zhuge, but assist is {assist:?}")));
        }
        if spec.bottleneck.scone.is_some() && !assist.starts_with("scone") {
            return Err(err(
                "bottleneck.scone",
                format!(
                    "settings for SCONE-PRO, but assist is {assist:?} (expected \"scone-rtc\" or \"scone\")"
                ),
            ));
        }
        let scone = scone_config(spec.bottleneck.scone.as_ref(), &assist, label)?;
        let zhuge = zhuge_config(
            spec.bottleneck.zhuge.as_ref(),
            matches!(bottleneck.capacity, Capacity::Wifi { .. }),
            label,
        )?;
        let reverse = match &spec.reverse {
            Some(r) => {
                if r.assist.is_some() || r.zhuge.is_some() || r.scone.is_some() {
                    return Err(err(
                        "reverse.assist",
                        "assistance sits at the forward bottleneck's queue".into(),
                    ));
                }
                link_config(r, "reverse", label, base_dir, &mut warnings)?
            }
            None => LinkConfig {
                capacity: bottleneck.capacity.clone(),
                delay: bottleneck.delay,
                jitter: Duration::ZERO,
                loss: LossModel::None,
                queue: QueueConfig::default(),
            },
        };
        if spec.flows.is_empty() {
            return Err(err("flows", "missing: a scenario needs at least one [[flows]] table".into()));
        }
        let mut ids = HashSet::new();
        let mut flows = Vec::with_capacity(spec.flows.len());
        for (i, f) in spec.flows.iter().enumerate() {
            let key = |k: &str| format!("flows[{i}].{k}");
            if f.id.is_empty() || !ids.insert(f.id.clone()) {
                return Err(err(
                    &key("id"),
                    format!("got {:?}, expected a non-empty id unique among the flows", f.id),
                ));
            }
            let kind = match f.kind.as_str() {
                "cbr" => TrafficKind::Cbr,
                "poisson" => TrafficKind::Poisson,
                "rtp-video" => TrafficKind::RtpVideo,
                "bulk" => TrafficKind::Bulk,
                "web" => TrafficKind::Web,
                "downloads" => TrafficKind::Downloads,
                other => {
                    return Err(err(
                        &key("kind"),
                        format!(
                            "got {other:?}, expected \"cbr\", \"poisson\", \"rtp-video\", \"bulk\", \"web\" or \"downloads\""
                        ),
                    ))
                }
            };
            let media = media_config(f, kind, &key, label, base_dir)?;
            let transport = transport_config(f, kind, &key, label)?;
            let rate = match (f.rate, &media) {
                (Some(r), _) => r.0,
                (None, Some(m)) => m.source.rmin,
                // A bulk flow's rate is its controller's business; this only sizes nothing.
                (None, None) if transport.is_some() => Bitrate::mbps(1),
                (None, None) => {
                    return Err(err(&key("rate"), format!("missing: a {} flow needs a rate", f.kind)))
                }
            };
            if rate == Bitrate::ZERO {
                return Err(err(&key("rate"), "got 0, expected a positive bitrate".into()));
            }
            let packet_size = f.packet_size.map(|b| b.0).unwrap_or(Bytes(1200));
            if packet_size.0 < 28 || packet_size.0 > 65_535 {
                return Err(err(
                    &key("packet_size"),
                    format!("got \"{packet_size}\", expected 28 B to 65535 B"),
                ));
            }
            if let Some(m) = &media {
                check_frame_size(m, packet_size).map_err(|m| err(&key("rmax"), m))?;
            }
            let start = f.start.map(|d| d.0).unwrap_or(Duration::ZERO);
            let stop = f.stop.map(|d| d.0).unwrap_or(duration);
            if stop <= start {
                return Err(err(
                    &key("stop"),
                    format!("got \"{stop}\", expected a time after start (\"{start}\")"),
                ));
            }
            if stop > duration {
                return Err(err(
                    &key("stop"),
                    format!("got \"{stop}\", expected at most the scenario's duration (\"{duration}\")"),
                ));
            }
            let reverse = match f.direction.as_deref().unwrap_or("forward") {
                "forward" => false,
                "reverse" => true,
                other => {
                    return Err(err(
                        &key("direction"),
                        format!("got {other:?}, expected \"forward\" or \"reverse\""),
                    ))
                }
            };
            let mut media = media;
            if let Some(p) = f.pause {
                let Some(m) = media.as_mut() else {
                    return Err(err(
                        &key("pause"),
                        format!("only rtp-video flows take `pause`; this flow is {:?}", f.kind),
                    ));
                };
                if p.to.0 <= p.from.0 {
                    return Err(err(
                        &key("pause.to"),
                        format!("got \"{}\", expected a time after pause.from (\"{}\")", p.to.0, p.from.0),
                    ));
                }
                m.pause = Some((Time::ZERO + p.from.0, Time::ZERO + p.to.0));
            }
            let ecn = flow_ecn(f, kind, media.as_ref(), &key, label)?;
            if let Some(w) = media.as_ref().and_then(|m| ecn_ignored_warning(m, ecn, &key("ecn"))) {
                warnings.push(w);
            }
            let access = f.access.as_ref().map(|a| access_config(a, &key("access"), label)).transpose()?;
            let egress = f.egress.as_ref().map(|a| access_config(a, &key("egress"), label)).transpose()?;
            flows.push(FlowConfig {
                id: f.id.clone(),
                kind,
                rate,
                packet_size,
                start: Time::ZERO + start,
                stop: Time::ZERO + stop,
                access,
                egress,
                media,
                reverse,
                transport,
                ecn,
            });
        }
        Ok(Scenario {
            name: spec.name.or(default_name).unwrap_or_else(|| "scenario".into()),
            source: label.to_string(),
            description: spec.description.unwrap_or_default(),
            seed: spec.seed,
            duration,
            bin,
            bottleneck,
            assist,
            zhuge,
            scone,
            reverse,
            flows,
            warnings,
        })
    }
}

/// The video settings of flow `f`, checked; `None` for other kinds (which must not carry them).
fn media_config(
    f: &FlowSpec,
    kind: TrafficKind,
    key: &dyn Fn(&str) -> String,
    label: &str,
    base_dir: &Path,
) -> Result<Option<MediaConfig>, ScenarioError> {
    let err = |k: &str, msg: String| ScenarioError::new(label, key(k), msg);
    if kind != TrafficKind::RtpVideo {
        for (k, given) in [
            (
                "cc",
                f.cc.is_some()
                    && !matches!(kind, TrafficKind::Bulk | TrafficKind::Web | TrafficKind::Downloads),
            ),
            ("fps", f.fps.is_some()),
            ("rmin", f.rmin.is_some()),
            ("rmax", f.rmax.is_some()),
            ("codec", f.codec.is_some()),
            ("codec_trace", f.codec_trace.is_some()),
            ("feedback", f.feedback.is_some()),
            ("feedback_format", f.feedback_format.is_some()),
            ("nack", f.nack.is_some()),
            ("repair", f.repair.is_some()),
            ("cc_params", f.cc_params.is_some()),
            ("ack_every", f.ack_every.is_some()),
            ("recovery", f.recovery.is_some()),
            ("min_rto", f.min_rto.is_some()),
            ("rto_backoff", f.rto_backoff.is_some()),
            ("encoder_share", f.encoder_share.is_some()),
        ] {
            if given {
                return Err(err(k, format!("only rtp-video flows take `{k}`; this flow is {:?}", f.kind)));
            }
        }
        return Ok(None);
    }
    let mut source = VideoSourceConfig::default();
    let cc = f.cc.clone().unwrap_or_else(|| "nada".into());
    if !CONTROLLERS.contains(&cc.as_str()) && !is_external_controller(&cc) {
        return Err(err(
            "cc",
            format!("got {cc:?}, expected one of {}{EXTERNAL_FORMS}", CONTROLLERS.join(", ")),
        ));
    }
    if let Some(fps) = f.fps {
        if !(MIN_FPS..=240.0).contains(&fps) {
            return Err(err(
                "fps",
                format!("got {}, expected frames per second from {MIN_FPS} to 240", number(fps)),
            ));
        }
        source.fps = fps;
    }
    if let Some(r) = f.rmin {
        source.rmin = r.0;
    }
    if let Some(r) = f.rmax {
        source.rmax = r.0;
    }
    if source.rmin == Bitrate::ZERO || source.rmax < source.rmin {
        return Err(err(
            "rmax",
            format!("got rmin {} and rmax {}, expected 0 < rmin <= rmax", source.rmin, source.rmax),
        ));
    }
    if let Some(share) = f.encoder_share {
        if !(share > 0.0 && share <= 1.0) {
            return Err(err(
                "encoder_share",
                format!("got {}, expected a share of the target rate above 0 and at most 1", number(share)),
            ));
        }
        source.target_share = share;
    }
    if source.rmax > lowlat_cc::tunable::bounds::MAX_RATE {
        let max = lowlat_cc::tunable::bounds::MAX_RATE;
        return Err(err("rmax", format!("got \"{}\", expected at most \"{max}\"", source.rmax)));
    }
    source.codec = match f.codec.as_deref().unwrap_or("synthetic") {
        "synthetic" => Codec::Synthetic,
        "perfect" => Codec::Perfect,
        "trace" => {
            let Some(file) = f.codec_trace.as_deref() else {
                return Err(err("codec_trace", "missing: codec = \"trace\" needs a frame-size file".into()));
            };
            let path = resolve(base_dir, file);
            let text = lowlat_net::trace::read_text_file(&path)
                .map_err(|e| err("codec_trace", format!("cannot read {}: {e}", path.display())))?;
            let trace = FrameSizeTrace::parse(&text)
                .map_err(|m| err("codec_trace", format!("{}: {m}", path.display())))?;
            Codec::Trace(trace)
        }
        other => {
            return Err(err(
                "codec",
                format!("got {other:?}, expected \"synthetic\", \"perfect\" or \"trace\""),
            ))
        }
    };
    if f.codec_trace.is_some() && !matches!(source.codec, Codec::Trace(_)) {
        return Err(err("codec_trace", "only codec = \"trace\" reads a frame-size file".into()));
    }
    let feedback = match f.feedback.as_deref() {
        None => None,
        Some("scream") => Some(SCREAM_FEEDBACK),
        Some(other) => match other.parse::<Duration>() {
            Ok(d) if d > Duration::ZERO => Some(FeedbackSchedule::Interval(d)),
            _ => {
                return Err(err(
                    "feedback",
                    format!("got {other:?}, expected an interval such as \"50 ms\" or \"scream\""),
                ))
            }
        },
    };
    let feedback_format = match f.feedback_format.as_deref().unwrap_or("transport-cc") {
        "transport-cc" => FeedbackFormat::TransportCc,
        "rfc8888" => FeedbackFormat::Rfc8888,
        other => {
            return Err(err(
                "feedback_format",
                format!("got {other:?}, expected \"transport-cc\" or \"rfc8888\""),
            ))
        }
    };
    if is_window_controller(&cc) {
        // Over the transport, ACKs are the feedback: RTCP settings would silently do nothing.
        for (k, given) in [
            ("feedback", f.feedback.is_some()),
            ("feedback_format", f.feedback_format.is_some()),
            ("nack", f.nack.is_some()),
            ("repair", f.repair.is_some()),
        ] {
            if given {
                return Err(err(
                    k,
                    format!("`{k}` applies to RTP controllers; {cc:?} carries the video over the transport, whose ACKs are its feedback"),
                ));
            }
        }
    }
    let repair = match (f.repair.as_deref(), f.nack) {
        (None, nack) => {
            if nack == Some(true) {
                Repair::Nack
            } else {
                Repair::None
            }
        }
        (Some(r), nack) => {
            let repair = match r {
                "none" => Repair::None,
                "nack" => Repair::Nack,
                "timeout" => Repair::Timeout,
                other => {
                    return Err(err(
                        "repair",
                        format!("got {other:?}, expected \"none\", \"nack\" or \"timeout\""),
                    ))
                }
            };
            if nack.is_some_and(|n| n != (repair == Repair::Nack)) {
                return Err(err(
                    "nack",
                    format!("got nack = {} with repair = {r:?}, expected one of the two (nack = true is repair = \"nack\")", nack.unwrap_or(false)),
                ));
            }
            repair
        }
    };
    let ack_every = match f.ack_every {
        Some(_) if !is_window_controller(&cc) => {
            return Err(err(
                "ack_every",
                format!("`ack_every` applies to video over a window controller (the transport's ACKs); {cc:?} sends RTCP feedback"),
            ))
        }
        Some(n) if !(1..=64).contains(&n) => {
            return Err(err("ack_every", format!("got {n}, expected a whole number of packets from 1 to 64")))
        }
        Some(n) => n,
        None => ReceiverConfig::default().ack_every,
    };
    let tcp = transport_recovery(f, &cc, &err)?;
    let mut m = MediaConfig {
        cc,
        source,
        feedback,
        pause: None,
        feedback_format,
        repair,
        cc_params: BTreeMap::new(),
        ack_every,
        tcp,
    };
    // "gcc.beta: got -5, ..." -> key `cc_params.gcc.beta`, message "got -5, ...".
    let cc_error = |e: String| match e.split_once(": ") {
        Some((k, msg)) => err(&format!("cc_params.{k}"), msg.to_string()),
        None => err("cc_params", e),
    };
    for (name, table) in f.cc_params.iter().flatten() {
        if is_window_controller(name) {
            if name != "copa" {
                return Err(err(
                    &format!("cc_params.{name}"),
                    "of the window controllers only copa takes cc_params (the others' constants are their specs' defaults)"
                        .into(),
                ));
            }
            let params: Vec<(String, String)> =
                table.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
            // Built once so a bad value is reported now, not mid-run.
            window_controller_with(name, f.packet_size.map_or(Bytes(1200), |p| p.0), &params)
                .map_err(cc_error)?;
            m.cc_params.insert(name.clone(), params);
            continue;
        }
        if !CONTROLLERS.contains(&name.as_str()) {
            return Err(err(
                &format!("cc_params.{name}"),
                format!("unknown controller, expected one of {}", CONTROLLERS.join(", ")),
            ));
        }
        let params: Vec<(String, String)> = table.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
        // Build the controller once so a bad constant is reported now, not mid-run.
        let probe = MediaConfig {
            cc: name.clone(),
            cc_params: BTreeMap::from([(name.clone(), params.clone())]),
            ..m.clone()
        };
        rate_controller(&probe, probe.source.rmin).map_err(cc_error)?;
        m.cc_params.insert(name.clone(), params);
    }
    if !is_window_controller(&m.cc) {
        // The controller the run will build, at the flow's start rate: its config's ranges and
        // relations (min_rate <= start_rate <= max_rate, ...) are checked now, not mid-run.
        rate_controller(&m, f.rate.map_or(m.source.rmin, |r| r.0)).map_err(cc_error)?;
    }
    Ok(Some(m))
}

/// The lowest frame rate a video flow takes: one frame per 10 s.
const MIN_FPS: f64 = 0.1;

/// An RTP frame is at most 65 535 packets (its packets are numbered in 16 bits in the model):
/// the largest frame at `rmax` must fit in that many packets of the flow's payload, or the pacer
/// would have to make packets larger than `packet_size`.
fn check_frame_size(m: &MediaConfig, packet_size: Bytes) -> Result<(), String> {
    // Over the transport 58 B of each packet are headers; 1.5: the synthetic codec's noise.
    let payload = packet_size.0.saturating_sub(58).max(1) as f64;
    let largest = m.source.rmax.as_bps_f64() / 8.0 / m.source.fps * m.source.peak_frame_ratio() * 1.5;
    let most = 65_535.0 * payload;
    if largest > most {
        return Err(format!(
            "got \"{}\" at {} fps: frames of up to {:.0} B (the largest frame is {:.1}x a steady one), more \
             than the 65535 packets of {payload} B a frame can have; expected a lower rmax, a higher fps or \
             a larger packet_size",
            m.source.rmax,
            m.source.fps,
            largest,
            m.source.peak_frame_ratio()
        ));
    }
    Ok(())
}

/// The ECN codepoint flow `f` sends with, checked.
/// SCReAM v2 reacts to CE only with `l4s` or `ecn` on: ECT packets without either are marked by
/// the network and ignored by the sender, a silent wrong answer worth a warning.
fn ecn_ignored_warning(m: &MediaConfig, ecn: Ecn, key: &str) -> Option<String> {
    if m.cc != "scream2" || !ecn.is_ect() {
        return None;
    }
    let on = |k: &str| {
        m.cc_params.get("scream2").is_some_and(|p| p.iter().any(|(key, v)| key == k && v == "true"))
    };
    (!on("l4s") && !on("ecn")).then(|| {
        format!(
            "{key}: the packets are ECN-capable but scream2 ignores CE marks unless \
             cc_params.scream2.l4s (or .ecn) = true"
        )
    })
}

fn flow_ecn(
    f: &FlowSpec,
    kind: TrafficKind,
    media: Option<&MediaConfig>,
    key: &dyn Fn(&str) -> String,
    label: &str,
) -> Result<Ecn, ScenarioError> {
    let Some(text) = f.ecn.as_deref() else { return Ok(Ecn::NotEct) };
    let err = |msg: String| ScenarioError::new(label, key("ecn"), msg);
    let ecn: Ecn = text.parse().map_err(err)?;
    if ecn == Ecn::Ce {
        return Err(err("got \"ce\", expected \"not-ect\", \"ect0\" or \"ect1\": only queues set CE".into()));
    }
    if kind == TrafficKind::Web && ecn.is_ect() {
        return Err(err(
            "web flows send Not-ECT; `ecn` applies to cbr, poisson, rtp-video and bulk flows".into()
        ));
    }
    if let Some(m) = media {
        if ecn.is_ect() && !is_window_controller(&m.cc) && m.feedback_format == FeedbackFormat::TransportCc {
            return Err(err(format!(
                "got {text:?} with transport-cc feedback, which has no ECN field (libwebrtc sends ECT(1) only \
                 with RFC 8888): set feedback_format = \"rfc8888\""
            )));
        }
    }
    Ok(ecn)
}

/// The transport settings of flow `f`, checked; `None` for other kinds (which must not carry them).
fn transport_config(
    f: &FlowSpec,
    kind: TrafficKind,
    key: &dyn Fn(&str) -> String,
    label: &str,
) -> Result<Option<TransportFlowConfig>, ScenarioError> {
    let err = |k: &str, msg: String| ScenarioError::new(label, key(k), msg);
    let web_keys = [
        ("sources", f.sources.is_some()),
        ("sources_on", f.sources_on.is_some()),
        ("idle_mean", f.idle_mean.is_some()),
        ("size_min", f.size_min.is_some()),
        ("size_max", f.size_max.is_some()),
    ];
    if kind != TrafficKind::Web {
        if let Some((k, _)) = web_keys.iter().find(|x| x.1) {
            return Err(err(k, format!("only web flows take `{k}`; this flow is {:?}", f.kind)));
        }
    }
    if kind != TrafficKind::Downloads && f.connections.is_some() {
        return Err(err(
            "connections",
            format!("only downloads flows take `connections`; this flow is {:?}", f.kind),
        ));
    }
    if kind != TrafficKind::Bulk && f.size.is_some() {
        let hint = match kind {
            TrafficKind::Web => " (web flows take size_min and size_max)",
            TrafficKind::Downloads => " (downloads flows give a size per connection)",
            _ => "",
        };
        return Err(err("size", format!("only bulk flows take `size`; this flow is {:?}{hint}", f.kind)));
    }
    if !matches!(kind, TrafficKind::Bulk | TrafficKind::Web | TrafficKind::Downloads) {
        return Ok(None);
    }
    if f.rate.is_some() {
        return Err(err("rate", format!("a {} flow's rate is set by its controller; remove `rate`", f.kind)));
    }
    let cc = f.cc.clone().unwrap_or_else(|| "newreno".into());
    if !WINDOW_CONTROLLERS.contains(&cc.as_str()) {
        return Err(err("cc", format!("got {cc:?}, expected one of {}", WINDOW_CONTROLLERS.join(", "))));
    }
    let size = f.size.map(|b| b.0 .0);
    if size == Some(0) {
        return Err(err("size", "got 0 B, expected a positive size".into()));
    }
    let web = if kind == TrafficKind::Web {
        let mut w = WebConfig::default();
        if let Some(n) = f.sources {
            if n == 0 || n > crate::web::MAX_SOURCES {
                return Err(err("sources", format!("got {n}, expected 1 to {}", crate::web::MAX_SOURCES)));
            }
            w.sources = n;
        }
        w.initially_on = f.sources_on.unwrap_or(w.initially_on.min(w.sources));
        if w.initially_on > w.sources {
            return Err(err(
                "sources_on",
                format!("got {}, expected at most the number of sources ({})", w.initially_on, w.sources),
            ));
        }
        if let Some(d) = f.idle_mean {
            if d.0 == Duration::ZERO {
                return Err(err("idle_mean", "got 0 s, expected a positive duration".into()));
            }
            w.idle_mean = d.0;
        }
        w.size_min = f.size_min.map_or(w.size_min, |b| b.0 .0);
        w.size_max = f.size_max.map_or(w.size_max.max(w.size_min), |b| b.0 .0);
        if w.size_min == 0 {
            return Err(err("size_min", "got 0 B, expected a positive size".into()));
        }
        if w.size_max < w.size_min {
            return Err(err(
                "size_max",
                format!(
                    "got \"{}\", expected at least size_min (\"{}\")",
                    Bytes(w.size_max),
                    Bytes(w.size_min)
                ),
            ));
        }
        Some(w)
    } else {
        None
    };
    let downloads = match (kind, &f.connections) {
        (TrafficKind::Downloads, Some(c)) => Some(crate::downloads::connections_config(c, key, label)?),
        (TrafficKind::Downloads, None) => {
            return Err(err("connections", "missing: a downloads flow needs [[flows.connections]]".into()))
        }
        _ => None,
    };
    Ok(Some(TransportFlowConfig { cc, size, web, downloads }))
}

/// The video transport's loss recovery keys (`recovery`, `min_rto`, `rto_backoff`): `None` for
/// RFC 9002's (the default), TCP's constants for `"tcp"`.
fn transport_recovery(
    f: &FlowSpec,
    cc: &str,
    err: &dyn Fn(&str, String) -> ScenarioError,
) -> Result<Option<lowlat_transport::TcpRecovery>, ScenarioError> {
    let given = [
        ("recovery", f.recovery.is_some()),
        ("min_rto", f.min_rto.is_some()),
        ("rto_backoff", f.rto_backoff.is_some()),
    ];
    if let Some((k, _)) = given.iter().find(|g| g.1) {
        if !is_window_controller(cc) {
            return Err(err(k, format!("`{k}` applies to video over a window controller (the transport's retransmissions); {cc:?} sends RTP")));
        }
    }
    let tcp = match f.recovery.as_deref() {
        None | Some("quic") => false,
        Some("tcp") => true,
        Some(other) => return Err(err("recovery", format!("got {other:?}, expected \"quic\" or \"tcp\""))),
    };
    if !tcp {
        if let Some((k, _)) = given[1..].iter().find(|g| g.1) {
            return Err(err(
                k,
                format!("`{k}` applies to recovery = \"tcp\"; this flow's recovery is \"quic\""),
            ));
        }
        return Ok(None);
    }
    let mut r = lowlat_transport::TcpRecovery::default();
    if let Some(d) = f.min_rto {
        let hour = Duration::from_secs(3600);
        if d.0 == Duration::ZERO || d.0 > hour {
            return Err(err(
                "min_rto",
                format!("got \"{}\", expected a duration above 0 and at most \"{hour}\"", d.0),
            ));
        }
        r.min_rto = d.0;
    }
    if let Some(b) = f.rto_backoff {
        r.backoff = b;
    }
    Ok(Some(r))
}
