//! Page-mapped FTL: the mapping state only (no time). 4 KiB logical pages (`Lpn`) map
//! to 4 KiB physical slots (`Ppa`). Blocks are multi-plane blocks (one erase block on
//! every plane of a die, erased and filled together, as firmware pairs them for
//! multi-plane operations); a block is filled row by row, a row being one page on every
//! plane (the program unit).
//!
//! ```text
//! Ppa = ((die · blocks_per_die + block) · rows_per_block + row) · slots_per_row + slot
//! slot = plane · slots_per_page + 4KiB-unit within the page
//! ```
//!
//! The L2P entry of an LPN is a `Ppa`, `UNMAPPED`, or `BUF_FLAG | slot` when the newest
//! data is in the write buffer. A `Ppa` at or above `tlc_slots()` is a slot of the
//! WriteBooster buffer (`super::write_booster`), which keeps its own reverse map: the
//! blocks here never count it. Memory grows with the data touched: the L2P
//! (`super::l2p`) holds an entry only for an LPN changed, the reverse map
//! (`super::reverse_map`) is per block, in memory while the block is open and up to a
//! budget after, in a scratch file beyond; per-block metadata are flat arrays.
//!
//! A sequential precondition on a fresh map (`map_sequential`) is kept as a formula,
//! not as entries: LPN `first + i` sits in slot `i % slots_per_row` of the `i /
//! slots_per_row`-th row, the rows dealt round robin over the dies, each die filling its
//! blocks in order, as the explicit fill would place them. An LPN has an L2P entry only
//! once it changes (an LPN with none is where the formula says), and a block
//! the formula fills whole holds no reverse map until it is erased: its slot's LPN is
//! the formula's inverse, valid while the L2P still names the slot. So a device of any
//! capacity starts sequentially filled at no memory and no time.
//!
//! Leaves out: bad blocks, wear levelling beyond FIFO reuse of free blocks, map pages
//! stored among data pages (the map lives in a reserved area; see `map_cache`).

use super::l2p::{L2pTable, RUN as L2P_RUN};
use super::reverse_map::{ReverseMap, INVALID};
use crate::engine::Divisor;
use std::collections::VecDeque;

pub type Lpn = u32;
pub type Ppa = u32;

/// No mapping (never written, or discarded).
pub const UNMAPPED: u32 = u32::MAX;
/// Set in an L2P entry whose newest data is write-buffer slot `entry & !BUF_FLAG`.
pub const BUF_FLAG: u32 = 1 << 31;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    Free,
    Open,
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Host data drained from the write buffer.
    Host,
    /// Valid data copied by garbage collection.
    Gc,
}

#[derive(Clone, Copy, Debug, Default)]
struct OpenBlock {
    block: u32,
    /// Next slot to allocate within the block.
    next: u32,
    active: bool,
}

pub struct PageMap {
    user_lpns: u32,
    /// The geometry's counts, each with its multiplier (`engine::Divisor`): the formula
    /// layout and every slot's die, block and row divide by them.
    dies: Divisor,
    blocks_per_die: Divisor,
    slots_per_row: Divisor,
    slots_per_block: Divisor,
    gc_threshold: u32,
    /// `super::l2p`: an entry per LPN changed.
    l2p: L2pTable,
    /// Reverse map per block: slot → LPN or INVALID (`super::reverse_map`).
    rmap: ReverseMap,
    valid: Vec<u32>,
    erase_count: Vec<u32>,
    state: Vec<BlockState>,
    /// Slots placed whose program has not completed yet (a block with any is no victim).
    inflight: Vec<u32>,
    free: Vec<VecDeque<u32>>,
    open: Vec<[OpenBlock; 2]>,
    /// Physical slots of all blocks (the first WriteBooster address).
    tlc_slots: u32,
    rows_per_block: Divisor,
    /// The sequential layout kept as a formula, if any.
    seq: Option<SeqLayout>,
    /// Per die: its first blocks the sequential layout fills whole (they have no
    /// reverse map until erased).
    seq_blocks: Vec<u32>,
}

