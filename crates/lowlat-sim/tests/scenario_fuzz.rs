//! Every quantity of the scenario format, fed extreme and random values (zero, negative, NaN,
//! inf, huge, tiny such as 1 ns, the wrong type, empty; trace files with absurd contents),
//! singly and in random combinations: each scenario is either refused with a one-line error
//! naming the key it changed, or runs to its end (or to an event guard) without a panic, an
//! abort or a hang. `cc_params` tables have their own test (`cc_params_fuzz.rs`).
//!
//! The keys are not listed by hand: they are every leaf, list and table of four base scenarios
//! that together use every key of the format, and a test holds the bases to the format (each
//! table's unknown-key error lists the keys serde accepts there; every one must be in a base).
//! Seeded, so a failing case replays.

use lowlat_sim::limits::{self, Limits};
use lowlat_sim::scenario::{CONTROLLERS, QUEUE_VARIANTS};
use lowlat_sim::{Format, Scenario, ScenarioError, Simulation};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration as WallTime;
use toml::Value;

/// Seconds a case may take (parse, checks, a run up to the event guard) before it is a hang.
const HANG_S: u64 = 10;
/// Events after which a run that is still progressing is stopped: the case has shown it runs,
/// and the test stays fast.
const EVENT_GUARD: u64 = 400_000;
/// Wall seconds after which a run that is still progressing is stopped (checked between slices
/// of 10 ms of simulated time; a slice that never ends is a hang).
const WALL_GUARD_S: f64 = 2.0;
/// The run limits of the test: far below the default, so a case that passes them is cheap.
const LIMITS: Limits = Limits { memory_budget: 256 << 20, max_events: 50_000_000 };

