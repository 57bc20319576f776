//! The FastAck baseline of the Zhuge paper: the access point acknowledges a transport's packets
//! on the client's behalf as soon as its wireless link has delivered them, and drops the
//! client's own ACKs, so the sender's ACK clock skips the client and the uplink.
//!
//! The AP keeps, per ack-clocked flow, the same receiver state a client keeps (ranges received,
//! ACK every second packet or after `max_ack_delay`, at once on a gap) and sends real ACK frames.
//! The model's wireless hop has no link-layer loss, so the AP never needs to retransmit what it
//! acknowledged. Sans-IO: driven through the [`Middlebox`] hooks with `now`.

use crate::zhuge::FlowRole;
use lowlat_core::{Bytes, FlowId, Packet, PacketKind, Time};
use lowlat_net::middlebox::{BuiltFeedback, FeedbackPayload, Middlebox, QueueState, ReverseRule, Verdict};
use lowlat_transport::{AckFrame, Receiver, ReceiverConfig};
use std::collections::VecDeque;

/// FastAck at one AP queue.
#[derive(Debug)]
pub struct FastAck {
    /// Per flow: the AP's receiver state for ack-clocked flows, `None` for others.
    receivers: Vec<Option<Receiver>>,
    /// ACKs built, with the instant each leaves (in order).
    out: VecDeque<(Time, BuiltFeedback)>,
    /// Frames handed back once read ([`Middlebox::recycle`]), to write the next ACKs into. Boxed
    /// as they go out (a payload is a box): keeping the boxes is what saves an allocation.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<AckFrame>>,
    dropped_client_acks: u64,
    /// The earliest of the receivers' ACK deadlines. A receiver's deadline depends on its state
    /// alone, so this is brought up to date by the hooks that change one; the link asks for it
    /// after every call, twice per packet.
    next_timeout: Option<Time>,
    /// The earlier of `next_timeout` and the instant the first ACK built leaves: what
    /// [`Middlebox::poll_timeout`] answers, asked after every event of the link (kept up to
    /// date where either changes, rather than worked out at each asking).
    wake: Option<Time>,
    /// The flow of the only receiver, when there is one (one ack-clocked flow, as in the
    /// reproduction's runs): a poll then skips the loops over every flow's slot.
    only: Option<usize>,
}

impl FastAck {
    /// FastAck for flows with the given roles (indexed by flow id): out-of-band flows are
    /// acknowledged by the AP; the others pass untouched.
    pub fn new(roles: &[FlowRole], cfg: ReceiverConfig) -> FastAck {
        let receivers: Vec<Option<Receiver>> =
            roles.iter().map(|r| (*r == FlowRole::OutOfBand).then(|| Receiver::new(cfg.clone()))).collect();
        let mut with_receiver = receivers.iter().enumerate().filter(|(_, r)| r.is_some()).map(|(i, _)| i);
        let only = match (with_receiver.next(), with_receiver.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        };
        FastAck {
            receivers,
            out: VecDeque::new(),
            spare: Vec::new(),
            dropped_client_acks: 0,
            next_timeout: None,
            wake: None,
            only,
        }
    }

    /// Client ACKs dropped so far.
    pub fn dropped_client_acks(&self) -> u64 {
        self.dropped_client_acks
    }

