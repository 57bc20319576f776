//! Zhuge at a Wi-Fi access point: what the feedback carries, what happens to ACKs, and the
//! paper's headline behaviours on the ABW-drop scenario.

mod common;
use common::{run, scenario, series};
use lowlat_core::{Bytes, Duration, Packet, Time};
use lowlat_sim::app::{AssistFeedback, Endpoint, Transmit};
use lowlat_sim::media::{mailbox, RtpReceiver};
use lowlat_sim::{Column, Simulation};
use std::sync::{Arc, Mutex};

/// A Wi-Fi AP (1 ms hop) behind a 19 ms wired path; the capacity drops from 30 to `30 / k`
/// Mbit/s at 20 s; one flow of `kind`/`cc` whose encoder may reach 8 Mbit/s.
fn ap_scenario(assist: &str, k: f64, flows: &str, seconds: u32) -> String {
    format!(
        r#"
duration = "{seconds} s"
seed = 3
[bottleneck]
schedule = [ {{ at = "0 s", rate = "30 Mbit/s" }}, {{ at = "20 s", rate = "{} Mbit/s" }} ]
delay = "1 ms"
wifi = {{}}
queue = {{ kind = "droptail", limit = "1000 packets" }}
assist = "{assist}"
[reverse]
rate = "30 Mbit/s"
delay = "1 ms"
{flows}
"#,
        30.0 / k
    )
}

fn video(id: &str, cc: &str) -> String {
    format!(
        r#"
[[flows]]
id = "{id}"
kind = "rtp-video"
cc = "{cc}"
fps = 24
rmin = "300 kbit/s"
rmax = "8 Mbit/s"
access = {{ delay = "19 ms" }}
"#
    )
}

/// What a test sender saw: the client's own feedback packets and the AP's reports.
#[derive(Debug, Default)]
struct Seen {
    client_feedback: u64,
    reports: Vec<(u64, Option<Time>)>,
    /// `(ack seq, one-way delay)` of each feedback packet, in arrival order.
    acks: Vec<(u64, Duration)>,
}

/// Sends a 1200-byte packet every `gap`, in bursts of `burst`, and records what comes back.
#[derive(Debug)]
struct ProbeSender {
    next: Time,
    gap: Duration,
    burst: u32,
    seq: u64,
    seen: Arc<Mutex<Seen>>,
}

impl Endpoint for ProbeSender {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        let mut s = self.seen.lock().unwrap();
        s.client_feedback += 1;
        s.acks.push((pkt.seq, now - pkt.sent_at));
    }
    fn handle_assist(&mut self, _now: Time, feedback: &AssistFeedback) {
        if let AssistFeedback::Report { arrivals, .. } = feedback {
            self.seen.lock().unwrap().reports.extend_from_slice(arrivals);
        }
    }
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        if now < self.next {
            return None;
        }
        let seq = self.seq;
        self.seq += 1;
        if self.seq.is_multiple_of(self.burst as u64) {
            self.next = now + self.gap;
        }
        // The padding word: the receiver only records it for feedback.
        Some(Transmit { size: Bytes(1200), seq, app: u64::MAX, ecn: 0 })
    }
    fn poll_timeout(&self) -> Option<Time> {
        Some(self.next)
    }
}

/// Acknowledges every data packet at once with a 50-byte ACK numbered in order.
#[derive(Debug, Default)]
struct EchoReceiver {
    due: u64,
    sent: u64,
}

impl Endpoint for EchoReceiver {
    fn handle_packet(&mut self, _now: Time, _pkt: &Packet) {
        self.due += 1;
    }
    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        (self.sent < self.due).then(|| {
            self.sent += 1;
            Transmit { size: Bytes(50), seq: self.sent - 1, app: self.sent - 1, ecn: 0 }
        })
    }
}

fn column<'a>(t: &'a lowlat_sim::Table, name: &str) -> &'a Column {
    &t.columns.iter().find(|c| c.0 == name).unwrap_or_else(|| panic!("no column {name}")).1
}

