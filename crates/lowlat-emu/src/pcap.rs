//! A pcap writer (the classic format with nanosecond timestamps, link type RAW: each record an
//! IPv4 or IPv6 packet, told apart by its version) for the datagrams the relay forwards: each is
//! written with the IPv4 or IPv6 and UDP headers it would carry on the emulated wire, so
//! Wireshark/tshark decode the payload (RTP, RTCP) by port.

use std::io::{self, BufWriter, Write};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Magic of a pcap file with nanosecond timestamps.
const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_RAW: each record starts with an IPv4 or an IPv6 header.
const LINKTYPE_RAW: u32 = 101;
/// IPv4 (20) + UDP (8) header bytes.
pub(crate) const HEADERS: usize = 28;
/// IPv6 (40) + UDP (8) header bytes.
const HEADERS_V6: usize = 48;

/// Writes datagrams to a pcap file.
#[derive(Debug)]
pub struct PcapWriter {
    out: BufWriter<std::fs::File>,
    /// Unix time of the relay's clock zero, ns.
    epoch_unix_ns: u128,
    ip_id: u16,
    /// Datagrams not written because one address is IPv4 and the other IPv6.
    pub skipped: u64,
}

impl PcapWriter {
    /// Creates `path`; record times are `epoch_unix` plus the relay's clock.
    pub fn create(path: &Path, epoch_unix: SystemTime) -> io::Result<PcapWriter> {
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        out.write_all(&MAGIC_NS.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&65_535u32.to_le_bytes())?;
        out.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        let epoch_unix_ns = epoch_unix.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        Ok(PcapWriter { out, epoch_unix_ns, ip_id: 0, skipped: 0 })
    }

