//! A scenario's network for one relayed flow: the forward path (access up, bottleneck, egress
//! down) and the reverse path (egress up, reverse, access down), built from the same scenario keys
//! as the simulator's dumbbell (`lowlat_sim::sim`) with the same link names and random streams.
//!
//! It moves packets from link to link on whatever `now` it is given, so the relay drives it on the
//! wall clock and tests drive it on made-up instants. The links are `lowlat-net`'s, unchanged, and
//! so is the middlebox at the bottleneck (`lowlat_sim::assist`, as in the simulator): Zhuge with
//! in-band feedback for an RTP flow, whose reports leave at the bottleneck's site towards the
//! sender, while the client's own feedback is dropped there; Zhuge out-of-band and FastAck for a
//! bulk flow (lowlat's transport, [`crate::quic`]): ACKs held, or dropped and written by the AP;
//! the SCONE signaller (`scone-rtc`: NETWORK_SIGNAL frames, `scone`: SCONE packets) for an RTP
//! flow's sender.

use lowlat_core::{Packet, PacketKind, Time};
use lowlat_net::middlebox::{Direction, FeedbackPayload, Verdict};
use lowlat_net::{Link, LinkConfig};
use lowlat_sim::Scenario;
use std::collections::VecDeque;

/// Link indices of one direction, in order.
#[derive(Clone, Copy, Debug, Default)]
struct Path {
    links: [u8; 3],
    len: u8,
}

impl Path {
    fn push(&mut self, link: usize) {
        self.links[self.len as usize] = link as u8;
        self.len += 1;
    }
    fn get(&self, hop: u8) -> Option<usize> {
        (hop < self.len).then(|| self.links[hop as usize] as usize)
    }
}

/// The paths of one scenario flow the relay maps clients to.
#[derive(Clone, Copy, Debug)]
struct FlowPaths {
    /// The flow's index in the scenario (what packets carry as their flow id).
    index: u32,
    forward: Path,
    reverse: Path,
    /// What a forward datagram of this flow must be for the middlebox.
    parse: Parse,
}

/// The links of the relayed flows (one bottleneck and reverse link, each flow's access and egress
/// links) and the packets they deliver.
#[derive(Debug)]
pub struct Network {
    links: Vec<Link>,
    names: Vec<String>,
    /// The mapped flows, in the scenario's order.
    flows: Vec<FlowPaths>,
    /// Scenario flow index -> position in `flows`.
    by_flow: Vec<Option<u8>>,
    delivered: VecDeque<(Direction, Packet)>,
    /// Per link: the instant it asked to be woken (cached: asking is cheap, but it is asked often).
    wake: Vec<Option<Time>>,
    /// Reverse packets the middlebox dropped or kept (their ids).
    taken: VecDeque<(u64, bool)>,
    /// Feedback the middlebox built for a flow's sender: the flow's index and the bytes (RTCP, a
    /// QUIC-shaped ACK packet, a NETWORK_SIGNAL frame or a SCONE packet).
    assist_out: VecDeque<(u32, Vec<u8>)>,
    /// Packet numbers of the ACK packets the middlebox (FastAck) writes.
    ack_pn: u64,
}

/// What the relay must read in each forward datagram for the middlebox at the bottleneck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parse {
    /// Nothing: no middlebox, any datagram passes.
    Any,
    /// An RTP header with the transport-wide sequence number (Zhuge in-band, SCONE).
    Rtp,
    /// A lowlat transport data packet's number ([`crate::quic`]: FastAck, Zhuge out-of-band).
    Transport,
}

/// Index of the bottleneck (whose queue holds the middlebox) and of the reverse link.
const BOTTLENECK: usize = 0;
const REVERSE: usize = 1;

/// The direction a packet of `kind` travels.
fn direction(kind: PacketKind) -> Direction {
    match kind {
        PacketKind::Data => Direction::Forward,
        PacketKind::Feedback => Direction::Reverse,
    }
}

