//! Ack-clocked flows in the simulator: a bulk sender over the `lowlat-transport` model and the
//! receiver that acknowledges it. ACK frames travel the reverse path with their encoded size; their
//! content stays in the receiver's [`AckRing`] until the packet arrives, when the simulator takes
//! it out by the packet's id and hands it to the sender ([`Endpoint::handle_ack`]). The two ends
//! share nothing: a mailbox behind a lock, taken twice per ACK, cost about 5 % of a Copa run's
//! time (its atomic instructions cost far more than their count).

use crate::app::{AssistFeedback, Endpoint, Transmit};
use lowlat_core::{Bytes, Packet, Time};
use lowlat_transport::{AckFrame, Receiver, ReceiverConfig, Sender, SenderConfig, WindowController};
use std::collections::VecDeque;
use std::sync::Mutex;

/// The ACK frames in flight, oldest first, each with the id of the packet carrying it. Frames stay
/// in their slots: the receiver writes the next one in place and the sender reads it there, so a
/// frame costs a copy of the ranges it holds, where moving one (in and out of a queue, out of a
/// function) copied its whole inline room (about half a kilobyte) several times per ACK. Each
/// slot also keeps which of its receiver's frames it holds, so that ranges unchanged since are
/// not copied again ([`Receiver::poll_ack_into_held`]): one receiver writes a ring.
#[derive(Debug, Default)]
pub struct AckRing {
    slots: Vec<(u64, AckFrame, Option<u64>)>,
    head: usize,
    len: usize,
}

impl AckRing {
    /// Writes the next frame with `fill` (which says whether it wrote one) under `id`; `fill`
    /// also gets the slot's note of the frame it holds (see [`Receiver::poll_ack_into_held`]).
    pub fn push_with(&mut self, id: u64, fill: impl FnOnce(&mut AckFrame, &mut Option<u64>) -> bool) -> bool {
        if self.len == self.slots.len() {
            self.grow();
        }
        // (head < slots and len < slots here: one subtraction wraps, where `%` divides per ACK.)
        let mut i = self.head + self.len;
        if i >= self.slots.len() {
            i -= self.slots.len();
        }
        let slot = &mut self.slots[i];
        if !fill(&mut slot.1, &mut slot.2) {
            return false;
        }
        slot.0 = id;
        self.len += 1;
        true
    }

    /// Makes room after the newest frame (the order is kept). The room doubles: the ring grows
    /// to the most frames ever in flight, and growing it a slot at a time moved every slot (half
    /// a kilobyte each) at each of some 360 growths in a Copa run. (Apart: inlined, its frame on
    /// the stack made every push save and restore registers and reserve a kilobyte.)
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.slots.rotate_left(self.head);
        self.head = 0;
        let more = self.slots.len().max(8);
        self.slots.resize_with(self.slots.len() + more, || (0, AckFrame::default(), None));
    }

    /// The frame of the ACK packet `id` that just arrived, if it is here. Feedback packets arrive
    /// in order, so frames older than `id` belong to lost packets and are dropped. The frame
    /// stays readable until the next [`AckRing::push_with`].
    pub fn take(&mut self, id: u64) -> Option<&AckFrame> {
        while self.len > 0 && self.slots[self.head].0 < id {
            self.pop();
        }
        if self.len > 0 && self.slots[self.head].0 == id {
            let i = self.head;
            self.pop();
            return Some(&self.slots[i].1);
        }
        None
    }

    fn pop(&mut self) {
        self.head += 1;
        if self.head == self.slots.len() {
            self.head = 0;
        }
        self.len -= 1;
    }

    /// Forgets every frame in flight.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Frames in flight.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no frame is in flight.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

pub use crate::scenario::registry::{window_controller, window_controller_with, WINDOW_CONTROLLERS};

/// The sending side of a bulk flow.
#[derive(Debug)]
pub struct BulkSender {
    sender: Sender,
    start: Time,
    stop: Time,
    /// Set once the driver has polled at or after `stop`: no more timers, so a timer that fell
    /// due before `stop` but is served after it cannot wake the driver forever.
    stopped: bool,
    /// ECN bits its packets carry.
    ecn: u8,
}

impl BulkSender {
    /// A sender of `size` payload bytes (`None`: unbounded) active in `[start, stop)`.
    pub fn new(
        cc: Box<dyn WindowController>,
        packet_size: Bytes,
        size: Option<u64>,
        start: Time,
        stop: Time,
    ) -> BulkSender {
        let cfg = SenderConfig { packet_size, size, ..SenderConfig::default() };
        BulkSender { sender: Sender::new(cfg, cc), start, stop, stopped: false, ecn: 0 }
    }

    /// Sends its packets with ECN codepoint `ecn` (the peer's ACK_ECN counts come back).
    pub fn with_ecn(mut self, ecn: lowlat_core::Ecn) -> BulkSender {
        self.ecn = ecn.bits();
        self
    }
}

impl Endpoint for BulkSender {
    fn handle_ack(&mut self, now: Time, _pkt: &Packet, frame: Option<&AckFrame>) {
        if let Some(f) = frame {
            self.sender.on_ack(now, f);
        }
    }

