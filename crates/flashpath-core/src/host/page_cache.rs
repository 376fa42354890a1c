//! The page cache of buffered I/O: 4 KiB pages keyed by their index on the block device.
//!
//! The jobs do I/O on the raw block device (one inode: the bdev's mapping), so a page is
//! named by `byte offset / 4096` on the device. No filesystem is modelled: no file
//! layout, no metadata, no journal; fsync writes the device's dirty pages and flushes.
//!
//! Page states (the page flags that matter here):
//! - absent: not in the cache (not in the map);
//! - `Locked`: allocated and being filled by a read bio (PG_locked, !PG_uptodate);
//! - `Clean`: uptodate and equal to the device (PG_uptodate);
//! - `Dirty`: newer than the device (PG_dirty);
//! - `Writeback`: being written (PG_writeback), `redirty` if written again meanwhile
//!   (PG_dirty set again: the page is written once more later; block devices do not
//!   require stable pages, so the writer does not wait).
//!
//! An LRU (one list: Linux's active/inactive split is left out) bounds the cache at its
//! capacity; eviction takes the least recently used clean page that is not locked:
//! dirty and writeback pages are never dropped (they must be written first). The
//! PG_readahead mark is kept per page for on-demand readahead.
//! Units: pages (4 KiB), nanoseconds.

use crate::engine::SimTime;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Page size (PAGE_SIZE on arm64/x86 with 4 KiB pages).
pub const PAGE: u64 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageState {
    Locked,
    Clean,
    Dirty,
    Writeback { redirty: bool },
}

impl PageState {
    /// The page holds valid data (a read may copy from it).
    pub fn uptodate(self) -> bool {
        self != PageState::Locked
    }
}

#[derive(Clone, Copy, Debug)]
struct Page {
    state: PageState,
    stamp: u64,
    readahead: bool,
    /// The job thread that last dirtied the page (writeback is attributed to it).
    owner: u32,
}

/// Why a page could not be allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheFull;

pub struct PageCache {
    pages: HashMap<u64, Page>,
    /// LRU order: stamp → page index (oldest first).
    lru: BTreeMap<u64, u64>,
    next_stamp: u64,
    /// Dirty pages (state `Dirty`) in index order, for writeback in offset order.
    dirty_set: BTreeSet<u64>,
    capacity: u64,
    writeback: u64,
    /// When the inode went from clean to dirty (`inode->dirtied_when`).
    dirtied_when: Option<SimTime>,
    pub evictions: u64,
}