/// A sequential fill of LPNs `first..end` on a fresh map, its rows dealt round robin
/// over the dies from `die0`.
#[derive(Clone, Copy, Debug)]
struct SeqLayout {
    first: Lpn,
    end: Lpn,
    die0: u32,
}

impl PageMap {
    pub fn new(
        user_lpns: u32,
        dies: u32,
        blocks_per_die: u32,
        slots_per_row: u32,
        rows_per_block: u32,
        gc_threshold: u32,
    ) -> PageMap {
        assert!(dies > 0 && blocks_per_die > 0 && slots_per_row > 0 && rows_per_block > 0);
        let blocks = (dies as u64 * blocks_per_die as u64) as usize;
        let slots_per_block = slots_per_row * rows_per_block;
        assert!((blocks as u64) * (slots_per_block as u64) < BUF_FLAG as u64);
        assert!(user_lpns < BUF_FLAG);
        PageMap {
            user_lpns,
            dies: Divisor::new(dies),
            blocks_per_die: Divisor::new(blocks_per_die),
            slots_per_row: Divisor::new(slots_per_row),
            slots_per_block: Divisor::new(slots_per_block),
            gc_threshold,
            l2p: L2pTable::new(user_lpns),
            rmap: ReverseMap::new(blocks, slots_per_block),
            valid: vec![0; blocks],
            erase_count: vec![0; blocks],
            state: vec![BlockState::Free; blocks],
            inflight: vec![0; blocks],
            free: (0..dies)
                .map(|d| (d * blocks_per_die..(d + 1) * blocks_per_die).collect())
                .collect(),
            open: vec![[OpenBlock::default(); 2]; dies as usize],
            tlc_slots: blocks as u32 * slots_per_block,
            rows_per_block: Divisor::new(rows_per_block),
            seq: None,
            seq_blocks: vec![0; dies as usize],
        }
    }

    pub fn user_lpns(&self) -> u32 {
        self.user_lpns
    }
    pub fn slots_per_row(&self) -> u32 {
        self.slots_per_row.get()
    }
    pub fn slots_per_block(&self) -> u32 {
        self.slots_per_block.get()
    }
    pub fn rows_per_block(&self) -> u32 {
        self.rows_per_block.get()
    }
    pub fn dies(&self) -> u32 {
        self.dies.get()
    }
    #[inline]
    pub fn die_of(&self, ppa: Ppa) -> u32 {
        self.blocks_per_die.quotient(self.block_of(ppa))
    }
    #[inline]
    pub fn block_of(&self, ppa: Ppa) -> u32 {
        self.slots_per_block.quotient(ppa)
    }
    /// Global row id (die, block, row): what a die's page registers hold after a read.
    #[inline]
    pub fn row_of(&self, ppa: Ppa) -> u32 {
        self.slots_per_row.quotient(ppa)
    }
    /// `ppa`'s slot within its row.
    #[inline]
    pub fn slot_in_row(&self, ppa: Ppa) -> u32 {
        self.slots_per_row.remainder(ppa)
    }
    /// `ppa`'s row within its block (its page number in the block).
    #[inline]
    pub fn row_in_block(&self, ppa: Ppa) -> u32 {
        self.rows_per_block.remainder(self.row_of(ppa))
    }
    pub fn free_blocks(&self, die: u32) -> u32 {
        self.free[die as usize].len() as u32
    }
    pub fn valid_in(&self, block: u32) -> u32 {
        self.valid[block as usize]
    }
    pub fn erase_count(&self, block: u32) -> u32 {
        self.erase_count[block as usize]
    }
    pub fn blocks(&self) -> u32 {
        self.valid.len() as u32
    }
    /// Blocks whose reverse map has been allocated (a memory measure).
    pub fn touched_blocks(&self) -> usize {
        self.rmap.resident_blocks()
    }
    /// Blocks whose reverse map is in the scratch file (`super::reverse_map`).
    pub fn moved_blocks(&self) -> usize {
        self.rmap.moved_blocks()
    }
    /// Keeps at most `blocks` closed blocks' reverse maps in memory, the rest in the
    /// scratch file (tests: the default keeps 16 MiB).
    pub fn set_reverse_map_budget(&mut self, blocks: usize) {
        self.rmap.set_budget_blocks(blocks);
    }
    /// LPNs with an L2P entry of their own (changed since the map was made).
    pub fn l2p_entries(&self) -> usize {
        self.l2p.len()
    }
    /// Bytes the L2P holds.
    pub fn l2p_bytes(&self) -> usize {
        self.l2p.bytes()
    }
    /// GC should run on `die`.
    pub fn needs_gc(&self, die: u32) -> bool {
        self.free_blocks(die) < self.gc_threshold
    }

