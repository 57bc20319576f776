//! The event queue: an indexed binary heap of `(time, sequence)` keys, one entry per component.
//!
//! Events are totally ordered: by time, then by the order they were scheduled (a global sequence
//! number), so two runs of the same scenario process the same events in the same order. Each
//! component (link or endpoint) has at most one pending wake-up; rescheduling it moves its entry
//! in place (decrease/increase-key through a position index) instead of leaving a superseded
//! entry behind. The heap therefore never holds more entries than there are components (a dozen
//! on a dumbbell), where a lazy-deletion heap grew to thousands of stale entries whenever a
//! sender re-armed a far-off timer on every ACK (the retransmission timer), and its pops
//! dominated the profile. Nothing here allocates after [`Wakeups::new`].
//!
//! Two things keep it cheap per event. The keys live in the heap array itself, so a sift compares
//! neighbouring entries instead of looking each one up by its slot. And the entry just popped
//! stays at the root until the component it woke is rescheduled: nearly every event ends with its
//! own component asking for its next wake-up, which then costs one sift down from the root
//! instead of a removal (a sift down) and an insertion (a sift up). While it waits there its key
//! is the smallest in the heap (every key scheduled meanwhile is at least as late and has a larger
//! sequence number), so it stays at the root; a wake-up asked for before it (which the driver
//! never does) first takes it out, as does the next pop. Taking the root out moves the last entry
//! (one of the latest) there, which sinks to the bottom: its hole walks down along the smaller
//! children first and the entry climbs back from the bottom (one comparison per level instead of
//! two). The rescheduled root itself often stays near the top, so it sinks the usual way, in
//! code inlined into the reschedule (no call per event).
//!
//! A few components (a single flow's dumbbell: four links and two endpoints) skip the heap: each
//! slot keeps its key packed as `time << 64 | seq << 3 | index` (one 128-bit comparison), a
//! reschedule is a store, and a pop takes the smallest key (a tree of minima of four, six or
//! eight keys, where a loop over them cost twice as much). Up to [`LINEAR_MAX`] slots the scan
//! costs less than the heap's sifts (its reschedule after nearly every event sinks the root
//! through every level); both pop the same entries in the same order, as the keys are unique.
//! The scan covers only the slots that have ever asked for a wake-up, packed in the order they
//! first did: links that hand everything on (and a passive receiver) never ask, so an open-loop
//! dumbbell scans its source alone. The order of the scan does not matter (unique keys).
//!
//! Tried in session 6 and not kept (instructions on RMCAT 5.5, summary only): a 4-ary heap
//! (+3.6 %: more comparisons per level cost more than the levels saved), a winner tree (+7 %: the
//! rescheduled component is the root's winner, so its whole path is replayed every time), and a
//! 16-byte entry comparing `(time, seq << 24 | slot)` as one 128-bit key (+1 %). In session 7:
//! sinking the rescheduled root the hole-first way too (+6 %: it usually stays near the top) and
//! a 16-byte entry with a 32-bit sequence number (+1.5 %: the compiler's comparisons got worse).

use lowlat_core::Time;

/// What to wake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A link (index into the link arena).
    Link(u32),
    /// A flow endpoint: `2 x flow` for its sender, `2 x flow + 1` for its receiver.
    Endpoint(u32),
}

/// Not in the heap.
const ABSENT: u32 = u32::MAX;

/// Most slots for which the queue is a plain scan of packed keys (see the module docs).
const LINEAR_MAX: usize = 8;
// A scanned key holds its index in 3 bits, and the scan is a tree of eight.
const _: () = assert!(LINEAR_MAX == 8);

/// A packed key of a slot with no wake-up (a slot's own key always has a smaller `seq`).
const NO_KEY: u128 = u128::MAX;

/// One pending wake-up: its key (time, then scheduling sequence number) and whose it is.
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    seq: u64,
    slot: u32,
}

impl Entry {
    #[inline(always)]
    fn before(&self, other: &Entry) -> bool {
        self.time < other.time || (self.time == other.time && self.seq < other.seq)
    }
}