    fn handle_assist(&mut self, now: Time, feedback: &AssistFeedback) {
        if let AssistFeedback::Ack(f) = feedback {
            self.sender.on_ack(now, f);
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        self.sender.handle_timeout(now);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        if now >= self.stop {
            self.stopped = true;
        }
        if now < self.start || self.stopped {
            return None;
        }
        let (pn, size) = self.sender.poll_transmit(now)?;
        Some(Transmit { size, seq: pn, app: pn, ecn: self.ecn })
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.stopped || self.sender.is_done() {
            return None;
        }
        let t = self.sender.poll_timeout()?.max(self.start);
        (t < self.stop).then_some(t)
    }

    fn cc_name(&self) -> Option<&'static str> {
        Some(self.sender.controller().name())
    }

    fn cc_mode(&self) -> Option<&'static str> {
        Some(self.sender.mode())
    }
}

/// The receiving side: acknowledges on the ACK schedule.
#[derive(Debug)]
pub struct AckReceiver {
    receiver: Receiver,
    next_id: u64,
    /// Its ACK frames in flight (see the module docs).
    ring: AckRing,
}

impl Default for AckReceiver {
    fn default() -> AckReceiver {
        AckReceiver::new()
    }
}

impl AckReceiver {
    /// A receiver on the default ACK schedule.
    pub fn new() -> AckReceiver {
        AckReceiver::with_config(ReceiverConfig::default())
    }

    /// A receiver with its own ACK schedule.
    pub fn with_config(cfg: ReceiverConfig) -> AckReceiver {
        AckReceiver { receiver: Receiver::new(cfg), next_id: 0, ring: AckRing::default() }
    }
}

impl Endpoint for AckReceiver {
    /// (Inlinable: the video receiver calls it per packet, and the call cost a third of it.)
    #[inline]
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        self.receiver.on_packet_ecn(now, pkt.seq, pkt.ecn);
    }

    #[inline]
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        if !self.receiver.ack_due(now) {
            return None;
        }
        self.send_ack(now)
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.receiver.poll_timeout()
    }

    fn ack_ring(&mut self) -> Option<&mut AckRing> {
        Some(&mut self.ring)
    }
}

impl AckReceiver {
    /// The ACK frame due at `now` into the ring, and the packet carrying it. Apart from
    /// [`Endpoint::poll_transmit`]'s check, which the simulator makes after every event of the
    /// flow and which mostly finds nothing due: that check then costs no spilling of registers.
    #[inline(never)]
    fn send_ack(&mut self, now: Time) -> Option<Transmit> {
        let id = self.next_id;
        let mut size = 0;
        let receiver = &mut self.receiver;
        let sent = self.ring.push_with(id, |f, held| {
            let due = receiver.poll_ack_into_held(now, f, held);
            size = receiver.last_datagram_len();
            due
        });
        if !sent {
            return None;
        }
        self.next_id += 1;
        Some(Transmit { size: Bytes(size), seq: id, app: id, ecn: 0 })
    }
}

/// The content of feedback packet `id` that just arrived, if it is in the mailbox. Feedback
/// packets arrive in order, so entries older than `id` belong to lost packets and are dropped.
pub fn take_by_id<T>(mailbox: &Mutex<VecDeque<(u64, T)>>, id: u64) -> Option<T> {
    let mut mb = mailbox.lock().expect("the mailbox lock is never held across a panic");
    while mb.front().is_some_and(|(i, _)| *i < id) {
        mb.pop_front();
    }
    match mb.front() {
        Some((i, _)) if *i == id => mb.pop_front().map(|x| x.1),
        _ => None,
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_transport::AckRanges;

    /// The ring in place gives what a queue of frames gives: frames taken by id in order, older
    /// ones (lost ACK packets) dropped, across growth and wrap-around.
    #[test]
    fn the_ack_ring_behaves_as_a_queue_of_frames() {
        let mut next = lowlat_core::rng::below(1, "ack-ring-test");
        let frame = |id: u64| AckFrame {
            ranges: AckRanges::from_slice(&[(id, id + 1)]),
            ack_delay: lowlat_core::Duration(id),
            ecn: None,
        };
        let mut ring = AckRing::default();
        let mut model: VecDeque<(u64, AckFrame)> = VecDeque::new();
        let (mut pushed, mut taken) = (0u64, 0u64);
        for _ in 0..20_000 {
            if next(3) > 0 || model.is_empty() {
                // Now and then the receiver has nothing to send.
                let due = next(5) > 0;
                assert_eq!(
                    ring.push_with(pushed, |f, _| {
                        *f = frame(pushed);
                        due
                    }),
                    due
                );
                if due {
                    model.push_back((pushed, frame(pushed)));
                    pushed += 1;
                }
            } else {
                // An ACK packet arrives; some before it were lost on the way.
                let id = taken + next(3);
                while model.front().is_some_and(|(i, _)| *i < id) {
                    model.pop_front();
                }
                let want = model.front().filter(|(i, _)| *i == id).map(|(_, f)| f.clone());
                if want.is_some() {
                    model.pop_front();
                }
                assert_eq!(ring.take(id).cloned(), want, "id {id}");
                taken = id + 1;
            }
            assert_eq!(ring.len(), model.len());
        }
        assert!(pushed > 5_000 && taken > 1_000, "{pushed} pushed, {taken} taken");
    }
}
