//! The one registry of what a scenario can name: the congestion controllers (rate controllers over
//! RTP, window controllers over the ack-clocked transport, controllers driven from outside), the
//! network assistance a bottleneck can have, and the queue variants of the RMCAT matrix. Each
//! entry has its name, its kind, one line about it and (for controllers) what builds it. The
//! parser checks names against it, the Python package lists it (`_native.controllers()`, the
//! CLI's `--cc` help and checks), and a test holds `docs/scenario-format.md` to it.

use super::config::MediaConfig;
use lowlat_cc::{
    ExternalConfig, FixedRateConfig, GccConfig, NadaConfig, RateController, SconeProConfig, ScreamConfig,
    ScreamV2Config, Tunable,
};
use lowlat_core::{Bitrate, Bytes};
use lowlat_transport::{BbrConfig, CopaConfig, CubicConfig, NewRenoConfig, WindowController};
use std::sync::LazyLock;

/// How a controller drives a video flow, which decides how the video travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControllerKind {
    /// An RTP rate controller fed by RTCP feedback reports.
    Rate,
    /// A window controller: the video travels over the ack-clocked transport
    /// ([`crate::transport_media`]), whose ACKs are its feedback.
    Window,
    /// Driven from outside the simulator ([`lowlat_cc::external`]).
    External,
}

impl ControllerKind {
    /// The kind's name.
    pub fn name(self) -> &'static str {
        match self {
            ControllerKind::Rate => "rate",
            ControllerKind::Window => "window",
            ControllerKind::External => "external",
        }
    }
}

/// Builds a rate controller for a video flow from its settings, at a start rate.
pub type RateBuilder = fn(&MediaConfig, Bitrate) -> Result<Box<dyn RateController>, String>;
/// Builds a window controller for packets of a given size.
pub type WindowBuilder = fn(Bytes) -> Box<dyn WindowController>;

/// What builds a controller.
#[derive(Clone, Copy)]
pub enum Build {
    /// A rate controller.
    Rate(RateBuilder),
    /// A window controller.
    Window(WindowBuilder),
    /// An external controller: the driver (or a Python class) sets its target.
    External,
}

/// One congestion controller a scenario can name.
#[derive(Clone, Copy)]
pub struct Controller {
    /// The name in scenarios (`cc = "gcc"`) and on the command line (`--cc gcc`).
    pub name: &'static str,
    /// One line about it.
    pub summary: &'static str,
    /// What builds it.
    pub build: Build,
}

impl Controller {
    /// Its kind.
    pub fn kind(&self) -> ControllerKind {
        match self.build {
            Build::Rate(_) => ControllerKind::Rate,
            Build::Window(_) => ControllerKind::Window,
            Build::External => ControllerKind::External,
        }
    }
}

/// Every controller, in the order the CLI lists them: RTP rate controllers, then the window
/// controllers that carry video over the ack-clocked transport, then the external one.
pub const CONTROLLER_REGISTRY: &[Controller] = &[
    Controller {
        name: "gcc",
        summary: "Google Congestion Control (draft-ietf-rmcat-gcc-02, as libwebrtc's goog_cc runs it)",
        build: Build::Rate(gcc),
    },
    Controller { name: "nada", summary: "NADA (RFC 8698, held against ns3-rmcat)", build: Build::Rate(nada) },
    Controller { name: "scream", summary: "SCReAM v1 (RFC 8298)", build: Build::Rate(scream) },
    Controller {
        name: "scream2",
        summary: "SCReAM v2 (draft-johansson-ccwg-rfc8298bis)",
        build: Build::Rate(scream2),
    },
    Controller {
        name: "fixed",
        summary: "a constant rate (the flow's `rate`), paced at 1.5x",
        build: Build::Rate(fixed),
    },
    Controller {
        name: "scone-pro",
        summary: "rates from the access point's SCONE-PRO signals, a fallback controller without them",
        build: Build::Rate(scone_pro),
    },
    Controller {
        name: "newreno",
        summary: "NewReno (RFC 9002 §7), video over the ack-clocked transport",
        build: Build::Window(newreno),
    },
    Controller {
        name: "cubic",
        summary: "CUBIC (RFC 9438, HyStart++), video over the ack-clocked transport",
        build: Build::Window(cubic),
    },
    Controller {
        name: "bbr",
        summary: "BBR v1, video over the ack-clocked transport",
        build: Build::Window(bbr),
    },
    Controller {
        name: "copa",
        summary: "Copa (NSDI 2018), video over the ack-clocked transport",
        build: Build::Window(copa),
    },
    Controller {
        name: "external",
        summary:
            "target set from outside: by the driver (lowlat.gym), or \"python:module:Class\" (a Python class)",
        build: Build::External,
    },
];

