//! The simulation: a dumbbell topology built from a [`Scenario`], driven on virtual time.
//!
//! ```text
//! sender_i -access_i-> R1 =bottleneck=> R2 -egress_i-> receiver_i
//! sender_i <-access_i- R1 <=reverse==== R2 <-egress_i- receiver_i
//! ```
//! Access and egress links are optional per flow. Each packet follows its flow's path (forward for
//! data, reverse for feedback); the driver moves it from link to link and wakes components at the
//! times they ask for. Nothing here reads the wall clock except to report how long a run took.

use crate::app::{AssistFeedback, Endpoint, Sink, Transmit};
use crate::downloads::{self, DownloadReceiver, DownloadSender};
use crate::engine::{Target, Wakeups};
use crate::media::{self, RtpReceiver, RtpSender};
use crate::results::RunResult;
use crate::scenario::Scenario;
use crate::traffic::{FlowMetrics, Source};
use crate::transport::{self, AckReceiver, BulkSender};
use crate::transport_media::{TransportVideoReceiver, TransportVideoSender};
use crate::web::{self, WebReceiver, WebSender};
use lowlat_core::rng::stream;
use lowlat_core::{FlowId, Packet, PacketKind, Time};

/// The `app` word of feedback a middlebox built (its content is in `assist_payloads`, at the
/// slot its `seq` word names).
const ASSIST_APP: u64 = u64::MAX - 1;

/// A downloads flow's propagation RTT and request delay (client to server, one way), for its
/// handshake model: the delays of the links its packets cross.
fn download_delays(scenario: &Scenario, f: &crate::scenario::FlowConfig) -> downloads::PathDelays {
    let d = |l: &Option<LinkConfig>| l.as_ref().map_or(lowlat_core::Duration::ZERO, |c| c.delay);
    let edges = d(&f.access) + d(&f.egress);
    let (data, back) = if f.reverse {
        (scenario.reverse.delay, scenario.bottleneck.delay)
    } else {
        (scenario.bottleneck.delay, scenario.reverse.delay)
    };
    downloads::PathDelays { rtt: data + back + edges + edges, request: back + edges }
}

use crate::assist::assist_middlebox;
use lowlat_assist::SconeSignal;
use lowlat_net::link::{Link, LinkConfig};
use lowlat_net::middlebox::{Direction, FeedbackPayload, Verdict};
use lowlat_transport::AckFrame;
use lowlat_wire::{CcfbReport, NumReportsConvention, TransportCcFeedback};

/// What a SCONE middlebox's signal says, decoded from its wire bytes; `None` if unreadable or
/// the advice is "unknown".
fn decode_scone(signal: &SconeSignal) -> Option<AssistFeedback> {
    use lowlat_core::{Bitrate, Bytes};
    Some(AssistFeedback::Signal(match signal {
        SconeSignal::Capacity(b) => {
            let r = lowlat_wire::NetworkSignalRepr::decode(b).ok()?;
            lowlat_cc::NetworkSignal {
                capacity: Bitrate::bps(r.capacity_bps),
                queue: Bytes(r.queue_bytes),
                long_term: false,
            }
        }
        SconeSignal::Advice(b) => {
            let r = lowlat_wire::SconeRepr::decode(b).ok()?;
            let bps = lowlat_wire::scone::signal_to_bps(r.rate_signal).ok()??;
            lowlat_cc::NetworkSignal {
                capacity: Bitrate::from_bps_f64(bps),
                queue: Bytes(0),
                long_term: true,
            }
        }
    }))
}

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
    /// The hop at which the path crosses `link`, if it does.
    fn index_of(&self, link: u32) -> Option<u8> {
        (0..self.len).find(|&h| self.links[h as usize] == link)
    }
}

pub(crate) struct FlowState {
    /// The sender endpoint (sends data on the forward path).
    pub(crate) sender: Box<dyn Endpoint>,
    /// The receiver endpoint (sends feedback on the reverse path).
    pub(crate) receiver: Box<dyn Endpoint>,
    forward: Path,
    reverse: Path,
    pub(crate) metrics: FlowMetrics,
    /// The receiver is passive ([`Endpoint::is_passive`]): data reaching it is only counted.
    passive: bool,
    /// The receiver keeps its ACK frames in flight ([`Endpoint::ack_ring`]): an ACK packet
    /// reaching the sender takes its frame from there ([`Endpoint::handle_ack`]).
    carries_acks: bool,
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
    /// What the feedback a middlebox built says, at the slot the packet carrying it names in its
    /// `seq` word (which nothing reads of such a packet); a slot is free again once its packet
    /// has arrived (one whose packet is lost stays taken).
    assist_payloads: Vec<Option<FeedbackPayload>>,
    /// Free slots of `assist_payloads`.
    free_payload_slots: Vec<u64>,
    /// Per flow: the last sequence number a middlebox's report covered (to unwrap 16-bit ones).
    assist_seq: Vec<Option<u64>>,
    /// Room for a report's decoded entries and for its arrivals, used report after report (no
    /// allocation per report).
    assist_raw: Vec<(u16, Option<Time>)>,
    assist_arrivals: Vec<(u64, Option<Time>)>,
    next_packet_id: u64,
    pub(crate) wall: std::time::Duration,
    /// Events processed at the current instant: a guard against a component that keeps asking
    /// to be woken now without making progress (which would otherwise hang the run).
    events_at_now: u64,
    /// The pcap being written, when asked for.
    capture: Option<crate::capture::Capture>,
    /// The last instant [`Simulation::advance`] processed events up to (links settle to it).
    horizon: Option<Time>,
    /// Per link: how its output is handed on (one small record per link, read once per hop).
    hops: Vec<HopMode>,
    /// The quiet links, each after the link that feeds it (the order to settle them in).
    quiet_order: Vec<u32>,
    /// The horizon of the [`Simulation::advance`] in progress: quiet links hand on what reaches
    /// their far end by then.
    flush_until: Time,
    /// The bottleneck's middlebox acts at its site (it does more than watch its queue, see
    /// [`lowlat_net::Middlebox::only_watches`]): reverse packets pass it, and what it releases or
    /// builds is drained after each of its link's events.
    site: bool,
    /// The site's middlebox hears of transmissions ahead and what it builds is handed on ahead
    /// of the driver's clock (see [`Simulation::find_quiet_links`]).
    site_ahead: bool,
    /// The site's middlebox lets feedback marked [`lowlat_core::APP_NON_CC_FEEDBACK`] by
    /// untouched ([`lowlat_net::Middlebox::passes_non_cc_feedback`]): it is not shown it.
    site_passes_non_cc: bool,
}