    // ------------------------------------------------------------ L2P

    #[inline]
    pub fn get(&self, lpn: Lpn) -> u32 {
        debug_assert!(lpn < self.user_lpns);
        match self.l2p.get(lpn) {
            Some(e) => e,
            None => self.seq_get(lpn),
        }
    }

    /// Starts bringing `lpn`'s L2P entry into the cache (a write to it will read it).
    #[inline]
    pub fn prefetch_entry(&self, lpn: Lpn) {
        if lpn < self.user_lpns {
            self.l2p.prefetch(lpn);
        }
    }

    /// Starts bringing the reverse-map entry of the slot `lpn` is in into the cache (a
    /// write to `lpn` invalidates it). Reads `lpn`'s L2P entry, best prefetched first,
    /// if its region is dense (a sparse one is not probed for a prefetch; its LPNs are
    /// mostly where the sequential layout put them, which has no reverse map to fetch).
    #[inline]
    pub fn prefetch_slot(&self, lpn: Lpn) {
        if lpn >= self.user_lpns {
            return;
        }
        let Some(&e) = self.l2p.dense_entry(lpn) else {
            return;
        };
        if !self.in_tlc_nand(e) {
            return;
        }
        let b = self.block_of(e);
        if let Some(p2l) = self.rmap.resident(b) {
            if let Some(x) = p2l.get(self.slots_per_block.remainder(e) as usize) {
                crate::engine::prefetch(x);
            }
        }
    }

    /// The entry of `lpn` never changed: the sequential layout's slot, or none.
    #[inline]
    fn seq_get(&self, lpn: Lpn) -> u32 {
        match self.seq {
            Some(s) if lpn >= s.first && lpn < s.end => self.seq_ppa(&s, lpn),
            _ => UNMAPPED,
        }
    }

    /// Points `lpn` at `v`; returns the entry it had.
    #[inline]
    fn set(&mut self, lpn: Lpn, v: u32) -> u32 {
        if v == UNMAPPED {
            let old = self.get(lpn);
            if old != UNMAPPED {
                self.l2p.replace(lpn, v);
            } // else unmapped already, and no entry is needed to say so
            return old;
        }
        match self.l2p.replace(lpn, v) {
            Some(old) => old,
            None => self.seq_get(lpn),
        }
    }

    /// The write-buffer slot `lpn`'s newest data is in, if it is in the buffer.
    #[inline]
    pub fn buffer_slot(&self, lpn: Lpn) -> Option<u32> {
        // The sequential layout names no buffer slot: only an entry of its own can.
        let e = self.l2p.get(lpn)?;
        (e != UNMAPPED && e & BUF_FLAG != 0).then_some(e & !BUF_FLAG)
    }

    /// Whether the sequential layout maps any LPN of `a..b`.
    fn seq_covers(&self, a: Lpn, b: Lpn) -> bool {
        self.seq.is_some_and(|s| a < s.end && s.first < b)
    }

