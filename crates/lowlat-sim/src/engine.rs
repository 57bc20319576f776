//! The event queue: a binary heap of `(time, sequence, event)`.
//!
//! Events are totally ordered: by time, then by the order they were scheduled (a global sequence
//! number), so two runs of the same scenario process the same events in the same order. An entry is
//! 24 bytes and `Copy`; the heap grows to the number of pending wake-ups (one per component at
//! most, see [`Wakeups`]), so scheduling never allocates on the hot path.

use lowlat_core::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What to wake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A link (index into the link arena).
    Link(u32),
    /// A flow endpoint: `2 x flow` for its sender, `2 x flow + 1` for its receiver.
    Endpoint(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    time: Time,
    seq: u64,
    target: Target,
    generation: u32,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest first.
        other.time.cmp(&self.time).then_with(|| other.seq.cmp(&self.seq))
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Pending wake-ups of components, each with at most one live entry.
///
/// Rescheduling a component bumps its generation; the entry it replaces stays in the heap and is
/// skipped when popped (cheaper than a decrease-key heap).
#[derive(Debug, Default)]
pub struct Wakeups {
    heap: BinaryHeap<Entry>,
    seq: u64,
    links: Vec<Slot>,
    endpoints: Vec<Slot>,
    processed: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    at: Option<Time>,
    generation: u32,
}

impl Wakeups {
    /// Room for `links` links and `endpoints` endpoints.
    pub fn new(links: usize, endpoints: usize) -> Wakeups {
        Wakeups {
            heap: BinaryHeap::with_capacity(4 * (links + endpoints) + 16),
            seq: 0,
            links: vec![Slot::default(); links],
            endpoints: vec![Slot::default(); endpoints],
            processed: 0,
        }
    }

    fn slot(&mut self, target: Target) -> &mut Slot {
        match target {
            Target::Link(i) => &mut self.links[i as usize],
            Target::Endpoint(i) => &mut self.endpoints[i as usize],
        }
    }

    /// Makes `target`'s next wake-up `at` (None: not at all). No-op if unchanged.
    pub fn set(&mut self, target: Target, at: Option<Time>) {
        let slot = self.slot(target);
        if slot.at == at {
            return;
        }
        slot.at = at;
        slot.generation = slot.generation.wrapping_add(1);
        let generation = slot.generation;
        if let Some(time) = at {
            self.seq += 1;
            let seq = self.seq;
            self.heap.push(Entry { time, seq, target, generation });
        }
    }

    /// The next live wake-up at or before `until`, removed from the queue.
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, Target)> {
        while let Some(top) = self.heap.peek() {
            if top.time > until {
                return None;
            }
            let e = self.heap.pop().expect("peeked just above");
            let slot = self.slot(e.target);
            if slot.generation != e.generation {
                continue; // superseded by a later `set`
            }
            slot.at = None;
            self.processed += 1;
            return Some((e.time, e.target));
        }
        None
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.processed
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
}
