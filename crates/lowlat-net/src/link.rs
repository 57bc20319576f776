//! One hop: a queue (with an optional middlebox) in front of a server whose capacity may vary,
//! then random loss, propagation delay and jitter.
//!
//! Driving contract (sans-IO, as quinn-proto's `Connection`):
//! - [`Link::handle_input`] when a packet arrives at the queue;
//! - [`Link::handle_timeout`] when the instant from [`Link::poll_timeout`] is reached;
//! - after either, drain [`Link::poll_output`] (packets that reached the far end by `now`) and
//!   [`Link::poll_inject`] (packets a middlebox originates), then ask `poll_timeout` again.
//!
//! A link keeps at most one packet in service and a FIFO of packets in propagation; because the
//! jitter model never reorders, that FIFO stays sorted by delivery time. Forwarding allocates
//! nothing once the queues have grown to their working size.
//!
//! Fewer wake-ups: a link with no middlebox has nothing to show anyone at the instant a
//! transmission ends (no middlebox hears of it, and the packet only reappears once it has
//! propagated), so it does not ask to be woken then: [`Link::poll_timeout`] names the earliest
//! delivery, and the transmissions that ended meanwhile are completed in order, at their own
//! finish times, by the next call (arrival, timeout or [`Link::settle`]). A packet's fate on the
//! wire (random loss, then its jittered delivery instant) is drawn when it starts service rather
//! than when it ends: packets leave in the order they start, so each random stream gives the same
//! draws to the same packets, and the delivery instant is known as soon as the finish is. The
//! queue sees the same dequeues at the same instants, so every result is the same; only the
//! driver's event count drops (one event per packet per hop instead of two). Read
//! [`Link::stats`] after [`Link::settle`] to see the transmissions that ended before `now`.
//!
//! Handing on ahead ([`Link::set_eager`]): a drop-tail link with no middlebox knows a packet's
//! whole fate when it admits it (it leaves when the packets before it have, through the same
//! server calls and random draws in the same order), so it can work that out at once and put the
//! packet among those in propagation. A driver whose next hop is fed by this link alone can then
//! take each packet at its arrival instant ([`Link::poll_output_until`]) without waking the link,
//! or have it straight back with its arrival instant when nothing is before it in propagation
//! ([`Link::pass`]). A link whose middlebox hears of transmissions ahead
//! ([`Middlebox::hears_transmissions_ahead`]) may be eager too: the middlebox is told of each
//! transmission's end at the packet's admission.

use crate::capacity::{Capacity, Server};
use crate::fifo::Fifo;
use crate::histogram::NsHistogram;
use crate::jitter::NoReorderJitter;
use crate::loss::LossModel;
use crate::middlebox::{BuiltFeedback, Direction, Middlebox, QueueState, Verdict};
use crate::queue::{QueueConfig, QueueDiscipline};
use lowlat_core::rng::{stream, Rng};
use lowlat_core::{Bitrate, Duration, Packet, Time};
use std::collections::VecDeque;

/// What a link is made of. Pure data.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkConfig {
    /// Service capacity over time.
    pub capacity: Capacity,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Standard deviation of the no-reordering jitter (zero: none).
    pub jitter: Duration,
    /// Random loss after transmission.
    pub loss: LossModel,
    /// The queue discipline at the head of the link.
    pub queue: QueueConfig,
}

impl LinkConfig {
    /// A constant-rate link with a drop-tail queue of 300 ms and no loss or jitter.
    pub fn constant(rate: Bitrate, delay: Duration) -> LinkConfig {
        LinkConfig {
            capacity: Capacity::Constant(rate),
            delay,
            jitter: Duration::ZERO,
            loss: LossModel::None,
            queue: QueueConfig::default(),
        }
    }
}

/// Per-bin counters of a link (bins of [`LinkStats::bin`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkBin {
    /// Bytes whose transmission finished in the bin.
    pub tx_bytes: u64,
    /// Sum of the sojourn times of packets dequeued in the bin, ns.
    pub sojourn_sum_ns: u64,
    /// Packets dequeued in the bin.
    pub dequeued: u64,
    /// Longest sojourn of a packet dequeued in the bin, ns.
    pub sojourn_max_ns: u64,
    /// Packets dropped in the bin (tail, AQM, random loss, middlebox).
    pub drops: u64,
}

/// What a link measured. Updated as packets pass; read by the driver at the end.
#[derive(Clone, Debug)]
pub struct LinkStats {
    /// Width of the time bins.
    pub bin: Duration,
    /// Packets that finished transmission.
    pub tx_packets: u64,
    /// Packets dropped at the tail of a full queue.
    pub tail_drops: u64,
    /// Packets dropped by random loss on the wire.
    pub random_losses: u64,
    /// Packets dropped by the middlebox.
    pub middlebox_drops: u64,
    /// Sojourn time (queueing delay, excluding the packet's own transmission) of the packets
    /// that waited, ns; with `zero_sojourns`, every packet's ([`LinkStats::sojourn`]).
    sojourn: NsHistogram,
    /// Packets served the instant they arrived (a sojourn of zero), counted apart: most packets
    /// of an uncongested hop, one increment each instead of a histogram sample.
    zero_sojourns: u64,
    /// Exact sum of sojourn times, ns (for an exact mean).
    pub sojourn_sum_ns: u128,
    /// Exact largest sojourn time, ns.
    pub sojourn_max_ns: u64,
    /// The largest queue ever held, bytes.
    pub max_queue_bytes: u64,
    /// Counters per time bin ([`LinkStats::bin`]), but the current bin's, counted in `current`.
    bins: Vec<LinkBin>,
    /// The counters of the bin `cursor` remembers: counted here, without a look-up into `bins`
    /// per packet per hop, and put in `bins` when another bin is counted.
    current: LinkBin,
    /// Whether `current` holds a bin's counters (not before the first count).
    counting: bool,
    cursor: crate::histogram::BinCursor,
    /// Counts sojourns and transmissions per packet ([`Link::set_recording`]).
    recording: bool,
}

impl LinkStats {
    fn new(bin: Duration) -> LinkStats {
        LinkStats {
            bin,
            tx_packets: 0,
            tail_drops: 0,
            random_losses: 0,
            middlebox_drops: 0,
            // 3 significant digits (0.1 % quantile precision), sized by what it holds.
            sojourn: NsHistogram::new(),
            zero_sojourns: 0,
            sojourn_sum_ns: 0,
            sojourn_max_ns: 0,
            max_queue_bytes: 0,
            bins: Vec::new(),
            current: LinkBin::default(),
            counting: false,
            cursor: crate::histogram::BinCursor::new(bin),
            recording: true,
        }
    }

