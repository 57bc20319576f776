//! The benchmark rows, best of N runs each, for before/after comparisons and profiling:
//! `cargo run --release -p lowlat-sim --example bench_rows -- [repeats] [seconds] [filter]`.

use lowlat_core::{Bitrate, Duration};
use lowlat_sim::{bench, Scenario, Simulation};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let repeats: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let seconds: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(120);
    let filter = args.get(3).cloned().unwrap_or_default();
    let d = Duration::from_secs(seconds);
    let catalog = |n: &str, cc: &str| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../python/lowlat/scenarios/{n}.toml"));
        Scenario::from_file(&p).unwrap().with_cc(cc).unwrap()
    };
    let mut rows: Vec<(String, Box<dyn Fn() -> Scenario>)> = Vec::new();
    for mbps in [10, 100] {
        let r = Bitrate::mbps(mbps);
        rows.push((format!("cbr-{mbps}M"), Box::new(move || bench::standard_dumbbell(r, d))));
        rows.push((format!("cubic-{mbps}M"), Box::new(move || bench::tcp_dumbbell("cubic", r, d))));
    }
    for cc in ["gcc", "nada", "scream", "scream2"] {
        rows.push((format!("rmcat-5.1-{cc}"), Box::new(move || catalog("rmcat-5.1", cc))));
    }
    // Zhuge at a Wi-Fi AP (the paper's ABW-drop shape): GCC video, 30 -> 10 Mbit/s at 20 s.
    for assist in ["zhuge", "none"] {
        let text = format!(
            r#"
duration = "{seconds} s"
seed = 3
[bottleneck]
schedule = [ {{ at = "0 s", rate = "30 Mbit/s" }}, {{ at = "20 s", rate = "10 Mbit/s" }} ]
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
        );
        rows.push((
            format!("ap-gcc-{assist}"),
            Box::new(move || {
                Scenario::parse(&text, lowlat_sim::Format::Toml, "<ap>", Path::new(".")).unwrap()
            }),
        ));
    }
    for (name, mk) in rows.iter().filter(|(n, _)| n.contains(&filter)) {
        let mut best = f64::MAX;
        let mut last = None;
        for _ in 0..repeats {
            let r = Simulation::new(mk()).run();
            best = best.min(r.summary.wall_s);
            last = Some(r);
        }
        let s = last.unwrap().summary;
        let delivered: u64 = s.flows.iter().map(|f| f.packets_received).sum();
        println!(
            "{name:<18} best {:8.4} s  events {:>10}  delivered {:>9}  events/pkt {:5.2}  {:6.2} M pkt/s",
            best,
            s.events,
            delivered,
            s.events as f64 / delivered.max(1) as f64,
            delivered as f64 / best / 1e6
        );
    }
}