/// The congestion controllers a video flow can name directly: RTP rate controllers, then the
/// window controllers that carry video over the ack-clocked transport instead
/// ([`crate::transport_media`]). The external forms are not listed ([`is_external_controller`]).
pub static CONTROLLERS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    CONTROLLER_REGISTRY.iter().filter(|c| c.kind() != ControllerKind::External).map(|c| c.name).collect()
});

/// The window controllers a bulk, web or downloads flow can use.
pub static WINDOW_CONTROLLERS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    CONTROLLER_REGISTRY.iter().filter(|c| c.kind() == ControllerKind::Window).map(|c| c.name).collect()
});

/// The controllers driven from outside the simulator, as the error messages list them.
pub(crate) const EXTERNAL_FORMS: &str = ", \"external\" or \"python:module:Class\"";

/// The registry's entry for `cc`: a built-in name, or the external entry for `"external"` and
/// `"python:module:Class"`.
pub fn find_controller(cc: &str) -> Option<&'static Controller> {
    let name = if is_external_controller(cc) { "external" } else { cc };
    CONTROLLER_REGISTRY.iter().find(|c| c.name == name)
}

/// Whether `cc` names a controller driven from outside the simulator
/// ([`lowlat_cc::external`]): `"external"` (the driver sets the target, as the Gymnasium
/// environment does) or `"python:module.path:ClassName"` (a Python class the Python package
/// imports and calls per feedback report; a driver without Python keeps the start rate).
pub fn is_external_controller(cc: &str) -> bool {
    if cc == "external" {
        return true;
    }
    let ident = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|p| {
                p.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    cc.strip_prefix("python:")
        .and_then(|r| r.split_once(':'))
        .is_some_and(|(module, class)| ident(module) && ident(class) && !class.contains('.'))
}

/// Whether video under controller `cc` travels over the ack-clocked transport (not RTP).
pub fn is_window_controller(cc: &str) -> bool {
    WINDOW_CONTROLLERS.contains(&cc)
}

/// Builds the rate controller a video flow names, with its `cc_params` overrides for that
/// controller, starting at `start_rate`.
pub fn rate_controller(media: &MediaConfig, start_rate: Bitrate) -> Result<Box<dyn RateController>, String> {
    match find_controller(&media.cc).map(|c| c.build) {
        Some(Build::Rate(build)) => build(media, start_rate),
        Some(Build::External) => Ok(Box::new(external_config(media, start_rate).build()?.0)),
        _ => Err(format!("unknown controller {:?}", media.cc)),
    }
}

/// Builds the window controller a scenario names, for packets of `packet_size`.
pub fn window_controller(name: &str, packet_size: Bytes) -> Result<Box<dyn WindowController>, String> {
    match find_controller(name).map(|c| c.build) {
        Some(Build::Window(build)) => Ok(build(packet_size)),
        _ => Err(format!("got {name:?}, expected one of {}", WINDOW_CONTROLLERS.join(", "))),
    }
}

/// Builds the window controller a video flow names with its `cc_params` table for it (only Copa
/// takes any: `variant` and `delta`, [`CopaConfig::set`]); errors start with the controller and
/// key (`copa.delta: got ...`).
pub fn window_controller_with(
    name: &str,
    packet_size: Bytes,
    params: &[(String, String)],
) -> Result<Box<dyn WindowController>, String> {
    if params.is_empty() {
        return window_controller(name, packet_size);
    }
    if name != "copa" {
        window_controller(name, packet_size)?;
        return Err(format!(
            "{name}: takes no cc_params (its constants are the spec's defaults); only copa does"
        ));
    }
    let mut cfg = CopaConfig::for_datagram(packet_size);
    for (k, v) in params {
        cfg.set(k, v).map_err(|e| format!("copa.{e}"))?;
    }
    cfg.validate().map_err(|e| format!("copa.{e}"))?;
    Ok(cfg.build_controller())
}

/// The settings of an external controller of this flow: its range is the encoder's.
pub(crate) fn external_config(media: &MediaConfig, start_rate: Bitrate) -> ExternalConfig {
    ExternalConfig {
        // The encoder clamps a flow's rate into [rmin, rmax]; the controller starts where it does.
        start_rate: start_rate.max(media.source.rmin).min(media.source.rmax),
        min_rate: media.source.rmin,
        max_rate: media.source.rmax,
        ..ExternalConfig::default()
    }
}

/// What every rate controller's builder starts from.
struct Start<'a> {
    cc: &'a str,
    rmin: Bitrate,
    rmax: Bitrate,
    /// The encoder clamps a flow's `rate` into [rmin, rmax]; the controllers start where it does.
    clamped_start: Bitrate,
    params: &'a [(String, String)],
    /// Unless `start_rate` is given, a controller starts within its own (possibly tuned) range.
    sets_start: bool,
}

