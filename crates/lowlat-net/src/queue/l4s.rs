//! An L4S marking queue: a FIFO whose ECT(1) packets are marked CE when their sojourn time is
//! above a shallow threshold (the native L4S AQM of RFC 9332's L-queue, as Linux's `dualpi2`
//! runs it with `step_thresh 1ms`), or with a probability rising linearly from 0 to 1 between
//! two thresholds (a ramp, RFC 9332 §A.1's alternative to the step).
//!
//! The L4S identifier is the ECT(1) codepoint (RFC 9331 §4; packets already CE are L4S too and
//! stay CE). Other packets (Not-ECT, ECT(0)) are never marked: this is one queue, not the DualQ
//! coupled pair, so a classic sender sees a drop-tail FIFO at the backing limit.
//!
//! Marking happens at dequeue, from the packet's own sojourn time, as `dualpi2` does. The ramp is
//! deterministic: the marking probabilities of successive L4S packets are summed and a packet is
//! marked each time the sum passes a whole number, so the marked fraction equals the ramp's
//! probability without a random stream (and a run stays bit-identical).

use super::QueueLimit;
use lowlat_core::{Bitrate, Bytes, Duration, Ecn, Packet, Time};
use std::collections::VecDeque;

/// The marker's thresholds.
#[derive(Clone, Debug, PartialEq)]
pub struct L4sConfig {
    /// Sojourn time from which ECT(1) packets are marked (a step when `max_threshold` equals it;
    /// 1 ms, Linux `dualpi2`'s default `step_thresh`).
    pub threshold: Duration,
    /// Sojourn time at which the ramp reaches probability 1 (equal to `threshold`: a step).
    pub max_threshold: Duration,
}

impl Default for L4sConfig {
    fn default() -> Self {
        L4sConfig { threshold: Duration::from_millis(1), max_threshold: Duration::from_millis(1) }
    }
}

impl L4sConfig {
    /// Checks the thresholds: `Err(key: message)`.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_threshold < self.threshold {
            return Err(format!(
                "max_threshold: got \"{}\", expected at least threshold (\"{}\")",
                self.max_threshold, self.threshold
            ));
        }
        Ok(())
    }

    /// The marking probability for a sojourn time.
    pub fn probability(&self, sojourn: Duration) -> f64 {
        if sojourn < self.threshold {
            0.0
        } else if sojourn >= self.max_threshold {
            1.0
        } else {
            (sojourn - self.threshold).as_secs_f64() / (self.max_threshold - self.threshold).as_secs_f64()
        }
    }
}

/// A FIFO that marks L4S packets by sojourn time.
#[derive(Clone, Debug)]
pub struct L4sMarker {
    config: L4sConfig,
    limit: QueueLimit,
    packets: VecDeque<Packet>,
    bytes: u64,
    /// Sum of the ramp's probabilities not yet turned into marks.
    credit: f64,
    marks: u64,
}

impl L4sMarker {
    /// An empty queue.
    pub fn new(config: L4sConfig, limit: QueueLimit) -> L4sMarker {
        L4sMarker { config, limit, packets: VecDeque::with_capacity(64), bytes: 0, credit: 0.0, marks: 0 }
    }

    /// Appends `pkt` or gives it back when the backing buffer is full.
    pub fn enqueue(&mut self, now: Time, mut pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        if !self.limit.admits(self.bytes, self.packets.len(), pkt.size as u64, rate) {
            return Err(pkt);
        }
        pkt.enqueued_at = now;
        self.bytes += pkt.size as u64;
        self.packets.push_back(pkt);
        Ok(())
    }

    /// The head, marked CE if it is an ECT(1) packet whose sojourn time calls for it.
    pub fn dequeue(&mut self, now: Time) -> Option<Packet> {
        let mut p = self.packets.pop_front()?;
        self.bytes -= p.size as u64;
        if p.ecn_codepoint() == Ecn::Ect1 {
            let prob = self.config.probability(now - p.enqueued_at);
            if prob > 0.0 {
                self.credit += prob;
                if self.credit >= 1.0 - 1e-12 {
                    self.credit = (self.credit - 1.0).max(0.0);
                    p.ecn = Ecn::Ce.bits();
                    self.marks += 1;
                }
            }
        }
        Some(p)
    }

    /// Bytes queued.
    pub fn bytes(&self) -> Bytes {
        Bytes(self.bytes)
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The head packet.
    pub fn head(&self) -> Option<&Packet> {
        self.packets.front()
    }

    /// Packets marked CE so far.
    pub fn marks(&self) -> u64 {
        self.marks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::FlowId;

    fn pkt(i: u64, ecn: Ecn) -> Packet {
        let mut p = Packet::new(i, FlowId(0), Bytes(1000), i, Time::ZERO);
        p.ecn = ecn.bits();
        p
    }

    #[test]
    fn a_step_marks_exactly_the_ect1_packets_above_the_threshold() {
        let mut q = L4sMarker::new(L4sConfig::default(), QueueLimit::Unlimited);
        let kinds = [Ecn::Ect1, Ecn::Ect0, Ecn::NotEct, Ecn::Ect1];
        // 40 packets enqueued at 0, one dequeued every 100 us: sojourn 0, 0.1, ..., 3.9 ms.
        for i in 0..40 {
            q.enqueue(Time::ZERO, pkt(i, kinds[i as usize % 4]), Bitrate::mbps(10)).unwrap();
        }
        for i in 0..40u64 {
            let p = q.dequeue(Time::ZERO + Duration::from_micros(100 * i)).unwrap();
            let sojourn = Duration::from_micros(100 * i);
            let ect1 = kinds[i as usize % 4] == Ecn::Ect1;
            let expected =
                if ect1 && sojourn >= Duration::from_millis(1) { Ecn::Ce } else { kinds[i as usize % 4] };
            assert_eq!(p.ecn_codepoint(), expected, "packet {i}, sojourn {sojourn}");
        }
        // ECT(1) packets are 0, 3, 4, 7, 8, ... (i % 4 in {0, 3}); those at >= 1 ms: i >= 10.
        let expected = (10..40).filter(|i| i % 4 == 0 || i % 4 == 3).count() as u64;
        assert_eq!(q.marks(), expected);
    }

    #[test]
    fn a_ramp_marks_its_probability_of_packets() {
        let cfg = L4sConfig { threshold: Duration::from_millis(1), max_threshold: Duration::from_millis(3) };
        assert_eq!(cfg.probability(Duration::from_millis(2)), 0.5);
        let mut q = L4sMarker::new(cfg, QueueLimit::Unlimited);
        for i in 0..1000 {
            q.enqueue(Time::ZERO, pkt(i, Ecn::Ect1), Bitrate::mbps(10)).unwrap();
        }
        // All dequeued at a sojourn of 2 ms: half are marked, alternately.
        let marked: Vec<bool> =
            (0..1000).map(|_| q.dequeue(Time::from_millis(2)).unwrap().ecn_codepoint() == Ecn::Ce).collect();
        assert_eq!(q.marks(), 500);
        assert!(marked.windows(2).all(|w| w[0] != w[1]));
        assert!(L4sConfig { threshold: Duration::from_millis(2), max_threshold: Duration::from_millis(1) }
            .validate()
            .unwrap_err()
            .starts_with("max_threshold"));
    }
}
