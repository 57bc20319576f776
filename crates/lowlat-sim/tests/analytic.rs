//! Analytic checks: the simulator reproduces what queueing theory and the loss models predict.

mod common;
use common::run;

/// M/D/1: Poisson arrivals of fixed-size packets into a constant-rate link. The mean waiting time
/// in queue is W = rho * S / (2 (1 - rho)), S the service time (Pollaczek-Khinchine).
fn md1_mean_wait_ms(load: f64, duration_s: u64) -> (f64, f64) {
    let link_bps = 100e6;
    let size_bytes = 1500.0;
    let service_ms = size_bytes * 8.0 / link_bps * 1e3;
    let expected = load * service_ms / (2.0 * (1.0 - load));
    let r = run(&format!(
        r#"
duration = "{duration_s} s"
seed = 11
[bottleneck]
rate = "100 Mbit/s"
delay = "1 ms"
queue = {{ kind = "droptail", limit = "unlimited" }}
[[flows]]
id = "poisson"
kind = "poisson"
rate = "{rate} bit/s"
packet_size = "1500 B"
"#,
        rate = (load * link_bps) as u64
    ));
    let b = &r.summary.links[0];
    assert_eq!(b.id, "bottleneck");
    (b.queue_delay_ms.mean.unwrap(), expected)
}

#[test]
fn md1_mean_waiting_time_at_load_0_5() {
    let (measured, expected) = md1_mean_wait_ms(0.5, 300);
    assert!(
        (measured - expected).abs() < 0.03 * expected,
        "measured {measured} ms, M/D/1 gives {expected} ms"
    );
}

#[test]
fn md1_mean_waiting_time_at_load_0_9() {
    let (measured, expected) = md1_mean_wait_ms(0.9, 1500);
    assert!(
        (measured - expected).abs() < 0.03 * expected,
        "measured {measured} ms, M/D/1 gives {expected} ms"
    );
}

