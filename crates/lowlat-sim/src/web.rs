//! Short web-like flows: the on/off sources of RMCAT test case 5.7 (RFC 8867 §5.7).
//!
//! Each source loops: download a file of uniformly distributed size over a *new* connection (slow
//! start from the initial window, fresh RTT estimate), then stay idle for an exponentially
//! distributed time, then start again. Some sources start with a download, the others idle. All
//! sources of one flow entry share its endpoints, so the results report them as one aggregate.
//!
//! A data packet's `app` word carries `(source, connection, packet number)`, so the receiver keeps
//! one acknowledgement state per source and starts afresh when a new connection appears; the ACK
//! packets carry an id that finds their frame in the flow's mailbox (as for bulk flows).

use crate::app::{Endpoint, Transmit};
use crate::scenario::WebConfig;
use lowlat_core::rng::Rng;
use lowlat_core::{Bytes, Duration, Packet, Time};
use lowlat_transport::{AckFrame, Receiver, ReceiverConfig, Sender, SenderConfig};
use rand::Rng as _;
use rand_distr::{Distribution, Exp1};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The most sources one flow entry may have (12 bits of the `app` word).
pub const MAX_SOURCES: u32 = 1 << SOURCE_BITS;
const SOURCE_BITS: u32 = 12;
const CONN_BITS: u32 = 20;
const PN_BITS: u32 = 32;

fn encode(source: u32, conn: u32, pn: u64) -> u64 {
    ((source as u64) << (CONN_BITS + PN_BITS))
        | (((conn & ((1 << CONN_BITS) - 1)) as u64) << PN_BITS)
        | (pn & ((1 << PN_BITS) - 1))
}

fn decode(app: u64) -> (u32, u32, u64) {
    let source = (app >> (CONN_BITS + PN_BITS)) as u32;
    let conn = ((app >> PN_BITS) & ((1 << CONN_BITS) - 1)) as u32;
    (source, conn, app & ((1 << PN_BITS) - 1))
}

/// ACK frames in flight from the receiver to the sender: `(id, (source, connection, frame))`.
pub type WebMailbox = Arc<Mutex<VecDeque<(u64, (u32, u32, AckFrame))>>>;

/// A new mailbox for one web flow.
pub fn mailbox() -> WebMailbox {
    Arc::new(Mutex::new(VecDeque::new()))
}

#[derive(Debug)]
enum State {
    Idle { until: Time },
    Downloading { sender: Box<Sender> },
}

#[derive(Debug)]
struct Source {
    state: State,
    /// Connection number of the current (or last) download.
    conn: u32,
    /// When the current (or last) download started.
    started_at: Time,
}

/// The sending side: the servers of all the flow's sources.
#[derive(Debug)]
pub struct WebSender {
    cfg: WebConfig,
    cc: String,
    cc_name: &'static str,
    packet_size: Bytes,
    stop: Time,
    stopped: bool,
    sources: Vec<Source>,
    rng: Rng,
    next_seq: u64,
    /// Where the round-robin over sources resumes.
    next_source: usize,
    mailbox: WebMailbox,
    /// Completion times of the downloads finished so far.
    completed: Vec<Duration>,
}

impl WebSender {
    /// The sources of `cfg`, active in `[start, stop)`, using window controller `cc`.
    pub fn new(
        cfg: WebConfig,
        cc: &str,
        packet_size: Bytes,
        start: Time,
        stop: Time,
        mut rng: Rng,
        mailbox: WebMailbox,
    ) -> Result<WebSender, String> {
        let cc_name = crate::transport::window_controller(cc, packet_size)?.name();
        let sources = (0..cfg.sources)
            .map(|i| {
                let until = if i < cfg.initially_on { start } else { start + exp(&mut rng, cfg.idle_mean) };
                Source { state: State::Idle { until }, conn: 0, started_at: start }
            })
            .collect();
        Ok(WebSender {
            cfg,
            cc: cc.to_string(),
            cc_name,
            packet_size,
            stop,
            stopped: false,
            sources,
            rng,
            next_seq: 0,
            next_source: 0,
            mailbox,
            completed: Vec::new(),
        })
    }

    /// Completion times of the downloads finished so far.
    pub fn completion_times(&self) -> &[Duration] {
        &self.completed
    }

