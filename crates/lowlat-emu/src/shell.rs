//! The link shell (`lowlat shell SCENARIO -- CMD...`, the mahimahi idea with lowlat's links): a
//! command runs in a network namespace whose only route leaves through a TUN device; this module
//! pumps the IP packets read from that TUN through the scenario's forward path to a second TUN in
//! the caller's namespace, and the answers back through the reverse path. The IP packets are the
//! datagrams: the links see their full size (IP header included).
//!
//! Only traffic between the two tunnel addresses crosses: a packet inside the namespace to any
//! other address, or one from the host side that is not for the namespace, is counted as
//! unexpected and dropped, so nothing reaches a non-local address (there is no NAT). The caller
//! (the Python CLI) creates the namespace, configures the addresses and runs the command;
//! [`open_tun`] opens a TUN device in a given namespace.

use crate::clock::{precise_timers, wait_readable, WallClock, SPIN_NS};
use crate::network::{Network, Parse};
use crate::pcap::PcapWriter;
use crate::relay::PayloadStore;
use hdrhistogram::Histogram;
use lowlat_core::{Bytes, Duration, FlowId, Packet, PacketKind, Time};
use lowlat_net::middlebox::Direction;
use lowlat_sim::results::link_results;
use lowlat_sim::Scenario;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// How often the pump asks its caller whether to stop (the command exited, Ctrl-C).
const STOP_CHECK: Duration = Duration(20_000_000);
/// Packets read per descriptor per turn at most, so a flood cannot starve departures.
const READS_PER_TURN: usize = 64;
/// The largest packet a TUN hands over (its MTU is 1500; this is generous).
const MAX_PACKET: usize = 65_536;
/// `TUNSETIFF` (`_IOW('T', 202, int)`), the ioctl that attaches a descriptor to a TUN device.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// `struct ifreq` as `TUNSETIFF` reads it: the name and the flags.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Opens TUN device `name` (created if absent; IPv4/IPv6 packets without the packet-info
/// prefix), non-blocking, in the network namespace at `netns` (a `/run/netns/NAME` file) or in
/// this process's own. Errors are one line, naming what was refused.
pub fn open_tun(name: &str, netns: Option<&str>) -> Result<OwnedFd, String> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(format!("TUN name {name:?}: expected 1 to 15 characters"));
    }
    match netns {
        None => open_tun_here(name),
        Some(path) => {
            // setns changes only the calling thread's namespace: do it on a thread of its own.
            let (name, path) = (name.to_string(), path.to_string());
            std::thread::spawn(move || {
                let ns = std::fs::File::open(&path).map_err(|e| format!("network namespace {path}: {e}"))?;
                // SAFETY: setns takes a valid descriptor (kept open by `ns`) and a flag.
                if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(format!(
                        "cannot enter network namespace {path}: {} (needs root or CAP_SYS_ADMIN)",
                        std::io::Error::last_os_error()
                    ));
                }
                open_tun_here(&name)
            })
            .join()
            .map_err(|_| "the thread opening the TUN device panicked".to_string())?
        }
    }
}

fn open_tun_here(name: &str) -> Result<OwnedFd, String> {
    // SAFETY: open with a NUL-terminated path and flags.
    let fd =
        unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!(
            "cannot open /dev/net/tun: {} (TUN devices need root or CAP_NET_ADMIN)",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req =
        IfReq { name: [0; libc::IFNAMSIZ], flags: (libc::IFF_TUN | libc::IFF_NO_PI) as _, _pad: [0; 22] };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads one ifreq-sized struct from a valid pointer.
    if unsafe { libc::ioctl(fd, TUNSETIFF as _, &mut req as *mut IfReq) } != 0 {
        return Err(format!(
            "cannot create TUN device {name}: {} (needs root or CAP_NET_ADMIN)",
            std::io::Error::last_os_error()
        ));
    }
    Ok(owned)
}

/// What the pump counted, per direction (`[forward (from the command), reverse (to it)]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShellCounters {
    /// Packets read from the TUN devices.
    pub received: [u64; 2],
    /// Packets that left the emulated path and were written to the other TUN.
    pub forwarded: [u64; 2],
    /// Packets not IPv4 between the two tunnel addresses (IPv6 chatter, other destinations),
    /// dropped.
    pub unexpected: [u64; 2],
    /// Packets refused because the direction's buffer budget was full.
    pub overflow: [u64; 2],
    /// Writes the kernel refused.
    pub write_errors: u64,
    /// Packets the middlebox wrote for the command (feedback, ACKs, signals), as IPv4/UDP.
    pub assist_feedback: u64,
    /// Reverse packets the middlebox held for a while (out-of-band Zhuge).
    pub assist_held: u64,
}