const BASE_POINT_TO_POINT: &str = r#"
name = "fuzz-a"
description = "point to point: every link, queue, loss and flow key"
duration = "1 s"
seed = 7
bin = "100 ms"
[bottleneck]
rate = "2 Mbit/s"
delay = "10 ms"
jitter = "1 ms"
loss = { kind = "bernoulli", p = 0.01 }
queue = { kind = "codel", limit = "100 ms", target = "5 ms", interval = "100 ms", ecn = true }
[reverse]
schedule = [{ at = "0 s", rate = "1 Mbit/s" }, { at = "0.5 s", rate = "2 Mbit/s" }]
delay = "10 ms"
loss = { kind = "gilbert-elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.5, loss_in_good = 0.0, loss_in_bad = 1.0 }
queue = { kind = "droptail", limit = "50 packets" }
[[flows]]
id = "c"
kind = "cbr"
rate = "200 kbit/s"
packet_size = "1000 B"
start = "0.1 s"
stop = "0.9 s"
direction = "forward"
ecn = "ect0"
access = { rate = "100 Mbit/s", delay = "1 ms" }
egress = { rate = "100 Mbit/s", delay = "1 ms" }
[[flows]]
id = "p"
kind = "poisson"
rate = "100 kbit/s"
direction = "reverse"
[[flows]]
id = "v"
kind = "rtp-video"
cc = "gcc"
rate = "300 kbit/s"
fps = 30.0
rmin = "150 kbit/s"
rmax = "1.5 Mbit/s"
codec = "synthetic"
feedback = "50 ms"
feedback_format = "rfc8888"
nack = true
ecn = "ect1"
packet_size = "1200 B"
pause = { from = "0.3 s", to = "0.4 s" }
cc_params = { gcc = { beta = 0.85 } }
[[flows]]
id = "b"
kind = "bulk"
cc = "cubic"
size = "100 kB"
packet_size = "1200 B"
"#;

const BASE_WIFI_ZHUGE: &str = r#"
duration = "1 s"
bin = "200 ms"
[bottleneck]
trace = "rate.trace"
trace_format = "rate"
trace_step = "200 ms"
trace_scale = 0.5
trace_loop = true
delay = "5 ms"
assist = "zhuge"
zhuge = { variant = "paper", in_band = "per-packet", report_interval = "5 ms", ack_hold = "in-order", whole_ms = false, frame_interval = "33 ms", burst_rule = "max-burst", max_burst = "30000 B", head_of_line = true, max_hold = "10 ms" }
wifi = { access_min = "1 ms", access_max = "4 ms", outage_probability = 0.002, outage_mean = "20 ms", max_aggregate = "65535 B" }
queue = { kind = "l4s", limit = "64 kB", threshold = "1 ms", max_threshold = "5 ms", device_limit = "3 packets" }
[[flows]]
id = "v"
kind = "rtp-video"
cc = "scream"
feedback = "scream"
repair = "timeout"
encoder_share = 0.85
codec = "trace"
codec_trace = "frames.txt"
[[flows]]
id = "w"
kind = "web"
cc = "newreno"
sources = 3
sources_on = 1
idle_mean = "200 ms"
size_min = "10 kB"
size_max = "20 kB"
"#;

const BASE_SCONE_DOWNLOADS: &str = r#"
duration = "1 s"
[bottleneck]
trace = "mm.trace"
trace_format = "mahimahi"
delay = "20 ms"
assist = "scone-rtc"
scone = { period = "20 ms", capacity = "measured", window = "200 ms" }
[[flows]]
id = "s"
kind = "rtp-video"
cc = "scone-pro"
[[flows]]
id = "d"
kind = "downloads"
cc = "bbr"
connections = [
  { id = "a", size = "50 kB" },
  { id = "b", size = "50 kB", pause = "100 ms", zero_rtt = true, start_up = "careful-resume", lifetime = "10 min", resume_from = "a" },
  { id = "c", size = "50 kB", start_up = "0rtt-bdp", saved = { cwnd = "100 kB", rtt = "50 ms" } },
]
"#;

const BASE_SCONE_STANDARD: &str = r#"
duration = "1 s"
[bottleneck]
trace = "auto.trace"
trace_format = "auto"
assist = "scone"
scone = { refresh = "500 ms", policy_signal = 40 }
[[flows]]
id = "s"
kind = "rtp-video"
cc = "scone-pro"
rate = "500 kbit/s"
[[flows]]
id = "q"
kind = "rtp-video"
cc = "copa"
cc_params = { copa = { variant = "artifact", delta = 0.5 } }
ack_every = 1
recovery = "tcp"
min_rto = "1 s"
rto_backoff = false
"#;

const BASES: &[&str] = &[BASE_POINT_TO_POINT, BASE_WIFI_ZHUGE, BASE_SCONE_DOWNLOADS, BASE_SCONE_STANDARD];

/// The traces the bases read, and traces with absurd contents the `trace`/`codec_trace` keys are
/// pointed at.
const FILES: &[(&str, &str)] = &[
    ("rate.trace", "0 2\n1 3\n2 1.5\n3 2\n"),
    ("auto.trace", "10.5 4\n11.5 6\n12.5 0\n13.5 5\n"),
    ("mm.trace", "1\n2\n2\n4\n5\n"),
    ("frames.txt", "# bytes\n3000\n1200\n1500\n9000\n"),
    ("empty.trace", ""),
    ("comments.trace", "# nothing\n\n"),
    ("rate_nan.trace", "0 nan\n1 2\n"),
    ("rate_inf_time.trace", "0 1\ninf 2\n"),
    ("rate_huge_time.trace", "0 1\n1e300 2\n"),
    ("rate_1e18_time.trace", "0 1\n1e18 2\n"),
    ("rate_tiny_step.trace", "0 1\n1e-12 2\n2e-12 3\n"),
    ("rate_tiny_rate.trace", "0 1e-300\n1 1e-300\n"),
    ("rate_one_bit.trace", "0 0.000001\n"),
    ("rate_three_cols.trace", "0 1 2\n"),
    ("rate_negative.trace", "0 -1\n"),
    ("rate_same_time.trace", "0 1\n0 2\n"),
    ("rate_one_line.trace", "5 1\n"),
    ("rate_huge.trace", "0 1e308\n"),
    ("rate_zero_then_some.trace", "0 0\n1 0\n2 0.001\n"),
    ("mm_zero.trace", "0\n"),
    ("mm_zeros.trace", "0\n0\n0\n1\n"),
    ("mm_huge.trace", "18446744073709551615\n"),
    ("mm_large.trace", "18446744073709\n"),
    ("mm_negative.trace", "-1\n"),
    ("mm_decreasing.trace", "5\n3\n"),
    ("mm_float.trace", "1.5\n"),
    ("frames_zero.txt", "0\n0\n"),
    ("frames_huge.txt", "4294967295\n1\n"),
    ("frames_negative.txt", "-5\n"),
    ("frames_nan.txt", "nan\n"),
    ("binary.trace", "\u{0}\u{1}\u{2}\u{fffd}\n"),
];

/// Trace contents generated rather than written out: many lines.
fn generated_files() -> Vec<(String, String)> {
    let mut v = vec![
        (
            "rate_many.trace".to_string(),
            (0..20_000).map(|i| format!("{} {}\n", i as f64 * 0.001, 1 + i % 7)).collect(),
        ),
        ("mm_many.trace".to_string(), (0..20_000).map(|i| format!("{}\n", i / 50 + 1)).collect()),
        ("frames_many.txt".to_string(), (0..20_000).map(|i| format!("{}\n", 100 + i % 5000)).collect()),
        ("mm_dense.trace".to_string(), "1\n".repeat(200_000)),
    ];
    v.push(("long_line.trace".to_string(), "1".repeat(100_000)));
    v
}

/// The directory the bases and their traces are in (created once).
fn base_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scenario_fuzz");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in FILES {
        std::fs::write(dir.join(name), text).unwrap();
    }
    for (name, text) in generated_files() {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::fs::create_dir_all(dir.join("a_directory")).unwrap();
    dir
}

