//! The simulation: a dumbbell topology built from a [`Scenario`], driven on virtual time.
//!
//! ```text
//! sender_i -access_i-> R1 =bottleneck=> R2 -egress_i-> receiver_i
//! sender_i <-access_i- R1 <=reverse==== R2 <-egress_i- receiver_i
//! ```
//! Access and egress links are optional per flow. Each packet follows its flow's path (forward for
//! data, reverse for feedback); the driver moves it from link to link and wakes components at the
//! times they ask for. Nothing here reads the wall clock except to report how long a run took.

use crate::engine::{Target, Wakeups};
use crate::results::RunResult;
use crate::scenario::Scenario;
use crate::traffic::{FlowMetrics, Source};
use lowlat_core::rng::stream;
use lowlat_core::{FlowId, Packet, PacketKind, Time};
use lowlat_net::link::{Link, LinkConfig};
use lowlat_net::middlebox::{Direction, Verdict};

/// A flow's route: link indices, in order.
#[derive(Clone, Copy, Debug, Default)]
struct Path {
    links: [u32; 3],
    len: u8,
}

impl Path {
    fn push(&mut self, link: u32) {
        self.links[self.len as usize] = link;
        self.len += 1;
    }
    fn get(&self, hop: u8) -> Option<u32> {
        (hop < self.len).then(|| self.links[hop as usize])
    }
}

pub(crate) struct FlowState {
    pub(crate) source: Source,
    forward: Path,
    reverse: Path,
    pub(crate) metrics: FlowMetrics,
}

/// A running simulation.
pub struct Simulation {
    pub(crate) scenario: Scenario,
    now: Time,
    end: Time,
    pub(crate) links: Vec<Link>,
    pub(crate) link_names: Vec<String>,
    pub(crate) flows: Vec<FlowState>,
    bottleneck: u32,
    reverse: u32,
    wakeups: Wakeups,
    next_packet_id: u64,
    pub(crate) wall: std::time::Duration,
}

/// Index of the forward bottleneck in the link arena.
const BOTTLENECK: u32 = 0;
/// Index of the reverse bottleneck in the link arena.
const REVERSE: u32 = 1;

impl Simulation {
    /// Builds the topology of `scenario`; nothing runs yet.
    pub fn new(scenario: Scenario) -> Simulation {
        let seed = scenario.seed;
        let bin = scenario.bin;
        let mut links = Vec::new();
        let mut link_names = Vec::new();
        let mut add = |cfg: &LinkConfig, name: String| -> u32 {
            links.push(Link::new(cfg, seed, &name, bin));
            link_names.push(name);
            (links.len() - 1) as u32
        };
        let bottleneck = add(&scenario.bottleneck, "bottleneck".into());
        let reverse = add(&scenario.reverse, "reverse".into());
        debug_assert_eq!((bottleneck, reverse), (BOTTLENECK, REVERSE));
        let mut flows = Vec::with_capacity(scenario.flows.len());
        for f in &scenario.flows {
            let (mut forward, mut back) = (Path::default(), Path::default());
            let access = f.access.as_ref().map(|c| {
                (add(c, format!("flow.{}.access.up", f.id)), add(c, format!("flow.{}.access.down", f.id)))
            });
            let egress = f.egress.as_ref().map(|c| {
                (add(c, format!("flow.{}.egress.down", f.id)), add(c, format!("flow.{}.egress.up", f.id)))
            });
            if let Some((up, _)) = access {
                forward.push(up);
            }
            forward.push(bottleneck);
            if let Some((down, _)) = egress {
                forward.push(down);
            }
            if let Some((_, up)) = egress {
                back.push(up);
            }
            back.push(reverse);
            if let Some((_, down)) = access {
                back.push(down);
            }
            flows.push(FlowState {
                source: Source::new(f, stream(seed, &format!("flow.{}", f.id))),
                forward,
                reverse: back,
                metrics: FlowMetrics::new(bin),
            });
        }
        // "none" leaves the queue without a middlebox: no virtual call per packet.
        debug_assert_eq!(scenario.assist, "none");
        let mut wakeups = Wakeups::new(links.len(), flows.len());
        for (i, f) in flows.iter().enumerate() {
            wakeups.set(Target::Source(i as u32), f.source.poll_timeout());
        }
        let end = Time::ZERO + scenario.duration;
        Simulation {
            scenario,
            now: Time::ZERO,
            end,
            links,
            link_names,
            flows,
            bottleneck,
            reverse,
            wakeups,
            next_packet_id: 0,
            wall: std::time::Duration::ZERO,
        }
    }

