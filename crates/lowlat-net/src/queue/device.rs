//! A queue discipline in front of a network device's own FIFO, as ns-3 (and Linux) stack them:
//! a traffic-control root qdisc (CoDel, a FIFO, ...) feeding the device's drop-tail transmit
//! queue, with flow control between the two.
//!
//! ns-3.34 (`src/traffic-control/model/traffic-control-layer.cc` `TrafficControlLayer::Send`,
//! `queue-disc.cc` `QueueDisc::Run`/`Restart`/`DequeuePacket`/`Transmit`,
//! `src/network/utils/net-device-queue-interface.h` `NetDeviceQueue::PacketEnqueued`/
//! `PacketDequeued`, `src/point-to-point/model/point-to-point-net-device.cc` `Send`/
//! `TransmitStart`/`TransmitComplete`):
//!
//! - every packet is enqueued in the qdisc, then the qdisc runs: while the device's transmit
//!   queue is not stopped it dequeues (the AQM's control law acts here, on the time spent in the
//!   qdisc alone) and hands the packet to the device, which appends it to its FIFO (and, when
//!   its transmitter is idle, takes it straight back out to transmit it);
//! - the device stops its transmit queue as soon as its FIFO could not take one more packet, and
//!   wakes it when a dequeue leaves room for one (the qdisc runs again at the same instant,
//!   `Simulator::ScheduleNow`);
//! - the packet in transmission has left the device FIFO (`TransmitStart` is handed the packet
//!   just dequeued; `TransmitComplete` dequeues the next one the instant the last bit is out).
//!
//! So packets wait in the qdisc only while the device FIFO is full: a device FIFO of 100 packets
//! (ns-3's `DropTailQueue` default) lets an AQM see nothing of the first 100 packets queued, and
//! its sojourn is the time beyond them. Here: the link's server is the transmitter, the device
//! FIFO the packets waiting behind it, and the qdisc any [`QueueDiscipline`]. Packets keep the
//! instant they reached the qdisc ([`Packet::enqueued_at`]), so the link's sojourn statistic is
//! the wait through both stages, while the qdisc measures its own stage.

use super::{QueueConfig, QueueDiscipline};
use lowlat_core::{Bitrate, Bytes, Packet, Time};
use std::collections::VecDeque;

/// The device FIFO behind a qdisc.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceQueueConfig {
    /// Packets the device FIFO holds, not counting the one in transmission (ns-3.34
    /// `DropTailQueue<Packet>` `MaxSize` default `"100p"`, `src/network/utils/drop-tail-queue.h`,
    /// the queue `PointToPointHelper` gives every device). Counted in packets: the device's
    /// transmit queue stops when its FIFO holds this many (`NetDeviceQueue::PacketEnqueued`:
    /// current size plus one packet above the maximum).
    pub limit_packets: u32,
}

impl Default for DeviceQueueConfig {
    fn default() -> Self {
        DeviceQueueConfig { limit_packets: 100 }
    }
}

/// A qdisc feeding a device FIFO (see the module docs).
#[derive(Clone, Debug)]
pub struct DeviceQueue {
    qdisc: QueueDiscipline,
    /// The device FIFO's packets, but for a one-packet FIFO behind CoDel (the Zhuge
    /// reproduction's), whose packet CoDel keeps at its front, flagged as not its own (see
    /// `CoDel::hold`): each packet then stays where it arrived, without the copies out of CoDel
    /// and into and out of the device, nor the trips through the general stages.
    device: VecDeque<Packet>,
    device_bytes: u64,
    /// Packets `device` holds at most; 0 for a one-packet FIFO kept in CoDel (see `device`),
    /// which so takes the ways apart from the inlined ones, at no cost to other FIFOs.
    limit: usize,
}