/// One step of a key path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Key(String),
    Index(usize),
}

type KeyPath = Vec<Seg>;

fn show(path: &KeyPath) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) if s.is_empty() => s.push_str(k),
            Seg::Key(k) => {
                s.push('.');
                s.push_str(k)
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// The key a user would look for in an error: the path's last named step.
fn leaf_name(path: &KeyPath) -> &str {
    path.iter()
        .rev()
        .find_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        })
        .unwrap_or("")
}

fn get<'a>(v: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, seg| match seg {
        Seg::Key(k) => v.get(k.as_str()),
        Seg::Index(i) => v.get(*i),
    })
}

fn get_mut<'a>(v: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, seg| match seg {
        Seg::Key(k) => v.get_mut(k.as_str()),
        Seg::Index(i) => v.get_mut(*i),
    })
}

/// Every leaf, list and table of `v` (not the inside of `cc_params`, fuzzed on its own).
fn key_paths(v: &Value, path: &mut KeyPath, out: &mut Vec<KeyPath>) {
    if !path.is_empty() {
        out.push(path.clone());
    }
    if leaf_name(path) == "cc_params" {
        return;
    }
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                path.push(Seg::Key(k.clone()));
                key_paths(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(Seg::Index(i));
                key_paths(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// What a key takes, judged from the base's value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Duration,
    Bitrate,
    Size,
    Integer,
    Float,
    Flag,
    File,
    Text,
    List,
    Table,
}

fn kind_of(path: &KeyPath, v: &Value) -> Kind {
    match v {
        Value::String(s) if s.parse::<lowlat_core::Duration>().is_ok() => Kind::Duration,
        Value::String(s) if s.parse::<lowlat_core::Bitrate>().is_ok() => Kind::Bitrate,
        Value::String(s) if s.parse::<lowlat_core::Bytes>().is_ok() => Kind::Size,
        Value::String(_) if matches!(leaf_name(path), "trace" | "codec_trace") => Kind::File,
        Value::String(_) => Kind::Text,
        Value::Integer(_) => Kind::Integer,
        Value::Float(_) => Kind::Float,
        Value::Boolean(_) => Kind::Flag,
        Value::Array(_) => Kind::List,
        _ => Kind::Table,
    }
}

/// TOML values any key is fed: the wrong type, empty, zero, negative, NaN, inf, huge.
const ANY: &[&str] = &[
    "0",
    "-1",
    "-0.0",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "5e-324",
    "9223372036854775807",
    "-9223372036854775808",
    "true",
    "\"\"",
    "\"0\"",
    "\"-1\"",
    "\"nan\"",
    "\"18446744073709551615\"",
    "\"a\\nb\"",
    "[]",
    "[1, \"x\"]",
    "{}",
    "{ x = 1 }",
];

/// TOML values of one kind: zero, tiny, huge, negative, non-finite, edge of the range.
fn extremes(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Duration => &[
            "\"0 s\"",
            "\"0 ns\"",
            "\"0.4 ns\"",
            "\"1 ns\"",
            "\"1 us\"",
            "\"-1 ms\"",
            "\"-0 ms\"",
            "\"1e-9 s\"",
            "\"999 ms\"",
            "\"2 s\"",
            "\"1000 s\"",
            "\"1e9 s\"",
            "\"9e9 s\"",
            "\"9223372036 s\"",
            "\"18446744073 s\"",
            "\"1e300 s\"",
            "\"inf s\"",
            "\"nan s\"",
            "\"1 parsec\"",
            "\"50\"",
            "50",
        ],
        Kind::Bitrate => &[
            "\"0 bit/s\"",
            "\"0.4 bit/s\"",
            "\"1 bit/s\"",
            "\"100 bit/s\"",
            "\"-1 kbit/s\"",
            "\"1e-3 bit/s\"",
            "\"1 Gbit/s\"",
            "\"1000 Gbit/s\"",
            "\"1e12 bit/s\"",
            "\"1e15 Gbit/s\"",
            "\"9e18 bit/s\"",
            "\"inf Mbit/s\"",
            "\"nan Mbit/s\"",
            "\"1 Tbit/s\"",
            "\"10 ms\"",
        ],
        Kind::Size => &[
            "\"0 B\"",
            "\"0.4 B\"",
            "\"1 B\"",
            "\"27 B\"",
            "\"28 B\"",
            "\"65535 B\"",
            "\"65536 B\"",
            "\"-1 B\"",
            "\"1 GiB\"",
            "\"1e12 B\"",
            "\"1e18 B\"",
            "\"9e18 B\"",
            "\"inf B\"",
            "\"1e30 B\"",
            "\"10 ms\"",
        ],
        Kind::Integer => &[
            "1",
            "2",
            "126",
            "127",
            "128",
            "255",
            "256",
            "4096",
            "4097",
            "65536",
            "4294967295",
            "4294967296",
            "1.5",
            "1e9",
        ],
        Kind::Float => {
            &["1.0", "1.0000001", "0.5", "1e-300", "1e-9", "240", "240.001", "1e9", "3", "100", "-1e-300"]
        }
        Kind::Flag => &["false", "\"true\"", "1"],
        Kind::File => &[
            "\"\"",
            "\"no_such_file.trace\"",
            "\"/nonexistent/x.trace\"",
            "\"a_directory\"",
            "\"/dev/null\"",
            "\"/dev/zero\"",
            "\"/dev/urandom\"",
            "\"empty.trace\"",
            "\"comments.trace\"",
            "\"rate_nan.trace\"",
            "\"rate_inf_time.trace\"",
            "\"rate_huge_time.trace\"",
            "\"rate_1e18_time.trace\"",
            "\"rate_tiny_step.trace\"",
            "\"rate_tiny_rate.trace\"",
            "\"rate_one_bit.trace\"",
            "\"rate_three_cols.trace\"",
            "\"rate_negative.trace\"",
            "\"rate_same_time.trace\"",
            "\"rate_one_line.trace\"",
            "\"rate_huge.trace\"",
            "\"rate_zero_then_some.trace\"",
            "\"rate_many.trace\"",
            "\"mm_zero.trace\"",
            "\"mm_zeros.trace\"",
            "\"mm_huge.trace\"",
            "\"mm_large.trace\"",
            "\"mm_negative.trace\"",
            "\"mm_decreasing.trace\"",
            "\"mm_float.trace\"",
            "\"mm_many.trace\"",
            "\"mm_dense.trace\"",
            "\"frames_zero.txt\"",
            "\"frames_huge.txt\"",
            "\"frames_negative.txt\"",
            "\"frames_nan.txt\"",
            "\"frames_many.txt\"",
            "\"binary.trace\"",
            "\"long_line.trace\"",
            "\"rate.trace\"",
            "\"mm.trace\"",
            "\"frames.txt\"",
        ],
        Kind::Text => &["\"x\"", "\"none\"", "\"é\"", "\" \"", "\"NONE\""],
        Kind::List | Kind::Table => &["[{}]", "[[]]", "[0]"],
    }
}

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

    /// `10^(lo + (hi - lo) u)`: log-uniform over the decades.
    fn decades(&mut self, lo: f64, hi: f64) -> f64 {
        10f64.powf(lo + (hi - lo) * self.unit())
    }

    /// A plausible value of `kind`, within a few decades of typical settings, so that
    /// combinations often run.
    fn plausible(&mut self, kind: Kind) -> String {
        match kind {
            Kind::Duration => format!("\"{:.6} ms\"", self.decades(-3.0, 3.5)),
            Kind::Bitrate => format!("\"{:.3} kbit/s\"", self.decades(0.0, 5.0)),
            Kind::Size => format!("\"{} B\"", self.decades(0.0, 7.0) as u64),
            Kind::Integer => format!("{}", self.below(200)),
            Kind::Float => format!("{:.6}", self.unit() * [1.0, 2.0, 300.0][self.below(3)]),
            Kind::Flag => ["true", "false"][self.below(2)].to_string(),
            Kind::File => extremes(Kind::File)[self.below(extremes(Kind::File).len())].to_string(),
            Kind::Text => ANY[self.below(ANY.len())].to_string(),
            Kind::List | Kind::Table => "[]".to_string(),
        }
    }

    /// A value near the base's `v` (the same unit, within a decade either way; flags at random;
    /// names, files and tables kept), so that combinations often run and their interplay is
    /// what is tested.
    fn near(&mut self, kind: Kind, v: &Value) -> String {
        let factor = self.decades(-1.0, 1.0);
        let text = v.as_str().unwrap_or_default();
        match kind {
            Kind::Duration => {
                let d: lowlat_core::Duration = text.parse().unwrap();
                format!("\"{:.6} ms\"", d.as_millis_f64() * factor)
            }
            Kind::Bitrate => {
                let r: lowlat_core::Bitrate = text.parse().unwrap();
                format!("\"{:.3} kbit/s\"", r.as_bps_f64() / 1e3 * factor)
            }
            Kind::Size => {
                let b: lowlat_core::Bytes = text.parse().unwrap();
                format!("\"{} B\"", (b.0 as f64 * factor) as u64)
            }
            Kind::Integer => format!("{}", (v.as_integer().unwrap() as f64 * factor).round() as i64),
            Kind::Float => format!("{:.6}", v.as_float().unwrap() * factor.min(1.0)),
            Kind::Flag => ["true", "false"][self.below(2)].to_string(),
            _ => v.to_string(),
        }
    }

    /// A random number over 40 decades, either sign, with a random unit or none, as a TOML
    /// number or string.
    fn wild(&mut self) -> String {
        let magnitude = self.decades(-15.0, 25.0);
        let x = if self.below(4) == 0 { -magnitude } else { magnitude };
        let unit = ["", "", " ns", " ms", " s", " min", " kbit/s", " Gbit/s", " B", " MiB", " packets"]
            [self.below(11)];
        match (unit, self.below(2)) {
            ("", 0) => format!("{x:e}"),
            ("", _) => format!("\"{x}\""),
            (u, _) => format!("\"{x}{u}\""),
        }
    }
}

