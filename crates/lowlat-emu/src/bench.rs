//! The relay's own figures (`lowlat bench --relay`): its added delay with an unshaped link, its
//! throughput limit, and its timer error on a shaped link, all on loopback in this process.

use crate::clock::WallClock;
use crate::relay::{Relay, RelayConfig, RelayReport};
use crate::traffic::{send_cbr, sink, SinkReport};
use lowlat_core::{Bitrate, Duration};
use lowlat_sim::{Format, Scenario};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Datagram size of every measurement (the 1200-byte datagrams).
pub const DATAGRAM: usize = 1200;

/// What [`run`] measured.
#[derive(Clone, Debug, Default)]
pub struct RelayBench {
    /// One-way delay sender -> sink without the relay (the loopback itself), P50/P99, us.
    pub direct_owd_us: (f64, f64),
    /// The same through the relay with an unshaped link (10 Gbit/s, no delay), P50/P99, us.
    pub relay_owd_us: (f64, f64),
    /// Datagrams per second the unshaped relay forwarded with the sender going flat out.
    pub unshaped_pps: f64,
    /// The same in bits per second (1200-byte payloads).
    pub unshaped_bps: f64,
    /// Datagrams the senders sent, the relay read, and it forwarded, in the flat-out case (sent
    /// but not read: dropped at the relay's socket, so the relay was the bottleneck).
    pub unshaped_sent_read_forwarded: (u64, u64, u64),
    /// Datagrams per second the relay forwarded over its run in the flat-out case (what it
    /// handled, whether or not the sink's socket kept up).
    pub relay_forwarded_pps: f64,
    /// Datagrams forwarded per CPU second of the relay's thread in the flat-out case: its limit on
    /// a core of its own.
    pub relay_pps_per_cpu_s: f64,
    /// The shaped case's link rate.
    pub shaped_rate: Bitrate,
    /// How late the relay woke for departures at that rate (90 % load), P50/P99, us.
    pub shaped_lateness_us: (f64, f64),
}

fn scenario(rate: &str, seconds: f64) -> Scenario {
    let text = format!(
        "name = \"relay-bench\"\nduration = \"{seconds} s\"\n[bottleneck]\nrate = \"{rate}\"\n\
         queue = {{ kind = \"droptail\", limit = \"100 ms\" }}\n\
         [[flows]]\nid = \"load\"\nkind = \"cbr\"\nrate = \"1 Mbit/s\"\npacket_size = \"1200 B\"\n"
    );
    Scenario::parse(&text, Format::Toml, "relay-bench", std::path::Path::new(".")).expect("static scenario")
}

fn quantiles_us(r: &SinkReport) -> (f64, f64) {
    (r.owd.value_at_quantile(0.5) as f64 * 1e-3, r.owd.value_at_quantile(0.99) as f64 * 1e-3)
}

/// Sends at `rate` (None: flat out, from two threads) for `seconds` to `dest`; returns what a sink
/// bound at `sink_sock` got and how many datagrams were sent.
fn load(dest: SocketAddr, sink_sock: UdpSocket, rate: Option<Bitrate>, seconds: f64) -> (SinkReport, u64) {
    let clock = WallClock::start();
    let stop = Arc::new(AtomicBool::new(false));
    let t = {
        let stop = stop.clone();
        std::thread::spawn(move || sink(&sink_sock, clock, &stop))
    };
    let senders = if rate.is_some() { 1 } else { 2 };
    let threads: Vec<_> = (0..senders)
        .map(|_| {
            std::thread::spawn(move || {
                let client = UdpSocket::bind("127.0.0.1:0").expect("loopback socket");
                send_cbr(&client, dest, rate, DATAGRAM, Duration::from_secs_f64(seconds), clock)
            })
        })
        .collect();
    let sent = threads.into_iter().map(|t| t.join().expect("sender thread")).sum();
    std::thread::sleep(std::time::Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    (t.join().expect("sink thread"), sent)
}

fn through_relay(
    link_rate: &str,
    rate: Option<Bitrate>,
    seconds: f64,
) -> Result<(SinkReport, u64, RelayReport), String> {
    let server = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = server.local_addr().map_err(|e| e.to_string())?;
    let relay = Relay::bind(
        scenario(link_rate, seconds + 1.0),
        RelayConfig::new("127.0.0.1:0".parse().unwrap(), addr),
    )?;
    let listen = relay.listen_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let r = {
        let stop = stop.clone();
        std::thread::spawn(move || relay.run(|| stop.load(Ordering::Relaxed)))
    };
    let (got, sent) = load(listen, server, rate, seconds);
    stop.store(true, Ordering::Relaxed);
    let report = r.join().map_err(|_| "the relay thread panicked".to_string())??;
    Ok((got, sent, report))
}

/// Measures the relay for `seconds` per case; `shaped` is the shaped case's link rate.
pub fn run(seconds: f64, shaped: Bitrate) -> Result<RelayBench, String> {
    let mut b = RelayBench { shaped_rate: shaped, ..RelayBench::default() };
    let probe = Some(Bitrate::bps(10_000_000));
    let direct = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = direct.local_addr().map_err(|e| e.to_string())?;
    b.direct_owd_us = quantiles_us(&load(addr, direct, probe, seconds).0);
    let (got, _, _) = through_relay("10 Gbit/s", probe, seconds)?;
    b.relay_owd_us = quantiles_us(&got);
    let (got, sent, report) = through_relay("10 Gbit/s", None, seconds)?;
    let span = match (got.first, got.last) {
        (Some(a), Some(z)) if z > a => (z - a).as_secs_f64(),
        _ => seconds,
    };
    b.unshaped_pps = got.packets as f64 / span;
    b.unshaped_bps = got.bytes as f64 * 8.0 / span;
    b.unshaped_sent_read_forwarded = (sent, report.counters.received[0], report.counters.forwarded[0]);
    b.relay_forwarded_pps = report.counters.forwarded[0] as f64 / seconds;
    b.relay_pps_per_cpu_s = report.counters.forwarded[0] as f64 / report.cpu_s.max(1e-9);
    let load_rate = Bitrate::bps(shaped.as_bps() / 10 * 9);
    let (_, _, report) = through_relay(&format!("{} bit/s", shaped.as_bps()), Some(load_rate), seconds)?;
    let l = &report.lateness;
    b.shaped_lateness_us = (l.value_at_quantile(0.5) as f64 * 1e-3, l.value_at_quantile(0.99) as f64 * 1e-3);
    Ok(b)
}
