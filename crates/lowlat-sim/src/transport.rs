//! Ack-clocked flows in the simulator: a bulk sender over the `lowlat-transport` model and the
//! receiver that acknowledges it. ACK frames travel the reverse path with their encoded size; their
//! content reaches the sender through the flow's mailbox, looked up by the ACK packet's id when
//! (and only if) the packet arrives.

use crate::app::{AssistFeedback, Endpoint, Transmit};
use lowlat_core::{Bytes, Packet, Time};
use lowlat_transport::{AckFrame, Receiver, ReceiverConfig, Sender, SenderConfig, WindowController};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// ACK frames in flight from receiver to sender: `(id, frame)`.
pub type AckMailbox = Arc<Mutex<VecDeque<(u64, AckFrame)>>>;

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
    mailbox: AckMailbox,
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
        mailbox: AckMailbox,
    ) -> BulkSender {
        let cfg = SenderConfig { packet_size, size, ..SenderConfig::default() };
        BulkSender { sender: Sender::new(cfg, cc), start, stop, stopped: false, mailbox, ecn: 0 }
    }

    /// Sends its packets with ECN codepoint `ecn` (the peer's ACK_ECN counts come back).
    pub fn with_ecn(mut self, ecn: lowlat_core::Ecn) -> BulkSender {
        self.ecn = ecn.bits();
        self
    }
}

impl Endpoint for BulkSender {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        if let Some(f) = take_ack(&self.mailbox, pkt.app) {
            self.sender.on_ack(now, &f);
        }
    }

    fn handle_assist(&mut self, now: Time, feedback: &AssistFeedback) {
        if let AssistFeedback::Ack(f) = feedback {
            self.mailbox.lock().expect("the mailbox lock is never held across a panic").clear();
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
    mailbox: AckMailbox,
}

impl AckReceiver {
    /// A receiver sending its ACK frames through `mailbox`.
    pub fn new(mailbox: AckMailbox) -> AckReceiver {
        AckReceiver::with_config(mailbox, ReceiverConfig::default())
    }

    /// A receiver with its own ACK schedule.
    pub fn with_config(mailbox: AckMailbox, cfg: ReceiverConfig) -> AckReceiver {
        AckReceiver { receiver: Receiver::new(cfg), next_id: 0, mailbox }
    }
}

impl Endpoint for AckReceiver {
    fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        self.receiver.on_packet_ecn(now, pkt.seq, pkt.ecn);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        let frame = self.receiver.poll_ack(now)?;
        let id = self.next_id;
        self.next_id += 1;
        let size = Bytes(frame.datagram_len());
        self.mailbox.lock().expect("the mailbox lock is never held across a panic").push_back((id, frame));
        Some(Transmit { size, seq: id, app: id, ecn: 0 })
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.receiver.poll_timeout()
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

/// The ACK frame of the ACK packet `id` that just arrived, if it is in the mailbox.
pub fn take_ack(mailbox: &AckMailbox, id: u64) -> Option<AckFrame> {
    take_by_id(mailbox, id)
}

/// Calls `f` on the content of feedback packet `id` that just arrived, if it is in the mailbox,
/// and removes it: as [`take_by_id`], without moving the content out (an [`AckFrame`] holds
/// its ranges inline, over 500 bytes copied per ACK otherwise).
pub fn with_id<T, R>(mailbox: &Mutex<VecDeque<(u64, T)>>, id: u64, f: impl FnOnce(&T) -> R) -> Option<R> {
    let mut mb = mailbox.lock().expect("the mailbox lock is never held across a panic");
    while mb.front().is_some_and(|(i, _)| *i < id) {
        mb.pop_front();
    }
    let out = match mb.front() {
        Some((i, content)) if *i == id => f(content),
        _ => return None,
    };
    // Only dropped: the compiler reads no more of it than its destructor needs.
    mb.pop_front();
    Some(out)
}

/// A new mailbox for one flow.
pub fn mailbox() -> AckMailbox {
    Arc::new(Mutex::new(VecDeque::new()))
}
