//! The UDP relay (`lowlat emulate SCENARIO --listen ADDR --forward ADDR`): datagrams that reach
//! `listen` cross the scenario's forward path (access up, bottleneck, egress down) and leave
//! towards `forward`; the answers `forward` sends back cross the reverse path to the client that
//! spoke last. The payloads wait beside the links; the links see lowlat packets of the datagrams'
//! sizes, so queues, AQMs, traces, loss and jitter act exactly as in the simulator.
//!
//! Bad input never stops the relay: empty, truncated or oversized datagrams are counted as
//! malformed and dropped, datagrams on the server side from anyone but `forward` as unexpected,
//! and payloads beyond a memory budget as overflow. The run ends at the scenario's duration (or
//! `duration`), or when the caller's `should_stop` says so (Ctrl-C), and reports what the links
//! and the real packets measured in the simulator's results contract.

use crate::clock::{precise_timers, wait_readable, WallClock, SPIN_NS};
use crate::network::Network;
use crate::pcap::PcapWriter;
use hdrhistogram::Histogram;
use lowlat_core::{Bytes, Duration, FlowId, Packet, PacketKind, Time};
use lowlat_net::middlebox::Direction;
use lowlat_sim::results::{
    link_results, Column, FlowSummary, RunResult, Stats, Summary, Table, LOWLAT_VERSION,
};
use lowlat_sim::traffic::FlowMetrics;
use lowlat_sim::Scenario;
use std::collections::VecDeque;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::time::SystemTime;

/// Datagrams taken per `recvmmsg` call.
const BATCH: usize = 32;
/// How often the relay asks its caller whether to stop.
const STOP_CHECK: Duration = Duration(50_000_000);
/// Socket buffers the relay asks for (the kernel may grant less).
const SOCKET_BUFFER_BYTES: libc::c_int = 4 << 20;
/// Recycled payload buffers kept at most, and the largest one kept.
const FREE_BUFFERS: usize = 1024;
const FREE_BUFFER_MAX: usize = 16 * 1024;

/// How the relay runs.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// Where clients send (e.g. `127.0.0.1:5000`; port 0: any free port, see [`Relay::listen_addr`]).
    pub listen: SocketAddr,
    /// Where their datagrams go, and the only address answers are accepted from.
    pub forward: SocketAddr,
    /// How long to run; `None`: the scenario's duration.
    pub duration: Option<Duration>,
    /// The scenario flow whose access and egress links the relayed traffic crosses (default: the
    /// first flow).
    pub flow: Option<String>,
    /// Write every forwarded datagram here, as it leaves the emulated path.
    pub pcap: Option<PathBuf>,
    /// Larger datagrams are malformed (at most 65 535).
    pub max_datagram: usize,
    /// Bytes added to each datagram's size on the emulated links (28: count IPv4 and UDP headers).
    pub overhead: u32,
    /// Payload bytes held per direction at most (queued or propagating); more are dropped as
    /// overflow.
    pub buffer_bytes: usize,
}

impl RelayConfig {
    /// Defaults: the scenario's duration and first flow, no pcap, datagrams up to 65 507 bytes
    /// counted by their payload size, 64 MiB of payloads per direction.
    pub fn new(listen: SocketAddr, forward: SocketAddr) -> RelayConfig {
        RelayConfig {
            listen,
            forward,
            duration: None,
            flow: None,
            pcap: None,
            max_datagram: 65_507,
            overhead: 0,
            buffer_bytes: 64 << 20,
        }
    }
}

/// What the relay counted, per direction (`[forward, reverse]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayCounters {
    /// Datagrams read from the sockets.
    pub received: [u64; 2],
    /// Datagrams that left the emulated path and were sent on.
    pub forwarded: [u64; 2],
    /// Empty, truncated or oversized datagrams, dropped.
    pub malformed: [u64; 2],
    /// Payloads refused because the direction's buffer budget was full.
    pub overflow: [u64; 2],
    /// Datagrams on the server side from an address other than `forward`, dropped.
    pub unexpected: u64,
    /// Answers from the server before any client spoke (nowhere to send them), dropped.
    pub no_client: u64,
    /// Sends the kernel refused (full socket buffer, unreachable port).
    pub send_errors: u64,
    /// Datagrams still inside the emulated links when the run ended.
    pub in_flight: [u64; 2],
    /// Feedback datagrams the middlebox (Zhuge) wrote and sent to the client.
    pub assist_feedback: u64,
}