    /// Whether any LPN of the run of 64 holding `lpn` may be mapped (else all of the
    /// run is unmapped).
    #[inline]
    pub fn run_touched(&self, lpn: Lpn) -> bool {
        let first = L2pTable::run_start(lpn);
        self.l2p.run_touched(lpn) || self.seq_covers(first, first + L2P_RUN as Lpn)
    }

    // ------------------------------------------------------------ sequential layout

    /// The slot the sequential layout gives `lpn` (within it). 32-bit arithmetic: every
    /// slot number is below 2^31 (`new`).
    #[inline]
    fn seq_ppa(&self, s: &SeqLayout, lpn: Lpn) -> Ppa {
        let i = lpn - s.first;
        let (r, pos) = self.slots_per_row.div_rem(i);
        let (k, rd) = self.dies.div_rem(r);
        let die = self.dies.remainder(s.die0 + rd);
        let (kb, kr) = self.rows_per_block.div_rem(k);
        let block = die * self.blocks_per_die.get() + kb;
        block * self.slots_per_block.get() + kr * self.slots_per_row.get() + pos
    }

    /// The LPN the sequential layout put in `ppa` (INVALID for a slot it left empty).
    /// 32-bit arithmetic: `first` and `r * slots_per_row` are each below 2^31.
    fn seq_lpn(&self, ppa: Ppa) -> u32 {
        let Some(s) = self.seq else { return INVALID };
        let (b, off) = self.slots_per_block.div_rem(ppa);
        let (die, kb) = self.blocks_per_die.div_rem(b);
        let (row, pos) = self.slots_per_row.div_rem(off);
        let k = kb * self.rows_per_block.get() + row;
        let r = k * self.dies.get() + self.dies.remainder(die + self.dies.get() - s.die0);
        let lpn = s.first + r * self.slots_per_row.get() + pos;
        if lpn < s.end {
            lpn
        } else {
            INVALID
        }
    }

    /// Whether `block` is one the sequential layout filled whole and that still has
    /// no reverse map of its own (never erased since).
    #[inline]
    fn seq_block(&self, block: u32) -> bool {
        let b = block as usize;
        !self.rmap.has(block)
            && self.state[b] != BlockState::Free
            && self.blocks_per_die.remainder(block)
                < self.seq_blocks[self.blocks_per_die.quotient(block) as usize]
    }

    /// The LPN recorded for slot `ppa` (INVALID if none), from the reverse map or the
    /// sequential layout.
    #[inline]
    fn recorded(&self, ppa: Ppa) -> u32 {
        let b = self.block_of(ppa);
        if self.rmap.has(b) {
            self.rmap.get(b, self.slots_per_block.remainder(ppa))
        } else if self.seq_block(b) {
            self.seq_lpn(ppa)
        } else {
            INVALID
        }
    }

