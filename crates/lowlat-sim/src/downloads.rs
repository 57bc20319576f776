//! Downloads one after another over new connections that remember the path: the `downloads`
//! flow kind (a download, a pause, the next download, ...), with or without a saved set, with or
//! without 0-RTT.
//!
//! Each connection starts when the client opens it (`t0`: the flow's start for the first, the
//! previous download's end plus `pause` for the others). Its request reaches the server one
//! reverse-path delay later; without 0-RTT the handshake's round trip comes first (modelled as the
//! path's propagation RTT; the server takes it as its first RTT sample, RFC 9002 §5), with 0-RTT
//! the first flight carries the request. The server then sends `size` bytes over the
//! ack-clocked transport, its controller wrapped by the connection's start-up rule
//! (`careful-resume`, `0rtt-bdp`, `picoquic`) fed with a saved set: the one the endpoint saved
//! last (path memory), the one an earlier connection named by `resume_from` saved, or one given
//! in the scenario (`saved`, e.g. from a path that has since changed). At its end, every
//! connection saves what it learnt ([`PathObserver`]).
//!
//! The completion time is the client's: from `t0` to the last packet of the connection reaching
//! it. The per-connection summary carries a series of the window, the bytes delivered and the
//! start-up phase, sampled once per bin.
//!
//! A data packet's `app` word is `(connection << 40) | packet number`.

use crate::app::{Endpoint, Transmit};
use crate::scenario::ScenarioError;
use lowlat_core::{Bytes, Duration, Packet, Time};
use lowlat_transport::{
    AckFrame, CarefulResume, CarefulResumeConfig, JumpRule, PathObserver, Receiver, ReceiverConfig,
    SavedPath, SeedJump, Sender, SenderConfig, WindowController,
};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

const PN_BITS: u32 = 40;

/// The start-up rules a connection can use.
pub const START_UPS: &[&str] = &["none", "careful-resume", "0rtt-bdp", "picoquic"];

/// Default lifetime of a saved set (draft-ietf-tsvwg-careful-resume-24 leaves it to the
/// implementation; one hour).
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);

/// One connection as written in a scenario (`[[flows.connections]]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionSpec {
    /// Unique within the flow.
    pub id: String,
    /// Bytes to download.
    pub size: crate::scenario::Unit<Bytes>,
    /// Idle time after the previous download ends (default 0; the first: after the flow's start).
    pub pause: Option<crate::scenario::Unit<Duration>>,
    /// Whether the request rides in the first flight (default false: a handshake RTT first).
    pub zero_rtt: Option<bool>,
    /// `"none"` (default), `"careful-resume"`, `"0rtt-bdp"` or `"picoquic"`.
    pub start_up: Option<String>,
    /// Use the set this earlier connection saved (default: the last one saved).
    pub resume_from: Option<String>,
    /// Use this saved set instead (e.g. from a path that has changed since).
    pub saved: Option<SavedSpec>,
    /// How long the set this connection saves stays valid (default 1 h).
    pub lifetime: Option<crate::scenario::Unit<Duration>>,
}

/// A saved set given in a scenario.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedSpec {
    /// saved_cwnd.
    pub cwnd: crate::scenario::Unit<Bytes>,
    /// saved_rtt.
    pub rtt: crate::scenario::Unit<Duration>,
}

/// Where a connection's saved set comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeSource {
    /// The last set the endpoint saved.
    Latest,
    /// The set connection `i` (earlier) saved.
    From(usize),
    /// A set given in the scenario, saved when the connection opens.
    Given {
        /// saved_cwnd, bytes.
        cwnd: u64,
        /// saved_rtt.
        rtt: Duration,
    },
}

/// A validated connection.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionConfig {
    /// Its id.
    pub id: String,
    /// Bytes to download.
    pub size: u64,
    /// Idle time before it opens.
    pub pause: Duration,
    /// 0-RTT.
    pub zero_rtt: bool,
    /// One of [`START_UPS`].
    pub start_up: String,
    /// Where the saved set comes from.
    pub resume: ResumeSource,
    /// Lifetime of the set it saves.
    pub lifetime: Duration,
}