/// The results of a relay run.
#[derive(Debug)]
pub struct RelayReport {
    /// The simulator's results contract, measured on the real packets.
    pub result: RunResult,
    /// What the relay counted.
    pub counters: RelayCounters,
    /// How late the relay woke for a link's departure, ns (the timer error of the emulation).
    pub lateness: Histogram<u64>,
    /// Wall seconds the relay ran.
    pub elapsed_s: f64,
    /// CPU seconds the relay's thread used.
    pub cpu_s: f64,
}

/// CPU time this thread has used, seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

impl RelayReport {
    /// `summary.json`: the simulator's summary plus a `relay` object with the counters and the
    /// wake-up lateness.
    pub fn summary_json(&self) -> String {
        let mut v = serde_json::to_value(&self.result.summary).expect("the summary holds only plain data");
        let c = &self.counters;
        let us =
            |q: f64| (!self.lateness.is_empty()).then(|| self.lateness.value_at_quantile(q) as f64 * 1e-3);
        v["relay"] = serde_json::json!({
            "received": c.received, "forwarded": c.forwarded, "malformed": c.malformed,
            "overflow": c.overflow, "unexpected": c.unexpected, "no_client": c.no_client,
            "send_errors": c.send_errors, "in_flight": c.in_flight, "cpu_s": self.cpu_s,
            "assist_feedback": c.assist_feedback,
            "timer_lateness_us": { "p50": us(0.5), "p99": us(0.99), "max": us(1.0) },
        });
        serde_json::to_string_pretty(&v).expect("plain data")
    }
}

/// What Zhuge did, as the simulator reports it.
fn zhuge_summary(any: &dyn std::any::Any) -> Option<lowlat_sim::results::AssistSummary> {
    let z = any.downcast_ref::<lowlat_assist::Zhuge>()?;
    let log = z.predictions();
    let n = log.len();
    let err_ms = |r: &lowlat_assist::PredictionRecord| {
        (r.predicted.as_nanos() as f64 - r.actual.as_nanos() as f64).abs() * 1e-6
    };
    Some(lowlat_sim::results::AssistSummary {
        name: "zhuge".into(),
        predictions: n as u64,
        prediction_mae_ms: (n > 0).then(|| log.iter().map(err_ms).sum::<f64>() / n as f64),
        predictions_within_10ms: (n > 0)
            .then(|| log.iter().filter(|r| err_ms(r) <= 10.0).count() as f64 / n as f64),
        dropped_client_feedback: z.dropped_client_feedback(),
    })
}

/// Payloads of one direction waiting for their packets to leave the links, in packet-id order
/// (links never reorder, so a packet leaving means every older one still held was dropped).
#[derive(Debug)]
pub(crate) struct PayloadStore {
    held: VecDeque<(u64, Vec<u8>)>,
    free: Vec<Vec<u8>>,
    bytes: usize,
    budget: usize,
}

impl PayloadStore {
    pub(crate) fn new(budget: usize) -> PayloadStore {
        PayloadStore { held: VecDeque::with_capacity(1024), free: Vec::new(), bytes: 0, budget }
    }

    pub(crate) fn push(&mut self, id: u64, data: &[u8]) -> bool {
        if self.bytes + data.len() > self.budget {
            return false;
        }
        let mut b = self.free.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(data);
        self.bytes += b.len();
        self.held.push_back((id, b));
        true
    }