impl Network {
    /// The paths of flow `flow` of `scenario` (its first flow if `None`; bottleneck and reverse
    /// links alone if it has none). Errors on an unknown flow id, or on network assistance the
    /// relayed flow cannot carry on real packets (FastAck needs a bulk flow, SCONE an RTP one).
    pub fn from_scenario(scenario: &Scenario, flow: Option<&str>) -> Result<Network, String> {
        let mapped: Vec<usize> = match flow {
            Some(id) => vec![scenario.flows.iter().position(|f| f.id == id).ok_or_else(|| {
                let ids: Vec<&str> = scenario.flows.iter().map(|f| f.id.as_str()).collect();
                format!("{}: no flow {id:?}; expected one of {ids:?}", scenario.source)
            })?],
            None => (0..scenario.flows.len()).collect(),
        };
        // Link indices are bytes: 2 shared links and at most 4 per flow.
        if mapped.len() > 63 {
            return Err(format!(
                "{}: {} flows: the relay maps at most 63 (name one with --flow)",
                scenario.source,
                mapped.len()
            ));
        }
        // What each mapped flow's forward datagrams must be for the middlebox.
        let mut parses = vec![Parse::Any; mapped.len()];
        let middlebox = match scenario.assist.as_str() {
            "none" => None,
            name @ ("zhuge" | "fastack" | "scone" | "scone-rtc") => {
                let roles = lowlat_sim::assist::flow_roles(scenario, name == "fastack");
                for (k, &i) in mapped.iter().enumerate() {
                    let f = &scenario.flows[i];
                    let bulk = f.transport.as_ref().is_some_and(|t| t.web.is_none() && t.downloads.is_none());
                    parses[k] = match (name, roles[i]) {
                        ("fastack", lowlat_assist::FlowRole::InBand(_)) => Parse::Any,
                        (_, lowlat_assist::FlowRole::InBand(_)) => Parse::Rtp,
                        ("scone" | "scone-rtc", _) => Parse::Any,
                        (_, lowlat_assist::FlowRole::OutOfBand) if bulk => Parse::Transport,
                        (_, lowlat_assist::FlowRole::OutOfBand) => {
                            return Err(format!(
                                "{}: flow {:?}: bottleneck.assist = {name:?} on real packets acts on rtp-video \
                                 flows with a rate controller and bulk flows only (expected one of those, or \
                                 name another flow with --flow)",
                                scenario.source, f.id
                            ))
                        }
                        _ => Parse::Any,
                    };
                    if parses[k] != Parse::Any && (f.access.is_some() || f.reverse) {
                        return Err(format!(
                            "{}: flow {:?}: bottleneck.assist = {name:?} on real packets: an assisted flow may \
                             not have an access link or reverse = true yet",
                            scenario.source, f.id
                        ));
                    }
                }
                if parses.iter().all(|p| *p == Parse::Any) {
                    let want = match name {
                        "zhuge" => "an rtp-video flow with a rate controller (in-band) or a bulk flow (out-of-band)",
                        "fastack" => "a bulk flow (lowlat's transport, `lowlat send` for a bulk flow)",
                        _ => "an rtp-video flow with a rate controller (the signal's receiver)",
                    };
                    return Err(format!(
                        "{}: bottleneck.assist = {name:?} on real packets needs a relayed flow to be {want}",
                        scenario.source
                    ));
                }
                lowlat_sim::assist::assist_middlebox(scenario)
            }
            other => {
                return Err(format!(
                    "{}: bottleneck.assist = {other:?}: expected \"none\", \"zhuge\", \"fastack\", \"scone\" or \"scone-rtc\"",
                    scenario.source
                ))
            }
        };
        let (seed, bin) = (scenario.seed, scenario.bin);
        let mut links = Vec::new();
        let mut names = Vec::new();
        let mut add = |cfg: &LinkConfig, name: String| -> usize {
            links.push(Link::new(cfg, seed, &name, bin));
            names.push(name);
            links.len() - 1
        };
        // The same names and therefore random streams as the simulator's dumbbell.
        let bottleneck = add(&scenario.bottleneck, "bottleneck".into());
        let reverse = add(&scenario.reverse, "reverse".into());
        let mut flows = Vec::with_capacity(mapped.len().max(1));
        for (k, &i) in mapped.iter().enumerate() {
            let f = &scenario.flows[i];
            let (mut fwd, mut back) = (Path::default(), Path::default());
            let access = f.access.as_ref().map(|c| {
                (add(c, format!("flow.{}.access.up", f.id)), add(c, format!("flow.{}.access.down", f.id)))
            });
            let egress = f.egress.as_ref().map(|c| {
                (add(c, format!("flow.{}.egress.down", f.id)), add(c, format!("flow.{}.egress.up", f.id)))
            });
            if let Some((up, _)) = access {
                fwd.push(up);
            }
            fwd.push(bottleneck);
            if let Some((down, _)) = egress {
                fwd.push(down);
            }
            if let Some((_, up)) = egress {
                back.push(up);
            }
            back.push(reverse);
            if let Some((_, down)) = access {
                back.push(down);
            }
            if f.reverse {
                std::mem::swap(&mut fwd, &mut back);
            }
            flows.push(FlowPaths { index: i as u32, forward: fwd, reverse: back, parse: parses[k] });
        }
        if flows.is_empty() {
            // A scenario without flows: its bottleneck and reverse link alone, as flow 0.
            let (mut fwd, mut back) = (Path::default(), Path::default());
            fwd.push(bottleneck);
            back.push(reverse);
            flows.push(FlowPaths { index: 0, forward: fwd, reverse: back, parse: Parse::Any });
        }
        let mut by_flow = vec![None; scenario.flows.len().max(1)];
        for (k, f) in flows.iter().enumerate() {
            by_flow[f.index as usize] = Some(k as u8);
        }
        if let Some(mb) = middlebox {
            links[BOTTLENECK].set_middlebox(mb);
        }
        let wake = vec![None; links.len()];
        Ok(Network {
            links,
            names,
            flows,
            by_flow,
            delivered: VecDeque::with_capacity(256),
            wake,
            taken: VecDeque::new(),
            assist_out: VecDeque::new(),
            ack_pn: 0,
        })
    }