    /// The counters of the bin holding `t`. Asked about twice a packet per hop: inlined, with
    /// the change of bin (once per bin, mostly) apart.
    #[inline(always)]
    fn bin_at(&mut self, t: Time) -> &mut LinkBin {
        if !self.cursor.holds(t) {
            self.count_bin_of(t);
        }
        &mut self.current
    }

    /// Puts the current bin's counters in `bins` and takes those of the bin holding `t` out.
    #[cold]
    #[inline(never)]
    fn count_bin_of(&mut self, t: Time) {
        if self.counting {
            let i = self.cursor.last_index();
            if i >= self.bins.len() {
                self.bins.resize(i + 1, LinkBin::default());
            }
            self.bins[i] = self.current;
        }
        let i = self.cursor.index(t);
        self.current = self.bins.get(i).copied().unwrap_or_default();
        self.counting = true;
    }

    /// Bytes that finished transmission: the bins' sum (counted there only, once per packet).
    pub fn tx_bytes(&self) -> u64 {
        let bins = self.bins.len().max(if self.counting { self.cursor.last_index() + 1 } else { 0 });
        (0..bins).map(|i| self.bin(i).tx_bytes).sum()
    }

    /// The counters of bin `i` (all zero for a bin nothing was counted in).
    pub fn bin(&self, i: usize) -> LinkBin {
        if self.counting && i == self.cursor.last_index() {
            return self.current;
        }
        self.bins.get(i).copied().unwrap_or_default()
    }

    /// Packets sent by the queue's AQM are added by the link from the queue's counter.
    #[inline(always)]
    fn record_sojourn(&mut self, now: Time, sojourn: Duration) {
        if !self.recording {
            return;
        }
        let ns = sojourn.as_nanos();
        self.sojourn.record(ns);
        self.sojourn_max_ns = self.sojourn_max_ns.max(ns);
        self.sojourn_sum_ns += ns as u128;
        let b = self.bin_at(now);
        b.sojourn_sum_ns += ns;
        b.dequeued += 1;
        b.sojourn_max_ns = b.sojourn_max_ns.max(ns);
    }

    /// Counts a transmission that ended (sent, and lost on the wire if its fate says so).
    #[inline(always)]
    fn record_completed(&mut self, size: u32, finish: Time, lost: bool) {
        if !self.recording {
            self.random_losses += u64::from(lost);
            return;
        }
        self.tx_packets += 1;
        let bin = self.bin_at(finish);
        bin.tx_bytes += size as u64;
        if lost {
            bin.drops += 1;
            self.random_losses += 1;
        }
    }

    /// [`LinkStats::record_sojourn`] of a packet served the instant it arrived: what a zero adds
    /// (a sample and a dequeue; sums and maxima stay as they are).
    #[inline]
    fn record_no_sojourn(&mut self, now: Time) {
        if !self.recording {
            return;
        }
        self.zero_sojourns += 1;
        self.bin_at(now).dequeued += 1;
    }

    /// Packets dequeued (sojourn samples).
    pub fn dequeued(&self) -> u64 {
        self.sojourn.len() + self.zero_sojourns
    }

    /// The sojourn time of every packet dequeued, ns (built on the spot): the histogram its
    /// samples give (in any order: the same counts per bucket, minimum and maximum).
    pub fn sojourn(&self) -> hdrhistogram::Histogram<u64> {
        let mut h = self.sojourn.histogram().into_owned();
        if self.zero_sojourns > 0 {
            h.record_n(0, self.zero_sojourns).expect("zero is within every histogram's range");
        }
        h
    }
}

/// The transmission in progress. Its packet is kept apart ([`Link::serving`]), and only when
/// something still needs it at the end (a middlebox to tell): other packets are among those in
/// propagation from the start of their service (or their admission, on an eager link), and this
/// record is written per packet per hop.
#[derive(Clone, Copy, Debug)]
struct InService {
    /// Its size, bytes.
    size: u32,
    started: Time,
    finish: Time,
    /// When it reaches the far end; `None` if random loss takes it (drawn at the start of
    /// service, see the module docs).
    delivery: Option<Time>,
    /// Already among the packets in propagation (unless lost): completing it only counts it. An
    /// eager link's ([`Link::set_eager`]) since its admission, with the fates of those queued
    /// behind it; another link's without a middlebox since its start of service.
    handed: bool,
}

/// The queue's state as a middlebox sees it (a free function so it can borrow the fields it reads
/// while the middlebox is borrowed mutably). Always inlined: it is built per packet where a
/// middlebox looks, and a call costs as much as what it reads.
/// `full`: with the rate and the packet count (else zero: see
/// [`Middlebox::reads_queue_rate_and_packets`]).
#[inline(always)]
fn state_of(
    full: bool,
    queue: &QueueDiscipline,
    server: &mut Server,
    in_service: Option<&InService>,
    now: Time,
) -> QueueState {
    QueueState {
        bytes: queue.bytes(),
        packets: if full { queue.len() } else { 0 },
        rate: if full { server.rate_at_mut(now) } else { Bitrate::ZERO },
        busy: in_service.is_some(),
        head_since: in_service.map(|s| s.started),
    }
}

/// A link: queue, server, loss, delay, jitter, and an optional middlebox at the queue.
#[derive(Debug)]
pub struct Link {
    server: Server,
    queue: QueueDiscipline,
    delay: Duration,
    jitter: Option<NoReorderJitter>,
    loss: LossModel,
    loss_rng: Rng,
    in_service: Option<InService>,
    /// The packet in service, when it has not been handed on or a middlebox hears of its end.
    serving: Packet,
    in_flight: Fifo<(Time, Packet)>,
    middlebox: Option<Box<dyn Middlebox>>,
    aqm_drops_seen: u64,
    stats: LinkStats,
    /// Completes transmissions lazily (see the module docs): no middlebox, or one that hears of
    /// transmissions late.
    lazy_completion: bool,
    /// The middlebox acts on dequeues ([`Middlebox::hears_dequeues`]).
    tell_dequeues: bool,
    /// The middlebox's `on_enqueue` and `on_drop` may do something: not one that hears of
    /// transmissions ahead ([`Middlebox::hears_transmissions_ahead`]: they do nothing), which is
    /// then not asked (nor its queue's state built) per packet.
    tell_arrivals: bool,
    /// The middlebox reads the queue's rate and packet count
    /// ([`Middlebox::reads_queue_rate_and_packets`]): its calls' queue state has them.
    full_state: bool,
    /// Works out each packet's fate when it is admitted ([`Link::set_eager`]).
    eager: bool,
    /// The driver takes each packet in propagation as soon as it is there
    /// ([`Link::set_drained_ahead`]).
    drained_ahead: bool,
    /// Eager: `(finish, delivery)` of each queued packet, in queue order (worked out on
    /// admission, used when it starts service).
    fates: VecDeque<(Time, Option<Time>)>,
    /// The middlebox said it had no feedback by this instant ([`Link::poll_feedback_at`]) and no
    /// hook has been called since (but those that change none of it, see
    /// [`Link::feedback_none_by`]).
    feedback_none_until: Option<Time>,
}