/// Pending wake-ups of components, each with at most one live entry.
#[derive(Debug)]
pub struct Wakeups {
    /// Entries of component slots (links first, then endpoints), a binary min-heap on the key.
    heap: Vec<Entry>,
    /// Per slot: its index in `heap`, or [`ABSENT`].
    pos: Vec<u32>,
    /// The root is the entry [`Wakeups::pop_until`] returned last, not yet taken out (see the
    /// module docs); its slot's `pos` already says [`ABSENT`].
    popped: bool,
    links: u32,
    seq: u64,
    processed: u64,
    /// Few slots: the key `time << 64 | seq << 3 | index` (its own index here: the smallest key
    /// names itself) or [`NO_KEY`] of each slot that has ever asked for a wake-up, in the order
    /// they first did, then [`NO_KEY`]s; scanned whole instead of the heap (which then stays
    /// empty).
    keys: [u128; LINEAR_MAX],
    /// Few slots: how many of `keys` belong to a slot.
    scanned: usize,
    /// Few slots: the owner of each of `keys`, as [`Wakeups::pop_until`] returns it (not worked
    /// out from a slot number per event).
    owners: [Target; LINEAR_MAX],
    /// Few slots: per slot, its index in `keys` or [`ABSENT`]. (Fixed arrays: indices masked to
    /// their size need no bounds check.)
    key_index: [u32; LINEAR_MAX],
    linear: bool,
}

impl Wakeups {
    /// Room for `links` links and `endpoints` endpoints.
    pub fn new(links: usize, endpoints: usize) -> Wakeups {
        Wakeups::with_scan(links, endpoints, links + endpoints <= LINEAR_MAX)
    }

    /// Room for `links` links and `endpoints` endpoints, scanning the slots if `linear` and they
    /// are few enough.
    fn with_scan(links: usize, endpoints: usize, linear: bool) -> Wakeups {
        let n = links + endpoints;
        let linear = linear && n <= LINEAR_MAX;
        Wakeups {
            heap: Vec::with_capacity(n),
            pos: vec![ABSENT; n],
            popped: false,
            links: links as u32,
            seq: 0,
            processed: 0,
            keys: [NO_KEY; LINEAR_MAX],
            scanned: 0,
            owners: [Target::Link(ABSENT); LINEAR_MAX],
            key_index: [ABSENT; LINEAR_MAX],
            linear,
        }
    }

    #[inline(always)]
    fn slot(&self, target: Target) -> u32 {
        match target {
            Target::Link(i) => i,
            Target::Endpoint(i) => self.links + i,
        }
    }

    #[inline(always)]
    fn target(&self, slot: u32) -> Target {
        if slot < self.links {
            Target::Link(slot)
        } else {
            Target::Endpoint(slot - self.links)
        }
    }

    /// Takes out the entry popped last, if it still waits at the root.
    #[inline]
    fn settle_popped(&mut self) {
        if self.popped {
            self.popped = false;
            self.take_root();
        }
    }

    /// Makes `target`'s next wake-up `at` (None: not at all). No-op if unchanged.
    #[inline(always)]
    pub fn set(&mut self, target: Target, at: Option<Time>) {
        let slot = self.slot(target);
        if self.linear {
            // (A scanned queue has at most `LINEAR_MAX` slots: the masks change no index.)
            let mut k = self.key_index[slot as usize % LINEAR_MAX];
            if k == ABSENT {
                if at.is_none() {
                    return;
                }
                // Its first wake-up: the slot joins the scan (at most once, within capacity).
                k = self.scanned as u32;
                self.scanned += 1;
                self.key_index[slot as usize % LINEAR_MAX] = k;
                self.owners[k as usize % LINEAR_MAX] = target;
            }
            let key = &mut self.keys[k as usize % LINEAR_MAX];
            match at {
                None => *key = NO_KEY,
                // (No key reads as a wake-up at `Time::MAX`, which is never popped: keeping none
                // for such a wake-up changes nothing.)
                Some(t) if (*key >> 64) as u64 == t.as_nanos() => {}
                Some(t) => {
                    self.seq += 1;
                    *key = (u128::from(t.as_nanos()) << 64) | u128::from(self.seq << 3 | u64::from(k));
                }
            }
            return;
        }
        let i = self.pos[slot as usize];
        // Most calls change nothing (a link handing everything on ahead has nothing to ask for,
        // a busy one asks again for the delivery it asked for): answered here, inline, before
        // the call that moves entries.
        match at {
            None if i == ABSENT && !(self.popped && self.heap[0].slot == slot) => return,
            Some(t) if i != ABSENT && self.heap[i as usize].time == t.as_nanos() => return,
            _ => {}
        }
        self.reschedule(slot, i, at);
    }

