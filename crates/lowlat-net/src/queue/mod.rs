//! Queues and AQMs at a link's head.
//!
//! One discipline per file; [`QueueDiscipline`] dispatches statically (no virtual call per
//! packet). Every queue stamps [`Packet::enqueued_at`] on arrival so the link can record each
//! packet's sojourn time when it leaves.

mod codel;
mod device;
mod droptail;
mod l4s;

pub use codel::{CoDel, CoDelConfig};
pub use device::{DeviceQueue, DeviceQueueConfig};
pub use droptail::DropTail;
pub use l4s::{L4sConfig, L4sMarker};

use lowlat_core::{Bitrate, Bytes, Duration, Packet, Time};

/// How much a queue may hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueLimit {
    /// At most this many bytes.
    Bytes(Bytes),
    /// At most this much time's worth of data at the link's current rate (RMCAT: 300 ms).
    Time(Duration),
    /// At most this many packets.
    Packets(u32),
    /// No limit.
    Unlimited,
}

impl QueueLimit {
    /// The byte limit now, for a link currently serving at `rate`.
    pub fn bytes_at(&self, rate: Bitrate) -> u64 {
        match *self {
            QueueLimit::Bytes(b) => b.0,
            QueueLimit::Time(d) => rate.bytes_in(d).0,
            QueueLimit::Packets(_) | QueueLimit::Unlimited => u64::MAX,
        }
    }

    /// Whether a queue holding `bytes` in `packets` packets may take `size` more bytes.
    /// An empty queue always takes one packet, so a short outage (rate 0) does not drop all.
    pub fn admits(&self, bytes: u64, packets: usize, size: u64, rate: Bitrate) -> bool {
        if packets == 0 {
            return true;
        }
        match *self {
            QueueLimit::Packets(n) => packets < n as usize,
            QueueLimit::Unlimited => true,
            // `bytes + size <= floor(rate x d / 8e9)`, for whole bytes the same as
            // `(bytes + size) x 8e9 <= rate x d`: two multiplications instead of a 128-bit
            // division per arrival at a busy queue.
            QueueLimit::Time(d) => {
                (bytes + size) as u128 * 8_000_000_000 <= rate.as_bps() as u128 * d.as_nanos() as u128
            }
            QueueLimit::Bytes(b) => bytes + size <= b.0,
        }
    }
}

/// Which discipline, and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum QueueConfig {
    /// First in, first out; arrivals beyond the limit are dropped.
    DropTail {
        /// The capacity.
        limit: QueueLimit,
    },
    /// CoDel (RFC 8289) with a backing limit.
    CoDel {
        /// Target, interval and MTU.
        config: CoDelConfig,
        /// The buffer behind it (drop-tail beyond this).
        limit: QueueLimit,
    },
    /// A FIFO marking ECT(1) packets above a sojourn threshold (L4S step or ramp).
    L4s {
        /// The thresholds.
        config: L4sConfig,
        /// The buffer (drop-tail beyond this).
        limit: QueueLimit,
    },
    /// A qdisc in front of a device FIFO, as ns-3 stacks a traffic-control queue disc on a
    /// device's transmit queue: packets wait in the qdisc only while the device FIFO is full
    /// ([`DeviceQueue`]).
    Device {
        /// The qdisc (any other kind).
        qdisc: Box<QueueConfig>,
        /// The device FIFO behind it.
        device: DeviceQueueConfig,
    },
}

impl QueueConfig {
    /// Whether the discipline can mark ECN instead of dropping (CoDel with `ecn`, L4S).
    pub fn marks_ecn(&self) -> bool {
        match self {
            QueueConfig::DropTail { .. } => false,
            QueueConfig::CoDel { config, .. } => config.ecn,
            QueueConfig::L4s { .. } => true,
            QueueConfig::Device { qdisc, .. } => qdisc.marks_ecn(),
        }
    }
}

impl Default for QueueConfig {
    /// RMCAT's default: drop-tail, 300 ms at the current rate.
    fn default() -> Self {
        QueueConfig::DropTail { limit: QueueLimit::Time(Duration::from_millis(300)) }
    }
}

/// A queue, statically dispatched.
// `repr(u8)`: a tag byte of its own, where the compiler otherwise packs the variant into a niche
// of CoDel's fields, which took several instructions to decode at each of the link's
// per-packet looks (`is_idle_droptail` and the other dispatches).
#[derive(Clone, Debug)]
#[repr(u8)]
pub enum QueueDiscipline {
    /// Drop-tail FIFO.
    DropTail(DropTail),
    /// CoDel.
    CoDel(CoDel),
    /// L4S step/ramp marker.
    L4s(L4sMarker),
    /// A qdisc in front of a device FIFO (boxed: it holds a discipline).
    Device(Box<DeviceQueue>),
}

