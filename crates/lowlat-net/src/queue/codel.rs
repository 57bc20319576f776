//! CoDel, "Controlled Delay" active queue management (RFC 8289).
//!
//! Follows the pseudocode of RFC 8289 §5: a packet's sojourn time is compared with `target`; once
//! it has stayed above target for a whole `interval`, CoDel enters the dropping state and drops at
//! the head at intervals of `interval / sqrt(count)` until the sojourn time falls below target.
//! Dropping resumes with the previous count when it re-enters soon after leaving (§5.5).
//!
//! With `ecn` on, an ECN-capable packet the control law picks is marked CE and delivered
//! instead of dropped (RFC 8289 §5: "mark or drop"; the order of Linux's `codel_impl.h`: a mark
//! ends the round, a drop looks at the next packet). Not-ECT packets are still dropped.

use super::QueueLimit;
use lowlat_core::{Bitrate, Bytes, Duration, Packet, Time};
use std::collections::VecDeque;

/// CoDel's parameters (RFC 8289 §4.3, §4.4).
#[derive(Clone, Debug, PartialEq)]
pub struct CoDelConfig {
    /// Acceptable standing queue delay (RFC 8289 §4.4: 5 ms).
    pub target: Duration,
    /// Sliding window over which the minimum sojourn time is tracked (§4.3: 100 ms).
    pub interval: Duration,
    /// Largest packet; a queue holding no more than this is never dropped from (§5.3: MTU).
    pub max_packet: Bytes,
    /// Mark ECN-capable packets CE instead of dropping them (off by default, as in Linux's
    /// `codel`; `fq_codel` turns it on).
    pub ecn: bool,
}

impl Default for CoDelConfig {
    fn default() -> Self {
        CoDelConfig {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            max_packet: Bytes(1500),
            ecn: false,
        }
    }
}

/// What [`CoDel::dequeue`] does with the head (see [`CoDel::verdict`]).
enum HeadVerdict {
    /// Nothing queued (the state changed as a dequeue of nothing changes it).
    Empty,
    /// Served as is (the state changed).
    Serve,
    /// The control law acts ([`CoDel::dequeue_head`]); nothing changed yet.
    ControlLaw,
}

/// A CoDel queue.
#[derive(Clone, Debug)]
pub struct CoDel {
    config: CoDelConfig,
    limit: QueueLimit,
    packets: VecDeque<Packet>,
    bytes: u64,
    /// When the sojourn time first went above target in the current episode (None: below).
    first_above_time: Option<Time>,
    /// Next drop time while dropping.
    drop_next: Time,
    count: u32,
    last_count: u32,
    dropping: bool,
    drops: u64,
    marks: u64,
    /// Whether the front of `packets` is not CoDel's but a one-packet device FIFO's behind it
    /// ([`super::DeviceQueue`]), kept in place: it left CoDel (not counted in `bytes` nor
    /// [`CoDel::len`]), and stays where it was rather than being copied out into the device.
    held: bool,
}

impl CoDel {
    /// An empty CoDel queue.
    pub fn new(config: CoDelConfig, limit: QueueLimit) -> CoDel {
        CoDel {
            config,
            limit,
            packets: VecDeque::new(),
            bytes: 0,
            first_above_time: None,
            drop_next: Time::ZERO,
            count: 0,
            last_count: 0,
            dropping: false,
            drops: 0,
            marks: 0,
            held: false,
        }
    }

    /// Appends `pkt` or gives it back when the backing buffer is full.
    pub fn enqueue(&mut self, now: Time, mut pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        if !self.limit.admits(self.bytes, self.len(), pkt.size as u64, rate) {
            return Err(pkt);
        }
        pkt.enqueued_at = now;
        self.bytes += pkt.size as u64;
        self.packets.push_back(pkt);
        Ok(())
    }

    /// What enqueueing a packet into the empty queue and dequeueing it at once does to the
    /// state: its sojourn of zero is below target (or the queue then holds less than a packet),
    /// so CoDel is below target and leaves the dropping state; nothing is dropped or marked.
    #[inline]
    pub fn pass_idle(&mut self) {
        debug_assert!(self.is_empty());
        self.first_above_time = None;
        self.dropping = false;
    }

    /// `interval / sqrt(count)` after `t` (RFC 8289 §5.5 control law).
    fn control_law(&self, t: Time, count: u32) -> Time {
        let step = self.config.interval.as_nanos() as f64 / (count.max(1) as f64).sqrt();
        t + Duration(step as u64)
    }

