//! Ack-clocked bulk flows against the analytic models: Mathis throughput of a lossy Reno flow,
//! full utilisation with a BDP of buffer.

mod common;
use common::run;

/// One NewReno bulk flow over 10 Mbit/s, 100 ms RTT, uniform loss `p`, a `buffer_ms` drop-tail.
fn reno(p: f64, buffer_ms: u32, seconds: u32) -> lowlat_sim::RunResult {
    let loss = if p > 0.0 { format!("loss = {{ kind = \"bernoulli\", p = {p} }}") } else { String::new() };
    run(&format!(
        r#"
duration = "{seconds} s"
[bottleneck]
rate = "10 Mbit/s"
delay = "50 ms"
{loss}
queue = {{ kind = "droptail", limit = "{buffer_ms} ms" }}
[reverse]
rate = "10 Mbit/s"
delay = "50 ms"
[[flows]]
id = "bulk"
kind = "bulk"
cc = "newreno"
"#
    ))
}

#[test]
fn lossy_newreno_follows_the_mathis_throughput() {
    for p in [1e-2, 1e-3, 1e-4] {
        let r = reno(p, 100, 300);
        let thr = r.summary.flows[0].throughput_kbps * 1e3;
        // MSS / RTT x 1.22 / sqrt(p), with the 1200-byte packets as segments.
        let mathis = 1200.0 * 8.0 / 0.1 * 1.22 / p.sqrt();
        eprintln!(
            "p {p}: {:.0} kbit/s, Mathis {:.0} kbit/s, ratio {:.3}",
            thr / 1e3,
            mathis / 1e3,
            thr / mathis
        );
        if mathis < 10e6 {
            assert!((thr / mathis - 1.0).abs() < 0.25, "p {p}: {thr} vs Mathis {mathis}");
        } else {
            // The bound is above capacity: the flow is capacity-limited instead.
            assert!(thr > 0.8 * 10e6, "p {p}: {thr}");
        }
    }
}

#[test]
fn newreno_fills_the_link_with_a_bdp_of_buffer() {
    let r = reno(0.0, 100, 60);
    let util = r.summary.links[0].utilization;
    assert!(util >= 0.95, "utilisation {util}");
    assert_eq!(r.summary.flows[0].cc, "newreno");
}

#[test]
fn a_sized_transfer_completes_and_stops() {
    let r = run(r#"
duration = "20 s"
[bottleneck]
rate = "10 Mbit/s"
delay = "20 ms"
loss = { kind = "bernoulli", p = 0.01 }
[[flows]]
id = "file"
kind = "bulk"
size = "1 MB"
"#);
    let f = &r.summary.flows[0];
    // 1 MB of payload in 1145-byte chunks is 874 packets; retransmissions add the lost ones.
    assert!(f.packets_received >= 874 && f.packets_received < 900, "{}", f.packets_received);
    assert!(f.packets_sent < 950);
}

#[test]
fn bulk_flows_are_deterministic_and_their_keys_are_checked() {
    let a = reno(1e-3, 100, 30);
    let b = reno(1e-3, 100, 30);
    assert_eq!(a.summary.flows, b.summary.flows);
    for (flow, needle) in [
        ("kind = \"bulk\"\ncc = \"vegas\"", "flows[0].cc: got \"vegas\", expected one of newreno"),
        (
            "kind = \"bulk\"\nrate = \"1 Mbit/s\"",
            "flows[0].rate: a bulk flow's rate is set by its controller",
        ),
        (
            "kind = \"cbr\"\nrate = \"1 Mbit/s\"\nsize = \"1 MB\"",
            "flows[0].size: only bulk flows take `size`",
        ),
        ("kind = \"bulk\"\nsize = \"0 B\"", "flows[0].size: got 0 B"),
    ] {
        let e = common::scenario_error(&format!(
            "duration = \"1 s\"\n[bottleneck]\nrate = \"1 Mbit/s\"\n[[flows]]\nid = \"f\"\n{flow}\n"
        ))
        .to_string();
        assert!(e.contains(needle), "{e}");
    }
}

/// One bulk flow with `cc` over 10 Mbit/s, 100 ms RTT, a 1 s drop-tail buffer (8 BDPs).
fn deep(cc: &str, seconds: u32) -> lowlat_sim::RunResult {
    run(&format!(
        r#"
duration = "{seconds} s"
[bottleneck]
rate = "10 Mbit/s"
delay = "50 ms"
queue = {{ kind = "droptail", limit = "1000 ms" }}
[reverse]
rate = "10 Mbit/s"
delay = "50 ms"
[[flows]]
id = "bulk"
kind = "bulk"
cc = "{cc}"
"#
    ))
}

#[test]
fn hystart_leaves_slow_start_before_the_first_loss_on_a_deep_buffer() {
    // Plain slow start doubles until the 1 s buffer overflows; HyStart++ sees the RTT rise once the
    // BDP is reached, grows conservatively for five rounds and hands over to CUBIC's curve
    // without a loss.
    let reno = deep("newreno", 8);
    let cubic = deep("cubic", 8);
    let (rl, cl) = (reno.summary.links[0].drops, cubic.summary.links[0].drops);
    let (rq, cq) = (
        reno.summary.links[0].queue_delay_ms.max.unwrap(),
        cubic.summary.links[0].queue_delay_ms.max.unwrap(),
    );
    eprintln!(
        "first 8 s: newreno {rl} drops (queue max {rq:.0} ms), cubic {cl} drops (queue max {cq:.0} ms)"
    );
    assert!(rl > 0, "slow start without HyStart++ should overflow the buffer");
    assert_eq!(cl, 0, "HyStart++ should leave slow start before any loss");
    assert!(cubic.summary.links[0].utilization > 0.8);
}

#[test]
fn cubic_fills_the_link() {
    let r = deep("cubic", 60);
    assert!(r.summary.links[0].utilization > 0.95, "{}", r.summary.links[0].utilization);
    assert_eq!(r.summary.flows[0].cc, "cubic");
}
