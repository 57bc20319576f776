//! A minimal pcap writer (raw IPv4 link type), so packets can be inspected with Wireshark:
//! `tshark -r FILE -V -d udp.port==5004,rtp -d udp.port==5005,rtcp`.

/// pcap's LINKTYPE_RAW: each record starts with an IPv4 or IPv6 header.
const LINKTYPE_RAW: u32 = 101;

/// Builds a pcap file in memory.
#[derive(Clone, Debug)]
pub struct PcapWriter {
    bytes: Vec<u8>,
}

impl Default for PcapWriter {
    fn default() -> Self {
        PcapWriter::new()
    }
}

impl PcapWriter {
    /// An empty capture (the global header only).
    pub fn new() -> PcapWriter {
        let mut bytes = Vec::with_capacity(4096);
        bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&[0; 8]); // time zone, accuracy
        bytes.extend_from_slice(&65_535u32.to_le_bytes());
        bytes.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        PcapWriter { bytes }
    }

    /// Records a UDP datagram from 10.0.0.1 to 10.0.0.2 at `t_us` microseconds.
    pub fn udp(&mut self, t_us: u64, src_port: u16, dst_port: u16, payload: &[u8]) {
        self.udp_between(t_us, [10, 0, 0, 1], [10, 0, 0, 2], src_port, dst_port, payload);
    }

    /// Records a UDP datagram from `src` to `dst` at `t_us` microseconds (payloads beyond an
    /// IPv4 packet's 65 507 bytes are cut there).
    pub fn udp_between(
        &mut self,
        t_us: u64,
        src: [u8; 4],
        dst: [u8; 4],
        src_port: u16,
        dst_port: u16,
        payload: &[u8],
    ) {
        let payload = &payload[..payload.len().min(65_507)];
        let total = 20 + 8 + payload.len();
        let mut ip =
            [0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        let sum: u32 = (0..10).map(|i| u32::from(u16::from_be_bytes([ip[2 * i], ip[2 * i + 1]]))).sum();
        let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let len = total as u32;
        self.bytes.extend_from_slice(&((t_us / 1_000_000) as u32).to_le_bytes());
        self.bytes.extend_from_slice(&((t_us % 1_000_000) as u32).to_le_bytes());
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(&ip);
        self.bytes.extend_from_slice(&src_port.to_be_bytes());
        self.bytes.extend_from_slice(&dst_port.to_be_bytes());
        self.bytes.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        self.bytes.extend_from_slice(&[0, 0]); // no UDP checksum (optional over IPv4)
        self.bytes.extend_from_slice(payload);
    }

    /// The file's bytes.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// A sample capture: 20 RTP packets (port 5004, transport-wide sequence numbers 500-519 under
/// extension id 5, 5 ms apart from t = 1 s, every seventh lost), then the transport-cc feedback
/// and the RFC 8888 report (port 5005) for them at t = 1.2 s.
pub fn sample_capture() -> Vec<u8> {
    use crate::ccfb::compact_ntp;
    use crate::{CcfbBlock, CcfbMetric, CcfbReport, RtpHeader, TwccBuilder};
    let mut pcap = PcapWriter::new();
    let mut arrivals = Vec::new();
    for i in 0..20u16 {
        let h = RtpHeader {
            marker: i % 5 == 4,
            payload_type: 96,
            sequence_number: 1000 + i,
            timestamp: 90_000 + 3000 * u32::from(i / 5),
            ssrc: 0x1234_5678,
            csrcs: vec![],
            transport_seq: Some(500 + i),
        };
        let mut b = Vec::new();
        h.encode(5, &mut b).expect("a valid header");
        b.extend_from_slice(&[0u8; 100]);
        let t = 1_000_000 + 5_000 * u64::from(i);
        pcap.udp(t, 5004, 5004, &b);
        arrivals.push((i % 7 != 3).then_some(t as i64 + 40_000));
    }
    let mut fb = Vec::new();
    for f in TwccBuilder::new(0xaaaa_0001, 0x1234_5678).build(500, &arrivals) {
        f.encode(&mut fb).expect("built feedback encodes");
    }
    pcap.udp(1_200_000, 5005, 5005, &fb);
    let report_us = 1_200_000i64;
    let metrics = arrivals
        .iter()
        .map(|a| a.map_or(CcfbMetric::lost(), |a| CcfbMetric::received(report_us - a, 1)))
        .collect();
    let report = CcfbReport {
        sender_ssrc: 0xaaaa_0001,
        blocks: vec![CcfbBlock { media_ssrc: 0x1234_5678, begin_seq: 1000, metrics }],
        report_timestamp: compact_ntp(report_us),
    };
    let mut ccfb = Vec::new();
    report.encode(&mut ccfb).expect("a report encodes");
    pcap.udp(1_200_001, 5005, 5005, &ccfb);
    pcap.finish()
}
