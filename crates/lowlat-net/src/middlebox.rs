//! The hook where network assistance sits: a [`Middlebox`] at a queue.
//!
//! A middlebox sees each forward-path packet as it is enqueued and dequeued, with the queue's
//! state, and each reverse-path packet that passes the same site (feedback, ACKs). It may rewrite,
//! drop or take packets (to release them later), and it may originate packets of its own. Zhuge and
//! SCONE-PRO are middleboxes; so is [`NoAssist`], which does nothing.
//!
//! Like every component it is sans-IO: it is handed `now`, and it asks to be woken through
//! [`Middlebox::poll_timeout`].

use lowlat_core::{Bitrate, Bytes, FlowId, Packet, Time};
use std::any::Any;

/// What the queue looks like when the middlebox is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueState {
    /// Bytes waiting (not counting the packet in service).
    pub bytes: Bytes,
    /// Packets waiting.
    pub packets: usize,
    /// The link's service rate now.
    pub rate: Bitrate,
    /// Whether a packet is being transmitted.
    pub busy: bool,
    /// Since when the packet in service (the head of line) has been in service, if any.
    pub head_since: Option<Time>,
}

/// What happens to a packet the middlebox was shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Let it continue (possibly rewritten in place).
    Pass,
    /// Discard it.
    Drop,
    /// The middlebox keeps it (it copied it) and may release it later through `poll_inject`.
    Consume,
}

/// Which way an injected packet travels from the middlebox's site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// On towards the receivers, through the site's queue.
    Forward,
    /// Back towards the senders.
    Reverse,
}

/// What a middlebox's [`Middlebox::on_reverse`] does with one flow's reverse-path packets, for a
/// driver that would show them to it ahead of its clock (see [`Middlebox::reverse_rule`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReverseRule {
    /// What it does may depend on or change its state: show it each packet at its instant.
    AtItsInstant,
    /// It drops every feedback packet of the flow, whatever its state and the instant, and
    /// changes nothing any other hook reads (a counter read at the end may count the drops).
    DropsAll,
    /// It passes every packet of the flow and changes nothing, and it never originates or
    /// releases a packet for the flow.
    PassesAll,
}

/// Network assistance at a queue. Every hook has a do-nothing default.
pub trait Middlebox: std::fmt::Debug + Send + Sync {
    /// A short name for logs and results (`"zhuge"`, `"none"`).
    fn name(&self) -> &'static str;

    /// A forward packet arrives at the queue (before the queue decides whether to take it).
    fn on_enqueue(&mut self, _now: Time, _pkt: &mut Packet, _queue: &QueueState) -> Verdict {
        Verdict::Pass
    }

    /// A forward packet leaves the queue and starts transmission.
    fn on_dequeue(&mut self, _now: Time, _pkt: &Packet, _queue: &QueueState) {}

    /// Whether it acts on [`Middlebox::on_dequeue`]: false for one that keeps the default (its
    /// link then neither builds the queue's state for it nor calls it, once per packet).
    /// Default true.
    fn hears_dequeues(&self) -> bool {
        true
    }

    /// A forward packet has been transmitted (its last bit is out; on Wi-Fi, its aggregate left).
    fn on_transmitted(&mut self, _now: Time, _pkt: &Packet, _queue: &QueueState) {}

    /// A forward packet the middlebox passed was dropped at the tail of the full queue.
    fn on_drop(&mut self, _now: Time, _pkt: &Packet, _queue: &QueueState) {}

    /// A reverse-path packet passes the site.
    fn on_reverse(&mut self, _now: Time, _pkt: &mut Packet) -> Verdict {
        Verdict::Pass
    }

    /// Woken at the time it asked for, with the queue's state.
    fn handle_timeout(&mut self, _now: Time, _queue: &QueueState) {}

    /// Whether it may hear of a transmission's end after the instant it happened: at the next
    /// call the queue makes to it ([`Middlebox::on_enqueue`], [`Middlebox::on_drop`],
    /// [`Middlebox::handle_timeout`]) or when the run ends, still with the finish time as `now`
    /// and the queue as it was then. True only for a middlebox whose [`Middlebox::on_reverse`],
    /// [`Middlebox::poll_inject`], [`Middlebox::poll_feedback`] and [`Middlebox::poll_timeout`]
    /// do not depend on what [`Middlebox::on_transmitted`] records: its link could then complete
    /// transmissions lazily, as a link without a middlebox does (one wake-up per packet fewer).
    /// Default false.
    fn hears_transmissions_late(&self) -> bool {
        false
    }