    /// Pops the head and says whether it may be dropped (RFC 8289 `dodequeue`).
    fn do_dequeue(&mut self, now: Time) -> (Option<Packet>, bool) {
        let Some(p) = self.packets.pop_front() else {
            self.first_above_time = None;
            return (None, false);
        };
        self.bytes -= p.size as u64;
        let sojourn = now - p.enqueued_at;
        let mut ok_to_drop = false;
        if sojourn < self.config.target || self.bytes <= self.config.max_packet.0 {
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                None => self.first_above_time = Some(now + self.config.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        (Some(p), ok_to_drop)
    }

    /// Marks `p` CE if ECN is on and it is ECN-capable; returns whether it did.
    fn mark(&mut self, p: &mut Option<Packet>) -> bool {
        if self.config.ecn && p.as_mut().is_some_and(Packet::mark_ce) {
            self.marks += 1;
            true
        } else {
            false
        }
    }

    /// What [`CoDel::dequeue`] does to an empty queue (`dodequeue` finds nothing: below target,
    /// and so out of the dropping state), without the trip through it: a device FIFO behind
    /// CoDel asks it several times per packet while it holds nothing.
    #[inline(always)]
    pub fn dequeue_empty(&mut self) {
        debug_assert!(self.is_empty());
        self.first_above_time = None;
        self.dropping = false;
    }

    /// The next packet to transmit (RFC 8289 `dequeue`); packets dropped on the way are counted.
    #[inline]
    pub fn dequeue(&mut self, now: Time) -> Option<Packet> {
        debug_assert!(!self.held);
        match self.verdict(now) {
            HeadVerdict::Empty => None,
            HeadVerdict::Serve => self.packets.pop_front(),
            HeadVerdict::ControlLaw => self.dequeue_head(now),
        }
    }

    /// [`CoDel::dequeue`] into a one-packet device FIFO kept in place: the packet it gives, if
    /// any, stays at the front, held (see `held`); returns its size. The device's packet
    /// before it must have been taken ([`CoDel::take_held`]).
    #[inline(always)]
    pub(crate) fn dequeue_held(&mut self, now: Time) -> Option<u32> {
        debug_assert!(!self.held);
        match self.verdict(now) {
            HeadVerdict::Empty => return None,
            HeadVerdict::Serve => {}
            HeadVerdict::ControlLaw => {
                // (Rare: a drop or mark is due. The packet given goes back to the front.)
                let p = self.dequeue_head(now)?;
                self.packets.push_front(p);
            }
        }
        self.held = true;
        self.packets.front().map(|p| p.size)
    }

    /// Puts `pkt`, which passed the empty CoDel ([`CoDel::pass_idle`]), in the one-packet
    /// device FIFO behind it, kept in place (see `held`).
    #[inline(always)]
    pub(crate) fn hold(&mut self, pkt: Packet) {
        debug_assert!(!self.held && self.packets.is_empty());
        self.held = true;
        self.packets.push_back(pkt);
    }

    /// Takes the device FIFO's packet kept in place (see `held`), if there is one.
    #[inline(always)]
    pub(crate) fn take_held(&mut self) -> Option<Packet> {
        if !self.held {
            return None;
        }
        self.held = false;
        self.packets.pop_front()
    }

    /// Whether the front packet is a device FIFO's kept in place (see `held`).
    #[inline(always)]
    pub(crate) fn holds(&self) -> bool {
        self.held
    }

    /// `dodequeue`'s verdict on the head, for [`CoDel::dequeue`]: with `Serve`, the head is
    /// served as is and the state (and `bytes`) has changed as `dequeue_head` would change it.
    #[inline(always)]
    fn verdict(&mut self, now: Time) -> HeadVerdict {
        let Some(head) = self.packets.front() else {
            self.dequeue_empty();
            return HeadVerdict::Empty;
        };
        // `dodequeue`'s verdict on the head, worked out in place: when it allows no drop, or
        // allows one while dropping before the next drop is due, the head is served as is and
        // the state changes as `dequeue_head` would change it, inline (nearly every dequeue of
        // a busy queue); otherwise `dequeue_head` acts, nothing having changed yet.
        let bytes = self.bytes - head.size as u64;
        let above = now - head.enqueued_at >= self.config.target && bytes > self.config.max_packet.0;
        let ok_to_drop = above && self.first_above_time.is_some_and(|t| now >= t);
        if ok_to_drop && (!self.dropping || now >= self.drop_next) {
            return HeadVerdict::ControlLaw;
        }
        if !ok_to_drop {
            if !above {
                self.first_above_time = None;
            } else if self.first_above_time.is_none() {
                self.first_above_time = Some(now + self.config.interval);
            }
            self.dropping = false;
        }
        self.bytes = bytes;
        HeadVerdict::Serve
    }

    /// [`CoDel::dequeue`] of a queue holding at least one packet.
    fn dequeue_head(&mut self, now: Time) -> Option<Packet> {
        let (mut p, ok_to_drop) = self.do_dequeue(now);
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                self.count += 1;
                if self.mark(&mut p) {
                    // A mark delivers the packet in hand and ends this round.
                    self.drop_next = self.control_law(self.drop_next, self.count);
                    break;
                }
                // Drop the packet in hand and look at the next one.
                self.drops += 1;
                let (next, ok) = self.do_dequeue(now);
                p = next;
                if !ok {
                    self.dropping = false;
                } else {
                    self.drop_next = self.control_law(self.drop_next, self.count);
                }
            }
        } else if ok_to_drop {
            if !self.mark(&mut p) {
                self.drops += 1;
                let (next, _) = self.do_dequeue(now);
                p = next;
            }
            self.dropping = true;
            // Resume near the previous drop rate if dropping stopped only recently (§5.5).
            let delta = self.count.saturating_sub(self.last_count);
            self.count = 1;
            if delta > 1 && now.saturating_since(self.drop_next) < self.config.interval * 16 {
                self.count = delta;
            }
            self.drop_next = self.control_law(now, self.count);
            self.last_count = self.count;
        }
        p
    }

