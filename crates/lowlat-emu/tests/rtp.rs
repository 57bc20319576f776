//! `lowlat send` / `lowlat receive` through the relay on a 12 s RMCAT 5.1 (capacity 1 -> 2.5 ->
//! 0.6 -> 1 Mbit/s, steps at 40 %, 60 %, 80 % of the run): real RTP with real transport-cc /
//! RFC 8888 feedback, the controllers of the simulator, compared with the simulated run.

use lowlat_emu::relay::{Relay, RelayConfig};
use lowlat_emu::rtp::{run_receiver, run_sender};
use lowlat_sim::{Format, Scenario, Simulation};
use std::net::UdpSocket;
use std::sync::Mutex;

/// One real-time run at a time: runs in parallel would share the two cores with each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const SECONDS: f64 = 12.0;

fn scenario(cc: &str, format: &str) -> Scenario {
    scenario_with(cc, format, "")
}

fn scenario_with(cc: &str, format: &str, bottleneck_extra: &str) -> Scenario {
    let s = |f: f64| SECONDS * f;
    let text = format!(
        "name = \"rmcat-5.1-short\"\nduration = \"{SECONDS} s\"\nseed = 1\n[bottleneck]\n\
         schedule = [{{ at = \"0 s\", rate = \"1 Mbit/s\" }}, {{ at = \"{} s\", rate = \"2.5 Mbit/s\" }}, \
         {{ at = \"{} s\", rate = \"0.6 Mbit/s\" }}, {{ at = \"{} s\", rate = \"1 Mbit/s\" }}]\n\
         delay = \"50 ms\"\nqueue = {{ kind = \"droptail\", limit = \"300 ms\" }}\n{bottleneck_extra}\n\
         [reverse]\nrate = \"1 Mbit/s\"\ndelay = \"50 ms\"\n\
         [[flows]]\nid = \"video\"\nkind = \"rtp-video\"\ncc = \"{cc}\"\nrmin = \"150 kbit/s\"\nrmax = \"1.5 Mbit/s\"\n\
         fps = 30\nfeedback_format = \"{format}\"\n",
        s(0.4),
        s(0.6),
        s(0.8)
    );
    Scenario::parse(&text, Format::Toml, "rmcat-5.1-short.toml", std::path::Path::new(".")).unwrap()
}

/// Mean of `series` (kbit/s per bin) over [from, to) seconds.
fn mean_kbps(bins: &[f64], bin_s: f64, from: f64, to: f64) -> f64 {
    let (a, b) = ((from / bin_s) as usize, ((to / bin_s) as usize).min(bins.len()));
    bins[a..b].iter().sum::<f64>() / (b - a).max(1) as f64
}

