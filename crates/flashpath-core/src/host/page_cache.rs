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
//! capacity; eviction takes the least recently used clean page. Dirty and writeback
//! pages are never dropped (they must be written first), nor locked ones. Reclaim walks
//! from the oldest page, and a page it cannot drop goes to the young end, as
//! mm/vmscan.c's shrink_folio_list does with it: a dirty or writeback page is
//! activated with PG_reclaim set (`activate_locked`), and a locked one put back
//! (`keep`). When the writeback of a PG_reclaim page ends and leaves it clean, it goes
//! to the old end, the next to be reclaimed (folio_end_writeback's
//! folio_rotate_reclaimable). So reclaim meets each page it skips once, not at every
//! eviction. The PG_readahead mark is kept per page for on-demand readahead.
//! Units: pages (4 KiB), nanoseconds.
//!
//! Memory: a cached page costs its 24-byte slot (index, LRU links, owner, flags) and
//! its entry in the index, a hash table of 4-byte slot numbers (about 36 bytes a page
//! in all, with the table's room; a full 8 GiB cache, 2.1 M pages, about 74 MB). The LRU is a doubly linked list
//! through the slots, so touching a page or evicting one allocates nothing. Freed slots
//! are reused, never given back: the cache's memory is its high-water mark, at most
//! its capacity's. (Slot numbers are 32 bits: 2^32 cached pages, a 16 TiB cache,
//! would need about 100 GiB of this process's memory first.)

use crate::engine::SimTime;
use hashbrown::HashTable;
use std::collections::BTreeSet;

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

/// No slot: the end of the LRU list or of the free list.
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Page {
    /// The page's index on the device.
    idx: u64,
    /// The LRU neighbours: `prev` is the next older page, `next` the next newer one
    /// (NIL at the ends). A free slot's `next` is the next free slot.
    prev: u32,
    next: u32,
    /// The job thread that last dirtied the page (writeback is attributed to it).
    owner: u32,
    state: PageState,
    readahead: bool,
    /// PG_reclaim: reclaim met the page dirty or under writeback.
    reclaim: bool,
}

/// Why a page could not be allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheFull;

/// The hash of a page index: a folded 64×64→128-bit multiply, which mixes the index's
/// bits into both the table's bucket (low bits) and its tag (high bits). Nothing
/// iterates the table, so the hash decides no output.
#[inline]
fn hash(idx: u64) -> u64 {
    let m = u128::from(idx).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (m as u64) ^ ((m >> 64) as u64)
}

pub struct PageCache {
    /// Cached pages' slots, found by page index.
    index: HashTable<u32>,
    slots: Vec<Page>,
    /// The first free slot (NIL: none; new ones are pushed).
    free: u32,
    /// The least and the most recently used page (NIL when the cache is empty).
    oldest: u32,
    newest: u32,
    /// Pages in state `Clean` (the ones reclaim may drop).
    clean: u64,
    /// Dirty pages (state `Dirty`) in index order, for writeback in offset order.
    dirty_set: BTreeSet<u64>,
    capacity: u64,
    writeback: u64,
    /// When the inode went from clean to dirty (`inode->dirtied_when`).
    dirtied_when: Option<SimTime>,
    pub evictions: u64,
    /// Pages reclaim looked at, dropped or not (/proc/vmstat's pgscan).
    pub scanned: u64,
}