impl DeviceQueue {
    /// An empty qdisc of kind `qdisc` in front of an empty device FIFO.
    pub fn new(qdisc: &QueueConfig, device: &DeviceQueueConfig) -> DeviceQueue {
        DeviceQueue {
            qdisc: QueueDiscipline::new(qdisc),
            device: VecDeque::new(),
            device_bytes: 0,
            // A device that holds nothing would never take a packet: at least one.
            limit: match qdisc {
                QueueConfig::CoDel { .. } if device.limit_packets <= 1 => 0,
                _ => device.limit_packets.max(1) as usize,
            },
        }
    }

    /// Moves packets from the qdisc into the device FIFO while it has room: the qdisc's run
    /// after an enqueue or a wake-up, at `now`.
    #[inline]
    fn refill(&mut self, now: Time) {
        while self.device.len() < self.limit {
            let Some(p) = self.qdisc.leaf_dequeue(now) else { break };
            self.device_bytes += p.size as u64;
            self.device.push_back(p);
        }
    }

    /// Offers a packet to the qdisc (gives it back if the qdisc drops it at the tail), which
    /// passes it on at once if the device FIFO has room.
    // Not inlined (nor `dequeue`): the qdisc's own calls inline into these (an empty CoDel's
    // dequeue, asked several times per packet, is then two stores), which a call through the
    // recursive `QueueDiscipline` would prevent. A link's busy queue takes the inlined forms.
    #[inline(never)]
    pub fn enqueue(&mut self, now: Time, pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        self.enqueue_inline(now, pkt, rate)
    }

    /// [`DeviceQueue::enqueue`] inlined up to the trip through the qdisc (which nearly every
    /// packet of a queue shorter than the device FIFO skips).
    #[inline(always)]
    pub(crate) fn enqueue_inline(&mut self, now: Time, mut pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        if self.limit == 0 {
            return self.enqueue_held(now, pkt, rate);
        }
        // A device FIFO with room means an empty qdisc (a refill leaves the FIFO full or the
        // qdisc empty): the packet passes the qdisc at once, with a sojourn of zero. Most
        // packets of a queue shorter than the FIFO take this way, without the trip through the
        // qdisc (its admission, stamp and dequeue), when the qdisc can say what that trip does
        // to its state.
        if self.device.len() < self.limit && self.qdisc.pass_idle() {
            pkt.enqueued_at = now;
            self.device_bytes += pkt.size as u64;
            self.device.push_back(pkt);
            return Ok(());
        }
        self.enqueue_in_qdisc(now, pkt, rate)
    }

    /// [`DeviceQueue::enqueue`] of a one-packet device FIFO kept in CoDel (see `device`): full,
    /// the packet waits in CoDel; empty, it means an empty CoDel, which the packet passes at
    /// once (as a FIFO with room takes it).
    #[inline(always)]
    fn enqueue_held(&mut self, now: Time, mut pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        let QueueDiscipline::CoDel(c) = &mut self.qdisc else { unreachable!("kept only in CoDel") };
        if c.holds() {
            return c.enqueue(now, pkt, rate);
        }
        c.pass_idle();
        pkt.enqueued_at = now;
        self.device_bytes += pkt.size as u64;
        c.hold(pkt);
        Ok(())
    }

    /// [`DeviceQueue::enqueue`] through the qdisc.
    #[inline(never)]
    fn enqueue_in_qdisc(&mut self, now: Time, pkt: Packet, rate: Bitrate) -> Result<(), Packet> {
        debug_assert!(self.limit > 0, "a FIFO kept in CoDel takes `enqueue_held`");
        self.qdisc.leaf_enqueue(now, pkt, rate)?;
        // (A full device FIFO, why most packets come this way, takes nothing.)
        if self.device.len() < self.limit {
            self.refill(now);
        }
        Ok(())
    }

    /// The next packet to transmit: the device FIFO's head; the slot it frees is filled from the
    /// qdisc at the same instant.
    #[inline(never)]
    pub fn dequeue(&mut self, now: Time) -> Option<Packet> {
        self.dequeue_inline(now)
    }