    /// The scenario being run.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Simulated time reached so far.
    pub fn now(&self) -> Time {
        self.now
    }

    /// When the run ends.
    pub fn end(&self) -> Time {
        self.end
    }

    /// Whether the run has reached its end.
    pub fn is_done(&self) -> bool {
        self.now >= self.end
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.wakeups.processed()
    }

    /// Runs every event up to `until` (capped at the end of the run).
    pub fn advance(&mut self, until: Time) {
        let started = std::time::Instant::now();
        let until = until.min(self.end);
        while let Some((now, target)) = self.wakeups.pop_until(until) {
            self.now = now;
            match target {
                Target::Link(i) => self.wake_link(i, now),
                Target::Source(i) => self.wake_source(i, now),
            }
        }
        self.now = self.now.max(until);
        self.wall += started.elapsed();
    }

    /// Runs to the end and returns the results.
    pub fn run(mut self) -> RunResult {
        self.advance(self.end);
        self.finish()
    }

    /// The results of the run so far (normally called once [`Simulation::is_done`]).
    pub fn finish(self) -> RunResult {
        RunResult::collect(&self)
    }

    fn wake_source(&mut self, i: u32, now: Time) {
        let flow = &mut self.flows[i as usize];
        if let Some((seq, size)) = flow.source.handle_timeout(now) {
            let pkt = Packet::new(self.next_packet_id, FlowId(i), size, seq, now);
            self.next_packet_id += 1;
            flow.metrics.on_sent(now, size.0);
            self.wakeups.set(Target::Source(i), flow.source.poll_timeout());
            let first = flow.forward.get(0).expect("every forward path holds the bottleneck");
            self.enter_link(first, now, pkt);
        } else {
            self.wakeups.set(Target::Source(i), flow.source.poll_timeout());
        }
    }

    fn wake_link(&mut self, i: u32, now: Time) {
        self.links[i as usize].handle_timeout(now);
        while let Some(pkt) = self.links[i as usize].poll_output(now) {
            self.forward(now, pkt);
        }
        while let Some((dir, mut pkt)) = self.links[i as usize].poll_inject(now) {
            match dir {
                Direction::Forward => self.links[i as usize].inject_forward(now, pkt),
                Direction::Reverse => {
                    // Injected at the site: continue on the hop after the site's reverse link.
                    pkt.kind = PacketKind::Feedback;
                    let path = self.flows[pkt.flow.index()].reverse;
                    pkt.hop = (0..path.len).find(|&h| path.get(h) == Some(self.reverse)).unwrap_or(0);
                    self.enter_link(self.reverse, now, pkt);
                }
            }
        }
        let next = self.links[i as usize].poll_timeout();
        debug_assert!(next.is_none_or(|t| t > now), "link {i} asked to be woken in the past");
        self.wakeups.set(Target::Link(i), next);
    }

    /// A packet leaves a link at `now`: on to its next hop, or to its endpoint.
    fn forward(&mut self, now: Time, mut pkt: Packet) {
        let flow = &self.flows[pkt.flow.index()];
        let path = if pkt.kind == PacketKind::Data { flow.forward } else { flow.reverse };
        pkt.hop += 1;
        match path.get(pkt.hop) {
            Some(next) => self.enter_link(next, now, pkt),
            None => self.deliver(now, pkt),
        }
    }

    fn enter_link(&mut self, link: u32, now: Time, mut pkt: Packet) {
        if link == self.reverse {
            // Reverse traffic passes the forward bottleneck's site, where a middlebox may act.
            match self.links[self.bottleneck as usize].handle_reverse(now, &mut pkt) {
                Verdict::Pass => {}
                Verdict::Drop | Verdict::Consume => return,
            }
        }
        let l = &mut self.links[link as usize];
        l.handle_input(now, pkt);
        self.wakeups.set(Target::Link(link), l.poll_timeout());
    }

    fn deliver(&mut self, now: Time, pkt: Packet) {
        let flow = &mut self.flows[pkt.flow.index()];
        match pkt.kind {
            PacketKind::Data => flow.metrics.on_received(now, pkt.seq, pkt.size as u64, pkt.sent_at),
            // No application consumes feedback in the core yet.
            PacketKind::Feedback => {}
        }
    }
}