/// Checks the `connections` of a downloads flow; `key` builds key paths such as
/// `flows[0].connections[1].size`.
pub fn connections_config(
    specs: &[ConnectionSpec],
    key: &dyn Fn(&str) -> String,
    label: &str,
) -> Result<Vec<ConnectionConfig>, ScenarioError> {
    let err = |i: usize, k: &str, msg: String| ScenarioError {
        file: label.to_string(),
        key: key(&format!("connections[{i}].{k}")),
        message: msg,
    };
    if specs.is_empty() {
        return Err(ScenarioError {
            file: label.to_string(),
            key: key("connections"),
            message: "missing: a downloads flow needs at least one connection".into(),
        });
    }
    let mut out: Vec<ConnectionConfig> = Vec::with_capacity(specs.len());
    for (i, c) in specs.iter().enumerate() {
        if c.id.is_empty() || out.iter().any(|o| o.id == c.id) {
            return Err(err(
                i,
                "id",
                format!("got {:?}, expected a non-empty id unique among the connections", c.id),
            ));
        }
        let size = c.size.0 .0;
        if size == 0 {
            return Err(err(i, "size", "got 0 B, expected a positive size".into()));
        }
        let start_up = c.start_up.clone().unwrap_or_else(|| "none".into());
        if !START_UPS.contains(&start_up.as_str()) {
            return Err(err(
                i,
                "start_up",
                format!("got {start_up:?}, expected one of {}", START_UPS.join(", ")),
            ));
        }
        let lifetime = c.lifetime.map_or(DEFAULT_LIFETIME, |d| d.0);
        if lifetime == Duration::ZERO {
            return Err(err(i, "lifetime", "got \"0 s\", expected a positive duration".into()));
        }
        let resume = match (&c.resume_from, &c.saved) {
            (Some(_), Some(_)) => {
                return Err(err(i, "saved", "give either `saved` or `resume_from`, not both".into()));
            }
            (Some(from), None) => match out.iter().position(|o| &o.id == from) {
                Some(j) => ResumeSource::From(j),
                None => {
                    let earlier: Vec<&str> = out.iter().map(|o| o.id.as_str()).collect();
                    return Err(err(
                        i,
                        "resume_from",
                        format!(
                            "got {from:?}, expected the id of an earlier connection ({})",
                            if earlier.is_empty() { "there is none".to_string() } else { earlier.join(", ") }
                        ),
                    ));
                }
            },
            (None, Some(s)) => {
                if s.cwnd.0 .0 == 0 {
                    return Err(err(i, "saved.cwnd", "got 0 B, expected a positive saved window".into()));
                }
                if s.rtt.0 == Duration::ZERO {
                    return Err(err(i, "saved.rtt", "got \"0 s\", expected a positive RTT".into()));
                }
                ResumeSource::Given { cwnd: s.cwnd.0 .0, rtt: s.rtt.0 }
            }
            (None, None) => ResumeSource::Latest,
        };
        if start_up == "none" && (c.resume_from.is_some() || c.saved.is_some()) {
            return Err(err(
                i,
                "start_up",
                "got \"none\" with a saved set to resume from: name a start-up rule (careful-resume, 0rtt-bdp, picoquic)"
                    .into(),
            ));
        }
        out.push(ConnectionConfig {
            id: c.id.clone(),
            size,
            pause: c.pause.map_or(Duration::ZERO, |d| d.0),
            zero_rtt: c.zero_rtt.unwrap_or(false),
            start_up,
            resume,
            lifetime,
        });
    }
    Ok(out)
}

/// A saved set in the results.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SavedSummary {
    /// saved_cwnd, bytes.
    pub cwnd_bytes: u64,
    /// saved_rtt, ms.
    pub rtt_ms: f64,
}

impl From<SavedPath> for SavedSummary {
    fn from(s: SavedPath) -> Self {
        SavedSummary { cwnd_bytes: s.cwnd, rtt_ms: s.rtt.as_millis_f64() }
    }
}

/// The window, bytes delivered and phase of a connection, once per bin.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ConnectionSeries {
    /// Sample times, s.
    pub t_s: Vec<f64>,
    /// Congestion window, bytes.
    pub cwnd_bytes: Vec<u64>,
    /// Payload bytes acknowledged since the connection opened.
    pub delivered_bytes: Vec<u64>,
    /// Bytes in flight.
    pub in_flight_bytes: Vec<u64>,
    /// The start-up phase (Careful Resume's) or the controller's mode.
    pub phase: Vec<&'static str>,
}