/// The flow id of packets the middlebox must not act on (not the assisted flow's UDP datagrams):
/// no scenario flow has it, so every middlebox passes them.
const UNASSISTED: u32 = u32::MAX;

/// The two TUN devices and the scenario's paths between them.
pub struct ShellPump {
    scenario: Scenario,
    net: Network,
    /// `[inside the namespace, the caller's side]`.
    fds: [OwnedFd; 2],
    /// `[the command's address, the host side's]`.
    addrs: [Ipv4Addr; 2],
    stores: [PayloadStore; 2],
    counters: ShellCounters,
    /// One-way delay through the emulated path per direction, ns.
    owd: [Histogram<u64>; 2],
    seq: [u64; 2],
    next_id: u64,
    pcap: Option<PcapWriter>,
    /// What the middlebox reads in the assisted flow's UDP payloads (`Any`: no middlebox).
    parse: Parse,
    /// The assisted flow's UDP ports `(the command's, the host's)`, learned from its data.
    ports: Option<(u16, u16)>,
    /// The last transport-wide sequence number or packet number seen, unwrapped.
    transport_seq: Option<u64>,
    /// Reverse packets the middlebox keeps until it releases them.
    held: std::collections::VecDeque<(u64, Vec<u8>)>,
    /// A packet the middlebox wrote, headers and all.
    out: Vec<u8>,
}

/// What a shell run measured.
pub struct ShellReport {
    /// `summary.json`: counters, one-way delay per direction, the links' summaries.
    pub summary_json: String,
    /// The counters.
    pub counters: ShellCounters,
}

impl ShellPump {
    /// Pumps between `inside` (the TUN in the command's namespace, address `inside_addr`) and
    /// `outside` (the TUN on the caller's side, address `host_addr`) through `scenario`'s paths.
    /// The scenario's `assist` runs on the first flow's UDP datagrams as in the relay (RTP for
    /// Zhuge in-band and SCONE, lowlat's transport for FastAck and Zhuge out-of-band); what the
    /// middlebox writes goes to the command as IPv4/UDP from the host's side of the flow.
    pub fn new(
        scenario: Scenario,
        inside: OwnedFd,
        outside: OwnedFd,
        inside_addr: Ipv4Addr,
        host_addr: Ipv4Addr,
    ) -> Result<ShellPump, String> {
        // The command's traffic crosses the first flow's links.
        let first = scenario.flows.first().map(|f| f.id.clone());
        let net = Network::from_scenario(&scenario, first.as_deref())?;
        let parse = net.parse(net.flow_index());
        let hist = || Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("static bounds are valid");
        Ok(ShellPump {
            scenario,
            net,
            fds: [inside, outside],
            addrs: [inside_addr, host_addr],
            stores: [PayloadStore::new(64 << 20), PayloadStore::new(64 << 20)],
            counters: ShellCounters::default(),
            owd: [hist(), hist()],
            seq: [0; 2],
            next_id: 0,
            pcap: None,
            parse,
            ports: None,
            transport_seq: None,
            held: std::collections::VecDeque::new(),
            out: Vec::with_capacity(2048),
        })
    }

    /// Also writes every packet that crosses, as it leaves the emulated path, to a pcap at
    /// `path` (raw IPv4 records).
    pub fn with_pcap(mut self, path: &std::path::Path) -> Result<ShellPump, String> {
        let w = PcapWriter::create(path, std::time::SystemTime::now())
            .map_err(|e| format!("--pcap {}: cannot create: {e}", path.display()))?;
        self.pcap = Some(w);
        Ok(self)
    }

