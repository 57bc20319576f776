//! Golden summaries: a small, fast set of catalog scenarios, RMCAT points, the benchmark dumbbells
//! and Zhuge runs whose `summary.json` must not change by a byte when the engine is made faster.
//!
//! Each case writes `tests/golden/NAME.summary.json` (the summary without `wall_s`, the wall-clock
//! time, and `events`, the engine's own cost counter, which an optimisation is allowed to lower)
//! and `tests/golden/NAME.series.fnv` (an FNV-1a digest of every value of the flow and link series,
//! so a change inside one 200 ms bin is caught too).
//!
//! A deliberate change of results (a fixed bug, a new field) regenerates them:
//!
//! ```text
//! LOWLAT_BLESS=1 cargo test -p lowlat-sim --test golden
//! git diff crates/lowlat-sim/tests/golden   # read every change before committing it
//! ```

mod common;
use common::{catalog, scenario};
use lowlat_core::{Bitrate, Duration};
use lowlat_sim::{bench, Column, RunResult, Scenario, Simulation, Table};
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The summary as compared: `summary.json` minus the lines of the fields that may differ between
/// two runs with identical results.
fn comparable_summary(r: &RunResult) -> String {
    let mut out = String::new();
    for line in r.summary_json().lines() {
        let top_level = |key: &str| line.starts_with(&format!("  \"{key}\":"));
        if top_level("wall_s") || top_level("events") || top_level("lowlat_version") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// FNV-1a over every value of a table, bit-exact for floats.
fn digest(tables: &[&Table]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for t in tables {
        for (name, col) in &t.columns {
            eat(name.as_bytes());
            match col {
                Column::F64(v) => v.iter().for_each(|x| eat(&x.to_bits().to_le_bytes())),
                Column::I64(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
                Column::Str(_) | Column::Labels { .. } => col.labels().for_each(|x| eat(x.as_bytes())),
            }
        }
    }
    format!("{h:016x}\n")
}

/// Runs `sc` and compares (or, with `LOWLAT_BLESS=1`, writes) its golden files. Returns a
/// description of the mismatch, if any.
fn check(name: &str, sc: Scenario) -> Option<String> {
    let r = Simulation::new(sc).run();
    let files = [
        (format!("{name}.summary.json"), comparable_summary(&r)),
        (format!("{name}.series.fnv"), digest(&[&r.flow_series, &r.link_series, &r.predictions])),
    ];
    let bless = std::env::var("LOWLAT_BLESS").is_ok_and(|v| v == "1");
    let mut problems = Vec::new();
    for (file, got) in files {
        let path = golden_dir().join(&file);
        if bless {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Err(e) => {
                problems.push(format!("{file}: cannot read the golden file ({e}); LOWLAT_BLESS=1 writes it"))
            }
            Ok(want) if want != got => {
                let line = want.lines().zip(got.lines()).position(|(a, b)| a != b).unwrap_or(0);
                problems.push(format!(
                    "{file}: differs from the golden file at line {}:\n  golden: {}\n  now:    {}",
                    line + 1,
                    want.lines().nth(line).unwrap_or(""),
                    got.lines().nth(line).unwrap_or("")
                ));
            }
            Ok(_) => {}
        }
    }
    (!problems.is_empty()).then(|| problems.join("\n"))
}

fn shortened(mut sc: Scenario, seconds: u64) -> Scenario {
    sc.duration = sc.duration.min(Duration::from_secs(seconds));
    sc
}

fn assert_all(cases: Vec<(String, Scenario)>) {
    let problems: Vec<String> = cases.into_iter().filter_map(|(name, sc)| check(&name, sc)).collect();
    assert!(problems.is_empty(), "golden summaries changed:\n{}", problems.join("\n"));
}

/// Every catalog scenario, cut to its first 12 simulated seconds.
#[test]
fn catalog_summaries_match_the_golden_files() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python/lowlat/scenarios");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".toml").map(str::to_string))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "the catalog lost scenarios: {names:?}");
    assert_all(names.into_iter().map(|n| (format!("catalog-{n}"), shortened(catalog(&n), 12))).collect());
}

/// RMCAT 5.1 through the first capacity step (45 s) for each controller, and 5.4 for GCC.
#[test]
fn rmcat_summaries_match_the_golden_files() {
    let mut cases = Vec::new();
    for cc in ["gcc", "nada", "scream", "scream2"] {
        cases.push((format!("rmcat-5.1-{cc}"), shortened(catalog("rmcat-5.1").with_cc(cc).unwrap(), 45)));
    }
    cases.push(("rmcat-5.4-gcc".into(), shortened(catalog("rmcat-5.4").with_cc("gcc").unwrap(), 20)));
    assert_all(cases);
}

/// The benchmark dumbbells (CBR, ECN CBR, CUBIC) and a Zhuge AP with GCC across its capacity drop.
#[test]
fn benchmark_and_zhuge_summaries_match_the_golden_files() {
    let rate = Bitrate::mbps(10);
    let five = Duration::from_secs(5);
    let zhuge = |assist: &str| {
        scenario(&format!(
            r#"
duration = "26 s"
seed = 3
[bottleneck]
schedule = [ {{ at = "0 s", rate = "30 Mbit/s" }}, {{ at = "20 s", rate = "3 Mbit/s" }} ]
delay = "1 ms"
wifi = {{}}
queue = {{ kind = "droptail", limit = "1000 packets" }}
assist = "{assist}"
[reverse]
rate = "30 Mbit/s"
delay = "1 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "gcc"
fps = 24
rmin = "300 kbit/s"
rmax = "8 Mbit/s"
access = {{ delay = "19 ms" }}
"#
        ))
    };
    assert_all(vec![
        ("bench-cbr-10M".into(), bench::standard_dumbbell(rate, five)),
        ("bench-cbr-l4s-10M".into(), bench::ecn_dumbbell(rate, five)),
        ("bench-cubic-10M".into(), bench::tcp_dumbbell("cubic", rate, five)),
        ("bench-bbr-10M".into(), bench::tcp_dumbbell("bbr", rate, five)),
        ("bench-cubic-100M".into(), bench::tcp_dumbbell("cubic", Bitrate::mbps(100), Duration::from_secs(3))),
        ("zhuge-gcc".into(), zhuge("zhuge")),
        ("fastack-gcc".into(), zhuge("fastack")),
        ("ap-gcc".into(), zhuge("none")),
    ]);
}