/// A TOML literal as a value.
fn literal(text: &str) -> Value {
    let t: toml::Table = format!("v = {text}").parse().unwrap_or_else(|e| panic!("{text}: {e}"));
    t["v"].clone()
}

/// The values a list takes besides the extremes: empty, its first element alone, twice, and many
/// times (a schedule's steps a nanosecond apart).
fn list_values(path: &KeyPath, base: &Value) -> Vec<Value> {
    let Some(Value::Array(a)) = get(base, path) else { return vec![] };
    let mut out = vec![Value::Array(vec![])];
    if let Some(first) = a.first() {
        out.push(Value::Array(vec![first.clone()]));
        out.push(Value::Array(vec![first.clone(), first.clone()]));
        if let Some(last) = a.last() {
            out.push(Value::Array(a.iter().rev().cloned().collect()));
            out.push(Value::Array(vec![first.clone(); 3000]));
            if leaf_name(path) == "schedule" {
                let steps = (0..3000)
                    .map(|i| {
                        let mut p = last.clone();
                        p["at"] = Value::String(format!("{i} ns"));
                        p
                    })
                    .collect();
                out.push(Value::Array(steps));
            }
        }
    }
    out
}

/// What one case did.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Refused while parsing or by the run limits: `(key, message)`.
    Refused(String, String),
    /// Ran to the end.
    Ran,
    /// Still progressing at the event or wall guard.
    Guarded,
}

