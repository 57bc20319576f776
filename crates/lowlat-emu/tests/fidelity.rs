//! The same scenario simulated and emulated with CBR traffic on real UDP sockets over loopback:
//! throughput within 2 %, bottleneck queueing delay P50/P95 within 1 ms or 5 % (issue 16).

use lowlat_core::Duration;
use lowlat_emu::clock::WallClock;
use lowlat_emu::relay::{Relay, RelayConfig};
use lowlat_emu::traffic::{send_cbr, sink};
use lowlat_sim::{Format, Scenario, Simulation};
use std::net::UdpSocket;
use std::sync::Mutex;

/// One real-time run at a time: runs in parallel would share the two cores with each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const SECONDS: f64 = 2.5;

fn scenario(bottleneck: &str, cbr_kbps: u64) -> Scenario {
    let text = format!(
        "name = \"fidelity\"\nduration = \"{SECONDS} s\"\nseed = 3\n[bottleneck]\n{bottleneck}\ndelay = \"10 ms\"\n\
         [reverse]\nrate = \"10 Mbit/s\"\ndelay = \"10 ms\"\n\
         [[flows]]\nid = \"cbr\"\nkind = \"cbr\"\nrate = \"{cbr_kbps} kbit/s\"\npacket_size = \"1000 B\"\n"
    );
    Scenario::parse(&text, Format::Toml, "fidelity.toml", std::path::Path::new(".")).expect("valid scenario")
}

/// Runs `sc` emulated with a CBR sender at the flow's rate; returns the summary as JSON.
fn emulate(sc: &Scenario) -> serde_json::Value {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let relay = Relay::bind(
        sc.clone(),
        RelayConfig::new("127.0.0.1:0".parse().unwrap(), server.local_addr().unwrap()),
    )
    .expect("relay binds");
    let listen = relay.listen_addr();
    let rate = sc.flows[0].rate;
    let stop = Arc::new(AtomicBool::new(false));
    let clock = WallClock::start();
    let sink_thread = {
        let stop = stop.clone();
        std::thread::spawn(move || sink(&server, clock, &stop))
    };
    let relay_thread = std::thread::spawn(move || relay.run(|| false).expect("relay runs"));
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    send_cbr(&client, listen, Some(rate), 1000, Duration::from_secs_f64(SECONDS), clock);
    let report = relay_thread.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let got = sink_thread.join().unwrap();
    assert_eq!(got.packets, report.counters.forwarded[0], "the sink got what the relay forwarded");
    serde_json::from_str(&report.summary_json()).unwrap()
}

fn check(sc: Scenario) {
    let sim: serde_json::Value =
        serde_json::from_str(&Simulation::new(sc.clone()).run().summary_json()).unwrap();
    // A run in which the relay's own timers were late (the host took the cores away: P99 over
    // 2 ms, against well under 1 ms on an idle 2-core machine) measures the host, not the
    // emulator: it is run again, up to three times in all, and the last run is judged.
    let mut emu = emulate(&sc);
    for _ in 1..3 {
        let late_us = emu["relay"]["timer_lateness_us"]["p99"].as_f64().unwrap_or(f64::INFINITY);
        if late_us <= 2000.0 {
            break;
        }
        eprintln!("{}: the relay's timers were late (P99 {late_us:.0} us): running again", sc.name);
        emu = emulate(&sc);
    }
    let thr = |v: &serde_json::Value| v["flows"][0]["throughput_kbps"].as_f64().unwrap();
    let q = |v: &serde_json::Value, p: &str| v["links"][0]["queue_delay_ms"][p].as_f64().unwrap();
    let (ts, te) = (thr(&sim), thr(&emu));
    eprintln!(
        "{}: throughput sim {ts:.0} emu {te:.0} kbit/s; queue p50 sim {:.2} emu {:.2}, p95 sim {:.2} emu {:.2} ms; relay {}",
        sc.name,
        q(&sim, "p50"),
        q(&emu, "p50"),
        q(&sim, "p95"),
        q(&emu, "p95"),
        emu["relay"]
    );
    assert!((te - ts).abs() <= 0.02 * ts, "throughput: simulated {ts:.1} kbit/s, emulated {te:.1}");
    for p in ["p50", "p95"] {
        let (a, b) = (q(&sim, p), q(&emu, p));
        assert!(
            (a - b).abs() <= 1.0_f64.max(0.05 * a),
            "queue delay {p}: simulated {a:.3} ms, emulated {b:.3}"
        );
    }
    assert_eq!(emu["relay"]["malformed"][0], 0);
}

#[test]
fn constant_rate_droptail_matches_the_simulator() {
    // 5 Mbit/s into 4 Mbit/s: the 100 ms drop-tail queue fills and stays full.
    check(scenario("rate = \"4 Mbit/s\"\nqueue = { kind = \"droptail\", limit = \"100 ms\" }", 5_000));
}

#[test]
fn capacity_schedule_matches_the_simulator() {
    // 3 Mbit/s: under the first capacity, over the second; the queue builds after the step.
    check(scenario(
        "schedule = [{ at = \"0 s\", rate = \"4 Mbit/s\" }, { at = \"1.2 s\", rate = \"2 Mbit/s\" }]\n\
         queue = { kind = \"droptail\", limit = \"200 ms\" }",
        3_000,
    ));
}

#[test]
fn codel_matches_the_simulator() {
    check(scenario("rate = \"4 Mbit/s\"\nqueue = { kind = \"codel\" }", 5_000));
}

#[test]
fn unshaped_relay_adds_little_delay() {
    let sc = scenario("rate = \"10 Gbit/s\"", 2_000);
    let emu = emulate(&sc);
    // The relay's own delay (receive to send) on top of the 10 ms propagation delay; tolerant of a
    // loaded 2-core machine, yet a millisecond-granular timer would fail it.
    let added = emu["flows"][0]["owd_ms"]["p50"].as_f64().unwrap() - 10.0;
    assert!((0.0..2.0).contains(&added), "relay added {added} ms at the median");
}
