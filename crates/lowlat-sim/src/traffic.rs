//! Traffic for the simulator core: a constant-bit-rate (UDP-like) source, a Poisson source, and
//! the per-flow measurements.
//!
//! Sources are sender [`Endpoint`]s: [`Endpoint::poll_timeout`] says when the next packet is due,
//! [`Endpoint::poll_transmit`] emits it.

use crate::app::{Endpoint, Transmit};
use crate::scenario::{FlowConfig, TrafficKind};
use lowlat_core::rng::Rng;
use lowlat_core::{Bitrate, Bytes, Duration, Time};
use lowlat_net::NsHistogram;
use rand_distr::{Distribution, Exp1};

/// A packet generator.
#[derive(Clone, Debug)]
pub struct Source {
    kind: TrafficKind,
    rate: Bitrate,
    size: Bytes,
    start: Time,
    stop: Time,
    next: Option<Time>,
    seq: u64,
    rng: Rng,
    /// ECN bits its packets carry.
    ecn: u8,
}

impl Source {
    /// A source for `flow`, drawing from `rng` (Poisson only).
    pub fn new(flow: &FlowConfig, rng: Rng) -> Source {
        Source {
            kind: flow.kind,
            rate: flow.rate,
            size: flow.packet_size,
            start: flow.start,
            stop: flow.stop,
            next: Some(flow.start),
            seq: 0,
            rng,
            ecn: flow.ecn.bits(),
        }
    }

    /// Emits the packet due at `now`: its sequence number and size.
    fn emit(&mut self, now: Time) -> Option<(u64, Bytes)> {
        let due = self.next.filter(|&t| t <= now)?;
        let seq = self.seq;
        self.seq += 1;
        let next = match self.kind {
            // Computed from the start, not from the previous packet, so the long-run rate is exact.
            TrafficKind::Cbr => {
                let bits_ns = self.seq as u128 * self.size.bits() as u128 * 1_000_000_000;
                self.start + Duration((bits_ns / self.rate.as_bps() as u128) as u64)
            }
            // Invariant: the simulator builds an RtpSender or a BulkSender, never a Source, for
            // closed-loop flows.
            TrafficKind::RtpVideo | TrafficKind::Bulk | TrafficKind::Web | TrafficKind::Downloads => {
                unreachable!("closed-loop flows have no open-loop source")
            }
            TrafficKind::Poisson => {
                let mean_ns = self.size.bits() as f64 * 1e9 / self.rate.as_bps_f64();
                let gap: f64 = Exp1.sample(&mut self.rng);
                due + Duration((gap * mean_ns).round() as u64)
            }
        };
        self.next = (next < self.stop).then_some(next);
        Some((seq, self.size))
    }

    /// Packets emitted so far.
    pub fn sent(&self) -> u64 {
        self.seq
    }
}

impl Endpoint for Source {
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        self.emit(now).map(|(seq, size)| Transmit { size, seq, app: 0, ecn: self.ecn })
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.next
    }
}

/// Counters of a flow per time bin.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowBin {
    /// Bytes the source sent in the bin.
    pub tx_bytes: u64,
    /// Bytes the sink received in the bin.
    pub rx_bytes: u64,
    /// Sum of one-way delays of packets received in the bin, ns.
    pub owd_sum_ns: u64,
    /// Packets received in the bin.
    pub rx_packets: u64,
}

/// What a flow's endpoints measured.
#[derive(Clone, Debug)]
pub struct FlowMetrics {
    /// Bin width.
    pub bin: Duration,
    /// Packets sent.
    pub sent_packets: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Highest sequence number received.
    pub max_seq: Option<u64>,
    /// When the last packet arrived.
    pub last_rx: Option<Time>,
    /// One-way delays, ns.
    pub owd: NsHistogram,
    /// Exact sum of one-way delays, ns.
    pub owd_sum_ns: u128,
    /// Exact largest one-way delay, ns.
    pub owd_max_ns: u64,
    /// Per-bin counters.
    pub bins: Vec<FlowBin>,
    /// Feedback packets the receiver sent.
    pub feedback_sent_packets: u64,
    /// Feedback bytes the receiver sent.
    pub feedback_sent_bytes: u64,
    /// Feedback packets that reached the sender.
    pub feedback_received_packets: u64,
    cursor: lowlat_net::BinCursor,
}

impl FlowMetrics {
    /// Empty metrics with bins of `bin`.
    pub fn new(bin: Duration) -> FlowMetrics {
        FlowMetrics {
            bin,
            sent_packets: 0,
            sent_bytes: 0,
            rx_packets: 0,
            rx_bytes: 0,
            max_seq: None,
            last_rx: None,
            owd: NsHistogram::new(),
            owd_sum_ns: 0,
            owd_max_ns: 0,
            bins: Vec::new(),
            feedback_sent_packets: 0,
            feedback_sent_bytes: 0,
            feedback_received_packets: 0,
            cursor: lowlat_net::BinCursor::new(bin),
        }
    }

    /// The bin holding `t`, added if need be. Asked twice a packet: inlined, with the rare
    /// growth apart.
    #[inline]
    fn bin_at(&mut self, t: Time) -> &mut FlowBin {
        let i = self.cursor.index(t);
        if i >= self.bins.len() {
            return self.add_bins(i);
        }
        // (Checked above: the index is not checked again.)
        &mut self.bins[i]
    }

    /// Bins up to index `i`; the last.
    #[cold]
    #[inline(never)]
    fn add_bins(&mut self, i: usize) -> &mut FlowBin {
        self.bins.resize(i + 1, FlowBin::default());
        &mut self.bins[i]
    }

    /// The source sent `size` bytes at `now`.
    pub fn on_sent(&mut self, now: Time, size: u64) {
        self.sent_packets += 1;
        self.sent_bytes += size;
        self.bin_at(now).tx_bytes += size;
    }

    /// The receiver sent a feedback packet of `size` bytes.
    pub fn on_feedback_sent(&mut self, size: u64) {
        self.feedback_sent_packets += 1;
        self.feedback_sent_bytes += size;
    }

    /// A feedback packet of `size` bytes reached the sender.
    pub fn on_feedback_received(&mut self, _size: u64) {
        self.feedback_received_packets += 1;
    }

    /// The sink received packet `seq` of `size` bytes at `now`, sent at `sent_at`.
    // Inlined: once per packet delivered, and a call's register saves cost a fifth of it.
    #[inline(always)]
    pub fn on_received(&mut self, now: Time, seq: u64, size: u64, sent_at: Time) {
        let owd = (now - sent_at).as_nanos();
        self.rx_packets += 1;
        self.rx_bytes += size;
        self.last_rx = Some(now);
        self.max_seq = Some(self.max_seq.map_or(seq, |m| m.max(seq)));
        self.owd.record(owd);
        self.owd_sum_ns += owd as u128;
        self.owd_max_ns = self.owd_max_ns.max(owd);
        let b = self.bin_at(now);
        b.rx_bytes += size;
        b.owd_sum_ns += owd;
        b.rx_packets += 1;
    }

    /// Packets lost: gaps below the highest sequence received (the network never reorders, so a
    /// gap is a loss; packets after the last one received may still be in flight and are not
    /// counted).
    pub fn lost(&self) -> u64 {
        self.max_seq.map_or(0, |m| (m + 1).saturating_sub(self.rx_packets))
    }
}
