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
use lowlat_transport::{Receiver, ReceiverConfig};
use std::collections::VecDeque;

/// FastAck at one AP queue.
#[derive(Debug)]
pub struct FastAck {
    /// Per flow: the AP's receiver state for ack-clocked flows, `None` for others.
    receivers: Vec<Option<Receiver>>,
    out: VecDeque<BuiltFeedback>,
    dropped_client_acks: u64,
    /// The earliest of the receivers' ACK deadlines. A receiver's deadline depends on its state
    /// alone, so this is brought up to date by the hooks that change one; the link asks for it
    /// after every call, twice per packet.
    next_timeout: Option<Time>,
}

impl FastAck {
    /// FastAck for flows with the given roles (indexed by flow id): out-of-band flows are
    /// acknowledged by the AP; the others pass untouched.
    pub fn new(roles: &[FlowRole], cfg: ReceiverConfig) -> FastAck {
        let receivers =
            roles.iter().map(|r| (*r == FlowRole::OutOfBand).then(|| Receiver::new(cfg.clone()))).collect();
        FastAck { receivers, out: VecDeque::new(), dropped_client_acks: 0, next_timeout: None }
    }

    /// Client ACKs dropped so far.
    pub fn dropped_client_acks(&self) -> u64 {
        self.dropped_client_acks
    }

    /// The ACKs due now, then the next deadline (see `next_timeout`).
    fn poll_acks(&mut self, now: Time) {
        for (i, r) in self.receivers.iter_mut().enumerate() {
            let Some(r) = r else { continue };
            if let Some(frame) = r.poll_ack(now) {
                self.out.push_back(BuiltFeedback {
                    flow: FlowId(i as u32),
                    size: Bytes(frame.datagram_len()),
                    payload: FeedbackPayload::Frame(Box::new(frame)),
                });
            }
        }
        self.next_timeout = self.receivers.iter().flatten().filter_map(Receiver::poll_timeout).min();
    }
}

impl Middlebox for FastAck {
    fn name(&self) -> &'static str {
        "fastack"
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn on_transmitted(&mut self, now: Time, pkt: &Packet, _queue: &QueueState) {
        if pkt.kind != PacketKind::Data {
            return;
        }
        if let Some(Some(r)) = self.receivers.get_mut(pkt.flow.index()) {
            r.on_packet(now, pkt.seq);
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
        self.poll_acks(now);
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.next_timeout
    }

    fn poll_feedback(&mut self, _now: Time) -> Option<BuiltFeedback> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::{Bitrate, Duration};
    use lowlat_transport::AckFrame;

    #[test]
    fn the_ap_acknowledges_what_it_delivered_and_drops_the_clients_acks() {
        let mut f = FastAck::new(&[FlowRole::OutOfBand, FlowRole::Pass], ReceiverConfig::default());
        let q = QueueState {
            bytes: Bytes(0),
            packets: 0,
            rate: Bitrate::mbps(10),
            busy: false,
            head_since: None,
        };
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
}
