//! Runs scenarios as the RMCAT suite does (summary only, no per-sample tables) and prints one
//! summary line each: the workload to profile for `lowlat suite rmcat`.
//!
//! `cargo run --release -p lowlat-sim --example suite_cell -- FILE CC [RTT_MS JITTER_MS [QUEUE]]`

use lowlat_core::Duration;
use lowlat_sim::{Scenario, Simulation, Tables};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: suite_cell FILE CC [RTT_MS JITTER_MS [QUEUE]]");
        std::process::exit(2);
    }
    let fail = |e: lowlat_sim::ScenarioError| -> ! {
        eprintln!("{e}");
        std::process::exit(2)
    };
    let mut sc = Scenario::from_file(Path::new(&args[1])).unwrap_or_else(|e| fail(e));
    sc = sc.with_cc(&args[2]).unwrap_or_else(|e| fail(e));
    if let (Some(rtt), Some(jitter)) = (args.get(3), args.get(4)) {
        let ms = |s: &str| Duration::from_secs_f64(s.parse::<f64>().expect("a number of ms") / 1e3);
        sc = sc.with_path(ms(rtt), ms(jitter));
    }
    if let Some(q) = args.get(5) {
        sc = sc.with_queue(q).unwrap_or_else(|e| fail(e));
    }
    let mut sim = Simulation::new(sc);
    sim.advance(sim.end());
    let events = sim.events();
    let r = sim.finish_with(Tables::none());
    eprintln!("events {events}");
    println!("{}", r.summary_json());
}