fn run(cc: &str, format: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let sc = scenario(cc, format);
    let receiver_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let relay = Relay::bind(
        sc.clone(),
        RelayConfig::new("127.0.0.1:0".parse().unwrap(), receiver_sock.local_addr().unwrap()),
    )
    .unwrap();
    let listen = relay.listen_addr();
    let relay_thread = std::thread::spawn(move || relay.run(|| false).unwrap());
    let rsc = sc.clone();
    let receiver =
        std::thread::spawn(move || run_receiver(&rsc, None, &receiver_sock, None, || false).unwrap());
    let sender_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sent = run_sender(&sc, None, &sender_sock, listen, None, || false).unwrap();
    let got = receiver.join().unwrap();
    let relay = relay_thread.join().unwrap();

    let sim = Simulation::new(sc).run();
    let bin_s = 0.2;
    let send_bins: Vec<f64> =
        sent.metrics.bins.iter().map(|b| b.tx_bytes as f64 * 8.0 / bin_s / 1e3).collect();
    let sim_send = match &sim.flow_series.columns[2].1 {
        lowlat_sim::Column::F64(v) => v.clone(),
        _ => unreachable!("send_kbps is numeric"),
    };
    let phases = [(0.0, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0)];
    let emu_rates: Vec<f64> =
        phases.iter().map(|&(a, b)| mean_kbps(&send_bins, bin_s, SECONDS * a + 1.0, SECONDS * b)).collect();
    let sim_rates: Vec<f64> =
        phases.iter().map(|&(a, b)| mean_kbps(&sim_send, bin_s, SECONDS * a + 1.0, SECONDS * b)).collect();
    let q95 = relay.result.summary.links[0].queue_delay_ms.p95.unwrap();
    let sim_q95 = sim.summary.links[0].queue_delay_ms.p95.unwrap();
    let frames = got.media.frames.len();
    eprintln!(
        "{cc}/{format}: send kbit/s per phase emulated {emu_rates:.0?} simulated {sim_rates:.0?}; queue p95 emulated \
         {q95:.1} simulated {sim_q95:.1} ms; frames {frames} of {}; rtt samples {}; feedback sent {} malformed {}/{}",
        sent.media.frames_sent,
        sent.media.rtt.len(),
        got.feedback_sent,
        got.malformed,
        sent.malformed_feedback
    );
    assert_eq!(sent.cc, cc);
    assert_eq!((got.malformed, sent.malformed_feedback), (0, 0), "every datagram decodes");
    assert!(sent.media.rtt.len() > 50, "the controller got the receiver's feedback");
    assert!(frames as f64 > 0.8 * sent.media.frames_sent as f64, "frames complete at the receiver");
    // The rate follows the steps: higher with 2.5 Mbit/s than with 0.6, which it does not exceed by much.
    assert!(emu_rates[1] > emu_rates[2], "rate per phase {emu_rates:?}");
    assert!(emu_rates[2] < 900.0, "rate over 0.6 Mbit/s: {emu_rates:?}");
    assert!(q95 < 100.0 || q95 < sim_q95 * 1.25 + 5.0, "queueing delay P95 {q95} ms (simulated {sim_q95})");
}

#[test]
fn gcc_with_transport_cc_through_the_relay() {
    run("gcc", "transport-cc");
}

#[test]
fn nada_with_rfc8888_through_the_relay() {
    run("nada", "rfc8888");
}

#[test]
fn zhuge_writes_real_feedback_for_real_rtp() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let sc = scenario_with("gcc", "transport-cc", "assist = \"zhuge\"");
    let receiver_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut cfg = RelayConfig::new("127.0.0.1:0".parse().unwrap(), receiver_sock.local_addr().unwrap());
    cfg.duration = Some(lowlat_core::Duration::from_secs_f64(4.0));
    let relay = Relay::bind(sc.clone(), cfg).unwrap();
    let listen = relay.listen_addr();
    let relay_thread = std::thread::spawn(move || relay.run(|| false).unwrap());
    let rsc = sc.clone();
    let d = Some(lowlat_core::Duration::from_secs_f64(3.8));
    let receiver = std::thread::spawn(move || run_receiver(&rsc, None, &receiver_sock, d, || false).unwrap());
    let sender_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sent = run_sender(&sc, None, &sender_sock, listen, d, || false).unwrap();
    let got = receiver.join().unwrap();
    let relay = relay_thread.join().unwrap();
    let assist = relay.result.summary.assist.clone().expect("zhuge summary");
    let c = relay.counters;
    eprintln!(
        "zhuge: {c:?}; {assist:?}; rtt samples {}; frames {} of {}",
        sent.media.rtt.len(),
        got.media.frames.len(),
        sent.media.frames_sent
    );
    // The receiver's feedback never reaches the sender: the AP drops it and writes its own.
    assert_eq!(c.forwarded[1], 0);
    assert!(
        assist.dropped_client_feedback + c.in_flight[1] + 2 >= got.feedback_sent && got.feedback_sent > 10
    );
    assert!(c.assist_feedback > 10, "the AP wrote feedback");
    assert_eq!(
        (c.malformed[0], sent.malformed_feedback),
        (0, 0),
        "RTP parsed at the AP, its RTCP at the sender"
    );
    assert!(sent.media.rtt.len() as u64 >= c.assist_feedback / 2, "the controller used the AP's reports");
    assert!(assist.predictions > 100 && got.media.frames.len() > 60);
}