fn refused(e: ScenarioError) -> Outcome {
    let line = e.to_string();
    Outcome::Refused(e.key, line)
}

/// Parses, checks and runs one case on its own thread: `Err` for a panic or a hang.
fn try_case(text: String, dir: PathBuf) -> Result<Outcome, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(move || run_case(&text, &dir));
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

fn run_case(text: &str, dir: &Path) -> Outcome {
    let s = match Scenario::parse(text, Format::Toml, "fuzz.toml", dir) {
        Err(e) => return refused(e),
        Ok(s) => s,
    };
    // The same document as JSON (a Python dict) must be judged the same way.
    if let Ok(json) = toml::from_str::<serde_json::Value>(text) {
        let json_text = serde_json::to_string(&json).unwrap();
        if let Err(e) = Scenario::parse(&json_text, Format::Json, "fuzz.toml", dir) {
            panic!("TOML accepted, the same scenario as JSON refused: {e}");
        }
    }
    if let Err(e) = limits::check(&s, &LIMITS) {
        return refused(e);
    }
    // `lowlat run --cc X` / `--queue Q` on the same scenario: refused cleanly or built.
    for cc in CONTROLLERS.iter() {
        if let Ok(other) = s.clone().with_cc(cc) {
            if limits::check(&other, &LIMITS).is_ok() {
                drop(Simulation::new(other));
            }
        }
    }
    for q in QUEUE_VARIANTS {
        if let Ok(other) = s.clone().with_queue(q) {
            if limits::check(&other, &LIMITS).is_ok() {
                drop(Simulation::new(other));
            }
        }
    }
    let started = std::time::Instant::now();
    let mut sim = Simulation::new(s);
    let step = lowlat_core::Duration::from_millis(10);
    let mut guarded = false;
    while !sim.is_done() {
        let until = sim.now() + step;
        sim.advance(until);
        if sim.events() > EVENT_GUARD || started.elapsed().as_secs_f64() > WALL_GUARD_S {
            guarded = true;
            break;
        }
    }
    let result = sim.finish();
    let summary = result.summary_json();
    serde_json::from_str::<serde_json::Value>(&summary).expect("the summary is JSON");
    if guarded {
        Outcome::Guarded
    } else {
        Outcome::Ran
    }
}

