//! A flood of 100 000 random datagrams at the relay (and strangers at its server side): it keeps
//! running, counts every datagram in exactly one bucket, and its memory stays flat (issue 16).
//! Its own test binary: the resident-memory readings see no other test's allocations.

use lowlat_core::rng::stream;
use lowlat_emu::relay::{Relay, RelayConfig};
use lowlat_sim::{Format, Scenario};
use rand::Rng;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s.split_whitespace().nth(1).and_then(|x| x.parse().ok()).unwrap_or(0);
    pages * 4
}

#[test]
fn a_flood_of_random_datagrams_is_counted_and_memory_stays_flat() {
    let text =
        "name = \"flood\"\nduration = \"60 s\"\n[bottleneck]\nrate = \"20 Mbit/s\"\ndelay = \"5 ms\"\n\
                queue = { kind = \"droptail\", limit = \"50 ms\" }\n\
                [[flows]]\nid = \"x\"\nkind = \"cbr\"\nrate = \"1 Mbit/s\"\npacket_size = \"1000 B\"\n";
    let sc = Scenario::parse(text, Format::Toml, "flood.toml", std::path::Path::new(".")).unwrap();
    // The server never reads: what reaches it is dropped by its kernel, as a dead peer would.
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut cfg = RelayConfig::new("127.0.0.1:0".parse().unwrap(), server.local_addr().unwrap());
    cfg.max_datagram = 1500;
    let relay = Relay::bind(sc, cfg).unwrap();
    let (listen, server_side) = (relay.listen_addr(), relay.server_side_addr());
    let stop = Arc::new(AtomicBool::new(false));
    let relay_thread = {
        let stop = stop.clone();
        std::thread::spawn(move || relay.run(|| stop.load(Ordering::Relaxed)).expect("relay runs"))
    };
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut rng = stream(7, "flood");
    let mut buf = vec![0u8; 2001];
    let mut rss = Vec::new();
    for i in 0..100_000u32 {
        let n = rng.random_range(0..=2000usize);
        rng.fill(&mut buf[..n]);
        let _ = client.send_to(&buf[..n], listen);
        if i % 10 == 0 {
            let _ = stranger.send_to(&buf[..n.min(100)], server_side);
        }
        if i % 2_000 == 0 {
            // Let the relay keep up (a kernel drop is not what this test is about).
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if i == 20_000 || i == 99_999 {
            rss.push(rss_kib());
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let report = relay_thread.join().unwrap();
    let c = report.counters;
    let s: serde_json::Value = serde_json::from_str(&report.summary_json()).unwrap();
    let drops = s["links"][0]["drops"].as_u64().unwrap();
    eprintln!("{c:?}; bottleneck drops {drops}; rss {rss:?} KiB");
    assert!(c.received[0] >= 90_000, "the relay read {} of 100 000", c.received[0]);
    // Sizes 0..=2000 uniformly with a 1500-byte limit: 501 of 2001 are malformed (25 %).
    let bad = c.malformed[0] as f64 / c.received[0] as f64;
    assert!((0.23..0.27).contains(&bad), "malformed share {bad}");
    assert_eq!(c.unexpected, c.received[1], "every server-side datagram came from a stranger");
    assert!(c.unexpected > 5_000);
    assert_eq!(
        c.received[0],
        c.malformed[0] + c.overflow[0] + c.forwarded[0] + drops + c.in_flight[0],
        "each datagram is in exactly one bucket"
    );
    assert!(c.forwarded[0] > 0 && drops > 0, "the 20 Mbit/s link carried some and dropped the rest");
    assert!(rss[1] < rss[0] + 16 * 1024, "resident memory grew from {} to {} KiB", rss[0], rss[1]);
}
