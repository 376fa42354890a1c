//! The event queue: a binary heap ordered by (time, insertion sequence).
//! Events at the same instant pop in the order they were pushed, which makes every run
//! deterministic.
//!
//! For speed the heap holds one 128-bit integer per event: the time in the high 64
//! bits, the insertion sequence in the next 32 and the event's slot in a slab in the
//! low 32. One integer compare orders by (time, sequence) (sequences are unique, so
//! the slot never decides), and a heap entry is 16 bytes to move. The events
//! themselves (tens of bytes) stay in their slots until popped. When the 32-bit
//! sequence would wrap (after 4 G pushes), the queued events are renumbered 0, 1, ...
//! in their order, which keeps every order the queue will ever give.
//! The earliest key is often kept out of the heap (`front`): an event pushed as the next
//! to run, as most are, pops again without a sift down or up.

use super::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const SEQ_SHIFT: u32 = 32;
const LOW: u128 = (1 << 32) - 1;

pub struct EventQueue<E> {
    /// The earliest key, when it was pushed while earlier than all in `heap` (kept out
    /// of the heap: most events are pushed as the next to run, and pop at once).
    front: Option<u128>,
    /// The other keys.
    heap: BinaryHeap<Reverse<u128>>,
    /// Events by slot; a popped event's slot goes to `free`.
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    /// The next insertion sequence (below 2^32: `renumber` keeps it there).
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
            front: None,
            heap: BinaryHeap::with_capacity(1024),
            slab: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
            next_seq: 0,
        }
    }
    // Always inlined: the event is built at the call site and written straight into its
    // slot. Out of line it was built on the caller's stack and copied in, and that copy
    // (a load of a just-written, differently-sized value) was most of push's time. The
    // heap's sift-up stays out of line (`heap_push`), so each call site stays small.
    #[inline(always)]
    pub fn push(&mut self, at: SimTime, event: E) {
        if self.next_seq > LOW as u64 {
            self.renumber();
        }
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
                let s = u32::try_from(self.slab.len()).expect("fewer than 2^32 queued events");
                self.slab.push(Some(event));
                s
            }
        };
        self.push_key((at as u128) << 64 | (seq as u128) << SEQ_SHIFT | slot as u128);
    }
    #[inline]
    fn push_key(&mut self, key: u128) {
        match self.front {
            Some(f) if key < f => {
                self.front = Some(key);
                self.heap_push(f);
            }
            Some(_) => self.heap_push(key),
            None => match self.heap.peek() {
                Some(&Reverse(h)) if h < key => self.heap_push(key),
                _ => self.front = Some(key),
            },
        }
    }
    #[inline(never)]
    fn heap_push(&mut self, key: u128) {
        self.heap.push(Reverse(key));
    }
    /// The earliest key, without taking it.
    #[inline]
    fn min_key(&self) -> Option<u128> {
        self.front.or_else(|| self.heap.peek().map(|r| r.0))
    }
    /// Takes the earliest key.
    #[inline]
    fn pop_key(&mut self) -> Option<u128> {
        match self.front.take() {
            Some(k) => Some(k),
            None => self.heap.pop().map(|r| r.0),
        }
    }
    /// Gives the queued events the sequences 0, 1, ... in their order (time, then
    /// sequence): the orders among them, and after any later push, stay as they were.
    #[cold]
    #[inline(never)]
    fn renumber(&mut self) {
        let mut keys: Vec<u128> = std::mem::take(&mut self.heap)
            .into_iter()
            .map(|Reverse(k)| k)
            .chain(self.front.take())
            .collect();
        keys.sort_unstable();
        for (seq, k) in keys.iter_mut().enumerate() {
            *k = (*k >> 64) << 64 | (seq as u128) << SEQ_SHIFT | (*k & LOW);
        }
        self.next_seq = keys.len() as u64;
        self.heap = keys.into_iter().map(Reverse).collect();
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let k = self.pop_key()?;
        Some(self.take(k))
    }
    /// The earliest event if it is due at or before `limit` (a peek and a pop in one).
    #[inline]
    pub fn pop_due(&mut self, limit: SimTime) -> Option<(SimTime, E)> {
        if (self.min_key()? >> 64) as SimTime > limit {
            return None;
        }
        let k = self.pop_key().expect("peeked");
        Some(self.take(k))
    }
    #[inline]
    fn take(&mut self, key: u128) -> (SimTime, E) {
        let slot = (key & LOW) as u32;
        let ev = self.slab[slot as usize].take().expect("a queued event");
        self.free.push(slot);
        ((key >> 64) as SimTime, ev)
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.min_key().map(|k| (k >> 64) as SimTime)
    }
    pub fn len(&self) -> usize {
        self.heap.len() + self.front.is_some() as usize
    }
    pub fn is_empty(&self) -> bool {
        self.front.is_none() && self.heap.is_empty()
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

    #[test]
    fn renumbering_at_the_sequence_wrap_keeps_the_order() {
        let mut q = EventQueue::new();
        q.next_seq = LOW as u64 - 2;
        q.push(10, "b");
        q.push(5, "a");
        q.push(10, "c"); // the last sequence before the wrap
        q.push(10, "d"); // renumbered first: b, c keep their order ahead of d
        q.push(7, "x");
        assert!(q.next_seq < 10, "renumbered from 0");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![(5, "a"), (7, "x"), (10, "b"), (10, "c"), (10, "d")]
        );
    }

    proptest::proptest! {
        /// Any interleaving of pushes and pops gives the order of a sorted list by
        /// (time, push order), across a sequence wrap too.
        #[test]
        fn pops_as_a_sorted_list_would(
            ops in proptest::collection::vec((0u64..20, proptest::bool::ANY), 1..200),
            near_wrap in proptest::bool::ANY,
        ) {
            let mut q = EventQueue::new();
            if near_wrap {
                q.next_seq = LOW as u64 - 50;
            }
            let mut model: Vec<(u64, usize)> = Vec::new();
            for (n, &(t, push)) in ops.iter().enumerate() {
                if push || model.is_empty() {
                    q.push(t, n);
                    model.push((t, n));
                    proptest::prop_assert_eq!(q.len(), model.len());
                } else {
                    let i = (0..model.len()).min_by_key(|&i| model[i]).unwrap();
                    let want = model.remove(i);
                    proptest::prop_assert_eq!(q.peek_time(), Some(want.0));
                    proptest::prop_assert_eq!(q.pop(), Some(want));
                }
            }
            model.sort();
            let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            proptest::prop_assert_eq!(rest, model);
            proptest::prop_assert!(q.is_empty());
        }
    }
}