#[derive(Default)]
struct Tally {
    refused: usize,
    ran: usize,
    guarded: usize,
    failures: Vec<String>,
    /// The slowest cases, `(wall seconds, case)`.
    slowest: Vec<(f64, String)>,
}

impl Tally {
    /// Checks one case: a clean one-line refusal naming one of the keys changed, or a clean run.
    fn check(&mut self, base: &Value, changes: &[(KeyPath, Value)], dir: &Path) {
        let mut doc = base.clone();
        for (path, v) in changes {
            if let Some(slot) = get_mut(&mut doc, path) {
                *slot = v.clone();
            }
        }
        let text = toml::to_string(&doc).expect("a table serialises");
        let case =
            || changes.iter().map(|(p, v)| format!("{} = {}", show(p), v)).collect::<Vec<_>>().join(", ");
        if std::env::var_os("LOWLAT_FUZZ_VERBOSE").is_some() {
            eprintln!("case: {}", case());
        }
        let started = std::time::Instant::now();
        let outcome = try_case(text.clone(), dir.to_path_buf());
        // LOWLAT_FUZZ_DUMP=DIR: each failing case's scenario, to replay it.
        if let (Some(d), Err(_)) = (std::env::var_os("LOWLAT_FUZZ_DUMP"), &outcome) {
            let name = format!("case{}.toml", self.failures.len());
            std::fs::write(Path::new(&d).join(name), format!("# {}\n{text}", case().replace('\n', " ")))
                .unwrap();
        }
        let wall = started.elapsed().as_secs_f64();
        self.slowest.push((wall, case()));
        self.slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
        self.slowest.truncate(3);
        match outcome {
            Err(e) => self.failures.push(format!("{}: {e}", case())),
            Ok(Outcome::Ran) => self.ran += 1,
            Ok(Outcome::Guarded) => self.guarded += 1,
            Ok(Outcome::Refused(key, line)) => {
                self.refused += 1;
                let named = changes.iter().any(|(p, _)| {
                    let leaf = leaf_name(p);
                    key.contains(leaf) || line.contains(leaf)
                });
                if line.contains('\n') || !line.starts_with("fuzz.toml: ") || !named {
                    self.failures.push(format!("{}: unclear error: {line}", case()));
                }
            }
        }
    }