    /// Records `payload` sent from `src` to `dst` at `at_ns` on the relay's clock.
    pub fn write(&mut self, at_ns: u64, src: SocketAddr, dst: SocketAddr, payload: &[u8]) -> io::Result<()> {
        let mut head = [0u8; HEADERS_V6];
        let (headers, payload) = match (src, dst) {
            (SocketAddr::V4(src), SocketAddr::V4(dst)) => {
                let payload = &payload[..payload.len().min(65_535 - HEADERS)];
                self.ip_id = self.ip_id.wrapping_add(1);
                head[..HEADERS].copy_from_slice(&ipv4_udp_headers(src, dst, payload.len(), self.ip_id));
                (&head[..HEADERS], payload)
            }
            (SocketAddr::V6(src), SocketAddr::V6(dst)) => {
                let payload = &payload[..payload.len().min(65_535 - 8)];
                head = ipv6_udp_headers(src, dst, payload);
                (&head[..], payload)
            }
            _ => {
                self.skipped += 1;
                return Ok(());
            }
        };
        let total = headers.len() + payload.len();
        let t = self.epoch_unix_ns + u128::from(at_ns);
        self.out.write_all(&((t / 1_000_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&((t % 1_000_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&(total as u32).to_le_bytes())?;
        self.out.write_all(&(total as u32).to_le_bytes())?;
        self.out.write_all(headers)?;
        self.out.write_all(payload)
    }

    /// Makes record times count from `epoch_unix` (the caller's clock zero).
    pub fn set_epoch(&mut self, epoch_unix: SystemTime) {
        self.epoch_unix_ns = epoch_unix.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    }

    /// Records a whole IP packet (`lowlat shell`: what crossed between the TUN devices) at
    /// `at_ns` on the pump's clock, as it is.
    pub fn write_packet(&mut self, at_ns: u64, packet: &[u8]) -> io::Result<()> {
        let packet = &packet[..packet.len().min(65_535)];
        let t = self.epoch_unix_ns + u128::from(at_ns);
        self.out.write_all(&((t / 1_000_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&((t % 1_000_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&(packet.len() as u32).to_le_bytes())?;
        self.out.write_all(&(packet.len() as u32).to_le_bytes())?;
        self.out.write_all(packet)
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The IPv4 header (checksummed, TTL 64, don't fragment) and the UDP header (checksum 0: none,
/// which IPv4 allows) of a datagram of `len` payload bytes.
pub(crate) fn ipv4_udp_headers(src: SocketAddrV4, dst: SocketAddrV4, len: usize, id: u16) -> [u8; HEADERS] {
    let mut h = [0u8; HEADERS];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&((HEADERS + len) as u16).to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6] = 0x40;
    h[8] = 64;
    h[9] = 17;
    h[12..16].copy_from_slice(&src.ip().octets());
    h[16..20].copy_from_slice(&dst.ip().octets());
    let sum = h[..20].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum::<u32>();
    let folded = (sum & 0xffff) + (sum >> 16);
    let checksum = !(((folded & 0xffff) + (folded >> 16)) as u16);
    h[10..12].copy_from_slice(&checksum.to_be_bytes());
    h[20..22].copy_from_slice(&src.port().to_be_bytes());
    h[22..24].copy_from_slice(&dst.port().to_be_bytes());
    h[24..26].copy_from_slice(&((8 + len) as u16).to_be_bytes());
    h
}

/// The one's-complement sum of `bytes` as 16-bit words (a last odd byte padded with zero).
fn ones_sum(bytes: &[u8], mut sum: u64) -> u64 {
    let mut chunks = bytes.chunks_exact(2);
    for w in &mut chunks {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

/// The IPv6 header (hop limit 64, next header UDP) and the UDP header of a datagram carrying
/// `payload`, with its checksum over the pseudo-header (RFC 8200 §8.1: mandatory in IPv6).
fn ipv6_udp_headers(src: SocketAddrV6, dst: SocketAddrV6, payload: &[u8]) -> [u8; HEADERS_V6] {
    let mut h = [0u8; HEADERS_V6];
    let udp_len = (8 + payload.len()) as u16;
    h[0] = 0x60;
    h[4..6].copy_from_slice(&udp_len.to_be_bytes());
    h[6] = 17;
    h[7] = 64;
    h[8..24].copy_from_slice(&src.ip().octets());
    h[24..40].copy_from_slice(&dst.ip().octets());
    h[40..42].copy_from_slice(&src.port().to_be_bytes());
    h[42..44].copy_from_slice(&dst.port().to_be_bytes());
    h[44..46].copy_from_slice(&udp_len.to_be_bytes());
    // Pseudo-header: addresses, UDP length, next header; then the UDP header and payload.
    let mut sum = ones_sum(&h[8..40], u64::from(udp_len) + 17);
    sum = ones_sum(&h[40..46], sum);
    sum = ones_sum(payload, sum);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // A computed zero is sent as all ones (zero means "no checksum", not allowed in IPv6).
    let checksum = match !(sum as u16) {
        0 => 0xffff,
        c => c,
    };
    h[46..48].copy_from_slice(&checksum.to_be_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ip_header_checksums_to_zero_and_records_are_framed() {
        let h =
            ipv4_udp_headers("127.0.0.1:5000".parse().unwrap(), "127.0.0.2:6000".parse().unwrap(), 100, 7);
        let sum = h[..20].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum::<u32>();
        assert_eq!(((sum & 0xffff) + (sum >> 16)) as u16, 0xffff, "one's-complement sum of a valid header");
        assert_eq!(u16::from_be_bytes([h[2], h[3]]), 128);
        assert_eq!(u16::from_be_bytes([h[24], h[25]]), 108);

        let path = std::env::temp_dir().join(format!("lowlat-pcap-{}.pcap", std::process::id()));
        let mut w = PcapWriter::create(&path, UNIX_EPOCH).unwrap();
        w.write(1_500_000_000, "127.0.0.1:1".parse().unwrap(), "127.0.0.1:2".parse().unwrap(), &[1, 2, 3])
            .unwrap();
        w.write(0, "[::1]:1".parse().unwrap(), "[::1]:2".parse().unwrap(), &[1]).unwrap();
        w.write(0, "[::1]:1".parse().unwrap(), "127.0.0.1:2".parse().unwrap(), &[1]).unwrap();
        w.flush().unwrap();
        let b = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(b.len(), 24 + 16 + 31 + 16 + 49);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), LINKTYPE_RAW);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 500_000_000);
        let v6 = &b[24 + 16 + 31 + 16..];
        assert_eq!((v6[0] >> 4, v6[6], u16::from_be_bytes([v6[44], v6[45]])), (6, 17, 9));
        assert_eq!(w.skipped, 1, "mixed families are skipped");
    }

    #[test]
    fn the_ipv6_udp_checksum_verifies() {
        let src: SocketAddrV6 = "[2001:db8::1]:5004".parse().unwrap();
        let dst: SocketAddrV6 = "[2001:db8::2]:6000".parse().unwrap();
        for payload in [&b"abc"[..], &[0u8; 0][..], &[0xff; 101][..]] {
            let h = ipv6_udp_headers(src, dst, payload);
            // Summing the pseudo-header, the UDP header with its checksum and the payload gives
            // all ones.
            let udp_len = u64::from(u16::from_be_bytes([h[44], h[45]]));
            let mut sum = ones_sum(&h[8..40], udp_len + 17);
            sum = ones_sum(&h[40..48], sum);
            sum = ones_sum(payload, sum);
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            assert_eq!(sum, 0xffff, "payload of {} bytes", payload.len());
        }
    }
}