impl QueueDiscipline {
    /// An empty queue of the given kind.
    pub fn new(config: &QueueConfig) -> QueueDiscipline {
        match config {
            QueueConfig::DropTail { limit } => QueueDiscipline::DropTail(DropTail::new(*limit)),
            QueueConfig::CoDel { config, limit } => {
                QueueDiscipline::CoDel(CoDel::new(config.clone(), *limit))
            }
            QueueConfig::L4s { config, limit } => {
                QueueDiscipline::L4s(L4sMarker::new(config.clone(), *limit))
            }
            QueueConfig::Device { qdisc, device } => {
                QueueDiscipline::Device(Box::new(DeviceQueue::new(qdisc, device)))
            }
        }
    }

    /// Offers a packet; gives it back if it is dropped at the tail. `rate` is the link's rate now.
    #[inline(always)]
    pub fn enqueue(&mut self, now: Time, pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        match self {
            QueueDiscipline::DropTail(q) => q.enqueue(now, pkt, rate),
            QueueDiscipline::CoDel(q) => q.enqueue(now, pkt, rate),
            QueueDiscipline::L4s(q) => q.enqueue(now, pkt, rate),
            QueueDiscipline::Device(q) => q.enqueue(now, pkt, rate),
        }
    }

    /// [`QueueDiscipline::enqueue`] with a device queue's way past its qdisc inlined (what a
    /// link's busy queue takes; elsewhere the plain form keeps the code small).
    #[inline(always)]
    pub fn enqueue_inline(&mut self, now: Time, pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        match self {
            QueueDiscipline::DropTail(q) => q.enqueue(now, pkt, rate),
            QueueDiscipline::CoDel(q) => q.enqueue(now, pkt, rate),
            QueueDiscipline::L4s(q) => q.enqueue(now, pkt, rate),
            QueueDiscipline::Device(q) => q.enqueue_inline(now, pkt, rate),
        }
    }

    /// [`QueueDiscipline::dequeue`] with a device queue's dequeue of an empty qdisc inlined
    /// (see [`QueueDiscipline::enqueue_inline`]).
    #[inline(always)]
    pub fn dequeue_inline(&mut self, now: Time) -> Option<Packet> {
        match self {
            QueueDiscipline::DropTail(q) => q.dequeue(now),
            QueueDiscipline::CoDel(q) => q.dequeue(now),
            QueueDiscipline::L4s(q) => q.dequeue(now),
            QueueDiscipline::Device(q) => q.dequeue_inline(now),
        }
    }

    /// The next packet to serve, if any (an AQM may drop packets on the way; see `aqm_drops`).
    #[inline]
    pub fn dequeue(&mut self, now: Time) -> Option<Packet> {
        match self {
            QueueDiscipline::DropTail(q) => q.dequeue(now),
            QueueDiscipline::CoDel(q) => q.dequeue(now),
            QueueDiscipline::L4s(q) => q.dequeue(now),
            QueueDiscipline::Device(q) => q.dequeue(now),
        }
    }

    /// Bytes queued.
    #[inline]
    pub fn bytes(&self) -> Bytes {
        match self {
            QueueDiscipline::DropTail(q) => q.bytes(),
            QueueDiscipline::CoDel(q) => q.bytes(),
            QueueDiscipline::L4s(q) => q.bytes(),
            QueueDiscipline::Device(q) => q.bytes(),
        }
    }

    // The `leaf_` calls: what a device queue asks its qdisc, without a call unless the qdisc is
    // itself a device queue (never built): the calls through the recursive `QueueDiscipline`
    // methods cannot be inlined.

    /// [`QueueDiscipline::bytes`], bytes.
    #[inline(always)]
    fn leaf_bytes(&self) -> u64 {
        match self {
            QueueDiscipline::DropTail(q) => q.bytes().0,
            QueueDiscipline::CoDel(q) => q.bytes().0,
            QueueDiscipline::L4s(q) => q.bytes().0,
            QueueDiscipline::Device(q) => nested(q, |q| q.bytes().0),
        }
    }

    /// [`QueueDiscipline::len`].
    #[inline(always)]
    fn leaf_len(&self) -> usize {
        match self {
            QueueDiscipline::DropTail(q) => q.len(),
            QueueDiscipline::CoDel(q) => q.len(),
            QueueDiscipline::L4s(q) => q.len(),
            QueueDiscipline::Device(q) => nested(q, |q| q.len()),
        }
    }