#[test]
fn in_band_feedback_carries_the_aps_predictions_and_the_clients_never_arrives() {
    // Per-packet reports (the paper's): every reported arrival is the logged prediction.
    let text = ap_scenario("zhuge", 10.0, &video("video", "gcc"), 30)
        .replace("assist = \"zhuge\"", "assist = \"zhuge\"\nzhuge = { in_band = \"per-packet\" }");
    let sc = scenario(&text);
    let media = sc.flows[0].media.clone().expect("a video flow");
    let mut sim = Simulation::new(sc);
    let seen = Arc::new(Mutex::new(Seen::default()));
    // 4.8 Mbit/s in bursts of 4: above the 3 Mbit/s after the drop, so a queue builds.
    let sender =
        ProbeSender { next: Time::ZERO, gap: Duration::from_millis(8), burst: 4, seq: 0, seen: seen.clone() };
    let receiver = RtpReceiver::new(&media, Time::ZERO, mailbox());
    sim.set_endpoints("video", Box::new(sender), Box::new(receiver)).unwrap();
    let r = sim.run();
    let seen = seen.lock().unwrap();
    let assist = r.summary.assist.as_ref().expect("Zhuge ran");
    assert_eq!(seen.client_feedback, 0, "the client's transport-cc reached the sender");
    assert!(
        assist.dropped_client_feedback > 200,
        "{} client reports dropped",
        assist.dropped_client_feedback
    );
    // Every packet the AP saw arrive is in the predictions table; its report says when.
    let (Column::F64(seq), Column::F64(arr), Column::F64(pred), Column::F64(actual)) = (
        column(&r.predictions, "seq"),
        column(&r.predictions, "arrival_s"),
        column(&r.predictions, "predicted_ms"),
        column(&r.predictions, "actual_ms"),
    ) else {
        panic!("numeric columns")
    };
    // Reported arrivals are the predictions kept in queue order: the running maximum in sequence
    // order (a FIFO delivers in order).
    let mut by_seq: Vec<(u64, f64)> =
        seq.iter().zip(arr.iter().zip(pred)).map(|(s, (a, p))| (*s as u64, a * 1e3 + p)).collect();
    by_seq.sort_by_key(|x| x.0);
    let mut latest = f64::MIN;
    let mut raised = 0;
    let predicted: std::collections::HashMap<u64, (f64, f64)> = by_seq
        .into_iter()
        .map(|(s, at)| {
            raised += usize::from(at < latest);
            latest = latest.max(at);
            (s, (at, latest))
        })
        .collect();
    let last_logged = predicted.keys().max().copied().unwrap_or(0);
    let (mut compared, mut exact) = (0, 0);
    for (s, at) in &seen.reports {
        let Some(at) = at else { continue };
        let Some(&(own, running)) = predicted.get(s) else {
            // Only packets still queued when the run ended have no logged delay yet.
            assert!(*s > last_logged, "seq {s} was reported but never logged");
            continue;
        };
        // transport-cc carries 250 us ticks, each rounded from the running rounded time.
        let at_us = at.as_nanos() as f64 / 1e3;
        assert!(at_us >= own * 1e3 - 126.0, "seq {s}: reported {at}, before its prediction {own:.3} ms");
        // Later than the running maximum only behind a packet the queue then dropped (its
        // prediction counted when it arrived; it has no logged delay).
        exact += usize::from((at_us - running * 1e3).abs() <= 126.0);
        compared += 1;
    }
    assert!(compared > 5_000, "{compared} compared");
    assert!(exact * 100 >= compared * 95, "{exact} of {compared} reported at the running prediction");
    assert!(raised > 0, "no prediction ran backwards: the in-order rule was not exercised");
    // The queue built: some predictions are tens of ms, so equality is not trivially about zeros.
    let big = pred.iter().filter(|p| **p > 20.0).count();
    let queued = actual.iter().filter(|a| **a > 20.0).count();
    assert!(big > 100 && queued > 100, "{big} predictions and {queued} actual delays above 20 ms");
}