impl Link {
    /// A link built from `config`; its random streams are `"{name}.loss"` and `"{name}.jitter"`
    /// of the scenario `seed`. Statistics are binned by `bin`.
    pub fn new(config: &LinkConfig, seed: u64, name: &str, bin: Duration) -> Link {
        let jitter = (config.jitter > Duration::ZERO)
            .then(|| NoReorderJitter::new(config.jitter, stream(seed, &format!("{name}.jitter"))));
        Link {
            server: Server::new(config.capacity.clone(), stream(seed, &format!("{name}.channel"))),
            queue: QueueDiscipline::new(&config.queue),
            delay: config.delay,
            jitter,
            loss: config.loss.clone(),
            loss_rng: stream(seed, &format!("{name}.loss")),
            in_service: None,
            serving: Packet::new(0, lowlat_core::FlowId(0), lowlat_core::Bytes(0), 0, Time::ZERO),
            in_flight: Fifo::new(),
            middlebox: None,
            aqm_drops_seen: 0,
            stats: LinkStats::new(bin),
            lazy_completion: true,
            tell_dequeues: false,
            tell_arrivals: false,
            full_state: true,
            eager: false,
            drained_ahead: false,
            fates: VecDeque::new(),
            feedback_none_until: None,
        }
    }

    /// Puts a middlebox at this link's queue.
    pub fn set_middlebox(&mut self, middlebox: Box<dyn Middlebox>) {
        // A middlebox that must hear of each transmission's end when it happens makes the link
        // complete transmissions eagerly (one wake-up per packet more); one that may hear of it
        // at its next call (Middlebox::hears_transmissions_late: Zhuge) keeps the lazy path.
        self.lazy_completion = middlebox.hears_transmissions_late();
        self.tell_dequeues = middlebox.hears_dequeues();
        self.tell_arrivals = !middlebox.hears_transmissions_ahead();
        self.full_state = middlebox.reads_queue_rate_and_packets();
        self.eager = false;
        self.feedback_none_until = None;
        self.middlebox = Some(middlebox);
    }

    /// Asks the link to work out each packet's fate (finish, loss, delivery) when it admits it
    /// and to put it among the packets in propagation at once, for a driver that hands them on
    /// ahead of its clock ([`Link::poll_output_until`]). Only a drop-tail link without a
    /// middlebox, or with one that hears of transmissions ahead
    /// ([`Middlebox::hears_transmissions_ahead`]: it is told of each at the admission), can
    /// (nothing decides a packet's fate after its admission); returns whether this one does.
    /// Call before the first packet arrives.
    pub fn set_eager(&mut self, on: bool) -> bool {
        self.eager = on && self.can_be_eager();
        self.eager
    }

    /// Says that the driver takes every packet in propagation as soon as it is there (with
    /// [`Link::poll_output_until`], after each call that may add one), ahead of its clock: the
    /// packet in service is then no longer among them to ask for the wake-up that starts the
    /// next one, so [`Link::poll_timeout`] asks for it itself while packets wait in the queue
    /// (at the served packet's delivery, as a lazily completing link does: anything reaching
    /// the link before then completes it first).
    pub fn set_drained_ahead(&mut self, on: bool) {
        self.drained_ahead = on;
    }

    /// Whether [`Link::set_eager`] would take: a drop-tail queue and no middlebox (or one that
    /// hears of transmissions ahead).
    pub fn can_be_eager(&self) -> bool {
        self.middlebox.as_ref().is_none_or(|m| m.hears_transmissions_ahead())
            && matches!(self.queue, QueueDiscipline::DropTail(_))
    }

    /// Tells a middlebox that hears of transmissions ahead of the one whose fate was just worked
    /// out (an eager link's admission), unless it never ends.
    #[inline(always)]
    fn tell_ahead(&mut self, now: Time, pkt: &Packet, finish: Time) {
        // Looked at first: most eager links have no middlebox.
        let Some(mb) = self.middlebox.as_mut() else { return };
        if finish != Time::MAX {
            let state =
                state_of(self.full_state, &self.queue, &mut self.server, self.in_service.as_ref(), now);
            mb.on_transmitted(finish, pkt, &state);
            self.feedback_none_until = None;
        }
    }

    /// A packet's finish and delivery (`None`: lost) if it starts service at `t`: the server's
    /// answer and the random draws, each taken once per packet in service order.
    #[inline(always)]
    fn fate(&mut self, t: Time, pkt: &Packet) -> (Time, Option<Time>) {
        // A capacity that never comes back holds the packet for ever (finish = MAX): it never
        // completes, so nothing is drawn for it (nor for anything after it).
        let finish = self.server.finish_time(t, pkt.bytes()).unwrap_or(Time::MAX);
        let delivery = if finish == Time::MAX || self.loss.is_lost(&mut self.loss_rng) {
            None
        } else {
            Some(match self.jitter.as_mut() {
                Some(j) => j.delivery_time(finish, self.delay, finish - t),
                None => Time(finish.as_nanos().saturating_add(self.delay.as_nanos())),
            })
        };
        (finish, delivery)
    }

    /// The middlebox at this link's queue, if any.
    pub fn middlebox(&self) -> Option<&dyn Middlebox> {
        self.middlebox.as_deref()
    }

    /// What the link measured so far.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Whether the link counts each packet's sojourn and transmission in its [`LinkStats`]
    /// (default: yes). A run that reads none of them (the links' summary lines and series) turns
    /// it off before the first packet: those counts, a few per packet per hop, were about 4 % of
    /// a fast single-flow run. Drops, the largest queue and the queue's own counters are counted
    /// either way; sojourns, transmitted packets and bytes and the bins stay empty.
    pub fn set_recording(&mut self, on: bool) {
        self.stats.recording = on;
    }

    /// See [`Link::set_recording`].
    pub fn is_recording(&self) -> bool {
        self.stats.recording
    }

    /// The capacity description.
    pub fn capacity(&self) -> &Capacity {
        self.server.capacity()
    }

    /// Serves `capacity` from now on, the same as the link's until `from` (see
    /// [`Server::reschedule`], which says when it is refused).
    pub fn reschedule(&mut self, capacity: Capacity, from: Time) -> Result<(), String> {
        self.server.reschedule(capacity, from)
    }