    /// Maps LPNs `first..end` as a sequential write would have placed them, rows round
    /// robin over the dies from `die0`, at no memory (see the module header). Only on a
    /// fresh map, and only if no die would need more than all but one of its blocks
    /// (the explicit fill would need GC then); returns the die after the last row, or
    /// None (nothing done) when it does not apply.
    pub fn map_sequential(&mut self, first: Lpn, end: Lpn, die0: u32) -> Option<u32> {
        let fresh = self.seq.is_none()
            && self
                .free
                .iter()
                .all(|f| f.len() == self.blocks_per_die.get() as usize)
            && self.l2p.is_empty();
        if !fresh || first >= end || end > self.user_lpns || die0 >= self.dies.get() {
            return None;
        }
        let spr = self.slots_per_row.get() as u64;
        let rpb = self.rows_per_block.get() as u64;
        let dies = self.dies.get() as u64;
        let rows = ((end - first) as u64).div_ceil(spr);
        let rows_of =
            |d: u64| rows / dies + u64::from((d + dies - die0 as u64) % dies < rows % dies);
        if (0..dies).any(|d| rows_of(d) > (self.blocks_per_die.get() as u64 - 1) * rpb) {
            return None;
        }
        let s = SeqLayout { first, end, die0 };
        self.seq = Some(s);
        for d in 0..dies {
            let r = rows_of(d);
            let used = r.div_ceil(rpb) as u32;
            self.seq_blocks[d as usize] = (r / rpb) as u32;
            for kb in 0..used {
                let b = self.free[d as usize].pop_front().unwrap();
                debug_assert_eq!(b, d as u32 * self.blocks_per_die.get() + kb);
                let bi = b as usize;
                self.state[bi] = BlockState::Closed;
                let base = b * self.slots_per_block.get();
                let filled = (r - kb as u64 * rpb).min(rpb) as u32 * self.slots_per_row.get();
                if kb < self.seq_blocks[d as usize] {
                    // Whole rows; the fill's last row may be partly padding.
                    let padding = (filled - self.slots_per_row.get()..filled)
                        .filter(|&o| self.seq_lpn(base + o) == INVALID)
                        .count() as u32;
                    self.valid[bi] = filled - padding;
                } else {
                    // The partly filled block: an ordinary reverse map.
                    let mut arr =
                        vec![INVALID; self.slots_per_block.get() as usize].into_boxed_slice();
                    let mut n = 0;
                    for o in 0..filled {
                        arr[o as usize] = self.seq_lpn(base + o);
                        n += u32::from(arr[o as usize] != INVALID);
                    }
                    self.rmap.put(b, arr);
                    self.valid[bi] = n;
                }
                if kb + 1 == used {
                    self.state[bi] = BlockState::Open;
                    self.open[d as usize][Stream::Host as usize] = OpenBlock {
                        block: b,
                        next: filled,
                        active: true,
                    };
                }
            }
        }
        Some(((die0 as u64 + rows) % dies) as u32)
    }

    /// The first LPN of the run of 64 after the one holding `lpn`.
    #[inline]
    pub fn next_run_start(&self, lpn: Lpn) -> Lpn {
        L2pTable::next_run_start(lpn)
    }

    /// Points `lpn` at `entry` (a buffer slot or UNMAPPED), invalidating the NAND copy
    /// it replaces. Returns the previous entry.
    pub fn supersede(&mut self, lpn: Lpn, entry: u32) -> u32 {
        assert!(entry == UNMAPPED || entry & BUF_FLAG != 0);
        let old = self.set(lpn, entry);
        if self.in_tlc_nand(old) {
            self.invalidate(old, lpn);
        }
        old
    }

    /// Whether an L2P entry is a slot of the blocks here, with a reverse map: not
    /// unmapped, not in the write buffer, not in WriteBooster's SLC ring (past the TLC
    /// slots).
    #[inline]
    fn in_tlc_nand(&self, e: u32) -> bool {
        e != UNMAPPED && e & BUF_FLAG == 0 && e < self.tlc_slots
    }

    /// Physical slots of the blocks here (addresses at or above are the WriteBooster
    /// buffer's).
    #[inline]
    pub fn tlc_slots(&self) -> u32 {
        self.tlc_slots
    }

    /// `lpn`'s data is now in WriteBooster buffer slot `ppa` (its program has ended and
    /// the L2P still named the write buffer slot it came from).
    pub fn map_slc(&mut self, lpn: Lpn, ppa: Ppa) {
        debug_assert!(ppa >= self.tlc_slots() && ppa & BUF_FLAG == 0);
        self.set(lpn, ppa);
    }

    /// A WriteBooster flush moves valid `lpn` from buffer slot `src` to slot `dst` here
    /// (already allocated).
    pub fn migrate(&mut self, lpn: Lpn, src: Ppa, dst: Ppa) {
        assert_eq!(self.get(lpn), src, "migrating a stale slot");
        assert!(src >= self.tlc_slots());
        self.map_moved(lpn, dst);
    }