impl PageCache {
    /// A cache of `capacity` pages (at least 1).
    pub fn new(capacity: u64) -> Self {
        assert!(capacity > 0, "a page cache holds at least one page");
        PageCache {
            index: HashTable::new(),
            slots: Vec::new(),
            free: NIL,
            oldest: NIL,
            newest: NIL,
            clean: 0,
            dirty_set: BTreeSet::new(),
            capacity,
            writeback: 0,
            dirtied_when: None,
            evictions: 0,
            scanned: 0,
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    pub fn len(&self) -> u64 {
        self.index.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
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

    /// The slot of cached page `idx`.
    #[inline]
    fn slot(&self, idx: u64) -> Option<u32> {
        let slots = &self.slots;
        self.index
            .find(hash(idx), |&s| slots[s as usize].idx == idx)
            .copied()
    }

    #[inline]
    fn get(&self, idx: u64) -> Option<&Page> {
        self.slot(idx).map(|s| &self.slots[s as usize])
    }

    #[inline]
    fn get_mut(&mut self, idx: u64) -> Option<&mut Page> {
        self.slot(idx).map(|s| &mut self.slots[s as usize])
    }

    pub fn state(&self, idx: u64) -> Option<PageState> {
        self.get(idx).map(|p| p.state)
    }

    pub fn owner(&self, idx: u64) -> Option<u32> {
        self.get(idx).map(|p| p.owner)
    }

    /// Takes slot `s` out of the LRU list.
    fn unlink(&mut self, s: u32) {
        let Page { prev, next, .. } = self.slots[s as usize];
        match prev {
            NIL => self.oldest = next,
            p => self.slots[p as usize].next = next,
        }
        match next {
            NIL => self.newest = prev,
            n => self.slots[n as usize].prev = prev,
        }
    }

    /// Puts slot `s` into the LRU list between `prev` (older; NIL: none) and `next`
    /// (newer; NIL: none), which are neighbours.
    fn link(&mut self, s: u32, prev: u32, next: u32) {
        let p = &mut self.slots[s as usize];
        p.prev = prev;
        p.next = next;
        match prev {
            NIL => self.oldest = s,
            p => self.slots[p as usize].next = s,
        }
        match next {
            NIL => self.newest = s,
            n => self.slots[n as usize].prev = s,
        }
    }

    /// mark_page_accessed: the page becomes the most recently used.
    pub fn touch(&mut self, idx: u64) {
        if let Some(s) = self.slot(idx) {
            self.make_newest(s);
        }
    }

    fn make_newest(&mut self, s: u32) {
        if s != self.newest {
            self.unlink(s);
            self.link(s, self.newest, NIL);
        }
    }

    /// Drops the least recently used clean page; false if there is none. The pages it
    /// meets before it go to the young end (dirty and writeback ones marked PG_reclaim).
    fn evict_one(&mut self) -> bool {
        if self.clean == 0 {
            return false;
        }
        let s = loop {
            let s = self.oldest;
            self.scanned += 1;
            let p = &mut self.slots[s as usize];
            match p.state {
                PageState::Clean => break s,
                PageState::Dirty | PageState::Writeback { .. } => p.reclaim = true,
                PageState::Locked => {}
            }
            self.make_newest(s);
        };
        self.unlink(s);
        let idx = self.slots[s as usize].idx;
        let slots = &self.slots;
        self.index
            .find_entry(hash(idx), |&x| slots[x as usize].idx == idx)
            .expect("an evicted page is indexed")
            .remove();
        self.slots[s as usize].next = self.free;
        self.free = s;
        self.clean -= 1;
        self.evictions += 1;
        true
    }

    /// Allocates an absent page in `state` (`Locked` for a read, `Dirty` for a write
    /// that covers it whole), evicting a clean page if the cache is full.
    fn insert(&mut self, idx: u64, state: PageState, owner: u32) -> Result<(), CacheFull> {
        debug_assert!(self.slot(idx).is_none());
        if self.len() >= self.capacity && !self.evict_one() {
            return Err(CacheFull);
        }
        let page = Page {
            idx,
            prev: NIL,
            next: NIL,
            owner,
            state,
            readahead: false,
            reclaim: false,
        };
        let s = match self.free {
            NIL => {
                let s = u32::try_from(self.slots.len())
                    .ok()
                    .filter(|&s| s != NIL)
                    .expect("fewer than 2^32 - 1 cached pages");
                self.slots.push(page);
                s
            }
            s => {
                self.free = self.slots[s as usize].next;
                self.slots[s as usize] = page;
                s
            }
        };
        self.link(s, self.newest, NIL);
        let slots = &self.slots;
        self.index
            .insert_unique(hash(idx), s, |&x| hash(slots[x as usize].idx));
        Ok(())
    }

    /// add_to_page_cache_lru for a read: absent → Locked.
    pub fn insert_locked(&mut self, idx: u64) -> Result<(), CacheFull> {
        self.insert(idx, PageState::Locked, u32::MAX)
    }

    /// The read that filled the page ended: Locked → Clean (unlock_page, SetPageUptodate).
    pub fn fill_done(&mut self, idx: u64) {
        let p = self.get_mut(idx).expect("filled page is cached");
        assert_eq!(p.state, PageState::Locked, "only a locked page is filled");
        p.state = PageState::Clean;
        self.clean += 1;
    }

    pub fn set_readahead(&mut self, idx: u64) {
        if let Some(p) = self.get_mut(idx) {
            p.readahead = true;
        }
    }

    pub fn has_readahead(&self, idx: u64) -> bool {
        self.get(idx).is_some_and(|p| p.readahead)
    }

    /// TestClearPageReadahead.
    pub fn take_readahead(&mut self, idx: u64) -> bool {
        match self.get_mut(idx) {
            Some(p) => std::mem::take(&mut p.readahead),
            None => false,
        }
    }

    /// A write copied into the page (set_page_dirty): absent (whole-page write) or
    /// Clean → Dirty; Writeback → redirty; Dirty stays. Locked pages must be waited for
    /// first. Returns whether the page became newly dirty.
    pub fn write(&mut self, idx: u64, owner: u32, now: SimTime) -> Result<bool, CacheFull> {
        let newly = match self.slot(idx) {
            None => {
                self.insert(idx, PageState::Dirty, owner)?;
                true
            }
            Some(s) => {
                let p = &mut self.slots[s as usize];
                let newly = match p.state {
                    PageState::Locked => panic!("writing a locked page"),
                    PageState::Clean => {
                        p.state = PageState::Dirty;
                        self.clean -= 1;
                        true
                    }
                    PageState::Dirty => false,
                    PageState::Writeback { .. } => {
                        p.state = PageState::Writeback { redirty: true };
                        false
                    }
                };
                p.owner = owner;
                self.make_newest(s);
                newly
            }
        };
        if newly {
            self.dirty_set.insert(idx);
            if self.dirtied_when.is_none() {
                self.dirtied_when = Some(now);
            }
        }
        Ok(newly)
    }

    /// The first dirty page at or after `from`.
    pub fn next_dirty(&self, from: u64) -> Option<u64> {
        self.dirty_set.range(from..).next().copied()
    }

    /// clear_page_dirty_for_io + set_page_writeback: Dirty → Writeback. Returns the
    /// page's owner.
    pub fn start_writeback(&mut self, idx: u64) -> u32 {
        let s = self.slot(idx).expect("dirty page is cached");
        let p = &mut self.slots[s as usize];
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
    /// PG_reclaim is cleared; a page that had it and is now clean goes to the old end.
    pub fn end_writeback(&mut self, idx: u64, now: SimTime) {
        let s = self.slot(idx).expect("page under writeback is cached");
        let p = &mut self.slots[s as usize];
        let PageState::Writeback { redirty } = p.state else {
            panic!("end of writeback of a page not under writeback");
        };
        let reclaim = std::mem::take(&mut p.reclaim);
        self.writeback -= 1;
        if redirty {
            p.state = PageState::Dirty;
            self.dirty_set.insert(idx);
            if self.dirtied_when.is_none() {
                self.dirtied_when = Some(now);
            }
        } else {
            p.state = PageState::Clean;
            self.clean += 1;
            if reclaim && s != self.oldest {
                self.unlink(s);
                self.link(s, NIL, self.oldest);
            }
        }
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
        assert_eq!(c.writeback(), 1);
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
    fn reclaim_moves_what_it_skips_to_the_young_end_and_written_back_pages_to_the_old() {
        let mut c = PageCache::new(4);
        c.write(0, 0, 0).unwrap(); // dirty, oldest
        c.write(1, 0, 0).unwrap(); // dirty
        c.start_writeback(1);
        c.insert_locked(2).unwrap(); // clean once filled
        c.fill_done(2);
        c.insert_locked(3).unwrap(); // locked
                                     // Full: reclaim skips 0 and 1 (PG_reclaim) to drop 2, the oldest clean page.
        c.insert_locked(4).unwrap();
        assert_eq!(c.state(2), None);
        let order = |c: &PageCache| {
            let mut v = Vec::new();
            let mut s = c.oldest;
            while s != NIL {
                v.push((c.slots[s as usize].idx, c.slots[s as usize].reclaim));
                s = c.slots[s as usize].next;
            }
            v
        };
        assert_eq!(order(&c), [(3, false), (0, true), (1, true), (4, false)]);
        // The end of 1's writeback leaves it clean: it goes to the old end, next out.
        c.end_writeback(1, 5);
        assert_eq!(order(&c)[0], (1, false));
        c.fill_done(3);
        c.insert_locked(5).unwrap();
        assert_eq!(c.state(1), None);
        // Nothing clean: refused at once, nothing moved.
        c.write(3, 0, 6).unwrap();
        let before = order(&c);
        assert_eq!(c.insert_locked(6), Err(CacheFull));
        assert_eq!(order(&c), before);
    }

    #[test]
    fn reclaim_meets_a_dirty_page_once_per_pass_through_the_cache() {
        // 100 dirty pages at the old end of a cache of 1,000, then 10,000 pages read
        // through it. Reclaim moves the dirty pages to the young end when it meets
        // them, so it meets them again only once the 900 pages after them have gone:
        // once per 900 evictions (11 passes for 9,100), where walking past them at
        // every eviction would look at 910,000 pages more.
        let mut c = PageCache::new(1000);
        for i in 0..100 {
            c.write(i, 0, 0).unwrap();
        }
        for i in 100..10_100 {
            c.insert_locked(i).unwrap();
            c.fill_done(i);
        }
        assert_eq!(c.evictions, 9_100);
        assert_eq!(c.scanned, 9_100 + 100 * 9_100u64.div_ceil(900));
        assert_eq!(c.dirty(), 100);
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
    /// The cache as a plain list, oldest first: what the LRU means, without its links.
    /// A page is (index, state, readahead mark, owner, PG_reclaim).
    #[derive(Default)]
    struct Model {
        pages: Vec<(u64, PageState, bool, u32, bool)>,
        capacity: usize,
        evictions: u64,
    }

    impl Model {
        fn pos(&self, idx: u64) -> Option<usize> {
            self.pages.iter().position(|p| p.0 == idx)
        }
        fn make_newest(&mut self, at: usize) {
            let p = self.pages.remove(at);
            self.pages.push(p);
        }
        fn insert(&mut self, idx: u64, state: PageState, owner: u32) -> Result<(), CacheFull> {
            if self.pages.len() >= self.capacity {
                if !self.pages.iter().any(|p| p.1 == PageState::Clean) {
                    return Err(CacheFull);
                }
                // Reclaim from the old end: what it cannot drop goes to the young end.
                while self.pages[0].1 != PageState::Clean {
                    if self.pages[0].1 != PageState::Locked {
                        self.pages[0].4 = true;
                    }
                    self.make_newest(0);
                }
                self.pages.remove(0);
                self.evictions += 1;
            }
            self.pages.push((idx, state, false, owner, false));
            Ok(())
        }
    }

    proptest::proptest! {
        /// Any sequence of the cache's operations leaves it as the plain list would:
        /// the same pages in the same LRU order, states, marks and owners, the same
        /// evictions and the same refusals.
        #[test]
        fn behaves_as_a_plain_lru_list(
            capacity in 1usize..12,
            ops in proptest::collection::vec((0u8..7, 0u64..24, 0u32..4), 1..400),
        ) {
            let mut c = PageCache::new(capacity as u64);
            let mut m = Model { capacity, ..Model::default() };
            for (n, &(op, idx, owner)) in ops.iter().enumerate() {
                let now = n as SimTime;
                let at = m.pos(idx);
                let state = at.map(|a| m.pages[a].1);
                match op {
                    0 if state.is_none() => {
                        proptest::prop_assert_eq!(
                            c.insert_locked(idx),
                            m.insert(idx, PageState::Locked, u32::MAX)
                        );
                    }
                    1 if state == Some(PageState::Locked) => {
                        c.fill_done(idx);
                        m.pages[at.unwrap()].1 = PageState::Clean;
                    }
                    2 if state != Some(PageState::Locked) => {
                        let want = match at {
                            None => m.insert(idx, PageState::Dirty, owner).map(|_| true),
                            Some(a) => {
                                let p = &mut m.pages[a];
                                let newly = match p.1 {
                                    PageState::Clean => {
                                        p.1 = PageState::Dirty;
                                        true
                                    }
                                    PageState::Writeback { .. } => {
                                        p.1 = PageState::Writeback { redirty: true };
                                        false
                                    }
                                    _ => false,
                                };
                                p.3 = owner;
                                m.make_newest(a);
                                Ok(newly)
                            }
                        };
                        proptest::prop_assert_eq!(c.write(idx, owner, now), want);
                    }
                    3 => {
                        c.touch(idx);
                        if let Some(a) = at {
                            m.make_newest(a);
                        }
                    }
                    4 if state == Some(PageState::Dirty) => {
                        proptest::prop_assert_eq!(c.start_writeback(idx), m.pages[at.unwrap()].3);
                        m.pages[at.unwrap()].1 = PageState::Writeback { redirty: false };
                    }
                    5 if matches!(state, Some(PageState::Writeback { .. })) => {
                        c.end_writeback(idx, now);
                        let a = at.unwrap();
                        let p = &mut m.pages[a];
                        let reclaim = std::mem::take(&mut p.4);
                        p.1 = match p.1 {
                            PageState::Writeback { redirty: true } => PageState::Dirty,
                            _ => PageState::Clean,
                        };
                        if reclaim && p.1 == PageState::Clean {
                            let p = m.pages.remove(a);
                            m.pages.insert(0, p);
                        }
                    }
                    6 => {
                        if owner % 2 == 0 {
                            c.set_readahead(idx);
                            if let Some(a) = at {
                                m.pages[a].2 = true;
                            }
                        } else {
                            let want = at.is_some_and(|a| std::mem::take(&mut m.pages[a].2));
                            proptest::prop_assert_eq!(c.take_readahead(idx), want);
                        }
                    }
                    _ => {}
                }
                // The same pages, oldest first, through the cache's own links.
                let mut got = Vec::new();
                let mut s = c.oldest;
                while s != NIL {
                    let p = &c.slots[s as usize];
                    got.push((p.idx, p.state, p.readahead, p.owner, p.reclaim));
                    s = p.next;
                }
                proptest::prop_assert_eq!(&got, &m.pages);
                proptest::prop_assert_eq!(c.len(), m.pages.len() as u64);
                proptest::prop_assert_eq!(c.evictions, m.evictions);
                let dirty = m.pages.iter().filter(|p| p.1 == PageState::Dirty).count();
                proptest::prop_assert_eq!(c.dirty(), dirty as u64);
                let clean = m.pages.iter().filter(|p| p.1 == PageState::Clean).count();
                proptest::prop_assert_eq!(c.clean, clean as u64);
                for q in 0..24 {
                    proptest::prop_assert_eq!(c.state(q), m.pos(q).map(|a| m.pages[a].1));
                }
            }
        }
    }
}