    /// Bytes queued.
    pub fn bytes(&self) -> Bytes {
        Bytes(self.bytes)
    }

    /// Packets queued.
    #[inline]
    pub fn len(&self) -> usize {
        self.packets.len() - self.held as usize
    }

    /// Packets queued, and the device FIFO's kept in place (see `held`).
    #[inline]
    pub(crate) fn len_with_held(&self) -> usize {
        self.packets.len()
    }

    /// Whether empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The head packet (the device FIFO's, when it is kept in place: the packet served next).
    pub fn head(&self) -> Option<&Packet> {
        self.packets.front()
    }

    /// Packets dropped by the control law so far.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// Packets marked CE instead of dropped so far.
    pub fn marks(&self) -> u64 {
        self.marks
    }

    /// Whether CoDel is in its dropping state.
    pub fn is_dropping(&self) -> bool {
        self.dropping
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::{Ecn, FlowId};

    /// A standing queue of 1 packet per ms arriving, served at 1 per ms, 20 ms deep: sojourn
    /// 20 ms > target for longer than an interval, so the control law acts.
    fn run(ecn: bool, codepoint: Ecn) -> (CoDel, Vec<Packet>) {
        let mut q = CoDel::new(CoDelConfig { ecn, ..CoDelConfig::default() }, QueueLimit::Unlimited);
        let mut out = Vec::new();
        let mut id = 0;
        for ms in 0..600u64 {
            let now = Time::from_millis(ms);
            // Two arrivals per ms for the first 20 ms, then one: a standing queue of ~20 packets.
            for _ in 0..if ms < 20 { 2 } else { 1 } {
                let mut p = Packet::new(id, FlowId(0), Bytes(1000), id, now);
                p.ecn = codepoint.bits();
                q.enqueue(now, p, Bitrate::mbps(8)).unwrap();
                id += 1;
            }
            if let Some(p) = q.dequeue(now) {
                out.push(p);
            }
        }
        (q, out)
    }

    #[test]
    fn the_inline_dequeue_is_the_control_laws() {
        // Random bursts and service gaps (standing queues above target, dropping episodes, idle
        // spells), with and without ECN: `dequeue` (its inline verdicts) against the control law
        // applied to every non-empty dequeue (`dequeue_head`), packet for packet and state for
        // state.
        for ecn in [false, true] {
            let cfg = CoDelConfig { ecn, ..CoDelConfig::default() };
            let (mut fast, mut full) =
                (CoDel::new(cfg.clone(), QueueLimit::Unlimited), CoDel::new(cfg, QueueLimit::Unlimited));
            let mut next = lowlat_core::rng::below(5, "codel-inline-test");
            let (mut now, mut id) = (Time::ZERO, 0u64);
            for _ in 0..200_000 {
                for p in super::super::random_burst(&mut next, &mut now, &mut id) {
                    for q in [&mut fast, &mut full] {
                        q.enqueue(now, p, Bitrate::mbps(10)).unwrap();
                    }
                }
                let a = fast.dequeue(now);
                let b = if full.is_empty() { full.dequeue(now) } else { full.dequeue_head(now) };
                assert_eq!(a.map(|p| (p.id, p.ecn)), b.map(|p| (p.id, p.ecn)));
                assert_eq!(
                    (
                        fast.bytes,
                        fast.first_above_time,
                        fast.drop_next,
                        fast.count,
                        fast.dropping,
                        fast.drops
                    ),
                    (
                        full.bytes,
                        full.first_above_time,
                        full.drop_next,
                        full.count,
                        full.dropping,
                        full.drops
                    )
                );
            }
            assert!(fast.drops() + fast.marks() > 100, "the control law acted");
        }
    }

    #[test]
    fn with_ecn_it_marks_ect_packets_instead_of_dropping_them() {
        let (dropper, _) = run(false, Ecn::Ect0);
        assert!(dropper.drops() > 0 && dropper.marks() == 0);
        let (marker, out) = run(true, Ecn::Ect0);
        assert_eq!(marker.drops(), 0);
        assert!(marker.marks() > 0);
        assert_eq!(out.iter().filter(|p| p.ecn_codepoint() == Ecn::Ce).count() as u64, marker.marks());
        // Not-ECT packets are still dropped with ECN on.
        let (not_ect, _) = run(true, Ecn::NotEct);
        assert!(not_ect.drops() > 0 && not_ect.marks() == 0);
    }
}
