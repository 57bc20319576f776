//! Endpoints: the applications at either end of a flow.
//!
//! A flow is a sender [`Endpoint`] and a receiver [`Endpoint`]. Both are sans-IO: the driver hands
//! them the packets of their flow that reach them and wakes them at the times they ask for; they
//! answer with packets to send. The sender's packets travel the forward path as data, the
//! receiver's travel the reverse path as feedback (RTCP, ACKs), each with its real size, so a
//! congested reverse path delays and loses them. CBR and Poisson sources are senders; RTP media,
//! transports and their feedback generators plug in the same way.

use lowlat_core::{Bytes, Packet, Time};

/// Feedback an access point wrote for a flow's sender, decoded from its wire format.
#[derive(Clone, Debug, PartialEq)]
pub enum AssistFeedback {
    /// A congestion feedback report (transport-cc or RFC 8888): per sequence number, the
    /// (predicted) arrival time or `None` for lost.
    Report {
        /// When the report was built.
        report_time: Time,
        /// `(sequence number, arrival)` in sequence order.
        arrivals: Vec<(u64, Option<Time>)>,
    },
    /// A transport ACK frame (boxed as the middlebox built it: the box goes back to it once
    /// read, see [`lowlat_net::Middlebox::recycle`]).
    Ack(Box<lowlat_transport::AckFrame>),
    /// An explicit network signal (SCONE-PRO's capacity and queue, or the standard SCONE
    /// packet's throughput advice), decoded from its wire format.
    Signal(lowlat_cc::NetworkSignal),
}

/// A packet an endpoint hands the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Size on the wire.
    pub size: Bytes,
    /// Sequence number within the flow and direction (gaps are counted as losses by the metrics).
    pub seq: u64,
    /// Opaque reference the endpoint's peer understands (payload index, frame id, ...).
    pub app: u64,
    /// ECN codepoint to send with.
    pub ecn: u8,
}

/// One end of a flow.
pub trait Endpoint: std::fmt::Debug + Send + Sync {
    /// A packet of this flow reached this endpoint at `now`.
    fn handle_packet(&mut self, _now: Time, _pkt: &Packet) {}

    /// An ACK packet reached this endpoint (a transport sender) at `now`, with the frame it
    /// carries, which the simulator took from the receiver's [`Endpoint::ack_ring`] (`None`: the
    /// packet's frame is not there). Default: [`Endpoint::handle_packet`].
    fn handle_ack(&mut self, now: Time, pkt: &Packet, _frame: Option<&lowlat_transport::AckFrame>) {
        self.handle_packet(now, pkt)
    }

    /// A transport receiver's ACK frames in flight: the simulator hands each to the sender with
    /// the ACK packet that carries it ([`Endpoint::handle_ack`]), so the two ends of a flow share
    /// no state (and no lock per ACK). `None` (the default): its feedback carries its content.
    fn ack_ring(&mut self) -> Option<&mut crate::ack_ring::AckRing> {
        None
    }

    /// Feedback the network built on the receiver's behalf (Zhuge's in-band reports, FastAck's
    /// ACKs) reached this endpoint (the sender) at `now`.
    fn handle_assist(&mut self, _now: Time, _feedback: &AssistFeedback) {}

    /// The instant from [`Endpoint::poll_timeout`] has come.
    fn handle_timeout(&mut self, _now: Time) {}

    /// The bytes of the packet `poll_transmit` just returned, when the endpoint encodes them
    /// (RTCP feedback); `None` lets a capture write a stand-in of the right size.
    fn last_payload(&self) -> Option<&[u8]> {
        None
    }

    /// The next packet to send at `now`, if any (drained after every input).
    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        None
    }

    /// When it next wants to be woken.
    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    /// Whether it ignores every packet and never sends or asks to be woken (a [`Sink`]): the
    /// driver then only counts what reaches it, and may do so ahead of its clock, at each
    /// packet's own arrival instant, without an event per packet. `false` unless overridden.
    fn is_passive(&self) -> bool {
        false
    }

    /// Whether it acts only when a packet reaches it: it sends only at the instant of an arrival
    /// (drained right after [`Endpoint::handle_packet`]), never asks to be woken, and nothing
    /// else reads its state during the run. The driver may then hand it its packets ahead of
    /// its clock, each at its own arrival instant (and take what it sends then), without an
    /// event per packet. `false` unless overridden.
    fn acts_only_on_arrival(&self) -> bool {
        false
    }

    /// The congestion controller's name, for results (`None`: open loop).
    fn cc_name(&self) -> Option<&'static str> {
        None
    }

    /// The congestion controller's current state (`"startup"`, `"competitive"`, ...), for
    /// tests and logs; `None` without a controller.
    fn cc_mode(&self) -> Option<&'static str> {
        None
    }

    /// The handle of its controller when that is driven from outside the simulator
    /// ([`lowlat_cc::external`]); `None` otherwise.
    fn external_controller(&self) -> Option<lowlat_cc::ExternalHandle> {
        None
    }

    /// What a media endpoint measured (RTT samples, frames), read once at the end of the run.
    fn media_metrics(&self) -> Option<crate::media::MediaMetrics> {
        None
    }

    /// Told before the run starts which per-sample tables the run builds
    /// ([`crate::Simulation::plan_tables`]): an endpoint need not keep what none of them shows.
    fn plan_tables(&mut self, _tables: crate::results::Tables) {}

    /// [`Endpoint::media_metrics`], moved out: what the simulator's results call once at the end
    /// of the run, so that an endpoint with a sample per ACK (millions in a long run) gives its
    /// vectors up instead of copying them. Reading the metrics again afterwards gives them empty.
    fn take_media_metrics(&mut self) -> Option<crate::media::MediaMetrics> {
        self.media_metrics()
    }

    /// Completion times of the finished transfers of a transport endpoint (web flows), read once
    /// at the end of the run.
    fn transfer_times(&self) -> Option<Vec<lowlat_core::Duration>> {
        None
    }

    /// Per-connection results of a downloads flow (see [`crate::downloads`]), read once at the
    /// end of the run.
    fn connections(&self) -> Option<Vec<crate::downloads::ConnectionSummary>> {
        None
    }
}

/// A receiver that only takes packets in (the sink of open-loop sources).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sink;

impl Endpoint for Sink {
    fn is_passive(&self) -> bool {
        true
    }
}
