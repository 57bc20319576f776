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