    /// The propagation delay.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The queue (read-only).
    pub fn queue(&self) -> &QueueDiscipline {
        &self.queue
    }

    /// The queue's state as a middlebox sees it.
    pub fn queue_state(&self, now: Time) -> QueueState {
        QueueState {
            bytes: self.queue.bytes(),
            packets: self.queue.len(),
            rate: self.server.rate_at(now),
            busy: self.in_service.is_some(),
            head_since: self.in_service.as_ref().map(|s| s.started),
        }
    }

    /// Whether [`Link::poll_timeout`] of a link without a middlebox names the first delivery in
    /// propagation, and there is one (the transmission in service asks for nothing): what only
    /// adds to the back of the packets in propagation, or to the queue, then leaves it as it is.
    #[inline(always)]
    fn asks_first_delivery(&self) -> bool {
        !self.in_flight.is_empty()
            && self.in_service.as_ref().is_none_or(|s| s.handed && (self.eager || s.delivery.is_some()))
    }

    /// A packet arrives at the queue at `now`.
    #[inline]
    pub fn handle_input(&mut self, now: Time, pkt: Packet) {
        self.input(now, pkt);
    }

    /// [`Link::handle_input`], returning whether [`Link::poll_timeout`] may have changed
    /// (`false`: it surely says what it said before the call), for a driver that can then skip
    /// asking.
    #[inline]
    pub fn input(&mut self, now: Time, mut pkt: Packet) -> bool {
        if self.middlebox.is_none() {
            // (Completions only add to the back of the packets in propagation, as does an
            // arrival: none takes the first one out.)
            let settled = self.asks_first_delivery();
            self.advance_plain(now);
            // (A drop-tail queue, most links', asked first: one comparison.)
            if self.in_service.is_none() && (self.queue.is_idle_droptail() || self.queue.pass_if_empty()) {
                // Idle, and nothing to tell: served at once, as `enqueue` and `serve` would
                // (inline, without their calls and copies of the packet; most packets of a hop
                // that is not congested, such as the last one before an endpoint). The queue
                // has done what the packet's trip through it does.
                pkt.enqueued_at = now;
                let Some(d) = self.serve_idle(now, &pkt) else { return true };
                self.in_flight.push_back((d, pkt));
                // Delivered behind the packets already in propagation (the one now in service
                // asks for nothing): the same first delivery as before, if there was one.
                return !settled;
            }
            if self.in_service.is_some() && !self.eager {
                // Queued behind the transmission in service (most packets of a busy hop), or
                // dropped at the tail, inline: what `enqueue` does then, and nothing the link
                // asks for moves.
                let rate = self.server.rate_at_mut(now);
                if self.queue.enqueue_inline(now, pkt, rate).is_err() {
                    self.stats.tail_drops += 1;
                    self.stats.bin_at(now).drops += 1;
                } else {
                    self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queue.bytes().0);
                }
                return !settled;
            }
            self.enqueue(now, pkt);
            return true;
        }
        self.advance(now);
        let tell = self.tell_arrivals;
        if !tell && self.eager {
            self.input_told_ahead(now, pkt);
            return true;
        }
        if let Some(mb) = self.middlebox.as_mut().filter(|_| tell) {
            // Only built when a middlebox looks: this runs per packet.
            let state =
                state_of(self.full_state, &self.queue, &mut self.server, self.in_service.as_ref(), now);
            self.feedback_none_until = None;
            match mb.on_enqueue(now, &mut pkt, &state) {
                Verdict::Pass => {}
                Verdict::Drop => {
                    self.stats.middlebox_drops += 1;
                    self.stats.bin_at(now).drops += 1;
                    return true;
                }
                Verdict::Consume => return true,
            }
        }
        if self.in_service.is_none() && self.queue.pass_if_empty() {
            self.serve_passed(now, pkt);
            return true;
        }
        self.enqueue(now, pkt);
        true
    }

    /// A packet reaching an idle link with a middlebox, whose queue has done what its trip
    /// through it does ([`QueueDiscipline::pass_if_empty`]): served at once, as `enqueue` then
    /// `serve` would, without that trip. (Apart, as `enqueue` is: inlined, `serve` made the
    /// driver's per-hop code, where `input` is inlined, bigger for every packet.)
    #[inline(never)]
    fn serve_passed(&mut self, now: Time, mut pkt: Packet) {
        pkt.enqueued_at = now;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(pkt.size as u64);
        self.serve(now, pkt);
    }

    /// [`Link::input`] of an eager link whose middlebox hears of transmissions ahead (so is not
    /// told of arrivals), its completions done: what `enqueue` (then `serve`, on an idle link)
    /// does, inline (once per packet at such a site), without the trip through the queue of a
    /// packet reaching an idle link. (Apart, as `enqueue` is: inlined, it made the driver's
    /// per-hop code, where `input` is inlined, too big to inline it.)
    #[inline(never)]
    fn input_told_ahead(&mut self, now: Time, mut pkt: Packet) {
        let Some(s) = self.in_service.as_ref() else {
            if !self.queue.is_idle_droptail() {
                // Not reached (a queue holds packets only behind one in service): the general way.
                return self.enqueue(now, pkt);
            }
            // Idle: served at once with a sojourn of zero, its fate worked out now, as `enqueue`
            // then `serve` do (the drop-tail queue held it for an instant, changing nothing).
            pkt.enqueued_at = now;
            self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(pkt.size as u64);
            self.stats.record_no_sojourn(now);
            let (finish, delivery) = self.fate(now, &pkt);
            if let Some(d) = delivery {
                self.in_flight.push_back((d, pkt));
            }
            self.in_service =
                Some(InService { size: pkt.size, started: now, finish, delivery, handed: true });
            if let Some(mb) = self.middlebox.as_mut() {
                self.feedback_none_until = None;
                let state =
                    state_of(self.full_state, &self.queue, &mut self.server, self.in_service.as_ref(), now);
                if self.tell_dequeues {
                    mb.on_dequeue(now, &pkt, &state);
                }
                if finish != Time::MAX {
                    mb.on_transmitted(finish, &pkt, &state);
                }
            }
            return;
        };
        // Busy: queued (or dropped at the tail), its fate worked out now, as `enqueue` does.
        let in_service_finish = s.finish;
        let rate = self.server.rate_at_mut(now);
        if self.queue.enqueue_inline(now, pkt, rate).is_err() {
            self.stats.tail_drops += 1;
            self.stats.bin_at(now).drops += 1;
            return;
        }
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queue.bytes().0);
        let start = self.fates.back().map_or(in_service_finish, |f| f.0).max(now);
        self.admit_eager(now, start, pkt);
    }

    /// A packet a middlebox released towards this link's receivers: queued without being shown to
    /// the middlebox again.
    pub fn inject_forward(&mut self, now: Time, pkt: Packet) {
        self.advance(now);
        self.enqueue(now, pkt);
    }

    /// A reverse-path packet passes this link's site; the middlebox may rewrite, drop or take it.
    pub fn handle_reverse(&mut self, now: Time, pkt: &mut Packet) -> Verdict {
        self.feedback_none_until = None;
        self.handle_reverse_fixed(now, pkt)
    }

    /// [`Link::handle_reverse`] of a packet whose flow has a fixed
    /// [`crate::middlebox::ReverseRule`] (`DropsAll` or `PassesAll`): the verdict changes nothing
    /// the middlebox's other hooks read.
    pub fn handle_reverse_fixed(&mut self, now: Time, pkt: &mut Packet) -> Verdict {
        match self.middlebox.as_mut() {
            Some(mb) => mb.on_reverse(now, pkt),
            None => Verdict::Pass,
        }
    }

    #[inline]
    fn enqueue(&mut self, now: Time, mut pkt: Packet) {
        if self.in_service.is_none() && self.middlebox.is_none() && self.queue.is_idle_droptail() {
            // An idle drop-tail link with nothing queued takes any packet and serves it at once:
            // what enqueue-then-dequeue does (the queue held `size` bytes for an instant; the
            // sojourn is zero), without the trip through the queue. Most packets of an
            // uncongested hop take this path.
            pkt.enqueued_at = now;
            self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(pkt.size as u64);
            self.serve(now, pkt);
            return;
        }
        let rate = self.server.rate_at_mut(now);
        if self.queue.enqueue_inline(now, pkt, rate).is_err() {
            self.stats.tail_drops += 1;
            self.stats.bin_at(now).drops += 1;
            let tell = self.tell_arrivals;
            if let Some(mb) = self.middlebox.as_mut().filter(|_| tell) {
                let state =
                    state_of(self.full_state, &self.queue, &mut self.server, self.in_service.as_ref(), now);
                mb.on_drop(now, &pkt, &state);
                self.feedback_none_until = None;
            }
            return;
        }
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queue.bytes().0);
        if self.in_service.is_none() {
            self.start_next(now);
        } else if self.eager {
            // It starts when the packets before it have left (the one in service, which ends
            // after `now`, then those queued): work its fate out now, as its service will.
            let before = self.fates.back().map(|f| f.0);
            let start = before.or(self.in_service.as_ref().map(|s| s.finish)).map_or(now, |f| f.max(now));
            self.admit_eager(now, start, pkt);
        }
    }

    /// A packet just queued on an eager link, which starts when those before it have left
    /// (`start`): its fate worked out now, as its service will, and the middlebox told of it
    /// ahead.
    #[inline(always)]
    fn admit_eager(&mut self, now: Time, start: Time, mut pkt: Packet) {
        pkt.enqueued_at = now; // as the queue holds it
        let (finish, delivery) = self.fate(start, &pkt);
        self.fates.push_back((finish, delivery));
        if let Some(d) = delivery {
            self.in_flight.push_back((d, pkt));
        }
        self.tell_ahead(now, &pkt, finish);
    }

    /// [`Link::handle_input`] for an eager link ([`Link::set_eager`]) whose output the driver
    /// hands on ahead up to `until`, fused with that hand-off: the packet comes straight back
    /// with its arrival instant at the far end when it is the next thing to get there and does
    /// so by `until` (what [`Link::poll_output_until`] would then return, without the trip
    /// through the packets in propagation). `None`: the link kept it (in propagation beyond
    /// `until` or behind others there, dropped, or lost); drain [`Link::poll_output_until`] as
    /// after `handle_input`.
    #[inline]
    pub fn pass(&mut self, now: Time, pkt: &mut Packet, until: Time) -> Option<Time> {
        debug_assert!(self.eager && self.middlebox.is_none());
        // (An eager link's queue is drop-tail and holds the packets whose fates wait in `fates`,
        // no others: it is empty when they are, which one length says.)
        debug_assert_eq!(self.queue.is_idle_droptail(), self.fates.is_empty());
        if let Some(s) = self.in_service.as_ref() {
            if s.finish <= now && self.fates.is_empty() {
                // The transmission in service has ended and nothing waits behind it (most packets
                // of an uncongested hop): completed, counted, and this packet served at once, as
                // `advance_eager` then the idle case below do, with one look at the queue.
                let s = *s;
                self.stats.record_completed(s.size, s.finish, s.delivery.is_none());
                pkt.enqueued_at = now;
                let delivery = self.serve_idle(now, pkt);
                return self.hand_on(delivery, pkt, until);
            }
            self.advance_eager(now);
        }
        let start = match self.in_service.as_ref() {
            None if self.fates.is_empty() => {
                // Idle: served at once, as `enqueue` does.
                pkt.enqueued_at = now;
                let delivery = self.serve_idle(now, pkt);
                return self.hand_on(delivery, pkt, until);
            }
            // Not reached (a queue holds packets only behind one in service): the general way.
            None => {
                self.enqueue(now, *pkt);
                return None;
            }
            Some(s) => {
                // Busy: queued, its fate worked out now, as `enqueue` does.
                let in_service_finish = s.finish;
                let rate = self.server.rate_at_mut(now);
                if self.queue.enqueue(now, *pkt, rate).is_err() {
                    self.stats.tail_drops += 1;
                    self.stats.bin_at(now).drops += 1;
                    return None;
                }
                self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queue.bytes().0);
                self.fates.back().map_or(in_service_finish, |f| f.0).max(now)
            }
        };
        pkt.enqueued_at = now; // as the queue holds it
        let (finish, delivery) = self.fate(start, pkt);
        self.fates.push_back((finish, delivery));
        self.hand_on(delivery, pkt, until)
    }

    /// What `enqueue` then `serve` do to a packet reaching an idle drop-tail link with no
    /// middlebox at `now` (stamped `enqueued_at = now`), but for putting it among the packets in
    /// propagation: it goes into service at once (a sojourn of zero), its fate worked out, and
    /// counts as handed on. Returns its delivery (`None`: lost).
    #[inline(always)]
    fn serve_idle(&mut self, now: Time, pkt: &Packet) -> Option<Time> {
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(pkt.size as u64);
        self.stats.record_no_sojourn(now);
        let (finish, delivery) = self.fate(now, pkt);
        self.in_service = Some(InService { size: pkt.size, started: now, finish, delivery, handed: true });
        delivery
    }

    /// An eager link's packet, its delivery worked out: handed back (its delivery instant) if
    /// it is the next to reach the far end and does so by `until`, else put among the packets
    /// in propagation.
    #[inline(always)]
    fn hand_on(&mut self, delivery: Option<Time>, pkt: &Packet, until: Time) -> Option<Time> {
        let d = delivery?;
        if d <= until && self.in_flight.is_empty() {
            return Some(d);
        }
        self.in_flight.push_back((d, *pkt));
        None
    }

    /// Takes the next packet from the queue into service at `t`.
    #[inline(always)]
    fn start_next(&mut self, t: Time) {
        if self.queue.is_idle_droptail() {
            // Nothing to take, and an empty drop-tail queue's dequeue changes nothing (no AQM):
            // the common case of an uncongested hop, once per packet.
            self.in_service = None;
            return;
        }
        let next = self.queue.dequeue_inline(t);
        self.take_next(t, next);
    }

    /// [`Link::start_next`] of an eager link (a drop-tail queue): the plain dequeue, whose code
    /// for other queues stays out of the hand-on path.
    #[inline(always)]
    fn start_next_eager(&mut self, t: Time) {
        // (Its queue holds the packets whose fates wait in `fates`: see `pass`.)
        if self.fates.is_empty() {
            self.in_service = None;
            return;
        }
        let next = self.queue.dequeue(t);
        self.take_next(t, next);
    }

    /// [`Link::start_next`] once the queue has given `next`.
    #[inline(always)]
    fn take_next(&mut self, t: Time, next: Option<Packet>) {
        let aqm = self.queue.aqm_drops();
        if aqm > self.aqm_drops_seen {
            self.stats.bin_at(t).drops += aqm - self.aqm_drops_seen;
            self.aqm_drops_seen = aqm;
        }
        let Some(pkt) = next else {
            self.in_service = None;
            return;
        };
        self.serve(t, pkt);
    }

    /// Starts serving `pkt`, just taken from the queue, at `t`.
    #[inline(always)]
    fn serve(&mut self, t: Time, pkt: Packet) {
        self.stats.record_sojourn(t, t - pkt.enqueued_at);
        let mut handed = self.eager;
        // Whether its fate is worked out here, admitted to an empty queue on an eager link: a
        // middlebox that hears of transmissions ahead hears of it now.
        let mut fated_now = false;
        let (finish, delivery) = if !handed {
            let (finish, delivery) = self.fate(t, &pkt);
            if self.middlebox.is_none() {
                // Nothing needs it at its end: among the packets in propagation at once (in
                // order, as packets start in delivery order), and its end only counts it. The
                // driver sees it no earlier: its delivery is at or after its end, which any call
                // by then completes first.
                if let Some(d) = delivery {
                    self.in_flight.push_back((d, pkt));
                }
                handed = true;
            }
            (finish, delivery)
        } else if let Some(fate) = self.fates.pop_front() {
            // Worked out on admission (a queued packet), already in propagation.
            fate
        } else {
            let (finish, delivery) = self.fate(t, &pkt);
            if let Some(d) = delivery {
                self.in_flight.push_back((d, pkt));
            }
            fated_now = true;
            (finish, delivery)
        };
        self.in_service = Some(InService { size: pkt.size, started: t, finish, delivery, handed });
        if !handed {
            // (`handed`: nothing needs the packet again; an eager link's middlebox, if any, heard of
            // its transmission on admission.)
            self.serving = pkt;
        }
        if let Some(mb) = self.middlebox.as_mut() {
            if self.tell_dequeues || fated_now {
                self.feedback_none_until = None;
                let state =
                    state_of(self.full_state, &self.queue, &mut self.server, self.in_service.as_ref(), t);
                if self.tell_dequeues {
                    mb.on_dequeue(t, &pkt, &state);
                }
                if fated_now && finish != Time::MAX {
                    mb.on_transmitted(finish, &pkt, &state);
                }
            }
        }
    }

    /// Completes every transmission due by `now`, starting each next one back to back.
    #[inline(always)]
    fn advance(&mut self, now: Time) {
        if self.middlebox.is_none() {
            return self.advance_plain(now);
        }
        // Most calls complete nothing: answered inline, without the completions' call (whose
        // prologue saves the registers a middlebox call and a next packet's service need).
        if self.in_service.as_ref().is_some_and(|s| s.finish <= now) {
            self.complete_due(now);
        }
    }

    /// [`Link::advance`] of a link without a middlebox: a transmission that ends with nothing
    /// waiting behind it and nothing to tell (an uncongested hop) is completed inline, whatever
    /// the queue (see [`QueueDiscipline::dequeue_idle`]), without the completions' call.
    #[inline(always)]
    fn advance_plain(&mut self, now: Time) {
        let Some(s) = self.in_service.as_ref().filter(|s| s.finish <= now) else { return };
        debug_assert!(self.middlebox.is_none());
        if s.handed && (self.queue.is_idle_droptail() || self.queue.dequeue_idle(s.finish)) {
            let s = *s;
            self.stats.record_completed(s.size, s.finish, s.delivery.is_none());
            self.in_service = None;
            return;
        }
        self.complete_due(now);
    }

    /// [`Link::advance`] once the transmission in service is due.
    #[inline(always)]
    fn complete_due(&mut self, now: Time) {
        // Looked at in place: the record is a packet's size.
        while let Some(s) = self.in_service.as_ref() {
            if s.finish > now {
                break;
            }
            let s = *s;
            if let Some(mb) = self.middlebox.as_mut().filter(|_| !s.handed) {
                // The queue as it is once this packet is out (the next one not yet in service).
                // (A handed packet's middlebox heard of it at its admission.)
                let state = state_of(self.full_state, &self.queue, &mut self.server, None, s.finish);
                mb.on_transmitted(s.finish, &self.serving, &state);
                self.feedback_none_until = None;
            }
            self.stats.record_completed(s.size, s.finish, s.delivery.is_none());
            if let (Some(delivery), false) = (s.delivery, s.handed) {
                self.in_flight.push_back((delivery, self.serving));
            }
            self.start_next(s.finish);
        }
    }

    /// [`Link::advance`] of an eager link ([`Link::pass`]), always inlined: there the previous
    /// packet is nearly always due, and its completion only counts it (it was handed on when it
    /// arrived; no middlebox to tell).
    #[inline(always)]
    fn advance_eager(&mut self, now: Time) {
        while let Some(s) = self.in_service.as_ref() {
            if s.finish > now {
                break;
            }
            let s = *s;
            debug_assert!(s.handed && self.middlebox.is_none());
            self.stats.record_completed(s.size, s.finish, s.delivery.is_none());
            self.start_next_eager(s.finish);
        }
    }

    /// Completes every transmission that ended by `now` (the ones a lazily completing link has
    /// not been woken for): call before reading [`Link::stats`] at the end of a run.
    pub fn settle(&mut self, now: Time) {
        self.advance(now);
    }

    /// The instant `poll_timeout` asked for (or any later one) has come.
    #[inline]
    pub fn handle_timeout(&mut self, now: Time) {
        self.advance(now);
        if let Some(mb) = self.middlebox.as_mut() {
            // Only built when the middlebox is due: this runs per packet.
            if mb.poll_timeout().is_some_and(|t| t <= now) {
                let state =
                    state_of(self.full_state, &self.queue, &mut self.server, self.in_service.as_ref(), now);
                mb.handle_timeout(now, &state);
                self.feedback_none_until = None;
            }
        }
    }

    /// The next packet that has reached the far end by `now`.
    pub fn poll_output(&mut self, now: Time) -> Option<Packet> {
        match self.in_flight.front() {
            Some(&(t, _)) if t <= now => self.in_flight.pop_front().map(|(_, p)| p),
            _ => None,
        }
    }

    /// The next packet that reaches the far end by `until`, with the instant it gets there: how a
    /// driver hands on the output of a link it does not wake (one whose packets only go to parts
    /// that nothing else feeds, so they may be handed on ahead of the driver's clock).
    pub fn poll_output_until(&mut self, until: Time) -> Option<(Time, Packet)> {
        match self.in_flight.front() {
            Some(&(t, _)) if t <= until => self.in_flight.pop_front(),
            _ => None,
        }
    }

    /// A packet the middlebox originates or releases now.
    pub fn poll_inject(&mut self, now: Time) -> Option<(Direction, Packet)> {
        self.feedback_none_until = None;
        self.middlebox.as_mut()?.poll_inject(now)
    }

    /// Feedback the middlebox built for a sender, due now.
    pub fn poll_feedback(&mut self, now: Time) -> Option<BuiltFeedback> {
        self.feedback_none_until = None;
        self.middlebox.as_mut()?.poll_feedback(now)
    }

    /// Feedback the middlebox built that leaves by `until`, with the instant it leaves
    /// ([`Middlebox::poll_feedback_at`]).
    pub fn poll_feedback_at(&mut self, until: Time) -> Option<(Time, BuiltFeedback)> {
        let built = self.middlebox.as_mut()?.poll_feedback_at(until);
        self.feedback_none_until = if built.is_none() { Some(until) } else { None };
        built
    }

    /// Whether the middlebox said it had no feedback by `until` or later when last asked
    /// ([`Link::poll_feedback_at`]), and no hook has been called since but
    /// [`Link::recycle`] and [`Link::handle_reverse_fixed`]. One that hears of transmissions
    /// ahead ([`Middlebox::hears_transmissions_ahead`]) would say none again: a driver need not
    /// ask.
    #[inline]
    pub fn feedback_none_by(&self, until: Time) -> bool {
        self.feedback_none_until.is_some_and(|u| until <= u)
    }

    /// Hands a payload the middlebox built back to it once read ([`Middlebox::recycle`]).
    pub fn recycle(&mut self, payload: crate::middlebox::FeedbackPayload) {
        if let Some(mb) = self.middlebox.as_mut() {
            mb.recycle(payload);
        }
    }

    /// [`Link::poll_timeout`] of a link drained ahead ([`Link::set_drained_ahead`]) for its
    /// packet in service `s`, handed on: with a packet waiting, its start at `s`'s end, seen no
    /// later than `s`'s delivery (a lazily completing link: no middlebox). An eager link's
    /// queued packets are in propagation already. (Apart: inlined, it made `poll_timeout`, which
    /// runs per packet per hop, too big to inline.)
    #[inline(never)]
    fn next_start_drained(&self, s: &InService) -> Option<Time> {
        if !self.eager && !self.queue.is_empty() {
            s.delivery
        } else {
            None
        }
    }

    /// When the link next needs `handle_timeout`.
    pub fn poll_timeout(&self) -> Option<Time> {
        // Written out by hand: this runs once or twice per packet per hop.
        let mut next = match self.in_service.as_ref() {
            // Among the packets in propagation already (on an eager link, as is every packet
            // queued behind it, and heard of by any middlebox). A lost one of a link that is not
            // eager goes on below: the next one starts at its end.
            Some(s) if s.handed && (self.eager || s.delivery.is_some()) => {
                if self.drained_ahead {
                    self.next_start_drained(s)
                } else {
                    None
                }
            }
            Some(s) if s.finish != Time::MAX && self.lazy_completion => match s.delivery {
                // Its delivery, the first thing anyone sees of it (and of the ones after it).
                Some(d) => Some(d),
                // Lost on the wire: nothing to show; the next one starts at its end.
                None => Some(s.finish),
            },
            Some(s) if s.finish != Time::MAX => Some(s.finish),
            _ => None,
        };
        if let Some(&(t, _)) = self.in_flight.front() {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        if let Some(t) = self.middlebox.as_ref().and_then(|m| m.poll_timeout()) {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        next
    }

    /// Packets in the queue, in service and in propagation.
    pub fn packets_inside(&self) -> usize {
        // (A handed packet in service is among those in propagation already.)
        let serving = self.in_service.is_some_and(|s| !s.handed || s.delivery.is_none());
        self.queue.len() + serving as usize + self.in_flight.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueueLimit;
    use lowlat_core::{Bytes, FlowId};

    fn pkt(i: u64) -> Packet {
        Packet::new(i, FlowId(0), Bytes(1250), i, Time::ZERO)
    }

    /// Drives a link until it is idle, returning each packet with its delivery time.
    fn drain(link: &mut Link) -> Vec<(Time, Packet)> {
        let mut out = Vec::new();
        while let Some(t) = link.poll_timeout() {
            link.handle_timeout(t);
            while let Some(p) = link.poll_output(t) {
                out.push((t, p));
            }
        }
        out
    }

    #[test]
    fn serialises_back_to_back_then_adds_propagation() {
        // 1250 B at 10 Mbit/s = 1 ms; 5 ms propagation.
        let mut link = Link::new(
            &LinkConfig::constant(Bitrate::mbps(10), Duration::from_millis(5)),
            1,
            "l",
            Duration::from_millis(200),
        );
        for i in 0..3 {
            link.handle_input(Time::ZERO, pkt(i));
        }
        let out = drain(&mut link);
        let times: Vec<_> = out.iter().map(|(t, _)| *t).collect();
        assert_eq!(times, vec![Time::from_millis(6), Time::from_millis(7), Time::from_millis(8)]);
        // Sojourn: 0, 1 and 2 ms.
        assert_eq!(link.stats().sojourn_sum_ns, 3_000_000);
        assert_eq!(link.stats().sojourn_max_ns, 2_000_000);
    }

    #[test]
    fn a_link_not_recording_delivers_the_same_and_counts_no_sojourn_nor_transmission() {
        let config = LinkConfig::constant(Bitrate::mbps(10), Duration::from_millis(5));
        let run = |recording: bool| {
            let mut link = Link::new(&config, 1, "l", Duration::from_millis(200));
            link.set_recording(recording);
            for i in 0..3 {
                link.handle_input(Time::ZERO, pkt(i));
            }
            let out: Vec<_> = drain(&mut link).into_iter().map(|(t, p)| (t, p.seq)).collect();
            link.settle(Time::from_millis(100));
            let s = link.stats();
            (out, s.tx_packets, s.dequeued(), s.sojourn_sum_ns, s.tx_bytes(), s.bin(0).dequeued)
        };
        let (on, off) = (run(true), run(false));
        assert_eq!(on.0, off.0, "the same deliveries");
        assert_eq!((on.1, on.2, on.3, on.4, on.5), (3, 3, 3_000_000, 3750, 3));
        assert_eq!((off.1, off.2, off.3, off.4, off.5), (0, 0, 0, 0, 0));
    }

    #[derive(Debug, Default)]
    struct DropOddSeq {
        seen_dequeues: u32,
    }

    impl Middlebox for DropOddSeq {
        fn name(&self) -> &'static str {
            "drop-odd"
        }
        fn on_enqueue(&mut self, _now: Time, pkt: &mut Packet, _q: &QueueState) -> Verdict {
            pkt.ecn = 3; // rewriting in place is allowed
            if pkt.seq % 2 == 1 {
                Verdict::Drop
            } else {
                Verdict::Pass
            }
        }
        fn on_dequeue(&mut self, _now: Time, _pkt: &Packet, q: &QueueState) {
            assert!(q.busy);
            self.seen_dequeues += 1;
        }
    }

    #[test]
    fn a_middlebox_sees_enqueues_and_dequeues_and_may_rewrite_or_drop() {
        let mut link = Link::new(
            &LinkConfig::constant(Bitrate::mbps(10), Duration::ZERO),
            1,
            "l",
            Duration::from_millis(200),
        );
        link.set_middlebox(Box::new(DropOddSeq::default()));
        for i in 0..10 {
            link.handle_input(Time::ZERO, pkt(i));
        }
        let out = drain(&mut link);
        assert_eq!(out.len(), 5);
        assert!(out.iter().all(|(_, p)| p.seq % 2 == 0 && p.ecn == 3));
        assert_eq!(link.stats().middlebox_drops, 5);
        assert_eq!(link.middlebox().unwrap().name(), "drop-odd");
    }

    /// Records each transmission it hears of (finish, packet id); hears of them ahead if asked.
    #[derive(Debug, Default)]
    struct Heard {
        ahead: bool,
        heard: Vec<(Time, u64)>,
    }

    impl Middlebox for Heard {
        fn name(&self) -> &'static str {
            "heard"
        }
        fn on_transmitted(&mut self, now: Time, pkt: &Packet, _q: &QueueState) {
            self.heard.push((now, pkt.id));
        }
        fn hears_transmissions_ahead(&self) -> bool {
            self.ahead
        }
        fn as_any(&self) -> Option<&dyn std::any::Any> {
            Some(self)
        }
    }

    #[test]
    fn a_middlebox_that_hears_transmissions_ahead_hears_the_same_ones_at_admission() {
        let cfg = LinkConfig {
            jitter: Duration::from_micros(300),
            loss: crate::loss::LossModel::Bernoulli { p: 0.05 },
            queue: QueueConfig::DropTail { limit: QueueLimit::Packets(8) },
            ..LinkConfig::constant(Bitrate::mbps(10), Duration::from_millis(5))
        };
        let mut next = lowlat_core::rng::below(3, "hears-ahead-test");
        let mut arrivals = Vec::new();
        let mut t = Time::ZERO;
        for i in 0..3_000 {
            // Bursts that overflow the queue, and gaps that let it drain.
            t += Duration::from_micros(if next(10) == 0 { 20_000 } else { next(1_500) });
            arrivals.push((t, pkt(i)));
        }
        let run = |ahead: bool| {
            let mut link = Link::new(&cfg, 1, "l", Duration::from_millis(200));
            link.set_middlebox(Box::new(Heard { ahead, heard: Vec::new() }));
            assert_eq!(link.set_eager(ahead), ahead);
            let mut out = Vec::new();
            for &(t, p) in &arrivals {
                while let Some(w) = link.poll_timeout().filter(|&w| w <= t) {
                    link.handle_timeout(w);
                    while let Some(p) = link.poll_output(w) {
                        out.push((w, p.id));
                    }
                }
                link.handle_input(t, p);
                while let Some(p) = link.poll_output(t) {
                    out.push((t, p.id));
                }
            }
            out.extend(drain(&mut link).into_iter().map(|(t, p)| (t, p.id)));
            let heard = link.middlebox().and_then(|m| m.as_any()).and_then(|a| a.downcast_ref::<Heard>());
            (
                out,
                heard.expect("the recorder").heard.clone(),
                link.stats().tx_packets,
                link.stats().tail_drops,
            )
        };
        let (at_end, ahead) = (run(false), run(true));
        assert!(at_end.3 > 0 && at_end.1.len() > 2_000, "drops {} heard {}", at_end.3, at_end.1.len());
        assert_eq!(ahead.0, at_end.0, "the same deliveries at the same instants");
        assert_eq!(ahead.1, at_end.1, "the same transmissions heard of, with their finish");
        assert_eq!((ahead.2, ahead.3), (at_end.2, at_end.3));
    }

    #[test]
    fn a_time_limited_queue_follows_the_current_rate() {
        let cfg = LinkConfig {
            queue: QueueConfig::DropTail { limit: QueueLimit::Time(Duration::from_millis(10)) },
            ..LinkConfig::constant(Bitrate::mbps(10), Duration::ZERO)
        };
        let mut link = Link::new(&cfg, 1, "l", Duration::from_millis(200));
        // 10 ms at 10 Mbit/s = 12 500 B = 10 packets queued, plus the one in service.
        for i in 0..20 {
            link.handle_input(Time::ZERO, pkt(i));
        }
        assert_eq!(link.queue().len(), 10);
        assert_eq!(link.stats().tail_drops, 9);
    }
}