#[test]
fn acks_are_held_in_order_and_never_longer_than_the_cap() {
    // A bulk-kind flow (ack-clocked: out-of-band) with a probe sender that overloads the AP in
    // bursts, and a receiver that acknowledges every packet.
    let text = ap_scenario(
        "zhuge",
        10.0,
        "[[flows]]\nid = \"bulk\"\nkind = \"bulk\"\ncc = \"copa\"\naccess = { delay = \"19 ms\" }\n",
        30,
    );
    // A fast uplink, so that a burst of ACKs queues for microseconds only.
    let text = text.replace("rate = \"30 Mbit/s\"\ndelay", "rate = \"1 Gbit/s\"\ndelay");
    let mut sim = Simulation::new(scenario(&text));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let sender = ProbeSender {
        next: Time::ZERO,
        gap: Duration::from_millis(20),
        burst: 12,
        seq: 0,
        seen: seen.clone(),
    };
    sim.set_endpoints("bulk", Box::new(sender), Box::<EchoReceiver>::default()).unwrap();
    sim.run();
    let seen = seen.lock().unwrap();
    assert!(seen.acks.len() > 10_000, "{} ACKs", seen.acks.len());
    assert!(seen.acks.windows(2).all(|w| w[1].0 == w[0].0 + 1), "ACKs were reordered or lost");
    // Reverse path: 1 ms uplink + 19 ms wired, 50-byte ACKs serialise in well under 0.1 ms.
    let base = Duration::from_millis(20);
    let held: Vec<Duration> =
        seen.acks.iter().map(|a| if a.1 > base { a.1 - base } else { Duration::ZERO }).collect();
    let max = held.iter().max().copied().unwrap();
    assert!(max <= Duration::from_millis(10) + Duration::from_micros(100), "an ACK was held {max}");
    let delayed = held.iter().filter(|h| **h > Duration::from_millis(1)).count();
    assert!(delayed > held.len() / 100, "only {delayed} of {} ACKs held over 1 ms", held.len());
}

/// Seconds in the 20 s after the drop during which the network RTT (200 ms bins of one-way delay
/// plus the 20 ms reverse path) exceeds 200 ms.
fn seconds_over_200ms(r: &lowlat_sim::RunResult, flow: &str) -> f64 {
    let owd = series(&r.flow_series, flow, "owd_ms");
    owd.iter().filter(|(t, d)| *t >= 20.0 && *t < 40.0 && *d + 20.0 > 200.0).count() as f64 * 0.2
}

#[test]
fn abw_drop_k10_zhuge_halves_the_time_gcc_spends_above_200ms() {
    let fifo = run(&ap_scenario("none", 10.0, &video("video", "gcc"), 40));
    let zhuge = run(&ap_scenario("zhuge", 10.0, &video("video", "gcc"), 40));
    let (a, b) = (seconds_over_200ms(&fifo, "video"), seconds_over_200ms(&zhuge, "video"));
    eprintln!("RTT > 200 ms after the drop: GCC+FIFO {a:.1} s, GCC+Zhuge {b:.1} s");
    assert!(a >= 1.0, "the drop should hurt GCC+FIFO ({a} s)");
    assert!(b <= a / 2.0, "GCC+Zhuge {b} s vs GCC+FIFO {a} s");
}

#[test]
fn two_gcc_flows_share_a_zhuge_ap_no_less_fairly_than_a_fifo_one() {
    // The paper: fairness unchanged. Relative rate difference over 150-300 s, four seeds.
    let diff = |assist: &str, seed: u32| {
        let mut text = ap_scenario(assist, 5.0, &(video("a", "gcc") + &video("b", "gcc")), 300);
        text = text.replace("seed = 3", &format!("seed = {seed}"));
        let r = run(&text);
        let a = common::mean_between(&series(&r.flow_series, "a", "recv_kbps"), 150.0, 300.0);
        let b = common::mean_between(&series(&r.flow_series, "b", "recv_kbps"), 150.0, 300.0);
        (a - b).abs() / a.max(b)
    };
    let fifo: Vec<f64> = (1..=4).map(|s| diff("none", s)).collect();
    let zhuge: Vec<f64> = (1..=4).map(|s| diff("zhuge", s)).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    eprintln!(
        "relative rate difference: FIFO {fifo:.3?} (mean {:.3}), Zhuge {zhuge:.3?} (mean {:.3})",
        mean(&fifo),
        mean(&zhuge)
    );
    assert!(mean(&zhuge) <= mean(&fifo) + 0.02, "Zhuge {zhuge:?} vs FIFO {fifo:?}");
    assert!(mean(&zhuge) < 0.25, "Zhuge {zhuge:?}");
}

#[test]
fn nacks_pass_in_band_zhuge_and_retransmissions_are_reported_like_media() {
    // 1 % random loss at the AP: the client's NACKs must reach the sender though the AP drops
    // its congestion-control feedback, and the retransmissions' arrivals come back in the AP's
    // reports (the controller keeps running, frames are repaired).
    let run_with = |nack: bool| {
        let text = ap_scenario("zhuge", 1.0, &format!("{}nack = {nack}\n", video("video", "gcc")), 10)
            .replace("wifi = {}", "wifi = {}\nloss = { kind = \"bernoulli\", p = 0.01 }");
        run(&text)
    };
    let (off, on) = (run_with(false), run_with(true));
    let (fo, fn_) = (&off.summary.flows[0], &on.summary.flows[0]);
    assert!(on.summary.assist.as_ref().unwrap().dropped_client_feedback > 50);
    let (rtx, rec) = (fn_.retransmissions.unwrap(), fn_.recovered.unwrap());
    assert!(rtx > 10 && rec > 10, "{rtx} retransmissions, {rec} recovered");
    let late = |f: &lowlat_sim::results::FlowSummary| f.ratio_frame_delay_over_400ms.unwrap();
    assert!(late(fn_) < late(fo), "late frames {} with NACK, {} without", late(fn_), late(fo));
    assert!(fn_.throughput_kbps > 1000.0, "{} kbit/s", fn_.throughput_kbps);
}

