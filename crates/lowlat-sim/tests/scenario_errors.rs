//! Bad scenarios give one-line errors naming the file, the key, the value and what was expected.

mod common;
use common::scenario_error;

const GOOD: &str = r#"
duration = "10 s"
[bottleneck]
rate = "1 Mbit/s"
delay = "50 ms"
[[flows]]
id = "f"
kind = "cbr"
rate = "500 kbit/s"
start = "1 s"
stop = "9 s"
"#;

fn assert_error(toml: &str, needles: &[&str]) {
    let e = scenario_error(toml).to_string();
    assert!(!e.contains('\n'), "error spans several lines: {e}");
    assert!(e.starts_with("test.toml: "), "error does not name the file: {e}");
    for n in needles {
        assert!(e.contains(n), "error {e:?} does not mention {n:?}");
    }
}

#[test]
fn the_good_scenario_is_accepted() {
    common::scenario(GOOD);
}

#[test]
fn missing_key() {
    assert_error(&GOOD.replace("duration = \"10 s\"\n", ""), &["duration", "missing"]);
    assert_error(&GOOD.replace("rate = \"500 kbit/s\"\n", ""), &["flows[0]", "rate"]);
}

#[test]
fn wrong_unit() {
    assert_error(&GOOD.replace("\"1 Mbit/s\"", "\"1 ms\""), &["bottleneck.rate", "\"1 ms\"", "bitrate"]);
    assert_error(&GOOD.replace("\"50 ms\"", "\"50 Mbit/s\""), &["bottleneck.delay", "duration"]);
    assert_error(&GOOD.replace("\"50 ms\"", "50"), &["bottleneck.delay", "50", "duration"]);
}

#[test]
fn unknown_key() {
    assert_error(&GOOD.replace("delay = ", "dealy = "), &["bottleneck", "unknown field `dealy`"]);
    assert_error(&format!("colour = \"red\"\n{GOOD}"), &["unknown field `colour`"]);
}

#[test]
fn negative_rate() {
    assert_error(&GOOD.replace("\"500 kbit/s\"", "\"-500 kbit/s\""), &["flows[0].rate", "-500 kbit/s"]);
    assert_error(&GOOD.replace("\"1 Mbit/s\"", "\"0 Mbit/s\""), &["bottleneck.rate", "positive"]);
}

#[test]
fn flow_ending_before_it_starts() {
    assert_error(
        &GOOD.replace("stop = \"9 s\"", "stop = \"0.5 s\""),
        &["flows[0].stop", "500 ms", "after start"],
    );
    assert_error(&GOOD.replace("stop = \"9 s\"", "stop = \"11 s\""), &["flows[0].stop", "duration"]);
}

#[test]
fn other_semantic_errors() {
    assert_error(&GOOD.replace("kind = \"cbr\"", "kind = \"tcp\""), &["flows[0].kind", "\"tcp\""]);
    assert_error(
        &GOOD.replace("rate = \"1 Mbit/s\"", "rate = \"1 Mbit/s\"\nloss = { kind = \"bernoulli\", p = 1.5 }"),
        &["bottleneck.loss.p", "1.5"],
    );
    assert_error(
        &GOOD.replace("rate = \"1 Mbit/s\"", "rate = \"1 Mbit/s\"\nqueue = { kind = \"red\" }"),
        &["bottleneck.queue.kind", "codel"],
    );
    assert_error(
        &GOOD.replace(
            "rate = \"1 Mbit/s\"",
            "rate = \"1 Mbit/s\"\nqueue = { kind = \"codel\", limit = \"lots\" }",
        ),
        &["bottleneck.queue.limit", "lots"],
    );
    // The device FIFO is counted in packets, as ns-3's device queue.
    for bad in ["64 kB", "0 packets", "100 ms", "unlimited", "many"] {
        assert_error(
            &GOOD.replace(
                "rate = \"1 Mbit/s\"",
                &format!("rate = \"1 Mbit/s\"\nqueue = {{ kind = \"codel\", device_limit = \"{bad}\" }}"),
            ),
            &["bottleneck.queue.device_limit", bad, "packets"],
        );
    }
    assert_error(
        &GOOD.replace("rate = \"1 Mbit/s\"", "rate = \"1 Mbit/s\"\ntrace = \"x.trace\""),
        &["bottleneck", "exactly one"],
    );
    assert_error(
        &GOOD.replace("rate = \"1 Mbit/s\"", "trace = \"does-not-exist.trace\""),
        &["bottleneck.trace", "does-not-exist.trace"],
    );
    assert_error("duration = \"10 s\"\n[bottleneck\n", &["line", "invalid TOML"]);
}