    /// Runs until `should_stop` says so (asked every 20 ms).
    pub fn run(mut self, mut should_stop: impl FnMut() -> bool) -> ShellReport {
        precise_timers();
        if let Some(p) = &mut self.pcap {
            // The records' times count from the pump's clock zero.
            p.set_epoch(std::time::SystemTime::now());
        }
        let clock = WallClock::start();
        let raw: [RawFd; 2] = [self.fds[0].as_raw_fd(), self.fds[1].as_raw_fd()];
        let mut buf = vec![0u8; MAX_PACKET];
        let mut next_check = Time::ZERO;
        let mut now = clock.now();
        loop {
            if now >= next_check {
                if should_stop() {
                    break;
                }
                next_check = now + STOP_CHECK;
            }
            if self.net.poll_timeout().is_some_and(|t| t <= now) {
                self.net.handle_timeout(now);
                while let Some((dir, pkt)) = self.net.poll_output() {
                    self.emit(dir, pkt, clock.now());
                }
                self.drain_site(now);
            }
            let mut got = 0;
            for (d, &fd) in raw.iter().enumerate() {
                for _ in 0..READS_PER_TURN {
                    // SAFETY: reads at most buf.len() bytes into a buffer we own.
                    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                    if n <= 0 {
                        break;
                    }
                    got += 1;
                    self.ingress(d, clock.now(), &buf[..n as usize]);
                }
            }
            now = clock.now();
            if got > 0 {
                continue;
            }
            let deadline = self.net.poll_timeout().map_or(next_check, |t| t.min(next_check));
            if deadline > now {
                let left = (deadline - now).as_nanos();
                if left > SPIN_NS {
                    wait_readable(&raw, Some(left - SPIN_NS));
                } else {
                    while clock.now() < deadline {
                        std::hint::spin_loop();
                    }
                }
            }
            now = clock.now();
        }
        self.report(clock.now().max(Time(1)))
    }

    /// A packet read on side `d` (0: inside, the command's; 1: the host's) at `now`.
    fn ingress(&mut self, d: usize, now: Time, data: &[u8]) {
        self.counters.received[d] += 1;
        // IPv4 only, and only between the two tunnel addresses, in the right direction.
        let (src, dst) = (self.addrs[d], self.addrs[1 - d]);
        let ok = data.len() >= 20
            && data[0] >> 4 == 4
            && data[12..16] == src.octets()
            && data[16..20] == dst.octets();
        if !ok {
            self.counters.unexpected[d] += 1;
            return;
        }
        let id = self.next_id;
        if !self.stores[d].push(id, data) {
            self.counters.overflow[d] += 1;
            return;
        }
        self.next_id += 1;
        let (flow, seq, not_cc) = self.classify(d, data);
        let mut pkt =
            Packet::new(id, FlowId(flow), Bytes(data.len() as u64), seq.unwrap_or(self.seq[d]), now);
        pkt.app = self.seq[d];
        if not_cc {
            pkt.app |= lowlat_core::APP_NON_CC_FEEDBACK;
        }
        self.seq[d] += 1;
        pkt.kind = if d == 0 { PacketKind::Data } else { PacketKind::Feedback };
        self.net.handle_input(now, pkt);
        self.drain_site(now);
    }

    /// Which flow a packet from side `d` is for the middlebox (the scenario's first flow for the
    /// assisted flow's UDP datagrams, [`UNASSISTED`] for anything else), its sequence number as
    /// the middlebox reads it, and whether it is a NACK (not congestion feedback).
    fn classify(&mut self, d: usize, ip: &[u8]) -> (u32, Option<u64>, bool) {
        let flow = self.net.flow_index();
        if self.parse == Parse::Any {
            return (flow, None, false);
        }
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let Some(udp) = ip.get(ihl..).filter(|u| ip[9] == 17 && ihl >= 20 && u.len() >= 8) else {
            return (UNASSISTED, None, false);
        };
        let ports = (u16::from_be_bytes([udp[0], udp[1]]), u16::from_be_bytes([udp[2], udp[3]]));
        let payload = &udp[8..];
        if d == 1 {
            // The host's answers on the assisted flow's ports are its feedback.
            let ours = self.ports.is_some_and(|(cmd, host)| ports == (host, cmd));
            let nack =
                payload.len() >= 12 && payload[1] == lowlat_wire::rtcp::PT_RTPFB && payload[0] & 0x1f == 1;
            return if ours { (flow, None, nack) } else { (UNASSISTED, None, false) };
        }
        let seq = match self.parse {
            Parse::Rtp => lowlat_wire::RtpHeader::decode(payload, lowlat_wire::rtp::DEFAULT_TRANSPORT_SEQ_ID)
                .ok()
                .and_then(|(h, _, _)| h.transport_seq)
                .map(|s16| {
                    let prev = self.transport_seq.unwrap_or(u64::from(s16));
                    (prev as i64 + i64::from(s16.wrapping_sub(prev as u16) as i16)).max(0) as u64
                }),
            Parse::Transport => crate::quic::peek_pn(payload)
                .filter(|_| crate::quic::is_data(payload))
                .map(|pn| crate::quic::expand_pn(self.transport_seq, pn)),
            Parse::Any => None,
        };
        match seq {
            Some(s) => {
                self.transport_seq = Some(self.transport_seq.map_or(s, |p| p.max(s)));
                self.ports = Some(ports);
                (flow, Some(s), false)
            }
            // DNS, ICMP, another port: the middlebox lets it be.
            None => (UNASSISTED, None, false),
        }
    }