/// One connection's line of the flow summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConnectionSummary {
    /// Its id.
    pub id: String,
    /// The start-up rule.
    pub start_up: String,
    /// 0-RTT.
    pub zero_rtt: bool,
    /// Bytes downloaded.
    pub size_bytes: u64,
    /// When the client opened it, s.
    pub open_s: f64,
    /// When the server sent its first packet, s.
    pub first_data_s: f64,
    /// Client-side completion time (open to the last packet received), s; `None` if unfinished.
    pub completion_s: Option<f64>,
    /// Packets sent, lost (declared by the sender), probe timeouts.
    pub packets_sent: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Probe timeouts.
    pub ptos: u64,
    /// The set it started from (`None`: none, or not used by its rule).
    pub saved_used: Option<SavedSummary>,
    /// The set it saved at its end.
    pub saved_after: Option<SavedSummary>,
    /// The window when the start-up jumped (entering `unvalidated` or `jumped`), bytes.
    pub jump_cwnd_bytes: Option<u64>,
    /// Largest window, bytes.
    pub max_cwnd_bytes: u64,
    /// Phase changes: `(s, phase)`.
    pub phases: Vec<(f64, &'static str)>,
    /// The sampled series.
    pub series: ConnectionSeries,
}

/// ACK frames in flight: `(id, (connection, frame))`.
pub type DownloadMailbox = Arc<Mutex<VecDeque<(u64, (u32, AckFrame))>>>;
/// Last arrival at the client per connection.
pub type Arrivals = Arc<Mutex<Vec<Option<Time>>>>;

/// A mailbox and an arrival log for one downloads flow.
pub fn channels(connections: usize) -> (DownloadMailbox, Arrivals) {
    (Arc::new(Mutex::new(VecDeque::new())), Arc::new(Mutex::new(vec![None; connections])))
}

#[derive(Debug)]
enum State {
    /// Waiting for connection `i` to open at `at`.
    Idle {
        at: Time,
    },
    /// Connection opened; the server sends from `at`.
    Handshake {
        at: Time,
    },
    Active {
        sender: Box<Sender>,
    },
    Finished,
}

/// The path's round trip and the request's one-way delay, for the handshake model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathDelays {
    /// Propagation RTT.
    pub rtt: Duration,
    /// Client to server, one way.
    pub request: Duration,
}

/// The server side: sends the downloads one connection at a time.
#[derive(Debug)]
pub struct DownloadSender {
    conns: Vec<ConnectionConfig>,
    cc: String,
    packet_size: Bytes,
    delays: PathDelays,
    stop: Time,
    bin: Duration,
    current: usize,
    state: State,
    next_seq: u64,
    mailbox: DownloadMailbox,
    arrivals: Arrivals,
    /// What each connection saved at its end, and the endpoint's latest set.
    saved_by: Vec<Option<SavedPath>>,
    latest: Option<SavedPath>,
    observer: PathObserver,
    summaries: Vec<ConnectionSummary>,
    last_sample: Option<u64>,
}

