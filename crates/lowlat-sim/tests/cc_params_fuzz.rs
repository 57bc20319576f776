//! Every `cc_params` key of every rate controller, fed extreme and random values (zero,
//! negative, NaN, inf, huge, wrong units, wrong types), singly and in random combinations: each
//! scenario is either refused with a one-line error naming a `cc_params` key, or runs a short
//! simulation to the end. No panic, no hang (a seeded loop, so a failure replays).

use lowlat_cc::{
    FixedRateConfig, GccConfig, NadaConfig, SconeProConfig, ScreamConfig, ScreamV2Config, Tunable,
};
use lowlat_sim::{Format, Scenario, Simulation};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration as WallTime;

/// Seconds a case may take (parse + a 2 s simulation) before it counts as a hang.
const HANG_S: u64 = 30;

/// The controllers a scenario tunes, with their keys.
fn controllers() -> Vec<(&'static str, &'static [&'static str])> {
    vec![
        ("fixed", FixedRateConfig::keys()),
        ("nada", NadaConfig::keys()),
        ("gcc", GccConfig::keys()),
        ("scream", ScreamConfig::keys()),
        ("scream2", ScreamV2Config::keys()),
        ("scone-pro", SconeProConfig::keys()),
    ]
}

/// A sample value of each kind a key can take; the first its config accepts tells its kind.
const KIND_SAMPLES: &[&str] = &["50 ms", "500 kbit/s", "1000 B", "true", "0.5", "5", "gcc"];

/// The kind (an index into [`KIND_SAMPLES`]) of each key of `C`.
fn kinds<C: Tunable + Default>() -> Vec<usize> {
    C::keys()
        .iter()
        .map(|k| {
            KIND_SAMPLES
                .iter()
                .position(|v| C::default().set(k, v).is_ok())
                .unwrap_or_else(|| panic!("{k} takes none of the samples"))
        })
        .collect()
}

fn controller_kinds(cc: &str) -> Vec<usize> {
    match cc {
        "fixed" => kinds::<FixedRateConfig>(),
        "nada" => kinds::<NadaConfig>(),
        "gcc" => kinds::<GccConfig>(),
        "scream" => kinds::<ScreamConfig>(),
        "scream2" => kinds::<ScreamV2Config>(),
        _ => kinds::<SconeProConfig>(),
    }
}

/// TOML values: extremes of every kind a key could be given.
const EXTREMES: &[&str] = &[
    "0",
    "-5",
    "-0.0",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "5e-324",
    "9223372036854775807",
    "-9223372036854775808",
    "true",
    "\"\"",
    "\"0\"",
    "\"-1\"",
    "\"NaN\"",
    "\"inf\"",
    "\"18446744073709551615\"",
    "\"0 ms\"",
    "\"0 s\"",
    "\"1 ns\"",
    "\"1e9 s\"",
    "\"inf s\"",
    "\"-1 ms\"",
    "\"0 bit/s\"",
    "\"1 bit/s\"",
    "\"1e15 Gbit/s\"",
    "\"nan Mbit/s\"",
    "\"0 B\"",
    "\"1 B\"",
    "\"1e18 B\"",
    "\"gcc\"",
    "\"scone-pro\"",
];

/// splitmix64: a seeded stream, so a failing case replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A plausible value of kind `kind` (an index into [`KIND_SAMPLES`]): within a decade or
    /// two of typical constants, so that combinations often run.
    fn plausible(&mut self, kind: usize) -> String {
        let x = self.unit();
        match kind {
            0 => format!("\"{:.3} ms\"", 1000f64.powf(x)),
            1 => format!("\"{:.1} kbit/s\"", 10.0 * 1000f64.powf(x)),
            2 => format!("\"{} B\"", (10.0 * 1000f64.powf(x)) as u64),
            3 => ["true", "false"][self.below(2)].to_string(),
            4 => format!("{:.4}", 0.001 * 10_000f64.powf(x)),
            5 => format!("{}", self.below(100)),
            _ => ["\"gcc\"", "\"nada\"", "\"scream\"", "\"scream2\"", "\"fixed\""][self.below(5)].to_string(),
        }
    }

    /// A random value: a number over 30 decades, either sign, with a random unit or none, as a
    /// TOML number or string.
    fn value(&mut self) -> String {
        let magnitude = 10f64.powf(self.unit() * 30.0 - 12.0);
        let x = if self.below(4) == 0 { -magnitude } else { magnitude };
        let unit = ["", "", " ms", " s", " us", " kbit/s", " Mbit/s", " B"][self.below(8)];
        match (unit, self.below(2)) {
            ("", 0) => format!("{x:e}"),
            ("", _) => format!("\"{x}\""),
            (u, _) => format!("\"{x}{u}\""),
        }
    }
}

