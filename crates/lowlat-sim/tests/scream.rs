//! SCReAM v2 in the simulator: the defects the reference comparison found stay fixed
//! (docs/scream-differential.md).

mod common;
use common::{catalog, mean_between, run, series};
use lowlat_sim::Simulation;

/// One SCReAM v2 flow on a constant 1 Mbit/s link, 100 ms RTT, `jitter` standard deviation.
fn single(jitter_ms: u32) -> String {
    format!(
        r#"
duration = "40 s"
[bottleneck]
rate = "1 Mbit/s"
delay = "50 ms"
jitter = "{jitter_ms} ms"
queue = {{ kind = "droptail", limit = "300 ms" }}
[reverse]
rate = "1 Mbit/s"
delay = "50 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "scream2"
"#
    )
}

#[test]
fn scream2_jitter_does_not_pin_the_window_and_the_rtp_queue_stays_short() {
    // With 30 ms of jitter the old both-ways average sat above target / 2 from jitter alone: the
    // window fell to its minimum below rmin and frames waited up to the 2 s flush.
    let r = run(&single(30));
    let f = &r.summary.flows[0];
    let p99 = f.frame_delay_ms.unwrap().p99.unwrap();
    let recv = mean_between(&series(&r.flow_series, "video", "recv_kbps"), 10.0, 40.0);
    eprintln!("scream2, 1 Mbit/s, 30 ms jitter: {recv:.0} kbit/s, frame delay p99 {p99:.0} ms");
    // The reference gets about 240 kbit/s here too (jitter limits growth); lowlat's earlier
    // version sat at the 150 kbit/s floor.
    assert!(recv > 170.0, "rate {recv}");
    assert!(p99 < 800.0, "frame delay p99 {p99}");
}

#[test]
fn scream2_uses_a_steady_1_mbps_link_like_the_reference() {
    // The C++ reference delivers 947-954 kbit/s here (scripts/scream_diff.py); lowlat's earlier
    // version 763-779.
    let r = run(&single(5));
    let recv = mean_between(&series(&r.flow_series, "video", "recv_kbps"), 15.0, 40.0);
    eprintln!("scream2, 1 Mbit/s, 5 ms jitter: {recv:.0} kbit/s");
    assert!(recv > 850.0 && recv <= 1000.0, "rate {recv}");
}

#[test]
fn scream2_keeps_above_its_minimum_rate_against_a_long_tcp_flow() {
    // RMCAT 5.6: before, the standing queue drove the window to its minimum (~86 kbit/s).
    let r = Simulation::new(catalog("rmcat-5.6").with_cc("scream2").unwrap()).run();
    let recv = mean_between(&series(&r.flow_series, "video1", "recv_kbps"), 20.0, 110.0);
    eprintln!("scream2 against CUBIC (5.6): {recv:.0} kbit/s during the TCP flow");
    assert!(recv > 150.0, "rate {recv}");
}

/// SCReAM v2 on the reference's L4S claim path: 10 Mbit/s, 25 ms RTT, with `queue` and the
/// flow's extra keys `flow`, RFC 8888 feedback.
fn l4s_path(queue: &str, flow: &str) -> String {
    format!(
        r#"
duration = "10 s"
[bottleneck]
rate = "10 Mbit/s"
delay = "12.5 ms"
queue = {queue}
[reverse]
rate = "10 Mbit/s"
delay = "12.5 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "scream2"
rmin = "300 kbit/s"
rmax = "15 Mbit/s"
feedback_format = "rfc8888"
{flow}
"#
    )
}

#[test]
fn scream2_in_l4s_mode_keeps_a_sub_millisecond_queue_at_a_rate_near_drop_tails() {
    let l4s = run(&l4s_path(
        r#"{ kind = "l4s", threshold = "1 ms", limit = "300 ms" }"#,
        "ecn = \"ect1\"\ncc_params = { scream2 = { l4s = true } }",
    ));
    let classic = run(&l4s_path(r#"{ kind = "droptail", limit = "300 ms" }"#, ""));
    let figures = |r: &lowlat_sim::RunResult| {
        let recv = series(&r.flow_series, "video", "recv_kbps");
        let q = series(&r.link_series, "bottleneck", "queue_delay_ms");
        (mean_between(&recv, 1.0, 2.0), mean_between(&recv, 2.0, 10.0), mean_between(&q, 2.0, 10.0))
    };
    let (l_first, l_rate, l_q) = figures(&l4s);
    let (_, c_rate, c_q) = figures(&classic);
    let marks = l4s.summary.links.iter().find(|l| l.id == "bottleneck").unwrap().ecn_marks;
    eprintln!(
        "scream2 10 Mbit/s 25 ms: L4S {l_rate:.0} kbit/s (1-2 s: {l_first:.0}), queue {l_q:.2} ms, {marks} marks; \
         drop-tail {c_rate:.0} kbit/s, queue {c_q:.2} ms"
    );
    assert!(marks > 0 && l4s.summary.flows[0].ce_reported.unwrap() > 0);
    // The reference's promise: single-digit-millisecond queueing in steady state (here below 2).
    assert!(l_q < 2.0, "L4S queue {l_q} ms");
    // Most of the capacity within the first two seconds and after. With the sender's 5 ms token
    // bucket the bursts at each frame were marked and held it near 3 Mbit/s.
    assert!(l_first > 5000.0 && l_rate > 6000.0, "L4S rate {l_first} / {l_rate} kbit/s");
    // Against the same flow on drop-tail: a fraction of the queue at a similar rate.
    assert!(l_q * 5.0 < c_q, "queue {l_q} vs {c_q} ms");
    assert!(l_rate > 0.7 * c_rate, "rate {l_rate} vs {c_rate} kbit/s");
}

#[test]
fn the_l4s_catalog_scenario_runs_scream2_in_l4s_mode() {
    // Without `l4s = true` SCReAM v2 ignores the marks and fills the queue as on drop-tail.
    let mut sc = catalog("l4s-scream2");
    sc.duration = lowlat_core::Duration::from_secs(6);
    let r = Simulation::new(sc).run();
    let q = mean_between(&series(&r.link_series, "bottleneck", "queue_delay_ms"), 2.0, 6.0);
    let recv = mean_between(&series(&r.flow_series, "video", "recv_kbps"), 2.0, 6.0);
    eprintln!("l4s-scream2 (6 s): {recv:.0} kbit/s, queue {q:.2} ms");
    assert!(q < 2.0 && recv > 5000.0, "queue {q} ms, rate {recv} kbit/s");
}

#[test]
fn ect1_packets_from_scream2_without_l4s_are_warned_about() {
    let parse = |params: &str| {
        let text = format!(
            "{}ecn = \"ect1\"\nfeedback_format = \"rfc8888\"\n{params}\n",
            single(0).replace("duration = \"40 s\"", "duration = \"1 s\"")
        );
        lowlat_sim::Scenario::parse(&text, lowlat_sim::Format::Toml, "t.toml", std::path::Path::new("."))
            .expect("a valid scenario")
    };
    let warned = parse("");
    assert!(
        warned.warnings.iter().any(|w| w.contains("flows[0].ecn") && w.contains("ignores CE")),
        "{:?}",
        warned.warnings
    );
    assert!(parse("cc_params = { scream2 = { l4s = true } }").warnings.is_empty());
    assert!(parse("cc_params = { scream2 = { ecn = true } }").warnings.is_empty());
}
