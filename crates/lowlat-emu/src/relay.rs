//! The UDP relay (`lowlat emulate SCENARIO --listen ADDR --forward ADDR`): datagrams that reach
//! `listen` cross the scenario's forward path (access up, bottleneck, egress down) and leave
//! towards `forward`; the answers `forward` sends back cross the reverse path to their client.
//! Each source address is a client with its own socket towards `forward` (the answers to it come
//! back on that socket, as through a NAT) and the paths of one scenario flow: the `k`-th client
//! the `k`-th flow's (round robin beyond; [`RelayConfig::flow`] pins them all to one), all
//! sharing the bottleneck and the reverse link. The payloads wait beside the links; the links see lowlat packets of the datagrams'
//! sizes, so queues, AQMs, traces, loss and jitter act exactly as in the simulator.
//!
//! Bad input never stops the relay: empty, truncated or oversized datagrams are counted as
//! malformed and dropped, datagrams on the server side from anyone but `forward` as unexpected,
//! datagrams from clients beyond `max_clients` as refused, and payloads beyond a memory budget as
//! overflow. The per-datagram path allocates nothing (payload buffers are recycled; a new client
//! allocates its socket and buffers once). The run ends at the scenario's duration (or
//! `duration`), or when the caller's `should_stop` says so (Ctrl-C), and reports what the links
//! and the real packets measured in the simulator's results contract.

use crate::clock::{precise_timers, wait_readable, WallClock, SPIN_NS};
use crate::network::{Network, Parse};
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
    /// The scenario flow whose access and egress links every client crosses (default: the
    /// `k`-th client crosses the `k`-th flow's, round robin).
    pub flow: Option<String>,
    /// Write every forwarded datagram here, as it leaves the emulated path.
    pub pcap: Option<PathBuf>,
    /// Larger datagrams are malformed (at most 65 535).
    pub max_datagram: usize,
    /// Bytes added to each datagram's size on the emulated links (28: count IPv4 and UDP headers).
    pub overhead: u32,
    /// Payload bytes held per direction and client at most (queued or propagating); more are
    /// dropped as overflow.
    pub buffer_bytes: usize,
    /// Clients served at most (each new source address is a client); datagrams from more are
    /// refused.
    pub max_clients: usize,
}

