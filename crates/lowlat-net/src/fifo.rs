//! A first-in first-out ring of `Copy` values whose capacity is a power of two: a link's packets
//! in propagation, pushed, looked at and popped once or twice per packet per hop.
//!
//! What `VecDeque` does for these calls, with an index masked instead of wrapped by a comparison
//! (its capacity need not be a power of two): a few instructions less per call, and no call out
//! of line to grow on a push. Nothing is allocated once it has grown to its working size.

/// A FIFO of `Copy` values (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct Fifo<T: Copy> {
    /// The slots; a power of two of them (or none before the first push).
    slots: Vec<T>,
    /// The slot of the first value.
    head: usize,
    /// Values held.
    len: usize,
}

impl<T: Copy> Fifo<T> {
    /// An empty FIFO; allocates nothing until the first push.
    pub(crate) fn new() -> Fifo<T> {
        Fifo { slots: Vec::new(), head: 0, len: 0 }
    }

    /// Values held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds nothing.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first value, if any.
    #[inline]
    pub(crate) fn front(&self) -> Option<&T> {
        if self.len == 0 {
            return None;
        }
        self.slots.get(self.head)
    }

    /// Takes the first value out.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.slots.get(self.head).copied();
        self.head = (self.head + 1) & (self.slots.len() - 1);
        self.len -= 1;
        v
    }

    /// Puts `v` at the back.
    #[inline]
    pub(crate) fn push_back(&mut self, v: T) {
        if self.len == self.slots.len() {
            self.grow(v);
        }
        let mask = self.slots.len() - 1;
        self.slots[(self.head + self.len) & mask] = v;
        self.len += 1;
    }

    /// Twice the slots (at least 16), the values moved to the front in order; `fill` stands in
    /// the slots not yet used.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, fill: T) {
        let cap = (2 * self.slots.len()).max(16);
        let mut slots = Vec::with_capacity(cap);
        let mask = self.slots.len().wrapping_sub(1);
        slots.extend((0..self.len).map(|i| self.slots[(self.head + i) & mask]));
        slots.resize(cap, fill);
        self.slots = slots;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The same values in the same order as a `VecDeque` under random pushes and pops, across
    /// growths and wrap-arounds.
    #[test]
    fn behaves_as_a_vecdeque() {
        let mut next = lowlat_core::rng::below(5, "fifo-test");
        let mut fifo = Fifo::new();
        let mut deque = VecDeque::new();
        let mut v = 0u64;
        for round in 0..50_000 {
            // Phases that fill up and drain.
            let push = next(100) < if (round / 2_000) % 2 == 0 { 60 } else { 40 };
            if push {
                fifo.push_back(v);
                deque.push_back(v);
                v += 1;
            } else {
                assert_eq!(fifo.pop_front(), deque.pop_front());
            }
            assert_eq!(fifo.front(), deque.front());
            assert_eq!((fifo.len(), fifo.is_empty()), (deque.len(), deque.is_empty()));
        }
    }
}
