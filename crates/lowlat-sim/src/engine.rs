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

/// Pending wake-ups of components, each with at most one live entry.
#[derive(Debug, Default)]
pub struct Wakeups {
    /// Component slots (links first, then endpoints), ordered as a binary min-heap on `key`.
    heap: Vec<u32>,
    /// Per slot: its wake-up time and scheduling sequence number (valid while in the heap).
    key: Vec<(Time, u64)>,
    /// Per slot: its index in `heap`, or [`ABSENT`].
    pos: Vec<u32>,
    links: u32,
    seq: u64,
    processed: u64,
}

impl Wakeups {
    /// Room for `links` links and `endpoints` endpoints.
    pub fn new(links: usize, endpoints: usize) -> Wakeups {
        let n = links + endpoints;
        Wakeups {
            heap: Vec::with_capacity(n),
            key: vec![(Time::ZERO, 0); n],
            pos: vec![ABSENT; n],
            links: links as u32,
            seq: 0,
            processed: 0,
        }
    }

    fn slot(&self, target: Target) -> u32 {
        match target {
            Target::Link(i) => i,
            Target::Endpoint(i) => self.links + i,
        }
    }

    fn target(&self, slot: u32) -> Target {
        if slot < self.links {
            Target::Link(slot)
        } else {
            Target::Endpoint(slot - self.links)
        }
    }

    /// Makes `target`'s next wake-up `at` (None: not at all). No-op if unchanged.
    pub fn set(&mut self, target: Target, at: Option<Time>) {
        let slot = self.slot(target);
        let i = self.pos[slot as usize];
        match at {
            None => {
                if i != ABSENT {
                    self.remove_at(i as usize);
                }
            }
            Some(time) => {
                if i != ABSENT && self.key[slot as usize].0 == time {
                    return;
                }
                self.seq += 1;
                let old = self.key[slot as usize];
                self.key[slot as usize] = (time, self.seq);
                if i == ABSENT {
                    self.heap.push(slot);
                    let last = self.heap.len() - 1;
                    self.pos[slot as usize] = last as u32;
                    self.sift_up(last);
                } else if (time, self.seq) < old {
                    self.sift_up(i as usize);
                } else {
                    self.sift_down(i as usize);
                }
            }
        }
    }

    /// The next wake-up at or before `until`, removed from the queue.
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, Target)> {
        let &top = self.heap.first()?;
        let time = self.key[top as usize].0;
        if time > until {
            return None;
        }
        self.remove_at(0);
        self.processed += 1;
        Some((time, self.target(top)))
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    fn less(&self, a: u32, b: u32) -> bool {
        self.key[a as usize] < self.key[b as usize]
    }

    fn place(&mut self, i: usize, slot: u32) {
        self.heap[i] = slot;
        self.pos[slot as usize] = i as u32;
    }

    fn remove_at(&mut self, i: usize) {
        let slot = self.heap[i];
        self.pos[slot as usize] = ABSENT;
        let last = self.heap.pop().expect("the entry being removed is in the heap");
        if i < self.heap.len() {
            self.place(i, last);
            self.sift_down(i);
            self.sift_up(i);
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        let slot = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(slot, self.heap[parent]) {
                break;
            }
            self.place(i, self.heap[parent]);
            i = parent;
        }
        self.place(i, slot);
    }

    fn sift_down(&mut self, mut i: usize) {
        let slot = self.heap[i];
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.less(self.heap[right], self.heap[left]) { right } else { left };
            if !self.less(self.heap[child], slot) {
                break;
            }
            self.place(i, self.heap[child]);
            i = child;
        }
        self.place(i, slot);
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
    /// order under random reschedules, cancellations and pops.
    #[test]
    fn matches_a_naive_queue_under_random_reschedules() {
        let mut rng = lowlat_core::rng::stream(7, "engine-test");
        use rand::Rng;
        let (links, endpoints) = (5u32, 6u32);
        let mut w = Wakeups::new(links as usize, endpoints as usize);
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
                let at = rng.random_bool(0.9).then(|| Time(now + rng.random_range(0..50)));
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
}