impl RelayConfig {
    /// Defaults: the scenario's duration, every flow mapped, no pcap, datagrams up to 65 507
    /// bytes counted by their payload size, 64 MiB of payloads per direction and client, 64
    /// clients.
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
            max_clients: 64,
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
    /// Clients the relay took on (each with its own server-side socket and return path).
    pub clients: u64,
    /// Datagrams from clients beyond `max_clients` (or a second client for an assisted flow),
    /// dropped.
    pub refused: u64,
    /// Datagrams on the server side from an address other than `forward`, dropped.
    pub unexpected: u64,
    /// Answers from the server before any client spoke (nowhere to send them), dropped.
    pub no_client: u64,
    /// Sends the kernel refused (full socket buffer, unreachable port).
    pub send_errors: u64,
    /// Datagrams still inside the emulated links when the run ended.
    pub in_flight: [u64; 2],
    /// Feedback datagrams the middlebox wrote and sent to the client (Zhuge's transport-cc or
    /// RFC 8888, FastAck's ACK packets, SCONE signals).
    pub assist_feedback: u64,
    /// Reverse datagrams the middlebox held for a while (out-of-band Zhuge delaying ACKs).
    pub assist_held: u64,
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
            "clients": c.clients, "refused": c.refused,
            "send_errors": c.send_errors, "in_flight": c.in_flight, "cpu_s": self.cpu_s,
            "assist_feedback": c.assist_feedback, "assist_held": c.assist_held,
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

/// A forward datagram's sequence number as the middlebox reads it.
#[derive(Clone, Copy)]
enum Wide {
    /// RTP's 16-bit transport-wide sequence number.
    Rtp(u16),
    /// A transport packet number truncated to 32 bits.
    Transport(u32),
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

/// One client of the relay: its address, the socket it reaches the server from (so the server's
/// answers find their way back, as through a NAT), the scenario flow whose paths it crosses, and
/// what the relay measured for it.
struct Client {
    addr: SocketAddr,
    sock: UdpSocket,
    /// The scenario flow's index (the flow id its packets carry).
    flow: u32,
    /// What its forward datagrams must be for the middlebox.
    parse: Parse,
    stores: [PayloadStore; 2],
    metrics: [FlowMetrics; 2],
    first_in: [Option<Time>; 2],
    last_in: [Option<Time>; 2],
    seq: [u64; 2],
    /// The last transport-wide sequence number (RTP) or packet number (transport) seen, unwrapped.
    transport_seq: Option<u64>,
    /// Reverse payloads the middlebox keeps (out-of-band Zhuge holding ACKs) until it releases them.
    held: VecDeque<(u64, Vec<u8>)>,
    /// Datagrams leaving towards the server, sent together.
    sends: SendBatch,
}

/// Bits of a packet's `app` that hold the relay's own sequence number; the bits above hold the
/// client's index (below bit 62, which marks non-congestion-control feedback).
const SEQ_BITS: u32 = 40;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

/// One client's results to report: its name, scenario flow, and per direction its metrics,
/// first and last arrival.
type Entry<'a> = (String, u32, &'a [FlowMetrics; 2], [Option<Time>; 2], [Option<Time>; 2]);

/// A non-blocking, timestamping UDP socket on `local` for one client's side towards the server.
fn server_socket(local: IpAddr) -> Result<UdpSocket, String> {
    let s = UdpSocket::bind((local, 0)).map_err(|e| format!("cannot bind the server side: {e}"))?;
    s.set_nonblocking(true).map_err(|e| format!("cannot make a socket non-blocking: {e}"))?;
    bigger_buffers(&s);
    kernel_timestamps(&s);
    Ok(s)
}

/// A relay, bound and ready to run.
pub struct Relay {
    cfg: RelayConfig,
    scenario: Scenario,
    net: Network,
    client_sock: UdpSocket,
    /// The first client's server-side socket, bound before it arrives.
    spare_sock: Option<UdpSocket>,
    /// The address the server-side sockets bind to.
    local: IpAddr,
    clients: Vec<Client>,
    /// The scenario flows clients are mapped to, in order.
    mapped: Vec<u32>,
    next_id: u64,
    counters: RelayCounters,
    lateness: Histogram<u64>,
    pcap: Option<PcapWriter>,
    wakes: u64,
    /// Datagrams leaving towards the clients, sent together.
    back: SendBatch,
    /// The sockets to wait on: the listening one, then each client's.
    fds: Vec<RawFd>,
}

impl Relay {
    /// Builds the scenario's paths and binds the sockets. Errors name what is wrong.
    pub fn bind(scenario: Scenario, cfg: RelayConfig) -> Result<Relay, String> {
        if cfg.max_datagram == 0 || cfg.max_datagram > 65_535 {
            return Err(format!("max datagram: got {}, expected 1 to 65535 bytes", cfg.max_datagram));
        }
        let net = Network::from_scenario(&scenario, cfg.flow.as_deref())?;
        let client_sock =
            UdpSocket::bind(cfg.listen).map_err(|e| format!("--listen {}: cannot bind: {e}", cfg.listen))?;
        let local: IpAddr = match cfg.forward.ip() {
            IpAddr::V4(ip) if ip.is_loopback() => Ipv4Addr::LOCALHOST.into(),
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(ip) if ip.is_loopback() => Ipv6Addr::LOCALHOST.into(),
            IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        if cfg.max_clients == 0 || cfg.max_clients > 1 << (62 - SEQ_BITS) {
            return Err(format!(
                "max clients: got {}, expected 1 to {}",
                cfg.max_clients,
                1 << (62 - SEQ_BITS)
            ));
        }
        let server_sock = server_socket(local)?;
        client_sock.set_nonblocking(true).map_err(|e| format!("cannot make a socket non-blocking: {e}"))?;
        bigger_buffers(&client_sock);
        kernel_timestamps(&client_sock);
        let mapped = net.mapped_flows().collect();
        let fds = vec![client_sock.as_raw_fd()];
        Ok(Relay {
            cfg,
            scenario,
            net,
            client_sock,
            spare_sock: Some(server_sock),
            local,
            clients: Vec::new(),
            mapped,
            next_id: 0,
            counters: RelayCounters::default(),
            lateness: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("static bounds are valid"),
            pcap: None,
            wakes: 0,
            back: SendBatch::default(),
            fds,
        })
    }

    /// The client at `addr`, taken on if it is new and there is room: the `k`-th client crosses
    /// the `k`-th mapped flow's paths (round robin when there are more clients than flows, but
    /// an assisted flow carries one client only: its middlebox state is the flow's).
    fn client_for(&mut self, addr: SocketAddr) -> Option<usize> {
        if let Some(i) = self.clients.iter().position(|c| c.addr == addr) {
            return Some(i);
        }
        if self.clients.len() >= self.cfg.max_clients {
            return None;
        }
        let k = self.clients.len();
        let flow = self.mapped[k % self.mapped.len()];
        let parse = self.net.parse(flow);
        if parse != Parse::Any && self.clients.iter().any(|c| c.flow == flow) {
            return None;
        }
        let sock = match self.spare_sock.take() {
            Some(s) => s,
            None => server_socket(self.local).ok()?,
        };
        self.fds.push(sock.as_raw_fd());
        let bin = self.scenario.bin;
        let budget = self.cfg.buffer_bytes;
        self.clients.push(Client {
            addr,
            sock,
            flow,
            parse,
            stores: [PayloadStore::new(budget), PayloadStore::new(budget)],
            metrics: [FlowMetrics::new(bin), FlowMetrics::new(bin)],
            first_in: [None; 2],
            last_in: [None; 2],
            seq: [0; 2],
            transport_seq: None,
            held: VecDeque::new(),
            sends: SendBatch::default(),
        });
        self.counters.clients += 1;
        Some(k)
    }

    /// The address clients send to (the bound port when `listen` asked for port 0).
    pub fn listen_addr(&self) -> SocketAddr {
        self.client_sock.local_addr().unwrap_or(self.cfg.listen)
    }

    /// The address the relay sends the first client's datagrams to the server from.
    pub fn server_side_addr(&self) -> SocketAddr {
        let sock = self.spare_sock.as_ref().or(self.clients.first().map(|c| &c.sock));
        sock.and_then(|s| s.local_addr().ok()).unwrap_or(self.cfg.forward)
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
                self.flush_all();
                self.drain_site(now);
                if sent {
                    self.lateness.saturating_record((now - due).as_nanos().max(1));
                }
            }
            let mut got = 0;
            // The listening socket (side 0), then each client's server-side socket (side 1).
            let mut f = 0;
            while f < self.fds.len() {
                let (d, fd) = (usize::from(f > 0), self.fds[f]);
                // A few batches at most, so a flood cannot starve the links' departures.
                for _ in 0..4 {
                    let n = batches[d].recv(fd);
                    let at = clock.now();
                    for i in 0..n {
                        // The kernel's arrival time, on the relay's clock, within what the links
                        // already saw and now.
                        let stamped = batches[d]
                            .kernel_time_unix_ns(i)
                            .map_or(at, |ns| Time(ns.saturating_sub(unix_at_zero_ns)))
                            .clamp(net_now, at.max(net_now));
                        net_now = stamped;
                        let (src, data, truncated) = batches[d].get(i);
                        self.ingress(f, stamped, src, data, truncated);
                    }
                    got += n;
                    if n < BATCH {
                        break;
                    }
                }
                f += 1;
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
                wait_readable(&self.fds, Some(left - SPIN_NS));
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

    /// A datagram read at `now` on socket `f` of [`Relay::fds`]: 0, the listening one (a client's
    /// datagram, forward), else client `f - 1`'s server-side socket (an answer, reverse).
    fn ingress(&mut self, f: usize, now: Time, src: Option<SocketAddr>, data: &[u8], truncated: bool) {
        let d = usize::from(f > 0);
        self.counters.received[d] += 1;
        if d == 1 && src != Some(self.cfg.forward) {
            self.counters.unexpected += 1;
            return;
        }
        if data.is_empty() || truncated || data.len() > self.cfg.max_datagram {
            self.counters.malformed[d] += 1;
            return;
        }
        let k = if d == 0 {
            // Invariant: recvmmsg on a UDP socket names the sender.
            let Some(k) = src.and_then(|a| self.client_for(a)) else {
                self.counters.refused += 1;
                return;
            };
            k
        } else {
            f - 1
        };
        let c = &mut self.clients[k];
        // A middlebox at the bottleneck reads the RTP header's transport-wide sequence number,
        // or the transport packet's number.
        let mut transport_seq = None;
        if d == 0 {
            let seq = match c.parse {
                Parse::Any => Ok(None),
                Parse::Rtp => {
                    match lowlat_wire::RtpHeader::decode(data, lowlat_wire::rtp::DEFAULT_TRANSPORT_SEQ_ID) {
                        Ok((h, _, _)) if h.transport_seq.is_some() => Ok(h.transport_seq.map(Wide::Rtp)),
                        _ => Err(()),
                    }
                }
                Parse::Transport => match crate::quic::peek_pn(data) {
                    Some(pn) if crate::quic::is_data(data) => Ok(Some(Wide::Transport(pn))),
                    _ => Err(()),
                },
            };
            match seq {
                Ok(s) => transport_seq = s,
                Err(()) => {
                    self.counters.malformed[d] += 1;
                    return;
                }
            }
        }
        let id = self.next_id;
        if !c.stores[d].push(id, data) {
            self.counters.overflow[d] += 1;
            return;
        }
        self.next_id += 1;
        let size = Bytes(data.len() as u64 + u64::from(self.cfg.overhead));
        // With a middlebox, the packet's sequence number is its real transport-wide one (what an
        // AP reads from the RTP header extension) or its packet number; the relay's own count
        // rides in `app`, with the client's index.
        let seq = match transport_seq {
            Some(Wide::Rtp(s16)) => {
                let prev = c.transport_seq.unwrap_or(u64::from(s16));
                let seq = (prev as i64 + i64::from(s16.wrapping_sub(prev as u16) as i16)).max(0) as u64;
                c.transport_seq = Some(prev.max(seq));
                seq
            }
            Some(Wide::Transport(pn32)) => {
                let seq = crate::quic::expand_pn(c.transport_seq, pn32);
                c.transport_seq = Some(c.transport_seq.map_or(seq, |p| p.max(seq)));
                seq
            }
            None => c.seq[d],
        };
        let mut pkt = Packet::new(id, FlowId(c.flow), size, seq, now);
        pkt.app = ((k as u64) << SEQ_BITS) | (c.seq[d] & SEQ_MASK);
        // A Generic NACK (RTCP RTPFB, FMT 1) is not congestion feedback: Zhuge lets it pass.
        if d == 1
            && c.parse == Parse::Rtp
            && data.len() >= 12
            && data[1] == lowlat_wire::rtcp::PT_RTPFB
            && data[0] & 0x1f == 1
        {
            pkt.app |= lowlat_core::APP_NON_CC_FEEDBACK;
        }
        c.seq[d] += 1;
        pkt.kind = if d == 0 { PacketKind::Data } else { PacketKind::Feedback };
        c.metrics[d].on_sent(now, size.0);
        c.first_in[d].get_or_insert(now);
        c.last_in[d] = Some(now);
        self.net.handle_input(now, pkt);
        self.drain_site(now);
    }

    /// Frees what the middlebox took from the reverse path and sends the feedback it wrote to
    /// the flow's client, from the relay's listening socket (the AP speaks for the receiver).
    fn drain_site(&mut self, now: Time) {
        while let Some((id, kept)) = self.net.poll_taken() {
            // Reverse packets are taken rarely (the middlebox's verdicts): a binary search per
            // client finds the one whose store holds the id.
            for c in &mut self.clients {
                if c.stores[1].held.binary_search_by_key(&id, |h| h.0).is_ok() {
                    if let Some(b) = c.stores[1].take(id) {
                        if kept {
                            self.counters.assist_held += 1;
                            c.held.push_back((id, b));
                        } else {
                            c.stores[1].recycle(b);
                        }
                        break;
                    }
                }
            }
        }
        while let Some((flow, bytes)) = self.net.poll_assist_feedback() {
            // An assisted flow carries one client.
            let Some(client) = self.clients.iter().find(|c| c.flow == flow).map(|c| c.addr) else { continue };
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
        let k = ((pkt.app & !lowlat_core::APP_NON_CC_FEEDBACK) >> SEQ_BITS) as usize;
        let Some(c) = self.clients.get_mut(k) else { return };
        // Invariant: every packet in the links has its payload held (pushed before input), in the
        // store or, once the middlebox kept it, beside it (a handful at most: look there first).
        let kept = if d == 1 { c.held.iter().position(|h| h.0 == pkt.id) } else { None };
        let payload = match kept {
            Some(i) => c.held.remove(i).map(|h| h.1),
            None => c.stores[d].take(pkt.id),
        };
        let Some(payload) = payload else { return };
        let (src, dst) = if d == 0 { (c.addr, self.cfg.forward) } else { (self.cfg.forward, c.addr) };
        let now = clock.now();
        self.counters.forwarded[d] += 1;
        c.metrics[d].on_received(now, pkt.app & SEQ_MASK, pkt.size as u64, pkt.sent_at);
        if let Some(p) = &mut self.pcap {
            // A failing disk must not stop the relay; the error shows as a short pcap.
            let _ = p.write(now.as_nanos(), src, dst, &payload);
        }
        if d == 0 {
            if c.sends.push(payload, dst) {
                self.counters.send_errors += c.sends.flush(c.sock.as_raw_fd());
                for b in c.sends.bufs.drain(..) {
                    c.stores[0].recycle(b);
                }
            }
        } else if self.back.push(payload, dst) {
            self.flush_back();
        }
    }

    /// Sends what is batched towards the clients, in one `sendmmsg` call per [`BATCH`].
    fn flush_back(&mut self) {
        self.counters.send_errors += self.back.flush(self.client_sock.as_raw_fd());
        // The buffers go back to the first client's store (any store recycles any buffer).
        for b in self.back.bufs.drain(..) {
            if let Some(c) = self.clients.first_mut() {
                c.stores[1].recycle(b);
            }
        }
    }

    /// Sends everything batched, both ways.
    fn flush_all(&mut self) {
        self.flush_back();
        for c in &mut self.clients {
            self.counters.send_errors += c.sends.flush(c.sock.as_raw_fd());
            for b in c.sends.bufs.drain(..) {
                c.stores[0].recycle(b);
            }
        }
    }

    fn report(mut self, end: Time) -> RelayReport {
        self.net.settle(end);
        let sc = &self.scenario;
        let bin = sc.bin;
        let bin_ns = bin.as_nanos().max(1);
        let nbins = end.as_nanos().div_ceil(bin_ns) as usize;
        let bin_s = bin.as_secs_f64();
        // One pair of results (forward, reverse) per client, named after its flow (`#2`, `#3`
        // for further clients on the same flow); a run without clients reports the first
        // mapped flow, empty.
        let placeholder = [FlowMetrics::new(bin), FlowMetrics::new(bin)];
        let mut entries: Vec<Entry<'_>> = Vec::new();
        for (k, c) in self.clients.iter().enumerate() {
            let name = sc.flows.get(c.flow as usize).map_or("forward", |f| f.id.as_str());
            let earlier = self.clients[..k].iter().filter(|o| o.flow == c.flow).count();
            let name = if earlier > 0 { format!("{name}#{}", earlier + 1) } else { name.to_string() };
            entries.push((name, c.flow, &c.metrics, c.first_in, c.last_in));
        }
        if entries.is_empty() {
            let flow = self.mapped[0];
            let name = sc.flows.get(flow as usize).map_or("forward", |f| f.id.as_str()).to_string();
            entries.push((name, flow, &placeholder, [None; 2], [None; 2]));
        }
        let mut flows = Vec::new();
        let (mut f_id, mut f_t, mut f_send, mut f_recv, mut f_owd) = (vec![], vec![], vec![], vec![], vec![]);
        let mut counters = self.counters;
        // Datagrams inside the links, and those the middlebox keeps.
        let kept: u64 = self.clients.iter().map(|c| c.held.len() as u64).sum();
        counters.in_flight = [
            self.net.packets_inside_all(Direction::Forward) as u64,
            self.net.packets_inside_all(Direction::Reverse) as u64 + kept,
        ];
        for (name, flow, metrics, first_in, last_in) in &entries {
            for (d, m) in metrics.iter().enumerate() {
                let id = if d == 0 { name.clone() } else { format!("{name}.reverse") };
                // The propagation delay back to the sender of direction d: the other direction's links.
                let back =
                    self.net.path_delay(*flow, if d == 0 { Direction::Reverse } else { Direction::Forward });
                let start = first_in[d].unwrap_or(Time::ZERO);
                let rx_end = m.last_rx.max(last_in[d]).unwrap_or(end).min(end);
                let span = rx_end.saturating_since(start).as_secs_f64();
                let thr = if span > 0.0 { m.rx_bytes as f64 * 8.0 / span / 1e3 } else { 0.0 };
                let could_arrive = m.max_seq.map_or(0, |s| s + 1);
                let owd_hist = m.owd.histogram();
                let owd = Stats::from_ns(&owd_hist, m.owd_sum_ns, Some(m.owd_max_ns));
                let shift = back.as_millis_f64();
                let add = |v: Option<f64>| v.map(|x| x + shift);
                let limit_ns = (200e6 - back.as_nanos() as f64).max(0.0) as u64;
                let over = m.owd.len() - owd_hist.count_between(0, limit_ns).min(m.owd.len());
                flows.push(FlowSummary {
                    id: id.clone(),
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
                    f_id.push(id.clone());
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
                    link_stats: true,
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
