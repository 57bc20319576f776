//! RTP video flows end to end: encoder, pacer, network, receiver, feedback, controller.

mod common;
use common::run;

#[test]
fn perfect_codec_at_a_fixed_rate_is_received_at_that_rate_with_the_path_delay() {
    let r = run(r#"
duration = "30 s"
[bottleneck]
rate = "100 Mbit/s"
delay = "50 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "fixed"
codec = "perfect"
rate = "1 Mbit/s"
rmax = "2 Mbit/s"
fps = 25
"#);
    let f = &r.summary.flows[0];
    assert_eq!((f.kind.as_str(), f.cc.as_str()), ("rtp-video", "fixed"));
    // 1 Mbit/s of payload; the wire adds 48 B of headers to each of 5 packets per 5000 B frame.
    let wire = 1e6 * (5000.0 + 5.0 * 48.0) / 5000.0 / 1e3;
    assert!(
        (f.throughput_kbps - wire).abs() < 0.01 * wire,
        "throughput {} kbit/s, expected {wire}",
        f.throughput_kbps
    );
    assert_eq!(f.loss_ratio, 0.0);
    // A 5-packet frame leaves paced at 1.5 x 1 Mbit/s, the pacer's 5 ms burst allowance (7500 bits,
    // saved up between frames) paying for part of it: its last packet starts
    // (4 x 1048 B x 8 - 7500 bits) / 1.5 Mbit/s = 17.4 ms after the first; then 50 ms of
    // propagation and 84 us of serialisation at 100 Mbit/s.
    let d = f.frame_delay_ms.unwrap();
    let expected = (4.0 * 1048.0 * 8.0 - 7500.0) / 1.5e3 + 50.0 + 1048.0 * 8.0 / 100e3;
    assert!((d.p50.unwrap() - expected).abs() < 0.05, "frame delay {:?} ms, expected {expected}", d.p50);
    assert!((d.p99.unwrap() - expected).abs() < 0.05);
    // Only the first frame finds the bucket empty (no burst allowance saved yet): 5 ms more.
    assert!((d.max.unwrap() - (expected + 5.0)).abs() < 0.05, "max {:?}", d.max);
    assert!((f.fps_mean.unwrap() - 25.0).abs() < 0.1);
    assert_eq!(f.ratio_fps_below_10, Some(0.0));
    let rtt = f.rtt_ms.p50.unwrap();
    assert!((100.0..101.0).contains(&rtt), "rtt {rtt} ms");
}

#[test]
fn nada_tracks_the_rmcat_5_1_capacity_with_low_queueing_delay() {
    let r = run(r#"
duration = "100 s"
[bottleneck]
schedule = [
  { at = "0 s", rate = "1 Mbit/s" },
  { at = "40 s", rate = "2.5 Mbit/s" },
  { at = "60 s", rate = "0.6 Mbit/s" },
  { at = "80 s", rate = "1 Mbit/s" },
]
delay = "50 ms"
queue = { kind = "droptail", limit = "300 ms" }
[[flows]]
id = "video"
kind = "rtp-video"
cc = "nada"
"#);
    let f = &r.summary.flows[0];
    let b = &r.summary.links[0];
    eprintln!(
        "NADA on 5.1: throughput {:.0} kbit/s, util {:.3}, queue p95 {:?} ms, frame delay p95 {:?}, loss {:.4}",
        f.throughput_kbps, b.utilization, b.queue_delay_ms.p95, f.frame_delay_ms.unwrap().p95, f.loss_ratio
    );
    assert_eq!(f.cc, "nada");
    // RMCAT 5.1 with NADA (issue 3): P95 queueing delay under 100 ms.
    assert!(b.queue_delay_ms.p95.unwrap() < 100.0, "queue p95 {:?} ms", b.queue_delay_ms.p95);
    assert!(b.utilization > 0.6, "utilisation {}", b.utilization);
}

#[test]
fn trace_codec_replays_frame_sizes_scaled_to_the_target() {
    let dir = std::env::temp_dir().join(format!("lowlat-trace-codec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A key frame of 10x every 10 frames: the mean frame is (9 + 10) / 10 = 1.9 units.
    let sizes: String = (0..100).map(|i| if i % 10 == 0 { "10000\n" } else { "1000\n" }).collect();
    std::fs::write(dir.join("frames.txt"), format!("# bytes per frame\n{sizes}")).unwrap();
    let text = r#"
duration = "20 s"
[bottleneck]
rate = "100 Mbit/s"
delay = "10 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "fixed"
codec = "trace"
codec_trace = "frames.txt"
rate = "1 Mbit/s"
fps = 25
"#;
    let s = lowlat_sim::Scenario::parse(text, lowlat_sim::Format::Toml, "t.toml", &dir).unwrap();
    let r = lowlat_sim::Simulation::new(s).run();
    let f = &r.summary.flows[0];
    // Payload 1 Mbit/s plus 48 B headers per packet (about 4 % here).
    assert!((1000.0..1100.0).contains(&f.throughput_kbps), "throughput {}", f.throughput_kbps);
    // Key frames are 10000 / 1900 x 5000 B = 26 kB: several times a steady frame's delay.
    let d = f.frame_delay_ms.unwrap();
    assert!(d.max.unwrap() > 3.0 * d.p50.unwrap(), "{d:?}");

    std::fs::write(dir.join("bad.txt"), "1000\nlots\n").unwrap();
    let e = lowlat_sim::Scenario::parse(
        &text.replace("frames.txt", "bad.txt"),
        lowlat_sim::Format::Toml,
        "t.toml",
        &dir,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("codec_trace") && e.contains("bad.txt: line 2") && e.contains("lots"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A video flow under window controller `cc` over the transport on a 2 Mbit/s, 50 ms RTT link.
fn transport_video(cc: &str, extra_link: &str) -> lowlat_sim::RunResult {
    run(&format!(
        r#"
duration = "60 s"
[bottleneck]
rate = "2 Mbit/s"
delay = "25 ms"
queue = {{ kind = "droptail", limit = "300 ms" }}
{extra_link}
[reverse]
rate = "2 Mbit/s"
delay = "25 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "{cc}"
rmin = "150 kbit/s"
rmax = "3 Mbit/s"
"#
    ))
}

#[test]
fn video_over_copa_and_bbr_fills_the_link_with_short_frame_delays() {
    for (cc, max_queue_ms) in [("copa", 40.0), ("bbr", 100.0)] {
        let r = transport_video(cc, "");
        let f = &r.summary.flows[0];
        let link = &r.summary.links[0];
        let frames = f.frame_delay_ms.unwrap();
        eprintln!(
            "{cc} video: {:.0} kbit/s, utilisation {:.3}, queue p95 {:.1} ms, frame delay p50 {:.0} p99 {:.0} ms, fps {:.1}",
            f.throughput_kbps,
            link.utilization,
            link.queue_delay_ms.p95.unwrap(),
            frames.p50.unwrap(),
            frames.p99.unwrap(),
            f.fps_mean.unwrap()
        );
        assert_eq!(f.cc, cc);
        assert!(link.utilization >= 0.85, "{cc}: utilisation {}", link.utilization);
        assert!(link.queue_delay_ms.p95.unwrap() < max_queue_ms, "{cc}: queue {:?}", link.queue_delay_ms.p95);
        // Frame delay = encoder queue + pacing + 25 ms one way + queueing: well under 200 ms.
        assert!(frames.p50.unwrap() < 200.0, "{cc}: frame delay p50 {:?}", frames.p50);
        assert!(f.fps_mean.unwrap() > 29.0, "{cc}: fps {:?}", f.fps_mean);
        assert!(f.rtt_ms.p50.is_some(), "RTT samples from the ACKs");
    }
}

#[test]
fn copa_variant_and_delta_from_cc_params_reach_the_controller() {
    // The Zhuge artifact's Copa (one update per half RTT from the latest RTT sample) at delta 0.5
    // also fills the link over a short queue; at delta 0.02 it tolerates a 25x longer one.
    let video = |params: &str| {
        run(&format!(
            r#"
duration = "60 s"
[bottleneck]
rate = "2 Mbit/s"
delay = "25 ms"
queue = {{ kind = "droptail", limit = "300 ms" }}
[reverse]
rate = "2 Mbit/s"
delay = "25 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "copa"
rmin = "150 kbit/s"
rmax = "3 Mbit/s"
cc_params = {{ copa = {params} }}
"#
        ))
    };
    let paper = video("{ variant = \"paper\" }");
    let artifact = video("{ variant = \"artifact\", delta = 0.5 }");
    let greedy = video("{ variant = \"artifact\", delta = 0.02 }");
    let queue = |r: &lowlat_sim::RunResult| r.summary.links[0].queue_delay_ms.p95.unwrap();
    let util = |r: &lowlat_sim::RunResult| r.summary.links[0].utilization;
    eprintln!(
        "copa paper: util {:.3} queue p95 {:.1} ms; artifact: {:.3} {:.1} ms; artifact delta 0.02: {:.3} {:.1} ms",
        util(&paper),
        queue(&paper),
        util(&artifact),
        queue(&artifact),
        util(&greedy),
        queue(&greedy)
    );
    // The default variant is the paper's: the same run as without cc_params.
    assert_eq!(
        paper.summary.flows[0].throughput_kbps,
        transport_video("copa", "").summary.flows[0].throughput_kbps
    );
    assert_ne!(artifact.summary.flows[0].throughput_kbps, paper.summary.flows[0].throughput_kbps);
    assert!(
        util(&artifact) >= 0.85 && queue(&artifact) < 40.0,
        "artifact: {} {}",
        util(&artifact),
        queue(&artifact)
    );
    assert!(
        queue(&greedy) > 2.0 * queue(&artifact),
        "delta 0.02: {} vs {}",
        queue(&greedy),
        queue(&artifact)
    );
}

#[test]
fn ack_every_sets_how_often_the_video_receiver_acknowledges() {
    // The sender takes one RTT sample per ACK frame: acknowledging every packet instead of every
    // second one about doubles them.
    let samples = |extra: &str| {
        let r = run(&format!(
            r#"
duration = "20 s"
[bottleneck]
rate = "2 Mbit/s"
delay = "25 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "copa"
rmin = "150 kbit/s"
rmax = "3 Mbit/s"
{extra}
"#
        ));
        r.sender_rtt.columns[0].1.len()
    };
    let (every, default, two) = (samples("ack_every = 1"), samples(""), samples("ack_every = 2"));
    eprintln!("RTT samples: ack_every 1: {every}, default: {default}");
    assert_eq!(default, two, "the default is every second packet");
    assert!(every as f64 > 1.7 * default as f64, "{every} vs {default}");
}

#[test]
fn video_over_the_transport_repairs_losses() {
    // 2 % random loss: RTP without repair loses a frame whenever one of its packets is lost;
    // over the transport lost packets are sent again, so nearly every frame completes.
    let r = transport_video("copa", "loss = { kind = \"bernoulli\", p = 0.02 }");
    let f = &r.summary.flows[0];
    let frames_done = f.fps_mean.unwrap() / 30.0;
    eprintln!(
        "copa video, 2 % loss: {:.3} of the frames complete, loss ratio {:.3}",
        frames_done, f.loss_ratio
    );
    assert!(f.loss_ratio > 0.01, "the link did lose packets: {}", f.loss_ratio);
    assert!(frames_done > 0.98, "frames completed {frames_done}");
}

#[test]
fn rtcp_keys_are_refused_for_video_over_the_transport() {
    let e = common::scenario_error(
        "duration = \"1 s\"\n[bottleneck]\nrate = \"1 Mbit/s\"\ndelay = \"1 ms\"\n[[flows]]\nid = \"v\"\nkind = \"rtp-video\"\ncc = \"copa\"\nfeedback = \"50 ms\"\n",
    );
    assert_eq!(e.key, "flows[0].feedback");
    assert!(e.message.contains("transport"), "{e}");
}

/// A 1 Mbit/s video over a path losing 2 % of packets at random (Bernoulli), with or without
/// NACK/RTX.
fn lossy(nack: bool) -> lowlat_sim::RunResult {
    lossy_with(&format!("nack = {nack}"))
}

/// [`lossy`] with the given repair key(s).
fn lossy_with(repair: &str) -> lowlat_sim::RunResult {
    run(&format!(
        r#"
duration = "20 s"
seed = 3
[bottleneck]
rate = "5 Mbit/s"
delay = "30 ms"
loss = {{ kind = "bernoulli", p = 0.02 }}
[[flows]]
id = "video"
kind = "rtp-video"
cc = "fixed"
rate = "1 Mbit/s"
rmax = "2 Mbit/s"
{repair}
"#
    ))
}

#[test]
fn nack_and_rtx_recover_most_frames_a_lossy_path_loses() {
    let (off, on) = (lossy(false), lossy(true));
    let (off, on) = (&off.summary.flows[0], &on.summary.flows[0]);
    let late = |f: &lowlat_sim::results::FlowSummary| f.ratio_frame_delay_over_400ms.unwrap();
    // Without repair a frame of ~4 packets is lost with probability ~8 %; with it, only a packet
    // whose retransmissions are lost too (0.02^2) or come after 400 ms (they come after ~1 RTT).
    assert!(late(off) > 0.04, "off: {} of frames late or lost", late(off));
    assert!(late(on) < late(off) / 4.0, "on: {} vs off {}", late(on), late(off));
    assert!(on.fps_mean.unwrap() > off.fps_mean.unwrap(), "{:?} vs {:?}", on.fps_mean, off.fps_mean);
    assert_eq!((off.retransmissions, off.recovered), (None, None));
    let (rtx, rec) = (on.retransmissions.unwrap(), on.recovered.unwrap());
    // About 2 % of ~2000 packets were lost and retransmitted; most retransmissions recovered one.
    assert!(rtx > 20 && rec > 20 && rec <= rtx, "{rtx} retransmissions, {rec} recovered");
    // Retransmissions add to what the sender puts on the wire.
    assert!(on.packets_sent > off.packets_sent, "{} vs {}", on.packets_sent, off.packets_sent);
    // A retransmission costs about a round trip: the median frame is unchanged, the tail not.
    let p50 = |f: &lowlat_sim::results::FlowSummary| f.frame_delay_ms.unwrap().p50.unwrap();
    assert!((p50(on) - p50(off)).abs() < 5.0, "{} vs {}", p50(on), p50(off));
}

#[test]
fn nack_runs_are_deterministic() {
    let (a, b) = (lossy(true), lossy(true));
    assert_eq!(a.summary.flows, b.summary.flows);
}

#[test]
fn timeout_repair_recovers_lost_packets_and_takes_its_rtt_from_the_acks() {
    let (off, on) = (lossy(false), lossy_with("repair = \"timeout\""));
    let (fo, fon) = (&off.summary.flows[0], &on.summary.flows[0]);
    let late = |f: &lowlat_sim::results::FlowSummary| f.ratio_frame_delay_over_400ms.unwrap();
    assert!(late(fon) < late(fo) / 4.0, "timeout repair: {} vs none {}", late(fon), late(fo));
    let (rtx, rec) = (fon.retransmissions.unwrap(), fon.recovered.unwrap());
    // About 2 % of ~2000 packets lost; a timeout resends the frame's unacknowledged packets (an
    // ACK lost on the way back costs a needless copy too).
    assert!(rtx > 20 && rec > 20 && rec <= rtx, "{rtx} retransmissions, {rec} recovered");
    // One RTT sample per ACK, each at least the 60 ms base RTT.
    let rtt = common::series(&on.sender_rtt, "video", "rtt_ms");
    let samples = rtt.len() as u64;
    assert!(samples > fon.packets_sent / 2, "{samples} samples for {} packets", fon.packets_sent);
    let min = rtt.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    assert!((60.0..70.0).contains(&min), "smallest RTT {min} ms");
}

#[test]
fn timeout_repair_runs_are_deterministic() {
    let (a, b) = (lossy_with("repair = \"timeout\""), lossy_with("repair = \"timeout\""));
    assert_eq!(a.summary.flows, b.summary.flows);
}

#[test]
fn the_repair_key_is_checked() {
    let base = "duration = \"1 s\"\n[bottleneck]\nrate = \"1 Mbit/s\"\ndelay = \"1 ms\"\n[[flows]]\nid = \"v\"\nkind = \"rtp-video\"\ncc = \"gcc\"\n";
    let e = common::scenario_error(&format!("{base}repair = \"fec\"\n"));
    assert_eq!(e.key, "flows[0].repair");
    assert!(e.message.contains("\"timeout\""), "{e}");
    let e = common::scenario_error(&format!("{base}repair = \"timeout\"\nnack = true\n"));
    assert_eq!(e.key, "flows[0].nack");
    let e = common::scenario_error(
        &format!("{base}cc = \"copa\"\n")
            .replace("cc = \"gcc\"\n", "")
            .replace("copa\"\n", "copa\"\nrepair = \"timeout\"\n"),
    );
    assert_eq!(e.key, "flows[0].repair");
    // repair = "nack" is nack = true; both given and agreeing is fine.
    for ok in ["repair = \"nack\"\nnack = true\n", "repair = \"none\"\nnack = false\n"] {
        common::scenario(&format!("{base}{ok}"));
    }
}

#[test]
fn tcp_recovery_keys_are_checked_and_repair_losses() {
    let text = |cc: &str, extra: &str| {
        format!(
            r#"
duration = "30 s"
[bottleneck]
rate = "2 Mbit/s"
delay = "25 ms"
queue = {{ kind = "droptail", limit = "300 ms" }}
loss = {{ kind = "bernoulli", p = 0.02 }}
[reverse]
rate = "2 Mbit/s"
delay = "25 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "{cc}"
rmin = "150 kbit/s"
rmax = "3 Mbit/s"
{extra}
"#
        )
    };
    let parse = |t: &str| {
        lowlat_sim::Scenario::parse(t, lowlat_sim::Format::Toml, "t.toml", std::path::Path::new("."))
    };
    for (cc, extra, want) in [
        ("copa", "recovery = \"sctp\"", "expected \"quic\" or \"tcp\""),
        ("copa", "min_rto = \"200 ms\"", "applies to recovery = \"tcp\""),
        ("copa", "recovery = \"tcp\"\nmin_rto = \"0 s\"", "expected a duration above 0"),
        ("gcc", "recovery = \"tcp\"", "applies to video over a window controller"),
    ] {
        let e = parse(&text(cc, extra)).unwrap_err().to_string();
        assert!(e.contains(want) && e.contains("flows[0]."), "{extra}: {e}");
    }
    // Random losses over TCP's recovery: repaired (nearly every frame completes), and not as
    // under RFC 9002's (the key reaches the sender).
    let run = |extra: &str| lowlat_sim::Simulation::new(parse(&text("copa", extra)).unwrap()).run();
    let (tcp, quic) = (run("recovery = \"tcp\"\nmin_rto = \"1 s\"\nrto_backoff = false"), run(""));
    let (t, q) = (&tcp.summary.flows[0], &quic.summary.flows[0]);
    eprintln!(
        "2 % loss: fps tcp {:?} quic {:?}, sent {} vs {}",
        t.fps_mean, q.fps_mean, t.packets_sent, q.packets_sent
    );
    assert!(t.loss_ratio > 0.01 && t.fps_mean.unwrap() > 0.98 * 30.0, "{t:?}");
    assert_ne!(t.packets_sent, q.packets_sent);
}

#[test]
fn encoder_share_scales_what_the_encoder_produces() {
    // A fixed 1 Mbit/s target and an exact encoder: the flow carries the share of it.
    let kbps = |extra: &str| {
        let r = run(&format!(
            r#"
duration = "20 s"
[bottleneck]
rate = "5 Mbit/s"
delay = "20 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "fixed"
rate = "1 Mbit/s"
rmin = "150 kbit/s"
rmax = "2 Mbit/s"
codec = "perfect"
{extra}
"#
        ));
        r.summary.flows[0].throughput_kbps
    };
    let (full, one, share) = (kbps(""), kbps("encoder_share = 1.0"), kbps("encoder_share = 0.5"));
    eprintln!("throughput: default {full:.1}, share 1 {one:.1}, share 0.5 {share:.1} kbit/s");
    assert_eq!(full, one, "a share of 1 is the default");
    assert!((share / full - 0.5).abs() < 0.03, "{share} vs {full}");
}