    /// [`QueueDiscipline::len`], with a device FIFO's packet CoDel keeps in place (see
    /// [`DeviceQueue`]'s `device`).
    #[inline(always)]
    fn leaf_len_with_held(&self) -> usize {
        match self {
            QueueDiscipline::CoDel(q) => q.len_with_held(),
            q => q.leaf_len(),
        }
    }

    /// Packets of a device FIFO kept in place in this qdisc (see [`DeviceQueue`]'s `device`).
    #[inline(always)]
    fn leaf_held(&self) -> usize {
        match self {
            QueueDiscipline::CoDel(q) => q.holds() as usize,
            _ => 0,
        }
    }

    /// [`QueueDiscipline::enqueue`].
    #[inline(always)]
    fn leaf_enqueue(&mut self, now: Time, pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        match self {
            QueueDiscipline::DropTail(q) => q.enqueue(now, pkt, rate),
            QueueDiscipline::CoDel(q) => q.enqueue(now, pkt, rate),
            QueueDiscipline::L4s(q) => q.enqueue(now, pkt, rate),
            QueueDiscipline::Device(q) => nested_mut(q, |q| q.enqueue(now, pkt, rate)),
        }
    }

    /// [`QueueDiscipline::dequeue`].
    #[inline(always)]
    fn leaf_dequeue(&mut self, now: Time) -> Option<Packet> {
        match self {
            QueueDiscipline::DropTail(q) => q.dequeue(now),
            QueueDiscipline::CoDel(q) => q.dequeue(now),
            QueueDiscipline::L4s(q) => q.dequeue(now),
            QueueDiscipline::Device(q) => nested_mut(q, |q| q.dequeue(now)),
        }
    }

    /// If the queue is empty and its dequeue is known here (drop-tail: changes nothing; CoDel:
    /// leaves the dropping state), does what that dequeue of nothing does and returns `true`;
    /// otherwise `false`, having done nothing. A device queue's dequeue asks its qdisc inline
    /// this way (the call through the recursive `dequeue` cannot be inlined).
    #[inline(always)]
    fn dequeue_if_empty(&mut self) -> bool {
        match self {
            QueueDiscipline::DropTail(q) => q.is_empty(),
            // (Counting a device FIFO's packet it keeps, which the caller would take.)
            QueueDiscipline::CoDel(q) if q.len_with_held() == 0 => {
                q.dequeue_empty();
                true
            }
            QueueDiscipline::CoDel(_) | QueueDiscipline::L4s(_) | QueueDiscipline::Device(_) => false,
        }
    }