#[test]
fn timeout_repair_acks_pass_in_band_zhuge_and_their_rtt_includes_the_downlink_queue() {
    // The artifact's repair under in-band Zhuge: the client's per-packet ACKs reach the sender
    // though the AP drops its congestion feedback, so the sender's RTT samples (the ACKs') see
    // the queue after the drop, where the AP's reports (the samples with NACK repair) skip it.
    let run_with = |repair: &str| {
        let text =
            ap_scenario("zhuge", 10.0, &format!("{}repair = \"{repair}\"\n", video("video", "gcc")), 30)
                .replace("wifi = {}", "wifi = {}\nloss = { kind = \"bernoulli\", p = 0.01 }");
        run(&text)
    };
    let (nack, timeout) = (run_with("nack"), run_with("timeout"));
    let f = &timeout.summary.flows[0];
    assert!(timeout.summary.assist.as_ref().unwrap().dropped_client_feedback > 50);
    let (rtx, rec) = (f.retransmissions.unwrap(), f.recovered.unwrap());
    assert!(rtx > 10 && rec > 10, "{rtx} retransmissions, {rec} recovered");
    let max_after = |r: &lowlat_sim::RunResult| {
        common::series(&r.sender_rtt, "video", "rtt_ms")
            .iter()
            .filter(|x| x.0 >= 20.0)
            .map(|x| x.1)
            .fold(0.0, f64::max)
    };
    let acks = common::series(&timeout.sender_rtt, "video", "rtt_ms");
    assert!(
        acks.len() as u64 > f.packets_sent / 2,
        "one sample per ACK: {} for {} packets",
        acks.len(),
        f.packets_sent
    );
    assert!(acks.iter().all(|x| x.1 >= 40.0), "every ACK RTT at least the 40 ms base RTT");
    let (m_nack, m_timeout) = (max_after(&nack), max_after(&timeout));
    assert!(
        m_timeout > 2.0 * m_nack && m_timeout > 100.0,
        "largest RTT after the drop: ACKs {m_timeout} ms, AP reports {m_nack} ms"
    );
}

