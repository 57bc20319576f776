//! Writes a pcap of RTP packets with the transport-wide sequence extension and the two feedback
//! formats, for checking the codecs against Wireshark's dissectors:
//!
//! ```sh
//! cargo run -p lowlat-wire --example write_pcap -- /tmp/lowlat-wire.pcap
//! tshark -r /tmp/lowlat-wire.pcap -V -d udp.port==5004,rtp -d udp.port==5005,rtcp
//! ```

fn main() -> std::io::Result<()> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "lowlat-wire.pcap".into());
    std::fs::write(&path, lowlat_wire::pcap::sample_capture())?;
    eprintln!("wrote {path}: 20 RTP packets (ports 5004), 1 transport-cc and 1 RFC 8888 (port 5005)");
    Ok(())
}
