//! The ACK frames a transport receiver has sent and its sender has not yet read: the receiver
//! writes each in place, and the simulator hands it to the sender with the ACK packet that
//! carries it ([`crate::app::Endpoint::ack_ring`]). Apart from the endpoints (which the engine's
//! trait names it for), it depends on nothing of the simulator's.

use lowlat_transport::AckFrame;

/// The ACK frames in flight, oldest first, each with the id of the packet carrying it. Frames stay
/// in their slots: the receiver writes the next one in place and the sender reads it there, so a
/// frame costs a copy of the ranges it holds, where moving one (in and out of a queue, out of a
/// function) copied its whole inline room (about half a kilobyte) several times per ACK. Each
/// slot also keeps which of its receiver's frames it holds, so that ranges unchanged since are
/// not copied again ([`Receiver::poll_ack_into_held`]): one receiver writes a ring.
#[derive(Debug, Default)]
pub struct AckRing {
    slots: Vec<(u64, AckFrame, Option<u64>)>,
    head: usize,
    len: usize,
    /// Nobody reads the frames ([`AckRing::set_unread`]).
    unread: bool,
}

impl AckRing {
    /// Writes the next frame with `fill` (which says whether it wrote one) under `id`; `fill`
    /// also gets the slot's note of the frame it holds (see [`Receiver::poll_ack_into_held`]).
    /// (Inlined: once per ACK, and left a call when the crate's code moved between units.)
    #[inline]
    pub fn push_with(&mut self, id: u64, fill: impl FnOnce(&mut AckFrame, &mut Option<u64>) -> bool) -> bool {
        if self.len == self.slots.len() {
            self.grow();
        }
        // (head < slots and len < slots here: one subtraction wraps, where `%` divides per ACK.)
        let mut i = self.head + self.len;
        if i >= self.slots.len() {
            i -= self.slots.len();
        }
        let slot = &mut self.slots[i];
        if !fill(&mut slot.1, &mut slot.2) {
            return false;
        }
        slot.0 = id;
        self.len += 1;
        true
    }

    /// [`AckRing::push_with`] when there is room (no growth), with `fill` given the slot's note
    /// only: whether `fill` wrote a frame (`false` also when full: nothing changed).
    #[inline(always)]
    pub fn push_in_room(&mut self, id: u64, fill: impl FnOnce(&mut AckFrame, Option<u64>) -> bool) -> bool {
        if self.len == self.slots.len() {
            return false;
        }
        let mut i = self.head + self.len;
        if i >= self.slots.len() {
            i -= self.slots.len();
        }
        let slot = &mut self.slots[i];
        if !fill(&mut slot.1, slot.2) {
            return false;
        }
        slot.0 = id;
        self.len += 1;
        true
    }

    /// Makes room after the newest frame (the order is kept). The room doubles: the ring grows
    /// to the most frames ever in flight, and growing it a slot at a time moved every slot (half
    /// a kilobyte each) at each of some 360 growths in a Copa run. (Apart: inlined, its frame on
    /// the stack made every push save and restore registers and reserve a kilobyte.)
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.slots.rotate_left(self.head);
        self.head = 0;
        let more = self.slots.len().max(8);
        self.slots.resize_with(self.slots.len() + more, || (0, AckFrame::default(), None));
    }

    /// The frame of the ACK packet `id` that just arrived, if it is here. Feedback packets arrive
    /// in order, so frames older than `id` belong to lost packets and are dropped. The frame
    /// stays readable until the next [`AckRing::push_with`].
    pub fn take(&mut self, id: u64) -> Option<&AckFrame> {
        while self.len > 0 && self.slots[self.head].0 < id {
            self.pop();
        }
        if self.len > 0 && self.slots[self.head].0 == id {
            let i = self.head;
            self.pop();
            return Some(&self.slots[i].1);
        }
        None
    }

    fn pop(&mut self) {
        self.head += 1;
        if self.head == self.slots.len() {
            self.head = 0;
        }
        self.len -= 1;
    }

    /// Says that nobody will read the frames (none is taken): the network acknowledges for
    /// the receiver and drops every ACK packet it sends (FastAck). Its receiver then need not
    /// write them ([`AckRing::is_unread`]), only size them.
    pub fn set_unread(&mut self) {
        self.unread = true;
        self.clear();
    }

    /// Whether nobody reads the frames ([`AckRing::set_unread`]).
    #[inline]
    pub fn is_unread(&self) -> bool {
        self.unread
    }

    /// Forgets every frame in flight.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Frames in flight.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no frame is in flight.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_transport::AckRanges;
    use std::collections::VecDeque;

    /// The ring in place gives what a queue of frames gives: frames taken by id in order, older
    /// ones (lost ACK packets) dropped, across growth and wrap-around.
    #[test]
    fn the_ack_ring_behaves_as_a_queue_of_frames() {
        let mut next = lowlat_core::rng::below(1, "ack-ring-test");
        let frame = |id: u64| AckFrame {
            ranges: AckRanges::from_slice(&[(id, id + 1)]),
            ack_delay: lowlat_core::Duration(id),
            ecn: None,
        };
        let mut ring = AckRing::default();
        let mut model: VecDeque<(u64, AckFrame)> = VecDeque::new();
        let (mut pushed, mut taken) = (0u64, 0u64);
        for _ in 0..20_000 {
            if next(3) > 0 || model.is_empty() {
                // Now and then the receiver has nothing to send.
                let due = next(5) > 0;
                assert_eq!(
                    ring.push_with(pushed, |f, _| {
                        *f = frame(pushed);
                        due
                    }),
                    due
                );
                if due {
                    model.push_back((pushed, frame(pushed)));
                    pushed += 1;
                }
            } else {
                // An ACK packet arrives; some before it were lost on the way.
                let id = taken + next(3);
                while model.front().is_some_and(|(i, _)| *i < id) {
                    model.pop_front();
                }
                let want = model.front().filter(|(i, _)| *i == id).map(|(_, f)| f.clone());
                if want.is_some() {
                    model.pop_front();
                }
                assert_eq!(ring.take(id).cloned(), want, "id {id}");
                taken = id + 1;
            }
            assert_eq!(ring.len(), model.len());
        }
        assert!(pushed > 5_000 && taken > 1_000, "{pushed} pushed, {taken} taken");
    }
}