    /// [`DeviceQueue::dequeue`] inlined when the qdisc is empty and says what an empty dequeue
    /// (the refill's) does.
    #[inline(always)]
    pub(crate) fn dequeue_inline(&mut self, now: Time) -> Option<Packet> {
        // (With a FIFO kept in CoDel, an empty CoDel means an empty FIFO too: nothing to pop.)
        if self.qdisc.dequeue_if_empty() {
            let p = self.device.pop_front()?;
            self.device_bytes -= p.size as u64;
            return Some(p);
        }
        // (Asked only past the way above, which a FIFO kept in CoDel takes when empty: no cost
        // to other FIFOs while their qdisc is empty.)
        if self.limit == 0 {
            return self.dequeue_held(now);
        }
        self.dequeue_general(now)
    }

    /// [`DeviceQueue::dequeue`] of a one-packet device FIFO kept in CoDel (see `device`),
    /// holding a packet: it leaves, and CoDel's next takes its place, staying where it is
    /// (CoDel's dequeue does not depend on the device FIFO).
    #[inline(always)]
    fn dequeue_held(&mut self, now: Time) -> Option<Packet> {
        let QueueDiscipline::CoDel(c) = &mut self.qdisc else { unreachable!("kept only in CoDel") };
        // (Held: `dequeue_if_empty` saw a packet. Otherwise, as there, nothing to pop.)
        let Some(p) = c.take_held() else {
            c.dequeue_empty();
            return None;
        };
        self.device_bytes -= p.size as u64;
        if let Some(size) = c.dequeue_held(now) {
            self.device_bytes += size as u64;
        }
        Some(p)
    }

    /// [`DeviceQueue::dequeue`], the general way.
    #[inline(never)]
    fn dequeue_general(&mut self, now: Time) -> Option<Packet> {
        debug_assert!(self.limit > 0, "a FIFO kept in CoDel takes `dequeue_held`");
        if self.qdisc.leaf_len() == 0 {
            // Both refills would find the qdisc empty: one dequeue of nothing does what they do
            // (at least one of them runs, and an empty dequeue's effect does not depend on how
            // many follow), inline where the qdisc says what it is.
            if !self.qdisc.dequeue_if_empty() {
                self.qdisc.leaf_dequeue(now);
            }
            let p = self.device.pop_front()?;
            self.device_bytes -= p.size as u64;
            return Some(p);
        }
        // A qdisc holding packets means a full device FIFO: nothing to refill before the pop.
        if self.limit == 1 {
            // A one-packet FIFO behind another qdisc than CoDel: the qdisc's next packet takes the
            // place of the one leaving, without the FIFO's pop and push (the qdisc's dequeue
            // does not depend on the FIFO).
            if let Some(next) = self.qdisc.leaf_dequeue(now) {
                let p = std::mem::replace(self.device.front_mut()?, next);
                self.device_bytes = self.device_bytes - p.size as u64 + next.size as u64;
                return Some(p);
            }
            // (The qdisc dropped all it held: the FIFO is left empty.)
            let p = self.device.pop_front()?;
            self.device_bytes -= p.size as u64;
            return Some(p);
        }
        let p = self.device.pop_front()?;
        self.device_bytes -= p.size as u64;
        self.refill(now);
        Some(p)
    }

    /// Bytes waiting in both stages.
    #[inline]
    pub fn bytes(&self) -> Bytes {
        Bytes(self.qdisc.leaf_bytes() + self.device_bytes)
    }

    /// Packets waiting in both stages.
    #[inline]
    pub fn len(&self) -> usize {
        self.qdisc.leaf_len_with_held() + self.device.len()
    }

    /// Whether both stages are empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The packet transmitted next.
    pub fn head(&self) -> Option<&Packet> {
        self.device.front().or_else(|| self.qdisc.head())
    }

    /// The qdisc (its drops, marks and state).
    #[inline]
    pub fn qdisc(&self) -> &QueueDiscipline {
        &self.qdisc
    }