/// How the driver moves a link's output on (see [`Simulation::find_quiet_links`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct HopMode {
    /// Quiet: never woken, its output handed on as soon as it is known, up to `flush_until`.
    quiet: bool,
    /// Hands its packets on ahead: as soon as their delivery is known, to next hops only it
    /// feeds, which take them at their arrival instants; woken only to start a packet that
    /// waited in its queue (or to deliver one due beyond an earlier horizon).
    ahead: bool,
    /// Quiet or ahead, and eager ([`Link::set_eager`]): each packet's fate is known on arrival,
    /// so [`Link::pass`] hands it straight back for its next hop.
    passes: bool,
    /// The reverse link of a site whose middlebox acts, handing on ahead: the feedback it passes
    /// on is shown to the middlebox at its instant (as [`Simulation::hand_ahead_past_site`]).
    past_site: bool,
    /// Every packet leaving the link goes on to this one (no path ends at the link, and all
    /// that cross it go on to the same link): its next hop, without a look at its flow's path.
    next: Option<u32>,
    /// Every path crossing the link ends there, and no site's middlebox sees what leaves it:
    /// each packet it delivers goes to its endpoint, without a look at its flow's path.
    ends: bool,
    /// Ends at receivers that act only on arrivals, whose answers go to links only they feed
    /// (see [`Simulation::find_quiet_links`]): each packet is handed to its receiver as soon as
    /// its delivery is known, at its own instant, up to `flush_until`; the link is woken only
    /// to start a packet that waited in its queue (or to deliver one beyond an earlier horizon).
    to_receivers: bool,
}

/// More events than this at one simulated instant mean a component is stuck.
const MAX_EVENTS_AT_ONE_INSTANT: u64 = 10_000_000;

/// Index of the forward bottleneck in the link arena.
const BOTTLENECK: u32 = 0;
/// Index of the reverse bottleneck in the link arena.
const REVERSE: u32 = 1;

impl Simulation {
    /// Records every packet the endpoints send from now on as a pcap (see [`crate::capture`]);
    /// [`Simulation::take_pcap`] returns it.
    pub fn capture_pcap(&mut self) {
        self.capture.get_or_insert_with(crate::capture::Capture::new);
        // No receiver answers ahead of the clock from now on: the capture records packets as
        // they are sent. (Its links still ask for the wake-ups a drained link asks for, which
        // are right for one that is not drained too.)
        self.hops.iter_mut().for_each(|h| h.to_receivers = false);
    }