    /// The ACKs due now, then the next deadline (see `next_timeout`).
    fn poll_acks(&mut self, now: Time) {
        if let Some(i) = self.only {
            // One receiver: its ACK if due, and its deadline is the earliest.
            let Some(r) = self.receivers[i].as_mut() else { unreachable!("`only` names a receiver") };
            if r.ack_due(now) {
                Self::build_ack(&mut self.spare, &mut self.out, i, r, now);
            }
            self.next_timeout = r.poll_timeout();
            self.update_wake();
            return;
        }
        for (i, r) in self.receivers.iter_mut().enumerate() {
            let Some(r) = r else { continue };
            // Asked at every packet, an ACK is due at every second: a frame's room is taken
            // only for one.
            if r.ack_due(now) {
                Self::build_ack(&mut self.spare, &mut self.out, i, r, now);
            }
        }
        // (A loop of its own: the iterator chain it was cost as much as the rest of a poll.)
        let mut next: Option<Time> = None;
        for r in self.receivers.iter().flatten() {
            if let Some(t) = r.poll_timeout() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        self.next_timeout = next;
        self.update_wake();
    }

    /// The ACK of flow `i`'s receiver `r`, due at `now`, into `out`.
    #[inline(always)]
    #[allow(clippy::vec_box)]
    fn build_ack(
        spare: &mut Vec<Box<AckFrame>>,
        out: &mut VecDeque<(Time, BuiltFeedback)>,
        i: usize,
        r: &mut Receiver,
        now: Time,
    ) {
        // Written in place into a frame handed back (a frame is some 500 bytes of room for
        // its ranges; moving one whole costs more than writing the ranges in use).
        // The callers asked `ack_due` already: the frame is written at once, without
        // `poll_ack_into`'s call (out of line in its crate) asking again. The frame's origin is
        // unknown (`None`): its ranges are all written.
        debug_assert!(r.ack_due(now));
        let mut frame = spare.pop().unwrap_or_default();
        r.write_ack_into_held(now, &mut frame, &mut None);
        out.push_back((
            now,
            BuiltFeedback {
                flow: FlowId(i as u32),
                size: Bytes(r.last_datagram_len()),
                payload: FeedbackPayload::Frame(frame),
            },
        ));
    }

    /// Brings `wake` up to date.
    #[inline]
    fn update_wake(&mut self) {
        self.wake = match (self.next_timeout, self.out.front()) {
            (Some(t), Some(o)) => Some(t.min(o.0)),
            (t, o) => t.or(o.map(|o| o.0)),
        };
    }
}

impl Middlebox for FastAck {
    fn name(&self) -> &'static str {
        "fastack"
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn hears_dequeues(&self) -> bool {
        false
    }

    /// (It reads no queue state.)
    fn reads_queue_rate_and_packets(&self) -> bool {
        false
    }

    fn on_transmitted(&mut self, now: Time, pkt: &Packet, _queue: &QueueState) {
        if pkt.kind != PacketKind::Data {
            return;
        }
        let i = pkt.flow.index();
        if !matches!(self.receivers.get(i), Some(Some(_))) {
            return;
        }
        // Heard of ahead (see `hears_transmissions_ahead`), the delay timers due before this
        // transmission's end go off first, as they would have been woken for.
        while let Some(t) = self.next_timeout.filter(|&t| t < now) {
            self.poll_acks(t);
        }
        if let Some(r) = self.receivers[i].as_mut() {
            r.on_packet(now, pkt.seq);
            if self.only == Some(i) {
                // The one receiver (the reproduction's runs), once per packet: `poll_acks`'s way
                // for it, inline here with the receiver in hand (the call, and the look-up again
                // of the receiver, cost as much as the rest).
                if r.ack_due(now) {
                    Self::build_ack(&mut self.spare, &mut self.out, i, r, now);
                }
                self.next_timeout = r.poll_timeout();
                self.update_wake();
                return;
            }
            self.poll_acks(now);
        }
    }

    fn on_reverse(&mut self, _now: Time, pkt: &mut Packet) -> Verdict {
        match self.receivers.get(pkt.flow.index()) {
            Some(Some(_)) if pkt.kind == PacketKind::Feedback => {
                self.dropped_client_acks += 1;
                Verdict::Drop
            }
            _ => Verdict::Pass,
        }
    }

    /// The client's ACKs of a flow it acknowledges are dropped whatever the state (only
    /// counted); other flows' packets pass untouched and it builds nothing for them.
    fn reverse_rule(&self, flow: FlowId) -> ReverseRule {
        match self.receivers.get(flow.index()) {
            Some(Some(_)) => ReverseRule::DropsAll,
            _ => ReverseRule::PassesAll,
        }
    }