    /// [`Wakeups::set`] of `slot`, at `pos` `i`, when it changes something.
    #[inline(never)]
    fn reschedule(&mut self, slot: u32, i: u32, at: Option<Time>) {
        let Some(time) = at.map(Time::as_nanos) else {
            if i != ABSENT {
                self.remove_at(i as usize);
            } else if self.popped && self.heap[0].slot == slot {
                self.popped = false;
                self.take_root();
            }
            return;
        };
        if i != ABSENT {
            let old = self.heap[i as usize];
            if old.time == time {
                return;
            }
            self.seq += 1;
            let new = Entry { time, seq: self.seq, slot };
            if self.popped && time < self.heap[0].time {
                // Earlier than the entry waiting at the root: take that out first.
                self.settle_popped();
                let i = self.pos[slot as usize] as usize;
                self.heap[i] = new;
                self.sift_up(i);
            } else {
                self.heap[i as usize] = new;
                if new.before(&old) {
                    self.sift_up(i as usize);
                } else {
                    self.sift_down(i as usize);
                }
            }
            return;
        }
        self.seq += 1;
        let new = Entry { time, seq: self.seq, slot };
        if self.popped {
            if self.heap[0].slot == slot {
                // The component just woken asks for its next wake-up: its entry at the root
                // takes the new key and sinks.
                self.popped = false;
                self.heap[0] = new;
                self.pos[slot as usize] = 0;
                self.sift_down(0);
                return;
            }
            if time < self.heap[0].time {
                self.settle_popped();
            }
        }
        self.heap.push(new);
        let last = self.heap.len() - 1;
        self.sift_up(last);
    }