impl Start<'_> {
    fn of(media: &MediaConfig, start_rate: Bitrate) -> Start<'_> {
        let (rmin, rmax) = (media.source.rmin, media.source.rmax);
        let params = media.cc_params.get(&media.cc).map(Vec::as_slice).unwrap_or_default();
        Start {
            cc: media.cc.as_str(),
            rmin,
            rmax,
            clamped_start: start_rate.max(rmin).min(rmax),
            params,
            sets_start: params.iter().any(|(k, _)| k == "start_rate"),
        }
    }

    /// `c` with the scenario's constants set, adjusted, and checked against its stated ranges.
    fn tuned<C: Tunable>(&self, mut c: C, adjust: impl FnOnce(&mut C)) -> Result<C, String> {
        for (k, v) in self.params {
            c.set(k, v).map_err(|e| format!("{}.{k}: {e}", self.cc))?;
        }
        adjust(&mut c);
        // Each range and relation, as the config states it (`rmax: got .., expected >= rmin ..`).
        c.check().map_err(|e| self.named(e))?;
        Ok(c)
    }

    /// A config's error (`beta: got ..`) as a scenario names it (`gcc.beta: got ..`).
    fn named(&self, e: String) -> String {
        format!("{}.{e}", self.cc)
    }
}

/// Unless `start_rate` is given, the controller's start rate clamped into its (tuned) range.
macro_rules! start_within_range {
    ($s:expr) => {
        |c: &mut _| {
            if !$s.sets_start {
                c.start_rate = c.start_rate.max(c.min_rate).min(c.max_rate);
            }
        }
    };
}

fn fixed(media: &MediaConfig, start_rate: Bitrate) -> Result<Box<dyn RateController>, String> {
    let s = Start::of(media, start_rate);
    let cfg = s.tuned(FixedRateConfig { rate: start_rate, ..FixedRateConfig::default() }, |_| {})?;
    Ok(Box::new(cfg.build().map_err(|e| s.named(e))?))
}

fn nada(media: &MediaConfig, start_rate: Bitrate) -> Result<Box<dyn RateController>, String> {
    let s = Start::of(media, start_rate);
    let cfg = NadaConfig { rmin: s.rmin, rmax: s.rmax, fps: media.source.fps, ..NadaConfig::default() };
    Ok(Box::new(s.tuned(cfg, |_| {})?.build().map_err(|e| s.named(e))?))
}

/// GCC: `cc_params.gcc.variant` (`"libwebrtc"`, the default, or `"artifact"`, the Zhuge
/// artifact's port, [`GccConfig::artifact`]) picks the preset the other keys then override.
fn gcc(media: &MediaConfig, start_rate: Bitrate) -> Result<Box<dyn RateController>, String> {
    let all = Start::of(media, start_rate);
    let mut base = GccConfig::default();
    for (_, v) in all.params.iter().filter(|(k, _)| k == "variant") {
        base = GccConfig::variant(v).map_err(|e| all.named(e))?;
    }
    let rest: Vec<(String, String)> = all.params.iter().filter(|(k, _)| k != "variant").cloned().collect();
    let s = Start { params: &rest, ..all };
    let cfg = GccConfig { start_rate: s.clamped_start, min_rate: s.rmin, max_rate: s.rmax, ..base };
    Ok(Box::new(s.tuned(cfg, start_within_range!(s))?.build().map_err(|e| s.named(e))?))
}

fn scream(media: &MediaConfig, start_rate: Bitrate) -> Result<Box<dyn RateController>, String> {
    let s = Start::of(media, start_rate);
    let cfg = ScreamConfig {
        start_rate: s.clamped_start,
        min_rate: s.rmin,
        max_rate: s.rmax,
        ..ScreamConfig::default()
    };
    Ok(Box::new(s.tuned(cfg, start_within_range!(s))?.build().map_err(|e| s.named(e))?))
}

fn scream2(media: &MediaConfig, start_rate: Bitrate) -> Result<Box<dyn RateController>, String> {
    let s = Start::of(media, start_rate);
    let cfg = ScreamV2Config {
        start_rate: s.clamped_start,
        min_rate: s.rmin,
        max_rate: s.rmax,
        ..ScreamV2Config::default()
    };
    Ok(Box::new(s.tuned(cfg, start_within_range!(s))?.build().map_err(|e| s.named(e))?))
}

fn scone_pro(media: &MediaConfig, start_rate: Bitrate) -> Result<Box<dyn RateController>, String> {
    let s = Start::of(media, start_rate);
    let cfg = SconeProConfig {
        start_rate: s.clamped_start,
        min_rate: s.rmin,
        max_rate: s.rmax,
        ..SconeProConfig::default()
    };
    let cfg = s.tuned(cfg, start_within_range!(s))?;
    // The fallback is built as the flow's own controller would be, with its own cc_params table.
    let fallback = rate_controller(&MediaConfig { cc: cfg.fallback.clone(), ..media.clone() }, start_rate)?;
    Ok(Box::new(cfg.build(fallback).map_err(|e| s.named(e))?))
}

