//! Closed-loop endpoints: feedback travels the reverse path with its real size.

mod common;
use lowlat_core::{Bytes, Duration, Packet, Time};
use lowlat_sim::app::{Endpoint, Transmit};
use lowlat_sim::Simulation;
use std::sync::{Arc, Mutex};

/// Sends a 1000-byte probe every 10 ms and records the round-trip time of each echo.
#[derive(Debug)]
struct Pinger {
    next: Time,
    seq: u64,
    rtts: Arc<Mutex<Vec<Duration>>>,
}

impl Endpoint for Pinger {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        // The echo carries the probe's send time in `app`.
        self.rtts.lock().unwrap().push(now - Time(pkt.app));
    }
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        if self.next > now {
            return None;
        }
        self.next += Duration::from_millis(10);
        self.seq += 1;
        Some(Transmit { size: Bytes(1000), seq: self.seq - 1, app: now.as_nanos(), ecn: 0 })
    }
    fn poll_timeout(&self) -> Option<Time> {
        Some(self.next)
    }
}

/// Answers each probe with a 100-byte echo.
#[derive(Debug, Default)]
struct Echo {
    pending: Vec<u64>,
    seq: u64,
}

impl Endpoint for Echo {
    fn handle_packet(&mut self, _now: Time, pkt: &Packet) {
        self.pending.push(pkt.sent_at.as_nanos());
    }
    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        let sent = self.pending.pop()?;
        self.seq += 1;
        Some(Transmit { size: Bytes(100), seq: self.seq - 1, app: sent, ecn: 0 })
    }
}

#[test]
fn feedback_travels_the_reverse_path_and_gives_round_trip_times() {
    let sc = common::scenario(
        r#"
duration = "2 s"
[bottleneck]
rate = "8 Mbit/s"
delay = "20 ms"
[reverse]
rate = "800 kbit/s"
delay = "30 ms"
[[flows]]
id = "ping"
kind = "cbr"
rate = "1 kbit/s"
"#,
    );
    let mut sim = Simulation::new(sc);
    let rtts = Arc::new(Mutex::new(Vec::new()));
    sim.set_endpoints(
        "ping",
        Box::new(Pinger { next: Time::ZERO, seq: 0, rtts: rtts.clone() }),
        Box::new(Echo::default()),
    )
    .unwrap();
    assert!(sim.set_endpoints("nope", Box::new(Echo::default()), Box::new(Echo::default())).is_err());
    let r = sim.run();
    let rtts = rtts.lock().unwrap();
    // 1000 B at 8 Mbit/s = 1 ms, + 20 ms; 100 B at 800 kbit/s = 1 ms, + 30 ms.
    assert!(rtts.len() >= 190, "{} echoes", rtts.len());
    assert!(rtts.iter().all(|&d| d == Duration::from_millis(52)), "{:?}", &rtts[..5]);
    let reverse = r.summary.links.iter().find(|l| l.id == "reverse").unwrap();
    assert!(reverse.utilization > 0.0);
    assert_eq!(r.summary.flows[0].packets_sent, 200);
}