    /// Packets in the device FIFO.
    #[inline]
    pub fn device_len(&self) -> usize {
        self.device.len() + self.qdisc.leaf_held()
    }

    /// Whether the device FIFO holds no packet in `device` (one kept in CoDel aside).
    #[inline(always)]
    pub(crate) fn device_fifo_empty(&self) -> bool {
        self.device.is_empty()
    }

    /// The qdisc, to change its state as a trip through it would (see
    /// [`QueueDiscipline::pass_if_empty`]).
    #[inline]
    pub(crate) fn qdisc_mut(&mut self) -> &mut QueueDiscipline {
        &mut self.qdisc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{CoDel, CoDelConfig, QueueLimit};
    use lowlat_core::{Duration, FlowId};

    fn pkt(i: u64, now: Time) -> Packet {
        Packet::new(i, FlowId(0), Bytes(1500), i, now)
    }

    /// A transmitter serving 1500 B every `service`, fed `arrivals_per_service` packets per
    /// service time: returns the queue and the packets sent, in order.
    /// Rounds `from..to`, packet ids counting from `from x arrivals_per_service`.
    fn overload(
        q: &mut QueueDiscipline,
        arrivals_per_service: u64,
        service: Duration,
        from: u64,
        to: u64,
    ) -> Vec<Packet> {
        let rate = Bitrate::bps(1500 * 8 * 1_000_000_000 / service.as_nanos());
        let mut out = Vec::new();
        let mut id = from * arrivals_per_service;
        for r in from..to {
            let now = Time(r * service.as_nanos());
            for _ in 0..arrivals_per_service {
                let _ = q.enqueue(now, pkt(id, now), rate);
                id += 1;
            }
            if let Some(p) = q.dequeue(now) {
                out.push(p);
            }
        }
        out
    }

    fn codel_behind(device: u32) -> QueueDiscipline {
        QueueDiscipline::new(&QueueConfig::Device {
            qdisc: Box::new(QueueConfig::CoDel {
                config: CoDelConfig::default(),
                limit: QueueLimit::Unlimited,
            }),
            device: DeviceQueueConfig { limit_packets: device },
        })
    }

    /// CoDel of `config` limited to 40 packets, behind a device FIFO of `device` packets.
    fn codel_behind_config(config: CoDelConfig, device: u32) -> QueueDiscipline {
        QueueDiscipline::new(&QueueConfig::Device {
            qdisc: Box::new(QueueConfig::CoDel { config, limit: QueueLimit::Packets(40) }),
            device: DeviceQueueConfig { limit_packets: device },
        })
    }

    #[test]
    fn codel_sees_nothing_while_the_device_fifo_has_room() {
        // 2 arrivals per 1 ms service: the backlog grows by one packet a millisecond. For the
        // first 100 ms it fits the 100-packet device FIFO: the qdisc stays empty, every packet
        // passes CoDel at a sojourn of zero and none is dropped, although the packets waiting
        // (up to 50 ms) are far above CoDel's 5 ms target.
        let mut q = codel_behind(100);
        let out = overload(&mut q, 2, Duration::from_millis(1), 0, 100);
        assert_eq!(q.aqm_drops(), 0);
        assert_eq!(out.len(), 100);
        let QueueDiscipline::Device(d) = &q else { unreachable!() };
        assert_eq!(d.qdisc().len(), 0);
        assert_eq!(d.device_len(), 100);
        assert_eq!(q.len(), 100);
        assert_eq!(q.bytes(), Bytes(150_000));
        // Beyond the device FIFO the qdisc holds the excess; CoDel measures only that stage,
        // whose sojourn passes the target at ~110 ms: no drop before an interval later, then
        // drops.
        overload(&mut q, 2, Duration::from_millis(1), 100, 200);
        assert_eq!(q.aqm_drops(), 0);
        let QueueDiscipline::Device(d) = &q else { unreachable!() };
        assert_eq!((d.qdisc().len(), d.device_len()), (100, 100));
        let more = overload(&mut q, 2, Duration::from_millis(1), 200, 500);
        assert!(q.aqm_drops() > 0, "CoDel never dropped beyond the device FIFO");
        assert_eq!(more.len(), 300);
    }

    #[test]
    fn a_single_codel_drops_the_same_backlog_sooner() {
        // The same 200 ms of arrivals into CoDel alone: its sojourn passes the target at ~10 ms
        // and it drops from ~110 ms (the contrast the test above depends on).
        let mut q = QueueDiscipline::new(&QueueConfig::CoDel {
            config: CoDelConfig::default(),
            limit: QueueLimit::Unlimited,
        });
        overload(&mut q, 2, Duration::from_millis(1), 0, 200);
        assert!(q.aqm_drops() > 0);
    }

    #[test]
    fn the_capacity_is_the_qdisc_limit_plus_the_device_limit() {
        let mut q = QueueDiscipline::new(&QueueConfig::Device {
            qdisc: Box::new(QueueConfig::DropTail { limit: QueueLimit::Packets(250) }),
            device: DeviceQueueConfig { limit_packets: 100 },
        });
        let accepted = (0..1000)
            .filter(|&i| q.enqueue(Time::ZERO, pkt(i, Time::ZERO), Bitrate::mbps(1)).is_ok())
            .count();
        assert_eq!(accepted, 350);
        assert_eq!(q.len(), 350);
        // In order, through both stages.
        let ids: Vec<u64> = std::iter::from_fn(|| q.dequeue(Time::ZERO)).map(|p| p.id).collect();
        assert_eq!(ids, (0..350).collect::<Vec<_>>());
        assert!(q.is_empty());
    }

    #[test]
    fn a_fifo_in_front_of_a_device_fifo_is_one_fifo_of_both_limits() {
        // Random arrivals and services: PfifoFast 250 + device 100 behaves packet for packet as
        // one 350-packet FIFO (what lets the Zhuge reproduction keep a single FIFO); so does a
        // one-packet device FIFO (its own way of passing packets on) behind 349.
        for (qdisc, device) in [(250, 100), (349, 1)] {
            let mut staged = QueueDiscipline::new(&QueueConfig::Device {
                qdisc: Box::new(QueueConfig::DropTail { limit: QueueLimit::Packets(qdisc) }),
                device: DeviceQueueConfig { limit_packets: device },
            });
            let mut single = QueueDiscipline::new(&QueueConfig::DropTail { limit: QueueLimit::Packets(350) });
            let mut rng = lowlat_core::rng::stream(3, "device-test");
            for i in 0..20_000u64 {
                let now = Time(i * 1000);
                if rand::RngCore::next_u64(&mut rng) % 100 < 55 {
                    let (a, b) = (
                        staged.enqueue(now, pkt(i, now), Bitrate::mbps(1)),
                        single.enqueue(now, pkt(i, now), Bitrate::mbps(1)),
                    );
                    assert_eq!(a.is_ok(), b.is_ok(), "arrival {i}");
                } else {
                    assert_eq!(
                        staged.dequeue(now).map(|p| p.id),
                        single.dequeue(now).map(|p| p.id),
                        "service {i}"
                    );
                }
                assert_eq!((staged.len(), staged.bytes()), (single.len(), single.bytes()));
            }
        }
    }

    #[test]
    fn a_one_packet_device_fifo_kept_in_codel_is_the_two_stages() {
        // Random bursts and service gaps, with and without ECN: the one-packet device FIFO that
        // CoDel keeps at its front against CoDel feeding a separate one-packet slot (the
        // stages as the general device queue runs them), packet for packet and state for state.
        for ecn in [false, true] {
            let cfg = CoDelConfig { ecn, ..CoDelConfig::default() };
            let mut kept = codel_behind_config(cfg.clone(), 1);
            let mut codel = CoDel::new(cfg, QueueLimit::Packets(40));
            let mut slot: Option<Packet> = None;
            let mut next = lowlat_core::rng::below(7, "device-codel-test");
            let (mut now, mut id) = (Time::ZERO, 0u64);
            for _ in 0..200_000 {
                for mut p in super::super::random_burst(&mut next, &mut now, &mut id) {
                    let a = kept.enqueue(now, p, Bitrate::mbps(10)).is_ok();
                    let b = if slot.is_none() {
                        codel.pass_idle();
                        p.enqueued_at = now;
                        slot = Some(p);
                        true
                    } else {
                        codel.enqueue(now, p, Bitrate::mbps(10)).is_ok()
                    };
                    assert_eq!(a, b, "arrival {}", p.id);
                }
                let a = kept.dequeue(now);
                let b = slot.take();
                slot = codel.dequeue(now);
                assert_eq!(a.map(|p| (p.id, p.ecn, p.enqueued_at)), b.map(|p| (p.id, p.ecn, p.enqueued_at)));
                let want_len = codel.len() + slot.is_some() as usize;
                let want_bytes = codel.bytes().0 + slot.map_or(0, |p| p.size as u64);
                assert_eq!((kept.len(), kept.bytes().0), (want_len, want_bytes));
                assert_eq!(kept.head().map(|p| p.id), slot.map(|p| p.id));
                assert_eq!((kept.aqm_drops(), kept.ecn_marks()), (codel.drops(), codel.marks()));
                let QueueDiscipline::Device(d) = &kept else { unreachable!() };
                let QueueDiscipline::CoDel(c) = d.qdisc() else { unreachable!() };
                assert_eq!(c.is_dropping(), codel.is_dropping());
                assert_eq!((d.device_len(), c.len()), (slot.is_some() as usize, codel.len()));
            }
            assert!(kept.aqm_drops() + kept.ecn_marks() > 100, "the control law acted");
        }
    }

    #[derive(Debug, Default)]
    struct Watch {
        seen: std::sync::Arc<std::sync::Mutex<Vec<(usize, u64)>>>,
    }

    impl crate::middlebox::Middlebox for Watch {
        fn name(&self) -> &'static str {
            "watch"
        }
        fn on_enqueue(
            &mut self,
            _now: Time,
            _pkt: &mut Packet,
            q: &crate::middlebox::QueueState,
        ) -> crate::middlebox::Verdict {
            self.seen.lock().unwrap().push((q.packets, q.bytes.0));
            crate::middlebox::Verdict::Pass
        }
    }