/// One GCC video flow under `lowlat reproduce zhuge`'s conditions (68 ms base RTT: 9 ms access,
/// 25 ms last hop each way; GCC+FIFO over a 350-packet drop-tail queue, GCC+Zhuge over CoDel
/// with the 1-packet device FIFO the artifact's Zhuge leaves; 500 kbit/s to 100 Mbit/s, 25 fps,
/// 1460 B packets, the artifact's timeout repair, GCC's pacing) over the capacity `steps`
/// (`(at s, Mbit/s)`).
fn repro_scenario(zhuge: bool, steps: &[(f64, f64)], seconds: u32) -> String {
    let schedule: Vec<String> =
        steps.iter().map(|(at, r)| format!("{{ at = \"{at} s\", rate = \"{r} Mbit/s\" }}")).collect();
    let (queue, assist) = if zhuge {
        (r#"{ kind = "codel", limit = "10240 packets", device_limit = "1 packet" }"#, "zhuge")
    } else {
        (r#"{ kind = "droptail", limit = "350 packets" }"#, "none")
    };
    format!(
        r#"
duration = "{seconds} s"
seed = 1
[bottleneck]
schedule = [ {} ]
delay = "25 ms"
queue = {queue}
assist = "{assist}"
[reverse]
rate = "300 Mbit/s"
delay = "25 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "gcc"
fps = 25
rmin = "500 kbit/s"
rmax = "100 Mbit/s"
packet_size = "1460 B"
access = {{ delay = "9 ms" }}
repair = "timeout"
"#,
        schedule.join(", ")
    )
}

/// Mean receive rate (kbit/s) of GCC+FIFO and GCC+Zhuge over `[from, to)` s.
fn fifo_and_zhuge_kbps(steps: &[(f64, f64)], seconds: u32, from: f64, to: f64) -> (f64, f64) {
    let rate = |zhuge| {
        let r = run(&repro_scenario(zhuge, steps, seconds));
        common::mean_between(&series(&r.flow_series, "video", "recv_kbps"), from, to)
    };
    (rate(false), rate(true))
}

#[test]
fn gcc_zhuge_reaches_gcc_fifos_rate_on_a_constant_link() {
    // 80 Mbit/s: both ramp up alike. 12 Mbit/s: both over-use during the start-up probes;
    // GCC+Zhuge's cut (0.85 x an acknowledged rate measured before its window filled) leaves a
    // link-capacity estimate near 7.7 Mbit/s, from which AIMD adds ~40 kbit/s per second until its
    // acknowledged rate leaves the estimate's band (~25 s), where GCC+FIFO's leaves it at once (its
    // queue drains at the link rate): compared after that.
    for (mbps, seconds, from) in [(80.0, 30, 20.0), (12.0, 40, 30.0)] {
        let (fifo, zhuge) = fifo_and_zhuge_kbps(&[(0.0, mbps)], seconds, from, f64::from(seconds));
        eprintln!(
            "{mbps} Mbit/s, {from}-{seconds} s: GCC+FIFO {fifo:.0} kbit/s, GCC+Zhuge {zhuge:.0} kbit/s"
        );
        assert!(fifo > 0.6 * mbps * 1e3, "GCC+FIFO {fifo} kbit/s on {mbps} Mbit/s");
        assert!(zhuge >= 0.9 * fifo, "GCC+Zhuge {zhuge} kbit/s vs GCC+FIFO {fifo} kbit/s on {mbps} Mbit/s");
    }
}

#[test]
#[ignore = "issue 11, open: GCC+Zhuge loses throughput on short capacity dips (zhuge.py module doc)"]
fn gcc_zhuge_keeps_gcc_fifos_rate_through_200_ms_capacity_dips() {
    // 40 Mbit/s with a 200 ms dip to 2 Mbit/s every 5 s: one trace line of the W1/W2/C traces'
    // kind (rest-wifi_0 has 21 isolated lines under a quarter of both neighbours in 1452). The AP
    // predicts each packet queued in a dip at the dip's rate, so GCC's acknowledged rate (from
    // the predicted arrivals) falls to it and AIMD cuts to 0.85 x that, with its link-capacity
    // estimate; a receiver reports the dip after it ended, with the burst that followed.
    let mut steps = vec![(0.0, 40.0)];
    for k in 1..8 {
        let at = 5.0 * f64::from(k);
        steps.extend([(at, 2.0), (at + 0.2, 40.0)]);
    }
    let (fifo, zhuge) = fifo_and_zhuge_kbps(&steps, 40, 10.0, 40.0);
    eprintln!("10-40 s: GCC+FIFO {fifo:.0} kbit/s, GCC+Zhuge {zhuge:.0} kbit/s");
    assert!(zhuge >= 0.9 * fifo, "GCC+Zhuge {zhuge} kbit/s vs GCC+FIFO {fifo} kbit/s");
}

/// An in-band GCC flow and an out-of-band Copa flow whose ACKs the AP holds, across a tenfold
/// drop at 20 s (24 s).
fn gcc_and_copa_at_ap() -> String {
    let copa = r#"
[[flows]]
id = "copa"
kind = "rtp-video"
cc = "copa"
fps = 24
rmin = "300 kbit/s"
rmax = "8 Mbit/s"
access = { delay = "19 ms" }
"#;
    ap_scenario("zhuge", 10.0, &format!("{}{copa}", video("gcc", "gcc")), 24)
}

/// A run's `summary.json` but its wall time.
fn summary_body(r: &lowlat_sim::RunResult) -> Vec<String> {
    r.summary_json().lines().filter(|l| !l.starts_with("  \"wall_s\":")).map(str::to_owned).collect()
}

#[test]
fn a_run_that_plans_the_link_statistics_out_has_no_link_lines_and_the_same_flows() {
    // A Wi-Fi AP whose queue builds after a tenfold drop, Zhuge acting for two flows: the
    // counts the links skip are there to skip.
    let toml = gcc_and_copa_at_ap();
    let kept = Simulation::new(scenario(&toml)).run();
    let mut sim = Simulation::new(scenario(&toml));
    sim.plan_tables(lowlat_sim::Tables { links: false, ..lowlat_sim::Tables::default() }).unwrap();
    let planned = sim.run();
    assert!(kept
        .summary
        .links
        .iter()
        .any(|l| l.utilization > 0.0 && l.queue_delay_ms.p99.unwrap_or(0.0) > 0.0));
    assert!(!kept.link_series.columns.is_empty());
    assert!(planned.summary.links.is_empty() && planned.link_series.columns.is_empty());
    assert!(!planned.summary.link_stats && kept.summary.link_stats);
    assert!(
        planned.summary_json().contains("\"link_stats\": false")
            && !kept.summary_json().contains("link_stats")
    );
    assert_eq!(format!("{:?}", kept.summary.flows), format!("{:?}", planned.summary.flows));
    assert_eq!(kept.summary.events, planned.summary.events);
    for (a, b) in [(&kept.flow_series, &planned.flow_series), (&kept.frames, &planned.frames)] {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
    // Kept at planning but asked to leave out at the end: the lines are dropped, not half-made.
    let dropped = Simulation::new(scenario(&toml))
        .finish_with(lowlat_sim::Tables { links: false, ..lowlat_sim::Tables::default() });
    assert!(dropped.summary.links.is_empty());
}

#[test]
fn a_run_that_plans_a_prediction_sample_keeps_that_many_of_the_logged_rows_and_the_same_results() {
    let toml = ap_scenario("zhuge", 10.0, &video("gcc", "gcc"), 24);
    let logged = Simulation::new(scenario(&toml)).run();
    let mut sim = Simulation::new(scenario(&toml));
    let tables = lowlat_sim::Tables { prediction_sample: Some(500), ..lowlat_sim::Tables::default() };
    sim.plan_tables(tables).unwrap();
    let sampled = sim.run();
    assert_eq!(
        summary_body(&logged),
        summary_body(&sampled),
        "the summary (prediction figures included) is the same"
    );
    let rows = |r: &lowlat_sim::RunResult| -> Vec<(u64, u64, u64, u64)> {
        let col = |name: &str| match &r.predictions.columns.iter().find(|c| c.0 == name).unwrap().1 {
            lowlat_sim::Column::F64(v) => v.clone(),
            other => panic!("{name}: {other:?}"),
        };
        let (seq, at, p, a) = (col("seq"), col("arrival_s"), col("predicted_ms"), col("actual_ms"));
        (0..seq.len()).map(|i| (at[i].to_bits(), seq[i].to_bits(), p[i].to_bits(), a[i].to_bits())).collect()
    };
    let (all, some) = (rows(&logged), rows(&sampled));
    assert!(all.len() > 5_000, "{}", all.len());
    assert_eq!(some.len(), 500);
    assert!(some.windows(2).all(|w| f64::from_bits(w[0].0) <= f64::from_bits(w[1].0)), "in arrival order");
    let logged_rows: std::collections::HashSet<_> = all.iter().collect();
    assert!(some.iter().all(|r| logged_rows.contains(r)), "each one a logged prediction");
    let late = some.iter().filter(|r| f64::from_bits(r.0) > 12.0).count();
    assert!(late > 100, "drawn from the whole run, not its start: {late} of 500 after 12 s");
    assert_eq!(format!("{:?}", logged.flow_series), format!("{:?}", sampled.flow_series));
}

#[test]
fn a_run_that_plans_the_prediction_table_out_keeps_no_log_and_the_same_results() {
    let toml = gcc_and_copa_at_ap();
    let logged = Simulation::new(scenario(&toml)).run();
    let mut sim = Simulation::new(scenario(&toml));
    sim.plan_tables(lowlat_sim::Tables { predictions: false, ..lowlat_sim::Tables::default() }).unwrap();
    let planned = sim.run();
    assert_eq!(
        summary_body(&logged),
        summary_body(&planned),
        "the summary (prediction figures included) is the same"
    );
    let rows = |r: &lowlat_sim::RunResult| r.predictions.columns.first().map_or(0, |c| c.1.len());
    assert!(rows(&logged) > 10_000, "the log holds a prediction per packet: {}", rows(&logged));
    assert_eq!(rows(&planned), 0, "nothing logged");
    assert_eq!(logged.summary.assist.as_ref().map(|a| a.predictions), Some(rows(&logged) as u64));
    for (a, b) in [(&logged.flow_series, &planned.flow_series), (&logged.frames, &planned.frames)] {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
    // Only before the run starts.
    let mut sim = Simulation::new(scenario(&toml));
    sim.advance(Time::from_millis(10));
    assert!(sim.plan_tables(lowlat_sim::Tables::default()).is_err());
}