    /// Moves sources whose download finished to idle, and idle ones whose time came to a new
    /// download.
    fn advance(&mut self, now: Time) {
        for s in &mut self.sources {
            match &s.state {
                State::Downloading { sender } if sender.is_done() => {
                    self.completed.push(now - s.started_at);
                    s.state = State::Idle { until: now + exp(&mut self.rng, self.cfg.idle_mean) };
                }
                State::Idle { until } if *until <= now && now < self.stop => {
                    let size = self.rng.random_range(self.cfg.size_min..=self.cfg.size_max);
                    let cfg = SenderConfig {
                        packet_size: self.packet_size,
                        size: Some(size),
                        ..SenderConfig::default()
                    };
                    // Invariant: the constructor built this controller once already.
                    let cc = crate::transport::window_controller(&self.cc, self.packet_size)
                        .expect("validated controller");
                    s.conn = s.conn.wrapping_add(1);
                    s.state = State::Downloading { sender: Box::new(Sender::new(cfg, cc)) };
                    s.started_at = now;
                }
                _ => {}
            }
        }
    }
}

/// An exponentially distributed duration of mean `mean`.
fn exp(rng: &mut Rng, mean: Duration) -> Duration {
    let x: f64 = Exp1.sample(rng);
    Duration::from_secs_f64(x * mean.as_secs_f64())
}

impl Endpoint for WebSender {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        let Some((source, conn, frame)) = crate::transport::take_by_id(&self.mailbox, pkt.app) else {
            return;
        };
        let Some(s) = self.sources.get_mut(source as usize) else { return };
        if let State::Downloading { sender } = &mut s.state {
            // An ACK of an earlier connection has nobody left to read it.
            if s.conn & ((1 << CONN_BITS) - 1) == conn {
                sender.on_ack(now, &frame);
            }
        }
        self.advance(now);
    }

    fn handle_timeout(&mut self, now: Time) {
        for s in &mut self.sources {
            if let State::Downloading { sender } = &mut s.state {
                if sender.poll_timeout().is_some_and(|t| t <= now) {
                    sender.handle_timeout(now);
                }
            }
        }
        self.advance(now);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        if now >= self.stop {
            self.stopped = true;
        }
        if self.stopped {
            return None;
        }
        let n = self.sources.len();
        for k in 0..n {
            let i = (self.next_source + k) % n;
            let s = &mut self.sources[i];
            let conn = s.conn;
            if let State::Downloading { sender } = &mut s.state {
                if let Some((pn, size)) = sender.poll_transmit(now) {
                    self.next_source = (i + 1) % n;
                    let seq = self.next_seq;
                    self.next_seq += 1;
                    return Some(Transmit { size, seq, app: encode(i as u32, conn, pn), ecn: 0 });
                }
            }
        }
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.stopped {
            return None;
        }
        self.sources
            .iter()
            .filter_map(|s| match &s.state {
                State::Idle { until } => (*until < self.stop).then_some(*until),
                State::Downloading { sender } => sender.poll_timeout(),
            })
            .min()
    }

    fn cc_name(&self) -> Option<&'static str> {
        Some(self.cc_name)
    }

    fn transfer_times(&self) -> Option<Vec<Duration>> {
        Some(self.completed.clone())
    }
}

/// The receiving side: the clients of all the flow's sources.
#[derive(Debug)]
pub struct WebReceiver {
    /// Per source: the connection being received and its ACK state.
    receivers: Vec<Option<(u32, Receiver)>>,
    next_id: u64,
    mailbox: WebMailbox,
}

impl WebReceiver {
    /// A receiver for `sources` sources.
    pub fn new(sources: u32, mailbox: WebMailbox) -> WebReceiver {
        WebReceiver { receivers: (0..sources).map(|_| None).collect(), next_id: 0, mailbox }
    }
}

impl Endpoint for WebReceiver {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        let (source, conn, pn) = decode(pkt.app);
        let Some(slot) = self.receivers.get_mut(source as usize) else { return };
        match slot {
            Some((c, r)) if *c == conn => r.on_packet(now, pn),
            _ => {
                let mut r = Receiver::new(ReceiverConfig::default());
                r.on_packet(now, pn);
                *slot = Some((conn, r));
            }
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        for (source, slot) in self.receivers.iter_mut().enumerate() {
            let Some((conn, r)) = slot else { continue };
            if let Some(frame) = r.poll_ack(now) {
                let id = self.next_id;
                self.next_id += 1;
                let size = Bytes(frame.datagram_len());
                self.mailbox
                    .lock()
                    .expect("the mailbox lock is never held across a panic")
                    .push_back((id, (source as u32, *conn, frame)));
                return Some(Transmit { size, seq: id, app: id, ecn: 0 });
            }
        }
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.receivers.iter().flatten().filter_map(|(_, r)| r.poll_timeout()).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_word_round_trips() {
        for (s, c, pn) in [(0, 0, 0), (4095, (1 << 20) - 1, u32::MAX as u64), (7, 12, 345_678)] {
            assert_eq!(decode(encode(s, c, pn)), (s, c, pn));
        }
    }
}