    pub(crate) fn take(&mut self, id: u64) -> Option<Vec<u8>> {
        while let Some(&(front, _)) = self.held.front() {
            if front > id {
                return None;
            }
            let (_, b) = self.held.pop_front().expect("front exists");
            self.bytes -= b.len();
            if front == id {
                return Some(b);
            }
            self.recycle(b); // dropped inside the links
        }
        None
    }

    pub(crate) fn recycle(&mut self, b: Vec<u8>) {
        if self.free.len() < FREE_BUFFERS && b.capacity() <= FREE_BUFFER_MAX {
            self.free.push(b);
        }
    }
}

/// Buffers for one `recvmmsg` call.
struct RecvBatch {
    cap: usize,
    /// Control-message space per datagram, for its kernel receive time (u64s for alignment).
    ctrl: Vec<[u64; 8]>,
    bufs: Vec<u8>,
    iovs: Vec<libc::iovec>,
    addrs: Vec<libc::sockaddr_storage>,
    hdrs: Vec<libc::mmsghdr>,
}

impl RecvBatch {
    fn new(cap: usize) -> RecvBatch {
        // SAFETY: sockaddr_storage and mmsghdr are plain C structs for which all-zero is valid.
        let (addr, hdr) = unsafe { (zeroed::<libc::sockaddr_storage>(), zeroed::<libc::mmsghdr>()) };
        RecvBatch {
            cap,
            ctrl: vec![[0; 8]; BATCH],
            bufs: vec![0; cap * BATCH],
            iovs: vec![libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH],
            addrs: vec![addr; BATCH],
            hdrs: vec![hdr; BATCH],
        }
    }

    /// Reads up to [`BATCH`] datagrams without blocking; returns how many.
    fn recv(&mut self, fd: RawFd) -> usize {
        for i in 0..BATCH {
            self.iovs[i].iov_base = self.bufs[i * self.cap..].as_mut_ptr().cast();
            self.iovs[i].iov_len = self.cap;
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = self.ctrl[i].as_mut_ptr().cast();
            h.msg_controllen = size_of::<[u64; 8]>() as _;
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
        // SAFETY: every header points at a buffer, an iovec and an address slot owned by `self`,
        // sized as declared, and alive for the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        n.max(0) as usize
    }

    /// When the kernel received datagram `i` of the last call (Unix ns), if it said
    /// (`SO_TIMESTAMPNS`).
    fn kernel_time_unix_ns(&self, i: usize) -> Option<u64> {
        let h = &self.hdrs[i].msg_hdr;
        // SAFETY: the header's control buffer was filled by recvmmsg and its length set by it;
        // the CMSG macros walk only within it.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                    return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        None
    }

    /// Datagram `i` of the last call: its sender, its bytes, and whether it was cut short.
    fn get(&self, i: usize) -> (Option<SocketAddr>, &[u8], bool) {
        let h = &self.hdrs[i];
        let len = (h.msg_len as usize).min(self.cap);
        let truncated = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        (sockaddr(&self.addrs[i]), &self.bufs[i * self.cap..i * self.cap + len], truncated)
    }
}

/// Datagrams waiting for one `sendmmsg` call.
#[derive(Default)]
struct SendBatch {
    bufs: Vec<Vec<u8>>,
    dsts: Vec<(libc::sockaddr_storage, libc::socklen_t)>,
}

impl SendBatch {
    /// Adds a datagram; true when the batch is full.
    fn push(&mut self, payload: Vec<u8>, dst: SocketAddr) -> bool {
        self.bufs.push(payload);
        self.dsts.push(to_sockaddr(dst));
        self.bufs.len() >= BATCH
    }

