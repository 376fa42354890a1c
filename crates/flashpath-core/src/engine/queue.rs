//! The event queue: a binary heap ordered by (time, insertion sequence).
//! Events at the same instant pop in the order they were pushed, which makes every run
//! deterministic.
//!
//! For speed the heap holds only a 128-bit key (time in the high half, sequence in
//! the low: one integer compare orders both) and the index of the event in a slab; the
//! events themselves (tens of bytes) stay where they were pushed until popped.

use super::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy)]
struct Entry {
    /// `at << 64 | seq`.
    key: u128,
    slot: u32,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry>,
    /// Events by slot; a popped event's slot goes to `free`.
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::with_capacity(1024),
            slab: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
            next_seq: 0,
        }
    }
    // Always inlined: the event is built at the call site and written straight into its
    // slot. Out of line it was built on the caller's stack and copied in, and that copy
    // (a load of a just-written, differently-sized value) was most of push's time. The
    // heap's sift-up stays out of line (`push_key`), so each call site stays small.
    #[inline(always)]
    pub fn push(&mut self, at: SimTime, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = match self.free.pop() {
            Some(s) => {
                // A free slot holds None: nothing to drop (forget skips the drop glue's
                // check of the old value).
                let old = self.slab[s as usize].replace(event);
                debug_assert!(old.is_none(), "a free slot is empty");
                std::mem::forget(old);
                s
            }
            None => {
                self.slab.push(Some(event));
                (self.slab.len() - 1) as u32
            }
        };
        self.push_key((at as u128) << 64 | seq as u128, slot);
    }
    #[inline(never)]
    fn push_key(&mut self, key: u128, slot: u32) {
        self.heap.push(Entry { key, slot });
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let e = self.heap.pop()?;
        Some(self.take(e))
    }
    /// The earliest event if it is due at or before `limit` (a peek and a pop in one).
    #[inline]
    pub fn pop_due(&mut self, limit: SimTime) -> Option<(SimTime, E)> {
        if (self.heap.peek()?.key >> 64) as SimTime > limit {
            return None;
        }
        let e = self.heap.pop().expect("peeked");
        Some(self.take(e))
    }
    #[inline]
    fn take(&mut self, e: Entry) -> (SimTime, E) {
        let ev = self.slab[e.slot as usize].take().expect("a queued event");
        self.free.push(e.slot);
        ((e.key >> 64) as SimTime, ev)
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| (e.key >> 64) as SimTime)
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(10, "b");
        q.push(5, "a");
        q.push(10, "c");
        q.push(7, "x");
        q.push(10, "d");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![(5, "a"), (7, "x"), (10, "b"), (10, "c"), (10, "d")]
        );
    }

    #[test]
    fn pop_due_stops_at_the_limit() {
        let mut q = EventQueue::new();
        q.push(10, "b");
        q.push(5, "a");
        q.push(10, "c");
        assert_eq!(q.pop_due(4), None);
        assert_eq!(q.pop_due(5), Some((5, "a")));
        assert_eq!(q.pop_due(9), None);
        assert_eq!(q.pop_due(10), Some((10, "b")));
        q.push(10, "d");
        assert_eq!(q.pop_due(10), Some((10, "c")));
        assert_eq!(q.pop_due(u64::MAX), Some((10, "d")));
        assert_eq!(q.pop_due(u64::MAX), None);
    }
}