    /// `lpn`'s valid data is now in slot `dst` (already allocated, not yet owned).
    fn map_moved(&mut self, lpn: Lpn, dst: Ppa) {
        let b = self.block_of(dst) as usize;
        let off = self.slots_per_block.remainder(dst) as usize;
        let p2l = self
            .rmap
            .resident_mut(b as u32)
            .expect("moving into an open block");
        assert_eq!(p2l[off], INVALID);
        p2l[off] = lpn;
        self.valid[b] += 1;
        self.set(lpn, dst);
    }

    fn invalidate(&mut self, ppa: Ppa, lpn: Lpn) {
        let b = self.block_of(ppa) as usize;
        let off = self.slots_per_block.remainder(ppa) as usize;
        let has = self.rmap.has(b as u32);
        match self.rmap.resident_mut(b as u32) {
            Some(p2l) => {
                assert_eq!(p2l[off], lpn, "reverse map disagrees with L2P at ppa {ppa}");
                p2l[off] = INVALID;
            }
            // A map in the scratch file is not rewritten: the L2P stops naming the slot.
            None if has => {}
            None => {
                // The sequential layout's slot: the L2P stops naming it (the caller
                // changes the entry), which is what makes it invalid.
                assert!(
                    self.seq_block(b as u32),
                    "mapped page in a block with no reverse map"
                );
                assert_eq!(
                    self.seq_lpn(ppa),
                    lpn,
                    "sequential layout disagrees at ppa {ppa}"
                );
            }
        }
        assert!(self.valid[b] > 0);
        self.valid[b] -= 1;
    }

    // ------------------------------------------------------------ allocation

    /// Whether a host row can be allocated on `die` (the open block has room, or a free
    /// block can be opened while keeping one in reserve for GC).
    pub fn can_alloc_host(&self, die: u32) -> bool {
        let ob = &self.open[die as usize][0];
        (ob.active
            && ob.next.div_ceil(self.slots_per_row.get()) * self.slots_per_row.get()
                < self.slots_per_block.get())
            || self.free_blocks(die) > 1
    }

    /// The host open block of `die`, if its next row fits in it (no new block opened):
    /// a cache program may continue there (cache program works only within a block).
    pub fn host_row_fits_open_block(&self, die: u32) -> Option<u32> {
        let ob = &self.open[die as usize][0];
        (ob.active
            && ob.next.div_ceil(self.slots_per_row.get()) * self.slots_per_row.get()
                < self.slots_per_block.get())
        .then_some(ob.block)
    }

    /// Allocates the next whole row (program unit) of `die`'s open block for `stream`;
    /// returns the row's first slot. Host rows keep one free block in reserve for GC.
    pub fn alloc_row(&mut self, die: u32, stream: Stream) -> Option<Ppa> {
        self.ensure_open(die, stream, self.slots_per_row.get())?;
        let ob = &mut self.open[die as usize][stream as usize];
        // A row is allocated whole; the unused rest of a partly used row is padding.
        let row_start = ob.next.div_ceil(self.slots_per_row.get()) * self.slots_per_row.get();
        ob.next = row_start + self.slots_per_row.get();
        Some(ob.block * self.slots_per_block.get() + row_start)
    }

    /// Allocates one slot of `die`'s open block for `stream`.
    pub fn alloc_slot(&mut self, die: u32, stream: Stream) -> Option<Ppa> {
        self.ensure_open(die, stream, 1)?;
        let ob = &mut self.open[die as usize][stream as usize];
        let ppa = ob.block * self.slots_per_block.get() + ob.next;
        ob.next += 1;
        Some(ppa)
    }

