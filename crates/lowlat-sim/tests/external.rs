//! Controllers driven from outside the simulator: the driver's target is what the sender sends,
//! a callback is called per feedback report, and a bad decision is an error the driver can read.

use lowlat_cc::{FeedbackReport, RateCallback};
use lowlat_core::Time;
use lowlat_sim::{Format, Scenario, Simulation};
use std::path::Path;

fn scenario(cc: &str) -> Scenario {
    let text = format!(
        r#"
duration = "10 s"
[bottleneck]
rate = "2 Mbit/s"
delay = "20 ms"
[[flows]]
id = "v"
kind = "rtp-video"
cc = "{cc}"
rmin = "100 kbit/s"
rmax = "1.5 Mbit/s"
"#
    );
    Scenario::parse(&text, Format::Toml, "t.toml", Path::new(".")).unwrap()
}

fn video_kbps(sim: Simulation) -> f64 {
    let r = sim.finish();
    let s: serde_json::Value = serde_json::from_str(&r.summary_json()).unwrap();
    s["flows"][0]["throughput_kbps"].as_f64().unwrap()
}

#[test]
fn the_driver_sets_the_rate_and_reads_the_feedback_window() {
    let mut sim = Simulation::new(scenario("external"));
    let ext = sim.external_controllers();
    assert_eq!(ext.len(), 1);
    assert_eq!((ext[0].0.as_str(), ext[0].1.as_str()), ("v", "external"));
    let h = ext[0].2.clone();
    h.set_target_bps(600_000.0).unwrap();
    let mut reports = 0;
    for step in 1..=200 {
        sim.advance(Time::from_millis(step * 50));
        let w = h.take_window();
        reports += w.reports;
        if step > 20 && w.received > 0 {
            assert!(w.mean_delay_s() >= 0.020 && w.mean_delay_s() < 0.1, "{}", w.mean_delay_s());
            assert_eq!(w.lost, 0);
        }
    }
    assert!((95..=105).contains(&reports), "100 ms feedback over 10 s: {reports}");
    let kbps = video_kbps(sim);
    assert!((520.0..640.0).contains(&kbps), "{kbps}");
}

struct Halve(f64);
impl RateCallback for Halve {
    fn on_feedback(&mut self, _now: Time, r: &FeedbackReport) -> Result<Option<f64>, String> {
        assert!(!r.packets.is_empty());
        self.0 = (self.0 * 0.9).max(200_000.0);
        Ok(Some(self.0))
    }
}

struct Nan(u32);
impl RateCallback for Nan {
    fn on_feedback(&mut self, _now: Time, _r: &FeedbackReport) -> Result<Option<f64>, String> {
        self.0 += 1;
        Ok(Some(if self.0 > 10 { f64::NAN } else { 500_000.0 }))
    }
}

#[test]
fn a_callback_decides_per_report_and_a_nan_is_an_error() {
    let mut sim = Simulation::new(scenario("python:my_cc:Halve"));
    sim.external_controllers()[0].2.set_callback(Box::new(Halve(1.5e6)));
    sim.advance(sim.end());
    // 0.9x per 100 ms report from 1.5 Mbit/s: about 1.2 Mbit in the first 2 s, then 200 kbit/s.
    let kbps = video_kbps(sim);
    assert!((240.0..340.0).contains(&kbps), "{kbps}");

    let mut sim = Simulation::new(scenario("external"));
    let h = sim.external_controllers()[0].2.clone();
    h.set_callback(Box::new(Nan(0)));
    sim.advance(sim.end());
    let e = h.error().expect("NaN is an error");
    assert!(e.contains("target_bitrate: got NaN"), "{e}");
}

#[test]
fn external_names_are_checked() {
    for bad in ["python:", "python:mod", "python:mod:", "python:1mod:C", "python:m:C.D", "extern"] {
        let text = format!(
            "duration = \"1 s\"\n[bottleneck]\nrate = \"1 Mbit/s\"\n[[flows]]\nid = \"v\"\nkind = \"rtp-video\"\ncc = \"{bad}\"\n"
        );
        let e = Scenario::parse(&text, Format::Toml, "t.toml", Path::new(".")).unwrap_err().to_string();
        assert!(e.contains("python:module:Class"), "{bad}: {e}");
    }
}
