//! A map from `u64` keys to `u32` values for hot paths that look up small sets by
//! number (mq-deadline's hash of requests by end sector): open addressing with linear
//! probing in two flat arrays, Fibonacci hashing (the key times 2^64 / phi, its top
//! bits), at most half full, and deletion by backward shift (no tombstones, so a
//! lookup stops at the first empty slot however long the run has been). A lookup is a
//! multiply, a shift and usually one compare; the standard library's map hashes,
//! groups and matches control bytes.
//!
//! Nothing iterates it, so its layout (which depends on the order of insertion) cannot
//! reach a result.

/// An empty slot's value; not a value the map may hold.
const EMPTY: u32 = u32::MAX;
/// The first table's slots (a power of two).
const FIRST_SLOTS: usize = 64;

#[derive(Clone, Debug)]
pub struct IntMap {
    keys: Vec<u64>,
    /// `EMPTY` where no key is.
    vals: Vec<u32>,
    len: usize,
    /// 64 - log2(slots): a key's home is the top bits of its product.
    shift: u32,
}

impl Default for IntMap {
    fn default() -> Self {
        IntMap::with_slots(FIRST_SLOTS)
    }
}

impl IntMap {
    fn with_slots(slots: usize) -> IntMap {
        debug_assert!(slots.is_power_of_two() && slots >= 2);
        IntMap {
            keys: vec![0; slots],
            vals: vec![EMPTY; slots],
            len: 0,
            shift: 64 - slots.trailing_zeros(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.vals.len() - 1
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The slot holding `key`, or the empty slot that ends its probe.
    #[inline(always)]
    fn slot(&self, key: u64) -> usize {
        let mask = self.mask();
        let mut i = self.home(key);
        while self.vals[i] != EMPTY && self.keys[i] != key {
            i = (i + 1) & mask;
        }
        i
    }

    #[inline]
    pub fn get(&self, key: u64) -> Option<u32> {
        let v = self.vals[self.slot(key)];
        (v != EMPTY).then_some(v)
    }

    /// Sets `key` to `val` (which must not be `u32::MAX`); returns the value it replaced.
    #[inline]
    pub fn insert(&mut self, key: u64, val: u32) -> Option<u32> {
        assert!(val != EMPTY, "u32::MAX marks an empty slot");
        let i = self.slot(key);
        let old = self.vals[i];
        if old != EMPTY {
            self.vals[i] = val;
            return Some(old);
        }
        if 2 * (self.len + 1) > self.vals.len() {
            self.grow();
            let i = self.slot(key);
            self.keys[i] = key;
            self.vals[i] = val;
        } else {
            self.keys[i] = key;
            self.vals[i] = val;
        }
        self.len += 1;
        None
    }

    /// Removes `key`; returns its value. The entries after it in its run move back into
    /// the hole where their probe passes it, so every probe still ends at an empty slot.
    #[inline]
    pub fn remove(&mut self, key: u64) -> Option<u32> {
        let mut hole = self.slot(key);
        let v = self.vals[hole];
        if v == EMPTY {
            return None;
        }
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            if self.vals[j] == EMPTY {
                break;
            }
            // The entry at j may fill the hole if its home is not between the hole
            // (exclusive) and j, cyclically: its probe from home passes the hole.
            let from_home = j.wrapping_sub(self.home(self.keys[j])) & mask;
            if from_home >= (j.wrapping_sub(hole) & mask) {
                self.keys[hole] = self.keys[j];
                self.vals[hole] = self.vals[j];
                hole = j;
            }
        }
        self.vals[hole] = EMPTY;
        self.len -= 1;
        Some(v)
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut bigger = IntMap::with_slots(self.vals.len() * 2);
        for (&k, &v) in self.keys.iter().zip(&self.vals) {
            if v != EMPTY {
                let i = bigger.slot(k);
                bigger.keys[i] = k;
                bigger.vals[i] = v;
                bigger.len += 1;
            }
        }
        *self = bigger;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn insert_get_replace_remove() {
        let mut m = IntMap::default();
        assert_eq!(m.get(8), None);
        assert_eq!(m.insert(8, 1), None);
        assert_eq!(m.insert(8, 2), Some(1));
        assert_eq!(m.get(8), Some(2));
        assert_eq!(m.len(), 1);
        assert_eq!(m.remove(8), Some(2));
        assert_eq!(m.remove(8), None);
        assert!(m.is_empty());
        // Key 0 is a key like any other.
        m.insert(0, 7);
        assert_eq!(m.get(0), Some(7));
    }

    #[test]
    fn grows_past_half_full_and_keeps_every_key() {
        let mut m = IntMap::default();
        for k in 0..1000u64 {
            m.insert(k * 8, k as u32);
        }
        assert!(m.vals.len() >= 2000);
        for k in 0..1000u64 {
            assert_eq!(m.get(k * 8), Some(k as u32));
        }
    }

    /// Keys that all share a home: one long run, with removals from its middle and its
    /// start, and a run that wraps past the table's end.
    #[test]
    fn removal_inside_a_run_and_across_the_end_keeps_the_rest_reachable() {
        let probe = IntMap::default();
        let same_home = |slot: usize| -> Vec<u64> {
            (0u64..)
                .filter(|&k| probe.home(k) == slot)
                .take(20)
                .collect()
        };
        for slot in [3, probe.mask()] {
            let keys = same_home(slot);
            let mut m = IntMap::default();
            for (i, &k) in keys.iter().enumerate() {
                m.insert(k, i as u32);
            }
            for &gone in &[keys[0], keys[7], keys[19]] {
                m.remove(gone);
            }
            for (i, &k) in keys.iter().enumerate() {
                let want = (![0, 7, 19].contains(&i)).then_some(i as u32);
                assert_eq!(m.get(k), want, "home {slot} key {k}");
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u32),
        Remove(u64),
        Get(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few distinct keys (so operations meet), sector-like multiples and arbitrary.
        let key = prop_oneof![(0u64..40).prop_map(|k| k * 8), any::<u64>()];
        prop_oneof![
            (key.clone(), 0u32..u32::MAX).prop_map(|(k, v)| Op::Insert(k, v)),
            key.clone().prop_map(Op::Remove),
            key.prop_map(Op::Get),
        ]
    }

    proptest! {
        /// Any sequence of operations answers as the standard library's map does.
        #[test]
        fn agrees_with_a_hash_map(ops in proptest::collection::vec(op(), 0..600)) {
            let mut m = IntMap::default();
            let mut want = HashMap::new();
            for o in ops {
                match o {
                    Op::Insert(k, v) => prop_assert_eq!(m.insert(k, v), want.insert(k, v)),
                    Op::Remove(k) => prop_assert_eq!(m.remove(k), want.remove(&k)),
                    Op::Get(k) => prop_assert_eq!(m.get(k), want.get(&k).copied()),
                }
                prop_assert_eq!(m.len(), want.len());
            }
            for (&k, &v) in &want {
                prop_assert_eq!(m.get(k), Some(v));
            }
        }
    }
}