impl PageCache {
    /// A cache of `capacity` pages (at least 1).
    pub fn new(capacity: u64) -> Self {
        assert!(capacity > 0, "a page cache holds at least one page");
        PageCache {
            pages: HashMap::new(),
            lru: BTreeMap::new(),
            next_stamp: 0,
            dirty_set: BTreeSet::new(),
            capacity,
            writeback: 0,
            dirtied_when: None,
            evictions: 0,
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    pub fn len(&self) -> u64 {
        self.pages.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }
    /// Pages in state `Dirty` (NR_FILE_DIRTY).
    pub fn dirty(&self) -> u64 {
        self.dirty_set.len() as u64
    }
    /// Pages under writeback (NR_WRITEBACK).
    pub fn writeback(&self) -> u64 {
        self.writeback
    }
    pub fn dirtied_when(&self) -> Option<SimTime> {
        self.dirtied_when
    }

    pub fn state(&self, idx: u64) -> Option<PageState> {
        self.pages.get(&idx).map(|p| p.state)
    }

    pub fn owner(&self, idx: u64) -> Option<u32> {
        self.pages.get(&idx).map(|p| p.owner)
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    /// mark_page_accessed: the page becomes the most recently used.
    pub fn touch(&mut self, idx: u64) {
        let s = self.stamp();
        if let Some(p) = self.pages.get_mut(&idx) {
            self.lru.remove(&p.stamp);
            p.stamp = s;
            self.lru.insert(s, idx);
        }
    }

    /// Drops the least recently used clean, unlocked page; false if there is none.
    fn evict_one(&mut self) -> bool {
        let victim = self
            .lru
            .iter()
            .find(|(_, idx)| self.pages[idx].state == PageState::Clean)
            .map(|(&s, &idx)| (s, idx));
        match victim {
            Some((s, idx)) => {
                self.lru.remove(&s);
                self.pages.remove(&idx);
                self.evictions += 1;
                true
            }
            None => false,
        }
    }

    /// Allocates an absent page in `state` (`Locked` for a read, `Dirty` for a write
    /// that covers it whole), evicting a clean page if the cache is full.
    fn insert(&mut self, idx: u64, state: PageState, owner: u32) -> Result<(), CacheFull> {
        debug_assert!(!self.pages.contains_key(&idx));
        if self.len() >= self.capacity && !self.evict_one() {
            return Err(CacheFull);
        }
        let stamp = self.stamp();
        self.pages.insert(
            idx,
            Page {
                state,
                stamp,
                readahead: false,
                owner,
            },
        );
        self.lru.insert(stamp, idx);
        Ok(())
    }

    /// add_to_page_cache_lru for a read: absent → Locked.
    pub fn insert_locked(&mut self, idx: u64) -> Result<(), CacheFull> {
        self.insert(idx, PageState::Locked, u32::MAX)
    }

    /// The read that filled the page ended: Locked → Clean (unlock_page, SetPageUptodate).
    pub fn fill_done(&mut self, idx: u64) {
        let p = self.pages.get_mut(&idx).expect("filled page is cached");
        assert_eq!(p.state, PageState::Locked, "only a locked page is filled");
        p.state = PageState::Clean;
    }

    pub fn set_readahead(&mut self, idx: u64) {
        if let Some(p) = self.pages.get_mut(&idx) {
            p.readahead = true;
        }
    }

    pub fn has_readahead(&self, idx: u64) -> bool {
        self.pages.get(&idx).is_some_and(|p| p.readahead)
    }

    /// TestClearPageReadahead.
    pub fn take_readahead(&mut self, idx: u64) -> bool {
        match self.pages.get_mut(&idx) {
            Some(p) => std::mem::take(&mut p.readahead),
            None => false,
        }
    }

    /// A write copied into the page (set_page_dirty): absent (whole-page write) or
    /// Clean → Dirty; Writeback → redirty; Dirty stays. Locked pages must be waited for
    /// first. Returns whether the page became newly dirty.
    pub fn write(&mut self, idx: u64, owner: u32, now: SimTime) -> Result<bool, CacheFull> {
        let state = self.state(idx);
        let newly = match state {
            None => {
                self.insert(idx, PageState::Dirty, owner)?;
                true
            }
            Some(PageState::Locked) => panic!("writing a locked page"),
            Some(PageState::Clean) => {
                self.pages.get_mut(&idx).expect("cached").state = PageState::Dirty;
                true
            }
            Some(PageState::Dirty) => false,
            Some(PageState::Writeback { .. }) => {
                self.pages.get_mut(&idx).expect("cached").state =
                    PageState::Writeback { redirty: true };
                false
            }
        };
        if let Some(p) = self.pages.get_mut(&idx) {
            p.owner = owner;
        }
        if newly {
            self.dirty_set.insert(idx);
            if self.dirtied_when.is_none() {
                self.dirtied_when = Some(now);
            }
        }
        self.touch(idx);
        Ok(newly)
    }

    /// The first dirty page at or after `from`.
    pub fn next_dirty(&self, from: u64) -> Option<u64> {
        self.dirty_set.range(from..).next().copied()
    }

    /// clear_page_dirty_for_io + set_page_writeback: Dirty → Writeback. Returns the
    /// page's owner.
    pub fn start_writeback(&mut self, idx: u64) -> u32 {
        let p = self.pages.get_mut(&idx).expect("dirty page is cached");
        assert_eq!(
            p.state,
            PageState::Dirty,
            "only a dirty page is written back"
        );
        p.state = PageState::Writeback { redirty: false };
        self.dirty_set.remove(&idx);
        self.writeback += 1;
        if self.dirty_set.is_empty() {
            self.dirtied_when = None;
        }
        p.owner
    }

    /// end_page_writeback: Writeback → Clean, or Dirty if it was written meanwhile.
    pub fn end_writeback(&mut self, idx: u64, now: SimTime) {
        let p = self
            .pages
            .get_mut(&idx)
            .expect("page under writeback is cached");
        let PageState::Writeback { redirty } = p.state else {
            panic!("end of writeback of a page not under writeback");
        };
        self.writeback -= 1;
        if redirty {
            p.state = PageState::Dirty;
            self.dirty_set.insert(idx);
            if self.dirtied_when.is_none() {
                self.dirtied_when = Some(now);
            }
        } else {
            p.state = PageState::Clean;
        }
    }

    /// Pages under writeback in `lo..hi`.
    pub fn writeback_in(&self, lo: u64, hi: u64) -> u64 {
        if self.writeback == 0 {
            return 0;
        }
        (lo..hi)
            .filter(|i| matches!(self.state(*i), Some(PageState::Writeback { .. })))
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_fill_then_clean() {
        let mut c = PageCache::new(4);
        assert_eq!(c.state(7), None);
        c.insert_locked(7).unwrap();
        assert_eq!(c.state(7), Some(PageState::Locked));
        assert!(!PageState::Locked.uptodate());
        c.fill_done(7);
        assert_eq!(c.state(7), Some(PageState::Clean));
        assert!(PageState::Clean.uptodate());
    }

    #[test]
    fn every_write_and_writeback_transition() {
        let mut c = PageCache::new(8);
        // absent → Dirty
        assert_eq!(c.write(1, 3, 10), Ok(true));
        assert_eq!(c.state(1), Some(PageState::Dirty));
        assert_eq!(c.dirtied_when(), Some(10));
        // Dirty → Dirty (not newly)
        assert_eq!(c.write(1, 3, 20), Ok(false));
        assert_eq!(c.dirty(), 1);
        // Clean → Dirty
        c.insert_locked(2).unwrap();
        c.fill_done(2);
        assert_eq!(c.write(2, 4, 30), Ok(true));
        assert_eq!(c.dirty(), 2);
        assert_eq!(c.next_dirty(0), Some(1));
        assert_eq!(c.next_dirty(2), Some(2));
        // Dirty → Writeback
        assert_eq!(c.start_writeback(1), 3);
        assert_eq!(c.state(1), Some(PageState::Writeback { redirty: false }));
        assert_eq!((c.dirty(), c.writeback()), (1, 1));
        // Writeback → Clean
        c.end_writeback(1, 40);
        assert_eq!(c.state(1), Some(PageState::Clean));
        // Writeback → Writeback{redirty} → Dirty
        assert_eq!(c.start_writeback(2), 4);
        assert_eq!(c.dirtied_when(), None);
        assert_eq!(c.write(2, 5, 50), Ok(false));
        assert_eq!(c.state(2), Some(PageState::Writeback { redirty: true }));
        assert_eq!(c.writeback_in(0, 8), 1);
        c.end_writeback(2, 60);
        assert_eq!(c.state(2), Some(PageState::Dirty));
        assert_eq!(c.dirtied_when(), Some(60));
        assert_eq!(c.owner(2), Some(5));
    }

    #[test]
    fn lru_evicts_oldest_clean_never_dirty_or_locked() {
        let mut c = PageCache::new(3);
        c.write(0, 0, 0).unwrap(); // dirty, oldest
        c.insert_locked(1).unwrap(); // locked
        c.insert_locked(2).unwrap();
        c.fill_done(2); // clean
        c.insert_locked(3).unwrap(); // evicts 2: the only clean page
        assert_eq!(c.state(2), None);
        assert_eq!(c.evictions, 1);
        assert_eq!(c.state(0), Some(PageState::Dirty));
        // Nothing clean: no room.
        assert_eq!(c.insert_locked(4), Err(CacheFull));
        assert_eq!(c.write(5, 0, 0), Err(CacheFull));
        c.fill_done(1);
        c.fill_done(3);
        c.touch(1); // 3 is now the least recently used clean page
        c.insert_locked(4).unwrap();
        assert_eq!(c.state(3), None);
        assert_eq!(c.state(1), Some(PageState::Clean));
        // Writeback pages are not evicted either.
        c.start_writeback(0);
        c.fill_done(4);
        c.touch(4);
        c.insert_locked(6).unwrap(); // evicts 1 (oldest clean), not 0 (writeback)
        assert_eq!(c.state(1), None);
        assert!(matches!(c.state(0), Some(PageState::Writeback { .. })));
    }

    #[test]
    fn readahead_mark_is_taken_once() {
        let mut c = PageCache::new(2);
        c.insert_locked(9).unwrap();
        c.set_readahead(9);
        assert!(c.take_readahead(9));
        assert!(!c.take_readahead(9));
        assert!(!c.take_readahead(10));
    }
}