fn scenario(cc: &str, params: &[(&str, String)]) -> String {
    let table: Vec<String> = params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!(
        r#"
duration = "2 s"
[bottleneck]
rate = "2 Mbit/s"
delay = "20 ms"
[[flows]]
id = "v"
kind = "rtp-video"
cc = "{cc}"
cc_params = {{ "{cc}" = {{ {} }} }}
"#,
        table.join(", ")
    )
}

/// What one case did.
#[derive(Debug, PartialEq)]
enum Outcome {
    Refused(String),
    Ran,
}

/// Parses and, if accepted, runs `toml` on its own thread: `Err` for a panic or a hang.
fn try_case(toml: String) -> Result<Outcome, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(|| {
            match Scenario::parse(&toml, Format::Toml, "fuzz.toml", Path::new(".")) {
                Err(e) => Outcome::Refused(e.to_string()),
                Ok(s) => {
                    // `lowlat run --cc X` on the same scenario: refused cleanly or built.
                    for (cc, _) in controllers() {
                        if let Ok(other) = s.clone().with_cc(cc) {
                            for f in &other.flows {
                                if let Some(m) = &f.media {
                                    lowlat_sim::media::controller(m, f.rate).expect("with_cc validated it");
                                }
                            }
                        }
                    }
                    Simulation::new(s).run();
                    Outcome::Ran
                }
            }
        });
        let _ = tx.send(r.map_err(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        }));
    });
    match rx.recv_timeout(WallTime::from_secs(HANG_S)) {
        Ok(Ok(outcome)) => Ok(outcome),
        Ok(Err(panic)) => Err(format!("panic: {panic}")),
        Err(_) => Err(format!("no answer in {HANG_S} s (a hang)")),
    }
}

/// Checks one case: a clean refusal naming the cc_params key (or, for a relation, mentioning
/// the key given), or a clean run.
fn check(cc: &str, params: &[(&str, String)], failures: &mut Vec<String>, counts: &mut (usize, usize)) {
    let case = format!("{cc} {params:?}");
    match try_case(scenario(cc, params)) {
        Err(e) => failures.push(format!("{case}: {e}")),
        Ok(Outcome::Ran) => counts.1 += 1,
        Ok(Outcome::Refused(msg)) => {
            counts.0 += 1;
            let named = params.iter().any(|(k, _)| msg.contains(k));
            if msg.contains('\n') || !msg.contains(&format!("cc_params.{cc}.")) || !named {
                failures.push(format!("{case}: unclear error: {msg}"));
            }
        }
    }
    // Keep the message short when many fail.
    failures.truncate(40);
}

#[test]
fn the_default_constants_run_for_every_controller() {
    for (cc, _) in controllers() {
        assert_eq!(try_case(scenario(cc, &[])), Ok(Outcome::Ran), "{cc}");
    }
}

#[test]
fn every_cc_params_key_refuses_or_runs_extreme_values() {
    let mut rng = Rng(0x15cc_9a2a);
    let (mut failures, mut counts) = (Vec::new(), (0, 0));
    for (cc, keys) in controllers() {
        for key in keys {
            let mut values: Vec<String> = EXTREMES.iter().map(|v| v.to_string()).collect();
            values.extend((0..12).map(|_| rng.value()));
            for v in values {
                check(cc, &[(key, v)], &mut failures, &mut counts);
            }
        }
    }
    eprintln!("single keys: {} refused, {} ran", counts.0, counts.1);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    // Both branches were exercised: the extremes are mostly refused, some run.
    assert!(counts.0 > 1000 && counts.1 > 100, "refused {}, ran {}", counts.0, counts.1);
}