impl DownloadSender {
    /// The server of `conns`, opening the first at `start`; window controller `cc`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        conns: Vec<ConnectionConfig>,
        cc: &str,
        packet_size: Bytes,
        delays: PathDelays,
        start: Time,
        stop: Time,
        bin: Duration,
        mailbox: DownloadMailbox,
        arrivals: Arrivals,
    ) -> Result<DownloadSender, String> {
        crate::transport::window_controller(cc, packet_size)?;
        let first = start + conns.first().map_or(Duration::ZERO, |c| c.pause);
        let n = conns.len();
        Ok(DownloadSender {
            conns,
            cc: cc.to_string(),
            packet_size,
            delays,
            stop,
            bin,
            current: 0,
            state: State::Idle { at: first },
            next_seq: 0,
            mailbox,
            arrivals,
            saved_by: vec![None; n],
            latest: None,
            observer: PathObserver::default(),
            summaries: Vec::with_capacity(n),
            last_sample: None,
        })
    }

    /// The summaries of the connections opened so far, completion times read from the client.
    pub fn summaries(&self) -> Vec<ConnectionSummary> {
        let arrivals = self.arrivals.lock().expect("the arrivals lock is never held across a panic");
        let mut out = self.summaries.clone();
        // Connections before the current one are finished.
        for (s, a) in out.iter_mut().zip(arrivals.iter()).take(self.current) {
            s.completion_s = a.map(|t| t.as_secs_f64() - s.open_s);
        }
        out
    }

    fn open(&mut self, now: Time) {
        let c = &self.conns[self.current];
        let hs = if c.zero_rtt { Duration::ZERO } else { self.delays.rtt };
        self.summaries.push(ConnectionSummary {
            id: c.id.clone(),
            start_up: c.start_up.clone(),
            zero_rtt: c.zero_rtt,
            size_bytes: c.size,
            open_s: now.as_secs_f64(),
            first_data_s: (now + hs + self.delays.request).as_secs_f64(),
            completion_s: None,
            packets_sent: 0,
            packets_lost: 0,
            ptos: 0,
            saved_used: None,
            saved_after: None,
            jump_cwnd_bytes: None,
            max_cwnd_bytes: 0,
            phases: Vec::new(),
            series: ConnectionSeries::default(),
        });
        self.state = State::Handshake { at: now + hs + self.delays.request };
    }

    fn start_sending(&mut self, now: Time) {
        let c = &self.conns[self.current];
        let saved = match c.resume {
            ResumeSource::Latest => self.latest,
            ResumeSource::From(j) => self.saved_by[j],
            ResumeSource::Given { cwnd, rtt } => {
                Some(SavedPath { cwnd, rtt, saved_at: now, lifetime: DEFAULT_LIFETIME })
            }
        }
        .filter(|s| s.is_valid(now));
        // Invariant: the constructor built this controller once already.
        let inner =
            crate::transport::window_controller(&self.cc, self.packet_size).expect("validated controller");
        let used = if c.start_up == "none" { None } else { saved };
        let cc: Box<dyn WindowController> = match c.start_up.as_str() {
            "careful-resume" => {
                let cfg = CarefulResumeConfig::for_datagram(self.packet_size, &self.cc);
                Box::new(CarefulResume::new(cfg, inner, used))
            }
            "0rtt-bdp" => Box::new(SeedJump::new(JumpRule::ZeroRttBdp, inner, used)),
            "picoquic" => Box::new(SeedJump::new(JumpRule::Picoquic, inner, used)),
            _ => inner,
        };
        let cfg =
            SenderConfig { packet_size: self.packet_size, size: Some(c.size), ..SenderConfig::default() };
        let mut sender = Sender::new(cfg, cc);
        if !c.zero_rtt {
            sender.on_handshake_rtt(now, self.delays.rtt);
        }
        let s = self.summaries.last_mut().expect("opened");
        s.saved_used = used.map(SavedSummary::from);
        self.observer = PathObserver::default();
        self.state = State::Active { sender: Box::new(sender) };
        self.last_sample = None;
        self.sample(now);
    }

    fn finish_connection(&mut self, now: Time) {
        // The series ends with the connection's last state.
        self.last_sample = None;
        self.sample(now);
        let State::Active { sender } = &self.state else { return };
        let c = &self.conns[self.current];
        let iw = 10 * self.packet_size.0;
        let saved = self.observer.saved(
            now,
            sender.window().0,
            sender.controller().in_slow_start(),
            sender.rtt().min(),
            c.lifetime,
            4 * iw,
        );
        let st = sender.stats();
        let s = self.summaries.last_mut().expect("opened");
        s.packets_sent = st.packets_sent;
        s.packets_lost = st.packets_lost;
        s.ptos = st.ptos;
        s.saved_after = saved.map(SavedSummary::from);
        self.saved_by[self.current] = saved;
        if saved.is_some() {
            self.latest = saved;
        }
        self.current += 1;
        self.state = match self.conns.get(self.current) {
            Some(next) => State::Idle { at: now + next.pause },
            None => State::Finished,
        };
    }

    /// Records the window and phase: phase changes at once, the rest once per bin.
    fn sample(&mut self, now: Time) {
        let State::Active { sender } = &self.state else { return };
        let s = self.summaries.last_mut().expect("opened");
        let (cwnd, mode) = (sender.window().0, sender.mode());
        s.max_cwnd_bytes = s.max_cwnd_bytes.max(cwnd);
        if s.phases.last().is_none_or(|(_, p)| *p != mode) {
            if matches!(mode, "unvalidated" | "jumped") && s.jump_cwnd_bytes.is_none() {
                s.jump_cwnd_bytes = Some(cwnd);
            }
            s.phases.push((now.as_secs_f64(), mode));
        }
        let bin = now.as_nanos() / self.bin.as_nanos().max(1);
        if self.last_sample.is_none_or(|b| bin > b) {
            self.last_sample = Some(bin);
            let ser = &mut s.series;
            ser.t_s.push(now.as_secs_f64());
            ser.cwnd_bytes.push(cwnd);
            ser.delivered_bytes.push(sender.stats().bytes_acked);
            ser.in_flight_bytes.push(sender.in_flight());
            ser.phase.push(mode);
        }
    }

    /// Moves the connection timeline on: open, start sending, finish.
    fn advance(&mut self, now: Time) {
        loop {
            match &self.state {
                State::Idle { at } if *at <= now && now < self.stop => self.open(now),
                State::Handshake { at } if *at <= now => self.start_sending(now),
                State::Active { sender } if sender.is_done() => self.finish_connection(now),
                _ => break,
            }
        }
    }
}

