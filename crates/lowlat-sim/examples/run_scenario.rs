//! Runs a scenario file and prints its summary (a developer's shortcut around the Python CLI).
//!
//! `cargo run --release -p lowlat-sim --example run_scenario -- FILE [CC [QUEUE]]`

use lowlat_sim::{Scenario, Simulation};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(file) = args.get(1) else {
        eprintln!("usage: run_scenario FILE [CC [QUEUE]]");
        std::process::exit(2);
    };
    let mut scenario = Scenario::from_file(Path::new(file)).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    if let Some(cc) = args.get(2) {
        scenario = scenario.with_cc(cc).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        });
    }
    if let Some(q) = args.get(3) {
        scenario = scenario.with_queue(q).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        });
    }
    let started = std::time::Instant::now();
    let result = Simulation::new(scenario).run();
    eprintln!("wall {:.3} s", started.elapsed().as_secs_f64());
    println!("{}", result.summary_json());
}