    /// The pcap recorded since [`Simulation::capture_pcap`] (and stops recording).
    pub fn take_pcap(&mut self) -> Option<Vec<u8>> {
        self.capture.take().map(crate::capture::Capture::finish)
    }

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
            if f.reverse {
                // Data from the right-hand host over the reverse link; feedback over the bottleneck.
                std::mem::swap(&mut forward, &mut back);
            }
            let rng = stream(seed, &format!("flow.{}", f.id));
            let (sender, mut receiver): (Box<dyn Endpoint>, Box<dyn Endpoint>) =
                match (&f.media, &f.transport) {
                    (_, Some(t)) if t.web.is_some() => {
                        let web = t.web.expect("checked");
                        let mb = web::mailbox();
                        (
                            Box::new(
                                WebSender::new(web, &t.cc, f.packet_size, f.start, f.stop, rng, mb.clone())
                                    .expect("validated controller"),
                            ),
                            Box::new(WebReceiver::new(web.sources, mb)),
                        )
                    }
                    (_, Some(t)) if t.downloads.is_some() => {
                        let conns = t.downloads.clone().expect("checked");
                        let (mb, arrivals) = downloads::channels(conns.len());
                        let delays = download_delays(&scenario, f);
                        (
                            Box::new(
                                DownloadSender::new(
                                    conns,
                                    &t.cc,
                                    f.packet_size,
                                    delays,
                                    f.start,
                                    f.stop,
                                    bin,
                                    mb.clone(),
                                    arrivals.clone(),
                                )
                                .expect("validated controller"),
                            ),
                            Box::new(DownloadReceiver::new(mb, arrivals)),
                        )
                    }
                    (_, Some(t)) => {
                        // Invariant: the scenario validator checked the controller's name.
                        let cc =
                            transport::window_controller(&t.cc, f.packet_size).expect("validated controller");
                        (
                            Box::new(
                                BulkSender::new(cc, f.packet_size, t.size, f.start, f.stop).with_ecn(f.ecn),
                            ),
                            Box::new(AckReceiver::new()),
                        )
                    }
                    (Some(m), None) if crate::scenario::is_window_controller(&m.cc) => (
                        Box::new(
                            TransportVideoSender::new(m, f.start, f.stop, f.rate, f.packet_size, rng)
                                .expect("validated controller")
                                .with_ecn(f.ecn),
                        ),
                        Box::new(TransportVideoReceiver::new(m, f.start)),
                    ),
                    (Some(m), None) => {
                        let mb = media::mailbox();
                        (
                            Box::new(
                                RtpSender::new(m, f.start, f.stop, f.rate, f.packet_size, rng, mb.clone())
                                    .with_ecn(f.ecn),
                            ),
                            Box::new(RtpReceiver::new(m, f.start, mb)),
                        )
                    }
                    (None, None) => (Box::new(Source::new(f, rng)), Box::new(Sink)),
                };
            let carries_acks = receiver.ack_ring().is_some();
            flows.push(FlowState {
                sender,
                receiver,
                forward,
                reverse: back,
                metrics: FlowMetrics::new(bin),
                passive: false,
                carries_acks,
            });
        }
        // "none" leaves the queue without a middlebox: no virtual call per packet.
        if let Some(mb) = assist_middlebox(&scenario) {
            links[bottleneck as usize].set_middlebox(mb);
        }
        let mut wakeups = Wakeups::new(links.len(), 2 * flows.len());
        for (i, f) in flows.iter().enumerate() {
            wakeups.set(Target::Endpoint(2 * i as u32), f.sender.poll_timeout());
            wakeups.set(Target::Endpoint(2 * i as u32 + 1), f.receiver.poll_timeout());
        }
        let end = Time::ZERO + scenario.duration;
        let scenario_flow_count = flows.len();
        let link_count = links.len();
        let mut sim = Simulation {
            scenario,
            now: Time::ZERO,
            end,
            links,
            link_names,
            flows,
            bottleneck,
            reverse,
            wakeups,
            assist_payloads: Vec::new(),
            free_payload_slots: Vec::new(),
            assist_seq: vec![None; scenario_flow_count],
            assist_raw: Vec::new(),
            assist_arrivals: Vec::new(),
            next_packet_id: 0,
            wall: std::time::Duration::ZERO,
            events_at_now: 0,
            capture: None,
            horizon: None,
            hops: vec![HopMode::default(); link_count],
            quiet_order: Vec::new(),
            flush_until: Time::ZERO,
            site: false,
            site_ahead: false,
            site_passes_non_cc: false,
        };
        sim.find_quiet_links();
        sim
    }

    /// Marks the links whose packets can be handed on without waking them. A link is quiet when
    /// it has no middlebox and every packet it delivers goes either to a passive receiver
    /// ([`Endpoint::is_passive`]) or to a quiet link that only it feeds. Nothing but counters
    /// and quiet links downstream then sees a quiet link's output, and each of those takes its
    /// packets in delivery order from a single FIFO, so the driver may hand a packet on as soon
    /// as the link has completed it (at the packet's own arrival instant, possibly ahead of the
    /// driver's clock) instead of waking the link at that instant: every link sees the same
    /// arrivals at the same instants and every counter the same values, and the other
    /// components' wake-ups keep their order. An open-loop flow's path thus costs one event per
    /// packet (its source's) instead of one per hop.
    fn find_quiet_links(&mut self) {
        #[derive(Clone, Copy, PartialEq)]
        enum Feeder {
            None,
            Link(u32),
            Several,
        }
        let n = self.links.len();
        for f in &mut self.flows {
            f.passive = f.receiver.is_passive();
        }
        // Who feeds each link, and where each link's packets go (a link, or an endpoint that is
        // passive or not).
        let mut feeder = vec![Feeder::None; n];
        let mut next: Vec<Vec<Option<u32>>> = vec![Vec::new(); n];
        let mut next_passive = vec![true; n];
        // Whether some path ends at each link.
        let mut last = vec![false; n];
        for f in &self.flows {
            // (A passive receiver sends nothing: its reverse path carries no packet.)
            let carrying = if f.passive { 1 } else { 2 };
            for (path, to_passive) in [(f.forward, f.passive), (f.reverse, false)].into_iter().take(carrying)
            {
                let mut prev = None;
                for h in 0..path.len {
                    let l = path.links[h as usize];
                    let from = prev.map_or(Feeder::Several, Feeder::Link);
                    feeder[l as usize] = match feeder[l as usize] {
                        Feeder::None => from,
                        same if same == from => same,
                        _ => Feeder::Several,
                    };
                    match path.get(h + 1) {
                        Some(m) => next[l as usize].push(Some(m)),
                        None => {
                            next_passive[l as usize] &= to_passive;
                            last[l as usize] = true;
                        }
                    }
                    prev = Some(l);
                }
            }
        }
        let mut quiet = vec![false; n];
        // Paths are short chains: each pass settles at least one more hop from their ends.
        for _ in 0..=n {
            let mut changed = false;
            for l in 0..n {
                let q = !quiet[l]
                    && self.links[l].middlebox().is_none()
                    && next_passive[l]
                    && next[l].iter().all(|m| {
                        m.is_some_and(|m| quiet[m as usize] && feeder[m as usize] == Feeder::Link(l as u32))
                    });
                if q {
                    quiet[l] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        // Links that hand their packets on ahead: no middlebox, every packet goes to a link fed
        // by this one alone and without a middlebox, or with one that only watches its queue (or
        // to a passive receiver), and not the reverse link of a site whose middlebox acts
        // (feedback passes the site when it leaves that link). Such a next hop sees its arrivals
        // in order, each at its own instant, whenever the driver hands them over, as long as that
        // is before the driver's clock reaches them, which handing on at once guarantees; it
        // hears of nothing else (no other feeder; a watching middlebox hears only its queue's
        // calls, still in order), so its packets leave it at the same instants.
        let site = self.links[self.bottleneck as usize].middlebox().is_some_and(|m| !m.only_watches());
        self.site = site;
        self.site_passes_non_cc = site
            && self.links[self.bottleneck as usize].middlebox().is_some_and(|m| m.passes_non_cc_feedback());
        self.mark_unread_acks();
        let past_site = site && self.reverse_site_allows_ahead(&next);
        // A middlebox that hears of transmissions ahead has its link work each packet's fate
        // out at its admission (no wake-up at each transmission's end), and what it builds is
        // handed on ahead, at its own instant; its link then takes its arrivals ahead of the
        // driver's clock as well. Only where what it builds goes to links that get nothing else
        // (so their arrivals stay in order).
        let b = self.bottleneck as usize;
        let site_eager = self.links[b].middlebox().is_some_and(|m| m.hears_transmissions_ahead())
            && self.links[b].can_be_eager()
            && self.site_builds_for_own_links(|m| feeder[m as usize] == Feeder::Link(self.reverse));
        self.site_ahead = site_eager;
        let ahead: Vec<bool> = (0..n)
            .map(|l| {
                !quiet[l]
                    && self.links[l].can_be_eager()
                    && !(site && l as u32 == self.reverse && !past_site)
                    && next_passive[l]
                    && !next[l].is_empty()
                    && next[l].iter().all(|m| {
                        m.is_some_and(|m| {
                            feeder[m as usize] == Feeder::Link(l as u32)
                                && (self.links[m as usize].middlebox().is_none_or(|mb| mb.only_watches())
                                    || (m as usize == b && site_eager))
                        })
                    })
            })
            .collect();
        // A quiet link's packets may be handed on as early as an ahead link's: when it can, it
        // works their fates out on arrival too (the same draws in the same order, see
        // `Link::set_eager`), and both then pass each packet straight on ([`Link::pass`], the
        // path of a link without a middlebox; the site's link that hears of transmissions ahead
        // is eager too, but takes its packets through `handle_input`).
        let to_receivers = self.links_to_receivers(&quiet, &last, &next);
        for l in 0..n {
            let eager = self.links[l].set_eager(quiet[l] || ahead[l] || (l == b && site_eager));
            // The reverse link of a site whose middlebox acts hands on ahead only if the
            // middlebox's verdicts are fixed (`reverse_site_allows_ahead`): the feedback it passes
            // straight on is shown to the middlebox then, as `hand_ahead_past_site` shows what it
            // hands on (never quiet: its feedback goes to senders).
            let past_site = site && l as u32 == self.reverse && ahead[l];
            let passes = eager
                && (quiet[l] || ahead[l])
                && self.links[l].middlebox().is_none()
                && (!(site && l as u32 == self.reverse) || past_site);
            let first = next[l].first().copied().flatten();
            let next_hop = first.filter(|_| !last[l] && next[l].iter().all(|&m| m == first));
            // (Feedback leaving the reverse link of a site whose middlebox acts passes the site.)
            let ends = last[l] && next[l].is_empty() && !(site && l as u32 == self.reverse);
            let to_receivers = ends && to_receivers[l];
            self.links[l].set_drained_ahead(to_receivers);
            self.hops[l] = HopMode {
                quiet: quiet[l],
                ahead: ahead[l],
                passes,
                past_site,
                next: next_hop,
                ends,
                to_receivers,
            };
        }
        let mut order = Vec::new();
        for f in &self.flows {
            for path in [f.forward, f.reverse] {
                for h in 0..path.len {
                    let l = path.links[h as usize];
                    if quiet[l as usize] && !order.contains(&l) {
                        order.push(l);
                    }
                }
            }
        }
        self.quiet_order = order;
    }

    /// Per link: whether it may hand its packets to their receivers ahead of the driver's clock
    /// ([`HopMode::to_receivers`]). Only data paths end at it (no sender's feedback), and each
    /// receiver they reach is passive or acts only on arrivals ([`Endpoint::acts_only_on_arrival`]:
    /// it sends at the instant of each, and never asks for a timer), with its answers going to
    /// a first link that nothing else feeds and that has no middlebox. Such a receiver sees its
    /// packets in delivery order, each at its own instant, whenever the driver hands them over;
    /// what it sends reaches its first link in that order, each at its instant, as an ahead
    /// link's next hop takes its arrivals; so every component sees the same inputs at the same
    /// instants. Events of different components at one instant may run in another order, which
    /// nothing they share can tell. Not while a capture records the endpoints' packets in the
    /// order they are sent.
    fn links_to_receivers(&mut self, quiet: &[bool], last: &[bool], next: &[Vec<Option<u32>>]) -> Vec<bool> {
        let n = self.links.len();
        let mut ok = vec![self.capture.is_none(); n];
        // How many places on the paths that carry packets each link takes (a passive receiver
        // sends nothing back): an answer's first link must take one.
        let mut uses = vec![0u32; n];
        for f in &self.flows {
            let carrying = if f.passive { &[f.forward][..] } else { &[f.forward, f.reverse][..] };
            for path in carrying {
                for h in 0..path.len {
                    uses[path.links[h as usize] as usize] += 1;
                }
            }
        }
        for l in 0..n {
            ok[l] &= !quiet[l] && last[l] && next[l].is_empty();
        }
        for f in &mut self.flows {
            let (data_end, feedback_end) =
                (f.forward.get(f.forward.len - 1), f.reverse.get(f.reverse.len - 1));
            if let Some(e) = feedback_end {
                ok[e as usize] = false;
            }
            let Some(e) = data_end else { continue };
            if f.passive {
                continue;
            }
            let first = f.reverse.get(0);
            let answers_ahead = f.receiver.acts_only_on_arrival()
                && first
                    .is_some_and(|r| uses[r as usize] == 1 && self.links[r as usize].middlebox().is_none());
            ok[e as usize] &= answers_ahead;
        }
        ok
    }

    /// Tells the receivers whose ACK frames nobody reads ([`crate::transport::AckRing::set_unread`]): those of a
    /// flow whose feedback all passes the site (its reverse path crosses the reverse link), where
    /// the middlebox drops every feedback packet of the flow
    /// ([`lowlat_net::ReverseRule::DropsAll`]: FastAck, which acknowledges for the receiver).
    /// Each is still sized, sent and counted; its frame is not written.
    fn mark_unread_acks(&mut self) {
        let b = self.bottleneck as usize;
        let Some(mb) = self.links[b].middlebox().filter(|_| self.site) else { return };
        for (i, f) in self.flows.iter_mut().enumerate() {
            if mb.reverse_rule(FlowId(i as u32)) == lowlat_net::ReverseRule::DropsAll
                && f.reverse.index_of(self.reverse).is_some()
            {
                if let Some(ring) = f.receiver.ack_ring() {
                    ring.set_unread();
                }
            }
        }
    }

    /// Whether the reverse link of a site whose middlebox acts may hand its packets on ahead,
    /// showing the middlebox each feedback packet at its own instant, ahead of the driver's clock
    /// (`next`: where the reverse link's packets go, see [`Simulation::find_quiet_links`]). Only
    /// if the middlebox's verdict on every flow crossing that link is fixed and changes nothing it
    /// reads ([`lowlat_net::ReverseRule`]), and no next hop would get both packets handed on
    /// ahead and packets the site originates at the driver's clock (those must arrive in order):
    /// the flows whose feedback the site drops whole (all that goes that way) may take
    /// the site's own packets, the others must take none.
    fn reverse_site_allows_ahead(&self, next: &[Vec<Option<u32>>]) -> bool {
        use lowlat_net::ReverseRule;
        let Some(mb) = self.links[self.bottleneck as usize].middlebox() else { return true };
        let reverse = self.reverse;
        // Per next hop of the reverse link: whether it takes packets passed on by the site, and
        // whether it takes packets the site drops (and so may take the site's own).
        let mut passes = vec![false; self.links.len()];
        let mut drops = vec![false; self.links.len()];
        for (i, f) in self.flows.iter().enumerate() {
            let rule = mb.reverse_rule(FlowId(i as u32));
            for (path, feedback) in [(f.reverse, true), (f.forward, false)] {
                let Some(h) = path.index_of(reverse) else { continue };
                // Data crossing the reverse link is not shown to the middlebox; its flow must get
                // nothing from it.
                let ok = match rule {
                    ReverseRule::AtItsInstant => false,
                    ReverseRule::DropsAll => feedback,
                    ReverseRule::PassesAll => true,
                };
                if !ok {
                    return false;
                }
                if let Some(m) = path.get(h + 1) {
                    if rule == ReverseRule::DropsAll {
                        drops[m as usize] = true;
                    } else {
                        passes[m as usize] = true;
                    }
                }
            }
        }
        next[reverse as usize].iter().flatten().all(|&m| !(passes[m as usize] && drops[m as usize]))
    }

    /// Whether every packet the site's middlebox may build for a flow goes to a link fed by the
    /// reverse link alone (`fed_by_reverse`) that takes nothing the site passes on: flows it
    /// builds nothing for pass untouched ([`lowlat_net::ReverseRule::PassesAll`]); the others'
    /// feedback is dropped whole at the site ([`lowlat_net::ReverseRule::DropsAll`]), and none
    /// of the flows going on to their next hop is passed.
    fn site_builds_for_own_links(&self, fed_by_reverse: impl Fn(u32) -> bool) -> bool {
        use lowlat_net::ReverseRule;
        let Some(mb) = self.links[self.bottleneck as usize].middlebox() else { return true };
        let reverse = self.reverse;
        let mut passes = vec![false; self.links.len()];
        let mut builds = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            let rule = mb.reverse_rule(FlowId(i as u32));
            if rule != ReverseRule::PassesAll {
                let h = f.reverse.index_of(reverse);
                match (rule, h.and_then(|h| f.reverse.get(h + 1))) {
                    (ReverseRule::DropsAll, Some(m)) if fed_by_reverse(m) => builds.push(m),
                    _ => return false,
                }
            }
            for (path, dropped) in [(f.reverse, rule == ReverseRule::DropsAll), (f.forward, false)] {
                let h = path.index_of(reverse);
                if let Some(m) = h.and_then(|h| path.get(h + 1)).filter(|_| !dropped) {
                    passes[m as usize] = true;
                }
            }
        }
        builds.iter().all(|&m| !passes[m as usize])
    }

    /// Replaces the endpoints of flow `id` (before the run starts): how a library user plugs in
    /// an application of their own. Errors if there is no such flow or the run has started.
    pub fn set_endpoints(
        &mut self,
        id: &str,
        sender: Box<dyn Endpoint>,
        receiver: Box<dyn Endpoint>,
    ) -> Result<(), String> {
        if self.events() > 0 {
            return Err("endpoints can only be replaced before the run starts".into());
        }
        let i =
            self.scenario.flows.iter().position(|f| f.id == id).ok_or_else(|| format!("no flow {id:?}"))?;
        let flow = &mut self.flows[i];
        flow.sender = sender;
        flow.receiver = receiver;
        let (s, r) = (flow.sender.poll_timeout(), flow.receiver.poll_timeout());
        self.wakeups.set(Target::Endpoint(2 * i as u32), s);
        self.wakeups.set(Target::Endpoint(2 * i as u32 + 1), r);
        self.find_quiet_links();
        Ok(())
    }

    /// Says, before the run starts, which per-sample tables [`Simulation::finish_with`] will be
    /// asked for, so that nothing records the others: Zhuge's prediction log (a record per
    /// packet) when `tables.predictions` is false (a sample of it with
    /// `tables.prediction_sample`), the links' statistics when `tables.links` is
    /// (then the summary's `links` is empty and `link_stats` false). The flows' summary and every other table are the
    /// same; a table planned out comes back empty. Errors once the run has started.
    pub fn plan_tables(&mut self, tables: crate::results::Tables) -> Result<(), String> {
        if self.events() > 0 {
            return Err("tables can only be planned before the run starts".into());
        }
        // The senders keep no instant per RTT sample that no table shows.
        self.flows.iter_mut().for_each(|st| st.sender.plan_tables(tables));
        self.links.iter_mut().for_each(|l| l.set_recording(tables.links));
        if self.scenario.assist == "zhuge" {
            // The same middlebox built afresh (nothing has reached it yet), with or without the log.
            if let Some(mb) = crate::assist::assist_middlebox_logging(
                &self.scenario,
                tables.predictions,
                tables.prediction_sample,
            ) {
                self.links[self.bottleneck as usize].set_middlebox(mb);
            }
        }
        Ok(())
    }

    /// Drives every link the plain way from now on: woken for each packet it delivers, none quiet
    /// and none handing on ahead (see [`Simulation::find_quiet_links`]). Results are the same;
    /// only the event count grows. For tests that check exactly that; call before the run
    /// starts.
    #[doc(hidden)]
    pub fn wake_every_hop(&mut self) {
        self.hops.iter_mut().for_each(|h| *h = HopMode::default());
        self.quiet_order.clear();
        self.site_ahead = false;
        self.links.iter_mut().for_each(|l| {
            l.set_eager(false);
            l.set_drained_ahead(false);
        });
    }

    /// The current state of flow `id`'s sending controller (see [`Endpoint::cc_mode`]).
    pub fn cc_mode(&self, id: &str) -> Option<&'static str> {
        let i = self.scenario.flows.iter().position(|f| f.id == id)?;
        self.flows[i].sender.cc_mode()
    }

    /// The handles of the controllers driven from outside the simulator (`cc = "external"` or
    /// `"python:module:Class"`), with their flow's id and controller name, in flow order.
    pub fn external_controllers(&self) -> Vec<(String, String, lowlat_cc::ExternalHandle)> {
        self.scenario
            .flows
            .iter()
            .zip(&self.flows)
            .filter_map(|(spec, f)| {
                let cc = spec.media.as_ref().map(|m| m.cc.clone())?;
                f.sender.external_controller().map(|h| (spec.id.clone(), cc, h))
            })
            .collect()
    }

    /// The propagation delay of flow `flow`'s reverse path.
    pub(crate) fn reverse_propagation(&self, flow: &FlowState) -> lowlat_core::Duration {
        (0..flow.reverse.len)
            .filter_map(|h| flow.reverse.get(h))
            .map(|l| self.links[l as usize].delay())
            .fold(lowlat_core::Duration::ZERO, |a, b| a + b)
    }

    /// The scenario being run.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Where `scenario` departs from the scenario being run, when it differs only in the
    /// forward bottleneck's capacity: the first instant the two capacities differ (`None`: they
    /// never do; see [`lowlat_net::Capacity::first_difference`]). `Err` names what else differs.
    pub fn bottleneck_departure(&self, scenario: &Scenario) -> Result<Option<Time>, String> {
        let mut same = scenario.clone();
        same.bottleneck.capacity = self.scenario.bottleneck.capacity.clone();
        if same != self.scenario {
            let (a, b) = (&same, &self.scenario);
            let fields = [
                ("name", a.name == b.name),
                ("description", a.description == b.description),
                ("seed", a.seed == b.seed),
                ("duration", a.duration == b.duration),
                ("bin", a.bin == b.bin),
                ("bottleneck", a.bottleneck == b.bottleneck),
                ("assist", a.assist == b.assist && a.zhuge == b.zhuge && a.scone == b.scone),
                ("reverse", a.reverse == b.reverse),
                ("flows", a.flows == b.flows),
                ("warnings", a.warnings == b.warnings),
                ("source", a.source == b.source),
            ];
            let mut differ: Vec<&str> = fields.iter().filter(|f| !f.1).map(|f| f.0).collect();
            if differ.is_empty() {
                differ.push("a field not named here");
            }
            return Err(format!(
                "the scenario differs from the one being run in more than its bottleneck's capacity: {}",
                differ.join(", ")
            ));
        }
        Ok(self.scenario.bottleneck.capacity.first_difference(&scenario.bottleneck.capacity))
    }

    /// Continues the run as one built from `scenario` would have gone on: `scenario` differs
    /// only in the bottleneck's capacity, from an instant the run has not reached yet (see
    /// [`Simulation::bottleneck_departure`]). Refused, with the reason and nothing changed, if
    /// anything was worked out with the capacity at or after that instant (the run has
    /// processed it, or the bottleneck has already timed a transmission past it; see
    /// [`lowlat_net::Server::reschedule`]). With it, one run's prefix is shared by variants
    /// that differ later (a capacity drop at several instants): each continues from a copy.
    pub fn switch_bottleneck(&mut self, scenario: Scenario) -> Result<(), String> {
        let Some(from) = self.bottleneck_departure(&scenario)? else {
            self.scenario = scenario;
            return Ok(());
        };
        if let Some(h) = self.horizon.filter(|&h| h >= from) {
            return Err(format!(
                "the bottleneck's capacity changes at {from}, which the run has reached ({h})"
            ));
        }
        let capacity = scenario.bottleneck.capacity.clone();
        self.links[self.bottleneck as usize].reschedule(capacity, from)?;
        self.scenario = scenario;
        Ok(())
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
        // The run covers [0, end): an event exactly at the end belongs to the next run.
        let horizon = if until >= self.end { Time(self.end.as_nanos().saturating_sub(1)) } else { until };
        self.flush_until = horizon;
        while let Some((now, target)) = self.wakeups.pop_until(horizon) {
            if now == self.now {
                self.events_at_now += 1;
                assert!(
                    self.events_at_now < MAX_EVENTS_AT_ONE_INSTANT,
                    "the simulation is stuck at {now}: {target:?} keeps asking to be woken at this instant \
                     without making progress (a bug in that component; please report it with the scenario)"
                );
            } else {
                self.events_at_now = 0;
            }
            self.now = now;
            match target {
                Target::Link(i) => self.wake_link(i, now),
                Target::Endpoint(e) => {
                    self.endpoint(e).handle_timeout(now);
                    self.drain_endpoint(e, now);
                }
            }
        }
        // Quiet links complete and hand on everything up to the horizon (each after its feeder).
        for k in 0..self.quiet_order.len() {
            let l = self.quiet_order[k];
            self.links[l as usize].settle(horizon);
            self.flush_quiet(l);
        }
        self.now = self.now.max(until);
        self.horizon = Some(self.horizon.map_or(horizon, |h| h.max(horizon)));
        self.wall += started.elapsed();
    }

    /// Runs to the end and returns the results.
    pub fn run(mut self) -> RunResult {
        self.advance(self.end);
        self.finish()
    }

    /// The results of the run so far (normally called once [`Simulation::is_done`]).
    pub fn finish(self) -> RunResult {
        self.finish_with(crate::results::Tables::default())
    }

    /// [`Simulation::finish`] building only the per-sample tables `tables` asks for.
    pub fn finish_with(mut self, tables: crate::results::Tables) -> RunResult {
        // Links complete transmissions lazily: count the ones that ended within the run.
        if let Some(h) = self.horizon {
            self.links.iter_mut().for_each(|l| l.settle(h));
        }
        RunResult::collect(&mut self, tables)
    }

    /// Endpoint `e`: the sender of flow `e / 2` if `e` is even, else its receiver.
    fn endpoint(&mut self, e: u32) -> &mut dyn Endpoint {
        let flow = &mut self.flows[(e / 2) as usize];
        if e.is_multiple_of(2) {
            flow.sender.as_mut()
        } else {
            flow.receiver.as_mut()
        }
    }

    /// Sends what endpoint `e` has to send at `now`, then reschedules it.
    #[inline(always)]
    fn drain_endpoint(&mut self, e: u32, now: Time) {
        while let Some(t) = self.endpoint(e).poll_transmit(now) {
            self.send(e, now, t);
        }
        // A time at or before `now` is fine: the endpoint is woken again at this instant.
        let next = self.endpoint(e).poll_timeout().map(|t| t.max(now));
        self.wakeups.set(Target::Endpoint(e), next);
    }

    /// Puts an endpoint's packet on the first hop of its path.
    #[inline(always)]
    fn send(&mut self, e: u32, now: Time, t: Transmit) {
        let flow_index = e / 2;
        let mut pkt = Packet::new(self.next_packet_id, FlowId(flow_index), t.size, t.seq, now);
        self.next_packet_id += 1;
        pkt.app = t.app;
        pkt.ecn = t.ecn;
        if let Some(cap) = self.capture.as_mut() {
            let flow = &self.flows[flow_index as usize];
            let from_sender = e.is_multiple_of(2);
            let ep = if from_sender { flow.sender.as_ref() } else { flow.receiver.as_ref() };
            cap.record(
                now,
                flow_index,
                &self.scenario.flows[flow_index as usize],
                from_sender,
                &t,
                ep.last_payload(),
            );
        }
        let flow = &mut self.flows[flow_index as usize];
        let path = if e.is_multiple_of(2) {
            flow.metrics.on_sent(now, t.size.0);
            flow.forward
        } else {
            pkt.kind = PacketKind::Feedback;
            flow.metrics.on_feedback_sent(t.size.0);
            flow.reverse
        };
        let first = path.get(0).expect("every path holds a bottleneck");
        self.enter_link(first, now, pkt);
    }

    fn wake_link(&mut self, i: u32, now: Time) {
        self.links[i as usize].handle_timeout(now);
        let ends = self.hops[i as usize].ends;
        while let Some(mut pkt) = self.links[i as usize].poll_output(now) {
            if ends {
                // (What `forward` and `next_hop` would find: the end of its path.)
                pkt.hop += 1;
                self.deliver(now, &pkt);
                continue;
            }
            self.forward(now, &mut pkt);
        }
        if self.hops[i as usize].ahead {
            self.hand_ahead(i);
        } else if self.hops[i as usize].to_receivers {
            self.hand_to_receivers(i);
        }
        if i == self.bottleneck && self.site {
            self.drain_site(now);
        }
        let next = self.links[i as usize].poll_timeout();
        // At `now` itself is not the past: a packet the middlebox injected just now can finish at
        // once on a delivery-opportunity link (a mahimahi opportunity at this very instant), and
        // with no propagation delay its delivery is due now too. The engine's guard against
        // stuck instants catches a component that keeps asking for `now`.
        debug_assert!(next.is_none_or(|t| t >= now), "link {i} asked to be woken in the past");
        self.wakeups.set(Target::Link(i), next);
    }

    /// What the middlebox at the bottleneck's site (the access point) releases or builds now:
    /// released packets continue from the site, built feedback starts there towards its sender.
    /// Returns whether anything came out (if nothing did, the site's link still wants to be woken
    /// when it last said; the caller reschedules it otherwise).
    #[inline(always)]
    fn drain_site(&mut self, now: Time) -> bool {
        let b = self.bottleneck as usize;
        if self.site_ahead && self.links[b].feedback_none_by(self.flush_until) {
            // It said it had nothing by then and has heard of nothing since (as after most
            // wake-ups of its link, which deliver a packet): it would say so again.
            return false;
        }
        if !self.site_holds_output() {
            // Nothing to release or hand on: it would say so (one call instead of two and the
            // link's, after most events of its link).
            return false;
        }
        self.drain_site_asked(now)
    }

    /// Whether the site's middlebox holds anything to release or hand on
    /// ([`lowlat_net::Middlebox::holds_output`]). (Apart: inlined, the check costs more in the
    /// code around [`Simulation::drain_site`]'s callers than it saves.)
    #[inline(never)]
    fn site_holds_output(&self) -> bool {
        self.links[self.bottleneck as usize].middlebox().is_some_and(|m| m.holds_output())
    }

    /// [`Simulation::drain_site`] once the middlebox is to be asked.
    #[inline(never)]
    fn drain_site_asked(&mut self, now: Time) -> bool {
        let b = self.bottleneck as usize;
        let mut any = false;
        // A middlebox heard of transmissions ahead never injects (see
        // `Middlebox::hears_transmissions_ahead`): not asked, after every event of its link.
        while let Some((dir, mut pkt)) = if self.site_ahead { None } else { self.links[b].poll_inject(now) } {
            any = true;
            match dir {
                Direction::Forward => self.links[b].inject_forward(now, pkt),
                Direction::Reverse => {
                    pkt.kind = PacketKind::Feedback;
                    pkt.hop = self.site_hop(pkt.flow);
                    self.next_hop(now, &mut pkt);
                }
            }
        }
        // Built ahead (at the instant it leaves, up to the horizon) or now.
        let until = if self.site_ahead { self.flush_until } else { now };
        while let Some((at, fb)) = self.links[b].poll_feedback_at(until) {
            any = true;
            let mut pkt = Packet::new(self.next_packet_id, fb.flow, fb.size, 0, at);
            self.next_packet_id += 1;
            pkt.kind = PacketKind::Feedback;
            pkt.app = ASSIST_APP;
            pkt.hop = self.site_hop(fb.flow);
            pkt.seq = match self.free_payload_slots.pop() {
                Some(slot) => {
                    self.assist_payloads[slot as usize] = Some(fb.payload);
                    slot
                }
                None => {
                    self.assist_payloads.push(Some(fb.payload));
                    self.assist_payloads.len() as u64 - 1
                }
            };
            self.next_hop(at, &mut pkt);
        }
        any
    }

    /// The hop of flow `flow`'s reverse path that ends at the site (its reverse link).
    fn site_hop(&self, flow: FlowId) -> u8 {
        let path = self.flows[flow.index()].reverse;
        path.index_of(self.reverse).unwrap_or(0)
    }

    /// A packet leaves a link at `now`: on to its next hop, or to its endpoint. Feedback leaving
    /// the reverse link passes the bottleneck's site, where a middlebox may act on it.
    // (By reference, as `next_hop` and `deliver`: the packet is not copied on its way.)
    fn forward(&mut self, now: Time, pkt: &mut Packet) {
        if self.site
            && pkt.kind == PacketKind::Feedback
            && !(self.site_passes_non_cc && pkt.app & lowlat_core::APP_NON_CC_FEEDBACK != 0)
        {
            let path = self.flows[pkt.flow.index()].reverse;
            if path.get(pkt.hop) == Some(self.reverse) {
                let b = self.bottleneck;
                let verdict = self.links[b as usize].handle_reverse(now, pkt);
                if verdict != Verdict::Pass {
                    // A packet taken or dropped changes what the middlebox waits for.
                    self.drain_site(now);
                    self.wakeups.set(Target::Link(b), self.links[b as usize].poll_timeout());
                    return;
                }
            }
        }
        self.next_hop(now, pkt);
    }

    /// On to the hop after the current one, or to the endpoint.
    fn next_hop(&mut self, now: Time, pkt: &mut Packet) {
        let flow = &self.flows[pkt.flow.index()];
        let path = if pkt.kind == PacketKind::Data { flow.forward } else { flow.reverse };
        pkt.hop += 1;
        match path.get(pkt.hop) {
            Some(next) => self.enter_link(next, now, *pkt),
            None => self.deliver(now, pkt),
        }
    }

    /// A packet arrives at link `link` at `now`. Through links that pass their packets straight
    /// on ([`HopMode::passes`]) it goes from hop to hop in this loop, with no event and no trip
    /// through the links' packets in propagation.
    fn enter_link(&mut self, mut link: u32, mut now: Time, mut pkt: Packet) {
        let mut mode = self.hops[link as usize];
        while mode.passes {
            let Some(at) = self.links[link as usize].pass(now, &mut pkt, self.flush_until) else {
                // Kept (queued behind packets not yet handed on, beyond the horizon, dropped or
                // lost): what it has for its next hops goes the general way.
                if mode.quiet {
                    self.flush_quiet(link);
                } else {
                    self.hand_ahead(link);
                    self.wakeups.set(Target::Link(link), self.links[link as usize].poll_timeout());
                }
                return;
            };
            // Nothing is left in the link for anyone to see (no packet in propagation, the one
            // in service already handed on): an ahead link's wake-up stays none, as it was.
            if mode.past_site
                && pkt.kind == PacketKind::Feedback
                && self.links[self.bottleneck as usize].handle_reverse_fixed(at, &mut pkt) != Verdict::Pass
            {
                // Dropped at the site (its fixed verdict), as `hand_ahead_past_site` drops it.
                return;
            }
            pkt.hop += 1;
            if let Some(next) = mode.next {
                (link, now, mode) = (next, at, self.hops[next as usize]);
                continue;
            }
            let flow = &mut self.flows[pkt.flow.index()];
            let data = pkt.kind == PacketKind::Data;
            let path = if data { &flow.forward } else { &flow.reverse };
            match path.get(pkt.hop) {
                Some(next) => (link, now, mode) = (next, at, self.hops[next as usize]),
                // Such a path ends at a passive receiver, which only counts (as `deliver` does).
                None if data && flow.passive => {
                    return flow.metrics.on_received(at, pkt.seq, pkt.size as u64, pkt.sent_at)
                }
                None => return self.deliver(at, &pkt),
            }
        }
        let l = &mut self.links[link as usize];
        let moved = l.input(now, pkt);
        if mode.quiet {
            self.flush_quiet(link);
            return;
        }
        if mode.to_receivers {
            self.hand_to_receivers(link);
        } else if mode.ahead {
            self.hand_ahead(link);
        } else if !moved {
            // Its wake-up is the one it asked for after the driver's last call (any link that is
            // neither quiet nor ahead is rescheduled after each), which the arrival left as it was.
            return;
        }
        self.wakeups.set(Target::Link(link), self.links[link as usize].poll_timeout());
        if link == self.bottleneck && self.site && self.drain_site(now) {
            self.wakeups.set(Target::Link(link), self.links[link as usize].poll_timeout());
        }
    }

    /// Hands on what quiet link `link` has delivered by the current horizon, at each packet's
    /// own arrival instant (see [`Simulation::find_quiet_links`]).
    fn flush_quiet(&mut self, link: u32) {
        while let Some((at, mut pkt)) = self.links[link as usize].poll_output_until(self.flush_until) {
            self.next_hop(at, &mut pkt);
        }
    }

    /// Hands what link `link` ([`HopMode::to_receivers`]) delivers by the current horizon to its
    /// receivers, at each packet's own arrival instant. (None is due before the driver's clock:
    /// the link is woken by then for each packet it has not handed, see
    /// [`Link::set_drained_ahead`]; the clock, not an arrival's instant ahead of it, as links
    /// fed ahead take packets beyond it.)
    fn hand_to_receivers(&mut self, link: u32) {
        while let Some((at, mut pkt)) = self.links[link as usize].poll_output_until(self.flush_until) {
            debug_assert!(at >= self.now, "a packet due at {at} handed to its receiver at {}", self.now);
            pkt.hop += 1;
            self.deliver(at.max(self.now), &pkt);
        }
    }

    /// Hands on what link `link` (one that hands on ahead, see [`Simulation::find_quiet_links`])
    /// will deliver by the current horizon, at each packet's own arrival instant.
    fn hand_ahead(&mut self, link: u32) {
        if link == self.reverse && self.site {
            return self.hand_ahead_past_site();
        }
        while let Some((at, mut pkt)) = self.links[link as usize].poll_output_until(self.flush_until) {
            self.next_hop(at, &mut pkt);
        }
    }

    /// [`Simulation::hand_ahead`] for the reverse link of a site whose middlebox acts: feedback
    /// passes the site's middlebox, whose fixed verdict may drop it (see
    /// [`Simulation::reverse_site_allows_ahead`]; nothing it polls changes).
    fn hand_ahead_past_site(&mut self) {
        let (r, b) = (self.reverse as usize, self.bottleneck as usize);
        while let Some((at, mut pkt)) = self.links[r].poll_output_until(self.flush_until) {
            // (Its rule for the packet's flow is fixed: `reverse_site_allows_ahead`.)
            if pkt.kind == PacketKind::Feedback
                && self.links[b].handle_reverse_fixed(at, &mut pkt) != Verdict::Pass
            {
                continue;
            }
            self.next_hop(at, &mut pkt);
        }
    }

    /// What a middlebox's feedback says, in the sender's terms; `None` if it cannot be read
    /// (which the middleboxes of this crate never produce).
    fn decode_assist(
        &mut self,
        flow: FlowId,
        built: Time,
        payload: FeedbackPayload,
    ) -> Option<AssistFeedback> {
        let at = |us: i64| Time(u64::try_from(us).unwrap_or(0) * 1_000);
        let raw = match payload {
            FeedbackPayload::Frame(f) => {
                return match f.downcast::<AckFrame>() {
                    Ok(f) => Some(AssistFeedback::Ack(f)),
                    Err(f) => f.downcast::<SconeSignal>().ok().and_then(|s| decode_scone(&s)),
                };
            }
            FeedbackPayload::Rtcp(bytes) => {
                let mut raw = std::mem::take(&mut self.assist_raw);
                raw.clear();
                if TransportCcFeedback::decode_arrivals(&bytes, |s, a| raw.push((s, a.map(at)))).is_err() {
                    raw.clear();
                    let rep = CcfbReport::decode(&bytes, NumReportsConvention::Count).ok()?;
                    let ts = rep.report_timestamp;
                    let ts_us =
                        i64::from(ts >> 16) * 1_000_000 + ((i64::from(ts & 0xffff) * 1_000_000) >> 16);
                    raw.extend(rep.blocks.iter().flat_map(|b| {
                        b.metrics.iter().enumerate().map(move |(i, m)| {
                            (b.begin_seq.wrapping_add(i as u16), m.offset_us().map(|o| at(ts_us - o)))
                        })
                    }));
                }
                // Its room goes back to the middlebox for its next report.
                self.links[self.bottleneck as usize].recycle(FeedbackPayload::Rtcp(bytes));
                raw
            }
        };
        // Unwrap the 16-bit sequence numbers next to the last one seen (the sender's own seq 0
        // at first).
        let mut last = self.assist_seq[flow.index()].unwrap_or(0);
        let mut arrivals = std::mem::take(&mut self.assist_arrivals);
        arrivals.clear();
        for &(s16, a) in &raw {
            let diff = s16.wrapping_sub(last as u16) as i16 as i64;
            let seq = (last as i64 + diff).max(0) as u64;
            arrivals.push((seq, a));
            last = seq;
        }
        self.assist_seq[flow.index()] = Some(last);
        self.assist_raw = raw;
        Some(AssistFeedback::Report { report_time: built, arrivals })
    }

    /// A packet reached the end of its path: to the receiver (data) or the sender (feedback).
    fn deliver(&mut self, now: Time, pkt: &Packet) {
        let flow_index = pkt.flow.0;
        let flow = &mut self.flows[flow_index as usize];
        // (Each endpoint is handed its packet through the flow already at hand, not looked up
        // again.)
        match pkt.kind {
            PacketKind::Data => {
                flow.metrics.on_received(now, pkt.seq, pkt.size as u64, pkt.sent_at);
                if flow.passive {
                    return;
                }
                flow.receiver.handle_packet(now, pkt);
                self.drain_endpoint(2 * flow_index + 1, now);
            }
            PacketKind::Feedback => {
                flow.metrics.on_feedback_received(pkt.size as u64);
                if pkt.app == ASSIST_APP {
                    if let Some(payload) =
                        self.assist_payloads.get_mut(pkt.seq as usize).and_then(Option::take)
                    {
                        self.free_payload_slots.push(pkt.seq);
                        if let Some(fb) = self.decode_assist(pkt.flow, pkt.sent_at, payload) {
                            let e = 2 * flow_index;
                            if let AssistFeedback::Ack(_) = fb {
                                // The network acknowledges for the receiver (FastAck): the
                                // receiver's own frames will not be asked for.
                                if let Some(ring) = self.flows[flow_index as usize].receiver.ack_ring() {
                                    ring.clear();
                                }
                            }
                            self.endpoint(e).handle_assist(now, &fb);
                            self.drain_endpoint(e, now);
                            match fb {
                                // Its room goes back to the middlebox for its next ACK.
                                AssistFeedback::Ack(frame) => self.links[self.bottleneck as usize]
                                    .recycle(FeedbackPayload::Frame(frame)),
                                // Kept for the next report's arrivals.
                                AssistFeedback::Report { arrivals, .. } => self.assist_arrivals = arrivals,
                                AssistFeedback::Signal(_) => {}
                            }
                        }
                    }
                    return;
                }
                if flow.carries_acks {
                    let frame = flow.receiver.ack_ring().and_then(|ring| ring.take(pkt.app));
                    flow.sender.handle_ack(now, pkt, frame);
                } else {
                    flow.sender.handle_packet(now, pkt);
                }
                self.drain_endpoint(2 * flow_index, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Format;

    /// A 20 s Copa video flow over drop-tail, with `assist` at the bottleneck.
    fn copa(assist: &str) -> Simulation {
        let text = format!(
            r#"
duration = "20 s"
seed = 3
[bottleneck]
assist = "{assist}"
rate = "12 Mbit/s"
delay = "20 ms"
queue = {{ kind = "droptail" }}
[[flows]]
id = "video"
kind = "rtp-video"
cc = "copa"
fps = 25
rmin = "300 kbit/s"
rmax = "20 Mbit/s"
"#
        );
        let sc = Scenario::parse(&text, Format::Toml, "test.toml", std::path::Path::new(".")).expect("valid");
        Simulation::new(sc)
    }

    /// The receiver's ACK frames leave its ring as their packets reach the sender, and under
    /// FastAck (whose ACKs stand in for the receiver's, never asked for) as the network's arrive:
    /// the ring holds about the frames in flight, not one per packet of the run.
    #[test]
    fn ack_frames_in_flight_stay_few_with_and_without_fastack() {
        for assist in ["none", "fastack"] {
            let mut sim = copa(assist);
            assert!(sim.flows[0].carries_acks, "{assist}");
            sim.advance(Time::ZERO + lowlat_core::Duration::from_secs_f64(20.0));
            let received = sim.flows[0].metrics.rx_packets;
            let in_ring = sim.flows[0].receiver.ack_ring().expect("a transport receiver").len() as u64;
            assert!(received > 10_000, "{assist}: {received} packets");
            // 12 Mbit/s x (RTT + queue) is some hundreds of packets; a ring never emptied would
            // hold one frame per packet received.
            assert!(in_ring < 2_000, "{assist}: {in_ring} frames in the ring after {received} packets");
        }
    }
}