#[test]
fn cbr_at_95_percent_gives_utilisation_0_95_and_no_loss() {
    let r = run(r#"
duration = "60 s"
[bottleneck]
rate = "10 Mbit/s"
delay = "25 ms"
[[flows]]
id = "cbr"
kind = "cbr"
rate = "9.5 Mbit/s"
packet_size = "1500 B"
access = { rate = "10 Gbit/s" }
egress = { rate = "10 Gbit/s" }
"#);
    let b = r.summary.links.iter().find(|l| l.id == "bottleneck").unwrap();
    assert!((b.utilization - 0.95).abs() < 0.005, "utilisation {}", b.utilization);
    assert_eq!(b.drops, 0);
    let f = &r.summary.flows[0];
    assert_eq!(f.loss_ratio, 0.0);
    assert!((f.throughput_kbps - 9500.0).abs() < 0.005 * 9500.0, "throughput {}", f.throughput_kbps);
    // Under capacity nothing queues: one-way delay = 25 ms propagation + 1.2 ms serialisation at
    // the bottleneck + 2 x 1.2 us on the access links.
    let owd = f.owd_ms.max.unwrap();
    assert!((owd - 26.2024).abs() < 0.001, "owd max {owd} ms");
    assert_eq!(r.summary.links[0].queue_delay_ms.max, Some(0.0));
}

#[test]
fn bernoulli_loss_end_to_end_within_three_sigma() {
    let p = 0.02;
    let r = run(&format!(
        r#"
duration = "100 s"
seed = 5
[bottleneck]
rate = "10 Mbit/s"
delay = "10 ms"
loss = {{ kind = "bernoulli", p = {p} }}
[[flows]]
id = "cbr"
kind = "cbr"
rate = "5 Mbit/s"
packet_size = "1000 B"
"#
    ));
    let f = &r.summary.flows[0];
    let n = f.packets_sent as f64;
    let lost = r.summary.links[0].random_losses as f64;
    let sigma = (n * p * (1.0 - p)).sqrt();
    assert!((lost - n * p).abs() < 3.0 * sigma, "lost {lost} of {n}, expected {} +- {}", n * p, 3.0 * sigma);
    // The receiver's view (sequence gaps) agrees with the link's count.
    assert!((f.loss_ratio - lost / n).abs() < 1e-3, "receiver loss {} vs link {}", f.loss_ratio, lost / n);
}

#[test]
fn gilbert_elliott_end_to_end_matches_its_stationary_rate() {
    let r = run(r#"
duration = "400 s"
seed = 9
[bottleneck]
rate = "10 Mbit/s"
loss = { kind = "gilbert-elliott", p_good_to_bad = 0.017, p_bad_to_good = 0.935 }
[[flows]]
id = "cbr"
kind = "cbr"
rate = "5 Mbit/s"
packet_size = "1000 B"
"#);
    let expected = 0.017 / (0.017 + 0.935);
    let got = r.summary.flows[0].loss_ratio;
    assert!((got - expected).abs() < 0.05 * expected, "loss {got}, stationary {expected}");
}

#[test]
fn drop_tail_300ms_never_holds_more_than_300ms_of_data() {
    let r = run(r#"
duration = "30 s"
[bottleneck]
rate = "2 Mbit/s"
queue = { kind = "droptail", limit = "300 ms" }
[[flows]]
id = "overload"
kind = "cbr"
rate = "3 Mbit/s"
packet_size = "1200 B"
"#);
    let b = &r.summary.links[0];
    let limit_bytes = 2e6 * 0.3 / 8.0;
    assert!(b.max_queue_bytes as f64 <= limit_bytes, "held {} bytes", b.max_queue_bytes);
    assert!(b.drops > 0, "an overloaded queue must drop");
    // The sojourn time can never exceed the limit's worth of data (plus nothing: bytes ahead / rate).
    let max = b.queue_delay_ms.max.unwrap();
    assert!(max <= 300.0 && max > 290.0, "max sojourn {max} ms");
    // The flow gets the capacity.
    assert!((b.utilization - 1.0).abs() < 0.01, "utilisation {}", b.utilization);
}

fn overloaded(queue: &str, rate_mbps: f64) -> lowlat_sim::results::LinkSummary {
    let r = run(&format!(
        r#"
duration = "60 s"
[bottleneck]
rate = "10 Mbit/s"
queue = {queue}
[[flows]]
id = "overload"
kind = "cbr"
rate = "{rate_mbps} Mbit/s"
packet_size = "1500 B"
"#
    ));
    r.summary.links[0].clone()
}

#[test]
fn codel_keeps_a_persistently_overloaded_queue_near_its_target() {
    // 5 % more than the link carries, for the whole run: drop-tail sits at its 300 ms limit, CoDel
    // finds the drop rate that holds the standing queue near its 5 ms target.
    let codel = overloaded(r#"{ kind = "codel", limit = "300 ms" }"#, 10.5);
    let droptail = overloaded(r#"{ kind = "droptail", limit = "300 ms" }"#, 10.5);
    let (c, d) = (codel.queue_delay_ms, droptail.queue_delay_ms);
    assert!(d.p50.unwrap() > 290.0, "drop-tail median sojourn {:?} ms", d.p50);
    assert!(c.p50.unwrap() < 10.0, "CoDel median sojourn {:?} ms, target 5 ms", c.p50);
    assert!(c.mean.unwrap() < 12.0, "CoDel mean sojourn {:?} ms, target 5 ms", c.mean);
    assert!(codel.drops > 0);
    assert!(codel.utilization > 0.99, "CoDel must not starve the link: utilisation {}", codel.utilization);
}

#[test]
fn codel_against_heavy_unresponsive_overload_still_bounds_the_queue() {
    // RFC 8289's control law restarts each dropping episode from the previous episode's drop count,
    // so against 20 % of unresponsive overload it saws between ~10 and ~130 ms instead of holding
    // 5 ms (CoDel targets responsive traffic). It still keeps far below drop-tail.
    let codel = overloaded(r#"{ kind = "codel", limit = "300 ms" }"#, 12.0);
    let q = codel.queue_delay_ms;
    assert!(q.mean.unwrap() < 120.0, "CoDel mean sojourn {:?} ms", q.mean);
    assert!(q.max.unwrap() < 300.0, "CoDel max sojourn {:?} ms", q.max);
}

#[test]
fn schedule_changes_capacity_at_the_given_times() {
    let r = run(r#"
duration = "20 s"
[bottleneck]
schedule = [{ at = "0 s", rate = "1 Mbit/s" }, { at = "10 s", rate = "4 Mbit/s" }]
[[flows]]
id = "cbr"
kind = "cbr"
rate = "8 Mbit/s"
packet_size = "1000 B"
"#);
    let b = &r.summary.links[0];
    assert!((b.capacity_mean_kbps - 2500.0).abs() < 1.0, "{}", b.capacity_mean_kbps);
    assert!((b.utilization - 1.0).abs() < 0.01, "{}", b.utilization);
}

#[test]
fn a_mahimahi_trace_of_one_line_1_carries_12_mbps_end_to_end() {
    let dir = std::env::temp_dir().join(format!("lowlat-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("one.mahi"), "1\n").unwrap();
    let text = r#"
duration = "20 s"
[bottleneck]
trace = "one.mahi"
queue = { kind = "droptail", limit = "100 packets" }
[[flows]]
id = "overload"
kind = "cbr"
rate = "20 Mbit/s"
packet_size = "1500 B"
"#;
    let sc = lowlat_sim::Scenario::parse(text, lowlat_sim::Format::Toml, "t.toml", &dir).unwrap();
    let r = lowlat_sim::Simulation::new(sc).run();
    std::fs::remove_dir_all(&dir).ok();
    let b = &r.summary.links[0];
    assert!((b.capacity_mean_kbps - 12_000.0).abs() < 1.0, "capacity {}", b.capacity_mean_kbps);
    assert!((r.summary.flows[0].throughput_kbps - 12_000.0).abs() < 0.01 * 12_000.0);
    assert!((b.utilization - 1.0).abs() < 0.001, "utilisation {}", b.utilization);
}