    /// The failures, at most two per key changed (the rest counted), for the assertion message.
    fn failure_report(&self) -> String {
        let mut per_key: BTreeMap<String, Vec<&String>> = BTreeMap::new();
        for f in &self.failures {
            let key = f.split(" = ").next().unwrap_or_default().to_string();
            per_key.entry(key).or_default().push(f);
        }
        let mut out = format!("{} failures:\n", self.failures.len());
        for (key, fs) in per_key {
            for f in fs.iter().take(2) {
                out.push_str(&f.chars().take(400).collect::<String>().replace('\n', "\\n"));
                out.push('\n');
            }
            if fs.len() > 2 {
                out.push_str(&format!("  ... and {} more for {key}\n", fs.len() - 2));
            }
        }
        out
    }

    fn report(&self, what: &str) {
        eprintln!(
            "{what}: {} refused, {} ran to the end, {} ran to a guard ({EVENT_GUARD} events or {WALL_GUARD_S} s)",
            self.refused, self.ran, self.guarded
        );
        for (wall, case) in &self.slowest {
            eprintln!("  slow: {wall:.2} s: {case}");
        }
    }
}

fn bases() -> Vec<Value> {
    BASES.iter().map(|b| Value::Table(b.parse::<toml::Table>().expect("base parses"))).collect()
}

/// A table's path with indices dropped and the aliases folded (`reverse` is a link like
/// `bottleneck`, `access` and `egress` take the same keys).
fn table_kind(path: &KeyPath) -> String {
    let names: Vec<&str> = path
        .iter()
        .filter_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        })
        .map(|k| match k {
            "reverse" => "bottleneck",
            "egress" => "access",
            k => k,
        })
        .collect();
    names.join(".")
}

#[test]
fn the_bases_run_and_use_every_key_of_the_format() {
    let dir = base_dir();
    let mut covered: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut accepted: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (b, base) in bases().iter().enumerate() {
        let text = toml::to_string(base).unwrap();
        assert_eq!(try_case(text, dir.clone()), Ok(Outcome::Ran), "base {b}");
        let mut paths = Vec::new();
        key_paths(base, &mut Vec::new(), &mut paths);
        let mut tables = vec![Vec::new()];
        tables.extend(paths.into_iter().filter(|p| matches!(get(base, p), Some(Value::Table(_)))));
        for t in tables.iter().filter(|t| leaf_name(t) != "cc_params") {
            let Some(Value::Table(fields)) = get(base, t) else { unreachable!() };
            covered.entry(table_kind(t)).or_default().extend(fields.keys().cloned());
            // serde names the keys it accepts in a table when it meets an unknown one.
            let mut doc = base.clone();
            let Some(Value::Table(slot)) = get_mut(&mut doc, t) else { unreachable!() };
            slot.insert("zz_unknown".into(), Value::Integer(1));
            let e = Scenario::parse(&toml::to_string(&doc).unwrap(), Format::Toml, "fuzz.toml", &dir)
                .expect_err("an unknown key");
            let (_, list) = e.message.split_once("expected").unwrap_or_else(|| panic!("{e}"));
            let keys = list.split('`').skip(1).step_by(2).map(str::to_string);
            accepted.entry(table_kind(t)).or_default().extend(keys);
        }
    }
    let mut missing = Vec::new();
    for (table, keys) in &accepted {
        for k in keys {
            // `kind` of a loss table selects the variant; both variants are in the bases.
            if !covered.get(table).is_some_and(|c| c.contains(k)) {
                missing.push(format!("{table}.{k}"));
            }
        }
    }
    assert!(missing.is_empty(), "keys of the format no base uses (add them): {missing:?}");
    assert!(accepted.len() >= 12, "{accepted:?}");
}