    /// Whether it may hear of each transmission's end as soon as its link has worked out the
    /// packet's fate, at its admission to a drop-tail queue (an eager link, see
    /// [`crate::link::Link::set_eager`]): [`Middlebox::on_transmitted`] is then called at the
    /// admission with the finish instant as `now` and the queue's state at the admission,
    /// transmissions still in the order they end. True only for a middlebox whose
    /// [`Middlebox::on_enqueue`], [`Middlebox::on_dequeue`] and [`Middlebox::on_drop`] do
    /// nothing, whose [`Middlebox::on_reverse`] reads nothing the other hooks write, that never
    /// injects packets ([`Middlebox::poll_inject`]), and that keeps its own time in order: on
    /// hearing of a transmission it first acts on its timers due before it, and what it builds
    /// leaves at its own instant ([`Middlebox::poll_feedback_at`]; [`Middlebox::poll_timeout`]
    /// asks for the next such instant), and once `poll_feedback_at` has said none by an instant
    /// it says none by then again, changing nothing, until another hook is called (but
    /// [`Middlebox::recycle`], or [`Middlebox::on_reverse`] of a flow whose
    /// [`Middlebox::reverse_rule`] is fixed): a driver need not ask again. Its link then
    /// completes transmissions lazily (no wake-up at each one's end). Default false.
    fn hears_transmissions_ahead(&self) -> bool {
        false
    }

    /// Whether it only watches its queue: it never asks to be woken ([`Middlebox::poll_timeout`]
    /// is always `None`), never originates or releases a packet ([`Middlebox::poll_inject`],
    /// [`Middlebox::poll_feedback`]), and its [`Middlebox::on_reverse`] passes every packet and
    /// changes nothing that any hook's result or anything the driver reads depends on. A driver
    /// may then skip `on_reverse` and treat the site's reverse path as one without a middlebox,
    /// and may hand the queue its arrivals ahead of its clock (each at its own instant, in
    /// order): the middlebox hears the same queue calls, with the same arguments, in the same
    /// order. True for Zhuge when it holds only copies of ACKs and writes no feedback. Default
    /// false.
    fn only_watches(&self) -> bool {
        false
    }

    /// Whether [`Middlebox::on_reverse`] passes every reverse-path packet marked
    /// [`lowlat_core::APP_NON_CC_FEEDBACK`] in its `app` word (a NACK, a repair ACK) and changes
    /// nothing when shown one: a driver may let such packets by without showing them (one call
    /// per packet fewer where the receivers acknowledge each packet). Default false.
    fn passes_non_cc_feedback(&self) -> bool {
        false
    }

    /// Whether it reads [`QueueState::rate`] and [`QueueState::packets`]: false for one that
    /// reads only the queue's bytes, `busy` and `head_since`, whose link then leaves those two
    /// zero rather than work them out for every call (twice per packet). Default true.
    fn reads_queue_rate_and_packets(&self) -> bool {
        true
    }

    /// What [`Middlebox::on_reverse`] does with the reverse-path packets of `flow`. Default
    /// [`ReverseRule::AtItsInstant`].
    fn reverse_rule(&self, _flow: FlowId) -> ReverseRule {
        ReverseRule::AtItsInstant
    }

    /// When it next wants to be woken.
    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    /// A packet it originates or releases now, and which way it goes.
    fn poll_inject(&mut self, _now: Time) -> Option<(Direction, Packet)> {
        None
    }

    /// Whether it holds anything [`Middlebox::poll_inject`] or [`Middlebox::poll_feedback_at`]
    /// may give, at any instant: `false` promises that both would give nothing and change
    /// nothing until another hook is called (but [`Middlebox::recycle`]), so a driver need not
    /// ask them (it does after every event of the middlebox's link). Default true.
    fn holds_output(&self) -> bool {
        true
    }

    /// Itself, for drivers that read a known middlebox's results (logs, counters).
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }

    /// Feedback it built on a receiver's behalf, to go back to that flow's sender now.
    fn poll_feedback(&mut self, _now: Time) -> Option<BuiltFeedback> {
        None
    }

    /// A payload it built, handed back once the driver has read it: its room may hold the next
    /// one (no allocation per packet). Default: dropped.
    fn recycle(&mut self, _payload: FeedbackPayload) {}

    /// Feedback it built that leaves by `until`, with the instant it leaves (never before the
    /// one before it): what a middlebox that hears of transmissions ahead built ahead of the
    /// driver's clock. Default: [`Middlebox::poll_feedback`] at `until`.
    fn poll_feedback_at(&mut self, until: Time) -> Option<(Time, BuiltFeedback)> {
        self.poll_feedback(until).map(|fb| (until, fb))
    }
}

/// What a middlebox's own feedback carries.
#[derive(Debug)]
pub enum FeedbackPayload {
    /// An RTCP packet as on the wire (transport-cc or RFC 8888 feedback).
    Rtcp(Vec<u8>),
    /// A transport's own frame (an ACK frame the driver hands to the sender as is).
    Frame(Box<dyn Any + Send + Sync>),
}

/// Feedback a middlebox built for the sender of `flow`.
#[derive(Debug)]
pub struct BuiltFeedback {
    /// The flow whose sender it is for.
    pub flow: FlowId,
    /// Its size on the wire (IP packet).
    pub size: Bytes,
    /// What it says.
    pub payload: FeedbackPayload,
}

/// No assistance: every packet passes untouched.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAssist;

impl Middlebox for NoAssist {
    fn name(&self) -> &'static str {
        "none"
    }
}
