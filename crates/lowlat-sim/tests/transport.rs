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

/// Flows of the given controllers on a 10 Mbit/s, 40 ms RTT path with a 300 ms drop-tail.
fn dumbbell(ccs: &[(&str, &str)], seconds: u32) -> lowlat_sim::Scenario {
    dumbbell_with_buffer(ccs, seconds, 300)
}

/// The same with a drop-tail of `buffer_ms`.
fn dumbbell_with_buffer(ccs: &[(&str, &str)], seconds: u32, buffer_ms: u32) -> lowlat_sim::Scenario {
    let mut toml = format!(
        r#"
duration = "{seconds} s"
[bottleneck]
rate = "10 Mbit/s"
delay = "20 ms"
queue = {{ kind = "droptail", limit = "{buffer_ms} ms" }}
[reverse]
rate = "10 Mbit/s"
delay = "20 ms"
"#
    );
    for (id, cc) in ccs {
        toml += &format!("[[flows]]\nid = \"{id}\"\nkind = \"bulk\"\ncc = \"{cc}\"\n");
    }
    common::scenario(&toml)
}

#[test]
fn copa_fills_a_constant_link_with_little_queueing() {
    let r = lowlat_sim::Simulation::new(dumbbell(&[("copa", "copa")], 30)).run();
    let util = r.summary.links[0].utilization;
    let link = common::series(&r.link_series, "bottleneck", "queue_delay_ms");
    let mut q: Vec<f64> = link.iter().filter(|(t, _)| *t >= 5.0).map(|x| x.1).collect();
    q.sort_by(f64::total_cmp);
    let p95 = q[q.len() * 95 / 100];
    let p95_pkt = r.summary.links[0].queue_delay_ms.p95.unwrap();
    eprintln!("copa: utilisation {util:.3}, queue p95 {p95_pkt:.1} ms (per packet), {p95:.1} ms (1 s bins from 5 s)");
    assert_eq!(r.summary.flows[0].cc, "copa");
    assert!(util >= 0.85, "utilisation {util}");
    assert!(p95_pkt < 30.0, "queueing delay p95 {p95_pkt} ms");
}

#[test]
fn copa_turns_competitive_against_cubic_and_keeps_a_share() {
    // Competitive mode is AIMD on 1/delta, Copa's own standing queue in packets: +1 per RTT, like
    // Reno's window. With 1-2.5 BDP of buffer that holds a fair share; in a 7.5 BDP buffer
    // CUBIC's cubic growth outpaces it (measured 14 %: reported, and held above starvation).
    for (buffer, min_share) in [(40, 0.2), (100, 0.2), (300, 0.05)] {
        let mut sim = lowlat_sim::Simulation::new(dumbbell_with_buffer(
            &[("copa", "copa"), ("cubic", "cubic")],
            60,
            buffer,
        ));
        let mut competitive = 0;
        let mut steps = 0;
        let mut t = lowlat_core::Time::ZERO;
        while !sim.is_done() {
            t += lowlat_core::Duration::from_millis(100);
            sim.advance(t);
            if t.as_secs_f64() >= 10.0 {
                steps += 1;
                competitive += usize::from(sim.cc_mode("copa") == Some("competitive"));
            }
        }
        let r = sim.finish();
        let copa = common::mean_between(&common::series(&r.flow_series, "copa", "recv_kbps"), 10.0, 60.0);
        let cubic = common::mean_between(&common::series(&r.flow_series, "cubic", "recv_kbps"), 10.0, 60.0);
        let share = copa / (copa + cubic);
        eprintln!(
        "buffer {buffer} ms: copa vs cubic: competitive {:.0} % of the time, copa {copa:.0} kbit/s, cubic {cubic:.0} kbit/s, share {share:.2}",
        100.0 * competitive as f64 / steps as f64
    );
        assert!(
            competitive * 2 > steps,
            "buffer {buffer} ms: competitive only {competitive} of {steps} samples"
        );
        assert!(share >= min_share, "buffer {buffer} ms: copa's share {share}");
    }
}

#[test]
fn bbr_leaves_startup_soon_after_reaching_the_bottleneck_and_keeps_the_queue_short() {
    let mut sc = dumbbell(&[("bbr", "bbr")], 30);
    sc.bin = lowlat_core::Duration::from_millis(10);
    let mut sim = lowlat_sim::Simulation::new(sc);
    let mut t = lowlat_core::Time::ZERO;
    let mut startup_end = None;
    while !sim.is_done() {
        t += lowlat_core::Duration::from_millis(5);
        sim.advance(t);
        if startup_end.is_none() && sim.cc_mode("bbr") != Some("startup") {
            startup_end = Some(t.as_secs_f64());
        }
    }
    let r = sim.finish();
    let startup_end = startup_end.expect("BBR left startup");
    // The bottleneck is reached when it first delivers >= 95 % of 10 Mbit/s for a whole base RTT
    // (four 10 ms bins: the initial window's burst fills one); from there count round trips, each
    // 40 ms plus the queue startup builds, until startup ends.
    let thr = common::series(&r.link_series, "bottleneck", "throughput_kbps");
    let queue = common::series(&r.link_series, "bottleneck", "queue_delay_ms");
    let reached =
        thr.windows(4).find(|w| w.iter().all(|(_, v)| *v >= 9500.0)).expect("the link was filled")[0].0;
    let rounds: f64 = queue
        .iter()
        .filter(|(t, _)| *t >= reached && *t < startup_end)
        .map(|(_, q)| 0.01 / (0.04 + if q.is_nan() { 0.0 } else { q / 1e3 }))
        .sum();
    let link = &r.summary.links[0];
    eprintln!(
        "bbr: bottleneck reached at {reached:.2} s, left startup at {startup_end:.3} s ({rounds:.1} rounds later), \
         utilisation {:.3}, queue p95 {:.1} ms, drops {}",
        link.utilization,
        link.queue_delay_ms.p95.unwrap(),
        link.drops
    );
    // Three rounds without 25 % growth of the estimate, plus one for the estimate to catch up.
    assert!(rounds <= 4.5, "left startup {rounds} rounds after reaching the bottleneck");
    assert!(link.utilization >= 0.9, "utilisation {}", link.utilization);
    // Well under the 300 ms buffer: ProbeBW's 1.25 phase adds a quarter BDP (10 ms) at most.
    let q95 = link.queue_delay_ms.p95.unwrap();
    assert!(q95 < 60.0, "queue p95 {q95} ms");
    assert_eq!(link.drops, 0);
}

#[test]
fn a_stopped_bulk_flow_reports_no_more_than_the_link_carried() {
    // What sits in the 300 ms buffer at `stop` still arrives after it: the throughput is taken
    // over the time packets arrived, not over [start, stop] (which reported 2037 kbit/s here).
    let r = run(r#"
duration = "10 s"
[bottleneck]
rate = "2 Mbit/s"
delay = "50 ms"
queue = { kind = "droptail", limit = "300 ms" }
[reverse]
rate = "2 Mbit/s"
delay = "50 ms"
[[flows]]
id = "tcp"
kind = "bulk"
cc = "cubic"
stop = "9 s"
"#);
    let thr = r.summary.flows[0].throughput_kbps;
    assert!(thr <= 2000.0 && thr > 1800.0, "throughput {thr} kbit/s on a 2 Mbit/s link");
}