#[test]
fn every_scenario_key_refuses_or_runs_extreme_values() {
    let dir = base_dir();
    let mut rng = Rng(0x155C_EA21);
    let mut tally = Tally::default();
    let mut keys = 0;
    for base in bases() {
        let mut paths = Vec::new();
        key_paths(&base, &mut Vec::new(), &mut paths);
        for path in paths {
            // LOWLAT_FUZZ_KEY=bottleneck.delay: only the keys whose path contains it.
            if std::env::var("LOWLAT_FUZZ_KEY").is_ok_and(|k| !show(&path).contains(&k)) {
                continue;
            }
            keys += 1;
            let kind = kind_of(&path, get(&base, &path).unwrap());
            let mut values: Vec<Value> = ANY.iter().chain(extremes(kind)).map(|v| literal(v)).collect();
            values.extend(list_values(&path, &base));
            values.extend((0..4).map(|_| literal(&rng.wild())));
            values.extend((0..2).map(|_| literal(&rng.plausible(kind))));
            for v in values {
                tally.check(&base, &[(path.clone(), v)], &dir);
            }
        }
    }
    tally.report(&format!("single keys ({keys} keys)"));
    assert!(tally.failures.is_empty(), "{}", tally.failure_report());
    // Both branches were exercised.
    assert!(tally.refused > 2000 && tally.ran + tally.guarded > 300, "{}/{}", tally.refused, tally.ran);
}

/// Random combinations per base scenario (LOWLAT_FUZZ_COMBINATIONS overrides it, and
/// LOWLAT_FUZZ_SEED the seed, for a longer search outside the suite).
const COMBINATIONS_PER_BASE: usize = 300;

#[test]
fn random_combinations_of_scenario_keys_refuse_or_run() {
    let dir = base_dir();
    let seed = std::env::var("LOWLAT_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x15C0_5CE2);
    let mut rng = Rng(seed);
    let combinations = std::env::var("LOWLAT_FUZZ_COMBINATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(COMBINATIONS_PER_BASE);
    let mut tally = Tally::default();
    for base in bases() {
        let mut paths = Vec::new();
        key_paths(&base, &mut Vec::new(), &mut paths);
        // Leaves only: changing a table and then one of its keys is one change.
        let leaves: Vec<KeyPath> =
            paths.into_iter().filter(|p| !matches!(get(&base, p), Some(Value::Table(_)))).collect();
        for _ in 0..combinations {
            let n = 2 + rng.below(3);
            let mut changes: Vec<(KeyPath, Value)> = Vec::new();
            for _ in 0..n {
                let path = leaves[rng.below(leaves.len())].clone();
                if changes.iter().any(|(p, _)| p.starts_with(&path) || path.starts_with(p)) {
                    continue;
                }
                let here = get(&base, &path).unwrap();
                let kind = kind_of(&path, here);
                let v = match rng.below(10) {
                    0 => ANY[rng.below(ANY.len())].to_string(),
                    1 => extremes(kind)[rng.below(extremes(kind).len())].to_string(),
                    2 => rng.wild(),
                    3 | 4 => rng.plausible(kind),
                    _ => rng.near(kind, here),
                };
                changes.push((path, literal(&v)));
            }
            tally.check(&base, &changes, &dir);
        }
    }
    tally.report("combinations");
    assert!(tally.ran + tally.guarded > 60, "only {} combinations ran", tally.ran + tally.guarded);
    assert!(tally.failures.is_empty(), "{}", tally.failure_report());
}

#[test]
fn what_the_fuzz_found_runs_now() {
    let dir = base_dir();
    let bases = bases();
    let key = |s: &str| -> KeyPath {
        s.split('.').map(|k| k.parse().map(Seg::Index).unwrap_or_else(|_| Seg::Key(k.into()))).collect()
    };
    for (base, path, value) in [
        // "link 0 asked to be woken in the past": a mahimahi opportunity at the instant SCONE
        // injected a signal, no propagation delay.
        (2, "bottleneck.delay", "\"0 s\""),
        // A Wi-Fi TXOP of a 1 bit/s rate never holds a byte: it drew TXOPs for ever.
        (1, "bottleneck.trace", "\"rate_one_bit.trace\""),
        // A trace replayed at 1 ns per line walked every step of every packet.
        (1, "bottleneck.trace_step", "\"1 ns\""),
        // The longest TXOP gap allowed (an hour) over the looped trace (9e9 s used to hang).
        (1, "bottleneck.wifi.access_max", "\"3600 s\""),
    ] {
        let mut doc = bases[base].clone();
        *get_mut(&mut doc, &key(path)).unwrap() = literal(value);
        let started = std::time::Instant::now();
        let outcome = try_case(toml::to_string(&doc).unwrap(), dir.clone());
        assert!(matches!(outcome, Ok(Outcome::Ran | Outcome::Guarded)), "{path} = {value}: {outcome:?}");
        assert!(started.elapsed().as_secs_f64() < 5.0, "{path} = {value}: {:?}", started.elapsed());
    }
}
