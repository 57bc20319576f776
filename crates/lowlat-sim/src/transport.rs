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

pub use crate::ack_ring::AckRing;
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
        if self.ring.is_unread() {
            return self.skip_ack(now);
        }
        // Mostly the frame goes over an earlier one in place, its size known: written here,
        // without a call (see `Receiver::write_ack_if_plain`).
        let (id, receiver) = (self.next_id, &mut self.receiver);
        if self.ring.push_in_room(id, |f, held| receiver.write_ack_if_plain(now, f, held)) {
            self.next_id += 1;
            let size = Bytes(self.receiver.last_datagram_len());
            return Some(Transmit { size, seq: id, app: id, ecn: 0 });
        }
        self.send_ack(now)
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.receiver.poll_timeout()
    }

    fn ack_ring(&mut self) -> Option<&mut AckRing> {
        Some(&mut self.ring)
    }

    /// Acknowledging every packet at once, it has no ACK timer (the frames in its ring are read
    /// only when their packets reach the sender).
    fn acts_only_on_arrival(&self) -> bool {
        self.receiver.acks_every_packet()
    }
}

impl AckReceiver {
    /// [`Endpoint::handle_packet`] of the next packet in order, Not-ECT (most packets): whether
    /// it was one (if not, nothing changed and `handle_packet` is due); see
    /// [`Receiver::on_next_packet`].
    #[inline(always)]
    pub fn on_next_packet(&mut self, now: Time, pkt: &Packet) -> bool {
        self.receiver.on_next_packet(now, pkt.seq, pkt.ecn)
    }

    /// The ACK frame due at `now` (the caller asked) into the ring, and the packet carrying it.
    /// Apart from [`Endpoint::poll_transmit`]'s check, which the simulator makes after every
    /// event of the flow and which mostly finds nothing due: that check then costs no spilling
    /// of registers.
    #[inline(never)]
    fn send_ack(&mut self, now: Time) -> Option<Transmit> {
        let id = self.next_id;
        let mut size = 0;
        let receiver = &mut self.receiver;
        // (Due: `poll_transmit` asked; the ring is read.)
        self.ring.push_with(id, |f, held| {
            receiver.write_ack_into_held(now, f, held);
            size = receiver.last_datagram_len();
            true
        });
        self.next_id += 1;
        Some(Transmit { size: Bytes(size), seq: id, app: id, ecn: 0 })
    }

    /// [`AckReceiver::send_ack`] of a frame dropped on its way, unread (FastAck): only its size
    /// counts. (Apart, as `send_ack`: its own small call keeps `poll_transmit`'s common path
    /// short.)
    #[inline(never)]
    fn skip_ack(&mut self, now: Time) -> Option<Transmit> {
        // (Mostly of the last frame's size: then no call, and no registers saved.)
        if !self.receiver.skip_ack_if_plain(now) {
            return self.skip_ack_sized(now);
        }
        let id = self.next_id;
        self.next_id += 1;
        Some(Transmit { size: Bytes(self.receiver.last_datagram_len()), seq: id, app: id, ecn: 0 })
    }

    /// [`AckReceiver::skip_ack`] of a frame whose size is worked out anew.
    #[inline(never)]
    fn skip_ack_sized(&mut self, now: Time) -> Option<Transmit> {
        let id = self.next_id;
        self.receiver.skip_ack(now);
        self.next_id += 1;
        Some(Transmit { size: Bytes(self.receiver.last_datagram_len()), seq: id, app: id, ecn: 0 })
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