    /// Makes sure `stream`'s open block on `die` has room for an allocation aligned to
    /// `align` slots, opening a free block (FIFO: the longest-erased first) when it has
    /// not. Host allocations leave one free block for GC.
    fn ensure_open(&mut self, die: u32, stream: Stream, align: u32) -> Option<()> {
        let d = die as usize;
        let ob = self.open[d][stream as usize];
        if ob.active && ob.next.div_ceil(align) * align < self.slots_per_block.get() {
            return Some(());
        }
        let reserve = if stream == Stream::Host { 1 } else { 0 };
        if self.free[d].len() <= reserve {
            return None;
        }
        if ob.active {
            self.state[ob.block as usize] = BlockState::Closed;
            if self.inflight[ob.block as usize] == 0 {
                self.rmap.settled(ob.block);
            }
        }
        let b = self.free[d].pop_front().unwrap();
        assert_eq!(self.state[b as usize], BlockState::Free);
        assert_eq!(self.valid[b as usize], 0);
        self.state[b as usize] = BlockState::Open;
        self.rmap.open(b);
        self.open[d][stream as usize] = OpenBlock {
            block: b,
            next: 0,
            active: true,
        };
        Some(())
    }

    /// Records that `ppa` is being programmed with `lpn`'s data (not yet valid).
    pub fn place(&mut self, ppa: Ppa, lpn: Lpn) {
        let b = self.block_of(ppa) as usize;
        let off = self.slots_per_block.remainder(ppa) as usize;
        let p2l = self
            .rmap
            .resident_mut(b as u32)
            .expect("placing into an unopened block");
        assert_eq!(p2l[off], INVALID, "slot {ppa} programmed twice");
        p2l[off] = lpn;
        self.inflight[b] += 1;
    }

    /// The program of `ppa` finished. If `current` (the L2P still names the buffer slot
    /// the data came from), `lpn` now maps to `ppa`; otherwise the data is already stale.
    pub fn complete(&mut self, ppa: Ppa, lpn: Lpn, current: bool) {
        let b = self.block_of(ppa) as usize;
        let off = self.slots_per_block.remainder(ppa) as usize;
        assert!(self.inflight[b] > 0);
        self.inflight[b] -= 1;
        let p2l = self.rmap.resident_mut(b as u32).unwrap();
        assert_eq!(p2l[off], lpn);
        if current {
            self.valid[b] += 1;
            self.set(lpn, ppa);
        } else {
            p2l[off] = INVALID;
        }
        if self.inflight[b] == 0 && self.state[b] == BlockState::Closed {
            self.rmap.settled(b as u32);
        }
    }

    /// Writes `lpn` straight to the next slot of `die`'s host stream (no buffer, no
    /// time): for tests and benches of the mapping alone.
    pub fn write_direct(&mut self, die: u32, lpn: Lpn) -> Option<Ppa> {
        let ppa = self.alloc_slot(die, Stream::Host)?;
        self.supersede(lpn, UNMAPPED);
        self.place(ppa, lpn);
        self.complete(ppa, lpn, true);
        Some(ppa)
    }

    // ------------------------------------------------------------ garbage collection

    /// Greedy victim on `die`: the closed block with the fewest valid slots (ties: the
    /// lowest block number), skipping blocks with programs in flight. None if no closed
    /// block has an invalid slot to reclaim.
    pub fn pick_victim(&self, die: u32) -> Option<u32> {
        let lo = (die * self.blocks_per_die.get()) as usize;
        let hi = lo + self.blocks_per_die.get() as usize;
        let mut best: Option<(u32, u32)> = None;
        for b in lo..hi {
            if self.state[b] != BlockState::Closed || self.inflight[b] != 0 {
                continue;
            }
            let v = self.valid[b];
            if v < self.slots_per_block.get() && best.is_none_or(|(bv, _)| v < bv) {
                best = Some((v, b as u32));
                if v == 0 {
                    break;
                }
            }
        }
        best.map(|(_, b)| b)
    }