    /// Frees or keeps what the middlebox took from the reverse path, and writes what it built to
    /// the command as IPv4/UDP from the host's side of the assisted flow.
    fn drain_site(&mut self, now: Time) {
        while let Some((id, kept)) = self.net.poll_taken() {
            if let Some(b) = self.stores[1].take(id) {
                if kept {
                    self.counters.assist_held += 1;
                    self.held.push_back((id, b));
                } else {
                    self.stores[1].recycle(b);
                }
            }
        }
        while let Some((_, bytes)) = self.net.poll_assist_feedback() {
            let Some((cmd_port, host_port)) = self.ports else { continue };
            let len = bytes.len().min(MAX_PACKET - crate::pcap::HEADERS);
            self.out.clear();
            self.out.extend_from_slice(&crate::pcap::ipv4_udp_headers(
                std::net::SocketAddrV4::new(self.addrs[1], host_port),
                std::net::SocketAddrV4::new(self.addrs[0], cmd_port),
                len,
                self.counters.assist_feedback as u16,
            ));
            self.out.extend_from_slice(&bytes[..len]);
            self.counters.assist_feedback += 1;
            if let Some(p) = &mut self.pcap {
                let _ = p.write_packet(now.as_nanos(), &self.out);
            }
            // SAFETY: writes out.len() bytes from a live buffer.
            let n = unsafe { libc::write(self.fds[0].as_raw_fd(), self.out.as_ptr().cast(), self.out.len()) };
            if n < 0 {
                self.counters.write_errors += 1;
            }
        }
    }

    /// A packet left the emulated path: it is written to the other side's TUN.
    fn emit(&mut self, dir: Direction, pkt: Packet, now: Time) {
        let d = usize::from(dir == Direction::Reverse);
        // A packet the middlebox kept and released is beside the store (a handful at most).
        let kept = if d == 1 { self.held.iter().position(|h| h.0 == pkt.id) } else { None };
        let payload = match kept {
            Some(i) => self.held.remove(i).map(|h| h.1),
            None => self.stores[d].take(pkt.id),
        };
        let Some(payload) = payload else { return };
        self.counters.forwarded[d] += 1;
        if let Some(p) = &mut self.pcap {
            // A failing disk must not stop the pump; the error shows as a short pcap.
            let _ = p.write_packet(now.as_nanos(), &payload);
        }
        self.owd[d].saturating_record(now.saturating_since(pkt.sent_at).as_nanos().max(1));
        let fd = self.fds[1 - d].as_raw_fd();
        // SAFETY: writes payload.len() bytes from a live buffer.
        let n = unsafe { libc::write(fd, payload.as_ptr().cast(), payload.len()) };
        if n < 0 {
            self.counters.write_errors += 1;
        }
        self.stores[d].recycle(payload);
    }