    /// Sends the batch on `fd`; returns how many datagrams the kernel refused (they are dropped,
    /// as a full socket buffer drops them).
    fn flush(&mut self, fd: RawFd) -> u64 {
        let n = self.bufs.len();
        if n == 0 {
            return 0;
        }
        let mut iovs: [libc::iovec; BATCH] =
            [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
        // SAFETY: mmsghdr is a plain C struct for which all-zero is valid.
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
        for i in 0..n {
            iovs[i].iov_base = self.bufs[i].as_mut_ptr().cast();
            iovs[i].iov_len = self.bufs[i].len();
            let h = &mut hdrs[i].msg_hdr;
            h.msg_name = (&mut self.dsts[i].0 as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = self.dsts[i].1;
            h.msg_iov = &mut iovs[i];
            h.msg_iovlen = 1;
        }
        let mut refused = 0;
        let mut done = 0;
        while done < n {
            // SAFETY: headers `done..n` point at buffers, iovecs and addresses alive for the call.
            let r = unsafe {
                libc::sendmmsg(fd, hdrs[done..].as_mut_ptr(), (n - done) as libc::c_uint, libc::MSG_DONTWAIT)
            };
            if r <= 0 {
                // The first remaining datagram was refused (full buffer, unreachable): skip it.
                refused += 1;
                done += 1;
            } else {
                done += r as usize;
            }
        }
        self.dsts.clear();
        refused
    }
}

fn to_sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut s: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large and aligned enough for a sockaddr_in.
            let sin = unsafe { &mut *(&mut s as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut s as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_flowinfo = v6.flowinfo();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            sin6.sin6_scope_id = v6.scope_id();
            size_of::<libc::sockaddr_in6>()
        }
    };
    (s, len as libc::socklen_t)
}

fn sockaddr(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match s.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in, which it is large enough for.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Asks the kernel for 4 MiB socket buffers (a burst of datagrams waits there, not dropped).
pub fn bigger_buffers(sock: &UdpSocket) {
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        let v = SOCKET_BUFFER_BYTES;
        // SAFETY: setsockopt reads one c_int from a valid pointer; failure is harmless.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// Asks the kernel to stamp each received datagram with its arrival time, so a relay busy
/// elsewhere still knows when a datagram really arrived.
fn kernel_timestamps(sock: &UdpSocket) {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads one c_int from a valid pointer; failure leaves stamps off.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// A relay, bound and ready to run.
pub struct Relay {
    cfg: RelayConfig,
    scenario: Scenario,
    net: Network,
    client_sock: UdpSocket,
    server_sock: UdpSocket,
    client: Option<SocketAddr>,
    stores: [PayloadStore; 2],
    metrics: [FlowMetrics; 2],
    first_in: [Option<Time>; 2],
    last_in: [Option<Time>; 2],
    seq: [u64; 2],
    /// Whether a middlebox sits at the bottleneck (forward datagrams must then be RTP).
    assisted: bool,
    /// The last transport-wide sequence number seen, unwrapped.
    transport_seq: Option<u64>,
    next_id: u64,
    counters: RelayCounters,
    lateness: Histogram<u64>,
    pcap: Option<PcapWriter>,
    wakes: u64,
    /// Datagrams leaving towards the server (0) and the client (1), sent together.
    sends: [SendBatch; 2],
}

impl Relay {
    /// Builds the scenario's paths and binds the sockets. Errors name what is wrong.
    pub fn bind(scenario: Scenario, cfg: RelayConfig) -> Result<Relay, String> {
        if cfg.max_datagram == 0 || cfg.max_datagram > 65_535 {
            return Err(format!("max datagram: got {}, expected 1 to 65535 bytes", cfg.max_datagram));
        }
        let net = Network::from_scenario(&scenario, cfg.flow.as_deref())?;
        let assisted = net.links().first().is_some_and(|l| l.middlebox().is_some());
        let client_sock =
            UdpSocket::bind(cfg.listen).map_err(|e| format!("--listen {}: cannot bind: {e}", cfg.listen))?;
        let local: IpAddr = match cfg.forward.ip() {
            IpAddr::V4(ip) if ip.is_loopback() => Ipv4Addr::LOCALHOST.into(),
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(ip) if ip.is_loopback() => Ipv6Addr::LOCALHOST.into(),
            IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        let server_sock =
            UdpSocket::bind((local, 0)).map_err(|e| format!("cannot bind the server side: {e}"))?;
        for s in [&client_sock, &server_sock] {
            s.set_nonblocking(true).map_err(|e| format!("cannot make a socket non-blocking: {e}"))?;
            bigger_buffers(s);
            kernel_timestamps(s);
        }
        let bin = scenario.bin;
        Ok(Relay {
            stores: [PayloadStore::new(cfg.buffer_bytes), PayloadStore::new(cfg.buffer_bytes)],
            cfg,
            scenario,
            net,
            client_sock,
            server_sock,
            client: None,
            metrics: [FlowMetrics::new(bin), FlowMetrics::new(bin)],
            first_in: [None; 2],
            last_in: [None; 2],
            seq: [0; 2],
            assisted,
            transport_seq: None,
            next_id: 0,
            counters: RelayCounters::default(),
            lateness: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("static bounds are valid"),
            pcap: None,
            wakes: 0,
            sends: [SendBatch::default(), SendBatch::default()],
        })
    }

    /// The address clients send to (the bound port when `listen` asked for port 0).
    pub fn listen_addr(&self) -> SocketAddr {
        self.client_sock.local_addr().unwrap_or(self.cfg.listen)
    }

    /// The address the relay sends to the server from.
    pub fn server_side_addr(&self) -> SocketAddr {
        self.server_sock.local_addr().unwrap_or(self.cfg.forward)
    }

    /// Runs until the duration ends or `should_stop` returns true (asked every 50 ms).
    pub fn run(mut self, mut should_stop: impl FnMut() -> bool) -> Result<RelayReport, String> {
        precise_timers();
        let cpu_start = thread_cpu_s();
        let unix = SystemTime::now();
        let clock = WallClock::start();
        let unix_at_zero_ns = unix.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        // The latest instant handed to the links: arrivals are never stamped before it.
        let mut net_now = Time::ZERO;
        if let Some(p) = &self.cfg.pcap {
            self.pcap = Some(
                PcapWriter::create(p, unix)
                    .map_err(|e| format!("--pcap {}: cannot create: {e}", p.display()))?,
            );
        }
        let end = Time::ZERO + self.cfg.duration.unwrap_or(self.scenario.duration);
        let fds = [self.client_sock.as_raw_fd(), self.server_sock.as_raw_fd()];
        let cap = (self.cfg.max_datagram + 1).min(65_536);
        let mut batches = [RecvBatch::new(cap), RecvBatch::new(cap)];
        let mut next_check = Time::ZERO + STOP_CHECK;
        let mut now = clock.now();
        while now < end {
            if now >= next_check {
                if should_stop() {
                    break;
                }
                next_check = now + STOP_CHECK;
            }
            if let Some(due) = self.net.poll_timeout().filter(|&t| t <= now) {
                self.wakes += 1;
                net_now = net_now.max(now);
                self.net.handle_timeout(now);
                let mut sent = false;
                while let Some((d, pkt)) = self.net.poll_output() {
                    self.emit(d, pkt, &clock);
                    sent = true;
                }
                self.flush(0);
                self.flush(1);
                self.drain_site(now);
                if sent {
                    self.lateness.saturating_record((now - due).as_nanos().max(1));
                }
            }
            let mut got = 0;
            for (d, batch) in batches.iter_mut().enumerate() {
                // A few batches at most, so a flood cannot starve the links' departures.
                for _ in 0..4 {
                    let n = batch.recv(fds[d]);
                    let at = clock.now();
                    for i in 0..n {
                        // The kernel's arrival time, on the relay's clock, within what the links
                        // already saw and now.
                        let stamped = batch
                            .kernel_time_unix_ns(i)
                            .map_or(at, |ns| Time(ns.saturating_sub(unix_at_zero_ns)))
                            .clamp(net_now, at.max(net_now));
                        net_now = stamped;
                        let (src, data, truncated) = batch.get(i);
                        self.ingress(d, stamped, src, data, truncated);
                    }
                    got += n;
                    if n < BATCH {
                        break;
                    }
                }
            }
            now = clock.now();
            if got > 0 {
                continue;
            }
            let deadline = self.net.poll_timeout().unwrap_or(end).min(end).min(next_check);
            if deadline <= now {
                continue;
            }
            let left = (deadline - now).as_nanos();
            if left > SPIN_NS {
                wait_readable(&fds, Some(left - SPIN_NS));
            } else {
                while clock.now() < deadline {
                    std::hint::spin_loop();
                }
            }
            now = clock.now();
        }
        let stopped = clock.now().min(end).max(Time(1));
        if let Some(p) = &mut self.pcap {
            p.flush().map_err(|e| format!("--pcap: cannot write: {e}"))?;
        }
        let mut report = self.report(stopped);
        report.cpu_s = thread_cpu_s() - cpu_start;
        Ok(report)
    }

    /// A datagram read from side `d` (0: the client's, 1: the server's) at `now`.
    fn ingress(&mut self, d: usize, now: Time, src: Option<SocketAddr>, data: &[u8], truncated: bool) {
        self.counters.received[d] += 1;
        if d == 1 && src != Some(self.cfg.forward) {
            self.counters.unexpected += 1;
            return;
        }
        if data.is_empty() || truncated || data.len() > self.cfg.max_datagram {
            self.counters.malformed[d] += 1;
            return;
        }
        // A middlebox at the bottleneck reads the RTP header's transport-wide sequence number.
        let mut transport_seq = None;
        if d == 0 && self.assisted {
            match lowlat_wire::RtpHeader::decode(data, lowlat_wire::rtp::DEFAULT_TRANSPORT_SEQ_ID) {
                Ok((h, _, _)) if h.transport_seq.is_some() => transport_seq = h.transport_seq,
                _ => {
                    self.counters.malformed[d] += 1;
                    return;
                }
            }
        }
        if d == 0 {
            self.client = src;
        } else if self.client.is_none() {
            self.counters.no_client += 1;
            return;
        }
        let id = self.next_id;
        if !self.stores[d].push(id, data) {
            self.counters.overflow[d] += 1;
            return;
        }
        self.next_id += 1;
        let size = Bytes(data.len() as u64 + u64::from(self.cfg.overhead));
        // With a middlebox, the packet's sequence number is its real transport-wide one (what an
        // AP reads from the RTP header extension); the relay's own count rides in `app`.
        let seq = match transport_seq {
            Some(s16) => {
                let prev = self.transport_seq.unwrap_or(u64::from(s16));
                let seq = (prev as i64 + i64::from(s16.wrapping_sub(prev as u16) as i16)).max(0) as u64;
                self.transport_seq = Some(prev.max(seq));
                seq
            }
            None => self.seq[d],
        };
        let mut pkt = Packet::new(id, FlowId(self.net.flow_index()), size, seq, now);
        pkt.app = self.seq[d];
        self.seq[d] += 1;
        pkt.kind = if d == 0 { PacketKind::Data } else { PacketKind::Feedback };
        self.metrics[d].on_sent(now, size.0);
        self.first_in[d].get_or_insert(now);
        self.last_in[d] = Some(now);
        self.net.handle_input(now, pkt);
        self.drain_site(now);
    }

    /// Frees what the middlebox took from the reverse path and sends the feedback it wrote to
    /// the client, from the relay's listening socket (the AP speaks for the receiver).
    fn drain_site(&mut self, now: Time) {
        while let Some(id) = self.net.poll_taken() {
            if let Some(b) = self.stores[1].take(id) {
                self.stores[1].recycle(b);
            }
        }
        while let Some(bytes) = self.net.poll_assist_feedback() {
            let Some(client) = self.client else { continue };
            if self.client_sock.send_to(&bytes, client).is_err() {
                self.counters.send_errors += 1;
            }
            self.counters.assist_feedback += 1;
            if let Some(p) = &mut self.pcap {
                let _ = p.write(now.as_nanos(), self.cfg.forward, client, &bytes);
            }
        }
    }

    /// A packet left the emulated path: its payload goes out of the other side.
    fn emit(&mut self, dir: Direction, pkt: Packet, clock: &WallClock) {
        let d = usize::from(dir == Direction::Reverse);
        // Invariant: every packet in the links has its payload held (pushed before input).
        let Some(payload) = self.stores[d].take(pkt.id) else { return };
        let (src, dst) = match (d, self.client) {
            (0, c) => (c, Some(self.cfg.forward)),
            (_, c) => (Some(self.cfg.forward), c),
        };
        let now = clock.now();
        self.counters.forwarded[d] += 1;
        self.metrics[d].on_received(now, pkt.app, pkt.size as u64, pkt.sent_at);
        if let (Some(p), Some(src), Some(dst)) = (&mut self.pcap, src, dst) {
            // A failing disk must not stop the relay; the error shows as a short pcap.
            let _ = p.write(now.as_nanos(), src, dst, &payload);
        }
        match dst {
            Some(dst) => {
                if self.sends[d].push(payload, dst) {
                    self.flush(d);
                }
            }
            None => self.stores[d].recycle(payload),
        }
    }

    /// Sends what direction `d` has batched, in one `sendmmsg` call per [`BATCH`].
    fn flush(&mut self, d: usize) {
        let fd = if d == 0 { self.server_sock.as_raw_fd() } else { self.client_sock.as_raw_fd() };
        self.counters.send_errors += self.sends[d].flush(fd);
        for b in self.sends[d].bufs.drain(..) {
            self.stores[d].recycle(b);
        }
    }

    fn report(mut self, end: Time) -> RelayReport {
        self.net.settle(end);
        let sc = &self.scenario;
        let bin = sc.bin;
        let bin_ns = bin.as_nanos().max(1);
        let nbins = end.as_nanos().div_ceil(bin_ns) as usize;
        let bin_s = bin.as_secs_f64();
        let base = self.cfg.flow.clone().or_else(|| sc.flows.first().map(|f| f.id.clone()));
        let ids = match base {
            Some(b) => [b.clone(), format!("{b}.reverse")],
            None => ["forward".to_string(), "reverse".to_string()],
        };
        let reverse_delay = |d: usize| -> Duration {
            // The propagation delay back to the sender of direction d: the other direction's links.
            let other = if d == 0 { Direction::Reverse } else { Direction::Forward };
            self.net.path_delay(other)
        };
        let mut flows = Vec::new();
        let (mut f_id, mut f_t, mut f_send, mut f_recv, mut f_owd) = (vec![], vec![], vec![], vec![], vec![]);
        let mut counters = self.counters;
        for (d, m) in self.metrics.iter().enumerate() {
            let start = self.first_in[d].unwrap_or(Time::ZERO);
            let rx_end = m.last_rx.max(self.last_in[d]).unwrap_or(end).min(end);
            let span = rx_end.saturating_since(start).as_secs_f64();
            let thr = if span > 0.0 { m.rx_bytes as f64 * 8.0 / span / 1e3 } else { 0.0 };
            let could_arrive = m.max_seq.map_or(0, |s| s + 1);
            let owd_hist = m.owd.histogram();
            let owd = Stats::from_ns(&owd_hist, m.owd_sum_ns, Some(m.owd_max_ns));
            let shift = reverse_delay(d).as_millis_f64();
            let add = |v: Option<f64>| v.map(|x| x + shift);
            let limit_ns = (200e6 - reverse_delay(d).as_nanos() as f64).max(0.0) as u64;
            let over = m.owd.len() - owd_hist.count_between(0, limit_ns).min(m.owd.len());
            counters.in_flight[d] =
                self.net.packets_inside(if d == 0 { Direction::Forward } else { Direction::Reverse }) as u64;
            flows.push(FlowSummary {
                id: ids[d].clone(),
                kind: "udp-relay".into(),
                cc: "none".into(),
                start_s: start.as_secs_f64(),
                end_s: end.as_secs_f64(),
                throughput_kbps: thr,
                goodput_kbps: thr,
                loss_ratio: if could_arrive > 0 { m.lost() as f64 / could_arrive as f64 } else { 0.0 },
                owd_ms: owd,
                rtt_ms: Stats::default(),
                packets_sent: m.sent_packets,
                packets_received: m.rx_packets,
                frame_delay_ms: None,
                fps_mean: None,
                ratio_rtt_over_200ms: None,
                ratio_frame_delay_over_400ms: None,
                ratio_fps_below_10: None,
                ce_reported: None,
                retransmissions: None,
                recovered: None,
                net_rtt_ms: Stats {
                    mean: add(owd.mean),
                    p50: add(owd.p50),
                    p90: add(owd.p90),
                    p95: add(owd.p95),
                    p99: add(owd.p99),
                    max: add(owd.max),
                },
                ratio_net_rtt_over_200ms: if m.owd.is_empty() {
                    0.0
                } else {
                    over as f64 / m.owd.len() as f64
                },
                transfers: None,
                completion_ms: None,
                connections: None,
            });
            for i in 0..nbins {
                let b = m.bins.get(i).copied().unwrap_or_default();
                f_id.push(ids[d].clone());
                f_t.push(i as f64 * bin_s);
                f_send.push(b.tx_bytes as f64 * 8.0 / bin_s / 1e3);
                f_recv.push(b.rx_bytes as f64 * 8.0 / bin_s / 1e3);
                f_owd.push(if b.rx_packets > 0 {
                    b.owd_sum_ns as f64 / b.rx_packets as f64 * 1e-6
                } else {
                    f64::NAN
                });
            }
        }
        let (links, link_series) = link_results(self.net.links(), self.net.link_names(), end, bin);
        let mut warnings = sc.warnings.clone();
        warnings.push(format!(
            "emulated on the wall clock: {} datagrams relayed, {} malformed, {} unexpected, {} overflow",
            counters.forwarded[0] + counters.forwarded[1],
            counters.malformed[0] + counters.malformed[1],
            counters.unexpected,
            counters.overflow[0] + counters.overflow[1]
        ));
        let nan = vec![f64::NAN; f_id.len()];
        let zeros = vec![0.0; f_id.len()];
        let col = |n: &str, v: Vec<f64>| (n.to_string(), Column::F64(v));
        let elapsed_s = end.as_secs_f64();
        RelayReport {
            result: RunResult {
                summary: Summary {
                    lowlat_version: LOWLAT_VERSION.into(),
                    scenario: sc.name.clone(),
                    seed: sc.seed,
                    sim_duration_s: elapsed_s,
                    wall_s: elapsed_s,
                    events: self.wakes + counters.received[0] + counters.received[1],
                    flows,
                    links,
                    assist: self
                        .net
                        .links()
                        .first()
                        .and_then(|l| l.middlebox()?.as_any())
                        .and_then(zhuge_summary),
                    warnings,
                },
                flow_series: Table {
                    columns: vec![
                        ("flow".into(), Column::Str(f_id)),
                        col("t_s", f_t),
                        col("send_kbps", f_send),
                        col("recv_kbps", f_recv),
                        col("owd_ms", f_owd),
                        col("frame_delay_ms", nan),
                        col("frames", zeros),
                    ],
                },
                link_series,
                predictions: Table::default(),
                frames: Table::default(),
                sender_rtt: Table::default(),
            },
            counters,
            lateness: self.lateness,
            elapsed_s,
            cpu_s: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_hands_back_payloads_and_frees_the_dropped_ones() {
        let mut s = PayloadStore::new(10);
        assert!(s.push(1, &[1, 2, 3]));
        assert!(s.push(2, &[4, 5, 6]));
        assert!(s.push(5, &[7, 8, 9]));
        assert!(!s.push(6, &[0, 0]), "over the budget");
        assert_eq!(s.take(2).as_deref(), Some(&[4u8, 5, 6][..]));
        assert_eq!(s.bytes, 3, "packet 1 was dropped in the links: freed");
        assert_eq!(s.take(3), None);
        assert_eq!(s.take(5).as_deref(), Some(&[7u8, 8, 9][..]));
        assert_eq!(s.bytes, 0);
    }
}