    /// Packets queued.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            QueueDiscipline::DropTail(q) => q.len(),
            QueueDiscipline::CoDel(q) => q.len(),
            QueueDiscipline::L4s(q) => q.len(),
            QueueDiscipline::Device(q) => q.len(),
        }
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The packet at the head, if any.
    pub fn head(&self) -> Option<&Packet> {
        match self {
            QueueDiscipline::DropTail(q) => q.head(),
            QueueDiscipline::CoDel(q) => q.head(),
            QueueDiscipline::L4s(q) => q.head(),
            QueueDiscipline::Device(q) => q.head(),
        }
    }

    /// A drop-tail queue holding nothing: it admits any packet and gives it straight back, with
    /// no other state to update (the link's fast path for an idle hop).
    #[inline]
    pub fn is_idle_droptail(&self) -> bool {
        matches!(self, QueueDiscipline::DropTail(q) if q.is_empty())
    }

    /// What offering a packet to this queue while it is empty and taking it straight back out
    /// (with a sojourn of zero) does to its state, done without the packet; returns whether the
    /// discipline can say (`false`: L4S, whose marking may act even then, or a device queue).
    /// An empty queue admits any packet, so such a trip always gives it back.
    #[inline]
    pub fn pass_idle(&mut self) -> bool {
        match self {
            QueueDiscipline::DropTail(_) => true,
            QueueDiscipline::CoDel(q) => {
                q.pass_idle();
                true
            }
            QueueDiscipline::L4s(_) | QueueDiscipline::Device(_) => false,
        }
    }

    /// If the queue is empty and says what taking a packet in and straight back out (a sojourn
    /// of zero) does to its state ([`QueueDiscipline::pass_idle`]; for a device queue, both
    /// stages empty), does that and returns `true`: the link then serves the packet at once,
    /// as enqueue-then-dequeue would, without the trip through the queue. Otherwise `false`,
    /// having done nothing.
    #[inline(always)]
    pub fn pass_if_empty(&mut self) -> bool {
        match self {
            QueueDiscipline::DropTail(q) => q.is_empty(),
            // (A CoDel of its own keeps no device FIFO's packet: `len_with_held` is its length.)
            QueueDiscipline::CoDel(q) if q.len_with_held() == 0 => {
                q.pass_idle();
                true
            }
            // (A device FIFO's trip: the qdisc's idle pass on enqueue, then its dequeue of
            // nothing on the pop, which does what the pass did.)
            QueueDiscipline::Device(q) if q.device_fifo_empty() && q.qdisc().leaf_len_with_held() == 0 => {
                q.qdisc_mut().pass_idle()
            }
            QueueDiscipline::CoDel(_) | QueueDiscipline::L4s(_) | QueueDiscipline::Device(_) => false,
        }
    }

    /// If the queue is empty and its dequeue of nothing is known here
    /// ([`QueueDiscipline::dequeue_if_empty`]; for a device queue, both stages empty), does what
    /// that dequeue does and returns `true` (the link's transmission ends with nothing to start);
    /// otherwise `false`, having done nothing.
    #[inline(always)]
    pub fn dequeue_idle(&mut self, _now: Time) -> bool {
        match self {
            // (A device FIFO kept in its qdisc, `dequeue_if_empty` counts.)
            QueueDiscipline::Device(q) if q.device_fifo_empty() => q.qdisc_mut().dequeue_if_empty(),
            QueueDiscipline::Device(_) => false,
            q => q.dequeue_if_empty(),
        }
    }

    /// Packets the AQM dropped at dequeue so far (tail drops are returned by `enqueue`).
    pub fn aqm_drops(&self) -> u64 {
        match self {
            QueueDiscipline::DropTail(_) => 0,
            QueueDiscipline::CoDel(q) => q.drops(),
            QueueDiscipline::L4s(_) => 0,
            QueueDiscipline::Device(q) => q.qdisc().aqm_drops(),
        }
    }

    /// Packets marked CE so far.
    pub fn ecn_marks(&self) -> u64 {
        match self {
            QueueDiscipline::DropTail(_) => 0,
            QueueDiscipline::CoDel(q) => q.marks(),
            QueueDiscipline::L4s(q) => q.marks(),
            QueueDiscipline::Device(q) => q.qdisc().ecn_marks(),
        }
    }
}

/// `f` of a device queue that is another's qdisc (never built), out of line: the end of the
/// recursion of the `leaf_` calls.
#[inline(never)]
fn nested<T>(q: &DeviceQueue, f: impl FnOnce(&DeviceQueue) -> T) -> T {
    f(q)
}

/// [`nested`], mutably.
#[inline(never)]
fn nested_mut<T>(q: &mut DeviceQueue, f: impl FnOnce(&mut DeviceQueue) -> T) -> T {
    f(q)
}

/// Random arrivals for the queue tests' long runs (bursts and service gaps: standing queues,
/// dropping episodes, idle spells): `now` moves on by up to 900 us, then 0-2 packets of
/// 200-1,499 B with random ECN bits arrive, numbered on from `id`.
#[cfg(test)]
pub(crate) fn random_burst(next: &mut impl FnMut(u64) -> u64, now: &mut Time, id: &mut u64) -> Vec<Packet> {
    *now += Duration::from_micros(next(900));
    let n = next(3);
    (0..n)
        .map(|_| {
            let mut p = Packet::new(*id, lowlat_core::FlowId(0), Bytes(200 + next(1300)), *id, *now);
            p.ecn = next(3) as u8;
            *id += 1;
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The time limit's admission test (no division) agrees with the byte limit it stands for,
    /// right at the boundary and at rates and limits where that limit is clamped.
    #[test]
    fn a_time_limit_admits_exactly_up_to_its_bytes_at_the_current_rate() {
        let rates = [1, 3, 999_999, 10_000_000, 123_456_789, 10_000_000_000, u64::MAX];
        let limits = [Duration(1), Duration::from_millis(300), Duration(7_777_777), Duration(u64::MAX)];
        for &bps in &rates {
            for &d in &limits {
                let (rate, limit) = (Bitrate::bps(bps), QueueLimit::Time(d));
                let cap = limit.bytes_at(rate);
                for bytes in
                    [0, 1, cap.saturating_sub(1500), cap.saturating_sub(1), cap, cap.saturating_add(1)]
                {
                    for size in [0, 1, 1500] {
                        if bytes.checked_add(size).is_none() {
                            continue;
                        }
                        let want = bytes + size <= cap;
                        assert_eq!(
                            limit.admits(bytes, 3, size, rate),
                            want,
                            "{bps} bit/s, {d:?}, {bytes}+{size}"
                        );
                    }
                }
            }
        }
    }
}