    #[test]
    fn a_middlebox_sees_both_stages() {
        // Eleven packets at once into CoDel + a 3-packet device FIFO: one goes into
        // transmission, three wait in the device FIFO, seven in the qdisc; at each arrival the
        // middlebox (Zhuge's view) is shown every packet waiting, in both stages.
        let cfg = crate::link::LinkConfig {
            queue: QueueConfig::Device {
                qdisc: Box::new(QueueConfig::CoDel {
                    config: CoDelConfig::default(),
                    limit: QueueLimit::Unlimited,
                }),
                device: DeviceQueueConfig { limit_packets: 3 },
            },
            ..crate::link::LinkConfig::constant(Bitrate::mbps(10), Duration::ZERO)
        };
        let mut link = crate::link::Link::new(&cfg, 1, "l", Duration::from_millis(100));
        let watch = Watch::default();
        let seen = watch.seen.clone();
        link.set_middlebox(Box::new(watch));
        for i in 0..11 {
            link.handle_input(Time::ZERO, pkt(i, Time::ZERO));
        }
        let seen = seen.lock().unwrap();
        let want: Vec<(usize, u64)> =
            (0..11).map(|i: u64| (i.saturating_sub(1) as usize, i.saturating_sub(1) * 1500)).collect();
        assert_eq!(*seen, want);
        let QueueDiscipline::Device(d) = link.queue() else { unreachable!() };
        assert_eq!((d.qdisc().len(), d.device_len()), (7, 3));
    }
}