    fn handle_timeout(&mut self, now: Time, _queue: &QueueState) {
        // Also woken when an ACK built ahead leaves: the timers are what may be due.
        if self.next_timeout.is_some_and(|t| t <= now) {
            self.poll_acks(now);
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.wake
    }

    fn poll_feedback(&mut self, now: Time) -> Option<BuiltFeedback> {
        self.poll_feedback_at(now).map(|o| o.1)
    }

    /// The ACKs built and not yet taken (it never injects).
    fn holds_output(&self) -> bool {
        !self.out.is_empty()
    }

    fn recycle(&mut self, payload: FeedbackPayload) {
        if let FeedbackPayload::Frame(any) = payload {
            if let Ok(frame) = any.downcast::<AckFrame>() {
                self.spare.push(frame);
            }
        }
    }

    fn poll_feedback_at(&mut self, until: Time) -> Option<(Time, BuiltFeedback)> {
        match self.out.front() {
            Some(o) if o.0 <= until => {
                let o = self.out.pop_front();
                self.update_wake();
                o
            }
            _ => None,
        }
    }

    /// Its receivers only count what was delivered, in order, and act on their delay timers
    /// in the same order as they hear of transmissions; on_reverse reads none of it.
    fn hears_transmissions_ahead(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::{Bitrate, Duration};

    /// An empty 10 Mbit/s queue, as the AP's link reports it.
    fn idle_queue() -> QueueState {
        QueueState { bytes: Bytes(0), packets: 0, rate: Bitrate::mbps(10), busy: false, head_since: None }
    }

    #[test]
    fn the_ap_acknowledges_what_it_delivered_and_drops_the_clients_acks() {
        let mut f = FastAck::new(&[FlowRole::OutOfBand, FlowRole::Pass], ReceiverConfig::default());
        let q = idle_queue();
        for pn in 0..4u64 {
            let p = Packet::new(pn, FlowId(0), Bytes(1200), pn, Time::ZERO);
            f.on_transmitted(Time::from_millis(pn), &p, &q);
        }
        // Every second packet is acknowledged at once.
        let mut frames = Vec::new();
        while let Some(fb) = f.poll_feedback(Time::from_millis(4)) {
            assert_eq!(fb.flow, FlowId(0));
            let FeedbackPayload::Frame(any) = fb.payload else { panic!("a frame") };
            frames.push(*any.downcast::<AckFrame>().expect("an ACK frame"));
        }
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[1].largest(), Some(3));
        assert!((0..4).all(|pn| frames[1].contains(pn)));
        // A lone packet is acknowledged after the delay timer.
        let p = Packet::new(9, FlowId(0), Bytes(1200), 4, Time::ZERO);
        f.on_transmitted(Time::from_millis(10), &p, &q);
        assert!(f.poll_feedback(Time::from_millis(10)).is_none());
        assert_eq!(f.poll_timeout(), Some(Time::from_millis(10) + Duration::from_millis(25)));
        f.handle_timeout(Time::from_millis(35), &q);
        assert!(f.poll_feedback(Time::from_millis(35)).is_some());
        // The client's ACKs of that flow are dropped; another flow's pass.
        let mut ack = Packet::new(20, FlowId(0), Bytes(50), 0, Time::ZERO);
        ack.kind = PacketKind::Feedback;
        assert_eq!(f.on_reverse(Time::from_millis(40), &mut ack), Verdict::Drop);
        ack.flow = FlowId(1);
        assert_eq!(f.on_reverse(Time::from_millis(40), &mut ack), Verdict::Pass);
        assert_eq!(f.dropped_client_acks(), 1);
        // Which is fixed per flow, so a driver may show it the ACKs ahead of its clock.
        assert_eq!(f.reverse_rule(FlowId(0)), ReverseRule::DropsAll);
        assert_eq!(f.reverse_rule(FlowId(1)), ReverseRule::PassesAll);
    }

    #[test]
    fn hearing_of_transmissions_ahead_builds_the_same_acks_at_the_same_instants() {
        // Bursts of packets of two flows, with gaps longer than the ACK delay between some: one AP
        // hears of each transmission at its end and is woken for its timers; the other hears of
        // a burst at once (ahead) and is woken only when it asks. Same ACKs, same instants.
        let q = idle_queue();
        let roles = [FlowRole::OutOfBand, FlowRole::OutOfBand];
        let mut next = lowlat_core::rng::below(4, "fast-ack-ahead-test");
        let (mut t, mut seq) = (Time::ZERO, [0u64; 2]);
        let mut bursts = Vec::new();
        for _ in 0..300 {
            let gap = if next(3) == 0 { 60_000 } else { 3_000 };
            t += Duration::from_micros(100 + next(gap));
            // Packets up to 12 ms apart, so that timers go off within a burst.
            let burst: Vec<(Time, Packet)> = (0..1 + next(8))
                .map(|_| {
                    let flow = next(2) as usize;
                    seq[flow] += 1 + u64::from(next(20) == 0); // a gap now and then
                    let p = Packet::new(0, FlowId(flow as u32), Bytes(1200), seq[flow], Time::ZERO);
                    t += Duration::from_micros(120 + next(12_000));
                    (t, p)
                })
                .collect();
            t = burst.last().expect("not empty").0;
            bursts.push(burst);
        }
        let frames = |f: &mut FastAck, at: Time, out: &mut Vec<(Time, u32, AckFrame)>| {
            while let Some((t, fb)) = f.poll_feedback_at(at) {
                let FeedbackPayload::Frame(any) = fb.payload else { panic!("a frame") };
                out.push((t, fb.flow.0, *any.downcast::<AckFrame>().expect("an ACK frame")));
            }
        };
        let end = t + Duration::from_secs(1);
        // At each instant: its timers are woken for, each transmission heard of at its end.
        let mut at_once = FastAck::new(&roles, ReceiverConfig::default());
        let mut out_once = Vec::new();
        for (t, p) in bursts.iter().flatten() {
            while let Some(d) = at_once.poll_timeout().filter(|d| d < t) {
                at_once.handle_timeout(d, &q);
                frames(&mut at_once, d, &mut out_once);
            }
            at_once.on_transmitted(*t, p, &q);
            frames(&mut at_once, *t, &mut out_once);
        }
        while let Some(d) = at_once.poll_timeout().filter(|&d| d < end) {
            at_once.handle_timeout(d, &q);
            frames(&mut at_once, d, &mut out_once);
        }
        // Ahead: each burst heard of when it starts; woken only when it asks to be.
        let mut ahead = FastAck::new(&roles, ReceiverConfig::default());
        assert!(ahead.hears_transmissions_ahead());
        let mut out_ahead = Vec::new();
        for burst in &bursts {
            let start = burst[0].0 - Duration::from_micros(100);
            while let Some(d) = ahead.poll_timeout().filter(|&d| d < start) {
                ahead.handle_timeout(d, &q);
                frames(&mut ahead, d, &mut out_ahead);
            }
            for (t, p) in burst {
                ahead.on_transmitted(*t, p, &q);
            }
        }
        while let Some(d) = ahead.poll_timeout().filter(|&d| d < end) {
            ahead.handle_timeout(d, &q);
            frames(&mut ahead, d, &mut out_ahead);
        }
        assert!(out_once.len() > 300, "{}", out_once.len());
        let first_difference = out_ahead.iter().zip(&out_once).position(|(a, b)| a != b);
        assert_eq!(first_difference, None);
        assert_eq!(out_ahead.len(), out_once.len());
    }
}
