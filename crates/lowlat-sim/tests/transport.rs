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

/// Web flow on an otherwise idle 100 Mbit/s link, 20 ms RTT.
fn web(extra: &str, seconds: u32) -> lowlat_sim::RunResult {
    run(&format!(
        r#"
duration = "{seconds} s"
[bottleneck]
rate = "100 Mbit/s"
delay = "10 ms"
[reverse]
rate = "100 Mbit/s"
delay = "10 ms"
[[flows]]
id = "web"
kind = "web"
cc = "cubic"
{extra}
"#
    ))
}

#[test]
fn web_sources_follow_the_on_off_model() {
    let secs = 300.0;
    let r = web("idle_mean = \"1 s\"", secs as u32);
    let f = &r.summary.flows[0];
    let n = f.transfers.unwrap() as f64;
    let fct = f.completion_ms.unwrap();
    let (fct_mean, fct_p50) = (fct.mean.unwrap() / 1e3, fct.p50.unwrap() / 1e3);
    // Renewal process per source: one transfer per (idle mean + completion time).
    let expected = 10.0 * secs / (1.0 + fct_mean);
    // Mean download: uniform 30-50 kB of payload, 1145 of every 1200 bytes on the wire.
    let mean_size = f.throughput_kbps * 1e3 / 8.0 * secs / n;
    eprintln!(
        "{n} transfers (renewal model {expected:.0}), completion mean {:.1} ms p50 {:.1} ms, {mean_size:.0} B each",
        fct_mean * 1e3,
        fct_p50 * 1e3
    );
    assert!((n / expected - 1.0).abs() < 0.05, "{n} transfers, expected {expected}");
    let wire = 40_000.0 * 1200.0 / 1145.0;
    assert!((mean_size / wire - 1.0).abs() < 0.05, "{mean_size} B per transfer, expected ~{wire}");
    // Each download is a new connection: slow start from the initial window (10 packets) needs
    // three round trips for 30-50 kB, where a warm window would take one.
    assert!(fct_p50 > 2.0 * 0.02 && fct_p50 < 5.0 * 0.02, "completion p50 {fct_p50} s");
}

#[test]
fn web_sources_that_start_idle_wait_for_their_idle_time() {
    // All ten start idle with a 1000 s mean: almost surely nothing in the first second.
    let r = web("sources_on = 0\nidle_mean = \"1000 s\"", 1);
    assert_eq!(r.summary.flows[0].transfers, Some(0));
    let r = web("sources_on = 10\nidle_mean = \"1000 s\"", 1);
    assert_eq!(r.summary.flows[0].transfers, Some(10));
}

#[test]
fn bad_web_keys_are_clear_errors() {
    for (extra, key, expect) in [
        ("sources = 0", "flows[0].sources", "expected 1 to 4096"),
        ("sources = 2\nsources_on = 3", "flows[0].sources_on", "at most the number of sources"),
        ("size_min = \"60 kB\"\nsize_max = \"50 kB\"", "flows[0].size_max", "at least size_min"),
        ("size = \"50 kB\"", "flows[0].size", "size_min and size_max"),
        ("idle_mean = \"0 s\"", "flows[0].idle_mean", "positive"),
    ] {
        let toml = format!(
            "duration = \"1 s\"\n[bottleneck]\nrate = \"1 Mbit/s\"\ndelay = \"1 ms\"\n[[flows]]\nid = \"w\"\nkind = \"web\"\n{extra}\n"
        );
        let e = common::scenario_error(&toml);
        assert_eq!(e.key, key, "{extra}: {e}");
        assert!(e.to_string().contains(expect), "{extra}: {e}");
    }
    let e = common::scenario_error(
        "duration = \"1 s\"\n[bottleneck]\nrate = \"1 Mbit/s\"\ndelay = \"1 ms\"\n[[flows]]\nid = \"b\"\nkind = \"bulk\"\nsources = 3\n",
    );
    assert_eq!(e.key, "flows[0].sources");
}