#[test]
fn bad_assistance_and_wifi_settings() {
    let with = |extra: &str| {
        GOOD.replace("delay = \"50 ms\"\n[[flows]]", &format!("delay = \"50 ms\"\n{extra}\n[[flows]]"))
    };
    assert_error(&with("assist = \"magic\""), &["bottleneck.assist", "\"magic\"", "zhuge", "fastack"]);
    assert_error(&with("zhuge = { report_interval = \"5 ms\" }"), &["bottleneck.zhuge", "assist"]);
    assert_error(
        &with("assist = \"zhuge\"\nzhuge = { burst_rule = \"big\" }"),
        &["bottleneck.zhuge.burst_rule", "\"big\"", "max-burst"],
    );
    assert_error(
        &with("assist = \"zhuge\"\nzhuge = { report_interval = \"0 s\" }"),
        &["report_interval", "positive"],
    );
    assert_error(&with("wifi = { outage_probability = 2.0 }"), &["bottleneck.wifi.outage_probability", "2"]);
    assert_error(
        &with("wifi = { access_min = \"3 ms\", access_max = \"1 ms\" }"),
        &["bottleneck.wifi.access_max", "access_min"],
    );
    assert_error(&with("wifi = { channel = 1 }"), &["channel"]);
    // The good settings are accepted.
    common::scenario(&with(
        "assist = \"zhuge\"\nwifi = {}\nzhuge = { burst_rule = \"max-burst\", max_burst = \"30 kB\" }",
    ));
    common::scenario(&with("assist = \"fastack\""));
}

#[test]
fn trace_replay_keys() {
    // The keys need a trace, and a sound value.
    assert_error(
        &GOOD.replace("rate = \"1 Mbit/s\"", "rate = \"1 Mbit/s\"\ntrace_step = \"200 ms\""),
        &["bottleneck.trace_step", "trace"],
    );
    let dir = std::env::temp_dir().join(format!("lowlat-trace-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("w.rate"), "4500.0 10\n4500.2 20\n").unwrap();
    std::fs::write(dir.join("m.mahi"), "1\n2\n3\n").unwrap();
    let parse =
        |toml: String| lowlat_sim::Scenario::parse(&toml, lowlat_sim::Format::Toml, "test.toml", &dir);
    let with = |cap: &str| GOOD.replace("rate = \"1 Mbit/s\"", cap);
    let e = parse(with("trace = \"w.rate\"\ntrace_scale = -1.0")).unwrap_err().to_string();
    assert!(e.contains("bottleneck.trace_scale") && e.contains("-1"), "{e}");
    let e = parse(with("trace = \"w.rate\"\ntrace_step = \"0 s\"")).unwrap_err().to_string();
    assert!(e.contains("bottleneck.trace_step") && e.contains("positive"), "{e}");
    parse(with("trace = \"w.rate\"\ntrace_step = \"200 ms\"\ntrace_scale = 1.15\ntrace_loop = false"))
        .unwrap_or_else(|e| panic!("{e}"));
    // A Wi-Fi access point takes a mahimahi trace as its channel's rate.
    parse(with("trace = \"m.mahi\"\nwifi = {}")).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn zhuge_variant_keys() {
    let with = |extra: &str| {
        GOOD.replace(
            "delay = \"50 ms\"\n[[flows]]",
            &format!("delay = \"50 ms\"\nassist = \"zhuge\"\n{extra}\n[[flows]]"),
        )
    };
    assert_error(&with("zhuge = { variant = \"ns3\" }"), &["bottleneck.zhuge.variant", "\"ns3\"", "paper"]);
    assert_error(&with("zhuge = { in_band = \"often\" }"), &["bottleneck.zhuge.in_band", "per-packet"]);
    assert_error(&with("zhuge = { ack_hold = \"x\" }"), &["bottleneck.zhuge.ack_hold", "accumulate"]);
    common::scenario(&with(
        "zhuge = { variant = \"paper\", in_band = \"sampled\", ack_hold = \"accumulate\", whole_ms = false }",
    ));
}

#[test]
fn bad_encoder_share() {
    let video = |share: &str| {
        GOOD.replace(
            "kind = \"cbr\"",
            &format!("kind = \"rtp-video\"\ncc = \"gcc\"\nencoder_share = {share}"),
        )
    };
    common::scenario(&video("0.83"));
    common::scenario(&video("1"));
    for bad in ["0", "-0.5", "1.5", "nan", "inf"] {
        assert_error(&video(bad), &["flows[0].encoder_share", "above 0 and at most 1"]);
    }
    assert_error(&video("\"85 %\""), &["flows[0]", "encoder_share"]);
    assert_error(
        &GOOD.replace("kind = \"cbr\"", "kind = \"cbr\"\nencoder_share = 0.85"),
        &["flows[0].encoder_share", "only rtp-video"],
    );
}

#[test]
fn a_json_file_is_read_as_json_and_its_errors_name_it() {
    let dir = std::env::temp_dir().join(format!("lowlat-json-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.json");
    std::fs::write(
        &good,
        r#"{"duration": "10 s", "bottleneck": {"rate": "1 Mbit/s", "delay": "50 ms"},
            "flows": [{"id": "f", "kind": "cbr", "rate": "500 kbit/s", "start": "1 s", "stop": "9 s"}]}"#,
    )
    .unwrap();
    let sc = lowlat_sim::Scenario::from_file(&good).expect("a valid JSON scenario");
    assert_eq!(sc.duration, lowlat_core::Duration::from_secs(10));
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"duration": "10 s", "bottleneck": {"rate": "1 ms", "delay": "50 ms"}, "flows": []}"#,
    )
    .unwrap();
    let e = lowlat_sim::Scenario::from_file(&bad).unwrap_err().to_string();
    assert!(e.contains("bad.json") && e.contains("bottleneck.rate"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