    fn report(mut self, end: Time) -> ShellReport {
        if let Some(p) = &mut self.pcap {
            let _ = p.flush();
        }
        let (links, _) = link_results(self.net.links(), self.net.link_names(), end, self.scenario.bin);
        let ms = |h: &Histogram<u64>, q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 * 1e-6);
        let owd = |h: &Histogram<u64>| serde_json::json!({ "p50": ms(h, 0.5), "p95": ms(h, 0.95), "p99": ms(h, 0.99), "max": ms(h, 1.0) });
        let c = &self.counters;
        let v = serde_json::json!({
            "scenario": self.scenario.name,
            "seed": self.scenario.seed,
            "wall_s": end.as_secs_f64(),
            "shell": {
                "inside_addr": self.addrs[0].to_string(), "host_addr": self.addrs[1].to_string(),
                "received": c.received, "forwarded": c.forwarded, "unexpected": c.unexpected,
                "overflow": c.overflow, "write_errors": c.write_errors,
                "assist_feedback": c.assist_feedback, "assist_held": c.assist_held,
                "owd_ms": { "forward": owd(&self.owd[0]), "reverse": owd(&self.owd[1]) },
            },
            "links": links,
        });
        ShellReport {
            summary_json: serde_json::to_string_pretty(&v).expect("plain data"),
            counters: self.counters,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_sim::Format;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    /// A datagram socket pair: each write is read whole, one per read, as from a TUN device.
    /// The first end (the pump's) is non-blocking, as a TUN descriptor is.
    fn pair() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: socketpair writes two descriptors into a valid array.
        assert_eq!(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just created and are owned by nobody else.
        let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on a valid descriptor.
        unsafe { libc::fcntl(a.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        (a, b)
    }

    fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[12..16].copy_from_slice(&src.octets());
        p[16..20].copy_from_slice(&dst.octets());
        p
    }

    fn send(fd: &OwnedFd, p: &[u8]) {
        // SAFETY: writes p.len() bytes from a live buffer.
        assert_eq!(unsafe { libc::write(fd.as_raw_fd(), p.as_ptr().cast(), p.len()) }, p.len() as isize);
    }

    /// Blocks until a packet arrives on `fd` (at most 2 s); its bytes.
    fn recv(fd: &OwnedFd) -> Vec<u8> {
        assert!(wait_readable(&[fd.as_raw_fd()], Some(2_000_000_000)), "nothing arrived");
        let mut b = vec![0u8; 2048];
        // SAFETY: reads at most b.len() bytes into a live buffer.
        let n = unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), b.len()) };
        b.truncate(n.max(0) as usize);
        b
    }

    #[test]
    fn only_ipv4_between_the_tunnel_addresses_crosses_with_the_paths_delays() {
        let text =
            "name = \"t\"\nduration = \"5 s\"\n[bottleneck]\nrate = \"10 Mbit/s\"\ndelay = \"15 ms\"\n\
                    [reverse]\nrate = \"10 Mbit/s\"\ndelay = \"5 ms\"\n\
                    [[flows]]\nid = \"f\"\nkind = \"cbr\"\nrate = \"1 Mbit/s\"\n";
        let sc = Scenario::parse(text, Format::Toml, "t.toml", std::path::Path::new(".")).unwrap();
        let (inside, app) = pair();
        let (outside, host) = pair();
        let (me, peer) = (Ipv4Addr::new(10, 251, 0, 2), Ipv4Addr::new(10, 251, 0, 1));
        let pump = ShellPump::new(sc, inside, outside, me, peer).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let runner = std::thread::spawn(move || pump.run(|| flag.load(Ordering::Relaxed)));

        send(&app, &ipv4(me, Ipv4Addr::new(192, 0, 2, 9), 100)); // elsewhere: never leaves
        send(&app, &[0x60; 60]); // IPv6
        let t = Instant::now();
        let out = ipv4(me, peer, 1250);
        send(&app, &out);
        assert_eq!(recv(&host), out, "the packet crosses unchanged");
        // 1250 B at 10 Mbit/s (1 ms) plus 15 ms.
        let fwd = t.elapsed().as_secs_f64() * 1e3;
        assert!(fwd >= 16.0, "forward {fwd} ms");
        send(&host, &ipv4(Ipv4Addr::new(192, 0, 2, 9), me, 100)); // not from the host side
        let t = Instant::now();
        let back = ipv4(peer, me, 125);
        send(&host, &back);
        assert_eq!(recv(&app), back);
        let rev = t.elapsed().as_secs_f64() * 1e3;
        assert!(rev >= 5.0, "reverse {rev} ms");
        stop.store(true, Ordering::Relaxed);
        let report = runner.join().unwrap();
        let c = report.counters;
        assert_eq!((c.received, c.unexpected, c.forwarded), ([3, 2], [2, 1], [1, 1]));
        assert!(report.summary_json.contains("\"owd_ms\""));
    }

    /// An IPv4/UDP packet from `src` to `dst` carrying `payload`.
    fn udp(src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16), payload: &[u8]) -> Vec<u8> {
        let h = crate::pcap::ipv4_udp_headers(
            std::net::SocketAddrV4::new(src.0, src.1),
            std::net::SocketAddrV4::new(dst.0, dst.1),
            payload.len(),
            1,
        );
        [&h[..], payload].concat()
    }

    #[test]
    fn fastack_in_the_shell_acknowledges_the_commands_transport_packets() {
        let text =
            "name = \"t\"\nduration = \"5 s\"\n[bottleneck]\nrate = \"10 Mbit/s\"\ndelay = \"15 ms\"\n\
                    assist = \"fastack\"\n[reverse]\nrate = \"10 Mbit/s\"\ndelay = \"5 ms\"\n\
                    [[flows]]\nid = \"f\"\nkind = \"bulk\"\ncc = \"cubic\"\n";
        let sc = Scenario::parse(text, Format::Toml, "t.toml", std::path::Path::new(".")).unwrap();
        let (inside, app) = pair();
        let (outside, host) = pair();
        let (me, peer) = (Ipv4Addr::new(10, 251, 0, 2), Ipv4Addr::new(10, 251, 0, 1));
        let pump = ShellPump::new(sc, inside, outside, me, peer).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let runner = std::thread::spawn(move || pump.run(|| flag.load(Ordering::Relaxed)));
        let mut data = Vec::new();
        for pn in 0..4 {
            crate::quic::encode_data(pn, 0, 0, 1200, &mut data);
            send(&app, &udp((me, 4000), (peer, 5000), &data));
        }
        // Not the flow's: passes untouched, and the AP does not count it.
        send(&app, &udp((me, 4001), (peer, 53), b"dns?"));
        for _ in 0..5 {
            recv(&host);
        }
        // The AP's ACKs reach the command from the host's side of the flow, before any answer.
        let mut acked = Vec::new();
        while acked.len() < 4 {
            let p = recv(&app);
            assert_eq!((&p[12..16], &p[16..20]), (&peer.octets()[..], &me.octets()[..]));
            assert_eq!(
                (u16::from_be_bytes([p[20], p[21]]), u16::from_be_bytes([p[22], p[23]])),
                (5000, 4000)
            );
            let Ok(crate::quic::Datagram::Ack { frame, .. }) = crate::quic::decode(&p[28..]) else {
                panic!("not an ACK packet")
            };
            acked = (0..4).filter(|&pn| frame.contains(pn)).collect();
        }
        // The client's own ACK is dropped at the AP; other answers pass.
        let mut ack = Vec::new();
        let frame = lowlat_transport::AckFrame {
            ranges: lowlat_transport::AckRanges::from_slice(&[(0, 3)]),
            ..Default::default()
        };
        crate::quic::encode_ack(0, &frame, &mut ack);
        send(&host, &udp((peer, 5000), (me, 4000), &ack));
        let answer = udp((peer, 53), (me, 4001), b"dns!");
        send(&host, &answer);
        assert_eq!(recv(&app), answer);
        stop.store(true, Ordering::Relaxed);
        let c = runner.join().unwrap().counters;
        assert_eq!((c.forwarded, c.unexpected), ([5, 1], [0, 0]), "{c:?}");
        assert!(c.assist_feedback >= 2, "{c:?}");
    }

    #[test]
    fn assistance_and_bad_tun_names_are_one_line_errors() {
        assert!(open_tun("", None).unwrap_err().contains("1 to 15"));
        assert!(open_tun("a-very-long-tun-name", None).unwrap_err().contains("1 to 15"));
        let text =
            "name = \"t\"\nduration = \"5 s\"\n[bottleneck]\nrate = \"10 Mbit/s\"\ndelay = \"15 ms\"\n\
                    assist = \"fastack\"\n[[flows]]\nid = \"f\"\nkind = \"cbr\"\nrate = \"1 Mbit/s\"\n";
        let sc = Scenario::parse(text, Format::Toml, "t.toml", std::path::Path::new(".")).unwrap();
        let ((a, _), (b, _)) = (pair(), pair());
        let err = ShellPump::new(sc, a, b, Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST).err().unwrap();
        assert!(err.contains("assist") && err.contains("bulk flow") && !err.contains('\n'), "{err}");
    }
}
