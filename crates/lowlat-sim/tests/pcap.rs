//! `lowlat run --pcap`: the capture holds every packet the endpoints sent, and Wireshark reads it
//! without a malformed packet (runs when `tshark` is installed).

use lowlat_sim::{Format, Scenario, Simulation};
use std::path::Path;
use std::process::Command;

const SCENARIO: &str = r#"
duration = "4 s"
[bottleneck]
rate = "3 Mbit/s"
delay = "20 ms"
[[flows]]
id = "twcc"
kind = "rtp-video"
cc = "gcc"
[[flows]]
id = "ccfb"
kind = "rtp-video"
cc = "scream"
feedback_format = "rfc8888"
[[flows]]
id = "bulk"
kind = "bulk"
cc = "cubic"
start = "1 s"
[[flows]]
id = "cbr"
kind = "cbr"
rate = "100 kbit/s"
"#;

fn capture() -> (Vec<u8>, u64, u64) {
    let s = Scenario::parse(SCENARIO, Format::Toml, "<pcap>", Path::new(".")).unwrap();
    let mut sim = Simulation::new(s);
    sim.capture_pcap();
    sim.advance(sim.end());
    let pcap = sim.take_pcap().unwrap();
    let r = sim.finish();
    let sent: u64 = r.summary.flows.iter().map(|f| f.packets_sent).sum();
    let received: u64 = r.summary.flows.iter().map(|f| f.packets_received).sum();
    (pcap, sent, received)
}

/// Records in a pcap file (24-byte global header, 16-byte record headers).
fn records(pcap: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut i = 24;
    while i + 16 <= pcap.len() {
        let len = u32::from_le_bytes(pcap[i + 8..i + 12].try_into().unwrap()) as usize;
        out.push(&pcap[i + 16..i + 16 + len]);
        i += 16 + len;
    }
    out
}

#[test]
fn the_capture_holds_every_data_packet_with_its_size() {
    let (pcap, sent, _) = capture();
    let recs = records(&pcap);
    // Data packets plus feedback: at least every data packet the senders sent.
    assert!(recs.len() as u64 > sent, "{} records for {sent} data packets", recs.len());
    // Each record is a whole IPv4 packet whose total length field says its size.
    for r in &recs {
        assert_eq!(r[0], 0x45);
        assert_eq!(u16::from_be_bytes([r[2], r[3]]) as usize, r.len());
    }
    // Same scenario, same bytes.
    assert_eq!(capture().0, pcap);
}

#[test]
fn tshark_reads_the_capture_without_malformed_packets() {
    if Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("skipped: tshark is not installed");
        return;
    }
    let (pcap, _, _) = capture();
    let dir = std::env::temp_dir().join(format!("lowlat-sim-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.pcap");
    std::fs::write(&path, &pcap).unwrap();
    let mut args = vec!["-r".to_string(), path.to_str().unwrap().to_string(), "-V".into()];
    for k in 0..2 {
        args.extend(["-d".into(), format!("udp.port=={},rtp", 5004 + 2 * k)]);
        args.extend(["-d".into(), format!("udp.port=={},rtcp", 5005 + 2 * k)]);
    }
    let out = Command::new("tshark").args(&args).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for bad in ["Malformed", "[Expert Info (Error", "length check: Wrong", "Bogus"] {
        assert!(!text.contains(bad), "{bad:?} in tshark's reading");
    }
    for needle in [
        "Real-Time Transport Protocol",
        "RFC 5285 Header Extension (One-Byte Header)",
        "Transport-wide Congestion Control (Transport-cc) (15)",
        "RTCP frame length check: OK",
        "Src Port: 6002",
        "Src Port: 7003",
    ] {
        assert!(text.contains(needle), "missing {needle:?}");
    }
}
