//! A run continued with another bottleneck capacity from an instant it has not reached
//! (`Simulation::switch_bottleneck`) gives the results of the run built with that capacity.

mod common;
use common::scenario;
use lowlat_core::Time;
use lowlat_sim::{RunResult, Simulation};

/// A 30 s scenario: a video flow (`cc`) over a `queue` bottleneck whose rate follows `schedule`
/// (with Zhuge at a CoDel queue for GCC, FastAck at a drop-tail one for Copa), with a CBR flow
/// beside it (its receiver only counts). The reverse link is its own (by
/// default it copies the bottleneck, whose change would then be the reverse link's too).
fn text(cc: &str, queue: &str, schedule: &str) -> String {
    format!(
        r#"
duration = "30 s"
seed = 7
[bottleneck]
assist = "{assist}"
schedule = [{schedule}]
delay = "20 ms"
queue = {{ kind = "{queue}" }}
[reverse]
rate = "100 Mbit/s"
delay = "20 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "{cc}"
fps = 25
rmin = "300 kbit/s"
rmax = "20 Mbit/s"
access = {{ delay = "9 ms" }}
[[flows]]
id = "cbr"
kind = "cbr"
rate = "1 Mbit/s"
"#,
        assist = match (cc, queue) {
            ("gcc", "codel") => "zhuge",
            ("copa", "droptail") => "fastack",
            _ => "none",
        },
    )
}

const STEADY: &str = r#"{ at = "0 s", rate = "12 Mbit/s" }"#;
const DROP: &str = r#"{ at = "0 s", rate = "12 Mbit/s" }, { at = "17.3 s", rate = "1.5 Mbit/s" }"#;

/// Everything a run gives but its wall time and event count (a run advanced in steps may wake a
/// link for a packet that a run in one go hands on ahead).
fn outcome(r: &RunResult) -> String {
    let summary: String = r
        .summary_json()
        .lines()
        .filter(|l| !l.trim_start().starts_with("\"wall_s\"") && !l.trim_start().starts_with("\"events\""))
        .collect();
    format!("{summary}\n{:?}\n{:?}\n{:?}", r.flow_series, r.link_series, r.frames)
}

#[test]
fn a_switched_run_gives_the_results_of_the_run_built_with_the_new_capacity() {
    for (cc, queue) in [("gcc", "droptail"), ("gcc", "codel"), ("copa", "codel"), ("copa", "droptail")] {
        let dropped = scenario(&text(cc, queue, DROP));
        let want = outcome(&Simulation::new(dropped.clone()).run());
        let mut shared = Simulation::new(scenario(&text(cc, queue, STEADY)));
        assert_eq!(shared.bottleneck_departure(&dropped), Ok(Some(Time::from_millis(17_300))));
        shared.advance(Time::from_millis(16_800));
        shared.switch_bottleneck(dropped).unwrap_or_else(|e| panic!("{cc} over {queue}: {e}"));
        let got = shared.run();
        assert_eq!(outcome(&got), want, "{cc} over {queue}");
        let received = got.summary.flows[0].packets_received;
        assert!(received > 5_000, "{cc} over {queue}: the video flowed ({received} packets)");
    }
}

#[test]
fn a_switch_is_refused_past_the_change_or_for_another_scenario() {
    let dropped = scenario(&text("gcc", "droptail", DROP));
    let mut run = Simulation::new(scenario(&text("gcc", "droptail", STEADY)));
    run.advance(Time::from_millis(17_300));
    let err = run.switch_bottleneck(dropped.clone()).unwrap_err();
    assert!(err.contains("which the run has reached"), "{err}");

    let other = scenario(&text("copa", "codel", DROP));
    let fresh = Simulation::new(scenario(&text("gcc", "droptail", STEADY)));
    let err = fresh.bottleneck_departure(&other).unwrap_err();
    assert!(err.contains("capacity: bottleneck, flows"), "{err}");
    assert_eq!(fresh.bottleneck_departure(&scenario(&text("gcc", "droptail", STEADY))), Ok(None));
}

#[test]
fn a_switch_is_refused_once_a_transmission_was_timed_past_the_change() {
    // 3 Mbit/s of CBR into 1 Mbit/s: the eager drop-tail link times each queued packet's
    // transmission on admission, up to its 300 ms of queue ahead of the clock.
    let text = |schedule: &str| {
        format!(
            r#"
duration = "10 s"
[bottleneck]
schedule = [{schedule}]
delay = "10 ms"
[reverse]
rate = "10 Mbit/s"
delay = "10 ms"
[[flows]]
id = "cbr"
kind = "cbr"
rate = "3 Mbit/s"
"#
        )
    };
    let changed = scenario(&text(r#"{ at = "0 s", rate = "1 Mbit/s" }, { at = "5 s", rate = "2 Mbit/s" }"#));
    let mut run = Simulation::new(scenario(&text(r#"{ at = "0 s", rate = "1 Mbit/s" }"#)));
    run.advance(Time::from_millis(4_950));
    let err = run.switch_bottleneck(changed.clone()).unwrap_err();
    assert!(err.contains("worked out up to"), "{err}");
    // Refused, nothing changed: the run goes on with its own capacity, as a fresh one does.
    let want = Simulation::new(scenario(&text(r#"{ at = "0 s", rate = "1 Mbit/s" }"#))).run();
    assert_eq!(outcome(&run.run()), outcome(&want));
}
