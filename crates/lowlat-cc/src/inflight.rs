//! Bytes in flight for window-based controllers (SCReAM), counted from sent packets and feedback.

use crate::{FeedbackReport, SentPacket};
use lowlat_core::{Bytes, Time};
use std::collections::VecDeque;

/// What one feedback report changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Acked {
    /// Bytes of packets newly reported received.
    pub bytes: u64,
    /// Bytes of those that carried ECN-CE.
    pub ce_bytes: u64,
    /// Whether the report declared any packet lost.
    pub loss: bool,
}

/// Packets sent and not yet settled by feedback.
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    /// `(sequence number, size, send time)`, in sending order.
    outstanding: VecDeque<(u64, u64, Time)>,
    bytes: u64,
    /// Largest bytes in flight in the current and previous measurement periods.
    max_current: u64,
    max_previous: u64,
}

impl InFlight {
    /// A packet left.
    pub fn on_sent(&mut self, p: &SentPacket) {
        self.outstanding.push_back((p.seq, p.size.0, p.send_time));
        self.bytes += p.size.0;
        self.max_current = self.max_current.max(self.bytes);
    }

    /// Settles everything up to the report's newest sequence number: packets the report skips
    /// were covered by a lost report and count as neither acked nor lost.
    pub fn on_report(&mut self, report: &FeedbackReport) -> Acked {
        let mut acked = Acked::default();
        for p in &report.packets {
            match p.arrival {
                Some(_) => {
                    acked.bytes += p.sent.size.0;
                    if p.ecn == 3 {
                        acked.ce_bytes += p.sent.size.0;
                    }
                }
                None => acked.loss = true,
            }
        }
        if let Some(last) = report.packets.iter().map(|p| p.sent.seq).max() {
            while self.outstanding.front().is_some_and(|o| o.0 <= last) {
                let (_, size, _) = self.outstanding.pop_front().expect("front exists");
                self.bytes -= size;
            }
        }
        acked
    }

    /// Forgets packets sent at or before `before` (feedback for them is overdue); returns whether any
    /// were dropped.
    pub fn expire(&mut self, before: Time) -> bool {
        let mut any = false;
        while self.outstanding.front().is_some_and(|o| o.2 <= before) {
            let (_, size, _) = self.outstanding.pop_front().expect("front exists");
            self.bytes -= size;
            any = true;
        }
        any
    }

    /// When the oldest outstanding packet was sent.
    pub fn oldest(&self) -> Option<Time> {
        self.outstanding.front().map(|o| o.2)
    }

    /// Bytes in flight now.
    pub fn bytes(&self) -> Bytes {
        Bytes(self.bytes)
    }

    /// The largest bytes in flight over the current and the previous period.
    pub fn max_recent(&self) -> Bytes {
        Bytes(self.max_current.max(self.max_previous))
    }

    /// Starts a new measurement period for the maximum.
    pub fn roll_max(&mut self) {
        self.max_previous = self.max_current;
        self.max_current = self.bytes;
    }
}
