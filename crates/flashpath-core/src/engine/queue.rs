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
//! The earliest key is often kept apart (`front`): an event pushed as the next to run,
//! as most are, pops again with no other key moved. The other keys are a sorted vector
//! while few, a binary heap while many. A simulation mostly holds a handful of events
//! (a device, a driver and a thread each waiting for their next instant: 1 to 6 in the
//! eMMC benches' random writes, 0 to 2 in their random reads), and at that size a
//! sorted vector, the earliest key last, pops with no work and pushes with a few
//! compares and moves, where a heap sifts through its levels both ways. Past
//! [`SORTED_MAX`] keys (thousands of job threads, each with its timer) they become a
//! heap, and a sorted vector again at [`SORTED_MIN`].

use super::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const SEQ_SHIFT: u32 = 32;
const LOW: u128 = (1 << 32) - 1;
/// The most keys (besides `front`) kept as a sorted vector: one more and they become a
/// heap (a push moves at most this many keys).
const SORTED_MAX: usize = 32;
/// A heap down to this many keys becomes a sorted vector again (well below
/// [`SORTED_MAX`], so a queue near the threshold does not change form at every event).
const SORTED_MIN: usize = 8;

pub struct EventQueue<E> {
    /// The earliest key, when it was pushed while earlier than all the others (most
    /// events are pushed as the next to run, and pop at once).
    front: Option<u128>,
    /// The other keys in descending order (the earliest last), while there are at most
    /// [`SORTED_MAX`]; empty while `heap` holds them.
    sorted: Vec<u128>,
    /// The other keys while there are many (more than [`SORTED_MIN`]; else empty).
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
            sorted: Vec::with_capacity(SORTED_MAX),
            heap: BinaryHeap::new(),
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
                self.rest_push(f);
            }
            Some(_) => self.rest_push(key),
            None => match self.rest_min() {
                Some(m) if m < key => self.rest_push(key),
                _ => self.front = Some(key),
            },
        }
    }
    /// The other keys are a heap (a heap is never left with [`SORTED_MIN`] or fewer).
    #[inline(always)]
    fn big(&self) -> bool {
        !self.heap.is_empty()
    }
    /// Adds `key` to the keys other than `front`.
    #[inline(never)]
    fn rest_push(&mut self, key: u128) {
        let n = self.sorted.len();
        if self.big() || n == SORTED_MAX {
            return self.heap_push(key);
        }
        // Insertion into the sorted keys: the earlier ones move up one place (none
        // when `key` is the earliest).
        self.sorted.push(key);
        let v = &mut self.sorted[..=n];
        let mut i = n;
        while i > 0 && v[i - 1] < key {
            v[i] = v[i - 1];
            i -= 1;
        }
        v[i] = key;
    }
    /// Adds `key` to the heap, which the sorted keys become first.
    #[cold]
    #[inline(never)]
    fn heap_push(&mut self, key: u128) {
        if !self.big() {
            self.heap.extend(self.sorted.drain(..).map(Reverse));
        }
        self.heap.push(Reverse(key));
    }
    /// Takes the earliest of the keys other than `front`.
    #[inline]
    fn rest_pop(&mut self) -> Option<u128> {
        if self.big() {
            self.heap_pop()
        } else {
            self.sorted.pop()
        }
    }
    /// Takes the heap's earliest key; a heap down to [`SORTED_MIN`] keys becomes the
    /// sorted vector again.
    #[cold]
    #[inline(never)]
    fn heap_pop(&mut self) -> Option<u128> {
        let k = self.heap.pop().map(|r| r.0);
        if self.heap.len() <= SORTED_MIN {
            let heap = std::mem::take(&mut self.heap);
            // Ascending by `Reverse`: the keys' descending order.
            self.sorted
                .extend(heap.into_sorted_vec().into_iter().map(|Reverse(k)| k));
        }
        k
    }
    /// The earliest of the keys other than `front`.
    #[inline]
    fn rest_min(&self) -> Option<u128> {
        if self.big() {
            self.heap.peek().map(|r| r.0)
        } else {
            self.sorted.last().copied()
        }
    }
    /// The earliest key, without taking it.
    #[inline]
    fn min_key(&self) -> Option<u128> {
        self.front.or_else(|| self.rest_min())
    }
    /// Takes the earliest key.
    #[inline]
    fn pop_key(&mut self) -> Option<u128> {
        match self.front.take() {
            Some(k) => Some(k),
            None => self.rest_pop(),
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
            .chain(self.sorted.drain(..))
            .chain(self.front.take())
            .collect();
        keys.sort_unstable();
        for (seq, k) in keys.iter_mut().enumerate() {
            *k = (*k >> 64) << 64 | (seq as u128) << SEQ_SHIFT | (*k & LOW);
        }
        self.next_seq = keys.len() as u64;
        // All in the heap (or the sorted vector, if few): `front` is empty.
        if keys.len() > SORTED_MAX {
            self.heap = keys.into_iter().map(Reverse).collect();
        } else {
            keys.reverse();
            self.sorted = keys;
        }
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
        self.heap.len() + self.sorted.len() + self.front.is_some() as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// The keys other than `front`.
    fn rest_len<E>(q: &EventQueue<E>) -> usize {
        q.sorted.len() + q.heap.len()
    }

    #[test]
    fn keys_change_form_at_the_thresholds() {
        let mut q = EventQueue::new();
        // Times in a scrambled order, some equal (pops go by time, then push order).
        let times: Vec<u64> = (0..40u64).map(|i| (i * 17) % 23).collect();
        for (n, &t) in times.iter().enumerate() {
            q.push(t, n);
            assert_eq!(q.big(), rest_len(&q) > SORTED_MAX, "after {} pushes", n + 1);
        }
        assert!(q.big());
        let mut want: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
        want.push((100, 1000));
        want.sort();
        let mut got = Vec::new();
        let pop = |q: &mut EventQueue<usize>, got: &mut Vec<(u64, usize)>| {
            got.push(q.pop().unwrap());
            assert_eq!(q.big(), rest_len(q) > SORTED_MIN, "{} left", q.len());
        };
        for _ in 0..20 {
            pop(&mut q, &mut got);
        }
        // Pushed while a heap: one to run next, one last.
        q.push(0, 1001);
        q.push(100, 1000);
        assert_eq!(q.pop(), Some((0, 1001)));
        while !q.is_empty() {
            pop(&mut q, &mut got);
        }
        assert!(!q.big());
        assert_eq!(q.pop(), None);
        assert_eq!(got, want);
    }

    proptest::proptest! {
        /// Any interleaving of pushes and pops gives the order of a sorted list by
        /// (time, push order), across a sequence wrap too, with the keys in either form
        /// and changing form (runs that push more than they pop take them past
        /// `SORTED_MAX`, and pops back to `SORTED_MIN`).
        #[test]
        fn pops_as_a_sorted_list_would(
            ops in proptest::collection::vec((0u64..20, 0u8..10), 1..600),
            push_in_10 in 3u8..8,
            near_wrap in proptest::bool::ANY,
        ) {
            let mut q = EventQueue::new();
            if near_wrap {
                q.next_seq = LOW as u64 - 50;
            }
            let mut model: Vec<(u64, usize)> = Vec::new();
            for (n, &(t, r)) in ops.iter().enumerate() {
                if r < push_in_10 || model.is_empty() {
                    q.push(t, n);
                    model.push((t, n));
                    proptest::prop_assert_eq!(q.len(), model.len());
                    proptest::prop_assert!(q.sorted.len() <= SORTED_MAX);
                    proptest::prop_assert!(!q.big() || q.sorted.is_empty());
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
            proptest::prop_assert!(!q.big(), "an empty queue's keys are a sorted vector");
        }
    }
}