    /// The next wake-up at or before `until`, removed from the queue.
    #[inline]
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, Target)> {
        if self.linear {
            // The first four, six or all eight (the others hold no key), in a tree of minima: no
            // loop, no index to carry (the key names its place; sequence numbers are unique, so
            // the order is that of `(time, seq)`).
            let k = &self.keys;
            let four = (k[0].min(k[1])).min(k[2].min(k[3]));
            let key = match self.scanned {
                0..=4 => four,
                5 | 6 => four.min(k[4].min(k[5])),
                _ => four.min((k[4].min(k[5])).min(k[6].min(k[7]))),
            };
            let best = (key & 7) as usize;
            let time = (key >> 64) as u64;
            if key == NO_KEY || time > until.as_nanos() {
                return None;
            }
            self.keys[best] = NO_KEY;
            self.processed += 1;
            return Some((Time(time), self.owners[best]));
        }
        self.settle_popped();
        let top = *self.heap.first()?;
        if top.time > until.as_nanos() {
            return None;
        }
        self.pos[top.slot as usize] = ABSENT;
        self.popped = true;
        self.processed += 1;
        Some((Time(top.time), self.target(top.slot)))
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Removes the root (whose `pos` is already [`ABSENT`]).
    fn take_root(&mut self) {
        let last = self.heap.pop().expect("the root is in the heap");
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down_deep();
        }
    }

    fn remove_at(&mut self, i: usize) {
        let slot = self.heap[i].slot;
        self.pos[slot as usize] = ABSENT;
        let last = self.heap.pop().expect("the entry being removed is in the heap");
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[last.slot as usize] = i as u32;
            self.sift_down(i);
            self.sift_up(self.pos[last.slot as usize] as usize);
        }
    }

    /// Moves the entry at `i` up to its place, fixing `pos` of every entry it passes and its own.
    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if !e.before(&p) {
                break;
            }
            self.heap[i] = p;
            self.pos[p.slot as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = e;
        self.pos[e.slot as usize] = i as u32;
    }

    /// The child of `i` with the earlier key (`None`: `i` is a leaf of a heap of `n` entries).
    #[inline(always)]
    fn smaller_child(&self, i: usize, n: usize) -> Option<usize> {
        let left = 2 * i + 1;
        if left >= n {
            return None;
        }
        let right = left + 1;
        Some(if right < n && self.heap[right].before(&self.heap[left]) { right } else { left })
    }

    /// Moves the entry at the root down to its place, as [`Wakeups::sift_down`] does, for an
    /// entry that likely belongs near the bottom: the hole walks down along the smaller children
    /// (one comparison per level instead of two), then the entry climbs back up from there.
    #[inline]
    fn sift_down_deep(&mut self) {
        let e = self.heap[0];
        let n = self.heap.len();
        let mut i = 0;
        while let Some(child) = self.smaller_child(i, n) {
            let c = self.heap[child];
            self.heap[i] = c;
            self.pos[c.slot as usize] = i as u32;
            i = child;
        }
        self.heap[i] = e;
        self.sift_up(i);
    }

    /// Moves the entry at `i` down to its place, fixing `pos` of every entry it passes and its own.
    // Always inlined: it runs about once per event, and a call's register saves and restores were
    // a tenth of its cost.
    #[inline(always)]
    fn sift_down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        while let Some(child) = self.smaller_child(i, n) {
            let c = self.heap[child];
            if !c.before(&e) {
                break;
            }
            self.heap[i] = c;
            self.pos[c.slot as usize] = i as u32;
            i = child;
        }
        self.heap[i] = e;
        self.pos[e.slot as usize] = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_schedule_order_and_skips_superseded() {
        let mut w = Wakeups::new(3, 1);
        w.set(Target::Link(0), Some(Time(10)));
        w.set(Target::Link(1), Some(Time(5)));
        w.set(Target::Link(2), Some(Time(10)));
        w.set(Target::Endpoint(0), Some(Time(7)));
        w.set(Target::Endpoint(0), Some(Time(12))); // supersedes 7
        let order: Vec<_> = std::iter::from_fn(|| w.pop_until(Time(100))).collect();
        assert_eq!(
            order,
            vec![
                (Time(5), Target::Link(1)),
                (Time(10), Target::Link(0)),
                (Time(10), Target::Link(2)),
                (Time(12), Target::Endpoint(0)),
            ]
        );
        assert_eq!(w.processed(), 4);
    }

    #[test]
    fn stops_at_the_horizon() {
        let mut w = Wakeups::new(1, 0);
        w.set(Target::Link(0), Some(Time(50)));
        assert_eq!(w.pop_until(Time(49)), None);
        assert_eq!(w.pop_until(Time(50)), Some((Time(50), Target::Link(0))));
    }

    /// Against a plain list of live `(time, seq, target)` entries: the same events in the same
    /// order under random reschedules, cancellations and pops; with `past`, reschedules may also
    /// ask for instants before the last one popped (which the driver never does).
    fn matches_a_naive_queue(seed: u64, past: bool) {
        matches_a_naive_queue_with(seed, past, 5, 6);
    }

    fn matches_a_naive_queue_with(seed: u64, past: bool, links: u32, endpoints: u32) {
        for linear in [false, true] {
            matches_a_naive_queue_scanning(seed, past, links, endpoints, linear);
        }
    }

    fn matches_a_naive_queue_scanning(seed: u64, past: bool, links: u32, endpoints: u32, linear: bool) {
        let mut rng = lowlat_core::rng::stream(seed, "engine-test");
        use rand::Rng;
        let mut w = Wakeups::with_scan(links as usize, endpoints as usize, linear);
        let mut naive: Vec<(Time, u64, Target)> = Vec::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        for _ in 0..20_000 {
            if rng.random_bool(0.6) {
                let t = if rng.random_bool(0.5) {
                    Target::Link(rng.random_range(0..links))
                } else {
                    Target::Endpoint(rng.random_range(0..endpoints))
                };
                let lo = if past { now.saturating_sub(20) } else { now };
                let at = rng.random_bool(0.9).then(|| Time(rng.random_range(lo..now + 50)));
                w.set(t, at);
                let old = naive.iter().position(|e| e.2 == t);
                if old.map(|i| Some(naive[i].0)) != Some(at) && !(old.is_none() && at.is_none()) {
                    if let Some(i) = old {
                        naive.remove(i);
                    }
                    if let Some(at) = at {
                        seq += 1;
                        naive.push((at, seq, t));
                    }
                }
            } else {
                let until = Time(now + rng.random_range(0..20));
                let want =
                    naive.iter().enumerate().filter(|(_, e)| e.0 <= until).min_by_key(|(_, e)| (e.0, e.1));
                let want = want.map(|(i, e)| (i, (e.0, e.2)));
                assert_eq!(w.pop_until(until), want.map(|w| w.1));
                if let Some((i, (t, _))) = want {
                    naive.remove(i);
                    now = t.as_nanos();
                }
            }
        }
    }

    #[test]
    fn matches_a_naive_queue_under_random_reschedules() {
        matches_a_naive_queue(7, false);
        matches_a_naive_queue(8, false);
    }

    /// Queues of a few to over a hundred components, down to two.
    #[test]
    fn matches_a_naive_queue_at_every_size() {
        for (seed, links, endpoints) in [
            (11, 1, 1),
            (12, 2, 1),
            (17, 2, 3),
            (18, 3, 3),
            (13, 3, 4),
            (14, 8, 8),
            (15, 13, 20),
            (16, 40, 90),
        ] {
            matches_a_naive_queue_with(seed, false, links, endpoints);
            matches_a_naive_queue_with(seed + 100, true, links, endpoints);
        }
    }

    #[test]
    fn matches_a_naive_queue_when_asked_for_earlier_instants() {
        matches_a_naive_queue(9, true);
        matches_a_naive_queue(10, true);
    }
}
