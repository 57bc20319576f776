//! Runs a list of scenarios and prints one digest line per run (the summary without `wall_s`,
//! `events` and the version, and every value of the series and per-sample tables, FNV-1a): build it on two commits and
//! `diff` the outputs to check that a change kept every result.
//!
//! `cargo run --release -p lowlat-sim --example digest_runs -- LIST`
//!
//! Each line of LIST: `FILE [cc=CC] [queue=Q] [rtt_ms=R] [jitter_ms=J] [seconds=S] [seed=N]
//! [slice_ms=M] [predictions=off]` (`slice_ms`: advance in slices of M ms, as the Python runner
//! does, instead of in one go; `predictions=off`: the run is told before it starts that the
//! predictions table will not be read, as `lowlat.run(..., tables=[...])` does, so Zhuge keeps no
//! log and the table is empty); `#` starts a comment.

use lowlat_core::{Duration, Time};
use lowlat_sim::{Column, RunResult, Scenario, Simulation, Table};
use std::path::Path;

fn fnv(h: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *h ^= u64::from(*b);
        *h = h.wrapping_mul(0x0100_0000_01b3);
    }
}

fn digest(r: &RunResult) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for line in r.summary_json().lines() {
        let top_level = |key: &str| line.starts_with(&format!("  \"{key}\":"));
        if !(top_level("wall_s") || top_level("events") || top_level("lowlat_version")) {
            fnv(&mut h, line.as_bytes());
        }
    }
    let tables: [&Table; 5] = [&r.flow_series, &r.link_series, &r.predictions, &r.frames, &r.sender_rtt];
    for t in tables {
        for (name, col) in &t.columns {
            fnv(&mut h, name.as_bytes());
            match col {
                Column::F64(v) => v.iter().for_each(|x| fnv(&mut h, &x.to_bits().to_le_bytes())),
                Column::I64(v) => v.iter().for_each(|x| fnv(&mut h, &x.to_le_bytes())),
                Column::Str(_) | Column::Labels { .. } => {
                    col.labels().for_each(|x| fnv(&mut h, x.as_bytes()))
                }
            }
        }
    }
    h
}

fn main() {
    let list = std::env::args().nth(1).expect("usage: digest_runs LIST");
    let text = std::fs::read_to_string(&list).expect("readable list");
    for line in text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty()) {
        let mut words = line.split_whitespace();
        let file = words.next().expect("a file");
        let mut sc = Scenario::from_file(Path::new(file)).unwrap_or_else(|e| panic!("{e}"));
        let (mut rtt, mut jitter, mut slice, mut predictions) = (None, 0.0, None, true);
        for w in words {
            let (k, v) = w.split_once('=').expect("key=value");
            match k {
                "cc" => sc = sc.with_cc(v).unwrap(),
                "queue" => sc = sc.with_queue(v).unwrap(),
                "rtt_ms" => rtt = Some(v.parse::<f64>().unwrap()),
                "jitter_ms" => jitter = v.parse::<f64>().unwrap(),
                "seconds" => sc.duration = Duration::from_secs_f64(v.parse().unwrap()),
                "seed" => sc.seed = v.parse().unwrap(),
                "slice_ms" => slice = Some(v.parse::<u64>().unwrap()),
                "predictions" => predictions = v != "off",
                _ => panic!("unknown key {k}"),
            }
        }
        if let Some(r) = rtt {
            sc = sc.with_path(Duration::from_secs_f64(r / 1e3), Duration::from_secs_f64(jitter / 1e3));
        }
        let started = std::time::Instant::now();
        let mut sim = Simulation::new(sc);
        let tables = lowlat_sim::Tables { predictions, ..lowlat_sim::Tables::default() };
        sim.plan_tables(tables).expect("before the run");
        match slice {
            Some(ms) => {
                let mut t = Time::ZERO;
                while !sim.is_done() {
                    t += Duration::from_millis(ms);
                    sim.advance(t);
                }
            }
            None => sim.advance(sim.end()),
        }
        let events = sim.events();
        let r = sim.finish_with(tables);
        let wall = started.elapsed().as_secs_f64();
        println!("{:016x} {line}  (events {events}, {wall:.3} s)", digest(&r));
    }
}