    /// The scenario indices of the flows clients are mapped to, in order (the one `--flow`
    /// named, or every flow of the scenario; flow 0 if it has none).
    pub fn mapped_flows(&self) -> impl Iterator<Item = u32> + '_ {
        self.flows.iter().map(|f| f.index)
    }

    fn paths(&self, flow: u32) -> &FlowPaths {
        let k = self.by_flow.get(flow as usize).copied().flatten().unwrap_or(0);
        &self.flows[usize::from(k)]
    }

    /// The first mapped flow's index in the scenario: the flow id a single client's packets carry.
    pub fn flow_index(&self) -> u32 {
        self.flows[0].index
    }

    /// What the relay must read in each forward datagram of scenario flow `flow`.
    pub fn parse(&self, flow: u32) -> Parse {
        self.paths(flow).parse
    }

    /// A reverse packet the middlebox took: its id, and whether the middlebox keeps it to release
    /// it later (`true`: keep its payload) or dropped it (`false`: the payload can go).
    pub fn poll_taken(&mut self) -> Option<(u64, bool)> {
        self.taken.pop_front()
    }

    /// Feedback the middlebox built for the sender of a flow (its scenario index, the bytes), to
    /// send it from the site.
    pub fn poll_assist_feedback(&mut self) -> Option<(u32, Vec<u8>)> {
        self.assist_out.pop_front()
    }

    /// What the middlebox at the bottleneck's site releases or builds now.
    fn drain_site(&mut self, now: Time) {
        if self.links[BOTTLENECK].middlebox().is_none() {
            return;
        }
        while let Some((dir, pkt)) = self.links[BOTTLENECK].poll_inject(now) {
            match dir {
                Direction::Forward => self.links[BOTTLENECK].inject_forward(now, pkt),
                Direction::Reverse => self.after_site(now, pkt),
            }
        }
        while let Some(fb) = self.links[BOTTLENECK].poll_feedback(now) {
            let flow = fb.flow.0;
            match fb.payload {
                FeedbackPayload::Rtcp(bytes) => self.assist_out.push_back((flow, bytes)),
                FeedbackPayload::Frame(frame) => match frame.downcast::<lowlat_transport::AckFrame>() {
                    Ok(ack) => {
                        let mut bytes = Vec::with_capacity(64);
                        crate::quic::encode_ack(self.ack_pn, &ack, &mut bytes);
                        self.ack_pn += 1;
                        self.assist_out.push_back((flow, bytes));
                    }
                    Err(other) => {
                        if let Ok(signal) = other.downcast::<lowlat_assist::scone::SconeSignal>() {
                            let (lowlat_assist::scone::SconeSignal::Capacity(bytes)
                            | lowlat_assist::scone::SconeSignal::Advice(bytes)) = *signal;
                            self.assist_out.push_back((flow, bytes));
                        }
                    }
                },
            }
        }
        self.wake[BOTTLENECK] = self.links[BOTTLENECK].poll_timeout();
    }

    /// A reverse packet continues from the site (the end of the reverse link).
    fn after_site(&mut self, now: Time, mut pkt: Packet) {
        let path = self.paths(pkt.flow.0).reverse;
        let site = (0..path.len).find(|&h| path.get(h) == Some(REVERSE)).unwrap_or(0);
        pkt.hop = site + 1;
        match path.get(pkt.hop) {
            Some(next) => self.enter(next, now, pkt),
            None => self.delivered.push_back((Direction::Reverse, pkt)),
        }
    }

    /// Completes every transmission that ended by `now` on every link (links complete lazily):
    /// call before reading their statistics.
    pub fn settle(&mut self, now: Time) {
        self.links.iter_mut().for_each(|l| l.settle(now));
    }

    /// The links, in the order of [`Network::link_names`].
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// `bottleneck`, `reverse`, `flow.<id>.access.up`, ... as in the simulator.
    pub fn link_names(&self) -> &[String] {
        &self.names
    }

    fn path(&self, flow: u32, d: Direction) -> Path {
        let p = self.paths(flow);
        match d {
            Direction::Forward => p.forward,
            Direction::Reverse => p.reverse,
        }
    }

    /// A packet enters its flow's path in its direction at `now` (`kind` Data: forward, Feedback:
    /// reverse; `flow`: a mapped scenario flow, else the first mapped flow's path).
    pub fn handle_input(&mut self, now: Time, mut pkt: Packet) {
        pkt.hop = 0;
        let first = self.path(pkt.flow.0, direction(pkt.kind)).get(0).expect("every path holds a bottleneck");
        self.enter(first, now, pkt);
    }

    fn enter(&mut self, link: usize, now: Time, pkt: Packet) {
        self.links[link].handle_input(now, pkt);
        self.wake[link] = self.links[link].poll_timeout();
        if link == BOTTLENECK {
            self.drain_site(now);
        }
    }

    /// Runs every link due by `now`; packets leaving a link go on to the next hop at `now` or out
    /// of the network ([`Network::poll_output`]).
    pub fn handle_timeout(&mut self, now: Time) {
        loop {
            let mut progressed = false;
            for i in 0..self.links.len() {
                if self.wake[i].is_none_or(|t| t > now) {
                    continue;
                }
                progressed = true;
                self.links[i].handle_timeout(now);
                while let Some(mut pkt) = self.links[i].poll_output(now) {
                    // Feedback leaving the reverse link passes the bottleneck's site.
                    if i == REVERSE
                        && pkt.kind == PacketKind::Feedback
                        && self.links[BOTTLENECK].middlebox().is_some()
                    {
                        let verdict = self.links[BOTTLENECK].handle_reverse(now, &mut pkt);
                        if verdict != Verdict::Pass {
                            self.taken.push_back((pkt.id, verdict == Verdict::Consume));
                            self.drain_site(now);
                            continue;
                        }
                    }
                    let path = self.path(pkt.flow.0, direction(pkt.kind));
                    pkt.hop += 1;
                    match path.get(pkt.hop) {
                        Some(next) => self.enter(next, now, pkt),
                        None => self.delivered.push_back((direction(pkt.kind), pkt)),
                    }
                }
                self.wake[i] = self.links[i].poll_timeout();
                if i == BOTTLENECK {
                    self.drain_site(now);
                }
            }
            if !progressed {
                return;
            }
        }
    }

    /// The next packet that left the network: which way it went, and the packet.
    pub fn poll_output(&mut self) -> Option<(Direction, Packet)> {
        self.delivered.pop_front()
    }

    /// When [`Network::handle_timeout`] is next needed.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.wake.iter().flatten().min().copied()
    }

    /// The propagation delay of scenario flow `flow`'s links in direction `d`.
    pub fn path_delay(&self, flow: u32, d: Direction) -> lowlat_core::Duration {
        let p = self.path(flow, d);
        (0..p.len)
            .filter_map(|h| p.get(h))
            .map(|l| self.links[l].delay())
            .fold(lowlat_core::Duration::ZERO, |a, b| a + b)
    }

    /// Packets inside every link of direction `d` (each link carries one direction), every flow's.
    pub fn packets_inside_all(&self, d: Direction) -> usize {
        let mut seen = [false; 256];
        let mut n = 0;
        for f in &self.flows {
            let p = if d == Direction::Forward { f.forward } else { f.reverse };
            for l in (0..p.len).filter_map(|h| p.get(h)) {
                if !std::mem::replace(&mut seen[l], true) {
                    n += self.links[l].packets_inside();
                }
            }
        }
        n
    }

    /// Packets inside the links of flow `flow`'s path in direction `d` (queued, in service or
    /// propagating; the shared bottleneck and reverse link count every flow's).
    pub fn packets_inside(&self, flow: u32, d: Direction) -> usize {
        let p = self.path(flow, d);
        (0..p.len).filter_map(|h| p.get(h)).map(|l| self.links[l].packets_inside()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::{Bytes, FlowId};
    use lowlat_sim::Format;

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nduration = \"2 s\"\n[bottleneck]\nrate = \"1 Mbit/s\"\ndelay = \"10 ms\"\n{extra}\n\
             [[flows]]\nid = \"f\"\nkind = \"cbr\"\nrate = \"1 Mbit/s\"\npacket_size = \"1250 B\"\n\
             access = {{ rate = \"1 Gbit/s\", delay = \"1 ms\" }}\n"
        );
        Scenario::parse(&text, Format::Toml, "t.toml", std::path::Path::new(".")).unwrap()
    }

    #[test]
    fn paths_match_the_simulators_dumbbell() {
        let n = Network::from_scenario(&scenario(""), None).unwrap();
        assert_eq!(n.link_names(), ["bottleneck", "reverse", "flow.f.access.up", "flow.f.access.down"]);
        assert!(Network::from_scenario(&scenario(""), Some("nope"))
            .unwrap_err()
            .contains("no flow \"nope\""));
        let err = Network::from_scenario(&scenario("assist = \"zhuge\""), None).unwrap_err();
        assert!(err.contains("rtp-video"), "{err}");
        let err = Network::from_scenario(&scenario("assist = \"fastack\""), None).unwrap_err();
        assert!(err.contains("\"fastack\"") && err.contains("a bulk flow"), "{err}");
        let err = Network::from_scenario(&scenario("assist = \"scone-rtc\""), None).unwrap_err();
        assert!(err.contains("rtp-video"), "{err}");
    }

    #[test]
    fn a_packet_crosses_access_then_bottleneck_in_their_times() {
        let mut n = Network::from_scenario(&scenario(""), None).unwrap();
        // 1250 B at 1 Mbit/s: 10 ms of service; plus 10 ms propagation; access: 10 us + 1 ms.
        n.handle_input(Time::ZERO, Packet::new(0, FlowId(0), Bytes(1250), 0, Time::ZERO));
        let mut t = Time::ZERO;
        while n.poll_output().is_none() {
            t = n.poll_timeout().expect("the packet is inside");
            n.handle_timeout(t);
            if let Some((d, p)) = n.delivered.front() {
                assert_eq!((*d, p.id), (Direction::Forward, 0));
            }
        }
        assert_eq!(t, Time(10_000 + 1_000_000 + 10_000_000 + 10_000_000));
        let mut fb = Packet::new(1, FlowId(0), Bytes(125), 0, t);
        fb.kind = PacketKind::Feedback;
        n.handle_input(t, fb);
        assert_eq!(n.packets_inside(0, Direction::Reverse), 1);
        assert_eq!(n.packets_inside(0, Direction::Forward), 0);
    }
}