    /// The valid slots of `row` in `block`, written into `out` as (lpn, ppa); returns
    /// how many.
    pub fn valid_in_row(&self, block: u32, row: u32, out: &mut [(Lpn, Ppa)]) -> usize {
        let has = self.rmap.has(block);
        if !has && !self.seq_block(block) {
            return 0;
        }
        let spr = self.slots_per_row.get() as usize;
        let mut on_stack = [INVALID; 64];
        let mut on_heap = Vec::new();
        let rec: &mut [u32] = if spr <= on_stack.len() {
            &mut on_stack[..spr]
        } else {
            on_heap.resize(spr, INVALID);
            &mut on_heap
        };
        let base = block * self.slots_per_block.get() + row * self.slots_per_row.get();
        if has {
            self.rmap
                .get_range(block, row * self.slots_per_row.get(), rec);
        } else {
            for (i, r) in rec.iter_mut().enumerate() {
                *r = self.seq_lpn(base + i as u32);
            }
        }
        let mut n = 0;
        for i in 0..self.slots_per_row.get() {
            let lpn = rec[i as usize];
            if lpn != INVALID && self.get(lpn) == base + i {
                out[n] = (lpn, base + i);
                n += 1;
            }
        }
        n
    }

    /// Moves valid `lpn` from `src` to the GC slot `dst` (already allocated).
    pub fn relocate(&mut self, lpn: Lpn, src: Ppa, dst: Ppa) {
        assert_eq!(self.get(lpn), src, "relocating a stale page");
        self.invalidate(src, lpn);
        self.map_moved(lpn, dst);
    }

    /// Erases a closed block with no valid data and returns it to its die's free list.
    pub fn erase(&mut self, block: u32) {
        let b = block as usize;
        assert_eq!(
            self.state[b],
            BlockState::Closed,
            "erasing a block that is not closed"
        );
        assert_eq!(self.valid[b], 0, "erasing a block with valid data");
        assert_eq!(self.inflight[b], 0);
        self.rmap.erase(block);
        self.state[b] = BlockState::Free;
        self.erase_count[b] += 1;
        let die = self.blocks_per_die.quotient(block);
        self.free[die as usize].push_back(block);
    }

    /// Whether `ppa` currently holds the valid copy of some LPN, and which.
    pub fn owner(&self, ppa: Ppa) -> Option<Lpn> {
        let lpn = self.recorded(ppa);
        (lpn != INVALID && self.get(lpn) == ppa).then_some(lpn)
    }

    /// Full consistency check (slow; for tests): every mapped LPN's slot names it back,
    /// every block's valid count equals its slots owned, no slot has two owners.
    pub fn check_invariants(&self) {
        let mut owned = vec![0u32; self.valid.len()];
        for lpn in 0..self.user_lpns {
            let e = self.get(lpn);
            if !self.in_tlc_nand(e) {
                continue;
            }
            let b = self.block_of(e) as usize;
            assert!(
                self.rmap.has(b as u32) || self.seq_block(b as u32),
                "mapped into a block without reverse map"
            );
            assert_eq!(self.recorded(e), lpn, "lpn {lpn} → ppa {e} not owned");
            owned[b] += 1;
        }
        for (b, &owned_b) in owned.iter().enumerate() {
            assert_eq!(owned_b, self.valid[b], "block {b} valid count");
            if self.rmap.has(b as u32) || self.seq_block(b as u32) {
                let base = b as u32 * self.slots_per_block.get();
                let names = (base..base + self.slots_per_block.get())
                    .filter(|&p| self.owner(p).is_some())
                    .count() as u32;
                assert_eq!(names, self.valid[b], "block {b} reverse map");
            }
            if self.state[b] == BlockState::Free {
                assert_eq!(self.valid[b], 0);
            }
        }
        let free_total: usize = self.free.iter().map(|f| f.len()).sum();
        let free_state = self
            .state
            .iter()
            .filter(|s| **s == BlockState::Free)
            .count();
        assert_eq!(free_total, free_state, "free lists vs block states");
    }
}
