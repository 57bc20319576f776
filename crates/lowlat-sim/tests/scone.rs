//! SCONE-PRO at the access point: the signals reach the sender, the sender follows them, and
//! without them it is its fallback controller.

mod common;
use common::{run, scenario_error};

/// An AP whose capacity drops from 10 to 3 Mbit/s at 10 s, behind a 20 ms wired path; one
/// video flow with controller `cc` (encoder up to 8 Mbit/s).
fn ap(assist: &str, scone: &str, cc: &str, cc_params: &str) -> String {
    format!(
        r#"
duration = "20 s"
seed = 5
[bottleneck]
schedule = [ {{ at = "0 s", rate = "10 Mbit/s" }}, {{ at = "10 s", rate = "3 Mbit/s" }} ]
delay = "1 ms"
queue = {{ kind = "droptail", limit = "1000 packets" }}
assist = "{assist}"
{scone}
[reverse]
rate = "10 Mbit/s"
delay = "1 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "{cc}"
rmin = "300 kbit/s"
rmax = "8 Mbit/s"
access = {{ delay = "19 ms" }}
{cc_params}
"#
    )
}

#[test]
fn the_rtc_sender_follows_the_signalled_capacity_with_a_short_queue() {
    let r = run(&ap("scone-rtc", "", "scone-pro", ""));
    let f = &r.summary.flows[0];
    let l = r.summary.links.iter().find(|l| l.id == "bottleneck").unwrap();
    assert_eq!(r.summary.assist.as_ref().unwrap().name, "scone-rtc");
    // 0.9 x capacity on average over the run: (10 + 3) / 2 x 0.9 = 5.85 Mbit/s, less the
    // queue terms; well above what a 3 Mbit/s-only sender would get.
    assert!(f.throughput_kbps > 4_000.0 && f.throughput_kbps < 6_500.0, "throughput {}", f.throughput_kbps);
    // The AP's queue stays short: the rule drains it within T_e.
    let q = l.queue_delay_ms.p99.unwrap();
    assert!(q < 100.0, "queue delay p99 {q} ms");
    let fd = f.frame_delay_ms.as_ref().unwrap();
    assert!(fd.p90.unwrap() < 150.0, "frame delay p90 {:?}", fd.p90);
}

#[test]
fn without_signals_the_sender_is_its_fallback() {
    // No AP signal: SCONE-PRO hands every decision to GCC, so the runs are identical.
    let gcc = run(&ap("none", "", "gcc", ""));
    let scone = run(&ap("none", "", "scone-pro", ""));
    let (a, b) = (&gcc.summary.flows[0], &scone.summary.flows[0]);
    assert_eq!(a.frame_delay_ms, b.frame_delay_ms);
    assert_eq!(a.throughput_kbps, b.throughput_kbps);
    assert_eq!((a.cc.as_str(), b.cc.as_str()), ("gcc", "scone-pro"));
    // A named fallback is honoured: with NADA it is NADA's run.
    let nada = run(&ap("none", "", "nada", ""));
    let via = run(&ap("none", "", "scone-pro", "cc_params = { scone-pro = { fallback = \"nada\" } }"));
    assert_eq!(nada.summary.flows[0].frame_delay_ms, via.summary.flows[0].frame_delay_ms);
}

#[test]
fn standard_advice_caps_the_sender_at_the_policy() {
    // The AP advises at most signal 20 (1 Mbit/s) on its 10 Mbit/s link.
    let capped = run(&ap("scone", "scone = { policy_signal = 20 }", "scone-pro", ""));
    let free = run(&ap("none", "", "scone-pro", ""));
    let (c, f) = (capped.summary.flows[0].throughput_kbps, free.summary.flows[0].throughput_kbps);
    assert!(c < 1_150.0, "capped at {c} kbit/s");
    assert!(f > 2.0 * c, "without advice {f} kbit/s");
}

#[test]
fn scone_keys_are_checked() {
    let e = |assist: &str, scone: &str, params: &str| {
        scenario_error(&ap(assist, scone, "scone-pro", params)).to_string()
    };
    let one_line = |s: String| {
        assert!(!s.contains('\n'), "{s}");
        s
    };
    let m = one_line(e("scone-rtc", "scone = { period = \"0 ms\" }", ""));
    assert!(m.contains("bottleneck.scone.period") && m.contains("expected \"1 ms\" to"), "{m}");
    let m = one_line(e("scone", "scone = { policy_signal = 130 }", ""));
    assert!(m.contains("bottleneck.scone.policy_signal") && m.contains("got 130"), "{m}");
    let m = one_line(e("none", "scone = { period = \"20 ms\" }", ""));
    assert!(m.contains("bottleneck.scone") && m.contains("assist"), "{m}");
    let m = one_line(e("scone-rtc", "scone = { refresh = \"20 s\" }", ""));
    assert!(m.contains("bottleneck.scone.refresh"), "{m}");
    let m = one_line(e("scone-rtc", "scone = { capacity = \"guess\" }", ""));
    assert!(m.contains("bottleneck.scone.capacity") && m.contains("measured"), "{m}");
    let m = one_line(e("scone-rtc", "", "cc_params = { scone-pro = { empty_time = \"0 ms\" } }"));
    assert!(m.contains("cc_params.scone-pro") && m.contains("empty_time"), "{m}");
    let m = one_line(e("scone-rtc", "", "cc_params = { scone-pro = { fallback = \"copa\" } }"));
    assert!(m.contains("fallback") && m.contains("gcc"), "{m}");
}