fn newreno(packet_size: Bytes) -> Box<dyn WindowController> {
    Box::new(NewRenoConfig::for_datagram(packet_size).build())
}

fn cubic(packet_size: Bytes) -> Box<dyn WindowController> {
    Box::new(CubicConfig::for_datagram(packet_size).build())
}

fn bbr(packet_size: Bytes) -> Box<dyn WindowController> {
    Box::new(BbrConfig::for_datagram(packet_size).build())
}

fn copa(packet_size: Bytes) -> Box<dyn WindowController> {
    Box::new(CopaConfig::for_datagram(packet_size).build())
}

/// One kind of network assistance a bottleneck can have (`bottleneck.assist`). The middlebox is
/// built by the simulator (`sim.rs`), which knows each flow's role.
#[derive(Clone, Copy, Debug)]
pub struct Assist {
    /// The name in scenarios.
    pub name: &'static str,
    /// One line about it.
    pub summary: &'static str,
}

/// Every kind of network assistance.
pub const ASSIST_REGISTRY: &[Assist] = &[
    Assist { name: "none", summary: "no assistance" },
    Assist { name: "zhuge", summary: "Zhuge (SIGCOMM 2022): the AP's Fortune Teller and Feedback Updater" },
    Assist {
        name: "fastack",
        summary: "the AP acknowledges transport packets for the client (Zhuge's TCP baseline)",
    },
    Assist { name: "scone-rtc", summary: "SCONE-PRO: the AP signals capacity and queue to media senders" },
    Assist { name: "scone", summary: "the standard SCONE packet's throughput advice" },
];

/// The network assistance a bottleneck can have.
pub static ASSISTS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| ASSIST_REGISTRY.iter().map(|a| a.name).collect());

/// The queue variants [`super::Scenario::with_queue`] knows.
pub const QUEUE_VARIANTS: &[&str] = &["droptail", "codel"];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The quoted names (`"gcc"`) in the row of the table whose first cell is `` `key` `` and
    /// whose text contains `marker`.
    fn quoted_in_row(doc: &str, key: &str, marker: &str) -> BTreeSet<String> {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{key}` |")) && l.contains(marker))
            .unwrap_or_else(|| panic!("docs/scenario-format.md has no `{key}` row with {marker:?}"));
        // The description cell: after the key and default cells.
        let text = row.splitn(4, '|').nth(3).unwrap_or_default();
        text.split('"').skip(1).step_by(2).map(str::to_string).collect()
    }

    fn doc() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenario-format.md");
        std::fs::read_to_string(path).expect("docs/scenario-format.md")
    }

    #[test]
    fn the_docs_list_every_registered_controller_and_no_other() {
        let doc = doc();
        let mut registered: BTreeSet<String> =
            CONTROLLER_REGISTRY.iter().map(|c| c.name.to_string()).collect();
        registered.insert("python:module:Class".into());
        assert_eq!(quoted_in_row(&doc, "cc", "the controller:"), registered, "video flows' `cc` row");
        let window: BTreeSet<String> = WINDOW_CONTROLLERS.iter().map(|s| s.to_string()).collect();
        assert_eq!(quoted_in_row(&doc, "cc", "the window controller:"), window, "bulk flows' `cc` row");
        let assists: BTreeSet<String> = ASSISTS.iter().map(|s| s.to_string()).collect();
        assert_eq!(quoted_in_row(&doc, "assist", "network assistance"), assists, "`assist` row");
    }

    #[test]
    fn every_name_finds_its_entry_and_the_lists_follow_the_kinds() {
        for c in CONTROLLER_REGISTRY {
            assert_eq!(find_controller(c.name).map(|e| e.name), Some(c.name));
            assert_eq!(is_window_controller(c.name), c.kind() == ControllerKind::Window);
            assert_eq!(is_external_controller(c.name), c.kind() == ControllerKind::External);
            assert_eq!(CONTROLLERS.contains(&c.name), c.kind() != ControllerKind::External);
        }
        assert_eq!(find_controller("python:my.module:Cc").map(|e| e.kind()), Some(ControllerKind::External));
        assert!(find_controller("foo").is_none() && find_controller("python:bad").is_none());
        // Each window controller builds; each name not a window controller is refused.
        for name in WINDOW_CONTROLLERS.iter() {
            assert!(window_controller(name, Bytes(1200)).is_ok(), "{name}");
        }
        for name in ["gcc", "external", "python:m:C", "foo"] {
            let e = window_controller(name, Bytes(1200)).expect_err(name);
            assert!(e.contains("expected one of newreno, cubic, bbr, copa"), "{e}");
        }
    }
}