impl Endpoint for DownloadSender {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        if let Some((conn, frame)) = crate::transport::take_by_id(&self.mailbox, pkt.app) {
            if let State::Active { sender } = &mut self.state {
                // An ACK of an earlier connection has nobody left to read it.
                if conn as usize == self.current {
                    sender.on_ack(now, &frame);
                    let st = sender.stats();
                    let rtt_min = sender.rtt().min();
                    self.observer.on_ack(now, st.bytes_acked, rtt_min);
                }
            }
        }
        self.sample(now);
        self.advance(now);
    }

    fn handle_timeout(&mut self, now: Time) {
        if let State::Active { sender } = &mut self.state {
            if sender.poll_timeout().is_some_and(|t| t <= now) {
                sender.handle_timeout(now);
            }
        }
        self.advance(now);
        self.sample(now);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        if now >= self.stop {
            return None;
        }
        let State::Active { sender } = &mut self.state else { return None };
        let (pn, size) = sender.poll_transmit(now)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        let app = ((self.current as u64) << PN_BITS) | pn;
        self.sample(now);
        Some(Transmit { size, seq, app, ecn: 0 })
    }

    fn poll_timeout(&self) -> Option<Time> {
        let t = match &self.state {
            State::Idle { at } | State::Handshake { at } => Some(*at),
            State::Active { sender } => sender.poll_timeout(),
            State::Finished => None,
        }?;
        (t < self.stop).then_some(t)
    }

    fn cc_name(&self) -> Option<&'static str> {
        crate::transport::window_controller(&self.cc, self.packet_size).ok().map(|c| c.name())
    }

    fn cc_mode(&self) -> Option<&'static str> {
        match &self.state {
            State::Active { sender } => Some(sender.mode()),
            _ => None,
        }
    }

    fn transfer_times(&self) -> Option<Vec<Duration>> {
        Some(self.summaries().iter().filter_map(|s| s.completion_s.map(Duration::from_secs_f64)).collect())
    }

    fn connections(&self) -> Option<Vec<ConnectionSummary>> {
        Some(self.summaries())
    }
}

/// The client side: acknowledges each connection's packets and notes when the last arrived.
#[derive(Debug)]
pub struct DownloadReceiver {
    conn: Option<(u32, Receiver)>,
    next_id: u64,
    mailbox: DownloadMailbox,
    arrivals: Arrivals,
}

impl DownloadReceiver {
    /// A client answering through `mailbox` and logging arrivals in `arrivals`.
    pub fn new(mailbox: DownloadMailbox, arrivals: Arrivals) -> DownloadReceiver {
        DownloadReceiver { conn: None, next_id: 0, mailbox, arrivals }
    }
}

impl Endpoint for DownloadReceiver {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        let conn = (pkt.app >> PN_BITS) as u32;
        let pn = pkt.app & ((1 << PN_BITS) - 1);
        match &mut self.conn {
            Some((c, r)) if *c == conn => r.on_packet(now, pn),
            Some((c, _)) if *c > conn => return, // a straggler of an earlier connection
            _ => {
                let mut r = Receiver::new(ReceiverConfig::default());
                r.on_packet(now, pn);
                self.conn = Some((conn, r));
            }
        }
        let mut a = self.arrivals.lock().expect("the arrivals lock is never held across a panic");
        if let Some(slot) = a.get_mut(conn as usize) {
            *slot = Some(now);
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        let (conn, r) = self.conn.as_mut()?;
        let frame = r.poll_ack(now)?;
        let id = self.next_id;
        self.next_id += 1;
        let size = Bytes(frame.datagram_len());
        self.mailbox
            .lock()
            .expect("the mailbox lock is never held across a panic")
            .push_back((id, (*conn, frame)));
        Some(Transmit { size, seq: id, app: id, ecn: 0 })
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.conn.as_ref().and_then(|(_, r)| r.poll_timeout())
    }
}
