//! The controller's L2P map cache: whole map segments (one NAND map page each, e.g.
//! 4096 entries × 4 B = 16 KiB covering 16 MiB of LBAs) held in SRAM, least recently
//! used evicted first. Only which segments are cached (and dirty) is modelled here; the
//! device charges the NAND read of a miss and the write-back of a dirty segment, when
//! it is evicted or when more segments are dirty than the firmware allows (the oldest
//! dirty one is written back first).
//!
//! Memory: two `u32` per segment of the whole LBA space (16 KiB per 64 GiB of user
//! capacity at 16 MiB per segment) plus a few words per cache slot.

use std::collections::VecDeque;

const NONE: u32 = u32::MAX;

/// Outcome of an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapAccess {
    Hit,
    /// The segment had to be loaded; `evicted` names a dirty segment that was pushed
    /// out and must be written back.
    Miss {
        evicted_dirty: Option<u32>,
    },
}

pub struct MapCache {
    /// segment → cache slot or NONE.
    slot_of: Vec<u32>,
    seg: Vec<u32>,
    dirty: Vec<bool>,
    /// Segments in the order they became dirty (may hold stale entries: segments since
    /// cleaned or evicted, skipped when popped).
    dirty_order: VecDeque<u32>,
    dirty_count: u32,
    prev: Vec<u32>,
    next: Vec<u32>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    used: u32,
}

impl MapCache {
    pub fn new(segments: u32, capacity: u32) -> MapCache {
        assert!(capacity > 0);
        let cap = capacity.min(segments.max(1)) as usize;
        MapCache {
            slot_of: vec![NONE; segments as usize],
            seg: vec![NONE; cap],
            dirty: vec![false; cap],
            dirty_order: VecDeque::with_capacity(2 * cap),
            dirty_count: 0,
            prev: vec![NONE; cap],
            next: vec![NONE; cap],
            head: NONE,
            tail: NONE,
            used: 0,
        }
    }

    pub fn capacity(&self) -> u32 {
        self.seg.len() as u32
    }

    pub fn contains(&self, segment: u32) -> bool {
        self.slot_of[segment as usize] != NONE
    }

    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p != NONE {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NONE;
        self.next[s as usize] = self.head;
        if self.head != NONE {
            self.prev[self.head as usize] = s;
        }
        self.head = s;
        if self.tail == NONE {
            self.tail = s;
        }
    }

    /// Uses `segment` (marking it dirty if `dirty`), loading it on a miss.
    #[inline]
    pub fn access(&mut self, segment: u32, dirty: bool) -> MapAccess {
        let s = self.slot_of[segment as usize];
        if s != NONE {
            if self.head != s {
                self.unlink(s);
                self.push_front(s);
            }
            if dirty && !self.dirty[s as usize] {
                self.mark_dirty(s, segment);
            }
            return MapAccess::Hit;
        }
        let mut evicted_dirty = None;
        let s = if self.used < self.capacity() {
            self.used += 1;
            self.used - 1
        } else {
            let victim = self.tail;
            self.unlink(victim);
            let old = self.seg[victim as usize];
            self.slot_of[old as usize] = NONE;
            if self.dirty[victim as usize] {
                self.dirty[victim as usize] = false;
                self.dirty_count -= 1;
                evicted_dirty = Some(old);
            }
            victim
        };
        self.seg[s as usize] = segment;
        self.dirty[s as usize] = false;
        self.slot_of[segment as usize] = s;
        self.push_front(s);
        if dirty {
            self.mark_dirty(s, segment);
        }
        MapAccess::Miss { evicted_dirty }
    }

    fn mark_dirty(&mut self, slot: u32, segment: u32) {
        self.dirty[slot as usize] = true;
        self.dirty_count += 1;
        if self.dirty_order.len() >= 2 * self.seg.len() {
            // Drop stale entries (amortised: at most once per capacity transitions).
            let (slot_of, dirty) = (&self.slot_of, &self.dirty);
            self.dirty_order.retain(|&g| {
                let s = slot_of[g as usize];
                s != NONE && dirty[s as usize]
            });
        }
        self.dirty_order.push_back(segment);
    }

    /// Cleans the segment that has been dirty longest and returns it (for write-back).
    pub fn pop_oldest_dirty(&mut self) -> Option<u32> {
        while let Some(g) = self.dirty_order.pop_front() {
            let s = self.slot_of[g as usize];
            if s != NONE && self.dirty[s as usize] {
                self.dirty[s as usize] = false;
                self.dirty_count -= 1;
                return Some(g);
            }
        }
        None
    }

    /// Cached segments that are dirty.
    pub fn dirty_count(&self) -> u32 {
        self.dirty_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_least_recent_and_reports_dirty() {
        let mut c = MapCache::new(10, 2);
        assert_eq!(
            c.access(1, false),
            MapAccess::Miss {
                evicted_dirty: None
            }
        );
        assert_eq!(
            c.access(2, true),
            MapAccess::Miss {
                evicted_dirty: None
            }
        );
        assert_eq!(c.access(1, false), MapAccess::Hit);
        // 2 is now least recent and dirty.
        assert_eq!(
            c.access(3, false),
            MapAccess::Miss {
                evicted_dirty: Some(2)
            }
        );
        assert!(c.contains(1) && c.contains(3) && !c.contains(2));
        assert_eq!(
            c.access(4, false),
            MapAccess::Miss {
                evicted_dirty: None
            }
        );
        assert!(!c.contains(1));
    }
}