#[test]
fn random_combinations_of_cc_params_refuse_or_run() {
    let mut rng = Rng(0x15c0_3b1e);
    let (mut failures, mut counts) = (Vec::new(), (0, 0));
    for (cc, keys) in controllers() {
        let kinds = controller_kinds(cc);
        for _ in 0..300 {
            let n = 2 + rng.below(3);
            let mut params: Vec<(&str, String)> = Vec::new();
            for _ in 0..n {
                let i = rng.below(keys.len());
                let key = keys[i];
                if params.iter().all(|(k, _)| *k != key) {
                    let v = match rng.below(6) {
                        0 => EXTREMES[rng.below(EXTREMES.len())].to_string(),
                        1 => rng.value(),
                        _ => rng.plausible(kinds[i]),
                    };
                    params.push((key, v));
                }
            }
            check(cc, &params, &mut failures, &mut counts);
        }
    }
    eprintln!("combinations: {} refused, {} ran", counts.0, counts.1);
    assert!(counts.1 > 100, "only {} combinations ran", counts.1);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_tuned_rate_range_moves_the_start_rate_unless_it_is_given() {
    for cc in ["gcc", "scream", "scream2", "scone-pro"] {
        // The flow starts at rmin (150 kbit/s), below the tuned min_rate: it starts at min_rate.
        let raised = [("min_rate", "\"500 kbit/s\"".to_string())];
        assert_eq!(try_case(scenario(cc, &raised)), Ok(Outcome::Ran), "{cc}");
        // An explicit start_rate outside the range is the user's contradiction: named.
        let given =
            [("min_rate", "\"500 kbit/s\"".to_string()), ("start_rate", "\"200 kbit/s\"".to_string())];
        match try_case(scenario(cc, &given)) {
            Ok(Outcome::Refused(e)) => assert!(
                e.contains(&format!(
                    "cc_params.{cc}.start_rate: got \"200 kbit/s\", expected >= min_rate (\"500 kbit/s\")"
                )),
                "{e}"
            ),
            other => panic!("{cc}: {other:?}"),
        }
    }
}

/// Copa's keys (a window controller, not a `Tunable` rate controller): `variant` and `delta`.
const COPA_KEYS: &[&str] = &["variant", "delta"];

#[test]
fn copa_cc_params_refuse_or_run() {
    let mut rng = Rng(0x11c0_9a11);
    let (mut failures, mut counts) = (Vec::new(), (0, 0));
    let plausible = |rng: &mut Rng, key: &str| match key {
        "variant" => ["\"paper\"", "\"artifact\""][rng.below(2)].to_string(),
        _ => format!("{:.4}", 0.01 * 100f64.powf(rng.unit())),
    };
    for key in COPA_KEYS {
        let mut values: Vec<String> = EXTREMES.iter().map(|v| v.to_string()).collect();
        values.extend((0..12).map(|_| rng.value()));
        values.extend(["\"paper\"", "\"artifact\"", "\"Artifact\"", "0.02", "10", "10.5"].map(String::from));
        for v in values {
            check("copa", &[(key, v)], &mut failures, &mut counts);
        }
    }
    for _ in 0..60 {
        let params: Vec<(&str, String)> = COPA_KEYS
            .iter()
            .map(|&k| {
                let v = match rng.below(4) {
                    0 => EXTREMES[rng.below(EXTREMES.len())].to_string(),
                    _ => plausible(&mut rng, k),
                };
                (k, v)
            })
            .collect();
        check("copa", &params, &mut failures, &mut counts);
    }
    eprintln!("copa: {} refused, {} ran", counts.0, counts.1);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(counts.0 > 40 && counts.1 > 30, "refused {}, ran {}", counts.0, counts.1);
    // The messages say what is expected; another window controller takes no cc_params.
    match try_case(scenario("copa", &[("variant", "\"ns3\"".into())])) {
        Ok(Outcome::Refused(e)) => {
            assert!(
                e.contains("cc_params.copa.variant: got \"ns3\", expected \"paper\" or \"artifact\""),
                "{e}"
            )
        }
        other => panic!("{other:?}"),
    }
    match try_case(scenario("bbr", &[("delta", "0.5".into())])) {
        Ok(Outcome::Refused(e)) => assert!(e.contains("cc_params.bbr") && e.contains("only copa"), "{e}"),
        other => panic!("{other:?}"),
    }
}
