//! ECN end to end: queues that mark, receivers that report the marks (RFC 8888, ACK_ECN), and
//! the scenario keys' errors.

mod common;
use common::{run, scenario_error};

/// A 2 Mbit/s bottleneck with queue `queue` and one flow `flow` (TOML of its table's keys).
fn path(queue: &str, flow: &str, seconds: u32) -> String {
    format!(
        r#"
duration = "{seconds} s"
[bottleneck]
rate = "2 Mbit/s"
delay = "10 ms"
queue = {queue}
[reverse]
rate = "2 Mbit/s"
delay = "10 ms"
[[flows]]
id = "f"
{flow}
"#
    )
}

const L4S: &str = r#"{ kind = "l4s", limit = "1000 packets" }"#;

#[test]
fn ce_marks_reach_the_rtp_sender_in_rfc8888_feedback() {
    // A fixed 3 Mbit/s video into 2 Mbit/s: the queue grows past 1 ms at once.
    let flow = r#"kind = "rtp-video"
cc = "fixed"
rate = "3 Mbit/s"
rmax = "3 Mbit/s"
ecn = "ect1"
feedback_format = "rfc8888""#;
    let r = run(&path(L4S, flow, 5));
    let marks = r.summary.links.iter().find(|l| l.id == "bottleneck").unwrap().ecn_marks;
    let reported = r.summary.flows[0].ce_reported.unwrap();
    assert!(marks > 100, "marks {marks}");
    // Every mark of a packet that arrived before the last report reaches the sender.
    assert!(reported <= marks && reported + 100 > marks, "reported {reported} of {marks} marks");
    // Not-ECT video on the same queue is never marked.
    let plain = run(&path(L4S, &flow.replace("ecn = \"ect1\"\n", ""), 5));
    assert_eq!(plain.summary.links[0].ecn_marks, 0);
    assert_eq!(plain.summary.flows[0].ce_reported, Some(0));
}

#[test]
fn ce_marks_reach_the_transport_sender_in_ack_ecn_counts() {
    let bulk = |ecn: &str| format!("kind = \"bulk\"\ncc = \"newreno\"\necn = \"{ecn}\"");
    let codel_ecn = r#"{ kind = "codel", ecn = true, limit = "1000 packets" }"#;
    // A classic halving on a 1 ms step under-uses the link (why L4S needs scalable senders);
    // CoDel's 5 ms target over 20 ms RTT leaves room.
    for (queue, ecn, min_util) in [(L4S, "ect1", 0.2), (codel_ecn, "ect0", 0.6)] {
        let r = run(&path(queue, &bulk(ecn), 10));
        let l = r.summary.links.iter().find(|l| l.id == "bottleneck").unwrap();
        assert!(l.ecn_marks > 0, "{queue}: no marks");
        // NewReno halves on the CE counts of the ACKs: the queue never fills its 1000 packets.
        assert_eq!(l.drops, 0, "{queue}: drops");
        assert!(l.utilization > min_util, "{queue}: utilisation {}", l.utilization);
    }
    // The same flow without ECN on CoDel is dropped from instead.
    let r = run(&path(codel_ecn, &bulk("not-ect"), 10));
    assert!(r.summary.links[0].drops > 0 && r.summary.links[0].ecn_marks == 0);
}

#[test]
fn copa_video_over_the_transport_hears_the_marks() {
    let flow = r#"kind = "rtp-video"
cc = "copa"
rmax = "4 Mbit/s"
ecn = "ect1""#;
    let r = run(&path(L4S, flow, 10));
    assert!(r.summary.flows[0].ce_reported.unwrap() > 0);
}

fn assert_error(toml: &str, needles: &[&str]) {
    let e = scenario_error(toml).to_string();
    assert!(!e.contains('\n'), "error spans several lines: {e}");
    for n in needles {
        assert!(e.contains(n), "error {e:?} does not mention {n:?}");
    }
}

#[test]
fn ecn_keys_are_checked() {
    let cbr = "kind = \"cbr\"\nrate = \"1 Mbit/s\"";
    assert_error(
        &path(r#"{ kind = "droptail", ecn = true }"#, cbr, 1),
        &["bottleneck.queue.ecn", "drop-tail queue cannot mark"],
    );
    assert_error(&path(r#"{ kind = "l4s", ecn = false }"#, cbr, 1), &["bottleneck.queue.ecn"]);
    assert_error(&path(r#"{ kind = "l4s", target = "5 ms" }"#, cbr, 1), &["bottleneck.queue.target"]);
    assert_error(&path(r#"{ kind = "codel", threshold = "1 ms" }"#, cbr, 1), &["bottleneck.queue.threshold"]);
    assert_error(
        &path(r#"{ kind = "l4s", threshold = "2 ms", max_threshold = "1 ms" }"#, cbr, 1),
        &["bottleneck.queue.max_threshold", "at least threshold"],
    );
    assert_error(&path(L4S, &format!("{cbr}\necn = \"ce\""), 1), &["flows[0].ecn", "only queues set CE"]);
    assert_error(&path(L4S, &format!("{cbr}\necn = \"ect2\""), 1), &["flows[0].ecn", "expected"]);
    assert_error(
        &path(L4S, "kind = \"rtp-video\"\ncc = \"gcc\"\necn = \"ect1\"", 1),
        &["flows[0].ecn", "transport-cc", "rfc8888"],
    );
}

#[test]
fn the_ecn_benchmark_case_marks_every_packet() {
    use lowlat_core::{Bitrate, Duration};
    let r = lowlat_sim::Simulation::new(lowlat_sim::bench::ecn_dumbbell(
        Bitrate::mbps(10),
        Duration::from_secs(2),
    ))
    .run();
    let marks = r.summary.links.iter().find(|l| l.id == "bottleneck").unwrap().ecn_marks;
    let received = r.summary.flows[0].packets_received;
    // Every packet that left the queue was marked; the last few are still on the 25 ms wire.
    assert!(marks > 1000 && marks >= received && marks - received < 50, "{marks} marks, {received} received");
}
