//! Wireshark's dissectors read our bytes as we meant them (runs when `tshark` is installed;
//! Debian: `apt-get install tshark`).

use std::process::Command;

#[test]
fn tshark_dissects_rtp_extension_and_transport_cc() {
    if Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("skipped: tshark is not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("lowlat-wire-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sample.pcap");
    std::fs::write(&path, lowlat_wire::pcap::sample_capture()).unwrap();
    let out = Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-V", "-d", "udp.port==5004,rtp", "-d", "udp.port==5005,rtcp"])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // RTP: the one-byte extension with id 5 holding transport sequence number 500 (0x01f4).
    assert!(text.contains("RFC 5285 Header Extension (One-Byte Header)"), "{text}");
    assert!(text.contains("Extension Data: 01f4"), "{text}");
    // Transport-cc: the fields and the statuses as we encoded them (503, 510, 517 lost).
    for needle in [
        "Transport-wide Congestion Control (Transport-cc) (15)",
        "Base Sequence Number: 500",
        "Packet Status Count: 20",
        "Reference Time: 16",
        "| R | R | R | N | R | R | R | R | R | R | N | R | R | R |",
        "[seq: 500] 16.000000 ms",
        "[seq: 519] 5.000000 ms",
        "RTCP frame length check: OK - 44 bytes",
        // RFC 8888 (FMT 11) is not dissected by Wireshark 4.0, but its length must check out.
        "RTCP frame length check: OK - 60 bytes",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}
